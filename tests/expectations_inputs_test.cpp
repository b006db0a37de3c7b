// Independent expectations on composite keys, the other hashing schemes, direct addressing and
// every input kind: the hand-computed fixtures of expectations.hpp.
#include "expectations.hpp"

using namespace gpuagg_expect;

TEST_CASE("hand-computed outputs under the other hashing schemes and direct addressing") {
  run_strategies<std::int64_t>(uint64_fixture(), five_murmur, {},
                               {strategy_kind::shared, strategy_kind::independent});
  options around_marker;  // the domain holds the unsigned keys' empty marker (65535)
  around_marker.domain = key_domain(0, 65535);
  run_strategies<std::uint16_t>(int8_fixture(), five_direct, around_marker,
                                {strategy_kind::shared, strategy_kind::workgroup_local});
}

TEST_CASE_TEMPLATE("hand-computed outputs on composite keys", Pair, std::pair<std::int8_t, std::uint16_t>,
                   std::pair<std::uint32_t, std::int32_t>) {
  using A = typename Pair::first_type;
  using B = typename Pair::second_type;
  // (-1, max) and (max, -1) are all bits set: the packed word of the empty marker.
  const std::array<std::tuple<A, B>, 8> label{
      std::tuple<A, B>{A(-1), B(-1)},
      {std::numeric_limits<A>::min(), std::numeric_limits<B>::min()},
      {std::numeric_limits<A>::max(), std::numeric_limits<B>::max()},
      {A(0), B(0)},
      {A(0), B(1)},
      {A(1), B(0)},
      {std::numeric_limits<A>::min(), std::numeric_limits<B>::max()},
      {std::numeric_limits<A>::max(), std::numeric_limits<B>::min()}};
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto f = float_fixture();
  const auto [tuples, vals] = fixture_rows(f, label, rng);
  std::vector<A> a;
  std::vector<B> b;
  for (const auto& t : tuples) {
    a.push_back(std::get<0>(t));
    b.push_back(std::get<1>(t));
  }
  // The global table for both, and the local or the private tables (one JIT build each on PoCL).
  const strategy_kind other = sizeof(A) == 1 ? strategy_kind::workgroup_local : strategy_kind::independent;
  for (const auto strategy : {strategy_kind::shared, other}) {
    CAPTURE(strategy);
    options opts;
    opts.strategy = strategy;
    opts.config = launch_config{2, 64};
    check_groups(group_by(keys(a, b), vals, five, opts), label, f);
    opts.block_bytes = 12;  // 3 rows of float, 2 or 3 of the key columns
    check_groups(group_by(keys(a, b), vals, five, opts), label, f);
  }
  if (sizeof(A) == 1) check_groups(group_by(keys(a, b), vals, five), label, f);
}

TEST_CASE("hand-computed outputs on every input kind: vector, span, pinned, device column, result on device") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto f = double_fixture();
  const auto label = labels<std::int64_t>();
  const auto [keys, vals] = fixture_rows(f, label, rng);
  const std::size_t n = keys.size();
  pinned_array<std::int64_t> pinned_keys(ctx(), n);
  pinned_array<double> pinned_vals(ctx(), n);
  std::copy(keys.begin(), keys.end(), pinned_keys.data());
  std::copy(vals.begin(), vals.end(), pinned_vals.data());
  auto& queue = ctx().compute_queue();
  cl::Buffer key_buffer = ctx().buffer(n * 8, "a test column");
  cl::Buffer val_buffer = ctx().buffer(n * 8, "a test column");
  REQUIRE(queue.enqueueWriteBuffer(key_buffer, CL_TRUE, 0, n * 8, keys.data()) == CL_SUCCESS);
  REQUIRE(queue.enqueueWriteBuffer(val_buffer, CL_TRUE, 0, n * 8, vals.data()) == CL_SUCCESS);
  const device_column<std::int64_t> dev_keys(key_buffer, n);
  const device_column<double> dev_vals(val_buffer, n);
  // The default plan, and SHARED in blocks of 3 rows (the input kind is the same to every strategy).
  std::vector<options> variants(1);
  for (const auto strategy : {strategy_kind::shared}) {
    options o;
    o.strategy = strategy;
    o.config = launch_config{2, 64};
    o.block_bytes = 24;  // 3 rows a block
    variants.push_back(o);
  }
  for (std::size_t v = 0; v < variants.size(); ++v) {
    CAPTURE(v);
    const options& opts = variants[v];
    check_groups(group_by(keys, vals, five, opts), label, f);
    check_groups(group_by(std::span<const std::int64_t>(keys), std::span<const double>(vals), five, opts), label, f);
    check_groups(group_by(std::span<const std::int64_t>(pinned_keys), std::span<const double>(pinned_vals), five, opts),
                 label, f);
    check_groups(group_by(dev_keys, dev_vals, five, opts), label, f);
    const auto d = group_by_on_device(dev_keys, dev_vals, five, opts);
    result<std::int64_t, std::uint64_t, double, double, double, double> back;
    const std::size_t groups = d.size();
    back.keys.resize(groups);
    std::apply([&](auto&... column) { (column.resize(groups), ...); }, back.columns);
    if (groups > 0) {
      REQUIRE(queue.enqueueReadBuffer(d.keys, CL_TRUE, 0, groups * 8, back.keys.data()) == CL_SUCCESS);
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        const bool read = ((queue.enqueueReadBuffer(d.template column<I>(), CL_TRUE, 0, groups * 8,
                                                    std::get<I>(back.columns).data()) == CL_SUCCESS) &&
                           ...);
        REQUIRE(read);
      }(std::make_index_sequence<5>{});
    }
    check_groups(back, label, f);
  }
}
