#pragma once
// Sets a kernel's arguments from its argument struct (kernels/*.hpp): the struct's for_each()
// visits its fields in the order of the kernel's signature, and the binder sets each in turn,
// expanding tables, lists and the parameter lists a build option adds. It then checks that it
// set exactly as many arguments as the kernel has, so a struct that drifts from its kernel's
// signature fails loudly at its first launch instead of passing wrong values.

#include <concepts>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../error.hpp"
#include "../kernels/args.hpp"
#include "../runtime/opencl.hpp"

namespace gpuagg::detail {

class kernel_binder {
 public:
  kernel_binder(cl::Kernel& kernel, const char* what) : kernel_(kernel), what_(what) {}

  void operator()(const cl::Buffer& buffer) { set(buffer); }
  void operator()(const kernels::local_memory& local) { set(cl::Local(static_cast<std::size_t>(local.bytes))); }
  template <class T>
    requires std::is_arithmetic_v<T>
  void operator()(T value) {
    set(value);
  }
  void operator()(const kernels::table_arg<cl::Buffer>& table) {
    set(table.keys);
    for (const auto& accumulator : table.accumulators) set(accumulator);
  }
  template <class T>
  void operator()(const std::vector<T>& list) {
    for (const auto& item : list) (*this)(item);
  }
  template <class T>
  void operator()(const std::optional<T>& maybe) {
    if (maybe) (*this)(*maybe);
  }
  template <class Args>
    requires requires(const Args& args, kernel_binder& binder) { args.for_each(binder); }
  void operator()(const Args& args) {
    args.for_each(*this);
  }

  /// Throws unless every parameter of the kernel received an argument.
  void check_complete() const {
    cl_uint expected = 0;
    check(kernel_.getInfo(CL_KERNEL_NUM_ARGS, &expected), "reading a kernel's argument count");
    if (expected != index_) {
      throw error("internal error: " + std::string(what_) + " takes " + std::to_string(expected) +
                  " arguments, its argument struct gave " + std::to_string(index_));
    }
  }

 private:
  template <class T>
  void set(const T& value) {
    const cl_int status = kernel_.setArg(index_, value);
    if (status != CL_SUCCESS) {
      check(status, ("setting argument " + std::to_string(index_) + " of " + what_).c_str());
    }
    ++index_;
  }

  cl::Kernel& kernel_;
  const char* what_;
  cl_uint index_ = 0;
};

/// Sets every argument of `kernel` from `args...` (argument structs, in order) and checks that
/// they were all of its parameters.
template <class... Args>
void bind_arguments(cl::Kernel& kernel, const char* what, const Args&... args) {
  kernel_binder binder(kernel, what);
  (binder(args), ...);
  binder.check_complete();
}

}  // namespace gpuagg::detail
