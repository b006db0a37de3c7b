#pragma once
// WORKGROUPLOCAL's AGGREGATE kernel and the parameters it adds: the local table's, the
// cold-row queue's in builds with -DGPUAGG_COLD_QUEUE, the perfect local table's in builds
// with -DGPUAGG_PERFECT_LOCAL and the range local table's in builds with -DGPUAGG_RANGE_LOCAL.

#include <cstdint>
#include <optional>
#include <vector>

#include "../detail/fixed_string.hpp"
#include "../detail/perfect_hash.hpp"
#include "aggregate.hpp"

namespace gpuagg::detail::kernels {

// WORKGROUPLOCAL (section 2.2): the work items of a work group share a table in local memory,
// merged into the global table at the end of the block. A row the local table cannot hold
// (full, or too long a probe) goes to the global table directly.
// Beyond the paper: a small table is replicated `copies` times (a power of two, interleaved:
// bucket b of copy c at b * copies + c), and work item i uses copy i % copies, so the lanes of
// a SIMD group that share a hot key update different words instead of serializing on one. At
// the end the copies are folded into copy 0 in local memory, and only copy 0 goes to the
// global table: one global update per group and work group, as with a single copy.
inline constexpr auto aggregate_workgroup_local = perfect_hash_cl + fixed_string{R"CLC(
#define GPUAGG_LOCAL_MAX_PROBES 64u
// Entry s of a bitmap of local entries in use: set once (a read first, as most updates find it
// set already).
inline void gpuagg_mark_used(__local uint* used, uint s) {
  const uint bit = 1u << (s & 31u);
  if ((used[s >> 5] & bit) == 0u) GPUAGG_LOCAL_OR(used + (s >> 5), bit);
}
// Direct addressing's local table (GPUAGG_DENSE_TABLE), like its global one, keeps no keys:
// entry s (bucket s / copies of copy s % copies) holds the key of global bucket s / copies
// (gpuagg_dense_key: key_min + s / copies, or a box's key; `bits` as the global table's), and l_keys holds
// a bitmap of the entries in use (bit s % 32 of word s / 32), so a larger table fits in local
// memory (8 bytes and a bit a bucket for a 64-bit sum, not 12).
// Every key has its own bucket.
#if GPUAGG_DENSE_TABLE
inline uint gpuagg_insert_dense_local(__local uint* used, KEY_T k, uint bits, uint capacity, KEY_T key_min,
                                      uint stride, uint lane) {
  const uint b = gpuagg_home(k, bits, capacity, key_min);
  if (b == GPUAGG_NO_SLOT) return GPUAGG_NO_SLOT;
  gpuagg_mark_used(used, b * stride + lane);
  return b;
}
#endif
// The range local table (GPUAGG_RANGE_LOCAL; query_planner::range_local) has direct addressing's
// local layout over a box of keys, in front of a global hash table: a row outside the box goes
// to the global table. Of one key column the box is the key words [range_lowest, range_lowest +
// capacity), and a row's word less range_lowest is its bucket (unsigned words: a word below
// range_lowest wraps past the capacity). Of a packed key (KEY_FIELDS columns, each a field of the
// word) it is every column's range: field i of range_lowest and the next (range_spans >> 16 i) &
// 0xFFFF values, and a row's bucket is its fields' offsets in mixed radix (detail::box_entry), so
// identifiers, flags and dates packed into one wide word still address a table of their
// combinations.
#if GPUAGG_RANGE_LOCAL
#define GPUAGG_RANGE_PARAMS , const KEY_T range_lowest, const ulong range_spans
#ifndef KEY_FIELDS
#define KEY_FIELDS 1
#endif
#if KEY_FIELDS > 1
#define GPUAGG_FIELD_MASK(bits) ((bits) >= 8u * sizeof(KEY_T) ? ~(KEY_T)0 : (((KEY_T)1 << (bits)) - (KEY_T)1))
#endif
inline uint gpuagg_range_bucket(KEY_T k, KEY_T lowest, uint capacity, ulong spans) {
#if KEY_FIELDS == 1
  const KEY_T offset = k - lowest;
  return offset < (KEY_T)capacity ? (uint)offset : GPUAGG_NO_SLOT;
#else
  const uint shifts[KEY_FIELDS] = KEY_FIELD_SHIFTS;
  const uint bits[KEY_FIELDS] = KEY_FIELD_BITS;
  uint b = 0;
  for (uint i = 0; i < KEY_FIELDS; ++i) {
    const KEY_T offset = ((k >> shifts[i]) - (lowest >> shifts[i])) & GPUAGG_FIELD_MASK(bits[i]);
    const uint span = (uint)(spans >> (16u * i)) & 0xFFFFu;
    if (offset >= (KEY_T)span) return GPUAGG_NO_SLOT;
    b = b * span + (uint)offset;
  }
  return b;
#endif
}
// The key word of bucket b (detail::box_word).
inline KEY_T gpuagg_range_key(uint b, KEY_T lowest, ulong spans) {
#if KEY_FIELDS == 1
  return lowest + (KEY_T)b;
#else
  const uint shifts[KEY_FIELDS] = KEY_FIELD_SHIFTS;
  const uint bits[KEY_FIELDS] = KEY_FIELD_BITS;
  KEY_T k = 0;
  for (int i = KEY_FIELDS - 1; i >= 0; --i) {
    const uint span = (uint)(spans >> (16u * (uint)i)) & 0xFFFFu;
    const KEY_T mask = GPUAGG_FIELD_MASK(bits[i]);
    k |= (((lowest >> shifts[i]) + (KEY_T)(b % span)) & mask) << shifts[i];
    b /= span;
  }
  return k;
#endif
}
inline uint gpuagg_insert_range_local(__local uint* used, KEY_T k, uint capacity, KEY_T lowest, ulong spans,
                                      uint stride, uint lane) {
  const uint b = gpuagg_range_bucket(k, lowest, capacity, spans);
  if (b == GPUAGG_NO_SLOT) return GPUAGG_NO_SLOT;
  gpuagg_mark_used(used, b * stride + lane);
  return b;
}
#else
#define GPUAGG_RANGE_PARAMS
#endif
// Local tables that keep no keys: a bitmap of the entries in use in l_keys.
#define GPUAGG_KEYLESS_LOCAL (GPUAGG_DENSE_TABLE || GPUAGG_RANGE_LOCAL)
#if GPUAGG_KEYLESS_LOCAL
#define GPUAGG_LOCAL_BITMAP ((__local uint*)l_keys)
#endif
// The perfect local table (GPUAGG_PERFECT_LOCAL; detail/perfect_hash.hpp): the driver hands over
// a perfect hash of the key sample's distinct keys, each bucket's key (`perfect_keys`, EMPTY_KEY
// where none) and the displacements. A work group copies them into local memory and then only
// looks keys up: a key has one bucket, holding it or another key, so no work item probes and no
// SIMD group waits for its longest probe sequence. A row whose key the sample missed goes to the
// global table. The displacements follow the keys in the driver's buffer (one copy to the
// device). l_keys holds the keys once for every copy; l_used a bit per entry a row updated
// (entry s = bucket s / copies of copy s % copies), so that only groups this work group saw reach
// the global table.
#if GPUAGG_PERFECT_LOCAL
#define GPUAGG_PERFECT_PARAMS , __global const KEY_T* restrict perfect_keys, const uint perfect_group_mask, \
  const ulong perfect_seed, __local uint* l_used, __local uint* l_displacement
inline uint gpuagg_find_perfect_local(__local const KEY_T* keys, __local const uint* displacement, __local uint* used,
                                      KEY_T k, uint capacity, uint group_mask, ulong seed, uint stride, uint lane) {
  uint b = capacity;
  if (k != EMPTY_KEY) {
    b = gpuagg_perfect_bucket_local(k, seed, displacement, group_mask, capacity);
    if (keys[b] != k) return GPUAGG_NO_SLOT;
  }
  gpuagg_mark_used(used, b * stride + lane);
  return b;
}
#define GPUAGG_LOCAL_BITMAP l_used
#else
#define GPUAGG_PERFECT_PARAMS
#endif
#ifdef GPUAGG_LOCAL_BITMAP
#define GPUAGG_LOCAL_USED(s) (((GPUAGG_LOCAL_BITMAP[(s) >> 5] >> ((s) & 31u)) & 1u) != 0u)
#endif
#ifdef GPUAGG_COLD_QUEUE
#define GPUAGG_COLD_QUEUE_PARAMS , __local KEY_T* q_keys, __local uint* q_rows, const uint cold_rows
#else
#define GPUAGG_COLD_QUEUE_PARAMS
#endif
__kernel GPUAGG_AGGREGATE_ATTRIBUTES void gpuagg_aggregate(GPUAGG_AGGREGATE_PARAMS, __local KEY_T* l_keys ACC_PARAMS(__local, l_),
                               const uint local_bits, const uint local_capacity, const uint copies
                               GPUAGG_PERFECT_PARAMS GPUAGG_RANGE_PARAMS GPUAGG_COLD_QUEUE_PARAMS) {
  __local uint l_special;
  GPUAGG_REBIND(g_, __global)
  GPUAGG_BEGIN_COUNTS()
  const uint entries = (local_capacity + 1u) * copies;
#if GPUAGG_PERFECT_LOCAL
  __global const uint* perfect_displacements = (__global const uint*)(perfect_keys + local_capacity);
#endif
  for (uint s = get_local_id(0); s < entries; s += get_local_size(0)) {
#if GPUAGG_KEYLESS_LOCAL
    if (s < (entries + 31u) / 32u) GPUAGG_LOCAL_BITMAP[s] = 0u;
#elif GPUAGG_PERFECT_LOCAL
    if (s < local_capacity) l_keys[s] = perfect_keys[s];
    if (s < (entries + 31u) / 32u) l_used[s] = 0u;
    // Displacement groups are at most the keys (perfect_keys_per_group), fewer than the entries.
    if (s <= perfect_group_mask) l_displacement[s] = perfect_displacements[s];
#else
    l_keys[s] = EMPTY_KEY;
#endif
    ACC_INIT(l_, s)
  }
  if (get_local_id(0) == 0) l_special = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  const uint local_probes = min(local_capacity, GPUAGG_LOCAL_MAX_PROBES);
  const uint copy = get_local_id(0) & (copies - 1u);
  uint local_claimed = 0;
#if GPUAGG_DENSE_TABLE
#define GPUAGG_LOCAL_SLOT(k) \
  gpuagg_insert_dense_local(GPUAGG_LOCAL_BITMAP, k, local_bits, local_capacity, key_min, copies, copy)
#elif GPUAGG_RANGE_LOCAL
#define GPUAGG_LOCAL_SLOT(k) \
  gpuagg_insert_range_local(GPUAGG_LOCAL_BITMAP, k, local_capacity, range_lowest, range_spans, copies, copy)
#elif GPUAGG_PERFECT_LOCAL
#define GPUAGG_LOCAL_SLOT(k) \
  gpuagg_find_perfect_local(l_keys, l_displacement, l_used, k, local_capacity, perfect_group_mask, perfect_seed, \
                            copies, copy)
#else
#define GPUAGG_LOCAL_SLOT(k) \
  gpuagg_insert_local(l_keys, k, local_bits, local_capacity, key_min, local_probes, &local_claimed, copies, copy, 1u)
#endif
#define GPUAGG_LOCAL_LOADED(k, P) { \
  const uint ls_ = GPUAGG_LOCAL_SLOT(k); \
  if (ls_ != GPUAGG_NO_SLOT) { \
    if (ls_ == local_capacity) l_special = 1; \
    ACC_COMBINE_LOADED(local, l_, ls_ * copies + copy, P) \
  } else { \
    GPUAGG_LOADED_TO_GLOBAL(k, P) \
  } }
#ifdef GPUAGG_COLD_QUEUE
  // Built with -DGPUAGG_COLD_QUEUE (with GPUAGG_RUN_CACHE, for a dominant key): rows of the hot
  // key go to the hot-key register; every other row is queued in local memory (its key and
  // its offset in the block), and after each round of `cold_rows` rows per work item the
  // whole work group drains the queue into the local table, every lane busy. Without it a SIMD
  // group would run the cold rows' path at each step for its few cold lanes. Rounds are
  // counted alike for the whole work group, so the barriers are uniform.
  __local uint q_count;
  uint hot_used_ = 0;
  ACC_DECLARE(hot_)
  const ulong stride_ = get_global_size(0);
  const ulong mine_ = row_begin + get_global_id(0);
  const ulong group_first_ = row_begin + (ulong)get_group_id(0) * get_local_size(0);
  const ulong per_item_ = group_first_ < row_end ? (row_end - group_first_ + stride_ - 1) / stride_ : 0;
  const ulong rounds_ = (per_item_ + cold_rows - 1) / cold_rows;
  if (get_local_id(0) == 0) q_count = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (ulong round_ = 0; round_ < rounds_; ++round_) {
    for (uint j_ = 0; j_ < cold_rows; ++j_) {
      const ulong row_ = mine_ + (round_ * cold_rows + j_) * stride_;
      if (row_ < row_end && ROW_PASSES(row_)) {
        const KEY_T k_ = GPUAGG_ROW_KEY(row_);
        if (have_hot && k_ == hot_key) {
          ACC_LOAD_ROW(a_, row_)
          ACC_MERGE_PRIVATE(hot_, a_)
          hot_used_ = 1;
        } else {
          const uint at_ = GPUAGG_LOCAL_INC(&q_count);
          q_keys[at_] = k_;
          q_rows[at_] = (uint)(row_ - row_begin);
        }
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const uint queued_ = q_count;
    for (uint i_ = get_local_id(0); i_ < queued_; i_ += get_local_size(0)) {
      const ulong row_ = row_begin + q_rows[i_];
      const KEY_T k_ = q_keys[i_];
      ACC_LOAD_ROW(c_, row_)
      GPUAGG_LOCAL_LOADED(k_, c_)
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0) q_count = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (hot_used_) GPUAGG_LOCAL_LOADED(hot_key, hot_)
#else
#define GPUAGG_LOCAL_ROW(k, row, P) GPUAGG_CACHED_ROW(k, P, GPUAGG_LOCAL_LOADED)
  GPUAGG_RUN_CACHE_BEGIN
  GPUAGG_FOR_ITEM_ROWS(row_begin, row_end, GPUAGG_LOCAL_ROW)
  GPUAGG_RUN_CACHE_END(GPUAGG_LOCAL_LOADED)
#endif
  barrier(CLK_LOCAL_MEM_FENCE);
  if (copies > 1u) {
    // Fold copies 1.. into copy 0 (the EMPTY_KEY bucket's accumulators unconditionally: an
    // unused one holds the identity). An entry copy 0 cannot hold goes to the global table.
    for (uint s = get_local_id(0); s < entries; s += get_local_size(0)) {
      const uint c = s & (copies - 1u);
      if (c == 0u) continue;
      const uint b = s / copies;
      if (b == local_capacity) {
        ACC_COMBINE_FROM(local, l_, local_capacity * copies, l_, s)
        continue;
      }
#if GPUAGG_KEYLESS_LOCAL || GPUAGG_PERFECT_LOCAL
      if (!GPUAGG_LOCAL_USED(s)) continue;
      const uint to = b * copies;  // the bucket's entry in copy 0: mark it used, then combine
      gpuagg_mark_used(GPUAGG_LOCAL_BITMAP, to);
      ACC_COMBINE_FROM(local, l_, to, l_, s)
#else
      const KEY_T k = l_keys[s];
      if (k == EMPTY_KEY) continue;
      const uint ls = gpuagg_insert_local(l_keys, k, local_bits, local_capacity, key_min, local_capacity,
                                          &local_claimed, copies, 0u, 1u);
      if (ls != GPUAGG_NO_SLOT) {
        ACC_COMBINE_FROM(local, l_, ls * copies, l_, s)
      } else {
        GPUAGG_PARTIAL_TO_GLOBAL(k, l_, s)
      }
#endif
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (uint b = get_local_id(0); b <= local_capacity; b += get_local_size(0)) {
    const uint s = b * copies;
#if GPUAGG_DENSE_TABLE
    const KEY_T k = gpuagg_dense_key(b, key_min, local_bits);
    const bool used = b < local_capacity && GPUAGG_LOCAL_USED(s);
#elif GPUAGG_RANGE_LOCAL
    const bool used = b < local_capacity && GPUAGG_LOCAL_USED(s);
    const KEY_T k = used ? gpuagg_range_key(b, range_lowest, range_spans) : EMPTY_KEY;
#elif GPUAGG_PERFECT_LOCAL
    const KEY_T k = b < local_capacity ? l_keys[b] : EMPTY_KEY;
    const bool used = b < local_capacity ? GPUAGG_LOCAL_USED(s) : l_special != 0;
#else
    const KEY_T k = b < local_capacity ? l_keys[s] : EMPTY_KEY;
    const bool used = b < local_capacity ? k != EMPTY_KEY : l_special != 0;
#endif
    if (used) GPUAGG_PARTIAL_TO_GLOBAL(k, l_, s)
  }
  GPUAGG_END_COUNTS()
}
)CLC"};

/// GPUAGG_COLD_QUEUE_PARAMS: q_keys, q_rows (local memory), cold_rows.
struct cold_queue_args {
  local_memory keys;
  local_memory rows;
  std::uint32_t rows_per_item = 0;  ///< cold_rows: rows per work item between two drains
  template <class F>
  void for_each(F& f) const {
    f(keys);
    f(rows);
    f(rows_per_item);
  }
};

/// GPUAGG_PERFECT_PARAMS: perfect_keys, perfect_group_mask, perfect_seed, l_used, l_displacement
/// (the last two in local memory).
template <class Buffer>
struct perfect_local_args {
  Buffer keys;  ///< each bucket's key (EMPTY_KEY where none), then a word per displacement group
  std::uint32_t group_mask = 0;
  std::uint64_t seed = 0;
  local_memory used;
  local_memory local_displacements;
  template <class F>
  void for_each(F& f) const {
    f(keys);
    f(group_mask);
    f(seed);
    f(used);
    f(local_displacements);
  }
};

/// GPUAGG_RANGE_PARAMS: range_lowest, range_spans (range_local_plan).
template <class Bits>
struct range_local_args {
  Bits lowest{};
  std::uint64_t spans = 0;
  template <class F>
  void for_each(F& f) const {
    f(lowest);
    f(spans);
  }
};

/// WORKGROUPLOCAL's parameters after GPUAGG_AGGREGATE_PARAMS: l_keys ACC_PARAMS(l_) (local
/// memory), local_bits, local_capacity, copies GPUAGG_PERFECT_PARAMS GPUAGG_RANGE_PARAMS
/// GPUAGG_COLD_QUEUE_PARAMS.
template <class Buffer, class Bits>
struct workgroup_local_args {
  local_memory keys;  ///< keys (the perfect local table's once), or for keyless tables a bitmap of the entries in use
  std::vector<local_memory> accumulators;
  std::uint32_t bits = 0;
  std::uint32_t capacity = 0;  ///< buckets of one copy
  std::uint32_t copies = 1;
  std::optional<perfect_local_args<Buffer>> perfect;  ///< exactly in builds with -DGPUAGG_PERFECT_LOCAL
  std::optional<range_local_args<Bits>> range;        ///< exactly in builds with -DGPUAGG_RANGE_LOCAL
  std::optional<cold_queue_args> cold_queue;          ///< exactly in builds with -DGPUAGG_COLD_QUEUE
  template <class F>
  void for_each(F& f) const {
    f(keys);
    f(accumulators);
    f(bits);
    f(capacity);
    f(copies);
    f(perfect);
    f(range);
    f(cold_queue);
  }
};

}  // namespace gpuagg::detail::kernels
