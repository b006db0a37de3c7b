#pragma once
// Large copies between the device and the caller's pageable memory (a result's std::vectors, a
// partial aggregate's) go through one pooled pinned buffer: a GPU's DMA reaches pageable memory
// only through the driver's own bounce buffer, one thread's memcpy at a time (about 7 GB/s on a
// PCIe 5 link that moves 50 GB/s from pinned memory), where a pinned buffer moves at the link's
// rate and several threads copy it to or from the caller's memory. The destination vectors are
// sized while the device works, backed by huge pages where the kernel offers them (a fresh
// 200 MB vector otherwise takes 50,000 page faults). CPU devices read and write host memory as
// it is: no staging there.
//
// Sizing a result's std::vectors writes every element once (value-initialization) on one
// thread: for 2^24 groups that is 200 MB of page faults and zeros, more than the device's
// FINALIZE and copy of them. A query whose result is that large has its vectors sized on a
// thread of their own from the group estimate, while the device aggregates (presized_result).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <future>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
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

/// GPUAGG_HOST_STAGING=always (true) or never (false); nothing when unset or anything else.
inline std::optional<bool> forced_host_staging() {
  const char* forced = std::getenv("GPUAGG_HOST_STAGING");
  if (forced == nullptr) return std::nullopt;
  if (std::string_view(forced) == "always") return true;
  if (std::string_view(forced) == "never") return false;
  return std::nullopt;
}

/// Whether `copies` copies of `bytes` in all between a device of `architecture` ("cpu" for CPU
/// devices) and pageable memory are staged. GPUAGG_HOST_STAGING=always or never overrides the
/// rule (the tests run the staged path on PoCL with always).
inline bool stage_host_copies(std::string_view architecture, std::uint64_t bytes, std::size_t copies = 1) {
  if (bytes == 0) return false;
  if (const auto forced = forced_host_staging()) return *forced;
  return (bytes >= min_staged_bytes || copies >= min_staged_copies) && architecture != "cpu";
}

/// Asks for huge pages over the whole 2 MiB pages of [data, data + bytes) (a hint).
inline void advise_huge_pages([[maybe_unused]] const void* data, [[maybe_unused]] std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  const auto begin = (reinterpret_cast<std::uintptr_t>(data) + huge - 1) / huge * huge;
  const auto end = (reinterpret_cast<std::uintptr_t>(data) + bytes) / huge * huge;
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#endif
}

/// v.resize(n) for a vector about to be overwritten: its memory asked for huge pages first, and
/// `capacity` rows reserved where that is more than n (a presized result that may take more).
template <class T>
void resize_for_copy(std::vector<T>& v, std::size_t n, std::size_t capacity = 0) {
  capacity = std::max(capacity, n);
  if (v.capacity() < capacity) {
    v.reserve(capacity);
    if (n * sizeof(T) >= (std::size_t{4} << 20)) advise_huge_pages(v.data(), capacity * sizeof(T));
  }
  v.resize(n);
}

/// Vectors of at least this many bytes have their pages faulted in by several threads before
/// they are sized: the kernel clears each page it maps, and one thread's faults (with the
/// zeros resize writes after them) run at a few GB/s.
inline constexpr std::size_t min_prefaulted_bytes = std::size_t{16} << 20;

/// reserve(max(n, capacity)) for a vector of at least min_prefaulted_bytes (huge pages asked
/// for), returning its first n elements' storage for touch_pages(); nothing where it is smaller
/// or already holds n.
template <class T>
std::optional<std::pair<unsigned char*, std::size_t>> reserve_for_touch(std::vector<T>& v, std::size_t n,
                                                                        std::size_t capacity = 0) {
  const std::size_t bytes = n * sizeof(T);
  if (bytes < min_prefaulted_bytes || v.capacity() >= n) return std::nullopt;
  capacity = std::max(capacity, n);
  v.reserve(capacity);
  advise_huge_pages(v.data(), capacity * sizeof(T));
  // Storage of a trivially copyable type beyond size(): the writes touch_pages() makes create no
  // object anything reads; resize() value-initializes every element after them.
  static_assert(std::is_trivially_copyable_v<T>);
  return std::pair{reinterpret_cast<unsigned char*>(v.data()), bytes};
}

/// The pages of every region touched (one byte a page: the kernel maps and clears the page) by
/// up to `threads` threads, each a contiguous share of all the regions' bytes together, so that
/// one column's faults do not wait for another's.
inline void touch_pages(const std::vector<std::pair<unsigned char*, std::size_t>>& regions, unsigned threads) {
  constexpr std::size_t page = 4096;
  std::size_t total = 0;
  for (const auto& [data, bytes] : regions) total += bytes;
  if (total == 0) return;
  const std::size_t parts = std::clamp<std::size_t>(total / min_prefaulted_bytes, 1, std::max(threads, 1u));
  const std::size_t share = (total / parts + page - 1) / page * page;
  const auto touch = [&](std::size_t p) {
    // Bytes [p * share, (p + 1) * share) of the regions laid end to end.
    std::size_t begin = p * share;
    const std::size_t end = std::min(total, (p + 1) * share);
    std::size_t offset = 0;
    for (const auto& [data, bytes] : regions) {
      if (begin >= end) break;
      if (begin < offset + bytes) {
        const std::size_t stop = std::min(end, offset + bytes);
        // The region's pages whose first byte lies in the share.
        for (std::size_t at = (begin - offset + page - 1) / page * page; at < stop - offset; at += page) {
          std::memset(data + at, 0, 1);
        }
        begin = stop;
      }
      offset += bytes;
    }
  };
  std::vector<std::jthread> helpers;
  for (std::size_t p = 1; p < parts; ++p) helpers.emplace_back(touch, p);
  touch(0);
}

/// Results of fewer bytes than this are sized when FINALIZE runs: a few milliseconds at most,
/// below what starting a thread for them would be worth.
inline constexpr std::uint64_t min_presized_bytes = std::uint64_t{8} << 20;

/// The rows a host result's columns are sized for while the device aggregates (0: none), from
/// the groups the query planned for (the estimate or the caller's hint) and a group's bytes
/// over every result column: an eighth more than planned, so that a close estimate fits without
/// a second sizing. Not for CPU devices (the sizing thread would take a core from the query's
/// kernels); GPUAGG_HOST_STAGING=always or never, which sets the staged copies the result lands
/// through, sets this alike (the tests size every result early on PoCL with always).
inline std::uint64_t presized_result_rows(std::string_view architecture, std::uint64_t planned_groups,
                                          std::uint64_t bytes_per_group) {
  const std::uint64_t rows = planned_groups + planned_groups / 8 + 1;
  if (const auto forced = forced_host_staging()) return *forced ? rows : 0;
  if (architecture == "cpu") return 0;
  return rows * bytes_per_group >= min_presized_bytes ? rows : 0;
}

/// f(v) for every std::vector of a host result: its key column(s), then its output columns.
template <class Result, class F>
void for_each_result_vector(Result& r, F&& f) {
  if constexpr (requires { r.keys.columns; }) {
    std::apply([&](auto&... column) { (f(column), ...); }, r.keys.columns);
  } else {
    f(r.keys);
  }
  std::apply([&](auto&... column) { (f(column), ...); }, r.columns);
}

/// Where each column of a host result starts: its key column(s), then its output columns.
template <class Result>
std::vector<void*> result_column_data(Result& r) {
  std::vector<void*> data;
  for_each_result_vector(r, [&](auto& v) { data.push_back(v.data()); });
  return data;
}

/// Every column of `r` sized to `n` rows, about to be overwritten: the large columns' pages
/// faulted in by several threads, all columns at once, then each column sized (its zeros written)
/// on a thread of its own. The largest column's zeros, one thread's memset that `resize` cannot
/// share, bound the time. Every column reserves `capacity` rows where that is more than n
/// (address space: the pages beyond n are not touched).
template <class Result>
void size_result_for_copy(Result& r, std::size_t n, std::size_t capacity = 0) {
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  std::vector<std::pair<unsigned char*, std::size_t>> regions;
  for_each_result_vector(r, [&](auto& v) {
    if (auto region = reserve_for_touch(v, n, capacity)) regions.push_back(*region);
  });
  touch_pages(regions, threads);
  std::vector<std::jthread> sizing;
  for_each_result_vector(r, [&](auto& v) {
    if (n * sizeof(v[0]) < min_prefaulted_bytes) {
      resize_for_copy(v, n, capacity);
      return;
    }
    sizing.emplace_back([&v, n] { v.resize(n); });
  });
}

/// A host result whose columns a thread of their own sizes while the device aggregates
/// (presized_result_rows), their columns reserving half as many rows again without
/// touching them. take(n) waits for that thread and hands them over sized to n rows, when they
/// were sized for no more than twice n (no result touches more than twice the memory it
/// needs) and reserved for n or more: an estimate up to a third low still fits, its missing rows
/// (a few percent of the result's pages, where the estimate was close) faulted in by the caller.
/// Otherwise FINALIZE sizes the result itself, as without this.
inline constexpr double presized_reserve_factor = 1.5;
template <class Result>
class presized_result {
 public:
  presized_result() = default;
  explicit presized_result(std::uint64_t rows) {
    if (rows == 0) return;
    rows_ = static_cast<std::size_t>(rows);
    sizing_ = std::async(std::launch::async, [n = rows_, reserved = reserved()] {
      Result r;
      size_result_for_copy(r, n, reserved);
      return r;
    });
  }

  /// The result sized for `n` rows, or nothing (none was started, it does not fit `n`, or the
  /// memory for it was not there: FINALIZE then sizes the result and reports what is missing).
  std::optional<Result> take(std::size_t n) {
    if (!sizing_.valid()) return std::nullopt;
    std::optional<Result> r;
    try {
      r = sizing_.get();
    } catch (const std::exception&) {  // bad_alloc: FINALIZE's own sizing says so where it is
      return std::nullopt;
    }
    if (reserved() < n || rows_ / 2 > n) return std::nullopt;
    for_each_result_vector(*r, [n](auto& v) { v.resize(n); });
    return r;
  }

 private:
  std::size_t reserved() const noexcept { return static_cast<std::size_t>(double(rows_) * presized_reserve_factor); }

  std::size_t rows_ = 0;
  std::future<Result> sizing_;
};

/// `out`'s columns sized to `n` rows: those `early` sized while the device aggregated where
/// they fit (presized_result::take), else sized here. Returns whether `early`'s were taken.
template <class Result>
bool size_result(Result& out, std::size_t n, presized_result<Result>* early) {
  auto sized = early != nullptr ? early->take(n) : std::nullopt;
  if (sized) {
    out = std::move(*sized);
    return true;
  }
  size_result_for_copy(out, n);
  return false;
}

/// A large staged read is split into reads of this many bytes, each copied out by the host
/// while the next ones still transfer: the link's transfer and the host's copy, each several
/// milliseconds for a result of 2^24 groups, then overlap instead of following each other.
inline constexpr std::uint64_t staged_read_chunk_bytes = std::uint64_t{16} << 20;

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
    // Each read or write starts on a 64-byte boundary: room for that rounding of every copy,
    // and of every chunk of a read split into staged_read_chunk_bytes.
    const std::uint64_t slots = copies + total_bytes / staged_read_chunk_bytes + 8;
    auto [buffer, size_class] = ctx.pooled_pinned(total_bytes + 64 * slots, "pinned staging for a host copy");
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
                   const char* what, std::uint64_t offset = 0) {
    char* at = next(bytes);
    queue_ = &queue;
    check(queue.enqueueReadBuffer(from, CL_FALSE, offset, bytes, at, nullptr, done), what);
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
