// The tuner around the real driver (on the default OpenCL device): tuned queries are exact,
// the cache is written and consulted, and group_by tunes only when it should.
#include <filesystem>

#include "support.hpp"

using namespace gpuagg;
using namespace gpuagg_test;

namespace {

const auto test_query = select(sum(col<0>), count(), max(col<0>));
using bound = bound_query<single_key<std::uint32_t>, std::remove_const_t<decltype(test_query)>, std::int32_t>;

struct temp_cache_dir {
  std::filesystem::path path;
  std::string previous = std::getenv("GPUAGG_CACHE_DIR") ? std::getenv("GPUAGG_CACHE_DIR") : "";
  temp_cache_dir() {
    path = std::filesystem::temp_directory_path() / ("gpuagg-tuned-test-" + std::to_string(fresh_seed()));
    std::filesystem::create_directories(path);
    setenv("GPUAGG_CACHE_DIR", path.c_str(), 1);
  }
  ~temp_cache_dir() {
    setenv("GPUAGG_CACHE_DIR", previous.c_str(), 1);
    std::filesystem::remove_all(path);
  }
};

struct input {
  std::vector<std::uint32_t> keys;
  std::vector<std::int32_t> vals;
};

input make_input(std::size_t rows, std::size_t groups, std::mt19937_64& rng) {
  return {draw_keys(key_dictionary<std::uint32_t>(groups, rng), rows, distribution::zipf, rng),
          random_values<std::int32_t>(rows, rng)};
}

auto reference(const input& in) {
  return reference_group_by<bound>(std::span<const std::uint32_t>(in.keys), std::span<const std::int32_t>(in.vals));
}

// A small search space keeps PoCL from compiling a work-group function for every size.
constexpr tuner_params quick{.measurement = {.max_blocks = 4}};

}  // namespace

TEST_CASE("an autotuned test_query returns exactly the reference result, and the cache remembers the winner") {
  const temp_cache_dir cache;
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  const auto in = make_input(1'000'000, 700, rng);
  options opts;
  opts.expected_groups = 700;
  opts.block_bytes = 4 << 10;  // 1024 rows a block: 977 blocks to tune on
  auto first = tuned_group_by<quick>(in.keys, in.vals, test_query, opts);
  check_equal(first.result, reference(in));
  MESSAGE(first.report);
  REQUIRE(first.report.winner);
  CHECK(first.report.tried.size() >= 3);  // the three strategies' initial configurations at least
  CHECK(first.report.cache == cache_outcome::miss);
  // 1024-row blocks over 10^6 rows: every row in exactly one block, each block counted once.
  CHECK(first.result.stats.blocks.size() == (1'000'000 + 1023) / 1024);
  std::uint64_t rows_in_blocks = 0;
  for (const auto& b : first.result.stats.blocks) rows_in_blocks += b.rows;
  CHECK(rows_in_blocks == 1'000'000);
  // Every block after the search ran with the winner.
  const auto& blocks = first.result.stats.blocks;
  for (std::size_t b = first.report.exploration_blocks; b < blocks.size(); ++b) {
    CHECK(blocks[b].params == *first.report.winner);
  }
  CHECK(std::filesystem::exists(cache.path / "tuning.json"));

  // Same shape again: starts from the stored winner (a hit, or on a noisy device a re-search).
  const auto again = make_input(1'000'000, 700, rng);
  auto second = tuned_group_by<quick>(again.keys, again.vals, test_query, opts);
  check_equal(second.result, reference(again));
  CHECK((second.report.cache == cache_outcome::hit || second.report.cache == cache_outcome::stale));
  REQUIRE_FALSE(second.report.tried.empty());
  CHECK(second.report.tried.front().role == measurement_role::cache_check);
  CHECK(second.report.tried.front().params == *first.report.winner);
  // A hit explores nothing; a stale entry is searched again (both ways, so neither case vanishes).
  CHECK((second.report.cache == cache_outcome::hit) == (second.report.exploration_blocks == 0));
}

TEST_CASE("group_by tunes by default only with enough blocks and no fixed strategy") {
  const temp_cache_dir cache;
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  const auto in = make_input(200'000, 100, rng);
  options opts;
  opts.expected_groups = 100;
  opts.block_bytes = 4 << 10;  // 196 blocks
  const auto tuned_run = group_by(in.keys, in.vals, test_query, opts);
  check_equal(tuned_run, reference(in));
  std::set<strategy_kind> strategies_seen;
  for (const auto& b : tuned_run.stats.blocks) strategies_seen.insert(b.params.strategy);
  CHECK(strategies_seen.size() == 3);  // the tuner measured every strategy's initial configuration
  // A fixed strategy is obeyed for every block.
  opts.strategy = strategy_kind::independent;
  const auto fixed = group_by(in.keys, in.vals, test_query, opts);
  check_equal(fixed, reference(in));
  for (const auto& b : fixed.stats.blocks) CHECK(b.params.strategy == strategy_kind::independent);
  // Turned off: the section 3.7 default.
  opts.strategy.reset();
  opts.autotune = false;
  const auto plain = group_by(in.keys, in.vals, test_query, opts);
  for (const auto& b : plain.stats.blocks) CHECK(b.params.strategy == strategy_kind::workgroup_local);
}

TEST_CASE("an unwritable cache never breaks a test_query") {
  const std::string isolated_cache = std::getenv("GPUAGG_CACHE_DIR");
  setenv("GPUAGG_CACHE_DIR", "/proc/gpuagg-cannot-write-here", 1);
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  const auto in = make_input(1'000'000, 50, rng);
  options opts;
  opts.block_bytes = 4 << 10;  // 977 blocks: enough to converge, and so to try to store
  auto r = tuned_group_by<quick>(in.keys, in.vals, test_query, opts);
  setenv("GPUAGG_CACHE_DIR", isolated_cache.c_str(), 1);
  check_equal(r.result, reference(in));
  // Only a converged search stores its winner, and so meets the unwritable directory: 977 blocks
  // are enough to converge, so the check cannot be skipped.
  REQUIRE(r.report.converged);
  CHECK_FALSE(r.report.warnings.empty());
}

TEST_CASE("on device input the tuner explores on slices, then runs the rest in large blocks") {
  const temp_cache_dir cache;
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t rows = 400'000;
  const auto in = make_input(rows, 300, rng);
  cl::Buffer keys = ctx().buffer(rows * sizeof(std::uint32_t), "keys");
  cl::Buffer vals = ctx().buffer(rows * sizeof(std::int32_t), "values");
  REQUIRE(ctx().compute_queue().enqueueWriteBuffer(keys, CL_TRUE, 0, rows * 4, in.keys.data()) == CL_SUCCESS);
  REQUIRE(ctx().compute_queue().enqueueWriteBuffer(vals, CL_TRUE, 0, rows * 4, in.vals.data()) == CL_SUCCESS);
  options opts;
  opts.tuning_block_bytes = 4 << 10;  // slices of 1024 rows: 391 of them
  auto driver = make_driver(device_column<std::uint32_t>(keys, rows), device_column<std::int32_t>(vals, rows),
                            test_query, opts);
  // The generic model of a CPU device is not sure of anything: the plan tunes, from its choice.
  const auto plan = driver->plan().tuning();
  REQUIRE(plan.enabled);
  CHECK(driver->tuning_block_rows() == 1024);
  CHECK(driver->block_rows() >= rows);  // one large block holds the rest
  CHECK(plan.starts.front() == driver->default_params());
  const auto r = group_by(device_column<std::uint32_t>(keys, rows), device_column<std::int32_t>(vals, rows),
                          test_query, opts);
  check_equal(r, reference(in));
  const auto& blocks = r.stats.blocks;
  REQUIRE(blocks.size() >= 2);
  // The search measured slices, at most its budget of them; then one block took the rest.
  std::set<execution_params> tried;
  for (std::size_t b = 0; b + 1 < blocks.size(); ++b) {
    CHECK(blocks[b].rows == 1024);
    tried.insert(blocks[b].params);
  }
  CHECK(tried.size() >= 2);
  CHECK(blocks.size() - 1 <= plan.block_budget);
  CHECK(blocks.back().rows > 1024);
  std::uint64_t total = 0;
  for (const auto& b : blocks) total += b.rows;
  CHECK(total == rows);
}
