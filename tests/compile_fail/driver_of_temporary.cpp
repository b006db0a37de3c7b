// expect: pass a key column that outlives it, not a temporary
#include <gpuagg/groupby.hpp>
#include <vector>
std::vector<std::uint32_t> make_keys() { return {1, 2, 3}; }
int main() {
  std::vector<std::uint32_t> v{4, 5, 6};
  auto driver = gpuagg::make_driver(make_keys(), v, gpuagg::select(gpuagg::count()));
}
