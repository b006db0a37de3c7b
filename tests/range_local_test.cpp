// WORKGROUPLOCAL's range local table: exact queries through it over dense ranges of keys
// anywhere in the key type's range (the empty marker's word among them), keys outside the
// range (the global table's), four distributions, copies, 64-bit keys, two key columns and a
// WHERE clause; composite keys over a box of their columns' ranges, with keys outside it. The
// plan's choice is plan_test's.
#include "support.hpp"

using namespace gpuagg;
using namespace gpuagg_test;

namespace {

/// WORKGROUPLOCAL with the range local table asked for, in blocks of 8192 rows.
options range_options(std::uint32_t copies = 0) {
  options opts;
  opts.strategy = strategy_kind::workgroup_local;
  opts.config = launch_config{2, 64};
  opts.range_local_table = true;
  opts.local_table_copies = copies;
  opts.block_bytes = 8192 * sizeof(std::int64_t);
  return opts;
}

}  // namespace

TEST_CASE("WORKGROUPLOCAL's range local table: exact over dense ranges, with keys outside the range") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  constexpr std::uint32_t top = std::numeric_limits<std::uint32_t>::max();
  for (const std::size_t groups : {std::size_t{1}, std::size_t{6}, std::size_t{300}, std::size_t{3000}}) {
    // From zero, from a random key, and up to the largest key (the empty marker's word).
    const std::uint32_t random_base = static_cast<std::uint32_t>(rng() % (top - groups));
    for (const std::uint32_t base : {0u, random_base, static_cast<std::uint32_t>(top - (groups - 1))}) {
      for (const distribution d : {distribution::uniform, distribution::zipf, distribution::heavy_hitter,
                                   distribution::sorted_runs}) {
        for (const std::uint32_t copies : {0u, 4u}) {
          CAPTURE(groups);
          CAPTURE(base);
          const std::string distribution_name = name(d);
          CAPTURE(distribution_name);
          CAPTURE(copies);
          const auto dictionary =
              key_dictionary<std::uint32_t>(groups, rng, false, base, static_cast<std::uint32_t>(base + groups - 1));
          auto k = draw_keys(dictionary, 40'000, d, rng);
          // Keys on a few rows only, outside the range (random ones, and the extremes where there
          // is room), in rows the strided sample of 16 Ki rows and their neighbours never reads
          // (40,000 rows: rows 0 to 32,767): they go to the global table.
          for (std::size_t i = 0; i < 20; ++i) {
            const std::uint32_t outside = i % 2 == 0 ? static_cast<std::uint32_t>(rng()) : (i % 4 == 1 ? 0u : top);
            k[32'768 + (i * 353) % 7'000] = outside;
          }
          const auto v = random_values<std::int64_t>(k.size(), rng);
          const auto opts = range_options(copies);
          const auto r = group_by(k, v, sum_count_min, opts);
          using bound = bound_query<single_key<std::uint32_t>, std::remove_const_t<decltype(sum_count_min)>,
                                    std::int64_t>;
          check_equal(r, reference_group_by<bound>(std::span<const std::uint32_t>(k), std::span<const std::int64_t>(v)));
          // Every block ran the range table where the sampled range fits local memory.
          const auto plan = make_driver(std::span<const std::uint32_t>(k), std::span<const std::int64_t>(v),
                                        sum_count_min, opts);
          const auto& range = plan->plan().range_local();
          if (groups <= 300) CHECK(range.has_value());  // 300 buckets of 24 bytes fit any device's local memory
          if (range) {
            CHECK(range->buckets() <= std::uint64_t{top} + 1);
            CHECK(plan->plan().local_table_fits());
          }
          REQUIRE_FALSE(r.stats.blocks.empty());
          for (const auto& b : r.stats.blocks) {
            CHECK(b.range_local == range.has_value());
            CHECK_FALSE(b.perfect_local);
          }
        }
      }
    }
  }
}

TEST_CASE("the range local table: the whole range without outliers runs it; 64-bit and signed keys") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  // A range of 500 uint64 keys high in the type's range: the sample sees its extremes, every
  // block runs the range table (sum, count and min take 24 bytes a bucket: 12 KB).
  const std::uint64_t base = (std::uint64_t{1} << 63) + rng() % (std::uint64_t{1} << 40);
  const auto dictionary = key_dictionary<std::uint64_t>(500, rng, false, base, base + 499);
  const auto k = draw_keys(dictionary, 30'000, distribution::uniform, rng);
  const auto v = random_values<std::int64_t>(k.size(), rng);
  const auto r = group_by(k, v, sum_count_min, range_options());
  check_equal(r, reference_group_by<sum_count_min_bound>(std::span<const std::uint64_t>(k),
                                                         std::span<const std::int64_t>(v)));
  REQUIRE(r.size() == 500);
  for (const auto& b : r.stats.blocks) CHECK(b.range_local);
  // A sentinel beside ids (-1 and 0 to 498): a range of 500 keys from -1 across the words' wrap.
  {
    std::vector<std::int32_t> ids(k.size());
    for (std::size_t i = 0; i < k.size(); ++i) ids[i] = static_cast<std::int32_t>(k[i] - base) - 1;
    const auto s = group_by(ids, v, sum_count_min, range_options());
    using bound = bound_query<single_key<std::int32_t>, std::remove_const_t<decltype(sum_count_min)>, std::int64_t>;
    check_equal(s, reference_group_by<bound>(std::span<const std::int32_t>(ids), std::span<const std::int64_t>(v)));
    for (const auto& b : s.stats.blocks) CHECK(b.range_local);
    const auto plan = make_driver(std::span<const std::int32_t>(ids), std::span<const std::int64_t>(v), sum_count_min,
                                  range_options());
    REQUIRE(plan->plan().range_local().has_value());
    CHECK(plan->plan().range_local()->buckets() == 500);
    CHECK(plan->plan().profile().key_span == 500);
  }
  // Negative int32 keys: a range of words too (two's complement keeps a negative range in order).
  std::vector<std::int32_t> negative(k.size());
  for (std::size_t i = 0; i < k.size(); ++i) negative[i] = -1000 - static_cast<std::int32_t>(k[i] - base);
  const auto n = group_by(negative, v, sum_count_min, range_options(2));
  using bound = bound_query<single_key<std::int32_t>, std::remove_const_t<decltype(sum_count_min)>, std::int64_t>;
  check_equal(n, reference_group_by<bound>(std::span<const std::int32_t>(negative), std::span<const std::int64_t>(v)));
  for (const auto& b : n.stats.blocks) CHECK(b.range_local);
  // options' false: the probed table.
  auto off = range_options();
  off.range_local_table = false;
  const auto probed = group_by(k, v, sum_count_min, off);
  for (const auto& b : probed.stats.blocks) CHECK_FALSE(b.range_local);
  check_equal(probed, reference_group_by<sum_count_min_bound>(std::span<const std::uint64_t>(k),
                                                              std::span<const std::int64_t>(v)));
}

TEST_CASE("the range local table: two narrow key columns, a WHERE clause that makes no group of failing rows") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t rows = 30'000;
  // Two uint16 columns whose packed word spans a range that fits: the first column constant.
  std::vector<std::uint16_t> a(rows, 7), b(rows);
  for (auto& x : b) x = static_cast<std::uint16_t>(100 + rng() % 900);
  const auto v = random_values<std::int64_t>(rows, rng);
  std::vector<std::int16_t> flag(rows);
  for (std::size_t i = 0; i < rows; ++i) flag[i] = b[i] == 100 ? 0 : static_cast<std::int16_t>(1 + i % 3);
  const auto q = select(sum(col<0>), count(), min(col<0>)).where(col<1> != lit<0>);
  const auto two = group_by(keys(a, b), values(v, flag), q, range_options());
  REQUIRE_FALSE(two.stats.blocks.empty());
  for (const auto& blk : two.stats.blocks) CHECK(blk.range_local);
  // The same query over one uint32 key holding both columns.
  std::vector<std::uint32_t> one(rows);
  for (std::size_t i = 0; i < rows; ++i) one[i] = std::uint32_t{a[i]} << 16 | b[i];
  using bound = bound_query<single_key<std::uint32_t>, std::remove_const_t<decltype(q)>, std::int64_t, std::int16_t>;
  const auto expected = reference_group_by<bound>(std::span<const std::uint32_t>(one), std::span<const std::int64_t>(v),
                                                  std::span<const std::int16_t>(flag));
  REQUIRE(two.size() == expected.size());
  std::map<std::uint32_t, std::size_t> at;
  for (std::size_t i = 0; i < expected.size(); ++i) at[expected.keys[i]] = i;
  for (std::size_t i = 0; i < two.size(); ++i) {
    const auto& [x, y] = two.keys[i];
    const std::uint32_t key = std::uint32_t{x} << 16 | y;
    REQUIRE(at.count(key) == 1);
    CHECK(key != (std::uint32_t{7} << 16 | 100));  // every row of this key failed the predicate
    CHECK(std::get<0>(two.columns)[i] == std::get<0>(expected.columns)[at[key]]);
    CHECK(std::get<1>(two.columns)[i] == std::get<1>(expected.columns)[at[key]]);
    CHECK(std::get<2>(two.columns)[i] == std::get<2>(expected.columns)[at[key]]);
  }
}

namespace {

/// Keys (a, b) of the box [a0, a0 + na) x [b0, b0 + nb), drawn as distribution `d` over the
/// box's keys, and on 20 rows the sample never reads keys with one column outside its range.
template <class A, class B>
void check_box(A a0, std::size_t na, B b0, std::size_t nb, distribution d, std::uint32_t copies,
               std::mt19937_64& rng) {
  const std::size_t rows = 40'000;
  const auto ids = key_dictionary<std::uint32_t>(na * nb, rng, false, 0, static_cast<std::uint32_t>(na * nb - 1));
  const auto drawn = draw_keys(ids, rows, d, rng);
  std::vector<A> a(rows);
  std::vector<B> b(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    a[i] = static_cast<A>(a0 + static_cast<A>(drawn[i] / nb));
    b[i] = static_cast<B>(b0 + static_cast<B>(drawn[i] % nb));
  }
  // Past the sampled rows (0 to 32,767): a column just below or above its range (wrapping in its
  // bits where the range starts at the type's lowest or ends at its highest), the other inside.
  for (std::size_t i = 0; i < 20; ++i) {
    const std::size_t row = 32'768 + (i * 353) % 7'000;
    switch (i % 4) {
      case 0: a[row] = static_cast<A>(a0 - 1); break;
      case 1: a[row] = static_cast<A>(a0 + static_cast<A>(na)); break;
      case 2: b[row] = static_cast<B>(b0 - 1); break;
      default: b[row] = static_cast<B>(b0 + static_cast<B>(nb)); break;
    }
  }
  const auto v = random_values<std::int64_t>(rows, rng);
  using bound = bound_query<packed_key<A, B>, std::remove_const_t<decltype(sum_count_min)>, std::int64_t>;
  std::vector<std::tuple<A, B>> tuples(rows);
  for (std::size_t i = 0; i < rows; ++i) tuples[i] = {a[i], b[i]};
  const auto expected =
      reference_group_by<bound>(std::span<const std::tuple<A, B>>(tuples), std::span<const std::int64_t>(v));
  const auto r = group_by(keys(a, b), v, sum_count_min, range_options(copies));
  check_same(r, expected);
  REQUIRE_FALSE(r.stats.blocks.empty());
  for (const auto& blk : r.stats.blocks) CHECK(blk.range_local);
  // The box, not the packed words' range (2^32 and more apart): at most the box's keys, all of
  // them where the sample saw every column's extremes (uniform keys over at most 300).
  const auto plan = make_driver(keys(a, b), v, sum_count_min, range_options(copies));
  const auto& range = plan->plan().range_local();
  REQUIRE(range.has_value());
  CHECK(range->box.fields == 2);
  CHECK(range->buckets() <= na * nb);
  if (d == distribution::uniform) CHECK(range->buckets() == na * nb);
}

}  // namespace

TEST_CASE("the range local table of composite keys: the box of the columns' ranges, keys outside it") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  constexpr std::uint32_t top = std::numeric_limits<std::uint32_t>::max();
  for (const distribution d : {distribution::uniform, distribution::zipf, distribution::heavy_hitter,
                               distribution::sorted_runs}) {
    for (const std::uint32_t copies : {0u, 4u}) {
      const std::string distribution_name = name(d);
      CAPTURE(distribution_name);
      CAPTURE(copies);
      // Two uint32 columns (a 64-bit word): from zero, anywhere, and up to every column's largest
      // value (the box's last key is the empty marker's word).
      check_box<std::uint32_t, std::uint32_t>(0, 12, 0, 25, d, copies, rng);
      check_box<std::uint32_t, std::uint32_t>(static_cast<std::uint32_t>(rng() % (top - 100)), 17,
                                              static_cast<std::uint32_t>(rng() % (top - 100)), 16, d, copies, rng);
      check_box<std::uint32_t, std::uint32_t>(top - 9, 10, top - 29, 30, d, copies, rng);
      // A negative range of a 16-bit column beside an 8-bit one (a 32-bit word), and a range up
      // to the 16-bit column's largest value.
      check_box<std::int16_t, std::uint8_t>(-300, 8, 250, 6, d, copies, rng);
      check_box<std::uint8_t, std::int16_t>(0, 3, std::numeric_limits<std::int16_t>::max() - 4, 5, d, copies, rng);
      // A signed column across zero (-4 to 5: its bits wrap) beside an unsigned one.
      check_box<std::int16_t, std::uint32_t>(-4, 10, 77, 9, d, copies, rng);
    }
  }
}
