#pragma once
// The LINEITEM columns TPC-H Q1 reads, generated as TPC-H's dbgen generates them (the
// specification's section 4.2.3), as narrow columns with decimals scaled to integers so that
// every sum is exact:
//   quantity        int8   1 .. 50
//   extendedprice   int32  cents: quantity x P_RETAILPRICE, P_RETAILPRICE of a random part
//   discount        int8   hundredths, 0 .. 10
//   tax             int8   hundredths, 0 .. 8
//   returnflag      uint8  'R' or 'A' when the receipt date is on or before 1995-06-17, else 'N'
//   linestatus      uint8  'O' when the ship date is after 1995-06-17, else 'F'
//   shipdate        int16  days since 1992-01-01: the order's date + 1 .. 121 days
// Orders: SF x 1,500,000, each of 1 to 7 lines (about SF x 6,000,000 lines); the order date is
// uniform over 1992-01-01 .. 1998-08-02 (the end date less 151 days); the receipt date is the
// ship date + 1 .. 30 days. Columns the query does not read (keys, comments, the commit date) are
// not generated; their random draws are, so the values follow dbgen's distributions.
// The generator is deterministic for a (scale factor, seed) and runs on all host threads.

#include <algorithm>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

namespace tpch {

/// Days since 1992-01-01 of a date (proleptic Gregorian).
constexpr int day_number(int year, int month, int day) {
  const auto days_from_civil = [](int y, int m, int d) {
    y -= m <= 2;
    const int era = (y >= 0 ? y : y - 399) / 400;
    const int yoe = y - era * 400;
    const int doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
  };
  return days_from_civil(year, month, day) - days_from_civil(1992, 1, 1);
}

inline constexpr int current_date = day_number(1995, 6, 17);
inline constexpr int last_order_date = day_number(1998, 12, 31) - 151;
/// Q1's predicate: l_shipdate <= date '1998-12-01' - interval ':1' day, with DELTA = 90 (the
/// validation value).
inline constexpr int q1_cutoff = day_number(1998, 12, 1) - 90;

struct lineitem {
  std::vector<std::int8_t> quantity;
  std::vector<std::int32_t> extendedprice;
  std::vector<std::int8_t> discount;
  std::vector<std::int8_t> tax;
  std::vector<std::uint8_t> returnflag;
  std::vector<std::uint8_t> linestatus;
  std::vector<std::int16_t> shipdate;

  std::size_t size() const { return quantity.size(); }
  /// Bytes of the seven columns: what a query reads.
  std::size_t bytes() const { return size() * (1 + 4 + 1 + 1 + 1 + 1 + 2); }
};

/// P_RETAILPRICE in cents of part `partkey` (specification 4.2.3).
constexpr std::int32_t retail_price_cents(std::int64_t partkey) {
  return static_cast<std::int32_t>(90000 + (partkey / 10) % 20001 + 100 * (partkey % 1000));
}

/// The lineitem rows of scale factor `scale` (any positive value; 0.01 gives about 60,000 rows).
inline lineitem generate_lineitem(double scale, std::uint64_t seed = 19920101) {
  const auto orders = static_cast<std::uint64_t>(std::max(1.0, scale * 1'500'000));
  const auto parts = static_cast<std::int64_t>(std::max(1.0, scale * 200'000));
  const unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, 64u);
  // Each thread generates the lines of a contiguous range of orders into its own columns.
  std::vector<lineitem> pieces(threads);
  {
    std::vector<std::jthread> pool;
    for (unsigned t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ULL + t);
        std::uniform_int_distribution<int> lines(1, 7), quantity(1, 50), discount(0, 10), tax(0, 8);
        std::uniform_int_distribution<int> order_date(0, last_order_date), ship(1, 121), receipt(1, 30);
        std::uniform_int_distribution<std::int64_t> part(1, parts);
        std::bernoulli_distribution returned(0.5);
        lineitem& out = pieces[t];
        const std::uint64_t first = orders * t / threads;
        const std::uint64_t last = orders * (t + 1) / threads;
        const std::size_t expected = static_cast<std::size_t>((last - first) * 4 + 64);
        for (auto* v : {&out.quantity, &out.discount, &out.tax}) v->reserve(expected);
        out.extendedprice.reserve(expected);
        out.returnflag.reserve(expected);
        out.linestatus.reserve(expected);
        out.shipdate.reserve(expected);
        for (std::uint64_t o = first; o < last; ++o) {
          const int ordered = order_date(rng);
          for (int l = lines(rng); l > 0; --l) {
            const int q = quantity(rng);
            const int shipped = ordered + ship(rng);
            const int received = shipped + receipt(rng);
            out.quantity.push_back(static_cast<std::int8_t>(q));
            out.extendedprice.push_back(q * retail_price_cents(part(rng)));
            out.discount.push_back(static_cast<std::int8_t>(discount(rng)));
            out.tax.push_back(static_cast<std::int8_t>(tax(rng)));
            out.returnflag.push_back(received <= current_date ? (returned(rng) ? 'R' : 'A') : 'N');
            out.linestatus.push_back(shipped > current_date ? 'O' : 'F');
            out.shipdate.push_back(static_cast<std::int16_t>(shipped));
          }
        }
      });
    }
  }
  lineitem all;
  std::size_t total = 0;
  for (const auto& p : pieces) total += p.size();
  const auto append = [total](auto& to, auto& from) {
    if (to.capacity() < total) to.reserve(total);
    to.insert(to.end(), from.begin(), from.end());
    from = {};
  };
  for (auto& p : pieces) {
    append(all.quantity, p.quantity);
    append(all.extendedprice, p.extendedprice);
    append(all.discount, p.discount);
    append(all.tax, p.tax);
    append(all.returnflag, p.returnflag);
    append(all.linestatus, p.linestatus);
    append(all.shipdate, p.shipdate);
  }
  return all;
}

/// One group of Q1's answer, its sums exact: prices in cents, discounted prices in 1/10,000
/// and charges in 1/1,000,000 of a dollar.
struct q1_row {
  std::uint8_t returnflag = 0;
  std::uint8_t linestatus = 0;
  std::int64_t sum_qty = 0;
  std::int64_t sum_base_price = 0;   // cents
  std::int64_t sum_disc_price = 0;   // 1e-4 dollars: sum(price x (100 - discount))
  __int128 sum_charge = 0;           // 1e-6 dollars: sum(price x (100 - discount) x (100 + tax))
  std::int64_t sum_discount = 0;     // hundredths
  std::uint64_t count_order = 0;

  double avg_qty() const { return double(sum_qty) / double(count_order); }
  double avg_price() const { return double(sum_base_price) / 100.0 / double(count_order); }
  double avg_disc() const { return double(sum_discount) / 100.0 / double(count_order); }
  friend bool operator==(const q1_row&, const q1_row&) = default;
};

/// Q1 on the CPU, one pass, groups in Q1's order (returnflag, linestatus).
inline std::vector<q1_row> q1_reference(const lineitem& li, int cutoff = q1_cutoff) {
  q1_row groups[256][2] = {};
  bool seen[256][2] = {};
  for (std::size_t i = 0; i < li.size(); ++i) {
    if (li.shipdate[i] > cutoff) continue;
    const int status = li.linestatus[i] == 'O' ? 1 : 0;
    q1_row& g = groups[li.returnflag[i]][status];
    seen[li.returnflag[i]][status] = true;
    const std::int64_t price = li.extendedprice[i];
    const std::int64_t disc_price = price * (100 - li.discount[i]);
    g.sum_qty += li.quantity[i];
    g.sum_base_price += price;
    g.sum_disc_price += disc_price;
    g.sum_charge += static_cast<__int128>(disc_price) * (100 + li.tax[i]);
    g.sum_discount += li.discount[i];
    ++g.count_order;
  }
  std::vector<q1_row> out;
  for (int f = 0; f < 256; ++f) {
    for (int s = 0; s < 2; ++s) {
      if (!seen[f][s]) continue;
      groups[f][s].returnflag = static_cast<std::uint8_t>(f);
      groups[f][s].linestatus = s ? 'O' : 'F';
      out.push_back(groups[f][s]);
    }
  }
  return out;
}

}  // namespace tpch
