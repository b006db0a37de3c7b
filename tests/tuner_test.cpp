// Tests of the tuner's pure parts (Rosenfeld et al. 2019, section 4): Algorithm 1 on synthetic
// search spaces with known answers, ProcessBlocksWith, the persistent cache, the report. No
// OpenCL: block times are injected.

#include <gpuagg/tuner.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace {

using gpuagg::cache_outcome;
using gpuagg::execution_params;
using gpuagg::measurement_role;
using gpuagg::search_space;
using gpuagg::strategy_kind;
using gpuagg::tuner;
using gpuagg::tuner_params;
using gpuagg::tuning_cache;
using gpuagg::tuning_key;
using gpuagg::tuning_report;

constexpr execution_params shared(std::uint32_t groups, std::uint32_t size) {
  return {strategy_kind::shared, {groups, size}};
}
constexpr execution_params independent(std::uint32_t groups, std::uint32_t size) {
  return {strategy_kind::independent, {groups, size}};
}
constexpr execution_params local(std::uint32_t groups, std::uint32_t size) {
  return {strategy_kind::workgroup_local, {groups, size}};
}

/// A bowl in log2 coordinates: base * (1 + k * ((x - x0)^2 + (y - y0)^2)), x = log2(groups per
/// CU), y = log2(work group size). Convex, single minimum at 2^x0 x 2^y0.
std::function<double(const execution_params&)> bowl(double base, double x0, double y0, double k = 0.05) {
  return [=](const execution_params& p) {
    const double x = std::log2(p.config.work_groups_per_cu);
    const double y = std::log2(p.config.work_group_size);
    return base * (1.0 + k * ((x - x0) * (x - x0) + (y - y0) * (y - y0)));
  };
}

/// Injected block times: `time(c)` per block, optionally reshaped per block index, and a record
/// of every block measured.
struct synthetic_space {
  explicit synthetic_space(std::function<double(const execution_params&)> steady) : time(std::move(steady)) {}

  std::function<double(const execution_params&)> time;
  std::function<double(const execution_params&, unsigned block)> block_time;  // optional
  std::vector<execution_params> blocks;
  std::map<execution_params, unsigned> blocks_of;

  double operator()(const execution_params& params) {
    const unsigned index = blocks_of[params]++;
    blocks.push_back(params);
    return block_time ? block_time(params, index) : time(params);
  }
  /// The configurations measured, in order, each once (consecutive blocks collapsed).
  std::vector<execution_params> sequence() const {
    std::vector<execution_params> result;
    for (const auto& p : blocks) {
      if (result.empty() || result.back() != p) result.push_back(p);
    }
    return result;
  }
};

/// A table of times with a default elsewhere: for hand-built spaces.
std::function<double(const execution_params&)> table(std::map<execution_params, double> times,
                                                      double otherwise = 10.0) {
  return [times = std::move(times), otherwise](const execution_params& p) {
    const auto it = times.find(p);
    return it == times.end() ? otherwise : it->second;
  };
}

bool always(const execution_params&) { return true; }

/// Algorithm 1 exactly (every extension off) with another pruning factor.
constexpr tuner_params paper_with_prune(double prune) {
  tuner_params params = gpuagg::paper_params;
  params.search.prune = prune;
  return params;
}

/// A tuner that never touches a cache file.
template <tuner_params Params = tuner_params{}>
tuner<Params> uncached(search_space space = {}) {
  return tuner<Params>(space, tuning_cache{});
}

/// The best point of `time` over the whole space, by brute force.
execution_params optimum_of(const std::function<double(const execution_params&)>& time, const search_space& space,
                            const std::function<bool(const execution_params&)>& feasible = always) {
  std::optional<execution_params> best;
  for (strategy_kind kind : gpuagg::all_strategies) {
    for (const auto& p : space.configurations(kind)) {
      if (feasible(p) && (!best || time(p) < time(*best))) best = p;
    }
  }
  return *best;
}

/// The block-wise driver as the tuner sees it: `total` blocks, times from a space.
struct mock_driver {
  mock_driver(std::size_t blocks, std::function<double(const execution_params&)> block_time)
      : total(blocks), time(std::move(block_time)) {}

  std::size_t total = 0;
  std::function<double(const execution_params&)> time;
  std::vector<execution_params> ran;

  std::size_t blocks_left() const { return total - ran.size(); }
  double run_block(const execution_params& params) {
    REQUIRE(ran.size() < total);  // the tuner never runs past the input
    ran.push_back(params);
    return time(params);
  }
};
static_assert(gpuagg::block_driver<mock_driver>);
static_assert(!gpuagg::block_driver<int>);
static_assert(!gpuagg::checking_block_driver<mock_driver>);
static_assert(!gpuagg::pipelining_block_driver<mock_driver>);

/// A driver like gpuagg's own: it knows what is feasible and pipelines the remaining blocks.
struct pipelined_driver : mock_driver {
  using mock_driver::mock_driver;
  std::function<bool(const execution_params&)> suits = always_feasible;
  std::size_t run_remaining_calls = 0;

  bool feasible(const execution_params& params) const { return suits(params); }
  void run_remaining(const std::optional<execution_params>& params) {
    ++run_remaining_calls;
    while (blocks_left() > 0) run_block(*params);
  }
  static bool always_feasible(const execution_params&) { return true; }
};
static_assert(gpuagg::checking_block_driver<pipelined_driver>);
static_assert(gpuagg::pipelining_block_driver<pipelined_driver>);
static_assert(!gpuagg::announcing_block_driver<pipelined_driver>);

/// A driver told the next blocks' parameters ahead: it checks that every announced block is
/// asked for, with the announced parameters, before anything else runs.
struct announcing_driver : pipelined_driver {
  using pipelined_driver::pipelined_driver;
  std::vector<std::pair<execution_params, std::size_t>> announcements;  // in order
  std::size_t announced_left = 0;

  void announce_blocks(const execution_params& params, std::size_t blocks) {
    CHECK(announced_left == 0);  // the blocks announced before were all asked for
    CHECK(blocks > 1);
    CHECK(blocks <= blocks_left());
    announcements.emplace_back(params, blocks);
    announced_left = blocks;
  }
  double run_block(const execution_params& params) {
    if (announced_left > 0) {
      CHECK(params == announcements.back().first);
      --announced_left;
    }
    return pipelined_driver::run_block(params);
  }
  void run_remaining(const std::optional<execution_params>& params) {
    CHECK(announced_left == 0);
    while (blocks_left() > 0) run_block(*params);
  }
};
static_assert(gpuagg::announcing_block_driver<announcing_driver>);

/// A fresh cache directory named by GPUAGG_CACHE_DIR for one test.
struct cache_dir {
  std::filesystem::path dir;
  cache_dir() {
    static std::atomic<unsigned> counter{0};
    std::random_device random;
    dir = std::filesystem::temp_directory_path() /
          ("gpuagg_tuner_test_" + std::to_string(random()) + "_" + std::to_string(counter++));
    std::filesystem::create_directories(dir);
    ::setenv("GPUAGG_CACHE_DIR", dir.c_str(), 1);
  }
  ~cache_dir() {
    ::unsetenv("GPUAGG_CACHE_DIR");
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  std::filesystem::path file() const { return dir / "tuning.json"; }
};

/// Collects what is written to std::cerr while alive.
struct stderr_capture {
  std::ostringstream text;
  std::streambuf* previous;
  stderr_capture() : previous(std::cerr.rdbuf(text.rdbuf())) {}
  ~stderr_capture() { std::cerr.rdbuf(previous); }
};

const tuning_key sample_key{"Test GPU", "1.0", "sum(v) group by g", "uint32", 20};

/// Writes a winners file holding one entry for sample_key: its key fields, then `fields` (the
/// rest of the entry's JSON members, as text).
void write_sample_entry(const std::filesystem::path& file, std::string_view fields) {
  std::ofstream(file) << R"({"format": "gpuagg-tuning", "version": 1, "entries": [{"device": "Test GPU", )"
                      << R"("driver_version": "1.0", "query": "sum(v) group by g", "key_type": "uint32", )"
                      << R"("groups_log2": 20, )" << fields << "}]}";
}

bool contains_text(const std::vector<std::string>& lines, std::string_view needle) {
  for (const auto& line : lines) {
    if (line.find(needle) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

// -------------------------------------------------------------------------------------------------

TEST_CASE("tuner_params is a literal type usable as a non-type template parameter") {
  // Table 1's values; the defaults add the refined search's extensions.
  constexpr tuner_params defaults{};
  static_assert(defaults.search.similarity == 0.06 && defaults.search.prune == 1.07);
  static_assert(defaults.measurement.max_variation == 0.019 && defaults.measurement.max_blocks == 10 && defaults.measurement.initial_blocks == 3);
  static_assert(defaults.valid());
  static_assert(gpuagg::refined_params == defaults && !defaults.is_paper_algorithm());
  static_assert(defaults.search.diagonal_neighbours && defaults.search.coarse_stride == 4 && defaults.measurement.early_rejection == 1.05);
  static_assert(defaults.measurement.paired_rejection == 1.01 && defaults.measurement.first_block_rejection == 2.0 &&
                defaults.measurement.quiet_window == 2 && defaults.measurement.quiet_noise == 0.005);

  // The paper's presets: Table 1's two rows, every extension off.
  constexpr tuner_params paper = gpuagg::paper_params;
  static_assert(paper.search.similarity == 0.06 && paper.search.prune == 1.07 && paper.measurement.max_variation == 0.019 &&
                paper.measurement.max_blocks == 10 && paper.measurement.initial_blocks == 3);
  static_assert(paper.valid() && paper.is_paper_algorithm());
  static_assert(gpuagg::plateau_params == paper);
  static_assert(gpuagg::strict_gradient_params.search.similarity == 0.0 && gpuagg::strict_gradient_params.valid());
  static_assert(gpuagg::strict_gradient_params.is_paper_algorithm());

  static_assert(tuner<>::params == defaults);
  static_assert(tuner<tuner_params{.search = {.similarity = 0.0}}>::params.search.similarity == 0.0);
  static_assert(tuner<tuner_params{.measurement = {.max_blocks = 5}, .search = {.prune = 1.5}}>::params.measurement.max_blocks == 5);
  static_assert(std::is_same_v<tuner<gpuagg::strict_gradient_params>,
                               tuner<tuner_params{.measurement = {.quiet_window = 0,
                                                                  .early_rejection = 0.0,
                                                                  .paired_rejection = 0.0,
                                                                  .first_block_rejection = 0.0},
                                                  .search = {.similarity = 0.0,
                                                             .noise_similarity = 0.0,
                                                             .diagonal_neighbours = false,
                                                             .coarse_stride = 2,
                                                             .scan_stride = 0,
                                                             .restart_unpruned = false},
                                                  .cache = {.neighbour_entry_distance = 0}}>>);
  static_assert(!std::is_same_v<tuner<>, tuner<gpuagg::strict_gradient_params>>);
  static_assert(!std::is_same_v<tuner<>, tuner<gpuagg::paper_params>>);

  // What the tuner's static_asserts reject.
  static_assert(!tuner_params{.search = {.prune = 1.0}}.valid());
  static_assert(!tuner_params{.search = {.similarity = -0.1}}.valid());
  static_assert(!tuner_params{.measurement = {.max_blocks = 2}}.valid());
  static_assert(!tuner_params{.measurement = {.initial_blocks = 0}}.valid());
  static_assert(!tuner_params{.search = {.coarse_stride = 3}}.valid());
  static_assert(!tuner_params{.search = {.coarse_stride = 1}}.valid());
  static_assert(!tuner_params{.measurement = {.early_rejection = 0.5}}.valid());
  static_assert(!tuner_params{.measurement = {.rejection_blocks = 0}}.valid());
  static_assert(!tuner_params{.measurement = {.paired_rejection = 0.99}}.valid());
  static_assert(!tuner_params{.search = {.scan_stride = 3}}.valid());
  static_assert(!tuner_params{.search = {.scan_stride = 1}}.valid());
  static_assert(tuner_params{.search = {.scan_stride = 0}}.valid() && !tuner_params{.search = {.scan_stride = 0}}.is_paper_algorithm());
  static_assert(!tuner_params{.measurement = {.first_block_rejection = 0.5}}.valid());
  static_assert(!tuner_params{.measurement = {.quiet_window = 4}}.valid());  // longer than the paper's window
  static_assert(!tuner_params{.measurement = {.quiet_noise = -0.001}}.valid());
  // Each new rule alone makes the search the refined one.
  static_assert(![] { tuner_params p = gpuagg::paper_params; p.measurement.paired_rejection = 1.01; return p.is_paper_algorithm(); }());
  static_assert(![] { tuner_params p = gpuagg::paper_params; p.measurement.first_block_rejection = 2.0; return p.is_paper_algorithm(); }());
  static_assert(![] { tuner_params p = gpuagg::paper_params; p.measurement.quiet_window = 2; return p.is_paper_algorithm(); }());
}

TEST_CASE("search space: bounds, clamping, neighbourhood order") {
  const search_space space{};
  CHECK(space.contains(shared(1, 1)));
  CHECK(space.contains(shared(1024, 1024)));
  CHECK_FALSE(space.contains(shared(2048, 1)));
  CHECK_FALSE(space.contains(shared(3, 4)));
  CHECK(space.configurations(strategy_kind::shared).size() == 121);  // section 3.1: 11 x 11

  // Documented order: groups x2, groups /2, size x2, size /2.
  CHECK(space.neighbours(shared(4, 64)) ==
        std::vector{shared(8, 64), shared(2, 64), shared(4, 128), shared(4, 32)});
  CHECK(space.neighbours(local(1, 1)) == std::vector{local(2, 1), local(1, 2)});
  CHECK(space.neighbours(shared(1024, 1024)) == std::vector{shared(512, 1024), shared(1024, 512)});

  // Clamping to a device with 256 work items per group (section 4.1: "we adjust the initial
  // configurations accordingly"); limits that are not powers of two round down.
  const search_space amd{.max_work_groups_per_cu = 1024, .max_work_group_size = 256};
  CHECK(gpuagg::default_initial_configs(amd) == std::vector{shared(1, 256), independent(1, 256), local(4, 256)});
  CHECK(gpuagg::default_initial_configs(space) == std::vector{shared(1, 512), independent(1, 256), local(4, 512)});
  const search_space odd{.max_work_groups_per_cu = 100, .max_work_group_size = 768};
  CHECK(odd.clamp(shared(1000, 1000)) == shared(64, 512));
  CHECK(odd.clamp(shared(3, 5)) == shared(2, 4));
  CHECK(odd.configurations(strategy_kind::shared).size() == 7 * 10);

  CHECK(tuning_key::log2_groups(0) == 0);
  CHECK(tuning_key::log2_groups(1) == 0);
  CHECK(tuning_key::log2_groups(2) == 1);
  CHECK(tuning_key::log2_groups(3) == 2);
  CHECK(tuning_key::log2_groups(1024) == 10);
  CHECK(tuning_key::log2_groups(1025) == 11);
}

TEST_CASE("ProcessBlocksWith: window, outliers, b_max, end of input") {
  using gpuagg::detail::process_blocks_with;
  const tuner_params params{};
  const auto feed = [](std::vector<double> times) {
    return [times = std::move(times), next = std::size_t{0}]() mutable -> std::optional<double> {
      if (next == times.size()) return std::nullopt;
      return times[next++];
    };
  };

  SUBCASE("steady blocks: three blocks, their mean") {
    const auto m = process_blocks_with(params, feed({2.0, 2.01, 2.0, 9.0}));
    CHECK(m.complete);
    CHECK(m.blocks == 3);
    CHECK(m.seconds == doctest::Approx((2.0 + 2.01 + 2.0) / 3));
  }
  SUBCASE("a 3x slower first block is discarded: four blocks") {
    const auto m = process_blocks_with(params, feed({6.0, 2.0, 2.0, 2.0, 9.0}));
    CHECK(m.complete);
    CHECK(m.blocks == 4);
    CHECK(m.seconds == doctest::Approx(2.0));
    CHECK(m.block_seconds == std::vector{6.0, 2.0, 2.0, 2.0});
  }
  SUBCASE("two leading outliers: five blocks") {
    const auto m = process_blocks_with(params, feed({6.0, 3.0, 2.0, 2.0, 2.0}));
    CHECK(m.blocks == 5);
    CHECK(m.seconds == doctest::Approx(2.0));
  }
  SUBCASE("never steady: stops at b_max with the last window's mean") {
    const auto m = process_blocks_with(params, feed({1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2}));
    CHECK(m.complete);
    CHECK(m.blocks == 10);
    CHECK(m.seconds == doctest::Approx((1.0 + 2.0 + 2.0) / 3));  // blocks 8, 9, 10 = 2, 1, 2
  }
  SUBCASE("the input runs out: incomplete, the blocks spent") {
    const auto m = process_blocks_with(params, feed({6.0, 2.0}));
    CHECK_FALSE(m.complete);
    CHECK(m.blocks == 2);
  }
  SUBCASE("threshold: at v_max passes, above fails") {
    CHECK(gpuagg::detail::normalized_range(std::vector{1.0, 1.0, 1.0}) == 0.0);
    CHECK(gpuagg::detail::normalized_range(std::vector{1.0, 2.0, 3.0}) == doctest::Approx(1.0));
    const auto m = process_blocks_with(params, feed({1.0, 1.018, 1.0}));  // range/mean ~ 0.0179
    CHECK(m.blocks == 3);
    // The window slides by dropping its oldest value, so an outlier in second place costs two.
    const auto n = process_blocks_with(params, feed({1.0, 1.03, 1.0, 1.0, 1.0}));
    CHECK(n.blocks == 5);
  }
  SUBCASE("similarity is the paper's interval") {
    using gpuagg::detail::similar;
    CHECK(similar(1.0, 1.06, 0.06));
    CHECK(similar(1.0, 0.94, 0.06));
    CHECK_FALSE(similar(1.0, 1.0601, 0.06));
    CHECK_FALSE(similar(1.0, 0.9399, 0.06));
    CHECK(similar(1.0, 1.0, 0.0));
    CHECK_FALSE(similar(1.0, 1.0000001, 0.0));
  }
}

TEST_CASE("convex space: the gradient leads to the optimum") {
  synthetic_space space{bowl(1.0, 4, 6)};  // optimum SHARED 16x64
  const std::vector initial{shared(1, 512)};
  const auto report = uncached<gpuagg::paper_params>().search(std::ref(space), 100000, always, initial);
  CHECK(report.converged);
  REQUIRE(report.winner);
  CHECK(*report.winner == shared(16, 64));
  CHECK(report.winner_seconds == doctest::Approx(1.0));
  CHECK(report.tried.size() < 40);  // far fewer than the 121 points
  CHECK(report.exploration_blocks == 3 * report.tried.size());

  synthetic_space strict_space{bowl(1.0, 4, 6)};
  const auto strict =
      uncached<gpuagg::strict_gradient_params>().search(std::ref(strict_space), 100000, always, initial);
  REQUIRE(strict.winner);
  CHECK(*strict.winner == shared(16, 64));
  CHECK(strict.tried.size() <= report.tried.size());  // plateaus cost extra measurements

  // The refined search (the defaults) finds it too.
  synthetic_space refined_space{bowl(1.0, 4, 6)};
  const auto refined = uncached().search(std::ref(refined_space), 100000, always, initial);
  REQUIRE(refined.winner);
  CHECK(*refined.winner == shared(16, 64));
  CHECK(refined.converged);
}

TEST_CASE("plateau: s = 0.06 crosses it where s = 0 stops early") {
  // 1x512 is a strict local minimum, but its neighbour 2x512 is within 6% and leads to 4x512.
  const auto times = table({{shared(1, 512), 1.00}, {shared(2, 512), 1.03}, {shared(4, 512), 0.50}}, 2.0);
  const std::vector initial{shared(1, 512)};

  synthetic_space strict_space{times};
  const auto strict = uncached<gpuagg::strict_gradient_params>().search(std::ref(strict_space), 1000, always, initial);
  REQUIRE(strict.winner);
  CHECK(*strict.winner == shared(1, 512));
  CHECK(strict_space.sequence() == std::vector{shared(1, 512), shared(2, 512), shared(1, 1024), shared(1, 256)});

  synthetic_space plateau_space{times};
  const auto plateau = uncached<gpuagg::paper_params>().search(std::ref(plateau_space), 1000, always, initial);
  REQUIRE(plateau.winner);
  CHECK(*plateau.winner == shared(4, 512));
  CHECK(plateau.converged);
  // 1x512's neighbours (2x512 forks), backtrack, then from 2x512 the gradient to 4x512 and its
  // neighbours; 2x512's other neighbours are never needed.
  CHECK(plateau_space.sequence() == std::vector{shared(1, 512), shared(2, 512), shared(1, 1024), shared(1, 256),
                                                shared(4, 512), shared(8, 512), shared(4, 1024), shared(4, 256)});
}

TEST_CASE("two minima: the descent stays in its basin; a second start finds the other") {
  // Basin A around 2x512 (t = 1.0), basin B around 256x4 (t = 0.7), far apart.
  const auto a = bowl(1.0, 1, 9, 0.1);
  const auto b = bowl(0.7, 8, 2, 0.1);
  const auto times = [a, b](const execution_params& p) { return std::min(a(p), b(p)); };

  synthetic_space one_start{times};
  const auto local_only = uncached().search(std::ref(one_start), 100000, always, std::vector{shared(1, 512)});
  REQUIRE(local_only.winner);
  CHECK(*local_only.winner == shared(2, 512));
  CHECK(local_only.find(shared(256, 4)) == nullptr);
  CHECK(local_only.winner_seconds == doctest::Approx(1.0));  // quality 1.0 / 0.7 against the optimum

  synthetic_space two_starts{times};
  const auto both = uncached().search(std::ref(two_starts), 100000, always, std::vector{shared(1, 512), shared(64, 8)});
  REQUIRE(both.winner);
  CHECK(*both.winner == shared(256, 4));
  CHECK(*both.winner == optimum_of(times, search_space{}, [](const execution_params& p) {
    return p.strategy == strategy_kind::shared;
  }));
}

TEST_CASE("noisy leading outliers: ProcessBlocksWith discards each first block") {
  synthetic_space space{bowl(1.0, 2, 8)};
  space.block_time = [&space](const execution_params& p, unsigned block) {
    return block == 0 ? 3.0 * space.time(p) : space.time(p);  // the first block of each is 3x slower
  };
  SUBCASE("Algorithm 1: every measurement discards its outlier and takes 4 blocks") {
    const auto report =
        uncached<gpuagg::paper_params>().search(std::ref(space), 100000, always, std::vector{shared(1, 512)});
    REQUIRE(report.winner);
    CHECK(*report.winner == shared(4, 256));
    CHECK(report.winner_seconds == doctest::Approx(1.0));
    for (const auto& tried : report.tried) {
      CHECK(tried.blocks == 4);
      CHECK(tried.block_seconds.front() == doctest::Approx(3.0 * space.time(tried.params)));
      CHECK(tried.seconds == doctest::Approx(space.time(tried.params)));
    }
    CHECK(report.exploration_blocks == 4 * report.tried.size());
  }
  SUBCASE("the refined search: the outlier never enters a time; clearly slower neighbours stop early") {
    const auto report = uncached().search(std::ref(space), 100000, always, std::vector{shared(1, 512)});
    REQUIRE(report.winner);
    CHECK(*report.winner == shared(4, 256));
    CHECK(report.winner_seconds == doctest::Approx(1.0));
    std::size_t rejected = 0;
    for (const auto& tried : report.tried) {
      CHECK(tried.block_seconds.front() == doctest::Approx(3.0 * space.time(tried.params)));
      if (tried.rejected) {
        ++rejected;
        CHECK(tried.blocks <= 2);
        CHECK(space.time(tried.params) > 1.01 * report.winner_seconds);
      } else {
        // 4 blocks with the paper's window; 3 where a quiet window of 2 follows the outlier.
        CHECK(tried.blocks >= 3);
        CHECK(tried.seconds == doctest::Approx(space.time(tried.params)));
      }
    }
    CHECK(rejected > 0);
  }
}

TEST_CASE("pruning and backtracking: the exact sequence of Algorithm 1") {
  // A 3 x 3 space: groups per CU and work group size in {1, 2, 4}.
  const search_space small{.max_work_groups_per_cu = 4, .max_work_group_size = 4};
  const auto times = table({{shared(1, 1), 1.00},
                            {shared(2, 1), 1.05},  // ~ 1x1: plateau, pushed, later pruned
                            {shared(1, 2), 0.70},  // faster: replaces 1x1 at the head of Q
                            {shared(2, 2), 0.90},
                            {shared(1, 4), 0.72},  // ~ 1x2: plateau, pushed
                            {shared(4, 1), 1.30},
                            {shared(2, 4), 0.95},
                            {shared(4, 2), 0.60},  // never reached: only 2x1 leads there
                            {shared(4, 4), 1.00}});
  const std::vector initial{shared(1, 1)};

  SUBCASE("s = 0.06, p = 1.07: 2x1 is pruned (1.05 > 1.07 * 0.70), so 4x1 is never measured") {
    synthetic_space space{times};
    auto logged = uncached<gpuagg::paper_params>(small);
    std::ostringstream log;
    logged.log_to(&log);
    const auto report = logged.search(std::ref(space), 1000, always, initial);
    // Q: [1x1] -> measure 2x1 (plateau: push) [1x1, 2x1] -> measure 1x2 (faster: replace first)
    // [1x2, 2x1] -> 2x2 (slower) -> 1x4 (plateau: push) [1x2, 2x1, 1x4] -> backtrack [2x1, 1x4]
    // -> prune 2x1 [1x4] -> 2x4 (slower) -> backtrack [] -> done.
    CHECK(space.sequence() ==
          std::vector{shared(1, 1), shared(2, 1), shared(1, 2), shared(2, 2), shared(1, 4), shared(2, 4)});
    REQUIRE(report.winner);
    CHECK(*report.winner == shared(1, 2));
    CHECK(report.converged);
    CHECK(report.tried.front().role == measurement_role::initial);
    const std::string text = log.str();
    CHECK(text.find("line 14: plateau SHARED 1x1 ~ SHARED 2x1") != std::string::npos);
    CHECK(text.find("line 16: follow gradient SHARED 1x1 -> SHARED 1x2") != std::string::npos);
    CHECK(text.find("line 14: plateau SHARED 1x2 ~ SHARED 1x4") != std::string::npos);
    CHECK(text.find("line 22: backtrack from SHARED 1x2") != std::string::npos);
    CHECK(text.find("line 7: prune SHARED 2x1") != std::string::npos);
    CHECK(text.find("line 22: backtrack from SHARED 1x4") != std::string::npos);
  }
  SUBCASE("p = 100: nothing is pruned, the fork at 2x1 explores 4x1") {
    synthetic_space space{times};
    const auto report = uncached<paper_with_prune(100.0)>(small).search(std::ref(space), 1000, always, initial);
    CHECK(space.sequence() == std::vector{shared(1, 1), shared(2, 1), shared(1, 2), shared(2, 2), shared(1, 4),
                                          shared(4, 1), shared(2, 4)});
    CHECK(*report.winner == shared(1, 2));
  }
  SUBCASE("s = 0: a strict descent, no forks") {
    synthetic_space space{times};
    const auto report = uncached<gpuagg::strict_gradient_params>(small).search(std::ref(space), 1000, always, initial);
    CHECK(space.sequence() == std::vector{shared(1, 1), shared(2, 1), shared(1, 2), shared(2, 2), shared(1, 4)});
    CHECK(*report.winner == shared(1, 2));
  }
}

// -------------------------------------------------------------------------------------------------
// The refined search (tuner_params' extensions beyond the paper)

/// The refined search with only the named extensions: every other one at its paper value.
constexpr tuner_params only_extensions(bool diagonal, unsigned stride, double noise, double rejection) {
  tuner_params params = gpuagg::paper_params;
  params.search.diagonal_neighbours = diagonal;
  params.search.coarse_stride = stride;
  params.search.noise_similarity = noise;
  params.measurement.early_rejection = rejection;
  return params;
}

/// Algorithm 1 with only the measurement rules of issue 5 (paired rejection, first-block
/// rejection, the quiet window) at the given values.
constexpr tuner_params paper_with(double paired, double first_block, unsigned quiet_window) {
  tuner_params params = gpuagg::paper_params;
  params.measurement.paired_rejection = paired;
  params.measurement.first_block_rejection = first_block;
  params.measurement.quiet_window = quiet_window;
  return params;
}

/// The refined search without those three rules: the default before them.
constexpr tuner_params without_new_rules = [] {
  tuner_params params{};
  params.measurement.paired_rejection = 0.0;
  params.measurement.first_block_rejection = 0.0;
  params.measurement.quiet_window = 0;
  return params;
}();

TEST_CASE("search space: the refined neighbourhood, its strides and its order") {
  const search_space space{};
  // Paper order first, then the two moves that keep the threads per compute unit.
  CHECK(space.neighbours(shared(4, 64), 2, true) ==
        std::vector{shared(8, 64), shared(2, 64), shared(4, 128), shared(4, 32), shared(8, 32), shared(2, 128)});
  CHECK(space.neighbours(shared(4, 64), 4, true) ==
        std::vector{shared(16, 64), shared(1, 64), shared(4, 256), shared(4, 16), shared(16, 16), shared(1, 256)});
  CHECK(space.neighbours(shared(4, 64), 2, false) == space.neighbours(shared(4, 64)));
  // A division that does not come out even, or a step past the bounds, leaves the grid.
  CHECK(space.neighbours(local(1, 1), 4, true) == std::vector{local(4, 1), local(1, 4)});
  CHECK(space.neighbours(shared(2, 8), 4, true) == std::vector{shared(8, 8), shared(2, 32), shared(2, 2), shared(8, 2)});
  CHECK(space.neighbours(shared(1024, 1024), 2, true) == std::vector{shared(512, 1024), shared(1024, 512)});
  for (const auto& n : space.neighbours(independent(64, 16), 8, true)) {
    CHECK(n.strategy == strategy_kind::independent);
    CHECK(space.contains(n));
  }
}

TEST_CASE("ProcessBlocksWith with early rejection: clearly slower configurations stop early") {
  using gpuagg::detail::process_blocks_with;
  const auto feed = [](std::vector<double> times) {
    return [times = std::move(times), next = std::size_t{0}]() mutable -> std::optional<double> {
      if (next == times.size()) return std::nullopt;
      return times[next++];
    };
  };
  constexpr tuner_params params{};  // rejection_blocks = 2
  SUBCASE("both blocks above the bound: rejected after rejection_blocks blocks") {
    const auto m = process_blocks_with(params, feed({2.0, 2.1, 2.0, 2.0}), 1.5);
    CHECK(m.rejected);
    CHECK(m.complete);
    CHECK(m.blocks == 2);
  }
  SUBCASE("a single slow block never rejects: the second is below the bound") {
    const auto m = process_blocks_with(params, feed({3.0, 1.0, 1.0, 1.0, 9.0}), 1.5);
    CHECK_FALSE(m.rejected);
    CHECK(m.blocks == 4);  // the paper's rule: the outlier is discarded
    CHECK(m.seconds == doctest::Approx(1.0));
  }
  SUBCASE("rejection_blocks = 1 rejects on the first block") {
    constexpr tuner_params eager{.measurement = {.rejection_blocks = 1}};
    const auto m = process_blocks_with(eager, feed({3.0, 1.0, 1.0, 1.0}), 1.5);
    CHECK(m.rejected);
    CHECK(m.blocks == 1);
  }
  SUBCASE("without a bound it is the paper's rule, whatever the parameters") {
    const auto m = process_blocks_with(params, feed({2.0, 2.1, 2.0, 2.0}));
    CHECK_FALSE(m.rejected);
    CHECK(m.blocks == 4);
  }
  SUBCASE("the window's noise") {
    const auto m = process_blocks_with(params, feed({9.0, 1.0, 1.01, 0.99}));
    CHECK(m.window_range(3) == doctest::Approx(0.02));
  }
}

TEST_CASE("diagonal neighbours: a valley of constant threads per compute unit") {
  // Time grows with the distance of the thread count from 2^9 per CU (a valley along the
  // diagonal, like INDEPENDENT's) and, gently, with the distance of groups per CU from 64. From
  // 1x512 every axis move leaves the valley (slower by far more than s), so Algorithm 1 stops
  // there; a diagonal move stays in it and slides to 64x8.
  const auto valley = [](const execution_params& p) {
    const double x = std::log2(p.config.work_groups_per_cu);
    const double y = std::log2(p.config.work_group_size);
    return (1.0 + 0.3 * std::abs(x + y - 9.0)) * (1.0 + 0.02 * (x - 6.0) * (x - 6.0));
  };
  const std::vector initial{shared(1, 512)};
  synthetic_space paper_space{valley};
  const auto paper = uncached<gpuagg::paper_params>().search(std::ref(paper_space), 100000, always, initial);
  CHECK(*paper.winner == shared(1, 512));

  synthetic_space axis_space{valley};
  const auto axis_only =
      uncached<only_extensions(false, 4, 0.0, 0.0)>().search(std::ref(axis_space), 100000, always, initial);
  CHECK(*axis_only.winner == shared(1, 512));  // a wider stride alone does not help here

  synthetic_space diagonal_space{valley};
  const auto diagonal =
      uncached<only_extensions(true, 2, 0.0, 0.0)>().search(std::ref(diagonal_space), 100000, always, initial);
  CHECK(*diagonal.winner == shared(64, 8));
  CHECK(*diagonal.winner == optimum_of(valley, search_space{}, [](const execution_params& p) {
    return p.strategy == strategy_kind::shared;
  }));

  synthetic_space refined_space{valley};
  const auto refined = uncached().search(std::ref(refined_space), 100000, always, initial);
  CHECK(*refined.winner == shared(64, 8));
  CHECK(refined.converged);
}

TEST_CASE("coarse stride: the first pass steps over a bump the paper's neighbourhood cannot cross") {
  // A bowl around 64x512 with a wall at 2 groups per CU: from 1x512 every stride-2 neighbour on
  // the way is on the wall (axis and diagonal alike), so a stride-2 search stays at 1 group per
  // CU; a stride-4 step lands behind the wall, and the stride-2 pass then finishes the descent.
  const auto walled = [](const execution_params& p) {
    const double x = std::log2(p.config.work_groups_per_cu);
    const double y = std::log2(p.config.work_group_size);
    return (1.0 + 0.05 * ((x - 6.0) * (x - 6.0) + (y - 9.0) * (y - 9.0))) + (p.config.work_groups_per_cu == 2 ? 2.0 : 0.0);
  };
  const std::vector initial{shared(1, 512)};
  synthetic_space paper_space{walled};
  const auto paper = uncached<gpuagg::paper_params>().search(std::ref(paper_space), 100000, always, initial);
  CHECK(paper.winner->config.work_groups_per_cu == 1);

  synthetic_space diagonal_space{walled};
  const auto diagonal =
      uncached<only_extensions(true, 2, 0.0, 0.0)>().search(std::ref(diagonal_space), 100000, always, initial);
  CHECK(diagonal.winner->config.work_groups_per_cu == 1);

  synthetic_space coarse_space{walled};
  auto coarse_tuner = uncached<only_extensions(false, 4, 0.0, 0.0)>();
  std::ostringstream log;
  coarse_tuner.log_to(&log);
  const auto coarse = coarse_tuner.search(std::ref(coarse_space), 100000, always, initial);
  CHECK(*coarse.winner == shared(64, 512));
  CHECK(coarse.find(shared(4, 512)) != nullptr);  // the stride-4 step over the wall
  CHECK(log.str().find("pass at stride 2 from c_f") != std::string::npos);

  synthetic_space refined_space{walled};
  const auto refined = uncached().search(std::ref(refined_space), 100000, always, initial);
  CHECK(*refined.winner == shared(64, 512));
}

TEST_CASE("scan: the start's row sees past a ridge that stops the local search") {
  // Two basins along the work groups per CU, a ridge between them (SHARED's space at 2^22 groups
  // on the H100 has this shape): a local basin next to the start (1.3 at 4x512) and the global
  // one behind the ridge at 8 to 32 work groups per CU (1.0 at 128x512). Without the scan, the
  // coarse pass's 4x steps from 4x512 land on the ridge and the search stops in the first basin.
  const auto ridge = [](const execution_params& p) {
    const double x = std::log2(p.config.work_groups_per_cu);
    const double y = std::log2(p.config.work_group_size);
    const double near = 1.3 + 0.05 * ((x - 2.0) * (x - 2.0) + (y - 9.0) * (y - 9.0));
    const double far = 1.0 + 0.05 * ((x - 7.0) * (x - 7.0) + (y - 9.0) * (y - 9.0));
    return std::min(near, far) + (x >= 3.0 && x <= 5.0 ? 0.6 : 0.0);
  };
  const std::vector initial{shared(1, 512)};
  REQUIRE(optimum_of(ridge, search_space{}, [](const execution_params& p) {
            return p.strategy == strategy_kind::shared;
          }) == shared(128, 512));

  synthetic_space without_space{ridge};
  const auto without =
      uncached<tuner_params{.search = {.scan_stride = 0}}>().search(std::ref(without_space), 100000, always, initial);
  CHECK(without.winner->config.work_groups_per_cu <= 4);  // stuck in the first basin

  synthetic_space space{ridge};
  auto scanning = uncached();
  std::ostringstream log;
  scanning.log_to(&log);
  const auto report = scanning.search(std::ref(space), 100000, always, initial);
  CHECK(*report.winner == shared(128, 512));
  CHECK(log.str().find("scan the row of SHARED 1x512") != std::string::npos);
  // The row at every power of 4: 4, 16, 64, 256, 1024 work groups per CU, the start's size.
  std::vector<execution_params> scanned;
  for (const auto& tried : report.tried) {
    if (tried.role == measurement_role::scan) scanned.push_back(tried.params);
  }
  CHECK(scanned == std::vector{shared(4, 512), shared(16, 512), shared(64, 512), shared(256, 512), shared(1024, 512)});
  // The paper's search has no scan.
  synthetic_space paper_space{ridge};
  const auto paper = uncached<gpuagg::paper_params>().search(std::ref(paper_space), 100000, always, initial);
  for (const auto& tried : paper.tried) CHECK(tried.role != measurement_role::scan);
}

TEST_CASE("scan: a direction ends at a hopeless point") {
  // SHARED at one group on the H100: more threads only add contention, 2x to 60x slower along the
  // row. The scan stops after 4x512's single block instead of running 16x to 1024x512.
  const auto contended = [](const execution_params& p) {
    const double threads = double(p.config.work_groups_per_cu) * p.config.work_group_size;
    return p.config.work_groups_per_cu == 1 ? bowl(1.0, 0, 8)(p) : threads / 512.0 + 1.0;
  };
  synthetic_space space{contended};
  const auto report = uncached().search(std::ref(space), 100000, always, std::vector{shared(1, 512)});
  std::vector<execution_params> scanned;
  for (const auto& tried : report.tried) {
    if (tried.role == measurement_role::scan) scanned.push_back(tried.params);
  }
  REQUIRE(scanned == std::vector{shared(4, 512)});
  CHECK(report.find(shared(4, 512))->blocks == 1);
  CHECK(*report.winner == shared(1, 256));
}

TEST_CASE("restart from every unpruned configuration: the finer pass searches next to a runner-up") {
  // The coarse pass ends at 4x128 (1.0). The optimum 8x256 (0.96) is a stride-2 neighbour of
  // the runner-up 4x512 (1.05, within p = 1.07), not of 4x128. Everything else is 10.
  const auto spot =
      table({{shared(1, 512), 1.5}, {shared(4, 512), 1.05}, {shared(4, 128), 1.0}, {shared(8, 256), 0.96}});
  const std::vector initial{shared(1, 512)};

  synthetic_space c_f_only_space{spot};
  const auto c_f_only =
      uncached<tuner_params{.search = {.restart_unpruned = false}}>().search(std::ref(c_f_only_space), 100000, always, initial);
  CHECK(*c_f_only.winner == shared(4, 128));
  CHECK(c_f_only.find(shared(8, 256)) == nullptr);

  synthetic_space space{spot};
  const auto report = uncached().search(std::ref(space), 100000, always, initial);
  CHECK(*report.winner == shared(8, 256));
  CHECK(report.converged);
}

TEST_CASE("early rejection: clearly slower neighbours cost rejection_blocks blocks, the winner is the same") {
  synthetic_space paper_space{bowl(1.0, 4, 6, 0.3)};  // steep: most neighbours are far slower
  const std::vector initial{shared(1, 512)};
  const auto paper = uncached<gpuagg::paper_params>().search(std::ref(paper_space), 100000, always, initial);
  synthetic_space rejecting_space{bowl(1.0, 4, 6, 0.3)};
  const auto rejecting =
      uncached<only_extensions(false, 2, 0.0, 1.05)>().search(std::ref(rejecting_space), 100000, always, initial);
  CHECK(*rejecting.winner == *paper.winner);
  CHECK(*rejecting.winner == shared(16, 64));
  // The same configurations, in the same order: only the slower ones' measurements are shorter.
  CHECK(rejecting_space.sequence() == paper_space.sequence());
  std::size_t rejected = 0;
  for (const auto& tried : rejecting.tried) {
    if (!tried.rejected) {
      CHECK(tried.blocks == 3);
      continue;
    }
    ++rejected;
    CHECK(tried.blocks == 2);
    CHECK(tried.role == measurement_role::neighbour);
    CHECK(tried.seconds > 1.05 * rejecting.winner_seconds);
  }
  CHECK(rejected > 0);
  CHECK(rejecting.exploration_blocks == paper.exploration_blocks - rejected);
  for (const auto& tried : paper.tried) CHECK_FALSE(tried.rejected);
  std::ostringstream text;
  text << rejecting;
  CHECK(text.str().find("(rejected early)") != std::string::npos);

  SUBCASE("the reference's own start-up outlier raises the bar") {
    // Every configuration's first block is 3x slower (section 3.6): comparing with the
    // reference's slowest block keeps that from rejecting a neighbour that is only a little slower.
    synthetic_space outliers{bowl(1.0, 2, 8)};
    outliers.block_time = [&outliers](const execution_params& p, unsigned block) {
      return block == 0 ? 3.0 * outliers.time(p) : outliers.time(p);
    };
    const auto report = uncached<without_new_rules>().search(std::ref(outliers), 100000, always, initial);
    CHECK(*report.winner == shared(4, 256));
    // A neighbour is rejected only when its fastest block exceeds 1.05 x its reference's 3x
    // first block: only configurations over 3.15x slower than the optimum.
    for (const auto& tried : report.tried) {
      if (tried.rejected) CHECK(outliers.time(tried.params) > 3.0 * 1.05 * outliers.time(shared(4, 256)));
    }
  }
}

TEST_CASE("ProcessBlocksWith: paired and first-block rejection, a shorter window") {
  using gpuagg::detail::process_blocks_with;
  using gpuagg::detail::rejection_rule;
  const auto feed = [](std::vector<double> times) {
    return [times = std::move(times), next = std::size_t{0}]() mutable -> std::optional<double> {
      if (next == times.size()) return std::nullopt;
      return times[next++];
    };
  };
  constexpr tuner_params params{};  // rejection_blocks = 2
  const std::vector<double> reference{3.0, 1.0, 1.0, 1.0};  // a start-up outlier, then 1.0 per block
  const auto paired = [&reference](double factor) {
    rejection_rule rule;
    rule.paired = factor;
    rule.paired_blocks = 2;
    rule.reference_blocks = reference;
    return rule;
  };
  SUBCASE("each block slower than the reference's block at its position: rejected after 2") {
    const auto m = process_blocks_with(params, feed({3.2, 1.05, 1.05, 1.05}), paired(1.01));
    CHECK(m.rejected);
    CHECK(m.complete);
    CHECK(m.blocks == 2);
  }
  SUBCASE("the same start-up outlier at the same speed: measured in full") {
    const auto m = process_blocks_with(params, feed({3.0, 1.0, 1.0, 1.0}), paired(1.01));
    CHECK_FALSE(m.rejected);
    CHECK(m.blocks == 4);
    CHECK(m.seconds == doctest::Approx(1.0));
  }
  SUBCASE("a larger start-up outlier alone does not make a configuration slower") {
    const auto m = process_blocks_with(params, feed({6.0, 1.0, 1.0, 1.0}), paired(1.01));
    CHECK_FALSE(m.rejected);
    CHECK(m.blocks == 4);
  }
  SUBCASE("10% slower behind the same outlier: the slowest-block rule cannot see it, the paired rule can") {
    gpuagg::detail::rejection_rule slowest;
    slowest.above = 1.05 * 3.0;  // early_rejection x the reference's slowest block
    const auto old_rule = process_blocks_with(params, feed({3.3, 1.1, 1.1, 1.1}), slowest);
    CHECK_FALSE(old_rule.rejected);
    CHECK(old_rule.blocks == 4);
    const auto new_rule = process_blocks_with(params, feed({3.3, 1.1, 1.1, 1.1}), paired(1.01));
    CHECK(new_rule.rejected);
    CHECK(new_rule.blocks == 2);
  }
  SUBCASE("compared only as far as the reference ran") {
    const std::vector<double> short_reference{1.0};
    rejection_rule rule = paired(1.01);
    rule.reference_blocks = short_reference;
    const auto m = process_blocks_with(params, feed({2.0, 2.0, 2.0}), rule);
    CHECK_FALSE(m.rejected);
    CHECK(m.blocks == 3);
  }
  SUBCASE("first block: one block suffices above the bound, and only above it") {
    rejection_rule rule;
    rule.first_block_above = 4.0;
    const auto far = process_blocks_with(params, feed({5.0, 1.0, 1.0, 1.0}), rule);
    CHECK(far.rejected);
    CHECK(far.blocks == 1);
    const auto near = process_blocks_with(params, feed({3.9, 1.0, 1.0, 1.0}), rule);
    CHECK_FALSE(near.rejected);
    CHECK(near.blocks == 4);
    CHECK(near.seconds == doctest::Approx(1.0));
  }
  SUBCASE("a window of 2: two quiet blocks suffice, an outlier still costs one more") {
    const auto quiet = process_blocks_with(params, feed({1.0, 1.001, 1.0}), rejection_rule{}, 2);
    CHECK(quiet.blocks == 2);
    CHECK(quiet.window_blocks == 2);
    CHECK(quiet.seconds == doctest::Approx(1.0005));
    const auto outlier = process_blocks_with(params, feed({3.0, 1.0, 1.0, 1.0}), rejection_rule{}, 2);
    CHECK(outlier.blocks == 3);
    CHECK(outlier.seconds == doctest::Approx(1.0));
    const auto paper_window = process_blocks_with(params, feed({1.0, 1.001, 1.0}), rejection_rule{});
    CHECK(paper_window.blocks == 3);
    CHECK(paper_window.window_blocks == 3);
  }
}

TEST_CASE("paired rejection: start-up outliers meet start-up outliers, the winner is the same") {
  // A steep bowl (no neighbour within s of another) whose every configuration starts with a 3x
  // block: the slowest-block rule rejects only what is over 3.15x slower; the paired rule
  // rejects every clearly slower neighbour after 2 blocks and changes nothing else.
  const auto with_outliers = [](synthetic_space& space) {
    space.block_time = [&space](const execution_params& p, unsigned block) {
      return block == 0 ? 3.0 * space.time(p) : space.time(p);
    };
  };
  const std::vector initial{shared(1, 512)};
  synthetic_space paper_space{bowl(1.0, 4, 6, 0.3)};
  with_outliers(paper_space);
  const auto paper = uncached<gpuagg::paper_params>().search(std::ref(paper_space), 100000, always, initial);
  synthetic_space old_space{bowl(1.0, 4, 6, 0.3)};
  with_outliers(old_space);
  const auto old_rule =
      uncached<only_extensions(false, 2, 0.0, 1.05)>().search(std::ref(old_space), 100000, always, initial);
  synthetic_space paired_space{bowl(1.0, 4, 6, 0.3)};
  with_outliers(paired_space);
  const auto paired = uncached<paper_with(1.01, 0.0, 0)>().search(std::ref(paired_space), 100000, always, initial);

  CHECK(*paired.winner == *paper.winner);
  CHECK(*paired.winner == shared(16, 64));
  CHECK(paired_space.sequence() == paper_space.sequence());
  std::size_t rejected = 0;
  for (const auto& tried : paired.tried) {
    if (!tried.rejected) {
      CHECK(tried.blocks == 4);
      continue;
    }
    ++rejected;
    CHECK(tried.blocks == 2);
    CHECK(tried.role == measurement_role::neighbour);
    CHECK(paired_space.time(tried.params) > 1.01 * paired.winner_seconds);
  }
  std::size_t rejected_by_old_rule = 0;
  for (const auto& tried : old_rule.tried) rejected_by_old_rule += tried.rejected;
  CHECK(rejected > rejected_by_old_rule);
  CHECK(paired.exploration_blocks == paper.exploration_blocks - 2 * rejected);
}

TEST_CASE("first-block rejection allows for the largest start-up outlier measured") {
  const std::vector initial{shared(1, 512)};
  SUBCASE("every first block 1.8x: one block rejects only what is over 2x its reference") {
    // Steep enough that some neighbours are over 2x slower than their reference.
    synthetic_space paper_space{bowl(1.0, 4, 6, 1.5)};
    paper_space.block_time = [&paper_space](const execution_params& p, unsigned block) {
      return block == 0 ? 1.8 * paper_space.time(p) : paper_space.time(p);
    };
    const auto paper = uncached<gpuagg::paper_params>().search(std::ref(paper_space), 100000, always, initial);
    synthetic_space space{bowl(1.0, 4, 6, 1.5)};
    space.block_time = [&space](const execution_params& p, unsigned block) {
      return block == 0 ? 1.8 * space.time(p) : space.time(p);
    };
    const auto report = uncached<paper_with(0.0, 2.0, 0)>().search(std::ref(space), 100000, always, initial);
    CHECK(*report.winner == *paper.winner);
    CHECK(space.sequence() == paper_space.sequence());
    std::size_t rejected = 0;
    for (const auto& tried : report.tried) {
      if (!tried.rejected) continue;
      ++rejected;
      CHECK(tried.blocks == 1);
      CHECK(space.time(tried.params) > 2.0 * report.winner_seconds);
    }
    CHECK(rejected > 0);
  }
  SUBCASE("an outlier up to 2x the largest seen is measured, not rejected") {
    // 1x512 starts with a 1.5x block; 2x512 is faster but starts with a block of 2.9 x t(1x512):
    // below 2 x 1.5 x t(1x512), so it is measured in full and wins. Every other point is 5x
    // slower and rejected on its first block.
    synthetic_space space{table({{shared(1, 512), 1.0}, {shared(2, 512), 0.9}}, 5.0)};
    space.block_time = [&space](const execution_params& p, unsigned block) {
      if (block > 0) return space.time(p);
      return p == shared(1, 512) ? 1.5 : p == shared(2, 512) ? 2.9 : 1.8 * space.time(p);
    };
    const auto report = uncached<paper_with(0.0, 2.0, 0)>().search(std::ref(space), 100000, always, initial);
    CHECK(*report.winner == shared(2, 512));
    REQUIRE(report.find(shared(2, 512)) != nullptr);
    CHECK_FALSE(report.find(shared(2, 512))->rejected);
    CHECK(report.find(shared(2, 512))->blocks == 4);
    for (const auto& tried : report.tried) {
      if (tried.params != shared(1, 512) && tried.params != shared(2, 512)) {
        CHECK(tried.rejected);
        CHECK(tried.blocks == 1);
      }
    }
  }
}

TEST_CASE("quiet window: neighbours of a quiet reference measure on 2 blocks") {
  const std::vector initial{shared(1, 512)};
  synthetic_space paper_space{bowl(1.0, 4, 6, 0.3)};
  const auto paper = uncached<gpuagg::paper_params>().search(std::ref(paper_space), 100000, always, initial);
  SUBCASE("noise-free: every neighbour 2 blocks, the same configurations and winner") {
    synthetic_space space{bowl(1.0, 4, 6, 0.3)};
    const auto report = uncached<paper_with(0.0, 0.0, 2)>().search(std::ref(space), 100000, always, initial);
    CHECK(*report.winner == *paper.winner);
    CHECK(space.sequence() == paper_space.sequence());
    for (const auto& tried : report.tried) CHECK(tried.blocks == (tried.role == measurement_role::initial ? 3u : 2u));
  }
  SUBCASE("blocks +-0.5%: no reference is quiet (range 1%), the paper's window throughout") {
    synthetic_space space{bowl(1.0, 4, 6, 0.3)};
    space.block_time = [&space](const execution_params& p, unsigned block) {
      return space.time(p) * (block % 2 == 0 ? 0.995 : 1.005);
    };
    const auto report = uncached<paper_with(0.0, 0.0, 2)>().search(std::ref(space), 100000, always, initial);
    CHECK(*report.winner == *paper.winner);
    for (const auto& tried : report.tried) CHECK(tried.blocks == 3);
  }
}

TEST_CASE("noise-scaled plateau test: forks follow the measured noise, capped by s") {
  // 1x512 is a strict local minimum; 2x512 is 3% slower and leads to 4x512. Stride 2, no
  // diagonal, no rejection: only the plateau test differs.
  const auto times = table({{shared(1, 512), 1.00}, {shared(2, 512), 1.03}, {shared(4, 512), 0.50}}, 2.0);
  const std::vector initial{shared(1, 512)};
  constexpr tuner_params noise_scaled = only_extensions(false, 2, 1.0 / 1.693, 0.0);
  const auto with_noise = [&times](double amplitude) {
    synthetic_space space{times};
    space.block_time = [&space, amplitude](const execution_params& p, unsigned block) {
      return space.time(p) * (1.0 + (block % 2 == 0 ? -amplitude : amplitude));
    };
    return space;
  };
  SUBCASE("noise-free blocks: s' = 0, a strict descent that stops at 1x512") {
    synthetic_space space{times};
    const auto report = uncached<noise_scaled>().search(std::ref(space), 1000, always, initial);
    CHECK(*report.winner == shared(1, 512));
    CHECK(report.find(shared(4, 512)) == nullptr);
  }
  SUBCASE("+-1% blocks: s' ~ 1.2% < 3%, no fork") {
    synthetic_space space = with_noise(0.01);
    const auto report = uncached<noise_scaled>().search(std::ref(space), 1000, always, initial);
    CHECK(*report.winner == shared(1, 512));
  }
  SUBCASE("+-3% blocks: s' ~ 3.5% covers the 3% step, the fork crosses to 4x512") {
    synthetic_space space = with_noise(0.03);
    const auto report = uncached<noise_scaled>().search(std::ref(space), 1000, always, initial);
    CHECK(*report.winner == shared(4, 512));
  }
  SUBCASE("s caps it: with s = 0.02 even +-10% blocks do not fork a 3% step") {
    constexpr tuner_params capped = [] {
      tuner_params params = only_extensions(false, 2, 1.0 / 1.693, 0.0);
      params.search.similarity = 0.02;
      return params;
    }();
    synthetic_space space = with_noise(0.10);
    const auto report = uncached<capped>().search(std::ref(space), 1000, always, initial);
    CHECK(*report.winner == shared(1, 512));
  }
}

TEST_CASE("infeasible configurations are never measured") {
  // SHARED only up to 128 work items, WORKGROUPLOCAL only up to 8 groups per CU, no INDEPENDENT.
  const auto feasible = [](const execution_params& p) {
    if (p.strategy == strategy_kind::independent) return false;
    if (p.strategy == strategy_kind::shared) return p.config.work_group_size <= 128;
    return p.config.work_groups_per_cu <= 8;
  };
  synthetic_space space{[](const execution_params& p) {
    // Both bowls have their optimum in the infeasible region.
    return p.strategy == strategy_kind::shared ? bowl(1.0, 0, 10)(p) : bowl(1.2, 6, 4)(p);
  }};
  const auto report = uncached().search(std::ref(space), 100000, feasible);
  for (const auto& p : space.blocks) CHECK(feasible(p));
  REQUIRE(report.winner);
  CHECK(feasible(*report.winner));
  CHECK(*report.winner == optimum_of(space.time, search_space{}, feasible));
  // 1x512 SHARED is infeasible: the nearest feasible point of its strategy starts instead.
  CHECK(report.tried.front().params == shared(1, 128));

  SUBCASE("nothing feasible: no winner, a warning; the driver wrapper throws") {
    const auto none = [](const execution_params&) { return false; };
    synthetic_space unused{bowl(1.0, 0, 0)};
    const auto empty = uncached().search(std::ref(unused), 100, none);
    CHECK_FALSE(empty.winner);
    CHECK(unused.blocks.empty());
    CHECK(contains_text(empty.warnings, "no feasible"));
    mock_driver driver{10, bowl(1.0, 0, 0)};
    CHECK_THROWS_AS(uncached().run(driver, none), gpuagg::unsupported_error);
    CHECK(driver.ran.empty());
  }
}

TEST_CASE("the input runs out mid-search: the best so far, not an error") {
  synthetic_space space{bowl(1.0, 5, 5)};
  // 3 initial configurations x 3 blocks = 9; the 10th block starts a neighbour and the input ends.
  const auto report = uncached().search(std::ref(space), 10, always);
  CHECK_FALSE(report.converged);
  CHECK(report.exploration_blocks == 10);
  CHECK(space.blocks.size() == 10);
  REQUIRE(report.tried.size() == 4);
  CHECK_FALSE(report.tried.back().complete);
  CHECK(report.tried.back().blocks == 1);
  REQUIRE(report.winner);
  CHECK(report.winner->strategy == strategy_kind::workgroup_local);  // 4x512 is nearest to 32x32
  CHECK(*report.winner == local(4, 512));

  SUBCASE("through the driver: every block is processed once, none past the end") {
    mock_driver driver{10, bowl(1.0, 5, 5)};
    const auto live = uncached().run(driver, always);
    CHECK(driver.blocks_left() == 0);
    CHECK(live.exploration_blocks == 10);
    CHECK(live.winner_blocks == 0);
    CHECK_FALSE(live.converged);
  }
  SUBCASE("no blocks at all") {
    mock_driver driver{0, bowl(1.0, 5, 5)};
    const auto live = uncached().run(driver, always);
    CHECK_FALSE(live.winner);
    CHECK(live.tried.empty());
  }
}

TEST_CASE("the driver wrapper: tuning blocks advance the query, the rest run with the winner") {
  mock_driver driver{500, bowl(1.0, 3, 7)};
  const auto report = uncached().run(driver, always, std::vector{shared(1, 512)});
  REQUIRE(report.converged);
  CHECK(*report.winner == shared(8, 128));
  CHECK(driver.blocks_left() == 0);
  CHECK(report.exploration_blocks + report.winner_blocks == 500);
  for (std::size_t i = report.exploration_blocks; i < driver.ran.size(); ++i) CHECK(driver.ran[i] == *report.winner);
  CHECK(report.winner_block_seconds == doctest::Approx(static_cast<double>(report.winner_blocks)));
}

TEST_CASE("the driver wrapper: the driver's own predicate, pipelined remaining blocks") {
  pipelined_driver driver{300, bowl(1.0, 3, 7)};
  driver.suits = [](const execution_params& p) {
    return p.strategy == strategy_kind::shared && p.config.work_group_size <= 64;
  };
  const auto report = uncached().run(driver);
  REQUIRE(report.converged);
  CHECK(*report.winner == shared(8, 64));
  for (const auto& p : driver.ran) CHECK(driver.suits(p));
  CHECK(driver.run_remaining_calls == 1);
  CHECK(report.winner_blocks == 300 - report.exploration_blocks);
  CHECK(driver.blocks_left() == 0);
  for (std::size_t i = report.exploration_blocks; i < driver.ran.size(); ++i) CHECK(driver.ran[i] == *report.winner);
}

TEST_CASE("the driver wrapper: a measurement that runs its whole window is announced to the driver") {
  SUBCASE("the paper's search: every measurement runs its window") {
    announcing_driver driver{400, bowl(1.0, 3, 7)};
    const auto report = uncached<gpuagg::paper_params>().run(driver, always, std::vector{shared(1, 512)});
    REQUIRE(report.converged);
    CHECK(driver.announced_left == 0);
    // One announcement per measurement, of its window (3 blocks) or the blocks left.
    CHECK(driver.announcements.size() == report.tried.size());
    for (std::size_t m = 0; m < driver.announcements.size(); ++m) {
      CHECK(driver.announcements[m].first == report.tried[m].params);
      CHECK(driver.announcements[m].second == gpuagg::paper_params.measurement.initial_blocks);
      CHECK(report.tried[m].blocks >= driver.announcements[m].second);
    }
  }
  SUBCASE("a cache hit's check: three blocks of the stored winner, then the rest") {
    const cache_dir dir;
    synthetic_space space{bowl(1.0, 3, 7)};
    REQUIRE(tuner<>().search(std::ref(space), 100000, always, std::vector{shared(1, 512)}, sample_key).winner);
    announcing_driver driver{50, bowl(1.0, 3, 7)};
    const auto live = tuner<>().run(driver, always, std::vector{shared(1, 512)}, sample_key);
    CHECK(live.cache == cache_outcome::hit);
    REQUIRE(driver.announcements.size() == 1);
    CHECK(driver.announcements[0] == std::pair{shared(8, 128), std::size_t{3}});
    CHECK(driver.blocks_left() == 0);
  }
  SUBCASE("a measurement that may stop early (the refined search's rejection rules) is not announced") {
    announcing_driver driver{400, bowl(1.0, 3, 7)};
    const auto report = uncached().run(driver, always, std::vector{shared(1, 512)});
    REQUIRE(report.converged);
    std::size_t rejected = 0;
    for (const auto& t : report.tried) rejected += t.rejected ? 1 : 0;
    CHECK(rejected > 0);
    CHECK(driver.announcements.size() < report.tried.size());
    for (const auto& [params, blocks] : driver.announcements) {
      const auto* tried = report.find(params);
      REQUIRE(tried != nullptr);
      CHECK_FALSE(tried->rejected);
    }
  }
}

TEST_CASE("several strategies at once: the right strategy wins") {
  SUBCASE("WORKGROUPLOCAL fastest; the slower strategies are pruned after their initial measurement") {
    synthetic_space space{[](const execution_params& p) {
      switch (p.strategy) {
        case strategy_kind::shared: return bowl(1.0, 0, 8)(p);
        case strategy_kind::independent: return bowl(2.0, 0, 6)(p);
        case strategy_kind::workgroup_local: return bowl(0.5, 3, 7)(p);
      }
      return 0.0;
    }};
    const auto report = uncached().search(std::ref(space), 100000, always);
    REQUIRE(report.winner);
    CHECK(*report.winner == local(8, 128));
    std::size_t others = 0;
    for (const auto& tried : report.tried) others += tried.params.strategy != strategy_kind::workgroup_local;
    CHECK(others == 2);  // the SHARED and INDEPENDENT initial configurations only
    CHECK(report.tried[0].params == shared(1, 512));
    CHECK(report.tried[1].params == independent(1, 256));
    CHECK(report.tried[2].params == local(4, 512));
  }
  SUBCASE("many groups: WORKGROUPLOCAL infeasible, SHARED wins") {
    const auto feasible = [](const execution_params& p) { return p.strategy != strategy_kind::workgroup_local; };
    synthetic_space space{[](const execution_params& p) {
      return p.strategy == strategy_kind::shared ? bowl(1.0, 2, 8)(p) : bowl(1.5, 0, 8)(p);
    }};
    const auto report = uncached().search(std::ref(space), 100000, feasible);
    CHECK(*report.winner == shared(4, 256));
  }
  SUBCASE("strategies within p of each other: both are explored, the faster found") {
    const auto times = [](const execution_params& p) {
      return p.strategy == strategy_kind::shared ? bowl(1.02, 1, 9)(p) : bowl(1.0, 2, 8, 0.01)(p);
    };
    const auto feasible = [](const execution_params& p) { return p.strategy != strategy_kind::independent; };
    synthetic_space space{times};
    const auto report = uncached<gpuagg::paper_params>().search(std::ref(space), 100000, feasible);
    CHECK(*report.winner == local(4, 256));
    CHECK(report.find(shared(2, 512)) != nullptr);  // SHARED's own descent ran too

    synthetic_space refined_space{times};
    const auto refined = uncached().search(std::ref(refined_space), 100000, feasible);
    CHECK(*refined.winner == local(4, 256));
    std::size_t shared_tried = 0;
    for (const auto& tried : refined.tried) shared_tried += tried.params.strategy == strategy_kind::shared;
    CHECK(shared_tried > 1);  // SHARED's first pass ran too
  }
}

TEST_CASE("several strategies at once: a hopeless later start costs one block") {
  // INDEPENDENT's start is 1000x slower than SHARED's: the refined search stops it after its
  // first block (first-block rejection against the fastest start so far) and never queues it;
  // the paper's search measures it like any start (3 blocks).
  synthetic_space space{[](const execution_params& p) {
    return p.strategy == strategy_kind::independent ? 1000.0 : bowl(1.0, 3, 7)(p);
  }};
  const std::vector initial{shared(1, 512), independent(1, 256)};
  const auto report = uncached().search(std::ref(space), 100000, always, initial);
  REQUIRE(report.winner);
  CHECK(*report.winner == shared(8, 128));
  const auto* hopeless = report.find(independent(1, 256));
  REQUIRE(hopeless != nullptr);
  CHECK(hopeless->role == measurement_role::initial);
  CHECK(hopeless->blocks == 1);
  CHECK(hopeless->rejected);
  for (const auto& tried : report.tried) {
    if (tried.params.strategy == strategy_kind::independent) CHECK(tried.params == independent(1, 256));
  }

  synthetic_space paper_space{[](const execution_params& p) {
    return p.strategy == strategy_kind::independent ? 1000.0 : bowl(1.0, 3, 7)(p);
  }};
  const auto paper = uncached<gpuagg::paper_params>().search(std::ref(paper_space), 100000, always, initial);
  REQUIRE(paper.find(independent(1, 256)) != nullptr);
  CHECK(paper.find(independent(1, 256))->blocks == 3);
}

TEST_CASE("cache: a warm start checks the stored winner with one measurement") {
  const cache_dir dir;
  const std::vector initial{shared(1, 512)};
  synthetic_space first_space{bowl(1.0, 3, 7)};
  const auto first = tuner<>().search(std::ref(first_space), 100000, always, initial, sample_key);
  CHECK(first.cache == cache_outcome::miss);
  REQUIRE(first.winner);
  CHECK(*first.winner == shared(8, 128));
  CHECK(std::filesystem::exists(dir.file()));
  CHECK(first.warnings.empty());

  std::vector<std::string> warnings;
  const auto stored = tuning_cache::from_environment().load(sample_key, warnings);
  REQUIRE(stored);
  CHECK(stored->params == shared(8, 128));
  CHECK(stored->seconds == doctest::Approx(1.0));

  synthetic_space second_space{bowl(1.0, 3, 7)};
  const auto second = tuner<>().search(std::ref(second_space), 100000, always, initial, sample_key);
  CHECK(second.cache == cache_outcome::hit);
  CHECK(second.converged);
  CHECK(*second.winner == shared(8, 128));
  REQUIRE(second.tried.size() == 1);
  CHECK(second.tried[0].role == measurement_role::cache_check);
  CHECK(second.exploration_blocks == 0);  // a warm cache explores nothing
  CHECK(second.confirmation_blocks == 3);  // the single check of the stored winner
  CHECK(second_space.sequence() == std::vector{shared(8, 128)});

  SUBCASE("through the driver: after the check every block runs with the stored winner") {
    mock_driver driver{50, bowl(1.0, 3, 7)};
    const auto live = tuner<>().run(driver, always, initial, sample_key);
    CHECK(live.cache == cache_outcome::hit);
    CHECK(live.winner_blocks == 47);
    for (const auto& p : driver.ran) CHECK(p == shared(8, 128));
  }
  SUBCASE("another key misses") {
    tuning_key other = sample_key;
    other.groups_log2 = 21;
    synthetic_space space{bowl(1.0, 3, 7)};
    const auto report = tuner<>().search(std::ref(space), 100000, always, initial, other);
    CHECK(report.cache == cache_outcome::miss);
    CHECK(report.tried.size() > 1);
  }
  SUBCASE("use_cache = false ignores the file") {
    synthetic_space space{bowl(1.0, 3, 7)};
    const auto report = tuner<tuner_params{.cache = {.use_cache = false}}>().search(std::ref(space), 100000, always, initial,
                                                                         sample_key);
    CHECK(report.cache == cache_outcome::not_used);
    CHECK(report.tried.size() > 1);
  }
}

TEST_CASE("cache: a search the input cut short is stored provisionally and resumed by the next query") {
  const cache_dir dir;
  const std::vector initial{shared(1, 512)};
  // 12 blocks: the initial configuration and a few neighbours, no convergence.
  synthetic_space first_space{bowl(1.0, 4, 6)};
  const auto first = tuner<>().search(std::ref(first_space), 12, always, initial, sample_key);
  REQUIRE_FALSE(first.converged);
  REQUIRE(first.winner);
  std::vector<std::string> warnings;
  const auto provisional = tuning_cache::from_environment().load(sample_key, warnings);
  REQUIRE(provisional);
  CHECK_FALSE(provisional->converged);
  CHECK(provisional->params == *first.winner);
  CHECK(*first.winner != shared(16, 64));

  REQUIRE(provisional->state);
  std::size_t complete = 0;
  for (const auto& tried : first.tried) complete += tried.complete;
  CHECK(provisional->state->measured.size() == complete);
  CHECK_FALSE(provisional->state->queue.empty());

  // The next query is no hit: it resumes the search where the first stood, measures none of the
  // configurations the first measured completely, and stores the converged winner.
  synthetic_space second_space{bowl(1.0, 4, 6)};
  const auto second = tuner<>().search(std::ref(second_space), 100000, always, initial, sample_key);
  CHECK(second.cache == cache_outcome::resumed);
  for (const auto& tried : second.tried) {
    const auto* before = first.find(tried.params);
    CHECK((before == nullptr || !before->complete));
  }
  CHECK(second.converged);
  CHECK(*second.winner == shared(16, 64));
  // Together the two queries measured what one uninterrupted search does.
  synthetic_space whole_space{bowl(1.0, 4, 6)};
  const auto whole = uncached().search(std::ref(whole_space), 100000, always, initial);
  CHECK(*whole.winner == shared(16, 64));
  CHECK(second.tried.size() + complete <= whole.tried.size() + 1);
  const auto converged = tuning_cache::from_environment().load(sample_key, warnings);
  REQUIRE(converged);
  CHECK(converged->converged);
  CHECK(converged->params == shared(16, 64));
  std::ostringstream text;
  text << second;
  CHECK(text.str().find("resumed from a provisional entry") != std::string::npos);

  // The third is a hit.
  synthetic_space third_space{bowl(1.0, 4, 6)};
  const auto third = tuner<>().search(std::ref(third_space), 100000, always, initial, sample_key);
  CHECK(third.cache == cache_outcome::hit);
  CHECK(third.exploration_blocks == 0);
  CHECK(warnings.empty());
}

TEST_CASE("cache: a measurement longer than a query continues in the next one") {
  // Blocks alternate 5% above and below: no window passes v_max, so every measurement runs to
  // b_max = 10 blocks, and each query has 8. Only by carrying the cut-short measurement over can
  // the search advance; it converges on the optimum after some queries.
  const cache_dir dir;
  const std::vector initial{shared(1, 512)};
  const auto bumpy = [](const execution_params& p, unsigned block) {
    return bowl(1.0, 2, 8)(p) * (block % 2 == 0 ? 1.05 : 0.95);
  };
  std::optional<tuning_report> last;
  std::size_t queries = 0;
  while (queries < 200 && !(last && last->converged)) {
    synthetic_space space{bowl(1.0, 2, 8)};
    space.block_time = bumpy;
    last = tuner<>().search(std::ref(space), 8, always, initial, sample_key);
    ++queries;
    for (const auto& tried : last->tried) CHECK(tried.blocks <= 10u);
  }
  REQUIRE(last->converged);
  CHECK(*last->winner == shared(4, 256));
  CHECK(queries > 2);
  std::vector<std::string> warnings;
  const auto stored = tuning_cache::from_environment().load(sample_key, warnings);
  REQUIRE(stored);
  CHECK(stored->converged);
  CHECK_FALSE(stored->state);
}

TEST_CASE("cache: an entry without the converged field (written before it existed) is a converged winner") {
  const cache_dir dir;
  write_sample_entry(dir.file(),
                     R"("strategy": "SHARED", "work_groups_per_cu": 8, "work_group_size": 128, "seconds": 1.0)");
  std::vector<std::string> warnings;
  const auto stored = tuning_cache::from_environment().load(sample_key, warnings);
  REQUIRE(stored);
  CHECK(stored->converged);
  synthetic_space space{bowl(1.0, 3, 7)};
  const auto report = tuner<>().search(std::ref(space), 100000, always, std::vector{shared(1, 512)}, sample_key);
  CHECK(report.cache == cache_outcome::hit);
}

TEST_CASE("cache: a provisional search with nothing feasible left starts over") {
  // The stored search stood at SHARED 8x128 (its only measurement and its Q), which the caller's
  // predicate now excludes: the resumed query starts over from the initial configuration and
  // converges within what is feasible.
  const cache_dir dir;
  write_sample_entry(dir.file(), R"("strategy": "SHARED", "work_groups_per_cu": 2, "work_group_size": 128,
    "seconds": 1.0, "converged": false, "search": {"phase": "descent", "stride": 2, "queue": [["SHARED", 8, 128]],
    "measured": [["SHARED", 8, 128, 1.0, false, [1.0, 1.0, 1.0]]]})");
  const auto feasible = [](const execution_params& p) { return p.config.work_groups_per_cu <= 4; };
  synthetic_space space{bowl(1.0, 3, 7)};
  const auto report = tuner<>().search(std::ref(space), 100000, feasible, std::vector{shared(1, 512)}, sample_key);
  CHECK(report.cache == cache_outcome::resumed);
  REQUIRE(report.winner);
  CHECK(report.converged);
  CHECK(*report.winner == shared(4, 128));
  for (const auto& p : space.blocks) CHECK(feasible(p));
}

TEST_CASE("cache: a provisional entry whose search is corrupt warns and tuning goes on") {
  const cache_dir dir;
  write_sample_entry(dir.file(), R"("strategy": "SHARED", "work_groups_per_cu": 8, "work_group_size": 128,
    "seconds": 1.0, "converged": false,
    "search": {"phase": "descent", "stride": 2, "queue": [["SHARED", 8]], "measured": []})");
  std::vector<std::string> warnings;
  CHECK_FALSE(tuning_cache::from_environment().load(sample_key, warnings));
  CHECK_FALSE(warnings.empty());
  synthetic_space space{bowl(1.0, 3, 7)};
  const auto report = tuner<>().search(std::ref(space), 100000, always, std::vector{shared(1, 512)}, sample_key);
  CHECK(report.cache == cache_outcome::miss);
  CHECK(*report.winner == shared(8, 128));
  CHECK(report.converged);
}

TEST_CASE("cache: a changed space makes the check fail and the search run again") {
  const cache_dir dir;
  const std::vector initial{shared(1, 512)};
  synthetic_space before{bowl(1.0, 3, 7)};
  const auto first = tuner<>().search(std::ref(before), 100000, always, initial, sample_key);
  REQUIRE(*first.winner == shared(8, 128));

  // Same shape, different behaviour (a new driver, a different data distribution): 8x128 is now
  // 1.0 * (1 + 0.05 * 5) = 1.25 instead of 1.0, and the optimum moved to 32x64.
  synthetic_space after{bowl(1.0, 5, 6)};
  const auto second = tuner<>().search(std::ref(after), 100000, always, initial, sample_key);
  CHECK(second.cache == cache_outcome::stale);
  CHECK(second.converged);
  CHECK(*second.winner == shared(32, 64));
  CHECK(second.tried.front().role == measurement_role::cache_check);
  CHECK(second.tried.size() > 2);

  synthetic_space again{bowl(1.0, 5, 6)};
  const auto third = tuner<>().search(std::ref(again), 100000, always, initial, sample_key);
  CHECK(third.cache == cache_outcome::hit);
  CHECK(*third.winner == shared(32, 64));

  SUBCASE("a stored winner that is infeasible now is not measured") {
    synthetic_space space{bowl(1.0, 5, 6)};
    const auto feasible = [](const execution_params& p) { return p.config.work_groups_per_cu <= 16; };
    const auto report = tuner<>().search(std::ref(space), 100000, feasible, initial, sample_key);
    CHECK(report.cache == cache_outcome::miss);
    for (const auto& p : space.blocks) CHECK(feasible(p));
    CHECK(*report.winner == shared(16, 64));
  }
}

TEST_CASE("cache: a miss starts from the winner stored for the nearest group count") {
  const cache_dir dir;
  const std::vector initial{shared(1, 512), local(4, 512)};
  const auto shared_only = [](const execution_params& p) { return p.strategy == strategy_kind::shared; };
  // 2^20 groups is tuned cold and stored.
  synthetic_space first_space{bowl(1.0, 3, 7)};
  const auto first = tuner<>().search(std::ref(first_space), 100000, shared_only, initial, sample_key);
  REQUIRE(*first.winner == shared(8, 128));
  CHECK_FALSE(first.started_from_groups_log2);

  SUBCASE("2^22 groups: a miss that starts from 2^20's winner instead of SHARED's 1x512") {
    tuning_key near = sample_key;
    near.groups_log2 = 22;
    synthetic_space space{bowl(1.0, 4, 7)};  // the optimum moved a little: 16x128
    const auto report = tuner<>().search(std::ref(space), 100000, shared_only, initial, near);
    CHECK(report.cache == cache_outcome::miss);
    REQUIRE(report.started_from_groups_log2);
    CHECK(*report.started_from_groups_log2 == 20);
    CHECK(report.tried.front().params == shared(8, 128));
    CHECK(report.tried.front().role == measurement_role::initial);
    CHECK(report.find(shared(1, 512)) == nullptr);  // replaced, not measured
    CHECK(*report.winner == shared(16, 128));
    std::ostringstream text;
    text << report;
    CHECK(text.str().find("started from the winner stored for 2^20 groups") != std::string::npos);

    synthetic_space cold_space{bowl(1.0, 4, 7)};
    const auto cold = uncached().search(std::ref(cold_space), 100000, shared_only, initial);
    CHECK(*cold.winner == shared(16, 128));
    CHECK(report.exploration_seconds < cold.exploration_seconds);
  }
  SUBCASE("too far (2^23, distance 3 > 2), the paper's search, or no initial configuration of that strategy: "
          "no borrowed start") {
    tuning_key far = sample_key;
    far.groups_log2 = 23;
    synthetic_space space{bowl(1.0, 3, 7)};
    const auto report = tuner<>().search(std::ref(space), 100000, shared_only, initial, far);
    CHECK_FALSE(report.started_from_groups_log2);
    CHECK(report.tried.front().params == shared(1, 512));

    tuning_key near = sample_key;
    near.groups_log2 = 21;
    synthetic_space paper_space{bowl(1.0, 3, 7)};
    const auto paper = tuner<gpuagg::paper_params>().search(std::ref(paper_space), 100000, shared_only, initial, near);
    CHECK_FALSE(paper.started_from_groups_log2);
    CHECK(paper.tried.front().params == shared(1, 512));

    near.groups_log2 = 19;
    synthetic_space local_space{bowl(1.0, 3, 7)};
    const auto local_start = tuner<>().search(std::ref(local_space), 100000, always, std::vector{local(4, 512)}, near);
    CHECK_FALSE(local_start.started_from_groups_log2);
    for (const auto& tried : local_start.tried) CHECK(tried.params.strategy == strategy_kind::workgroup_local);
  }
  SUBCASE("load_nearest: the nearest entry, the smaller group count on a tie, only the same query") {
    const tuning_cache cache = tuning_cache::from_environment();
    std::vector<std::string> warnings;
    tuning_key key = sample_key;
    key.groups_log2 = 24;
    CHECK(cache.store(key, {shared(64, 64), 2.0, true, std::nullopt}, warnings));
    tuning_key other_query = sample_key;
    other_query.query = "count(*) group by g";
    other_query.groups_log2 = 21;
    CHECK(cache.store(other_query, {shared(2, 2), 3.0, true, std::nullopt}, warnings));

    tuning_key wanted = sample_key;
    wanted.groups_log2 = 22;  // 2^20 and 2^24 both 2 away
    auto nearest = cache.load_nearest(wanted, 2, warnings);
    REQUIRE(nearest);
    CHECK(nearest->first == 20);
    CHECK(nearest->second.params == shared(8, 128));
    wanted.groups_log2 = 23;  // 2^24 is 1 away; 2^21 is another query
    nearest = cache.load_nearest(wanted, 2, warnings);
    REQUIRE(nearest);
    CHECK(nearest->first == 24);
    CHECK(nearest->second.params == shared(64, 64));
    CHECK_FALSE(cache.load_nearest(wanted, 0, warnings));
    wanted.groups_log2 = 20;  // the exact key is not a neighbour of itself
    nearest = cache.load_nearest(wanted, 3, warnings);
    CHECK_FALSE(nearest);
    CHECK(warnings.empty());
  }
}

TEST_CASE("cache: a corrupt file warns and tuning goes on") {
  const cache_dir dir;
  {
    std::ofstream out(dir.file());
    out << "{ \"format\": \"gpuagg-tuning\", \"entries\": [ {\"device\": ";  // cut off
  }
  synthetic_space space{bowl(1.0, 3, 7)};
  tuning_report report;
  {
    const stderr_capture capture;
    report = tuner<>().search(std::ref(space), 100000, always, std::vector{shared(1, 512)}, sample_key);
    CHECK(capture.text.str().find("corrupt") != std::string::npos);
  }
  CHECK(contains_text(report.warnings, "corrupt"));
  CHECK(report.cache == cache_outcome::miss);
  CHECK(report.converged);
  CHECK(*report.winner == shared(8, 128));
  // The corrupt file was replaced by a valid one holding the new winner.
  std::vector<std::string> warnings;
  const auto stored = tuning_cache::from_environment().load(sample_key, warnings);
  CHECK(warnings.empty());
  REQUIRE(stored);
  CHECK(stored->params == shared(8, 128));

  SUBCASE("valid JSON of the wrong shape is corrupt too") {
    { std::ofstream(dir.file()) << R"({"entries": 3})"; }
    synthetic_space other{bowl(1.0, 3, 7)};
    const stderr_capture capture;
    const auto r = tuner<>().search(std::ref(other), 100000, always, std::vector{shared(1, 512)}, sample_key);
    CHECK(contains_text(r.warnings, "corrupt"));
    CHECK(*r.winner == shared(8, 128));
  }
  SUBCASE("a corrupt entry for this key is skipped with a warning") {
    write_sample_entry(dir.file(),
                       R"("strategy": "NOPE", "work_groups_per_cu": 1, "work_group_size": 1, "seconds": 1)");
    synthetic_space other{bowl(1.0, 3, 7)};
    const stderr_capture capture;
    const auto r = tuner<>().search(std::ref(other), 100000, always, std::vector{shared(1, 512)}, sample_key);
    CHECK(contains_text(r.warnings, "corrupt entry"));
    CHECK(r.cache == cache_outcome::miss);
    CHECK(*r.winner == shared(8, 128));
  }
}

TEST_CASE("cache: an unwritable directory warns and tuning goes on") {
  const cache_dir dir;
  // A regular file where the cache directory should be: creating it fails even for root.
  { std::ofstream(dir.dir / "not_a_directory") << "x"; }
  ::setenv("GPUAGG_CACHE_DIR", (dir.dir / "not_a_directory" / "sub").c_str(), 1);
  synthetic_space space{bowl(1.0, 3, 7)};
  tuning_report report;
  {
    const stderr_capture capture;
    report = tuner<>().search(std::ref(space), 100000, always, std::vector{shared(1, 512)}, sample_key);
    CHECK(capture.text.str().find("cannot be written") != std::string::npos);
  }
  CHECK(contains_text(report.warnings, "cannot be written"));
  CHECK(report.converged);
  CHECK(*report.winner == shared(8, 128));
  // The same failure is printed on stderr only once per process, but always reported.
  synthetic_space again{bowl(1.0, 3, 7)};
  const stderr_capture capture;
  const auto second = tuner<>().search(std::ref(again), 100000, always, std::vector{shared(1, 512)}, sample_key);
  CHECK(capture.text.str().empty());
  CHECK(contains_text(second.warnings, "cannot be written"));
}

TEST_CASE("cache: the file's location follows the environment") {
  const auto keep = [](const char* name) -> std::optional<std::string> {
    const char* value = std::getenv(name);
    return value ? std::optional<std::string>(value) : std::nullopt;
  };
  const auto restore = [](const char* name, const std::optional<std::string>& value) {
    if (value) ::setenv(name, value->c_str(), 1); else ::unsetenv(name);
  };
  const auto home = keep("HOME");
  const auto xdg = keep("XDG_CACHE_HOME");
  const auto dir = keep("GPUAGG_CACHE_DIR");

  ::setenv("GPUAGG_CACHE_DIR", "/tmp/a", 1);
  ::setenv("XDG_CACHE_HOME", "/tmp/b", 1);
  ::setenv("HOME", "/tmp/c", 1);
  CHECK(tuning_cache::default_path() == std::filesystem::path("/tmp/a/tuning.json"));
  ::setenv("GPUAGG_CACHE_DIR", "", 1);  // empty counts as unset
  CHECK(tuning_cache::default_path() == std::filesystem::path("/tmp/b/gpuagg/tuning.json"));
  ::unsetenv("GPUAGG_CACHE_DIR");
  ::unsetenv("XDG_CACHE_HOME");
  CHECK(tuning_cache::default_path() == std::filesystem::path("/tmp/c/.cache/gpuagg/tuning.json"));
  ::unsetenv("HOME");
  CHECK_FALSE(tuning_cache::default_path());
  CHECK_FALSE(tuning_cache::from_environment().enabled());

  // Without any cache path the tuner tunes as usual.
  synthetic_space space{bowl(1.0, 3, 7)};
  const auto report = tuner<>().search(std::ref(space), 100000, always, std::vector{shared(1, 512)}, sample_key);
  CHECK(report.cache == cache_outcome::not_used);
  CHECK(*report.winner == shared(8, 128));

  restore("HOME", home);
  restore("XDG_CACHE_HOME", xdg);
  restore("GPUAGG_CACHE_DIR", dir);
}

TEST_CASE("cache: concurrent stores from several threads keep every entry") {
  const cache_dir dir;
  const tuning_cache cache = tuning_cache::from_environment();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 8; ++i) {
        tuning_key key = sample_key;
        key.groups_log2 = t * 8 + i;
        std::vector<std::string> warnings;
        if (!cache.store(key, {shared(1u << (i % 4), 64), 1.0 + t, true, std::nullopt}, warnings)) ++failures;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  CHECK(failures == 0);
  for (int g = 0; g < 32; ++g) {
    tuning_key key = sample_key;
    key.groups_log2 = g;
    std::vector<std::string> warnings;
    const auto entry = cache.load(key, warnings);
    REQUIRE(entry);
    CHECK(entry->params == shared(1u << ((g % 8) % 4), 64));
    CHECK(entry->seconds == doctest::Approx(1.0 + g / 8));
  }
  // No temporary files are left behind.
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.dir)) ++files;
  CHECK(files == 1);
}

TEST_CASE("report: the paper's metrics and a readable print") {
  synthetic_space space{bowl(2e-3, 3, 7)};
  const auto report = uncached().search(std::ref(space), 100000, always, std::vector{shared(1, 512)});
  REQUIRE(report.winner);
  // Cost: sum over exploration blocks of t / t_best, minus the number of blocks.
  double normalized = 0.0;
  for (const auto& p : space.blocks) normalized += space.time(p) / 2e-3;
  CHECK(report.cost() == doctest::Approx(normalized - static_cast<double>(space.blocks.size())));
  CHECK(report.cost(1e-3) == doctest::Approx(2 * normalized - static_cast<double>(space.blocks.size())));
  CHECK(report.cost() > 0.0);
  CHECK(report.exploration_seconds == doctest::Approx(normalized * 2e-3));
  CHECK(report.host_seconds > 0.0);
  CHECK(report.overhead() == doctest::Approx(report.host_seconds / report.exploration_seconds));
  CHECK(report.overhead() < 0.5);  // microseconds of bookkeeping against milliseconds of blocks

  std::ostringstream text;
  text << report;
  const std::string printed = text.str();
  CHECK(printed.find("winner:     SHARED 8x128, 2 ms per block (converged)") != std::string::npos);
  CHECK(printed.find("cache:      not used") != std::string::npos);
  CHECK(printed.find("<- winner") != std::string::npos);
  CHECK(printed.find("s=0.06 p=1.07 v_max=0.019 b_max=10") != std::string::npos);
}

TEST_CASE("GPUAGG_LOG turns the decision log on") {
  synthetic_space space{bowl(1.0, 1, 9)};
  SUBCASE("set") {
    ::setenv("GPUAGG_LOG", "1", 1);
    const auto logged = uncached();
    ::unsetenv("GPUAGG_LOG");
    const stderr_capture capture;
    logged.search(std::ref(space), 1000, always, std::vector{shared(1, 512)});
    CHECK(capture.text.str().find("[gpuagg tuner] converged on SHARED 2x512") != std::string::npos);
  }
  SUBCASE("\"0\" and empty mean off") {
    for (const char* off : {"0", ""}) {
      ::setenv("GPUAGG_LOG", off, 1);
      const auto quiet = uncached();
      ::unsetenv("GPUAGG_LOG");
      const stderr_capture capture;
      quiet.search(std::ref(space), 1000, always, std::vector{shared(1, 512)});
      CHECK(capture.text.str().empty());
    }
  }
}
