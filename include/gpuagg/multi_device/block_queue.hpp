#pragma once
// The shared queue of a multi-device query: the rows of one host input, handed out in blocks
// to whichever device asks next (its driver asks when it has a free block slot). Block sizes
// come from block_size.hpp. A failure anywhere cancels the queue: every device then stops
// taking blocks, and the query fails instead of returning the rows some devices did.

#include <chrono>
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

  block_queue(std::uint64_t rows, std::size_t devices) : rows_(rows), devices_(devices) {}

  /// The next block for member `device`, whose driver takes at most `limit` rows a block;
  /// std::nullopt when no row is left or the queue was cancelled.
  std::optional<range> next(std::size_t device, std::uint64_t limit) {
    const auto now = std::chrono::steady_clock::now();
    const std::lock_guard lock(mutex_);
    if (cancelled_ || cursor_ >= rows_) return std::nullopt;
    auto& mine = devices_[device];
    if (mine.blocks == 0) mine.first_request = now;
    const std::uint64_t count = next_block_rows(limit, rows_ - cursor_, share_of(device, now));
    const range handed{cursor_, count};
    cursor_ += count;
    mine.rows += count;
    mine.blocks += 1;
    return handed;
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
  struct member {
    std::uint64_t rows = 0;
    std::size_t blocks = 0;
    std::chrono::steady_clock::time_point first_request;
  };

  /// Member `device`'s share of the set's rows per second: rows taken since its first request,
  /// over that time. A member's rows include the block it is running, an overestimate equal
  /// for all members in steady state. 0 until every member has taken two blocks (no rate yet).
  double share_of(std::size_t device, std::chrono::steady_clock::time_point now) const {
    double total = 0;
    double own = 0;
    for (std::size_t i = 0; i < devices_.size(); ++i) {
      const auto& m = devices_[i];
      if (m.blocks < 2) return 0;
      const double seconds = std::chrono::duration<double>(now - m.first_request).count();
      if (seconds <= 0) return 0;
      const double rate = double(m.rows) / seconds;
      total += rate;
      if (i == device) own = rate;
    }
    return total > 0 ? own / total : 0;
  }

  mutable std::mutex mutex_;
  std::uint64_t rows_;
  std::uint64_t cursor_ = 0;
  bool cancelled_ = false;
  std::vector<member> devices_;
};

}  // namespace gpuagg::detail
