#pragma once
// A pool of device buffers and mapped pinned host buffers, per context. Allocating a table,
// the spill area and the staging buffers costs more than a whole query of a few milliseconds
// (the driver allocates on first use; pinned memory must be page-locked), so a query returns
// its working buffers here and the next query of a similar size takes them back.

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "opencl.hpp"

namespace gpuagg::detail {

/// Sizes round up to 8 steps per power of two (at most 12.5% more than asked), so a query of
/// a similar size finds a buffer.
inline std::uint64_t pool_size_class(std::uint64_t bytes) {
  if (bytes <= 4096) return 4096;
  unsigned top = 63;
  while (!(bytes >> top)) --top;
  const std::uint64_t step = std::uint64_t{1} << (top - 3);
  return (bytes + step - 1) / step * step;
}

class buffer_pool {
 public:
  struct pinned_buffer {
    cl::Buffer buffer;
    void* mapped = nullptr;
  };

  buffer_pool() = default;
  buffer_pool(const buffer_pool&) = delete;
  buffer_pool& operator=(const buffer_pool&) = delete;
  ~buffer_pool() { clear(); }

  /// Most bytes kept while unused.
  void set_capacity(std::uint64_t bytes) {
    const std::lock_guard lock(mutex_);
    capacity_ = bytes;
  }

  /// A pooled device buffer of exactly `size_class` bytes, or none.
  cl::Buffer take_device(std::uint64_t size_class) {
    const std::lock_guard lock(mutex_);
    auto found = device_.find(size_class);
    if (found == device_.end()) return {};
    cl::Buffer buffer = std::move(found->second);
    device_.erase(found);
    kept_ -= size_class;
    return buffer;
  }

  pinned_buffer take_pinned(std::uint64_t size_class) {
    const std::lock_guard lock(mutex_);
    auto found = pinned_.find(size_class);
    if (found == pinned_.end()) return {};
    pinned_buffer buffer = std::move(found->second);
    pinned_.erase(found);
    kept_ -= size_class;
    return buffer;
  }

  void give_device(std::uint64_t size_class, cl::Buffer buffer) {
    const std::lock_guard lock(mutex_);
    if (kept_ + size_class > capacity_) return;  // released, not kept
    device_.emplace(size_class, std::move(buffer));
    kept_ += size_class;
  }

  /// Pinned buffers stay mapped while pooled; `queue` unmaps one the pool cannot keep.
  void give_pinned(std::uint64_t size_class, pinned_buffer buffer, cl::CommandQueue& queue) {
    {
      const std::lock_guard lock(mutex_);
      if (kept_ + size_class <= capacity_) {
        pinned_.emplace(size_class, std::move(buffer));
        kept_ += size_class;
        return;
      }
    }
    queue.enqueueUnmapMemObject(buffer.buffer, buffer.mapped);
    queue.finish();
  }

  std::uint64_t kept_bytes() const {
    const std::lock_guard lock(mutex_);
    return kept_;
  }

  /// Releases every pooled buffer (pinned ones are unmapped first).
  void clear(cl::CommandQueue* queue = nullptr) {
    const std::lock_guard lock(mutex_);
    device_.clear();
    if (queue) {
      for (auto& [size, buffer] : pinned_) queue->enqueueUnmapMemObject(buffer.buffer, buffer.mapped);
      queue->finish();
    }
    pinned_.clear();
    kept_ = 0;
  }

 private:
  mutable std::mutex mutex_;
  std::multimap<std::uint64_t, cl::Buffer> device_;
  std::multimap<std::uint64_t, pinned_buffer> pinned_;
  std::uint64_t kept_ = 0;
  std::uint64_t capacity_ = std::uint64_t{1} << 32;
};

}  // namespace gpuagg::detail
