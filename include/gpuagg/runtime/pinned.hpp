#pragma once
// Pinned (page-locked) host memory for input columns. A query over a pinned_array copies it to
// the device straight from the array (one DMA per block, no staging copy), where a pageable
// std::vector goes through the driver's pinned staging buffers first.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>

#include "../column.hpp"
#include "../error.hpp"
#include "../types.hpp"
#include "context.hpp"

namespace gpuagg {

/// `size()` elements of T in pinned host memory of `ctx`, mapped for reading and writing.
/// Movable, not copyable; unmapped and freed on destruction.
template <class T>
class pinned_array {
 public:
  pinned_array() = default;
  pinned_array(context& ctx, std::size_t size) : ctx_(&ctx), size_(size) {
    const std::uint64_t bytes = std::max<std::uint64_t>(std::uint64_t(size) * sizeof(T), 1);
    ctx.check_allocation(bytes, "a pinned host array");
    cl_int status = CL_SUCCESS;
    buffer_ = cl::Buffer(ctx.cl_context(), CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_WRITE, bytes, nullptr, &status);
    if (status == CL_MEM_OBJECT_ALLOCATION_FAILURE || status == CL_OUT_OF_RESOURCES ||
        status == CL_OUT_OF_HOST_MEMORY) {
      throw out_of_memory_error(bytes, ctx.info().global_mem_bytes, "a pinned host array");
    }
    detail::check(status, "allocating a pinned host array");
    data_ = static_cast<T*>(ctx.transfer_queue().enqueueMapBuffer(buffer_, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                                                   bytes, nullptr, nullptr, &status));
    detail::check(status, "mapping a pinned host array");
    ctx.register_pinned(data_, bytes);
  }
  pinned_array(pinned_array&& other) noexcept { swap(other); }
  pinned_array& operator=(pinned_array&& other) noexcept {
    pinned_array gone(std::move(*this));
    swap(other);
    return *this;
  }
  pinned_array(const pinned_array&) = delete;
  pinned_array& operator=(const pinned_array&) = delete;
  ~pinned_array() {
    if (data_ == nullptr) return;
    ctx_->unregister_pinned(data_);
    ctx_->transfer_queue().enqueueUnmapMemObject(buffer_, data_);
    ctx_->transfer_queue().finish();
  }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  T* begin() noexcept { return data_; }
  T* end() noexcept { return data_ + size_; }
  const T* begin() const noexcept { return data_; }
  const T* end() const noexcept { return data_ + size_; }
  operator std::span<T>() noexcept { return {data_, size_}; }
  operator std::span<const T>() const noexcept { return {data_, size_}; }

 private:
  void swap(pinned_array& other) noexcept {
    std::swap(ctx_, other.ctx_);
    std::swap(buffer_, other.buffer_);
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
  }

  context* ctx_ = nullptr;
  cl::Buffer buffer_;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace gpuagg

namespace gpuagg::detail {

template <class T>
  requires std::is_arithmetic_v<T>
struct column_traits<pinned_array<T>> {
  static constexpr bool is_column = true;
  using element_type = T;
  static column_data data(const pinned_array<T>& a) { return {a.data(), {}, 0, sizeof(T), a.size()}; }
};

}  // namespace gpuagg::detail
