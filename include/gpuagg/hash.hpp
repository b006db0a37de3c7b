#pragma once
// Hash functions, probing schemes and the hashing scheme that pairs them. Each policy carries
// an OpenCL snippet and the same function on the host. The table has 2^bits buckets; the
// identity scheme instead maps a dense key domain [key_min, key_min + capacity) one to one.

#include <concepts>
#include <cstdint>

#include "detail/fixed_string.hpp"

namespace gpuagg {

/// Knuth's multiplicative hashing (the paper's multiply/shift): the top `bits` bits of k * A.
struct multiply_shift {
  static constexpr detail::fixed_string name{"multiply_shift"};
  static constexpr bool is_identity = false;
  static constexpr detail::fixed_string cl_source{
      "inline uint gpuagg_home(KEY_T k, uint bits, uint capacity, KEY_T key_min) {\n"
      "#if KEY_IS_64\n"
      "  return (uint)((k * 0x9E3779B97F4A7C15UL) >> (64u - bits));\n"
      "#else\n"
      "  return (k * 0x9E3779B9u) >> (32u - bits);\n"
      "#endif\n"
      "}\n"};
  template <class Bits>
  static constexpr std::uint32_t home(Bits k, unsigned bits) noexcept {
    if constexpr (sizeof(Bits) == 8) {
      return static_cast<std::uint32_t>((std::uint64_t(k) * 0x9E3779B97F4A7C15ULL) >> (64u - bits));
    } else {
      return static_cast<std::uint32_t>(std::uint32_t(k) * 0x9E3779B9u) >> (32u - bits);
    }
  }
};

namespace detail {
/// MurmurHash3's finalizers (fmix32, fmix64) on the host; the kernels' sources spell them out.
constexpr std::uint32_t fmix32(std::uint32_t h) noexcept {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h;
}
constexpr std::uint64_t fmix64(std::uint64_t h) noexcept {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}
}  // namespace detail

/// MurmurHash3's finalizer (fmix32 / fmix64): every key bit affects every bucket bit.
struct murmur3_finalizer {
  static constexpr detail::fixed_string name{"murmur3"};
  static constexpr bool is_identity = false;
  static constexpr detail::fixed_string cl_source{
      "inline uint gpuagg_home(KEY_T k, uint bits, uint capacity, KEY_T key_min) {\n"
      "#if KEY_IS_64\n"
      "  k ^= k >> 33; k *= 0xff51afd7ed558ccdUL; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53UL; k ^= k >> 33;\n"
      "  return (uint)k & (capacity - 1u);\n"
      "#else\n"
      "  k ^= k >> 16; k *= 0x85ebca6bu; k ^= k >> 13; k *= 0xc2b2ae35u; k ^= k >> 16;\n"
      "  return k & (capacity - 1u);\n"
      "#endif\n"
      "}\n"};
  template <class Bits>
  static constexpr std::uint32_t home(Bits k, unsigned bits) noexcept {
    if constexpr (sizeof(Bits) == 8) {
      return static_cast<std::uint32_t>(detail::fmix64(k)) & ((1u << bits) - 1u);
    } else {
      return detail::fmix32(k) & ((1u << bits) - 1u);
    }
  }
};

/// The "perfect" hash of a dense key domain: bucket = key - key_min. Needs the domain
/// (options::key_domain) and `no_probing`. Its global table keeps a bitmap of used buckets
/// instead of keys (GPUAGG_DENSE_TABLE, kernels/library.hpp).
struct identity_hash {
  static constexpr detail::fixed_string name{"identity"};
  static constexpr bool is_identity = true;
  static constexpr detail::fixed_string cl_source{
      "#define GPUAGG_DENSE_TABLE 1\n"
      "inline uint gpuagg_home(KEY_T k, uint bits, uint capacity, KEY_T key_min) {\n"
      "  const KEY_T offset = k - key_min;\n"
      "  return offset < (KEY_T)capacity ? (uint)offset : GPUAGG_NO_SLOT;\n"
      "}\n"};
};

/// Linear probing (the paper's): the next bucket.
struct linear_probing {
  static constexpr detail::fixed_string name{"linear"};
  static constexpr bool probes = true;
  static constexpr detail::fixed_string cl_source{"#define GPUAGG_PROBE_NEXT(b, i, mask) (((b) + 1u) & (mask))\n"};
};

/// Quadratic (triangular-number) probing: steps 1, 2, 3, ...; visits every bucket of a
/// power-of-two table, and breaks up the clusters linear probing builds.
struct quadratic_probing {
  static constexpr detail::fixed_string name{"quadratic"};
  static constexpr bool probes = true;
  static constexpr detail::fixed_string cl_source{
      "#define GPUAGG_PROBE_NEXT(b, i, mask) (((b) + (i) + 1u) & (mask))\n"};
};

/// No probing: the home bucket is the only one (for the identity hash).
struct no_probing {
  static constexpr detail::fixed_string name{"none"};
  static constexpr bool probes = false;
  static constexpr detail::fixed_string cl_source{"#define GPUAGG_PROBE_NEXT(b, i, mask) (b)\n"};
};

template <class H>
concept hash_function = requires {
  H::name.view();
  H::cl_source.view();
  { H::is_identity } -> std::convertible_to<bool>;
};

template <class P>
concept probing_scheme = requires {
  P::name.view();
  P::cl_source.view();
  { P::probes } -> std::convertible_to<bool>;
};

/// A hash function with a probing scheme. Combinations that cannot work fail to compile.
/// Quadratic probing by default: where keys collide (scattered keys, packed composite keys) its
/// probe sequences are shorter at the long end, and a SIMD group waits for its longest; keys of
/// a dense range take a bucket each under either (docs/decisions.md).
template <hash_function Hash = multiply_shift, probing_scheme Probing = quadratic_probing>
struct hashing {
  static_assert(!Hash::is_identity || !Probing::probes,
                "gpuagg: identity_hash maps each key to its own bucket; pair it with gpuagg::no_probing");
  static_assert(Hash::is_identity || Probing::probes,
                "gpuagg: no_probing only works with identity_hash; use linear_probing or quadratic_probing");
  using hash_type = Hash;
  using probing_type = Probing;
  static constexpr bool is_identity = Hash::is_identity;
  static constexpr auto name = detail::concat(Hash::name, detail::fixed_string{"+"}, Probing::name);
  static constexpr auto cl_source = detail::concat(Hash::cl_source, Probing::cl_source);
};

/// The identity ("perfect") scheme for small dense key domains [min, max].
using direct_addressing = hashing<identity_hash, no_probing>;

}  // namespace gpuagg
