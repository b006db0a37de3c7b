#pragma once
// Partial aggregates: a table's groups exported as they are (EXPORT: keys as table words,
// accumulators not finalized), and another table's export taken in (MERGE, after the table has
// grown to hold both). Drivers on several devices, or in several processes, aggregate disjoint
// rows and meet this way before one FINALIZE.

#ifndef GPUAGG_DRIVER_HPP
#error "include <gpuagg/driver.hpp>: driver/*.hpp implement its members"
#endif

#include <cstring>
#include <tuple>
#include <utility>
#include <vector>

#include "../kernels/table.hpp"
#include "kernel_binder.hpp"
#include "../runtime/readback.hpp"

namespace gpuagg {

template <class Bound>
auto aggregation_driver<Bound>::enqueue_export(std::uint32_t owners, std::uint32_t owner) -> pending_export {
  if (rows_pending()) run_remaining();
  detail::check(ctx_.compute_queue().finish(), "waiting for AGGREGATE");
  settle_deferred();
  pending_export pending;
  pending.groups = known_meta_[detail::meta_groups] + (known_meta_[detail::meta_special] ? 1 : 0);
  pending.owners = owners;
  const std::size_t n = static_cast<std::size_t>(std::max<std::uint64_t>(pending.groups, 1));
  pending.exported = make_buffers(n - 1, "an exported partial aggregate");  // n entries
  pending.count = cleared_counter("the export counter");
  cl::Kernel kernel = ctx_.kernel(home_program_, "gpuagg_export");
  detail::kernels::export_args<cl::Buffer, bits_type> args;
  args.table = table_.arg();
  args.capacity = static_cast<std::uint32_t>(table_.capacity);
  args.key_min = key_min();
  args.bits = table_.bits;
  args.meta = meta_;
  args.owners = owners;
  args.owner = owner;
  args.count = pending.count;
  args.out = pending.exported.arg();
  detail::bind_arguments(kernel, "EXPORT", args);
  const std::size_t local = std::min<std::size_t>(256, kernel_work_group_limit(kernel));
  launch(kernel, cover(table_.capacity + 1, local), local, "EXPORT", &pending.done);
  detail::check(ctx_.compute_queue().enqueueReadBuffer(pending.count, CL_FALSE, 0, sizeof(cl_ulong), written_count_,
                                                       nullptr, &pending.count_read),
                "reading the export counter");
  detail::check(ctx_.compute_queue().flush(), "starting EXPORT");
  return pending;
}

template <class Bound>
std::uint64_t aggregation_driver<Bound>::settle_export(pending_export& pending, const std::vector<cl::Event>& reads) {
  (void)(reads.empty() ? pending.count_read : reads.back()).wait();
  const std::uint64_t written = check_written({"EXPORT", pending.done, "reading the export counter",
                                               pending.count_read, "reading an exported partial aggregate", reads},
                                              pending.groups, pending.owners > 1);
  recycle(pending.count);
  return written;
}

template <class Bound>
std::uint64_t aggregation_driver<Bound>::partial_bytes(std::uint64_t groups) {
  return [&]<std::size_t... J>(std::index_sequence<J...>) {
    return groups * (sizeof(bits_type) + ... + sizeof(acc_t<J>));
  }(std::make_index_sequence<aggregate_count>{});
}

template <class Bound>
auto aggregation_driver<Bound>::stage_export(detail::host_staging& staging, const table_buffers& exported,
                                             std::uint64_t groups, std::vector<cl::Event>& reads)
    -> staged_columns {
  auto& queue = ctx_.compute_queue();
  reads.resize(1 + aggregate_count);
  staged_columns at;
  at.keys = staging.read(queue, exported.keys, groups * sizeof(bits_type), &reads[0], "reading the exported keys");
  [&]<std::size_t... J>(std::index_sequence<J...>) {
    ((at.accs[J] = staging.read(queue, exported.accs[J], groups * sizeof(acc_t<J>), &reads[1 + J],
                                "reading the exported accumulators")),
     ...);
  }(std::make_index_sequence<aggregate_count>{});
  detail::check(queue.flush(), "starting the export's copies");
  return at;
}

template <class Bound>
auto aggregation_driver<Bound>::read_export(const table_buffers& exported, std::uint64_t groups,
                                            std::vector<cl::Event>& reads) -> partial_type {
  auto& queue = ctx_.compute_queue();
  partial_type out;
  out.keys.resize(groups);
  if (groups == 0) return out;
  reads.emplace_back();
  detail::check(queue.enqueueReadBuffer(exported.keys, CL_FALSE, 0, groups * sizeof(bits_type), out.keys.data(),
                                        nullptr, &reads.back()),
                "reading the exported keys");
  [&]<std::size_t... J>(std::index_sequence<J...>) {
    ((std::get<J>(out.accumulators).resize(groups), reads.emplace_back(),
      detail::check(queue.enqueueReadBuffer(exported.accs[J], CL_FALSE, 0, groups * sizeof(acc_t<J>),
                                            std::get<J>(out.accumulators).data(), nullptr, &reads.back()),
                    "reading the exported accumulators")),
     ...);
  }(std::make_index_sequence<aggregate_count>{});
  return out;  // moved: the vectors' storage, which the reads fill, stays where it is
}

template <class Bound>
auto aggregation_driver<Bound>::export_partial() -> partial_type {
  partial_type out;
  if (!table_ready_) return out;
  detail::phase_clock clock(stats_.host.finalize);
  // EXPORT writes every group of the table, so its copies are queued behind it at once and one
  // wait covers the kernel, its count and the copies.
  auto pending = enqueue_export();
  const std::uint64_t groups = pending.groups;
  detail::host_staging staging(ctx_, partial_bytes(groups), 1 + aggregate_count);
  std::vector<cl::Event> reads;
  try {
    if (staging.active()) {
      // Through pinned memory while the host sizes the partial's vectors (runtime/readback.hpp).
      const staged_columns at = stage_export(staging, pending.exported, groups, reads);
      detail::resize_for_copy(out.keys, groups);
      [&]<std::size_t... J>(std::index_sequence<J...>) {
        (detail::resize_for_copy(std::get<J>(out.accumulators), groups), ...);
      }(std::make_index_sequence<aggregate_count>{});
      settle_export(pending, reads);
      detail::host_staging::copy_out(out.keys.data(), at.keys, groups * sizeof(bits_type));
      [&]<std::size_t... J>(std::index_sequence<J...>) {
        (detail::host_staging::copy_out(std::get<J>(out.accumulators).data(), at.accs[J], groups * sizeof(acc_t<J>)),
         ...);
      }(std::make_index_sequence<aggregate_count>{});
    } else {
      out = read_export(pending.exported, groups, reads);
      settle_export(pending, reads);
    }
  } catch (...) {
    (void)ctx_.compute_queue().finish();  // no copy left to land in memory this unwinding frees
    throw;
  }
  recycle(pending.exported);
  return out;
}

template <class Bound>
auto aggregation_driver<Bound>::export_for_merge(std::uint32_t owners, std::uint32_t owner) -> merge_partial {
  merge_partial out;
  if (!table_ready_) return out;
  detail::phase_clock clock(stats_.host.finalize);
  // All of the table's groups: the copies follow EXPORT at once (one wait, as export_partial).
  // One owner's share: its count first, then the copies of that many.
  auto pending = enqueue_export(owners, owner);
  std::uint64_t groups = pending.groups;
  if (owners > 1) groups = settle_export(pending);
  // Counted as its copies down and then up to the absorbing device, which copies from the
  // staging as it lies (absorb): staged, a small partial's four copies run as DMA behind one
  // another instead of each through a driver's bounce buffer.
  auto staging = std::make_shared<detail::host_staging>(ctx_, partial_bytes(groups), 2 * (1 + aggregate_count));
  std::vector<cl::Event> reads;
  try {
    if (staging->active()) {
      out.staged = stage_export(*staging, pending.exported, groups, reads);
      out.groups = groups;
      out.pinned = std::move(staging);
    } else {
      out.vectors = read_export(pending.exported, groups, reads);
    }
    if (owners > 1) {
      for (const auto& read : reads) detail::wait_for(read, "reading an exported partial aggregate");
    } else {
      settle_export(pending, reads);
    }
  } catch (...) {
    (void)ctx_.compute_queue().finish();  // no copy left to land in memory this unwinding frees
    throw;
  }
  recycle(pending.exported);
  return out;
}

template <class Bound>
std::uint64_t aggregation_driver<Bound>::count_new(const table_buffers& incoming, std::uint64_t n) {
  const cl::Buffer count = cleared_counter("the new-group counter");
  cl::Kernel kernel = ctx_.kernel(home_program_, "gpuagg_count_new");
  detail::kernels::count_new_args<cl::Buffer, bits_type> args;
  args.source = incoming.keys;
  args.entries = n;
  args.table_keys = table_.keys;
  args.bits = table_.bits;
  args.capacity = static_cast<std::uint32_t>(table_.capacity);
  args.key_min = key_min();
  args.count = count;
  detail::bind_arguments(kernel, "COUNT_NEW", args);
  const std::size_t local = std::min<std::size_t>(256, kernel_work_group_limit(kernel));
  cl::Event done;
  launch(kernel, cover(n, local), local, "COUNT_NEW", &done);
  const cl_ulong fresh = read_counter(count, "the new-group counter");
  detail::wait_for(done, "COUNT_NEW");
  return std::min<std::uint64_t>(fresh, n);
}

template <class Bound>
void aggregation_driver<Bound>::absorb(const partial_type& partial) {
  const std::uint64_t n = partial.size();
  [&]<std::size_t... J>(std::index_sequence<J...>) {
    if (((std::get<J>(partial.accumulators).size() != n) || ...)) {
      throw invalid_argument_error("absorb: a partial aggregate's accumulator columns differ from its keys in length");
    }
  }(std::make_index_sequence<aggregate_count>{});
  std::array<const void*, aggregate_count> accs{};
  [&]<std::size_t... J>(std::index_sequence<J...>) {
    ((accs[J] = std::get<J>(partial.accumulators).data()), ...);
  }(std::make_index_sequence<aggregate_count>{});
  absorb_columns(n, partial.keys.data(), accs, false);
}

template <class Bound>
void aggregation_driver<Bound>::absorb(const merge_partial& partial) {
  if (partial.pinned == nullptr) return absorb(partial.vectors);
  absorb_columns(partial.groups, partial.staged.keys, partial.staged.accs, true);
}

template <class Bound>
void aggregation_driver<Bound>::absorb_columns(std::uint64_t n, const void* keys,
                                               const std::array<const void*, aggregate_count>& accs,
                                               bool pinned_source) {
  if (n == 0) return;
  if (!table_ready_) setup_for_partials(n);
  if (rows_pending() && !shared_rows_) run_remaining();
  detail::phase_clock clock(stats_.host.growth);
  detail::check(ctx_.compute_queue().finish(), "waiting for AGGREGATE");
  settle_deferred();
  table_buffers incoming = make_buffers(n - 1, "a partial aggregate to absorb");  // n entries
  auto& queue = ctx_.compute_queue();
  // Pageable columns go through pinned staging where that pays (runtime/readback.hpp); pinned
  // ones (another device's export_for_merge) are copied from as they are.
  // Ends after the merge's counters were read.
  detail::host_staging staging(ctx_, pinned_source ? 0 : partial_bytes(n), 1 + aggregate_count);
  const auto write = [&](const cl::Buffer& to, const void* from, std::uint64_t bytes, const char* what) {
    if (staging.active()) {
      staging.write(queue, to, from, bytes, what);
    } else {
      detail::check(queue.enqueueWriteBuffer(to, CL_FALSE, 0, bytes, from), what);
    }
  };
  write(incoming.keys, keys, n * sizeof(bits_type), "copying a partial aggregate's keys");
  [&]<std::size_t... J>(std::index_sequence<J...>) {
    (write(incoming.accs[J], accs[J], n * sizeof(acc_t<J>), "copying a partial aggregate's accumulators"), ...);
  }(std::make_index_sequence<aggregate_count>{});
  // Room at the load factor for the groups the partial adds (direct addressing's table is its
  // whole domain already). Partials of one query over disjoint rows share most of their
  // groups where groups are few against the rows, so counting the new ones keeps the table at
  // the size the merged groups need, where room for every incoming entry would double it.
  if constexpr (!identity_scheme) {
    const std::uint64_t groups = known_meta_[detail::meta_groups];
    const auto fits = [&](std::uint64_t more) {
      return double(groups + more) <= opts_.max_load_factor * double(table_.capacity);
    };
    if (!fits(n)) {
      const std::uint64_t fresh = count_new(incoming, n);
      if (!fits(fresh)) {
        clock.stop();
        grow(fresh);
      }
    }
  }
  merge(incoming, n, 0);  // every entry a real key, EMPTY_KEY's bits included
  const auto meta = read_meta_settled();
  if (meta[detail::meta_lost]) {
    throw key_out_of_domain_error(identity_scheme ? "absorb: a partial aggregate's key lies outside the domain"
                                                  : "internal error: absorbing a partial aggregate found no bucket");
  }
  known_meta_ = meta;
  planner_->observe_groups(meta[detail::meta_groups]);
  recycle(incoming);
}

}  // namespace gpuagg
