// CPU int8 vs fp32 at batch 1, one thread: the PP-OCR direction classifier (its int8 model
// tests/data/models/ch_ppocr_mobile_v2.0_cls_infer_int8.onnx, written by `tessel quantize`) and
// ResNet-50 (tessel zoo, quantised here by driver::quantize_static: one random calibration set,
// per-channel weights).
//
//   BM_Fp32Model/M      the float model on tessel's CPU backend (JIT, 1 thread, as
//                       bench_cpu_models), the whole model;
//   BM_Int8Model/M/P    the folded int8 model, the whole model, compiled for --target cpu
//                       (compile_cpu + CpuJit: the int8 kernels on path P beside the generated
//                       fp32 kernels of the float ops), 1 thread; one run of the entry point
//                       (inputs and outputs in place, no compile);
//   BM_Int8Layers/M/P   the folded int8 model's integer nodes (every QLinearConv, QLinearMatMul,
//                       QuantizeLinear, DequantizeLinear after fold_qdq) on the CPU int8 kernels
//                       (compiler/backend/cpu/qgemm.h), path P = 0 plain, 1 AVX-512 VNNI, each
//                       node on inputs captured from a reference run; the float ops between them
//                       (HardSwish, pooling, Add, softmax, ...) are NOT included. Counter
//                       kernel_ms: the generated kernels' share (the rest is host-side im2col and
//                       per-call weight packing).
// Before timing, every int8 node's CPU result is checked equal to the reference's.
//
//   build/bin/bench_bench_cpu_int8
// Results: docs/results.md ("## CPU int8 kernels").
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>

#include "compiler/backend/cpu/compile.h"
#include "compiler/backend/cpu/jit.h"
#include "compiler/backend/cpu/qgemm.h"
#include "compiler/backend/cpu/runtime/cpu_runtime.h"
#include "compiler/driver/quantize.h"
#include "compiler/driver/runner.h"
#include "compiler/driver/zoo.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/ops/reference.h"

namespace {

using namespace tessel;
namespace fs = std::filesystem;
using cpu_backend::QGemmPath;

Tensor random_tensor(const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (auto& x : v) x = d(rng);
  return Tensor::from_floats(s, v);
}

struct IntNode {
  const Node* node;
  std::vector<Tensor> inputs;  // captured from the reference run (empty tensor: absent input)
  std::vector<bool> present;
  Tensor want;
};

Tensor run_node(const IntNode& n, QGemmPath p, double* kernel_seconds) {
  std::vector<const Tensor*> v;
  for (size_t i = 0; i < n.inputs.size(); ++i) v.push_back(n.present[i] ? &n.inputs[i] : nullptr);
  const Node& node = *n.node;
  if (node.op_type == "QLinearConv") {
    cpu_backend::QConvGeometry geo;
    geo.strides = node.attrs.get_ints_or("strides", {1, 1}, node.name);
    geo.pads = node.attrs.get_ints_or("pads", {0, 0, 0, 0}, node.name);
    geo.dilations = node.attrs.get_ints_or("dilations", {1, 1}, node.name);
    geo.group = node.attrs.get_int_or("group", 1, node.name);
    return cpu_backend::qlinear_conv_cpu(*v[0], *v[1], *v[2], *v[3], *v[4], *v[5], *v[6], *v[7],
                                         v.size() > 8 ? v[8] : nullptr, geo, p, kernel_seconds);
  }
  if (node.op_type == "QLinearMatMul")
    return cpu_backend::qlinear_matmul_cpu(*v[0], *v[1], *v[2], *v[3], *v[4], *v[5], *v[6], *v[7],
                                           nullptr, p, kernel_seconds);
  const int64_t axis = node.attrs.get_int_or("axis", 1, node.name);
  const Tensor* zp = v.size() > 2 ? v[2] : nullptr;
  return node.op_type == "QuantizeLinear"
             ? cpu_backend::quantize_linear_cpu(*v[0], *v[1], zp, axis)
             : cpu_backend::dequantize_linear_cpu(*v[0], *v[1], zp, axis);
}

struct Model {
  std::unique_ptr<Graph> fp32, int8;
  std::map<std::string, Tensor> inputs;
  std::unique_ptr<cpu_backend::CpuJit> jit;
  std::vector<IntNode> nodes;
  bool ok = false;
};

/// Model 0: PP-OCR classifier; 1: ResNet-50. Loaded, quantised and compiled once.
Model* model(int which) {
  static std::map<int, std::unique_ptr<Model>> cache;
  auto& m = cache[which];
  if (m) return m.get();
  m = std::make_unique<Model>();
  graph_passes::PipelineOptions cpu_passes;
  cpu_passes.available = driver::target_ops(driver::Target::cpu);
  std::string int8_path;
  const fs::path tmp = fs::temp_directory_path();
  if (which == 0) {
    const std::string path =
        std::string(TESSEL_MODELS_DIR) + "/ch_ppocr_mobile_v2.0_cls_infer.onnx";
    if (!fs::exists(path)) return nullptr;
    m->fp32 = driver::load_model(path, {{"x", {1, 3, 48, 192}}}, cpu_passes);
    int8_path = std::string(TESSEL_SOURCE_DIR) +
                "/tests/data/models/ch_ppocr_mobile_v2.0_cls_infer_int8.onnx";
    m->int8 = driver::load_model(int8_path, {{"x", {1, 3, 48, 192}}});  // fold_qdq on (ref ops)
  } else {
    const auto proto = zoo::build_zoo_model("resnet50");
    const std::string path = (tmp / "tessel_bench_int8_resnet50.onnx").string();
    std::ofstream(path, std::ios::binary) << zoo::serialize_model(proto);
    m->fp32 = driver::load_model(path, {}, cpu_passes);
    driver::QuantizeOptions qo;
    qo.per_channel = true;
    const auto calib = driver::random_calibration(proto, "resnet50", 1, 1, {});
    const auto q = driver::quantize_static(proto, "resnet50", calib, qo);
    int8_path = (tmp / "tessel_bench_int8_resnet50_int8.onnx").string();
    std::ofstream(int8_path, std::ios::binary) << q.SerializeAsString();
    m->int8 = driver::load_model(int8_path, {});
    fs::remove(path);
    fs::remove(int8_path);
  }
  const Value* in = m->fp32->inputs.at(0);
  m->inputs[in->name] = random_tensor(in->shape, 7);
  m->jit = std::make_unique<cpu_backend::CpuJit>(cpu_backend::compile_cpu(*m->fp32));
  // Capture every integer node's inputs and output from one reference run of the int8 graph.
  std::map<const Value*, Tensor> seen;
  ops::ValueHook hook = [&](const Value& v, const Node* producer, Tensor& t) {
    seen[&v] = t;
    if (!producer) return;
    const std::string& op = producer->op_type;
    if (op != "QLinearConv" && op != "QLinearMatMul" && op != "QuantizeLinear" &&
        op != "DequantizeLinear")
      return;
    IntNode n{producer, {}, {}, t};
    for (const Value* i : producer->inputs) {
      n.present.push_back(i != nullptr);
      n.inputs.push_back(i ? seen.at(i) : Tensor());
    }
    m->nodes.push_back(std::move(n));
  };
  ops::run_reference(*m->int8, m->inputs, hook);
  m->ok = true;
  for (QGemmPath p : {QGemmPath::plain, cpu_backend::qgemm_host_path()})
    for (const IntNode& n : m->nodes) {
      const Tensor got = run_node(n, p, nullptr);
      m->ok = m->ok && got.dtype() == n.want.dtype() &&
              got.to_float_vector() == n.want.to_float_vector();
    }
  return m.get();
}

const char* kNames[] = {"ppocr_cls", "resnet50"};

void BM_Fp32Model(benchmark::State& state) {
  Model* m = model(static_cast<int>(state.range(0)));
  if (!m) return state.SkipWithError("model missing: run scripts/fetch_models.sh");
  tessel_cpu_set_threads(1);
  std::vector<const float*> in_ptrs;
  std::vector<std::vector<float>> outs;
  std::vector<float*> out_ptrs;
  for (const auto& b : m->jit->program().inputs)
    in_ptrs.push_back(m->inputs.at(b.value).data<float>());
  for (const auto& b : m->jit->program().outputs)
    outs.emplace_back(static_cast<size_t>(std::max<int64_t>(1, shape_numel(b.shape))));
  for (auto& o : outs) out_ptrs.push_back(o.data());
  for (auto _ : state) {
    m->jit->run(in_ptrs.data(), out_ptrs.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(
      fmt::format("{} fp32 whole model, tessel CPU backend, 1 thread", kNames[state.range(0)]));
}

void BM_Int8Layers(benchmark::State& state) {
  Model* m = model(static_cast<int>(state.range(0)));
  if (!m) return state.SkipWithError("model missing: run scripts/fetch_models.sh");
  if (!m->ok) return state.SkipWithError("CPU int8 kernels differ from the reference");
  const QGemmPath p = state.range(1) ? QGemmPath::vnni : QGemmPath::plain;
  if (p == QGemmPath::vnni && cpu_backend::qgemm_host_path() != QGemmPath::vnni)
    return state.SkipWithError("no AVX-512 VNNI on this host");
  double kernel_seconds = 0;
  int64_t iterations = 0;
  for (auto _ : state) {
    for (const IntNode& n : m->nodes) benchmark::DoNotOptimize(run_node(n, p, &kernel_seconds));
    ++iterations;
  }
  state.counters["kernel_ms"] = kernel_seconds * 1e3 / std::max<int64_t>(iterations, 1);
  state.counters["nodes"] = static_cast<double>(m->nodes.size());
  state.SetLabel(fmt::format("{} int8 integer nodes only, {} kernels, 1 thread",
                             kNames[state.range(0)], cpu_backend::qgemm_path_name(p)));
}

void BM_Int8Model(benchmark::State& state) {
  Model* m = model(static_cast<int>(state.range(0)));
  if (!m) return state.SkipWithError("model missing: run scripts/fetch_models.sh");
  const QGemmPath p = state.range(1) ? QGemmPath::vnni : QGemmPath::plain;
  if (p == QGemmPath::vnni && cpu_backend::qgemm_host_path() != QGemmPath::vnni)
    return state.SkipWithError("no AVX-512 VNNI on this host");
  tessel_cpu_set_threads(1);
  cpu_backend::CpuCompileOptions o;
  o.qgemm_path = p;
  o.target.threads = 1;
  const cpu_backend::CpuJit jit(cpu_backend::compile_cpu(*m->int8, o));
  std::vector<Tensor> outs;
  std::vector<float*> out_ptrs;
  std::vector<const float*> in_ptrs;
  for (const auto& b : jit.program().inputs) in_ptrs.push_back(m->inputs.at(b.value).data<float>());
  for (const auto& b : jit.program().outputs) outs.emplace_back(b.dtype, b.shape);
  for (auto& t : outs) out_ptrs.push_back(reinterpret_cast<float*>(t.raw()));
  jit.run(in_ptrs.data(), out_ptrs.data());  // warm-up (page faults, kernels' first use)
  for (auto _ : state) {
    jit.run(in_ptrs.data(), out_ptrs.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(fmt::format("{} int8 whole model, --target cpu plan, {} kernels, 1 thread",
                             kNames[state.range(0)], cpu_backend::qgemm_path_name(p)));
}

BENCHMARK(BM_Fp32Model)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(BM_Int8Model)
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0);
BENCHMARK(BM_Int8Layers)
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
