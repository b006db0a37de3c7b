// The block-wise driver: table growth, strategy and thread configuration changing between
// blocks, device-resident input and output, the program cache, the sample estimate.
#include <boost/compute/container/vector.hpp>
#include <boost/compute/core.hpp>

#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include "support.hpp"

using namespace gpuagg;
using namespace gpuagg_test;

namespace {

struct input {
  std::vector<std::uint64_t> keys;
  std::vector<std::int64_t> vals;
};

input make_input(std::size_t rows, std::size_t groups, distribution d, std::mt19937_64& rng) {
  const auto dictionary = key_dictionary<std::uint64_t>(groups, rng);
  return {draw_keys(dictionary, rows, d, rng), random_values<std::int64_t>(rows, rng)};
}

auto reference(const input& in) {
  return reference_group_by<sum_count_min_bound>(std::span<const std::uint64_t>(in.keys),
                                                 std::span<const std::int64_t>(in.vals));
}

}  // namespace

TEST_CASE("a too-small hint grows the table and loses no group") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const auto strategy : all_strategies) {
    for (const auto d : {distribution::uniform, distribution::sorted_runs, distribution::all_distinct}) {
      CAPTURE(strategy);
      const std::string distribution_shown = name(d);
      CAPTURE(distribution_shown);
      const auto in = make_input(60'000, 20'000, d, rng);
      options opts;
      opts.expected_groups = 1;  // wrong by four orders of magnitude
      opts.strategy = strategy;
      opts.config = launch_config{2, 64};
      opts.block_bytes = 64 << 10;
      const auto r = group_by(in.keys, in.vals, sum_count_min, opts);
      check_equal(r, reference(in));
      CHECK(r.stats.table_growths >= 1);
      CHECK(r.stats.spilled_entries > 0);
      CHECK(double(r.stats.groups) <= double(r.stats.table_capacity));
    }
  }
}

TEST_CASE("device input: a spill area sized for the table; when it overflows the query runs again, exact") {
  // group_by on device input sizes its spill area for the table (a quarter of its buckets),
  // not for every row in flight. A hint wrong by four orders of magnitude fills the
  // table at once, the rows of 8 Ki-row blocks overflow the spill area, and the query runs
  // again with a spill area for every row in flight: exact, one restart. Host input, and a
  // driver the caller steps (make_driver), keep the spill area for every row in flight.
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  context& c = ctx();
  for (const auto strategy : all_strategies) {
    for (const auto d : {distribution::uniform, distribution::all_distinct}) {
      CAPTURE(strategy);
      const std::string distribution_shown = name(d);
      CAPTURE(distribution_shown);
      const auto in = make_input(60'000, 2'000, d, rng);
      const auto expected = reference(in);
      cl::Buffer k(c.cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, in.keys.size() * 8,
                   const_cast<std::uint64_t*>(in.keys.data()));
      cl::Buffer v(c.cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, in.vals.size() * 8,
                   const_cast<std::int64_t*>(in.vals.data()));
      const auto keys = device_column<std::uint64_t>(k, in.keys.size());
      const auto vals = device_column<std::int64_t>(v, in.vals.size());
      options opts;
      opts.strategy = strategy;
      opts.config = launch_config{2, 64};
      opts.block_bytes = 64 << 10;  // 8 Ki rows a block, 16 Ki in flight

      const auto planned = group_by(keys, vals, sum_count_min, opts);  // no hint: the estimate
      check_equal(planned, expected);
      CHECK(planned.stats.spill_restarts == 0);
      REQUIRE(planned.stats.table_growths == 0);  // the first table: the one the spill area is sized for
      CHECK(planned.stats.spill_capacity ==
            std::min<std::uint64_t>(16384, planned.stats.table_capacity / 4));
      if (d == distribution::uniform) {
        // 2,000 groups: 4096 buckets at load 1/2; on a GPU twice that, since these keys are
        // spread over 64 bits (query_planner::initial_table_capacity: scattered keys, a table
        // that stays in the cache).
        CHECK(planned.stats.table_capacity == (c.info().is_gpu ? 8192u : 4096u));
        CHECK(planned.stats.spill_capacity == planned.stats.table_capacity / 4);
        // At most twice the table: the spill area of 16 Ki rows in flight (512 KiB) would not
        // fit, and the estimate's sketches (32 KiB) are given back before the table is made.
        // (INDEPENDENT adds its private tables.)
        if (strategy != strategy_kind::independent) {
          CHECK(planned.stats.peak_device_bytes <=
                2 * (planned.stats.table_capacity + 1) * sum_count_min_bound::bucket_bytes);
        }
      }

      opts.expected_groups = 1;
      const auto wrong = group_by(keys, vals, sum_count_min, opts);
      check_equal(wrong, expected);
      CHECK(wrong.stats.spill_restarts == 1);
      CHECK(wrong.stats.spill_capacity == 16384);  // the run again: every row in flight
      CHECK(wrong.stats.table_growths >= 1);

      const auto stepped = make_driver(keys, vals, sum_count_min, opts);
      CHECK(stepped->stats().spill_capacity == 16384);
      const auto host = group_by(in.keys, in.vals, sum_count_min, opts);
      check_equal(host, expected);
      CHECK(host.stats.spill_restarts == 0);
      CHECK(host.stats.spill_capacity == 16384);
    }
  }
}

TEST_CASE("device input: the key sample is read from the columns at their offset, and needs no device buffer") {
  // The driver reads rows i * stride and their right neighbours straight into host memory (a
  // rectangle read; a short column whole). Its profile must be the host's profile of exactly
  // those rows; keys before and after the columns' rows in their buffers must not be read.
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  context& c = ctx();
  for (const std::size_t rows : {std::size_t{1'000}, std::size_t{40'000}, std::size_t{250'000}}) {
    for (const auto d : {distribution::uniform, distribution::sorted_runs, distribution::heavy_hitter}) {
      CAPTURE(rows);
      const std::string distribution_shown = name(d);
      CAPTURE(distribution_shown);
      const auto in = make_input(rows, 300, d, rng);
      constexpr std::size_t before = 5;
      std::vector<std::uint64_t> key_buffer(before + rows + 3);
      for (std::size_t i = 0; i < key_buffer.size(); ++i) key_buffer[i] = 0xFEED000000000000ULL + i;  // no row's key
      std::copy(in.keys.begin(), in.keys.end(), key_buffer.begin() + before);
      std::vector<std::int64_t> val_buffer(before + rows + 3, 0);
      std::copy(in.vals.begin(), in.vals.end(), val_buffer.begin() + before);
      cl::Buffer k(c.cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, key_buffer.size() * 8, key_buffer.data());
      cl::Buffer v(c.cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, val_buffer.size() * 8, val_buffer.data());
      const auto keys = device_column<std::uint64_t>(k, rows, before);
      const auto vals = device_column<std::int64_t>(v, rows, before);

      const std::size_t n = detail::key_sample_size(rows);
      const std::size_t stride = detail::key_sample_stride(rows, n);
      std::vector<std::uint64_t> sampled(n), next(n);
      for (std::size_t i = 0; i < n; ++i) {
        sampled[i] = in.keys[i * stride];
        next[i] = in.keys[std::min(i * stride + 1, rows - 1)];
      }
      const auto expected = detail::profile_sample(std::span<const std::uint64_t>(sampled),
                                                   std::span<const std::uint64_t>(next));
      const auto driver = make_driver(keys, vals, sum_count_min, options{});
      const auto& profile = driver->plan().profile();
      CHECK(profile.sample_size == expected.sample_size);
      CHECK(profile.runs_share == expected.runs_share);
      CHECK(profile.hottest_key_share == expected.hottest_key_share);
      CHECK(profile.key_span == expected.box.keys());
      CHECK(profile.key_box.lowest == expected.box.lowest);
      CHECK(profile.key_box.keys() <= double(expected.highest - expected.lowest) + 1);
      CHECK(profile.frequent_counts.size() == expected.frequent.size());
      // The first stage decides from the sample's frequencies: the same as the host's sample.
      const auto from_sample =
          detail::estimate_from_frequencies(expected.sample_size, expected.distinct, expected.once, expected.twice, rows,
                                            detail::power_law_sample(expected.frequent));
      REQUIRE(from_sample.has_value());
      CHECK(driver->stats().estimate_source == estimate_source::sample);
      CHECK(driver->stats().expected_groups == std::max<std::uint64_t>(from_sample->groups, 1));

      // What group_by holds on the device: its table, a spill area of a quarter of it, its
      // counters and the result; less than twice the table.
      const auto out = group_by(keys, vals, sum_count_min);
      check_equal(out, reference(in));
      CHECK(out.stats.peak_device_bytes <= 2 * (out.stats.table_capacity + 1) * sum_count_min_bound::bucket_bytes);
    }
  }
}

TEST_CASE("device input: the estimate's sketches are held only while they run") {
  // A heavy hitter over 4,096 groups: the sample's frequencies do not decide, so the strided
  // sketch runs on the device. Its registers (32 KiB of bytes) go back to the pool before the
  // table is made, so the query holds at most twice its table, as one the sample decides does.
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  context& c = ctx();
  const std::size_t rows = std::size_t{1} << 20;
  const auto in = make_input(rows, 4'096, distribution::heavy_hitter, rng);
  cl::Buffer k(c.cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, rows * 8,
               const_cast<std::uint64_t*>(in.keys.data()));
  cl::Buffer v(c.cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, rows * 8,
               const_cast<std::int64_t*>(in.vals.data()));
  const auto out =
      group_by(device_column<std::uint64_t>(k, rows), device_column<std::int64_t>(v, rows), sum_count_min);
  check_equal(out, reference(in));
  REQUIRE(out.stats.estimate_source != estimate_source::sample);
  CHECK(out.stats.peak_device_bytes <= 2 * (out.stats.table_capacity + 1) * sum_count_min_bound::bucket_bytes);
}

TEST_CASE("the table grows between blocks when it passes the load factor") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  const auto in = make_input(200'000, 50'000, distribution::uniform, rng);
  options opts;
  opts.expected_groups = 3'000;  // fits the first block, not the whole input
  opts.block_bytes = 32 << 10;
  const auto r = group_by(in.keys, in.vals, sum_count_min, opts);
  check_equal(r, reference(in));
  CHECK(r.stats.table_growths >= 1);
  // The final table holds its groups at no more than the load factor: 0.5, then 0.25 (a
  // table that kept a full load, or ignored the option, fails one of them). The driver does not
  // grow after the last block; here its new groups are few (each key has ~4 rows, nearly all
  // seen earlier), far from the next power of two's threshold.
  CHECK(double(r.stats.groups) <= opts.max_load_factor * double(r.stats.table_capacity));
  opts.max_load_factor = 0.25;
  const auto sparse = group_by(in.keys, in.vals, sum_count_min, opts);
  check_equal(sparse, reference(in));
  CHECK(double(sparse.stats.groups) <= 0.25 * double(sparse.stats.table_capacity));
  CHECK(sparse.stats.table_capacity > r.stats.table_capacity);
}

TEST_CASE("WORKGROUPLOCAL with sparse local tables: scattered single and two-column keys, exact results") {
  // On a GPU the plan gives scattered keys' local tables up to 32 buckets a group; a load
  // factor of 1/32 builds such tables here (the global table alike). Keys from a random
  // dictionary over 64 bits, and the same keys as two uint32 columns (high, low).
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const std::uint64_t groups : {2ull, 60ull, 200ull}) {
    CAPTURE(groups);
    const auto in = make_input(50'000, groups, distribution::uniform, rng);
    std::vector<std::uint32_t> high(in.keys.size()), low(in.keys.size());
    for (std::size_t i = 0; i < in.keys.size(); ++i) {
      high[i] = static_cast<std::uint32_t>(in.keys[i] >> 32);
      low[i] = static_cast<std::uint32_t>(in.keys[i]);
    }
    options opts;
    opts.strategy = strategy_kind::workgroup_local;
    opts.max_load_factor = 1.0 / 32;
    const auto one = group_by(in.keys, in.vals, sum_count_min, opts);
    check_equal(one, reference(in));
    CHECK(one.stats.table_capacity >= 32 * one.stats.groups);
    check_split_keys(group_by(keys(high, low), in.vals, sum_count_min, opts), one);
  }
}

TEST_CASE("strategy and thread configuration change from block to block of one query") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto in = make_input(100'000, 300, distribution::zipf, rng);
  options opts;
  opts.expected_groups = 300;
  opts.block_bytes = 16 << 10;  // 2048 rows per block, 49 blocks
  auto driver = make_driver(in.keys, in.vals, sum_count_min, opts);
  const execution_params plan[] = {
      {strategy_kind::shared, {1, 64}},         {strategy_kind::workgroup_local, {2, 128}},
      {strategy_kind::independent, {1, 32}},    {strategy_kind::shared, {4, 32}},
      {strategy_kind::workgroup_local, {1, 64}}, {strategy_kind::independent, {2, 64}},
  };
  std::size_t step = 0;
  while (driver->blocks_left() > 0) {
    const double seconds = driver->run_block(plan[step++ % std::size(plan)]);
    CHECK(seconds >= 0.0);
  }
  const auto r = driver->finalize_to_host<std::int64_t, std::uint64_t, std::int64_t>();
  check_equal(r, reference(in));
  REQUIRE(r.stats.blocks.size() == driver->blocks_total());
  for (std::size_t b = 0; b < r.stats.blocks.size(); ++b) CHECK(r.stats.blocks[b].params == plan[b % std::size(plan)]);
}

TEST_CASE("blocks announced ahead: enqueued before they are read, every row once, other parameters refused") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto in = make_input(100'000, 500, distribution::uniform, rng);
  for (const std::size_t in_flight : {1, 2, 3}) {
    CAPTURE(in_flight);
    options opts;
    opts.expected_groups = 500;
    opts.blocks_in_flight = in_flight;
    opts.block_bytes = 16 << 10;  // 2048 rows per block, 49 blocks
    auto driver = make_driver(in.keys, in.vals, sum_count_min, opts);
    const execution_params first{strategy_kind::shared, {1, 64}};
    const execution_params other{strategy_kind::workgroup_local, {2, 64}};
    const std::size_t total = driver->blocks_left();
    REQUIRE(total == 49);
    // A measurement of four blocks: the next of them is in flight while one is read.
    driver->announce_blocks(first, 4);
    CHECK_THROWS_AS(driver->run_block(other), invalid_argument_error);
    CHECK_THROWS_AS(driver->announce_blocks(first, 2), invalid_argument_error);
    for (int b = 0; b < 4; ++b) CHECK(driver->run_block(first) >= 0.0);
    CHECK(driver->blocks_left() == total - 4);
    CHECK(driver->stats().blocks.size() == 4);
    // Taken up in full, the announcement ends: other parameters run again.
    CHECK(driver->run_block(other) >= 0.0);
    // An announcement of more blocks than are left (it counts those left) that finalize
    // overtakes: the blocks already enqueued ahead are completed, none twice, none lost.
    driver->announce_blocks(other, 100);
    CHECK(driver->run_block(other) >= 0.0);
    const auto r = driver->finalize_to_host<std::int64_t, std::uint64_t, std::int64_t>();
    check_equal(r, reference(in));
    std::uint64_t rows = 0;
    for (const auto& b : r.stats.blocks) rows += b.rows;
    CHECK(rows == in.keys.size());
    for (std::size_t b = 0; b < 4; ++b) CHECK(r.stats.blocks[b].params == first);
    // Block 4 ran alone, block 5 was announced with in_flight - 1 more enqueued behind it.
    for (std::size_t b = 4; b < 5 + in_flight; ++b) CHECK(r.stats.blocks[b].params == other);
    CHECK(r.stats.blocks.size() == total);
  }
}

TEST_CASE("blocks in flight, block sizes and pipelined runs give the same result") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  const auto in = make_input(77'777, 999, distribution::heavy_hitter, rng);
  const auto expected = reference(in);
  for (const std::size_t in_flight : {1, 2, 3}) {
    for (const std::size_t block_bytes : {std::size_t{8} << 10, std::size_t{100'000}, std::size_t{16} << 20}) {
      CAPTURE(in_flight);
      CAPTURE(block_bytes);
      options opts;
      opts.blocks_in_flight = in_flight;
      opts.block_bytes = block_bytes;
      check_equal(group_by(in.keys, in.vals, sum_count_min, opts), expected);
    }
  }
}

TEST_CASE("input already on the device is read in place: cl::Buffer with an offset, boost::compute::vector") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  const auto in = make_input(50'001, 777, distribution::uniform, rng);
  const auto expected = reference(in);
  context& c = ctx();

  SUBCASE("cl::Buffer") {
    // Put the columns 1000 elements into larger buffers to exercise the offset.
    const std::size_t pad = 1000;
    std::vector<std::uint64_t> keys(pad, 5);
    keys.insert(keys.end(), in.keys.begin(), in.keys.end());
    std::vector<std::int64_t> vals(pad, 9);
    vals.insert(vals.end(), in.vals.begin(), in.vals.end());
    cl::Buffer k(c.cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, keys.size() * 8, keys.data());
    cl::Buffer v(c.cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, vals.size() * 8, vals.data());
    options opts;
    opts.block_bytes = 64 << 10;
    const auto r = group_by(device_column<std::uint64_t>(k, in.keys.size(), pad),
                            device_column<std::int64_t>(v, in.vals.size(), pad), sum_count_min, opts);
    check_equal(r, expected);
  }
  SUBCASE("boost::compute::vector in a context gpuagg wraps") {
    boost::compute::device device(c.device()(), true);
    boost::compute::context bc_context(c.cl_context()(), true);
    boost::compute::command_queue queue(bc_context, device);
    boost::compute::vector<std::uint64_t> k(in.keys.begin(), in.keys.end(), queue);
    boost::compute::vector<std::int64_t> v(in.vals.begin(), in.vals.end(), queue);
    queue.finish();
    const auto r = group_by(device_column(k), device_column(v), sum_count_min);
    check_equal(r, expected);
  }
}

TEST_CASE("the result can stay on the device") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  const auto in = make_input(10'000, 123, distribution::uniform, rng);
  const auto expected = reference(in);
  const auto on_device = group_by_on_device(in.keys, in.vals, sum_count_min);
  REQUIRE(on_device.size() == expected.size());
  result<std::uint64_t, std::int64_t, std::uint64_t, std::int64_t> copied;
  auto& queue = ctx().compute_queue();
  copied.keys.resize(on_device.size());
  std::get<0>(copied.columns).resize(on_device.size());
  std::get<1>(copied.columns).resize(on_device.size());
  std::get<2>(copied.columns).resize(on_device.size());
  queue.enqueueReadBuffer(on_device.keys, CL_TRUE, 0, on_device.size() * 8, copied.keys.data());
  queue.enqueueReadBuffer(on_device.column<0>(), CL_TRUE, 0, on_device.size() * 8, std::get<0>(copied.columns).data());
  queue.enqueueReadBuffer(on_device.column<1>(), CL_TRUE, 0, on_device.size() * 8, std::get<1>(copied.columns).data());
  queue.enqueueReadBuffer(on_device.column<2>(), CL_TRUE, 0, on_device.size() * 8, std::get<2>(copied.columns).data());
  copied.stats.groups = on_device.size();
  check_equal(copied, expected);
}

TEST_CASE("a second query of the same shape builds no program") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  // The shape's programs: uniform keys', and zipf keys' (with SHARED's hot-key table).
  options opts;
  opts.strategy = strategy_kind::shared;
  for (const auto d : {distribution::uniform, distribution::zipf}) {
    const auto first = make_input(5'000, 50, d, rng);
    group_by(first.keys, first.vals, sum_count_min, opts);
  }
  for (const auto d : {distribution::uniform, distribution::zipf}) {
    CAPTURE(name(d));
    const auto second = make_input(7'000, 70, d, rng);
    const auto r = group_by(second.keys, second.vals, sum_count_min, opts);
    CHECK(r.stats.programs_built == 0);
    check_equal(r, reference(second));
  }
}

TEST_CASE("GPUAGG_SHOW_KERNELS prints the generated source when a program is built") {
  std::ostringstream captured;
  auto* old = std::cerr.rdbuf(captured.rdbuf());
  setenv("GPUAGG_SHOW_KERNELS", "1", 1);
  context fresh(ctx().cl_context(), ctx().device());  // an empty program cache
  const std::vector<std::uint32_t> keys{1, 2, 2};
  const std::vector<double> vals{0.5, 1.5, 2.5};
  options opts;
  opts.ctx = &fresh;
  const auto r = group_by(keys, vals, select(max(col<0>)), opts);
  unsetenv("GPUAGG_SHOW_KERNELS");
  std::cerr.rdbuf(old);
  CHECK(r.size() == 2);
  CHECK(captured.str().find("void gpuagg_aggregate(") != std::string::npos);
  CHECK(captured.str().find("#define GPUAGG_NEED_MAXIMUM_DOUBLE 1") != std::string::npos);
}

TEST_CASE("without a hint the sample estimate sizes the table") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  for (const std::size_t groups : {1u, 16u, 4096u, 60'000u}) {
    CAPTURE(groups);
    const auto in = make_input(200'000, groups, distribution::uniform, rng);
    const auto r = group_by(in.keys, in.vals, sum_count_min);
    check_equal(r, reference(in));
    CHECK(r.stats.expected_groups_estimated);
    // Within a factor of 4 of the truth for uniform keys.
    CHECK(double(r.stats.expected_groups) >= double(groups) / 4);
    CHECK(double(r.stats.expected_groups) <= double(groups) * 4);
  }
}

TEST_CASE("the sample tells a dense range of keys from keys spread wider (stats.scattered_keys), exact either way") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  for (const std::size_t groups : {1'000u, 20'000u}) {
    CAPTURE(groups);
    // Keys drawn from a dictionary of random 64-bit keys (the extremes among them): scattered.
    const auto spread = make_input(200'000, groups, distribution::uniform, rng);
    const auto r_spread = group_by(spread.keys, spread.vals, sum_count_min);
    check_equal(r_spread, reference(spread));
    CHECK(r_spread.stats.scattered_keys);
    std::ostringstream text;
    text << r_spread.stats;
    CHECK(text.str().find("scattered keys") != std::string::npos);
    // A dense range, away from zero: not scattered.
    input dense;
    dense.vals = random_values<std::int64_t>(200'000, rng);
    for (std::size_t i = 0; i < dense.vals.size(); ++i) dense.keys.push_back(5'000'000'000ULL + rng() % groups);
    const auto r_dense = group_by(dense.keys, dense.vals, sum_count_min);
    check_equal(r_dense, reference(dense));
    CHECK_FALSE(r_dense.stats.scattered_keys);
  }
}

TEST_CASE("the default strategy follows section 3.7: WORKGROUPLOCAL while the table fits local memory") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  const auto small = make_input(10'000, 10, distribution::uniform, rng);
  options opts;
  opts.expected_groups = 10;
  CHECK(group_by(small.keys, small.vals, sum_count_min, opts).stats.strategy() == strategy_kind::workgroup_local);
  const auto large = make_input(100'000, 50'000, distribution::uniform, rng);
  opts.expected_groups = 50'000;
  const auto r = group_by(large.keys, large.vals, sum_count_min, opts);
  CHECK(r.stats.strategy() == strategy_kind::shared);
  check_equal(r, reference(large));
}

TEST_CASE("float and double aggregates: NaN and infinities follow the documented semantics") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  // group 1: numbers and a NaN; 2: only NaN; 3: +inf and -inf; 4: +inf and numbers
  const std::vector<std::int32_t> keys{1, 1, 1, 2, 2, 3, 3, 4, 4};
  const std::vector<double> vals{2.0, nan, -3.0, nan, nan, inf, -inf, inf, 1.0};
  std::vector<float> vals_f(vals.begin(), vals.end());
  for (const auto strategy : all_strategies) {
    CAPTURE(strategy);
    options opts;
    opts.strategy = strategy;
    opts.config = launch_config{1, 64};
    auto r = group_by(keys, values(vals, vals_f), select(sum(col<0>), min(col<0>), max(col<0>), min(col<1>), max(col<1>)),
                      opts);
    sort_by_key(r);
    REQUIRE(r.size() == 4);
    check_nan_inf_semantics(r.column<0>(), r.column<1>(), r.column<2>());
    CHECK(r.column<3>()[0] == -3.0f);
    CHECK(std::isnan(r.column<4>()[0]));
  }
}

TEST_CASE("real-valued double sums agree with the reference to rounding") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  std::uniform_real_distribution<double> u(-1e6, 1e6);
  const auto dictionary = key_dictionary<std::int64_t>(500, rng);
  const auto keys = draw_keys(dictionary, 100'000, distribution::zipf, rng);
  std::vector<double> vals(keys.size());
  for (auto& v : vals) v = u(rng);
  const auto q = select(sum(col<0>), avg(col<0>));
  using bound = bound_query<single_key<std::int64_t>, std::remove_const_t<decltype(q)>, double>;
  const auto expected = reference_group_by<bound>(std::span<const std::int64_t>(keys), std::span<const double>(vals));
  for (const auto strategy : all_strategies) {
    options opts;
    opts.strategy = strategy;
    check_equal(group_by(keys, vals, q, opts), expected, 1e-9);
  }
}

TEST_CASE("working buffers go back to the context's pool and are reused, results stay exact") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  context fresh(ctx().cl_context(), ctx().device());
  options opts;
  opts.ctx = &fresh;
  opts.expected_groups = 500;
  opts.block_bytes = 32 << 10;
  CHECK(fresh.pooled_bytes() == 0);
  const auto first = make_input(20'000, 500, distribution::uniform, rng);
  check_equal(group_by(first.keys, first.vals, sum_count_min, opts), reference(first));
  const auto kept = fresh.pooled_bytes();
  CHECK(kept > 0);  // table, spill area, counters, input blocks
  // The same shape again: every working buffer comes from the pool (dirty from the first query).
  const auto second = make_input(20'000, 500, distribution::zipf, rng);
  check_equal(group_by(second.keys, second.vals, sum_count_min, opts), reference(second));
  CHECK(fresh.pooled_bytes() == kept);
}

TEST_CASE("WORKGROUPLOCAL's partial local table: keys a work group meets beyond its table go to the global table, exact") {
  // The default runs a partial local table for sorted keys and a dominant key on GPUs
  // (query_planner::partial_local_table); here every device runs it, with each work group
  // meeting more keys than its table holds (the table full, its later keys probing it in vain).
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  // Three times the groups its local table holds, in 400,000 rows.
  const auto probe = make_input(1'000, 10, distribution::uniform, rng);
  auto sizing = make_driver(std::span<const std::uint64_t>(probe.keys), std::span<const std::int64_t>(probe.vals),
                            sum_count_min, options{});
  const std::size_t groups = static_cast<std::size_t>(3 * sizing->plan().max_local_buckets());
  for (const distribution d : {distribution::sorted_runs, distribution::heavy_hitter, distribution::uniform}) {
    const std::string distribution_name = name(d);
    CAPTURE(distribution_name);
    const auto in = make_input(400'000, groups, d, rng);
    options opts;
    opts.expected_groups = groups;
    auto driver = make_driver(std::span<const std::uint64_t>(in.keys), std::span<const std::int64_t>(in.vals),
                              sum_count_min, opts);
    CHECK_FALSE(driver->plan().local_table_fits());
    const execution_params partial{strategy_kind::workgroup_local, launch_config{1, 64}};
    CHECK_FALSE(driver->feasible(partial));
    CHECK(driver->plan().infeasibility(partial, false).empty());
    driver->run_remaining(partial);
    check_equal(driver->finalize_to_host<std::int64_t, std::uint64_t, std::int64_t>(), reference(in));
  }
}

TEST_CASE("skewed keys beyond local memory: a partial local table for one hot key, SHARED for direct addressing") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  // 50'000 groups do not fit a local table; one key holds 90% of the rows: WORKGROUPLOCAL with a
  // partial local table (and the cold-row queue), on a GPU whose plan entry was measured too,
  // since each work group meets few of the other rows' keys (query_planner::partial_local_table).
  // One key with 10% of the rows, not dominant: SHARED with the run cache's register for the key
  // where the entry was measured (device or architecture level; plan/strategy_choice.hpp).
  const auto skewed = make_input(200'000, 50'000, distribution::heavy_hitter, rng);
  options opts;
  opts.expected_groups = 50'000;
  opts.autotune = false;
  const auto r = group_by(skewed.keys, skewed.vals, sum_count_min, opts);
  check_equal(r, reference(skewed));
  const bool measured = r.stats.plan_level == plan_level::device || r.stats.plan_level == plan_level::architecture;
  const strategy_kind hot_key_strategy = measured ? strategy_kind::shared : strategy_kind::workgroup_local;
  CHECK(r.stats.strategy() == strategy_kind::workgroup_local);
  // One key with 10% of the rows and nothing else frequent (too little for the hot-key table):
  // a partial local table too.
  input warm;
  warm.keys.resize(200'000);
  for (auto& k : warm.keys) k = rng() % 10 == 0 ? std::uint64_t{77} : rng() % 50'000 + 1'000;
  warm.vals = random_values<std::int64_t>(warm.keys.size(), rng);
  const auto w = group_by(warm.keys, warm.vals, sum_count_min, opts);
  check_equal(w, reference(warm));
  CHECK(w.stats.strategy() == hot_key_strategy);
  // Uniform keys of the same count stay with SHARED.
  const auto uniform = make_input(200'000, 50'000, distribution::uniform, rng);
  const auto u = group_by(uniform.keys, uniform.vals, sum_count_min, opts);
  check_equal(u, reference(uniform));
  CHECK(u.stats.strategy() == strategy_kind::shared);
  // Direct addressing with a dominant key beyond local memory: SHARED with the run cache.
  input dense;
  dense.keys.resize(200'000);
  for (auto& k : dense.keys) k = rng() % 10 < 9 ? std::uint64_t{5} : rng() % 100'000;
  dense.vals = random_values<std::int64_t>(dense.keys.size(), rng);
  options domain = opts;
  domain.expected_groups.reset();
  domain.domain = key_domain(std::uint64_t{0}, std::uint64_t{99'999});
  const auto direct = select<direct_addressing>(sum(col<0>), count(), min(col<0>));
  const auto d = group_by(dense.keys, dense.vals, direct, domain);
  check_equal(d, reference(dense));
  CHECK(d.stats.strategy() == strategy_kind::shared);
}

TEST_CASE("direct addressing's local table keeps no keys: a domain that keys would not fit runs in local memory") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto direct = select<direct_addressing>(sum(col<0>), count(), min(col<0>));
  const std::uint64_t local = default_context().info().local_mem_bytes;
  // 24 bytes of accumulators a bucket: with its 8-byte key a bucket took 32 bytes, without it 24
  // and a bit; a domain of local / 28 buckets fits only without keys.
  const std::uint64_t n = local / 28;
  const std::uint64_t lo = ~std::uint64_t{0} - n + 1;  // the domain ends at the empty marker's key
  input in;
  in.keys.resize(90'001);
  for (auto& k : in.keys) k = lo + rng() % n;
  in.keys[7] = ~std::uint64_t{0};
  in.keys[8] = lo;
  in.vals = random_values<std::int64_t>(in.keys.size(), rng);
  options opts;
  opts.domain = key_domain(lo, ~std::uint64_t{0});
  opts.block_bytes = 8192 * sizeof(std::uint64_t);
  auto driver =
      make_driver(std::span<const std::uint64_t>(in.keys), std::span<const std::int64_t>(in.vals), direct, opts);
  const execution_params wgl{strategy_kind::workgroup_local, launch_config{2, 64}};
  CHECK(driver->feasible(wgl));
  driver->run_remaining(wgl);
  check_equal(driver->finalize_to_host<std::int64_t, std::uint64_t, std::int64_t>(), reference(in));
  // A dominant key over a local table of more than a quarter of local memory: SHARED with the
  // run cache by default; over a small one, the local table.
  for (const std::uint64_t domain : {std::uint64_t{100}, n}) {
    CAPTURE(domain);
    input heavy;
    heavy.keys.resize(40'000);
    for (auto& k : heavy.keys) k = rng() % 10 < 9 ? 3 : rng() % domain;
    heavy.vals = random_values<std::int64_t>(heavy.keys.size(), rng);
    options dense;
    dense.domain = key_domain(std::uint64_t{0}, domain - 1);
    dense.autotune = false;
    const auto r = group_by(heavy.keys, heavy.vals, direct, dense);
    check_equal(r, reference(heavy));
    CHECK(r.stats.strategy() == (domain == n ? strategy_kind::shared : strategy_kind::workgroup_local));
  }
}

TEST_CASE("WORKGROUPLOCAL's cold-row queue for a dominant key: exact, the empty marker and extremes hot or cold") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::uint64_t marker = ~std::uint64_t{0};
  // About 100 groups: table and queue fit in 32 KiB of local memory (OpenCL's least), so every
  // device runs the queue here (larger tables take a shorter queue or none, cold_rows_per_item).
  for (const std::uint64_t hot : {marker, std::uint64_t{0}, std::uint64_t{4242}}) {
    for (const std::uint32_t width : {64u, 128u}) {
      CAPTURE(hot);
      CAPTURE(width);
      input in;
      in.keys.resize(50'021);
      // 90% one key; the cold keys include the extremes (and the marker when it is not hot).
      const std::uint64_t cold[] = {marker, 0, marker - 1, 1};
      for (auto& k : in.keys) k = rng() % 10 < 9 ? hot : rng() % 8 == 0 ? cold[rng() % 4] : rng() % 96 + 2;
      in.vals = random_values<std::int64_t>(in.keys.size(), rng);
      for (const std::optional<bool> cache : {std::optional<bool>{}, std::optional<bool>{true}}) {
        CAPTURE(cache.has_value());
        options opts;
        opts.block_bytes = 8192 * sizeof(std::uint64_t);
        opts.run_cache = cache;
        opts.local_table_copies = 1;  // a replicated table takes the hot key instead (any device)
        auto driver = make_driver(std::span<const std::uint64_t>(in.keys), std::span<const std::int64_t>(in.vals),
                                  sum_count_min, opts);
        const execution_params params{strategy_kind::workgroup_local, launch_config{2, width}};
        // Asked for, the run cache keeps its runs and no queue.
        CHECK(driver->plan().cold_queue(params) == !cache.has_value());
        CHECK(driver->plan().cold_rows_per_item(params.config) == 8);
        driver->run_remaining(params);
        const auto result = driver->finalize_to_host<std::int64_t, std::uint64_t, std::int64_t>();
        for (const auto& block : result.stats.blocks) CHECK(block.cold_queue == !cache.has_value());
        check_equal(result, reference(in));
      }
    }
  }
  // A single key runs in the run cache's own loop, without the queue.
  const auto one = make_input(20'000, 1, distribution::uniform, rng);
  auto single = make_driver(std::span<const std::uint64_t>(one.keys), std::span<const std::int64_t>(one.vals),
                            sum_count_min, options{});
  const execution_params params{strategy_kind::workgroup_local, launch_config{2, 64}};
  CHECK(single->plan().run_cache(params));
  CHECK_FALSE(single->plan().cold_queue(params));
}

TEST_CASE("WORKGROUPLOCAL's replicated local tables: exact for every copy count, hot keys and the empty marker") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  for (const std::uint32_t copies : {1u, 2u, 8u, 32u}) {
    for (const std::size_t groups : {std::size_t{1}, std::size_t{6}, std::size_t{300}}) {
      for (const distribution d : {distribution::uniform, distribution::heavy_hitter, distribution::sorted_runs}) {
        CAPTURE(copies);
        CAPTURE(groups);
        const std::string distribution_name = name(d);
        CAPTURE(distribution_name);
        // The dictionary starts with the extremes: at 6 groups every one of them, the empty
        // marker's key included.
        const auto in = make_input(20'011, groups, d, rng);
        options opts;
        opts.expected_groups = groups;
        opts.strategy = strategy_kind::workgroup_local;
        opts.config = launch_config{2, 64};
        opts.local_table_copies = copies;
        opts.block_bytes = 4096 * sizeof(std::uint64_t);
        auto driver = make_driver(std::span<const std::uint64_t>(in.keys), std::span<const std::int64_t>(in.vals),
                                  sum_count_min, opts);
        // As many as asked for while they fit in local memory (300 groups: not 32 copies; on a GPU
        // a few scattered groups' sparse table holds 32 buckets a group, and fewer copies fit).
        const auto used = driver->plan().local_table_copies(launch_config{2, 64});
        CHECK(used <= copies);
        std::uint32_t fit = 1;
        while (fit * 2 <= copies &&
               (fit * 2) * driver->plan().local_table_bytes(1) + 64 <= ctx().info().local_mem_bytes) {
          fit *= 2;
        }
        CHECK(used == fit);
        if (groups <= 6 && !ctx().info().is_gpu) CHECK(used == copies);
        driver->run_remaining(execution_params{strategy_kind::workgroup_local, launch_config{2, 64}});
        check_equal(driver->finalize_to_host<std::int64_t, std::uint64_t, std::int64_t>(), reference(in));
      }
    }
  }
  // A partial local table (more groups than it holds) replicated: the copies' overflow and the
  // fold's overflow both reach the global table.
  const auto skewed = make_input(60'000, 20'000, distribution::heavy_hitter, rng);
  options opts;
  opts.expected_groups = 20'000;
  opts.strategy = strategy_kind::workgroup_local;
  opts.local_table_copies = 4;
  const auto r = group_by(skewed.keys, skewed.vals, sum_count_min, opts);
  check_equal(r, reference(skewed));
  // The automatic choice replicates small tables only.
  options automatic;
  automatic.expected_groups = 4;
  auto small = make_driver(std::span<const std::uint64_t>(skewed.keys), std::span<const std::int64_t>(skewed.vals),
                           sum_count_min, automatic);
  CHECK(small->plan().local_table_copies(launch_config{1, 256}) > 1);
  CHECK(small->plan().local_table_copies(launch_config{1, 1}) == 1);
}

TEST_CASE("host input: pinned_array is copied without staging, large pageable blocks with several threads") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  const auto in = make_input(600'000, 5'000, distribution::uniform, rng);
  options opts;
  opts.expected_groups = 5'000;
  opts.block_bytes = std::size_t{4} << 20;  // 4 MiB blocks: the staging copy uses several threads
  opts.host_blocks_in_place = false;        // copied, as a GPU's blocks are (a CPU reads them in place)
  SUBCASE("pageable std::vector") { check_equal(group_by(in.keys, in.vals, sum_count_min, opts), reference(in)); }
  SUBCASE("pinned_array") {
    pinned_array<std::uint64_t> keys(ctx(), in.keys.size());
    pinned_array<std::int64_t> vals(ctx(), in.vals.size());
    std::copy(in.keys.begin(), in.keys.end(), keys.begin());
    std::copy(in.vals.begin(), in.vals.end(), vals.begin());
    CHECK(ctx().is_pinned(keys.data(), keys.size() * sizeof(std::uint64_t)));
    CHECK_FALSE(ctx().is_pinned(in.keys.data(), 8));
    check_equal(group_by(keys, vals, sum_count_min, opts), reference(in));
    // A pinned column next to a pageable one, and a span into the middle of a pinned array.
    const std::span<const std::uint64_t> tail(keys.data() + 1000, keys.size() - 1000);
    const std::span<const std::int64_t> tail_vals(in.vals.data() + 1000, in.vals.size() - 1000);
    const input rest{{in.keys.begin() + 1000, in.keys.end()}, {in.vals.begin() + 1000, in.vals.end()}};
    check_equal(group_by(tail, tail_vals, sum_count_min, opts), reference(rest));
  }
  SUBCASE("the parallel copy itself, at every split") {
    std::vector<unsigned char> from(5'000'003);
    for (auto& byte : from) byte = static_cast<unsigned char>(rng());
    for (const unsigned threads : {1u, 2u, 3u, 8u}) {
      std::vector<unsigned char> to(from.size(), 0);
      detail::parallel_copy(to.data(), from.data(), from.size(), threads, 4096);
      CHECK(to == from);
    }
  }
}

TEST_CASE("host input read where it lies: pageable, pinned, a span into the middle, several blocks in flight") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  const auto in = make_input(500'003, 20'000, distribution::zipf, rng);
  pinned_array<std::uint64_t> keys(ctx(), in.keys.size());
  std::copy(in.keys.begin(), in.keys.end(), keys.begin());
  options opts;
  opts.block_bytes = std::size_t{1} << 20;  // blocks of 131,072 rows: 4 of them
  opts.host_blocks_in_place = true;         // a GPU too: buffers over host memory
  for (const std::size_t window : {std::size_t{1}, std::size_t{3}}) {
    CAPTURE(window);
    opts.blocks_in_flight = window;
    const auto pageable = group_by(in.keys, in.vals, sum_count_min, opts);
    check_equal(pageable, reference(in));
    CHECK(pageable.stats.host_blocks_in_place);
    CHECK(pageable.stats.early_copies == 0);
    CHECK(pageable.stats.blocks.size() == 4);
    check_equal(group_by(keys, in.vals, sum_count_min, opts), reference(in));
    // Rows from an odd offset: a buffer over memory no allocation aligned.
    const std::span<const std::uint64_t> tail(keys.data() + 1001, keys.size() - 1001);
    const std::span<const std::int64_t> tail_vals(in.vals.data() + 1001, in.vals.size() - 1001);
    const input rest{{in.keys.begin() + 1001, in.keys.end()}, {in.vals.begin() + 1001, in.vals.end()}};
    check_equal(group_by(tail, tail_vals, sum_count_min, opts), reference(rest));
  }
  // The default: a CPU reads in place, a GPU copies.
  const auto automatic = group_by(in.keys, in.vals, sum_count_min);
  check_equal(automatic, reference(in));
  CHECK(automatic.stats.host_blocks_in_place == !ctx().info().is_gpu);
  opts.host_blocks_in_place = false;
  CHECK_FALSE(group_by(in.keys, in.vals, sum_count_min, opts).stats.host_blocks_in_place);
}

TEST_CASE("host input: pinned columns' first blocks are copied before the estimate, and run as the plan's first blocks") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  // No hint: the set-up samples and estimates while the first blocks copy.
  const auto in = make_input(700'001, 40'000, distribution::zipf, rng);
  pinned_array<std::uint64_t> keys(ctx(), in.keys.size());
  pinned_array<std::int64_t> vals(ctx(), in.vals.size());
  std::copy(in.keys.begin(), in.keys.end(), keys.begin());
  std::copy(in.vals.begin(), in.vals.end(), vals.begin());
  options opts;
  opts.block_bytes = std::size_t{1} << 20;  // blocks of 131,072 rows (2 MiB): 6 of them
  opts.host_blocks_in_place = false;        // copied, as a GPU's blocks are
  query_shape shape;  // what early_blocks reads of it: 8-byte columns, 16-byte rows
  shape.widest_column_bytes = 8;
  shape.row_bytes = 16;
  const std::size_t early = std::min<std::size_t>(6, query_planner::early_blocks(ctx().info(), shape, opts));
  REQUIRE(early >= 1);
  SUBCASE("every block within the budget, whatever the window") {
    for (const std::size_t window : {std::size_t{1}, std::size_t{2}, std::size_t{3}}) {
      CAPTURE(window);
      opts.blocks_in_flight = window;
      const auto r = group_by(keys, vals, sum_count_min, opts);
      check_equal(r, reference(in));
      CHECK(r.stats.early_copies == early);
      CHECK(r.stats.blocks.size() == 6);
    }
  }
  SUBCASE("one block") {
    opts.block_bytes = std::size_t{8} << 20;
    const auto r = group_by(keys, vals, sum_count_min, opts);
    check_equal(r, reference(in));
    CHECK(r.stats.early_copies == 1);
  }
  SUBCASE("the tuner's smaller slices: the early copies are given back, nothing lost") {
    opts.tuning_block_bytes = std::size_t{1} << 18;
    const auto r = group_by(keys, vals, sum_count_min, opts);
    check_equal(r, reference(in));
    CHECK(r.stats.early_copies == 0);
  }
  SUBCASE("a pageable column: no early copy") {
    const std::span<const std::int64_t> pageable(in.vals);
    const auto r = group_by(keys, pageable, sum_count_min, opts);
    check_equal(r, reference(in));
    CHECK(r.stats.early_copies == 0);
  }
}

TEST_CASE("the sample profile: distinct keys, keys seen once and twice, the hottest key's share, frequent keys, the range") {
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> keys;
  for (std::uint64_t k = 0; k < 1000; ++k) keys.push_back(k * 0x100000000ULL);  // keys that collide in low bits
  for (std::uint64_t k = 0; k < 10; ++k) keys.insert(keys.end(), 2, (k + 5000) * 0x100000000ULL);  // seen twice
  for (int i = 0; i < 1000; ++i) keys.push_back(~std::uint64_t{0});             // the empty marker's key, hot
  std::shuffle(keys.begin(), keys.end(), rng);
  const auto whole = detail::profile_sample(keys);
  CHECK(whole.distinct == 1011);
  CHECK(whole.once == 1000);
  CHECK(whole.twice == 10);
  CHECK(whole.sample_size == keys.size());
  CHECK(whole.hottest_key_share == doctest::Approx(1000.0 / double(keys.size())));
  // The range of the sample's key words: 0 (k = 0) to the empty marker's bits.
  CHECK(whole.lowest == 0);
  CHECK(whole.highest == ~std::uint64_t{0});
  const std::vector<std::uint32_t> one(100, 7u);
  CHECK(detail::profile_sample(one).distinct == 1);
  CHECK(detail::profile_sample(one).lowest == 7);
  CHECK(detail::profile_sample(one).highest == 7);
  CHECK(detail::profile_sample(one).hottest_key_share == doctest::Approx(1.0));
  // The frequent keys: the hot key alone (seen 1000 times; the others once or twice).
  REQUIRE(whole.frequent.size() == 1);
  CHECK(whole.frequent[0].first == ~std::uint64_t{0});
  CHECK(whole.frequent[0].second == 1000);
  CHECK(whole.frequent_summary().keys == 1);
  CHECK(whole.frequent_summary().share == doctest::Approx(1000.0 / double(keys.size())));
  // The counting table is reused between samples: a smaller sample after a larger one, then the
  // first again, profile as if each were the first.
  std::vector<std::uint64_t> few;
  for (int i = 0; i < 40; ++i) few.push_back(keys[std::size_t(i) % 3]);
  const auto small = detail::profile_sample(few);
  CHECK(small.distinct == std::set<std::uint64_t>(few.begin(), few.end()).size());
  CHECK(small.lowest == *std::min_element(few.begin(), few.end()));
  CHECK(small.highest == *std::max_element(few.begin(), few.end()));
  const auto again = detail::profile_sample(keys);
  CHECK(again.distinct == whole.distinct);
  CHECK(again.once == whole.once);
  CHECK(again.hottest_key == whole.hottest_key);
  CHECK(again.frequent == whole.frequent);
}

TEST_CASE_TEMPLATE("the sample profile against a plain count, runs included, on every distribution", Bits,
                   std::uint32_t, std::uint64_t) {
  const std::uint64_t seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const auto d : {distribution::uniform, distribution::zipf, distribution::heavy_hitter,
                       distribution::sorted_runs}) {
    for (const std::size_t groups : {std::size_t{1}, std::size_t{50}, std::size_t{5'000}, std::size_t{1} << 20}) {
      const std::string distribution_shown = name(d);
      CAPTURE(distribution_shown);
      CAPTURE(groups);
      // A column of 2^16 rows sampled as the driver samples it: every 4th row and its neighbour.
      const auto column = draw_keys(key_dictionary<Bits>(groups, rng), std::size_t{1} << 16, d, rng);
      std::vector<Bits> sample;
      std::vector<Bits> neighbours;
      for (std::size_t row = 0; row < column.size(); row += 4) {
        sample.push_back(column[row]);
        neighbours.push_back(column[std::min(row + 1, column.size() - 1)]);
      }
      const auto profile = detail::profile_sample(std::span<const Bits>(sample), std::span<const Bits>(neighbours));
      std::map<Bits, std::uint32_t> counts;
      for (const auto k : sample) ++counts[k];
      std::uint64_t once = 0;
      std::uint64_t twice = 0;
      std::uint32_t top = 0;
      for (const auto& [k, c] : counts) {
        once += c == 1 ? 1 : 0;
        twice += c == 2 ? 1 : 0;
        top = std::max(top, c);
      }
      CHECK(profile.distinct == counts.size());
      CHECK(profile.once == once);
      CHECK(profile.twice == twice);
      CHECK(profile.hottest_key_share == doctest::Approx(double(top) / double(sample.size())));
      CHECK(counts.at(static_cast<Bits>(profile.hottest_key)) == top);
      CHECK(profile.lowest == static_cast<std::uint64_t>(counts.begin()->first));
      CHECK(profile.highest == static_cast<std::uint64_t>(counts.rbegin()->first));
      const double average = double(sample.size()) / double(counts.size());
      const auto least = static_cast<std::uint32_t>(std::max(8.0, std::ceil(4 * average)));
      std::vector<std::pair<std::uint64_t, std::uint32_t>> frequent;
      for (const auto& [k, c] : counts) {
        if (c >= least) frequent.emplace_back(static_cast<std::uint64_t>(k), c);
      }
      std::sort(frequent.begin(), frequent.end(),
                [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
      if (frequent.size() > detail::max_frequent_keys) frequent.resize(detail::max_frequent_keys);
      CHECK(profile.frequent == frequent);
      std::size_t pairs = 0;
      std::size_t equal = 0;
      for (std::size_t i = 0; i < sample.size(); ++i) {
        if (counts.at(sample[i]) >= least) continue;
        ++pairs;
        equal += sample[i] == neighbours[i] ? 1 : 0;
      }
      CHECK(profile.runs_share == doctest::Approx(pairs > 0 ? double(equal) / double(pairs) : 0.0));
    }
  }
}

TEST_CASE("key reads: cacheable for small tables, volatile for large ones, both exact") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  for (const std::size_t groups : {std::size_t{3'000}, std::size_t{150'000}}) {
    CAPTURE(groups);
    const auto in = make_input(300'000, groups, distribution::uniform, rng);
    options opts;
    opts.expected_groups = groups;
    opts.strategy = strategy_kind::shared;
    auto driver = make_driver(std::span<const std::uint64_t>(in.keys), std::span<const std::int64_t>(in.vals),
                              sum_count_min, opts);
    // 3'000 groups: 8 Ki buckets of 8-byte keys (cacheable reads); 150'000: 512 Ki (volatile).
    const auto table_key_bytes = detail::next_pow2(groups * 2) * sizeof(std::uint64_t);
    CHECK((table_key_bytes <= query_planner::plain_key_reads_max_bytes) == (groups == 3'000));
    CHECK(driver->plan().plain_key_reads(detail::next_pow2(groups * 2), false) == (groups == 3'000));
    driver->run_remaining();
    check_equal(driver->finalize_to_host<std::int64_t, std::uint64_t, std::int64_t>(), reference(in));
  }
}

TEST_CASE("the run cache: forced on or off, and automatic, for SHARED and WORKGROUPLOCAL, exact") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  for (const distribution d : {distribution::uniform, distribution::heavy_hitter, distribution::sorted_runs}) {
    for (const std::size_t groups : {std::size_t{1}, std::size_t{6}, std::size_t{2'000}}) {
      const auto in = make_input(30'011, groups, d, rng);
      for (const auto strategy : {strategy_kind::shared, strategy_kind::workgroup_local}) {
        for (const std::optional<bool> cache : {std::optional<bool>{}, std::optional<bool>{true}, std::optional<bool>{false}}) {
          const std::string distribution_name = name(d);
          CAPTURE(distribution_name);
          CAPTURE(groups);
          CAPTURE(static_cast<int>(strategy));
          CAPTURE(cache.has_value() ? int(*cache) : -1);
          options opts;
          opts.strategy = strategy;
          opts.run_cache = cache;
          opts.block_bytes = 8192 * sizeof(std::uint64_t);
          check_equal(group_by(in.keys, in.vals, sum_count_min, opts), reference(in));
        }
      }
    }
  }
  // The automatic choice: on for a single key, off for uniform keys.
  const auto one = make_input(20'000, 1, distribution::uniform, rng);
  auto single = make_driver(std::span<const std::uint64_t>(one.keys), std::span<const std::int64_t>(one.vals),
                            sum_count_min, options{});
  CHECK(single->plan().run_cache({strategy_kind::shared, launch_config{1, 256}}));
  const auto many = make_input(20'000, 64, distribution::uniform, rng);
  auto spread = make_driver(std::span<const std::uint64_t>(many.keys), std::span<const std::int64_t>(many.vals),
                            sum_count_min, options{});
  CHECK_FALSE(spread->plan().run_cache({strategy_kind::shared, launch_config{1, 256}}));
}

TEST_CASE("PARTITION: rows ordered into runs by table region give exact results for every strategy and scheme") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const std::uint32_t parts : {2u, 16u, 1024u}) {
    for (const distribution d : {distribution::uniform, distribution::zipf, distribution::heavy_hitter,
                                 distribution::sorted_runs, distribution::all_distinct}) {
      const std::string distribution_name = name(d);
      CAPTURE(parts);
      CAPTURE(distribution_name);
      // The dictionary starts with the key type's extremes, the empty marker's key among them.
      const auto in = make_input(50'021, 5'000, d, rng);
      for (const auto strategy : all_strategies) {
        CAPTURE(strategy);
        options opts;
        opts.strategy = strategy;
        opts.config = launch_config{2, 64};
        opts.partitions = parts;
        opts.block_bytes = 16384 * sizeof(std::uint64_t);
        const auto r = group_by(in.keys, in.vals, sum_count_min, opts);
        check_equal(r, reference(in));
        CHECK(r.stats.partition_seconds > 0);
      }
      // A too-small hint: the table grows while blocks are partitioned for the old one.
      options small;
      small.expected_groups = 2;
      small.partitions = parts;
      small.strategy = strategy_kind::shared;
      small.block_bytes = 16384 * sizeof(std::uint64_t);
      const auto grown = group_by(in.keys, in.vals, sum_count_min, small);
      check_equal(grown, reference(in));
      CHECK(grown.stats.table_growths >= 1);
    }
  }
  // Direct addressing: runs of a dense domain (its capacity need not be a power of two), keys at
  // both ends of it; a key outside it still fails with the typed error.
  const std::uint64_t lo = 1'000, hi = 1'000 + 29'999;
  std::vector<std::uint64_t> keys(40'000);
  for (auto& k : keys) k = lo + rng() % (hi - lo + 1);
  keys[0] = lo;
  keys[1] = hi;
  const auto vals = random_values<std::int64_t>(keys.size(), rng);
  const input dense{keys, vals};
  const auto direct = select<direct_addressing>(sum(col<0>), count(), min(col<0>));
  // The copy of a 64-bit key's runs holds buckets (query_planner::partition_copy_buckets).
  for (const std::uint32_t parts : {4u, 512u}) {
    CAPTURE(parts);
    for (const auto strategy : all_strategies) {
      CAPTURE(strategy);
      options opts;
      opts.domain = key_domain(lo, hi);
      opts.partitions = parts;
      opts.strategy = strategy;
      opts.config = launch_config{2, 64};
      opts.block_bytes = 8192 * sizeof(std::uint64_t);
      const auto r = group_by(keys, vals, direct, opts);
      check_equal(r, reference(dense));
      CHECK(r.stats.partition_seconds > 0);
      auto outside = keys;
      outside[20'000] = hi + 1;
      CHECK_THROWS_AS(group_by(outside, vals, direct, opts), key_out_of_domain_error);
    }
  }
  // Automatic: off for tables that fit the L2 (here a few KiB), on for a table of 128 MiB (a
  // hint of 2^21 groups: 2^22 buckets of 32 bytes) and a block of at least 2^16 rows.
  CHECK(group_by(keys, vals, sum_count_min).stats.partition_seconds == 0);
  const auto wide = make_input(70'001, 30'000, distribution::uniform, rng);
  options large;
  large.expected_groups = std::uint64_t{1} << 21;
  large.strategy = strategy_kind::shared;
  const auto r = group_by(wide.keys, wide.vals, sum_count_min, large);
  check_equal(r, reference(wide));
  CHECK(r.stats.partition_seconds > 0);
}

TEST_CASE("PARTITION in pieces: a block of more rows than a piece's copy runs as several, exact, in less memory") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  auto& c = ctx();
  // One device block (256 MiB of 8-byte keys holds them all) of four pieces: a piece's copy
  // would take 5/8 of the (small) table's bytes, and takes 2^20 rows, the least.
  const std::size_t rows = 3 * (std::size_t{1} << 20) + 12'345;
  for (const distribution d : {distribution::uniform, distribution::heavy_hitter, distribution::sorted_runs}) {
    const std::string distribution_name = name(d);
    CAPTURE(distribution_name);
    const auto in = make_input(rows, 40'000, d, rng);
    const auto expected = reference(in);
    cl::Buffer k(c.cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, rows * 8,
                 const_cast<std::uint64_t*>(in.keys.data()));
    cl::Buffer v(c.cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, rows * 8,
                 const_cast<std::int64_t*>(in.vals.data()));
    for (const auto strategy : {strategy_kind::shared, strategy_kind::workgroup_local}) {
      CAPTURE(strategy);
      options opts;
      opts.strategy = strategy;
      opts.config = launch_config{2, 64};
      opts.partitions = 16;
      const auto r = group_by(device_column<std::uint64_t>(k, rows), device_column<std::int64_t>(v, rows),
                              sum_count_min, opts);
      check_equal(r, expected);
      REQUIRE(r.stats.blocks.size() == 1);
      CHECK(r.stats.blocks.front().rows == rows);
      CHECK(r.stats.partition_seconds > 0);
      // The whole block's copy (16 bytes a row) alone would take more than the query holds.
      CHECK(r.stats.peak_device_bytes < rows * 16);
    }
  }
}

TEST_CASE("the interleaved global table (key and accumulators in one record): exact, with growth and spills") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const distribution d : {distribution::uniform, distribution::zipf, distribution::heavy_hitter,
                               distribution::sorted_runs, distribution::all_distinct}) {
    const std::string distribution_name = name(d);
    CAPTURE(distribution_name);
    // The dictionary starts with the key type's extremes, the empty marker's key among them.
    const auto in = make_input(40'009, 4'000, d, rng);
    for (const auto strategy : all_strategies) {
      for (const std::uint64_t hint : {std::uint64_t{4'000}, std::uint64_t{3}}) {
        CAPTURE(strategy);
        CAPTURE(hint);
        options opts;
        opts.strategy = strategy;
        opts.config = launch_config{2, 64};
        opts.expected_groups = hint;  // 3: the table grows, rows spill, MERGE reads both layouts
        opts.interleaved_table = true;
        opts.block_bytes = 8192 * sizeof(std::uint64_t);
        auto driver = make_driver(std::span<const std::uint64_t>(in.keys), std::span<const std::int64_t>(in.vals),
                                  sum_count_min, opts);
        CHECK(driver->interleaved_table());
        driver->run_remaining();
        const auto r = driver->finalize_to_host<std::int64_t, std::uint64_t, std::int64_t>();
        check_equal(r, reference(in));
        if (hint == 3) CHECK(r.stats.table_growths >= 1);
      }
    }
  }
  // The automatic choice: arrays for small tables; never for direct addressing, where asking for
  // it is an error.
  const auto small = make_input(1'000, 10, distribution::uniform, rng);
  auto automatic = make_driver(std::span<const std::uint64_t>(small.keys), std::span<const std::int64_t>(small.vals),
                               sum_count_min, options{});
  CHECK_FALSE(automatic->interleaved_table());
  const std::vector<std::uint64_t> keys{5, 6, 7};
  const std::vector<std::int64_t> vals{1, 2, 3};
  options opts;
  opts.domain = key_domain(std::uint64_t{5}, std::uint64_t{7});
  opts.interleaved_table = true;
  CHECK_THROWS_AS(group_by(keys, vals, select<direct_addressing>(sum(col<0>)), opts), invalid_argument_error);
}

TEST_CASE("SHARED's hot-key table: zipf keys with the extremes and the empty marker's key hot, exact, with growth") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const std::uint64_t marker = ~std::uint64_t{0};
  // Zipf ranks over 5'000 groups; the hottest ranks are the empty marker's key, 0 and the largest
  // other key, so the hot table holds them (and its EMPTY_KEY bucket is used).
  std::vector<std::uint64_t> dictionary{marker, 0, marker - 1};
  while (dictionary.size() < 5'000) dictionary.push_back(rng() % (marker - 2) + 1);
  input in;
  in.keys = draw_keys(dictionary, 60'013, distribution::zipf, rng);
  in.vals = random_values<std::int64_t>(in.keys.size(), rng);
  for (const std::optional<bool> hot : {std::optional<bool>{}, std::optional<bool>{true}, std::optional<bool>{false}}) {
    for (const std::uint64_t hint : {std::uint64_t{0}, std::uint64_t{16}}) {
      CAPTURE(hot.has_value() ? int(*hot) : -1);
      CAPTURE(hint);
      options opts;
      opts.hot_table = hot;
      opts.block_bytes = 8192 * sizeof(std::uint64_t);
      if (hint) opts.expected_groups = hint;  // far too small: the table grows while hot keys stay local
      auto driver = make_driver(std::span<const std::uint64_t>(in.keys), std::span<const std::int64_t>(in.vals),
                                sum_count_min, opts);
      const execution_params shared{strategy_kind::shared, launch_config{2, 64}};
      CHECK(driver->plan().hot_keys().keys >= 3);
      CHECK(driver->plan().hot_table(shared) == hot.value_or(true));
      driver->run_remaining(shared);
      const auto result = driver->finalize_to_host<std::int64_t, std::uint64_t, std::int64_t>();
      for (const auto& block : result.stats.blocks) CHECK(block.hot_table == hot.value_or(true));
      if (hint) CHECK(result.stats.table_growths > 0);
      check_equal(result, reference(in));
    }
  }
}

TEST_CASE("the hot-key table's automatic choice: the default for zipf keys, not for uniform keys or one dominant key") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  const execution_params shared{strategy_kind::shared, launch_config{1, 256}};
  const auto skewed = make_input(200'000, 50'000, distribution::zipf, rng);
  auto zipf = make_driver(std::span<const std::uint64_t>(skewed.keys), std::span<const std::int64_t>(skewed.vals),
                          sum_count_min, options{});
  CHECK(zipf->plan().hot_table(shared));
  CHECK_FALSE(zipf->plan().hot_table({strategy_kind::workgroup_local, launch_config{1, 256}}));
  CHECK(zipf->default_params().strategy == strategy_kind::shared);
  const auto flat = make_input(200'000, 50'000, distribution::uniform, rng);
  auto uniform = make_driver(std::span<const std::uint64_t>(flat.keys), std::span<const std::int64_t>(flat.vals),
                             sum_count_min, options{});
  CHECK_FALSE(uniform->plan().hot_table(shared));
  const auto heavy = make_input(200'000, 50'000, distribution::heavy_hitter, rng);
  auto dominant = make_driver(std::span<const std::uint64_t>(heavy.keys), std::span<const std::int64_t>(heavy.vals),
                              sum_count_min, options{});
  CHECK(dominant->plan().run_cache(shared));
  CHECK_FALSE(dominant->plan().hot_table(shared));
  // Direct addressing has no hot-key table.
  options dense;
  dense.domain = key_domain(std::uint64_t{0}, std::uint64_t{99});
  const std::vector<std::uint64_t> keys(1'000, 7);
  const std::vector<std::int64_t> vals(1'000, 1);
  auto direct = make_driver(std::span<const std::uint64_t>(keys), std::span<const std::int64_t>(vals),
                            select<direct_addressing>(sum(col<0>), count(), min(col<0>)), dense);
  CHECK_FALSE(direct->plan().hot_table(shared));
}

TEST_CASE("the run cache's hot-key register: the sample's hottest key, the empty marker's key among them, exact") {
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  const std::uint64_t marker = ~std::uint64_t{0};
  for (const std::uint64_t hot : {marker, std::uint64_t{0}, std::uint64_t{12345}}) {
    for (const auto strategy : {strategy_kind::shared, strategy_kind::workgroup_local}) {
      CAPTURE(hot);
      CAPTURE(static_cast<int>(strategy));
      input in;
      in.keys.resize(40'003);
      for (auto& k : in.keys) k = rng() % 10 < 9 ? hot : rng() % 500;  // 90% one key
      in.vals = random_values<std::int64_t>(in.keys.size(), rng);
      // Asked for, the register comes with the runs of other keys; chosen automatically (SHARED
      // and a dominant key), the register alone. WORKGROUPLOCAL's replicated tables would
      // otherwise take the hot key, so it runs with the run cache asked for only.
      for (const std::optional<bool> cache : {std::optional<bool>{true}, std::optional<bool>{}}) {
        if (!cache && strategy != strategy_kind::shared) continue;
        CAPTURE(cache.has_value());
        options opts;
        opts.strategy = strategy;
        opts.run_cache = cache;
        opts.block_bytes = 8192 * sizeof(std::uint64_t);
        auto driver = make_driver(std::span<const std::uint64_t>(in.keys), std::span<const std::int64_t>(in.vals),
                                  sum_count_min, opts);
        CHECK(driver->plan().profile().hottest_key_share > 0.8);
        CHECK(driver->plan().run_cache(execution_params{strategy, launch_config{2, 64}}));
        driver->run_remaining(execution_params{strategy, launch_config{2, 64}});
        check_equal(driver->finalize_to_host<std::int64_t, std::uint64_t, std::int64_t>(), reference(in));
      }
    }
  }
}

TEST_CASE("the host phases of a query are filled, add up to at most its wall time; deferred profiles are kept") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto in = make_input(120'000, 20'000, distribution::uniform, rng);
  const auto expected = reference(in);
  const auto phases_consistent = [](const query_stats& s) {
    const auto& h = s.host;
    for (const double phase :
         {h.sample, h.profile, h.plan, h.programs, h.buffers, h.enqueue, h.wait, h.growth, h.finalize}) {
      CHECK(phase >= 0.0);
    }
    CHECK(h.sample + h.profile + h.plan + h.programs + h.buffers <= s.setup_seconds);
    CHECK(h.total() <= s.wall_seconds);
    CHECK(s.setup_seconds <= s.wall_seconds);
  };
  SUBCASE("host input and result, sampled, with growths") {
    options opts;
    opts.expected_groups = 100;  // the table grows, and rows spill
    opts.block_bytes = 128 << 10;
    const auto r = group_by(in.keys, in.vals, sum_count_min, opts);
    check_equal(r, expected);
    REQUIRE(r.stats.table_growths >= 1);
    phases_consistent(r.stats);
    CHECK(r.stats.host.sample > 0);  // no strategy given: the sample picks it
    CHECK(r.stats.host.profile > 0);
    CHECK(r.stats.host.plan > 0);
    CHECK(r.stats.host.programs > 0);
    CHECK(r.stats.host.buffers > 0);
    CHECK(r.stats.host.enqueue > 0);
    CHECK(r.stats.host.wait > 0);
    CHECK(r.stats.host.growth > 0);
    CHECK(r.stats.host.finalize > 0);
    // Profiled times of commands the driver did not wait for when it enqueued them.
    CHECK(r.stats.initialize_seconds > 0);
    CHECK(r.stats.merge_seconds > 0);
    CHECK(r.stats.finalize_seconds > 0);
  }
  SUBCASE("device input and result, no sample, growths") {
    context& c = ctx();
    cl::Buffer k(c.cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, in.keys.size() * 8,
                 const_cast<std::uint64_t*>(in.keys.data()));
    cl::Buffer v(c.cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, in.vals.size() * 8,
                 const_cast<std::int64_t*>(in.vals.data()));
    options opts;
    opts.expected_groups = 100;
    // Every decision the sample feeds is fixed: nothing to sample for.
    opts.strategy = strategy_kind::shared;
    opts.config = launch_config{4, 64};
    opts.run_cache = false;
    opts.hot_table = false;
    opts.block_bytes = 128 << 10;
    const auto on_device = group_by_on_device(device_column<std::uint64_t>(k, in.keys.size()),
                                              device_column<std::int64_t>(v, in.vals.size()), sum_count_min, opts);
    const auto& s = on_device.stats;
    REQUIRE(s.table_growths >= 1);
    phases_consistent(s);
    CHECK(s.host.sample == 0);
    CHECK(s.host.profile == 0);
    CHECK(s.host.growth > 0);
    CHECK(s.host.finalize > 0);
    CHECK(s.initialize_seconds > 0);
    CHECK(s.merge_seconds > 0);
    // The result's size comes from the counters of the last growth or completion.
    REQUIRE(on_device.size() == expected.size());
    result<std::uint64_t, std::int64_t, std::uint64_t, std::int64_t> copied;
    auto& queue = c.compute_queue();
    copied.keys.resize(on_device.size());
    queue.enqueueReadBuffer(on_device.keys, CL_TRUE, 0, on_device.size() * 8, copied.keys.data());
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      ((std::get<I>(copied.columns).resize(on_device.size()),
        queue.enqueueReadBuffer(on_device.column<I>(), CL_TRUE, 0, on_device.size() * 8,
                                std::get<I>(copied.columns).data())),
       ...);
    }(std::make_index_sequence<3>{});
    copied.stats.groups = on_device.size();
    check_equal(copied, expected);
  }
}

TEST_CASE("copies between a GPU and pageable memory are staged from 128 KiB or from three buffers on; never on a CPU") {
  const char* forced = std::getenv("GPUAGG_HOST_STAGING");
  const std::string mode = forced ? forced : "";
  CAPTURE(mode);
  if (mode == "always") {
    CHECK(detail::stage_host_copies("sm_90", 1, 1));
    CHECK(detail::stage_host_copies("cpu", 1, 1));
  } else if (mode == "never") {
    CHECK_FALSE(detail::stage_host_copies("sm_90", std::uint64_t{1} << 30, 10));
  } else {
    CHECK_FALSE(detail::stage_host_copies("sm_90", 12 << 10, 2));       // a single sum at 2^10 groups
    CHECK(detail::stage_host_copies("sm_90", 768 << 10, 2));            // at 2^16 groups
    CHECK(detail::stage_host_copies("sm_90", 4 * 80, 10));              // TPC-H Q1's ten columns
    CHECK_FALSE(detail::stage_host_copies("cpu", std::uint64_t{1} << 30, 10));
    CHECK_FALSE(detail::stage_host_copies("sm_90", 0, 10));             // nothing to copy
  }
}

TEST_CASE("a large host result's columns are sized while the device aggregates; only at most twice its rows, and an estimate a third low still fits") {
  // The rule: from 8 MiB of result on, on GPUs; GPUAGG_HOST_STAGING=always or never sets it too.
  const char* forced = std::getenv("GPUAGG_HOST_STAGING");
  const std::string mode = forced ? forced : "";
  CAPTURE(mode);
  if (mode.empty()) {
    CHECK(detail::presized_result_rows("sm_90", 1 << 10, 12) == 0);           // 12 KiB: sized at FINALIZE
    CHECK(detail::presized_result_rows("sm_90", 1 << 24, 12) == (1 << 24) + (1 << 21) + 1);
    CHECK(detail::presized_result_rows("cpu", 1 << 24, 12) == 0);             // the device's own cores
  } else if (mode == "always") {
    CHECK(detail::presized_result_rows("cpu", 1 << 10, 12) == (1 << 10) + (1 << 7) + 1);
  }

  // The sized result: sized to n rows when it was sized for at most 2n rows and reserved for n
  // (half as many rows again as it was sized for), else none.
  using host = result<std::uint32_t, std::uint64_t, double>;
  for (const std::size_t n : {700, 1000, 1400}) {
    CAPTURE(n);
    detail::presized_result<host> early(1000);
    const auto r = early.take(n);
    REQUIRE(r.has_value());
    CHECK(r->keys.size() == n);
    CHECK(std::get<0>(r->columns).size() == n);
    CHECK(std::get<1>(r->columns).size() == n);
    // Small columns too are reserved for 1500 rows: taking more than they were sized for
    // writes their missing rows in place instead of moving them to a larger allocation.
    CHECK(r->keys.capacity() >= 1500);
    CHECK(std::get<0>(r->columns).capacity() >= 1500);
    CHECK(std::get<1>(r->columns).capacity() >= 1500);
  }
  CHECK_FALSE(detail::presized_result<host>(1000).take(1501).has_value());  // beyond what was reserved
  CHECK_FALSE(detail::presized_result<host>(1000).take(499).has_value());   // more than twice the rows
  {
    // A large column sized for 3 M rows and reserved for 4.5 M takes 4 M in its own storage: the
    // rows past the sized ones are value-initialized like the others.
    detail::presized_result<host> early(3'000'000);
    const auto r = early.take(4'000'000);
    REQUIRE(r.has_value());
    const auto& column = std::get<0>(r->columns);
    REQUIRE(column.size() == 4'000'000);
    CHECK(column.capacity() >= 4'500'000);
    CHECK(std::all_of(column.begin(), column.end(), [](std::uint64_t x) { return x == 0; }));
    CHECK(r->keys.size() == 4'000'000);
  }
  CHECK_FALSE(detail::presized_result<host>(0).take(0).has_value());        // none started
  {
    // Past 16 MiB a column's pages are faulted in by several threads before it is sized: the
    // elements are still value-initialized.
    host big;
    const std::size_t n = 5'000'000;
    detail::size_result_for_copy(big, n);
    REQUIRE(big.keys.size() == n);
    REQUIRE(std::get<0>(big.columns).size() == n);
    REQUIRE(std::get<1>(big.columns).size() == n);
    CHECK(std::all_of(big.keys.begin(), big.keys.end(), [](std::uint32_t k) { return k == 0; }));
    CHECK(std::all_of(std::get<0>(big.columns).begin(), std::get<0>(big.columns).end(),
                      [](std::uint64_t x) { return x == 0; }));
    CHECK(std::get<1>(big.columns)[n - 1] == 0.0);
  }
  {
    // The columns' pages are touched together, each thread a share of all their bytes: every
    // page of every region once (the first byte of each 4096), no byte between them, for shares
    // that start and end inside regions and span several.
    std::vector<std::vector<unsigned char>> storage;
    for (const std::size_t mib : {20, 13, 17, 1}) storage.emplace_back((mib << 20) + 123, 0xff);
    std::vector<std::pair<unsigned char*, std::size_t>> regions;
    for (auto& v : storage) regions.emplace_back(v.data(), v.size());
    for (const unsigned threads : {1u, 2u, 3u, 16u}) {
      CAPTURE(threads);
      for (auto& v : storage) std::fill(v.begin(), v.end(), 0xff);
      detail::touch_pages(regions, threads);
      bool pages = true;
      bool between = true;
      for (const auto& v : storage) {
        for (std::size_t at = 0; at < v.size(); ++at) {
          if (at % 4096 == 0) {
            pages = pages && v[at] == 0;
          } else {
            between = between && v[at] == 0xff;
          }
        }
      }
      CHECK(pages);
      CHECK(between);
    }
  }
  {
    detail::presized_result<result<std::tuple<std::uint8_t, std::int64_t>, std::int64_t>> early(64);
    const auto r = early.take(40);
    REQUIRE(r.has_value());
    CHECK(r->keys.size() == 40);
    CHECK(std::get<1>(r->keys.columns).size() == 40);
  }

  // End to end on PoCL with the rule forced on: the estimate close, far too low (the table grows
  // past the sized rows) and far too high; exact each time, presized only where it fit.
  const scoped_env staging("GPUAGG_HOST_STAGING", "always");
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto in = make_input(200'000, 5'000, distribution::uniform, rng);
  const auto expected = reference(in);
  check_same(group_by(in.keys, in.vals, sum_count_min), expected);
  options hinted;
  hinted.expected_groups = 5'000;
  const auto fits = group_by(in.keys, in.vals, sum_count_min, hinted);
  CHECK(fits.stats.result_presized);
  check_same(fits, expected);
  // FINALIZE's time on the columns (the wait for the sizing thread, or its own sizing) is
  // measured, and is part of FINALIZE's.
  CHECK(fits.stats.result_sizing_seconds > 0);
  CHECK(fits.stats.result_sizing_seconds <= fits.stats.host.finalize);
  hinted.expected_groups = 100;
  const auto low = group_by(in.keys, in.vals, sum_count_min, hinted);
  CHECK_FALSE(low.stats.result_presized);
  check_same(low, expected);
  CHECK(low.stats.result_sizing_seconds > 0);
  CHECK(low.stats.result_sizing_seconds <= low.stats.host.finalize);
  hinted.expected_groups = 50'000;
  const auto high = group_by(in.keys, in.vals, sum_count_min, hinted);
  CHECK_FALSE(high.stats.result_presized);
  check_same(high, expected);
  hinted.expected_groups = 5'000;
  const auto tuned_result = tuned_group_by(in.keys, in.vals, sum_count_min, hinted);
  CHECK(tuned_result.result.stats.result_presized);
  check_same(tuned_result.result, expected);
  // A result of 2.5 M groups (20 MiB a column): each column read in two chunks
  // (staged_read_chunk_bytes: 16 MiB), each copied out as it arrives; exact, every chunk in its
  // place.
  {
    const std::size_t groups = (std::size_t{1} << 21) + (std::size_t{1} << 19);
    input big{key_dictionary<std::uint64_t>(groups, rng), {}};
    const std::vector<std::uint64_t> again(big.keys.begin(), big.keys.begin() + groups / 2);
    big.keys.insert(big.keys.end(), again.begin(), again.end());
    big.vals = random_values<std::int64_t>(big.keys.size(), rng);
    options sized;
    sized.expected_groups = groups;
    const auto r = group_by(big.keys, big.vals, sum_count_min, sized);
    REQUIRE(r.size() == groups);
    CHECK(r.stats.result_presized);
    check_same(r, reference(big));
  }
}
