#pragma once
// Several OpenCL devices in one query (GPUs, and the CPU through PoCL, in any mix):
//
//   auto devices = gpuagg::device_set::from_selectors({"nvidia", "pthread"});  // GPUAGG_DEVICE-style
//   auto r = gpuagg::group_by(devices, g, gpuagg::values(a, b), query);
//   // r.result as group_by's result; r.stats: rows and blocks per device, merge time
//
// The blocks of the host input go to whichever device has a free block slot (a shared queue:
// a slow device takes fewer blocks); each device runs its own driver with its own key sample,
// plan and programs; the partial aggregates merge on one device, which finalizes once, or by
// owner: each device takes the groups it owns from the others and finalizes them into its rows
// of the result (multi_device/merge_site.hpp decides; docs/multi_device.md). Input that already lives split across the members (each part in one
// GPU's memory, or in host memory pinned for it) goes to group_by_parts: each member aggregates
// its own part, and the partials merge the same way. A header of its own, not part of groupby.hpp: it brings threads and a
// device set that single-device users do not need, and it builds on groupby.hpp (make_driver),
// which therefore cannot include it.
//
//   multi_device/device_set.hpp   the members: selectors, sub-devices, the caller's contexts
//   multi_device/block_queue.hpp  the shared queue of blocks
//   multi_device/block_size.hpp   DECISION: a block's rows per device (the tail)
//   multi_device/merge_site.hpp   DECISION: how and where the partials merge
//   multi_device/direct_parts.hpp DECISION: whether the parts run direct addressing, over which range
//   multi_device/host_reads.hpp   DECISION: which members copy host columns as they lie (no staging)
//   multi_device/participation.hpp DECISION: which members take part (slow ones sit out)
//   multi_device/run.hpp          a member's thread; the merge; the statistics

#include <atomic>
#include <chrono>
#include <cstddef>
#include <type_traits>
#include <vector>

#include "groupby.hpp"
#include "multi_device/block_queue.hpp"
#include "multi_device/block_size.hpp"
#include "multi_device/device_set.hpp"
#include "multi_device/direct_parts.hpp"
#include "multi_device/host_reads.hpp"
#include "multi_device/merge_site.hpp"
#include "multi_device/participation.hpp"
#include "multi_device/run.hpp"

namespace gpuagg {

/// SELECT keys, outputs... GROUP BY keys over every device of `devices`: the result on the
/// host, exactly as group_by(keys, values, query, opts) gives it on one device, with the
/// statistics of each device's part. Host input only (std::vector, std::span, pinned_array).
/// `opts` applies to every device (options::ctx must be unset: the set names the devices); a
/// strategy or configuration the caller fixes applies to every device, else each device runs
/// its own plan's choice per block (online tuning needs blocks of its own: with a shared queue,
/// the plan's per-device model decides). A member that two queries in a row find far slower
/// than the fastest sits the next 15 queries out (multi_device/participation.hpp; the statistics say
/// so; devices.reset_participation() forgets). Errors: those of group_by; the first failure of
/// any device fails the whole query with that error.
template <class Query, key_input KeyColumn, class Values>
auto group_by(const device_set& devices, const KeyColumn& keys, const Values& values, Query query,
              const options& opts = {}) {
  const auto& tuple = detail::as_value_tuple(values);
  using bound = typename detail::bound_for<KeyColumn, Query, std::remove_cvref_t<decltype(tuple)>>::type;
  using finisher = detail::host_result_for<typename bound::key::value_type, typename bound::output_tuple>;
  (void)query;
  detail::check_device_set(devices, opts);  // an empty set's typed error before its record is read
  const auto take_part = devices.participation().take_part(devices.size());
  // Every member reads the same host rows: one key sample and one group estimate serve all.
  detail::shared_estimate estimate;
  detail::first_presize<finisher> early;
  auto r = detail::run_on_devices(
      devices, detail::column_list(keys, tuple), opts,
      [&](const options& mine) {
        auto driver = detail::make_driver<Query>(keys, values, mine, false, &estimate);
        early.start(*driver);
        return driver;
      },
      [&](auto& driver) { return finisher::finalize(driver, early.get()); }, take_part,
      [&](const auto& owners, auto&& each) { return finisher::finalize_owned(owners, early.get(), each); });
  std::vector<bool> too_slow;
  std::vector<bool> took_part = take_part;  // less the members that sat out beside staged input
  for (std::size_t i = 0; i < r.stats.devices.size(); ++i) {
    too_slow.push_back(r.stats.devices[i].too_slow);
    if (r.stats.devices[i].sat_out) took_part[i] = false;
  }
  devices.participation().record(took_part, too_slow);
  return r;
}

/// SELECT keys, outputs... GROUP BY keys over input split into one part per member of `devices`:
/// member i aggregates key_parts[i] with value_parts[i] (a device column in its memory, or host
/// memory, such as a pinned_array of its context), as group_by runs one device (its own plan;
/// tuning when its part has the blocks for it), and the partials merge on the member with the
/// most rows, which finalizes once. The result on the host, exactly as group_by over all the
/// parts' rows gives it. Errors: those of group_by (a part's device column in another member's
/// memory is invalid_argument_error); a part count other than the set's size is
/// invalid_argument_error; the first failure of any member fails the whole query.
template <class Query, key_input KeyColumn, class Values>
auto group_by_parts(const device_set& devices, const std::vector<KeyColumn>& key_parts,
                    const std::vector<Values>& value_parts, Query query, const options& opts = {}) {
  using tuple_type = std::remove_cvref_t<decltype(detail::as_value_tuple(value_parts.front()))>;
  using bound = typename detail::bound_for<KeyColumn, Query, tuple_type>::type;
  using finisher = detail::host_result_for<typename bound::key::value_type, typename bound::output_tuple>;
  if (key_parts.size() != value_parts.size()) {
    throw invalid_argument_error("group_by_parts: " + std::to_string(key_parts.size()) + " key parts and " +
                                 std::to_string(value_parts.size()) + " value parts");
  }
  detail::check_parts(devices, key_parts.size(), opts);
  const auto started = std::chrono::steady_clock::now();
  const std::size_t n = devices.size();
  detail::members_read_in_place in_place;
  bool on_device = true;
  for (std::size_t i = 0; i < n; ++i) {
    const auto columns = detail::column_list(key_parts[i], detail::as_value_tuple(value_parts[i]));
    in_place.add(devices, i, columns);
    on_device = on_device && columns.front().on_device();
  }
  detail::first_presize<finisher> early;
  const auto finalize = [&](auto& driver) { return finisher::finalize(driver, early.get()); };
  const auto finalize_owned = [&](const auto& owners, auto&& each) {
    return finisher::finalize_owned(owners, early.get(), each);
  };
  const auto run = [](const options& how) {
    return [&how](std::size_t, auto& driver) { detail::run_query<tuner_params{}>(driver, how); };
  };
  const auto started_here = [&](auto driver) {
    early.start(*driver);
    return driver;
  };
  const auto hashed_part = [&](std::size_t i, const options& mine) {
    return started_here(detail::make_driver<Query>(key_parts[i], value_parts[i], mine, false));
  };
  (void)query;
  // Host parts never take direct addressing (the plan reads no range of host input).
  if constexpr (detail::may_address_directly<Query, KeyColumn>) {
    if (on_device) {
      // Each member plans its part as group_by plans one device. Direct addressing needs every
      // member's plan to take it (multi_device/direct_parts.hpp), so a member whose plan keeps
      // the hash table runs its part at once; one whose set-up handed over (its handover holds
      // a range) waits for the others'.
      std::vector<detail::direct_handover> handovers(n);
      const auto handed_over = [&](std::size_t i) { return handovers[i].range.has_value(); };
      std::vector<device_share> planned(n);
      std::atomic<bool> stop{false};
      auto hashed = detail::run_members(
          devices, opts, planned,
          [&](std::size_t i, const options& mine) {
            return started_here(
                detail::make_driver<Query>(key_parts[i], value_parts[i], mine, false, nullptr, &handovers[i]));
          },
          [&](std::size_t i, auto& driver) {
            if (!handed_over(i) && !stop.load()) run(opts)(i, driver);
          },
          [&stop] { stop.store(true); });
      bool any = false;
      for (std::size_t i = 0; i < n; ++i) any = any || handed_over(i);
      if (!any) return detail::merge_parts(hashed, std::move(planned), started, finalize, finalize_owned);
      using key = typename bound::key;
      const std::uint64_t sign_bit =
          key_order_bit(std::is_signed_v<typename key::value_type>, sizeof(typename key::bits_type));
      const auto range = detail::common_direct_range(handovers, sign_bit, [&](std::size_t i, const exact_key_range& r) {
        return hashed[i]->plan().direct_domain(r).has_value();
      });
      if (range) {
        hashed.clear();
        options direct = opts;
        direct.domain = detail::domain_over<key>(*range);
        return detail::run_parts_on_devices(
            devices, started, planned, direct,
            [&](std::size_t i, const options& mine) {
              return detail::make_driver<typename detail::direct_query_of<Query>::type>(
                  key_parts[i], value_parts[i], mine, false, nullptr, &handovers[i]);
            },
            run(direct), finalize, finalize_owned);
      }
      // Hash tables everywhere: a member whose set-up stopped for direct addressing sets up
      // again and runs its part; the others ran theirs.
      return detail::run_parts_on_devices(
          devices, started, planned, opts,
          [&](std::size_t i, const options& mine) {
            return handed_over(i) ? hashed_part(i, mine) : std::move(hashed[i]);
          },
          [&](std::size_t i, auto& driver) {
            if (handed_over(i)) run(opts)(i, driver);
          },
          finalize, finalize_owned);
    }
  }
  return detail::run_parts_on_devices(devices, started, {}, opts, hashed_part, run(opts), finalize, finalize_owned);
}

}  // namespace gpuagg
