#pragma once
// The group estimate's kernels, in a program of their own (the key policy and the sketch's hash
// only, so the estimate builds nothing big): the HyperLogLog sketches (estimate.hpp), with their
// argument struct. The key sample needs no kernel (driver/group_estimate.hpp reads it).

#include <cstdint>
#include <vector>

#include "../detail/fixed_string.hpp"
#include "args.hpp"

namespace gpuagg::detail::kernels {

inline constexpr fixed_string sketch_kernels{R"CLC(
// The group estimate's sketches (estimate.hpp): the keys of n rows from row `first`, one in
// each stride of `stride` rows, placed within it by gpuagg_stride_offset (as the host's sketch
// places them: sketch_row), raise HyperLogLog registers [0, 2^P) of regs to their rank. With
// `sampled` set (a strided sample), a quarter of them (gpuagg_in_sub_sample) also raises
// regs[2^P, 2^(P+1)) (the smaller sample), every gpuagg_compare_every(n)-th is compared with its
// right neighbour (below rows_end): counts[0] += pairs, counts[1] += equal, and the rows whose
// key word is `hot` are counted: counts[2] (the key sample's one frequent key, whose share of
// the sketch's own rows sets it aside more precisely than the sample's share: estimate.hpp,
// sketch_evidence).
// A register is a 32-bit word, raised by atomic_max after a read (a cacheable read: a stale
// value only costs an atomic that changes nothing): ranks saturate, so most rows only read.
// NAME_bytes, the strided sample's kernel where the table may be small
// (detail::byte_sketch_registers): a register is a byte (ranks reach GPUAGG_SKETCH_MAX_RANK,
// 51), four to a word, so its two sketches hold 32 KiB of device memory, not 128. OpenCL has
// no atomic on a byte: a register is raised by a compare-and-swap of its word, which waits for
// its result and retries when the word's other registers move; on the many rows of a sketch
// of every row that made it two to three times slower, so that kernel keeps 32-bit registers.
// A sketch of every row (stride 1, not sampled) is a kernel of its own, NAME_every, with
// nothing but the row's key in its loop: the general loop's row arithmetic (a 64-bit multiply)
// and its sampled branch cost a few percent of a sketch that reads every key. It loads four
// rows before it hashes any: each row's register read depends on its key's load, and one row
// at a time left each work item waiting on two loads in turn (the kernel took 0.29 instead of
// 0.33 ms over 2^27 keys on the H200). Each work group reads the registers it compares with
// from a copy of its own in local memory (below): in global memory a SIMD group's 32 random
// register reads are 32 cache transactions, one row's each.
// Each kernel twice: gpuagg_sketch* read the key columns; gpuagg_sketch_words* read table words
// (the spill area's keys, whose distinct count sizes a growth).
#define GPUAGG_SKETCH_SLOT(KEY) \
    const ulong h = gpuagg_sketch_hash((ulong)(KEY)); \
    const uint index = (uint)(h >> (64u - GPUAGG_SKETCH_P)); \
    const ulong rest = h << GPUAGG_SKETCH_P; \
    const uint rank = rest == 0ul ? GPUAGG_SKETCH_MAX_RANK : (uint)clz(rest) + 1u;
// Byte register `index` of regs raised to `rank`, from `seen`, its word as last read.
inline void gpuagg_sketch_raise_byte(__global uint* regs, uint index, uint rank, uint seen) {
  __global uint* word = regs + (index >> 2);
  const uint shift = (index & 3u) * 8u;
  while (((seen >> shift) & 0xFFu) < rank) {
    const uint before = atomic_cmpxchg(word, seen, (seen & ~(0xFFu << shift)) | (rank << shift));
    if (before == seen) break;
    seen = before;
  }
}
#define GPUAGG_SKETCH_RAISE_BYTE(index, rank) { \
    const uint word_ = cached[(index) >> 2]; \
    if (((word_ >> (((index) & 3u) * 8u)) & 0xFFu) < (rank)) gpuagg_sketch_raise_byte(regs, index, rank, word_); }
#define GPUAGG_SKETCH_RAISE_WORD(index, rank) { if (cached[index] < (rank)) atomic_max(regs + (index), rank); }
#define GPUAGG_DEFINE_SAMPLED_SKETCH(NAME, LOAD, RAISE, ...) \
__kernel void NAME(__VA_ARGS__, const ulong first, const ulong stride, const ulong n, const ulong rows_end, \
                   const uint sampled, const ulong hot, __global uint* regs, __global ulong* restrict counts, \
                   __local uint* restrict scratch) { \
  __global const uint* cached = regs; \
  uint pairs = 0u; \
  uint equal = 0u; \
  uint hots = 0u; \
  const ulong every = gpuagg_compare_every(n); \
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) { \
    const ulong row = first + i * stride + gpuagg_stride_offset(i, stride); \
    const ulong key_ = (ulong)(LOAD(row)); \
    GPUAGG_SKETCH_SLOT(key_) \
    RAISE(index, rank) \
    if (sampled != 0u) { \
      hots += key_ == hot ? 1u : 0u; \
      const uint sub = (1u << GPUAGG_SKETCH_P) + index; \
      if (gpuagg_in_sub_sample(i)) RAISE(sub, rank) \
      if (i % every == 0ul && row + 1ul < rows_end) { \
        ++pairs; \
        equal += (ulong)(LOAD(row + 1ul)) == key_ ? 1u : 0u; \
      } \
    } \
  } \
  if (sampled == 0u) return; \
  const uint lid = get_local_id(0); \
  const uint width = get_local_size(0); \
  scratch[3u * lid] = pairs; \
  scratch[3u * lid + 1u] = equal; \
  scratch[3u * lid + 2u] = hots; \
  barrier(CLK_LOCAL_MEM_FENCE); \
  for (uint step = width / 2u; step > 0u; step /= 2u) { \
    if (lid < step) { \
      scratch[3u * lid] += scratch[3u * (lid + step)]; \
      scratch[3u * lid + 1u] += scratch[3u * (lid + step) + 1u]; \
      scratch[3u * lid + 2u] += scratch[3u * (lid + step) + 2u]; \
    } \
    barrier(CLK_LOCAL_MEM_FENCE); \
  } \
  if (lid == 0u) { \
    atom_add(counts, (ulong)scratch[0]); \
    atom_add(counts + 1, (ulong)scratch[1]); \
    atom_add(counts + 2, (ulong)scratch[2]); \
  } \
}
// The sketch of every row keeps a copy of the registers in local memory, a byte each (`seen`,
// a lower bound of each global register): a row whose rank it does not exceed reads nothing
// else. Otherwise the global register is read and raised, and the copy takes the larger of
// the two. Racing stores of the copy only lower it, which costs a read, never an update.
#define GPUAGG_SKETCH_EVERY_ROW_LOCAL(KEY) { \
    GPUAGG_SKETCH_SLOT(KEY) \
    if (seen[index] < rank) { \
      const uint global_ = regs[index]; \
      if (global_ < rank) atomic_max(regs + index, rank); \
      seen[index] = (uchar)max(global_, rank); \
    } }
#define GPUAGG_DEFINE_SKETCH(NAME, LOAD, ...) \
__kernel void NAME##_every(__VA_ARGS__, const ulong first, const ulong n, __global uint* regs, \
                           __local uchar* restrict seen) { \
  for (uint i = get_local_id(0); i < (1u << GPUAGG_SKETCH_P); i += get_local_size(0)) seen[i] = (uchar)regs[i]; \
  barrier(CLK_LOCAL_MEM_FENCE); \
  const ulong end = first + n; \
  const ulong step = get_global_size(0); \
  ulong row = first + get_global_id(0); \
  for (; row + 3ul * step < end; row += 4ul * step) { \
    const ulong k0_ = (ulong)(LOAD(row)); \
    const ulong k1_ = (ulong)(LOAD(row + step)); \
    const ulong k2_ = (ulong)(LOAD(row + 2ul * step)); \
    const ulong k3_ = (ulong)(LOAD(row + 3ul * step)); \
    GPUAGG_SKETCH_EVERY_ROW_LOCAL(k0_) \
    GPUAGG_SKETCH_EVERY_ROW_LOCAL(k1_) \
    GPUAGG_SKETCH_EVERY_ROW_LOCAL(k2_) \
    GPUAGG_SKETCH_EVERY_ROW_LOCAL(k3_) \
  } \
  for (; row < end; row += step) GPUAGG_SKETCH_EVERY_ROW_LOCAL(LOAD(row)) \
} \
GPUAGG_DEFINE_SAMPLED_SKETCH(NAME, LOAD, GPUAGG_SKETCH_RAISE_WORD, __VA_ARGS__) \
GPUAGG_DEFINE_SAMPLED_SKETCH(NAME##_bytes, LOAD, GPUAGG_SKETCH_RAISE_BYTE, __VA_ARGS__)
// The parameters come last: a key of several columns has several (commas a macro argument
// passed on to another macro would split at).
GPUAGG_DEFINE_SKETCH(gpuagg_sketch, KEY_LOAD, KEY_PARAMS)
#define GPUAGG_WORD_LOAD(row) (words[row])
GPUAGG_DEFINE_SKETCH(gpuagg_sketch_words, GPUAGG_WORD_LOAD, __global const KEY_T* restrict words)
)CLC"};

/// gpuagg_sketch(KEY_PARAMS, first, stride, n, rows_end, sampled, hot, regs, counts, scratch), and
/// gpuagg_sketch_words with one buffer of table words in place of the key columns.
template <class Buffer>
struct sketch_args {
  std::vector<Buffer> key_columns;
  std::uint64_t first = 0;
  std::uint64_t stride = 1;
  std::uint64_t n = 0;
  std::uint64_t rows_end = 0;
  std::uint32_t sampled = 0;
  std::uint64_t hot = 0;  ///< the key word whose rows counts[2] counts
  Buffer registers;
  Buffer counts;
  local_memory scratch;  ///< three words per work item
  template <class F>
  void for_each(F& f) const {
    f(key_columns);
    f(first);
    f(stride);
    f(n);
    f(rows_end);
    f(sampled);
    f(hot);
    f(registers);
    f(counts);
    f(scratch);
  }
};

/// gpuagg_sketch_every(KEY_PARAMS, first, n, regs): every row of [first, first + n); and
/// gpuagg_sketch_words_every over table words.
template <class Buffer>
struct sketch_every_args {
  std::vector<Buffer> key_columns;
  std::uint64_t first = 0;
  std::uint64_t n = 0;
  Buffer registers;
  local_memory seen;  ///< a byte per register
  template <class F>
  void for_each(F& f) const {
    f(key_columns);
    f(first);
    f(n);
    f(registers);
    f(seen);
  }
};

}  // namespace gpuagg::detail::kernels
