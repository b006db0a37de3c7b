// expect: col<I> names a value column that was not passed to group_by
#include <gpuagg/groupby.hpp>
#include <vector>
int main() {
  std::vector<std::uint32_t> g, v;
  gpuagg::group_by(g, v, gpuagg::select(gpuagg::sum(gpuagg::col<1>)));
}
