#pragma once
// Setting a query up: the input checked, the key sample taken and profiled, the groups
// estimated (or taken from the hint or the domain), the plan made, the programs it may run built
// side by side, and the buffers allocated. Nothing here waits for the device.

#ifndef GPUAGG_DRIVER_HPP
#error "include <gpuagg/driver.hpp>: driver/*.hpp implement its members"
#endif

#include <algorithm>
#include <span>
#include <string>
#include <tuple>

namespace gpuagg {

template <class Bound>
aggregation_driver<Bound>::aggregation_driver(context& ctx, const options& opts, std::vector<detail::column_data> columns,
                                              bool restartable, detail::shared_estimate* shared,
                                              detail::direct_handover* handover)
    : ctx_(ctx), opts_(opts), columns_(std::move(columns)), started_(std::chrono::steady_clock::now()),
      restartable_(restartable), shared_(shared), handover_(handover) {
  validate();
  rows_ = columns_.front().rows;
  on_device_ = columns_.front().on_device();
  in_place_ = !on_device_ && query_planner::host_blocks_in_place(ctx_.info(), opts_);
  stats_.host_blocks_in_place = in_place_;
  std::uint32_t widest = 1;
  std::uint32_t row = 0;
  std::uint32_t key_row = 0;
  for (std::size_t c = 0; c < columns_.size(); ++c) {
    const auto bytes = static_cast<std::uint32_t>(columns_[c].element_size);
    widest = std::max(widest, bytes);
    row += bytes;
    if (c < key_policy::columns) key_row += bytes;
  }
  shape_ = query_shape::of<Bound>(widest, row, key_row, identity_scheme ? opts_.domain->size : 0);
  stats_.device = ctx_.info().name;
  stats_.rows = rows_;
  if constexpr (identity_scheme) {
    stats_.direct_addressing = true;
    stats_.key_range_lowest = opts_.domain->min_bits;
    stats_.key_range_size = opts_.domain->size;
  }
  builds_before_ = ctx_.programs_built();
  if (rows_ > 0) {
    setup();
  } else {
    make_planner({});
  }
  stats_.setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

template <class Bound>
void aggregation_driver<Bound>::validate() {
  detail::check_rows_and_residency(columns_, key_policy::columns, ctx_.cl_context());
  const bool device = columns_.front().on_device();
  for (const auto& c : columns_) {
    if (device && c.offset != columns_.front().offset) {
      throw invalid_argument_error("device columns must share one element offset");
    }
  }
  if (!(opts_.max_load_factor > 0.0 && opts_.max_load_factor <= 0.9)) {
    throw invalid_argument_error("max_load_factor must lie in (0, 0.9]");
  }
  if (opts_.block_bytes && *opts_.block_bytes == 0) throw invalid_argument_error("block_bytes must be positive");
  if (opts_.tuning_block_bytes && *opts_.tuning_block_bytes == 0) {
    throw invalid_argument_error("tuning_block_bytes must be positive");
  }
  if ((opts_.partitions & (opts_.partitions - 1)) != 0 || opts_.partitions > detail::max_partitions) {
    throw invalid_argument_error("partitions must be 0 (automatic), 1 (none) or a power of two up to " +
                                 std::to_string(detail::max_partitions));
  }
  if ((opts_.local_table_copies & (opts_.local_table_copies - 1)) != 0) {
    throw invalid_argument_error("local_table_copies must be 0 (automatic) or a power of two");
  }
  if constexpr (identity_scheme) {
    if (!opts_.domain || !opts_.domain->valid) {
      throw invalid_argument_error("direct_addressing needs options::domain = {min, max} with min <= max");
    }
    if (opts_.domain->size == 0 || opts_.domain->size >= (std::uint64_t{1} << 31)) {
      throw invalid_argument_error("direct_addressing supports key domains of 1 to 2^31 - 1 keys");
    }
  }
  if (!ctx_.info().int64_atomics) {
    throw unsupported_error(ctx_.info().name + " lacks cl_khr_int64_base_atomics, which gpuagg needs");
  }
}

template <class Bound>
void aggregation_driver<Bound>::setup() {
  // The key sample (16 Ki, strided): the group estimate's first stage, the skew the default
  // strategy, the run cache and the hot-key table follow, the runs the configuration follows;
  // skipped only when the caller fixed every one of these.
  const bool estimate = !identity_scheme && !opts_.expected_groups;
  const auto profile_and_estimate = [&] {
    detail::input_estimate found;
    if (estimate || !opts_.strategy || !opts_.config || !opts_.run_cache || opts_.hot_table.value_or(true) ||
        opts_.perfect_local_table.value_or(false) || opts_.range_local_table.value_or(false)) {
      detail::phase_clock sampling(stats_.host.sample);
      const auto sample = sample_keys();
      const std::size_t n = sample.size() / 2;
      // The device would idle while the host profiles the sample: the range's pass may run then.
      if (on_device_) start_early_range(std::span<const bits_type>(sample.data(), n));
      sampling.stop();
      const detail::phase_clock counting(stats_.host.profile);
      found.profile = detail::profile_sample(std::span<const bits_type>(sample.data(), n),
                                             std::span<const bits_type>(sample.data() + n, n), Bound::key::layout);
    }
    if constexpr (identity_scheme) {
      found.estimate = {opts_.domain->size, estimate_source::domain};
    } else if (opts_.expected_groups) {
      found.estimate = {std::max<std::uint64_t>(*opts_.expected_groups, 1), estimate_source::hint};
    } else {
      const detail::phase_clock clock(stats_.host.estimate);
      const auto groups = estimate_groups(found.profile);
      found.estimate = {groups.groups, groups.source, groups.relative_error};
    }
    return found;
  };
  // Several drivers that share host input take its blocks from one queue (run_blocks): which
  // rows a driver runs first is not known here.
  if (!on_device_ && !in_place_ && shared_ == nullptr) start_first_copies();
  detail::input_estimate found;
  bool estimated = estimate;
  if (identity_scheme && handover_ != nullptr && handover_->range) {
    // A hash scheme's set-up found the sample's profile, the estimate and this range: the
    // query's clock and its set-up phases run on from there.
    found = handover_->found;
    estimated = handover_->estimated;
    started_ = handover_->started;
    builds_before_ = handover_->builds_before;
    stats_.host = handover_->stats.host;
    stats_.estimate_seconds = handover_->stats.estimate_seconds;
    stats_.peak_device_bytes = handover_->stats.peak_device_bytes;
    stats_.range_pass_early = handover_->stats.range_pass_early;
  } else if (shared_ != nullptr && !on_device_) {
    // Another driver's set-up may be making it: a wait for it counts as this one's estimate.
    bool made_here = false;
    double waited = 0;
    detail::phase_clock waiting(waited);
    found = shared_->get([&] {
      made_here = true;
      return profile_and_estimate();
    });
    waiting.stop();
    if (!made_here) stats_.host.estimate += waited;
  } else {
    found = profile_and_estimate();
  }
  const detail::sample_profile& profile = found.profile;
  hot_key_ = static_cast<bits_type>(profile.hottest_key);
  const group_estimate groups{found.estimate.groups, found.estimate.source, found.estimate.relative_error};
  stats_.expected_groups = groups.groups;
  stats_.expected_groups_estimated = estimated;
  stats_.estimate_source = groups.source;
  {
    const detail::phase_clock planning(stats_.host.plan);
    make_planner(profile, groups);
  }
  if constexpr (reads_key_range) {
    if (handover_ != nullptr && planner_->direct_range_wanted()) {
      std::optional<exact_key_range> range;
      std::uint32_t box_spans = 0;
      {
        const detail::phase_clock reading(stats_.host.estimate);
        if constexpr (key_policy::columns == 1) {
          range = planner_->direct_domain(read_key_range());
        } else if (const auto box = planner_->direct_box(read_key_box())) {
          range = exact_key_range{box->lowest, static_cast<std::uint64_t>(box->keys()) - 1};
          box_spans = *detail::box_spans_code(*box);
        }
      }
      if (range) {
        handover_->range = range;
        handover_->box_spans = box_spans;
        handover_->found = std::move(found);
        handover_->estimated = estimated;
        handover_->started = started_;
        handover_->stats = stats_;
        handover_->builds_before = builds_before_;
        return;  // group_by runs the query with direct addressing over the range (groupby.hpp)
      }
    }
  }
  const std::uint64_t capacity = planner_->initial_table_capacity();
  interleaved_ = planner_->interleaved(capacity);
  const auto private_keys = planner_->private_group_keys();
  for (std::size_t i = 0; i < private_keys.size(); ++i) private_keys_[i] = static_cast<bits_type>(private_keys[i]);
  for (std::size_t i = 0; i < planner_->hot_keys().keys; ++i) {
    hot_keys_.push_back(static_cast<bits_type>(profile.frequent[i].first));
  }
  // The programs whose kernel limits the plan's choice reads build side by side. The first
  // program also provides INITIALIZE, MERGE and FINALIZE.
  detail::phase_clock programs(stats_.host.programs);
  std::vector<context::program_request> needed;
  for (const auto strategy : planner_->strategies_to_build()) needed.push_back(program_request({strategy}));
  if (planner_->perfect_local() || planner_->range_local()) {
    // WORKGROUPLOCAL's blocks run the perfect or range local table's build: it builds beside
    // the others.
    kernel_variant table{strategy_kind::workgroup_local};
    table.perfect_local = planner_->perfect_local().has_value();
    table.range_local = planner_->range_local().has_value();
    needed.push_back(program_request(table));
  }
  // A serial first variant (one work item a group) is a build of its own; it reads no kernel
  // limit to be chosen, so it builds beside the others too.
  if (const kernel_variant first = planner_->variant_for(planner_->default_params()); first.serial) {
    needed.push_back(program_request(first));
  }
  ctx_.prefetch(needed);
  home_program_ = program({planner_->default_params().strategy});
  programs.stop();
  make_table_and_counters(capacity);
  spill_capacity_ = planner_->spill_capacity(capacity);
  if (spill_capacity_ >= (std::uint64_t{1} << 32)) throw invalid_argument_error("block_bytes is too large");
  stats_.spill_capacity = spill_capacity_;
  spill_ = make_buffers(spill_capacity_, "the spill area");
  if (!on_device_ && !in_place_) make_staging();
}

/// The counters, their pinned host copy and the table: what every query with a table holds.
template <class Bound>
void aggregation_driver<Bound>::make_table_and_counters(std::uint64_t capacity) {
  const detail::phase_clock buffers(stats_.host.buffers);
  // Nothing in the set-up waits for the device: the counters' clear and INITIALIZE precede
  // every AGGREGATE on the in-order compute queue, and their errors and profiled times are
  // collected at the first wait for a block (settle_deferred()).
  meta_ = allocate(detail::meta_words * sizeof(cl_ulong), "the query's counters");
  clear_meta(0, detail::meta_words, "clearing the query's counters");
  // The counters are read back into pinned memory: a non-blocking read into pageable memory
  // may be staged, or done synchronously, by the driver.
  std::tie(readback_, readback_class_) =
      ctx_.pooled_pinned((window_ * detail::meta_words + 1) * sizeof(cl_ulong), "the counters' host copy");
  meta_mirror_ = static_cast<cl_ulong*>(readback_.mapped);
  written_count_ = meta_mirror_ + window_ * detail::meta_words;
  table_ = make_table(capacity);
  table_ready_ = true;
}

/// A query over no rows that absorbs partial aggregates (driver/partials.hpp): its table, sized
/// for the first partial's `groups`, and the programs of its plan.
template <class Bound>
void aggregation_driver<Bound>::setup_for_partials(std::uint64_t groups) {
  group_estimate planned{std::max<std::uint64_t>(groups, 1), estimate_source::hint};
  if constexpr (identity_scheme) planned = {opts_.domain->size, estimate_source::domain};
  stats_.expected_groups = planned.groups;
  stats_.estimate_source = planned.source;
  make_planner({}, planned);
  const std::uint64_t capacity = planner_->initial_table_capacity();
  interleaved_ = planner_->interleaved(capacity);
  {
    const detail::phase_clock programs(stats_.host.programs);
    home_program_ = program({planner_->default_params().strategy});
  }
  make_table_and_counters(capacity);
}

template <class Bound>
void aggregation_driver<Bound>::make_planner(const detail::sample_profile& sample, group_estimate groups) {
  input_profile profile;
  profile.rows = rows_;
  profile.on_device = on_device_;
  profile.expected_groups = groups.groups;
  profile.source = groups.source;
  profile.estimate_error = groups.relative_error;
  profile.sampled = sample.sample_size > 0;
  profile.hottest_key_share = sample.hottest_key_share;
  profile.runs_share = sample.runs_share;
  profile.stepped_share = sample.stepped_share;
  // One key column's span is its box's: a signed range across zero is as dense as its keys.
  profile.key_span = !profile.sampled                ? 0
                     : Bound::key::layout.count <= 1 ? sample.box.keys()
                                                     : double(sample.highest - sample.lowest) + 1;
  profile.key_box = sample.box;
  profile.sample_size = sample.sample_size;
  profile.restartable = restartable_;
  for (const auto& [key, count] : sample.frequent) profile.frequent_counts.push_back(count);
  profile.sample_keys = sample.keys;
  profile.sample_once = sample.once;
  const auto limits = [this](const kernel_variant& variant) { return kernel_limit(variant); };
  planner_.emplace(ctx_.info(), shape_, profile, opts_, limits);
  if (const auto window = planner_->locality_window()) {
    std::vector<bits_type> keys(window->keys());
    read_key_rows(window->pitch_rows, window->width, window->strides, 0, "reading a work group's keys",
                  [&](const std::array<const void*, key_policy::columns>& copies) {
                    for (std::size_t i = 0; i < keys.size(); ++i) keys[i] = key_policy::load_bits(copies.data(), i);
                  });
    profile.window_read = true;
    profile.work_group_keys = detail::bounded_window_keys(std::span<const bits_type>(keys), window->width);
    planner_.emplace(ctx_.info(), shape_, std::move(profile), opts_, limits);
  }
  block_rows_ = planner_->block_rows();
  slice_rows_ = planner_->tuning_block_rows();
  window_ = planner_->window();
  stats_.plan_level = planner_->entry().level;
  stats_.scattered_keys = planner_->scattered_keys();
}

}  // namespace gpuagg
