// Graph IR -> NVPTX module and launch plan (see compile.h).
#include "compiler/backend/gpu/compile.h"

#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <mutex>
#include <set>

#include "compiler/backend/cpu/jit.h"
#include "compiler/lower/int8_compute.h"
#include "compiler/lower/lower_te.h"
#include "compiler/support/error.h"

namespace tessel::gpu_backend {

namespace L = tessel::loop;
using cpu_backend::CpuKernelInfo;
using cpu_backend::KernelPlan;
using cpu_backend::ModelPlan;
using cpu_backend::PlanParam;
using cpu_backend::ValueStorage;

GpuProgram::GpuProgram() = default;
GpuProgram::GpuProgram(GpuProgram&&) noexcept = default;
GpuProgram& GpuProgram::operator=(GpuProgram&&) noexcept = default;
GpuProgram::~GpuProgram() {
  module.reset();  // before its context
  context.reset();
}

bool GpuProgram::uses_fp16() const {
  for (const auto& k : kernels)
    if (k.tensor_cores) return true;
  return false;
}

size_t GpuProgram::launch_count() const {
  size_t n = 0;
  for (const auto& k : kernels) n += k.launches.size();
  return n;
}

namespace {

constexpr int64_t kScratchAlign = 256;
/// Shared memory for the tiles of a windowed kernel: within the 48 KiB a block gets without the
/// opt-in, so several blocks share an SM.
constexpr int64_t kWindowSharedBytes = 48 * 1024;

int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

/// Whether every buffer of a kernel holds fp32 elements.
bool all_f32(const lower::TensorBuffers& buffers) {
  for (const auto& [t, b] : buffers)
    if (b->dtype != DType::f32) return false;
  return true;
}

/// The GPU's schedules (gpu_passes.h).
class GpuScheduler : public cpu_backend::KernelScheduler {
 public:
  explicit GpuScheduler(const GpuCompileOptions& o) : opts_(o) {}

  std::optional<passes::CpuGemmResult> contraction(const passes::CpuKernelSpec& spec,
                                                   const te::Tensor& contraction,
                                                   CpuKernelInfo& info) override {
    // gpu_gemm's tiles are fp32 (rounded to fp16 for the tensor cores): a contraction over
    // other dtypes (float64, integers) is scheduled generically, exact in its own dtype.
    if (!all_f32(spec.buffers)) return std::nullopt;
    passes::GpuGemmKnobs knobs = opts_.gemm;
    auto it = opts_.gemm_knobs.find(info.node);
    if (it != opts_.gemm_knobs.end()) knobs = it->second;
    auto g = passes::gpu_gemm(spec, contraction, opts_.target, &knobs);
    if (g) {
      info.kind = knobs.tensor_cores ? "gemm-mma" : "gemm-fp32";
      knobs_[info.node] = knobs;
    }
    return g;
  }

  /// The int8 ops (QuantizeLinear, QLinearConv, ...) as generic integer computes
  /// (lower::int8_compute): generated kernels like every other, where the CPU has host ones.
  te::Tensor node_compute(const Node& node, lower::ComputeContext& ctx) override {
    if (lower::is_int8_compute_op(node.op_type)) return lower::int8_compute(node, ctx);
    return nullptr;
  }

  L::Stmt generic(const te::Tensor& out, const lower::TensorBuffers& buffers) override {
    // gpu_tile's shared-memory tiles are fp32 (TileEmitter's activation dtype): windows over
    // integer, bool or float64 tensors are computed by gpu_bind in their own dtypes.
    if (opts_.tile_windows && all_f32(buffers))
      if (auto t = passes::gpu_tile(out->name, out, buffers, opts_.target, opts_.generic,
                                    kWindowSharedBytes))
        return *t;
    return passes::gpu_bind(lower::lower_te(out, buffers), opts_.target, opts_.generic);
  }

  std::map<std::string, passes::GpuGemmKnobs> knobs_;  // by node: what the contractions used

 private:
  const GpuCompileOptions& opts_;
};

/// Allocations a launch reads or writes that it does not allocate itself.
std::vector<L::Buffer> launch_buffers(const L::Stmt& body) {
  std::vector<L::Buffer> order;
  std::set<const L::BufferNode*> seen, inner;
  L::visit_stmt(body, [&](const L::Stmt& s) {
    if (s->kind == L::StmtKind::Allocate) inner.insert(s->buffer.get());
  });
  auto add = [&](const L::Buffer& b) {
    const L::BufferNode* a = b->storage();
    if (inner.count(a) || seen.count(a)) return;
    seen.insert(a);
    order.push_back(b->base ? b->base : b);
  };
  L::visit_stmt(body, [&](const L::Stmt& s) {
    auto visit = [&](const L::Expr& e) {
      if (!e) return;
      L::visit_expr(e, [&](const L::ExprNode& n) {
        if (n.kind == L::ExprKind::Load) add(n.buffer);
      });
    };
    if (s->kind == L::StmtKind::Store) add(s->buffer);
    visit(s->value);
    visit(s->cond);
    for (const auto& i : s->indices) visit(i);
    for (const auto& o : s->operands) {
      if (o.buffer) add(o.buffer);
      visit(o.elem_offset);
    }
  });
  return order;
}

class Compiler {
 public:
  Compiler(const Graph& g, const GpuCompileOptions& o) : graph_(g), opts_(o) {}

  GpuProgram run() {
    prog_.name = graph_.name.empty() ? "model" : graph_.name;
    prog_.target = opts_.target;
    prog_.context = std::make_unique<llvm::LLVMContext>();
    prog_.module =
        std::make_unique<llvm::Module>(cpu_backend::sanitize_symbol(prog_.name), *prog_.context);
    prog_.module->setTargetTriple(kNvptxTriple);
    prog_.module->setDataLayout(kNvptxDataLayout);
    GpuScheduler sched(opts_);
    cpu_backend::PlanOptions po;
    po.target = "GPU";
    po.fuse_epilogues = opts_.fuse_epilogues;
    po.keep_loop_ir = opts_.keep_loop_ir;
    // Integer, bool and float64 values in their own dtypes (the CPU's mechanism: the typed
    // computes and LoopCodegen's typed expressions); guarded kernels of an If's branches run
    // when the host reads their guard true (GpuKernel::guard).
    po.typed_values = true;
    po.branches = true;
    prog_.plan = cpu_backend::plan_model(graph_, sched, po);
    for (const KernelPlan& kp : prog_.plan.plans) {
      GpuKernel k;
      k.info_index = kp.info_index;
      const CpuKernelInfo& info = prog_.plan.kernels[kp.info_index];
      auto it = sched.knobs_.find(info.node);
      if (it != sched.knobs_.end()) {
        k.gemm = it->second;
        k.tensor_cores = it->second.tensor_cores;
      }
      if (kp.guard) {
        PlanParam g;
        g.value = kp.guard;
        g.buffer = L::make_buffer(kp.guard->name, L::MemScope::host, DType::boolean, {1});
        k.guard = arg_of(g, kp);
      }
      try {
        plan_kernel(kp, k);
      } catch (const Error& e) {
        fail("node '{}' ({}): {}", info.node, info.op_type, e.what());
      }
      prog_.scratch_bytes = std::max(prog_.scratch_bytes, k.scratch_bytes);
      prog_.kernels.push_back(std::move(k));
    }
    return std::move(prog_);
  }

 private:
  const Graph& graph_;
  const GpuCompileOptions& opts_;
  GpuProgram prog_;

  GpuArg arg_of(const PlanParam& p, const KernelPlan& kp) {
    ModelPlan& plan = prog_.plan;
    if (p.constant >= 0) return {GpuArg::Kind::constant, p.constant, 0};
    if (!p.value) return {GpuArg::Kind::output, kp.output_copy, 0};
    const Value* r = plan.root(p.value);
    // A constant read through an fp32 buffer is its fp32 copy, else the value in its own dtype.
    if (r->constant)
      return {GpuArg::Kind::constant,
              p.buffer->dtype == DType::f32 ? plan.constant_of(r) : plan.native_constant_of(r), 0};
    auto it = plan.storage.find(r);
    TESSEL_CHECK(it != plan.storage.end(), "value {} has no storage", r->name);
    switch (it->second.kind) {
      case ValueStorage::Kind::input:
        return {GpuArg::Kind::input, it->second.index, 0};
      case ValueStorage::Kind::output:
        return {GpuArg::Kind::output, it->second.index, 0};
      case ValueStorage::Kind::arena:
        return {GpuArg::Kind::arena, 0, it->second.offset_bytes};
      default:
        internal_fail("value without storage: {}", r->name);
    }
  }

  /// Splits the kernel's loop IR into launches: top-level allocations become scratch memory,
  /// every gpu_block loop a launch.
  void plan_kernel(const KernelPlan& kp, GpuKernel& k) {
    const CpuKernelInfo& info = prog_.plan.kernels[kp.info_index];
    std::map<const L::BufferNode*, GpuArg> args;
    for (const auto& p : kp.params) args[p.buffer.get()] = arg_of(p, kp);
    std::function<void(const L::Stmt&)> walk = [&](const L::Stmt& s) {
      if (!s) return;
      if (s->kind == L::StmtKind::Allocate) {
        TESSEL_CHECK(s->buffer->scope == L::MemScope::host,
                     "kernel {}: {} allocation {} outside a launch", info.node,
                     L::scope_name(s->buffer->scope), s->buffer->name);
        const int64_t off = align_up(k.scratch_bytes, kScratchAlign);
        args[s->buffer.get()] = {GpuArg::Kind::scratch, 0, off};
        k.scratch_bytes = off + std::max<int64_t>(s->buffer->alloc_bytes, 1);
        walk(s->body);
        return;
      }
      if (s->kind == L::StmtKind::Seq) {
        for (const auto& x : s->seq) walk(x);
        return;
      }
      if (s->kind == L::StmtKind::For && s->for_kind == L::ForKind::gpu_block) {
        GpuLaunch l;
        l.entry = fmt::format("{}{}_l{}", opts_.entry_prefix, info.function, k.launches.size());
        l.shape = kernel_shape(s);
        l.what = s->comment;
        std::vector<L::Buffer> params = launch_buffers(s);
        for (const auto& b : params) {
          l.bytes += b->alloc_bytes;
          auto it = args.find(b.get());
          TESSEL_CHECK(it != args.end(), "kernel {}: buffer {} is neither a parameter nor scratch",
                       info.node, b->name);
          l.args.push_back(it->second);
        }
        llvm::Function* f = emit_gpu_kernel(*prog_.module, l.entry, params, s);
        std::string diag;
        llvm::raw_string_ostream os(diag);
        if (llvm::verifyFunction(*f, &os)) {
          os.flush();
          fail("LLVM rejected the generated function {}: {}", l.entry, diag);
        }
        k.launches.push_back(std::move(l));
        return;
      }
      internal_fail("kernel {}: a statement outside any GPU launch:\n{}", info.node,
                    L::to_string(s));
    };
    walk(kp.body);
  }
};

void init_nvptx() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

}  // namespace

GpuProgram compile_gpu(const Graph& graph, const GpuCompileOptions& options) {
  Compiler c(graph, options);
  return c.run();
}

std::string gpu_llvm_ir_text(const GpuProgram& program) {
  std::string text;
  llvm::raw_string_ostream os(text);
  program.module->print(os, nullptr);
  os.flush();
  return text;
}

std::string gpu_ptx(const GpuProgram& program) {
  init_nvptx();
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kNvptxTriple, err);
  if (!target) fail("gpu backend: the NVPTX target is not available: {}", err);
  const std::string cpu = fmt::format("sm_{}", program.target.sm);
  std::unique_ptr<llvm::TargetMachine> tm(
      target->createTargetMachine(kNvptxTriple, cpu, "+ptx70", llvm::TargetOptions(), llvm::None,
                                  llvm::None, llvm::CodeGenOpt::Aggressive));
  if (!tm) fail("gpu backend: cannot create an NVPTX target machine for {}", cpu);
  std::unique_ptr<llvm::Module> m = llvm::CloneModule(*program.module);
  cpu_backend::optimize_module(*m, *tm);
  std::string ptx;
  {
    llvm::raw_string_ostream os(ptx);
    llvm::buffer_ostream bos(os);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, bos, nullptr, llvm::CGFT_AssemblyFile))
      fail("gpu backend: NVPTX cannot emit PTX for {}", cpu);
    pm.run(*m);
  }
  return ptx;
}

}  // namespace tessel::gpu_backend
