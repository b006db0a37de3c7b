#pragma once
// The plan's per-device model (Rosenfeld et al., section 5: "a model that predicts the fastest
// parameters per device"), as data: for each regime of table size, the fastest configuration of
// each hash strategy on a device, measured there. Looked up device -> architecture -> vendor ->
// generic, as CLBlast's tuning database is. bench/plan_data.py writes a measured entry from a
// recorded sweep of every configuration (bench/results/<device>/plan_sweep.csv); the run of
// record then measures the plan against a fresh sweep (docs/benchmarks.md).

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
/// keys, on keys in runs (sorted input: neighbouring rows update one bucket), on keys with
/// frequent values (zipf: the hot-key table's case), with one dominant key (90% one key), and
/// on shuffled keys spread over the whole key range (scattered: {0, 0} where not measured); and
/// SHARED's on shuffled keys with direct addressing (direct: {0, 0} where not measured), whose
/// regime is its table's bytes as the hash table's is.
struct plan_regime {
  std::uint8_t max_table_log2 = 0;
  launch_config workgroup_local{4, 256};
  launch_config shared{16, 256};
  launch_config workgroup_local_runs{4, 256};
  launch_config shared_runs{16, 256};
  launch_config workgroup_local_frequent{4, 256};
  launch_config shared_frequent{16, 256};
  launch_config workgroup_local_dominant{4, 256};
  launch_config shared_dominant{16, 256};
  launch_config workgroup_local_scattered{0, 0};
  launch_config shared_scattered{0, 0};
  launch_config shared_direct{0, 0};
};

/// The shape of the query an entry was measured with: 4-byte keys and one 8-byte accumulator.
inline constexpr std::uint32_t recorded_bucket_bytes = 12;
inline constexpr std::uint32_t recorded_key_bytes = 4;

struct plan_entry {
  plan_level level = plan_level::generic;
  std::string_view match;  ///< a substring of the device name, the architecture, or the vendor
  std::span<const plan_regime> regimes;

  /// The regime of tables up to 2^`table_log2` (plan_regime::max_table_log2); the last one
  /// beyond them all.
  constexpr const plan_regime& regime(int table_log2) const {
    for (const auto& r : regimes) {
      if (table_log2 <= r.max_table_log2) return r;
    }
    return regimes.back();
  }
};

namespace detail::plan_data {

// BEGIN h100
// NVIDIA H100 80GB HBM3: bench/results/h100/plan_sweep.csv, by bench/plan_data.py.
inline constexpr plan_regime h100[] = {
    {0, {16, 64}, {8, 64}, {4, 256}, {256, 256}, {16, 128}, {512, 256}, {16, 128}, {1, 256}, {32, 128}, {16, 32}, {0, 0}},
    {2, {16, 64}, {8, 64}, {4, 256}, {256, 256}, {16, 128}, {512, 256}, {16, 128}, {1, 256}, {32, 128}, {2, 256}, {0, 0}},
    {4, {4, 256}, {16, 32}, {4, 256}, {256, 256}, {16, 128}, {512, 256}, {16, 128}, {1, 256}, {32, 256}, {1024, 256}, {0, 0}},
    {6, {32, 256}, {32, 256}, {4, 256}, {256, 256}, {16, 128}, {512, 256}, {16, 128}, {1, 256}, {32, 256}, {1024, 256}, {0, 0}},
    {8, {8, 256}, {32, 256}, {2, 256}, {128, 8}, {32, 256}, {512, 256}, {4, 256}, {16, 256}, {32, 256}, {512, 256}, {0, 0}},
    {10, {8, 256}, {256, 128}, {2, 256}, {128, 8}, {32, 256}, {512, 256}, {4, 256}, {16, 256}, {32, 256}, {512, 256}, {0, 0}},
    {12, {8, 256}, {256, 128}, {2, 256}, {128, 8}, {32, 256}, {512, 256}, {4, 256}, {16, 256}, {32, 256}, {512, 256}, {0, 0}},
    {14, {8, 256}, {32, 256}, {2, 256}, {32, 32}, {32, 256}, {512, 256}, {4, 256}, {16, 256}, {32, 256}, {512, 256}, {0, 0}},
    {16, {8, 256}, {64, 256}, {2, 256}, {32, 32}, {32, 256}, {512, 256}, {4, 256}, {16, 256}, {32, 256}, {512, 256}, {0, 0}},
    {18, {8, 256}, {256, 64}, {2, 256}, {32, 32}, {32, 256}, {512, 256}, {4, 256}, {16, 256}, {32, 256}, {1024, 128}, {0, 0}},
    {20, {8, 256}, {1024, 128}, {2, 256}, {32, 32}, {32, 256}, {512, 256}, {4, 256}, {128, 8}, {32, 256}, {512, 256}, {0, 0}},
    {22, {8, 256}, {1024, 256}, {2, 256}, {32, 32}, {32, 256}, {512, 256}, {4, 256}, {128, 8}, {32, 256}, {1024, 256}, {0, 0}},
    {24, {8, 256}, {1024, 256}, {2, 256}, {256, 32}, {32, 256}, {512, 128}, {4, 256}, {256, 8}, {32, 256}, {1024, 256}, {0, 0}},
    {26, {8, 256}, {2, 256}, {2, 256}, {256, 32}, {32, 256}, {512, 128}, {4, 256}, {256, 8}, {32, 256}, {1024, 256}, {0, 0}},
    {63, {8, 256}, {64, 8}, {2, 256}, {256, 32}, {32, 256}, {512, 128}, {4, 256}, {256, 8}, {32, 256}, {1024, 256}, {0, 0}},
};
// END h100

// BEGIN h200
// NVIDIA H200: bench/results/h200/plan_sweep.csv; scattered keys from bench/results/h100/plan_sweep.csv; direct addressing from bench/results/h200/plan_sweep_direct.csv, by bench/plan_data.py.
inline constexpr plan_regime h200[] = {
    {0, {8, 128}, {2, 256}, {16, 256}, {1024, 64}, {32, 128}, {1024, 256}, {32, 128}, {1, 256}, {32, 128}, {16, 32}, {0, 0}},
    {2, {4, 256}, {2, 256}, {16, 256}, {1024, 64}, {32, 128}, {1024, 256}, {32, 128}, {1, 256}, {32, 128}, {2, 256}, {0, 0}},
    {4, {16, 256}, {4, 32}, {16, 256}, {1024, 64}, {32, 128}, {1024, 256}, {32, 128}, {1, 256}, {32, 256}, {1024, 256}, {0, 0}},
    {6, {16, 256}, {128, 128}, {16, 256}, {1024, 64}, {32, 128}, {1024, 256}, {32, 128}, {1, 256}, {32, 256}, {1024, 256}, {0, 0}},
    {8, {4, 256}, {128, 128}, {2, 256}, {128, 8}, {16, 256}, {256, 256}, {32, 256}, {16, 256}, {32, 256}, {512, 256}, {0, 0}},
    {10, {4, 256}, {128, 128}, {2, 256}, {128, 8}, {16, 256}, {256, 256}, {32, 256}, {16, 256}, {32, 256}, {512, 256}, {0, 0}},
    {12, {4, 256}, {1024, 256}, {2, 256}, {128, 8}, {16, 256}, {256, 256}, {32, 256}, {16, 256}, {32, 256}, {512, 256}, {0, 0}},
    {14, {4, 256}, {1024, 256}, {4, 256}, {64, 32}, {32, 128}, {512, 256}, {32, 256}, {128, 32}, {32, 256}, {512, 256}, {0, 0}},
    {16, {16, 128}, {128, 256}, {4, 256}, {64, 32}, {32, 128}, {512, 256}, {32, 256}, {128, 32}, {32, 256}, {512, 256}, {0, 0}},
    {18, {8, 128}, {128, 256}, {4, 256}, {64, 32}, {32, 128}, {512, 256}, {32, 256}, {128, 32}, {32, 256}, {1024, 128}, {0, 0}},
    {20, {4, 256}, {1024, 128}, {16, 256}, {256, 32}, {32, 256}, {512, 256}, {32, 256}, {256, 8}, {32, 256}, {512, 256}, {0, 0}},
    {22, {16, 256}, {1024, 256}, {16, 256}, {256, 32}, {32, 256}, {512, 256}, {32, 256}, {256, 8}, {32, 256}, {1024, 256}, {0, 0}},
    {24, {16, 256}, {1024, 256}, {32, 256}, {512, 32}, {32, 256}, {256, 128}, {32, 256}, {256, 8}, {32, 256}, {1024, 256}, {2, 256}},
    {26, {16, 256}, {1024, 256}, {32, 256}, {512, 32}, {32, 256}, {256, 128}, {32, 256}, {256, 8}, {32, 256}, {1024, 256}, {2, 256}},
    {63, {32, 256}, {1024, 256}, {32, 256}, {512, 32}, {32, 256}, {256, 128}, {32, 256}, {256, 8}, {32, 256}, {1024, 256}, {4, 128}},
};
// END h200

// No measurement: WORKGROUPLOCAL at the paper's initial configuration (section 4.1, clamped to
// the device), SHARED with enough work items per compute unit to hide the latency of its global
// atomics (the paper's 1 x 512 leaves most of a large GPU idle once the table outgrows the cache).
inline constexpr plan_regime generic_gpu[] = {
    {63, {4, 512}, {16, 256}, {4, 512}, {16, 256}, {4, 512}, {16, 256}, {4, 512}, {16, 256}}};
// CPUs (PoCL): two work groups of one work item per core. A CPU runs a work group's items in
// turn on one core, so one item a group needs no local atomics and reads a contiguous share of
// the rows (kernel_variant::serial; its measurements in docs/decisions.md).
inline constexpr plan_regime generic_cpu[] = {
    {63, {2, 1}, {2, 1}, {2, 1}, {2, 1}, {2, 1}, {2, 1}, {2, 1}, {2, 1}}};

inline constexpr plan_entry entries[] = {
    {plan_level::device, "H100", h100},
    {plan_level::device, "H200", h200},
    {plan_level::architecture, "sm_90", h100},
    {plan_level::vendor, "NVIDIA", h100},
};

}  // namespace detail::plan_data
}  // namespace gpuagg
