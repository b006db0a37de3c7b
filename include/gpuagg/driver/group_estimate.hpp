#pragma once
// The key sample and the group estimate's stages on the device (estimate.hpp has the
// arithmetic): the sample's frequencies, then HyperLogLog sketches of a strided sample, then a
// sketch of every key (device input) or the sample's extrapolation (host input).

#ifndef GPUAGG_DRIVER_HPP
#error "include <gpuagg/driver.hpp>: driver/*.hpp implement its members"
#endif

#include <algorithm>
#include <array>
#include <cstring>
#include <thread>

#include "../kernels/estimate.hpp"
#include "kernel_binder.hpp"

namespace gpuagg {

/// The key sample (driver/key_sample.hpp: key_sample_stride): 16 Ki keys, a prime stride
/// apart, then each one's right neighbour.
template <class Bound>
auto aggregation_driver<Bound>::sample_keys() -> std::vector<bits_type> {
  const auto n = static_cast<std::size_t>(detail::key_sample_size(rows_));
  std::vector<bits_type> sample(2 * n);
  if (n == 0) return sample;
  const std::uint64_t stride = detail::key_sample_stride(rows_, n);
  const auto next = [&](std::uint64_t row) { return row + 1 < rows_ ? row + 1 : row; };
  if (!on_device_) {
    const auto hosts = host_key_columns();
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t row = i * stride;
      if (i + detail::sketch_prefetch_rows < n) prefetch_host_keys(hosts, row + detail::sketch_prefetch_rows * stride);
      sample[i] = key_policy::load_bits(hosts.data(), row);
      sample[n + i] = key_policy::load_bits(hosts.data(), next(row));
    }
    return sample;
  }
  // The sampled rows with their right neighbours, each pair a stretch of two rows. A short
  // column (at most four times the sample) is read whole instead: its rows are too close for a
  // rectangle of two-element rows.
  const bool whole = rows_ <= 4 * std::uint64_t{n};
  read_key_rows(whole ? 1 : stride, whole ? 1 : 2, whole ? rows_ : n, n, "reading the key sample",
                [&](const std::array<const void*, key_policy::columns>& copies) {
                  for (std::size_t i = 0; i < n; ++i) {
                    if (whole) {
                      sample[i] = key_policy::load_bits(copies.data(), i * stride);
                      sample[n + i] = key_policy::load_bits(copies.data(), next(i * stride));
                    } else {
                      sample[i] = key_policy::load_bits(copies.data(), 2 * i);
                      sample[n + i] = key_policy::load_bits(copies.data(), 2 * i + 1);
                    }
                  }
                });
  return sample;
}

/// Rows 0, pitch, 2 pitch, ... (`count` of them), each with the `width` - 1 rows after it, of
/// the device's key columns, read into pinned copies (a column's rows one after the other,
/// stretch after stretch) that `read(copies)` reads its keys from (key_policy::load_bits).
template <class Bound>
template <class Read>
void aggregation_driver<Bound>::read_key_rows(std::uint64_t pitch, std::uint64_t width, std::uint64_t count,
                                              std::size_t warm_sample, const char* what, Read&& read_copies) {
  const auto& key = columns_.front();
  // Read straight into pinned host memory, no device buffer between: one rectangle read per key
  // column whose rows are the stretches (a plain read where they touch). A query over a few
  // groups then holds no more device memory than its table.
  std::array<std::uint64_t, key_policy::columns> at{};
  std::uint64_t bytes = 0;
  for (std::size_t c = 0; c < key_policy::columns; ++c) {
    at[c] = (bytes + 63) / 64 * 64;  // each column's copy aligned for its element type
    bytes = at[c] + width * count * key_policy::column_bytes[c];
  }
  auto [pinned, size_class] = ctx_.pooled_pinned(bytes, "the key sample's host copy");
  auto* host = static_cast<char*>(pinned.mapped);
  auto& queue = ctx_.compute_queue();
  cl_int read = CL_SUCCESS;
  cl::Event read_last;
  for (std::size_t c = 0; c < key_policy::columns && read == CL_SUCCESS; ++c) {
    const std::size_t element = key_policy::column_bytes[c];
    cl::Event* done = c + 1 == key_policy::columns ? &read_last : nullptr;
    if (pitch == width) {
      read = queue.enqueueReadBuffer(columns_[c].device, CL_FALSE, key.offset * element, width * count * element,
                                     host + at[c], nullptr, done);
    } else {
      const std::array<cl::size_type, 3> origin{key.offset * element, 0, 0};
      const std::array<cl::size_type, 3> to{0, 0, 0};
      const std::array<cl::size_type, 3> region{width * element, count, 1};
      read = queue.enqueueReadBufferRect(columns_[c].device, CL_FALSE, origin, to, region, pitch * element, 0,
                                         width * element, 0, host + at[c], nullptr, done);
    }
  }
  if (read == CL_SUCCESS) {
    // While the reads are in flight (the last one done means all are: the queue is in order),
    // the sample's profile's scratch table comes into the cache: its probes then hit there.
    if (warm_sample > 0) detail::warm_profile_scratch<bits_type>(warm_sample);
    read = read_last.wait();
  }
  if (read == CL_SUCCESS) {
    std::array<const void*, key_policy::columns> copies{};
    for (std::size_t c = 0; c < key_policy::columns; ++c) copies[c] = host + at[c];
    read_copies(copies);
  }
  if (read != CL_SUCCESS) (void)queue.finish();  // no read still writes to the pinned copy when it goes back
  ctx_.recycle_pinned(size_class, pinned);
  detail::check(read, what);
}

/// The group estimate's stages (estimate.hpp: estimate_in_stages) with this input's sketches:
/// on the device for device input, on up to 16 host threads for host input (where growth
/// corrects an estimate that is low).
template <class Bound>
auto aggregation_driver<Bound>::estimate_groups(const detail::sample_profile& profile) -> group_estimate {
  const auto& key = columns_.front();
  const auto sketch = [&](std::uint64_t stride, std::uint64_t n, bool last, bool count_frequent) {
    if (on_device_) {
      // The kernel counts one key's rows: the key sample's one frequent key (a heavy hitter),
      // where it has one (detail::device_counts_frequent).
      std::optional<cl_ulong> hot;
      if (count_frequent && detail::device_counts_frequent(profile.frequent.size())) {
        hot = profile.frequent.front().first;
      }
      return sketch_on_device(device_key_columns(), false, key.offset, stride, n, key.offset + rows_, true,
                              !profile.aliased &&
                                  detail::byte_sketch_registers(profile.distinct, profile.once, profile.twice),
                              hot);
    }
    const unsigned threads = opts_.copy_threads ? opts_.copy_threads
                                                : std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
    const auto hosts = host_key_columns();
    const auto frequent = count_frequent ? profile.frequent_words() : std::vector<std::uint64_t>{};
    return detail::sketch_host_rows(
        [&](std::uint64_t row) { return std::uint64_t(key_policy::load_bits(hosts.data(), row)); }, rows_, stride, n,
        threads, [&](std::uint64_t row) { prefetch_host_keys(hosts, row); }, last, frequent,
        detail::host_sketch_run_rows_log2(profile.runs_share, profile.ordered));
  };
  const auto every = [&] {
    return sketch_on_device(device_key_columns(), false, key.offset, 1, rows_, key.offset + rows_, false);
  };
  const auto estimate = detail::estimate_in_stages(profile, rows_, !on_device_, sketch, every);
  return {estimate.groups, estimate.source, estimate.relative_error};
}

/// The sketches of `n` keys, `stride` rows apart from row `first`, read back: of the key columns
/// `inputs` (gpuagg_sketch), or of the table words in `inputs[0]` (`words`: gpuagg_sketch_words);
/// `sampled`: also the smaller sample's registers and the neighbours' equality counts (left zero
/// in the result otherwise); `byte_registers`: a strided sample's registers as bytes
/// (detail::byte_sketch_registers); `hot`: a key word whose rows a strided sample counts (the
/// result's `frequent`).
template <class Bound>
detail::host_sketch aggregation_driver<Bound>::sketch_on_device(const std::vector<cl::Buffer>& inputs, bool words,
                                                                 cl_ulong first, cl_ulong stride, cl_ulong n,
                                                                 cl_ulong rows_end, bool sampled,
                                                                 bool byte_registers, std::optional<cl_ulong> hot) {
  // Every row of a range (a sketch of every key, or of the spill area's words): the kernel
  // of that loop alone, which raises only the first sketch's registers. A strided sample: two
  // sketches, of byte registers where the sample says the table may be small. The registers
  // are held only while the sketch runs: the table the estimate sizes is made after it.
  constexpr std::size_t registers = detail::sketch_registers;
  const bool every_row = stride == 1 && !sampled;
  const bool bytes = byte_registers && !every_row;
  const std::uint64_t register_bytes = (every_row ? 1 : 2) * registers * (bytes ? 1 : sizeof(cl_uint));
  const cl::Buffer sketch_registers = allocate(register_bytes, "the group estimate's sketches");
  const cl::Buffer sketch_counts =
      every_row ? cl::Buffer() : allocate(3 * sizeof(cl_ulong), "the group estimate's counts");
  auto& queue = ctx_.compute_queue();
  const cl_uint zero = 0;
  detail::check(queue.enqueueFillBuffer(sketch_registers, zero, 0, register_bytes), "clearing the sketches");
  if (!every_row) {
    detail::check(queue.enqueueFillBuffer(sketch_counts, zero, 0, 3 * sizeof(cl_ulong)), "clearing the counts");
  }
  const std::string name = std::string(words ? "gpuagg_sketch_words" : "gpuagg_sketch") +
                           (every_row ? "_every" : bytes ? "_bytes" : "");
  cl::Kernel kernel = ctx_.kernel(estimate_program(), name.c_str());
  const std::size_t local =
      std::min<std::size_t>(256, detail::power_of_two_below(kernel_work_group_limit(kernel)));
  if (every_row) {
    detail::kernels::sketch_every_args<cl::Buffer> args;
    args.key_columns = inputs;
    args.first = first;
    args.n = n;
    args.registers = sketch_registers;
    args.seen = {registers};
    detail::bind_arguments(kernel, "the group estimate's sketch", args);
  } else {
    detail::kernels::sketch_args<cl::Buffer> args;
    args.key_columns = inputs;
    args.first = first;
    args.stride = stride;
    args.n = n;
    args.rows_end = rows_end;
    args.sampled = sampled ? 1 : 0;
    args.hot = hot.value_or(0);
    args.registers = sketch_registers;
    args.counts = sketch_counts;
    args.scratch = {3 * local * sizeof(cl_uint)};
    detail::bind_arguments(kernel, "the group estimate's sketch", args);
  }
  const std::uint64_t groups =
      std::clamp<std::uint64_t>((n + local - 1) / local, 1, std::uint64_t{ctx_.info().compute_units} * 16);
  cl::Event done;
  launch(kernel, static_cast<std::size_t>(groups * local), local, "the group estimate's sketch", &done);
  auto [pinned, size_class] = ctx_.pooled_pinned(register_bytes + 3 * sizeof(cl_ulong), "the sketches' host copy");
  auto* host = static_cast<char*>(pinned.mapped);
  cl_int read = queue.enqueueReadBuffer(sketch_registers, every_row ? CL_TRUE : CL_FALSE, 0, register_bytes, host);
  if (read == CL_SUCCESS && !every_row) {
    read = queue.enqueueReadBuffer(sketch_counts, CL_TRUE, 0, 3 * sizeof(cl_ulong), host + register_bytes);
  }
  detail::host_sketch sketch;
  if (read == CL_SUCCESS) {
    // Byte register i is byte i % 4 of word i / 4 (kernels/estimate.hpp), whatever the host's
    // byte order.
    const auto* words = reinterpret_cast<const cl_uint*>(host);
    const auto unpack = [words](std::size_t first, std::vector<std::uint32_t>& to) {
      for (std::size_t i = 0; i < registers; ++i) {
        const std::size_t at = first + i;
        to[i] = (words[at / 4] >> (at % 4 * 8)) & 0xFFu;
      }
    };
    if (!bytes) {
      std::copy(words, words + registers, sketch.registers.begin());
      if (!every_row) std::copy(words + registers, words + 2 * registers, sketch.sub_registers.begin());
    } else {
      unpack(0, sketch.registers);
      unpack(registers, sketch.sub_registers);
    }
    if (!every_row) {
      cl_ulong counts[3];
      std::memcpy(counts, host + register_bytes, sizeof(counts));
      sketch.neighbour_pairs = counts[0];
      sketch.neighbour_equal = counts[1];
      if (hot) sketch.frequent = detail::frequent_keys_count{counts[2], counts[2] > 0 ? 1u : 0u};
    }
  }
  ctx_.recycle_pinned(size_class, pinned);
  detail::check(read, "reading the sketches");
  detail::wait_for(done, "the group estimate's sketch");
  stats_.estimate_seconds += detail::event_seconds(done);
  recycle(sketch_registers);
  if (!every_row) recycle(sketch_counts);
  return sketch;
}

}  // namespace gpuagg
