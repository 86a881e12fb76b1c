// Graph IR -> LLVM module for the CPU (see compile.h).
#include "compiler/backend/cpu/compile.h"

#include <fmt/format.h>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <set>

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
  for (const auto& p : lower::parts_ops()) ops.push_back(p);
  for (const char* v :
       {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Cast"})
    ops.push_back(v);
  std::sort(ops.begin(), ops.end());
  ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
  return ops;
}

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

/// Where a value's bytes live at run time.
struct Storage {
  enum class Kind { none, input, output, arena, constant } kind = Kind::none;
  int index = 0;             // input / output position
  int64_t offset_bytes = 0;  // arena offset
};

/// A parameter of a kernel: which value (or derived/packed constant) it reads or writes.
struct Param {
  const Value* value = nullptr;  // graph value (root storage resolved at entry emission)
  int constant = -1;             // index into the program's constant list
  L::Buffer buffer;              // the kernel's allocation (1-D, numel elements)
};

/// A kernel to emit.
struct Plan {
  size_t info_index = 0;
  const Node* node = nullptr;
  std::vector<const Node*> fused;  // producers computed inside, in order
  std::vector<Param> params;
  L::Stmt body;
  std::vector<const Value*> reads;  // graph values read (for liveness)
  const Value* writes = nullptr;
};

class CpuContext : public lower::ComputeContext {
 public:
  explicit CpuContext(std::map<const Value*, te::Tensor>* inside) : inside_(inside) {}
  te::Tensor input(const Value* v) override {
    if (inside_) {
      auto it = inside_->find(v);
      if (it != inside_->end()) return it->second;
    }
    auto it = placeholders.find(v);
    if (it != placeholders.end()) return it->second;
    te::Tensor p = te::placeholder(v->name, v->shape);
    placeholders[v] = p;
    order.push_back(v);
    return p;
  }
  te::Tensor derived_constant(const std::string& name, const Tensor& data) override {
    te::Tensor p = te::placeholder(name, data.shape());
    derived.emplace_back(p, data);
    return p;
  }
  std::map<const Value*, te::Tensor> placeholders;
  std::vector<const Value*> order;  // placeholders in the order the compute asked for them
  std::vector<std::pair<te::Tensor, Tensor>> derived;

 private:
  std::map<const Value*, te::Tensor>* inside_;
};

std::string sanitize(const std::string& s) {
  std::string r;
  for (char c : s) r += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return r;
}

Tensor to_f32(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = static_cast<float>(t.get_as_double(i));
  return Tensor::from_floats(t.shape(), v);
}

class Compiler {
 public:
  Compiler(const Graph& g, const CpuCompileOptions& o) : graph_(g), opts_(o) {}

  CpuProgram run() {
    prog_.name = graph_.name.empty() ? "model" : graph_.name;
    prog_.target = opts_.target;
    prog_.build = opts_.build;
    for (size_t i = 0; i < graph_.inputs.size(); ++i) {
      const Value* v = graph_.inputs[i];
      if (!dtype_is_float(v->dtype))
        throw Unsupported(
            fmt::format("graph input '{}' has dtype {}; the CPU backend takes float inputs",
                        v->name, dtype_to_string(v->dtype)));
      // The generated code computes in fp32: a float64 model would silently lose range and
      // precision (values beyond 3.4e38 become inf), so it is refused rather than downgraded.
      if (v->dtype == DType::f64)
        throw Unsupported(fmt::format(
            "graph input '{}' is float64; the CPU backend computes in fp32 (use --target ref)",
            v->name));
      storage_[v] = {Storage::Kind::input, static_cast<int>(i), 0};
      ready_.insert(v);
      prog_.inputs.push_back({v->name, v->shape});
    }
    plan_nodes();
    bind_outputs();
    plan_arena();
    collect_code();
    return std::move(prog_);
  }

 private:
  const Graph& graph_;
  const CpuCompileOptions& opts_;
  CpuProgram prog_;
  std::vector<Plan> plans_;
  std::map<const Value*, const Value*> alias_;  // view -> viewed value
  std::map<const Value*, Storage> storage_;     // root values
  std::map<const Value*, int> value_constant_;  // constant graph value -> constant index
  struct ConstData {
    std::string symbol;
    Tensor owned;                  // a converted or schedule-derived constant
    const Tensor* data = nullptr;  // f32: `owned`, or a graph constant (outlives compilation)
  };
  std::deque<ConstData> consts_;  // stable addresses: schedules hold pointers to the data

  const Value* root(const Value* v) const {
    auto it = alias_.find(v);
    while (it != alias_.end()) {
      v = it->second;
      it = alias_.find(v);
    }
    return v;
  }

  int add_constant(const std::string& name, Tensor data, const Tensor* ref = nullptr) {
    consts_.push_back(
        {fmt::format("tessel_const_{}_{}", consts_.size(), sanitize(name)), std::move(data)});
    consts_.back().data = ref ? ref : &consts_.back().owned;
    return static_cast<int>(consts_.size()) - 1;
  }

  int constant_of(const Value* v) {
    auto it = value_constant_.find(v);
    if (it != value_constant_.end()) return it->second;
    const Tensor& t = *v->constant;
    const int idx = t.dtype() == DType::f32 ? add_constant(v->name, Tensor(), &t)
                                            : add_constant(v->name, to_f32(t));
    value_constant_[v] = idx;
    return idx;
  }

  // ------------------------------------------------------------------ planning
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
        prog_.kernels.push_back(info);
        continue;
      }
      bool all_empty = true;  // zero-element outputs: nothing to compute
      for (const Value* o : node.outputs)
        if (o && shape_numel(o->shape) != 0) all_empty = false;
      if (all_empty) {
        info.kind = "empty";
        prog_.kernels.push_back(info);
        continue;
      }
      for (size_t i = 1; i < node.outputs.size(); ++i) {
        const Value* extra = node.outputs[i];
        if (!extra || extra->constant) continue;
        const bool is_out =
            std::find(graph_.outputs.begin(), graph_.outputs.end(), extra) != graph_.outputs.end();
        if (is_out || !graph_.users(extra).empty())
          throw Unsupported(
              fmt::format("{}: output {} ('{}') is used but the CPU backend "
                          "computes only the first output",
                          node.describe(), i, extra->name));
      }
      if (lower::is_alias_op(node)) {
        info.kind = "view";
        alias_[node.outputs[0]] = node.input(0);
        prog_.kernels.push_back(info);
        continue;
      }
      std::vector<const Node*> chain = {&node};
      if (node.op_type == "Conv" || node.op_type == "MatMul" || node.op_type == "Gemm")
        chain = epilogue_chain(node);
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
        prog_.kernels.push_back(fi);
      }
      info.node = last.name;
      info.op_type = last.op_type;
      for (size_t i = 0; i + 1 < chain.size(); ++i) info.fused.push_back(chain[i]->name);
      if (last.op_type == "Concat") {
        plan_concat(last, info);
        continue;
      }
      if (chain.size() == 1) {
        CpuContext pctx(nullptr);
        auto parts = lower::op_parts(last, pctx);
        if (!parts.empty()) {
          plan_parts(last, info, std::move(parts), pctx);
          continue;
        }
      }
      Plan plan;
      plan.node = &last;
      plan.fused.assign(chain.begin(), chain.end() - 1);
      plan.writes = last.outputs[0];
      // Build the fused TE: every chain node's compute reads the previous one's tensor.
      std::map<const Value*, te::Tensor> inside;
      CpuContext ctx(&inside);
      te::Tensor t;
      for (const Node* n : chain) {
        t = lower::op_compute(*n, ctx);
        inside[n->outputs[0]] = t;
      }
      info.kind = "generic";
      info.function = fmt::format("tessel_k{}_{}", prog_.kernels.size(), sanitize(last.name));
      plan.info_index = prog_.kernels.size();
      prog_.kernels.push_back(info);
      schedule(plan, ctx, t, last.outputs[0]);
      plans_.push_back(std::move(plan));
    }
  }

  /// Kernel parameters for the placeholders of `ctx` and the output, then the schedule.
  /// Kernel parameters for the placeholders and derived constants of `ctx` and the output value;
  /// returns the output parameter's allocation. Fills `spec` (buffers as dense views, constants).
  L::Buffer make_params(Plan& plan, CpuContext& ctx, const Value* out_value,
                        passes::CpuKernelSpec& spec) {
    auto add_param = [&](const std::string& name, const Shape& shape, const Value* v,
                         int constant) {
      Param p;
      p.value = v;
      p.constant = constant;
      p.buffer = L::make_buffer(name, L::MemScope::host, DType::f32,
                                {std::max<int64_t>(1, shape_numel(shape))});
      plan.params.push_back(p);
      return p.buffer;
    };
    auto dense_view = [](const L::Buffer& b, const std::string& name, const Shape& shape) {
      return L::make_view(b, name, shape, L::dense_strides(shape), 0);
    };
    // In the order the compute read them (not pointer order), so that the same computation on
    // other values gives the same kernel (and the same code: objects.h shares it).
    for (const Value* v : ctx.order) {
      const te::Tensor& ph = ctx.placeholders.at(v);
      int c = -1;
      if (v->constant) {
        c = constant_of(v);
        spec.constants[ph.get()] = consts_[c].data;
      } else {
        plan.reads.push_back(v);
      }
      spec.buffers[ph.get()] =
          dense_view(add_param(v->name, v->shape, v->constant ? nullptr : v, c), v->name, v->shape);
    }
    for (auto& [ph, data] : ctx.derived) {
      const int c = add_constant(ph->name, to_f32(data));
      spec.constants[ph.get()] = consts_[c].data;
      spec.buffers[ph.get()] =
          dense_view(add_param(ph->name, ph->shape, nullptr, c), ph->name, ph->shape);
    }
    return add_param(out_value->name, out_value->shape, out_value, -1);
  }

  /// The loop nest of one kernel (or part) computing spec.out: the BLIS schedule for a
  /// contraction, else the generic one.
  L::Stmt schedule_spec(Plan& plan, CpuKernelInfo& info, const passes::CpuKernelSpec& spec) {
    te::Tensor contraction;
    for (const auto& t : te::post_order(spec.out))
      if (t->tag == "conv2d" || t->tag == "matmul") contraction = t;
    if (contraction) {
      passes::CpuGemmKnobs knobs;
      auto it = opts_.gemm_knobs.find(info.node);
      if (it != opts_.gemm_knobs.end()) knobs = it->second;
      auto g = passes::cpu_gemm(spec, contraction, opts_.target, &knobs);
      if (g) {
        info.kind = "gemm";
        info.gemm = knobs;
        info.flops += g->flops;
        for (auto& pc : g->constants) {
          const int c = add_constant(pc.buffer->name, std::move(pc.data));
          Param p;
          p.constant = c;
          p.buffer = pc.buffer;
          plan.params.push_back(p);
        }
        return g->body;
      }
    }
    return generic_schedule(spec.out, spec.buffers);
  }

  void schedule(Plan& plan, CpuContext& ctx, const te::Tensor& out, const Value* out_value) {
    CpuKernelInfo& info = prog_.kernels[plan.info_index];
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
    Plan plan;
    plan.node = &node;
    plan.writes = node.outputs[0];
    info.kind = "generic";
    info.function = fmt::format("tessel_k{}_{}", prog_.kernels.size(), sanitize(node.name));
    plan.info_index = prog_.kernels.size();
    prog_.kernels.push_back(info);
    CpuKernelInfo& ki = prog_.kernels.back();
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
    plans_.push_back(std::move(plan));
  }

  L::Stmt generic_schedule(const te::Tensor& out, const lower::TensorBuffers& buffers) {
    L::Stmt body = lower::lower_te(out, buffers);
    const auto& k = opts_.generic;
    if (k.vectorize) body = passes::cpu_vectorize(body, opts_.target);
    body = passes::cpu_unroll(body, k.unroll_max_extent);
    if (k.parallel) body = passes::cpu_parallel(body, opts_.target, k.parallel_min_work);
    return body;
  }

  /// Concat: one copy kernel per input into a strided view of the output.
  void plan_concat(const Node& node, CpuKernelInfo info) {
    const Value* out = node.outputs[0];
    int64_t axis = node.attrs.get_int("axis", node.name);
    if (axis < 0) axis += static_cast<int64_t>(out->shape.size());
    const auto strides = L::dense_strides(out->shape);
    Plan plan;
    plan.node = &node;
    plan.writes = out;
    Param op;
    op.value = out;
    op.buffer = L::make_buffer(out->name, L::MemScope::host, DType::f32, {shape_numel(out->shape)});
    plan.params.push_back(op);
    std::vector<L::Stmt> parts;
    int64_t offset = 0;
    for (const Value* in : node.inputs) {
      if (!in || in->shape[axis] == 0) continue;
      L::Buffer src;
      Param p;
      p.buffer = L::make_buffer(in->name, L::MemScope::host, DType::f32, {shape_numel(in->shape)});
      if (in->constant) {
        p.constant = constant_of(in);
      } else {
        p.value = in;
        plan.reads.push_back(in);
      }
      plan.params.push_back(p);
      src = L::make_view(p.buffer, in->name, in->shape, L::dense_strides(in->shape), 0);
      L::Buffer dst =
          L::make_view(op.buffer, out->name, in->shape, strides, offset * strides[axis]);
      te::Tensor ph = te::placeholder(in->name, in->shape);
      te::Tensor cp = te::compute(node.name + ".part", in->shape,
                                  [&](const std::vector<L::Expr>& i) { return te::read(ph, i); });
      parts.push_back(generic_schedule(cp, {{ph.get(), src}, {cp.get(), dst}}));
      offset += in->shape[axis];
    }
    plan.body = parts.size() == 1 ? parts[0] : L::seq(parts);
    info.kind = "copy";
    info.function = fmt::format("tessel_k{}_{}", prog_.kernels.size(), sanitize(node.name));
    plan.info_index = prog_.kernels.size();
    if (opts_.keep_loop_ir) info.loop_ir = L::to_string(plan.body);
    prog_.kernels.push_back(info);
    plans_.push_back(std::move(plan));
  }

  /// Graph outputs: computed in place in the caller's buffer when the value's root is computed
  /// by a kernel (and no other output took it); otherwise a final copy kernel.
  void bind_outputs() {
    std::set<const Value*> produced;
    for (const auto& p : plans_) produced.insert(p.writes);
    for (size_t j = 0; j < graph_.outputs.size(); ++j) {
      const Value* o = graph_.outputs[j];
      prog_.outputs.push_back({o->name, o->shape});
      if (shape_numel(o->shape) == 0) continue;  // zero elements: nothing to write
      if (o->constant && !o->producer)
        throw Unsupported(
            fmt::format("graph output '{}' is a constant; nothing to compute", o->name));
      const Value* r = root(o);
      if (produced.count(r) && !storage_.count(r)) {
        storage_[r] = {Storage::Kind::output, static_cast<int>(j), 0};
        continue;
      }
      // Copy kernel: output j <- r (an input, a constant, or a value another output holds).
      Plan plan;
      CpuKernelInfo info;
      info.node = fmt::format("output.{}", o->name);
      info.op_type = "Copy";
      info.kind = "copy";
      info.function = fmt::format("tessel_k{}_output_copy", prog_.kernels.size());
      Param src;
      src.buffer = L::make_buffer(r->name, L::MemScope::host, DType::f32, {shape_numel(o->shape)});
      if (r->constant) {
        src.constant = constant_of(r);
      } else {
        src.value = r;
        plan.reads.push_back(r);
      }
      Param dst;
      dst.value = nullptr;
      dst.buffer =
          L::make_buffer(o->name + ".out", L::MemScope::host, DType::f32, {shape_numel(o->shape)});
      plan.params = {src, dst};
      output_copy_[plans_.size()] = static_cast<int>(j);
      te::Tensor ph = te::placeholder(r->name, {shape_numel(o->shape)});
      te::Tensor cp = te::compute(info.node, {shape_numel(o->shape)},
                                  [&](const std::vector<L::Expr>& i) { return te::read(ph, i); });
      plan.body = generic_schedule(cp, {{ph.get(), src.buffer}, {cp.get(), dst.buffer}});
      plan.info_index = prog_.kernels.size();
      prog_.kernels.push_back(info);
      plans_.push_back(std::move(plan));
    }
  }
  std::map<size_t, int> output_copy_;  // plan index -> graph output it writes

  /// Arena offsets for values computed by kernels and not bound to an output: first fit over
  /// lifetimes [producing kernel, last reading kernel].
  void plan_arena() {
    std::map<const Value*, std::pair<int, int>> life;  // root -> [def, last use]
    for (size_t k = 0; k < plans_.size(); ++k) {
      const Plan& p = plans_[k];
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
      if (storage_.count(v)) continue;  // an output
      const int64_t size = align_up(std::max<int64_t>(1, shape_numel(v->shape)) * 4);
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
      storage_[v] = {Storage::Kind::arena, 0, off};
      total = std::max(total, off + size);
    }
    prog_.arena_bytes = total;
  }

  // ------------------------------------------------------------------ code
  /// The weights blob: every constant a kernel reads, at 64-byte aligned offsets.
  std::vector<int64_t> const_offset_;  // by constant index; -1 until placed
  void place_weights() {
    std::vector<int> order;  // constants in the order kernels first use them
    std::set<int> seen;
    for (const auto& p : plans_)
      for (const auto& prm : p.params) {
        int c = prm.constant;
        if (c < 0 && prm.value && root(prm.value)->constant) c = constant_of(root(prm.value));
        if (c >= 0 && seen.insert(c).second) order.push_back(c);
      }
    const_offset_.assign(consts_.size(), -1);
    int64_t total = 0;
    for (int c : order) {
      const_offset_[c] = total;
      total += align_up(std::max<int64_t>(1, consts_[c].data->numel()) * 4);
    }
    prog_.weights = AlignedBytes::zeros(total);
    prog_.constant_bytes = 0;
    for (int c : order) {
      const Tensor& t = *consts_[c].data;
      TESSEL_CHECK(t.dtype() == DType::f32, "constant {} is not fp32", consts_[c].symbol);
      if (t.numel() > 0)
        std::memcpy(prog_.weights.data.get() + const_offset_[c], t.data<float>(),
                    static_cast<size_t>(t.numel()) * 4);
      prog_.constant_bytes += t.numel() * 4;
    }
  }

  /// What parameter `p` of a kernel points at (`output_index`: the graph output an output-copy
  /// kernel writes).
  CpuArg arg_of(const Param& p, int output_index) {
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
    const Value* r = root(p.value);
    if (r->constant) {
      a.kind = CpuArg::Kind::weights;
      a.offset_bytes = const_offset_.at(constant_of(r));
      return a;
    }
    auto it = storage_.find(r);
    TESSEL_CHECK(it != storage_.end(), "value {} has no storage", r->name);
    const Storage& s = it->second;
    switch (s.kind) {
      case Storage::Kind::input:
        a.kind = CpuArg::Kind::input;
        a.index = s.index;
        return a;
      case Storage::Kind::output:
        a.kind = CpuArg::Kind::output;
        a.index = s.index;
        return a;
      case Storage::Kind::arena:
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
      if (s->kind == L::StmtKind::Store) {
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
    for (auto& p : plans_) {
      const auto used = used_storage(p.body);
      std::vector<Param> kept;
      for (auto& prm : p.params)
        if (used.count(prm.buffer.get())) kept.push_back(prm);
      p.params = std::move(kept);
    }
    place_weights();
    for (size_t k = 0; k < plans_.size(); ++k) {
      Plan& p = plans_[k];
      CpuKernelCode c;
      c.info_index = p.info_index;
      c.body = p.body;
      auto oc = output_copy_.find(k);
      for (const auto& prm : p.params) {
        c.params.push_back(prm.buffer);
        c.args.push_back(arg_of(prm, oc == output_copy_.end() ? -1 : oc->second));
      }
      prog_.code.push_back(std::move(c));
    }
    consts_.clear();  // their bytes are in the blob
  }
};

}  // namespace

CpuProgram compile_cpu(const Graph& graph, const CpuCompileOptions& options) {
  Compiler c(graph, options);
  return c.run();
}

}  // namespace tessel::cpu_backend
