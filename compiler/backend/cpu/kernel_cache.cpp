// The kernel cache (see kernel_cache.h).
#include "compiler/backend/cpu/kernel_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "compiler/support/error.h"

namespace tessel::cpu_backend {

namespace fs = std::filesystem;

KernelCache::KernelCache(std::string dir) : dir_(std::move(dir)) {}

std::string KernelCache::path_of(const std::string& key) const {
  return (fs::path(dir_) / "cpu-kernels" / key.substr(0, 2) / (key + ".o")).string();
}

std::optional<std::string> KernelCache::load(const std::string& key) const {
  if (!enabled()) return std::nullopt;
  std::ifstream f(path_of(key), std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  if (!f.good() && !f.eof()) return std::nullopt;
  std::string bytes = ss.str();
  if (bytes.empty()) return std::nullopt;
  return bytes;
}

void KernelCache::store(const std::string& key, const std::string& bytes) const {
  if (!enabled()) return;
  const fs::path path = path_of(key);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec && !fs::is_directory(path.parent_path()))
    fail(
        "kernel cache: cannot create directory '{}': {} (set TESSEL_CACHE_DIR to a writable "
        "directory, or to an empty value to compile without a cache)",
        path.parent_path().string(), ec.message());
  // A name no other writer uses: process id, thread id and a counter.
  static std::atomic<uint64_t> counter{0};
  const fs::path tmp =
      path.string() + fmt::format(".tmp.{}.{}.{}", ::getpid(),
                                  std::hash<std::thread::id>()(std::this_thread::get_id()),
                                  counter.fetch_add(1));
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (f) f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) {
      fs::remove(tmp, ec);
      fail("kernel cache: cannot write '{}'", tmp.string());
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    fail("kernel cache: cannot rename '{}' to '{}'", tmp.string(), path.string());
  }
}

std::string KernelCache::default_dir() {
  if (const char* env = std::getenv("TESSEL_CACHE_DIR")) {
    const std::string d = env;
    if (!d.empty() && !fs::path(d).is_absolute())
      fail("TESSEL_CACHE_DIR='{}': expected an absolute directory path (or empty: no cache)", d);
    return d;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg && fs::path(xdg).is_absolute())
    return (fs::path(xdg) / "tessel").string();
  if (const char* home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "tessel").string();
  return "";
}

}  // namespace tessel::cpu_backend
