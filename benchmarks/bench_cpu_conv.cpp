// Convolution layers of ResNet-50 (batch 1, fp32), single thread: tessel's CPU backend (Conv with
// constant weights: BLIS schedule of passes/loop/cpu_gemm.cpp, weights packed at compile time,
// NCHW activations) side by side with oneDNN 2.6 in the same process:
//   oneDNN_nchw     plain NCHW source and destination (the layout tessel uses), weights in
//                   oneDNN's preferred blocked layout (reordered once, outside the timed loop);
//   oneDNN_blocked  source and destination in oneDNN's preferred layout too (nChw16c on AVX-512),
//                   as inside a network that keeps activations blocked (reorders not timed).
// Counter GFLOP/s = 2 N OC OH OW IC KH KW / time. Before timing, tessel's output is checked
// against oneDNN's (|diff| <= 1e-4 sqrt(K) max|y|, K = IC KH KW), so a wrong kernel never reports
// a speed. oneDNN is limited to one OpenMP thread, tessel's pool to one thread.
//
//   build/bin/bench_bench_cpu_conv
// Results: docs/results.md ("## CPU backend").
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cmath>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "compiler/backend/cpu/compile.h"
#include "compiler/backend/cpu/jit.h"
#include "compiler/backend/cpu/runtime/cpu_runtime.h"
#include "compiler/ops/op_registry.h"

namespace {

using namespace tessel;

struct Layer {
  const char* name;
  int64_t ic, oc, hw, k, stride;
  int64_t pad() const { return k / 2; }
  int64_t out_hw() const { return (hw + 2 * pad() - k) / stride + 1; }
  double flops() const { return 2.0 * oc * out_hw() * out_hw() * ic * k * k; }
};

// ResNet-50 v1.5 layers (He et al. 2016; torchvision): conv2_x 3x3, conv2_x 1x1 reduce, conv3_1
// 3x3 stride 2 (stride on the 3x3), conv4_x 3x3.
const Layer kLayers[] = {
    {"3x3_64_56", 64, 64, 56, 3, 1},
    {"1x1_256to64_56", 256, 64, 56, 1, 1},
    {"3x3s2_128_56", 128, 128, 56, 3, 2},
    {"3x3_256_14", 256, 256, 14, 3, 1},
};

std::vector<float> random_vector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

struct Data {
  std::vector<float> x, w, y;
};

Data make_data(const Layer& l) {
  Data d;
  d.x = random_vector(static_cast<size_t>(l.ic * l.hw * l.hw), 1);
  d.w = random_vector(static_cast<size_t>(l.oc * l.ic * l.k * l.k), 2);
  d.y.assign(static_cast<size_t>(l.oc * l.out_hw() * l.out_hw()), 0.f);
  return d;
}

void single_thread() {
  tessel_cpu_set_threads(1);
  using SetFn = void (*)(int);
  static auto omp_set = reinterpret_cast<SetFn>(::dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  if (omp_set) omp_set(1);  // oneDNN's OpenMP runtime (libgomp) is loaded with libdnnl
}

const cpu_backend::CpuJit& tessel_conv(int li, const Data& d) {
  static std::map<int, std::unique_ptr<cpu_backend::CpuJit>> cache;
  auto& slot = cache[li];
  if (!slot) {
    const Layer& l = kLayers[li];
    Graph g;
    g.name = "conv";
    g.opset = 17;
    Value* x = g.add_value("x", DType::f32, {1, l.ic, l.hw, l.hw});
    g.inputs = {x};
    Value* w = g.add_constant("w", Tensor::from_floats({l.oc, l.ic, l.k, l.k}, d.w));
    Value* y = g.add_value("y", DType::undefined, {});
    Attributes a;
    a.set("pads", std::vector<int64_t>(4, l.pad()));
    a.set("strides", std::vector<int64_t>{l.stride, l.stride});
    Node* n = g.add_node("Conv", "conv", {x, w}, {y}, a);
    ops::infer_node(*n);
    g.outputs = {y};
    cpu_backend::CpuCompileOptions o;
    o.target.threads = 1;
    slot = std::make_unique<cpu_backend::CpuJit>(cpu_backend::compile_cpu(g, o));
  }
  return *slot;
}

/// A oneDNN forward-inference convolution for layer `l` with weights reordered once.
struct OneDnnConv {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::convolution_forward conv;
  dnnl::memory src, wei, dst;       // what the primitive reads/writes
  dnnl::memory user_src, user_dst;  // NCHW
  OneDnnConv(const Layer& l, Data& d, bool blocked) {
    using dt = dnnl::memory::data_type;
    using tag = dnnl::memory::format_tag;
    const int64_t o = l.out_hw();
    dnnl::memory::dims sd{1, l.ic, l.hw, l.hw}, wd{l.oc, l.ic, l.k, l.k}, dd{1, l.oc, o, o};
    dnnl::memory::dims strides{l.stride, l.stride}, pad{l.pad(), l.pad()};
    auto act = blocked ? tag::any : tag::nchw;
    dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
        dnnl::memory::desc(sd, dt::f32, act), dnnl::memory::desc(wd, dt::f32, tag::any),
        dnnl::memory::desc(dd, dt::f32, act), strides, pad, pad);
    dnnl::convolution_forward::primitive_desc pd(desc, eng);
    conv = dnnl::convolution_forward(pd);
    user_src = dnnl::memory({sd, dt::f32, tag::nchw}, eng, d.x.data());
    user_dst = dnnl::memory({dd, dt::f32, tag::nchw}, eng, d.y.data());
    dnnl::memory user_wei({wd, dt::f32, tag::oihw}, eng, d.w.data());
    wei = dnnl::memory(pd.weights_desc(), eng);
    dnnl::reorder(user_wei, wei).execute(strm, user_wei, wei);
    src = pd.src_desc() == user_src.get_desc() ? user_src : dnnl::memory(pd.src_desc(), eng);
    dst = pd.dst_desc() == user_dst.get_desc() ? user_dst : dnnl::memory(pd.dst_desc(), eng);
    if (src != user_src) dnnl::reorder(user_src, src).execute(strm, user_src, src);
    strm.wait();
  }
  void run() {
    conv.execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}});
    strm.wait();
  }
  /// The result in NCHW (in `user_dst`'s buffer).
  void to_user() {
    if (dst != user_dst) dnnl::reorder(dst, user_dst).execute(strm, dst, user_dst);
    strm.wait();
  }
};

void counters(benchmark::State& state, const Layer& l) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(l.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_Conv_Tessel(benchmark::State& state) {
  const int li = static_cast<int>(state.range(0));
  const Layer& l = kLayers[li];
  single_thread();
  Data d = make_data(l);
  const auto& jit = tessel_conv(li, d);
  const float* in[] = {d.x.data()};
  float* out[] = {d.y.data()};
  jit.run(in, out);
  // Check against oneDNN before timing.
  Data ref = d;
  OneDnnConv dn(l, ref, false);
  dn.run();
  dn.to_user();
  double diff = 0, mag = 0;
  for (size_t i = 0; i < d.y.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::abs(d.y[i] - ref.y[i])));
    mag = std::max(mag, static_cast<double>(std::abs(ref.y[i])));
  }
  if (!(diff <= 1e-4 * std::sqrt(static_cast<double>(l.ic * l.k * l.k)) * mag)) {
    state.SkipWithError("tessel's convolution differs from oneDNN's");
    return;
  }
  for (auto _ : state) {
    jit.run(in, out);
    benchmark::ClobberMemory();
  }
  counters(state, l);
  state.SetLabel(l.name);
}

template <bool kBlocked>
void BM_Conv_OneDNN(benchmark::State& state) {
  const Layer& l = kLayers[state.range(0)];
  single_thread();
  Data d = make_data(l);
  OneDnnConv dn(l, d, kBlocked);
  for (auto _ : state) {
    dn.run();
    benchmark::ClobberMemory();
  }
  counters(state, l);
  state.SetLabel(l.name);
}

void layers(benchmark::internal::Benchmark* b) {
  for (int i = 0; i < static_cast<int>(sizeof(kLayers) / sizeof(kLayers[0])); ++i) b->Arg(i);
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_Conv_Tessel)->Apply(layers);
BENCHMARK_TEMPLATE(BM_Conv_OneDNN, false)->Name("BM_Conv_oneDNN_nchw")->Apply(layers);
BENCHMARK_TEMPLATE(BM_Conv_OneDNN, true)->Name("BM_Conv_oneDNN_blocked")->Apply(layers);

}  // namespace

BENCHMARK_MAIN();
