#pragma once
// Algorithm 1 of Rosenfeld et al. 2019 ("Dynamic selection of thread configurations"), shared
// by the live tuner and replay: it sees blocks only through a measure_fn. Included by
// <gpuagg/tuner.hpp>. With tuner_params' extensions off (`paper_params`) it is the paper's
// pseudocode line by line; the extensions (the refined search) change only the neighbourhood,
// the passes, the plateau test and how long a clearly slower neighbour is measured.

#ifndef GPUAGG_TUNER_HPP
#error "include <gpuagg/tuner.hpp>: detail/tuner/*.hpp are its implementation, in its order"
#endif

#include <algorithm>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <span>
#include <vector>

namespace gpuagg::detail {

/// One search: its state is Algorithm 1's (the tested configurations with their times, the
/// reference queue Q, the fastest configuration c_f) plus the block budget and the report it
/// fills in.
class algorithm1 {
 public:
  algorithm1(const tuner_params& params, const search_space& space, const measure_fn& measure,
             std::size_t blocks_available, const feasibility_fn& feasible, decision_log log,
             host_stopwatch& watch, tuning_report& report, const announce_fn& announce)
      : params_(params), space_(space), measure_(measure), announce_(announce), blocks_left_(blocks_available),
        feasible_fn_(feasible), log_(log), watch_(watch), report_(report) {}

  /// Inside the space and accepted by the caller's predicate (asked once per point).
  bool feasible(const execution_params& params) {
    if (!space_.contains(params)) return false;
    const auto known = feasible_.find(params);
    if (known != feasible_.end()) return known->second;
    bool ok = false;
    {
      const stopwatch_pause pause(watch_);  // the predicate is the caller's time, not ours
      ok = !feasible_fn_ || feasible_fn_(params);
    }
    feasible_.emplace(params, ok);
    if (!ok) log_("infeasible, never measured: ", params);
    return ok;
  }

  /// ProcessBlocksWith(c): measures `params`, records it in the report, and returns t(c); empty
  /// when the input ran out before the measurement completed.
  std::optional<double> process_blocks_with(const execution_params& params, measurement_role role,
                                            const rejection_rule& rule = {}, unsigned window_blocks = 0) {
    // A resumed search first replays the blocks of the measurement the last query cut short.
    std::vector<double> carried;
    if (pending_ && pending_->params == params) carried = std::exchange(pending_, std::nullopt)->blocks;
    std::size_t next_carried = 0;
    // Without a rule that may stop it early, the measurement runs at least its window: the
    // driver may enqueue those blocks ahead.
    const std::size_t window = window_blocks > 0 ? window_blocks : params_.measurement.initial_blocks;
    if (announce_ && !rule.any() && window > carried.size()) {
      const std::size_t ahead = std::min<std::size_t>(window - carried.size(), blocks_left_);
      if (ahead > 1) {
        const stopwatch_pause pause(watch_);
        announce_(params, ahead);
      }
    }
    measurement m = detail::process_blocks_with(params_, [&]() -> std::optional<double> {
      if (next_carried < carried.size()) return carried[next_carried++];
      if (blocks_left_ == 0) return std::nullopt;
      --blocks_left_;
      double seconds = 0.0;
      {
        const stopwatch_pause pause(watch_);  // block time is the query's, not the tuner's
        seconds = measure_(params);
      }
      ++report_.exploration_blocks;
      report_.exploration_seconds += seconds;
      return seconds;
    }, rule, window_blocks);
    if (m.blocks == 0) {
      log_("input exhausted before measuring ", params);
      return std::nullopt;
    }
    log_("measured ", params, ": ", format_seconds(m.seconds), " (", m.blocks, m.blocks == 1 ? " block" : " blocks",
         m.complete ? "" : ", input ran out", m.rejected ? ", rejected early: clearly slower" : "", ", ",
         to_string(role), ")");
    const double noise = m.window_range();
    const double slowest = *std::max_element(m.block_seconds.begin(), m.block_seconds.end());
    report_.tried.push_back({params, m.seconds, m.blocks, m.complete, role, m.block_seconds, m.rejected});
    if (!m.complete) {
      partial_ = search_state::tested{params, m.seconds, m.rejected, m.block_seconds};
      return std::nullopt;
    }
    times_[params] = m.seconds;
    if (!m.rejected && m.seconds > 0.0) {  // first_block_rejection's allowance for start-up outliers
      startup_ratio_ = std::max(startup_ratio_, m.block_seconds.front() / m.seconds);
    }
    details_[params] = {noise, slowest, m.rejected, std::move(m.block_seconds)};
    return m.seconds;
  }

  /// Algorithm 1, lines 18-19 (and line 2 for the initial configurations).
  void update_fastest(const execution_params& candidate) {
    if (!fastest_ || times_.at(candidate) < times_.at(*fastest_)) {
      if (fastest_) log_("line 19: fastest is now ", candidate, " (", format_seconds(times_.at(candidate)), ")");
      fastest_ = candidate;
    }
  }

  /// Lines 1-3 for every initial configuration (section 4.1, "Optimizing multiple
  /// parallelization strategies": all are evaluated and added to Q before the loop), then the
  /// main loop, lines 4-24 (the refined search: the scan, then once per stride, see
  /// tuner_params::search_params::coarse_stride). With `resumed` (a provisional cache entry), the search
  /// continues where that one stood: its measurements count as tested, and it picks up its phase,
  /// Q and stride. True when Q ran empty in the last pass (converged); false when the input ran
  /// out or nothing was feasible. The caller then calls `finish`.
  bool run(std::span<const execution_params> initial, const search_state* resumed = nullptr) {
    std::deque<execution_params>& queue = queue_;  // Q: FIFO of reference configurations
    using phase = search_state::phase_kind;
    phase from = phase::initial;
    if (resumed) {
      preload(*resumed);
      pending_ = resumed->partial;
      queue.clear();
      for (const execution_params& reference : resumed->queue) {
        if (times_.contains(reference) && !details_.at(reference).rejected) queue.push_back(reference);
      }
      if (queue.empty() && fastest_) queue.push_back(*fastest_);
      // A state with nothing left to continue from (say, the space changed) starts over, keeping
      // what was measured as tested.
      if (resumed->phase != phase::initial && !queue.empty()) from = resumed->phase;
    }
    if (from == phase::initial) {
      phase_ = phase::initial;
      queue.clear();
      for (const execution_params& requested : initial) {
        const std::optional<execution_params> start = feasible_start(requested);
        if (!start || std::find(queue.begin(), queue.end(), *start) != queue.end()) continue;
        if (!times_.contains(*start)) {
          // The refined search measures the later initial configurations against the fastest so
          // far, so that first-block rejection stops a hopeless start (with many groups,
          // INDEPENDENT's nearest feasible start can be thousands of times slower) after one block.
          const bool against_fastest = fastest_ && params_.measurement.first_block_rejection > 0.0;
          const std::optional<double> t =
              against_fastest ? process_blocks_with(*start, measurement_role::initial, first_block_rule(*fastest_))
                              : process_blocks_with(*start, measurement_role::initial);
          if (!t) return false;  // the input ran out: report the best so far
        }
        if (details_.at(*start).rejected) continue;
        queue.push_back(*start);
        update_fastest(*start);
      }
    } else {
      log_("resuming the search where a query cut it short (", queue.size(), " in Q, ", times_.size(),
           " configurations measured)");
    }
    if (queue.empty()) {
      report_.warnings.emplace_back("no feasible execution parameters in the search space");
      log_("no feasible initial configuration");
      return false;
    }

    if (from != phase::descent) {
      phase_ = phase::scan;
      if (params_.search.scan_stride > 0 && scan_rows_ && !scan(queue)) return false;
    }

    // The paper's search is one pass at stride 2. The refined search starts wider
    // (tuner_params::search_params::coarse_stride) and halves the stride each pass, restarting from c_f. A
    // resumed search continues the pass it was in, with its Q.
    phase_ = phase::descent;
    std::uint32_t first_stride = params_.search.coarse_stride;
    bool keep_queue = false;
    if (from == phase::descent && resumed->stride >= 2 && resumed->stride <= params_.search.coarse_stride &&
        (resumed->stride & (resumed->stride - 1)) == 0) {
      first_stride = resumed->stride;
      keep_queue = true;
    }
    for (std::uint32_t stride = first_stride;; stride /= 2) {
      stride_ = stride;
      if (stride != params_.search.coarse_stride && !keep_queue) {
        queue.assign(1, *fastest_);
        log_("pass at stride ", stride, " from c_f ", *fastest_);
        if (params_.search.restart_unpruned) {
          std::vector<std::pair<double, execution_params>> near;
          for (const auto& [config, t] : times_) {
            if (config != *fastest_ && !details_.at(config).rejected && t <= params_.search.prune * times_.at(*fastest_)) {
              near.emplace_back(t, config);
            }
          }
          std::sort(near.begin(), near.end());
          for (const auto& [t, config] : near) queue.push_back(config);
        }
      }
      keep_queue = false;
      if (!descend(queue, stride)) return false;
      if (stride <= 2) return true;
    }
  }

  /// Where the search stands (for a provisional cache entry when the input ran out): its phase,
  /// Q, the stride of its pass, and every complete measurement.
  search_state state() const {
    search_state out;
    out.phase = phase_;
    out.stride = stride_;
    out.queue.assign(queue_.begin(), queue_.end());
    for (const auto& [config, t] : times_) {
      const measured& m = details_.at(config);
      out.measured.push_back({config, t, m.rejected, m.blocks});
    }
    out.partial = partial_;
    return out;
  }

  /// Skips the scan (tuner_params::search_params::scan_stride): the start is a stored winner of a neighbouring
  /// group count, an informed start rather than the paper's fixed one.
  void skip_scan() noexcept { scan_rows_ = false; }

  /// The refined search's scan (tuner_params::search_params::scan_stride): the row of each start that pruning
  /// keeps (within p of t(c_f): with several strategies, the others' rows are not scanned),
  /// outward from the start in both directions at every power of the stride. Each point is
  /// measured against the fastest so far, so that the rejection rules stop the clearly slower
  /// points early; a direction ends at a point that first-block rejection stops after one block
  /// (more than twice as slow as the fastest even allowing for a start-up outlier: further out,
  /// the thread count only moves further from what runs well). The fastest point found joins Q
  /// at its front. False when the input ran out.
  bool scan(std::deque<execution_params>& queue) {
    const std::vector<execution_params> starts(queue.begin(), queue.end());
    const double t_fastest = times_.at(*fastest_);
    for (const execution_params& start : starts) {
      if (times_.at(start) > params_.search.prune * t_fastest) continue;
      log_("scan the row of ", start);
      for (const bool up : {true, false}) {
        std::uint32_t groups = start.config.work_groups_per_cu;
        while (up ? groups <= space_.max_work_groups_per_cu / params_.search.scan_stride : groups >= params_.search.scan_stride) {
          groups = up ? groups * params_.search.scan_stride : groups / params_.search.scan_stride;
          const execution_params point{start.strategy, {groups, start.config.work_group_size}};
          if (times_.contains(point)) {  // measured before (a resumed search)
            if (hopeless(point)) break;
            continue;
          }
          if (!feasible(point)) continue;
          const execution_params reference = *fastest_;
          if (!process_blocks_with(point, measurement_role::scan, rejection_for(reference), window_for(reference))) {
            return false;
          }
          if (hopeless(point)) break;  // this direction ends
          if (!details_.at(point).rejected) update_fastest(point);
        }
      }
    }
    if (std::find(queue.begin(), queue.end(), *fastest_) == queue.end()) queue.push_front(*fastest_);
    return true;
  }

  /// Algorithm 1's main loop, lines 4-24, over the neighbourhood at `stride`. False when the
  /// input ran out.
  bool descend(std::deque<execution_params>& queue, std::uint32_t stride) {
    while (!queue.empty()) {                                    // line 4
      const execution_params reference = queue.front();         // line 5: c_i <- Peek(Q)
      const double t_reference = times_.at(reference);
      const double t_fastest = times_.at(*fastest_);
      if (t_reference > params_.search.prune * t_fastest) {            // line 6
        log_("line 7: prune ", reference, " (", format_seconds(t_reference), " > p * ",
             format_seconds(t_fastest), ")");
        queue.pop_front();                                      // line 7
        continue;
      }
      const std::optional<execution_params> neighbour = first_untested_neighbour(reference, stride);  // line 9
      if (!neighbour) {                                         // line 10
        log_("line 22: backtrack from ", reference, " (no untested neighbour)");
        queue.pop_front();                                      // line 22
        continue;
      }
      const std::optional<double> t_neighbour = process_blocks_with(
          *neighbour, measurement_role::neighbour, rejection_for(reference), window_for(reference));  // lines 11-12
      if (!t_neighbour) return false;
      // A neighbour stopped early as clearly slower never forks, replaces its reference or wins.
      const bool rejected = details_.at(*neighbour).rejected;
      if (!rejected && similar(t_reference, *t_neighbour, plateau_similarity(reference, *neighbour))) {  // line 13
        log_("line 14: plateau ", reference, " ~ ", *neighbour, ", fork");
        queue.push_back(*neighbour);                            // line 14: Push(Q, c_j)
      } else if (!rejected && *t_neighbour < t_reference) {     // line 15
        log_("line 16: follow gradient ", reference, " -> ", *neighbour);
        queue.front() = *neighbour;                             // line 16: ReplaceFirst(Q, c_j)
      }
      if (!rejected) update_fastest(*neighbour);                // lines 18-19
    }
    return true;
  }

  /// Writes the outcome into the report: c_f, or where nothing completed, the best partial
  /// measurement.
  void finish(bool converged) {
    report_.converged = converged;
    if (fastest_) {
      report_.winner = *fastest_;
      report_.winner_seconds = times_.at(*fastest_);
    } else {
      for (const tried_configuration& tried : report_.tried) {
        if (!report_.winner || tried.seconds < report_.winner_seconds) {
          report_.winner = tried.params;
          report_.winner_seconds = tried.seconds;
        }
      }
    }
    if (report_.winner) {
      log_(converged ? "converged on " : "input ran out; best so far ", *report_.winner, " (",
           format_seconds(report_.winner_seconds), ") after ", report_.exploration_blocks, " blocks");
    }
  }

 private:
  /// Line 9, UntestedNeighborhoodOf(c_i), popped in search_space::neighbours' order.
  std::optional<execution_params> first_untested_neighbour(const execution_params& reference, std::uint32_t stride) {
    for (const execution_params& candidate : space_.neighbours(reference, stride, params_.search.diagonal_neighbours)) {
      if (!times_.contains(candidate) && feasible(candidate)) return candidate;
    }
    return std::nullopt;
  }

  /// The initial configuration clamped to the space; if the caller's predicate rejects it, the
  /// nearest feasible point of the same strategy (breadth-first over the neighbourhood, asking
  /// only the predicate); empty if the strategy cannot run at all.
  std::optional<execution_params> feasible_start(const execution_params& requested) {
    const execution_params clamped = space_.clamp(requested);
    std::deque<execution_params> frontier{clamped};
    std::set<execution_params> seen{clamped};
    while (!frontier.empty()) {
      const execution_params candidate = frontier.front();
      frontier.pop_front();
      if (feasible(candidate)) {
        if (candidate != requested) log_("initial ", requested, " replaced by feasible ", candidate);
        return candidate;
      }
      for (const execution_params& next : space_.neighbours(candidate)) {
        if (seen.insert(next).second) frontier.push_back(next);
      }
    }
    log_("strategy ", requested.strategy, " excluded: no feasible configuration");
    return std::nullopt;
  }

  /// When a neighbour of `reference` stops early as clearly slower (the refined search; with
  /// paper_params no rule applies and ProcessBlocksWith runs to the end):
  /// - early_rejection: after rejection_blocks blocks, even the fastest is slower than
  ///   early_rejection x the reference's slowest block;
  /// - paired_rejection: after rejection_blocks blocks, each block k is slower than
  ///   paired_rejection x the reference's block k. Both measurements start with the same change of
  ///   configuration, so a start-up outlier (section 3.6) meets the reference's own;
  /// - first_block_rejection: the first block alone is slower than first_block_rejection x
  ///   t(reference) x the largest start-up ratio (first block / t(c)) measured so far, so that
  ///   even the largest outlier seen cannot explain it.
  rejection_rule rejection_for(const execution_params& reference) const {
    const measured& known = details_.at(reference);
    rejection_rule rule;
    if (params_.measurement.early_rejection > 0.0) rule.above = params_.measurement.early_rejection * known.slowest_block;
    if (params_.measurement.paired_rejection > 0.0) {
      rule.paired = params_.measurement.paired_rejection;
      rule.paired_blocks = params_.measurement.rejection_blocks;
      rule.reference_blocks = known.blocks;
    }
    if (params_.measurement.first_block_rejection > 0.0) rule.first_block_above = first_block_rule(reference).first_block_above;
    return rule;
  }

  /// Stopped by first-block rejection after its one block.
  bool hopeless(const execution_params& point) const {
    const measured& m = details_.at(point);
    return m.rejected && m.blocks.size() == 1;
  }

  /// A resumed search's earlier measurements, as if measured in this query (they were, in one of
  /// the same shape): tested, with their times and blocks; c_f and the start-up ratio follow.
  void preload(const search_state& state) {
    for (const search_state::tested& m : state.measured) {
      if (m.blocks.empty() || !(m.seconds > 0.0) || !feasible(m.params)) continue;
      times_[m.params] = m.seconds;
      const std::size_t window = std::min<std::size_t>(params_.measurement.initial_blocks, m.blocks.size());
      details_[m.params] = {normalized_range(std::span<const double>(m.blocks).last(window)),
                            *std::max_element(m.blocks.begin(), m.blocks.end()), m.rejected, m.blocks};
      if (m.rejected) continue;
      startup_ratio_ = std::max(startup_ratio_, m.blocks.front() / m.seconds);
      if (!fastest_ || m.seconds < times_.at(*fastest_)) fastest_ = m.params;
    }
  }

  /// Only first-block rejection against `reference` (for initial configurations: the other rules
  /// compare block by block with a neighbour's own reference, which a start does not have).
  rejection_rule first_block_rule(const execution_params& reference) const {
    rejection_rule rule;
    rule.first_block_above = params_.measurement.first_block_rejection * times_.at(reference) * startup_ratio_;
    return rule;
  }

  /// The window of ProcessBlocksWith for a neighbour of `reference`: quiet_window blocks where
  /// the reference's own window was quiet (normalized range <= quiet_noise), else the paper's
  /// (0 means params.measurement.initial_blocks).
  unsigned window_for(const execution_params& reference) const {
    if (params_.measurement.quiet_window == 0 || details_.at(reference).noise > params_.measurement.quiet_noise) return 0;
    return params_.measurement.quiet_window;
  }

  /// s for the plateau test of line 13: the paper's fixed s, or with noise_similarity the
  /// measured noise of the two windows, capped at s.
  double plateau_similarity(const execution_params& reference, const execution_params& neighbour) const {
    if (params_.search.noise_similarity <= 0.0) return params_.search.similarity;
    const double noise = std::max(details_.at(reference).noise, details_.at(neighbour).noise);
    return std::min(params_.search.similarity, params_.search.noise_similarity * noise);
  }

  /// What the refined search keeps of each completed measurement besides t(c).
  struct measured {
    double noise = 0.0;          ///< normalized range of the kept window
    double slowest_block = 0.0;  ///< the slowest block, discarded outliers included
    bool rejected = false;       ///< stopped early as clearly slower
    std::vector<double> blocks;  ///< every block, in the order they ran
  };

  const tuner_params& params_;
  const search_space& space_;
  const measure_fn& measure_;
  const announce_fn& announce_;
  std::size_t blocks_left_;
  const feasibility_fn& feasible_fn_;
  decision_log log_;
  host_stopwatch& watch_;
  tuning_report& report_;
  std::map<execution_params, double> times_;  // t(c) of every tested configuration
  std::map<execution_params, measured> details_;
  std::map<execution_params, bool> feasible_;  // the caller's verdicts
  std::optional<execution_params> fastest_;    // c_f
  double startup_ratio_ = 1.0;  // the largest first block / t(c) of the full measurements so far
  bool scan_rows_ = true;
  std::deque<execution_params> queue_;  // Q
  search_state::phase_kind phase_ = search_state::phase_kind::initial;
  std::uint32_t stride_ = 0;  // the current pass's stride
  std::optional<search_state::tested> partial_;  // the measurement the input cut short
  std::optional<search_state::tested> pending_;  // a resumed search's cut-short measurement
};

}  // namespace gpuagg::detail
