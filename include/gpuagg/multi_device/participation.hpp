#pragma once
// DECISION: which members of a device_set take part in a query of the shared queue.
//
// A member that a query measured slower than min_relative_speed of the set's fastest member
// (block_size.hpp) stops taking blocks there, but it has already cost the query its set-up (a
// key sample and a group estimate over the same host keys, on the same host cores, as the fast
// member's), its probe blocks and the merge of its partial, whose table is as large as the
// fast member's. So the set remembers it: a member found too slow in two queries in a row sits
// the next sit_out_queries queries out (no driver, no rows, nothing to merge), then takes part
// once again, in case the input or the load has changed. Two, not one: a member's first query
// on a device is not its speed (on two H100s, the second GPU's first blocks from memory pinned
// in the first one's context ran slowly enough to be found too slow once, and one verdict sat
// it out of queries it halves). At least the fastest member always takes part. Only group_by
// over a device_set reads and writes this record; a query that fails records nothing.
//
// A CPU member also sits out any query in which a GPU member copies host input through its
// staging buffers (a column in pageable memory): those copies run on the host's cores and
// memory bus, which the CPU member's blocks take too, so both slow down, the GPU more than
// the CPU adds (docs/decisions.md). Pinned input, which the GPU's DMA reads, leaves them to
// the CPU.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "block_size.hpp"

namespace gpuagg::detail {

/// A member found too slow in this many queries in a row sits out sit_out_queries queries,
/// then takes part in the next one.
inline constexpr unsigned too_slow_in_a_row = 2;
inline constexpr unsigned sit_out_queries = 15;

/// Which members a finished query found too slow: those the shared queue stopped as slower than
/// min_relative_speed of the fastest, and those whose rows over their own run time (first block
/// to last completion) fall below it. The second catches a member whose probes were still
/// running when the others had taken every row, which the queue never got to stop. A member
/// with no rows is not judged (it may still have been setting up).
inline std::vector<bool> found_too_slow(const std::vector<std::uint64_t>& rows, const std::vector<double>& run_seconds,
                                        const std::vector<bool>& stopped_as_slow) {
  const std::size_t n = rows.size();
  std::vector<double> rate(n, 0.0);
  double fastest = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (rows[i] > 0 && i < run_seconds.size() && run_seconds[i] > 0) rate[i] = double(rows[i]) / run_seconds[i];
    fastest = std::max(fastest, rate[i]);
  }
  std::vector<bool> slow(n, false);
  for (std::size_t i = 0; i < n; ++i) {
    slow[i] = (i < stopped_as_slow.size() && stopped_as_slow[i]) ||
              (rate[i] > 0 && too_slow_to_help(rate[i] / fastest));
  }
  return slow;
}

/// Which members sit the query out beside staged input: every CPU member (`cpu`), where some
/// other member (`stages`) copies a column through host staging.
inline std::vector<bool> sit_out_beside_staging(const std::vector<bool>& cpu, const std::vector<bool>& stages) {
  bool staged = false;
  for (std::size_t i = 0; i < cpu.size() && i < stages.size(); ++i) staged |= !cpu[i] && stages[i];
  std::vector<bool> out(cpu.size(), false);
  if (staged) out = cpu;
  return out;
}

class participation_record {
 public:
  /// Which of `members` take part in the next query; counts a query sat out for the others.
  std::vector<bool> take_part(std::size_t members) {
    const std::lock_guard lock(mutex_);
    fit(members);
    std::vector<bool> part(members, true);
    std::size_t taking = 0;
    for (std::size_t i = 0; i < members; ++i) {
      part[i] = strikes_[i] < too_slow_in_a_row || sat_out_[i] >= sit_out_queries;
      taking += part[i] ? 1 : 0;
    }
    if (taking == 0) part.assign(members, true);  // a stale record never leaves the set empty
    for (std::size_t i = 0; i < members; ++i) {
      if (!part[i]) ++sat_out_[i];
    }
    return part;
  }

  /// A finished query: which members took part, and which of those it found too slow.
  void record(const std::vector<bool>& took_part, const std::vector<bool>& too_slow) {
    const std::lock_guard lock(mutex_);
    fit(took_part.size());
    for (std::size_t i = 0; i < took_part.size(); ++i) {
      if (!took_part[i]) continue;
      strikes_[i] = i < too_slow.size() && too_slow[i] ? strikes_[i] + 1 : 0;
      sat_out_[i] = 0;
    }
  }

  /// Forgets every measurement: all members take part in the next query.
  void reset() {
    const std::lock_guard lock(mutex_);
    strikes_.clear();
    sat_out_.clear();
  }

 private:
  void fit(std::size_t members) {
    strikes_.resize(members, 0);
    sat_out_.resize(members, 0);
  }

  std::mutex mutex_;
  std::vector<unsigned> strikes_;  ///< queries in a row that found the member too slow
  std::vector<unsigned> sat_out_;
};

}  // namespace gpuagg::detail
