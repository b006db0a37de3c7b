// One small query through the installed gpuagg, on the default OpenCL device.
#include <gpuagg/groupby.hpp>
#include <gpuagg/reference.hpp>

#include <cstdint>
#include <iostream>
#include <vector>

int main() {
  const std::vector<std::uint32_t> keys{3, 1, 3, 2, 1, 3};
  const std::vector<std::int64_t> vals{1, 2, 3, 4, 5, -6};
  auto r = gpuagg::group_by(keys, vals, gpuagg::select(gpuagg::count(), gpuagg::sum(gpuagg::col<0>)));
  gpuagg::sort_by_key(r);
  const bool ok = r.keys == std::vector<std::uint32_t>{1, 2, 3} &&
                  r.column<0>() == std::vector<std::uint64_t>{2, 1, 3} &&
                  r.column<1>() == std::vector<std::int64_t>{7, 4, -2};
  std::cout << "install-consumer: " << (ok ? "ok" : "WRONG RESULT") << " on " << r.stats.device << '\n';
  return ok ? 0 : 1;
}
