#pragma once
// Per-query options of the hash aggregation operator.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "error.hpp"
#include "launch_config.hpp"
#include "types.hpp"

namespace gpuagg {

class context;

namespace detail {

/// Integer types a key domain's bounds may come in: any that a key type's values fit, so that
/// `{-5, 100}` (ints) serves int64_t keys as well as int32_t ones.
template <class T>
concept domain_integer = std::integral<T> && !std::same_as<std::remove_cv_t<T>, bool> && sizeof(T) <= 8;

/// One bound of a key domain with the value it was given: its bits sign-extended to 64, which
/// truncate to the table's key word of every key type that holds the value, and its sign.
struct domain_bound {
  std::uint64_t bits = 0;
  bool negative = false;

  constexpr domain_bound() = default;
  template <domain_integer T>
  constexpr explicit domain_bound(T value)
      : bits(std::is_signed_v<T> ? static_cast<std::uint64_t>(static_cast<std::int64_t>(value))
                                 : static_cast<std::uint64_t>(value)),
        negative(value < 0) {}

  constexpr bool operator<(const domain_bound& other) const noexcept {
    return negative != other.negative ? negative : bits < other.bits;
  }
  constexpr bool operator==(const domain_bound&) const noexcept = default;

  template <key_type Key>
  constexpr bool fits() const noexcept {
    if (!negative) return bits <= static_cast<std::uint64_t>(std::numeric_limits<Key>::max());
    if constexpr (std::is_signed_v<Key>) {
      return static_cast<std::int64_t>(bits) >= std::numeric_limits<Key>::min();
    } else {
      return false;
    }
  }

  std::string to_string() const {
    return negative ? std::to_string(static_cast<std::int64_t>(bits)) : std::to_string(bits);
  }
};

template <key_type Key>
constexpr std::string_view key_type_name() noexcept {
  if constexpr (std::is_same_v<Key, std::int8_t>) return "int8_t";
  else if constexpr (std::is_same_v<Key, std::uint8_t>) return "uint8_t";
  else if constexpr (std::is_same_v<Key, std::int16_t>) return "int16_t";
  else if constexpr (std::is_same_v<Key, std::uint16_t>) return "uint16_t";
  else if constexpr (std::is_same_v<Key, std::int32_t>) return "int32_t";
  else if constexpr (std::is_same_v<Key, std::uint32_t>) return "uint32_t";
  else if constexpr (std::is_same_v<Key, std::int64_t>) return "int64_t";
  else return "uint64_t";
}

}  // namespace detail

/// The dense key domain [min, max] of the identity ("perfect") scheme, direct_addressing.
/// The bounds may be integers of any type (`opts.domain = {-5, 100}` for int64_t keys): they
/// keep their values, and the query checks at the call that its key type holds both (check()).
struct key_domain {
  std::uint64_t min_bits = 0;  ///< the smallest key, sign-extended to 64 bits (the driver's table takes its low bits)
  std::uint64_t size = 0;      ///< max - min + 1 (0 when that exceeds 2^64 - 1)
  bool valid = false;          ///< min <= max
  /// 0: the domain is the packed words [min, max]. Else a box of packed keys (of_box): the
  /// spans of columns 1.. (detail::box_spans_code), min_bits the word of every column's lowest.
  std::uint32_t box_spans = 0;

  key_domain() = default;
  template <detail::domain_integer Min, detail::domain_integer Max>
  constexpr key_domain(Min min, Max max) : min_(min), max_(max) {
    min_bits = min_.bits;
    valid = !(max_ < min_);
    // max - min + 1 in 64 bits; a negative min and a non-negative max whose bits are no smaller
    // are 2^64 or more apart.
    const std::uint64_t span = max_.bits - min_.bits;
    const bool too_wide = (min_.negative && !max_.negative && max_.bits >= min_.bits) || span == ~std::uint64_t{0};
    size = valid && !too_wide ? span + 1 : 0;
  }

  /// The box of packed keys whose column i lies in [column i of `lowest_word`, that + span i),
  /// `keys` keys in all, `spans` as detail::box_spans_code gives them: a key's bucket is its
  /// columns' offsets in mixed radix (hash.hpp: identity_hash). group_by takes it where the plan
  /// finds the key columns' exact box dense (query_planner::direct_box).
  static key_domain of_box(std::uint64_t lowest_word, std::uint64_t keys, std::uint32_t spans) {
    key_domain box;
    box.min_bits = lowest_word;
    box.size = keys;
    box.valid = keys > 0 && spans != 0;
    box.box_spans = spans;
    return box;
  }

  /// Whether the domain is [min, max] with min <= max and both values of Key.
  template <key_type Key>
  constexpr bool fits() const noexcept {
    return valid && min_.fits<Key>() && max_.fits<Key>();
  }

  /// Throws invalid_argument_error unless fits<Key>(): a domain beyond the key type would wrap
  /// to other keys.
  template <key_type Key>
  void check() const {
    const std::string keys = std::string(detail::key_type_name<Key>()) + " keys";
    if (!valid) {
      // Given bounds that are equal make a valid domain: equal ones here are a default key_domain.
      throw invalid_argument_error("direct_addressing needs options::domain = {min, max} with min <= max" +
                                   (min_ == max_ ? std::string() : ", not " + to_string()) + " (" + keys + ")");
    }
    if (!fits<Key>()) {
      throw invalid_argument_error("options::domain " + to_string() + " does not fit the query's " + keys + ", [" +
                                   std::to_string(std::numeric_limits<Key>::min()) + ", " +
                                   std::to_string(std::numeric_limits<Key>::max()) + "]");
    }
  }

  /// "[min, max]", the values as given; a box's keys.
  std::string to_string() const {
    if (box_spans != 0) return "a box of " + std::to_string(size) + " keys";
    return "[" + min_.to_string() + ", " + max_.to_string() + "]";
  }

 private:
  detail::domain_bound min_;
  detail::domain_bound max_;
};

struct options {
  /// Hint for the number of groups; sizes the table (load factor at most max_load_factor).
  /// Without it, the number is estimated (estimate.hpp: the key sample, sketches of a strided
  /// sample, a sketch of every key). A wrong hint costs time, never correctness: the table grows
  /// when it fills.
  std::optional<std::uint64_t> expected_groups;
  /// Largest fraction of buckets in use before the table grows.
  double max_load_factor = 0.5;
  /// Input block size per column (the widest column). Default (query_planner::block_rows): 16
  /// MiB for host input (section 2.1); for input already on the device, where no transfer needs
  /// overlapping, up to 256 MiB (fewer, larger AGGREGATE launches). The spill area holds
  /// `blocks_in_flight` blocks of rows, so it grows with this size, except where group_by can
  /// run the query again (device input: query_planner::compact_spill).
  std::optional<std::size_t> block_bytes;
  /// Size per column (the widest) of the blocks the tuner measures. Default: 16 MiB (section
  /// 3.1), at most block_bytes. On device input they are slices of the large blocks: the tuner
  /// explores on them, and the rest of the input runs in large blocks.
  std::optional<std::size_t> tuning_block_bytes;
  /// Blocks in flight at once (transfers of the next overlap AGGREGATE of the current).
  std::size_t blocks_in_flight = 2;
  /// Host threads that copy a pageable input block into pinned staging memory (0: up to 16,
  /// one per hardware thread). Input in a gpuagg::pinned_array needs no staging copy.
  unsigned copy_threads = 0;
  /// Strategy for every block; default: the plan's (query_planner::default_params; section 3.7:
  /// WORKGROUPLOCAL when the table fits in local memory, SHARED otherwise, beyond it for skew).
  std::optional<strategy_kind> strategy;
  /// Thread configuration for every block; default: the plan's per-device entry for the
  /// strategy and the table's size (plan_data.hpp), clamped to the kernel's limit.
  std::optional<launch_config> config;
  /// Tune strategy and thread configuration online (Algorithm 1 of the paper from the plan's
  /// start, the tuner's persistent cache included) when neither `strategy` nor `config` is
  /// given, the input has at least `min_blocks_to_tune` tuning blocks, and the plan's per-device
  /// model was not measured for this device and query shape (query_planner::tuning); else the
  /// plan's choice.
  bool autotune = true;
  std::size_t min_blocks_to_tune = 8;
  /// Copies of WORKGROUPLOCAL's local table per work group (a power of two; 0: as many as fit in
  /// a quarter of local memory, at most 32). More copies spread the atomics of a few hot groups.
  std::uint32_t local_table_copies = 0;
  /// Combine each work item's runs of one key in private variables before the table (SHARED,
  /// WORKGROUPLOCAL), after a register for the sample's most frequent key. Default: when the key
  /// sample shows one dominant key.
  std::optional<bool> run_cache;
  /// Keep the groups of the key sample's (at most four) keys per work item in private
  /// variables, written to the table once per work item (SHARED, WORKGROUPLOCAL; without the
  /// run cache and the hot-key table). Default: on a GPU, for WORKGROUPLOCAL where the sample
  /// holds at most four keys and a row's accumulators take 32 bytes or more (TPC-H Q1's shape;
  /// query_planner::private_groups).
  std::optional<bool> private_groups;
  /// Put the sample's most frequent keys in a table in local memory per work group in front of
  /// SHARED's global table (hash schemes; kernels/aggregate.hpp: GPUAGG_HOT_TABLE), so that their updates
  /// become local atomics. Default: when the frequent keys hold at least 1/8 of the sample and
  /// no single key dominates it (that is the run cache's case). The key sample is skipped, and
  /// with it the hot-key table, only when the caller fixes the group count, the strategy, the
  /// configuration and the run cache and sets hot_table to false.
  std::optional<bool> hot_table;
  /// Give WORKGROUPLOCAL a perfect local table: a perfect hash (detail/perfect_hash.hpp) of the
  /// key sample's distinct keys, built on the host, so that a row finds its group's bucket in one
  /// lookup instead of probing; a row whose key the sample missed goes to the global table.
  /// Default: on a GPU, for keys spread wider than a dense range (which collide in a hash table,
  /// where a SIMD group waits for its longest probe sequence) when the sample holds at most
  /// detail::max_sample_keys distinct keys and seldom a key only once (query_planner::perfect_local).
  /// true builds it from any sample that fits local memory (CPUs too); false never.
  std::optional<bool> perfect_local_table;
  /// Give WORKGROUPLOCAL a range local table: direct addressing in local memory over the key
  /// sample's range of key words, for composite keys over each key column's range (a box:
  /// accumulators and a bit per key, no keys), so that a row's key is its bucket and no row
  /// probes; a row whose key lies outside the range goes to the global table, which stays a
  /// hash table. Default: on a GPU, wherever the range fits local memory and the groups planned
  /// fill at least a quarter of it (query_planner::range_local): a dense range of up to a few
  /// thousand keys, about three times the groups a probed table of keys and accumulators at
  /// load 1/2 holds there. true: wherever the range fits (CPUs too); false never. Takes
  /// precedence over perfect_local_table.
  std::optional<bool> range_local_table;
  /// Runs per input block for PARTITION (kernels/partition.hpp): 1 turns it off, a power of two up to
  /// 1024 orders each block's rows into that many runs by the region of the table their home
  /// bucket lies in, so that the rows that update one region arrive together. Default (0): by
  /// the table's bytes (query_planner::partitions).
  std::uint32_t partitions = 0;
  /// Keep a bucket's key and accumulators in one record of the global table (one memory sector
  /// per probe and update instead of two), or in arrays of their own. Default: interleaved for
  /// hash tables of more than 2^23 buckets whose accumulators share one size
  /// (query_planner::interleaved).
  std::optional<bool> interleaved_table;
  /// Address the global table directly over the key column's exact range instead of hashing
  /// (query_planner::direct_domain): on device input of one integer key column whose sample
  /// shows a dense range of shuffled keys and at least query_planner::direct_min_groups groups,
  /// the driver reads the column's smallest and largest key (one pass on the device), and where
  /// the range's table (accumulators and a bit a key) is no larger than the hash table the plan
  /// would make, group_by and group_by_on_device run the query with direct_addressing over that
  /// range: a row then costs one accumulator update, no key compare, no probe. Never where
  /// interleaved_table asks for a hash table's layout. Default: on a GPU. false never; true on
  /// any device (the tests' way on PoCL).
  std::optional<bool> direct_table;
  /// Read host input's blocks where they lie, through buffers over the caller's memory
  /// (CL_MEM_USE_HOST_PTR), instead of copying each block into a device buffer
  /// (query_planner::host_blocks_in_place). Default: on a CPU device, whose memory is the
  /// host's. false copies as a GPU does (the tests' way to run the copies on PoCL).
  std::optional<bool> host_blocks_in_place;
  /// Required by direct_addressing: the key domain, `{min, max}` in integers of any type; the
  /// query's key type must hold both (else invalid_argument_error).
  std::optional<key_domain> domain;
  /// The context (device) to run on; default: gpuagg::default_context().
  context* ctx = nullptr;
};

}  // namespace gpuagg
