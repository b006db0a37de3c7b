// Bad input gets a clear, typed error and loses nothing.
#include <cstdlib>

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
