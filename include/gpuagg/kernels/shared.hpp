#pragma once
// SHARED's AGGREGATE kernel and the parameters it adds: the hot-key table's, in builds with
// -DGPUAGG_HOT_TABLE.

#include <cstdint>
#include <optional>
#include <vector>

#include "../detail/fixed_string.hpp"
#include "aggregate.hpp"

namespace gpuagg::detail::kernels {

// SHARED (section 2.2): every work item updates the one global table with atomics.
inline constexpr fixed_string aggregate_shared{R"CLC(
#define GPUAGG_SHARED_ROW(k, row, P) GPUAGG_CACHED_ROW(k, P, GPUAGG_HOT_OR_GLOBAL)
// A row's home bucket, its key's word unless direct addressing's table keeps none, and its
// first accumulator, unless one record holds both (GPUAGG_INTERLEAVED). Only in a table of at
// least GPUAGG_PREFETCH_MIN_BUCKETS buckets (3 MiB and more): a core's cache holds a smaller one,
// where the prefetch's second read of the key and its hash cost more than they hide.
#define GPUAGG_PREFETCH_MIN_BUCKETS (1u << 18)
#undef GPUAGG_PREFETCH_ROW
#if GPUAGG_DENSE_TABLE || defined(GPUAGG_INTERLEAVED)
#define GPUAGG_PREFETCH_KEY(b)
#else
#define GPUAGG_PREFETCH_KEY(b) __builtin_prefetch(&g_keys[b], 1, 3);
#endif
#define GPUAGG_PREFETCH_ROW(row) if (capacity >= GPUAGG_PREFETCH_MIN_BUCKETS) { \
  const uint b_ = gpuagg_home(GPUAGG_ROW_KEY(row), bits, capacity, key_min); \
  if (b_ < capacity) { GPUAGG_PREFETCH_KEY(b_) __builtin_prefetch(&g_acc0[b_ * GPUAGG_ACC_STRIDE], 1, 3); } }
__kernel GPUAGG_AGGREGATE_ATTRIBUTES void gpuagg_aggregate(GPUAGG_AGGREGATE_PARAMS GPUAGG_HOT_TABLE_PARAMS) {
  GPUAGG_REBIND(g_, __global)
  GPUAGG_BEGIN_COUNTS()
  GPUAGG_HOT_TABLE_BEGIN
  GPUAGG_RUN_CACHE_BEGIN
  GPUAGG_FOR_ITEM_ROWS(row_begin, row_end, GPUAGG_SHARED_ROW)
  GPUAGG_RUN_CACHE_END(GPUAGG_HOT_OR_GLOBAL)
  GPUAGG_HOT_TABLE_END
  GPUAGG_END_COUNTS()
}
#undef GPUAGG_PREFETCH_ROW
#define GPUAGG_PREFETCH_ROW(row)
)CLC"};

/// GPUAGG_HOT_TABLE_PARAMS: hot_keys, hot_count, hot_bits, hot_capacity, h_keys ACC_PARAMS(h_),
/// h_used (the last three in local memory).
template <class Buffer>
struct hot_table_args {
  Buffer keys;                     ///< the sample's frequent keys, most frequent first
  std::uint32_t count = 0;
  std::uint32_t bits = 0;          ///< log2 of capacity
  std::uint32_t capacity = 0;      ///< buckets of the local table, a power of two
  local_memory local_keys;
  std::vector<local_memory> local_accumulators;
  local_memory local_used;
  template <class F>
  void for_each(F& f) const {
    f(keys);
    f(count);
    f(bits);
    f(capacity);
    f(local_keys);
    f(local_accumulators);
    f(local_used);
  }
};

/// SHARED's parameters after GPUAGG_AGGREGATE_PARAMS.
template <class Buffer>
struct shared_args {
  std::optional<hot_table_args<Buffer>> hot_table;  ///< exactly in builds with -DGPUAGG_HOT_TABLE
  template <class F>
  void for_each(F& f) const {
    f(hot_table);
  }
};

}  // namespace gpuagg::detail::kernels
