// expect: aggregates cannot be nested inside an aggregate
#include <gpuagg/groupby.hpp>
#include <vector>
int main() {
  std::vector<std::uint32_t> g, v;
  gpuagg::group_by(g, v, gpuagg::select(gpuagg::sum(gpuagg::max(gpuagg::col<0>))));
}
