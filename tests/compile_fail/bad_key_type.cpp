// expect: keys must be int32_t, uint32_t, int64_t or uint64_t
#include <gpuagg/groupby.hpp>
#include <vector>
int main() {
  std::vector<float> g;
  std::vector<std::uint32_t> v;
  gpuagg::group_by(g, v, gpuagg::select(gpuagg::count()));
}
