#pragma once
// The comparison baselines of gpuagg's benchmarks: sort-based aggregation, after "Atomics for
// sort-based aggregation" (the atomics paper). Not included by groupby.hpp; needs Boost.Compute.
//
//   gpuagg::baselines::sort_reduce_by_key(ctx, keys, values)   // Boost.Compute sort + reduce_by_key
//   gpuagg::baselines::sort_then_atomics(ctx, keys, values,    // sort + the paper's section 3
//       {gpuagg::baselines::atomics_variant::private_array, /*chunk_size=*/8, /*work_group_size=*/256});
//
// Both return gpuagg::result<K, uint64 count, sum, V min, V max>, as group_by does with
// select(count(), sum(col<0>), min(col<0>), max(col<0>)).

#include "baselines/sort_atomics.hpp"
#include "baselines/sort_reduce.hpp"
