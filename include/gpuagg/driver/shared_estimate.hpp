#pragma once
// The key sample's profile and the group estimate of one host input, made once for the drivers
// of several devices that take blocks of the same rows (group_by over a device_set): each
// would sample the same keys and sketch the same strided rows on the same host cores, at the
// same time, before its first block.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>

#include "../estimate.hpp"
#include "../plan/inputs.hpp"
#include "../result.hpp"
#include "key_sample.hpp"

namespace gpuagg::detail {

/// What one driver's set-up found for the input, for the others.
struct input_estimate {
  sample_profile profile;
  staged_estimate estimate{1, estimate_source::none};
};

/// A query the plan runs with direct addressing over its key column's exact range
/// (query_planner::direct_domain): the hash scheme's driver, whose set-up found that range, stops
/// there and hands what it found to the direct-addressing driver that runs the query
/// (groupby.hpp: run_default_query), so that the sample is taken and profiled once and the
/// query's clock and set-up phases run on.
struct direct_handover {
  std::optional<exact_key_range> range;  ///< set where the plan takes direct addressing
  /// Packed keys: the range is a box's keys from its lowest word, and these its spans
  /// (key_domain::of_box); 0 for one key column's range of words.
  std::uint32_t box_spans = 0;
  input_estimate found;
  bool estimated = false;  ///< found's groups are an estimate (not the caller's hint)
  std::chrono::steady_clock::time_point started;
  query_stats stats;  ///< the set-up's so far: its phases, the estimate's kernels
  std::size_t builds_before = 0;  ///< the context's program builds when the query began
};

/// The first driver to ask computes the estimate; the others wait for it. Should the first
/// fail, the others compute their own (its error fails the query anyway).
class shared_estimate {
 public:
  template <class Compute>
  input_estimate get(Compute&& compute) {
    std::unique_lock lock(mutex_);
    if (!claimed_) {
      claimed_ = true;
      lock.unlock();
      try {
        input_estimate made = compute();
        lock.lock();
        ++computed_;
        value_ = made;
        done_.notify_all();
        return made;
      } catch (...) {
        lock.lock();
        failed_ = true;
        done_.notify_all();
        throw;
      }
    }
    done_.wait(lock, [&] { return value_.has_value() || failed_; });
    if (value_) return *value_;
    lock.unlock();
    input_estimate own = compute();
    lock.lock();
    ++computed_;
    return own;
  }

  /// Estimates computed through get(): 1 when every driver after the first waited for it.
  unsigned computed() const {
    std::lock_guard lock(mutex_);
    return computed_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable done_;
  std::optional<input_estimate> value_;
  bool claimed_ = false;
  bool failed_ = false;
  unsigned computed_ = 0;
};

}  // namespace gpuagg::detail
