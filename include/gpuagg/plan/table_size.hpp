#pragma once
// How big a table: the global table's capacity for a number of groups (at the load factor),
// its first size and its size after a growth, its layout (arrays or interleaved records) and
// the bytes it touches, PARTITION's runs, and the local and private tables' sizes.

#ifndef GPUAGG_PLAN_HPP
#error "include <gpuagg/plan.hpp>: plan/*.hpp implement its members"
#endif

#include <algorithm>
#include <cmath>
#include <string>

#include "../detail/bits.hpp"
#include "../error.hpp"

namespace gpuagg {

inline std::uint64_t query_planner::table_capacity_for(std::uint64_t groups) const {
  const auto capacity = capacity_for(groups);
  if (capacity > (std::uint64_t{1} << 31)) {
    throw out_of_memory_error(capacity * shape_.bucket_bytes, device_.max_alloc_bytes,
                              "a table of " + std::to_string(capacity) + " buckets (more than 2^31)");
  }
  return capacity;
}

inline std::uint64_t query_planner::initial_table_capacity() const {
  if (shape_.identity_scheme) return shape_.domain_size;
  const std::uint64_t capacity = table_capacity_for(sizing_groups());
  if (!device_.is_gpu || !scattered_keys()) return capacity;
  return global_table_bytes(2 * capacity, false) <= cache_resident_table_bytes ? 2 * capacity : capacity;
}

inline std::uint64_t query_planner::sizing_groups() const {
  const bool estimated = profile_.source == estimate_source::sample || profile_.source == estimate_source::sketch ||
                         profile_.source == estimate_source::runs || profile_.source == estimate_source::full_sketch ||
                         profile_.source == estimate_source::extrapolated;
  if (!estimated || planned_groups_ != profile_.expected_groups) return planned_groups_;
  // An estimate whose own error is known larger (the host's extrapolation) is allowed 2.5 of
  // its standard errors, as the sketch's 2% is 2.5 of its; at most a tenth.
  const double tolerance = std::clamp(2.5 * profile_.estimate_error, detail::estimate_tolerance, 0.1);
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(double(planned_groups_) / (1.0 + tolerance))));
}

inline std::uint64_t query_planner::grown_capacity(std::uint64_t groups, std::uint64_t spilled_groups, std::uint64_t current) const {
  return std::max(table_capacity_for(groups + spilled_groups), current * 2);
}

inline bool query_planner::interleaved(std::uint64_t capacity) const {
  if (shape_.identity_scheme || !shape_.interleavable) {
    if (opts_.interleaved_table.value_or(false)) {
      throw invalid_argument_error(shape_.identity_scheme
                                       ? "interleaved_table: direct addressing keeps no keys to interleave"
                                       : "interleaved_table needs accumulators of one size");
    }
    return false;
  }
  return opts_.interleaved_table.value_or(capacity > interleave_min_buckets);
}

inline std::uint64_t query_planner::table_layout_bytes(std::uint64_t buckets, std::uint64_t copies) const {
  const std::uint64_t entries = (buckets + 1) * copies;
  if (shape_.identity_scheme) return keyless_table_bytes(buckets, copies);
  return entries * shape_.bucket_bytes;
}

inline std::uint64_t query_planner::global_table_bytes(std::uint64_t capacity, bool interleaved_layout) const {
  if (shape_.identity_scheme) return table_layout_bytes(capacity, 1);
  return (capacity + 1) * (interleaved_layout ? shape_.interleaved_bucket_bytes : shape_.bucket_bytes);
}

inline std::uint32_t query_planner::partitions(std::uint64_t rows, std::uint64_t capacity, bool interleaved_layout) const {
  std::uint64_t parts = opts_.partitions;
  if (parts == 0) {
    const std::uint64_t bytes = global_table_bytes(capacity, interleaved_layout);
    if (rows < (std::uint64_t{1} << 16) || bytes <= partition_min_table_bytes() || bytes > partitioned_max_bytes) {
      parts = 1;
    } else {
      // The fewest runs whose regions take at most partition_region_bytes: each doubling of the
      // runs costs PARTITION a pass's worth more, and a region past it costs AGGREGATE more.
      parts = std::clamp<std::uint64_t>(detail::next_pow2((bytes + partition_region_bytes - 1) / partition_region_bytes),
                                        2, max_partition_runs);
    }
  }
  return static_cast<std::uint32_t>(std::min<std::uint64_t>(parts, capacity));
}

inline std::uint64_t query_planner::small_table_buckets() const {
  if (shape_.identity_scheme) return shape_.domain_size;
  const auto wanted = static_cast<std::uint64_t>(std::ceil(double(sizing_groups()) / opts_.max_load_factor));
  return detail::next_pow2(std::max<std::uint64_t>(wanted, 2));
}

inline std::uint64_t query_planner::local_capacity() const {
  return range_ ? range_->buckets() : perfect_ ? perfect_->capacity() : probed_local_capacity();
}

inline std::uint64_t query_planner::probed_local_capacity() const {
  const std::uint64_t needed = small_table_buckets();
  const std::uint64_t fits = max_local_buckets();
  if (needed >= fits || !scattered_keys() || !device_.is_gpu) return std::min(needed, fits);
  const std::uint64_t sparse = detail::next_pow2(std::max<std::uint64_t>(sizing_groups(), 1) * local_sparse_factor);
  return std::max(needed, std::min(sparse, fits));
}

inline std::uint64_t query_planner::local_table_bytes(std::uint64_t copies) const {
  if (range_) return keyless_table_bytes(range_->buckets(), copies);
  if (perfect_) return perfect_table_bytes(perfect_->capacity(), perfect_->displacements.size(), copies);
  return table_layout_bytes(local_capacity(), copies);
}

inline std::uint64_t query_planner::perfect_table_bytes(std::uint64_t buckets, std::uint64_t displacement_groups,
                                                         std::uint64_t copies) const {
  // The keys once, the copies' keyless entries, the displacements.
  return buckets * shape_.key_bytes + keyless_table_bytes(buckets, copies) + displacement_groups * 4;
}

inline std::uint64_t query_planner::max_local_buckets() const {
  const auto bytes = device_.local_mem_bytes;
  if (bytes <= 64) return 0;
  const std::uint64_t room = bytes - 64;  // room for the kernel's own local variables
  if (shape_.identity_scheme) {
    // Accumulators and a bit per bucket (bits, with a word of slack for the bitmap's rounding).
    const std::uint64_t bits = std::uint64_t{shape_.bucket_bytes - shape_.key_bytes} * 8 + 1;
    const std::uint64_t fit = room * 8 > 32 ? (room * 8 - 32) / bits : 0;
    return fit >= 2 ? fit - 1 : 0;
  }
  return buckets_fitting(room);
}

inline std::uint64_t query_planner::max_private_buckets(const launch_config& config) const {
  return buckets_fitting(private_budget() / std::max<std::uint64_t>(total_threads(config), 1));
}

inline std::uint64_t query_planner::private_budget() const {
  return std::min<std::uint64_t>({device_.max_alloc_bytes, device_.global_mem_bytes / 8, std::uint64_t{1} << 30});
}

inline std::uint64_t query_planner::capacity_for(std::uint64_t groups) const {
  const auto wanted = static_cast<std::uint64_t>(std::ceil(double(groups) / opts_.max_load_factor));
  return detail::next_pow2(std::max<std::uint64_t>(wanted, 16));
}

inline std::uint64_t query_planner::buckets_fitting(std::uint64_t bytes) const {
  if (bytes < 2 * std::uint64_t{shape_.bucket_bytes}) return 0;
  const std::uint64_t any = bytes / shape_.bucket_bytes - 1;
  if (shape_.identity_scheme) return any;
  std::uint64_t pow2 = 1;
  while (pow2 * 2 <= any) pow2 *= 2;
  return pow2;
}

}  // namespace gpuagg
