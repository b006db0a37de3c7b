// Independent expectations of every aggregate over every value type, of C's promotions and of
// WHERE: outputs written by hand (expectations.hpp says why and how they are chosen).
#include "expectations.hpp"

using namespace gpuagg_expect;

TEST_CASE("hand-computed outputs of every aggregate over every integer type, in one query (uint32 keys)") {
  run_together<std::uint32_t>(int8_fixture(), int16_fixture(), int32_fixture(), int64_fixture(), uint8_fixture(),
                              uint16_fixture(), uint32_fixture(), uint64_fixture());
}

TEST_CASE("hand-computed outputs of every aggregate over float and double: NaN, infinities, -0.0, extremes") {
  run_together<std::uint32_t>(float_fixture(), double_fixture());
}
