// tpch_q1_bench: TPC-H Query 1 with gpuagg's default call (examples/tpch_q1.cpp's query: composite
// keys, narrow columns, the WHERE clause fused), on device-resident and on host (pinned,
// pageable) columns, at the scale factors given. Every answer is checked against a CPU pass
// over the same columns; the program exits non-zero if any is not, or none was checked.
//
// Beside each host input, the time to copy the same narrow columns to the device (pinned: one
// write per column from pinned memory into device buffers, all in flight together): the PCIe
// bound the query's host path is measured against. `--dump DIR` writes the columns as raw files
// (bench/tpch_q1_pyarrow.py runs the same query with pyarrow on them). `--systems` measures
// alternatives beside the default call in the same process (fixed configurations, private
// groups); the CSV's `system` column names each.

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gpuagg/groupby.hpp>

#define GPUAGG_EXAMPLE_NO_MAIN
#include "../examples/tpch_q1.cpp"

namespace {

using namespace gpuagg;

std::vector<double> parse_list(const std::string& text) {
  std::vector<double> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::stod(item));
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

/// Q1 on the CPU, on every host thread (each a share of the rows, merged): the reference.
std::vector<tpch::q1_row> parallel_reference(const tpch::lineitem& li) {
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 64u);
  std::vector<std::vector<tpch::q1_row>> parts(threads);
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        tpch::lineitem slice;
        const std::size_t begin = li.size() * t / threads, end = li.size() * (t + 1) / threads;
        const auto cut = [&](const auto& from, auto& to) { to.assign(from.begin() + begin, from.begin() + end); };
        cut(li.quantity, slice.quantity);
        cut(li.extendedprice, slice.extendedprice);
        cut(li.discount, slice.discount);
        cut(li.tax, slice.tax);
        cut(li.returnflag, slice.returnflag);
        cut(li.linestatus, slice.linestatus);
        cut(li.shipdate, slice.shipdate);
        parts[t] = tpch::q1_reference(slice);
      });
    }
  }
  std::vector<tpch::q1_row> merged;
  for (const auto& part : parts) {
    for (const auto& row : part) {
      auto it = std::find_if(merged.begin(), merged.end(), [&](const tpch::q1_row& m) {
        return m.returnflag == row.returnflag && m.linestatus == row.linestatus;
      });
      if (it == merged.end()) {
        merged.push_back(row);
        continue;
      }
      it->sum_qty += row.sum_qty;
      it->sum_base_price += row.sum_base_price;
      it->sum_disc_price += row.sum_disc_price;
      it->sum_charge += row.sum_charge;
      it->sum_discount += row.sum_discount;
      it->count_order += row.count_order;
    }
  }
  std::sort(merged.begin(), merged.end(), [](const tpch::q1_row& a, const tpch::q1_row& b) {
    return a.returnflag != b.returnflag ? a.returnflag < b.returnflag : a.linestatus < b.linestatus;
  });
  return merged;
}

template <class T>
device_column<T> upload(context& ctx, const std::vector<T>& host) {
  cl::Buffer buffer = ctx.buffer(host.size() * sizeof(T), "a lineitem column", CL_MEM_READ_ONLY);
  detail::check(ctx.compute_queue().enqueueWriteBuffer(buffer, CL_TRUE, 0, host.size() * sizeof(T), host.data()),
                "uploading a lineitem column");
  return device_column<T>(buffer, host.size());
}

template <class T>
pinned_array<T> pin(context& ctx, const std::vector<T>& host) {
  pinned_array<T> out(ctx, host.size());
  std::copy(host.begin(), host.end(), out.data());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tpch_q1_bench: TPC-H Q1 with the default group_by call, verified"};
  std::string scales = "1";
  std::string inputs = "device,pinned,pageable";
  unsigned reps = 5;
  std::string csv_path;
  std::string dump;
  app.add_option("--scale", scales, "scale factors, e.g. 10,100");
  app.add_option("--input", inputs, "device,pinned,pageable");
  app.add_option("--reps", reps, "timed queries per input after one untimed");
  app.add_option("--csv", csv_path, "CSV of every timed query (appended)");
  app.add_option("--dump", dump, "write the columns of each scale factor as raw files under this folder");
  // Other systems beside the default call, for measuring the plan's alternatives: a fixed
  // strategy and configuration (W:<groups>x<size> or S:<groups>x<size>), then "+c<N>" for N
  // local table copies (options::local_table_copies) and a trailing "+p" for
  // options::private_groups; "p" alone is the default call with private groups.
  std::string systems_text = "default";
  app.add_option("--systems", systems_text, "default,p,W:32x128,S:1024x128+p,... (default: the default call only)");
  CLI11_PARSE(app, argc, argv);
  struct variant {
    std::string name;
    options opts;
  };
  std::vector<variant> variants;
  {
    std::stringstream list(systems_text);
    std::string item;
    while (std::getline(list, item, ',')) {
      variant v{item, {}};
      std::string spec = item;
      if (const auto at = spec.find("+c"); at != std::string::npos) {  // +c<N>: N local table copies
        v.opts.local_table_copies = static_cast<std::uint32_t>(std::stoul(spec.substr(at + 2)));
        const auto next = spec.find('+', at + 1);  // the "+p" after it, if any, stays
        spec.erase(at, next == std::string::npos ? std::string::npos : next - at);
      }
      if (spec.size() >= 2 && spec.substr(spec.size() - 2) == "+p") {
        v.opts.private_groups = true;
        spec.resize(spec.size() - 2);
      }
      if (spec == "p") {
        v.opts.private_groups = true;
      } else if (spec != "default") {
        char kind = 0;
        unsigned groups = 0, size = 0;
        if (std::sscanf(spec.c_str(), "%c:%ux%u", &kind, &groups, &size) != 3 || (kind != 'W' && kind != 'S')) {
          std::cerr << "tpch-q1-bench: --systems: " << item << " is not default, p, W:<g>x<s> or S:<g>x<s> (+p)\n";
          return 2;
        }
        v.opts.strategy = kind == 'W' ? strategy_kind::workgroup_local : strategy_kind::shared;
        v.opts.config = launch_config{groups, size};
      }
      variants.push_back(v);
    }
  }

  context& ctx = default_context();
  std::ofstream csv;
  if (!csv_path.empty()) {
    const bool fresh = !std::ifstream(csv_path).good();
    csv.open(csv_path, std::ios::app);
    if (fresh) {
      csv << "device,scale,rows,column_bytes,input,system,rep,wall_ms,kernel_ms,copy_ms,strategy,work_groups_per_cu,"
             "work_group_size,blocks,groups,verified,setup_ms,host_sample_ms,host_profile_ms,host_estimate_ms,"
             "host_programs_ms,host_buffers_ms,host_enqueue_ms,host_wait_ms,host_growth_ms,host_finalize_ms,host_plan_ms\n";
    }
  }
  std::size_t verified = 0, unverified = 0;
  for (const double scale : parse_list(scales)) {
    const auto generated = std::chrono::steady_clock::now();
    const auto li = tpch::generate_lineitem(scale);
    const auto expected = parallel_reference(li);
    std::cerr << "tpch-q1-bench: SF " << scale << ": " << li.size() << " lineitems, " << li.bytes() / 1e9
              << " GB of columns, generated and checked on the CPU in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - generated).count() << " s\n";
    if (!dump.empty()) {
      const auto dir = std::filesystem::path(dump) / ("sf" + std::to_string(scale));
      std::filesystem::create_directories(dir);
      const auto write = [&](const char* name, const auto& column) {
        std::ofstream out(dir / name, std::ios::binary);
        out.write(reinterpret_cast<const char*>(column.data()), column.size() * sizeof(column[0]));
      };
      write("quantity.i8", li.quantity);
      write("extendedprice.i32", li.extendedprice);
      write("discount.i8", li.discount);
      write("tax.i8", li.tax);
      write("returnflag.u8", li.returnflag);
      write("linestatus.u8", li.linestatus);
      write("shipdate.i16", li.shipdate);
      // The CPU pass's answer, for the pyarrow run to check its own against.
      std::ofstream answer(dir / "answer.csv");
      answer << "returnflag,linestatus,sum_qty,sum_base_price,sum_disc_price,count_order\n";
      for (const auto& row : expected) {
        answer << char(row.returnflag) << ',' << char(row.linestatus) << ',' << row.sum_qty << ','
               << row.sum_base_price << ',' << row.sum_disc_price << ',' << row.count_order << '\n';
      }
    }
    std::stringstream list(inputs);
    std::string input;
    while (std::getline(list, input, ',')) {
      double copy_ms = 0;
      std::vector<double> walls;
      options opts;                   // the system being measured (repeat sets it)
      std::string system = "default";
      // Each query of this input: the user's call, timed, and its answer checked.
      const auto run = [&](auto&& call, unsigned rep, bool timed) {
        const auto start = std::chrono::steady_clock::now();
        const auto r = call();
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const bool ok = tpch::q1_rows(r) == expected;
        (ok ? verified : unverified) += 1;
        if (!ok) {
          std::cerr << "tpch-q1-bench: UNVERIFIED SF " << scale << ' ' << input << ' ' << system << " rep " << rep
                    << '\n';
        }
        if (!timed) return;
        walls.push_back(wall);
        const auto& s = r.stats;
        const double kernels = s.aggregate_seconds + s.partition_seconds + s.initialize_seconds + s.merge_seconds +
                               s.finalize_seconds + s.estimate_seconds;
        const execution_params last = s.blocks.empty() ? execution_params{} : s.blocks.back().params;
        if (csv.is_open()) {
          csv << '"' << s.device << "\"," << scale << ',' << li.size() << ',' << li.bytes() << ',' << input
              << ',' << system << ',' << rep << ',' << std::setprecision(6) << wall * 1e3 << ',' << kernels * 1e3 << ','
              << copy_ms << ',' << to_string(last.strategy) << ',' << last.config.work_groups_per_cu << ','
              << last.config.work_group_size << ',' << s.blocks.size() << ',' << r.size() << ',' << (ok ? 1 : 0)
              << ',' << s.setup_seconds * 1e3;
          for (const double phase : {s.host.sample, s.host.profile, s.host.estimate, s.host.programs, s.host.buffers,
                                     s.host.enqueue, s.host.wait, s.host.growth, s.host.finalize}) {
            csv << ',' << phase * 1e3;
          }
          csv << ',' << s.host.plan * 1e3 << '\n';
          csv.flush();
        }
      };
      // Every system in turn: one untimed query (the first of its shape builds or loads
      // programs), then the timed ones, and their median.
      const auto repeat = [&](auto&& call) {
        for (const auto& v : variants) {
          opts = v.opts;
          system = v.name;
          walls.clear();
          run(call, 0, false);
          for (unsigned rep = 0; rep < reps; ++rep) run(call, rep, true);
          std::cout << "SF " << scale << ' ' << input << ' ' << system << ": median " << median(walls) * 1e3
                    << " ms, best " << (walls.empty() ? 0 : *std::min_element(walls.begin(), walls.end()) * 1e3)
                    << " ms" << (copy_ms > 0 ? ", copy of the columns " + std::to_string(copy_ms) + " ms" : std::string())
                    << std::endl;
        }
      };
      if (input == "device") {
        const auto rf = upload(ctx, li.returnflag);
        const auto ls = upload(ctx, li.linestatus);
        const auto q = upload(ctx, li.quantity);
        const auto p = upload(ctx, li.extendedprice);
        const auto d = upload(ctx, li.discount);
        const auto t = upload(ctx, li.tax);
        const auto s = upload(ctx, li.shipdate);
        repeat([&] { return group_by(keys(rf, ls), values(q, p, d, t, s), tpch::q1_query, opts); });
      } else if (input == "pinned") {
        const auto rf = pin(ctx, li.returnflag);
        const auto ls = pin(ctx, li.linestatus);
        const auto q = pin(ctx, li.quantity);
        const auto p = pin(ctx, li.extendedprice);
        const auto d = pin(ctx, li.discount);
        const auto t = pin(ctx, li.tax);
        const auto s = pin(ctx, li.shipdate);
        // The PCIe bound: the same columns written to device buffers from pinned memory, all at once.
        {
          std::vector<cl::Buffer> targets;
          std::vector<std::pair<const void*, std::size_t>> sources{
              {rf.data(), rf.size()}, {ls.data(), ls.size()}, {q.data(), q.size()},     {p.data(), p.size() * 4},
              {d.data(), d.size()},   {t.data(), t.size()},   {s.data(), s.size() * 2}};
          for (const auto& [data, bytes] : sources) targets.push_back(ctx.buffer(bytes, "a copy target"));
          std::vector<double> copies;
          for (unsigned rep = 0; rep < 3; ++rep) {
            const auto start = std::chrono::steady_clock::now();
            for (std::size_t c = 0; c < sources.size(); ++c) {
              detail::check(ctx.transfer_queue().enqueueWriteBuffer(targets[c], CL_FALSE, 0, sources[c].second,
                                                                    sources[c].first),
                            "copying a column");
            }
            detail::check(ctx.transfer_queue().finish(), "copying the columns");
            copies.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
          }
          copy_ms = *std::min_element(copies.begin(), copies.end()) * 1e3;
        }
        repeat([&] { return group_by(keys(rf, ls), values(q, p, d, t, s), tpch::q1_query, opts); });
      } else if (input == "pageable") {
        repeat([&] {
          return group_by(keys(li.returnflag, li.linestatus),
                          values(li.quantity, li.extendedprice, li.discount, li.tax, li.shipdate), tpch::q1_query,
                          opts);
        });
      } else {
        std::cerr << "tpch-q1-bench: unknown input " << input << '\n';
        return 2;
      }
    }
  }
  std::cout << "tpch-q1-bench: " << verified << " results verified, " << unverified << " unverified\n";
  return unverified == 0 && verified > 0 ? 0 : 1;
}
