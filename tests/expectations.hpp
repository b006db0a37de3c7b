#pragma once
// Independent expectations (tests/expectations*_test.cpp): every output below is a number
// written by hand from the README's and aggregate.hpp's stated semantics, not computed through
// the library's aggregate policies, identities, expression typing or reference_group_by. The
// other tests check the device against a CPU reference that shares those policies, so a wrong
// identity (min over uint starting at 0), a too-narrow accumulator or a wrong promotion would
// pass them all; here it fails (a min identity of 0 was tried: the integer fixtures fail).
//
// Each value type has a fixture of a few groups whose rows are chosen so that one mistake shows:
// a group of only negative values (a max that starts at 0), one of only large values (a min that
// starts at 0), sums past the value type (a narrow accumulator), sums past 64 bits where the
// README says integer sums wrap, NaN, infinities, -0.0 (integer-bit comparisons order it below
// every negative number), the extremes of each type. The fixtures run on every key type
// (composite keys included), strategy, scheme and input kind, and in blocks of 3 rows. The
// expected sign of a zero is not checked (the README does not state it): -0.0 == 0.0.
#include "support.hpp"

#include <array>
#include <sstream>

namespace gpuagg_expect {

using namespace gpuagg;
using namespace gpuagg_test;

constexpr double nan_v = std::numeric_limits<double>::quiet_NaN();
constexpr double inf_v = std::numeric_limits<double>::infinity();

/// One group's outputs of select(count(), sum(v), min(v), max(v), avg(v)).
template <class Sum, class V>
struct group_expectation {
  std::uint64_t count;
  Sum sum;
  V min;
  V max;
  double avg;
};

/// Rows (group index, value) and each group's expected outputs. `Sum` is written here by hand
/// (int64 for signed integers, uint64 for unsigned, double for floating point) and checked
/// against the query's output type.
template <class V, class Sum>
struct fixture {
  using value_type = V;
  using sum_type = Sum;
  std::vector<std::pair<int, V>> rows;
  std::vector<group_expectation<Sum, V>> groups;
};

// ---- the fixtures: rows and hand-computed outputs ----

inline fixture<std::int8_t, std::int64_t> int8_fixture() {
  return {{{0, 127}, {0, 127}, {0, 1}, {1, -128}, {1, -128}, {1, -1}, {2, -7}, {3, -128}, {3, 127}},
          {{3, 255, 1, 127, 85.0}, {3, -257, -128, -1, -257.0 / 3}, {1, -7, -7, -7, -7.0}, {2, -1, -128, 127, -0.5}}};
}
inline fixture<std::int16_t, std::int64_t> int16_fixture() {
  return {{{0, 32767}, {0, 32767}, {0, 1}, {1, -32768}, {1, -32768}, {1, -1}, {2, -7}, {3, -32768}, {3, 32767}},
          {{3, 65535, 1, 32767, 21845.0},
           {3, -65537, -32768, -1, -65537.0 / 3},
           {1, -7, -7, -7, -7.0},
           {2, -1, -32768, 32767, -0.5}}};
}
inline fixture<std::int32_t, std::int64_t> int32_fixture() {
  return {{{0, 2147483647}, {0, 2147483647}, {0, 1}, {1, -2147483647 - 1}, {1, -2147483647 - 1}, {1, -1}, {2, -7},
           {3, -2147483647 - 1}, {3, 2147483647}},
          {{3, 4294967295LL, 1, 2147483647, 1431655765.0},
           {3, -4294967297LL, -2147483647 - 1, -1, -4294967297.0 / 3},
           {1, -7, -7, -7, -7.0},
           {2, -1, -2147483647 - 1, 2147483647, -0.5}}};
}
inline fixture<std::int64_t, std::int64_t> int64_fixture() {
  constexpr std::int64_t max = 9223372036854775807LL;
  constexpr std::int64_t min = -max - 1;
  // 2 max + 1 = 2^64 - 1 wraps to -1; min + -1 wraps to max.
  return {{{0, max}, {0, max}, {0, 1}, {1, min}, {1, -1}, {1, 0}, {2, -7}, {3, min}, {3, max}},
          {{3, -1, 1, max, -1.0 / 3},
           {3, max, min, 0, 9223372036854775807.0 / 3},
           {1, -7, -7, -7, -7.0},
           {2, -1, min, max, -0.5}}};
}
inline fixture<std::uint8_t, std::uint64_t> uint8_fixture() {
  return {{{0, 255}, {0, 255}, {0, 1}, {1, 200}, {1, 100}, {1, 250}, {2, 0}, {3, 5}, {3, 3}},
          {{3, 511, 1, 255, 511.0 / 3}, {3, 550, 100, 250, 550.0 / 3}, {1, 0, 0, 0, 0.0}, {2, 8, 3, 5, 4.0}}};
}
inline fixture<std::uint16_t, std::uint64_t> uint16_fixture() {
  return {{{0, 65535}, {0, 65535}, {0, 1}, {1, 60000}, {1, 40000}, {1, 65000}, {2, 0}, {3, 5}, {3, 3}},
          {{3, 131071, 1, 65535, 131071.0 / 3},
           {3, 165000, 40000, 65000, 55000.0},
           {1, 0, 0, 0, 0.0},
           {2, 8, 3, 5, 4.0}}};
}
inline fixture<std::uint32_t, std::uint64_t> uint32_fixture() {
  return {{{0, 4294967295U}, {0, 4294967295U}, {0, 1}, {1, 4000000000U}, {1, 3000000000U}, {1, 4294967294U},
           {2, 0}, {3, 5}, {3, 3}},
          {{3, 8589934591ULL, 1, 4294967295U, 8589934591.0 / 3},
           {3, 11294967294ULL, 3000000000U, 4294967294U, 11294967294.0 / 3},
           {1, 0, 0, 0, 0.0},
           {2, 8, 3, 5, 4.0}}};
}
inline fixture<std::uint64_t, std::uint64_t> uint64_fixture() {
  constexpr std::uint64_t max = 18446744073709551615ULL;
  // 2 max + 1 wraps to max; max + 2 wraps to 1.
  return {{{0, max}, {0, max}, {0, 1}, {1, max}, {1, 2}, {1, 0}, {2, 0}, {3, 5}, {3, 3}},
          {{3, max, 1, max, 18446744073709551615.0 / 3},
           {3, 1, 0, max, 1.0 / 3},
           {1, 0, 0, 0, 0.0},
           {2, 8, 3, 5, 4.0}}};
}
inline fixture<float, double> float_fixture() {
  constexpr float fmax = 3.40282346638528859811704183484516925440e+38F;
  constexpr float fnan = std::numeric_limits<float>::quiet_NaN();
  constexpr float finf = std::numeric_limits<float>::infinity();
  return {
      {{0, fnan}, {0, 1.5F}, {0, -3.0F}, {1, fnan}, {1, fnan}, {2, finf}, {2, -finf}, {3, fmax}, {3, fmax},
       // 2^24 + 1 is exact in double, rounds back to 2^24 in float in either order.
       {4, 16777216.0F}, {4, 1.0F}, {5, -0.0F}, {5, -1.0F}, {6, -0.0F}, {6, 1.0F}, {7, -fmax}, {7, 0.25F}},
      {{3, nan_v, -3.0F, fnan, nan_v},
       {2, nan_v, fnan, fnan, nan_v},
       {2, nan_v, -finf, finf, nan_v},
       // 2 FLT_MAX is finite in double: float sums accumulate in double.
       {2, 6.80564693277057719623408366969033850880e+38, fmax, fmax, 3.40282346638528859811704183484516925440e+38},
       {2, 16777217.0, 1.0F, 16777216.0F, 8388608.5},
       {2, -1.0, -1.0F, 0.0F, -0.5},
       {2, 1.0, 0.0F, 1.0F, 0.5},
       {2, -3.40282346638528859811704183484516925440e+38 + 0.25, -fmax, 0.25F,
        (-3.40282346638528859811704183484516925440e+38 + 0.25) / 2}}};
}
inline fixture<double, double> double_fixture() {
  constexpr double dmax = 1.79769313486231570815e+308;
  constexpr double denorm = 4.94065645841246544177e-324;
  return {{{0, nan_v}, {0, 1.5}, {0, -3.0}, {1, nan_v}, {1, nan_v}, {2, inf_v}, {2, -inf_v}, {3, dmax}, {3, dmax},
           {4, denorm}, {4, 1.0}, {5, -0.0}, {5, -1.0}, {6, -0.0}, {6, 1.0}, {7, -dmax}, {7, 0.25}},
          {{3, nan_v, -3.0, nan_v, nan_v},
           {2, nan_v, nan_v, nan_v, nan_v},
           {2, nan_v, -inf_v, inf_v, nan_v},
           // 2 DBL_MAX overflows to +inf in double (IEEE), and so does the average.
           {2, inf_v, dmax, dmax, inf_v},
           // The smallest subnormal is the minimum; 1 + it rounds to 1.
           {2, 1.0, denorm, 1.0, 0.5},
           {2, -1.0, -1.0, 0.0, -0.5},
           {2, 1.0, 0.0, 1.0, 0.5},
           {2, -dmax, -dmax, 0.25, -dmax / 2}}};
}

/// Up to eight distinct keys of K, the type's extremes and the table's empty marker (all bits
/// set: -1 or the maximum) among them.
template <class K>
std::array<K, 8> labels() {
  constexpr K lo = std::numeric_limits<K>::min();
  constexpr K hi = std::numeric_limits<K>::max();
  if constexpr (std::is_signed_v<K>) {
    return {lo, hi, K(-1), K(0), K(1), K(lo + 1), K(hi - 1), K(2)};
  } else {
    return {K(0), hi, K(1), K(hi - 1), K(2), K(3), K(hi - 2), K(4)};
  }
}

/// Whether a device output equals a hand-computed one: NaN equals NaN, -0.0 equals 0.0 (the README
/// does not state the sign of a zero sum or extreme), everything else exactly.
template <class T, class W>
bool matches(T got, W want) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(want)) return std::isnan(got);
    return got == static_cast<T>(want);
  } else {
    return got == static_cast<T>(want);
  }
}

template <class K>
std::string show_key(const K& key) {
  std::ostringstream out;
  if constexpr (requires { std::tuple_size<K>::value; }) {
    std::apply([&](const auto&... v) { std::size_t i = 0; ((out << (i++ ? "," : "(") << +v), ...); }, key);
    out << ')';
  } else {
    out << +key;
  }
  return out.str();
}

/// Every expected group is in `r` under its label, with the expected outputs; no other group.
template <class Result, class Labels, class F>
void check_groups(const Result& r, const Labels& label, const F& f) {
  REQUIRE(r.size() == f.groups.size());
  for (std::size_t g = 0; g < f.groups.size(); ++g) {
    std::size_t at = r.size();
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (r.keys[i] == label[g]) at = i;
    }
    CAPTURE(g);
    const auto key = show_key(label[g]);
    CAPTURE(key);
    REQUIRE_MESSAGE(at < r.size(), "group missing");
    const auto& want = f.groups[g];
    CHECK_MESSAGE(r.template column<0>()[at] == want.count, "count " << r.template column<0>()[at]);
    CHECK_MESSAGE(matches(r.template column<1>()[at], want.sum), "sum " << +r.template column<1>()[at]);
    CHECK_MESSAGE(matches(r.template column<2>()[at], want.min), "min " << +r.template column<2>()[at]);
    CHECK_MESSAGE(matches(r.template column<3>()[at], want.max), "max " << +r.template column<3>()[at]);
    CHECK_MESSAGE(matches(r.template column<4>()[at], want.avg), "avg " << r.template column<4>()[at]);
  }
}

inline const auto five = select(count(), sum(col<0>), min(col<0>), max(col<0>), avg(col<0>));
inline const auto five_murmur =
    select<hashing<murmur3_finalizer, quadratic_probing>>(count(), sum(col<0>), min(col<0>), max(col<0>), avg(col<0>));
inline const auto five_direct =
    select<direct_addressing>(count(), sum(col<0>), min(col<0>), max(col<0>), avg(col<0>));

/// The fixture's rows in a seeded random order, keyed by `label`.
template <class F, class Labels>
auto fixture_rows(const F& f, const Labels& label, std::mt19937_64& rng) {
  using K = std::remove_cvref_t<decltype(label[0])>;
  auto rows = f.rows;
  std::shuffle(rows.begin(), rows.end(), rng);
  std::pair<std::vector<K>, std::vector<typename F::value_type>> out;
  for (const auto& [g, v] : rows) {
    out.first.push_back(label[static_cast<std::size_t>(g)]);
    out.second.push_back(v);
  }
  return out;
}

/// The strategies `strategies` (fixed, 2 x 64 work items), each again in blocks of 3 rows (a
/// group's rows in several blocks), and the default plan unless `with_default` is false, for
/// query `q` on host vectors. (Each strategy is a JIT build of some seconds on PoCL.)
template <class K, class F, class Q>
void run_strategies(const F& f, Q q, options base = {},
                    std::vector<strategy_kind> strategies = {std::begin(all_strategies), std::end(all_strategies)},
                    bool with_default = true) {
  using V = typename F::value_type;
  using bound = bound_query<single_key<K>, std::remove_const_t<Q>, V>;
  // The output types the README states, spelt out here.
  static_assert(std::is_same_v<typename bound::output_tuple,
                               std::tuple<std::uint64_t, typename F::sum_type, V, V, double>>);
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto label = labels<K>();
  const auto [keys, vals] = fixture_rows(f, label, rng);
  for (const auto strategy : strategies) {
    for (const bool small_blocks : {false, true}) {
      CAPTURE(strategy);
      CAPTURE(small_blocks);
      options opts = base;
      opts.strategy = strategy;
      opts.config = launch_config{2, 64};
      if (small_blocks) opts.block_bytes = 3 * sizeof(V) > 3 * sizeof(K) ? 3 * sizeof(V) : 3 * sizeof(K);
      const auto r = group_by(keys, vals, q, opts);
      if (small_blocks) CHECK(r.stats.blocks.size() >= (keys.size() + 2) / 3);
      check_groups(r, label, f);
    }
  }
  if (with_default) check_groups(group_by(keys, vals, q, base), label, f);
}

/// count() and sum, min, max, avg of each of the columns I...: one program for several
/// fixtures (each JIT build costs seconds on PoCL).
template <std::size_t I>
constexpr auto four_of() {
  return std::tuple{sum(col<I>), min(col<I>), max(col<I>), avg(col<I>)};
}
template <std::size_t... I>
constexpr auto count_and_four(std::index_sequence<I...>) {
  return std::apply([](auto... o) { return select(count(), o...); }, std::tuple_cat(four_of<I>()...));
}

/// Fixture T of several over one layout: its groups at output columns 1 + 4 T ... 4 + 4 T.
template <std::size_t T, class Result, class Labels, class F>
void check_columns(const Result& r, const Labels& label, const F& f) {
  constexpr std::size_t o = 1 + 4 * T;
  for (std::size_t g = 0; g < f.groups.size(); ++g) {
    std::size_t at = r.size();
    for (std::size_t i = 0; i < r.size(); ++i) {
      if (r.keys[i] == label[g]) at = i;
    }
    CAPTURE(T);
    CAPTURE(g);
    REQUIRE_MESSAGE(at < r.size(), "group missing");
    const auto& want = f.groups[g];
    CHECK_MESSAGE(r.template column<0>()[at] == want.count, "count " << r.template column<0>()[at]);
    CHECK_MESSAGE(matches(r.template column<o>()[at], want.sum), "sum " << +r.template column<o>()[at]);
    CHECK_MESSAGE(matches(r.template column<o + 1>()[at], want.min), "min " << +r.template column<o + 1>()[at]);
    CHECK_MESSAGE(matches(r.template column<o + 2>()[at], want.max), "max " << +r.template column<o + 2>()[at]);
    CHECK_MESSAGE(matches(r.template column<o + 3>()[at], want.avg), "avg " << r.template column<o + 3>()[at]);
  }
}

/// Fixtures of one layout (row i in the same group in each) as the columns of one query, keyed
/// by K's labels, in a seeded random order: each strategy, each again in blocks of 3 rows, and
/// the default plan.
template <class K, class... F>
void run_together(const F&... fs) {
  constexpr auto q = count_and_four(std::index_sequence_for<F...>{});
  using bound = bound_query<single_key<K>, std::remove_const_t<decltype(q)>, typename F::value_type...>;
  // The output types the README states, spelt out here.
  static_assert(std::is_same_v<typename bound::output_tuple,
                               decltype(std::tuple_cat(std::tuple<std::uint64_t>{},
                                                       std::tuple<typename F::sum_type, typename F::value_type,
                                                                  typename F::value_type, double>{}...))>);
  const auto& first = std::get<0>(std::tie(fs...));
  const std::size_t n = first.rows.size();
  const auto same_layout = [&](const auto& f) {
    if (f.rows.size() != n || f.groups.size() != first.groups.size()) return false;
    for (std::size_t i = 0; i < n; ++i) {
      if (f.rows[i].first != first.rows[i].first) return false;
    }
    return true;
  };
  REQUIRE((same_layout(fs) && ...));
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  const auto label = labels<K>();
  std::vector<K> keys;
  for (const auto i : order) keys.push_back(label[static_cast<std::size_t>(first.rows[i].first)]);
  const auto column_of = [&](const auto& f) {
    std::vector<typename std::remove_cvref_t<decltype(f)>::value_type> c;
    for (const auto i : order) c.push_back(f.rows[i].second);
    return c;
  };
  const auto columns = std::tuple{column_of(fs)...};
  const auto in = std::apply([](const auto&... c) { return values(c...); }, columns);
  const auto check = [&](const auto& r) {
    REQUIRE(r.size() == first.groups.size());
    [&]<std::size_t... T>(std::index_sequence<T...>) {
      (check_columns<T>(r, label, fs), ...);
    }(std::index_sequence_for<F...>{});
  };
  std::size_t widest = sizeof(K);
  ((widest = std::max(widest, sizeof(typename F::value_type))), ...);
  for (const auto strategy : all_strategies) {
    for (const bool small_blocks : {false, true}) {
      CAPTURE(strategy);
      CAPTURE(small_blocks);
      options opts;
      opts.strategy = strategy;
      opts.config = launch_config{2, 64};
      if (small_blocks) opts.block_bytes = 3 * widest;
      const auto r = group_by(keys, in, q, opts);
      if (small_blocks) CHECK(r.stats.blocks.size() >= (n + 2) / 3);
      check(r);
    }
  }
  check(group_by(keys, in, q));
}

}  // namespace gpuagg_expect
