#pragma once
// KEY_RANGE: the key column's smallest and largest key word, for the plan's choice of direct
// addressing (plan/direct_table.hpp, driver/key_range.hpp). Built into the group estimate's
// program (source.hpp: sample_program_source), which has the key's loads.

#include <cstdint>
#include <vector>

#include "../detail/fixed_string.hpp"
#include "args.hpp"

namespace gpuagg::detail::kernels {

inline constexpr fixed_string key_range_kernel{R"CLC(
// The smallest and largest key word of rows [first, first + n), as unsigned words and in the
// order of signed values (the word's top bit flipped), per work group: out[4 g .. 4 g + 3] =
// lowest, highest, lowest flipped, highest flipped. The host takes the groups' extremes.
// `scratch`: four words a work item; the work-group size a power of two.
#define GPUAGG_RANGE_STEP(K) { \
    const ulong k_ = (ulong)(K); \
    lo = min(lo, k_); hi = max(hi, k_); \
    slo = min(slo, k_ ^ top); shi = max(shi, k_ ^ top); }
__kernel void gpuagg_key_range(KEY_PARAMS, const ulong first, const ulong n, __global ulong* out,
                               __local ulong* scratch) {
  const ulong top = (ulong)1 << (8u * (uint)sizeof(KEY_T) - 1u);
  ulong lo = ~0ul, hi = 0ul, slo = ~0ul, shi = 0ul;
  const ulong end = first + n;
  const ulong step = get_global_size(0);
  ulong row = first + get_global_id(0);
  // Four loads in flight before the first compare.
  for (; row + 3ul * step < end; row += 4ul * step) {
    const KEY_T k0 = KEY_LOAD(row), k1 = KEY_LOAD(row + step), k2 = KEY_LOAD(row + 2ul * step),
                k3 = KEY_LOAD(row + 3ul * step);
    GPUAGG_RANGE_STEP(k0) GPUAGG_RANGE_STEP(k1) GPUAGG_RANGE_STEP(k2) GPUAGG_RANGE_STEP(k3)
  }
  for (; row < end; row += step) GPUAGG_RANGE_STEP(KEY_LOAD(row))
  const uint l = get_local_id(0);
  const uint size = get_local_size(0);
  scratch[l] = lo;
  scratch[size + l] = hi;
  scratch[2u * size + l] = slo;
  scratch[3u * size + l] = shi;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = size / 2u; s > 0u; s >>= 1) {
    if (l < s) {
      scratch[l] = min(scratch[l], scratch[l + s]);
      scratch[size + l] = max(scratch[size + l], scratch[size + l + s]);
      scratch[2u * size + l] = min(scratch[2u * size + l], scratch[2u * size + l + s]);
      scratch[3u * size + l] = max(scratch[3u * size + l], scratch[3u * size + l + s]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0u) {
    __global ulong* mine = out + 4ul * get_group_id(0);
    mine[0] = scratch[0];
    mine[1] = scratch[size];
    mine[2] = scratch[2u * size];
    mine[3] = scratch[3u * size];
  }
}
)CLC"};

/// gpuagg_key_range(KEY_PARAMS, first, n, out, scratch).
template <class Buffer>
struct key_range_args {
  std::vector<Buffer> key_columns;
  std::uint64_t first = 0;
  std::uint64_t n = 0;
  Buffer out;            ///< four words a work group
  local_memory scratch;  ///< four words a work item
  template <class F>
  void for_each(F& f) const {
    f(key_columns);
    f(first);
    f(n);
    f(out);
    f(scratch);
  }
};

}  // namespace gpuagg::detail::kernels
