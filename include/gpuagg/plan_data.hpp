#pragma once
// The plan's per-device model (Rosenfeld et al., section 5: "a model that predicts the fastest
// parameters per device"), as data: for each regime of table size, the fastest configuration of
// each hash strategy on a device, measured there. Looked up device -> architecture -> vendor ->
// generic, as CLBlast's tuning database is. bench/plan_data.py writes a measured entry from the
// oracle's recorded sweep (bench/suite.sh: bench/results/<device>/sweep.csv); docs/plan.md.

#include <cstdint>
#include <span>
#include <string_view>

#include "launch_config.hpp"

namespace gpuagg {

/// How specific an entry is; the plan refines online what the entry does not know for sure.
enum class plan_level : std::uint8_t {
  device,        ///< measured on this very device (its name matches)
  architecture,  ///< measured on a device of the same architecture
  vendor,        ///< measured on another device of the same vendor
  generic,       ///< no measurement: safe configurations for any GPU, or for a CPU
};

constexpr std::string_view to_string(plan_level level) noexcept {
  switch (level) {
    case plan_level::device: return "device";
    case plan_level::architecture: return "architecture";
    case plan_level::vendor: return "vendor";
    case plan_level::generic: return "generic";
  }
  return "?";
}

/// One regime: tables up to `max_table_log2` (log2 of the table's bytes over 24, which is the
/// group count for the recorded query: 4-byte keys, one 8-byte accumulator, load factor 1/2),
/// with the fastest configuration of WORKGROUPLOCAL and of SHARED measured there on shuffled
/// keys, and on keys in runs (sorted input: neighbouring rows update one bucket).
struct plan_regime {
  std::uint8_t max_table_log2 = 0;
  launch_config workgroup_local{4, 256};
  launch_config shared{16, 256};
  launch_config workgroup_local_runs{4, 256};
  launch_config shared_runs{16, 256};
};

/// The shape of the query an entry was measured with: 4-byte keys and one 8-byte accumulator.
inline constexpr std::uint32_t recorded_bucket_bytes = 12;
inline constexpr std::uint32_t recorded_key_bytes = 4;

struct plan_entry {
  plan_level level = plan_level::generic;
  std::string_view match;  ///< a substring of the device name, the architecture, or the vendor
  std::span<const plan_regime> regimes;
};

namespace detail::plan_data {

// BEGIN h100
// NVIDIA H100 80GB HBM3: bench/results/h100/sweep.csv, by bench/plan_data.py.
inline constexpr plan_regime h100[] = {
    {0, {8, 256}, {64, 128}, {8, 128}, {512, 128}},
    {2, {4, 256}, {4, 256}, {8, 128}, {512, 128}},
    {4, {4, 256}, {8, 128}, {8, 128}, {512, 128}},
    {6, {4, 256}, {128, 64}, {8, 128}, {512, 128}},
    {8, {16, 256}, {16, 256}, {2, 256}, {128, 8}},
    {10, {8, 256}, {64, 256}, {2, 256}, {128, 8}},
    {12, {8, 256}, {128, 256}, {2, 256}, {128, 8}},
    {14, {8, 256}, {64, 256}, {2, 256}, {32, 32}},
    {16, {8, 256}, {128, 256}, {2, 256}, {32, 32}},
    {18, {8, 256}, {64, 128}, {2, 256}, {32, 32}},
    {20, {8, 256}, {512, 128}, {2, 256}, {32, 32}},
    {22, {8, 256}, {1024, 256}, {2, 256}, {32, 32}},
    {24, {8, 256}, {4, 128}, {2, 256}, {32, 32}},
    {26, {8, 256}, {32, 8}, {2, 256}, {32, 32}},
    {63, {8, 256}, {1024, 8}, {2, 256}, {32, 32}},
};
// END h100

// No measurement: WORKGROUPLOCAL at the paper's initial configuration (section 4.1, clamped to
// the device), SHARED with enough work items per compute unit to hide the latency of its global
// atomics (the paper's 1 x 512 leaves most of a large GPU idle once the table outgrows the cache).
inline constexpr plan_regime generic_gpu[] = {{63, {4, 512}, {16, 256}, {4, 512}, {16, 256}}};
// CPUs (PoCL): one work group per core and a few more, the paper's shapes.
inline constexpr plan_regime generic_cpu[] = {{63, {4, 512}, {1, 512}, {4, 512}, {1, 512}}};

inline constexpr plan_entry entries[] = {
    {plan_level::device, "H100", h100},
    {plan_level::architecture, "sm_90", h100},
    {plan_level::vendor, "NVIDIA", h100},
};

}  // namespace detail::plan_data
}  // namespace gpuagg
