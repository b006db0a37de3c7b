#pragma once
// FINALIZE: the used buckets compacted into the result columns, the outputs computed; the
// result left on the device or copied to the host behind one wait.

#ifndef GPUAGG_DRIVER_HPP
#error "include <gpuagg/driver.hpp>: driver/*.hpp implement its members"
#endif

#include <functional>
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
    const detail::phase_clock sizing(stats_.result_sizing_seconds);
    stats_.result_presized = detail::size_result(out, n, early);
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
  copy_result(
      on_device, 0,
      [&] {
        size_columns(n);
        return detail::result_column_data(out);
      },
      [&](const std::vector<cl::Event>& reads) { await_finalize(n, done, reads); });
  clock.stop();
  finish_stats();
  out.stats = stats_;
  return out;
}

template <class Bound>
template <class... Outputs>
void aggregation_driver<Bound>::copy_result(const device_result<typename key_policy::value_type, Outputs...>& from,
                                            std::uint64_t offset,
                                            const std::function<std::vector<void*>()>& destinations,
                                            const std::function<void(const std::vector<cl::Event>&)>& await) {
  const std::size_t n = from.size();
  auto& queue = ctx_.compute_queue();
  constexpr std::size_t key_columns = key_policy::columns;
  // Each column's buffer and bytes per row: the key columns, then the outputs.
  std::vector<const cl::Buffer*> sources;
  std::vector<std::uint64_t> widths;
  for (std::size_t c = 0; c < key_columns; ++c) {
    sources.push_back(&from.key_columns[c]);
    widths.push_back(key_policy::column_bytes[c]);
  }
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((sources.push_back(&std::get<I>(from.columns)), widths.push_back(sizeof(Outputs))), ...);
  }(std::index_sequence_for<Outputs...>{});
  std::uint64_t total = 0;
  for (const auto w : widths) total += n * w;
  std::vector<cl::Event> reads;
  detail::host_staging staging(ctx_, total, sources.size());  // inactive for an empty result
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
    for (std::size_t c = 0; c < sources.size(); ++c) {
      const std::uint64_t bytes = n * widths[c];
      for (std::uint64_t at = 0; at < bytes; at += detail::staged_read_chunk_bytes) {
        const std::uint64_t part = std::min(detail::staged_read_chunk_bytes, bytes - at);
        reads.emplace_back();
        chunks.push_back({c, at, part, staging.read(queue, *sources[c], part, &reads.back(), "reading the result", at)});
      }
    }
    detail::check(queue.flush(), "starting the result's copies");
    const std::vector<void*> destination = destinations();
    await({});
    for (std::size_t k = 0; k < chunks.size(); ++k) {
      detail::wait_for(reads[k], "reading the result");
      detail::host_staging::copy_out(
          static_cast<char*>(destination[chunks[k].column]) + offset * widths[chunks[k].column] + chunks[k].offset,
          chunks[k].staged, chunks[k].bytes);
    }
  } else {
    const std::vector<void*> destination = destinations();
    if (n > 0) {
      for (std::size_t c = 0; c < sources.size(); ++c) {
        reads.emplace_back();
        detail::check(queue.enqueueReadBuffer(*sources[c], CL_FALSE, 0, n * widths[c],
                                              static_cast<char*>(destination[c]) + offset * widths[c], nullptr,
                                              &reads.back()),
                      "reading the result");
      }
    }
    await(reads);
  }
}

template <class Bound>
template <class... Outputs>
auto aggregation_driver<Bound>::finalize_owned(std::uint32_t owners, std::uint32_t owner)
    -> device_result<typename key_policy::value_type, Outputs...> {
  device_result<typename key_policy::value_type, Outputs...> out;
  if (!table_ready_) return out;  // no groups, no buffers to read
  if (rows_pending()) run_remaining();
  detail::phase_clock clock(stats_.host.finalize);
  const auto done = enqueue_finalize(out, false, owners, owner);
  out.size_ = static_cast<std::size_t>(await_finalize(out.size_, done, {}, true));
  return out;
}

template <class Bound>
template <class... Outputs>
void aggregation_driver<Bound>::copy_owned_to_host(
    const device_result<typename key_policy::value_type, Outputs...>& owned,
    result<typename key_policy::value_type, Outputs...>& out, std::uint64_t offset) {
  if (owned.size() + offset > out.size()) {
    throw invalid_argument_error("copy_owned_to_host: the result's columns hold " + std::to_string(out.size()) +
                                 " rows, not rows " + std::to_string(offset) + " to " +
                                 std::to_string(offset + owned.size()));
  }
  detail::phase_clock clock(stats_.host.finalize);
  copy_result(
      owned, offset,
      [&] { return detail::result_column_data(out); },
      [&](const std::vector<cl::Event>& reads) {
        for (const auto& read : reads) detail::wait_for(read, "reading the result");
      });
  clock.stop();
  finish_stats();
}

/// Enqueues FINALIZE (of `owner`'s groups where owners > 1: size() is then the table's groups,
/// an upper bound) into new result buffers (`owned`: the caller's, else pooled ones the query
/// releases) and the read of its count; waits for nothing. The table's size comes from the
/// counters the last completion (or growth) read: no command has changed them since.
template <class Bound>
template <class... Outputs>
auto aggregation_driver<Bound>::enqueue_finalize(device_result<typename key_policy::value_type, Outputs...>& out,
                                                 bool owned, std::uint32_t owners, std::uint32_t owner)
    -> finalize_events {
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
  const cl::Buffer count = cleared_counter("the result counter");
  cl::Kernel finalize = ctx_.kernel(home_program_, "gpuagg_finalize");
  detail::kernels::finalize_args<cl::Buffer, bits_type> args;
  args.table = table_.arg();
  args.capacity = static_cast<std::uint32_t>(table_.capacity);
  args.key_min = key_min();
  args.bits = table_.bits;
  args.meta = meta_;
  args.owners = owners;
  args.owner = owner;
  args.count = count;
  args.key_columns = out.key_columns;
  std::apply([&](const auto&... b) { (args.outputs.push_back(b), ...); }, out.columns);
  detail::bind_arguments(finalize, "FINALIZE", args);
  finalize_events done;
  const std::size_t local = std::min<std::size_t>(256, kernel_work_group_limit(finalize));
  launch(finalize, cover(table_.capacity + 1, local), local, "FINALIZE", &done.kernel);
  detail::check(ctx_.compute_queue().enqueueReadBuffer(count, CL_FALSE, 0, sizeof(cl_ulong), written_count_,
                                                       nullptr, &done.count_read),
                "reading the result count");
  detail::check(ctx_.compute_queue().flush(), "starting FINALIZE");
  return done;
}

/// One wait for FINALIZE, its count and `reads` (the result's copies, queued after them on the
/// in-order compute queue), then each command's status in queue order and FINALIZE's
/// profiled time. Returns the count: `groups` exactly, or with `share` (one owner's groups) at
/// most `groups`.
template <class Bound>
std::uint64_t aggregation_driver<Bound>::await_finalize(std::uint64_t groups, const finalize_events& done,
                                                        const std::vector<cl::Event>& reads, bool share) {
  (void)(reads.empty() ? done.count_read : reads.back()).wait();
  settle_deferred();
  stats_.groups = check_written({"FINALIZE", done.kernel, "reading the result count", done.count_read,
                                 "reading the result", reads},
                                groups, share);
  return stats_.groups;
}

/// After the wait for the last of them: each command's status in queue order (the kernel's
/// profiled time counted with FINALIZE's), and the groups the kernel wrote (written_count_):
/// `groups` exactly, or with `share` (one owner's groups) at most `groups`.
template <class Bound>
std::uint64_t aggregation_driver<Bound>::check_written(const counted_commands& commands, std::uint64_t groups,
                                                       bool share) {
  detail::wait_for(commands.kernel, commands.kernel_name);
  stats_.finalize_seconds += detail::event_seconds(commands.kernel);
  detail::wait_for(commands.count_read, commands.count_what);
  for (const auto& read : commands.reads) detail::wait_for(read, commands.reads_what);
  if (share ? *written_count_ > groups : *written_count_ != groups) {
    throw error(std::string("internal error: ") + commands.kernel_name + " wrote " + std::to_string(*written_count_) +
                " groups, the table holds " + std::to_string(groups));
  }
  return *written_count_;
}

template <class Bound>
void aggregation_driver<Bound>::finish_stats() {
  stats_.programs_built = ctx_.programs_built() - builds_before_;
  stats_.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

}  // namespace gpuagg
