// tuner_eval: replays recorded thread-configuration search spaces through the tuner, the way
// Rosenfeld et al. 2019 evaluate Algorithm 1 (section 4.2: "we inject the execution runtimes
// measured in Section 3 into our algorithm"), and reports the paper's four metrics for the
// strict-gradient scenario (s = 0) and the plateau scenario (s = 0.06, p = 1.07).
//
// Input: a CSV with (at least) the columns
//   strategy,groups_log2,work_groups_per_cu,work_group_size,block,aggregate_ns
// one row per measured block; columns are found by header name, others are ignored. Each
// (strategy, groups_log2) is one case, a search space of the configurations recorded for it.
//
// Metrics per case (docs/autotuning.md has the details):
//   quality   recorded mean time of the found configuration / that of the best one
//   cost      sum over tuning blocks of t_block / t_optimum, minus the number of tuning blocks
//   overhead  the tuner's own host time / the block time it spent tuning
//   effort    block time spent until convergence / block time of a full evaluation, i.e. of
//             ProcessBlocksWith (same rule, same recorded blocks) on every configuration
//
// The last line is the summary of the s = 0.06 run:
//   tuner-eval: cases=N within_1pct=F worst=F median_effort=F

#include <gpuagg/tuner.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using gpuagg::execution_params;
using gpuagg::strategy_kind;
using gpuagg::tuner_params;

// -------------------------------------------------------------------------------------------------
// Recorded search spaces

/// One case: every recorded block time (seconds, in block order) of every configuration.
struct recorded_space {
  strategy_kind strategy = strategy_kind::shared;
  int groups_log2 = 0;
  std::map<execution_params, std::vector<double>> blocks;
};

struct recording {
  std::map<std::pair<strategy_kind, int>, recorded_space> cases;
  gpuagg::search_space bounds{.max_work_groups_per_cu = 1, .max_work_group_size = 1};
  std::size_t rows = 0;
};

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back().push_back(c);
    }
  }
  for (auto& field : fields) {
    const auto begin = field.find_first_not_of(" \t");
    const auto end = field.find_last_not_of(" \t");
    field = begin == std::string::npos ? std::string{} : field.substr(begin, end - begin + 1);
  }
  return fields;
}

/// Reads a search-space CSV; throws std::runtime_error naming the line on malformed input.
recording read_recording(std::istream& in, const std::string& name, std::optional<strategy_kind> only) {
  std::string line;
  if (!std::getline(in, line)) throw std::runtime_error(name + ": empty file");
  const std::vector<std::string> header = split_csv_line(line);
  const auto column = [&](const std::string& wanted) {
    const auto it = std::find(header.begin(), header.end(), wanted);
    if (it == header.end()) throw std::runtime_error(name + ": no column '" + wanted + "' in the header");
    return static_cast<std::size_t>(it - header.begin());
  };
  const std::size_t strategy_column = column("strategy");
  const std::size_t groups_column = column("groups_log2");
  const std::size_t wgpc_column = column("work_groups_per_cu");
  const std::size_t wgs_column = column("work_group_size");
  const std::size_t block_column = column("block");
  const std::size_t time_column = column("aggregate_ns");
  const std::size_t needed = std::max({strategy_column, groups_column, wgpc_column, wgs_column, block_column,
                                       time_column}) + 1;

  recording result;
  // (case, configuration) -> (block index, seconds), sorted by block below.
  std::map<std::pair<std::pair<strategy_kind, int>, execution_params>, std::vector<std::pair<long, double>>> raw;
  std::size_t line_number = 1;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string> fields = split_csv_line(line);
    const auto where = [&] { return name + ":" + std::to_string(line_number) + ": "; };
    if (fields.size() < needed) throw std::runtime_error(where() + "too few columns");
    const auto strategy = gpuagg::detail::parse_strategy(fields[strategy_column]);
    if (!strategy) throw std::runtime_error(where() + "unknown strategy '" + fields[strategy_column] + "'");
    try {
      const int groups_log2 = std::stoi(fields[groups_column]);
      const auto wgpc = static_cast<std::uint32_t>(std::stoul(fields[wgpc_column]));
      const auto wgs = static_cast<std::uint32_t>(std::stoul(fields[wgs_column]));
      const long block = std::stol(fields[block_column]);
      const double nanoseconds = std::stod(fields[time_column]);
      if (wgpc == 0 || wgs == 0 || !(nanoseconds > 0.0)) throw std::invalid_argument("non-positive value");
      ++result.rows;
      if (only && *strategy != *only) continue;
      raw[{{*strategy, groups_log2}, execution_params{*strategy, {wgpc, wgs}}}].emplace_back(block,
                                                                                          nanoseconds * 1e-9);
      result.bounds.max_work_groups_per_cu = std::max(result.bounds.max_work_groups_per_cu, wgpc);
      result.bounds.max_work_group_size = std::max(result.bounds.max_work_group_size, wgs);
    } catch (const std::logic_error& e) {
      throw std::runtime_error(where() + "bad number (" + e.what() + ")");
    }
  }
  for (auto& [key, blocks] : raw) {
    std::stable_sort(blocks.begin(), blocks.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    recorded_space& space = result.cases[key.first];
    space.strategy = key.first.first;
    space.groups_log2 = key.first.second;
    std::vector<double>& times = space.blocks[key.second];
    for (const auto& [block, seconds] : blocks) times.push_back(seconds);
  }
  return result;
}

/// Feeds recorded block times: each configuration's blocks in recorded order, cycling when the
/// tuner asks for more than were recorded.
class replay {
 public:
  explicit replay(const recorded_space& space) : space_(space) {}
  double operator()(const execution_params& params) {
    const std::vector<double>& times = space_.blocks.at(params);
    return times[next_[params]++ % times.size()];
  }

 private:
  const recorded_space& space_;
  std::map<execution_params, std::size_t> next_;
};

double median_of(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : 0.5 * (values[middle - 1] + values[middle]);
}

// -------------------------------------------------------------------------------------------------
// Evaluation

struct full_evaluation {
  execution_params optimum{};
  double optimum_seconds = 0.0;  ///< recorded mean of the best configuration
  std::size_t blocks = 0;        ///< ProcessBlocksWith on every configuration
  double seconds = 0.0;
};

/// The reference point of effort: every configuration measured by the same ProcessBlocksWith
/// rule the tuner uses, on the same recorded blocks.
full_evaluation evaluate_fully(const recorded_space& space, const tuner_params& params) {
  full_evaluation result;
  result.optimum_seconds = std::numeric_limits<double>::infinity();
  for (const auto& [config, recorded] : space.blocks) {
    const std::vector<double>& times = recorded;  // a plain reference: lambdas may capture it
    const double mean = gpuagg::detail::mean_of(times);
    if (mean < result.optimum_seconds) {
      result.optimum_seconds = mean;
      result.optimum = config;
    }
    std::size_t next = 0;
    const auto m = gpuagg::detail::process_blocks_with(params, [&]() -> std::optional<double> {
      return times[next++ % times.size()];
    });
    result.blocks += m.blocks;
    for (double seconds : m.block_seconds) result.seconds += seconds;
  }
  return result;
}

struct case_result {
  std::string mode;
  const recorded_space* space = nullptr;
  gpuagg::tuning_report report;
  full_evaluation full;
  double found_seconds = 0.0;  ///< recorded mean of the winner
  double quality = 0.0;
  double cost = 0.0;
  double overhead = 0.0;
  double effort = 0.0;
};

/// One replayed search; GPUAGG_LOG shows its decisions.
template <tuner_params Params>
case_result evaluate(std::string mode, const recorded_space& space, const gpuagg::search_space& bounds,
                     const full_evaluation& full, bool alternate_start) {
  const gpuagg::tuner<Params> tuner(bounds, gpuagg::tuning_cache{});
  replay blocks(space);
  const auto feasible = [&space](const execution_params& p) { return space.blocks.contains(p); };
  std::vector<execution_params> initial{gpuagg::default_initial_config(space.strategy, bounds)};
  if (alternate_start) {
    // Beyond the paper: a second start with the same threads per compute unit in 32-wide work
    // groups, for spaces whose optimum lies in another basin (section 3.3: equal thread counts
    // of different shapes).
    execution_params alternate = initial.front();
    alternate.config = {static_cast<std::uint32_t>(alternate.config.threads_per_cu() / 32), 32};
    if (feasible(alternate) && !(alternate == initial.front())) initial.push_back(alternate);
  }
  case_result result;
  result.mode = std::move(mode);
  result.space = &space;
  result.full = full;
  result.report = tuner.search(std::ref(blocks), std::numeric_limits<std::size_t>::max(), feasible, initial);
  if (result.report.winner) result.found_seconds = gpuagg::detail::mean_of(space.blocks.at(*result.report.winner));
  result.quality = result.found_seconds / full.optimum_seconds;
  result.cost = result.report.cost(full.optimum_seconds);
  result.overhead = result.report.overhead();
  result.effort = full.seconds > 0.0 ? result.report.exploration_seconds / full.seconds : 0.0;
  return result;
}

struct summary {
  std::size_t cases = 0;
  double optimum_found = 0.0;  ///< fraction with quality 1
  double within_1pct = 0.0;    ///< fraction with quality <= 1.01
  double worst = 0.0;          ///< largest quality
  double median_cost = 0.0;
  double median_overhead = 0.0;
  double median_effort = 0.0;
  double mean_effort = 0.0;
};

summary summarize(const std::vector<case_result>& results) {
  summary s;
  std::vector<double> costs, overheads, efforts;
  for (const case_result& r : results) {
    ++s.cases;
    s.optimum_found += r.quality <= 1.0 + 1e-12;
    s.within_1pct += r.quality <= 1.01;
    s.worst = std::max(s.worst, r.quality);
    costs.push_back(r.cost);
    overheads.push_back(r.overhead);
    efforts.push_back(r.effort);
    s.mean_effort += r.effort;
  }
  if (s.cases > 0) {
    s.optimum_found /= static_cast<double>(s.cases);
    s.within_1pct /= static_cast<double>(s.cases);
    s.mean_effort /= static_cast<double>(s.cases);
  }
  s.median_cost = median_of(costs);
  s.median_overhead = median_of(overheads);
  s.median_effort = median_of(efforts);
  return s;
}

void write_results(std::ostream& out, const std::vector<case_result>& results, bool header) {
  if (header) {
    out << "mode,strategy,groups_log2,configurations,tried,converged,exploration_blocks,winner_strategy,"
         "winner_work_groups_per_cu,winner_work_group_size,found_ns,optimum_work_groups_per_cu,"
         "optimum_work_group_size,optimum_ns,quality,cost_blocks,overhead,effort,full_evaluation_blocks,"
         "host_ns\n";
  }
  for (const case_result& r : results) {
    const execution_params winner = r.report.winner.value_or(execution_params{});
    char numbers[256];
    std::snprintf(numbers, sizeof numbers, "%.3f,%u,%u,%.3f,%.6f,%.4f,%.6g,%.6g,%zu,%.0f",
                  r.found_seconds * 1e9, r.full.optimum.config.work_groups_per_cu,
                  r.full.optimum.config.work_group_size, r.full.optimum_seconds * 1e9, r.quality, r.cost,
                  r.overhead, r.effort, r.full.blocks, r.report.host_seconds * 1e9);
    out << '"' << r.mode << "\"," << r.space->strategy << ',' << r.space->groups_log2 << ',' << r.space->blocks.size()
        << ',' << r.report.tried.size() << ',' << (r.report.converged ? 1 : 0) << ','
        << r.report.exploration_blocks << ',' << winner.strategy << ',' << winner.config.work_groups_per_cu << ','
        << winner.config.work_group_size << ',' << numbers << '\n';
  }
}

// -------------------------------------------------------------------------------------------------
// Synthetic spaces (--synthetic): shaped like section 3.5 describes them, nearly convex in log2
// coordinates, with plateaus, a few second minima, per-configuration jitter, and outliers at the
// beginning of some measurements (section 3.6).

void write_synthetic(std::ostream& out, unsigned seed) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::normal_distribution<double> noise(0.0, 0.003);
  out << "device,strategy,groups_log2,work_groups_per_cu,work_group_size,block,aggregate_ns\n";
  constexpr int blocks_per_config = 32;
  for (int groups_log2 = 0; groups_log2 <= 28; groups_log2 += 2) {
    for (strategy_kind strategy : gpuagg::all_strategies) {
      // Which points exist: local memory holds at most 2^12 groups; private tables shrink the
      // number of threads that fit; everything runs for SHARED.
      if (strategy == strategy_kind::workgroup_local && groups_log2 > 12) continue;
      if (strategy == strategy_kind::independent && groups_log2 > 14) continue;
      const int thread_log2_cap = 24 - groups_log2;  // INDEPENDENT: log2(groups per CU x size) cap
      // Optimum in log2 coordinates, curvature per axis and a little coupling (still convex).
      const double x0 = 1.0 + 7.0 * uniform(random);
      const double y0 = 4.0 + 5.0 * uniform(random);
      const double kx = 0.02 + 0.08 * uniform(random);
      const double ky = 0.02 + 0.08 * uniform(random);
      const double kxy = 0.5 * std::sqrt(kx * ky) * (uniform(random) - 0.5);
      const double base_ns = 20'000.0 * std::pow(2.0, 0.2 * groups_log2) * (1.0 + uniform(random));
      const double plateau = uniform(random) < 0.5 ? 0.005 + 0.025 * uniform(random) : 0.0;
      const bool second_minimum = uniform(random) < 0.25;
      const double x1 = 10.0 * uniform(random), y1 = 10.0 * uniform(random);
      const double depth1 = 0.98 + 0.07 * uniform(random);
      for (int x = 0; x <= 10; ++x) {
        for (int y = 0; y <= 10; ++y) {
          if (strategy == strategy_kind::independent && x + y > thread_log2_cap) continue;
          const double dx = x - x0, dy = y - y0;
          double shape = 1.0 + kx * dx * dx + ky * dy * dy + kxy * dx * dy;
          if (second_minimum) {
            const double ex = x - x1, ey = y - y1;
            shape = std::min(shape, depth1 * (1.0 + 0.08 * (ex * ex + ey * ey)));
          }
          shape = std::max(shape, 1.0 + plateau);        // a flat region around the minimum
          shape *= 1.0 + 0.008 * (uniform(random) - 0.5);  // per-configuration jitter
          const bool leading_outlier = uniform(random) < 0.2;
          for (int block = 0; block < blocks_per_config; ++block) {
            double ns = base_ns * shape * (1.0 + noise(random));
            if (block == 0 && leading_outlier) ns *= 1.5 + 1.5 * uniform(random);
            out << "synthetic," << strategy << ',' << groups_log2 << ',' << (1u << x) << ',' << (1u << y) << ','
                << block << ',' << static_cast<long long>(std::llround(ns)) << '\n';
          }
        }
      }
    }
  }
}

void print_summary_row(const char* mode, const summary& s) {
  std::printf("%-16s %6zu %9.3f %12.3f %8.4f %12.2f %16.5f %14.5f %12.5f\n", mode, s.cases, s.optimum_found,
              s.within_1pct, s.worst, s.median_cost, s.median_overhead, s.median_effort, s.mean_effort);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tuner_eval: replay recorded search spaces through the gpuagg tuner (Rosenfeld et al. 2019, "
               "section 4.2)"};
  std::string input;
  std::string out_file;
  std::string strategy_name;
  std::string dump_file;
  bool synthetic = false;
  bool verbose = false;
  bool alternate_start = false;
  unsigned seed = 2019;
  app.add_option("--input", input, "recorded search space CSV (strategy,groups_log2,work_groups_per_cu,"
                                   "work_group_size,block,aggregate_ns)");
  app.add_option("--out", out_file, "write one CSV row per case and scenario here");
  app.add_option("--strategy", strategy_name, "only this strategy (SHARED, INDEPENDENT, WORKGROUPLOCAL)");
  app.add_flag("--synthetic", synthetic, "generate synthetic search spaces instead of reading --input");
  app.add_option("--seed", seed, "seed of --synthetic")->capture_default_str();
  app.add_option("--dump-synthetic", dump_file, "also write the synthetic CSV here");
  app.add_flag("--cases", verbose, "print one line per case");
  app.add_flag("--alternate-start", alternate_start,
               "also start each search from the same threads per compute unit in 32-wide work groups");
  CLI11_PARSE(app, argc, argv);

  if (input.empty() == !synthetic) {
    std::cerr << "tuner_eval: give exactly one of --input FILE and --synthetic\n";
    return 2;
  }
  std::optional<strategy_kind> only;
  if (!strategy_name.empty()) {
    only = gpuagg::detail::parse_strategy(strategy_name);
    if (!only) {
      std::cerr << "tuner_eval: unknown strategy '" << strategy_name << "'\n";
      return 2;
    }
  }

  recording data;
  try {
    if (synthetic) {
      std::stringstream csv;
      write_synthetic(csv, seed);
      if (!dump_file.empty()) {
        std::ofstream dump(dump_file);
        dump << csv.str();
        if (!dump) throw std::runtime_error("cannot write " + dump_file);
      }
      data = read_recording(csv, "synthetic", only);
    } else {
      std::ifstream in(input);
      if (!in) throw std::runtime_error("cannot open " + input);
      data = read_recording(in, input, only);
    }
  } catch (const std::exception& e) {
    std::cerr << "tuner_eval: " << e.what() << '\n';
    return 2;
  }

  // Table 1's two scenarios. The full evaluation uses the same ProcessBlocksWith rule.
  constexpr tuner_params strict{.similarity = 0.0, .use_cache = false};
  constexpr tuner_params plateau{.use_cache = false};
  std::vector<case_result> strict_results;
  std::vector<case_result> plateau_results;
  for (const auto& [key, space] : data.cases) {
    const full_evaluation full = evaluate_fully(space, plateau);
    strict_results.push_back(evaluate<strict>("s=0", space, data.bounds, full, alternate_start));
    plateau_results.push_back(evaluate<plateau>("s=0.06,p=1.07", space, data.bounds, full, alternate_start));
  }

  if (!out_file.empty()) {
    std::ofstream out(out_file);
    write_results(out, strict_results, true);
    write_results(out, plateau_results, false);
    if (!out) {
      std::cerr << "tuner_eval: cannot write " << out_file << '\n';
      return 2;
    }
  }

  std::printf("tuner_eval: %zu rows, %zu cases (strategy x groups_log2), bounds %ux%u\n", data.rows,
              data.cases.size(), gpuagg::detail::floor_pow2(data.bounds.max_work_groups_per_cu),
              gpuagg::detail::floor_pow2(data.bounds.max_work_group_size));
  if (verbose) {
    std::printf("%-15s %-15s %4s %5s %6s %-24s %9s %9s %9s %9s\n", "mode", "strategy", "g", "tried", "blocks",
                "winner", "quality", "cost", "overhead", "effort");
    for (const auto* results : {&strict_results, &plateau_results}) {
      for (const case_result& r : *results) {
        std::ostringstream winner;
        if (r.report.winner) winner << *r.report.winner;
        std::ostringstream strategy;
        strategy << r.space->strategy;
        std::printf("%-15s %-15s %4d %5zu %6zu %-24s %9.4f %9.2f %9.5f %9.5f\n", r.mode.c_str(),
                    strategy.str().c_str(), r.space->groups_log2, r.report.tried.size(), r.report.exploration_blocks,
                    winner.str().c_str(), r.quality, r.cost, r.overhead, r.effort);
      }
    }
  }
  std::printf("%-16s %6s %9s %12s %8s %12s %16s %14s %12s\n", "scenario", "cases", "optimum", "within_1pct",
              "worst", "median_cost", "median_overhead", "median_effort", "mean_effort");
  const summary strict_summary = summarize(strict_results);
  const summary plateau_summary = summarize(plateau_results);
  print_summary_row("s=0", strict_summary);
  print_summary_row("s=0.06,p=1.07", plateau_summary);
  std::printf("tuner-eval: cases=%zu within_1pct=%.4f worst=%.4f median_effort=%.4f\n", plateau_summary.cases,
              plateau_summary.within_1pct, plateau_summary.worst, plateau_summary.median_effort);
  return plateau_summary.cases > 0 ? 0 : 1;
}
