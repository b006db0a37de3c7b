#pragma once
// ProcessBlocksWith (section 4.1, "Handling measurement outliers"); included by
// <gpuagg/tuner.hpp>.

#ifndef GPUAGG_TUNER_HPP
#error "include <gpuagg/tuner.hpp>: detail/tuner/*.hpp are its implementation, in its order"
#endif

#include <algorithm>
#include <cstddef>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace gpuagg::detail {

/// t(c_i) ~_s t(c_j)  <=>  (1-s) t(c_i) <= t(c_j) <= (1+s) t(c_i)   (section 4.1, notation).
constexpr bool similar(double reference, double other, double similarity) noexcept {
  return (1.0 - similarity) * reference <= other && other <= (1.0 + similarity) * reference;
}

constexpr double mean_of(std::span<const double> values) noexcept {
  double sum = 0.0;
  for (double v : values) sum += v;
  return values.empty() ? 0.0 : sum / static_cast<double>(values.size());
}

/// (max - min) / mean: the paper's cheap stand-in for the coefficient of variation ("eliminating
/// a costly square root").
constexpr double normalized_range(std::span<const double> window) noexcept {
  if (window.empty()) return 0.0;
  const auto [lo, hi] = std::minmax_element(window.begin(), window.end());
  const double mean = mean_of(window);
  return mean > 0.0 ? (*hi - *lo) / mean : 0.0;
}

/// The result of one ProcessBlocksWith call.
struct measurement {
  double seconds = 0.0;  ///< mean of the kept window
  unsigned blocks = 0;   ///< blocks processed, discarded ones included
  bool complete = false; ///< false: the input ran out first
  bool rejected = false; ///< stopped early as clearly slower (the refined search only)
  std::vector<double> block_seconds;
  unsigned window_blocks = 0;  ///< the window's length it was measured with

  /// Normalized range of the kept window: the measurement's own estimate of its noise.
  double window_range() const noexcept { return window_range(window_blocks); }
  double window_range(unsigned window_blocks) const noexcept {
    const std::size_t kept = std::min<std::size_t>(window_blocks, block_seconds.size());
    return normalized_range(std::span<const double>(block_seconds).last(kept));
  }
};

/// When a neighbour's measurement may stop early as clearly slower (the refined search; every
/// member's default turns its rule off). All compare the neighbour with its reference.
struct rejection_rule {
  /// tuner_params::measurement_params::early_rejection: after `rejection_blocks` blocks, even the fastest of them is
  /// above this (a factor times the reference's slowest block).
  std::optional<double> above;
  /// tuner_params::measurement_params::paired_rejection: the reference's blocks in the order they ran; after
  /// `paired_blocks` blocks, each block k of the neighbour is above `paired` x the reference's
  /// block k (start-up outliers are compared with start-up outliers). Needs the reference to have
  /// run at least as many blocks.
  std::span<const double> reference_blocks;
  double paired = 0.0;
  unsigned paired_blocks = 0;
  /// tuner_params::measurement_params::first_block_rejection: the very first block is above this (a factor times
  /// t(reference) times the largest start-up ratio seen): one block suffices.
  std::optional<double> first_block_above;

  bool any() const noexcept { return above || paired > 0.0 || first_block_above; }
};

/// Whether `rule` stops a measurement that has run `blocks` so far.
inline bool rejects(const rejection_rule& rule, const tuner_params& params, std::span<const double> blocks) {
  if (blocks.empty()) return false;
  if (rule.first_block_above && blocks.size() == 1 && blocks.front() > *rule.first_block_above) return true;
  if (rule.above && blocks.size() >= params.measurement.rejection_blocks &&
      *std::min_element(blocks.begin(), blocks.end()) > *rule.above) {
    return true;
  }
  if (rule.paired > 0.0 && blocks.size() >= rule.paired_blocks && blocks.size() <= rule.reference_blocks.size()) {
    bool slower_everywhere = true;
    for (std::size_t k = 0; k < blocks.size(); ++k) slower_everywhere &= blocks[k] > rule.paired * rule.reference_blocks[k];
    if (slower_everywhere) return true;
  }
  return false;
}

/// Runs blocks with one configuration until its time can be trusted: `initial_blocks` (3)
/// blocks first; while the window's normalized range exceeds v_max, discard the window's first
/// (oldest) value and process one more block, up to b_max blocks in all. Returns the mean of the
/// kept window. A range at or below v_max passes (so v_max = 0 accepts identical times).
///
/// `next_block()` returns the next block's time, or std::nullopt when the input has run out; the
/// measurement is then incomplete and holds the mean of what was measured.
///
/// Beyond the paper (tuner_params::measurement_params::early_rejection and the rules after it): with a `rule`, the
/// measurement stops as soon as the rule says the configuration is clearly slower than its
/// reference; it is then complete and `rejected`. Without one this is the paper's rule exactly.
/// `window_blocks` (0: params.measurement.initial_blocks) is the window's length (tuner_params::measurement_params::quiet_window
/// shortens it where the reference measured quietly).
template <class NextBlock>
measurement process_blocks_with(const tuner_params& params, NextBlock&& next_block, const rejection_rule& rule,
                                unsigned window_blocks = 0) {
  const unsigned window_length = window_blocks > 0 ? window_blocks : params.measurement.initial_blocks;
  measurement result;
  result.window_blocks = window_length;
  result.block_seconds.reserve(params.measurement.max_blocks);
  std::size_t window_begin = 0;  // the window is block_seconds[window_begin, end)
  const auto window = [&] {
    return std::span<const double>(result.block_seconds).subspan(window_begin);
  };
  while (result.blocks < params.measurement.max_blocks) {
    const std::optional<double> seconds = next_block();
    if (!seconds) {
      result.seconds = mean_of(window());
      return result;  // incomplete: the input ran out
    }
    result.block_seconds.push_back(*seconds);
    ++result.blocks;
    if (rule.any() && rejects(rule, params, result.block_seconds)) {
      result.rejected = true;  // clearly slower: not worth a full measurement
      if (result.block_seconds.size() - window_begin > window_length) ++window_begin;
      break;
    }
    if (result.block_seconds.size() - window_begin > window_length) ++window_begin;  // discard
    if (result.block_seconds.size() - window_begin == window_length &&
        normalized_range(window()) <= params.measurement.max_variation) {
      break;  // variation below the threshold
    }
  }
  // Either the window passed or b_max blocks were used; both end the measurement.
  result.complete = true;
  result.seconds = mean_of(window());
  return result;
}

/// The paper's ProcessBlocksWith, or with `reject_above` the refined search's early rejection
/// alone (tuner_params::measurement_params::early_rejection).
template <class NextBlock>
measurement process_blocks_with(const tuner_params& params, NextBlock&& next_block,
                                std::optional<double> reject_above = std::nullopt) {
  rejection_rule rule;
  rule.above = reject_above;
  return process_blocks_with(params, std::forward<NextBlock>(next_block), rule);
}

}  // namespace gpuagg::detail
