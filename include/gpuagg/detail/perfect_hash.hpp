#pragma once
// A perfect hash of a known set of keys (the key sample's distinct keys), for WORKGROUPLOCAL's
// perfect local table (kernels/workgroup_local.hpp: GPUAGG_PERFECT_LOCAL): every key of the set
// has a bucket of its own, found with one lookup, so no work item of a SIMD group probes and
// none waits for another's probe sequence. Hash and displace (Belazzougui, Botelho, Dietzfelbinger,
// "Hash, displace, and compress", ESA 2009): a key's 64-bit hash h = (hi, lo) picks a
// displacement group g = hi & group_mask, and its bucket is the top of lo + displacement[g] *
// (hi | 1) scaled to the capacity (mul_hi: any number of buckets, so the table takes what local
// memory holds). Two keys of a group part for most displacements: their words differ by
// (lo1 - lo2) + d * (m1 - m2), which d moves through the high bits the scaling reads. The
// builder places the groups largest first, each with the smallest displacement that puts all its
// keys into free buckets, and a key alone in its group straight into the lowest free bucket
// (the displacement that maps it there: (hi | 1) is odd, so it has an inverse modulo 2^32). A
// key outside the set gets some bucket too; the table stores each bucket's key, and a lookup
// that finds another key there tells the caller to look elsewhere (the global table). Pure host
// code; the kernel computes the same mix (perfect_hash_cl).

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "../hash.hpp"
#include "fixed_string.hpp"

namespace gpuagg::detail {

/// MurmurHash3's 64-bit finalizer of key ^ seed: every key bit reaches both halves of the hash.
constexpr std::uint64_t perfect_mix(std::uint64_t key, std::uint64_t seed) noexcept { return fmix64(key ^ seed); }

/// The OpenCL side of perfect_hash::bucket (KEY_T a table word, zero-extended as on the host;
/// the displacements in any address space, AS).
inline constexpr fixed_string perfect_hash_cl{R"CLC(
#define GPUAGG_PERFECT_BUCKET(AS) \
inline uint gpuagg_perfect_bucket_##AS(KEY_T k, ulong seed, __##AS const uint* displacement, uint group_mask, \
                                       uint capacity) { \
  ulong h = (ulong)k ^ seed; \
  h ^= h >> 33; h *= 0xff51afd7ed558ccdUL; h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53UL; h ^= h >> 33; \
  const uint hi = (uint)(h >> 32); \
  return mul_hi((uint)h + displacement[hi & group_mask] * (hi | 1u), capacity); \
}
GPUAGG_PERFECT_BUCKET(local)
GPUAGG_PERFECT_BUCKET(global)
)CLC"};

/// The bucket of a displaced word among `capacity`: its top, scaled (the kernel's mul_hi).
constexpr std::uint32_t perfect_scale(std::uint32_t word, std::uint32_t capacity) noexcept {
  return static_cast<std::uint32_t>((std::uint64_t{word} * capacity) >> 32);
}

/// A perfect hash of `key_count` keys into `keys.size()` buckets.
struct perfect_hash {
  std::uint64_t seed = 0;
  std::vector<std::uint64_t> keys;           ///< each bucket's key, or the empty key
  std::vector<std::uint32_t> displacements;  ///< one per displacement group (a power of two)
  std::size_t key_count = 0;

  std::uint32_t capacity() const noexcept { return static_cast<std::uint32_t>(keys.size()); }
  std::uint32_t group_mask() const noexcept { return static_cast<std::uint32_t>(displacements.size() - 1); }
  /// The bucket a key maps to (its own when it is one of the set's).
  std::uint32_t bucket(std::uint64_t key) const noexcept {
    const std::uint64_t h = perfect_mix(key, seed);
    const auto hi = static_cast<std::uint32_t>(h >> 32);
    return perfect_scale(static_cast<std::uint32_t>(h) + displacements[hi & group_mask()] * (hi | 1u), capacity());
  }
  /// Whether the key is one of the set's.
  bool contains(std::uint64_t key, std::uint64_t empty_key) const noexcept {
    return key != empty_key && keys[bucket(key)] == key;
  }
};

/// Keys per displacement group: about two. The displacements take a word per group of local
/// memory; fewer keys a group place faster in a full table (a group of two needs about
/// 1 / free share^2 tries).
inline constexpr std::size_t perfect_keys_per_group = 2;
/// Seeds the builder tries before it gives up: a seed fails only where some group finds no
/// displacement within perfect_tries_per_bucket x capacity tries.
inline constexpr unsigned perfect_seeds = 16;
inline constexpr std::uint64_t perfect_tries_per_bucket = 64;

/// The displacement groups of a set of `keys` keys: a power of two, about perfect_keys_per_group
/// keys each. The table's size in local memory follows from it before any build.
constexpr std::size_t perfect_groups(std::size_t keys) noexcept {
  std::size_t groups = 1;
  while (groups * perfect_keys_per_group < keys) groups *= 2;
  return groups;
}

/// The inverse of an odd word modulo 2^32 (Newton's iteration: each step doubles the bits that
/// are right, from the 3 that m itself gets right).
constexpr std::uint32_t odd_inverse(std::uint32_t m) noexcept {
  std::uint32_t inverse = m;
  for (int i = 0; i < 4; ++i) inverse *= 2u - m * inverse;
  return inverse;
}

/// A perfect hash of the distinct `keys` (distinct: a key twice never gets two buckets; the empty
/// key among them is left out: it has its own bucket) into `capacity` buckets (at least the
/// keys), or none if no seed of perfect_seeds works. The set's hashes are laid out in group
/// order, so that each group's tries read them in sequence; the groups are ordered by a counting
/// sort on their sizes (largest first, ties by group).
inline std::optional<perfect_hash> build_perfect_hash(std::span<const std::uint64_t> keys, std::uint32_t capacity,
                                                      std::uint64_t empty_key) {
  std::vector<std::uint64_t> set;
  set.reserve(keys.size());
  for (const auto key : keys) {
    if (key != empty_key) set.push_back(key);
  }
  if (capacity == 0 || set.size() > capacity) return std::nullopt;
  const std::size_t groups = perfect_groups(set.size());
  const std::uint64_t max_tries = perfect_tries_per_bucket * capacity;
  std::vector<std::uint64_t> hashes(set.size());
  std::vector<std::uint32_t> order(set.size());    // the set's keys in group order
  std::vector<std::uint32_t> low(set.size());      // their hashes' low words, in the same order
  std::vector<std::uint32_t> step(set.size());     // their hashes' high words | 1
  std::vector<std::uint32_t> slot_of(set.size());  // their buckets, in the same order
  std::vector<std::uint32_t> group_begin(groups + 1);
  std::vector<std::uint32_t> fill(groups);
  std::vector<std::uint32_t> by_size(groups);
  std::vector<std::uint32_t> size_begin;
  std::vector<std::uint32_t> displacements(groups);
  std::vector<std::uint8_t> taken(capacity);
  for (unsigned attempt = 0; attempt < perfect_seeds; ++attempt) {
    const std::uint64_t seed = perfect_mix(attempt + 1, 0x243F6A8885A308D3ULL);
    // The keys ordered by group (a counting sort).
    std::fill(group_begin.begin(), group_begin.end(), 0);
    for (std::size_t i = 0; i < set.size(); ++i) {
      hashes[i] = perfect_mix(set[i], seed);
      ++group_begin[(hashes[i] >> 32 & (groups - 1)) + 1];
    }
    std::uint32_t largest = 0;
    for (std::size_t g = 0; g < groups; ++g) {
      largest = std::max(largest, group_begin[g + 1]);
      group_begin[g + 1] += group_begin[g];
    }
    std::copy(group_begin.begin(), group_begin.end() - 1, fill.begin());
    for (std::size_t i = 0; i < set.size(); ++i) {
      const std::uint32_t at = fill[hashes[i] >> 32 & (groups - 1)]++;
      order[at] = std::uint32_t(i);
      low[at] = std::uint32_t(hashes[i]);
      step[at] = std::uint32_t(hashes[i] >> 32) | 1u;
    }
    // The groups largest first, groups of one size in their order.
    size_begin.assign(largest + 2, 0);
    for (std::size_t g = 0; g < groups; ++g) ++size_begin[largest - (group_begin[g + 1] - group_begin[g]) + 1];
    for (std::uint32_t s = 0; s <= largest; ++s) size_begin[s + 1] += size_begin[s];
    for (std::size_t g = 0; g < groups; ++g) {
      by_size[size_begin[largest - (group_begin[g + 1] - group_begin[g])]++] = std::uint32_t(g);
    }
    std::fill(taken.begin(), taken.end(), std::uint8_t{0});
    std::fill(displacements.begin(), displacements.end(), 0u);
    bool placed_all = true;
    std::uint32_t free_slot = 0;  // no slot below it is free once the groups of one key begin
    for (const auto g : by_size) {
      const std::uint32_t first = group_begin[g], last = group_begin[g + 1];
      if (first == last) break;  // the rest are empty too
      if (last - first == 1) {
        // A key alone takes the lowest free slot: the displacement that maps it to the slot's
        // first word, found without tries (in a nearly full table they would be many).
        while (taken[free_slot] != 0) ++free_slot;  // a free slot remains: no more keys than slots
        const auto word = static_cast<std::uint32_t>(((std::uint64_t{free_slot} << 32) + capacity - 1) / capacity);
        displacements[g] = (word - low[first]) * odd_inverse(step[first]);
        slot_of[first] = free_slot;
        taken[free_slot] = 1;
        continue;
      }
      bool placed = false;
      for (std::uint64_t d = 0; d < max_tries && !placed; ++d) {
        placed = true;
        for (std::uint32_t i = first; i < last && placed; ++i) {
          const std::uint32_t slot = perfect_scale(low[i] + static_cast<std::uint32_t>(d) * step[i], capacity);
          placed = taken[slot] == 0;
          for (std::uint32_t j = first; j < i && placed; ++j) placed = slot_of[j] != slot;
          slot_of[i] = slot;
        }
        if (placed) {
          displacements[g] = static_cast<std::uint32_t>(d);
          for (std::uint32_t i = first; i < last; ++i) taken[slot_of[i]] = 1;
        }
      }
      if (!placed) {
        placed_all = false;
        break;
      }
    }
    if (!placed_all) continue;
    perfect_hash hash;
    hash.seed = seed;
    hash.keys.assign(capacity, empty_key);
    for (std::size_t i = 0; i < set.size(); ++i) hash.keys[slot_of[i]] = set[order[i]];
    hash.displacements = displacements;
    hash.key_count = set.size();
    return hash;
  }
  return std::nullopt;
}

}  // namespace gpuagg::detail
