// multi_device_bench: SELECT g, sum(v) GROUP BY g over uniform uint32 rows on host input
// (pinned and pageable), on each device of a set alone and on the whole set together; every
// result checked against a CPU reference. CSV on stdout, one line per (device set, input,
// groups); a summary line last. A program, not a test: it never asserts on time.
//
//   multi_device_bench --devices 0,1 --rows-log2 27 --groups-log2 10,20,24 --reps 5
//   (devices: GPUAGG_DEVICE-style selectors; default: every device there is)
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include <gpuagg/multi_device.hpp>

namespace {

struct timing {
  double median = 0;
  double best = 0;
  bool verified = true;
  std::vector<std::uint64_t> rows_per_device;
};

/// sum(v) per key, keys in [0, groups): the reference, by direct indexing.
std::vector<std::uint64_t> reference_sums(const std::uint32_t* g, const std::uint32_t* v, std::size_t rows,
                                          std::uint64_t groups) {
  std::vector<std::uint64_t> sums(groups, 0);
  for (std::size_t i = 0; i < rows; ++i) sums[g[i]] += v[i];
  return sums;
}

template <class Result>
bool matches(const Result& r, const std::vector<std::uint64_t>& sums, const std::vector<bool>& present) {
  std::size_t groups = 0;
  for (const bool p : present) groups += p;
  if (r.size() != groups) return false;
  for (std::size_t i = 0; i < r.size(); ++i) {
    const auto k = r.keys[i];
    if (k >= sums.size() || !present[k] || std::uint64_t(std::get<0>(r.columns)[i]) != sums[k]) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"multi_device_bench: sum(v) group by g on each device alone and on the set together"};
  std::string devices_list;
  unsigned rows_log2 = 27;
  std::vector<unsigned> groups_log2{10, 20, 24};
  std::vector<std::string> inputs{"pinned", "pageable"};
  unsigned reps = 5;
  unsigned warmup = 1;
  std::uint64_t seed = 42;
  app.add_option("--devices", devices_list, "comma-separated GPUAGG_DEVICE-style selectors (default: every device)");
  app.add_option("--rows-log2", rows_log2, "rows = 2^N");
  app.add_option("--groups-log2", groups_log2, "group counts, 2^N each")->delimiter(',');
  app.add_option("--input", inputs, "pinned, pageable")->delimiter(',');
  app.add_option("--reps", reps, "timed repetitions");
  app.add_option("--warmup", warmup, "untimed runs first");
  app.add_option("--seed", seed, "input seed");
  CLI11_PARSE(app, argc, argv);

  const gpuagg::device_set set =
      devices_list.empty() ? gpuagg::device_set::from_environment() : gpuagg::device_set::from_list(devices_list);
  std::vector<gpuagg::device_set> singles;
  for (std::size_t i = 0; i < set.size(); ++i) singles.emplace_back(std::vector<gpuagg::context*>{&set[i]});

  const std::size_t rows = std::size_t{1} << rows_log2;
  // Pinned memory of the first member (a GPU listed first gets its DMA rate; the others stage).
  gpuagg::pinned_array<std::uint32_t> pinned_g(set[0], rows), pinned_v(set[0], rows);
  std::vector<std::uint32_t> pageable_g(rows), pageable_v(rows);
  const auto query = gpuagg::select(gpuagg::sum(gpuagg::col<0>));

  std::cout << "device_set,input,rows,groups,rows_per_device,wall_median_ms,wall_best_ms,ratio_to_best_single,"
               "verified\n";
  std::size_t verified = 0;
  std::size_t unverified = 0;
  for (const unsigned gl : groups_log2) {
    const std::uint64_t groups = std::uint64_t{1} << gl;
    std::mt19937_64 rng(seed + gl);
    std::uniform_int_distribution<std::uint32_t> key(0, std::uint32_t(groups - 1));
    std::uniform_int_distribution<std::uint32_t> value(0, 1000);
    for (std::size_t i = 0; i < rows; ++i) pageable_g[i] = pinned_g[i] = key(rng);
    for (std::size_t i = 0; i < rows; ++i) pageable_v[i] = pinned_v[i] = value(rng);
    const auto sums = reference_sums(pageable_g.data(), pageable_v.data(), rows, groups);
    std::vector<bool> present(groups, false);
    for (std::size_t i = 0; i < rows; ++i) present[pageable_g[i]] = true;

    for (const auto& input : inputs) {
      const bool pinned = input == "pinned";
      const std::span<const std::uint32_t> g = pinned ? std::span<const std::uint32_t>(pinned_g)
                                                      : std::span<const std::uint32_t>(pageable_g);
      const std::span<const std::uint32_t> v = pinned ? std::span<const std::uint32_t>(pinned_v)
                                                      : std::span<const std::uint32_t>(pageable_v);
      const auto measure = [&](const gpuagg::device_set& devices) {
        timing t;
        std::vector<double> walls;
        for (unsigned rep = 0; rep < warmup + reps; ++rep) {
          const auto start = std::chrono::steady_clock::now();
          const auto r = gpuagg::group_by(devices, g, v, query);
          const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          t.verified = t.verified && matches(r.result, sums, present);
          if (rep < warmup) continue;
          walls.push_back(wall);
          t.rows_per_device.clear();
          for (const auto& d : r.stats.devices) t.rows_per_device.push_back(d.rows);
        }
        std::sort(walls.begin(), walls.end());
        t.median = walls.empty() ? 0 : walls[walls.size() / 2];
        t.best = walls.empty() ? 0 : walls.front();
        return t;
      };
      std::vector<timing> alone;
      double best_single = 0;
      for (const auto& single : singles) {
        alone.push_back(measure(single));
        if (best_single == 0 || alone.back().median < best_single) best_single = alone.back().median;
      }
      const timing together = set.size() > 1 ? measure(set) : alone.front();
      const auto line = [&](const std::string& name, const timing& t) {
        std::string per;
        for (const auto n : t.rows_per_device) per += (per.empty() ? "" : ";") + std::to_string(n);
        std::cout << '"' << name << "\"," << input << ',' << rows << ',' << groups << ',' << per << ','
                  << t.median * 1e3 << ',' << t.best * 1e3 << ',' << (t.median > 0 ? best_single / t.median : 0)
                  << ',' << (t.verified ? 1 : 0) << '\n';
        (t.verified ? verified : unverified) += 1;
      };
      std::string all;
      for (std::size_t i = 0; i < set.size(); ++i) {
        line(set[i].info().name, alone[i]);
        all += (all.empty() ? "" : " + ") + set[i].info().name;
      }
      if (set.size() > 1) line(all, together);
    }
  }
  std::cout << "multi-device-bench: " << verified << " results verified, " << unverified << " unverified\n";
  return unverified == 0 && verified > 0 ? 0 : 1;
}
