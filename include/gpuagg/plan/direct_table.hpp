#pragma once
// Whether to address the global table directly: over the key column's exact range, or over the
// exact box of packed key columns (every column a range of its own, a key's bucket its columns'
// offsets in mixed radix), where the sample shows a dense range or box of shuffled keys and its
// table is no larger than the hash table's. The driver reads the range or box
// (driver/key_range.hpp) only where the plan asks for it, and group_by runs the query with
// direct_addressing where the plan takes it (groupby.hpp).

#ifndef GPUAGG_PLAN_HPP
#error "include <gpuagg/plan.hpp>: plan/*.hpp implement its members"
#endif

#include <optional>

namespace gpuagg {

inline bool query_planner::direct_range_wanted() const {
  if (shape_.identity_scheme || !profile_.on_device || !profile_.sampled || profile_.key_box.fields == 0) return false;
  const bool asked = opts_.direct_table.value_or(false);
  if (!opts_.direct_table.value_or(device_.is_gpu)) return false;
  // The interleaved layout is a hash table's (key and accumulators in one record): asked for,
  // the caller gets one, not direct addressing's error for it.
  if (opts_.interleaved_table.value_or(false)) return false;
  if (!asked && planned_groups() < direct_min_groups) return false;
  // Skewed keys and runs run strategies and configurations chosen for the hash table (the
  // hot-key table, the run cache, partial local tables), which direct addressing plans apart.
  // A few keys a uniform sample saw often by chance are not skew: the frequent keys count where
  // they hold as much of the sample as the hot-key table asks for.
  std::uint64_t frequent = 0;
  for (const auto count : profile_.frequent_counts) frequent += count;
  const double frequent_share = profile_.sample_size ? double(frequent) / double(profile_.sample_size) : 0.0;
  const bool skewed = frequent_share >= hot_table_min_share || profile_.hottest_key_share >= hot_key_threshold ||
                      profile_.runs_share >= runs_min_share;
  if (skewed) return false;
  if (profile_.key_box.fields == 1) return !scattered_keys() && profile_.key_span <= double(direct_max_keys);
  // Packed keys: their words spread over 2^32 and more (a << 32 | b), so the sample's box is
  // what must be dense, as a single key's range must, and its spans fit the tables' `bits`.
  const double box = profile_.key_box.keys();
  return box <= dense_span_factor * double(planned_groups()) && box <= double(direct_max_keys) &&
         detail::box_spans_code(profile_.key_box).has_value();
}

inline bool query_planner::early_range_pass(const device_info& device, const query_shape& shape, const options& opts,
                                           bool on_device, const detail::key_box& subset_box) {
  if (shape.identity_scheme || !on_device || subset_box.fields == 0) return false;
  if (!opts.direct_table.value_or(device.is_gpu) || opts.interleaved_table.value_or(false)) return false;
  const double keys = subset_box.keys();
  if (keys > double(direct_max_keys)) return false;
  if (!opts.direct_table.value_or(false) && keys < double(direct_min_groups / 2)) return false;
  return subset_box.fields == 1 || detail::box_spans_code(subset_box).has_value();
}

inline std::optional<exact_key_range> query_planner::direct_domain(const exact_key_range& range) const {
  if (!direct_range_wanted() || profile_.key_box.fields != 1 || range.extent >= direct_max_keys) return std::nullopt;
  const std::uint64_t hashed = initial_table_capacity();
  if (keyless_table_bytes(range.keys(), 1) > global_table_bytes(hashed, interleaved(hashed))) return std::nullopt;
  return range;
}

inline std::optional<detail::key_box> query_planner::direct_box(const detail::key_box& box) const {
  if (!direct_range_wanted() || box.fields < 2 || box.fields != profile_.key_box.fields) return std::nullopt;
  if (box.keys() > double(direct_max_keys) || !detail::box_spans_code(box)) return std::nullopt;
  const std::uint64_t hashed = initial_table_capacity();
  const auto keys = static_cast<std::uint64_t>(box.keys());
  if (keyless_table_bytes(keys, 1) > global_table_bytes(hashed, interleaved(hashed))) return std::nullopt;
  return box;
}

}  // namespace gpuagg
