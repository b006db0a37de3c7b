#pragma once
// Copies from pageable host memory into pinned staging buffers with several threads: one
// thread's memcpy (about 10 GB/s) is well below what a PCIe 5 link takes from pinned memory.

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <thread>
#include <vector>

namespace gpuagg::detail {

/// memcpy split across up to `max_threads` threads, each with at least `min_chunk` bytes.
inline void parallel_copy(void* destination, const void* source, std::size_t bytes, unsigned max_threads = 8,
                          std::size_t min_chunk = std::size_t{1} << 20) {
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const auto threads = static_cast<unsigned>(
      std::min<std::size_t>({max_threads, hardware, std::max<std::size_t>(bytes / min_chunk, 1)}));
  auto* to = static_cast<char*>(destination);
  const auto* from = static_cast<const char*>(source);
  if (threads <= 1) {
    std::memcpy(to, from, bytes);
    return;
  }
  const std::size_t chunk = (bytes / threads + 63) / 64 * 64;
  std::vector<std::jthread> helpers;
  helpers.reserve(threads - 1);
  for (unsigned t = 1; t < threads; ++t) {
    const std::size_t begin = std::min(bytes, t * chunk);
    const std::size_t end = std::min(bytes, begin + chunk);
    if (begin < end) helpers.emplace_back([=] { std::memcpy(to + begin, from + begin, end - begin); });
  }
  std::memcpy(to, from, std::min(bytes, chunk));
}

}  // namespace gpuagg::detail
