#pragma once
// How big a block: the rows of the blocks the driver runs, and of the slices the tuner measures;
// and how big a spill area, which holds rows of the blocks in flight.

#ifndef GPUAGG_PLAN_HPP
#error "include <gpuagg/plan.hpp>: plan/*.hpp implement its members"
#endif

#include <algorithm>

namespace gpuagg {

inline std::size_t query_planner::host_block_rows(const query_shape& shape, const options& opts) {
  const std::uint64_t widest = std::max<std::uint32_t>(shape.widest_column_bytes, 1);
  const std::uint64_t bytes = opts.block_bytes ? *opts.block_bytes : std::uint64_t{16} << 20;
  return static_cast<std::size_t>(std::max<std::uint64_t>(bytes / widest, 1));
}

inline std::size_t query_planner::early_blocks(const device_info& device, const query_shape& shape,
                                               const options& opts) {
  const std::uint64_t block = std::uint64_t{host_block_rows(shape, opts)} * std::max<std::uint32_t>(shape.row_bytes, 1);
  const std::uint64_t budget = std::min(early_copy_bytes, device.global_mem_bytes / 16);
  return static_cast<std::size_t>(std::max<std::uint64_t>(budget / block, 1));
}

inline std::size_t query_planner::block_rows() const {
  const std::uint64_t widest = std::max<std::uint32_t>(shape_.widest_column_bytes, 1);
  if (opts_.block_bytes || !profile_.on_device) return host_block_rows(shape_, opts_);
  std::uint64_t rows = (std::uint64_t{256} << 20) / widest;
  if (!compact_spill()) {
    const std::uint64_t spill_budget = std::min<std::uint64_t>(std::uint64_t{1} << 30, device_.global_mem_bytes / 32);
    const std::uint64_t by_spill = spill_budget / (std::uint64_t{shape_.bucket_bytes} * window());
    return static_cast<std::size_t>(std::max<std::uint64_t>(std::min(rows, by_spill), std::uint64_t{1} << 20));
  }
  return static_cast<std::size_t>(std::max<std::uint64_t>(rows, 1));
}

inline std::size_t query_planner::partition_piece_rows(std::uint64_t capacity, bool interleaved_layout) const {
  std::uint64_t table = global_table_bytes(capacity, interleaved_layout);
  if (shape_.identity_scheme) table = std::max(table, hashed_table_bytes());
  const std::uint64_t by_copy = table / 8 * 5 / std::max<std::uint32_t>(partition_copy_row_bytes(), 1);
  const std::uint64_t rows = std::max<std::uint64_t>(by_copy, min_partition_piece_rows);
  return static_cast<std::size_t>(std::clamp<std::uint64_t>(rows, 1, block_rows()));
}

inline std::uint64_t query_planner::hashed_table_bytes() const {
  const std::uint64_t buckets = capacity_for(sizing_groups());
  const bool records = shape_.interleavable && buckets > interleave_min_buckets;
  return (buckets + 1) * (records ? shape_.interleaved_bucket_bytes : shape_.bucket_bytes);
}

inline std::uint64_t query_planner::equal_piece_rows(std::uint64_t block, std::uint64_t capacity,
                                                     bool interleaved_layout) const {
  const std::uint64_t most = partition_piece_rows(capacity, interleaved_layout);
  const std::uint64_t pieces = std::max<std::uint64_t>((block + most - 1) / most, 1);
  return (block + pieces - 1) / pieces;
}

inline std::uint64_t query_planner::rows_a_launch() const {
  const std::uint64_t block = std::min<std::uint64_t>(block_rows(), std::max<std::uint64_t>(profile_.rows, 1));
  const std::uint64_t capacity = initial_table_capacity();
  const bool layout = interleaved(capacity);
  if (partitions(block, capacity, layout) <= 1) return block;
  return equal_piece_rows(block, capacity, layout);
}

inline std::uint64_t query_planner::spill_capacity(std::uint64_t table_capacity) const {
  const std::uint64_t every_row = std::uint64_t{block_rows()} * window();
  if (!compact_spill()) return every_row;
  return std::min(every_row, std::max<std::uint64_t>(table_capacity / 4, 1));
}

inline std::size_t query_planner::tuning_block_rows() const {
  const std::uint64_t widest = std::max<std::uint32_t>(shape_.widest_column_bytes, 1);
  std::uint64_t slice = opts_.tuning_block_bytes ? *opts_.tuning_block_bytes / widest
                        : opts_.block_bytes      ? *opts_.block_bytes / widest
                                                 : (std::uint64_t{16} << 20) / widest;
  // On device input the winner runs in blocks of up to 256 MiB; slices much smaller than that
  // favour configurations with fewer work groups (each work group's set-up and merge are paid
  // over fewer rows). Slices grow fourfold while the input still holds 32 of them.
  if (profile_.on_device && !opts_.tuning_block_bytes && !opts_.block_bytes) {
    while (slice * 4 <= block_rows() && profile_.rows / (slice * 4) >= 32) slice *= 4;
  }
  return static_cast<std::size_t>(std::clamp<std::uint64_t>(slice, 1, block_rows()));
}

}  // namespace gpuagg
