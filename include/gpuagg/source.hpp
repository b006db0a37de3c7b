#pragma once
// Source generation: composes the policies' snippets with the OpenCL skeletons into one
// program text per (key, hashing scheme, aggregates and outputs, value types, strategy). The
// text is a constant expression, so a test can compare it with a golden string and a wrong
// combination fails to compile rather than to JIT.

#include <string_view>

#include "detail/fixed_string.hpp"
#include "estimate.hpp"
#include "query.hpp"
#include "strategy.hpp"

namespace gpuagg {

/// The whole OpenCL program of bound query `Bound` under strategy `Strategy`: INITIALIZE,
/// AGGREGATE (this strategy's), MERGE (table growth) and FINALIZE.
template <class Bound, strategy_policy Strategy>
inline constexpr auto program_source =
    detail::concat(detail::kernels::header, Bound::key::cl_source, Bound::scheme::cl_source, Bound::cl_source,
                   detail::kernels::library, detail::kernels::table_kernels, Strategy::cl_source);

/// The group estimate's program of key policy `Key` (kernels.inc: gpuagg_sample, gpuagg_sketch).
template <class Key>
inline constexpr auto sample_program_source = detail::concat(detail::kernels::header, Key::cl_source,
                                                             detail::sketch_cl_source, detail::kernels::sample_kernel);

/// program_source for a strategy chosen at run time.
template <class Bound>
constexpr std::string_view program_source_for(strategy_kind kind) {
  switch (kind) {
    case strategy_kind::independent: return program_source<Bound, independent_strategy>.view();
    case strategy_kind::workgroup_local: return program_source<Bound, workgroup_local_strategy>.view();
    case strategy_kind::shared: break;
  }
  return program_source<Bound, shared_strategy>.view();
}

}  // namespace gpuagg
