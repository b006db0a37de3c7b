// Independent expectations on every key type: the hand-computed fixtures of expectations.hpp
// under keys that include each type's extremes and the table's empty marker.
#include "expectations.hpp"

using namespace gpuagg_expect;

// SHARED's global table on every key type, and the local (WORKGROUPLOCAL) or private
// (INDEPENDENT) tables on alternate ones: each strategy meets narrow and wide, signed and
// unsigned keys, within the time a JIT build per strategy and key type allows on PoCL.
TEST_CASE_TEMPLATE("hand-computed outputs on every key type (int32 values)", K, std::int8_t,
                   std::uint8_t, std::int16_t, std::uint16_t, std::int32_t, std::int64_t, std::uint64_t) {
  const bool local = sizeof(K) == 2 || std::is_same_v<K, std::int8_t> || std::is_same_v<K, std::uint64_t>;
  run_strategies<K>(int32_fixture(), five, {},
                    {strategy_kind::shared, local ? strategy_kind::workgroup_local : strategy_kind::independent},
                    std::is_same_v<K, std::int64_t>);
}
