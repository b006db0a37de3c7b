#pragma once
// Aggregation functions. Each kind is a policy with an identity, an OpenCL combine (atomic for
// shared tables, plain for private ones) and the same combine on the host, which the tests'
// CPU reference uses.
//
// Semantics:
//  - count() counts rows (uint64).
//  - sum(e): integers accumulate in 64 bits (int64 for signed, uint64 for unsigned, wrapping on
//    overflow); float and double accumulate in double. IEEE rules: a NaN makes the sum NaN,
//    +inf + -inf is NaN. The order of additions is unspecified, so double sums may differ from a
//    sequential sum in the last bits.
//  - min(e), max(e) keep the value type (8- and 16-bit values are kept in 32-bit accumulators,
//    which atomics need, and returned in their own type). Floating-point values are ordered as in PostgreSQL:
//    NaN is greater than every number (and equal to itself). So max() of a group holding a NaN is
//    NaN, and min() is NaN only when every value is NaN.
//  - avg(e) is as<double>(sum(e)) / as<double>(count()).

#include <bit>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "detail/fixed_string.hpp"
#include "expression.hpp"
#include "types.hpp"

namespace gpuagg {

struct count_kind {
  static constexpr detail::fixed_string name{"count"};
};
struct sum_kind {
  static constexpr detail::fixed_string name{"sum"};
};
struct min_kind {
  static constexpr detail::fixed_string name{"min"};
};
struct max_kind {
  static constexpr detail::fixed_string name{"max"};
};

/// An aggregation function over a row expression (`void` for count(*)).
template <class Kind, class E>
struct aggregate_expr : detail::expression_tag {
  using kind = Kind;
  using argument = E;
};

constexpr aggregate_expr<count_kind, void> count() { return {}; }
template <expression E>
constexpr aggregate_expr<sum_kind, E> sum(E) { return {}; }
template <expression E>
constexpr aggregate_expr<min_kind, E> min(E) { return {}; }
template <expression E>
constexpr aggregate_expr<max_kind, E> max(E) { return {}; }
template <expression E>
constexpr auto avg(E e) {
  return as<double>(sum(e)) / as<double>(count());
}

namespace detail {

/// The OpenCL text of a compile-time constant of type T given by its bits.
template <value_type T, std::uint64_t Bits>
constexpr auto cl_constant() {
  if constexpr (std::is_floating_point_v<T>) {
    using word = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
    return concat(fixed_string{"as_"}, cl_type_name<T>, fixed_string{"(("}, cl_type_name<word>,
                  fixed_string{")"}, to_hex_fixed_string<Bits, sizeof(T) * 2>(), fixed_string{"UL)"});
  } else {
    return concat(fixed_string{"(("}, cl_type_name<T>, fixed_string{")"}, to_hex_fixed_string<Bits, sizeof(T) * 2>(),
                  fixed_string{"UL)"});
  }
}

template <value_type T>
constexpr std::uint64_t bits_of(T value) {
  if constexpr (sizeof(T) == 8) {
    return std::bit_cast<std::uint64_t>(value);
  } else {
    return std::bit_cast<std::uint32_t>(value);
  }
}

/// Floating-point order with NaN above every number (PostgreSQL's).
template <class T>
constexpr bool ordered_less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

template <class T>
constexpr T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using unsigned_t = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<unsigned_t>(a) + static_cast<unsigned_t>(b));
  } else {
    return a + b;
  }
}

}  // namespace detail

/// The policy of aggregation `Kind` over values of type V (`void` for count). `acc_type` is what
/// the table keeps, `result_type` what a query returns for the aggregate alone.
template <class Kind, class V>
struct aggregate_policy;

namespace detail {
/// The accumulator of min/max over V: V itself, or for 8- and 16-bit integers the 32-bit type of
/// their signedness (OpenCL has no atomics on narrower words).
template <class V>
using extreme_acc_t =
    std::conditional_t<narrow_integer<V>, std::conditional_t<std::is_signed_v<V>, std::int32_t, std::uint32_t>, V>;
}  // namespace detail

template <class V>
struct aggregate_policy<count_kind, V> {
  using acc_type = std::uint64_t;
  using result_type = acc_type;
  static constexpr detail::fixed_string op{"add"};
  static constexpr acc_type identity() { return 0; }
  static constexpr acc_type from_row(...) { return 1; }
  static constexpr acc_type combine(acc_type a, acc_type b) { return a + b; }
};

template <value_type V>
struct aggregate_policy<sum_kind, V> {
  using acc_type = std::conditional_t<std::is_floating_point_v<V>, double,
                                      std::conditional_t<std::is_signed_v<V>, std::int64_t, std::uint64_t>>;
  using result_type = acc_type;
  static constexpr detail::fixed_string op{"add"};
  static constexpr acc_type identity() { return 0; }
  static constexpr acc_type from_row(V value) { return static_cast<acc_type>(value); }
  static constexpr acc_type combine(acc_type a, acc_type b) { return detail::wrapping_add(a, b); }
};

template <value_type V>
struct aggregate_policy<min_kind, V> {
  using acc_type = detail::extreme_acc_t<V>;
  using result_type = V;
  static constexpr detail::fixed_string op{"minimum"};
  static constexpr acc_type identity() {
    if constexpr (std::is_floating_point_v<V>) return std::numeric_limits<V>::quiet_NaN();
    else return std::numeric_limits<acc_type>::max();
  }
  static constexpr acc_type from_row(V value) { return value; }
  static constexpr acc_type combine(acc_type a, acc_type b) { return detail::ordered_less(b, a) ? b : a; }
};

template <value_type V>
struct aggregate_policy<max_kind, V> {
  using acc_type = detail::extreme_acc_t<V>;
  using result_type = V;
  static constexpr detail::fixed_string op{"maximum"};
  static constexpr acc_type identity() {
    if constexpr (std::is_floating_point_v<V>) return -std::numeric_limits<V>::infinity();
    else return std::numeric_limits<acc_type>::lowest();
  }
  static constexpr acc_type from_row(V value) { return value; }
  static constexpr acc_type combine(acc_type a, acc_type b) { return detail::ordered_less(a, b) ? b : a; }
};

template <class Kind, class V>
concept has_aggregate_policy = requires { typename aggregate_policy<Kind, V>::acc_type; };

}  // namespace gpuagg
