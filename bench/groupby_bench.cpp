// groupby_bench: what a user calling the README's example gets.
//
//   SELECT g, sum(v) FROM R GROUP BY g
//
// over 2^rows (g, v) uint32 tuples, keys in [0, 2^k) drawn as peers.py and gpuagg_bench draw
// them (uniform, zipf s = 1.1, 90% one heavy hitter, or uniform and sorted), values in [1, 100]
// (never 0, so a lost or doubled row changes a sum). Systems, measured in one process:
//   default  group_by / group_by_on_device exactly as the README shows them: no options at all
//   oracle   the reference beside it: the true group count as the hint and the fastest fixed
//            (strategy, configuration) of a sweep over both hash strategies' grids
// With --keys two the keys are two uint32 columns, keys(a, b): group k of the draw above becomes
// the pair (a, b) of two bijections of k, so the pairs' groups are the draw's (the composite-key
// figure beside the single-key one). With --keys two-narrow group k becomes (k's high half, k's
// low half): two columns each uniform over a narrow range, as identifiers, flags and dates are.
// With --keys scattered the key is one uint32 column, a
// bijection of k spread over the 32-bit range (keys that collide in a hash table, as most key
// sets other than a dense range do). With --keys one64 the key is one uint64 column holding that
// pair's word a << 32 | b: a 64-bit key without the second load, which tells a composite key's
// cost of its word width from that of its columns. With --keys wide they are two uint64
// columns, two 64-bit bijections of k: 128 bits, the key dictionary's path (wide_keys.hpp;
// default system only). With --reference-one (pairs only) each of the pairs' default queries is
// followed by the default call on one uniform uint32 key column of the same group count, into
// a CSV of its own: the single key the pairs are compared with, in the same turns.
// Phases: `first` is the first query of its shape in a process that ran other shapes before;
// `warm` queries follow it (with --interleave after the oracle's sweep, one of each system's in
// turn); `cold` (--cold) is the process's first query, timed alone, after
// which the program exits (the suite script runs it in a fresh process, with empty and with
// warm on-disk caches).
// Wall time is the host's clock around the call; kernel time the profiled kernels of the
// query's stats. Every result is verified: its group count and the checksum of all its
// (key, sum) pairs against the host's reference; the program exits non-zero if any result is
// unverified or none was verified.

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gpuagg/groupby.hpp>

#include "row_draw.hpp"
#include "verify.hpp"

namespace {

using namespace gpuagg;
using gpuagg_bench::pair_checksum;

struct settings {
  unsigned rows_log2 = 27;
  std::string groups_log2 = "0:28:2";
  std::string distribution = "uniform";
  std::string input = "device";
  std::string systems = "default,oracle";
  unsigned reps = 5;
  unsigned sweep_reps = 2;
  std::string sweep = "full";
  bool cold = false;
  bool interleave = false;
  std::string phase = "cold";
  std::string csv;
  std::string sweep_csv;
  std::uint64_t seed = 1;
  std::string keys = "one";
  std::string reference_csv;  // --reference-one: the single key's default in the pairs' turns
  int direct_table = -1;      // options::direct_table in every system's queries: -1 the default's rule
};

std::vector<unsigned> parse_range(const std::string& text) {
  std::vector<unsigned> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    unsigned a = 0, b = 0, step = 1;
    const int n = std::sscanf(item.c_str(), "%u:%u:%u", &a, &b, &step);
    if (n == 1) {
      out.push_back(a);
    } else {
      for (unsigned k = a; k <= b; k += std::max(step, 1u)) out.push_back(k);
    }
  }
  return out;
}

/// --keys two: group k's key columns (a, b) as one word a << 32 | b; two odd multipliers make
/// each column a bijection of k.
std::uint64_t pair_key(std::uint64_t k) {
  const auto a = static_cast<std::uint32_t>(k) * 0x9E3779B1u;
  const auto b = (static_cast<std::uint32_t>(k) ^ 0xA5A5A5A5u) * 0x85EBCA6Bu;
  return std::uint64_t{a} << 32 | b;
}

/// --keys two-narrow: group k of a domain of 2^groups_log2 keys as (a, b) = (k's high half,
/// k's low half), each column uniform over its own narrow range, as identifiers, flags and
/// dates are; as one word a << 32 | b.
std::uint64_t narrow_pair_key(std::uint64_t k, unsigned groups_log2) {
  const unsigned low = groups_log2 / 2;
  return (k >> low) << 32 | (k & ((std::uint64_t{1} << low) - 1));
}

/// Whether --keys gives keys(a, b) of two uint32 columns (two, two-narrow).
bool pair_columns(const settings& s) { return s.keys == "two" || s.keys == "two-narrow"; }

/// --keys scattered: group k's key, MurmurHash3's fmix32 of k (a bijection): keys spread over
/// the whole 32-bit range as identifiers and hashed values are, which collide in a hash table
/// where the draw's dense range [0, 2^k) does not (multiply-shift gives each its own bucket).
std::uint32_t scatter_key(std::uint32_t k) { return gpuagg::detail::fmix32(k); }

/// --keys wide: group k's key columns (a, b), two uint64 bijections of k (128 bits: the key
/// dictionary's path), and the word the checksum takes for them.
std::pair<std::uint64_t, std::uint64_t> wide_key(std::uint64_t k) {
  return {k * 0x9E3779B97F4A7C15ULL, (k ^ 0xA5A5A5A5A5A5A5A5ULL) * 0xC2B2AE3D27D4EB4FULL};
}
std::uint64_t wide_word(std::uint64_t a, std::uint64_t b) { return a ^ (b * 0xFF51AFD7ED558CCDULL); }

/// The input and its reference: the distinct keys and the checksum of every (key, sum).
struct dataset {
  std::size_t rows = 0;
  std::vector<std::uint32_t> keys;
  std::vector<std::uint32_t> keys2;  // --keys two: the second key column
  std::vector<std::uint64_t> keys64;  // --keys one64: the pair's word
  cl::Buffer keys64_dev;
  pinned_array<std::uint64_t> keys64_pinned;
  std::vector<std::uint32_t> vals;
  std::uint64_t groups = 0;
  std::uint64_t checksum = 0;
  cl::Buffer keys_dev;
  cl::Buffer keys2_dev;
  cl::Buffer vals_dev;
  pinned_array<std::uint32_t> keys_pinned;
  pinned_array<std::uint32_t> keys2_pinned;
  pinned_array<std::uint32_t> vals_pinned;
  std::vector<std::uint64_t> wide_a, wide_b;  // --keys wide: the key columns
  cl::Buffer wide_a_dev, wide_b_dev;
  pinned_array<std::uint64_t> wide_a_pinned, wide_b_pinned;
};

dataset make_dataset(context& ctx, const settings& s, unsigned groups_log2) {
  dataset d;
  d.rows = std::size_t{1} << s.rows_log2;
  const std::uint64_t domain = std::uint64_t{1} << groups_log2;
  d.keys.resize(d.rows);
  d.vals.resize(d.rows);
  // Rows in parallel chunks, each from its own seeded generator: the same input every run.
  const gpuagg_bench::row_draw draw(domain, s.distribution);
  // Periodic keys: row i holds key i % groups (round-robin ids), every key rows / groups times.
  const bool periodic = s.distribution == "periodic";
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 16u);
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        std::mt19937_64 rng(s.seed * 0x9E3779B97F4A7C15ULL + groups_log2 * 131 + t);
        const std::size_t begin = d.rows * t / threads;
        const std::size_t end = d.rows * (t + 1) / threads;
        for (std::size_t i = begin; i < end; ++i) {
          const std::uint64_t r = rng();
          d.keys[i] = static_cast<std::uint32_t>(periodic ? i & (domain - 1) : draw.key(r));
          d.vals[i] = static_cast<std::uint32_t>(1 + gpuagg_bench::row_draw::value(r));
        }
      });
    }
  }
  std::vector<std::uint64_t> sums(domain, 0);
  std::vector<std::uint32_t> counts(domain, 0);
  for (std::size_t i = 0; i < d.rows; ++i) {
    sums[d.keys[i]] += d.vals[i];
    ++counts[d.keys[i]];
  }
  if (s.distribution == "sorted") {  // a counting sort: keys in order, each row's value kept with its key
    std::vector<std::uint64_t> next(domain, 0);
    std::uint64_t at = 0;
    for (std::uint64_t k = 0; k < domain; ++k) {
      next[k] = at;
      at += counts[k];
    }
    std::vector<std::uint32_t> keys(d.rows), vals(d.rows);
    for (std::size_t i = 0; i < d.rows; ++i) {
      const auto to = next[d.keys[i]]++;
      keys[to] = d.keys[i];
      vals[to] = d.vals[i];
    }
    d.keys.swap(keys);
    d.vals.swap(vals);
  }
  const bool two = s.keys == "two" || s.keys == "one64";
  const bool narrow = s.keys == "two-narrow";
  const auto pair_of = [&](std::uint64_t k) { return narrow ? narrow_pair_key(k, groups_log2) : pair_key(k); };
  const bool wide = s.keys == "wide";
  for (std::uint64_t k = 0; k < domain; ++k) {
    if (counts[k] == 0) continue;
    ++d.groups;
    const auto [wa, wb] = wide_key(k);
    const std::uint64_t key = two || narrow         ? pair_of(k)
                              : wide                ? wide_word(wa, wb)
                              : s.keys == "scattered" ? scatter_key(static_cast<std::uint32_t>(k))
                                                      : k;
    d.checksum += pair_checksum(key, sums[k]);
  }
  if (wide) {
    d.wide_a.resize(d.rows);
    d.wide_b.resize(d.rows);
    for (std::size_t i = 0; i < d.rows; ++i) std::tie(d.wide_a[i], d.wide_b[i]) = wide_key(d.keys[i]);
    const std::size_t wide_bytes = d.rows * sizeof(std::uint64_t);
    if (s.input == "device") {
      d.wide_a_dev = ctx.buffer(wide_bytes, "benchmark keys (wide, a)", CL_MEM_READ_ONLY);
      d.wide_b_dev = ctx.buffer(wide_bytes, "benchmark keys (wide, b)", CL_MEM_READ_ONLY);
      ctx.compute_queue().enqueueWriteBuffer(d.wide_a_dev, CL_TRUE, 0, wide_bytes, d.wide_a.data());
      ctx.compute_queue().enqueueWriteBuffer(d.wide_b_dev, CL_TRUE, 0, wide_bytes, d.wide_b.data());
    } else if (s.input == "pinned") {
      d.wide_a_pinned = pinned_array<std::uint64_t>(ctx, d.rows);
      d.wide_b_pinned = pinned_array<std::uint64_t>(ctx, d.rows);
      std::copy(d.wide_a.begin(), d.wide_a.end(), d.wide_a_pinned.data());
      std::copy(d.wide_b.begin(), d.wide_b.end(), d.wide_b_pinned.data());
    }
  }
  if (s.keys == "scattered") {
    for (auto& k : d.keys) k = scatter_key(k);
  }
  if (s.keys == "one64") {
    d.keys64.resize(d.rows);
    for (std::size_t i = 0; i < d.rows; ++i) d.keys64[i] = pair_key(d.keys[i]);
    const std::size_t bytes64 = d.rows * sizeof(std::uint64_t);
    if (s.input == "device") {
      d.keys64_dev = ctx.buffer(bytes64, "benchmark keys (uint64)", CL_MEM_READ_ONLY);
      ctx.compute_queue().enqueueWriteBuffer(d.keys64_dev, CL_TRUE, 0, bytes64, d.keys64.data());
    } else if (s.input == "pinned") {
      d.keys64_pinned = pinned_array<std::uint64_t>(ctx, d.rows);
      std::copy(d.keys64.begin(), d.keys64.end(), d.keys64_pinned.data());
    }
  }
  if (pair_columns(s)) {
    d.keys2.resize(d.rows);
    for (std::size_t i = 0; i < d.rows; ++i) {
      const std::uint64_t pair = pair_of(d.keys[i]);
      d.keys[i] = static_cast<std::uint32_t>(pair >> 32);
      d.keys2[i] = static_cast<std::uint32_t>(pair);
    }
  }
  const std::size_t bytes = d.rows * sizeof(std::uint32_t);
  if (s.input == "device") {
    d.keys_dev = ctx.buffer(bytes, "benchmark keys", CL_MEM_READ_ONLY);
    d.vals_dev = ctx.buffer(bytes, "benchmark values", CL_MEM_READ_ONLY);
    ctx.compute_queue().enqueueWriteBuffer(d.keys_dev, CL_TRUE, 0, bytes, d.keys.data());
    ctx.compute_queue().enqueueWriteBuffer(d.vals_dev, CL_TRUE, 0, bytes, d.vals.data());
    if (!d.keys2.empty()) {
      d.keys2_dev = ctx.buffer(bytes, "benchmark keys (second column)", CL_MEM_READ_ONLY);
      ctx.compute_queue().enqueueWriteBuffer(d.keys2_dev, CL_TRUE, 0, bytes, d.keys2.data());
    }
  } else if (s.input == "pinned") {
    d.keys_pinned = pinned_array<std::uint32_t>(ctx, d.rows);
    d.vals_pinned = pinned_array<std::uint32_t>(ctx, d.rows);
    std::copy(d.keys.begin(), d.keys.end(), d.keys_pinned.data());
    std::copy(d.vals.begin(), d.vals.end(), d.vals_pinned.data());
    if (!d.keys2.empty()) {
      d.keys2_pinned = pinned_array<std::uint32_t>(ctx, d.rows);
      std::copy(d.keys2.begin(), d.keys2.end(), d.keys2_pinned.data());
    }
  }
  return d;
}

const auto the_query = select(sum(col<0>));

/// One timed query and what its stats say.
struct run {
  double wall_seconds = 0;
  double kernel_seconds = 0;
  query_stats stats;
  bool verified = false;
  std::string why;
};

double kernel_seconds(const query_stats& s) {
  return s.aggregate_seconds + s.partition_seconds + s.initialize_seconds + s.merge_seconds + s.finalize_seconds +
         s.estimate_seconds;
}

/// A timed query's verdict against the dataset's reference (its group count and the checksum of
/// every (key, sum) pair), and its profiled kernel time.
void finish(run& r, const dataset& d, std::uint64_t groups, std::uint64_t checksum) {
  if (groups != d.groups) {
    r.why = "groups " + std::to_string(groups) + " != " + std::to_string(d.groups);
  } else if (checksum != d.checksum) {
    r.why = "checksum";
  }
  r.kernel_seconds = kernel_seconds(r.stats);
  r.verified = r.why.empty();
}

/// The checksum of a composite-key result's (a << 32 | b, sum) pairs, read back after the timing.
template <class Result>
std::uint64_t host_pair_checksum(const Result& out) {
  std::uint64_t sum = 0;
  const auto& a = out.keys.template column<0>();
  const auto& b = out.keys.template column<1>();
  for (std::size_t i = 0; i < out.size(); ++i) {
    sum += pair_checksum(std::uint64_t{a[i]} << 32 | b[i], std::uint64_t(out.template column<0>()[i]));
  }
  return sum;
}

/// --keys two: the same call with keys(a, b).
run timed_pair_query(context& ctx, const dataset& d, const settings& s, const options& opts) {
  run r;
  std::uint64_t groups = 0, checksum = 0;
  if (s.input == "device") {
    const auto start = std::chrono::steady_clock::now();
    const auto out = group_by_on_device(keys(device_column<std::uint32_t>(d.keys_dev, d.rows),
                                             device_column<std::uint32_t>(d.keys2_dev, d.rows)),
                                        device_column<std::uint32_t>(d.vals_dev, d.rows), the_query, opts);
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.stats = out.stats;
    groups = out.size();
    std::vector<std::uint32_t> a(groups), b(groups);
    std::vector<std::int64_t> sums(groups);
    if (groups > 0) {
      auto& q = ctx.compute_queue();
      q.enqueueReadBuffer(out.key_columns.at(0), CL_TRUE, 0, groups * 4, a.data());
      q.enqueueReadBuffer(out.key_columns.at(1), CL_TRUE, 0, groups * 4, b.data());
      q.enqueueReadBuffer(out.column<0>(), CL_TRUE, 0, groups * 8, sums.data());
    }
    for (std::size_t i = 0; i < groups; ++i) {
      checksum += pair_checksum(std::uint64_t{a[i]} << 32 | b[i], std::uint64_t(sums[i]));
    }
  } else {
    const auto start = std::chrono::steady_clock::now();
    const auto out = s.input == "pinned" ? group_by(keys(d.keys_pinned, d.keys2_pinned), d.vals_pinned, the_query, opts)
                                         : group_by(keys(d.keys, d.keys2), d.vals, the_query, opts);
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.stats = out.stats;
    groups = out.size();
    checksum = host_pair_checksum(out);
  }
  finish(r, d, groups, checksum);
  return r;
}

/// --keys wide: the same call with keys(a, b) of two uint64 columns (the key dictionary's path).
run timed_wide_query(context& ctx, const dataset& d, const settings& s, const options& opts) {
  run r;
  std::uint64_t groups = 0, checksum = 0;
  const auto sum_of = [](const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b,
                         const auto& sums) {
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < a.size(); ++i) total += pair_checksum(wide_word(a[i], b[i]), std::uint64_t(sums[i]));
    return total;
  };
  if (s.input == "device") {
    const auto start = std::chrono::steady_clock::now();
    const auto out = group_by_on_device(keys(device_column<std::uint64_t>(d.wide_a_dev, d.rows),
                                             device_column<std::uint64_t>(d.wide_b_dev, d.rows)),
                                        device_column<std::uint32_t>(d.vals_dev, d.rows), the_query, opts);
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.stats = out.stats;
    groups = out.size();
    std::vector<std::uint64_t> a(groups), b(groups);
    std::vector<std::int64_t> sums(groups);
    if (groups > 0) {
      auto& q = ctx.compute_queue();
      q.enqueueReadBuffer(out.key_columns.at(0), CL_TRUE, 0, groups * 8, a.data());
      q.enqueueReadBuffer(out.key_columns.at(1), CL_TRUE, 0, groups * 8, b.data());
      q.enqueueReadBuffer(out.column<0>(), CL_TRUE, 0, groups * 8, sums.data());
    }
    checksum = sum_of(a, b, sums);
  } else {
    const auto start = std::chrono::steady_clock::now();
    const auto out = s.input == "pinned"
                         ? group_by(keys(d.wide_a_pinned, d.wide_b_pinned), d.vals_pinned, the_query, opts)
                         : group_by(keys(d.wide_a, d.wide_b), d.vals, the_query, opts);
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.stats = out.stats;
    groups = out.size();
    checksum = sum_of(out.keys.column<0>(), out.keys.column<1>(), out.column<0>());
  }
  finish(r, d, groups, checksum);
  return r;
}

/// The call with one key column of Key (the draw's uint32 keys, or --keys one64's words) held
/// on the host (`keys`, `pinned`) and on the device (`on_device`), timed and verified.
template <class Key>
run timed_single_query(context& ctx, const dataset& d, const settings& s, const options& opts,
                       const std::vector<Key>& keys, const pinned_array<Key>& pinned, const cl::Buffer& on_device) {
  run r;
  if (s.input == "device") {
    const auto start = std::chrono::steady_clock::now();
    const auto out = group_by_on_device(device_column<Key>(on_device, d.rows),
                                        device_column<std::uint32_t>(d.vals_dev, d.rows), the_query, opts);
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.stats = out.stats;
    const std::uint64_t checksum =
        out.size() == d.groups
            ? gpuagg_bench::device_checksum<Key, std::int64_t>(ctx, out.keys, out.template column<0>(), out.size())
            : 0;
    finish(r, d, out.size(), checksum);
  } else {
    const auto start = std::chrono::steady_clock::now();
    const auto out = s.input == "pinned" ? group_by(pinned, d.vals_pinned, the_query, opts)
                                         : group_by(keys, d.vals, the_query, opts);
    r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.stats = out.stats;
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < out.size(); ++i) sum += pair_checksum(out.keys[i], std::uint64_t(out.template column<0>()[i]));
    finish(r, d, out.size(), sum);
  }
  return r;
}

/// The user's call on this input kind, timed and verified.
run timed_query(context& ctx, const dataset& d, const settings& s, const options& given) {
  options opts = given;
  if (s.direct_table >= 0) opts.direct_table = s.direct_table == 1;
  if (pair_columns(s)) return timed_pair_query(ctx, d, s, opts);
  if (s.keys == "wide") return timed_wide_query(ctx, d, s, opts);
  if (s.keys == "one64") return timed_single_query(ctx, d, s, opts, d.keys64, d.keys64_pinned, d.keys64_dev);
  return timed_single_query(ctx, d, s, opts, d.keys, d.keys_pinned, d.keys_dev);
}

/// The CSVs' distribution: the draw's, or "scattered" for its keys spread by --keys scattered
/// (the plan's scattered-keys configurations are read from those rows, bench/plan_data.py).
std::string distribution_label(const settings& s) {
  if (s.keys == "scattered" && s.distribution == "uniform") return "scattered";
  if (s.keys == "two-narrow" && s.distribution == "uniform") return "narrow";
  return s.distribution;
}

struct report {
  std::ofstream csv;
  std::size_t verified = 0;
  std::size_t unverified = 0;

  explicit report(const std::string& path) {
    if (path.empty()) return;
    const bool fresh = !std::ifstream(path).good();
    csv.open(path, std::ios::app);
    if (fresh) {
      csv << "device,input,distribution,rows,groups_log2,groups,system,phase,rep,wall_ms,kernel_ms,wall_gtuples,"
             "estimate,estimate_source,estimate_ratio,plan_level,strategy,work_groups_per_cu,work_group_size,blocks,"
             "configs,table_capacity,growths,peak_device_bytes,programs_built,setup_ms,estimate_kernel_ms,host_sample_ms,"
             "host_profile_ms,host_estimate_ms,host_programs_ms,host_buffers_ms,host_enqueue_ms,host_wait_ms,"
             "host_growth_ms,host_finalize_ms,verified,spill_capacity,spill_restarts,perfect_local_blocks,"
             "range_local_blocks,result_presized,host_result_sizing_ms,host_plan_ms,direct_addressing\n";
    }
  }

  void add(const settings& s, const dataset& d, unsigned log2, const std::string& system, const std::string& phase,
           unsigned rep, const run& r) {
    (r.verified ? verified : unverified) += 1;
    if (!r.verified) {
      std::cerr << "groupby-bench: UNVERIFIED " << system << ' ' << phase << " 2^" << log2 << ": " << r.why << '\n';
    }
    if (!csv.is_open()) return;
    const auto& st = r.stats;
    const execution_params last = st.blocks.empty() ? execution_params{} : st.blocks.back().params;
    std::vector<execution_params> configs;
    for (const auto& b : st.blocks) {
      if (std::find(configs.begin(), configs.end(), b.params) == configs.end()) configs.push_back(b.params);
    }
    csv << '"' << st.device << "\"," << s.input << ',' << distribution_label(s) << ',' << d.rows << ',' << log2 << ','
        << d.groups << ',' << system << ',' << phase << ',' << rep << ',' << std::setprecision(6)
        << r.wall_seconds * 1e3 << ',' << r.kernel_seconds * 1e3 << ',' << double(d.rows) / r.wall_seconds * 1e-9
        << ',' << st.expected_groups << ',' << to_string(st.estimate_source) << ','
        << double(st.expected_groups) / double(std::max<std::uint64_t>(d.groups, 1)) << ','
        << to_string(st.plan_level) << ',' << to_string(last.strategy) << ',' << last.config.work_groups_per_cu << ','
        << last.config.work_group_size << ',' << st.blocks.size() << ',' << configs.size() << ','
        << st.table_capacity << ',' << st.table_growths << ',' << st.peak_device_bytes << ',' << st.programs_built
        << ',' << st.setup_seconds * 1e3 << ',' << st.estimate_seconds * 1e3;
    for (const double phase : {st.host.sample, st.host.profile, st.host.estimate, st.host.programs, st.host.buffers,
                               st.host.enqueue, st.host.wait, st.host.growth, st.host.finalize}) {
      csv << ',' << phase * 1e3;
    }
    std::size_t perfect = 0, range = 0;
    for (const auto& b : st.blocks) {
      perfect += b.perfect_local ? 1 : 0;
      range += b.range_local ? 1 : 0;
    }
    csv << ',' << (r.verified ? 1 : 0) << ',' << st.spill_capacity << ',' << st.spill_restarts << ',' << perfect << ','
        << range << ',' << (st.result_presized ? 1 : 0) << ',' << st.result_sizing_seconds * 1e3 << ','
        << st.host.plan * 1e3 << ',' << (st.direct_addressing ? 1 : 0) << '\n';
    csv.flush();
  }
};

/// The configurations the oracle sweeps: "full", every power of two of work groups per compute
/// unit and work-group size in the ranges where any query ran fastest on the GPUs measured;
/// "quick", three (a test of the instrument, not a measurement); "shared", full's SHARED
/// configurations (the plan entry's direct-addressing sweep); or a list such as
/// "W:4x256,S:64x256" (W: WORKGROUPLOCAL, S: SHARED).
std::vector<execution_params> sweep_grid(const std::string& which) {
  std::vector<execution_params> grid;
  if (which == "quick") {
    return {{strategy_kind::workgroup_local, {4, 256}}, {strategy_kind::shared, {1, 256}},
            {strategy_kind::shared, {16, 64}}};
  }
  if (which != "full" && which != "shared") {
    std::stringstream in(which);
    std::string item;
    while (std::getline(in, item, ',')) {
      char kind = 0;
      unsigned wg = 0, size = 0;
      if (std::sscanf(item.c_str(), "%c:%ux%u", &kind, &wg, &size) != 3) {
        throw std::invalid_argument("--sweep: " + item + " is not W:<groups>x<size> or S:<groups>x<size>");
      }
      grid.push_back({kind == 'W' ? strategy_kind::workgroup_local : strategy_kind::shared, {wg, size}});
    }
    return grid;
  }
  if (which != "shared") {
    for (std::uint32_t wg = 1; wg <= 32; wg *= 2) {
      for (std::uint32_t size = 64; size <= 1024; size *= 2) grid.push_back({strategy_kind::workgroup_local, {wg, size}});
    }
  }
  for (std::uint32_t wg = 1; wg <= 1024; wg *= 2) {
    for (std::uint32_t size = 8; size <= 256; size *= 2) grid.push_back({strategy_kind::shared, {wg, size}});
  }
  return grid;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"groupby_bench: the default group_by call against the oracle, verified"};
  settings s;
  app.add_option("--rows-log2", s.rows_log2, "log2 of the number of rows");
  app.add_option("--groups-log2", s.groups_log2, "key domains as log2: 0:28:2 or 4,10,16");
  app.add_option("--distribution", s.distribution, "uniform | zipf | heavy | sorted | periodic (row i holds key i % groups)");
  app.add_option("--input", s.input, "device | pinned | pageable");
  app.add_option("--systems", s.systems, "default,oracle");
  app.add_option("--reps", s.reps, "timed queries per system after one untimed");
  app.add_option("--sweep-reps", s.sweep_reps, "timed queries per configuration of the oracle's sweep");
  app.add_option("--sweep", s.sweep, "the oracle's configurations: full | shared | quick | W:4x256,S:64x256,...");
  app.add_option("--direct-table", s.direct_table,
                 "options::direct_table in every query: -1 the default's rule, 0 never, 1 always (the plan entry's "
                 "direct-addressing sweep)")
      ->check(CLI::Range(-1, 1));
  app.add_flag("--cold", s.cold, "time only the process's first query (default system), then exit");
  app.add_flag("--interleave", s.interleave,
               "time the default's and the oracle's queries alternately, after the oracle's sweep (host input: "
               "the host's copy rate drifts between the two systems' turns)");
  app.add_option("--phase", s.phase, "the cold query's label in the CSV (e.g. cold-empty, cold-disk)");
  app.add_option("--csv", s.csv, "CSV of every measured query (appended)");
  app.add_option("--sweep-csv", s.sweep_csv, "CSV of the oracle's sweep: every configuration's median (appended)");
  app.add_option("--seed", s.seed, "input seed");
  app.add_option("--keys", s.keys,
                 "one: a uint32 key column; scattered: one uint32 column of keys spread over 32 bits; two: "
                 "keys(a, b), two uint32 columns; two-narrow: keys(a, b), two uint32 columns of narrow ranges (the key's "
                 "halves); one64: a uint64 column holding two's packed word; wide: keys(a, b), two uint64 columns "
                 "(the key dictionary; default system only)")
      ->check(CLI::IsMember({"one", "scattered", "two", "two-narrow", "one64", "wide"}));
  app.add_option("--reference-one", s.reference_csv,
                 "with --keys two or two-narrow: also time the default call on one uniform uint32 key column of the "
                 "same group count, a query after each of the pairs' default queries, into this CSV (appended; its "
                 "distribution is the pairs': uniform or narrow)");
  CLI11_PARSE(app, argc, argv);
  // The reference is timed in the default system's warm turns: a cold query has none.
  if (!s.reference_csv.empty() &&
      (!pair_columns(s) || s.cold || s.systems.find("default") == std::string::npos)) {
    std::cerr << "groupby-bench: --reference-one needs --keys two or two-narrow and the default system, "
                 "without --cold\n";
    return 2;
  }

  context& ctx = default_context();
  std::cerr << "groupby-bench: " << ctx.info().name << " (" << ctx.info().platform_name << ", driver "
            << ctx.info().driver_version << "), " << s.input << " input, " << s.distribution << " keys\n";
  report out(s.csv);
  // --reference-one: the single key the pairs' ratio is taken against, timed in the same turns,
  // so the two sides of the ratio share the host's state (its set-up and FINALIZE are host work
  // that drifts between processes by more than the ratio's margin).
  std::optional<report> reference;
  settings one = s;
  one.keys = "one";
  one.reference_csv.clear();
  if (!s.reference_csv.empty()) reference.emplace(s.reference_csv);
  std::ofstream sweep;
  if (!s.sweep_csv.empty()) {
    const bool fresh = !std::ifstream(s.sweep_csv).good();
    sweep.open(s.sweep_csv, std::ios::app);
    if (fresh) sweep << "device,input,distribution,rows,groups_log2,groups,strategy,work_groups_per_cu,work_group_size,median_wall_ms,median_kernel_ms\n";
  }
  const bool want_default = s.systems.find("default") != std::string::npos;
  const bool want_oracle = s.systems.find("oracle") != std::string::npos && s.keys != "wide";
  for (const unsigned log2 : parse_range(s.groups_log2)) {
    const dataset d = make_dataset(ctx, s, log2);
    const std::optional<dataset> one_d = reference ? std::optional<dataset>(make_dataset(ctx, one, log2)) : std::nullopt;
    if (s.cold) {
      const run r = timed_query(ctx, d, s, {});
      out.add(s, d, log2, "default", s.phase, 0, r);
      std::cout << "2^" << log2 << " default " << s.phase << ": " << r.wall_seconds * 1e3 << " ms wall, "
                << r.stats.programs_built << " programs built, " << r.stats.host.programs * 1e3
                << " ms in program lookups\n";
      break;  // a cold query is the process's first: one per process
    }
    std::vector<double> default_walls, oracle_walls;
    if (want_default) {
      // The first query of this shape in the process (not its first query: that is --cold).
      out.add(s, d, log2, "default", "first", 0, timed_query(ctx, d, s, {}));
      if (reference) reference->add(s, *one_d, log2, "default", "first", 0, timed_query(ctx, *one_d, one, {}));
    }
    std::vector<double> one_walls;
    const auto default_rep = [&](unsigned rep) {
      const run r = timed_query(ctx, d, s, {});
      out.add(s, d, log2, "default", "warm", rep, r);
      default_walls.push_back(r.wall_seconds);
      if (reference) {
        const run o = timed_query(ctx, *one_d, one, {});
        reference->add(s, *one_d, log2, "default", "warm", rep, o);
        one_walls.push_back(o.wall_seconds);
      }
    };
    const bool interleaved = s.interleave && want_default && want_oracle;
    if (want_default && !interleaved) {
      for (unsigned rep = 0; rep < s.reps; ++rep) default_rep(rep);
    }
    if (want_oracle) {
      // The sweep: every feasible configuration with the true group count as the hint.
      options hinted;
      hinted.expected_groups = d.groups;
      // A driver of the query's key kind over one row says which configurations can run.
      const cl::Buffer probe_words = ctx.buffer(8, "probe");
      const auto probe_u32 = device_column<std::uint32_t>(probe_words, 1);
      const auto probe_u64 = device_column<std::uint64_t>(probe_words, 1);
      const auto feasible_on = [](auto probe) {
        return std::function<bool(const execution_params&)>(
            [p = std::shared_ptr(std::move(probe))](const execution_params& e) { return p->feasible(e); });
      };
      const auto feasible =
          pair_columns(s)     ? feasible_on(make_driver(keys(probe_u32, probe_u32), probe_u32, the_query, hinted))
          : s.keys == "one64" ? feasible_on(make_driver(probe_u64, probe_u32, the_query, hinted))
                              : feasible_on(make_driver(probe_u32, probe_u32, the_query, hinted));
      std::optional<execution_params> best;
      double best_wall = 0;
      for (const auto& params : sweep_grid(s.sweep)) {
        if (!feasible(params)) continue;
        options fixed = hinted;
        fixed.strategy = params.strategy;
        fixed.config = params.config;
        std::vector<double> walls, kernels;
        bool ok = true;
        (void)timed_query(ctx, d, s, fixed);
        for (unsigned rep = 0; rep < s.sweep_reps; ++rep) {
          const run r = timed_query(ctx, d, s, fixed);
          ok &= r.verified;
          if (!r.verified) out.add(s, d, log2, "oracle-sweep", "warm", rep, r);
          walls.push_back(r.wall_seconds);
          kernels.push_back(r.kernel_seconds);
        }
        if (sweep.is_open()) {
          sweep << '"' << ctx.info().name << "\"," << s.input << ',' << distribution_label(s) << ',' << d.rows << ',' << log2
                << ',' << d.groups << ',' << to_string(params.strategy) << ',' << params.config.work_groups_per_cu
                << ',' << params.config.work_group_size << ',' << median(walls) * 1e3 << ',' << median(kernels) * 1e3
                << '\n';
        }
        if (ok && (!best || median(walls) < best_wall)) {
          best = params;
          best_wall = median(walls);
        }
      }
      if (best) {
        options fixed = hinted;
        fixed.strategy = best->strategy;
        fixed.config = best->config;
        for (unsigned rep = 0; rep < s.reps; ++rep) {
          if (interleaved) default_rep(rep);
          const run r = timed_query(ctx, d, s, fixed);
          out.add(s, d, log2, "oracle", "warm", rep, r);
          oracle_walls.push_back(r.wall_seconds);
        }
      } else if (interleaved) {
        for (unsigned rep = 0; rep < s.reps; ++rep) default_rep(rep);
      }
    }
    std::cout << "2^" << log2 << " (" << d.groups << " groups):";
    if (!default_walls.empty()) {
      std::cout << " default " << std::setprecision(4) << double(d.rows) / median(default_walls) * 1e-9 << " G/s";
    }
    if (!oracle_walls.empty()) {
      std::cout << ", oracle " << double(d.rows) / median(oracle_walls) * 1e-9 << " G/s";
      if (!default_walls.empty()) std::cout << ", default/oracle " << median(oracle_walls) / median(default_walls);
    }
    if (!one_walls.empty() && !default_walls.empty()) {
      std::cout << ", one key " << double(d.rows) / median(one_walls) * 1e-9 << " G/s, two/one "
                << median(one_walls) / median(default_walls);
    }
    std::cout << std::endl;
  }
  if (reference) {
    out.verified += reference->verified;
    out.unverified += reference->unverified;
  }
  std::cout << "groupby-bench: " << out.verified << " results verified, " << out.unverified << " unverified\n";
  return out.unverified == 0 && out.verified > 0 ? 0 : 1;
}
