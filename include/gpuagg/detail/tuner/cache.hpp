#pragma once
// The persistent winners file (section 4.3: "determine the fastest execution [parameters] per
// query and store these values"); included by <gpuagg/tuner.hpp>.

#ifndef GPUAGG_TUNER_HPP
#error "include <gpuagg/tuner.hpp>: detail/tuner/*.hpp are its implementation, in its order"
#endif

#include <gpuagg/detail/cache_dir.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

namespace gpuagg {
namespace detail {

inline constexpr std::string_view cache_format = "gpuagg-tuning";
inline constexpr int cache_version = 1;

/// Serializes every read-modify-write of a winners file in this process.
inline std::mutex& cache_file_mutex() {
  static std::mutex mutex;
  return mutex;
}

/// A winners file as read from disk.
struct cache_document {
  enum class state { missing, ok, unusable } status = state::missing;
  nlohmann::json json;
  std::string problem;  ///< why it is unusable
};

/// Reads and checks the top level; the caller holds cache_file_mutex().
inline cache_document read_cache_document(const std::filesystem::path& file) {
  cache_document result;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    if (ec) {
      result.status = cache_document::state::unusable;
      result.problem = "cannot be inspected (" + ec.message() + ")";
    }
    return result;
  }
  result.status = cache_document::state::unusable;
  std::ifstream in(file);
  if (!in) {
    result.problem = "cannot be read";
    return result;
  }
  result.json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (result.json.is_discarded()) {
    result.problem = "is corrupt (not JSON)";
  } else if (!result.json.is_object() || !result.json.contains("entries") || !result.json["entries"].is_array() ||
             result.json.value("format", std::string{}) != cache_format ||
             result.json.value("version", 0) != cache_version) {
    result.problem = "is corrupt (not a gpuagg-tuning version 1 document)";
  } else {
    result.status = cache_document::state::ok;
  }
  return result;
}

inline bool entry_matches(const nlohmann::json& entry, const tuning_key& key) {
  return entry.is_object() && entry.value("device", std::string{}) == key.device &&
         entry.value("driver_version", std::string{}) == key.driver_version &&
         entry.value("query", std::string{}) == key.query && entry.value("key_type", std::string{}) == key.key_type &&
         entry.value("groups_log2", -1) == key.groups_log2;
}

/// [strategy, work groups per CU, work-group size]; empty where out of range. Throws
/// nlohmann::json::exception where the shape is wrong.
inline std::optional<execution_params> parse_params(const nlohmann::json& triple) {
  const auto strategy = parse_strategy(triple.at(0).get<std::string>());
  const auto groups = triple.at(1).get<std::uint32_t>();
  const auto size = triple.at(2).get<std::uint32_t>();
  if (!strategy || groups == 0 || size == 0) return std::nullopt;
  return execution_params{*strategy, {groups, size}};
}

inline nlohmann::json params_json(const execution_params& params) {
  return nlohmann::json::array(
      {std::string(to_string(params.strategy)), params.config.work_groups_per_cu, params.config.work_group_size});
}

inline std::string_view phase_name(search_state::phase_kind phase) noexcept {
  switch (phase) {
    case search_state::phase_kind::initial: return "initial";
    case search_state::phase_kind::scan: return "scan";
    case search_state::phase_kind::descent: return "descent";
  }
  return "initial";
}

/// A provisional entry's "search": {"phase", "stride", "queue": [[strategy, groups, size]...],
/// "measured": [[strategy, groups, size, seconds, rejected, [blocks...]]...],
/// "partial": [strategy, groups, size, [blocks...]] (optional)}.
inline nlohmann::json state_json(const search_state& state) {
  nlohmann::json queue = nlohmann::json::array();
  for (const execution_params& p : state.queue) queue.push_back(params_json(p));
  nlohmann::json measured = nlohmann::json::array();
  for (const search_state::tested& m : state.measured) {
    nlohmann::json row = params_json(m.params);
    row.push_back(m.seconds);
    row.push_back(m.rejected);
    row.push_back(m.blocks);
    measured.push_back(std::move(row));
  }
  nlohmann::json out = {{"phase", phase_name(state.phase)}, {"stride", state.stride}, {"queue", std::move(queue)},
                        {"measured", std::move(measured)}};
  if (state.partial) {
    nlohmann::json partial = params_json(state.partial->params);
    partial.push_back(state.partial->blocks);
    out["partial"] = std::move(partial);
  }
  return out;
}

inline std::optional<search_state> parse_state(const nlohmann::json& json) {
  search_state state;
  const std::string phase = json.at("phase").get<std::string>();
  if (phase == "initial") {
    state.phase = search_state::phase_kind::initial;
  } else if (phase == "scan") {
    state.phase = search_state::phase_kind::scan;
  } else if (phase == "descent") {
    state.phase = search_state::phase_kind::descent;
  } else {
    return std::nullopt;
  }
  state.stride = json.at("stride").get<std::uint32_t>();
  for (const nlohmann::json& triple : json.at("queue")) {
    const auto p = parse_params(triple);
    if (!p) return std::nullopt;
    state.queue.push_back(*p);
  }
  for (const nlohmann::json& row : json.at("measured")) {
    const auto p = parse_params(row);
    if (!p) return std::nullopt;
    search_state::tested m{*p, row.at(3).get<double>(), row.at(4).get<bool>(), row.at(5).get<std::vector<double>>()};
    if (!(m.seconds > 0.0) || m.blocks.empty()) return std::nullopt;
    state.measured.push_back(std::move(m));
  }
  if (json.contains("partial")) {
    const nlohmann::json& row = json.at("partial");
    const auto p = parse_params(row);
    if (!p) return std::nullopt;
    state.partial = search_state::tested{*p, 0.0, false, row.at(3).get<std::vector<double>>()};
  }
  return state;
}

/// The stored winner of one entry, or empty where a field is missing or out of range.
inline std::optional<cache_entry> parse_entry(const nlohmann::json& entry) {
  try {
    const auto strategy = parse_strategy(entry.at("strategy").get<std::string>());
    const auto groups = entry.at("work_groups_per_cu").get<std::uint32_t>();
    const auto size = entry.at("work_group_size").get<std::uint32_t>();
    const auto seconds = entry.at("seconds").get<double>();
    const bool converged = entry.contains("converged") ? entry.at("converged").get<bool>() : true;
    if (!strategy || groups == 0 || size == 0 || !(seconds > 0.0)) return std::nullopt;
    cache_entry parsed{{*strategy, {groups, size}}, seconds, converged, std::nullopt};
    if (!converged && entry.contains("search")) {
      parsed.state = parse_state(entry.at("search"));
      if (!parsed.state) return std::nullopt;
    }
    return parsed;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

/// A fresh name beside `file` for the write-then-rename.
inline std::filesystem::path temporary_beside(const std::filesystem::path& file) {
  static std::atomic<unsigned long long> counter{0};
  std::ostringstream suffix;
  suffix << ".tmp." << std::hex << std::chrono::steady_clock::now().time_since_epoch().count() << '.'
         << std::hash<std::thread::id>{}(std::this_thread::get_id()) << '.' << counter++;
  std::filesystem::path temporary = file;
  temporary += suffix.str();
  return temporary;
}

}  // namespace detail

namespace detail {
/// The entries of the cache file for reading, or none: missing, or unusable (warned once, then
/// tuning goes on without it). The caller holds cache_file_mutex().
inline std::optional<nlohmann::json> readable_entries(const std::filesystem::path& file,
                                                      std::vector<std::string>& warnings) {
  cache_document document = read_cache_document(file);
  if (document.status == cache_document::state::missing) return std::nullopt;
  if (document.status == cache_document::state::unusable) {
    warn_once("tuning cache " + file.string() + " " + document.problem + "; tuning without it", warnings);
    return std::nullopt;
  }
  return std::move(document.json["entries"]);
}
}  // namespace detail

inline tuning_cache::tuning_cache(std::filesystem::path file) : file_(std::move(file)) {}

inline std::optional<std::filesystem::path> tuning_cache::default_path() {
  if (auto dir = detail::cache_directory()) return *dir / "tuning.json";
  return std::nullopt;
}

inline tuning_cache tuning_cache::from_environment() {
  auto file = default_path();
  return file ? tuning_cache(std::move(*file)) : tuning_cache();
}

inline std::optional<cache_entry> tuning_cache::load(const tuning_key& key, std::vector<std::string>& warnings) const {
  if (!enabled()) return std::nullopt;
  const std::lock_guard lock(detail::cache_file_mutex());
  const auto entries = detail::readable_entries(file_, warnings);
  if (!entries) return std::nullopt;
  for (const nlohmann::json& entry : *entries) {
    if (!detail::entry_matches(entry, key)) continue;
    if (auto parsed = detail::parse_entry(entry)) return parsed;
    detail::warn_once("tuning cache " + file_.string() + " has a corrupt entry for this query; tuning without it",
                      warnings);
    return std::nullopt;
  }
  return std::nullopt;
}

inline std::optional<std::pair<int, cache_entry>> tuning_cache::load_nearest(const tuning_key& key, int max_distance,
                                                                             std::vector<std::string>& warnings) const {
  if (!enabled() || max_distance < 1) return std::nullopt;
  const std::lock_guard lock(detail::cache_file_mutex());
  const auto entries = detail::readable_entries(file_, warnings);
  if (!entries) return std::nullopt;
  std::optional<std::pair<int, cache_entry>> nearest;
  for (const nlohmann::json& entry : *entries) {
    tuning_key other = key;
    other.groups_log2 = entry.is_object() ? entry.value("groups_log2", key.groups_log2) : key.groups_log2;
    const int distance = std::abs(other.groups_log2 - key.groups_log2);
    if (distance < 1 || distance > max_distance || !detail::entry_matches(entry, other)) continue;
    const auto parsed = detail::parse_entry(entry);
    if (!parsed) continue;  // a corrupt neighbour is only a start not taken
    const int best = nearest ? std::abs(nearest->first - key.groups_log2) : max_distance + 1;
    if (distance < best || (distance == best && other.groups_log2 < nearest->first)) {
      nearest.emplace(other.groups_log2, *parsed);
    }
  }
  return nearest;
}

inline bool tuning_cache::store(const tuning_key& key, const cache_entry& entry,
                                std::vector<std::string>& warnings) const {
  if (!enabled()) return false;
  const std::lock_guard lock(detail::cache_file_mutex());
  detail::cache_document document = detail::read_cache_document(file_);
  nlohmann::json json;
  if (document.status == detail::cache_document::state::ok) {
    json = std::move(document.json);
  } else {
    if (document.status == detail::cache_document::state::unusable) {
      detail::warn_once("tuning cache " + file_.string() + " " + document.problem + "; it will be replaced", warnings);
    }
    json = {{"format", detail::cache_format}, {"version", detail::cache_version}, {"entries", nlohmann::json::array()}};
  }
  nlohmann::json& entries = json["entries"];
  nlohmann::json kept = nlohmann::json::array();
  for (nlohmann::json& old : entries) {
    if (!detail::entry_matches(old, key)) kept.push_back(std::move(old));
  }
  nlohmann::json stored = {{"device", key.device},
                  {"driver_version", key.driver_version},
                  {"query", key.query},
                  {"key_type", key.key_type},
                  {"groups_log2", key.groups_log2},
                  {"strategy", to_string(entry.params.strategy)},
                  {"work_groups_per_cu", entry.params.config.work_groups_per_cu},
                  {"work_group_size", entry.params.config.work_group_size},
                  {"seconds", entry.seconds},
                  {"converged", entry.converged}};
  if (entry.state) stored["search"] = detail::state_json(*entry.state);
  kept.push_back(std::move(stored));
  entries = std::move(kept);

  const auto fail = [&](const std::string& why) {
    detail::warn_once("tuning cache " + file_.string() + " cannot be written (" + why + "); the winner is not kept",
                      warnings);
    return false;
  };
  std::error_code ec;
  if (file_.has_parent_path()) {
    std::filesystem::create_directories(file_.parent_path(), ec);
    if (ec) return fail(ec.message());
  }
  // Atomic replace: readers see the old file or the new one, never a part.
  const std::filesystem::path temporary = detail::temporary_beside(file_);
  {
    std::ofstream out(temporary, std::ios::trunc);
    if (!out) return fail("cannot create " + temporary.filename().string());
    out << json.dump(2) << '\n';
    out.flush();
    if (!out) {
      out.close();
      std::filesystem::remove(temporary, ec);
      return fail("write error");
    }
  }
  std::filesystem::rename(temporary, file_, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    return fail(ec.message());
  }
  return true;
}

}  // namespace gpuagg
