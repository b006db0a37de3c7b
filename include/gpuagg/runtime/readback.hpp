#pragma once
// Large copies between the device and the caller's pageable memory (a result's std::vectors, a
// partial aggregate's) go through one pooled pinned buffer: a GPU's DMA reaches pageable memory
// only through the driver's own bounce buffer, one thread's memcpy at a time (about 7 GB/s on a
// PCIe 5 link that moves 50 GB/s from pinned memory), where a pinned buffer moves at the link's
// rate and several threads copy it to or from the caller's memory. The destination vectors are
// sized while the device works, backed by huge pages where the kernel offers them (a fresh
// 200 MB vector otherwise takes 50,000 page faults). CPU devices read and write host memory as
// it is: no staging there.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "context.hpp"
#include "host_copy.hpp"

namespace gpuagg::detail {

/// Copies of at least this many bytes in all are staged, and copies of more than two buffers
/// whatever their size: each copy to pageable memory goes through the driver's bounce buffer on
/// its own, while copies to pinned memory queue up behind one another (docs/decisions.md has
/// the measurements behind both bounds).
inline constexpr std::uint64_t min_staged_bytes = std::uint64_t{128} << 10;
inline constexpr std::size_t min_staged_copies = 3;

/// Whether `copies` copies of `bytes` in all between a device of `architecture` ("cpu" for CPU
/// devices) and pageable memory are staged. GPUAGG_HOST_STAGING=always or never overrides the
/// rule (the tests run the staged path on PoCL with always).
inline bool stage_host_copies(std::string_view architecture, std::uint64_t bytes, std::size_t copies = 1) {
  if (bytes == 0) return false;
  if (const char* forced = std::getenv("GPUAGG_HOST_STAGING"); forced != nullptr) {
    if (std::string_view(forced) == "always") return true;
    if (std::string_view(forced) == "never") return false;
  }
  return (bytes >= min_staged_bytes || copies >= min_staged_copies) && architecture != "cpu";
}

/// v.resize(n) for a vector about to be overwritten: its memory asked for huge pages first.
template <class T>
void resize_for_copy(std::vector<T>& v, std::size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  if (n * sizeof(T) >= 2 * huge && v.capacity() < n) {
    v.reserve(n);
    const auto begin = (reinterpret_cast<std::uintptr_t>(v.data()) + huge - 1) / huge * huge;
    const auto end = (reinterpret_cast<std::uintptr_t>(v.data() + n)) / huge * huge;
    if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);  // a hint
  }
#endif
  v.resize(n);
}

/// Copies between the device and pageable memory through one pinned staging buffer. read()
/// enqueues a device-to-host copy into it, and once that completed copy_out() moves it to its
/// destination; write() copies host memory into it with several threads and enqueues the copy
/// to the device. The buffer goes back to the pool when this object ends, after the queue of
/// its copies finished (a later query may reuse the memory).
class host_staging {
 public:
  /// For `copies` copies of `total_bytes` in all.
  host_staging(context& ctx, std::uint64_t total_bytes, std::size_t copies = 1) : ctx_(ctx) {
    if (!stage_host_copies(ctx.info().architecture, total_bytes, copies)) return;
    auto [buffer, size_class] = ctx.pooled_pinned(total_bytes + 64 * 8, "pinned staging for a host copy");
    buffer_ = buffer;
    size_class_ = size_class;
    active_ = true;
  }
  host_staging(const host_staging&) = delete;
  host_staging& operator=(const host_staging&) = delete;
  ~host_staging() {
    if (!active_) return;
    if (queue_ != nullptr) (void)queue_->finish();  // nothing may still copy into or out of it
    ctx_.recycle_pinned(size_class_, buffer_);
  }

  bool active() const noexcept { return active_; }

  /// Enqueues the read of the first `bytes` of `from` into the staging buffer (active() only);
  /// returns where they will be.
  const void* read(cl::CommandQueue& queue, const cl::Buffer& from, std::uint64_t bytes, cl::Event* done,
                   const char* what) {
    char* at = next(bytes);
    queue_ = &queue;
    check(queue.enqueueReadBuffer(from, CL_FALSE, 0, bytes, at, nullptr, done), what);
    return at;
  }

  /// Copies `bytes` from a staged read (complete) to `destination`, with several threads.
  static void copy_out(void* destination, const void* staged, std::uint64_t bytes) {
    parallel_copy(destination, staged, bytes, 16);
  }

  /// Copies `bytes` of `source` into the staging buffer with several threads, then enqueues
  /// their copy to the start of `to` (active() only).
  void write(cl::CommandQueue& queue, const cl::Buffer& to, const void* source, std::uint64_t bytes,
             const char* what) {
    char* at = next(bytes);
    parallel_copy(at, source, bytes, 16);
    queue_ = &queue;
    check(queue.enqueueWriteBuffer(to, CL_FALSE, 0, bytes, at), what);
  }

 private:
  char* next(std::uint64_t bytes) {
    char* at = static_cast<char*>(buffer_.mapped) + used_;
    used_ += (bytes + 63) / 64 * 64;
    return at;
  }

  context& ctx_;
  buffer_pool::pinned_buffer buffer_;
  std::uint64_t size_class_ = 0;
  std::uint64_t used_ = 0;
  cl::CommandQueue* queue_ = nullptr;
  bool active_ = false;
};

}  // namespace gpuagg::detail
