#pragma once
// gpuagg: hash aggregation (SELECT g, aggregates... GROUP BY g) on GPUs through OpenCL,
// after Rosenfeld et al., "Performance Analysis and Automatic Tuning of Hash Aggregation on
// GPUs" (DaMoN 2019). This is the one header users include.
//
//   auto [a, b] = gpuagg::columns<2>;
//   auto q = gpuagg::select(gpuagg::sum(gpuagg::square(a - b)) / gpuagg::count());
//   auto r = gpuagg::group_by(g, gpuagg::values(a_column, b_column), q);
//   // r.keys[i], r.column<0>()[i]

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "aggregate.hpp"
#include "column.hpp"
#include "driver.hpp"
#include "error.hpp"
#include "expression.hpp"
#include "hash.hpp"
#include "key.hpp"
#include "launch_config.hpp"
#include "options.hpp"
#include "query.hpp"
#include "result.hpp"
#include "runtime/context.hpp"
#include "runtime/pinned.hpp"
#include "source.hpp"
#include "strategy.hpp"
#include "tuner.hpp"
#include "types.hpp"
#include "wide_keys.hpp"

namespace gpuagg {

/// The value columns of a query, by reference: `values(a, b)`.
template <column... Columns>
constexpr std::tuple<const Columns&...> values(const Columns&... cols) {
  return std::tuple<const Columns&...>(cols...);
}

/// Several key columns, by reference: `group_by(keys(returnflag, linestatus), ...)` groups by
/// their combination (GROUP BY a, b); the result has one key column per key
/// (result::keys.column<c>()). Columns whose bits together fit 64 pack into one key word
/// (packed_key, key.hpp) and work everywhere; wider ones (up to 4 x 64 bits) go through the key
/// dictionary (wide_keys.hpp) in group_by and group_by_on_device.
template <class... Columns>
struct key_columns_ref {
  std::tuple<const Columns&...> columns;
};
template <column... Columns>
constexpr key_columns_ref<Columns...> keys(const Columns&... cols) {
  static_assert(sizeof...(Columns) >= 1, "gpuagg: keys(...) needs a key column");
  return {std::tuple<const Columns&...>(cols...)};
}

namespace detail {
template <class K>
struct is_key_columns_ref : std::false_type {};
template <class... C>
struct is_key_columns_ref<key_columns_ref<C...>> : std::true_type {};
}  // namespace detail

/// What group_by takes as its keys: one column, or keys(a, b, ...).
template <class K>
concept key_input = column<K> || detail::is_key_columns_ref<std::remove_cvref_t<K>>::value;

namespace detail {

template <class T>
struct is_tuple : std::false_type {};
template <class... T>
struct is_tuple<std::tuple<T...>> : std::true_type {};

template <class Values>
decltype(auto) as_value_tuple(const Values& values) {
  if constexpr (is_tuple<Values>::value) {
    return (values);
  } else {
    return std::tuple<const Values&>(values);
  }
}

template <class KeyColumn>
struct key_policy_for {
  using key_value = column_element_t<KeyColumn>;
  static_assert(key_type<key_value>, "gpuagg: keys must be 8-, 16-, 32- or 64-bit integers (int8_t ... uint64_t)");
  using type = single_key<key_value>;
};
template <class Column>
struct key_policy_for<key_columns_ref<Column>> : key_policy_for<Column> {};
template <class... Columns>
struct key_policy_for<key_columns_ref<Columns...>> {
  static_assert((key_type<column_element_t<Columns>> && ...),
                "gpuagg: keys must be 8-, 16-, 32- or 64-bit integers (int8_t ... uint64_t)");
  static_assert(!wide_key_types<column_element_t<Columns>...>,
                "gpuagg: key columns wider than 64 bits together go through the key dictionary, which only "
                "group_by and group_by_on_device run; make_driver, tuned_group_by, several devices and MPI take "
                "key columns whose bits fit 64 (8- and 16-bit types pack tightly)");
  using type = packed_key<column_element_t<Columns>...>;
};

/// Whether group_by's keys are columns wider than 64 bits together (the key dictionary's path).
template <class K>
inline constexpr bool is_wide_key_input = false;
template <class... Columns>
inline constexpr bool is_wide_key_input<key_columns_ref<Columns...>> =
    (key_type<column_element_t<Columns>> && ...) && wide_key_types<column_element_t<Columns>...>;

template <class KeyInput, class Query, class ValueTuple>
struct bound_for;
template <class KeyInput, class Query, class... Columns>
struct bound_for<KeyInput, Query, std::tuple<Columns...>> {
  using type = bound_query<typename key_policy_for<KeyInput>::type, Query, column_element_t<Columns>...>;
};

template <class Key, class Tuple>
struct host_result_for;
template <class Key, class... Outputs>
struct host_result_for<Key, std::tuple<Outputs...>> {
  using type = result<Key, Outputs...>;
  /// The result's columns, sized on a thread while the driver's blocks run, where
  /// runtime/readback.hpp says so for the groups the driver planned for.
  template <class Driver>
  static std::unique_ptr<presized_result<type>> presize(const Driver& driver) {
    const std::uint64_t bytes_per_group = sizeof(Key) + (sizeof(Outputs) + ... + 0);
    return std::make_unique<presized_result<type>>(
        presized_result_rows(driver.device().architecture, driver.planned_groups(), bytes_per_group));
  }
  template <class Driver>
  static type finalize(Driver& driver, presized_result<type>* early = nullptr) {
    return driver.template finalize_to_host<Outputs...>(early);
  }
  /// Several drivers' merged groups, each finalizing the groups it owns (`owners[i]` owner i of
  /// owners.size(), detail/owner.hpp) into its rows of one result: `each(n, f)` runs f(0) ...
  /// f(n - 1) at once (multi_device/run.hpp: merge_by_owner).
  template <class Driver, class Each>
  static type finalize_owned(const std::vector<Driver*>& owners, presized_result<type>* early, Each&& each) {
    const auto parts = static_cast<std::uint32_t>(owners.size());
    std::vector<device_result<Key, Outputs...>> owned(parts);
    each(parts, [&](std::size_t i) {
      owned[i] = owners[i]->template finalize_owned<Outputs...>(parts, static_cast<std::uint32_t>(i));
    });
    std::vector<std::uint64_t> offset(parts + 1, 0);
    for (std::size_t i = 0; i < parts; ++i) offset[i + 1] = offset[i] + owned[i].size();
    type out;
    // Timed into a local: a presized result moved into `out` brings stats of its own.
    double sizing = 0;
    phase_clock clock(sizing);
    const bool presized = size_result(out, offset[parts], early);
    clock.stop();
    each(parts, [&](std::size_t i) { owners[i]->copy_owned_to_host(owned[i], out, offset[i]); });
    out.stats.groups = offset[parts];
    out.stats.result_presized = presized;
    out.stats.result_sizing_seconds = sizing;
    return out;
  }
  template <class Driver>
  static device_result<Key, Outputs...> finalize_on_device(Driver& driver) {
    return driver.template finalize_on_device<Outputs...>();
  }
};

template <class KeyColumn, class ValueTuple>
std::vector<column_data> column_list(const KeyColumn& keys, const ValueTuple& values) {
  std::vector<column_data> list{column_traits<std::remove_cvref_t<KeyColumn>>::data(keys)};
  const auto rest = column_data_of(values);
  list.insert(list.end(), rest.begin(), rest.end());
  return list;
}
template <class... KeyColumns, class ValueTuple>
std::vector<column_data> column_list(const key_columns_ref<KeyColumns...>& keys, const ValueTuple& values) {
  auto list = column_data_of(keys.columns);
  const auto rest = column_data_of(values);
  list.insert(list.end(), rest.begin(), rest.end());
  return list;
}

template <class Query, key_input KeyColumn, class Values>
auto make_driver(const KeyColumn& keys, const Values& values, const options& opts, bool restartable,
                 shared_estimate* shared = nullptr, direct_handover* handover = nullptr) {
  const auto& tuple = as_value_tuple(values);
  using bound = typename bound_for<KeyColumn, Query, std::remove_cvref_t<decltype(tuple)>>::type;
  if constexpr (bound::scheme::is_identity) {
    // The domain's bounds may be any integers; only here is the key type they must fit known.
    if (opts.domain) opts.domain->check<typename bound::key::domain_type>();
  }
  context& ctx = opts.ctx ? *opts.ctx : default_context();
  return std::make_unique<aggregation_driver<bound>>(ctx, opts, column_list(keys, tuple), restartable, shared,
                                                     handover);
}

/// Runs one query through `attempt(restartable)` (make a driver, run it, finish its result):
/// first with a spill area sized for the table (query_planner::compact_spill), and, should that
/// overflow, once more with one that holds every row in flight. The result's stats are the
/// second run's, with the restart counted and the first run's time in wall_seconds.
template <class Attempt>
auto with_spill_restart(Attempt&& attempt) {
  try {
    return attempt(true);
  } catch (const spill_overflow& overflow) {
    auto again = attempt(false);
    again.stats.spill_restarts += 1;
    again.stats.wall_seconds += overflow.seconds;
    return again;
  }
}

}  // namespace detail

/// The driver of one query, for stepping block by block (the tuner, benchmarks, several devices).
/// It reads the columns as it runs, after this call returns: they must outlive the driver. Its
/// spill area holds every row in flight: a driver the caller steps cannot be run again.
template <class Query, key_input KeyColumn, class Values>
auto make_driver(const KeyColumn& keys, const Values& values, Query, const options& opts = {}) {
  return detail::make_driver<Query>(keys, values, opts, false);
}

/// A temporary std::vector would be gone before the driver reads it: not allowed.
template <class Query, class T, class A, class Values>
auto make_driver(std::vector<T, A>&& keys, const Values&, Query, const options& = {}) {
  static_assert(detail::always_false<T>,
                "gpuagg::make_driver: the driver reads its columns after this call returns; pass a key column that "
                "outlives it, not a temporary");
  return keys.size();
}
template <class Query, column KeyColumn, class T, class A>
auto make_driver(const KeyColumn&, std::vector<T, A>&& values, Query, const options& = {}) {
  static_assert(detail::always_false<T>,
                "gpuagg::make_driver: the driver reads its columns after this call returns; pass a value column "
                "that outlives it, not a temporary");
  return values.size();
}

/// A result with the tuning report of the query that produced it.
template <class Result>
struct tuned {
  Result result;
  tuning_report report;
};

namespace detail {

inline std::uint64_t fnv1a(std::string_view text, std::uint64_t hash = 0xcbf29ce484222325ULL) {
  for (const unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ULL;
  return hash;
}

/// What the tuner's cache keys on: device, driver, the query's shape (a hash of everything
/// the query contributes to its program), key type, log2 of the groups planned for.
template <class Driver>
tuning_key tuning_key_for(const Driver& driver) {
  using bound = typename Driver::bound_type;
  const auto shape = fnv1a(bound::cl_source.view(), fnv1a(bound::scheme::name.view(), fnv1a(bound::key::cl_source.view())));
  std::ostringstream query;
  query << bound::output_count << " outputs over " << bound::value_count << " columns, " << bound::scheme::name.view()
        << ", shape " << std::hex << shape;
  std::string key_name(bound::key::name.view());
  return {driver.device().name, driver.device().driver_version, query.str(), key_name,
          tuning_key::log2_groups(driver.planned_groups())};
}

/// Runs every block: with the caller's strategy/configuration if given; else tuned online from
/// the plan's start where the plan says so (query_planner::tuning: enough blocks, and a
/// per-device model that is not sure for this query; `forced`: always), else with the plan's
/// choice. The search measures blocks of the plan's tuning size and hands the rest of the input
/// to the driver in its large blocks.
template <tuner_params Params, class Driver>
std::optional<tuning_report> run_query(Driver& driver, const options& opts, bool forced = false) {
  if (opts.strategy || opts.config) {
    const auto strategy = opts.strategy.value_or(driver.default_params().strategy);
    driver.run_remaining(execution_params{strategy, opts.config.value_or(driver.initial_config(strategy))});
    return std::nullopt;
  }
  const tuning_plan tuning = driver.plan().tuning(forced);
  if (tuning.enabled) {
    tuner<Params> t{search_space{.max_work_group_size = driver.max_work_group_size()}};
    // tuner::run leaves no block behind: it hands the rest to run_remaining(winner), returns
    // unconverged only when its budget ran out, and throws when nothing is feasible.
    return t.run(driver, tuning.starts, tuning_key_for(driver), search_bounds{tuning.block_budget, tuning.scan});
  }
  driver.run_remaining();
  return std::nullopt;
}

/// Whether the plan may run a query with direct addressing over its key column's exact range
/// (query_planner::direct_domain): a hash scheme over one integer key column.
template <class Query, class KeyColumn>
inline constexpr bool may_address_directly =
    !Query::scheme::is_identity && key_policy_for<KeyColumn>::type::columns == 1;

/// Whether the plan may run a query with direct addressing over its packed key columns' exact
/// box (query_planner::direct_box): a hash scheme over 2 to 4 key columns packed into one word.
template <class Query, class KeyColumn>
inline constexpr bool may_address_box =
    !Query::scheme::is_identity && key_policy_for<KeyColumn>::type::columns > 1 && !is_wide_key_input<KeyColumn>;

/// options::domain for direct addressing over `range`, words of key policy `Key`.
template <class Key>
key_domain domain_over(const exact_key_range& range) {
  using bits = typename Key::bits_type;
  return key_domain(Key::from_bits(static_cast<bits>(range.lowest)),
                    Key::from_bits(static_cast<bits>(range.lowest + range.extent)));
}

/// options::domain for direct addressing where a set-up handed over: the key column's range,
/// or the packed key columns' box.
template <class Key>
key_domain domain_over(const direct_handover& handover) {
  if constexpr (Key::columns == 1) {
    return domain_over<Key>(*handover.range);
  } else {
    return key_domain::of_box(handover.range->lowest, handover.range->keys(), handover.box_spans);
  }
}

/// Runs a driver the plan's way (tuned where it says so) and finishes its result.
template <bool on_device, class Driver>
auto run_and_finish(Driver& driver, const options& opts) {
  using bound = typename Driver::bound_type;
  using finisher = host_result_for<typename bound::key::value_type, typename bound::output_tuple>;
  if constexpr (on_device) {
    run_query<tuner_params{}>(driver, opts);
    return finisher::finalize_on_device(driver);
  } else {
    const auto early = finisher::presize(driver);
    run_query<tuner_params{}>(driver, opts);
    return finisher::finalize(driver, early.get());
  }
}

/// group_by's and group_by_on_device's query on one device: run as the plan says (tuned where
/// it says so; with direct addressing over the key column's exact range, or the key columns'
/// exact box, where the plan takes it), its result copied to the host or left on the device
/// (`on_device`), and run again with a spill area for every row in flight should the plan's
/// smaller one overflow.
template <class Query, bool on_device, class KeyColumn, class Values>
auto run_default_query(const KeyColumn& keys, const Values& values, const options& opts) {
  return with_spill_restart([&](bool restartable) {
    direct_handover handover;
    constexpr bool may_switch = may_address_directly<Query, KeyColumn> || may_address_box<Query, KeyColumn>;
    auto driver = make_driver<Query>(keys, values, opts, restartable, nullptr, may_switch ? &handover : nullptr);
    if constexpr (may_switch) {
      if (driver->handed_over()) {
        driver.reset();
        options direct = opts;
        direct.domain = domain_over<typename key_policy_for<KeyColumn>::type>(handover);
        auto addressed =
            make_driver<typename direct_query_of<Query>::type>(keys, values, direct, restartable, nullptr, &handover);
        return run_and_finish<on_device>(*addressed, direct);
      }
    }
    return run_and_finish<on_device>(*driver, opts);
  });
}

}  // namespace detail

/// SELECT keys, outputs... GROUP BY keys: the result on the host.
/// `values`: one column or values(c0, c1, ...); columns are std::vector, std::span or
/// device_column (all on the host or all on the device).
template <class Query, key_input KeyColumn, class Values>
auto group_by(const KeyColumn& keys, const Values& values, Query query, const options& opts = {}) {
  if constexpr (detail::is_wide_key_input<KeyColumn>) {
    return detail::wide_group_by(keys.columns, detail::as_value_tuple(values), opts,
                                 [](const auto& ids, const auto& vals, const options& by_id) {
                                   return group_by(ids, vals, typename detail::query_over_ids<Query>::type{}, by_id);
                                 });
  } else {
    (void)query;
    return detail::run_default_query<Query, false>(keys, values, opts);
  }
}

/// As group_by, always tuned with Algorithm 1 configured by `Params` (unless the caller fixes
/// the strategy or configuration), returning the tuning report with the result.
template <tuner_params Params = tuner_params{}, class Query, key_input KeyColumn, class Values>
auto tuned_group_by(const KeyColumn& keys, const Values& values, Query query, const options& opts = {}) {
  auto driver = make_driver(keys, values, query, opts);
  using bound = typename std::remove_reference_t<decltype(*driver)>::bound_type;
  using finisher = detail::host_result_for<typename bound::key::value_type, typename bound::output_tuple>;
  const auto early = finisher::presize(*driver);
  auto report = detail::run_query<Params>(*driver, opts, /*forced=*/true);
  auto r = finisher::finalize(*driver, early.get());
  return tuned<decltype(r)>{std::move(r), report.value_or(tuning_report{})};
}

/// As group_by, with the result left in device buffers.
template <class Query, key_input KeyColumn, class Values>
auto group_by_on_device(const KeyColumn& keys, const Values& values, Query query, const options& opts = {}) {
  if constexpr (detail::is_wide_key_input<KeyColumn>) {
    return detail::wide_group_by(keys.columns, detail::as_value_tuple(values), opts,
                                 [](const auto& ids, const auto& vals, const options& by_id) {
                                   return group_by_on_device(ids, vals,
                                                             typename detail::query_over_ids<Query>::type{}, by_id);
                                 });
  } else {
    (void)query;
    return detail::run_default_query<Query, true>(keys, values, opts);
  }
}

}  // namespace gpuagg
