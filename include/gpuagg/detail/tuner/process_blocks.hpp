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

  /// Normalized range of the kept window: the measurement's own estimate of its noise.
  double window_range(unsigned window_blocks) const noexcept {
    const std::size_t kept = std::min<std::size_t>(window_blocks, block_seconds.size());
    return normalized_range(std::span<const double>(block_seconds).last(kept));
  }
};

/// Runs blocks with one configuration until its time can be trusted: `initial_blocks` (3)
/// blocks first; while the window's normalized range exceeds v_max, discard the window's first
/// (oldest) value and process one more block, up to b_max blocks in all. Returns the mean of the
/// kept window. A range at or below v_max passes (so v_max = 0 accepts identical times).
///
/// `next_block()` returns the next block's time, or std::nullopt when the input has run out; the
/// measurement is then incomplete and holds the mean of what was measured.
///
/// Beyond the paper (tuner_params::early_rejection): with `reject_above`, once at least
/// `rejection_blocks` blocks ran and even the fastest of them is slower than `reject_above`, the
/// measurement stops there, complete and `rejected`. Without it this is the paper's rule exactly.
template <class NextBlock>
measurement process_blocks_with(const tuner_params& params, NextBlock&& next_block,
                                std::optional<double> reject_above = std::nullopt) {
  measurement result;
  result.block_seconds.reserve(params.max_blocks);
  std::size_t window_begin = 0;  // the window is block_seconds[window_begin, end)
  const auto window = [&] {
    return std::span<const double>(result.block_seconds).subspan(window_begin);
  };
  while (result.blocks < params.max_blocks) {
    const std::optional<double> seconds = next_block();
    if (!seconds) {
      result.seconds = mean_of(window());
      return result;  // incomplete: the input ran out
    }
    result.block_seconds.push_back(*seconds);
    ++result.blocks;
    if (reject_above && result.blocks >= params.rejection_blocks &&
        *std::min_element(result.block_seconds.begin(), result.block_seconds.end()) > *reject_above) {
      result.rejected = true;  // clearly slower: not worth a full measurement
      if (result.block_seconds.size() - window_begin > params.initial_blocks) ++window_begin;
      break;
    }
    if (result.block_seconds.size() - window_begin > params.initial_blocks) ++window_begin;  // discard
    if (result.block_seconds.size() - window_begin == params.initial_blocks &&
        normalized_range(window()) <= params.max_variation) {
      break;  // variation below the threshold
    }
  }
  // Either the window passed or b_max blocks were used; both end the measurement.
  result.complete = true;
  result.seconds = mean_of(window());
  return result;
}

}  // namespace gpuagg::detail
