// gpuagg::mpi::group_by under mpirun (tests/CMakeLists.txt runs this program on 1, 2 and 3
// ranks): every rank generates the whole input from one seed (rank 0's, broadcast), passes
// its own slice, and checks what it gets against the CPU reference over the whole input: the
// groups it owns (distributed), all groups (on the gathering rank), and the exchange's counts
// and bytes, which must be those of the partial groups of every rank's slice, never its rows.
//
// Every rank runs every collective of a test case before it checks anything, and checks never
// abort a test case (no REQUIRE after a collective), so a failing check on one rank cannot
// leave the others waiting in a collective.
#include <array>
#include <cstdio>
#include <iomanip>

#include "mpi_support.hpp"
#include "all_kinds.hpp"

using namespace gpuagg;
using namespace gpuagg_test;
using namespace gpuagg_mpi_test;

namespace {

/// The all_kinds query over int64 values, checked distributed and gathered.
template <class Key>
void check_all_kinds(const std::vector<Key>& keys, const std::vector<std::int64_t>& vals,
                     const std::vector<std::size_t>& cuts) {
  using bound = all_kinds_bound<Key>;
  const auto expected = reference_group_by<bound>(std::span<const Key>(keys), std::span<const std::int64_t>(vals));
  const int rank = world_rank();
  check_distributed<bound>(expected, words_of<typename bound::key>(keys), cuts, [&](const mpi::options& o) {
    return mpi::group_by(MPI_COMM_WORLD, slice(keys, cuts, rank), slice(vals, cuts, rank), all_kinds, o);
  });
}

}  // namespace

TEST_CASE_TEMPLATE("random, zipf and heavy-hitter keys: each rank's groups and the gathered result are exact", Key,
                   std::uint32_t, std::int64_t) {
  const auto seed = shared_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const auto d : {distribution::uniform, distribution::zipf, distribution::heavy_hitter}) {
    const std::string distribution_shown = name(d);
    CAPTURE(distribution_shown);
    // 3000 groups, the extremes and the empty marker's bits among them.
    const auto dictionary = key_dictionary<Key>(3000, rng);
    const auto keys = draw_keys(dictionary, 48'000, d, rng);
    const auto vals = random_values<std::int64_t>(keys.size(), rng);
    check_all_kinds(keys, vals, uneven_cuts(keys.size(), world_size()));
  }
}

TEST_CASE_TEMPLATE("owner_rank is independent of the table's hash: a rank's keys spread over its whole table", Key,
                   std::uint32_t, std::uint64_t) {
  const auto seed = fresh_seed();  // no collective: each rank checks on its own
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<Key> any;
  for (const int ranks : {2, 3, 7}) {
    CAPTURE(ranks);
    // Keys owned by rank 0, their home buckets in a table of 2^8 under either table hash: each
    // quarter of the table, by the home's top bits (multiply_shift's) and its low bits
    // (murmur3's), gets about a quarter of them. An owner taken from the same bits as the home
    // would crowd one part of the table.
    std::array<std::size_t, 4> top_ms{}, low_ms{}, top_mm{}, low_mm{};
    std::size_t owned = 0;
    while (owned < 20'000) {
      const Key k = any(rng);
      if (mpi::owner_rank(std::uint64_t(k), ranks) != 0) continue;
      ++owned;
      const auto ms = multiply_shift::home(k, 8);
      const auto mm = murmur3_finalizer::home(k, 8);
      ++top_ms[ms >> 6];
      ++low_ms[ms & 3];
      ++top_mm[mm >> 6];
      ++low_mm[mm & 3];
    }
    for (const auto* quarters : {&top_ms, &low_ms, &top_mm, &low_mm}) {
      for (const auto n : *quarters) {
        CHECK(n > owned / 5);      // a quarter is 5000; 4 sigma is about 250
        CHECK(n < owned * 3 / 10);
      }
    }
  }
}

TEST_CASE("device columns: each rank's slice already on its device") {
  const auto seed = shared_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const int rank = world_rank();
  const auto keys = draw_keys(key_dictionary<std::uint32_t>(2000, rng), 30'000, distribution::zipf, rng);
  const auto vals = random_values<std::int64_t>(keys.size(), rng);
  const auto cuts = uneven_cuts(keys.size(), world_size());
  const auto my_keys = slice(keys, cuts, rank);
  const auto my_vals = slice(vals, cuts, rank);
  const auto on_device = [](auto part) {
    using T = typename decltype(part)::element_type;
    cl::Buffer buffer(ctx().cl_context(), cl_mem_flags(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR),
                      std::max<std::size_t>(part.size_bytes(), 1), const_cast<void*>(static_cast<const void*>(part.data())));
    return device_column<std::remove_const_t<T>>(buffer, part.size());
  };
  const auto device_keys = on_device(my_keys);
  const auto device_vals = on_device(my_vals);
  using bound = all_kinds_bound<std::uint32_t>;
  const auto expected = reference_group_by<bound>(std::span<const std::uint32_t>(keys), std::span<const std::int64_t>(vals));
  check_distributed<bound>(expected, words_of<typename bound::key>(keys), cuts, [&](const mpi::options& o) {
    return mpi::group_by(MPI_COMM_WORLD, device_keys, device_vals, all_kinds, o);
  });
}

TEST_CASE("keys that all land on one rank: the others own nothing and receive nothing") {
  const auto seed = shared_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const int ranks = world_size();
  const int owner = ranks - 1;
  std::vector<std::int64_t> dictionary;
  for (const auto k : key_dictionary<std::int64_t>(8000, rng)) {
    if (mpi::owner_rank(single_key<std::int64_t>::to_bits(k), ranks) == owner) dictionary.push_back(k);
  }
  const auto keys = draw_keys(dictionary, 30'000, distribution::uniform, rng);
  const auto vals = random_values<std::int64_t>(keys.size(), rng);
  const auto cuts = uneven_cuts(keys.size(), ranks);
  check_all_kinds(keys, vals, cuts);
  const auto r = mpi::group_by(MPI_COMM_WORLD, slice(keys, cuts, world_rank()), slice(vals, cuts, world_rank()),
                               all_kinds, fixed_plan());
  const std::size_t groups = std::unordered_set<std::int64_t>(keys.begin(), keys.end()).size();
  for (int q = 0; q < ranks; ++q) {
    CAPTURE(q);
    if (q == owner) {
      CHECK(r.all_ranks[std::size_t(q)].owned_groups == groups);
    } else {
      CHECK(r.all_ranks[std::size_t(q)].owned_groups == 0);
      CHECK(r.all_ranks[std::size_t(q)].bytes_received == 0);
      CHECK(r.all_ranks[std::size_t(q)].groups_kept == 0);
    }
  }
}

TEST_CASE("ranks with no rows: all rows on the last rank, on the first rank, on none") {
  const auto seed = shared_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const int ranks = world_size();
  const auto dictionary = key_dictionary<std::int64_t>(2000, rng);
  const auto keys = draw_keys(dictionary, 20'000, distribution::zipf, rng);
  const auto vals = random_values<std::int64_t>(keys.size(), rng);
  {
    INFO("every row on the last rank");
    std::vector<std::size_t> cuts(std::size_t(ranks), 0);
    cuts.push_back(keys.size());
    check_all_kinds(keys, vals, cuts);
  }
  {
    INFO("every row on the first rank");
    std::vector<std::size_t> cuts{0};
    cuts.resize(std::size_t(ranks) + 1, keys.size());
    check_all_kinds(keys, vals, cuts);
  }
  {
    INFO("no rows anywhere");
    const std::vector<std::int64_t> none;
    const std::vector<std::int64_t> no_vals;
    check_all_kinds(none, no_vals, std::vector<std::size_t>(std::size_t(ranks) + 1, 0));
  }
}

TEST_CASE("narrow, composite and direct-addressed keys, float and double values") {
  const auto seed = shared_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const int rank = world_rank();
  const auto cuts = uneven_cuts(24'000, world_size());
  {
    INFO("int8_t keys (in 32-bit table words), float values");
    const auto q = select(sum(col<0>), min(col<0>), max(col<0>), count());
    using bound = bound_query<single_key<std::int8_t>, std::remove_const_t<decltype(q)>, float>;
    const auto keys = draw_keys(key_dictionary<std::int8_t>(200, rng), 24'000, distribution::zipf, rng);
    const auto vals = random_values<float>(keys.size(), rng);
    const auto expected = reference_group_by<bound>(std::span<const std::int8_t>(keys), std::span<const float>(vals));
    check_distributed<bound>(expected, words_of<typename bound::key>(keys), cuts, [&](const mpi::options& o) {
      return mpi::group_by(MPI_COMM_WORLD, slice(keys, cuts, rank), slice(vals, cuts, rank), q, o);
    });
  }
  {
    INFO("keys(uint8_t, int16_t), double values");
    using key = packed_key<std::uint8_t, std::int16_t>;
    const auto q = select(sum(col<0>), avg(col<0>), max(col<0>));
    using bound = bound_query<key, std::remove_const_t<decltype(q)>, double>;
    std::vector<std::uint8_t> a(24'000);
    std::vector<std::int16_t> b(a.size());
    std::vector<std::tuple<std::uint8_t, std::int16_t>> tuples(a.size());
    std::uniform_int_distribution<int> pick_a(0, 255), pick_b(-40, 40);
    for (std::size_t i = 0; i < a.size(); ++i) {
      a[i] = std::uint8_t(pick_a(rng) % 16 == 0 ? 255 : pick_a(rng) % 50);
      b[i] = std::int16_t(pick_b(rng));
      tuples[i] = {a[i], b[i]};
    }
    const auto vals = random_values<double>(a.size(), rng);
    const auto expected = reference_group_by<bound>(std::span<const std::tuple<std::uint8_t, std::int16_t>>(tuples),
                                                    std::span<const double>(vals));
    check_distributed<bound>(expected, words_of<key>(tuples), cuts, [&](const mpi::options& o) {
      return mpi::group_by(MPI_COMM_WORLD, keys(slice(a, cuts, rank), slice(b, cuts, rank)), slice(vals, cuts, rank),
                           q, o);
    });
  }
  {
    INFO("direct addressing over int32_t keys in [-50, 949]");
    const auto q = select<direct_addressing>(sum(col<0>), count());
    using bound = bound_query<single_key<std::int32_t>, std::remove_const_t<decltype(q)>, std::int64_t>;
    std::uniform_int_distribution<std::int32_t> in_domain(-50, 949);
    std::vector<std::int32_t> keys(24'000);
    for (auto& k : keys) k = in_domain(rng);
    const auto vals = random_values<std::int64_t>(keys.size(), rng);
    const auto expected = reference_group_by<bound>(std::span<const std::int32_t>(keys), std::span<const std::int64_t>(vals));
    mpi::options opts = fixed_plan();
    opts.domain = {-50, 949};
    check_distributed<bound>(
        expected, words_of<typename bound::key>(keys), cuts,
        [&](const mpi::options& o) {
          return mpi::group_by(MPI_COMM_WORLD, slice(keys, cuts, rank), slice(vals, cuts, rank), q, o);
        },
        opts);
  }
}

TEST_CASE("the exchange carries the partial groups, never the rows; the gathered result is the single process's") {
  const auto seed = shared_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const int rank = world_rank();
  const int ranks = world_size();
  // 2^12 groups in 2^18 rows: every rank's slice holds nearly every group, whose partial
  // aggregates weigh a fraction of the slice's rows.
  const auto dictionary = key_dictionary<std::uint32_t>(4096, rng);
  const auto keys = draw_keys(dictionary, std::size_t{1} << 18, distribution::uniform, rng);
  const auto vals = random_values<std::int64_t>(keys.size(), rng);
  const auto cuts = uneven_cuts(keys.size(), ranks);
  check_all_kinds(keys, vals, cuts);

  mpi::options opts;  // the default plan
  opts.gather_to = 0;
  const auto gathered = mpi::group_by(MPI_COMM_WORLD, slice(keys, cuts, rank), slice(vals, cuts, rank), all_kinds, opts);
  using partial = gpuagg::detail::partial_type_for<all_kinds_bound<std::uint32_t>>::type;
  const std::size_t row_bytes = sizeof(std::uint32_t) + sizeof(std::int64_t);
  std::uint64_t sent = 0, received = 0;
  for (const auto& e : gathered.all_ranks) {
    sent += e.bytes_sent;
    received += e.bytes_received;
    // Only partial groups travel: whole entries, fewer than the rows' bytes.
    CHECK(e.bytes_sent == e.groups_sent * partial::entry_bytes);
    CHECK(e.groups_sent + e.groups_kept == e.partial_groups);
    if (ranks > 1) CHECK(e.bytes_sent < e.rows * row_bytes);
  }
  CHECK(sent == received);
  if (rank == 0) {
    // The single-process query over the whole input, on rank 0's device.
    const auto single = gpuagg::group_by(keys, vals, all_kinds);
    auto single_sorted = single;
    sort_by_key(single_sorted);
    const auto wrong = mismatch(gathered, single_sorted);
    CHECK_MESSAGE(wrong.empty(), "against the single process: " << wrong);
    std::ostringstream table;
    table << "mpi exchange, " << ranks << " ranks, " << keys.size() << " rows of uint32 key + int64 value, "
          << dictionary.size() << " groups, " << partial::entry_bytes << " bytes per partial group:\n";
    for (int q = 0; q < ranks; ++q) {
      const auto& e = gathered.all_ranks[std::size_t(q)];
      table << "  rank " << q << ": " << e.rows << " rows (" << e.rows * row_bytes << " bytes), " << e.partial_groups
            << " partial groups, sent " << e.groups_sent << " groups = " << e.bytes_sent << " bytes, received "
            << e.groups_received << " groups = " << e.bytes_received << " bytes, owns " << e.owned_groups
            << "; local " << std::fixed << std::setprecision(1) << e.local_seconds * 1e3 << " ms, exchange "
            << e.exchange_seconds * 1e3 << " ms, merge " << e.merge_seconds * 1e3 << " ms\n";
    }
    std::cout << table.str() << std::flush;
  }
}

TEST_CASE("a rank whose columns differ in length fails the query on every rank, and the next query runs") {
  const int rank = world_rank();
  const int ranks = world_size();
  const int culprit = ranks - 1;
  std::vector<std::uint32_t> keys{1, 2, 3, 4};
  std::vector<std::int64_t> vals{5, 6, 7, 8};
  if (rank == culprit) vals.pop_back();
  std::string kind_seen = "none";
  int rank_named = -1;
  try {
    mpi::group_by(MPI_COMM_WORLD, keys, vals, all_kinds, fixed_plan());
  } catch (const invalid_argument_error&) {
    kind_seen = "invalid_argument_error";
  } catch (const mpi::rank_failed_error& e) {
    kind_seen = "rank_failed_error";
    rank_named = e.rank();
    CHECK(e.kind() == "invalid_argument_error");
    CHECK(std::string(e.what()).find("column lengths differ") != std::string::npos);
  }
  if (rank == culprit) {
    CHECK(kind_seen == "invalid_argument_error");
  } else {
    CHECK(kind_seen == "rank_failed_error");
    CHECK(rank_named == culprit);
  }
  // Nobody was left in a collective: the next query meets on every rank.
  vals.resize(keys.size(), 9);
  const auto r = mpi::group_by(MPI_COMM_WORLD, keys, vals, all_kinds, [] {
    mpi::options o = fixed_plan();
    o.gather_to = 0;
    return o;
  }());
  if (rank == 0) {
    CHECK(r.size() == 4);
    std::uint64_t rows = 0;
    for (const auto n : r.column<1>()) rows += n;
    CHECK(rows == keys.size() * std::size_t(ranks));
  }
}

TEST_CASE("a rank whose device cannot hold its table fails the query on every rank with a typed error") {
  const int rank = world_rank();
  const int culprit = world_size() - 1;
  const std::vector<std::uint32_t> keys{10, 20, 30};
  const std::vector<std::int64_t> vals{1, 2, 3};
  mpi::options opts = fixed_plan();
  // A table of 2^41 buckets: the device refuses it (out_of_memory_error) before any kernel runs.
  if (rank == culprit) opts.expected_groups = std::uint64_t{1} << 40;
  std::string kind_seen = "none";
  try {
    mpi::group_by(MPI_COMM_WORLD, keys, vals, all_kinds, opts);
  } catch (const out_of_memory_error&) {
    kind_seen = "out_of_memory_error";
  } catch (const mpi::rank_failed_error& e) {
    kind_seen = "rank_failed_error:" + e.kind();
    CHECK(e.rank() == culprit);
  }
  CHECK(kind_seen == (rank == culprit ? "out_of_memory_error" : "rank_failed_error:out_of_memory_error"));
}

TEST_CASE("a failure while merging the owned groups is agreed too") {
  const int rank = world_rank();
  const int ranks = world_size();
  const int culprit = ranks - 1;
  // Every rank's own keys lie in its domain, so each aggregates its rows; the culprit's domain
  // is [0, 499], and the keys in [500, 999] it owns reach it only in the exchange: its merge
  // fails.
  const auto q = select<direct_addressing>(sum(col<0>), count());
  std::vector<std::int32_t> keys;
  for (std::int32_t k = 0; k < (rank == culprit ? 500 : 1000); ++k) keys.push_back(k);
  const std::vector<std::int64_t> vals(keys.size(), 1);
  mpi::options opts = fixed_plan();
  opts.domain = {0, rank == culprit ? 499 : 999};
  bool culprit_gets_foreign_keys = false;
  for (std::int32_t k = 500; k < 1000; ++k) culprit_gets_foreign_keys |= mpi::owner_rank(std::uint32_t(k), ranks) == culprit;
  std::string kind_seen = "none";
  try {
    mpi::group_by(MPI_COMM_WORLD, keys, vals, q, opts);
  } catch (const key_out_of_domain_error&) {
    kind_seen = "key_out_of_domain_error";
  } catch (const mpi::rank_failed_error& e) {
    kind_seen = "rank_failed_error:" + e.kind();
    CHECK(e.rank() == culprit);
  }
  if (ranks == 1 || !culprit_gets_foreign_keys) {
    CHECK(kind_seen == "none");
  } else {
    CHECK(kind_seen == (rank == culprit ? "key_out_of_domain_error" : "rank_failed_error:key_out_of_domain_error"));
  }
}

TEST_CASE("gather_to naming no rank is an invalid argument on every rank") {
  const std::vector<std::uint32_t> keys{1, 2};
  const std::vector<std::int64_t> vals{3, 4};
  mpi::options opts;
  opts.gather_to = world_size();
  CHECK_THROWS_AS(mpi::group_by(MPI_COMM_WORLD, keys, vals, all_kinds, opts), invalid_argument_error);
}

int main(int argc, char** argv) {
  // gpuagg's threads (staging copies, PoCL's) never call MPI: the main thread alone does.
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  doctest::Context context(argc, argv);
  const int failed = context.run();
  // Every rank's verdict: one rank's failure fails the run (mpirun reports the first nonzero).
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (world_rank() == 0) std::printf("mpi_test: %d ranks, %s\n", world_size(), any_failed ? "FAILED" : "all passed");
  MPI_Finalize();
  return any_failed ? 1 : 0;
}
