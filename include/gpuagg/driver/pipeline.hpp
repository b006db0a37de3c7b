#pragma once
// The blocks: each is copied to the device (host input), ordered by table region where the
// table outgrows the cache (PARTITION), aggregated with its strategy and thread configuration,
// then completed: its counters read, the table grown if it filled.

#ifndef GPUAGG_DRIVER_HPP
#error "include <gpuagg/driver.hpp>: driver/*.hpp implement its members"
#endif

#include <deque>
#include <sstream>

#include "../kernels/aggregate.hpp"
#include "../runtime/host_copy.hpp"
#include "kernel_binder.hpp"

namespace gpuagg {

template <class Bound>
double aggregation_driver<Bound>::run_block(const execution_params& params) {
  if (announced_ > 0) {
    if (!(params == announced_params_)) {
      std::ostringstream text;
      text << "run_block: " << announced_ << " blocks were announced with " << announced_params_ << ", asked with "
           << params;
      throw invalid_argument_error(text.str());
    }
    // The announced blocks in flight, up to the window: the next one runs while this one is read.
    while (ahead_.size() < std::min(window_, announced_) && next_row_ < rows_) {
      ahead_.push_back(enqueue_block(params, slice_rows_));
    }
    --announced_;
    if (ahead_.empty()) throw invalid_argument_error("run_block: no block left");
    pending_block block = std::move(ahead_.front());
    ahead_.pop_front();
    return complete(block);
  }
  if (blocks_left() == 0) throw invalid_argument_error("run_block: no block left");
  require_runnable(params);
  auto block = enqueue_block(params, slice_rows_);
  return complete(block);
}

template <class Bound>
void aggregation_driver<Bound>::announce_blocks(const execution_params& params, std::size_t blocks) {
  if (!ahead_.empty() || announced_ > 0) {
    throw invalid_argument_error("announce_blocks: the blocks announced before are not all run");
  }
  require_runnable(params);
  announced_params_ = params;
  announced_ = std::min(blocks, blocks_left());
}

template <class Bound>
void aggregation_driver<Bound>::run_remaining(const std::optional<execution_params>& params) {
  // Blocks enqueued ahead for run_block() are the query's rows too; an announcement not taken
  // up lapses.
  announced_ = 0;
  while (!ahead_.empty()) {
    complete(ahead_.front());
    ahead_.pop_front();
  }
  if (next_row_ >= rows_) return;
  if (params) require_runnable(*params);
  std::deque<pending_block> in_flight;
  while (next_row_ < rows_) {
    if (in_flight.size() >= window_) {
      complete(in_flight.front());
      in_flight.pop_front();
    }
    in_flight.push_back(enqueue_block(params ? *params : planner_->default_params(), block_rows_));
  }
  while (!in_flight.empty()) {
    complete(in_flight.front());
    in_flight.pop_front();
  }
}

template <class Bound>
template <class NextRange>
void aggregation_driver<Bound>::run_blocks(NextRange&& next, const std::optional<execution_params>& params) {
  if (rows_ == 0) return;
  if (params) require_runnable(*params);
  shared_rows_ = true;
  next_row_ = rows_;  // the rows are handed out; finalize runs none itself
  std::deque<pending_block> in_flight;
  for (;;) {
    // A slot frees before the next range is asked for: a driver holds no more blocks than it
    // can start, so a slow device does not claim rows a free one could take.
    if (in_flight.size() >= window_) {
      complete(in_flight.front());
      in_flight.pop_front();
    }
    const std::optional<std::pair<std::uint64_t, std::uint64_t>> range = next();
    if (!range) break;
    const auto [first, count] = *range;
    if (count == 0) continue;
    if (first + count > rows_ || count > block_rows_) {
      throw invalid_argument_error("run_blocks: rows [" + std::to_string(first) + ", " +
                                   std::to_string(first + count) + ") are not a block of this input");
    }
    in_flight.push_back(enqueue_rows(params ? *params : planner_->default_params(), first, count));
  }
  while (!in_flight.empty()) {
    complete(in_flight.front());
    in_flight.pop_front();
  }
}

template <class Bound>
void aggregation_driver<Bound>::require_runnable(const execution_params& params) const {
  if (auto why = planner_->infeasibility(params, false); !why.empty()) {
    std::ostringstream text;
    text << "cannot run " << params << " for this query: " << why;
    throw invalid_argument_error(text.str());
  }
}

/// Enqueues the next block of at most `rows` rows with `params`; waits for nothing.
template <class Bound>
auto aggregation_driver<Bound>::enqueue_block(const execution_params& params, std::size_t rows) -> pending_block {
  const std::uint64_t first = next_row_;
  const std::uint64_t count = std::min<std::uint64_t>(rows, rows_ - first);
  next_row_ += count;
  return enqueue_rows(params, first, count);
}

/// Enqueues rows [first, first + count) as one block with `params`; waits for nothing.
template <class Bound>
auto aggregation_driver<Bound>::enqueue_rows(const execution_params& params, std::uint64_t first,
                                             std::uint64_t count) -> pending_block {
  const detail::phase_clock clock(stats_.host.enqueue);
  pending_block pending;
  pending.slot = blocks_enqueued_++ % window_;
  pending.generation = generation_;
  pending.params = params;
  pending.rows = count;

  std::vector<cl::Event> ready;
  std::vector<cl::Buffer> inputs;
  cl_ulong row_begin = 0;
  cl_ulong row_end = count;
  if (on_device_) {
    for (const auto& c : columns_) inputs.push_back(c.device);
    row_begin = columns_.front().offset + first;
    row_end = row_begin + count;
  } else if (in_place_) {
    // The block's rows as they lie in the caller's memory, which the kernel only reads; the
    // buffers are the block's own (never the pool's) and go when it completes.
    for (const auto& column : columns_) {
      void* source = const_cast<char*>(static_cast<const char*>(column.host) + first * column.element_size);
      cl_int status = CL_SUCCESS;
      cl::Buffer buffer(ctx_.cl_context(), CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR,
                        std::max<std::size_t>(count * column.element_size, 1), source, &status);
      detail::check(status, "mapping an input block in place");
      inputs.push_back(buffer);
    }
    pending.in_place = inputs;
  } else {
    // The first blocks' copies started before the plan (start_first_copies): a block of their
    // rows waits for its copy and runs on its buffers, which go back when it completes.
    if (!early_.empty() && early_.front().first == first && early_.front().rows == count) {
      ready = std::move(early_.front().copied);
      inputs = early_.front().device;
      pending.early = std::move(early_.front().device);
      early_.pop_front();
      ++stats_.early_copies;
    } else {
      discard_early_copies();
      auto& slot = staging_[pending.slot];
      for (std::size_t c = 0; c < columns_.size(); ++c) {
        const auto& column = columns_[c];
        const std::size_t bytes = count * column.element_size;
        const char* source = static_cast<const char*>(column.host) + first * column.element_size;
        if (!pinned_input_[c]) {
          detail::parallel_copy(slot.mapped[c], source, bytes, opts_.copy_threads ? opts_.copy_threads : 16);
          source = static_cast<const char*>(slot.mapped[c]);
        }
        ready.push_back(write_block(slot.device[c], source, bytes));
        inputs.push_back(slot.device[c]);
      }
      detail::check(ctx_.transfer_queue().flush(), "starting the input copy");
    }
  }

  const kernel_variant variant = planner_->variant_for(params);
  pending.hot_table = variant.hot_table;
  pending.cold_queue = variant.cold_queue;
  pending.private_groups = variant.private_groups;
  pending.perfect_local = variant.perfect_local;
  pending.range_local = variant.range_local;
  pending.serial = variant.serial;
  cl::Kernel& kernel = aggregate_kernel(variant);
  detail::kernels::aggregate_args<cl::Buffer, bits_type> args;
  args.columns = inputs;
  args.row_begin = row_begin;
  args.row_end = row_end;
  args.table = table_.arg();
  args.bits = table_.bits;
  args.capacity = static_cast<std::uint32_t>(table_.capacity);
  args.key_min = key_min();
  args.max_probes = planner_->max_probes(table_.capacity);
  args.meta = meta_;
  args.spill = spill_.arg();
  args.spill_capacity = static_cast<std::uint32_t>(spill_capacity_);
  args.plain_key_reads = planner_->plain_key_reads(table_.capacity, table_.interleaved) ? 1 : 0;
  if (variant.run_cache) {
    // The hot-key register: the sample's most frequent key, when the sample was taken (without
    // one, the register stays unused).
    args.run_cache = detail::kernels::run_cache_args<bits_type>{hot_key_, planner_->profile().sampled ? 1u : 0u};
  }
  if (variant.private_groups) args.private_keys = detail::kernels::private_keys_args<bits_type>{private_keys_};
  // The work-group size was checked against this kernel's cached limit by require_runnable()
  // (or comes from initial_config(), clamped to it): no per-block driver query.
  const auto& config = params.config;
  const std::size_t local = config.work_group_size;
  strategy_view view{*this};
  const auto aggregate = [&](cl::Event* done, const std::vector<cl::Event>* wait) {
    // The strategy's own parameters follow (its policy, strategy.hpp).
    visit_strategy(params.strategy, [&](auto policy) {
      detail::bind_arguments(kernel, "AGGREGATE", args, decltype(policy)::aggregate_args(view, params, variant));
    });
    const auto global = static_cast<std::size_t>(planner_->launch_threads(config, args.row_end - args.row_begin));
    launch(kernel, global, local, "AGGREGATE", done, wait);
  };
  if (const auto parts = planner_->partitions(count, table_.capacity, table_.interleaved); parts > 1) {
    // PARTITION counts the block once, then orders it a piece at a time into one copy, each
    // piece aggregated before the next is ordered (the queue is in order).
    const auto layout = partition_count(inputs, row_begin, row_end, parts, ready, pending.partition);
    ready.clear();
    for (std::uint64_t piece = 0; piece < layout.pieces; ++piece) {
      const cl_ulong begin = layout.piece_begin(piece);
      const cl_ulong end = layout.piece_end(piece);
      if (begin == end) break;
      args.columns = partition_scatter(inputs, layout, piece, pending.partition);
      args.row_begin = 0;
      args.row_end = end - begin;
      if (layout.params.bucketed != 0) {
        // The copy holds buckets: every table of this launch addressed in bucket space, where a
        // key's home is the key (kernels/partition.hpp).
        args.bucketed = 1;
        args.bits = 0;
        args.key_min = 0;
        view.bucket_space = true;
      }
      if (end < row_end) {
        pending.pieces.emplace_back();
        aggregate(&pending.pieces.back(), nullptr);
      } else {
        aggregate(&pending.kernel, nullptr);
      }
    }
  } else {
    aggregate(&pending.kernel, ready.empty() ? nullptr : &ready);
  }
  detail::check(ctx_.compute_queue().enqueueReadBuffer(meta_, CL_FALSE, 0, detail::meta_words * sizeof(cl_ulong),
                                                       meta_mirror_ + pending.slot * detail::meta_words,
                                                       nullptr, &pending.meta_read),
                "reading the query's counters");
  detail::check(ctx_.compute_queue().flush(), "starting AGGREGATE");
  return pending;
}

/// Waits for a block, records it, and grows the table if it filled.
template <class Bound>
double aggregation_driver<Bound>::complete(pending_block& block) {
  detail::phase_clock waiting(stats_.host.wait);
  // One wait, for the counters' read: it follows AGGREGATE (and INITIALIZE, PARTITION) on the
  // in-order compute queue, so they have finished too. Their statuses are checked in queue
  // order, so a failure is named by the command that failed.
  (void)block.meta_read.wait();
  settle_deferred();
  for (const auto& piece : block.pieces) detail::wait_for(piece, "AGGREGATE");
  detail::wait_for(block.kernel, "AGGREGATE");
  detail::wait_for(block.meta_read, "reading the query's counters");
  waiting.stop();
  for (const auto& buffer : block.early) recycle(buffer);
  block.early.clear();
  block.in_place.clear();
  double aggregate = detail::event_seconds(block.kernel);
  for (const auto& piece : block.pieces) aggregate += detail::event_seconds(piece);
  double partition = 0;
  for (const auto& event : block.partition) partition += detail::event_seconds(event);
  stats_.blocks.push_back({block.params, block.rows, aggregate, partition, block.hot_table, block.cold_queue,
                            block.private_groups, block.perfect_local, block.range_local, block.serial});
  stats_.aggregate_seconds += aggregate;
  stats_.partition_seconds += partition;
  const double seconds = aggregate + partition;
  if (block.generation != generation_) return seconds;  // a growth since has accounted for it
  const cl_ulong* meta = meta_mirror_ + block.slot * detail::meta_words;
  if constexpr (identity_scheme) {
    // Direct addressing spills only keys outside the domain (before any overflow matters).
    if (meta[detail::meta_spilled] > 0) {
      throw key_out_of_domain_error("a key lies outside the domain [min, min + " +
                                    std::to_string(opts_.domain->size - 1) +
                                    "] given for direct_addressing; widen options::domain or use hashing<>");
    }
  }
  if (meta[detail::meta_lost]) spill_overflowed();
  std::copy(meta, meta + detail::meta_words, known_meta_.begin());
  planner_->observe_groups(meta[detail::meta_groups]);
  if (meta[detail::meta_spilled] > 0) {
    grow();
  } else if (!identity_scheme && (next_row_ < rows_ || shared_rows_) &&
             double(meta[detail::meta_groups]) > opts_.max_load_factor * double(table_.capacity)) {
    grow();
  }
  return seconds;
}

template <class Bound>
void aggregation_driver<Bound>::launch(cl::Kernel& kernel, std::size_t global, std::size_t local, const char* what,
                                       cl::Event* done, const std::vector<cl::Event>* wait) {
  detail::check(ctx_.compute_queue().enqueueNDRangeKernel(kernel, cl::NullRange, cl::NDRange(global),
                                                          cl::NDRange(local), wait, done),
                what);
}

}  // namespace gpuagg
