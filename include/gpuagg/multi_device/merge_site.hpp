#pragma once
// DECISION: how and where the partial aggregates of a multi-device query merge. Everything that
// chooses the merge's form and location is here.
//
// On devices, never on the host: the merge is the driver's own absorb() (upload the partial,
// MERGE into the table, grown first where the groups it adds need room) followed by FINALIZE,
// the code path the single-device query already trusts for every aggregate, key type and
// scheme. A host merge would need a second implementation of every accumulator's combine and of
// every output's finalization. It would also be slower where merging costs anything: at 2^24
// groups a partial is 2^24 entries (a key word and the accumulators, 16 bytes for sum over
// 32-bit keys), which a GPU merges in a few milliseconds after a copy at the PCIe rate, where a
// host hash table of 2^24 entries takes on the order of a second on one thread (about 60 ns a
// cache-missing insert). (On PoCL the "device" is the host anyway.)
//
// Two forms:
// - one site: the others' partials merge on the member that aggregated the most rows (its own
//   table, usually the largest and on the fastest device, stays where it is), which finalizes
//   every group and copies the whole result to the host;
// - by owner: each group belongs to one member (detail/owner.hpp); every member sends each
//   other member the groups that one owns, takes in what it is sent, and finalizes and copies
//   its own share into the result, all members at once. Where partials are large (most rows'
//   groups distinct per member), one site moves (n-1) whole partials through one device and
//   then one device finalizes and one link copies every group; by owner moves (n-1)/n of each
//   partial, concurrently, and splits FINALIZE and the result's copy n ways. Where partials are
//   small both are a few host waits, and one site has fewer of them.
// CPU members (PoCL) merge at one site: their share of FINALIZE would run on the cores the
// query's host work and the GPU's copies need, at a fraction of a GPU's speed.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <vector>

namespace gpuagg::detail {

/// The member that merges at one site, given the rows each member aggregated (the first of
/// equals); also the member whose statistics stand for the query's.
inline std::size_t merge_site(const std::vector<std::uint64_t>& rows_per_device) {
  std::size_t site = 0;
  for (std::size_t i = 1; i < rows_per_device.size(); ++i) {
    if (rows_per_device[i] > rows_per_device[site]) site = i;
  }
  return site;
}

enum class merge_form { one_site, by_owner };

/// Partials of at least this many groups (the largest member's planned groups) merge by owner:
/// where each member's partial holds millions of groups, one site takes in n - 1 of them one
/// after another, while by owner splits that work and FINALIZE n ways at the price of two more
/// waits on each member; at a million groups and below the waits cost more than the split saves
/// (docs/decisions.md has the measurements).
inline constexpr std::uint64_t by_owner_min_groups = std::uint64_t{1} << 22;

/// GPUAGG_MERGE=one-site or by-owner; nothing when unset or anything else.
inline std::optional<merge_form> forced_merge_form() {
  const char* forced = std::getenv("GPUAGG_MERGE");
  if (forced == nullptr) return std::nullopt;
  if (std::string_view(forced) == "one-site") return merge_form::one_site;
  if (std::string_view(forced) == "by-owner") return merge_form::by_owner;
  return std::nullopt;
}

/// How the partials merge: `members` with rows (the owners), whether any of them is a CPU
/// device, and the groups the member with the most rows planned for. GPUAGG_MERGE overrides
/// the rule wherever there are two members to merge (the tests run by owner on PoCL with it).
inline merge_form choose_merge_form(std::size_t members, bool any_cpu, std::uint64_t planned_groups) {
  if (members < 2) return merge_form::one_site;
  if (const auto forced = forced_merge_form()) return *forced;
  return !any_cpu && planned_groups >= by_owner_min_groups ? merge_form::by_owner : merge_form::one_site;
}

}  // namespace gpuagg::detail
