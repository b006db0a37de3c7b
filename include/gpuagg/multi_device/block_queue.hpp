#pragma once
// The shared queue of a multi-device query: the rows of one host input, handed out in blocks
// to whichever device asks next (its driver asks when it has a free block slot). Block sizes
// come from block_size.hpp. A failure anywhere cancels the queue: every device then stops
// taking blocks, and the query fails instead of returning the rows some devices did.

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <deque>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "block_size.hpp"

namespace gpuagg::detail {

class block_queue {
 public:
  using range = std::pair<std::uint64_t, std::uint64_t>;  ///< first row, rows

  /// `model[i]`: which device model member i is (members of one model share a number; empty:
  /// every member its own). A member of the fastest member's own model is found too slow only
  /// on a block of its full size (next()).
  block_queue(std::uint64_t rows, std::size_t devices, std::vector<std::size_t> model = {})
      : rows_(rows), devices_(devices), model_(std::move(model)) {
    if (model_.size() != devices) {
      model_.resize(devices);
      for (std::size_t i = 0; i < devices; ++i) model_[i] = i;
    }
  }

  /// The next block for member `device`, whose driver takes at most `limit` rows a block and
  /// holds up to `window` blocks in flight; std::nullopt when no row is left for it (all handed
  /// out, the device too slow for what is left: block_size.hpp, the member stopped before) or
  /// the queue was cancelled.
  /// A driver asks only when a slot is free (aggregation_driver::run_blocks), so once `window`
  /// blocks are in flight each request means the oldest of them has finished. A device's speed
  /// is known once two of its blocks have finished: the rows of those after the first over the
  /// time since the first finished. The first block carries the device's start in the query
  /// (its first transfers, host memory it touches first, its queue filling), which can make a
  /// device as fast as the others look many times slower on a probe-sized block.
  std::optional<range> next(std::size_t device, std::uint64_t limit, std::size_t window = 2) {
    return next(device, limit, window, std::chrono::steady_clock::now());
  }
  /// The same at time `now` (the request's; tests drive the queue on a clock of their own).
  std::optional<range> next(std::size_t device, std::uint64_t limit, std::size_t window,
                            std::chrono::steady_clock::time_point now) {
    const std::lock_guard lock(mutex_);
    if (cancelled_ || cursor_ >= rows_) return std::nullopt;
    auto& mine = devices_[device];
    // A member that stopped (sat out, or found too slow) takes no block again: were it to ask,
    // the count of members still taking blocks, which leaves it out, would hand it the rest.
    if (mine.stopped) return std::nullopt;
    if (mine.in_flight.size() >= std::max<std::size_t>(window, 1)) {
      const std::uint64_t done = mine.in_flight.front();
      if (mine.finished_blocks > 0) {
        // The time since the previous finish is this block's: the device kept its slots full.
        const double seconds = std::chrono::duration<double>(now - mine.last_finish).count();
        auto& size_class = mine.by_size[size_class_of(done)];
        size_class.rows += done;
        size_class.seconds += seconds;
      }
      mine.last_finish = now;
      mine.in_flight.pop_front();
      mine.finished_blocks += 1;
    }
    auto [share, measured, relative, like_fastest] = share_of(device);
    // Devices of one model run the same kernels at the same speed; what can make one slower is
    // its path to the rows, such as host memory pinned in another member's context, whose fixed
    // cost per block weighs many times more on a probe than on a full block. Such a member is
    // found too slow only once it has finished a block of its full size; until then its blocks
    // keep growing (at most twofold each: block_size.hpp) at its measured share.
    if (like_fastest && too_slow_to_help(relative) && mine.by_size[size_class_of(limit)].rows == 0) {
      relative = min_relative_speed;
    }
    // The last member taking blocks (the others sat the query out or stopped) runs as alone:
    // its plan's full blocks, no probes to compare it by.
    const bool last_active = std::count_if(devices_.begin(), devices_.end(),
                                           [](const member& m) { return !m.stopped; }) == 1;
    std::uint64_t count =
        next_block_rows(limit, rows_ - cursor_, share, measured, last_active, relative, mine.last_rows);
    if (count == 0) {
      if (!last_active) {  // the others finish the rest sooner without it
        mine.stopped = true;
        mine.too_slow = measured && too_slow_to_help(relative);
        return std::nullopt;
      }
      count = std::min(limit, rows_ - cursor_);  // never leave rows to no one
    }
    const range handed{cursor_, count};
    cursor_ += count;
    mine.last_rows = count;
    mine.rows += count;
    mine.blocks += 1;
    mine.in_flight.push_back(count);
    return handed;
  }

  /// Member `device` takes no block in this query (it sits it out: participation.hpp).
  void sit_out(std::size_t device) {
    const std::lock_guard lock(mutex_);
    devices_[device].stopped = true;
  }

  /// Whether member `device` stopped taking blocks because it was measured slower than
  /// min_relative_speed of the fastest member.
  bool too_slow(std::size_t device) const {
    const std::lock_guard lock(mutex_);
    return devices_[device].too_slow;
  }

  /// Stops handing out blocks (a member failed).
  void cancel() {
    const std::lock_guard lock(mutex_);
    cancelled_ = true;
  }

  std::uint64_t rows_of(std::size_t device) const {
    const std::lock_guard lock(mutex_);
    return devices_[device].rows;
  }
  std::size_t blocks_of(std::size_t device) const {
    const std::lock_guard lock(mutex_);
    return devices_[device].blocks;
  }
  /// Rows handed out so far.
  std::uint64_t handed_out() const {
    const std::lock_guard lock(mutex_);
    return cursor_;
  }

 private:
  /// Size classes of blocks (size_class_of): one per bit width of a row count.
  static constexpr std::size_t size_classes = 65;

  struct member {
    std::uint64_t rows = 0;       // handed out
    std::size_t finished_blocks = 0;  // finished (known at later requests), the first included
    std::size_t blocks = 0;
    std::uint64_t last_rows = 0;      // of the last block handed out
    struct timed {
      std::uint64_t rows = 0;
      double seconds = 0;
      double rate() const { return seconds > 0 ? double(rows) / seconds : 0.0; }
    };
    // Finished blocks after the first, by size class (size_class_of): the probes of the floor's
    // rows, and each doubling of them as the member's blocks grow.
    std::array<timed, size_classes> by_size{};
    timed after_first() const {
      timed all;
      for (const auto& t : by_size) {
        all.rows += t.rows;
        all.seconds += t.seconds;
      }
      return all;
    }
    bool stopped = false;   // takes no more blocks (too slow for what was left, or sat out)
    bool too_slow = false;  // stopped as slower than min_relative_speed of the fastest
    std::deque<std::uint64_t> in_flight;
    std::chrono::steady_clock::time_point last_finish;
  };

  /// Blocks of one size class are within a factor of two of each other's rows.
  static std::size_t size_class_of(std::uint64_t rows) noexcept { return std::bit_width(rows); }

  struct speed {
    double share;       ///< of the set's rows per second
    bool measured;      ///< its own speed is known
    double relative;    ///< its speed over the fastest member's, on blocks of like size
    bool like_fastest;  ///< that fastest member is of its own device model
  };

  /// Member `device`'s share of the set's rows per second, each member's speed the rows of its
  /// finished blocks after the first over the time from the first's finish to the last's, among
  /// the members whose speed is known; whether its own speed is known; and its speed over the
  /// fastest other member's on blocks of like size: the largest size class (size_class_of) in
  /// which it and another member have both finished blocks. Like sizes, because a block's fixed
  /// cost weighs on a small block: a member still growing its blocks from the probes beside one
  /// running full blocks would look several times slower than it is. Members still setting up
  /// or running their first blocks are left out (one that builds its programs for a second must
  /// not keep the others in probe-sized blocks). A member that stopped taking blocks keeps its
  /// speed in the total: it is still finishing its last blocks.
  speed share_of(std::size_t device) const {
    double total = 0;
    double own = 0;
    std::array<double, size_classes> fastest_other{};
    std::array<std::size_t, size_classes> fastest_member{};
    for (std::size_t i = 0; i < devices_.size(); ++i) {
      const auto& m = devices_[i];
      const double rate = m.after_first().rate();
      if (rate <= 0) continue;
      total += rate;
      if (i == device) {
        own = rate;
        continue;
      }
      for (std::size_t c = 0; c < fastest_other.size(); ++c) {
        if (m.by_size[c].rate() > fastest_other[c]) {
          fastest_other[c] = m.by_size[c].rate();
          fastest_member[c] = i;
        }
      }
    }
    if (own <= 0) return {0.0, false, 1.0, false};
    const auto& mine = devices_[device];
    double relative = 1.0;
    bool like_fastest = false;
    for (std::size_t c = fastest_other.size(); c-- > 0;) {
      if (mine.by_size[c].rate() > 0 && fastest_other[c] > 0) {
        relative = std::min(1.0, mine.by_size[c].rate() / fastest_other[c]);
        like_fastest = model_[fastest_member[c]] == model_[device];
        break;
      }
    }
    return {own / total, true, relative, like_fastest};
  }

  mutable std::mutex mutex_;
  std::uint64_t rows_;
  std::uint64_t cursor_ = 0;
  bool cancelled_ = false;
  std::vector<member> devices_;
  std::vector<std::size_t> model_;
};

}  // namespace gpuagg::detail
