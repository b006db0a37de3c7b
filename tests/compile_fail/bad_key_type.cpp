// expect: keys must be 8-, 16-, 32- or 64-bit integers
#include <gpuagg/groupby.hpp>
#include <vector>
int main() {
  std::vector<float> g;
  std::vector<std::uint32_t> v;
  gpuagg::group_by(g, v, gpuagg::select(gpuagg::count()));
}
