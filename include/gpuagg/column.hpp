#pragma once
// Input and output columns: host memory (std::vector, std::span) or device buffers
// (cl::Buffer, boost::compute::vector) that gpuagg reads in place.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "error.hpp"
#include "runtime/opencl.hpp"
#include "types.hpp"

namespace gpuagg {

/// A column of `size` elements of T in an OpenCL buffer, starting `offset` elements in.
template <value_type T>
struct device_column {
  using element_type = T;
  cl::Buffer buffer;
  std::size_t size = 0;
  std::size_t offset = 0;

  device_column() = default;
  device_column(cl::Buffer buffer_, std::size_t size_, std::size_t offset_ = 0)
      : buffer(std::move(buffer_)), size(size_), offset(offset_) {}

  /// Any container that exposes its OpenCL buffer, e.g. boost::compute::vector<T>.
  template <class Container>
    requires requires(const Container& c) {
      { c.get_buffer().get() } -> std::convertible_to<cl_mem>;
      { c.size() } -> std::convertible_to<std::size_t>;
      typename Container::value_type;
    } && std::same_as<typename Container::value_type, T>
  explicit device_column(const Container& container)
      : buffer(container.get_buffer().get(), /*retainObject=*/true), size(container.size()) {}
};

template <class Container>
device_column(const Container&) -> device_column<typename Container::value_type>;

namespace detail {

/// A column as the driver sees it: host pointer or device buffer, element size, rows.
struct column_data {
  const void* host = nullptr;
  cl::Buffer device;
  std::size_t offset = 0;
  std::size_t element_size = 0;
  std::size_t rows = 0;
  bool on_device() const noexcept { return host == nullptr && device() != nullptr; }
};

template <class T>
struct column_traits {
  static constexpr bool is_column = false;
};
template <class T, class A>
  requires std::is_arithmetic_v<T>
struct column_traits<std::vector<T, A>> {
  static constexpr bool is_column = true;
  using element_type = T;
  static column_data data(const std::vector<T, A>& v) { return {v.data(), {}, 0, sizeof(T), v.size()}; }
};
template <class T, std::size_t E>
  requires std::is_arithmetic_v<T>
struct column_traits<std::span<T, E>> {
  static constexpr bool is_column = true;
  using element_type = std::remove_const_t<T>;
  static column_data data(std::span<T, E> s) { return {s.data(), {}, 0, sizeof(T), s.size()}; }
};
template <value_type T>
struct column_traits<device_column<T>> {
  static constexpr bool is_column = true;
  using element_type = T;
  static column_data data(const device_column<T>& c) { return {nullptr, c.buffer, c.offset, sizeof(T), c.size}; }
};

}  // namespace detail

/// Anything group_by takes as a column.
template <class C>
concept column = detail::column_traits<std::remove_cvref_t<C>>::is_column;

template <column C>
using column_element_t = typename detail::column_traits<std::remove_cvref_t<C>>::element_type;

namespace detail {

/// The columns of a tuple (of columns or references to them) as the driver sees them.
template <class ColumnTuple>
std::vector<column_data> column_data_of(const ColumnTuple& columns) {
  std::vector<column_data> list;
  std::apply([&](const auto&... c) { (list.push_back(column_traits<std::remove_cvref_t<decltype(c)>>::data(c)), ...); },
             columns);
  return list;
}

/// Throws invalid_argument_error unless a query's columns (its `key_columns` key columns first)
/// have one length and are all on the host or all on the device, the device's columns in buffers
/// of `runs_in` (the context that runs the query: OpenCL leaves a kernel's use of another
/// context's buffer undefined).
inline void check_rows_and_residency(const std::vector<column_data>& columns, std::size_t key_columns,
                                     const cl::Context& runs_in) {
  if (columns.size() < key_columns) throw invalid_argument_error("group_by needs its key column(s)");
  const auto rows = columns.front().rows;
  for (std::size_t i = 1; i < columns.size(); ++i) {
    if (columns[i].rows != rows) {
      const std::string name = i < key_columns ? "key column " + std::to_string(i)
                                               : "value column " + std::to_string(i - key_columns);
      throw invalid_argument_error("column lengths differ: the key column has " + std::to_string(rows) + " rows, " +
                                   name + " has " + std::to_string(columns[i].rows));
    }
  }
  const bool device = columns.front().on_device();
  for (const auto& c : columns) {
    if (c.on_device() != device) throw invalid_argument_error("columns must be all on the host or all on the device");
    if (device && c.device.getInfo<CL_MEM_CONTEXT>()() != runs_in()) {
      throw invalid_argument_error(
          "a device column lives in another OpenCL context than the device that runs the query (options::ctx, "
          "or the member of a device set whose part it is)");
    }
  }
}

}  // namespace detail

}  // namespace gpuagg
