// tessel's GPU kernels against the vendor libraries, on the CUDA device, side by side in one
// process:
//   * fp16 GEMM C[M][N] = A[M][K] B[K][N] (A, B fp16, C fp32, row-major; M = N = K = 1024, 2048,
//     4096): tessel's gpu_gemm kernel (compiler/backend/gpu/kernels.h: mma.sync m16n8k16 on
//     tensor cores, cp.async double buffering) against cublasGemmEx (CUDA_R_16F in,
//     CUDA_R_32F out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
//   * fp16 convolutions of ResNet-50 (x fp16, weights fp16, fp32 accumulation): tessel's implicit
//     GEMM against cudnnConvolutionForward (IMPLICIT_PRECOMP_GEMM, tensor-op math; y in fp16, as
//     cuDNN wants x and y of one type -- tessel writes fp32, twice the output bytes).
// Counter TFLOP/s = 2 M N K / time (convolutions: 2 N Cout OH OW Cin KH KW / time); the time is
// the kernel alone (CUDA events around 20 back-to-back launches after a warm-up, per
// iteration). Before timing, tessel's result is compared with the library's (max |diff| <=
// 1e-2 * max|C|; else the benchmark reports an error), so a wrong kernel never reports a speed.
// cuBLAS (libcublas.so) and cuDNN (libcudnn.so) are loaded with dlopen where installed, like
// the driver; without a CUDA device every benchmark reports "no CUDA device" and skips.
//
//   build/bin/bench_bench_gpu          (scripts/gpu_check.sh runs it on a GPU machine)
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "compiler/backend/gpu/cuda_driver.h"
#include "compiler/backend/gpu/kernels.h"
#include "compiler/support/error.h"
#include "compiler/support/fp16.h"

namespace {

using namespace tessel;
using gpu_backend::CudaDevice;

constexpr int kLaunches = 20;

void* load_library(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}

template <typename F>
F* sym(void* lib, const char* name) {
  return reinterpret_cast<F*>(dlsym(lib, name));
}

std::vector<uint16_t> random_f16(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<uint16_t> v(n);
  for (auto& x : v) x = f32_to_f16_bits(d(rng));
  return v;
}

/// Device buffer freed at scope end.
struct DeviceBuffer {
  uint64_t ptr = 0;
  explicit DeviceBuffer(size_t bytes) : ptr(CudaDevice::get().alloc(bytes)) {}
  ~DeviceBuffer() { CudaDevice::get().free(ptr); }
};

double max_abs(const std::vector<float>& v) {
  double m = 0;
  for (float x : v) m = std::max(m, std::abs(static_cast<double>(x)));
  return m;
}

bool device_or_skip(benchmark::State& state) {
  std::string why;
  if (CudaDevice::available(&why)) return true;
  state.SkipWithError(why.c_str());
  for (auto _ : state) {
  }
  return false;
}

// ------------------------------------------------------------------------------- GEMM
struct Cublas {
  void* lib = nullptr;
  void* handle = nullptr;
  int (*gemm_ex)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*,
                 int, int, const void*, void*, int, int, int, int) = nullptr;
  Cublas() {
    lib = load_library({"libcublas.so", "libcublas.so.13", "libcublas.so.12", "libcublas.so.11"});
    if (!lib) return;
    auto create = sym<int(void**)>(lib, "cublasCreate_v2");
    gemm_ex = sym<std::remove_pointer_t<decltype(gemm_ex)>>(lib, "cublasGemmEx");
    if (!create || !gemm_ex || create(&handle) != 0) lib = nullptr;
  }
  /// Row-major C[M][N] = A[M][K] B[K][N]: column-major C^T = B^T A^T.
  void run(int M, int N, int K, uint64_t a, uint64_t b, uint64_t c) const {
    const float alpha = 1.f, beta = 0.f;
    constexpr int kOpN = 0, kR16F = 2, kR32F = 0, kCompute32F = 68, kDefault = -1;
    const int r = gemm_ex(handle, kOpN, kOpN, N, M, K, &alpha, reinterpret_cast<void*>(b), kR16F, N,
                          reinterpret_cast<void*>(a), kR16F, K, &beta, reinterpret_cast<void*>(c),
                          kR32F, N, kCompute32F, kDefault);
    if (r != 0) fail("cublasGemmEx failed with status {}", r);
  }
};

const Cublas& cublas() {
  static Cublas c;
  return c;
}

struct GemmProblem {
  int64_t n;
  gpu_backend::StandaloneKernel kernel;
  std::unique_ptr<CudaDevice::Module> module;
  std::unique_ptr<DeviceBuffer> a, b, c, c_ref;
};

GemmProblem& gemm_problem(int64_t n) {
  static std::map<int64_t, std::unique_ptr<GemmProblem>> cache;
  auto& p = cache[n];
  if (p) return *p;
  p = std::make_unique<GemmProblem>();
  p->n = n;
  p->kernel = gpu_backend::gemm_kernel(n, n, n, DType::f16);
  CudaDevice& dev = CudaDevice::get();
  p->module = dev.load(gpu_backend::gpu_ptx(p->kernel.program));
  const size_t e = static_cast<size_t>(n * n);
  p->a = std::make_unique<DeviceBuffer>(e * 2);
  p->b = std::make_unique<DeviceBuffer>(e * 2);
  p->c = std::make_unique<DeviceBuffer>(e * 4);
  p->c_ref = std::make_unique<DeviceBuffer>(e * 4);
  auto ha = random_f16(e, 1), hb = random_f16(e, 2);
  dev.upload(p->a->ptr, ha.data(), e * 2);
  dev.upload(p->b->ptr, hb.data(), e * 2);
  return *p;
}

void launch_tessel_gemm(GemmProblem& p) {
  const auto& k = p.kernel;
  p.module->launch(k.entry, k.shape.grid, k.shape.block, k.shape.shared_bytes,
                   {p.a->ptr, p.b->ptr, p.c->ptr});
}

/// tessel's C against cuBLAS's (both computed here), or "" when they agree.
std::string check_gemm(GemmProblem& p) {
  if (!cublas().lib) return "";
  const int n = static_cast<int>(p.n);
  launch_tessel_gemm(p);
  cublas().run(n, n, n, p.a->ptr, p.b->ptr, p.c_ref->ptr);
  CudaDevice::get().synchronize();
  std::vector<float> got(static_cast<size_t>(p.n * p.n)), want(got.size());
  CudaDevice::get().download(got.data(), p.c->ptr, got.size() * 4);
  CudaDevice::get().download(want.data(), p.c_ref->ptr, want.size() * 4);
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
  if (!(worst <= 1e-2 * max_abs(want)))
    return fmt::format("tessel's GEMM differs from cuBLAS by {} (max |C| {})", worst,
                       max_abs(want));
  return "";
}

void BM_GemmFp16Tessel(benchmark::State& state) {
  if (!device_or_skip(state)) return;
  GemmProblem& p = gemm_problem(state.range(0));
  if (auto err = check_gemm(p); !err.empty()) {
    state.SkipWithError(err.c_str());
    return;
  }
  launch_tessel_gemm(p);
  double seconds = 0;
  for (auto _ : state) {
    const double t = CudaDevice::get().timed([&] {
      for (int i = 0; i < kLaunches; ++i) launch_tessel_gemm(p);
    });
    state.SetIterationTime(t / kLaunches);
    seconds += t / kLaunches;
  }
  const double n = static_cast<double>(p.n);
  state.counters["TFLOP/s"] =
      2 * n * n * n / (seconds / static_cast<double>(state.iterations())) / 1e12;
  state.SetLabel(fmt::format("tile {}x{}x{} warps {}x{}", p.kernel.knobs.bm, p.kernel.knobs.bn,
                             p.kernel.knobs.bk, p.kernel.knobs.warps_m, p.kernel.knobs.warps_n));
}

void BM_GemmFp16Cublas(benchmark::State& state) {
  if (!device_or_skip(state)) return;
  if (!cublas().lib) {
    state.SkipWithError("cuBLAS (libcublas.so) not found");
    return;
  }
  GemmProblem& p = gemm_problem(state.range(0));
  const int n = static_cast<int>(p.n);
  cublas().run(n, n, n, p.a->ptr, p.b->ptr, p.c_ref->ptr);
  double seconds = 0;
  for (auto _ : state) {
    const double t = CudaDevice::get().timed([&] {
      for (int i = 0; i < kLaunches; ++i) cublas().run(n, n, n, p.a->ptr, p.b->ptr, p.c_ref->ptr);
    });
    state.SetIterationTime(t / kLaunches);
    seconds += t / kLaunches;
  }
  const double nn = static_cast<double>(p.n);
  state.counters["TFLOP/s"] =
      2 * nn * nn * nn / (seconds / static_cast<double>(state.iterations())) / 1e12;
}

// ------------------------------------------------------------------------------- convolution
struct Cudnn {
  void* lib = nullptr;
  void* handle = nullptr;
  int (*create_tensor)(void**) = nullptr;
  int (*set_tensor)(void*, int, int, int, int, int, int) = nullptr;
  int (*create_filter)(void**) = nullptr;
  int (*set_filter)(void*, int, int, int, int, int, int) = nullptr;
  int (*create_conv)(void**) = nullptr;
  int (*set_conv)(void*, int, int, int, int, int, int, int, int) = nullptr;
  int (*set_math)(void*, int) = nullptr;
  int (*workspace)(void*, void*, void*, void*, void*, int, size_t*) = nullptr;
  int (*forward)(void*, const void*, void*, const void*, void*, const void*, void*, int, void*,
                 size_t, const void*, void*, void*) = nullptr;
  Cudnn() {
    lib = load_library({"libcudnn.so", "libcudnn.so.9", "libcudnn.so.8"});
    if (!lib) return;
    auto create = sym<int(void**)>(lib, "cudnnCreate");
    create_tensor = sym<int(void**)>(lib, "cudnnCreateTensorDescriptor");
    set_tensor =
        sym<std::remove_pointer_t<decltype(set_tensor)>>(lib, "cudnnSetTensor4dDescriptor");
    create_filter = sym<int(void**)>(lib, "cudnnCreateFilterDescriptor");
    set_filter =
        sym<std::remove_pointer_t<decltype(set_filter)>>(lib, "cudnnSetFilter4dDescriptor");
    create_conv = sym<int(void**)>(lib, "cudnnCreateConvolutionDescriptor");
    set_conv =
        sym<std::remove_pointer_t<decltype(set_conv)>>(lib, "cudnnSetConvolution2dDescriptor");
    set_math = sym<std::remove_pointer_t<decltype(set_math)>>(lib, "cudnnSetConvolutionMathType");
    workspace = sym<std::remove_pointer_t<decltype(workspace)>>(
        lib, "cudnnGetConvolutionForwardWorkspaceSize");
    forward = sym<std::remove_pointer_t<decltype(forward)>>(lib, "cudnnConvolutionForward");
    if (!create || !create_tensor || !set_tensor || !create_filter || !set_filter || !create_conv ||
        !set_conv || !set_math || !workspace || !forward || create(&handle) != 0)
      lib = nullptr;
  }
};

const Cudnn& cudnn() {
  static Cudnn c;
  return c;
}

/// A ResNet-50 convolution (batch, Cin, H = W, Cout, kernel, stride).
struct ConvShape {
  int64_t n, cin, hw, cout, k, stride;
};
const ConvShape kConvs[] = {{16, 64, 56, 64, 3, 1},
                            {16, 256, 56, 64, 1, 1},
                            {16, 256, 14, 256, 3, 1},
                            {16, 1024, 14, 256, 1, 1}};

struct ConvProblem {
  ConvShape s;
  int64_t oh = 0;
  gpu_backend::StandaloneKernel kernel;
  std::unique_ptr<CudaDevice::Module> module;
  std::unique_ptr<DeviceBuffer> x, y, w_packed, w16, y16, ws;
  size_t ws_bytes = 0;
  void *xd = nullptr, *wd = nullptr, *yd = nullptr, *cd = nullptr;
  double flops() const { return 2.0 * s.n * s.cout * oh * oh * s.cin * s.k * s.k; }
};

ConvProblem& conv_problem(int index) {
  static std::map<int, std::unique_ptr<ConvProblem>> cache;
  auto& p = cache[index];
  if (p) return *p;
  p = std::make_unique<ConvProblem>();
  p->s = kConvs[index];
  const auto& s = p->s;
  const int64_t pad = s.k / 2;
  p->oh = (s.hw + 2 * pad - s.k) / s.stride + 1;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  Tensor w(DType::f32, {s.cout, s.cin, s.k, s.k});
  std::vector<uint16_t> w16(static_cast<size_t>(w.numel()));
  for (int64_t i = 0; i < w.numel(); ++i) {
    w16[i] = f32_to_f16_bits(d(rng) / std::sqrt(static_cast<float>(s.cin * s.k * s.k)));
    w.data<float>()[i] = f16_bits_to_f32(w16[i]);
  }
  p->kernel = gpu_backend::conv_kernel({s.n, s.cin, s.hw, s.hw}, w, s.stride, pad, DType::f16);
  CudaDevice& dev = CudaDevice::get();
  p->module = dev.load(gpu_backend::gpu_ptx(p->kernel.program));
  const size_t xe = static_cast<size_t>(s.n * s.cin * s.hw * s.hw);
  const size_t ye = static_cast<size_t>(s.n * s.cout * p->oh * p->oh);
  p->x = std::make_unique<DeviceBuffer>(xe * 2);
  p->y = std::make_unique<DeviceBuffer>(ye * 4);
  p->y16 = std::make_unique<DeviceBuffer>(ye * 2);
  const auto& packed = p->kernel.constants.at(0).data;
  p->w_packed = std::make_unique<DeviceBuffer>(packed.nbytes());
  dev.upload(p->w_packed->ptr, packed.raw(), packed.nbytes());
  p->w16 = std::make_unique<DeviceBuffer>(w16.size() * 2);
  dev.upload(p->w16->ptr, w16.data(), w16.size() * 2);
  auto hx = random_f16(xe, 3);
  dev.upload(p->x->ptr, hx.data(), xe * 2);
  if (cudnn().lib) {
    const auto& c = cudnn();
    constexpr int kNchw = 0, kHalf = 2, kFloat = 0, kCross = 1, kTensorOp = 1, kPrecomp = 1;
    c.create_tensor(&p->xd);
    c.set_tensor(p->xd, kNchw, kHalf, static_cast<int>(s.n), static_cast<int>(s.cin),
                 static_cast<int>(s.hw), static_cast<int>(s.hw));
    c.create_tensor(&p->yd);
    c.set_tensor(p->yd, kNchw, kHalf, static_cast<int>(s.n), static_cast<int>(s.cout),
                 static_cast<int>(p->oh), static_cast<int>(p->oh));
    c.create_filter(&p->wd);
    c.set_filter(p->wd, kHalf, kNchw, static_cast<int>(s.cout), static_cast<int>(s.cin),
                 static_cast<int>(s.k), static_cast<int>(s.k));
    c.create_conv(&p->cd);
    c.set_conv(p->cd, static_cast<int>(pad), static_cast<int>(pad), static_cast<int>(s.stride),
               static_cast<int>(s.stride), 1, 1, kCross, kFloat);
    c.set_math(p->cd, kTensorOp);
    c.workspace(c.handle, p->xd, p->wd, p->cd, p->yd, kPrecomp, &p->ws_bytes);
    p->ws = std::make_unique<DeviceBuffer>(std::max<size_t>(p->ws_bytes, 1));
  }
  return *p;
}

void launch_tessel_conv(ConvProblem& p) {
  const auto& k = p.kernel;
  p.module->launch(k.entry, k.shape.grid, k.shape.block, k.shape.shared_bytes,
                   {p.x->ptr, p.y->ptr, p.w_packed->ptr});
}

void launch_cudnn_conv(ConvProblem& p) {
  const float alpha = 1.f, beta = 0.f;
  const int r = cudnn().forward(cudnn().handle, &alpha, p.xd, reinterpret_cast<void*>(p.x->ptr),
                                p.wd, reinterpret_cast<void*>(p.w16->ptr), p.cd, 1,
                                reinterpret_cast<void*>(p.ws->ptr), p.ws_bytes, &beta, p.yd,
                                reinterpret_cast<void*>(p.y16->ptr));
  if (r != 0) fail("cudnnConvolutionForward failed with status {}", r);
}

std::string check_conv(ConvProblem& p) {
  if (!cudnn().lib) return "";
  launch_tessel_conv(p);
  launch_cudnn_conv(p);
  CudaDevice::get().synchronize();
  const size_t ye = static_cast<size_t>(p.s.n * p.s.cout * p.oh * p.oh);
  std::vector<float> got(ye), want(ye);
  std::vector<uint16_t> want16(ye);
  CudaDevice::get().download(got.data(), p.y->ptr, ye * 4);
  CudaDevice::get().download(want16.data(), p.y16->ptr, ye * 2);
  for (size_t i = 0; i < ye; ++i) want[i] = f16_bits_to_f32(want16[i]);
  double worst = 0;
  for (size_t i = 0; i < ye; ++i)
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - want[i]));
  if (!(worst <= 1e-2 * max_abs(want)))
    return fmt::format("tessel's convolution differs from cuDNN by {} (max |y| {})", worst,
                       max_abs(want));
  return "";
}

template <bool kTessel>
void BM_ConvFp16(benchmark::State& state) {
  if (!device_or_skip(state)) return;
  if (!kTessel && !cudnn().lib) {
    state.SkipWithError("cuDNN (libcudnn.so) not found");
    return;
  }
  ConvProblem& p = conv_problem(static_cast<int>(state.range(0)));
  if (kTessel)
    if (auto err = check_conv(p); !err.empty()) {
      state.SkipWithError(err.c_str());
      return;
    }
  auto launch = [&] { kTessel ? launch_tessel_conv(p) : launch_cudnn_conv(p); };
  launch();
  double seconds = 0;
  for (auto _ : state) {
    const double t = CudaDevice::get().timed([&] {
      for (int i = 0; i < kLaunches; ++i) launch();
    });
    state.SetIterationTime(t / kLaunches);
    seconds += t / kLaunches;
  }
  state.counters["TFLOP/s"] =
      p.flops() / (seconds / static_cast<double>(state.iterations())) / 1e12;
  state.SetLabel(
      fmt::format("n{} c{} hw{} k{} {}x{}", p.s.n, p.s.cin, p.s.hw, p.s.cout, p.s.k, p.s.k));
}

}  // namespace

BENCHMARK(BM_GemmFp16Tessel)
    ->Arg(1024)
    ->Arg(2048)
    ->Arg(4096)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GemmFp16Cublas)
    ->Arg(1024)
    ->Arg(2048)
    ->Arg(4096)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ConvFp16<true>)->DenseRange(0, 3)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ConvFp16<false>)->DenseRange(0, 3)->UseManualTime()->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
