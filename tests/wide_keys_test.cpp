// Keys wider than 64 bits (keys(a, b, ...) whose columns' bits add up past one table word): the
// key dictionary (wide_keys.hpp) against the CPU reference, for every distribution, extreme
// values in every column, every input kind, a dictionary that must grow, the WHERE clause, and
// the errors.
#include "support.hpp"
#include "all_kinds.hpp"

#include <map>
#include <numeric>
#include <sstream>

using namespace gpuagg;
using namespace gpuagg_test;

namespace {

template <class... K>
using key_tuple = std::tuple<K...>;

/// Rows of wide keys: one vector per key column.
template <class... K>
struct wide_rows {
  std::tuple<std::vector<K>...> columns;
  std::size_t size() const { return std::get<0>(columns).size(); }
  key_tuple<K...> operator[](std::size_t i) const {
    return std::apply([i](const auto&... c) { return key_tuple<K...>{c[i]...}; }, columns);
  }
};

/// `groups` distinct tuples: every combination of the columns' extremes first (as many as
/// fit), then random tuples, some of which share all but one column with another.
template <class... K>
std::vector<key_tuple<K...>> tuple_dictionary(std::size_t groups, std::mt19937_64& rng) {
  std::vector<key_tuple<K...>> out;
  std::set<key_tuple<K...>> seen;
  const std::tuple<std::vector<K>...> extremes{extreme_keys<K>()...};
  // Extreme tuples: column c takes extreme (i / 6^c) % 6.
  for (std::size_t i = 0; out.size() < groups && i < 6 * 6 * 6; ++i) {
    std::size_t code = i;
    const auto t = std::apply(
        [&](const auto&... e) {
          return key_tuple<K...>{[&] {
            const auto pick = e[code % e.size()];
            code /= e.size();
            return pick;
          }()...};
        },
        extremes);
    if (seen.insert(t).second) out.push_back(t);
  }
  std::uniform_int_distribution<std::uint64_t> any;
  while (out.size() < groups) {
    key_tuple<K...> t{static_cast<K>(any(rng))...};
    if (!out.empty() && rng() % 2 == 0) {  // a near neighbour: one column changed, the others equal
      t = out[rng() % out.size()];
      const std::size_t changed = rng() % sizeof...(K);
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((I == changed ? void(std::get<I>(t) = static_cast<K>(any(rng))) : void()), ...);
      }(std::index_sequence_for<K...>{});
    }
    if (seen.insert(t).second) out.push_back(t);
  }
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

template <class... K>
wide_rows<K...> draw_rows(const std::vector<key_tuple<K...>>& dictionary, std::size_t rows, distribution d,
                          std::mt19937_64& rng) {
  // Draw indices into the dictionary with the distribution, sorted runs sorting the tuples.
  std::vector<std::uint32_t> index(dictionary.size());
  std::iota(index.begin(), index.end(), 0u);
  auto picks = draw_keys(index, rows, d == distribution::sorted_runs ? distribution::uniform : d, rng);
  std::vector<key_tuple<K...>> tuples(rows);
  for (std::size_t i = 0; i < rows; ++i) tuples[i] = dictionary[picks[i]];
  if (d == distribution::sorted_runs) std::sort(tuples.begin(), tuples.end());
  wide_rows<K...> out;
  std::apply([&](auto&... c) { (c.resize(rows), ...); }, out.columns);
  for (std::size_t i = 0; i < rows; ++i) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((std::get<I>(out.columns)[i] = std::get<I>(tuples[i])), ...);
    }(std::index_sequence_for<K...>{});
  }
  return out;
}

/// The CPU reference of `Query` over wide keys: each distinct tuple numbered on the host (in
/// order of first appearance), the single-key reference over the numbers, the numbers turned
/// back into tuples; groups sorted by key.
template <class Query, class V, class... K>
auto wide_reference(const wide_rows<K...>& rows, const std::vector<V>& values) {
  std::map<key_tuple<K...>, std::uint32_t> number;
  std::vector<key_tuple<K...>> tuple_of;
  std::vector<std::uint32_t> ids(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto [it, fresh] = number.try_emplace(rows[i], static_cast<std::uint32_t>(tuple_of.size()));
    if (fresh) tuple_of.push_back(rows[i]);
    ids[i] = it->second;
  }
  using bound = bound_query<single_key<std::uint32_t>, Query, V>;
  const auto by_id = reference_group_by<bound>(std::span<const std::uint32_t>(ids), std::span<const V>(values));
  using by_id_result = std::remove_cvref_t<decltype(by_id)>;
  auto out = [&]<class... O>(std::type_identity<result<std::uint32_t, O...>>) {
    result<key_tuple<K...>, O...> r;
    r.keys.resize(by_id.size());
    for (std::size_t g = 0; g < by_id.size(); ++g) {
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        ((r.keys.template column<I>()[g] = std::get<I>(tuple_of[by_id.keys[g]])), ...);
      }(std::index_sequence_for<K...>{});
    }
    r.columns = by_id.columns;
    return r;
  }(std::type_identity<by_id_result>{});
  sort_by_key(out);
  return out;
}

/// A device result read back to the host.
template <class... K, class... O>
result<key_tuple<K...>, O...> read_back(const device_result<key_tuple<K...>, O...>& d) {
  result<key_tuple<K...>, O...> r;
  r.keys.resize(d.size());
  REQUIRE(d.key_columns.size() == sizeof...(K));
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((r.keys.template column<I>() = download<K>(d.key_columns[I], d.size())), ...);
  }(std::index_sequence_for<K...>{});
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    ((std::get<I>(r.columns) = download<O>(d.template column<I>(), d.size())), ...);
  }(std::index_sequence_for<O...>{});
  r.stats = d.stats;
  return r;
}

/// `rows` zipf rows of two key columns (uint64, int64) over `groups` tuples.
wide_rows<std::uint64_t, std::int64_t> zipf_pairs(std::size_t groups, std::size_t rows, std::mt19937_64& rng) {
  return draw_rows(tuple_dictionary<std::uint64_t, std::int64_t>(groups, rng), rows, distribution::zipf, rng);
}

template <class... K>
void run_matrix(std::size_t groups, std::size_t rows) {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto dictionary = tuple_dictionary<K...>(groups, rng);
  for (const auto d : all_distributions) {
    const std::string distribution_shown = name(d);
    CAPTURE(distribution_shown);
    const auto in = draw_rows(dictionary, rows, d, rng);
    const auto v = random_values<std::int64_t>(rows, rng);
    const auto expected = wide_reference<std::remove_const_t<decltype(all_kinds)>>(in, v);
    const auto r = std::apply([&](const auto&... c) { return group_by(keys(c...), v, all_kinds); }, in.columns);
    CHECK(r.stats.rows == rows);
    CHECK(r.stats.groups == expected.size());
    CHECK(r.stats.dictionary_keys == expected.size());  // one id per distinct tuple: no key twice, no hole
    check_same(r, expected);
  }
}

}  // namespace

TEST_CASE_TEMPLATE("wide keys of two to four columns, every distribution, extremes in every column", Shape,
                   key_tuple<std::uint64_t, std::uint64_t>, key_tuple<std::int64_t, std::int32_t>,
                   key_tuple<std::uint64_t, std::uint8_t>, key_tuple<std::int32_t, std::uint32_t, std::int16_t>,
                   key_tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t>) {
  [&]<class... K>(std::type_identity<std::tuple<K...>>) {
    for (const auto& [groups, rows] : {std::pair<std::size_t, std::size_t>{1, 1}, {7, 5'000}, {3'000, 40'000},
                                      {40'000, 60'000}}) {
      CAPTURE(groups);
      CAPTURE(rows);
      run_matrix<K...>(groups, rows);
    }
  }(std::type_identity<Shape>{});
}

TEST_CASE("wide keys from every input kind: vector, span, device columns with an offset, results on the device") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto in = zipf_pairs(5'000, 50'000, rng);
  const auto& a = std::get<0>(in.columns);
  const auto& b = std::get<1>(in.columns);
  const auto v = random_values<double>(in.size(), rng);
  const auto q = select(sum(col<0>), count(), min(col<0>), max(col<0>));
  const auto expected = wide_reference<std::remove_const_t<decltype(q)>>(in, v);

  check_same(group_by(keys(std::span<const std::uint64_t>(a), std::span<const std::int64_t>(b)),
                      std::span<const double>(v), q),
             expected);
  const auto da = upload(a, 3);
  const auto db = upload(b, 3);
  const auto dv = upload(v, 3);
  check_same(group_by(keys(da, db), dv, q), expected);
  const auto on_device = group_by_on_device(keys(da, db), dv, q);
  CHECK(on_device.stats.groups == expected.size());
  check_same(read_back(on_device), expected);
  // Host input, result on the device.
  check_same(read_back(group_by_on_device(keys(a, b), v, q)), expected);
}

TEST_CASE("host input: the query over ids on device copies (ids kept, values copied) or over host ids, same result") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto in = zipf_pairs(4'000, 70'000, rng);
  const auto& a = std::get<0>(in.columns);
  const auto& b = std::get<1>(in.columns);
  const auto v = random_values<std::int64_t>(in.size(), rng);
  const auto expected = wide_reference<std::remove_const_t<decltype(all_kinds)>>(in, v);
  pinned_array<std::int64_t> pinned(ctx(), v.size());
  std::copy(v.begin(), v.end(), pinned.begin());
  const auto run_by_id = [](const auto& ids, const auto& vals, const options& by_id) {
    return group_by(ids, vals, detail::query_over_ids<std::remove_const_t<decltype(all_kinds)>>::type{}, by_id);
  };
  for (const bool ids_on_device : {true, false}) {
    CAPTURE(ids_on_device);
    options opts;
    opts.block_bytes = 16 << 10;  // 1024 rows of 16-byte keys: 69 blocks through the dictionary
    check_same(detail::wide_group_by(keys(a, b).columns, detail::as_value_tuple(v), opts, run_by_id, ids_on_device),
               expected);
    check_same(detail::wide_group_by(keys(a, b).columns, detail::as_value_tuple(pinned), opts, run_by_id, ids_on_device),
               expected);
  }
  // Two value columns of other types, one pinned and one pageable, through group_by (which
  // chooses the device copies here: PoCL's memory holds them many times over).
  const auto w = random_values<std::int32_t>(in.size(), rng);
  const auto q = select(sum(col<0>), max(col<1>), count());
  const auto r = group_by(keys(a, b), values(pinned, w), q);
  // Integer sums wrap (README): the reference adds as unsigned words, which wrap without UB.
  std::map<key_tuple<std::uint64_t, std::int64_t>, std::tuple<std::uint64_t, std::int32_t, std::uint64_t>> groups;
  for (std::size_t i = 0; i < in.size(); ++i) {
    auto [it, fresh] = groups.try_emplace(in[i], 0, w[i], 0);
    std::get<0>(it->second) += static_cast<std::uint64_t>(v[i]);
    std::get<1>(it->second) = std::max(std::get<1>(it->second), w[i]);
    ++std::get<2>(it->second);
  }
  REQUIRE(r.size() == groups.size());
  for (std::size_t g = 0; g < r.size(); ++g) {
    const key_tuple<std::uint64_t, std::int64_t> key{r.keys.template column<0>()[g], r.keys.template column<1>()[g]};
    const auto found = groups.find(key);
    REQUIRE(found != groups.end());
    CHECK(static_cast<std::uint64_t>(std::get<0>(r.columns)[g]) == std::get<0>(found->second));
    CHECK(std::get<1>(r.columns)[g] == std::get<1>(found->second));
    CHECK(std::get<2>(r.columns)[g] == std::get<2>(found->second));
  }
}

TEST_CASE("host input's query over ids runs on device copies where they take a quarter of the memory") {
  device_info d;
  d.global_mem_bytes = std::uint64_t{4} << 30;
  d.max_alloc_bytes = std::uint64_t{1} << 30;
  const std::vector<detail::column_data> one{{nullptr, {}, 0, 8, 0}};
  const std::vector<detail::column_data> two{{nullptr, {}, 0, 8, 0}, {nullptr, {}, 0, 4, 0}};
  CHECK_FALSE(detail::wide_ids_on_device(0, one, d));                   // nothing to copy
  CHECK(detail::wide_ids_on_device(std::uint64_t{1} << 26, one, d));     // 768 MiB of 1 GiB
  CHECK_FALSE(detail::wide_ids_on_device(std::uint64_t{1} << 27, one, d));  // 1.5 GiB: past a quarter
  CHECK(detail::wide_ids_on_device(std::uint64_t{1} << 26, two, d));     // 1 GiB: a quarter
  d.max_alloc_bytes = std::uint64_t{256} << 20;
  CHECK_FALSE(detail::wide_ids_on_device(std::uint64_t{1} << 26, one, d));  // a 512 MiB column: past one allocation
}

TEST_CASE("a dictionary hinted far too small grows, in the middle of blocks, and loses nothing") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto dictionary = tuple_dictionary<std::uint32_t, std::uint32_t, std::uint32_t>(30'000, rng);
  const auto in = draw_rows(dictionary, 90'000, distribution::uniform, rng);
  const auto v = random_values<std::int32_t>(in.size(), rng);
  const auto expected = wide_reference<std::remove_const_t<decltype(all_kinds)>>(in, v);
  for (const bool device : {false, true}) {
    CAPTURE(device);
    options opts;
    opts.expected_groups = 1;
    opts.block_bytes = 12 * 7'000;  // 7,000 rows of keys a block: the dictionary grows within the query
    const auto& [a, b, c] = in.columns;
    const auto r = device ? group_by(keys(upload(a), upload(b), upload(c)), upload(v), all_kinds, opts)
                          : group_by(keys(a, b, c), v, all_kinds, opts);
    CHECK(r.stats.dictionary_growths >= 2);
    CHECK(r.stats.dictionary_seconds > 0);
    CHECK(r.stats.host.dictionary > 0);
    check_same(r, expected);
  }
}

TEST_CASE("many rows of one new key at once: the race for its bucket leaves one group") {
  // Two keys, alternating, so the work items of the first block race to claim the same two
  // buckets; exactly one claims each, and every other row must find its id.
  const std::size_t rows = 200'000;
  std::vector<std::uint64_t> a(rows, ~std::uint64_t{0});
  std::vector<std::uint64_t> b(rows, ~std::uint64_t{0});
  for (std::size_t i = 0; i < rows; i += 2) b[i] = 0;
  std::vector<std::int64_t> v(rows, 1);
  const auto r = group_by(keys(a, b), v, select(count(), sum(col<0>)));
  REQUIRE(r.size() == 2);
  CHECK(r.stats.dictionary_keys == 2);
  // The rows after the first of a key meet its id within the launch that made it, where its
  // stored key may not be visible: they run again in a second launch.
  CHECK(r.stats.dictionary_launches >= 2);
  wide_rows<std::uint64_t, std::uint64_t> in;
  in.columns = {a, b};
  check_same(r, wide_reference<std::remove_const_t<decltype(select(count(), sum(col<0>)))>>(in, v));
}

TEST_CASE("wide keys with a WHERE clause: rows that fail make no group, at 0%, some and 100%") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto dictionary = tuple_dictionary<std::int64_t, std::uint64_t>(2'000, rng);
  const auto in = draw_rows(dictionary, 20'000, distribution::uniform, rng);
  std::vector<std::int32_t> v(in.size());
  for (auto& x : v) x = static_cast<std::int32_t>(rng() % 100);
  const auto& [a, b] = in.columns;
  const auto none = select(sum(col<0>), count()).where(col<0> > lit<1000>);
  const auto some = select(sum(col<0>), count()).where(col<0> < lit<3>);
  const auto all = select(sum(col<0>), count()).where(col<0> >= lit<0>);
  CHECK(group_by(keys(a, b), v, none).size() == 0);
  const auto few = group_by(keys(a, b), v, some);
  CHECK(few.size() > 0);
  CHECK(few.size() < dictionary.size());
  check_same(few, wide_reference<std::remove_const_t<decltype(some)>>(in, v));
  check_same(group_by(keys(a, b), v, all), wide_reference<std::remove_const_t<decltype(all)>>(in, v));
}

TEST_CASE("wide keys: empty input, and typed errors that lose nothing") {
  const std::vector<std::uint64_t> none64;
  const std::vector<std::int32_t> none32;
  const auto empty = group_by(keys(none64, none64), none32, select(count()));
  CHECK(empty.size() == 0);
  CHECK(empty.keys.column<0>().empty());

  const std::vector<std::uint64_t> a{1, 2, 3};
  const std::vector<std::uint64_t> b{4, 5};
  const std::vector<std::int32_t> v{1, 2, 3};
  const std::vector<std::int32_t> short_v{1, 2};
  const auto q = select(sum(col<0>));
  CHECK_THROWS_WITH_AS(group_by(keys(a, b), v, q), doctest::Contains("column lengths differ"), invalid_argument_error);
  CHECK_THROWS_WITH_AS(group_by(keys(a, a), short_v, q), doctest::Contains("column lengths differ"),
                       invalid_argument_error);
  options domain;
  domain.domain = key_domain{0, 10};
  CHECK_THROWS_AS(group_by(keys(a, a), v, q, domain), invalid_argument_error);
  CHECK_THROWS_WITH_AS(group_by(keys(upload(a), upload(a)), v, q), doctest::Contains("all on the host or all on"),
                       invalid_argument_error);
  // The inputs are untouched and a query after the errors is exact.
  const auto r = group_by(keys(a, a), v, q);
  CHECK(r.size() == 3);
}
