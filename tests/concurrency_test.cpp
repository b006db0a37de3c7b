// Queries from several host threads on one context at once: the program cache, the buffer
// pool and the queues are shared, the results must be those of queries run alone.
#include "support.hpp"

#include <exception>
#include <thread>

using namespace gpuagg;
using namespace gpuagg_test;

namespace {

const auto threads_query = select(count(), sum(col<0>), min(col<0>), max(col<0>));
using bound = bound_query<single_key<std::uint32_t>, std::remove_const_t<decltype(threads_query)>, std::int64_t>;
using result_type = result<std::uint32_t, std::uint64_t, std::int64_t, std::int64_t, std::int64_t>;

struct job {
  std::vector<std::uint32_t> keys;
  std::vector<std::int64_t> vals;
  options opts;
  std::vector<result_type> results;
  std::exception_ptr failure;
};

}  // namespace

TEST_CASE("queries from several threads on one context give the results of queries run alone") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  // One thread per strategy and one on the default plan; several blocks each, the table grows in
  // one (a hint far too low), so pool, growth and pipelines run side by side.
  std::vector<job> jobs(4);
  for (std::size_t t = 0; t < jobs.size(); ++t) {
    const std::size_t groups = t == 3 ? 20'000 : 300 * (t + 1);
    jobs[t].keys = draw_keys(key_dictionary<std::uint32_t>(groups, rng), 60'000, distribution::zipf, rng);
    jobs[t].vals = random_values<std::int64_t>(60'000, rng);
    jobs[t].opts.block_bytes = 64 << 10;
    if (t < 3) {
      jobs[t].opts.strategy = all_strategies[t];
      jobs[t].opts.config = launch_config{2, 64};
    } else {
      jobs[t].opts.expected_groups = 10;
    }
  }
  // Each job's programs built before the threads start as well as during them: the first round
  // races the builds, the second the cached programs.
  std::vector<std::thread> threads;
  for (auto& j : jobs) {
    threads.emplace_back([&j] {
      try {
        for (int round = 0; round < 3; ++round) j.results.push_back(group_by(j.keys, j.vals, threads_query, j.opts));
      } catch (...) {
        j.failure = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (std::size_t t = 0; t < jobs.size(); ++t) {
    CAPTURE(t);
    if (jobs[t].failure) {
      try {
        std::rethrow_exception(jobs[t].failure);
      } catch (const std::exception& e) {
        FAIL("thread " << t << " threw: " << e.what());
      }
    }
    const auto expected = reference_group_by<bound>(std::span<const std::uint32_t>(jobs[t].keys),
                                                    std::span<const std::int64_t>(jobs[t].vals));
    REQUIRE(jobs[t].results.size() == 3);
    for (const auto& r : jobs[t].results) check_equal(r, expected);
    if (t == 3) CHECK(jobs[t].results[0].stats.table_growths >= 1);
  }
}
