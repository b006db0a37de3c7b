#pragma once
// What gpuagg knows about a device: plain data, filled by the runtime from OpenCL queries, or
// written by hand to describe a device (the plan's tests describe devices they do not have).

#include <cstdint>
#include <string>

namespace gpuagg {

/// What the plan, the driver and the tuner need to know about a device.
struct device_info {
  std::string name;
  std::string vendor;
  /// The chip's architecture where the driver tells it: "sm_90" (NVIDIA's compute capability),
  /// "gfx90a" (AMD), "cpu" (an OpenCL CPU device); empty where unknown.
  std::string architecture;
  std::string driver_version;
  std::string platform_name;
  std::uint32_t compute_units = 1;
  std::uint32_t max_work_group_size = 1;
  std::uint64_t local_mem_bytes = 0;
  std::uint64_t global_mem_bytes = 0;
  std::uint64_t max_alloc_bytes = 0;
  /// CL_DEVICE_GLOBAL_MEM_CACHE_SIZE. Not the L2 on every GPU: an H200 reports less than 8 MiB
  /// against about 50 MB of L2, so the plan bounds cache-resident tables by its own constant
  /// (query_planner::cache_resident_table_bytes).
  std::uint64_t global_cache_bytes = 0;
  bool is_gpu = false;
  bool int64_atomics = false;
  bool fp64 = false;
};

}  // namespace gpuagg
