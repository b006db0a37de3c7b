// Seeded differential fuzzing: random queries over key types (narrow, wide, composite), sizes
// (0 rows, 1, block boundaries), distributions, schemes, strategies and configurations, hints
// (none, right, wildly wrong), block sizes, input kinds, dense key ranges, the perfect and
// range local tables and direct addressing over the key column's exact range, each checked
// against a reference written here (a std::map of count, wrapping 64-bit sum, min and max: no
// aggregate policy, identity or expression typing of the library's). Configurations are at
// most 4 x 128 work items, which every device runs: the typed error for one it cannot is
// error_test's.
//
//   GPUAGG_FUZZ_SEED=N    replay one run (the seed is printed on failure, and at the start)
//   GPUAGG_FUZZ_BUDGET=N  cases to run (default 12: CI's fixed budget; the case seeds derive
//                         from the run's seed, so a longer run extends a shorter one)
#include "support.hpp"

#include <map>
#include <tuple>

using namespace gpuagg;
using namespace gpuagg_test;

namespace {

// count, sum, min, max of an int64 column; sum and max of a uint8 column.
template <class Scheme>
constexpr auto fuzz_query() {
  return select<Scheme>(count(), sum(col<0>), min(col<0>), max(col<0>), sum(col<1>), max(col<1>));
}

enum class input_kind { vector, span, pinned, device, on_device };
constexpr const char* kind_name(input_kind k) {
  constexpr const char* names[] = {"vector", "span", "pinned", "device column", "group_by_on_device"};
  return names[static_cast<int>(k)];
}

struct expected_group {
  std::uint64_t count = 0;
  std::uint64_t sum_bits = 0;  // the int64 sum, wrapping: added as unsigned words
  std::int64_t min = std::numeric_limits<std::int64_t>::max();
  std::int64_t max = std::numeric_limits<std::int64_t>::min();
  std::uint64_t narrow_sum = 0;
  std::uint8_t narrow_max = 0;
};

std::uint64_t next_pow2(std::uint64_t x) {
  std::uint64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

/// One random case: everything drawn from `rng` except the key type and scheme (the caller's).
struct fuzz_case {
  std::size_t rows = 0;
  std::size_t groups = 1;
  distribution dist = distribution::uniform;
  std::optional<strategy_kind> strategy;
  std::optional<launch_config> config;
  std::optional<std::uint64_t> hint;
  std::size_t block_rows = 0;  // 0: the default block size
  input_kind kind = input_kind::vector;
  std::optional<bool> perfect;  // options::perfect_local_table (WORKGROUPLOCAL's perfect local table)
  std::optional<bool> range;    // options::range_local_table (WORKGROUPLOCAL's range local table)
  bool dense = false;           // hashed single keys: a dense range of keys instead of the extremes and random ones
  std::optional<bool> direct;   // options::direct_table (direct addressing over the key column's exact range)

  static fuzz_case draw(std::mt19937_64& rng) {
    fuzz_case c;
    const std::size_t block_choices[] = {0, 64, 1000, 4096};
    c.block_rows = block_choices[rng() % 4];
    // Sizes at and around block boundaries as well as arbitrary ones.
    const std::size_t b = c.block_rows ? c.block_rows : 4096;
    switch (rng() % 6) {
      case 0: c.rows = rng() % 3; break;                                 // 0, 1, 2 rows
      case 1: c.rows = b * (1 + rng() % 4); break;                        // exactly k blocks
      case 2: c.rows = b * (1 + rng() % 4) + 1; break;                    // one row past
      case 3: c.rows = b * (1 + rng() % 4) - 1; break;                    // one row short
      default: c.rows = 1 + rng() % 30'000; break;
    }
    const std::size_t group_choices[] = {1, 7, 300, 5000, 40'000};
    c.groups = group_choices[rng() % 5];
    c.dist = all_distributions[rng() % std::size(all_distributions)];
    if (rng() % 4 != 0) c.strategy = all_strategies[rng() % 3];
    if (c.strategy && rng() % 2) {
      const std::uint32_t sizes[] = {32, 64, 128};
      c.config = launch_config{1u + static_cast<std::uint32_t>(rng() % 4), sizes[rng() % 3]};
    }
    switch (rng() % 5) {
      case 0: break;                                         // estimated
      case 1: c.hint = c.groups; break;                      // right
      case 2: c.hint = 1; break;                             // far too low: the table grows
      case 3: c.hint = std::max<std::uint64_t>(1, c.groups / 100); break;
      default: c.hint = std::uint64_t{c.groups} * 1000; break;  // far too high
    }
    c.kind = static_cast<input_kind>(rng() % 5);
    if (rng() % 3 == 0) c.perfect = rng() % 2 == 0;
    if (rng() % 3 == 0) c.range = rng() % 2 == 0;
    c.dense = rng() % 3 == 0;
    switch (rng() % 6) {
      case 0: c.direct = false; break;
      case 1: case 2: break;
      default: c.direct = true; break;
    }
    // Direct addressing needs a dense range of keys on the device: half the cases that ask for
    // it get one.
    if (c.direct.value_or(false) && rng() % 2 == 0) {
      c.dense = true;
      c.kind = rng() % 2 == 0 ? input_kind::device : input_kind::on_device;
    }
    return c;
  }
};

template <class K>
struct key_columns_for {
  static constexpr std::size_t count = 1;
};
template <class A, class B>
struct key_columns_for<std::tuple<A, B>> {
  static constexpr std::size_t count = 2;
};

/// The case on key type K (a key type, or a tuple of two for keys(a, b)) and scheme Scheme.
template <class K, class Scheme>
void run_case(const fuzz_case& c, std::mt19937_64& rng) {
  constexpr auto q = fuzz_query<Scheme>();
  constexpr bool composite = key_columns_for<K>::count == 2;
  // Keys: a dictionary of distinct keys, drawn with the case's distribution.
  std::vector<K> dictionary;
  options opts;
  if constexpr (composite) {
    using A = std::tuple_element_t<0, K>;
    using B = std::tuple_element_t<1, K>;
    if (c.dense) {
      // A box of keys (the range local table's composite case): a run of consecutive values of
      // each column from anywhere in its type's range, up to its largest value.
      const auto run = [&](auto type, std::size_t n) {
        using T = decltype(type);
        const std::int64_t lowest = std::numeric_limits<T>::min();
        const std::int64_t room = std::int64_t{std::numeric_limits<T>::max()} - lowest - std::int64_t(n - 1);
        const std::int64_t first = rng() % 4 == 0 ? room : std::int64_t(rng() % std::uint64_t(room + 1));
        return static_cast<T>(lowest + first);
      };
      const std::size_t na = std::min<std::size_t>(1 + rng() % 64, c.groups);
      const std::size_t nb = std::max<std::size_t>(1, std::min<std::size_t>(c.groups / na, 1000));
      const A a0 = run(A{}, na);
      const B b0 = run(B{}, nb);
      for (std::size_t i = 0; i < na; ++i) {
        for (std::size_t j = 0; j < nb; ++j) {
          dictionary.push_back(K{static_cast<A>(a0 + static_cast<A>(i)), static_cast<B>(b0 + static_cast<B>(j))});
        }
      }
    } else {
      std::set<K> seen;
      const auto ea = extreme_keys<A>();
      const auto eb = extreme_keys<B>();
      for (std::size_t i = 0; i < ea.size() && dictionary.size() < c.groups; ++i) {
        if (seen.insert(K{ea[i], eb[i]}).second) dictionary.push_back(K{ea[i], eb[i]});
      }
      while (dictionary.size() < c.groups) {
        const K k{static_cast<A>(rng()), static_cast<B>(rng())};
        if (seen.insert(k).second) dictionary.push_back(k);
      }
    }
  } else if constexpr (Scheme::is_identity) {
    opts.domain = key_domain(std::numeric_limits<K>::min(), std::numeric_limits<K>::max());
    dictionary = key_dictionary<K>(std::min<std::size_t>(c.groups, 60'000), rng);
  } else if (c.dense) {
    // A range of consecutive keys from anywhere in the type's range (the range local table's
    // case), up to its largest key.
    const std::size_t n = std::min<std::size_t>(c.groups, std::size_t{1} << (8 * sizeof(K) - 2));
    const auto top = static_cast<std::uint64_t>(std::numeric_limits<K>::max()) -
                     static_cast<std::uint64_t>(std::numeric_limits<K>::min()) - (n - 1);
    // (One 64-bit key may start anywhere: top + 1 wraps to 0.)
    const std::uint64_t base = rng() % 4 == 0 ? top : top == ~std::uint64_t{0} ? rng() : rng() % (top + 1);
    for (std::size_t i = 0; i < n; ++i) {
      dictionary.push_back(static_cast<K>(static_cast<std::uint64_t>(std::numeric_limits<K>::min()) + base + i));
    }
  } else {
    const std::size_t most = std::size_t{1} << std::min<std::size_t>(8 * sizeof(K) - 1, 20);
    dictionary = key_dictionary<K>(std::min(c.groups, most), rng);
  }
  const distribution dist = c.dist == distribution::all_distinct && dictionary.size() < c.rows ? distribution::uniform
                                                                                               : c.dist;
  const auto keys = draw_keys(dictionary, c.rows, dist, rng);
  const auto v64 = random_values<std::int64_t>(c.rows, rng);
  std::vector<std::uint8_t> v8(c.rows);
  for (auto& v : v8) v = static_cast<std::uint8_t>(rng() % 3 == 0 ? 255 : rng());

  // The reference written here: no aggregate policy, identity or expression typing.
  std::map<K, expected_group> want;
  for (std::size_t i = 0; i < c.rows; ++i) {
    auto& g = want[keys[i]];
    ++g.count;
    g.sum_bits += static_cast<std::uint64_t>(v64[i]);
    g.min = std::min(g.min, v64[i]);
    g.max = std::max(g.max, v64[i]);
    g.narrow_sum += v8[i];
    g.narrow_max = std::max(g.narrow_max, v8[i]);
  }

  opts.strategy = c.strategy;
  opts.config = c.config;
  opts.expected_groups = c.hint;
  opts.perfect_local_table = c.perfect;
  opts.range_local_table = c.range;
  opts.direct_table = c.direct;
  if (c.block_rows) opts.block_bytes = c.block_rows * 8;  // the widest column: int64 (keys at most 8 bytes)

  using result_t = result<K, std::uint64_t, std::int64_t, std::int64_t, std::int64_t, std::uint64_t, std::uint8_t>;
  result_t got;
  const auto split = [&](const auto& to_column) {
    if constexpr (composite) {
      std::vector<std::tuple_element_t<0, K>> a(c.rows);
      std::vector<std::tuple_element_t<1, K>> b(c.rows);
      for (std::size_t i = 0; i < c.rows; ++i) std::tie(a[i], b[i]) = keys[i];
      return to_column(a, b);
    } else {
      return to_column(keys);
    }
  };
  switch (c.kind) {
    case input_kind::vector:
      got = split([&](const auto&... k) { return group_by(gpuagg::keys(k...), values(v64, v8), q, opts); });
      break;
    case input_kind::span:
    case input_kind::pinned: {
      // Pinned memory of the context reaches group_by as a span over it, like any span.
      const bool pinned = c.kind == input_kind::pinned;
      const auto as_span = [&](const auto& host) {
        using T = typename std::remove_cvref_t<decltype(host)>::value_type;
        if (!pinned) return std::pair{std::span<const T>(host), std::shared_ptr<pinned_array<T>>()};
        auto array = std::make_shared<pinned_array<T>>(ctx(), host.size());
        std::copy(host.begin(), host.end(), array->data());
        return std::pair{std::span<const T>(array->data(), host.size()), array};
      };
      const auto s64 = as_span(v64);
      const auto s8 = as_span(v8);
      got = split([&](const auto&... k) {
        const auto spans = std::make_tuple(as_span(k)...);
        return std::apply(
            [&](const auto&... s) { return group_by(gpuagg::keys(s.first...), values(s64.first, s8.first), q, opts); },
            spans);
      });
      break;
    }
    case input_kind::device:
      got = split([&](const auto&... k) {
        return group_by(gpuagg::keys(upload(k)...), values(upload(v64), upload(v8)), q, opts);
      });
      break;
    case input_kind::on_device:
      got = split([&](const auto&... k) {
        const auto d = group_by_on_device(gpuagg::keys(upload(k)...), values(upload(v64), upload(v8)), q, opts);
        result_t back;
        const std::size_t n = d.size();
        back.keys.resize(n);
        if constexpr (composite) {
          back.keys.template column<0>() = download<std::tuple_element_t<0, K>>(d.key_columns[0], n);
          back.keys.template column<1>() = download<std::tuple_element_t<1, K>>(d.key_columns[1], n);
        } else {
          back.keys = download<K>(d.keys, n);
        }
        std::get<0>(back.columns) = download<std::uint64_t>(d.template column<0>(), n);
        std::get<1>(back.columns) = download<std::int64_t>(d.template column<1>(), n);
        std::get<2>(back.columns) = download<std::int64_t>(d.template column<2>(), n);
        std::get<3>(back.columns) = download<std::int64_t>(d.template column<3>(), n);
        std::get<4>(back.columns) = download<std::uint64_t>(d.template column<4>(), n);
        std::get<5>(back.columns) = download<std::uint8_t>(d.template column<5>(), n);
        back.stats = d.stats;
        return back;
      });
      break;
  }

  REQUIRE(got.size() == want.size());
  std::size_t wrong = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const auto found = want.find(got.keys[i]);
    if (found == want.end()) {
      ++wrong;
      continue;
    }
    const auto& w = found->second;
    const bool ok = got.template column<0>()[i] == w.count &&
                    got.template column<1>()[i] == static_cast<std::int64_t>(w.sum_bits) &&
                    got.template column<2>()[i] == w.min && got.template column<3>()[i] == w.max &&
                    got.template column<4>()[i] == w.narrow_sum && got.template column<5>()[i] == w.narrow_max;
    wrong += !ok;
  }
  CHECK_MESSAGE(wrong == 0, wrong << " of " << want.size() << " groups missing or wrong");
  // A table of C buckets holds at most C groups: a hint whose first table is too small for the
  // groups must have grown it (hash schemes; direct addressing has no table to grow).
  if constexpr (!Scheme::is_identity) {
    if (c.hint) {
      const std::uint64_t first = next_pow2(std::max<std::uint64_t>(2 * *c.hint, 16));
      if (want.size() > first) CHECK(got.stats.table_growths >= 1);
    }
  }
  if (c.strategy && c.config && !got.stats.blocks.empty()) {
    for (const auto& b : got.stats.blocks) CHECK(b.params == execution_params{*c.strategy, *c.config});
  }
}

}  // namespace

TEST_CASE("differential fuzz: random queries against a reference written in the test") {
  const std::uint64_t seed = std::getenv("GPUAGG_FUZZ_SEED") ? std::stoull(std::getenv("GPUAGG_FUZZ_SEED"))
                                                             : fresh_seed();
  const std::size_t budget = std::getenv("GPUAGG_FUZZ_BUDGET") ? std::stoull(std::getenv("GPUAGG_FUZZ_BUDGET")) : 12;
  MESSAGE("GPUAGG_FUZZ_SEED=" << seed << " GPUAGG_FUZZ_BUDGET=" << budget);
  CAPTURE(seed);
  std::mt19937_64 seeds(seed);
  for (std::size_t i = 0; i < budget; ++i) {
    const std::uint64_t case_seed = seeds();
    std::mt19937_64 rng(case_seed);
    const auto c = fuzz_case::draw(rng);
    const unsigned key_kind = static_cast<unsigned>(rng() % 5);
    CAPTURE(i);
    CAPTURE(case_seed);
    CAPTURE(key_kind);
    CAPTURE(c.rows);
    CAPTURE(c.groups);
    CAPTURE(name(c.dist));
    CAPTURE(c.strategy.value_or(strategy_kind::shared));
    CAPTURE(c.strategy.has_value());
    CAPTURE(c.config.value_or(launch_config{}));
    CAPTURE(c.hint.value_or(0));
    CAPTURE(c.block_rows);
    CAPTURE(kind_name(c.kind));
    CAPTURE(c.perfect.has_value());
    CAPTURE(c.perfect.value_or(false));
    CAPTURE(c.range.has_value());
    CAPTURE(c.range.value_or(false));
    CAPTURE(c.direct.has_value());
    CAPTURE(c.direct.value_or(false));
    CAPTURE(c.dense);
    switch (key_kind) {
      case 0: run_case<std::uint32_t, hashing<>>(c, rng); break;
      case 1: run_case<std::int64_t, hashing<murmur3_finalizer, quadratic_probing>>(c, rng); break;
      case 2: run_case<std::int16_t, hashing<>>(c, rng); break;
      case 3: run_case<std::int16_t, direct_addressing>(c, rng); break;
      default: run_case<std::tuple<std::uint8_t, std::int16_t>, hashing<>>(c, rng); break;
    }
  }
}
