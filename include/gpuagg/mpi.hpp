#pragma once
// gpuagg across ranks of an MPI job: one GROUP BY over the rows of every rank.
//
//   MPI_Init(&argc, &argv);
//   auto r = gpuagg::mpi::group_by(MPI_COMM_WORLD, my_keys, gpuagg::values(my_a), query);
//   // r.keys, r.column<0>(): the groups this rank owns; r.exchange: what it sent and received
//
// Each rank aggregates its own rows on its own device (options::ctx, else GPUAGG_DEVICE's),
// exports its groups as a partial aggregate (table words and accumulators, not finalized),
// sends each group to the rank that owns its key (owner_rank: a hash independent of the
// table's) with MPI_Alltoallv, absorbs the groups it owns into a table of its own and
// finalizes them. The result stays distributed, each rank holding its own groups, or with
// options::gather_to = r all groups end up on rank r. Only groups travel, never rows.
//
// Collective over the communicator: every rank calls it, with the same query and options, in
// the same order as its other collectives on that communicator. Errors are agreed at the end
// of each phase: when a rank fails (columns of different lengths, a device error, no memory),
// every rank throws, that rank its own typed error and the others rank_failed_error, instead
// of leaving them blocked in a collective.
//
// MPI is called from the calling thread only (MPI_THREAD_FUNNELED suffices from the main
// thread). Needs MPI (e.g. Debian's libopenmpi-dev); the rest of gpuagg does not, and
// groupby.hpp does not include this header.

#include <mpi.h>

#include <chrono>
#include <exception>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "detail/mpi/communicator.hpp"
#include "detail/mpi/exchange.hpp"
#include "groupby.hpp"

namespace gpuagg::mpi {

/// gpuagg::options, and where the result goes.
struct options : gpuagg::options {
  options() = default;
  options(const gpuagg::options& base) : gpuagg::options(base) {}  // NOLINT: any query's options serve
  /// Gather every group on this rank; by default each rank keeps the groups it owns.
  std::optional<int> gather_to;
};

/// A distributed query's result on one rank: `keys` and the output columns hold the groups this
/// rank owns (all groups on the gathering rank, none on the others, with options::gather_to);
/// `stats` is its merge (absorb and FINALIZE), `local_stats` its aggregation of its own rows.
template <class Key, class... Outputs>
struct result : gpuagg::result<Key, Outputs...> {
  query_stats local_stats;
  exchange_stats exchange;                 ///< this rank's
  std::vector<exchange_stats> all_ranks;   ///< every rank's, by rank (the same on every rank)
  int rank = 0;
  int ranks = 1;
  bool gathered = false;                   ///< options::gather_to was given
};

namespace detail {

template <class Key, class Tuple>
struct result_for;
template <class Key, class... Outputs>
struct result_for<Key, std::tuple<Outputs...>> {
  using type = result<Key, Outputs...>;
  using base = gpuagg::result<Key, Outputs...>;
};

/// Empty host columns of the caller's key column types: the merging driver runs over no rows
/// (a pure merge of what it absorbs) but is the same query bound to the same types, so the
/// partial aggregates it takes in are of its own type.
template <class KeyInput>
struct empty_keys {
  std::vector<column_element_t<KeyInput>> column;
  const auto& input() const { return column; }
};
template <class... Columns>
struct empty_keys<key_columns_ref<Columns...>> {
  std::tuple<std::vector<column_element_t<Columns>>...> columns;
  auto input() const {
    return std::apply([](const auto&... c) { return gpuagg::keys(c...); }, columns);
  }
};
template <class ValueTuple>
struct empty_values;
template <class... Columns>
struct empty_values<std::tuple<Columns...>> {
  std::tuple<std::vector<column_element_t<Columns>>...> columns;
  auto input() const {
    return std::apply([](const auto&... c) { return gpuagg::values(c...); }, columns);
  }
};

}  // namespace detail

/// SELECT keys, outputs... GROUP BY keys over the rows of every rank of `comm` (see the top of
/// this file). `keys`, `values` and `query` as gpuagg::group_by takes them: this rank's rows.
template <class Query, key_input KeyColumn, class Values>
auto group_by(MPI_Comm comm_in, const KeyColumn& keys, const Values& values, Query query, const options& opts = {}) {
  const auto& value_tuple = gpuagg::detail::as_value_tuple(values);
  using value_tuple_type = std::remove_cvref_t<decltype(value_tuple)>;
  using bound = typename gpuagg::detail::bound_for<KeyColumn, Query, value_tuple_type>::type;
  using key_value = typename bound::key::value_type;
  using shapes = detail::result_for<key_value, typename bound::output_tuple>;
  using finisher = gpuagg::detail::host_result_for<key_value, typename bound::output_tuple>;
  using partial_type = typename aggregation_driver<bound>::partial_type;
  const gpuagg::options& query_opts = opts;

  const detail::communicator comm(comm_in);
  typename shapes::type out;
  out.rank = comm.rank();
  out.ranks = comm.size();
  exchange_stats& mine = out.exchange;

  // Phase 1: this rank's rows into a partial aggregate (with one rank: the result itself).
  std::exception_ptr failure;
  partial_type partial;
  auto start = std::chrono::steady_clock::now();
  try {
    if (opts.gather_to && (*opts.gather_to < 0 || *opts.gather_to >= comm.size())) {
      throw invalid_argument_error("gpuagg::mpi::group_by: gather_to = " + std::to_string(*opts.gather_to) +
                                   " names no rank of a communicator of " + std::to_string(comm.size()));
    }
    auto driver = make_driver(keys, values, query, query_opts);
    mine.rows = driver->rows();
    gpuagg::detail::run_query<tuner_params{}>(*driver, query_opts);
    if (comm.size() == 1) {
      // Nothing to exchange: the one table is the result.
      static_cast<typename shapes::base&>(out) = finisher::finalize(*driver);
      out.local_stats = out.stats;
    } else {
      partial = driver->export_partial();
      out.local_stats = driver->stats();
    }
  } catch (...) {
    failure = std::current_exception();
  }
  mine.local_seconds = detail::seconds_since(start);
  comm.agree(failure);

  if (comm.size() == 1) {
    mine.partial_groups = mine.groups_kept = mine.owned_groups = out.size();
  } else {
    // Phase 2: every partial group to its owner.
    partial_type owned = detail::exchange(comm, partial, mine);
    partial = partial_type{};
    // Phase 3: the owned groups merged and finalized.
    start = std::chrono::steady_clock::now();
    try {
      const detail::empty_keys<KeyColumn> no_keys;
      const detail::empty_values<value_tuple_type> no_values;
      auto merger = make_driver(no_keys.input(), no_values.input(), query, query_opts);
      merger->absorb(owned);
      static_cast<typename shapes::base&>(out) = finisher::finalize(*merger);
    } catch (...) {
      failure = std::current_exception();
    }
    mine.merge_seconds = detail::seconds_since(start);
    mine.owned_groups = out.size();
  }

  // The last agreement carries every rank's statistics with it.
  std::vector<std::uint64_t> words{failure ? 1u : 0u};
  const auto encoded = mine.encode();
  words.insert(words.end(), encoded.begin(), encoded.end());
  const auto all = comm.all_gather(words);
  std::vector<std::uint64_t> status(static_cast<std::size_t>(comm.size())), owned_groups(status.size());
  for (std::size_t r = 0; r < status.size(); ++r) {
    const std::uint64_t* w = all.data() + r * words.size();
    status[r] = w[0];
    out.all_ranks.push_back(exchange_stats::decode(w + 1));
    owned_groups[r] = out.all_ranks.back().owned_groups;
  }
  comm.throw_if_any_failed(status, failure);

  if (opts.gather_to) {
    detail::gather<typename bound::key>(comm, *opts.gather_to, out, owned_groups);
    out.gathered = true;
  }
  return out;
}

}  // namespace gpuagg::mpi
