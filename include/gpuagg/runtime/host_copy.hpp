#pragma once
// Copies from pageable host memory into pinned staging buffers with several threads: one
// thread's memcpy (about 10 GB/s) is well below what a PCIe 5 link takes from pinned memory.
// The threads are started once per process and wait between copies: starting fresh threads for
// every block cost a fifth of the copy time at 16 MiB blocks.

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace gpuagg::detail {

/// A fixed set of threads that run the parts of one job at a time; the caller runs part 0.
class copy_pool {
 public:
  /// Starts a thread (std::thread by default; tests pass one that fails).
  using thread_starter = std::function<std::thread(std::function<void()>)>;

  /// Up to `helpers` threads: where the system refuses one (std::system_error), the pool keeps
  /// those it has, and its jobs run in fewer parts, rather than fail every query of the process.
  explicit copy_pool(unsigned helpers, const thread_starter& start = {}) {
    for (unsigned i = 0; i < helpers; ++i) {
      try {
        std::function<void()> body = [this, i] { work(i + 1); };
        threads_.push_back(start ? start(std::move(body)) : std::thread(std::move(body)));
      } catch (const std::system_error&) {
        break;
      }
    }
  }
  copy_pool(const copy_pool&) = delete;
  copy_pool& operator=(const copy_pool&) = delete;
  ~copy_pool() {
    {
      const std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }

  unsigned helpers() const noexcept { return static_cast<unsigned>(threads_.size()); }

  /// Runs part(0) .. part(parts - 1), parts <= helpers() + 1, and returns when all are done.
  /// One job at a time (callers are serialized). A part that throws does not stop the others:
  /// run waits for all (they use the caller's `part`), then throws the first exception.
  void run(unsigned parts, const std::function<void(unsigned)>& part) {
    const std::lock_guard one_job(job_mutex_);
    {
      const std::lock_guard lock(mutex_);
      part_ = &part;
      parts_ = parts;
      pending_ = parts > 0 ? parts - 1 : 0;
      ++generation_;
    }
    wake_.notify_all();
    std::exception_ptr failure;
    if (parts > 0) {
      try {
        part(0);
      } catch (...) {
        failure = std::current_exception();
      }
    }
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return pending_ == 0; });
    part_ = nullptr;
    if (auto helpers_failure = std::exchange(failure_, nullptr); !failure) failure = std::move(helpers_failure);
    lock.unlock();
    if (failure) std::rethrow_exception(failure);
  }

  /// The process's pool: one helper per hardware thread beyond the caller's, at most 15.
  static copy_pool& instance() {
    static copy_pool pool(std::min(15u, std::max(1u, std::thread::hardware_concurrency()) - 1));
    return pool;
  }

 private:
  void work(unsigned index) {
    std::uint64_t seen = 0;
    for (;;) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (index >= parts_) continue;
      const auto* part = part_;
      lock.unlock();
      std::exception_ptr failure;
      try {
        (*part)(index);
      } catch (...) {
        failure = std::current_exception();
      }
      lock.lock();
      if (failure && !failure_) failure_ = failure;
      if (--pending_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex job_mutex_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(unsigned)>* part_ = nullptr;
  unsigned parts_ = 0;
  unsigned pending_ = 0;
  std::uint64_t generation_ = 0;
  std::exception_ptr failure_;  ///< the first exception a helper's part threw in this job
  bool stop_ = false;
};

/// memcpy split across up to `max_threads` threads (the caller and the pool's helpers), each
/// with at least `min_chunk` bytes.
inline void parallel_copy(void* destination, const void* source, std::size_t bytes, unsigned max_threads = 8,
                          std::size_t min_chunk = std::size_t{1} << 20) {
  auto* to = static_cast<char*>(destination);
  const auto* from = static_cast<const char*>(source);
  if (max_threads <= 1 || bytes < 2 * min_chunk) {
    std::memcpy(to, from, bytes);
    return;
  }
  auto& pool = copy_pool::instance();
  const auto parts = static_cast<unsigned>(
      std::min<std::size_t>({max_threads, pool.helpers() + 1, std::max<std::size_t>(bytes / min_chunk, 1)}));
  const std::size_t chunk = (bytes / parts + 63) / 64 * 64;
  pool.run(parts, [&](unsigned p) {
    const std::size_t begin = std::min(bytes, p * chunk);
    const std::size_t end = p + 1 == parts ? bytes : std::min(bytes, begin + chunk);
    if (begin < end) std::memcpy(to + begin, from + begin, end - begin);
  });
}

}  // namespace gpuagg::detail
