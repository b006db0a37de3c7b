#pragma once
// KEY_RANGE: the key column's smallest and largest key word, or each packed key column's, for
// the plan's choice of direct addressing (plan/direct_table.hpp, driver/key_range.hpp). Built
// into the group estimate's program (source.hpp: sample_program_source), which has the key's
// loads.

#include <cstdint>
#include <vector>

#include "../detail/fixed_string.hpp"
#include "args.hpp"

namespace gpuagg::detail::kernels {

inline constexpr fixed_string key_range_kernel{R"CLC(
// The smallest and largest value of every field of the key words of rows [first, first + n)
// (one key column: one field, the whole word; packed keys: a field a column, KEY_FIELDS), as
// unsigned values and in the order of signed values (the field's top bit flipped), per work
// group: out[4 (F g + f) .. + 3] = lowest, highest, lowest flipped, highest flipped of field f.
// The host takes the groups' extremes. `scratch`: 4 F words a work item; the work-group size a
// power of two.
// The extremes are kept in GPUAGG_RANGE_T, the narrowest type every field fits: a packed key's
// columns are 32 bits or narrower (together at most 64), so its fields compare as uint, not as
// the 64-bit word; one column compares as its word.
#if defined(KEY_FIELDS) && KEY_FIELDS > 1
#define GPUAGG_RANGE_FIELDS KEY_FIELDS
#define GPUAGG_RANGE_SHIFTS KEY_FIELD_SHIFTS
#define GPUAGG_RANGE_WIDTHS KEY_FIELD_BITS
#define GPUAGG_RANGE_T uint
#else
#define GPUAGG_RANGE_FIELDS 1
#define GPUAGG_RANGE_SHIFTS {0u}
#define GPUAGG_RANGE_WIDTHS {8u * (uint)sizeof(KEY_T)}
#define GPUAGG_RANGE_T KEY_T
#endif
#define GPUAGG_RANGE_STEP(K) { \
    const KEY_T k_ = (K); \
    for (uint f_ = 0; f_ < GPUAGG_RANGE_FIELDS; ++f_) { \
      const GPUAGG_RANGE_T v_ = (GPUAGG_RANGE_T)(k_ >> shifts[f_]) & masks[f_]; \
      lo[f_] = min(lo[f_], v_); hi[f_] = max(hi[f_], v_); \
      slo[f_] = min(slo[f_], v_ ^ tops[f_]); shi[f_] = max(shi[f_], v_ ^ tops[f_]); } }
__kernel void gpuagg_key_range(KEY_PARAMS, const ulong first, const ulong n, __global ulong* out,
                               __local ulong* scratch) {
  const uint shifts[GPUAGG_RANGE_FIELDS] = GPUAGG_RANGE_SHIFTS;
  const uint widths[GPUAGG_RANGE_FIELDS] = GPUAGG_RANGE_WIDTHS;
  GPUAGG_RANGE_T masks[GPUAGG_RANGE_FIELDS], tops[GPUAGG_RANGE_FIELDS];
  GPUAGG_RANGE_T lo[GPUAGG_RANGE_FIELDS], hi[GPUAGG_RANGE_FIELDS], slo[GPUAGG_RANGE_FIELDS],
      shi[GPUAGG_RANGE_FIELDS];
  for (uint f = 0; f < GPUAGG_RANGE_FIELDS; ++f) {
    masks[f] = (GPUAGG_RANGE_T)(widths[f] >= 64u ? ~0ul : ((1ul << widths[f]) - 1ul));
    tops[f] = (GPUAGG_RANGE_T)(1ul << (widths[f] - 1u));
    lo[f] = (GPUAGG_RANGE_T)~0ul; hi[f] = 0; slo[f] = (GPUAGG_RANGE_T)~0ul; shi[f] = 0;
  }
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
  for (uint f = 0; f < GPUAGG_RANGE_FIELDS; ++f) {
    __local ulong* mine = scratch + 4u * f * size;
    mine[l] = lo[f];
    mine[size + l] = hi[f];
    mine[2u * size + l] = slo[f];
    mine[3u * size + l] = shi[f];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = size / 2u; s > 0u; s >>= 1) {
    if (l < s) {
      for (uint f = 0; f < GPUAGG_RANGE_FIELDS; ++f) {
        __local ulong* mine = scratch + 4u * f * size;
        mine[l] = min(mine[l], mine[l + s]);
        mine[size + l] = max(mine[size + l], mine[size + l + s]);
        mine[2u * size + l] = min(mine[2u * size + l], mine[2u * size + l + s]);
        mine[3u * size + l] = max(mine[3u * size + l], mine[3u * size + l + s]);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0u) {
    for (uint f = 0; f < GPUAGG_RANGE_FIELDS; ++f) {
      __local const ulong* mine = scratch + 4u * f * size;
      __global ulong* group = out + 4ul * ((ulong)GPUAGG_RANGE_FIELDS * get_group_id(0) + f);
      group[0] = mine[0];
      group[1] = mine[size];
      group[2] = mine[2u * size];
      group[3] = mine[3u * size];
    }
  }
}
)CLC"};

/// gpuagg_key_range(KEY_PARAMS, first, n, out, scratch).
template <class Buffer>
struct key_range_args {
  std::vector<Buffer> key_columns;
  std::uint64_t first = 0;
  std::uint64_t n = 0;
  Buffer out;            ///< four words a field a work group
  local_memory scratch;  ///< four words a field a work item
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
