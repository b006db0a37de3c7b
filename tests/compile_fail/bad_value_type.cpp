// expect: value columns must be 8-, 16-, 32- or 64-bit
#include <gpuagg/groupby.hpp>
#include <vector>
int main() {
  std::vector<std::uint32_t> g;
  std::vector<bool> v;
  gpuagg::group_by(g, v, gpuagg::select(gpuagg::sum(gpuagg::col<0>)));
}
