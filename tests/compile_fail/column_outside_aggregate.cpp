// expect: a value column outside an aggregate is not grouped
#include <gpuagg/groupby.hpp>
#include <vector>
int main() {
  std::vector<std::uint32_t> g, v;
  auto q = gpuagg::select(gpuagg::sum(gpuagg::col<0>) + gpuagg::col<0>);
  gpuagg::group_by(g, v, q);
}
