#pragma once
// FINALIZE: the used buckets compacted into the result columns, the outputs computed; the
// result left on the device or copied to the host behind one wait.

#ifndef GPUAGG_DRIVER_HPP
#error "include <gpuagg/driver.hpp>: driver/*.hpp implement its members"
#endif

#include <tuple>
#include <utility>
#include <vector>

#include "../kernels/table.hpp"
#include "../runtime/readback.hpp"
#include "kernel_binder.hpp"

namespace gpuagg {

template <class Bound>
template <class... Outputs>
auto aggregation_driver<Bound>::finalize_on_device() -> device_result<typename key_policy::value_type, Outputs...> {
  device_result<typename key_policy::value_type, Outputs...> out;
  if (!table_ready_) {
    out.keys = ctx_.buffer(1, "an empty result");
    out.key_columns.assign(1, out.keys);
    for (std::size_t c = 1; c < key_policy::columns; ++c) out.key_columns.push_back(ctx_.buffer(1, "an empty result"));
    out.columns = std::apply([&](auto&... b) { return std::tuple{((void)b, ctx_.buffer(1, "an empty result"))...}; },
                             out.columns);
    finish_stats();
    out.stats = stats_;
    return out;
  }
  if (rows_pending()) run_remaining();
  detail::phase_clock clock(stats_.host.finalize);
  const auto done = enqueue_finalize(out, true);
  await_finalize(out.size(), done, {});
  clock.stop();
  finish_stats();
  out.stats = stats_;
  return out;
}

template <class Bound>
template <class... Outputs>
auto aggregation_driver<Bound>::finalize_to_host(
    detail::presized_result<result<typename key_policy::value_type, Outputs...>>* early)
    -> result<typename key_policy::value_type, Outputs...> {
  result<typename key_policy::value_type, Outputs...> out;
  // The columns of the result: sized while the device aggregated where a thread did that
  // (runtime/readback.hpp), else here.
  const auto size_columns = [&](std::size_t n) {
    auto sized = early != nullptr ? early->take(n) : std::nullopt;
    stats_.result_presized = sized.has_value();
    if (sized) {
      out = std::move(*sized);
    } else {
      detail::size_result_for_copy(out, n);
    }
  };
  if (!table_ready_) {
    finish_stats();
    out.stats = stats_;
    return out;
  }
  if (rows_pending()) run_remaining();
  detail::phase_clock clock(stats_.host.finalize);
  // The device result lives in the query's pooled buffers; the copies queue up behind
  // FINALIZE, and one wait covers both.
  device_result<typename key_policy::value_type, Outputs...> on_device;
  const auto done = enqueue_finalize(on_device, false);
  const std::size_t n = on_device.size();
  auto& queue = ctx_.compute_queue();
  constexpr std::size_t key_columns = key_policy::columns;
  std::vector<cl::Event> reads(n > 0 ? key_columns + sizeof...(Outputs) : 0);
  const auto key_bytes = [&](std::size_t c) { return n * key_policy::column_bytes[c]; };
  std::uint64_t total = 0;
  for (std::size_t c = 0; c < key_columns; ++c) total += key_bytes(c);
  total += n * (sizeof(Outputs) + ... + 0);
  detail::host_staging staging(ctx_, total, key_columns + sizeof...(Outputs));  // inactive for an empty result
  if (staging.active()) {
    // The copies land in pinned memory, in chunks, while the host sizes the result's vectors;
    // then several threads move each chunk over as soon as it has arrived, while the later
    // ones still transfer (runtime/readback.hpp).
    struct chunk {
      std::size_t column;
      std::uint64_t offset;
      std::uint64_t bytes;
      const void* staged;
    };
    std::vector<chunk> chunks;
    reads.clear();
    const auto read_column = [&](std::size_t column, const cl::Buffer& from, std::uint64_t bytes, const char* what) {
      for (std::uint64_t offset = 0; offset < bytes; offset += detail::staged_read_chunk_bytes) {
        const std::uint64_t part = std::min(detail::staged_read_chunk_bytes, bytes - offset);
        reads.emplace_back();
        chunks.push_back({column, offset, part, staging.read(queue, from, part, &reads.back(), what, offset)});
      }
    };
    for (std::size_t c = 0; c < key_columns; ++c) {
      read_column(c, on_device.key_columns[c], key_bytes(c), "reading the result keys");
    }
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (read_column(key_columns + I, std::get<I>(on_device.columns), n * sizeof(Outputs), "reading a result column"),
       ...);
    }(std::index_sequence_for<Outputs...>{});
    detail::check(queue.flush(), "starting the result's copies");
    size_columns(n);
    std::vector<void*> destination;
    for (std::size_t c = 0; c < key_columns; ++c) destination.push_back(detail::key_column_data(out.keys, c));
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (destination.push_back(std::get<I>(out.columns).data()), ...);
    }(std::index_sequence_for<Outputs...>{});
    await_finalize(n, done, {});
    for (std::size_t k = 0; k < chunks.size(); ++k) {
      detail::wait_for(reads[k], "reading the result");
      detail::host_staging::copy_out(static_cast<char*>(destination[chunks[k].column]) + chunks[k].offset,
                                     chunks[k].staged, chunks[k].bytes);
    }
  } else {
    size_columns(n);
    if (n > 0) {
      for (std::size_t c = 0; c < key_columns; ++c) {
        detail::check(queue.enqueueReadBuffer(on_device.key_columns[c], CL_FALSE, 0, key_bytes(c),
                                              detail::key_column_data(out.keys, c), nullptr, &reads[c]),
                      "reading the result keys");
      }
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        (detail::check(queue.enqueueReadBuffer(std::get<I>(on_device.columns), CL_FALSE, 0, n * sizeof(Outputs),
                                               std::get<I>(out.columns).data(), nullptr, &reads[key_columns + I]),
                       "reading a result column"),
         ...);
      }(std::index_sequence_for<Outputs...>{});
    }
    await_finalize(n, done, reads);
  }
  clock.stop();
  finish_stats();
  out.stats = stats_;
  return out;
}

/// Enqueues FINALIZE into new result buffers (`owned`: the caller's, else pooled ones the query
/// releases) and the read of its count; waits for nothing. The table's size comes from the
/// counters the last completion (or growth) read: no command has changed them since.
template <class Bound>
template <class... Outputs>
auto aggregation_driver<Bound>::enqueue_finalize(device_result<typename key_policy::value_type, Outputs...>& out,
                                                 bool owned) -> finalize_events {
  const std::uint64_t groups = known_meta_[detail::meta_groups] + (known_meta_[detail::meta_special] ? 1 : 0);
  const std::size_t n = static_cast<std::size_t>(std::max<std::uint64_t>(groups, 1));
  out.size_ = groups;
  release_block_buffers();  // every block has completed (the finalize_* callers ran them all)
  const auto result_buffer = [&](std::uint64_t bytes, const char* what) {
    return owned ? allocate_owned(bytes, what) : allocate(bytes, what);
  };
  out.key_columns.clear();
  for (std::size_t c = 0; c < key_policy::columns; ++c) {
    out.key_columns.push_back(result_buffer(n * key_policy::column_bytes[c], "the result's keys"));
  }
  out.keys = out.key_columns.front();
  std::apply([&](auto&... b) { ((b = result_buffer(n * sizeof(Outputs), "a result column")), ...); }, out.columns);
  auto count = allocate(sizeof(cl_ulong), "the result counter");
  const cl_ulong zero = 0;
  detail::check(ctx_.compute_queue().enqueueFillBuffer(count, zero, 0, sizeof(cl_ulong)), "clearing the counter");
  cl::Kernel finalize = ctx_.kernel(home_program_, "gpuagg_finalize");
  detail::kernels::finalize_args<cl::Buffer, bits_type> args;
  args.table = table_.arg();
  args.capacity = static_cast<std::uint32_t>(table_.capacity);
  args.key_min = key_min();
  args.meta = meta_;
  args.count = count;
  args.key_columns = out.key_columns;
  std::apply([&](const auto&... b) { (args.outputs.push_back(b), ...); }, out.columns);
  detail::bind_arguments(finalize, "FINALIZE", args);
  finalize_events done;
  const std::size_t local = std::min<std::size_t>(256, kernel_work_group_limit(finalize));
  launch(finalize, cover(table_.capacity + 1, local), local, "FINALIZE", &done.kernel);
  detail::check(ctx_.compute_queue().enqueueReadBuffer(count, CL_FALSE, 0, sizeof(cl_ulong), finalize_count_,
                                                       nullptr, &done.count_read),
                "reading the result count");
  detail::check(ctx_.compute_queue().flush(), "starting FINALIZE");
  return done;
}

/// One wait for FINALIZE, its count and `reads` (the result's copies, queued after them on the
/// in-order compute queue), then each command's status in queue order and FINALIZE's
/// profiled time.
template <class Bound>
void aggregation_driver<Bound>::await_finalize(std::uint64_t groups, const finalize_events& done, const std::vector<cl::Event>& reads) {
  (void)(reads.empty() ? done.count_read : reads.back()).wait();
  settle_deferred();
  detail::wait_for(done.kernel, "FINALIZE");
  stats_.finalize_seconds += detail::event_seconds(done.kernel);
  detail::wait_for(done.count_read, "reading the result count");
  for (const auto& read : reads) detail::wait_for(read, "reading the result");
  if (*finalize_count_ != groups) {
    throw error("internal error: FINALIZE wrote " + std::to_string(*finalize_count_) + " groups, the table holds " +
                std::to_string(groups));
  }
  stats_.groups = groups;
}

template <class Bound>
void aggregation_driver<Bound>::finish_stats() {
  stats_.programs_built = ctx_.programs_built() - builds_before_;
  stats_.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

}  // namespace gpuagg
