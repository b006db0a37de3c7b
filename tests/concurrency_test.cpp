// Queries from several host threads on one context at once: the program cache, the buffer
// pool and the queues are shared, the results must be those of queries run alone. And the
// host threads' pool that copies and sketches: its failures reach the caller.
#include "support.hpp"

#include <chrono>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <system_error>
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

TEST_CASE("the copy pool: a refused thread leaves fewer helpers, a throwing part reaches the caller after every part") {
  // A starter the system refuses from the third thread on, as std::thread does when it cannot.
  int started = 0;
  const auto refuse_third = [&started](std::function<void()> body) {
    if (++started > 2) throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
    return std::thread(std::move(body));
  };
  detail::copy_pool pool(4, refuse_third);
  CHECK(pool.helpers() == 2);
  const unsigned parts = pool.helpers() + 1;
  std::vector<int> ran(parts, 0);
  pool.run(parts, [&ran](unsigned p) { ran[p] += 1; });
  CHECK(ran == std::vector<int>(parts, 1));

  // A helper's part and the caller's part throw: every part still runs to its end, then the
  // caller sees one exception; the pool takes the next job.
  for (const unsigned thrower : {0u, parts - 1}) {
    CAPTURE(thrower);
    std::vector<int> finished(parts, 0);
    const auto job = [&](unsigned p) {
      if (p == thrower) throw std::runtime_error("part " + std::to_string(p));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      finished[p] = 1;
    };
    CHECK_THROWS_WITH_AS(pool.run(parts, job), ("part " + std::to_string(thrower)).c_str(), std::runtime_error);
    for (unsigned p = 0; p < parts; ++p) CHECK(finished[p] == (p == thrower ? 0 : 1));
  }
  std::vector<int> again(parts, 0);
  pool.run(parts, [&again](unsigned p) { again[p] = 1; });
  CHECK(again == std::vector<int>(parts, 1));
}
