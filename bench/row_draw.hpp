#pragma once
// The benchmark's rows: one 64-bit random word per row gives its key in [0, groups) (uniform;
// zipf with s = 1.1; or a 90% heavy hitter, key 0) and its value in [0, 100). Shared by
// gpuagg_bench and bench/profile's CUDA harness (C++17), so both draw the same input.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace gpuagg_bench {

class row_draw {
 public:
  /// `groups`: a power of two; `distribution`: uniform | zipf | heavy (sorted runs are drawn
  /// uniform and sorted by the caller).
  row_draw(std::uint64_t groups, const std::string& distribution)
      : groups_(groups),
        zipf_(distribution == "zipf"),
        heavy_(distribution == "heavy"),
        zipf_top_(std::pow(double(groups) + 1.0, 1.0 - zipf_s) - 1.0) {}

  std::uint64_t key(std::uint64_t r) const {
    if (zipf_) {
      // Zipf by inverting the continuous approximation of its CDF, H(x) ~ (x^(1-s) - 1)/(1-s):
      // O(1) per row, so 2^27 rows take a second, not minutes of binary searches.
      const double u = double(r >> 11) * 0x1.0p-53;
      const double rank = std::pow(u * zipf_top_ + 1.0, 1.0 / (1.0 - zipf_s)) - 1.0;
      return std::min<std::uint64_t>(static_cast<std::uint64_t>(rank), groups_ - 1);
    }
    if (heavy_ && (r & 0xff) < 230) return 0;  // 90%
    return (r >> 8) & (groups_ - 1);
  }

  static std::uint64_t value(std::uint64_t r) { return (r >> 40) % 100; }

 private:
  static constexpr double zipf_s = 1.1;
  std::uint64_t groups_;
  bool zipf_;
  bool heavy_;
  double zipf_top_;
};

}  // namespace gpuagg_bench
