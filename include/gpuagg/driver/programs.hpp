#pragma once
// The query's programs: one per AGGREGATE variant (a strategy, built with or without the run
// cache, the hot-key table and the cold-row queue; every build of an interleaved table's query
// with -DGPUAGG_INTERLEAVED), their AGGREGATE kernels and those kernels' work-group limits,
// each made on first use; and the group estimate's own small program.

#ifndef GPUAGG_DRIVER_HPP
#error "include <gpuagg/driver.hpp>: driver/*.hpp implement its members"
#endif

#include <algorithm>
#include <string>

namespace gpuagg {

/// What the context builds for a variant: its strategy's program, with -DGPUAGG_RUN_CACHE,
/// -DGPUAGG_HOT_TABLE, -DGPUAGG_COLD_QUEUE, -DGPUAGG_PRIVATE_GROUPS, -DGPUAGG_PERFECT_LOCAL,
/// -DGPUAGG_RANGE_LOCAL or -DGPUAGG_SERIAL_LOCAL where the variant has them (other programs of
/// the same source, which the context caches separately); -DGPUAGG_INTERLEAVED for every build of an interleaved table's
/// query, and -DGPUAGG_ROWS_IN_FLIGHT for every build of a query whose plan loads other than
/// four rows at a time (query_planner::rows_in_flight).
template <class Bound>
context::program_request aggregation_driver<Bound>::program_request(const kernel_variant& variant) const {
  std::string build_options;
  const auto add = [&](const std::string& define) {
    build_options += build_options.empty() ? define : std::string(" ") + define;
  };
  if (variant.run_cache) add("-DGPUAGG_RUN_CACHE");
  if (variant.hot_table) add("-DGPUAGG_HOT_TABLE");
  if (variant.cold_queue) add("-DGPUAGG_COLD_QUEUE");
  if (variant.private_groups) add("-DGPUAGG_PRIVATE_GROUPS");
  if (variant.perfect_local) add("-DGPUAGG_PERFECT_LOCAL");
  if (variant.range_local) add("-DGPUAGG_RANGE_LOCAL");
  if (variant.serial) add("-DGPUAGG_SERIAL_LOCAL");
  if (interleaved_) add("-DGPUAGG_INTERLEAVED");
  if (const auto rows = planner_->rows_in_flight(); rows != 4) add("-DGPUAGG_ROWS_IN_FLIGHT=" + std::to_string(rows));
  return {program_source_for<Bound>(variant.strategy), build_options, true};
}

template <class Bound>
cl::Program aggregation_driver<Bound>::program(const kernel_variant& variant) const {
  auto& slot = programs_[variant.index()];
  if (!slot()) {
    const auto request = program_request(variant);
    slot = ctx_.program(context::lasting_source{request.source}, request.options);
  }
  return slot;
}

template <class Bound>
cl::Kernel& aggregation_driver<Bound>::aggregate_kernel(const kernel_variant& variant) const {
  auto& slot = aggregate_kernels_[variant.index()];
  if (!slot()) slot = ctx_.kernel(program(variant), "gpuagg_aggregate");
  return slot;
}

/// The work-group limit of a variant's AGGREGATE kernel (its program built on first use).
template <class Bound>
std::uint32_t aggregation_driver<Bound>::kernel_limit(const kernel_variant& variant) const {
  auto& limit = kernel_limits_[variant.index()];
  if (limit == 0) {
    limit = static_cast<std::uint32_t>(
        std::min<std::size_t>(kernel_work_group_limit(aggregate_kernel(variant)), ctx_.info().max_work_group_size));
  }
  return limit;
}

template <class Bound>
std::size_t aggregation_driver<Bound>::kernel_work_group_limit(const cl::Kernel& kernel) const {
  std::size_t limit = 0;
  detail::check(kernel.getWorkGroupInfo(ctx_.device(), CL_KERNEL_WORK_GROUP_SIZE, &limit),
                "querying the kernel's work-group limit");
  return std::max<std::size_t>(limit, 1);
}

}  // namespace gpuagg
