#pragma once
// Key policies. A key policy says how the table stores a key (`bits_type`, a 32- or 64-bit
// unsigned word), which word marks an empty bucket, and how OpenCL loads the key of a row from
// its input column(s) and writes it back to the result. Every key value is legal: a key whose
// bits equal the empty marker is kept in a reserved bucket past the end of the table.
//
//   single_key<T>         one integer column (8 to 64 bits; narrower ones widened to 32 bits)
//   packed_key<T...>      2 to 4 integer columns whose bits together fit 64, packed into one
//                         word, the first column in the high bits: every strategy and scheme
//                         work on it as on one key
//   tuple_key<T...>       2 to 4 integer columns wider than 64 bits together: no table word
//                         holds them, so a device dictionary (wide_keys.hpp) hashes and
//                         compares the whole tuple and gives each distinct one a dense id,
//                         which the table then aggregates as its key

#include <array>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>

#include "detail/fixed_string.hpp"
#include "detail/key_fields.hpp"
#include "types.hpp"

namespace gpuagg {

namespace detail {
/// The table word of an integer of T's width: at least 32 bits (OpenCL's smallest atomics).
template <class T>
using key_word_t = std::conditional_t<(sizeof(T) < 4), std::uint32_t, std::make_unsigned_t<T>>;

/// A key policy's name for key columns T...: `prefix` then the columns' OpenCL types, e.g.
/// "packed(uchar,short)".
template <std::size_t N, class... T>
constexpr auto columns_name(const fixed_string<N>& prefix, std::type_identity<std::tuple<T...>>) {
  constexpr std::size_t columns = sizeof...(T);
  constexpr auto part = []<std::size_t J>(std::integral_constant<std::size_t, J>) {
    using column = std::tuple_element_t<J, std::tuple<T...>>;
    if constexpr (J + 1 < columns) {
      return concat(cl_type_name<column>, fixed_string{","});
    } else {
      return concat(cl_type_name<column>, fixed_string{")"});
    }
  };
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return concat(prefix, part(std::integral_constant<std::size_t, I>{})...);
  }(std::make_index_sequence<columns>{});
}
}  // namespace detail

/// One integer key column.
template <key_type T>
struct single_key {
  using value_type = T;
  using bits_type = detail::key_word_t<T>;
  /// The type a direct_addressing domain's bounds must fit (options::domain).
  using domain_type = T;
  static constexpr std::size_t columns = 1;
  static constexpr std::array<std::size_t, 1> column_bytes{sizeof(T)};
  static constexpr bits_type empty_bits = static_cast<bits_type>(~bits_type{0});
  static constexpr auto name = cl_type_name<T>;
  /// One field, the whole word (the kernels' KEY_FIELDS defaults to 1).
  static constexpr detail::key_layout layout{};

  /// The key's word: its own bits, narrower signed keys sign-extended (so a domain [min, max]
  /// stays contiguous in the word).
  static constexpr bits_type to_bits(T key) noexcept { return static_cast<bits_type>(key); }
  static constexpr T from_bits(bits_type bits) noexcept { return static_cast<T>(bits); }
  /// The word of row `row` of the key column on the host.
  static bits_type load_bits(const void* const* host_columns, std::uint64_t row) noexcept {
    return to_bits(static_cast<const T*>(host_columns[0])[row]);
  }

  /// KEY_T (table word), KEY_IN_T (column type), EMPTY_KEY, KEY_PARAMS, KEY_LOAD(row),
  /// KEY_OUT_PARAMS, KEY_STORE(pos, bits), and KEY_COPY_PARAMS / KEY_COPY(to, from), which copy
  /// a row's key column(s) (PARTITION).
  static constexpr auto cl_source = [] {
    using detail::fixed_string;
    // A narrower signed key's word holds its sign-extended value: back through int, where the
    // conversion to the column's type is exact.
    constexpr auto store = [] {
      if constexpr (sizeof(T) < 4 && std::is_signed_v<T>) {
        return fixed_string{"#define KEY_STORE(pos, bits) (key_out0[pos] = (KEY_IN_T)as_int(bits))\n"};
      } else {
        return fixed_string{"#define KEY_STORE(pos, bits) (key_out0[pos] = (KEY_IN_T)(bits))\n"};
      }
    }();
    return detail::concat(
        fixed_string{"#define KEY_T "}, cl_type_name<bits_type>, fixed_string{"\n#define KEY_IN_T "}, cl_type_name<T>,
        fixed_string{"\n#define KEY_IS_64 "}, detail::to_fixed_string<int(sizeof(bits_type) == 8)>(),
        fixed_string{"\n#define EMPTY_KEY ((KEY_T)"},
        detail::to_hex_fixed_string<std::uint64_t(empty_bits), sizeof(bits_type) * 2>(),
        fixed_string{"UL)\n"
                     "#define KEY_PARAMS __global const KEY_IN_T* restrict key_in0\n"
                     "#define KEY_LOAD(row) ((KEY_T)key_in0[row])\n"
                     "#define KEY_OUT_PARAMS , __global KEY_IN_T* restrict key_out0\n"},
        store,
        fixed_string{"#define KEY_COPY_PARAMS , __global KEY_IN_T* restrict key_copy0\n"
                     "#define KEY_COPY(to, from) (key_copy0[to] = key_in0[from])\n"});
  }();
};

/// Several integer key columns packed into one word, the first column in the high bits, each
/// column's bits as they are (a signed column's two's complement, not sign-extended), so two
/// keys are equal exactly when every column is. For direct_addressing the domain is one of
/// packed words (packed_key::domain gives it from per-column bounds).
template <key_type... T>
struct packed_key {
  static_assert(sizeof...(T) >= 2 && sizeof...(T) <= 4, "gpuagg: keys(...) takes 2 to 4 key columns");
  static constexpr std::size_t total_bits = (std::size_t{0} + ... + (sizeof(T) * 8));
  static_assert(total_bits <= 64,
                "gpuagg: packed_key takes key columns whose bits fit 64 together; wider ones go through the key "
                "dictionary (wide_keys.hpp), which group_by and group_by_on_device run");
  using value_type = std::tuple<T...>;
  using bits_type = std::conditional_t<(total_bits <= 32), std::uint32_t, std::uint64_t>;
  using domain_type = bits_type;
  static constexpr std::size_t columns = sizeof...(T);
  static constexpr std::array<std::size_t, columns> column_bytes{sizeof(T)...};
  static constexpr bits_type empty_bits = static_cast<bits_type>(~bits_type{0});

  /// Column i's shift in the word: the widths of the columns after it.
  static constexpr std::array<unsigned, columns> shifts = [] {
    std::array<unsigned, columns> s{};
    unsigned at = 0;
    for (std::size_t i = columns; i-- > 0;) {
      s[i] = at;
      at += static_cast<unsigned>(column_bytes[i] * 8);
    }
    return s;
  }();

  /// Each column a field of the word (KEY_FIELDS, KEY_FIELD_SHIFTS and KEY_FIELD_BITS in OpenCL).
  static constexpr detail::key_layout layout = [] {
    detail::key_layout l;
    l.count = static_cast<std::uint32_t>(columns);
    for (std::size_t i = 0; i < columns; ++i) l.fields[i] = {shifts[i], static_cast<unsigned>(column_bytes[i] * 8)};
    return l;
  }();

  static constexpr bits_type to_bits(const value_type& key) noexcept {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return static_cast<bits_type>(
          (bits_type{0} | ... |
           (static_cast<bits_type>(static_cast<std::make_unsigned_t<std::tuple_element_t<I, value_type>>>(
                std::get<I>(key)))
            << shifts[I])));
    }(std::make_index_sequence<columns>{});
  }
  static constexpr value_type from_bits(bits_type bits) noexcept {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return value_type{static_cast<std::tuple_element_t<I, value_type>>(
          static_cast<std::make_unsigned_t<std::tuple_element_t<I, value_type>>>(bits >> shifts[I]))...};
    }(std::make_index_sequence<columns>{});
  }
  static bits_type load_bits(const void* const* host_columns, std::uint64_t row) noexcept {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return to_bits(value_type{static_cast<const std::tuple_element_t<I, value_type>*>(host_columns[I])[row]...});
    }(std::make_index_sequence<columns>{});
  }

  /// The direct_addressing domain of packed words whose columns lie in [min_i, max_i]: from the
  /// word of every column's minimum to the word of every column's maximum.
  static constexpr std::pair<bits_type, bits_type> domain(const value_type& min, const value_type& max) noexcept {
    return {to_bits(min), to_bits(max)};
  }

  static constexpr auto name = detail::columns_name(detail::fixed_string{"packed("}, std::type_identity<value_type>{});

  static constexpr auto cl_source = [] {
    using detail::fixed_string;
    using detail::to_fixed_string;
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      constexpr auto unsigned_name = []<std::size_t J>(std::integral_constant<std::size_t, J>) {
        return cl_type_name<std::make_unsigned_t<std::tuple_element_t<J, value_type>>>;
      };
      // KEY_PARAMS after the first column's.
      constexpr auto param = []<std::size_t J>(std::integral_constant<std::size_t, J>) {
        if constexpr (J == 0) {
          return fixed_string{""};
        } else {
          return concat(fixed_string{", __global const "}, cl_type_name<std::tuple_element_t<J, value_type>>,
                        fixed_string{"* restrict key_in"}, to_fixed_string<J>());
        }
      };
      // Column J back from the word: its bits, then (signed columns) reinterpreted as_T.
      constexpr auto store = []<std::size_t J>(std::integral_constant<std::size_t, J>) {
        using column = std::tuple_element_t<J, value_type>;
        constexpr auto bits = concat(fixed_string{"(("}, cl_type_name<std::make_unsigned_t<column>>,
                                     fixed_string{")((bits) >> "}, to_fixed_string<shifts[J]>(), fixed_string{"))"});
        if constexpr (std::is_signed_v<column>) {
          return concat(fixed_string{" key_out"}, to_fixed_string<J>(), fixed_string{"[pos] = as_"},
                        cl_type_name<column>, fixed_string{"("}, bits, fixed_string{");"});
        } else {
          return concat(fixed_string{" key_out"}, to_fixed_string<J>(), fixed_string{"[pos] = "}, bits,
                        fixed_string{";"});
        }
      };
      return concat(
          fixed_string{"#define KEY_T "}, cl_type_name<bits_type>, fixed_string{"\n#define KEY_IS_64 "},
          to_fixed_string<int(sizeof(bits_type) == 8)>(), fixed_string{"\n#define EMPTY_KEY ((KEY_T)"},
          detail::to_hex_fixed_string<std::uint64_t(empty_bits), sizeof(bits_type) * 2>(),
          fixed_string{"UL)\n#define KEY_PARAMS __global const "}, cl_type_name<std::tuple_element_t<0, value_type>>,
          fixed_string{"* restrict key_in0"}, param(std::integral_constant<std::size_t, I>{})...,
          fixed_string{"\n#define KEY_LOAD(row) (0"},
          concat(fixed_string{" | ((KEY_T)("}, unsigned_name(std::integral_constant<std::size_t, I>{}),
                 fixed_string{")key_in"}, to_fixed_string<I>(), fixed_string{"[row] << "}, to_fixed_string<shifts[I]>(),
                 fixed_string{")"})...,
          fixed_string{")\n#define KEY_OUT_PARAMS"},
          concat(fixed_string{" , __global "}, cl_type_name<T>, fixed_string{"* restrict key_out"},
                 to_fixed_string<I>())...,
          fixed_string{"\n#define KEY_STORE(pos, bits) {"}, store(std::integral_constant<std::size_t, I>{})...,
          fixed_string{" }\n#define KEY_COPY_PARAMS"},
          concat(fixed_string{" , __global "}, cl_type_name<T>, fixed_string{"* restrict key_copy"},
                 to_fixed_string<I>())...,
          fixed_string{"\n#define KEY_COPY(to, from)"},
          concat(fixed_string{" key_copy"}, to_fixed_string<I>(), fixed_string{"[to] = key_in"}, to_fixed_string<I>(),
                 fixed_string{"[from];"})...,
          fixed_string{"\n#define KEY_FIELDS "}, to_fixed_string<columns>(), fixed_string{"\n#define KEY_FIELD_SHIFTS {"},
          concat(to_fixed_string<shifts[I]>(), fixed_string{"u,"})...,
          fixed_string{"}\n#define KEY_FIELD_BITS {"},
          concat(to_fixed_string<column_bytes[I] * 8>(), fixed_string{"u,"})...,
          fixed_string{"}\n"});
    }(std::index_sequence_for<T...>{});
  }();
};

/// Several integer key columns whose bits together exceed 64 (keys(a, b, ...) of wide
/// columns). The OpenCL text defines the dictionary's view of a key (kernels/dictionary.hpp):
///   TUPLE_KEY_PARAMS         the columns and their element offsets
///   TUPLE_STORE_PARAMS       the dictionary's key store, one column per key column
///   TUPLE_OUT_PARAMS         output key columns
///   TUPLE_LOAD_ROW(row)      declares k0..kN-1, the key of input row `row`
///   TUPLE_LOAD_STORED(id)    declares k0..kN-1, the key stored at `id`
///   TUPLE_HASH_INTO(h)       declares h, a 64-bit hash of k0..kN-1
///   TUPLE_STORE(id)          writes k0..kN-1 to the store at `id`
///   TUPLE_EQUALS_STORED(id)  whether the store's key at `id` equals k0..kN-1
///   TUPLE_WRITE_OUT(pos)     writes k0..kN-1 to the output columns at `pos`
template <key_type... T>
struct tuple_key {
  static_assert(sizeof...(T) >= 2 && sizeof...(T) <= 4, "gpuagg: keys(...) takes 2 to 4 key columns");
  using value_type = std::tuple<T...>;
  static constexpr std::size_t columns = sizeof...(T);
  static constexpr std::array<std::size_t, columns> column_bytes{sizeof(T)...};
  /// Bytes of one key, all its columns.
  static constexpr std::size_t key_bytes = (std::size_t{0} + ... + sizeof(T));

  static constexpr auto name = detail::columns_name(detail::fixed_string{"tuple("}, std::type_identity<value_type>{});

  static constexpr auto cl_source = [] {
    using detail::fixed_string;
    using detail::to_fixed_string;
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      constexpr auto type = []<std::size_t J>(std::integral_constant<std::size_t, J>) {
        return cl_type_name<std::tuple_element_t<J, value_type>>;
      };
      constexpr auto utype = []<std::size_t J>(std::integral_constant<std::size_t, J>) {
        return cl_type_name<std::make_unsigned_t<std::tuple_element_t<J, value_type>>>;
      };
      constexpr auto comma = []<std::size_t J>(std::integral_constant<std::size_t, J>) {
        if constexpr (J == 0) {
          return fixed_string{" "};
        } else {
          return fixed_string{", "};
        }
      };
      constexpr auto conj = []<std::size_t J>(std::integral_constant<std::size_t, J>) {
        if constexpr (J == 0) {
          return fixed_string{" "};
        } else {
          return fixed_string{" && "};
        }
      };
      using std::integral_constant;
      return concat(
          fixed_string{"#define TUPLE_KEY_PARAMS"},
          concat(comma(integral_constant<std::size_t, I>{}), fixed_string{"__global const "},
                 type(integral_constant<std::size_t, I>{}), fixed_string{"* restrict key_in"}, to_fixed_string<I>(),
                 fixed_string{", const ulong key_offset"}, to_fixed_string<I>())...,
          fixed_string{"\n#define TUPLE_STORE_PARAMS"},
          concat(fixed_string{", __global "}, type(integral_constant<std::size_t, I>{}),
                 fixed_string{"* store"}, to_fixed_string<I>())...,
          fixed_string{"\n#define TUPLE_OUT_PARAMS"},
          concat(fixed_string{", __global "}, type(integral_constant<std::size_t, I>{}),
                 fixed_string{"* restrict key_out"}, to_fixed_string<I>())...,
          fixed_string{"\n#define TUPLE_LOAD_ROW(row)"},
          concat(fixed_string{" const "}, type(integral_constant<std::size_t, I>{}), fixed_string{" k"},
                 to_fixed_string<I>(), fixed_string{" = key_in"}, to_fixed_string<I>(), fixed_string{"[key_offset"},
                 to_fixed_string<I>(), fixed_string{" + (row)];"})...,
          fixed_string{"\n#define TUPLE_LOAD_STORED(id)"},
          concat(fixed_string{" const "}, type(integral_constant<std::size_t, I>{}), fixed_string{" k"},
                 to_fixed_string<I>(), fixed_string{" = store"}, to_fixed_string<I>(), fixed_string{"[id];"})...,
          fixed_string{"\n#define TUPLE_HASH_INTO(h) ulong h = 0ul;"},
          concat(fixed_string{" h = gpuagg_tuple_mix(h, (ulong)("}, utype(integral_constant<std::size_t, I>{}),
                 fixed_string{")k"}, to_fixed_string<I>(), fixed_string{");"})...,
          fixed_string{" h = gpuagg_tuple_finish(h);\n#define TUPLE_STORE(id)"},
          concat(fixed_string{" store"}, to_fixed_string<I>(), fixed_string{"[id] = k"}, to_fixed_string<I>(),
                 fixed_string{";"})...,
          fixed_string{"\n#define TUPLE_EQUALS_STORED(id) ("},
          concat(conj(integral_constant<std::size_t, I>{}), fixed_string{"store"}, to_fixed_string<I>(),
                 fixed_string{"[id] == k"}, to_fixed_string<I>())...,
          fixed_string{")\n#define TUPLE_WRITE_OUT(pos)"},
          concat(fixed_string{" key_out"}, to_fixed_string<I>(), fixed_string{"[pos] = k"}, to_fixed_string<I>(),
                 fixed_string{";"})...,
          fixed_string{"\n"});
    }(std::make_index_sequence<columns>{});
  }();
};

template <class K>
concept key_policy = requires {
  typename K::value_type;
  typename K::bits_type;
  { K::empty_bits } -> std::convertible_to<typename K::bits_type>;
  { K::columns } -> std::convertible_to<std::size_t>;
  K::cl_source.view();
  K::name.view();
};

}  // namespace gpuagg
