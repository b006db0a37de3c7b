#pragma once
// Arithmetic written in C++ and turned into OpenCL C at compile time. Expressions are empty
// types: `(col<0> - col<1>) * (col<0> - col<1>)` is a type whose OpenCL text and host
// evaluation are both derived from it. Arithmetic follows C's (and OpenCL C's) promotion rules on
// the column types; use `as<T>(e)` to compute in another type.

#include <concepts>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "detail/fixed_string.hpp"
#include "types.hpp"

namespace gpuagg {

namespace detail {
struct expression_tag {};
}  // namespace detail

template <class E>
concept expression = std::derived_from<E, detail::expression_tag>;

/// The value column with index I (in the order the columns are passed to group_by).
template <std::size_t I>
struct column_ref : detail::expression_tag {
  static constexpr std::size_t index = I;
};
template <std::size_t I>
inline constexpr column_ref<I> col{};

/// A compile-time integer constant, e.g. `lit<2>`.
template <auto V>
struct literal : detail::expression_tag {
  static_assert(std::is_integral_v<decltype(V)>, "gpuagg: lit<V> takes an integer; use as<double>(...) for floats");
  static constexpr auto value = V;
};
template <auto V>
inline constexpr literal<V> lit{};

/// Conversion of an expression to T.
template <value_type T, expression E>
struct cast_expr : detail::expression_tag {};
template <value_type T, expression E>
constexpr cast_expr<T, E> as(E) {
  return {};
}

struct plus_op {
  static constexpr detail::fixed_string symbol{" + "};
  template <class A, class B>
  static constexpr auto apply(A a, B b) { return a + b; }
};
struct minus_op {
  static constexpr detail::fixed_string symbol{" - "};
  template <class A, class B>
  static constexpr auto apply(A a, B b) { return a - b; }
};
struct multiplies_op {
  static constexpr detail::fixed_string symbol{" * "};
  template <class A, class B>
  static constexpr auto apply(A a, B b) { return a * b; }
};
struct divides_op {
  static constexpr detail::fixed_string symbol{" / "};
  template <class A, class B>
  static constexpr auto apply(A a, B b) { return a / b; }
};

// Comparisons and logic yield an int, 1 or 0, as in C and OpenCL C: a WHERE predicate
// (query::where), and a value like any other (sum(col<0> > lit<10>) counts the rows above 10).
struct less_op {
  static constexpr detail::fixed_string symbol{" < "};
  template <class A, class B>
  static constexpr int apply(A a, B b) { return a < b; }
};
struct less_equal_op {
  static constexpr detail::fixed_string symbol{" <= "};
  template <class A, class B>
  static constexpr int apply(A a, B b) { return a <= b; }
};
struct greater_op {
  static constexpr detail::fixed_string symbol{" > "};
  template <class A, class B>
  static constexpr int apply(A a, B b) { return a > b; }
};
struct greater_equal_op {
  static constexpr detail::fixed_string symbol{" >= "};
  template <class A, class B>
  static constexpr int apply(A a, B b) { return a >= b; }
};
struct equal_op {
  static constexpr detail::fixed_string symbol{" == "};
  template <class A, class B>
  static constexpr int apply(A a, B b) { return a == b; }
};
struct not_equal_op {
  static constexpr detail::fixed_string symbol{" != "};
  template <class A, class B>
  static constexpr int apply(A a, B b) { return a != b; }
};
struct and_op {
  static constexpr detail::fixed_string symbol{" && "};
  template <class A, class B>
  static constexpr int apply(A a, B b) { return a && b; }
};
struct or_op {
  static constexpr detail::fixed_string symbol{" || "};
  template <class A, class B>
  static constexpr int apply(A a, B b) { return a || b; }
};

template <class Op, expression L, expression R>
struct binary_expr : detail::expression_tag {};

/// Logical negation: 1 where E is 0, else 0.
template <expression E>
struct not_expr : detail::expression_tag {};

template <expression L, expression R>
constexpr binary_expr<plus_op, L, R> operator+(L, R) { return {}; }
template <expression L, expression R>
constexpr binary_expr<minus_op, L, R> operator-(L, R) { return {}; }
template <expression L, expression R>
constexpr binary_expr<multiplies_op, L, R> operator*(L, R) { return {}; }
template <expression L, expression R>
constexpr binary_expr<divides_op, L, R> operator/(L, R) { return {}; }

template <expression L, expression R>
constexpr binary_expr<less_op, L, R> operator<(L, R) { return {}; }
template <expression L, expression R>
constexpr binary_expr<less_equal_op, L, R> operator<=(L, R) { return {}; }
template <expression L, expression R>
constexpr binary_expr<greater_op, L, R> operator>(L, R) { return {}; }
template <expression L, expression R>
constexpr binary_expr<greater_equal_op, L, R> operator>=(L, R) { return {}; }
template <expression L, expression R>
constexpr binary_expr<equal_op, L, R> operator==(L, R) { return {}; }
template <expression L, expression R>
constexpr binary_expr<not_equal_op, L, R> operator!=(L, R) { return {}; }
template <expression L, expression R>
constexpr binary_expr<and_op, L, R> operator&&(L, R) { return {}; }
template <expression L, expression R>
constexpr binary_expr<or_op, L, R> operator||(L, R) { return {}; }
template <expression E>
constexpr not_expr<E> operator!(E) { return {}; }

/// e * e, for the paper's (a - b)^2.
template <expression E>
constexpr binary_expr<multiplies_op, E, E> square(E) { return {}; }

/// `auto [a, b] = gpuagg::columns<2>;` names the first two value columns.
template <std::size_t N>
inline constexpr auto columns = []<std::size_t... I>(std::index_sequence<I...>) {
  return std::tuple<column_ref<I>...>{};
}(std::make_index_sequence<N>{});

}  // namespace gpuagg
