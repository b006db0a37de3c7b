// Compile-time source generation: golden strings, types, and the host and device versions of
// each hash function agreeing.
#include "support.hpp"

using namespace gpuagg;
using namespace gpuagg_test;

static_assert(detail::to_fixed_string<0>() == detail::fixed_string{"0"});
static_assert(detail::to_fixed_string<-42>() == detail::fixed_string{"-42"});
static_assert(detail::to_fixed_string<18446744073709551615ull>() == detail::fixed_string{"18446744073709551615"});
static_assert(detail::to_hex_fixed_string<255, 4>() == detail::fixed_string{"0x00ff"});
static_assert(detail::concat(detail::fixed_string{"ab"}, detail::fixed_string{"c"}) == detail::fixed_string{"abc"});

// Accumulator and output types.
namespace {
constexpr auto typed_query = select(sum(col<0>), sum(col<1>), sum(col<2>), min(col<2>), count(), avg(col<0>),
                                    max(col<3>) / lit<2>);
using typed_bound = bound_query<single_key<std::int32_t>, std::remove_const_t<decltype(typed_query)>, std::int32_t,
                                std::uint32_t, float, std::int64_t>;
}  // namespace
static_assert(std::is_same_v<typed_bound::output_tuple,
                             std::tuple<std::int64_t, std::uint64_t, double, float, std::uint64_t, double, std::int64_t>>);
// count() appears in the query and inside avg(): one accumulator serves both.
static_assert(typed_bound::aggregate_count == 6);
static_assert(typed_bound::bucket_bytes == 4 + 8 + 8 + 8 + 4 + 8 + 8);
// A float accumulator among 8-byte ones: no interleaved layout for this query.
static_assert(!typed_bound::interleavable);

TEST_CASE("the key policy's OpenCL text is exactly as expected") {
  CHECK(single_key<std::uint32_t>::cl_source.view() ==
        "#define KEY_T uint\n"
        "#define KEY_IN_T uint\n"
        "#define KEY_IS_64 0\n"
        "#define EMPTY_KEY ((KEY_T)0xffffffffUL)\n"
        "#define KEY_PARAMS __global const KEY_IN_T* restrict key_in0\n"
        "#define KEY_LOAD(row) ((KEY_T)key_in0[row])\n"
        "#define KEY_OUT_PARAMS , __global KEY_IN_T* restrict key_out0\n"
        "#define KEY_STORE(pos, bits) (key_out0[pos] = (KEY_IN_T)(bits))\n"
        "#define KEY_COPY_PARAMS , __global KEY_IN_T* restrict key_copy0\n"
        "#define KEY_COPY(to, from) (key_copy0[to] = key_in0[from])\n");
}

TEST_CASE("a query's OpenCL text is exactly as expected: the paper's query") {
  constexpr auto a = col<0>;
  constexpr auto b = col<1>;
  constexpr auto paper = select(sum(square(a - b)) / count());
  using bound = bound_query<single_key<std::uint32_t>, std::remove_const_t<decltype(paper)>, std::int32_t, std::int32_t>;
  CHECK(bound::cl_source.view() ==
        "// aggregate 0: sum(((v0[row] - v1[row]) * (v0[row] - v1[row])))\n"
        "#define GPUAGG_NEED_ADD_LONG 1\n"
        "typedef long acc0_t;\n"
        "#define ACC0_IDENTITY ((long)0x0000000000000000UL)\n"
        "#define ACC0_ROW(row) ((acc0_t)(((v0[row] - v1[row]) * (v0[row] - v1[row]))))\n"
        "#define ACC0_COMBINE_global(p, x) gpuagg_atomic_add_long_global(p, x)\n"
        "#define ACC0_COMBINE_local(p, x) gpuagg_atomic_add_long_local(p, x)\n"
        "#define ACC0_COMBINE_private(p, x) (*(p) = gpuagg_add_long(*(p), (x)))\n"
        "// aggregate 1: count(1)\n"
        "#define GPUAGG_NEED_ADD_ULONG 1\n"
        "typedef ulong acc1_t;\n"
        "#define ACC1_IDENTITY ((ulong)0x0000000000000000UL)\n"
        "#define ACC1_ROW(row) ((acc1_t)(1))\n"
        "#define ACC1_COMBINE_global(p, x) gpuagg_atomic_add_ulong_global(p, x)\n"
        "#define ACC1_COMBINE_local(p, x) gpuagg_atomic_add_ulong_local(p, x)\n"
        "#define ACC1_COMBINE_private(p, x) (*(p) = gpuagg_add_ulong(*(p), (x)))\n"
        "typedef ulong out0_t;\n"
        "#define OUT0_VALUE(slot) ((out0_t)((g_acc0[slot] / g_acc1[slot])))\n"
        "#define VALUE_PARAMS , __global const int* restrict v0, __global const int* restrict v1\n"
        "#define VALUE_COPY_PARAMS , __global int* restrict vc0, __global int* restrict vc1\n"
        "#define VALUE_COPY(to, from) vc0[to] = v0[from]; vc1[to] = v1[from];\n"
        "#define ACC_PARAMS(AS, P) , AS acc0_t* P##acc0 , AS acc1_t* P##acc1\n"
        "#define ACC_INIT(P, s) P##acc0[s] = ACC0_IDENTITY; P##acc1[s] = ACC1_IDENTITY;\n"
        "#define ACC_COMBINE_FROM(AS, P, s, Q, q) ACC0_COMBINE_##AS(&P##acc0[s], Q##acc0[q]); "
        "ACC1_COMBINE_##AS(&P##acc1[s], Q##acc1[q]);\n"
        "#define ACC_LOAD_ROW(P, row) const acc0_t P##0 = ACC0_ROW(row); const acc1_t P##1 = ACC1_ROW(row);\n"
        "#define ACC_COMBINE_LOADED(AS, T, s, P) ACC0_COMBINE_##AS(&T##acc0[s], P##0); "
        "ACC1_COMBINE_##AS(&T##acc1[s], P##1);\n"
        "#define ACC_DECLARE(P) acc0_t P##0 = ACC0_IDENTITY; acc1_t P##1 = ACC1_IDENTITY;\n"
        "#define ACC_ASSIGN(P, Q) P##0 = Q##0; P##1 = Q##1;\n"
        "#define ACC_MERGE_PRIVATE(P, Q) ACC0_COMBINE_private(&P##0, Q##0); ACC1_COMBINE_private(&P##1, Q##1);\n"
        "#define ACC_MERGE_PRIVATE_IF(P, Q, c) { acc0_t m_ = P##0; ACC0_COMBINE_private(&m_, Q##0); "
        "P##0 = (c) ? m_ : P##0; } { acc1_t m_ = P##1; ACC1_COMBINE_private(&m_, Q##1); P##1 = (c) ? m_ : P##1; }\n"
        "#define ACC_STORE_LOADED(T, s, P) T##acc0[s] = P##0; T##acc1[s] = P##1;\n"
        "#define ACC_COUNT 2u\n"
        "#define ACC_WORD_BYTES 8u\n"
        "#define ACC_REBIND(P, AS) P##acc0 = (AS acc0_t*)((AS uchar*)P##keys + ACC_WORD_BYTES * 1u); "
        "P##acc1 = (AS acc1_t*)((AS uchar*)P##keys + ACC_WORD_BYTES * 2u);\n"
        "#define ACC_COPY_FROM(P, s, Q, q) P##acc0[s] = Q##acc0[q]; P##acc1[s] = Q##acc1[q];\n"
        "#define OUT_PARAMS , __global out0_t* restrict out0\n"
        "#define OUT_STORE_ALL(pos, slot) out0[pos] = OUT0_VALUE(slot);\n"
        "#define ROW_PASSES(row) 1\n");
}

namespace {
using count_bound = bound_query<single_key<std::int64_t>, decltype(select(count())), std::int32_t>;

/// Whether Strategy's program holds `needle`, at compile time. It searches a copy: under
/// AddressSanitizer GCC cannot compare addresses into the global constant while evaluating.
template <class Strategy>
constexpr bool program_has(std::string_view needle) {
  constexpr auto text = program_source<count_bound, Strategy>;
  return text.view().find(needle) != std::string_view::npos;
}
}  // namespace

TEST_CASE("each strategy's program is a compile-time constant holding its own AGGREGATE") {
  static_assert(program_has<shared_strategy>("__kernel GPUAGG_AGGREGATE_ATTRIBUTES void gpuagg_aggregate("));
  static_assert(program_has<workgroup_local_strategy>("__local KEY_T* l_keys"));
  static_assert(program_has<independent_strategy>("__global KEY_T* p_keys"));
  static_assert(!program_has<shared_strategy>("__local KEY_T* l_keys"));
  CHECK(program_source_for<count_bound>(strategy_kind::independent) ==
        program_source<count_bound, independent_strategy>.view());
}

template <class Bits, class Hash>
void check_hash_agrees() {
  const std::string source = std::string(detail::kernels::header.view()) +
                             std::string(single_key<Bits>::cl_source.view()) + std::string(Hash::cl_source.view()) +
                             "__kernel void homes(__global const KEY_T* k, __global uint* h, const uint bits) {\n"
                             "  const size_t i = get_global_id(0);\n"
                             "  h[i] = gpuagg_home(k[i], bits, 1u << bits, 0);\n"
                             "}\n";
  auto& c = ctx();
  auto kernel = c.kernel(c.program(source), "homes");
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  std::vector<Bits> keys(1024);
  for (auto& k : keys) k = static_cast<Bits>(rng());
  keys[0] = 0;
  keys[1] = static_cast<Bits>(~Bits{0});
  for (const unsigned bits : {1u, 7u, 20u, 31u}) {
    CAPTURE(bits);
    cl::Buffer k(c.cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, keys.size() * sizeof(Bits), keys.data());
    cl::Buffer h(c.cl_context(), CL_MEM_WRITE_ONLY, keys.size() * 4);
    kernel.setArg(0, k);
    kernel.setArg(1, h);
    kernel.setArg(2, cl_uint(bits));
    c.compute_queue().enqueueNDRangeKernel(kernel, cl::NullRange, cl::NDRange(keys.size()), cl::NullRange);
    std::vector<std::uint32_t> homes(keys.size());
    c.compute_queue().enqueueReadBuffer(h, CL_TRUE, 0, homes.size() * 4, homes.data());
    std::size_t mismatches = 0;
    std::set<std::uint32_t> distinct;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      mismatches += homes[i] != Hash::home(keys[i], bits);
      CHECK(homes[i] < (std::uint64_t{1} << bits));
      distinct.insert(homes[i]);
    }
    CHECK(mismatches == 0);
    if (bits >= 20) CHECK(distinct.size() > 1000);  // random keys spread out
  }
}

TEST_CASE_TEMPLATE("hash functions: the host version matches the OpenCL one, and buckets stay in range", Bits,
                   std::uint32_t, std::uint64_t) {
  check_hash_agrees<Bits, multiply_shift>();
  check_hash_agrees<Bits, murmur3_finalizer>();
}

TEST_CASE("PARTITION's kernels order a block's rows into runs by table region, piece by piece, losing and duplicating none") {
  // COUNT and SCAN (twice) over the whole block, then SCATTER piece by piece, as the driver
  // enqueues them (driver/partition.hpp), on a row range that starts past 0, tiles that do not
  // divide it and a last piece shorter than the others; each value names its row.
  using bound = bound_query<single_key<std::uint32_t>, decltype(select(sum(col<0>))), std::uint32_t>;
  auto& c = ctx();
  const cl::Program program = c.program(program_source<bound, shared_strategy>.view());
  cl::Kernel count = c.kernel(program, "gpuagg_partition_count");
  cl::Kernel scan = c.kernel(program, "gpuagg_partition_scan");
  cl::Kernel scatter = c.kernel(program, "gpuagg_partition_scatter");
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  const std::size_t first = 77, rows = 100'003, total = first + rows;
  std::vector<std::uint32_t> keys(total), vals(total);
  for (std::size_t i = 0; i < total; ++i) {
    keys[i] = i % 5 == 0 ? static_cast<std::uint32_t>(rng() % 7) : static_cast<std::uint32_t>(rng());
    vals[i] = static_cast<std::uint32_t>(i);
  }
  keys[first] = 0xffffffffu;  // the empty marker's key is an ordinary row here
  keys[first + 1] = 0;
  const unsigned bits = 16;
  const std::uint32_t capacity = 1u << bits;
  for (const std::uint32_t pieces : {1u, 3u}) {
    for (const std::uint32_t parts : {1u, 64u, 1024u}) {
      CAPTURE(pieces);
      CAPTURE(parts);
      const std::uint32_t region = capacity / parts;
      const std::size_t local = 64, tiles = 37;
      const std::uint64_t tile_rows = (rows + pieces * tiles - 1) / (pieces * tiles);
      const std::uint64_t piece_rows = tiles * tile_rows;
      const auto buffer = [&](std::vector<std::uint32_t>* data, std::size_t n) {
        return data ? cl::Buffer(c.cl_context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n * 4, data->data())
                    : cl::Buffer(c.cl_context(), CL_MEM_READ_WRITE, std::max<std::size_t>(n, 1) * 4);
      };
      cl::Buffer key_in = buffer(&keys, total), val_in = buffer(&vals, total);
      cl::Buffer counts = buffer(nullptr, pieces * parts * tiles), bases = buffer(nullptr, pieces * parts),
                 sums = buffer(nullptr, pieces);
      cl::Buffer key_out = buffer(nullptr, piece_rows), val_out = buffer(nullptr, piece_rows);
      const auto params = [&](cl::Kernel& k, cl_uint at, std::uint64_t begin, std::uint64_t end, std::uint32_t piece) {
        k.setArg(at++, cl_ulong(begin));
        k.setArg(at++, cl_ulong(end));
        k.setArg(at++, cl_ulong(tile_rows));
        k.setArg(at++, cl_uint(bits));
        k.setArg(at++, cl_uint(capacity));
        k.setArg(at++, cl_uint(0));
        k.setArg(at++, cl_uint(region));
        k.setArg(at++, cl_uint(parts));
        k.setArg(at++, cl_uint(tiles));
        k.setArg(at++, cl_uint(piece));
        k.setArg(at++, cl_uint(0));  // bucketed: SCATTER copies the keys
        k.setArg(at++, cl_uint(0));  // first_region: COUNT runs rows by their bucket
        return at;
      };
      auto& queue = c.compute_queue();
      count.setArg(0, key_in);
      count.setArg(params(count, 1, first, total, 0), counts);
      REQUIRE(queue.enqueueNDRangeKernel(count, cl::NullRange, cl::NDRange(pieces * tiles * local),
                                         cl::NDRange(local)) == CL_SUCCESS);
      scan.setArg(0, counts);
      scan.setArg(1, cl_uint(tiles));
      scan.setArg(2, bases);
      scan.setArg(3, cl::Local(local * 4));
      REQUIRE(queue.enqueueNDRangeKernel(scan, cl::NullRange, cl::NDRange(pieces * parts * local),
                                         cl::NDRange(local)) == CL_SUCCESS);
      scan.setArg(0, bases);
      scan.setArg(1, cl_uint(parts));
      scan.setArg(2, sums);
      REQUIRE(queue.enqueueNDRangeKernel(scan, cl::NullRange, cl::NDRange(pieces * local), cl::NDRange(local)) ==
              CL_SUCCESS);
      std::vector<std::uint32_t> grand(pieces);
      queue.enqueueReadBuffer(sums, CL_TRUE, 0, pieces * 4, grand.data());
      std::vector<std::uint8_t> seen(total, 0);
      for (std::uint32_t piece = 0; piece < pieces; ++piece) {
        CAPTURE(piece);
        const std::uint64_t begin = first + piece * piece_rows;
        const std::uint64_t end = std::min<std::uint64_t>(begin + piece_rows, total);
        const std::size_t n = end - begin;
        CHECK(grand[piece] == n);
        scatter.setArg(0, key_in);
        scatter.setArg(1, val_in);
        cl_uint at = params(scatter, 2, begin, end, piece);
        scatter.setArg(at++, counts);
        scatter.setArg(at++, bases);
        scatter.setArg(at++, key_out);
        scatter.setArg(at++, val_out);
        REQUIRE(queue.enqueueNDRangeKernel(scatter, cl::NullRange, cl::NDRange(tiles * local), cl::NDRange(local)) ==
                CL_SUCCESS);
        std::vector<std::uint32_t> got_keys(n), got_vals(n);
        queue.enqueueReadBuffer(key_out, CL_TRUE, 0, n * 4, got_keys.data());
        queue.enqueueReadBuffer(val_out, CL_TRUE, 0, n * 4, got_vals.data());
        std::size_t wrong = 0, repeated = 0, out_of_order = 0;
        std::uint32_t previous_run = 0;
        for (std::size_t i = 0; i < n; ++i) {
          const std::uint32_t row = got_vals[i];
          if (row < begin || row >= end || got_keys[i] != keys[row]) {
            ++wrong;
            continue;
          }
          repeated += seen[row]++;
          const std::uint32_t run = std::min(multiply_shift::home(got_keys[i], bits) / region, parts - 1);
          out_of_order += run < previous_run;
          previous_run = run;
        }
        CHECK(wrong == 0);
        CHECK(repeated == 0);
        CHECK(out_of_order == 0);
      }
      CHECK(std::count(seen.begin() + first, seen.end(), 1) == std::ptrdiff_t(rows));
    }
  }
}
