/* Times a tessel AOT model library (`tessel compile MODEL --target cpu -o model.so`) called from C,
 * for scripts/cpu_vs_ort.py (the ONNX Runtime side is benchmarks/ort/ort_runner.mjs, which takes
 * the same arguments and prints the same line).
 *
 *   aot_runner [-p KERNELS] LIB.so THREADS WARMUP ITERS IN_NUMEL:IN_FILE... --
 * OUT_NUMEL:OUT_FILE...
 *
 * Inputs and outputs are raw little-endian fp32 files in graph order (the shapes of model.h).
 * The library is dlopen'ed, its pool set to THREADS (tessel_cpu_set_threads), WARMUP untimed calls
 * of tessel_model_run are made, then ITERS timed ones; the outputs of the last call are written.
 * Prints one JSON line: {"wall_ms": [...], "cpu_ms": [...]} per timed call, where wall is
 * CLOCK_MONOTONIC and cpu is CLOCK_PROCESS_CPUTIME_ID (every thread of the process, so at one
 * thread it is the calling thread's CPU time and excludes time the machine gave to others).
 * With -p KERNELS (the library's TESSEL_MODEL_NUM_KERNELS) the timed calls are
 * tessel_model_run_profiled and the line also has "kernel_ms": per timed call, the wall time of
 * every kernel in the header's order.
 * Exit code 2 with a message on bad arguments or unreadable files, 1 when a call fails.
 *
 *   cc -O2 benchmarks/ort/aot_runner.c -o aot_runner -ldl
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*run_fn)(const float**, float**);
typedef int (*run_profiled_fn)(const float**, float**, double*);
typedef int (*threads_fn)(int);

static double now_ms(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int parse_buffer(const char* arg, long* numel, const char** file) {
  char* end = NULL;
  *numel = strtol(arg, &end, 10);
  if (end == arg || *end != ':' || *numel <= 0) return 0;
  *file = end + 1;
  return 1;
}

int main(int argc, char** argv) {
  int kernels = 0;
  if (argc > 2 && strcmp(argv[1], "-p") == 0) {
    kernels = atoi(argv[2]);
    if (kernels < 1) {
      fprintf(stderr, "aot_runner: -p KERNELS expects a positive count\n");
      return 2;
    }
    argv += 2;
    argc -= 2;
  }
  if (argc < 7) {
    fprintf(stderr,
            "usage: %s LIB.so THREADS WARMUP ITERS IN_NUMEL:IN_FILE... -- OUT_NUMEL:OUT_FILE...\n",
            argv[0]);
    return 2;
  }
  const int threads = atoi(argv[2]), warmup = atoi(argv[3]), iters = atoi(argv[4]);
  if (threads < 1 || warmup < 0 || iters < 1) {
    fprintf(stderr, "aot_runner: THREADS >= 1, WARMUP >= 0, ITERS >= 1 expected\n");
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "aot_runner: %s\n", dlerror());
    return 2;
  }
  run_fn run = (run_fn)dlsym(lib, "tessel_model_run");
  run_profiled_fn run_profiled = (run_profiled_fn)dlsym(lib, "tessel_model_run_profiled");
  threads_fn set_threads = (threads_fn)dlsym(lib, "tessel_cpu_set_threads");
  if (!run || !set_threads) {
    fprintf(stderr, "aot_runner: %s has no tessel_model_run / tessel_cpu_set_threads\n", argv[1]);
    return 2;
  }
  const float* inputs[64];
  float* outputs[64];
  const char* out_files[64];
  long out_numel[64];
  int nin = 0, nout = 0, in_outputs = 0;
  for (int a = 5; a < argc; ++a) {
    if (strcmp(argv[a], "--") == 0) {
      in_outputs = 1;
      continue;
    }
    long numel;
    const char* file;
    if (!parse_buffer(argv[a], &numel, &file) || nin >= 64 || nout >= 64) {
      fprintf(stderr, "aot_runner: argument '%s': expected NUMEL:FILE\n", argv[a]);
      return 2;
    }
    float* buf = aligned_alloc(64, ((size_t)numel * 4 + 63) / 64 * 64);
    if (!buf) return 1;
    if (in_outputs) {
      outputs[nout] = buf;
      out_files[nout] = file;
      out_numel[nout++] = numel;
      continue;
    }
    FILE* f = fopen(file, "rb");
    if (!f || fread(buf, 4, (size_t)numel, f) != (size_t)numel) {
      fprintf(stderr, "aot_runner: cannot read %ld floats from '%s'\n", numel, file);
      return 2;
    }
    fclose(f);
    inputs[nin++] = buf;
  }
  set_threads(threads);
  for (int i = 0; i < warmup; ++i)
    if (run(inputs, outputs) != 0) return 1;
  printf("{\"wall_ms\": [");
  double* cpu = malloc(sizeof(double) * (size_t)iters);
  double* kernel_s = calloc((size_t)iters * (size_t)(kernels ? kernels : 1), sizeof(double));
  if (!cpu || !kernel_s || (kernels && !run_profiled)) return 1;
  for (int i = 0; i < iters; ++i) {
    const double w0 = now_ms(CLOCK_MONOTONIC), c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
    const int status = kernels ? run_profiled(inputs, outputs, kernel_s + (size_t)i * kernels)
                               : run(inputs, outputs);
    if (status != 0) return 1;
    const double c1 = now_ms(CLOCK_PROCESS_CPUTIME_ID), w1 = now_ms(CLOCK_MONOTONIC);
    cpu[i] = c1 - c0;
    printf("%s%.4f", i ? ", " : "", w1 - w0);
  }
  printf("], \"cpu_ms\": [");
  for (int i = 0; i < iters; ++i) printf("%s%.4f", i ? ", " : "", cpu[i]);
  printf("]");
  if (kernels) {
    printf(", \"kernel_ms\": [");
    for (int i = 0; i < iters; ++i) {
      printf("%s[", i ? ", " : "");
      for (int k = 0; k < kernels; ++k)
        printf("%s%.5f", k ? ", " : "", kernel_s[(size_t)i * kernels + k] * 1e3);
      printf("]");
    }
    printf("]");
  }
  printf("}\n");
  for (int j = 0; j < nout; ++j) {
    FILE* f = fopen(out_files[j], "wb");
    if (!f || fwrite(outputs[j], 4, (size_t)out_numel[j], f) != (size_t)out_numel[j]) {
      fprintf(stderr, "aot_runner: cannot write '%s'\n", out_files[j]);
      return 2;
    }
    fclose(f);
  }
  return 0;
}
