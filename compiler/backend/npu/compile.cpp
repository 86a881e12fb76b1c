// Graph IR -> isa::Program for the NPU (see compile.h).
#include "compiler/backend/npu/compile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "compiler/backend/npu/codegen.h"
#include "compiler/lower/op_compute.h"
#include "compiler/support/error.h"
#include "compiler/support/fp16.h"
#include "passes/loop/tile_emitter.h"
#include "simulator/simulator.h"

namespace tessel::npu_backend {

namespace L = tessel::loop;

namespace {

constexpr uint64_t kGmAlign = 64;

/// GM allocations for graph values and compile-time constants.
class GmPlanner {
 public:
  GmPlanner(isa::Program& program, DType act) : program_(program), act_(act) {}

  /// The GM buffer of value `v` (allocated on first use; views for pure-view ops).
  L::Buffer value(const Value* v) {
    auto it = by_value_.find(v);
    if (it != by_value_.end()) return it->second;
    L::Buffer b;
    if (v->constant) {
      b = constant(v->name, *v->constant);
    } else if (v->format == StorageFormat::nc1hwc0) {
      // [N, C, H, W] stored as [N, C/C0, H, W, C0] (graph.h StorageFormat).
      const Shape& s = v->shape;
      b = allocate(v->name, {s[0], s[1] / kNc1hwc0C0, s[2], s[3], kNc1hwc0C0}, isa::GmKind::scratch,
                   nullptr);
    } else {
      b = allocate(v->name, v->shape, isa::GmKind::scratch, nullptr);
    }
    by_value_[v] = b;
    return b;
  }

  /// Makes `out` a view of `in` (same bytes, new shape).
  void alias(const Value* out, const Value* in) {
    if (in->format != StorageFormat::plain)
      fail("value '{}' is stored {} but is read by a view op (only Conv kernels read it)", in->name,
           storage_format_name(in->format));
    L::Buffer src = value(in);
    by_value_[out] =
        L::make_view(src, out->name, out->shape, L::dense_strides(out->shape), src->elem_offset);
  }

  /// A constant tensor converted to the activation dtype, in GM.
  L::Buffer constant(const std::string& name, const Tensor& t) {
    return allocate(name, t.shape(), isa::GmKind::constant, &t);
  }

  L::Buffer input(const Value* v) {
    L::Buffer b = allocate(v->name, v->shape, isa::GmKind::input, nullptr);
    by_value_[v] = b;
    return b;
  }

  void mark_output(const L::Buffer& b) {
    const L::BufferNode* s = b->storage();
    for (auto& gb : program_.buffers)
      if (gb.address == static_cast<uint64_t>(s->address_bytes) && gb.kind == isa::GmKind::scratch)
        gb.kind = isa::GmKind::output;
  }

  uint64_t next() const { return next_; }

 private:
  isa::Program& program_;
  DType act_;
  uint64_t next_ = 0;
  std::map<const Value*, L::Buffer> by_value_;

  L::Buffer allocate(const std::string& name, const Shape& shape, isa::GmKind kind,
                     const Tensor* init) {
    L::Buffer b = L::make_buffer(name, L::MemScope::gm, act_, shape);
    b->address_bytes = static_cast<int64_t>(next_);
    isa::GmBuffer gb;
    gb.name = name;
    gb.kind = kind;
    gb.address = next_;
    gb.bytes = static_cast<uint64_t>(std::max<int64_t>(b->alloc_bytes, 0));
    gb.dtype = act_ == DType::f16 ? isa::DType::f16 : isa::DType::f32;
    gb.shape = shape;
    if (init) {
      gb.init.resize(gb.bytes);
      const int64_t n = init->numel();
      for (int64_t i = 0; i < n; ++i) {
        const float f = static_cast<float>(init->get_as_double(i));
        if (act_ == DType::f16) {
          const uint16_t h = f32_to_f16_bits(f);
          std::memcpy(gb.init.data() + 2 * i, &h, 2);
        } else {
          std::memcpy(gb.init.data() + 4 * i, &f, 4);
        }
      }
    }
    program_.buffers.push_back(std::move(gb));
    next_ +=
        (std::max<uint64_t>(program_.buffers.back().bytes, 1) + kGmAlign - 1) / kGmAlign * kGmAlign;
    return b;
  }
};

/// ComputeContext over the planner: placeholders per value, GM buffers recorded for the kernel.
class Context : public lower::ComputeContext {
 public:
  Context(GmPlanner& gm, passes::KernelSpec& spec) : gm_(gm), spec_(spec) {}

  /// Values computed inside the kernel being built (a fusion group): input() returns their tensor
  /// expressions instead of placeholders.
  void set_inside(const std::map<const Value*, te::Tensor>* inside) { inside_ = inside; }

  te::Tensor input(const Value* v) override {
    if (inside_) {
      auto in = inside_->find(v);
      if (in != inside_->end()) return in->second;
    }
    auto it = placeholders_.find(v);
    if (it != placeholders_.end()) return it->second;
    te::Tensor p = te::placeholder(v->name, v->shape);
    placeholders_[v] = p;
    spec_.gm[p.get()] = gm_.value(v);
    return p;
  }

  te::Tensor derived_constant(const std::string& name, const Tensor& data) override {
    te::Tensor p = te::placeholder(name, data.shape());
    spec_.gm[p.get()] = gm_.constant(name, data);
    return p;
  }

 private:
  GmPlanner& gm_;
  passes::KernelSpec& spec_;
  std::map<const Value*, te::Tensor> placeholders_;
  const std::map<const Value*, te::Tensor>* inside_ = nullptr;
};

/// The cube contraction of a kernel, if any.
te::Tensor find_contraction(const te::Tensor& out) {
  te::Tensor found;
  for (const auto& t : te::post_order(out))
    if (t->tag == "conv2d" || t->tag == "matmul") {
      if (found) throw Unsupported(fmt::format("kernel {} has two cube contractions", out->name));
      found = t;
    }
  return found;
}

/// Arithmetic nodes of an expression (each is at least one vector pass).
int arithmetic_nodes(const L::Expr& e) {
  if (!e) return 0;
  if (e->kind == L::ExprKind::TensorRead || e->kind == L::ExprKind::Load ||
      e->kind == L::ExprKind::Float || e->kind == L::ExprKind::Int ||
      e->kind == L::ExprKind::VarRef)
    return 0;
  int n = 1;
  for (const auto& a : e->args) n += arithmetic_nodes(a);
  return n;
}

/// The tiling-independent work of a kernel computing `out` (see npu::OpWork).
npu::OpWork kernel_work(const te::Tensor& out, const passes::KernelSpec& spec,
                        const npu::HwConfig& hw, int esize) {
  npu::OpWork w;
  const double m0 = hw.core.cube.m, k0 = hw.core.cube.k, n0 = hw.core.cube.n;
  const double acc = hw.core.cube.acc_dtype == isa::DType::f16 ? 2 : 4;
  auto up = [](double a, double b) { return std::ceil(a / b) * b; };
  for (const auto& t : te::post_order(out)) {
    const double elems = static_cast<double>(shape_numel(t->shape));
    if (t->is_placeholder()) {
      w.gm_read_bytes += elems * esize;
      continue;
    }
    if (t->tag == "conv2d") {
      const Shape& ws = t->extra_inputs[1]->shape;  // [Cout, Cg, KH, KW]
      const double n = static_cast<double>(t->shape[0]),
                   groups = static_cast<double>(t->attr("groups"));
      const double cout_g = static_cast<double>(ws[0]) / groups;
      const double k = static_cast<double>(ws[1] * ws[2] * ws[3]);
      const double p = static_cast<double>(t->shape[2] * t->shape[3]);
      w.cube_macs += n * groups * cout_g * k * p;
      w.cube_fractals +=
          n * groups * std::ceil(cout_g / m0) * std::ceil(k / k0) * std::ceil(p / n0);
      w.mte1_bytes += n * groups * (up(cout_g, m0) * up(k, k0) + up(k, k0) * up(p, n0)) * esize;
      w.fix_bytes += n * groups * up(cout_g, m0) * up(p, n0) * acc;
      continue;
    }
    if (t->tag == "matmul") {
      const Shape& as = t->extra_inputs[0]->shape;
      const size_t r = t->shape.size();
      const bool ta = t->attr("trans_a") != 0;
      const double M = r >= 2 ? static_cast<double>(t->shape[r - 2]) : 1.0;
      const double N = static_cast<double>(t->shape[r - 1]);
      const double K = static_cast<double>(ta ? as[as.size() - 2] : as.back());
      const double batches = elems / (M * N);
      w.cube_macs += batches * M * N * K;
      w.cube_fractals += batches * std::ceil(M / m0) * std::ceil(K / k0) * std::ceil(N / n0);
      w.mte1_bytes += batches * (up(M, m0) * up(K, k0) + up(K, k0) * up(N, n0)) * esize;
      w.fix_bytes += batches * up(M, m0) * up(N, n0) * acc;
      continue;
    }
    double passes = std::max(1, arithmetic_nodes(t->body));
    double vec_elems = elems;
    if (t->is_reduce()) {
      double r = 1;
      for (const auto& ax : t->body->reduce_axes) r *= static_cast<double>(ax.extent);
      vec_elems = elems * r;
      passes = std::max(1, arithmetic_nodes(t->body->args[0]) + 1);
    }
    w.vector_bytes += vec_elems * passes * esize;
  }
  w.gm_write_bytes += static_cast<double>(shape_numel(out->shape)) * esize;
  (void)spec;
  return w;
}

}  // namespace

int64_t gm_element_index(const GmBinding& b, int64_t i) {
  if (b.c0 <= 0) return i;
  const int64_t C = b.shape[1], H = b.shape[2], W = b.shape[3];
  const int64_t w = i % W, h = i / W % H, c = i / (W * H) % C, n = i / (W * H * C);
  return (((n * (C / b.c0) + c / b.c0) * H + h) * W + w) * b.c0 + c % b.c0;
}

NpuModule compile_npu(const Graph& graph, const npu::HwConfig& hw,
                      const NpuCompileOptions& options) {
  NpuModule mod;
  mod.act_dtype = hw.core.cube.input_dtype == isa::DType::f16 ? DType::f16 : DType::f32;
  passes::NpuTarget target{&hw, mod.act_dtype};
  // Single-core schedule (options.multicore off): the tilers see one core, so they neither mark a
  // core-bound loop nor split tiles finer for the other cores.
  npu::HwConfig hw_one_core = hw;
  hw_one_core.cores = 1;
  const passes::NpuTarget tile_target{options.multicore ? &hw : &hw_one_core, mod.act_dtype};
  isa::Program& prog = mod.program;
  prog.name = graph.name;
  prog.cores.resize(hw.cores);
  GmPlanner gm(prog, mod.act_dtype);

  for (const Value* v : graph.inputs) {
    if (!dtype_is_float(v->dtype))
      throw Unsupported(fmt::format("graph input '{}' has dtype {}; the NPU takes float inputs",
                                    v->name, dtype_to_string(v->dtype)));
    L::Buffer b = gm.input(v);
    mod.inputs.push_back({v->name, static_cast<uint64_t>(b->address_bytes), v->shape});
  }

  // The pass script of one kernel, run transactionally (the code is appended only when every core
  // compiled): tile (cube or vector), tensorize, then per core its share of the core-bound loop,
  // double buffering, loop partitioning, memory planning, sync insertion and code generation.
  using CoreCode = std::vector<std::vector<isa::Instruction>>;
  auto tensorize = [&](const L::Stmt& body) { return passes::tensorize_vector(body, target); };
  // Cycles of one kernel simulated alone (timing only; GM contents are not needed).
  auto simulated_cycles = [&](const CoreCode& code) -> uint64_t {
    isa::Program p;
    p.name = "tune";
    p.cores = code;
    p.gm_bytes = gm.next();
    for (auto& stream : p.cores) {
      isa::Instruction bar;
      bar.op = hw.cores > 1 ? isa::Opcode::core_barrier : isa::Opcode::barrier;
      bar.args = isa::ScalarArgs{};
      stream.push_back(bar);
    }
    sim::SimOptions so;
    so.functional = false;
    so.skip_gm_image = true;
    sim::Simulator simulator(hw, so);
    simulator.load(p);
    return simulator.run().total_cycles;
  };
  auto compile_kernel = [&](KernelInfo& info, passes::KernelSpec& spec,
                            const std::string& knob_key) -> CoreCode {
    // Per core: its share of the core-bound loop, double buffering, loop partitioning, memory
    // planning, sync insertion and code generation.
    auto lower_cores = [&](const L::Stmt& body, bool db, bool keep_ir) {
      CoreCode code(hw.cores);
      const int share_cores = options.multicore ? hw.cores : 1;  // single-core: core 0 does it all
      for (int core = 0; core < share_cores; ++core) {
        L::Stmt b = passes::split_cores(body, core, share_cores);
        if (db) b = passes::double_buffer(b);
        b = passes::partition_loops(b);
        passes::plan_memory(b, target, spec.name);
        b = passes::insert_sync(b, target);
        if (keep_ir && core == 0) info.loop_ir += L::to_string(b);
        emit_kernel(b, target, info.op_index, code[core]);
      }
      return code;
    };
    CoreCode code;
    const te::Tensor contraction = find_contraction(spec.out);
    // NC1HWC0 tensors: conv kernels (tile_cube) and vector kernels over [N, C, H, W]
    // (tile_vector: whole C0 blocks per tile) read and write them; matmul kernels do not.
    if (contraction && contraction->tag != "conv2d")
      for (const auto& [t, b] : spec.gm)
        if (passes::is_nc1hwc0(b, t->shape.size()))
          fail("kernel {}: tensor '{}' is stored NC1HWC0, which a matmul kernel cannot read",
               spec.name, t->name);
    if (te::Tensor c = contraction) {
      info.kind = "cube";
      auto it = options.cube_knobs.find(knob_key);
      passes::CubeKnobs knobs;
      knobs.double_buffer = options.double_buffer;
      if (it != options.cube_knobs.end()) knobs = it->second;
      const bool tune = it == options.cube_knobs.end() && options.tune_candidates > 1;
      std::vector<passes::CubeKnobs> candidates;
      L::Stmt body = passes::tile_cube(spec, c, tile_target, &knobs, tune ? &candidates : nullptr,
                                       options.tune_candidates);
      if (tune && options.double_buffer) {
        // Double buffering halves the scratchpad a tile may use: where that costs more than the
        // overlap gains, a single-buffered tiling wins -- offer the best few of those as well.
        passes::CubeKnobs single;
        single.double_buffer = false;
        std::vector<passes::CubeKnobs> more;
        passes::tile_cube(spec, c, tile_target, &single, &more, 3);
        candidates.insert(candidates.end(), more.begin(), more.end());
      }
      if (tune && !candidates.empty()) {
        // Measured selection: the analytical choice first, then the other candidates; keep the
        // one the simulator runs fastest (ties: the earlier).
        uint64_t best_cycles =
            simulated_cycles(lower_cores(tensorize(body), knobs.double_buffer, false));
        passes::CubeKnobs best = knobs;
        for (passes::CubeKnobs k : candidates) {
          if (k.mt == knobs.mt && k.kc == knobs.kc && k.ht == knobs.ht && k.wt == knobs.wt &&
              k.nt == knobs.nt && k.kt == knobs.kt &&
              k.weights_resident == knobs.weights_resident && k.a_resident == knobs.a_resident &&
              k.double_buffer == knobs.double_buffer)
            continue;
          L::Stmt b = passes::tile_cube(spec, c, tile_target, &k);
          const uint64_t cycles =
              simulated_cycles(lower_cores(tensorize(b), k.double_buffer, false));
          if (cycles < best_cycles) {
            best_cycles = cycles;
            best = k;
          }
        }
        knobs = best;
        body = passes::tile_cube(spec, c, tile_target, &knobs);
      }
      info.cube_knobs = knobs;
      code = lower_cores(tensorize(body), knobs.double_buffer, options.keep_loop_ir);
    } else {
      if (info.kind.empty()) info.kind = "vector";
      auto it = options.vector_knobs.find(knob_key);
      passes::VectorKnobs knobs;
      knobs.double_buffer = options.double_buffer;
      if (it != options.vector_knobs.end()) knobs = it->second;
      L::Stmt body = passes::tile_vector(spec, tile_target, &knobs);
      info.vector_knobs = knobs;
      code = lower_cores(tensorize(body), knobs.double_buffer, options.keep_loop_ir);
    }
    const npu::OpWork w = kernel_work(spec.out, spec, hw, dtype_size(mod.act_dtype));
    info.work.cube_macs += w.cube_macs;
    info.work.cube_fractals += w.cube_fractals;
    info.work.vector_bytes += w.vector_bytes;
    info.work.mte1_bytes += w.mte1_bytes;
    info.work.fix_bytes += w.fix_bytes;
    info.work.gm_read_bytes += w.gm_read_bytes;
    info.work.gm_write_bytes += w.gm_write_bytes;
    return code;
  };
  // Appends a compiled kernel to every core, each followed by a barrier (core_barrier with several
  // cores: kernels reuse scratchpad addresses and read each other's results from GM).
  auto append = [&](KernelInfo& info, const CoreCode& code) {
    for (int core = 0; core < hw.cores; ++core) {
      auto& stream = prog.cores[core];
      // Branch targets were emitted relative to the kernel's first instruction: relocate them.
      const int32_t base = static_cast<int32_t>(stream.size());
      for (isa::Instruction in : code[core]) {
        if (isa::is_branch(in.op)) std::get<isa::ScalarArgs>(in.args).target += base;
        stream.push_back(std::move(in));
      }
      isa::Instruction bar;
      bar.op = hw.cores > 1 ? isa::Opcode::core_barrier : isa::Opcode::barrier;
      bar.args = isa::ScalarArgs{};
      bar.op_index = info.op_index;
      stream.push_back(bar);
      info.instructions += code[core].size() + 1;
    }
  };
  auto record_value = [&](const Value* v, const L::Buffer& b) {
    const L::BufferNode* st = b->storage();
    mod.values.push_back(
        {v->name,
         static_cast<uint64_t>(st->address_bytes + b->elem_offset * dtype_size(mod.act_dtype)),
         v->shape, v->format == StorageFormat::nc1hwc0 ? kNc1hwc0C0 : 0});
  };
  // Every node is a kernel of its own, except the members of a fusion group (the `fusion_group`
  // attribute set by the graph pass fuse_kernels), compiled as one kernel whose intermediate values
  // stay on chip; a group the schedules cannot take is compiled node by node instead.
  std::set<int64_t> groups_done;
  std::set<const Node*> fused;
  const std::vector<std::string> parts_ops = lower::parts_ops();
  auto try_group = [&](const Node& first) -> bool {
    const int64_t gid = first.attrs.get_int("fusion_group", first.name);
    if (!groups_done.insert(gid).second) return false;
    std::vector<const Node*> members;
    for (const auto& n : graph.nodes())
      if (n->attrs.has("fusion_group") && n->attrs.get_int("fusion_group", n->name) == gid)
        members.push_back(n.get());
    if (members.size() < 2) return false;
    KernelInfo info;
    info.node = members.back()->name;
    for (const Node* m : members) info.op_type += (info.op_type.empty() ? "" : "+") + m->op_type;
    info.op_index = static_cast<int32_t>(prog.op_names.size());
    try {
      passes::KernelSpec spec;
      spec.name = info.node;
      Context ctx(gm, spec);
      std::map<const Value*, te::Tensor> inside;
      te::Tensor last;
      for (const Node* m : members) {
        if (lower::is_alias_op(*m) || m->op_type == "Concat" ||
            std::count(parts_ops.begin(), parts_ops.end(), m->op_type))
          throw Unsupported(fmt::format("{} cannot be fused", m->describe()));
        ctx.set_inside(&inside);
        last = lower::op_compute(*m, ctx);
        inside[m->outputs[0]] = last;
      }
      const Value* out = members.back()->outputs[0];
      spec.out = last;
      L::Buffer out_gm = gm.value(out);
      spec.gm[last.get()] = out_gm;
      CoreCode code = compile_kernel(info, spec, info.node);
      info.kind = "fused-" + info.kind;
      prog.op_names.push_back(info.node);
      append(info, code);
      record_value(out, out_gm);
      for (const Node* m : members) fused.insert(m);
      mod.kernels.push_back(std::move(info));
      return true;
    } catch (const Error&) {
      return false;  // compiled node by node below
    }
  };

  for (const auto& nptr : graph.nodes()) {
    const Node& node = *nptr;
    if (fused.count(&node)) continue;
    KernelInfo info;
    info.node = node.name;
    info.op_type = node.op_type;
    bool all_known = true;
    for (const Value* o : node.outputs)
      if (o && !o->constant) all_known = false;
    if (all_known) {
      info.kind = "const";
      mod.kernels.push_back(info);
      continue;
    }
    for (size_t i = 1; i < node.outputs.size(); ++i) {
      const Value* extra = node.outputs[i];
      if (!extra || extra->constant) continue;
      const bool is_graph_output =
          std::find(graph.outputs.begin(), graph.outputs.end(), extra) != graph.outputs.end();
      if (is_graph_output || !graph.users(extra).empty())
        throw Unsupported(
            fmt::format("{}: output {} ('{}') is used but the NPU backend computes "
                        "only the first output",
                        node.describe(), i, extra->name));
    }
    if (shape_numel(node.outputs[0]->shape) == 0) {  // an empty tensor: nothing to compute
      info.kind = "empty";
      gm.value(node.outputs[0]);
      mod.kernels.push_back(info);
      continue;
    }
    if (lower::is_alias_op(node)) {
      info.kind = "view";
      gm.alias(node.outputs[0], node.input(0));
      mod.kernels.push_back(info);
      continue;
    }
    if (node.attrs.has("fusion_group") && try_group(node)) continue;
    info.op_index = static_cast<int32_t>(prog.op_names.size());
    prog.op_names.push_back(node.name);
    const Value* out = node.outputs[0];
    L::Buffer out_gm = gm.value(out);
    passes::KernelSpec probe;
    Context parts_ctx(gm, probe);
    std::vector<lower::OpPart> parts = lower::op_parts(node, parts_ctx);
    CoreCode all(hw.cores);
    if (!parts.empty()) {
      for (size_t k = 0; k < parts.size(); ++k) {
        passes::KernelSpec spec;
        spec.name = parts[k].out->name;
        spec.gm = probe.gm;
        spec.out = parts[k].out;
        spec.gm[parts[k].out.get()] =
            L::make_view(out_gm, out->name, parts[k].view_shape, parts[k].view_strides,
                         out_gm->elem_offset + parts[k].view_offset);
        CoreCode code = compile_kernel(info, spec, node.name);
        // Parts reuse scratchpad addresses: each is followed by a barrier.
        KernelInfo part_info = info;
        part_info.instructions = 0;
        append(part_info, code);
        info.instructions += part_info.instructions;
      }
      info.kind = info.kind == "cube" ? "cube-parts" : "copy";
    } else {
      passes::KernelSpec spec;
      spec.name = node.name;
      Context ctx(gm, spec);
      te::Tensor t = lower::op_compute(node, ctx);
      spec.out = t;
      spec.gm[t.get()] = out_gm;
      CoreCode code = compile_kernel(info, spec, node.name);
      append(info, code);
    }
    record_value(out, out_gm);
    mod.kernels.push_back(std::move(info));
  }

  for (const Value* v : graph.outputs) {
    if (v->constant && !v->producer)
      throw Unsupported(
          fmt::format("graph output '{}' is a constant; nothing to compute", v->name));
    L::Buffer b = gm.value(v);
    gm.mark_output(b);
    const int64_t addr = b->storage()->address_bytes + b->elem_offset * dtype_size(mod.act_dtype);
    mod.outputs.push_back({v->name, static_cast<uint64_t>(addr), v->shape});
  }
  prog.gm_bytes = gm.next();
  return mod;
}

}  // namespace tessel::npu_backend
