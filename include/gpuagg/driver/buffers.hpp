#pragma once
// The query's device buffers, taken from the context's pool and given back when the query
// ends (the peak of what it holds is in the stats), and the pinned staging buffers host input
// goes through.

#ifndef GPUAGG_DRIVER_HPP
#error "include <gpuagg/driver.hpp>: driver/*.hpp implement its members"
#endif

#include <cstring>
#include <string>
#include <tuple>

namespace gpuagg {

template <class Bound>
aggregation_driver<Bound>::~aggregation_driver() {
  // Never hand buffers back while commands may still use them.
  if (table_ready_ || copies_started_) {
    ctx_.compute_queue().finish();
    ctx_.transfer_queue().finish();
  }
  for (auto& [handle, held] : held_) ctx_.recycle(held.size_class, held.buffer);
  if (readback_.buffer()) ctx_.recycle_pinned(readback_class_, readback_);
  for (auto& slot : staging_) {
    for (std::size_t c = 0; c < slot.pinned.size(); ++c) {
      if (slot.pinned[c].buffer()) ctx_.recycle_pinned(slot.pinned_class[c], slot.pinned[c]);
    }
  }
}

/// A working buffer from the context's pool; it goes back there when the query ends (or, for a
/// table that grew, when it is replaced).
template <class Bound>
cl::Buffer aggregation_driver<Bound>::allocate(std::uint64_t bytes, const std::string& what) {
  auto [buffer, size_class] = ctx_.pooled_buffer(bytes, what);
  held_.emplace(buffer(), held_buffer{size_class, bytes, buffer});
  live_bytes_ += bytes;
  stats_.peak_device_bytes = std::max(stats_.peak_device_bytes, live_bytes_);
  return buffer;
}

/// A buffer the caller keeps (the result), not pooled.
template <class Bound>
cl::Buffer aggregation_driver<Bound>::allocate_owned(std::uint64_t bytes, const std::string& what) {
  auto buffer = ctx_.buffer(bytes, what);
  live_bytes_ += bytes;
  stats_.peak_device_bytes = std::max(stats_.peak_device_bytes, live_bytes_);
  return buffer;
}

/// Gives a pooled buffer back: its bytes leave the query's count as they were allocated.
template <class Bound>
void aggregation_driver<Bound>::recycle(const cl::Buffer& buffer) {
  if (auto found = held_.find(buffer()); found != held_.end()) {
    live_bytes_ -= std::min(live_bytes_, found->second.bytes);
    ctx_.recycle(found->second.size_class, found->second.buffer);
    held_.erase(found);
  }
}

template <class Bound>
void aggregation_driver<Bound>::recycle(const table_buffers& t) {
  recycle(t.keys);
  for (const auto& acc : t.accs) recycle(acc);
}

/// A one-word counter a kernel adds to (EXPORT, COUNT_NEW, FINALIZE), its clearing queued
/// before that kernel.
template <class Bound>
cl::Buffer aggregation_driver<Bound>::cleared_counter(const std::string& what) {
  cl::Buffer counter = allocate(sizeof(cl_ulong), what);
  const cl_ulong zero = 0;
  detail::check(ctx_.compute_queue().enqueueFillBuffer(counter, zero, 0, sizeof(cl_ulong)), ("clearing " + what).c_str());
  return counter;
}

/// The counter's word once the queue has reached it (a blocking read behind the kernel that
/// counts); the counter goes back to the pool.
template <class Bound>
cl_ulong aggregation_driver<Bound>::read_counter(const cl::Buffer& counter, const std::string& what) {
  cl_ulong value = 0;
  detail::check(ctx_.compute_queue().enqueueReadBuffer(counter, CL_TRUE, 0, sizeof(cl_ulong), &value),
                ("reading " + what).c_str());
  recycle(counter);
  return value;
}

/// A table of `buckets` buckets and the EMPTY_KEY bucket in plain arrays (the spill area,
/// INDEPENDENT's private tables; the global table is make_table's).
template <class Bound>
auto aggregation_driver<Bound>::make_buffers(std::uint64_t buckets, const std::string& what) -> table_buffers {
  table_buffers t;
  t.capacity = buckets;
  t.keys = allocate((buckets + 1) * sizeof(bits_type), what + " (keys)");
  for (std::size_t j = 0; j < aggregate_count; ++j) {
    t.accs[j] = allocate((buckets + 1) * acc_size(j), what + " (accumulators)");
  }
  return t;
}

/// Per block in flight: a device buffer per column, and a pinned staging buffer per column
/// unless the column itself lies in pinned memory of this context (pinned_array), which the
/// copy then reads directly.
template <class Bound>
void aggregation_driver<Bound>::make_staging() {
  for (const auto& column : columns_) {
    pinned_input_.push_back(ctx_.is_pinned(column.host, std::uint64_t(rows_) * column.element_size));
  }
  staging_.resize(window_);
  for (auto& slot : staging_) {
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      const std::uint64_t bytes = std::uint64_t(block_rows_) * columns_[c].element_size;
      detail::buffer_pool::pinned_buffer pinned;
      std::uint64_t size_class = 0;
      if (!pinned_input_[c]) std::tie(pinned, size_class) = ctx_.pooled_pinned(bytes, "a pinned staging buffer");
      slot.pinned.push_back(pinned);
      slot.pinned_class.push_back(size_class);
      slot.mapped.push_back(pinned.mapped);
      slot.device.push_back(allocate(bytes, "an input block buffer"));
    }
  }
}

/// Host input whose every column is pinned: the first blocks start their copies to the device
/// before the set-up samples the keys and estimates the groups, each into buffers of its own
/// (query_planner::early_blocks of them), so that the copy engine works while the host sketches
/// (up to 2^19 strided rows, several milliseconds at high cardinality). Host input's blocks do
/// not depend on the plan (query_planner::host_block_rows). A pageable column's copy is host
/// work, which would compete with the estimate's threads, so it waits for the plan as before.
template <class Bound>
void aggregation_driver<Bound>::start_first_copies() {
  for (const auto& column : columns_) {
    if (!ctx_.is_pinned(column.host, std::uint64_t(rows_) * column.element_size)) return;
  }
  const std::uint64_t block = query_planner::host_block_rows(shape_, opts_);
  const std::size_t blocks = query_planner::early_blocks(ctx_.info(), shape_, opts_);
  copies_started_ = true;
  for (std::uint64_t first = 0; first < rows_ && early_.size() < blocks; first += block) {
    early_block e;
    e.first = first;
    e.rows = std::min<std::uint64_t>(block, rows_ - first);
    // Early copies are a head start, not a need: where the device's memory refuses another
    // block's buffers, the blocks copied so far start early and the rest copy as planned.
    try {
      for (const auto& column : columns_) {
        e.device.push_back(allocate(e.rows * column.element_size, "an input block buffer"));
      }
    } catch (const out_of_memory_error&) {
      for (const auto& buffer : e.device) recycle(buffer);
      break;
    }
    for (std::size_t c = 0; c < columns_.size(); ++c) {
      const auto& column = columns_[c];
      e.copied.push_back(write_block(e.device[c], static_cast<const char*>(column.host) + first * column.element_size,
                                     e.rows * column.element_size));
    }
    early_.push_back(std::move(e));
    detail::check(ctx_.transfer_queue().flush(), "starting the input copy");
  }
}

/// Enqueues the copy of `bytes` of host memory at `from` into `to` on the transfer queue, not
/// yet flushed; returns its event.
template <class Bound>
cl::Event aggregation_driver<Bound>::write_block(const cl::Buffer& to, const void* from, std::uint64_t bytes) {
  cl::Event copied;
  detail::check(ctx_.transfer_queue().enqueueWriteBuffer(to, CL_FALSE, 0, bytes, from, nullptr, &copied),
                "copying an input block to the device");
  return copied;
}

/// The first blocks' copies, when the blocks run do not take them (the tuner's smaller
/// slices): their buffers go back once the copies are done.
template <class Bound>
void aggregation_driver<Bound>::discard_early_copies() {
  if (early_.empty()) return;
  (void)ctx_.transfer_queue().finish();
  for (const auto& e : early_) {
    for (const auto& buffer : e.device) recycle(buffer);
  }
  early_.clear();
}

/// FINALIZE's result buffers come from the same pool: given back first, the block buffers make
/// the query's peak the larger of its blocks' working set and its table with the result, not
/// their sum.
template <class Bound>
void aggregation_driver<Bound>::release_block_buffers() {
  discard_early_copies();
  for (table_buffers* t : {&spill_, &private_}) {
    if (!t->keys()) continue;
    recycle(*t);
    *t = table_buffers{};
  }
  if (!partition_kernels_.empty()) {
    for (const auto& input : partition_inputs_) recycle(input);
    for (const cl::Buffer* b : {&partition_counts_, &partition_bases_, &partition_total_}) recycle(*b);
    partition_inputs_.clear();
    partition_kernels_.clear();  // PARTITION's first use makes them again (a finished query has none)
  }
  for (auto& slot : staging_) {
    for (const auto& device : slot.device) recycle(device);
    slot.device.clear();
  }
}

/// INDEPENDENT's private tables, of at least `buckets` buckets in all (kept for the next block).
template <class Bound>
detail::kernels::table_arg<cl::Buffer> aggregation_driver<Bound>::private_tables(std::uint64_t buckets) {
  if (private_.capacity < buckets) {
    if (private_.keys()) recycle(private_);
    private_ = make_buffers(buckets, "INDEPENDENT's private tables");
  }
  return private_.arg();
}

/// The hot-key table's keys on the device, copied on first use.
template <class Bound>
cl::Buffer aggregation_driver<Bound>::hot_keys_on_device() {
  if (!hot_keys_buffer_()) {
    hot_keys_buffer_ = allocate(hot_keys_.size() * sizeof(bits_type), "the hot-key table's keys");
    detail::check(ctx_.compute_queue().enqueueWriteBuffer(hot_keys_buffer_, CL_FALSE, 0,
                                                          hot_keys_.size() * sizeof(bits_type), hot_keys_.data()),
                  "copying the hot keys");
  }
  return hot_keys_buffer_;
}

/// The perfect local table's keys, then its displacements, on the device: copied on first use,
/// in one copy.
template <class Bound>
cl::Buffer aggregation_driver<Bound>::perfect_local_on_device() {
  if (!perfect_buffer_()) {
    const auto& hash = *planner_->perfect_local();
    const std::size_t displacement_words =
        (hash.displacements.size() * sizeof(cl_uint) + sizeof(bits_type) - 1) / sizeof(bits_type);
    perfect_words_.assign(hash.keys.begin(), hash.keys.end());
    perfect_words_.resize(hash.keys.size() + displacement_words, 0);
    std::memcpy(perfect_words_.data() + hash.keys.size(), hash.displacements.data(),
                hash.displacements.size() * sizeof(cl_uint));
    const std::size_t bytes = perfect_words_.size() * sizeof(bits_type);
    perfect_buffer_ = allocate(bytes, "the perfect local table");
    detail::check(ctx_.compute_queue().enqueueWriteBuffer(perfect_buffer_, CL_FALSE, 0, bytes, perfect_words_.data()),
                  "copying the perfect local table");
  }
  return perfect_buffer_;
}

}  // namespace gpuagg
