// The CPU backend's runtime: the few functions generated code calls (C ABI, so JIT-compiled code,
// AOT shared libraries and C callers use the same entry points). Linked into tessel (the JIT
// resolves these symbols to this process) and statically into every AOT model library.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// A parallel loop body: runs iterations [begin, end) with the captured variables in `closure`.
typedef void (*tessel_cpu_task_fn)(void* closure, int64_t begin, int64_t end);

/// Runs iterations [0, n) of `fn` on the thread pool: up to 4 contiguous chunks per thread,
/// claimed dynamically by the caller and the awake workers (a descheduled worker delays
/// nothing); returns when all are done. Runs serially when the pool has one
/// thread, when n < 2, or when called from inside a parallel body (no nested parallelism).
void tessel_cpu_parallel_for(int64_t n, tessel_cpu_task_fn fn, void* closure);

/// A per-thread scratch buffer for allocation slot `slot` (the nesting depth of the allocation
/// in its kernel) of at least `bytes` bytes, 64-byte aligned, reused across calls; valid until
/// the same thread asks for the same slot again. Returns null when memory is exhausted.
void* tessel_cpu_scratch(int64_t slot, int64_t bytes);

/// Monotonic wall clock in seconds (per-op timing of profiled runs).
double tessel_cpu_now_seconds(void);

/// Sets the number of threads parallel loops use (>= 1; the pool grows on demand) and returns
/// the previous number. The initial number is TESSEL_CPU_THREADS or the online core count.
int tessel_cpu_set_threads(int threads);
int tessel_cpu_get_threads(void);

#ifdef __cplusplus
}
#endif
