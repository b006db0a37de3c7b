#pragma once
// DECISION: the rows of the next block a device takes from the shared queue of a multi-device
// query. Everything that sets a block's size across devices is here.
//
// Each device takes the next block when it has a free slot (block_queue.hpp), so a slow device
// takes fewer blocks with no split fixed in advance. Full blocks (the device's own plan:
// block_rows(), its staging buffers' size) keep the per-block cost (a launch, a counter read,
// about 20 to 50 us on a GPU, more on PoCL) small against the block's work. What full blocks
// get wrong is the end: the query waits for the last block of the slowest device, and a CPU
// taking a 4 Mi-row block while a GPU could do it in a tenth of the time holds the query up by
// that block. So, as rows run out, a device's block shrinks to about half of the rows it
// would do, at its measured share of the set's throughput, in the time the whole set needs for
// what is left (guided self-scheduling, weighted by speed): every device then finishes its
// last block at about the same moment. A floor keeps the per-block cost bounded.

#include <algorithm>
#include <cstdint>

namespace gpuagg::detail {

/// Smallest block handed out while rows remain (or the device's limit if that is smaller):
/// 2^18 rows are about 40 us of a GPU fed at the PCIe rate (about 7 G rows/s of 8-byte rows),
/// no less than the cost of running a block.
inline constexpr std::uint64_t min_shared_block_rows = std::uint64_t{1} << 18;

/// Rows of the next block for a device whose driver takes at most `limit` rows a block, when
/// `remaining` rows are not handed out yet and the device has done `share` (0 to 1; 0 when not
/// measured yet) of the rows the set has done per second.
inline std::uint64_t next_block_rows(std::uint64_t limit, std::uint64_t remaining, double share) {
  const std::uint64_t floor = std::min(limit, min_shared_block_rows);
  std::uint64_t rows = limit;
  if (share > 0) {
    const double fair = 0.5 * share * double(remaining);
    rows = std::clamp<std::uint64_t>(static_cast<std::uint64_t>(fair), floor, limit);
  }
  return std::min(rows, remaining);
}

}  // namespace gpuagg::detail
