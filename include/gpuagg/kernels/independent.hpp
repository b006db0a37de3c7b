#pragma once
// INDEPENDENT's AGGREGATE kernel and the parameters it adds: the private tables.

#include <cstdint>

#include "../detail/fixed_string.hpp"
#include "aggregate.hpp"

namespace gpuagg::detail::kernels {

// INDEPENDENT (section 2.2): every work item aggregates into its own table in global memory,
// merged into the global table at the end of the block. A row its table cannot hold goes to the
// global table directly.
inline constexpr fixed_string aggregate_independent{R"CLC(
__kernel void gpuagg_aggregate(GPUAGG_AGGREGATE_PARAMS, __global KEY_T* p_keys ACC_PARAMS(__global, p_),
                               const uint private_bits, const uint private_capacity) {
  GPUAGG_REBIND(g_, __global)
  GPUAGG_BEGIN_COUNTS()
  const ulong lane = get_global_id(0);
  const ulong stride = get_global_size(0);
  for (uint s = 0; s <= private_capacity; ++s) {
    p_keys[s * stride + lane] = EMPTY_KEY;
    ACC_INIT(p_, s * stride + lane)
  }
  uint private_special = 0;
  for (ulong row = row_begin + lane; row < row_end; row += stride) {
    if (!ROW_PASSES(row)) continue;
    const KEY_T k = GPUAGG_ROW_KEY(row);
    ACC_LOAD_ROW(a_, row)
    const uint ps = gpuagg_insert_private(p_keys, stride, lane, k, private_bits, private_capacity, key_min);
    if (ps != GPUAGG_NO_SLOT) {
      if (ps == private_capacity) private_special = 1;
      ACC_COMBINE_LOADED(private, p_, ps * stride + lane, a_)
    } else {
      GPUAGG_LOADED_TO_GLOBAL(k, a_)
    }
  }
  for (uint s = 0; s <= private_capacity; ++s) {
    const ulong at = s * stride + lane;
    const KEY_T k = s < private_capacity ? p_keys[at] : EMPTY_KEY;
    const bool used = s < private_capacity ? k != EMPTY_KEY : private_special != 0;
    if (used) GPUAGG_PARTIAL_TO_GLOBAL(k, p_, at)
  }
  GPUAGG_END_COUNTS()
}
)CLC"};

/// INDEPENDENT's parameters after GPUAGG_AGGREGATE_PARAMS: p_keys ACC_PARAMS(p_),
/// private_bits, private_capacity.
template <class Buffer>
struct independent_args {
  table_arg<Buffer> private_tables;  ///< every work item's table, interleaved across work items
  std::uint32_t bits = 0;
  std::uint32_t capacity = 0;        ///< buckets of each private table
  template <class F>
  void for_each(F& f) const {
    f(private_tables);
    f(bits);
    f(capacity);
  }
};

}  // namespace gpuagg::detail::kernels
