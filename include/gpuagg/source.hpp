#pragma once
// Source generation: composes the policies' snippets with the OpenCL skeletons (kernels/) into
// one program text per (key, hashing scheme, aggregates and outputs, value types, strategy). The
// text is a constant expression, so a test can compare it with a golden string and a wrong
// combination fails to compile rather than to JIT.

#include <string_view>

#include "detail/fixed_string.hpp"
#include "detail/owner.hpp"
#include "estimate.hpp"
#include "kernels/aggregate.hpp"
#include "kernels/estimate.hpp"
#include "kernels/key_range.hpp"
#include "kernels/library.hpp"
#include "kernels/partition.hpp"
#include "kernels/table.hpp"
#include "query.hpp"
#include "strategy.hpp"

namespace gpuagg {

/// The whole OpenCL program of bound query `Bound` under strategy `Strategy`: the shared
/// library, INITIALIZE, MERGE (table growth) and FINALIZE, PARTITION, AGGREGATE (this
/// strategy's) and EXPORT (a partial aggregate for another table).
template <class Bound, strategy_policy Strategy>
inline constexpr auto program_source = detail::concat(
    detail::kernels::header, Bound::key::cl_source, Bound::scheme::cl_source, Bound::cl_source,
    detail::kernels::combines, detail::kernels::table_access, detail::kernels::aggregate_common,
    detail::owner_cl_source, detail::kernels::table_kernels, detail::kernels::partition_kernels, Strategy::cl_source,
    detail::kernels::export_kernel);

/// The group estimate's program of key policy `Key` (kernels/estimate.hpp: gpuagg_sketch,
/// gpuagg_sketch_words; kernels/key_range.hpp: gpuagg_key_range).
template <class Key>
inline constexpr auto sample_program_source =
    detail::concat(detail::kernels::header, Key::cl_source, detail::sketch_cl_source, detail::stride_offset_cl_source,
                   detail::kernels::sketch_kernels, detail::kernels::key_range_kernel);

/// program_source for a strategy chosen at run time.
template <class Bound>
constexpr std::string_view program_source_for(strategy_kind kind) {
  return visit_strategy(kind, [](auto policy) { return program_source<Bound, decltype(policy)>.view(); });
}

}  // namespace gpuagg
