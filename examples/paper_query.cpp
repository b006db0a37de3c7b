// The query of Rosenfeld et al. (DaMoN 2019), section 2.1, over generated rows:
//
//   SELECT g, sum((a - b)^2) / count(*) FROM R GROUP BY g
//
// Usage: paper_query [rows_log2 = 24] [groups = 1024]. Prints some groups, the strategy the
// driver chose, throughput, and checks every group against the CPU reference.
#include <gpuagg/groupby.hpp>
#include <gpuagg/reference.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <random>
#include <span>
#include <string>
#include <vector>

inline int paper_query(std::ostream& out, unsigned rows_log2 = 24, std::uint32_t groups = 1024) {
  using namespace gpuagg;
  const std::size_t rows = std::size_t{1} << rows_log2;
  std::mt19937_64 rng(std::random_device{}());
  std::uniform_int_distribution<std::uint32_t> group(0, groups - 1);
  std::uniform_int_distribution<std::int32_t> value(-1000, 1000);
  std::vector<std::uint32_t> g(rows);
  std::vector<std::int32_t> a(rows), b(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    g[i] = group(rng) * 2654435761u;  // arbitrary (non-dense) key values
    a[i] = value(rng);
    b[i] = value(rng);
  }

  const auto [col_a, col_b] = columns<2>;
  const auto query = select(sum(square(col_a - col_b)) / count());
  // The call a user makes: no options; the group count is estimated, the plan chosen for it.
  const auto r = group_by(g, values(a, b), query);

  const auto& s = r.stats;
  out << "SELECT g, sum((a - b)^2) / count(*) FROM R GROUP BY g\n";
  for (std::size_t i = 0; i < std::min<std::size_t>(r.size(), 5); ++i) {
    out << "  g=" << r.keys[i] << "  " << r.column<0>()[i] << '\n';
  }
  out << "groups: " << r.size() << "  rows: " << rows << "  device: " << s.device << '\n'
      << "strategy: " << s.strategy() << " " << s.blocks.back().params.config << "  blocks: " << s.blocks.size()
      << '\n'
      << "AGGREGATE: " << s.aggregate_seconds * 1e3 << " ms (" << s.aggregate_rows_per_second() / 1e9
      << " G rows/s)  end to end: " << s.wall_seconds * 1e3 << " ms (" << double(rows) / s.wall_seconds / 1e9
      << " G rows/s, host transfers included)\n";

  using bound = bound_query<single_key<std::uint32_t>, std::remove_const_t<decltype(query)>, std::int32_t,
                            std::int32_t>;
  const auto expected = reference_group_by<bound>(std::span<const std::uint32_t>(g), std::span<const std::int32_t>(a),
                                                  std::span<const std::int32_t>(b));
  auto sorted = r;
  sort_by_key(sorted);
  bool same = sorted.keys == expected.keys && sorted.column<0>() == expected.column<0>();
  out << (same ? "verified against the CPU reference: all " : "MISMATCH against the CPU reference over ")
      << expected.size() << " groups\n";
  return same ? 0 : 1;
}

#ifndef GPUAGG_EXAMPLE_NO_MAIN
int main(int argc, char** argv) {
  try {
    const unsigned rows_log2 = argc > 1 ? static_cast<unsigned>(std::stoul(argv[1])) : 24;
    const auto groups = argc > 2 ? static_cast<std::uint32_t>(std::stoul(argv[2])) : 1024u;
    return paper_query(std::cout, rows_log2, groups);
  } catch (const gpuagg::error& e) {
    std::cerr << "gpuagg: " << e.what() << '\n';
    return 1;
  }
}
#endif
