// Standalone contraction kernels (see kernels.h).
#include "compiler/backend/gpu/kernels.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "compiler/lower/op_compute.h"
#include "compiler/ops/op_registry.h"
#include "compiler/support/error.h"

namespace tessel::gpu_backend {

namespace L = tessel::loop;

namespace {

class Placeholders : public lower::ComputeContext {
 public:
  te::Tensor input(const Value* v) override {
    auto it = map.find(v);
    if (it != map.end()) return it->second;
    return map[v] = te::placeholder(v->name, v->shape);
  }
  te::Tensor derived_constant(const std::string& name, const Tensor&) override {
    internal_fail("standalone kernel: derived constant {}", name);
  }
  std::map<const Value*, te::Tensor> map;
};

/// The kernel of graph `g`'s single node, its inputs in the given dtypes.
StandaloneKernel build(const Graph& g, const std::map<const Value*, DType>& dtypes,
                       passes::GpuGemmKnobs knobs, const passes::GpuTarget& target,
                       const std::string& entry) {
  const Node& node = *g.nodes().front();
  Placeholders ctx;
  te::Tensor out = lower::op_compute(node, ctx);
  passes::CpuKernelSpec spec;
  spec.name = entry;
  spec.out = out;
  StandaloneKernel k;
  for (const Value* v : node.inputs) {
    if (!v) continue;
    const te::Tensor& ph = ctx.map.at(v);
    auto dt = dtypes.find(v);
    spec.buffers[ph.get()] = L::make_buffer(v->name, L::MemScope::host,
                                            dt == dtypes.end() ? DType::f32 : dt->second, v->shape);
    if (v->constant) spec.constants[ph.get()] = &*v->constant;
    if (!v->constant) k.params.push_back(spec.buffers[ph.get()]);
  }
  const Value* y = node.outputs[0];
  spec.buffers[out.get()] = L::make_buffer(y->name, L::MemScope::host, DType::f32, y->shape);
  k.params.push_back(spec.buffers[out.get()]);
  auto r = passes::gpu_gemm(spec, out, target, &knobs);
  if (!r) fail("{}: gpu_gemm does not schedule this contraction", entry);
  for (const auto& c : r->constants) k.params.push_back(c.buffer);
  k.constants = r->constants;
  k.knobs = knobs;
  k.flops = r->flops;
  k.entry = entry;
  k.shape = kernel_shape(r->body);
  k.program.context = std::make_unique<llvm::LLVMContext>();
  k.program.module = std::make_unique<llvm::Module>(entry, *k.program.context);
  k.program.module->setTargetTriple(kNvptxTriple);
  k.program.module->setDataLayout(kNvptxDataLayout);
  k.program.target = target;
  emit_gpu_kernel(*k.program.module, entry, k.params, r->body);
  return k;
}

}  // namespace

StandaloneKernel gemm_kernel(int64_t M, int64_t N, int64_t K, DType operands,
                             passes::GpuGemmKnobs knobs, passes::GpuTarget target) {
  Graph g;
  g.opset = 17;
  Value* a = g.add_value("A", DType::f32, {M, K});
  Value* b = g.add_value("B", DType::f32, {K, N});
  Value* c = g.add_value("C", DType::undefined, {});
  ops::infer_node(*g.add_node("MatMul", "gemm", {a, b}, {c}, {}));
  return build(g, {{a, operands}, {b, operands}}, knobs, target, "gemm");
}

StandaloneKernel conv_kernel(const Shape& x, const Tensor& w, int64_t stride, int64_t pad,
                             DType x_dtype, passes::GpuGemmKnobs knobs, passes::GpuTarget target) {
  Graph g;
  g.opset = 17;
  Value* xv = g.add_value("x", DType::f32, x);
  Value* wv = g.add_constant("w", w);
  Value* y = g.add_value("y", DType::undefined, {});
  Attributes a;
  a.set("strides", std::vector<int64_t>{stride, stride});
  a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
  ops::infer_node(*g.add_node("Conv", "conv", {xv, wv}, {y}, a));
  return build(g, {{xv, x_dtype}}, knobs, target, "conv");
}

}  // namespace tessel::gpu_backend
