#pragma once
#define GPUAGG_DRIVER_HPP
// The block-wise driver (section 2.1): it executes the plan (plan.hpp) of one query. It owns
// the global table, runs INITIALIZE once, AGGREGATE once per input block with that block's
// strategy and thread configuration, grows the table when it fills, and runs FINALIZE. Host
// input streams through pinned staging buffers with `blocks_in_flight` blocks in flight, so
// copies overlap AGGREGATE; device input is read in place. The global table alone carries
// progress from block to block, so the strategy and thread configuration may change between
// any two blocks (section 4.1, "Support for other operators", requirement 2), which the tuner
// relies on. The driver does not know the tuner.
//
// This header declares the driver; its jobs are implemented in files named for them:
//   driver/setup.hpp           checks the input, takes the key sample, estimates the groups,
//                              makes the plan, builds the programs, allocates the buffers
//   driver/group_estimate.hpp  the key sample and the group estimate's sketches on the device
//   driver/programs.hpp        the program variants, their kernels and work-group limits
//   driver/buffers.hpp         device buffers from the context's pool; host staging
//   driver/table.hpp           the global table: INITIALIZE, its bytes, the query's counters
//   driver/pipeline.hpp        the blocks: enqueue (copy, PARTITION, AGGREGATE), complete, run
//   driver/partition.hpp       PARTITION: a block's rows in runs by table region
//   driver/growth.hpp          a full table grows: rehash, merge the spill area
//   driver/finalize.hpp        FINALIZE into device buffers, or copied to the host
//   driver/partials.hpp        EXPORT a partial aggregate; absorb another's
// Every kernel receives one argument struct (kernels/*.hpp), set by driver/kernel_binder.hpp.

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../column.hpp"
#include "../detail/bits.hpp"
#include "../error.hpp"
#include "../kernels/args.hpp"
#include "../launch_config.hpp"
#include "../options.hpp"
#include "../plan.hpp"
#include "../result.hpp"
#include "../runtime/context.hpp"
#include "../runtime/readback.hpp"
#include "../source.hpp"
#include "../strategy.hpp"
#include "key_sample.hpp"
#include "shared_estimate.hpp"

namespace gpuagg {

namespace detail {

/// Profiled execution time of a finished command, in seconds.
inline double event_seconds(const cl::Event& event) {
  cl_ulong start = 0;
  cl_ulong end = 0;
  check(event.getProfilingInfo(CL_PROFILING_COMMAND_START, &start), "reading a profiling start time");
  check(event.getProfilingInfo(CL_PROFILING_COMMAND_END, &end), "reading a profiling end time");
  return end > start ? double(end - start) * 1e-9 : 0.0;
}

/// Waits for a command and throws if it failed.
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

/// Thrown by a restartable driver whose spill area overflowed (rows were dropped, so its table
/// is no answer): its caller runs the query again with a spill area for every row in flight.
/// Never reaches the user (groupby.hpp catches it); not a gpuagg::error, so no handler of those
/// takes it for one.
struct spill_overflow {
  double seconds = 0;  ///< the failed run's host time until the overflow was found
};

// The query's counters (kernels/library.hpp: META_*).
inline constexpr std::size_t meta_groups = 0;   ///< buckets claimed in the global table
inline constexpr std::size_t meta_special = 1;  ///< the EMPTY_KEY bucket is in use
inline constexpr std::size_t meta_spilled = 2;  ///< entries in the spill area
inline constexpr std::size_t meta_lost = 3;     ///< the spill area overflowed: rows were dropped
inline constexpr std::size_t meta_words = 4;
inline constexpr std::uint32_t max_partitions = 1024;  // kernels/partition.hpp: GPUAGG_MAX_PARTS

/// The partial_groups type of bound query `Bound`: its table words and accumulator types.
template <class Bound, class Sequence = std::make_index_sequence<Bound::aggregate_count>>
struct partial_type_for;
template <class Bound, std::size_t... J>
struct partial_type_for<Bound, std::index_sequence<J...>> {
  using type = partial_groups<typename Bound::key::bits_type, typename Bound::template acc_at<J>...>;
};

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
  /// Whether the set-up may read the keys' exact range (one key column) or box (packed key
  /// columns) for direct addressing: a hash scheme's query whose key is one word of its fields.
  static constexpr bool reads_key_range =
      !identity_scheme && (key_policy::columns == 1 || key_policy::layout.count > 1);
  /// A partial aggregate of this query (export_partial, absorb).
  using partial_type = typename detail::partial_type_for<Bound>::type;
  /// Where a partial aggregate's columns lie in pinned staging memory.
  struct staged_columns {
    const void* keys = nullptr;
    std::array<const void*, aggregate_count> accs{};
  };
  /// A partial aggregate on its way to another driver of the same query (export_for_merge,
  /// absorb): in pinned memory of the exporting device (`pinned`, `staged`, `groups`) where that
  /// pays, which the absorbing device copies from as it is, else in `vectors`.
  struct merge_partial {
    partial_type vectors;
    std::shared_ptr<detail::host_staging> pinned;
    staged_columns staged;
    std::uint64_t groups = 0;
    std::size_t size() const noexcept { return pinned ? static_cast<std::size_t>(groups) : vectors.size(); }
  };

  /// `columns`: the key column, then the value columns, all of `rows` rows, all on the host or
  /// all on the device.
  /// `restartable`: the caller runs the query again (with restartable false) when it throws
  /// detail::spill_overflow, so the plan may size the spill area for the table
  /// (query_planner::compact_spill). `shared`: host input whose rows other drivers (of other
  /// devices) share: their key sample's profile and group estimate are made once, by the first
  /// to need them (driver/shared_estimate.hpp). `handover` (group_by's own query): where the
  /// plan takes direct addressing over the key column's exact range, a hash scheme's set-up
  /// stops after the plan and fills it in (handed_over()); a direct-addressing driver given a
  /// filled one sets up from it.
  aggregation_driver(context& ctx, const options& opts, std::vector<detail::column_data> columns,
                     bool restartable = false, detail::shared_estimate* shared = nullptr,
                     detail::direct_handover* handover = nullptr);
  aggregation_driver(const aggregation_driver&) = delete;
  aggregation_driver& operator=(const aggregation_driver&) = delete;
  ~aggregation_driver();

  /// The query's plan: every decision about how it runs (plan.hpp).
  const query_planner& plan() const noexcept { return *planner_; }
  /// Whether the set-up stopped to hand the query to direct addressing (the handover's range):
  /// this driver runs nothing.
  bool handed_over() const noexcept { return handover_ != nullptr && handover_->range && !identity_scheme; }
  /// Direct addressing over the range or box a hash scheme's set-up read: every key lies in it.
  bool exact_domain() const noexcept { return identity_scheme && handover_ != nullptr && handover_->range.has_value(); }

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
  double run_block(const execution_params& params);

  /// The next `blocks` run_block() calls will ask for `params` (announce_fn, tuner.hpp): each of
  /// them enqueues the next announced block before it waits, so the device runs one block while
  /// the host reads the one before. A run_block() with other parameters before the announced
  /// blocks are taken is an invalid_argument_error.
  void announce_blocks(const execution_params& params, std::size_t blocks);

  /// Processes every remaining block (of block_rows()), `blocks_in_flight` at a time: with
  /// `params` if given, else with the plan's default_params() re-evaluated per block (the table's
  /// groups may have outgrown a local table).
  void run_remaining(const std::optional<execution_params>& params = std::nullopt);

  /// Runs the row ranges `next()` hands out (a std::optional<std::pair<first row, rows>>, at most
  /// block_rows() rows each; std::nullopt when none is left), `blocks_in_flight` at a time, with
  /// `params` if given, else the plan's default_params(): for host input whose blocks several
  /// drivers share, each taking the next block when it is free (multi_device.hpp). next() is
  /// called when a block slot is free. Rows no driver takes are not this one's.
  template <class NextRange>
  void run_blocks(NextRange&& next, const std::optional<execution_params>& params = std::nullopt);

  /// The groups so far as a partial aggregate (EXPORT), copied to the host; the table stays, so
  /// more rows may follow. Runs the remaining blocks first, unless run_blocks() handed them out.
  partial_type export_partial();

  /// Takes in a partial aggregate of the same query over other rows (another device's or
  /// process's export_partial()), growing the table first where it needs room: afterwards the
  /// table holds the groups of both. A driver over no rows absorbs too (a pure merge): its table
  /// is then sized for the first partial it takes in.
  void absorb(const partial_type& partial);

  /// export_partial() for absorb() by another driver of this query in this process (several
  /// devices): the copy through host memory made once, into pinned memory, where that pays.
  /// With `owners` above 1, only the groups `owner` owns (detail/owner.hpp: owner_of), for
  /// that owner to absorb (finalize_owned).
  merge_partial export_for_merge(std::uint32_t owners = 1, std::uint32_t owner = 0);
  void absorb(const merge_partial& partial);

  /// FINALIZE into device buffers: keys, then one buffer per output.
  template <class... Outputs>
  device_result<typename key_policy::value_type, Outputs...> finalize_on_device();

  /// FINALIZE and copy the result to the host.
  template <class... Outputs>
  /// `early`: the result's columns, sized on a thread while the device aggregated (or null).
  result<typename key_policy::value_type, Outputs...> finalize_to_host(
      detail::presized_result<result<typename key_policy::value_type, Outputs...>>* early = nullptr);

  /// FINALIZE of the groups that `owner` of `owners` owns (detail/owner.hpp) into the query's
  /// device buffers, its count read: a multi-device query's members each finalize their share
  /// of the merged groups, then copy it into one host result (copy_owned_to_host).
  template <class... Outputs>
  device_result<typename key_policy::value_type, Outputs...> finalize_owned(std::uint32_t owners,
                                                                           std::uint32_t owner);
  /// Copies finalize_owned's groups into rows [offset, offset + owned.size()) of `out`, whose
  /// columns hold them already.
  template <class... Outputs>
  void copy_owned_to_host(const device_result<typename key_policy::value_type, Outputs...>& owned,
                          result<typename key_policy::value_type, Outputs...>& out, std::uint64_t offset);

 private:
  template <std::size_t J>
  using acc_t = typename Bound::template acc_at<J>;

  static constexpr std::size_t acc_size(std::size_t j) {
    return [&]<std::size_t... J>(std::index_sequence<J...>) {
      constexpr std::array<std::size_t, aggregate_count> sizes{sizeof(acc_t<J>)...};
      return sizes[j];
    }(std::make_index_sequence<aggregate_count>{});
  }

  /// A table's buffers: keys (a bitmap for direct addressing, the records when interleaved) and
  /// one buffer per accumulator (each naming the records too when interleaved).
  struct table_buffers {
    cl::Buffer keys;
    std::array<cl::Buffer, aggregate_count> accs;
    std::uint64_t capacity = 0;  ///< buckets, not counting the reserved one for EMPTY_KEY
    unsigned bits = 0;
    bool interleaved = false;    ///< one buffer of records (kernels/library.hpp: GPUAGG_INTERLEAVED)

    /// The table as a kernel argument (ACC_PARAMS).
    detail::kernels::table_arg<cl::Buffer> arg() const { return {keys, {accs.begin(), accs.end()}}; }
  };
  /// An EXPORT in flight: its buffers, the table's groups (what it writes: all of them, or at
  /// most that where owners > 1), its counter and the events of EXPORT and of the counter's
  /// read into written_count_.
  struct pending_export {
    table_buffers exported;
    std::uint64_t groups = 0;
    std::uint32_t owners = 1;
    cl::Buffer count;
    cl::Event done;
    cl::Event count_read;
  };
  /// EXPORT of the table (of `owner`'s groups where owners > 1) into new buffers, once every
  /// block has completed, and the read of its count queued behind it; waits for nothing.
  pending_export enqueue_export(std::uint32_t owners = 1, std::uint32_t owner = 0);
  /// One wait for an export's count and `reads` (queued after it on the in-order compute
  /// queue), then each command's status; returns the groups EXPORT wrote, checked against the
  /// table's.
  std::uint64_t settle_export(pending_export& pending, const std::vector<cl::Event>& reads = {});
  /// COUNT_NEW: of the `n` keys in `incoming`, those the table does not hold yet.
  std::uint64_t count_new(const table_buffers& incoming, std::uint64_t n);
  /// Enqueues the copies of an export's columns into `staging` (active), their events in
  /// `reads`; returns where the columns will be.
  staged_columns stage_export(detail::host_staging& staging, const table_buffers& exported, std::uint64_t groups,
                              std::vector<cl::Event>& reads);
  /// Enqueues the copies of an export's columns straight into vectors (pageable memory), their
  /// events in `reads`; the vectors are not to be read before those complete.
  partial_type read_export(const table_buffers& exported, std::uint64_t groups, std::vector<cl::Event>& reads);
  /// Bytes of a partial aggregate of `groups` groups: keys and accumulators.
  static std::uint64_t partial_bytes(std::uint64_t groups);
  /// absorb() of `n` groups: keys and one column per accumulator, from host memory (pinned or
  /// not).
  void absorb_columns(std::uint64_t n, const void* keys, const std::array<const void*, aggregate_count>& accs,
                      bool pinned_source);
  struct staging_slot {
    std::vector<detail::buffer_pool::pinned_buffer> pinned;
    std::vector<std::uint64_t> pinned_class;
    std::vector<void*> mapped;
    std::vector<cl::Buffer> device;
  };
  /// A block whose copy started before the plan (start_first_copies): its rows, its columns'
  /// device buffers and their copies' events, until the block of those rows takes them.
  struct early_block {
    std::uint64_t first = 0;
    std::uint64_t rows = 0;
    std::vector<cl::Buffer> device;
    std::vector<cl::Event> copied;
  };
  struct pending_block {
    cl::Event kernel;
    cl::Event meta_read;
    std::vector<cl::Event> partition;  // PARTITION's kernels, when the block was partitioned
    std::vector<cl::Event> pieces;     // AGGREGATE over the pieces before the last (partition_piece_rows)
    std::vector<cl::Buffer> early;     // its input's buffers, when its copy started before the plan
    std::vector<cl::Buffer> in_place;  // its input's buffers over host memory (host_blocks_in_place)
    std::size_t slot = 0;
    unsigned generation = 0;
    execution_params params;
    std::uint64_t rows = 0;
    bool hot_table = false;   // ran with the hot-key table
    bool cold_queue = false;  // ran with the cold-row queue
    bool private_groups = false;  // ran with private groups
    bool perfect_local = false;   // ran with the perfect local table
    bool range_local = false;     // ran with the range local table
    bool serial = false;          // ran the serial variant
  };
  /// The groups planned for, and where the number came from.
  struct group_estimate {
    std::uint64_t groups = 1;
    estimate_source source = estimate_source::none;
    double relative_error = 0;  ///< detail::staged_estimate::relative_error
  };
  struct finalize_events {
    cl::Event kernel;
    cl::Event count_read;
  };
  /// Commands the driver does not wait for when it enqueues them (INITIALIZE, MERGE): their
  /// status and profiled time are collected by settle_deferred().
  struct deferred_command {
    cl::Event event;
    const char* what;
    double query_stats::*seconds;
  };

  /// What a strategy policy's aggregate_args() sees of the query (strategy.hpp).
  struct strategy_view {
    using buffer_type = cl::Buffer;
    using bits_type = aggregation_driver::bits_type;
    static constexpr bool identity_scheme = aggregation_driver::identity_scheme;
    static constexpr std::size_t key_bytes = sizeof(bits_type);
    static constexpr std::size_t aggregate_count = aggregation_driver::aggregate_count;
    static constexpr std::size_t accumulator_bytes(std::size_t j) { return acc_size(j); }
    aggregation_driver& driver;
    /// AGGREGATE reads PARTITION's copy of buckets (query_planner::partition_copy_buckets):
    /// every table's `bits` 0.
    bool bucket_space = false;
    const query_planner& plan() const { return *driver.planner_; }
    cl::Buffer hot_keys_buffer() { return driver.hot_keys_on_device(); }
    cl::Buffer perfect_local_buffer() { return driver.perfect_local_on_device(); }
    /// The identity scheme's `bits` for every table of the query, local and private ones too.
    std::uint32_t box_spans() const { return bucket_space ? 0 : driver.box_spans(); }
    detail::kernels::table_arg<cl::Buffer> private_tables(std::uint64_t buckets) {
      return driver.private_tables(buckets);
    }
  };

  // ---- setup (driver/setup.hpp) ----
  void validate();
  void setup();
  /// The planner for the sample's profile and the groups; where it asks for a work group's
  /// window of keys (query_planner::locality_window), the same plan with what they showed.
  void make_planner(const detail::sample_profile& sample, group_estimate groups = {});
  void make_table_and_counters(std::uint64_t capacity);
  void setup_for_partials(std::uint64_t groups);

  // ---- the key sample and the group estimate (driver/group_estimate.hpp) ----
  std::vector<bits_type> sample_keys();
  /// Rows 0, pitch, 2 pitch, ... (`count`), each with the `width` - 1 rows after it, of the key
  /// columns on the device into pinned copies, each column's rows stretch after stretch, that
  /// `read(copies)` then reads (key_policy::load_bits); the profile's scratch for a sample of
  /// `warm_sample` keys comes into the cache while they are read (0: none); `what` names the
  /// read in its error.
  template <class Read>
  void read_key_rows(std::uint64_t pitch, std::uint64_t width, std::uint64_t count, std::size_t warm_sample,
                     const char* what, Read&& read);
  /// Every key field's extremes on the device, as unsigned values and in signed order
  /// (driver/key_range.hpp).
  struct key_extremes {
    std::array<std::uint64_t, detail::max_key_fields> low{}, high{}, signed_low{}, signed_high{};
  };
  /// The range's pass in flight: its extremes' buffer, their read into pinned memory (not
  /// blocking) and the work groups that wrote them. Its pinned memory goes back to the pool only
  /// after the read, whatever ends the set-up.
  struct pending_extremes {
    context* ctx = nullptr;
    cl::Buffer out;
    detail::buffer_pool::pinned_buffer pinned;
    std::uint64_t size_class = 0;
    std::uint64_t groups = 0;
    cl::Event read;
    cl_int status = CL_SUCCESS;
    pending_extremes() = default;
    pending_extremes(const pending_extremes&) = delete;
    pending_extremes& operator=(const pending_extremes&) = delete;
    ~pending_extremes() { release(); }
    void release() noexcept {
      if (ctx == nullptr) return;
      if (read()) (void)read.wait();
      ctx->recycle_pinned(size_class, pinned);
      ctx = nullptr;
    }
  };
  void start_key_extremes(pending_extremes& pass);
  key_extremes finish_key_extremes(pending_extremes& pass);
  /// Starts the range's pass before the sample's profile where the plan says so
  /// (query_planner::early_range_pass); read_key_extremes then takes its result.
  void start_early_range(std::span<const bits_type> sampled);
  key_extremes read_key_extremes();
  /// The key column's exact range on the device (one key column).
  exact_key_range read_key_range();
  /// The packed key columns' exact box on the device.
  detail::key_box read_key_box();
  group_estimate estimate_groups(const detail::sample_profile& profile);
  detail::host_sketch sketch_on_device(const std::vector<cl::Buffer>& inputs, bool words, cl_ulong first,
                                       cl_ulong stride, cl_ulong n, cl_ulong rows_end, bool sampled,
                                       bool byte_registers = false, std::optional<cl_ulong> hot = std::nullopt);
  /// The key column(s): the first key_policy::columns columns, on the host or on the device.
  std::array<const void*, key_policy::columns> host_key_columns() const {
    std::array<const void*, key_policy::columns> hosts{};
    for (std::size_t c = 0; c < key_policy::columns; ++c) hosts[c] = columns_[c].host;
    return hosts;
  }
  /// Asks the cache for row `row` of every host key column (strided reads: sample, sketch).
  static void prefetch_host_keys(const std::array<const void*, key_policy::columns>& hosts, std::uint64_t row) {
    for (std::size_t c = 0; c < key_policy::columns; ++c) {
      __builtin_prefetch(static_cast<const char*>(hosts[c]) + row * key_policy::column_bytes[c]);
    }
  }
  std::vector<cl::Buffer> device_key_columns() const {
    std::vector<cl::Buffer> buffers;
    for (std::size_t c = 0; c < key_policy::columns; ++c) buffers.push_back(columns_[c].device);
    return buffers;
  }

  // ---- programs (driver/programs.hpp) ----
  context::program_request program_request(const kernel_variant& variant) const;
  cl::Program program(const kernel_variant& variant) const;
  /// The group estimate's program (the key sample, the sketches, the range's pass).
  static context::lasting_source estimate_program_source() {
    return context::lasting_source{sample_program_source<key_policy>.view()};
  }
  cl::Program estimate_program() const { return ctx_.program(estimate_program_source()); }
  /// Whether the context has made the group estimate's program already (no build to wait for).
  bool estimate_program_made() const { return ctx_.has_program(estimate_program_source()); }
  cl::Kernel& aggregate_kernel(const kernel_variant& variant) const;
  std::uint32_t kernel_limit(const kernel_variant& variant) const;
  std::size_t kernel_work_group_limit(const cl::Kernel& kernel) const;

  // ---- buffers (driver/buffers.hpp) ----
  cl::Buffer allocate(std::uint64_t bytes, const std::string& what);
  cl::Buffer allocate_owned(std::uint64_t bytes, const std::string& what);
  void recycle(const cl::Buffer& buffer);
  void recycle(const table_buffers& t);
  cl::Buffer cleared_counter(const std::string& what);
  cl_ulong read_counter(const cl::Buffer& counter, const std::string& what);
  table_buffers make_buffers(std::uint64_t buckets, const std::string& what);
  void make_staging();
  cl::Event write_block(const cl::Buffer& to, const void* from, std::uint64_t bytes);
  void start_first_copies();
  void discard_early_copies();
  cl::Buffer hot_keys_on_device();
  cl::Buffer perfect_local_on_device();
  detail::kernels::table_arg<cl::Buffer> private_tables(std::uint64_t buckets);

  // ---- the table and the counters (driver/table.hpp) ----
  table_buffers make_table(std::uint64_t capacity);
  /// Gives back what only blocks use (the spill area, PARTITION's copy, INDEPENDENT's private
  /// tables, host input's device blocks) once every block has completed.
  void release_block_buffers();
  std::array<cl_ulong, detail::meta_words> read_meta();
  std::array<cl_ulong, detail::meta_words> read_meta_settled();
  void clear_meta(std::size_t first, std::size_t words, const char* what);
  void defer(const cl::Event& event, const char* what, double query_stats::*seconds);
  void settle_deferred();

  // ---- the blocks (driver/pipeline.hpp) ----
  void require_runnable(const execution_params& params) const;
  pending_block enqueue_block(const execution_params& params, std::size_t rows);
  /// Rows not yet enqueued, or enqueued ahead for run_block() and not yet completed.
  bool rows_pending() const noexcept { return next_row_ < rows_ || !ahead_.empty(); }
  pending_block enqueue_rows(const execution_params& params, std::uint64_t first, std::uint64_t count);
  double complete(pending_block& block);
  void launch(cl::Kernel& kernel, std::size_t global, std::size_t local, const char* what, cl::Event* done,
              const std::vector<cl::Event>* wait = nullptr);
  /// Work items that cover `items` with work groups of `local` (at most 65536 work groups; the
  /// kernels loop over the rest).
  static std::size_t cover(std::uint64_t items, std::size_t local) {
    const std::uint64_t groups = std::min<std::uint64_t>((items + local - 1) / local, 65536);
    return static_cast<std::size_t>(std::max<std::uint64_t>(groups, 1) * local);
  }
  bits_type key_min() const {
    if constexpr (identity_scheme) {
      return static_cast<bits_type>(opts_.domain->min_bits);
    } else {
      return 0;
    }
  }
  /// Direct addressing over a box of packed keys: the tables' `bits` (key_domain::box_spans);
  /// 0 for a range of words and for hash schemes, whose tables' bits are their own.
  std::uint32_t box_spans() const {
    if constexpr (identity_scheme) {
      return opts_.domain->box_spans;
    } else {
      return 0;
    }
  }

  // ---- PARTITION (driver/partition.hpp) ----
  /// A block PARTITION counted, rows [params.row_begin, params.row_end): `pieces` pieces of
  /// params.piece_tiles tiles of params.tile_rows rows each (the last piece may be shorter or,
  /// past the block's end, empty).
  struct partition_layout {
    std::uint64_t pieces = 1;
    detail::kernels::partition_params<bits_type> params;
    cl_ulong piece_begin(std::uint64_t piece) const {
      return std::min<cl_ulong>(params.row_begin + piece * params.piece_tiles * params.tile_rows, params.row_end);
    }
    cl_ulong piece_end(std::uint64_t piece) const { return piece_begin(piece + 1); }
  };
  partition_layout partition_count(const std::vector<cl::Buffer>& inputs, cl_ulong row_begin, cl_ulong row_end,
                                   std::uint32_t parts, const std::vector<cl::Event>& ready,
                                   std::vector<cl::Event>& events);
  std::vector<cl::Buffer> partition_scatter(const std::vector<cl::Buffer>& inputs, const partition_layout& layout,
                                            std::uint64_t piece, std::vector<cl::Event>& events);

  // ---- growth (driver/growth.hpp) ----
  void grow(std::uint64_t incoming_groups = 0);
  std::uint64_t spilled_groups(std::uint64_t spilled);
  /// The spill area overflowed: detail::spill_overflow for a restartable driver, else an
  /// internal error (the full spill area holds every row in flight).
  [[noreturn]] void spill_overflowed() const;
  void merge(const table_buffers& source, std::uint64_t entries, std::uint64_t table_entries);

  // ---- FINALIZE (driver/finalize.hpp) ----
  template <class... Outputs>
  finalize_events enqueue_finalize(device_result<typename key_policy::value_type, Outputs...>& out, bool owned,
                                   std::uint32_t owners = 1, std::uint32_t owner = 0);
  /// Copies the `from.size()` groups of a device result into rows from `offset` of the host
  /// columns `destinations()` returns (called once the copies are queued: it may size them),
  /// then `await(reads)` (the copies' events where they land straight in those columns).
  template <class... Outputs>
  void copy_result(const device_result<typename key_policy::value_type, Outputs...>& from, std::uint64_t offset,
                   const std::function<std::vector<void*>()>& destinations,
                   const std::function<void(const std::vector<cl::Event>&)>& await);
  std::uint64_t await_finalize(std::uint64_t groups, const finalize_events& done, const std::vector<cl::Event>& reads,
                               bool share = false);
  /// A kernel that counts the groups it writes (FINALIZE, EXPORT), the read of its count into
  /// written_count_ and the copies behind it, with the names their errors give.
  struct counted_commands {
    const char* kernel_name;
    const cl::Event& kernel;
    const char* count_what;
    const cl::Event& count_read;
    const char* reads_what;
    const std::vector<cl::Event>& reads;
  };
  std::uint64_t check_written(const counted_commands& commands, std::uint64_t groups, bool share);
  void finish_stats();

  context& ctx_;
  options opts_;
  std::vector<detail::column_data> columns_;
  std::chrono::steady_clock::time_point started_;
  std::uint64_t rows_ = 0;
  bool on_device_ = false;
  bool in_place_ = false;  // host input's blocks read where they lie (query_planner::host_blocks_in_place)
  bool restartable_ = false;
  detail::shared_estimate* shared_ = nullptr;  // host input's estimate, made once for several drivers
  detail::direct_handover* handover_ = nullptr;  // group_by's: to direct addressing, or from a hash scheme's set-up
  std::size_t block_rows_ = 0;
  std::size_t slice_rows_ = 0;     // rows of run_block()'s blocks (the tuner's)
  std::uint64_t next_row_ = 0;     // the first row not yet enqueued
  std::size_t blocks_enqueued_ = 0;
  std::size_t window_ = 2;
  // Blocks announced to run_block() (announce_blocks): those enqueued ahead, in order, and how
  // many run_block() calls are still announced, with their parameters.
  std::deque<pending_block> ahead_;
  std::size_t announced_ = 0;
  execution_params announced_params_{};
  bool shared_rows_ = false;       // run_blocks() hands the rows out: more may come until finalize
  bool table_ready_ = false;       // the table and counters exist (setup, or a first absorb)
  bool copies_started_ = false;    // start_first_copies() enqueued copies
  query_shape shape_;
  std::optional<query_planner> planner_;
  bits_type hot_key_ = 0;  // the sample's most frequent key (the run cache's hot-key register)
  // The range's pass started before the profile. One the plan did not ask for is held until the
  // driver goes: a wait for it in the set-up would hold the host for the device.
  std::optional<pending_extremes> early_extremes_;
  std::array<bits_type, query_planner::private_groups_max> private_keys_{};  // query_planner::private_group_keys
  std::uint64_t spill_capacity_ = 0;
  std::uint64_t live_bytes_ = 0;
  unsigned generation_ = 0;
  bool interleaved_ = false;  // the global table's layout (query_planner::interleaved)
  std::size_t builds_before_ = 0;
  cl::Program home_program_;
  // Per program variant (kernel_variant::index()).
  mutable std::array<cl::Program, kernel_variant::count> programs_;
  mutable std::array<cl::Kernel, kernel_variant::count> aggregate_kernels_;
  mutable std::array<std::uint32_t, kernel_variant::count> kernel_limits_{};
  std::vector<bits_type> hot_keys_;  // the hot-key table's keys (query_planner::hot_keys), most frequent first
  cl::Buffer hot_keys_buffer_;       // hot_keys_ on the device (made on first use)
  // The perfect local table (query_planner::perfect_local) as the kernel reads it: each bucket's
  // key, then the displacements; and on the device (made on first use).
  std::vector<bits_type> perfect_words_;
  cl::Buffer perfect_buffer_;
  cl::Buffer meta_;
  detail::buffer_pool::pinned_buffer readback_;  // pinned host memory: the counters' copies, then a written count
  std::uint64_t readback_class_ = 0;
  cl_ulong* meta_mirror_ = nullptr;  // in readback_: the counters after each block in flight, by slot
  std::array<cl_ulong, detail::meta_words> known_meta_{};  // the counters after the last completion or growth
  std::vector<deferred_command> deferred_;  // enqueued, not yet waited for (settle_deferred)
  cl_ulong* written_count_ = nullptr;  // in readback_: the groups FINALIZE or EXPORT wrote (one at a time)
  table_buffers table_;
  table_buffers spill_;
  table_buffers private_;
  std::vector<staging_slot> staging_;
  std::deque<early_block> early_;  // the first blocks' copies, started before the plan, in row order
  std::vector<cl::Kernel> partition_kernels_;  // PARTITION: count, scan, scatter (made on first use)
  std::size_t partition_local_ = 1;
  std::uint64_t partition_tiles_ = 1;          // most tiles (work groups) of count and scatter
  cl::Buffer partition_counts_;
  cl::Buffer partition_bases_;
  cl::Buffer partition_total_;
  std::vector<cl::Buffer> partition_inputs_;   // one piece's rows in runs, per column
  std::size_t partition_piece_rows_ = 0;        // rows of a piece (partition_inputs_ hold a tile's more)
  std::uint64_t partition_pieces_ = 1;          // most pieces of a block (PARTITION's bases and totals)
  std::uint64_t partition_count_words_ = 0;     // PARTITION's counts: pieces x runs x tiles at most
  std::vector<bool> pinned_input_;  // per column: the caller's memory is pinned (no staging)
  struct held_buffer {
    std::uint64_t size_class = 0;  // the pool's
    std::uint64_t bytes = 0;       // as allocated: what live_bytes_ counts
    cl::Buffer buffer;
  };
  std::map<cl_mem, held_buffer> held_;  // pooled buffers, by handle
  query_stats stats_;
};

}  // namespace gpuagg

#include "buffers.hpp"
#include "finalize.hpp"
#include "group_estimate.hpp"
#include "growth.hpp"
#include "key_range.hpp"
#include "partials.hpp"
#include "partition.hpp"
#include "pipeline.hpp"
#include "programs.hpp"
#include "setup.hpp"
#include "table.hpp"
