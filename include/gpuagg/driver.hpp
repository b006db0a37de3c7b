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
#include <span>
#include <thread>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "column.hpp"
#include "error.hpp"
#include "launch_config.hpp"
#include "estimate.hpp"
#include "options.hpp"
#include "plan.hpp"
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

/// What a sample of keys says: its frequencies (distinct keys, keys seen once and twice: stage 1
/// of the group estimate, estimate.hpp), the share of the sample its most frequent key holds, and
/// that key. One frequency count serves all.
struct sample_profile {
  std::size_t sample_size = 0;
  std::uint64_t distinct = 0;
  std::uint64_t once = 0;   ///< keys seen once
  std::uint64_t twice = 0;  ///< keys seen twice
  double hottest_key_share = 0;
  std::uint64_t hottest_key = 0;  ///< the key's bits
  /// The share of sampled rows (frequent keys aside) whose right neighbour has the same key:
  /// near 1 for sorted or clustered input, about 1/groups for shuffled input.
  double runs_share = 0;
  /// The frequent keys (bits), most frequent first, and their counts in the sample: keys seen at
  /// least 8 times and at least 4 times as often as the average group (uniform keys have almost
  /// never any), at most max_frequent_keys. SHARED's hot-key table takes them (kernels.inc), and
  /// the group estimate sets them aside.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> frequent;

  frequent_keys_summary frequent_summary() const {
    frequent_keys_summary summary;
    if (sample_size == 0) return summary;
    std::uint64_t covered = 0;
    for (const auto& [key, count] : frequent) covered += count;
    summary.keys = frequent.size();
    summary.share = double(covered) / double(sample_size);
    return summary;
  }
};
inline constexpr std::size_t max_frequent_keys = 4096;

/// `neighbours[i]`: the key of sample row i's right neighbour in the input (empty: not known).
template <class Bits>
sample_profile profile_sample(std::span<const Bits> sample, std::span<const Bits> neighbours = {}) {
  if (sample.empty()) return {};
  // Frequencies in a flat open-addressing table (linear probing, at most half full): a
  // node-based map costs about a millisecond for 16 Ki distinct keys, a query's whole budget
  // at low cardinality. The table is the thread's scratch, kept between queries and cleared
  // slot by slot (allocating and zeroing it per query costs more than the count); the counting
  // loop only counts, the most frequent key is found among the used slots after.
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
  std::uint32_t top = 0;
  Bits hottest = 0;
  sample_profile profile;
  for (const auto at : used) {
    if (counts[at] > top) {
      top = counts[at];
      hottest = keys[at];
    }
    profile.once += counts[at] == 1 ? 1 : 0;
    profile.twice += counts[at] == 2 ? 1 : 0;
  }
  profile.distinct = used.size();
  profile.sample_size = sample.size();
  profile.hottest_key_share = double(top) / double(sample.size());
  profile.hottest_key = static_cast<std::uint64_t>(hottest);
  const double average = double(sample.size()) / double(std::max<std::uint64_t>(profile.distinct, 1));
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
  // Runs: how often a sampled row's right neighbour holds the same key, the frequent keys'
  // rows aside (their neighbours are equal because they are frequent, not because the input
  // is ordered).
  if (neighbours.size() == sample.size()) {
    std::vector<std::uint64_t> frequent_keys;
    for (const auto& [key, count] : profile.frequent) frequent_keys.push_back(key);
    std::sort(frequent_keys.begin(), frequent_keys.end());
    std::size_t pairs = 0;
    std::size_t equal = 0;
    for (std::size_t i = 0; i < sample.size(); ++i) {
      if (std::binary_search(frequent_keys.begin(), frequent_keys.end(), std::uint64_t(sample[i]))) continue;
      ++pairs;
      equal += sample[i] == neighbours[i] ? 1 : 0;
    }
    profile.runs_share = pairs > 0 ? double(equal) / double(pairs) : 0.0;
  }
  return profile;
}

template <class Bits>
sample_profile profile_sample(const std::vector<Bits>& sample) {
  return profile_sample(std::span<const Bits>(sample));
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
    std::uint32_t widest = 1;
    for (const auto& c : columns_) widest = std::max<std::uint32_t>(widest, static_cast<std::uint32_t>(c.element_size));
    shape_ = query_shape::of<Bound>(widest, identity_scheme ? opts_.domain->size : 0);
    stats_.device = ctx_.info().name;
    stats_.rows = rows_;
    builds_before_ = ctx_.programs_built();
    if (rows_ > 0) {
      setup();
    } else {
      make_planner({});
    }
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

  /// The query's plan: every decision about how it runs (plan.hpp).
  const query_planner& plan() const noexcept { return *planner_; }

  std::uint64_t rows() const noexcept { return rows_; }
  /// Rows of the blocks run_remaining() runs, and of the (possibly smaller) blocks run_block()
  /// runs, which the tuner measures (query_planner::tuning_block_rows).
  std::size_t block_rows() const noexcept { return block_rows_; }
  std::size_t tuning_block_rows() const noexcept { return slice_rows_; }
  /// Blocks of run_block()'s size: all of the input, and those not yet processed.
  std::size_t blocks_total() const noexcept { return rows_ == 0 ? 0 : (rows_ + slice_rows_ - 1) / slice_rows_; }
  std::size_t blocks_left() const noexcept { return (rows_ - next_row_ + slice_rows_ - 1) / slice_rows_; }
  const query_stats& stats() const noexcept { return stats_; }
  const device_info& device() const noexcept { return ctx_.info(); }
  /// Groups to plan for: the hint or estimate, or what the table already holds if more.
  std::uint64_t planned_groups() const noexcept { return planner_->planned_groups(); }

  // The plan's answers the tuner and the benchmarks ask the driver for.
  launch_config initial_config(strategy_kind strategy) const { return planner_->initial_config(strategy); }
  execution_params default_params() const { return planner_->default_params(); }
  bool feasible(const execution_params& params) const { return planner_->feasible(params); }
  std::string infeasibility(const execution_params& params, bool strict = true) const {
    return planner_->infeasibility(params, strict);
  }
  /// Largest work-group size the device allows.
  std::uint32_t max_work_group_size() const noexcept { return ctx_.info().max_work_group_size; }
  /// Largest power-of-two work-group size a variant's AGGREGATE kernel can run with on this
  /// device (the kernel's own limit, from its register use, may be below the device's).
  std::uint32_t max_work_group_size(strategy_kind strategy) const { return planner_->max_work_group_size(strategy); }
  /// Whether this query's global table is interleaved (query_planner::interleaved).
  bool interleaved_table() const noexcept { return interleaved_; }

  /// Processes the next block (of tuning_block_rows()) with `params` and waits for it; returns
  /// its profiled AGGREGATE time in seconds. This is the step the tuner drives.
  double run_block(const execution_params& params) {
    if (blocks_left() == 0) throw invalid_argument_error("run_block: no block left");
    require_runnable(params);
    auto block = enqueue_block(params, slice_rows_);
    return complete(block);
  }

  /// Processes every remaining block (of block_rows()), `blocks_in_flight` at a time: with
  /// `params` if given, else with the plan's default_params() re-evaluated per block (the table's
  /// groups may have outgrown a local table).
  void run_remaining(const std::optional<execution_params>& params = std::nullopt) {
    if (next_row_ >= rows_) return;
    if (params) require_runnable(*params);
    std::deque<pending_block> in_flight;
    while (next_row_ < rows_) {
      if (in_flight.size() >= window_) {
        complete(in_flight.front());
        in_flight.pop_front();
      }
      in_flight.push_back(enqueue_block(params ? *params : planner_->default_params(), block_rows_));
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
    if (next_row_ < rows_) run_remaining();
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
    if (next_row_ < rows_) run_remaining();
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
    if (opts_.tuning_block_bytes && *opts_.tuning_block_bytes == 0) {
      throw invalid_argument_error("tuning_block_bytes must be positive");
    }
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

  /// The groups planned for, and where the number came from.
  struct group_estimate {
    std::uint64_t groups = 1;
    estimate_source source = estimate_source::none;
  };

  void setup() {
    // The key sample (16 Ki, strided): the group estimate's first stage, the skew the default
    // strategy, the run cache and the hot-key table follow, the runs the configuration follows;
    // skipped only when the caller fixed every one of these.
    const bool estimate = !identity_scheme && !opts_.expected_groups;
    detail::sample_profile profile;
    if (estimate || !opts_.strategy || !opts_.config || !opts_.run_cache || opts_.hot_table.value_or(true)) {
      detail::phase_clock sampling(stats_.host.sample);
      const auto sample = sample_keys();
      sampling.stop();
      const detail::phase_clock counting(stats_.host.profile);
      const std::size_t n = sample.size() / 2;
      profile = detail::profile_sample(std::span<const bits_type>(sample.data(), n),
                                       std::span<const bits_type>(sample.data() + n, n));
    }
    hot_key_ = static_cast<bits_type>(profile.hottest_key);
    group_estimate groups;
    if constexpr (identity_scheme) {
      groups = {opts_.domain->size, estimate_source::domain};
    } else if (opts_.expected_groups) {
      groups = {std::max<std::uint64_t>(*opts_.expected_groups, 1), estimate_source::hint};
    } else {
      const detail::phase_clock clock(stats_.host.estimate);
      groups = estimate_groups(profile);
    }
    stats_.expected_groups = groups.groups;
    stats_.expected_groups_estimated = estimate;
    stats_.estimate_source = groups.source;
    make_planner(profile, groups);
    const std::uint64_t capacity = planner_->initial_table_capacity();
    interleaved_ = planner_->interleaved(capacity);
    for (std::size_t i = 0; i < planner_->hot_keys().keys; ++i) {
      hot_keys_.push_back(static_cast<bits_type>(profile.frequent[i].first));
    }
    // The programs whose kernel limits the plan's choice reads build side by side. The first
    // program also provides INITIALIZE, MERGE and FINALIZE.
    detail::phase_clock programs(stats_.host.programs);
    std::vector<context::program_request> needed;
    for (const auto strategy : planner_->strategies_to_build()) needed.push_back(program_request({strategy}));
    ctx_.prefetch(needed);
    home_program_ = program({planner_->default_params().strategy});
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

  /// The plan, from what the sample and the estimate found; the kernels' work-group limits come
  /// from building their programs, on first use.
  void make_planner(const detail::sample_profile& sample, group_estimate groups = {}) {
    input_profile profile;
    profile.rows = rows_;
    profile.on_device = on_device_;
    profile.expected_groups = groups.groups;
    profile.source = groups.source;
    profile.sampled = sample.sample_size > 0;
    profile.hottest_key_share = sample.hottest_key_share;
    profile.runs_share = sample.runs_share;
    profile.sample_size = sample.sample_size;
    for (const auto& [key, count] : sample.frequent) profile.frequent_counts.push_back(count);
    planner_.emplace(ctx_.info(), shape_, std::move(profile), opts_,
                     [this](const kernel_variant& variant) { return kernel_limit(variant); });
    block_rows_ = planner_->block_rows();
    slice_rows_ = planner_->tuning_block_rows();
    window_ = planner_->window();
    stats_.plan_level = planner_->entry().level;
  }

  /// Rows the group estimate's second stage sketches: on the device a strided 1/32 of 2^27 rows
  /// reads a quarter of the key column's sectors; on the host the strided reads are cache misses
  /// that must stay a small part of the transfer they precede.
  static constexpr std::uint64_t device_sketch_rows = std::uint64_t{1} << 22;
  static constexpr std::uint64_t host_sketch_rows = std::uint64_t{1} << 20;

  /// The group estimate's stages (estimate.hpp): the sample's frequencies; else sketches of a
  /// strided sample; else a sketch of every key (device input) or the sample's extrapolation
  /// (host input, where growth corrects an estimate that is low).
  group_estimate estimate_groups(const detail::sample_profile& profile) {
    if (const auto groups = detail::estimate_from_frequencies(profile.sample_size, profile.distinct, profile.once,
                                                              profile.twice, rows_)) {
      return {std::max<std::uint64_t>(*groups, 1), estimate_source::sample};
    }
    const auto& key = columns_.front();
    const std::uint64_t sampled = std::min<std::uint64_t>(rows_, on_device_ ? device_sketch_rows : host_sketch_rows);
    detail::sketch_evidence evidence;
    evidence.rows = rows_;
    evidence.sample_rows = sampled;
    evidence.sub_rows = (sampled + 3) / 4;
    const std::uint64_t stride = rows_ / sampled;
    detail::host_sketch sketch;
    if (on_device_) {
      sketch = sketch_on_device(key.device, key.offset, stride, sampled, key.offset + rows_, true);
    } else {
      const unsigned threads = opts_.copy_threads ? opts_.copy_threads
                                                  : std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
      sketch = detail::sketch_host_keys(static_cast<const typename key_policy::value_type*>(key.host), rows_, stride,
                                        sampled, threads);
    }
    evidence.sample_distinct = detail::sketch_estimate(sketch.registers);
    evidence.sub_distinct = detail::sketch_estimate(sketch.sub_registers);
    evidence.neighbour_pairs = sketch.neighbour_pairs;
    evidence.neighbour_equal = sketch.neighbour_equal;
    const auto frequent = profile.frequent_summary();
    if (const auto decision = detail::estimate_from_sketch(evidence, frequent); decision.groups) {
      return {std::max<std::uint64_t>(*decision.groups, 1), estimate_source::sketch};
    }
    if (!on_device_) return {std::max<std::uint64_t>(detail::extrapolate_from_sketch(evidence, frequent), 1),
                             estimate_source::extrapolated};
    const auto full = sketch_on_device(key.device, key.offset, 1, rows_, key.offset + rows_, false);
    const double every = detail::sketch_estimate(full.registers);
    return {static_cast<std::uint64_t>(std::clamp(std::llround(every), 1LL, static_cast<long long>(rows_))),
            estimate_source::full_sketch};
  }

  /// The sketches of `n` keys of `keys` (gpuagg_sketch), read back.
  detail::host_sketch sketch_on_device(const cl::Buffer& keys, cl_ulong first, cl_ulong stride, cl_ulong n,
                                       cl_ulong rows_end, bool sampled) {
    constexpr std::size_t registers = detail::sketch_registers;
    const std::uint64_t register_bytes = 2 * registers * sizeof(cl_uint);
    if (!sketch_registers_()) {
      sketch_registers_ = allocate(register_bytes, "the group estimate's sketches");
      sketch_counts_ = allocate(2 * sizeof(cl_ulong), "the group estimate's counts");
    }
    auto& queue = ctx_.compute_queue();
    const cl_uint zero = 0;
    detail::check(queue.enqueueFillBuffer(sketch_registers_, zero, 0, register_bytes), "clearing the sketches");
    detail::check(queue.enqueueFillBuffer(sketch_counts_, zero, 0, 2 * sizeof(cl_ulong)), "clearing the counts");
    cl::Kernel kernel = ctx_.kernel(estimate_program(), "gpuagg_sketch");
    const std::size_t local = std::min<std::size_t>(256, power_of_two_below(kernel_work_group_limit(kernel)));
    cl_uint arg = 0;
    set_arg(kernel, arg, keys);
    set_arg(kernel, arg, first);
    set_arg(kernel, arg, stride);
    set_arg(kernel, arg, n);
    set_arg(kernel, arg, rows_end);
    set_arg(kernel, arg, cl_uint(sampled ? 1 : 0));
    set_arg(kernel, arg, sketch_registers_);
    set_arg(kernel, arg, sketch_counts_);
    set_arg(kernel, arg, cl::Local(2 * local * sizeof(cl_uint)));
    const std::uint64_t groups =
        std::clamp<std::uint64_t>((n + local - 1) / local, 1, std::uint64_t{ctx_.info().compute_units} * 16);
    cl::Event done;
    launch(kernel, static_cast<std::size_t>(groups * local), local, "the group estimate's sketch", &done);
    auto [pinned, size_class] = ctx_.pooled_pinned(register_bytes + 2 * sizeof(cl_ulong), "the sketches' host copy");
    auto* host = static_cast<char*>(pinned.mapped);
    cl_int read = queue.enqueueReadBuffer(sketch_registers_, CL_FALSE, 0, register_bytes, host);
    if (read == CL_SUCCESS) read = queue.enqueueReadBuffer(sketch_counts_, CL_TRUE, 0, 2 * sizeof(cl_ulong), host + register_bytes);
    detail::host_sketch sketch;
    if (read == CL_SUCCESS) {
      const auto* words = reinterpret_cast<const cl_uint*>(host);
      std::copy(words, words + registers, sketch.registers.begin());
      std::copy(words + registers, words + 2 * registers, sketch.sub_registers.begin());
      cl_ulong counts[2];
      std::memcpy(counts, host + register_bytes, sizeof(counts));
      sketch.neighbour_pairs = counts[0];
      sketch.neighbour_equal = counts[1];
    }
    ctx_.recycle_pinned(size_class, pinned);
    detail::check(read, "reading the sketches");
    detail::wait_for(done, "the group estimate's sketch");
    stats_.estimate_seconds += detail::event_seconds(done);
    return sketch;
  }

  void require_runnable(const execution_params& params) const {
    if (auto why = planner_->infeasibility(params, false); !why.empty()) {
      std::ostringstream text;
      text << "cannot run " << params << " for this query: " << why;
      throw invalid_argument_error(text.str());
    }
  }

  /// What the context builds for a variant (program()).
  context::program_request program_request(const kernel_variant& variant) const {
    std::string build_options;
    const auto add = [&](const char* define) {
      build_options += build_options.empty() ? define : std::string(" ") + define;
    };
    if (variant.run_cache) add("-DGPUAGG_RUN_CACHE");
    if (variant.hot_table) add("-DGPUAGG_HOT_TABLE");
    if (variant.cold_queue) add("-DGPUAGG_COLD_QUEUE");
    if (interleaved_) add("-DGPUAGG_INTERLEAVED");
    return {program_source_for<Bound>(variant.strategy), build_options};
  }

  /// A variant's program: built with -DGPUAGG_RUN_CACHE, -DGPUAGG_HOT_TABLE or
  /// -DGPUAGG_COLD_QUEUE (kernels.inc) where the variant has them, other programs of the same
  /// source that the context caches separately. An interleaved table adds -DGPUAGG_INTERLEAVED
  /// to every build of the query.
  cl::Program program(const kernel_variant& variant) const {
    auto& slot = programs_[variant.index()];
    if (!slot()) {
      const auto request = program_request(variant);
      slot = ctx_.program(request.source, request.options);
    }
    return slot;
  }

  /// The group estimate's program (the key sample and the sketches).
  cl::Program estimate_program() const { return ctx_.program(sample_program_source<key_policy>.view()); }

  cl::Kernel& aggregate_kernel(const kernel_variant& variant) const {
    auto& slot = aggregate_kernels_[variant.index()];
    if (!slot()) slot = ctx_.kernel(program(variant), "gpuagg_aggregate");
    return slot;
  }

  /// The work-group limit of a variant's AGGREGATE kernel (its program built on first use).
  std::uint32_t kernel_limit(const kernel_variant& variant) const {
    auto& limit = kernel_limits_[variant.index()];
    if (limit == 0) {
      limit = static_cast<std::uint32_t>(
          std::min<std::size_t>(kernel_work_group_limit(aggregate_kernel(variant)), ctx_.info().max_work_group_size));
    }
    return limit;
  }

  static std::size_t power_of_two_below(std::size_t limit) {
    std::size_t p = 1;
    while (p * 2 <= limit) p *= 2;
    return p;
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

  /// The key sample: 16 Ki keys, strided over the input, then each one's right neighbour.
  std::vector<bits_type> sample_keys() {
    const auto& key = columns_.front();
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(rows_, 1u << 14));
    std::vector<bits_type> sample(2 * n);
    if (n == 0) return sample;
    const std::uint64_t stride = rows_ / n;
    if (!on_device_) {
      const auto* keys = static_cast<const typename key_policy::value_type*>(key.host);
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint64_t row = i * stride;
        sample[i] = key_policy::to_bits(keys[row]);
        sample[n + i] = key_policy::to_bits(keys[row + 1 < rows_ ? row + 1 : row]);
      }
      return sample;
    }
    // A gather kernel, then one read: a strided rectangle read of single elements is slow on
    // some drivers (one small copy per element).
    cl::Kernel gather = ctx_.kernel(estimate_program(), "gpuagg_sample");
    const std::size_t bytes = sample.size() * sizeof(bits_type);
    cl::Buffer out = allocate(bytes, "the key sample");
    cl_uint arg = 0;
    set_arg(gather, arg, key.device);
    set_arg(gather, arg, cl_ulong(key.offset));
    set_arg(gather, arg, cl_ulong(stride));
    set_arg(gather, arg, cl_uint(n));
    set_arg(gather, arg, cl_ulong(key.offset + rows_));
    set_arg(gather, arg, out);
    const std::size_t local = std::min<std::size_t>(256, power_of_two_below(kernel_work_group_limit(gather)));
    launch(gather, cover(n, local), local, "sampling the key column", nullptr);
    // Read into pinned memory (a direct copy; a read into pageable memory may be staged).
    auto [pinned, size_class] = ctx_.pooled_pinned(bytes, "the key sample's host copy");
    const cl_int read = ctx_.compute_queue().enqueueReadBuffer(out, CL_TRUE, 0, bytes, pinned.mapped);
    if (read == CL_SUCCESS) std::memcpy(sample.data(), pinned.mapped, bytes);
    ctx_.recycle_pinned(size_class, pinned);
    detail::check(read, "reading the key sample");
    release(bytes);
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

  /// Enqueues the next block of at most `rows` rows with `params`; waits for nothing.
  pending_block enqueue_block(const execution_params& params, std::size_t rows) {
    const detail::phase_clock clock(stats_.host.enqueue);
    const std::uint64_t first = next_row_;
    const std::uint64_t count = std::min<std::uint64_t>(rows, rows_ - first);
    next_row_ += count;
    pending_block pending;
    pending.slot = blocks_enqueued_++ % window_;
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

    if (const auto parts = planner_->partitions(count, table_.capacity, table_.interleaved); parts > 1) {
      partition(inputs, row_begin, row_end, parts, ready, pending.partition);
      row_begin = 0;
      row_end = count;
      ready.clear();
    }

    const kernel_variant variant = planner_->variant_for(params);
    pending.hot_table = variant.hot_table;
    pending.cold_queue = variant.cold_queue;
    cl::Kernel& kernel = aggregate_kernel(variant);
    cl_uint arg = 0;
    for (const auto& input : inputs) set_arg(kernel, arg, input);
    set_arg(kernel, arg, row_begin);
    set_arg(kernel, arg, row_end);
    set_table_args(kernel, arg, table_);
    set_arg(kernel, arg, cl_uint(table_.bits));
    set_arg(kernel, arg, cl_uint(table_.capacity));
    set_arg(kernel, arg, key_min());
    set_arg(kernel, arg, cl_uint(planner_->max_probes(table_.capacity)));
    set_arg(kernel, arg, meta_);
    set_table_args(kernel, arg, spill_);
    set_arg(kernel, arg, cl_uint(spill_capacity_));
    set_arg(kernel, arg, cl_uint(planner_->plain_key_reads(table_.capacity, table_.interleaved) ? 1 : 0));
    if (variant.run_cache) {
      // The run-cache build's hot-key register (kernels.inc): the sample's most frequent key,
      // when the sample was taken (without one, the register stays unused).
      set_arg(kernel, arg, hot_key_);
      set_arg(kernel, arg, cl_uint(planner_->profile().sampled ? 1 : 0));
    }
    if (variant.hot_table) {
      const std::uint32_t hot_capacity = planner_->hot_keys().capacity;
      if (!hot_keys_buffer_()) {
        hot_keys_buffer_ = allocate(hot_keys_.size() * sizeof(bits_type), "the hot-key table's keys");
        detail::check(ctx_.compute_queue().enqueueWriteBuffer(hot_keys_buffer_, CL_FALSE, 0,
                                                              hot_keys_.size() * sizeof(bits_type), hot_keys_.data()),
                      "copying the hot keys");
      }
      set_arg(kernel, arg, hot_keys_buffer_);
      set_arg(kernel, arg, cl_uint(hot_keys_.size()));
      set_arg(kernel, arg, cl_uint(detail::log2_exact(hot_capacity)));
      set_arg(kernel, arg, cl_uint(hot_capacity));
      set_arg(kernel, arg, cl::Local((hot_capacity + 1) * sizeof(bits_type)));
      for (std::size_t j = 0; j < aggregate_count; ++j) {
        set_arg(kernel, arg, cl::Local((hot_capacity + 1) * acc_size(j)));
      }
      set_arg(kernel, arg, cl::Local((hot_capacity + 1) * sizeof(cl_uint)));
    }
    const auto& config = params.config;
    if (params.strategy == strategy_kind::workgroup_local) {
      const auto buckets = planner_->local_capacity();
      const auto copies = planner_->local_table_copies(config);
      // Keys, or for direct addressing a bitmap of the entries in use (table_layout_bytes).
      const std::uint64_t entries = (buckets + 1) * copies;
      set_arg(kernel, arg, cl::Local(identity_scheme ? (entries + 31) / 32 * 4 : entries * sizeof(bits_type)));
      for (std::size_t j = 0; j < aggregate_count; ++j) {
        set_arg(kernel, arg, cl::Local((buckets + 1) * copies * acc_size(j)));
      }
      set_arg(kernel, arg, cl_uint(identity_scheme ? 0 : detail::log2_exact(buckets)));
      set_arg(kernel, arg, cl_uint(buckets));
      set_arg(kernel, arg, cl_uint(copies));
      if (variant.cold_queue) {
        const std::uint32_t rows = planner_->cold_rows_per_item(config);
        const std::uint64_t queued = std::uint64_t{config.work_group_size} * rows;
        set_arg(kernel, arg, cl::Local(queued * sizeof(bits_type)));
        set_arg(kernel, arg, cl::Local(queued * sizeof(cl_uint)));
        set_arg(kernel, arg, cl_uint(rows));
      }
    } else if (params.strategy == strategy_kind::independent) {
      const auto buckets = planner_->private_capacity(config);
      ensure_private_tables(planner_->total_threads(config) * (buckets + 1));
      set_table_args(kernel, arg, private_);
      set_arg(kernel, arg, cl_uint(identity_scheme ? 0 : detail::log2_exact(buckets)));
      set_arg(kernel, arg, cl_uint(buckets));
    }
    // The work-group size was checked against this kernel's cached limit by require_runnable()
    // (or comes from initial_config(), clamped to it): no per-block driver query.
    const std::size_t local = config.work_group_size;
    const auto global = static_cast<std::size_t>(planner_->total_threads(config));
    launch(kernel, global, local, "AGGREGATE", &pending.kernel, ready.empty() ? nullptr : &ready);
    detail::check(ctx_.compute_queue().enqueueReadBuffer(meta_, CL_FALSE, 0, detail::meta_words * sizeof(cl_ulong),
                                                         meta_mirror_ + pending.slot * detail::meta_words,
                                                         nullptr, &pending.meta_read),
                  "reading the query's counters");
    detail::check(ctx_.compute_queue().flush(), "starting AGGREGATE");
    return pending;
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
    planner_->observe_groups(meta[detail::meta_groups]);
    if (meta[detail::meta_spilled] > 0) {
      if constexpr (identity_scheme) {
        throw key_out_of_domain_error("a key lies outside the domain [min, min + " +
                                      std::to_string(opts_.domain->size - 1) +
                                      "] given for direct_addressing; widen options::domain or use hashing<>");
      }
      grow();
    } else if (!identity_scheme && next_row_ < rows_ &&
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
    const std::uint64_t capacity = planner_->grown_capacity(groups, spilled_groups(spilled), table_.capacity);
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
    planner_->observe_groups(meta[detail::meta_groups]);
    stats_.spilled_entries += spilled;
    ++stats_.table_growths;
    ++generation_;
  }

  /// The distinct keys among the spill area's first `spilled` entries: their count where few,
  /// else their sketch's estimate with room for its error.
  std::uint64_t spilled_groups(std::uint64_t spilled) {
    if (spilled <= 4096) return spilled;
    const auto sketch = sketch_on_device(spill_.keys, 0, 1, spilled, spilled, false);
    const double distinct = detail::sketch_estimate(sketch.registers);
    return std::min<std::uint64_t>(spilled, static_cast<std::uint64_t>(std::ceil(distinct * 1.05)) + 16);
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
  std::size_t slice_rows_ = 0;     // rows of run_block()'s blocks (the tuner's)
  std::uint64_t next_row_ = 0;     // the first row not yet enqueued
  std::size_t blocks_enqueued_ = 0;
  std::size_t window_ = 2;
  query_shape shape_;
  std::optional<query_planner> planner_;
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
  std::vector<bits_type> hot_keys_;  // the hot-key table's keys (query_planner::hot_keys), most frequent first
  cl::Buffer sketch_registers_;      // the group estimate's sketches (made on first use)
  cl::Buffer sketch_counts_;
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
