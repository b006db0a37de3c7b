#pragma once
// PARTITION's kernels, COUNT, SCAN and SCATTER, with their argument structs.

#include <cstdint>
#include <vector>

#include "../detail/fixed_string.hpp"
#include "args.hpp"

namespace gpuagg::detail::kernels {

inline constexpr fixed_string partition_kernels{R"CLC(// PARTITION (beyond the paper): where the table is larger than the cache, a block's rows are
// first ordered into `parts` runs by the region of the table their home bucket lies in (bucket /
// region), so that the rows that update one region arrive together and find it cached. Three
// kernels: COUNT (a histogram of the runs per tile of rows), SCAN (run by run, the exclusive
// prefix over tiles; run again over the runs' totals for their bases) and SCATTER (every row to
// its run, in no particular order within it). AGGREGATE then reads the ordered copy. A block
// is ordered a piece at a time (its copy holds one piece), and counted and scanned once: each
// piece has `piece_tiles` tiles, and COUNT and SCAN keep each piece's counts and bases apart.
// With `bucketed` (direct addressing over a key word of 64 bits: query_planner::
// partition_copy_buckets), SCATTER writes each row's bucket, 32 bits, into the first key
// column's copy and no other key column: AGGREGATE then reads 4 bytes a row for the key where a
// packed pair or a 64-bit key took 8, and takes the bucket for its key (bucket space: the tables'
// bits and smallest key 0, where a key's home is the key itself).
#define GPUAGG_MAX_PARTS 1024u
inline uint gpuagg_run_of(uint b, uint region, uint parts) {
  return b == GPUAGG_NO_SLOT ? parts - 1u : min(b / region, parts - 1u);
}
inline uint gpuagg_part(KEY_T k, uint bits, uint capacity, KEY_T key_min, uint region, uint parts) {
  return gpuagg_run_of(gpuagg_home(k, bits, capacity, key_min), region, parts);
}

#define GPUAGG_PARTITION_PARAMS \
  const ulong row_begin, const ulong row_end, const ulong tile_rows, const uint bits, const uint capacity, \
  const KEY_T key_min, const uint region, const uint parts, const uint piece_tiles, const uint piece, \
  const uint bucketed, const uint first_region

// Tile t (work group t) holds rows [row_begin + t * tile_rows, + tile_rows), tile t % piece_tiles
// of piece t / piece_tiles: counts[(piece * parts + p) * piece_tiles + t % piece_tiles].
__kernel void gpuagg_partition_count(KEY_PARAMS, GPUAGG_PARTITION_PARAMS, __global uint* restrict counts) {
  __local uint hist[GPUAGG_MAX_PARTS];
  const uint tile = get_group_id(0);
  for (uint p = get_local_id(0); p < parts; p += get_local_size(0)) hist[p] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  const ulong begin = row_begin + tile * tile_rows;
  const ulong end = min(begin + tile_rows, row_end);
#if defined(KEY_FIELDS) && KEY_FIELDS > 1 && defined(GPUAGG_DENSE_TABLE)
  // With `first_region` (direct addressing over the plan's exact box, every key inside it:
  // query_planner::first_column_region), a run is `first_region` values of the first key column,
  // the bucket's most significant digit: a row's run is that column's offset / first_region, and
  // COUNT reads that column alone.
  if (first_region != 0u) {
    const uint shifts[KEY_FIELDS] = KEY_FIELD_SHIFTS;
    const uint widths[KEY_FIELDS] = KEY_FIELD_BITS;
    const KEY_T lowest = key_min >> shifts[0];
    const KEY_T mask = gpuagg_box_mask(widths[0]);
    for (ulong row = begin + get_local_id(0); row < end; row += get_local_size(0)) {
      const uint offset = (uint)((((KEY_T)key_in0[row]) - lowest) & mask);
      atomic_inc(&hist[min(offset / first_region, parts - 1u)]);
    }
  } else
#endif
  for (ulong row = begin + get_local_id(0); row < end; row += get_local_size(0)) {
    atomic_inc(&hist[gpuagg_part(KEY_LOAD(row), bits, capacity, key_min, region, parts)]);
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  const ulong first = (ulong)(tile / piece_tiles) * parts * piece_tiles + tile % piece_tiles;
  for (uint p = get_local_id(0); p < parts; p += get_local_size(0)) counts[first + (ulong)p * piece_tiles] = hist[p];
}

// An exclusive prefix sum of data[0, n) by the work group, in global or local memory; returns
// the total. `scratch` holds a word per work item: each work item sums a contiguous slice, the
// slices' sums are scanned (Hillis-Steele), and each slice is rewritten from its prefix.
#define GPUAGG_DEFINE_EXCLUSIVE_SCAN(AS) \
inline uint gpuagg_exclusive_scan_##AS(__##AS uint* data, uint n, __local uint* scratch) { \
  const uint lid = get_local_id(0); \
  const uint width = get_local_size(0); \
  const uint per = (n + width - 1u) / width; \
  const uint first = min(lid * per, n); \
  const uint last = min(first + per, n); \
  uint sum = 0; \
  for (uint e = first; e < last; ++e) sum += data[e]; \
  scratch[lid] = sum; \
  barrier(CLK_LOCAL_MEM_FENCE); \
  for (uint d = 1; d < width; d <<= 1) { \
    const uint y = lid >= d ? scratch[lid - d] : 0u; \
    barrier(CLK_LOCAL_MEM_FENCE); \
    scratch[lid] += y; \
    barrier(CLK_LOCAL_MEM_FENCE); \
  } \
  const uint total = scratch[width - 1u]; \
  uint prefix = lid > 0 ? scratch[lid - 1] : 0u; \
  for (uint e = first; e < last; ++e) { \
    const uint x = data[e]; \
    data[e] = prefix; \
    prefix += x; \
  } \
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE); \
  return total; \
}
GPUAGG_DEFINE_EXCLUSIVE_SCAN(global)
GPUAGG_DEFINE_EXCLUSIVE_SCAN(local)

// Work group g replaces data[g * n, + n) by its exclusive prefix sums and writes their total to
// totals[g]. `sums` holds one word per work item.
__kernel void gpuagg_partition_scan(__global uint* restrict data, const uint n, __global uint* restrict totals,
                                    __local uint* sums) {
  const uint total = gpuagg_exclusive_scan_global(data + (ulong)get_group_id(0) * n, n, sums);
  if (get_local_id(0) == 0) totals[get_group_id(0)] = total;
}

// Every row of tile t of piece `piece` (rows [row_begin, row_end) are the piece's) to its run:
// run p starts at bases[piece * parts + p], and this tile's part of it at
// counts[(piece * parts + p) * piece_tiles + t] after that (both scanned). The tile goes in
// chunks of 8 rows per work item, each sorted by run in local memory first (a counting sort),
// so that neighbouring work items write neighbouring elements of a run instead of one element
// of 32 different runs.
#define GPUAGG_PART_ROWS_PER_ITEM 8u
#define GPUAGG_PART_CHUNK_MAX 2048u
__kernel void gpuagg_partition_scatter(KEY_PARAMS VALUE_PARAMS, GPUAGG_PARTITION_PARAMS,
                                       __global const uint* restrict counts, __global const uint* restrict bases
                                       KEY_COPY_PARAMS VALUE_COPY_PARAMS) {
  __local uint next[GPUAGG_MAX_PARTS];    // this tile's next position in each run
  __local uint start[GPUAGG_MAX_PARTS];   // per chunk: rows per run, then where each run begins
  __local uint scratch[GPUAGG_PART_CHUNK_MAX / GPUAGG_PART_ROWS_PER_ITEM];
  __local ushort order[GPUAGG_PART_CHUNK_MAX];   // the chunk's rows sorted by run
  __local ushort run_of[GPUAGG_PART_CHUNK_MAX];  // the run of each sorted position
#if KEY_IS_64
  // With `bucketed`, each chunk row's bucket, kept from the run's computation: its write then
  // reads no key column again (a packed pair's two).
  __local uint bucket_of[GPUAGG_PART_CHUNK_MAX];
#endif
  const uint tile = get_group_id(0);
  const uint lid = get_local_id(0);
  const uint width = get_local_size(0);
  const uint chunk = width * GPUAGG_PART_ROWS_PER_ITEM;
  for (uint p = lid; p < parts; p += width) {
    const ulong run = (ulong)piece * parts + p;
    next[p] = bases[run] + counts[run * piece_tiles + tile];
  }
  const ulong begin = row_begin + tile * tile_rows;
  const ulong end = min(begin + tile_rows, row_end);
  for (ulong chunk_begin = begin; chunk_begin < end; chunk_begin += chunk) {
    const uint n = (uint)min((ulong)chunk, end - chunk_begin);
    for (uint p = lid; p < parts; p += width) start[p] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint run[GPUAGG_PART_ROWS_PER_ITEM];
    uint rank[GPUAGG_PART_ROWS_PER_ITEM];
    for (uint j = 0; j < GPUAGG_PART_ROWS_PER_ITEM; ++j) {
      const uint i = lid + j * width;
      if (i < n) {
        const uint b = gpuagg_home(KEY_LOAD(chunk_begin + i), bits, capacity, key_min);
#if KEY_IS_64
        if (bucketed) bucket_of[i] = b;
#endif
        run[j] = gpuagg_run_of(b, region, parts);
        rank[j] = atomic_inc(&start[run[j]]);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    gpuagg_exclusive_scan_local(start, parts, scratch);
    for (uint j = 0; j < GPUAGG_PART_ROWS_PER_ITEM; ++j) {
      const uint i = lid + j * width;
      if (i < n) {
        const uint at = start[run[j]] + rank[j];
        order[at] = (ushort)i;
        run_of[at] = (ushort)run[j];
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint at = lid; at < n; at += width) {
      const uint p = run_of[at];
      const ulong row = chunk_begin + order[at];
      const uint to = next[p] + (at - start[p]);
#if KEY_IS_64
      if (bucketed) {
        ((__global uint*)key_copy0)[to] = bucket_of[order[at]];
      } else {
        KEY_COPY(to, row);
      }
#else
      KEY_COPY(to, row);
#endif
      VALUE_COPY(to, row)
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint p = lid; p < parts; p += width) next[p] += (p + 1u < parts ? start[p + 1u] : n) - start[p];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}
)CLC"};

/// GPUAGG_PARTITION_PARAMS: the parameters COUNT and SCATTER share.
template <class Bits>
struct partition_params {
  std::uint64_t row_begin = 0;
  std::uint64_t row_end = 0;
  std::uint64_t tile_rows = 0;
  std::uint32_t bits = 0;
  std::uint32_t capacity = 0;
  Bits key_min = 0;
  std::uint32_t region = 0;  ///< buckets per run
  std::uint32_t parts = 1;
  std::uint32_t piece_tiles = 1;  ///< tiles of each piece
  std::uint32_t piece = 0;        ///< SCATTER: the piece [row_begin, row_end) is
  std::uint32_t bucketed = 0;     ///< SCATTER writes buckets, not keys (64-bit key words only)
  std::uint32_t first_region = 0;  ///< COUNT: values of the first key column a run (0: by bucket)
  template <class F>
  void for_each(F& f) const {
    f(row_begin);
    f(row_end);
    f(tile_rows);
    f(bits);
    f(capacity);
    f(key_min);
    f(region);
    f(parts);
    f(piece_tiles);
    f(piece);
    f(bucketed);
    f(first_region);
  }
};

/// gpuagg_partition_count(KEY_PARAMS, GPUAGG_PARTITION_PARAMS, counts).
template <class Buffer, class Bits>
struct partition_count_args {
  std::vector<Buffer> key_columns;
  partition_params<Bits> params;
  Buffer counts;
  template <class F>
  void for_each(F& f) const {
    f(key_columns);
    f(params);
    f(counts);
  }
};

/// gpuagg_partition_scan(data, n, totals, sums).
template <class Buffer>
struct partition_scan_args {
  Buffer data;
  std::uint32_t n = 0;
  Buffer totals;
  local_memory sums;  ///< a word per work item
  template <class F>
  void for_each(F& f) const {
    f(data);
    f(n);
    f(totals);
    f(sums);
  }
};

/// gpuagg_partition_scatter(KEY_PARAMS VALUE_PARAMS, GPUAGG_PARTITION_PARAMS, counts, bases
/// KEY_COPY_PARAMS VALUE_COPY_PARAMS).
template <class Buffer, class Bits>
struct partition_scatter_args {
  std::vector<Buffer> columns;  ///< the key column(s), then the value columns
  partition_params<Bits> params;
  Buffer counts;
  Buffer bases;
  std::vector<Buffer> copies;   ///< where the ordered rows go: one per column, in the same order
  template <class F>
  void for_each(F& f) const {
    f(columns);
    f(params);
    f(counts);
    f(bases);
    f(copies);
  }
};

}  // namespace gpuagg::detail::kernels
