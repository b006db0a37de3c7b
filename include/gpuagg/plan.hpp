#pragma once
#define GPUAGG_PLAN_HPP
// The plan: every decision about how one query runs, made here and nowhere else, as pure
// functions of the device's description (device_info), the query's shape, the input's profile
// (rows, where they live, the estimated groups, the key sample's skew) and the options. No
// OpenCL: a test describes a device and asks. The driver executes what the plan decides; the
// tuner refines the plan's strategy and thread configuration block by block where the plan's
// per-device model (plan_data.hpp) is not sure.
//
// This header declares and documents query_planner; each decision is implemented in a file
// named for it:
//   how big a table            plan/table_size.hpp       table_capacity_for, initial_table_capacity,
//                                                        grown_capacity, interleaved, partitions,
//                                                        local_capacity, private_capacity
//   how big a block            plan/blocks.hpp           block_rows, tuning_block_rows,
//   and a spill area                                     spill_capacity
//   which strategy and         plan/strategy_choice.hpp  default_params, initial_config (the
//   thread configuration                                 entry's configurations, plan_data.hpp),
//                                                        feasibility (each strategy's own rule
//                                                        is its policy's, strategy.hpp)
//   what a kernel gets         plan/kernel_features.hpp  run_cache, hot_table, cold_queue,
//                                                        perfect_local, local_table_copies,
//                                                        max_probes, plain_key_reads, variant_for
//   whether to tune            plan/tuning.hpp           tuning
//   whether to address the     plan/direct_table.hpp     direct_range_wanted, direct_domain,
//   table directly                                       early_range_pass
// The plan's inputs and outputs (query_shape, input_profile, kernel_variant, tuning_plan) are
// plain values in plan/inputs.hpp.

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "detail/perfect_hash.hpp"
#include "device_info.hpp"
#include "error.hpp"
#include "estimate.hpp"
#include "launch_config.hpp"
#include "options.hpp"
#include "plan/inputs.hpp"
#include "plan_data.hpp"

namespace gpuagg {

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
    range_ = plan_range_local();
    if (!range_) perfect_ = plan_perfect_local();
  }

  const device_info& device() const noexcept { return device_; }
  const query_shape& shape() const noexcept { return shape_; }
  const input_profile& profile() const noexcept { return profile_; }
  const options& opts() const noexcept { return opts_; }
  /// The per-device entry the configurations come from, and how specific it is.
  const plan_entry& entry() const noexcept { return entry_; }
  /// The per-device entry for a device: by name, then architecture, then vendor, else generic.
  static plan_entry entry_for(const device_info& device);

  /// The groups planned for: the hint or estimate, or what the table already holds if more.
  std::uint64_t planned_groups() const noexcept { return planned_groups_; }
  void observe_groups(std::uint64_t groups) noexcept { planned_groups_ = std::max(planned_groups_, groups); }

  // ---- how big a table (plan/table_size.hpp) ----------------------------------------------------

  /// Buckets for `groups` at the load factor: a power of two, at least 16.
  std::uint64_t table_capacity_for(std::uint64_t groups) const;

  /// The first table: the domain (direct addressing), else sized for the planned groups; on a
  /// GPU, scattered keys' (scattered_keys) at half the load factor while that table takes at
  /// most cache_resident_table_bytes. A SIMD group waits for its longest probe
  /// sequence, which random keys make long where a dense range's take one bucket each; a table
  /// twice as large shortens it, and costs nothing but memory while it stays in the cache. Past
  /// the L2 the larger table's misses (and PARTITION's runs) cost more than the probes save.
  std::uint64_t initial_table_capacity() const;
  /// The largest global table taken to stay in a GPU's L2 beside the streamed input (the H100's
  /// is 50 MiB; OpenCL's CL_DEVICE_GLOBAL_MEM_CACHE_SIZE does not report it on every GPU).
  static constexpr std::uint64_t cache_resident_table_bytes = std::uint64_t{40} << 20;

  /// The groups tables are sized for: the planned groups, except that an estimate within its
  /// error (estimate_tolerance, or 2.5 of the estimate's own standard errors where it knows them
  /// and they are larger: input_profile::estimate_error) above a power-of-two table size rounds
  /// down to it: a table sized for 1031 groups when 1024 are there is twice as large, and a
  /// local table no longer fits.
  std::uint64_t sizing_groups() const;

  /// The table after a growth: room for the groups it holds and the new groups the spill area
  /// brings (`spilled_groups`: the spill area's distinct keys, estimated; at most its rows), at
  /// least twice the old one. Sizing by the spill area's rows instead would leave the table many
  /// times too large when one large block's rows all spill.
  std::uint64_t grown_capacity(std::uint64_t groups, std::uint64_t spilled_groups, std::uint64_t current) const;

  /// Whether the global table keeps a bucket's key and accumulators in one record: options'
  /// `interleaved_table`, else for hash tables of more than interleave_min_buckets: a table
  /// that fits the L2 keeps its keys apart, where key reads hit L1 until atomics on their line
  /// invalidate it; once the table outgrows the L2, one sector per row (key and accumulators
  /// together) beats two. Direct addressing keeps its bitmap and arrays; accumulators of
  /// different sizes keep arrays (docs/decisions.md has the measurements).
  bool interleaved(std::uint64_t capacity) const;
  static constexpr std::uint64_t interleave_min_buckets = std::uint64_t{1} << 23;

  /// Bytes the kernels touch in a table of `buckets` buckets (and the EMPTY_KEY bucket) in
  /// `copies` copies, local or global: keys and accumulators, or for direct addressing
  /// (kernels/library.hpp: GPUAGG_DENSE_TABLE) accumulators and a bitmap of the entries in use.
  std::uint64_t table_layout_bytes(std::uint64_t buckets, std::uint64_t copies) const;
  /// Bytes of the global table of `capacity` buckets in its layout (arrays, interleaved
  /// records, or direct addressing's keyless entries).
  std::uint64_t global_table_bytes(std::uint64_t capacity, bool interleaved_layout) const;

  /// PARTITION's runs for a block of `rows` rows over a global table of `capacity` buckets (1:
  /// none): options' `partitions`, else by the bytes the rows touch, for blocks of at least
  /// 2^16 rows: the fewest (a power of two, 2 to max_partition_runs) whose regions take at most
  /// partition_region_bytes, for tables larger than partition_min_table_bytes up to
  /// partitioned_max_bytes; none for smaller tables (they stay in a 50 MB L2, or miss it less
  /// than PARTITION's pass costs) or larger ones (runs of a region no longer fit it either). At
  /// most one run per bucket.
  std::uint32_t partitions(std::uint64_t rows, std::uint64_t capacity, bool interleaved_layout) const;
  /// The largest global table that runs unpartitioned: cache_resident_table_bytes for direct
  /// addressing, hashed_resident_table_bytes for a hash table.
  std::uint64_t partition_min_table_bytes() const noexcept {
    return shape_.identity_scheme ? cache_resident_table_bytes : hashed_resident_table_bytes;
  }
  /// A hash table stays whole up to 64 MiB (2^22 buckets of 16 bytes and the EMPTY_KEY bucket):
  /// a hash table a little past the L2 loses less to its misses than PARTITION's extra pass
  /// over the rows costs, where direct addressing's rows, one atomic each and no probe, lose
  /// more and gain the pass back (docs/decisions.md, "PARTITION by the table's bytes").
  static constexpr std::uint64_t hashed_resident_table_bytes = (std::uint64_t{64} << 20) + 64;
  /// A region of the table that AGGREGATE keeps in the L2 while PARTITION's runs feed it: about
  /// half of a 50 MB L2, which the streamed rows and the run's other regions share; larger
  /// regions miss it, and more runs than needed cost PARTITION more (docs/decisions.md).
  static constexpr std::uint64_t partition_region_bytes = std::uint64_t{25} << 20;
  static constexpr std::uint64_t max_partition_runs = 32;
  static constexpr std::uint64_t partitioned_max_bytes = std::uint64_t{3} << 30;
  /// Whether PARTITION's copy holds each row's bucket (32 bits) in place of its key columns
  /// (kernels/partition.hpp: bucketed): direct addressing over a 64-bit key word (a 64-bit key,
  /// or packed columns' box), where the bucket halves the key's bytes that SCATTER writes and
  /// AGGREGATE reads back. A 32-bit word gains nothing, and hash tables need the key.
  bool partition_copy_buckets() const noexcept { return shape_.identity_scheme && shape_.key_bytes == 8; }
  /// Bytes of a row of PARTITION's copy: the input's row, or where the copy holds buckets, the
  /// bucket's 4 bytes in place of the key columns (the driver allocates no copy of the others).
  std::uint32_t partition_copy_row_bytes() const noexcept {
    if (!partition_copy_buckets()) return shape_.row_bytes;
    return shape_.row_bytes - std::min(shape_.key_row_bytes, shape_.row_bytes) + bucket_copy_bytes;
  }
  static constexpr std::uint32_t bucket_copy_bytes = 4;
  /// COUNT's runs by the first key column alone (kernels/partition.hpp: first_region). Over
  /// direct addressing's box a bucket's most significant digit is its first column's offset,
  /// so where every key lies in the box (`exact_box`: the plan's exact box; a caller's domain
  /// may leave keys outside, to the spill area) a run of whole values of that column is a run of
  /// buckets, and COUNT reads one key column where a bucket needs all. The box's first column
  /// spans `first_span` of its `capacity` buckets; `parts` runs were planned. Returns the values
  /// of the first column a run (its region is that times capacity / first_span buckets), or 0
  /// where the box is not exact or such a region would be more than a quarter larger than
  /// the planned one (a few first-column values a run, rounded up).
  std::uint64_t first_column_region(std::uint64_t capacity, std::uint64_t first_span, std::uint32_t parts,
                                    bool exact_box) const noexcept {
    if (!exact_box || !shape_.identity_scheme || first_span == 0 || parts == 0 || capacity % first_span != 0) return 0;
    const std::uint64_t region = (capacity + parts - 1) / parts;
    const std::uint64_t values = (first_span + parts - 1) / parts;
    return values * (capacity / first_span) * 4 <= region * 5 ? values : 0;
  }

  /// Buckets of WORKGROUPLOCAL's local table: the range local table's (range_local), the perfect
  /// local table's (perfect_local), else probed_local_capacity.
  std::uint64_t local_capacity() const;
  /// Buckets of a probed local table: every group planned where local memory holds them; for
  /// scattered keys on a GPU, up to local_sparse_factor buckets a group within local memory.
  std::uint64_t probed_local_capacity() const;
  /// Local memory of WORKGROUPLOCAL's local table in `copies` copies: table_layout_bytes, or for
  /// the perfect local table its keys once, the copies' accumulators, a bit per entry in use and
  /// the displacements.
  std::uint64_t local_table_bytes(std::uint64_t copies) const;
  /// Scattered keys collide at load 1/2, and a GPU's SIMD group waits for its longest probe
  /// sequence. A local table lives only while its work group runs, and local memory beyond the
  /// groups' buckets would sit unused, so a sparser table costs little: load 1/32 at most. (A
  /// CPU's work items do not wait for each other's probes, and its local memory is the caches'.)
  static constexpr std::uint64_t local_sparse_factor = 32;
  /// Buckets of each of INDEPENDENT's private tables.
  std::uint64_t private_capacity(const launch_config& config) const {
    return std::min(small_table_buckets(), max_private_buckets(config));
  }
  /// Buckets a local or private table needs for every group planned.
  std::uint64_t small_table_buckets() const;
  /// The most buckets of a local table that fit in local memory (beside the kernel's own).
  std::uint64_t max_local_buckets() const;
  /// The most buckets of each private table that fit the budget for `config`'s work items.
  std::uint64_t max_private_buckets(const launch_config& config) const;
  /// Global memory INDEPENDENT's private tables may take.
  std::uint64_t private_budget() const;
  /// Work items of a launch.
  std::uint64_t total_threads(const launch_config& config) const {
    return std::uint64_t{device_.compute_units} * config.work_groups_per_cu * config.work_group_size;
  }
  /// Work items AGGREGATE launches over `rows` rows with `config`: its total_threads, or where
  /// those outnumber the rows, the fewest whole work groups that give every row a work item
  /// (one work group at least). A work group that finds no row still costs its launch, and a
  /// block's pieces (partition_piece_rows) or its last rows are often fewer than the work items
  /// the configuration was measured with, by up to half where within_rows keeps it.
  std::uint64_t launch_threads(const launch_config& config, std::uint64_t rows) const {
    const std::uint64_t local = std::max<std::uint32_t>(config.work_group_size, 1);
    const std::uint64_t groups = std::max<std::uint64_t>((rows + local - 1) / local, 1);
    return std::min(total_threads(config), groups * local);
  }

  // ---- how big a block (plan/blocks.hpp) --------------------------------------------------------

  /// Rows per block, per the widest column: options' `block_bytes`; else 16 MiB for host input
  /// (section 2.1: large enough to hide a launch, small enough to overlap the next transfer); for
  /// device input large blocks (fewer launches and per-work-group merges) of 256 MiB: where
  /// the spill area must hold every row in flight (compact_spill false), only as many as keep
  /// it within min(1 GiB, 1/32 of device memory).
  std::size_t block_rows() const;

  /// Rows PARTITION orders at a time over a global table of `capacity` buckets: a block runs as
  /// pieces of at most this many rows (each partitioned, then aggregated), so its copy of a
  /// piece stays within 5/8 of the table's bytes (the table, its spill area of a quarter and the
  /// copy then hold 1 7/8 tables, an eighth left for the counters and PARTITION's counts), and
  /// at least min_partition_piece_rows; never more than block_rows. A piece costs its own
  /// SCATTER and AGGREGATE launches, so pieces are as large as that bound allows; the block
  /// keeps its one COUNT and SCAN, its one wait and its tuning step. Direct addressing's table
  /// is often a fraction of the hash table its groups would need (hashed_table_bytes): its copy
  /// may take what that hash table's would.
  std::size_t partition_piece_rows(std::uint64_t capacity, bool interleaved_layout) const;
  /// Bytes of the hash table the groups planned would get (in its layout), whatever the scheme.
  std::uint64_t hashed_table_bytes() const;
  static constexpr std::uint64_t min_partition_piece_rows = std::uint64_t{1} << 20;
  /// Rows of each of the equal pieces a block of `block` rows splits into, each at most
  /// partition_piece_rows: the driver's pieces, and what its copy holds.
  std::uint64_t equal_piece_rows(std::uint64_t block, std::uint64_t capacity, bool interleaved_layout) const;
  /// The rows one AGGREGATE launch runs: a block's (block_rows(), or all the input's rows if
  /// fewer, at least 1), or where the first table is partitioned, a piece's (equal_piece_rows).
  std::uint64_t rows_a_launch() const;

  /// block_rows() and window() of host input, which follow the options and the columns' widths
  /// alone, not the groups: the driver starts the first blocks' copies before it estimates the
  /// groups, and they are the blocks the plan then runs.
  static std::size_t host_block_rows(const query_shape& shape, const options& opts);
  static std::size_t window(const options& opts) noexcept { return std::max<std::size_t>(opts.blocks_in_flight, 1); }

  /// Whether the device reads host input's blocks where they lie (a buffer over the caller's
  /// memory, CL_MEM_USE_HOST_PTR) instead of a copy into its own: by default a CPU, whose
  /// "device memory" is the same host memory, so a copy would only be a second pass over it.
  static bool host_blocks_in_place(const device_info& device, const options& opts) {
    return opts.host_blocks_in_place.value_or(device.architecture == "cpu");
  }
  /// Blocks of pinned host input whose copies start before the set-up samples and estimates:
  /// as many as early_copy_bytes hold (the copy engine's work while the host sketches 2^19
  /// strided rows, 3 to 7 ms beside these copies, is 150 to 350 MiB at 50 GB/s), within 1/16 of
  /// the device's memory, at least one. They hold their own buffers until they run: a short estimate loses nothing,
  /// the copies continue behind the first blocks' kernels.
  static std::size_t early_blocks(const device_info& device, const query_shape& shape, const options& opts);
  static constexpr std::uint64_t early_copy_bytes = std::uint64_t{256} << 20;

  /// Whether the spill area is sized for the table instead of for every row in flight: for a
  /// restartable query (input_profile::restartable) on device input. A row the table cannot
  /// take goes to the spill area; one that finds it full is dropped and the query marked, and
  /// its caller runs it again with compact_spill false (the estimate must have been far too
  /// low: the table fills before the driver can grow it between blocks). Host input keeps the
  /// full spill area: running it again would copy the whole input again.
  bool compact_spill() const noexcept { return profile_.restartable && profile_.on_device; }

  /// Entries of the spill area for a first table of `table_capacity` buckets: every row of the
  /// blocks in flight (block_rows() x window()); with compact_spill(), a quarter of the table's
  /// buckets (at most that): a table sized from an estimate within 2x of the groups seldom
  /// spills at all, and one that fills long before its growth spills more rows than any spill
  /// area short of the rows in flight holds, so the query runs again. No larger floor: a
  /// small table's query then holds about 1.25 tables, not a spill area many times the table.
  std::uint64_t spill_capacity(std::uint64_t table_capacity) const;

  /// Rows of each block the tuner measures: the 16 MiB blocks the paper tunes with (section 3.1),
  /// for device input too, where they are slices of the large blocks (blocks are a unit of
  /// tuning there, not of residence); never more than block_rows.
  std::size_t tuning_block_rows() const;

  std::size_t window() const noexcept { return window(opts_); }

  // ---- which strategy and thread configuration (plan/strategy_choice.hpp) ---------------------

  /// The entry's regime for the current table: the first whose bound holds the table's bytes as
  /// the recorded query's group count (plan_regime::max_table_log2).
  const plan_regime& regime() const;

  /// The configuration the plan starts a strategy with: the entry's for the regime, its runs
  /// configuration where the sample shows runs of equal keys (runs_share; neighbouring work
  /// items then update one bucket, and fewer of them contend), its scattered-keys one where the
  /// keys are spread wider than a dense range (scattered_keys), INDEPENDENT the paper's initial
  /// configuration (section 4.1); its work groups halved until the kernel runs them, and while
  /// half of them would still give every work item a row of a block (block_rows).
  launch_config initial_config(strategy_kind strategy) const;

  /// Whether the keys are spread wider than a dense range: the sample's key range more than
  /// dense_span_factor times the groups planned. Multiply-shift hashing gives each key of a dense
  /// range its own bucket; keys spread wider (identifiers, hashed values, packed composite keys,
  /// signed keys on both sides of zero) collide as random keys do, some work item of a SIMD group
  /// probes several buckets, and the group waits for it: more work groups per compute unit hide
  /// that wait. Never for direct addressing, which does not probe.
  bool scattered_keys() const;
  static constexpr double dense_span_factor = 4;

  /// The strategy without tuning (section 3.7): WORKGROUPLOCAL while its local table holds every
  /// group, else SHARED. Beyond the paper, for skewed keys (the sample's hottest key):
  /// - one key holding 1/16 or more of the rows: WORKGROUPLOCAL with a local table smaller than
  ///   the groups, which absorbs the hot key's updates in local memory and sends the rest to the
  ///   global table (SHARED's atomics on one bucket serialize);
  /// - keys in runs, or one dominant key, on a GPU: WORKGROUPLOCAL with a partial local table
  ///   where each work group meets no more keys than it holds (partial_local_table);
  /// - several frequent keys (the hot-key table, hot_table): SHARED with that table;
  /// - direct addressing with a dominant key: SHARED with the run cache's register, also in place
  ///   of a local table of more than a quarter of local memory.
  /// Each strategy's kernel limit is read (its program built) only where the rule gets to it.
  execution_params default_params() const;

  /// Whether WORKGROUPLOCAL with a local table smaller than the groups runs the query beyond
  /// local memory: on a GPU, for hashed keys in runs (runs_share), with one dominant key (not a
  /// single one) or whose work group's window met few keys (work_group_keys), where a work group
  /// of partial_local_start meets in a block no more keys than its local table holds
  /// (keys_per_work_group). Its rows then find their key in local memory,
  /// a run or the dominant key's rows in one local bucket, and only the first row of each key
  /// reaches the global table; SHARED sends every row, or every run, to the L2's atomics. Where a
  /// work group meets more keys, its table fills and each later key probes it in vain
  /// (GPUAGG_LOCAL_MAX_PROBES) before it goes to the global table: several times SHARED's time.
  bool partial_local_table() const;
  /// WORKGROUPLOCAL's configuration with a partial local table: partial_local_start within the
  /// kernel's limits and the block's rows (fitted).
  launch_config partial_local_config() const;
  /// The rows whose keys tell whether a work group of partial_local_config meets few keys
  /// where the sample shows neither runs nor a dominant key but keys that follow the rows'
  /// positions (stepped_share): keys row % G or ids written round-robin hand each work item's
  /// grid-stride rows a few keys, each work group a few hundred, although every key is as
  /// frequent as the next and no neighbour shares a key. Asked for on a GPU, for device input
  /// with at least locality_strides grid strides a launch, whose hashed groups outgrow local
  /// memory, that direct addressing does not take, and whose sample decided nothing else; one
  /// read of a few KiB, once.
  std::optional<key_window> locality_window() const;
  static constexpr std::uint32_t locality_strides = 16;
  /// The sampled rows whose neighbour's key is one step on, at least: shuffled keys have about
  /// one in the groups.
  static constexpr double stepped_min_share = 0.5;
  /// More, smaller work groups: each meets fewer keys (a grid-stride loop hands a work group
  /// every so many stretches of consecutive rows), so more of its rows find their key in its table.
  static constexpr launch_config partial_local_start{32, 256};
  /// The distinct keys a work group of `config` meets in a block, from the sample's shape: in
  /// runs, a key for each stretch of work_group_size consecutive rows it takes and one more at
  /// each run's end within them; beside a dominant key, at most a key for each other row; where
  /// a work group's window stopped meeting new keys (work_group_keys), those and a quarter more
  /// for the strides it did not read. At most the groups planned.
  double keys_per_work_group(const launch_config& config) const;

  /// The strategies whose programs default_params() may build (their kernel limits): what a
  /// query builds side by side before its first block.
  std::vector<strategy_kind> strategies_to_build() const;

  /// Whether WORKGROUPLOCAL's local table holds every group planned (section 3.7's condition,
  /// without the kernel's work-group limit).
  /// A range local table holds every key of its range, and a perfect local table every key the
  /// sample saw (by default only where it missed at most perfect_max_unseen_share of the rows);
  /// a row of another key goes to the global table.
  bool local_table_fits() const {
    return range_.has_value() || perfect_.has_value() || max_local_buckets() >= small_table_buckets();
  }

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
  std::uint32_t max_work_group_size(const kernel_variant& variant) const;
  std::uint32_t max_work_group_size(strategy_kind strategy) const {
    return max_work_group_size(kernel_variant{strategy});
  }
  /// Whether a variant's kernel runs work groups of `size` work items on the device. One work
  /// item always runs, so asking builds no program (reading a kernel's limit builds it).
  bool runs_work_group_size(std::uint32_t size, const kernel_variant& variant) const {
    return size <= 1 || size <= max_work_group_size(variant);
  }

  /// Whether `params` suits this query (section 4.1's constraints): the work-group limits hold,
  /// and WORKGROUPLOCAL's local table or INDEPENDENT's private tables hold every group planned.
  bool feasible(const execution_params& params) const { return infeasibility(params, true).empty(); }

  /// Why `params` cannot run, or empty. Not `strict`: a local or private table smaller than the
  /// groups planned is allowed (rows it cannot hold go to the global table).
  std::string infeasibility(const execution_params& params, bool strict = true) const;

  // ---- what a kernel gets (plan/kernel_features.hpp) --------------------------------------------

  /// Whether AGGREGATE combines each work item's runs of one key privately first: options'
  /// `run_cache` if set, else when one key dominates the sample: a single key, or one holding
  /// 3/4 of the rows unless WORKGROUPLOCAL already spreads it over replicated local tables.
  bool run_cache(const execution_params& params) const;

  /// Whether AGGREGATE runs SHARED with the hot-key table in local memory: options' `hot_table`
  /// if set (for SHARED with a hash scheme, when the sample found frequent keys), else when the
  /// frequent keys it holds cover at least hot_table_min_share of the sample and the run cache is
  /// not used (a dominant key is the run cache's: one local bucket would serialize its atomics).
  bool hot_table(const execution_params& params) const;
  static constexpr double hot_table_min_share = 1.0 / 8;
  /// Local memory the hot-key table may take per work group.
  static constexpr std::uint64_t hot_table_max_bytes = std::uint64_t{32} << 10;
  /// The hot-key table's size and the number of the sample's frequent keys it holds.
  const hot_table_plan& hot_keys() const noexcept { return hot_; }

  /// Whether WORKGROUPLOCAL's run-cache build queues cold rows: when the run cache was chosen
  /// automatically for a dominant key (not a single key, whose runs go faster without the queue)
  /// and a queue of at least 2 rows per work item fits in local memory beside the table.
  bool cold_queue(const execution_params& params) const;
  /// Whether the block's build keeps private_groups_max groups per work item in private
  /// variables (-DGPUAGG_PRIVATE_GROUPS), never beside the run cache or the hot-key table: for
  /// SHARED and WORKGROUPLOCAL where options::private_groups asks for it; unasked, for
  /// WORKGROUPLOCAL on a GPU where a row has wide_accumulators(), the key sample holds at most
  /// private_groups_max distinct keys and the estimate as few groups. A row's local atomics, one
  /// per accumulator, then cost more than the four selects per accumulator that replace them;
  /// with one accumulator they do not. SHARED's work items would end with each of their groups'
  /// updates on the same few global buckets.
  bool private_groups(const execution_params& params) const;
  /// Whether a row's accumulators take many_accumulator_bytes or more (bucket less key).
  bool wide_accumulators() const;
  static constexpr std::uint32_t many_accumulator_bytes = 32;
  /// The rows each work item of AGGREGATE loads before it combines any
  /// (-DGPUAGG_ROWS_IN_FLIGHT, kernels/aggregate.hpp): 2 with wide_accumulators(), else 4. Each
  /// row in flight holds every accumulator's value in registers, and a kernel of many registers
  /// runs fewer work items at a time.
  std::uint32_t rows_in_flight() const;
  static constexpr std::uint64_t private_groups_max = 4;
  /// The keys (table words) whose groups a private groups' build keeps in private variables: the
  /// sample's distinct keys, at most private_groups_max of them; where it holds fewer, the first
  /// repeated (a repeated key never matches twice: kernels/aggregate.hpp), and word 0 where the
  /// sample holds none. Any key is correct here: the rows of keys not named take the table's
  /// path.
  std::array<std::uint64_t, private_groups_max> private_group_keys() const;

  /// Rows per work item between two drains of the cold-row queue: 8, or 4 or 2 where the queue of
  /// 8 does not fit in local memory beside the table (0: not even 2).
  std::uint32_t cold_rows_per_item(const launch_config& config) const;

  /// The variant a block with `params` runs: the run cache, the hot-key table and the cold-row
  /// queue only where their own work-group limits allow the configuration.
  kernel_variant variant_for(const execution_params& params) const;

  /// WORKGROUPLOCAL's perfect local table (kernels/workgroup_local.hpp: GPUAGG_PERFECT_LOCAL): a
  /// perfect hash of the key sample's distinct keys in a table at most half full (fuller where
  /// local memory holds only that: plan_perfect_local), or none.
  /// options' `perfect_local_table` if set (true: whenever the sample's keys are known and the
  /// table fits local memory), else on a GPU for scattered keys (scattered_keys: a dense range
  /// takes a bucket a key under multiply-shift already) whose probed local table would be fuller
  /// than 1 / local_sparse_factor (sparser, it seldom probes twice, and its cheaper hash wins)
  /// when the sample's keys are known (input_profile::sample_keys) and the rows whose keys it
  /// missed, by Good-Turing's estimate, are at most perfect_max_unseen_share: each of them costs
  /// a lookup and a global atomic. A row then finds its bucket in one lookup, and no SIMD group
  /// waits for a long probe.
  const std::optional<detail::perfect_hash>& perfect_local() const noexcept { return perfect_; }
  static constexpr double perfect_max_unseen_share = 1.0 / 64;

  /// WORKGROUPLOCAL's range local table (kernels/workgroup_local.hpp: GPUAGG_RANGE_LOCAL): direct
  /// addressing in local memory over the sample's range of key words (of composite keys, the
  /// box of every key column's range: input_profile::key_box), or none. options'
  /// `range_local_table` if set (true: wherever the range fits local memory), else on a GPU
  /// wherever it fits and the groups planned are at least a quarter of its keys (a CPU's local
  /// memory is its caches, where a probed table's keys cost no scarce bytes and its work items
  /// wait for no other's probe; a sparse range would take the local memory a probed table of
  /// its few groups gives to copies). A row's key word, less the
  /// range's lowest, is its bucket: no hash, no key in local memory, no probe, and every key of
  /// the range has its bucket, seen by the sample or not. A row outside the range goes to the global table; a strided sample's extremes leave
  /// out about 2 / (sample size + 1) of the rows of any distribution of shuffled keys (order
  /// statistics), and of sorted input the rows past its last sampled row. A range of n keys
  /// takes 8 bytes and a bit a key for a 64-bit sum, where a probed table at load 1/2 takes 24,
  /// so about three times as many groups stay in local memory (6,000 in 48 KiB instead of 2,048).
  const std::optional<range_local_plan>& range_local() const noexcept { return range_; }
  /// Bytes of a keyless local table of `buckets` buckets (and the EMPTY_KEY bucket's entry) in
  /// `copies` copies: accumulators and a bit per entry in use (direct addressing's layout).
  std::uint64_t keyless_table_bytes(std::uint64_t buckets, std::uint64_t copies) const {
    const std::uint64_t entries = (buckets + 1) * copies;
    return entries * (shape_.bucket_bytes - shape_.key_bytes) + (entries + 31) / 32 * 4;
  }

  /// Copies of WORKGROUPLOCAL's local table per work group: options' `local_table_copies` if
  /// given, else as many as fit in a quarter of local memory, at most 32 (a SIMD group's width on
  /// most GPUs); a power of two, at most the work-group size. More copies spread the atomics of a
  /// few hot groups.
  std::uint32_t local_table_copies(const launch_config& config) const;

  /// How far a row probes the global table before it goes to the spill area: at most 1024
  /// buckets (a longer probe costs more than the growth it would put off); direct addressing's
  /// one bucket.
  std::uint32_t max_probes(std::uint64_t capacity) const;

  /// Whether AGGREGATE probes the global table with cacheable key reads (else volatile ones):
  /// for tables whose keys take at most plain_key_reads_max_bytes: while the keys fit the
  /// cache, a cached read saves the trip to the L2; for larger tables other work groups'
  /// atomics keep invalidating the lines it cached, and the reads only add traffic.
  bool plain_key_reads(std::uint64_t capacity, bool interleaved_layout) const;
  static constexpr std::uint64_t plain_key_reads_max_bytes = std::uint64_t{1} << 20;

  // ---- whether to address the table directly (plan/direct_table.hpp) ----------------------------

  /// Whether the driver should read the key column's exact range, or packed key columns' exact
  /// box (a pass over its keys on the device), to see whether direct addressing pays
  /// (direct_domain, direct_box): options' `direct_table` unless false (default: on a GPU), for
  /// a hash scheme on device input, at least direct_min_groups groups planned, and a sample of
  /// shuffled keys (no frequent key, no runs: their strategies and configurations were chosen
  /// for the hash table) whose range is dense (not scattered_keys), or whose box holds at most
  /// dense_span_factor times the groups planned. Host input has no pass to spare before its
  /// first copies.
  /// Never where options ask for the interleaved layout, a hash table's.
  bool direct_range_wanted() const;
  /// Direct addressing (a global table whose bucket is the key less the range's lowest, keeping
  /// accumulators and a bit a key: kernels/library.hpp, GPUAGG_DENSE_TABLE) over the exact
  /// range, or none: where the range holds at most direct_max_keys keys and its table takes no
  /// more bytes than the hash table initial_table_capacity would make. A row then updates one
  /// accumulator: no key read, no compare-and-swap, no probe; the table is often half the hash
  /// table's bytes, and at 2^22 groups fits the L2 where the hash table does not.
  std::optional<exact_key_range> direct_domain(const exact_key_range& range) const;
  /// Direct addressing over the exact box of packed key columns (2 to 4), or none: as
  /// direct_domain, for the box's keys (detail::key_box::keys), where every column's span but the
  /// first fits the tables' `bits` (detail::box_spans_code: 32, 16 or 10 bits). Two columns of
  /// 1,024 values are 2^20 buckets where their packed words span 2^42.
  std::optional<detail::key_box> direct_box(const detail::key_box& box) const;
  /// Whether the set-up starts the range's pass (driver/key_range.hpp) as soon as the key sample
  /// has arrived, before the host profiles the sample: the device is idle while the host counts
  /// (16 Ki keys of many groups: about as long as the pass over 2^27 keys on a GPU), so where the
  /// plan then asks for the range (direct_range_wanted) it is there already, and where it does
  /// not, the device lost only the time the profile did not cover. Before the profile only the
  /// sample's box is known, of a strided subset of the sample (early_range_subset keys; the full
  /// box costs the profile's own time): it must be possible that direct_range_wanted holds
  /// (`asked`: options' direct_table), a hash scheme on device input, direct addressing allowed
  /// and the interleaved layout not asked for, and the box must hold at least half of
  /// direct_min_groups keys (a subset's box is narrower than the sample's) and at most
  /// direct_max_keys, and of packed keys have spans that fit the tables' `bits`.
  static bool early_range_pass(const device_info& device, const query_shape& shape, const options& opts,
                               bool on_device, const detail::key_box& subset_box);
  /// The keys of the sample whose box early_range_pass reads: every
  /// (sample / early_range_subset)-th, an eighth of the sample's keys, so that the box costs the
  /// set-up little beside the profile it runs ahead of.
  static constexpr std::size_t early_range_subset = 2048;
  /// Below this many groups the hash table stays in the L2 and its keys' reads are cached
  /// (plain_key_reads): direct addressing's kernels gain less than the range's pass costs.
  static constexpr std::uint64_t direct_min_groups = std::uint64_t{1} << 17;
  /// Direct addressing's domain limit (options::domain): 2^31 - 1 keys.
  static constexpr std::uint64_t direct_max_keys = (std::uint64_t{1} << 31) - 1;

  // ---- whether to tune (plan/tuning.hpp) --------------------------------------------------------

  /// Whether the tuner refines the plan (Algorithm 1 from the plan's start): when the caller asks
  /// for tuning (options::autotune) and fixes neither strategy nor configuration, the input has
  /// at least min_blocks_to_tune tuning blocks, and the model is not sure: its entry was not
  /// measured on this device's kind (device or architecture), or was measured with another query
  /// shape (key width, bucket size) and the sample shows more than one key. Where the entry was
  /// measured for this query, tuning would re-measure what was recorded and cost each query its
  /// confirmation blocks.
  /// `forced` (tuned_group_by): tune whenever a block is left.
  tuning_plan tuning(bool forced = false) const;

 private:
  /// Buckets for `groups` at the load factor (a power of two, at least 16), unchecked.
  std::uint64_t capacity_for(std::uint64_t groups) const;
  /// Largest table size (a power of two, any size for identity) whose buckets fit in `bytes`.
  std::uint64_t buckets_fitting(std::uint64_t bytes) const;
  /// The hot-key table: the sample's frequent keys, as many as a table at most half full holds
  /// within hot_table_max_bytes of local memory (and a quarter of the device's).
  hot_table_plan plan_hot_table() const;
  /// perfect_local's table, built from the profile's sample keys.
  std::optional<detail::perfect_hash> plan_perfect_local() const;
  /// `config` within `strategy`'s kernel limit (its threads per compute unit kept) and
  /// within_rows.
  launch_config fitted(launch_config config, strategy_kind strategy) const;
  /// `config` with its work groups halved while half of them would still give every work item a
  /// row of a block.
  launch_config within_rows(launch_config config) const;
  /// range_local's range, from the profile's sampled extremes.
  std::optional<range_local_plan> plan_range_local() const;
  /// local_table_bytes of a perfect local table of `buckets` buckets and `displacement_groups`
  /// displacements in `copies` copies (known from the key count before a hash is built).
  std::uint64_t perfect_table_bytes(std::uint64_t buckets, std::uint64_t displacement_groups, std::uint64_t copies) const;

  device_info device_;
  query_shape shape_;
  input_profile profile_;
  options opts_;
  kernel_limit_fn limits_;
  std::uint64_t planned_groups_ = 1;
  plan_entry entry_;
  hot_table_plan hot_;
  std::optional<detail::perfect_hash> perfect_;
  std::optional<range_local_plan> range_;
};

}  // namespace gpuagg

#include "plan/blocks.hpp"
#include "plan/direct_table.hpp"
#include "plan/kernel_features.hpp"
#include "plan/strategy_choice.hpp"
#include "plan/table_size.hpp"
#include "plan/tuning.hpp"
