#pragma once
// Typed errors: each carries what a user needs to act (the OpenCL error name, the build log
// with the offending source line, the argument or the number of bytes asked for).

#include <cstdint>
#include <stdexcept>
#include <string>

namespace gpuagg {

/// Base of every error gpuagg throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// No OpenCL platform or device, or GPUAGG_DEVICE matches none.
class no_device_error : public error {
 public:
  using error::error;
};

/// An OpenCL call failed; `code()` is the OpenCL status, `name()` its symbolic name.
class opencl_error : public error {
 public:
  opencl_error(std::int32_t code, std::string name, const std::string& what_failed)
      : error(what_failed + " failed: " + name + " (" + std::to_string(code) + ")"),
        code_(code), name_(std::move(name)) {}
  std::int32_t code() const noexcept { return code_; }
  const std::string& name() const noexcept { return name_; }

 private:
  std::int32_t code_;
  std::string name_;
};

/// The device could not provide the memory a query needs.
class out_of_memory_error : public error {
 public:
  out_of_memory_error(std::uint64_t requested_bytes, std::uint64_t limit_bytes, const std::string& what)
      : error("device memory exhausted: " + what + " needs " + std::to_string(requested_bytes) +
              " bytes, the device allows " + std::to_string(limit_bytes)),
        requested_bytes_(requested_bytes), limit_bytes_(limit_bytes) {}
  std::uint64_t requested_bytes() const noexcept { return requested_bytes_; }
  std::uint64_t limit_bytes() const noexcept { return limit_bytes_; }

 private:
  std::uint64_t requested_bytes_;
  std::uint64_t limit_bytes_;
};

/// An OpenCL program failed to build; `log()` is the compiler's log, `source_line()` the first
/// line the log points at (empty when the log names none).
class build_error : public error {
 public:
  build_error(const std::string& message, std::string log, std::string source_line)
      : error(message), log_(std::move(log)), source_line_(std::move(source_line)) {}
  const std::string& log() const noexcept { return log_; }
  const std::string& source_line() const noexcept { return source_line_; }

 private:
  std::string log_;
  std::string source_line_;
};

/// A caller's argument is unusable (mismatched column lengths, a bad option).
class invalid_argument_error : public error {
 public:
  using error::error;
};

/// A key lies outside the [min, max] domain given for the identity ("perfect") scheme.
class key_out_of_domain_error : public invalid_argument_error {
 public:
  using invalid_argument_error::invalid_argument_error;
};

/// The device lacks something the query needs (an OpenCL extension, local memory).
class unsupported_error : public error {
 public:
  using error::error;
};

}  // namespace gpuagg
