#pragma once
// The plan: every decision about how one query runs, made here and nowhere else, as pure
// functions of the device's description (device_info), the query's shape, the input's profile
// (rows, where they live, the estimated groups, the key sample's skew) and the options. No
// OpenCL: a test describes a device and asks. The driver executes what the plan decides; the
// tuner refines the plan's strategy and thread configuration block by block where the plan's
// per-device model (plan_data.hpp) is not sure.
//
// What is decided where (each a member of query_planner):
//   how big a table           table_capacity_for, initial_table_capacity, grown_capacity
//   its layout                interleaved, partitions
//   how big a block           block_rows, tuning_block_rows
//   which strategy and        default_params (section 3.7 and the skew rules), the entry's
//   thread configuration      configurations (plan_data.hpp), infeasibility
//   what a kernel gets        run_cache, hot_table, cold_queue, local_table_copies,
//                             local_capacity, private_capacity, cold_rows_per_item, hot_keys
//   whether to tune           tuning

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "device_info.hpp"
#include "error.hpp"
#include "estimate.hpp"
#include "launch_config.hpp"
#include "options.hpp"
#include "plan_data.hpp"

namespace gpuagg {

/// The query as the plan sees it: sizes from the bound query's types.
struct query_shape {
  std::uint32_t key_bytes = 4;                  ///< the table's key word
  std::uint32_t bucket_bytes = 12;              ///< key + accumulators
  std::uint32_t interleaved_bucket_bytes = 16;  ///< a record of key and accumulators (interleavable)
  bool interleavable = true;                    ///< every accumulator one size
  bool identity_scheme = false;                 ///< direct addressing: no keys, a domain
  std::uint64_t domain_size = 0;                ///< direct addressing's keys
  std::uint32_t widest_column_bytes = 4;        ///< the widest input column's element

  /// The shape of bound query `Bound` (query.hpp) with input columns `widest` bytes wide.
  template <class Bound>
  static query_shape of(std::uint32_t widest, std::uint64_t domain_size = 0) {
    return {static_cast<std::uint32_t>(sizeof(typename Bound::key::bits_type)),
            static_cast<std::uint32_t>(Bound::bucket_bytes),
            static_cast<std::uint32_t>(Bound::interleaved_bucket_bytes),
            Bound::interleavable,
            Bound::scheme::is_identity,
            domain_size,
            widest};
  }
};

/// The input as the plan sees it.
struct input_profile {
  std::uint64_t rows = 0;
  bool on_device = false;
  std::uint64_t expected_groups = 1;  ///< the hint, the domain's size or the estimate
  estimate_source source = estimate_source::none;
  bool sampled = false;               ///< the key sample was taken (skew is known)
  double hottest_key_share = 0;       ///< the sample's most frequent key's share of it
  double runs_share = 0;              ///< the sample's rows whose right neighbour has their key
  /// The sample's frequent keys' counts, most frequent first (detail::sample_profile), and the
  /// sample's size: they decide the hot-key table.
  std::vector<std::uint32_t> frequent_counts;
  std::size_t sample_size = 0;
};

/// An AGGREGATE program variant: a strategy, built with or without the run cache, the hot-key
/// table and the cold-row queue (kernels.inc: GPUAGG_RUN_CACHE, GPUAGG_HOT_TABLE,
/// GPUAGG_COLD_QUEUE). Each has its own work-group limit.
struct kernel_variant {
  strategy_kind strategy = strategy_kind::shared;
  bool run_cache = false;
  bool hot_table = false;
  bool cold_queue = false;

  static constexpr std::size_t count = 24;
  constexpr std::size_t index() const noexcept {
    return static_cast<std::size_t>(strategy) * 8 + (run_cache ? 1 : 0) + (hot_table ? 2 : 0) + (cold_queue ? 4 : 0);
  }
};

/// The hot-key table's size (hot_keys): `keys` of the sample's most frequent keys in a table of
/// `capacity` buckets (a power of two, at most half full), holding `share` of the sample.
struct hot_table_plan {
  std::uint32_t capacity = 0;
  std::size_t keys = 0;
  double share = 0;
};

/// Whether and how the tuner refines the plan online.
struct tuning_plan {
  bool enabled = false;
  std::size_t block_rows = 0;    ///< rows of each block the tuner measures
  std::size_t block_budget = 0;  ///< blocks the search may spend before the rest runs its best
  std::vector<execution_params> starts;  ///< the search's initial configurations, plan's first
  bool scan = true;              ///< scan each start's row (off where the start was measured)
};

/// The plan of one query. Construct it with what is known before the first block; the driver
/// tells it the groups the table holds as the query runs (observe_groups), which the sizes of
/// local and private tables follow.
class query_planner {
 public:
  /// The work-group limit of an AGGREGATE variant's kernel on the device (the runtime builds the
  /// variant to ask; a test gives a function).
  using kernel_limit_fn = std::function<std::uint32_t(const kernel_variant&)>;

  query_planner(device_info device, query_shape shape, input_profile profile, options opts, kernel_limit_fn limits)
      : device_(std::move(device)),
        shape_(shape),
        profile_(std::move(profile)),
        opts_(opts),
        limits_(std::move(limits)),
        planned_groups_(std::max<std::uint64_t>(profile_.expected_groups, 1)),
        entry_(entry_for(device_)) {
    opts_.ctx = nullptr;  // the plan never reaches the runtime
    hot_ = plan_hot_table();
  }

  const device_info& device() const noexcept { return device_; }
  const query_shape& shape() const noexcept { return shape_; }
  const input_profile& profile() const noexcept { return profile_; }
  const options& opts() const noexcept { return opts_; }
  /// The per-device entry the configurations come from, and how specific it is.
  const plan_entry& entry() const noexcept { return entry_; }

  /// The groups planned for: the hint or estimate, or what the table already holds if more.
  std::uint64_t planned_groups() const noexcept { return planned_groups_; }
  void observe_groups(std::uint64_t groups) noexcept { planned_groups_ = std::max(planned_groups_, groups); }

  // ---- the table ----------------------------------------------------------------------------

  /// Buckets for `groups` at the load factor: a power of two, at least 16.
  std::uint64_t table_capacity_for(std::uint64_t groups) const {
    const auto capacity = capacity_for(groups);
    if (capacity > (std::uint64_t{1} << 31)) {
      throw out_of_memory_error(capacity * shape_.bucket_bytes, device_.max_alloc_bytes,
                                "a table of " + std::to_string(capacity) + " buckets (more than 2^31)");
    }
    return capacity;
  }

  /// The first table: the domain (direct addressing), else sized for the planned groups.
  std::uint64_t initial_table_capacity() const {
    return shape_.identity_scheme ? shape_.domain_size : table_capacity_for(sizing_groups());
  }

  /// The groups tables are sized for: the planned groups, except that an estimate within its
  /// error (estimate_tolerance) above a power-of-two table size rounds down to it: a table sized
  /// for 1031 groups when 1024 are there is twice as large, and a local table no longer fits.
  std::uint64_t sizing_groups() const {
    const bool estimated = profile_.source == estimate_source::sample || profile_.source == estimate_source::sketch ||
                           profile_.source == estimate_source::full_sketch ||
                           profile_.source == estimate_source::extrapolated;
    if (!estimated || planned_groups_ != profile_.expected_groups) return planned_groups_;
    return std::max<std::uint64_t>(
        1, static_cast<std::uint64_t>(std::ceil(double(planned_groups_) / (1.0 + detail::estimate_tolerance))));
  }

  /// The table after a growth: room for the groups it holds and the new groups the spill area
  /// brings (`spilled_groups`: the spill area's distinct keys, estimated; at most its rows), at
  /// least twice the old one. Sizing by the spill area's rows instead would leave the table many
  /// times too large when one large block's rows all spill.
  std::uint64_t grown_capacity(std::uint64_t groups, std::uint64_t spilled_groups, std::uint64_t current) const {
    return std::max(table_capacity_for(groups + spilled_groups), current * 2);
  }

  /// Whether the global table keeps a bucket's key and accumulators in one record: options'
  /// `interleaved_table`, else for hash tables of more than interleave_min_buckets (on the
  /// H100, with 50 MB of L2, interleaving lost up to 2^22 buckets: a key read no longer hits
  /// L1 once atomics on its record's line invalidate it there; it won from 2^24). Direct
  /// addressing keeps its bitmap and arrays; accumulators of different sizes keep arrays.
  bool interleaved(std::uint64_t capacity) const {
    if (shape_.identity_scheme || !shape_.interleavable) {
      if (opts_.interleaved_table.value_or(false)) {
        throw invalid_argument_error(shape_.identity_scheme
                                         ? "interleaved_table: direct addressing keeps no keys to interleave"
                                         : "interleaved_table needs accumulators of one size");
      }
      return false;
    }
    return opts_.interleaved_table.value_or(capacity > interleave_min_buckets);
  }
  static constexpr std::uint64_t interleave_min_buckets = std::uint64_t{1} << 23;

  /// Bytes the kernels touch in a table of `buckets` buckets (and the EMPTY_KEY bucket) in
  /// `copies` copies, local or global: keys and accumulators, or for direct addressing
  /// (kernels.inc: GPUAGG_DENSE_TABLE) accumulators and a bitmap of the entries in use.
  std::uint64_t table_layout_bytes(std::uint64_t buckets, std::uint64_t copies) const {
    const std::uint64_t entries = (buckets + 1) * copies;
    if (shape_.identity_scheme) {
      return entries * (shape_.bucket_bytes - shape_.key_bytes) + (entries + 31) / 32 * 4;
    }
    return entries * shape_.bucket_bytes;
  }

  /// PARTITION's runs for a block of `rows` rows over a global table of `capacity` buckets (1:
  /// none): options' `partitions`, else by the bytes the rows touch, for blocks of at least
  /// 2^16 rows: 8 runs for tables of 40 to 128 MiB, 32 up to 3 GiB; none for smaller
  /// tables (they stay in a 50 MB L2) or larger ones (runs of a region no longer fit it either).
  /// At most one run per bucket.
  std::uint32_t partitions(std::uint64_t rows, std::uint64_t capacity, bool interleaved_layout) const {
    std::uint64_t parts = opts_.partitions;
    if (parts == 0) {
      const std::uint64_t bytes =
          shape_.identity_scheme ? table_layout_bytes(capacity, 1)
                                 : (capacity + 1) * (interleaved_layout ? shape_.interleaved_bucket_bytes
                                                                        : shape_.bucket_bytes);
      parts = rows < (std::uint64_t{1} << 16) || bytes <= (std::uint64_t{40} << 20) ? 1
              : bytes <= (std::uint64_t{128} << 20)                                  ? 8
              : bytes <= (std::uint64_t{3} << 30)                                    ? 32
                                                                                     : 1;
    }
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(parts, capacity));
  }

  // ---- blocks -------------------------------------------------------------------------------

  /// Rows per block, per the widest column: options' `block_bytes`; else 16 MiB for host input
  /// (section 2.1: large enough to hide a launch, small enough to overlap the next transfer); for
  /// device input large blocks (fewer launches and per-work-group merges), up to 256 MiB as long
  /// as the spill area of the blocks in flight stays within min(1 GiB, 1/32 of device memory).
  std::size_t block_rows() const {
    const std::uint64_t widest = std::max<std::uint32_t>(shape_.widest_column_bytes, 1);
    if (opts_.block_bytes) return static_cast<std::size_t>(std::max<std::uint64_t>(*opts_.block_bytes / widest, 1));
    if (!profile_.on_device) return static_cast<std::size_t>((std::uint64_t{16} << 20) / widest);
    const std::uint64_t spill_budget = std::min<std::uint64_t>(std::uint64_t{1} << 30, device_.global_mem_bytes / 32);
    const std::uint64_t by_spill = spill_budget / (std::uint64_t{shape_.bucket_bytes} * window());
    return static_cast<std::size_t>(std::max<std::uint64_t>(
        std::min<std::uint64_t>((std::uint64_t{256} << 20) / widest, by_spill), std::uint64_t{1} << 20));
  }

  /// Rows of each block the tuner measures: the 16 MiB blocks the paper tunes with (section 3.1),
  /// for device input too, where they are slices of the large blocks (blocks are a unit of
  /// tuning there, not of residence); never more than block_rows.
  std::size_t tuning_block_rows() const {
    const std::uint64_t widest = std::max<std::uint32_t>(shape_.widest_column_bytes, 1);
    const std::uint64_t slice =
        opts_.tuning_block_bytes ? *opts_.tuning_block_bytes / widest
        : opts_.block_bytes      ? *opts_.block_bytes / widest
                                 : (std::uint64_t{16} << 20) / widest;
    return static_cast<std::size_t>(std::clamp<std::uint64_t>(slice, 1, block_rows()));
  }

  std::size_t window() const noexcept { return std::max<std::size_t>(opts_.blocks_in_flight, 1); }

  // ---- strategy and thread configuration ------------------------------------------------------

  /// The entry's regime for the current table: the first whose bound holds the table's bytes as
  /// the recorded query's group count (plan_regime::max_table_log2).
  const plan_regime& regime() const {
    const double buckets = shape_.identity_scheme ? double(shape_.domain_size) : double(capacity_for(sizing_groups()));
    const double equivalent = buckets * shape_.bucket_bytes / (2.0 * recorded_bucket_bytes);  // the recorded query's groups
    const int log2 = equivalent <= 1 ? 0 : static_cast<int>(std::ceil(std::log2(equivalent) - 1e-9));
    for (const auto& r : entry_.regimes) {
      if (log2 <= r.max_table_log2) return r;
    }
    return entry_.regimes.back();
  }

  /// The configuration the plan starts a strategy with: the entry's for the regime, its runs
  /// configuration where the sample shows runs of equal keys (runs_share; neighbouring work
  /// items then update one bucket, and fewer of them contend), INDEPENDENT the paper's initial
  /// configuration (section 4.1); its work groups halved until the kernel runs them.
  launch_config initial_config(strategy_kind strategy) const {
    const plan_regime& r = regime();
    const bool runs = profile_.runs_share >= runs_min_share;
    launch_config config = strategy == strategy_kind::workgroup_local ? (runs ? r.workgroup_local_runs : r.workgroup_local)
                           : strategy == strategy_kind::shared        ? (runs ? r.shared_runs : r.shared)
                                                                      : paper_initial_config(strategy);
    const auto limit = max_work_group_size(strategy);
    while (config.work_group_size > limit && config.work_group_size > 1) {
      // Keep the threads per compute unit: the shape matters less than the count (section 3.3).
      config.work_group_size /= 2;
      config.work_groups_per_cu *= 2;
    }
    return config;
  }

  /// The strategy without tuning (section 3.7): WORKGROUPLOCAL while its local table holds every
  /// group, else SHARED. Beyond the paper, for skewed keys (the sample's hottest key):
  /// - one key holding 1/16 or more of the rows: WORKGROUPLOCAL with a local table smaller than
  ///   the groups, which absorbs the hot key's updates in local memory and sends the rest to the
  ///   global table (SHARED's atomics on one bucket serialize);
  /// - several frequent keys (the hot-key table, hot_table): SHARED with that table;
  /// - direct addressing with a dominant key: SHARED with the run cache's register, also in place
  ///   of a local table of more than a quarter of local memory.
  /// Each strategy's kernel limit is read (its program built) only where the rule gets to it.
  execution_params default_params() const {
    const double hot = profile_.hottest_key_share;
    const bool dominant = hot >= dominant_key_share && hot < single_key_share;
    const auto shared = [&] { return execution_params{strategy_kind::shared, initial_config(strategy_kind::shared)}; };
    const auto local = [&] {
      return execution_params{strategy_kind::workgroup_local, initial_config(strategy_kind::workgroup_local)};
    };
    if (local_table_fits() && feasible(local())) {
      const bool large = table_layout_bytes(local_capacity(), 1) > device_.local_mem_bytes / 4;
      return shape_.identity_scheme && dominant && large ? shared() : local();
    }
    if (hot_table(shared()) || (shape_.identity_scheme && hot >= dominant_key_share)) return shared();
    if (hot >= hot_key_threshold && max_local_buckets() >= 2 && infeasibility(local(), false).empty()) return local();
    return shared();
  }

  /// The strategies whose programs default_params() may build (their kernel limits): what a
  /// query builds side by side before its first block.
  std::vector<strategy_kind> strategies_to_build() const {
    const bool dominant = profile_.hottest_key_share >= dominant_key_share;
    if (local_table_fits() && !(shape_.identity_scheme && dominant)) return {strategy_kind::workgroup_local};
    if (profile_.hottest_key_share >= hot_key_threshold && max_local_buckets() >= 2) {
      return {strategy_kind::shared, strategy_kind::workgroup_local};
    }
    return {strategy_kind::shared};
  }

  /// Whether WORKGROUPLOCAL's local table holds every group planned (section 3.7's condition,
  /// without the kernel's work-group limit).
  bool local_table_fits() const { return max_local_buckets() >= small_table_buckets(); }

  /// From this share of sampled rows whose neighbour holds the same key on, the input is in runs.
  static constexpr double runs_min_share = 0.5;
  /// From this share on, the sample's most frequent key dominates (the run cache's register).
  static constexpr double dominant_key_share = 0.75;
  /// From this share on, the sample shows a single key (the run cache even with replicated
  /// local tables, and no cold-row queue).
  static constexpr double single_key_share = 0.99;
  /// From this share on, the default strategy treats the input as skewed.
  static constexpr double hot_key_threshold = 1.0 / 16;

  /// Largest power-of-two work-group size a variant's kernel runs with on the device.
  std::uint32_t max_work_group_size(const kernel_variant& variant) const {
    const std::uint32_t limit = std::min(std::max<std::uint32_t>(limits_ ? limits_(variant) : device_.max_work_group_size, 1),
                                         std::max<std::uint32_t>(device_.max_work_group_size, 1));
    std::uint32_t pow2 = 1;
    while (pow2 * 2 <= limit) pow2 *= 2;
    return pow2;
  }
  std::uint32_t max_work_group_size(strategy_kind strategy) const {
    return max_work_group_size(kernel_variant{strategy});
  }

  /// Whether `params` suits this query (section 4.1's constraints): the work-group limits hold,
  /// and WORKGROUPLOCAL's local table or INDEPENDENT's private tables hold every group planned.
  bool feasible(const execution_params& params) const { return infeasibility(params, true).empty(); }

  /// Why `params` cannot run, or empty. Not `strict`: a local or private table smaller than the
  /// groups planned is allowed (rows it cannot hold go to the global table).
  std::string infeasibility(const execution_params& params, bool strict = true) const {
    const auto& config = params.config;
    if (config.work_group_size == 0 || config.work_groups_per_cu == 0) return "empty thread configuration";
    if (config.work_group_size > max_work_group_size(params.strategy)) {
      return "work group size " + std::to_string(config.work_group_size) + " exceeds the " +
             std::to_string(max_work_group_size(params.strategy)) + " that " + std::string(to_string(params.strategy)) +
             "'s kernel allows on " + device_.name;
    }
    if (total_threads(config) > (std::uint64_t{1} << 31)) return "more than 2^31 work items";
    switch (params.strategy) {
      case strategy_kind::shared: return {};
      case strategy_kind::workgroup_local: {
        const auto fits = max_local_buckets();
        if (strict ? fits < small_table_buckets() : fits < 2) {
          return "a local table of " + std::to_string(small_table_buckets()) + " buckets (" +
                 std::to_string(table_layout_bytes(small_table_buckets(), 1)) + " bytes) exceeds local memory (" +
                 std::to_string(device_.local_mem_bytes) + " bytes)";
        }
        return {};
      }
      case strategy_kind::independent: {
        const auto fits = max_private_buckets(config);
        if (strict ? fits < small_table_buckets() : fits < 2) {
          return "private tables of " + std::to_string(small_table_buckets()) + " buckets for " +
                 std::to_string(total_threads(config)) + " work items exceed the budget of " +
                 std::to_string(private_budget()) + " bytes";
        }
        return {};
      }
    }
    return "unknown strategy";
  }

  // ---- what a kernel gets ---------------------------------------------------------------------

  /// Whether AGGREGATE combines each work item's runs of one key privately first: options'
  /// `run_cache` if set, else when one key dominates the sample: a single key, or one holding
  /// 3/4 of the rows unless WORKGROUPLOCAL already spreads it over replicated local tables.
  bool run_cache(const execution_params& params) const {
    if (opts_.run_cache) return *opts_.run_cache;
    const double hot = profile_.hottest_key_share;
    if (hot >= single_key_share) return true;
    if (hot < dominant_key_share) return false;
    return params.strategy != strategy_kind::workgroup_local || local_table_copies(params.config) == 1;
  }

  /// Whether AGGREGATE runs SHARED with the hot-key table in local memory: options' `hot_table`
  /// if set (for SHARED with a hash scheme, when the sample found frequent keys), else when the
  /// frequent keys it holds cover at least hot_table_min_share of the sample and the run cache is
  /// not used (a dominant key is the run cache's: one local bucket would serialize its atomics).
  bool hot_table(const execution_params& params) const {
    if (shape_.identity_scheme || params.strategy != strategy_kind::shared || hot_.keys == 0) return false;
    if (opts_.hot_table) return *opts_.hot_table;
    return hot_.share >= hot_table_min_share && !run_cache(params);
  }
  static constexpr double hot_table_min_share = 1.0 / 8;
  /// Local memory the hot-key table may take per work group.
  static constexpr std::uint64_t hot_table_max_bytes = std::uint64_t{32} << 10;
  /// The hot-key table's size and the number of the sample's frequent keys it holds.
  const hot_table_plan& hot_keys() const noexcept { return hot_; }

  /// Whether WORKGROUPLOCAL's run-cache build queues cold rows: when the run cache was chosen
  /// automatically for a dominant key (not a single key, whose runs go faster without the queue)
  /// and a queue of at least 2 rows per work item fits in local memory beside the table.
  bool cold_queue(const execution_params& params) const {
    const double hot = profile_.hottest_key_share;
    if (params.strategy != strategy_kind::workgroup_local || opts_.run_cache || hot == 0) return false;
    if (hot >= single_key_share) return false;
    if (!run_cache(params)) return false;
    return cold_rows_per_item(params.config) >= 2;
  }
  /// Rows per work item between two drains of the cold-row queue: 8, or 4 or 2 where the queue of
  /// 8 does not fit in local memory beside the table (0: not even 2).
  std::uint32_t cold_rows_per_item(const launch_config& config) const {
    const std::uint64_t table = table_layout_bytes(local_capacity(), local_table_copies(config));
    const std::uint64_t entry = std::uint64_t{config.work_group_size} * (shape_.key_bytes + 4);
    for (std::uint32_t rows = 8; rows >= 2; rows /= 2) {
      if (table + rows * entry + 64 <= device_.local_mem_bytes) return rows;
    }
    return 0;
  }

  /// The variant a block with `params` runs: the run cache, the hot-key table and the cold-row
  /// queue only where their own work-group limits allow the configuration.
  kernel_variant variant_for(const execution_params& params) const {
    kernel_variant v{params.strategy};
    const auto fits = [&](const kernel_variant& candidate) {
      return params.config.work_group_size <= max_work_group_size(candidate);
    };
    v.run_cache = run_cache(params) && fits({params.strategy, true});
    v.hot_table = hot_table(params) && fits({params.strategy, v.run_cache, true});
    v.cold_queue = v.run_cache && cold_queue(params) && fits({params.strategy, true, false, true});
    return v;
  }

  /// Copies of WORKGROUPLOCAL's local table per work group: options' `local_table_copies` if
  /// given, else as many as fit in a quarter of local memory, at most 32 (a SIMD group's width on
  /// most GPUs); a power of two, at most the work-group size. More copies spread the atomics of a
  /// few hot groups.
  std::uint32_t local_table_copies(const launch_config& config) const {
    const std::uint64_t copy_bytes = table_layout_bytes(local_capacity(), 1);
    const std::uint64_t budget =
        opts_.local_table_copies ? opts_.local_table_copies * copy_bytes : device_.local_mem_bytes / 4;
    std::uint32_t copies = 1;
    const std::uint32_t limit = std::min<std::uint32_t>(opts_.local_table_copies ? 1024 : 32, config.work_group_size);
    while (copies * 2 <= limit && (copies * 2) * copy_bytes <= budget &&
           (copies * 2) * copy_bytes + 64 <= device_.local_mem_bytes) {
      copies *= 2;
    }
    return copies;
  }

  /// How far a row probes the global table before it goes to the spill area: at most 1024
  /// buckets (a longer probe costs more than the growth it would put off); direct addressing's
  /// one bucket.
  std::uint32_t max_probes(std::uint64_t capacity) const {
    return shape_.identity_scheme ? 1u : static_cast<std::uint32_t>(std::min<std::uint64_t>(capacity, 1024));
  }

  /// Whether AGGREGATE probes the global table with cacheable key reads (else volatile ones):
  /// for tables whose keys take at most plain_key_reads_max_bytes. On the H100 cacheable reads
  /// win up to 2^16 groups (1.8x at 2^12) and lose from 2^20, where other work groups' atomics
  /// keep invalidating the lines they cached.
  bool plain_key_reads(std::uint64_t capacity, bool interleaved_layout) const {
    const std::uint64_t key_bytes =
        (capacity + 1) * (interleaved_layout ? shape_.interleaved_bucket_bytes : shape_.key_bytes);
    return key_bytes <= plain_key_reads_max_bytes;
  }
  static constexpr std::uint64_t plain_key_reads_max_bytes = std::uint64_t{1} << 20;

  /// Buckets of WORKGROUPLOCAL's local table: every group planned where local memory holds them.
  std::uint64_t local_capacity() const { return std::min(small_table_buckets(), max_local_buckets()); }
  /// Buckets of each of INDEPENDENT's private tables.
  std::uint64_t private_capacity(const launch_config& config) const {
    return std::min(small_table_buckets(), max_private_buckets(config));
  }
  /// Work items of a launch.
  std::uint64_t total_threads(const launch_config& config) const {
    return std::uint64_t{device_.compute_units} * config.work_groups_per_cu * config.work_group_size;
  }

  // ---- tuning ---------------------------------------------------------------------------------

  /// Whether the tuner refines the plan (Algorithm 1 from the plan's start): when the caller asks
  /// for tuning (options::autotune) and fixes neither strategy nor configuration, the input has
  /// at least min_blocks_to_tune tuning blocks, and the model is not sure: its entry was not
  /// measured on this device's kind (device or architecture), or was measured with another query
  /// shape (key width, bucket size). Where the entry was measured for this query, tuning would
  /// re-measure what was recorded and cost each query its confirmation blocks.
  /// `forced` (tuned_group_by): tune whenever a block is left.
  tuning_plan tuning(bool forced = false) const {
    tuning_plan t;
    t.block_rows = tuning_block_rows();
    const std::uint64_t blocks = profile_.rows == 0 ? 0 : (profile_.rows + t.block_rows - 1) / t.block_rows;
    const bool measured = (entry_.level == plan_level::device || entry_.level == plan_level::architecture) &&
                          shape_.bucket_bytes == recorded_bucket_bytes && shape_.key_bytes == recorded_key_bytes &&
                          !shape_.identity_scheme;
    if (forced) {
      t.enabled = blocks > 0;
    } else {
      t.enabled = opts_.autotune && !opts_.strategy && !opts_.config && blocks >= opts_.min_blocks_to_tune &&
                  blocks > 0 && !measured;
    }
    // On device input a search may take three quarters of the slices; the rest run its best in
    // large blocks (an unfinished search is resumed by the next query of the shape).
    t.block_budget = static_cast<std::size_t>(profile_.on_device && !forced ? blocks - blocks / 4 : blocks);
    // The starts read each strategy's kernel limit, which builds its program: a query that does
    // not tune must not pay for programs it never runs.
    if (!t.enabled) return t;
    // The plan's choice first, then the other strategies whose tables fit (INDEPENDENT on CPUs
    // only: on GPUs its private tables never won, section 3.7's insight 1).
    const execution_params first = default_params();
    t.starts.push_back(first);
    for (const auto strategy : {strategy_kind::shared, strategy_kind::workgroup_local, strategy_kind::independent}) {
      if (strategy == first.strategy || (strategy == strategy_kind::independent && device_.is_gpu)) continue;
      const execution_params candidate{strategy, initial_config(strategy)};
      if (feasible(candidate)) t.starts.push_back(candidate);
    }
    t.scan = entry_.level == plan_level::generic;
    return t;
  }

  /// The per-device entry for a device: by name, then architecture, then vendor, else generic.
  static plan_entry entry_for(const device_info& device) {
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

 private:
  std::uint64_t capacity_for(std::uint64_t groups) const {
    const auto wanted = static_cast<std::uint64_t>(std::ceil(double(groups) / opts_.max_load_factor));
    return next_pow2(std::max<std::uint64_t>(wanted, 16));
  }

  static std::uint64_t next_pow2(std::uint64_t x) {
    std::uint64_t p = 1;
    while (p < x) p <<= 1;
    return p;
  }

  /// Buckets a local or private table needs for every group planned.
  std::uint64_t small_table_buckets() const {
    if (shape_.identity_scheme) return shape_.domain_size;
    const auto wanted = static_cast<std::uint64_t>(std::ceil(double(sizing_groups()) / opts_.max_load_factor));
    return next_pow2(std::max<std::uint64_t>(wanted, 2));
  }

  /// Largest table size (a power of two, any size for identity) whose buckets fit in `bytes`.
  std::uint64_t buckets_fitting(std::uint64_t bytes) const {
    if (bytes < 2 * std::uint64_t{shape_.bucket_bytes}) return 0;
    const std::uint64_t any = bytes / shape_.bucket_bytes - 1;
    if (shape_.identity_scheme) return any;
    std::uint64_t pow2 = 1;
    while (pow2 * 2 <= any) pow2 *= 2;
    return pow2;
  }

  std::uint64_t max_local_buckets() const {
    const auto bytes = device_.local_mem_bytes;
    if (bytes <= 64) return 0;
    const std::uint64_t room = bytes - 64;  // room for the kernel's own local variables
    if (shape_.identity_scheme) {
      // Accumulators and a bit per bucket (bits, with a word of slack for the bitmap's rounding).
      const std::uint64_t bits = std::uint64_t{shape_.bucket_bytes - shape_.key_bytes} * 8 + 1;
      const std::uint64_t fit = room * 8 > 32 ? (room * 8 - 32) / bits : 0;
      return fit >= 2 ? fit - 1 : 0;
    }
    return buckets_fitting(room);
  }

  std::uint64_t max_private_buckets(const launch_config& config) const {
    return buckets_fitting(private_budget() / std::max<std::uint64_t>(total_threads(config), 1));
  }

  std::uint64_t private_budget() const {
    return std::min<std::uint64_t>({device_.max_alloc_bytes, device_.global_mem_bytes / 8, std::uint64_t{1} << 30});
  }

  /// The hot-key table: the sample's frequent keys, as many as a table at most half full holds
  /// within hot_table_max_bytes of local memory (and a quarter of the device's).
  hot_table_plan plan_hot_table() const {
    hot_table_plan plan;
    if (shape_.identity_scheme || profile_.frequent_counts.empty() || profile_.sample_size == 0) return plan;
    const std::uint64_t entry = shape_.bucket_bytes + 4;  // key, accumulators, used flag
    const std::uint64_t budget = std::min<std::uint64_t>(hot_table_max_bytes, device_.local_mem_bytes / 4);
    std::uint64_t capacity = 2;
    while ((capacity * 2 + 1) * entry <= budget && capacity / 2 < profile_.frequent_counts.size()) capacity *= 2;
    if ((capacity + 1) * entry > budget) return plan;
    std::uint64_t covered = 0;
    for (const auto count : profile_.frequent_counts) {
      if (plan.keys == capacity / 2) break;
      ++plan.keys;
      covered += count;
    }
    plan.capacity = static_cast<std::uint32_t>(capacity);
    plan.share = double(covered) / double(profile_.sample_size);
    return plan;
  }

  device_info device_;
  query_shape shape_;
  input_profile profile_;
  options opts_;
  kernel_limit_fn limits_;
  std::uint64_t planned_groups_ = 1;
  plan_entry entry_;
  hot_table_plan hot_;
};

}  // namespace gpuagg
