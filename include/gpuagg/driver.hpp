#pragma once
// The block-wise driver (section 2.1): owns the global table, runs INITIALIZE once, AGGREGATE
// once per input block with that block's strategy and thread configuration, grows the table
// when it fills, and runs FINALIZE. Host input streams through pinned staging buffers with
// `blocks_in_flight` blocks in flight, so copies overlap AGGREGATE; device input is read in
// place. The global table alone carries progress from block to block, so the strategy and
// thread configuration may change between any two blocks (section 4.1, "Support for other
// operators", requirement 2), which the tuner relies on. The driver does not know the tuner.

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "column.hpp"
#include "error.hpp"
#include "launch_config.hpp"
#include "options.hpp"
#include "result.hpp"
#include "runtime/context.hpp"
#include "runtime/host_copy.hpp"
#include "source.hpp"

namespace gpuagg {

namespace detail {

inline std::uint64_t next_pow2(std::uint64_t x) {
  std::uint64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

inline unsigned log2_exact(std::uint64_t pow2) {
  unsigned bits = 0;
  while ((std::uint64_t{1} << bits) < pow2) ++bits;
  return bits;
}

/// Profiled execution time of a finished command, in seconds.
inline double event_seconds(const cl::Event& event) {
  cl_ulong start = 0;
  cl_ulong end = 0;
  check(event.getProfilingInfo(CL_PROFILING_COMMAND_START, &start), "reading a profiling start time");
  check(event.getProfilingInfo(CL_PROFILING_COMMAND_END, &end), "reading a profiling end time");
  return end > start ? double(end - start) * 1e-9 : 0.0;
}

inline void wait_for(const cl::Event& event, const char* what) {
  check(event.wait(), what);
  cl_int status = CL_COMPLETE;
  check(event.getInfo(CL_EVENT_COMMAND_EXECUTION_STATUS, &status), what);
  if (status < 0) check(status, what);
}

/// Adds the host time from its construction to stop() (or its end) to one phase of
/// query_stats::host.
class phase_clock {
 public:
  explicit phase_clock(double& phase) : phase_(&phase), start_(std::chrono::steady_clock::now()) {}
  phase_clock(const phase_clock&) = delete;
  phase_clock& operator=(const phase_clock&) = delete;
  ~phase_clock() { stop(); }
  void stop() {
    if (phase_ == nullptr) return;
    *phase_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    phase_ = nullptr;
  }

 private:
  double* phase_;
  std::chrono::steady_clock::time_point start_;
};

/// What a sample of keys says: the number of groups (the GEE estimator of Charikar et al.:
/// sqrt(N/n) * f1 + sum_{j>=2} f_j, bounded by [distinct in sample, rows]) and the share of the
/// sample its most frequent key holds, and that key. One frequency count serves both.
struct sample_profile {
  std::uint64_t estimated_groups = 1;
  double hottest_key_share = 0;
  std::uint64_t hottest_key = 0;  ///< the key's bits
  /// The frequent keys (bits), most frequent first, and their counts in the sample: keys seen at
  /// least 8 times and at least 4 times as often as the average group (uniform keys have almost
  /// never any), at most max_frequent_keys. SHARED's hot-key table takes them (kernels.inc).
  std::vector<std::pair<std::uint64_t, std::uint32_t>> frequent;
  std::size_t sample_size = 0;
};
inline constexpr std::size_t max_frequent_keys = 4096;

template <class Bits>
sample_profile profile_sample(const std::vector<Bits>& sample, std::uint64_t rows) {
  if (sample.empty()) return {};
  // Frequencies in a flat open-addressing table (linear probing, at most half full): a
  // node-based map costs about a millisecond for 16 Ki distinct keys, a query's whole budget
  // at low cardinality. The table is the thread's scratch, kept between queries and cleared
  // slot by slot (allocating and zeroing it took 0.1-0.3 ms a query, bench/NOTES.md attempt 16);
  // the counting loop only counts, the most frequent key is found among the used slots after.
  std::size_t size = 2;
  while (size < sample.size() * 2) size *= 2;
  const std::size_t mask = size - 1;
  thread_local std::vector<Bits> keys;
  thread_local std::vector<std::uint32_t> counts;
  thread_local std::vector<std::uint32_t> used;  // slots in use, in order of first use
  if (counts.size() < size) {
    keys.assign(size, Bits{});
    counts.assign(size, 0);
  }
  used.clear();
  used.reserve(sample.size());  // no allocation (and no exception) while counts are dirty
  for (const auto key : sample) {
    std::size_t at = static_cast<std::size_t>((std::uint64_t(key) * 0x9E3779B97F4A7C15ULL) >> 32) & mask;
    while (counts[at] != 0 && keys[at] != key) at = (at + 1) & mask;
    if (counts[at]++ == 0) {
      keys[at] = key;
      used.push_back(static_cast<std::uint32_t>(at));
    }
  }
  const std::size_t distinct = used.size();
  std::uint32_t top = 0;
  Bits hottest = 0;
  std::size_t singletons = 0;
  for (const auto at : used) {
    if (counts[at] > top) {
      top = counts[at];
      hottest = keys[at];
    }
    singletons += counts[at] == 1 ? 1 : 0;
  }
  sample_profile profile;
  profile.sample_size = sample.size();
  profile.hottest_key_share = double(top) / double(sample.size());
  profile.hottest_key = static_cast<std::uint64_t>(hottest);
  if (sample.size() >= rows) {
    profile.estimated_groups = distinct;
  } else {
    const double estimate = std::sqrt(double(rows) / double(sample.size())) * double(singletons) +
                            (double(distinct) - double(singletons));
    profile.estimated_groups = static_cast<std::uint64_t>(std::clamp(estimate, double(distinct), double(rows)));
  }
  const double average = double(sample.size()) / double(std::max<std::uint64_t>(profile.estimated_groups, 1));
  const auto least = static_cast<std::uint32_t>(std::max(8.0, std::ceil(4 * average)));
  for (const auto at : used) {
    if (counts[at] >= least) profile.frequent.emplace_back(static_cast<std::uint64_t>(keys[at]), counts[at]);
    counts[at] = 0;  // the scratch table is empty again for the next sample
  }
  const auto by_count = [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  if (profile.frequent.size() > max_frequent_keys) {
    std::partial_sort(profile.frequent.begin(), profile.frequent.begin() + max_frequent_keys, profile.frequent.end(),
                      by_count);
    profile.frequent.resize(max_frequent_keys);
  } else {
    std::sort(profile.frequent.begin(), profile.frequent.end(), by_count);
  }
  return profile;
}

// Indices into the meta words (kernels.inc: META_*).
inline constexpr std::size_t meta_groups = 0;
inline constexpr std::size_t meta_special = 1;
inline constexpr std::size_t meta_spilled = 2;
inline constexpr std::size_t meta_lost = 3;
inline constexpr std::size_t meta_words = 4;
inline constexpr std::uint32_t max_partitions = 1024;  // kernels.inc: GPUAGG_MAX_PARTS

}  // namespace detail

/// The hash aggregation operator for one query over one input, block by block.
template <class Bound>
class aggregation_driver {
 public:
  using bound_type = Bound;
  using key_policy = typename Bound::key;
  using bits_type = typename key_policy::bits_type;
  static constexpr std::size_t aggregate_count = Bound::aggregate_count;
  static constexpr bool identity_scheme = Bound::scheme::is_identity;

  /// `columns`: the key column, then the value columns, all of `rows` rows, all on the host or
  /// all on the device.
  aggregation_driver(context& ctx, const options& opts, std::vector<detail::column_data> columns)
      : ctx_(ctx), opts_(opts), columns_(std::move(columns)), started_(std::chrono::steady_clock::now()) {
    validate();
    rows_ = columns_.front().rows;
    on_device_ = columns_.front().on_device();
    std::size_t widest = 1;
    for (const auto& c : columns_) widest = std::max(widest, c.element_size);
    window_ = std::max<std::size_t>(opts_.blocks_in_flight, 1);
    if (opts_.block_bytes) {
      block_rows_ = std::max<std::size_t>(*opts_.block_bytes / widest, 1);
    } else if (on_device_) {
      // Large blocks (fewer launches, fewer per-work-group merges), as long as the spill area
      // of the blocks in flight stays within min(1 GiB, 1/32 of device memory).
      const std::uint64_t spill_budget = std::min<std::uint64_t>(std::uint64_t{1} << 30, ctx_.info().global_mem_bytes / 32);
      const std::uint64_t by_spill = spill_budget / (Bound::bucket_bytes * window_);
      block_rows_ = static_cast<std::size_t>(std::max<std::uint64_t>(
          std::min<std::uint64_t>((std::uint64_t{256} << 20) / widest, by_spill), std::uint64_t{1} << 20));
    } else {
      block_rows_ = (std::size_t{16} << 20) / widest;
    }
    blocks_total_ = rows_ == 0 ? 0 : (rows_ + block_rows_ - 1) / block_rows_;
    stats_.device = ctx_.info().name;
    stats_.rows = rows_;
    builds_before_ = ctx_.programs_built();
    if (rows_ > 0) setup();
    stats_.setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  }

  aggregation_driver(const aggregation_driver&) = delete;
  aggregation_driver& operator=(const aggregation_driver&) = delete;
  ~aggregation_driver() {
    // Never hand buffers back while commands may still use them.
    if (rows_ > 0) {
      ctx_.compute_queue().finish();
      ctx_.transfer_queue().finish();
    }
    for (auto& [handle, held] : held_) ctx_.recycle(held.first, held.second);
    if (readback_.buffer()) ctx_.recycle_pinned(readback_class_, readback_);
    for (auto& slot : staging_) {
      for (std::size_t c = 0; c < slot.pinned.size(); ++c) {
        if (slot.pinned[c].buffer()) ctx_.recycle_pinned(slot.pinned_class[c], slot.pinned[c]);
      }
    }
  }

  std::uint64_t rows() const noexcept { return rows_; }
  std::size_t block_rows() const noexcept { return block_rows_; }
  std::size_t blocks_total() const noexcept { return blocks_total_; }
  std::size_t blocks_left() const noexcept { return blocks_total_ - next_block_; }
  const query_stats& stats() const noexcept { return stats_; }
  const device_info& device() const noexcept { return ctx_.info(); }
  /// Groups to plan for: the hint or estimate, or what the table already holds if more.
  std::uint64_t planned_groups() const noexcept { return std::max<std::uint64_t>(expected_groups_, known_groups_); }

  /// The paper's initial configuration of each strategy (section 4.1), clamped to the device.
  launch_config initial_config(strategy_kind strategy) const {
    launch_config config = paper_initial_config(strategy);
    while (config.work_group_size > max_work_group_size(strategy)) config.work_group_size /= 2;
    return config;
  }

  /// The default of section 3.7: WORKGROUPLOCAL when the table fits in local memory, else
  /// SHARED. Beyond the paper: when one key holds a large share of the rows (measured on the
  /// sample), WORKGROUPLOCAL with a local table smaller than the groups, which absorbs the hot
  /// key's updates in local memory and sends the rest to the global table; SHARED's atomics on
  /// one bucket would serialize (1.5 against 15 to 19 G tuples/s for a 90% heavy hitter on the
  /// H100, bench/results/h100/heavy_local.csv).
  /// With several hot keys (the sample's frequent keys fill a hot-key table), SHARED with that
  /// table instead; so too for direct addressing with one dominant key (the run cache's
  /// register), measured on the H100 (bench/NOTES.md, attempts 17 and 19).
  /// For direct addressing with a dominant key, SHARED with the run cache also replaces a local
  /// table of more than a quarter of local memory (heavy hitter at 2^12 groups: 166 against 118
  /// G tuples/s with the cold-row queue, attempt 21).
  execution_params default_params() const {
    const execution_params local{strategy_kind::workgroup_local, initial_config(strategy_kind::workgroup_local)};
    const execution_params shared{strategy_kind::shared, initial_config(strategy_kind::shared)};
    const bool dominant = hot_key_share_ >= dominant_key_share && hot_key_share_ < single_key_share;
    if (feasible(local)) {
      const bool large = table_layout_bytes(local_capacity(), 1) > ctx_.info().local_mem_bytes / 4;
      return identity_scheme && dominant && large ? shared : local;
    }
    if (use_hot_table(shared) || (identity_scheme && hot_key_share_ >= dominant_key_share)) return shared;
    if (hot_key_share_ >= hot_key_threshold && infeasibility(local, false).empty()) return local;
    return shared;
  }

  /// Whether AGGREGATE runs SHARED with a hot-key table in local memory (kernels.inc:
  /// GPUAGG_HOT_TABLE): options' `hot_table` if set (for SHARED with a hash scheme, when the
  /// sample found frequent keys), else when the frequent keys hold at least
  /// hot_table_min_share of the sample and the run cache is not used (a dominant key is the run
  /// cache's: one local bucket would serialize its atomics).
  bool use_hot_table(const execution_params& params) const {
    if constexpr (identity_scheme) {
      return false;
    } else {
      if (params.strategy != strategy_kind::shared || hot_keys_.empty()) return false;
      if (opts_.hot_table) return *opts_.hot_table;
      return hot_table_share_ >= hot_table_min_share && !use_run_cache(params);
    }
  }
  /// Whether WORKGROUPLOCAL's run-cache build queues cold rows (kernels.inc: GPUAGG_COLD_QUEUE):
  /// when the run cache was chosen automatically (a dominant key; asked for, its runs are
  /// wanted), the sample gave the hot key and some cold rows (a single key runs faster in the
  /// run cache's loop, which keeps four rows' loads in flight: 334 against 250 G tuples/s at 1
  /// group, bench/NOTES.md attempt 19), and a queue of at least 2 rows per work item fits in
  /// local memory beside the table.
  bool use_cold_queue(const execution_params& params) const {
    if (params.strategy != strategy_kind::workgroup_local || opts_.run_cache || hot_key_share_ == 0) return false;
    if (hot_key_share_ >= single_key_share) return false;
    if (!use_run_cache(params)) return false;
    return cold_rows_per_item(params.config) >= 2;
  }
  /// Rows per work item between two drains of the cold-row queue: 8 (as measured), or 4 or 2
  /// where the queue of 8 does not fit in local memory beside the table (0: not even 2).
  std::uint32_t cold_rows_per_item(const launch_config& config) const {
    const std::uint64_t table = table_layout_bytes(local_capacity(), local_table_copies(config));
    const std::uint64_t entry = std::uint64_t{config.work_group_size} * (sizeof(bits_type) + sizeof(cl_uint));
    for (std::uint32_t rows = 8; rows >= 2; rows /= 2) {
      if (table + rows * entry + 64 <= ctx_.info().local_mem_bytes) return rows;
    }
    return 0;
  }

  /// The frequent keys' share of the sample from which SHARED uses the hot-key table.
  static constexpr double hot_table_min_share = 1.0 / 8;
  /// Keys in the hot-key table (the sample's most frequent ones that fit; 0 without a sample).
  std::size_t hot_table_keys() const noexcept { return hot_keys_.size(); }

  /// Tables whose keys take at most this many bytes are probed with cacheable key reads
  /// (kernels.inc); larger ones with volatile reads. On the H100, cacheable reads win up to
  /// 2^16 groups (1.8x at 2^12) and lose from 2^20 (bench/results/h100/key_reads_*.csv).
  static constexpr std::uint64_t plain_key_reads_max_bytes = std::uint64_t{1} << 20;

  /// Whether AGGREGATE combines each work item's runs of one key privately first (kernels.inc):
  /// options' `run_cache` if set, else when one key dominates the sample: a single key, or one
  /// holding 3/4 of the rows unless WORKGROUPLOCAL already spreads it over replicated local
  /// tables. Measured on the H100 (bench/NOTES.md): 257 -> 330 G tuples/s at 1 group, 15 -> 55
  /// at 2^10 groups with a 90% heavy hitter; 255 -> 73 at 2 uniform groups, where it loses.
  bool use_run_cache(const execution_params& params) const {
    if (opts_.run_cache) return *opts_.run_cache;
    if (hot_key_share_ >= single_key_share) return true;
    if (hot_key_share_ < dominant_key_share) return false;
    return params.strategy != strategy_kind::workgroup_local || local_table_copies(params.config) == 1;
  }

  /// The sample's most frequent key's share of the rows.
  double hot_key_share() const noexcept { return hot_key_share_; }
  /// From this share on, the sample's most frequent key dominates (the run cache's register).
  static constexpr double dominant_key_share = 0.75;
  /// From this share on, the sample shows a single key (the run cache even with replicated
  /// local tables, and no cold-row queue).
  static constexpr double single_key_share = 0.99;
  /// From this share on, the default strategy treats the input as skewed.
  static constexpr double hot_key_threshold = 1.0 / 16;

  /// Largest work-group size the device allows.
  std::uint32_t max_work_group_size() const noexcept { return ctx_.info().max_work_group_size; }

  /// Largest power-of-two work-group size this strategy's AGGREGATE kernel can run with on this
  /// device (the kernel's own limit, from its register use, may be below the device's). Builds
  /// the strategy's program on first use.
  /// `run_cache`: of the strategy's run-cache build (kernels.inc), which the driver uses only
  /// where this limit allows.
  /// `hot_table` and `cold_queue` likewise, of the hot-key table's and the cold-row queue's builds.
  std::uint32_t max_work_group_size(strategy_kind strategy, bool run_cache = false, bool hot_table = false,
                                    bool cold_queue = false) const {
    auto& limit = kernel_limits_[variant(strategy, run_cache, hot_table, cold_queue)];
    if (limit == 0) {
      const auto kernel_limit = std::min<std::size_t>(
          kernel_work_group_limit(aggregate_kernel(strategy, run_cache, hot_table, cold_queue)),
                                                      ctx_.info().max_work_group_size);
      limit = 1;
      while (limit * 2 <= kernel_limit) limit *= 2;
    }
    return limit;
  }

  /// Whether `params` suits this query (section 4.1's constraints, which the tuner and the
  /// default use): the work-group limits hold, and WORKGROUPLOCAL's local table or INDEPENDENT's
  /// private tables hold every group expected.
  bool feasible(const execution_params& params) const { return infeasibility(params, true).empty(); }

  /// Why `params` cannot run, or empty. Not `strict`: a local or private table smaller than the
  /// groups expected is allowed (rows it cannot hold go to the global table).
  std::string infeasibility(const execution_params& params, bool strict = true) const {
    const auto& config = params.config;
    if (config.work_group_size == 0 || config.work_groups_per_cu == 0) return "empty thread configuration";
    if (config.work_group_size > max_work_group_size(params.strategy)) {
      return "work group size " + std::to_string(config.work_group_size) + " exceeds the " +
             std::to_string(max_work_group_size(params.strategy)) + " that " + std::string(to_string(params.strategy)) +
             "'s kernel allows on " + ctx_.info().name;
    }
    if (total_threads(config) > (std::uint64_t{1} << 31)) return "more than 2^31 work items";
    switch (params.strategy) {
      case strategy_kind::shared: return {};
      case strategy_kind::workgroup_local: {
        const auto fits = max_local_buckets();
        if (strict ? fits < small_table_buckets() : fits < 2) {
          return "a local table of " + std::to_string(small_table_buckets()) + " buckets (" +
                 std::to_string(table_layout_bytes(small_table_buckets(), 1)) + " bytes) exceeds local memory (" +
                 std::to_string(ctx_.info().local_mem_bytes) + " bytes)";
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

  /// Processes the next block with `params` and waits for it; returns its profiled AGGREGATE
  /// time in seconds. This is the step the tuner drives.
  double run_block(const execution_params& params) {
    if (blocks_left() == 0) throw invalid_argument_error("run_block: no block left");
    require_runnable(params);
    auto block = enqueue_block(params);
    return complete(block);
  }

  /// Processes every remaining block, `blocks_in_flight` at a time: with `params` if given,
  /// else with default_params() re-evaluated per block.
  void run_remaining(const std::optional<execution_params>& params = std::nullopt) {
    if (blocks_left() == 0) return;
    if (params) require_runnable(*params);
    std::deque<pending_block> in_flight;
    while (blocks_left() > 0) {
      if (in_flight.size() >= window_) {
        complete(in_flight.front());
        in_flight.pop_front();
      }
      in_flight.push_back(enqueue_block(params ? *params : default_params()));
    }
    while (!in_flight.empty()) {
      complete(in_flight.front());
      in_flight.pop_front();
    }
  }

  /// FINALIZE into device buffers: keys, then one buffer per output.
  template <class... Outputs>
  device_result<typename key_policy::value_type, Outputs...> finalize_on_device() {
    device_result<typename key_policy::value_type, Outputs...> out;
    if (rows_ == 0) {
      out.keys = ctx_.buffer(1, "an empty result");
      out.columns = std::apply([&](auto&... b) { return std::tuple{((void)b, ctx_.buffer(1, "an empty result"))...}; },
                               out.columns);
      finish_stats();
      out.stats = stats_;
      return out;
    }
    if (blocks_left() > 0) run_remaining();
    detail::phase_clock clock(stats_.host.finalize);
    const auto done = enqueue_finalize(out, true);
    await_finalize(out.size(), done, {});
    clock.stop();
    finish_stats();
    out.stats = stats_;
    return out;
  }

  /// FINALIZE and copy the result to the host.
  template <class... Outputs>
  result<typename key_policy::value_type, Outputs...> finalize_to_host() {
    result<typename key_policy::value_type, Outputs...> out;
    if (rows_ == 0) {
      finish_stats();
      out.stats = stats_;
      return out;
    }
    if (blocks_left() > 0) run_remaining();
    detail::phase_clock clock(stats_.host.finalize);
    // The device result lives in the query's pooled buffers; the copies queue up behind
    // FINALIZE, and one wait covers both.
    device_result<typename key_policy::value_type, Outputs...> on_device;
    const auto done = enqueue_finalize(on_device, false);
    const std::size_t n = on_device.size();
    auto& queue = ctx_.compute_queue();
    std::vector<cl::Event> reads;
    out.keys.resize(n);
    if (n > 0) {
      reads.resize(1 + sizeof...(Outputs));
      detail::check(queue.enqueueReadBuffer(on_device.keys, CL_FALSE, 0, n * sizeof(typename key_policy::value_type),
                                            out.keys.data(), nullptr, &reads[0]),
                    "reading the result keys");
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((std::get<I>(out.columns).resize(n),
          detail::check(queue.enqueueReadBuffer(std::get<I>(on_device.columns), CL_FALSE, 0, n * sizeof(Outputs),
                                                std::get<I>(out.columns).data(), nullptr, &reads[1 + I]),
                        "reading a result column")),
         ...);
      }(std::index_sequence_for<Outputs...>{});
    }
    await_finalize(n, done, reads);
    clock.stop();
    finish_stats();
    out.stats = stats_;
    return out;
  }

 private:
  struct table_buffers {
    cl::Buffer keys;
    std::array<cl::Buffer, aggregate_count> accs;
    std::uint64_t capacity = 0;  ///< buckets, not counting the reserved one for EMPTY_KEY
    unsigned bits = 0;
    bool interleaved = false;    ///< one buffer of records (kernels.inc: GPUAGG_INTERLEAVED)
  };
  struct staging_slot {
    std::vector<detail::buffer_pool::pinned_buffer> pinned;
    std::vector<std::uint64_t> pinned_class;
    std::vector<void*> mapped;
    std::vector<cl::Buffer> device;
  };
  struct pending_block {
    cl::Event kernel;
    cl::Event meta_read;
    std::vector<cl::Event> partition;  // PARTITION's kernels, when the block was partitioned
    std::size_t slot = 0;
    unsigned generation = 0;
    execution_params params;
    std::uint64_t rows = 0;
    bool hot_table = false;  // ran with the hot-key table (use_hot_table)
    bool cold_queue = false;  // ran with the cold-row queue (use_cold_queue)
  };

  template <std::size_t J>
  using acc_t = typename Bound::template acc_at<J>;

  static constexpr std::size_t acc_size(std::size_t j) {
    return [&]<std::size_t... J>(std::index_sequence<J...>) {
      constexpr std::array<std::size_t, aggregate_count> sizes{sizeof(acc_t<J>)...};
      return sizes[j];
    }(std::make_index_sequence<aggregate_count>{});
  }

  void validate() {
    if (columns_.empty()) throw invalid_argument_error("group_by needs a key column");
    const auto rows = columns_.front().rows;
    for (std::size_t i = 1; i < columns_.size(); ++i) {
      if (columns_[i].rows != rows) {
        throw invalid_argument_error("column lengths differ: the key column has " + std::to_string(rows) +
                                     " rows, value column " + std::to_string(i - 1) + " has " +
                                     std::to_string(columns_[i].rows));
      }
    }
    const bool device = columns_.front().on_device();
    for (const auto& c : columns_) {
      if (c.on_device() != device) {
        throw invalid_argument_error("columns must be all on the host or all on the device");
      }
      if (device && c.offset != columns_.front().offset) {
        throw invalid_argument_error("device columns must share one element offset");
      }
    }
    if (!(opts_.max_load_factor > 0.0 && opts_.max_load_factor <= 0.9)) {
      throw invalid_argument_error("max_load_factor must lie in (0, 0.9]");
    }
    if (opts_.block_bytes && *opts_.block_bytes == 0) throw invalid_argument_error("block_bytes must be positive");
    if ((opts_.partitions & (opts_.partitions - 1)) != 0 || opts_.partitions > detail::max_partitions) {
      throw invalid_argument_error("partitions must be 0 (automatic), 1 (none) or a power of two up to " +
                                   std::to_string(detail::max_partitions));
    }
    if ((opts_.local_table_copies & (opts_.local_table_copies - 1)) != 0) {
      throw invalid_argument_error("local_table_copies must be 0 (automatic) or a power of two");
    }
    if constexpr (identity_scheme) {
      if (!opts_.domain || !opts_.domain->valid) {
        throw invalid_argument_error("direct_addressing needs options::domain = {min, max} with min <= max");
      }
      if (opts_.domain->size == 0 || opts_.domain->size >= (std::uint64_t{1} << 31)) {
        throw invalid_argument_error("direct_addressing supports key domains of 1 to 2^31 - 1 keys");
      }
    }
    if (!ctx_.info().int64_atomics) {
      throw unsupported_error(ctx_.info().name + " lacks cl_khr_int64_base_atomics, which gpuagg needs");
    }
  }

  void setup() {
    // A sample of the keys (16 Ki, strided) estimates the groups when no hint is given,
    // measures skew for the default strategy and finds the hot-key table's keys; it is skipped
    // when none of these is needed.
    const bool estimate = !identity_scheme && !opts_.expected_groups;
    detail::sample_profile profile;
    if (estimate || !opts_.strategy || opts_.hot_table.value_or(false)) {
      detail::phase_clock sampling(stats_.host.sample);
      const auto sample = sample_keys();
      sampling.stop();
      const detail::phase_clock counting(stats_.host.profile);
      profile = detail::profile_sample(sample, rows_);
    }
    hot_key_share_ = profile.hottest_key_share;
    hot_key_ = static_cast<bits_type>(profile.hottest_key);
    choose_hot_keys(profile);
    if constexpr (identity_scheme) {
      expected_groups_ = opts_.domain->size;
    } else if (opts_.expected_groups) {
      expected_groups_ = std::max<std::uint64_t>(*opts_.expected_groups, 1);
    } else {
      expected_groups_ = profile.estimated_groups;
      stats_.expected_groups_estimated = true;
    }
    stats_.expected_groups = expected_groups_;
    std::uint64_t capacity = 0;
    if constexpr (identity_scheme) {
      capacity = opts_.domain->size;
    } else {
      capacity = table_capacity_for(expected_groups_);
    }
    interleaved_ = use_interleaved_table(capacity);
    // The first program built also provides INITIALIZE, MERGE and FINALIZE.
    detail::phase_clock programs(stats_.host.programs);
    home_program_ = program(default_params_for_setup());
    programs.stop();
    const detail::phase_clock buffers(stats_.host.buffers);
    // Nothing in the set-up waits for the device: the counters' clear and INITIALIZE precede
    // every AGGREGATE on the in-order compute queue, and their errors and profiled times are
    // collected at the first wait for a block (settle_deferred()).
    meta_ = allocate(detail::meta_words * sizeof(cl_ulong), "the query's counters");
    clear_meta(0, detail::meta_words, "clearing the query's counters");
    // The counters are read back into pinned memory: a non-blocking read into pageable memory
    // may be staged, or done synchronously, by the driver.
    std::tie(readback_, readback_class_) =
        ctx_.pooled_pinned((window_ * detail::meta_words + 1) * sizeof(cl_ulong), "the counters' host copy");
    meta_mirror_ = static_cast<cl_ulong*>(readback_.mapped);
    finalize_count_ = meta_mirror_ + window_ * detail::meta_words;
    table_ = make_table(capacity);
    spill_capacity_ = static_cast<std::uint64_t>(block_rows_) * window_;
    if (spill_capacity_ >= (std::uint64_t{1} << 32)) throw invalid_argument_error("block_bytes is too large");
    spill_ = make_buffers(spill_capacity_, "the spill area");
    if (!on_device_) make_staging();
  }

  strategy_kind default_params_for_setup() const { return default_params().strategy; }

  /// The hot-key table's keys: the sample's frequent keys, as many as a table at most half full
  /// holds within hot_table_max_bytes of local memory (and a quarter of the device's).
  void choose_hot_keys(const detail::sample_profile& profile) {
    if constexpr (!identity_scheme) {
      if (profile.frequent.empty() || profile.sample_size == 0) return;
      const std::uint64_t entry = Bound::bucket_bytes + sizeof(cl_uint);  // key, accumulators, used flag
      const std::uint64_t budget = std::min<std::uint64_t>(hot_table_max_bytes, ctx_.info().local_mem_bytes / 4);
      std::uint64_t capacity = 2;
      while ((capacity * 2 + 1) * entry <= budget && capacity / 2 < profile.frequent.size()) capacity *= 2;
      if ((capacity + 1) * entry > budget) return;
      std::uint64_t covered = 0;
      for (const auto& [key, count] : profile.frequent) {
        if (hot_keys_.size() == capacity / 2) break;
        hot_keys_.push_back(static_cast<bits_type>(key));
        covered += count;
      }
      hot_capacity_ = static_cast<std::uint32_t>(capacity);
      hot_table_share_ = double(covered) / double(profile.sample_size);
    } else {
      (void)profile;
    }
  }

 public:
  /// Local memory the hot-key table may take per work group.
  static constexpr std::uint64_t hot_table_max_bytes = std::uint64_t{32} << 10;

 private:

  /// The global table's layout for the whole query (kernels.inc: GPUAGG_INTERLEAVED): options'
  /// `interleaved_table`, else interleaved for hash tables of more than interleave_min_buckets.
  /// Direct addressing keeps its bitmap and accumulator arrays; accumulators of different sizes
  /// keep arrays of their own.
  bool use_interleaved_table(std::uint64_t capacity) const {
    if constexpr (identity_scheme || !Bound::interleavable) {
      if (opts_.interleaved_table.value_or(false)) {
        throw invalid_argument_error(identity_scheme ? "interleaved_table: direct addressing keeps no keys to interleave"
                                                     : "interleaved_table needs accumulators of one size");
      }
      return false;
    } else {
      return opts_.interleaved_table.value_or(capacity > interleave_min_buckets);
    }
  }

 public:
  /// The automatic choice interleaves tables of more buckets than this: on the H100 (50 MB of
  /// L2) interleaving lost up to 2^22 buckets (a key read no longer hits L1 once atomics on
  /// its record's line invalidate it there) and won from 2^24 (bench/NOTES.md, attempt 12).
  static constexpr std::uint64_t interleave_min_buckets = std::uint64_t{1} << 23;
  /// Whether this query's global table is interleaved.
  bool interleaved_table() const noexcept { return interleaved_; }

 private:

  std::uint64_t table_capacity_for(std::uint64_t groups) const {
    const auto wanted = static_cast<std::uint64_t>(std::ceil(double(groups) / opts_.max_load_factor));
    const auto capacity = detail::next_pow2(std::max<std::uint64_t>(wanted, 16));
    if (capacity > (std::uint64_t{1} << 31)) {
      throw out_of_memory_error(capacity * Bound::bucket_bytes, ctx_.info().max_alloc_bytes,
                                "a table of " + std::to_string(capacity) + " buckets (more than 2^31)");
    }
    return capacity;
  }

  /// Buckets a local or private table needs for every group expected.
  std::uint64_t small_table_buckets() const {
    if constexpr (identity_scheme) {
      return opts_.domain->size;
    } else {
      const auto wanted = static_cast<std::uint64_t>(std::ceil(double(planned_groups()) / opts_.max_load_factor));
      return detail::next_pow2(std::max<std::uint64_t>(wanted, 2));
    }
  }

  /// Largest table size (a power of two, any size for identity) whose buckets fit in `bytes`.
  static std::uint64_t buckets_fitting(std::uint64_t bytes) {
    if (bytes < 2 * Bound::bucket_bytes) return 0;
    const std::uint64_t any = bytes / Bound::bucket_bytes - 1;
    if constexpr (identity_scheme) {
      return any;
    } else {
      std::uint64_t pow2 = 1;
      while (pow2 * 2 <= any) pow2 *= 2;
      return pow2;
    }
  }

  /// Bytes the kernels touch in a table of `buckets` buckets (and the EMPTY_KEY bucket) in
  /// `copies` copies, local or global: keys and accumulators, or for direct addressing
  /// (kernels.inc: GPUAGG_DENSE_TABLE) accumulators and a bitmap of the entries in use.
  static std::uint64_t table_layout_bytes(std::uint64_t buckets, std::uint64_t copies) {
    const std::uint64_t entries = (buckets + 1) * copies;
    if constexpr (identity_scheme) {
      return entries * (Bound::bucket_bytes - sizeof(bits_type)) + (entries + 31) / 32 * 4;
    } else {
      return entries * Bound::bucket_bytes;
    }
  }

  std::uint64_t max_local_buckets() const {
    const auto bytes = ctx_.info().local_mem_bytes;
    if (bytes <= 64) return 0;
    const std::uint64_t room = bytes - 64;  // room for the kernel's own local variables
    if constexpr (identity_scheme) {
      // Accumulators and a bit per bucket (bits, with a word of slack for the bitmap's rounding).
      const std::uint64_t bits = (Bound::bucket_bytes - sizeof(bits_type)) * 8 + 1;
      const std::uint64_t fit = room * 8 > 32 ? (room * 8 - 32) / bits : 0;
      return fit >= 2 ? fit - 1 : 0;
    } else {
      return buckets_fitting(room);
    }
  }

  std::uint64_t max_private_buckets(const launch_config& config) const {
    return buckets_fitting(private_budget() / std::max<std::uint64_t>(total_threads(config), 1));
  }

  std::uint64_t local_capacity() const { return std::min(small_table_buckets(), max_local_buckets()); }

 public:
  /// Copies of WORKGROUPLOCAL's local table per work group (kernels.inc): options'
  /// `local_table_copies` if given, else as many as fit in a quarter of local memory, at most 32
  /// (a SIMD group's width on most GPUs); a power of two, at most the work-group size.
  std::uint32_t local_table_copies(const launch_config& config) const {
    const std::uint64_t copy_bytes = table_layout_bytes(local_capacity(), 1);
    const std::uint64_t budget = opts_.local_table_copies ? opts_.local_table_copies * copy_bytes
                                                          : ctx_.info().local_mem_bytes / 4;
    std::uint32_t copies = 1;
    const std::uint32_t limit = std::min<std::uint32_t>(opts_.local_table_copies ? 1024 : 32, config.work_group_size);
    while (copies * 2 <= limit && (copies * 2) * copy_bytes <= budget &&
           (copies * 2) * copy_bytes + 64 <= ctx_.info().local_mem_bytes) {
      copies *= 2;
    }
    return copies;
  }

 private:
  std::uint64_t private_capacity(const launch_config& config) const {
    return std::min(small_table_buckets(), max_private_buckets(config));
  }

  std::uint64_t total_threads(const launch_config& config) const {
    return std::uint64_t{ctx_.info().compute_units} * config.work_groups_per_cu * config.work_group_size;
  }

  std::uint64_t private_budget() const {
    return std::min<std::uint64_t>({ctx_.info().max_alloc_bytes, ctx_.info().global_mem_bytes / 8,
                                    std::uint64_t{1} << 30});
  }

  void require_runnable(const execution_params& params) const {
    if (auto why = infeasibility(params, false); !why.empty()) {
      std::ostringstream text;
      text << "cannot run " << params << " for this query: " << why;
      throw invalid_argument_error(text.str());
    }
  }

  /// Index of a strategy's program build, without or with the run cache, the hot-key table
  /// (SHARED) and the cold-row queue (WORKGROUPLOCAL).
  static std::size_t variant(strategy_kind strategy, bool run_cache, bool hot_table = false, bool cold_queue = false) {
    return static_cast<std::size_t>(strategy) * 8 + (run_cache ? 1 : 0) + (hot_table ? 2 : 0) + (cold_queue ? 4 : 0);
  }

  /// The strategy's program; with `run_cache`, `hot_table` or `cold_queue`, built with
  /// -DGPUAGG_RUN_CACHE, -DGPUAGG_HOT_TABLE or -DGPUAGG_COLD_QUEUE (kernels.inc), other programs
  /// of the same source that the context caches separately. An interleaved table adds
  /// -DGPUAGG_INTERLEAVED to every build of the query.
  cl::Program program(strategy_kind strategy, bool run_cache = false, bool hot_table = false,
                      bool cold_queue = false) const {
    auto& slot = programs_[variant(strategy, run_cache, hot_table, cold_queue)];
    if (!slot()) {
      std::string build_options;
      const auto add = [&](const char* define) {
        build_options += build_options.empty() ? define : std::string(" ") + define;
      };
      if (run_cache) add("-DGPUAGG_RUN_CACHE");
      if (hot_table) add("-DGPUAGG_HOT_TABLE");
      if (cold_queue) add("-DGPUAGG_COLD_QUEUE");
      if (interleaved_) add("-DGPUAGG_INTERLEAVED");
      slot = ctx_.program(program_source_for<Bound>(strategy), build_options);
    }
    return slot;
  }

  cl::Kernel& aggregate_kernel(strategy_kind strategy, bool run_cache = false, bool hot_table = false,
                               bool cold_queue = false) const {
    auto& slot = aggregate_kernels_[variant(strategy, run_cache, hot_table, cold_queue)];
    if (!slot()) slot = ctx_.kernel(program(strategy, run_cache, hot_table, cold_queue), "gpuagg_aggregate");
    return slot;
  }

  std::size_t kernel_work_group_limit(const cl::Kernel& kernel) const {
    std::size_t limit = 0;
    detail::check(kernel.getWorkGroupInfo(ctx_.device(), CL_KERNEL_WORK_GROUP_SIZE, &limit),
                  "querying the kernel's work-group limit");
    return std::max<std::size_t>(limit, 1);
  }

  /// A working buffer from the context's pool; it goes back there when the query ends (or,
  /// for a table that grew, when it is replaced).
  cl::Buffer allocate(std::uint64_t bytes, const std::string& what) {
    auto [buffer, size_class] = ctx_.pooled_buffer(bytes, what);
    held_.emplace(buffer(), std::pair{size_class, buffer});
    live_bytes_ += bytes;
    stats_.peak_device_bytes = std::max(stats_.peak_device_bytes, live_bytes_);
    return buffer;
  }
  /// A buffer the caller keeps (the result), not pooled.
  cl::Buffer allocate_owned(std::uint64_t bytes, const std::string& what) {
    auto buffer = ctx_.buffer(bytes, what);
    live_bytes_ += bytes;
    stats_.peak_device_bytes = std::max(stats_.peak_device_bytes, live_bytes_);
    return buffer;
  }
  void release(std::uint64_t bytes) { live_bytes_ -= std::min(live_bytes_, bytes); }
  void recycle(const cl::Buffer& buffer) {
    if (auto found = held_.find(buffer()); found != held_.end()) {
      ctx_.recycle(found->second.first, found->second.second);
      held_.erase(found);
    }
  }
  void recycle(const table_buffers& t) {
    recycle(t.keys);
    for (const auto& acc : t.accs) recycle(acc);
  }

  table_buffers make_buffers(std::uint64_t buckets, const std::string& what) {
    table_buffers t;
    t.capacity = buckets;
    t.keys = allocate((buckets + 1) * sizeof(bits_type), what + " (keys)");
    for (std::size_t j = 0; j < aggregate_count; ++j) {
      t.accs[j] = allocate((buckets + 1) * acc_size(j), what + " (accumulators)");
    }
    return t;
  }

  table_buffers make_table(std::uint64_t capacity) {
    const std::string what = "the hash table of " + std::to_string(capacity) + " buckets";
    table_buffers t;
    if (interleaved_) {
      // One buffer of records; every accumulator argument names it too (the kernels rebind).
      t.capacity = capacity;
      t.interleaved = true;
      t.keys = allocate((capacity + 1) * Bound::interleaved_bucket_bytes, what + " (interleaved)");
      for (auto& acc : t.accs) acc = t.keys;
    } else {
      t = make_buffers(capacity, what);
    }
    t.bits = identity_scheme ? 0 : detail::log2_exact(capacity);
    cl::Kernel init = ctx_.kernel(home_program_, "gpuagg_initialize");
    cl_uint arg = 0;
    set_table_args(init, arg, t);
    set_arg(init, arg, cl_uint(capacity + 1));
    cl::Event done;
    const std::size_t local = std::min<std::size_t>(256, kernel_work_group_limit(init));
    launch(init, cover(capacity + 1, local), local, "INITIALIZE", &done);
    defer(done, "INITIALIZE", &query_stats::initialize_seconds);
    stats_.table_capacity = capacity;
    return t;
  }

  std::uint64_t table_bytes(const table_buffers& t) const {
    return (t.capacity + 1) * (t.interleaved ? Bound::interleaved_bucket_bytes : Bound::bucket_bytes);
  }

  /// Per block in flight: a device buffer per column, and a pinned staging buffer per column
  /// unless the column itself lies in pinned memory of this context (pinned_array), which the
  /// copy then reads directly.
  void make_staging() {
    for (const auto& column : columns_) {
      pinned_input_.push_back(ctx_.is_pinned(column.host, std::uint64_t(rows_) * column.element_size));
    }
    staging_.resize(window_);
    for (auto& slot : staging_) {
      for (std::size_t c = 0; c < columns_.size(); ++c) {
        const std::uint64_t bytes = std::uint64_t(block_rows_) * columns_[c].element_size;
        detail::buffer_pool::pinned_buffer pinned;
        std::uint64_t size_class = 0;
        if (!pinned_input_[c]) std::tie(pinned, size_class) = ctx_.pooled_pinned(bytes, "a pinned staging buffer");
        slot.pinned.push_back(pinned);
        slot.pinned_class.push_back(size_class);
        slot.mapped.push_back(pinned.mapped);
        slot.device.push_back(allocate(bytes, "an input block buffer"));
      }
    }
  }

  std::vector<bits_type> sample_keys() {
    const auto& key = columns_.front();
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(rows_, 1u << 14));
    std::vector<bits_type> sample(n);
    if (n == 0) return sample;
    const std::uint64_t stride = rows_ / n;
    if (!on_device_) {
      const auto* keys = static_cast<const typename key_policy::value_type*>(key.host);
      for (std::size_t i = 0; i < n; ++i) sample[i] = key_policy::to_bits(keys[i * stride]);
      return sample;
    }
    // A gather kernel, then one read: a strided rectangle read of single elements is slow on
    // some drivers (one small copy per element).
    cl::Kernel gather = ctx_.kernel(ctx_.program(sample_program_source<key_policy>.view()), "gpuagg_sample");
    cl::Buffer out = allocate(n * sizeof(bits_type), "the key sample");
    cl_uint arg = 0;
    set_arg(gather, arg, key.device);
    set_arg(gather, arg, cl_ulong(key.offset));
    set_arg(gather, arg, cl_ulong(stride));
    set_arg(gather, arg, cl_uint(n));
    set_arg(gather, arg, out);
    const std::size_t local = std::min<std::size_t>(256, kernel_work_group_limit(gather));
    launch(gather, cover(n, local), local, "sampling the key column", nullptr);
    // Read into pinned memory (a direct copy; a read into pageable memory may be staged).
    auto [pinned, size_class] = ctx_.pooled_pinned(n * sizeof(bits_type), "the key sample's host copy");
    const cl_int read = ctx_.compute_queue().enqueueReadBuffer(out, CL_TRUE, 0, n * sizeof(bits_type), pinned.mapped);
    if (read == CL_SUCCESS) std::memcpy(sample.data(), pinned.mapped, n * sizeof(bits_type));
    ctx_.recycle_pinned(size_class, pinned);
    detail::check(read, "reading the key sample");
    release(n * sizeof(bits_type));
    recycle(out);
    return sample;
  }

  template <class T>
  void set_arg(cl::Kernel& kernel, cl_uint& index, const T& value) {
    detail::check(kernel.setArg(index, value), "setting a kernel argument");
    ++index;
  }

  void set_table_args(cl::Kernel& kernel, cl_uint& index, const table_buffers& t) {
    set_arg(kernel, index, t.keys);
    for (const auto& acc : t.accs) set_arg(kernel, index, acc);
  }

  static std::size_t cover(std::uint64_t items, std::size_t local) {
    const std::uint64_t groups = std::min<std::uint64_t>((items + local - 1) / local, 65536);
    return static_cast<std::size_t>(std::max<std::uint64_t>(groups, 1) * local);
  }

  void launch(cl::Kernel& kernel, std::size_t global, std::size_t local, const char* what, cl::Event* done,
              const std::vector<cl::Event>* wait = nullptr) {
    detail::check(ctx_.compute_queue().enqueueNDRangeKernel(kernel, cl::NullRange, cl::NDRange(global),
                                                            cl::NDRange(local), wait, done),
                  what);
  }

  struct finalize_events {
    cl::Event kernel;
    cl::Event count_read;
  };

  /// Enqueues FINALIZE into new result buffers (`owned`: the caller's, else pooled ones the query
  /// releases) and the read of its count; waits for nothing. The table's size comes from the
  /// counters the last completion (or growth) read: no command has changed them since.
  template <class... Outputs>
  finalize_events enqueue_finalize(device_result<typename key_policy::value_type, Outputs...>& out, bool owned) {
    const std::uint64_t groups = known_meta_[detail::meta_groups] + (known_meta_[detail::meta_special] ? 1 : 0);
    const std::size_t n = static_cast<std::size_t>(std::max<std::uint64_t>(groups, 1));
    out.size_ = groups;
    const auto result_buffer = [&](std::uint64_t bytes, const char* what) {
      return owned ? allocate_owned(bytes, what) : allocate(bytes, what);
    };
    out.keys = result_buffer(n * sizeof(typename key_policy::value_type), "the result's keys");
    std::apply([&](auto&... b) { ((b = result_buffer(n * sizeof(Outputs), "a result column")), ...); }, out.columns);
    auto count = allocate(sizeof(cl_ulong), "the result counter");
    const cl_ulong zero = 0;
    detail::check(ctx_.compute_queue().enqueueFillBuffer(count, zero, 0, sizeof(cl_ulong)), "clearing the counter");
    cl::Kernel finalize = ctx_.kernel(home_program_, "gpuagg_finalize");
    cl_uint arg = 0;
    set_table_args(finalize, arg, table_);
    set_arg(finalize, arg, cl_uint(table_.capacity));
    set_arg(finalize, arg, key_min());
    set_arg(finalize, arg, meta_);
    set_arg(finalize, arg, count);
    set_arg(finalize, arg, out.keys);
    std::apply([&](auto&... b) { (set_arg(finalize, arg, b), ...); }, out.columns);
    finalize_events done;
    const std::size_t local = std::min<std::size_t>(256, kernel_work_group_limit(finalize));
    launch(finalize, cover(table_.capacity + 1, local), local, "FINALIZE", &done.kernel);
    detail::check(ctx_.compute_queue().enqueueReadBuffer(count, CL_FALSE, 0, sizeof(cl_ulong), finalize_count_,
                                                         nullptr, &done.count_read),
                  "reading the result count");
    detail::check(ctx_.compute_queue().flush(), "starting FINALIZE");
    return done;
  }

  /// One wait for FINALIZE, its count and `reads` (the result's copies, queued after them on the
  /// in-order compute queue), then each command's status in queue order and FINALIZE's
  /// profiled time.
  void await_finalize(std::uint64_t groups, const finalize_events& done, const std::vector<cl::Event>& reads) {
    (void)(reads.empty() ? done.count_read : reads.back()).wait();
    settle_deferred();
    detail::wait_for(done.kernel, "FINALIZE");
    stats_.finalize_seconds += detail::event_seconds(done.kernel);
    detail::wait_for(done.count_read, "reading the result count");
    for (const auto& read : reads) detail::wait_for(read, "reading the result");
    if (*finalize_count_ != groups) {
      throw error("internal error: FINALIZE wrote " + std::to_string(*finalize_count_) + " groups, the table holds " +
                  std::to_string(groups));
    }
    stats_.groups = groups;
  }

  std::array<cl_ulong, detail::meta_words> read_meta() {
    std::array<cl_ulong, detail::meta_words> meta{};
    detail::check(ctx_.compute_queue().enqueueReadBuffer(meta_, CL_TRUE, 0, sizeof(meta), meta.data()),
                  "reading the query's counters");
    return meta;
  }

  /// Zeroes `words` counters from `first` on the compute queue, without waiting: the kernels
  /// after it on the in-order queue see the zeros.
  /// The counters, read after the deferred commands, whose failures are reported as theirs.
  std::array<cl_ulong, detail::meta_words> read_meta_settled() {
    std::array<cl_ulong, detail::meta_words> meta{};
    cl::Event read;
    detail::check(ctx_.compute_queue().enqueueReadBuffer(meta_, CL_FALSE, 0, sizeof(meta), meta.data(), nullptr, &read),
                  "reading the query's counters");
    (void)read.wait();  // its status is checked below, after the earlier commands'
    settle_deferred();
    detail::wait_for(read, "reading the query's counters");
    return meta;
  }

  void clear_meta(std::size_t first, std::size_t words, const char* what) {
    const cl_ulong zero = 0;
    detail::check(
        ctx_.compute_queue().enqueueFillBuffer(meta_, zero, first * sizeof(cl_ulong), words * sizeof(cl_ulong)), what);
  }

  /// Commands the driver does not wait for when it enqueues them (INITIALIZE, MERGE): their
  /// status and profiled time are collected by settle_deferred().
  struct deferred_command {
    cl::Event event;
    const char* what;
    double query_stats::*seconds;
  };
  void defer(const cl::Event& event, const char* what, double query_stats::*seconds) {
    deferred_.push_back({event, what, seconds});
  }
  /// Checks each deferred command's status (a failure throws, named as the command) and adds its
  /// profiled time to the stats. Called after a wait for a later command of the in-order
  /// compute queue, so the events have completed and nothing waits here.
  void settle_deferred() {
    for (const auto& command : deferred_) {
      detail::wait_for(command.event, command.what);
      stats_.*command.seconds += detail::event_seconds(command.event);
    }
    deferred_.clear();
  }

  pending_block enqueue_block(const execution_params& params) {
    const detail::phase_clock clock(stats_.host.enqueue);
    const std::size_t block = next_block_++;
    const std::uint64_t first = std::uint64_t(block) * block_rows_;
    const std::uint64_t count = std::min<std::uint64_t>(block_rows_, rows_ - first);
    pending_block pending;
    pending.slot = block % window_;
    pending.generation = generation_;
    pending.params = params;
    pending.rows = count;

    std::vector<cl::Event> ready;
    std::vector<cl::Buffer> inputs;
    cl_ulong row_begin = 0;
    cl_ulong row_end = count;
    if (on_device_) {
      for (const auto& c : columns_) inputs.push_back(c.device);
      row_begin = columns_.front().offset + first;
      row_end = row_begin + count;
    } else {
      auto& slot = staging_[pending.slot];
      for (std::size_t c = 0; c < columns_.size(); ++c) {
        const auto& column = columns_[c];
        const std::size_t bytes = count * column.element_size;
        const char* source = static_cast<const char*>(column.host) + first * column.element_size;
        if (!pinned_input_[c]) {
          detail::parallel_copy(slot.mapped[c], source, bytes, opts_.copy_threads ? opts_.copy_threads : 16);
          source = static_cast<const char*>(slot.mapped[c]);
        }
        cl::Event copied;
        detail::check(ctx_.transfer_queue().enqueueWriteBuffer(slot.device[c], CL_FALSE, 0, bytes, source, nullptr,
                                                               &copied),
                      "copying an input block to the device");
        ready.push_back(copied);
        inputs.push_back(slot.device[c]);
      }
      detail::check(ctx_.transfer_queue().flush(), "starting the input copy");
    }

    if (const auto parts = partitions(count); parts > 1) {
      partition(inputs, row_begin, row_end, parts, ready, pending.partition);
      row_begin = 0;
      row_end = count;
      ready.clear();
    }

    // The run-cache and hot-table variants only where their own (cached) work-group limits allow
    // this configuration.
    const bool run_cache =
        use_run_cache(params) && params.config.work_group_size <= max_work_group_size(params.strategy, true);
    const bool hot_table = use_hot_table(params) &&
                           params.config.work_group_size <= max_work_group_size(params.strategy, run_cache, true);
    const bool cold_queue = run_cache && use_cold_queue(params) &&
                            params.config.work_group_size <= max_work_group_size(params.strategy, true, false, true);
    pending.hot_table = hot_table;
    pending.cold_queue = cold_queue;
    cl::Kernel& kernel = aggregate_kernel(params.strategy, run_cache, hot_table, cold_queue);
    cl_uint arg = 0;
    for (const auto& input : inputs) set_arg(kernel, arg, input);
    set_arg(kernel, arg, row_begin);
    set_arg(kernel, arg, row_end);
    set_table_args(kernel, arg, table_);
    set_arg(kernel, arg, cl_uint(table_.bits));
    set_arg(kernel, arg, cl_uint(table_.capacity));
    set_arg(kernel, arg, key_min());
    const std::uint64_t probes = identity_scheme ? 1 : std::min<std::uint64_t>(table_.capacity, 1024);
    set_arg(kernel, arg, cl_uint(probes));
    set_arg(kernel, arg, meta_);
    set_table_args(kernel, arg, spill_);
    set_arg(kernel, arg, cl_uint(spill_capacity_));
    const std::uint64_t key_bytes =
        (table_.capacity + 1) * (table_.interleaved ? Bound::interleaved_bucket_bytes : sizeof(bits_type));
    set_arg(kernel, arg, cl_uint(key_bytes <= plain_key_reads_max_bytes ? 1 : 0));
    if (run_cache) {
      // The run-cache build's hot-key register (kernels.inc): the sample's most frequent key,
      // when the sample was taken (without one, the register stays unused).
      set_arg(kernel, arg, hot_key_);
      set_arg(kernel, arg, cl_uint(hot_key_share_ > 0 ? 1 : 0));
    }
    if (hot_table) {
      if (!hot_keys_buffer_()) {
        hot_keys_buffer_ = allocate(hot_keys_.size() * sizeof(bits_type), "the hot-key table's keys");
        detail::check(ctx_.compute_queue().enqueueWriteBuffer(hot_keys_buffer_, CL_FALSE, 0,
                                                              hot_keys_.size() * sizeof(bits_type), hot_keys_.data()),
                      "copying the hot keys");
      }
      set_arg(kernel, arg, hot_keys_buffer_);
      set_arg(kernel, arg, cl_uint(hot_keys_.size()));
      set_arg(kernel, arg, cl_uint(detail::log2_exact(hot_capacity_)));
      set_arg(kernel, arg, cl_uint(hot_capacity_));
      set_arg(kernel, arg, cl::Local((hot_capacity_ + 1) * sizeof(bits_type)));
      for (std::size_t j = 0; j < aggregate_count; ++j) {
        set_arg(kernel, arg, cl::Local((hot_capacity_ + 1) * acc_size(j)));
      }
      set_arg(kernel, arg, cl::Local((hot_capacity_ + 1) * sizeof(cl_uint)));
    }
    const auto& config = params.config;
    if (params.strategy == strategy_kind::workgroup_local) {
      const auto buckets = local_capacity();
      const auto copies = local_table_copies(config);
      // Keys, or for direct addressing a bitmap of the entries in use (table_layout_bytes).
      const std::uint64_t entries = (buckets + 1) * copies;
      set_arg(kernel, arg, cl::Local(identity_scheme ? (entries + 31) / 32 * 4 : entries * sizeof(bits_type)));
      for (std::size_t j = 0; j < aggregate_count; ++j) {
        set_arg(kernel, arg, cl::Local((buckets + 1) * copies * acc_size(j)));
      }
      set_arg(kernel, arg, cl_uint(identity_scheme ? 0 : detail::log2_exact(buckets)));
      set_arg(kernel, arg, cl_uint(buckets));
      set_arg(kernel, arg, cl_uint(copies));
      if (cold_queue) {
        const std::uint32_t rows = cold_rows_per_item(config);
        const std::uint64_t queued = std::uint64_t{config.work_group_size} * rows;
        set_arg(kernel, arg, cl::Local(queued * sizeof(bits_type)));
        set_arg(kernel, arg, cl::Local(queued * sizeof(cl_uint)));
        set_arg(kernel, arg, cl_uint(rows));
      }
    } else if (params.strategy == strategy_kind::independent) {
      const auto buckets = private_capacity(config);
      ensure_private_tables(total_threads(config) * (buckets + 1));
      set_table_args(kernel, arg, private_);
      set_arg(kernel, arg, cl_uint(identity_scheme ? 0 : detail::log2_exact(buckets)));
      set_arg(kernel, arg, cl_uint(buckets));
    }
    // The work-group size was checked against this kernel's cached limit by require_runnable()
    // (or comes from initial_config(), clamped to it): no per-block driver query.
    const std::size_t local = config.work_group_size;
    const auto global = static_cast<std::size_t>(total_threads(config));
    launch(kernel, global, local, "AGGREGATE", &pending.kernel, ready.empty() ? nullptr : &ready);
    detail::check(ctx_.compute_queue().enqueueReadBuffer(meta_, CL_FALSE, 0, detail::meta_words * sizeof(cl_ulong),
                                                         meta_mirror_ + pending.slot * detail::meta_words,
                                                         nullptr, &pending.meta_read),
                  "reading the query's counters");
    detail::check(ctx_.compute_queue().flush(), "starting AGGREGATE");
    return pending;
  }

  /// PARTITION's runs for a block of `rows` rows (1: none): options' `partitions`, else the
  /// rule measured on the H100 (options.hpp), for blocks of at least 2^16 rows; at most one run
  /// per bucket.
  std::uint32_t partitions(std::uint64_t rows) const {
    std::uint64_t parts = opts_.partitions;
    if (parts == 0) {
      // The bytes the rows touch: direct addressing's keys are a bitmap (a bit per bucket).
      const std::uint64_t bytes = identity_scheme ? table_layout_bytes(table_.capacity, 1) : table_bytes(table_);
      parts = rows < (std::uint64_t{1} << 16) || bytes <= (std::uint64_t{40} << 20) ? 1
              : bytes <= (std::uint64_t{128} << 20)                                  ? 8
              : bytes <= (std::uint64_t{3} << 30)                                    ? 32
                                                                                     : 1;
    }
    return static_cast<std::uint32_t>(std::min<std::uint64_t>(parts, table_.capacity));
  }

  /// Orders rows [row_begin, row_end) of `inputs` into `parts` runs by their home bucket's
  /// region of the table (kernels.inc: PARTITION), into partition_inputs_, and points `inputs`
  /// there. The first kernel waits for `ready`; `events` receives the kernels' events.
  void partition(std::vector<cl::Buffer>& inputs, cl_ulong row_begin, cl_ulong row_end, std::uint32_t parts,
                 const std::vector<cl::Event>& ready, std::vector<cl::Event>& events) {
    const std::uint64_t rows = row_end - row_begin;
    if (partition_kernels_.empty()) {
      for (const char* name : {"gpuagg_partition_count", "gpuagg_partition_scan", "gpuagg_partition_scatter"}) {
        partition_kernels_.push_back(ctx_.kernel(home_program_, name));
      }
      std::size_t limit = 256;
      for (const auto& kernel : partition_kernels_) limit = std::min(limit, kernel_work_group_limit(kernel));
      partition_local_ = 1;
      while (partition_local_ * 2 <= limit) partition_local_ *= 2;
      partition_tiles_ = std::uint64_t{ctx_.info().compute_units} * 8;
      partition_counts_ = allocate(partition_tiles_ * detail::max_partitions * sizeof(cl_uint), "PARTITION's counts");
      partition_bases_ = allocate(detail::max_partitions * sizeof(cl_uint), "PARTITION's bases");
      partition_total_ = allocate(sizeof(cl_uint), "PARTITION's total");
      for (const auto& column : columns_) {
        partition_inputs_.push_back(allocate(std::uint64_t(block_rows_) * column.element_size, "a partitioned block"));
      }
    }
    const std::uint64_t tiles =
        std::clamp<std::uint64_t>((rows + partition_local_ * 16 - 1) / (partition_local_ * 16), 1, partition_tiles_);
    const std::uint64_t tile_rows = (rows + tiles - 1) / tiles;
    const std::uint64_t region = (table_.capacity + parts - 1) / parts;
    const auto params = [&](cl::Kernel& kernel, cl_uint& arg) {
      set_arg(kernel, arg, row_begin);
      set_arg(kernel, arg, row_end);
      set_arg(kernel, arg, cl_ulong(tile_rows));
      set_arg(kernel, arg, cl_uint(table_.bits));
      set_arg(kernel, arg, cl_uint(table_.capacity));
      set_arg(kernel, arg, key_min());
      set_arg(kernel, arg, cl_uint(region));
      set_arg(kernel, arg, cl_uint(parts));
    };
    const std::size_t local = partition_local_;
    events.resize(4);
    auto& count = partition_kernels_[0];
    cl_uint arg = 0;
    for (std::size_t c = 0; c < key_policy::columns; ++c) set_arg(count, arg, inputs[c]);
    params(count, arg);
    set_arg(count, arg, partition_counts_);
    launch(count, tiles * local, local, "PARTITION (count)", &events[0], ready.empty() ? nullptr : &ready);
    auto& scan = partition_kernels_[1];
    arg = 0;
    set_arg(scan, arg, partition_counts_);
    set_arg(scan, arg, cl_uint(tiles));
    set_arg(scan, arg, partition_bases_);
    set_arg(scan, arg, cl::Local(local * sizeof(cl_uint)));
    launch(scan, parts * local, local, "PARTITION (scan)", &events[1]);
    arg = 0;
    set_arg(scan, arg, partition_bases_);
    set_arg(scan, arg, cl_uint(parts));
    set_arg(scan, arg, partition_total_);
    launch(scan, local, local, "PARTITION (bases)", &events[2]);
    auto& scatter = partition_kernels_[2];
    arg = 0;
    for (const auto& input : inputs) set_arg(scatter, arg, input);
    params(scatter, arg);
    set_arg(scatter, arg, partition_counts_);
    set_arg(scatter, arg, partition_bases_);
    for (const auto& output : partition_inputs_) set_arg(scatter, arg, output);
    launch(scatter, tiles * local, local, "PARTITION (scatter)", &events[3]);
    inputs = partition_inputs_;
  }

  /// Waits for a block, records it, and grows the table if it filled.
  double complete(pending_block& block) {
    detail::phase_clock waiting(stats_.host.wait);
    // One wait, for the counters' read: it follows AGGREGATE (and INITIALIZE, PARTITION) on the
    // in-order compute queue, so they have finished too. Their statuses are checked in queue
    // order, so a failure is named by the command that failed.
    (void)block.meta_read.wait();
    settle_deferred();
    detail::wait_for(block.kernel, "AGGREGATE");
    detail::wait_for(block.meta_read, "reading the query's counters");
    waiting.stop();
    const double aggregate = detail::event_seconds(block.kernel);
    double partition = 0;
    for (const auto& event : block.partition) partition += detail::event_seconds(event);
    stats_.blocks.push_back({block.params, block.rows, aggregate, partition, block.hot_table, block.cold_queue});
    stats_.aggregate_seconds += aggregate;
    stats_.partition_seconds += partition;
    const double seconds = aggregate + partition;
    if (block.generation != generation_) return seconds;  // a growth since has accounted for it
    const cl_ulong* meta = meta_mirror_ + block.slot * detail::meta_words;
    if (meta[detail::meta_lost]) throw error("internal error: the spill area overflowed");
    std::copy(meta, meta + detail::meta_words, known_meta_.begin());
    known_groups_ = meta[detail::meta_groups];
    if (meta[detail::meta_spilled] > 0) {
      if constexpr (identity_scheme) {
        throw key_out_of_domain_error("a key lies outside the domain [min, min + " +
                                      std::to_string(opts_.domain->size - 1) +
                                      "] given for direct_addressing; widen options::domain or use hashing<>");
      }
      grow();
    } else if (!identity_scheme && blocks_left() > 0 &&
               double(meta[detail::meta_groups]) > opts_.max_load_factor * double(table_.capacity)) {
      grow();
    }
    return seconds;
  }

  /// Rehashes into a larger table and merges the spill area (every in-flight block first).
  void grow() {
    const detail::phase_clock clock(stats_.host.growth);
    detail::check(ctx_.compute_queue().finish(), "waiting for AGGREGATE");
    auto meta = read_meta();
    if (meta[detail::meta_lost]) throw error("internal error: the spill area overflowed");
    const std::uint64_t groups = meta[detail::meta_groups];
    const std::uint64_t spilled = meta[detail::meta_spilled];
    const std::uint64_t capacity = std::max(table_capacity_for(groups + spilled), table_.capacity * 2);
    table_buffers old = std::move(table_);
    // INITIALIZE, the counter resets and the merges queue up without host waits; the counters'
    // read after them is the one wait, and only then does the old table go back to the pool.
    table_ = make_table(capacity);
    clear_meta(detail::meta_groups, 1, "resetting the group counter");
    merge(old, old.capacity + (meta[detail::meta_special] ? 1 : 0), old.capacity);
    merge(spill_, spilled, 0);
    clear_meta(detail::meta_spilled, 1, "resetting the spill counter");
    meta = read_meta_settled();
    if (meta[detail::meta_lost]) throw error("internal error: a merge found no bucket");
    release(table_bytes(old));
    recycle(old);
    known_meta_ = meta;
    known_groups_ = meta[detail::meta_groups];
    stats_.spilled_entries += spilled;
    ++stats_.table_growths;
    ++generation_;
  }

  void merge(const table_buffers& source, std::uint64_t entries, std::uint64_t table_entries) {
    if (entries == 0) return;
    cl::Kernel kernel = ctx_.kernel(home_program_, "gpuagg_merge");
    cl_uint arg = 0;
    set_table_args(kernel, arg, source);
    set_arg(kernel, arg, cl_ulong(entries));
    set_arg(kernel, arg, cl_ulong(table_entries));
    set_table_args(kernel, arg, table_);
    set_arg(kernel, arg, cl_uint(table_.bits));
    set_arg(kernel, arg, cl_uint(table_.capacity));
    set_arg(kernel, arg, key_min());
    set_arg(kernel, arg, meta_);
    set_arg(kernel, arg, cl_uint(source.interleaved ? 1 : 0));
    cl::Event done;
    const std::size_t local = std::min<std::size_t>(256, kernel_work_group_limit(kernel));
    launch(kernel, cover(entries, local), local, "MERGE", &done);
    defer(done, "MERGE", &query_stats::merge_seconds);
  }

  void ensure_private_tables(std::uint64_t buckets) {
    if (private_.capacity >= buckets) return;
    if (private_.keys()) {
      release(table_bytes(private_));
      recycle(private_);
    }
    private_ = make_buffers(buckets, "INDEPENDENT's private tables");
  }

  bits_type key_min() const {
    if constexpr (identity_scheme) {
      return static_cast<bits_type>(opts_.domain->min_bits);
    } else {
      return 0;
    }
  }

  void finish_stats() {
    stats_.programs_built = ctx_.programs_built() - builds_before_;
    stats_.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  }

  context& ctx_;
  options opts_;
  std::vector<detail::column_data> columns_;
  std::chrono::steady_clock::time_point started_;
  std::uint64_t rows_ = 0;
  bool on_device_ = false;
  std::size_t block_rows_ = 0;
  std::size_t blocks_total_ = 0;
  std::size_t next_block_ = 0;
  std::size_t window_ = 2;
  std::uint64_t expected_groups_ = 1;
  std::uint64_t known_groups_ = 0;
  double hot_key_share_ = 0;
  bits_type hot_key_ = 0;  // the sample's most frequent key (the run cache's hot-key register)
  std::uint64_t spill_capacity_ = 0;
  std::uint64_t live_bytes_ = 0;
  unsigned generation_ = 0;
  bool interleaved_ = false;  // the global table's layout (use_interleaved_table)
  std::size_t builds_before_ = 0;
  cl::Program home_program_;
  // Per strategy, without and with the run cache and the hot-key table (variant()).
  mutable std::array<cl::Program, 24> programs_;
  mutable std::array<cl::Kernel, 24> aggregate_kernels_;
  mutable std::array<std::uint32_t, 24> kernel_limits_{};
  std::vector<bits_type> hot_keys_;  // the hot-key table's keys (use_hot_table), most frequent first
  double hot_table_share_ = 0;       // their share of the sample
  std::uint32_t hot_capacity_ = 0;   // the hot-key table's buckets (a power of two, at most half full)
  cl::Buffer hot_keys_buffer_;       // hot_keys_ on the device (made on first use)
  cl::Buffer meta_;
  detail::buffer_pool::pinned_buffer readback_;  // pinned host memory: the counters' copies, then FINALIZE's count
  std::uint64_t readback_class_ = 0;
  cl_ulong* meta_mirror_ = nullptr;  // in readback_: the counters after each block in flight, by slot
  std::array<cl_ulong, detail::meta_words> known_meta_{};  // the counters after the last completion or growth
  std::vector<deferred_command> deferred_;  // enqueued, not yet waited for (settle_deferred)
  cl_ulong* finalize_count_ = nullptr;      // in readback_: FINALIZE's count of groups written
  table_buffers table_;
  table_buffers spill_;
  table_buffers private_;
  std::vector<staging_slot> staging_;
  std::vector<cl::Kernel> partition_kernels_;  // PARTITION: count, scan, scatter (made on first use)
  std::size_t partition_local_ = 1;
  std::uint64_t partition_tiles_ = 1;          // most tiles (work groups) of count and scatter
  cl::Buffer partition_counts_;
  cl::Buffer partition_bases_;
  cl::Buffer partition_total_;
  std::vector<cl::Buffer> partition_inputs_;   // one block's rows in runs, per column
  std::vector<bool> pinned_input_;  // per column: the caller's memory is pinned (no staging)
  std::map<cl_mem, std::pair<std::uint64_t, cl::Buffer>> held_;  // pooled buffers, by handle
  query_stats stats_;
};

}  // namespace gpuagg
