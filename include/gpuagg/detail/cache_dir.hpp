#pragma once
// Where gpuagg keeps what it learns between processes: the tuner's winners (tuning.json) and
// built program binaries (programs/). GPUAGG_CACHE_DIR, else $XDG_CACHE_HOME/gpuagg, else
// $HOME/.cache/gpuagg; empty variables count as unset.

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace gpuagg::detail {

inline std::optional<std::string> non_empty_env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

/// gpuagg's cache directory, or nothing when no variable names one.
inline std::optional<std::filesystem::path> cache_directory() {
  if (auto dir = non_empty_env("GPUAGG_CACHE_DIR")) return std::filesystem::path(*dir);
  if (auto xdg = non_empty_env("XDG_CACHE_HOME")) return std::filesystem::path(*xdg) / "gpuagg";
  if (auto home = non_empty_env("HOME")) return std::filesystem::path(*home) / ".cache" / "gpuagg";
  return std::nullopt;
}

}  // namespace gpuagg::detail
