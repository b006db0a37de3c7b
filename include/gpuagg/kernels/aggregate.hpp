#pragma once
// What every AGGREGATE kernel shares: a row or a partial aggregate into the global table (or
// the spill area), the run cache and its hot-key register, SHARED's hot-key table, the rows
// loop with four rows in flight, and the parameters every strategy's kernel starts with
// (GPUAGG_AGGREGATE_PARAMS), with their argument struct. Each strategy's body and its own
// parameters are in a file of their own (shared.hpp, workgroup_local.hpp, independent.hpp).

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "../detail/fixed_string.hpp"
#include "args.hpp"

namespace gpuagg::detail::kernels {

inline constexpr fixed_string aggregate_common{R"CLC(// One row's values (ACC_LOAD_ROW), or an aggregate held in private variables (ACC_DECLARE), P,
// of key k into the global table (or the spill area).
#define GPUAGG_LOADED_TO_GLOBAL(k, P) { \
  const uint slot_ = gpuagg_insert_global(g_keys, k, bits, capacity, key_min, max_probes, &claimed, \
                                          GPUAGG_KEY_STRIDE, 0u, plain_key_reads); \
  if (slot_ != GPUAGG_NO_SLOT) { \
    if (slot_ == capacity) special = 1; \
    ACC_COMBINE_LOADED(global, g_, slot_ * GPUAGG_ACC_STRIDE, P) \
  } else { \
    const uint at_ = gpuagg_spill_slot(meta, spill_capacity); \
    if (at_ != GPUAGG_NO_SLOT) { s_keys[at_] = k; ACC_STORE_LOADED(s_, at_, P) } \
  } }

// Built with -DGPUAGG_RUN_CACHE, a run of rows with one key is combined in private variables
// first (a work item's run cache, the "private variable" of the sort-based atomics paper): a
// dominant key then costs one table update per run instead of one per row. Where keys vary
// within a SIMD group it costs divergence (and its branch costs even where unused), so the
// driver runs this variant of the program only for a dominant key (plan.hpp: run_cache).
// Before the run cache, a hot-key register: the rows of `hot_key` (the sample's most frequent
// key, when `have_hot`) go to private variables of their own, written to the table once per
// work item at the end, so that cold rows between them no longer end its runs.
// FLUSH(k, P) writes an aggregate to the table.
#ifdef GPUAGG_RUN_CACHE
#define GPUAGG_RUN_CACHE_PARAMS , const KEY_T hot_key, const uint have_hot
#define GPUAGG_RUN_CACHE_BEGIN \
  uint have_run_ = 0; \
  KEY_T run_key_ = EMPTY_KEY; \
  ACC_DECLARE(run_) \
  uint hot_used_ = 0; \
  ACC_DECLARE(hot_)
#define GPUAGG_CACHED_ROW(k, P, FLUSH) \
  if (have_hot && (k) == hot_key) { \
    ACC_MERGE_PRIVATE(hot_, P) \
    hot_used_ = 1; \
  } else if (have_run_ && (k) == run_key_) { \
    ACC_MERGE_PRIVATE(run_, P) \
  } else { \
    if (have_run_) FLUSH(run_key_, run_) \
    run_key_ = (k); \
    ACC_ASSIGN(run_, P) \
    have_run_ = 1; \
  }
#define GPUAGG_RUN_CACHE_END(FLUSH) \
  if (have_run_) FLUSH(run_key_, run_) \
  if (hot_used_) FLUSH(hot_key, hot_)
#elif defined(GPUAGG_PRIVATE_GROUPS)
// Built with -DGPUAGG_PRIVATE_GROUPS (for a query of a few groups): each work item keeps the
// groups of four keys the driver names (pk0..pk3: the key sample's, repeated where it holds
// fewer) in private variables, and writes each it used to the table once at the end. The
// table then takes one update per group and work item instead of one per row: with all rows
// of a work group in a few buckets, the atomics' serialization on those buckets, not the
// reading of the rows, would bound the query. A row updates all four slots' accumulators,
// each keeping its old value unless the row's key is its own (a select, not a branch), so the
// lanes of a SIMD group never diverge on which group their rows hold. A row of any other key
// goes to the table as without the build: groups the sample missed cost time, never
// correctness.
#define GPUAGG_RUN_CACHE_PARAMS , const KEY_T pk0_, const KEY_T pk1_, const KEY_T pk2_, const KEY_T pk3_
#define GPUAGG_RUN_CACHE_BEGIN \
  uint pused_ = 0u; \
  ACC_DECLARE(p0_) \
  ACC_DECLARE(p1_) \
  ACC_DECLARE(p2_) \
  ACC_DECLARE(p3_)
#define GPUAGG_CACHED_ROW(k, P, FLUSH) { \
  const uint m0_ = (k) == pk0_; \
  const uint m1_ = !m0_ && (k) == pk1_; \
  const uint m2_ = !(m0_ | m1_) && (k) == pk2_; \
  const uint m3_ = !(m0_ | m1_ | m2_) && (k) == pk3_; \
  if (m0_ | m1_ | m2_ | m3_) { \
    ACC_MERGE_PRIVATE_IF(p0_, P, m0_) \
    ACC_MERGE_PRIVATE_IF(p1_, P, m1_) \
    ACC_MERGE_PRIVATE_IF(p2_, P, m2_) \
    ACC_MERGE_PRIVATE_IF(p3_, P, m3_) \
    pused_ |= m0_ | (m1_ << 1) | (m2_ << 2) | (m3_ << 3); \
  } else { \
    FLUSH(k, P) \
  } }
#define GPUAGG_RUN_CACHE_END(FLUSH) \
  if (pused_ & 1u) FLUSH(pk0_, p0_) \
  if (pused_ & 2u) FLUSH(pk1_, p1_) \
  if (pused_ & 4u) FLUSH(pk2_, p2_) \
  if (pused_ & 8u) FLUSH(pk3_, p3_)
#else
#define GPUAGG_RUN_CACHE_PARAMS
#define GPUAGG_RUN_CACHE_BEGIN
#define GPUAGG_CACHED_ROW(k, P, FLUSH) FLUSH(k, P)
#define GPUAGG_RUN_CACHE_END(FLUSH)
#endif

// Built with -DGPUAGG_HOT_TABLE (SHARED, hashing schemes only), a hot-key table in local memory
// in front of the global table: the driver hands over the sample's most frequent keys
// (`hot_keys`, `hot_count` of them); each work group inserts them into a local table of
// `hot_capacity` buckets (a power of two, at most half full, plus the EMPTY_KEY bucket at
// `hot_capacity`) and then only looks keys up in it, no claiming at run time. A row whose key
// is there updates the local accumulators with local atomics; any other row goes to the global
// table as before. At the end, each local bucket some row used goes to the global table once.
// For zipf keys the hot keys' global atomics, spread over as many L2 lines as keys, serialize
// in the L2; local atomics of one work group do not reach it.
#ifdef GPUAGG_HOT_TABLE
#define GPUAGG_HOT_TABLE_PARAMS \
  , __global const KEY_T* restrict hot_keys, const uint hot_count, const uint hot_bits, const uint hot_capacity, \
  __local KEY_T* h_keys ACC_PARAMS(__local, h_), __local uint* h_used
// The hot table's bucket of k, or GPUAGG_NO_SLOT: the table is read-only here, so an empty
// bucket ends the probe. EMPTY_KEY always has its bucket.
inline uint gpuagg_find_hot(__local const KEY_T* keys, KEY_T k, uint bits, uint capacity, KEY_T key_min) {
  if (k == EMPTY_KEY) return capacity;
  const uint mask = capacity - 1u;
  uint b = gpuagg_home(k, bits, capacity, key_min);
  for (uint i = 0; i < capacity; ++i) {
    const KEY_T seen = keys[b];
    if (seen == k) return b;
    if (seen == EMPTY_KEY) return GPUAGG_NO_SLOT;
    b = GPUAGG_PROBE_NEXT(b, i, mask);
  }
  return GPUAGG_NO_SLOT;
}
#define GPUAGG_HOT_TABLE_BEGIN \
  for (uint s = get_local_id(0); s <= hot_capacity; s += get_local_size(0)) { \
    h_keys[s] = EMPTY_KEY; \
    h_used[s] = 0u; \
    ACC_INIT(h_, s) \
  } \
  barrier(CLK_LOCAL_MEM_FENCE); \
  { \
    uint hot_claimed_ = 0; \
    for (uint i = get_local_id(0); i < hot_count; i += get_local_size(0)) { \
      gpuagg_insert_local(h_keys, hot_keys[i], hot_bits, hot_capacity, key_min, hot_capacity, &hot_claimed_, \
                          1u, 0u, 0u); \
    } \
  } \
  barrier(CLK_LOCAL_MEM_FENCE);
#define GPUAGG_HOT_OR_GLOBAL(k, P) { \
  const uint hs_ = gpuagg_find_hot(h_keys, k, hot_bits, hot_capacity, key_min); \
  if (hs_ != GPUAGG_NO_SLOT) { \
    h_used[hs_] = 1u; \
    ACC_COMBINE_LOADED(local, h_, hs_, P) \
  } else GPUAGG_LOADED_TO_GLOBAL(k, P) }
#define GPUAGG_HOT_TABLE_END \
  barrier(CLK_LOCAL_MEM_FENCE); \
  for (uint s = get_local_id(0); s <= hot_capacity; s += get_local_size(0)) { \
    if (h_used[s]) { \
      const KEY_T hk_ = s < hot_capacity ? h_keys[s] : EMPTY_KEY; \
      GPUAGG_PARTIAL_TO_GLOBAL(hk_, h_, s) \
    } \
  }
#else
#define GPUAGG_HOT_TABLE_PARAMS
#define GPUAGG_HOT_TABLE_BEGIN
#define GPUAGG_HOT_OR_GLOBAL(k, P) GPUAGG_LOADED_TO_GLOBAL(k, P)
#define GPUAGG_HOT_TABLE_END
#endif

// One partial aggregate (bucket q of table Q) into the global table (or the spill area).
#define GPUAGG_PARTIAL_TO_GLOBAL(k, Q, q) { \
  const uint slot_ = gpuagg_insert_global(g_keys, k, bits, capacity, key_min, max_probes, &claimed, \
                                          GPUAGG_KEY_STRIDE, 0u, plain_key_reads); \
  if (slot_ != GPUAGG_NO_SLOT) { \
    if (slot_ == capacity) special = 1; \
    ACC_COMBINE_FROM(global, g_, slot_ * GPUAGG_ACC_STRIDE, Q, q) \
  } else { \
    const uint at_ = gpuagg_spill_slot(meta, spill_capacity); \
    if (at_ != GPUAGG_NO_SLOT) { s_keys[at_] = k; ACC_COPY_FROM(s_, at_, Q, q) } \
  } }

// The rows of this work item, `stride` apart, GPUAGG_ROWS_IN_FLIGHT (1, 2, 4 or 8; 4 unless the
// build defines it) at a time: the keys and values of those rows are loaded before any of them
// is combined, so each work item keeps their loads in flight (the loads, not the atomics, bound
// the low-cardinality kernels). ROW(k, row, P) combines one row whose values were loaded by
// ACC_LOAD_ROW(P, row), if it passes the query's WHERE clause (ROW_PASSES, 1 without one).
#ifndef GPUAGG_ROWS_IN_FLIGHT
#define GPUAGG_ROWS_IN_FLIGHT 4
#endif
// A row's key: its key columns, or where AGGREGATE reads PARTITION's copy of a 64-bit key word
// with `bucketed`, the row's bucket there (kernels/partition.hpp; the tables' bits and smallest
// key are 0 in that launch, so the bucket is its own home).
#if KEY_IS_64
#define GPUAGG_ROW_KEY(row) (bucketed ? (KEY_T)((__global const uint*)key_in0)[row] : KEY_LOAD(row))
#else
#define GPUAGG_ROW_KEY(row) KEY_LOAD(row)
#endif
#define GPUAGG_ROW_LOAD(i, stride) \
  const ulong r##i##_ = row_ + i * (stride); \
  const KEY_T k##i##_ = GPUAGG_ROW_KEY(r##i##_); \
  ACC_LOAD_ROW(a##i##_, r##i##_)
#define GPUAGG_ROW_COMBINE(i, ROW) if (ROW_PASSES(r##i##_)) { ROW(k##i##_, r##i##_, a##i##_) }
#if GPUAGG_ROWS_IN_FLIGHT == 8
#define GPUAGG_ROWS_STEP(stride, ROW) \
  GPUAGG_ROW_LOAD(0, stride) GPUAGG_ROW_LOAD(1, stride) GPUAGG_ROW_LOAD(2, stride) GPUAGG_ROW_LOAD(3, stride) \
  GPUAGG_ROW_LOAD(4, stride) GPUAGG_ROW_LOAD(5, stride) GPUAGG_ROW_LOAD(6, stride) GPUAGG_ROW_LOAD(7, stride) \
  GPUAGG_ROW_COMBINE(0, ROW) GPUAGG_ROW_COMBINE(1, ROW) GPUAGG_ROW_COMBINE(2, ROW) GPUAGG_ROW_COMBINE(3, ROW) \
  GPUAGG_ROW_COMBINE(4, ROW) GPUAGG_ROW_COMBINE(5, ROW) GPUAGG_ROW_COMBINE(6, ROW) GPUAGG_ROW_COMBINE(7, ROW)
#elif GPUAGG_ROWS_IN_FLIGHT == 2
#define GPUAGG_ROWS_STEP(stride, ROW) \
  GPUAGG_ROW_LOAD(0, stride) GPUAGG_ROW_LOAD(1, stride) GPUAGG_ROW_COMBINE(0, ROW) GPUAGG_ROW_COMBINE(1, ROW)
#elif GPUAGG_ROWS_IN_FLIGHT == 1
#define GPUAGG_ROWS_STEP(stride, ROW) GPUAGG_ROW_LOAD(0, stride) GPUAGG_ROW_COMBINE(0, ROW)
#else
#define GPUAGG_ROWS_STEP(stride, ROW) \
  GPUAGG_ROW_LOAD(0, stride) GPUAGG_ROW_LOAD(1, stride) GPUAGG_ROW_LOAD(2, stride) GPUAGG_ROW_LOAD(3, stride) \
  GPUAGG_ROW_COMBINE(0, ROW) GPUAGG_ROW_COMBINE(1, ROW) GPUAGG_ROW_COMBINE(2, ROW) GPUAGG_ROW_COMBINE(3, ROW)
#endif
// A CPU's core (GPUAGG_SERIAL_LOCAL) runs a work item's rows one after another, and where a
// row's bucket lies in a global table larger than the core's caches its update waits for a miss,
// which the next row's atomic (a locked instruction, which waits for every earlier access)
// cannot overlap. GPUAGG_PREFETCH_ROW(row), which a kernel defines over its table (empty by
// default), fetches the bucket of a row GPUAGG_PREFETCH_DISTANCE rows ahead: its miss then runs
// beside the rows before it. GPUs keep rows in flight across work items instead.
#define GPUAGG_PREFETCH_ROW(row)
#ifdef GPUAGG_SERIAL_LOCAL
#define GPUAGG_PREFETCH_DISTANCE 32u
#define GPUAGG_PREFETCH_STEP(row, end) \
  for (uint p_ = 0; p_ < GPUAGG_ROWS_IN_FLIGHT; ++p_) { \
    const ulong ahead_ = (row) + GPUAGG_PREFETCH_DISTANCE + p_; \
    if (ahead_ < (end)) { GPUAGG_PREFETCH_ROW(ahead_) } \
  }
#else
#define GPUAGG_PREFETCH_STEP(row, end)
#endif
#define GPUAGG_FOR_ROWS(first, end, stride, ROW) { \
  ulong row_ = (first); \
  for (; row_ + (GPUAGG_ROWS_IN_FLIGHT - 1) * (stride) < (end); row_ += GPUAGG_ROWS_IN_FLIGHT * (stride)) { \
    GPUAGG_PREFETCH_STEP(row_, end) \
    GPUAGG_ROWS_STEP(stride, ROW) \
  } \
  for (; row_ < (end); row_ += (stride)) { \
    const KEY_T k_ = GPUAGG_ROW_KEY(row_); \
    ACC_LOAD_ROW(a_, row_) \
    if (ROW_PASSES(row_)) { ROW(k_, row_, a_) } \
  } }

// A work item's rows of the block [begin, end): a grid stride apart, so that neighbouring work
// items read neighbouring rows (coalesced); in a serial variant (GPUAGG_SERIAL_LOCAL: one work
// item per work group, a CPU's core) one contiguous share each, so that a core reads whole
// cache lines in order where a stride would have every core read every line.
#ifdef GPUAGG_SERIAL_LOCAL
#define GPUAGG_FOR_ITEM_ROWS(begin, end, ROW) { \
  const ulong rows_ = (end) - (begin); \
  const ulong share_ = (rows_ + get_global_size(0) - 1) / get_global_size(0); \
  const ulong from_ = (begin) + min(rows_, share_ * get_global_id(0)); \
  GPUAGG_FOR_ROWS(from_, min((ulong)(end), from_ + share_), 1u, ROW) }
#else
#define GPUAGG_FOR_ITEM_ROWS(begin, end, ROW) GPUAGG_FOR_ROWS((begin) + get_global_id(0), end, get_global_size(0), ROW)
#endif

#define GPUAGG_AGGREGATE_PARAMS \
  KEY_PARAMS VALUE_PARAMS, const ulong row_begin, const ulong row_end, \
  __global KEY_T* g_keys ACC_PARAMS(__global, g_), const uint bits, const uint capacity, \
  const KEY_T key_min, const uint max_probes, __global ulong* meta, \
  __global KEY_T* s_keys ACC_PARAMS(__global, s_), const uint spill_capacity, const uint plain_key_reads, \
  const uint bucketed GPUAGG_RUN_CACHE_PARAMS
)CLC"};

/// GPUAGG_RUN_CACHE_PARAMS, in builds with -DGPUAGG_RUN_CACHE: the hot-key register.
template <class Bits>
struct run_cache_args {
  Bits hot_key = 0;            ///< the sample's most frequent key
  std::uint32_t have_hot = 0;  ///< whether a sample was taken (else the register stays unused)
  template <class F>
  void for_each(F& f) const {
    f(hot_key);
    f(have_hot);
  }
};

/// GPUAGG_RUN_CACHE_PARAMS, in builds with -DGPUAGG_PRIVATE_GROUPS: the four keys whose groups a
/// work item keeps in private variables.
template <class Bits>
struct private_keys_args {
  std::array<Bits, 4> keys{};
  template <class F>
  void for_each(F& f) const {
    for (const Bits key : keys) f(key);
  }
};

/// GPUAGG_AGGREGATE_PARAMS: KEY_PARAMS VALUE_PARAMS, row_begin, row_end, g_keys
/// ACC_PARAMS(g_), bits, capacity, key_min, max_probes, meta, s_keys ACC_PARAMS(s_),
/// spill_capacity, plain_key_reads, bucketed GPUAGG_RUN_CACHE_PARAMS. Each strategy's own parameters
/// follow (its aggregate args).
template <class Buffer, class Bits>
struct aggregate_args {
  std::vector<Buffer> columns;  ///< the key column(s), then the value columns
  std::uint64_t row_begin = 0;
  std::uint64_t row_end = 0;
  table_arg<Buffer> table;
  std::uint32_t bits = 0;
  std::uint32_t capacity = 0;
  Bits key_min = 0;
  std::uint32_t max_probes = 0;
  Buffer meta;
  table_arg<Buffer> spill;
  std::uint32_t spill_capacity = 0;
  std::uint32_t plain_key_reads = 0;
  std::uint32_t bucketed = 0;  ///< the key columns are PARTITION's copy of buckets (kernels/partition.hpp)
  std::optional<run_cache_args<Bits>> run_cache;  ///< exactly in builds with -DGPUAGG_RUN_CACHE
  std::optional<private_keys_args<Bits>> private_keys;  ///< exactly in builds with -DGPUAGG_PRIVATE_GROUPS
  template <class F>
  void for_each(F& f) const {
    f(columns);
    f(row_begin);
    f(row_end);
    f(table);
    f(bits);
    f(capacity);
    f(key_min);
    f(max_probes);
    f(meta);
    f(spill);
    f(spill_capacity);
    f(plain_key_reads);
    f(bucketed);
    f(run_cache);
    f(private_keys);
  }
};

}  // namespace gpuagg::detail::kernels
