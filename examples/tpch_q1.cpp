// TPC-H Query 1 (the pricing summary report) over generated LINEITEM columns:
//
//   SELECT l_returnflag, l_linestatus,
//          sum(l_quantity), sum(l_extendedprice), sum(l_extendedprice * (1 - l_discount)),
//          sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)),
//          avg(l_quantity), avg(l_extendedprice), avg(l_discount), count(*)
//   FROM lineitem WHERE l_shipdate <= date '1998-12-01' - interval '90' day
//   GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus
//
// Usage: tpch_q1 [scale factor = 1]. Composite keys (the two flags), narrow columns, the WHERE
// clause fused into AGGREGATE; decimals as scaled integers, so the answer is exact, and checked
// against a CPU pass over the same columns.
#include <gpuagg/groupby.hpp>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

#include "tpch_lineitem.hpp"

namespace tpch {

/// Q1 as a gpuagg query over the columns (quantity, extendedprice, discount, tax, shipdate),
/// grouped by keys(returnflag, linestatus). The charge, sum(price x (100 - discount) x (100 +
/// tax)), exceeds 64 bits at scale factor 100 (about 1.1e19 in millionths of a dollar in the
/// largest group), so the query sums price x (100 - discount) and its product with the tax, and
/// the charge is 100 x the first + the second, in 128 bits on the host.
inline constexpr auto q1_query = [] {
  using namespace gpuagg;
  constexpr auto quantity = col<0>;
  constexpr auto price = col<1>;
  constexpr auto discount = col<2>;
  constexpr auto tax = col<3>;
  constexpr auto shipdate = col<4>;
  constexpr auto disc_price = as<std::int64_t>(price) * (lit<100> - discount);
  return select(sum(quantity), sum(price), sum(disc_price), sum(disc_price * tax), avg(quantity), avg(price),
                avg(discount), count())
      .where(shipdate <= lit<q1_cutoff>);
}();

/// The answer from a gpuagg result, ordered as Q1 orders it.
template <class Result>
std::vector<q1_row> q1_rows(const Result& r) {
  std::vector<q1_row> rows(r.size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    auto& row = rows[i];
    row.returnflag = r.keys.template column<0>()[i];
    row.linestatus = r.keys.template column<1>()[i];
    row.sum_qty = r.template column<0>()[i];
    row.sum_base_price = r.template column<1>()[i];
    row.sum_disc_price = r.template column<2>()[i];
    row.sum_charge = static_cast<__int128>(r.template column<2>()[i]) * 100 + r.template column<3>()[i];
    row.count_order = r.template column<7>()[i];
    // avg(discount) x count gives back the discount's sum exactly (both integers below 2^53).
    row.sum_discount = static_cast<std::int64_t>(r.template column<6>()[i] * double(row.count_order) + 0.5);
  }
  std::sort(rows.begin(), rows.end(), [](const q1_row& a, const q1_row& b) {
    return a.returnflag != b.returnflag ? a.returnflag < b.returnflag : a.linestatus < b.linestatus;
  });
  return rows;
}

/// A fixed-point value of `scale` decimals ("123.45" for 12345 at 2).
inline std::string decimal(__int128 value, int scale) {
  const bool negative = value < 0;
  if (negative) value = -value;
  std::string digits;
  do {
    digits.insert(digits.begin(), char('0' + int(value % 10)));
    value /= 10;
  } while (value > 0);
  while (static_cast<int>(digits.size()) <= scale) digits.insert(digits.begin(), '0');
  if (scale > 0) digits.insert(digits.end() - scale, '.');
  return (negative ? "-" : "") + digits;
}

inline void print_q1(std::ostream& out, const std::vector<q1_row>& rows) {
  out << "l_returnflag|l_linestatus|sum_qty|sum_base_price|sum_disc_price|sum_charge|avg_qty|avg_price|avg_disc|"
         "count_order\n";
  for (const auto& r : rows) {
    out << char(r.returnflag) << '|' << char(r.linestatus) << '|' << r.sum_qty << '|' << decimal(r.sum_base_price, 2)
        << '|' << decimal(r.sum_disc_price, 4) << '|' << decimal(r.sum_charge, 6) << '|' << std::fixed
        << std::setprecision(2) << r.avg_qty() << '|' << r.avg_price() << '|' << r.avg_disc() << '|'
        << r.count_order << '\n';
  }
}

}  // namespace tpch

/// Generates the rows of `scale`, runs Q1 with gpuagg (the default call: no options), checks it
/// against the CPU pass; returns 0 when every group and every aggregate agree.
inline int tpch_q1(std::ostream& out, double scale = 1.0) {
  using namespace gpuagg;
  const auto li = tpch::generate_lineitem(scale);
  const auto start = std::chrono::steady_clock::now();
  const auto r = group_by(keys(li.returnflag, li.linestatus),
                          values(li.quantity, li.extendedprice, li.discount, li.tax, li.shipdate), tpch::q1_query);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto rows = tpch::q1_rows(r);
  tpch::print_q1(out, rows);
  out << "scale factor " << scale << ": " << li.size() << " lineitems (" << li.bytes() / 1e6 << " MB of columns) on "
      << r.stats.device << " in " << seconds * 1e3 << " ms (" << r.stats.strategy() << ", "
      << r.stats.blocks.size() << " blocks)\n";
  const auto expected = tpch::q1_reference(li);
  const bool same = rows == expected;
  out << (same ? "verified against the CPU reference: all " : "MISMATCH against the CPU reference over ")
      << expected.size() << " groups\n";
  return same ? 0 : 1;
}

#ifndef GPUAGG_EXAMPLE_NO_MAIN
int main(int argc, char** argv) {
  try {
    const double scale = argc > 1 ? std::stod(argv[1]) : 1.0;
    if (!(scale > 0)) {
      std::cerr << "usage: tpch_q1 [scale factor > 0]\n";
      return 2;
    }
    return tpch_q1(std::cout, scale);
  } catch (const gpuagg::error& e) {
    std::cerr << "gpuagg: " << e.what() << '\n';
    return 1;
  }
}
#endif
