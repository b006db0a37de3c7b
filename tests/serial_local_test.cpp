// Work groups of one work item (kernel_variant::serial, -DGPUAGG_SERIAL_LOCAL): local tables
// updated with plain loads and stores and each work item's rows one contiguous share. Every
// aggregate over every value type, both strategies that build the variant (WORKGROUPLOCAL's
// probed, range and perfect local tables, the run cache's register and the cold-row queue;
// SHARED with and without its hot-key table), 32- and 64-bit keys with the extreme values,
// hashing and direct addressing, five distributions, row counts from 0 to several blocks and
// not a multiple of the work items. The matrix (aggregate_*_test) runs the same with 64 work
// items a group; the plan's choice of the variant is plan_test's.
#include "aggregate_matrix.hpp"

using namespace gpuagg;
using namespace gpuagg_test;

namespace {

template <class Key, class Scheme>
void run_serial(std::mt19937_64& rng) {
  const auto query = all_aggregates_select<Scheme>();
  for (const auto strategy : {strategy_kind::workgroup_local, strategy_kind::shared}) {
    for (const std::uint32_t groups_per_cu : {1u, 3u}) {
      for (const auto& [rows, groups] : matrix_shapes) {
        for (const auto d : all_distributions) {
          if (d == distribution::all_distinct && rows > 5000) continue;
          CAPTURE(strategy);
          CAPTURE(groups_per_cu);
          CAPTURE(rows);
          CAPTURE(groups);
          CAPTURE(name(d));
          options opts;
          const auto keys = matrix_keys<Key, Scheme>(rows, groups, d, rng, opts);
          const auto in = matrix_values(rows, rng);
          opts.strategy = strategy;
          opts.config = launch_config{groups_per_cu, 1};
          opts.block_bytes = 24 << 10;
          opts.expected_groups = groups;
          const auto expected = matrix_reference<Key, Scheme>(keys, in);
          const auto run = [&](const options& o) {
            const auto r = group_by(keys, values(in.i32, in.u32, in.i64, in.f32, in.f64), query, o);
            check_equal(r, expected);
            CHECK(r.stats.rows == rows);
            for (const auto& b : r.stats.blocks) CHECK((b.serial && b.params.config.work_group_size == 1));
            return r;
          };
          run(opts);
          const bool skewed = d == distribution::zipf || d == distribution::heavy_hitter;
          if (!Scheme::is_identity && skewed && rows >= 999) {
            options more = opts;
            if (strategy == strategy_kind::shared) {
              more.hot_table = true;  // the hot keys' local table, updated plainly
              const auto r = run(more);
              CHECK(std::any_of(r.stats.blocks.begin(), r.stats.blocks.end(), [](const auto& b) { return b.hot_table; }));
            } else {
              more.run_cache = true;  // the hot key's register, and the cold-row queue where it fits
              more.local_table_copies = 1;
              run(more);
            }
          }
          if (!Scheme::is_identity && strategy == strategy_kind::workgroup_local && rows >= 999 &&
              d != distribution::all_distinct) {
            options perfect = opts;
            perfect.perfect_local_table = true;
            run(perfect);
          }
        }
      }
    }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("one work item a group: every aggregate matches the CPU reference (32-bit keys)", Scheme,
                   hashing<murmur3_finalizer, linear_probing>, hashing<multiply_shift, quadratic_probing>,
                   direct_addressing) {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  run_serial<std::uint32_t, Scheme>(rng);
}

TEST_CASE_TEMPLATE("one work item a group: every aggregate matches the CPU reference (64-bit keys)", Scheme,
                   hashing<murmur3_finalizer, linear_probing>, direct_addressing) {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  run_serial<std::int64_t, Scheme>(rng);
}

TEST_CASE("one work item a group: the range local table over a dense range, keys outside it") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  constexpr std::uint32_t top = std::numeric_limits<std::uint32_t>::max();
  for (const std::size_t groups : {std::size_t{1}, std::size_t{300}, std::size_t{3000}}) {
    for (const std::uint32_t base : {0u, static_cast<std::uint32_t>(top - (groups - 1))}) {
      for (const auto d : {distribution::uniform, distribution::heavy_hitter, distribution::sorted_runs}) {
        CAPTURE(groups);
        CAPTURE(base);
        CAPTURE(name(d));
        const auto dictionary =
            key_dictionary<std::uint32_t>(groups, rng, false, base, static_cast<std::uint32_t>(base + groups - 1));
        auto k = draw_keys(dictionary, 40'000, d, rng);
        for (std::size_t i = 0; i < 20; ++i) k[32'768 + (i * 353) % 7'000] = static_cast<std::uint32_t>(rng());
        const auto v = random_values<std::int64_t>(k.size(), rng);
        options opts;
        opts.strategy = strategy_kind::workgroup_local;
        opts.config = launch_config{2, 1};
        opts.range_local_table = true;
        opts.block_bytes = 8192 * sizeof(std::int64_t);
        const auto r = group_by(k, v, sum_count_min, opts);
        using bound =
            bound_query<single_key<std::uint32_t>, std::remove_const_t<decltype(sum_count_min)>, std::int64_t>;
        check_equal(r, reference_group_by<bound>(std::span<const std::uint32_t>(k), std::span<const std::int64_t>(v)));
        CHECK(std::any_of(r.stats.blocks.begin(), r.stats.blocks.end(), [](const auto& b) { return b.range_local && b.serial; }));
      }
    }
  }
}

TEST_CASE("one work item a group: the default call on a CPU device runs it, exactly") {
  if (ctx().info().is_gpu) return;  // the generic CPU entry's choice; a GPU's entry has none
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  for (const std::size_t groups : {std::size_t{16}, std::size_t{5000}, std::size_t{200'000}}) {
    CAPTURE(groups);
    const auto k = draw_keys(key_dictionary<std::uint32_t>(groups, rng), 300'000, distribution::uniform, rng);
    const auto v = random_values<std::int64_t>(k.size(), rng);
    const auto r = group_by(k, v, sum_count_min);
    using bound = bound_query<single_key<std::uint32_t>, std::remove_const_t<decltype(sum_count_min)>, std::int64_t>;
    check_equal(r, reference_group_by<bound>(std::span<const std::uint32_t>(k), std::span<const std::int64_t>(v)));
    for (const auto& b : r.stats.blocks) CHECK((b.serial && b.params.config.work_group_size == 1));
  }
}
