// Graph IR -> isa::Program for the NPU (see compile.h).
#include "compiler/backend/npu/compile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "compiler/backend/npu/codegen.h"
#include "compiler/backend/npu/int8_ops.h"
#include "compiler/backend/npu/precision.h"
#include "compiler/lower/op_compute.h"
#include "compiler/ops/op_util.h"
#include "compiler/support/error.h"
#include "compiler/support/fp16.h"
#include "passes/graph/graph_passes.h"
#include "passes/loop/schedule.h"
#include "passes/loop/tile_emitter.h"

namespace tessel::npu_backend {

namespace L = tessel::loop;

namespace {

constexpr uint64_t kGmAlign = 64;

/// GM allocations for graph values and compile-time constants. A float value is stored in the
/// dtype of the precision plan (precision.h: f16 or f32); a float constant once per dtype its
/// readers compute in; `converted` holds a value's copy in the other float dtype (written by a
/// conversion kernel).
class GmPlanner {
 public:
  GmPlanner(isa::Program& program, const passes::NpuTarget& target)
      : program_(program), target_(target) {}

  void set_plan(std::map<std::string, DType> plan) { plan_ = std::move(plan); }

  /// The GM storage dtype of value `v`: floats by the plan (the activation dtype for a value the
  /// plan does not name), integers and bool as they are.
  DType storage_of(const Value* v) const {
    if (!dtype_is_float(v->dtype)) return v->dtype;
    auto it = plan_.find(v->name);
    return it == plan_.end() ? target_.act_dtype : it->second;
  }

  /// The GM buffer of value `v` (allocated on first use; views for pure-view ops).
  L::Buffer value(const Value* v) {
    auto it = by_value_.find(v);
    if (it != by_value_.end()) return it->second;
    L::Buffer b;
    if (v->constant) {
      return constant_as(v, storage_of(v));
    } else if (v->format == StorageFormat::nc1hwc0) {
      // [N, C, H, W] stored as [N, C/C0, H, W, C0] (graph.h StorageFormat).
      const Shape& s = v->shape;
      b = allocate(v->name, {s[0], s[1] / kNc1hwc0C0, s[2], s[3], kNc1hwc0C0}, isa::GmKind::scratch,
                   nullptr, storage_of(v));
    } else {
      b = allocate(v->name, v->shape, isa::GmKind::scratch, nullptr, storage_of(v));
    }
    by_value_[v] = b;
    return b;
  }

  /// Constant value `v` stored as `st` (floats; integers and bool as they are).
  L::Buffer constant_as(const Value* v, DType st) {
    if (!dtype_is_float(v->dtype)) st = v->dtype;
    auto key = std::make_pair(v, st);
    auto it = constants_.find(key);
    if (it != constants_.end()) return it->second;
    const bool first = std::none_of(constants_.begin(), constants_.end(),
                                    [&](const auto& c) { return c.first.first == v; });
    L::Buffer b = allocate(first ? v->name : fmt::format("{}.{}", v->name, dtype_to_string(st)),
                           v->constant->shape(), isa::GmKind::constant, v->constant.get(), st);
    constants_[key] = b;
    return b;
  }

  /// A scratch buffer for value `v`'s copy in float dtype `st`, laid out as v's own buffer, and
  /// whether it was just allocated (the caller then emits the conversion kernel).
  std::pair<L::Buffer, bool> converted(const Value* v, DType st) {
    auto key = std::make_pair(v, st);
    auto it = converted_.find(key);
    if (it != converted_.end()) return {it->second, false};
    const L::Buffer src = value(v);
    L::Buffer b = allocate(fmt::format("{}.{}", v->name, dtype_to_string(st)), src->shape,
                           isa::GmKind::scratch, nullptr, st);
    converted_[key] = b;
    return {b, true};
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

  /// A constant tensor in GM stored as `st` (floats; integers and bool as they are).
  L::Buffer constant(const std::string& name, const Tensor& t, DType st) {
    return allocate(name, t.shape(), isa::GmKind::constant, &t,
                    dtype_is_float(t.dtype()) ? st : t.dtype());
  }

  L::Buffer input(const Value* v) {
    L::Buffer b = allocate(v->name, v->shape, isa::GmKind::input, nullptr, storage_of(v));
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
  const passes::NpuTarget& target_;
  uint64_t next_ = 0;
  std::map<const Value*, L::Buffer> by_value_;
  std::map<std::string, DType> plan_;
  std::map<std::pair<const Value*, DType>, L::Buffer> constants_, converted_;

  L::Buffer allocate(const std::string& name, const Shape& shape, isa::GmKind kind,
                     const Tensor* init, DType st) {
    L::Buffer b = L::make_buffer(name, L::MemScope::gm, st, shape);
    b->address_bytes = static_cast<int64_t>(next_);
    isa::GmBuffer gb;
    gb.name = name;
    gb.kind = kind;
    gb.address = next_;
    gb.bytes = static_cast<uint64_t>(std::max<int64_t>(b->alloc_bytes, 0));
    gb.dtype = passes::isa_dtype(st);
    gb.shape = shape;
    if (init) {
      gb.init.resize(gb.bytes);
      pack_gm_elements(*init, st, gb.init.data());
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
  /// `kd`: the float dtype the kernel computes in (precision.h); `convert` gives the GM copy of
  /// a non-constant float value in dtype kd when its storage differs (emitting the conversion
  /// kernel); without it such a read throws tessel::Unsupported.
  using Convert = std::function<L::Buffer(const Value*, DType)>;
  Context(GmPlanner& gm, passes::KernelSpec& spec, DType kd, Convert convert = nullptr)
      : gm_(gm), spec_(spec), kd_(kd), convert_(std::move(convert)) {}

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
    te::Tensor p =
        te::placeholder(v->name, v->shape, dtype_is_float(v->dtype) ? DType::f32 : v->dtype);
    placeholders_[v] = p;
    L::Buffer b;
    if (!dtype_is_float(v->dtype)) {
      b = gm_.value(v);
    } else if (v->constant) {
      b = gm_.constant_as(v, kd_);
    } else if (gm_.storage_of(v) != kd_) {
      if (!convert_)
        throw Unsupported(fmt::format("value '{}' is stored {} but read by a {} kernel", v->name,
                                      dtype_to_string(gm_.storage_of(v)), dtype_to_string(kd_)));
      b = convert_(v, kd_);
    } else {
      b = gm_.value(v);
    }
    spec_.gm[p.get()] = b;
    return p;
  }

  bool typed_values() const override { return true; }

  te::Tensor derived_constant(const std::string& name, const Tensor& data) override {
    te::Tensor p = te::placeholder(name, data.shape(),
                                   dtype_is_float(data.dtype()) ? DType::f32 : data.dtype());
    spec_.gm[p.get()] = gm_.constant(name, data, kd_);
    return p;
  }

 private:
  GmPlanner& gm_;
  passes::KernelSpec& spec_;
  DType kd_;
  Convert convert_;
  std::map<const Value*, te::Tensor> placeholders_;
  const std::map<const Value*, te::Tensor>* inside_ = nullptr;
};

/// Canonical text of a kernel's tensor expressions: tensors and variables renamed by first use.
class Signature {
 public:
  explicit Signature(const passes::KernelSpec& spec) : spec_(spec) {}
  std::string text() {
    for (const auto& t : te::post_order(spec_.out)) tensor(t);
    os_ << "out t" << index_.at(spec_.out.get()) << "\n";
    return os_.str();
  }

 private:
  const passes::KernelSpec& spec_;
  std::ostringstream os_;
  std::map<const te::TensorNode*, int> index_;
  std::map<const L::VarNode*, int> vars_;
  int var(const L::VarNode* v) {
    auto it = vars_.find(v);
    if (it != vars_.end()) return it->second;
    const int id = static_cast<int>(vars_.size());
    vars_[v] = id;
    return id;
  }
  void tensor(const te::Tensor& t) {
    if (index_.count(t.get())) return;
    for (const auto& x : t->extra_inputs) tensor(x);
    const int id = static_cast<int>(index_.size());
    index_[t.get()] = id;
    os_ << "t" << id << " " << (t->is_placeholder() ? "in" : "compute") << " "
        << shape_to_string(t->shape) << " tag=" << t->tag;
    for (const auto& [k, v] : t->attrs) {
      os_ << " " << k << "=";
      for (int64_t x : v) os_ << x << ",";
    }
    for (const auto& x : t->extra_inputs) os_ << " x" << index_.at(x.get());
    auto gm = spec_.gm.find(t.get());
    if (gm != spec_.gm.end()) {
      // The GM layout (not the address): shape, strides, offset modulo a DRAM burst line.
      const L::Buffer& b = gm->second;
      os_ << " gm " << shape_to_string(b->shape) << " strides";
      for (int64_t s : b->strides) os_ << " " << s;
      os_ << " off" << b->elem_offset % 64;
      // fp32 storage (precision.h) on an fp16 target; fp16 keys are unchanged.
      if (b->dtype == DType::f32 && dtype_is_float(t->dtype)) os_ << " f32";
    }
    if (!t->is_placeholder()) {
      for (const auto& a : t->axes) os_ << " a" << var(a.get());
      os_ << " = ";
      expr(t->body);
    }
    os_ << "\n";
  }
  void expr(const L::Expr& e) {
    if (!e) {
      os_ << "_";
      return;
    }
    os_ << "(" << static_cast<int>(e->kind);
    switch (e->kind) {
      case L::ExprKind::Int:
        os_ << " " << e->int_value;
        break;
      case L::ExprKind::Float:
        os_ << " " << fmt::format("{:a}", e->float_value);
        break;
      case L::ExprKind::VarRef:
        os_ << " v" << var(e->var.get());
        break;
      case L::ExprKind::Call:
        os_ << " " << L::call_name(e->call);
        break;
      case L::ExprKind::TensorRead:
        tensor(e->tensor);
        os_ << " t" << index_.at(e->tensor.get());
        break;
      case L::ExprKind::Reduce:
        os_ << " " << L::reduce_name(e->reduce_op);
        for (const auto& r : e->reduce_axes) os_ << " r" << var(r.var.get()) << ":" << r.extent;
        break;
      default:
        break;
    }
    if (e->padded) os_ << " pad " << fmt::format("{:a}", e->pad_value);
    for (const auto& a : e->args) {
      os_ << " ";
      expr(a);
    }
    os_ << ")";
  }
};

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

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

/// The tiling-independent work of a kernel computing `out` (see npu::OpWork).
npu::OpWork kernel_work(const te::Tensor& out, const passes::KernelSpec& spec,
                        const npu::HwConfig& hw, int esize) {
  npu::OpWork w;
  // An int8-mode matmul or conv (int8_ops.h) counts the int8 fractal, its 1-byte operands, int32
  // accumulators and every tensor at its own element size: the roofline of its dtype.
  const te::Tensor c = find_contraction(out);
  const bool int8 = c && c->attrs.count("int8");
  const npu::CubeFractal fr = hw.core.cube.fractal(int8);
  const double m0 = fr.m, k0 = fr.k, n0 = fr.n;
  const double acc = int8 ? 4 : hw.core.cube.acc_dtype == isa::DType::f16 ? 2 : 4;
  auto size_of = [&](const te::Tensor& t) {
    return int8 ? static_cast<double>(dtype_size(t->dtype)) : static_cast<double>(esize);
  };
  auto up = [](double a, double b) { return std::ceil(a / b) * b; };
  for (const auto& t : te::post_order(out)) {
    const double elems = static_cast<double>(shape_numel(t->shape));
    if (t->is_placeholder()) {
      w.gm_read_bytes += elems * size_of(t);
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
      w.mte1_bytes +=
          n * groups * (up(cout_g, m0) * up(k, k0) + up(k, k0) * up(p, n0)) * (int8 ? 1 : esize);
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
      w.mte1_bytes +=
          batches * (up(M, m0) * up(K, k0) + up(K, k0) * up(N, n0)) * (int8 ? 1 : esize);
      w.fix_bytes += batches * up(M, m0) * up(N, n0) * acc;
      continue;
    }
    double n_passes = std::max(1, passes::arithmetic_nodes(t->body));
    double vec_elems = elems;
    if (t->is_reduce()) {
      double r = 1;
      for (const auto& ax : t->body->reduce_axes) r *= static_cast<double>(ax.extent);
      vec_elems = elems * r;
      n_passes = std::max(1, passes::arithmetic_nodes(t->body->args[0]) + 1);
    }
    w.vector_bytes += vec_elems * n_passes * esize;
  }
  w.gm_write_bytes += static_cast<double>(shape_numel(out->shape)) * size_of(out);
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

void pack_gm_elements(const Tensor& t, DType storage, uint8_t* dst) {
  const int64_t n = t.numel();
  if (!dtype_is_float(storage)) {
    // Integers and bool: the value's own bytes (the graph value and its storage share the dtype).
    const Tensor c = t.dtype() == storage ? t : t.cast(storage);
    std::memcpy(dst, c.raw(), static_cast<size_t>(n) * dtype_size(storage));
    return;
  }
  // fp32 values (the weights) read directly: get_as_double checks every index.
  const float* f32 = t.dtype() == DType::f32 ? t.data<float>() : nullptr;
  for (int64_t i = 0; i < n; ++i) {
    const float f = f32 ? f32[i] : static_cast<float>(t.get_as_double(i));
    if (storage == DType::f16) {
      const uint16_t h = f32_to_f16_bits(f);
      std::memcpy(dst + 2 * i, &h, 2);
    } else {
      std::memcpy(dst + 4 * i, &f, 4);
    }
  }
}

Tensor unpack_gm_value(const GmBinding& b, const uint8_t* bytes) {
  const bool is_float = dtype_is_float(b.storage);
  Tensor t(is_float ? DType::f32 : b.dtype, b.shape);
  const int esize = dtype_size(b.storage);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const uint8_t* src = bytes + esize * gm_element_index(b, i);  // NC1HWC0 values are unpacked
    if (!is_float) {
      std::memcpy(t.raw() + esize * i, src, esize);
    } else if (b.storage == DType::f16) {
      uint16_t h;
      std::memcpy(&h, src, 2);
      t.data<float>()[i] = f16_bits_to_f32(h);
    } else {
      std::memcpy(&t.data<float>()[i], src, 4);
    }
  }
  return t;
}

const char* knob_source_name(KnobSource s) {
  switch (s) {
    case KnobSource::analytical:
    case KnobSource::measured:
      return "default";
    case KnobSource::schedule:
      return "schedule";
    case KnobSource::log:
      return "log";
    case KnobSource::tuned:
      return "tuned";
  }
  return "?";
}

std::string task_key(const passes::KernelSpec& spec, const std::string& kind) {
  return fmt::format("{}-{:016x}", kind, fnv1a(Signature(spec).text()));
}

using CoreCode = std::vector<std::vector<isa::Instruction>>;

struct LoweredGraph::Impl {
  const Graph& graph;
  const npu::HwConfig& hw;
  NpuCompileOptions options;
  NpuModule mod;
  passes::NpuTarget target;
  GmPlanner gm;
  std::map<std::string, DType> plan;  // float value -> f16 | f32 (precision.h)
  std::vector<Kernel> kernels;
  std::vector<passes::KernelSpec> specs;
  std::vector<passes::NpuTarget> targets;  // per kernel: its float compute dtype (precision.h)
  std::vector<std::string> comments;
  std::map<std::string, std::vector<passes::Knobs>> candidates;
  /// The GM byte address of the guard (graph_passes::branch_guard) of the op at each index of
  /// mod.kernels whose kernels run only when that byte is nonzero; absent: unguarded.
  std::map<size_t, uint64_t> guards;
  bool finished = false;

  Impl(const Graph& g, const npu::HwConfig& h, const NpuCompileOptions& o)
      : graph(g),
        hw(h),
        options(o),
        target{&h, h.core.cube.input_dtype == isa::DType::f16 ? DType::f16 : DType::f32},
        gm(mod.program, target) {
    mod.act_dtype = target.act_dtype;
    plan = float_storage_plan(g, target.act_dtype);
    gm.set_plan(plan);
  }

  /// The schedule of a kernel with the options' restrictions, its task key and resolved knobs
  /// (appended to `kernels`/`specs`). `node` names the op for op_knobs. Throws what the pass
  /// throws; InvalidKnobs from the analytical default is rethrown as DefaultFailed (the caller may
  /// fall back), from given knobs as is.
  struct DefaultFailed : Error {
    using Error::Error;
  };
  void add_kernel(size_t op, const std::string& node, passes::KernelSpec spec,
                  DType kd = DType::undefined, bool conversion = false) {
    passes::NpuTarget target = this->target;
    if (kd != DType::undefined) target.act_dtype = kd;
    for (const auto& [t, b] : spec.gm)
      if (target.storage(t->dtype) != b->dtype && !(conversion && t->is_placeholder()))
        throw Unsupported(
            fmt::format("kernel {}: tensor '{}' is computed as {} but its GM value is {}",
                        spec.name, t->name, dtype_to_string(t->dtype), dtype_to_string(b->dtype)));
    if (const te::Tensor c = find_contraction(spec.out); c && c->tag != "conv2d")
      for (const auto& [t, b] : spec.gm)
        if (passes::is_nc1hwc0(b, t->shape.size()))
          fail("kernel {}: tensor '{}' is stored NC1HWC0, which a matmul kernel cannot read",
               spec.name, t->name);
    std::shared_ptr<passes::KernelSchedule> sched = passes::kernel_schedule(spec, target);
    if (!options.double_buffer) sched->restrict_knob("double_buffer", {0});
    if (!options.multicore) sched->restrict_knob("cores", {1});
    Kernel k;
    k.op = op;
    k.task = task_key(spec, sched->space().kind);
    if (auto it = options.op_knobs.find(node); it != options.op_knobs.end()) {
      k.knobs = passes::default_knobs(*sched, hw, it->second);
      k.source = KnobSource::schedule;
    } else if (auto t = options.task_knobs.find(k.task); t != options.task_knobs.end()) {
      if (auto why = sched->reject(t->second.knobs))
        throw passes::InvalidKnobs(
            fmt::format("{}: knobs {} for task {} (kernel {}) rejected: {}",
                        t->second.origin.empty() ? "task knobs" : t->second.origin,
                        passes::knobs_to_string(t->second.knobs), k.task, spec.name, *why));
      k.knobs = t->second.knobs;
      k.source = t->second.source;
    } else {
      auto s = candidates.find(k.task);
      if (s == candidates.end()) {
        passes::Screened ranked;
        try {
          ranked =
              passes::screen(*sched, hw, {}, options.candidates ? options.candidates_within : 1.0);
        } catch (const passes::InvalidKnobs& e) {
          throw DefaultFailed(e.what());
        }
        std::vector<passes::Knobs> kept{ranked.knobs(0)};
        if (options.candidates)
          for (passes::Knobs& c : options.candidates(ranked))
            if (c != kept.front()) kept.push_back(std::move(c));
        s = candidates.emplace(k.task, std::move(kept)).first;
      }
      k.knobs = s->second.front();
      k.source = KnobSource::analytical;
    }
    k.schedule = sched;
    k.work = kernel_work(spec.out, spec, hw, target.act_bytes());
    const npu::OpWork w = k.work;
    kernels.push_back(std::move(k));
    specs.push_back(std::move(spec));
    targets.push_back(target);
    npu::OpWork& acc = mod.kernels[op].work;
    acc.cube_macs += w.cube_macs;
    acc.cube_fractals += w.cube_fractals;
    acc.vector_bytes += w.vector_bytes;
    acc.mte1_bytes += w.mte1_bytes;
    acc.fix_bytes += w.fix_bytes;
    acc.gm_read_bytes += w.gm_read_bytes;
    acc.gm_write_bytes += w.gm_write_bytes;
    if (mod.kernels[op].kind.empty() || mod.kernels[op].kind == "vector")
      mod.kernels[op].kind = kernels.back().schedule->space().kind == "vector" ? "vector" : "cube";
  }

  /// The pass script of kernel `i` at `knobs`: tile, tensorize, then per core its share of the
  /// core-bound loop, double buffering, loop partitioning, memory planning, sync insertion and
  /// code generation. Streams of the cores the point does not use stay empty.
  CoreCode compile(size_t i, const passes::Knobs& knobs, std::string* ir,
                   std::string* comment) const {
    const Kernel& k = kernels[i];
    const passes::KernelSpec& spec = specs[i];
    const passes::NpuTarget& target = targets[i];
    L::Stmt body = passes::tensorize_vector(k.schedule->emit(knobs), target);
    if (comment) *comment = body->comment;
    const int cores = static_cast<int>(knobs.at("cores"));
    const bool db = knobs.at("double_buffer") != 0;
    CoreCode code(hw.cores);
    const int32_t op_index = mod.kernels[k.op].op_index;
    for (int core = 0; core < cores; ++core) {
      L::Stmt b = passes::split_cores(body, core, cores);
      if (db) b = passes::double_buffer(b);
      b = passes::partition_loops(b);
      passes::plan_memory(b, target, spec.name);
      b = passes::insert_sync(b, target);
      if (ir && core == 0) *ir += L::to_string(b);
      emit_kernel(b, target, op_index, code[core]);
    }
    return code;
  }

  /// Appends a compiled kernel to every core, each followed by a barrier (core_barrier with
  /// several cores: kernels reuse scratchpad addresses and read each other's results from GM).
  /// `hints` (L2 placement: l2_discard, l2_prefetch) go on core 0 before the kernel's code.
  void append(KernelInfo& info, const CoreCode& code,
              const std::vector<isa::Instruction>& hints = {}) {
    append_to(mod.program, info.op_index, code, hints);
    info.instructions += hints.size();
    for (int core = 0; core < hw.cores; ++core) info.instructions += code[core].size() + 1;
  }
  void append_to(isa::Program& prog, int32_t op_index, const CoreCode& code,
                 const std::vector<isa::Instruction>& hints = {}) const {
    for (int core = 0; core < hw.cores; ++core) {
      auto& stream = prog.cores[core];
      if (core == 0) stream.insert(stream.end(), hints.begin(), hints.end());
      // Branch targets were emitted relative to the kernel's first instruction: relocate them.
      const int32_t base = static_cast<int32_t>(stream.size());
      for (isa::Instruction in : code[core]) {
        if (isa::is_branch(in.op)) std::get<isa::ScalarArgs>(in.args).target += base;
        stream.push_back(std::move(in));
      }
      stream.push_back(barrier(op_index));
    }
  }

  /// The GM allocations each kernel touches (passes::KernelGmUse), in kernel order.
  std::vector<passes::KernelGmUse> gm_uses() const {
    std::map<uint64_t, const isa::GmBuffer*> by_address;
    for (const isa::GmBuffer& b : mod.program.buffers) by_address.emplace(b.address, &b);
    std::vector<passes::KernelGmUse> uses(specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      std::set<uint64_t> done;
      for (const auto& [t, b] : specs[i].gm) {
        const L::BufferNode* st = b->storage();
        if (st->address_bytes < 0) continue;
        const uint64_t a = static_cast<uint64_t>(st->address_bytes);
        auto it = by_address.find(a);
        if (it == by_address.end() || !done.insert(a).second) continue;
        const passes::GmRange r{a, it->second->bytes};
        if (it->second->kind == isa::GmKind::constant)
          uses[i].constants.push_back(r);
        else if (it->second->kind == isa::GmKind::scratch)
          uses[i].intermediates.push_back(r);
      }
    }
    return uses;
  }

  isa::Instruction barrier(int32_t op_index) const {
    isa::Instruction bar;
    bar.op = hw.cores > 1 ? isa::Opcode::core_barrier : isa::Opcode::barrier;
    bar.args = isa::ScalarArgs{};
    bar.op_index = op_index;
    return bar;
  }

  /// Records the guard of op `op` (mod.kernels index) compiled from `members`: the GM address of
  /// their common guard's byte (a bool scalar computed before them, or an input), or nothing when
  /// a member runs unguarded (fuse_kernels groups only nodes of one guard).
  void record_guard(size_t op, const std::vector<const Node*>& members) {
    const Value* g = graph_passes::branch_guard(graph, *members.front());
    for (const Node* m : members)
      if (graph_passes::branch_guard(graph, *m) != g) return;
    if (!g) return;
    if (g->dtype != DType::boolean || shape_numel(g->shape) != 1)
      fail("{}: guard '{}' is {}{}; the NPU branches on one bool byte", members.back()->describe(),
           g->name, dtype_to_string(g->dtype), shape_to_string(g->shape));
    const L::Buffer b = gm.value(g);
    guards[op] =
        static_cast<uint64_t>(b->storage()->address_bytes + b->elem_offset * dtype_size(b->dtype));
  }

  /// Opens a guarded block on every core of `prog`: `lbu x1, x0, address` (the guard's byte) and
  /// `blti x1, 1, <end>`, whose target close_guarded_block sets. `at` receives each core's blti.
  void open_guarded_block(isa::Program& prog, uint64_t address, int32_t op_index,
                          std::vector<size_t>& at) const {
    at.assign(hw.cores, 0);
    for (int core = 0; core < hw.cores; ++core) {
      auto& stream = prog.cores[core];
      isa::Instruction load, skip;
      load.op = isa::Opcode::lbu;
      load.args = isa::ScalarArgs{1, 0, 0, static_cast<int64_t>(address), -1};
      load.op_index = op_index;
      skip.op = isa::Opcode::blti;
      skip.args = isa::ScalarArgs{0, 1, 0, 1, -1};
      skip.op_index = op_index;
      stream.push_back(load);
      at[core] = stream.size();
      stream.push_back(skip);
    }
  }
  /// Points each core's blti of the open block past the core's last instruction.
  void close_guarded_block(isa::Program& prog, const std::vector<size_t>& at) const {
    for (int core = 0; core < hw.cores; ++core)
      std::get<isa::ScalarArgs>(prog.cores[core][at[core]].args).target =
          static_cast<int32_t>(prog.cores[core].size());
  }

  /// The GM copy of float value `v` in dtype `kd`, for a kernel of op `op` that computes in kd
  /// while v is stored in the other float dtype (precision.h): on first use, a conversion kernel
  /// (one vconv per tile: fp32 -> fp16 rounds to nearest even, fp16 -> fp32 is exact) over v's
  /// GM array as it is laid out (dense or NC1HWC0), attributed to `op`.
  L::Buffer convert_value(size_t op, const std::string& node, const Value* v, DType kd) {
    auto [dst, fresh] = gm.converted(v, kd);
    if (!fresh) return dst;
    const L::Buffer src = gm.value(v);
    passes::KernelSpec spec;
    spec.name = dst->name;
    te::Tensor p = te::placeholder(v->name, src->shape, DType::f32);
    te::Tensor out = te::compute(spec.name, src->shape,
                                 [&](const std::vector<L::Expr>& i) { return te::read(p, i); });
    spec.gm[p.get()] = src;
    spec.gm[out.get()] = dst;
    spec.out = out;
    add_kernel(op, node, std::move(spec), kd, /*conversion=*/true);
    return dst;
  }
  Context::Convert converter(size_t op, const std::string& node) {
    return [this, op, node](const Value* v, DType kd) { return convert_value(op, node, v, kd); };
  }

  void record_value(const Value* v, const L::Buffer& b) {
    const L::BufferNode* st = b->storage();
    mod.values.push_back(
        {v->name, static_cast<uint64_t>(st->address_bytes + b->elem_offset * dtype_size(b->dtype)),
         v->shape, v->format == StorageFormat::nc1hwc0 ? kNc1hwc0C0 : 0, v->dtype, b->dtype});
  }

  void lower();
};

void LoweredGraph::Impl::lower() {
  isa::Program& prog = mod.program;
  prog.name = graph.name;
  prog.cores.resize(hw.cores);
  for (const Value* v : graph.inputs) {
    if (!dtype_is_float(v->dtype) && !ops::dtype_is_integer(v->dtype) && v->dtype != DType::boolean)
      throw Unsupported(
          fmt::format("graph input '{}' has dtype {}; the NPU takes float, integer and bool inputs",
                      v->name, dtype_to_string(v->dtype)));
    L::Buffer b = gm.input(v);
    mod.inputs.push_back(
        {v->name, static_cast<uint64_t>(b->address_bytes), v->shape, 0, v->dtype, b->dtype});
  }
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
    const size_t op = mod.kernels.size();
    mod.kernels.push_back(info);
    try {
      passes::KernelSpec spec;
      spec.name = info.node;
      // One kernel, one float dtype: members planned in different dtypes are compiled node by
      // node (as a group needing a conversion kernel: Context throws without a converter).
      const DType kd = node_compute_dtype(*members.back(), plan, target.act_dtype);
      for (const Node* m : members)
        if (node_compute_dtype(*m, plan, target.act_dtype) != kd)
          throw Unsupported(fmt::format("{}: members compute in fp16 and fp32", info.node));
      Context ctx(gm, spec, kd);
      std::map<const Value*, te::Tensor> inside;
      te::Tensor last;
      for (const Node* m : members) {
        if (lower::is_alias_op(*m) || m->op_type == "Concat" ||
            std::count(parts_ops.begin(), parts_ops.end(), m->op_type))
          throw Unsupported(fmt::format("{} cannot be fused", m->describe()));
        ctx.set_inside(&inside);
        // QuantizeLinear / DequantizeLinear members (fuse_kernels: constant scale and zero
        // point) are the vector-unit Q/DQ of int8_ops.h, the same arithmetic as their standalone
        // kernels; their int8 values between members stay in the UB.
        const bool qdq = m->op_type == "QuantizeLinear" || m->op_type == "DequantizeLinear";
        last = qdq ? npu_int8_compute(*m, ctx, target.act_dtype) : lower::op_compute(*m, ctx);
        inside[m->outputs[0]] = last;
      }
      const Value* out = members.back()->outputs[0];
      spec.out = last;
      L::Buffer out_gm = gm.value(out);
      spec.gm[last.get()] = out_gm;
      add_kernel(op, info.node, std::move(spec), kd);
      mod.kernels[op].kind = "fused-" + mod.kernels[op].kind;
      prog.op_names.push_back(info.node);
      record_value(out, out_gm);
      record_guard(op, members);
      for (const Node* m : members) fused.insert(m);
      return true;
    } catch (const passes::InvalidKnobs&) {
      throw;  // knobs given for the group that its pass rejects: the user's error
    } catch (const Error&) {
      mod.kernels.pop_back();
      return false;  // compiled node by node below
    }
  };

  // One node as a kernel of its own (or a constant, a view, an empty tensor).
  auto lower_node = [&](const Node& node) {
    KernelInfo info;
    info.node = node.name;
    info.op_type = node.op_type;
    bool all_known = true;
    for (const Value* o : node.outputs)
      if (o && !o->constant) all_known = false;
    if (all_known) {
      info.kind = "const";
      mod.kernels.push_back(info);
      return;
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
      return;
    }
    // A view shares its input's bytes: only when both are stored alike (a float Cast from fp32
    // storage to float16 is computed instead, precision.h).
    if (lower::is_alias_op(node) &&
        gm.storage_of(node.outputs[0]) == gm.storage_of(node.input(0))) {
      info.kind = "view";
      gm.alias(node.outputs[0], node.input(0));
      mod.kernels.push_back(info);
      return;
    }
    info.op_index = static_cast<int32_t>(prog.op_names.size());
    prog.op_names.push_back(node.name);
    const size_t op = mod.kernels.size();
    mod.kernels.push_back(info);
    const Value* out = node.outputs[0];
    L::Buffer out_gm = gm.value(out);
    const DType kd = node_compute_dtype(node, plan, target.act_dtype);
    passes::KernelSpec probe;
    Context parts_ctx(gm, probe, kd, converter(op, node.name));
    std::vector<lower::OpPart> parts = lower::op_parts(node, parts_ctx);
    if (!parts.empty()) {
      for (size_t k = 0; k < parts.size(); ++k) {
        passes::KernelSpec spec;
        spec.name = parts[k].out->name;
        spec.gm = probe.gm;
        spec.out = parts[k].out;
        spec.gm[parts[k].out.get()] =
            L::make_view(out_gm, out->name, parts[k].view_shape, parts[k].view_strides,
                         out_gm->elem_offset + parts[k].view_offset);
        add_kernel(op, node.name, std::move(spec), kd);
      }
      mod.kernels[op].kind = mod.kernels[op].kind == "cube" ? "cube-parts" : "copy";
    } else {
      passes::KernelSpec spec;
      spec.name = node.name;
      Context ctx(gm, spec, kd, converter(op, node.name));
      // The quantised contractions run on the cube's int8 mode (int8_ops.h).
      te::Tensor t = is_npu_int8_op(node) ? npu_int8_compute(node, ctx, target.act_dtype,
                                                             hw.core.cube.int8_fractal().m)
                                          : lower::op_compute(node, ctx);
      spec.out = t;
      spec.gm[t.get()] = out_gm;
      add_kernel(op, node.name, std::move(spec), kd);
    }
    record_value(out, out_gm);
    record_guard(op, {&node});
  };

  // A group is emitted at its first member whose position has every value the members read from
  // outside the group computed: its first member, unless fuse_kernels pulled a producer from
  // before the group's seed into it (a residual Add's skip-branch DequantizeLinear); at the
  // latest its last member. Members passed before that are remembered, and lowered one by one if
  // the group then cannot be compiled as one kernel.
  std::set<const Node*> done;  // nodes whose outputs exist (kernels, views, constants)
  std::map<int64_t, std::vector<const Node*>> deferred;
  std::map<int64_t, std::set<const Node*>> group_members;
  for (const auto& n : graph.nodes())
    if (n->attrs.has("fusion_group"))
      group_members[n->attrs.get_int("fusion_group", n->name)].insert(n.get());
  auto group_ready = [&](int64_t gid) {
    const std::set<const Node*>& members = group_members.at(gid);
    for (const Node* m : members)
      for (const Value* v : m->inputs)
        if (v && v->producer && !members.count(v->producer) && !done.count(v->producer))
          return false;
    return true;
  };
  const size_t node_count = graph.nodes().size();
  size_t nodes_done = 0;
  for (const auto& nptr : graph.nodes()) {
    if (options.progress) options.progress("lower", nodes_done, node_count);
    ++nodes_done;
    const Node& node = *nptr;
    if (fused.count(&node)) continue;
    if (node.attrs.has("fusion_group")) {
      const int64_t gid = node.attrs.get_int("fusion_group", node.name);
      if (!groups_done.count(gid)) {
        if (!group_ready(gid)) {
          deferred[gid].push_back(&node);
          continue;
        }
        if (try_group(node)) {
          for (const Node* m : group_members.at(gid)) done.insert(m);
          continue;
        }
        for (const Node* d : deferred[gid]) {
          lower_node(*d);
          done.insert(d);
        }
      }
    }
    lower_node(node);
    done.insert(&node);
  }
  for (const auto& [gid, skipped] : deferred)
    TESSEL_CHECK(groups_done.count(gid), "fusion group {} (node {}) was never ready to emit", gid,
                 skipped.front()->name);

  if (options.progress) options.progress("lower", node_count, node_count);
  for (const Value* v : graph.outputs) {
    if (v->constant && !v->producer)
      throw Unsupported(
          fmt::format("graph output '{}' is a constant; nothing to compute", v->name));
    L::Buffer b = gm.value(v);
    gm.mark_output(b);
    const int64_t addr = b->storage()->address_bytes + b->elem_offset * dtype_size(b->dtype);
    mod.outputs.push_back({v->name, static_cast<uint64_t>(addr), v->shape, 0, v->dtype, b->dtype});
  }
  prog.gm_bytes = gm.next();
}

LoweredGraph::LoweredGraph(const Graph& graph, const npu::HwConfig& hw,
                           const NpuCompileOptions& options)
    : impl_(std::make_unique<Impl>(graph, hw, options)) {
  impl_->lower();
}

LoweredGraph::~LoweredGraph() = default;

const std::vector<LoweredGraph::Kernel>& LoweredGraph::kernels() const { return impl_->kernels; }

const std::vector<KernelInfo>& LoweredGraph::ops() const { return impl_->mod.kernels; }

const npu::HwConfig& LoweredGraph::hw() const { return impl_->hw; }

const std::vector<passes::Knobs>* LoweredGraph::candidates(const std::string& task) const {
  auto it = impl_->candidates.find(task);
  return it == impl_->candidates.end() ? nullptr : &it->second;
}

isa::Program LoweredGraph::kernel_program(size_t i, const passes::Knobs& knobs) const {
  TESSEL_CHECK(i < impl_->kernels.size(), "kernel {} of {}", i, impl_->kernels.size());
  isa::Program p;
  p.name = impl_->specs[i].name;
  p.cores = impl_->compile(i, knobs, nullptr, nullptr);
  p.gm_bytes = impl_->mod.program.gm_bytes;
  p.op_names = impl_->mod.program.op_names;
  for (auto& stream : p.cores)
    stream.push_back(impl_->barrier(impl_->mod.kernels[impl_->kernels[i].op].op_index));
  return p;
}

isa::Program LoweredGraph::timing_program(
    const std::map<std::string, passes::Knobs>& task_knobs) const {
  const Impl& m = *impl_;
  isa::Program p;
  p.name = m.mod.program.name;
  p.cores.resize(m.hw.cores);
  p.gm_bytes = m.mod.program.gm_bytes;
  p.op_names = m.mod.program.op_names;
  for (size_t i = 0; i < m.kernels.size(); ++i) {
    const Kernel& k = m.kernels[i];
    auto it = task_knobs.find(k.task);
    const CoreCode code =
        m.compile(i, it == task_knobs.end() ? k.knobs : it->second, nullptr, nullptr);
    m.append_to(p, m.mod.kernels[k.op].op_index, code);
  }
  return p;
}

void LoweredGraph::set_task_knobs(const std::string& task, const TaskKnobs& knobs) {
  for (auto& k : impl_->kernels) {
    if (k.task != task) continue;
    if (auto why = k.schedule->reject(knobs.knobs))
      throw passes::InvalidKnobs(fmt::format("{}: knobs {} for task {} rejected: {}",
                                             knobs.origin.empty() ? "task knobs" : knobs.origin,
                                             passes::knobs_to_string(knobs.knobs), task, *why));
    k.knobs = knobs.knobs;
    k.source = knobs.source;
  }
}

NpuModule LoweredGraph::finish() {
  Impl& m = *impl_;
  TESSEL_CHECK(!m.finished, "LoweredGraph::finish called twice");
  m.finished = true;
  // L2 placement (memory.l2.placement, an L2 only): l2_prefetch of the next kernels' weights at a
  // kernel's start, l2_discard of the intermediates whose last kernel was the previous one (after
  // its core barrier); both on core 0.
  const size_t n = m.kernels.size();
  std::vector<std::vector<passes::GmRange>> prefetch(n), discard(n);
  if (m.hw.l2.prefetches() || m.hw.l2.discards()) {
    const std::vector<passes::KernelGmUse> uses = m.gm_uses();
    if (m.hw.l2.prefetches())
      prefetch = passes::plan_l2_prefetch(uses, static_cast<uint64_t>(m.hw.l2.capacity_bytes));
    if (m.hw.l2.discards()) discard = passes::plan_l2_discard(uses);
  }
  // Consecutive kernels under the same guard form one guarded block: every core loads the
  // guard's byte (lbu) and jumps over the block when it is 0 (blti x1, 1), so only the taken
  // branch of an If runs. The byte was written by an earlier kernel, before that kernel's closing
  // (core_)barrier, or is an input, so every core reads the same value and takes the same branch,
  // and every core skips the same core_barriers.
  std::optional<uint64_t> open;  // the guard address of the open block
  std::vector<size_t> skip_at;   // each core's blti of the open block
  for (size_t i = 0; i < n; ++i) {
    if (m.options.progress) m.options.progress("compile", i, n);
    const Kernel& k = m.kernels[i];
    KernelInfo& info = m.mod.kernels[k.op];
    const auto guard = m.guards.find(k.op);
    const std::optional<uint64_t> want =
        guard == m.guards.end() ? std::nullopt : std::optional<uint64_t>(guard->second);
    if (open != want) {
      if (open) m.close_guarded_block(m.mod.program, skip_at);
      if (want) {
        m.open_guarded_block(m.mod.program, *want, info.op_index, skip_at);
        info.instructions += 2 * static_cast<uint64_t>(m.hw.cores);
      }
      open = want;
    }
    std::vector<isa::Instruction> hints;
    if (i > 0)
      for (const passes::GmRange& r : discard[i - 1])
        hints.push_back(passes::l2_hint(isa::Opcode::l2_discard, r, info.op_index));
    for (const passes::GmRange& r : prefetch[i])
      hints.push_back(passes::l2_hint(isa::Opcode::l2_prefetch, r, info.op_index));
    ScheduledKernel sk;
    sk.task = k.task;
    sk.kind = k.schedule->space().kind;
    sk.knobs = k.knobs;
    sk.source = k.source;
    const CoreCode code =
        m.compile(i, k.knobs, m.options.keep_loop_ir ? &info.loop_ir : nullptr, &sk.comment);
    info.schedules.push_back(std::move(sk));
    m.append(info, code, hints);
  }
  if (open) m.close_guarded_block(m.mod.program, skip_at);
  if (m.options.progress) m.options.progress("compile", n, n);
  return std::move(m.mod);
}

NpuCompileOptions same_tiles_on_one_core(const NpuModule& mod) {
  NpuCompileOptions o;
  for (const KernelInfo& k : mod.kernels)
    for (const ScheduledKernel& s : k.schedules) {
      passes::Knobs knobs = s.knobs;
      knobs["cores"] = 1;
      knobs["split"] = 0;
      o.task_knobs[s.task] = {knobs, KnobSource::schedule, "one core, the tiles of " + k.node};
    }
  return o;
}

NpuModule compile_npu(const Graph& graph, const npu::HwConfig& hw,
                      const NpuCompileOptions& options) {
  return LoweredGraph(graph, hw, options).finish();
}

}  // namespace tessel::npu_backend
