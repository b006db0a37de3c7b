// WORKGROUPLOCAL's perfect local table: the perfect hash's builder (every key its own bucket),
// the kernel's hash against the host's, and exact queries through it: scattered keys, keys the
// sample missed, the empty marker, copies, a WHERE clause. The plan's choice is plan_test's.
#include <set>
#include <unordered_set>

#include "support.hpp"

using namespace gpuagg;
using namespace gpuagg_test;

namespace {

std::vector<std::uint64_t> distinct_keys(std::size_t n, std::mt19937_64& rng) {
  std::unordered_set<std::uint64_t> seen;
  std::vector<std::uint64_t> keys;
  while (keys.size() < n) {
    const std::uint64_t k = rng();
    if (seen.insert(k).second) keys.push_back(k);
  }
  return keys;
}

}  // namespace

TEST_CASE("the perfect hash: each key of the set in a bucket of its own, other keys told apart") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  constexpr std::uint64_t empty64 = ~std::uint64_t{0};
  for (const std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{17}, std::size_t{1000}, std::size_t{4096}}) {
    CAPTURE(n);
    auto keys = distinct_keys(n, rng);
    // Keys that differ in a few bits only (a dense range, packed columns) as well as random ones.
    for (std::size_t i = 0; i < n / 2; ++i) keys[i] = (std::uint64_t{7} << 40) + i;
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    // Half full, three quarters, every bucket used; any number of buckets.
    const auto n_keys = static_cast<std::uint32_t>(keys.size());
    for (const std::uint32_t capacity : {2 * n_keys, n_keys + n_keys / 3 + 1, n_keys}) {
      CAPTURE(capacity);
      const auto hash = detail::build_perfect_hash(keys, capacity, empty64);
      REQUIRE(hash.has_value());
      CHECK(hash->capacity() == capacity);
      CHECK(hash->key_count == keys.size());
      // The plan sizes the table in local memory from the key count before it builds.
      CHECK(hash->displacements.size() == detail::perfect_groups(keys.size()));
      std::set<std::uint32_t> buckets;
      for (const auto k : keys) {
        const auto b = hash->bucket(k);
        REQUIRE(b < capacity);
        CHECK(hash->keys[b] == k);
        CHECK(hash->contains(k, empty64));
        buckets.insert(b);
      }
      CHECK(buckets.size() == keys.size());
      std::size_t stored = 0;
      for (const auto k : hash->keys) stored += k != empty64 ? 1 : 0;
      CHECK(stored == keys.size());
      const std::set<std::uint64_t> members(keys.begin(), keys.end());
      for (int i = 0; i < 2000; ++i) {
        const std::uint64_t other = rng();
        if (!members.count(other)) CHECK_FALSE(hash->contains(other, empty64));
      }
      CHECK_FALSE(hash->contains(empty64, empty64));
    }
  }
  // The empty marker is left out (it has a bucket of its own in the kernel), so three buckets
  // hold the other three; more keys than buckets build nothing.
  const std::vector<std::uint64_t> with_empty{1, 2, empty64, 3};
  const auto hash = detail::build_perfect_hash(with_empty, 16, empty64);
  REQUIRE(hash.has_value());
  CHECK(hash->key_count == 3);
  CHECK(hash->displacements.size() == detail::perfect_groups(3));
  CHECK_FALSE(detail::build_perfect_hash(with_empty, 2, empty64).has_value());
  CHECK_FALSE(detail::build_perfect_hash(with_empty, 0, empty64).has_value());
  REQUIRE(detail::build_perfect_hash(with_empty, 3, empty64).has_value());
  // 32-bit keys: the same hash of the zero-extended word.
  const std::vector<std::uint64_t> narrow{0, 1, 0xFFFFFFFEull, 12345};
  const auto hash32 = detail::build_perfect_hash(narrow, 8, 0xFFFFFFFFull);
  REQUIRE(hash32.has_value());
  for (const auto k : narrow) CHECK(hash32->contains(k, 0xFFFFFFFFull));
}

TEST_CASE("the perfect hash: the kernel's bucket is the host's, for 32- and 64-bit key words") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const bool wide : {false, true}) {
    CAPTURE(wide);
    auto keys = distinct_keys(700, rng);
    if (!wide) {
      for (auto& k : keys) k &= 0xFFFFFFFFull;
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    }
    const std::uint64_t empty = wide ? ~std::uint64_t{0} : 0xFFFFFFFFull;
    const auto hash = detail::build_perfect_hash(keys, 1000, empty);  // any number of buckets
    REQUIRE(hash.has_value());
    const std::string source = std::string(wide ? "#define KEY_T ulong\n" : "#define KEY_T uint\n") +
                               std::string(detail::perfect_hash_cl.view()) +
                               "__kernel void buckets(__global const KEY_T* keys, __global const uint* d, uint group_mask,"
                               " ulong seed, uint capacity, __global uint* out) {\n"
                               "  const size_t i = get_global_id(0);\n"
                               "  out[i] = gpuagg_perfect_bucket_global(keys[i], seed, d, group_mask, capacity);\n"
                               "}\n";
    cl::Program program = ctx().program(source, "");
    cl::Kernel kernel(program, "buckets");
    // Members and non-members alike.
    std::vector<std::uint64_t> probe = keys;
    for (int i = 0; i < 300; ++i) probe.push_back(wide ? rng() : rng() & 0xFFFFFFFFull);
    std::vector<std::uint32_t> keys32(probe.begin(), probe.end());
    const std::size_t n = probe.size();
    cl::Buffer in = wide ? cl::Buffer(ctx().cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * 8, probe.data())
                         : cl::Buffer(ctx().cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n * 4, keys32.data());
    std::vector<std::uint32_t> displacements(hash->displacements.begin(), hash->displacements.end());
    cl::Buffer d(ctx().cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, displacements.size() * 4,
                 displacements.data());
    cl::Buffer out(ctx().cl_context(), CL_MEM_WRITE_ONLY, n * 4);
    kernel.setArg(0, in);
    kernel.setArg(1, d);
    kernel.setArg(2, cl_uint(hash->group_mask()));
    kernel.setArg(3, cl_ulong(hash->seed));
    kernel.setArg(4, cl_uint(hash->capacity()));
    kernel.setArg(5, out);
    auto& queue = ctx().compute_queue();
    REQUIRE(queue.enqueueNDRangeKernel(kernel, cl::NullRange, cl::NDRange(n)) == CL_SUCCESS);
    std::vector<std::uint32_t> buckets(n);
    REQUIRE(queue.enqueueReadBuffer(out, CL_TRUE, 0, n * 4, buckets.data()) == CL_SUCCESS);
    for (std::size_t i = 0; i < n; ++i) CHECK(buckets[i] == hash->bucket(probe[i]));
  }
}

TEST_CASE("WORKGROUPLOCAL's perfect local table: exact on scattered keys, keys the sample missed, the empty marker") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const std::size_t groups : {std::size_t{1}, std::size_t{6}, std::size_t{300}, std::size_t{1500}}) {
    for (const distribution d : {distribution::uniform, distribution::zipf, distribution::heavy_hitter,
                                 distribution::sorted_runs}) {
      for (const std::uint32_t copies : {0u, 4u}) {
        CAPTURE(groups);
        const std::string distribution_name = name(d);
        CAPTURE(distribution_name);
        CAPTURE(copies);
        // The dictionary starts with the extremes, the empty marker's key among them.
        const auto dictionary = key_dictionary<std::uint64_t>(groups, rng);
        auto k = draw_keys(dictionary, 40'000, d, rng);
        // Keys on a few rows only, which a strided sample of 16 Ki rows misses or sees once:
        // they go to the global table.
        for (std::size_t i = 0; i < 20; ++i) k[(i * 1999 + 7) % k.size()] = rng();
        const auto v = random_values<std::int64_t>(k.size(), rng);
        options opts;
        opts.strategy = strategy_kind::workgroup_local;
        opts.config = launch_config{2, 64};
        opts.perfect_local_table = true;
        opts.local_table_copies = copies;
        opts.block_bytes = 8192 * sizeof(std::uint64_t);
        const auto r = group_by(k, v, sum_count_min, opts);
        check_equal(r, reference_group_by<sum_count_min_bound>(std::span<const std::uint64_t>(k),
                                                               std::span<const std::int64_t>(v)));
        // Every block ran the perfect table where it fits local memory: up to 300 groups on any
        // device (600 buckets of 32 bytes); 1500 groups' (1500 to 3000 buckets) on a CPU's, not
        // a GPU's.
        const bool fits = make_driver(std::span<const std::uint64_t>(k), std::span<const std::int64_t>(v),
                                      sum_count_min, opts)
                              ->plan()
                              .perfect_local()
                              .has_value();
        if (groups <= 300) CHECK(fits);
        REQUIRE_FALSE(r.stats.blocks.empty());
        for (const auto& b : r.stats.blocks) CHECK(b.perfect_local == fits);
      }
    }
  }
}

TEST_CASE("the perfect local table: two key columns, a WHERE clause that makes no group of failing rows") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::size_t rows = 30'000;
  const auto dictionary = key_dictionary<std::uint64_t>(200, rng);
  const auto k = draw_keys(dictionary, rows, distribution::uniform, rng);
  std::vector<std::uint32_t> high(rows), low(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    high[i] = static_cast<std::uint32_t>(k[i] >> 32);
    low[i] = static_cast<std::uint32_t>(k[i]);
  }
  const auto v = random_values<std::int64_t>(rows, rng);
  // Rows of one key fail the predicate (their flag is 0): that key is in the sample and in the
  // perfect table, and must not become a group.
  std::vector<std::int16_t> flag(rows);
  for (std::size_t i = 0; i < rows; ++i) flag[i] = k[i] == dictionary[0] ? 0 : static_cast<std::int16_t>(1 + i % 3);
  const auto q = select(sum(col<0>), count(), min(col<0>)).where(col<1> != lit<0>);
  options opts;
  opts.strategy = strategy_kind::workgroup_local;
  opts.perfect_local_table = true;
  const auto one = group_by(k, values(v, flag), q, opts);
  for (const auto& b : one.stats.blocks) CHECK(b.perfect_local);
  using bound = bound_query<single_key<std::uint64_t>, std::remove_const_t<decltype(q)>, std::int64_t, std::int16_t>;
  const auto expected =
      reference_group_by<bound>(std::span<const std::uint64_t>(k), std::span<const std::int64_t>(v),
                                std::span<const std::int16_t>(flag));
  check_equal(one, expected);
  for (std::size_t i = 0; i < one.size(); ++i) CHECK(one.keys[i] != dictionary[0]);
  const auto two = group_by(keys(high, low), values(v, flag), q, opts);
  for (const auto& b : two.stats.blocks) CHECK(b.perfect_local);
  check_split_keys(two, one);
}
