#pragma once
// The query of the tests where partial aggregates travel (partials, several devices, MPI ranks)
// and of the query-feature matrix: one aggregate of each kind of accumulator. avg keeps a sum
// and a count (a finalized average could not be combined, a partial one can); min and max keep
// their own.

#include <cstdint>
#include <type_traits>

#include <gpuagg/groupby.hpp>

namespace gpuagg_test {

inline const auto all_kinds = gpuagg::select(gpuagg::sum(gpuagg::col<0>), gpuagg::count(), gpuagg::min(gpuagg::col<0>),
                                             gpuagg::max(gpuagg::col<0>), gpuagg::avg(gpuagg::col<0>));

/// all_kinds bound to a single key column of Key and an int64 value column.
template <class Key>
using all_kinds_bound =
    gpuagg::bound_query<gpuagg::single_key<Key>, std::remove_const_t<decltype(all_kinds)>, std::int64_t>;

}  // namespace gpuagg_test
