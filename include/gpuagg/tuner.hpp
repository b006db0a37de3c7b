#pragma once
#define GPUAGG_TUNER_HPP
// The tuner: dynamic selection of execution parameters during query execution (Rosenfeld et
// al. 2019, section 4). It chooses each block's strategy and thread configuration, reads back
// each block's profiled AGGREGATE time, and follows Algorithm 1 through the search space until
// it converges; the remaining blocks then run with the winner. Winners are remembered per
// device and query shape in a JSON file, so a later query of the same shape starts from them.
//
// This header declares and documents; the bodies live in detail/tuner/*.hpp, included at the
// end. Everything here is pure host code: no OpenCL. The tuner wraps the driver through the
// `block_driver` concept and never names it; the driver never knows the tuner.
//
// Environment:
//   GPUAGG_CACHE_DIR   where tuning.json lives (else $XDG_CACHE_HOME/gpuagg, else
//                      $HOME/.cache/gpuagg)
//   GPUAGG_LOG         non-empty and not "0": log the tuner's decisions to stderr

#include <gpuagg/strategy.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpuagg {

// ---------------------------------------------------------------------------------------------
// Hyper parameters (section 4.1 and Table 1)

/// The tuner's hyper parameters, grouped by concern: how a configuration's time is measured,
/// how the search moves, and what the persistent cache contributes. A literal, structural
/// type, so it configures the tuner at compile time: `tuner<gpuagg::paper_params>` is
/// Algorithm 1 exactly as the paper states it, and
/// `tuner<tuner_params{.measurement = {.max_blocks = 4}}>` changes one field.
///
/// The paper's five are search.similarity (s), search.prune (p), measurement.max_variation
/// (v_max), measurement.max_blocks (b_max) and measurement.initial_blocks (section 4.1, Table
/// 1). The fields marked "beyond the paper" extend the search (docs/autotuning.md, "The refined
/// search"); each one's paper value turns its extension off, and `paper_params` sets all of
/// them so. The defaults are the refined search, which finds configurations closer to the
/// optimum at a lower cost than Algorithm 1 on recorded search spaces (docs/autotuning.md has
/// the figures).
struct tuner_params {
  /// ProcessBlocksWith: how long a configuration runs before its time counts, and when a
  /// clearly slower one is abandoned early.
  struct measurement_params {
    /// Window of ProcessBlocksWith: "the algorithm executes a thread configuration on three
    /// blocks".
    unsigned initial_blocks = 3;
    /// b_max: ProcessBlocksWith spends at most this many blocks on one configuration.
    unsigned max_blocks = 10;
    /// v_max: ProcessBlocksWith accepts a window whose normalized range (max-min)/mean is at or
    /// below this value.
    double max_variation = 0.019;
    /// Beyond the paper. > 0: a neighbour of a reference whose own window was quiet
    /// (normalized range at most quiet_noise) is measured with a window of this many blocks
    /// instead of initial_blocks (at most initial_blocks). Paper: 0 (off).
    unsigned quiet_window = 2;
    /// The normalized range below which a reference's window counts as quiet (quiet_window);
    /// the default is about a quarter of v_max.
    double quiet_noise = 0.005;
    /// Beyond the paper. > 1: a neighbour whose fastest block so far is more than this factor
    /// slower than the slowest block measured for its reference is abandoned (clearly slower)
    /// after rejection_blocks blocks instead of running ProcessBlocksWith to the end. Comparing
    /// with the reference's slowest block keeps start-up outliers (section 3.6) on both sides.
    /// Paper: 0 (off).
    double early_rejection = 1.05;
    /// Blocks a neighbour runs at least before early rejection may abandon it; 2 means a single
    /// outlier block never rejects a configuration.
    unsigned rejection_blocks = 2;
    /// Beyond the paper. > 1: a neighbour is abandoned (clearly slower) once each of its first
    /// rejection_blocks blocks is slower than this factor times its reference's block at the
    /// same position (block k against block k). Both measurements begin with the same change of
    /// configuration, so start-up outliers (section 3.6) are compared with start-up outliers,
    /// and a trend shared by both (a table still filling) cancels. Paper: 0 (off).
    double paired_rejection = 1.01;
    /// Beyond the paper. > 1: a neighbour whose very first block is slower than this factor x
    /// t(reference) x the largest start-up ratio seen so far (first block / t(c) of the complete
    /// measurements) is abandoned after that one block: even the largest start-up outlier
    /// measured cannot make a configuration that slow. Paper: 0 (off).
    double first_block_rejection = 2.0;
    friend constexpr bool operator==(const measurement_params&, const measurement_params&) = default;
  };

  /// Algorithm 1's walk: when two times are alike, what is pruned, which neighbours are tried.
  struct search_params {
    /// s: two runtimes are similar (a performance plateau) when
    /// (1-s) t(c_i) <= t(c_j) <= (1+s) t(c_i). s = 0 ignores plateaus (strict gradient). With
    /// noise_similarity > 0, s is the upper bound of the measured similarity below.
    double similarity = 0.06;
    /// p > 1: a reference configuration slower than p * t(c_f) is pruned (Algorithm 1, line 6).
    double prune = 1.07;
    /// Beyond the paper. > 0: the plateau test uses s' = min(s, noise_similarity * r), r the
    /// larger normalized range of the two measurements' windows, instead of the fixed s. The
    /// default 1/1.693 turns a range of three values into a standard deviation (d2(3) = 1.693):
    /// runtimes are similar when they differ by less than about one standard deviation of the
    /// measurement (the interval section 3.5 uses). Paper: 0 (the fixed s).
    double noise_similarity = 1.0 / 1.693;
    /// Beyond the paper. Also step along constant threads per compute unit: (2x, 1/2x) and
    /// (1/2x, 2x) join the paper's four axis neighbours (section 3.3: the same number of threads
    /// in different shapes performs alike, so optima lie in diagonal valleys). Paper: false.
    bool diagonal_neighbours = true;
    /// Beyond the paper. The first pass moves by this factor in each dimension (a power of two);
    /// each later pass halves it and restarts from c_f, down to the paper's factor 2. A wide
    /// first pass steps over small bumps (section 3.5: "nearly convex") and shortens long
    /// descents. Paper: 2 (one pass).
    unsigned coarse_stride = 4;
    /// Beyond the paper. > 1 (a power of two): after the initial configurations, each start's
    /// row (its work-group size, 1..max work groups per compute unit) is measured at every power
    /// of this factor, and the descent starts from the fastest point found, besides the start.
    /// The row spans every thread count per compute unit the start's shape can reach (section
    /// 3.3: the thread count matters most); it sees past ridges that stop a local search.
    /// Paper: 0.
    unsigned scan_stride = 4;
    /// Beyond the paper. Each finer pass (coarse_stride) restarts from every configuration
    /// measured so far that pruning keeps (within p of t(c_f)), fastest first, not from c_f
    /// alone: a basin the coarse pass stepped over next to a runner-up is searched at the finer
    /// stride too. Paper: false (one pass).
    bool restart_unpruned = true;
    friend constexpr bool operator==(const search_params&, const search_params&) = default;
  };

  /// The persistent cache of winners (tuning_cache).
  struct cache_params {
    /// Consult and update the persistent cache when the caller gives a tuning_key.
    bool use_cache = true;
    /// Beyond the paper. > 0: on a cache miss, the stored winner of the nearest group count of
    /// the same device and query, at most this many powers of two away, replaces its strategy's
    /// initial configuration (section 4.3 suggests predicting a start and fine-tuning it).
    /// Needs a key and use_cache. Paper: 0 (off).
    unsigned neighbour_entry_distance = 2;
    friend constexpr bool operator==(const cache_params&, const cache_params&) = default;
  };

  measurement_params measurement{};
  search_params search{};
  cache_params cache{};

  /// The first constraint the paper states or implies that these values break; empty when
  /// they keep them all. The tuner's one static_assert checks valid().
  constexpr std::string_view invalid_field() const noexcept {
    const auto& m = measurement;
    const auto& g = search;
    const auto power_of_two = [](unsigned v) { return (v & (v - 1)) == 0; };
    if (!(g.similarity >= 0.0 && g.similarity < 1.0)) return "search.similarity (s) must lie in [0, 1)";
    if (!(g.prune > 1.0)) return "search.prune (p) must be greater than 1 (Algorithm 1)";
    if (!(g.noise_similarity >= 0.0)) return "search.noise_similarity must be >= 0 (0: the fixed s)";
    if (!(g.coarse_stride >= 2 && power_of_two(g.coarse_stride))) {
      return "search.coarse_stride must be a power of two >= 2 (2 is the paper's neighbourhood)";
    }
    if (!(g.scan_stride == 0 || (g.scan_stride >= 2 && power_of_two(g.scan_stride)))) {
      return "search.scan_stride must be 0 (off) or a power of two >= 2";
    }
    if (!(m.max_variation >= 0.0)) return "measurement.max_variation (v_max) must be >= 0";
    if (!(m.initial_blocks >= 1)) return "measurement.initial_blocks must be at least 1";
    if (!(m.max_blocks >= m.initial_blocks)) return "measurement.max_blocks (b_max) must be >= initial_blocks";
    if (!(m.quiet_window <= m.initial_blocks)) return "measurement.quiet_window must be 0 (off) or <= initial_blocks";
    if (!(m.quiet_noise >= 0.0)) return "measurement.quiet_noise must be >= 0";
    if (!(m.early_rejection == 0.0 || m.early_rejection >= 1.0)) {
      return "measurement.early_rejection must be 0 (off) or >= 1";
    }
    if (!(m.rejection_blocks >= 1)) return "measurement.rejection_blocks must be at least 1";
    if (!(m.paired_rejection == 0.0 || m.paired_rejection >= 1.0)) {
      return "measurement.paired_rejection must be 0 (off) or >= 1";
    }
    if (!(m.first_block_rejection == 0.0 || m.first_block_rejection >= 1.0)) {
      return "measurement.first_block_rejection must be 0 (off) or >= 1";
    }
    return {};
  }
  /// The constraints the paper states or implies (invalid_field() names a broken one).
  constexpr bool valid() const noexcept { return invalid_field().empty(); }
  /// True when every extension is off: the search is Algorithm 1 as the paper states it.
  constexpr bool is_paper_algorithm() const noexcept {
    return !search.diagonal_neighbours && search.coarse_stride == 2 && search.noise_similarity == 0.0 &&
           search.scan_stride == 0 && !search.restart_unpruned && measurement.early_rejection == 0.0 &&
           measurement.paired_rejection == 0.0 && measurement.first_block_rejection == 0.0 &&
           measurement.quiet_window == 0 && cache.neighbour_entry_distance == 0;
  }
  friend constexpr bool operator==(const tuner_params&, const tuner_params&) = default;
};

/// Algorithm 1 exactly as the paper states it, with Table 1's second row (s = 0.06,
/// p = 1.07, v_max = 0.019, b_max = 10): the "detection of performance plateaus" scenario.
inline constexpr tuner_params paper_params{
    .measurement = {.quiet_window = 0, .early_rejection = 0.0, .paired_rejection = 0.0, .first_block_rejection = 0.0},
    .search = {.noise_similarity = 0.0,
               .diagonal_neighbours = false,
               .coarse_stride = 2,
               .scan_stride = 0,
               .restart_unpruned = false},
    .cache = {.neighbour_entry_distance = 0}};
/// Table 1, first row: Algorithm 1 ignoring performance plateaus (s = 0).
inline constexpr tuner_params strict_gradient_params = [] {
  tuner_params p = paper_params;
  p.search.similarity = 0.0;
  return p;
}();
/// Table 1, second row: the same as `paper_params`.
inline constexpr tuner_params plateau_params = paper_params;
/// The refined search (the defaults).
inline constexpr tuner_params refined_params{};

std::ostream& operator<<(std::ostream& os, const tuner_params& params);

// ---------------------------------------------------------------------------------------------
// The search space (section 3.1)

/// Thread configurations the tuner may visit: work groups per compute unit in powers of two
/// 1..max_work_groups_per_cu, work group sizes in powers of two 1..max_work_group_size (the
/// device's limit). Bounds that are not powers of two are rounded down to one. Whether a point
/// can actually run (local memory, table copies) is the caller's feasibility predicate.
struct search_space {
  std::uint32_t max_work_groups_per_cu = 1024;
  std::uint32_t max_work_group_size = 1024;

  /// Both dimensions are powers of two within the bounds.
  bool contains(const execution_params& params) const noexcept;
  /// Rounds each dimension down to a power of two and into the bounds (at least 1).
  execution_params clamp(execution_params params) const noexcept;
  /// Neighbourhood of Algorithm 1: adjacent powers of two in each dimension, same strategy,
  /// inside the bounds, in this order (the order they are tried in):
  ///   1. work_groups_per_cu x 2   2. work_groups_per_cu / 2
  ///   3. work_group_size x 2      4. work_group_size / 2
  std::vector<execution_params> neighbours(const execution_params& params) const;
  /// The refined search's neighbourhood (tuner_params::search_params::diagonal_neighbours, coarse_stride):
  /// the four above at distance `stride` (a power of two) instead of 2, then, with `diagonal`,
  ///   5. work_groups_per_cu x stride, work_group_size / stride   (same threads per CU)
  ///   6. work_groups_per_cu / stride, work_group_size x stride
  /// `neighbours(p, 2, false)` is `neighbours(p)`.
  std::vector<execution_params> neighbours(const execution_params& params, std::uint32_t stride, bool diagonal) const;
  /// Every point of one strategy's grid, work_groups_per_cu-major (for a full evaluation).
  std::vector<execution_params> configurations(strategy_kind strategy) const;
};

/// Section 4.1, "Initial thread configurations": 1x512 SHARED, 1x256 INDEPENDENT, 4x512
/// WORKGROUPLOCAL, clamped to `space` (e.g. to 1x256 / 4x256 where work groups hold 256 items).
std::vector<execution_params> default_initial_configs(const search_space& space);

/// The one default initial configuration of `strategy`, clamped to `space`.
execution_params default_initial_config(strategy_kind strategy, const search_space& space);

// ---------------------------------------------------------------------------------------------
// What the tuner drives

/// Measures one block of the query with the given parameters and returns its AGGREGATE time in
/// seconds. The live tuner wraps the driver in one; replay and tests inject recorded times.
using measure_fn = std::function<double(const execution_params&)>;

/// Says that the next `blocks` measurements are of `params` (a ProcessBlocksWith that cannot
/// stop before its window): a driver may then enqueue the next of them while the host reads the
/// current one, so the device does not idle between the blocks of one measurement. Optional:
/// replay and tests pass none.
using announce_fn = std::function<void(const execution_params&, std::size_t)>;

/// Says whether a point can run at all (resource limits, strategy limits). Called before
/// anything is measured; an infeasible point is never measured.
using feasibility_fn = std::function<bool(const execution_params&)>;

/// Anything callable as a feasibility predicate.
template <class F>
concept feasibility_predicate = std::predicate<F&, const execution_params&>;

/// The block-wise driver as the tuner sees it (section 2.1, "Execution stages"): every block the
/// tuner measures advances the real query.
template <class D>
concept block_driver = requires(D d, const execution_params& p) {
  { d.blocks_left() } -> std::convertible_to<std::size_t>;  // blocks not yet processed
  { d.run_block(p) } -> std::convertible_to<double>;  // processes the NEXT block with p and
                                                      // returns its profiled AGGREGATE seconds
};

/// A block_driver that also says which parameters suit its query; `tuner::run(driver)` then
/// needs no separate predicate.
template <class D>
concept checking_block_driver = block_driver<D> && requires(const D& d, const execution_params& p) {
  { d.feasible(p) } -> std::convertible_to<bool>;
};

/// A block_driver that can run all remaining blocks with one configuration itself, overlapping
/// transfers with AGGREGATE; the tuner then hands the post-convergence blocks over in one call.
template <class D>
concept pipelining_block_driver = block_driver<D> && requires(D d, const execution_params& p) {
  d.run_remaining(p);
};

/// A block_driver that can be told the next blocks' parameters ahead (announce_fn): the tuner
/// says so for each measurement that will run its whole window.
template <class D>
concept announcing_block_driver = block_driver<D> && requires(D d, const execution_params& p, std::size_t n) {
  d.announce_blocks(p, n);
};

// ---------------------------------------------------------------------------------------------
// The persistent cache (section 4.3: "determine the fastest execution [parameters] per query
// and store these values")

/// What a stored winner is keyed by: the same device and driver, the same query, key type and
/// order of magnitude of groups make the same search space.
struct tuning_key {
  std::string device;          ///< device name as the runtime reports it
  std::string driver_version;  ///< driver version as the runtime reports it
  std::string query;           ///< query signature, e.g. "sum(v) group by g"
  std::string key_type;        ///< key type name, e.g. "uint32"
  int groups_log2 = 0;         ///< ceil(log2(expected groups)), see `log2_groups`

  /// ceil(log2(max(1, expected_groups))).
  static int log2_groups(std::uint64_t expected_groups) noexcept;
  friend bool operator==(const tuning_key&, const tuning_key&) = default;
};

std::ostream& operator<<(std::ostream& os, const tuning_key& key);

/// One stored winner.
/// Where a search the input cut short stood (a provisional cache entry keeps it): every
/// configuration measured completely, Algorithm 1's queue Q, the pass and its stride. The next
/// query of the same shape continues from here instead of measuring the same points again.
struct search_state {
  enum class phase_kind : std::uint8_t { initial, scan, descent };
  struct tested {
    execution_params params{};
    double seconds = 0.0;  ///< t(c)
    bool rejected = false;  ///< stopped early as clearly slower
    std::vector<double> blocks;  ///< every block it ran, in order
    friend bool operator==(const tested&, const tested&) = default;
  };
  phase_kind phase = phase_kind::initial;
  std::uint32_t stride = 0;  ///< the pass's stride (descent)
  std::vector<execution_params> queue;
  std::vector<tested> measured;
  /// The measurement the input cut short, its blocks so far (seconds and rejected unused): the
  /// next query continues it rather than starting it again, so that a measurement longer than
  /// one query still completes.
  std::optional<tested> partial;
  friend bool operator==(const search_state&, const search_state&) = default;
};

struct cache_entry {
  execution_params params{};
  double seconds = 0.0;  ///< its time per block when it won
  /// False for a provisional entry: the best so far of a search the input cut short. It is never
  /// confirmed as a hit; the next query of the same shape resumes the search from `state`.
  bool converged = true;
  std::optional<search_state> state;  ///< a provisional entry's search, where it stood
  friend bool operator==(const cache_entry&, const cache_entry&) = default;
};

/// The winners file: one JSON document, {"format": "gpuagg-tuning", "version": 1, "entries":
/// [{device, driver_version, query, key_type, groups_log2, strategy, work_groups_per_cu,
/// work_group_size, seconds, converged}, ...]} (converged false: a provisional entry, see
/// cache_entry). A value type (just the path); all file access is
/// serialized by one process-wide mutex and every write is atomic (temp file + rename), so
/// readers never see half a file. Across processes the last writer wins.
///
/// Failures never throw: a corrupt, unreadable or unwritable file adds a warning to the caller's
/// list (printed once per process on stderr) and behaves like an empty cache. A file that does
/// not exist yet is a plain miss.
class tuning_cache {
 public:
  /// A disabled cache: loads miss, stores do nothing.
  tuning_cache() = default;
  explicit tuning_cache(std::filesystem::path file);

  /// `default_path()`, or a disabled cache where no path can be resolved.
  static tuning_cache from_environment();
  /// $GPUAGG_CACHE_DIR/tuning.json, else $XDG_CACHE_HOME/gpuagg/tuning.json, else
  /// $HOME/.cache/gpuagg/tuning.json (empty variables count as unset).
  static std::optional<std::filesystem::path> default_path();

  bool enabled() const noexcept { return !file_.empty(); }
  const std::filesystem::path& path() const noexcept { return file_; }

  std::optional<cache_entry> load(const tuning_key& key, std::vector<std::string>& warnings) const;
  /// The entry of the same device, driver, query and key type whose groups_log2 is nearest to
  /// the key's, 1..max_distance away (the smaller group count on a tie), with that groups_log2.
  std::optional<std::pair<int, cache_entry>> load_nearest(const tuning_key& key, int max_distance,
                                                          std::vector<std::string>& warnings) const;
  /// Inserts or replaces the entry of `key`; false (with a warning) where it could not write.
  bool store(const tuning_key& key, const cache_entry& entry, std::vector<std::string>& warnings) const;

 private:
  std::filesystem::path file_;
};

// ---------------------------------------------------------------------------------------------
// The report (section 4.2 metrics)

/// Why a configuration was measured.
enum class measurement_role : std::uint8_t {
  initial,      ///< an initial configuration (section 4.1), before the loop
  neighbour,    ///< Algorithm 1, line 12
  cache_check,  ///< the stored winner, measured once to confirm it
  scan,         ///< the refined search's scan along the start's work-group size (tuner_params::search_params::scan_stride)
};

std::string_view to_string(measurement_role role) noexcept;

/// One ProcessBlocksWith call.
struct tried_configuration {
  execution_params params{};
  double seconds = 0.0;  ///< mean of the kept window (the measurement t(c))
  unsigned blocks = 0;   ///< blocks spent on it, discarded outliers included
  bool complete = true;  ///< false: the input ran out before the measurement finished
  measurement_role role = measurement_role::neighbour;
  std::vector<double> block_seconds;  ///< every block's time, in order
  bool rejected = false;  ///< stopped early as clearly slower (tuner_params::measurement_params::early_rejection)
};

/// What the cache contributed.
enum class cache_outcome : std::uint8_t {
  not_used,  ///< no key, caching disabled, or no cache path
  miss,      ///< nothing stored (or unusable): full search
  hit,       ///< stored winner confirmed by one measurement: no search
  stale,     ///< stored winner off by more than s: full search, entry replaced
  resumed,   ///< a provisional entry (a search cut short before): the search starts from it
};

std::string_view to_string(cache_outcome outcome) noexcept;

/// Everything a tuning run did.
struct tuning_report {
  tuner_params params{};
  std::vector<tried_configuration> tried;   ///< in the order measured
  std::optional<execution_params> winner;   ///< c_f; empty only if nothing could be measured
  double winner_seconds = 0.0;              ///< t(c_f)
  bool converged = false;                   ///< false: the input ran out mid-search
  std::size_t exploration_blocks = 0;       ///< blocks processed while searching (0 on a cache hit)
  std::size_t confirmation_blocks = 0;      ///< a cache hit's check: blocks run with the stored winner
  double exploration_seconds = 0.0;         ///< their summed block times
  std::size_t winner_blocks = 0;            ///< blocks run with the winner afterwards (run() only)
  double winner_block_seconds = 0.0;        ///< their summed block times (0 where the driver
                                            ///< pipelined them through run_remaining)
  cache_outcome cache = cache_outcome::not_used;
  std::optional<int> started_from_groups_log2;  ///< a miss started from this group count's entry
                                                ///< (tuner_params::cache_params::neighbour_entry_distance)
  std::vector<std::string> warnings;        ///< cache trouble, no feasible configuration, ...
  double host_seconds = 0.0;                ///< the tuner's own bookkeeping time (no blocks, no I/O)

  /// Algorithm overhead (section 4.2, metric 3): host bookkeeping time as a share of the block
  /// time it steered, host_seconds / exploration_seconds.
  double overhead() const noexcept;
  /// Cost (section 4.2, metric 2): cumulative normalized runtime until convergence minus the
  /// number of processed blocks, sum_b t_b / best - blocks = exploration_seconds / best -
  /// exploration_blocks: how many more blocks the fastest configuration would have processed.
  double cost(double best_seconds) const noexcept;
  /// `cost(winner_seconds)`: normalized by the best time this run knows.
  double cost() const noexcept;
  /// The measurement of `params`, or nullptr.
  const tried_configuration* find(const execution_params& wanted) const noexcept;
};

std::ostream& operator<<(std::ostream& os, const tuning_report& report);

/// Bounds of one search beyond the hyper parameters, set by the plan (plan.hpp: tuning_plan):
/// at most `block_budget` blocks measured (a search that has not converged by then stores its
/// best so far provisionally, and the rest of the input runs it), and whether each start's row
/// is scanned (tuner_params::search_params::scan_stride; not where the start was measured on the device).
struct search_bounds {
  std::size_t block_budget = static_cast<std::size_t>(-1);
  bool scan = true;
};

// ---------------------------------------------------------------------------------------------
// The tuner

/// Algorithm 1 (or with the default parameters the refined search around it) with its hyper
/// parameters fixed at compile time.
///
///   gpuagg::tuner<> tuner{gpuagg::search_space{.max_work_group_size = 1024}};
///   auto report = tuner.run(driver, feasible, {}, key);   // drives the whole query
///
/// `search` is the same algorithm over a plain measurement callback (replay, tests).
template <tuner_params Params = tuner_params{}>
class tuner {
  static_assert(Params.valid(),
                "gpuagg::tuner: a tuner_params field breaks its rule; Params.invalid_field() names it "
                "(e.g. search.prune must be > 1)");

 public:
  static constexpr tuner_params params = Params;

  /// Reads GPUAGG_LOG once here.
  explicit tuner(search_space space = {}, tuning_cache cache = tuning_cache::from_environment());

  const search_space& space() const noexcept { return space_; }
  const tuning_cache& cache() const noexcept { return cache_; }
  /// Where decisions are logged; nullptr silences. Defaults to stderr iff GPUAGG_LOG is set.
  void log_to(std::ostream* sink) noexcept { log_ = sink; }

  /// Runs the search with `measure`, which may be called at most `blocks_available` times.
  /// `initial` empty means `default_initial_configs(space())`. With a key (and use_cache), a
  /// stored winner is checked with one ProcessBlocksWith and the full search runs only if it is
  /// off by more than s; a converged search stores its winner.
  tuning_report search(const measure_fn& measure, std::size_t blocks_available,
                       const feasibility_fn& feasible, std::span<const execution_params> initial = {},
                       const std::optional<tuning_key>& key = std::nullopt, search_bounds bounds = {}) const;

  /// Drives the whole query: tunes on the driver's blocks, then runs every remaining block with
  /// the winner. If the input runs out mid-search, the report says so (converged == false) and
  /// holds the best so far. Throws unsupported_error if no point is feasible while blocks are left.
  /// A pipelining_block_driver gets the post-convergence blocks in one run_remaining(winner).
  template <block_driver Driver, feasibility_predicate Feasible>
  tuning_report run(Driver& driver, Feasible&& feasible, std::span<const execution_params> initial = {},
                    const std::optional<tuning_key>& key = std::nullopt, search_bounds bounds = {}) const;

  /// The same with the driver's own `feasible(params)` as the predicate.
  template <checking_block_driver Driver>
  tuning_report run(Driver& driver, std::span<const execution_params> initial = {},
                    const std::optional<tuning_key>& key = std::nullopt, search_bounds bounds = {}) const;

 private:
  search_space space_;
  tuning_cache cache_;
  std::ostream* log_ = nullptr;
};

}  // namespace gpuagg

// Definitions (cuCollections-style: declarations above, bodies in detail/).
#include <gpuagg/detail/tuner/space.hpp>
#include <gpuagg/detail/tuner/log.hpp>
#include <gpuagg/detail/tuner/process_blocks.hpp>
#include <gpuagg/detail/tuner/algorithm1.hpp>
#include <gpuagg/detail/tuner/cache.hpp>
#include <gpuagg/detail/tuner/report.hpp>
#include <gpuagg/detail/tuner/tune.hpp>
