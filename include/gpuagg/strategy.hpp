#pragma once
// Parallelization strategies (section 2.2) as policies. Each owns what makes it itself: its
// name and the paper's initial configuration (section 4.1), its AGGREGATE kernel's OpenCL body
// (kernels/<strategy>.hpp), the rule that says whether a plan can run it (feasibility), and the
// kernel arguments it adds to the ones every AGGREGATE takes. Code that must act on a strategy
// chosen at run time asks visit_strategy() for its policy: that switch is the only one.

#include <concepts>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "detail/bits.hpp"
#include "detail/fixed_string.hpp"
#include "kernels/independent.hpp"
#include "kernels/shared.hpp"
#include "kernels/workgroup_local.hpp"
#include "launch_config.hpp"

namespace gpuagg {

// What a policy's aggregate_args() asks of the query it serves (the driver):
//   query.plan()                    the query_planner (plan.hpp)
//   Query::identity_scheme          direct addressing (no keys in its tables)
//   Query::key_bytes                the table's key word
//   Query::accumulator_bytes(j)     accumulator j's size
//   Query::aggregate_count
//   query.hot_keys_buffer()         the sample's frequent keys on the device (SHARED's hot-key table)
//   query.perfect_local_buffer()    the perfect local table's keys and displacements on the device
//   query.private_tables(buckets)   INDEPENDENT's private tables of at least `buckets` buckets
//   query.box_spans()               direct addressing over a box: every table's `bits` (hash.hpp)

/// SHARED: every work item updates the one global table with atomics. Always feasible.
struct shared_strategy {
  static constexpr strategy_kind kind = strategy_kind::shared;
  static constexpr std::string_view name = "SHARED";
  static constexpr launch_config paper_initial_config{1, 512};
  static constexpr auto cl_source = detail::kernels::aggregate_shared;

  template <class Plan>
  static std::string infeasibility(const Plan&, const launch_config&, bool) {
    return {};
  }

  /// The hot-key table's parameters, in the variant built with it.
  template <class Query, class Variant>
  static auto aggregate_args(Query& query, const execution_params&, const Variant& variant) {
    detail::kernels::shared_args<typename Query::buffer_type> args;
    if (variant.hot_table) {
      const std::uint32_t capacity = query.plan().hot_keys().capacity;
      const std::uint64_t slots = std::uint64_t{capacity} + 1;
      auto& hot = args.hot_table.emplace();
      hot.keys = query.hot_keys_buffer();
      hot.count = static_cast<std::uint32_t>(query.plan().hot_keys().keys);
      hot.bits = detail::log2_exact(capacity);
      hot.capacity = capacity;
      hot.local_keys = {slots * Query::key_bytes};
      for (std::size_t j = 0; j < Query::aggregate_count; ++j) {
        hot.local_accumulators.push_back({slots * Query::accumulator_bytes(j)});
      }
      hot.local_used = {slots * sizeof(std::uint32_t)};
    }
    return args;
  }
};

/// INDEPENDENT: every work item aggregates into a private table in global memory, merged into
/// the global table at the end of the block.
struct independent_strategy {
  static constexpr strategy_kind kind = strategy_kind::independent;
  static constexpr std::string_view name = "INDEPENDENT";
  static constexpr launch_config paper_initial_config{1, 256};
  static constexpr auto cl_source = detail::kernels::aggregate_independent;

  /// The private tables of every work item must fit the plan's budget: strictly, with room for
  /// every group planned; else with at least two buckets (rows they cannot hold go to the
  /// global table).
  template <class Plan>
  static std::string infeasibility(const Plan& plan, const launch_config& config, bool strict) {
    const auto fits = plan.max_private_buckets(config);
    if (strict ? fits >= plan.small_table_buckets() : fits >= 2) return {};
    return "private tables of " + std::to_string(plan.small_table_buckets()) + " buckets for " +
           std::to_string(plan.total_threads(config)) + " work items exceed the budget of " +
           std::to_string(plan.private_budget()) + " bytes";
  }

  template <class Query, class Variant>
  static auto aggregate_args(Query& query, const execution_params& params, const Variant&) {
    const auto& plan = query.plan();
    const auto buckets = plan.private_capacity(params.config);
    detail::kernels::independent_args<typename Query::buffer_type> args;
    args.private_tables = query.private_tables(plan.total_threads(params.config) * (buckets + 1));
    args.bits = Query::identity_scheme ? query.box_spans() : detail::log2_exact(buckets);
    args.capacity = static_cast<std::uint32_t>(buckets);
    return args;
  }
};

/// WORKGROUPLOCAL: the work items of a work group share a table in local memory, merged into
/// the global table at the end of the block.
struct workgroup_local_strategy {
  static constexpr strategy_kind kind = strategy_kind::workgroup_local;
  static constexpr std::string_view name = "WORKGROUPLOCAL";
  static constexpr launch_config paper_initial_config{4, 512};
  static constexpr auto cl_source = detail::kernels::aggregate_workgroup_local;

  /// The local table must fit local memory: strictly, with room for every group planned; else
  /// with at least two buckets (rows it cannot hold go to the global table).
  template <class Plan>
  static std::string infeasibility(const Plan& plan, const launch_config&, bool strict) {
    const auto fits = plan.max_local_buckets();
    if (strict ? plan.local_table_fits() : fits >= 2 || plan.range_local()) return {};
    return "a local table of " + std::to_string(plan.small_table_buckets()) + " buckets (" +
           std::to_string(plan.table_layout_bytes(plan.small_table_buckets(), 1)) + " bytes) exceeds local memory (" +
           std::to_string(plan.device().local_mem_bytes) + " bytes)";
  }

  /// The local table (`copies` interleaved copies of `capacity` buckets and the EMPTY_KEY
  /// bucket), the perfect local table's keys and displacements and the cold-row queue in the
  /// variants built with them.
  template <class Query, class Variant>
  static auto aggregate_args(Query& query, const execution_params& params, const Variant& variant) {
    const auto& plan = query.plan();
    const auto& config = params.config;
    const std::uint64_t buckets = plan.local_capacity();
    const std::uint64_t copies = plan.local_table_copies(config);
    const std::uint64_t entries = (buckets + 1) * copies;
    detail::kernels::workgroup_local_args<typename Query::buffer_type, typename Query::bits_type> args;
    // Keys, or for direct addressing a bitmap of the entries in use (table_layout_bytes), or the
    // perfect local table's keys once and a bitmap of its own (local_table_bytes).
    args.keys = {Query::identity_scheme || variant.range_local ? (entries + 31) / 32 * 4
                 : variant.perfect_local                          ? buckets * Query::key_bytes
                                                                  : entries * Query::key_bytes};
    if (variant.range_local) {
      args.range = {static_cast<typename Query::bits_type>(plan.range_local()->box.lowest), plan.range_local()->spans()};
    }
    if (variant.perfect_local) {
      const auto& hash = *plan.perfect_local();
      auto& perfect = args.perfect.emplace();
      perfect.keys = query.perfect_local_buffer();
      perfect.group_mask = hash.group_mask();
      perfect.seed = hash.seed;
      perfect.used = {(entries + 31) / 32 * 4};
      perfect.local_displacements = {hash.displacements.size() * 4};
    }
    for (std::size_t j = 0; j < Query::aggregate_count; ++j) {
      args.accumulators.push_back({entries * Query::accumulator_bytes(j)});
    }
    args.bits = Query::identity_scheme ? query.box_spans()
                : variant.range_local      ? 0
                                           : detail::log2_exact(buckets);
    args.capacity = static_cast<std::uint32_t>(buckets);
    args.copies = static_cast<std::uint32_t>(copies);
    if (variant.cold_queue) {
      const std::uint32_t rows = plan.cold_rows_per_item(config);
      const std::uint64_t queued = std::uint64_t{config.work_group_size} * rows;
      args.cold_queue = detail::kernels::cold_queue_args{{queued * Query::key_bytes}, {queued * sizeof(std::uint32_t)},
                                                         rows};
    }
    return args;
  }
};

template <class S>
concept strategy_policy = requires {
  { S::kind } -> std::convertible_to<strategy_kind>;
  { S::name } -> std::convertible_to<std::string_view>;
  { S::paper_initial_config } -> std::convertible_to<launch_config>;
  S::cl_source.view();
};

/// Calls `f` with the policy of a strategy chosen at run time: f(shared_strategy{}) and so on.
template <class F>
constexpr decltype(auto) visit_strategy(strategy_kind kind, F&& f) {
  switch (kind) {
    case strategy_kind::independent: return f(independent_strategy{});
    case strategy_kind::workgroup_local: return f(workgroup_local_strategy{});
    case strategy_kind::shared: break;
  }
  return f(shared_strategy{});
}

constexpr std::string_view to_string(strategy_kind kind) noexcept {
  return visit_strategy(kind, [](auto policy) { return decltype(policy)::name; });
}

/// Section 4.1, "Initial thread configurations": the configurations with the lowest normalized
/// runtime averaged over the paper's GPUs and group cardinalities (before clamping to a device).
constexpr launch_config paper_initial_config(strategy_kind kind) noexcept {
  return visit_strategy(kind, [](auto policy) { return decltype(policy)::paper_initial_config; });
}

inline std::ostream& operator<<(std::ostream& os, strategy_kind kind) { return os << to_string(kind); }

inline std::ostream& operator<<(std::ostream& os, const execution_params& params) {
  return os << params.strategy << ' ' << params.config;
}

}  // namespace gpuagg
