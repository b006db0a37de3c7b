#pragma once
// The key sample's profile, on the host: the sample's key frequencies (the group estimate's
// first stage, estimate.hpp), its most frequent keys (the skew the default strategy, the run
// cache and the hot-key table follow), its runs of equal keys (the configurations for sorted
// input) and its keys' range (those for scattered keys). The driver takes the sample
// (driver/group_estimate.hpp); this is pure host code.

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "../detail/key_fields.hpp"
#include "../estimate.hpp"

namespace gpuagg::detail {

/// What a sample of keys says: its frequencies (distinct keys, keys seen once and twice: stage 1
/// of the group estimate, estimate.hpp), the share of the sample its most frequent key holds, and
/// that key. One frequency count serves all.
struct sample_profile {
  std::size_t sample_size = 0;
  std::uint64_t distinct = 0;
  std::uint64_t once = 0;   ///< keys seen once
  std::uint64_t twice = 0;  ///< keys seen twice
  double hottest_key_share = 0;
  std::uint64_t hottest_key = 0;  ///< the key's bits
  /// The share of sampled rows (frequent keys aside) whose right neighbour has the same key:
  /// near 1 for sorted or clustered input, about 1/groups for shuffled input.
  double runs_share = 0;
  /// The share of sampled rows whose right neighbour's key is theirs plus one step, the first
  /// nonzero difference of a row and its neighbour (as unsigned words): near 1 where keys follow
  /// the rows' positions (row % G, ids written in order or round-robin), about 1/groups for
  /// shuffled keys. Such keys may hand a work group few keys (query_planner::locality_window).
  double stepped_share = 0;
  /// Where the sampled rows' right neighbours were read (each row's), those that hold another
  /// key (frequent keys too): the input has about rows x differ / sample_size runs.
  std::uint64_t neighbour_differ = 0;
  /// Whether the sampled rows and their right neighbours, in row order, never decrease or never
  /// increase (as unsigned words; false where no neighbour was read): sorted input, whose runs
  /// are its groups (estimate.hpp: sorted_input_groups).
  bool ordered = false;
  /// The sample's smallest and largest key bits (as unsigned words): their range tells a dense
  /// range of keys from keys spread wider (query_planner::scattered_keys).
  std::uint64_t lowest = 0;
  std::uint64_t highest = 0;
  /// The box of the sampled keys (detail/key_fields.hpp): each key column's range (for one key
  /// column, of words), as unsigned or as signed values, whichever is narrower. A dense box of
  /// composite keys, or a signed range across zero, is a dense range of keys to the group
  /// estimate (dense_range_groups), to the range local table and (one key column) to hashing.
  key_box box;
  /// The frequent keys (bits), most frequent first, and their counts in the sample: keys seen at
  /// least 8 times and at least 4 times as often as the average group (uniform keys have almost
  /// never any), at most max_frequent_keys. SHARED's hot-key table takes them (kernels/aggregate.hpp), and
  /// the group estimate sets them aside.
  std::vector<std::pair<std::uint64_t, std::uint32_t>> frequent;
  /// Every distinct key (bits) where the sample holds at most max_sample_keys of them, in no
  /// particular order (else empty): WORKGROUPLOCAL's perfect local table is built from them.
  std::vector<std::uint64_t> keys;
  /// Where the sample holds at most max_sample_keys keys, up to aliasing_checks right
  /// neighbours looked up among them, and those whose key the sample never saw. `aliased`:
  /// more than the sample's own frequencies predict (estimate.hpp: sample_aliased). The
  /// sample's frequencies then say nothing of the input's: no frequent keys, no keys, no
  /// hottest key's share are kept, and the group estimate skips stage 1.
  std::uint64_t neighbours_checked = 0;
  std::uint64_t neighbours_unseen = 0;
  bool aliased = false;

  frequent_keys_summary frequent_summary() const {
    frequent_keys_summary summary;
    if (sample_size == 0) return summary;
    std::uint64_t covered = 0;
    for (const auto& [key, count] : frequent) covered += count;
    summary.keys = frequent.size();
    summary.share = double(covered) / double(sample_size);
    return summary;
  }
  /// The frequent keys' bits alone (the host's sketch counts their rows: sketch_host_rows).
  std::vector<std::uint64_t> frequent_words() const {
    std::vector<std::uint64_t> words;
    words.reserve(frequent.size());
    for (const auto& [key, count] : frequent) words.push_back(key);
    return words;
  }
};
inline constexpr std::size_t max_frequent_keys = 4096;
inline constexpr std::size_t max_sample_keys = 4096;

/// The key sample: min(rows, key_sample_rows) rows, rows 0, s, 2s, ... with s =
/// key_sample_stride(rows, n), each with its right neighbour.
inline constexpr std::uint64_t key_sample_rows = std::uint64_t{1} << 14;
inline constexpr std::uint64_t key_sample_size(std::uint64_t rows) noexcept { return std::min(rows, key_sample_rows); }

/// The key sample's stride: the largest prime at most rows / n. A stride that shares factors
/// with a period of the keys (row % G, round-robin ids) sees a fraction of them, each many
/// times, and the first stage then decides for that fraction: 2^27 rows of row % 2^20 at the
/// stride of 2^13 showed 128 keys, 128 times each, and the query ran its first blocks on a
/// table for 128 groups (216 against 3.3 ms on an H200, decisions.md). A prime stride shares no
/// factor with any period but its own multiples. The rows cannot be drawn within each stride as
/// the sketches' are (estimate.hpp: stride_offset): the device reads the sample in one rectangle
/// read per column, whose rows lie a constant pitch apart, with no kernel and no device buffer.
/// Trial division: a few thousand divisions at most, for 2^36 rows.
constexpr std::uint64_t key_sample_stride(std::uint64_t rows, std::uint64_t n) noexcept {
  if (n == 0) return 1;
  const auto prime = [](std::uint64_t p) {
    if (p < 4) return p >= 2;
    if (p % 2 == 0) return false;
    for (std::uint64_t d = 3; d * d <= p; d += 2) {
      if (p % d == 0) return false;
    }
    return true;
  };
  std::uint64_t stride = std::max<std::uint64_t>(rows / n, 1);
  if (stride <= 2) return stride;
  while (!prime(stride)) --stride;
  return stride;
}

/// profile_sample's working memory, one per thread and key width, kept between queries: a
/// flat table of (key, count) slots, the slots in use, and each sampled row's slot.
template <class Bits>
struct profile_scratch {
  struct slot {
    Bits key;
    std::uint32_t count;
  };
  std::vector<slot> table;
  std::vector<std::uint32_t> used;   // slots in use, in order of first use
  std::vector<std::uint32_t> where;  // each sampled row's slot
  static std::size_t table_size(std::size_t sample_size) {
    std::size_t size = 2;
    while (size < sample_size * 2) size *= 2;
    return size;
  }
  static profile_scratch& mine() {
    thread_local profile_scratch scratch;
    return scratch;
  }
};

/// Brings this thread's profile_scratch for a sample of `sample_size` keys into the cache, a
/// read a cache line, in order (the hardware prefetches ahead): the profile's probes then find
/// their slots there instead of one memory latency each. The driver calls it while the
/// sample's read from the device is in flight.
template <class Bits>
void warm_profile_scratch(std::size_t sample_size) {
  auto& scratch = profile_scratch<Bits>::mine();
  const std::size_t size = profile_scratch<Bits>::table_size(sample_size);
  if (scratch.table.size() < size) return;  // the first profile allocates it
  const auto touch = [](const void* data, std::size_t bytes) {
    const auto* p = static_cast<const volatile unsigned char*>(data);
    unsigned char sink = 0;
    for (std::size_t i = 0; i < bytes; i += 64) sink ^= p[i];
    (void)sink;
  };
  touch(scratch.table.data(), size * sizeof(typename profile_scratch<Bits>::slot));
  touch(scratch.where.data(), scratch.where.size() * sizeof(std::uint32_t));
  touch(scratch.used.data(), scratch.used.capacity() * sizeof(std::uint32_t));
}

/// The fields of `Bits` words: the key policy's, none wider than the word (one key's field is
/// its whole word, so a signed range wraps at the word's top bit).
template <class Bits>
key_layout word_fields(const key_layout& layout) noexcept {
  key_layout fields = layout;
  for (auto& field : fields.fields) field.bits = std::min(field.bits, static_cast<unsigned>(8 * sizeof(Bits)));
  return fields;
}

/// The box of every `step`-th key of `keys` (query_planner::early_range_pass: a strided subset's,
/// before the sample's profile finds the whole sample's).
template <class Bits>
key_box subset_box(std::span<const Bits> keys, const key_layout& layout, std::size_t step) {
  key_box_builder box(word_fields<Bits>(layout));
  for (std::size_t i = 0; i < keys.size(); i += std::max<std::size_t>(step, 1)) box.add(static_cast<std::uint64_t>(keys[i]));
  return box.box();
}

/// `neighbours[i]`: the key of sample row i's right neighbour in the input (empty: not known);
/// `layout`: the fields of the key words (the key policy's).
template <class Bits>
sample_profile profile_sample(std::span<const Bits> sample, std::span<const Bits> neighbours = {},
                              const key_layout& layout = {}) {
  if (sample.empty()) return {};
  // Frequencies in a flat open-addressing table (linear probing, at most half full): a
  // node-based map costs about a millisecond for 16 Ki distinct keys, a query's whole budget
  // at low cardinality. The table is the thread's scratch, kept between queries and cleared
  // slot by slot (allocating and zeroing it per query costs more than the count); the counting
  // loop only counts, the most frequent key is found among the used slots after.
  const std::size_t size = profile_scratch<Bits>::table_size(sample.size());
  const std::size_t mask = size - 1;
  // A key and its count share a slot: the table is cold when a query starts (the columns and
  // the caller's own work pass through the caches between queries), and one slot is one miss.
  using slot = typename profile_scratch<Bits>::slot;
  auto& scratch = profile_scratch<Bits>::mine();
  auto& table = scratch.table;
  auto& used = scratch.used;
  auto& where = scratch.where;
  if (table.size() < size) table.assign(size, slot{Bits{}, 0});
  used.clear();
  used.reserve(sample.size());  // no allocation (and no exception) while counts are dirty
  where.resize(sample.size());
  // Fibonacci hashing: the product's top bits. Its middle bits (>> 32, masked) are a linear map
  // of the key modulo the table's size, so a dense range of keys twice the table's size puts
  // two keys on every home slot.
  const unsigned shift = 64 - static_cast<unsigned>(std::countr_zero(size));
  const auto home = [shift](Bits key) {
    return static_cast<std::size_t>((std::uint64_t(key) * 0x9E3779B97F4A7C15ULL) >> shift);
  };
  Bits lowest = sample.front();
  Bits highest = sample.front();
  // The slot of a row a few rows ahead is fetched while this one probes: the sample's keys
  // are known, so the misses overlap instead of following one another.
  constexpr std::size_t ahead = 16;
  for (std::size_t i = 0; i < sample.size(); ++i) {
    if (i + ahead < sample.size()) __builtin_prefetch(&table[home(sample[i + ahead])], 1);
    const Bits key = sample[i];
    lowest = std::min(lowest, key);
    highest = std::max(highest, key);
    std::size_t at = home(key);
    while (table[at].count != 0 && table[at].key != key) at = (at + 1) & mask;
    if (table[at].count++ == 0) {
      table[at].key = key;
      used.push_back(static_cast<std::uint32_t>(at));
    }
    where[i] = static_cast<std::uint32_t>(at);
  }
  sample_profile profile;
  profile.distinct = used.size();
  profile.sample_size = sample.size();
  profile.lowest = static_cast<std::uint64_t>(lowest);
  profile.highest = static_cast<std::uint64_t>(highest);
  const double average = double(sample.size()) / double(std::max<std::uint64_t>(profile.distinct, 1));
  const auto least = static_cast<std::uint32_t>(std::max(8.0, std::ceil(4 * average)));
  // Runs: how often a sampled row's right neighbour holds the same key, the frequent keys'
  // rows aside (their neighbours are equal because they are frequent, not because the input
  // is ordered). A row's key is frequent when its count in the table says so (its slot was
  // kept: no second probe). Only a row equal to its neighbour looks its count up (shuffled
  // input has almost none, and each lookup is a miss in a table larger than the caches' share);
  // the frequent keys' rows, which the pairs leave out, are summed over the used slots below.
  // Beside it, over every row, the run ends and the order of the rows s0, n0, s1, n1, ... (a
  // sampled row, its neighbour, the next sampled row).
  const bool runs = neighbours.size() == sample.size();
  std::size_t equal = 0;
  if (runs) {
    std::uint64_t differ = 0;
    std::uint64_t stepped = 0;
    Bits step = 0;
    bool rising = true;
    bool falling = true;
    for (std::size_t i = 0; i < sample.size(); ++i) {
      const Bits row = sample[i];
      const Bits next = neighbours[i];
      differ += row != next ? 1 : 0;
      if (step == 0) step = static_cast<Bits>(next - row);
      stepped += step != 0 && static_cast<Bits>(next - row) == step ? 1 : 0;
      rising = rising && row <= next;
      falling = falling && row >= next;
      if (i + 1 < sample.size()) {
        rising = rising && next <= sample[i + 1];
        falling = falling && next >= sample[i + 1];
      }
      if (row == next && table[where[i]].count < least) ++equal;
    }
    profile.neighbour_differ = differ;
    profile.stepped_share = double(stepped) / double(sample.size());
    profile.ordered = rising || falling;
  }
  // Aliasing: neighbours spread over the sample, each looked up in the counting table (while
  // it still counts). A table of a few thousand keys is in the cache. Each one at a hashed
  // place in its step of the sample (estimate.hpp: stride_offset): at a fixed place the
  // checked rows alias with a pattern of the input as the sample's own can (rows alternating
  // between one key and others, sampled at a stride of 3 and checked every 16th: every checked
  // row held the one key, and its neighbour twice as often an unseen key as Good-Turing says).
  if (runs && used.size() <= max_sample_keys) {
    const std::size_t step = std::max<std::size_t>(1, sample.size() / aliasing_checks);
    for (std::size_t k = 0; k * step < sample.size(); ++k) {
      const std::size_t i = std::min(sample.size() - 1, k * step + static_cast<std::size_t>(stride_offset(k, step)));
      // The counting loop's probe, written out: a lambda shared by both loops made the
      // counting loop slower.
      const Bits key = neighbours[i];
      std::size_t at = home(key);
      while (table[at].count != 0 && table[at].key != key) at = (at + 1) & mask;
      ++profile.neighbours_checked;
      profile.neighbours_unseen += table[at].count == 0 ? 1 : 0;
    }
  }
  // One pass over the used slots: the counts' statistics, the keys, the frequent keys and their
  // rows, the box, and the slot cleared. Each slot is a miss in a table larger than the caches'
  // share, and the list of used slots is known: the slot a few ahead is fetched while this one
  // is read.
  std::uint32_t top = 0;
  Bits hottest = 0;
  std::uint64_t frequent_rows = 0;
  const bool keep_keys = used.size() <= max_sample_keys;
  if (keep_keys) profile.keys.reserve(used.size());
  key_box_builder box(word_fields<Bits>(layout));
  for (std::size_t j = 0; j < used.size(); ++j) {
    if (j + ahead < used.size()) __builtin_prefetch(&table[used[j + ahead]], 1);
    auto& s = table[used[j]];
    const Bits key = s.key;
    const std::uint32_t count = s.count;
    if (count > top) {
      top = count;
      hottest = key;
    }
    profile.once += count == 1 ? 1 : 0;
    profile.twice += count == 2 ? 1 : 0;
    if (keep_keys) profile.keys.push_back(static_cast<std::uint64_t>(key));
    box.add(static_cast<std::uint64_t>(key));
    if (count >= least) {
      profile.frequent.emplace_back(static_cast<std::uint64_t>(key), count);
      frequent_rows += count;
    }
    s.count = 0;  // the scratch table is empty again for the next sample
  }
  if (runs) {
    const std::uint64_t pairs = sample.size() - frequent_rows;
    profile.runs_share = pairs > 0 ? double(equal) / double(pairs) : 0.0;
  }
  profile.hottest_key_share = double(top) / double(sample.size());
  profile.hottest_key = static_cast<std::uint64_t>(hottest);
  profile.box = box.box();
  profile.aliased =
      sample_aliased(profile.neighbours_checked, profile.neighbours_unseen, profile.once, profile.sample_size);
  if (profile.aliased) {
    profile.keys.clear();
    profile.frequent.clear();
    profile.hottest_key_share = 0;
    return profile;
  }
  const auto by_count = [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  if (profile.frequent.size() > max_frequent_keys) {
    std::partial_sort(profile.frequent.begin(), profile.frequent.begin() + max_frequent_keys, profile.frequent.end(),
                      by_count);
    profile.frequent.resize(max_frequent_keys);
  } else {
    std::sort(profile.frequent.begin(), profile.frequent.end(), by_count);
  }
  return profile;
}

/// A window's distinct keys growth may add (bounded_window_keys): at most a tenth over its
/// second half.
inline constexpr double window_growth = 1.1;

/// The distinct keys of a work group's window (query_planner::locality_window: `width` keys a
/// grid stride, stride after stride) where they stopped growing: its second half of strides
/// added at most window_growth of its first half's; else 0. Uniform keys over more groups than
/// a local table holds double them (4096 draws from 2^16 keys: about 3970 against 2020); keys
/// that repeat with the rows' positions add none.
template <class Bits>
double bounded_window_keys(std::span<const Bits> keys, std::size_t width) {
  const std::size_t strides = width == 0 ? 0 : keys.size() / width;
  if (strides < 2) return 0;
  std::size_t size = 2;
  while (size < keys.size() * 2) size *= 2;
  // The thread's table, kept between queries (a fresh one costs its pages' first touches, more
  // than the count): a slot is in use where its stamp is this count's.
  struct scratch {
    std::vector<Bits> keys;
    std::vector<std::uint32_t> stamps;
    std::uint32_t stamp = 0;
  };
  thread_local scratch table;
  if (table.keys.size() < size || ++table.stamp == 0) {
    table.keys.assign(std::max(size, table.keys.size()), Bits{});
    table.stamps.assign(table.keys.size(), 0);
    table.stamp = 1;
  }
  const std::size_t mask = size - 1;
  const unsigned shift = 64 - static_cast<unsigned>(std::countr_zero(size));
  const std::size_t half = strides / 2 * width;
  std::size_t distinct = 0;
  std::size_t first_half = 0;
  for (std::size_t i = 0; i < strides * width; ++i) {
    if (i == half) first_half = distinct;
    const Bits key = keys[i];
    std::size_t at = static_cast<std::size_t>((std::uint64_t(key) * 0x9E3779B97F4A7C15ULL) >> shift);
    while (table.stamps[at] == table.stamp && table.keys[at] != key) at = (at + 1) & mask;
    if (table.stamps[at] != table.stamp) {
      table.stamps[at] = table.stamp;
      table.keys[at] = key;
      ++distinct;
      // Growing past the bound: the rest cannot bring it back.
      if (i >= half && double(distinct) > window_growth * double(first_half)) return 0.0;
    }
  }
  return double(distinct);
}

template <class Bits>
sample_profile profile_sample(const std::vector<Bits>& sample) {
  return profile_sample(std::span<const Bits>(sample));
}

}  // namespace gpuagg::detail
