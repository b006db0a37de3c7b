#pragma once
// Parallelization strategies (section 2.2) as policies: each names its AGGREGATE kernel body,
// which lives in kernels.inc with the other OpenCL skeletons.

#include <concepts>

#include "detail/fixed_string.hpp"
#include "launch_config.hpp"

#include "kernels.inc"

namespace gpuagg {

struct shared_strategy {
  static constexpr strategy_kind kind = strategy_kind::shared;
  static constexpr auto cl_source = detail::kernels::aggregate_shared;
};
struct independent_strategy {
  static constexpr strategy_kind kind = strategy_kind::independent;
  static constexpr auto cl_source = detail::kernels::aggregate_independent;
};
struct workgroup_local_strategy {
  static constexpr strategy_kind kind = strategy_kind::workgroup_local;
  static constexpr auto cl_source = detail::kernels::aggregate_workgroup_local;
};

template <class S>
concept strategy_policy = requires {
  { S::kind } -> std::convertible_to<strategy_kind>;
  S::cl_source.view();
};

}  // namespace gpuagg
