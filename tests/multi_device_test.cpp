// Several OpenCL devices in one query (multi_device.hpp): exact against the CPU reference on
// every distribution, around block boundaries, with wrong hints, every aggregate, composite and
// narrow keys, both schemes; the same typed errors as one device; a device failing mid-query
// fails the query; a slow device takes fewer blocks. CTest runs this with
// POCL_DEVICES="pthread pthread" (two PoCL devices); with one device, the set names it twice.
#include <array>
#include <atomic>
#include <cstdlib>
#include <chrono>
#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <thread>

#include <gpuagg/multi_device.hpp>

#include "support.hpp"
#include "all_kinds.hpp"

using namespace gpuagg;
using namespace gpuagg_test;

namespace {

/// Two members: devices 0 and 1 where there are two, else device 0 twice.
const device_set& two_devices() {
  static const device_set set = [] {
    const bool two = detail::all_devices().size() >= 2;
    MESSAGE("members: " << std::string(two ? "devices 0 and 1" : "device 0 twice (one device here)"));
    return device_set::from_selectors({"0", two ? "1" : "0"});
  }();
  return set;
}

/// 64 KiB blocks: 8 Ki rows of int64 values, so small inputs span many blocks.
options small_blocks() {
  options opts;
  opts.block_bytes = 64 << 10;
  return opts;
}

template <class R>
void check_stats(const multi_device_stats& stats, std::uint64_t rows, const R& r) {
  std::uint64_t total = 0;
  std::size_t blocks = 0;
  for (const auto& d : stats.devices) {
    total += d.rows;
    blocks += d.blocks;
    CHECK(d.blocks * d.block_rows >= d.rows);  // no block above the driver's size
  }
  CHECK(total == rows);
  if (rows > 0) CHECK(blocks >= 1);
  CHECK(stats.merge_device < stats.devices.size());
  CHECK(stats.devices[stats.merge_device].rows == std::max_element(stats.devices.begin(), stats.devices.end(),
                                                                   [](const auto& a, const auto& b) {
                                                                     return a.rows < b.rows;
                                                                   })->rows);
  CHECK(r.stats.groups == r.size());
}

/// A driver that fails or slows down on request (the factory run_on_devices takes is the seam).
template <class Real>
struct faulty_driver {
  std::unique_ptr<Real> real;
  std::size_t fail_at_block = std::size_t(-1);  ///< throws when asking for this block (0-based)
  std::chrono::milliseconds delay{0};           ///< sleeps this long before each block
  std::size_t asked = 0;

  std::size_t block_rows() const { return real->block_rows(); }
  execution_params default_params() const { return real->default_params(); }
  launch_config initial_config(strategy_kind s) const { return real->initial_config(s); }
  const device_info& device() const { return real->device(); }
  const query_stats& stats() const { return real->stats(); }
  auto export_for_merge() { return real->export_for_merge(); }
  template <class Partial>
  void absorb(const Partial& p) { real->absorb(p); }
  template <class Next>
  void run_blocks(Next&& next, const std::optional<execution_params>& params) {
    real->run_blocks(
        [&] {
          if (asked++ == fail_at_block) throw opencl_error(-5, "CL_OUT_OF_RESOURCES", "an injected device failure");
          std::this_thread::sleep_for(delay);
          return next();
        },
        params);
  }
};

/// Two members drawing from `queue` on a simulated clock (no sleeps: a loaded test machine
/// would stretch them), from one hour past the clock's epoch: each keeps two blocks in flight
/// and asks for its next when its oldest finishes, as a driver does; a block begins when the
/// member's block before it ends and takes `cost(d, rows)` (a duration). Runs until `horizon`
/// past the start or until neither member takes blocks; returns whether each still takes them.
template <class Cost>
std::array<bool, 2> simulate_two_members(detail::block_queue& queue, std::uint64_t limit,
                                         std::chrono::milliseconds horizon, const Cost& cost) {
  using time_point = std::chrono::steady_clock::time_point;
  const auto t0 = time_point{} + std::chrono::hours(1);
  auto clock = t0;
  std::deque<time_point> finishes[2];
  const auto take = [&](std::size_t d) {
    const auto r = queue.next(d, limit, 2, clock);
    if (!r) return false;
    const auto begin = finishes[d].empty() ? clock : std::max(clock, finishes[d].back());
    finishes[d].push_back(begin + cost(d, r->second));
    return true;
  };
  for (std::size_t d : {0u, 1u}) {
    for (int k = 0; k < 2; ++k) REQUIRE(take(d));
  }
  std::array<bool, 2> taking{true, true};
  while (clock < t0 + horizon && (taking[0] || taking[1])) {
    const std::size_t d = !taking[1] || (taking[0] && finishes[0].front() <= finishes[1].front()) ? 0 : 1;
    clock = finishes[d].front();
    finishes[d].pop_front();
    taking[d] = take(d);
  }
  return taking;
}

}  // namespace

TEST_CASE("a block's rows: probes until the device's speed is known, then shrinking with the rows left") {
  using detail::next_block_rows;
  const std::uint64_t limit = std::uint64_t{1} << 22;
  const std::uint64_t floor = detail::min_shared_block_rows;
  const std::uint64_t many = std::uint64_t{1} << 27;
  CHECK(next_block_rows(limit, many, 0, false, true) == limit);        // alone: the driver's own blocks
  CHECK(next_block_rows(limit, many, 0, false, false) == floor);       // speed unknown: a probe
  CHECK(next_block_rows(limit, 100, 0, false, false) == 100);          // never past the end
  CHECK(next_block_rows(limit, many, 0.5, true, false) == limit);      // far from the end
  // Near the end: half of the device's share of what is left, not below the floor.
  CHECK(next_block_rows(limit, std::uint64_t{1} << 22, 0.9, true, false) == std::uint64_t(0.45 * double(1 << 22)));
  CHECK(next_block_rows(limit, std::uint64_t{1} << 22, 0.1, true, false) == floor);
  CHECK(next_block_rows(1000, std::uint64_t{1} << 22, 0.01, true, false) == 1000);  // a floor above the limit is the limit
  // Blocks at most double from one to the next, from the floor up to the limit.
  CHECK(next_block_rows(limit, many, 0.5, true, false, 1.0, floor) == 2 * floor);
  CHECK(next_block_rows(limit, many, 0.5, true, false, 1.0, limit / 2 + 1) == limit);
  CHECK(next_block_rows(limit, many, 0.5, true, false, 1.0, 1) == floor);
  // A slow device whose smallest block would outlast the others' finish of everything left
  // takes none; the fastest always takes one.
  CHECK(next_block_rows(limit, std::uint64_t{1} << 22, 0.01, true, false) == 0);
  CHECK(next_block_rows(limit, 7, 0.01, true, false) == 0);
  CHECK(next_block_rows(limit, 7, 0.9, true, false) == 7);
  CHECK(next_block_rows(limit, 0, 0.9, true, false) == 0);
  // A device far slower than the fastest takes no more blocks however many rows are left (it
  // shares the host with the fast one); at a fifth of its speed it keeps its share.
  CHECK(next_block_rows(limit, many, 0.05, true, false, 0.05) == 0);
  CHECK(next_block_rows(limit, many, 0.05, true, false, 0.2) == std::uint64_t(0.5 * (0.05 * double(many))));
  CHECK(next_block_rows(limit, many, 0.5, true, false, detail::min_relative_speed) == limit);
}

TEST_CASE("the shared queue: a device's speed from its finished blocks, a slow device stops taking blocks") {
  const std::uint64_t rows = std::uint64_t{1} << 30;  // a queue of row ranges: no rows exist
  const std::uint64_t limit = std::uint64_t{1} << 22;
  detail::block_queue queue(rows, 2);
  // Two slots each: the first two requests of each device are probes, nothing finished yet.
  for (std::size_t d : {0u, 1u}) {
    for (int k = 0; k < 2; ++k) CHECK(queue.next(d, limit, 2)->second == detail::min_shared_block_rows);
  }
  // Device 0 finishes blocks quickly and asks often; device 1 asks once, much later.
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  for (int k = 0; k < 40; ++k) {
    const auto r = queue.next(0, limit, 2);
    REQUIRE(r);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // Device 1's first probe finished after 200 ms. A first block carries the device's start, so
  // one finished block does not make its speed known: it takes another probe.
  REQUIRE(queue.next(1, limit, 2));
  CHECK(queue.rows_of(1) == 3 * detail::min_shared_block_rows);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // Its second probe took another 200 ms, where device 0 did 40 blocks in a few: device 1 is
  // far too slow for what is left and takes nothing more, device 0 keeps taking blocks to the end.
  CHECK_FALSE(queue.next(1, limit, 2));
  std::uint64_t blocks = 0;
  while (queue.next(0, limit, 2)) ++blocks;
  CHECK(blocks > 0);
  CHECK(queue.handed_out() == rows);
  CHECK(queue.rows_of(1) == 3 * detail::min_shared_block_rows);

  // Two members as fast as each other (2 ms a block plus 0.1 ms per 2^18 rows: a probe is
  // mostly the fixed cost), the second's first block 60 ms late (its start: first transfers,
  // memory first touched). It keeps taking blocks: its speed counts from its first finished
  // block on, and its probes compare with the other's probes, not with the other's full blocks
  // (on which it would be 0.11 of the other).
  detail::block_queue warming(std::uint64_t{1} << 40, 2);
  const auto warming_taking = simulate_two_members(
      warming, limit, std::chrono::milliseconds(150), [&](std::size_t d, std::uint64_t rows) {
        auto took = std::chrono::microseconds(2000 + rows * 100 / detail::min_shared_block_rows);
        if (d == 1 && warming.blocks_of(1) == 1) took += std::chrono::milliseconds(60);
        return took;
      });
  CHECK(warming_taking[1]);
  CHECK_FALSE(warming.too_slow(1));
  CHECK(warming.rows_of(1) > 4 * detail::min_shared_block_rows);  // larger blocks once measured

  // Speeds compare blocks of like size, not small blocks with full ones: a member with a 0.9 ms
  // fixed cost a block (against the other's 0.1 ms; both 0.15 ns a row) does 0.54 G rows/s on
  // its 2^19-row blocks, 0.09 of the other's full 2^22-row blocks but 0.18 of the other's own
  // 2^19-row blocks (0.15 on probes, 0.48 on full blocks): it keeps taking blocks, growing them.
  detail::block_queue ramp(std::uint64_t{1} << 40, 2);
  const auto ramp_taking = simulate_two_members(
      ramp, limit, std::chrono::milliseconds(200), [](std::size_t d, std::uint64_t rows) {
        return std::chrono::nanoseconds((d == 0 ? 100'000 : 900'000) + rows * 15 / 100);
      });
  CHECK(ramp_taking[1]);
  CHECK_FALSE(ramp.too_slow(1));
  CHECK(ramp.rows_of(1) > 16 * detail::min_shared_block_rows);

  // With rows enough for both, a member far slower than the other stops after its probes; the
  // fast member then takes every remaining row.
  detail::block_queue long_queue(std::uint64_t{1} << 40, 2);
  const auto start = std::chrono::steady_clock::time_point{} + std::chrono::hours(1) + std::chrono::seconds(1);
  for (std::size_t d : {0u, 1u}) {
    for (int k = 0; k < 2; ++k) REQUIRE(long_queue.next(d, limit, 2, start));
  }
  // Device 1's first probe finished after 100 ms: 2^18 rows.
  REQUIRE(long_queue.next(1, limit, 2, start + std::chrono::milliseconds(100)));
  // Device 0 finishes 2^18-row probes, then full blocks, 0.1 ms apart.
  for (int k = 0; k < 40; ++k) {
    REQUIRE(long_queue.next(0, limit, 2, start + std::chrono::milliseconds(100) + std::chrono::microseconds(100 * (k + 1))));
  }
  CHECK_FALSE(long_queue.next(1, limit, 2, start + std::chrono::milliseconds(190)));
  CHECK(long_queue.next(0, limit, 2, start + std::chrono::milliseconds(191)));
}

TEST_CASE("the shared queue: the last member taking blocks takes its full blocks, no probes") {
  const std::uint64_t rows = std::uint64_t{1} << 30;
  const std::uint64_t limit = std::uint64_t{1} << 22;
  // The second member sits the query out: the first runs as alone from its first block.
  detail::block_queue queue(rows, 2);
  queue.sit_out(1);
  CHECK(queue.next(0, limit, 2)->second == limit);
  CHECK(queue.next(0, limit, 2)->second == limit);
  // The member that sat out gets no block even when it asks (it is no last member taking them).
  CHECK_FALSE(queue.next(1, limit, 2));
  CHECK(queue.next(0, limit, 2)->second == limit);
  // Both taking blocks: probes first.
  detail::block_queue both(rows, 2);
  CHECK(both.next(0, limit, 2)->second == detail::min_shared_block_rows);
}

TEST_CASE("the shared queue: a member of the fastest member's own model is found too slow only on a full block") {
  // Member 1 pays a fixed 1.2 ms a block (host memory pinned in member 0's context, say) where
  // member 0 pays 0.1 ms; rows cost 0.15 ns on both, or 3 ns on member 1 (`slow_rows`). On
  // probes member 1 runs at 0.11 of member 0, below min_relative_speed; on its full blocks at
  // 0.45 (or 0.05 with slow rows).
  const std::uint64_t limit = std::uint64_t{1} << 22;
  const auto run = [&](std::vector<std::size_t> models, bool slow_rows) {
    detail::block_queue queue(std::uint64_t{1} << 40, 2, std::move(models));
    const auto taking = simulate_two_members(
        queue, limit, std::chrono::milliseconds(300), [slow_rows](std::size_t d, std::uint64_t rows) {
          const std::uint64_t fixed_ns = d == 0 ? 100'000 : 1'200'000;
          const std::uint64_t row_ps = d == 1 && slow_rows ? 3000 : 150;
          return std::chrono::nanoseconds(fixed_ns + rows * row_ps / 1000);
        });
    return std::tuple{taking[1], queue.too_slow(1), queue.rows_of(1)};
  };
  SUBCASE("other models: stopped on its probes") {
    const auto [taking, too_slow, rows] = run({0, 1}, false);
    CHECK_FALSE(taking);
    CHECK(too_slow);
    CHECK(rows < 8 * detail::min_shared_block_rows);
  }
  SUBCASE("one model: its blocks grow to full size, where it is fast enough to keep taking them") {
    const auto [taking, too_slow, rows] = run({0, 0}, false);
    CHECK(taking);
    CHECK_FALSE(too_slow);
    CHECK(rows > 8 * limit);
  }
  SUBCASE("one model, slow on full blocks too: found too slow after one") {
    const auto [taking, too_slow, rows] = run({0, 0}, true);
    CHECK_FALSE(taking);
    CHECK(too_slow);
    CHECK(rows >= limit);           // it ran a block of its full size
    CHECK(rows < 6 * limit);        // and stopped soon after
  }
}

TEST_CASE("the partials merge on the member that aggregated the most rows") {
  CHECK(detail::merge_site({10, 30, 20}) == 1);
  CHECK(detail::merge_site({5, 5}) == 0);
  CHECK(detail::merge_site({0}) == 0);
}

/// GPUAGG_MERGE set to `value` (unset for nullptr) while it lives.
class merge_form_env {
 public:
  explicit merge_form_env(const char* value) {
    if (const char* was = std::getenv("GPUAGG_MERGE")) before_ = was;
    if (value != nullptr) {
      setenv("GPUAGG_MERGE", value, 1);
    } else {
      unsetenv("GPUAGG_MERGE");
    }
  }
  ~merge_form_env() {
    if (before_) {
      setenv("GPUAGG_MERGE", before_->c_str(), 1);
    } else {
      unsetenv("GPUAGG_MERGE");
    }
  }

 private:
  std::optional<std::string> before_;
};

TEST_CASE("the merge's form: by owner for large partials of GPUs, at one site otherwise; GPUAGG_MERGE overrides") {
  {
    const merge_form_env unset(nullptr);
    CHECK(detail::choose_merge_form(2, false, detail::by_owner_min_groups) == detail::merge_form::by_owner);
    CHECK(detail::choose_merge_form(3, false, std::uint64_t{1} << 24) == detail::merge_form::by_owner);
    CHECK(detail::choose_merge_form(2, false, std::uint64_t{1} << 20) == detail::merge_form::one_site);
    CHECK(detail::choose_merge_form(2, false, detail::by_owner_min_groups - 1) == detail::merge_form::one_site);
    CHECK(detail::choose_merge_form(2, true, std::uint64_t{1} << 24) == detail::merge_form::one_site);  // a CPU member
    CHECK(detail::choose_merge_form(1, false, std::uint64_t{1} << 24) == detail::merge_form::one_site);
  }
  {
    const merge_form_env forced("by-owner");
    CHECK(detail::choose_merge_form(2, true, 1) == detail::merge_form::by_owner);
    CHECK(detail::choose_merge_form(1, false, 1) == detail::merge_form::one_site);  // nobody to merge with
  }
  {
    const merge_form_env forced("one-site");
    CHECK(detail::choose_merge_form(2, false, std::uint64_t{1} << 24) == detail::merge_form::one_site);
  }
}

TEST_CASE("owner_of: every owner gets its share of the groups, and MPI's ranks agree with it") {
  for (const std::uint32_t owners : {2u, 3u, 5u}) {
    CAPTURE(owners);
    std::vector<std::uint64_t> count(owners);
    const std::uint64_t n = 300'000;
    for (std::uint64_t k = 0; k < n; ++k) ++count[detail::owner_of(k, owners)];  // dense keys, the hard case
    for (const auto c : count) CHECK(std::abs(double(c) / double(n) * owners - 1.0) < 0.02);
    for (std::uint64_t k : {std::uint64_t{0}, std::uint64_t{0xFFFFFFFF}, ~std::uint64_t{0}}) {
      CHECK(detail::owner_of(k, owners) < owners);
      CHECK(detail::owner_of(k, 1) == 0);
    }
  }
}

/// Where each owner's groups lie in a by-owner result: owner i's are rows [offset_i,
/// offset_i + owned_i), each of whose table words the host's owner_of gives to i, which checks
/// that the kernels' owner function is the host's.
/// (GPUAGG_MERGE=by-owner: every query with rows on two members merges so; a member the shared
/// queue stopped early may have none.)
template <class KeyPolicy, class R>
void check_owned_rows(const multi_device_stats& stats, const R& r) {
  std::uint64_t offset = 0;
  std::vector<std::size_t> owners;
  for (std::size_t i = 0; i < stats.devices.size(); ++i) {
    if (stats.devices[i].rows > 0) owners.push_back(i);
  }
  CHECK(stats.by_owner == (owners.size() >= 2));
  if (!stats.by_owner) return;
  for (std::size_t o = 0; o < owners.size(); ++o) {
    const auto owned = stats.devices[owners[o]].owned_groups;
    for (std::uint64_t row = offset; row < offset + owned; ++row) {
      const auto word = std::uint64_t(KeyPolicy::to_bits(r.keys[row]));
      REQUIRE(detail::owner_of(word, std::uint32_t(owners.size())) == o);
    }
    offset += owned;
  }
  CHECK(offset == r.size());
}

TEST_CASE("merged by owner: each member finalizes the groups it owns into its rows; exact on every distribution") {
  const merge_form_env forced("by-owner");
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto& devices = two_devices();
  devices.reset_participation();  // an earlier test's too-slow verdict would leave one member
  // Extreme key values too: 0 and the largest word (EMPTY_KEY's bits, the reserved bucket).
  auto dictionary = key_dictionary<std::uint32_t>(6000, rng);
  dictionary.push_back(0);
  dictionary.push_back(0xFFFFFFFFu);
  for (const auto d : {distribution::uniform, distribution::zipf, distribution::heavy_hitter,
                       distribution::sorted_runs}) {
    const std::string distribution_shown = name(d);
    CAPTURE(distribution_shown);
    for (const std::size_t rows : {std::size_t{1}, std::size_t{40'000}, std::size_t{150'001}}) {
      CAPTURE(rows);
      auto keys = draw_keys(dictionary, rows, d, rng);
      if (rows > 2) keys[rows / 2] = 0xFFFFFFFFu;
      const auto vals = random_values<std::int64_t>(rows, rng);
      const auto r = group_by(devices, keys, vals, all_kinds, small_blocks());
      check_equal(r.result, all_kinds_reference(keys, vals));
      check_stats(r.stats, rows, r.result);
      check_owned_rows<single_key<std::uint32_t>>(r.stats, r.result);
    }
  }
}

TEST_CASE("merged by owner: composite keys, direct addressing, split input") {
  const merge_form_env forced("by-owner");
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto& devices = two_devices();
  devices.reset_participation();  // an earlier test's too-slow verdict would leave one member
  const std::size_t rows = 50'000;
  SUBCASE("composite keys (uint16, int32) with extreme values") {
    std::vector<std::uint16_t> ka(rows);
    std::vector<std::int32_t> kb(rows);
    std::vector<std::tuple<std::uint16_t, std::int32_t>> tuples(rows);
    for (std::size_t i = 0; i < rows; ++i) {
      ka[i] = static_cast<std::uint16_t>(rng() % 3 == 0 ? 0xFFFF : rng() % 60);
      kb[i] = rng() % 4 == 0 ? std::numeric_limits<std::int32_t>::min() : static_cast<std::int32_t>(rng() % 50) - 25;
      tuples[i] = {ka[i], kb[i]};
    }
    const auto v = random_values<std::int64_t>(rows, rng);
    const auto q = select(sum(col<0>), count(), min(col<0>), avg(col<0>));
    using bound = bound_query<packed_key<std::uint16_t, std::int32_t>, std::remove_const_t<decltype(q)>, std::int64_t>;
    const auto r = group_by(devices, keys(ka, kb), v, q, small_blocks());
    const auto expected = reference_group_by<bound>(std::span<const std::tuple<std::uint16_t, std::int32_t>>(tuples),
                                                    std::span<const std::int64_t>(v));
    check_owned_rows<packed_key<std::uint16_t, std::int32_t>>(r.stats, r.result);
    check_same(r.result, expected);
  }
  SUBCASE("int16 keys, direct addressing") {
    const auto k = draw_keys(key_dictionary<std::int16_t>(500, rng, false, -32768, 32767), rows,
                             distribution::uniform, rng);
    const auto v = random_values<std::int32_t>(rows, rng);
    const auto q = select<direct_addressing>(sum(col<0>), count(), max(col<0>));
    using bound = bound_query<single_key<std::int16_t>, std::remove_const_t<decltype(q)>, std::int32_t>;
    options opts = small_blocks();
    opts.domain = {-32768, 32767};
    const auto r = group_by(devices, k, v, q, opts);
    check_equal(r.result, reference_group_by<bound>(std::span<const std::int16_t>(k), std::span<const std::int32_t>(v)));
    check_owned_rows<single_key<std::int16_t>>(r.stats, r.result);
  }
  SUBCASE("split input: disjoint key ranges per part, and one empty part") {
    const auto dictionary = key_dictionary<std::uint32_t>(8000, rng);
    const auto all = draw_keys(dictionary, 2 * rows, distribution::uniform, rng);
    std::vector<std::uint32_t> k0, k1;
    for (const auto key : all) (key % 2 == 0 ? k0 : k1).push_back(key);  // no group in both parts
    const auto v0 = random_values<std::int64_t>(k0.size(), rng), v1 = random_values<std::int64_t>(k1.size(), rng);
    std::vector<std::uint32_t> keys_all(k0);
    keys_all.insert(keys_all.end(), k1.begin(), k1.end());
    std::vector<std::int64_t> vals_all(v0);
    vals_all.insert(vals_all.end(), v1.begin(), v1.end());
    const std::vector<std::span<const std::uint32_t>> kp{k0, k1};
    const std::vector<std::span<const std::int64_t>> vp{v0, v1};
    const auto r = group_by_parts(devices, kp, vp, all_kinds, small_blocks());
    check_equal(r.result, all_kinds_reference(keys_all, vals_all));
    check_owned_rows<single_key<std::uint32_t>>(r.stats, r.result);
    const std::vector<std::span<const std::uint32_t>> one_empty{k0, {}};
    const std::vector<std::span<const std::int64_t>> one_empty_v{v0, {}};
    const auto e = group_by_parts(devices, one_empty, one_empty_v, all_kinds, small_blocks());
    check_equal(e.result, all_kinds_reference(k0, v0));
    CHECK_FALSE(e.stats.by_owner);  // one member with rows: nobody to merge with
  }
}

TEST_CASE("a merge grows the table for the groups the partials add, not for every entry they bring") {
  const merge_form_env forced("one-site");
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto& devices = two_devices();
  const std::size_t groups = 20'000;
  const auto dictionary = key_dictionary<std::uint32_t>(5 * groups, rng);
  const std::vector<std::uint32_t> first_half(dictionary.begin(), dictionary.begin() + groups);
  const std::vector<std::uint32_t> second_half(dictionary.begin() + groups, dictionary.end());
  options opts = small_blocks();
  // Each member's table: 2^16 buckets, room for 32,768 groups (on a GPU, scattered keys get
  // twice that: 65,536 groups).
  opts.expected_groups = groups;
  SUBCASE("partials of the same groups: no growth") {
    const auto k0 = draw_keys(first_half, 120'000, distribution::uniform, rng);
    const auto k1 = draw_keys(first_half, 120'000, distribution::uniform, rng);
    const auto v0 = random_values<std::int64_t>(k0.size(), rng), v1 = random_values<std::int64_t>(k1.size(), rng);
    const std::vector<std::span<const std::uint32_t>> kp{k0, k1};
    const std::vector<std::span<const std::int64_t>> vp{v0, v1};
    const auto r = group_by_parts(devices, kp, vp, all_kinds, opts);
    std::vector<std::uint32_t> ka(k0);
    ka.insert(ka.end(), k1.begin(), k1.end());
    std::vector<std::int64_t> va(v0);
    va.insert(va.end(), v1.begin(), v1.end());
    check_equal(r.result, all_kinds_reference(ka, va));
    REQUIRE(r.result.size() > groups * 99 / 100);  // all but the few keys no draw picked
    REQUIRE(r.result.size() <= groups);
    // Two partials of about 20,000 entries each would pass the load factor; the 20,000 groups
    // they make do not.
    CHECK(r.stats.devices[r.stats.merge_device].stats.table_growths == 0);
  }
  SUBCASE("partials of disjoint groups: the table grows, and nothing is lost") {
    const auto k0 = draw_keys(first_half, 120'000, distribution::uniform, rng);
    const auto k1 = draw_keys(second_half, 120'000, distribution::uniform, rng);
    const auto v0 = random_values<std::int64_t>(k0.size(), rng), v1 = random_values<std::int64_t>(k1.size(), rng);
    const std::vector<std::span<const std::uint32_t>> kp{k0, k1};
    const std::vector<std::span<const std::int64_t>> vp{v0, v1};
    const auto r = group_by_parts(devices, kp, vp, all_kinds, opts);
    std::vector<std::uint32_t> ka(k0);
    ka.insert(ka.end(), k1.begin(), k1.end());
    std::vector<std::int64_t> va(v0);
    va.insert(va.end(), v1.begin(), v1.end());
    check_equal(r.result, all_kinds_reference(ka, va));
    // 120,000 draws of 80,000 keys make about 62,000 groups beside the first part's 20,000:
    // more than either table holds at the load factor.
    REQUIRE(r.result.size() > 65'536);
    CHECK(r.stats.devices[r.stats.merge_device].stats.table_growths >= 1);
  }
}

// Key types: 32-bit words here, 64-bit ones in the composite keys below; the partials carry table
// words whatever the key type (every query shape costs PoCL a JIT build per device).
TEST_CASE_TEMPLATE("exact on every distribution and around block boundaries", Key, std::uint32_t) {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto& devices = two_devices();
  const options opts = small_blocks();
  const std::size_t block = (64 << 10) / sizeof(std::int64_t);
  const auto dictionary = key_dictionary<Key>(3000, rng);
  for (const auto d : {distribution::uniform, distribution::zipf, distribution::heavy_hitter,
                       distribution::sorted_runs}) {
    const std::string distribution_shown = name(d);
    CAPTURE(distribution_shown);
    for (const std::size_t rows : {std::size_t{0}, std::size_t{1}, block - 1, block, block + 1, 9 * block + 3}) {
      CAPTURE(rows);
      const auto keys = draw_keys(dictionary, rows, d, rng);
      const auto vals = random_values<std::int64_t>(rows, rng);
      const auto r = group_by(devices, keys, vals, all_kinds, opts);
      check_equal(r.result, all_kinds_reference(keys, vals));
      check_stats(r.stats, rows, r.result);
      // A member an earlier query found too slow sits out (participation.hpp): it has no driver,
      // so no plan and no rows; the members that take part run the options' blocks.
      for (const auto& share : r.stats.devices) {
        if (share.sat_out) {
          CHECK(share.rows == 0);
          CHECK(share.blocks == 0);
        } else {
          CHECK(share.block_rows == block);
        }
      }
      CHECK(std::any_of(r.stats.devices.begin(), r.stats.devices.end(), [](const auto& s) { return !s.sat_out; }));
    }
  }
}

TEST_CASE("wrong group hints cost time, never groups") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto dictionary = key_dictionary<std::uint32_t>(20'000, rng);
  const auto keys = draw_keys(dictionary, 120'000, distribution::uniform, rng);
  const auto vals = random_values<std::int64_t>(keys.size(), rng);
  const auto expected = all_kinds_reference(keys, vals);
  // With every result sized early (the staged suite), only the right hint's is used: the
  // merged result's columns were sized from the first member's plan (runtime/readback.hpp).
  const char* staging = std::getenv("GPUAGG_HOST_STAGING");
  const bool presizing = staging != nullptr && std::string(staging) == "always";
  for (const std::uint64_t hint : {std::uint64_t{1}, std::uint64_t{20'000}, std::uint64_t{1} << 20}) {
    CAPTURE(hint);
    options opts = small_blocks();
    opts.expected_groups = hint;
    const auto r = group_by(two_devices(), keys, vals, all_kinds, opts);
    check_equal(r.result, expected);
    check_stats(r.stats, keys.size(), r.result);
    if (presizing) CHECK(r.result.stats.result_presized == (hint == 20'000));
  }
}

TEST_CASE("a set of one device gives the single-device result") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto dictionary = key_dictionary<std::uint32_t>(5000, rng);
  const auto keys = draw_keys(dictionary, 100'000, distribution::uniform, rng);
  const auto vals = random_values<std::int64_t>(keys.size(), rng);
  const device_set one(std::vector<context*>{&ctx()});
  auto multi = group_by(one, keys, vals, all_kinds, small_blocks()).result;
  auto single = group_by(keys, vals, all_kinds, small_blocks());
  sort_by_key(single);
  check_equal(multi, single);
  check_equal(multi, all_kinds_reference(keys, vals));
}

TEST_CASE("composite and narrow keys, both schemes, a fixed strategy") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto& devices = two_devices();
  const std::size_t rows = 60'000;
  SUBCASE("composite keys (uint16, int32), murmur3 and quadratic probing") {
    std::vector<std::uint16_t> ka(rows);
    std::vector<std::int32_t> kb(rows);
    std::vector<std::tuple<std::uint16_t, std::int32_t>> tuples(rows);
    for (std::size_t i = 0; i < rows; ++i) {
      ka[i] = static_cast<std::uint16_t>(rng() % 3 == 0 ? 0xFFFF : rng() % 50);
      kb[i] = static_cast<std::int32_t>(rng() % 3 == 0 ? -1 : static_cast<std::int32_t>(rng() % 40) - 20);
      tuples[i] = {ka[i], kb[i]};
    }
    const auto v = random_values<std::int64_t>(rows, rng);
    const auto q = select<hashing<murmur3_finalizer, quadratic_probing>>(sum(col<0>), count(), min(col<0>),
                                                                         max(col<0>), avg(col<0>));
    using bound = bound_query<packed_key<std::uint16_t, std::int32_t>, std::remove_const_t<decltype(q)>, std::int64_t>;
    const auto r = group_by(devices, keys(ka, kb), v, q, small_blocks());
    const auto expected = reference_group_by<bound>(std::span<const std::tuple<std::uint16_t, std::int32_t>>(tuples),
                                                    std::span<const std::int64_t>(v));
    auto got = r.result;
    sort_by_key(got);
    REQUIRE(got.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      REQUIRE(got.keys[i] == expected.keys[i]);
      REQUIRE(std::get<0>(got.columns)[i] == std::get<0>(expected.columns)[i]);
      REQUIRE(std::get<1>(got.columns)[i] == std::get<1>(expected.columns)[i]);
      REQUIRE(std::get<2>(got.columns)[i] == std::get<2>(expected.columns)[i]);
      REQUIRE(std::get<3>(got.columns)[i] == std::get<3>(expected.columns)[i]);
      REQUIRE(same_value(std::get<4>(got.columns)[i], std::get<4>(expected.columns)[i]));
    }
  }
  SUBCASE("int16 keys, direct addressing, a fixed strategy for every device") {
    const auto keys = draw_keys(key_dictionary<std::int16_t>(400, rng, false, -300, 299), rows,
                                distribution::heavy_hitter, rng);
    const auto v = random_values<std::int32_t>(rows, rng);
    const auto q = select<direct_addressing>(sum(col<0>), count(), max(col<0>));
    using bound = bound_query<single_key<std::int16_t>, std::remove_const_t<decltype(q)>, std::int32_t>;
    options opts = small_blocks();
    opts.domain = {-300, 299};
    for (const auto strategy : {strategy_kind::independent}) {
      CAPTURE(strategy);
      opts.strategy = strategy;
      const auto r = group_by(devices, keys, v, q, opts);
      check_equal(r.result, reference_group_by<bound>(std::span<const std::int16_t>(keys),
                                                      std::span<const std::int32_t>(v)));
      for (const auto& share : r.stats.devices) {
        for (const auto& b : share.stats.blocks) CHECK(b.params.strategy == strategy);
      }
    }
  }
}

TEST_CASE("the same typed errors as one device") {
  const auto& devices = two_devices();
  const std::vector<std::uint32_t> keys{1, 2, 3, 4};
  const std::vector<std::int64_t> vals{1, 2, 3};
  CHECK_THROWS_AS(group_by(devices, keys, vals, all_kinds), invalid_argument_error);  // lengths differ
  const std::vector<std::int64_t> four{1, 2, 3, 4};
  // A set with no member, new or moved from: the typed error, not a read of its record.
  CHECK_THROWS_AS(group_by(device_set{}, keys, four, all_kinds), invalid_argument_error);
  device_set moved = device_set::from_selectors({"0"});
  const device_set taken = std::move(moved);
  CHECK_THROWS_AS(group_by(moved, keys, four, all_kinds), invalid_argument_error);  // NOLINT(bugprone-use-after-move)
  CHECK(group_by(taken, keys, four, all_kinds).result.size() == 4);
  // The direct-addressing query of the test above (one JIT build less on PoCL).
  const std::vector<std::int16_t> small_keys{1, 2, 3, 4};
  const std::vector<std::int32_t> small_vals{1, 2, 3, 4};
  const auto dense = select<direct_addressing>(sum(col<0>), count(), max(col<0>));
  options domain;
  domain.domain = {0, 2};  // key 3 and 4 lie outside
  CHECK_THROWS_AS(group_by(devices, small_keys, small_vals, dense, domain), key_out_of_domain_error);
  domain.domain = {0, 70'000};  // not an int16 domain
  CHECK_THROWS_AS(group_by(devices, small_keys, small_vals, dense, domain), invalid_argument_error);
  options with_ctx;
  with_ctx.ctx = &ctx();
  CHECK_THROWS_AS(group_by(devices, keys, four, all_kinds, with_ctx), invalid_argument_error);
  CHECK_THROWS_AS(group_by(device_set{}, keys, four, all_kinds), invalid_argument_error);
  CHECK_THROWS_AS(device_set::from_selectors({"0", "no such device anywhere"}), no_device_error);
  CHECK_THROWS_AS(device_set::from_list("0,99999"), no_device_error);
  // Device columns live in one context: not input of a set.
  const cl::Buffer kb = ctx().buffer(4 * sizeof(std::uint32_t), "keys");
  const cl::Buffer vb = ctx().buffer(4 * sizeof(std::int64_t), "values");
  CHECK_THROWS_AS(group_by(devices, device_column<std::uint32_t>(kb, 4), device_column<std::int64_t>(vb, 4), all_kinds),
                  invalid_argument_error);
}

TEST_CASE("a device that fails mid-query fails the query, with its typed error, and nothing breaks") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto keys = draw_keys(key_dictionary<std::uint32_t>(2000, rng), 200'000, distribution::uniform, rng);
  const auto vals = random_values<std::int64_t>(keys.size(), rng);
  using real = std::remove_reference_t<decltype(*make_driver(keys, vals, all_kinds))>;
  const auto& devices = two_devices();
  const auto run = [&](std::size_t failing_member, std::size_t fail_at, bool fail_in_setup) {
    return detail::run_on_devices(
        devices, detail::column_list(keys, detail::as_value_tuple(vals)), small_blocks(),
        [&](const options& mine) {
          auto d = std::make_unique<faulty_driver<real>>();
          const bool failing = mine.ctx == &devices[failing_member];
          if (failing && fail_in_setup) throw out_of_memory_error(1, 0, "an injected set-up failure");
          d->real = make_driver(keys, vals, all_kinds, mine);
          if (failing) {
            d->fail_at_block = fail_at;
          } else {
            // The other member slow, so that the failing one asks for most of the 25 blocks and
            // reaches the one it fails at, whichever member sets up first.
            d->delay = std::chrono::milliseconds(20);
          }
          return d;
        },
        [](auto& d) {
          return finalize_all_kinds(*d.real);
        });
  };
  for (const std::size_t failing : {std::size_t{0}, std::size_t{1}}) {
    CAPTURE(failing);
    CHECK_THROWS_AS(run(failing, 3, false), opencl_error);
    CHECK_THROWS_AS(run(failing, 0, false), opencl_error);
    CHECK_THROWS_AS(run(failing, 0, true), out_of_memory_error);
  }
  // The seam itself returns exact results when nothing fails, and the contexts still work.
  const auto r = run(0, std::size_t(-1), false);
  check_equal(r.result, all_kinds_reference(keys, vals));
}

TEST_CASE("a slow device takes fewer blocks; the result stays exact") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto keys = draw_keys(key_dictionary<std::uint32_t>(1000, rng), 400'000, distribution::uniform, rng);
  const auto vals = random_values<std::int64_t>(keys.size(), rng);
  using real = std::remove_reference_t<decltype(*make_driver(keys, vals, all_kinds))>;
  const auto& devices = two_devices();
  for (const std::size_t slow : {std::size_t{0}, std::size_t{1}}) {
    CAPTURE(slow);
    const auto r = detail::run_on_devices(
        devices, detail::column_list(keys, detail::as_value_tuple(vals)), small_blocks(),
        [&](const options& mine) {
          auto d = std::make_unique<faulty_driver<real>>();
          d->real = make_driver(keys, vals, all_kinds, mine);
          if (mine.ctx == &devices[slow]) d->delay = std::chrono::milliseconds(25);
          return d;
        },
        [](auto& d) {
          return finalize_all_kinds(*d.real);
        });
    check_equal(r.result, all_kinds_reference(keys, vals));
    check_stats(r.stats, keys.size(), r.result);
    const auto& fast_share = r.stats.devices[1 - slow];
    const auto& slow_share = r.stats.devices[slow];
    MESSAGE("slow member: " << slow_share.blocks << " blocks, the other " << fast_share.blocks);
    CHECK(slow_share.rows < fast_share.rows);
    CHECK(r.stats.merge_device == 1 - slow);
  }
}

TEST_CASE("host input shared by the members: one key sample and one group estimate serve them all") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto keys = draw_keys(key_dictionary<std::uint32_t>(20'000, rng), 300'000, distribution::uniform, rng);
  const auto vals = random_values<std::int64_t>(keys.size(), rng);
  const auto& devices = two_devices();
  for (const bool hinted : {false, true}) {
    CAPTURE(hinted);
    options opts = small_blocks();
    if (hinted) opts.expected_groups = 20'000;
    detail::shared_estimate estimate;
    const auto r = detail::run_on_devices(
        devices, detail::column_list(keys, detail::as_value_tuple(vals)), opts,
        [&](const options& mine) {
          return detail::make_driver<std::remove_const_t<decltype(all_kinds)>>(keys, vals, mine, false, &estimate);
        },
        [](auto& d) { return finalize_all_kinds(d); });
    check_equal(r.result, all_kinds_reference(keys, vals));
    CHECK(estimate.computed() == 1);  // the other member waited for it
    REQUIRE(r.stats.devices.size() == 2);
    const auto& first = r.stats.devices[0].stats;
    const auto& second = r.stats.devices[1].stats;
    CHECK(first.expected_groups == second.expected_groups);
    CHECK(first.estimate_source == second.estimate_source);
    CHECK(first.estimate_source == (hinted ? estimate_source::hint : first.estimate_source));
    CHECK(first.expected_groups_estimated == !hinted);
    if (!hinted) {
      // Within 2x of the true groups, as one driver's own estimate is (estimate_test).
      CHECK(double(first.expected_groups) >= 0.5 * 20'000);
      CHECK(double(first.expected_groups) <= 2.0 * 20'000);
    }
  }
  // A member whose set-up fails before the estimate is made: the other computes its own, and
  // the query fails with the first error.
  detail::shared_estimate failing;
  CHECK_THROWS_AS(failing.get([]() -> detail::input_estimate { throw out_of_memory_error(1, 0, "a test"); }),
                  out_of_memory_error);
  const auto own = failing.get([] {
    detail::input_estimate e;
    e.estimate.groups = 7;
    return e;
  });
  CHECK(own.estimate.groups == 7);
  CHECK(failing.computed() == 1);
}

TEST_CASE("participation: a member found too slow twice in a row sits out the next queries, then takes part again") {
  detail::participation_record record;
  const std::vector<bool> all{true, true, true};
  const std::vector<bool> middle_out{true, false, true};
  CHECK(record.take_part(3) == all);  // nothing measured yet
  record.record(all, {false, true, false});
  CHECK(record.take_part(3) == all);  // once is not enough (a first query is not a speed)
  record.record(all, {false, false, false});
  record.record(all, {false, true, false});
  CHECK(record.take_part(3) == all);  // not in a row
  record.record(all, {false, true, false});
  for (unsigned q = 0; q < detail::sit_out_queries; ++q) {
    CAPTURE(q);
    CHECK(record.take_part(3) == middle_out);
    record.record(middle_out, {false, false, false});  // a query it was not in says nothing of it
  }
  CHECK(record.take_part(3) == all);  // the retry
  record.record(all, {false, true, false});
  CHECK(record.take_part(3) == middle_out);  // still too slow: out again at once
  record.reset();
  CHECK(record.take_part(3) == all);
  // Found fast at the retry: it stays.
  record.record(all, {true, false, false});
  record.record(all, {true, false, false});
  CHECK(record.take_part(3) == std::vector<bool>{false, true, true});
  for (unsigned q = 1; q < detail::sit_out_queries; ++q) record.take_part(3);
  CHECK(record.take_part(3) == all);
  record.record(all, {false, false, false});
  CHECK(record.take_part(3) == all);
  // Never an empty set, even from a record that finds every member too slow.
  record.record(all, {true, true, true});
  record.record(all, {true, true, true});
  CHECK(record.take_part(3) == all);
  record.reset();
  CHECK(record.take_part(3) == all);

  // The verdict after a query: stopped by the queue, or rows over run time under the threshold
  // of the fastest; a member with no rows is not judged.
  using detail::found_too_slow;
  CHECK(found_too_slow({1000, 10}, {1.0, 1.0}, {false, false}) == std::vector<bool>{false, true});
  CHECK(found_too_slow({1000, 200}, {1.0, 1.0}, {false, false}) == std::vector<bool>{false, false});
  CHECK(found_too_slow({1000, 0}, {1.0, 0.0}, {false, false}) == std::vector<bool>{false, false});
  CHECK(found_too_slow({1000, 500}, {1.0, 1.0}, {false, true}) == std::vector<bool>{false, true});
  CHECK(found_too_slow({500, 500}, {1.0, 1.0}, {false, false}) == std::vector<bool>{false, false});
}

TEST_CASE("a member that sits out: no driver, no rows, nothing merged; the result stays exact") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto keys = draw_keys(key_dictionary<std::uint32_t>(3000, rng), 150'000, distribution::zipf, rng);
  const auto vals = random_values<std::int64_t>(keys.size(), rng);
  const auto expected = all_kinds_reference(keys, vals);
  const auto& devices = two_devices();
  for (const std::size_t out : {std::size_t{0}, std::size_t{1}}) {
    CAPTURE(out);
    std::vector<bool> take_part{true, true};
    take_part[out] = false;
    std::atomic<int> built{0};
    const auto r = detail::run_on_devices(
        devices, detail::column_list(keys, detail::as_value_tuple(vals)), small_blocks(),
        [&](const options& mine) {
          ++built;
          return make_driver(keys, vals, all_kinds, mine);
        },
        [](auto& d) { return finalize_all_kinds(d); },
        take_part);
    check_equal(r.result, expected);
    check_stats(r.stats, keys.size(), r.result);
    CHECK(built == 1);
    CHECK(r.stats.devices[out].sat_out);
    CHECK(r.stats.devices[out].rows == 0);
    CHECK(r.stats.devices[out].blocks == 0);
    CHECK(r.stats.merged_entries == 0);
    CHECK(r.stats.merge_device == 1 - out);
    CHECK_FALSE(r.stats.devices[1 - out].sat_out);
  }
  // Through group_by over the set: the record decides, and the statistics say who sat out.
  // The record starts clean: earlier queries of this process (slow ones under a sanitizer) may
  // have left either member sitting out.
  devices.reset_participation();
  devices.participation().record({true, true}, {false, true});
  devices.participation().record({true, true}, {false, true});
  const auto r = group_by(devices, keys, vals, all_kinds, small_blocks());
  check_equal(r.result, expected);
  CHECK(r.stats.devices[1].sat_out);
  CHECK(r.stats.devices[0].rows == keys.size());
  devices.reset_participation();
  const auto again = group_by(devices, keys, vals, all_kinds, small_blocks());
  check_equal(again.result, expected);
  CHECK_FALSE(again.stats.devices[1].sat_out);
  devices.reset_participation();
}

TEST_CASE("input split across the members: device parts in each member's memory, host parts, uneven parts") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  const auto& devices = two_devices();
  const auto dictionary = key_dictionary<std::uint32_t>(5000, rng);
  const std::size_t block = (64 << 10) / sizeof(std::int64_t);
  for (const auto d : {distribution::uniform, distribution::heavy_hitter, distribution::sorted_runs}) {
    const std::string distribution_shown = name(d);
    CAPTURE(distribution_shown);
    // Part sizes: even, uneven, one part empty, both around a block boundary.
    for (const auto& [rows0, rows1] : {std::pair<std::size_t, std::size_t>{60'000, 60'000}, {3 * block + 1, 7},
                                       {0, 50'000}, {block, block - 1}}) {
      CAPTURE(rows0);
      CAPTURE(rows1);
      const auto keys = draw_keys(dictionary, rows0 + rows1, d, rng);
      const auto vals = random_values<std::int64_t>(keys.size(), rng);
      const auto expected = all_kinds_reference(keys, vals);
      const std::vector<std::uint32_t> k0(keys.begin(), keys.begin() + rows0), k1(keys.begin() + rows0, keys.end());
      const std::vector<std::int64_t> v0(vals.begin(), vals.begin() + rows0), v1(vals.begin() + rows0, vals.end());
      // Device parts, each in its member's memory (the second with an element offset).
      const std::vector<device_column<std::uint32_t>> device_keys{upload(k0, 0, devices[0]), upload(k1, 5, devices[1])};
      const std::vector<device_column<std::int64_t>> device_vals{upload(v0, 0, devices[0]), upload(v1, 5, devices[1])};
      const auto on_device = group_by_parts(devices, device_keys, device_vals, all_kinds, small_blocks());
      check_equal(on_device.result, expected);
      check_stats(on_device.stats, keys.size(), on_device.result);
      CHECK(on_device.stats.devices[0].rows == rows0);
      CHECK(on_device.stats.devices[1].rows == rows1);
      // Host parts, with the plan's own blocks.
      const std::vector<std::span<const std::uint32_t>> host_keys{k0, k1};
      const std::vector<std::span<const std::int64_t>> host_vals{v0, v1};
      const auto on_host = group_by_parts(devices, host_keys, host_vals, all_kinds);
      check_equal(on_host.result, expected);
      check_stats(on_host.stats, keys.size(), on_host.result);
    }
  }
}

TEST_CASE("split input: the typed errors of one device, and a part in the wrong member's memory") {
  const auto& devices = two_devices();
  const std::vector<std::uint32_t> k{1, 2, 3};
  const std::vector<std::int64_t> v{1, 2, 3}, short_v{1, 2};
  using keys_part = std::span<const std::uint32_t>;
  using vals_part = std::span<const std::int64_t>;
  // Part counts: not one per member.
  CHECK_THROWS_AS(group_by_parts(devices, std::vector<keys_part>{k}, std::vector<vals_part>{v}, all_kinds),
                  invalid_argument_error);
  CHECK_THROWS_AS(group_by_parts(devices, std::vector<keys_part>{k, k}, std::vector<vals_part>{v}, all_kinds),
                  invalid_argument_error);
  // A part whose columns differ in length.
  CHECK_THROWS_AS(group_by_parts(devices, std::vector<keys_part>{k, k}, std::vector<vals_part>{v, short_v}, all_kinds),
                  invalid_argument_error);
  options with_ctx;
  with_ctx.ctx = &ctx();
  CHECK_THROWS_AS(group_by_parts(devices, std::vector<keys_part>{k, k}, std::vector<vals_part>{v, v}, all_kinds, with_ctx),
                  invalid_argument_error);
  // Device parts swapped: each in the other member's memory (a different context, even when both
  // members name one device).
  const std::vector<device_column<std::uint32_t>> swapped_keys{upload(k, 0, devices[1]), upload(k, 0, devices[0])};
  const std::vector<device_column<std::int64_t>> swapped_vals{upload(v, 0, devices[1]), upload(v, 0, devices[0])};
  CHECK_THROWS_AS(group_by_parts(devices, swapped_keys, swapped_vals, all_kinds), invalid_argument_error);
  // One device alone: a column of another context is refused the same way.
  CHECK_THROWS_AS(group_by(swapped_keys[0], swapped_vals[0], all_kinds), invalid_argument_error);
}

TEST_CASE("sub-devices of one device as the members") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  std::optional<device_set> halves;
  try {
    halves = device_set::partition_equally("0", 2);
  } catch (const unsupported_error& e) {
    MESSAGE("skipped: " << e.what());
    return;
  }
  REQUIRE(halves->size() == 2);
  const auto keys = draw_keys(key_dictionary<std::uint32_t>(4000, rng), 100'000, distribution::sorted_runs, rng);
  const auto vals = random_values<std::int64_t>(keys.size(), rng);
  const auto r = group_by(*halves, keys, vals, all_kinds, small_blocks());
  check_equal(r.result, all_kinds_reference(keys, vals));
  check_stats(r.stats, keys.size(), r.result);
  CHECK_THROWS_AS(device_set::partition_equally("0", 4096), unsupported_error);
}

namespace {

/// group_by_parts over two device parts with options::direct_table (true: direct addressing
/// allowed on any device): the result against the reference, and the query's statistics.
template <class Key>
auto parts_on_device(const std::vector<Key>& k0, const std::vector<Key>& k1, const merge_form_env&,
                     std::optional<bool> direct_table = true) {
  const auto& devices = two_devices();
  std::mt19937_64 rng(fresh_seed());
  const auto v0 = random_values<std::int64_t>(k0.size(), rng), v1 = random_values<std::int64_t>(k1.size(), rng);
  std::vector<Key> keys_all(k0);
  keys_all.insert(keys_all.end(), k1.begin(), k1.end());
  std::vector<std::int64_t> vals_all(v0);
  vals_all.insert(vals_all.end(), v1.begin(), v1.end());
  const std::vector<device_column<Key>> kp{upload(k0, 0, devices[0]), upload(k1, 3, devices[1])};
  const std::vector<device_column<std::int64_t>> vp{upload(v0, 0, devices[0]), upload(v1, 3, devices[1])};
  options opts;
  opts.direct_table = direct_table;
  const auto r = group_by_parts(devices, kp, vp, sum_count_min, opts);
  using bound = bound_query<single_key<Key>, std::remove_const_t<decltype(sum_count_min)>, std::int64_t>;
  check_equal(r.result, reference_group_by<bound>(std::span<const Key>(keys_all), std::span<const std::int64_t>(vals_all)));
  check_stats(r.stats, keys_all.size(), r.result);
  return r.stats;
}

}  // namespace

TEST_CASE("split device input: direct addressing over the union of the parts' ranges, or hash tables everywhere") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  two_devices().reset_participation();
  constexpr std::size_t rows = 60'000;
  constexpr std::size_t groups = 3'000;
  for (const char* form : {"one-site", "by-owner"}) {
    const merge_form_env forced(form);
    CAPTURE(std::string(form));
    {  // overlapping ranges, across zero
      // Part 0: [-1500, 1499]; part 1: [-500, 2499]; the union [-1500, 2499], each part's
      // extremes on rows its sample never reads.
      const auto k0 = dense_range_keys<std::int32_t>(-1500, groups, rows, rng);
      const auto k1 = dense_range_keys<std::int32_t>(-500, groups, rows, rng);
      const auto stats = parts_on_device(k0, k1, forced);
      for (const auto& d : stats.devices) {
        CHECK(d.stats.direct_addressing);
        CHECK(d.stats.key_range_lowest == static_cast<std::uint64_t>(std::int64_t{-1500}));
        CHECK(d.stats.key_range_size == 4'000);
      }
    }
    {  // signed 64-bit keys, one part of negative keys and one from zero up: the union in the keys' order
      const auto k0 = dense_range_keys<std::int64_t>(-1500, groups, rows, rng);
      const auto k1 = dense_range_keys<std::int64_t>(0, groups, rows, rng);
      const auto stats = parts_on_device(k0, k1, forced);
      for (const auto& d : stats.devices) {
        CHECK(d.stats.direct_addressing);
        CHECK(d.stats.key_range_lowest == static_cast<std::uint64_t>(std::int64_t{-1500}));
        CHECK(d.stats.key_range_size == 4'500);
      }
    }
    {  // signed 16-bit keys from the type's lowest value and up to its highest, in two parts
      const auto k0 = dense_range_keys<std::int16_t>(-32768, groups, rows, rng);
      const auto k1 = dense_range_keys<std::int16_t>(static_cast<std::int16_t>(32767 - (groups - 1)), groups, rows, rng);
      const auto stats = parts_on_device(k0, k1, forced);
      // The union, every int16 key, makes a table larger than either part's hash table.
      for (const auto& d : stats.devices) CHECK_FALSE(d.stats.direct_addressing);
    }
    {  // 64-bit keys at the top of the type (the empty marker's word)
      constexpr auto top = std::numeric_limits<std::uint64_t>::max();
      const auto k0 = dense_range_keys<std::uint64_t>(top - (groups - 1), groups, rows, rng);
      const auto k1 = dense_range_keys<std::uint64_t>(top - (groups - 1) - 700, groups, rows, rng);
      const auto stats = parts_on_device(k0, k1, forced);
      for (const auto& d : stats.devices) {
        CHECK(d.stats.direct_addressing);
        CHECK(d.stats.key_range_size == groups + 700);
      }
    }
    {  // disjoint ranges far apart: the union's table would dwarf each hash table
      const auto k0 = dense_range_keys<std::uint32_t>(0, groups, rows, rng);
      const auto k1 = dense_range_keys<std::uint32_t>(std::uint32_t{1} << 30, groups, rows, rng);
      const auto stats = parts_on_device(k0, k1, forced);
      for (const auto& d : stats.devices) CHECK_FALSE(d.stats.direct_addressing);
    }
    {  // one dense part, one part of one hot key: hash tables everywhere, the dense part's set-up made again
      const auto k0 = dense_range_keys<std::uint32_t>(100, groups, rows, rng);
      auto k1 = dense_range_keys<std::uint32_t>(100, groups, rows, rng);
      for (std::size_t row = 0; row < rows; row += 2) k1[row] = 777;
      const auto stats = parts_on_device(k0, k1, forced);
      for (const auto& d : stats.devices) CHECK_FALSE(d.stats.direct_addressing);
    }
  }
}

TEST_CASE("the parts' common range: the union in the keys' order, only where every plan takes it") {
  const auto handed = [](std::uint64_t lowest, std::uint64_t extent) {
    detail::direct_handover h;
    h.range = exact_key_range{lowest, extent};
    return h;
  };
  const auto all = [](std::size_t, const exact_key_range&) { return true; };
  // Unsigned 32-bit words: [10, 20] and [15, 40] make [10, 40].
  auto r = detail::common_direct_range({handed(10, 10), handed(15, 25)}, 0, all);
  REQUIRE(r);
  CHECK(r->lowest == 10);
  CHECK(r->extent == 30);
  // int32 words: [-10, 5] (word 0xFFFFFFF6) and [3, 20] make [-10, 20], 31 keys.
  constexpr std::uint64_t sign32 = std::uint64_t{1} << 31;
  r = detail::common_direct_range({handed(0xFFFFFFF6u, 15), handed(3, 17)}, sign32, all);
  REQUIRE(r);
  CHECK(r->lowest == 0xFFFFFFF6u);
  CHECK(r->extent == 30);
  // int64 words: [INT64_MIN, INT64_MIN + 4] and [INT64_MAX - 4, INT64_MAX]: every key between.
  constexpr std::uint64_t sign64 = std::uint64_t{1} << 63;
  r = detail::common_direct_range({handed(sign64, 4), handed(sign64 - 5, 4)}, sign64, all);
  REQUIRE(r);
  CHECK(r->lowest == sign64);
  CHECK(r->extent == ~std::uint64_t{0});
  // A member whose plan kept the hash table, or one that does not take the union: none.
  CHECK_FALSE(detail::common_direct_range({handed(0, 9), detail::direct_handover{}}, 0, all));
  CHECK_FALSE(detail::common_direct_range(
      {handed(0, 9), handed(5, 9)}, 0, [](std::size_t i, const exact_key_range&) { return i == 0; }));
  CHECK_FALSE(detail::common_direct_range({}, 0, all));
}

TEST_CASE("which members copy host columns as they lie: CPUs always, GPUs from a peer's pinned memory") {
  device_info cpu;
  cpu.architecture = "cpu";
  device_info gpu;
  gpu.architecture = "sm_90";
  gpu.is_gpu = true;
  CHECK(detail::reads_host_in_place(cpu, false));
  CHECK(detail::reads_host_in_place(cpu, true));
  CHECK_FALSE(detail::reads_host_in_place(gpu, false));  // pageable memory, or another platform's pinned: staged
  CHECK(detail::reads_host_in_place(gpu, true));         // pinned by a member of its platform: its DMA reads it
  // On the set here (PoCL's CPU devices, or one device twice), every member reads a pinned_array
  // of the first member's context in place while the query runs, and no longer after it.
  const auto& devices = two_devices();
  pinned_array<std::uint32_t> keys(devices[0], 1000), vals(devices[0], 1000);
  for (std::uint32_t i = 0; i < 1000; ++i) keys[i] = vals[i] = i % 7;
  const std::vector<detail::column_data> columns = detail::column_list(
      std::span<const std::uint32_t>(keys), detail::as_value_tuple(std::span<const std::uint32_t>(vals)));
  const bool cpu_member = devices[1].info().architecture == "cpu";
  {
    const detail::members_read_in_place in_place(devices, columns);
    CHECK(devices[1].is_pinned(keys.data(), 1000 * sizeof(std::uint32_t)) ==
          (cpu_member || devices[1].info().platform_name == devices[0].info().platform_name));
  }
  CHECK_FALSE(devices[1].is_pinned(keys.data(), 1000 * sizeof(std::uint32_t)));
  CHECK(devices[0].is_pinned(keys.data(), 1000 * sizeof(std::uint32_t)));  // its own, kept
}

TEST_CASE("split device input, drawn at random: part sizes, key ranges, skew, merge form, direct addressing on or off") {
  const auto seed = fresh_seed();
  CAPTURE(seed);
  std::mt19937_64 rng(seed);
  two_devices().reset_participation();
  std::size_t direct_cases = 0;
  constexpr int rounds = 16;
  for (int round = 0; round < rounds; ++round) {
    CAPTURE(round);
    const merge_form_env forced(rng() % 2 ? "one-site" : "by-owner");
    // Each part: no rows, a few rows, or more than the key sample reads; a dense range at a
    // random place (both signs), shifted against the other part's by up to its width, or one hot key.
    const std::size_t groups = 2 + rng() % 5000;
    const auto base = static_cast<std::int64_t>(rng() % 2'000'000) - 1'000'000;
    std::vector<std::int64_t> parts[2];
    for (int p = 0; p < 2; ++p) {
      const std::size_t pick = rng() % 8;
      const std::size_t rows = pick == 0 ? 0 : pick == 1 ? 1 + rng() % 100 : 50'001 + rng() % 30'000;
      const std::int64_t shift = p == 0 ? 0 : static_cast<std::int64_t>(rng() % (2 * groups)) - std::int64_t(groups);
      parts[p] = rows > 2 && groups > 2 ? dense_range_keys<std::int64_t>(base + shift, groups, rows, rng)
                                        : std::vector<std::int64_t>(rows, base);
      if (rng() % 8 == 0) {
        for (std::size_t row = 0; row < parts[p].size(); row += 2) parts[p][row] = base + 1;  // half the rows one key
      }
    }
    CAPTURE(groups);
    CAPTURE(parts[0].size());
    CAPTURE(parts[1].size());
    const std::size_t setting = rng() % 4;  // the option set on (half the rounds), off, or left to the device
    const std::optional<bool> direct_table = setting <= 1 ? std::optional<bool>(true)
                                             : setting == 2 ? std::optional<bool>(false)
                                                            : std::nullopt;
    CAPTURE(setting);
    const auto stats = parts_on_device(parts[0], parts[1], forced, direct_table);
    const bool direct = stats.devices[0].stats.direct_addressing;
    CHECK(stats.devices[1].stats.direct_addressing == direct);  // both members, or neither
    if (direct_table == false) CHECK_FALSE(direct);
    direct_cases += direct ? 1 : 0;
  }
  MESSAGE("rounds with direct addressing on both parts: " << direct_cases << " of " << rounds);
}

TEST_CASE("a CPU member sits out beside a GPU that stages host input, and only then") {
  using detail::sit_out_beside_staging;
  // GPU (stages a pageable column) + CPU: the CPU sits out.
  CHECK(sit_out_beside_staging({false, true}, {true, false}) == std::vector<bool>{false, true});
  // The GPU reads every column without staging (pinned for it): both take part.
  CHECK(sit_out_beside_staging({false, true}, {false, false}) == std::vector<bool>{false, false});
  // CPUs alone (PoCL's sub-devices) read in place: none sits out, whatever they report.
  CHECK(sit_out_beside_staging({true, true, true}, {true, false, true}) == std::vector<bool>(3, false));
  // Two GPUs, one staging, and a CPU: the CPU alone sits out.
  CHECK(sit_out_beside_staging({false, false, true}, {false, true, false}) == std::vector<bool>{false, false, true});
}

TEST_CASE("PoCL build slots: one per device instance, shared by its contexts, reused once free") {
  using slots = detail::pocl_build_slots;
  // Stand-in device handles: the registry only compares them.
  std::array<char, 2> storage{};
  const auto a = reinterpret_cast<cl_device_id>(&storage[0]);
  const auto b = reinterpret_cast<cl_device_id>(&storage[1]);
  const unsigned a0 = slots::acquire(a, 0);
  CHECK(slots::acquire(a, 0) == a0);  // a later context on the device loads what it built
  const unsigned a1 = slots::acquire(a, 1);
  const unsigned b0 = slots::acquire(b, 0);
  CHECK(a1 != a0);  // the device named twice in one set
  CHECK(b0 != a0);
  CHECK(b0 != a1);
  slots::release(a, 1);
  CHECK(slots::acquire(b, 1) == a1);  // free again, taken by the next
  slots::release(b, 1);
  slots::release(b, 0);
  slots::release(a, 0);
  CHECK(slots::acquire(a, 0) == a0);  // one context on it still held the slot
  slots::release(a, 0);
  slots::release(a, 0);
}

TEST_CASE("PoCL: two members run one kernel at once at different grid widths, and PoCL's kernel cache holds") {
  // PoCL 3.1 releases a launch's loaded kernel by (build hash, work-group size), not the entry
  // the launch took (runtime/context.hpp, detail::pocl_build_slots). Two long narrow launches on
  // member 0 (both its queues) and a wide one on member 1 in between, of one program: with one
  // build hash for both members, the wide launch's entry is released three times and PoCL
  // aborts. CTest runs this case again with four PoCL threads, where all three run at once.
  const auto& set = two_devices();
  if (!detail::is_pocl(set[0].info().platform_name) || !detail::is_pocl(set[1].info().platform_name)) {
    MESSAGE("not PoCL: nothing to check");
    return;
  }
  static constexpr std::string_view source =
      "kernel void spin(global uint* out, uint rounds) {\n"
      "  uint x = (uint)get_global_id(0);\n"
      "  for (uint j = 0; j < rounds; ++j) x = x * 3u + j;\n"
      "  out[get_global_id(0)] = x;\n"
      "}\n";
  const auto expected = [](std::uint32_t x, std::uint32_t rounds) {
    for (std::uint32_t j = 0; j < rounds; ++j) x = x * 3u + j;
    return x;
  };
  constexpr std::uint32_t narrow = 64, wide = 1 << 16, long_rounds = 20'000'000, short_rounds = 3;
  auto& first = set[0];
  auto& second = set[1];
  const cl::Program program0 = first.program(source);
  const cl::Program program1 = second.program(source);
  cl::Kernel a = first.kernel(program0, "spin");
  cl::Kernel b = first.kernel(program0, "spin");
  cl::Kernel c = second.kernel(program1, "spin");
  cl::Buffer out_a = first.buffer(narrow * 4, "a"), out_b = first.buffer(narrow * 4, "b");
  cl::Buffer out_c = second.buffer(wide * 4, "c");
  a.setArg(0, out_a);
  a.setArg(1, long_rounds);
  b.setArg(0, out_b);
  b.setArg(1, long_rounds);
  c.setArg(0, out_c);
  c.setArg(1, short_rounds);
  REQUIRE(first.compute_queue().enqueueNDRangeKernel(a, cl::NullRange, cl::NDRange(narrow), cl::NDRange(narrow)) ==
          CL_SUCCESS);
  REQUIRE(first.transfer_queue().enqueueNDRangeKernel(b, cl::NullRange, cl::NDRange(narrow), cl::NDRange(narrow)) ==
          CL_SUCCESS);
  REQUIRE(first.compute_queue().flush() == CL_SUCCESS);
  REQUIRE(first.transfer_queue().flush() == CL_SUCCESS);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(second.compute_queue().enqueueNDRangeKernel(c, cl::NullRange, cl::NDRange(wide), cl::NDRange(narrow)) ==
          CL_SUCCESS);
  std::vector<std::uint32_t> got_a(narrow), got_b(narrow), got_c(wide);
  REQUIRE(second.compute_queue().enqueueReadBuffer(out_c, CL_TRUE, 0, wide * 4, got_c.data()) == CL_SUCCESS);
  REQUIRE(first.compute_queue().enqueueReadBuffer(out_a, CL_TRUE, 0, narrow * 4, got_a.data()) == CL_SUCCESS);
  REQUIRE(first.transfer_queue().enqueueReadBuffer(out_b, CL_TRUE, 0, narrow * 4, got_b.data()) == CL_SUCCESS);
  for (const std::uint32_t i : {0u, narrow - 1}) {
    CHECK(got_a[i] == expected(i, long_rounds));
    CHECK(got_b[i] == expected(i, long_rounds));
  }
  std::size_t wrong = 0;
  for (std::uint32_t i = 0; i < wide; ++i) wrong += got_c[i] != expected(i, short_rounds) ? 1 : 0;
  CHECK(wrong == 0);
}
