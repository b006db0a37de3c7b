#pragma once
// How big a block: the rows of the blocks the driver runs, and of the slices the tuner measures.

#ifndef GPUAGG_PLAN_HPP
#error "include <gpuagg/plan.hpp>: plan/*.hpp implement its members"
#endif

#include <algorithm>

namespace gpuagg {

inline std::size_t query_planner::block_rows() const {
  const std::uint64_t widest = std::max<std::uint32_t>(shape_.widest_column_bytes, 1);
  if (opts_.block_bytes) return static_cast<std::size_t>(std::max<std::uint64_t>(*opts_.block_bytes / widest, 1));
  if (!profile_.on_device) return static_cast<std::size_t>((std::uint64_t{16} << 20) / widest);
  const std::uint64_t spill_budget = std::min<std::uint64_t>(std::uint64_t{1} << 30, device_.global_mem_bytes / 32);
  const std::uint64_t by_spill = spill_budget / (std::uint64_t{shape_.bucket_bytes} * window());
  return static_cast<std::size_t>(std::max<std::uint64_t>(
      std::min<std::uint64_t>((std::uint64_t{256} << 20) / widest, by_spill), std::uint64_t{1} << 20));
}

inline std::size_t query_planner::tuning_block_rows() const {
  const std::uint64_t widest = std::max<std::uint32_t>(shape_.widest_column_bytes, 1);
  const std::uint64_t slice =
      opts_.tuning_block_bytes ? *opts_.tuning_block_bytes / widest
      : opts_.block_bytes      ? *opts_.block_bytes / widest
                               : (std::uint64_t{16} << 20) / widest;
  return static_cast<std::size_t>(std::clamp<std::uint64_t>(slice, 1, block_rows()));
}

}  // namespace gpuagg
