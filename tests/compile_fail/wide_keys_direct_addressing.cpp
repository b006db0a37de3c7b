// expect: direct_addressing needs keys whose bits fit 64
#include <gpuagg/groupby.hpp>
#include <vector>
int main() {
  std::vector<std::uint64_t> a, b;
  std::vector<std::uint32_t> v;
  (void)gpuagg::group_by(gpuagg::keys(a, b), v, gpuagg::select<gpuagg::direct_addressing>(gpuagg::count()));
}
