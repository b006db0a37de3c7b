#pragma once
// The correctness matrix: every strategy x hashing scheme x key type x aggregate against the
// CPU reference, on fresh random inputs of several sizes and distributions with extreme keys.
// Each tests/aggregate_<key>_test.cpp instantiates it for one key type, so the four build and
// run in parallel.

#include "support.hpp"

namespace gpuagg_test {

using namespace gpuagg;

/// One query with every aggregate over every value type (int32, uint32, int64, float,
/// double), arithmetic inside and outside the aggregates, and avg.
inline auto all_aggregates_query() {
  constexpr auto i32 = col<0>;
  constexpr auto u32 = col<1>;
  constexpr auto i64 = col<2>;
  constexpr auto f32 = col<3>;
  constexpr auto f64 = col<4>;
  return std::tuple{count(),  sum(i32),  min(i32), max(i32), sum(u32), min(u32), max(u32), sum(i64),
                    min(i64), max(i64),  sum(f32), min(f32), max(f32), sum(f64), min(f64), max(f64),
                    avg(i32), avg(f64), sum(as<std::int64_t>(i32) - as<std::int64_t>(u32)) / count(),
                    max(f64 * f32 + as<double>(i32))};
}

template <class Scheme>
auto all_aggregates_select() {
  return std::apply([](auto... outputs) { return select<Scheme>(outputs...); }, all_aggregates_query());
}

struct matrix_input {
  std::vector<std::int32_t> i32;
  std::vector<std::uint32_t> u32;
  std::vector<std::int64_t> i64;
  std::vector<float> f32;
  std::vector<double> f64;
};

inline matrix_input matrix_values(std::size_t rows, std::mt19937_64& rng) {
  return {random_values<std::int32_t>(rows, rng), random_values<std::uint32_t>(rows, rng),
          random_values<std::int64_t>(rows, rng), random_values<float>(rows, rng),
          random_values<double>(rows, rng)};
}

/// The matrix's row and group counts: 0, 1 and a few rows; one block that is no multiple of the
/// work-group size; several blocks (the 24 KiB blocks of matrix_options hold 3072 rows of the
/// widest column).
struct matrix_shape {
  std::size_t rows;
  std::size_t groups;
};
inline constexpr matrix_shape matrix_shapes[] = {{0, 1},   {1, 1}, {5, 3}, {999, 40}, {3 * 3072 + 17, 200},
                                                 {20011, 3000}};

/// Keys of one cell: `rows` rows of `groups` keys (every row its own key for all_distinct) in
/// distribution `d`; for direct addressing the keys lie in a domain around the key the tables
/// mark empty (local and private tables keep it in their reserved bucket, the global table's
/// bitmap in its own bucket): [-n/2, n/2] for signed keys, [max - n + 1, max] for unsigned
/// ones, which `opts` gets.
template <class Key, class Scheme>
std::vector<Key> matrix_keys(std::size_t rows, std::size_t groups, distribution d, std::mt19937_64& rng,
                             options& opts) {
  const std::size_t wanted = d == distribution::all_distinct ? std::max<std::size_t>(rows, 1) : groups;
  std::vector<Key> dictionary;
  if constexpr (Scheme::is_identity) {
    const auto n = static_cast<Key>(std::max<std::size_t>(wanted * 2, 8));
    const Key lo = std::is_signed_v<Key> ? static_cast<Key>(-(n / 2)) : std::numeric_limits<Key>::max() - n + 1;
    const Key hi = static_cast<Key>(lo + n - 1);
    dictionary = key_dictionary<Key>(wanted, rng, false, lo, hi);
    opts.domain = key_domain(lo, hi);
  } else {
    dictionary = key_dictionary<Key>(wanted, rng);
  }
  return draw_keys(dictionary, rows, d, rng);
}

/// The CPU reference of all_aggregates_query over `keys` and the values `in`.
template <class Key, class Scheme>
auto matrix_reference(const std::vector<Key>& keys, const matrix_input& in) {
  using query_type = std::remove_const_t<decltype(all_aggregates_select<Scheme>())>;
  using bound = bound_query<single_key<Key>, query_type, std::int32_t, std::uint32_t, std::int64_t, float, double>;
  return reference_group_by<bound>(std::span<const Key>(keys), std::span<const std::int32_t>(in.i32),
                                   std::span<const std::uint32_t>(in.u32), std::span<const std::int64_t>(in.i64),
                                   std::span<const float>(in.f32), std::span<const double>(in.f64));
}

/// Runs the matrix for one key type and hashing scheme over all strategies.
template <class Key, class Scheme>
void run_matrix() {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto query = all_aggregates_select<Scheme>();
  for (const auto strategy : all_strategies) {
    for (const auto& [rows, groups] : matrix_shapes) {
      for (const auto d : all_distributions) {
        if (d == distribution::all_distinct && rows > 5000) continue;  // covered at 999 rows
        CAPTURE(strategy);
        CAPTURE(rows);
        CAPTURE(groups);
        CAPTURE(name(d));
        options opts;
        const auto keys = matrix_keys<Key, Scheme>(rows, groups, d, rng, opts);
        const auto in = matrix_values(rows, rng);
        opts.strategy = strategy;
        opts.config = launch_config{2, 64};
        opts.block_bytes = 24 << 10;
        opts.expected_groups = groups;
        const auto actual = group_by(keys, values(in.i32, in.u32, in.i64, in.f32, in.f64), query, opts);
        const auto expected = matrix_reference<Key, Scheme>(keys, in);
        check_equal(actual, expected);
        CHECK(actual.stats.rows == rows);
        // SHARED again with its hot-key table for skewed keys (hash schemes: the sample's frequent
        // keys in local memory; with the heavy hitter, the run cache as well).
        const bool skewed = d == distribution::zipf || d == distribution::heavy_hitter;
        if (!Scheme::is_identity && strategy == strategy_kind::shared && skewed && rows >= 999) {
          opts.hot_table = true;
          const auto hot = group_by(keys, values(in.i32, in.u32, in.i64, in.f32, in.f64), query, opts);
          CHECK(std::any_of(hot.stats.blocks.begin(), hot.stats.blocks.end(),
                            [](const auto& b) { return b.hot_table; }));
          check_equal(hot, expected);
        }
        // The default strategy for a heavy hitter: WORKGROUPLOCAL with the run cache's register
        // and the cold-row queue where one local table holds the groups and the queue fits.
        if (d == distribution::heavy_hitter && strategy == strategy_kind::workgroup_local && rows >= 999) {
          options skew = opts;
          skew.strategy.reset();
          skew.autotune = false;
          skew.local_table_copies = 1;
          // (Whether the queue fits beside the table depends on the device's local memory; the
          // driver test checks that it runs, this one that whatever ran is exact.)
          const auto queued = group_by(keys, values(in.i32, in.u32, in.i64, in.f32, in.f64), query, skew);
          check_equal(queued, expected);
        }
      }
    }
  }
}

using hashing_schemes = std::tuple<hashing<multiply_shift, linear_probing>, hashing<multiply_shift, quadratic_probing>,
                                   hashing<murmur3_finalizer, linear_probing>,
                                   hashing<murmur3_finalizer, quadratic_probing>, direct_addressing>;

}  // namespace gpuagg_test

#define GPUAGG_AGGREGATE_MATRIX(KEY)                                                                        \
  TEST_CASE_TEMPLATE_DEFINE("every strategy and aggregate matches the CPU reference (" #KEY " keys)", Scheme, \
                            matrix_##KEY) {                                                                 \
    gpuagg_test::run_matrix<KEY, Scheme>();                                                                 \
  }                                                                                                         \
  TEST_CASE_TEMPLATE_APPLY(matrix_##KEY, gpuagg_test::hashing_schemes)
