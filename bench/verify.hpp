#pragma once
// Verification shared by the benchmarks: an order-independent checksum of a result's (key, sum)
// pairs, computed on the host for the reference and on the device for a result that stays
// there, so that no result is reported unchecked and no check reads gigabytes back.

#include <bit>
#include <cstdint>
#include <string>
#include <type_traits>

#include <gpuagg/groupby.hpp>

namespace gpuagg_bench {

inline std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// One pair's share of the checksum (the same function in OpenCL below).
inline std::uint64_t pair_checksum(std::uint64_t key, std::uint64_t sum) {
  return mix64(key * 0x9E3779B97F4A7C15ULL + mix64(sum));
}

/// A sum as the 64-bit word the checksum mixes (the bits of a double).
template <class Sum>
std::uint64_t sum_word(Sum sum) {
  if constexpr (std::is_floating_point_v<Sum>) {
    return std::bit_cast<std::uint64_t>(static_cast<double>(sum));
  } else {
    return static_cast<std::uint64_t>(sum);
  }
}

inline constexpr const char* checksum_source = R"CLC(
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
inline ulong mix64(ulong x) {
  x ^= x >> 30; x *= 0xbf58476d1ce4e5b9UL; x ^= x >> 27; x *= 0x94d049bb133111ebUL; return x ^ (x >> 31);
}
__kernel void checksum(__global const KEY_T* keys, __global const SUM_T* sums, const ulong n, __global ulong* out) {
  ulong mine = 0;
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    mine += mix64((ulong)keys[i] * 0x9E3779B97F4A7C15UL + mix64(SUM_WORD(sums[i])));
  }
  if (mine) atom_add(out, mine);
}
)CLC";

/// The checksum of n pairs in device buffers.
template <class Key, class Sum>
std::uint64_t device_checksum(gpuagg::context& ctx, const cl::Buffer& keys, const cl::Buffer& sums, std::uint64_t n) {
  const std::string source = std::string("#define KEY_T ") + std::string(gpuagg::cl_type_name<Key>.view()) +
                             "\n#define SUM_T " + std::string(gpuagg::cl_type_name<Sum>.view()) +
                             "\n#define SUM_WORD(x) " +
                             (std::is_floating_point_v<Sum> ? "as_ulong(x)" : "((ulong)(x))") + "\n" + checksum_source;
  cl::Kernel kernel = ctx.kernel(ctx.program(source), "checksum");
  cl::Buffer out = ctx.buffer(8, "the checksum");
  const cl_ulong zero = 0;
  ctx.compute_queue().enqueueFillBuffer(out, zero, 0, 8);
  kernel.setArg(0, keys);
  kernel.setArg(1, sums);
  kernel.setArg(2, cl_ulong(n));
  kernel.setArg(3, out);
  const std::size_t global = std::size_t{ctx.info().compute_units} * 1024;
  ctx.compute_queue().enqueueNDRangeKernel(kernel, cl::NullRange, cl::NDRange(global), cl::NDRange(256));
  cl_ulong value = 0;
  ctx.compute_queue().enqueueReadBuffer(out, CL_TRUE, 0, 8, &value);
  return value;
}

}  // namespace gpuagg_bench
