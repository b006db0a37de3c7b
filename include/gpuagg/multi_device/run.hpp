#pragma once
// How a multi-device query runs: one thread per member builds that member's driver (its own
// key sample, plan and programs) and runs the blocks it takes from the shared queue; the
// partial aggregates then merge on one member, which finalizes once, or each member takes the
// groups it owns from the others and finalizes them into its rows of the result
// (merge_site.hpp decides).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "../column.hpp"
#include "../error.hpp"
#include "../options.hpp"
#include "../result.hpp"
#include "../runtime/readback.hpp"
#include "block_queue.hpp"
#include "device_set.hpp"
#include "host_reads.hpp"
#include "merge_site.hpp"

namespace gpuagg {

/// One member's part in a multi-device query.
struct device_share {
  std::string device;
  std::uint64_t rows = 0;             ///< rows this member aggregated
  std::size_t blocks = 0;             ///< blocks it took from the shared queue
  std::uint64_t block_rows = 0;       ///< its driver's largest block (its plan's)
  std::uint64_t partial_groups = 0;   ///< groups of the partial it sent (the merging member sends none: 0)
  std::uint64_t owned_groups = 0;     ///< by owner: the result's groups it finalized
  double setup_seconds = 0;           ///< its driver's set-up: key sample, plan, programs, buffers
  double run_seconds = 0;             ///< from its first block to its last block's completion
  bool sat_out = false;               ///< took no part: found too slow before, or a CPU beside staged input (participation.hpp)
  bool too_slow = false;              ///< found too slow to help (participation.hpp: found_too_slow)
  query_stats stats;                  ///< its driver's statistics (the merging member's: after the merge)
};

/// How a multi-device query ran.
struct multi_device_stats {
  std::vector<device_share> devices;  ///< per member, in the set's order
  bool by_owner = false;              ///< each member merged and finalized the groups it owns
  std::size_t merge_device = 0;       ///< the member the partials merged on (by owner: the one with the most rows)
  std::uint64_t merged_entries = 0;   ///< partial groups moved to it
  double run_seconds = 0;             ///< start to the last member's last block (set-up included)
  double merge_seconds = 0;           ///< the partials' exports and their absorption
  double finalize_seconds = 0;        ///< FINALIZE, the result copied to the host
  double wall_seconds = 0;
};

inline std::ostream& operator<<(std::ostream& os, const multi_device_stats& s) {
  for (std::size_t i = 0; i < s.devices.size(); ++i) {
    const auto& d = s.devices[i];
    os << "device " << i << " (" << d.device << "): ";
    if (d.sat_out) {
      os << "sat out (too slow in an earlier query, or a CPU beside staged input)\n";
      continue;
    }
    os << d.rows << " rows in " << d.blocks << " blocks (set-up " << d.setup_seconds * 1e3 << " ms, run "
       << d.run_seconds * 1e3 << " ms), "
       << (s.by_owner ? "sent " + std::to_string(d.partial_groups) + " groups, owned " + std::to_string(d.owned_groups)
           : i == s.merge_device ? std::string("merged here")
                                 : "sent " + std::to_string(d.partial_groups) + " groups")
       << (d.too_slow ? ", found too slow" : "") << '\n';
  }
  os << "run " << s.run_seconds * 1e3 << " ms, merge" << (s.by_owner ? " by owner " : " ") << s.merge_seconds * 1e3
     << " ms (" << s.merged_entries
     << " entries), finalize " << s.finalize_seconds * 1e3 << " ms, wall " << s.wall_seconds * 1e3 << " ms";
  return os;
}

/// A result with the statistics of the multi-device query that produced it.
template <class Result>
struct multi_device_result {
  Result result;
  multi_device_stats stats;
};

namespace detail {

/// The first failure of any member; later ones (often consequences) are dropped.
class first_failure {
 public:
  void record(std::exception_ptr failure) {
    const std::lock_guard lock(mutex_);
    if (!failure_) failure_ = std::move(failure);
  }
  void rethrow_if_any() const {
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr failure_;
};

/// f(0) ... f(n - 1), each on a thread of its own; the first failure is rethrown once all ended.
/// One call runs on the calling thread: a thread of its own would only add its start and join
/// (a tenth of a millisecond, as long as a small partial's whole export).
template <class F>
void run_each(std::size_t n, F&& f) {
  if (n == 1) {
    f(std::size_t{0});
    return;
  }
  first_failure failure;
  {
    std::vector<std::jthread> threads;
    threads.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      threads.emplace_back([&, i] {
        try {
          f(i);
        } catch (...) {
          failure.record(std::current_exception());
        }
      });
    }
  }
  failure.rethrow_if_any();
}

/// A caller that finalizes at one site only (a test's driver without finalize_owned).
struct one_site_only {};

/// The merged result's columns, sized on a thread from the plan of the first member whose
/// driver is made (a member's part holds about the query's groups, or fewer: where the merged
/// result turns out larger, FINALIZE sizes it itself).
template <class Finisher>
class first_presize {
 public:
  template <class Driver>
  void start(const Driver& driver) {
    std::call_once(once_, [&] { early_ = Finisher::presize(driver); });
  }
  auto* get() noexcept { return early_.get(); }

 private:
  std::once_flag once_;
  std::unique_ptr<presized_result<typename Finisher::type>> early_;
};

/// Which device model each member is: the index of the first member of the same device name,
/// platform and driver version.
inline std::vector<std::size_t> device_models(const device_set& devices) {
  std::vector<std::size_t> model(devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    model[i] = i;
    for (std::size_t j = 0; j < i; ++j) {
      if (devices[j].info().name == devices[i].info().name &&
          devices[j].info().platform_name == devices[i].info().platform_name &&
          devices[j].info().driver_version == devices[i].info().driver_version) {
        model[i] = model[j];
        break;
      }
    }
  }
  return model;
}

inline void check_device_set(const device_set& devices, const options& opts) {
  if (devices.empty()) throw invalid_argument_error("group_by over a device_set: the set has no device");
  if (opts.ctx != nullptr) {
    throw invalid_argument_error("group_by over a device_set: options::ctx names one device; the set names them all");
  }
}

/// Runs every member of `devices` on a thread of its own: `make(i, options)` builds member i's
/// driver (options::ctx set to the member), `work(i, driver)` runs its rows. Members on devices
/// of one model build the same programs: on a member's first query (its context has neither
/// built nor loaded a program yet) the first member of its model builds them (into the on-disk
/// binary cache, when it is on) while it waits and then loads them, instead of every member
/// compiling the same source at once on the same host cores. Later queries do not wait: the
/// wait would hold a member's whole set-up (its key sample included) behind another's, and a
/// query of a new shape on a warm set only compiles its programs on two threads at once. A
/// failure of any member calls `on_failure` (to stop the others) and is rethrown once all have
/// stopped. A member whose `take_part` entry is false (empty: every member takes part) builds
/// no driver (its entry stays null) and runs nothing.
template <class MakeDriver, class Work>
auto run_members(const device_set& devices, const options& opts, std::vector<device_share>& shares,
                 MakeDriver&& make, Work&& work, const std::function<void()>& on_failure,
                 const std::vector<bool>& take_part = {}) {
  using clock = std::chrono::steady_clock;
  const auto since = [](clock::time_point from) { return std::chrono::duration<double>(clock::now() - from).count(); };
  using driver_ptr = decltype(make(std::size_t{0}, opts));
  const std::size_t n = devices.size();
  std::vector<driver_ptr> drivers(n);
  first_failure failure;
  std::vector<std::size_t> leader(n);
  const auto model = device_models(devices);
  for (std::size_t i = 0; i < n; ++i) {
    leader[i] = i;
    if (!devices[i].binary_cache().enabled()) continue;
    for (std::size_t j = 0; j < i; ++j) {
      if (!take_part.empty() && !take_part[j]) continue;
      if (model[j] == model[i]) {
        leader[i] = j;
        break;
      }
    }
  }
  std::vector<std::promise<void>> set_up(n);
  std::vector<std::shared_future<void>> set_up_done;
  for (auto& p : set_up) set_up_done.push_back(p.get_future().share());
  {
    std::vector<std::jthread> members;
    members.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (!take_part.empty() && !take_part[i]) {
        set_up[i].set_value();
        shares[i].sat_out = true;
        continue;
      }
      members.emplace_back([&, i] {
        bool announced = false;
        try {
          const auto begun = clock::now();
          const bool first_query = devices[i].programs_built() == 0 && devices[i].program_cache().loaded == 0;
          if (leader[i] != i && first_query) set_up_done[leader[i]].wait();
          options mine = opts;
          mine.ctx = &devices[i];
          drivers[i] = make(i, mine);
          set_up[i].set_value();
          announced = true;
          shares[i].setup_seconds = since(begun);
          const auto running = clock::now();
          work(i, *drivers[i]);
          shares[i].run_seconds = since(running);
        } catch (...) {
          if (!announced) set_up[i].set_value();
          failure.record(std::current_exception());
          on_failure();
        }
      });
    }
  }
  failure.rethrow_if_any();
  for (std::size_t i = 0; i < n; ++i) {
    shares[i].device = drivers[i] ? drivers[i]->device().name : devices[i].info().name;
    shares[i].block_rows = drivers[i] ? drivers[i]->block_rows() : 0;
  }
  return drivers;
}

/// Each member with rows sends every other one the groups that one owns and takes in the
/// groups it is sent, all at once; then `finalize_owned(owners, run_each)` finalizes every
/// owner's groups into one result. The result's statistics are the member with the most rows'.
template <class DriverPtr, class FinalizeOwned>
auto merge_by_owner(std::vector<DriverPtr>& drivers, const std::vector<std::size_t>& owners,
                    std::vector<device_share>& shares, multi_device_stats& stats, FinalizeOwned&& finalize_owned) {
  using clock = std::chrono::steady_clock;
  const auto since = [](clock::time_point from) { return std::chrono::duration<double>(clock::now() - from).count(); };
  const std::size_t n = owners.size();
  const auto parts = static_cast<std::uint32_t>(n);
  stats.by_owner = true;
  const auto merging = clock::now();
  using partial_type = decltype(drivers[owners[0]]->export_for_merge(parts, 0));
  std::vector<std::vector<partial_type>> sent(n, std::vector<partial_type>(n));  // [from][to]
  run_each(n, [&](std::size_t a) {
    for (std::size_t b = 0; b < n; ++b) {
      if (b != a) sent[a][b] = drivers[owners[a]]->export_for_merge(parts, static_cast<std::uint32_t>(b));
    }
  });
  run_each(n, [&](std::size_t b) {
    for (std::size_t a = 0; a < n; ++a) {
      if (a != b) drivers[owners[b]]->absorb(sent[a][b]);
    }
  });
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      shares[owners[a]].partial_groups += sent[a][b].size();
      stats.merged_entries += sent[a][b].size();
    }
  }
  sent.clear();  // the pinned staging back to each exporter's pool, on this thread
  stats.merge_seconds = since(merging);

  const auto finalizing = clock::now();
  std::vector<decltype(&*drivers[owners[0]])> members;
  for (const auto i : owners) members.push_back(&*drivers[i]);
  auto result = finalize_owned(members, [](std::size_t count, auto&& f) { run_each(count, f); });
  stats.finalize_seconds = since(finalizing);
  for (std::size_t a = 0; a < n; ++a) shares[owners[a]].owned_groups = drivers[owners[a]]->stats().groups;
  return result;
}

/// The partials merged (merge_site.hpp: at one site, or by owner where `finalize_owned` is
/// given): the result and the statistics. At one site, the other members' partials merge into
/// the member that aggregated the most rows, which finalizes once (`finalize(driver)`).
/// Members that sat the query out (null drivers) have nothing to merge.
template <class DriverPtr, class Finalize, class FinalizeOwned>
auto merge_and_finalize(std::vector<DriverPtr>& drivers, std::vector<device_share> shares, multi_device_stats stats,
                        Finalize&& finalize, FinalizeOwned&& finalize_owned,
                        std::chrono::steady_clock::time_point started) {
  using clock = std::chrono::steady_clock;
  const auto since = [](clock::time_point from) { return std::chrono::duration<double>(clock::now() - from).count(); };
  const std::size_t n = drivers.size();
  std::vector<std::uint64_t> rows_per_device(n);
  for (std::size_t i = 0; i < n; ++i) rows_per_device[i] = shares[i].rows;
  std::size_t site = merge_site(rows_per_device);
  if (!drivers[site]) {  // no rows anywhere, and the first member sat out
    site = 0;
    while (!drivers[site]) ++site;
  }
  stats.merge_device = site;
  const auto finish = [&](auto result) {
    for (std::size_t i = 0; i < n; ++i) {
      if (drivers[i]) shares[i].stats = drivers[i]->stats();
    }
    if (!stats.by_owner) shares[site].stats = result.stats;
    stats.devices = std::move(shares);
    stats.wall_seconds = since(started);
    return multi_device_result<decltype(result)>{std::move(result), std::move(stats)};
  };

  if constexpr (!std::is_same_v<std::remove_cvref_t<FinalizeOwned>, one_site_only>) {
    std::vector<std::size_t> owners;
    bool any_cpu = false;
    for (std::size_t i = 0; i < n; ++i) {
      if (!drivers[i] || shares[i].rows == 0) continue;
      owners.push_back(i);
      any_cpu |= drivers[i]->device().architecture == "cpu";
    }
    if (choose_merge_form(owners.size(), any_cpu, drivers[site]->planned_groups()) == merge_form::by_owner) {
      auto result = merge_by_owner(drivers, owners, shares, stats, finalize_owned);
      const bool presized = result.stats.result_presized;
      result.stats = drivers[site]->stats();
      result.stats.groups = result.size();
      result.stats.result_presized = presized;
      return finish(std::move(result));
    }
  }

  // The others' partials come down concurrently (each from its own device, into its pinned
  // memory where that pays), then merge in turn (each copied up from where it came down).
  const auto merging = clock::now();
  using partial_type = decltype(drivers[site]->export_for_merge());
  std::vector<partial_type> partials(n);
  std::vector<std::size_t> others;
  for (std::size_t i = 0; i < n; ++i) {
    if (i != site && drivers[i]) others.push_back(i);
  }
  run_each(others.size(), [&](std::size_t k) { partials[others[k]] = drivers[others[k]]->export_for_merge(); });
  for (const auto i : others) {
    shares[i].partial_groups = partials[i].size();
    stats.merged_entries += partials[i].size();
    drivers[site]->absorb(partials[i]);
    partials[i] = partial_type{};
  }
  stats.merge_seconds = since(merging);

  const auto finalizing = clock::now();
  auto result = finalize(*drivers[site]);
  stats.finalize_seconds = since(finalizing);
  return finish(std::move(result));
}

/// Runs one query over `columns` (host input, all of `rows` rows) on every member of `devices`,
/// the blocks handed out by a shared queue: `make(options)` builds a member's driver (options::ctx
/// set to the member), `finalize(driver)` finalizes the merged one. A failure of any member fails
/// the query with that member's error (the same typed error a single-device query throws), never
/// a partial result. Members whose `take_part` entry is false sit the query out (empty: none).
/// `finalize_owned(owners, each)` finalizes the owners' groups into one result when the
/// partials merge by owner (merge_by_owner); one_site_only merges at one site.
template <class MakeDriver, class Finalize, class FinalizeOwned = one_site_only>
auto run_on_devices(const device_set& devices, const std::vector<column_data>& columns, const options& opts,
                    MakeDriver&& make, Finalize&& finalize, const std::vector<bool>& take_part = {},
                    FinalizeOwned&& finalize_owned = {}) {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  check_device_set(devices, opts);
  for (const auto& c : columns) {
    if (c.on_device()) {
      throw invalid_argument_error(
          "group_by over a device_set takes host columns (std::vector, std::span, pinned_array); a device column "
          "lives in one device's memory (group_by_parts takes one part per member, in its memory)");
    }
  }
  const std::uint64_t rows = columns.empty() ? 0 : columns.front().rows;
  const members_read_in_place in_place(devices, columns);

  const std::size_t n = devices.size();
  // CPU members sit out beside a GPU that stages a column (participation.hpp), unless that
  // would leave no member.
  std::vector<bool> part = take_part.empty() ? std::vector<bool>(n, true) : take_part;
  {
    std::vector<bool> cpu(n), stages(n);
    for (std::size_t i = 0; i < n; ++i) {
      cpu[i] = devices[i].info().architecture == "cpu";
      stages[i] = in_place.stages(i);
    }
    std::vector<bool> narrowed = part;
    const auto beside = sit_out_beside_staging(cpu, stages);
    for (std::size_t i = 0; i < n; ++i) narrowed[i] = narrowed[i] && !beside[i];
    if (std::find(narrowed.begin(), narrowed.end(), true) != narrowed.end()) part = std::move(narrowed);
  }
  std::vector<device_share> shares(n);
  block_queue queue(rows, n, device_models(devices));
  for (std::size_t i = 0; i < n; ++i) {
    if (!part[i]) queue.sit_out(i);
  }
  auto drivers = run_members(
      devices, opts, shares, [&](std::size_t, const options& mine) { return make(mine); },
      [&](std::size_t i, auto& driver) {
        std::optional<execution_params> fixed;
        if (opts.strategy || opts.config) {
          const auto strategy = opts.strategy.value_or(driver.default_params().strategy);
          fixed = execution_params{strategy, opts.config.value_or(driver.initial_config(strategy))};
        }
        const std::uint64_t limit = driver.block_rows();
        const std::size_t window = std::max<std::size_t>(opts.blocks_in_flight, 1);
        driver.run_blocks([&queue, i, limit, window] { return queue.next(i, limit, window); }, fixed);
      },
      [&queue] { queue.cancel(); },  // the others stop taking blocks; the query fails as a whole
      part);
  if (queue.handed_out() != rows) {
    throw error("internal error: a multi-device query handed out " + std::to_string(queue.handed_out()) + " of " +
                std::to_string(rows) + " rows");
  }
  multi_device_stats stats;
  stats.run_seconds = std::chrono::duration<double>(clock::now() - started).count();
  std::vector<std::uint64_t> rows_per_member(n);
  std::vector<double> run_seconds(n);
  std::vector<bool> stopped_as_slow(n);
  for (std::size_t i = 0; i < n; ++i) {
    shares[i].rows = rows_per_member[i] = queue.rows_of(i);
    shares[i].blocks = queue.blocks_of(i);
    run_seconds[i] = shares[i].run_seconds;
    stopped_as_slow[i] = queue.too_slow(i);
  }
  const auto too_slow = found_too_slow(rows_per_member, run_seconds, stopped_as_slow);
  for (std::size_t i = 0; i < n; ++i) shares[i].too_slow = too_slow[i];
  return merge_and_finalize(drivers, std::move(shares), std::move(stats), finalize, finalize_owned, started);
}

/// group_by_parts' arguments: a set with a member for each of `parts` parts.
inline void check_parts(const device_set& devices, std::size_t parts, const options& opts) {
  check_device_set(devices, opts);
  if (parts != devices.size()) {
    throw invalid_argument_error("group_by_parts: " + std::to_string(parts) + " parts for a set of " +
                                 std::to_string(devices.size()) + " devices (one part per member, in its order)");
  }
}

/// The partials of a query over parts merged (merge_and_finalize) once every member ran its part:
/// `drivers[i]` over part i, `shares` with each member's set-up and run.
template <class DriverPtr, class Finalize, class FinalizeOwned>
auto merge_parts(std::vector<DriverPtr>& drivers, std::vector<device_share> shares,
                 std::chrono::steady_clock::time_point started, Finalize&& finalize, FinalizeOwned&& finalize_owned) {
  multi_device_stats stats;
  stats.run_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (std::size_t i = 0; i < drivers.size(); ++i) {
    shares[i].rows = drivers[i]->rows();
    shares[i].blocks = drivers[i]->stats().blocks.size();
  }
  return merge_and_finalize(drivers, std::move(shares), std::move(stats), finalize, finalize_owned, started);
}

/// Runs one query whose input is split into one part per member: member i builds its driver
/// over part i with `make(i, options)` and runs it as group_by runs one device (`run(i, driver)`:
/// its own plan, and tuning when its part has the blocks for it); the partials then merge as
/// above. The parts stay where the caller put them (a member's device memory, or host memory),
/// so no member takes another's rows. `started`: when the query began; `before[i]`: member i's
/// set-up and run before this call (group_by_parts' plan of each part), counted in its share.
template <class MakeDriver, class Run, class Finalize, class FinalizeOwned = one_site_only>
auto run_parts_on_devices(const device_set& devices, std::chrono::steady_clock::time_point started,
                          const std::vector<device_share>& before, const options& opts, MakeDriver&& make, Run&& run,
                          Finalize&& finalize, FinalizeOwned&& finalize_owned = {}) {
  std::vector<device_share> shares(devices.size());
  std::atomic<bool> stop{false};
  auto drivers = run_members(
      devices, opts, shares, make,
      [&](std::size_t i, auto& driver) {
        if (!stop.load()) run(i, driver);
      },
      [&stop] { stop.store(true); });
  for (std::size_t i = 0; i < before.size() && i < shares.size(); ++i) {
    shares[i].setup_seconds += before[i].setup_seconds;
    shares[i].run_seconds += before[i].run_seconds;
  }
  return merge_parts(drivers, std::move(shares), started, finalize, finalize_owned);
}

}  // namespace detail
}  // namespace gpuagg
