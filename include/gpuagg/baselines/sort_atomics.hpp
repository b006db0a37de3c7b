#pragma once
// Baseline 2: sort, then aggregate with atomics, after "Atomics for sort-based aggregation"
// (the atomics paper), section 3. Four phases (section 3.1, Fig. 4): sort (Boost.Compute
// sort_by_key), map (a flag where the sorted key changes), prefix sum (Boost.Compute
// inclusive_scan of the flags: each row's dense group index) and aggregate, in one of the
// paper's variants:
//  - naive_global (sections 3.1, 4.1.1): one atomic update per row into the global result;
//  - naive_local (section 4.1.1): one local-memory atomic per row into the work group's
//    partials, then only the work group's first and last group merged atomically;
//  - private_variable (section 3.2): a private partial per work item, one atomic merge per
//    group boundary in its chunk;
//  - private_array (section 3.2): private partials of every group in the chunk, then exactly
//    two atomic merges per work item (first and last group), the rest plain stores.
// SELECT g, count(*), sum(v), min(v), max(v) GROUP BY g, with gpuagg's semantics (see
// sort_reduce.hpp). Groups come out sorted by key.

#include <boost/compute/algorithm/inclusive_scan.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "sort_reduce.hpp"

namespace gpuagg::baselines {

/// The aggregation phase's variant (the atomics paper, section 3).
enum class atomics_variant { naive_global, naive_local, private_variable, private_array };

inline const char* name(atomics_variant variant) {
  switch (variant) {
    case atomics_variant::naive_global: return "naive_global";
    case atomics_variant::naive_local: return "naive_local";
    case atomics_variant::private_variable: return "private_variable";
    case atomics_variant::private_array: return "private_array";
  }
  return "?";
}

inline std::ostream& operator<<(std::ostream& os, atomics_variant variant) { return os << name(variant); }

inline constexpr atomics_variant all_atomics_variants[] = {atomics_variant::naive_global, atomics_variant::naive_local,
                                                           atomics_variant::private_variable,
                                                           atomics_variant::private_array};

/// The aggregation phase's tuning knobs (section 4.1): rows per work item and work-group size.
struct atomics_params {
  atomics_variant variant = atomics_variant::private_variable;
  std::uint32_t chunk_size = 16;        ///< rows per work item; private_array: at most 1024
  std::uint32_t work_group_size = 256;  ///< work items per work group, for every kernel of the phase
  /// naive_local: most groups a work group keeps in local memory (0: as many as its tile of
  /// chunk_size * work_group_size rows can hold and local memory allows); the tile's groups
  /// past it update the global result directly.
  std::uint32_t max_local_groups = 0;

  friend bool operator==(const atomics_params&, const atomics_params&) = default;
};

inline std::ostream& operator<<(std::ostream& os, const atomics_params& p) {
  os << '{' << p.variant << ", chunk " << p.chunk_size << ", work group " << p.work_group_size;
  if (p.max_local_groups != 0) os << ", local groups " << p.max_local_groups;
  return os << '}';
}

namespace detail {

inline constexpr std::uint32_t max_private_array_chunk = 1024;

// The OpenCL C of the map, initialize and aggregate phases. The host prefixes type macros:
// KEY_T, VAL_T, SUM_T (ulong or double), SUM_WIDE_T (long, ulong or double), VAL_IS_FLOAT,
// SUM_IS_DOUBLE, VAL_NATIVE_MINMAX (32-bit integers), VAL_WORD, AS_WORD, AS_VAL, VAL_CAS.
inline constexpr std::string_view atomics_library = R"CLC(
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#if VAL_IS_FLOAT
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

// A group's partial aggregate over consecutive rows (the private variable of section 3.2).
typedef struct {
  ulong count;
  SUM_T sum;
  VAL_T minimum;
  VAL_T maximum;
} bl_partial;

// Combines with gpuagg's semantics: integer sums wrap in 64 bits, NaN above every number.
inline SUM_T bl_to_sum(VAL_T v) { return (SUM_T)(SUM_WIDE_T)v; }
inline VAL_T bl_minimum(VAL_T a, VAL_T b) {
#if VAL_IS_FLOAT
  return (!isnan(b) && (isnan(a) || b < a)) ? b : a;
#else
  return b < a ? b : a;
#endif
}
inline VAL_T bl_maximum(VAL_T a, VAL_T b) {
#if VAL_IS_FLOAT
  return (!isnan(a) && (isnan(b) || a < b)) ? b : a;
#else
  return a < b ? b : a;
#endif
}
inline SUM_T bl_add(SUM_T a, SUM_T b) { return a + b; }

inline bl_partial bl_row(VAL_T v) {
  bl_partial p;
  p.count = 1;
  p.sum = bl_to_sum(v);
  p.minimum = v;
  p.maximum = v;
  return p;
}
inline void bl_add_row(bl_partial* p, VAL_T v) {
  p->count += 1;
  p->sum = bl_add(p->sum, bl_to_sum(v));
  p->minimum = bl_minimum(p->minimum, v);
  p->maximum = bl_maximum(p->maximum, v);
}

// Atomic combines: native where OpenCL has them, else a compare-and-swap loop that stops
// early when the value would not change.
#define BL_CAS_ATOMIC(NAME, T, WORD_T, TO_WORD, FROM_WORD, CAS, COMBINE, AS) \
inline void NAME##_##AS(volatile __##AS T* p, T x) { \
  volatile __##AS WORD_T* word = (volatile __##AS WORD_T*)p; \
  WORD_T seen = *word; \
  for (;;) { \
    const WORD_T next = TO_WORD(COMBINE(FROM_WORD(seen), x)); \
    if (next == seen) return; \
    const WORD_T prior = CAS(word, seen, next); \
    if (prior == seen) return; \
    seen = prior; \
  } \
}
#if SUM_IS_DOUBLE
#define BL_DEFINE_SUM(AS) BL_CAS_ATOMIC(bl_atomic_sum, double, ulong, as_ulong, as_double, atom_cmpxchg, bl_add, AS)
#else
#define BL_DEFINE_SUM(AS) inline void bl_atomic_sum_##AS(volatile __##AS ulong* p, ulong x) { atom_add(p, x); }
#endif
#if VAL_NATIVE_MINMAX
#define BL_DEFINE_MINMAX(AS) \
inline void bl_atomic_minimum_##AS(volatile __##AS VAL_T* p, VAL_T x) { atomic_min(p, x); } \
inline void bl_atomic_maximum_##AS(volatile __##AS VAL_T* p, VAL_T x) { atomic_max(p, x); }
#else
#define BL_DEFINE_MINMAX(AS) \
BL_CAS_ATOMIC(bl_atomic_minimum, VAL_T, VAL_WORD, AS_WORD, AS_VAL, VAL_CAS, bl_minimum, AS) \
BL_CAS_ATOMIC(bl_atomic_maximum, VAL_T, VAL_WORD, AS_WORD, AS_VAL, VAL_CAS, bl_maximum, AS)
#endif

// A partial into group g of a result (global) or of a work group's partials (local).
#define BL_DEFINE_MERGE(AS) \
BL_DEFINE_SUM(AS) \
BL_DEFINE_MINMAX(AS) \
inline void bl_merge_##AS(volatile __##AS ulong* counts, volatile __##AS SUM_T* sums, \
                          volatile __##AS VAL_T* mins, volatile __##AS VAL_T* maxs, uint g, bl_partial p) { \
  atom_add(counts + g, p.count); \
  bl_atomic_sum_##AS(sums + g, p.sum); \
  bl_atomic_minimum_##AS(mins + g, p.minimum); \
  bl_atomic_maximum_##AS(maxs + g, p.maximum); \
}
BL_DEFINE_MERGE(global)
BL_DEFINE_MERGE(local)

// A group no other work item touches: stored without synchronisation (section 3.2).
inline void bl_store(__global ulong* counts, __global SUM_T* sums, __global VAL_T* mins, __global VAL_T* maxs,
                     uint g, bl_partial p) {
  counts[g] = p.count;
  sums[g] = p.sum;
  mins[g] = p.minimum;
  maxs[g] = p.maximum;
}

#define BL_RESULT_PARAMS \
  __global ulong* g_count, __global SUM_T* g_sum, __global VAL_T* g_min, __global VAL_T* g_max
#define BL_RESULT g_count, g_sum, g_min, g_max
)CLC";

inline constexpr std::string_view atomics_phases = R"CLC(
// Map (section 3.1, Fig. 4): 1 where the sorted key changes, else 0. Row 0 gets 0, so the
// inclusive prefix sum of the flags is each row's dense group index.
__kernel void bl_boundaries(__global const KEY_T* keys, const uint n, __global uint* flags) {
  const ulong row = get_global_id(0);
  if (row < n) flags[row] = (row > 0 && keys[row] != keys[row - 1]) ? 1u : 0u;
}

// At each group's first row: its key into the result, its accumulators to the identities.
__kernel void bl_initialize(__global const KEY_T* keys, __global const uint* flags, __global const uint* group_of_row,
                            const uint n, __global KEY_T* group_keys, BL_RESULT_PARAMS, const VAL_T min_identity,
                            const VAL_T max_identity) {
  const ulong row = get_global_id(0);
  if (row >= n || (row > 0 && flags[row] == 0)) return;
  const uint g = group_of_row[row];
  group_keys[g] = keys[row];
  g_count[g] = 0;
  g_sum[g] = 0;
  g_min[g] = min_identity;
  g_max[g] = max_identity;
}

// Naive global atomics (sections 3.1, 4.1.1): one atomic update per row. Work group w covers
// a tile of chunk * local size rows; its work items take the tile's rows round-robin, so
// neighbouring work items read neighbouring rows.
__kernel void bl_naive_global(__global const VAL_T* vals, __global const uint* group_of_row, const uint n,
                              const uint chunk, BL_RESULT_PARAMS) {
  const ulong tile = (ulong)get_group_id(0) * get_local_size(0) * chunk;
  for (uint j = 0; j < chunk; ++j) {
    const ulong row = tile + (ulong)j * get_local_size(0) + get_local_id(0);
    if (row < n) bl_merge_global(BL_RESULT, group_of_row[row], bl_row(vals[row]));
  }
}

// Naive local atomics (section 4.1.1): the tile's groups are consecutive ids, so partials
// live at g - first_group in local memory, updated with local atomics. Then, as for the private
// array, only the tile's first and last group (which neighbouring tiles may share) merge
// atomically; the groups between are stored. Groups past local_capacity go straight to global.
__kernel void bl_naive_local(__global const VAL_T* vals, __global const uint* group_of_row, const uint n,
                             const uint chunk, BL_RESULT_PARAMS, __local ulong* l_count, __local SUM_T* l_sum,
                             __local VAL_T* l_min, __local VAL_T* l_max, const uint local_capacity,
                             const VAL_T min_identity, const VAL_T max_identity) {
  const uint lid = get_local_id(0);
  const uint lsize = get_local_size(0);
  const ulong tile_begin = (ulong)get_group_id(0) * lsize * chunk;
  if (tile_begin >= n) return;  // the whole work group
  const ulong tile_end = min(tile_begin + (ulong)lsize * chunk, (ulong)n);
  const uint first_group = group_of_row[tile_begin];
  const uint tile_groups = group_of_row[tile_end - 1] - first_group + 1u;
  const uint local_groups = min(tile_groups, local_capacity);
  for (uint e = lid; e < local_groups; e += lsize) {
    l_count[e] = 0;
    l_sum[e] = 0;
    l_min[e] = min_identity;
    l_max[e] = max_identity;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint j = 0; j < chunk; ++j) {
    const ulong row = tile_begin + (ulong)j * lsize + lid;
    if (row < tile_end) {
      const uint g = group_of_row[row];
      if (g - first_group < local_groups) {
        bl_merge_local(l_count, l_sum, l_min, l_max, g - first_group, bl_row(vals[row]));
      } else {
        bl_merge_global(BL_RESULT, g, bl_row(vals[row]));
      }
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint e = lid; e < local_groups; e += lsize) {
    bl_partial p;
    p.count = l_count[e];
    p.sum = l_sum[e];
    p.minimum = l_min[e];
    p.maximum = l_max[e];
    if (e == 0 || e == tile_groups - 1u) {
      bl_merge_global(BL_RESULT, first_group + e, p);
    } else {
      bl_store(BL_RESULT, first_group + e, p);
    }
  }
}

// Private variable (section 3.2): work item t aggregates its chunk of rows [t * chunk,
// (t + 1) * chunk) in one private partial and merges it atomically at each group boundary,
// so it issues as many atomics as its chunk holds groups.
__kernel void bl_private_variable(__global const VAL_T* vals, __global const uint* group_of_row, const uint n,
                                  const uint chunk, BL_RESULT_PARAMS) {
  const ulong begin = (ulong)get_global_id(0) * chunk;
  if (begin >= n) return;
  const ulong end = min(begin + chunk, (ulong)n);
  uint g = group_of_row[begin];
  bl_partial p = bl_row(vals[begin]);
  for (ulong row = begin + 1; row < end; ++row) {
    const uint next = group_of_row[row];
    const VAL_T v = vals[row];
    if (next != g) {
      bl_merge_global(BL_RESULT, g, p);
      g = next;
      p = bl_row(v);
    } else {
      bl_add_row(&p, v);
    }
  }
  bl_merge_global(BL_RESULT, g, p);
}
)CLC";

// Built per chunk size: the private array's length is a compile-time constant (section 3.2:
// "arrays in a GPU are initialized statically").
inline constexpr std::string_view atomics_private_array = R"CLC(
// Private array (section 3.2): work item t aggregates its chunk into one private partial per
// group (at most CHUNK_SIZE; entry k is group first_group + k, as group ids are dense). Only
// the first group may have begun in the previous chunk and only the last may go on in the next,
// so those two merge atomically and the groups between are stored without synchronisation:
// two atomic merges per work item, whatever the distribution.
__kernel void bl_private_array(__global const VAL_T* vals, __global const uint* group_of_row, const uint n,
                               BL_RESULT_PARAMS) {
  bl_partial parts[CHUNK_SIZE];
  const ulong begin = (ulong)get_global_id(0) * CHUNK_SIZE;
  if (begin >= n) return;
  const ulong end = min(begin + CHUNK_SIZE, (ulong)n);
  const uint first_group = group_of_row[begin];
  uint k = 0;
  parts[0] = bl_row(vals[begin]);
  for (ulong row = begin + 1; row < end; ++row) {
    const uint e = group_of_row[row] - first_group;
    const VAL_T v = vals[row];
    if (e != k) {
      k = e;
      parts[k] = bl_row(v);
    } else {
      bl_add_row(&parts[k], v);
    }
  }
  bl_merge_global(BL_RESULT, first_group, parts[0]);
  for (uint e = 1; e < k; ++e) bl_store(BL_RESULT, first_group + e, parts[e]);
  if (k > 0) bl_merge_global(BL_RESULT, first_group + k, parts[k]);
}
)CLC";

/// The type macros the kernels start with.
template <key_type K, value_type V>
std::string atomics_type_macros() {
  constexpr bool is_float = std::is_floating_point_v<V>;
  constexpr bool is_64 = sizeof(V) == 8;
  const std::string value(cl_type_name<V>.view());
  const std::string word = is_64 ? "ulong" : "uint";  // the bits a compare-and-swap sees
  std::string macros;
  auto define = [&](const std::string& name, const std::string& text) {
    macros += "#define " + name + " " + text + "\n";
  };
  define("KEY_T", std::string(cl_type_name<K>.view()));
  define("VAL_T", value);
  define("SUM_T", std::string(cl_type_name<sum_word<V>>.view()));
  define("SUM_WIDE_T", sum_widening_cl_type<V>());
  define("VAL_IS_FLOAT", is_float ? "1" : "0");
  define("SUM_IS_DOUBLE", is_float ? "1" : "0");
  define("VAL_NATIVE_MINMAX", !is_float && !is_64 ? "1" : "0");  // atomic_min/max on int and uint
  define("VAL_WORD", word);
  define("AS_WORD(x)", "as_" + word + "(x)");
  define("AS_VAL(x)", "as_" + value + "(x)");
  define("VAL_CAS", is_64 ? "atom_cmpxchg" : "atomic_cmpxchg");
  return macros;
}

/// The program of the map, initialize and (all but private_array) aggregate kernels for K and
/// V; built once per context.
template <key_type K, value_type V>
cl::Program phases_program(context& ctx) {
  std::string source = "// gpuagg baseline: sort, then aggregate with atomics\n" + atomics_type_macros<K, V>();
  source += atomics_library;
  source += atomics_phases;
  return ctx.program(source);
}

/// The private array's program for one chunk size; built once per context and chunk size.
template <key_type K, value_type V>
cl::Program private_array_program(context& ctx, std::uint32_t chunk_size) {
  std::string source = "// gpuagg baseline: sort, then aggregate with atomics in private arrays\n" +
                       atomics_type_macros<K, V>() + "#define CHUNK_SIZE " + std::to_string(chunk_size) + "u\n";
  source += atomics_library;
  source += atomics_private_array;
  return ctx.program(source);
}

inline void check_params(const context& ctx, const atomics_params& params) {
  auto reject = [&](const std::string& why) {
    throw invalid_argument_error("gpuagg::baselines::sort_then_atomics: " + why);
  };
  if (params.chunk_size == 0) reject("chunk_size must be at least 1");
  if (params.work_group_size == 0) reject("work_group_size must be at least 1");
  if (params.work_group_size > ctx.info().max_work_group_size) {
    reject("work_group_size " + std::to_string(params.work_group_size) + " exceeds the device's maximum " +
           std::to_string(ctx.info().max_work_group_size));
  }
  if (params.variant == atomics_variant::private_array && params.chunk_size > max_private_array_chunk) {
    reject("private_array keeps chunk_size partials in private memory; chunk_size " +
           std::to_string(params.chunk_size) + " exceeds " + std::to_string(max_private_array_chunk));
  }
}

inline std::size_t round_up(std::size_t value, std::size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

inline void launch(context& ctx, const cl::Kernel& kernel, std::size_t work_items, std::size_t work_group_size,
                   const char* what) {
  check(ctx.compute_queue().enqueueNDRangeKernel(kernel, cl::NullRange,
                                                 cl::NDRange(round_up(work_items, work_group_size)),
                                                 cl::NDRange(work_group_size)),
        what);
}

/// Sets kernel arguments in order, checking each.
template <class... Args>
void set_args(cl::Kernel& kernel, const char* what, const Args&... args) {
  cl_uint index = 0;
  (check(kernel.setArg(index++, args), what), ...);
}

}  // namespace detail

/// SELECT g, count(*), sum(v), min(v), max(v) GROUP BY g, sorting copies of the columns with
/// Boost.Compute and aggregating with atomics in the variant `params` names (the atomics
/// paper, section 3). Groups sorted by key. Throws invalid_argument_error for columns of
/// different lengths or unusable params, unsupported_error for a device without 64-bit atomics.
template <key_type K, value_type V>
baseline_result<K, V> sort_then_atomics(context& ctx, const device_column<K>& keys, const device_column<V>& values,
                                        const atomics_params& params = {}, baseline_timing* timing = nullptr) {
  namespace bc = boost::compute;
  const auto wall_start = detail::clock::now();
  const std::size_t programs_before = ctx.programs_built();
  detail::check_lengths(keys.size, values.size);
  detail::check_params(ctx, params);
  detail::check_device<V>(ctx, true);
  const std::size_t rows = keys.size;
  baseline_result<K, V> out;
  baseline_timing t;
  if (rows == 0) {
    detail::finish_stats(out, ctx, 0, 0, t, wall_start, programs_before, 0, timing);
    return out;
  }
  const cl::Program phases = detail::phases_program<K, V>(ctx);
  const cl::Program aggregate_program = params.variant == atomics_variant::private_array
                                            ? detail::private_array_program<K, V>(ctx, params.chunk_size)
                                            : phases;
  bc::command_queue queue = detail::boost_queue(ctx);
  const bc::context bc_context = queue.get_context();
  const std::size_t wg = params.work_group_size;
  const auto n = static_cast<cl_uint>(rows);

  detail::device_stopwatch sort_watch(ctx.compute_queue());
  auto sorted = detail::sort_phase(ctx, queue, keys, values);
  t.sort_seconds = sort_watch.seconds();

  detail::device_stopwatch aggregate_watch(ctx.compute_queue());
  // Map and prefix sum (section 3.1): dense group index per row.
  ctx.check_allocation(rows * sizeof(cl_uint), "the group boundaries");
  auto [flags, group_of_row] = detail::boost_call("allocating the group boundaries", [&] {
    return std::pair{bc::vector<cl_uint>(rows, bc_context), bc::vector<cl_uint>(rows, bc_context)};
  });
  cl::Kernel boundaries = ctx.kernel(phases, "bl_boundaries");
  detail::set_args(boundaries, "setting bl_boundaries' arguments", detail::buffer_of(sorted.keys), n,
                   detail::buffer_of(flags));
  detail::launch(ctx, boundaries, rows, wg, "launching bl_boundaries");
  detail::boost_call("boost::compute::inclusive_scan", [&] {
    bc::inclusive_scan(flags.begin(), flags.end(), group_of_row.begin(), queue);
  });
  cl_uint last_group = 0;
  detail::check(ctx.compute_queue().enqueueReadBuffer(detail::buffer_of(group_of_row), CL_TRUE,
                                                      (rows - 1) * sizeof(cl_uint), sizeof(cl_uint), &last_group),
                "reading the number of groups");
  const std::size_t groups = std::size_t{last_group} + 1;

  using word = detail::sum_word<V>;
  const cl::Buffer group_keys = ctx.buffer(groups * sizeof(K), "the result keys");
  const cl::Buffer counts = ctx.buffer(groups * sizeof(std::uint64_t), "the result counts");
  const cl::Buffer sums = ctx.buffer(groups * sizeof(word), "the result sums");
  const cl::Buffer mins = ctx.buffer(groups * sizeof(V), "the result minima");
  const cl::Buffer maxs = ctx.buffer(groups * sizeof(V), "the result maxima");
  const V min_identity = aggregate_policy<min_kind, V>::identity();
  const V max_identity = aggregate_policy<max_kind, V>::identity();

  cl::Kernel initialize = ctx.kernel(phases, "bl_initialize");
  detail::set_args(initialize, "setting bl_initialize's arguments", detail::buffer_of(sorted.keys),
                   detail::buffer_of(flags), detail::buffer_of(group_of_row), n, group_keys, counts, sums, mins, maxs,
                   min_identity, max_identity);
  detail::launch(ctx, initialize, rows, wg, "launching bl_initialize");

  // The aggregation (section 3 and 4.1.1).
  const cl::Buffer vals = detail::buffer_of(sorted.values);
  const cl::Buffer ids = detail::buffer_of(group_of_row);
  const cl_uint chunk = params.chunk_size;
  const std::size_t chunks = (rows + chunk - 1) / chunk;
  switch (params.variant) {
    case atomics_variant::naive_global: {
      cl::Kernel kernel = ctx.kernel(aggregate_program, "bl_naive_global");
      detail::set_args(kernel, "setting bl_naive_global's arguments", vals, ids, n, chunk, counts, sums, mins, maxs);
      detail::launch(ctx, kernel, (rows + wg * chunk - 1) / (wg * chunk) * wg, wg, "launching bl_naive_global");
      break;
    }
    case atomics_variant::naive_local: {
      // Local partials for the tile's groups, as many as local memory holds (a little left for
      // the kernel's own variables).
      const std::uint64_t entry_bytes = sizeof(std::uint64_t) + sizeof(word) + 2 * sizeof(V);
      const std::uint64_t budget = ctx.info().local_mem_bytes > 1024 ? ctx.info().local_mem_bytes - 1024 : 0;
      std::uint64_t capacity = std::min<std::uint64_t>(std::uint64_t{wg} * chunk, budget / entry_bytes);
      if (params.max_local_groups != 0) capacity = std::min<std::uint64_t>(capacity, params.max_local_groups);
      if (capacity == 0) {
        throw unsupported_error("gpuagg::baselines: naive_local finds no local memory on " + ctx.info().name);
      }
      cl::Kernel kernel = ctx.kernel(aggregate_program, "bl_naive_local");
      detail::set_args(kernel, "setting bl_naive_local's arguments", vals, ids, n, chunk, counts, sums, mins, maxs,
                       cl::Local(capacity * sizeof(std::uint64_t)), cl::Local(capacity * sizeof(word)),
                       cl::Local(capacity * sizeof(V)), cl::Local(capacity * sizeof(V)),
                       static_cast<cl_uint>(capacity), min_identity, max_identity);
      detail::launch(ctx, kernel, (rows + wg * chunk - 1) / (wg * chunk) * wg, wg, "launching bl_naive_local");
      break;
    }
    case atomics_variant::private_variable: {
      cl::Kernel kernel = ctx.kernel(aggregate_program, "bl_private_variable");
      detail::set_args(kernel, "setting bl_private_variable's arguments", vals, ids, n, chunk, counts, sums, mins,
                       maxs);
      detail::launch(ctx, kernel, chunks, wg, "launching bl_private_variable");
      break;
    }
    case atomics_variant::private_array: {
      cl::Kernel kernel = ctx.kernel(aggregate_program, "bl_private_array");
      detail::set_args(kernel, "setting bl_private_array's arguments", vals, ids, n, counts, sums, mins, maxs);
      detail::launch(ctx, kernel, chunks, wg, "launching bl_private_array");
      break;
    }
  }
  t.aggregate_seconds = aggregate_watch.seconds();

  detail::fill_result<K, V>(ctx, out, groups, group_keys, counts, sums, mins, maxs);
  const std::uint64_t device_bytes = rows * (sizeof(K) + sizeof(V) + 2 * sizeof(cl_uint)) +
                                     groups * (sizeof(K) + sizeof(std::uint64_t) + sizeof(word) + 2 * sizeof(V));
  detail::finish_stats(out, ctx, rows, groups, t, wall_start, programs_before, device_bytes, timing);
  return out;
}

/// As above, with the columns on the host (copied to the device first; wall_seconds counts
/// the copy, aggregate_seconds does not).
template <key_type K, value_type V>
baseline_result<K, V> sort_then_atomics(context& ctx, const std::vector<K>& keys, const std::vector<V>& values,
                                        const atomics_params& params = {}, baseline_timing* timing = nullptr) {
  const auto wall_start = detail::clock::now();
  detail::check_lengths(keys.size(), values.size());
  auto out = sort_then_atomics(ctx, detail::upload(ctx, keys, "the key column"),
                               detail::upload(ctx, values, "the value column"), params, timing);
  out.stats.wall_seconds = std::chrono::duration<double>(detail::clock::now() - wall_start).count();
  return out;
}

}  // namespace gpuagg::baselines
