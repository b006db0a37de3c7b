#pragma once
// What a kernel gets beyond its strategy: the run cache and its hot-key register, private
// groups for a query of at most four groups, SHARED's hot-key table, WORKGROUPLOCAL's cold-row
// queue, perfect local table and replicated local tables, the global
// table's probe limit and whether its keys are read through the cache; and which program
// variant a block runs.

#ifndef GPUAGG_PLAN_HPP
#error "include <gpuagg/plan.hpp>: plan/*.hpp implement its members"
#endif

#include <algorithm>
#include <optional>

#include "../detail/bits.hpp"
#include "../detail/perfect_hash.hpp"

namespace gpuagg {

inline bool query_planner::run_cache(const execution_params& params) const {
  if (opts_.run_cache) return *opts_.run_cache;
  const double hot = profile_.hottest_key_share;
  if (hot >= single_key_share) return true;
  if (hot < dominant_key_share) return false;
  return params.strategy != strategy_kind::workgroup_local || local_table_copies(params.config) == 1;
}

inline bool query_planner::hot_table(const execution_params& params) const {
  if (shape_.identity_scheme || params.strategy != strategy_kind::shared || hot_.keys == 0) return false;
  if (opts_.hot_table) return *opts_.hot_table;
  return hot_.share >= hot_table_min_share && !run_cache(params);
}

inline bool query_planner::private_groups(const execution_params& params) const {
  if (params.strategy == strategy_kind::independent) return false;
  if (opts_.private_groups) return *opts_.private_groups;
  return params.strategy == strategy_kind::workgroup_local && device_.is_gpu && wide_accumulators() &&
         profile_.sampled && !profile_.sample_keys.empty() && profile_.sample_keys.size() <= private_groups_max &&
         profile_.expected_groups <= private_groups_max;
}

inline bool query_planner::wide_accumulators() const {
  return shape_.bucket_bytes - shape_.key_bytes >= many_accumulator_bytes;
}

inline std::uint32_t query_planner::rows_in_flight() const { return wide_accumulators() ? 2 : 4; }

inline std::array<std::uint64_t, query_planner::private_groups_max> query_planner::private_group_keys() const {
  // sample_keys are distinct (input_profile): the first of them, the first repeated after.
  std::array<std::uint64_t, private_groups_max> keys{};
  const std::size_t n = std::min(keys.size(), profile_.sample_keys.size());
  std::copy_n(profile_.sample_keys.begin(), n, keys.begin());
  std::fill(keys.begin() + n, keys.end(), keys[0]);
  return keys;
}

inline bool query_planner::cold_queue(const execution_params& params) const {
  const double hot = profile_.hottest_key_share;
  if (params.strategy != strategy_kind::workgroup_local || opts_.run_cache || hot == 0) return false;
  if (hot >= single_key_share) return false;
  if (!run_cache(params)) return false;
  return cold_rows_per_item(params.config) >= 2;
}

inline std::uint32_t query_planner::cold_rows_per_item(const launch_config& config) const {
  const std::uint64_t table = local_table_bytes(local_table_copies(config));
  const std::uint64_t entry = std::uint64_t{config.work_group_size} * (shape_.key_bytes + 4);
  for (std::uint32_t rows = 8; rows >= 2; rows /= 2) {
    if (table + rows * entry + 64 <= device_.local_mem_bytes) return rows;
  }
  return 0;
}

inline kernel_variant query_planner::variant_for(const execution_params& params) const {
  // The perfect and range local tables change only how WORKGROUPLOCAL finds a row's local
  // bucket; the run cache and the cold-row queue run in front of them as in front of a probed
  // table.
  const bool local = params.strategy == strategy_kind::workgroup_local;
  const auto with = [&](bool run_cache, bool hot, bool cold, bool private_four) {
    kernel_variant candidate{params.strategy, run_cache, hot, cold, private_four};
    candidate.perfect_local = local && perfect_.has_value();
    candidate.range_local = local && range_.has_value();
    // A work group of one work item is the only writer of its local tables: no local atomics,
    // and its rows one contiguous share (kernels/aggregate.hpp: GPUAGG_FOR_ITEM_ROWS).
    candidate.serial = params.config.work_group_size == 1 && params.strategy != strategy_kind::independent;
    return candidate;
  };
  const auto fits = [&](const kernel_variant& candidate) {
    return runs_work_group_size(params.config.work_group_size, candidate);
  };
  kernel_variant v = with(false, false, false, false);
  v.run_cache = run_cache(params) && fits(with(true, false, false, false));
  v.hot_table = hot_table(params) && fits(with(v.run_cache, true, false, false));
  v.cold_queue = v.run_cache && cold_queue(params) && fits(with(true, false, true, false));
  if (!v.run_cache && !v.hot_table && private_groups(params)) v.private_groups = fits(with(false, false, false, true));
  return v;
}

inline std::optional<detail::perfect_hash> query_planner::plan_perfect_local() const {
  if (shape_.identity_scheme || profile_.sample_keys.empty() || profile_.sample_size == 0) return std::nullopt;
  if (opts_.perfect_local_table) {
    if (!*opts_.perfect_local_table) return std::nullopt;
  } else {
    const double unseen = double(profile_.sample_once) / double(profile_.sample_size);
    if (!device_.is_gpu || !scattered_keys() || unseen > perfect_max_unseen_share) return std::nullopt;
    if (probed_local_capacity() >= sizing_groups() * local_sparse_factor) return std::nullopt;
  }
  const std::uint64_t empty_key = shape_.key_bytes == 8 ? ~std::uint64_t{0} : std::uint64_t{0xFFFFFFFFu};
  const auto& sampled = profile_.sample_keys;
  const auto set_keys = sampled.size() - static_cast<std::size_t>(std::count(sampled.begin(), sampled.end(), empty_key));
  // The table's size follows from the keys alone, so a table local memory cannot hold is not
  // built to find out: at most half full where that fits, else as many buckets as fit (every
  // one used at the most; 12 and 16 bytes a bucket for 4- and 8-byte keys with a 64-bit sum:
  // about 3,300 and 2,500 keys in 48 KiB), where a lookup costs the same and the build more tries.
  const std::uint64_t groups = detail::perfect_groups(set_keys);
  const auto fits = [&](std::uint64_t buckets) {
    return perfect_table_bytes(buckets, groups, 1) + 64 <= device_.local_mem_bytes;
  };
  std::uint64_t buckets = std::max<std::uint64_t>(2 * set_keys, 16);
  if (!fits(buckets)) {
    std::uint64_t low = set_keys, high = buckets;  // fits(low) is checked below; !fits(high)
    while (low + 1 < high) {
      const std::uint64_t middle = low + (high - low) / 2;
      (fits(middle) ? low : high) = middle;
    }
    buckets = low;
  }
  if (!fits(buckets) || buckets >= (std::uint64_t{1} << 32)) return std::nullopt;
  return detail::build_perfect_hash(sampled, static_cast<std::uint32_t>(buckets), empty_key);
}

inline std::optional<range_local_plan> query_planner::plan_range_local() const {
  const detail::key_box& box = profile_.key_box;
  if (shape_.identity_scheme || !profile_.sampled || box.fields == 0) return std::nullopt;
  if (opts_.range_local_table ? !*opts_.range_local_table : !device_.is_gpu) return std::nullopt;
  const double keys = box.keys();
  if (keys > double(device_.local_mem_bytes) * 8) return std::nullopt;  // far too large to count bytes
  // A sparse range (TPC-H Q1's flags: 4 groups in a box of 180 keys) would spend local memory on
  // keys that never come; a probed table of its few groups gives that memory to copies.
  if (!opts_.range_local_table && keys > double(planned_groups()) * double(detail::dense_range_min_coverage)) {
    return std::nullopt;
  }
  // The kernel takes each field's keys in 16 bits (range_local_plan::spans).
  for (std::uint32_t i = 0; box.fields > 1 && i < box.fields; ++i) {
    if (box.extent[i] >= 0xFFFF) return std::nullopt;
  }
  const range_local_plan plan{box};
  if (keyless_table_bytes(plan.buckets(), 1) + 64 > device_.local_mem_bytes) return std::nullopt;
  return plan;
}

inline std::uint32_t query_planner::local_table_copies(const launch_config& config) const {
  // A probed table's copies are whole tables; the perfect local table's copies share its keys,
  // and a range table's bitmap words round differently.
  const std::uint64_t copy_bytes = local_table_bytes(1);
  const auto bytes = [&](std::uint64_t copies) {
    return perfect_ || range_ ? local_table_bytes(copies) : copies * copy_bytes;
  };
  const std::uint64_t budget = opts_.local_table_copies ? bytes(opts_.local_table_copies) : device_.local_mem_bytes / 4;
  std::uint32_t copies = 1;
  const std::uint32_t limit = std::min<std::uint32_t>(opts_.local_table_copies ? 1024 : 32, config.work_group_size);
  while (copies * 2 <= limit && bytes(copies * 2) <= budget && bytes(copies * 2) + 64 <= device_.local_mem_bytes) {
    copies *= 2;
  }
  return copies;
}

inline std::uint32_t query_planner::max_probes(std::uint64_t capacity) const {
  return shape_.identity_scheme ? 1u : static_cast<std::uint32_t>(std::min<std::uint64_t>(capacity, 1024));
}

inline bool query_planner::plain_key_reads(std::uint64_t capacity, bool interleaved_layout) const {
  const std::uint64_t key_bytes =
      (capacity + 1) * (interleaved_layout ? shape_.interleaved_bucket_bytes : shape_.key_bytes);
  return key_bytes <= plain_key_reads_max_bytes;
}

inline hot_table_plan query_planner::plan_hot_table() const {
  hot_table_plan plan;
  if (shape_.identity_scheme || profile_.frequent_counts.empty() || profile_.sample_size == 0) return plan;
  const std::uint64_t entry = shape_.bucket_bytes + 4;  // key, accumulators, used flag
  const std::uint64_t budget = std::min<std::uint64_t>(hot_table_max_bytes, device_.local_mem_bytes / 4);
  std::uint64_t capacity = 2;
  while ((capacity * 2 + 1) * entry <= budget && capacity / 2 < profile_.frequent_counts.size()) capacity *= 2;
  if ((capacity + 1) * entry > budget) return plan;
  std::uint64_t covered = 0;
  for (const auto count : profile_.frequent_counts) {
    if (plan.keys == capacity / 2) break;
    ++plan.keys;
    covered += count;
  }
  plan.capacity = static_cast<std::uint32_t>(capacity);
  plan.share = double(covered) / double(profile_.sample_size);
  return plan;
}

}  // namespace gpuagg
