// How the CPU backend turns kernels into machine code (objects.h): compile threads, the kernel
// cache and LLVM's optimisation level. Defaults come from the environment (docs/cpu_backend.md,
// "Compile time"):
//   TESSEL_COMPILE_THREADS  threads compiling kernels (default: the online cores)
//   TESSEL_CACHE_DIR        the kernel cache directory; empty disables the cache (default:
//                           $XDG_CACHE_HOME/tessel, else $HOME/.cache/tessel)
//   TESSEL_CPU_OPT_LEVEL    LLVM's optimisation level of the kernels, 0..3 (default 2)
#pragma once

#include <string>

namespace tessel::cpu_backend {

struct CpuBuildOptions {
  /// Threads compiling kernel modules in parallel; 0: TESSEL_COMPILE_THREADS, else the cores.
  int threads = 0;
  /// Kernel cache directory; "default": TESSEL_CACHE_DIR or the user's cache directory (see the
  /// file comment); "": no cache.
  std::string cache_dir = "default";
  /// LLVM optimisation level of the kernels (0..3); -1: TESSEL_CPU_OPT_LEVEL, else 2 (the
  /// schedules already vectorize and unroll what pays; docs/cpu_backend.md, "Compile time", has
  /// the measurement of each level).
  int opt_level = -1;

  /// `threads` resolved (>= 1). Throws tessel::Error naming TESSEL_COMPILE_THREADS when it is
  /// not a positive integer.
  int resolved_threads() const;
  /// `opt_level` resolved (0..3). Throws tessel::Error naming TESSEL_CPU_OPT_LEVEL (or the
  /// option) when it is not 0..3.
  int resolved_opt_level() const;
  /// `cache_dir` resolved: "" (no cache) or a directory path. Throws tessel::Error naming
  /// TESSEL_CACHE_DIR when it is set to a relative path.
  std::string resolved_cache_dir() const;
};

}  // namespace tessel::cpu_backend
