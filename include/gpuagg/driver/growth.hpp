#pragma once
// Growth: a table past its load factor, or one whose rows spilled, is rehashed into a larger
// one and the spill area merged into it. A wrong estimate costs time, never groups.

#ifndef GPUAGG_DRIVER_HPP
#error "include <gpuagg/driver.hpp>: driver/*.hpp implement its members"
#endif

#include <algorithm>
#include <cmath>

#include "../kernels/table.hpp"
#include "kernel_binder.hpp"

namespace gpuagg {

/// Rehashes into a larger table and merges the spill area (every in-flight block first); the
/// new table has room for `incoming_groups` more groups too (a partial aggregate to absorb).
template <class Bound>
void aggregation_driver<Bound>::grow(std::uint64_t incoming_groups) {
  const detail::phase_clock clock(stats_.host.growth);
  detail::check(ctx_.compute_queue().finish(), "waiting for AGGREGATE");
  auto meta = read_meta();
  if (meta[detail::meta_lost]) spill_overflowed();
  const std::uint64_t groups = meta[detail::meta_groups];
  const std::uint64_t spilled = meta[detail::meta_spilled];
  const std::uint64_t capacity =
      planner_->grown_capacity(groups, spilled_groups(spilled) + incoming_groups, table_.capacity);
  table_buffers old = std::move(table_);
  // INITIALIZE, the counter resets and the merges queue up without host waits; the counters'
  // read after them is the one wait, and only then does the old table go back to the pool.
  table_ = make_table(capacity);
  clear_meta(detail::meta_groups, 1, "resetting the group counter");
  merge(old, old.capacity + (meta[detail::meta_special] ? 1 : 0), old.capacity);
  merge(spill_, spilled, 0);
  clear_meta(detail::meta_spilled, 1, "resetting the spill counter");
  meta = read_meta_settled();
  if (meta[detail::meta_lost]) throw error("internal error: a merge found no bucket");
  recycle(old);
  known_meta_ = meta;
  planner_->observe_groups(meta[detail::meta_groups]);
  stats_.spilled_entries += spilled;
  ++stats_.table_growths;
  ++generation_;
}

template <class Bound>
void aggregation_driver<Bound>::spill_overflowed() const {
  if (restartable_) {
    throw detail::spill_overflow{std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count()};
  }
  throw error("internal error: the spill area overflowed");
}

/// The distinct keys among the spill area's first `spilled` entries: their count where few,
/// else their sketch's estimate with room for its error.
template <class Bound>
std::uint64_t aggregation_driver<Bound>::spilled_groups(std::uint64_t spilled) {
  if (spilled <= 4096) return spilled;
  const auto sketch = sketch_on_device({spill_.keys}, true, 0, 1, spilled, spilled, false);
  const double distinct = detail::sketch_estimate(sketch.registers);
  return std::min<std::uint64_t>(spilled, static_cast<std::uint64_t>(std::ceil(distinct * 1.05)) + 16);
}

/// MERGE of `entries` entries of `source` into the table (entries below `table_entries` whose key
/// is EMPTY_KEY are empty buckets); not waited for.
template <class Bound>
void aggregation_driver<Bound>::merge(const table_buffers& source, std::uint64_t entries,
                                      std::uint64_t table_entries) {
  if (entries == 0) return;
  cl::Kernel kernel = ctx_.kernel(home_program_, "gpuagg_merge");
  detail::kernels::merge_args<cl::Buffer, bits_type> args;
  args.source = source.arg();
  args.entries = entries;
  args.table_entries = table_entries;
  args.table = table_.arg();
  args.bits = table_.bits;
  args.capacity = static_cast<std::uint32_t>(table_.capacity);
  args.key_min = key_min();
  args.meta = meta_;
  args.source_interleaved = source.interleaved ? 1 : 0;
  detail::bind_arguments(kernel, "MERGE", args);
  cl::Event done;
  const std::size_t local = std::min<std::size_t>(256, kernel_work_group_limit(kernel));
  launch(kernel, cover(entries, local), local, "MERGE", &done);
  defer(done, "MERGE", &query_stats::merge_seconds);
}

}  // namespace gpuagg
