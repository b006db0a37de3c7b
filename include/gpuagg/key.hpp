#pragma once
// Key policies. A key policy says how the table stores a key (`bits_type`, a 32- or 64-bit
// unsigned word), which word marks an empty bucket, and how OpenCL loads the key of a row from
// its input column(s) and writes it back to the result. Every key value is legal: a key whose
// bits equal the empty marker is kept in a reserved bucket past the end of the table.
// A composite key (several columns packed into one word, e.g. TPC-H Q1's flags) is another
// policy with `columns > 1` and the same members.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "detail/fixed_string.hpp"
#include "types.hpp"

namespace gpuagg {

/// One integer key column.
template <key_type T>
struct single_key {
  using value_type = T;
  using bits_type = std::make_unsigned_t<T>;
  static constexpr std::size_t columns = 1;
  static constexpr bits_type empty_bits = static_cast<bits_type>(~bits_type{0});

  static constexpr bits_type to_bits(T key) noexcept { return static_cast<bits_type>(key); }
  static constexpr T from_bits(bits_type bits) noexcept { return static_cast<T>(bits); }

  /// KEY_T (table word), KEY_IN_T (column type), EMPTY_KEY, KEY_PARAMS, KEY_LOAD(row),
  /// KEY_OUT_PARAMS, KEY_STORE(pos, bits), and KEY_COPY_PARAMS / KEY_COPY(to, from), which copy
  /// a row's key column(s) (PARTITION).
  static constexpr auto cl_source = detail::concat(
      detail::fixed_string{"#define KEY_T "}, cl_type_name<bits_type>, detail::fixed_string{"\n#define KEY_IN_T "},
      cl_type_name<T>, detail::fixed_string{"\n#define KEY_IS_64 "},
      detail::to_fixed_string<int(sizeof(bits_type) == 8)>(),
      detail::fixed_string{"\n#define EMPTY_KEY ((KEY_T)"},
      detail::to_hex_fixed_string<std::uint64_t(empty_bits), sizeof(bits_type) * 2>(),
      detail::fixed_string{
          "UL)\n"
          "#define KEY_PARAMS __global const KEY_IN_T* restrict key_in0\n"
          "#define KEY_LOAD(row) ((KEY_T)key_in0[row])\n"
          "#define KEY_OUT_PARAMS , __global KEY_IN_T* restrict key_out0\n"
          "#define KEY_STORE(pos, bits) (key_out0[pos] = (KEY_IN_T)(bits))\n"
          "#define KEY_COPY_PARAMS , __global KEY_IN_T* restrict key_copy0\n"
          "#define KEY_COPY(to, from) (key_copy0[to] = key_in0[from])\n"});
};

template <class K>
concept key_policy = requires {
  typename K::value_type;
  typename K::bits_type;
  { K::empty_bits } -> std::convertible_to<typename K::bits_type>;
  K::cl_source.view();
};

}  // namespace gpuagg
