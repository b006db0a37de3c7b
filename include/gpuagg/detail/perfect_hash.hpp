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
/// Seeds the builder tries before it gives up.
inline constexpr unsigned perfect_seeds = 16;

/// A perfect hash of the distinct `keys` (distinct: a key twice never gets two buckets; the empty
/// key among them is left out: it has its own bucket) into `capacity` buckets (a power of two, at least the keys), or none if no seed of
/// perfect_seeds works.
inline std::optional<perfect_hash> build_perfect_hash(std::span<const std::uint64_t> keys, std::uint32_t capacity,
                                                      std::uint64_t empty_key) {
  std::vector<std::uint64_t> set;
  set.reserve(keys.size());
  for (const auto key : keys) {
    if (key != empty_key) set.push_back(key);
  }
  if (capacity == 0 || (capacity & (capacity - 1)) != 0 || set.size() > capacity) return std::nullopt;
  std::size_t groups = 1;
  while (groups * perfect_keys_per_group < set.size()) groups *= 2;
  const std::uint32_t mask = capacity - 1;
  std::vector<std::uint64_t> hashes(set.size());
  std::vector<std::uint32_t> order(set.size());
  std::vector<std::uint32_t> group_begin(groups + 1);
  std::vector<std::uint32_t> by_size(groups);
  std::vector<bool> taken(capacity);
  std::vector<std::uint32_t> slots;
  for (unsigned attempt = 0; attempt < perfect_seeds; ++attempt) {
    perfect_hash hash;
    hash.seed = perfect_mix(attempt + 1, 0x243F6A8885A308D3ULL);
    hash.keys.assign(capacity, empty_key);
    hash.displacements.assign(groups, 0);
    hash.key_count = set.size();
    // The keys ordered by group (a counting sort), the groups largest first.
    std::fill(group_begin.begin(), group_begin.end(), 0);
    for (std::size_t i = 0; i < set.size(); ++i) {
      hashes[i] = perfect_mix(set[i], hash.seed);
      ++group_begin[(hashes[i] >> 32 & (groups - 1)) + 1];
    }
    for (std::size_t g = 0; g < groups; ++g) group_begin[g + 1] += group_begin[g];
    std::vector<std::uint32_t> fill(group_begin.begin(), group_begin.end() - 1);
    for (std::size_t i = 0; i < set.size(); ++i) order[fill[hashes[i] >> 32 & (groups - 1)]++] = std::uint32_t(i);
    // A seed under which two keys of a group agree in the table's bits cannot work: the next.
    bool parted = true;
    for (std::size_t g = 0; g < groups && parted; ++g) {
      for (std::uint32_t i = group_begin[g]; i < group_begin[g + 1] && parted; ++i) {
        for (std::uint32_t j = group_begin[g]; j < i && parted; ++j) {
          parted = ((hashes[order[i]] ^ hashes[order[j]]) & mask) != 0;
        }
      }
    }
    if (!parted) continue;
    for (std::size_t g = 0; g < groups; ++g) by_size[g] = std::uint32_t(g);
    std::stable_sort(by_size.begin(), by_size.end(), [&](std::uint32_t a, std::uint32_t b) {
      return group_begin[a + 1] - group_begin[a] > group_begin[b + 1] - group_begin[b];
    });
    std::fill(taken.begin(), taken.end(), false);
    bool placed_all = true;
    for (const auto g : by_size) {
      const std::uint32_t first = group_begin[g], last = group_begin[g + 1];
      if (first == last) break;  // the rest are empty too
      bool placed = false;
      for (std::uint32_t d = 0; d <= mask && !placed; ++d) {
        slots.clear();
        placed = true;
        for (std::uint32_t i = first; i < last && placed; ++i) {
          const std::uint32_t slot = (std::uint32_t(hashes[order[i]]) ^ d) & mask;
          placed = !taken[slot] && std::find(slots.begin(), slots.end(), slot) == slots.end();
          slots.push_back(slot);
        }
        if (placed) {
          hash.displacements[g] = d;
          for (std::uint32_t i = first; i < last; ++i) {
            const std::uint32_t slot = slots[i - first];
            taken[slot] = true;
            hash.keys[slot] = set[order[i]];
          }
        }
      }
      if (!placed) {
        placed_all = false;
        break;
      }
    }
    if (placed_all) return hash;
  }
  return std::nullopt;
}

}  // namespace gpuagg::detail
