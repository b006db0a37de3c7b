#pragma once
// OpenCL C that every gpuagg program shares, as raw strings that still read as OpenCL C:
// the counters' indices, the combine functions and their atomic forms, the global table's
// layout, the bucket lookup (claim or find) in global, local and private tables, the spill
// area and the per-work-group counts. source.hpp composes them with the policies' snippets
// (KEY_*, gpuagg_home, GPUAGG_PROBE_NEXT, ACC*, OUT*) and one kernel family after another.
//
// The table: 2^bits buckets (or the identity domain's `capacity`), keys in g_keys, one array
// per accumulator (g_acc<J>), plus one reserved bucket at index `capacity` for the key whose
// bits equal EMPTY_KEY, so every key value is legal. meta[] carries the query's progress flags.
// A row or partial that finds no bucket within `max_probes` is appended to the spill area
// (s_keys, s_acc<J>), which the driver merges after growing the table: nothing is dropped.

#include "../detail/fixed_string.hpp"

namespace gpuagg::detail::kernels {

inline constexpr fixed_string header{R"CLC(// gpuagg generated program
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define GPUAGG_NO_SLOT 0xffffffffu
#define META_GROUPS 0
#define META_SPECIAL 1
#define META_SPILLED 2
#define META_LOST 3
)CLC"};

inline constexpr fixed_string combines{R"CLC(
// ---- combine functions (minimum/maximum order NaN above every number). The names avoid
// `min`/`max`, which some OpenCL compilers define as macros. ----
inline long gpuagg_add_long(long a, long b) { return (long)((ulong)a + (ulong)b); }
inline ulong gpuagg_add_ulong(ulong a, ulong b) { return a + b; }
inline double gpuagg_add_double(double a, double b) { return a + b; }
inline int gpuagg_minimum_int(int a, int b) { return min(a, b); }
inline uint gpuagg_minimum_uint(uint a, uint b) { return min(a, b); }
inline long gpuagg_minimum_long(long a, long b) { return min(a, b); }
inline ulong gpuagg_minimum_ulong(ulong a, ulong b) { return min(a, b); }
inline float gpuagg_minimum_float(float a, float b) { return (!isnan(b) && (isnan(a) || b < a)) ? b : a; }
inline double gpuagg_minimum_double(double a, double b) { return (!isnan(b) && (isnan(a) || b < a)) ? b : a; }
inline int gpuagg_maximum_int(int a, int b) { return max(a, b); }
inline uint gpuagg_maximum_uint(uint a, uint b) { return max(a, b); }
inline long gpuagg_maximum_long(long a, long b) { return max(a, b); }
inline ulong gpuagg_maximum_ulong(ulong a, ulong b) { return max(a, b); }
inline float gpuagg_maximum_float(float a, float b) { return (!isnan(a) && (isnan(b) || a < b)) ? b : a; }
inline double gpuagg_maximum_double(double a, double b) { return (!isnan(a) && (isnan(b) || a < b)) ? b : a; }

// ---- atomic combines: native where OpenCL has them, else a compare-and-swap loop that
// stops early when the value would not change (most min/max updates) ----
#define GPUAGG_CAS_ATOMIC(OP, T, W, CAS, AS) \
inline void gpuagg_atomic_##OP##_##T##_##AS(volatile __##AS T* p, T x) { \
  volatile __##AS W* word = (volatile __##AS W*)p; \
  W seen = *word; \
  for (;;) { \
    const W next = as_##W(gpuagg_##OP##_##T(as_##T(seen), x)); \
    if (next == seen) return; \
    const W prior = CAS(word, seen, next); \
    if (prior == seen) return; \
    seen = prior; \
  } \
}
#define GPUAGG_NATIVE_ATOMIC(OP, T, FN, AS) \
inline void gpuagg_atomic_##OP##_##T##_##AS(volatile __##AS T* p, T x) { FN(p, x); }
// Built with -DGPUAGG_SERIAL_LOCAL (a variant launched with one work item per work group:
// kernel_variant::serial), local memory has one writer, so its combines are plain loads and
// stores. A CPU device runs a work group's items in turn on one core, where a local atomic
// only costs (a locked instruction, and no vectorized loop over the items).
#ifdef GPUAGG_SERIAL_LOCAL
#define GPUAGG_PLAIN_LOCAL(OP, T) \
inline void gpuagg_atomic_##OP##_##T##_local(volatile __local T* p, T x) { *p = gpuagg_##OP##_##T(*p, x); }
#define GPUAGG_BOTH(MACRO, OP, T, X, Y) MACRO(OP, T, X, Y, global) GPUAGG_PLAIN_LOCAL(OP, T)
#define GPUAGG_BOTH_NATIVE(OP, T, FN) GPUAGG_NATIVE_ATOMIC(OP, T, FN, global) GPUAGG_PLAIN_LOCAL(OP, T)
#else
#define GPUAGG_BOTH(MACRO, OP, T, X, Y) MACRO(OP, T, X, Y, global) MACRO(OP, T, X, Y, local)
#define GPUAGG_BOTH_NATIVE(OP, T, FN) GPUAGG_NATIVE_ATOMIC(OP, T, FN, global) GPUAGG_NATIVE_ATOMIC(OP, T, FN, local)
#endif

// A 64-bit add in local memory from 32-bit atomics: the low word's atomic add returns the old
// low word, which tells whether it carried; the high word then gets the addend's high word plus
// the carry (skipped when both are 0, as for every 32-bit value). Some GPUs run a 64-bit local
// atomic add as a compare-and-swap loop (NVIDIA's compilers emit ATOMS.CAST.SPIN.64), the
// 32-bit one natively. Exact modulo 2^64, as the 64-bit add; readers wait for a barrier.
#if defined(GPUAGG_SERIAL_LOCAL)
#define GPUAGG_LOCAL_ADD64(T) GPUAGG_PLAIN_LOCAL(add, T)
#elif defined(__ENDIAN_LITTLE__)
#define GPUAGG_LOCAL_ADD64(T) \
inline void gpuagg_atomic_add_##T##_local(volatile __local T* p, T x) { \
  volatile __local uint* word = (volatile __local uint*)p; \
  const uint low = (uint)((ulong)x); \
  const uint prior = atomic_add(word, low); \
  const uint high = (uint)(((ulong)x) >> 32) + (prior + low < prior ? 1u : 0u); \
  if (high != 0u) atomic_add(word + 1, high); \
}
#else
#define GPUAGG_LOCAL_ADD64(T) GPUAGG_NATIVE_ATOMIC(add, T, atom_add, local)
#endif
#ifdef GPUAGG_NEED_ADD_LONG
GPUAGG_NATIVE_ATOMIC(add, long, atom_add, global)
GPUAGG_LOCAL_ADD64(long)
#endif
#ifdef GPUAGG_NEED_ADD_ULONG
GPUAGG_NATIVE_ATOMIC(add, ulong, atom_add, global)
GPUAGG_LOCAL_ADD64(ulong)
#endif
#ifdef GPUAGG_NEED_ADD_DOUBLE
GPUAGG_BOTH(GPUAGG_CAS_ATOMIC, add, double, ulong, atom_cmpxchg)
#endif
#ifdef GPUAGG_NEED_MINIMUM_INT
GPUAGG_BOTH_NATIVE(minimum, int, atomic_min)
#endif
#ifdef GPUAGG_NEED_MINIMUM_UINT
GPUAGG_BOTH_NATIVE(minimum, uint, atomic_min)
#endif
#ifdef GPUAGG_NEED_MAXIMUM_INT
GPUAGG_BOTH_NATIVE(maximum, int, atomic_max)
#endif
#ifdef GPUAGG_NEED_MAXIMUM_UINT
GPUAGG_BOTH_NATIVE(maximum, uint, atomic_max)
#endif
#ifdef GPUAGG_NEED_MINIMUM_LONG
GPUAGG_BOTH(GPUAGG_CAS_ATOMIC, minimum, long, ulong, atom_cmpxchg)
#endif
#ifdef GPUAGG_NEED_MAXIMUM_LONG
GPUAGG_BOTH(GPUAGG_CAS_ATOMIC, maximum, long, ulong, atom_cmpxchg)
#endif
#ifdef GPUAGG_NEED_MINIMUM_ULONG
GPUAGG_BOTH(GPUAGG_CAS_ATOMIC, minimum, ulong, ulong, atom_cmpxchg)
#endif
#ifdef GPUAGG_NEED_MAXIMUM_ULONG
GPUAGG_BOTH(GPUAGG_CAS_ATOMIC, maximum, ulong, ulong, atom_cmpxchg)
#endif
#ifdef GPUAGG_NEED_MINIMUM_FLOAT
GPUAGG_BOTH(GPUAGG_CAS_ATOMIC, minimum, float, uint, atomic_cmpxchg)
#endif
#ifdef GPUAGG_NEED_MAXIMUM_FLOAT
GPUAGG_BOTH(GPUAGG_CAS_ATOMIC, maximum, float, uint, atomic_cmpxchg)
#endif
#ifdef GPUAGG_NEED_MINIMUM_DOUBLE
GPUAGG_BOTH(GPUAGG_CAS_ATOMIC, minimum, double, ulong, atom_cmpxchg)
#endif
#ifdef GPUAGG_NEED_MAXIMUM_DOUBLE
GPUAGG_BOTH(GPUAGG_CAS_ATOMIC, maximum, double, ulong, atom_cmpxchg)
#endif

)CLC"};

inline constexpr fixed_string table_access{R"CLC(// ---- the global table's layout. By default keys and each accumulator are arrays of their own.
// Built with -DGPUAGG_INTERLEAVED (the driver's choice for large hash tables), bucket b is one
// record of ACC_COUNT + 1 words of ACC_WORD_BYTES: its key, then its accumulators, so a row's
// probe and update touch one sector instead of two. The key buffer then holds the records; the
// kernels point the accumulators into it (ACC_REBIND) and index keys by b * GPUAGG_KEY_STRIDE,
// accumulators by b * GPUAGG_ACC_STRIDE. ----
#ifdef GPUAGG_INTERLEAVED
#define GPUAGG_KEY_STRIDE ((ACC_WORD_BYTES * (ACC_COUNT + 1u)) / (uint)sizeof(KEY_T))
#define GPUAGG_ACC_STRIDE (ACC_COUNT + 1u)
#define GPUAGG_REBIND(P, AS) ACC_REBIND(P, AS)
#else
#define GPUAGG_KEY_STRIDE 1u
#define GPUAGG_ACC_STRIDE 1u
#define GPUAGG_REBIND(P, AS)
#endif

// ---- bucket lookup: find the key's bucket or claim an empty one ----
#if KEY_IS_64
#define GPUAGG_KEY_CAS_global(p, expected, desired) atom_cmpxchg(p, expected, desired)
#else
#define GPUAGG_KEY_CAS_global(p, expected, desired) atomic_cmpxchg(p, expected, desired)
#endif
#ifdef GPUAGG_SERIAL_LOCAL
inline KEY_T gpuagg_plain_cas_local(volatile __local KEY_T* p, KEY_T expected, KEY_T desired) {
  const KEY_T seen = *p;
  if (seen == expected) *p = desired;
  return seen;
}
#define GPUAGG_KEY_CAS_local(p, expected, desired) gpuagg_plain_cas_local(p, expected, desired)
// Local bookkeeping of one work item: counters and bitmap words.
#define GPUAGG_LOCAL_INC(p) ((*(p))++)
#define GPUAGG_LOCAL_OR(p, x) (*(p) |= (x))
#define GPUAGG_LOCAL_ADD(p, x) (*(p) += (x))
// The kernel runs only with one work item per work group.
#define GPUAGG_AGGREGATE_ATTRIBUTES __attribute__((reqd_work_group_size(1, 1, 1)))
#else
#define GPUAGG_KEY_CAS_local(p, expected, desired) GPUAGG_KEY_CAS_global(p, expected, desired)
#define GPUAGG_LOCAL_INC(p) atomic_inc(p)
#define GPUAGG_LOCAL_OR(p, x) atomic_or(p, x)
#define GPUAGG_LOCAL_ADD(p, x) atomic_add(p, x)
#define GPUAGG_AGGREGATE_ATTRIBUTES
#endif

// With `plain` set, a bucket's key is read with a plain, cacheable load: a key changes once,
// from EMPTY_KEY to its key, so a stale EMPTY_KEY only leads to the compare-and-swap, which
// returns the truth. The driver sets it for tables whose keys fit a cache (plan.hpp);
// -DGPUAGG_VOLATILE_KEY_READS in GPUAGG_BUILD_OPTIONS forces volatile reads, for comparison.
#ifdef GPUAGG_VOLATILE_KEY_READS
#define GPUAGG_READ_KEY(AS, at, plain) (*(at))
#else
#define GPUAGG_READ_KEY(AS, at, plain) ((plain) ? *(const __##AS KEY_T*)(at) : *(at))
#endif

// Returns the bucket of k (`capacity` for the key EMPTY_KEY), or GPUAGG_NO_SLOT when none
// was found within max_probes (or k lies outside the identity domain). Counts claimed buckets.
// Bucket b lives at keys[b * stride + lane]: stride 1 is one table; WORKGROUPLOCAL's replicated
// local tables interleave their copies (stride = copies, lane = the copy).
#define GPUAGG_DEFINE_INSERT(AS) \
inline uint gpuagg_insert_##AS(volatile __##AS KEY_T* keys, KEY_T k, uint bits, uint capacity, \
                               KEY_T key_min, uint max_probes, uint* claimed, uint stride, uint lane, \
                               uint plain) { \
  if (k == EMPTY_KEY) return capacity; \
  const uint mask = capacity - 1u; \
  uint b = gpuagg_home(k, bits, capacity, key_min); \
  if (b == GPUAGG_NO_SLOT) return GPUAGG_NO_SLOT; \
  for (uint i = 0; i < max_probes; ++i) { \
    volatile __##AS KEY_T* at = keys + (b * stride + lane); \
    KEY_T seen = GPUAGG_READ_KEY(AS, at, plain); \
    if (seen == EMPTY_KEY) { \
      seen = GPUAGG_KEY_CAS_##AS(at, EMPTY_KEY, k); \
      if (seen == EMPTY_KEY) { ++*claimed; return b; } \
    } \
    if (seen == k) return b; \
    b = GPUAGG_PROBE_NEXT(b, i, mask); \
  } \
  return GPUAGG_NO_SLOT; \
}
GPUAGG_DEFINE_INSERT(local)

// The global table of direct addressing (GPUAGG_DENSE_TABLE, from the identity scheme) stores no
// keys: bucket b holds key key_min + b, and its key buffer holds a bitmap of the buckets in use
// (bit b % 32 of word b / 32). A row then reads one bitmap word, which stays cached (a bit per
// bucket: 32 MiB at 2^28), and updates its accumulator: one random sector in memory instead of
// two. The bitmap is read plainly: a stale 0 only leads to the atomic OR, which tells the truth.
// Every key has its own bucket, so EMPTY_KEY needs no reserved one here.
#if GPUAGG_DENSE_TABLE
inline uint gpuagg_insert_global(volatile __global KEY_T* keys, KEY_T k, uint bits, uint capacity, KEY_T key_min,
                                 uint max_probes, uint* claimed, uint stride, uint lane, uint plain) {
  const uint b = gpuagg_home(k, bits, capacity, key_min);
  if (b == GPUAGG_NO_SLOT) return GPUAGG_NO_SLOT;
  volatile __global uint* word = (volatile __global uint*)keys + (b >> 5);
  const uint bit = 1u << (b & 31u);
  if ((*(const __global uint*)word & bit) == 0u && (atomic_or(word, bit) & bit) == 0u) ++*claimed;
  return b;
}
#define GPUAGG_GLOBAL_USED(keys, slot) (((((__global const uint*)(keys))[(slot) >> 5] >> ((slot) & 31u)) & 1u) != 0u)
#else
GPUAGG_DEFINE_INSERT(global)
#endif

// A thread-private table in global memory, interleaved across threads (bucket b of thread
// `lane` at b * stride + lane) so neighbouring threads touch neighbouring words. No atomics.
inline uint gpuagg_insert_private(__global KEY_T* keys, ulong stride, ulong lane, KEY_T k, uint bits,
                                  uint capacity, KEY_T key_min) {
  if (k == EMPTY_KEY) return capacity;
  const uint mask = capacity - 1u;
  uint b = gpuagg_home(k, bits, capacity, key_min);
  if (b == GPUAGG_NO_SLOT) return GPUAGG_NO_SLOT;
  for (uint i = 0; i < capacity; ++i) {
    const ulong at = (ulong)b * stride + lane;
    const KEY_T seen = keys[at];
    if (seen == EMPTY_KEY) { keys[at] = k; return b; }
    if (seen == k) return b;
    b = GPUAGG_PROBE_NEXT(b, i, mask);
  }
  return GPUAGG_NO_SLOT;
}

// A place in the spill area, or GPUAGG_NO_SLOT (and META_LOST) if it is full, which the
// driver's sizing rules out and reports as an internal error.
inline uint gpuagg_spill_slot(__global ulong* meta, uint spill_capacity) {
  const ulong at = atom_inc(meta + META_SPILLED);
  if (at >= spill_capacity) { meta[META_LOST] = 1; return GPUAGG_NO_SLOT; }
  return (uint)at;
}

// Per work group bookkeeping: buckets claimed in the global table, and whether the
// EMPTY_KEY bucket was used; published with one atomic per work group.
#define GPUAGG_BEGIN_COUNTS() \
  __local uint wg_claimed; \
  uint claimed = 0; \
  uint special = 0; \
  if (get_local_id(0) == 0) wg_claimed = 0; \
  barrier(CLK_LOCAL_MEM_FENCE);
#define GPUAGG_END_COUNTS() \
  if (special) meta[META_SPECIAL] = 1; \
  if (claimed) GPUAGG_LOCAL_ADD(&wg_claimed, claimed); \
  barrier(CLK_LOCAL_MEM_FENCE); \
  if (get_local_id(0) == 0 && wg_claimed) atom_add(meta + META_GROUPS, (ulong)wg_claimed);

)CLC"};

}  // namespace gpuagg::detail::kernels
