// Graph IR -> kernels in loop IR, their arguments and the weights blob for the CPU (see
// compile.h).
#include "compiler/backend/cpu/compile.h"

#include <fmt/format.h>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <set>

#include "compiler/backend/cpu/int8_kernels.h"
#include "compiler/backend/cpu/model_plan.h"
#include "compiler/lower/lower_te.h"
#include "compiler/lower/op_compute.h"
#include "compiler/support/error.h"

namespace tessel::cpu_backend {

namespace L = tessel::loop;

AlignedBytes AlignedBytes::zeros(int64_t size) {
  AlignedBytes b;
  const size_t bytes = static_cast<size_t>(std::max<int64_t>(64, (size + 63) / 64 * 64));
  auto* raw = static_cast<uint8_t*>(std::aligned_alloc(64, bytes));
  if (!raw) throw std::bad_alloc();
  std::memset(raw, 0, bytes);
  b.data = std::shared_ptr<uint8_t>(raw, [](uint8_t* q) { std::free(q); });
  b.size = size;
  return b;
}

std::vector<const CpuKernelInfo*> CpuProgram::timed_kernels() const {
  std::vector<const CpuKernelInfo*> r;
  for (const auto& k : kernels)
    if (!k.function.empty()) r.push_back(&k);
  return r;
}

std::vector<std::string> cpu_ops() {
  std::vector<std::string> ops = lower::compute_ops();
  for (const auto& t : lower::typed_compute_ops()) ops.push_back(t);
  for (const auto& p : lower::parts_ops()) ops.push_back(p);
  for (const char* v :
       {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Cast"})
    ops.push_back(v);
  for (const auto& q : int8_ops()) ops.push_back(q);
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return ops;
}

namespace {

constexpr int64_t kAlign = 64;

int64_t align_up(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

/// The CPU's schedules: the BLIS nest for contractions (cpu_gemm), the staged window for
/// depthwise convolutions (cpu_depthwise), lower_te + cpu_vectorize + cpu_unroll + cpu_parallel
/// for everything else.
class CpuScheduler : public KernelScheduler {
 public:
  explicit CpuScheduler(const CpuCompileOptions& o) : opts_(o) {}

  std::optional<passes::CpuGemmResult> contraction(const passes::CpuKernelSpec& spec,
                                                   const te::Tensor& contraction,
                                                   CpuKernelInfo& info) override {
    // The BLIS schedule packs fp32 panels: a contraction over other dtypes (float64) is
    // scheduled generically.
    for (const auto& [t, b] : spec.buffers)
      if (b->dtype != DType::f32) return std::nullopt;
    passes::CpuGemmKnobs knobs;
    auto it = opts_.gemm_knobs.find(info.node);
    if (it != opts_.gemm_knobs.end()) knobs = it->second;
    auto g = passes::cpu_gemm(spec, contraction, opts_.target, &knobs);
    if (g) {
      info.kind = "gemm";
      info.gemm = knobs;
    }
    return g;
  }

  std::optional<passes::CpuDepthwiseResult> depthwise(const passes::CpuKernelSpec& spec,
                                                      const te::Tensor& dw,
                                                      CpuKernelInfo& info) override {
    passes::CpuDepthwiseKnobs knobs;
    auto it = opts_.depthwise_knobs.find(info.node);
    if (it != opts_.depthwise_knobs.end()) knobs = it->second;
    auto d = passes::cpu_depthwise(spec, dw, opts_.target, &knobs);
    if (d) {
      info.kind = "depthwise";
      info.depthwise = knobs;
    }
    return d;
  }

  std::shared_ptr<const ExternKernel> extern_kernel(const Node& node) override {
    return make_int8_kernel(node, opts_.qgemm_path ? *opts_.qgemm_path : default_qgemm_path());
  }

  std::shared_ptr<const ExternKernel> extern_copy(int64_t bytes) override {
    return make_copy_kernel(bytes);
  }

  L::Stmt generic(const te::Tensor& out, const lower::TensorBuffers& buffers) override {
    L::Stmt body = lower::lower_te(out, buffers);
    const auto& k = opts_.generic;
    if (k.vectorize) body = passes::cpu_vectorize(body, opts_.target);
    body = passes::cpu_unroll(body, k.unroll_max_extent);
    if (k.parallel) body = passes::cpu_parallel(body, opts_.target, k.parallel_min_work);
    return body;
  }

 private:
  const CpuCompileOptions& opts_;
};

/// Turns a planned model (model_plan.h) into the program: the kernels' code and arguments and
/// the weights blob.
class Compiler {
 public:
  Compiler(const Graph& g, const CpuCompileOptions& o) : graph_(g), opts_(o) {}

  CpuProgram run() {
    prog_.name = graph_.name.empty() ? "model" : graph_.name;
    prog_.target = opts_.target;
    prog_.build = opts_.build;
    CpuScheduler sched(opts_);
    PlanOptions po;
    po.fuse_epilogues = opts_.fuse_epilogues;
    po.keep_loop_ir = opts_.keep_loop_ir;
    po.integer_inputs = true;
    po.typed_values = true;
    po.branches = true;
    plan_ = plan_model(graph_, sched, po);
    collect_code();
    prog_.kernels = plan_.kernels;
    prog_.inputs = plan_.inputs;
    prog_.outputs = plan_.outputs;
    prog_.arena_bytes = plan_.arena_bytes;
    return std::move(prog_);
  }

 private:
  const Graph& graph_;
  const CpuCompileOptions& opts_;
  CpuProgram prog_;
  ModelPlan plan_;

  // ------------------------------------------------------------------ code
  /// The weights blob: every constant a kernel reads, at 64-byte aligned offsets.
  std::vector<int64_t> const_offset_;  // by constant index; -1 until placed
  void place_weights() {
    std::vector<int> order;  // constants in the order kernels first use them
    std::set<int> seen;
    for (const auto& p : plan_.plans)
      for (const auto& prm : p.params) {
        int c = prm.constant;
        if (c < 0 && prm.value && plan_.root(prm.value)->constant)
          c = constant_index(plan_.root(prm.value), prm.buffer->dtype);
        if (c >= 0 && seen.insert(c).second) order.push_back(c);
      }
    const_offset_.assign(plan_.constants.size(), -1);
    int64_t total = 0;
    for (int c : order) {
      const_offset_[c] = total;
      total +=
          align_up(std::max<int64_t>(1, static_cast<int64_t>(plan_.constants[c].data().nbytes())));
    }
    prog_.weights = AlignedBytes::zeros(total);
    prog_.constant_bytes = 0;
    for (int c : order) {
      // fp32, or an integer / bool constant of a typed kernel in its own dtype.
      const Tensor& t = plan_.constants[c].data();
      if (t.nbytes() > 0)
        std::memcpy(prog_.weights.data.get() + const_offset_[c], t.raw(), t.nbytes());
      prog_.constant_bytes += static_cast<int64_t>(t.nbytes());
    }
  }

  /// The constant index of constant value `v` read through a buffer of `dtype` (fp32: the fp32
  /// copy; else the value in its own dtype).
  int constant_index(const Value* v, DType dtype) {
    return dtype == DType::f32 ? plan_.constant_of(v) : plan_.native_constant_of(v);
  }

  /// What parameter `p` of a kernel points at (`output_index`: the graph output an output-copy
  /// kernel writes).
  CpuArg arg_of(const PlanParam& p, int output_index) {
    CpuArg a;
    if (p.constant >= 0) {
      a.kind = CpuArg::Kind::weights;
      a.offset_bytes = const_offset_.at(p.constant);
      return a;
    }
    if (!p.value) {
      a.kind = CpuArg::Kind::output;
      a.index = output_index;
      return a;
    }
    const Value* r = plan_.root(p.value);
    if (r->constant) {
      a.kind = CpuArg::Kind::weights;
      a.offset_bytes = const_offset_.at(constant_index(r, p.buffer->dtype));
      return a;
    }
    auto it = plan_.storage.find(r);
    TESSEL_CHECK(it != plan_.storage.end(), "value {} has no storage", r->name);
    const ValueStorage& s = it->second;
    switch (s.kind) {
      case ValueStorage::Kind::input:
        a.kind = CpuArg::Kind::input;
        a.index = s.index;
        return a;
      case ValueStorage::Kind::output:
        a.kind = CpuArg::Kind::output;
        a.index = s.index;
        return a;
      case ValueStorage::Kind::arena:
        a.kind = CpuArg::Kind::arena;
        a.offset_bytes = s.offset_bytes;
        return a;
      default:
        internal_fail("value without storage: {}", r->name);
    }
  }

  /// Allocations the statements of `body` load from or store to.
  static std::set<const L::BufferNode*> used_storage(const L::Stmt& body) {
    std::set<const L::BufferNode*> used;
    auto expr = [&](const L::Expr& e) {
      if (!e) return;
      L::visit_expr(e, [&](const L::ExprNode& x) {
        if (x.kind == L::ExprKind::Load && x.buffer) used.insert(x.buffer->storage());
      });
    };
    L::visit_stmt(body, [&](const L::Stmt& s) {
      if (s->kind == L::StmtKind::Store || s->kind == L::StmtKind::Prefetch) {
        used.insert(s->buffer->storage());
        for (const auto& i : s->indices) expr(i);
        expr(s->value);
      }
      if (s->kind == L::StmtKind::If) expr(s->cond);
    });
    return used;
  }

  void collect_code() {
    // A kernel's parameters that its code never touches are dropped (e.g. the weights a GEMM
    // schedule packed into panels: only the panels go to the weights blob).
    for (auto& p : plan_.plans) {
      if (p.ext) continue;  // a host function: every parameter is an argument
      const auto used = used_storage(p.body);
      std::vector<PlanParam> kept;
      for (auto& prm : p.params)
        if (used.count(prm.buffer.get())) kept.push_back(prm);
      p.params = std::move(kept);
    }
    place_weights();
    for (const KernelPlan& p : plan_.plans) {
      CpuKernelCode c;
      c.info_index = p.info_index;
      c.body = p.body;
      c.ext = p.ext;
      for (const auto& prm : p.params) {
        c.params.push_back(prm.buffer);
        c.args.push_back(arg_of(prm, p.output_copy));
      }
      if (p.guard) {
        PlanParam g;
        g.value = p.guard;
        g.buffer = L::make_buffer(p.guard->name, L::MemScope::host, DType::boolean, {1});
        c.guard = arg_of(g, -1);
      }
      prog_.code.push_back(std::move(c));
    }
  }
};

}  // namespace

CpuProgram compile_cpu(const Graph& graph, const CpuCompileOptions& options) {
  Compiler c(graph, options);
  return c.run();
}

}  // namespace tessel::cpu_backend
