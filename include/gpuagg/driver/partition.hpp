#pragma once
// PARTITION (beyond the paper): where the table outgrows the cache, a block's rows are first
// copied into runs by the region of the table their home bucket lies in (COUNT, SCAN, SCATTER:
// kernels/partition.hpp), so the rows that update one region arrive together.

#ifndef GPUAGG_DRIVER_HPP
#error "include <gpuagg/driver.hpp>: driver/*.hpp implement its members"
#endif

#include <algorithm>

#include "../kernels/partition.hpp"
#include "kernel_binder.hpp"

namespace gpuagg {

/// Counts and scans rows [row_begin, row_end) of `inputs`, a block, for PARTITION in pieces of
/// at most partition_piece_rows_ (+ a row per tile): which of `parts` runs each row's home
/// bucket's region of the table puts it in, per tile of each piece, and where each piece's runs
/// begin. Three kernels for the whole block; the first waits for `ready`; their events are
/// appended to `events`. partition_scatter then orders each piece.
template <class Bound>
auto aggregation_driver<Bound>::partition_count(const std::vector<cl::Buffer>& inputs, cl_ulong row_begin,
                                                cl_ulong row_end, std::uint32_t parts,
                                                const std::vector<cl::Event>& ready, std::vector<cl::Event>& events)
    -> partition_layout {
  const std::uint64_t rows = row_end - row_begin;
  if (partition_kernels_.empty()) {
    for (const char* name : {"gpuagg_partition_count", "gpuagg_partition_scan", "gpuagg_partition_scatter"}) {
      partition_kernels_.push_back(ctx_.kernel(home_program_, name));
    }
    std::size_t limit = 256;
    for (const auto& kernel : partition_kernels_) limit = std::min(limit, kernel_work_group_limit(kernel));
    partition_local_ = detail::power_of_two_below(limit);
    partition_tiles_ = std::uint64_t{ctx_.info().compute_units} * 8;
    // Every piece's counts within what one piece of partition_tiles_ tiles of max_partitions
    // runs takes (fewer tiles a piece where there are many pieces), and a tile a run of every
    // piece at least; bases and totals per piece.
    // The copy holds a full block's equal pieces (query_planner::equal_piece_rows), for the
    // table of PARTITION's first use, and bounds every later block's pieces.
    const std::uint64_t block = std::min<std::uint64_t>(block_rows_, std::max<std::uint64_t>(rows_, rows));
    partition_piece_rows_ =
        static_cast<std::size_t>(planner_->equal_piece_rows(block, table_.capacity, table_.interleaved));
    partition_pieces_ = (block + partition_piece_rows_ - 1) / partition_piece_rows_;
    partition_count_words_ = std::max(partition_tiles_, partition_pieces_) * detail::max_partitions;
    partition_counts_ = allocate(partition_count_words_ * sizeof(cl_uint), "PARTITION's counts");
    partition_bases_ = allocate(partition_pieces_ * detail::max_partitions * sizeof(cl_uint), "PARTITION's bases");
    partition_total_ = allocate(partition_pieces_ * sizeof(cl_uint), "PARTITION's totals");
    const std::uint64_t piece_rows = std::uint64_t{partition_piece_rows_} + partition_tiles_;
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      // Where the copy takes buckets, the first key column's copy holds a 32-bit bucket a row,
      // whatever that column's own width, and the other key columns' copies hold nothing: SCATTER
      // writes none of them, AGGREGATE reads none (a buffer of one bucket stands in for each).
      std::uint64_t bytes = piece_rows * columns_[c].element_size;
      if (planner_->partition_copy_buckets() && c < key_policy::columns) {
        bytes = (c == 0 ? piece_rows : 1) * query_planner::bucket_copy_bytes;
      }
      partition_inputs_.push_back(allocate(bytes, "a partitioned piece of a block"));
    }
  }
  partition_layout layout;
  layout.pieces = std::min<std::uint64_t>((rows + partition_piece_rows_ - 1) / partition_piece_rows_, partition_pieces_);
  const std::uint64_t per_piece = (rows + layout.pieces - 1) / layout.pieces;
  std::uint64_t tiles = std::clamp<std::uint64_t>((per_piece + partition_local_ * 16 - 1) / (partition_local_ * 16), 1,
                                                  partition_tiles_);
  tiles = std::clamp<std::uint64_t>(partition_count_words_ / (layout.pieces * parts), 1, tiles);
  // Pieces of whole tiles: a piece is at most per_piece + tiles - 1 rows, which its copy holds.
  const std::uint64_t tile_rows = (rows + layout.pieces * tiles - 1) / (layout.pieces * tiles);
  std::uint64_t region = (table_.capacity + parts - 1) / parts;
  std::uint64_t first_region = 0;
  if constexpr (identity_scheme && key_policy::layout.count > 1) {
    if (table_.bits != 0) {
      // Runs of whole values of the first key column where every key lies in the box.
      std::uint64_t low = 1;
      for (std::uint32_t f = 1; f < key_policy::layout.count; ++f) {
        low *= detail::box_code_span(table_.bits, key_policy::layout.count, f);
      }
      if (low != 0) {
        first_region = planner_->first_column_region(table_.capacity, table_.capacity / low, parts, exact_domain());
      }
      if (first_region != 0) region = first_region * low;
    }
  }
  auto& params = layout.params;
  params.row_begin = row_begin;
  params.row_end = row_end;
  params.tile_rows = tile_rows;
  params.bits = table_.bits;
  params.capacity = static_cast<std::uint32_t>(table_.capacity);
  params.key_min = key_min();
  params.region = static_cast<std::uint32_t>(region);
  params.parts = parts;
  params.piece_tiles = static_cast<std::uint32_t>(tiles);
  params.piece = 0;
  params.bucketed = planner_->partition_copy_buckets() ? 1 : 0;
  params.first_region = static_cast<std::uint32_t>(first_region);
  const std::size_t local = partition_local_;
  const std::size_t e = events.size();
  events.resize(e + 3);
  detail::kernels::partition_count_args<cl::Buffer, bits_type> count_args;
  count_args.key_columns.assign(inputs.begin(), inputs.begin() + key_policy::columns);
  count_args.params = params;
  count_args.counts = partition_counts_;
  auto& count = partition_kernels_[0];
  detail::bind_arguments(count, "PARTITION (count)", count_args);
  launch(count, layout.pieces * tiles * local, local, "PARTITION (count)", &events[e],
         ready.empty() ? nullptr : &ready);
  // SCAN twice: each run's tiles of each piece (a work group per run of a piece), then each
  // piece's runs' totals into their bases (a work group per piece).
  auto& scan = partition_kernels_[1];
  detail::kernels::partition_scan_args<cl::Buffer> tiles_scan{
      partition_counts_, static_cast<std::uint32_t>(tiles), partition_bases_, {local * sizeof(cl_uint)}};
  detail::bind_arguments(scan, "PARTITION (scan)", tiles_scan);
  launch(scan, layout.pieces * parts * local, local, "PARTITION (scan)", &events[e + 1]);
  detail::kernels::partition_scan_args<cl::Buffer> bases_scan{partition_bases_, parts, partition_total_,
                                                              {local * sizeof(cl_uint)}};
  detail::bind_arguments(scan, "PARTITION (bases)", bases_scan);
  launch(scan, layout.pieces * local, local, "PARTITION (bases)", &events[e + 2]);
  return layout;
}

/// Orders piece `piece` of the block `layout` counted (its rows [piece_begin(piece),
/// piece_end(piece))) into its runs, into partition_inputs_, which it returns. Its event is
/// appended to `events`.
template <class Bound>
std::vector<cl::Buffer> aggregation_driver<Bound>::partition_scatter(const std::vector<cl::Buffer>& inputs,
                                                                     const partition_layout& layout,
                                                                     std::uint64_t piece,
                                                                     std::vector<cl::Event>& events) {
  detail::kernels::partition_scatter_args<cl::Buffer, bits_type> scatter_args;
  scatter_args.columns = inputs;
  scatter_args.params = layout.params;
  scatter_args.params.row_begin = layout.piece_begin(piece);
  scatter_args.params.row_end = layout.piece_end(piece);
  scatter_args.params.piece = static_cast<std::uint32_t>(piece);
  scatter_args.counts = partition_counts_;
  scatter_args.bases = partition_bases_;
  scatter_args.copies = partition_inputs_;
  auto& scatter = partition_kernels_[2];
  detail::bind_arguments(scatter, "PARTITION (scatter)", scatter_args);
  events.emplace_back();
  launch(scatter, layout.params.piece_tiles * partition_local_, partition_local_, "PARTITION (scatter)", &events.back());
  return partition_inputs_;
}

}  // namespace gpuagg
