#pragma once
// The exchange of partial aggregates between ranks (gpuagg::mpi::group_by): each partial group
// goes to the rank that owns its key (owner_rank), and optionally the finalized groups of every
// rank to one rank.
//
// Buffers per column, not packed: a partial aggregate is column-wise already (partial_groups:
// the keys, then one vector per accumulator) and absorb() copies it to the device column by
// column, so one MPI_Alltoallv per column receives straight into the vectors absorb() reads.
// A packed record per group would save the latency of one collective per accumulator at the
// price of a pack pass on every sender and an unpack pass on every receiver over all the bytes,
// and of padding or unaligned reads where a 4-byte key sits beside 8-byte accumulators; at the
// partial sizes where the exchange costs anything (10^5 groups and more) the bytes dominate.

#include <bit>
#include <chrono>
#include <climits>
#include <cstdint>
#include <exception>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../../error.hpp"
#include "../owner.hpp"
#include "../../result.hpp"
#include "communicator.hpp"

namespace gpuagg::mpi {

/// The hash that assigns a key to its owner rank (detail/owner.hpp).
constexpr std::uint64_t owner_hash(std::uint64_t key_bits) noexcept { return gpuagg::detail::owner_hash(key_bits); }

/// The rank of `ranks` that owns the group whose table word is `key_bits` (the key policy's
/// to_bits(key)): detail::owner_of, the owner a multi-device query's members agree on too.
constexpr int owner_rank(std::uint64_t key_bits, int ranks) noexcept {
  return static_cast<int>(gpuagg::detail::owner_of(key_bits, static_cast<std::uint32_t>(ranks)));
}

/// One rank's part in a distributed query. Bytes count partial groups (table word and
/// accumulators, partial_groups::entry_bytes each) that travel between ranks; a rank's own
/// groups stay in its memory and are not counted as sent or received.
struct exchange_stats {
  std::uint64_t rows = 0;             ///< this rank's input rows
  std::uint64_t partial_groups = 0;   ///< groups of its rows (its partial aggregate)
  std::uint64_t groups_sent = 0;      ///< of those, owned by other ranks: sent
  std::uint64_t groups_kept = 0;      ///< of those, owned by this rank: kept
  std::uint64_t groups_received = 0;  ///< partial groups other ranks sent to this one
  std::uint64_t bytes_sent = 0;
  std::uint64_t bytes_received = 0;
  std::uint64_t owned_groups = 0;     ///< groups this rank finalized (its share of the result)
  double local_seconds = 0;           ///< aggregating its rows and exporting the partial
  double exchange_seconds = 0;        ///< partitioning by owner and MPI_Alltoallv
  double merge_seconds = 0;           ///< absorbing what it owns and FINALIZE

  static constexpr std::size_t words = 11;
  std::vector<std::uint64_t> encode() const {
    return {rows,           partial_groups, groups_sent,
            groups_kept,    groups_received, bytes_sent,
            bytes_received, owned_groups,   std::bit_cast<std::uint64_t>(local_seconds),
            std::bit_cast<std::uint64_t>(exchange_seconds), std::bit_cast<std::uint64_t>(merge_seconds)};
  }
  static exchange_stats decode(const std::uint64_t* w) {
    return {w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], std::bit_cast<double>(w[8]), std::bit_cast<double>(w[9]),
            std::bit_cast<double>(w[10])};
  }
};

namespace detail {

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Sends each group of `mine` to its owner and returns the groups this rank owns, its own
/// included, in rank order. Collective; every rank passes a partial of the same query.
template <class Partial>
Partial exchange(const communicator& comm, const Partial& mine, exchange_stats& stats) {
  const auto start = std::chrono::steady_clock::now();
  const int ranks = comm.size();
  const auto self = static_cast<std::size_t>(comm.rank());
  const std::size_t n = mine.size();

  std::vector<int> owner(n);
  std::vector<std::uint64_t> send_counts(static_cast<std::size_t>(ranks), 0);
  for (std::size_t i = 0; i < n; ++i) {
    owner[i] = owner_rank(static_cast<std::uint64_t>(mine.keys[i]), ranks);
    ++send_counts[static_cast<std::size_t>(owner[i])];
  }
  std::vector<std::uint64_t> recv_counts(static_cast<std::size_t>(ranks), 0);
  check_mpi(MPI_Alltoall(send_counts.data(), 1, MPI_UINT64_T, recv_counts.data(), 1, MPI_UINT64_T, comm.get()),
            "MPI_Alltoall (partial group counts)");
  std::uint64_t received = 0;
  for (const auto c : recv_counts) received += c;

  // MPI's counts and displacements are ints (of elements: element_type); a rank over that
  // range says so before any rank enters MPI_Alltoallv.
  std::exception_ptr too_large;
  if (n > INT_MAX || received > INT_MAX) {
    too_large = std::make_exception_ptr(unsupported_error(
        "gpuagg::mpi::group_by: a rank would send " + std::to_string(n) + " and receive " + std::to_string(received) +
        " partial groups; one exchange holds at most " + std::to_string(INT_MAX) + " a rank"));
  }
  comm.agree(too_large);

  std::vector<int> sc(static_cast<std::size_t>(ranks)), sd(sc.size()), rc(sc.size()), rd(sc.size());
  int send_at = 0, recv_at = 0;
  for (std::size_t r = 0; r < sc.size(); ++r) {
    sc[r] = static_cast<int>(send_counts[r]);
    rc[r] = static_cast<int>(recv_counts[r]);
    sd[r] = send_at;
    rd[r] = recv_at;
    send_at += sc[r];
    recv_at += rc[r];
  }
  // Each group's place in the send buffers: grouped by owner, in input order within an owner.
  std::vector<std::uint32_t> slot(n);
  {
    std::vector<int> next = sd;
    for (std::size_t i = 0; i < n; ++i) slot[i] = static_cast<std::uint32_t>(next[static_cast<std::size_t>(owner[i])]++);
  }

  Partial out;
  const auto send_column = [&](const auto& column, auto& into) {
    using T = typename std::remove_cvref_t<decltype(column)>::value_type;
    std::vector<T> send(n);
    for (std::size_t i = 0; i < n; ++i) send[slot[i]] = column[i];
    into.resize(static_cast<std::size_t>(received));
    const element_type type(sizeof(T));
    check_mpi(MPI_Alltoallv(send.data(), sc.data(), sd.data(), type.get(), into.data(), rc.data(), rd.data(),
                            type.get(), comm.get()),
              "MPI_Alltoallv (partial groups)");
  };
  send_column(mine.keys, out.keys);
  [&]<std::size_t... J>(std::index_sequence<J...>) {
    (send_column(std::get<J>(mine.accumulators), std::get<J>(out.accumulators)), ...);
  }(std::make_index_sequence<std::tuple_size_v<decltype(mine.accumulators)>>{});

  stats.partial_groups = n;
  stats.groups_kept = send_counts[self];
  stats.groups_sent = n - send_counts[self];
  stats.groups_received = received - recv_counts[self];
  stats.bytes_sent = stats.groups_sent * Partial::entry_bytes;
  stats.bytes_received = stats.groups_received * Partial::entry_bytes;
  stats.exchange_seconds = seconds_since(start);
  return out;
}

/// Gathers every rank's groups of a finalized result on `root` (rank order); the other ranks
/// are left with none. `owned[r]`: rank r's groups, known on every rank. Collective.
template <class KeyPolicy, class Result>
void gather(const communicator& comm, int root, Result& r, const std::vector<std::uint64_t>& owned) {
  std::uint64_t total = 0;
  for (const auto g : owned) total += g;
  // Every rank knows every count: all throw together, before any collective.
  if (total > INT_MAX) {
    throw unsupported_error("gpuagg::mpi::group_by: gathering " + std::to_string(total) +
                            " groups on one rank; a gather holds at most " + std::to_string(INT_MAX));
  }
  std::vector<int> counts(owned.size()), displs(owned.size());
  int at = 0;
  for (std::size_t q = 0; q < owned.size(); ++q) {
    counts[q] = static_cast<int>(owned[q]);
    displs[q] = at;
    at += counts[q];
  }
  const bool is_root = comm.rank() == root;
  Result all;
  if (is_root) {
    all.keys.resize(static_cast<std::size_t>(total));
    std::apply([&](auto&... column) { (column.resize(static_cast<std::size_t>(total)), ...); }, all.columns);
  }
  const int mine = static_cast<int>(r.size());
  const auto gather_column = [&](const void* send, void* recv, std::size_t bytes) {
    const element_type type(bytes);
    check_mpi(MPI_Gatherv(send, mine, type.get(), recv, counts.data(), displs.data(), type.get(), root, comm.get()),
              "MPI_Gatherv (result groups)");
  };
  for (std::size_t c = 0; c < KeyPolicy::columns; ++c) {
    gather_column(gpuagg::detail::key_column_data(r.keys, c),
                  is_root ? gpuagg::detail::key_column_data(all.keys, c) : nullptr, KeyPolicy::column_bytes[c]);
  }
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (gather_column(std::get<I>(r.columns).data(), is_root ? std::get<I>(all.columns).data() : nullptr,
                   sizeof(typename std::tuple_element_t<I, decltype(r.columns)>::value_type)),
     ...);
  }(std::make_index_sequence<std::tuple_size_v<decltype(r.columns)>>{});
  r.keys = std::move(all.keys);
  r.columns = std::move(all.columns);
  r.stats.groups = r.size();
}

}  // namespace detail
}  // namespace gpuagg::mpi
