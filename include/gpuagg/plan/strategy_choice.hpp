#pragma once
// Which strategy and thread configuration: the per-device entry's regime for the table, each
// strategy's starting configuration, the default strategy (section 3.7 and the skew rules), the
// programs a query builds before its first block, the kernels' work-group limits, and
// feasibility (each strategy's own rule is its policy's, strategy.hpp).

#ifndef GPUAGG_PLAN_HPP
#error "include <gpuagg/plan.hpp>: plan/*.hpp implement its members"
#endif

#include <algorithm>
#include <cmath>
#include <string>

#include "../detail/bits.hpp"
#include "../strategy.hpp"

namespace gpuagg {

inline const plan_regime& query_planner::regime() const {
  const double buckets = shape_.identity_scheme ? double(shape_.domain_size) : double(capacity_for(sizing_groups()));
  const double equivalent = buckets * shape_.bucket_bytes / (2.0 * recorded_bucket_bytes);  // the recorded query's groups
  return entry_.regime(equivalent <= 1 ? 0 : static_cast<int>(std::ceil(std::log2(equivalent) - 1e-9)));
}

inline bool query_planner::scattered_keys() const {
  return !shape_.identity_scheme && profile_.sampled &&
         profile_.key_span > dense_span_factor * double(planned_groups());
}

inline launch_config query_planner::initial_config(strategy_kind strategy) const {
  const plan_regime& r = regime();
  // The keys' shape the sample shows, most telling first: runs of equal keys, one dominant key,
  // frequent keys (the hot-key table's), else shuffled keys.
  const bool runs = profile_.runs_share >= runs_min_share;
  const bool dominant = profile_.hottest_key_share >= dominant_key_share;
  const bool frequent = hot_.share >= hot_table_min_share;
  const bool local = strategy == strategy_kind::workgroup_local;
  // Scattered keys' configurations where the entry has them (a zero size: not measured). They
  // run more work groups to hide the waits of a SIMD group for its longest probe sequence; the
  // range and perfect local tables give WORKGROUPLOCAL's rows their bucket without a probe (a
  // box of composite keys, spread over their packed words, a bucket a key as a dense range), so
  // they start from shuffled keys' configuration.
  const launch_config& scattered = local ? r.workgroup_local_scattered : r.shared_scattered;
  const bool hashed = !(local && (range_ || perfect_));
  // Direct addressing's SHARED configuration where the entry has one: a row reads no key word
  // and probes nothing, and once its table outgrows the cache a few work items a compute unit,
  // each over many rows, outran the hash table's configuration of as many bytes.
  const bool direct = shape_.identity_scheme && !local && r.shared_direct.work_group_size != 0;
  const launch_config& shuffled = direct ? r.shared_direct
                                  : hashed && scattered_keys() && scattered.work_group_size != 0
                                      ? scattered
                                      : (local ? r.workgroup_local : r.shared);
  launch_config config = runs       ? (local ? r.workgroup_local_runs : r.shared_runs)
                         : dominant ? (local ? r.workgroup_local_dominant : r.shared_dominant)
                         : frequent ? (local ? r.workgroup_local_frequent : r.shared_frequent)
                                    : shuffled;
  if (strategy == strategy_kind::independent) config = paper_initial_config(strategy);
  return fitted(config, strategy);
}

inline launch_config query_planner::fitted(launch_config config, strategy_kind strategy) const {
  while (!runs_work_group_size(config.work_group_size, kernel_variant{strategy})) {
    // Keep the threads per compute unit: the shape matters less than the count (section 3.3).
    config.work_group_size /= 2;
    config.work_groups_per_cu *= 2;
  }
  return within_rows(config);
}

inline launch_config query_planner::within_rows(launch_config config) const {
  // The entry's configurations were measured on device input's large blocks; on host input's
  // 16 MiB blocks (and on short inputs and partitioned pieces) many of their work items would
  // find no row and still set up and flush their work group's tables.
  const std::uint64_t rows = rows_a_launch();
  while (config.work_groups_per_cu > 1 && total_threads(config) / 2 >= rows) config.work_groups_per_cu /= 2;
  return config;
}

inline double query_planner::keys_per_work_group(const launch_config& config) const {
  const double per_group = double(rows_a_launch()) / double(std::max<std::uint64_t>(total_threads(config), 1)) * config.work_group_size;
  double keys = per_group;
  if (profile_.runs_share >= runs_min_share) {
    keys = std::min(keys, per_group * ((1.0 - profile_.runs_share) + 1.0 / config.work_group_size));
  }
  if (profile_.hottest_key_share >= dominant_key_share) {
    keys = std::min(keys, per_group * (1.0 - profile_.hottest_key_share) + 1.0);
  }
  if (profile_.work_group_keys > 0) keys = std::min(keys, 1.25 * profile_.work_group_keys);
  return std::min(keys, double(std::max<std::uint64_t>(planned_groups(), 1)));
}

inline bool query_planner::partial_local_table() const {
  if (!device_.is_gpu || shape_.identity_scheme || !profile_.sampled || local_table_fits()) return false;
  const double hot = profile_.hottest_key_share;
  const bool runs = profile_.runs_share >= runs_min_share;
  const bool dominant = hot >= dominant_key_share && hot < single_key_share;
  if (!runs && !dominant && profile_.work_group_keys <= 0) return false;
  // Fewer work groups where the block has fewer rows than work items; a kernel limit below the
  // start's size (read only once the program is built) would halve the work groups' rows.
  return keys_per_work_group(within_rows(partial_local_start)) <= double(max_local_buckets());
}

inline std::optional<key_window> query_planner::locality_window() const {
  if (!device_.is_gpu || !profile_.on_device || profile_.window_read || shape_.identity_scheme || !profile_.sampled ||
      profile_.stepped_share < stepped_min_share || local_table_fits() || partial_local_table() ||
      direct_range_wanted()) {
    return std::nullopt;
  }
  // At locality_strides grid strides within_rows keeps partial_local_start whole.
  const key_window window{total_threads(partial_local_start), partial_local_start.work_group_size, locality_strides};
  if (rows_a_launch() < window.pitch_rows * window.strides) return std::nullopt;
  return window;
}

inline launch_config query_planner::partial_local_config() const {
  return fitted(partial_local_start, strategy_kind::workgroup_local);
}

inline execution_params query_planner::default_params() const {
  const double hot = profile_.hottest_key_share;
  const bool dominant = hot >= dominant_key_share && hot < single_key_share;
  const auto shared = [&] { return execution_params{strategy_kind::shared, initial_config(strategy_kind::shared)}; };
  const auto local = [&] {
    return execution_params{strategy_kind::workgroup_local, initial_config(strategy_kind::workgroup_local)};
  };
  if (local_table_fits() && feasible(local())) {
    const bool large = local_table_bytes(1) > device_.local_mem_bytes / 4;
    return shape_.identity_scheme && dominant && large ? shared() : local();
  }
  if (partial_local_table()) {
    const execution_params partial{strategy_kind::workgroup_local, partial_local_config()};
    if (infeasibility(partial, false).empty()) return partial;
  }
  if (hot_table(shared()) || (shape_.identity_scheme && hot >= dominant_key_share)) return shared();
  // A key holding 1/16 of the rows or more, with more groups than local memory holds, that the
  // rule above did not take (not dominant, or too many keys a work group): where the device's
  // entry was measured, SHARED with the run cache's register for the key (measured faster than
  // a partial local table of the entry's start configuration beyond local memory); elsewhere
  // WORKGROUPLOCAL with a partial local table, which keeps the key's updates out of the global
  // table.
  const bool measured = entry_.level == plan_level::device || entry_.level == plan_level::architecture;
  if (hot >= hot_key_threshold && !measured && max_local_buckets() >= 2 && infeasibility(local(), false).empty()) {
    return local();
  }
  return shared();
}

inline std::vector<strategy_kind> query_planner::strategies_to_build() const {
  const bool dominant = profile_.hottest_key_share >= dominant_key_share;
  if (local_table_fits() && !(shape_.identity_scheme && dominant)) return {strategy_kind::workgroup_local};
  if ((profile_.hottest_key_share >= hot_key_threshold && max_local_buckets() >= 2) || partial_local_table()) {
    return {strategy_kind::shared, strategy_kind::workgroup_local};
  }
  return {strategy_kind::shared};
}

inline std::uint32_t query_planner::max_work_group_size(const kernel_variant& variant) const {
  const std::uint32_t limit = std::min(std::max<std::uint32_t>(limits_ ? limits_(variant) : device_.max_work_group_size, 1),
                                       std::max<std::uint32_t>(device_.max_work_group_size, 1));
  return static_cast<std::uint32_t>(detail::power_of_two_below(limit));
}

/// The per-device entry for a device: by name, then architecture, then vendor, else generic.
inline plan_entry query_planner::entry_for(const device_info& device) {
  const auto contains = [](const std::string& text, std::string_view part) {
    return !part.empty() && text.find(part) != std::string::npos;
  };
  for (const auto level : {plan_level::device, plan_level::architecture, plan_level::vendor}) {
    for (const auto& e : detail::plan_data::entries) {
      if (e.level != level) continue;
      const std::string& field = level == plan_level::device         ? device.name
                                 : level == plan_level::architecture ? device.architecture
                                                                     : device.vendor;
      if (contains(field, e.match)) return e;
    }
  }
  return {plan_level::generic, device.is_gpu ? "GPU" : "CPU",
          device.is_gpu ? std::span<const plan_regime>(detail::plan_data::generic_gpu)
                        : std::span<const plan_regime>(detail::plan_data::generic_cpu)};
}

inline std::string query_planner::infeasibility(const execution_params& params, bool strict) const {
  const auto& config = params.config;
  if (config.work_group_size == 0 || config.work_groups_per_cu == 0) return "empty thread configuration";
  if (!runs_work_group_size(config.work_group_size, kernel_variant{params.strategy})) {
    return "work group size " + std::to_string(config.work_group_size) + " exceeds the " +
           std::to_string(max_work_group_size(params.strategy)) + " that " + std::string(to_string(params.strategy)) +
           "'s kernel allows on " + device_.name;
  }
  if (total_threads(config) > (std::uint64_t{1} << 31)) return "more than 2^31 work items";
  // The strategy's own rule (its policy, strategy.hpp): whether its tables fit.
  return visit_strategy(params.strategy,
                        [&](auto policy) { return decltype(policy)::infeasibility(*this, config, strict); });
}

}  // namespace gpuagg
