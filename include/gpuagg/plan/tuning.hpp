#pragma once
// Whether to tune: when the tuner refines the plan online, on which blocks, from which starts.

#ifndef GPUAGG_PLAN_HPP
#error "include <gpuagg/plan.hpp>: plan/*.hpp implement its members"
#endif

#include <algorithm>

namespace gpuagg {

inline tuning_plan query_planner::tuning(bool forced) const {
  tuning_plan t;
  t.block_rows = tuning_block_rows();
  const std::uint64_t blocks = profile_.rows == 0 ? 0 : (profile_.rows + t.block_rows - 1) / t.block_rows;
  // The entry knows the recorded shape (4-byte keys, one 8-byte accumulator). Its scattered-keys
  // configurations were also measured with 8-byte key words and that accumulator (two key
  // columns: docs/decisions.md), so such queries run them without a search on slices, which
  // for this shape settles on worse configurations than its start.
  const bool recorded_shape = shape_.bucket_bytes == recorded_bucket_bytes && shape_.key_bytes == recorded_key_bytes;
  const bool wide_scattered = scattered_keys() && shape_.key_bytes == 8 &&
                              shape_.bucket_bytes == recorded_bucket_bytes + 4 &&
                              regime().shared_scattered.work_group_size != 0;
  // One key holding (nearly) every row: each work item folds its rows into the run cache's
  // register and flushes it once, so the key word and the bucket hardly enter the loop, and the
  // entry's configuration for one key stands for any shape. A search there would time slices of
  // a few tens of microseconds, whose noise reopens it query after query, and its SHARED start
  // sends every row's atomic to one bucket of global memory.
  const bool one_key = profile_.sampled && profile_.hottest_key_share >= single_key_share;
  // Direct addressing runs the entry's configurations: its own where the entry has them, else
  // the hash table's (its kernel reads no key word and probes nothing, so it is the hash table's
  // loop with less in it). A search on slices, query after query, settled on slower
  // configurations than that start (docs/decisions.md).
  const bool measured = (entry_.level == plan_level::device || entry_.level == plan_level::architecture) &&
                        (recorded_shape || wide_scattered || one_key || shape_.identity_scheme);
  if (forced) {
    t.enabled = blocks > 0;
  } else {
    t.enabled = opts_.autotune && !opts_.strategy && !opts_.config && blocks >= opts_.min_blocks_to_tune &&
                blocks > 0 && !measured;
  }
  // On device input a search may take three quarters of the slices; the rest run its best in
  // large blocks (an unfinished search is resumed by the next query of the shape).
  t.block_budget = static_cast<std::size_t>(profile_.on_device && !forced ? blocks - blocks / 4 : blocks);
  // The starts read each strategy's kernel limit, which builds its program: a query that does
  // not tune must not pay for programs it never runs.
  if (!t.enabled) return t;
  // The plan's choice first, then the other strategies whose tables fit (INDEPENDENT on CPUs
  // only: on GPUs its private tables never won, section 3.7's insight 1).
  const execution_params first = default_params();
  t.starts.push_back(first);
  for (const auto strategy : {strategy_kind::shared, strategy_kind::workgroup_local, strategy_kind::independent}) {
    if (strategy == first.strategy || (strategy == strategy_kind::independent && device_.is_gpu)) continue;
    const execution_params candidate{strategy, initial_config(strategy)};
    if (feasible(candidate)) t.starts.push_back(candidate);
  }
  t.scan = entry_.level == plan_level::generic;
  return t;
}

}  // namespace gpuagg
