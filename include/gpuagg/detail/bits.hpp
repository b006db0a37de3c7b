#pragma once
// Powers of two, for table and block sizes.

#include <cstdint>

namespace gpuagg::detail {

/// The smallest power of two >= x (1 for 0).
constexpr std::uint64_t next_pow2(std::uint64_t x) noexcept {
  std::uint64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

/// The largest power of two <= x (1 for 0).
constexpr std::uint64_t power_of_two_below(std::uint64_t x) noexcept {
  std::uint64_t p = 1;
  while (p * 2 <= x) p *= 2;
  return p;
}

/// log2 of a power of two (of the next one for any other value).
constexpr unsigned log2_exact(std::uint64_t pow2) noexcept {
  unsigned bits = 0;
  while ((std::uint64_t{1} << bits) < pow2) ++bits;
  return bits;
}

}  // namespace gpuagg::detail
