#pragma once
// The tuning report's metrics (section 4.2) and printing; included by <gpuagg/tuner.hpp>.

#ifndef GPUAGG_TUNER_HPP
#error "include <gpuagg/tuner.hpp>: detail/tuner/*.hpp are its implementation, in its order"
#endif

#include <cstdio>
#include <ostream>
#include <sstream>

namespace gpuagg {

inline std::string_view to_string(measurement_role role) noexcept {
  switch (role) {
    case measurement_role::initial: return "initial";
    case measurement_role::neighbour: return "neighbour";
    case measurement_role::cache_check: return "cache check";
    case measurement_role::scan: return "scan";
  }
  return "?";
}

inline std::string_view to_string(cache_outcome outcome) noexcept {
  switch (outcome) {
    case cache_outcome::not_used: return "not used";
    case cache_outcome::miss: return "miss";
    case cache_outcome::hit: return "hit";
    case cache_outcome::stale: return "stale (re-searched)";
    case cache_outcome::resumed: return "resumed from a provisional entry";
  }
  return "?";
}

inline std::ostream& operator<<(std::ostream& os, const tuner_params& params) {
  std::ostringstream out;
  out << "s=" << params.search.similarity << " p=" << params.search.prune << " v_max=" << params.measurement.max_variation
      << " b_max=" << params.measurement.max_blocks << " window=" << params.measurement.initial_blocks;
  if (params.is_paper_algorithm()) {
    out << " (Algorithm 1)";
  } else {
    out << " (refined:" << (params.search.diagonal_neighbours ? " diagonal" : "") << " stride=" << params.search.coarse_stride;
    if (params.search.noise_similarity > 0.0) out << " s'=" << params.search.noise_similarity << "*range";
    if (params.measurement.early_rejection > 0.0) {
      out << " reject=" << params.measurement.early_rejection << "x after " << params.measurement.rejection_blocks;
    }
    if (params.measurement.paired_rejection > 0.0) out << " paired=" << params.measurement.paired_rejection << "x";
    if (params.measurement.first_block_rejection > 0.0) out << " first-block=" << params.measurement.first_block_rejection << "x";
    if (params.measurement.quiet_window > 0) out << " quiet-window=" << params.measurement.quiet_window << "@" << params.measurement.quiet_noise;
    if (params.search.scan_stride > 0) out << " scan=" << params.search.scan_stride;
    if (params.search.restart_unpruned) out << " restart-unpruned";
    if (params.cache.neighbour_entry_distance > 0) out << " neighbour-entry<=" << params.cache.neighbour_entry_distance;
    out << ')';
  }
  if (!params.cache.use_cache) out << " no-cache";
  return os << out.str();
}

inline std::ostream& operator<<(std::ostream& os, const tuning_key& key) {
  return os << key.device << " / " << key.driver_version << " / " << key.query << " / " << key.key_type
            << " / 2^" << key.groups_log2 << " groups";
}

inline double tuning_report::overhead() const noexcept {
  return exploration_seconds > 0.0 ? host_seconds / exploration_seconds : 0.0;
}

inline double tuning_report::cost(double best_seconds) const noexcept {
  return best_seconds > 0.0 ? exploration_seconds / best_seconds - static_cast<double>(exploration_blocks) : 0.0;
}

inline double tuning_report::cost() const noexcept { return cost(winner_seconds); }

inline const tried_configuration* tuning_report::find(const execution_params& wanted) const noexcept {
  for (const tried_configuration& tried_one : tried) {
    if (tried_one.params == wanted) return &tried_one;
  }
  return nullptr;
}

inline std::ostream& operator<<(std::ostream& os, const tuning_report& report) {
  std::ostringstream out;
  out << "gpuagg tuning report (" << report.params << ")\n";
  out << "  winner:     ";
  if (report.winner) {
    out << *report.winner << ", " << detail::format_seconds(report.winner_seconds) << " per block";
  } else {
    out << "none";
  }
  out << (report.converged ? " (converged)" : " (not converged: the input ran out or nothing was feasible)") << '\n';
  out << "  cache:      " << to_string(report.cache);
  if (report.started_from_groups_log2) {
    out << " (started from the winner stored for 2^" << *report.started_from_groups_log2 << " groups)";
  }
  out << '\n';
  out << "  explored:   " << report.tried.size() << " configurations, " << report.exploration_blocks << " blocks, "
      << detail::format_seconds(report.exploration_seconds) << '\n';
  if (report.confirmation_blocks > 0) {
    out << "  confirmed:  the stored winner in " << report.confirmation_blocks << " blocks\n";
  }
  char figures[96];
  std::snprintf(figures, sizeof figures, "%.2f blocks (relative to the winner)", report.cost());
  out << "  cost:       " << figures << '\n';
  std::snprintf(figures, sizeof figures, "%.3f%% (%s host time)", 100.0 * report.overhead(),
                detail::format_seconds(report.host_seconds).c_str());
  out << "  overhead:   " << figures << '\n';
  if (report.winner_blocks > 0) {
    out << "  afterwards: " << report.winner_blocks << " blocks with the winner, "
        << detail::format_seconds(report.winner_block_seconds) << '\n';
  }
  if (!report.tried.empty()) out << "  tried, in order:\n";
  for (std::size_t i = 0; i < report.tried.size(); ++i) {
    const tried_configuration& tried = report.tried[i];
    std::ostringstream params;
    params << tried.params;
    std::snprintf(figures, sizeof figures, "  %4zu  %-22s %12s %3u blocks  ", i + 1, params.str().c_str(),
                  detail::format_seconds(tried.seconds).c_str(), tried.blocks);
    out << figures << to_string(tried.role) << (tried.complete ? "" : " (incomplete)")
        << (tried.rejected ? " (rejected early)" : "")
        << (report.winner && tried.params == *report.winner ? "  <- winner" : "") << '\n';
  }
  for (const std::string& warning : report.warnings) out << "  warning: " << warning << '\n';
  return os << out.str();
}

}  // namespace gpuagg
