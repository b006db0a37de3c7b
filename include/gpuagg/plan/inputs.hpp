#pragma once
// What the plan is given and what it hands on: the query's shape, the input's profile, an
// AGGREGATE program variant, the hot-key table's size, the tuning plan. Plain values.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "../detail/key_fields.hpp"
#include "../estimate.hpp"
#include "../launch_config.hpp"

namespace gpuagg {
/// The query as the plan sees it: sizes from the bound query's types.
struct query_shape {
  std::uint32_t key_bytes = 4;                  ///< the table's key word
  std::uint32_t bucket_bytes = 12;              ///< key + accumulators
  std::uint32_t interleaved_bucket_bytes = 16;  ///< a record of key and accumulators (interleavable)
  bool interleavable = true;                    ///< every accumulator one size
  bool identity_scheme = false;                 ///< direct addressing: no keys, a domain
  std::uint64_t domain_size = 0;                ///< direct addressing's keys
  std::uint32_t widest_column_bytes = 4;        ///< the widest input column's element
  std::uint32_t row_bytes = 8;                  ///< one row of every input column
  std::uint32_t key_row_bytes = 4;              ///< one row of the key columns

  /// The shape of bound query `Bound` (query.hpp) with input columns `widest` bytes wide, rows
  /// of `row` bytes and `key_row` of them the key columns'.
  template <class Bound>
  static query_shape of(std::uint32_t widest, std::uint32_t row, std::uint32_t key_row, std::uint64_t domain_size = 0) {
    return {static_cast<std::uint32_t>(sizeof(typename Bound::key::bits_type)),
            static_cast<std::uint32_t>(Bound::bucket_bytes),
            static_cast<std::uint32_t>(Bound::interleaved_bucket_bytes),
            Bound::interleavable,
            Bound::scheme::is_identity,
            domain_size,
            widest,
            row,
            key_row};
  }
};

/// The input as the plan sees it.
struct input_profile {
  std::uint64_t rows = 0;
  bool on_device = false;
  std::uint64_t expected_groups = 1;  ///< the hint, the domain's size or the estimate
  estimate_source source = estimate_source::none;
  double estimate_error = 0;  ///< the estimate's relative standard error where known (staged_estimate)
  bool sampled = false;               ///< the key sample was taken (skew is known)
  double hottest_key_share = 0;       ///< the sample's most frequent key's share of it
  double runs_share = 0;              ///< the sample's rows whose right neighbour has their key
  double stepped_share = 0;           ///< those whose neighbour's key is one step on (detail::sample_profile)
  /// The sampled keys' range of table words (0: not sampled); of one key column its box's keys,
  /// so that a signed range across zero (-1 and 0..999) spans its keys, not the whole word.
  double key_span = 0;
  /// The sampled keys' box (where sampled): every key column's range, for one key column the
  /// range of table words (detail/key_fields.hpp).
  detail::key_box key_box;
  /// The sample's frequent keys' counts, most frequent first (detail::sample_profile), and the
  /// sample's size: they decide the hot-key table.
  std::vector<std::uint32_t> frequent_counts;
  std::size_t sample_size = 0;
  /// The sample's distinct keys (table words) where it holds at most detail::max_sample_keys
  /// (else empty), and how many of them it saw once: Good-Turing's estimate of the rows whose
  /// keys the sample missed is sample_once / sample_size (the perfect local table).
  std::vector<std::uint64_t> sample_keys;
  std::uint64_t sample_once = 0;
  /// Where the set-up read one work group's rows (query_planner::locality_window): the distinct
  /// keys they held if those stopped growing over the window's second half of grid strides
  /// (detail::bounded_window_keys), else 0; `window_read` whether it was read at all.
  double work_group_keys = 0;
  bool window_read = false;
  /// The query can run again from its input if its spill area overflows (group_by and
  /// group_by_on_device: the driver's caller restarts it); see query_planner::spill_capacity.
  bool restartable = false;
};

/// A key column's exact range (one pass over its keys: driver/key_range.hpp): its smallest key
/// word and the words above it, as unsigned words or, for a signed key type where narrower, as
/// two's complement values (the lowest then a negative key's bits; lowest + extent wraps past
/// the word's top into the positive keys).
struct exact_key_range {
  std::uint64_t lowest = 0;
  std::uint64_t extent = 0;  ///< highest less lowest
  std::uint64_t keys() const noexcept { return extent + 1; }
};

/// The bit whose flip puts a key's words in the key's order (a range's `extent` counts in that
/// order): a signed key's top bit, of a word of `word_bytes` bytes; 0 for an unsigned key.
inline constexpr std::uint64_t key_order_bit(bool is_signed, std::size_t word_bytes) {
  return is_signed ? std::uint64_t{1} << (8 * word_bytes - 1) : 0;
}

/// An AGGREGATE program variant: a strategy, built with or without the run cache, the hot-key
/// table, the cold-row queue and the perfect or range local table (kernels/aggregate.hpp:
/// GPUAGG_RUN_CACHE, GPUAGG_HOT_TABLE; kernels/workgroup_local.hpp: GPUAGG_COLD_QUEUE,
/// GPUAGG_PERFECT_LOCAL, GPUAGG_RANGE_LOCAL). Each has its own work-group limit.
struct kernel_variant {
  strategy_kind strategy = strategy_kind::shared;
  bool run_cache = false;
  bool hot_table = false;
  bool cold_queue = false;
  bool private_groups = false;  ///< four groups per work item in private variables (never with the three above)
  bool perfect_local = false;   ///< WORKGROUPLOCAL's perfect local table (GPUAGG_PERFECT_LOCAL)
  bool range_local = false;     ///< WORKGROUPLOCAL's range local table (GPUAGG_RANGE_LOCAL; never with perfect_local)
  bool serial = false;          ///< one work item per work group: plain local updates (GPUAGG_SERIAL_LOCAL)

  static constexpr std::size_t count = 288;
  constexpr std::size_t index() const noexcept {
    return static_cast<std::size_t>(strategy) * 8 + (run_cache ? 1 : 0) + (hot_table ? 2 : 0) + (cold_queue ? 4 : 0) +
           (private_groups ? 24 : 0) + (perfect_local ? 48 : 0) + (range_local ? 96 : 0) + (serial ? 144 : 0);
  }
};

/// The hot-key table's size (hot_keys): `keys` of the sample's most frequent keys in a table of
/// `capacity` buckets (a power of two, at most half full), holding `share` of the sample.
struct hot_table_plan {
  std::uint32_t capacity = 0;
  std::size_t keys = 0;
  double share = 0;
};

/// WORKGROUPLOCAL's range local table (query_planner::range_local): a keyless local table for
/// the keys of a box (for one key column the table words [box.lowest, box.lowest + buckets)),
/// entry detail::box_entry for each.
struct range_local_plan {
  detail::key_box box;
  /// One per key of the box.
  std::uint64_t buckets() const noexcept { return static_cast<std::uint64_t>(box.keys()); }
  /// The kernel's range_spans: each field's keys in 16 bits, field i's at bit 16 i (one field's
  /// are the capacity, and the word is 0).
  std::uint64_t spans() const noexcept {
    if (box.fields <= 1) return 0;
    std::uint64_t word = 0;
    for (std::uint32_t i = 0; i < box.fields; ++i) word |= (box.extent[i] + 1) << (16 * i);
    return word;
  }
};

/// The rows one work group of a WORKGROUPLOCAL launch takes in its first grid strides: `width`
/// consecutive rows from row 0, then again every `pitch_rows` rows, `strides` times.
struct key_window {
  std::uint64_t pitch_rows = 0;
  std::uint32_t width = 0;
  std::uint32_t strides = 0;
  std::uint64_t keys() const noexcept { return std::uint64_t{width} * strides; }
};

/// Whether and how the tuner refines the plan online.
struct tuning_plan {
  bool enabled = false;
  std::size_t block_rows = 0;    ///< rows of each block the tuner measures
  std::size_t block_budget = 0;  ///< blocks the search may spend before the rest runs its best
  std::vector<execution_params> starts;  ///< the search's initial configurations, plan's first
  bool scan = true;              ///< scan each start's row (off where the start was measured)
};

}  // namespace gpuagg
