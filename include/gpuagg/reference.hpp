#pragma once
// The CPU reference: the same query evaluated on the host with the policies' host operators
// (aggregate_policy::combine, the expressions' host evaluation). Tests and benchmarks check
// every device result against it. Not included by groupby.hpp.

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <unordered_map>
#include <vector>

#include "query.hpp"
#include "result.hpp"

namespace gpuagg {

namespace detail {
template <class Key, class Tuple>
struct reference_result_for;
template <class Key, class... Outputs>
struct reference_result_for<Key, std::tuple<Outputs...>> {
  using type = result<Key, Outputs...>;
};
}  // namespace detail

/// SELECT key, outputs... FROM R WHERE predicate GROUP BY key on the CPU, groups sorted by
/// key. `keys` holds the key policy's values (tuples for composite keys).
template <class Bound, class Key, class... Values>
auto reference_group_by(std::span<const Key> keys, std::span<const Values>... values) {
  using key_policy = typename Bound::key;
  using accumulators = typename Bound::accumulator_tuple;
  std::unordered_map<typename key_policy::bits_type, accumulators> groups;
  groups.reserve(std::min<std::size_t>(keys.size(), 1 << 22));
  for (std::size_t row = 0; row < keys.size(); ++row) {
    const typename Bound::value_tuple values_of_row(values[row]...);
    if (!Bound::passes(values_of_row)) continue;
    auto [it, inserted] = groups.try_emplace(key_policy::to_bits(keys[row]), Bound::identity());
    Bound::accumulate(it->second, values_of_row);
  }
  typename detail::reference_result_for<Key, typename Bound::output_tuple>::type out;
  std::vector<Key> sorted;
  sorted.reserve(groups.size());
  for (const auto& entry : groups) sorted.push_back(key_policy::from_bits(entry.first));
  std::sort(sorted.begin(), sorted.end());
  out.keys.resize(sorted.size());
  std::apply([&](auto&... column) { (column.reserve(sorted.size()), ...); }, out.columns);
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if constexpr (std::is_same_v<decltype(out.keys), std::vector<Key>>) {
      out.keys[i] = sorted[i];
    } else {
      [&]<std::size_t... C>(std::index_sequence<C...>) {
        ((out.keys.template column<C>()[i] = std::get<C>(sorted[i])), ...);
      }(std::make_index_sequence<key_policy::columns>{});
    }
    const auto outputs = Bound::finalize(groups.at(key_policy::to_bits(sorted[i])));
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (std::get<I>(out.columns).push_back(std::get<I>(outputs)), ...);
    }(std::make_index_sequence<std::tuple_size_v<typename Bound::output_tuple>>{});
  }
  out.stats.rows = keys.size();
  out.stats.groups = out.keys.size();
  return out;
}

/// Reorders a result's groups by key (group order is unspecified on the device).
template <class Key, class... Outputs>
void sort_by_key(result<Key, Outputs...>& r) {
  std::vector<std::size_t> order(r.keys.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return r.keys[a] < r.keys[b]; });
  auto permute = [&](auto& column) {
    auto copy = column;
    for (std::size_t i = 0; i < order.size(); ++i) column[i] = copy[order[i]];
  };
  if constexpr (requires { r.keys.permute(order); }) {
    r.keys.permute(order);
  } else {
    permute(r.keys);
  }
  std::apply([&](auto&... column) { (permute(column), ...); }, r.columns);
}

}  // namespace gpuagg
