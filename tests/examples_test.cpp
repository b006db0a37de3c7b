// The examples are test cases too, so they never rot.
#include <doctest/doctest.h>

#include <sstream>

#define GPUAGG_EXAMPLE_NO_MAIN
#include "paper_query.cpp"
#include "quickstart.cpp"
#include "tpch_q1.cpp"

TEST_CASE("examples/quickstart runs and agrees between host and device columns") {
  std::ostringstream out;
  CHECK(quickstart(out) == 0);
  const auto text = out.str();
  CHECK(text.find("g=7 count=3 sum=8 max=4") != std::string::npos);
  CHECK(text.find("g=3 count=2 sum=7 max=5") != std::string::npos);
  CHECK(text.find("g=42 count=1 sum=6 max=6") != std::string::npos);
  CHECK(text.find("3 groups from device buffers") != std::string::npos);
  CHECK(text.find("3 groups from pinned host memory") != std::string::npos);
}

TEST_CASE("examples/paper_query over 2^24 rows is verified against the CPU reference") {
  std::ostringstream out;
  CHECK(paper_query(out, 24, 1024) == 0);
  MESSAGE(out.str());
  CHECK(out.str().find("verified against the CPU reference: all 1024 groups") != std::string::npos);
}

TEST_CASE("examples/tpch_q1 at scale factor 0.05 is exact against the CPU pass") {
  std::ostringstream out;
  CHECK(tpch_q1(out, 0.05) == 0);
  MESSAGE(out.str());
  const auto text = out.str();
  CHECK(text.find("verified against the CPU reference: all 4 groups") != std::string::npos);
  // Q1's four groups, in its order.
  const auto a = text.find("\nA|F|"), nf = text.find("\nN|F|"), no = text.find("\nN|O|"), rf = text.find("\nR|F|");
  CHECK(a != std::string::npos);
  CHECK(nf != std::string::npos);
  CHECK(no != std::string::npos);
  CHECK(rf != std::string::npos);
  CHECK((a < nf && nf < no && no < rf));
}

TEST_CASE("TPC-H Q1's answer from gpuagg equals the CPU pass at several scale factors and on device input") {
  using namespace gpuagg;
  for (const double scale : {0.001, 0.02}) {
    CAPTURE(scale);
    const auto li = tpch::generate_lineitem(scale, 7);
    const auto expected = tpch::q1_reference(li);
    const auto r = group_by(keys(li.returnflag, li.linestatus),
                            values(li.quantity, li.extendedprice, li.discount, li.tax, li.shipdate), tpch::q1_query);
    CHECK(tpch::q1_rows(r) == expected);
  }
  // Device columns: the narrow columns read as such from device buffers.
  const auto li = tpch::generate_lineitem(0.01, 3);
  auto& ctx = default_context();
  const auto upload = [&](const auto& host) {
    using T = typename std::remove_cvref_t<decltype(host)>::value_type;
    cl::Buffer buffer = ctx.buffer(host.size() * sizeof(T), "a lineitem column");
    REQUIRE(ctx.compute_queue().enqueueWriteBuffer(buffer, CL_TRUE, 0, host.size() * sizeof(T), host.data()) ==
            CL_SUCCESS);
    return device_column<T>(buffer, host.size());
  };
  const auto rf = upload(li.returnflag);
  const auto ls = upload(li.linestatus);
  const auto q = upload(li.quantity);
  const auto p = upload(li.extendedprice);
  const auto d = upload(li.discount);
  const auto t = upload(li.tax);
  const auto s = upload(li.shipdate);
  CHECK(tpch::q1_rows(group_by(keys(rf, ls), values(q, p, d, t, s), tpch::q1_query)) == tpch::q1_reference(li));
}
