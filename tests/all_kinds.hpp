#pragma once
// The query of the tests where partial aggregates travel (partials, several devices, MPI ranks)
// and of the query-feature matrix: one aggregate of each kind of accumulator. avg keeps a sum
// and a count (a finalized average could not be combined, a partial one can); min and max keep
// their own.

#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include <gpuagg/groupby.hpp>
#include <gpuagg/reference.hpp>

namespace gpuagg_test {

inline const auto all_kinds = gpuagg::select(gpuagg::sum(gpuagg::col<0>), gpuagg::count(), gpuagg::min(gpuagg::col<0>),
                                             gpuagg::max(gpuagg::col<0>), gpuagg::avg(gpuagg::col<0>));

/// all_kinds bound to a single key column of Key and an int64 value column.
template <class Key>
using all_kinds_bound =
    gpuagg::bound_query<gpuagg::single_key<Key>, std::remove_const_t<decltype(all_kinds)>, std::int64_t>;

/// The CPU reference of all_kinds over `keys` and int64 `vals`.
template <class Key>
auto all_kinds_reference(const std::vector<Key>& keys, const std::vector<std::int64_t>& vals) {
  return gpuagg::reference_group_by<all_kinds_bound<Key>>(std::span<const Key>(keys),
                                                          std::span<const std::int64_t>(vals));
}

/// FINALIZE of a driver of all_kinds, the result on the host: its five outputs' types.
template <class Driver>
auto finalize_all_kinds(Driver& driver) {
  return driver.template finalize_to_host<std::int64_t, std::uint64_t, std::int64_t, std::int64_t, double>();
}

}  // namespace gpuagg_test
