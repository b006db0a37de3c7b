#pragma once
// OpenCL runtime: device choice (GPUAGG_DEVICE), context and queues, the program and kernel
// cache per (context, device), and typed errors for everything that can go wrong there.

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

#include "../device_info.hpp"
#include "binary_cache.hpp"
#include "buffer_pool.hpp"
#include "opencl.hpp"

namespace gpuagg {

namespace detail {

inline std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

inline std::vector<std::pair<cl::Platform, cl::Device>> all_devices() {
  std::vector<cl::Platform> platforms;
  const cl_int status = cl::Platform::get(&platforms);
  if (status != CL_SUCCESS && status != -1001 /* CL_PLATFORM_NOT_FOUND_KHR */) {
    throw no_device_error("no OpenCL platform: clGetPlatformIDs returned " + opencl_error_name(status));
  }
  std::vector<std::pair<cl::Platform, cl::Device>> found;
  for (auto& platform : platforms) {
    std::vector<cl::Device> devices;
    if (platform.getDevices(CL_DEVICE_TYPE_ALL, &devices) != CL_SUCCESS) continue;
    for (auto& device : devices) found.emplace_back(platform, device);
  }
  return found;
}

inline std::string describe(const std::pair<cl::Platform, cl::Device>& entry) {
  return entry.first.getInfo<CL_PLATFORM_NAME>() + " / " + entry.second.getInfo<CL_DEVICE_NAME>();
}

/// Picks the device named by `selector` (an index into all devices of all platforms; "gpu:N" or
/// "cpu:N", the N-th device of that type over all platforms, which stays the same whichever
/// other platforms are installed; or a case-insensitive substring of "platform / device";
/// surrounding whitespace ignored); empty: the first GPU, else the first. A selector that names
/// no device (an index out of range or beyond any integer, a sign, only whitespace, a name that
/// matches none) is no_device_error listing the devices there are.
inline cl::Device choose_device(std::string_view selector) {
  const auto devices = all_devices();
  if (devices.empty()) {
    throw no_device_error("no OpenCL device found (is an OpenCL driver such as pocl-opencl-icd installed?)");
  }
  std::string listing;
  for (std::size_t i = 0; i < devices.size(); ++i) listing += "\n  " + std::to_string(i) + ": " + describe(devices[i]);
  if (selector.empty()) {
    for (const auto& entry : devices) {
      if (entry.second.getInfo<CL_DEVICE_TYPE>() & CL_DEVICE_TYPE_GPU) return entry.second;
    }
    return devices.front().second;
  }
  const auto is_space = [](unsigned char c) { return std::isspace(c) != 0; };
  const auto is_digit = [](unsigned char c) { return std::isdigit(c) != 0; };
  std::string_view trimmed = selector;
  while (!trimmed.empty() && is_space(trimmed.front())) trimmed.remove_prefix(1);
  while (!trimmed.empty() && is_space(trimmed.back())) trimmed.remove_suffix(1);
  if (trimmed.empty()) throw no_device_error("GPUAGG_DEVICE is blank; devices:" + listing);
  const std::string wanted(trimmed);
  // A number, signed or not, is meant as an index.
  const bool sign = wanted.front() == '-' || wanted.front() == '+';
  const std::string_view digits = trimmed.substr(sign ? 1 : 0);
  // Digits only, as an index; none for anything else, and for a number beyond std::size_t
  // (from_chars, not stoul: such an index is a wrong index, not std::out_of_range).
  const auto index_of = [&](std::string_view text) -> std::optional<std::size_t> {
    std::size_t index = 0;
    if (text.empty() || !std::all_of(text.begin(), text.end(), is_digit) ||
        std::from_chars(text.data(), text.data() + text.size(), index).ec != std::errc()) {
      return std::nullopt;
    }
    return index;
  };
  if (!digits.empty() && std::all_of(digits.begin(), digits.end(), is_digit)) {
    const auto index = index_of(digits);
    if (!sign && index && *index < devices.size()) return devices[*index].second;
    throw no_device_error("GPUAGG_DEVICE=" + wanted + " is no device index (0 to " +
                          std::to_string(devices.size() - 1) + "); devices:" + listing);
  }
  const std::string lowered = lower(wanted);
  for (const auto& [prefix, type] : {std::pair<std::string_view, cl_device_type>{"gpu:", CL_DEVICE_TYPE_GPU},
                                     std::pair<std::string_view, cl_device_type>{"cpu:", CL_DEVICE_TYPE_CPU}}) {
    if (!lowered.starts_with(prefix)) continue;
    const auto index = index_of(std::string_view(lowered).substr(prefix.size()));
    std::size_t of_type = 0;
    for (const auto& entry : devices) {
      if ((entry.second.getInfo<CL_DEVICE_TYPE>() & type) == 0) continue;
      if (index == of_type) return entry.second;
      ++of_type;
    }
    throw no_device_error("GPUAGG_DEVICE=" + wanted + " names no " + std::string(prefix.substr(0, 3)) + " (there " +
                          (of_type == 1 ? "is 1" : "are " + std::to_string(of_type)) + "; " + std::string(prefix) +
                          "0 is the first); devices:" + listing);
  }
  for (const auto& entry : devices) {
    if (lower(describe(entry)).find(lowered) != std::string::npos) return entry.second;
  }
  throw no_device_error("GPUAGG_DEVICE=\"" + wanted + "\" matches no device; devices:" + listing);
}

/// The line number of a compiler log's first "<file>:LINE:COL" (clang-based compilers name the
/// file "<source>" or a temporary ".cl" file, NVIDIA's "<kernel>"), or nothing. Scanned by
/// hand: <regex> in this header cost every file that includes the library its compile time,
/// and GCC 12's sanitized builds warnings inside libstdc++'s regex.
inline std::optional<unsigned long> line_in_log(const std::string& log) {
  static constexpr std::string_view files[] = {".cl", "<source>", "<kernel>", "<program source>"};
  // The end of the digits from `at` (at itself where there are none).
  const auto digits_end = [&log](std::size_t at) {
    while (at < log.size() && std::isdigit(static_cast<unsigned char>(log[at])) != 0) ++at;
    return at;
  };
  for (std::size_t at = 0; at < log.size(); ++at) {
    for (const std::string_view file : files) {
      if (log.compare(at, file.size(), file) != 0) continue;
      const std::size_t line_begin = at + file.size() + 1;  // past "FILE:"
      if (line_begin > log.size() || log[line_begin - 1] != ':') continue;
      const std::size_t line_end = digits_end(line_begin);
      if (line_end == line_begin || line_end >= log.size() || log[line_end] != ':') continue;
      if (digits_end(line_end + 1) == line_end + 1) continue;  // no column
      unsigned long line = 0;
      if (std::from_chars(log.data() + line_begin, log.data() + line_end, line).ec != std::errc()) return {};
      return line;
    }
  }
  return {};
}

/// The line of `source` that a compiler log's first location points at (line_in_log).
inline std::string source_line_from_log(const std::string& log, const std::string& source) {
  const std::optional<unsigned long> found = line_in_log(log);
  if (!found) return {};
  const unsigned long line = *found;
  std::istringstream lines(source);
  std::string text;
  for (std::size_t i = 1; std::getline(lines, text); ++i) {
    if (i == line) return "line " + std::to_string(line) + ": " + text;
  }
  return {};
}

/// The device's architecture (device_info::architecture): NVIDIA's compute capability through
/// cl_nv_device_attribute_query, AMD's gfx name (its OpenCL device name), "cpu" for CPU devices.
inline std::string architecture_of(const cl::Device& device, const std::string& extensions, const std::string& name) {
  if (device.getInfo<CL_DEVICE_TYPE>() & CL_DEVICE_TYPE_CPU) return "cpu";
  if (extensions.find("cl_nv_device_attribute_query") != std::string::npos) {
    constexpr cl_device_info compute_capability_major = 0x4000;  // CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV
    constexpr cl_device_info compute_capability_minor = 0x4001;  // CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV
    cl_uint major = 0;
    cl_uint minor = 0;
    if (clGetDeviceInfo(device(), compute_capability_major, sizeof(major), &major, nullptr) == CL_SUCCESS &&
        clGetDeviceInfo(device(), compute_capability_minor, sizeof(minor), &minor, nullptr) == CL_SUCCESS) {
      return "sm_" + std::to_string(major) + std::to_string(minor);
    }
  }
  if (name.rfind("gfx", 0) == 0) return name.substr(0, name.find_first_of(" :"));
  return {};
}

/// The build-option slot of each PoCL device instance with a live context
/// (context::build_options adds "-D GPUAGG_POCL_SLOT=n" from slot 1 on). PoCL 3.1 keeps one
/// process-wide cache of loaded kernel binaries, keyed by the program's build hash, which covers
/// the build options but not the device. Each launch takes the entry that fits its grid; its
/// release drops a reference from the first entry of the same kernel and work-group size, which
/// may be another's. Two devices running one kernel at once, at different grid widths, then
/// drive an entry below zero and PoCL aborts (common.c: "found->ref_count > 0"). A slot belongs
/// to a device and an instance (context's constructor: device_set's members that name one device
/// twice are instances 0 and 1), so contexts that may run at once build programs of different
/// hashes, while a later context on the same device loads what an earlier one built. A slot is
/// reused once no context holds it.
class pocl_build_slots {
 public:
  static unsigned acquire(cl_device_id device, unsigned instance) {
    auto& state = shared();
    const std::lock_guard lock(state.mutex);
    const auto key = std::pair(device, instance);
    if (auto found = state.holders.find(key); found != state.holders.end()) {
      ++found->second.contexts;
      return found->second.slot;
    }
    unsigned slot = 0;
    while (std::any_of(state.holders.begin(), state.holders.end(),
                       [slot](const auto& entry) { return entry.second.slot == slot; })) {
      ++slot;
    }
    state.holders.emplace(key, holder{slot, 1});
    return slot;
  }
  static void release(cl_device_id device, unsigned instance) {
    auto& state = shared();
    const std::lock_guard lock(state.mutex);
    const auto found = state.holders.find(std::pair(device, instance));
    if (found != state.holders.end() && --found->second.contexts == 0) state.holders.erase(found);
  }

 private:
  struct holder {
    unsigned slot;
    std::size_t contexts;
  };
  struct state_type {
    std::mutex mutex;
    std::map<std::pair<cl_device_id, unsigned>, holder> holders;
  };
  static state_type& shared() {
    static state_type state;
    return state;
  }
};

inline bool is_pocl(const std::string& platform_name) { return platform_name == "Portable Computing Language"; }

inline bool env_flag(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' && std::string_view(value) != "0";
}

}  // namespace detail

/// An OpenCL context on one device with its queues and its program cache. Programs and
/// kernels are cached per context and device, keyed by the full source and build options, so a
/// second query of the same shape builds nothing.
class context {
 public:
  /// The device GPUAGG_DEVICE names, else the first GPU, else the first device.
  context() : context(detail::choose_device(std::getenv("GPUAGG_DEVICE") ? std::getenv("GPUAGG_DEVICE") : "")) {}

  /// `instance`: which of several contexts on one device that may run queries at once this is
  /// (device_set's members naming one device twice); on PoCL each instance builds its programs
  /// with options of its own (detail::pocl_build_slots).
  explicit context(const cl::Device& device, unsigned instance = 0)
      : context(cl::Context(device), device, instance) {}

  /// Wraps an existing context (e.g. a Boost.Compute one) so device buffers from it can be used.
  context(const cl::Context& cl_context, const cl::Device& device, unsigned instance = 0)
      : context_(cl_context), device_(device), instance_(instance) {
    cl_int status = CL_SUCCESS;
    compute_queue_ = cl::CommandQueue(context_, device_, CL_QUEUE_PROFILING_ENABLE, &status);
    detail::check(status, "creating the compute queue");
    transfer_queue_ = cl::CommandQueue(context_, device_, CL_QUEUE_PROFILING_ENABLE, &status);
    detail::check(status, "creating the transfer queue");
    read_info();
    if (detail::is_pocl(info_.platform_name)) pocl_slot_ = detail::pocl_build_slots::acquire(device_(), instance_);
    // Keep at most an eighth of device memory (and 8 GiB) of unused working buffers.
    pool_.set_capacity(std::min<std::uint64_t>(info_.global_mem_bytes / 8, std::uint64_t{8} << 30));
  }

  context(const context&) = delete;
  context& operator=(const context&) = delete;
  ~context() {
    compute_queue_.finish();
    transfer_queue_.finish();
    pool_.clear(&transfer_queue_);
    if (pocl_slot_) detail::pocl_build_slots::release(device_(), instance_);
  }

  const cl::Context& cl_context() const noexcept { return context_; }
  const cl::Device& device() const noexcept { return device_; }
  const device_info& info() const noexcept { return info_; }
  cl::CommandQueue& compute_queue() noexcept { return compute_queue_; }
  cl::CommandQueue& transfer_queue() noexcept { return transfer_queue_; }

  /// Program text that outlives every context and never changes: the library's generated
  /// sources (constexpr fixed_strings of static storage). The context finds their programs by
  /// the text's address and length, without copying or comparing the text, which is tens of
  /// kilobytes a program, asked for several times a query (a key of the whole text took about
  /// 20 us of a query's set-up in copies and compares).
  struct lasting_source {
    std::string_view text;
  };

  /// A program to build ahead of its use (prefetch); `lasting`: the source is a lasting_source.
  struct program_request {
    std::string_view source;
    std::string options;
    bool lasting = false;
  };

  /// The program built from `source` with `options`, built once per context: loaded from the
  /// on-disk binary cache (binary_cache.hpp) where an earlier process built it, else built from
  /// source and stored there. Threads asking for the same program wait for one build.
  /// GPUAGG_BUILD_OPTIONS is appended to every build's options (e.g. "-cl-nv-verbose" or
  /// "-cl-nv-maxrregcount=64" on NVIDIA); GPUAGG_SHOW_BUILD_LOG=1 prints each build's log.
  cl::Program program(std::string_view source, const std::string& requested_options = {}) {
    const std::string options = build_options(requested_options);
    const std::string key = cache_key(source, options);
    std::promise<cl::Program> promise;
    std::shared_future<cl::Program> future;
    bool builder = false;
    {
      const std::lock_guard lock(mutex_);
      if (auto found = programs_.find(key); found != programs_.end()) {
        future = found->second;
      } else {
        future = promise.get_future().share();
        programs_.emplace(key, future);
        builder = true;
      }
    }
    if (builder) {
      try {
        promise.set_value(build(source, options));
      } catch (...) {
        {
          const std::lock_guard lock(mutex_);
          programs_.erase(key);  // a later call tries again
        }
        promise.set_exception(std::current_exception());
      }
    }
    return future.get();
  }

  /// The program of a lasting source (lasting_source), found by the text's address where this
  /// context made it before, else as program(text, options) finds or builds it.
  cl::Program program(lasting_source source, const std::string& requested_options = {}) {
    address_key key{source.text.data(), source.text.size(), build_options(requested_options)};
    {
      const std::lock_guard lock(mutex_);
      if (auto found = by_address_.find(key); found != by_address_.end()) return found->second;
    }
    cl::Program made = program(source.text, requested_options);
    const std::lock_guard lock(mutex_);
    by_address_.emplace(std::move(key), made);
    return made;
  }

  /// Whether this context has made the program of a lasting source with these options: asking
  /// for it then costs no build and no read of the cache on disk.
  bool has_program(lasting_source source, const std::string& requested_options = {}) const {
    const address_key key{source.text.data(), source.text.size(), build_options(requested_options)};
    const std::lock_guard lock(mutex_);
    return by_address_.contains(key);
  }

  /// Builds every requested program not built yet, concurrently, and waits for them: a query
  /// that needs several programs waits for the longest build, not for their sum. Rethrows the
  /// first failure.
  void prefetch(const std::vector<program_request>& requests) {
    std::vector<const program_request*> missing;
    {
      const std::lock_guard lock(mutex_);
      for (const auto& request : requests) {
        const std::string options = build_options(request.options);
        const bool made = request.lasting
                              ? by_address_.contains(address_key{request.source.data(), request.source.size(), options})
                              : programs_.contains(cache_key(request.source, options));
        if (!made) missing.push_back(&request);
      }
    }
    const auto fetch = [this](const program_request& request) {
      (void)(request.lasting ? program(lasting_source{request.source}, request.options)
                             : program(request.source, request.options));
    };
    if (missing.size() <= 1) {  // nothing to overlap
      for (const auto* request : missing) fetch(*request);
      return;
    }
    std::vector<std::future<void>> pending;
    pending.reserve(missing.size());
    for (const auto* request : missing) {
      pending.push_back(std::async(std::launch::async, [&fetch, request] { fetch(*request); }));
    }
    for (auto& p : pending) p.wait();
    for (auto& p : pending) p.get();
  }

  /// The on-disk binary cache's activity in this context.
  struct program_cache_counts {
    std::size_t loaded = 0;     ///< programs loaded from a binary
    std::size_t stale = 0;      ///< entries of another driver or source, rebuilt
    std::size_t corrupt = 0;    ///< unreadable entries, rebuilt
    std::size_t stored = 0;     ///< binaries written
    std::string last_warning;   ///< the last problem reported
  };
  program_cache_counts program_cache() const {
    const std::lock_guard lock(mutex_);
    return cache_counts_;
  }
  const detail::binary_cache& binary_cache() const noexcept { return binaries_; }

  /// A kernel of a cached program. Kernels carry arguments, so each caller gets its own copy.
  cl::Kernel kernel(const cl::Program& program, const char* name) {
    cl_int status = CL_SUCCESS;
    cl::Kernel kernel(program, name, &status);
    detail::check(status, (std::string("creating kernel ") + name).c_str());
    return kernel;
  }

  /// How many programs this context has built from source (not found in memory or on disk).
  std::size_t programs_built() const {
    const std::lock_guard lock(mutex_);
    return builds_;
  }

  /// A working buffer of at least `bytes` from the pool, or newly allocated; give it back with
  /// recycle(). Returns the buffer and its size class (what recycle() takes).
  std::pair<cl::Buffer, std::uint64_t> pooled_buffer(std::uint64_t bytes, const std::string& what) {
    const std::uint64_t size_class = detail::pool_size_class(std::max<std::uint64_t>(bytes, 1));
    if (cl::Buffer reused = pool_.take_device(size_class); reused()) return {reused, size_class};
    return {buffer(size_class, what), size_class};
  }
  void recycle(std::uint64_t size_class, cl::Buffer buffer) { pool_.give_device(size_class, std::move(buffer)); }

  /// A pinned (page-locked) host buffer of at least `bytes`, mapped for writing, from the pool.
  std::pair<detail::buffer_pool::pinned_buffer, std::uint64_t> pooled_pinned(std::uint64_t bytes,
                                                                            const std::string& what) {
    const std::uint64_t size_class = detail::pool_size_class(std::max<std::uint64_t>(bytes, 1));
    if (auto reused = pool_.take_pinned(size_class); reused.buffer()) return {reused, size_class};
    check_allocation(size_class, what);
    cl_int status = CL_SUCCESS;
    detail::buffer_pool::pinned_buffer fresh;
    fresh.buffer = cl::Buffer(context_, CL_MEM_ALLOC_HOST_PTR | CL_MEM_READ_ONLY, size_class, nullptr, &status);
    detail::check(status, ("allocating " + what).c_str());
    fresh.mapped = transfer_queue_.enqueueMapBuffer(fresh.buffer, CL_TRUE, CL_MAP_WRITE, 0, size_class, nullptr,
                                                    nullptr, &status);
    detail::check(status, ("mapping " + what).c_str());
    return {fresh, size_class};
  }
  void recycle_pinned(std::uint64_t size_class, detail::buffer_pool::pinned_buffer buffer) {
    pool_.give_pinned(size_class, std::move(buffer), transfer_queue_);
  }

  /// Whether [data, data + bytes) lies inside pinned host memory this context allocated
  /// (pinned_array): the driver then copies from it directly, without staging.
  bool is_pinned(const void* data, std::uint64_t bytes) const {
    const std::lock_guard lock(mutex_);
    const auto* begin = static_cast<const char*>(data);
    auto found = pinned_ranges_.upper_bound(begin);
    if (found == pinned_ranges_.begin()) return false;
    --found;
    return begin >= found->first && begin + bytes <= found->first + found->second;
  }
  void register_pinned(const void* data, std::uint64_t bytes) {
    const std::lock_guard lock(mutex_);
    pinned_ranges_[static_cast<const char*>(data)] = bytes;
  }
  void unregister_pinned(const void* data) {
    const std::lock_guard lock(mutex_);
    pinned_ranges_.erase(static_cast<const char*>(data));
  }

  /// Bytes of unused working buffers the pool keeps for later queries.
  std::uint64_t pooled_bytes() const { return pool_.kept_bytes(); }

  /// Throws out_of_memory_error when `bytes` cannot be one allocation or exceed the device.
  void check_allocation(std::uint64_t bytes, const std::string& what) const {
    if (bytes > info_.max_alloc_bytes) throw out_of_memory_error(bytes, info_.max_alloc_bytes, what);
    if (bytes > info_.global_mem_bytes) throw out_of_memory_error(bytes, info_.global_mem_bytes, what);
  }

  /// A device buffer of `bytes` bytes (at least 1), with the allocation checked first.
  cl::Buffer buffer(std::uint64_t bytes, const std::string& what, cl_mem_flags flags = CL_MEM_READ_WRITE) {
    bytes = std::max<std::uint64_t>(bytes, 1);
    check_allocation(bytes, what);
    cl_int status = CL_SUCCESS;
    cl::Buffer buffer(context_, flags, static_cast<std::size_t>(bytes), nullptr, &status);
    if (status == CL_MEM_OBJECT_ALLOCATION_FAILURE || status == CL_OUT_OF_RESOURCES ||
        status == CL_INVALID_BUFFER_SIZE || status == CL_OUT_OF_HOST_MEMORY) {
      throw out_of_memory_error(bytes, info_.global_mem_bytes, what);
    }
    detail::check(status, ("allocating " + what).c_str());
    return buffer;
  }

 private:
  std::string build_options(const std::string& requested) const {
    std::string options = requested;
    if (pocl_slot_.value_or(0) > 0) {  // see detail::pocl_build_slots
      options += options.empty() ? "" : " ";
      options += "-D GPUAGG_POCL_SLOT=" + std::to_string(*pocl_slot_);
    }
    if (const char* extra = std::getenv("GPUAGG_BUILD_OPTIONS"); extra != nullptr && *extra != '\0') {
      options += options.empty() ? "" : " ";
      options += extra;
    }
    return options;
  }
  static std::string cache_key(std::string_view source, const std::string& options) {
    std::string key = options;
    key += '\n';
    key += source;
    return key;
  }

  /// A program from the binary cache, else from source (stored in the cache after).
  cl::Program build(std::string_view source, const std::string& options) {
    if (detail::env_flag("GPUAGG_SHOW_KERNELS")) {
      const std::lock_guard lock(mutex_);
      std::cerr << "// gpuagg: building OpenCL program (" << source.size() << " bytes, options \"" << options
                << "\")\n"
                << source << '\n';
    }
    const detail::binary_identity id{info_.name, info_.platform_name, info_.driver_version, options, source};
    if (binaries_.enabled()) {
      auto loaded = binaries_.load(id);
      if (loaded.status == detail::binary_cache::outcome::hit) {
        cl_int status = CL_SUCCESS;
        cl::Program program(context_, std::vector<cl::Device>{device_}, cl::Program::Binaries{loaded.binary}, nullptr,
                            &status);
        if (status == CL_SUCCESS) status = program.build(std::vector<cl::Device>{device_}, options.c_str());
        if (status == CL_SUCCESS) {
          const std::lock_guard lock(mutex_);
          ++cache_counts_.loaded;
          return program;
        }
        loaded.status = detail::binary_cache::outcome::stale;
        loaded.problem = "was rejected by the driver (" + detail::opencl_error_name(status) + ")";
      }
      if (loaded.status != detail::binary_cache::outcome::miss) {
        const std::string warning = "gpuagg: warning: program cache entry " + binaries_.path_of(id).string() + " " +
                                    loaded.problem + "; building it again";
        binaries_.remove(id);
        const std::lock_guard lock(mutex_);
        ++(loaded.status == detail::binary_cache::outcome::corrupt ? cache_counts_.corrupt : cache_counts_.stale);
        cache_counts_.last_warning = warning;
        std::cerr << warning << '\n';
      }
    }
    std::string text(source);
    cl_int status = CL_SUCCESS;
    cl::Program program(context_, text, false, &status);
    detail::check(status, "creating an OpenCL program");
    const cl_int built = program.build(std::vector<cl::Device>{device_}, options.c_str());
    if (built != CL_SUCCESS) {
      std::string log;
      program.getBuildInfo(device_, CL_PROGRAM_BUILD_LOG, &log);
      const std::string line = detail::source_line_from_log(log, text);
      throw build_error("OpenCL program failed to build on " + info_.name + " (" + detail::opencl_error_name(built) +
                            ")" + (line.empty() ? std::string() : "\n  at " + line) + "\nbuild log:\n" + log,
                        log, line);
    }
    if (detail::env_flag("GPUAGG_SHOW_BUILD_LOG")) {
      std::string log;
      program.getBuildInfo(device_, CL_PROGRAM_BUILD_LOG, &log);
      const std::lock_guard lock(mutex_);
      std::cerr << "// gpuagg: build log (" << source.size() << " bytes of source, options \"" << options << "\"):\n"
                << log << '\n';
    }
    std::string problem;
    if (binaries_.enabled()) {
      std::vector<std::vector<unsigned char>> binaries;
      if (program.getInfo(CL_PROGRAM_BINARIES, &binaries) == CL_SUCCESS && binaries.size() == 1) {
        problem = binaries_.store(id, binaries.front());
      }
    }
    const std::lock_guard lock(mutex_);
    ++builds_;
    if (binaries_.enabled() && problem.empty()) ++cache_counts_.stored;
    if (!problem.empty() && !cache_write_warned_) {
      cache_write_warned_ = true;
      cache_counts_.last_warning = "gpuagg: warning: program cache: " + problem + "; programs are not kept";
      std::cerr << cache_counts_.last_warning << '\n';
    }
    return program;
  }

  void read_info() {
    info_.name = device_.getInfo<CL_DEVICE_NAME>();
    info_.vendor = device_.getInfo<CL_DEVICE_VENDOR>();
    info_.driver_version = device_.getInfo<CL_DRIVER_VERSION>();
    info_.platform_name = cl::Platform(device_.getInfo<CL_DEVICE_PLATFORM>()).getInfo<CL_PLATFORM_NAME>();
    info_.compute_units = device_.getInfo<CL_DEVICE_MAX_COMPUTE_UNITS>();
    info_.max_work_group_size = static_cast<std::uint32_t>(device_.getInfo<CL_DEVICE_MAX_WORK_GROUP_SIZE>());
    info_.local_mem_bytes = device_.getInfo<CL_DEVICE_LOCAL_MEM_SIZE>();
    info_.global_mem_bytes = device_.getInfo<CL_DEVICE_GLOBAL_MEM_SIZE>();
    info_.max_alloc_bytes = device_.getInfo<CL_DEVICE_MAX_MEM_ALLOC_SIZE>();
    info_.global_cache_bytes = device_.getInfo<CL_DEVICE_GLOBAL_MEM_CACHE_SIZE>();
    info_.is_gpu = (device_.getInfo<CL_DEVICE_TYPE>() & CL_DEVICE_TYPE_GPU) != 0;
    const std::string extensions = device_.getInfo<CL_DEVICE_EXTENSIONS>();
    info_.int64_atomics = extensions.find("cl_khr_int64_base_atomics") != std::string::npos;
    info_.fp64 = extensions.find("cl_khr_fp64") != std::string::npos;
    // Trim the NUL some drivers leave at the end of info strings.
    for (auto* text : {&info_.name, &info_.vendor, &info_.driver_version, &info_.platform_name}) {
      while (!text->empty() && (text->back() == '\0' || text->back() == ' ')) text->pop_back();
    }
    info_.architecture = detail::architecture_of(device_, extensions, info_.name);
  }

  cl::Context context_;
  cl::Device device_;
  cl::CommandQueue compute_queue_;
  cl::CommandQueue transfer_queue_;
  device_info info_;
  unsigned instance_ = 0;
  std::optional<unsigned> pocl_slot_;  // PoCL only: detail::pocl_build_slots
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_future<cl::Program>, std::less<>> programs_;
  // Lasting sources' programs by (text address, text length, build options).
  using address_key = std::tuple<const char*, std::size_t, std::string>;
  std::map<address_key, cl::Program> by_address_;
  std::size_t builds_ = 0;
  detail::binary_cache binaries_ = detail::binary_cache::from_environment();
  program_cache_counts cache_counts_;
  bool cache_write_warned_ = false;
  detail::buffer_pool pool_;
  std::map<const char*, std::uint64_t> pinned_ranges_;  // pinned_array allocations: start -> bytes
};

/// The process-wide default context, created on first use (thread-safe static).
inline context& default_context() {
  static context instance;
  return instance;
}

}  // namespace gpuagg
