// Partial aggregates: a driver's groups exported as they are (keys as table words, accumulators
// not finalized) and taken in by another driver of the same query over other rows; and drivers
// sharing the blocks of one host input (run_blocks). Every result exact against the CPU
// reference over all rows.
#include <atomic>
#include <mutex>
#include <optional>
#include <utility>

#include "support.hpp"
#include "all_kinds.hpp"

using namespace gpuagg;
using namespace gpuagg_test;

namespace {

template <class T>
std::vector<T> slice(const std::vector<T>& v, std::size_t begin, std::size_t end) {
  return {v.begin() + static_cast<std::ptrdiff_t>(begin), v.begin() + static_cast<std::ptrdiff_t>(end)};
}

}  // namespace

TEST_CASE_TEMPLATE("two drivers over disjoint rows meet through a partial aggregate", Key, std::uint32_t,
                   std::int64_t) {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const auto d : {distribution::uniform, distribution::heavy_hitter, distribution::sorted_runs}) {
    const std::string distribution_shown = name(d);
    CAPTURE(distribution_shown);
    // 5000 groups, the extremes and the empty marker's bits among them, split unevenly.
    const auto dictionary = key_dictionary<Key>(5000, rng);
    const auto keys = draw_keys(dictionary, 40'000, d, rng);
    const auto vals = random_values<std::int64_t>(keys.size(), rng);
    const std::size_t cut = 13'000;
    const auto keys_a = slice(keys, 0, cut), keys_b = slice(keys, cut, keys.size());
    const auto vals_a = slice(vals, 0, cut), vals_b = slice(vals, cut, vals.size());
    auto a = make_driver(keys_a, vals_a, all_kinds);
    auto b = make_driver(keys_b, vals_b, all_kinds);
    const auto partial = a->export_partial();
    // The partial holds exactly the groups of rows [0, cut).
    CHECK(partial.size() == all_kinds_reference(keys_a, vals_a).size());
    b->absorb(partial);
    check_equal(finalize_all_kinds(*b), all_kinds_reference(keys, vals));
  }
}

TEST_CASE("absorbing a partial aggregate larger than the table grows it first") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  // Driver b sees 16 groups and sizes its table for them; a's partial brings 30,000 more.
  const auto many = key_dictionary<std::uint64_t>(30'000, rng);
  const auto few = key_dictionary<std::uint64_t>(16, rng);
  const auto keys_a = draw_keys(many, 90'000, distribution::uniform, rng);
  const auto keys_b = draw_keys(few, 20'000, distribution::uniform, rng);
  const auto vals_a = random_values<std::int64_t>(keys_a.size(), rng);
  const auto vals_b = random_values<std::int64_t>(keys_b.size(), rng);
  auto a = make_driver(keys_a, vals_a, all_kinds);
  auto b = make_driver(keys_b, vals_b, all_kinds);
  const auto partial = a->export_partial();
  b->run_remaining();
  const std::uint64_t before = b->stats().table_capacity;
  b->absorb(partial);
  CHECK(b->stats().table_growths >= 1);
  CHECK(b->stats().table_capacity > before);
  auto keys = keys_a;
  keys.insert(keys.end(), keys_b.begin(), keys_b.end());
  auto vals = vals_a;
  vals.insert(vals.end(), vals_b.begin(), vals_b.end());
  const auto r = finalize_all_kinds(*b);
  CHECK(double(r.size()) <= 0.5 * double(r.stats.table_capacity));  // the load factor holds after the growth
  check_equal(r, all_kinds_reference(keys, vals));
}

TEST_CASE("a partial aggregate of direct addressing, and one with a key outside the domain") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto query = select<direct_addressing>(sum(col<0>), count());
  using bound = bound_query<single_key<std::int32_t>, std::remove_const_t<decltype(query)>, std::int64_t>;
  std::uniform_int_distribution<std::int32_t> in_domain(-50, 949);
  std::vector<std::int32_t> keys(30'000);
  for (auto& k : keys) k = in_domain(rng);
  const auto vals = random_values<std::int64_t>(keys.size(), rng);
  options opts;
  opts.domain = {-50, 949};
  // A driver reads its columns when it runs: they must outlive it (no temporaries).
  const auto keys_a = slice(keys, 0, 10'000), keys_b = slice(keys, 10'000, keys.size());
  const auto vals_a = slice(vals, 0, 10'000), vals_b = slice(vals, 10'000, vals.size());
  auto a = make_driver(keys_a, vals_a, query, opts);
  auto b = make_driver(keys_b, vals_b, query, opts);
  b->absorb(a->export_partial());
  check_equal(b->finalize_to_host<std::int64_t, std::uint64_t>(),
              reference_group_by<bound>(std::span<const std::int32_t>(keys), std::span<const std::int64_t>(vals)));
  // A partial whose key the domain does not hold is a typed error, not a lost group.
  auto c = make_driver(keys_a, vals_a, query, opts);
  auto outside = c->export_partial();
  REQUIRE(outside.size() > 0);
  outside.keys[0] = static_cast<std::uint32_t>(5000);
  auto d = make_driver(keys_b, vals_b, query, opts);
  CHECK_THROWS_AS(d->absorb(outside), key_out_of_domain_error);
}

TEST_CASE("a partial aggregate whose columns differ in length is rejected") {
  std::vector<std::uint32_t> keys{1, 2, 3};
  std::vector<std::int64_t> vals{4, 5, 6};
  auto a = make_driver(keys, vals, all_kinds);
  auto partial = a->export_partial();
  std::get<0>(partial.accumulators).pop_back();
  auto b = make_driver(keys, vals, all_kinds);
  CHECK_THROWS_AS(b->absorb(partial), invalid_argument_error);
}

TEST_CASE("drivers sharing the blocks of one host input, each taking the next free block") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto dictionary = key_dictionary<std::uint32_t>(3000, rng);
  const auto keys = draw_keys(dictionary, 200'000, distribution::uniform, rng);
  const auto vals = random_values<std::int64_t>(keys.size(), rng);
  options opts;
  opts.block_bytes = 64 << 10;  // 8 Ki rows of int64 values a block: 25 blocks
  auto a = make_driver(keys, vals, all_kinds, opts);
  auto b = make_driver(keys, vals, all_kinds, opts);
  const std::uint64_t block = a->block_rows();
  REQUIRE(block == b->block_rows());
  std::atomic<std::uint64_t> next_block{0};
  std::vector<std::uint64_t> taken_by_a, taken_by_b;
  const auto queue = [&](std::vector<std::uint64_t>& taken) {
    return [&]() -> std::optional<std::pair<std::uint64_t, std::uint64_t>> {
      const std::uint64_t first = next_block.fetch_add(1) * block;
      if (first >= keys.size()) return std::nullopt;
      taken.push_back(first);
      return std::pair{first, std::min<std::uint64_t>(block, keys.size() - first)};
    };
  };
  {
    std::jthread other([&] { b->run_blocks(queue(taken_by_b)); });
    a->run_blocks(queue(taken_by_a));
  }
  CHECK(taken_by_a.size() + taken_by_b.size() == (keys.size() + block - 1) / block);
  a->absorb(b->export_partial());
  check_equal(finalize_all_kinds(*a), all_kinds_reference(keys, vals));
}

TEST_CASE("a driver over no rows merges the partial aggregates of others") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto dictionary = key_dictionary<std::int64_t>(4000, rng);
  const auto keys = draw_keys(dictionary, 30'000, distribution::zipf, rng);
  const auto vals = random_values<std::int64_t>(keys.size(), rng);
  const auto keys_a = slice(keys, 0, 10'000), keys_b = slice(keys, 10'000, keys.size());
  const auto vals_a = slice(vals, 0, 10'000), vals_b = slice(vals, 10'000, vals.size());
  const std::vector<std::int64_t> no_keys;
  const std::vector<std::int64_t> no_vals;
  auto merger = make_driver(no_keys, no_vals, all_kinds);
  // Before anything is absorbed it holds nothing, and exports nothing.
  CHECK(merger->export_partial().size() == 0);
  merger->absorb(make_driver(keys_a, vals_a, all_kinds)->export_partial());
  merger->absorb(make_driver(keys_b, vals_b, all_kinds)->export_partial());
  check_equal(finalize_all_kinds(*merger), all_kinds_reference(keys, vals));
}
