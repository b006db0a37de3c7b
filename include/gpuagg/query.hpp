#pragma once
// A query: the outputs of `SELECT g, <outputs> ... GROUP BY g` with its hashing scheme. Bound
// to a key policy and value column types, it knows its aggregates (deduplicated), every type, the
// OpenCL text of every expression, and a host evaluation of the same expressions.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "aggregate.hpp"
#include "detail/fixed_string.hpp"
#include "expression.hpp"
#include "hash.hpp"
#include "key.hpp"
#include "types.hpp"

namespace gpuagg {

namespace detail {

template <class... T>
struct type_list {
  static constexpr std::size_t size = sizeof...(T);
};

template <class List, class T>
struct contains;
template <class... Ts, class T>
struct contains<type_list<Ts...>, T> : std::bool_constant<(std::is_same_v<Ts, T> || ...)> {};

template <class List, class T>
struct push_unique;
template <class... Ts, class T>
struct push_unique<type_list<Ts...>, T> {
  using type = std::conditional_t<contains<type_list<Ts...>, T>::value, type_list<Ts...>, type_list<Ts..., T>>;
};

template <class Done, class... Rest>
struct unique_impl {
  using type = Done;
};
template <class Done, class First, class... Rest>
struct unique_impl<Done, First, Rest...> : unique_impl<typename push_unique<Done, First>::type, Rest...> {};

template <class List>
struct unique;
template <class... Ts>
struct unique<type_list<Ts...>> : unique_impl<type_list<>, Ts...> {};

template <class... Lists>
struct join;
template <>
struct join<> {
  using type = type_list<>;
};
template <class... A>
struct join<type_list<A...>> {
  using type = type_list<A...>;
};
template <class... A, class... B, class... Rest>
struct join<type_list<A...>, type_list<B...>, Rest...> : join<type_list<A..., B...>, Rest...> {};

template <class List, class T>
struct index_of;
template <class T, class... Rest>
struct index_of<type_list<T, Rest...>, T> : std::integral_constant<std::size_t, 0> {};
template <class First, class... Rest, class T>
struct index_of<type_list<First, Rest...>, T>
    : std::integral_constant<std::size_t, 1 + index_of<type_list<Rest...>, T>::value> {};

template <std::size_t I, class List>
struct at;
template <std::size_t I, class... Ts>
struct at<I, type_list<Ts...>> {
  using type = std::tuple_element_t<I, std::tuple<Ts...>>;
};

/// The aggregates an output expression uses, in order of appearance.
template <class E>
struct aggregates_in {
  using type = type_list<>;
};
template <class K, class A>
struct aggregates_in<aggregate_expr<K, A>> {
  using type = type_list<aggregate_expr<K, A>>;
};
template <class T, class E>
struct aggregates_in<cast_expr<T, E>> : aggregates_in<E> {};
template <class Op, class L, class R>
struct aggregates_in<binary_expr<Op, L, R>> {
  using type = typename join<typename aggregates_in<L>::type, typename aggregates_in<R>::type>::type;
};
template <class E>
struct aggregates_in<not_expr<E>> : aggregates_in<E> {};

template <class T>
inline constexpr bool always_false = false;

/// Row expressions: leaves are value columns.
template <class... Values>
struct row_env {
  using values = type_list<Values...>;
};
/// Output expressions: leaves are aggregates (accumulator arrays g_acc<J>).
template <class Aggregates, class RowEnv>
struct output_env {};

template <class E, class Env>
struct typed {
  static_assert(always_false<E>, "gpuagg: not an expression");
};

template <std::size_t I, class... Values>
struct typed<column_ref<I>, row_env<Values...>> {
  static_assert(I < sizeof...(Values), "gpuagg: col<I> names a value column that was not passed to group_by");
  using type = std::tuple_element_t<I, std::tuple<Values...>>;
  static constexpr auto cl = concat(fixed_string{"v"}, to_fixed_string<I>(), fixed_string{"[row]"});
  static constexpr type eval(const std::tuple<Values...>& row) { return std::get<I>(row); }
};

template <std::size_t I, class Aggregates, class RowEnv>
struct typed<column_ref<I>, output_env<Aggregates, RowEnv>> {
  static_assert(always_false<column_ref<I>>,
                "gpuagg: a value column outside an aggregate is not grouped; wrap it in sum/min/max/avg");
};

template <auto V, class Env>
struct typed<literal<V>, Env> {
  using type = decltype(V);
  static_assert(value_type<type>, "gpuagg: lit<V> must be int, unsigned, int64_t or uint64_t");
  static constexpr auto cl = concat(fixed_string{"(("}, cl_type_name<type>, fixed_string{")"}, to_fixed_string<V>(),
                                    fixed_string{")"});
  template <class Args>
  static constexpr type eval(const Args&) { return V; }
};

template <class T, class E, class Env>
struct typed<cast_expr<T, E>, Env> {
  using type = T;
  static constexpr auto cl =
      concat(fixed_string{"(("}, cl_type_name<T>, fixed_string{")("}, typed<E, Env>::cl, fixed_string{"))"});
  template <class Args>
  static constexpr type eval(const Args& args) { return static_cast<T>(typed<E, Env>::eval(args)); }
};

template <class Op, class L, class R, class Env>
struct typed<binary_expr<Op, L, R>, Env> {
  using type = decltype(Op::apply(std::declval<typename typed<L, Env>::type>(),
                                  std::declval<typename typed<R, Env>::type>()));
  static_assert(value_type<type>, "gpuagg: this arithmetic yields a type OpenCL columns cannot hold");
  static constexpr auto cl = concat(fixed_string{"("}, typed<L, Env>::cl, Op::symbol, typed<R, Env>::cl,
                                    fixed_string{")"});
  template <class Args>
  static constexpr type eval(const Args& args) {
    return Op::apply(typed<L, Env>::eval(args), typed<R, Env>::eval(args));
  }
};

template <class E, class Env>
struct typed<not_expr<E>, Env> {
  using type = int;
  static constexpr auto cl = concat(fixed_string{"(!"}, typed<E, Env>::cl, fixed_string{")"});
  template <class Args>
  static constexpr type eval(const Args& args) { return !typed<E, Env>::eval(args); }
};

template <class K, class A, class... Values>
struct typed<aggregate_expr<K, A>, row_env<Values...>> {
  static_assert(always_false<A>, "gpuagg: aggregates cannot be nested inside an aggregate");
};

/// The value type an aggregate reads (void for count).
template <class Aggregate, class RowEnv>
struct aggregate_value_type;
template <class K, class A, class RowEnv>
struct aggregate_value_type<aggregate_expr<K, A>, RowEnv> {
  using type = typename typed<A, RowEnv>::type;
};
template <class RowEnv>
struct aggregate_value_type<aggregate_expr<count_kind, void>, RowEnv> {
  using type = void;
};

template <class Aggregate, class RowEnv>
using policy_of = aggregate_policy<typename Aggregate::kind, typename aggregate_value_type<Aggregate, RowEnv>::type>;

template <class K, class A, class Aggregates, class RowEnv>
struct typed<aggregate_expr<K, A>, output_env<Aggregates, RowEnv>> {
  static constexpr std::size_t index = index_of<Aggregates, aggregate_expr<K, A>>::value;
  using policy = policy_of<aggregate_expr<K, A>, RowEnv>;
  using type = typename policy::result_type;
  // The accumulator, converted where the aggregate returns a narrower type than it keeps.
  static constexpr auto cl = [] {
    constexpr auto access = concat(fixed_string{"g_acc"}, to_fixed_string<index>(), fixed_string{"[slot]"});
    if constexpr (std::is_same_v<type, typename policy::acc_type>) {
      return access;
    } else {
      return concat(fixed_string{"(("}, cl_type_name<type>, fixed_string{")"}, access, fixed_string{")"});
    }
  }();
  template <class Accumulators>
  static constexpr type eval(const Accumulators& accs) { return static_cast<type>(std::get<index>(accs)); }
};

}  // namespace detail

/// No WHERE clause: every row counts.
struct all_rows {};

/// `SELECT g, Outputs... FROM R WHERE Predicate GROUP BY g` with hashing scheme `Scheme`.
template <class Scheme, class Predicate, expression... Outputs>
struct basic_query {
  static_assert(sizeof...(Outputs) > 0, "gpuagg: a query needs at least one output, e.g. gpuagg::count()");
  static_assert(Scheme::name.size() > 0, "gpuagg: the scheme must be gpuagg::hashing<Hash, Probing>");
  static_assert(((detail::aggregates_in<Outputs>::type::size > 0) && ...),
                "gpuagg: every output needs an aggregate (count, sum, min, max, avg)");
  using scheme = Scheme;
  using predicate = Predicate;

  /// The query with a WHERE clause: a row expression over the value columns, evaluated in
  /// AGGREGATE before the row touches the table; a row where it is 0 never counts and never
  /// makes a group. Comparisons (< <= > >= == !=), && || ! and arithmetic, e.g.
  /// `select(sum(col<0>)).where(col<2> <= lit<10471> && col<1> != lit<0>)`.
  template <expression P>
  constexpr basic_query<Scheme, P, Outputs...> where(P) const {
    static_assert(std::is_same_v<Predicate, all_rows>, "gpuagg: a query takes one where(); join conditions with &&");
    static_assert(detail::aggregates_in<P>::type::size == 0, "gpuagg: where() takes no aggregate (no HAVING)");
    return {};
  }
};

/// `SELECT g, Outputs... GROUP BY g` with hashing scheme `Scheme`.
template <class Scheme, class... Outputs>
using query = basic_query<Scheme, all_rows, Outputs...>;

namespace detail {
/// The query with direct addressing in place of its scheme: its outputs and WHERE clause.
template <class Query>
struct direct_query_of;
template <class Scheme, class Predicate, class... Outputs>
struct direct_query_of<basic_query<Scheme, Predicate, Outputs...>> {
  using type = basic_query<direct_addressing, Predicate, Outputs...>;
};
}  // namespace detail

/// The query `SELECT g, outputs... GROUP BY g`, hashed with multiply-shift and linear probing.
template <class Scheme = hashing<>, expression... Outputs>
constexpr query<Scheme, Outputs...> select(Outputs...) {
  return {};
}

/// A query bound to its key policy and value column types: everything the source generator,
/// the driver and the CPU reference need.
template <key_policy Key, class Query, class... Values>
struct bound_query;

template <key_policy Key, class Scheme, class Predicate, class... Outputs, class... Values>
struct bound_query<Key, basic_query<Scheme, Predicate, Outputs...>, Values...> {
  static_assert((value_type<Values> && ...), "gpuagg: value columns must be 8-, 16-, 32- or 64-bit "
                                              "integers, float or double");
  using key = Key;
  using scheme = Scheme;
  using row_env = detail::row_env<Values...>;
  using aggregates =
      typename detail::unique<typename detail::join<typename detail::aggregates_in<Outputs>::type...>::type>::type;
  using out_env = detail::output_env<aggregates, row_env>;
  using value_tuple = std::tuple<Values...>;
  using output_tuple = std::tuple<typename detail::typed<Outputs, out_env>::type...>;
  static constexpr std::size_t value_count = sizeof...(Values);
  static constexpr std::size_t output_count = sizeof...(Outputs);
  static constexpr std::size_t aggregate_count = aggregates::size;

  template <std::size_t J>
  using aggregate_at = typename detail::at<J, aggregates>::type;
  template <std::size_t J>
  using policy_at = detail::policy_of<aggregate_at<J>, row_env>;
  template <std::size_t J>
  using acc_at = typename policy_at<J>::acc_type;

  using accumulator_tuple = decltype([]<std::size_t... J>(std::index_sequence<J...>) {
    return std::tuple<acc_at<J>...>{};
  }(std::make_index_sequence<aggregate_count>{}));

  /// Bytes of one bucket: the key word and every accumulator.
  static constexpr std::size_t bucket_bytes = []<std::size_t... J>(std::index_sequence<J...>) {
    return sizeof(typename Key::bits_type) + (std::size_t{0} + ... + sizeof(acc_at<J>));
  }(std::make_index_sequence<aggregate_count>{});
  static constexpr std::size_t accumulator_bytes = bucket_bytes - sizeof(typename Key::bits_type);
  /// The widest accumulator: the word of an interleaved bucket (kernels/library.hpp: GPUAGG_INTERLEAVED).
  static constexpr std::size_t accumulator_word = []<std::size_t... J>(std::index_sequence<J...>) {
    return std::max({sizeof(typename Key::bits_type), sizeof(acc_at<J>)...});
  }(std::make_index_sequence<aggregate_count>{});
  /// Whether the global table can keep a bucket's key and accumulators in one record of
  /// aggregate_count + 1 words: every accumulator that wide, the key no wider.
  static constexpr bool interleavable = []<std::size_t... J>(std::index_sequence<J...>) {
    return aggregate_count > 0 && ((sizeof(acc_at<J>) == accumulator_word) && ...);
  }(std::make_index_sequence<aggregate_count>{});
  static constexpr std::size_t interleaved_bucket_bytes = accumulator_word * (aggregate_count + 1);

  // ---- host evaluation (the CPU reference) ----
  static constexpr accumulator_tuple identity() {
    return [&]<std::size_t... J>(std::index_sequence<J...>) {
      return accumulator_tuple{policy_at<J>::identity()...};
    }(std::make_index_sequence<aggregate_count>{});
  }
  template <std::size_t J>
  static constexpr acc_at<J> row_value(const value_tuple& row) {
    using aggregate = aggregate_at<J>;
    if constexpr (std::is_void_v<typename aggregate::argument>) {
      return policy_at<J>::from_row();
    } else {
      return policy_at<J>::from_row(detail::typed<typename aggregate::argument, row_env>::eval(row));
    }
  }
  static constexpr void accumulate(accumulator_tuple& accs, const value_tuple& row) {
    [&]<std::size_t... J>(std::index_sequence<J...>) {
      ((std::get<J>(accs) = policy_at<J>::combine(std::get<J>(accs), row_value<J>(row))), ...);
    }(std::make_index_sequence<aggregate_count>{});
  }
  static constexpr output_tuple finalize(const accumulator_tuple& accs) {
    return output_tuple{detail::typed<Outputs, out_env>::eval(accs)...};
  }
  static constexpr bool has_predicate = !std::is_same_v<Predicate, all_rows>;
  /// Whether a row passes the WHERE clause.
  static constexpr bool passes(const value_tuple& row) {
    if constexpr (has_predicate) {
      return detail::typed<Predicate, row_env>::eval(row) != 0;
    } else {
      return true;
    }
  }

  // ---- OpenCL text ----
  template <std::size_t I>
  static constexpr auto value_param() {
    using V = std::tuple_element_t<I, value_tuple>;
    return detail::concat(detail::fixed_string{", __global const "}, cl_type_name<V>,
                          detail::fixed_string{"* restrict v"}, detail::to_fixed_string<I>());
  }

  template <std::size_t I>
  static constexpr auto value_copy_param() {
    using V = std::tuple_element_t<I, value_tuple>;
    return detail::concat(detail::fixed_string{", __global "}, cl_type_name<V>, detail::fixed_string{"* restrict vc"},
                          detail::to_fixed_string<I>());
  }

  template <std::size_t J>
  static constexpr auto aggregate_source() {
    using policy = policy_at<J>;
    using acc = acc_at<J>;
    using aggregate = aggregate_at<J>;
    constexpr auto index = detail::to_fixed_string<J>();
    constexpr auto acc_name = cl_type_name<acc>;
    constexpr auto row_text = [] {
      if constexpr (std::is_void_v<typename aggregate::argument>) {
        return detail::fixed_string{"1"};
      } else {
        return detail::typed<typename aggregate::argument, row_env>::cl;
      }
    }();
    constexpr auto op_upper = detail::to_upper(policy::op);
    constexpr auto type_upper = detail::to_upper(acc_name);
    using detail::concat;
    using detail::fixed_string;
    return concat(
        fixed_string{"// aggregate "}, index, fixed_string{": "}, aggregate::kind::name, fixed_string{"("},
        row_text, fixed_string{")\n#define GPUAGG_NEED_"}, op_upper, fixed_string{"_"}, type_upper,
        fixed_string{" 1\ntypedef "}, acc_name, fixed_string{" acc"}, index, fixed_string{"_t;\n#define ACC"}, index,
        fixed_string{"_IDENTITY "}, detail::cl_constant<acc, detail::bits_of<acc>(policy::identity())>(),
        fixed_string{"\n#define ACC"}, index, fixed_string{"_ROW(row) ((acc"}, index, fixed_string{"_t)("}, row_text,
        fixed_string{"))\n#define ACC"}, index, fixed_string{"_COMBINE_global(p, x) gpuagg_atomic_"}, policy::op,
        fixed_string{"_"}, acc_name, fixed_string{"_global(p, x)\n#define ACC"}, index,
        fixed_string{"_COMBINE_local(p, x) gpuagg_atomic_"}, policy::op, fixed_string{"_"}, acc_name,
        fixed_string{"_local(p, x)\n#define ACC"}, index, fixed_string{"_COMBINE_private(p, x) (*(p) = gpuagg_"},
        policy::op, fixed_string{"_"}, acc_name, fixed_string{"(*(p), (x)))\n"});
  }

  template <std::size_t K>
  static constexpr auto output_source() {
    using output = std::tuple_element_t<K, std::tuple<Outputs...>>;
    using out_type = std::tuple_element_t<K, output_tuple>;
    constexpr auto index = detail::to_fixed_string<K>();
    using detail::fixed_string;
    return detail::concat(fixed_string{"typedef "}, cl_type_name<out_type>, fixed_string{" out"}, index,
                          fixed_string{"_t;\n#define OUT"}, index, fixed_string{"_VALUE(slot) ((out"}, index,
                          fixed_string{"_t)("}, detail::typed<output, out_env>::cl, fixed_string{"))\n"});
  }

  /// Macros that list every accumulator: parameters, initialization, combining, copying.
  static constexpr auto list_macros() {
    using detail::fixed_string;
    return [&]<std::size_t... J, std::size_t... K, std::size_t... I>(
               std::index_sequence<J...>, std::index_sequence<K...>, std::index_sequence<I...>) {
      return detail::concat(
          fixed_string{"#define VALUE_PARAMS "}, value_param<I>()..., fixed_string{"\n#define VALUE_COPY_PARAMS "},
          value_copy_param<I>()..., fixed_string{"\n#define VALUE_COPY(to, from)"},
          detail::concat(fixed_string{" vc"}, detail::to_fixed_string<I>(), fixed_string{"[to] = v"},
                         detail::to_fixed_string<I>(), fixed_string{"[from];"})...,
          fixed_string{"\n#define ACC_PARAMS(AS, P)"},
          detail::concat(fixed_string{" , AS acc"}, detail::to_fixed_string<J>(), fixed_string{"_t* P##acc"},
                         detail::to_fixed_string<J>())...,
          fixed_string{"\n#define ACC_INIT(P, s)"},
          detail::concat(fixed_string{" P##acc"}, detail::to_fixed_string<J>(), fixed_string{"[s] = ACC"},
                         detail::to_fixed_string<J>(), fixed_string{"_IDENTITY;"})...,
          fixed_string{"\n#define ACC_COMBINE_FROM(AS, P, s, Q, q)"},
          detail::concat(fixed_string{" ACC"}, detail::to_fixed_string<J>(), fixed_string{"_COMBINE_##AS(&P##acc"},
                         detail::to_fixed_string<J>(), fixed_string{"[s], Q##acc"}, detail::to_fixed_string<J>(),
                         fixed_string{"[q]);"})...,
          fixed_string{"\n#define ACC_LOAD_ROW(P, row)"},
          detail::concat(fixed_string{" const acc"}, detail::to_fixed_string<J>(), fixed_string{"_t P##"},
                         detail::to_fixed_string<J>(), fixed_string{" = ACC"}, detail::to_fixed_string<J>(),
                         fixed_string{"_ROW(row);"})...,
          fixed_string{"\n#define ACC_COMBINE_LOADED(AS, T, s, P)"},
          detail::concat(fixed_string{" ACC"}, detail::to_fixed_string<J>(), fixed_string{"_COMBINE_##AS(&T##acc"},
                         detail::to_fixed_string<J>(), fixed_string{"[s], P##"}, detail::to_fixed_string<J>(),
                         fixed_string{");"})...,
          fixed_string{"\n#define ACC_DECLARE(P)"},
          detail::concat(fixed_string{" acc"}, detail::to_fixed_string<J>(), fixed_string{"_t P##"},
                         detail::to_fixed_string<J>(), fixed_string{" = ACC"}, detail::to_fixed_string<J>(),
                         fixed_string{"_IDENTITY;"})...,
          fixed_string{"\n#define ACC_ASSIGN(P, Q)"},
          detail::concat(fixed_string{" P##"}, detail::to_fixed_string<J>(), fixed_string{" = Q##"},
                         detail::to_fixed_string<J>(), fixed_string{";"})...,
          fixed_string{"\n#define ACC_MERGE_PRIVATE(P, Q)"},
          detail::concat(fixed_string{" ACC"}, detail::to_fixed_string<J>(), fixed_string{"_COMBINE_private(&P##"},
                         detail::to_fixed_string<J>(), fixed_string{", Q##"}, detail::to_fixed_string<J>(),
                         fixed_string{");"})...,
          fixed_string{"\n#define ACC_MERGE_PRIVATE_IF(P, Q, c)"},
          detail::concat(fixed_string{" { acc"}, detail::to_fixed_string<J>(), fixed_string{"_t m_ = P##"},
                         detail::to_fixed_string<J>(), fixed_string{"; ACC"}, detail::to_fixed_string<J>(),
                         fixed_string{"_COMBINE_private(&m_, Q##"}, detail::to_fixed_string<J>(),
                         fixed_string{"); P##"}, detail::to_fixed_string<J>(), fixed_string{" = (c) ? m_ : P##"},
                         detail::to_fixed_string<J>(), fixed_string{"; }"})...,
          fixed_string{"\n#define ACC_STORE_LOADED(T, s, P)"},
          detail::concat(fixed_string{" T##acc"}, detail::to_fixed_string<J>(), fixed_string{"[s] = P##"},
                         detail::to_fixed_string<J>(), fixed_string{";"})...,
          fixed_string{"\n#define ACC_COUNT "}, detail::to_fixed_string<aggregate_count>(),
          fixed_string{"u\n#define ACC_WORD_BYTES "}, detail::to_fixed_string<accumulator_word>(),
          fixed_string{"u\n#define ACC_REBIND(P, AS)"},
          detail::concat(fixed_string{" P##acc"}, detail::to_fixed_string<J>(), fixed_string{" = (AS acc"},
                         detail::to_fixed_string<J>(), fixed_string{"_t*)((AS uchar*)P##keys + ACC_WORD_BYTES * "},
                         detail::to_fixed_string<J + 1>(), fixed_string{"u);"})...,
          fixed_string{"\n#define ACC_COPY_FROM(P, s, Q, q)"},
          detail::concat(fixed_string{" P##acc"}, detail::to_fixed_string<J>(), fixed_string{"[s] = Q##acc"},
                         detail::to_fixed_string<J>(), fixed_string{"[q];"})...,
          fixed_string{"\n#define OUT_PARAMS"},
          detail::concat(fixed_string{" , __global out"}, detail::to_fixed_string<K>(),
                         fixed_string{"_t* restrict out"}, detail::to_fixed_string<K>())...,
          fixed_string{"\n#define OUT_STORE_ALL(pos, slot)"},
          detail::concat(fixed_string{" out"}, detail::to_fixed_string<K>(), fixed_string{"[pos] = OUT"},
                         detail::to_fixed_string<K>(), fixed_string{"_VALUE(slot);"})...,
          fixed_string{"\n"});
    }(std::make_index_sequence<aggregate_count>{}, std::make_index_sequence<output_count>{},
           std::make_index_sequence<value_count>{});
  }

  /// ROW_PASSES(row): the WHERE clause (1 without one).
  static constexpr auto predicate_source() {
    using detail::fixed_string;
    if constexpr (has_predicate) {
      return detail::concat(fixed_string{"#define ROW_PASSES(row) ("}, detail::typed<Predicate, row_env>::cl,
                            fixed_string{")\n"});
    } else {
      return fixed_string{"#define ROW_PASSES(row) 1\n"};
    }
  }

  /// Everything the query contributes to its OpenCL program.
  static constexpr auto cl_source = [] {
    return [&]<std::size_t... J, std::size_t... K>(std::index_sequence<J...>, std::index_sequence<K...>) {
      return detail::concat(aggregate_source<J>()..., output_source<K>()..., list_macros(), predicate_source());
    }(std::make_index_sequence<aggregate_count>{}, std::make_index_sequence<output_count>{});
  }();
};

}  // namespace gpuagg
