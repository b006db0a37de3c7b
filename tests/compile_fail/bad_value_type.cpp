// expect: value columns must be int32, uint32, int64, uint64, float or double
#include <gpuagg/groupby.hpp>
#include <vector>
int main() {
  std::vector<std::uint32_t> g;
  std::vector<short> v;
  gpuagg::group_by(g, v, gpuagg::select(gpuagg::sum(gpuagg::col<0>)));
}
