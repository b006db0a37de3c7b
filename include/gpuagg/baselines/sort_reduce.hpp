#pragma once
// Baseline 1: sort-based aggregation with Boost.Compute, the "boost.compute sort-based
// aggregation" competitor of the atomics paper (section 4.2): sort_by_key, then one
// reduce_by_key per aggregate. SELECT g, count(*), sum(v), min(v), max(v) GROUP BY g.
//
// Also the parts both baselines share (sort_atomics.hpp builds on them): the result type, the
// timing record, the Boost.Compute queue over gpuagg's context, the sort phase (section 3.1's
// first phase), device stopwatches and the checks of arguments and device.
//
// Semantics are gpuagg's (aggregate.hpp): integer sums wrap in 64 bits (int64 for signed
// values, uint64 for unsigned), float and double values sum in double, min/max keep the value
// type with NaN above every number. Groups come out sorted by key.

#include <boost/compute/algorithm/reduce_by_key.hpp>
#include <boost/compute/algorithm/sort_by_key.hpp>
#include <boost/compute/command_queue.hpp>
#include <boost/compute/container/vector.hpp>
#include <boost/compute/context.hpp>
#include <boost/compute/exception/opencl_error.hpp>
#include <boost/compute/exception/program_build_failure.hpp>
#include <boost/compute/function.hpp>
#include <boost/compute/functional/operator.hpp>
#include <boost/compute/iterator/constant_iterator.hpp>
#include <boost/compute/iterator/transform_iterator.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "../aggregate.hpp"
#include "../column.hpp"
#include "../error.hpp"
#include "../result.hpp"
#include "../runtime/context.hpp"
#include "../types.hpp"

namespace gpuagg::baselines {

/// Profiled device time of a baseline's two phases (section 3.1: sort, then aggregate).
/// Measured between profiling markers on the in-order compute queue, so it includes any time
/// the device waits for the host between commands: on the first call in a context that is
/// Boost.Compute's and gpuagg's JIT builds; benchmarks should warm up first.
struct baseline_timing {
  double sort_seconds = 0;       ///< copying the columns and sort_by_key
  double aggregate_seconds = 0;  ///< everything after the sort until the aggregates are final
};

/// What both baselines return: keys (sorted), count(*), sum(v), min(v), max(v), the same
/// columns and types as gpuagg::group_by with select(count(), sum(col<0>), min(col<0>),
/// max(col<0>)).
template <key_type K, value_type V>
using baseline_result = result<K, std::uint64_t, typename aggregate_policy<sum_kind, V>::acc_type, V, V>;

namespace detail {

using gpuagg::detail::check;
using gpuagg::detail::opencl_error_name;
using clock = std::chrono::steady_clock;

/// The device word a sum accumulates in: integer sums add in ulong, whose wrap-around gives
/// int64's two's-complement sum bit for bit (signed overflow in OpenCL C would be undefined);
/// floating-point sums add in double.
template <value_type V>
using sum_word = std::conditional_t<std::is_floating_point_v<V>, double, std::uint64_t>;

template <value_type V>
using sum_type = typename aggregate_policy<sum_kind, V>::acc_type;

/// The OpenCL type a value widens to before it is summed: sign-extending for signed integers.
template <value_type V>
constexpr const char* sum_widening_cl_type() {
  if constexpr (std::is_floating_point_v<V>) return "double";
  else if constexpr (std::is_signed_v<V>) return "long";
  else return "ulong";
}

template <value_type V>
sum_type<V> sum_from_word(sum_word<V> word) {
  return static_cast<sum_type<V>>(word);  // uint64 -> int64 is modular in C++20
}

/// Boost.Compute errors as gpuagg's typed errors.
template <class Function>
decltype(auto) boost_call(const char* what, Function&& function) {
  try {
    return std::forward<Function>(function)();
  } catch (const boost::compute::program_build_failure& failure) {
    throw build_error(std::string(what) + ": a Boost.Compute program failed to build (" +
                          opencl_error_name(failure.error_code()) + ")\nbuild log:\n" + failure.build_log(),
                      failure.build_log(), {});
  } catch (const boost::compute::opencl_error& failure) {
    throw opencl_error(failure.error_code(), opencl_error_name(failure.error_code()), what);
  }
}

/// A Boost.Compute queue that is gpuagg's compute queue (in order, profiling enabled), so
/// Boost.Compute's kernels, gpuagg's kernels and the stopwatch markers run in one order.
inline boost::compute::command_queue boost_queue(context& ctx) {
  return boost::compute::command_queue(ctx.compute_queue()(), /*retain=*/true);
}

/// The cl::Buffer of a Boost.Compute vector, for gpuagg's own kernels.
template <class T>
cl::Buffer buffer_of(const boost::compute::vector<T>& vector) {
  return cl::Buffer(vector.get_buffer().get(), /*retainObject=*/true);
}

/// Device time between two markers on an in-order queue (host time where the device gives
/// no profiling information for markers).
class device_stopwatch {
 public:
  explicit device_stopwatch(cl::CommandQueue& queue) : queue_(queue), host_start_(clock::now()) {
    check(queue_.enqueueMarkerWithWaitList(nullptr, &start_), "enqueueing a timing marker");
  }

  /// Waits for everything enqueued since construction; the seconds it took on the device.
  double seconds() {
    cl::Event stop;
    check(queue_.enqueueMarkerWithWaitList(nullptr, &stop), "enqueueing a timing marker");
    check(stop.wait(), "waiting for a timing marker");
    const double host = std::chrono::duration<double>(clock::now() - host_start_).count();
    cl_ulong begin = 0;
    cl_ulong end = 0;
    if (start_.getProfilingInfo(CL_PROFILING_COMMAND_END, &begin) != CL_SUCCESS ||
        stop.getProfilingInfo(CL_PROFILING_COMMAND_END, &end) != CL_SUCCESS || end < begin) {
      return host;
    }
    return double(end - begin) * 1e-9;
  }

 private:
  cl::CommandQueue& queue_;
  clock::time_point host_start_;
  cl::Event start_;
};

inline void check_lengths(std::size_t key_rows, std::size_t value_rows) {
  if (key_rows != value_rows) {
    throw invalid_argument_error("gpuagg::baselines: the key column has " + std::to_string(key_rows) +
                                 " rows, the value column " + std::to_string(value_rows));
  }
  // Group and row indices on the device are 32-bit (as in Boost.Compute's reduce_by_key).
  if (key_rows > std::numeric_limits<std::uint32_t>::max()) {
    throw invalid_argument_error("gpuagg::baselines: " + std::to_string(key_rows) +
                                 " rows; the baselines take at most 2^32 - 1");
  }
}

/// The device must add 64-bit words atomically (count, integer sums) and have double for
/// floating-point sums.
template <value_type V>
void check_device(const context& ctx, bool needs_int64_atomics) {
  if (needs_int64_atomics && !ctx.info().int64_atomics) {
    throw unsupported_error("gpuagg::baselines: " + ctx.info().name +
                            " lacks cl_khr_int64_base_atomics, which the atomic aggregation needs");
  }
  if (std::is_floating_point_v<V> && !ctx.info().fp64) {
    throw unsupported_error("gpuagg::baselines: " + ctx.info().name +
                            " lacks cl_khr_fp64; float and double values are summed in double");
  }
}

/// A device column of the host vector's contents (the host overloads copy first).
template <value_type T>
device_column<T> upload(context& ctx, const std::vector<T>& host, const char* what) {
  cl::Buffer buffer = ctx.buffer(host.size() * sizeof(T), what);
  if (!host.empty()) {
    check(ctx.compute_queue().enqueueWriteBuffer(buffer, CL_TRUE, 0, host.size() * sizeof(T), host.data()),
          "copying a column to the device");
  }
  return device_column<T>(std::move(buffer), host.size());
}

/// A copy of `column` in a Boost.Compute vector (sorting is in place; the input stays as it is).
template <value_type T>
boost::compute::vector<T> copy_to_vector(context& ctx, const boost::compute::context& bc_context,
                                         const device_column<T>& column) {
  ctx.check_allocation(column.size * sizeof(T), "a sorted copy of a column");
  boost::compute::vector<T> copy = boost_call(
      "allocating a sorted copy", [&] { return boost::compute::vector<T>(column.size, bc_context); });
  check(ctx.compute_queue().enqueueCopyBuffer(column.buffer, buffer_of(copy), column.offset * sizeof(T), 0,
                                              column.size * sizeof(T)),
        "copying a column for sorting");
  return copy;
}

template <key_type K, value_type V>
struct sorted_columns {
  boost::compute::vector<K> keys;
  boost::compute::vector<V> values;
};

/// Section 3.1, first phase: the rows sorted by key, values permuted along (one value column,
/// so it travels with the keys instead of a row-index permutation).
template <key_type K, value_type V>
sorted_columns<K, V> sort_phase(context& ctx, boost::compute::command_queue& queue, const device_column<K>& keys,
                                const device_column<V>& values) {
  const boost::compute::context bc_context = queue.get_context();
  sorted_columns<K, V> sorted{copy_to_vector(ctx, bc_context, keys), copy_to_vector(ctx, bc_context, values)};
  boost_call("boost::compute::sort_by_key", [&] {
    boost::compute::sort_by_key(sorted.keys.begin(), sorted.keys.end(), sorted.values.begin(), queue);
  });
  return sorted;
}

/// Reads `count` elements of a device buffer into a host vector.
template <class T>
std::vector<T> read_back(context& ctx, const cl::Buffer& buffer, std::size_t count) {
  std::vector<T> host(count);
  if (count > 0) {
    check(ctx.compute_queue().enqueueReadBuffer(buffer, CL_TRUE, 0, count * sizeof(T), host.data()),
          "reading a baseline's result");
  }
  return host;
}

/// The four result columns from their device words.
template <key_type K, value_type V>
void fill_result(context& ctx, baseline_result<K, V>& out, std::size_t groups, const cl::Buffer& keys,
                 const cl::Buffer& counts, const cl::Buffer& sums, const cl::Buffer& mins, const cl::Buffer& maxs) {
  out.keys = read_back<K>(ctx, keys, groups);
  std::get<0>(out.columns) = read_back<std::uint64_t>(ctx, counts, groups);
  const auto words = read_back<sum_word<V>>(ctx, sums, groups);
  auto& sum_column = std::get<1>(out.columns);
  sum_column.reserve(groups);
  for (const auto word : words) sum_column.push_back(sum_from_word<V>(word));
  std::get<2>(out.columns) = read_back<V>(ctx, mins, groups);
  std::get<3>(out.columns) = read_back<V>(ctx, maxs, groups);
}

/// rows, groups, device and timings into the result's stats and the optional timing record.
template <class Result>
void finish_stats(Result& out, const context& ctx, std::size_t rows, std::size_t groups, const baseline_timing& t,
                  clock::time_point wall_start, std::size_t programs_before, std::uint64_t device_bytes,
                  baseline_timing* timing) {
  out.stats.device = ctx.info().name;
  out.stats.rows = rows;
  out.stats.groups = groups;
  out.stats.expected_groups = groups;
  out.stats.aggregate_seconds = t.sort_seconds + t.aggregate_seconds;
  out.stats.programs_built = ctx.programs_built() - programs_before;
  out.stats.peak_device_bytes = device_bytes;
  out.stats.wall_seconds = std::chrono::duration<double>(clock::now() - wall_start).count();
  if (timing != nullptr) *timing = t;
}

/// An OpenCL function for Boost.Compute: `inline RESULT NAME(PARAMETERS) { BODY }`, with fp64
/// enabled where it uses double. Named per type, so programs of several types can hold it.
inline std::string cl_function(bool uses_double, const std::string& result, const std::string& name,
                               const std::string& parameters, const std::string& body) {
  return std::string(uses_double ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "") + "inline " + result +
         " " + name + "(" + parameters + ") {\n  " + body + "\n}\n";
}

/// min and max combines for Boost.Compute with gpuagg's order (aggregate.hpp: NaN above
/// every number).
template <value_type V>
auto minimum_function() {
  const std::string type(cl_type_name<V>.view());
  const std::string name = "gpuagg_baseline_minimum_" + type;
  return boost::compute::make_function_from_source<V(V, V)>(
      name, cl_function(std::is_same_v<V, double>, type, name, type + " a, " + type + " b",
                        std::is_floating_point_v<V> ? "return (!isnan(b) && (isnan(a) || b < a)) ? b : a;"
                                                    : "return b < a ? b : a;"));
}

template <value_type V>
auto maximum_function() {
  const std::string type(cl_type_name<V>.view());
  const std::string name = "gpuagg_baseline_maximum_" + type;
  return boost::compute::make_function_from_source<V(V, V)>(
      name, cl_function(std::is_same_v<V, double>, type, name, type + " a, " + type + " b",
                        std::is_floating_point_v<V> ? "return (!isnan(a) && (isnan(b) || a < b)) ? b : a;"
                                                    : "return a < b ? b : a;"));
}

/// A value as its sum word: integers widened (sign-extending signed ones) to their 64-bit
/// bits as ulong; float and double as double.
template <value_type V>
auto to_sum_function() {
  const std::string type(cl_type_name<V>.view());
  const std::string word(cl_type_name<sum_word<V>>.view());
  const std::string name = "gpuagg_baseline_to_sum_" + type;
  return boost::compute::make_function_from_source<sum_word<V>(V)>(
      name, cl_function(std::is_floating_point_v<V>, word, name, type + " v",
                        "return (" + word + ")(" + sum_widening_cl_type<V>() + ")v;"));
}

}  // namespace detail

/// SELECT g, count(*), sum(v), min(v), max(v) GROUP BY g by Boost.Compute: sort_by_key on
/// copies of the columns, then reduce_by_key once per aggregate. Groups sorted by key.
/// Throws invalid_argument_error when the columns differ in length.
template <key_type K, value_type V>
baseline_result<K, V> sort_reduce_by_key(context& ctx, const device_column<K>& keys, const device_column<V>& values,
                                         baseline_timing* timing = nullptr) {
  namespace bc = boost::compute;
  const auto wall_start = detail::clock::now();
  const std::size_t programs_before = ctx.programs_built();
  detail::check_lengths(keys.size, values.size);
  detail::check_device<V>(ctx, false);
  const std::size_t rows = keys.size;
  baseline_result<K, V> out;
  baseline_timing t;
  if (rows == 0) {
    detail::finish_stats(out, ctx, 0, 0, t, wall_start, programs_before, 0, timing);
    return out;
  }
  bc::command_queue queue = detail::boost_queue(ctx);
  const bc::context bc_context = queue.get_context();

  detail::device_stopwatch sort_watch(ctx.compute_queue());
  auto sorted = detail::sort_phase(ctx, queue, keys, values);
  t.sort_seconds = sort_watch.seconds();

  // One reduce_by_key per aggregate, as Boost.Compute offers no multi-aggregate reduction;
  // each writes the same group keys again.
  detail::device_stopwatch aggregate_watch(ctx.compute_queue());
  using word = detail::sum_word<V>;
  const std::uint64_t device_bytes =
      rows * (2 * sizeof(K) + 3 * sizeof(V) + sizeof(std::uint64_t) + sizeof(word));  // sorted copies, outputs
  ctx.check_allocation(rows * sizeof(std::uint64_t), "reduce_by_key's outputs");
  auto [group_keys, counts, sums, mins, maxs] = detail::boost_call("allocating reduce_by_key's outputs", [&] {
    return std::tuple{bc::vector<K>(rows, bc_context), bc::vector<std::uint64_t>(rows, bc_context),
                      bc::vector<word>(rows, bc_context), bc::vector<V>(rows, bc_context),
                      bc::vector<V>(rows, bc_context)};
  });
  const std::size_t groups = detail::boost_call("boost::compute::reduce_by_key", [&] {
    const auto ends = bc::reduce_by_key(sorted.keys.begin(), sorted.keys.end(),
                                        bc::make_constant_iterator<std::uint64_t>(1), group_keys.begin(),
                                        counts.begin(), bc::plus<std::uint64_t>(), queue);
    bc::reduce_by_key(sorted.keys.begin(), sorted.keys.end(),
                      bc::make_transform_iterator(sorted.values.begin(), detail::to_sum_function<V>()),
                      group_keys.begin(), sums.begin(), bc::plus<word>(), queue);
    bc::reduce_by_key(sorted.keys.begin(), sorted.keys.end(), sorted.values.begin(), group_keys.begin(),
                      mins.begin(), detail::minimum_function<V>(), queue);
    bc::reduce_by_key(sorted.keys.begin(), sorted.keys.end(), sorted.values.begin(), group_keys.begin(),
                      maxs.begin(), detail::maximum_function<V>(), queue);
    return static_cast<std::size_t>(ends.first - group_keys.begin());
  });
  t.aggregate_seconds = aggregate_watch.seconds();

  detail::fill_result<K, V>(ctx, out, groups, detail::buffer_of(group_keys), detail::buffer_of(counts),
                            detail::buffer_of(sums), detail::buffer_of(mins), detail::buffer_of(maxs));
  detail::finish_stats(out, ctx, rows, groups, t, wall_start, programs_before, device_bytes, timing);
  return out;
}

/// As above, with the columns on the host (copied to the device first; wall_seconds counts
/// the copy, aggregate_seconds does not).
template <key_type K, value_type V>
baseline_result<K, V> sort_reduce_by_key(context& ctx, const std::vector<K>& keys, const std::vector<V>& values,
                                         baseline_timing* timing = nullptr) {
  const auto wall_start = detail::clock::now();
  detail::check_lengths(keys.size(), values.size());
  auto out = sort_reduce_by_key(ctx, detail::upload(ctx, keys, "the key column"),
                                detail::upload(ctx, values, "the value column"), timing);
  out.stats.wall_seconds = std::chrono::duration<double>(detail::clock::now() - wall_start).count();
  return out;
}

}  // namespace gpuagg::baselines
