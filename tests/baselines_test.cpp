// The comparison baselines (gpuagg/baselines.hpp): Boost.Compute sort + reduce_by_key, and sort
// + atomics in the four variants of the atomics paper's section 3, against the CPU reference
// on fresh random inputs of every key distribution, with extreme keys and values.
//
// PoCL compiles a kernel once per distinct local size, so the whole file uses two work-group
// sizes (64 and 128).
#include <boost/compute/container/vector.hpp>
#include <boost/compute/core.hpp>

#include <algorithm>
#include <utility>

#include <gpuagg/baselines.hpp>

#include "support.hpp"

using namespace gpuagg;
using namespace gpuagg_test;
namespace bl = gpuagg::baselines;

namespace {

template <class K, class V>
struct types {
  using key = K;
  using value = V;
};

const auto aggregates = select(count(), sum(col<0>), min(col<0>), max(col<0>));

template <class K, class V>
using aggregates_bound = bound_query<single_key<K>, std::remove_const_t<decltype(aggregates)>, V>;

template <class K, class V>
auto reference(const std::vector<K>& keys, const std::vector<V>& vals) {
  return reference_group_by<aggregates_bound<K, V>>(std::span<const K>(keys), std::span<const V>(vals));
}

// The baselines return exactly the reference's (and group_by's) result type.
static_assert(std::is_same_v<bl::baseline_result<std::int32_t, std::uint32_t>,
                             decltype(reference(std::vector<std::int32_t>{}, std::vector<std::uint32_t>{}))>);
static_assert(std::is_same_v<bl::baseline_result<std::uint64_t, float>,
                             decltype(reference(std::vector<std::uint64_t>{}, std::vector<float>{}))>);

/// Two (chunk size, work-group size) pairs per variant; private_array builds a program per
/// chunk size.
constexpr std::pair<std::uint32_t, std::uint32_t> tunings[] = {{3, 64}, {16, 128}};

std::vector<bl::atomics_params> every_atomics_params() {
  std::vector<bl::atomics_params> all;
  for (const auto variant : bl::all_atomics_variants) {
    for (const auto& [chunk, work_group] : tunings) all.push_back({variant, chunk, work_group});
  }
  return all;
}

template <class T>
device_column<T> on_device(const std::vector<T>& host) {
  cl::Buffer buffer(ctx().cl_context(), CL_MEM_READ_ONLY, std::max<std::size_t>(host.size(), 1) * sizeof(T));
  if (!host.empty()) {
    REQUIRE(ctx().compute_queue().enqueueWriteBuffer(buffer, CL_TRUE, 0, host.size() * sizeof(T), host.data()) ==
            CL_SUCCESS);
  }
  return device_column<T>(buffer, host.size());
}

template <class K, class... Outputs>
void check_baseline(const result<K, Outputs...>& actual, const result<K, Outputs...>& expected) {
  CHECK(std::is_sorted(actual.keys.begin(), actual.keys.end()));  // sorted by construction
  CHECK(actual.stats.rows == expected.stats.rows);
  check_equal(actual, expected);
}

struct shape {
  std::size_t rows;
  std::size_t groups;
};
// No row count is a multiple of a work-group size or of a tile (chunk * work-group size).
constexpr shape shapes[] = {{0, 1}, {1, 1}, {7, 3}, {1000, 100}, {20011, 1}, {20011, 2500}};

}  // namespace

TEST_CASE_TEMPLATE("sort + reduce_by_key and every sort + atomics variant match the reference", T,
                   types<std::uint32_t, std::int32_t>, types<std::int32_t, std::uint32_t>,
                   types<std::uint64_t, std::int64_t>, types<std::int64_t, std::int32_t>,
                   types<std::uint32_t, std::uint64_t>, types<std::int64_t, double>,
                   types<std::uint64_t, float>) {
  using K = typename T::key;
  using V = typename T::value;
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto all_params = every_atomics_params();
  for (const auto [rows, groups] : shapes) {
    for (const auto d : all_distributions) {
      if (groups == 1 && rows > 1 && d != distribution::uniform) continue;  // one group: one shape
      CAPTURE(rows);
      CAPTURE(groups);
      const std::string distribution_shown = name(d);
      CAPTURE(distribution_shown);
      const auto dictionary =
          key_dictionary<K>(d == distribution::all_distinct ? std::max<std::size_t>(rows, 1) : groups, rng);
      const auto keys = draw_keys(dictionary, rows, d, rng);
      const auto vals = random_values<V>(rows, rng);
      const auto expected = reference(keys, vals);
      const auto key_column = on_device(keys);
      const auto value_column = on_device(vals);
      check_baseline(bl::sort_reduce_by_key(ctx(), key_column, value_column), expected);
      for (const auto& params : all_params) {
        CAPTURE(params);
        check_baseline(bl::sort_then_atomics(ctx(), key_column, value_column, params), expected);
      }
    }
  }
}

TEST_CASE("host vectors, cl::Buffer columns with an offset and boost::compute::vector agree; inputs stay unsorted") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto dictionary = key_dictionary<std::uint64_t>(333, rng);
  const auto keys = draw_keys(dictionary, 5'003, distribution::zipf, rng);
  const auto vals = random_values<std::int64_t>(keys.size(), rng);
  const auto expected = reference(keys, vals);
  const bl::atomics_params params{bl::atomics_variant::private_array, 16, 128};

  SUBCASE("std::vector") {
    check_baseline(bl::sort_reduce_by_key(ctx(), keys, vals), expected);
    check_baseline(bl::sort_then_atomics(ctx(), keys, vals, params), expected);
  }
  SUBCASE("cl::Buffer with an offset") {
    const std::size_t pad = 100;
    std::vector<std::uint64_t> padded_keys(pad, 7);
    padded_keys.insert(padded_keys.end(), keys.begin(), keys.end());
    padded_keys.resize(padded_keys.size() + pad, 9);
    std::vector<std::int64_t> padded_vals(pad, 5);
    padded_vals.insert(padded_vals.end(), vals.begin(), vals.end());
    padded_vals.resize(padded_vals.size() + pad, 3);
    const device_column<std::uint64_t> k(on_device(padded_keys).buffer, keys.size(), pad);
    const device_column<std::int64_t> v(on_device(padded_vals).buffer, vals.size(), pad);
    check_baseline(bl::sort_reduce_by_key(ctx(), k, v), expected);
    check_baseline(bl::sort_then_atomics(ctx(), k, v, params), expected);
    std::vector<std::uint64_t> keys_after(padded_keys.size());
    std::vector<std::int64_t> vals_after(padded_vals.size());
    REQUIRE(ctx().compute_queue().enqueueReadBuffer(k.buffer, CL_TRUE, 0, keys_after.size() * 8, keys_after.data()) ==
            CL_SUCCESS);
    REQUIRE(ctx().compute_queue().enqueueReadBuffer(v.buffer, CL_TRUE, 0, vals_after.size() * 8, vals_after.data()) ==
            CL_SUCCESS);
    CHECK(keys_after == padded_keys);
    CHECK(vals_after == padded_vals);
  }
  SUBCASE("boost::compute::vector in a context gpuagg wraps") {
    boost::compute::device device(ctx().device()(), true);
    boost::compute::context bc_context(ctx().cl_context()(), true);
    boost::compute::command_queue queue(bc_context, device);
    boost::compute::vector<std::uint64_t> k(keys.begin(), keys.end(), queue);
    boost::compute::vector<std::int64_t> v(vals.begin(), vals.end(), queue);
    queue.finish();
    check_baseline(bl::sort_reduce_by_key(ctx(), device_column(k), device_column(v)), expected);
    check_baseline(bl::sort_then_atomics(ctx(), device_column(k), device_column(v), params), expected);
  }
}

TEST_CASE("empty input gives an empty result; mismatched lengths throw invalid_argument_error") {
  // Type pairs the template test case above instantiates too (each new pair costs build time).
  const std::vector<std::uint32_t> no_keys;
  const std::vector<std::int32_t> no_vals;
  const auto empty = bl::sort_reduce_by_key(ctx(), no_keys, no_vals);
  CHECK(empty.size() == 0);
  CHECK(empty.column<0>().empty());
  CHECK(empty.stats.rows == 0);
  CHECK(empty.stats.groups == 0);
  for (const auto& params : every_atomics_params()) {
    const auto r = bl::sort_then_atomics(ctx(), on_device(no_keys), on_device(no_vals), params);
    CHECK(r.size() == 0);
    CHECK(r.column<3>().empty());
  }

  const std::vector<std::uint32_t> keys{1, 2, 3};
  const std::vector<std::int32_t> vals{1, 2};
  CHECK_THROWS_AS(bl::sort_reduce_by_key(ctx(), keys, vals), invalid_argument_error);
  CHECK_THROWS_AS(bl::sort_reduce_by_key(ctx(), on_device(keys), on_device(vals)), invalid_argument_error);
  CHECK_THROWS_AS(bl::sort_then_atomics(ctx(), keys, vals), invalid_argument_error);
  CHECK_THROWS_AS(bl::sort_then_atomics(ctx(), on_device(keys), on_device(vals)), invalid_argument_error);
}

TEST_CASE("unusable atomics parameters throw invalid_argument_error naming the parameter") {
  const std::vector<std::uint32_t> keys{3, 1, 3};
  const std::vector<std::int32_t> vals{1, 2, 3};
  auto message_of = [&](const bl::atomics_params& params) {
    try {
      bl::sort_then_atomics(ctx(), keys, vals, params);
    } catch (const invalid_argument_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  using enum bl::atomics_variant;
  CHECK(message_of({private_variable, 0, 64}).find("chunk_size") != std::string::npos);
  CHECK(message_of({naive_global, 4, 0}).find("work_group_size") != std::string::npos);
  CHECK(message_of({naive_local, 4, ctx().info().max_work_group_size + 1}).find("work_group_size") !=
        std::string::npos);
  CHECK(message_of({private_array, 5000, 64}).find("chunk_size") != std::string::npos);
}

TEST_CASE("naive_local with fewer local entries than groups sends the rest to global atomics") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto dictionary = key_dictionary<std::uint32_t>(4'000, rng);
  for (const auto d : {distribution::uniform, distribution::heavy_hitter, distribution::sorted_runs}) {
    const std::string distribution_shown = name(d);
    CAPTURE(distribution_shown);
    const auto keys = draw_keys(dictionary, 12'345, d, rng);
    const auto vals = random_values<std::int32_t>(keys.size(), rng);
    const auto expected = reference(keys, vals);
    for (const std::uint32_t local_groups : {1u, 2u, 37u}) {
      CAPTURE(local_groups);
      const bl::atomics_params params{bl::atomics_variant::naive_local, 16, 128, local_groups};
      check_baseline(bl::sort_then_atomics(ctx(), keys, vals, params), expected);
    }
  }
}

TEST_CASE("float and double values: NaN above every number, sums in double") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // group 1: numbers and a NaN; 2: only NaN; 3: +inf and -inf; 4: +inf and numbers. Each row
  // repeated `copies` times (shuffled), which changes only the counts.
  const std::vector<std::int64_t> pattern_keys{4, 1, 2, 1, 3, 1, 2, 3, 4};
  const std::vector<double> pattern_vals{inf, 2.0, nan, nan, inf, -3.0, nan, -inf, 1.0};
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  for (const std::size_t copies : {1u, 701u}) {
    CAPTURE(copies);
    std::vector<std::size_t> order(pattern_keys.size() * copies);
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i % pattern_keys.size();
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::int64_t> keys;
    std::vector<double> vals;
    for (const auto i : order) {
      keys.push_back(pattern_keys[i]);
      vals.push_back(pattern_vals[i]);
    }
    const std::vector<std::uint64_t> keys_u(keys.begin(), keys.end());
    const std::vector<float> vals_f(vals.begin(), vals.end());
    auto check_groups = [&](const auto& r) {
      REQUIRE(r.size() == 4);
      CHECK(r.keys == std::decay_t<decltype(r.keys)>{1, 2, 3, 4});
      CHECK(r.template column<0>() == std::vector<std::uint64_t>{3 * copies, 2 * copies, 2 * copies, 2 * copies});
      check_nan_inf_semantics(r.template column<1>(), r.template column<2>(), r.template column<3>());
    };
    check_groups(bl::sort_reduce_by_key(ctx(), keys, vals));
    check_groups(bl::sort_reduce_by_key(ctx(), keys_u, vals_f));
    for (const auto& params : every_atomics_params()) {
      CAPTURE(params);
      check_groups(bl::sort_then_atomics(ctx(), keys, vals, params));
      check_groups(bl::sort_then_atomics(ctx(), keys_u, vals_f, params));
    }
  }
}

TEST_CASE("stats and the timing out-parameter; a second query of the same shape builds no program") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  const auto dictionary = key_dictionary<std::int64_t>(500, rng);
  const auto keys = draw_keys(dictionary, 10'001, distribution::uniform, rng);
  const auto vals = random_values<std::int32_t>(keys.size(), rng);
  const auto expected = reference(keys, vals);
  auto check_stats = [&](const auto& r, const bl::baseline_timing& timing) {
    CHECK(r.stats.device == ctx().info().name);
    CHECK(r.stats.rows == keys.size());
    CHECK(r.stats.groups == expected.size());
    CHECK(timing.sort_seconds > 0);
    CHECK(timing.aggregate_seconds > 0);
    CHECK(r.stats.aggregate_seconds == doctest::Approx(timing.sort_seconds + timing.aggregate_seconds));
    CHECK(r.stats.wall_seconds > 0);
    CHECK(r.stats.peak_device_bytes > 0);
  };
  bl::baseline_timing timing;
  const auto reduced = bl::sort_reduce_by_key(ctx(), keys, vals, &timing);
  check_stats(reduced, timing);
  check_baseline(reduced, expected);
  for (const auto& params : every_atomics_params()) {
    CAPTURE(params);
    bl::sort_then_atomics(ctx(), keys, vals, params);  // builds what is not cached yet
    const auto r = bl::sort_then_atomics(ctx(), keys, vals, params, &timing);
    check_stats(r, timing);
    CHECK(r.stats.programs_built == 0);
    check_baseline(r, expected);
  }
}
