// Composite keys (keys(a, b, ...)), 8- and 16-bit key and value columns, and the WHERE clause
// fused into AGGREGATE: each across the strategies and schemes, with extreme values in every
// column, against the CPU reference.
#include "support.hpp"
#include "all_kinds.hpp"

#include <sstream>

using namespace gpuagg;
using namespace gpuagg_test;

namespace {

/// `groups` distinct combinations of values of A and B, each column's extremes (its minimum,
/// maximum, 0 and all ones) among them, drawn to `rows` rows.
template <class A, class B>
std::pair<std::vector<A>, std::vector<B>> draw_pairs(std::size_t groups, std::size_t rows, std::mt19937_64& rng) {
  std::vector<std::pair<A, B>> dictionary;
  std::set<std::pair<A, B>> seen;
  const auto extremes_a = extreme_keys<A>();
  const auto extremes_b = extreme_keys<B>();
  for (const A a : extremes_a) {
    for (const B b : extremes_b) {
      if (dictionary.size() < groups && seen.insert({a, b}).second) dictionary.emplace_back(a, b);
    }
  }
  std::uniform_int_distribution<std::uint64_t> any;
  while (dictionary.size() < groups) {
    const std::pair<A, B> p{static_cast<A>(any(rng)), static_cast<B>(any(rng))};
    if (seen.insert(p).second) dictionary.push_back(p);
  }
  std::uniform_int_distribution<std::size_t> pick(0, dictionary.size() - 1);
  std::vector<A> a(rows);
  std::vector<B> b(rows);
  for (std::size_t i = 0; i < rows; ++i) std::tie(a[i], b[i]) = dictionary[pick(rng)];
  return {a, b};
}

template <class A, class B>
std::vector<std::tuple<A, B>> zip(const std::vector<A>& a, const std::vector<B>& b) {
  std::vector<std::tuple<A, B>> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) out[i] = {a[i], b[i]};
  return out;
}

}  // namespace

TEST_CASE_TEMPLATE("composite keys of two columns, every strategy, extremes in every column", Pair,
                   std::pair<std::uint32_t, std::uint32_t>, std::pair<std::uint8_t, std::int8_t>,
                   std::pair<std::int16_t, std::int32_t>) {
  using A = typename Pair::first_type;
  using B = typename Pair::second_type;
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t groups = std::min<std::size_t>(300, std::size_t{1} << (8 * std::min(sizeof(A), sizeof(B))));
  const auto [a, b] = draw_pairs<A, B>(groups, 30'000, rng);
  const auto v = random_values<std::int64_t>(a.size(), rng);
  using bound = bound_query<packed_key<A, B>, std::remove_const_t<decltype(all_kinds)>, std::int64_t>;
  const auto tuples = zip(a, b);
  const auto expected =
      reference_group_by<bound>(std::span<const std::tuple<A, B>>(tuples), std::span<const std::int64_t>(v));
  for (const auto strategy : all_strategies) {
    CAPTURE(strategy);
    options opts;
    opts.strategy = strategy;
    opts.config = launch_config{2, 64};
    opts.block_bytes = 64 << 10;  // several blocks
    check_same(group_by(keys(a, b), v, all_kinds, opts), expected);
  }
  // The default plan, and a hint far too low: the table grows, no group is lost.
  check_same(group_by(keys(a, b), v, all_kinds), expected);
  options low;
  low.expected_groups = 2;
  const auto grown = group_by(keys(a, b), v, all_kinds, low);
  CHECK(grown.stats.table_growths >= 1);
  check_same(grown, expected);
  // The other hash and probing scheme.
  const auto murmur = select<hashing<murmur3_finalizer, quadratic_probing>>(sum(col<0>), count(), min(col<0>),
                                                                            max(col<0>), avg(col<0>));
  check_same(group_by(keys(a, b), v, murmur), expected);
}

TEST_CASE("composite keys of three columns, on device input and output") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t rows = 20'000;
  std::vector<std::int16_t> a(rows);
  std::vector<std::uint8_t> b(rows);
  std::vector<std::int8_t> c(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    a[i] = static_cast<std::int16_t>(rng() % 40 - 20);
    b[i] = static_cast<std::uint8_t>(rng() % 2 ? 255 : rng() % 5);
    c[i] = static_cast<std::int8_t>(rng() % 2 ? -128 : -1);
  }
  const auto v = random_values<double>(rows, rng);
  const auto q = select(sum(col<0>), count());
  using bound = bound_query<packed_key<std::int16_t, std::uint8_t, std::int8_t>, std::remove_const_t<decltype(q)>,
                            double>;
  std::vector<std::tuple<std::int16_t, std::uint8_t, std::int8_t>> tuples(rows);
  for (std::size_t i = 0; i < rows; ++i) tuples[i] = {a[i], b[i], c[i]};
  const auto expected = reference_group_by<bound>(
      std::span<const std::tuple<std::int16_t, std::uint8_t, std::int8_t>>(tuples), std::span<const double>(v));
  check_same(group_by(keys(a, b, c), v, q), expected);
  // Device columns in, device columns out: one result buffer per key column.
  const auto da = upload(a);
  const auto db = upload(b);
  const auto dc = upload(c);
  const auto dv = upload(v);
  const auto on_device = group_by_on_device(keys(da, db, dc), dv, q);
  REQUIRE(on_device.size() == expected.size());
  REQUIRE(on_device.key_columns.size() == 3);
  result<std::tuple<std::int16_t, std::uint8_t, std::int8_t>, double, std::uint64_t> back;
  back.keys.resize(on_device.size());
  std::get<0>(back.columns).resize(on_device.size());
  std::get<1>(back.columns).resize(on_device.size());
  auto& queue = ctx().compute_queue();
  const std::size_t n = on_device.size();
  REQUIRE(queue.enqueueReadBuffer(on_device.key_columns[0], CL_TRUE, 0, n * 2, back.keys.data(0)) == CL_SUCCESS);
  REQUIRE(queue.enqueueReadBuffer(on_device.key_columns[1], CL_TRUE, 0, n, back.keys.data(1)) == CL_SUCCESS);
  REQUIRE(queue.enqueueReadBuffer(on_device.key_columns[2], CL_TRUE, 0, n, back.keys.data(2)) == CL_SUCCESS);
  REQUIRE(queue.enqueueReadBuffer(on_device.column<0>(), CL_TRUE, 0, n * 8, std::get<0>(back.columns).data()) ==
          CL_SUCCESS);
  REQUIRE(queue.enqueueReadBuffer(on_device.column<1>(), CL_TRUE, 0, n * 8, std::get<1>(back.columns).data()) ==
          CL_SUCCESS);
  check_same(back, expected);
}

TEST_CASE("direct addressing over composite keys: the domain of packed words") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  // TPC-H Q1's flags: returnflag in {A, N, R}, linestatus in {F, O}.
  const std::size_t rows = 50'000;
  std::vector<std::uint8_t> flag(rows), status(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    flag[i] = "ANR"[rng() % 3];
    status[i] = "FO"[rng() % 2];
  }
  const auto v = random_values<std::int32_t>(rows, rng);
  using key = packed_key<std::uint8_t, std::uint8_t>;
  const auto [lo, hi] = key::domain({'A', 'F'}, {'R', 'O'});
  options opts;
  opts.domain = {lo, hi};
  const auto q = select<direct_addressing>(sum(col<0>), count(), max(col<0>));
  using bound = bound_query<key, std::remove_const_t<decltype(q)>, std::int32_t>;
  const auto tuples = zip(flag, status);
  const auto expected = reference_group_by<bound>(std::span<const std::tuple<std::uint8_t, std::uint8_t>>(tuples),
                                                  std::span<const std::int32_t>(v));
  for (const auto strategy : {strategy_kind::shared, strategy_kind::workgroup_local}) {
    CAPTURE(strategy);
    options fixed = opts;
    fixed.strategy = strategy;
    check_same(group_by(keys(flag, status), v, q, fixed), expected);
  }
  check_same(group_by(keys(flag, status), v, q, opts), expected);
  // A combination outside the domain is a typed error.
  flag[17] = 'Z';
  CHECK_THROWS_AS(group_by(keys(flag, status), v, q, opts), key_out_of_domain_error);
}

TEST_CASE_TEMPLATE("8- and 16-bit key and value columns, every aggregate", T, std::int8_t, std::uint8_t,
                   std::int16_t, std::uint16_t) {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t rows = 40'000;
  std::vector<T> k(rows), v(rows);
  std::uniform_int_distribution<std::int64_t> any(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  const auto extremes = extreme_keys<T>();
  for (std::size_t i = 0; i < rows; ++i) {
    k[i] = i < extremes.size() ? extremes[i] : static_cast<T>(any(rng) % 500);
    v[i] = i % 7 == 0 ? std::numeric_limits<T>::min() : i % 11 == 0 ? std::numeric_limits<T>::max() : T(any(rng));
  }
  using bound = bound_query<single_key<T>, std::remove_const_t<decltype(all_kinds)>, T>;
  const auto expected = reference_group_by<bound>(std::span<const T>(k), std::span<const T>(v));
  // min and max keep the column's type; sums accumulate in 64 bits.
  static_assert(std::is_same_v<typename bound::output_tuple,
                               std::tuple<std::conditional_t<std::is_signed_v<T>, std::int64_t, std::uint64_t>,
                                          std::uint64_t, T, T, double>>);
  for (const auto strategy : all_strategies) {
    CAPTURE(strategy);
    options opts;
    opts.strategy = strategy;
    opts.config = launch_config{2, 64};
    check_same(group_by(k, v, all_kinds, opts), expected);
  }
  check_same(group_by(k, v, all_kinds), expected);
  // Direct addressing over the type's whole range.
  options domain;
  domain.domain = {std::numeric_limits<T>::min(), std::numeric_limits<T>::max()};
  const auto dense = select<direct_addressing>(sum(col<0>), count(), min(col<0>), max(col<0>), avg(col<0>));
  check_same(group_by(k, v, dense, domain), expected);
}

TEST_CASE("the WHERE clause at 0%, 50% and 100% of the rows, in every strategy") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t rows = 30'000;
  const auto dictionary = key_dictionary<std::int64_t>(2000, rng);
  const auto k = draw_keys(dictionary, rows, distribution::uniform, rng);
  const auto v = random_values<std::int64_t>(rows, rng);
  std::vector<std::int16_t> day(rows);
  for (std::size_t i = 0; i < rows; ++i) day[i] = static_cast<std::int16_t>(i % 2 == 0 ? 100 : 300);
  const auto none = select(sum(col<0>), count(), min(col<0>)).where(col<1> < lit<0>);
  const auto half = select(sum(col<0>), count(), min(col<0>)).where(col<1> <= lit<200>);
  const auto all = select(sum(col<0>), count(), min(col<0>)).where(col<1> >= lit<100> || col<0> == lit<7>);
  using half_bound = bound_query<single_key<std::int64_t>, std::remove_const_t<decltype(half)>, std::int64_t,
                                 std::int16_t>;
  using all_bound = bound_query<single_key<std::int64_t>, std::remove_const_t<decltype(all)>, std::int64_t,
                                std::int16_t>;
  const auto expected_half = reference_group_by<half_bound>(std::span<const std::int64_t>(k),
                                                            std::span<const std::int64_t>(v),
                                                            std::span<const std::int16_t>(day));
  const auto expected_all = reference_group_by<all_bound>(std::span<const std::int64_t>(k),
                                                          std::span<const std::int64_t>(v),
                                                          std::span<const std::int16_t>(day));
  // The counts prove the selectivity: half the rows, then all of them.
  std::uint64_t counted = 0;
  for (const auto c : expected_half.column<1>()) counted += c;
  CHECK(counted == rows / 2);
  counted = 0;
  for (const auto c : expected_all.column<1>()) counted += c;
  CHECK(counted == rows);
  for (const auto strategy : all_strategies) {
    CAPTURE(strategy);
    options opts;
    opts.strategy = strategy;
    opts.config = launch_config{2, 64};
    opts.block_bytes = 64 << 10;
    // No row passes: no group at all, not groups of zero rows.
    const auto empty = group_by(k, values(v, day), none, opts);
    CHECK(empty.size() == 0);
    check_same(group_by(k, values(v, day), half, opts), expected_half);
    check_same(group_by(k, values(v, day), all, opts), expected_all);
  }
  // A key whose every row fails makes no group: keys only on odd rows, which all fail.
  std::vector<std::int64_t> k2 = k;
  for (std::size_t i = 1; i < rows; i += 2) k2[i] = -5;
  const auto r = group_by(k2, values(v, day), half);
  for (std::size_t i = 0; i < r.size(); ++i) CHECK(r.keys[i] != -5);
}

TEST_CASE("AGGREGATE's rows in flight (1, 2, 4 or 8 a work item): the same groups, wide rows and narrow") {
  // The plan builds two or four (query_planner::rows_in_flight); GPUAGG_BUILD_OPTIONS may ask
  // for any of the four, and each step and the rows after the last whole step must combine
  // every passing row once. Rows of no multiple of eight, so that the remainder runs too.
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t rows = 20'011;
  const auto dictionary = key_dictionary<std::uint32_t>(300, rng);
  const auto k = draw_keys(dictionary, rows, distribution::uniform, rng);
  const auto v = random_values<std::int64_t>(rows, rng);
  std::vector<std::int16_t> day(rows);
  for (auto& d : day) d = static_cast<std::int16_t>(rng() % 400);
  // Wide: five 64-bit accumulators (the plan's two rows); narrow: one (its four).
  const auto wide = select(sum(col<0>), count(), min(col<0>), max(col<0>), sum(col<1>)).where(col<1> <= lit<250>);
  const auto narrow = select(sum(col<0>)).where(col<1> <= lit<250>);
  using wide_bound = bound_query<single_key<std::uint32_t>, std::remove_const_t<decltype(wide)>, std::int64_t,
                                 std::int16_t>;
  using narrow_bound = bound_query<single_key<std::uint32_t>, std::remove_const_t<decltype(narrow)>, std::int64_t,
                                   std::int16_t>;
  const auto expected_wide = reference_group_by<wide_bound>(
      std::span<const std::uint32_t>(k), std::span<const std::int64_t>(v), std::span<const std::int16_t>(day));
  const auto expected_narrow = reference_group_by<narrow_bound>(
      std::span<const std::uint32_t>(k), std::span<const std::int64_t>(v), std::span<const std::int16_t>(day));
  const scoped_env build_options("GPUAGG_BUILD_OPTIONS", "");
  for (const int in_flight : {1, 2, 4, 8}) {
    CAPTURE(in_flight);
    build_options.set("-DGPUAGG_ROWS_IN_FLIGHT=" + std::to_string(in_flight));
    for (const auto strategy : {strategy_kind::shared, strategy_kind::workgroup_local}) {
      CAPTURE(strategy);
      options opts;
      opts.strategy = strategy;
      opts.config = launch_config{2, 64};  // about 80 rows a work item: many whole steps
      check_same(group_by(k, values(v, day), wide, opts), expected_wide);
      check_same(group_by(k, values(v, day), narrow, opts), expected_narrow);
    }
  }
}

TEST_CASE("comparisons and logic are values too") {
  std::vector<std::uint32_t> k{1, 1, 1, 2, 2};
  std::vector<std::int32_t> v{5, 15, 25, -3, 10};
  // sum(v > 10): rows above 10; sum(!(v > 10) && v != -3)
  const auto q = select(sum(col<0> > lit<10>), sum(!(col<0> > lit<10>) && col<0> != lit<-3>));
  auto r = group_by(k, v, q);
  sort_by_key(r);
  REQUIRE(r.size() == 2);
  CHECK(r.column<0>() == std::vector<std::int64_t>{2, 0});
  CHECK(r.column<1>() == std::vector<std::int64_t>{1, 1});
}

TEST_CASE_TEMPLATE("private groups (options::private_groups): four groups per work item in registers, more keys still exact", Key,
                   std::uint32_t, std::int64_t) {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t rows = 40'000;
  // Up to four groups, the key whose bits mark empty buckets among them where it fits: the
  // private slots compare keys, never the empty marker.
  for (const std::size_t groups : {std::size_t{2}, std::size_t{4}}) {
    CAPTURE(groups);
    auto dictionary = key_dictionary<Key>(groups, rng);
    const Key empty_marker = extreme_keys<Key>()[4];
    if (std::find(dictionary.begin(), dictionary.end(), empty_marker) == dictionary.end()) {
      dictionary.front() = empty_marker;
    }
    const auto k = draw_keys(dictionary, rows, distribution::uniform, rng);
    const auto v = random_values<std::int64_t>(rows, rng);
    using bound = bound_query<single_key<Key>, std::remove_const_t<decltype(all_kinds)>, std::int64_t>;
    const auto expected = reference_group_by<bound>(std::span<const Key>(k), std::span<const std::int64_t>(v));
    // Asked for, with the plan's strategy and configuration.
    options asked;
    asked.private_groups = true;
    const auto planned = group_by(k, v, all_kinds, asked);
    REQUIRE_FALSE(planned.stats.blocks.empty());
    for (const auto& block : planned.stats.blocks) CHECK(block.private_groups);
    check_same(planned, expected);
    for (const auto strategy : {strategy_kind::shared, strategy_kind::workgroup_local}) {
      CAPTURE(strategy);
      options opts;
      opts.strategy = strategy;
      opts.config = launch_config{2, 64};
      opts.block_bytes = 64 << 10;
      opts.private_groups = true;
      const auto r = group_by(k, v, all_kinds, opts);
      for (const auto& block : r.stats.blocks) CHECK(block.private_groups);
      check_same(r, expected);
    }
  }
  // Forced on for 1000 groups: each work item's fifth key onwards goes to the table directly.
  const auto dictionary = key_dictionary<Key>(1000, rng);
  for (const auto d : {distribution::uniform, distribution::sorted_runs, distribution::heavy_hitter}) {
    const std::string distribution_shown = name(d);
    CAPTURE(distribution_shown);
    const auto k = draw_keys(dictionary, rows, d, rng);
    const auto v = random_values<std::int64_t>(rows, rng);
    using bound = bound_query<single_key<Key>, std::remove_const_t<decltype(all_kinds)>, std::int64_t>;
    const auto expected = reference_group_by<bound>(std::span<const Key>(k), std::span<const std::int64_t>(v));
    for (const auto strategy : {strategy_kind::shared, strategy_kind::workgroup_local}) {
      CAPTURE(strategy);
      options opts;
      opts.strategy = strategy;
      opts.config = launch_config{2, 64};
      opts.private_groups = true;
      opts.run_cache = false;
      opts.hot_table = false;
      const auto r = group_by(k, v, all_kinds, opts);
      for (const auto& block : r.stats.blocks) CHECK(block.private_groups);
      check_same(r, expected);
    }
  }
}
