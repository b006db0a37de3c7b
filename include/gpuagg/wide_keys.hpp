#pragma once
// Keys wider than 64 bits: `group_by(keys(a, b, ...), ...)` whose key columns' bits add up to
// more than one table word. No table word holds such a key, so the query runs in two steps:
//   1. the key dictionary (wide_keys/dictionary.hpp) hashes and compares whole key tuples on
//      the device and gives each distinct one a dense 32-bit id, one id per row;
//   2. the ids are the key of an ordinary query over the same value columns, aggregated with
//      direct addressing over [0, ids) (dense ids need no hashing and no key comparison);
// then the result's ids turn back into key columns. The caller's hashing scheme is about its
// keys; on dense ids direct addressing replaces it. A WHERE clause applies in step 2, so a row
// that fails it may take an id but never makes a group.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "column.hpp"
#include "error.hpp"
#include "hash.hpp"
#include "options.hpp"
#include "query.hpp"
#include "result.hpp"
#include "runtime/context.hpp"
#include "runtime/readback.hpp"
#include "wide_keys/dictionary.hpp"

namespace gpuagg {

namespace detail {

/// Whether key columns of these types need the key dictionary: 2 or more whose bits exceed 64.
template <class... T>
inline constexpr bool wide_key_types = sizeof...(T) >= 2 && (std::size_t{0} + ... + (sizeof(T) * 8)) > 64;

/// The query over ids: the caller's outputs and WHERE clause, with direct addressing.
template <class Query>
struct query_over_ids;
template <class Scheme, class Predicate, class... Outputs>
struct query_over_ids<basic_query<Scheme, Predicate, Outputs...>> {
  static_assert(!Scheme::is_identity,
                "gpuagg: direct_addressing needs keys whose bits fit 64 (a domain of one key word); keys wider "
                "than that are hashed: use select(...) with a hashing scheme");
  using type = typename direct_query_of<basic_query<Scheme, Predicate, Outputs...>>::type;
};

/// Sets a device result's size (a friend of device_result).
struct device_result_access {
  template <class Result>
  static void set_size(Result& r, std::size_t n) {
    r.size_ = n;
  }
};

template <class... K, class... Outputs>
result<std::tuple<K...>, Outputs...> with_keys(result<std::uint32_t, Outputs...>&& by_id,
                                               key_columns_of<K...>&& keys) {
  result<std::tuple<K...>, Outputs...> out;
  out.keys = std::move(keys);
  out.columns = std::move(by_id.columns);
  out.stats = std::move(by_id.stats);
  return out;
}

template <class... K, class... Outputs>
device_result<std::tuple<K...>, Outputs...> with_keys(device_result<std::uint32_t, Outputs...>&& by_id,
                                                      std::vector<cl::Buffer>&& keys) {
  device_result<std::tuple<K...>, Outputs...> out;
  out.keys = keys.front();
  out.key_columns = std::move(keys);
  out.columns = std::move(by_id.columns);
  out.stats = std::move(by_id.stats);
  device_result_access::set_size(out, by_id.size());
  return out;
}

/// Whether host input's query over ids runs on device copies of its columns: the ids kept where
/// the dictionary writes them and the value columns copied once, instead of the ids read back
/// to the host and copied up again with the values by the query's own blocks (two more
/// crossings of PCIe, and no overlap of copies and kernels). Where the ids and the value
/// columns take at most a quarter of the device's memory and each fits one allocation.
inline bool wide_ids_on_device(std::uint64_t rows, const std::vector<column_data>& value_columns,
                               const device_info& device) {
  if (rows == 0) return false;
  std::uint64_t bytes = rows * sizeof(std::uint32_t);
  std::uint64_t largest = bytes;
  for (const auto& c : value_columns) {
    bytes += rows * c.element_size;
    largest = std::max<std::uint64_t>(largest, rows * c.element_size);
  }
  return bytes <= device.global_mem_bytes / 4 && largest <= device.max_alloc_bytes;
}

/// Host value columns copied to new device buffers for the query over ids: pinned columns
/// straight (queued on the compute queue, ahead of the query that reads them), pageable ones
/// through pinned staging where that pays (readback.hpp), else copied before this returns.
template <class ValueTuple>
auto values_on_device(context& ctx, const ValueTuple& value_tuple, std::uint64_t rows) {
  const std::vector<column_data> data = column_data_of(value_tuple);
  std::uint64_t pageable_bytes = 0;
  std::size_t pageable_columns = 0;
  for (const auto& c : data) {
    if (ctx.is_pinned(c.host, rows * c.element_size)) continue;
    pageable_bytes += rows * c.element_size;
    ++pageable_columns;
  }
  host_staging staging(ctx, pageable_bytes, pageable_columns);
  auto& queue = ctx.compute_queue();
  const auto upload = [&]<std::size_t I>(std::integral_constant<std::size_t, I>) {
    using T = column_element_t<std::remove_cvref_t<std::tuple_element_t<I, ValueTuple>>>;
    const std::uint64_t bytes = rows * sizeof(T);
    cl::Buffer buffer = ctx.buffer(bytes, "a value column of the query over ids");
    const bool pinned = ctx.is_pinned(data[I].host, bytes);
    if (staging.active() && !pinned) {
      staging.write(queue, buffer, data[I].host, bytes, "copying a value column to the device");
    } else {
      check(queue.enqueueWriteBuffer(buffer, pinned ? CL_FALSE : CL_TRUE, 0, bytes, data[I].host),
            "copying a value column to the device");
    }
    return device_column<T>(buffer, rows);
  };
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::tuple{upload(std::integral_constant<std::size_t, I>{})...};
  }(std::make_index_sequence<std::tuple_size_v<ValueTuple>>{});
}

/// group_by (or group_by_on_device) with keys wider than 64 bits. `key_columns`: the key
/// columns; `value_tuple`: the value columns; `run_by_id(ids, values, options)` runs the query
/// over ids, a std::span<const std::uint32_t> or a device_column<std::uint32_t>, with the value
/// columns given (the caller's, or their device copies: wide_ids_on_device). `ids_on_device`
/// overrides that rule (tests run both host paths).
template <class... KeyColumns, class ValueTuple, class RunById>
auto wide_group_by(const std::tuple<const KeyColumns&...>& key_columns, const ValueTuple& value_tuple,
                   const options& opts, RunById&& run_by_id, std::optional<bool> ids_on_device = std::nullopt) {
  using clock = std::chrono::steady_clock;
  const auto started = clock::now();
  using dictionary = key_dictionary<column_element_t<KeyColumns>...>;
  constexpr std::size_t key_count = sizeof...(KeyColumns);
  const std::vector<column_data> value_columns = column_data_of(value_tuple);

  // The checks the driver makes, before any work (key columns may have offsets of their own:
  // the dictionary reads each at its own).
  const std::vector<column_data> keys_seen = column_data_of(key_columns);
  std::vector<column_data> all = keys_seen;
  all.insert(all.end(), value_columns.begin(), value_columns.end());
  context& ctx = opts.ctx ? *opts.ctx : default_context();
  check_rows_and_residency(all, key_count, ctx.cl_context());
  const std::uint64_t rows = keys_seen.front().rows;
  const bool on_device = keys_seen.front().on_device();
  if (opts.domain) {
    throw invalid_argument_error("options::domain is a range of one key word (direct_addressing); keys wider than "
                                 "64 bits take none");
  }
  if (opts.block_bytes && *opts.block_bytes == 0) throw invalid_argument_error("block_bytes must be positive");

  dictionary dict(ctx, opts.expected_groups.value_or(0));
  // Keys go through the dictionary in blocks of 2^22 rows (or the caller's block_bytes of key
  // columns): large enough to keep the device busy, small enough that a block run again after
  // a growth costs little.
  const std::uint64_t block_rows = opts.block_bytes ? std::max<std::uint64_t>(*opts.block_bytes / dictionary::key::key_bytes, 1)
                                                    : std::uint64_t{1} << 22;

  options by_id = opts;
  by_id.ctx = &ctx;

  // The result's ids turned into key columns: on the device for a device result; for a host
  // result its ids go up and their keys come down.
  auto attach_keys = [&](auto&& r, double encoding, std::uint64_t held) {
    const auto keys_started = clock::now();
    auto done = [&] {
      if constexpr (requires { r.keys.size(); }) {
        const std::uint64_t n = r.size();
        key_columns_of<column_element_t<KeyColumns>...> keys;
        keys.resize(n);
        if (n > 0) {
          cl::Buffer group_ids = ctx.buffer(n * sizeof(std::uint32_t), "the result's ids");
          check(ctx.compute_queue().enqueueWriteBuffer(group_ids, CL_TRUE, 0, n * sizeof(std::uint32_t),
                                                       r.keys.data()),
                "copying the result's ids to the device");
          const auto out = dict.keys_of(group_ids, n);
          for (std::size_t c = 0; c < key_count; ++c) {
            check(ctx.compute_queue().enqueueReadBuffer(out[c], CL_TRUE, 0, n * dictionary::key::column_bytes[c],
                                                        keys.data(c)),
                  "reading the result's key columns");
          }
        }
        return with_keys(std::move(r), std::move(keys));
      } else {
        auto keys = dict.keys_of(r.keys, r.size());
        return with_keys<column_element_t<KeyColumns>...>(std::move(r), std::move(keys));
      }
    }();
    done.stats.dictionary_seconds = dict.kernel_seconds();
    done.stats.dictionary_growths = dict.growths();
    done.stats.dictionary_launches = dict.launches();
    done.stats.dictionary_keys = dict.ids();
    done.stats.host.dictionary += encoding + std::chrono::duration<double>(clock::now() - keys_started).count();
    done.stats.peak_device_bytes += held;
    done.stats.wall_seconds = std::chrono::duration<double>(clock::now() - started).count();
    return done;
  };
  auto set_domain = [&] {
    const std::uint64_t ids = std::max<std::uint64_t>(dict.ids(), 1);
    by_id.domain = key_domain{std::uint32_t{0}, static_cast<std::uint32_t>(ids - 1)};
    by_id.expected_groups = ids;
  };

  if (on_device) {
    // The ids column shares the value columns' element offset, as the driver requires.
    const std::uint64_t offset = value_columns.empty() ? 0 : value_columns.front().offset;
    cl::Buffer ids = ctx.buffer((offset + std::max<std::uint64_t>(rows, 1)) * sizeof(std::uint32_t),
                                "the key dictionary's ids");
    std::vector<kernels::key_column_arg<cl::Buffer>> device_keys(key_count);
    for (std::size_t c = 0; c < key_count; ++c) device_keys[c] = {keys_seen[c].device, keys_seen[c].offset};
    for (std::uint64_t first = 0; first < rows; first += block_rows) {
      auto block = device_keys;
      for (auto& column : block) column.offset += first;
      dict.encode(block, std::min(block_rows, rows - first), ids, offset + first);
    }
    set_domain();
    const double encoding = std::chrono::duration<double>(clock::now() - started).count();
    return attach_keys(run_by_id(device_column<std::uint32_t>(ids, rows, offset), value_tuple, by_id), encoding,
                       dict.device_bytes() + (offset + rows) * sizeof(std::uint32_t));
  }
  std::array<const void*, key_count> hosts{};
  for (std::size_t c = 0; c < key_count; ++c) hosts[c] = keys_seen[c].host;
  if (ids_on_device.value_or(wide_ids_on_device(rows, value_columns, ctx.info())) && rows > 0) {
    cl::Buffer ids = ctx.buffer(rows * sizeof(std::uint32_t), "the key dictionary's ids");
    dict.encode_host(hosts, rows, nullptr, block_rows, &ids);
    const auto device_values = values_on_device(ctx, value_tuple, rows);
    set_domain();
    const double encoding = std::chrono::duration<double>(clock::now() - started).count();
    std::uint64_t held = dict.device_bytes() + rows * sizeof(std::uint32_t);
    for (const auto& c : value_columns) held += rows * c.element_size;
    return attach_keys(run_by_id(device_column<std::uint32_t>(ids, rows), device_values, by_id), encoding, held);
  }
  std::vector<std::uint32_t> ids(rows);
  dict.encode_host(hosts, rows, ids.data(), block_rows);
  set_domain();
  const double encoding = std::chrono::duration<double>(clock::now() - started).count();
  return attach_keys(run_by_id(std::span<const std::uint32_t>(ids), value_tuple, by_id), encoding, dict.device_bytes());
}

}  // namespace detail

}  // namespace gpuagg
