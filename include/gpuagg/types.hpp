#pragma once
// Host types that cross into OpenCL C, with their OpenCL names.

#include <concepts>
#include <cstdint>
#include <type_traits>

#include "detail/fixed_string.hpp"

namespace gpuagg {

namespace detail {
template <class T>
struct cl_type_name_of {
  static_assert(sizeof(T) == 0,
                "gpuagg: this type has no OpenCL counterpart; use an 8-, 16-, 32- or 64-bit integer, float or "
                "double");
};
template <> struct cl_type_name_of<std::int8_t> { static constexpr fixed_string name{"char"}; };
template <> struct cl_type_name_of<std::uint8_t> { static constexpr fixed_string name{"uchar"}; };
template <> struct cl_type_name_of<std::int16_t> { static constexpr fixed_string name{"short"}; };
template <> struct cl_type_name_of<std::uint16_t> { static constexpr fixed_string name{"ushort"}; };
template <> struct cl_type_name_of<std::int32_t> { static constexpr fixed_string name{"int"}; };
template <> struct cl_type_name_of<std::uint32_t> { static constexpr fixed_string name{"uint"}; };
template <> struct cl_type_name_of<std::int64_t> { static constexpr fixed_string name{"long"}; };
template <> struct cl_type_name_of<std::uint64_t> { static constexpr fixed_string name{"ulong"}; };
template <> struct cl_type_name_of<float> { static constexpr fixed_string name{"float"}; };
template <> struct cl_type_name_of<double> { static constexpr fixed_string name{"double"}; };
}  // namespace detail

/// 8- and 16-bit integers: columns that cost fewer bytes to move (the paper's compression). In
/// expressions they promote to int as in C; sums still accumulate in 64 bits.
template <class T>
concept narrow_integer = std::same_as<T, std::int8_t> || std::same_as<T, std::uint8_t> ||
                         std::same_as<T, std::int16_t> || std::same_as<T, std::uint16_t>;

/// Column types gpuagg aggregates over.
template <class T>
concept value_type = std::same_as<T, std::int32_t> || std::same_as<T, std::uint32_t> ||
                     std::same_as<T, std::int64_t> || std::same_as<T, std::uint64_t> ||
                     std::same_as<T, float> || std::same_as<T, double> || narrow_integer<T>;

/// Key column types: 8-, 16-, 32- and 64-bit integers, signed and unsigned.
template <class T>
concept key_type = std::same_as<T, std::int32_t> || std::same_as<T, std::uint32_t> ||
                   std::same_as<T, std::int64_t> || std::same_as<T, std::uint64_t> || narrow_integer<T>;

/// The OpenCL C spelling of T ("int", "ulong", ...).
template <value_type T>
inline constexpr auto cl_type_name = detail::cl_type_name_of<T>::name;

}  // namespace gpuagg
