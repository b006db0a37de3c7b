// The plan (plan.hpp) on described devices, without OpenCL: an H100, an AMD GPU, PoCL's CPU
// device and an unknown GPU. Every decision a query depends on is asked here as a pure function.

#include <doctest/doctest.h>

#include <gpuagg/driver/key_sample.hpp>
#include <gpuagg/key.hpp>
#include <gpuagg/plan.hpp>

#include <algorithm>
#include <array>
#include <random>
#include <set>

using namespace gpuagg;

namespace {

device_info h100() {
  device_info d;
  d.name = "NVIDIA H100 80GB HBM3";
  d.vendor = "NVIDIA Corporation";
  d.architecture = "sm_90";
  d.compute_units = 132;
  d.max_work_group_size = 1024;
  d.local_mem_bytes = 48 << 10;
  d.global_mem_bytes = std::uint64_t{80} << 30;
  d.max_alloc_bytes = std::uint64_t{20} << 30;
  d.global_cache_bytes = 50 << 20;
  d.is_gpu = true;
  d.int64_atomics = true;
  return d;
}

device_info amd_mi250() {
  device_info d;
  d.name = "gfx90a:sramecc+:xnack-";
  d.vendor = "Advanced Micro Devices, Inc.";
  d.architecture = "gfx90a";
  d.compute_units = 110;
  d.max_work_group_size = 256;
  d.local_mem_bytes = 64 << 10;
  d.global_mem_bytes = std::uint64_t{64} << 30;
  d.max_alloc_bytes = std::uint64_t{58} << 30;
  d.global_cache_bytes = 8 << 20;
  d.is_gpu = true;
  d.int64_atomics = true;
  return d;
}

device_info pocl_cpu() {
  device_info d;
  d.name = "pthread-skylake-avx512-AMD EPYC";
  d.vendor = "AuthenticAMD";
  d.architecture = "cpu";
  d.compute_units = 2;
  d.max_work_group_size = 4096;
  d.local_mem_bytes = 4 << 20;
  d.global_mem_bytes = std::uint64_t{16} << 30;
  d.max_alloc_bytes = std::uint64_t{8} << 30;
  d.global_cache_bytes = 1 << 20;
  d.is_gpu = false;
  d.int64_atomics = true;
  return d;
}

device_info unknown_gpu() {
  device_info d = h100();
  d.name = "Some Future GPU";
  d.vendor = "Someone";
  d.architecture = "";
  d.compute_units = 40;
  return d;
}

/// uint32 keys, one sum (the recorded shape), 4-byte columns.
query_shape recorded_shape() { return {}; }

input_profile uniform_input(std::uint64_t groups, std::uint64_t rows = std::uint64_t{1} << 27, bool on_device = true) {
  input_profile p;
  p.rows = rows;
  p.on_device = on_device;
  p.expected_groups = groups;
  p.source = estimate_source::sketch;
  p.sampled = true;
  p.hottest_key_share = 1.0 / double(std::max<std::uint64_t>(groups, 1));
  p.sample_size = 16384;
  return p;
}

/// Kernels that run up to `shared_limit` work items in SHARED's build and the device's limit else.
query_planner::kernel_limit_fn limits(std::uint32_t shared_limit = 1024) {
  return [shared_limit](const kernel_variant& v) {
    return v.strategy == strategy_kind::shared ? shared_limit : std::uint32_t{1024};
  };
}

query_planner plan(const device_info& d, const input_profile& p, options opts = {}, query_shape s = recorded_shape(),
                   std::uint32_t shared_limit = 1024) {
  return query_planner(d, s, p, opts, limits(shared_limit));
}

}  // namespace

TEST_CASE("entries: device, then architecture, then vendor, else generic") {
  CHECK(query_planner::entry_for(h100()).level == plan_level::device);
  device_info h200 = h100();
  h200.name = "NVIDIA H200";
  CHECK(query_planner::entry_for(h200).level == plan_level::device);
  CHECK(query_planner::entry_for(h200).regimes.data() != query_planner::entry_for(h100()).regimes.data());
  device_info h800 = h100();
  h800.name = "NVIDIA H800 PCIe";  // another sm_90 part: the H100's entry
  CHECK(query_planner::entry_for(h800).level == plan_level::architecture);
  CHECK(query_planner::entry_for(h800).regimes.data() == query_planner::entry_for(h100()).regimes.data());
  device_info a100 = h100();
  a100.name = "NVIDIA A100-SXM4-80GB";
  a100.architecture = "sm_80";
  CHECK(query_planner::entry_for(a100).level == plan_level::vendor);
  CHECK(query_planner::entry_for(amd_mi250()).level == plan_level::generic);
  CHECK(query_planner::entry_for(pocl_cpu()).level == plan_level::generic);
  CHECK(query_planner::entry_for(unknown_gpu()).level == plan_level::generic);
  CHECK(query_planner::entry_for(unknown_gpu()).regimes.data() != query_planner::entry_for(pocl_cpu()).regimes.data());
}

TEST_CASE("the H200 starts from its own entry, not the H100's") {
  // Same architecture, other measurements: sorted keys over 16 groups, and 2^10 shuffled groups
  // in local memory, where the two devices' sweeps disagree.
  device_info h200 = h100();
  h200.name = "NVIDIA H200";
  auto sorted = uniform_input(16);
  sorted.runs_share = 1.0 - 16.0 / double(sorted.rows);
  const auto on = [&](const device_info& d, const input_profile& p) { return plan(d, p, {}, recorded_shape(), 256); };
  const plan_entry own = query_planner::entry_for(h200);
  const plan_entry h100_entry = query_planner::entry_for(h100());
  REQUIRE(own.regime(4).workgroup_local_runs != h100_entry.regime(4).workgroup_local_runs);
  CHECK(on(h200, sorted).default_params().config == own.regime(4).workgroup_local_runs);
  CHECK(on(h100(), sorted).default_params().config == h100_entry.regime(4).workgroup_local_runs);
  REQUIRE(own.regime(10).workgroup_local != h100_entry.regime(10).workgroup_local);
  const auto local = on(h200, uniform_input(1 << 10)).default_params();
  CHECK(local.strategy == strategy_kind::workgroup_local);
  CHECK(local.config == own.regime(10).workgroup_local);
}

TEST_CASE("direct addressing starts from the entry's direct configurations where it has them") {
  device_info h200 = h100();
  h200.name = "NVIDIA H200";
  const plan_entry own = query_planner::entry_for(h200);
  // A regime of tables larger than the cache, where the H200's sweep with direct addressing
  // chose another configuration than its hash table's, and one within the cache, where it did
  // not.
  REQUIRE(own.regime(26).shared_direct.work_group_size != 0);
  REQUIRE(own.regime(26).shared_direct != own.regime(26).shared);
  REQUIRE(own.regime(20).shared_direct.work_group_size == 0);
  for (unsigned log2 = 18; log2 <= 28; log2 += 2) {
    CAPTURE(log2);
    const std::uint64_t groups = std::uint64_t{1} << log2;
    query_shape direct = recorded_shape();
    direct.identity_scheme = true;
    direct.domain_size = groups;
    const auto d = plan(h200, uniform_input(groups), {}, direct, 256);
    const plan_regime& r = d.regime();
    // A direct table of 2^g keys is planned as 2^g buckets of the hash table's bytes (the
    // recorded hash table's at 2^(g-1) groups): the regime the sweep of 2^g groups wrote.
    CHECK(r.max_table_log2 == (log2 >= 28 ? 63 : log2));
    const auto start = d.default_params();
    CHECK(start.strategy == strategy_kind::shared);
    // The entry's direct configuration where the sweep measured one clearly faster, else the
    // hash table's.
    CHECK(start.config == (r.shared_direct.work_group_size != 0 ? r.shared_direct : r.shared));
    // No direct sweep in the H100's entry: the hash table's configuration, as before.
    const auto on_h100 = plan(h100(), uniform_input(groups), {}, direct, 256);
    CHECK(on_h100.regime().shared_direct.work_group_size == 0);
    CHECK(on_h100.default_params().config == on_h100.regime().shared);
  }
}

TEST_CASE("the H100: WORKGROUPLOCAL while the table fits local memory, then SHARED with many work groups") {
  for (unsigned log2 = 0; log2 <= 28; log2 += 2) {
    CAPTURE(log2);
    const auto p = plan(h100(), uniform_input(std::uint64_t{1} << log2), {}, recorded_shape(), 256);
    const auto start = p.default_params();
    // 48 KiB hold 4096 buckets of 12 bytes: 2^10 groups at load 1/2 (2^11 buckets + 1), not 2^12.
    CHECK(start.strategy == (log2 <= 10 ? strategy_kind::workgroup_local : strategy_kind::shared));
    CHECK(p.feasible(start));
    CHECK(start.config.work_group_size <= (start.strategy == strategy_kind::shared ? 256u : 1024u));
    if (start.strategy == strategy_kind::shared && log2 >= 12 && log2 <= 22) {
      // The paper's 1 x 512 leaves the GPU waiting on atomics here: the entry has many more.
      CHECK(start.config.threads_per_cu() >= 4096);
    }
    // The table: a power of two at least twice the groups.
    const auto capacity = p.initial_table_capacity();
    CHECK(capacity >= 2 * (std::uint64_t{1} << log2));
    CHECK(capacity <= std::max<std::uint64_t>(16, 4 * (std::uint64_t{1} << log2)));
    CHECK((capacity & (capacity - 1)) == 0);
    CHECK(p.interleaved(capacity) == (capacity > (std::uint64_t{1} << 23)));
    // Measured for this very query shape: no tuning.
    CHECK_FALSE(p.tuning().enabled);
  }
}

TEST_CASE("a configuration the kernel cannot run keeps its threads per compute unit") {
  // SHARED's kernel runs 128 work items here: the entry's 64 x 256 becomes 128 x 128.
  const auto p = plan(h100(), uniform_input(1 << 20), {}, recorded_shape(), 128);
  const auto start = p.default_params();
  REQUIRE(start.strategy == strategy_kind::shared);
  CHECK(start.config.work_group_size == 128);
  const auto wide = plan(h100(), uniform_input(1 << 20), {}, recorded_shape(), 256).default_params();
  CHECK(start.config.threads_per_cu() == wide.config.threads_per_cu());
  // A requested configuration above the limit: the reason names the largest that runs.
  const auto why = p.infeasibility({strategy_kind::shared, {1, 256}});
  CHECK(why.find("exceeds the 128") != std::string::npos);
}

TEST_CASE("tuning: on where the model is not sure, from the plan's start, never INDEPENDENT on a GPU") {
  // Another query shape on the H100 (8-byte keys, three accumulators): tune, from the plan's
  // start, without scanning (the start was measured on this device).
  query_shape wide;
  wide.key_bytes = 8;
  wide.bucket_bytes = 8 + 3 * 8;
  wide.interleaved_bucket_bytes = 32;
  wide.widest_column_bytes = 8;
  const auto p = plan(h100(), uniform_input(1 << 20), {}, wide, 256);
  const auto t = p.tuning();
  CHECK(t.enabled);
  REQUIRE_FALSE(t.starts.empty());
  CHECK(t.starts.front() == p.default_params());
  for (const auto& s : t.starts) CHECK(s.strategy != strategy_kind::independent);
  CHECK_FALSE(t.scan);
  // Slices of 16 MiB per widest column, the large blocks for the rest; a quarter kept back.
  CHECK(t.block_rows == (std::size_t{16} << 20) / 8);
  CHECK(p.block_rows() > t.block_rows);
  const std::size_t slices = ((std::size_t{1} << 27) + t.block_rows - 1) / t.block_rows;
  CHECK(t.block_budget == slices - slices / 4);
  // Where the input holds 32 slices four times as large (TPC-H Q1 at SF 100: 6e8 rows, 4-byte
  // widest column), the slices grow: 16 Mi rows, not 4 Mi; host input keeps 16 MiB.
  query_shape q1;
  q1.widest_column_bytes = 4;
  q1.bucket_bytes = 52;
  auto many = uniform_input(4, 600'000'000);
  many.restartable = true;
  CHECK(plan(h100(), many, {}, q1).tuning_block_rows() == std::size_t{16} << 20);
  CHECK(plan(h100(), uniform_input(4, 600'000'000, false), {}, q1).tuning_block_rows() == std::size_t{4} << 20);
  CHECK(plan(h100(), uniform_input(4, std::uint64_t{1} << 27), {}, q1).tuning_block_rows() == std::size_t{4} << 20);
  // An unknown GPU: tune, scanning, for the recorded shape too.
  const auto u = plan(unknown_gpu(), uniform_input(1 << 20));
  CHECK(u.tuning().enabled);
  CHECK(u.tuning().scan);
  // Too few blocks to learn from: no tuning; forced (tuned_group_by): tuning.
  const auto small = plan(unknown_gpu(), uniform_input(1 << 10, 1 << 20));
  CHECK_FALSE(small.tuning().enabled);
  CHECK(small.tuning(true).enabled);
  // The caller fixed the strategy or turned tuning off: no tuning.
  options fixed;
  fixed.strategy = strategy_kind::shared;
  CHECK_FALSE(plan(unknown_gpu(), uniform_input(1 << 20), fixed).tuning().enabled);
  options off;
  off.autotune = false;
  CHECK_FALSE(plan(unknown_gpu(), uniform_input(1 << 20), off).tuning().enabled);
  // 8-byte key words with one 8-byte accumulator (two uint32 key columns): the entry's
  // scattered-keys configurations were measured for them, so scattered keys run them without a
  // search; keys of a dense range still search (their configurations were not).
  query_shape packed;
  packed.key_bytes = 8;
  packed.bucket_bytes = 16;
  auto spread = uniform_input(1 << 20);
  spread.key_span = 1.8e19;
  auto dense = uniform_input(1 << 20);
  dense.key_span = double(1 << 20);
  CHECK_FALSE(plan(h100(), spread, {}, packed).tuning().enabled);
  CHECK(plan(h100(), dense, {}, packed).tuning().enabled);
  CHECK(plan(h100(), spread, {}, wide).tuning().enabled);         // three accumulators: not measured
  CHECK(plan(unknown_gpu(), spread, {}, packed).tuning().enabled);  // the generic entry: not measured
  // One key holding every row: the entry's configuration for it, whatever the key word and the
  // accumulators; the generic entry still searches.
  CHECK_FALSE(plan(h100(), uniform_input(1), {}, packed).tuning().enabled);
  CHECK_FALSE(plan(h100(), uniform_input(1), {}, wide).tuning().enabled);
  CHECK(plan(h100(), uniform_input(2), {}, wide).tuning().enabled);  // two keys of half the rows each
  CHECK(plan(unknown_gpu(), uniform_input(1), {}, packed).tuning().enabled);
  // Direct addressing, whatever its shape: the entry's configurations, no search on slices (it
  // is the hash table's loop without the key word); the generic entry still searches, and
  // tuned_group_by (forced) tunes it.
  query_shape direct = wide;
  direct.identity_scheme = true;
  direct.domain_size = 1 << 20;
  CHECK_FALSE(plan(h100(), uniform_input(1 << 20), {}, direct).tuning().enabled);
  CHECK(plan(h100(), uniform_input(1 << 20), {}, direct).tuning(true).enabled);
  CHECK(plan(unknown_gpu(), uniform_input(1 << 20), {}, direct).tuning().enabled);
  // On a CPU, INDEPENDENT may start a search.
  const auto cpu = plan(pocl_cpu(), uniform_input(1 << 4));
  std::set<strategy_kind> strategies;
  for (const auto& s : cpu.tuning().starts) strategies.insert(s.strategy);
  CHECK(strategies.count(strategy_kind::independent) == 1);
}

TEST_CASE("an AMD GPU and an unknown GPU: the generic entry, safe configurations within their limits") {
  for (const auto& device : {amd_mi250(), unknown_gpu()}) {
    CAPTURE(device.name);
    for (unsigned log2 : {0u, 8u, 16u, 24u}) {
      CAPTURE(log2);
      const auto p = plan(device, uniform_input(std::uint64_t{1} << log2), {}, recorded_shape(),
                          std::min<std::uint32_t>(device.max_work_group_size, 256));
      const auto start = p.default_params();
      CHECK(p.feasible(start));
      CHECK(start.config.work_group_size <= device.max_work_group_size);
      // AMD's 64 KiB of local memory hold 2^11 groups' table; the H100's 48 KiB do not.
      const bool fits = p.table_layout_bytes(p.initial_table_capacity(), 1) + 64 <= device.local_mem_bytes;
      CHECK((start.strategy == strategy_kind::workgroup_local) == fits);
      if (start.strategy == strategy_kind::shared) CHECK(start.config.threads_per_cu() >= 1024);
    }
  }
}

TEST_CASE("PoCL's CPU device: the generic CPU entry, host and device blocks") {
  const auto p = plan(pocl_cpu(), uniform_input(1 << 20, 1 << 24, false));
  CHECK(p.entry().level == plan_level::generic);
  CHECK(p.block_rows() == (std::size_t{16} << 20) / 4);              // host input: 16 MiB blocks
  CHECK(p.tuning_block_rows() == p.block_rows());
  const auto d = plan(pocl_cpu(), uniform_input(1 << 20, 1 << 24, true));
  CHECK(d.block_rows() >= p.block_rows());  // device input: large blocks
  CHECK(p.feasible(p.default_params()));
}

TEST_CASE("a CPU runs work groups of one work item, whose variant updates local tables plainly") {
  // The generic CPU entry: one work item a group, local table or not.
  for (unsigned log2 : {4u, 10u, 16u, 24u}) {
    CAPTURE(log2);
    const auto p = plan(pocl_cpu(), uniform_input(std::uint64_t{1} << log2));
    const auto start = p.default_params();
    CHECK(start.config.work_group_size == 1);
    CHECK(p.feasible(start));
    CHECK(p.variant_for(start).serial);
  }
  // The variant follows the launch's shape: one work item a group, never INDEPENDENT (its private
  // tables are in global memory already).
  const auto p = plan(pocl_cpu(), uniform_input(1 << 10));
  CHECK(p.variant_for({strategy_kind::workgroup_local, {2, 1}}).serial);
  CHECK(p.variant_for({strategy_kind::shared, {2, 1}}).serial);
  CHECK_FALSE(p.variant_for({strategy_kind::workgroup_local, {2, 64}}).serial);
  CHECK_FALSE(p.variant_for({strategy_kind::independent, {2, 1}}).serial);
  CHECK_FALSE(plan(h100(), uniform_input(1 << 10)).variant_for({strategy_kind::workgroup_local, {4, 256}}).serial);
  // A program of its own.
  kernel_variant serial{strategy_kind::workgroup_local};
  serial.serial = true;
  CHECK(serial.index() != kernel_variant{strategy_kind::workgroup_local}.index());
  CHECK(serial.index() < kernel_variant::count);
}

TEST_CASE("the table: growth sized by the new groups, not the spilled rows; partitions by bytes on a GPU") {
  const auto p = plan(h100(), uniform_input(1 << 10));
  // 2^24 groups found, 2^26 rows spilled holding 2^24 new groups: room for 2^25 at load 1/2.
  CHECK(p.grown_capacity(std::uint64_t{1} << 24, std::uint64_t{1} << 24, std::uint64_t{1} << 21) ==
        std::uint64_t{1} << 26);
  // At least twice the old table.
  CHECK(p.grown_capacity(10, 0, 1 << 20) == std::uint64_t{1} << 21);
  // Partitions: none within the L2, and for a hash table none up to 64 MiB; past that the
  // fewest whose regions take at most 25 MiB, 2 to 32; none beyond 3 GiB. 12-byte buckets (a
  // uint32 key and a 64-bit sum), 16-byte records.
  CHECK(p.partitions(1 << 22, 1 << 20, false) == 1);                          // 12 MiB
  CHECK(p.partitions(1 << 22, 1 << 22, false) == 1);                          // 48 MiB
  CHECK(p.partitions(1 << 22, 1 << 23, false) == 4);                          // 96 MiB
  CHECK(p.partitions(1 << 22, std::uint64_t{1} << 24, false) == 8);           // 192 MiB
  CHECK(p.partitions(1 << 22, std::uint64_t{1} << 25, true) == 32);           // 512 MiB: 21 regions
  CHECK(p.partitions(1 << 22, std::uint64_t{1} << 26, true) == 32);           // 1 GiB: at most 32
  CHECK(p.partitions(1 << 22, std::uint64_t{1} << 28, true) == 1);            // 4 GiB: none
  CHECK(p.partitions(1 << 10, std::uint64_t{1} << 26, true) == 1);            // a small block: none
  options three;
  three.partitions = 4;
  CHECK(plan(h100(), uniform_input(1 << 10), three).partitions(1 << 22, 1 << 20, false) == 4);
  // Two uint32 key columns' 16-byte buckets: 2^22 of them (64 MiB) stay whole, 2^23 do not.
  query_shape pair_table = recorded_shape();
  pair_table.key_bytes = 8;
  pair_table.bucket_bytes = 16;
  const auto pairs = plan(h100(), uniform_input(1 << 10), {}, pair_table);
  CHECK(pairs.partitions(1 << 22, 1 << 22, false) == 1);
  CHECK(pairs.partitions(1 << 22, (1 << 22) + 8, false) == 4);                // past 64 MiB: 3 regions
  CHECK(pairs.partitions(1 << 22, 1 << 23, false) == 8);                      // 128 MiB
  // Direct addressing (8-byte sums and a bit a key) partitions from 40 MiB.
  query_shape keyless = recorded_shape();
  keyless.identity_scheme = true;
  keyless.domain_size = 5 << 20;
  const auto direct_plan = plan(h100(), uniform_input(5 << 20), {}, keyless);
  CHECK(direct_plan.partitions(1 << 22, 4 << 20, false) == 1);                // 32 MiB
  CHECK(direct_plan.partitions(1 << 22, 5 << 20, false) == 2);                // 40 MiB and the bitmap
  CHECK(direct_plan.partitions(1 << 22, 6 << 20, false) == 2);                // 48 MiB: a hash table of 48 MiB takes none
  // PARTITION's copy holds buckets in place of keys for direct addressing over a 64-bit word
  // only: a 32-bit word gains nothing, and a hash table needs its keys.
  CHECK_FALSE(p.partition_copy_buckets());
  query_shape direct;
  direct.identity_scheme = true;
  direct.domain_size = 1 << 24;
  direct.key_bytes = 4;
  CHECK_FALSE(plan(h100(), uniform_input(1 << 24), {}, direct).partition_copy_buckets());
  direct.key_bytes = 8;
  CHECK(plan(h100(), uniform_input(1 << 24), {}, direct).partition_copy_buckets());
  query_shape hashed = direct;
  hashed.identity_scheme = false;
  CHECK_FALSE(plan(h100(), uniform_input(1 << 24), {}, hashed).partition_copy_buckets());
  // Too many groups for 2^31 buckets: a typed error that says how many.
  CHECK_THROWS_AS(p.table_capacity_for(std::uint64_t{1} << 31), out_of_memory_error);
}

TEST_CASE("a start configuration gives every work item about a row of a block: host input's blocks, short inputs") {
  // The entry's configurations were measured on device input's 256 MiB blocks. On host input's
  // 16 MiB blocks (4 Mi uint32 rows) its work groups per compute unit halve while half of them
  // would still cover the block's rows; the work-group size stays.
  const auto device = plan(h100(), uniform_input(1 << 24));
  const auto host = plan(h100(), uniform_input(1 << 24, std::uint64_t{1} << 27, false));
  const auto d = device.default_params();
  const auto h = host.default_params();
  CHECK(d.strategy == h.strategy);
  CHECK(host.block_rows() == (std::size_t{16} << 20) / 4);
  CHECK(device.total_threads(d.config) <= device.block_rows());
  CHECK(host.total_threads(h.config) >= host.block_rows());
  CHECK(host.total_threads(h.config) < 2 * std::uint64_t{host.block_rows()});
  CHECK(h.config.work_group_size == d.config.work_group_size);
  CHECK(h.config.work_groups_per_cu < d.config.work_groups_per_cu);
  // A thousand rows: one work group per compute unit is already more work items than rows.
  CHECK(plan(h100(), uniform_input(1 << 4, 1000)).default_params().config.work_groups_per_cu == 1);
  // A launch over fewer rows than the configuration's work items runs the fewest whole work
  // groups that give every row one: host input's block (up to twice the rows in work items), a
  // short input (one work group per compute unit is 132 of them), a block's last rows.
  const std::uint64_t local = h.config.work_group_size;
  CHECK(host.launch_threads(h.config, host.block_rows()) == (host.block_rows() + local - 1) / local * local);
  CHECK(host.launch_threads(h.config, host.block_rows()) < host.total_threads(h.config));
  CHECK(device.launch_threads(d.config, device.block_rows()) == device.total_threads(d.config));
  const launch_config one{1, 256};
  CHECK(device.launch_threads(one, 1000) == 1024);
  CHECK(device.launch_threads(one, 1024) == 1024);
  CHECK(device.launch_threads(one, 1025) == 1280);
  CHECK(device.launch_threads(one, 0) == 256);
  CHECK(device.launch_threads(one, std::uint64_t{1} << 40) == device.total_threads(one));
}

TEST_CASE("an estimate a little above a power of two sizes the table for it, within the estimate's own error") {
  // 1.025x of 2^24 groups, host input: within 2% (the sketch's tolerance) it is not, so the table
  // is twice what 2^24 groups need; the host's extrapolation knows its error (1.3%: 2.5 of them
  // are 3.25%), and with it the table is the one 2^24 groups need.
  auto profile = uniform_input(std::uint64_t{1} << 24, std::uint64_t{1} << 27, false);
  profile.expected_groups = (std::uint64_t{1} << 24) * 1025 / 1000;
  profile.source = estimate_source::extrapolated;
  CHECK(plan(h100(), profile).initial_table_capacity() == std::uint64_t{1} << 26);
  profile.estimate_error = 0.013;
  CHECK(plan(h100(), profile).initial_table_capacity() == std::uint64_t{1} << 25);
  // An estimate 12% high: past any error's allowance (at most a tenth).
  profile.expected_groups = (std::uint64_t{1} << 24) * 112 / 100;
  profile.estimate_error = 0.2;
  CHECK(plan(h100(), profile).initial_table_capacity() == std::uint64_t{1} << 26);
  // Stage 2's fit from 2^18 strided rows of 2^20 groups, 4% high: its error (6.8%, the sketch's
  // grown by the fit's slope) allows it, and the table is the one 2^20 groups need.
  auto fitted = uniform_input(std::uint64_t{1} << 20, std::uint64_t{1} << 27, false);
  fitted.expected_groups = (std::uint64_t{1} << 20) * 104 / 100;
  fitted.source = estimate_source::sketch;
  CHECK(plan(h100(), fitted).initial_table_capacity() == std::uint64_t{1} << 22);
  fitted.estimate_error = detail::fit_relative_error(detail::sketch_relative_error, 1 << 18, 1 << 20);
  CHECK(plan(h100(), fitted).initial_table_capacity() == std::uint64_t{1} << 21);
}

TEST_CASE("scattered keys' table at half the load factor while it stays in the L2, on a GPU") {
  const auto keys = [](std::uint64_t groups, double span) {
    auto p = uniform_input(groups);
    p.key_span = span;
    return p;
  };
  const double spread = 4294967296.0;
  // A uint32 key and a 64-bit sum (12-byte buckets): 2^16 and 2^18 scattered groups get 2^18 and
  // 2^20 buckets (3 and 12 MiB), 2^20 groups the load factor's 2^21 (a table of 2^22, 48 MiB,
  // would leave the L2); dense keys, whose multiply-shift hash probes once, and a CPU keep it.
  CHECK(plan(h100(), keys(1 << 16, spread)).initial_table_capacity() == std::uint64_t{1} << 18);
  CHECK(plan(h100(), keys(1 << 18, spread)).initial_table_capacity() == std::uint64_t{1} << 20);
  CHECK(plan(h100(), keys(1 << 20, spread)).initial_table_capacity() == std::uint64_t{1} << 21);
  CHECK(plan(h100(), keys(1 << 16, double(1 << 16))).initial_table_capacity() == std::uint64_t{1} << 17);
  CHECK(plan(pocl_cpu(), keys(1 << 16, spread)).initial_table_capacity() == std::uint64_t{1} << 17);
  // Two uint32 key columns (16-byte buckets): 2^19 groups' 2^21 buckets take 32 MiB, within
  // cache_resident_table_bytes; 2^20 groups' 2^22 would take 64.
  query_shape pairs = recorded_shape();
  pairs.key_bytes = 8;
  pairs.bucket_bytes = 16;
  CHECK(plan(h100(), keys(1 << 18, 1.8e19), {}, pairs).initial_table_capacity() == std::uint64_t{1} << 20);
  CHECK(plan(h100(), keys(1 << 19, 1.8e19), {}, pairs).initial_table_capacity() == std::uint64_t{1} << 21);
  CHECK(plan(h100(), keys(1 << 20, 1.8e19), {}, pairs).initial_table_capacity() == std::uint64_t{1} << 21);
  CHECK(plan(h100(), keys(1 << 19, spread)).initial_table_capacity() == std::uint64_t{1} << 21);
  // The regime (the entry's configurations) stays the load factor's.
  CHECK(plan(h100(), keys(1 << 16, spread)).regime().max_table_log2 ==
        plan(h100(), keys(1 << 16, double(1 << 16))).regime().max_table_log2);
}

TEST_CASE("host input: its blocks follow the options alone; the first blocks' copies start within a budget") {
  // uint32 keys and values: 16 MiB of the widest column, 4 Mi rows, 32 MiB a block.
  const query_shape s = recorded_shape();
  CHECK(query_planner::host_block_rows(s, {}) == std::size_t{4} << 20);
  CHECK(plan(h100(), uniform_input(1 << 20, std::uint64_t{1} << 27, false)).block_rows() ==
        query_planner::host_block_rows(s, {}));
  CHECK(plan(h100(), uniform_input(1 << 4, std::uint64_t{1} << 27, false)).block_rows() ==
        query_planner::host_block_rows(s, {}));
  options opts;
  opts.blocks_in_flight = 3;
  opts.block_bytes = std::size_t{1} << 20;
  CHECK(plan(h100(), uniform_input(1 << 20, std::uint64_t{1} << 27, false), opts).block_rows() ==
        query_planner::host_block_rows(s, opts));
  CHECK(query_planner::window(opts) == plan(h100(), uniform_input(1 << 20, 1 << 27, false), opts).window());
  // 256 MiB of early copies on the H100: eight 32 MiB blocks; on a device of 1 GiB, a
  // sixteenth of it (two); blocks larger than the budget: one.
  CHECK(query_planner::early_blocks(h100(), s, {}) == 8);
  device_info small = h100();
  small.global_mem_bytes = std::uint64_t{1} << 30;
  CHECK(query_planner::early_blocks(small, s, {}) == 2);
  options huge;
  huge.block_bytes = std::size_t{1} << 30;
  CHECK(query_planner::early_blocks(h100(), s, huge) == 1);
}

TEST_CASE("the spill area: every row in flight, or for a restartable query on device input a quarter of the table") {
  // Not restartable (a driver the caller steps): the spill area holds the blocks in flight,
  // and device blocks shrink to keep it within 1 GiB (12-byte buckets, two blocks in flight).
  const auto stepped = plan(h100(), uniform_input(1 << 10));
  CHECK_FALSE(stepped.compact_spill());
  CHECK(stepped.block_rows() == (std::size_t{1} << 30) / 24);
  CHECK(stepped.spill_capacity(2048) == std::uint64_t{stepped.block_rows()} * 2);
  // Restartable on device input: 256 MiB blocks, a spill area of a quarter of the table.
  auto profile = uniform_input(1 << 10);
  profile.restartable = true;
  const auto compact = plan(h100(), profile);
  CHECK(compact.compact_spill());
  CHECK(compact.block_rows() == (std::size_t{256} << 20) / 4);
  CHECK(compact.spill_capacity(2048) == 512);
  CHECK(compact.spill_capacity(16) == 4);
  CHECK(compact.spill_capacity(std::uint64_t{1} << 25) == std::uint64_t{1} << 23);
  // A partitioned first table keeps blocks of 256 MiB and orders them in pieces whose copy of
  // 8-byte rows takes at most 5/8 of the table: with its spill area (a quarter) the query holds
  // less than twice the table beside its input. At 2^24 groups (2^25 16-byte buckets, 512
  // MiB) pieces of up to 320 MiB of rows: two launches of 2^25 rows a block.
  auto large = uniform_input(1 << 24);
  large.restartable = true;
  const auto partitioned = plan(h100(), large);
  REQUIRE(partitioned.partitions(std::uint64_t{1} << 26, std::uint64_t{1} << 25, true) > 1);
  CHECK(partitioned.block_rows() == (std::size_t{256} << 20) / 4);
  CHECK(partitioned.partition_piece_rows(std::uint64_t{1} << 25, true) == ((std::uint64_t{1} << 25) + 1) * 16 / 8 * 5 / 8);
  CHECK(partitioned.rows_a_launch() == std::uint64_t{1} << 25);
  for (unsigned log2 = 20; log2 <= 27; ++log2) {
    CAPTURE(log2);
    large.expected_groups = std::uint64_t{1} << log2;
    const auto q = plan(h100(), large);
    const std::uint64_t capacity = q.initial_table_capacity();
    const bool layout = q.interleaved(capacity);
    const std::uint64_t table = q.global_table_bytes(capacity, layout);
    const std::uint64_t block = std::min<std::uint64_t>(q.block_rows(), large.rows);
    if (q.partitions(block, capacity, layout) <= 1) {
      CHECK(q.rows_a_launch() == block);
      continue;
    }
    const std::uint64_t piece = q.partition_piece_rows(capacity, layout);
    CHECK(piece * 8 <= table / 8 * 5);
    CHECK(table + q.spill_capacity(capacity) * recorded_shape().bucket_bytes + piece * 8 <= 2 * table);
    CHECK(q.rows_a_launch() <= piece);
    CHECK(q.rows_a_launch() * ((block + piece - 1) / piece) >= block);
  }
  // A forced partitioning of a small table: pieces of 2^20 rows at least, never more than a block.
  options forced;
  forced.partitions = 8;
  large.expected_groups = 1 << 10;
  CHECK(plan(h100(), large, forced).partition_piece_rows(2048, false) == query_planner::min_partition_piece_rows);
  forced.block_bytes = 64 << 10;
  CHECK(plan(h100(), large, forced).partition_piece_rows(2048, false) == 16384);
  // Never more than the rows in flight: a block_bytes of 64 KiB (16 Ki rows) and two in flight.
  options small;
  small.block_bytes = 64 << 10;
  CHECK(plan(h100(), profile, small).spill_capacity(std::uint64_t{1} << 25) == 32768);
  // Host input is not run again (its input would be copied twice): every row in flight.
  auto host = uniform_input(1 << 10, std::uint64_t{1} << 27, false);
  host.restartable = true;
  const auto from_host = plan(h100(), host);
  CHECK_FALSE(from_host.compact_spill());
  CHECK(from_host.spill_capacity(2048) == std::uint64_t{from_host.block_rows()} * 2);
}

TEST_CASE("skewed keys: the hot-key table for frequent keys, and for one dominant key SHARED or a partial local table") {
  // One key holds half the rows, 2^16 groups: SHARED with the key in the hot-key table; without
  // that table, on the H100 (whose entry was measured) SHARED, on an unknown GPU WORKGROUPLOCAL
  // with a partial local table.
  auto hot = uniform_input(1 << 16);
  hot.hottest_key_share = 0.5;
  hot.frequent_counts = {8192};
  const auto one = plan(h100(), hot, {}, recorded_shape(), 256);
  CHECK(one.default_params().strategy == strategy_kind::shared);
  CHECK(one.hot_table(one.default_params()));
  CHECK_FALSE(one.run_cache(one.default_params()));
  options no_hot_table;
  no_hot_table.hot_table = false;
  CHECK(plan(h100(), hot, no_hot_table, recorded_shape(), 256).default_params().strategy == strategy_kind::shared);
  const auto partial = plan(unknown_gpu(), hot, no_hot_table, recorded_shape(), 256);
  CHECK(partial.default_params().strategy == strategy_kind::workgroup_local);
  CHECK_FALSE(partial.feasible(partial.default_params()));  // the local table holds only some groups
  CHECK(partial.infeasibility(partial.default_params(), false).empty());
  // 90% one key: the run cache's register.
  hot.hottest_key_share = 0.9;
  hot.frequent_counts = {14746};
  const auto dominant = plan(h100(), hot, {}, recorded_shape(), 256);
  CHECK(dominant.run_cache({strategy_kind::shared, {64, 256}}));
  // Many frequent keys holding 40% of the sample (zipf): SHARED with the hot-key table.
  auto zipf = uniform_input(1 << 16);
  zipf.hottest_key_share = 0.05;
  for (int i = 0; i < 200; ++i) zipf.frequent_counts.push_back(static_cast<std::uint32_t>(6553 / 200 + 10));
  const auto many = plan(h100(), zipf, {}, recorded_shape(), 256);
  CHECK(many.hot_keys().keys > 0);
  CHECK(many.hot_keys().capacity >= 2 * many.hot_keys().keys);
  CHECK(many.default_params().strategy == strategy_kind::shared);
  CHECK(many.hot_table(many.default_params()));
  // Direct addressing keeps no hot-key table.
  query_shape dense;
  dense.identity_scheme = true;
  dense.domain_size = 1 << 16;
  CHECK_FALSE(plan(h100(), zipf, {}, dense, 256).hot_table({strategy_kind::shared, {64, 256}}));
}

TEST_CASE("beyond local memory, keys in runs or one dominant key: a partial local table while a work group meets few keys") {
  // Sorted keys at 2^20 groups (runs of 128 rows) and 90% one key at 2^16 to 2^24: a work group
  // of 32 x 256 meets a few hundred to about 1,600 keys of its 2^26-row block, within the 2,048
  // buckets of its 48 KiB local table.
  // The default call on device input: restartable, in blocks of 256 MiB.
  const auto sorted = [](std::uint64_t groups) {
    auto p = uniform_input(groups);
    p.restartable = true;
    p.runs_share = 1.0 - double(groups) / double(p.rows);
    return p;
  };
  const auto heavy = [](std::uint64_t groups, double share) {
    auto p = uniform_input(groups);
    p.restartable = true;
    p.hottest_key_share = share;
    p.frequent_counts = {static_cast<std::uint32_t>(share * 16384)};
    return p;
  };
  const auto partial = [](const input_profile& p) {
    const auto q = plan(h100(), p, {}, recorded_shape(), 256);
    const auto chosen = q.default_params();
    const bool built = std::ranges::count(q.strategies_to_build(), strategy_kind::workgroup_local) == 1;
    if (q.partial_local_table()) CHECK(built);
    if (chosen.strategy != strategy_kind::workgroup_local) return false;
    CHECK(chosen.config == launch_config{32, 256});
    CHECK(chosen.config == q.partial_local_config());
    CHECK_FALSE(q.feasible(chosen));  // the local table holds only some of the groups
    CHECK(q.infeasibility(chosen, false).empty());
    return true;
  };
  for (const unsigned log2 : {16u, 20u, 24u}) {
    CAPTURE(log2);
    const auto q = plan(h100(), sorted(std::uint64_t{1} << log2), {}, recorded_shape(), 256);
    CHECK(q.keys_per_work_group({32, 256}) <= double(q.max_local_buckets()));
    CHECK(partial(sorted(std::uint64_t{1} << log2)));
    CHECK(partial(heavy(std::uint64_t{1} << log2, 0.9)));
  }
  // Runs of two rows (2^26 groups), or a key holding 80% of the rows at 2^20 groups: each work
  // group would meet thousands of keys, more than its table holds, and SHARED runs. (At 2^24
  // groups PARTITION runs a block in two pieces, and a launch's work groups meet half the keys.)
  CHECK_FALSE(partial(sorted(std::uint64_t{1} << 26)));
  CHECK_FALSE(partial(heavy(std::uint64_t{1} << 20, 0.8)));
  CHECK(partial(heavy(std::uint64_t{1} << 24, 0.8)));
  // Fewer, larger work groups meet more keys: 2 x 256 at 2^20 sorted groups about 3,000.
  const auto q20 = plan(h100(), sorted(std::uint64_t{1} << 20), {}, recorded_shape(), 256);
  CHECK(q20.keys_per_work_group({2, 256}) > double(q20.max_local_buckets()));
  CHECK(q20.keys_per_work_group({2, 256}) > 12 * q20.keys_per_work_group({32, 256}));
  // Shuffled keys, zipf keys (no dominant key), one single key, direct addressing, a CPU: as before.
  CHECK_FALSE(partial(uniform_input(std::uint64_t{1} << 20)));
  CHECK_FALSE(partial(heavy(std::uint64_t{1} << 20, 0.12)));
  CHECK_FALSE(plan(h100(), heavy(std::uint64_t{1} << 20, 0.995)).partial_local_table());
  query_shape dense;
  dense.identity_scheme = true;
  dense.domain_size = 1 << 20;
  CHECK_FALSE(plan(h100(), sorted(std::uint64_t{1} << 20), {}, dense).partial_local_table());
  CHECK_FALSE(plan(pocl_cpu(), sorted(std::uint64_t{1} << 20)).partial_local_table());
  // Within local memory the whole local table runs, as before.
  CHECK_FALSE(plan(h100(), sorted(1 << 10)).partial_local_table());
  CHECK(plan(h100(), sorted(1 << 10)).feasible(plan(h100(), sorted(1 << 10)).default_params()));
  // A short input: no more work items than rows, 8 x 256 for 200,000 rows.
  auto short_sorted = sorted(std::uint64_t{1} << 16);
  short_sorted.rows = 200'000;
  const auto short_plan = plan(h100(), short_sorted, {}, recorded_shape(), 256);
  CHECK(short_plan.default_params() == execution_params{strategy_kind::workgroup_local, {8, 256}});
  // A kernel limited to 128 work items keeps the threads: 64 x 128.
  const query_planner limited(h100(), recorded_shape(), sorted(std::uint64_t{1} << 20), {},
                              [](const kernel_variant&) { return std::uint32_t{128}; });
  CHECK(limited.default_params().config == launch_config{64, 128});
}

TEST_CASE("keys that repeat with the rows' positions: a work group's window decides the partial local table") {
  // Keys row % 2^16 over 2^27 rows on device input: the sample shows neither runs nor a
  // dominant key, but each row's neighbour holds the next key, so the plan asks for one work
  // group's window of 16 grid strides of 32 x 132 x 256 work items; there each work item meets
  // 2 keys, the work group 512.
  auto periodic = uniform_input(std::uint64_t{1} << 16);
  periodic.restartable = true;
  periodic.stepped_share = 1.0 - 1.0 / 65536;
  CHECK_FALSE(plan(h100(), uniform_input(std::uint64_t{1} << 16), {}, recorded_shape(), 256).locality_window());
  const auto asked = plan(h100(), periodic, {}, recorded_shape(), 256);
  const auto window = asked.locality_window();
  REQUIRE(window.has_value());
  CHECK(window->pitch_rows == std::uint64_t{32} * 132 * 256);
  CHECK(window->width == 256);
  CHECK(window->strides == query_planner::locality_strides);
  CHECK(asked.default_params().strategy == strategy_kind::shared);
  auto bounded = periodic;
  bounded.window_read = true;
  bounded.work_group_keys = 512;
  const auto local = plan(h100(), bounded, {}, recorded_shape(), 256);
  CHECK_FALSE(local.locality_window().has_value());  // read once
  CHECK(local.partial_local_table());
  CHECK(local.default_params() == execution_params{strategy_kind::workgroup_local, {32, 256}});
  CHECK(std::ranges::count(local.strategies_to_build(), strategy_kind::workgroup_local) == 1);
  // A window whose keys kept growing (0), or stopped at more keys than the local table holds:
  // SHARED, as for shuffled keys.
  auto growing = periodic;
  growing.window_read = true;
  CHECK(plan(h100(), growing, {}, recorded_shape(), 256).default_params().strategy == strategy_kind::shared);
  auto many = bounded;
  many.work_group_keys = double(local.max_local_buckets());
  CHECK_FALSE(plan(h100(), many, {}, recorded_shape(), 256).partial_local_table());
  // Not asked: host input, a CPU, direct addressing, groups within local memory, keys in runs
  // (their own rule decides), and launches of fewer than 16 grid strides.
  CHECK_FALSE(plan(h100(), uniform_input(std::uint64_t{1} << 16, std::uint64_t{1} << 27, false)).locality_window());
  CHECK_FALSE(plan(pocl_cpu(), periodic).locality_window());
  query_shape dense;
  dense.identity_scheme = true;
  dense.domain_size = 1 << 16;
  CHECK_FALSE(plan(h100(), periodic, {}, dense).locality_window());
  CHECK_FALSE(plan(h100(), uniform_input(1 << 8)).locality_window());
  auto runs = periodic;
  runs.runs_share = 0.99;
  CHECK_FALSE(plan(h100(), runs, {}, recorded_shape(), 256).locality_window());
  // Keys row % 2^20 over their dense range: direct addressing takes them (its own plan).
  auto dense_periodic = periodic;
  dense_periodic.expected_groups = std::uint64_t{1} << 20;
  dense_periodic.key_span = double(std::uint64_t{1} << 20);
  dense_periodic.key_box = detail::key_box{};
  dense_periodic.key_box.fields = 1;
  dense_periodic.key_box.extent[0] = (std::uint64_t{1} << 20) - 1;
  const auto direct = plan(h100(), dense_periodic, {}, recorded_shape(), 256);
  CHECK(direct.direct_range_wanted());
  CHECK_FALSE(direct.locality_window());
  auto short_input = periodic;
  short_input.rows = std::uint64_t{1} << 24;
  CHECK_FALSE(plan(h100(), short_input, {}, recorded_shape(), 256).locality_window());
}

TEST_CASE("a work group's window: its keys where they stopped growing, else 0") {
  // 16 strides of 256 rows, 1,081,344 rows apart, of keys row % 2^16: 2 keys a work item.
  const std::uint64_t pitch = std::uint64_t{32} * 132 * 256;
  std::vector<std::uint32_t> periodic;
  for (std::uint64_t s = 0; s < 16; ++s) {
    for (std::uint64_t j = 0; j < 256; ++j) periodic.push_back(static_cast<std::uint32_t>((s * pitch + j) % 65536));
  }
  CHECK(detail::bounded_window_keys(std::span<const std::uint32_t>(periodic), 256) == 512);
  // Uniform keys over 2^16 groups: the second half nearly doubles them.
  std::mt19937_64 rng(std::random_device{}());
  std::vector<std::uint64_t> uniform(4096);
  for (auto& k : uniform) k = rng() % 65536;
  CHECK(detail::bounded_window_keys(std::span<const std::uint64_t>(uniform), 256) == 0);
  // Keys row % 2^20: a work item meets a new key at every stride.
  std::vector<std::uint32_t> wide;
  for (std::uint64_t s = 0; s < 16; ++s) {
    for (std::uint64_t j = 0; j < 256; ++j) wide.push_back(static_cast<std::uint32_t>((s * pitch + j) % (1 << 20)));
  }
  CHECK(detail::bounded_window_keys(std::span<const std::uint32_t>(wide), 256) == 0);
  // The sample's profile: keys row % 2^16 step by one from each row to its neighbour; keys in
  // runs, shuffled keys and one key do not.
  const std::uint64_t stride = detail::key_sample_stride(std::uint64_t{1} << 27, 16384);
  std::vector<std::uint32_t> sampled, next;
  for (std::uint64_t i = 0; i < 16384; ++i) {
    sampled.push_back(static_cast<std::uint32_t>((i * stride) % 65536));
    next.push_back(static_cast<std::uint32_t>((i * stride + 1) % 65536));
  }
  const auto stepped = [](const std::vector<std::uint32_t>& rows, const std::vector<std::uint32_t>& neighbours) {
    return detail::profile_sample(std::span<const std::uint32_t>(rows), std::span<const std::uint32_t>(neighbours))
        .stepped_share;
  };
  CHECK(stepped(sampled, next) > 0.99);
  CHECK(stepped(sampled, sampled) == 0);
  std::vector<std::uint32_t> shuffled(16384), shuffled_next(16384);
  for (std::size_t i = 0; i < shuffled.size(); ++i) {
    shuffled[i] = static_cast<std::uint32_t>(rng());
    shuffled_next[i] = static_cast<std::uint32_t>(rng() % 65536);
  }
  CHECK(stepped(shuffled, shuffled_next) < 0.01);
  // Descending ids, or ids a step of 7 apart, step too (the step is the first nonzero one).
  std::vector<std::uint32_t> down(16384), down_next(16384);
  for (std::size_t i = 0; i < down.size(); ++i) {
    down[i] = static_cast<std::uint32_t>(0u - 7u * static_cast<std::uint32_t>(i * stride));
    down_next[i] = down[i] - 7u;
  }
  CHECK(stepped(down, down_next) == 1.0);
  // One key, and extreme key values, count as keys.
  const std::vector<std::uint64_t> one(4096, ~std::uint64_t{0});
  CHECK(detail::bounded_window_keys(std::span<const std::uint64_t>(one), 256) == 1);
  CHECK(detail::bounded_window_keys(std::span<const std::uint64_t>(one), 4096) == 0);  // one stride: nothing to compare
}

TEST_CASE("the start configuration follows the keys' shape: runs, one dominant key, frequent keys, shuffled") {
  // The H100 entry's 2^20 regime holds a different SHARED configuration for each shape; the
  // shape the sample shows picks which. A zipf-like sample (hottest key 12%, frequent keys
  // covering half) is frequent, not dominant: a dominant key's configuration (few work items,
  // measured with 90% one key) starves the atomics of keys spread over a million groups.
  auto shuffled = uniform_input(1 << 20);
  auto zipf = shuffled;
  zipf.hottest_key_share = 0.12;
  for (int i = 0; i < 300; ++i) zipf.frequent_counts.push_back(static_cast<std::uint32_t>(8192 / 300 + 5));
  auto heavy = shuffled;
  heavy.hottest_key_share = 0.9;
  heavy.frequent_counts = {14746};
  auto runs = shuffled;
  runs.runs_share = 0.9;
  const auto config = [](const input_profile& p) {
    return plan(h100(), p, {}, recorded_shape(), 256).initial_config(strategy_kind::shared);
  };
  const auto& e = query_planner::entry_for(h100()).regime(20);
  CHECK(config(shuffled) == e.shared);
  CHECK(config(zipf) == e.shared_frequent);
  CHECK(config(heavy) == e.shared_dominant);
  CHECK(config(runs) == e.shared_runs);
  // The four differ in this regime, so each check above tells the shapes apart.
  CHECK(e.shared_frequent != e.shared_dominant);
  CHECK(e.shared != e.shared_frequent);
  CHECK(e.shared_runs != e.shared_dominant);
}

TEST_CASE("keys spread wider than a dense range start from the scattered-keys configurations") {
  // 2^16 groups: a sample whose keys span 2^16 values is a dense range; one whose keys span
  // 2^32 (identifiers, hashed values) is scattered. The H100 entry holds different SHARED and
  // WORKGROUPLOCAL configurations for the two at this table size, so the checks tell them apart.
  auto dense = uniform_input(1 << 16);
  dense.key_span = double(1 << 16);
  auto scattered = dense;
  scattered.key_span = 4294967296.0;
  CHECK_FALSE(plan(h100(), dense).scattered_keys());
  CHECK(plan(h100(), scattered).scattered_keys());
  const auto& e = query_planner::entry_for(h100()).regime(16);
  REQUIRE(e.shared_scattered != e.shared);
  CHECK(plan(h100(), dense).initial_config(strategy_kind::shared) == e.shared);
  CHECK(plan(h100(), scattered).initial_config(strategy_kind::shared) == e.shared_scattered);
  // At 2^10 groups WORKGROUPLOCAL runs: its scattered configuration likewise.
  auto dense_small = uniform_input(1 << 10);
  dense_small.key_span = double(1 << 10);
  auto scattered_small = dense_small;
  scattered_small.key_span = 4294967296.0;
  const auto& small = query_planner::entry_for(h100()).regime(10);
  REQUIRE(small.workgroup_local_scattered != small.workgroup_local);
  CHECK(plan(h100(), dense_small).default_params() ==
        execution_params{strategy_kind::workgroup_local, small.workgroup_local});
  CHECK(plan(h100(), scattered_small).default_params() ==
        execution_params{strategy_kind::workgroup_local, small.workgroup_local_scattered});
  // The bound: a range up to dense_span_factor times the groups is dense, beyond it scattered.
  auto edge = dense;
  edge.key_span = query_planner::dense_span_factor * double(1 << 16);
  CHECK_FALSE(plan(h100(), edge).scattered_keys());
  edge.key_span += 1;
  CHECK(plan(h100(), edge).scattered_keys());
  // Never without a sample, never for direct addressing (no probing); a skewed sample keeps its
  // own configuration; an entry without scattered measurements (the generic GPU's) keeps the
  // shuffled keys' configuration.
  auto unsampled = scattered;
  unsampled.sampled = false;
  CHECK_FALSE(plan(h100(), unsampled).scattered_keys());
  query_shape direct = recorded_shape();
  direct.identity_scheme = true;
  direct.domain_size = 1 << 16;
  CHECK_FALSE(plan(h100(), scattered, {}, direct).scattered_keys());
  auto scattered_runs = scattered;
  scattered_runs.runs_share = 0.9;
  CHECK(plan(h100(), scattered_runs).initial_config(strategy_kind::shared) == e.shared_runs);
  const auto& generic = query_planner::entry_for(unknown_gpu()).regimes.back();
  CHECK(plan(unknown_gpu(), scattered).initial_config(strategy_kind::shared) == generic.shared);
}

TEST_CASE("WORKGROUPLOCAL's local table: scattered keys take up to 32 buckets a group within local memory") {
  // 48 KiB of local memory hold 2048 buckets of 12 bytes (a uint32 key and a sum) or of 16.
  const auto with_span = [](std::uint64_t groups, double span) {
    auto p = uniform_input(groups);
    p.key_span = span;
    p.key_box = {0, {static_cast<std::uint64_t>(span) - 1}, 1};
    return p;
  };
  const double spread = 4294967296.0;
  // A dense range: its range table (one bucket a key), else a probed table at load 1/2.
  CHECK(plan(h100(), with_span(64, 64)).local_capacity() == 64);
  options probed;
  probed.range_local_table = false;
  CHECK(plan(h100(), with_span(64, 64), probed).local_capacity() == 128);
  CHECK(plan(h100(), with_span(4, spread)).local_capacity() == 128);
  CHECK(plan(h100(), with_span(64, spread)).local_capacity() == 2048);
  CHECK(plan(h100(), with_span(256, spread)).local_capacity() == 2048);   // local memory's bound
  CHECK(plan(h100(), with_span(1024, spread)).local_capacity() == 2048);  // every group's bucket, no more
  query_shape packed;
  packed.key_bytes = 8;
  packed.bucket_bytes = 16;
  CHECK(plan(h100(), with_span(16, 1.8e19), {}, packed).local_capacity() == 512);
  // More groups than local memory holds: the partial table as before, whatever the keys.
  const auto many = plan(h100(), with_span(1 << 16, spread));
  CHECK(many.local_capacity() == many.max_local_buckets());
  // A CPU keeps load 1/2 (PoCL's 512 KiB of local memory would hold far sparser tables).
  CHECK(plan(pocl_cpu(), with_span(64, spread)).local_capacity() == 128);
  // The strategy still follows every group's bucket at load 1/2 (section 3.7's condition).
  CHECK(plan(h100(), with_span(64, spread)).default_params().strategy == strategy_kind::workgroup_local);
  CHECK(plan(h100(), with_span(1024, spread)).default_params().strategy == strategy_kind::workgroup_local);
  CHECK(plan(h100(), with_span(4096, spread)).default_params().strategy == strategy_kind::shared);
}

TEST_CASE("observed groups grow the local tables' plan: WORKGROUPLOCAL gives way to SHARED") {
  auto p = plan(h100(), uniform_input(100), {}, recorded_shape(), 256);
  CHECK(p.default_params().strategy == strategy_kind::workgroup_local);
  p.observe_groups(100'000);
  CHECK(p.planned_groups() == 100'000);
  CHECK(p.default_params().strategy == strategy_kind::shared);
  p.observe_groups(5);  // never shrinks
  CHECK(p.planned_groups() == 100'000);
}

TEST_CASE("a query that does not tune asks only for the kernel limits of the strategies it may run") {
  // Each kernel limit the plan reads builds that variant's program: on a cold start a program
  // costs hundreds of milliseconds, so a plan that runs WORKGROUPLOCAL alone must not read
  // SHARED's limit to list tuning starts it will never use.
  for (const std::uint64_t groups : {std::uint64_t{16}, std::uint64_t{1} << 16}) {
    CAPTURE(groups);
    std::set<strategy_kind> asked;
    const query_planner p(h100(), recorded_shape(), uniform_input(groups), {}, [&](const kernel_variant& v) {
      asked.insert(v.strategy);
      return std::uint32_t{1024};
    });
    const auto chosen = p.default_params().strategy;
    const auto t = p.tuning();
    REQUIRE_FALSE(t.enabled);  // the H100's entry was measured for this shape
    CHECK(t.starts.empty());
    const auto built = p.strategies_to_build();
    for (const auto s : asked) {
      CAPTURE(to_string(s));
      CHECK(std::find(built.begin(), built.end(), s) != built.end());
    }
    CHECK(asked.count(chosen) == 1);
  }
}

TEST_CASE("private groups: where the options ask, SHARED and WORKGROUPLOCAL, never beside the run cache") {
  options on;
  on.private_groups = true;
  for (const std::uint64_t groups : {4u, 1u << 20}) {
    CAPTURE(groups);
    auto input = uniform_input(groups);
    const auto asked = plan(h100(), input, on, recorded_shape(), 256);
    const auto plain = plan(h100(), input, {}, recorded_shape(), 256);
    for (const auto strategy : {strategy_kind::shared, strategy_kind::workgroup_local}) {
      const execution_params params{strategy, {4, 256}};
      CHECK(asked.private_groups(params));
      CHECK(asked.variant_for(params).private_groups);
      CHECK_FALSE(plain.variant_for(params).private_groups);
    }
    CHECK_FALSE(asked.private_groups({strategy_kind::independent, {1, 256}}));
  }
  // One key: the run cache's register holds it; no private groups beside it.
  auto one = uniform_input(1);
  one.hottest_key_share = 1.0;
  const execution_params shared{strategy_kind::shared, {4, 256}};
  const auto single = plan(h100(), one, on, recorded_shape(), 256);
  CHECK(single.variant_for(shared).run_cache);
  CHECK_FALSE(single.variant_for(shared).private_groups);
}

TEST_CASE("private groups unasked: WORKGROUPLOCAL on a GPU, wide accumulators, at most four keys sampled") {
  const execution_params local{strategy_kind::workgroup_local, {64, 128}};
  const execution_params shared{strategy_kind::shared, {64, 128}};
  query_shape q1{};
  q1.key_bytes = 2;
  q1.bucket_bytes = 2 + 6 * 8;  // TPC-H Q1: six 64-bit accumulators
  auto four = uniform_input(4);
  four.sample_keys = {0x4146, 0x4e46, 0x4e4f, 0x5246};  // Q1's (returnflag, linestatus) words
  CHECK(plan(h100(), four, {}, q1).variant_for(local).private_groups);
  CHECK_FALSE(plan(h100(), four, {}, q1).variant_for(shared).private_groups);
  CHECK_FALSE(plan(pocl_cpu(), four, {}, q1).variant_for(local).private_groups);
  // One sum: its local atomic per row is cheaper than the selects.
  CHECK_FALSE(plan(h100(), four).variant_for(local).private_groups);
  options off;
  off.private_groups = false;
  CHECK_FALSE(plan(h100(), four, off, q1).variant_for(local).private_groups);
  // A fifth key in the sample, or an estimate above four groups: the local table alone.
  auto five = four;
  five.sample_keys.push_back(0x5247);
  CHECK_FALSE(plan(h100(), five, {}, q1).variant_for(local).private_groups);
  auto more = four;
  more.expected_groups = 5;
  CHECK_FALSE(plan(h100(), more, {}, q1).variant_for(local).private_groups);
  // No sample (a hint alone): nothing names the keys.
  auto unsampled = uniform_input(4);
  unsampled.sampled = false;
  CHECK_FALSE(plan(h100(), unsampled, {}, q1).variant_for(local).private_groups);

  // The keys the build is given: the sample's, the first repeated; word 0 without a sample.
  auto two = uniform_input(2);
  two.sample_keys = {7, 9};
  CHECK(plan(h100(), two).private_group_keys() == std::array<std::uint64_t, 4>{7, 9, 7, 7});
  CHECK(plan(h100(), four).private_group_keys() == std::array<std::uint64_t, 4>{0x4146, 0x4e46, 0x4e4f, 0x5246});
  CHECK(plan(h100(), unsampled).private_group_keys() == std::array<std::uint64_t, 4>{0, 0, 0, 0});
}

TEST_CASE("rows in flight: two where a row's accumulators take 32 bytes or more, else four") {
  const auto input = uniform_input(4);
  CHECK(plan(h100(), input).rows_in_flight() == 4);  // one 64-bit sum
  query_shape q1{};
  q1.key_bytes = 2;
  q1.bucket_bytes = 2 + 6 * 8;  // TPC-H Q1: six 64-bit accumulators
  CHECK(plan(h100(), input, {}, q1).rows_in_flight() == 2);
  query_shape three{};
  three.bucket_bytes = 4 + 3 * 8;
  CHECK(plan(h100(), input, {}, three).rows_in_flight() == 4);
  query_shape four_sums{};
  four_sums.bucket_bytes = 4 + 4 * 8;
  CHECK(plan(pocl_cpu(), input, {}, four_sums).rows_in_flight() == 2);
}

TEST_CASE("a perfect local table for scattered keys on a GPU whose sample saw every group") {
  std::mt19937_64 rng(5);
  const auto random_keys = [&](std::size_t n) {
    std::set<std::uint64_t> keys;
    while (keys.size() < n) keys.insert(rng());
    return std::vector<std::uint64_t>(keys.begin(), keys.end());
  };
  const auto scattered = random_keys(1024);
  std::vector<std::uint64_t> dense(1024);
  for (std::size_t i = 0; i < dense.size(); ++i) dense[i] = i;
  // Two uint32 key columns and a 64-bit sum; the sample's keys and how many it saw once.
  const query_shape shape{8, 16, 16, true, false, 0, 8, 12};
  const auto sampled = [](const std::vector<std::uint64_t>& keys, std::uint64_t once) {
    input_profile p = uniform_input(keys.size());
    const auto [lo, hi] = std::minmax_element(keys.begin(), keys.end());
    p.key_span = double(*hi - *lo) + 1;
    p.sample_keys = keys;
    p.sample_once = once;
    return p;
  };
  const auto chosen = plan(h100(), sampled(scattered, 0), {}, shape);
  REQUIRE(chosen.perfect_local().has_value());
  CHECK(chosen.perfect_local()->key_count == 1024);
  CHECK(chosen.local_capacity() == 2048);  // at most half full
  CHECK(chosen.local_table_bytes(1) <= h100().local_mem_bytes);
  CHECK(chosen.local_table_bytes(2) < 2 * chosen.local_table_bytes(1));  // copies share the keys
  CHECK(chosen.variant_for({strategy_kind::workgroup_local, launch_config{32, 256}}).perfect_local);
  CHECK_FALSE(chosen.variant_for({strategy_kind::shared, launch_config{32, 256}}).perfect_local);
  CHECK(chosen.default_params().strategy == strategy_kind::workgroup_local);
  // No probe: shuffled keys' configuration, not scattered keys' (SHARED's hashes as before); the
  // probed table without it starts from scattered keys'.
  CHECK(chosen.scattered_keys());
  REQUIRE(chosen.regime().workgroup_local != chosen.regime().workgroup_local_scattered);
  CHECK(chosen.initial_config(strategy_kind::workgroup_local) == chosen.regime().workgroup_local);
  CHECK(chosen.initial_config(strategy_kind::shared) == chosen.regime().shared_scattered);
  options no_perfect;
  no_perfect.perfect_local_table = false;
  const auto probed = plan(h100(), sampled(scattered, 0), no_perfect, shape);
  CHECK(probed.initial_config(strategy_kind::workgroup_local) == probed.regime().workgroup_local_scattered);
  // Not for a few groups, whose probed table is sparse enough: 16 keys get 512 buckets and 64
  // keys 2048 (load 1/32); 100 keys get the most local memory holds, 2048, fuller than that.
  const auto few = plan(h100(), sampled(random_keys(16), 0), {}, shape);
  CHECK_FALSE(few.perfect_local().has_value());
  CHECK(few.local_capacity() == 512);
  CHECK_FALSE(plan(h100(), sampled(random_keys(64), 0), {}, shape).perfect_local().has_value());
  CHECK(plan(h100(), sampled(random_keys(100), 0), {}, shape).perfect_local().has_value());
  // Nor for dense keys (a bucket a key already), on a CPU, where the sample missed the keys of
  // more than 1/64 of the rows (Good-Turing: its keys seen once), without the sample's keys, or
  // with options' false.
  CHECK_FALSE(plan(h100(), sampled(dense, 0), {}, shape).perfect_local().has_value());
  CHECK_FALSE(plan(pocl_cpu(), sampled(scattered, 0), {}, shape).perfect_local().has_value());
  CHECK_FALSE(plan(h100(), sampled(scattered, 16384 / 32), {}, shape).perfect_local().has_value());
  CHECK(plan(h100(), sampled(scattered, 16384 / 128), {}, shape).perfect_local().has_value());
  auto unsampled = sampled(scattered, 0);
  unsampled.sample_keys.clear();
  CHECK_FALSE(plan(h100(), unsampled, {}, shape).perfect_local().has_value());
  options off;
  off.perfect_local_table = false;
  CHECK_FALSE(plan(h100(), sampled(scattered, 0), off, shape).perfect_local().has_value());
  // Options' true: any sample whose table fits, a CPU's and dense keys' too; not 4096 keys in
  // 16-byte buckets at load 1/2 (128 KiB) on the H100.
  options on;
  on.perfect_local_table = true;
  CHECK(plan(pocl_cpu(), sampled(dense, 0), on, shape).perfect_local().has_value());
  CHECK_FALSE(plan(h100(), sampled(random_keys(4096), 0), on, shape).perfect_local().has_value());
  // Where a table at most half full does not fit 48 KiB, a fuller one, as many buckets as fit:
  // 16 bytes and a bit a bucket for these keys, and a word per two keys' displacement group.
  // 1025 keys still take 2050 buckets (37 KiB), 2048 keys about 2790, 2500 keys about 2530;
  // 2600 keys would not fit even with every bucket used. The default takes them too, and
  // WORKGROUPLOCAL runs them.
  for (const std::size_t n : {std::size_t{1025}, std::size_t{2048}, std::size_t{2500}}) {
    CAPTURE(n);
    const auto fuller = plan(h100(), sampled(random_keys(n), 0), {}, shape);
    REQUIRE(fuller.perfect_local().has_value());
    CHECK(fuller.perfect_local()->key_count == n);
    CHECK(fuller.local_capacity() >= n);
    CHECK(fuller.local_capacity() <= 2 * n);
    CHECK(fuller.local_table_bytes(1) + 64 <= h100().local_mem_bytes);
    // The most that fit: within a bucket (16 bytes, and a bitmap word) of local memory's end.
    if (fuller.local_capacity() < 2 * n) CHECK(fuller.local_table_bytes(1) + 64 + 20 > h100().local_mem_bytes);
    CHECK(fuller.default_params().strategy == strategy_kind::workgroup_local);
  }
  CHECK(plan(h100(), sampled(random_keys(1025), 0), {}, shape).local_capacity() == 2050);
  CHECK_FALSE(plan(h100(), sampled(random_keys(2600), 0), on, shape).perfect_local().has_value());
}

TEST_CASE("a range local table for a dense range of keys on a GPU: up to about 6,000 keys in 48 KiB") {
  // One uint32 key and a 64-bit sum (the recorded shape): 8 bytes and a bit a bucket.
  const auto dense = [](std::uint64_t lowest, std::uint64_t span) {
    input_profile p = uniform_input(span);
    p.key_box = {lowest, {span - 1}, 1};
    p.key_span = double(span);
    return p;
  };
  const auto chosen = plan(h100(), dense(1000, 4096));
  REQUIRE(chosen.range_local().has_value());
  CHECK(chosen.range_local()->box.lowest == 1000);
  CHECK(chosen.range_local()->spans() == 0);
  CHECK(chosen.range_local()->buckets() == 4096);
  CHECK(chosen.local_capacity() == 4096);
  CHECK(chosen.local_table_bytes(1) == 4097 * 8 + 129 * 4);
  CHECK(chosen.local_table_fits());
  CHECK_FALSE(chosen.perfect_local().has_value());
  // 4096 groups: a probed table (8192 buckets of 12 bytes) does not fit, SHARED without the
  // range; WORKGROUPLOCAL with it, whose blocks run the range table's build.
  CHECK(chosen.default_params().strategy == strategy_kind::workgroup_local);
  CHECK(chosen.strategies_to_build() == std::vector<strategy_kind>{strategy_kind::workgroup_local});
  CHECK(chosen.infeasibility({strategy_kind::workgroup_local, launch_config{8, 256}}, true).empty());
  CHECK(chosen.variant_for({strategy_kind::workgroup_local, launch_config{8, 256}}).range_local);
  CHECK_FALSE(chosen.variant_for({strategy_kind::workgroup_local, launch_config{8, 256}}).perfect_local);
  CHECK_FALSE(chosen.variant_for({strategy_kind::shared, launch_config{8, 256}}).range_local);
  options off;
  off.range_local_table = false;
  const auto probed = plan(h100(), dense(1000, 4096), off);
  CHECK_FALSE(probed.range_local().has_value());
  CHECK_FALSE(probed.local_table_fits());
  CHECK(probed.default_params().strategy == strategy_kind::shared);
  // Small ranges: copies of the range's accumulators, not of a probed table of twice the buckets.
  const auto small = plan(h100(), dense(0, 16));
  REQUIRE(small.range_local().has_value());
  CHECK(small.local_table_copies({8, 256}) >= plan(h100(), dense(0, 16), off).local_table_copies({8, 256}));
  // The most that fits 48 KiB less the kernel's 64 bytes: (n + 1) * 8 + (n + 1) / 32 * 4 bytes.
  CHECK(plan(h100(), dense(0, 6000)).range_local().has_value());
  CHECK_FALSE(plan(h100(), dense(0, 6100)).range_local().has_value());
  // Not for a range wider than local memory, a CPU (its local memory is its caches, where the
  // probed table runs as well), an input not sampled, direct addressing; options' true on a CPU.
  CHECK_FALSE(plan(h100(), dense(0, std::uint64_t{1} << 32)).range_local().has_value());
  CHECK_FALSE(plan(pocl_cpu(), dense(0, 1024)).range_local().has_value());
  auto unsampled = dense(0, 1024);
  unsampled.sampled = false;
  CHECK_FALSE(plan(h100(), unsampled).range_local().has_value());
  query_shape direct = recorded_shape();
  direct.identity_scheme = true;
  direct.domain_size = 1024;
  CHECK_FALSE(plan(h100(), dense(0, 1024), {}, direct).range_local().has_value());
  options on;
  on.range_local_table = true;
  CHECK(plan(pocl_cpu(), dense(0, 1024), on).range_local().has_value());
}

TEST_CASE("a range local table for composite keys: the box of every column's range") {
  // Two uint32 columns packed into a 64-bit word (16-byte buckets) with a 64-bit sum: (a, b) for
  // a in [7, 70], b in [1000, 1063], 4096 keys whose words lie 2^38 apart.
  using pair = packed_key<std::uint32_t, std::uint32_t>;
  query_shape shape = recorded_shape();
  shape.key_bytes = 8;
  shape.bucket_bytes = 16;
  const auto boxed = [&](std::uint64_t a_keys, std::uint64_t b_keys) {
    input_profile p = uniform_input(a_keys * b_keys);
    p.key_box = {pair::to_bits({7, 1000}), {a_keys - 1, b_keys - 1}, 2};
    p.key_span = double(pair::to_bits({std::uint32_t(7 + a_keys - 1), std::uint32_t(1000 + b_keys - 1)}) -
                        pair::to_bits({7, 1000})) + 1;
    return p;
  };
  const auto chosen = plan(h100(), boxed(64, 64), {}, shape);
  REQUIRE(chosen.range_local().has_value());
  CHECK(chosen.range_local()->buckets() == 4096);
  CHECK(chosen.range_local()->spans() == (64u | (64u << 16)));
  CHECK(chosen.local_capacity() == 4096);
  CHECK(chosen.default_params().strategy == strategy_kind::workgroup_local);
  CHECK(chosen.variant_for({strategy_kind::workgroup_local, launch_config{8, 256}}).range_local);
  // Its keys are scattered over their words, but the range table hashes none of them: shuffled
  // keys' configuration, not scattered keys' (SHARED's global table hashes them as before).
  CHECK(chosen.scattered_keys());
  REQUIRE(chosen.regime().workgroup_local != chosen.regime().workgroup_local_scattered);
  CHECK(chosen.initial_config(strategy_kind::workgroup_local) == chosen.regime().workgroup_local);
  CHECK(chosen.initial_config(strategy_kind::shared) == chosen.regime().shared_scattered);
  // The box, not the words' span, decides: 8,192 keys do not fit 48 KiB; a column of 65,536
  // values is past the kernel's 16 bits a field even where local memory would hold the box.
  CHECK_FALSE(plan(h100(), boxed(128, 64), {}, shape).range_local().has_value());
  options on;
  on.range_local_table = true;
  CHECK(plan(pocl_cpu(), boxed(2, 0xFFFF), on, shape).range_local().has_value());
  CHECK_FALSE(plan(pocl_cpu(), boxed(2, 0x10000), on, shape).range_local().has_value());
  // A sparse box: TPC-H Q1's two uint8 flags ('A', 'N', 'R' and 'F', 'O': 4 groups in a box of
  // 18 x 10 keys) keep a probed table of their 4 groups, whose copies fill local memory; options'
  // true takes the box.
  using flags = packed_key<std::uint8_t, std::uint8_t>;
  input_profile q1 = uniform_input(4);
  q1.key_box = {flags::to_bits({'A', 'F'}), {'R' - 'A', 'O' - 'F'}, 2};
  CHECK_FALSE(plan(h100(), q1).range_local().has_value());
  CHECK(plan(h100(), q1, on).range_local()->buckets() == 180);
  // A quarter of the box's keys is dense enough (a dense range's estimate, estimate.hpp).
  CHECK(plan(h100(), [&] {
          auto p = boxed(64, 64);
          p.expected_groups = 1024;
          return p;
        }(), {}, shape).range_local().has_value());
}

TEST_CASE("a key box's entries: every key of the box one entry, in mixed radix, and back") {
  using triple = packed_key<std::uint8_t, std::int16_t, std::uint32_t>;
  detail::key_box_builder builder(triple::layout);
  builder.add(triple::to_bits({200, -3, 4000000000u}));
  builder.add(triple::to_bits({203, -1, 4000000002u}));
  const auto box = builder.box();
  REQUIRE(box.fields == 3);
  CHECK(box.keys() == 4 * 3 * 3);
  CHECK(box.lowest == triple::to_bits({200, -3, 4000000000u}));
  std::vector<bool> seen(36, false);
  for (unsigned a = 200; a <= 203; ++a) {
    for (int b = -3; b <= -1; ++b) {
      for (std::uint32_t c = 4000000000u; c <= 4000000002u; ++c) {
        const std::uint64_t word = triple::to_bits({std::uint8_t(a), std::int16_t(b), c});
        const std::uint64_t entry = detail::box_entry(triple::layout, box, word);
        REQUIRE(entry < 36);
        CHECK_FALSE(seen[entry]);
        seen[entry] = true;
        CHECK(detail::box_word(triple::layout, box, entry) == word);
      }
    }
  }
  // A field below or above its range is outside the box, whatever the other fields hold.
  const auto none = ~std::uint64_t{0};
  CHECK(detail::box_entry(triple::layout, box, triple::to_bits({199, -2, 4000000001u})) == none);
  CHECK(detail::box_entry(triple::layout, box, triple::to_bits({204, -2, 4000000001u})) == none);
  CHECK(detail::box_entry(triple::layout, box, triple::to_bits({201, 0, 4000000001u})) == none);
  CHECK(detail::box_entry(triple::layout, box, triple::to_bits({201, -4, 4000000001u})) == none);
  CHECK(detail::box_entry(triple::layout, box, triple::to_bits({201, -2, 3999999999u})) == none);
  // One field: the word less the lowest, a word below it wrapping past the box.
  const detail::key_box range{~std::uint64_t{0} - 9, {9}, 1};
  CHECK(detail::box_entry(detail::key_layout{}, range, ~std::uint64_t{0}) == 9);
  CHECK(detail::box_word(detail::key_layout{}, range, 9) == ~std::uint64_t{0});
  CHECK(detail::box_entry(detail::key_layout{}, range, 0) == none);
}

TEST_CASE("direct addressing over the key column's exact range: dense shuffled keys on a GPU's device input") {
  // One uint32 key and a 64-bit sum (the recorded shape): direct addressing's table takes 8
  // bytes and a bit a key, the hash table 12 bytes a bucket at load 1/2 (16 interleaved).
  const auto dense = [](std::uint64_t groups, std::uint64_t lowest = 0, bool on_device = true) {
    input_profile p = uniform_input(groups, std::uint64_t{1} << 27, on_device);
    p.key_box = {lowest, {groups - 1}, 1};
    p.key_span = double(groups);
    return p;
  };
  const std::uint64_t g = std::uint64_t{1} << 22;
  const auto chosen = plan(h100(), dense(g));
  CHECK(chosen.direct_range_wanted());
  // The range of the groups, or one a little wider than the sample's: direct addressing.
  const auto exact = chosen.direct_domain({7, g - 1});
  REQUIRE(exact.has_value());
  CHECK(exact->lowest == 7);
  CHECK(exact->keys() == g);
  CHECK(chosen.direct_domain({0, g + 1000}).has_value());
  // Its table no larger than the hash table: 2^23 buckets of 12 bytes (96 MiB) against 8 bytes
  // and a bit a key, about 12.4 M keys.
  CHECK(chosen.initial_table_capacity() == std::uint64_t{1} << 23);
  CHECK_FALSE(chosen.interleaved(chosen.initial_table_capacity()));
  CHECK(chosen.direct_domain({0, 12'300'000}).has_value());
  CHECK_FALSE(chosen.direct_domain({0, 12'500'000}).has_value());
  // An outlier far from the groups, or more keys than direct addressing holds: the hash table.
  CHECK_FALSE(chosen.direct_domain({0, std::uint64_t{1} << 40}).has_value());
  CHECK_FALSE(chosen.direct_domain({0, ~std::uint64_t{0}}).has_value());
  const auto wide = plan(h100(), dense(std::uint64_t{1} << 30));
  CHECK(wide.direct_range_wanted());
  CHECK_FALSE(wide.direct_domain({0, query_planner::direct_max_keys}).has_value());
  CHECK(wide.direct_domain({0, query_planner::direct_max_keys - 1}).has_value());

  // Not read at all: host input, fewer groups than direct_min_groups, a CPU, scattered keys,
  // skewed keys, runs, two key columns, direct addressing by the query's scheme, options' false.
  CHECK_FALSE(plan(h100(), dense(g, 0, false)).direct_range_wanted());
  CHECK_FALSE(plan(h100(), dense(query_planner::direct_min_groups / 2)).direct_range_wanted());
  CHECK(plan(h100(), dense(query_planner::direct_min_groups)).direct_range_wanted());
  CHECK_FALSE(plan(pocl_cpu(), dense(g)).direct_range_wanted());
  CHECK_FALSE(plan(unknown_gpu(), dense(g, 0, false)).direct_range_wanted());
  CHECK(plan(amd_mi250(), dense(g)).direct_range_wanted());
  auto scattered = dense(g);
  scattered.key_span = 1e9;
  scattered.key_box.extent[0] = 999'999'999;
  CHECK_FALSE(plan(h100(), scattered).direct_range_wanted());
  auto hot = dense(g);
  hot.hottest_key_share = 0.5;
  hot.frequent_counts = {8192};
  CHECK_FALSE(plan(h100(), hot).direct_range_wanted());
  auto frequent = dense(g);
  frequent.frequent_counts = {1000, 800, 600};  // 1/8 of the sample and more: the hot-key table's
  CHECK_FALSE(plan(h100(), frequent).direct_range_wanted());
  auto by_chance = dense(g);
  by_chance.frequent_counts = {9, 8};  // keys a uniform sample saw often by chance
  CHECK(plan(h100(), by_chance).direct_range_wanted());
  auto runs = dense(g);
  runs.runs_share = 0.9;
  CHECK_FALSE(plan(h100(), runs).direct_range_wanted());
  auto two_columns = dense(g);
  two_columns.key_box = {0, {2047, 2047}, 2};
  CHECK(plan(h100(), two_columns).direct_range_wanted());  // a box: plan_test's next case
  CHECK_FALSE(plan(h100(), two_columns).direct_domain({0, g - 1}).has_value());
  auto unsampled = dense(g);
  unsampled.sampled = false;
  CHECK_FALSE(plan(h100(), unsampled).direct_range_wanted());
  query_shape direct = recorded_shape();
  direct.identity_scheme = true;
  direct.domain_size = g;
  CHECK_FALSE(plan(h100(), dense(g), {}, direct).direct_range_wanted());
  options off;
  off.direct_table = false;
  CHECK_FALSE(plan(h100(), dense(g), off).direct_range_wanted());
  CHECK_FALSE(plan(h100(), dense(g), off).direct_domain({0, g - 1}).has_value());
  options interleaved;
  interleaved.interleaved_table = true;  // a hash table's layout, asked for
  CHECK_FALSE(plan(h100(), dense(g), interleaved).direct_range_wanted());
  interleaved.direct_table = true;
  CHECK_FALSE(plan(h100(), dense(g), interleaved).direct_range_wanted());
  interleaved.interleaved_table = false;
  CHECK(plan(h100(), dense(g), interleaved).direct_range_wanted());
  // options' true: on a CPU too, and below direct_min_groups (the tests' way on PoCL).
  options on;
  on.direct_table = true;
  CHECK(plan(pocl_cpu(), dense(g), on).direct_range_wanted());
  CHECK(plan(pocl_cpu(), dense(1000), on).direct_range_wanted());
  CHECK(plan(pocl_cpu(), dense(1000), on).direct_domain({0, 999}).has_value());
  CHECK_FALSE(plan(pocl_cpu(), dense(1000, 0, false), on).direct_range_wanted());
}

TEST_CASE("direct addressing's pieces: a copy as large as the hash table of its groups would allow") {
  // 2^24 groups: direct addressing's table of 2^24 keys (about 130 MiB) orders its pieces within
  // 5/8 of the 512 MiB hash table the groups would get, not of its own bytes.
  const std::uint64_t groups = std::uint64_t{1} << 24;
  query_shape direct = recorded_shape();
  direct.identity_scheme = true;
  direct.domain_size = groups;
  const auto q = plan(h100(), uniform_input(groups), {}, direct);
  CHECK(q.hashed_table_bytes() == ((std::uint64_t{1} << 25) + 1) * 16);
  CHECK(q.global_table_bytes(groups, false) < q.hashed_table_bytes() / 3);
  CHECK(q.partition_piece_rows(groups, false) == q.hashed_table_bytes() / 8 * 5 / 8);
  // Over a 64-bit word (two uint32 key columns and a uint32 value, 12 bytes a row) the copy
  // holds each row's 4-byte bucket and its value: pieces of 8-byte rows, as one key column's.
  query_shape pair = direct;
  pair.key_bytes = 8;
  pair.bucket_bytes = 16;
  pair.row_bytes = 12;
  pair.key_row_bytes = 8;
  auto restartable = uniform_input(groups);
  restartable.restartable = true;  // group_by's: blocks of 256 MiB whatever the spill area
  const auto p = plan(h100(), restartable, {}, pair);
  REQUIRE(p.block_rows() == std::uint64_t{1} << 26);
  REQUIRE(p.partition_copy_buckets());
  CHECK(p.partition_copy_row_bytes() == 8);
  CHECK(p.partition_piece_rows(groups, false) == p.hashed_table_bytes() / 8 * 5 / 8);
  // Key columns of 4, 2 and 1 bytes in a 64-bit word beside a 4-byte value: 11 bytes a row,
  // 8 in the copy. A 32-bit word copies its rows whole.
  query_shape three = pair;
  three.key_row_bytes = 7;
  three.row_bytes = 11;
  CHECK(plan(h100(), uniform_input(groups), {}, three).partition_copy_row_bytes() == 8);
  CHECK_FALSE(q.partition_copy_buckets());
  CHECK(q.partition_copy_row_bytes() == direct.row_bytes);
  // COUNT by the first column over an exact box: 4,096 x 4,096 keys in 8 runs, 512 values of
  // the first column each (a run's 2^21 buckets, as planned); 100 values over 8 runs make
  // regions of 13 where 12.5 were planned (within a quarter); 6 values over 8 runs, or a box
  // not known exact, or a hash table: by bucket.
  const std::uint64_t box = std::uint64_t{1} << 24;
  CHECK(p.first_column_region(box, 4096, 8, true) == 512);
  CHECK(p.first_column_region(box, 4096, 8, false) == 0);
  CHECK(p.first_column_region(100 * 4096, 100, 8, true) == 13);
  CHECK(p.first_column_region(6 * 4096, 6, 8, true) == 0);
  CHECK(p.first_column_region(box, 4096, 1, true) == 4096);
  CHECK(p.first_column_region(box, 3000, 8, true) == 0);  // not the box's shape: no digit
  query_shape hashed_pair = pair;
  hashed_pair.identity_scheme = false;
  hashed_pair.domain_size = 0;
  const auto hp = plan(h100(), uniform_input(groups), {}, hashed_pair);
  CHECK(hp.partition_copy_row_bytes() == 12);
  CHECK(hp.partition_piece_rows(std::uint64_t{1} << 25, true) == hp.hashed_table_bytes() / 8 * 5 / 12);
  CHECK(hp.first_column_region(box, 4096, 8, true) == 0);
  // The hash scheme's own: its table's bytes.
  const auto hashed = plan(h100(), uniform_input(groups));
  CHECK(hashed.partition_piece_rows(std::uint64_t{1} << 25, true) == hashed.hashed_table_bytes() / 8 * 5 / 8);
}

TEST_CASE("the range's pass starts before the profile where the plan may ask for it") {
  // What early_range_pass sees: a strided subset's box, before the profile and the estimate.
  const auto range = [](std::uint64_t keys) { return detail::key_box{0, {keys - 1}, 1}; };
  const query_shape shape = recorded_shape();
  const options none;
  constexpr std::uint64_t half = query_planner::direct_min_groups / 2;
  CHECK(query_planner::early_range_pass(h100(), shape, none, true, range(half)));
  CHECK(query_planner::early_range_pass(h100(), shape, none, true, range(std::uint64_t{1} << 24)));
  CHECK(query_planner::early_range_pass(h100(), shape, none, true, range(query_planner::direct_max_keys)));
  // Fewer keys than half of direct_min_groups: too few groups for direct addressing to pay.
  CHECK_FALSE(query_planner::early_range_pass(h100(), shape, none, true, range(half - 1)));
  // Wider than direct addressing holds (scattered keys over 32 bits and more).
  CHECK_FALSE(query_planner::early_range_pass(h100(), shape, none, true, range(query_planner::direct_max_keys + 1)));
  CHECK_FALSE(query_planner::early_range_pass(h100(), shape, none, true, detail::key_box{0, {~std::uint64_t{0}}, 1}));
  // Host input, a CPU, no box, direct addressing by the query's scheme, options' false or the
  // interleaved layout asked for: never.
  CHECK_FALSE(query_planner::early_range_pass(h100(), shape, none, false, range(half)));
  CHECK_FALSE(query_planner::early_range_pass(pocl_cpu(), shape, none, true, range(half)));
  CHECK_FALSE(query_planner::early_range_pass(h100(), shape, none, true, detail::key_box{}));
  query_shape direct = shape;
  direct.identity_scheme = true;
  CHECK_FALSE(query_planner::early_range_pass(h100(), direct, none, true, range(half)));
  options off;
  off.direct_table = false;
  CHECK_FALSE(query_planner::early_range_pass(h100(), shape, off, true, range(half)));
  options interleaved;
  interleaved.interleaved_table = true;
  CHECK_FALSE(query_planner::early_range_pass(h100(), shape, interleaved, true, range(half)));
  // options' true: on a CPU and for a box of a few keys too (direct_range_wanted's own rule).
  options asked;
  asked.direct_table = true;
  CHECK(query_planner::early_range_pass(pocl_cpu(), shape, asked, true, range(40)));
  CHECK_FALSE(query_planner::early_range_pass(pocl_cpu(), shape, asked, false, range(40)));
  // Packed keys: a box whose spans the tables' `bits` hold (16 bits each of three columns' last
  // two), not one they cannot.
  CHECK(query_planner::early_range_pass(h100(), shape, none, true, detail::key_box{0, {63, 1023, 1023}, 3}));
  CHECK_FALSE(query_planner::early_range_pass(h100(), shape, none, true, detail::key_box{0, {0, 1, 99'999}, 3}));
  // The subset's box, every step-th key of the sample, fields no wider than the word.
  const std::vector<std::uint32_t> sampled{5, 900, 7, 1'000'000, 3, 12};
  const auto every = detail::subset_box(std::span<const std::uint32_t>(sampled), detail::key_layout{}, 1);
  CHECK(every.lowest == 3);
  CHECK(every.extent[0] == 999'997);
  const auto alternate = detail::subset_box(std::span<const std::uint32_t>(sampled), detail::key_layout{}, 2);
  CHECK(alternate.lowest == 3);
  CHECK(alternate.extent[0] == 4);
  // -1 and 1 of an int32 column: a range of 3 keys across zero, as signed words.
  const std::vector<std::uint32_t> signed_words{0xFFFFFFFFu, 1u};
  CHECK(detail::subset_box(std::span<const std::uint32_t>(signed_words), detail::key_layout{}, 1).keys() == 3);
}

TEST_CASE("direct addressing over the exact box of packed key columns: dense boxes whose spans fit") {
  // Two uint32 columns (a 64-bit word) and a 64-bit sum: their words spread over 2^42 where the
  // box of 1,024 x 1,024 holds 2^20 keys.
  using pair = packed_key<std::uint32_t, std::uint32_t>;
  const auto boxed = [](std::uint64_t groups, detail::key_box box, bool on_device = true) {
    input_profile p = uniform_input(groups, std::uint64_t{1} << 27, on_device);
    p.key_box = box;
    p.key_span = double(box.extent[0] + 1) * double(std::uint64_t{1} << 32);
    return p;
  };
  const std::uint64_t g = std::uint64_t{1} << 20;
  const detail::key_box square{pair::to_bits({7, 1000}), {1023, 1023}, 2};
  const auto chosen = plan(h100(), boxed(g, square));
  CHECK(chosen.scattered_keys());  // the words are, the box is not
  CHECK(chosen.direct_range_wanted());
  const auto exact = chosen.direct_box(square);
  REQUIRE(exact.has_value());
  CHECK(exact->keys() == double(g));
  CHECK(*detail::box_spans_code(*exact) == 1024);
  // One key column's range is no box.
  CHECK_FALSE(chosen.direct_box(detail::key_box{0, {g - 1}, 1}).has_value());
  CHECK_FALSE(chosen.direct_domain({0, g - 1}).has_value());
  // Wider than the sample's box but within the hash table's bytes, and beyond them.
  CHECK(chosen.direct_box({square.lowest, {2047, 1023}, 2}).has_value());
  CHECK_FALSE(chosen.direct_box({square.lowest, {1023, 65'535}, 2}).has_value());
  // A second column of 2^32 values: its span does not fit 32 bits.
  CHECK_FALSE(chosen.direct_box({square.lowest, {0, 0xFFFF'FFFFull}, 2}).has_value());
  // Sparse boxes (more than dense_span_factor keys a group), a box beyond direct addressing,
  // host input, spans beyond the bits: not read.
  CHECK_FALSE(plan(h100(), boxed(g / 8, square)).direct_range_wanted());
  CHECK_FALSE(plan(h100(), boxed(g, {0, {65'535, 65'535}, 2})).direct_range_wanted());
  CHECK_FALSE(plan(h100(), boxed(g, square, false)).direct_range_wanted());
  CHECK(plan(h100(), boxed(g, {0, {31, 31, 1023}, 3})).direct_range_wanted());
  CHECK_FALSE(plan(h100(), boxed(g, {0, {0, 15, 65'535}, 3})).direct_range_wanted());
  CHECK(plan(h100(), boxed(g, {0, {15, 15, 63, 63}, 4})).direct_range_wanted());
  CHECK_FALSE(plan(h100(), boxed(g, {0, {0, 0, 1, 1'024 * 256 - 1}, 4})).direct_range_wanted());
  auto skewed = boxed(g, square);
  skewed.hottest_key_share = 0.5;
  skewed.frequent_counts = {8192};
  CHECK_FALSE(plan(h100(), skewed).direct_range_wanted());
}

TEST_CASE("a box's spans in the tables' bits: 32, 16 or 10 bits a column after the first") {
  const detail::key_box two{0, {9, 0xFFFF'FFFEull}, 2};
  REQUIRE(detail::box_spans_code(two).has_value());
  CHECK(*detail::box_spans_code(two) == 0xFFFF'FFFFu);
  CHECK(detail::box_code_span(*detail::box_spans_code(two), 2, 1) == 0xFFFF'FFFFull);
  CHECK_FALSE(detail::box_spans_code({0, {9, 0xFFFF'FFFFull}, 2}).has_value());
  const detail::key_box three{0, {1'000, 65'534, 0}, 3};
  const auto code3 = detail::box_spans_code(three);
  REQUIRE(code3.has_value());
  CHECK(detail::box_code_span(*code3, 3, 1) == 65'535);
  CHECK(detail::box_code_span(*code3, 3, 2) == 1);
  CHECK_FALSE(detail::box_spans_code({0, {0, 65'535, 0}, 3}).has_value());
  const detail::key_box four{0, {5, 1'022, 0, 99}, 4};
  const auto code4 = detail::box_spans_code(four);
  REQUIRE(code4.has_value());
  CHECK(detail::box_code_span(*code4, 4, 1) == 1'023);
  CHECK(detail::box_code_span(*code4, 4, 2) == 1);
  CHECK(detail::box_code_span(*code4, 4, 3) == 100);
  CHECK_FALSE(detail::box_spans_code({0, {0, 0, 1'023, 0}, 4}).has_value());
  // Never 0 (a range of words), and none for one field.
  CHECK(*detail::box_spans_code({0, {0, 0}, 2}) == 1);
  CHECK_FALSE(detail::box_spans_code({0, {99}, 1}).has_value());
}

