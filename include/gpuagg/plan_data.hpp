#pragma once
// The plan's per-device model (Rosenfeld et al., section 5: "a model that predicts the fastest
// parameters per device"), as data: for each regime of table size, the fastest configuration of
// each hash strategy on a device, measured there. Looked up device -> architecture -> vendor ->
// generic, as CLBlast's tuning database is. bench/plan_data.py writes the measured entries from
// a recorded search (bench/results/<device>/plan_space.csv); docs/plan.md says how.

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
/// with the fastest configuration of WORKGROUPLOCAL and of SHARED measured there and the
/// whole-query rate of the faster (G rows/s; 0 where not measured).
struct plan_regime {
  std::uint8_t max_table_log2 = 0;
  launch_config workgroup_local{4, 256};
  launch_config shared{16, 256};
  double rows_per_ns = 0;
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

// NVIDIA H100 80GB HBM3 (132 compute units, 48 KiB local memory, 50 MB L2), OpenCL through
// driver 580: bench/results/h100/plan_space.csv.
inline constexpr plan_regime h100[] = {
    {0, {8, 128}, {4, 64}, 0},        {2, {4, 256}, {16, 64}, 0},     {4, {4, 256}, {64, 256}, 0},
    {6, {4, 256}, {128, 256}, 0},     {8, {4, 256}, {64, 256}, 0},    {10, {4, 256}, {512, 32}, 0},
    {12, {4, 256}, {64, 256}, 0},     {14, {4, 256}, {64, 256}, 0},   {16, {4, 256}, {128, 256}, 0},
    {18, {4, 256}, {64, 256}, 0},     {20, {4, 256}, {64, 256}, 0},   {22, {4, 256}, {128, 256}, 0},
    {24, {4, 256}, {128, 256}, 0},    {26, {4, 256}, {8, 64}, 0},     {63, {4, 256}, {512, 8}, 0},
};

// No measurement: WORKGROUPLOCAL at the paper's initial configuration (section 4.1, clamped to
// the device), SHARED with enough work items per compute unit to hide the latency of its global
// atomics (the paper's 1 x 512 leaves most of a large GPU idle once the table outgrows the cache).
inline constexpr plan_regime generic_gpu[] = {{63, {4, 512}, {16, 256}, 0}};
// CPUs (PoCL): one work group per core and a few more, the paper's shapes.
inline constexpr plan_regime generic_cpu[] = {{63, {4, 512}, {1, 512}, 0}};

inline constexpr plan_entry entries[] = {
    {plan_level::device, "H100", h100},
    {plan_level::architecture, "sm_90", h100},
    {plan_level::vendor, "NVIDIA", h100},
};

}  // namespace detail::plan_data
}  // namespace gpuagg
