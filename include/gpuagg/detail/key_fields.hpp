#pragma once
// The columns of a table word (key.hpp: a packed key's columns, each in bits of its own; one
// column's key is one field, the whole word), and a box of keys: a range of values in every
// field. A key sample's box (driver/key_sample.hpp) tells dense composite keys, whose packed
// words spread over 2^32 or more, from keys that are spread: identifiers, flags and dates packed
// into one word cover a few thousand combinations. The range local table
// (kernels/workgroup_local.hpp: GPUAGG_RANGE_LOCAL) gives each key of the box an entry of its own
// (query_planner::range_local), and the group estimate takes the box for a dense range
// (estimate.hpp: dense_range_groups). Pure host code.

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

namespace gpuagg::detail {

/// One field of a table word: `bits` bits from bit `shift`.
struct key_field {
  unsigned shift = 0;
  unsigned bits = 64;
  constexpr std::uint64_t mask() const noexcept { return bits >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1; }
  constexpr std::uint64_t of(std::uint64_t word) const noexcept { return (word >> shift) & mask(); }
};

inline constexpr std::size_t max_key_fields = 4;

/// The fields of a table word, the first in the highest bits.
struct key_layout {
  std::array<key_field, max_key_fields> fields{};
  std::uint32_t count = 1;  ///< one field: the whole word
};

/// The keys whose field i lies in [field i of `lowest`, that + extent[i]] for every field
/// (fields 0: no box).
struct key_box {
  std::uint64_t lowest = 0;  ///< every field's smallest value, in its bits
  std::array<std::uint64_t, max_key_fields> extent{};  ///< each field's highest less its lowest
  std::uint32_t fields = 0;
  /// How many keys the box holds (a double: a box may hold 2^64 keys and more).
  constexpr double keys() const noexcept {
    if (fields == 0) return 0;
    double keys = 1;
    for (std::uint32_t i = 0; i < fields; ++i) keys *= double(extent[i]) + 1;
    return keys;
  }
};

/// The box of the keys fed to it: every field's smallest and largest value, as unsigned bits or,
/// where that range is narrower, as two's complement (a signed column's -1 and 0..999 wrap in
/// its bits: a range from -1 that box_entry's offsets, modulo the field, take as it is).
class key_box_builder {
 public:
  explicit constexpr key_box_builder(const key_layout& layout) noexcept : layout_(layout) {
    low_.fill(~std::uint64_t{0});
    signed_low_.fill(~std::uint64_t{0});
  }
  // Extremes that start past every value: no branch a word (a sample's box is found before its
  // profile, on every query's path).
  constexpr void add(std::uint64_t word) noexcept {
    for (std::uint32_t i = 0; i < fields(layout_); ++i) {
      const std::uint64_t value = layout_.fields[i].of(word);
      const std::uint64_t flipped = value ^ top(i);  // the order of the field's signed values
      low_[i] = std::min(low_[i], value);
      high_[i] = std::max(high_[i], value);
      signed_low_[i] = std::min(signed_low_[i], flipped);
      signed_high_[i] = std::max(signed_high_[i], flipped);
    }
    seen_ = true;
  }
  constexpr key_box box() const noexcept {
    if (!seen_) return {};
    return box_of_extremes(layout_, low_, high_, signed_low_, signed_high_);
  }

  /// The box of every field's extremes: as unsigned values (`low`, `high`) and with the field's
  /// top bit flipped (`signed_low`, `signed_high`, the order of its signed values); each field
  /// takes the narrower of the two ranges. The device's pass (kernels/key_range.hpp) finds the
  /// same four words a field.
  static constexpr key_box box_of_extremes(const key_layout& layout, const std::array<std::uint64_t, max_key_fields>& low,
                                           const std::array<std::uint64_t, max_key_fields>& high,
                                           const std::array<std::uint64_t, max_key_fields>& signed_low,
                                           const std::array<std::uint64_t, max_key_fields>& signed_high) noexcept {
    key_box box;
    box.fields = fields(layout);
    for (std::uint32_t i = 0; i < box.fields; ++i) {
      const bool as_signed = signed_high[i] - signed_low[i] < high[i] - low[i];
      const std::uint64_t lowest = as_signed ? signed_low[i] ^ top_bit(layout.fields[i]) : low[i];
      box.lowest |= lowest << layout.fields[i].shift;
      box.extent[i] = as_signed ? signed_high[i] - signed_low[i] : high[i] - low[i];
    }
    return box;
  }

 private:
  // A layout's fields, never past the array (a compiler that cannot see the bound warns of it).
  static constexpr std::uint32_t fields(const key_layout& layout) noexcept {
    return layout.count < max_key_fields ? layout.count : static_cast<std::uint32_t>(max_key_fields);
  }
  static constexpr std::uint64_t top_bit(const key_field& field) noexcept {
    return std::uint64_t{1} << ((field.bits >= 64 ? 64 : field.bits) - 1);
  }
  constexpr std::uint64_t top(std::uint32_t i) const noexcept { return top_bit(layout_.fields[i]); }
  key_layout layout_;
  std::array<std::uint64_t, max_key_fields> low_{};
  std::array<std::uint64_t, max_key_fields> high_{};
  std::array<std::uint64_t, max_key_fields> signed_low_{};
  std::array<std::uint64_t, max_key_fields> signed_high_{};
  bool seen_ = false;
};

/// The entry of `word` in the box's entries, fields in mixed radix (the last field's the lowest
/// digit), or none (~0) when a field lies outside the box. The kernel's gpuagg_range_bucket.
constexpr std::uint64_t box_entry(const key_layout& layout, const key_box& box, std::uint64_t word) noexcept {
  std::uint64_t entry = 0;
  for (std::uint32_t i = 0; i < layout.count; ++i) {
    const key_field& f = layout.fields[i];
    const std::uint64_t offset = (f.of(word) - f.of(box.lowest)) & f.mask();
    if (offset > box.extent[i]) return ~std::uint64_t{0};
    entry = entry * (box.extent[i] + 1) + offset;
  }
  return entry;
}

/// The word of the box's entry `entry` (box_entry's inverse).
constexpr std::uint64_t box_word(const key_layout& layout, const key_box& box, std::uint64_t entry) noexcept {
  std::uint64_t word = 0;
  for (std::uint32_t i = layout.count; i-- > 0;) {
    const key_field& f = layout.fields[i];
    const std::uint64_t span = box.extent[i] + 1;
    const std::uint64_t offset = span == 0 ? entry : entry % span;  // span 0: the field's 2^64 values
    entry = span == 0 ? 0 : entry / span;
    word |= ((f.of(box.lowest) + offset) & f.mask()) << f.shift;
  }
  return word;
}

/// Direct addressing over a box of packed keys (query_planner::direct_box): the global table's
/// `bits` word, which the identity scheme reads as the spans (extent + 1) of fields 1 to
/// count - 1 in equal parts of 32 bits (32, 16 or 10 bits: two, three or four fields); field 0's
/// span follows from the table's capacity. None where the box has one field or a span does not
/// fit its part. Never 0, which names a range of words (the kernels' gpuagg_home, hash.hpp).
constexpr std::optional<std::uint32_t> box_spans_code(const key_box& box) noexcept {
  if (box.fields < 2 || box.fields > max_key_fields) return std::nullopt;
  const unsigned part = 32 / (box.fields - 1);
  std::uint64_t code = 0;
  for (std::uint32_t i = 1; i < box.fields; ++i) {
    const std::uint64_t span = box.extent[i] + 1;
    if (span == 0 || span >= (std::uint64_t{1} << part)) return std::nullopt;
    code |= span << (part * (i - 1));
  }
  return static_cast<std::uint32_t>(code);
}

/// The span of field i (1 to fields - 1) in a box_spans_code word.
constexpr std::uint64_t box_code_span(std::uint32_t code, std::uint32_t fields, std::uint32_t i) noexcept {
  const unsigned part = 32 / (fields - 1);
  return (std::uint64_t{code} >> (part * (i - 1))) & ((std::uint64_t{1} << part) - 1);
}

}  // namespace gpuagg::detail
