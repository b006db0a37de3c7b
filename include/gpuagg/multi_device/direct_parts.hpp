#pragma once
// DECISION: whether the parts of a multi-device query (group_by_parts) run direct addressing.
//
// Each member's set-up plans its own part as group_by plans one device; where that plan takes
// direct addressing over the part's exact key range (plan/direct_table.hpp), the set-up stops and
// hands the query over (driver/shared_estimate.hpp: direct_handover). Partials of direct
// addressing merge only over one domain (a partial's key outside the merging table's domain has
// no bucket), so the parts run it together, over the union of their ranges, and only where every
// member's plan takes that union too: its table no larger than the hash table the member's own
// part would get. Parts of one column split by rows share most of their range, so the union
// costs little; parts over disjoint ranges (split by key) keep their hash tables rather than
// each address a domain many times its own.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "../driver/shared_estimate.hpp"
#include "../plan/inputs.hpp"

namespace gpuagg::detail {

/// The range every part addresses directly, or nothing (every part keeps its hash table):
/// the union of the members' ranges, where each member's set-up handed its part over to direct
/// addressing (`handovers`) and `takes(i, range)` says member i's plan takes the union. A range
/// starts at a key's word and runs `extent` keys on in the key's order, which for a signed key is
/// its words with the top bit (`sign_bit`; 0 for an unsigned key) flipped: the union is taken in
/// that order, so that ranges on both sides of zero, or of the word's wrap, join as keys do.
template <class Takes>
std::optional<exact_key_range> common_direct_range(const std::vector<direct_handover>& handovers,
                                                   std::uint64_t sign_bit, Takes&& takes) {
  if (handovers.empty()) return std::nullopt;
  std::uint64_t lowest = 0, highest = 0;  // in the key's order
  for (std::size_t i = 0; i < handovers.size(); ++i) {
    const auto& range = handovers[i].range;
    if (!range) return std::nullopt;
    const std::uint64_t low = range->lowest ^ sign_bit;
    lowest = i == 0 ? low : std::min(lowest, low);
    highest = i == 0 ? low + range->extent : std::max(highest, low + range->extent);
  }
  const exact_key_range all{lowest ^ sign_bit, highest - lowest};
  for (std::size_t i = 0; i < handovers.size(); ++i) {
    if (!takes(i, all)) return std::nullopt;
  }
  return all;
}

}  // namespace gpuagg::detail
