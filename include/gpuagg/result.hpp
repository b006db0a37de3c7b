#pragma once
// What a query returns: the keys and one column per output, on the host or on the device,
// with statistics on how the query ran.

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "estimate.hpp"
#include "strategy.hpp"
#include "plan_data.hpp"
#include "runtime/opencl.hpp"

namespace gpuagg {

/// One block's AGGREGATE: its execution parameters and profiled time.
struct block_record {
  execution_params params;
  std::uint64_t rows = 0;
  double aggregate_seconds = 0;
  double partition_seconds = 0;  ///< PARTITION's kernels before it (0 when not partitioned)
  bool hot_table = false;        ///< SHARED with the hot-key table in local memory (kernels/shared.hpp)
  bool cold_queue = false;       ///< WORKGROUPLOCAL with the cold-row queue (kernels/workgroup_local.hpp)
  bool private_groups = false;   ///< four groups per work item in private variables (kernels/aggregate.hpp)
  bool perfect_local = false;    ///< WORKGROUPLOCAL with the perfect local table (kernels/workgroup_local.hpp)
  bool range_local = false;      ///< WORKGROUPLOCAL with the range local table (kernels/workgroup_local.hpp)
  bool serial = false;           ///< one work item a work group: plain local updates (kernel_variant::serial)
};

/// Host (wall-clock) time of a query's phases, from the driver's clock. They add up to about
/// wall_seconds; what is left is the caller's own time between the driver's calls (a tuner's
/// decisions). Where kernels overlap host work, a phase counts only the host's part.
struct host_phase_seconds {
  double sample = 0;    ///< the key sample: gather kernel (device input) and read
  double profile = 0;   ///< the sample's frequency count (estimate, hottest and frequent keys)
  double estimate = 0;  ///< the group estimate's later stages: sketches and their reads; the key range (direct_addressing)
  double plan = 0;      ///< set-up: the plan, with the kernel limits its making reads (their programs on first use)
  double programs = 0;  ///< set-up: program lookups (and JIT builds), kernels, their limits
  double buffers = 0;   ///< set-up: counters, table, spill area, staging; INITIALIZE's launch
  double enqueue = 0;   ///< per block: staging copies of host input, PARTITION and AGGREGATE launches
  double wait = 0;      ///< per block: waiting for AGGREGATE and its counters
  double growth = 0;    ///< table growths: rehash, merges and their counter reads
  double finalize = 0;  ///< FINALIZE: counters, result buffers, the launch, the result count (and copy)
  double dictionary = 0;  ///< keys wider than 64 bits: their dictionary, ids in and keys out

  double total() const {
    return sample + profile + estimate + plan + programs + buffers + enqueue + wait + growth + finalize + dictionary;
  }
};

/// How a query ran.
struct query_stats {
  std::string device;
  std::uint64_t rows = 0;
  std::uint64_t groups = 0;
  std::uint64_t expected_groups = 0;    ///< the hint, or the estimate (estimate.hpp)
  bool expected_groups_estimated = false;
  gpuagg::estimate_source estimate_source = gpuagg::estimate_source::none;  ///< where expected_groups came from
  double estimate_seconds = 0;          ///< profiled time of the estimate's sketch kernels
  gpuagg::plan_level plan_level = gpuagg::plan_level::generic;  ///< how specific the plan's per-device entry was
  bool scattered_keys = false;          ///< the sample's keys spread wider than a dense range (plan.hpp)
  /// The global table was addressed directly (direct_addressing): by the query's scheme, or by the
  /// plan over the key column's exact range (options::direct_table), whose smallest key and
  /// keys are key_range_lowest (the key's bits) and key_range_size.
  bool direct_addressing = false;
  std::uint64_t key_range_lowest = 0;
  std::uint64_t key_range_size = 0;
  /// The range's pass ran while the host profiled the key sample (query_planner::early_range_pass).
  bool range_pass_early = false;
  std::uint64_t table_capacity = 0;     ///< buckets of the final table
  unsigned table_growths = 0;           ///< times the table grew during the query
  std::uint64_t spilled_entries = 0;    ///< rows or partials merged after a growth
  std::uint64_t spill_capacity = 0;     ///< entries of the spill area (query_planner::spill_capacity)
  /// Times the query ran again because its spill area overflowed (query_planner::compact_spill):
  /// its time is in wall_seconds, its other figures are those of the run that finished.
  unsigned spill_restarts = 0;
  std::vector<block_record> blocks;     ///< every AGGREGATE launch, in order
  /// Host input: blocks whose copies to the device started before the set-up (sample, estimate,
  /// plan) and ran as the plan's first blocks (aggregation_driver::start_first_copies).
  unsigned early_copies = 0;
  /// Host input read where it lies, without copies (options::host_blocks_in_place).
  bool host_blocks_in_place = false;
  double aggregate_seconds = 0;         ///< sum of profiled AGGREGATE times
  double partition_seconds = 0;         ///< sum of profiled PARTITION times (tables larger than the cache)
  double initialize_seconds = 0;
  double merge_seconds = 0;             ///< growth: rehash and spill merges
  double finalize_seconds = 0;
  double setup_seconds = 0;             ///< host time of the set-up: sample, programs, table
  double wall_seconds = 0;              ///< host time from start to result
  host_phase_seconds host;              ///< wall_seconds by phase
  std::size_t programs_built = 0;       ///< JIT builds this query caused (0 when cached)
  std::uint64_t peak_device_bytes = 0;  ///< largest device memory held at once by the query
  /// The host result's columns were sized on a thread of their own while the device aggregated
  /// (runtime/readback.hpp: presized_result_rows), not after FINALIZE.
  bool result_presized = false;
  /// Host time FINALIZE spent on the result's columns before their copy: waiting for the thread
  /// that sized them (result_presized), or sizing them itself. Part of host.finalize.
  double result_sizing_seconds = 0;
  double dictionary_seconds = 0;        ///< keys wider than 64 bits: profiled time of the key dictionary
  unsigned dictionary_growths = 0;      ///< keys wider than 64 bits: times the key dictionary grew
  unsigned dictionary_launches = 0;     ///< keys wider than 64 bits: encode launches (rows left pending run again)
  std::uint64_t dictionary_keys = 0;    ///< keys wider than 64 bits: distinct key tuples the dictionary holds

  /// The strategy of the last block (the one a tuned query converged to).
  strategy_kind strategy() const { return blocks.empty() ? strategy_kind::shared : blocks.back().params.strategy; }
  /// Rows per second over the profiled AGGREGATE time.
  double aggregate_rows_per_second() const { return aggregate_seconds > 0 ? double(rows) / aggregate_seconds : 0; }
};

inline std::ostream& operator<<(std::ostream& os, const query_stats& s) {
  os << s.rows << " rows -> " << s.groups << " groups on " << s.device << "; " << s.blocks.size() << " blocks, last "
     << (s.blocks.empty() ? execution_params{} : s.blocks.back().params) << "; table " << s.table_capacity
     << " buckets, " << s.table_growths << " growths"
     << (s.spill_restarts ? ", run again after its spill area overflowed" : "") << "; groups planned " << s.expected_groups << " ("
     << s.estimate_source << "), plan entry " << to_string(s.plan_level) << (s.scattered_keys ? ", scattered keys" : "")
     << "; AGGREGATE " << s.aggregate_seconds * 1e3
     << " ms";
  return os;
}

/// The keys of a result with composite keys (keys(a, b, ...)): one vector per key column;
/// `keys[i]` is group i's key as a tuple, `keys.column<c>()` key column c.
template <class... K>
struct key_columns_of {
  std::tuple<std::vector<K>...> columns;

  std::size_t size() const noexcept { return std::get<0>(columns).size(); }
  void resize(std::size_t n) {
    std::apply([n](auto&... column) { (column.resize(n), ...); }, columns);
  }
  std::tuple<K...> operator[](std::size_t i) const {
    return std::apply([i](const auto&... column) { return std::tuple<K...>{column[i]...}; }, columns);
  }
  template <std::size_t I>
  const auto& column() const noexcept { return std::get<I>(columns); }
  template <std::size_t I>
  auto& column() noexcept { return std::get<I>(columns); }
  /// Key column c's elements (for copies).
  void* data(std::size_t c) {
    void* out = nullptr;
    std::size_t i = 0;
    std::apply([&](auto&... column) { ((out = i++ == c ? static_cast<void*>(column.data()) : out), ...); }, columns);
    return out;
  }
  /// Reorders every key column by `order` (group i takes group order[i]'s key).
  void permute(const std::vector<std::size_t>& order) {
    std::apply(
        [&](auto&... column) {
          ((void)[&] {
             auto copy = column;
             for (std::size_t i = 0; i < order.size(); ++i) column[i] = copy[order[i]];
           }(),
           ...);
        },
        columns);
  }
};

namespace detail {
template <class Key>
struct host_keys_of {
  using type = std::vector<Key>;
};
template <class... K>
struct host_keys_of<std::tuple<K...>> {
  using type = key_columns_of<K...>;
};
/// Key column c's elements of a result's keys.
template <class Key>
void* key_column_data(std::vector<Key>& keys, std::size_t) {
  return keys.data();
}
template <class... K>
void* key_column_data(key_columns_of<K...>& keys, std::size_t c) {
  return keys.data(c);
}
}  // namespace detail

/// Result on the host: `keys[i]` is the group of row i of every output column (a tuple for
/// composite keys, whose columns are keys.column<c>()).
template <class Key, class... Outputs>
struct result {
  typename detail::host_keys_of<Key>::type keys;
  std::tuple<std::vector<Outputs>...> columns;
  query_stats stats;

  std::size_t size() const noexcept { return keys.size(); }
  template <std::size_t I>
  const auto& column() const noexcept { return std::get<I>(columns); }
};

template <class Bound>
class aggregation_driver;

namespace detail {
struct device_result_access;
}  // namespace detail

/// Result left on the device: buffers of size() elements. `keys` is the (first) key column;
/// `key_columns` every key column (one for a single key).
template <class Key, class... Outputs>
struct device_result {
  cl::Buffer keys;
  std::vector<cl::Buffer> key_columns;
  std::tuple<decltype(sizeof(Outputs), cl::Buffer{})...> columns;
  query_stats stats;

  /// The groups, as result::size() (the buffers may be larger).
  std::size_t size() const noexcept { return size_; }
  template <std::size_t I>
  const cl::Buffer& column() const noexcept { return std::get<I>(columns); }

 private:
  template <class Bound>
  friend class aggregation_driver;  // FINALIZE sets the size
  friend struct detail::device_result_access;  // so does the wide keys' path (wide_keys.hpp)
  std::size_t size_ = 0;
};

/// A partial aggregate on the host: the groups of one table as their table words (`keys`) and
/// their accumulators, not yet finalized (an average is still a sum and a count). Partial
/// aggregates of several devices or processes over disjoint rows combine exactly: a driver
/// takes them in (aggregation_driver::absorb) and finalizes once. Bytes per group:
/// sizeof(Bits) + every accumulator's size.
template <class Bits, class... Accumulators>
struct partial_groups {
  std::vector<Bits> keys;
  std::tuple<std::vector<Accumulators>...> accumulators;

  std::size_t size() const noexcept { return keys.size(); }
  static constexpr std::size_t entry_bytes = sizeof(Bits) + (std::size_t{0} + ... + sizeof(Accumulators));
};

}  // namespace gpuagg
