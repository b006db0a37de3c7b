// multi_device_bench: SELECT g, sum(v) GROUP BY g over uniform uint32 rows, on each device of a
// set alone and on the whole set together; every result checked against a CPU reference. CSV on
// stdout (--csv FILE: in that file, as bench/suite.sh --ab asks), one line per (device set,
// input, groups); a summary line on stderr. A program, not a test: it never asserts on time.
// Inputs:
//   pinned, pageable  host input: the set shares it through its block queue (group_by(set, ...));
//                     pinned memory is the first member's (pinned_array)
//   device            the rows split evenly, part i in member i's memory (group_by_parts); each
//                     device alone: every row in its memory (group_by over device columns)
//   pinned-parts      the rows split evenly, part i in memory pinned for member i (group_by_parts);
//                     each device alone: every row in memory pinned for it
//
//   multi_device_bench --devices 0,1 --rows-log2 27 --groups-log2 10,20,24 --reps 5
//   (devices: GPUAGG_DEVICE-style selectors; default: every device there is)
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <gpuagg/multi_device.hpp>

namespace {

struct timing {
  double median = 0;
  double best = 0;
  double first = 0;  ///< the first query of the shape (untimed warm-up with --warmup >= 1), every member in it
  bool verified = true;
  std::vector<std::uint64_t> rows_per_device;
  std::string phases;  ///< set-up (the slowest member's), run (the slowest member's), merge, finalize, ms
  std::string merge = "-";  ///< several members: one-site or by-owner (the last query's)
};

/// The same phases of a one-device query: set-up, the blocks, no merge, FINALIZE and the copy.
std::string phases_of(const gpuagg::query_stats& s) {
  const double run = s.wall_seconds - s.setup_seconds - s.host.finalize;
  return std::to_string(s.setup_seconds * 1e3) + ',' + std::to_string(run * 1e3) + ",0," +
         std::to_string(s.host.finalize * 1e3);
}

/// The phases of a multi-device query, as the CSV's four phase columns.
std::string phases_of(const gpuagg::multi_device_stats& s) {
  double setup = 0, run = 0;
  for (const auto& d : s.devices) {
    setup = std::max(setup, d.setup_seconds);
    run = std::max(run, d.run_seconds);
  }
  return std::to_string(setup * 1e3) + ',' + std::to_string(run * 1e3) + ',' + std::to_string(s.merge_seconds * 1e3) +
         ',' + std::to_string(s.finalize_seconds * 1e3);
}

/// A query's host phases (query_stats::host), ms, for --verbose.
std::string host_phases(const gpuagg::query_stats& s) {
  const auto& h = s.host;
  const std::pair<const char*, double> phases[] = {
      {"sample", h.sample},   {"profile", h.profile}, {"estimate", h.estimate}, {"plan", h.plan},
      {"programs", h.programs}, {"buffers", h.buffers}, {"enqueue", h.enqueue},  {"wait", h.wait},
      {"growth", h.growth},   {"finalize", h.finalize}};
  std::string out;
  for (const auto& [name, seconds] : phases) {
    if (seconds > 0) out += std::string(out.empty() ? "" : " ") + name + ' ' + std::to_string(seconds * 1e3);
  }
  return out + " (wall " + std::to_string(s.wall_seconds * 1e3) + " ms, " + std::to_string(s.blocks.size()) +
         " blocks, AGGREGATE " + std::to_string(s.aggregate_seconds * 1e3) + " ms)";
}

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
  app.add_option("--input", inputs, "pinned, pageable, device, pinned-parts")->delimiter(',');
  app.add_option("--reps", reps, "timed repetitions");
  app.add_option("--warmup", warmup, "untimed runs first");
  app.add_option("--seed", seed, "input seed");
  std::vector<std::string> merges{"rule"};
  app.add_option("--merge", merges,
                 "the set's merge form(s), each measured: rule (the library's choice), one-site, by-owner "
                 "(GPUAGG_MERGE)")
      ->delimiter(',');
  std::string csv_path;
  app.add_option("--csv", csv_path, "write the CSV to this file (replaced) instead of stdout");
  bool verbose = false;
  app.add_flag("--verbose", verbose, "each query of several members: its stats (rows, blocks, verdicts) on stderr");
  CLI11_PARSE(app, argc, argv);

  const gpuagg::device_set set =
      devices_list.empty() ? gpuagg::device_set::from_environment() : gpuagg::device_set::from_list(devices_list);
  std::vector<gpuagg::device_set> singles;
  for (std::size_t i = 0; i < set.size(); ++i) singles.emplace_back(std::vector<gpuagg::context*>{&set[i]});

  const std::size_t rows = std::size_t{1} << rows_log2;
  const std::size_t n = set.size();
  const auto wants = [&](const char* input) { return std::find(inputs.begin(), inputs.end(), input) != inputs.end(); };
  for (const auto& m : merges) {
    if (m != "rule" && m != "one-site" && m != "by-owner") {
      std::cerr << "multi_device_bench: unknown merge form " << m << '\n';
      return 2;
    }
  }
  for (const auto& input : inputs) {
    if (input != "pinned" && input != "pageable" && input != "device" && input != "pinned-parts") {
      std::cerr << "multi_device_bench: unknown input " << input << '\n';
      return 2;
    }
  }
  // Pinned memory of the first member (a GPU listed first gets its DMA rate; the others stage).
  gpuagg::pinned_array<std::uint32_t> pinned_g(set[0], rows), pinned_v(set[0], rows);
  std::vector<std::uint32_t> pageable_g(rows), pageable_v(rows);
  // pinned-parts: every row pinned for each member (alone), and each member's part pinned for it.
  std::vector<gpuagg::pinned_array<std::uint32_t>> own_g, own_v, part_g, part_v;
  const auto part_first = [&](std::size_t i) { return rows / n * i; };
  const auto part_rows = [&](std::size_t i) { return i + 1 == n ? rows - part_first(i) : rows / n; };
  if (wants("pinned-parts")) {
    for (std::size_t i = 0; i < n; ++i) {
      own_g.emplace_back(set[i], rows);
      own_v.emplace_back(set[i], rows);
      part_g.emplace_back(set[i], part_rows(i));
      part_v.emplace_back(set[i], part_rows(i));
    }
  }
  const auto query = gpuagg::select(gpuagg::sum(gpuagg::col<0>));

  std::ofstream csv_file;
  if (!csv_path.empty()) {
    csv_file.open(csv_path);
    if (!csv_file) {
      std::cerr << "multi_device_bench: cannot write " << csv_path << '\n';
      return 2;
    }
  }
  std::ostream& csv = csv_path.empty() ? std::cout : csv_file;
  csv << "device_set,input,rows,groups,rows_per_device,wall_median_ms,wall_best_ms,first_query_ms,"
               "ratio_to_best_single,members_setup_ms,members_run_ms,merge_ms,finalize_ms,verified,merge\n";
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

    // Device input: every row in each member's memory (alone), and each member's part.
    std::vector<gpuagg::device_column<std::uint32_t>> all_g, all_v, parts_g, parts_v;
    const auto upload = [](gpuagg::context& ctx, const std::uint32_t* from, std::size_t count) {
      cl::Buffer b = ctx.buffer(std::max<std::size_t>(count, 1) * sizeof(std::uint32_t), "a benchmark column");
      if (count > 0) ctx.compute_queue().enqueueWriteBuffer(b, CL_TRUE, 0, count * sizeof(std::uint32_t), from);
      return gpuagg::device_column<std::uint32_t>(b, count);
    };
    if (wants("device")) {
      for (std::size_t i = 0; i < n; ++i) {
        all_g.push_back(upload(set[i], pageable_g.data(), rows));
        all_v.push_back(upload(set[i], pageable_v.data(), rows));
        parts_g.push_back(upload(set[i], pageable_g.data() + part_first(i), part_rows(i)));
        parts_v.push_back(upload(set[i], pageable_v.data() + part_first(i), part_rows(i)));
      }
    }
    if (wants("pinned-parts")) {
      for (std::size_t i = 0; i < n; ++i) {
        std::copy(pageable_g.begin(), pageable_g.end(), own_g[i].begin());
        std::copy(pageable_v.begin(), pageable_v.end(), own_v[i].begin());
        std::copy_n(pageable_g.begin() + part_first(i), part_rows(i), part_g[i].begin());
        std::copy_n(pageable_v.begin() + part_first(i), part_rows(i), part_v[i].begin());
      }
    }

    for (const auto& input : inputs) {
      const bool pinned = input == "pinned";
      const std::span<const std::uint32_t> g = pinned ? std::span<const std::uint32_t>(pinned_g)
                                                      : std::span<const std::uint32_t>(pageable_g);
      const std::span<const std::uint32_t> v = pinned ? std::span<const std::uint32_t>(pinned_v)
                                                      : std::span<const std::uint32_t>(pageable_v);
      // One device alone over columns it reads (its device memory, or memory pinned for it).
      const auto alone_on = [&](gpuagg::context& device, const auto& keys, const auto& vals) {
        gpuagg::options opts;
        opts.ctx = &device;
        auto r = gpuagg::group_by(keys, vals, query, opts);
        if (verbose) std::cerr << input << ' ' << groups << " groups alone: " << host_phases(r.stats) << '\n';
        std::string phases = phases_of(r.stats) + ",-";  // before r moves: copying a result is not the query's time
        return std::tuple{std::move(r), std::vector<std::uint64_t>{rows}, std::move(phases)};
      };
      // The whole set's query: its result, rows per member, phases.
      const auto of_set = [&](auto r, bool several) {
        std::vector<std::uint64_t> per;
        for (const auto& d : r.stats.devices) per.push_back(d.rows);
        // Every query of several members, with each member's rows, blocks and verdict, on stderr.
        if (several && verbose) {
          std::cerr << input << ' ' << groups << " groups: " << r.stats << '\n';
          for (const auto& d : r.stats.devices) std::cerr << "  member: " << host_phases(d.stats) << '\n';
        }
        std::string phases = several ? phases_of(r.stats) : phases_of(r.result.stats);
        phases += !several ? ",-" : r.stats.by_owner ? ",by-owner" : ",one-site";
        return std::tuple{std::move(r.result), per, std::move(phases)};
      };
      // One query over `members` (the whole set, or one member alone: index `alone`).
      const auto run_once = [&](const gpuagg::device_set& members, std::size_t alone) {
        if (input == "device") {
          if (members.size() == 1) return alone_on(members[0], all_g[alone], all_v[alone]);
          return of_set(gpuagg::group_by_parts(members, parts_g, parts_v, query), true);
        }
        if (input == "pinned-parts") {
          if (members.size() == 1) return alone_on(members[0], own_g[alone], own_v[alone]);
          std::vector<std::span<const std::uint32_t>> pg, pv;
          for (std::size_t i = 0; i < n; ++i) {
            pg.emplace_back(part_g[i]);
            pv.emplace_back(part_v[i]);
          }
          return of_set(gpuagg::group_by_parts(members, pg, pv, query), true);
        }
        return of_set(gpuagg::group_by(members, g, v, query), members.size() > 1);
      };
      // The set forgets which members were too slow (multi_device/participation.hpp) before each
      // shape, so its first query is one where every member takes part: first_query_ms.
      const auto measure = [&](const gpuagg::device_set& devices, std::size_t alone) {
        timing t;
        std::vector<double> walls;
        devices.reset_participation();
        for (unsigned rep = 0; rep < warmup + reps; ++rep) {
          const auto start = std::chrono::steady_clock::now();
          const auto [r, per, phases] = run_once(devices, alone);
          const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          t.verified = t.verified && matches(r, sums, present);
          if (rep == 0) t.first = wall;
          if (rep < warmup) continue;
          walls.push_back(wall);
          t.rows_per_device = per;
          t.phases = phases.substr(0, phases.rfind(','));
          t.merge = phases.substr(phases.rfind(',') + 1);
        }
        std::sort(walls.begin(), walls.end());
        t.median = walls.empty() ? 0 : walls[walls.size() / 2];
        t.best = walls.empty() ? 0 : walls.front();
        return t;
      };
      std::vector<timing> alone;
      double best_single = 0;
      for (std::size_t i = 0; i < singles.size(); ++i) {
        alone.push_back(measure(singles[i], i));
        if (best_single == 0 || alone.back().median < best_single) best_single = alone.back().median;
      }
      // The set once per merge form asked for (GPUAGG_MERGE, read by each query).
      std::vector<timing> together;
      if (set.size() > 1) {
        for (const auto& m : merges) {
          if (m == "rule") {
            unsetenv("GPUAGG_MERGE");
          } else {
            setenv("GPUAGG_MERGE", m.c_str(), 1);
          }
          together.push_back(measure(set, 0));
        }
        unsetenv("GPUAGG_MERGE");
      }
      const auto line = [&](const std::string& name, const timing& t) {
        std::string per;
        for (const auto n : t.rows_per_device) per += (per.empty() ? "" : ";") + std::to_string(n);
        csv << '"' << name << "\"," << input << ',' << rows << ',' << groups << ',' << per << ','
                  << t.median * 1e3 << ',' << t.best * 1e3 << ',' << t.first * 1e3 << ','
                  << (t.median > 0 ? best_single / t.median : 0)
                  << ',' << t.phases << ',' << (t.verified ? 1 : 0) << ',' << t.merge << '\n';
        (t.verified ? verified : unverified) += 1;
      };
      std::string all;
      for (std::size_t i = 0; i < set.size(); ++i) {
        line(set[i].info().name, alone[i]);
        all += (all.empty() ? "" : " + ") + set[i].info().name;
      }
      for (const auto& t : together) line(all, t);
    }
  }
  std::cerr << "multi-device-bench: " << verified << " results verified, " << unverified << " unverified\n";
  return unverified == 0 && verified > 0 ? 0 : 1;
}
