#pragma once
// Built OpenCL program binaries on disk (CL_PROGRAM_BINARIES), so that a new process builds
// nothing its predecessors built: the first query of a shape then costs a load, not a JIT build.
//
// One file per program: <cache>/programs/<hash>.bin, the hash over the device, the platform,
// the build options and the source, so that every program of a query has its own file. The
// file holds the full identity, driver version included: an entry written by another driver
// (a driver update) is stale, and a stale, truncated or corrupt entry is reported once, rebuilt
// from source and replaced; it never fails a query. Files are written whole and renamed into
// place, so concurrent processes see an old entry or a new one.
// GPUAGG_PROGRAM_CACHE=0 turns the cache off.

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "../detail/cache_dir.hpp"

namespace gpuagg::detail {

inline std::uint64_t fnv1a64(std::string_view text, std::uint64_t hash = 0xcbf29ce484222325ULL) {
  for (const unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ULL;
  return hash;
}

/// What a program binary was built from and for.
struct binary_identity {
  std::string device;
  std::string platform;
  std::string driver_version;
  std::string options;
  std::string_view source;

  /// The file's name: everything but the driver, whose change makes an entry stale.
  std::string file_name() const {
    std::uint64_t h = fnv1a64(device);
    h = fnv1a64("\n", h);
    h = fnv1a64(platform, h);
    h = fnv1a64("\n", h);
    h = fnv1a64(options, h);
    h = fnv1a64("\n", h);
    h = fnv1a64(source, h);
    char name[32];
    std::snprintf(name, sizeof(name), "%016llx.bin", static_cast<unsigned long long>(h));
    return name;
  }
  /// The text the file records and a load compares: the source by its hash and length.
  std::string text() const {
    std::ostringstream out;
    out << "device=" << device << "\nplatform=" << platform << "\ndriver=" << driver_version << "\noptions=" << options
        << "\nsource=" << std::hex << fnv1a64(source) << std::dec << '/' << source.size() << '\n';
    return out.str();
  }
};

/// The on-disk program cache of one directory (empty path: off).
class binary_cache {
 public:
  binary_cache() = default;
  explicit binary_cache(std::filesystem::path dir) : dir_(std::move(dir)) {}

  /// <gpuagg cache directory>/programs, unless GPUAGG_PROGRAM_CACHE=0 or no directory is known.
  static binary_cache from_environment() {
    if (const auto off = non_empty_env("GPUAGG_PROGRAM_CACHE"); off && *off == "0") return {};
    const auto dir = cache_directory();
    return dir ? binary_cache(*dir / "programs") : binary_cache();
  }

  bool enabled() const noexcept { return !dir_.empty(); }
  const std::filesystem::path& directory() const noexcept { return dir_; }
  std::filesystem::path path_of(const binary_identity& id) const { return dir_ / id.file_name(); }

  /// What a load found.
  enum class outcome : std::uint8_t { hit, miss, stale, corrupt };
  struct loaded {
    outcome status = outcome::miss;
    std::vector<unsigned char> binary;
    std::string problem;  ///< why a stale or corrupt entry was not used
  };

  loaded load(const binary_identity& id) const {
    loaded result;
    if (!enabled()) return result;
    std::ifstream in(path_of(id), std::ios::binary);
    if (!in) return result;
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto corrupt = [&](const char* why) {
      result.status = outcome::corrupt;
      result.problem = why;
      return result;
    };
    // magic, identity length, identity, binary length, binary, checksum of identity + binary
    if (bytes.size() < magic.size() + 24 || bytes.compare(0, magic.size(), magic) != 0) return corrupt("has no header");
    std::size_t at = magic.size();
    const auto word = [&](std::uint64_t& value) {
      if (at + 8 > bytes.size()) return false;
      value = 0;
      for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[at + std::size_t(i)]);
      at += 8;
      return true;
    };
    std::uint64_t identity_size = 0;
    std::uint64_t binary_size = 0;
    std::uint64_t checksum = 0;
    if (!word(identity_size) || identity_size > bytes.size() - at) return corrupt("is truncated");
    const std::string identity = bytes.substr(at, identity_size);
    at += identity_size;
    if (!word(binary_size) || binary_size > bytes.size() - at || binary_size == 0) return corrupt("is truncated");
    const std::string_view binary(bytes.data() + at, binary_size);
    at += binary_size;
    if (!word(checksum) || at != bytes.size()) return corrupt("has a wrong length");
    if (checksum != fnv1a64(binary, fnv1a64(identity))) return corrupt("fails its checksum");
    if (identity != id.text()) {
      result.status = outcome::stale;
      result.problem = "was built for another driver or source";
      return result;
    }
    result.status = outcome::hit;
    result.binary.assign(binary.begin(), binary.end());
    return result;
  }

  /// Writes the entry whole, then renames it into place. Returns why it could not, or empty.
  std::string store(const binary_identity& id, const std::vector<unsigned char>& binary) const {
    if (!enabled() || binary.empty()) return {};
    std::error_code error;
    std::filesystem::create_directories(dir_, error);
    if (error) return "cannot create " + dir_.string() + " (" + error.message() + ")";
    const std::string identity = id.text();
    const std::string_view bytes(reinterpret_cast<const char*>(binary.data()), binary.size());
    std::string file(magic);
    const auto word = [&](std::uint64_t value) {
      for (int i = 0; i < 8; ++i) file.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
    };
    word(identity.size());
    file += identity;
    word(binary.size());
    file.append(bytes);
    word(fnv1a64(bytes, fnv1a64(identity)));
    const auto target = path_of(id);
    auto temporary = target;
    temporary += ".tmp" + std::to_string(std::random_device{}());
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out.write(file.data(), static_cast<std::streamsize>(file.size()));
      if (!out) {
        std::filesystem::remove(temporary, error);
        return "cannot write " + temporary.string();
      }
    }
    std::filesystem::rename(temporary, target, error);
    if (error) {
      std::filesystem::remove(temporary, error);
      return "cannot rename into " + target.string();
    }
    return {};
  }

  /// Removes an entry (a stale or corrupt one before its replacement is built).
  void remove(const binary_identity& id) const {
    std::error_code ignored;
    std::filesystem::remove(path_of(id), ignored);
  }

  static constexpr std::string_view magic = "gpuagg program binary 1\n";

 private:
  std::filesystem::path dir_;
};

}  // namespace gpuagg::detail
