#pragma once
// DECISION: which of several owners (the members of a multi-device query, the ranks of an MPI
// query) holds a group: a hash of its table word, the same on the host and in the kernels, so
// that every member or rank sends a group to the same owner and each finalizes only its own.
//
// SplitMix64's finalizer, not the table's hash (multiply_shift takes the product's top bits,
// murmur3 its low bits): keys that agree in the bits that picked their owner would then also
// agree in the bits of their home bucket on that owner and crowd one region of its table. The
// hash's top 32 bits are scaled to [0, owners), so no owner gets more than its share by a
// modulo's bias.

#include <cstdint>

#include "fixed_string.hpp"

namespace gpuagg::detail {

constexpr std::uint64_t owner_hash(std::uint64_t key_bits) noexcept {
  std::uint64_t x = key_bits + 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

/// The owner of `owners` of the group whose table word is `key_bits` (zero-extended).
constexpr std::uint32_t owner_of(std::uint64_t key_bits, std::uint32_t owners) noexcept {
  return static_cast<std::uint32_t>(((owner_hash(key_bits) >> 32) * owners) >> 32);
}

/// owner_of in OpenCL C, for EXPORT and FINALIZE of one owner's groups (kernels/table.hpp).
inline constexpr fixed_string owner_cl_source{R"CLC(
// The owner of `owners` of the group whose table word is k (detail/owner.hpp: owner_of).
inline uint gpuagg_owner_of(ulong k, uint owners) {
  ulong x = k + 0x9E3779B97F4A7C15UL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9UL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBUL;
  x ^= x >> 31;
  return (uint)(((x >> 32) * (ulong)owners) >> 32);
}
)CLC"};

}  // namespace gpuagg::detail
