#pragma once
// The key column's exact range, or the exact box of packed key columns, read on the device where
// the plan asks for it (query_planner::direct_range_wanted): one pass over the keys, a few words
// a work group back.

#ifndef GPUAGG_DRIVER_HPP
#error "include <gpuagg/driver.hpp>: driver/*.hpp implement its members"
#endif

#include <algorithm>
#include <array>
#include <span>
#include <tuple>
#include <type_traits>

#include "../kernels/key_range.hpp"
#include "kernel_binder.hpp"

namespace gpuagg {

template <class Bound>
void aggregation_driver<Bound>::start_key_extremes(pending_extremes& pass) {
  constexpr std::uint32_t fields = key_policy::layout.count;
  const auto& key = columns_.front();
  cl::Kernel kernel = ctx_.kernel(estimate_program(), "gpuagg_key_range");
  const std::size_t local = std::min<std::size_t>(256, detail::power_of_two_below(kernel_work_group_limit(kernel)));
  pass.groups = std::clamp<std::uint64_t>((rows_ + local - 1) / local, 1, std::uint64_t{ctx_.info().compute_units} * 16);
  const std::uint64_t bytes = pass.groups * fields * 4 * sizeof(cl_ulong);
  pass.out = allocate(bytes, "the key range's extremes");
  detail::kernels::key_range_args<cl::Buffer> args;
  args.key_columns = device_key_columns();
  args.first = key.offset;
  args.n = rows_;
  args.out = pass.out;
  args.scratch = {fields * 4 * local * sizeof(cl_ulong)};
  detail::bind_arguments(kernel, "the key range", args);
  launch(kernel, static_cast<std::size_t>(pass.groups * local), local, "the key range", nullptr);
  std::tie(pass.pinned, pass.size_class) = ctx_.pooled_pinned(bytes, "the key range's host copy");
  pass.ctx = &ctx_;
  pass.status = ctx_.compute_queue().enqueueReadBuffer(pass.out, CL_FALSE, 0, bytes, pass.pinned.mapped, nullptr,
                                                       &pass.read);
}

template <class Bound>
auto aggregation_driver<Bound>::finish_key_extremes(pending_extremes& pass) -> key_extremes {
  constexpr std::uint32_t fields = key_policy::layout.count;
  cl_int read = pass.status;
  if (read == CL_SUCCESS) read = pass.read.wait();
  key_extremes found;
  found.low.fill(~std::uint64_t{0});
  found.signed_low.fill(~std::uint64_t{0});
  if (read == CL_SUCCESS) {
    const auto* words = static_cast<const cl_ulong*>(pass.pinned.mapped);
    for (std::uint64_t g = 0; g < pass.groups; ++g) {
      for (std::uint32_t f = 0; f < fields; ++f) {
        const cl_ulong* w = words + 4 * (g * fields + f);
        found.low[f] = std::min<std::uint64_t>(found.low[f], w[0]);
        found.high[f] = std::max<std::uint64_t>(found.high[f], w[1]);
        found.signed_low[f] = std::min<std::uint64_t>(found.signed_low[f], w[2]);
        found.signed_high[f] = std::max<std::uint64_t>(found.signed_high[f], w[3]);
      }
    }
  }
  pass.release();
  detail::check(read, "reading the key range");
  return found;
}

template <class Bound>
void aggregation_driver<Bound>::start_early_range(std::span<const bits_type> sampled) {
  if constexpr (reads_key_range) {
    // Where the program is not made yet (a process's first query of this key type), its build
    // or its read from the cache on disk would cost more than the pass: the pass waits for the
    // plan, as without the early start.
    if (handover_ == nullptr || sampled.empty() || !estimate_program_made()) return;
    const std::size_t step = std::max<std::size_t>(1, sampled.size() / query_planner::early_range_subset);
    const detail::key_box box = detail::subset_box(sampled, key_policy::layout, step);
    if (!query_planner::early_range_pass(ctx_.info(), shape_, opts_, on_device_, box)) return;
    early_extremes_.emplace();
    start_key_extremes(*early_extremes_);
    stats_.range_pass_early = true;
  }
}

template <class Bound>
auto aggregation_driver<Bound>::read_key_extremes() -> key_extremes {
  if (early_extremes_) {
    const key_extremes found = finish_key_extremes(*early_extremes_);
    early_extremes_.reset();
    return found;
  }
  pending_extremes pass;
  start_key_extremes(pass);
  return finish_key_extremes(pass);
}

template <class Bound>
exact_key_range aggregation_driver<Bound>::read_key_range() {
  static_assert(key_policy::columns == 1, "the exact range is one key column's");
  const key_extremes found = read_key_extremes();
  // A signed key's values in order are its words with the top bit flipped (the kernel's).
  constexpr std::uint64_t top = key_order_bit(std::is_signed_v<typename key_policy::value_type>, sizeof(bits_type));
  if constexpr (top != 0) {
    return {found.signed_low[0] ^ top, found.signed_high[0] - found.signed_low[0]};
  } else {
    return {found.low[0], found.high[0] - found.low[0]};
  }
}

template <class Bound>
detail::key_box aggregation_driver<Bound>::read_key_box() {
  static_assert(key_policy::layout.count > 1, "the exact box is packed key columns'");
  const key_extremes found = read_key_extremes();
  return detail::key_box_builder::box_of_extremes(key_policy::layout, found.low, found.high, found.signed_low,
                                                  found.signed_high);
}

}  // namespace gpuagg
