// gpuagg_bench: measures SELECT g, sum(v) FROM R GROUP BY g the way section 3.1 of Rosenfeld
// et al. does: input in 16 MiB blocks per column, AGGREGATE timed per block with OpenCL
// profiling, mean and coefficient of variation per configuration; plus whole queries timed end
// to end (pipelined, AGGREGATE and FINALIZE included, and for host input the transfers), and
// the baselines (Boost.Compute sort + reduce_by_key, sort-then-atomics). Every result is
// verified: an order-independent checksum of its (key, sum) pairs, computed on the device,
// must equal the CPU reference's.
//
// Output: one CSV row per measured query (--csv), one per measured block (--blocks-csv: the
// recorded thread-configuration search spaces that tuner_eval replays), a summary table on
// stdout, progress on stderr. Benchmarks never assert on time.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <bit>
#include <cstring>
#include <filesystem>
#include <type_traits>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <gpuagg/baselines.hpp>
#include <gpuagg/groupby.hpp>

#include "row_draw.hpp"
#include "verify.hpp"

namespace {

using namespace gpuagg;
using gpuagg_bench::device_checksum;
using gpuagg_bench::pair_checksum;
using gpuagg_bench::sum_word;

struct settings {
  unsigned rows_log2 = 27;
  std::string groups_log2 = "4,10,16,20,24";
  std::string strategies = "shared,independent,workgroup_local,direct";
  std::string configs = "default";  // default | sweep | all | "4x512,1x256"
  std::string distribution = "uniform";
  std::string input = "device";  // device | pinned | pageable
  std::string key_type = "uint32";
  std::string value_type = "uint32";
  double block_mib = 0;  // 0: the library's default (16 MiB host input, 64 MiB device input)
  unsigned copy_threads = 0;
  std::uint32_t local_copies = 0;
  std::uint32_t partitions = 0;
  int interleaved = -1;  // options::interleaved_table: -1 automatic, 0 arrays, 1 interleaved
  int hot_table = -1;    // options::hot_table: -1 automatic, 0 off, 1 on
  int run_cache = -1;    // options::run_cache: -1 automatic, 0 off, 1 on (with runs)
  unsigned reps = 3;
  unsigned query_reps = 5;
  unsigned tuned_reps = 3;
  std::size_t in_flight = 2;
  bool lenient = false;
  unsigned probe_blocks = 0;  // blocks measured per configuration (0: all)
  unsigned warm_blocks = 0;   // blocks run with the fastest configuration so far before measuring one
  bool pipelined = true;
  std::string csv;
  std::string blocks_csv;
  std::string tuned_csv;
  std::string tuned_cache;  // a winners file the live tuner's queries share (empty: no cache)
  std::string peers_csv;
  std::uint64_t seed = 42;
  bool quick = false;
  bool with_count = false;  // hash queries select sum(v), count(*): the counts verified too
};

std::vector<unsigned> parse_range(const std::string& text) {
  std::vector<unsigned> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto colon = item.find(':');
    if (colon == std::string::npos) {
      out.push_back(static_cast<unsigned>(std::stoul(item)));
      continue;
    }
    // a:b or a:b:step
    const auto second = item.find(':', colon + 1);
    const unsigned first = std::stoul(item.substr(0, colon));
    const unsigned last = std::stoul(item.substr(colon + 1, second == std::string::npos ? std::string::npos : second - colon - 1));
    const unsigned step = second == std::string::npos ? 1 : std::stoul(item.substr(second + 1));
    for (unsigned i = first; i <= last; i += step) out.push_back(i);
  }
  return out;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

/// Input columns: on the host (pageable std::vector, or pinned memory of the context) and on
/// the device, with the reference checksum.
template <class Key, class Value>
struct dataset {
  std::size_t rows = 0;
  std::vector<Key> keys;
  std::vector<Value> vals;
  cl::Buffer keys_dev;
  cl::Buffer vals_dev;
  pinned_array<Key> keys_pinned;  // the user's data in pinned host memory (--input pinned)
  pinned_array<Value> vals_pinned;
  std::uint64_t expected_groups = 0;
  std::uint64_t expected_checksum = 0;
  std::uint64_t expected_count_checksum = 0;  // of the (key, count(*)) pairs
  Key max_key = 0;
};

/// Keys in [0, groups) as the peers draw them (uniform; zipf; 90% one heavy hitter; sorted
/// runs), values in [1, 100]: never 0, so a row lost or counted twice changes its group's sum.
template <class Key, class Value>
dataset<Key, Value> make_dataset(context& ctx, std::size_t rows, std::uint64_t groups, const std::string& dist,
                                 std::uint64_t seed, bool pinned) {
  dataset<Key, Value> d;
  d.rows = rows;
  d.keys.resize(rows);
  d.vals.resize(rows);
  std::mt19937_64 rng(seed);
  const gpuagg_bench::row_draw draw(groups, dist);
  for (std::size_t i = 0; i < rows; ++i) {
    const std::uint64_t r = rng();
    d.keys[i] = static_cast<Key>(draw.key(r));
    d.vals[i] = static_cast<Value>(1 + gpuagg_bench::row_draw::value(r));
  }
  if (dist == "sorted") std::sort(d.keys.begin(), d.keys.end());
  // Values are small integers, so every sum is exact in any order, double sums included.
  using sum_type = typename aggregate_policy<sum_kind, Value>::acc_type;
  std::vector<sum_type> sums(groups, 0);
  std::vector<std::uint64_t> counts(groups, 0);
  for (std::size_t i = 0; i < rows; ++i) {
    sums[d.keys[i]] += static_cast<sum_type>(d.vals[i]);
    ++counts[d.keys[i]];
  }
  for (std::uint64_t g = 0; g < groups; ++g) {
    if (counts[g] == 0) continue;
    ++d.expected_groups;
    d.expected_checksum += pair_checksum(g, sum_word(sums[g]));
    d.expected_count_checksum += pair_checksum(g, counts[g]);
  }
  d.max_key = static_cast<Key>(groups - 1);
  d.keys_dev = ctx.buffer(rows * sizeof(Key), "benchmark keys", CL_MEM_READ_ONLY);
  d.vals_dev = ctx.buffer(rows * sizeof(Value), "benchmark values", CL_MEM_READ_ONLY);
  ctx.compute_queue().enqueueWriteBuffer(d.keys_dev, CL_TRUE, 0, rows * sizeof(Key), d.keys.data());
  ctx.compute_queue().enqueueWriteBuffer(d.vals_dev, CL_TRUE, 0, rows * sizeof(Value), d.vals.data());
  if (pinned) {
    // The user's data in pinned (page-locked) host memory of the context: gpuagg::pinned_array.
    d.keys_pinned = pinned_array<Key>(ctx, rows);
    d.vals_pinned = pinned_array<Value>(ctx, rows);
    std::memcpy(d.keys_pinned.data(), d.keys.data(), rows * sizeof(Key));
    std::memcpy(d.vals_pinned.data(), d.vals.data(), rows * sizeof(Value));
  }
  return d;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

double coefficient_of_variation(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  double sq = 0;
  for (const double x : v) sq += (x - mean) * (x - mean);
  return mean > 0 ? std::sqrt(sq / double(v.size() - 1)) / mean : 0;
}

std::vector<launch_config> configs_for(const settings& s, std::uint32_t max_wg, const launch_config& initial) {
  if (s.configs == "default") return {initial};
  std::vector<launch_config> out;
  if (s.configs == "sweep" || s.configs == "all") {
    // all: section 3.1's space, 1..1024 work groups per compute unit x 1..max work items.
    const bool all = s.configs == "all";
    for (std::uint32_t per_cu = 1; per_cu <= (all ? 1024u : 32u); per_cu *= 2) {
      for (std::uint32_t size = all ? 1 : 64; size <= max_wg; size *= 2) out.push_back({per_cu, size});
    }
    return out;
  }
  for (const auto& item : split(s.configs)) {
    const auto x = item.find('x');
    out.push_back({static_cast<std::uint32_t>(std::stoul(item.substr(0, x))),
                   static_cast<std::uint32_t>(std::stoul(item.substr(x + 1)))});
  }
  return out;
}

/// One measured query.
struct measurement {
  std::string system;  // strategy or baseline name
  std::string mode;    // blocks | query | baseline
  launch_config config;
  std::vector<double> block_seconds;
  double aggregate_seconds = 0;
  double initialize_seconds = 0;
  double finalize_seconds = 0;
  double merge_seconds = 0;
  double partition_seconds = 0;
  std::size_t hot_table_blocks = 0;  // blocks that ran SHARED with the hot-key table
  std::size_t cold_queue_blocks = 0;  // blocks that ran WORKGROUPLOCAL with the cold-row queue
  double setup_seconds = 0;  // the driver's constructor: sample, programs, table, INITIALIZE
  double wall_seconds = 0;
  host_phase_seconds host;   // the driver's host time by phase (query_stats::host)
  bool verified = false;
  /// Profiled kernel time of the whole query: INITIALIZE, PARTITION, AGGREGATE, MERGE and FINALIZE.
  double kernel_seconds() const {
    return initialize_seconds + partition_seconds + aggregate_seconds + merge_seconds + finalize_seconds;
  }
  std::uint64_t peak_device_bytes = 0;
};

struct output {
  std::ofstream rows;
  std::ofstream blocks;
  const device_info* info = nullptr;
  const settings* s = nullptr;

  void row(std::uint64_t groups, const measurement& m, unsigned rep, std::size_t rows_total, double block_rows) {
    if (!rows.is_open()) return;
    const double block_mean =
        m.block_seconds.empty() ? 0 : std::accumulate(m.block_seconds.begin(), m.block_seconds.end(), 0.0) /
                                          double(m.block_seconds.size());
    const double rate_blocks = block_mean > 0 ? block_rows / block_mean / 1e9 : 0;
    const double rate_query = m.wall_seconds > 0 ? double(rows_total) / m.wall_seconds / 1e9 : 0;
    rows << '"' << info->name << "\",\"" << info->driver_version << "\"," << s->input << ',' << s->distribution << ','
         << s->key_type << ',' << s->value_type << ',' << rows_total << ',' << groups << ',' << m.system << ',' << m.config.work_groups_per_cu
         << ',' << m.config.work_group_size << ',' << m.mode << ',' << rep << ',' << m.block_seconds.size() << ','
         << block_mean * 1e6 << ',' << coefficient_of_variation(m.block_seconds) << ',' << m.aggregate_seconds * 1e3
         << ',' << m.initialize_seconds * 1e3 << ',' << m.finalize_seconds * 1e3 << ',' << m.wall_seconds * 1e3 << ','
         << rate_blocks << ',' << rate_query << ',' << m.peak_device_bytes << ',' << (m.verified ? 1 : 0) << ','
         << m.merge_seconds * 1e3 << ',' << m.setup_seconds * 1e3 << ',' << m.kernel_seconds() * 1e3 << ','
         << (m.kernel_seconds() > 0 ? double(rows_total) / m.kernel_seconds() / 1e9 : 0) << ',' << s->block_mib << ','
         << s->local_copies << ',' << m.partition_seconds * 1e3 << ',' << s->partitions << ',' << s->interleaved
         << ',' << m.hot_table_blocks << ',' << m.host.sample * 1e3 << ',' << m.host.profile * 1e3 << ','
         << m.host.programs * 1e3 << ',' << m.host.buffers * 1e3 << ',' << m.host.enqueue * 1e3 << ','
         << m.host.wait * 1e3 << ',' << m.host.growth * 1e3 << ',' << m.host.finalize * 1e3 << ','
         << m.cold_queue_blocks << '\n';
  }
};

constexpr const char* csv_header =
    "device,driver,input,distribution,key_type,value_type,rows,groups,system,work_groups_per_cu,work_group_size,mode,rep,"
    "blocks_measured,block_mean_us,block_cv,aggregate_ms,initialize_ms,finalize_ms,wall_ms,gtuples_per_s_blocks,"
    "gtuples_per_s_query,peak_device_bytes,verified,merge_ms,setup_ms,kernel_ms,gtuples_per_s_kernels,block_mib,"
    "local_copies,partition_ms,partitions,interleaved,hot_table_blocks,host_sample_ms,host_profile_ms,host_programs_ms,"
    "host_buffers_ms,host_enqueue_ms,host_wait_ms,host_growth_ms,host_finalize_ms,cold_queue_blocks\n";

template <class Key, class Value>
class bench {
  using sum_type = typename aggregate_policy<sum_kind, Value>::acc_type;
 public:
  bench(context& ctx, const settings& s, output& out) : ctx_(ctx), s_(s), out_(out) {}

  /// Results checked and found right, and results found wrong: a run verifies only when the
  /// first is positive and the second 0 (no feasible system, or none on this input, verifies
  /// nothing).
  std::size_t verified() const { return verified_; }
  std::size_t unverified() const { return unverified_; }

  struct summary_entry {
    double best = 0;      // G tuples/s, AGGREGATE per block (best of the measured queries)
    double median = 0;
    double query_best = 0;    // G tuples/s, whole pipelined query
    double query_median = 0;
    double query_kernels_best = 0;  // G tuples/s over the whole query's profiled kernel time
    launch_config config;
  };
  std::map<std::pair<unsigned, std::string>, summary_entry> summary;

  void run_groups(unsigned groups_log2) {
    const std::size_t rows = std::size_t{1} << s_.rows_log2;
    const std::uint64_t groups = std::uint64_t{1} << groups_log2;
    std::cerr << "2^" << groups_log2 << " groups: generating " << rows << " rows (" << s_.distribution << ")\n";
    data_ = make_dataset<Key, Value>(ctx_, rows, groups, s_.distribution, s_.seed + groups_log2, s_.input == "pinned");
    if (s_.input != "device") measure_plain_write(groups_log2);
    for (const auto& name : split(s_.strategies)) {
      if (name == "direct") {
        if (s_.with_count) run_hash(groups_log2, name, select<direct_addressing>(sum(col<0>), count()));
        else run_hash(groups_log2, name, select<direct_addressing>(sum(col<0>)));
      } else if (name == "shared" || name == "independent" || name == "workgroup_local" || name == "default") {
        if (s_.with_count) run_hash(groups_log2, name, select(sum(col<0>), count()));
        else run_hash(groups_log2, name, select(sum(col<0>)));
      } else if (name == "sort_reduce" || name.rfind("sort_atomics", 0) == 0) {
        if (s_.input == "device") run_baseline(groups_log2, name);
      } else if (name == "tuned") {
        run_tuned(groups_log2);
      } else {
        throw invalid_argument_error("unknown strategy or baseline: " + name);
      }
    }
    data_ = {};
  }

 private:
  options base_options(bool direct) const {
    options opts;
    opts.ctx = &ctx_;
    opts.expected_groups = data_.max_key + std::uint64_t{1};
    if (s_.block_mib > 0) opts.block_bytes = static_cast<std::size_t>(s_.block_mib * 1024 * 1024);
    opts.copy_threads = s_.copy_threads;
    opts.autotune = false;
    opts.blocks_in_flight = s_.in_flight;
    opts.local_table_copies = s_.local_copies;
    opts.partitions = s_.partitions;
    if (s_.interleaved >= 0 && !direct) opts.interleaved_table = s_.interleaved == 1;
    if (s_.hot_table >= 0 && !direct) opts.hot_table = s_.hot_table == 1;
    if (s_.run_cache >= 0) opts.run_cache = s_.run_cache == 1;
    if (direct) opts.domain = key_domain(Key{0}, data_.max_key);
    return opts;
  }

  template <class Query>
  auto driver_for(Query q, bool direct) {
    const auto opts = base_options(direct);
    if (s_.input == "device") {
      return make_driver(device_column<Key>(data_.keys_dev, data_.rows),
                         device_column<Value>(data_.vals_dev, data_.rows), q, opts);
    }
    if (s_.input == "pinned") {
      return make_driver(data_.keys_pinned, data_.vals_pinned, q, opts);
    }
    return make_driver(std::span<const Key>(data_.keys), std::span<const Value>(data_.vals), q, opts);
  }

  /// One query: `probe` blocks with `params` (all if 0), the rest with `fill`; per block
  /// synchronously (mode "blocks"), or every block pipelined (mode "query").
  template <class Query>
  measurement measure(Query q, bool direct, const std::string& name, const execution_params& params,
                      const execution_params& fill, bool pipelined) {
    measurement m;
    m.system = name;
    m.mode = pipelined ? "query" : "blocks";
    m.config = params.config;
    const auto start = std::chrono::steady_clock::now();
    auto driver = driver_for(q, direct);
    if (pipelined) {
      driver->run_remaining(params);
    } else {
      // `warm_blocks` blocks with the fastest configuration so far first, so that the measured
      // blocks find the table as filled as a query's later blocks do (without them, the first
      // blocks' inserts weigh on every configuration's mean). Then the measured blocks one at a
      // time (their profiled times), then the rest pipelined with the fastest configuration so
      // far: the query completes and is verified, quickly.
      for (unsigned b = 0; b < s_.warm_blocks && driver->blocks_left() > 1; ++b) driver->run_block(fill);
      while (driver->blocks_left() > 0 && (s_.probe_blocks == 0 || m.block_seconds.size() < s_.probe_blocks)) {
        m.block_seconds.push_back(driver->run_block(params));
      }
      driver->run_remaining(fill);
    }
    // Wall time to the result on the device (FINALIZE included); verification after it.
    using bound = typename std::remove_reference_t<decltype(*driver)>::bound_type;
    auto on_device =
        detail::host_result_for<Key, typename bound::output_tuple>::finalize_on_device(*driver);
    m.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    m.aggregate_seconds = on_device.stats.aggregate_seconds;
    m.initialize_seconds = on_device.stats.initialize_seconds;
    m.finalize_seconds = on_device.stats.finalize_seconds;
    m.merge_seconds = on_device.stats.merge_seconds;
    m.partition_seconds = on_device.stats.partition_seconds;
    for (const auto& b : on_device.stats.blocks) {
      m.hot_table_blocks += b.hot_table ? 1 : 0;
      m.cold_queue_blocks += b.cold_queue ? 1 : 0;
    }
    m.setup_seconds = on_device.stats.setup_seconds;
    m.host = on_device.stats.host;
    m.peak_device_bytes = on_device.stats.peak_device_bytes;
    m.verified = on_device.size() == data_.expected_groups &&
                 device_checksum<Key, sum_type>(ctx_, on_device.keys, on_device.template column<0>(), on_device.size()) ==
                     data_.expected_checksum;
    if constexpr (bound::output_count == 2) {
      m.verified = m.verified && device_checksum<Key, std::uint64_t>(ctx_, on_device.keys, on_device.template column<1>(),
                                                                     on_device.size()) == data_.expected_count_checksum;
    }
    record(m.verified);
    if (!m.verified) std::cerr << "  VERIFICATION FAILED: " << name << ' ' << params << '\n';
    return m;
  }

  template <class Query>
  void run_hash(unsigned groups_log2, const std::string& name, Query q) {
    const bool direct = name == "direct";
    auto probe = driver_for(q, direct);
    const strategy_kind strategy = direct || name == "default" ? probe->default_params().strategy
                                   : name == "shared"      ? strategy_kind::shared
                                   : name == "independent" ? strategy_kind::independent
                                                           : strategy_kind::workgroup_local;
    const launch_config initial = probe->initial_config(strategy);
    // "default" runs what group_by picks (section 3.7, skew-aware), which may use a partial
    // local table.
    const bool lenient = s_.lenient || name == "default";
    const auto runs = [&](auto& driver, const execution_params& p) {
      return lenient ? driver->infeasibility(p, false).empty() : driver->feasible(p);
    };
    if (!runs(probe, {strategy, initial}) && s_.configs == "default") return;
    const double block_rows = double(probe->block_rows());
    // Feasibility depends on the device and the groups planned, not on the run: ask the probe
    // once per configuration, then free it before measuring.
    std::vector<launch_config> configs;
    const std::uint32_t max_wg = probe->max_work_group_size(strategy);
    for (const auto& config : configs_for(s_, max_wg, initial)) {
      if (config.work_group_size <= max_wg && runs(probe, {strategy, config})) configs.push_back(config);
    }
    probe.reset();
    const std::size_t rows = data_.rows;
    // Warm-up (JIT build, first allocations) once per strategy and group count.
    execution_params fill{strategy, initial};
    measure(q, direct, name, fill, fill, false);
    double fill_block = 1e30;
    auto& entry = summary[{groups_log2, name}];
    std::size_t done = 0;
    for (const auto& config : configs) {
      const execution_params params{strategy, config};
      std::vector<double> rates;
      for (unsigned rep = 1; rep <= s_.reps; ++rep) {
        const auto m = measure(q, direct, name, params, fill, false);
        out_.row(std::uint64_t{1} << groups_log2, m, rep, rows, block_rows);
        if (out_.blocks.is_open() && rep == 1) {
          for (std::size_t b = 0; b < m.block_seconds.size(); ++b) {
            out_.blocks << '"' << out_.info->name << "\"," << s_.distribution << ',' << groups_log2 << ','
                        << (direct ? std::string("DIRECT_") + std::string(to_string(strategy)) : std::string(to_string(strategy)))
                        << ',' << config.work_groups_per_cu << ',' << config.work_group_size
                        << ',' << rep << ',' << b << ',' << std::llround(m.block_seconds[b] * 1e9) << '\n';
          }
        }
        const double mean = std::accumulate(m.block_seconds.begin(), m.block_seconds.end(), 0.0) /
                            double(std::max<std::size_t>(m.block_seconds.size(), 1));
        rates.push_back(block_rows / mean / 1e9);
        if (mean < fill_block) {  // later configurations fill their unmeasured blocks with the fastest
          fill_block = mean;
          fill = params;
        }
      }
      const double best = *std::max_element(rates.begin(), rates.end());
      config_rates_[{groups_log2, strategy}][config] = best;
      if (best > entry.best) {
        entry.best = best;
        entry.median = median(rates);
        entry.config = config;
      }
      out_.rows.flush();
      out_.blocks.flush();
      if (++done % 32 == 0) std::cerr << "  " << name << ": " << done << " configurations\n";
    }
    if (!s_.pipelined || entry.best == 0) return;
    // Whole queries, pipelined, with the fastest configuration: what a user sees.
    std::vector<double> rates;
    for (unsigned rep = 1; rep <= s_.query_reps; ++rep) {
      const auto m = measure(q, direct, name, {strategy, entry.config}, fill, true);
      out_.row(std::uint64_t{1} << groups_log2, m, rep, rows, block_rows);
      rates.push_back(double(rows) / m.wall_seconds / 1e9);
      entry.query_kernels_best = std::max(entry.query_kernels_best, double(rows) / m.kernel_seconds() / 1e9);
    }
    entry.query_best = *std::max_element(rates.begin(), rates.end());
    entry.query_median = median(rates);
    std::cerr << "  " << name << " best " << entry.config << ": " << entry.best << " G tuples/s per block, query "
              << entry.query_median << " (median) " << entry.query_best << " (best), kernels "
              << entry.query_kernels_best << " (best)\n";
  }

  /// The copy a query over host input cannot beat: one blocking enqueueWriteBuffer per column
  /// from the same host memory (pageable vectors, or the pinned arrays), best of 3 after a
  /// warm-up, as summary entry "plain_write".
  void measure_plain_write(unsigned groups_log2) {
    const void* keys = s_.input == "pinned" ? static_cast<const void*>(data_.keys_pinned.data()) : data_.keys.data();
    const void* vals = s_.input == "pinned" ? static_cast<const void*>(data_.vals_pinned.data()) : data_.vals.data();
    double best = 1e30;
    for (int rep = 0; rep <= 3; ++rep) {
      const auto start = std::chrono::steady_clock::now();
      detail::check(ctx_.transfer_queue().enqueueWriteBuffer(data_.keys_dev, CL_TRUE, 0, data_.rows * sizeof(Key), keys),
                    "plain write");
      detail::check(ctx_.transfer_queue().enqueueWriteBuffer(data_.vals_dev, CL_TRUE, 0, data_.rows * sizeof(Value), vals),
                    "plain write");
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (rep > 0) best = std::min(best, seconds);
    }
    auto& entry = summary[{groups_log2, "plain_write"}];
    entry.best = entry.median = entry.query_best = entry.query_median = double(data_.rows) / best / 1e9;
    std::cerr << "  plain enqueueWriteBuffer from " << s_.input << " memory: " << entry.query_best << " G tuples/s\n";
  }

  void run_baseline(unsigned groups_log2, const std::string& name) {
    const device_column<Key> keys(data_.keys_dev, data_.rows);
    const device_column<Value> vals(data_.vals_dev, data_.rows);
    std::vector<baselines::atomics_params> variants;
    if (name == "sort_reduce") {
      variants.emplace_back();
    } else {
      for (const auto variant : baselines::all_atomics_variants) {
        if (name != "sort_atomics" && name != std::string("sort_atomics_") + baselines::name(variant)) continue;
        for (const std::uint32_t chunk : {4u, 16u, 64u}) {
          baselines::atomics_params p;
          p.variant = variant;
          p.chunk_size = chunk;
          p.work_group_size = 256;
          variants.push_back(p);
        }
      }
    }
    for (const auto& p : variants) {
      std::string system = name;
      if (name != "sort_reduce") {
        std::ostringstream text;
        text << "sort_atomics_" << baselines::name(p.variant) << "_c" << p.chunk_size;
        system = text.str();
      }
      std::vector<double> rates;
      for (unsigned rep = 0; rep <= s_.reps; ++rep) {  // rep 0 warms up
        measurement m;
        m.system = system;
        m.mode = "baseline";
        m.config = {1, p.work_group_size};
        baselines::baseline_timing timing;
        const auto start = std::chrono::steady_clock::now();
        auto r = name == "sort_reduce" ? baselines::sort_reduce_by_key(ctx_, keys, vals, &timing)
                                       : baselines::sort_then_atomics(ctx_, keys, vals, p, &timing);
        m.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        m.aggregate_seconds = timing.sort_seconds + timing.aggregate_seconds;
        std::uint64_t checksum = 0;
        for (std::size_t i = 0; i < r.size(); ++i) {
          checksum += pair_checksum(std::uint64_t(r.keys[i]), sum_word(r.template column<1>()[i]));
        }
        m.verified = r.size() == data_.expected_groups && checksum == data_.expected_checksum;
        record(m.verified);
        if (rep == 0) continue;
        // The baselines copy their result to the host; their rate counts sort and aggregation.
        m.wall_seconds = m.aggregate_seconds;
        out_.row(std::uint64_t{1} << groups_log2, m, rep, data_.rows, double(data_.rows));
        rates.push_back(double(data_.rows) / m.aggregate_seconds / 1e9);
      }
      auto& entry = summary[{groups_log2, system}];
      entry.best = entry.query_best = *std::max_element(rates.begin(), rates.end());
      entry.median = entry.query_median = median(rates);
      entry.config = {1, p.work_group_size};
    }
  }

  /// The tuner (the default search, every strategy at once) inside real queries, compared with
  /// the exhaustive search this run measured before it (put "tuned" after the strategies).
  /// Without --tuned-cache each query tunes from scratch (rep 0 warms up and is not reported).
  /// With it, the queries of one group count share that winners file, a fresh one per group
  /// count, and every query is reported, the first included: how the search carries over from
  /// query to query (provisional entries of searches the input cut short, then hits).
  void run_tuned(unsigned groups_log2) {
    const auto q = select(sum(col<0>));
    double optimum = 0;  // G tuples/s per block, best over every strategy and configuration measured
    for (const auto& [key, rates] : config_rates_) {
      if (key.first != groups_log2) continue;
      for (const auto& [config, rate] : rates) optimum = std::max(optimum, rate);
    }
    const bool cached = !s_.tuned_cache.empty();
    if (cached) std::filesystem::remove(s_.tuned_cache);
    for (unsigned rep = 0; rep <= s_.tuned_reps; ++rep) {
      auto driver = driver_for(q, false);
      const double block_rows = double(driver->block_rows());
      const search_space space{.max_work_group_size = driver->max_work_group_size()};
      std::vector<execution_params> initial;
      for (const auto strategy : all_strategies) initial.push_back({strategy, driver->initial_config(strategy)});
      const tuning_report report =
          cached ? tuner<>(space, tuning_cache{s_.tuned_cache}).run(*driver, initial, detail::tuning_key_for(*driver))
                 : tuner<tuner_params{.cache = {.use_cache = false}}>(space).run(*driver, initial);
      auto on_device = driver->template finalize_on_device<sum_type>();
      const bool verified = on_device.size() == data_.expected_groups &&
                            device_checksum<Key, sum_type>(ctx_, on_device.keys, on_device.template column<0>(),
                                                 on_device.size()) == data_.expected_checksum;
      record(verified);
      if ((rep == 0 && !cached) || !report.winner) continue;  // rep 0 warms up
      // The winner's rate as the exhaustive search measured it (same run), and as the tuner did.
      double exhaustive_rate = 0;
      double full_evaluation_seconds = 0;  // every feasible configuration, 3 blocks each
      for (const auto& [key, rates] : config_rates_) {
        if (key.first != groups_log2) continue;
        for (const auto& [config, rate] : rates) {
          full_evaluation_seconds += 3 * block_rows / (rate * 1e9);
          if (key.second == report.winner->strategy && config == report.winner->config) exhaustive_rate = rate;
        }
      }
      const double tuner_rate = block_rows / report.winner_seconds / 1e9;
      const double quality = exhaustive_rate > 0 ? optimum / exhaustive_rate : optimum / tuner_rate;
      const double effort = full_evaluation_seconds > 0 ? report.exploration_seconds / full_evaluation_seconds : 0;
      if (!tuned_csv_header_) {
        tuned_rows_ << "groups_log2,rep,winner_strategy,winner_wgpcu,winner_wgs,tuner_gtps,exhaustive_gtps_of_winner,"
                       "optimum_gtps,quality,configurations_tried,exploration_blocks,cost_blocks,overhead,effort,"
                       "verified,cache,converged\n";
        tuned_csv_header_ = true;
      }
      tuned_rows_ << groups_log2 << ',' << rep << ',' << to_string(report.winner->strategy) << ','
                  << report.winner->config.work_groups_per_cu << ',' << report.winner->config.work_group_size << ','
                  << tuner_rate << ',' << exhaustive_rate << ',' << optimum << ',' << quality << ','
                  << report.tried.size() << ',' << report.exploration_blocks << ',' << report.cost() << ','
                  << report.overhead() << ',' << effort << ',' << (verified ? 1 : 0) << ",\""
                  << to_string(report.cache) << "\"," << (report.converged ? 1 : 0) << std::endl;
      std::cerr << "  tuned: " << *report.winner << (report.converged ? "" : " (not converged)") << ", cache "
                << to_string(report.cache) << ", after " << report.exploration_blocks << " blocks, "
                << report.tried.size() << " configurations; quality " << quality << ", effort " << effort << '\n';
      auto& entry = summary[{groups_log2, "tuned"}];
      if (tuner_rate > entry.best) {
        entry.best = tuner_rate;
        entry.config = report.winner->config;
      }
    }
  }

 public:
  std::ofstream tuned_rows_;

 private:
  bool tuned_csv_header_ = false;
  std::map<std::pair<unsigned, strategy_kind>, std::map<launch_config, double>> config_rates_;
  context& ctx_;
  const settings& s_;
  output& out_;
  dataset<Key, Value> data_;
  std::size_t verified_ = 0;
  std::size_t unverified_ = 0;

  void record(bool verified) { ++(verified ? verified_ : unverified_); }
};

/// The speed targets (whole queries, AGGREGATE and FINALIZE included) against the peers
/// measured in the same run, one row per target and group count, with pass or fail.
template <class Summary>
void print_targets(const settings& s, const Summary& summary) {
  std::map<std::pair<unsigned, std::string>, double> peers;  // (log2 groups, system) -> G tuples/s
  std::ifstream in(s.peers_csv);
  std::string line;
  while (std::getline(in, line)) {
    const auto fields = split(line);
    if (fields.size() < 4 || fields[0].empty() || !std::isdigit(static_cast<unsigned char>(fields[0][0]))) continue;
    const auto groups = std::stoull(fields[0]);
    peers[{static_cast<unsigned>(std::llround(std::log2(double(groups)))), fields[1]}] = std::stod(fields[3]);
  }
  const auto query = [&](unsigned g, const std::string& system, bool kernels) {
    const auto found = summary.find({g, system});
    if (found == summary.end()) return 0.0;
    return kernels ? found->second.query_kernels_best : found->second.query_best;
  };
  std::set<unsigned> group_counts;
  for (const auto& [key, entry] : summary) group_counts.insert(key.first);
  std::cout << "\nspeed targets (G tuples/s of whole queries: over the wall time to the result on the device, and over\n"
               "the profiled kernel time INITIALIZE + AGGREGATE + MERGE + FINALIZE; peers from "
            << s.peers_csv << ")\n";
  std::cout << std::left << std::setw(8) << "groups" << std::setw(46) << "target" << std::setw(10) << "needed"
            << std::setw(10) << "wall" << std::setw(8) << "result" << std::setw(10) << "kernels" << "result\n";
  const auto row = [&](unsigned g, const std::string& target, const std::string& system, double needed) {
    if (needed <= 0) return;
    double wall = 0;
    double kernels = 0;
    for (const auto& one : split(system)) {
      wall = std::max(wall, query(g, one, false));
      kernels = std::max(kernels, query(g, one, true));
    }
    std::cout << std::left << std::setw(8) << ("2^" + std::to_string(g)) << std::setw(46) << target << std::fixed
              << std::setprecision(2) << std::setw(10) << needed << std::setw(10) << wall << std::setw(8)
              << (wall >= needed ? "pass" : "FAIL") << std::setw(10) << kernels << (kernels >= needed ? "pass" : "FAIL")
              << '\n';
  };
  const std::string hashed = "shared,independent,workgroup_local,default";
  for (const unsigned g : group_counts) {
    const double unique = peers[{g, "torch_unique_index_add"}];
    const double dense = peers[{g, "torch_index_add_dense"}];
    if (s.input == "device") {  // targets 1 and 2 are about data on the device
      if (g <= 10) row(g, "1. >= 250 (up to 2^10 groups)", hashed + ",direct", 250);
      row(g, "2. hashing >= 3x torch_unique_index_add", hashed, 3 * unique);
      row(g, "2. hashing >= 10x sort + reduce_by_key", hashed, 10 * query(g, "sort_reduce", false));
      if (g <= 20) row(g, "2. hashing >= torch_index_add_dense", hashed, dense);
      row(g, "2. direct addressing >= torch_index_add_dense", "direct", dense);
    }
    const double plain = query(g, "plain_write", false);
    if (s.input == "pinned" && g <= 20) row(g, "4. pinned host input >= 0.9x plain write", hashed + ",direct", 0.9 * plain);
    if (s.input == "pageable") row(g, "4. pageable host input >= 3x plain write", hashed + ",direct", 3 * plain);
  }
}

template <class Key, class Value>
int run_types(const settings& s) {
  context& ctx = default_context();
  const auto& info = ctx.info();
  std::cerr << "gpuagg_bench: " << info.name << " (" << info.platform_name << ", driver " << info.driver_version
            << "), " << info.compute_units << " compute units, global-memory cache "
            << info.global_cache_bytes / 1024 << " KiB\n";
  {
    // Each strategy's AGGREGATE kernel's work-group limit on this device: the largest
    // work_group_size an explicit options::config may ask for (a larger one is a typed error).
    const cl::Buffer key_probe = ctx.buffer(sizeof(Key), "the kernel-limit probe's key");
    const cl::Buffer value_probe = ctx.buffer(sizeof(Value), "the kernel-limit probe's value");
    auto probe = make_driver(device_column<Key>(key_probe, 1), device_column<Value>(value_probe, 1),
                             select(sum(col<0>)));
    std::cerr << "gpuagg_bench: AGGREGATE's work-group limit:";
    for (const auto strategy : {strategy_kind::shared, strategy_kind::independent, strategy_kind::workgroup_local}) {
      std::cerr << ' ' << to_string(strategy) << ' ' << probe->max_work_group_size(strategy);
    }
    std::cerr << '\n';
  }
  output out;
  out.info = &info;
  out.s = &s;
  if (!s.csv.empty()) {
    out.rows.open(s.csv);
    out.rows << csv_header;
  }
  if (!s.blocks_csv.empty()) {
    out.blocks.open(s.blocks_csv);
    out.blocks << "device,distribution,groups_log2,strategy,work_groups_per_cu,work_group_size,rep,block,aggregate_ns\n";
  }
  bench<Key, Value> b(ctx, s, out);
  if (!s.tuned_csv.empty()) b.tuned_rows_.open(s.tuned_csv);
  for (const unsigned groups_log2 : parse_range(s.groups_log2)) b.run_groups(groups_log2);

  std::cout << "\nSELECT g, sum(v) GROUP BY g: 2^" << s.rows_log2 << " rows, " << s.distribution << ", input "
            << s.input << ", " << s.key_type << " keys, " << s.value_type << " values, " << info.name << "\n";
  std::cout << std::left << std::setw(8) << "groups" << std::setw(40) << "system" << std::setw(10) << "config"
            << std::setw(14) << "block best" << std::setw(14) << "block median" << std::setw(14) << "query best"
            << "query median   (G tuples/s)\n";
  for (const auto& [key, e] : b.summary) {
    if (e.best == 0) continue;  // no feasible configuration
    std::ostringstream config;
    config << e.config;
    std::cout << std::left << std::setw(8) << ("2^" + std::to_string(key.first)) << std::setw(40) << key.second
              << std::setw(10) << config.str() << std::fixed << std::setprecision(2) << std::setw(14) << e.best
              << std::setw(14) << e.median << std::setw(14) << e.query_best << e.query_median << '\n';
  }
  if (!s.peers_csv.empty() || s.input != "device") print_targets(s, b.summary);
  // The count is the evidence: "all verified" of zero results would be vacuous.
  std::cout << "gpuagg-bench: " << b.verified() << " results verified, " << b.unverified() << " unverified\n";
  return b.verified() > 0 && b.unverified() == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  CLI::App app{"gpuagg_bench: SELECT g, sum(v) GROUP BY g, measured per block and per query"};
  app.add_option("--rows-log2", s.rows_log2, "log2 of the number of rows");
  app.add_option("--groups-log2", s.groups_log2, "group counts as log2: 0:28, 0:28:2 or 4,10,16");
  app.add_option("--strategies", s.strategies,
                 "shared,independent,workgroup_local,default,direct,sort_reduce,sort_atomics[_<variant>],tuned");
  app.add_option("--configs", s.configs, "default | sweep | all | 4x512,1x256,...");
  app.add_option("--distribution", s.distribution, "uniform | zipf | heavy | sorted");
  app.add_option("--input", s.input, "device | pinned | pageable");
  app.add_option("--key-type", s.key_type, "uint32 | int32 | uint64 | int64");
  app.add_option("--value-type", s.value_type, "uint32 | int32 | int64 | uint64 | float | double");
  app.add_option("--block-mib", s.block_mib, "block size per column in MiB (0: the library's default)");
  app.add_option("--copy-threads", s.copy_threads, "threads of the staging copy (options::copy_threads; 0: automatic)");
  app.add_option("--local-copies", s.local_copies,
                 "copies of WORKGROUPLOCAL's local table (options::local_table_copies; 0: automatic)");
  app.add_option("--partitions", s.partitions,
                 "PARTITION's runs per block (options::partitions; 0: automatic, 1: none)");
  app.add_option("--run-cache", s.run_cache,
                 "the run cache (options::run_cache): -1 automatic (a dominant key's register), 0 off, 1 on with runs");
  app.add_option("--hot-table", s.hot_table,
                 "SHARED's hot-key table in local memory (options::hot_table): -1 automatic, 0 off, 1 on");
  app.add_option("--interleaved", s.interleaved,
                 "hash tables' layout (options::interleaved_table): -1 automatic, 0 arrays, 1 interleaved");
  app.add_option("--reps", s.reps, "measured repetitions per configuration (after one warm-up)");
  app.add_option("--query-reps", s.query_reps, "measured repetitions of the pipelined whole query");
  app.add_option("--tuned-reps", s.tuned_reps, "measured repetitions of the live tuner (system tuned)");
  app.add_option("--tuned-cache", s.tuned_cache,
                 "winners file the live tuner's queries share, fresh per group count (default: none)");
  app.add_option("--probe-blocks", s.probe_blocks, "blocks measured per configuration (0: all)");
  app.add_option("--warm-blocks", s.warm_blocks,
                 "blocks run with the fastest configuration so far before each configuration's measured blocks");
  app.add_flag("!--no-pipelined", s.pipelined, "skip the pipelined whole-query runs");
  app.add_option("--csv", s.csv, "CSV of every measured query");
  app.add_option("--blocks-csv", s.blocks_csv, "CSV of every measured block (search spaces)");
  app.add_option("--peers", s.peers_csv, "peers.py CSV of the same run: print the speed targets against it");
  app.add_option("--tuned-csv", s.tuned_csv, "CSV of the live tuner runs (system \"tuned\")");
  app.add_option("--seed", s.seed, "input seed");
  app.add_option("--in-flight", s.in_flight, "blocks in flight (options::blocks_in_flight)");
  app.add_flag("--lenient", s.lenient,
               "also run WORKGROUPLOCAL/INDEPENDENT with tables smaller than the groups (overflow to global)");
  app.add_flag("--quick", s.quick, "a small run for tests: 2^18 rows, two group counts, every system, with count(*)");
  app.add_flag("--with-count", s.with_count, "hash queries select sum(v), count(*) (both verified)");
  CLI11_PARSE(app, argc, argv);
  if (s.quick) {
    s.rows_log2 = 18;
    s.groups_log2 = "2,12";
    s.block_mib = 0.25;
    s.reps = 1;
    s.query_reps = 1;
    s.configs = "default";
    s.with_count = true;
    if (app.count("--strategies") == 0) {
      s.strategies = "shared,independent,workgroup_local,direct,sort_reduce,sort_atomics_private_variable";
    }
  }
  try {
#ifdef GPUAGG_BENCH_ONLY_UINT32
    // A quick build for one-off device runs (CMake option GPUAGG_BENCH_ONLY_UINT32).
    if (s.key_type != "uint32" || s.value_type != "uint32") {
      throw gpuagg::invalid_argument_error("this gpuagg_bench was built with GPUAGG_BENCH_ONLY_UINT32");
    }
    return run_types<std::uint32_t, std::uint32_t>(s);
#else
    const auto with_key = [&]<class Key>() {
      if (s.value_type == "int32") return run_types<Key, std::int32_t>(s);
      if (s.value_type == "int64") return run_types<Key, std::int64_t>(s);
      if (s.value_type == "uint64") return run_types<Key, std::uint64_t>(s);
      if (s.value_type == "float") return run_types<Key, float>(s);
      if (s.value_type == "double") return run_types<Key, double>(s);
      if (s.value_type != "uint32") throw gpuagg::invalid_argument_error("unknown --value-type " + s.value_type);
      return run_types<Key, std::uint32_t>(s);
    };
    if (s.key_type == "uint64") return with_key.template operator()<std::uint64_t>();
    if (s.key_type == "int64") return with_key.template operator()<std::int64_t>();
    if (s.key_type == "int32") return with_key.template operator()<std::int32_t>();
    if (s.key_type != "uint32") throw gpuagg::invalid_argument_error("unknown --key-type " + s.key_type);
    return with_key.template operator()<std::uint32_t>();
#endif
  } catch (const gpuagg::error& e) {
    std::cerr << "gpuagg_bench: " << e.what() << '\n';
    return 2;
  }
}
