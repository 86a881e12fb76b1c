// CpuBuildOptions resolved from the environment (see build_options.h).
#include "compiler/backend/cpu/build_options.h"

#include <cstdlib>
#include <thread>

#include "compiler/backend/cpu/kernel_cache.h"
#include "compiler/support/error.h"

namespace tessel::cpu_backend {

int CpuBuildOptions::resolved_threads() const {
  if (threads > 0) return threads;
  if (const char* env = std::getenv("TESSEL_COMPILE_THREADS")) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end == env || *end != '\0' || v < 1 || v > 1024)
      fail("TESSEL_COMPILE_THREADS='{}': expected an integer from 1 to 1024", env);
    return static_cast<int>(v);
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int CpuBuildOptions::resolved_opt_level() const {
  if (opt_level >= 0) {
    if (opt_level > 3) fail("cpu optimisation level {}: expected 0..3", opt_level);
    return opt_level;
  }
  if (const char* env = std::getenv("TESSEL_CPU_OPT_LEVEL")) {
    const std::string v = env;
    if (v.size() != 1 || v[0] < '0' || v[0] > '3')
      fail("TESSEL_CPU_OPT_LEVEL='{}': expected 0, 1, 2 or 3", v);
    return v[0] - '0';
  }
  return 2;
}

std::string CpuBuildOptions::resolved_cache_dir() const {
  return cache_dir == "default" ? KernelCache::default_dir() : cache_dir;
}

}  // namespace tessel::cpu_backend
