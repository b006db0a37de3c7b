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
///
/// Of packed keys (KEY_FIELDS > 1) the domain may instead be a box, every column a range of its
/// own (key_domain::of_box; the plan's direct_box): the tables' `bits` argument, 0 for a range
/// of words, then holds the spans of fields 1.. (detail::box_spans_code) and a key's bucket is
/// its fields' offsets in mixed radix (detail::box_entry), field 0's span the capacity's share.
/// Two columns of 1,024 values each are 2^20 buckets, where their packed words span 2^42.
/// gpuagg_dense_key is the inverse: the key of a bucket, for FINALIZE, EXPORT and the local
/// tables' flush.
struct identity_hash {
  static constexpr detail::fixed_string name{"identity"};
  static constexpr bool is_identity = true;
  static constexpr detail::fixed_string cl_source{R"CLC(#define GPUAGG_DENSE_TABLE 1
#if defined(KEY_FIELDS) && KEY_FIELDS > 1
#define GPUAGG_BOX_PART (32u / (KEY_FIELDS - 1u))
inline uint gpuagg_box_span(uint bits, uint i) {
  return (uint)(((ulong)bits >> (GPUAGG_BOX_PART * (i - 1u))) & ((1ul << GPUAGG_BOX_PART) - 1ul));
}
inline KEY_T gpuagg_box_mask(uint width) {
  return width >= 8u * (uint)sizeof(KEY_T) ? ~(KEY_T)0 : (((KEY_T)1 << width) - (KEY_T)1);
}
inline uint gpuagg_box_bucket(KEY_T k, KEY_T lowest, uint capacity, uint bits) {
  const uint shifts[KEY_FIELDS] = KEY_FIELD_SHIFTS;
  const uint widths[KEY_FIELDS] = KEY_FIELD_BITS;
  ulong b = 0;
  for (uint i = 0; i < KEY_FIELDS; ++i) {
    const KEY_T offset = ((k >> shifts[i]) - (lowest >> shifts[i])) & gpuagg_box_mask(widths[i]);
    const uint span = i == 0u ? capacity : gpuagg_box_span(bits, i);
    if (offset >= (KEY_T)span) return GPUAGG_NO_SLOT;
    b = b * span + (ulong)offset;
  }
  return b < capacity ? (uint)b : GPUAGG_NO_SLOT;
}
#endif
inline uint gpuagg_home(KEY_T k, uint bits, uint capacity, KEY_T key_min) {
#if defined(KEY_FIELDS) && KEY_FIELDS > 1
  if (bits != 0u) return gpuagg_box_bucket(k, key_min, capacity, bits);
#endif
  const KEY_T offset = k - key_min;
  return offset < (KEY_T)capacity ? (uint)offset : GPUAGG_NO_SLOT;
}
inline KEY_T gpuagg_dense_key(uint b, KEY_T key_min, uint bits) {
#if defined(KEY_FIELDS) && KEY_FIELDS > 1
  if (bits != 0u) {
    const uint shifts[KEY_FIELDS] = KEY_FIELD_SHIFTS;
    const uint widths[KEY_FIELDS] = KEY_FIELD_BITS;
    KEY_T k = 0;
    for (uint i = KEY_FIELDS - 1u; i > 0u; --i) {
      const uint span = gpuagg_box_span(bits, i);
      k |= (((key_min >> shifts[i]) + (KEY_T)(b % span)) & gpuagg_box_mask(widths[i])) << shifts[i];
      b /= span;
    }
    return k | ((((key_min >> shifts[0]) + (KEY_T)b) & gpuagg_box_mask(widths[0])) << shifts[0]);
  }
#endif
  return key_min + (KEY_T)b;
}
)CLC"};
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
