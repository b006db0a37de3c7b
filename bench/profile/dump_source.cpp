// gpuagg_dump_source: prints the OpenCL program that gpuagg builds for the benchmark's query,
// SELECT g, sum(v) GROUP BY g with uint32 keys and uint32 values (gpuagg_bench.cpp), so that
// cl_to_cuda.py can turn the very same text into a CUDA twin for Nsight Compute. Needs no
// OpenCL device, library or header: the program text is a compile-time constant (source.hpp).
//
//   gpuagg_dump_source shared hash              the program on stdout
//   gpuagg_dump_source --all DIR                DIR/<strategy>_<scheme>.cl for every pair
//
// strategy: shared | workgroup_local | independent; scheme: hash (gpuagg::hashing<>, i.e.
// multiply_shift + quadratic probing, what select() uses) | direct (gpuagg::direct_addressing).
// The run-cache variant is the same text built with -DGPUAGG_RUN_CACHE (kernels.inc).
#include <cstdint>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <type_traits>

#include <gpuagg/source.hpp>

namespace {

using namespace gpuagg;

// The queries gpuagg_bench runs (run_groups): select(sum(col<0>)) and
// select<direct_addressing>(sum(col<0>)), bound to uint32 keys and one uint32 value column.
using hash_query = std::remove_const_t<decltype(select(sum(col<0>)))>;
using direct_query = std::remove_const_t<decltype(select<direct_addressing>(sum(col<0>)))>;
using hash_bound = bound_query<single_key<std::uint32_t>, hash_query, std::uint32_t>;
using direct_bound = bound_query<single_key<std::uint32_t>, direct_query, std::uint32_t>;

constexpr strategy_kind strategies[] = {strategy_kind::shared, strategy_kind::workgroup_local,
                                        strategy_kind::independent};

std::string_view strategy_name(strategy_kind kind) {
  switch (kind) {
    case strategy_kind::shared: return "shared";
    case strategy_kind::workgroup_local: return "workgroup_local";
    case strategy_kind::independent: return "independent";
  }
  return "?";
}

bool parse_strategy(std::string_view text, strategy_kind& kind) {
  for (const auto candidate : strategies) {
    if (text == strategy_name(candidate)) {
      kind = candidate;
      return true;
    }
  }
  return false;
}

std::string_view source_for(strategy_kind strategy, std::string_view scheme) {
  return scheme == "direct" ? program_source_for<direct_bound>(strategy) : program_source_for<hash_bound>(strategy);
}

int usage() {
  std::cerr << "usage: gpuagg_dump_source <shared|workgroup_local|independent> <hash|direct>\n"
               "       gpuagg_dump_source --all DIR   (writes DIR/<strategy>_<scheme>.cl)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string_view(argv[1]) == "--all") {
    const std::string dir = argv[2];
    for (const auto strategy : strategies) {
      for (const std::string_view scheme : {"hash", "direct"}) {
        const std::string path = dir + "/" + std::string(strategy_name(strategy)) + "_" + std::string(scheme) + ".cl";
        std::ofstream out(path, std::ios::binary);
        out << source_for(strategy, scheme);
        if (!out) {
          std::cerr << "gpuagg_dump_source: cannot write " << path << '\n';
          return 1;
        }
        std::cout << path << '\n';
      }
    }
    return 0;
  }
  strategy_kind strategy{};
  if (argc != 3 || !parse_strategy(argv[1], strategy)) return usage();
  const std::string_view scheme = argv[2];
  if (scheme != "hash" && scheme != "direct") return usage();
  std::cout << source_for(strategy, scheme);
  return std::cout ? 0 : 1;
}
