#pragma once
// Execution parameters of one AGGREGATE launch (Rosenfeld et al. 2019, section 1: "the
// parallelization strategy and the thread configuration"). Plain values, so the tuner moves
// between them and the driver takes one per block. What each strategy is (its name, the
// paper's initial configuration, its kernel) is its policy's, in strategy.hpp.

#include <cstdint>
#include <ostream>

namespace gpuagg {

/// The three parallelization strategies of section 2.2.
enum class strategy_kind : std::uint8_t {
  shared,           ///< one table in global memory, global atomics
  independent,      ///< one private table per work item in global memory, merged per block
  workgroup_local,  ///< one table per work group in local memory, merged per block
};

inline constexpr strategy_kind all_strategies[] = {strategy_kind::shared, strategy_kind::independent,
                                                   strategy_kind::workgroup_local};

/// Thread configuration: work groups per compute unit x work items per work group (section 3.1).
struct launch_config {
  std::uint32_t work_groups_per_cu = 1;
  std::uint32_t work_group_size = 256;

  constexpr std::uint64_t threads_per_cu() const noexcept {
    return std::uint64_t{work_groups_per_cu} * work_group_size;
  }
  friend constexpr bool operator==(const launch_config&, const launch_config&) = default;
  friend constexpr auto operator<=>(const launch_config&, const launch_config&) = default;
};

inline std::ostream& operator<<(std::ostream& os, const launch_config& config) {
  return os << config.work_groups_per_cu << 'x' << config.work_group_size;
}

/// One block's execution parameters: what the tuner chooses and the driver runs.
struct execution_params {
  strategy_kind strategy = strategy_kind::shared;
  launch_config config{};
  friend constexpr bool operator==(const execution_params&, const execution_params&) = default;
  friend constexpr auto operator<=>(const execution_params&, const execution_params&) = default;
};

}  // namespace gpuagg
