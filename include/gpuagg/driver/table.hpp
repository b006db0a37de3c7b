#pragma once
// The global table (INITIALIZE, its bytes) and the query's counters: the groups claimed, the
// EMPTY_KEY bucket's use, the spill area's fill; read back after each block; and the commands
// whose status is collected at the next wait.

#ifndef GPUAGG_DRIVER_HPP
#error "include <gpuagg/driver.hpp>: driver/*.hpp implement its members"
#endif

#include <string>

#include "../kernels/table.hpp"
#include "kernel_binder.hpp"

namespace gpuagg {

/// A global table of `capacity` buckets in the query's layout, its INITIALIZE enqueued (not
/// waited for: its status is collected at the next wait).
template <class Bound>
auto aggregation_driver<Bound>::make_table(std::uint64_t capacity) -> table_buffers {
  const std::string what = "the hash table of " + std::to_string(capacity) + " buckets";
  table_buffers t;
  if (interleaved_) {
    // One buffer of records; every accumulator argument names it too (the kernels rebind).
    t.capacity = capacity;
    t.interleaved = true;
    t.keys = allocate((capacity + 1) * Bound::interleaved_bucket_bytes, what + " (interleaved)");
    for (auto& acc : t.accs) acc = t.keys;
  } else {
    t = make_buffers(capacity, what);
  }
  t.bits = identity_scheme ? box_spans() : detail::log2_exact(capacity);
  cl::Kernel init = ctx_.kernel(home_program_, "gpuagg_initialize");
  detail::kernels::initialize_args<cl::Buffer> args;
  args.table = t.arg();
  args.slots = static_cast<std::uint32_t>(capacity + 1);
  detail::bind_arguments(init, "INITIALIZE", args);
  cl::Event done;
  const std::size_t local = std::min<std::size_t>(256, kernel_work_group_limit(init));
  launch(init, cover(capacity + 1, local), local, "INITIALIZE", &done);
  defer(done, "INITIALIZE", &query_stats::initialize_seconds);
  stats_.table_capacity = capacity;
  return t;
}

/// The counters, read at once (the caller has waited for the commands before it).
template <class Bound>
std::array<cl_ulong, detail::meta_words> aggregation_driver<Bound>::read_meta() {
  std::array<cl_ulong, detail::meta_words> meta{};
  detail::check(ctx_.compute_queue().enqueueReadBuffer(meta_, CL_TRUE, 0, sizeof(meta), meta.data()),
                "reading the query's counters");
  return meta;
}

/// The counters, read after the deferred commands, whose failures are reported as theirs.
template <class Bound>
std::array<cl_ulong, detail::meta_words> aggregation_driver<Bound>::read_meta_settled() {
  std::array<cl_ulong, detail::meta_words> meta{};
  cl::Event read;
  detail::check(ctx_.compute_queue().enqueueReadBuffer(meta_, CL_FALSE, 0, sizeof(meta), meta.data(), nullptr, &read),
                "reading the query's counters");
  (void)read.wait();  // its status is checked below, after the earlier commands'
  settle_deferred();
  detail::wait_for(read, "reading the query's counters");
  return meta;
}

/// Zeroes `words` counters from `first` on the compute queue, without waiting: the kernels
/// after it on the in-order queue see the zeros.
template <class Bound>
void aggregation_driver<Bound>::clear_meta(std::size_t first, std::size_t words, const char* what) {
  const cl_ulong zero = 0;
  detail::check(
      ctx_.compute_queue().enqueueFillBuffer(meta_, zero, first * sizeof(cl_ulong), words * sizeof(cl_ulong)), what);
}

template <class Bound>
void aggregation_driver<Bound>::defer(const cl::Event& event, const char* what, double query_stats::*seconds) {
  deferred_.push_back({event, what, seconds});
}

/// Checks each deferred command's status (a failure throws, named as the command) and adds its
/// profiled time to the stats. Called after a wait for a later command of the in-order compute
/// queue, so the events have completed and nothing waits here.
template <class Bound>
void aggregation_driver<Bound>::settle_deferred() {
  for (const auto& command : deferred_) {
    detail::wait_for(command.event, command.what);
    stats_.*command.seconds += detail::event_seconds(command.event);
  }
  deferred_.clear();
}

}  // namespace gpuagg
