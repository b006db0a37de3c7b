#pragma once
// What mpi_test.cpp's cases share: the ranks, one seed for all, slices of one input, the
// comparison of a result with the reference, and every rank's expected exchange from the
// input alone. Nothing here aborts a test case: a failing check on one rank must not leave the
// others waiting in a collective.

#include <mpi.h>

#include <gpuagg/mpi.hpp>

#include <sstream>
#include <unordered_set>

#include "support.hpp"

namespace gpuagg_mpi_test {

using namespace gpuagg;
using namespace gpuagg_test;

inline int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}
inline int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

/// Rank 0's fresh seed on every rank: all ranks draw the same input.
inline std::uint64_t shared_seed() {
  std::uint64_t seed = world_rank() == 0 ? fresh_seed() : 0;
  MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return seed;
}

/// The options of most queries here: the plan's choices fixed (a group count, one strategy and
/// configuration, no run cache, hot-key table or partitioning), so a rank builds one program per
/// query shape and no group estimate's. On PoCL the test's time is mostly JIT builds, made by
/// every rank at once on shared cores; the plan's choices are the single-process suites'
/// subject, and one query below takes the default plan.
inline mpi::options fixed_plan() {
  mpi::options opts;
  opts.expected_groups = 4096;
  opts.strategy = strategy_kind::workgroup_local;
  opts.config = launch_config{2, 64};
  opts.run_cache = false;
  opts.hot_table = false;
  opts.partitions = 1;
  return opts;
}

/// Row boundaries of the ranks' slices: rank r gets rows [cuts[r], cuts[r + 1]), r + 1 parts of
/// 1 + 2 + ... + ranks, so the slices differ in size.
inline std::vector<std::size_t> uneven_cuts(std::size_t rows, int ranks) {
  std::vector<std::size_t> cuts{0};
  const std::size_t parts = std::size_t(ranks) * std::size_t(ranks + 1) / 2;
  std::size_t done = 0;
  for (int r = 0; r < ranks; ++r) {
    done += std::size_t(r + 1);
    cuts.push_back(rows * done / parts);
  }
  return cuts;
}

template <class T>
std::span<const T> slice(const std::vector<T>& column, const std::vector<std::size_t>& cuts, int rank) {
  return std::span<const T>(column).subspan(cuts[std::size_t(rank)], cuts[std::size_t(rank) + 1] - cuts[std::size_t(rank)]);
}

/// What differs between `actual` (any order) and `expected` (sorted by key); empty if nothing.
template <class Key, class... Outputs>
std::string mismatch(gpuagg::result<Key, Outputs...> actual, const gpuagg::result<Key, Outputs...>& expected) {
  sort_by_key(actual);
  std::ostringstream out;
  if (actual.size() != expected.size()) {
    out << actual.size() << " groups, want " << expected.size();
    return out.str();
  }
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (!(actual.keys[i] == expected.keys[i])) {
      out << "group " << i << ": key " << show(actual.keys[i]) << ", want " << show(expected.keys[i]);
      return out.str();
    }
  }
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (
        [&] {
          const auto& got = std::get<I>(actual.columns);
          const auto& want = std::get<I>(expected.columns);
          for (std::size_t i = 0; i < want.size() && out.tellp() == 0; ++i) {
            if (!same_value(got[i], want[i])) {
              out << "output " << I << " of key " << show(expected.keys[i]) << ": " << +got[i] << ", want " << +want[i];
            }
          }
        }(),
        ...);
  }(std::index_sequence_for<Outputs...>{});
  return out.str();
}

/// The groups of `r` whose key rank `rank` of `ranks` owns.
template <class KeyPolicy, class Key, class... Outputs>
gpuagg::result<Key, Outputs...> owned_part(const gpuagg::result<Key, Outputs...>& r, int rank, int ranks) {
  std::vector<std::size_t> rows;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (mpi::owner_rank(std::uint64_t(KeyPolicy::to_bits(r.keys[i])), ranks) == rank) rows.push_back(i);
  }
  auto out = r;
  if constexpr (requires { out.keys.permute(rows); }) {
    out.keys.permute(rows);
  } else {
    for (std::size_t i = 0; i < rows.size(); ++i) out.keys[i] = r.keys[rows[i]];
  }
  out.keys.resize(rows.size());
  std::apply(
      [&](auto&... column) {
        ((void)[&] {
           for (std::size_t i = 0; i < rows.size(); ++i) column[i] = column[rows[i]];
           column.resize(rows.size());
         }(),
         ...);
      },
      out.columns);
  return out;
}

/// What every rank's exchange must have been: from the table words of every row and the cuts,
/// each rank's distinct groups (its partial aggregate) and their owners.
inline std::vector<mpi::exchange_stats> expected_exchange(const std::vector<std::uint64_t>& words,
                                                          const std::vector<std::size_t>& cuts, int ranks,
                                                          std::size_t entry_bytes) {
  std::vector<mpi::exchange_stats> out(std::size_t(ranks), mpi::exchange_stats{});
  std::unordered_set<std::uint64_t> all;
  for (int q = 0; q < ranks; ++q) {
    auto& e = out[std::size_t(q)];
    e.rows = cuts[std::size_t(q) + 1] - cuts[std::size_t(q)];
    std::unordered_set<std::uint64_t> groups(words.begin() + std::ptrdiff_t(cuts[std::size_t(q)]),
                                             words.begin() + std::ptrdiff_t(cuts[std::size_t(q) + 1]));
    all.insert(groups.begin(), groups.end());
    e.partial_groups = groups.size();
    for (const auto w : groups) {
      const int owner = mpi::owner_rank(w, ranks);
      if (owner == q) {
        ++e.groups_kept;
      } else {
        ++e.groups_sent;
        ++out[std::size_t(owner)].groups_received;
      }
    }
  }
  for (const auto w : all) ++out[std::size_t(mpi::owner_rank(w, ranks))].owned_groups;
  for (auto& e : out) {
    e.bytes_sent = e.groups_sent * entry_bytes;
    e.bytes_received = e.groups_received * entry_bytes;
  }
  return out;
}

inline void check_exchange(const std::vector<mpi::exchange_stats>& got, const std::vector<mpi::exchange_stats>& want) {
  CHECK(got.size() == want.size());
  for (std::size_t q = 0; q < std::min(got.size(), want.size()); ++q) {
    CAPTURE(q);
    CHECK(got[q].rows == want[q].rows);
    CHECK(got[q].partial_groups == want[q].partial_groups);
    CHECK(got[q].groups_kept == want[q].groups_kept);
    CHECK(got[q].groups_sent == want[q].groups_sent);
    CHECK(got[q].groups_received == want[q].groups_received);
    CHECK(got[q].bytes_sent == want[q].bytes_sent);
    CHECK(got[q].bytes_received == want[q].bytes_received);
    CHECK(got[q].owned_groups == want[q].owned_groups);
  }
}

/// Runs `run(options)` distributed and gathered (to the last rank) and checks both against the
/// reference `expected` over the whole input: this rank's groups, all groups on the gathering
/// rank, and every rank's exchange (`words`: the table word of every row; `cuts`: the slices).
template <class Bound, class Key, class... Outputs, class Run>
void check_distributed(const gpuagg::result<Key, Outputs...>& expected, const std::vector<std::uint64_t>& words,
                       const std::vector<std::size_t>& cuts, Run run, mpi::options opts = fixed_plan()) {
  const int rank = world_rank();
  const int ranks = world_size();
  using partial = typename gpuagg::detail::partial_type_for<Bound>::type;
  const auto want = expected_exchange(words, cuts, ranks, partial::entry_bytes);

  opts.gather_to.reset();
  const auto distributed = run(opts);
  opts.gather_to = ranks - 1;
  const auto gathered = run(opts);

  CHECK(distributed.rank == rank);
  CHECK(distributed.ranks == ranks);
  CHECK_FALSE(distributed.gathered);
  const auto mine = owned_part<typename Bound::key>(expected, rank, ranks);
  const auto wrong = mismatch(distributed, mine);
  CHECK_MESSAGE(wrong.empty(), "rank " << rank << "'s groups: " << wrong);
  CHECK(distributed.stats.groups == mine.size());
  check_exchange(distributed.all_ranks, want);
  CHECK(distributed.exchange.bytes_sent == want[std::size_t(rank)].bytes_sent);

  CHECK(gathered.gathered);
  if (rank == ranks - 1) {
    const auto wrong_gathered = mismatch(gathered, expected);
    CHECK_MESSAGE(wrong_gathered.empty(), "gathered: " << wrong_gathered);
  } else {
    CHECK(gathered.size() == 0);
  }
  check_exchange(gathered.all_ranks, want);
}

/// The table word of every key, for expected_exchange.
template <class KeyPolicy, class Key>
std::vector<std::uint64_t> words_of(const std::vector<Key>& keys) {
  std::vector<std::uint64_t> words(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) words[i] = std::uint64_t(KeyPolicy::to_bits(keys[i]));
  return words;
}

}  // namespace gpuagg_mpi_test
