#pragma once
// The search space of section 3.1 and its neighbourhood; included by <gpuagg/tuner.hpp>.

#ifndef GPUAGG_TUNER_HPP
#error "include <gpuagg/tuner.hpp>: detail/tuner/*.hpp are its implementation, in its order"
#endif

#include <algorithm>
#include <bit>
#include <cctype>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuagg {
namespace detail {

/// Largest power of two <= value (1 for 0).
constexpr std::uint32_t floor_pow2(std::uint32_t value) noexcept {
  return value == 0 ? 1u : std::bit_floor(value);
}

/// "SHARED", "INDEPENDENT", "WORKGROUPLOCAL" (case-insensitive, '_' ignored) to the strategy.
inline std::optional<strategy_kind> parse_strategy(std::string_view text) {
  std::string folded;
  for (char c : text) {
    if (c != '_' && c != ' ') folded.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
  }
  for (strategy_kind kind : all_strategies) {
    if (folded == to_string(kind)) return kind;
  }
  return std::nullopt;
}

}  // namespace detail

inline bool search_space::contains(const execution_params& params) const noexcept {
  const auto& c = params.config;
  return std::has_single_bit(c.work_groups_per_cu) && std::has_single_bit(c.work_group_size) &&
         c.work_groups_per_cu <= detail::floor_pow2(max_work_groups_per_cu) &&
         c.work_group_size <= detail::floor_pow2(max_work_group_size);
}

inline execution_params search_space::clamp(execution_params params) const noexcept {
  auto& c = params.config;
  c.work_groups_per_cu = std::min(detail::floor_pow2(c.work_groups_per_cu), detail::floor_pow2(max_work_groups_per_cu));
  c.work_group_size = std::min(detail::floor_pow2(c.work_group_size), detail::floor_pow2(max_work_group_size));
  return params;
}

inline std::vector<execution_params> search_space::neighbours(const execution_params& params) const {
  return neighbours(params, 2, false);
}

inline std::vector<execution_params> search_space::neighbours(const execution_params& params, std::uint32_t stride,
                                                              bool diagonal) const {
  std::vector<execution_params> result;
  result.reserve(diagonal ? 6 : 4);
  const std::uint64_t groups = params.config.work_groups_per_cu;
  const std::uint64_t size = params.config.work_group_size;
  const std::uint64_t step = stride;
  // Multiplies or divides by `step`; a division that does not come out even leaves the grid.
  const auto times = [step](std::uint64_t value) { return value * step; };
  const auto divided = [step](std::uint64_t value) { return value % step == 0 ? value / step : 0; };
  const auto add = [&](std::uint64_t new_groups, std::uint64_t new_size) {
    if (new_groups == 0 || new_size == 0 || new_groups > 0xFFFFFFFFu || new_size > 0xFFFFFFFFu) return;
    execution_params n{params.strategy,
                       {static_cast<std::uint32_t>(new_groups), static_cast<std::uint32_t>(new_size)}};
    if (contains(n)) result.push_back(n);
  };
  // The documented order: more work groups, fewer work groups, larger groups, smaller groups,
  // then the two moves that keep the threads per compute unit.
  add(times(groups), size);
  add(divided(groups), size);
  add(groups, times(size));
  add(groups, divided(size));
  if (diagonal) {
    add(times(groups), divided(size));
    add(divided(groups), times(size));
  }
  return result;
}

inline std::vector<execution_params> search_space::configurations(strategy_kind strategy) const {
  std::vector<execution_params> result;
  for (std::uint32_t groups = 1; groups <= detail::floor_pow2(max_work_groups_per_cu); groups *= 2) {
    for (std::uint32_t size = 1; size <= detail::floor_pow2(max_work_group_size); size *= 2) {
      result.push_back({strategy, {groups, size}});
      if (size == 0x80000000u) break;
    }
    if (groups == 0x80000000u) break;
  }
  return result;
}

inline execution_params default_initial_config(strategy_kind strategy, const search_space& space) {
  return space.clamp({strategy, paper_initial_config(strategy)});
}

inline std::vector<execution_params> default_initial_configs(const search_space& space) {
  std::vector<execution_params> result;
  for (strategy_kind kind : all_strategies) result.push_back(default_initial_config(kind, space));
  return result;
}

inline int tuning_key::log2_groups(std::uint64_t expected_groups) noexcept {
  return expected_groups <= 1 ? 0 : static_cast<int>(std::bit_width(expected_groups - 1));
}

}  // namespace gpuagg
