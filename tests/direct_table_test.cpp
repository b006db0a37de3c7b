// Direct addressing over the key column's exact range, the plan's choice for dense keys on device
// input (plan/direct_table.hpp, driver/key_range.hpp, groupby.hpp): exact queries for every key
// width and signedness, ranges anywhere in the key type (the empty marker's word among them),
// the range's extremes on rows the key sample never reads, the device result, a WHERE clause; and
// the hash table kept where direct addressing would not pay; over the exact box of two to four
// packed key columns (a key's bucket its columns' offsets in mixed radix) for every strategy,
// columns anywhere in their types, signed ones across zero, every column's extremes on rows the
// sample never reads, and boxes whose spans the tables' `bits` cannot hold. options::direct_table
// = true runs it on PoCL; the plan's own rule is plan_test's. A query whose key type's sample
// program is made already takes the range or box from the pass started before the profile.
#include <limits>

#include "support.hpp"

using namespace gpuagg;
using namespace gpuagg_test;

namespace {

// 60,000 rows, the last 10,000 of them beyond the key sample (support.hpp: unsampled_from).
constexpr std::size_t rows = 60'000;

options direct_options() {
  options opts;
  opts.direct_table = true;
  return opts;
}

template <class Key>
void check_direct(Key base, std::size_t groups, std::mt19937_64& rng) {
  CAPTURE(show(base));
  CAPTURE(groups);
  const auto keys = dense_range_keys(base, groups, rows, rng);
  const auto values = random_values<std::int64_t>(rows, rng);
  using bound = bound_query<single_key<Key>, std::remove_const_t<decltype(sum_count_min)>, std::int64_t>;
  const auto expected = reference_group_by<bound>(std::span<const Key>(keys), std::span<const std::int64_t>(values));
  REQUIRE(expected.size() <= groups);
  const auto r = group_by(upload(keys), upload(values), sum_count_min, direct_options());
  CHECK(r.stats.direct_addressing);
  CHECK(r.stats.key_range_size == groups);
  CHECK(r.stats.key_range_lowest == static_cast<std::uint64_t>(static_cast<std::int64_t>(base)));
  CHECK(r.stats.expected_groups_estimated);
  CHECK(r.stats.table_capacity == groups);
  check_equal(r, expected);
  // Again: the sample's program is made now, so the range's pass starts before the sample's
  // profile (query_planner::early_range_pass), and the query takes that pass's range.
  const auto again = group_by(upload(keys), upload(values), sum_count_min, direct_options());
  CHECK(again.stats.range_pass_early);
  CHECK(again.stats.direct_addressing);
  CHECK(again.stats.key_range_size == groups);
  CHECK(again.stats.key_range_lowest == static_cast<std::uint64_t>(static_cast<std::int64_t>(base)));
  check_equal(again, expected);
}

}  // namespace

TEST_CASE("direct addressing over the exact range: every key type, ranges anywhere, extremes the sample missed") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const std::size_t groups : {std::size_t{40}, std::size_t{2'000}, std::size_t{25'000}}) {
    constexpr auto top32 = std::numeric_limits<std::uint32_t>::max();
    check_direct<std::uint32_t>(0, groups, rng);
    check_direct<std::uint32_t>(static_cast<std::uint32_t>(rng() % (top32 - groups)), groups, rng);
    check_direct<std::uint32_t>(static_cast<std::uint32_t>(top32 - (groups - 1)), groups, rng);  // the empty marker's word
    check_direct<std::int32_t>(std::numeric_limits<std::int32_t>::min(), groups, rng);
    check_direct<std::int32_t>(-static_cast<std::int32_t>(groups / 2), groups, rng);  // across zero: -1 is all ones
    check_direct<std::int32_t>(static_cast<std::int32_t>(std::numeric_limits<std::int32_t>::max() - (groups - 1)),
                               groups, rng);
    constexpr auto top64 = std::numeric_limits<std::uint64_t>::max();
    check_direct<std::uint64_t>(top64 - (groups - 1), groups, rng);
    check_direct<std::uint64_t>(rng() % (top64 - groups), groups, rng);
    check_direct<std::int64_t>(-static_cast<std::int64_t>(groups / 3), groups, rng);
    check_direct<std::int64_t>(std::numeric_limits<std::int64_t>::min(), groups, rng);
    if (groups <= 256) {
      check_direct<std::uint8_t>(static_cast<std::uint8_t>(256 - groups), groups, rng);
      check_direct<std::int8_t>(-1, groups, rng);
    }
    if (groups <= 65'536) {
      check_direct<std::int16_t>(static_cast<std::int16_t>(-static_cast<int>(groups / 2)), groups, rng);
      check_direct<std::uint16_t>(static_cast<std::uint16_t>(65'536 - groups), groups, rng);
    }
  }
}

TEST_CASE("direct addressing: the device result, and a WHERE clause with averages") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto keys = dense_range_keys<std::int32_t>(-5'000, 12'000, rows, rng);
  const auto a = random_values<std::int64_t>(rows, rng);
  std::vector<std::int32_t> b(rows);
  for (auto& x : b) x = static_cast<std::int32_t>(rng() % 400);
  const auto q = select(sum(col<0>), avg(col<1>), count()).where(col<1> < lit<200>);
  using bound = bound_query<single_key<std::int32_t>, std::remove_const_t<decltype(q)>, std::int64_t, std::int32_t>;
  const auto expected = reference_group_by<bound>(std::span<const std::int32_t>(keys), std::span<const std::int64_t>(a),
                                                  std::span<const std::int32_t>(b));
  const auto dk = upload(keys);
  const auto r = group_by(dk, values(upload(a), upload(b)), q, direct_options());
  CHECK(r.stats.direct_addressing);
  check_equal(r, expected);
  // Left on the device: the same groups, of columns that start 37 elements into their buffers,
  // after keys far outside the range (the range's pass reads the column's rows alone).
  std::vector<std::int32_t> padded(37, std::numeric_limits<std::int32_t>::min());
  padded.insert(padded.end(), keys.begin(), keys.end());
  std::vector<std::int64_t> padded_a(37, 0);
  padded_a.insert(padded_a.end(), a.begin(), a.end());
  const device_column<std::int32_t> offset_keys(upload(padded).buffer, rows, 37);
  const device_column<std::int64_t> offset_a(upload(padded_a).buffer, rows, 37);
  const auto on_device = group_by_on_device(offset_keys, offset_a, select(sum(col<0>)), direct_options());
  CHECK(on_device.stats.direct_addressing);
  CHECK(on_device.stats.key_range_size == 12'000);
  const auto got_keys = download<std::int32_t>(on_device.keys, on_device.size());
  const auto got_sums = download<std::int64_t>(on_device.column<0>(), on_device.size());
  std::map<std::int32_t, std::int64_t> want;
  for (std::size_t i = 0; i < rows; ++i) want[keys[i]] += a[i];
  REQUIRE(got_keys.size() == want.size());
  for (std::size_t i = 0; i < got_keys.size(); ++i) {
    REQUIRE(want.count(got_keys[i]) == 1);
    CHECK(got_sums[i] == want[got_keys[i]]);
  }
}

TEST_CASE("the hash table stays where direct addressing would not pay, and every result is exact") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  using bound = bound_query<single_key<std::uint32_t>, std::remove_const_t<decltype(sum_count_min)>, std::int64_t>;
  const auto run = [&](const std::vector<std::uint32_t>& keys, const options& opts, bool on_device) {
    const auto values = random_values<std::int64_t>(keys.size(), rng);
    const auto expected =
        reference_group_by<bound>(std::span<const std::uint32_t>(keys), std::span<const std::int64_t>(values));
    auto r = on_device ? group_by(upload(keys), upload(values), sum_count_min, opts)
                       : group_by(keys, values, sum_count_min, opts);
    check_equal(r, expected);
    return r.stats;
  };
  const auto dense = dense_range_keys<std::uint32_t>(1'000, 20'000, rows, rng);
  CHECK(run(dense, direct_options(), true).direct_addressing);
  // Host input: no pass over the keys before its first copies.
  CHECK_FALSE(run(dense, direct_options(), false).direct_addressing);
  // options' false.
  options off;
  off.direct_table = false;
  CHECK_FALSE(run(dense, off, true).direct_addressing);
  // The interleaved layout asked for: a hash table's, which direct addressing has not.
  options interleaved = direct_options();
  interleaved.interleaved_table = true;
  CHECK_FALSE(run(dense, interleaved, true).direct_addressing);
  // One outlier the sample never read: a range of 2^31 keys and more (beyond direct
  // addressing), or one whose table would outgrow the hash table's many times.
  for (const std::uint32_t outlier : {std::uint32_t{1} << 31, std::uint32_t{40'000'000}, ~std::uint32_t{0}}) {
    CAPTURE(outlier);
    auto with_outlier = dense;
    with_outlier[rows - 3] = outlier;
    const auto stats = run(with_outlier, direct_options(), true);
    CHECK_FALSE(stats.direct_addressing);
  }
  // Skewed keys and runs keep the hash table's strategies.
  const auto dictionary = key_dictionary<std::uint32_t>(20'000, rng, false, 1'000, 20'999);
  for (const distribution d : {distribution::heavy_hitter, distribution::sorted_runs, distribution::zipf}) {
    CAPTURE(name(d));
    const auto stats = run(draw_keys(dictionary, rows, d, rng), direct_options(), true);
    if (d != distribution::zipf) CHECK_FALSE(stats.direct_addressing);
  }
}

namespace {

/// Column c of a box key: `lowest[c]` and the next `spans[c] - 1` values, drawn uniformly; every
/// column's lowest and highest value on rows the key sample never reads (50,000 and on), so the
/// exact box is wider than the sample's.
template <class T>
std::vector<T> box_column(T lowest, std::size_t span, std::mt19937_64& rng) {
  std::vector<T> column(rows);
  for (auto& x : column) x = static_cast<T>(lowest + static_cast<T>(rng() % span));
  column[unsampled_from + 11] = lowest;
  column[unsampled_from + 4'321] = static_cast<T>(lowest + static_cast<T>(span - 1));
  return column;
}

/// group_by over keys(columns...) on device input with direct_table asked for: the box's direct
/// addressing where `addressed` (the table holds the box's keys), else the hash table; exact
/// against the CPU reference either way, with the plan's strategy and with each one fixed.
template <class... T>
void check_box(std::tuple<T...> lowest, std::array<std::size_t, sizeof...(T)> spans, bool addressed,
               std::mt19937_64& rng) {
  CAPTURE(spans[0]);
  CAPTURE(spans[1]);
  auto columns = [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::tuple{box_column<T>(std::get<I>(lowest), spans[I], rng)...};
  }(std::index_sequence_for<T...>{});
  const auto v = random_values<std::int64_t>(rows, rng);
  using bound = bound_query<packed_key<T...>, std::remove_const_t<decltype(sum_count_min)>, std::int64_t>;
  std::vector<std::tuple<T...>> tuples(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    tuples[i] = std::apply([&](const auto&... c) { return std::tuple<T...>{c[i]...}; }, columns);
  }
  const auto expected =
      reference_group_by<bound>(std::span<const std::tuple<T...>>(tuples), std::span<const std::int64_t>(v));
  const auto on_device = std::apply([](const auto&... c) { return std::tuple{upload(c)...}; }, columns);
  const auto dv = upload(v);
  std::size_t box = 1;
  for (const auto s : spans) box *= s;
  std::vector<std::optional<strategy_kind>> strategies{std::nullopt};
  for (const auto k : all_strategies) strategies.push_back(k);
  // Each also with PARTITION's runs: where the box is addressed over a 64-bit word, its copy
  // holds each row's bucket in place of the key columns (query_planner::partition_copy_buckets).
  bool first = true;
  for (const std::uint32_t parts : {0u, 4u}) {
    CAPTURE(parts);
    for (const auto& strategy : strategies) {
      CAPTURE(strategy ? static_cast<int>(*strategy) : -1);
      options opts = direct_options();
      opts.strategy = strategy;
      opts.block_bytes = 16'384 * sizeof(std::int64_t);  // four blocks
      opts.partitions = parts;
      const auto r = std::apply([&](const auto&... c) { return group_by(keys(c...), dv, sum_count_min, opts); },
                                on_device);
      CHECK(r.stats.direct_addressing == addressed);
      if (addressed) {
        CHECK(r.stats.key_range_size == box);
        CHECK(r.stats.table_capacity == box);
        // After the first query the sample's program is made: the box's pass starts before the
        // profile (query_planner::early_range_pass).
        if (!first) CHECK(r.stats.range_pass_early);
      }
      first = false;
      if (parts != 0) CHECK(r.stats.partition_seconds > 0);
      check_same(r, expected);
    }
  }
}

}  // namespace

TEST_CASE("direct addressing over the exact box of packed key columns: every strategy, columns anywhere") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  constexpr auto top32 = std::numeric_limits<std::uint32_t>::max();
  // Two uint32 columns (a 64-bit word): from zero, anywhere, up to every column's largest value
  // (the box's last key is the empty marker's word), and a box larger than the local tables.
  check_box<std::uint32_t, std::uint32_t>({0, 0}, {40, 30}, true, rng);
  check_box<std::uint32_t, std::uint32_t>(
      {static_cast<std::uint32_t>(rng() % (top32 - 500)), static_cast<std::uint32_t>(rng() % (top32 - 500))},
      {300, 200}, true, rng);
  check_box<std::uint32_t, std::uint32_t>({top32 - 99, top32 - 49}, {100, 50}, true, rng);
  // Signed columns across zero (their bits wrap) and from the type's lowest value, in a 32-bit
  // word of a 16-bit and an 8-bit column, and a second column of the word's top.
  check_box<std::int16_t, std::int8_t>({-700, -5}, {1'500, 11}, true, rng);
  check_box<std::int32_t, std::uint16_t>({std::numeric_limits<std::int32_t>::min(), 65'000}, {70, 536}, true, rng);
  check_box<std::uint8_t, std::int32_t>({250, std::numeric_limits<std::int32_t>::max() - 99}, {6, 100}, true, rng);
  // Three columns (spans in 16 bits) and four (10 bits), of mixed widths and signs.
  check_box<std::uint16_t, std::int8_t, std::uint32_t>({60'000, -3, top32 - 20}, {40, 7, 21}, true, rng);
  check_box<std::int8_t, std::uint8_t, std::int16_t, std::uint16_t>({-128, 0, -9, 1'000}, {5, 4, 19, 30}, true, rng);
  // A fourth column's span beyond its 10 bits: the hash table, exact all the same.
  check_box<std::uint8_t, std::uint8_t, std::uint16_t, std::uint16_t>({0, 0, 0, 0}, {2, 2, 2, 1'100}, false, rng);
}

