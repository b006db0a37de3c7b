// Independent expectations of expressions: C's promotions inside aggregates with their result
// types, and WHERE emptying groups, every output written by hand (expectations.hpp says why).
#include "expectations.hpp"

using namespace gpuagg_expect;

TEST_CASE("C's promotions inside aggregates, with their result types") {
  // One row: i8 = 127, u8 = 255, i16 = -32768, u16 = 65535, i32 = -7, u32 = 0, i64 = 2^32,
  // f32 = 0.5, f64 = 0.25.
  std::vector<std::uint32_t> k{42};
  std::vector<std::int8_t> i8{127};
  std::vector<std::uint8_t> u8{255};
  std::vector<std::int16_t> i16{-32768};
  std::vector<std::uint16_t> u16{65535};
  std::vector<std::int32_t> i32{-7};
  std::vector<std::uint32_t> u32{0};
  std::vector<std::int64_t> i64{4294967296LL};
  std::vector<float> f32{0.5F};
  std::vector<double> f64{0.25};
  auto [c8, cu8, c16, cu16, c32, cu32, c64, cf, cd] = columns<9>;
  const auto q = select(max(c8 + c8),                  // int: 254, not int8's -2
                        max(cu8 * cu8),                // int: 65025
                        max(cu16 + cu16),              // int: 131070
                        max(c16 - lit<1>),             // int: -32769
                        max(c32 + cu32),               // unsigned: 2^32 - 7
                        max(c32 + c64),                // int64: 2^32 - 7
                        max(cu32 - lit<1>),            // unsigned wraps: 2^32 - 1
                        max(c32 / lit<2>),             // truncates toward zero: -3
                        max(cf + c32),                 // float: -6.5
                        max(cf * cd),                  // double: 0.125
                        max(c64 / c32),                // int64: -613566756
                        max(cu8 > lit<200>),           // a comparison is an int: 1
                        sum(cu32 - lit<1>),            // uint32 2^32 - 1 summed in uint64
                        sum(c8 * c8),                  // int 16129 summed in int64
                        min(cu16 + c16),               // int: 32767
                        max(cu8 + lit<std::uint64_t{5}>));  // uint64: 260
  using bound = bound_query<single_key<std::uint32_t>, std::remove_const_t<decltype(q)>, std::int8_t, std::uint8_t,
                            std::int16_t, std::uint16_t, std::int32_t, std::uint32_t, std::int64_t, float, double>;
  static_assert(std::is_same_v<typename bound::output_tuple,
                               std::tuple<int, int, int, int, std::uint32_t, std::int64_t, std::uint32_t, int, float,
                                          double, std::int64_t, int, std::uint64_t, std::int64_t, int,
                                          std::uint64_t>>);
  // Each strategy (the expression text is the same in each, the accumulators' paths are not).
  std::vector<options> variants;
  for (const auto strategy : all_strategies) {
    options o;
    o.strategy = strategy;
    o.config = launch_config{2, 64};
    variants.push_back(o);
  }
  for (const auto& opts : variants) {
    CAPTURE(opts.strategy.value_or(strategy_kind::shared));
    const auto r = group_by(k, values(i8, u8, i16, u16, i32, u32, i64, f32, f64), q, opts);
    REQUIRE(r.size() == 1);
    CHECK(r.keys[0] == 42U);
    CHECK(r.column<0>()[0] == 254);
    CHECK(r.column<1>()[0] == 65025);
    CHECK(r.column<2>()[0] == 131070);
    CHECK(r.column<3>()[0] == -32769);
    CHECK(r.column<4>()[0] == 4294967289U);
    CHECK(r.column<5>()[0] == 4294967289LL);
    CHECK(r.column<6>()[0] == 4294967295U);
    CHECK(r.column<7>()[0] == -3);
    CHECK(r.column<8>()[0] == -6.5F);
    CHECK(r.column<9>()[0] == 0.125);
    CHECK(r.column<10>()[0] == -613566756LL);
    CHECK(r.column<11>()[0] == 1);
    CHECK(r.column<12>()[0] == 4294967295ULL);
    CHECK(r.column<13>()[0] == 16129);
    CHECK(r.column<14>()[0] == 32767);
    CHECK(r.column<15>()[0] == 260ULL);
  }
}

TEST_CASE("groups emptied by WHERE are absent, the others counted over passing rows only") {
  // key 10: v {5, -3, 8} with flags {1, 0, 1}; 20: {7, 9}, both flags 0; 30: {-2}, flag 1;
  // -1 (the empty marker's bits): {4, 6}, flags 1.
  std::vector<std::int32_t> k{10, 20, 10, 30, -1, 10, 20, -1};
  std::vector<std::int32_t> v{5, 7, -3, -2, 4, 8, 9, 6};
  std::vector<std::int16_t> flag{1, 0, 0, 1, 1, 1, 0, 1};
  const auto where_flag = select(count(), sum(col<0>), min(col<0>), max(col<0>)).where(col<1> != lit<0>);
  const auto where_none = select(count(), sum(col<0>)).where(col<0> > lit<100>);
  const auto where_direct =
      select<direct_addressing>(count(), sum(col<0>), min(col<0>), max(col<0>)).where(col<1> != lit<0>);
  std::vector<options> variants(1);
  for (const auto strategy : all_strategies) {
    options o;
    o.strategy = strategy;
    o.config = launch_config{2, 64};
    variants.push_back(o);
    o.block_bytes = 8;  // 4 rows a block
    variants.push_back(o);
  }
  const auto check_flagged = [](auto r) {
    sort_by_key(r);
    REQUIRE(r.size() == 3);
    CHECK(r.keys == std::vector<std::int32_t>{-1, 10, 30});
    CHECK(r.template column<0>() == std::vector<std::uint64_t>{2, 2, 1});
    CHECK(r.template column<1>() == std::vector<std::int64_t>{10, 13, -2});
    CHECK(r.template column<2>() == std::vector<std::int32_t>{4, 5, -2});
    CHECK(r.template column<3>() == std::vector<std::int32_t>{6, 8, -2});
  };
  for (std::size_t i = 0; i < variants.size(); ++i) {
    CAPTURE(i);
    options opts = variants[i];
    check_flagged(group_by(k, values(v, flag), where_flag, opts));
    CHECK(group_by(k, values(v, flag), where_none, opts).size() == 0);
    // Direct addressing's WHERE on SHARED and WORKGROUPLOCAL (INDEPENDENT's private tables
    // take the same predicate text; one program fewer to build on PoCL).
    if (opts.strategy == strategy_kind::independent) continue;
    opts.domain = key_domain(-1, 30);
    check_flagged(group_by(k, values(v, flag), where_direct, opts));
  }
}
