#pragma once
// Compile-time text: fixed-size strings that concatenate and format numbers in constant
// expressions, so every generated OpenCL program is a constant of its query's type.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gpuagg::detail {

/// A NUL-terminated string of N characters held by value; usable as a template argument.
template <std::size_t N>
struct fixed_string {
  std::array<char, N + 1> chars{};

  constexpr fixed_string() = default;
  constexpr fixed_string(const char (&text)[N + 1]) { std::copy_n(text, N + 1, chars.begin()); }

  static constexpr std::size_t size() noexcept { return N; }
  constexpr const char* c_str() const noexcept { return chars.data(); }
  constexpr std::string_view view() const noexcept { return {chars.data(), N}; }
  constexpr operator std::string_view() const noexcept { return view(); }

  template <std::size_t M>
  constexpr fixed_string<N + M> operator+(const fixed_string<M>& other) const {
    fixed_string<N + M> joined;
    std::copy_n(chars.begin(), N, joined.chars.begin());
    std::copy_n(other.chars.begin(), M + 1, joined.chars.begin() + N);
    return joined;
  }
  template <std::size_t M>
  constexpr auto operator+(const char (&text)[M]) const {
    return *this + fixed_string<M - 1>(text);
  }
  template <std::size_t M>
  friend constexpr auto operator+(const char (&text)[M], const fixed_string& self) {
    return fixed_string<M - 1>(text) + self;
  }
  friend constexpr bool operator==(const fixed_string&, const fixed_string&) = default;
};

template <std::size_t M>
fixed_string(const char (&)[M]) -> fixed_string<M - 1>;

/// Concatenates any number of fixed strings in one pass (a chain of `+` would copy the text
/// once per part and exhaust the compiler's constant-evaluation budget on large programs).
template <std::size_t... N>
constexpr auto concat(const fixed_string<N>&... parts) {
  fixed_string<(N + ... + 0)> joined;
  std::size_t at = 0;
  ((std::copy_n(parts.chars.begin(), N, joined.chars.begin() + at), at += N), ...);
  joined.chars[at] = '\0';
  return joined;
}

constexpr std::size_t decimal_digits(std::uint64_t value) {
  std::size_t digits = 1;
  while (value >= 10) {
    value /= 10;
    ++digits;
  }
  return digits;
}

/// Decimal text of a compile-time integer, e.g. to_fixed_string<42>() == "42".
template <auto Value>
constexpr auto to_fixed_string() {
  using value_type = decltype(Value);
  constexpr bool negative = Value < value_type{0};
  constexpr std::uint64_t magnitude =
      negative ? std::uint64_t(0) - static_cast<std::uint64_t>(Value) : static_cast<std::uint64_t>(Value);
  constexpr std::size_t length = decimal_digits(magnitude) + (negative ? 1 : 0);
  fixed_string<length> text;
  std::uint64_t rest = magnitude;
  for (std::size_t i = length; i-- > (negative ? 1u : 0u);) {
    text.chars[i] = static_cast<char>('0' + rest % 10);
    rest /= 10;
  }
  if (negative) text.chars[0] = '-';
  return text;
}

/// The same text with a-z in upper case.
template <std::size_t N>
constexpr fixed_string<N> to_upper(const fixed_string<N>& text) {
  fixed_string<N> upper = text;
  for (auto& c : upper.chars) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return upper;
}

/// Hexadecimal text "0x..." of a compile-time unsigned integer with a fixed digit count.
template <std::uint64_t Value, std::size_t Digits>
constexpr auto to_hex_fixed_string() {
  fixed_string<Digits + 2> text;
  text.chars[0] = '0';
  text.chars[1] = 'x';
  std::uint64_t rest = Value;
  for (std::size_t i = Digits + 2; i-- > 2;) {
    const auto digit = static_cast<unsigned>(rest % 16);
    text.chars[i] = static_cast<char>(digit < 10 ? '0' + digit : 'a' + digit - 10);
    rest /= 16;
  }
  return text;
}

}  // namespace gpuagg::detail
