#pragma once
// The tuner's small host utilities: decision log (GPUAGG_LOG), once-per-process warnings, the
// stopwatch for its own overhead (section 4.2, metric 3); included by <gpuagg/tuner.hpp>.

#ifndef GPUAGG_TUNER_HPP
#error "include <gpuagg/tuner.hpp>: detail/tuner/*.hpp are its implementation, in its order"
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace gpuagg::detail {

/// GPUAGG_LOG is set, non-empty and not "0".
inline bool tuner_log_requested() {
  const char* value = std::getenv("GPUAGG_LOG");
  return value != nullptr && *value != '\0' && std::string_view(value) != "0";
}

/// Seconds as a short human unit ("812.5 us", "1.204 ms").
inline std::string format_seconds(double seconds) {
  char buffer[48];
  const double magnitude = seconds < 0 ? -seconds : seconds;
  if (magnitude >= 1.0) {
    std::snprintf(buffer, sizeof buffer, "%.4g s", seconds);
  } else if (magnitude >= 1e-3) {
    std::snprintf(buffer, sizeof buffer, "%.4g ms", seconds * 1e3);
  } else if (magnitude >= 1e-6) {
    std::snprintf(buffer, sizeof buffer, "%.4g us", seconds * 1e6);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.4g ns", seconds * 1e9);
  }
  return buffer;
}

/// Adds `message` to the caller's warnings (once) and prints it on stderr the first time this process
/// sees it (the set of printed messages is guarded by its own mutex).
inline void warn_once(std::string message, std::vector<std::string>& warnings) {
  static std::mutex mutex;
  static std::set<std::string> printed;
  {
    const std::lock_guard lock(mutex);
    if (printed.insert(message).second) std::cerr << "gpuagg: warning: " << message << '\n';
  }
  if (std::find(warnings.begin(), warnings.end(), message) == warnings.end()) warnings.push_back(std::move(message));
}

/// Accumulates host time while running; stopped around blocks and file I/O so that what it
/// holds is the algorithm's own bookkeeping.
class host_stopwatch {
 public:
  using clock = std::chrono::steady_clock;

  void start() noexcept {
    if (!running_) {
      started_ = clock::now();
      running_ = true;
    }
  }
  void stop() noexcept {
    if (running_) {
      total_ += clock::now() - started_;
      running_ = false;
    }
  }
  bool running() const noexcept { return running_; }
  double seconds() const noexcept {
    auto total = total_;
    if (running_) total += clock::now() - started_;
    return std::chrono::duration<double>(total).count();
  }

 private:
  clock::time_point started_{};
  clock::duration total_{};
  bool running_ = false;
};

/// Stops a stopwatch for the lifetime of the guard.
class stopwatch_pause {
 public:
  explicit stopwatch_pause(host_stopwatch& watch) noexcept : watch_(watch), was_running_(watch.running()) {
    watch_.stop();
  }
  ~stopwatch_pause() {
    if (was_running_) watch_.start();
  }
  stopwatch_pause(const stopwatch_pause&) = delete;
  stopwatch_pause& operator=(const stopwatch_pause&) = delete;

 private:
  host_stopwatch& watch_;
  bool was_running_;
};

/// One line per decision, prefixed, to a sink that may be null. Writing is diagnostics, not
/// bookkeeping: the stopwatch, if given, is paused meanwhile, so GPUAGG_LOG leaves the
/// overhead figure alone.
class decision_log {
 public:
  explicit decision_log(std::ostream* sink, host_stopwatch* watch = nullptr) noexcept : sink_(sink), watch_(watch) {}
  bool enabled() const noexcept { return sink_ != nullptr; }

  template <class... Parts>
  void operator()(const Parts&... parts) const {
    if (sink_ == nullptr) return;
    const bool running = watch_ != nullptr && watch_->running();
    if (running) watch_->stop();
    std::ostringstream line;  // one write per line, so concurrent tuners do not interleave words
    line << "[gpuagg tuner] ";
    (line << ... << parts);
    line << '\n';
    *sink_ << line.str() << std::flush;
    if (running) watch_->start();
  }

 private:
  std::ostream* sink_;
  host_stopwatch* watch_;
};

}  // namespace gpuagg::detail
