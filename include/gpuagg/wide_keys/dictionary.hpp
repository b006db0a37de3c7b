#pragma once
// The key dictionary of keys wider than 64 bits: a device hash table that gives every distinct
// key tuple a dense 32-bit id (kernels/dictionary.hpp has the kernels and the scheme). It lives
// for one query, is filled block by block, grows by re-running the block that overflowed it,
// and turns ids back into key columns at the end.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "../detail/bits.hpp"
#include "../driver.hpp"
#include "../error.hpp"
#include "../kernels/dictionary.hpp"
#include "../key.hpp"
#include "../runtime/context.hpp"

namespace gpuagg::detail {

template <key_type... T>
class key_dictionary {
 public:
  using key = tuple_key<T...>;
  /// Ids are 32-bit words with all ones reserved: the store holds at most 2^31 keys (its
  /// capacity quadruples from a power of two).
  static constexpr std::uint64_t max_capacity = std::uint64_t{1} << 31;

  /// `expected_keys`: the caller's hint of distinct keys (0: none); the store starts at twice
  /// that (and at least 2^12), and grows whenever a block finds more.
  key_dictionary(context& ctx, std::uint64_t expected_keys) : ctx_(ctx) {
    program_ = ctx_.program(context::lasting_source{kernels::dictionary_program_source<key>.view()});
    encode_ = ctx_.kernel(program_, "gpuagg_dict_encode");
    rehash_ = ctx_.kernel(program_, "gpuagg_dict_rehash");
    keys_ = ctx_.kernel(program_, "gpuagg_dict_keys");
    counters_ = ctx_.buffer(3 * sizeof(cl_uint), "the key dictionary's counters");
    const cl_uint zero = 0;
    check(ctx_.compute_queue().enqueueFillBuffer(counters_, zero, 0, 3 * sizeof(cl_uint)),
          "clearing the key dictionary's counters");
    allocate(std::clamp<std::uint64_t>(next_pow2(2 * expected_keys), std::uint64_t{1} << 12, max_capacity));
  }

  /// ids[ids_offset + r] = the id of row r's key, for rows [0, rows) of the device key columns
  /// (buffer and element offset of row 0, one per key column). Grows as often as it must. The
  /// first launch waits for `ready` (the key columns' copies) where given.
  void encode(const std::vector<kernels::key_column_arg<cl::Buffer>>& key_columns, std::uint64_t rows,
              const cl::Buffer& ids, std::uint64_t ids_offset, const std::vector<cl::Event>* ready = nullptr) {
    if (rows == 0) return;
    auto& queue = ctx_.compute_queue();
    std::uint32_t resume = 0;
    for (;;) {
      kernels::dict_encode_args<cl::Buffer> args;
      args.key_columns = key_columns;
      args.rows = rows;
      args.table = table_;
      args.mask = 2 * capacity_ - 1;
      args.store = store_;
      args.counters = counters_;
      args.store_capacity = static_cast<std::uint32_t>(capacity_);
      args.known_ids = static_cast<std::uint32_t>(ids_);
      args.resume = resume;
      args.ids = ids;
      args.ids_offset = ids_offset;
      bind_arguments(encode_, "the key dictionary's encode", args);
      cl::Event done;
      launch(encode_, rows, &done, "encoding keys in the key dictionary", ready);
      ready = nullptr;
      std::array<cl_uint, 3> counters{};
      check(queue.enqueueReadBuffer(counters_, CL_TRUE, 0, sizeof(counters), counters.data()),
            "reading the key dictionary's counters");
      kernel_seconds_ += event_seconds(done);
      ++launches_;
      if (counters[1] != 0) {
        // Some rows found no room and have no id: grow, then encode the block again. Ids past
        // the capacity were never stored; those below it stay (a row encoded before finds its id).
        grow(static_cast<std::uint32_t>(std::min<std::uint64_t>(counters[0], capacity_)));
        resume = 0;
        continue;
      }
      ids_ = counters[0];
      if (counters[2] == 0) return;
      // Rows met keys stored in this launch, which they may not have seen: the next launch
      // compares them, now that the launch has ended.
      const cl_uint zero = 0;  // a fill copies its pattern when enqueued (a non-blocking write would read it later)
      check(queue.enqueueFillBuffer(counters_, zero, 2 * sizeof(cl_uint), sizeof(cl_uint)),
            "clearing the key dictionary's pending flag");
      resume = 1;
    }
  }

  /// As encode(), for key columns on the host: `block_rows` rows at a time through staging
  /// buffers, the ids into `device_ids` (row r's at r) where given, else read back to `ids`.
  /// Two sets of staging buffers: the next block's keys cross on the transfer queue while the
  /// compute queue encodes this one.
  void encode_host(const std::array<const void*, key::columns>& key_columns, std::uint64_t rows, std::uint32_t* ids,
                   std::uint64_t block_rows, const cl::Buffer* device_ids = nullptr) {
    if (rows == 0) return;
    block_rows = std::clamp<std::uint64_t>(block_rows, 1, rows);
    const std::size_t sets = rows > block_rows ? 2 : 1;
    std::vector<std::vector<kernels::key_column_arg<cl::Buffer>>> staged(
        sets, std::vector<kernels::key_column_arg<cl::Buffer>>(key::columns));
    for (auto& set : staged) {
      for (std::size_t c = 0; c < key::columns; ++c) {
        set[c].buffer = ctx_.buffer(block_rows * key::column_bytes[c],
                                    "the key dictionary's staging of key column " + std::to_string(c));
      }
    }
    cl::Buffer staged_ids;
    if (device_ids == nullptr) staged_ids = ctx_.buffer(block_rows * sizeof(std::uint32_t), "the key dictionary's staged ids");
    staging_bytes_ = sets * block_rows * key::key_bytes + (device_ids == nullptr ? block_rows * sizeof(std::uint32_t) : 0);
    auto& transfer = ctx_.transfer_queue();
    // No copy from the caller's memory outlives this call, an error's included.
    struct finish_copies {
      cl::CommandQueue& queue;
      ~finish_copies() { (void)queue.finish(); }
    } finish{transfer};
    std::vector<cl::Event> copied(sets);  // per set: its keys' last copy (the transfer queue is in order)
    const auto copy_keys = [&](std::uint64_t first, std::size_t set) {
      const std::uint64_t n = std::min(block_rows, rows - first);
      for (std::size_t c = 0; c < key::columns; ++c) {
        const auto* from = static_cast<const unsigned char*>(key_columns[c]) + first * key::column_bytes[c];
        check(transfer.enqueueWriteBuffer(staged[set][c].buffer, CL_FALSE, 0, n * key::column_bytes[c], from, nullptr,
                                          c + 1 == key::columns ? &copied[set] : nullptr),
              "copying key columns to the device");
      }
      check(transfer.flush(), "starting the key columns' copy");
    };
    copy_keys(0, 0);
    std::size_t block = 0;
    for (std::uint64_t first = 0; first < rows; first += block_rows, ++block) {
      const std::uint64_t n = std::min(block_rows, rows - first);
      const std::size_t set = block % sets;
      // The other set's last block was encoded (encode waits for its counters): it is free.
      if (first + block_rows < rows) copy_keys(first + block_rows, (block + 1) % sets);
      const std::vector<cl::Event> ready{copied[set]};
      if (device_ids != nullptr) {
        encode(staged[set], n, *device_ids, first, &ready);
        continue;
      }
      encode(staged[set], n, staged_ids, 0, &ready);
      check(ctx_.compute_queue().enqueueReadBuffer(staged_ids, CL_TRUE, 0, n * sizeof(std::uint32_t), ids + first),
            "reading the key dictionary's ids");
    }
  }

  /// Ids handed out so far: one per distinct key tuple encoded, numbered from 0 without holes.
  std::uint64_t ids() const noexcept { return ids_; }
  unsigned growths() const noexcept { return growths_; }
  unsigned launches() const noexcept { return launches_; }
  /// Profiled time of the dictionary's kernels.
  double kernel_seconds() const noexcept { return kernel_seconds_; }
  /// Device memory the dictionary holds: table, key store, counters, host input's staging.
  std::uint64_t device_bytes() const noexcept {
    return 2 * capacity_ * sizeof(cl_uint) + capacity_ * key::key_bytes + 2 * sizeof(cl_uint) + staging_bytes_;
  }

  /// The key columns of `n` ids in `ids` (a device buffer): one new buffer per key column.
  std::vector<cl::Buffer> keys_of(const cl::Buffer& ids, std::uint64_t n) {
    std::vector<cl::Buffer> out(key::columns);
    for (std::size_t c = 0; c < key::columns; ++c) {
      out[c] = ctx_.buffer(std::max<std::uint64_t>(n, 1) * key::column_bytes[c],
                           "the result's key column " + std::to_string(c));
    }
    if (n == 0) return out;
    kernels::dict_keys_args<cl::Buffer> args;
    args.ids = ids;
    args.n = n;
    args.store = store_;
    args.out = out;
    bind_arguments(keys_, "the key dictionary's keys", args);
    cl::Event done;
    launch(keys_, n, &done, "reading keys from the key dictionary");
    wait_for(done, "reading keys from the key dictionary");
    kernel_seconds_ += event_seconds(done);
    return out;
  }

 private:
  void allocate(std::uint64_t capacity) {
    capacity_ = capacity;
    table_ = ctx_.buffer(2 * capacity_ * sizeof(cl_uint), "the key dictionary's table");
    const cl_uint empty = ~cl_uint{0};
    check(ctx_.compute_queue().enqueueFillBuffer(table_, empty, 0, 2 * capacity_ * sizeof(cl_uint)),
          "clearing the key dictionary's table");
    store_.resize(key::columns);
    for (std::size_t c = 0; c < key::columns; ++c) {
      store_[c] = ctx_.buffer(capacity_ * key::column_bytes[c], "the key dictionary's key column " + std::to_string(c));
    }
  }

  /// Quadruples the capacity: a larger table and store, the stored keys copied, every id
  /// rehashed into the new table. Ids do not change, so ids already written stay right.
  void grow(std::uint32_t ids_in_use) {
    if (capacity_ >= max_capacity) {
      throw unsupported_error("keys wider than 64 bits: more than " + std::to_string(max_capacity) +
                              " distinct keys in one query");
    }
    const cl::Buffer old_table = table_;
    const std::vector<cl::Buffer> old_store = store_;
    const std::uint64_t old_capacity = capacity_;
    allocate(std::min(capacity_ * 4, max_capacity));
    auto& queue = ctx_.compute_queue();
    for (std::size_t c = 0; c < key::columns; ++c) {
      check(queue.enqueueCopyBuffer(old_store[c], store_[c], 0, 0, old_capacity * key::column_bytes[c]),
            "copying the key dictionary's keys");
    }
    kernels::dict_rehash_args<cl::Buffer> args;
    args.old_table = old_table;
    args.old_buckets = 2 * old_capacity;
    args.table = table_;
    args.mask = 2 * capacity_ - 1;
    args.store = store_;
    bind_arguments(rehash_, "the key dictionary's rehash", args);
    cl::Event done;
    launch(rehash_, 2 * old_capacity, &done, "growing the key dictionary");
    const std::array<cl_uint, 3> counters{ids_in_use, 0, 0};
    check(queue.enqueueWriteBuffer(counters_, CL_TRUE, 0, sizeof(counters), counters.data()),
          "resetting the key dictionary's counters");
    kernel_seconds_ += event_seconds(done);
    ids_ = ids_in_use;
    ++growths_;
  }

  /// A grid-stride launch over `items`: 256-wide groups (or the kernel's limit), at most 64 per
  /// compute unit.
  void launch(cl::Kernel& kernel, std::uint64_t items, cl::Event* done, const char* what,
              const std::vector<cl::Event>* wait = nullptr) {
    std::size_t limit = 0;
    check(kernel.getWorkGroupInfo(ctx_.device(), CL_KERNEL_WORK_GROUP_SIZE, &limit), "querying a work-group limit");
    const std::size_t local = std::min<std::size_t>(256, power_of_two_below(std::max<std::size_t>(limit, 1)));
    const std::uint64_t groups = std::clamp<std::uint64_t>((items + local - 1) / local, 1,
                                                           std::uint64_t{ctx_.info().compute_units} * 64);
    check(ctx_.compute_queue().enqueueNDRangeKernel(kernel, cl::NullRange,
                                                    cl::NDRange(static_cast<std::size_t>(groups * local)),
                                                    cl::NDRange(local), wait, done),
          what);
  }

  context& ctx_;
  cl::Program program_;
  cl::Kernel encode_;
  cl::Kernel rehash_;
  cl::Kernel keys_;
  cl::Buffer counters_;
  cl::Buffer table_;
  std::vector<cl::Buffer> store_;
  std::uint64_t capacity_ = 0;
  std::uint64_t ids_ = 0;
  std::uint64_t staging_bytes_ = 0;
  unsigned growths_ = 0;
  unsigned launches_ = 0;
  double kernel_seconds_ = 0;
};

}  // namespace gpuagg::detail
