#pragma once
// Several OpenCL devices in one query (GPUs, and the CPU through PoCL, in any mix):
//
//   auto devices = gpuagg::device_set::from_selectors({"nvidia", "pthread"});  // GPUAGG_DEVICE-style
//   auto r = gpuagg::group_by(devices, g, gpuagg::values(a, b), query);
//   // r.result as group_by's result; r.stats: rows and blocks per device, merge time
//
// The blocks of the host input go to whichever device has a free block slot (a shared queue:
// a slow device takes fewer blocks); each device runs its own driver with its own key sample,
// plan and programs; the partial aggregates merge on one device, which finalizes once
// (docs/multi_device.md). A header of its own, not part of groupby.hpp: it brings threads and a
// device set that single-device users do not need, and it builds on groupby.hpp (make_driver),
// which therefore cannot include it.
//
//   multi_device/device_set.hpp   the members: selectors, sub-devices, the caller's contexts
//   multi_device/block_queue.hpp  the shared queue of blocks
//   multi_device/block_size.hpp   DECISION: a block's rows per device (the tail)
//   multi_device/merge_site.hpp   DECISION: where the partials merge
//   multi_device/run.hpp          a member's thread; the merge; the statistics

#include "groupby.hpp"
#include "multi_device/block_queue.hpp"
#include "multi_device/block_size.hpp"
#include "multi_device/device_set.hpp"
#include "multi_device/merge_site.hpp"
#include "multi_device/run.hpp"

namespace gpuagg {

/// SELECT keys, outputs... GROUP BY keys over every device of `devices`: the result on the
/// host, exactly as group_by(keys, values, query, opts) gives it on one device, with the
/// statistics of each device's part. Host input only (std::vector, std::span, pinned_array).
/// `opts` applies to every device (options::ctx must be unset: the set names the devices); a
/// strategy or configuration the caller fixes applies to every device, else each device runs
/// its own plan's choice per block (online tuning needs blocks of its own: with a shared queue,
/// the plan's per-device model decides). Errors: those of group_by; the first failure of any
/// device fails the whole query with that error.
template <class Query, key_input KeyColumn, class Values>
auto group_by(const device_set& devices, const KeyColumn& keys, const Values& values, Query query,
              const options& opts = {}) {
  const auto& tuple = detail::as_value_tuple(values);
  using bound = typename detail::bound_for<KeyColumn, Query, std::remove_cvref_t<decltype(tuple)>>::type;
  using finisher = detail::host_result_for<typename bound::key::value_type, typename bound::output_tuple>;
  return detail::run_on_devices(
      devices, detail::column_list(keys, tuple), opts,
      [&](const options& mine) { return make_driver(keys, values, query, mine); },
      [](auto& driver) { return finisher::finalize(driver); });
}

}  // namespace gpuagg
