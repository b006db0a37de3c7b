// The group estimate (estimate.hpp): the HyperLogLog sketch against exact counts, each stage's
// decision on the four key distributions against the true distinct count, the device's sketch
// register for register against the host's, and the estimate a query plans with.

#include "support.hpp"

#include <gpuagg/estimate.hpp>
#include <gpuagg/key.hpp>

#include <algorithm>
#include <atomic>
#include <set>
#include <unordered_set>

using namespace gpuagg;
using namespace gpuagg_test;

namespace {

/// Distinct keys, counted exactly.
template <class Key>
std::uint64_t exact_distinct(const std::vector<Key>& keys) {
  return std::unordered_set<Key>(keys.begin(), keys.end()).size();
}

/// A pseudo-random 64-bit value of x for a test's seed (SplitMix64's finalizer): keys made from
/// the row number on the fly.
std::uint64_t seeded_mix(std::uint64_t x, std::uint64_t seed) {
  std::uint64_t z = x + seed * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// `rows` keys from `groups` dense values 0..groups-1 (keys in a run of one value are equal, as
/// the benchmark's input): uniform, zipf (s = 1.1), 90% one heavy hitter, or uniform and sorted.
std::vector<std::uint32_t> dense_keys(std::size_t rows, std::uint64_t groups, distribution d, std::mt19937_64& rng) {
  std::vector<std::uint32_t> keys(rows);
  const double top = std::pow(double(groups) + 1.0, 1.0 - 1.1) - 1.0;
  for (auto& k : keys) {
    const std::uint64_t r = rng();
    if (d == distribution::zipf) {
      const double u = double(r >> 11) * 0x1.0p-53;
      const double rank = std::pow(u * top + 1.0, 1.0 / (1.0 - 1.1)) - 1.0;
      k = static_cast<std::uint32_t>(std::min<std::uint64_t>(static_cast<std::uint64_t>(rank), groups - 1));
    } else if (d == distribution::heavy_hitter && (r & 0xff) < 230) {
      k = 0;
    } else {
      k = static_cast<std::uint32_t>((r >> 8) % groups);
    }
  }
  if (d == distribution::sorted_runs) std::sort(keys.begin(), keys.end());
  return keys;
}

/// The estimate the driver makes, its stages (estimate_in_stages) run with the host's sketch
/// standing in for the device's (they agree register for register, tested below).
using detail::staged_estimate;
/// The driver's key sample profiled: 16 Ki keys (fewer for fewer rows) a prime stride apart
/// over `rows` rows (key_sample_stride) and their right neighbours, `key_of(row)` being row `row`'s key word.
template <class KeyOf>
detail::sample_profile profile_like_the_driver(const KeyOf& key_of, std::uint64_t rows) {
  const std::uint64_t n = detail::key_sample_size(rows);
  const std::uint64_t stride = detail::key_sample_stride(rows, n);
  std::vector<std::uint64_t> sample(n), next(n);
  for (std::uint64_t i = 0; i < n; ++i) {
    sample[i] = key_of(i * stride);
    next[i] = key_of(std::min(i * stride + 1, rows - 1));
  }
  return detail::profile_sample(std::span<const std::uint64_t>(sample), std::span<const std::uint64_t>(next));
}

/// How often the stages asked for a strided sketch and for the sketch of every row.
struct sketch_calls {
  int strided = 0;
  int every = 0;
};

/// As the driver estimates: `key_of(row)` is row `row`'s key word, of `rows` rows; `calls`, if
/// given, counts the sketches the stages ask for; without `runs`, every sketch of strided rows.
template <class KeyOf>
staged_estimate estimate_like_the_driver(const KeyOf& key_of, std::uint64_t rows, bool host_input,
                                         sketch_calls* calls = nullptr, bool runs = true) {
  sketch_calls ignored;
  sketch_calls& counted = calls != nullptr ? *calls : ignored;
  const auto profile = profile_like_the_driver(key_of, rows);
  return detail::estimate_in_stages(
      profile, rows, host_input,
      [&](std::uint64_t stride, std::uint64_t sampled, bool last, bool count_frequent) {
        ++counted.strided;
        // The device's sketch counts a sample's one frequent key only.
        const auto frequent = count_frequent && (host_input || detail::device_counts_frequent(profile.frequent.size()))
                                  ? profile.frequent_words()
                                  : std::vector<std::uint64_t>{};
        return detail::sketch_host_rows(
            key_of, rows, stride, sampled, 2, detail::no_prefetch{}, last, frequent,
            runs ? detail::host_sketch_run_rows_log2(profile.runs_share, profile.ordered) : 0u);
      },
      [&] {
        ++counted.every;
        return detail::sketch_host_rows(key_of, rows, 1, rows, 2);
      });
}

staged_estimate estimate_like_the_driver(const std::vector<std::uint32_t>& keys, bool host_input) {
  return estimate_like_the_driver([&keys](std::uint64_t row) { return std::uint64_t{keys[row]}; }, keys.size(),
                                  host_input);
}

}  // namespace

TEST_CASE("the sketch: within 3% of the exact distinct count (and of the registers its keys share) from 0 to 2^22 keys, and 0 for nothing") {
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  CHECK(detail::sketch_estimate(std::vector<std::uint32_t>(detail::sketch_registers, 0)) == 0.0);
  for (const std::uint64_t distinct : {1ull, 10ull, 1000ull, 30'000ull, 1ull << 18, 1ull << 22}) {
    CAPTURE(distinct);
    std::vector<std::uint64_t> keys(distinct);
    const std::uint64_t base = rng();
    for (std::uint64_t i = 0; i < distinct; ++i) keys[i] = base + i * 0x9E3779B97F4A7C15ULL;  // distinct
    // Every key twice: repetition must not count.
    keys.insert(keys.end(), keys.begin(), keys.end());
    const auto sketch = detail::sketch_host_keys(keys.data(), keys.size(), 1, keys.size(), 2);
    const double estimate = detail::sketch_estimate(sketch.registers);
    // Keys that share a register count once. The estimator corrects for the sharing expected
    // of `distinct` keys in m registers, not for this draw's: more sharing than expected is
    // the error a small count has (two of 10 keys in one register, 0.3% of draws, read 9).
    std::set<std::uint32_t> hit;
    for (std::uint64_t i = 0; i < distinct; ++i) hit.insert(detail::sketch_slot(detail::sketch_hash(keys[i])).index);
    const double m = double(detail::sketch_registers);
    const double expected_shared = double(distinct) - m * (1.0 - std::pow(1.0 - 1.0 / m, double(distinct)));
    const double excess_shared = std::max(0.0, double(distinct - hit.size()) - expected_shared);
    CAPTURE(hit.size());
    // The relative standard error is 0.8% at 2^14 registers; small counts are near exact.
    CHECK(std::abs(estimate - double(distinct)) <= 0.03 * double(distinct) + 0.5 + excess_shared);
  }
}

TEST_CASE("the sketch's hash: the OpenCL text carries the host's constants") {
  const std::string cl(detail::sketch_cl_source.view());
  CHECK(cl.find("0x9e3779b97f4a7c15UL") != std::string::npos);
  CHECK(cl.find("0xff51afd7ed558ccdUL") != std::string::npos);
  CHECK(cl.find("0xc4ceb9fe1a85ec53UL") != std::string::npos);
  CHECK(cl.find("#define GPUAGG_SKETCH_P 14u") != std::string::npos);
  // Key 0 must not hash to 0 (it would take the largest rank).
  CHECK(detail::sketch_hash(0) != 0);
}

TEST_CASE("stage 1: Chao1 where the sample has seen nearly every group or its error is small, nothing where it cannot tell") {
  const auto from = [](std::uint64_t sample, std::uint64_t distinct, std::uint64_t once, std::uint64_t twice,
                       std::uint64_t rows, bool power_law = false) {
    return detail::estimate_from_frequencies(sample, distinct, once, twice, rows, power_law);
  };
  // Every key seen at least three times: the sample's distinct count, no error.
  REQUIRE(from(16384, 1000, 0, 0, 1u << 27).has_value());
  CHECK(from(16384, 1000, 0, 0, 1u << 27)->groups == 1000u);
  CHECK(from(16384, 1000, 0, 0, 1u << 27)->relative_error == 0);
  // A fifth seen once: Chao1 adds f1 (f1 - 1) / (2 (f2 + 1)), whatever f2.
  CHECK(from(16384, 1000, 200, 9, 1u << 27)->groups == 1000u + 200u * 199u / 20u);
  CHECK(from(16384, 1000, 200, 9, 1u << 27, true)->groups == 1000u + 200u * 199u / 20u);
  // More than a fifth seen once, f2 = 100: Chao1 = 1000 + 201 * 200 / 202 = 1,199.01 (1,200
  // groups, rounded up), Chao's variance 100 (2.01^4 / 4 + 2.01^3 + 2.01^2 / 2) = 1,422, a
  // relative error of 3.1%.
  const auto precise = from(16384, 1000, 201, 100, 1u << 27);
  REQUIRE(precise.has_value());
  CHECK(precise->groups == 1200u);
  CHECK(precise->relative_error == doctest::Approx(std::sqrt(1422.2) / 1199.01).epsilon(0.01));
  // The same frequencies from a power law's sample, or with too few keys seen twice: nothing.
  CHECK_FALSE(from(16384, 1000, 201, 100, 1u << 27, true).has_value());
  CHECK_FALSE(from(16384, 1000, 201, 63, 1u << 27).has_value());
  // Equally likely groups, a 16 Ki-key sample's expected frequencies: at 2^16 groups (d 14,497,
  // f1 12,760, f2 1,595) Chao1 decides within its error; at 2^20 (d 16,256, f1 16,128, f2 127)
  // its error is far above the bound.
  const auto g16 = from(16384, 14'497, 12'760, 1'595, 1u << 27);
  REQUIRE(g16.has_value());
  CHECK(double(g16->groups) == doctest::Approx(65536.0).epsilon(0.02));
  CHECK(g16->relative_error > 0.015);
  CHECK(g16->relative_error < 0.025);
  CHECK_FALSE(from(16384, 16'256, 16'128, 127, 1u << 27).has_value());
  // The sample is the input: its distinct count, exactly.
  CHECK(from(500, 400, 399, 1, 500)->groups == 400u);
  CHECK_FALSE(from(0, 0, 0, 0, 100).has_value());
  CHECK(detail::chao1_variance(10, 0) == std::numeric_limits<double>::infinity());
}

TEST_CASE("stage 2's error: the count's error grown by the fit's slope, as the distinct count's derivative gives it") {
  // 2^18 rows of 2^20 equally likely groups: 8.3 times the sketch's 0.8%.
  const double at_quarter = detail::fit_relative_error(detail::sketch_relative_error, 1 << 18, 1 << 20);
  CHECK(at_quarter == doctest::Approx(8.3 * detail::sketch_relative_error).epsilon(0.01));
  CHECK(detail::sketch_relative_error == doctest::Approx(1.04 / 128));
  // Against a numerical derivative of the expected distinct count, over a range of samples.
  for (const double x : {0.05, 0.25, 1.0, 4.0, 16.0}) {
    CAPTURE(x);
    const double groups = 1e6;
    const double n = x * groups;
    const double d = detail::expected_distinct(groups, n);
    const double h = 1e-4 * groups;
    const double slope = (detail::expected_distinct(groups + h, n) - detail::expected_distinct(groups - h, n)) / (2 * h);
    CHECK(detail::fit_relative_error(0.01, n, groups) == doctest::Approx(0.01 * (d / groups) / slope).epsilon(1e-3));
  }
  // The more rows per group, the smaller: a sample that repeats every key pins G down.
  CHECK(detail::fit_relative_error(0.01, 1 << 22, 1 << 20) < detail::fit_relative_error(0.01, 1 << 20, 1 << 20));
  CHECK(detail::fit_relative_error(0.01, 0, 1 << 20) == 0);
  CHECK(detail::fit_relative_error(0.01, 1 << 20, 0) == 0);

  // Stage 2 reports it where the fit alone decides: 2^18 of 2^27 rows from 2^20 equally likely
  // groups. With a frequent key set aside (half the rows, the rest over 2^18 groups), none: the
  // share's error dominates.
  const double groups = double(1 << 20);
  detail::sketch_evidence e;
  e.rows = std::uint64_t{1} << 27;
  e.sample_rows = std::uint64_t{1} << 18;
  e.sub_rows = std::uint64_t{1} << 16;
  e.sample_distinct = detail::expected_distinct(groups, double(e.sample_rows));
  e.sub_distinct = detail::expected_distinct(groups, double(e.sub_rows));
  const auto alone = detail::estimate_from_sketch(e, {});
  REQUIRE(alone.groups.has_value());
  CHECK(double(*alone.groups) == doctest::Approx(groups).epsilon(0.01));
  CHECK(alone.relative_error == doctest::Approx(at_quarter).epsilon(0.02));
  e.sample_distinct = 1 + detail::expected_distinct(groups / 4, double(e.sample_rows) / 2);
  e.sub_distinct = 1 + detail::expected_distinct(groups / 4, double(e.sub_rows) / 2);
  const auto beside_hot_key = detail::estimate_from_sketch(e, detail::frequent_keys_summary{1, 0.5});
  REQUIRE(beside_hot_key.groups.has_value());
  CHECK(beside_hot_key.relative_error == 0);
  // The hot key's rows counted in the sketch's own rows (sketch_evidence::frequent, the
  // device's counts[2]) set it aside instead of a key sample's share two points off.
  const auto misstated = detail::estimate_from_sketch(e, detail::frequent_keys_summary{1, 0.48});
  REQUIRE(misstated.groups.has_value());
  CHECK(std::abs(double(*misstated.groups) - double(*beside_hot_key.groups)) > 0.02 * double(*beside_hot_key.groups));
  e.frequent = detail::frequent_keys_count{e.sample_rows / 2, 1};
  const auto counted = detail::estimate_from_sketch(e, detail::frequent_keys_summary{1, 0.48});
  REQUIRE(counted.groups.has_value());
  CHECK(*counted.groups == *beside_hot_key.groups);
}

TEST_CASE("stage 2: the equally-likely fit, accepted only when both sample sizes agree with it") {
  detail::sketch_evidence e;
  e.rows = 1u << 26;
  e.sample_rows = 1u << 21;
  e.sub_rows = 1u << 19;
  // 2^18 equally likely groups: the counts the model predicts for both sizes.
  const double groups = 1u << 18;
  e.sample_distinct = detail::expected_distinct(groups, double(e.sample_rows));
  e.sub_distinct = detail::expected_distinct(groups, double(e.sub_rows));
  const auto fit = detail::estimate_from_sketch(e, {});
  REQUIRE(fit.groups.has_value());
  CHECK(double(*fit.groups) == doctest::Approx(groups).epsilon(0.01));
  // The smaller sample sees as many keys as the larger one (a systematic sample of sorted runs):
  // no equally-likely G fits both, so no estimate.
  e.sub_distinct = e.sample_distinct;
  CHECK_FALSE(detail::estimate_from_sketch(e, {}).groups.has_value());
  // No repetition in the sample: nothing to fit.
  e.sample_distinct = double(e.sample_rows);
  e.sub_distinct = double(e.sub_rows);
  CHECK_FALSE(detail::estimate_from_sketch(e, {}).groups.has_value());
  // The runs bound caps a fit: the sample fits 2^22 equally likely groups (about 2^22 in all
  // 2^26 rows), but one row in 32 differs from its right neighbour: at most ~2^21 runs.
  e.sample_distinct = detail::expected_distinct(double(1u << 22), double(e.sample_rows));
  e.sub_distinct = detail::expected_distinct(double(1u << 22), double(e.sub_rows));
  const auto uncapped = detail::estimate_from_sketch(e, {});
  REQUIRE(uncapped.groups.has_value());
  CHECK(double(*uncapped.groups) == doctest::Approx(double(1u << 22)).epsilon(0.01));
  e.neighbour_pairs = 1u << 20;
  e.neighbour_equal = e.neighbour_pairs - e.neighbour_pairs / 32;
  const auto capped = detail::estimate_from_sketch(e, {});
  REQUIRE(capped.groups.has_value());
  CHECK(double(*capped.groups) == doctest::Approx(double(1u << 21)).epsilon(0.03));
  // Never below the sample's own distinct count.
  e.neighbour_equal = e.neighbour_pairs - e.neighbour_pairs / 1024;
  CHECK(double(*detail::estimate_from_sketch(e, {}).groups) >= e.sample_distinct - 1);
}

TEST_CASE("the staged estimate is within 2x of the true groups on uniform, zipf, heavy-hitter and sorted keys") {
  // 2^21 rows at 2^0 .. 2^22 groups (beyond the rows: most keys then occur once), as the
  // driver estimates device input: stage 1, 2 or a sketch of every key.
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t rows = std::size_t{1} << 21;
  for (const auto d : {distribution::uniform, distribution::zipf, distribution::heavy_hitter,
                       distribution::sorted_runs}) {
    for (unsigned log2 = 0; log2 <= 22; log2 += 2) {
      const std::string distribution_shown = name(d);
      CAPTURE(distribution_shown);
      CAPTURE(log2);
      const auto keys = dense_keys(rows, std::uint64_t{1} << log2, d, rng);
      const double truth = double(exact_distinct(keys));
      const auto estimate = estimate_like_the_driver(keys, false);
      CAPTURE(to_string(estimate.source));
      CAPTURE(estimate.groups);
      CAPTURE(truth);
      CHECK(double(estimate.groups) >= truth / 2);
      CHECK(double(estimate.groups) <= truth * 2);
      // Few groups are decided by the cheapest stage, and so are equally likely groups up to
      // 2^16 (Chao1's error about 2%).
      if (log2 <= 8 || (d == distribution::uniform && log2 <= 16)) {
        CHECK(estimate.source == estimate_source::sample);
      }
      if (estimate.source == estimate_source::sample && estimate.relative_error > 0) {
        CHECK(estimate.relative_error <= detail::sample_max_relative_error);
        CHECK(std::abs(double(estimate.groups) / truth - 1.0) <= 4 * estimate.relative_error);
      }
    }
  }
}

TEST_CASE("device input whose sample shows a power law goes from stage 1 to the sketch of every key") {
  // The ladder of frequencies: 16 frequent keys from 200 down to 25 counts is a power law; a
  // heavy hitter, 15 keys, or 16 keys within a factor 8 of each other are not.
  using frequent_list = std::vector<std::pair<std::uint64_t, std::uint32_t>>;
  frequent_list ladder;
  for (std::uint32_t i = 0; i < 16; ++i) ladder.emplace_back(i, 200 / (1 + i / 2));
  CHECK(detail::power_law_sample(ladder));
  CHECK_FALSE(detail::power_law_sample(frequent_list(ladder.begin(), ladder.end() - 1)));
  CHECK_FALSE(detail::power_law_sample(frequent_list{{0, 14000}}));
  frequent_list even;
  for (std::uint32_t i = 0; i < 16; ++i) even.emplace_back(i, 200 - i * 10);
  CHECK_FALSE(detail::power_law_sample(even));

  // As the driver estimates, counting the strided sketches: zipf keys skip them on device input
  // (and keep them on host input, which has no sketch of every key); heavy-hitter keys keep them.
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t rows = std::size_t{1} << 21;
  for (const auto d : {distribution::zipf, distribution::heavy_hitter}) {
    for (const unsigned log2 : {16u, 20u}) {
      const std::string distribution_shown = name(d);
      CAPTURE(distribution_shown);
      CAPTURE(log2);
      const auto keys = dense_keys(rows, std::uint64_t{1} << log2, d, rng);
      const auto key_of = [&keys](std::uint64_t row) { return std::uint64_t{keys[row]}; };
      CHECK(detail::power_law_sample(profile_like_the_driver(key_of, rows).frequent) == (d == distribution::zipf));
      for (const bool host_input : {false, true}) {
        CAPTURE(host_input);
        sketch_calls calls;
        const auto estimate = estimate_like_the_driver(key_of, rows, host_input, &calls);
        const double truth = double(exact_distinct(keys));
        CAPTURE(to_string(estimate.source));
        CAPTURE(estimate.groups);
        CAPTURE(truth);
        CHECK(double(estimate.groups) >= truth / 2);
        CHECK(double(estimate.groups) <= truth * 2);
        if (d == distribution::zipf && !host_input) {
          CHECK(calls.strided == 0);
          CHECK(calls.every == 1);
          CHECK(estimate.source == estimate_source::full_sketch);
        } else {
          CHECK(calls.strided >= 1);
        }
      }
    }
  }
}

TEST_CASE("the host input's extrapolation: uniform, sorted, zipf and heavy-hitter keys within 2x, never above the rows") {
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t rows = std::size_t{1} << 21;
  for (const auto d : {distribution::uniform, distribution::sorted_runs, distribution::zipf,
                       distribution::heavy_hitter}) {
    for (unsigned log2 = 10; log2 <= 22; log2 += 4) {
      const std::string distribution_name = name(d);
      CAPTURE(distribution_name);
      CAPTURE(log2);
      const auto keys = dense_keys(rows, std::uint64_t{1} << log2, d, rng);
      const double truth = double(exact_distinct(keys));
      const auto estimate = estimate_like_the_driver(keys, true);
      CAPTURE(to_string(estimate.source));
      CAPTURE(estimate.groups);
      CHECK(estimate.groups <= rows);
      CHECK(estimate.groups >= 1);
      // Zipf keys by the power law their sketches fit, heavy-hitter ones with the hot key set
      // aside by its count in the sample.
      CHECK(double(estimate.groups) >= truth / 2);
      CHECK(double(estimate.groups) <= truth * 2);
      if (d == distribution::uniform || d == distribution::sorted_runs) {
        // The error the extrapolation reports (the plan's tolerance follows it) is no smaller
        // than its actual one where its model holds (equally likely keys): within four of them.
        // Sorted keys are bounded by their runs, not fitted: no error is reported.
        CAPTURE(estimate.relative_error);
        if (d == distribution::sorted_runs && estimate.source == estimate_source::extrapolated) {
          CHECK(estimate.relative_error == 0);
        }
        if (d == distribution::uniform && estimate.source == estimate_source::extrapolated &&
            estimate.relative_error > 0) {
          CHECK(std::abs(double(estimate.groups) / truth - 1.0) <= 4 * estimate.relative_error);
        }
      }
    }
  }
}

TEST_CASE("the host's sketch counts the key sample's frequent keys in its sampled rows, and the extrapolation sets them aside by that count") {
  // 2^21 rows, 90% one hot key, the rest over 2^20 groups: the sample's other rows repeat few
  // keys (about 5%), so a misstated share of the hot key (a 16 Ki-key sample's is off by
  // 0.23% of the rows at one standard deviation) would move the fit by as much as those
  // repeats.
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t rows = std::size_t{1} << 21;
  const auto keys = dense_keys(rows, std::uint64_t{1} << 20, distribution::heavy_hitter, rng);
  const auto key_of = [&keys](std::uint64_t row) { return std::uint64_t{keys[row]}; };
  // The hot key, another key of a sampled row, and a key that is in no row.
  const std::uint64_t stride = 2;
  const std::uint64_t sampled = rows / stride;
  std::uint64_t other = sampled / 2;
  while (keys[detail::sketch_row(other, stride)] == 0) ++other;
  const std::vector<std::uint64_t> frequent{0, keys[detail::sketch_row(other, stride)], std::uint64_t{1} << 40};
  std::uint64_t frequent_rows = 0;
  std::set<std::uint64_t> present;
  for (std::uint64_t i = 0; i < sampled; ++i) {
    const std::uint64_t key = keys[detail::sketch_row(i, stride)];
    if (std::find(frequent.begin(), frequent.end(), key) != frequent.end()) {
      ++frequent_rows;
      present.insert(key);
    }
  }
  const auto counted = detail::sketch_host_rows(key_of, rows, stride, sampled, 2, detail::no_prefetch{}, true, frequent);
  REQUIRE(counted.frequent.has_value());
  CHECK(counted.frequent->rows == frequent_rows);
  CHECK(counted.frequent->present == present.size());
  CHECK(counted.frequent->present == 2);
  // Without the linear count (a sample the extrapolation does not read) or without keys, nothing.
  const auto without = detail::sketch_host_rows(key_of, rows, stride, sampled, 2, detail::no_prefetch{}, false, frequent);
  CHECK_FALSE(without.frequent.has_value());
  CHECK_FALSE(detail::sketch_host_rows(key_of, rows, stride, sampled, 2).frequent.has_value());

  detail::sketch_evidence e;
  e.rows = rows;
  e.sample_rows = sampled;
  e.sample_distinct = detail::sketch_estimate(counted.registers);
  e.sub_rows = (sampled + 3) / 4;
  e.sub_distinct = detail::sketch_estimate(counted.sub_registers);
  e.neighbour_pairs = counted.neighbour_pairs;
  e.neighbour_equal = counted.neighbour_equal;
  e.sample_distinct_linear = counted.linear_distinct;
  e.frequent = counted.frequent;
  const double truth = double(exact_distinct(keys));
  const double share = double(frequent_rows) / double(e.sample_rows);
  for (const double misstated : {-0.004, 0.0, 0.004}) {
    CAPTURE(misstated);
    const detail::frequent_keys_summary summary{2, share + misstated};
    const double groups = double(detail::extrapolate_from_sketch(e, summary));
    CAPTURE(groups);
    CAPTURE(truth);
    CHECK(groups == doctest::Approx(truth).epsilon(0.25));
  }
}

TEST_CASE("the host's sketch reads runs of neighbouring rows where the key sample finds neighbours unrelated, strided rows otherwise") {
  // The choice: runs for shuffled keys, strided rows for keys in runs or in order.
  CHECK(detail::host_sketch_run_rows_log2(0.0, false) == detail::host_sketch_run_log2);
  CHECK(detail::host_sketch_run_rows_log2(detail::host_sketch_run_max_share, false) == detail::host_sketch_run_log2);
  CHECK(detail::host_sketch_run_rows_log2(2 * detail::host_sketch_run_max_share, false) == 0);
  CHECK(detail::host_sketch_run_rows_log2(0.0, true) == 0);
  CHECK(detail::host_sketch_run_log2 > 0);

  // A sketch in runs is the sketch of the rows it names, register for register: runs of 8
  // neighbours, one in each 8 strides, placed within them, the last run inside the rows.
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::uint64_t rows = (std::uint64_t{1} << 20) + 77;
  std::vector<std::uint32_t> keys(rows);
  for (auto& k : keys) k = static_cast<std::uint32_t>(rng() % 300'000);
  std::vector<std::atomic<std::uint8_t>> read(rows);
  std::atomic<bool> outside{false};  // the sketch's threads do not assert
  const auto key_of = [&](std::uint64_t row) {
    if (row >= rows) {
      outside = true;
      return std::uint64_t{0};
    }
    read[row].store(1, std::memory_order_relaxed);
    return std::uint64_t{keys[row]};
  };
  const std::uint64_t n = std::uint64_t{1} << 16;
  const std::uint64_t stride = rows / n;
  const unsigned run_log2 = detail::host_sketch_run_log2;
  const auto in_runs = detail::sketch_host_rows(key_of, rows, stride, n, 2, detail::no_prefetch{}, true, {}, run_log2);
  CHECK_FALSE(outside.load());
  std::vector<std::uint32_t> named;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t row = detail::sketch_row(i, stride, run_log2);
    CHECK(row / (stride << run_log2) == i >> run_log2);
    CHECK(read[row].load() == 1);
    named.push_back(keys[row]);
  }
  const auto of_named = detail::sketch_host_keys(named.data(), named.size(), 1, named.size(), 2);
  CHECK(in_runs.registers == of_named.registers);
  CHECK(in_runs.sub_registers == of_named.sub_registers);
  CHECK(in_runs.linear_distinct == of_named.linear_distinct);
  // Rows read beyond those: only the compared rows' right neighbours.
  std::uint64_t read_rows = 0;
  for (const auto& r : read) read_rows += r.load();
  CHECK(read_rows <= n + in_runs.neighbour_pairs);
  CHECK(in_runs.neighbour_pairs > 0);
  // Independent rows repeat keys as often within a run as across runs: the runs are kept.
  CHECK_FALSE(in_runs.runs_rejected);
  CHECK(in_runs.within_pairs == (n / 8) / detail::sketch_run_check_every * 28);
  CHECK(in_runs.across_pairs > 0);
  CHECK_FALSE(detail::runs_cluster(in_runs));
}

TEST_CASE("a sketch whose runs repeat keys more than rows apart do is taken again of strided rows") {
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  const std::uint64_t rows = std::uint64_t{1} << 22;
  const std::uint64_t n = std::uint64_t{1} << 16;
  const std::uint64_t stride = rows / n;
  const auto mix = [seed](std::uint64_t x) { return seeded_mix(x, seed); };
  const unsigned run_log2 = detail::host_sketch_run_log2;
  // Four sources interleaved, a new set of four every 8 rows, each row's source another than
  // its neighbour's: no row has its neighbour's key, but a run of 8 rows holds at most 4 keys.
  std::vector<std::uint64_t> keys(rows);
  std::uint64_t source = 0;
  for (std::uint64_t row = 0; row < rows; ++row) {
    source = (source + 1 + mix(row) % 3) % 4;
    keys[row] = (mix(row / 8) << 2) | source;
  }
  const auto interleaved = [&keys](std::uint64_t row) { return keys[row]; };
  const auto in_runs = detail::sketch_host_rows(interleaved, rows, stride, n, 2, detail::no_prefetch{}, true, {}, run_log2);
  CHECK(in_runs.runs_rejected);
  CHECK(in_runs.within_equal >= in_runs.within_pairs / 8);
  const auto strided = detail::sketch_host_rows(interleaved, rows, stride, n, 2, detail::no_prefetch{}, true);
  CHECK_FALSE(strided.runs_rejected);
  CHECK(in_runs.registers == strided.registers);
  CHECK(in_runs.linear_distinct == strided.linear_distinct);
  // The key sample finds no neighbour with its key, so the driver sketches in runs first; their
  // rejection leaves the estimate the strided rows give. (Keys that repeat only within 8 rows
  // repeat in no strided sample: that estimate reads every sampled key as a new group.)
  const auto profile = profile_like_the_driver(interleaved, rows);
  CHECK(detail::host_sketch_run_rows_log2(profile.runs_share, profile.ordered) == run_log2);
  const auto estimate = estimate_like_the_driver(interleaved, rows, true);
  const auto strided_estimate = estimate_like_the_driver(interleaved, rows, true, nullptr, false);
  CAPTURE(estimate.groups);
  CHECK(estimate.groups == strided_estimate.groups);
  CHECK(estimate.source == strided_estimate.source);

  // Heavy hitters (90% one key) repeat keys within runs as often as across them: kept.
  const auto heavy = [&](std::uint64_t row) {
    const std::uint64_t z = mix(row);
    return (z & 0xff) < 230 ? std::uint64_t{0} : (z >> 8) % (std::uint64_t{1} << 20);
  };
  const auto hot = detail::sketch_host_rows(heavy, rows, stride, n, 2, detail::no_prefetch{}, true, {}, run_log2);
  CHECK_FALSE(hot.runs_rejected);
  CHECK(hot.within_equal > 0);
}

TEST_CASE("the host input's estimate at 2^27 and 2^28 rows, where the sample is 1/128 and 1/256 of them") {
  // Keys made from the row number on the fly (a pseudo-random hash: uniform; the row's share of
  // the groups: sorted runs), so the strided sample reads rows no vector holds.
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  for (const unsigned rows_log2 : {27u, 28u}) {
    const std::uint64_t rows = std::uint64_t{1} << rows_log2;
    for (unsigned log2 = 10; log2 <= 26; log2 += 2) {
      const std::uint64_t groups = std::uint64_t{1} << log2;
      for (const bool sorted : {false, true}) {
        CAPTURE(rows_log2);
        CAPTURE(log2);
        CAPTURE(sorted);
        const auto key_of = [&](std::uint64_t row) -> std::uint64_t {
          if (sorted) return row / (rows / groups);
          return seeded_mix(row, seed) % groups;
        };
        // Uniform draws of `rows` from `groups` values hit this many of them (expected).
        const double truth = sorted ? double(groups) : double(groups) * -std::expm1(-double(rows) / double(groups));
        const auto estimate = estimate_like_the_driver(key_of, rows, true);
        CAPTURE(to_string(estimate.source));
        CAPTURE(estimate.groups);
        CHECK(double(estimate.groups) >= truth / 2);
        CHECK(double(estimate.groups) <= truth * 2);
        CAPTURE(estimate.relative_error);
        if (!sorted && (estimate.source == estimate_source::extrapolated || estimate.source == estimate_source::sketch)) {
          CHECK(estimate.relative_error > 0);  // shuffled keys: independent draws, a fit that decides
          CHECK(std::abs(double(estimate.groups) / truth - 1.0) <= 4 * estimate.relative_error);
        }
        if (sorted && estimate.source == estimate_source::extrapolated) CHECK(estimate.relative_error == 0);
      }
    }
  }
}

TEST_CASE("the key sample's stride: the largest prime at most rows / n, its rows inside the input") {
  const auto prime = [](std::uint64_t p) {
    if (p < 2) return false;
    for (std::uint64_t d = 2; d * d <= p; ++d) {
      if (p % d == 0) return false;
    }
    return true;
  };
  for (const std::uint64_t rows : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{77}, std::uint64_t{16'384},
                                   std::uint64_t{16'385}, std::uint64_t{40'000}, std::uint64_t{65'536},
                                   std::uint64_t{250'000}, std::uint64_t{1} << 27, (std::uint64_t{1} << 36) + 5}) {
    CAPTURE(rows);
    const std::uint64_t n = detail::key_sample_size(rows);
    CHECK(n == std::min<std::uint64_t>(rows, 16'384));
    const std::uint64_t stride = detail::key_sample_stride(rows, n);
    CAPTURE(stride);
    if (n == 0) continue;
    CHECK(stride >= 1);
    CHECK(n * stride <= rows);
    if (rows / n >= 2) {
      CHECK(prime(stride));
      for (std::uint64_t s = stride + 1; s <= rows / n; ++s) CHECK_FALSE(prime(s));
    } else {
      CHECK(stride == 1);
    }
  }
  CHECK(detail::key_sample_stride(std::uint64_t{1} << 27, 16'384) == 8'191);
}

TEST_CASE("the key sample's neighbours tell a sample aliased with a period of the keys") {
  // The rule: more unseen neighbours than the sample's keys seen once predict.
  CHECK_FALSE(detail::sample_aliased(0, 0, 0, 16'384));
  CHECK_FALSE(detail::sample_aliased(1024, 16, 0, 16'384));
  CHECK(detail::sample_aliased(1024, 17, 0, 16'384));
  CHECK_FALSE(detail::sample_aliased(1024, 300, 4'096, 16'384));  // 256 expected
  CHECK(detail::sample_aliased(1024, 400, 4'096, 16'384));
  // Samples of 16 Ki rows at a stride of 7 (as 2^17 rows take) with their right neighbours.
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::uint64_t rows = std::uint64_t{1} << 17;
  const std::uint64_t n = detail::key_sample_size(rows);
  const std::uint64_t stride = detail::key_sample_stride(rows, n);
  REQUIRE(stride == 7);
  const auto profile_of = [&](const auto& key_of) {
    std::vector<std::uint64_t> sample(n), next(n);
    for (std::uint64_t i = 0; i < n; ++i) {
      sample[i] = key_of(i * stride);
      next[i] = key_of(i * stride + 1);
    }
    return detail::profile_sample(std::span<const std::uint64_t>(sample), std::span<const std::uint64_t>(next));
  };
  // A period of 7 rows (days of the week) or of 700: the sample sees one key, or 100, each many
  // times, and every neighbour another.
  for (const std::uint64_t period : {std::uint64_t{7}, std::uint64_t{700}}) {
    CAPTURE(period);
    const auto aliased = profile_of([&](std::uint64_t row) { return seeded_mix(row % period, seed); });
    CHECK(aliased.distinct == period / 7);
    CHECK(aliased.neighbours_checked == 1024);
    CHECK(aliased.neighbours_unseen == 1024);
    CHECK(aliased.aliased);
    CHECK(aliased.keys.empty());
    CHECK(aliased.frequent.empty());
    CHECK(aliased.hottest_key_share == 0.0);
    // The estimate goes past stage 1 to the sketches, whose rows are drawn within each stride.
    const auto estimate = estimate_like_the_driver([&](std::uint64_t row) { return seeded_mix(row % period, seed); },
                                                   rows, true);
    CHECK(estimate.source != estimate_source::sample);
    CHECK(double(estimate.groups) >= double(period) / 2);
    CHECK(double(estimate.groups) <= double(period) * 2);
  }
  // Shuffled keys over 300 groups, heavy hitters, keys in sorted runs, and a period of 8 (which
  // the prime stride sees whole): not aliased, and stage 1 decides.
  const auto uniform = key_dictionary<std::uint64_t>(300, rng);
  std::vector<std::uint64_t> shuffled(rows), heavy(rows);
  for (auto& k : shuffled) k = uniform[rng() % uniform.size()];
  for (auto& k : heavy) k = rng() % 10 < 9 ? 0 : uniform[rng() % uniform.size()];
  const auto sorted = [&](std::uint64_t row) { return row * 300 / rows; };
  for (const auto& [name_shown, profile] :
       {std::pair{"uniform", profile_of([&](std::uint64_t row) { return shuffled[row]; })},
        std::pair{"heavy", profile_of([&](std::uint64_t row) { return heavy[row]; })},
        std::pair{"sorted", profile_of(sorted)},
        std::pair{"period 8", profile_of([&](std::uint64_t row) { return row % 8; })}}) {
    CAPTURE(name_shown);
    CHECK(profile.neighbours_checked == 1024);
    CHECK_FALSE(profile.aliased);
    CHECK_FALSE(profile.keys.empty());
    CHECK(detail::estimate_from_frequencies(profile.sample_size, profile.distinct, profile.once, profile.twice, rows)
              .has_value());
  }
  // Rows alternating between one key and 5,000 others: the sampled rows alternate too (an odd
  // stride), and their neighbours hold an unseen key as often as Good-Turing says. Checked at
  // every 16th sampled row, every checked row held the one key and its neighbour one of the
  // others: twice as many unseen, and the sample was called aliased.
  std::vector<std::uint64_t> alternating(rows);
  for (std::uint64_t row = 0; row < rows; ++row) alternating[row] = row % 2 == 0 ? 777 : 1'000 + rng() % 5'000;
  const auto mixed = profile_of([&](std::uint64_t row) { return alternating[row]; });
  CAPTURE(mixed.neighbours_unseen);
  CAPTURE(mixed.once);
  CHECK(mixed.neighbours_checked == 1024);
  CHECK_FALSE(mixed.aliased);
  CHECK(mixed.hottest_key_share > 0.45);
}

TEST_CASE("keys periodic in the row (row % G): the estimate within 2x of G at 2^27 rows, host and device input") {
  // Round-robin ids: every row's key is its row's place in a period of G rows, as dense ids
  // 0..G-1 or as scattered ones. A sample at a power-of-two stride that shares factors with G
  // sees a fraction of the keys: before the key sample's prime stride and the sketches' rows
  // drawn within each stride, 2^20 groups were estimated at 128 (device input) and 2^24 at
  // 2,048. Keys made on the fly, as above.
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  const std::uint64_t rows = std::uint64_t{1} << 27;
  for (const std::uint64_t groups : {std::uint64_t{1} << 10, std::uint64_t{1} << 12, std::uint64_t{1} << 16,
                                     std::uint64_t{1} << 20, std::uint64_t{1} << 24, std::uint64_t{1'000'000},
                                     std::uint64_t{3} << 16, std::uint64_t{8'191} * 3}) {
    for (const bool scattered : {false, true}) {
      for (const bool host_input : {true, false}) {
        CAPTURE(groups);
        CAPTURE(scattered);
        CAPTURE(host_input);
        const auto key_of = [&](std::uint64_t row) -> std::uint64_t {
          return scattered ? seeded_mix(row % groups, seed) : row % groups;
        };
        const auto estimate = estimate_like_the_driver(key_of, rows, host_input);
        CAPTURE(to_string(estimate.source));
        CAPTURE(estimate.groups);
        CHECK(double(estimate.groups) >= double(groups) / 2);
        CHECK(double(estimate.groups) <= double(groups) * 2);
      }
    }
  }
}

TEST_CASE("keys periodic in the row: group_by exact, its table sized within 2x at the start and never grown, host and device input") {
  // 2^23 + 77 rows: the device's strided sketch reads one row in each two (device_sketch_rows),
  // placed by the kernel as the host's sketch places it: the device's estimate must be the
  // host's of the same rows. Periods of 2^12 and 2^20 rows, and 3 x 509, a multiple of the key
  // sample's stride at these rows: the sample sees 3 keys, its rows' neighbours 3 others.
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  const std::size_t rows = (std::size_t{1} << 23) + 77;
  REQUIRE(detail::key_sample_stride(rows, detail::key_sample_size(rows)) == 509);
  auto [v] = columns<1>;
  const std::vector<std::uint32_t> values(rows, 1);
  cl::Buffer values_dev = ctx().buffer(rows * 4, "values");
  cl::Buffer keys_dev = ctx().buffer(rows * 4, "keys");
  REQUIRE(ctx().compute_queue().enqueueWriteBuffer(values_dev, CL_TRUE, 0, rows * 4, values.data()) == CL_SUCCESS);
  for (const std::uint64_t period : {std::uint64_t{1} << 12, std::uint64_t{1} << 20, std::uint64_t{509} * 3}) {
    CAPTURE(period);
    std::vector<std::uint32_t> keys(rows);
    for (std::size_t row = 0; row < rows; ++row) keys[row] = static_cast<std::uint32_t>(seeded_mix(row % period, seed));
    REQUIRE(ctx().compute_queue().enqueueWriteBuffer(keys_dev, CL_TRUE, 0, rows * 4, keys.data()) == CL_SUCCESS);
    const auto on_device = group_by(device_column<std::uint32_t>(keys_dev, rows),
                                    device_column<std::uint32_t>(values_dev, rows), select(sum(v)));
    const auto on_host = group_by(keys, values, select(sum(v)));
    const auto truth = exact_distinct(keys);
    for (const auto* r : {&on_device, &on_host}) {
      CAPTURE(r == &on_device);
      CAPTURE(r->stats.expected_groups);
      CAPTURE(to_string(r->stats.estimate_source));
      REQUIRE(r->size() == truth);
      std::uint64_t total = 0;
      for (const auto s : r->column<0>()) total += s;
      CHECK(total == rows);
      CHECK(double(r->stats.expected_groups) >= double(truth) / 2);
      CHECK(double(r->stats.expected_groups) <= double(truth) * 2);
      CHECK(r->stats.table_growths == 0);
    }
    // The device's sketch reads strided rows, never runs.
    const auto host = estimate_like_the_driver([&keys](std::uint64_t row) { return std::uint64_t{keys[row]}; }, rows,
                                               false, nullptr, false);
    CHECK(on_device.stats.estimate_source == host.source);
    CHECK(on_device.stats.expected_groups == host.groups);
  }
}

TEST_CASE("the host input's estimate of zipf and heavy-hitter keys at 2^27 rows: within 2x, where the sample is 1/128 of them") {
  // Keys made from the row number on the fly, as above: zipf (s = 1.1) by the inverse of its
  // continuous distribution, or 90% one hot key and the rest uniform. The truth is counted.
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  const std::uint64_t rows = std::uint64_t{1} << 27;
  for (const unsigned log2 : {16u, 20u, 24u}) {
    const std::uint64_t groups = std::uint64_t{1} << log2;
    const double top = std::pow(double(groups) + 1.0, 1.0 - 1.1) - 1.0;
    for (const bool zipf : {true, false}) {
      CAPTURE(log2);
      CAPTURE(zipf);
      const auto key_of = [&](std::uint64_t row) -> std::uint64_t {
        const std::uint64_t z = seeded_mix(row, seed);
        if (zipf) {
          const double u = double(z >> 11) * 0x1.0p-53;
          const double rank = std::pow(u * top + 1.0, 1.0 / (1.0 - 1.1)) - 1.0;
          return std::min<std::uint64_t>(static_cast<std::uint64_t>(rank), groups - 1);
        }
        return (z & 0xff) < 230 ? 0 : (z >> 8) % groups;
      };
      std::vector<bool> seen(groups, false);
      std::uint64_t truth = 0;
      for (std::uint64_t row = 0; row < rows; ++row) {
        const std::uint64_t key = key_of(row);
        if (!seen[key]) {
          seen[key] = true;
          ++truth;
        }
      }
      sketch_calls calls;
      const auto estimate = estimate_like_the_driver(key_of, rows, true, &calls);
      CAPTURE(to_string(estimate.source));
      CAPTURE(estimate.groups);
      CAPTURE(truth);
      CHECK(double(estimate.groups) >= double(truth) / 2);
      CHECK(double(estimate.groups) <= double(truth) * 2);
      // One strided sketch: a power law's first never decides, and a hot key's repeats in the
      // key sample say nothing of the other rows'; never the sketch of every row (the device's).
      CHECK(calls.strided == 1);
      CHECK(calls.every == 0);
    }
  }
}

TEST_CASE("the power law's fit: the exponent and keys that drew two samples' distinct counts, nothing where none did") {
  // Counts made by the law itself are fitted back; those of equally likely keys (a flat law
  // that saturates) and of a sample without repetition are not a power law's.
  for (const double s : {0.7, 1.1, 1.6}) {
    for (const double keys : {1e4, 1e6, 1e8}) {
      CAPTURE(s);
      CAPTURE(keys);
      const double small = detail::zipf_distinct(s, keys, 1 << 18);
      const double large = detail::zipf_distinct(s, keys, 1 << 20);
      if (large >= detail::fit_max_distinct_share * (1 << 20)) continue;
      const auto law = detail::fit_zipf(small, 1 << 18, large, 1 << 20);
      REQUIRE(law.has_value());
      CHECK(law->exponent == doctest::Approx(s).epsilon(0.01));
      // The rows' count is what matters: a law drawing almost every key hides how many remain.
      const double rows = std::ldexp(1.0, 27);
      CHECK(detail::zipf_distinct(law->exponent, law->keys, rows) ==
            doctest::Approx(detail::zipf_distinct(s, keys, rows)).epsilon(0.02));
    }
  }
  // Equally likely keys: 2^24 of them draw 1,015,000 of 2^20 rows and 258,000 of 2^18; no
  // exponent from 0.3 up grows that evenly.
  const double g = std::ldexp(1.0, 24);
  CHECK_FALSE(detail::fit_zipf(detail::expected_distinct(g, 1 << 18), 1 << 18, detail::expected_distinct(g, 1 << 20),
                               1 << 20)
                  .has_value());
  CHECK_FALSE(detail::fit_zipf(1 << 18, 1 << 18, 1 << 20, 1 << 20).has_value());  // no repetition
  CHECK_FALSE(detail::fit_zipf(0, 1 << 18, 100, 1 << 20).has_value());
}

TEST_CASE("the strided sketch takes byte registers only where the sample bounds the groups below 2^13") {
  // Chao1's d + f1^2 / (2 f2) from the sample's frequencies; without keys seen twice, only a
  // sample with no key seen once bounds them.
  CHECK(detail::byte_sketch_registers(817, 330, 264));      // 90% one key, 1,023 others: about 1,023
  CHECK_FALSE(detail::byte_sketch_registers(1'600, 1'600, 0));  // every cold key seen once: no bound
  CHECK_FALSE(detail::byte_sketch_registers(10'300, 6'000, 2'600));  // uniform, 16 Ki groups
  CHECK(detail::byte_sketch_registers(8'191, 0, 0));
  CHECK_FALSE(detail::byte_sketch_registers(8'192, 0, 0));
  CHECK_FALSE(detail::byte_sketch_registers(4'000, 3'000, 1));  // 4,000 + 4.5 M
}

TEST_CASE_TEMPLATE("the device's sketches are the host's, register for register", Key, std::uint32_t, std::int64_t) {
  // Queries of 2^20 rows with no hint: uniform keys over 500,000 groups (too many for the key
  // sample's Chao1 to decide) run stage 2 on the device over every row (2^20 <= 2^22 sketched
  // rows, the sampled kernel), heavy-hitter keys over 4,096 groups the same with byte registers
  // (their sample bounds the groups below 2^13, but not within stage 1's error); zipf keys show a
  // power law in the key sample and go to the sketch of every row (gpuagg_sketch_every). Each
  // estimate must equal the one the host's sketches of the same rows give. The rows are not a
  // multiple of any grid: the sketch of every row takes four rows a step, then the rest.
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t rows = (std::size_t{1} << 20) + 77;
  const std::vector<std::int32_t> values(rows, 1);
  cl::Buffer keys_dev = ctx().buffer(rows * sizeof(Key), "keys");
  cl::Buffer values_dev = ctx().buffer(rows * sizeof(std::int32_t), "values");
  REQUIRE(ctx().compute_queue().enqueueWriteBuffer(values_dev, CL_TRUE, 0, rows * sizeof(std::int32_t), values.data()) ==
          CL_SUCCESS);
  struct sketch_case {
    distribution keys;
    std::size_t groups;
    estimate_source source;
  };
  for (const auto& c : {sketch_case{distribution::uniform, 500'000, estimate_source::sketch},
                        sketch_case{distribution::heavy_hitter, 4'096, estimate_source::sketch},
                        sketch_case{distribution::zipf, 60'000, estimate_source::full_sketch}}) {
    const std::string distribution_shown = name(c.keys);
    CAPTURE(distribution_shown);
    const auto dictionary = key_dictionary<Key>(c.groups, rng);  // the extremes and the empty marker among them
    const auto keys = draw_keys(dictionary, rows, c.keys, rng);
    REQUIRE(ctx().compute_queue().enqueueWriteBuffer(keys_dev, CL_TRUE, 0, rows * sizeof(Key), keys.data()) ==
            CL_SUCCESS);
    const auto r = group_by(device_column<Key>(keys_dev, rows), device_column<std::int32_t>(values_dev, rows),
                            select(count()));
    REQUIRE(r.size() == exact_distinct(keys));
    const auto host = estimate_like_the_driver(
        [&keys](std::uint64_t row) { return std::uint64_t{static_cast<std::make_unsigned_t<Key>>(keys[row])}; }, rows,
        false);
    CHECK(r.stats.estimate_source == c.source);
    CHECK(host.source == c.source);
    CHECK(r.stats.expected_groups == host.groups);
  }
}

TEST_CASE("the device's sketches of a key of two columns are the host's of its packed words") {
  // keys(a, b) of two uint32 columns: the sketch kernels take the key's columns as several
  // parameters, and hash the packed word a << 32 | b. Uniform keys over 500,000 groups run the
  // 32-bit registers, heavy-hitter keys over 4,096 groups the byte registers.
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t rows = std::size_t{1} << 20;
  const std::vector<std::int32_t> values(rows, 1);
  cl::Buffer a_dev = ctx().buffer(rows * 4, "a");
  cl::Buffer b_dev = ctx().buffer(rows * 4, "b");
  cl::Buffer values_dev = ctx().buffer(rows * 4, "values");
  REQUIRE(ctx().compute_queue().enqueueWriteBuffer(values_dev, CL_TRUE, 0, rows * 4, values.data()) == CL_SUCCESS);
  for (const auto& [d, groups] : {std::pair{distribution::uniform, std::size_t{500'000}},
                                  std::pair{distribution::heavy_hitter, std::size_t{4'096}}}) {
    const std::string distribution_shown = name(d);
    CAPTURE(distribution_shown);
    const auto words = draw_keys(key_dictionary<std::uint64_t>(groups, rng), rows, d, rng);
    std::vector<std::uint32_t> a(rows), b(rows);
    for (std::size_t i = 0; i < rows; ++i) {
      a[i] = static_cast<std::uint32_t>(words[i] >> 32);
      b[i] = static_cast<std::uint32_t>(words[i]);
    }
    REQUIRE(ctx().compute_queue().enqueueWriteBuffer(a_dev, CL_TRUE, 0, rows * 4, a.data()) == CL_SUCCESS);
    REQUIRE(ctx().compute_queue().enqueueWriteBuffer(b_dev, CL_TRUE, 0, rows * 4, b.data()) == CL_SUCCESS);
    const auto r = group_by(keys(device_column<std::uint32_t>(a_dev, rows), device_column<std::uint32_t>(b_dev, rows)),
                            device_column<std::int32_t>(values_dev, rows), select(count()));
    REQUIRE(r.size() == exact_distinct(words));
    const auto host = estimate_like_the_driver([&words](std::uint64_t row) { return words[row]; }, rows, false);
    CHECK(r.stats.estimate_source == estimate_source::sketch);
    CHECK(host.source == estimate_source::sketch);
    CHECK(r.stats.expected_groups == host.groups);
  }
}

TEST_CASE("the key sample of three and four device key columns is the host input's") {
  // One rectangle read per column (driver/group_estimate.hpp). The sample decides the estimate
  // at these group counts (stage 1), so a column read wrong or late shows as another estimate
  // than host input's, which reads the same rows on the host. The columns are written with
  // non-blocking writes on the compute queue, which the reads must follow.
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t rows = std::size_t{1} << 18;
  const std::vector<std::int32_t> values(rows, 1);
  cl::Buffer values_dev = ctx().buffer(rows * 4, "values");
  REQUIRE(ctx().compute_queue().enqueueWriteBuffer(values_dev, CL_TRUE, 0, rows * 4, values.data()) == CL_SUCCESS);
  const auto to_device = [](const auto& host) {
    using T = typename std::decay_t<decltype(host)>::value_type;
    cl::Buffer b = ctx().buffer(host.size() * sizeof(T), "a key column");
    REQUIRE(ctx().compute_queue().enqueueWriteBuffer(b, CL_FALSE, 0, host.size() * sizeof(T), host.data()) ==
            CL_SUCCESS);
    return device_column<T>(b, host.size());
  };
  for (const std::size_t groups : {std::size_t{300}, std::size_t{3'000}}) {
    CAPTURE(groups);
    std::vector<std::uint8_t> a(rows);
    std::vector<std::uint16_t> b(rows), d(rows);
    std::vector<std::uint32_t> c(rows);
    for (std::size_t i = 0; i < rows; ++i) {
      const std::uint64_t g = rng() % groups;
      a[i] = static_cast<std::uint8_t>(g * 37);
      b[i] = static_cast<std::uint16_t>(g * 7919);
      c[i] = static_cast<std::uint32_t>(g * 2654435761u);
      d[i] = static_cast<std::uint16_t>(g);
    }
    const auto host3 = group_by(keys(a, b, c), values, select(count()));
    const auto dev3 = group_by(keys(to_device(a), to_device(b), to_device(c)),
                               device_column<std::int32_t>(values_dev, rows), select(count()));
    REQUIRE(dev3.size() == host3.size());
    CHECK(dev3.size() == groups);
    CHECK(dev3.stats.estimate_source == host3.stats.estimate_source);
    CHECK(dev3.stats.expected_groups == host3.stats.expected_groups);
    const auto host4 = group_by(keys(b, d, b, d), values, select(count()));
    const auto dev4 = group_by(keys(to_device(b), to_device(d), to_device(b), to_device(d)),
                               device_column<std::int32_t>(values_dev, rows), select(count()));
    REQUIRE(dev4.size() == host4.size());
    CHECK(dev4.size() == groups);
    CHECK(dev4.stats.estimate_source == host4.stats.estimate_source);
    CHECK(dev4.stats.expected_groups == host4.stats.expected_groups);
  }
}

TEST_CASE("a query's planned groups: within 2x of the result's groups for each distribution and input kind") {
  // 2^22 rows: host input sketches a strided 2^20 of them, device input every other row.
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t rows = std::size_t{1} << 22;
  const std::vector<std::uint32_t> values(rows, 1);
  cl::Buffer values_dev = ctx().buffer(rows * sizeof(std::uint32_t), "values");
  REQUIRE(ctx().compute_queue().enqueueWriteBuffer(values_dev, CL_TRUE, 0, rows * sizeof(std::uint32_t),
                                                   values.data()) == CL_SUCCESS);
  cl::Buffer keys_dev = ctx().buffer(rows * sizeof(std::uint64_t), "keys");
  auto [v] = columns<1>;
  for (const auto d : {distribution::uniform, distribution::zipf, distribution::heavy_hitter,
                       distribution::sorted_runs}) {
    for (const std::size_t groups : {std::size_t{50}, std::size_t{20'000}, std::size_t{600'000}}) {
      const std::string distribution_shown = name(d);
      CAPTURE(distribution_shown);
      CAPTURE(groups);
      const auto dictionary = key_dictionary<std::uint64_t>(groups, rng);
      const auto keys = draw_keys(dictionary, rows, d, rng);
      REQUIRE(ctx().compute_queue().enqueueWriteBuffer(keys_dev, CL_TRUE, 0, rows * sizeof(std::uint64_t),
                                                       keys.data()) == CL_SUCCESS);
      const auto on_device = group_by(device_column<std::uint64_t>(keys_dev, rows),
                                      device_column<std::uint32_t>(values_dev, rows), select(sum(v)));
      const auto on_host = group_by(keys, values, select(sum(v)));
      const double truth = double(on_device.size());
      REQUIRE(on_host.size() == on_device.size());
      CAPTURE(on_device.stats.expected_groups);
      CAPTURE(to_string(on_device.stats.estimate_source));
      CHECK(double(on_device.stats.expected_groups) >= truth / 2);
      CHECK(double(on_device.stats.expected_groups) <= truth * 2);
      CHECK(on_device.stats.expected_groups_estimated);
      // Every row counted once: the sums of ones add up to the rows.
      std::uint64_t total = 0;
      for (const auto s : on_host.column<0>()) total += s;
      CHECK(total == rows);
      if (d == distribution::uniform || d == distribution::sorted_runs) {
        CAPTURE(on_host.stats.expected_groups);
        CHECK(double(on_host.stats.expected_groups) >= truth / 2);
        CHECK(double(on_host.stats.expected_groups) <= truth * 2);
      }
      // Sorted keys over 600,000 groups: runs of about 7 rows, whose ends the key sample's
      // neighbours count (about 2,300 of 16 Ki), read from the device's columns and the host's.
      if (d == distribution::sorted_runs && groups == 600'000) {
        CHECK(on_device.stats.estimate_source == estimate_source::runs);
        CHECK(on_host.stats.estimate_source == estimate_source::runs);
      }
    }
  }
}

TEST_CASE("a dense range decides at stage 1: skewed keys over a few thousand ids need no sketch") {
  // The rule: at most 2^14 keys in the sample's range (box), at least a quarter of them seen.
  CHECK(detail::dense_range_groups(16384, 1000, 4000) == std::optional<std::uint64_t>{4000});
  CHECK_FALSE(detail::dense_range_groups(16384, 999, 4000).has_value());
  CHECK(detail::dense_range_groups(16384, 16384, 16384) == std::optional<std::uint64_t>{16384});
  CHECK_FALSE(detail::dense_range_groups(16384, 16384, 16385).has_value());
  CHECK_FALSE(detail::dense_range_groups(0, 0, 0).has_value());
  CHECK_FALSE(detail::dense_range_groups(16384, 16384, 0).has_value());
  CHECK_FALSE(detail::dense_range_groups(16384, 16384, 3.4e38).has_value());
  CHECK(detail::dense_range_groups(1, 1, 1) == std::optional<std::uint64_t>{1});
  // The sample's box: one key column's range of words, of two packed columns each column's.
  {
    std::vector<std::uint64_t> one{~std::uint64_t{0}, ~std::uint64_t{0}};
    const auto top = detail::profile_sample(one);
    CHECK(top.box.keys() == 1);
    CHECK(top.box.lowest == ~std::uint64_t{0});
    // Keys (a, b) of a in [3, 34], b in [100, 131] packed as a << 32 | b: 2^37 words apart,
    // 1024 keys in their box.
    using pair = packed_key<std::uint32_t, std::uint32_t>;
    std::vector<std::uint64_t> pairs;
    for (std::uint64_t a = 3; a < 35; ++a) {
      for (std::uint64_t b = 100; b < 132; ++b) pairs.push_back(pair::to_bits({std::uint32_t(a), std::uint32_t(b)}));
    }
    const auto flat = detail::profile_sample(pairs);
    CHECK(flat.box.fields == 1);
    CHECK_FALSE(detail::dense_range_groups(flat.sample_size, flat.distinct, flat.box.keys()).has_value());
    const auto boxed = detail::profile_sample(std::span<const std::uint64_t>(pairs), {}, pair::layout);
    CHECK(boxed.box.fields == 2);
    CHECK(boxed.box.keys() == 1024);
    CHECK(boxed.box.lowest == pair::to_bits({3, 100}));
    CHECK(detail::dense_range_groups(boxed.sample_size, boxed.distinct, boxed.box.keys()) ==
          std::optional<std::uint64_t>{1024});
    // A signed range across zero: int32 keys -1 to 998 (words 0xFFFFFFFF and 0 to 998) are 1000
    // keys from -1, not 2^32 words from 0; a column of int16 values -3 to 4 beside one of 16
    // values is a box of 8 x 16 keys.
    std::vector<std::uint32_t> ids;
    for (std::int32_t k = -1; k < 999; ++k) ids.push_back(static_cast<std::uint32_t>(k));
    const auto around_zero = detail::profile_sample(ids);
    CHECK(around_zero.box.keys() == 1000);
    CHECK(around_zero.box.lowest == 0xFFFFFFFFu);
    CHECK(around_zero.highest - around_zero.lowest == 0xFFFFFFFFu);
    CHECK(detail::dense_range_groups(around_zero.sample_size, around_zero.distinct, around_zero.box.keys()) ==
          std::optional<std::uint64_t>{1000});
    using mixed = packed_key<std::int16_t, std::uint8_t>;
    std::vector<std::uint32_t> words;
    for (int a = -3; a <= 4; ++a) {
      for (int b = 200; b < 216; ++b) words.push_back(mixed::to_bits({std::int16_t(a), std::uint8_t(b)}));
    }
    const auto signed_box = detail::profile_sample(std::span<const std::uint32_t>(words), {}, mixed::layout);
    CHECK(signed_box.box.keys() == 8 * 16);
    CHECK(signed_box.box.lowest == mixed::to_bits({-3, 200}));
    // Values that wrap past an unsigned column's largest (250 to 255, then 0 to 5 of a uint8
    // column) are in order in the same view: 12 keys from 250.
    using bytes = packed_key<std::uint8_t, std::uint8_t>;
    std::vector<std::uint32_t> wrapped;
    for (int a = 250; a < 262; ++a) wrapped.push_back(bytes::to_bits({std::uint8_t(a & 0xFF), 7}));
    const auto wrap = detail::profile_sample(std::span<const std::uint32_t>(wrapped), {}, bytes::layout);
    CHECK(wrap.box.keys() == 12);
    CHECK(wrap.box.lowest == bytes::to_bits({250, 7}));
    // Keys spread over the whole word stay as wide in either view.
    std::vector<std::uint32_t> spread{0u, 0x40000000u, 0x80000000u, 0xC0000000u, 0xFFFFFFFFu};
    CHECK(detail::profile_sample(spread).box.keys() >= 0xC0000000u);
  }
  // As the driver estimates device input: zipf and heavy-hitter keys over 2^10 and 2^12 ids ask
  // for no sketch and land within 2x (over 2^14 ids the sample sees fewer than a quarter of
  // them); the same keys 8 apart (a sparse range) are no dense range.
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t rows = std::size_t{1} << 21;
  for (const auto d : {distribution::zipf, distribution::heavy_hitter}) {
    for (const unsigned log2 : {10u, 12u}) {
      const std::string distribution_shown = name(d);
      CAPTURE(distribution_shown);
      CAPTURE(log2);
      auto keys = dense_keys(rows, std::uint64_t{1} << log2, d, rng);
      for (auto& k : keys) k += 5000;  // anywhere in the key type's range
      const auto key_of = [&keys](std::uint64_t row) { return std::uint64_t{keys[row]}; };
      const double truth = double(exact_distinct(keys));
      sketch_calls calls;
      const auto estimate = estimate_like_the_driver(key_of, rows, false, &calls);
      CAPTURE(estimate.groups);
      CAPTURE(truth);
      CHECK(estimate.source == estimate_source::sample);
      CHECK(calls.strided == 0);
      CHECK(calls.every == 0);
      CHECK(double(estimate.groups) >= truth / 2);
      CHECK(double(estimate.groups) <= truth * 2);
      const auto dense = profile_like_the_driver(key_of, rows);
      CHECK(detail::dense_range_groups(dense.sample_size, dense.distinct, dense.box.keys()).has_value());
      for (auto& k : keys) k *= 8;
      const auto sparse = profile_like_the_driver(key_of, rows);
      CHECK_FALSE(detail::dense_range_groups(sparse.sample_size, sparse.distinct, sparse.box.keys()));
    }
  }
}

TEST_CASE("sorted input is counted by its runs: no sketch where the sample sees 64 run ends, within 2x, on host and device input") {
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto check_runs = [](const auto& key_of, std::uint64_t rows, double truth) {
    for (const bool host_input : {false, true}) {
      CAPTURE(host_input);
      sketch_calls calls;
      const auto estimate = estimate_like_the_driver(key_of, rows, host_input, &calls);
      CAPTURE(to_string(estimate.source));
      CAPTURE(estimate.groups);
      CAPTURE(estimate.relative_error);
      CHECK(profile_like_the_driver(key_of, rows).ordered);
      CHECK(estimate.source == estimate_source::runs);
      CHECK(calls.strided == 0);
      CHECK(calls.every == 0);
      CHECK(estimate.relative_error > 0);
      CHECK(estimate.relative_error <= 0.125);
      CHECK(std::abs(double(estimate.groups) / truth - 1.0) <= 4 * estimate.relative_error);
    }
  };
  // Sorted uniform draws (runs of random lengths), ascending and descending: 2^22 rows, 2^15 to
  // 2^21 groups (64 to 4,000 run ends in the sample).
  const std::size_t rows = std::size_t{1} << 22;
  for (const unsigned log2 : {15u, 17u, 19u, 21u}) {
    CAPTURE(log2);
    auto keys = dense_keys(rows, std::uint64_t{1} << log2, distribution::sorted_runs, rng);
    const double truth = double(exact_distinct(keys));
    for (const bool descending : {false, true}) {
      CAPTURE(descending);
      if (descending) std::reverse(keys.begin(), keys.end());
      check_runs([&keys](std::uint64_t row) { return std::uint64_t{keys[row]}; }, rows, truth);
    }
  }
  // 2^27 rows in runs of equal lengths: 101 rows (1.3 M groups) and 7 (19 M). (Runs whose length
  // shares a factor with the sample's stride of 8192 rows, 128 or 100, align with it: no sampled
  // row ends a run, and the stages after it decide.)
  for (const std::uint64_t run : {std::uint64_t{101}, std::uint64_t{7}}) {
    CAPTURE(run);
    const std::uint64_t many = std::uint64_t{1} << 27;
    check_runs([run](std::uint64_t row) { return row / run; }, many, double((many + run - 1) / run));
  }
  // The stages go on where the input is not sorted, or its runs are too long to count.
  const std::uint64_t many = std::uint64_t{1} << 27;
  const std::uint64_t groups = std::uint64_t{1} << 22;
  const auto mix = [seed](std::uint64_t x) { return seeded_mix(x, seed); };
  // Ordered at the sample's stride but shuffled within stretches of 8192 rows (a range of 32
  // keys each): the neighbours descend, and the runs would count far more groups than there are.
  const auto partitioned = [&](std::uint64_t row) { return (row / 8192) * 32 + mix(row) % 32; };
  CHECK_FALSE(profile_like_the_driver(partitioned, many).ordered);
  CHECK(estimate_like_the_driver(partitioned, many, false).source != estimate_source::runs);
  // Shuffled keys.
  const auto shuffled = [&](std::uint64_t row) { return mix(row) % groups; };
  CHECK_FALSE(profile_like_the_driver(shuffled, many).ordered);
  CHECK(estimate_like_the_driver(shuffled, many, false).source != estimate_source::runs);
  // Sorted, about 2^16 groups: runs of 2000 rows, 8 run ends in the sample; stage 2 decides.
  const auto long_runs = [](std::uint64_t row) { return row / 2000; };
  const auto l = profile_like_the_driver(long_runs, many);
  CHECK(l.ordered);
  CHECK(l.neighbour_differ < detail::sorted_min_run_ends);
  CHECK(estimate_like_the_driver(long_runs, many, false).source != estimate_source::runs);
  // One key: ordered, no run end.
  const auto one = profile_like_the_driver([](std::uint64_t) { return std::uint64_t{7}; }, many);
  CHECK(one.ordered);
  CHECK(one.neighbour_differ == 0);
  CHECK_FALSE(detail::sorted_input_groups(one, many).has_value());
}
