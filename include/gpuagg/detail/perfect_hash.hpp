#pragma once
// A perfect hash of a known set of keys (the key sample's distinct keys), for WORKGROUPLOCAL's
// perfect local table (kernels/workgroup_local.hpp: GPUAGG_PERFECT_LOCAL): every key of the set
// has a bucket of its own, found with one lookup, so no work item of a SIMD group probes and
// none waits for another's probe sequence. Hash and displace (Belazzougui, Botelho, Dietzfelbinger,
// "Hash, displace, and compress", ESA 2009; the XOR displacement of PTHash): a key's hash h picks
// a displacement group g = (h >> 32) & group_mask, and its bucket is (h ^ displacement[g]) &
// (capacity - 1). The builder tries the groups largest first, each with the smallest
// displacement that puts all its keys into free buckets. A key outside the set gets some
// bucket too; the table stores each bucket's key, and a lookup that finds another key there
// tells the caller to look elsewhere (the global table). Pure host code; the kernel computes
// the same mix (perfect_hash_cl).

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
                                       uint mask) { \
  ulong h = (ulong)k ^ seed; \
  h ^= h >> 33; h *= 0xff51afd7ed558ccdUL; h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53UL; h ^= h >> 33; \
  return ((uint)h ^ displacement[(uint)(h >> 32) & group_mask]) & mask; \
}
GPUAGG_PERFECT_BUCKET(local)
GPUAGG_PERFECT_BUCKET(global)
)CLC"};

/// A perfect hash of `key_count` keys into `keys.size()` buckets (a power of two).
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
    return (static_cast<std::uint32_t>(h) ^ displacements[static_cast<std::uint32_t>(h >> 32) & group_mask()]) &
           (capacity() - 1);
  }
  /// Whether the key is one of the set's.
  bool contains(std::uint64_t key, std::uint64_t empty_key) const noexcept {
    return key != empty_key && keys[bucket(key)] == key;
  }
};

/// Keys per displacement group: about two. A displacement cannot part two keys of one group whose
/// hashes agree in the table's bits, and a seed with such a pair is dropped; with n keys in a
/// table of 2n buckets that happens to a seed with probability about 1 - e^(-keys per group / 4)
/// (0.4 at two, 0.6 at four), and a table at most half full finds every group's displacement
/// within a few tries either way. The displacements take a word per group of local memory.
inline constexpr std::size_t perfect_keys_per_group = 2;
/// Seeds the builder tries before it gives up. In a table every bucket of which holds a key, a
/// seed fails its groups' check with probability about 1 - e^(-1) = 0.63 (0.63^64: 1e-13); a
/// failed seed costs the set's hashes only.
inline constexpr unsigned perfect_seeds = 64;

/// The displacement groups of a set of `keys` keys: a power of two, about perfect_keys_per_group
/// keys each. The table's size in local memory follows from it before any build.
constexpr std::size_t perfect_groups(std::size_t keys) noexcept {
  std::size_t groups = 1;
  while (groups * perfect_keys_per_group < keys) groups *= 2;
  return groups;
}

/// A perfect hash of the distinct `keys` (distinct: a key twice never gets two buckets; the empty
/// key among them is left out: it has its own bucket) into `capacity` buckets (a power of two, at
/// least the keys), or none if no seed of perfect_seeds works. The set's hashes are laid out in
/// group order, so that the seed check and each group's tries read them in sequence; the groups
/// are ordered by a counting sort on their sizes (largest first, ties by group).
inline std::optional<perfect_hash> build_perfect_hash(std::span<const std::uint64_t> keys, std::uint32_t capacity,
                                                      std::uint64_t empty_key) {
  std::vector<std::uint64_t> set;
  set.reserve(keys.size());
  for (const auto key : keys) {
    if (key != empty_key) set.push_back(key);
  }
  if (capacity == 0 || (capacity & (capacity - 1)) != 0 || set.size() > capacity) return std::nullopt;
  const std::size_t groups = perfect_groups(set.size());
  const std::uint32_t mask = capacity - 1;
  std::vector<std::uint64_t> hashes(set.size());
  std::vector<std::uint32_t> order(set.size());   // the set's keys in group order
  std::vector<std::uint32_t> low(set.size());     // their hashes' low words, in the same order
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
    }
    // A seed under which two keys of a group agree in the table's bits cannot work: the next.
    bool parted = true;
    for (std::size_t g = 0; g < groups && parted; ++g) {
      for (std::uint32_t i = group_begin[g] + 1; i < group_begin[g + 1] && parted; ++i) {
        for (std::uint32_t j = group_begin[g]; j < i && parted; ++j) parted = ((low[i] ^ low[j]) & mask) != 0;
      }
    }
    if (!parted) continue;
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
        // A key alone takes the lowest free slot: its displacement is the one that maps it
        // there, found without tries (in a nearly full table they would be many: 1 / free share).
        while (taken[free_slot] != 0) ++free_slot;  // a free slot remains: no more keys than slots
        displacements[g] = (low[first] ^ free_slot) & mask;
        slot_of[first] = free_slot;
        taken[free_slot] = 1;
        continue;
      }
      bool placed = false;
      for (std::uint32_t d = 0; d <= mask && !placed; ++d) {
        placed = true;
        for (std::uint32_t i = first; i < last && placed; ++i) {
          const std::uint32_t slot = (low[i] ^ d) & mask;
          placed = taken[slot] == 0;
          for (std::uint32_t j = first; j < i && placed; ++j) placed = slot_of[j] != slot;
          slot_of[i] = slot;
        }
        if (placed) {
          displacements[g] = d;
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
