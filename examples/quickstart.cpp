// Quickstart: GROUP BY over std::vector and over device buffers.
//
//   SELECT g, count(*), sum(v), max(v) FROM R GROUP BY g
#include <gpuagg/groupby.hpp>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <vector>

inline int quickstart(std::ostream& out) {
  using namespace gpuagg;
  const std::vector<std::uint32_t> g{7, 3, 7, 7, 3, 42};
  const std::vector<std::int64_t> v{1, 2, 3, 4, 5, 6};

  // Host columns in, host result out. Group order is unspecified.
  const auto query = select(count(), sum(col<0>), max(col<0>));
  const auto r = group_by(g, v, query);
  for (std::size_t i = 0; i < r.size(); ++i) {
    out << "g=" << r.keys[i] << " count=" << r.column<0>()[i] << " sum=" << r.column<1>()[i]
        << " max=" << r.column<2>()[i] << '\n';
  }

  // Columns already on the device are read in place (cl::Buffer or boost::compute::vector
  // through device_column); the result can stay there too.
  context& ctx = default_context();
  cl::Buffer g_dev(ctx.cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, g.size() * sizeof(g[0]),
                   const_cast<std::uint32_t*>(g.data()));
  cl::Buffer v_dev(ctx.cl_context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, v.size() * sizeof(v[0]),
                   const_cast<std::int64_t*>(v.data()));
  const auto on_device = group_by(device_column<std::uint32_t>(g_dev, g.size()),
                                  device_column<std::int64_t>(v_dev, v.size()), query);
  out << on_device.size() << " groups from device buffers on " << on_device.stats.device << '\n';

  // Host columns in pinned memory of the context go to the device without a staging copy.
  pinned_array<std::uint32_t> g_pinned(ctx, g.size());
  pinned_array<std::int64_t> v_pinned(ctx, v.size());
  std::copy(g.begin(), g.end(), g_pinned.begin());
  std::copy(v.begin(), v.end(), v_pinned.begin());
  const auto from_pinned = group_by(g_pinned, v_pinned, query);
  out << from_pinned.size() << " groups from pinned host memory\n";

  // Every input gives the same groups with the same outputs (in any order).
  const auto same_groups = [&](const auto& other) {
    if (other.size() != r.size()) return false;
    for (std::size_t i = 0; i < r.size(); ++i) {
      bool found = false;
      for (std::size_t j = 0; j < other.size(); ++j) {
        found = found || (other.keys[j] == r.keys[i] && other.template column<0>()[j] == r.column<0>()[i] &&
                          other.template column<1>()[j] == r.column<1>()[i] &&
                          other.template column<2>()[j] == r.column<2>()[i]);
      }
      if (!found) return false;
    }
    return true;
  };
  return same_groups(on_device) && same_groups(from_pinned) ? 0 : 1;
}

#ifndef GPUAGG_EXAMPLE_NO_MAIN
int main() {
  try {
    return quickstart(std::cout);
  } catch (const gpuagg::error& e) {
    std::cerr << "gpuagg: " << e.what() << '\n';
    return 1;
  }
}
#endif
