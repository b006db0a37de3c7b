#pragma once
// gpuagg: hash aggregation (SELECT g, aggregates... GROUP BY g) on GPUs through OpenCL,
// after Rosenfeld et al., "Performance Analysis and Automatic Tuning of Hash Aggregation on
// GPUs" (DaMoN 2019). This is the one header users include.
//
//   auto [a, b] = gpuagg::columns<2>;
//   auto q = gpuagg::select(gpuagg::sum(gpuagg::square(a - b)) / gpuagg::count());
//   auto r = gpuagg::group_by(g, gpuagg::values(a_column, b_column), q);
//   // r.keys[i], r.column<0>()[i]

#include <cstddef>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "aggregate.hpp"
#include "column.hpp"
#include "driver.hpp"
#include "error.hpp"
#include "expression.hpp"
#include "hash.hpp"
#include "key.hpp"
#include "launch_config.hpp"
#include "options.hpp"
#include "query.hpp"
#include "result.hpp"
#include "runtime/context.hpp"
#include "source.hpp"
#include "strategy.hpp"
#include "types.hpp"

namespace gpuagg {

/// The value columns of a query, by reference: `values(a, b)`.
template <column... Columns>
constexpr std::tuple<const Columns&...> values(const Columns&... cols) {
  return std::tuple<const Columns&...>(cols...);
}

namespace detail {

template <class T>
struct is_tuple : std::false_type {};
template <class... T>
struct is_tuple<std::tuple<T...>> : std::true_type {};

template <class Values>
decltype(auto) as_value_tuple(const Values& values) {
  if constexpr (is_tuple<Values>::value) {
    return (values);
  } else {
    return std::tuple<const Values&>(values);
  }
}

template <column KeyColumn, class Query, class ValueTuple>
struct bound_for;
template <column KeyColumn, class Query, class... Columns>
struct bound_for<KeyColumn, Query, std::tuple<Columns...>> {
  using key_value = column_element_t<KeyColumn>;
  static_assert(key_type<key_value>, "gpuagg: keys must be int32_t, uint32_t, int64_t or uint64_t");
  using type = bound_query<single_key<key_value>, Query, column_element_t<Columns>...>;
};

template <class Key, class Tuple>
struct host_result_for;
template <class Key, class... Outputs>
struct host_result_for<Key, std::tuple<Outputs...>> {
  using type = result<Key, Outputs...>;
  template <class Driver>
  static type finalize(Driver& driver) { return driver.template finalize_to_host<Outputs...>(); }
  template <class Driver>
  static device_result<Key, Outputs...> finalize_on_device(Driver& driver) {
    return driver.template finalize_on_device<Outputs...>();
  }
};

template <class KeyColumn, class ValueTuple>
std::vector<column_data> column_list(const KeyColumn& keys, const ValueTuple& values) {
  std::vector<column_data> list{column_traits<std::remove_cvref_t<KeyColumn>>::data(keys)};
  std::apply([&](const auto&... c) { (list.push_back(column_traits<std::remove_cvref_t<decltype(c)>>::data(c)), ...); },
             values);
  return list;
}

}  // namespace detail

/// The driver of one query, for stepping block by block (the tuner, benchmarks).
template <class Query, column KeyColumn, class Values>
auto make_driver(const KeyColumn& keys, const Values& values, Query, const options& opts = {}) {
  const auto& tuple = detail::as_value_tuple(values);
  using bound = typename detail::bound_for<KeyColumn, Query, std::remove_cvref_t<decltype(tuple)>>::type;
  context& ctx = opts.ctx ? *opts.ctx : default_context();
  return std::make_unique<aggregation_driver<bound>>(ctx, opts, detail::column_list(keys, tuple));
}

/// SELECT keys, outputs... GROUP BY keys: the result on the host.
/// `values`: one column or values(c0, c1, ...); columns are std::vector, std::span or
/// device_column (all on the host or all on the device).
template <class Query, column KeyColumn, class Values>
auto group_by(const KeyColumn& keys, const Values& values, Query query, const options& opts = {}) {
  auto driver = make_driver(keys, values, query, opts);
  using bound = typename std::remove_reference_t<decltype(*driver)>::bound_type;
  using finisher = detail::host_result_for<typename bound::key::value_type, typename bound::output_tuple>;
  driver->run_remaining(opts.strategy ? std::optional<execution_params>(execution_params{
                                            *opts.strategy, opts.config.value_or(driver->initial_config(*opts.strategy))})
                                      : std::nullopt);
  return finisher::finalize(*driver);
}

/// As group_by, with the result left in device buffers.
template <class Query, column KeyColumn, class Values>
auto group_by_on_device(const KeyColumn& keys, const Values& values, Query query, const options& opts = {}) {
  auto driver = make_driver(keys, values, query, opts);
  using bound = typename std::remove_reference_t<decltype(*driver)>::bound_type;
  using finisher = detail::host_result_for<typename bound::key::value_type, typename bound::output_tuple>;
  driver->run_remaining(opts.strategy ? std::optional<execution_params>(execution_params{
                                            *opts.strategy, opts.config.value_or(driver->initial_config(*opts.strategy))})
                                      : std::nullopt);
  return finisher::finalize_on_device(*driver);
}

}  // namespace gpuagg
