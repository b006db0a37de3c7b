#pragma once
// Shared test support: the OpenCL fixture, random inputs of every distribution the tests
// use, and the comparison of a device result with the CPU reference.

#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include <gpuagg/groupby.hpp>
#include <gpuagg/reference.hpp>

namespace gpuagg_test {

/// Tests never touch the user's tuning cache: unless GPUAGG_CACHE_DIR is set, winners go to a
/// directory of this test process under the system's temporary directory.
struct isolated_tuning_cache {
  std::filesystem::path dir;
  isolated_tuning_cache() {
    if (std::getenv("GPUAGG_CACHE_DIR") != nullptr) return;
    dir = std::filesystem::temp_directory_path() / ("gpuagg-test-cache-" + std::to_string(::getpid()));
    setenv("GPUAGG_CACHE_DIR", dir.c_str(), 1);
  }
  ~isolated_tuning_cache() {
    std::error_code ignored;
    if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
  }
};
inline const isolated_tuning_cache tuning_cache_for_tests;

/// The one OpenCL context every test shares (GPUAGG_DEVICE picks it).
inline gpuagg::context& ctx() { return gpuagg::default_context(); }

/// A fresh seed per run unless GPUAGG_TEST_SEED fixes one; tests CAPTURE it.
inline std::uint64_t fresh_seed() {
  if (const char* fixed = std::getenv("GPUAGG_TEST_SEED")) return std::stoull(fixed);
  static std::random_device device;
  return (std::uint64_t{device()} << 32) ^ device();
}

enum class distribution { uniform, zipf, heavy_hitter, sorted_runs, all_distinct };

inline const char* name(distribution d) {
  switch (d) {
    case distribution::uniform: return "uniform";
    case distribution::zipf: return "zipf";
    case distribution::heavy_hitter: return "heavy_hitter";
    case distribution::sorted_runs: return "sorted_runs";
    case distribution::all_distinct: return "all_distinct";
  }
  return "?";
}

inline constexpr distribution all_distributions[] = {distribution::uniform, distribution::zipf,
                                                      distribution::heavy_hitter, distribution::sorted_runs,
                                                      distribution::all_distinct};

/// Keys every test wants to see: 0, 1, the type's extremes, and the bits of the table's empty
/// marker (all ones: -1 for signed keys, the maximum for unsigned ones).
template <class Key>
std::vector<Key> extreme_keys() {
  using bits = std::make_unsigned_t<Key>;
  return {Key{0}, Key{1}, std::numeric_limits<Key>::min(), std::numeric_limits<Key>::max(),
          static_cast<Key>(static_cast<bits>(~bits{0})), static_cast<Key>(std::numeric_limits<Key>::max() - 1)};
}

/// `groups` distinct keys: the extremes first, then random ones (within [lo, hi] if given).
template <class Key>
std::vector<Key> key_dictionary(std::size_t groups, std::mt19937_64& rng, bool with_extremes = true, Key lo = 0,
                                Key hi = 0) {
  std::vector<Key> keys;
  std::unordered_set<Key> seen;
  const bool bounded = lo != hi;
  if (with_extremes && !bounded) {
    for (const Key k : extreme_keys<Key>()) {
      if (keys.size() < groups && seen.insert(k).second) keys.push_back(k);
    }
  }
  using bits = std::make_unsigned_t<Key>;
  const Key empty_marker = static_cast<Key>(static_cast<bits>(~bits{0}));
  if (bounded && lo <= empty_marker && empty_marker <= hi && groups > 0) {
    seen.insert(empty_marker);
    keys.push_back(empty_marker);
  }
  std::uniform_int_distribution<Key> any(bounded ? lo : std::numeric_limits<Key>::min(),
                                         bounded ? hi : std::numeric_limits<Key>::max());
  while (keys.size() < groups) {
    const Key k = any(rng);
    if (seen.insert(k).second) keys.push_back(k);
  }
  std::shuffle(keys.begin(), keys.end(), rng);
  return keys;
}

/// `rows` keys drawn from `dictionary` with distribution `d` (all_distinct ignores it and
/// needs a dictionary of at least `rows` keys).
template <class Key>
std::vector<Key> draw_keys(const std::vector<Key>& dictionary, std::size_t rows, distribution d,
                           std::mt19937_64& rng) {
  std::vector<Key> keys(rows);
  if (rows == 0) return keys;
  const std::size_t groups = dictionary.size();
  std::uniform_int_distribution<std::size_t> pick(0, groups - 1);
  switch (d) {
    case distribution::uniform:
      for (auto& k : keys) k = dictionary[pick(rng)];
      break;
    case distribution::zipf: {
      std::vector<double> cdf(groups);
      double total = 0;
      for (std::size_t i = 0; i < groups; ++i) cdf[i] = total += 1.0 / std::pow(double(i + 1), 1.1);
      std::uniform_real_distribution<double> u(0, total);
      for (auto& k : keys) {
        const auto rank = std::lower_bound(cdf.begin(), cdf.end(), u(rng)) - cdf.begin();
        k = dictionary[std::min<std::size_t>(static_cast<std::size_t>(rank), groups - 1)];
      }
      break;
    }
    case distribution::heavy_hitter: {
      std::bernoulli_distribution hot(0.9);
      for (auto& k : keys) k = hot(rng) ? dictionary[0] : dictionary[pick(rng)];
      break;
    }
    case distribution::sorted_runs:
      for (auto& k : keys) k = dictionary[pick(rng)];
      std::sort(keys.begin(), keys.end());
      break;
    case distribution::all_distinct:
      for (std::size_t i = 0; i < rows; ++i) keys[i] = dictionary[i % groups];
      std::shuffle(keys.begin(), keys.end(), rng);
      break;
  }
  return keys;
}

/// Random values of T. Floating-point values are multiples of 1/8 of modest size, so every
/// sum is exact in double whatever the order of additions, and results compare exactly.
template <class T>
std::vector<T> random_values(std::size_t rows, std::mt19937_64& rng) {
  std::vector<T> values(rows);
  if constexpr (std::is_floating_point_v<T>) {
    std::uniform_int_distribution<std::int32_t> eighths(-(1 << 20), 1 << 20);
    for (auto& v : values) v = static_cast<T>(eighths(rng)) / T(8);
  } else {
    std::uniform_int_distribution<T> any(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
    std::bernoulli_distribution extreme(0.01);
    for (auto& v : values) {
      v = any(rng);
      if (extreme(rng)) v = (rng() & 1) ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max();
    }
  }
  return values;
}

template <class T>
bool same_value(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b;
  } else {
    return a == b;
  }
}

template <class T>
bool close_value(T a, T b, double relative) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    if (std::isinf(a) || std::isinf(b)) return a == b;
    return std::abs(double(a) - double(b)) <= relative * std::max({std::abs(double(a)), std::abs(double(b)), 1.0});
  } else {
    return a == b;
  }
}

/// The documented NaN and infinity semantics (aggregate.hpp) on the four-group fixture the
/// driver and baseline tests share, groups sorted by key: 1 holds numbers and a NaN, 2 only
/// NaN, 3 +inf and -inf, 4 +inf and numbers (its smallest number 1.0; group 1's -3.0).
template <class Sums, class Minima, class Maxima>
void check_nan_inf_semantics(const Sums& s, const Minima& lo, const Maxima& hi) {
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(std::isnan(s[0]));   // NaN makes a sum NaN
  CHECK(lo[0] == -3.0);      // min skips NaN (NaN is the largest value)
  CHECK(std::isnan(hi[0]));  // max of a group with NaN is NaN
  CHECK(std::isnan(s[1]));
  CHECK(std::isnan(lo[1]));  // all NaN: min is NaN
  CHECK(std::isnan(hi[1]));
  CHECK(std::isnan(s[2]));  // inf + -inf
  CHECK(lo[2] == -inf);
  CHECK(hi[2] == inf);
  CHECK(s[3] == inf);
  CHECK(lo[3] == 1.0);
  CHECK(hi[3] == inf);
}

/// A device column holding `host`, starting `offset` elements into its buffer, in the memory of
/// `on` (the test device by default).
template <class T>
gpuagg::device_column<T> upload(const std::vector<T>& host, std::size_t offset = 0, gpuagg::context& on = ctx()) {
  cl::Buffer buffer = on.buffer((offset + std::max<std::size_t>(host.size(), 1)) * sizeof(T), "a test column");
  if (!host.empty()) {
    REQUIRE(on.compute_queue().enqueueWriteBuffer(buffer, CL_TRUE, offset * sizeof(T), host.size() * sizeof(T),
                                                  host.data()) == CL_SUCCESS);
  }
  return gpuagg::device_column<T>(buffer, host.size(), offset);
}

/// The first `n` elements of a device buffer.
template <class T>
std::vector<T> download(const cl::Buffer& buffer, std::size_t n) {
  std::vector<T> host(n);
  if (n > 0) {
    REQUIRE(ctx().compute_queue().enqueueReadBuffer(buffer, CL_TRUE, 0, n * sizeof(T), host.data()) == CL_SUCCESS);
  }
  return host;
}

/// A key as text: a number, or a tuple of them (composite keys).
template <class T>
std::string show(const T& value) {
  std::ostringstream out;
  if constexpr (requires { std::tuple_size<T>::value; }) {
    out << '(';
    std::apply([&](const auto&... v) { std::size_t i = 0; ((out << (i++ ? "," : "") << +v), ...); }, value);
    out << ')';
  } else {
    out << +value;
  }
  return out.str();
}

/// Every group and every output of `actual` equals `expected` (sorted by key), exactly; for
/// results whose keys are tuples (check_equal prints keys as numbers).
template <class Key, class... Outputs>
void check_same(gpuagg::result<Key, Outputs...> actual, const gpuagg::result<Key, Outputs...>& expected) {
  gpuagg::sort_by_key(actual);
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (!(actual.keys[i] == expected.keys[i])) {
      FAIL("group " << i << ": key " << show(actual.keys[i]) << ", want " << show(expected.keys[i]));
    }
  }
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          const auto& got = std::get<I>(actual.columns);
          const auto& want = std::get<I>(expected.columns);
          for (std::size_t i = 0; i < want.size(); ++i) {
            if (!same_value(got[i], want[i])) {
              FAIL("output " << I << " of key " << show(expected.keys[i]) << ": " << +got[i] << ", want "
                             << +want[i]);
            }
          }
        }(),
        ...);
  }(std::index_sequence_for<Outputs...>{});
}

/// An environment variable set for a scope: its earlier value, or its absence, comes back when
/// the scope ends, also when a failed REQUIRE leaves it.
class scoped_env {
 public:
  scoped_env(const char* name, const std::string& value) : name_(name) {
    if (const char* earlier = std::getenv(name)) earlier_ = earlier;
    set(value);
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;
  ~scoped_env() {
    if (earlier_) {
      setenv(name_, earlier_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  void set(const std::string& value) const { setenv(name_, value.c_str(), 1); }

 private:
  const char* name_;
  std::optional<std::string> earlier_;
};

/// sum, count and min of an int64 column by uint64 keys, and its bound query (the reference's).
inline const auto sum_count_min =
    gpuagg::select(gpuagg::sum(gpuagg::col<0>), gpuagg::count(), gpuagg::min(gpuagg::col<0>));
using sum_count_min_bound = gpuagg::bound_query<gpuagg::single_key<std::uint64_t>,
                                                std::remove_const_t<decltype(sum_count_min)>, std::int64_t>;

/// `two`, a query over 64-bit keys split into two uint32 columns (high, low), has the groups and
/// outputs of `one`, the same query over the 64-bit keys.
template <class Two, class One>
void check_split_keys(const Two& two, const One& one) {
  REQUIRE(two.size() == one.size());
  std::map<std::uint64_t, std::size_t> at;
  for (std::size_t i = 0; i < one.size(); ++i) at[one.keys[i]] = i;
  for (std::size_t i = 0; i < two.size(); ++i) {
    const auto& [high, low] = two.keys[i];
    const std::uint64_t key = std::uint64_t{high} << 32 | low;
    REQUIRE(at.count(key) == 1);
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ([&] { CHECK(std::get<I>(two.columns)[i] == std::get<I>(one.columns)[at[key]]); }(), ...);
    }(std::make_index_sequence<std::tuple_size_v<decltype(one.columns)>>{});
  }
}

/// Checks every element of a device result against the reference (both sorted by key here).
/// `relative` > 0 allows that much relative error in floating-point outputs.
template <class Key, class... Outputs>
void check_equal(gpuagg::result<Key, Outputs...> actual, const gpuagg::result<Key, Outputs...>& expected,
                 double relative = 0) {
  gpuagg::sort_by_key(actual);
  REQUIRE(actual.size() == expected.size());
  CHECK(actual.stats.groups == expected.size());
  std::size_t key_mismatches = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) key_mismatches += actual.keys[i] != expected.keys[i];
  REQUIRE_MESSAGE(key_mismatches == 0, key_mismatches << " keys differ");
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          const auto& got = std::get<I>(actual.columns);
          const auto& want = std::get<I>(expected.columns);
          std::size_t mismatches = 0;
          std::size_t first = 0;
          for (std::size_t i = 0; i < want.size(); ++i) {
            const bool ok = relative > 0 ? close_value(got[i], want[i], relative) : same_value(got[i], want[i]);
            if (!ok && mismatches++ == 0) first = i;
          }
          if (mismatches > 0) {
            FAIL_CHECK("output " << I << ": " << mismatches << " of " << want.size() << " differ; first at key "
                                 << +actual.keys[first] << ": got " << +got[first] << ", want " << +want[first]);
          }
        }(),
        ...);
  }(std::index_sequence_for<Outputs...>{});
}


/// The key sample reads rows 3i and 3i + 1 for i < 16384 (below row 49,154): rows from here on
/// are rows it never reads.
inline constexpr std::size_t unsampled_from = 50'000;

/// `rows` keys of the range [lowest, lowest + groups - 1] (the key's words, modulo the type):
/// every key but the two extremes drawn uniformly, the extremes on a few rows from unsampled_from
/// on, which the key sample never reads (none where `rows` ends before them).
template <class Key>
std::vector<Key> dense_range_keys(Key lowest, std::size_t groups, std::size_t rows, std::mt19937_64& rng) {
  using bits = std::make_unsigned_t<Key>;
  std::vector<Key> keys(rows);
  const auto key_at = [&](std::size_t i) { return static_cast<Key>(static_cast<bits>(static_cast<bits>(lowest) + i)); };
  std::uniform_int_distribution<std::size_t> interior(groups > 2 ? 1 : 0, groups > 2 ? groups - 2 : groups - 1);
  for (std::size_t row = 0; row < rows; ++row) {
    keys[row] = row >= unsampled_from && row % 7 == 0   ? key_at(0)
                : row >= unsampled_from && row % 7 == 1 ? key_at(groups - 1)
                                                        : key_at(interior(rng));
  }
  return keys;
}

}  // namespace gpuagg_test
