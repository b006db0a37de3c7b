#pragma once
// DECISION: which members copy a host column as it lies, without the staging copy that
// pageable memory needs (runtime/readback.hpp, driver/buffers.hpp: make_staging).
//
// - A CPU device reads host memory as it is: a staging copy would only be a second pass over the
//   same memory bus.
// - A GPU reads memory pinned in another member's context of its own platform (a pinned_array
//   of the first member, shared through the block queue) directly. The platform's driver
//   page-locked that memory for the whole process, so the GPU's DMA reads it at the link's
//   rate. Staged, every byte first crossed the host's memory once more on the copy threads: on
//   two H200s the second GPU then took 36-43% of the rows, and the query at 2^10 groups ran at
//   1.45-1.59x one GPU, against 1.83-1.84x read directly (docs/multi_device.md).
// Memory pinned by another platform's context stays staged: whether one vendor's driver sees
// another's page-locked memory as such is not known.

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "../column.hpp"
#include "../device_info.hpp"
#include "device_set.hpp"

namespace gpuagg::detail {

/// Whether `member` copies a host column as it lies: `pinned_by_platform_peer` says whether another
/// member of its platform pinned the column's memory.
inline bool reads_host_in_place(const device_info& member, bool pinned_by_platform_peer) {
  return member.architecture == "cpu" || pinned_by_platform_peer;
}

/// For the query's duration, the host columns that a member reads in place
/// (reads_host_in_place) count as pinned memory of its context.
class members_read_in_place {
 public:
  members_read_in_place() = default;
  /// Every member reads every one of `columns` (a shared queue hands any rows to any member).
  members_read_in_place(const device_set& devices, const std::vector<column_data>& columns) {
    for (std::size_t i = 0; i < devices.size(); ++i) add(devices, i, columns);
  }
  members_read_in_place(const members_read_in_place&) = delete;
  members_read_in_place& operator=(const members_read_in_place&) = delete;
  ~members_read_in_place() {
    for (const auto& [ctx, data] : registered_) ctx->unregister_pinned(data);
  }

  /// Member `i` reads `columns`.
  void add(const device_set& devices, std::size_t i, const std::vector<column_data>& columns) {
    context& member = devices[i];
    if (stages_.size() <= i) stages_.resize(i + 1, false);
    for (const auto& c : columns) {
      const std::uint64_t bytes = std::uint64_t(c.rows) * c.element_size;
      if (c.host == nullptr || bytes == 0 || member.is_pinned(c.host, bytes)) continue;
      bool peer = false;
      for (std::size_t j = 0; j < devices.size() && !peer; ++j) {
        peer = j != i && devices[j].info().platform_name == member.info().platform_name &&
               devices[j].is_pinned(c.host, bytes);
      }
      if (!reads_host_in_place(member.info(), peer)) {
        stages_[i] = true;
        continue;
      }
      member.register_pinned(c.host, bytes);
      registered_.emplace_back(&member, c.host);
    }
  }

  /// Whether member `i` copies some column through host staging (pageable memory it neither
  /// finds pinned nor reads in place).
  bool stages(std::size_t i) const { return i < stages_.size() && stages_[i]; }

 private:
  std::vector<std::pair<context*, const void*>> registered_;
  std::vector<bool> stages_;
};

}  // namespace gpuagg::detail
