// tuner_eval: replays recorded thread-configuration search spaces through the tuner, the way
// Rosenfeld et al. 2019 evaluate Algorithm 1 (section 4.2: "we inject the execution runtimes
// measured in Section 3 into our algorithm"), and reports the paper's four metrics for the
// paper's two scenarios (Table 1: s = 0, and s = 0.06 with p = 1.07, both Algorithm 1 exactly)
// and for the default tuner (the refined search, docs/autotuning.md).
//
// Input: a CSV with (at least) the columns
//   strategy,groups_log2,work_groups_per_cu,work_group_size,block,aggregate_ns
// one row per measured block; columns are found by header name, others are ignored. Each
// (strategy, groups_log2) is one case, a search space of the configurations recorded for it
// (the issue's "per (strategy, cardinality)"; section 4.1: "Given a group cardinality and a
// parallelization strategy, our algorithm explores the thread configuration search space").
//
// Metrics per case (docs/autotuning.md has the details):
//   quality   recorded mean time of the found configuration / that of the best one
//   cost      sum over tuning blocks of t_block / t_optimum, minus the number of tuning blocks
//   overhead  the tuner's own host time / the block time it spent tuning
//   effort    block time spent until convergence / block time of a full evaluation of the
//             search space. Two references (--reference), the same for every tuner variant:
//             section3 (the default): every configuration processes the whole input, as
//               section 3 measures the space (--query-blocks blocks, 32: the paper's 1 GB in
//               32 blocks; our recordings are that input), at its recorded mean;
//             strict: the paper's ProcessBlocksWith (Table 1's v_max, b_max, 3-block window)
//               on every configuration, on the same recorded blocks.
//             Both medians are printed; docs/autotuning.md says why section3 is the paper's.
//
// Replay feeds each configuration's recorded blocks in order. Past the last recorded block it
// cycles over the later half of them: the start-up outliers of a measurement (section 3.6) are
// not repeated mid-measurement. --wrap-to-start restores the earlier rule (cycle from block 0).
//
// Besides the per-case table it reports each scenario on two halves of the recorded group
// counts (alternating, for a held-out check), all strategies at once per group count (section
// 4.1, the live setting), a warm cache, and a lower bound on effort for any local search.
//
// The last line is the summary of the default tuner (tuner_params{}), effort against the
// --reference (section3 unless asked), after a line with both references' medians:
//   tuner-eval: cases=N within_1pct=F worst=F median_effort=F
// --held-out FILE replays recordings on which no parameter of the tuner was chosen, reported on
// a line of their own (tuner-eval held-out: ...): the in-sample figures above are the ones the
// parameters were fitted to. --min-within-1pct, --max-worst and --max-median-effort make the
// exit status fail when the in-sample summary falls below the figures the docs state.

#include <gpuagg/tuner.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

namespace {

using gpuagg::execution_params;
using gpuagg::strategy_kind;
using gpuagg::tuner_params;

// -------------------------------------------------------------------------------------------------
// Recorded search spaces

/// One case: every recorded block time (seconds, in block order) of every configuration. With
/// `all_strategies`, the configurations of every strategy at one group count (section 4.1).
struct recorded_space {
  strategy_kind strategy = strategy_kind::shared;
  int groups_log2 = 0;
  bool all_strategies = false;
  char half = 'A';  ///< which half of the recorded group counts (alternating): held-out checks
  std::map<execution_params, std::vector<double>> blocks;

  std::string label() const {
    std::ostringstream out;
    if (all_strategies) out << "ALL"; else out << strategy;
    return out.str();
  }
  /// The section 4.1 initial configuration of each strategy recorded here.
  std::vector<execution_params> initial_configs(const gpuagg::search_space& bounds) const {
    std::vector<execution_params> result;
    for (strategy_kind kind : gpuagg::all_strategies) {
      const bool recorded = std::any_of(blocks.begin(), blocks.end(),
                                        [kind](const auto& entry) { return entry.first.strategy == kind; });
      if (recorded && (all_strategies || kind == strategy)) result.push_back(gpuagg::default_initial_config(kind, bounds));
    }
    return result;
  }
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
recording read_recording(std::istream& in, const std::string& name, std::optional<strategy_kind> only,
                         std::optional<int> only_groups = std::nullopt) {
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
      if ((only && *strategy != *only) || (only_groups && groups_log2 != *only_groups)) continue;
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

/// Past the recorded blocks: cycle from block 0 (the earlier rule) or over the later half.
enum class wrap_rule { later_half, from_start };

/// Feeds recorded block times: each configuration's blocks in recorded order; when the tuner
/// asks for more than were recorded, it cycles over the later half of them (or, with
/// wrap_rule::from_start, from block 0, which repeats the start-up outliers mid-measurement).
class replay {
 public:
  replay(const recorded_space& space, wrap_rule wrap) : space_(space), wrap_(wrap) {}
  double operator()(const execution_params& params) {
    const std::vector<double>& times = space_.blocks.at(params);
    const std::size_t index = next_[params]++;
    const std::size_t recorded = times.size();
    if (index < recorded) return times[index];
    if (wrap_ == wrap_rule::from_start) return times[index % recorded];
    const std::size_t first = recorded / 2;
    return times[first + (index - recorded) % (recorded - first)];
  }

 private:
  const recorded_space& space_;
  wrap_rule wrap_;
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

/// Which full evaluation effort is a fraction of (the file comment).
enum class effort_reference { section3, strict };

struct full_evaluation {
  execution_params optimum{};
  double optimum_seconds = 0.0;  ///< recorded mean of the best configuration
  std::size_t blocks = 0;        ///< ProcessBlocksWith on every configuration
  double strict_seconds = 0.0;   ///< ProcessBlocksWith on every configuration
  double section3_seconds = 0.0; ///< every configuration on the whole input (query_blocks blocks)
  double seconds = 0.0;          ///< the chosen reference: one of the two above
};

/// The reference points of effort. strict: every configuration measured by the paper's
/// ProcessBlocksWith (Table 1), on the same recorded blocks and replay rule as the tuner.
/// section3: every configuration on the whole input of `query_blocks` blocks at its recorded
/// mean (with every block of the input recorded, their sum: the time the recording took). Neither
/// depends on the tuner variant, so efforts compare across variants.
full_evaluation evaluate_fully(const recorded_space& space, wrap_rule wrap, effort_reference reference,
                               unsigned query_blocks) {
  full_evaluation result;
  result.optimum_seconds = std::numeric_limits<double>::infinity();
  replay blocks(space, wrap);
  for (const auto& [config, recorded] : space.blocks) {
    const double mean = gpuagg::detail::mean_of(recorded);
    if (mean < result.optimum_seconds) {
      result.optimum_seconds = mean;
      result.optimum = config;
    }
    const auto m = gpuagg::detail::process_blocks_with(gpuagg::paper_params, [&, c = config]() -> std::optional<double> {
      return blocks(c);
    });
    result.blocks += m.blocks;
    for (double seconds : m.block_seconds) result.strict_seconds += seconds;
    result.section3_seconds += mean * static_cast<double>(query_blocks);
  }
  result.seconds = reference == effort_reference::section3 ? result.section3_seconds : result.strict_seconds;
  return result;
}

/// How an oracle bound counts (oracle_effort): blocks per configuration on the path and per
/// neighbour checked at its end, and where the path starts.
struct oracle_rule {
  double path_blocks = 3.0;       ///< each configuration on the path, the target included
  double neighbour_blocks = 3.0;  ///< each of the target's paper neighbours; 0: none checked
  bool perfect_start = false;     ///< start at the target itself (no path): the cost of checking it
};

/// A lower bound on effort for a local search from the same start: the cheapest chain of
/// adjacent recorded configurations (axis or diagonal steps) from the start to any
/// configuration within 1% of the optimum, each measured on `path_blocks` blocks at its recorded
/// mean, plus that configuration's 4 paper neighbours on `neighbour_blocks` blocks each (the
/// least a search must measure to know it stands in a minimum). Oracle knowledge: no real search
/// with measurements that long does better.
double oracle_effort(const recorded_space& space, const gpuagg::search_space& bounds, const full_evaluation& full,
                     const oracle_rule& rule) {
  std::map<execution_params, double> mean;
  for (const auto& [config, recorded] : space.blocks) mean[config] = gpuagg::detail::mean_of(recorded);
  std::map<execution_params, double> cost;  // Dijkstra from every initial configuration
  std::set<std::pair<double, execution_params>> frontier;
  if (rule.perfect_start) {
    for (const auto& [config, m] : mean) cost[config] = rule.path_blocks * m;
  }
  for (const execution_params& requested : rule.perfect_start ? std::vector<execution_params>{}
                                                                : space.initial_configs(bounds)) {
    // The nearest recorded point, as the tuner's feasible start finds it.
    std::deque<execution_params> queue{bounds.clamp(requested)};
    std::set<execution_params> seen{queue.front()};
    while (!queue.empty()) {
      const execution_params candidate = queue.front();
      queue.pop_front();
      if (mean.contains(candidate)) {
        const double c = rule.path_blocks * mean.at(candidate);
        if (!cost.contains(candidate) || c < cost.at(candidate)) {
          cost[candidate] = c;
          frontier.insert({c, candidate});
        }
        break;
      }
      for (const execution_params& next : bounds.neighbours(candidate)) {
        if (seen.insert(next).second) queue.push_back(next);
      }
    }
  }
  while (!frontier.empty()) {
    const auto [c, at] = *frontier.begin();
    frontier.erase(frontier.begin());
    if (c > cost.at(at)) continue;
    for (const execution_params& next : bounds.neighbours(at, 2, true)) {
      if (!mean.contains(next)) continue;
      const double through = c + rule.path_blocks * mean.at(next);
      if (!cost.contains(next) || through < cost.at(next)) {
        if (cost.contains(next)) frontier.erase({cost.at(next), next});
        cost[next] = through;
        frontier.insert({through, next});
      }
    }
  }
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [config, reach] : cost) {
    if (mean.at(config) > 1.01 * full.optimum_seconds) continue;
    double total = reach;
    for (const execution_params& next : bounds.neighbours(config)) {
      if (mean.contains(next)) total += rule.neighbour_blocks * mean.at(next);
    }
    best = std::min(best, total);
  }
  return full.seconds > 0.0 ? best / full.seconds : 0.0;
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
  double effort = 0.0;           ///< against the chosen reference (full.seconds)
  double effort_strict = 0.0;    ///< against full.strict_seconds
  double effort_section3 = 0.0;  ///< against full.section3_seconds
};

struct replay_options {
  wrap_rule wrap = wrap_rule::later_half;
  bool alternate_start = false;
  std::map<strategy_kind, gpuagg::launch_config> starts;  ///< replaces a strategy's initial configuration
  effort_reference reference = effort_reference::section3;
  unsigned query_blocks = 32;  ///< blocks of the whole input (section3's reference)
};

/// A cache shared by a sequence of replayed queries (the neighbouring-entry scenario).
struct replay_cache {
  gpuagg::tuning_cache cache;
  std::string query;  ///< the query signature of the tuning_key
};

/// One replayed search; GPUAGG_LOG shows its decisions. The parameters are a run-time value
/// here (detail::tune is what every tuner<Params> runs), so variants need no instantiation each.
case_result evaluate(std::string mode, const tuner_params& params, const recorded_space& space,
                     const gpuagg::search_space& bounds, const full_evaluation& full, const replay_options& options,
                     const replay_cache* shared_cache = nullptr) {
  const gpuagg::tuning_cache cache = shared_cache ? shared_cache->cache : gpuagg::tuning_cache{};
  std::ostream* log = gpuagg::detail::tuner_log_requested() ? &std::cerr : nullptr;
  std::optional<gpuagg::tuning_key> key;
  if (shared_cache) key = gpuagg::tuning_key{"replay", "recorded", shared_cache->query, "-", space.groups_log2};
  replay blocks(space, options.wrap);
  const auto feasible = [&space](const execution_params& p) { return space.blocks.contains(p); };
  std::vector<execution_params> initial = space.initial_configs(bounds);
  for (execution_params& start : initial) {
    if (const auto it = options.starts.find(start.strategy); it != options.starts.end()) start.config = it->second;
  }
  if (options.alternate_start && !space.all_strategies) {
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
  result.report = gpuagg::detail::tune(params, bounds, cache, log, std::ref(blocks),
                                       std::numeric_limits<std::size_t>::max(), feasible, initial, key);
  if (result.report.winner) result.found_seconds = gpuagg::detail::mean_of(space.blocks.at(*result.report.winner));
  result.quality = result.found_seconds / full.optimum_seconds;
  result.cost = result.report.cost(full.optimum_seconds);
  result.overhead = result.report.overhead();
  const auto fraction = [&](double reference) {
    return reference > 0.0 ? result.report.exploration_seconds / reference : 0.0;
  };
  result.effort = fraction(full.seconds);
  result.effort_strict = fraction(full.strict_seconds);
  result.effort_section3 = fraction(full.section3_seconds);
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
  double median_effort_strict = 0.0;
  double median_effort_section3 = 0.0;
  double mean_effort = 0.0;
  double median_blocks = 0.0;  ///< exploration blocks until convergence
  std::size_t max_blocks = 0;
};

/// The summary over the results whose half is `half` ('*': all).
summary summarize(const std::vector<case_result>& results, char half = '*') {
  summary s;
  std::vector<double> costs, overheads, efforts, efforts_strict, efforts_section3, blocks;
  for (const case_result& r : results) {
    if (half != '*' && r.space->half != half) continue;
    ++s.cases;
    s.optimum_found += r.quality <= 1.0 + 1e-12;
    s.within_1pct += r.quality <= 1.01;
    s.worst = std::max(s.worst, r.quality);
    costs.push_back(r.cost);
    overheads.push_back(r.overhead);
    efforts.push_back(r.effort);
    efforts_strict.push_back(r.effort_strict);
    efforts_section3.push_back(r.effort_section3);
    blocks.push_back(static_cast<double>(r.report.exploration_blocks));
    s.max_blocks = std::max(s.max_blocks, r.report.exploration_blocks);
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
  s.median_effort_strict = median_of(efforts_strict);
  s.median_effort_section3 = median_of(efforts_section3);
  s.median_blocks = median_of(blocks);
  return s;
}

void write_results(std::ostream& out, const std::vector<case_result>& results, bool header) {
  if (header) {
    out << "mode,strategy,groups_log2,half,configurations,tried,rejected_early,converged,exploration_blocks,"
           "winner_strategy,winner_work_groups_per_cu,winner_work_group_size,found_ns,optimum_strategy,"
           "optimum_work_groups_per_cu,optimum_work_group_size,optimum_ns,quality,cost_blocks,overhead,effort,"
           "full_evaluation_blocks,host_ns\n";
  }
  for (const case_result& r : results) {
    const execution_params winner = r.report.winner.value_or(execution_params{});
    std::size_t rejected = 0;
    for (const auto& tried : r.report.tried) rejected += tried.rejected;
    char numbers[256];
    std::snprintf(numbers, sizeof numbers, "%u,%u,%.3f,%.6f,%.4f,%.6g,%.6g,%zu,%.0f",
                  r.full.optimum.config.work_groups_per_cu, r.full.optimum.config.work_group_size,
                  r.full.optimum_seconds * 1e9, r.quality, r.cost, r.overhead, r.effort, r.full.blocks,
                  r.report.host_seconds * 1e9);
    char found[32];
    std::snprintf(found, sizeof found, "%.3f", r.found_seconds * 1e9);
    out << '"' << r.mode << "\"," << r.space->label() << ',' << r.space->groups_log2 << ',' << r.space->half << ','
        << r.space->blocks.size() << ',' << r.report.tried.size() << ',' << rejected << ','
        << (r.report.converged ? 1 : 0) << ',' << r.report.exploration_blocks << ',' << winner.strategy << ','
        << winner.config.work_groups_per_cu << ',' << winner.config.work_group_size << ',' << found << ','
        << r.full.optimum.strategy << ',' << numbers << '\n';
  }
}

/// The tuner variants replayed: the paper's two scenarios (Table 1, Algorithm 1 exactly) and the
/// default tuner. No cache: every case is a cold start.
constexpr tuner_params paper_strict = [] {
  tuner_params p = gpuagg::strict_gradient_params;
  p.cache.use_cache = false;
  return p;
}();
constexpr tuner_params paper_plateau = [] {
  tuner_params p = gpuagg::paper_params;
  p.cache.use_cache = false;
  return p;
}();
constexpr tuner_params default_tuner = [] {
  tuner_params p{};
  p.cache.use_cache = false;
  return p;
}();

/// A named variant of the tuner's parameters (--ablation, --variant).
struct variant {
  std::string name;
  tuner_params params;
  std::map<strategy_kind, gpuagg::launch_config> starts;  ///< start_<strategy>=GxS
};

/// Applies "key=value,key=value,..." to `params`; `base=paper|strict|default` first resets them.
/// Throws std::invalid_argument naming what it did not understand.
tuner_params parse_variant(const std::string& spec, std::map<strategy_kind, gpuagg::launch_config>* starts = nullptr) {
  tuner_params params{};
  std::istringstream fields(spec);
  std::string field;
  while (std::getline(fields, field, ',')) {
    if (field.empty()) continue;
    const auto equals = field.find('=');
    if (equals == std::string::npos) throw std::invalid_argument("'" + field + "' is not key=value");
    const std::string key = field.substr(0, equals);
    const std::string value = field.substr(equals + 1);
    const auto number = [&] { return std::stod(value); };
    const auto flag = [&] { return value == "1" || value == "true" || value == "on"; };
    if (key == "base") {
      if (value == "paper") params = gpuagg::paper_params;
      else if (value == "strict") params = gpuagg::strict_gradient_params;
      else if (value == "default") params = tuner_params{};
      else throw std::invalid_argument("base must be paper, strict or default");
    } else if (key == "s") params.search.similarity = number();
    else if (key == "p") params.search.prune = number();
    else if (key == "v_max") params.measurement.max_variation = number();
    else if (key == "b_max") params.measurement.max_blocks = static_cast<unsigned>(number());
    else if (key == "window") params.measurement.initial_blocks = static_cast<unsigned>(number());
    else if (key == "diagonal") params.search.diagonal_neighbours = flag();
    else if (key == "stride") params.search.coarse_stride = static_cast<unsigned>(number());
    else if (key == "noise") params.search.noise_similarity = number();
    else if (key == "reject") params.measurement.early_rejection = number();
    else if (key == "reject_blocks") params.measurement.rejection_blocks = static_cast<unsigned>(number());
    else if (key == "paired") params.measurement.paired_rejection = number();
    else if (key == "first_block") params.measurement.first_block_rejection = number();
    else if (key == "quiet_window") params.measurement.quiet_window = static_cast<unsigned>(number());
    else if (key == "quiet_noise") params.measurement.quiet_noise = number();
    else if (key == "scan") params.search.scan_stride = static_cast<unsigned>(number());
    else if (key == "restart") params.search.restart_unpruned = number() != 0.0;
    else if (key.starts_with("start_") && starts) {
      const auto strategy = gpuagg::detail::parse_strategy(key.substr(6));
      const auto x = value.find('x');
      if (!strategy || x == std::string::npos) throw std::invalid_argument("start_<strategy>=GxS");
      (*starts)[*strategy] = {static_cast<std::uint32_t>(std::stoul(value.substr(0, x))),
                              static_cast<std::uint32_t>(std::stoul(value.substr(x + 1)))};
    }
    else throw std::invalid_argument("unknown key '" + key + "'");
  }
  params.cache.use_cache = false;
  if (!params.valid()) throw std::invalid_argument("'" + spec + "' gives invalid parameters");
  return params;
}

/// Each extension alone on top of Algorithm 1, and the refined search without each one.
std::vector<variant> ablation_variants() {
  return {
      {"paper + diagonal", parse_variant("base=paper,diagonal=1"), {}},
      {"paper + coarse stride", parse_variant("base=paper,stride=4"), {}},
      {"paper + noise s'", parse_variant("base=paper,noise=0.5906"), {}},
      {"paper + rejection", parse_variant("base=paper,reject=1.05"), {}},
      {"paper + paired", parse_variant("base=paper,paired=1.01"), {}},
      {"paper + first block", parse_variant("base=paper,first_block=2"), {}},
      {"paper + quiet window", parse_variant("base=paper,quiet_window=2"), {}},
      {"paper + scan", parse_variant("base=paper,scan=4"), {}},
      {"paper + restart unpruned", parse_variant("base=paper,restart=1"), {}},
      {"default - diagonal", parse_variant("diagonal=0"), {}},
      {"default - coarse stride", parse_variant("stride=2"), {}},
      {"default - noise s'", parse_variant("noise=0"), {}},
      {"default - rejection", parse_variant("reject=0"), {}},
      {"default - paired", parse_variant("paired=0"), {}},
      {"default - first block", parse_variant("first_block=0"), {}},
      {"default - quiet window", parse_variant("quiet_window=0"), {}},
      {"default - all three new", parse_variant("paired=0,first_block=0,quiet_window=0"), {}},
      {"default - scan", parse_variant("scan=0"), {}},
      {"default - restart unpruned", parse_variant("restart=0"), {}},
      {"default - scan, restart", parse_variant("scan=0,restart=0"), {}},
  };
}

/// Replays every variant on every space; one list of results per variant.
std::vector<std::vector<case_result>> replay_variants(const std::vector<variant>& variants,
                                                      const std::vector<const recorded_space*>& spaces,
                                                      const gpuagg::search_space& bounds,
                                                      const replay_options& options) {
  std::vector<std::vector<case_result>> out(variants.size());
  for (const recorded_space* space : spaces) {
    const full_evaluation full = evaluate_fully(*space, options.wrap, options.reference, options.query_blocks);
    for (std::size_t i = 0; i < variants.size(); ++i) {
      replay_options with_starts = options;
      with_starts.starts = variants[i].starts;
      out[i].push_back(evaluate(variants[i].name, variants[i].params, *space, bounds, full, with_starts));
    }
  }
  return out;
}

struct scenario_results {
  std::vector<case_result> strict, plateau, refined;
};

scenario_results replay_all(const std::vector<const recorded_space*>& spaces, const gpuagg::search_space& bounds,
                            const replay_options& options) {
  scenario_results out;
  for (const recorded_space* space : spaces) {
    const full_evaluation full = evaluate_fully(*space, options.wrap, options.reference, options.query_blocks);
    out.strict.push_back(evaluate("paper s=0", paper_strict, *space, bounds, full, options));
    out.plateau.push_back(evaluate("paper s=0.06,p=1.07", paper_plateau, *space, bounds, full, options));
    out.refined.push_back(evaluate("default (refined)", default_tuner, *space, bounds, full, options));
  }
  return out;
}

/// The default tuner over each strategy's group counts in increasing order (each case its own
/// query shape, so each a cache miss) with one cache: from the second group count on, a search
/// starts from the winner stored for the group count before (tuner_params::cache_params::neighbour_entry_distance).
std::vector<case_result> replay_neighbour_entries(const std::vector<const recorded_space*>& spaces,
                                                  const gpuagg::search_space& bounds, const replay_options& options,
                                                  const std::filesystem::path& file) {
  std::filesystem::remove(file);
  std::vector<case_result> out;
  for (const recorded_space* space : spaces) {  // sorted by strategy, then group count
    const replay_cache shared{gpuagg::tuning_cache{file}, "replay " + space->label()};
    const full_evaluation full = evaluate_fully(*space, options.wrap, options.reference, options.query_blocks);
    out.push_back(evaluate("default, neighbour entry", tuner_params{}, *space, bounds, full, options, &shared));
  }
  std::filesystem::remove(file);
  return out;
}

/// Warm cache (section 4.3): each case's query tuned once with a cache, then run again; the
/// second run should confirm the stored winner without exploring. Counts (hits, zero
/// exploration, cases).
struct warm_outcome {
  std::size_t cases = 0, hits = 0, zero_exploration = 0, stale = 0;
};

/// Short queries with one cache (section 4.3 with provisional entries): each case's query shape
/// runs again and again with `budget` blocks per query, until a query ends with a converged
/// search or `max_queries` ran. Per case: the queries needed, and the quality of the stored
/// configuration after each query.
struct short_query_outcome {
  std::vector<std::size_t> queries_to_converge;  ///< max_queries + 1 where none converged
  std::vector<std::vector<double>> quality;      ///< per case, after each query
};

short_query_outcome replay_short_queries(const std::vector<const recorded_space*>& spaces,
                                         const gpuagg::search_space& bounds, const replay_options& options,
                                         const std::filesystem::path& file, std::size_t budget,
                                         std::size_t max_queries) {
  short_query_outcome out;
  const gpuagg::tuner<tuner_params{}> tuner(bounds, gpuagg::tuning_cache{file});
  for (const recorded_space* space : spaces) {
    std::filesystem::remove(file);
    const gpuagg::tuning_key key{"replay", "recorded", "replay " + space->label(), "-", space->groups_log2};
    const auto feasible = [space](const execution_params& p) { return space->blocks.contains(p); };
    const std::vector<execution_params> initial = space->initial_configs(bounds);
    const full_evaluation full = evaluate_fully(*space, options.wrap, options.reference, options.query_blocks);
    std::size_t converged_after = max_queries + 1;
    std::vector<double> quality;
    for (std::size_t q = 1; q <= max_queries; ++q) {
      replay blocks(*space, options.wrap);  // a new query: its blocks start again
      const auto report = tuner.search(std::ref(blocks), budget, feasible, initial, key);
      if (report.winner) {
        quality.push_back(gpuagg::detail::mean_of(space->blocks.at(*report.winner)) / full.optimum_seconds);
      }
      if (report.converged && report.cache != gpuagg::cache_outcome::not_used) {
        converged_after = std::min(converged_after, q);
      }
    }
    out.queries_to_converge.push_back(converged_after);
    out.quality.push_back(std::move(quality));
  }
  std::filesystem::remove(file);
  return out;
}

warm_outcome replay_warm_cache(const std::vector<const recorded_space*>& spaces, const gpuagg::search_space& bounds,
                               const replay_options& options, const std::filesystem::path& file) {
  std::filesystem::remove(file);
  const gpuagg::tuner<tuner_params{}> tuner(bounds, gpuagg::tuning_cache{file});
  warm_outcome out;
  for (const recorded_space* space : spaces) {
    const gpuagg::tuning_key key{"replay", "recorded", "replay " + space->label(), "-", space->groups_log2};
    const auto feasible = [space](const execution_params& p) { return space->blocks.contains(p); };
    const std::vector<execution_params> initial = space->initial_configs(bounds);
    replay first(*space, options.wrap);
    const auto cold = tuner.search(std::ref(first), std::numeric_limits<std::size_t>::max(), feasible, initial, key);
    replay second(*space, options.wrap);  // a new query of the same shape: its blocks start again
    const auto warm = tuner.search(std::ref(second), std::numeric_limits<std::size_t>::max(), feasible, initial, key);
    ++out.cases;
    out.hits += warm.cache == gpuagg::cache_outcome::hit;
    out.stale += warm.cache == gpuagg::cache_outcome::stale;
    out.zero_exploration += warm.exploration_blocks == 0;
    (void)cold;
  }
  std::filesystem::remove(file);
  return out;
}

// -------------------------------------------------------------------------------------------------
// Synthetic spaces (--synthetic): shaped like section 3.5 describes them, nearly convex in log2
// coordinates, with plateaus, a few second minima, per-configuration jitter, and outliers at the
// beginning of some measurements (section 3.6).

void write_synthetic(std::ostream& out, unsigned seed, double block_noise) {
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::normal_distribution<double> noise(0.0, block_noise);
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

void print_summary_header() {
  std::printf("%-24s %-5s %6s %8s %11s %8s %11s %15s %13s %11s %13s\n", "scenario", "half", "cases", "optimum",
              "within_1pct", "worst", "median_cost", "median_overhead", "median_effort", "mean_effort",
              "median_blocks");
}

void print_summary_row(const char* mode, const char* half, const summary& s) {
  std::printf("%-24s %-5s %6zu %8.3f %11.3f %8.4f %11.2f %15.5f %13.5f %11.5f %13.1f\n", mode, half, s.cases,
              s.optimum_found, s.within_1pct, s.worst, s.median_cost, s.median_overhead, s.median_effort,
              s.mean_effort, s.median_blocks);
}

void print_scenarios(const scenario_results& results) {
  print_summary_header();
  const std::pair<const char*, const std::vector<case_result>*> rows[] = {
      {"paper s=0", &results.strict}, {"paper s=0.06,p=1.07", &results.plateau}, {"default (refined)", &results.refined}};
  for (const auto& [name, list] : rows) {
    print_summary_row(name, "all", summarize(*list));
    print_summary_row(name, "A", summarize(*list, 'A'));
    print_summary_row(name, "B", summarize(*list, 'B'));
  }
}

void print_cases(const scenario_results& results) {
  std::printf("%-20s %-15s %4s %5s %5s %6s %-24s %9s %9s %9s %9s\n", "mode", "strategy", "g", "half", "tried",
              "blocks", "winner", "quality", "cost", "overhead", "effort");
  for (const auto* list : {&results.strict, &results.plateau, &results.refined}) {
    for (const case_result& r : *list) {
      std::ostringstream winner;
      if (r.report.winner) winner << *r.report.winner;
      std::printf("%-20s %-15s %4d %5c %5zu %6zu %-24s %9.4f %9.2f %9.5f %9.5f\n", r.mode.c_str(),
                  r.space->label().c_str(), r.space->groups_log2, r.space->half, r.report.tried.size(),
                  r.report.exploration_blocks, winner.str().c_str(), r.quality, r.cost, r.overhead, r.effort);
    }
  }
}

/// Where each case's effort goes (--breakdown): the default tuner's measurements, the costliest
/// first, each as its share of the case's full evaluation, with its recorded mean relative to
/// the optimum; and how much of the effort went to configurations at least 1.5x and 3x slower.
void print_breakdown(const std::vector<case_result>& results, const gpuagg::search_space& bounds) {
  std::printf("\nwhere the effort goes (per case: 1%% of a full evaluation in optimum blocks, quality, effort, the "
              "oracle bound, configurations and blocks measured, the share of the effort in configurations <= 1.1x, "
              ">= 1.5x and >= 3x the optimum, then the costliest measurements as blocks / %% of the full evaluation / "
              "mean vs optimum, r: rejected early):\n");
  for (const case_result& r : results) {
    std::vector<std::pair<double, const gpuagg::tried_configuration*>> spent;
    double near = 0.0, slow15 = 0.0, slow3 = 0.0;
    for (const auto& tried : r.report.tried) {
      double seconds = 0.0;
      for (double b : tried.block_seconds) seconds += b;
      spent.push_back({seconds, &tried});
      const double ratio = gpuagg::detail::mean_of(r.space->blocks.at(tried.params)) / r.full.optimum_seconds;
      if (ratio <= 1.1) near += seconds;
      if (ratio >= 1.5) slow15 += seconds;
      if (ratio >= 3.0) slow3 += seconds;
    }
    std::sort(spent.begin(), spent.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    const double total = r.report.exploration_seconds > 0.0 ? r.report.exploration_seconds : 1.0;
    std::printf("%-15s %3d %c 1%%=%5.1f quality %6.4f effort %7.4f (oracle %6.4f) tried %3zu blocks %3zu "
                "<=1.1x %3.0f%% >=1.5x %3.0f%% >=3x %3.0f%% |",
                r.space->label().c_str(), r.space->groups_log2, r.space->half,
                0.01 * r.full.seconds / r.full.optimum_seconds, r.quality, r.effort,
                oracle_effort(*r.space, bounds, r.full, oracle_rule{}), r.report.tried.size(),
                r.report.exploration_blocks, 100.0 * near / total, 100.0 * slow15 / total, 100.0 * slow3 / total);
    for (std::size_t i = 0; i < std::min<std::size_t>(5, spent.size()); ++i) {
      const auto& tried = *spent[i].second;
      std::printf(" %ux%u %u/%.2f%%/%.2fx%s", tried.params.config.work_groups_per_cu, tried.params.config.work_group_size,
                  tried.blocks, 100.0 * spent[i].first / r.full.seconds,
                  gpuagg::detail::mean_of(r.space->blocks.at(tried.params)) / r.full.optimum_seconds,
                  tried.rejected ? "r" : "");
    }
    std::printf("\n");
  }
}

/// The variants' summaries (all cases and both halves); with `breakdown`, the last one's.
void print_variants(const std::vector<variant>& variants, const std::vector<const recorded_space*>& cases,
                    const gpuagg::search_space& bounds, const replay_options& options, bool breakdown) {
  std::printf("\nvariants (--ablation, --variant), per (strategy, group count):\n");
  print_summary_header();
  const auto results = replay_variants(variants, cases, bounds, options);
  for (const std::vector<case_result>& list : results) {
    print_summary_row(list.front().mode.c_str(), "all", summarize(list));
    print_summary_row(list.front().mode.c_str(), "A", summarize(list, 'A'));
    print_summary_row(list.front().mode.c_str(), "B", summarize(list, 'B'));
  }
  if (breakdown && !results.empty()) print_breakdown(results.back(), bounds);
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
  replay_options options;
  bool wrap_to_start = false;
  unsigned seed = 2019;
  app.add_option("--input", input, "recorded search space CSV (strategy,groups_log2,work_groups_per_cu,"
                                   "work_group_size,block,aggregate_ns)");
  app.add_option("--out", out_file, "write one CSV row per case and scenario here");
  app.add_option("--strategy", strategy_name, "only this strategy (SHARED, INDEPENDENT, WORKGROUPLOCAL)");
  std::optional<int> only_groups;
  app.add_option("--groups-log2", only_groups, "only this group count (log2)");
  app.add_flag("--synthetic", synthetic, "generate synthetic search spaces instead of reading --input");
  app.add_option("--seed", seed, "seed of --synthetic")->capture_default_str();
  double synthetic_noise = 0.003;
  app.add_option("--block-noise", synthetic_noise, "--synthetic: standard deviation of a block's time, relative")
      ->capture_default_str();
  app.add_option("--dump-synthetic", dump_file, "also write the synthetic CSV here");
  app.add_flag("--cases", verbose, "print one line per case");
  bool breakdown = false;
  app.add_flag("--breakdown", breakdown, "print where the default tuner's effort goes in each case");
  app.add_flag("--alternate-start", options.alternate_start,
               "also start each per-strategy search from the same threads per compute unit in 32-wide work groups");
  bool ablation = false;
  std::vector<std::string> variant_specs;
  bool variants_only = false;
  std::string reference = "section3";
  app.add_option("--reference", reference,
                 "full evaluation that effort is a fraction of: section3 (every configuration on the whole input, "
                 "as section 3 measures the space) or strict (ProcessBlocksWith on every configuration)")
      ->check(CLI::IsMember({"section3", "strict"}))
      ->capture_default_str();
  app.add_option("--query-blocks", options.query_blocks, "blocks of the whole input (the section3 reference)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--variants-only", variants_only, "replay only the --variant list (and --ablation), nothing else");
  app.add_option("--variant", variant_specs,
                 "also replay the default tuner changed by key=value[,key=value...] (base=paper|strict|default "
                 "first); repeatable");
  app.add_flag("--ablation", ablation,
               "also replay each extension of the refined search alone on Algorithm 1, and the default without each");
  app.add_flag("--wrap-to-start", wrap_to_start,
               "past the recorded blocks, cycle from block 0 (the earlier replay rule) instead of over the later "
               "half");
  std::vector<std::string> held_out_files;
  app.add_option("--held-out", held_out_files,
                 "also replay this recording (no tuner parameter chosen on it) and report it on its own line; "
                 "repeatable");
  std::optional<double> min_within, max_worst, max_effort;
  app.add_option("--min-within-1pct", min_within, "fail (exit 1) when the default's within_1pct is below this");
  app.add_option("--max-worst", max_worst, "fail (exit 1) when the default's worst quality is above this");
  app.add_option("--max-median-effort", max_effort, "fail (exit 1) when the default's median effort is above this");
  CLI11_PARSE(app, argc, argv);
  options.reference = reference == "strict" ? effort_reference::strict : effort_reference::section3;
  if (wrap_to_start) options.wrap = wrap_rule::from_start;

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
      write_synthetic(csv, seed, synthetic_noise);
      if (!dump_file.empty()) {
        std::ofstream dump(dump_file);
        dump << csv.str();
        if (!dump) throw std::runtime_error("cannot write " + dump_file);
      }
      data = read_recording(csv, "synthetic", only, only_groups);
    } else {
      std::ifstream in(input);
      if (!in) throw std::runtime_error("cannot open " + input);
      data = read_recording(in, input, only, only_groups);
    }
  } catch (const std::exception& e) {
    std::cerr << "tuner_eval: " << e.what() << '\n';
    return 2;
  }

  // Halves for a held-out check: the recorded group counts, alternating A, B, A, ...
  std::set<int> group_counts;
  for (const auto& [key, space] : data.cases) group_counts.insert(key.second);
  std::map<int, char> half_of;
  for (int g : group_counts) half_of[g] = half_of.size() % 2 == 0 ? 'A' : 'B';
  std::vector<const recorded_space*> cases;
  std::map<int, recorded_space> combined;  // all strategies at once, per group count
  for (auto& [key, space] : data.cases) {
    space.half = half_of.at(key.second);
    cases.push_back(&space);
    recorded_space& all = combined[key.second];
    all.all_strategies = true;
    all.groups_log2 = key.second;
    all.half = space.half;
    all.blocks.insert(space.blocks.begin(), space.blocks.end());
  }
  std::vector<const recorded_space*> per_group;
  for (const auto& [g, space] : combined) per_group.push_back(&space);

  std::vector<variant> variants;
  if (ablation) variants = ablation_variants();
  try {
    for (const std::string& spec : variant_specs) {
      variant v{spec, {}, {}};
      v.params = parse_variant(spec, &v.starts);
      variants.push_back(std::move(v));
    }
  } catch (const std::exception& e) {
    std::cerr << "tuner_eval: --variant: " << e.what() << '\n';
    return 2;
  }
  if (variants_only) {
    print_variants(variants, cases, data.bounds, options, breakdown && !variant_specs.empty());
    return 0;
  }

  const scenario_results per_case = replay_all(cases, data.bounds, options);
  const scenario_results at_once = replay_all(per_group, data.bounds, options);
  const std::filesystem::path scratch =
      std::filesystem::temp_directory_path() / ("gpuagg_tuner_eval_" + std::to_string(::getpid()) + ".json");
  const std::vector<case_result> neighbour_cases = replay_neighbour_entries(cases, data.bounds, options, scratch);
  const std::vector<case_result> neighbour_groups = replay_neighbour_entries(per_group, data.bounds, options, scratch);

  if (!out_file.empty()) {
    std::ofstream out(out_file);
    bool header = true;
    for (const scenario_results* results : {&per_case, &at_once}) {
      for (const auto* list : {&results->strict, &results->plateau, &results->refined}) {
        write_results(out, *list, header);
        header = false;
      }
    }
    write_results(out, neighbour_cases, false);
    write_results(out, neighbour_groups, false);
    if (!out) {
      std::cerr << "tuner_eval: cannot write " << out_file << '\n';
      return 2;
    }
  }

  std::printf("tuner_eval: %zu rows, %zu cases (strategy x groups_log2), bounds %ux%u, replay past the recorded "
              "blocks: %s\n",
              data.rows, data.cases.size(), gpuagg::detail::floor_pow2(data.bounds.max_work_groups_per_cu),
              gpuagg::detail::floor_pow2(data.bounds.max_work_group_size),
              options.wrap == wrap_rule::later_half ? "later half" : "from block 0");
  std::printf("halves (alternating group counts): A = 2^{");
  for (const auto& [g, h] : half_of) if (h == 'A') std::printf(" %d", g);
  std::printf(" }, B = 2^{");
  for (const auto& [g, h] : half_of) if (h == 'B') std::printf(" %d", g);
  std::printf(" }\n");
  if (verbose) print_cases(per_case);
  if (breakdown) print_breakdown(per_case.refined, data.bounds);

  std::printf("\nper (strategy, group count), one strategy searched at a time:\n");
  print_scenarios(per_case);

  std::printf("\nall strategies at once per group count (section 4.1), quality against the best of all:\n");
  print_scenarios(at_once);
  std::printf("%-4s", "g");
  for (const char* name : {"paper s=0", "paper s=0.06,p=1.07", "default (refined)"}) std::printf(" | %-31s", name);
  std::printf("\n");
  for (std::size_t i = 0; i < per_group.size(); ++i) {
    std::printf("%-4d", per_group[i]->groups_log2);
    for (const auto* list : {&at_once.strict, &at_once.plateau, &at_once.refined}) {
      const case_result& r = (*list)[i];
      std::ostringstream winner;
      if (r.report.winner) winner << *r.report.winner;
      std::printf(" | %-20s %4zu %6.3f", winner.str().c_str(), r.report.exploration_blocks, r.quality);
    }
    std::printf("\n");
  }

  if (!variants.empty()) print_variants(variants, cases, data.bounds, options, breakdown && !variant_specs.empty());

  std::printf("\nwith a cache filled by the neighbouring group counts (each strategy's group counts in increasing "
              "order; tuner_params::cache_params::neighbour_entry_distance):\n");
  print_summary_header();
  for (const auto& [name, list] : {std::pair{"per case", &neighbour_cases}, std::pair{"all at once", &neighbour_groups}}) {
    const std::string label = std::string("default, ") + name;
    print_summary_row(label.c_str(), "all", summarize(*list));
    print_summary_row(label.c_str(), "A", summarize(*list, 'A'));
    print_summary_row(label.c_str(), "B", summarize(*list, 'B'));
  }

  // Oracle lower bounds on effort (perfect knowledge of the recorded means): how cheap any local
  // search could be with measurements of a given length, from the paper's start or from the
  // target itself.
  const std::pair<const char*, oracle_rule> oracles[] = {
      {"path, 3 blocks each", {3.0, 0.0, false}},
      {"path + 4 neighbours, 3 blocks each", {3.0, 3.0, false}},
      {"path 3 blocks, neighbours 1 block", {3.0, 1.0, false}},
      {"path 2 blocks, neighbours 1 block", {2.0, 1.0, false}},
      {"perfect start: target 3 blocks + 4 neighbours 3 blocks", {3.0, 3.0, true}},
      {"perfect start: target 3 blocks + 4 neighbours 1 block", {3.0, 1.0, true}},
  };
  std::printf("\noracle lower bounds on effort (per case, the paper's start unless perfect, each configuration at "
              "its recorded mean; median, halves A / B, cases <= 1%%):\n");
  for (const auto& [name, rule] : oracles) {
    std::vector<double> all, half_a, half_b;
    std::size_t within = 0;
    for (const case_result& r : per_case.refined) {
      const double e = oracle_effort(*r.space, data.bounds, r.full, rule);
      all.push_back(e);
      (r.space->half == 'A' ? half_a : half_b).push_back(e);
      within += e <= 0.01;
    }
    std::printf("  %-56s median %.5f (A %.5f / B %.5f), %zu/%zu cases <= 1%%\n", name, median_of(all), median_of(half_a),
                median_of(half_b), within, all.size());
  }

  for (const std::size_t budget : {std::size_t{16}, std::size_t{32}}) {
    constexpr std::size_t max_queries = 8;
    const short_query_outcome short_queries = replay_short_queries(cases, data.bounds, options, scratch, budget,
                                                                   max_queries);
    std::vector<double> queries(short_queries.queries_to_converge.begin(), short_queries.queries_to_converge.end());
    std::size_t never = 0;
    for (const std::size_t q : short_queries.queries_to_converge) never += q > max_queries;
    std::printf("queries of %zu blocks with one cache (provisional entries): median %.1f queries until one converges, "
                "%zu/%zu cases not within %zu;",
                budget, median_of(queries), never, queries.size(), max_queries);
    for (const std::size_t after : {std::size_t{1}, std::size_t{2}, std::size_t{4}, max_queries}) {
      std::size_t within = 0;
      double worst = 0.0;
      for (const auto& q : short_queries.quality) {
        if (q.size() < after) continue;
        within += q[after - 1] <= 1.01;
        worst = std::max(worst, q[after - 1]);
      }
      std::printf(" after %zu: %zu within 1%%, worst %.3f;", after, within, worst);
    }
    std::printf("\n");
  }
  const warm_outcome warm = replay_warm_cache(cases, data.bounds, options, scratch);
  std::printf("warm cache (default tuner, each case's query twice): second query a hit in %zu/%zu cases, "
              "stale in %zu, no exploration block in %zu/%zu\n",
              warm.hits, warm.cases, warm.stale, warm.zero_exploration, warm.cases);

  const summary shipped = summarize(per_case.refined);
  std::printf("tuner-eval references: median_effort section3 (every configuration on the %u-block input)=%.4f "
              "strict (ProcessBlocksWith on every configuration)=%.4f\n",
              options.query_blocks, shipped.median_effort_section3, shipped.median_effort_strict);
  int status = shipped.cases > 0 ? 0 : 1;
  // Held-out recordings: the default tuner per case, on spaces no parameter was chosen on.
  for (const std::string& file : held_out_files) {
    recording held;
    try {
      std::ifstream in(file);
      if (!in) throw std::runtime_error("cannot open " + file);
      held = read_recording(in, file, only, only_groups);
    } catch (const std::exception& e) {
      std::cerr << "tuner_eval: --held-out: " << e.what() << '\n';
      return 2;
    }
    std::vector<const recorded_space*> held_cases;
    for (auto& [key, space] : held.cases) held_cases.push_back(&space);
    const summary h = summarize(replay_all(held_cases, held.bounds, options).refined);
    std::printf("tuner-eval held-out (%s): cases=%zu within_1pct=%.4f worst=%.4f median_effort=%.4f\n", file.c_str(),
                h.cases, h.within_1pct, h.worst, h.median_effort);
    if (h.cases == 0) status = 1;
  }
  std::printf("tuner-eval: cases=%zu within_1pct=%.4f worst=%.4f median_effort=%.4f\n", shipped.cases,
              shipped.within_1pct, shipped.worst, shipped.median_effort);
  const auto below = [&](const char* what, bool failed, double value, double bound) {
    if (!failed) return;
    std::printf("tuner-eval: FAILED %s=%.4f, bound %.4f\n", what, value, bound);
    status = 1;
  };
  if (min_within) below("within_1pct", shipped.within_1pct < *min_within, shipped.within_1pct, *min_within);
  if (max_worst) below("worst", shipped.worst > *max_worst, shipped.worst, *max_worst);
  if (max_effort) below("median_effort", shipped.median_effort > *max_effort, shipped.median_effort, *max_effort);
  return status;
}
