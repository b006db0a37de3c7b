// cl_on_cuda: runs the CUDA twin of gpuagg's OpenCL kernels (cl_to_cuda.py's output, built by
// nvcc into one cubin per OpenCL program build) the way the driver runs the OpenCL ones, so
// that Nsight Compute can profile them: the same table sizes, arguments in the same order, the
// same thread configuration (132 CUs x W work groups x S work items), the same input as
// gpuagg_bench. Each cubin holds a whole program (INITIALIZE, AGGREGATE, FINALIZE, ...), loaded
// with the driver API, so one process runs every strategy and scheme on one dataset and the
// kernels keep their OpenCL names (extern "C"), which is what ncu shows.
//
//   cl_on_cuda --cubin-dir DIR --strategy shared --scheme hash --groups-log2 4,10 --reps 5
//   cl_on_cuda --cubin-dir DIR --plan PLAN [--profile] [--csv FILE]
//
// DIR/<strategy>_<scheme>[_rc].cubin: strategy shared | workgroup_local, scheme hash | direct,
// _rc for the run-cache build (-DGPUAGG_RUN_CACHE), each with its .params (cl_to_cuda.py
// --params: the kernels' parameters, which the arguments are matched to by name). A plan has
// one run per line:
//   groups_log2 strategy scheme work_groups_per_cu work_group_size run_cache
// Runs of one group count share a dataset (generated once, in plan order).
//
// Per run: INITIALIZE, then AGGREGATE over the whole input as one block, timed with CUDA events,
// R times (median and best); then R times as the driver's blocks (2^27 rows make 3 blocks and a
// 2-row fourth on the H100), launched back to back; with --profile one more single-block
// AGGREGATE first, alone between cudaProfilerStart and cudaProfilerStop (ncu
// --profile-from-start off profiles exactly that launch). Then FINALIZE, whose result (and
// the spill area, if used) is checked against a CPU reference: every group's sum, and the number
// of groups. Exit status 1 on any mismatch, 2 on a usage or CUDA error.
#include <cuda.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../row_draw.hpp"

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::cerr << "cl_on_cuda: " << what << '\n';
  std::exit(2);
}

void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) fail(std::string(what) + ": " + cudaGetErrorName(status) + " " + cudaGetErrorString(status));
}

void check(CUresult status, const char* what) {
  if (status != CUDA_SUCCESS) {
    const char* name = "?";
    const char* text = "";
    cuGetErrorName(status, &name);
    cuGetErrorString(status, &text);
    fail(std::string(what) + ": " + name + " " + text);
  }
}

// ---- the driver's sizing rules (include/gpuagg/driver.hpp), for SELECT g, sum(v) over uint32 ----
constexpr std::uint64_t bucket_bytes = 4 + 8;  // uint key word + ulong sum
constexpr double max_load_factor = 0.5;        // options::max_load_factor
constexpr std::uint64_t plain_key_reads_max_bytes = std::uint64_t{1} << 20;
constexpr std::uint64_t meta_words = 4;  // META_GROUPS, META_SPECIAL, META_SPILLED, META_LOST

std::uint64_t next_pow2(std::uint64_t x) {
  std::uint64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

unsigned log2_exact(std::uint64_t pow2) {
  unsigned bits = 0;
  while ((std::uint64_t{1} << bits) < pow2) ++bits;
  return bits;
}

/// table_capacity_for(): buckets for `groups` at the load factor, a power of two, at least 16.
std::uint64_t table_capacity_for(std::uint64_t groups) {
  const auto wanted = static_cast<std::uint64_t>(std::ceil(double(groups) / max_load_factor));
  return next_pow2(std::max<std::uint64_t>(wanted, 16));
}

/// buckets_fitting(): the largest table (a power of two; any size for identity) in `bytes`.
std::uint64_t buckets_fitting(std::uint64_t bytes, bool identity) {
  if (bytes < 2 * bucket_bytes) return 0;
  const std::uint64_t any = bytes / bucket_bytes - 1;
  if (identity) return any;
  std::uint64_t pow2 = 1;
  while (pow2 * 2 <= any) pow2 *= 2;
  return pow2;
}

struct run_spec {
  unsigned groups_log2 = 10;
  std::string strategy = "shared";  // shared | workgroup_local
  std::string scheme = "hash";      // hash | direct
  std::uint32_t work_groups_per_cu = 4;
  std::uint32_t work_group_size = 256;
  int run_cache = 0;
};

/// Everything the driver would pass to AGGREGATE for this run.
struct layout {
  bool identity = false;
  std::uint64_t groups = 0;
  std::uint64_t capacity = 0;  // buckets, not counting the reserved one for EMPTY_KEY
  std::uint32_t bits = 0;
  std::uint32_t max_probes = 0;
  std::uint32_t plain_key_reads = 0;
  std::uint64_t spill_capacity = 0;
  std::uint64_t block_rows = 0;  // the driver's block for device input
  // WORKGROUPLOCAL
  std::uint64_t local_capacity = 0;
  std::uint32_t local_bits = 0;
  std::uint32_t copies = 0;
  std::uint64_t local_key_bytes = 0;
  std::uint64_t local_acc_bytes = 0;
  std::uint64_t dynamic_shared = 0;
  bool local_holds_all = true;
};

layout plan_layout(const run_spec& run, std::uint64_t device_memory, std::uint64_t local_mem_bytes,
                   std::uint64_t block_rows_override) {
  layout l;
  l.identity = run.scheme == "direct";
  l.groups = std::uint64_t{1} << run.groups_log2;
  // gpuagg_bench sets expected_groups = max key + 1 (hashing) and the domain [0, max key]
  // (direct addressing): the table is sized for every group from the start.
  l.capacity = l.identity ? l.groups : table_capacity_for(l.groups);
  l.bits = l.identity ? 0 : log2_exact(l.capacity);
  l.max_probes = l.identity ? 1 : static_cast<std::uint32_t>(std::min<std::uint64_t>(l.capacity, 1024));
  l.plain_key_reads = (l.capacity + 1) * 4 <= plain_key_reads_max_bytes ? 1 : 0;
  // Device input: blocks of min(256 MiB / 4 bytes, spill budget / (bucket bytes x 2 in flight))
  // rows, at least 1 Mi; the spill area holds the rows of the blocks in flight.
  const std::uint64_t window = 2;
  const std::uint64_t spill_budget = std::min<std::uint64_t>(std::uint64_t{1} << 30, device_memory / 32);
  const std::uint64_t block_rows = std::max<std::uint64_t>(
      std::min<std::uint64_t>((std::uint64_t{256} << 20) / 4, spill_budget / (bucket_bytes * window)),
      std::uint64_t{1} << 20);
  l.spill_capacity = block_rows * window;
  l.block_rows = block_rows_override ? block_rows_override : block_rows;
  if (run.strategy == "workgroup_local") {
    const std::uint64_t small_table =
        l.identity ? l.groups
                   : next_pow2(std::max<std::uint64_t>(
                         static_cast<std::uint64_t>(std::ceil(double(l.groups) / max_load_factor)), 2));
    const std::uint64_t max_local = local_mem_bytes > 64 ? buckets_fitting(local_mem_bytes - 64, l.identity) : 0;
    if (max_local < 2) fail("no local table fits in " + std::to_string(local_mem_bytes) + " bytes");
    l.local_holds_all = max_local >= small_table;
    l.local_capacity = std::min(small_table, max_local);
    l.local_bits = l.identity ? 0 : log2_exact(l.local_capacity);
    // local_table_copies(): as many as fit in a quarter of local memory, at most 32 and at most
    // the work-group size, a power of two.
    const std::uint64_t copy_bytes = (l.local_capacity + 1) * bucket_bytes;
    const std::uint64_t budget = local_mem_bytes / 4;
    const std::uint32_t limit = std::min<std::uint32_t>(32, run.work_group_size);
    l.copies = 1;
    while (l.copies * 2 <= limit && (l.copies * 2) * copy_bytes <= budget &&
           (l.copies * 2) * copy_bytes + 64 <= local_mem_bytes) {
      l.copies *= 2;
    }
    l.local_key_bytes = (l.local_capacity + 1) * l.copies * 4;
    l.local_acc_bytes = (l.local_capacity + 1) * l.copies * 8;
    // cl_to_cuda.py carves the __local arguments in order, each start aligned to 16 bytes.
    l.dynamic_shared = ((l.local_key_bytes + 15) & ~std::uint64_t{15}) + ((l.local_acc_bytes + 15) & ~std::uint64_t{15});
  }
  return l;
}

// ---- the input, as gpuagg_bench's make_dataset draws it (bench/row_draw.hpp: uniform, zipf
// or 90% one heavy hitter, --distribution) ----
struct dataset {
  std::vector<std::uint32_t> keys;
  std::vector<std::uint32_t> values;
  std::vector<std::uint64_t> sums;   // per key
  std::vector<std::uint8_t> seen;    // per key
  std::uint64_t distinct = 0;
};

std::string input_distribution = "uniform";

dataset make_dataset(std::size_t rows, unsigned groups_log2, std::uint64_t seed) {
  dataset d;
  d.keys.resize(rows);
  d.values.resize(rows);
  const std::uint64_t groups = std::uint64_t{1} << groups_log2;
  std::mt19937_64 rng(seed);
  const gpuagg_bench::row_draw draw(groups, input_distribution);
  for (std::size_t i = 0; i < rows; ++i) {
    const std::uint64_t r = rng();
    d.keys[i] = static_cast<std::uint32_t>(draw.key(r));
    d.values[i] = static_cast<std::uint32_t>(gpuagg_bench::row_draw::value(r));
  }
  // The CPU reference: every thread sums the rows of its own key range.
  d.sums.assign(groups, 0);
  d.seen.assign(groups, 0);
  const unsigned threads = groups < 64 ? 1 : std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      const std::uint64_t lo = groups * t / threads;
      const std::uint64_t span = groups * (t + 1) / threads - lo;
      for (std::size_t i = 0; i < rows; ++i) {
        const std::uint64_t k = d.keys[i];
        if (k - lo < span) {
          d.sums[k] += d.values[i];
          d.seen[k] = 1;
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  for (const auto s : d.seen) d.distinct += s;
  return d;
}

// ---- device side ----
struct param {
  std::string name;
  std::size_t bytes = 0;
};

struct program {
  CUmodule module = nullptr;
  CUfunction initialize = nullptr;
  CUfunction aggregate = nullptr;
  CUfunction finalize = nullptr;
  std::map<std::string, std::vector<param>> params;  // per kernel, from cl_to_cuda.py --params
};

/// Argument values by parameter name; a kernel's arguments are looked up in its parameter order
/// (cl_to_cuda.py's manifest), so a parameter added to or moved in the OpenCL text either
/// finds its value or stops the run with its name.
class arguments {
 public:
  template <class T>
  void set(const std::string& name, const T& value) {
    auto& bytes = values_[name];
    bytes.resize(sizeof(T));
    std::memcpy(bytes.data(), &value, sizeof(T));
  }
  std::vector<void*> for_kernel(const program& p, const std::string& kernel) {
    const auto found = p.params.find(kernel);
    if (found == p.params.end()) fail("the parameter list has no kernel " + kernel);
    std::vector<void*> args;
    for (const auto& prm : found->second) {
      auto value = values_.find(prm.name);
      if (value == values_.end()) fail(kernel + " wants an argument the harness does not know: " + prm.name);
      if (value->second.size() != prm.bytes) {
        fail(kernel + "'s " + prm.name + " takes " + std::to_string(prm.bytes) + " bytes, the harness has " +
             std::to_string(value->second.size()));
      }
      args.push_back(value->second.data());
    }
    return args;
  }

 private:
  std::map<std::string, std::vector<unsigned char>> values_;
};

template <class T>
T* device_alloc(std::uint64_t count, const char* what) {
  void* p = nullptr;
  check(cudaMalloc(&p, std::max<std::uint64_t>(count, 1) * sizeof(T)), what);
  return static_cast<T*>(p);
}

/// The driver's cover(): enough work groups of `local` for `items`, at most 65536.
unsigned cover_groups(std::uint64_t items, unsigned local) {
  return static_cast<unsigned>(std::max<std::uint64_t>(std::min<std::uint64_t>((items + local - 1) / local, 65536), 1));
}

void launch(CUfunction f, unsigned grid, unsigned block, unsigned shared, std::vector<void*>& args, const char* what) {
  check(cuLaunchKernel(f, grid, 1, 1, block, 1, 1, shared, nullptr, args.data(), nullptr), what);
}

struct outcome {
  std::vector<double> ms;         // one block
  std::vector<double> blocks_ms;  // the driver's blocks
  std::uint64_t groups_found = 0;
  std::uint64_t meta_groups = 0;
  std::uint64_t spilled = 0;
  bool verified = false;
  std::string why;
};

struct tables {
  std::uint32_t* g_keys = nullptr;
  std::uint64_t* g_acc = nullptr;
  std::uint32_t* s_keys = nullptr;
  std::uint64_t* s_acc = nullptr;
  std::uint64_t* meta = nullptr;
  std::uint64_t* out_count = nullptr;
  std::uint32_t* out_keys = nullptr;
  std::uint64_t* out_sums = nullptr;
  void release() {
    for (void* p : {static_cast<void*>(g_keys), static_cast<void*>(g_acc), static_cast<void*>(s_keys),
                    static_cast<void*>(s_acc), static_cast<void*>(meta), static_cast<void*>(out_count),
                    static_cast<void*>(out_keys), static_cast<void*>(out_sums)}) {
      if (p) check(cudaFree(p), "cudaFree");
    }
    *this = {};
  }
};

std::vector<std::uint64_t> read_meta(const tables& t) {
  std::vector<std::uint64_t> meta(meta_words);
  check(cudaMemcpy(meta.data(), t.meta, meta_words * 8, cudaMemcpyDeviceToHost), "reading meta");
  return meta;
}

outcome run_one(const program& prog, const run_spec& run, const layout& l, const dataset& data,
                const std::uint32_t* d_keys, const std::uint32_t* d_values, std::uint64_t rows, unsigned cus,
                unsigned reps, bool profile) {
  tables t;
  t.g_keys = device_alloc<std::uint32_t>(l.capacity + 1, "the table's keys");
  t.g_acc = device_alloc<std::uint64_t>(l.capacity + 1, "the table's sums");
  t.s_keys = device_alloc<std::uint32_t>(l.spill_capacity + 1, "the spill area's keys");
  t.s_acc = device_alloc<std::uint64_t>(l.spill_capacity + 1, "the spill area's sums");
  t.meta = device_alloc<std::uint64_t>(8, "meta");
  t.out_count = device_alloc<std::uint64_t>(1, "the result count");
  t.out_keys = device_alloc<std::uint32_t>(l.capacity + 1, "the result keys");
  t.out_sums = device_alloc<std::uint64_t>(l.capacity + 1, "the result sums");

  // Every argument the driver passes (driver.hpp: make_table, enqueue_block, finalize_on_device),
  // by the kernels' parameter names.
  arguments values;
  values.set("key_in0", d_keys);
  values.set("v0", d_values);
  values.set("row_begin", std::uint64_t{0});  // one block: the whole input
  values.set("row_end", rows);
  values.set("g_keys", t.g_keys);
  values.set("g_acc0", t.g_acc);
  values.set("bits", l.bits);
  values.set("capacity", static_cast<std::uint32_t>(l.capacity));
  values.set("key_min", std::uint32_t{0});
  values.set("max_probes", l.max_probes);
  values.set("meta", t.meta);
  values.set("s_keys", t.s_keys);
  values.set("s_acc0", t.s_acc);
  values.set("spill_capacity", static_cast<std::uint32_t>(l.spill_capacity));
  values.set("plain_key_reads", l.plain_key_reads);
  // The run-cache build's hot-key register (kernels.inc): key 0, the heavy hitter of
  // --distribution heavy and zipf's top key, used when the driver's sample would find it hot.
  values.set("hot_key", std::uint32_t{0});
  values.set("have_hot", std::uint32_t{input_distribution == "uniform" ? 0u : 1u});
  values.set("gpuagg_local_bytes_l_keys", static_cast<std::size_t>(l.local_key_bytes));
  values.set("gpuagg_local_bytes_l_acc0", static_cast<std::size_t>(l.local_acc_bytes));
  values.set("local_bits", l.local_bits);
  values.set("local_capacity", static_cast<std::uint32_t>(l.local_capacity));
  values.set("copies", l.copies);
  values.set("slots", static_cast<std::uint32_t>(l.capacity + 1));
  values.set("out_count", t.out_count);
  values.set("key_out0", t.out_keys);
  values.set("out0", t.out_sums);
  auto init_args = values.for_kernel(prog, "gpuagg_initialize");
  auto args = values.for_kernel(prog, "gpuagg_aggregate");
  auto fin_args = values.for_kernel(prog, "gpuagg_finalize");

  // INITIALIZE and FINALIZE: 256 work items a group, as the driver launches them.
  const auto initialize = [&] {
    check(cudaMemset(t.meta, 0, 8 * 8), "clearing meta");
    launch(prog.initialize, cover_groups(l.capacity + 1, 256), 256, 0, init_args, "INITIALIZE");
  };
  const unsigned grid = cus * run.work_groups_per_cu;
  const auto aggregate = [&] {
    launch(prog.aggregate, grid, run.work_group_size, static_cast<unsigned>(l.dynamic_shared), args, "AGGREGATE");
  };

  outcome out;
  if (profile) {
    initialize();
    check(cudaDeviceSynchronize(), "INITIALIZE");
    check(cudaProfilerStart(), "cudaProfilerStart");
    aggregate();
    check(cudaDeviceSynchronize(), "the profiled AGGREGATE");
    check(cudaProfilerStop(), "cudaProfilerStop");
  }
  // Timed repetitions, enqueued without waiting, so that the host's launch overhead (ncu's
  // interception included) does not sit between an event and its kernel: first AGGREGATE over
  // the whole input as one block, then as the driver's blocks (`block_rows` rows each, launched
  // back to back), each after INITIALIZE. The table the last one leaves is what FINALIZE checks.
  const auto timed = [&](std::vector<double>& times, std::uint64_t block) {
    std::vector<cudaEvent_t> events(2 * reps);
    for (auto& e : events) check(cudaEventCreate(&e), "cudaEventCreate");
    for (unsigned r = 0; r < reps; ++r) {
      initialize();
      check(cudaEventRecord(events[2 * r]), "cudaEventRecord");
      for (std::uint64_t first = 0; first < rows; first += block) {
        values.set("row_begin", first);
        values.set("row_end", std::min(rows, first + block));
        aggregate();
      }
      check(cudaEventRecord(events[2 * r + 1]), "cudaEventRecord");
    }
    check(cudaDeviceSynchronize(), "AGGREGATE");
    for (unsigned r = 0; r < reps; ++r) {
      float ms = 0;
      check(cudaEventElapsedTime(&ms, events[2 * r], events[2 * r + 1]), "cudaEventElapsedTime");
      times.push_back(ms);
    }
    for (auto& e : events) check(cudaEventDestroy(e), "cudaEventDestroy");
    values.set("row_begin", std::uint64_t{0});
    values.set("row_end", rows);
  };
  timed(out.ms, rows);
  if (l.block_rows > 0 && l.block_rows < rows) timed(out.blocks_ms, l.block_rows);
  if (read_meta(t)[3]) out.why = "the spill area overflowed (META_LOST)";

  const auto meta = read_meta(t);
  out.meta_groups = meta[0] + (meta[1] ? 1 : 0);
  out.spilled = meta[2];
  check(cudaMemset(t.out_count, 0, 8), "clearing the result count");
  launch(prog.finalize, cover_groups(l.capacity + 1, 256), 256, 0, fin_args, "FINALIZE");
  check(cudaDeviceSynchronize(), "FINALIZE");
  std::uint64_t written = 0;
  check(cudaMemcpy(&written, t.out_count, 8, cudaMemcpyDeviceToHost), "reading the result count");
  if (written > l.capacity + 1) {
    out.why = "FINALIZE wrote " + std::to_string(written) + " groups, more than the table holds";
    t.release();
    return out;
  }
  std::vector<std::uint32_t> keys(written);
  std::vector<std::uint64_t> sums(written);
  check(cudaMemcpy(keys.data(), t.out_keys, written * 4, cudaMemcpyDeviceToHost), "reading the result keys");
  check(cudaMemcpy(sums.data(), t.out_sums, written * 8, cudaMemcpyDeviceToHost), "reading the result sums");
  // Spilled entries (the driver would merge them after growing the table) count too.
  std::vector<std::uint32_t> spill_keys(std::min<std::uint64_t>(out.spilled, l.spill_capacity));
  std::vector<std::uint64_t> spill_sums(spill_keys.size());
  if (!spill_keys.empty()) {
    check(cudaMemcpy(spill_keys.data(), t.s_keys, spill_keys.size() * 4, cudaMemcpyDeviceToHost), "reading the spill area");
    check(cudaMemcpy(spill_sums.data(), t.s_acc, spill_sums.size() * 8, cudaMemcpyDeviceToHost), "reading the spill area");
  }
  t.release();

  const std::uint64_t groups = data.sums.size();
  std::vector<std::uint64_t> got(groups, 0);
  std::vector<std::uint8_t> present(groups, 0);
  std::uint64_t bad_keys = 0;
  std::uint64_t duplicates = 0;
  for (std::uint64_t i = 0; i < written; ++i) {
    if (keys[i] >= groups) {
      ++bad_keys;
      continue;
    }
    duplicates += present[keys[i]];
    present[keys[i]] = 1;
    got[keys[i]] += sums[i];
  }
  for (std::size_t i = 0; i < spill_keys.size(); ++i) {
    if (spill_keys[i] >= groups) {
      ++bad_keys;
      continue;
    }
    present[spill_keys[i]] = 1;
    got[spill_keys[i]] += spill_sums[i];
  }
  std::uint64_t wrong = 0;
  std::uint64_t found = 0;
  for (std::uint64_t k = 0; k < groups; ++k) {
    found += present[k];
    wrong += present[k] != data.seen[k] || got[k] != data.sums[k];
  }
  out.groups_found = found;
  std::ostringstream why;
  if (!out.why.empty()) why << out.why << "; ";
  if (bad_keys) why << bad_keys << " keys outside [0, groups); ";
  if (duplicates) why << duplicates << " keys twice; ";
  if (wrong) why << wrong << " groups with a wrong sum or presence; ";
  if (found != data.distinct) why << found << " groups, the reference has " << data.distinct << "; ";
  if (out.spilled == 0 && written != out.meta_groups) {
    why << "FINALIZE wrote " << written << " groups, META_GROUPS (+ special) says " << out.meta_groups << "; ";
  }
  out.why = why.str();
  out.verified = out.why.empty();
  return out;
}

std::string cubin_path(const std::string& dir, const run_spec& run) {
  return dir + "/" + run.strategy + "_" + run.scheme + (run.run_cache ? "_rc" : "") + ".cubin";
}

program load_program(const std::string& path) {
  program p;
  const std::string params_path = path.substr(0, path.rfind('.')) + ".params";
  std::ifstream params(params_path);
  if (!params) fail("cannot read " + params_path + " (cl_to_cuda.py --params)");
  std::string line;
  while (std::getline(params, line)) {
    std::istringstream fields(line);
    std::string kernel, index, name, bytes;
    if (!std::getline(fields, kernel, '\t') || !std::getline(fields, index, '\t') || !std::getline(fields, name, '\t') ||
        !std::getline(fields, bytes, '\t')) {
      continue;
    }
    p.params[kernel].push_back({name, static_cast<std::size_t>(std::stoul(bytes))});
  }
  check(cuModuleLoad(&p.module, path.c_str()), ("loading " + path).c_str());
  check(cuModuleGetFunction(&p.initialize, p.module, "gpuagg_initialize"), "gpuagg_initialize");
  check(cuModuleGetFunction(&p.aggregate, p.module, "gpuagg_aggregate"), "gpuagg_aggregate");
  check(cuModuleGetFunction(&p.finalize, p.module, "gpuagg_finalize"), "gpuagg_finalize");
  return p;
}

int attribute(CUfunction f, CUfunction_attribute a) {
  int value = 0;
  check(cuFuncGetAttribute(&value, a, f), "cuFuncGetAttribute");
  return value;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

std::vector<unsigned> parse_list(const std::string& text) {
  std::vector<unsigned> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(static_cast<unsigned>(std::stoul(item)));
  }
  return out;
}

std::vector<run_spec> read_plan(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail("cannot read the plan " + path);
  std::vector<run_spec> runs;
  std::string line;
  while (std::getline(in, line)) {
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    run_spec r;
    if (!(fields >> r.groups_log2)) continue;
    if (!(fields >> r.strategy >> r.scheme >> r.work_groups_per_cu >> r.work_group_size >> r.run_cache)) {
      fail("plan line needs: groups_log2 strategy scheme work_groups_per_cu work_group_size run_cache: " + line);
    }
    runs.push_back(r);
  }
  return runs;
}

int usage() {
  std::cerr << "usage: cl_on_cuda --cubin-dir DIR [--plan FILE | --strategy shared|workgroup_local --scheme hash|direct\n"
               "                  --groups-log2 N[,N...] --wgs-per-cu W --wg-size S --run-cache 0|1 --distribution uniform|zipf|heavy]\n"
               "                  [--rows-log2 27] [--reps 5] [--seed 42] [--block-rows N] [--profile] [--csv FILE]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cubin_dir;
  std::string plan_path;
  std::string csv_path;
  run_spec single;
  std::string groups_list = "10";
  unsigned rows_log2 = 27;
  unsigned reps = 5;
  std::uint64_t seed = 42;
  bool profile = false;
  std::uint64_t block_rows = 0;  // 0: the driver's
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) std::exit(usage());
      return argv[++i];
    };
    if (arg == "--cubin-dir") cubin_dir = value();
    else if (arg == "--plan") plan_path = value();
    else if (arg == "--csv") csv_path = value();
    else if (arg == "--strategy") single.strategy = value();
    else if (arg == "--scheme") single.scheme = value();
    else if (arg == "--groups-log2") groups_list = value();
    else if (arg == "--wgs-per-cu") single.work_groups_per_cu = static_cast<std::uint32_t>(std::stoul(value()));
    else if (arg == "--wg-size") single.work_group_size = static_cast<std::uint32_t>(std::stoul(value()));
    else if (arg == "--run-cache") single.run_cache = std::stoi(value());
    else if (arg == "--rows-log2") rows_log2 = static_cast<unsigned>(std::stoul(value()));
    else if (arg == "--reps") reps = static_cast<unsigned>(std::stoul(value()));
    else if (arg == "--seed") seed = std::stoull(value());
    else if (arg == "--profile") profile = true;
    else if (arg == "--block-rows") block_rows = std::stoull(value());
    else if (arg == "--distribution") input_distribution = value();
    else return usage();
  }
  if (cubin_dir.empty()) return usage();
  std::vector<run_spec> runs;
  if (!plan_path.empty()) {
    runs = read_plan(plan_path);
  } else {
    for (const unsigned g : parse_list(groups_list)) {
      run_spec r = single;
      r.groups_log2 = g;
      runs.push_back(r);
    }
  }
  for (const auto& r : runs) {
    if ((r.strategy != "shared" && r.strategy != "workgroup_local") || (r.scheme != "hash" && r.scheme != "direct") ||
        r.work_groups_per_cu == 0 || r.work_group_size == 0 || r.groups_log2 > 31) {
      fail("unsupported run: " + r.strategy + " " + r.scheme + " 2^" + std::to_string(r.groups_log2) + " groups");
    }
  }

  check(cudaFree(nullptr), "initializing CUDA");
  int device = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  // OpenCL's CL_DEVICE_LOCAL_MEM_SIZE on NVIDIA is the 48 KiB a block gets without opting in.
  const std::uint64_t local_mem_bytes = prop.sharedMemPerBlock;
  const unsigned cus = static_cast<unsigned>(prop.multiProcessorCount);
  std::cout << "device: " << prop.name << ", " << cus << " SMs, " << (prop.totalGlobalMem >> 20) << " MiB, "
            << local_mem_bytes << " bytes shared memory per block, L2 " << (prop.l2CacheSize >> 20) << " MiB\n";

  std::ofstream csv;
  if (!csv_path.empty()) {
    std::ifstream existing(csv_path);
    const bool fresh = !existing.good() || existing.peek() == std::ifstream::traits_type::eof();
    csv.open(csv_path, std::ios::app);
    if (fresh) {
      csv << "groups_log2,groups,strategy,scheme,run_cache,work_groups_per_cu,work_group_size,grid,block,"
             "dynamic_shared,static_shared,registers,blocks_per_sm,capacity,bits,max_probes,plain_key_reads,"
             "local_capacity,copies,local_holds_all,rows,reps,ms_median,ms_best,gtuples_median,gtuples_best,"
             "block_rows,blocks,blocks_ms_median,blocks_ms_best,groups_expected,groups_found,spilled,verified,"
             "profiled_index\n";
    }
  }

  const std::uint64_t rows = std::uint64_t{1} << rows_log2;
  std::map<std::string, program> programs;
  int profiled = 0;
  bool all_verified = true;
  std::vector<bool> done(runs.size(), false);
  for (std::size_t first = 0; first < runs.size(); ++first) {
    if (done[first]) continue;
    const unsigned groups_log2 = runs[first].groups_log2;
    const auto generated = std::chrono::steady_clock::now();
    const dataset data = make_dataset(rows, groups_log2, seed + groups_log2);
    std::uint32_t* d_keys = device_alloc<std::uint32_t>(rows, "the key column");
    std::uint32_t* d_values = device_alloc<std::uint32_t>(rows, "the value column");
    check(cudaMemcpy(d_keys, data.keys.data(), rows * 4, cudaMemcpyHostToDevice), "copying the keys");
    check(cudaMemcpy(d_values, data.values.data(), rows * 4, cudaMemcpyHostToDevice), "copying the values");
    std::cout << "2^" << groups_log2 << " groups: " << rows << " rows, " << data.distinct << " distinct keys (seed "
              << seed + groups_log2 << ", "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - generated).count()
              << " s to generate, check and copy)\n";
    for (std::size_t i = first; i < runs.size(); ++i) {
      if (done[i] || runs[i].groups_log2 != groups_log2) continue;
      done[i] = true;
      const run_spec& run = runs[i];
      const std::string path = cubin_path(cubin_dir, run);
      if (!programs.count(path)) programs[path] = load_program(path);
      const program& prog = programs[path];
      const layout l = plan_layout(run, prop.totalGlobalMem, local_mem_bytes, block_rows);
      const int max_threads = attribute(prog.aggregate, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
      if (run.work_group_size > static_cast<std::uint32_t>(max_threads)) {
        fail("work group size " + std::to_string(run.work_group_size) + " exceeds the kernel's " +
             std::to_string(max_threads));
      }
      if (l.dynamic_shared > 48 * 1024) {
        check(cuFuncSetAttribute(prog.aggregate, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 static_cast<int>(l.dynamic_shared)),
              "allowing the dynamic shared memory");
      }
      int blocks_per_sm = 0;
      check(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, prog.aggregate, static_cast<int>(run.work_group_size),
                                                        l.dynamic_shared),
            "cuOccupancyMaxActiveBlocksPerMultiprocessor");
      const int registers = attribute(prog.aggregate, CU_FUNC_ATTRIBUTE_NUM_REGS);
      const int static_shared = attribute(prog.aggregate, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
      const int profiled_index = profile ? profiled++ : -1;
      const outcome o = run_one(prog, run, l, data, d_keys, d_values, rows, cus, reps, profile);
      const double best = o.ms.empty() ? 0 : *std::min_element(o.ms.begin(), o.ms.end());
      const double mid = median(o.ms);
      const double blocks_best = o.blocks_ms.empty() ? 0 : *std::min_element(o.blocks_ms.begin(), o.blocks_ms.end());
      const std::uint64_t blocks = l.block_rows ? (rows + l.block_rows - 1) / l.block_rows : 1;
      const auto rate = [&](double ms) { return ms > 0 ? double(rows) / (ms * 1e-3) / 1e9 : 0.0; };
      all_verified = all_verified && o.verified;
      std::cout << "  " << run.strategy << ' ' << run.scheme << (run.run_cache ? " run-cache" : "") << ' '
                << run.work_groups_per_cu << 'x' << run.work_group_size << ": grid " << cus * run.work_groups_per_cu
                << " x " << run.work_group_size << ", " << registers << " registers, " << blocks_per_sm
                << " blocks/SM, capacity " << l.capacity;
      if (run.strategy == "workgroup_local") {
        std::cout << ", local table " << l.local_capacity << " x " << l.copies << " copies ("
                  << l.dynamic_shared << " bytes)" << (l.local_holds_all ? "" : " [smaller than the groups]");
      }
      std::cout << "; AGGREGATE " << mid << " ms median, " << best << " ms best of " << o.ms.size() << " -> "
                << rate(mid) << " / " << rate(best) << " G tuples/s";
      if (!o.blocks_ms.empty()) std::cout << "; as " << blocks << " blocks " << median(o.blocks_ms) << " ms median";
      std::cout << "; " << o.groups_found << " groups"
                << (o.spilled ? ", " + std::to_string(o.spilled) + " spilled" : std::string()) << ": "
                << (o.verified ? "verified" : "MISMATCH: " + o.why) << '\n';
      if (csv.is_open()) {
        csv << groups_log2 << ',' << (std::uint64_t{1} << groups_log2) << ',' << run.strategy << ',' << run.scheme << ','
            << run.run_cache << ',' << run.work_groups_per_cu << ',' << run.work_group_size << ','
            << cus * run.work_groups_per_cu << ',' << run.work_group_size << ',' << l.dynamic_shared << ','
            << static_shared << ',' << registers << ',' << blocks_per_sm << ',' << l.capacity << ',' << l.bits << ','
            << l.max_probes << ',' << l.plain_key_reads << ',' << l.local_capacity << ',' << l.copies << ','
            << (l.local_holds_all ? 1 : 0) << ',' << rows << ',' << o.ms.size() << ',' << mid << ',' << best << ','
            << rate(mid) << ',' << rate(best) << ',' << l.block_rows << ',' << blocks << ',' << median(o.blocks_ms)
            << ',' << blocks_best << ',' << data.distinct << ',' << o.groups_found << ',' << o.spilled
            << ',' << (o.verified ? 1 : 0) << ',' << profiled_index << '\n';
        csv.flush();
      }
    }
    check(cudaFree(d_keys), "cudaFree");
    check(cudaFree(d_values), "cudaFree");
  }
  for (auto& [path, prog] : programs) cuModuleUnload(prog.module);
  std::cout << (all_verified ? "all runs verified\n" : "SOME RUNS FAILED VERIFICATION\n");
  return all_verified ? 0 : 1;
}
