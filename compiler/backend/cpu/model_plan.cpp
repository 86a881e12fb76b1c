// Planning a model as loop-IR kernels (see model_plan.h).
#include "compiler/backend/cpu/model_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "compiler/lower/op_compute.h"
#include "compiler/support/error.h"
#include "passes/graph/graph_passes.h"

namespace tessel::cpu_backend {

namespace L = tessel::loop;

namespace {

constexpr int64_t kAlign = 64;

int64_t align_up(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

/// Ops that may consume a contraction's output as its fused epilogue (elementwise, one output).
bool epilogue_op(const std::string& op) {
  static const std::set<std::string> ops = {
      "Relu", "Clip", "HardSwish", "HardSigmoid", "Sigmoid", "LeakyRelu",
      "Tanh", "Add",  "Sub",       "Mul",         "Div",     "BatchNormalization"};
  return ops.count(op) > 0;
}

/// Whether a value of dtype `dt` is stored (and computed) in its own dtype: integers, bool and
/// float64 on a typed target; every other float is stored as fp32.
bool own_dtype(DType dt, bool typed) { return typed && (dt == DType::f64 || !dtype_is_float(dt)); }

class CpuContext : public lower::ComputeContext {
 public:
  /// `typed`: integer and bool values are read in their own dtypes (PlanOptions::typed_values).
  CpuContext(std::map<const Value*, te::Tensor>* inside, bool typed)
      : inside_(inside), typed_(typed) {}
  bool typed_values() const override { return typed_; }
  /// The dtype a kernel reads `dt` in: its own for integers and bool on a typed target, else
  /// fp32 (f16 / f64 values are stored as fp32).
  DType storage(DType dt) const { return own_dtype(dt, typed_) ? dt : DType::f32; }
  te::Tensor input(const Value* v) override {
    if (inside_) {
      auto it = inside_->find(v);
      if (it != inside_->end()) return it->second;
    }
    auto it = placeholders.find(v);
    if (it != placeholders.end()) return it->second;
    te::Tensor p = te::placeholder(v->name, v->shape, storage(v->dtype));
    placeholders[v] = p;
    order.push_back(v);
    return p;
  }
  te::Tensor derived_constant(const std::string& name, const Tensor& data) override {
    te::Tensor p = te::placeholder(name, data.shape(), storage(data.dtype()));
    derived.emplace_back(p, data);
    return p;
  }
  std::map<const Value*, te::Tensor> placeholders;
  std::vector<const Value*> order;  // placeholders in the order the compute asked for them
  std::vector<std::pair<te::Tensor, Tensor>> derived;

 private:
  std::map<const Value*, te::Tensor>* inside_;
  bool typed_ = false;
};

Tensor to_f32(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<float>(t.get_as_double(i));
  return Tensor::from_floats(t.shape(), v);
}

/// Plans one graph (see model_plan.h).
class Planner {
 public:
  Planner(const Graph& g, KernelScheduler& s, const PlanOptions& o)
      : graph_(g), sched_(s), opts_(o) {}

  ModelPlan run() {
    for (size_t i = 0; i < graph_.inputs.size(); ++i) {
      const Value* v = graph_.inputs[i];
      const bool integer = v->dtype == DType::u8 || v->dtype == DType::i8 || v->dtype == DType::i32;
      if ((integer && opts_.integer_inputs) || own_dtype(v->dtype, opts_.typed_values)) {
        plan_.storage[v] = {ValueStorage::Kind::input, static_cast<int>(i), 0};
        plan_.native.insert(v);
        ready_.insert(v);
        plan_.inputs.push_back({v->name, v->shape, v->dtype});
        continue;
      }
      if (!dtype_is_float(v->dtype))
        throw Unsupported(
            fmt::format("graph input '{}' has dtype {}; the {} backend takes float inputs", v->name,
                        dtype_to_string(v->dtype), opts_.target));
      // The generated code computes in fp32: a float64 model would silently lose range and
      // precision (values beyond 3.4e38 become inf), so it is refused rather than downgraded.
      if (v->dtype == DType::f64)
        throw Unsupported(fmt::format(
            "graph input '{}' is float64; the {} backend computes in fp32 (use --target ref)",
            v->name, opts_.target));
      plan_.storage[v] = {ValueStorage::Kind::input, static_cast<int>(i), 0};
      ready_.insert(v);
      plan_.inputs.push_back({v->name, v->shape});
    }
    plan_nodes();
    guard_kernels();
    bind_outputs();
    plan_arena();
    return std::move(plan_);
  }

 private:
  const Graph& graph_;
  KernelScheduler& sched_;
  const PlanOptions& opts_;
  ModelPlan plan_;

  const Value* root(const Value* v) const { return plan_.root(v); }

  /// The dtype `v` is stored in: its root's own dtype when the root is stored natively (an
  /// integer or bool value on a typed target, an int8 kernel's integer value), else fp32.
  DType storage(const Value* v) const {
    const Value* r = root(v);
    if (plan_.native.count(r) || own_dtype(r->dtype, opts_.typed_values)) return r->dtype;
    return DType::f32;
  }
  /// Marks a value a generated kernel writes as stored natively when it is not a float.
  void note_written(const Value* v) {
    if (v && own_dtype(root(v)->dtype, opts_.typed_values)) plan_.native.insert(root(v));
  }
  /// The constant index of constant `v` in the dtype kernels read it in (storage()).
  int constant_for(const Value* v) {
    return storage(v) == DType::f32 ? plan_.constant_of(v) : plan_.native_constant_of(v);
  }

  // ------------------------------------------------------------------ planning
  /// The guard of every kernel of a branch node (graph_passes::guard_branches): read by the
  /// kernel, so it stays live until the branch's last kernel.
  void guard_kernels() {
    for (KernelPlan& p : plan_.plans) {
      if (!p.node) continue;
      const Value* g = graph_passes::branch_guard(graph_, *p.node);
      if (!g) continue;
      if (!opts_.branches)
        throw Unsupported(fmt::format(
            "{}: runs under an If's run-time condition '{}'; the {} backend does not branch "
            "(only an If whose condition is known at compile time is compiled)",
            p.node->describe(), g->name, opts_.target));
      if (root(g)->constant || root(g)->dtype != DType::boolean || shape_numel(root(g)->shape) != 1)
        throw Unsupported(fmt::format(
            "{}: guard '{}' is not a computed bool scalar; the {} backend branches on one",
            p.node->describe(), g->name, opts_.target));
      p.guard = g;
      p.reads.push_back(g);
    }
  }

  std::set<const Node*> fused_away_;  // nodes computed inside an earlier node's kernel
  std::set<const Value*> ready_;      // root values computed (or input) before the next kernel

  /// The chain of nodes starting at contraction `p` that fuse into one kernel (p first).
  std::vector<const Node*> epilogue_chain(const Node& p) {
    std::vector<const Node*> chain = {&p};
    if (!opts_.fuse_epilogues) return chain;
    const Node* cur = &p;
    for (;;) {
      if (cur->outputs.size() != 1 && !(cur->outputs.size() > 1 && !cur->outputs[1])) break;
      const Value* v = cur->outputs[0];
      if (!v || v->constant) break;
      if (std::find(graph_.outputs.begin(), graph_.outputs.end(), v) != graph_.outputs.end()) break;
      auto users = graph_.users(v);
      if (users.size() != 1) break;
      const Node* u = users[0];
      // Kernels of a branch run under its guard: nodes under different guards do not fuse.
      if (graph_passes::branch_guard(graph_, *u) != graph_passes::branch_guard(graph_, *cur)) break;
      if (!epilogue_op(u->op_type) || u->outputs.empty() || !u->outputs[0] ||
          u->outputs[0]->shape != v->shape || u->outputs[0]->constant || fused_away_.count(u))
        break;
      // The kernel runs where the chain starts: every other operand of u must be computed by
      // then (e.g. a residual Add whose other branch comes later in the graph is not fused).
      bool operands_ready = true;
      for (const Value* in : u->inputs)
        if (in && in != v && !in->constant && !ready_.count(root(in))) operands_ready = false;
      if (!operands_ready) break;
      chain.push_back(u);
      cur = u;
    }
    return chain;
  }

  void plan_nodes() {
    for (const auto& nptr : graph_.nodes()) {
      const Node& node = *nptr;
      CpuKernelInfo info;
      info.node = node.name;
      info.op_type = node.op_type;
      if (fused_away_.count(&node)) continue;  // added with its kernel
      bool all_known = true;
      for (const Value* o : node.outputs)
        if (o && !o->constant) all_known = false;
      if (all_known) {
        info.kind = "const";
        plan_.kernels.push_back(info);
        continue;
      }
      bool all_empty = true;  // zero-element outputs: nothing to compute
      for (const Value* o : node.outputs)
        if (o && shape_numel(o->shape) != 0) all_empty = false;
      if (all_empty) {
        info.kind = "empty";
        plan_.kernels.push_back(info);
        continue;
      }
      for (size_t i = 1; i < node.outputs.size(); ++i) {
        const Value* extra = node.outputs[i];
        if (!extra || extra->constant) continue;
        const bool is_out =
            std::find(graph_.outputs.begin(), graph_.outputs.end(), extra) != graph_.outputs.end();
        if (is_out || !graph_.users(extra).empty())
          throw Unsupported(
              fmt::format("{}: output {} ('{}') is used but the {} backend "
                          "computes only the first output",
                          node.describe(), i, extra->name, opts_.target));
      }
      if (node.op_type == "Dropout") require_inference_dropout(node);
      // A float Cast between fp32-stored dtypes is a view; one to or from a float64 stored in
      // its own dtype is computed.
      if (lower::is_alias_op(node) && storage(node.input(0)) == storage(node.outputs[0])) {
        info.kind = "view";
        plan_.alias[node.outputs[0]] = node.input(0);
        plan_.kernels.push_back(info);
        continue;
      }
      if (auto ext = sched_.extern_kernel(node)) {
        plan_extern(node, info, std::move(ext));
        continue;
      }
      std::vector<const Node*> chain = {&node};
      if (node.op_type == "Conv" || node.op_type == "MatMul" || node.op_type == "Gemm")
        chain = epilogue_chain(node);
      for (const Node* n : chain)  // before any compute: a clear message for integer inputs
        for (const Value* in : n->inputs)
          if (in && !in->constant) require_fp32_storage(in, *n);
      const Node& last = *chain.back();
      for (const Value* o : last.outputs)
        if (o) ready_.insert(root(o));
      for (size_t i = 0; i + 1 < chain.size(); ++i) {
        fused_away_.insert(chain[i + 1]);
        CpuKernelInfo fi;
        fi.node = chain[i]->name;
        fi.op_type = chain[i]->op_type;
        fi.kind = "fused";
        fi.fused_into = last.name;
        plan_.kernels.push_back(fi);
      }
      info.node = last.name;
      info.op_type = last.op_type;
      for (size_t i = 0; i + 1 < chain.size(); ++i) info.fused.push_back(chain[i]->name);
      if (last.op_type == "Concat") {
        plan_concat(last, info);
        continue;
      }
      if (chain.size() == 1) {
        CpuContext pctx(nullptr, opts_.typed_values);
        auto parts = lower::op_parts(last, pctx);
        if (!parts.empty()) {
          plan_parts(last, info, std::move(parts), pctx);
          continue;
        }
      }
      KernelPlan plan;
      plan.node = &last;
      plan.fused.assign(chain.begin(), chain.end() - 1);
      plan.writes = last.outputs[0];
      // Build the fused TE: every chain node's compute reads the previous one's tensor.
      std::map<const Value*, te::Tensor> inside;
      CpuContext ctx(&inside, opts_.typed_values);
      te::Tensor t;
      for (const Node* n : chain) {
        t = sched_.node_compute(*n, ctx);
        if (!t) t = lower::op_compute(*n, ctx);
        inside[n->outputs[0]] = t;
      }
      info.kind = "generic";
      info.function =
          fmt::format("tessel_k{}_{}", plan_.kernels.size(), sanitize_symbol(last.name));
      plan.info_index = plan_.kernels.size();
      plan_.kernels.push_back(info);
      schedule(plan, ctx, t, last.outputs[0]);
      plan_.plans.push_back(std::move(plan));
    }
  }

  /// Dropout is a view only in inference: training_mode (input 2) absent or a constant false, or
  /// the ratio a constant 0 (ONNX Dropout-13: nothing dropped, scale 1). Otherwise the output is
  /// random, and tessel::Unsupported names the node (as the reference interpreter does).
  void require_inference_dropout(const Node& node) const {
    const Value* training = node.input(2);
    if (!training) return;
    if (training->constant && training->constant->numel() == 1 &&
        training->constant->get_as_double(0) == 0)
      return;
    const Value* rv = node.input(1);
    if (rv && !rv->constant)
      throw Unsupported(fmt::format(
          "{}: training_mode and ratio are run-time inputs; only inference Dropout (or ratio 0) "
          "is compiled",
          node.describe()));
    const double ratio = rv ? rv->constant->get_as_double(0) : 0.5;
    if (ratio == 0) return;
    throw Unsupported(fmt::format(
        "{}: training-mode Dropout with ratio {} is random; only inference (or ratio 0) is "
        "supported{}",
        node.describe(), ratio, training->constant ? "" : " (training_mode is a run-time input)"));
  }

  /// Refuses a generated (fp32) kernel reading `v` when `v` is stored in its own integer dtype.
  void require_fp32_storage(const Value* v, const Node& node) const {
    if (opts_.typed_values) return;  // generated kernels read every dtype
    if (plan_.native.count(root(v)))
      throw Unsupported(fmt::format(
          "{}: reads '{}' ({}), an integer tensor; the {} backend computes integer tensors only "
          "in its int8 kernels (QuantizeLinear, DequantizeLinear, QLinearConv, QLinearMatMul, "
          "ConvInteger, MatMulInteger)",
          node.describe(), v->name, dtype_to_string(v->dtype), opts_.target));
  }

  /// A node the scheduler runs as a host function: its non-constant inputs, then its output.
  void plan_extern(const Node& node, CpuKernelInfo info, std::shared_ptr<const ExternKernel> ext) {
    KernelPlan plan;
    plan.node = &node;
    plan.ext = std::move(ext);
    const Value* out = node.outputs[0];
    plan.writes = out;
    for (const Value* in : node.inputs) {
      if (!in || in->constant) continue;
      if (!dtype_is_float(in->dtype) && !plan_.native.count(root(in)))
        throw Unsupported(fmt::format(
            "{}: input '{}' ({}) is computed by an fp32 kernel; the {} backend's int8 kernels "
            "read integer tensors only from graph inputs and other int8 kernels",
            node.describe(), in->name, dtype_to_string(in->dtype), opts_.target));
      PlanParam p;
      p.value = in;
      p.buffer = L::make_buffer(in->name, L::MemScope::host, DType::f32,
                                {std::max<int64_t>(1, shape_numel(in->shape))});
      plan.params.push_back(p);
      plan.reads.push_back(in);
    }
    PlanParam op;
    op.value = out;
    op.buffer = L::make_buffer(out->name, L::MemScope::host, DType::f32,
                               {std::max<int64_t>(1, shape_numel(out->shape))});
    plan.params.push_back(op);
    if (!dtype_is_float(out->dtype)) plan_.native.insert(out);
    ready_.insert(out);
    info.kind = "int8";
    info.function = fmt::format("tessel_k{}_{}", plan_.kernels.size(), sanitize_symbol(node.name));
    plan.info_index = plan_.kernels.size();
    plan_.kernels.push_back(info);
    plan_.plans.push_back(std::move(plan));
  }

  /// Kernel parameters for the placeholders of `ctx` and the output, then the schedule.
  /// Kernel parameters for the placeholders and derived constants of `ctx` and the output value;
  /// returns the output parameter's allocation. Fills `spec` (buffers as dense views, constants).
  L::Buffer make_params(KernelPlan& plan, CpuContext& ctx, const Value* out_value,
                        passes::CpuKernelSpec& spec) {
    auto add_param = [&](const std::string& name, const Shape& shape, const Value* v, int constant,
                         DType dtype) {
      PlanParam p;
      p.value = v;
      p.constant = constant;
      p.buffer = L::make_buffer(name, L::MemScope::host, dtype,
                                {std::max<int64_t>(1, shape_numel(shape))});
      plan.params.push_back(p);
      return p.buffer;
    };
    auto dense_view = [](const L::Buffer& b, const std::string& name, const Shape& shape) {
      return L::make_view(b, name, shape, L::dense_strides(shape), 0);
    };
    // In the order the compute read them (not pointer order), so that the same computation on
    // other values gives the same kernel (and the same code: the CPU's objects.h shares it).
    for (const Value* v : ctx.order) {
      if (plan.node) require_fp32_storage(v, *plan.node);
      const te::Tensor& ph = ctx.placeholders.at(v);
      int c = -1;
      if (v->constant) {
        c = ph->dtype == DType::f32 ? plan_.constant_of(v) : plan_.native_constant_of(v);
        spec.constants[ph.get()] = &plan_.constants[c].data();
      } else {
        plan.reads.push_back(v);
      }
      spec.buffers[ph.get()] = dense_view(
          add_param(v->name, v->shape, v->constant ? nullptr : v, c, ph->dtype), v->name, v->shape);
    }
    for (auto& [ph, data] : ctx.derived) {
      const int c = plan_.add_constant(
          ph->name, ph->dtype == DType::f32 ? to_f32(data) : data.cast(ph->dtype));
      spec.constants[ph.get()] = &plan_.constants[c].data();
      spec.buffers[ph.get()] =
          dense_view(add_param(ph->name, ph->shape, nullptr, c, ph->dtype), ph->name, ph->shape);
    }
    note_written(out_value);
    return add_param(out_value->name, out_value->shape, out_value, -1, storage(out_value));
  }

  /// The loop nest of one kernel (or part) computing spec.out: the target's contraction
  /// schedule for a contraction (when it takes it), else its generic one.
  L::Stmt schedule_spec(KernelPlan& plan, CpuKernelInfo& info, const passes::CpuKernelSpec& spec) {
    te::Tensor contraction, depthwise;
    for (const auto& t : te::post_order(spec.out)) {
      if (t->tag == "conv2d" || t->tag == "matmul") contraction = t;
      if (t->tag == "depthwise_conv2d") depthwise = t;
    }
    if (depthwise && !contraction) {
      auto d = sched_.depthwise(spec, depthwise, info);
      if (d) {
        info.flops += d->flops;
        return d->body;
      }
    }
    if (contraction) {
      auto g = sched_.contraction(spec, contraction, info);
      if (g) {
        info.flops += g->flops;
        for (auto& pc : g->constants) {
          const int c = plan_.add_constant(pc.buffer->name, std::move(pc.data));
          PlanParam p;
          p.constant = c;
          p.buffer = pc.buffer;
          plan.params.push_back(p);
        }
        return g->body;
      }
    }
    return sched_.generic(spec.out, spec.buffers);
  }

  void schedule(KernelPlan& plan, CpuContext& ctx, const te::Tensor& out, const Value* out_value) {
    CpuKernelInfo& info = plan_.kernels[plan.info_index];
    passes::CpuKernelSpec spec;
    spec.name = info.node;
    spec.out = out;
    L::Buffer ob = make_params(plan, ctx, out_value, spec);
    spec.buffers[out.get()] =
        L::make_view(ob, out_value->name, out_value->shape, L::dense_strides(out_value->shape), 0);
    plan.body = schedule_spec(plan, info, spec);
    if (opts_.keep_loop_ir) info.loop_ir = L::to_string(plan.body);
  }

  /// An op computed as several kernels (lower::op_parts: Resize, ConvTranspose, ...): one
  /// function whose parts each write a strided view of the output.
  void plan_parts(const Node& node, CpuKernelInfo info, std::vector<lower::OpPart> parts,
                  CpuContext& ctx) {
    KernelPlan plan;
    plan.node = &node;
    plan.writes = node.outputs[0];
    info.kind = "generic";
    info.function = fmt::format("tessel_k{}_{}", plan_.kernels.size(), sanitize_symbol(node.name));
    plan.info_index = plan_.kernels.size();
    plan_.kernels.push_back(info);
    CpuKernelInfo& ki = plan_.kernels.back();
    passes::CpuKernelSpec base;
    base.name = node.name;
    L::Buffer ob = make_params(plan, ctx, node.outputs[0], base);
    std::vector<L::Stmt> bodies;
    for (size_t i = 0; i < parts.size(); ++i) {
      passes::CpuKernelSpec spec = base;
      spec.name = fmt::format("{}.part{}", node.name, i);
      spec.out = parts[i].out;
      spec.buffers[spec.out.get()] = L::make_view(ob, node.outputs[0]->name, parts[i].view_shape,
                                                  parts[i].view_strides, parts[i].view_offset);
      bodies.push_back(schedule_spec(plan, ki, spec));
    }
    plan.body = bodies.size() == 1 ? bodies[0] : L::seq(bodies);
    if (opts_.keep_loop_ir) ki.loop_ir = L::to_string(plan.body);
    plan_.plans.push_back(std::move(plan));
  }

  /// Concat: one copy kernel per input into a strided view of the output.
  void plan_concat(const Node& node, CpuKernelInfo info) {
    const Value* out = node.outputs[0];
    int64_t axis = node.attrs.get_int("axis", node.name);
    if (axis < 0) axis += static_cast<int64_t>(out->shape.size());
    const auto strides = L::dense_strides(out->shape);
    KernelPlan plan;
    plan.node = &node;
    plan.writes = out;
    PlanParam op;
    op.value = out;
    note_written(out);
    op.buffer =
        L::make_buffer(out->name, L::MemScope::host, storage(out), {shape_numel(out->shape)});
    plan.params.push_back(op);
    std::vector<L::Stmt> parts;
    int64_t offset = 0;
    for (const Value* in : node.inputs) {
      if (!in || in->shape[axis] == 0) continue;
      require_fp32_storage(in, node);
      L::Buffer src;
      PlanParam p;
      p.buffer = L::make_buffer(in->name, L::MemScope::host, storage(in), {shape_numel(in->shape)});
      if (in->constant) {
        p.constant = constant_for(in);
      } else {
        p.value = in;
        plan.reads.push_back(in);
      }
      plan.params.push_back(p);
      src = L::make_view(p.buffer, in->name, in->shape, L::dense_strides(in->shape), 0);
      L::Buffer dst =
          L::make_view(op.buffer, out->name, in->shape, strides, offset * strides[axis]);
      te::Tensor ph = te::placeholder(in->name, in->shape, storage(in));
      te::Tensor cp = te::compute(node.name + ".part", in->shape,
                                  [&](const std::vector<L::Expr>& i) { return te::read(ph, i); });
      parts.push_back(sched_.generic(cp, {{ph.get(), src}, {cp.get(), dst}}));
      offset += in->shape[axis];
    }
    plan.body = parts.size() == 1 ? parts[0] : L::seq(parts);
    info.kind = "copy";
    info.function = fmt::format("tessel_k{}_{}", plan_.kernels.size(), sanitize_symbol(node.name));
    plan.info_index = plan_.kernels.size();
    if (opts_.keep_loop_ir) info.loop_ir = L::to_string(plan.body);
    plan_.kernels.push_back(info);
    plan_.plans.push_back(std::move(plan));
  }

  /// Graph outputs: computed in place in the caller's buffer when the value's root is computed
  /// by a kernel (and no other output took it); otherwise a final copy kernel.
  void bind_outputs() {
    std::set<const Value*> produced;
    for (const auto& p : plan_.plans) produced.insert(p.writes);
    for (size_t j = 0; j < graph_.outputs.size(); ++j) {
      const Value* o = graph_.outputs[j];
      const Value* r = root(o);
      if (own_dtype(r->dtype, opts_.typed_values)) plan_.native.insert(r);
      const bool native = plan_.native.count(r) > 0;
      plan_.outputs.push_back({o->name, o->shape, native ? r->dtype : DType::f32});
      if (shape_numel(o->shape) == 0) continue;  // zero elements: nothing to write
      if (o->constant && !o->producer)
        throw Unsupported(
            fmt::format("graph output '{}' is a constant; nothing to compute", o->name));
      if (produced.count(r) && !plan_.storage.count(r)) {
        plan_.storage[r] = {ValueStorage::Kind::output, static_cast<int>(j), 0};
        continue;
      }
      // Copy kernel: output j <- r (an input, a constant, or a value another output holds).
      KernelPlan plan;
      if (native && !opts_.typed_values) {  // bytes of the integer dtype: a host copy
        plan.ext =
            sched_.extern_copy(shape_numel(o->shape) * static_cast<int64_t>(dtype_size(r->dtype)));
        if (!plan.ext)
          throw Unsupported(fmt::format("graph output '{}' copies an integer tensor", o->name));
        CpuKernelInfo info;
        info.node = fmt::format("output.{}", o->name);
        info.op_type = "Copy";
        info.kind = "copy";
        info.function = fmt::format("tessel_k{}_output_copy", plan_.kernels.size());
        PlanParam src, dst;
        src.value = r;
        src.buffer =
            L::make_buffer(r->name, L::MemScope::host, DType::f32, {shape_numel(o->shape)});
        dst.buffer = L::make_buffer(o->name + ".out", L::MemScope::host, DType::f32,
                                    {shape_numel(o->shape)});
        plan.reads.push_back(r);
        plan.params = {src, dst};
        plan.output_copy = static_cast<int>(j);
        plan.info_index = plan_.kernels.size();
        plan_.kernels.push_back(info);
        plan_.plans.push_back(std::move(plan));
        continue;
      }
      CpuKernelInfo info;
      info.node = fmt::format("output.{}", o->name);
      info.op_type = "Copy";
      info.kind = "copy";
      info.function = fmt::format("tessel_k{}_output_copy", plan_.kernels.size());
      // A copy kernel in the value's storage dtype (fp32, or an integer / bool dtype).
      const DType sd = storage(r);
      PlanParam src;
      src.buffer = L::make_buffer(r->name, L::MemScope::host, sd, {shape_numel(o->shape)});
      if (r->constant) {
        src.constant = constant_for(r);
      } else {
        src.value = r;
        plan.reads.push_back(r);
      }
      PlanParam dst;
      dst.value = nullptr;
      dst.buffer = L::make_buffer(o->name + ".out", L::MemScope::host, sd, {shape_numel(o->shape)});
      plan.params = {src, dst};
      plan.output_copy = static_cast<int>(j);
      te::Tensor ph = te::placeholder(r->name, {shape_numel(o->shape)}, sd);
      te::Tensor cp = te::compute(info.node, {shape_numel(o->shape)},
                                  [&](const std::vector<L::Expr>& i) { return te::read(ph, i); });
      plan.body = sched_.generic(cp, {{ph.get(), src.buffer}, {cp.get(), dst.buffer}});
      plan.info_index = plan_.kernels.size();
      plan_.kernels.push_back(info);
      plan_.plans.push_back(std::move(plan));
    }
  }

  /// Arena offsets for values computed by kernels and not bound to an output: first fit over
  /// lifetimes [producing kernel, last reading kernel].
  void plan_arena() {
    std::map<const Value*, std::pair<int, int>> life;  // root -> [def, last use]
    for (size_t k = 0; k < plan_.plans.size(); ++k) {
      const KernelPlan& p = plan_.plans[k];
      if (p.writes) {
        const Value* r = root(p.writes);
        if (!life.count(r)) life[r] = {static_cast<int>(k), static_cast<int>(k)};
      }
      for (const Value* v : p.reads) {
        const Value* r = root(v);
        auto it = life.find(r);
        if (it != life.end()) it->second.second = std::max(it->second.second, static_cast<int>(k));
      }
    }
    struct Placed {
      int64_t off, size;
      int def, last;
    };
    std::vector<Placed> placed;
    int64_t total = 0;
    std::vector<std::pair<const Value*, std::pair<int, int>>> order(life.begin(), life.end());
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
      return a.second.first != b.second.first ? a.second.first < b.second.first
                                              : a.first->name < b.first->name;
    });
    for (const auto& [v, lt] : order) {
      if (plan_.storage.count(v)) continue;  // an output
      const int64_t elem = plan_.native.count(v) ? static_cast<int64_t>(dtype_size(v->dtype)) : 4;
      const int64_t size = align_up(std::max<int64_t>(1, shape_numel(v->shape)) * elem);
      std::vector<std::pair<int64_t, int64_t>> busy;
      for (const auto& p : placed)
        if (!(p.last < lt.first || lt.second < p.def)) busy.emplace_back(p.off, p.off + p.size);
      std::sort(busy.begin(), busy.end());
      int64_t off = 0;
      for (const auto& [b, e] : busy) {
        if (off + size <= b) break;
        off = std::max(off, e);
      }
      placed.push_back({off, size, lt.first, lt.second});
      plan_.storage[v] = {ValueStorage::Kind::arena, 0, off};
      total = std::max(total, off + size);
    }
    plan_.arena_bytes = total;
  }
};

}  // namespace

std::string sanitize_symbol(const std::string& s) {
  std::string r;
  for (char c : s) r += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return r;
}

const Value* ModelPlan::root(const Value* v) const {
  auto it = alias.find(v);
  while (it != alias.end()) {
    v = it->second;
    it = alias.find(v);
  }
  return v;
}

int ModelPlan::add_constant(const std::string& name, Tensor data, const Tensor* ref) {
  constants.push_back({fmt::format("tessel_const_{}_{}", constants.size(), sanitize_symbol(name)),
                       std::move(data)});
  PlanConstant& c = constants.back();
  c.ref = ref;
  constant_bytes += c.data().numel() * dtype_size(c.data().dtype());
  return static_cast<int>(constants.size()) - 1;
}

int ModelPlan::native_constant_of(const Value* v) {
  auto it = value_native_constant.find(v);
  if (it != value_native_constant.end()) return it->second;
  const int idx = add_constant(v->name, Tensor(), &*v->constant);
  value_native_constant[v] = idx;
  return idx;
}

int ModelPlan::constant_of(const Value* v) {
  auto it = value_constant.find(v);
  if (it != value_constant.end()) return it->second;
  const Tensor& t = *v->constant;
  const int idx = t.dtype() == DType::f32 ? add_constant(v->name, Tensor(), &t)
                                          : add_constant(v->name, to_f32(t));
  value_constant[v] = idx;
  return idx;
}

ModelPlan plan_model(const Graph& graph, KernelScheduler& scheduler, const PlanOptions& options) {
  Planner p(graph, scheduler, options);
  return p.run();
}

}  // namespace tessel::cpu_backend
