// The examples are test cases too, so they never rot.
#include <doctest/doctest.h>

#include <sstream>

#define GPUAGG_EXAMPLE_NO_MAIN
#include "paper_query.cpp"
#include "quickstart.cpp"

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
