#pragma once
// The columns of a table word (key.hpp: a packed key's columns, each in bits of its own; one
// column's key is one field, the whole word), and a box of keys: a range of values in every
// field. A key sample's box (driver/key_sample.hpp) tells dense composite keys, whose packed
// words spread over 2^32 or more, from keys that are spread: identifiers, flags and dates packed
// into one word cover a few thousand combinations. The range local table
// (kernels/workgroup_local.hpp: GPUAGG_RANGE_LOCAL) gives each key of the box an entry of its own
// (query_planner::range_local), and the group estimate takes the box for a dense range
// (estimate.hpp: dense_range_groups). Pure host code.

#include <array>
#include <cstdint>

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
  explicit constexpr key_box_builder(const key_layout& layout) noexcept : layout_(layout) {}
  constexpr void add(std::uint64_t word) noexcept {
    for (std::uint32_t i = 0; i < layout_.count; ++i) {
      const std::uint64_t value = layout_.fields[i].of(word);
      const std::uint64_t flipped = value ^ top(i);  // the order of the field's signed values
      if (!seen_ || value < low_[i]) low_[i] = value;
      if (!seen_ || value > high_[i]) high_[i] = value;
      if (!seen_ || flipped < signed_low_[i]) signed_low_[i] = flipped;
      if (!seen_ || flipped > signed_high_[i]) signed_high_[i] = flipped;
    }
    seen_ = true;
  }
  constexpr key_box box() const noexcept {
    key_box box;
    if (!seen_) return box;
    box.fields = layout_.count;
    for (std::uint32_t i = 0; i < layout_.count; ++i) {
      const bool as_signed = signed_high_[i] - signed_low_[i] < high_[i] - low_[i];
      const std::uint64_t low = as_signed ? signed_low_[i] ^ top(i) : low_[i];
      box.lowest |= low << layout_.fields[i].shift;
      box.extent[i] = as_signed ? signed_high_[i] - signed_low_[i] : high_[i] - low_[i];
    }
    return box;
  }

 private:
  constexpr std::uint64_t top(std::uint32_t i) const noexcept {
    const unsigned bits = layout_.fields[i].bits;
    return std::uint64_t{1} << ((bits >= 64 ? 64 : bits) - 1);
  }
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

}  // namespace gpuagg::detail
