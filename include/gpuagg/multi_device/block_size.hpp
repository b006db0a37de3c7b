#pragma once
// DECISION: the rows of the next block a device takes from the shared queue of a multi-device
// query, and whether it takes one at all. Everything that sets a block's size across devices
// is here.
//
// Each device takes the next block when it has a free slot (block_queue.hpp), so a slow device
// takes fewer blocks with no split fixed in advance. Three rules:
// - Probe first. Until a device has finished two blocks its speed is unknown (the first carries
//   its start in the query: block_queue.hpp), and a full block
//   (the device's own plan: block_rows(), 4 Mi rows of host input) taken by a slow member at the
//   start can outlast the fast member's whole query (a CPU at 0.4 G rows/s beside a GPU fed at
//   6 G rows/s: two 4 Mi-row blocks take the CPU 20 ms, the GPU's whole 2^27-row query 21 ms).
//   So in a set of several, a device's first blocks have the floor's size; the others' speeds
//   count as they become known.
// - Then full blocks while many rows remain, and near the end a device's block shrinks to about
//   half of the rows it would do, at its measured share of the set's throughput, in the time
//   the whole set needs for what is left (guided self-scheduling, weighted by speed): every
//   device then finishes its last block at about the same moment. A floor keeps the per-block
//   cost (a launch, a counter read: 20 to 50 us on a GPU, more on PoCL) small.
// - A device whose floor-sized block would end after the others finish every remaining row
//   without it (the block exceeds its share of what is left) takes no more blocks: a slow
//   member must never hold the query up.
// - Blocks grow at most twofold from one to the next (from the probes' floor to the device's
//   limit): a device is compared with the others on blocks of similar size (below), and a
//   slow one has spent little when it is found slow.
// - A device measured slower than min_relative_speed of the set's fastest member takes no more
//   blocks either, however many rows are left. Speeds compare blocks of like size (within a
//   factor of two of each other's rows: block_queue.hpp), the largest size both have run. A
//   small block is mostly its fixed cost, so a device measured on its first doublings beside
//   one measured on full blocks would look several times slower than it is, and an equal GPU
//   would sit out queries it halves. Such a member (PoCL's CPU device beside a GPU
//   fed from host memory does 1/20 of its rows per second) shares what the fast one needs: the
//   host's memory bus and its cores, which stage a GPU's pageable input and drive its queue.
//   What it adds is less than it takes: on the H100 machine the GPU alone ran 2^27 pageable
//   rows in 31 ms, beside the CPU taking blocks to the end in 105 ms.
//   A member of the fastest member's own device model is judged only on a block of its full
//   size (block_queue.hpp): equal kernels, and a fixed cost per block on its path to the rows
//   (host memory pinned in another member's context) that a probe overweights.

#include <algorithm>
#include <cstdint>

namespace gpuagg::detail {

/// Smallest block handed out while rows remain (or the device's limit if that is smaller):
/// 2^18 rows are about 40 us of a GPU fed at the PCIe rate (about 7 G rows/s of 8-byte rows),
/// no less than the cost of running a block.
inline constexpr std::uint64_t min_shared_block_rows = std::uint64_t{1} << 18;

/// A measured member slower than this share of the fastest member's rows per second takes no
/// more blocks. Equal devices are never near it (each is 1.0 of the fastest); a set that adds
/// a device of a tenth of the others' speed would gain at most a tenth.
inline constexpr double min_relative_speed = 1.0 / 8;

/// Whether a member whose speed is `relative` of the fastest member's is too slow to help: the
/// one test of min_relative_speed, for the queue during a query and for the verdict after it
/// (participation.hpp).
constexpr bool too_slow_to_help(double relative) noexcept { return relative < min_relative_speed; }

/// Rows of the next block for a device whose driver takes at most `limit` rows a block, when
/// `remaining` rows are not handed out yet and the device does `share` (0 to 1) of the rows the
/// members whose speed is known do per second; `measured`: whether this device's speed is
/// known (block_queue.hpp), `alone`: it is the only member taking blocks; `relative`: its speed over
/// the fastest measured member's on blocks of like size (1 for the fastest); `previous`: the
/// rows of the last block it took (0: none), which the next at most doubles. 0: the device
/// takes no more blocks.
inline std::uint64_t next_block_rows(std::uint64_t limit, std::uint64_t remaining, double share, bool measured,
                                     bool alone, double relative = 1.0, std::uint64_t previous = 0) {
  const std::uint64_t floor = std::min(limit, min_shared_block_rows);
  if (remaining == 0) return 0;
  if (alone) return std::min(limit, remaining);
  if (!measured) return std::min(floor, remaining);
  if (too_slow_to_help(relative)) return 0;
  const double due = share * double(remaining);  // its rows if all finished together
  if (double(std::min(floor, remaining)) > due && share < 0.5) return 0;
  const double fair = 0.5 * due;
  const std::uint64_t most = previous == 0 ? limit : std::clamp<std::uint64_t>(2 * previous, floor, limit);
  const auto rows = std::clamp<std::uint64_t>(static_cast<std::uint64_t>(fair), floor, most);
  return std::min(rows, remaining);
}

}  // namespace gpuagg::detail
