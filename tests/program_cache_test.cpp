// The on-disk program binary cache (runtime/binary_cache.hpp) and the context's program cache:
// a later context loads what an earlier one built; a stale (another driver's) or corrupt entry
// is rebuilt, replaced and reported, never a failure; concurrent requests build once.

#include "support.hpp"

#include <fstream>
#include <thread>

using namespace gpuagg;
using namespace gpuagg_test;

namespace {

/// A cache directory of this test's own, set as GPUAGG_CACHE_DIR while it lives (contexts read
/// it when they are made).
struct cache_dir {
  std::filesystem::path path;
  std::string previous = std::getenv("GPUAGG_CACHE_DIR") ? std::getenv("GPUAGG_CACHE_DIR") : "";
  explicit cache_dir(std::string_view name) {
    path = std::filesystem::temp_directory_path() / ("gpuagg-program-cache-" + std::string(name) + "-" +
                                                     std::to_string(fresh_seed()));
    setenv("GPUAGG_CACHE_DIR", path.c_str(), 1);
  }
  ~cache_dir() {
    setenv("GPUAGG_CACHE_DIR", previous.c_str(), 1);
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
};

/// A small program (the group estimate's), so a test builds quickly.
std::string_view small_source() { return sample_program_source<single_key<std::uint32_t>>.view(); }

detail::binary_identity identity_in(const context& c, std::string_view source, const std::string& options = {}) {
  return {c.info().name, c.info().platform_name, c.info().driver_version, options, source};
}

/// A fresh context on the tests' device: it reads GPUAGG_CACHE_DIR now.
std::unique_ptr<context> fresh_context() { return std::make_unique<context>(ctx().device()); }

}  // namespace

TEST_CASE("a program built in one context is loaded from disk in the next, which builds nothing") {
  const cache_dir dir("hit");
  auto first = fresh_context();
  REQUIRE(first->binary_cache().enabled());
  (void)first->program(small_source());
  CHECK(first->programs_built() == 1);
  CHECK(first->program_cache().stored == 1);
  const auto file = first->binary_cache().path_of(identity_in(*first, small_source()));
  CHECK(std::filesystem::exists(file));
  CHECK(file.parent_path() == dir.path / "programs");

  auto second = fresh_context();
  cl::Program loaded = second->program(small_source());
  CHECK(second->programs_built() == 0);
  CHECK(second->program_cache().loaded == 1);
  // The loaded program runs: its kernel exists and takes arguments.
  cl_int status = CL_SUCCESS;
  cl::Kernel kernel(loaded, "gpuagg_sketch", &status);
  CHECK(status == CL_SUCCESS);
  // Other build options are another program, another file.
  (void)second->program(small_source(), "-DGPUAGG_SOMETHING_ELSE");
  CHECK(second->programs_built() == 1);
}

TEST_CASE("a query in a new process-like context builds no program when the disk cache has them") {
  const cache_dir dir("query");
  const auto rng_seed = fresh_seed();
  CAPTURE(rng_seed);
  std::mt19937_64 rng(rng_seed);
  const auto keys = draw_keys(key_dictionary<std::uint32_t>(3000, rng), 50'000, distribution::uniform, rng);
  const auto values = random_values<std::int32_t>(keys.size(), rng);
  auto [v] = columns<1>;
  const auto q = select(sum(v), count());
  options opts;
  auto first = fresh_context();
  opts.ctx = first.get();
  const auto built = group_by(keys, values, q, opts);
  // A query without tuning builds the programs of its plan's one configuration; the next
  // context loads every one of them from disk and builds none.
  REQUIRE(built.stats.programs_built >= 1);
  auto second = fresh_context();
  opts.ctx = second.get();
  const auto loaded = group_by(keys, values, q, opts);
  CHECK(loaded.stats.programs_built == 0);
  CHECK(second->program_cache().loaded == built.stats.programs_built);
  // Both exact; compared by key because a result's group order is not defined (it follows the
  // order in which work groups win the table's atomics).
  using bound = bound_query<single_key<std::uint32_t>, std::remove_const_t<decltype(q)>, std::int32_t>;
  const auto expected = reference_group_by<bound>(std::span<const std::uint32_t>(keys),
                                                  std::span<const std::int32_t>(values));
  check_equal(built, expected);
  check_equal(loaded, expected);
}

TEST_CASE("an entry of another driver is stale: rebuilt, replaced, reported") {
  const cache_dir dir("stale");
  auto first = fresh_context();
  (void)first->program(small_source());
  // The same program's file as another driver version would have written it.
  const auto id = identity_in(*first, small_source());
  auto loaded = first->binary_cache().load(id);
  REQUIRE(loaded.status == detail::binary_cache::outcome::hit);
  auto old_driver = id;
  old_driver.driver_version = "0.0 (an older driver)";
  REQUIRE(old_driver.file_name() == id.file_name());
  REQUIRE(first->binary_cache().store(old_driver, loaded.binary).empty());
  CHECK(first->binary_cache().load(id).status == detail::binary_cache::outcome::stale);

  auto second = fresh_context();
  (void)second->program(small_source());
  CHECK(second->program_cache().stale == 1);
  CHECK(second->programs_built() == 1);
  CHECK(second->program_cache().last_warning.find(id.file_name()) != std::string::npos);
  // Replaced: the next context loads it.
  CHECK(second->binary_cache().load(id).status == detail::binary_cache::outcome::hit);
  auto third = fresh_context();
  (void)third->program(small_source());
  CHECK(third->programs_built() == 0);
}

TEST_CASE("a corrupt entry (truncated, flipped bytes, garbage) is rebuilt and replaced, never a failure") {
  const cache_dir dir("corrupt");
  auto first = fresh_context();
  (void)first->program(small_source());
  const auto id = identity_in(*first, small_source());
  const auto file = first->binary_cache().path_of(id);
  REQUIRE(std::filesystem::exists(file));
  const auto size = std::filesystem::file_size(file);
  const auto damage = [&](const std::string& how) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    if (how == "truncate") {
      f.close();
      std::filesystem::resize_file(file, size / 2);
    } else if (how == "flip") {
      f.seekp(static_cast<std::streamoff>(size - 20));
      const char byte = 0x5a;
      f.write(&byte, 1);
    } else {
      f.close();
      std::ofstream(file, std::ios::binary | std::ios::trunc) << "not a program binary at all";
    }
  };
  for (const std::string how : {"truncate", "flip", "garbage"}) {
    CAPTURE(how);
    damage(how);
    CHECK(first->binary_cache().load(id).status == detail::binary_cache::outcome::corrupt);
    auto next = fresh_context();
    (void)next->program(small_source());
    CHECK(next->program_cache().corrupt == 1);
    CHECK(next->programs_built() == 1);
    CHECK(next->program_cache().last_warning.find("building it again") != std::string::npos);
    CHECK(next->binary_cache().load(id).status == detail::binary_cache::outcome::hit);
  }
}

TEST_CASE("an unwritable cache directory: programs build, one warning, queries exact") {
  const std::string previous = std::getenv("GPUAGG_CACHE_DIR");
  setenv("GPUAGG_CACHE_DIR", "/proc/gpuagg-cannot-write-here", 1);
  auto c = fresh_context();
  setenv("GPUAGG_CACHE_DIR", previous.c_str(), 1);
  (void)c->program(small_source());
  (void)c->program(small_source(), "-DGPUAGG_SOMETHING_ELSE");
  CHECK(c->programs_built() == 2);
  CHECK(c->program_cache().stored == 0);
  CHECK(c->program_cache().last_warning.find("programs are not kept") != std::string::npos);
}

TEST_CASE("threads asking for one program wait for one build; prefetch builds several side by side") {
  const cache_dir dir("threads");
  auto c = fresh_context();
  std::vector<std::jthread> threads;
  std::vector<cl::Program> got(6);
  for (std::size_t t = 0; t < got.size(); ++t) threads.emplace_back([&, t] { got[t] = c->program(small_source()); });
  threads.clear();  // joins
  CHECK(c->programs_built() == 1);
  for (const auto& p : got) CHECK(p() == got.front()());
  c->prefetch({{small_source(), "-DGPUAGG_A"}, {small_source(), "-DGPUAGG_B"}, {small_source(), ""}});
  CHECK(c->programs_built() == 3);
  (void)c->program(small_source(), "-DGPUAGG_A");
  CHECK(c->programs_built() == 3);
  // A program that fails to build is reported with its log, and is not cached as built.
  CHECK_THROWS_AS(c->program("__kernel void broken( {"), build_error);
  CHECK_THROWS_AS(c->program("__kernel void broken( {"), build_error);
}

TEST_CASE("a lasting source's program is found by its text's address: the same program, built once") {
  const cache_dir dir("lasting");
  const std::string copy(small_source());  // the same text at another address
  auto c = fresh_context();
  const cl::Program by_text = c->program(small_source(), "-DGPUAGG_A");
  CHECK(c->programs_built() == 1);
  // The first lasting lookup finds the text's program; the later ones find it by address.
  CHECK(c->program(context::lasting_source{small_source()}, "-DGPUAGG_A")() == by_text());
  CHECK(c->program(context::lasting_source{small_source()}, "-DGPUAGG_A")() == by_text());
  CHECK(c->program(context::lasting_source{copy}, "-DGPUAGG_A")() == by_text());
  CHECK(c->programs_built() == 1);
  // Other options are another program, built once; the text's lookup finds it too.
  const cl::Program other = c->program(context::lasting_source{small_source()}, "-DGPUAGG_B");
  CHECK(other() != by_text());
  CHECK(c->programs_built() == 2);
  CHECK(c->program(small_source(), "-DGPUAGG_B")() == other());
  CHECK(c->program(context::lasting_source{copy}, "-DGPUAGG_B")() == other());
  CHECK(c->programs_built() == 2);
  // prefetch of lasting requests builds only the missing ones, which both lookups then find.
  c->prefetch({{small_source(), "-DGPUAGG_A", true}, {small_source(), "-DGPUAGG_C", true},
               {small_source(), "-DGPUAGG_D", true}});
  CHECK(c->programs_built() == 4);
  CHECK(c->program(context::lasting_source{small_source()}, "-DGPUAGG_C")() ==
        c->program(small_source(), "-DGPUAGG_C")());
  CHECK(c->program(small_source(), "-DGPUAGG_D")() == c->program(context::lasting_source{copy}, "-DGPUAGG_D")());
  CHECK(c->programs_built() == 4);
  // A lasting source that fails to build is reported each time, never cached as built.
  CHECK_THROWS_AS(c->program(context::lasting_source{"__kernel void broken( {"}), build_error);
  CHECK_THROWS_AS(c->program(context::lasting_source{"__kernel void broken( {"}), build_error);
}
