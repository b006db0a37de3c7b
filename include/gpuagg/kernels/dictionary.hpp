#pragma once
// The key dictionary's kernels (wide_keys/dictionary.hpp): keys wider than 64 bits get a dense
// 32-bit id each, which the aggregation then takes as its key. A program of its own, assembled
// from a tuple_key policy's text (key.hpp) and these kernels, with their argument structs.
//
// The dictionary is an open-addressing table of ids (EMPTY: all ones) beside a key store, one
// column per key column, indexed by id. A row whose probe reaches an empty bucket claims it by
// compare-and-swap, takes a fresh id from a counter, writes its key to the store and then the id
// to the bucket. A row compares its key only with ids that existed before the launch: OpenCL
// orders one work item's global writes for other work groups only at the end of a kernel
// (mem_fence orders them within a work group, and NVIDIA's global fence is work-group scoped), so
// a key stored in the same launch may not be visible yet. A row whose probe meets a claimed bucket
// or an id of this launch is left pending and sets a flag; the host launches the kernel again over
// the pending rows, with the ids of the launch before now comparable. Each launch settles at least
// the rows that claimed a bucket, and a row claims a bucket only after every bucket before it on
// its probe sequence held a different key, so no key gets two ids. Nobody waits on anybody: there
// is no lock to spin on, so the scheme is safe wherever work items of one group do not run
// concurrently (CPU devices) as well as on GPUs.
// counters: [0] the next id, [1] overflow, [2] pending. When the next id passes the store's
// capacity the row gets no id and the overflow flag is set: the host grows the dictionary and runs
// the block again (a row already encoded finds its id).

#include <cstdint>
#include <vector>

#include "../detail/fixed_string.hpp"
#include "args.hpp"

namespace gpuagg::detail::kernels {

inline constexpr fixed_string dictionary_kernels{R"CLC(
#define GPUAGG_NO_ID 0xffffffffu
#define GPUAGG_CLAIMED 0xfffffffeu
#define GPUAGG_PENDING 0xfffffffdu

// Mixes one key column's bits into the running hash; gpuagg_tuple_finish spreads the result
// over all 64 bits (MurmurHash3's finalizer), so that the low bits index the table.
inline ulong gpuagg_tuple_mix(ulong h, ulong word) {
  return (h ^ word) * 0x9e3779b97f4a7c15ul + (h >> 29);
}
inline ulong gpuagg_tuple_finish(ulong h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdul;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ul;
  h ^= h >> 33;
  return h;
}

// ids[ids_offset + r] = the id of row r's key, rows [0, rows); GPUAGG_PENDING where it is not
// known yet (counters[2] set), GPUAGG_NO_ID where the store is full (counters[1] set). Ids below
// `known_ids` were stored by earlier launches. `resume`: only the rows left pending run.
__kernel void gpuagg_dict_encode(TUPLE_KEY_PARAMS, const ulong rows, __global volatile uint* table, const ulong mask
                                 TUPLE_STORE_PARAMS, __global volatile uint* counters, const uint store_capacity,
                                 const uint known_ids, const uint resume, __global uint* restrict ids,
                                 const ulong ids_offset) {
  for (ulong row = get_global_id(0); row < rows; row += get_global_size(0)) {
    if (resume != 0u && ids[ids_offset + row] != GPUAGG_PENDING) continue;
    TUPLE_LOAD_ROW(row)
    TUPLE_HASH_INTO(h)
    ulong bucket = h & mask;
    uint id = GPUAGG_PENDING;
    for (;;) {
      uint word = table[bucket];
      if (word == GPUAGG_NO_ID) {
        word = atomic_cmpxchg(table + bucket, GPUAGG_NO_ID, GPUAGG_CLAIMED);
        if (word == GPUAGG_NO_ID) {
          const uint fresh = atomic_inc(counters);
          if (fresh >= store_capacity) {
            atomic_xchg(table + bucket, GPUAGG_NO_ID);
            counters[1] = 1u;
            id = GPUAGG_NO_ID;
            break;
          }
          TUPLE_STORE(fresh)
          atomic_xchg(table + bucket, fresh);
          id = fresh;
          break;
        }
      }
      if (word >= known_ids) {  // claimed, or an id of this launch: its key may not be visible
        counters[2] = 1u;
        break;
      }
      if (TUPLE_EQUALS_STORED(word)) {
        id = word;
        break;
      }
      bucket = (bucket + 1ul) & mask;
    }
    ids[ids_offset + row] = id;
  }
}

// Moves every id of the old table into `table` (empty, twice as large or more), hashing the
// stored keys; all distinct, so no comparison.
__kernel void gpuagg_dict_rehash(__global const uint* restrict old_table, const ulong old_buckets,
                                 __global volatile uint* table, const ulong mask TUPLE_STORE_PARAMS) {
  for (ulong i = get_global_id(0); i < old_buckets; i += get_global_size(0)) {
    const uint id = old_table[i];
    if (id == GPUAGG_NO_ID) continue;
    TUPLE_LOAD_STORED(id)
    TUPLE_HASH_INTO(h)
    ulong bucket = h & mask;
    while (atomic_cmpxchg(table + bucket, GPUAGG_NO_ID, id) != GPUAGG_NO_ID) bucket = (bucket + 1ul) & mask;
  }
}

// The keys of n ids: key_out*[i] = the stored key of ids[i].
__kernel void gpuagg_dict_keys(__global const uint* restrict ids, const ulong n TUPLE_STORE_PARAMS TUPLE_OUT_PARAMS) {
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    const uint id = ids[i];
    TUPLE_LOAD_STORED(id)
    TUPLE_WRITE_OUT(i)
  }
}
)CLC"};

/// The dictionary program of tuple_key policy `Key`.
template <class Key>
inline constexpr auto dictionary_program_source = concat(Key::cl_source, dictionary_kernels);

/// A key column as gpuagg_dict_encode takes it: the buffer and the element offset of row 0.
template <class Buffer>
struct key_column_arg {
  Buffer buffer;
  std::uint64_t offset = 0;
  template <class F>
  void for_each(F& f) const {
    f(buffer);
    f(offset);
  }
};

/// gpuagg_dict_encode(TUPLE_KEY_PARAMS, rows, table, mask, TUPLE_STORE_PARAMS, counters,
/// store_capacity, known_ids, resume, ids, ids_offset).
template <class Buffer>
struct dict_encode_args {
  std::vector<key_column_arg<Buffer>> key_columns;
  std::uint64_t rows = 0;
  Buffer table;
  std::uint64_t mask = 0;
  std::vector<Buffer> store;
  Buffer counters;  ///< next id, overflow flag, pending flag
  std::uint32_t store_capacity = 0;
  std::uint32_t known_ids = 0;  ///< ids stored by earlier launches: the only ones a row compares with
  std::uint32_t resume = 0;     ///< 1: only the rows a launch before left pending
  Buffer ids;
  std::uint64_t ids_offset = 0;
  template <class F>
  void for_each(F& f) const {
    for (const auto& column : key_columns) f(column);
    f(rows);
    f(table);
    f(mask);
    f(store);
    f(counters);
    f(store_capacity);
    f(known_ids);
    f(resume);
    f(ids);
    f(ids_offset);
  }
};

/// gpuagg_dict_rehash(old_table, old_buckets, table, mask, TUPLE_STORE_PARAMS).
template <class Buffer>
struct dict_rehash_args {
  Buffer old_table;
  std::uint64_t old_buckets = 0;
  Buffer table;
  std::uint64_t mask = 0;
  std::vector<Buffer> store;
  template <class F>
  void for_each(F& f) const {
    f(old_table);
    f(old_buckets);
    f(table);
    f(mask);
    f(store);
  }
};

/// gpuagg_dict_keys(ids, n, TUPLE_STORE_PARAMS, TUPLE_OUT_PARAMS).
template <class Buffer>
struct dict_keys_args {
  Buffer ids;
  std::uint64_t n = 0;
  std::vector<Buffer> store;
  std::vector<Buffer> out;
  template <class F>
  void for_each(F& f) const {
    f(ids);
    f(n);
    f(store);
    f(out);
  }
};

}  // namespace gpuagg::detail::kernels
