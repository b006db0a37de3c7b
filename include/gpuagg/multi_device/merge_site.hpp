#pragma once
// DECISION: where the partial aggregates of a multi-device query merge. Everything that
// chooses the merge location is here.
//
// On a device, never on the host: the merge is the driver's own absorb() (upload the partial,
// MERGE into the table, grown first where needed) followed by the one FINALIZE, the code path
// the single-device query already trusts for every aggregate, key type and scheme. A host merge
// would need a second implementation of every accumulator's combine and of every output's
// finalization. It would also be slower where merging costs anything: at 2^24 groups a
// partial is 2^24 entries (a key word and the accumulators, 16 bytes for sum over 32-bit keys),
// which a GPU merges in a few milliseconds after a copy at the PCIe rate, where a host hash
// table of 2^24 entries takes on the order of a second on one thread (about 60 ns a cache-
// missing insert). At 2^10 groups either is microseconds. (On PoCL the "device" is the host
// anyway.)
//
// Which device: the one that aggregated the most rows. Its own table, usually the largest and
// on the fastest device, stays where it is; only the others' partials travel (down from their
// devices, up to it).

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpuagg::detail {

/// The member that merges, given the rows each member aggregated (the first of equals).
inline std::size_t merge_site(const std::vector<std::uint64_t>& rows_per_device) {
  std::size_t site = 0;
  for (std::size_t i = 1; i < rows_per_device.size(); ++i) {
    if (rows_per_device[i] > rows_per_device[site]) site = i;
  }
  return site;
}

}  // namespace gpuagg::detail
