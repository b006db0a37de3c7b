#pragma once
// tuner<Params>: the cache warm start around Algorithm 1, and the driver wrapper; included by
// <gpuagg/tuner.hpp>. The work happens in one non-template function so that every
// tuner<Params> shares one instantiation; Params only fixes the values.

#ifndef GPUAGG_TUNER_HPP
#error "include <gpuagg/tuner.hpp>: detail/tuner/*.hpp are its implementation, in its order"
#endif

#include <gpuagg/error.hpp>

#include <algorithm>
#include <functional>
#include <iostream>
#include <utility>
#include <vector>

namespace gpuagg {
namespace detail {

/// A search, optionally warm-started from the cache (section 4.3): a stored winner is measured
/// once with ProcessBlocksWith; if that time is within s of the stored one, it wins without a
/// search; otherwise Algorithm 1 runs in full, the stored winner (already measured) joining the
/// initial configurations, and the new winner replaces the entry. A search cut short by the end
/// of the input has not found its minimum: its best so far is stored as provisional
/// (cache_entry::converged false) with where the search stood, never confirmed as a hit, and the
/// next query of the shape resumes the search (cache_outcome::resumed). On a miss, with
/// tuner_params::cache_params::neighbour_entry_distance, the winner stored for the nearest group count (of the
/// same device and query) replaces its strategy's initial configuration.
inline tuning_report tune(const tuner_params& params, const search_space& space, const tuning_cache& cache,
                          std::ostream* log_sink, const measure_fn& measure, std::size_t blocks_available,
                          const feasibility_fn& feasible, std::span<const execution_params> initial,
                          const std::optional<tuning_key>& key, bool scan = true, const announce_fn& announce = {}) {
  tuning_report report;
  report.params = params;
  std::optional<search_state> resumed;  // a provisional entry's search
  host_stopwatch watch;
  watch.start();
  const decision_log log(log_sink, &watch);
  algorithm1 search(params, space, measure, blocks_available, feasible, log, watch, report, announce);
  if (!scan) search.skip_scan();
  const auto done = [&] {
    watch.stop();
    report.host_seconds = watch.seconds();
    return report;
  };

  const bool caching = params.cache.use_cache && key.has_value() && cache.enabled();
  std::vector<execution_params> starts;
  if (caching) {
    std::optional<cache_entry> stored;
    {
      const stopwatch_pause pause(watch);  // file I/O is not the algorithm's bookkeeping
      stored = cache.load(*key, report.warnings);
    }
    report.cache = cache_outcome::miss;
    if (!stored) {
      log("cache miss for ", *key, " (", cache.path().string(), ")");
    } else if (!search.feasible(stored->params)) {
      log("cache entry ", stored->params, " is outside the space or infeasible now; searching");
    } else if (!stored->converged) {
      // A search the input cut short: no hit to confirm; the search continues where it stood.
      if (stored->state) {
        log("provisional cache entry ", stored->params, " (a search cut short); resuming it");
        report.cache = cache_outcome::resumed;
        resumed = std::move(stored->state);
      } else {
        log("provisional cache entry ", stored->params, " without its search; searching");
      }
    } else {
      log("cache entry ", stored->params, " at ", format_seconds(stored->seconds), "; checking it");
      const std::optional<double> now = search.process_blocks_with(stored->params, measurement_role::cache_check);
      if (!now) {  // the input ran out during the check
        search.finish(false);
        return done();
      }
      search.update_fastest(stored->params);
      if (similar(stored->seconds, *now, params.search.similarity)) {
        report.cache = cache_outcome::hit;
        // The check ran the winner itself: it confirmed, it did not explore.
        report.confirmation_blocks = report.exploration_blocks;
        report.exploration_blocks = 0;
        report.exploration_seconds = 0.0;
        log("cache hit: ", stored->params, " still within s of its stored time");
        search.finish(true);
        return done();
      }
      report.cache = cache_outcome::stale;
      log("cache entry off by more than s (", format_seconds(*now), " now); searching again");
      starts.push_back(stored->params);
    }
  } else if (params.cache.use_cache && key && !cache.enabled()) {
    log("no cache path (GPUAGG_CACHE_DIR, XDG_CACHE_HOME, HOME unset); tuning without a cache");
  }

  // Beyond the paper: a miss borrows the nearest group count's winner as a start.
  std::optional<std::pair<int, cache_entry>> nearest;
  if (caching && report.cache == cache_outcome::miss && params.cache.neighbour_entry_distance > 0) {
    {
      const stopwatch_pause pause(watch);
      nearest = cache.load_nearest(*key, static_cast<int>(params.cache.neighbour_entry_distance), report.warnings);
    }
    if (nearest && !search.feasible(nearest->second.params)) nearest.reset();
  }

  const std::size_t first_initial = starts.size();
  if (initial.empty()) {
    const std::vector<execution_params> defaults = default_initial_configs(space);
    starts.insert(starts.end(), defaults.begin(), defaults.end());
  } else {
    starts.insert(starts.end(), initial.begin(), initial.end());
  }
  if (nearest) {  // replaces its strategy's initial configuration; never adds a strategy
    const execution_params& borrowed = nearest->second.params;
    const auto same_strategy = std::find_if(starts.begin() + static_cast<std::ptrdiff_t>(first_initial), starts.end(),
                                            [&](const execution_params& p) { return p.strategy == borrowed.strategy; });
    if (same_strategy != starts.end()) {
      log("starting from ", borrowed, ", the winner stored for 2^", nearest->first, " groups, instead of ",
          *same_strategy);
      *same_strategy = borrowed;
      report.started_from_groups_log2 = nearest->first;
      search.skip_scan();
    }
  }
  search.finish(search.run(starts, resumed ? &*resumed : nullptr));

  // A converged winner is stored as such; the best so far of a search the input cut short is
  // stored as provisional, for the next query of this shape to resume from (never as a hit).
  if (caching && report.winner) {
    const stopwatch_pause pause(watch);
    cache_entry entry{*report.winner, report.winner_seconds, report.converged, std::nullopt};
    if (!report.converged) entry.state = search.state();
    if (cache.store(*key, entry, report.warnings)) {
      log(report.converged ? "stored " : "stored provisionally ", *report.winner, " for ", *key);
    }
  }
  return done();
}

}  // namespace detail

template <tuner_params Params>
tuner<Params>::tuner(search_space space, tuning_cache cache)
    : space_(space), cache_(std::move(cache)), log_(detail::tuner_log_requested() ? &std::cerr : nullptr) {}

template <tuner_params Params>
tuning_report tuner<Params>::search(const measure_fn& measure, std::size_t blocks_available,
                                    const feasibility_fn& feasible, std::span<const execution_params> initial,
                                    const std::optional<tuning_key>& key, search_bounds bounds) const {
  return detail::tune(Params, space_, cache_, log_, measure, std::min(blocks_available, bounds.block_budget), feasible,
                      initial, key, bounds.scan);
}

template <tuner_params Params>
template <block_driver Driver, feasibility_predicate Feasible>
tuning_report tuner<Params>::run(Driver& driver, Feasible&& feasible, std::span<const execution_params> initial,
                                 const std::optional<tuning_key>& key, search_bounds bounds) const {
  const measure_fn measure = [&driver](const execution_params& block_params) {
    return static_cast<double>(driver.run_block(block_params));
  };
  const feasibility_fn is_feasible = [&feasible](const execution_params& candidate) {
    return static_cast<bool>(std::invoke(feasible, candidate));
  };
  announce_fn announce;
  if constexpr (announcing_block_driver<Driver>) {
    announce = [&driver](const execution_params& block_params, std::size_t blocks) {
      driver.announce_blocks(block_params, blocks);
    };
  }
  tuning_report report = detail::tune(Params, space_, cache_, log_, measure,
                                      std::min(static_cast<std::size_t>(driver.blocks_left()), bounds.block_budget),
                                      is_feasible, initial, key, bounds.scan, announce);
  if (!report.winner) {
    if (static_cast<std::size_t>(driver.blocks_left()) == 0) return report;
    throw unsupported_error("gpuagg tuner: no feasible execution parameters for this query on this device");
  }
  // Convergence: every remaining block runs with c_f.
  if constexpr (pipelining_block_driver<Driver>) {
    report.winner_blocks = static_cast<std::size_t>(driver.blocks_left());
    if (report.winner_blocks > 0) driver.run_remaining(*report.winner);
  } else {
    while (static_cast<std::size_t>(driver.blocks_left()) > 0) {
      report.winner_block_seconds += static_cast<double>(driver.run_block(*report.winner));
      ++report.winner_blocks;
    }
  }
  return report;
}

template <tuner_params Params>
template <checking_block_driver Driver>
tuning_report tuner<Params>::run(Driver& driver, std::span<const execution_params> initial,
                                 const std::optional<tuning_key>& key, search_bounds bounds) const {
  const Driver& checking = driver;
  const auto feasible = [&checking](const execution_params& candidate) {
    return static_cast<bool>(checking.feasible(candidate));
  };
  return run(driver, feasible, initial, key, bounds);
}

}  // namespace gpuagg
