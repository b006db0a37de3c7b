#pragma once
// The table kernels: INITIALIZE (every bucket empty), MERGE (a smaller table, the spill area or
// another table's partial aggregate into the table), FINALIZE (the used buckets compacted into
// the result, the outputs computed) and EXPORT (the used buckets as a partial aggregate), with
// their argument structs.

#include <cstdint>
#include <vector>

#include "../detail/fixed_string.hpp"
#include "args.hpp"

namespace gpuagg::detail::kernels {

inline constexpr fixed_string table_kernels{R"CLC(
// INITIALIZE: every bucket empty, every accumulator at its identity.
__kernel void gpuagg_initialize(__global KEY_T* g_keys ACC_PARAMS(__global, g_), const uint slots) {
  GPUAGG_REBIND(g_, __global)
  for (uint s = get_global_id(0); s < slots; s += get_global_size(0)) {
#if GPUAGG_DENSE_TABLE
    if (s < (slots + 31u) / 32u) ((__global uint*)g_keys)[s] = 0u;
#else
    g_keys[s * GPUAGG_KEY_STRIDE] = EMPTY_KEY;
#ifdef GPUAGG_INTERLEAVED
    // The key's word is wider than the key: write its padding too, so that every sector of the
    // record is written whole (a partly written sector costs the L2 a read from memory).
    for (uint w = 1u; w < ACC_WORD_BYTES / (uint)sizeof(KEY_T); ++w) g_keys[s * GPUAGG_KEY_STRIDE + w] = 0;
#endif
#endif
    ACC_INIT(g_, s * GPUAGG_ACC_STRIDE)
  }
}

// MERGE: combines n entries (a smaller table being rehashed, or the spill area) into the
// table. Entries below n_table whose key is EMPTY_KEY are empty buckets; past it, EMPTY_KEY is
// a real key. Probes the whole table: the driver has made room. `src_interleaved`: the source
// is a table of the global table's layout (else plain arrays, as the spill area).
__kernel void gpuagg_merge(__global const KEY_T* src_keys ACC_PARAMS(__global const, src_), const ulong n,
                           const ulong n_table, __global KEY_T* g_keys ACC_PARAMS(__global, g_),
                           const uint bits, const uint capacity, const KEY_T key_min, __global ulong* meta,
                           const uint src_interleaved) {
  GPUAGG_BEGIN_COUNTS()
  GPUAGG_REBIND(g_, __global)
  uint src_key_stride = 1u, src_acc_stride = 1u;
  if (src_interleaved) {
    GPUAGG_REBIND(src_, __global const)
    src_key_stride = GPUAGG_KEY_STRIDE;
    src_acc_stride = GPUAGG_ACC_STRIDE;
  }
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    const KEY_T k = src_keys[i * src_key_stride];
    if (i < n_table && k == EMPTY_KEY) continue;
    const uint slot =
        gpuagg_insert_global(g_keys, k, bits, capacity, key_min, capacity, &claimed, GPUAGG_KEY_STRIDE, 0u, 0u);
    if (slot == GPUAGG_NO_SLOT) { meta[META_LOST] = 1; continue; }
    if (slot == capacity) special = 1;
    ACC_COMBINE_FROM(global, g_, slot * GPUAGG_ACC_STRIDE, src_, i * src_acc_stride)
  }
  GPUAGG_END_COUNTS()
}

// FINALIZE: compacts the used buckets into the result columns and computes the outputs
// (the arithmetic outside the aggregates). Positions come from one atomic per work group.
// With owners > 1, only the groups that `owner` owns (gpuagg_owner_of): each member of a
// multi-device query finalizes its own share of the merged groups.
__kernel void gpuagg_finalize(__global const KEY_T* g_keys ACC_PARAMS(__global const, g_), const uint capacity,
                              const KEY_T key_min, const uint bits, __global const ulong* meta, const uint owners,
                              const uint owner,
                              __global ulong* out_count KEY_OUT_PARAMS OUT_PARAMS) {
  __local uint wg_count;
  __local ulong wg_base;
  GPUAGG_REBIND(g_, __global const)
  const uint slots = capacity + 1u;
  const uint step = get_num_groups(0) * get_local_size(0);
  for (uint base = get_group_id(0) * get_local_size(0); base < slots; base += step) {
    const uint slot = base + get_local_id(0);
    KEY_T k = EMPTY_KEY;
    bool used = false;
    if (slot < capacity) {
#if GPUAGG_DENSE_TABLE
      k = gpuagg_dense_key(slot, key_min, bits);
      used = GPUAGG_GLOBAL_USED(g_keys, slot);
#else
      k = g_keys[slot * GPUAGG_KEY_STRIDE];
      used = k != EMPTY_KEY;
#endif
    } else if (slot == capacity) {
      used = meta[META_SPECIAL] != 0;
    }
    if (used && owners > 1u && gpuagg_owner_of((ulong)k, owners) != owner) used = false;
    if (get_local_id(0) == 0) wg_count = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint mine = 0;
    if (used) mine = atomic_inc(&wg_count);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0) wg_base = atom_add(out_count, (ulong)wg_count);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (used) {
      const ulong pos = wg_base + mine;
      KEY_STORE(pos, k);
      OUT_STORE_ALL(pos, slot * GPUAGG_ACC_STRIDE)
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

// COUNT_NEW: how many of n entries (a partial aggregate's keys, every one a real key) would
// claim a bucket the table does not hold yet, so that the driver grows the table for the groups
// a merge adds, not for every entry it brings (EMPTY_KEY takes the reserved bucket: none).
// Reads only; the probe is the insert's, stopping at the key or at an empty bucket.
__kernel void gpuagg_count_new(__global const KEY_T* src_keys, const ulong n, __global const KEY_T* g_keys,
                               const uint bits, const uint capacity, const KEY_T key_min,
                               __global ulong* out_count) {
  __local uint wg_count;
  if (get_local_id(0) == 0) wg_count = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  uint fresh = 0;
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    const KEY_T k = src_keys[i];
#if GPUAGG_DENSE_TABLE
    const uint b = gpuagg_home(k, bits, capacity, key_min);
    if (b != GPUAGG_NO_SLOT && !GPUAGG_GLOBAL_USED(g_keys, b)) ++fresh;
#else
    if (k == EMPTY_KEY) continue;
    const uint mask = capacity - 1u;
    uint b = gpuagg_home(k, bits, capacity, key_min);
    if (b == GPUAGG_NO_SLOT) continue;
    for (uint p = 0; p < capacity; ++p) {
      const KEY_T seen = g_keys[b * GPUAGG_KEY_STRIDE];
      if (seen == k) break;
      if (seen == EMPTY_KEY) { ++fresh; break; }
      b = GPUAGG_PROBE_NEXT(b, p, mask);
    }
#endif
  }
  if (fresh != 0u) atomic_add(&wg_count, fresh);
  barrier(CLK_LOCAL_MEM_FENCE);
  if (get_local_id(0) == 0 && wg_count != 0u) atom_add(out_count, (ulong)wg_count);
}

)CLC"};

// EXPORT: the used buckets as they are, keys as table words and accumulators not finalized: a
// partial aggregate that another table takes in (MERGE with n_table = 0, where EMPTY_KEY is a
// real key). Several devices' or processes' partial tables meet this way. With owners > 1,
// only the groups that `owner` owns (gpuagg_owner_of): the share a member sends to that owner.
inline constexpr fixed_string export_kernel{R"CLC(
__kernel void gpuagg_export(__global const KEY_T* g_keys ACC_PARAMS(__global const, g_), const uint capacity,
                            const KEY_T key_min, const uint bits, __global const ulong* meta, const uint owners,
                            const uint owner,
                            __global ulong* out_count,
                            __global KEY_T* x_keys ACC_PARAMS(__global, x_)) {
  __local uint wg_count;
  __local ulong wg_base;
  GPUAGG_REBIND(g_, __global const)
  const uint slots = capacity + 1u;
  const uint step = get_num_groups(0) * get_local_size(0);
  for (uint base = get_group_id(0) * get_local_size(0); base < slots; base += step) {
    const uint slot = base + get_local_id(0);
    KEY_T k = EMPTY_KEY;
    bool used = false;
    if (slot < capacity) {
#if GPUAGG_DENSE_TABLE
      k = gpuagg_dense_key(slot, key_min, bits);
      used = GPUAGG_GLOBAL_USED(g_keys, slot);
#else
      k = g_keys[slot * GPUAGG_KEY_STRIDE];
      used = k != EMPTY_KEY;
#endif
    } else if (slot == capacity) {
      used = meta[META_SPECIAL] != 0;
    }
    if (used && owners > 1u && gpuagg_owner_of((ulong)k, owners) != owner) used = false;
    if (get_local_id(0) == 0) wg_count = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint mine = 0;
    if (used) mine = atomic_inc(&wg_count);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0) wg_base = atom_add(out_count, (ulong)wg_count);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (used) {
      const ulong pos = wg_base + mine;
      x_keys[pos] = k;
      ACC_COPY_FROM(x_, pos, g_, slot * GPUAGG_ACC_STRIDE)
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
)CLC"};

/// gpuagg_initialize(g_keys ACC_PARAMS(g_), slots).
template <class Buffer>
struct initialize_args {
  table_arg<Buffer> table;
  std::uint32_t slots = 0;  ///< the buckets and the EMPTY_KEY bucket
  template <class F>
  void for_each(F& f) const {
    f(table);
    f(slots);
  }
};

/// gpuagg_merge(src_keys ACC_PARAMS(src_), n, n_table, g_keys ACC_PARAMS(g_), bits, capacity,
/// key_min, meta, src_interleaved).
template <class Buffer, class Bits>
struct merge_args {
  table_arg<Buffer> source;
  std::uint64_t entries = 0;        ///< n: the source's entries to merge
  std::uint64_t table_entries = 0;  ///< n_table: entries below it whose key is EMPTY_KEY are empty
  table_arg<Buffer> table;
  std::uint32_t bits = 0;
  std::uint32_t capacity = 0;
  Bits key_min = 0;
  Buffer meta;
  std::uint32_t source_interleaved = 0;
  template <class F>
  void for_each(F& f) const {
    f(source);
    f(entries);
    f(table_entries);
    f(table);
    f(bits);
    f(capacity);
    f(key_min);
    f(meta);
    f(source_interleaved);
  }
};

/// gpuagg_finalize(g_keys ACC_PARAMS(g_), capacity, key_min, bits, meta, owners, owner, out_count
/// KEY_OUT_PARAMS OUT_PARAMS).
template <class Buffer, class Bits>
struct finalize_args {
  table_arg<Buffer> table;
  std::uint32_t capacity = 0;
  Bits key_min = 0;
  std::uint32_t bits = 0;  ///< direct addressing over a box: its spans (hash.hpp: gpuagg_dense_key)
  Buffer meta;
  std::uint32_t owners = 1;         ///< above 1: only `owner`'s groups (detail/owner.hpp)
  std::uint32_t owner = 0;
  Buffer count;                     ///< out_count: the groups written
  std::vector<Buffer> key_columns;  ///< KEY_OUT_PARAMS: one per key column
  std::vector<Buffer> outputs;      ///< OUT_PARAMS: one per output
  template <class F>
  void for_each(F& f) const {
    f(table);
    f(capacity);
    f(key_min);
    f(bits);
    f(meta);
    f(owners);
    f(owner);
    f(count);
    f(key_columns);
    f(outputs);
  }
};

/// gpuagg_count_new(src_keys, n, g_keys, bits, capacity, key_min, out_count).
template <class Buffer, class Bits>
struct count_new_args {
  Buffer source;            ///< the incoming keys (table words)
  std::uint64_t entries = 0;
  Buffer table_keys;        ///< the table's key buffer (its records when interleaved)
  std::uint32_t bits = 0;
  std::uint32_t capacity = 0;
  Bits key_min = 0;
  Buffer count;             ///< out_count: the entries the table does not hold
  template <class F>
  void for_each(F& f) const {
    f(source);
    f(entries);
    f(table_keys);
    f(bits);
    f(capacity);
    f(key_min);
    f(count);
  }
};

/// gpuagg_export(g_keys ACC_PARAMS(g_), capacity, key_min, bits, meta, owners, owner, out_count,
/// x_keys ACC_PARAMS(x_)).
template <class Buffer, class Bits>
struct export_args {
  table_arg<Buffer> table;
  std::uint32_t capacity = 0;
  Bits key_min = 0;
  std::uint32_t bits = 0;  ///< direct addressing over a box: its spans (hash.hpp: gpuagg_dense_key)
  Buffer meta;
  std::uint32_t owners = 1;  ///< above 1: only `owner`'s groups (detail/owner.hpp)
  std::uint32_t owner = 0;
  Buffer count;             ///< out_count: the entries written
  table_arg<Buffer> out;    ///< x_keys ACC_PARAMS(x_): keys (table words) and accumulators
  template <class F>
  void for_each(F& f) const {
    f(table);
    f(capacity);
    f(key_min);
    f(bits);
    f(meta);
    f(owners);
    f(owner);
    f(count);
    f(out);
  }
};

}  // namespace gpuagg::detail::kernels
