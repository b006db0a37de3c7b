#pragma once
// The devices of a multi-device query: one gpuagg::context per member, built from
// GPUAGG_DEVICE-style selectors, from equal sub-devices of one device, or from the caller's
// contexts.

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../error.hpp"
#include "../runtime/context.hpp"
#include "participation.hpp"

namespace gpuagg {

/// Two or more OpenCL devices that one query runs on (group_by(device_set&, ...)). Each member
/// is a context of its own (queues, program cache, buffer pool), so devices of different
/// platforms (an NVIDIA GPU and PoCL's CPU device) can be members together. A device named
/// twice gets two contexts, instances 0 and 1 of it (context's constructor): legal, and how a
/// machine with one device exercises the code, but never faster than one.
class device_set {
 public:
  device_set() = default;

  /// One member per selector, each chosen as GPUAGG_DEVICE chooses (an index into every device
  /// of every platform, or a case-insensitive substring of "platform / device"). A selector
  /// that names no device is no_device_error (the message lists the devices).
  static device_set from_selectors(const std::vector<std::string>& selectors) {
    device_set set;
    for (const auto& selector : selectors) {
      const cl::Device device = detail::choose_device(selector);
      // A device named again is another instance of it: the members run at once.
      const auto instance = static_cast<unsigned>(std::count_if(
          set.members_.begin(), set.members_.end(), [&](const context* m) { return m->device()() == device(); }));
      set.owned_.push_back(std::make_unique<context>(device, instance));
      set.members_.push_back(set.owned_.back().get());
    }
    return set;
  }

  /// Selectors separated by commas, as GPUAGG_DEVICES takes them ("0,2" or "nvidia, pthread").
  static device_set from_list(std::string_view list) {
    std::vector<std::string> selectors;
    while (true) {
      const auto comma = list.find(',');
      selectors.emplace_back(list.substr(0, comma));
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
    return from_selectors(selectors);
  }

  /// The devices GPUAGG_DEVICES lists (from_list); unset or empty: every device there is.
  static device_set from_environment() {
    const char* list = std::getenv("GPUAGG_DEVICES");
    if (list != nullptr && *list != '\0') return from_list(list);
    const auto devices = detail::all_devices();
    if (devices.empty()) throw no_device_error("no OpenCL device found (is an OpenCL driver installed?)");
    device_set set;
    for (const auto& entry : devices) {
      set.owned_.push_back(std::make_unique<context>(entry.second));
      set.members_.push_back(set.owned_.back().get());
    }
    return set;
  }

  /// The device `selector` names split into `parts` sub-devices of equal compute units
  /// (clCreateSubDevices, CL_DEVICE_PARTITION_EQUALLY), one member each. A device that cannot
  /// be split so is unsupported_error.
  static device_set partition_equally(std::string_view selector, unsigned parts) {
    if (parts == 0) throw invalid_argument_error("device_set::partition_equally: parts must be at least 1");
    cl::Device whole = detail::choose_device(selector);
    const cl_uint units = whole.getInfo<CL_DEVICE_MAX_COMPUTE_UNITS>();
    if (units < parts) {
      throw unsupported_error("device_set::partition_equally: " + whole.getInfo<CL_DEVICE_NAME>() + " has " +
                              std::to_string(units) + " compute units, fewer than " + std::to_string(parts) +
                              " parts");
    }
    const cl_device_partition_property properties[] = {CL_DEVICE_PARTITION_EQUALLY,
                                                       static_cast<cl_device_partition_property>(units / parts), 0};
    std::vector<cl::Device> subs;
    const cl_int status = whole.createSubDevices(properties, &subs);
    if (status != CL_SUCCESS) {
      throw unsupported_error("device_set::partition_equally: " + whole.getInfo<CL_DEVICE_NAME>() +
                              " cannot be split equally: clCreateSubDevices returned " +
                              detail::opencl_error_name(status));
    }
    device_set set;
    for (std::size_t i = 0; i < parts && i < subs.size(); ++i) {
      set.owned_.push_back(std::make_unique<context>(subs[i]));
      set.members_.push_back(set.owned_.back().get());
    }
    return set;
  }

  /// The caller's contexts (which must outlive the set), e.g. ones whose pinned_arrays or
  /// program caches it keeps between queries. Two of one device are made as its instances 0 and
  /// 1 (context(device, instance)), as from_selectors makes them.
  explicit device_set(std::vector<context*> contexts) : members_(std::move(contexts)) {
    for (const context* member : members_) {
      if (member == nullptr) throw invalid_argument_error("device_set: a null context");
    }
  }

  device_set(device_set&&) noexcept = default;
  device_set& operator=(device_set&&) noexcept = default;

  std::size_t size() const noexcept { return members_.size(); }
  bool empty() const noexcept { return members_.empty(); }
  context& operator[](std::size_t i) const noexcept { return *members_[i]; }

  /// The members' contexts (owned by this set, or by the caller that gave them).
  std::vector<context*> contexts() const { return members_; }

  /// Which members group_by over this set found too slow to take part (participation.hpp):
  /// found so twice in a row, they sit out the next 15 queries, then take part once again.
  detail::participation_record& participation() const noexcept { return *participation_; }
  /// Forgets those measurements: every member takes part in the next query.
  void reset_participation() const { participation_->reset(); }

 private:
  std::vector<std::unique_ptr<context>> owned_;
  std::vector<context*> members_;
  std::shared_ptr<detail::participation_record> participation_ = std::make_shared<detail::participation_record>();
};

}  // namespace gpuagg
