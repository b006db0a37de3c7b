// expect: key columns wider than 64 bits together go through the key dictionary
#include <gpuagg/groupby.hpp>
#include <vector>
int main() {
  std::vector<std::uint64_t> a, b;
  std::vector<std::uint32_t> v;
  (void)gpuagg::tuned_group_by(gpuagg::keys(a, b), v, gpuagg::select(gpuagg::count()));
}
