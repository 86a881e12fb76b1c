// Output comparison and the tolerances (see compare.h).
#include "compiler/driver/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <unordered_map>

#include "compiler/backend/npu/precision.h"
#include "compiler/driver/runner.h"
#include "compiler/lower/op_compute.h"
#include "compiler/ops/reference.h"
#include "compiler/support/fp16.h"

namespace tessel::driver {

Tolerance reference_tolerance() {
  return {1e-5, 1e-3,
          "fp32 reference vs independent data: rtol 1e-3 (ONNX backend tests), atol 1e-5"};
}

namespace {

namespace L = loop;

/// Placeholders for every graph value and derived constant: enough to build a node's compute.
/// Typed, as the NPU's context is (compiler/backend/npu/compile.cpp): the computes counted are
/// the ones the NPU compiles, integer operands included (Pow by an integer exponent tensor).
class PlaceholderContext : public lower::ComputeContext {
 public:
  bool typed_values() const override { return true; }
  te::Tensor input(const Value* v) override {
    return te::placeholder(v->name, v->shape, dtype_is_float(v->dtype) ? DType::f32 : v->dtype);
  }
  te::Tensor derived_constant(const std::string& name, const Tensor& data) override {
    return te::placeholder(name, data.shape(),
                           dtype_is_float(data.dtype()) ? DType::f32 : data.dtype());
  }
};

/// Roundings of each vector instruction sequence a call becomes (tensorize_vector.cpp), along
/// its longest chain; abs, neg and relu are exact.
double call_roundings(L::CallOp op) {
  switch (op) {
    case L::CallOp::abs:
    case L::CallOp::neg:
    case L::CallOp::relu:
      return 0;
    case L::CallOp::exp:
    case L::CallOp::log:
    case L::CallOp::sqrt:
    case L::CallOp::recip:
      return 1;
    case L::CallOp::rsqrt:  // vsqrt, vrec
      return 2;
    case L::CallOp::sigmoid:  // vmuls -1 (exact), vexp, vadds 1, vrec
      return 3;
    case L::CallOp::tanh:  // vmuls -2 (exact), vexp, vadds 1, vrec, vmuls 2 (exact), vadds -1
      return 4;
    case L::CallOp::erf:  // |x| p, + 1, 1/., a5 t, 4 x (+ a, x t), x q e, 1 - .: 14
      return 14;
    case L::CallOp::floor:  // exact: the result is an integer (the sequence has no error)
    case L::CallOp::ceil:
    case L::CallOp::round:
      return 0;
    case L::CallOp::sin:  // r = x - k pi: 4; r^2, 7 (Horner), r^3 (.), + r: 10; sign exact
    case L::CallOp::cos:
      return 14;
    case L::CallOp::atan:  // 1/|x|, z^2, 15 (Horner), z P, + pi/2, + p: 20
      return 20;
  }
  return 1;
}

/// The relative error of a call's vector implementation beyond its roundings
/// (tensorize_vector.cpp): sin and cos truncate their Taylor series at r^9 on [-pi/2, pi/2]
/// ((pi/2)^10 / 11! = 2.3e-6 relative; 4e-6 taken); the others are exact up to rounding, or
/// (erf 1.5e-7, atan 2e-8 absolute) below what fp16 storage resolves. It matters where the value is
/// kept in fp32.
double call_approx(L::CallOp op) { return op == L::CallOp::sin || op == L::CallOp::cos ? 4e-6 : 0; }

struct RoundingCounter {
  double approx = 0;  // sum of call_approx over the calls counted (each stage once)
  /// true: a K-term sum is an fp32 accumulator that rounds at each of its K - 1 additions (an
  /// fp32 implementation); false: fp32 accumulation of fp16 terms, one fp16 rounding at the end
  /// plus K 2^-24 in units of u = 2^-11 (the NPU).
  bool fp32_sums = false;
  std::unordered_map<const te::TensorNode*, double> stages;

  double stage(const te::Tensor& t) {
    if (!t || t->is_placeholder()) return 0;
    auto it = stages.find(t.get());
    if (it != stages.end()) return it->second;
    double r = expr(t->body);
    for (const auto& extra : t->extra_inputs) r = std::max(r, stage(extra));
    return stages[t.get()] = r;
  }

  double expr(const L::Expr& e) {
    if (!e) return 0;
    double in = 0;
    auto args = [&] {
      for (const auto& a : e->args) in = std::max(in, expr(a));
      return in;
    };
    switch (e->kind) {
      case L::ExprKind::TensorRead:
        return stage(e->tensor);
      case L::ExprKind::Add:
      case L::ExprKind::Sub:
      case L::ExprKind::Mul:
      case L::ExprKind::Div:
        return args() + (e->is_float ? 1 : 0);
      case L::ExprKind::Min:
      case L::ExprKind::Max:
        return args();
      case L::ExprKind::Select:
        return e->args.size() == 3 ? std::max(expr(e->args[1]), expr(e->args[2])) : args();
      case L::ExprKind::Call:
        approx += call_approx(e->call);
        return args() + call_roundings(e->call);
      case L::ExprKind::Reduce: {
        double k = 1;
        for (const auto& ax : e->reduce_axes) k *= static_cast<double>(ax.extent);
        // max and min pick one of their operands: no rounding.
        if (e->reduce_op != L::ReduceOp::sum) return args();
        return args() + (fp32_sums ? std::max(1.0, k - 1) : 1 + k / 8192);
      }
      default:  // constants, loop variables, integer index arithmetic, buffer loads
        return 0;
    }
  }
};

}  // namespace

namespace {

/// npu_roundings, or with `fp32_sums` the roundings of an fp32 implementation (fp32_roundings).
/// `approx`, when given, receives the node's implementation error (sum of call_approx).
double count_roundings(const Node& node, bool fp32_sums, double* approx = nullptr) {
  if (approx) *approx = 0;
  if (lower::is_alias_op(node)) return 0;
  // A node of constants only is folded at compile time (in fp32, then stored): one rounding.
  bool all_constant = true;
  for (const Value* v : node.inputs) all_constant &= !v || v->constant != nullptr;
  if (all_constant) return 1;
  PlaceholderContext ctx;
  RoundingCounter count;
  count.fp32_sums = fp32_sums;
  try {
    const auto parts = lower::op_parts(node, ctx);
    if (!parts.empty()) {
      double r = 0;
      for (const auto& p : parts) r = std::max(r, count.stage(p.out));
      if (approx) *approx = count.approx;
      return std::max(r, 1.0);
    }
    const double r = count.stage(lower::op_compute(node, ctx));
    if (approx) *approx = count.approx;
    return r;
  } catch (const Error&) {
    return 1;  // no compute of its own here (the backend decides how it runs): one rounding
  }
}

/// The Monte Carlo deviation of npu_tolerances: how far the modelled roundings move each output
/// of `graph` (D per output), with `runs` and `r_max` (the largest per-node count) for the basis
/// line. Each rounding is modelled as a relative perturbation of up to `u` (and `q` / 2
/// absolute). `f16` also rounds inputs and constants to fp16; `fp32_sums` counts roundings with
/// fp32_roundings instead of npu_roundings.
struct Deviation {
  std::map<std::string, Tensor> base;
  std::map<std::string, double> dev;
  int64_t runs = 0;
  double r_max = 0;
};

Deviation mc_deviation(const Graph& graph, const std::map<std::string, Tensor>& inputs, bool f16,
                       bool fp32_sums, double u, double q,
                       const std::map<std::string, DType>* plan = nullptr) {
  // With a precision plan (npu_backend::float_storage_plan), a value the NPU keeps in fp32 is
  // neither rounded to fp16 (inputs, constants) nor perturbed by fp16 roundings: its node's
  // roundings are fp32's (u = 2^-24, q = 2^-149).
  auto stored_f32 = [&](const Value& v) {
    if (!plan) return false;
    auto it = plan->find(v.name);
    return it != plan->end() && it->second == DType::f32;
  };
  constexpr int64_t kMinSamples = 64, kMaxRuns = 16;
  Deviation out;
  std::unordered_map<const Node*, double> sigma;   // sqrt(r) per node
  std::unordered_map<const Node*, double> approx;  // implementation error (fp32 values only)
  for (const auto& n : graph.nodes()) {
    // A node kept in fp32 sums in fp32, rounding at each addition (fp32_roundings' count).
    const bool f32_node =
        plan && !n->outputs.empty() && n->outputs[0] && stored_f32(*n->outputs[0]);
    double r = count_roundings(*n, fp32_sums || f32_node, plan ? &approx[n.get()] : nullptr);
    // An fp16 node reading an fp32 value reads it through a conversion kernel: one more rounding.
    if (plan && !n->outputs.empty() && n->outputs[0] && !stored_f32(*n->outputs[0]))
      for (const Value* in : n->inputs)
        if (in && !in->constant && dtype_is_float(in->dtype) && stored_f32(*in)) {
          r += 1;
          break;
        }
    out.r_max = std::max(out.r_max, r);
    sigma[n.get()] = std::sqrt(r);
  }
  out.base = ops::run_reference(graph, inputs);
  const auto& base = out.base;
  int64_t smallest = kMinSamples;
  for (const auto& [name, t] : base) smallest = std::min(smallest, std::max<int64_t>(t.numel(), 1));
  const int64_t runs = std::min(kMaxRuns, (kMinSamples + smallest - 1) / smallest);

  std::map<std::string, double>& deviation = out.dev;
  for (const auto& [name, t] : base) deviation[name] = 0;
  out.runs = runs;
  for (int64_t run = 0; run < runs; ++run) {
    std::mt19937_64 rng(0x7e55e1 + static_cast<uint64_t>(run));
    std::uniform_real_distribution<double> d(-1.0, 1.0);
    auto hook = [&](const Value& v, const Node* producer, Tensor& t) {
      if (!dtype_is_float(t.dtype())) return;
      const int64_t n = t.numel();
      const bool f32 = stored_f32(v);
      if (!producer) {  // an input or a constant, as the NPU stores it
        if (!f16 || f32) return;
        for (int64_t i = 0; i < n; ++i)
          t.set_from_double(i, round_to_f16(static_cast<float>(t.get_as_double(i))));
        return;
      }
      const double s = sigma.at(producer);
      // fp32: the implementation's own error (sin/cos series) where fp16 storage does not hide it.
      const double eps = f32 && plan ? approx.at(producer) : 0;
      if (s == 0 && eps == 0) return;
      // fp32: 2u per rounding, as fp32_tolerances (two implementations each within u differ by
      // up to 2u, and a perturbation stored in fp32 must reach an ulp to survive).
      const double uv = f32 ? std::ldexp(1.0, -23) : u, qv = f32 ? std::ldexp(1.0, -149) : q;
      for (int64_t i = 0; i < n; ++i) {
        const double x = t.get_as_double(i);
        t.set_from_double(i, x + s * (uv * x * d(rng) + 0.5 * qv * d(rng)) + eps * x * d(rng));
      }
    };
    const auto got = ops::run_reference(graph, inputs, hook);
    for (const auto& [name, want] : base) {
      const Tensor& g = got.at(name);
      double& dev = deviation[name];
      for (int64_t i = 0; i < want.numel(); ++i) {
        const double a = g.get_as_double(i), e = want.get_as_double(i);
        if (std::isfinite(a) && std::isfinite(e)) dev = std::max(dev, std::abs(a - e));
      }
    }
  }
  return out;
}

double max_abs_finite(const Tensor& t) {
  double m = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double e = t.get_as_double(i);
    if (std::isfinite(e)) m = std::max(m, std::abs(e));
  }
  return m;
}

}  // namespace

double npu_roundings(const Node& node) { return count_roundings(node, false); }

double fp32_roundings(const Node& node) { return count_roundings(node, true); }

std::map<std::string, Tolerance> npu_tolerances(const npu::HwConfig& hw, const Graph& model,
                                                const std::map<std::string, Tensor>& inputs,
                                                std::map<std::string, Tensor>* reference,
                                                const std::map<std::string, DType>* plan_in) {
  // The roundings are those of the graph the NPU computes: an LSTM's unrolled steps, a loss's
  // function body, a split LayerNormalization (run_model compiles the same form).
  const std::unique_ptr<Graph> form = compiled_form(model);
  const Graph& graph = form ? *form : model;
  const bool f16_target = hw.core.cube.input_dtype == isa::DType::f16;
  // Which values the NPU keeps in fp32 (precision.h); on an fp32 target all of them.
  const std::map<std::string, DType> own_plan =
      plan_in ? std::map<std::string, DType>{}
              : npu_backend::float_storage_plan(graph, f16_target ? DType::f16 : DType::f32);
  const std::map<std::string, DType>& plan = plan_in ? *plan_in : own_plan;
  constexpr double kLambda = 3;
  Deviation mc = f16_target ? mc_deviation(graph, inputs, true, false, std::ldexp(1.0, -11),
                                           std::ldexp(1.0, -24), &plan)
                            : mc_deviation(graph, inputs, false, false, std::ldexp(1.0, -24),
                                           std::ldexp(1.0, -149));
  const auto& base = mc.base;
  const auto& deviation = mc.dev;
  const int64_t runs = mc.runs;
  const double r_max = mc.r_max;
  constexpr double kCeilingUnits = 128;
  std::map<std::string, Tolerance> out;
  for (const auto& [name, dev] : deviation) {
    // The output's own storage: fp32 (u = 2^-24) where the plan keeps it so, else fp16.
    auto st = plan.find(name);
    const bool f16 = f16_target && !(st != plan.end() && st->second == DType::f32);
    const bool mixed_f32 = f16_target && !f16;  // an fp32 value on the fp16 target: 2u
    const double u = f16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, mixed_f32 ? -23 : -24);
    const double q = f16 ? std::ldexp(1.0, -24) : std::ldexp(1.0, -149);
    const double smallest_normal = f16 ? std::ldexp(1.0, -14) : std::ldexp(1.0, -126);
    const double max_expected = max_abs_finite(base.at(name));
    const double derived = kLambda * dev + smallest_normal;
    // The ceiling is the target's activation format's (fp16 on an fp16 target even for an fp32
    // output: fp16 kernels upstream may move it that far; a bound beyond it says nothing).
    const double cu = f16_target ? std::ldexp(1.0, -11) : u,
                 cq = f16_target ? std::ldexp(1.0, -24) : q;
    const double ceiling = kCeilingUnits * (cu * max_expected + cq);
    std::string basis = fmt::format(
        "derived ({} storage, u = {:.3g}): {} reference run{} with the NPU's roundings modelled "
        "(up to {:.3g} per op) move it by up to {:.3g}; atol = 3 x that + {:.3g}, rtol = u",
        f16 ? "fp16" : "fp32", u, runs, runs == 1 ? "" : "s", r_max, dev, smallest_normal);
    if (derived > ceiling)
      basis += fmt::format(
          "; capped at 128 u of max|expected| + 128 q of the activation format = {:.3g}{}", ceiling,
          kLambda * dev > ceiling ? ": storage alone moves this output further than a bound that "
                                    "says anything"
          : f16                   ? ": the output lies near fp16's smallest normal"
                                  : ": the output lies near fp32's smallest normal");
    out[name] = {std::min(derived, ceiling), u, std::move(basis)};
  }
  if (reference) *reference = base;
  return out;
}

std::map<std::string, Tolerance> fp32_tolerances(const Graph& graph,
                                                 const std::map<std::string, Tensor>& inputs) {
  // Two implementations, each within u = 2^-24 of the exact result per rounding, differ by up to
  // 2u; the perturbed values are stored in fp32, which keeps a move of 2u |x| (one ulp or more)
  // where one of u |x| would mostly round back.
  const double u = std::ldexp(1.0, -23);
  const double smallest_normal = std::ldexp(1.0, -126);
  constexpr double kLambda = 3;
  const Tolerance fixed = reference_tolerance();
  const Deviation mc = mc_deviation(graph, inputs, false, true, u, std::ldexp(1.0, -149));
  std::map<std::string, Tolerance> out;
  for (const auto& [name, dev] : mc.dev) {
    const double derived = kLambda * dev + smallest_normal;
    const double scale = max_abs_finite(mc.base.at(name));
    const double ceiling = fixed.rtol * scale;  // rtol of the output's scale
    const double atol = std::min(derived, ceiling);
    if (atol <= fixed.atol) {
      out[name] = fixed;
      continue;
    }
    std::string basis = fmt::format(
        "fp32 vs independent data: rtol {:.3g}, atol widened from {:.3g} to {:.3g} ({:.2g} of "
        "max|expected|): {} reference run{} with fp32 roundings modelled (2u = {:.3g} each, up "
        "to {:.3g} per op) move this output by up to {:.3g}; atol = 3 x that + {:.3g}",
        fixed.rtol, fixed.atol, atol, scale > 0 ? atol / scale : 0.0, mc.runs,
        mc.runs == 1 ? "" : "s", u, mc.r_max, dev, smallest_normal);
    if (derived > ceiling)
      basis += fmt::format(", capped at rtol x max|expected| = {:.3g}", ceiling);
    out[name] = {atol, fixed.rtol, std::move(basis)};
  }
  return out;
}

Tolerance gpu_tolerance(bool fp16, const Tensor& expected) {
  if (!fp16) return reference_tolerance();
  const double u = std::ldexp(1.0, -11);  // fp16 unit roundoff
  const double q = std::ldexp(1.0, -24);  // fp16 subnormal spacing
  double scale = 0;
  for (int64_t i = 0; i < expected.numel(); ++i)  // finite elements (conformance data has inf)
    if (std::isfinite(expected.get_as_double(i)))
      scale = std::max(scale, std::abs(expected.get_as_double(i)));
  const double k = 128 * u;
  return {k * scale + 128 * q, k,
          fmt::format("GPU tensor cores (fp16 operands, fp32 accumulation): 128 u = {:.3g} "
                      "relative, and 128 u x max|expected| + 128 x {:.3g} = {:.3g} absolute",
                      k, q, k * scale + 128 * q)};
}

OutputCheck compare_output(const std::string& name, const Tensor& actual, const Tensor& expected,
                           const Tolerance& tolerance) {
  OutputCheck c;
  c.name = name;
  c.tolerance = tolerance;
  if (actual.shape() != expected.shape()) {
    c.shape_ok = false;
    c.pass = false;
    c.max_abs_error = c.worst_ratio = INFINITY;
    return c;
  }
  const int64_t n = expected.numel();
  for (int64_t i = 0; i < n; ++i) {
    const double e = expected.get_as_double(i);
    if (std::isfinite(e)) c.max_expected = std::max(c.max_expected, std::abs(e));
  }
  bool pass = true;
  for (int64_t i = 0; i < n; ++i) {
    const double a = actual.get_as_double(i), e = expected.get_as_double(i);
    if (std::isnan(a) || std::isnan(e)) {
      if (std::isnan(a) != std::isnan(e)) {
        pass = false;
        c.max_abs_error = c.worst_ratio = INFINITY;
      }
      continue;
    }
    if (std::isinf(e) || std::isinf(a)) {
      if (a != e) {
        pass = false;
        c.max_abs_error = c.worst_ratio = INFINITY;
      }
      continue;
    }
    const double d = std::abs(a - e);
    c.max_abs_error = std::max(c.max_abs_error, d);
    if (std::abs(e) >= 1e-3 * c.max_expected && std::abs(e) > 0)
      c.max_rel_error = std::max(c.max_rel_error, d / std::abs(e));
    const double bound = tolerance.atol + tolerance.rtol * std::abs(e);
    if (d > 0) c.worst_ratio = std::max(c.worst_ratio, bound > 0 ? d / bound : INFINITY);
    if (d > bound) pass = false;
  }
  c.pass = pass;
  return c;
}

std::vector<KernelCheck> kernel_checks(const npu::HwConfig& hw, const Graph& graph,
                                       const std::map<std::string, Tensor>& graph_inputs,
                                       const std::map<std::string, Tensor>& npu_values,
                                       const std::set<std::string>* only) {
  const bool f16 = hw.core.cube.input_dtype == isa::DType::f16;
  const std::map<std::string, DType> plan =
      npu_backend::float_storage_plan(graph, f16 ? DType::f16 : DType::f32);
  auto plan_f16 = [&](const Value* v) {
    auto it = plan.find(v->name);
    return it == plan.end() || it->second == DType::f16;
  };
  std::unordered_map<const Node*, size_t> order;
  for (size_t i = 0; i < graph.nodes().size(); ++i) order[graph.nodes()[i].get()] = i;
  auto stored = [&](const Value* v) { return npu_values.count(v->name) != 0; };
  auto is_graph_input = [&](const Value* v) {
    return std::find(graph.inputs.begin(), graph.inputs.end(), v) != graph.inputs.end();
  };
  std::vector<KernelCheck> out;
  for (const auto& n : graph.nodes()) {
    for (const Value* v : n->outputs) {
      if (!v || v->constant || !stored(v) || (only && !only->count(v->name))) continue;
      // The nodes computing v from stored values, graph inputs and constants.
      std::vector<const Node*> members;
      std::vector<const Node*> todo = {n.get()};
      std::set<const Node*> seen;
      bool complete = true;
      while (!todo.empty()) {
        const Node* m = todo.back();
        todo.pop_back();
        if (!seen.insert(m).second) continue;
        members.push_back(m);
        for (const Value* in : m->inputs) {
          if (!in || in->constant || is_graph_input(in) || stored(in)) continue;
          if (in->producer)
            todo.push_back(in->producer);
          else
            complete = false;
        }
      }
      if (!complete) continue;
      std::sort(members.begin(), members.end(),
                [&](const Node* a, const Node* b) { return order.at(a) < order.at(b); });
      // The kernel as a graph of its own, fed with what the NPU read.
      Graph sub;
      sub.name = graph.name + "." + v->name;
      sub.opset = graph.opset;
      std::map<const Value*, Value*> map;
      std::map<std::string, Tensor> feeds;
      auto value_of = [&](const Value* in) -> Value* {
        auto it = map.find(in);
        if (it != map.end()) return it->second;
        Value* w;
        if (in->constant) {
          w = sub.add_constant(in->name, *in->constant);
        } else {
          w = sub.add_value(in->name, in->dtype, in->shape);
          sub.inputs.push_back(w);
          Tensor t = stored(in) ? npu_values.at(in->name) : graph_inputs.at(in->name);
          if (f16 && !stored(in) && dtype_is_float(t.dtype()) && plan_f16(in))
            for (int64_t i = 0; i < t.numel(); ++i)
              t.set_from_double(i, round_to_f16(static_cast<float>(t.get_as_double(i))));
          if (t.dtype() != in->dtype) t = t.cast(in->dtype);
          feeds[in->name] = std::move(t);
        }
        return map[in] = w;
      };
      std::string ops;
      for (const Node* m : members) {
        std::vector<Value*> ins, outs;
        for (const Value* in : m->inputs) ins.push_back(in ? value_of(in) : nullptr);
        for (const Value* o : m->outputs) {
          Value* w = o ? sub.add_value(o->name, o->dtype, o->shape) : nullptr;
          if (o) map[o] = w;
          outs.push_back(w);
        }
        sub.add_node(m->op_type, m->name, ins, outs, m->attrs);
        ops += (ops.empty() ? "" : "+") + m->op_type;
      }
      sub.outputs = {map.at(v)};
      std::map<std::string, Tensor> ref;
      const auto tol = npu_tolerances(hw, sub, feeds, &ref, &plan);
      const Tensor& want = ref.at(v->name);
      Tensor got = npu_values.at(v->name);
      if (got.dtype() != want.dtype()) got = got.cast(want.dtype());
      out.push_back({n->name, ops, v->name, compare_output(v->name, got, want, tol.at(v->name))});
    }
  }
  return out;
}

}  // namespace tessel::driver
