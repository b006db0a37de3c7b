#pragma once
// The vocabulary of kernel argument structs. Each kernel family's header (table.hpp,
// partition.hpp, estimate.hpp, aggregate.hpp, and one per strategy) keeps, next to a kernel's
// OpenCL signature, a struct with one named field per parameter and a for_each() that visits
// the fields in the signature's order: the one place that order is written down. The driver
// fills the fields by name and hands the struct to a binder (driver/kernel_binder.hpp), which
// sets the arguments in that order and checks that their count matches the kernel's.
//
// The structs are templates on the buffer type, so this layer stays free of OpenCL: source
// generation and its tests never see the runtime.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace gpuagg::detail::kernels {

/// A table as kernels take it (`KEY_T* P##keys ACC_PARAMS(AS, P)`): its key buffer (a bitmap
/// for direct addressing, the records of an interleaved table), then one buffer per
/// accumulator (for an interleaved table each names the records too).
template <class Buffer>
struct table_arg {
  Buffer keys;
  std::vector<Buffer> accumulators;
};

/// A `__local` parameter: the bytes of local memory the launch gives it.
struct local_memory {
  std::uint64_t bytes = 0;
};

}  // namespace gpuagg::detail::kernels
