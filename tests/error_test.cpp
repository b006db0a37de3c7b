// Bad input gets a clear, typed error and loses nothing.
#include <bit>
#include <cctype>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "support.hpp"

using namespace gpuagg;
using namespace gpuagg_test;

namespace {
const auto sum_query = select(sum(col<0>));
}

TEST_CASE("mismatched column lengths: invalid_argument_error naming both lengths, inputs untouched") {
  const std::vector<std::uint32_t> keys{1, 2, 3};
  const std::vector<std::int32_t> vals{1, 2};
  const auto keys_before = keys;
  try {
    group_by(keys, vals, sum_query);
    FAIL("no error");
  } catch (const invalid_argument_error& e) {
    CHECK(std::string(e.what()).find("3 rows") != std::string::npos);
    CHECK(std::string(e.what()).find("has 2") != std::string::npos);
  }
  CHECK(keys == keys_before);
}

TEST_CASE("empty input is a valid empty result") {
  const std::vector<std::int64_t> keys;
  const std::vector<double> vals;
  const auto r = group_by(keys, vals, select(count(), sum(col<0>)));
  CHECK(r.size() == 0);
  CHECK(r.column<0>().empty());
  CHECK(r.stats.rows == 0);
}

TEST_CASE("no device matches GPUAGG_DEVICE: no_device_error listing the devices") {
  setenv("GPUAGG_DEVICE", "no-such-device-anywhere", 1);
  CHECK_THROWS_AS(context(), no_device_error);
  setenv("GPUAGG_DEVICE", "999", 1);
  try {
    context unused;
    FAIL("no error");
  } catch (const no_device_error& e) {
    CHECK(std::string(e.what()).find("0: ") != std::string::npos);
  }
  setenv("GPUAGG_DEVICE", "0", 1);
  CHECK_NOTHROW(context());
  unsetenv("GPUAGG_DEVICE");
}

TEST_CASE("every bad device selector is no_device_error naming the devices there are") {
  const auto devices = detail::all_devices();
  REQUIRE_FALSE(devices.empty());
  // An index beyond unsigned long (std::stoul's std::out_of_range must not escape), one beyond
  // the devices, blank ones, signed numbers and names that match nothing; "gpu:N" and "cpu:N"
  // malformed or beyond the devices of that type.
  for (const char* selector : {"99999999999999999999999", "18446744073709551616", "4294967296", "999", " ", "\t\n ",
                               "-1", "-0", "+0", " -3 ", "no-such-device-anywhere", "cpu:", "cpu:x", "cpu:-1",
                               "cpu:+0", "cpu:0x", "cpu: 0", "cpu:999", "cpu:99999999999999999999999", "gpu:999"}) {
    const std::string shown = selector;
    CAPTURE(shown);
    try {
      (void)detail::choose_device(selector);
      FAIL("no error");
    } catch (const no_device_error& e) {
      const std::string message = e.what();
      for (std::size_t i = 0; i < devices.size(); ++i) {
        CHECK(message.find(std::to_string(i) + ": " + detail::describe(devices[i])) != std::string::npos);
      }
      if (shown.starts_with("cpu:") || shown.starts_with("gpu:")) CHECK(message.find("names no") != std::string::npos);
    }
  }
  // "gpu:N" and "cpu:N" count the devices of that type over all platforms.
  for (const auto& [type, name] : {std::pair{cl_device_type{CL_DEVICE_TYPE_CPU}, "cpu"},
                                  std::pair{cl_device_type{CL_DEVICE_TYPE_GPU}, "gpu"}}) {
    std::vector<cl_device_id> of_type;
    for (const auto& entry : devices) {
      if (entry.second.getInfo<CL_DEVICE_TYPE>() & type) of_type.push_back(entry.second());
    }
    for (std::size_t i = 0; i < of_type.size(); ++i) {
      CHECK(detail::choose_device(std::string(name) + ":" + std::to_string(i))() == of_type[i]);
      std::string upper = name;  // the type's name in capitals: selectors ignore case
      for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      CHECK(detail::choose_device(" " + upper + ":" + std::to_string(i) + "\n")() == of_type[i]);
    }
    CHECK_THROWS_AS(detail::choose_device(std::string(name) + ":" + std::to_string(of_type.size())), no_device_error);
  }
  // Surrounding whitespace (a stray newline from a script) is no part of the selector.
  CHECK(detail::choose_device(" 0\n")() == devices[0].second());
  CHECK(detail::choose_device("0")() == devices[0].second());
  // What the first query meets: the default context reads GPUAGG_DEVICE.
  setenv("GPUAGG_DEVICE", "99999999999999999999999", 1);
  CHECK_THROWS_AS(context(), no_device_error);
  unsetenv("GPUAGG_DEVICE");
}

TEST_CASE("a kernel that fails to build: build_error with the log and the source line") {
  context fresh(ctx().cl_context(), ctx().device());
  const std::string broken = "__kernel void fine(__global int* x) { x[0] = 1; }\n"
                             "__kernel void broken(__global int* x) { x[0] = undeclared_thing; }\n";
  try {
    fresh.program(broken);
    FAIL("no error");
  } catch (const build_error& e) {
    CHECK_FALSE(e.log().empty());
    CHECK(e.source_line().find("undeclared_thing") != std::string::npos);
    CHECK(std::string(e.what()).find("line 2") != std::string::npos);
    CHECK(std::string(e.what()).find("build log") != std::string::npos);
  }
}

TEST_CASE("the source line a build log points at: each compiler's file name, the first location, or none") {
  const std::string source = "first line\nsecond line\nthird line\n";
  using detail::source_line_from_log;
  // NVIDIA names the file <kernel>; clang-based compilers <source>, <program source> or a
  // temporary .cl file (PoCL).
  CHECK(source_line_from_log("<kernel>:2:5: error: use of undeclared identifier", source) == "line 2: second line");
  CHECK(source_line_from_log("<source>:3:1: error: x", source) == "line 3: third line");
  CHECK(source_line_from_log("<program source>:1:12: warning: y", source) == "line 1: first line");
  CHECK(source_line_from_log("/tmp/pocl/xy.cl:2:7: error: z", source) == "line 2: second line");
  // The first location that parses, after false starts: a file name with no line, a line with
  // no column.
  CHECK(source_line_from_log("a.cl: note\n<kernel>:9: no column\n<kernel>:3:4: error\n<kernel>:1:1", source) ==
        "line 3: third line");
  // No location, a line past the source, a line number too large for any source: nothing.
  CHECK(source_line_from_log("error: something went wrong", source).empty());
  CHECK(source_line_from_log("<kernel>:7:1: error", source).empty());
  CHECK(source_line_from_log("<kernel>:99999999999999999999999:1: error", source).empty());
  CHECK(source_line_from_log("", source).empty());
  CHECK(source_line_from_log("<kernel>:", source).empty());
  CHECK(source_line_from_log("<kernel>:2:", source).empty());
}

TEST_CASE("device memory exhausted: out_of_memory_error saying how much was asked") {
  const std::vector<std::uint64_t> keys{1, 2, 3};
  const std::vector<std::uint64_t> vals{1, 2, 3};
  options opts;
  opts.expected_groups = std::uint64_t{1} << 40;
  try {
    group_by(keys, vals, sum_query, opts);
    FAIL("no error");
  } catch (const out_of_memory_error& e) {
    CHECK(e.requested_bytes() > (std::uint64_t{1} << 40));
    CHECK(std::string(e.what()).find("bytes") != std::string::npos);
  }
  CHECK_THROWS_AS(ctx().buffer(std::uint64_t{1} << 62, "a test buffer"), out_of_memory_error);
}

TEST_CASE("OpenCL errors carry their names") {
  try {
    detail::check(CL_INVALID_KERNEL_ARGS, "launching");
    FAIL("no error");
  } catch (const opencl_error& e) {
    CHECK(e.code() == CL_INVALID_KERNEL_ARGS);
    CHECK(e.name() == "CL_INVALID_KERNEL_ARGS");
    CHECK(std::string(e.what()).find("launching failed: CL_INVALID_KERNEL_ARGS") != std::string::npos);
  }
}

TEST_CASE("direct_addressing: a key outside the domain is a typed error; a missing domain too") {
  const std::vector<std::int32_t> keys{0, 1, 2, 50};
  const std::vector<std::int32_t> vals{1, 1, 1, 1};
  options opts;
  CHECK_THROWS_AS(group_by(keys, vals, select<direct_addressing>(sum(col<0>)), opts), invalid_argument_error);
  opts.domain = key_domain(std::int32_t{0}, std::int32_t{9});
  CHECK_THROWS_AS(group_by(keys, vals, select<direct_addressing>(sum(col<0>)), opts), key_out_of_domain_error);
  opts.domain = key_domain(std::int32_t{0}, std::int32_t{99});
  CHECK(group_by(keys, vals, select<direct_addressing>(sum(col<0>)), opts).size() == 4);
}

TEST_CASE_TEMPLATE("direct_addressing: options::domain = {min, max} of int literals works for every key type", Key,
                   std::int32_t, std::uint32_t, std::int64_t, std::uint64_t) {
  // The literals are ints whatever the key type; the domain takes the query's key type at the
  // call. Signed keys: [-5, 100] with -1 (the empty marker's bits) and both ends; unsigned
  // ones: [0, 100].
  constexpr bool is_signed = std::is_signed_v<Key>;
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::vector<Key> keys{static_cast<Key>(is_signed ? -5 : 0), Key{100}, static_cast<Key>(is_signed ? -1 : 1)};
  for (int i = 0; i < 200; ++i) keys.push_back(static_cast<Key>(is_signed ? int(rng() % 106) - 5 : int(rng() % 101)));
  const auto vals = random_values<std::int64_t>(keys.size(), rng);
  const auto query = select<direct_addressing>(sum(col<0>), count());
  using bound = bound_query<single_key<Key>, std::remove_cvref_t<decltype(query)>, std::int64_t>;
  const auto expected = reference_group_by<bound>(std::span<const Key>(keys), std::span<const std::int64_t>(vals));
  options opts;
  if constexpr (is_signed) {
    opts.domain = {-5, 100};
  } else {
    opts.domain = {0, 100};
  }
  check_equal(group_by(keys, vals, query, opts), expected);
  // The top of the key type's range, in a wider or narrower integer type than the key's.
  constexpr auto top = std::numeric_limits<Key>::max();
  std::vector<Key> high{top, Key(top - 9), Key(top - 3), top};
  const std::vector<std::int64_t> ones(high.size(), 1);
  if constexpr (std::is_same_v<Key, std::uint64_t>) {
    opts.domain = {static_cast<unsigned long long>(top - 9), top};
  } else {
    opts.domain = {static_cast<long long>(top) - 9, static_cast<unsigned long long>(top)};
  }
  const auto r = group_by(high, ones, select<direct_addressing>(count()), opts);
  CHECK(r.size() == 3);
}

TEST_CASE("direct_addressing: a domain whose bounds the key type cannot hold is invalid_argument_error at the call") {
  const auto count_query = select<direct_addressing>(count());
  const auto rejects = [&]<class Key>(std::vector<Key> keys, key_domain domain, const char* bounds) {
    const std::string shown = bounds;
    CAPTURE(shown);
    const std::vector<std::int32_t> vals(keys.size(), 1);
    options opts;
    opts.domain = domain;
    try {
      group_by(keys, vals, count_query, opts);
      FAIL_CHECK("no error");
    } catch (const key_out_of_domain_error& e) {
      FAIL_CHECK("a key out of the domain instead of the domain itself: " << std::string(e.what()));
    } catch (const invalid_argument_error& e) {
      const std::string message = e.what();
      CHECK(message.find(bounds) != std::string::npos);
      const std::string key_name =
          std::string(std::is_signed_v<Key> ? "int" : "uint") + (sizeof(Key) == 4 ? "32_t" : "64_t");
      CHECK(message.find(key_name) != std::string::npos);
    }
  };
  const std::vector<std::uint32_t> u32{0, 1, 2, 5};
  const std::vector<std::int32_t> i32{0, 1, 2, 5};
  const std::vector<std::uint64_t> u64{0, 1, 2, 5};
  const std::vector<std::int64_t> i64{0, 1, 2, 5};
  rejects(u32, {-1, 5}, "[-1, 5]");
  rejects(u32, {0, std::uint64_t{1} << 32}, "[0, 4294967296]");
  // Beyond the key type at both ends: wrapped to 32 bits, it would be [0, 5].
  rejects(u32, {std::uint64_t{1} << 32, (std::uint64_t{1} << 32) + 5}, "[4294967296, 4294967301]");
  rejects(i32, {std::int64_t{-1} << 31, std::int64_t{1} << 31}, "[-2147483648, 2147483648]");
  rejects(i32, {-(std::int64_t{1} << 31) - 1, 5}, "[-2147483649, 5]");
  rejects(u64, {-1, 5}, "[-1, 5]");
  rejects(i64, {0, ~std::uint64_t{0}}, "[0, 18446744073709551615]");
  // Reversed bounds are no domain.
  rejects(i64, {100, -5}, "min <= max");
}

TEST_CASE("an explicit configuration the kernel cannot run: the message names the largest work-group size that runs") {
  const std::vector<std::uint32_t> keys{3, 1, 3, 2, 1, 3};
  const std::vector<std::uint32_t> vals{1, 2, 3, 4, 5, 6};
  const std::vector<std::uint64_t> sums{7, 4, 10};  // keys 1, 2, 3
  for (const auto strategy : all_strategies) {
    CAPTURE(strategy);
    options opts;
    opts.strategy = strategy;
    opts.config = launch_config{1, ctx().info().max_work_group_size * 2};
    std::string message;
    try {
      group_by(keys, vals, sum_query, opts);
      FAIL("no error");
    } catch (const invalid_argument_error& e) {
      message = e.what();
    }
    CAPTURE(message);
    const auto at = message.find("exceeds the ");
    REQUIRE(at != std::string::npos);
    const std::uint32_t largest = std::stoul(message.substr(at + std::string_view("exceeds the ").size()));
    CHECK(std::has_single_bit(largest));
    CHECK(message.find(" that " + std::string(to_string(strategy)) + "'s kernel allows on " + ctx().info().name) !=
          std::string::npos);
    opts.config = launch_config{1, largest};
    auto r = group_by(keys, vals, sum_query, opts);
    sort_by_key(r);
    CHECK(r.keys == std::vector<std::uint32_t>{1, 2, 3});
    CHECK(r.column<0>() == sums);
    opts.config = launch_config{1, largest * 2};
    CHECK_THROWS_AS(group_by(keys, vals, sum_query, opts), invalid_argument_error);
  }
}

TEST_CASE("unusable options and configurations are invalid_argument_error") {
  const std::vector<std::uint32_t> keys{1, 2, 3};
  const std::vector<std::uint32_t> vals{1, 2, 3};
  options opts;
  opts.max_load_factor = 0;
  CHECK_THROWS_AS(group_by(keys, vals, sum_query, opts), invalid_argument_error);
  opts = {};
  opts.strategy = strategy_kind::shared;
  opts.config = launch_config{1, ctx().info().max_work_group_size * 2};
  CHECK_THROWS_AS(group_by(keys, vals, sum_query, opts), invalid_argument_error);
  opts.config = launch_config{0, 64};
  CHECK_THROWS_AS(group_by(keys, vals, sum_query, opts), invalid_argument_error);
  opts = {};
  opts.local_table_copies = 3;  // 0 (automatic) or a power of two
  CHECK_THROWS_AS(group_by(keys, vals, sum_query, opts), invalid_argument_error);
  for (const std::uint32_t parts : {3u, 2048u}) {  // 0 (automatic), 1 or a power of two up to 1024
    opts = {};
    opts.partitions = parts;
    CHECK_THROWS_AS(group_by(keys, vals, sum_query, opts), invalid_argument_error);
  }
}

TEST_CASE("host and device columns cannot be mixed in one query") {
  const std::vector<std::uint32_t> keys{1, 2, 3};
  const std::vector<std::uint32_t> vals{1, 2, 3};
  cl::Buffer v(ctx().cl_context(), cl_mem_flags(CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR), std::size_t{12},
               const_cast<std::uint32_t*>(vals.data()));
  CHECK_THROWS_AS(group_by(keys, device_column<std::uint32_t>(v, 3), sum_query), invalid_argument_error);
}
