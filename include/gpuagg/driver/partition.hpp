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

/// Orders rows [row_begin, row_end) of `inputs` (at most partition_piece_rows_) into `parts`
/// runs by their home bucket's region of the table, into partition_inputs_, which it returns.
/// The first kernel waits for `ready`; the kernels' events are appended to `events`.
template <class Bound>
std::vector<cl::Buffer> aggregation_driver<Bound>::partition(const std::vector<cl::Buffer>& inputs,
                                                             cl_ulong row_begin, cl_ulong row_end, std::uint32_t parts,
                                                             const std::vector<cl::Event>& ready,
                                                             std::vector<cl::Event>& events) {
  const std::uint64_t rows = row_end - row_begin;
  if (partition_kernels_.empty()) {
    for (const char* name : {"gpuagg_partition_count", "gpuagg_partition_scan", "gpuagg_partition_scatter"}) {
      partition_kernels_.push_back(ctx_.kernel(home_program_, name));
    }
    std::size_t limit = 256;
    for (const auto& kernel : partition_kernels_) limit = std::min(limit, kernel_work_group_limit(kernel));
    partition_local_ = detail::power_of_two_below(limit);
    partition_tiles_ = std::uint64_t{ctx_.info().compute_units} * 8;
    partition_counts_ = allocate(partition_tiles_ * detail::max_partitions * sizeof(cl_uint), "PARTITION's counts");
    partition_bases_ = allocate(detail::max_partitions * sizeof(cl_uint), "PARTITION's bases");
    partition_total_ = allocate(sizeof(cl_uint), "PARTITION's total");
    for (const auto& column : columns_) {
      partition_inputs_.push_back(
          allocate(std::uint64_t(partition_piece_rows_) * column.element_size, "a partitioned piece of a block"));
    }
  }
  const std::uint64_t tiles =
      std::clamp<std::uint64_t>((rows + partition_local_ * 16 - 1) / (partition_local_ * 16), 1, partition_tiles_);
  const std::uint64_t tile_rows = (rows + tiles - 1) / tiles;
  const std::uint64_t region = (table_.capacity + parts - 1) / parts;
  detail::kernels::partition_params<bits_type> params;
  params.row_begin = row_begin;
  params.row_end = row_end;
  params.tile_rows = tile_rows;
  params.bits = table_.bits;
  params.capacity = static_cast<std::uint32_t>(table_.capacity);
  params.key_min = key_min();
  params.region = static_cast<std::uint32_t>(region);
  params.parts = parts;
  const std::size_t local = partition_local_;
  const std::size_t e = events.size();
  events.resize(e + 4);
  detail::kernels::partition_count_args<cl::Buffer, bits_type> count_args;
  count_args.key_columns.assign(inputs.begin(), inputs.begin() + key_policy::columns);
  count_args.params = params;
  count_args.counts = partition_counts_;
  auto& count = partition_kernels_[0];
  detail::bind_arguments(count, "PARTITION (count)", count_args);
  launch(count, tiles * local, local, "PARTITION (count)", &events[e], ready.empty() ? nullptr : &ready);
  // SCAN twice: each run's tiles (a work group per run), then the runs' totals into their bases.
  auto& scan = partition_kernels_[1];
  detail::kernels::partition_scan_args<cl::Buffer> tiles_scan{partition_counts_, static_cast<std::uint32_t>(tiles),
                                                              partition_bases_, {local * sizeof(cl_uint)}};
  detail::bind_arguments(scan, "PARTITION (scan)", tiles_scan);
  launch(scan, parts * local, local, "PARTITION (scan)", &events[e + 1]);
  detail::kernels::partition_scan_args<cl::Buffer> bases_scan{partition_bases_, parts, partition_total_,
                                                              {local * sizeof(cl_uint)}};
  detail::bind_arguments(scan, "PARTITION (bases)", bases_scan);
  launch(scan, local, local, "PARTITION (bases)", &events[e + 2]);
  detail::kernels::partition_scatter_args<cl::Buffer, bits_type> scatter_args;
  scatter_args.columns = inputs;
  scatter_args.params = params;
  scatter_args.counts = partition_counts_;
  scatter_args.bases = partition_bases_;
  scatter_args.copies = partition_inputs_;
  auto& scatter = partition_kernels_[2];
  detail::bind_arguments(scatter, "PARTITION (scatter)", scatter_args);
  launch(scatter, tiles * local, local, "PARTITION (scatter)", &events[e + 3]);
  return partition_inputs_;
}

}  // namespace gpuagg
