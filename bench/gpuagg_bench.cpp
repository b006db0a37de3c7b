// gpuagg_bench: measures SELECT g, sum(v) FROM R GROUP BY g the way section 3.1 of Rosenfeld
// et al. does: input in 16 MiB blocks per column, AGGREGATE timed per block with OpenCL
// profiling, mean and coefficient of variation per configuration, plus whole queries timed end
// to end. Every query's result is verified against a checksum of the CPU reference.
//
// Writes one CSV row per measured query (--csv), one per measured block (--blocks-csv: the
// recorded thread-configuration search spaces the tuner evaluation replays), a summary table
// on stdout, and progress on stderr. Benchmarks never assert on time.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gpuagg/groupby.hpp>

namespace {

using namespace gpuagg;

struct settings {
  unsigned rows_log2 = 27;
  std::string groups_log2 = "4,10,16,20,24";
  std::string strategies = "shared,independent,workgroup_local,direct";
  std::string configs = "default";  // default | sweep | all | list "WxS,..."
  std::string distribution = "uniform";
  std::string input = "device";  // device | pinned | pageable
  std::string key_type = "uint32";
  double block_mib = 16;
  unsigned reps = 5;
  unsigned probe_blocks = 0;  // blocks measured per configuration (0: all)
  bool pipelined = true;
  std::string csv;
  std::string blocks_csv;
  std::uint64_t seed = 42;
  bool quick = false;
};

std::vector<unsigned> parse_range(const std::string& text) {
  std::vector<unsigned> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto colon = item.find(':');
    if (colon == std::string::npos) {
      out.push_back(static_cast<unsigned>(std::stoul(item)));
    } else {
      for (unsigned i = std::stoul(item.substr(0, colon)); i <= std::stoul(item.substr(colon + 1)); ++i) out.push_back(i);
    }
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

std::uint64_t mix64(std::uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// Order-independent checksum of a (key, sum) result, and its group count.
struct checksum {
  std::uint64_t groups = 0;
  std::uint64_t value = 0;
  void add(std::uint64_t key, std::uint64_t sum) {
    ++groups;
    value += mix64(key * 0x9E3779B97F4A7C15ULL + mix64(sum));
  }
  friend bool operator==(const checksum&, const checksum&) = default;
};

template <class Key>
struct dataset {
  std::vector<Key> keys;
  std::vector<std::uint32_t> vals;
  checksum expected;
  cl::Buffer keys_dev;
  cl::Buffer vals_dev;
  Key min_key = 0;
  Key max_key = 0;
};

/// Keys with `groups` distinct values in [0, groups) (as the peers use), values in [0, 100).
template <class Key>
dataset<Key> make_dataset(context& ctx, std::size_t rows, std::uint64_t groups, const std::string& dist,
                          std::uint64_t seed) {
  dataset<Key> d;
  d.keys.resize(rows);
  d.vals.resize(rows);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::uint64_t> pick(0, groups - 1);
  std::vector<double> zipf_cdf;
  if (dist == "zipf") {
    zipf_cdf.resize(std::min<std::uint64_t>(groups, 1 << 24));
    double total = 0;
    for (std::size_t i = 0; i < zipf_cdf.size(); ++i) zipf_cdf[i] = total += 1.0 / std::pow(double(i + 1), 1.1);
    for (auto& c : zipf_cdf) c /= total;
  }
  std::uniform_real_distribution<double> unit(0, 1);
  for (std::size_t i = 0; i < rows; ++i) {
    std::uint64_t g = pick(rng);
    if (dist == "zipf") {
      g = std::lower_bound(zipf_cdf.begin(), zipf_cdf.end(), unit(rng)) - zipf_cdf.begin();
      g = std::min<std::uint64_t>(g, groups - 1);
    } else if (dist == "heavy") {
      if (unit(rng) < 0.9) g = 0;
    }
    d.keys[i] = static_cast<Key>(g);
    d.vals[i] = static_cast<std::uint32_t>(rng() % 100);
  }
  if (dist == "sorted") std::sort(d.keys.begin(), d.keys.end());
  // The reference: keys are below `groups`, so a flat array does.
  std::vector<std::uint64_t> sums(groups, 0);
  std::vector<std::uint8_t> seen(groups, 0);
  for (std::size_t i = 0; i < rows; ++i) {
    sums[d.keys[i]] += d.vals[i];
    seen[d.keys[i]] = 1;
  }
  for (std::uint64_t g = 0; g < groups; ++g) {
    if (seen[g]) d.expected.add(g, sums[g]);
  }
  d.min_key = 0;
  d.max_key = static_cast<Key>(groups - 1);
  d.keys_dev = ctx.buffer(rows * sizeof(Key), "benchmark keys", CL_MEM_READ_ONLY);
  d.vals_dev = ctx.buffer(rows * sizeof(std::uint32_t), "benchmark values", CL_MEM_READ_ONLY);
  ctx.compute_queue().enqueueWriteBuffer(d.keys_dev, CL_TRUE, 0, rows * sizeof(Key), d.keys.data());
  ctx.compute_queue().enqueueWriteBuffer(d.vals_dev, CL_TRUE, 0, rows * sizeof(std::uint32_t), d.vals.data());
  return d;
}

template <class Key, class Sum>
checksum checksum_of(const result<Key, Sum>& r) {
  checksum c;
  for (std::size_t i = 0; i < r.size(); ++i) c.add(std::uint64_t(r.keys[i]), std::uint64_t(r.template column<0>()[i]));
  return c;
}

struct measurement {
  std::string strategy;
  launch_config config;
  std::vector<double> block_seconds;  // blocks run with `config`
  double aggregate_seconds = 0;
  double initialize_seconds = 0;
  double finalize_seconds = 0;
  double wall_seconds = 0;
  bool pipelined = false;
  bool verified = false;
  std::uint64_t groups_found = 0;
  unsigned rep = 0;
};

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

std::vector<launch_config> configs_for(const settings& s, std::uint32_t max_wg, strategy_kind strategy,
                                       const launch_config& initial) {
  std::vector<launch_config> out;
  if (s.configs == "default") return {initial};
  if (s.configs == "sweep" || s.configs == "all") {
    const bool all = s.configs == "all";
    for (std::uint32_t per_cu = 1; per_cu <= (all ? 1024u : 32u); per_cu *= 2) {
      for (std::uint32_t size = all ? 1 : 64; size <= max_wg; size *= 2) out.push_back({per_cu, size});
    }
    (void)strategy;
    return out;
  }
  for (const auto& item : split(s.configs)) {
    const auto x = item.find('x');
    out.push_back({static_cast<std::uint32_t>(std::stoul(item.substr(0, x))),
                   static_cast<std::uint32_t>(std::stoul(item.substr(x + 1)))});
  }
  return out;
}

template <class Key, class Query>
class runner {
 public:
  runner(context& ctx, const settings& s, dataset<Key>& data, std::uint64_t groups)
      : ctx_(ctx), s_(s), data_(data), groups_(groups) {}

  options base_options(bool direct) const {
    options opts;
    opts.ctx = &ctx_;
    opts.expected_groups = groups_;
    opts.block_bytes = static_cast<std::size_t>(s_.block_mib * 1024 * 1024);
    if (direct) opts.domain = key_domain(data_.min_key, data_.max_key);
    return opts;
  }

  template <class Keys, class Vals>
  measurement measure(const Keys& keys, const Vals& vals, bool direct, const std::string& strategy_name,
                      const execution_params& params, std::optional<execution_params> fill, bool pipelined,
                      unsigned rep) {
    measurement m;
    m.strategy = strategy_name;
    m.config = params.config;
    m.pipelined = pipelined;
    m.rep = rep;
    auto opts = base_options(direct);
    const auto start = std::chrono::steady_clock::now();
    auto driver = make_driver(keys, vals, Query{}, opts);
    if (pipelined) {
      driver->run_remaining(params);
    } else {
      std::size_t run = 0;
      while (driver->blocks_left() > 0) {
        const bool probing = s_.probe_blocks == 0 || run < s_.probe_blocks;
        const auto p = probing || !fill ? params : *fill;
        const double t = driver->run_block(p);
        if (probing) m.block_seconds.push_back(t);
        ++run;
      }
    }
    auto on_device = driver->template finalize_on_device<std::uint64_t>();
    m.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    m.aggregate_seconds = on_device.stats.aggregate_seconds;
    m.initialize_seconds = on_device.stats.initialize_seconds;
    m.finalize_seconds = on_device.stats.finalize_seconds;
    m.groups_found = on_device.size;
    // Verify: copy the result back (outside the timed region) and compare checksums.
    result<Key, std::uint64_t> host;
    host.keys.resize(on_device.size);
    std::get<0>(host.columns).resize(on_device.size);
    if (on_device.size > 0) {
      ctx_.compute_queue().enqueueReadBuffer(on_device.keys, CL_TRUE, 0, on_device.size * sizeof(Key), host.keys.data());
      ctx_.compute_queue().enqueueReadBuffer(on_device.template column<0>(), CL_TRUE, 0, on_device.size * 8,
                                             std::get<0>(host.columns).data());
    }
    m.verified = checksum_of(host) == data_.expected;
    return m;
  }

 private:
  context& ctx_;
  const settings& s_;
  dataset<Key>& data_;
  std::uint64_t groups_;
};

struct csv_writer {
  std::ofstream rows;
  std::ofstream blocks;
};

template <class Key>
int run_key_type(const settings& s) {
  context& ctx = default_context();
  const auto& info = ctx.info();
  std::cerr << "gpuagg_bench: " << info.name << " (" << info.platform_name << ", driver " << info.driver_version
            << "), " << info.compute_units << " compute units\n";
  csv_writer out;
  if (!s.csv.empty()) {
    out.rows.open(s.csv);
    out.rows << "device,driver,input,distribution,key_type,rows,groups,strategy,work_groups_per_cu,work_group_size,"
                "mode,rep,blocks_measured,block_mean_us,block_cv,aggregate_ms,initialize_ms,finalize_ms,wall_ms,"
                "gtuples_per_s_aggregate,gtuples_per_s_query,verified\n";
  }
  if (!s.blocks_csv.empty()) {
    out.blocks.open(s.blocks_csv);
    out.blocks << "device,distribution,groups_log2,strategy,work_groups_per_cu,work_group_size,rep,block,aggregate_ns\n";
  }
  const std::size_t rows = std::size_t{1} << s.rows_log2;
  const auto groups_list = parse_range(s.groups_log2);
  bool all_verified = true;
  struct best_entry {
    double best = 0;
    double median = 0;
    launch_config config;
    bool verified = true;
  };
  std::map<std::pair<unsigned, std::string>, best_entry> summary;
  for (const unsigned groups_log2 : groups_list) {
    const std::uint64_t groups = std::uint64_t{1} << groups_log2;
    if (groups > rows) continue;
    std::cerr << "groups 2^" << groups_log2 << ": generating " << rows << " rows (" << s.distribution << ")\n";
    auto data = make_dataset<Key>(ctx, rows, groups, s.distribution, s.seed + groups_log2);
    for (const auto& name : split(s.strategies)) {
      const bool direct = name == "direct";
      auto run_with = [&]<class Query>(Query) {
        runner<Key, Query> r(ctx, s, data, groups);
        // Columns: on the device, or host memory (pageable std::vector, or pinned memory).
        auto keys_dev = device_column<Key>(data.keys_dev, rows);
        auto vals_dev = device_column<std::uint32_t>(data.vals_dev, rows);
        auto probe = make_driver(keys_dev, vals_dev, Query{}, r.base_options(direct));
        const strategy_kind strategy = direct ? probe->default_params().strategy
                                       : name == "shared"      ? strategy_kind::shared
                                       : name == "independent" ? strategy_kind::independent
                                                               : strategy_kind::workgroup_local;
        const auto initial = probe->initial_config(strategy);
        std::optional<execution_params> fill;
        if (probe->feasible({strategy, initial})) fill = execution_params{strategy, initial};
        for (const auto& config : configs_for(s, probe->max_work_group_size(strategy), strategy, initial)) {
          const execution_params params{strategy, config};
          if (!probe->feasible(params)) continue;
          std::vector<double> query_rates;
          for (unsigned rep = 0; rep <= s.reps; ++rep) {  // rep 0 is the warm-up
            measurement m;
            if (s.input == "device") {
              m = r.measure(keys_dev, vals_dev, direct, name, params, fill, false, rep);
            } else {
              m = r.measure(data.keys, data.vals, direct, name, params, fill, false, rep);
            }
            all_verified = all_verified && m.verified;
            if (rep == 0) continue;
            const double block_total = std::accumulate(m.block_seconds.begin(), m.block_seconds.end(), 0.0);
            const double block_mean = m.block_seconds.empty() ? 0 : block_total / double(m.block_seconds.size());
            const double rows_per_block = double(probe->block_rows());
            const double rate_aggregate = block_mean > 0 ? rows_per_block / block_mean / 1e9 : 0;
            const double rate_query = double(rows) / (m.aggregate_seconds + m.finalize_seconds) / 1e9;
            query_rates.push_back(rate_aggregate);
            if (out.rows.is_open()) {
              out.rows << '"' << info.name << "\",\"" << info.driver_version << "\"," << s.input << ',' << s.distribution
                       << ',' << s.key_type << ',' << rows << ',' << groups << ',' << name << ','
                       << config.work_groups_per_cu << ',' << config.work_group_size << ",blocks," << rep << ','
                       << m.block_seconds.size() << ',' << block_mean * 1e6 << ','
                       << coefficient_of_variation(m.block_seconds) << ',' << m.aggregate_seconds * 1e3 << ','
                       << m.initialize_seconds * 1e3 << ',' << m.finalize_seconds * 1e3 << ',' << m.wall_seconds * 1e3
                       << ',' << rate_aggregate << ',' << rate_query << ',' << (m.verified ? 1 : 0) << '\n';
            }
            if (out.blocks.is_open() && rep == 1) {
              for (std::size_t b = 0; b < m.block_seconds.size(); ++b) {
                out.blocks << '"' << info.name << "\"," << s.distribution << ',' << groups_log2 << ','
                           << to_string(strategy) << ',' << config.work_groups_per_cu << ',' << config.work_group_size
                           << ',' << rep << ',' << b << ',' << std::llround(m.block_seconds[b] * 1e9) << '\n';
              }
            }
          }
          auto& entry = summary[{groups_log2, name}];
          const double best = query_rates.empty() ? 0 : *std::max_element(query_rates.begin(), query_rates.end());
          if (best > entry.best) entry = {best, median(query_rates), config, all_verified};
        }
        // Whole queries, pipelined (blocks_in_flight), with the best configuration found: the
        // figure a user sees, AGGREGATE and FINALIZE included.
        if (s.pipelined && summary.count({groups_log2, name})) {
          const auto best_config = summary[{groups_log2, name}].config;
          std::vector<double> wall;
          for (unsigned rep = 0; rep <= s.reps; ++rep) {
            measurement m;
            if (s.input == "device") {
              m = r.measure(keys_dev, vals_dev, direct, name, {strategy, best_config}, fill, true, rep);
            } else {
              m = r.measure(data.keys, data.vals, direct, name, {strategy, best_config}, fill, true, rep);
            }
            all_verified = all_verified && m.verified;
            if (rep == 0) continue;
            wall.push_back(m.wall_seconds);
            if (out.rows.is_open()) {
              out.rows << '"' << info.name << "\",\"" << info.driver_version << "\"," << s.input << ',' << s.distribution
                       << ',' << s.key_type << ',' << rows << ',' << groups << ',' << name << ','
                       << best_config.work_groups_per_cu << ',' << best_config.work_group_size << ",query," << rep
                       << ",0,0,0," << m.aggregate_seconds * 1e3 << ',' << m.initialize_seconds * 1e3 << ','
                       << m.finalize_seconds * 1e3 << ',' << m.wall_seconds * 1e3 << ','
                       << double(rows) / m.aggregate_seconds / 1e9 << ',' << double(rows) / m.wall_seconds / 1e9 << ','
                       << (m.verified ? 1 : 0) << '\n';
            }
          }
          std::cerr << "  " << name << " best " << best_config << ": query wall median "
                    << median(wall) * 1e3 << " ms, " << double(rows) / median(wall) / 1e9 << " G tuples/s\n";
        }
      };
      if (direct) {
        run_with(select<direct_addressing>(sum(col<0>)));
      } else {
        run_with(select(sum(col<0>)));
      }
    }
  }
  // Summary: best configuration per (groups, strategy), throughput of AGGREGATE per block.
  std::cout << "\nSELECT g, sum(v) GROUP BY g: " << rows << " rows, " << s.distribution << ", input " << s.input
            << ", " << info.name << "\n";
  std::cout << std::left << std::setw(10) << "groups" << std::setw(18) << "strategy" << std::setw(12) << "config"
            << std::setw(16) << "best Gtuple/s" << std::setw(16) << "median Gtuple/s" << "verified\n";
  for (const auto& [key, entry] : summary) {
    std::ostringstream config;
    config << entry.config;
    std::cout << std::left << std::setw(10) << ("2^" + std::to_string(key.first)) << std::setw(18) << key.second
              << std::setw(12) << config.str() << std::setw(16) << std::fixed << std::setprecision(2) << entry.best
              << std::setw(16) << entry.median << (entry.verified ? "yes" : "NO") << '\n';
  }
  std::cout << "gpuagg-bench: " << (all_verified ? "all results verified" : "VERIFICATION FAILED") << '\n';
  return all_verified ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  settings s;
  CLI::App app{"gpuagg_bench: SELECT g, sum(v) GROUP BY g, measured per block and per query"};
  app.add_option("--rows-log2", s.rows_log2, "log2 of the number of rows");
  app.add_option("--groups-log2", s.groups_log2, "group counts as log2, e.g. 0:28 or 4,10,16");
  app.add_option("--strategies", s.strategies, "shared,independent,workgroup_local,direct");
  app.add_option("--configs", s.configs, "default | sweep | all | 4x512,1x256,...");
  app.add_option("--distribution", s.distribution, "uniform | zipf | heavy | sorted");
  app.add_option("--input", s.input, "device | pageable");
  app.add_option("--key-type", s.key_type, "uint32 | uint64");
  app.add_option("--block-mib", s.block_mib, "block size per column in MiB");
  app.add_option("--reps", s.reps, "measured repetitions after one warm-up");
  app.add_option("--probe-blocks", s.probe_blocks, "blocks measured per configuration (0: all)");
  app.add_flag("!--no-pipelined", s.pipelined, "skip the pipelined whole-query runs");
  app.add_option("--csv", s.csv, "CSV of every measured query");
  app.add_option("--blocks-csv", s.blocks_csv, "CSV of every measured block (search spaces)");
  app.add_option("--seed", s.seed, "input seed");
  app.add_flag("--quick", s.quick, "a small run for tests (2^18 rows, few groups)");
  CLI11_PARSE(app, argc, argv);
  if (s.quick) {
    s.rows_log2 = 18;
    s.groups_log2 = "2,12";
    s.block_mib = 0.25;
    s.reps = 1;
    s.configs = "default";
  }
  try {
    return s.key_type == "uint64" ? run_key_type<std::uint64_t>(s) : run_key_type<std::uint32_t>(s);
  } catch (const gpuagg::error& e) {
    std::cerr << "gpuagg_bench: " << e.what() << '\n';
    return 2;
  }
}
