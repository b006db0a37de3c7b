// Runs with no OpenCL vendor registered; prints the error group_by throws.
#include <gpuagg/groupby.hpp>

#include <iostream>
#include <vector>

int main() {
  const std::vector<std::uint32_t> keys{1, 2, 3};
  const std::vector<std::uint32_t> vals{4, 5, 6};
  try {
    gpuagg::group_by(keys, vals, gpuagg::select(gpuagg::sum(gpuagg::col<0>)));
    std::cout << "no error\n";
  } catch (const gpuagg::no_device_error& e) {
    std::cout << "no_device_error: " << e.what() << '\n';
  } catch (const std::exception& e) {
    std::cout << "other error: " << e.what() << '\n';
  }
}
