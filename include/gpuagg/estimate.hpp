#pragma once
// How many groups: the estimate that sizes the table when the caller gives no hint.
//
// Pure host code (no OpenCL): the driver gathers the evidence on the device or the host and
// these functions decide. Three stages, each run only when the one before cannot decide, so the
// cost follows the query's own cost (few groups: a fast query and a cheap estimate):
//   1. the key sample's frequencies (16 Ki keys): Chao1's estimate from them when the sample has
//      seen nearly every group (few keys seen once), or when Chao's variance gives it a small
//      error and the sample shows no power law;
//   2. two HyperLogLog sketches of a large strided sample (every sampled row, and a quarter),
//      fitted by the number of distinct keys a sample of n rows draws from G equally likely
//      groups, G (1 - e^{-n/G}), after the sample's frequent keys are set aside; accepted when
//      both sample sizes fit one G and the sample repeats keys (the fit then determines G);
//   sorted input (the sampled rows and their neighbours in order) is counted by its runs
//   instead of stages 2 and 3, where the neighbours show enough run ends (sorted_input_groups);
//   3. otherwise a sketch of every key (device input; straight after stage 1 where the sample's
//      frequent keys show a power law, on which stage 2's fit fails), or for host input, where a pass over
//      every key would cost more than the transfer it precedes, the sample's power-law growth,
//      bounded by the runs of equal neighbours the sample saw (sorted input).
// Every stage's result is also bounded by the runs bound: a group has at least one run of
// equal keys, so the groups are at most the runs, which the sampled rows' right neighbours
// estimate. HyperLogLog: Flajolet et al. 2007; the estimator is Ertl's ("New cardinality
// estimation algorithms for HyperLogLog sketches", 2017), unbiased over the whole range without
// empirical bias tables.

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "detail/fixed_string.hpp"
#include "runtime/host_copy.hpp"

namespace gpuagg {

/// Where a query's planned group count came from.
enum class estimate_source : std::uint8_t {
  none,         ///< empty input
  hint,         ///< options::expected_groups
  domain,       ///< direct addressing: the key domain's size
  sample,       ///< stage 1: the key sample's frequencies
  sketch,       ///< stage 2: sketches of a strided sample
  runs,         ///< sorted input: the runs its key sample's neighbours show
  full_sketch,  ///< stage 3, device input: a sketch of every key
  extrapolated  ///< stage 3, host input: the strided sample's growth (or its power law), bounded by its runs
};

constexpr std::string_view to_string(estimate_source source) noexcept {
  switch (source) {
    case estimate_source::none: return "none";
    case estimate_source::hint: return "hint";
    case estimate_source::domain: return "domain";
    case estimate_source::sample: return "sample";
    case estimate_source::sketch: return "sketch";
    case estimate_source::runs: return "runs";
    case estimate_source::full_sketch: return "full_sketch";
    case estimate_source::extrapolated: return "extrapolated";
  }
  return "?";
}
inline std::ostream& operator<<(std::ostream& os, estimate_source source) { return os << to_string(source); }

namespace detail {

/// The relative error a plan allows an estimate: 2.5 standard errors of the sketch (0.8%).
inline constexpr double estimate_tolerance = 0.02;

// ---- HyperLogLog ---------------------------------------------------------------------------

/// 2^14 registers: a relative standard error of 1.04 / 128 = 0.8%, and 64 KiB of 32-bit
/// registers on the device, 16 KiB where they are bytes (byte_sketch_registers); they stay in
/// the L2 while every row updates one.
inline constexpr unsigned sketch_precision = 14;
inline constexpr std::size_t sketch_registers = std::size_t{1} << sketch_precision;

/// Rows the group estimate's second stage sketches: on the device a strided 1/32 of 2^27 rows
/// reads a quarter of the key column's sectors. On the host each strided row is a cache line
/// read from memory the input's own copies (pageable staging, pinned DMA) need at the same
/// time, so the sample is as small as the extrapolation allows: its linear count still sees
/// the repeated keys of 2^19 rows at 2^24 groups of 2^27 rows (about 8,000, a fit 2.5% off),
/// and 2^17 and 2^19 rows still fit a power law. Over 4 seeds of 2^27 rows at
/// 2^14 to 2^26 groups: uniform 0.94-1.07x, zipf 0.79-1.18x, 90% heavy hitter 0.74-1.46x
/// (2^20 rows: 0.91-1.04x, 0.71-1.01x, 0.86-1.11x, at about 1.5 ms more of the host's time).
inline constexpr std::uint64_t device_sketch_rows = std::uint64_t{1} << 22;
inline constexpr std::uint64_t host_sketch_rows = std::uint64_t{1} << 19;
/// On the host 2^18 rows first: where they repeat keys enough for stage 2 to accept its fit (up
/// to about 2^20 groups of 2^27 rows; 2^17 rows did not decide at 2^20 and the second sketch
/// followed, 3.4-3.7 ms of estimate against 1.3), the estimate costs half the cache misses;
/// otherwise the full host_sketch_rows sketch follows. The first is skipped where the key
/// sample repeats fewer than host_first_sketch_min_repeats keys: 16 Ki keys from G equally
/// likely groups repeat about 2^27 / G of them, over 100 where the first sketch can decide,
/// about 8 at 2^24 groups, where it would only add its cost (the frequent keys' own repeats
/// not counted: estimate_in_stages).
inline constexpr std::uint64_t host_first_sketch_rows = std::uint64_t{1} << 18;
inline constexpr std::uint64_t host_first_sketch_min_repeats = 32;
/// The host's sketch reads runs of 2^host_sketch_run_log2 neighbouring rows, a run's stride
/// apart, where the key sample finds neighbours unrelated: a run of 8 keys is one cache line
/// where 8 strided rows are eight, and the misses bound the sketch. Where neighbours repeat
/// keys (runs_share above host_sketch_run_max_share: shuffled keys of 256 or more groups repeat
/// one about 1/G of the time) or keep an order, a run would show fewer distinct keys than as
/// many strided rows, and the rows stay strided; keys that cluster without repeating their
/// neighbour are caught by the sketch itself (runs_cluster).
inline constexpr unsigned host_sketch_run_log2 = 3;
inline constexpr double host_sketch_run_max_share = 1.0 / 256;
inline constexpr unsigned host_sketch_run_rows_log2(double runs_share, bool ordered) noexcept {
  return !ordered && runs_share <= host_sketch_run_max_share ? host_sketch_run_log2 : 0;
}
/// The largest register value: the rank of a hash whose remaining 64 - p bits are all zero.
inline constexpr unsigned sketch_max_rank = 64 - sketch_precision + 1;

/// The sketch's hash of a key's bits: murmur3's 64-bit finalizer (a bijection with full
/// avalanche) of the bits xor a constant, so that key 0 does not hash to 0.
inline constexpr std::uint64_t sketch_salt = 0x9E3779B97F4A7C15ULL;
inline constexpr std::uint64_t sketch_mul1 = 0xFF51AFD7ED558CCDULL;
inline constexpr std::uint64_t sketch_mul2 = 0xC4CEB9FE1A85EC53ULL;

constexpr std::uint64_t sketch_hash(std::uint64_t bits) noexcept {
  std::uint64_t h = bits ^ sketch_salt;
  h ^= h >> 33;
  h *= sketch_mul1;
  h ^= h >> 33;
  h *= sketch_mul2;
  h ^= h >> 33;
  return h;
}

/// The register a hash updates (its top p bits) and the rank it offers (1 + the leading zeros
/// of the remaining bits).
struct sketch_update {
  std::uint32_t index;
  std::uint32_t rank;
};
constexpr sketch_update sketch_slot(std::uint64_t hash) noexcept {
  const std::uint64_t rest = hash << sketch_precision;
  const auto rank = rest == 0 ? sketch_max_rank : static_cast<std::uint32_t>(std::countl_zero(rest)) + 1;
  return {static_cast<std::uint32_t>(hash >> (64 - sketch_precision)), rank};
}

/// The same hash and slot in OpenCL C, generated from the constants above so the device and
/// the host sketch agree register for register (tests compare them).
inline constexpr auto sketch_cl_source = concat(
    fixed_string{"#define GPUAGG_SKETCH_P "}, to_fixed_string<sketch_precision>(),
    fixed_string{"u\n#define GPUAGG_SKETCH_MAX_RANK "}, to_fixed_string<sketch_max_rank>(),
    fixed_string{"u\ninline ulong gpuagg_sketch_hash(ulong h) {\n  h ^= "},
    to_hex_fixed_string<sketch_salt, 16>(), fixed_string{"UL;\n  h ^= h >> 33;\n  h *= "},
    to_hex_fixed_string<sketch_mul1, 16>(), fixed_string{"UL;\n  h ^= h >> 33;\n  h *= "},
    to_hex_fixed_string<sketch_mul2, 16>(), fixed_string{"UL;\n  h ^= h >> 33;\n  return h;\n}\n"});

/// Where sampled row i lies within its stride (a stride of `span` rows): a hash of i scaled to
/// [0, span). At a fixed place, a stride that shares factors with a period of the keys
/// (row % G, round-robin ids) sees a fraction of them, each many times: 2^27 rows of row % 2^20
/// sketched 32 rows apart show 2^15 keys. Drawn within each stride, the rows repeat keys about
/// as often as a random sample of as many rows, whatever the period, and each still lies in its
/// own stride's cache lines: the sketch reads as many sectors as at a fixed place. The hash
/// mixes its bits (two multiplies, as splitmix64's finalizer): a Weyl sequence (i times the
/// golden ratio) spreads the rows of one place in the period more evenly than chance, and the
/// host's extrapolation, which reads the sample's repeats, put 2^24 groups at every row. The
/// rows compared with their right neighbour (every compare_every(n)-th) are placed so too: at a
/// fixed place, keys in runs whose length divides the stride would show each compared row at
/// the same place in its run. Spans up to 2^32 rows.
inline constexpr std::uint64_t sample_mix_mul1 = 0x9E3779B97F4A7C15ULL;
inline constexpr std::uint64_t sample_mix_mul2 = 0xBF58476D1CE4E5B9ULL;
inline constexpr unsigned sample_mix_shift1 = 29;
inline constexpr unsigned sample_mix_shift2 = 32;
constexpr std::uint64_t sample_mix(std::uint64_t i) noexcept {
  std::uint64_t h = i * sample_mix_mul1;
  h ^= h >> sample_mix_shift1;
  h *= sample_mix_mul2;
  return h ^ (h >> sample_mix_shift2);
}
constexpr std::uint64_t stride_offset(std::uint64_t i, std::uint64_t span) noexcept {
  return ((sample_mix(i) >> 32) * span) >> 32;
}
/// Whether sampled row i is in the sub-sample (a quarter of the sample): one of each four in
/// turn, which one by a hash of the four's index. Every fourth row alone would alias as a fixed
/// place does: with keys row % G its rows hold a quarter of the keys, and stage 2 rejected
/// every fit.
constexpr bool in_sub_sample(std::uint64_t i) noexcept { return (i & 3) == (sample_mix(i >> 2) & 3); }
/// Row i of a sketch of rows `stride` apart, in runs of 2^run_log2 neighbours (one run a
/// stride of 2^run_log2 strides): the run placed within its stride at a multiple of its length,
/// so that a run of 8 64-bit keys stays one cache line, the row within the run.
constexpr std::uint64_t sketch_row(std::uint64_t i, std::uint64_t stride, unsigned run_log2 = 0) noexcept {
  const std::uint64_t run = i >> run_log2;
  return ((run * stride + stride_offset(run, stride)) << run_log2) + (i & ((std::uint64_t{1} << run_log2) - 1));
}
/// Every compare_every(n)-th sampled row of n is compared with its right neighbour.
inline constexpr unsigned compare_every_shift = 14;
inline constexpr std::uint64_t compare_every_max = 64;
constexpr std::uint64_t compare_every(std::uint64_t n) noexcept {
  return std::clamp<std::uint64_t>(n >> compare_every_shift, 1, compare_every_max);
}
/// sample_mix, stride_offset, in_sub_sample and compare_every in OpenCL C, generated from the
/// constants above as sketch_cl_source is (tests compare the device's sketches with the host's).
inline constexpr auto stride_offset_cl_source = concat(
    fixed_string{"inline ulong gpuagg_sample_mix(ulong i) {\n  ulong h = i * "},
    to_hex_fixed_string<sample_mix_mul1, 16>(), fixed_string{"UL;\n  h ^= h >> "},
    to_fixed_string<sample_mix_shift1>(), fixed_string{";\n  h *= "}, to_hex_fixed_string<sample_mix_mul2, 16>(),
    fixed_string{"UL;\n  return h ^ (h >> "}, to_fixed_string<sample_mix_shift2>(),
    fixed_string{");\n}\n"
                 "inline ulong gpuagg_stride_offset(ulong i, ulong span) {\n"
                 "  return ((gpuagg_sample_mix(i) >> 32) * span) >> 32;\n}\n"
                 "inline bool gpuagg_in_sub_sample(ulong i) { return (i & 3ul) == (gpuagg_sample_mix(i >> 2) & 3ul); }\n"
                 "inline ulong gpuagg_compare_every(ulong n) { return clamp(n >> "},
    to_fixed_string<compare_every_shift>(), fixed_string{", 1ul, "}, to_fixed_string<compare_every_max>(),
    fixed_string{"ul); }\n"});

/// Ertl's improved raw estimator over the register histogram (his Algorithm 6).
inline double sketch_estimate(std::span<const std::uint32_t> registers) {
  constexpr unsigned q = 64 - sketch_precision;
  std::array<double, q + 2> histogram{};
  for (const auto r : registers) ++histogram[std::min<std::uint32_t>(r, q + 1)];
  const double m = static_cast<double>(registers.size());
  if (histogram[0] == m) return 0.0;
  const auto sigma = [](double x) {
    if (x == 1.0) return std::numeric_limits<double>::infinity();
    double y = 1.0;
    double z = x;
    double previous = 0.0;
    do {
      x *= x;
      previous = z;
      z += x * y;
      y += y;
    } while (previous != z);
    return z;
  };
  const auto tau = [](double x) {
    if (x == 0.0 || x == 1.0) return 0.0;
    double y = 1.0;
    double z = 1.0 - x;
    double previous = 0.0;
    do {
      x = std::sqrt(x);
      previous = z;
      y *= 0.5;
      z -= (1.0 - x) * (1.0 - x) * y;
    } while (previous != z);
    return z / 3.0;
  };
  double z = m * tau(1.0 - histogram[q + 1] / m);
  for (unsigned k = q; k >= 1; --k) z = 0.5 * (z + histogram[k]);
  z += m * sigma(histogram[0] / m);
  constexpr double alpha_infinity = 0.721347520444481703680;  // 1 / (2 ln 2)
  return alpha_infinity * m * m / z;
}

/// The host's count of the key sample's frequent keys in a sketch's sampled rows: the rows they
/// hold and how many of them occur.
struct frequent_keys_count {
  std::uint64_t rows = 0;
  std::uint64_t present = 0;
};

/// The evidence of stage 2 (or 3): two sketches' distinct counts and the runs the sampled rows
/// showed. For a sketch of every key, sub_rows = 0.
struct sketch_evidence {
  std::uint64_t rows = 0;         ///< rows of the input
  std::uint64_t sample_rows = 0;  ///< rows the first sketch saw
  double sample_distinct = 0;     ///< its estimate
  std::uint64_t sub_rows = 0;     ///< rows the second sketch saw (a quarter of the sample: in_sub_sample)
  double sub_distinct = 0;        ///< its estimate
  std::uint64_t neighbour_pairs = 0;  ///< sampled rows whose right neighbour was compared
  std::uint64_t neighbour_equal = 0;  ///< ... and had the same key
  /// The host's linear count of the first sketch's rows (0: none, as on the device), precise
  /// enough to see the few repeated keys of a sample from many groups, which the sketch's 0.8%
  /// error hides.
  double sample_distinct_linear = 0;
  /// The count of the key sample's frequent keys in the first sketch's rows (nothing: not
  /// counted; the device's sketch counts only a key sample's one frequent key:
  /// device_counts_frequent). Stage 2's fit and the extrapolation set them aside by it rather
  /// than by the key sample's share: where few of the other rows repeat a key, the fit's G goes
  /// as 1 / (repeated keys), and a share's sampling error can be as many rows as the repeated
  /// keys themselves. For a 90% hot key it is 0.23% of the rows in the key sample's 16 Ki keys
  /// and still 0.06% (600 rows) in a sub-sample of 2^18, against about 330 repeated keys of the
  /// others at 2^24 groups of 2^27 rows; counted in the sketch's own rows it is none.
  std::optional<frequent_keys_count> frequent;
};

/// Whether the device's strided sketch counts the key sample's frequent keys in its rows: where
/// there is one (a heavy hitter), a comparison a row. Its share of the key sample is off by
/// 0.23% of the rows at one standard deviation for a 90% hot key, which moves stage 2's fit of
/// the other keys by as much as 9% at 2^20 groups of 2^27 rows (0.4 sampled rows a group): a
/// table a power of two too large, whose kernels take twice as long. Several would need a set
/// in the kernel; a power law's skips stage 2 on the device.
constexpr bool device_counts_frequent(std::size_t frequent_keys) noexcept { return frequent_keys == 1; }

/// Bits of the host's linear counting bitmap: 512 KiB, one per sketching thread, which stays in
/// its core's cache; at 2^20 sampled keys an error of about 380 keys (Whang et al., 1990:
/// sqrt(m (e^t - t - 1)), t = n / m), so that repetition is seen up to ~2^28 groups.
inline constexpr unsigned linear_count_bits_log2 = 22;

/// The standard error of linear counting n keys.
inline double linear_count_error(double n) {
  const double m = double(std::uint64_t{1} << linear_count_bits_log2);
  const double t = n / m;
  return std::sqrt(std::max(m * (std::exp(t) - t - 1.0), 0.0));
}

/// What the key sample of stage 1 says about its frequent keys (detail::sample_profile).
struct frequent_keys_summary {
  std::uint64_t keys = 0;  ///< keys seen often in the sample (they skew every fit)
  double share = 0;        ///< the share of the sample's rows they hold
};

/// Stage 1's estimate and its relative standard error (0 where the sample has seen nearly every
/// group, or is the input).
struct frequency_estimate {
  std::uint64_t groups = 0;
  double relative_error = 0;
};

/// The relative standard error up to which stage 1 takes Chao1 from a sample that has not seen
/// nearly every group: a plan allows 2.5 of them (plan/table_size.hpp). A 16 Ki-key sample of
/// equally likely groups has about 2% at 2^16 groups, 2.9% at 2^17 and 4.3% at 2^18; of 90% one
/// hot key over 2^10 others about 2.9%. Where it decides, the strided sketch would only have
/// added its own cost; the bound lies between the powers of four the benchmarks run, so that a
/// query's stage does not flip between runs.
inline constexpr double sample_max_relative_error = 0.035;
/// The fewest keys seen twice whose count Chao's variance trusts.
inline constexpr std::uint64_t sample_min_twice = 64;

/// Chao's variance of Chao1 (Chao 1987): f2 (r^4 / 4 + r^3 + r^2 / 2), r = f1 / f2.
inline double chao1_variance(std::uint64_t once, std::uint64_t twice) {
  if (twice == 0) return std::numeric_limits<double>::infinity();
  const double r = double(once) / double(twice);
  return double(twice) * (r * r * r * r / 4 + r * r * r + r * r / 2);
}

/// Stage 1: from the sample's frequencies (n rows, d distinct, f1 keys seen once, f2 seen
/// twice), Chao1's bias-corrected estimate d + f1 (f1 - 1) / (2 (f2 + 1)):
///   - where the sample has seen nearly every group: at most a fifth of its keys seen once (for
///     equally likely groups, about 3 rows per group);
///   - or where Chao's variance puts its relative standard error at most
///     sample_max_relative_error, and the sample shows no power law (`power_law`:
///     power_law_sample), on which Chao1, a lower bound, falls far short: zipf keys' samples have
///     errors as small (3.7-4.7%), and Chao1 finds a thirtieth to a half of their groups.
/// Otherwise nothing: the sample cannot tell.
inline std::optional<frequency_estimate> estimate_from_frequencies(std::uint64_t sample_rows, std::uint64_t distinct,
                                                                   std::uint64_t once, std::uint64_t twice,
                                                                   std::uint64_t rows, bool power_law = false) {
  if (sample_rows == 0) return std::nullopt;
  if (sample_rows >= rows) return frequency_estimate{distinct, 0};
  const double chao1 = double(distinct) + double(once) * double(once > 0 ? once - 1 : 0) / (2.0 * double(twice + 1));
  const auto groups = static_cast<std::uint64_t>(std::clamp(std::ceil(chao1), double(distinct), double(rows)));
  if (5 * once <= distinct) return frequency_estimate{groups, 0};
  if (power_law || twice < sample_min_twice) return std::nullopt;
  const double relative_error = std::sqrt(chao1_variance(once, twice)) / chao1;
  if (relative_error > sample_max_relative_error) return std::nullopt;
  return frequency_estimate{groups, relative_error};
}

/// Whether the key sample's keys fail to predict its rows' right neighbours: of `checked`
/// neighbours, `unseen` hold a key the sample never saw, where Good-Turing expects about
/// checked x f1 / n of them (f1 keys seen once in n rows: the chance that a further draw is a
/// key not yet seen), with a margin of four standard deviations and 16. A sample whose stride
/// shares factors with a period of the keys (every G-th row holds the same key) sees a few keys
/// many times, and every neighbour holds another: stage 1 would decide for those few. Its
/// frequencies then say nothing of the input's (estimate_in_stages goes on to the sketches,
/// whose rows are drawn within each stride). Neighbours are no independent draws: in runs or
/// clusters they hold the row's own key, seen, so such input passes; where they differ by
/// design (rows alternating between two sets of keys at an even stride) the sample is aliased
/// as well.
inline bool sample_aliased(std::uint64_t checked, std::uint64_t unseen, std::uint64_t once,
                           std::uint64_t sample_rows) noexcept {
  if (checked == 0 || sample_rows == 0) return false;
  const double expected = double(checked) * double(once) / double(sample_rows);
  return double(unseen) > expected + 4.0 * std::sqrt(expected) + 16.0;
}
/// Neighbours sample_aliased looks at: spread over the sample, a probe each of its counting
/// table (a few microseconds).
inline constexpr std::uint64_t aliasing_checks = 1024;

/// Whether the strided sample's sketches take byte registers (32 KiB of device memory) instead
/// of 32-bit ones (128 KiB): where the key sample's frequencies bound the groups below 2^13
/// (Chao1's d + f1^2 / (2 f2); none without keys seen twice), whose table may be smaller than
/// 128 KiB. Elsewhere the registers are a small part of the table, and atomic_max on 32-bit
/// registers is faster than the compare-and-swap a byte register takes (kernels/estimate.hpp).
inline bool byte_sketch_registers(std::uint64_t distinct, std::uint64_t once, std::uint64_t twice) {
  if (twice == 0) return once == 0 && distinct < (std::uint64_t{1} << 13);
  return double(distinct) + double(once) * double(once) / (2.0 * double(twice)) < double(std::uint64_t{1} << 13);
}

/// The distinct keys a sample of `n` rows is expected to draw from `groups` equally likely ones.
inline double expected_distinct(double groups, double n) {
  if (groups <= 0) return 0;
  return groups * -std::expm1(-n / groups);
}

/// The G for which a sample of n rows is expected to draw `distinct` keys (distinct < n), by
/// bisection on log G; nothing when the sample shows no repetition to fit.
inline std::optional<double> fit_groups(double distinct, double n) {
  if (distinct <= 0) return 0.0;
  if (distinct >= n * (1 - 1e-9)) return std::nullopt;
  double lo = std::log(distinct);
  double hi = std::log(distinct) + 60;  // e^60 groups: beyond any key width's repetition
  if (expected_distinct(std::exp(hi), n) < distinct) return std::nullopt;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (lo + hi);
    (expected_distinct(std::exp(mid), n) < distinct ? lo : hi) = mid;
  }
  return std::exp(0.5 * (lo + hi));
}

/// Above this share of distinct rows the sketches' 0.8% error leaves the equally-likely fit
/// undetermined.
inline constexpr double fit_max_distinct_share = 0.98;
/// Stage 2 accepts a fit only below this share: nearer to no repetition at all, the two sample
/// sizes fit nearly any distribution alike, so their agreement would prove nothing.
inline constexpr double accept_max_distinct_share = 0.9;

/// The runs bound: at most 1 + (rows - 1) * P(a row's right neighbour differs) groups.
inline std::optional<double> runs_bound(const sketch_evidence& e) {
  if (e.neighbour_pairs < 1024) return std::nullopt;  // too few pairs to bound anything
  const double differ = double(e.neighbour_pairs - e.neighbour_equal) / double(e.neighbour_pairs);
  // Three standard deviations of the sampled share, so a bound never cuts a true count.
  const double slack = 3.0 * std::sqrt(std::max(differ * (1 - differ), 1e-9) / double(e.neighbour_pairs));
  return 1.0 + double(e.rows - 1) * std::min(1.0, differ + slack);
}

/// A stage-2 or stage-3 decision.
struct sketch_decision {
  std::optional<std::uint64_t> groups;  ///< nothing: the sample cannot decide
  double fitted_groups = 0;             ///< the equally-likely G of the fit (0: no fit)
  double relative_error = 0;            ///< the fit's relative standard error (fit_relative_error)
};

/// The sketch's relative standard error (HyperLogLog's 1.04 / sqrt(registers)).
inline const double sketch_relative_error = 1.04 / std::sqrt(double(sketch_registers));

/// The relative standard error of the equally-likely fit's G from a distinct count of that
/// relative error over n rows: D(G) = G (1 - e^-x), x = n / G, flattens as the sample repeats
/// less, and the count's error grows by (D / G) / (dD / dG) = (1 - e^-x) / (1 - e^-x (1 + x)),
/// 8.3 times at a quarter of a row per group.
inline double fit_relative_error(double count_error, double n, double groups) {
  if (!(groups > 0) || !(n > 0)) return 0;
  const double x = n / groups;
  const double slope = -std::expm1(-x) - x * std::exp(-x);  // dD/dG = 1 - e^-x (1 + x)
  if (!(slope > 0)) return 0;
  return count_error * -std::expm1(-x) / slope;
}

/// Stage 2: the sketches of a strided sample, the sample's frequent keys set aside. Accepted
/// when the sample repeats keys (at most accept_max_distinct_share of its rows distinct) and
/// the smaller sample's count lies within 5% (and three Poisson deviations) of what the fit
/// predicts for it; then the expected distinct keys of all rows, bounded by the runs bound.
inline sketch_decision estimate_from_sketch(const sketch_evidence& e, const frequent_keys_summary& sampled_frequent) {
  sketch_decision decision;
  // The frequent keys set aside by their count in the sketch's own rows where it was taken
  // (sketch_evidence::frequent), else by the key sample's share.
  const frequent_keys_summary frequent =
      e.frequent && e.sample_rows > 0
          ? frequent_keys_summary{e.frequent->present, double(e.frequent->rows) / double(e.sample_rows)}
          : sampled_frequent;
  if (e.sample_rows == 0) return decision;
  if (e.sample_rows >= e.rows) {
    decision.groups = static_cast<std::uint64_t>(std::llround(std::max(e.sample_distinct, 1.0)));
    return decision;
  }
  const double k = double(frequent.keys);
  const double rest = std::clamp(1.0 - frequent.share, 0.0, 1.0);
  const double n = double(e.sample_rows) * rest;
  const double n_sub = double(e.sub_rows) * rest;
  const double d = std::max(e.sample_distinct - k, 0.0);
  const double d_sub = std::max(e.sub_distinct - k, 0.0);
  if (d < 0.5 || n < 1) {  // the frequent keys are every group
    decision.groups = static_cast<std::uint64_t>(std::llround(std::max(e.sample_distinct, 1.0)));
    return decision;
  }
  if (d > accept_max_distinct_share * n || e.sub_rows == 0) return decision;
  const auto g = fit_groups(d, n);
  if (!g) return decision;
  decision.fitted_groups = *g;
  const double predicted = expected_distinct(*g, n_sub);
  if (std::abs(d_sub - predicted) > 0.05 * predicted + 3.0 * std::sqrt(predicted) + 1.0) return decision;
  double groups = k + expected_distinct(*g, double(e.rows) * rest);
  const auto bound = runs_bound(e);
  // The fit's own error, where it alone decides: not where frequent keys were set aside (the
  // share the sample gives them moves the fit more than the sketch's error) or runs bound it.
  if (k == 0 && !(bound && *bound < groups)) decision.relative_error = fit_relative_error(sketch_relative_error, n, *g);
  if (bound) groups = std::min(groups, *bound);
  groups = std::clamp(groups, std::max(e.sample_distinct, 1.0), double(e.rows));
  decision.groups = static_cast<std::uint64_t>(std::llround(groups));
  return decision;
}

/// Stage 3 for host input, where the fit failed: a pass over every key would cost more than the
/// transfer it precedes, and a sample cannot bound the groups of skewed keys (Charikar et al.,
/// "Towards estimation error guarantees for distinct values", 2000). Too few groups cost a
/// table growth later, too many a table the input never fills, so this errs low: the
/// equally-likely fit of the sample without its frequent keys where it shows repetition (skew
/// makes it low), else (no repetition: many groups) the sample's growth between its two sizes
/// as a power law D(n) ~ n^b, b in [0, 1]; bounded by the runs bound and the rows.
/// `relative_error`, if given, receives the estimate's relative standard error where the fit of
/// the linear count determines it (the repeated keys' Poisson error and the count's own) and the
/// sampled rows are independent draws, else 0 (another fit or a bound decided, or neighbouring
/// rows repeat keys).
inline std::uint64_t extrapolate_from_sketch(const sketch_evidence& e, const frequent_keys_summary& frequent,
                                             double* relative_error = nullptr) {
  if (relative_error != nullptr) *relative_error = 0;
  const double d_all = std::max(e.sample_distinct, 1.0);
  if (e.sample_rows >= e.rows) return static_cast<std::uint64_t>(std::llround(d_all));
  const double rest = std::clamp(1.0 - frequent.share, 0.0, 1.0);
  const double n = double(e.sample_rows) * rest;
  const double d = std::max(e.sample_distinct - double(frequent.keys), 0.0);
  double groups = d_all;
  if (e.sample_distinct_linear > 0) {
    // The linear count sees repetition the sketch cannot: fit it where the sample repeats more
    // keys than three of the count's errors, else the sample shows no repetition at all. The
    // frequent keys are set aside by their share of this sample where it was counted.
    const double rest_counted =
        e.frequent && e.sample_rows > 0
            ? double(e.sample_rows - std::min(e.frequent->rows, e.sample_rows)) / double(e.sample_rows)
            : rest;
    const double n_linear = double(e.sample_rows) * rest_counted;
    const double d_linear =
        std::max(e.sample_distinct_linear - double(e.frequent ? e.frequent->present : frequent.keys), 0.0);
    const double repeated = n_linear - d_linear;
    // The linear count's error is that of the keys it counted: a hot key's rows set one bit.
    const double counted_error = linear_count_error(e.sample_distinct_linear);
    const auto fitted = repeated > 3.0 * counted_error + 10.0
                            ? fit_groups(d_linear, n_linear)
                            : std::nullopt;
    // No repetition seen: at most every row but the frequent keys' is a group of its own.
    groups = double(frequent.keys) + (fitted ? expected_distinct(*fitted, double(e.rows) * rest_counted)
                                             : double(e.rows) * rest_counted);
    // The fitted G goes about as 1 / (repeated keys): their relative error is its, where the
    // sampled rows are independent draws. Where neighbours repeat keys (runs, skew: more than
    // 1% of the compared pairs, against 1/G for shuffled keys) they are not, and no error is
    // reported.
    const bool independent =
        e.neighbour_pairs == 0 || double(e.neighbour_equal) <= 0.01 * double(e.neighbour_pairs);
    if (fitted && independent && relative_error != nullptr) {
      *relative_error = std::sqrt(repeated + counted_error * counted_error) / repeated;
    }
  } else if (const auto g = d < fit_max_distinct_share * n ? fit_groups(d, n) : std::nullopt) {
    groups = double(frequent.keys) + expected_distinct(*g, double(e.rows) * rest);
  } else {
    double growth = 1.0;
    if (e.sub_rows > 0 && e.sub_distinct > 0) {
      growth = std::clamp(std::log(d_all / e.sub_distinct) / std::log(double(e.sample_rows) / double(e.sub_rows)),
                          0.0, 1.0);
    }
    groups = d_all * std::pow(double(e.rows) / double(e.sample_rows), growth);
  }
  const double fitted_groups = groups;
  if (const auto bound = runs_bound(e)) groups = std::min(groups, *bound);
  groups = std::clamp(groups, d_all, double(e.rows));
  // A bound, not the fit, decided: the fit's error says nothing of it.
  if (groups != fitted_groups && relative_error != nullptr) *relative_error = 0;
  return static_cast<std::uint64_t>(std::llround(groups));
}

// ---- a power law's extrapolation (host input) -------------------------------------------------

/// The keys of a power law, 1 .. `keys`, in the pieces its sums are taken over: each of the
/// first zipf_exact_keys on its own, then runs of keys each zipf_run_ratio times as long as
/// where it starts, each stood for by its geometric middle (k^-s is smooth over a run: a
/// 2^28-key law's sums take about 130 terms).
inline constexpr double zipf_exact_keys = 32;
inline constexpr double zipf_run_ratio = 1.2;
/// Beyond 2^50 keys a double no longer counts them one by one; no input has that many rows.
inline constexpr double zipf_max_keys = 0x1p50;
struct zipf_run {
  double first = 0;  ///< its first key
  double last = 0;   ///< its last key
  double log_middle = 0;
};
/// The runs of a law of zipf_max_keys keys (a law of fewer keys takes those runs that end
/// within it and a part of the next), made once: the logarithms are most of a sum's cost.
inline const std::vector<zipf_run>& zipf_runs() {
  static const std::vector<zipf_run> runs = [] {
    std::vector<zipf_run> made;
    for (double k = 1; k <= zipf_exact_keys; ++k) made.push_back({k, k, std::log(k)});
    for (double a = zipf_exact_keys + 1; a <= zipf_max_keys;) {
      const double b = std::min(std::floor(a * zipf_run_ratio) + 1, zipf_max_keys + 1);
      made.push_back({a, b - 1, 0.5 * (std::log(a) + std::log(b - 1))});
      a = b;
    }
    return made;
  }();
  return runs;
}

/// The distinct keys `n` rows are expected to draw from a Zipf law of exponent `s` over `keys`
/// keys (key k drawn with probability k^-s / sum_j j^-s).
inline double zipf_distinct(double s, double keys, double n) {
  keys = std::floor(std::clamp(keys, 1.0, zipf_max_keys));
  // Each run's count of keys and the weight k^-s of its middle; the sums then take one
  // exponential a run.
  std::array<std::pair<double, double>, 256> terms{};
  std::size_t used = 0;
  double norm = 0;
  for (const auto& run : zipf_runs()) {
    if (run.first > keys || used == terms.size()) break;
    const double last = std::min(run.last, keys);
    const double log_middle = last == run.last ? run.log_middle : 0.5 * (std::log(run.first) + std::log(last));
    const double count = last - run.first + 1;
    const double weight = std::exp(-s * log_middle);
    terms[used++] = {count, weight};
    norm += count * weight;
  }
  const double rate = n / norm;
  double distinct = 0;
  for (std::size_t t = 0; t < used; ++t) distinct += terms[t].first * -std::expm1(-rate * terms[t].second);
  return distinct;
}

/// The root of `f`, increasing over [lo, hi] with f(lo) <= 0 <= f(hi): regula falsi with the
/// Illinois rule (the end that stays twice in a row has its value halved), to `tolerance`.
template <class F>
double increasing_root(const F& f, double lo, double hi, double f_lo, double f_hi, double tolerance) {
  // Where the chord through both ends meets zero (the middle where the ends are level).
  const auto chord = [&] {
    return f_hi == f_lo ? 0.5 * (lo + hi) : std::clamp(lo - f_lo * (hi - lo) / (f_hi - f_lo), lo, hi);
  };
  int side = 0;
  for (int i = 0; i < 60 && hi - lo > tolerance; ++i) {
    const double x = chord();
    const double fx = f(x);
    if (fx == 0) return x;
    if (fx < 0) {
      lo = x;
      f_lo = fx;
      if (side == -1) f_hi /= 2;
      side = -1;
    } else {
      hi = x;
      f_hi = fx;
      if (side == 1) f_lo /= 2;
      side = 1;
    }
  }
  return chord();
}

/// The Zipf law (exponent s, keys) whose draws give `d_small` distinct keys of `n_small` rows and
/// `d_large` of `n_large` (n_small < n_large): for each s, the keys that give d_large (on log
/// keys); then s by bisection on the smaller sample's count, which falls as s rises where the
/// larger sample's is held (a steeper law holding as many keys in the larger sample reaches
/// further into its tail, and the smaller sample sees less of it). Nothing where no law in the
/// range fits: no repetition in the larger sample, or a growth no exponent gives.
struct zipf_law {
  double exponent = 0;
  double keys = 0;
};
inline constexpr double zipf_min_exponent = 0.3;
inline constexpr double zipf_max_exponent = 3.0;
inline std::optional<zipf_law> fit_zipf(double d_small, double n_small, double d_large, double n_large) {
  if (!(d_small > 0 && d_large > d_small && n_large > n_small && d_large < fit_max_distinct_share * n_large)) {
    return std::nullopt;
  }
  // The keys, for exponent s, that n_large rows draw d_large of (nothing where even
  // zipf_max_keys draw fewer: s too steep). d_large keys draw fewer than d_large.
  const auto keys_for = [&](double s) -> std::optional<double> {
    const auto f = [&](double log_keys) { return zipf_distinct(s, std::exp(log_keys), n_large) - d_large; };
    const double lo = std::log(d_large);
    const double hi = std::log(zipf_max_keys);
    const double f_hi = f(hi);
    if (f_hi < 0) return std::nullopt;
    return std::exp(increasing_root(f, lo, hi, f(lo), f_hi, 1e-3));
  };
  const auto small_at = [&](double s) -> std::optional<double> {
    const auto keys = keys_for(s);
    if (!keys) return std::nullopt;
    return zipf_distinct(s, *keys, n_small);
  };
  // The bracket must hold the smaller sample's count: above it at the flattest law, below it
  // at the steepest one that still fits (a law too steep to draw d_large counts as below).
  double lo = zipf_min_exponent;
  double hi = zipf_max_exponent;
  const auto flattest = small_at(lo);
  if (!flattest || *flattest < d_small) return std::nullopt;
  for (int i = 0; i < 12; ++i) {  // to 0.0007 in s
    const double mid = 0.5 * (lo + hi);
    const auto small = small_at(mid);
    (!small || *small < d_small ? hi : lo) = mid;
  }
  const double s = 0.5 * (lo + hi);
  const auto keys = keys_for(s);
  if (!keys || s >= zipf_max_exponent - 0.01) return std::nullopt;
  return zipf_law{s, *keys};
}

// ---- the stages in order ----------------------------------------------------------------------

/// A power law's sample: at least power_law_min_frequent_keys frequent keys (sample_profile's
/// `frequent`, most frequent first), the first at least power_law_min_span times as frequent as
/// the last. Zipf keys draw a long ladder of frequencies like that (s = 1.1 over 2^16 to 2^24
/// groups: over a hundred frequent keys, the first a hundred times the last); one or a few hot
/// keys over uniform ones (a heavy hitter) do not. Stage 2's equally-likely fit of the rest
/// fails on a power law: its smaller sample sees fewer keys than the fit predicts.
inline constexpr std::size_t power_law_min_frequent_keys = 16;
inline constexpr std::uint32_t power_law_min_span = 8;
template <class Frequent>
bool power_law_sample(const Frequent& frequent) {
  return frequent.size() >= power_law_min_frequent_keys &&
         std::uint64_t{frequent.front().second} >= std::uint64_t{power_law_min_span} * frequent.back().second;
}

/// Stage 1's other decision: a sample whose keys lie in a range of at most dense_range_max_keys
/// keys and cover at least 1/dense_range_min_coverage of them (a dense range: ids, codes,
/// small integers, skewed or not; of composite keys, a box of such columns: `keys` is the
/// sample's key_box::keys) bounds the groups by the range's keys, and its distinct keys
/// bound them from below, so the range is within dense_range_min_coverage of the truth, and
/// of the rows outside it, a strided sample's extremes leave about 2 / (sample size + 1) (order
/// statistics; growth takes what they add). Skewed keys, whose frequencies Chao1 leaves
/// undecided, then need no sketch: stage 2's strided sketch or the sketch of every key cost
/// more than the query's AGGREGATE at these group counts.
inline constexpr std::uint64_t dense_range_max_keys = std::uint64_t{1} << 14;
inline constexpr std::uint64_t dense_range_min_coverage = 4;
inline std::optional<std::uint64_t> dense_range_groups(std::size_t sample_size, std::uint64_t distinct, double keys) {
  if (sample_size == 0 || !(keys >= 1) || keys > double(dense_range_max_keys)) return std::nullopt;
  const auto range = static_cast<std::uint64_t>(keys);
  if (distinct * dense_range_min_coverage < range) return std::nullopt;
  return range;
}

/// An estimate and the stage that made it.
struct staged_estimate {
  std::uint64_t groups = 0;
  estimate_source source = estimate_source::none;
  /// The relative standard error, where the stage knows it from its evidence (0: not known; the
  /// plan then allows estimate_tolerance).
  double relative_error = 0;
};

/// Sorted input: where the key sample's rows and their right neighbours never decrease (or never
/// increase), each group is one run of equal keys, so the groups are 1 + the run ends, which
/// the neighbours count: rows x differ / the sampled rows. The run ends the sample saw, B, give a relative
/// standard error of 1 / sqrt(B); below sorted_min_run_ends (12.5%) the sample cannot tell, and
/// the stages go on (long runs: stage 2's strided sketch sees each key many times). A sample of
/// 16 Ki rows sees 64 run ends from 2^19 groups in 2^27 rows on. Stages 2 and 3 then cost
/// nothing: on device input, a sketch of every key (about 0.65 ms at 2^27 rows), on host input
/// the host's strided sketches. Input ordered only at the sample's stride (each stretch between
/// sampled rows shuffled within a range of its own) shows descending neighbours; one crafted
/// to pass would get a table too large, never a wrong result. Runs of one length that shares a
/// factor with the sample's stride show no run end at all (no sampled row is a run's last),
/// and the stages go on.
inline constexpr std::uint64_t sorted_min_run_ends = 64;
template <class Profile>
std::optional<staged_estimate> sorted_input_groups(const Profile& profile, std::uint64_t rows) {
  if (!profile.ordered || profile.sample_size < 1024 || profile.neighbour_differ < sorted_min_run_ends ||
      profile.sample_size >= rows) {
    return std::nullopt;
  }
  const double runs = 1.0 + double(rows - 1) * double(profile.neighbour_differ) / double(profile.sample_size);
  const auto groups = static_cast<std::uint64_t>(std::clamp(std::llround(runs), 1LL, static_cast<long long>(rows)));
  return staged_estimate{groups, estimate_source::runs, 1.0 / std::sqrt(double(profile.neighbour_differ))};
}

/// The group estimate of `rows` rows, stage by stage: the key sample's frequencies (`profile`: a
/// sample_profile) or its dense range, unless its neighbours show it aliased (sample_aliased);
/// else stage 2 on sketches of strided samples, `sketch(stride, n, last, frequent)` giving the
/// sketch of n rows, one in each stride of `stride` rows (on the host: host_first_sketch_rows
/// where the key sample repeats keys, then host_sketch_rows where that does not decide; on the
/// device: device_sketch_rows); else for host input the extrapolation of the last sample, for device
/// input `sketch_every()`, a sketch of every row. `last` marks the last strided sample: the
/// host's extrapolation reads its linear count (sketch_host_rows), which the others need not
/// take; `frequent`, that it reads its count of the profile's frequent keys too: not for a
/// power law, whose fit reads none, and whose hundred frequent keys made a 2^20-row sketch
/// half as long again when every row was looked up among them.
/// Device input whose key sample shows a power law (power_law_sample) skips stage 2: its fit
/// would be rejected, and its strided sketch costs about a third of the sketch of every row
/// that follows.
/// A dense range decides at stage 1 too (dense_range_groups), and sorted input's runs before
/// stage 2 (sorted_input_groups).
/// The driver runs this with its sketches (driver/group_estimate.hpp); tests with the host's.
template <class Profile, class Sketch, class SketchEvery>
staged_estimate estimate_in_stages(const Profile& profile, std::uint64_t rows, bool host_input, const Sketch& sketch,
                                   const SketchEvery& sketch_every) {
  if (!profile.aliased) {
    if (const auto from_sample = estimate_from_frequencies(profile.sample_size, profile.distinct, profile.once,
                                                           profile.twice, rows, power_law_sample(profile.frequent))) {
      return {std::max<std::uint64_t>(from_sample->groups, 1), estimate_source::sample, from_sample->relative_error};
    }
    if (const auto range = dense_range_groups(profile.sample_size, profile.distinct, profile.box.keys())) {
      return {*range, estimate_source::sample};
    }
  }
  if (const auto sorted = sorted_input_groups(profile, rows)) return *sorted;
  if (rows == 0) return {1, estimate_source::sample};
  const auto frequent = profile.frequent_summary();
  // A power law's first sketch never decides (stage 2's equally-likely fit rejects it): the
  // host takes the last one alone. Nor does one where only frequent keys repeat in the key
  // sample (a hot key over many others): their repeats say nothing of the other rows'.
  const bool power_law = power_law_sample(profile.frequent);
  std::uint64_t frequent_repeats = 0;
  for (const auto& [key, count] : profile.frequent) frequent_repeats += count - 1;
  const std::uint64_t repeats = profile.sample_size - profile.distinct;
  const bool first_may_decide =
      !power_law && repeats - std::min(repeats, frequent_repeats) >= host_first_sketch_min_repeats;
  const std::vector<std::uint64_t> sizes = !host_input        ? std::vector{device_sketch_rows}
                                           : first_may_decide ? std::vector{host_first_sketch_rows, host_sketch_rows}
                                                              : std::vector{host_sketch_rows};
  sketch_evidence evidence;
  const bool skip_stage_2 = !host_input && power_law;
  for (std::size_t s = 0; s < sizes.size() && !skip_stage_2; ++s) {
    const std::uint64_t sampled = std::min(rows, sizes[s]);
    if (sampled == evidence.sample_rows) break;  // the same sample again: fewer rows than the first size
    // The next size would be the same sample (fewer rows than it): this one is the last.
    const bool last = s + 1 == sizes.size() || std::min(rows, sizes[s + 1]) == sampled;
    evidence = sketch_evidence{};
    evidence.rows = rows;
    evidence.sample_rows = sampled;
    evidence.sub_rows = (sampled + 3) / 4;
    const auto taken = sketch(rows / sampled, sampled, last, last && !power_law);
    evidence.sample_distinct = sketch_estimate(taken.registers);
    evidence.sub_distinct = sketch_estimate(taken.sub_registers);
    evidence.neighbour_pairs = taken.neighbour_pairs;
    evidence.neighbour_equal = taken.neighbour_equal;
    evidence.frequent = taken.frequent;
    if (host_input) evidence.sample_distinct_linear = taken.linear_distinct;  // the device's sketch has none
    if (const auto decision = estimate_from_sketch(evidence, frequent); decision.groups) {
      return {std::max<std::uint64_t>(*decision.groups, 1), estimate_source::sketch, decision.relative_error};
    }
  }
  if (host_input) {
    // A power law's tail lies beyond the repetition the equally-likely fit reads (its sample of
    // 1/128 of the rows sees a thirtieth of zipf's keys at 2^24 groups): the law that draws the
    // two sketches' distinct counts gives the rows'. Sorted keys were counted by their runs.
    // The larger sample's count is its linear count where taken (0.2% off at 2^20 keys, against
    // the sketch's 0.8%: the exponent rests on the two counts' ratio).
    if (power_law && evidence.sample_rows < rows) {
      const double d_large =
          evidence.sample_distinct_linear > 0 ? evidence.sample_distinct_linear : evidence.sample_distinct;
      if (const auto law = fit_zipf(evidence.sub_distinct, double(evidence.sub_rows), d_large,
                                    double(evidence.sample_rows))) {
        const double groups = std::clamp(zipf_distinct(law->exponent, law->keys, double(rows)),
                                         std::max(d_large, 1.0), double(rows));
        return {static_cast<std::uint64_t>(std::llround(groups)), estimate_source::extrapolated};
      }
    }
    double error = 0;
    const std::uint64_t groups = extrapolate_from_sketch(evidence, frequent, &error);
    return {std::max<std::uint64_t>(groups, 1), estimate_source::extrapolated, error};
  }
  const double every = sketch_estimate(sketch_every().registers);
  return {static_cast<std::uint64_t>(std::clamp(std::llround(every), 1LL, static_cast<long long>(rows))),
          estimate_source::full_sketch};
}

// ---- the host's sketch (host input) ------------------------------------------------------------

/// Sketches of n rows of `keys`, one in each stride (sketch_row), a table word per key, with
/// the sub-sketch of a quarter (in_sub_sample) and the right-neighbour comparison, on up to `threads` host
/// threads (each sketches a share; the registers merge by maximum). The device's kernel
/// (kernels/estimate.hpp: gpuagg_sketch) computes the same registers.
struct host_sketch {
  std::vector<std::uint32_t> registers = std::vector<std::uint32_t>(sketch_registers, 0);
  std::vector<std::uint32_t> sub_registers = std::vector<std::uint32_t>(sketch_registers, 0);
  std::uint64_t neighbour_pairs = 0;
  std::uint64_t neighbour_equal = 0;
  double linear_distinct = 0;  ///< linear counting of the sampled keys (sketch_evidence)
  std::optional<frequent_keys_count> frequent;  ///< where the frequent keys were given and counted
  /// A sketch in runs (sketch_host_rows' run_log2): the pairs of rows within one run and their
  /// equal keys, and the pairs of rows of neighbouring runs (a run's stride apart and more) and
  /// theirs. Rows that are independent draws repeat keys as often in both.
  std::uint64_t within_pairs = 0;
  std::uint64_t within_equal = 0;
  std::uint64_t across_pairs = 0;
  std::uint64_t across_equal = 0;
  /// The sketch was taken in runs, whose rows repeated keys more than rows apart did
  /// (runs_cluster), and then again of strided rows: this is the strided one.
  bool runs_rejected = false;
};

/// The host sketch in runs compares one pair of neighbouring runs in this many: enough pairs of
/// rows to tell (115,000 within runs in a 2^19-row sketch) at a tenth of the cost of comparing
/// every pair (decisions.md).
inline constexpr std::uint64_t sketch_run_check_every = 16;

/// Whether a sketch's runs repeat keys more than independent rows would: more equal pairs
/// within its runs than half as many again as the rate of rows in neighbouring runs predicts,
/// with a margin of four standard deviations and 16 pairs for rates of a few pairs. Keys that
/// cluster without repeating a neighbour (a few sources interleaved) fail it.
inline bool runs_cluster(const host_sketch& s) {
  if (s.within_pairs == 0 || s.across_pairs == 0) return false;
  const double expected = double(s.across_equal) / double(s.across_pairs) * double(s.within_pairs);
  return double(s.within_equal) > 1.5 * expected + 4.0 * std::sqrt(expected) + 16.0;
}

/// One sketching thread's working memory: its linear counting bitmap and its registers. Kept
/// between queries (sketch_scratch_pool): fresh, the 16 threads' 10 MiB would be about 2,600
/// page faults, which the kernel serves one at a time for one process, and they cost more than
/// the keys' own cache misses.
struct sketch_scratch {
  static constexpr std::size_t bitmap_words = (std::size_t{1} << linear_count_bits_log2) / 64;
  std::vector<std::uint64_t> bitmap = std::vector<std::uint64_t>(bitmap_words, 0);
  std::vector<std::uint32_t> registers = std::vector<std::uint32_t>(sketch_registers, 0);
  std::vector<std::uint32_t> sub_registers = std::vector<std::uint32_t>(sketch_registers, 0);
};

/// The process's idle sketch_scratch, taken by a sketch and given back after it (a query on
/// another thread takes others); at most max_idle are kept.
class sketch_scratch_pool {
 public:
  static constexpr std::size_t max_idle = 64;
  static std::vector<std::unique_ptr<sketch_scratch>> take(unsigned n) {
    std::vector<std::unique_ptr<sketch_scratch>> taken;
    {
      const std::lock_guard lock(mutex());
      auto& idle_ones = idle();
      while (taken.size() < n && !idle_ones.empty()) {
        taken.push_back(std::move(idle_ones.back()));
        idle_ones.pop_back();
      }
    }
    taken.resize(n);  // the missing ones are made by the threads that use them
    return taken;
  }
  static void give_back(std::vector<std::unique_ptr<sketch_scratch>>& scratch) {
    const std::lock_guard lock(mutex());
    auto& idle_ones = idle();
    for (auto& s : scratch) {
      if (s && idle_ones.size() < max_idle) idle_ones.push_back(std::move(s));
    }
    scratch.clear();
  }

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::vector<std::unique_ptr<sketch_scratch>>& idle() {
    static std::vector<std::unique_ptr<sketch_scratch>> v;
    return v;
  }
};

/// No prefetch (sketch_host_rows' default).
struct no_prefetch {
  void operator()(std::uint64_t) const noexcept {}
};

/// Rows a sketching thread asks the cache for ahead of the one it hashes (its `prefetch`).
inline constexpr std::uint64_t sketch_prefetch_rows = 32;

/// The sketches of n rows of `rows`, one in each stride of `stride` rows (in runs of 2^run_log2
/// neighbours, one in each 2^run_log2 strides: host_sketch_run_rows_log2), each row's key word given by
/// `load(row)` (a 64-bit value: the table word of a key), each run placed within its stride
/// (sketch_row); every compare_every(n)-th row is compared with its right neighbour; with
/// `linear_count`, also the linear count of the keys (host_sketch::linear_distinct) and the rows
/// of the `frequent` key words (host_sketch::frequent). `prefetch(row)`
/// asks for a row's key sketch_prefetch_rows strides ahead: the strided rows lie on distinct
/// cache lines and, a few strides on, distinct pages, whose misses the core overlaps only as
/// far as its reorder window reaches.
template <class Load, class Prefetch = no_prefetch>
host_sketch sketch_host_rows(const Load& load, std::uint64_t rows, std::uint64_t stride, std::uint64_t n,
                             unsigned threads, const Prefetch& prefetch = {}, bool linear_count = true,
                             std::span<const std::uint64_t> frequent = {}, unsigned run_log2 = 0) {
  run_log2 = std::min(run_log2, host_sketch_run_log2);  // a run's keys fit the thread's arrays
  // Runs of whole strides only: a last run cut short would still be placed within its whole
  // stride, past the rows.
  if (stride > 1 && (n & ((std::uint64_t{1} << run_log2) - 1)) != 0) run_log2 = 0;
  // Down to 2^14 keys a thread: its fixed cost (a wake-up, up to 640 KiB of scratch to clear)
  // stays under a tenth of its keys' cache misses, and the first host sketch (2^18 keys) still
  // spreads over 16 threads. The threads are the process's copy pool (runtime/host_copy.hpp),
  // started once: 16 thread starts and joins cost about 0.4 ms, a sixth of a 2^18-key sketch.
  auto& pool = copy_pool::instance();
  threads = std::max(1u, std::min<unsigned>({threads, static_cast<unsigned>((n + 16383) / 16384), pool.helpers() + 1}));
  auto scratch = sketch_scratch_pool::take(threads);
  std::vector<std::uint64_t> pairs(threads, 0), equal(threads, 0);
  const std::uint64_t every = compare_every(n);
  // The frequent keys' set: open addressing by the rows' own hash, at most a quarter full, a
  // slot holding a key word and 1 + its index (0: empty). For the key sample's at most 4096
  // frequent keys, 256 KiB: in a core's L2 beside the bitmap.
  const bool count_frequent = linear_count && !frequent.empty();
  std::vector<std::pair<std::uint64_t, std::uint32_t>> frequent_set;
  std::uint64_t frequent_mask = 0;
  if (count_frequent) {
    std::size_t slots = 2;
    while (slots < 4 * frequent.size()) slots *= 2;
    frequent_set.assign(slots, {0, 0});
    frequent_mask = slots - 1;
    for (std::size_t k = 0; k < frequent.size(); ++k) {
      std::uint64_t s = sketch_hash(frequent[k]) & frequent_mask;
      while (frequent_set[s].second != 0 && frequent_set[s].first != frequent[k]) s = (s + 1) & frequent_mask;
      frequent_set[s] = {frequent[k], static_cast<std::uint32_t>(k + 1)};
    }
  }
  std::vector<std::uint64_t> frequent_rows(threads, 0);
  std::vector<std::vector<std::uint8_t>> frequent_seen(threads);
  // Per thread: within_pairs, within_equal, across_pairs, across_equal (runs only).
  std::vector<std::array<std::uint64_t, 4>> run_counts(threads, std::array<std::uint64_t, 4>{});
  // Thread t's share of `total` items (keys, bitmap words, registers): [begin, end).
  const auto slice = [threads](std::uint64_t total, unsigned t) {
    const std::uint64_t each = (total + threads - 1) / threads;
    return std::pair{std::min(total, t * each), std::min(total, (t + 1) * each)};
  };
  const auto work = [&](unsigned t) {
    if (!scratch[t]) {
      scratch[t] = std::make_unique<sketch_scratch>();
    } else {
      if (linear_count) std::fill(scratch[t]->bitmap.begin(), scratch[t]->bitmap.end(), 0);
      std::fill(scratch[t]->registers.begin(), scratch[t]->registers.end(), 0);
      std::fill(scratch[t]->sub_registers.begin(), scratch[t]->sub_registers.end(), 0);
    }
    // Counted in locals and stored once: the threads' counters share a cache line.
    std::uint64_t frequent_here = 0;
    if (count_frequent) frequent_seen[t].assign(frequent.size() + 1, 0);  // [0]: no frequent key
    std::uint8_t* const seen = frequent_seen[t].data();
    const std::pair<std::uint64_t, std::uint32_t>* const set = frequent_set.data();
    auto& bitmap = scratch[t]->bitmap;
    auto& registers = scratch[t]->registers;
    auto& sub_registers = scratch[t]->sub_registers;
    const auto [first, end] = slice(n, t);
    // The next i that is a multiple of `every`, counted instead of divided for: a 64-bit
    // division per key would cost more than the key's cache miss.
    std::uint64_t next_compare = (first + every - 1) / every * every;
    std::uint64_t sub_pick = 0;
    const std::uint64_t run_mask = (std::uint64_t{1} << run_log2) - 1;
    // Each run's first row (sketch_row), a hash each, made once when its prefetch is asked for
    // sketch_prefetch_rows runs ahead and kept in a ring until the run is read.
    std::array<std::uint64_t, sketch_prefetch_rows> starts{};
    const auto start_of = [&](std::uint64_t run) { return sketch_row(run << run_log2, stride, run_log2); };
    for (std::uint64_t run = first >> run_log2; run < (first >> run_log2) + sketch_prefetch_rows; ++run) {
      starts[run % sketch_prefetch_rows] = start_of(run);
    }
    std::uint64_t start = 0;
    // Runs are compared in pairs, one pair in sketch_run_check_every runs (whole runs of this
    // thread's only): the first run's keys, then the second's so far.
    std::array<std::uint64_t, std::size_t{1} << host_sketch_run_log2> run_keys{}, last_keys{};
    bool have_last = false;
    std::uint64_t within_pairs = 0, within_equal = 0, across_pairs = 0, across_equal = 0;
    const std::uint64_t run_rows = run_mask + 1;
    for (std::uint64_t i = first; i < end; ++i) {
      if ((i & run_mask) == 0 || i == first) {
        const std::uint64_t run = i >> run_log2;
        start = starts[run % sketch_prefetch_rows];
        const std::uint64_t ahead = run + sketch_prefetch_rows;
        if ((ahead << run_log2) < end) {
          starts[ahead % sketch_prefetch_rows] = start_of(ahead);
          prefetch(starts[ahead % sketch_prefetch_rows]);
        }
      }
      const std::uint64_t row = start + (i & run_mask);
      const std::uint64_t bits = load(row);
      if (run_log2 > 0) {
        const std::uint64_t at = i & run_mask;
        const std::uint64_t phase = (i >> run_log2) % sketch_run_check_every;
        if (phase == 0 && i - at >= first) {  // the pair's first run, whole in this thread
          last_keys[at] = bits;
          have_last = at == run_mask;
        } else if (phase == 1 && have_last) {
          for (std::uint64_t j = 0; j < at; ++j) within_equal += run_keys[j] == bits ? 1 : 0;
          for (std::uint64_t j = 0; j < run_rows; ++j) across_equal += last_keys[j] == bits ? 1 : 0;
          within_pairs += at;
          across_pairs += run_rows;
          run_keys[at] = bits;
        }
      }
      const std::uint64_t hash = sketch_hash(bits);
      const auto slot = sketch_slot(hash);
      registers[slot.index] = std::max(registers[slot.index], slot.rank);
      if (linear_count) {
        const std::uint64_t bit = hash & (sketch_scratch::bitmap_words * 64 - 1);
        bitmap[bit / 64] |= std::uint64_t{1} << (bit % 64);
      }
      if ((i & 3) == 0 || i == first) sub_pick = sample_mix(i >> 2) & 3;  // in_sub_sample, a hash per four
      if ((i & 3) == sub_pick) sub_registers[slot.index] = std::max(sub_registers[slot.index], slot.rank);
      if (count_frequent) {
        // Most rows end at their home slot, without a branch: a hit, or an empty slot (the set
        // is at most a quarter full); others probe on.
        std::uint64_t s = hash & frequent_mask;
        std::uint32_t index = set[s].first == bits ? set[s].second : 0;
        if (index == 0 && set[s].second != 0) {
          for (s = (s + 1) & frequent_mask; set[s].second != 0; s = (s + 1) & frequent_mask) {
            if (set[s].first == bits) {
              index = set[s].second;
              break;
            }
          }
        }
        frequent_here += index != 0 ? 1 : 0;
        seen[index] = 1;
      }
      if (i == next_compare) {
        next_compare += every;
        if (row + 1 < rows) {
          ++pairs[t];
          equal[t] += load(row + 1) == bits ? 1 : 0;
        }
      }
    }
    frequent_rows[t] = frequent_here;
    run_counts[t] = {within_pairs, within_equal, across_pairs, across_equal};
  };
  // The registers merge by maximum and the bitmaps' union is counted, both in slices, one per
  // thread (16 bitmaps are 8 MiB to read).
  host_sketch merged;
  std::vector<std::uint64_t> set_in(threads, 0);
  const auto combine = [&](unsigned t) {
    const auto [first_word, end_word] = slice(linear_count ? sketch_scratch::bitmap_words : 0, t);
    for (std::uint64_t w = first_word; w < end_word; ++w) {
      std::uint64_t word = 0;
      for (const auto& s : scratch) word |= s->bitmap[w];
      set_in[t] += static_cast<std::uint64_t>(std::popcount(word));
    }
    const auto [first_register, end_register] = slice(sketch_registers, t);
    for (std::uint64_t r = first_register; r < end_register; ++r) {
      for (const auto& s : scratch) {
        merged.registers[r] = std::max(merged.registers[r], s->registers[r]);
        merged.sub_registers[r] = std::max(merged.sub_registers[r], s->sub_registers[r]);
      }
    }
  };
  if (threads == 1) {
    work(0);
    combine(0);
  } else {
    pool.run(threads, work);
    pool.run(threads, combine);
  }
  sketch_scratch_pool::give_back(scratch);
  std::uint64_t set = 0;
  for (unsigned t = 0; t < threads; ++t) {
    set += set_in[t];
    merged.neighbour_pairs += pairs[t];
    merged.neighbour_equal += equal[t];
    merged.within_pairs += run_counts[t][0];
    merged.within_equal += run_counts[t][1];
    merged.across_pairs += run_counts[t][2];
    merged.across_equal += run_counts[t][3];
  }
  if (run_log2 > 0 && runs_cluster(merged)) {
    // The runs' keys are not independent draws: the strided rows' sketch instead.
    auto strided = sketch_host_rows(load, rows, stride, n, threads, prefetch, linear_count, frequent, 0);
    strided.within_pairs = merged.within_pairs;
    strided.within_equal = merged.within_equal;
    strided.across_pairs = merged.across_pairs;
    strided.across_equal = merged.across_equal;
    strided.runs_rejected = true;
    return strided;
  }
  if (count_frequent) {
    frequent_keys_count count;
    for (unsigned t = 0; t < threads; ++t) count.rows += frequent_rows[t];
    for (std::size_t k = 0; k < frequent.size(); ++k) {
      bool seen = false;
      for (unsigned t = 0; t < threads; ++t) seen = seen || frequent_seen[t][k + 1] != 0;
      count.present += seen ? 1 : 0;
    }
    merged.frequent = count;
  }
  constexpr double bitmap_bits = double(sketch_scratch::bitmap_words * 64);
  // Linear counting: the keys that leave this share of the bits clear.
  merged.linear_distinct = set == 0 ? 0.0 : -bitmap_bits * std::log1p(-double(set) / bitmap_bits);
  return merged;
}

/// sketch_host_rows over one key column, each key's word its own bits (as a table word holds it).
template <class Key>
host_sketch sketch_host_keys(const Key* column, std::uint64_t rows, std::uint64_t stride, std::uint64_t n,
                             unsigned threads) {
  using word = std::conditional_t<(sizeof(Key) < 4), std::uint32_t, std::make_unsigned_t<Key>>;
  return sketch_host_rows([column](std::uint64_t row) { return std::uint64_t(static_cast<word>(column[row])); },
                          rows, stride, n, threads, [column](std::uint64_t row) { __builtin_prefetch(column + row); });
}

}  // namespace detail
}  // namespace gpuagg
