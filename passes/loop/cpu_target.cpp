// CpuTarget::host(): the machine the CPU passes schedule for, read from the running host.
// What: vector width and register count from the CPU's features, cache sizes from sysconf,
// thread count from TESSEL_CPU_THREADS or the online cores. Needs nothing before it; guarantees
// positive sizes (sysconf values of 0 or -1 fall back to 32 KiB / 1 MiB / 8 MiB).
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "compiler/support/error.h"
#include "passes/loop/cpu_passes.h"

namespace tessel::passes {

CpuTarget CpuTarget::host() {
  CpuTarget t;
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    t.vector_lanes = 16;
    t.vector_registers = 32;
  } else if (__builtin_cpu_supports("avx2")) {
    t.vector_lanes = 8;
    t.vector_registers = 16;
  } else {
    t.vector_lanes = 4;
    t.vector_registers = 16;
  }
  t.fma = __builtin_cpu_supports("fma");
#else
  t.vector_lanes = 4;
  t.vector_registers = 32;
#endif
  auto cache = [](int name, int64_t fallback) {
    const long v = sysconf(name);
    return v > 0 ? static_cast<int64_t>(v) : fallback;
  };
#ifdef _SC_LEVEL1_DCACHE_SIZE
  t.l1d_bytes = cache(_SC_LEVEL1_DCACHE_SIZE, 32768);
  t.l2_bytes = cache(_SC_LEVEL2_CACHE_SIZE, 1 << 20);
  t.l3_bytes = cache(_SC_LEVEL3_CACHE_SIZE, 8 << 20);
#endif
  t.threads = std::max(1u, std::thread::hardware_concurrency());
  if (const char* env = std::getenv("TESSEL_CPU_THREADS")) {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (!end || *end != '\0' || n < 1 || n > 1024)
      fail("TESSEL_CPU_THREADS='{}': expected a thread count between 1 and 1024", env);
    t.threads = static_cast<int>(n);
  }
  return t;
}

}  // namespace tessel::passes
