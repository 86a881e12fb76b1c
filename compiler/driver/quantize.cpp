// Static post-training quantisation to the QDQ format (see quantize.h for the scheme and sources).
#include "compiler/driver/quantize.h"
#include "compiler/driver/onnx_proto_attrs.h"

#include <onnx/checker.h>
#include <onnx/version_converter/convert.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include <fmt/format.h>

#include "compiler/driver/commands.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/ops/reference.h"
#include "compiler/support/error.h"

namespace tessel::driver {

namespace fs = std::filesystem;

namespace {

constexpr int kQdqOpset = 13;  // per-axis DequantizeLinear (and int32 DequantizeLinear inputs)
constexpr int kHistogramBins = 2048;

double round_half_even(double x) { return std::nearbyint(x); }  // FE_TONEAREST: ties to even

int64_t default_opset(const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return 0;
}

std::set<std::string> initializer_names(const onnx::GraphProto& g) {
  std::set<std::string> s;
  for (const auto& t : g.initializer()) s.insert(t.name());
  return s;
}

/// Runtime inputs: graph inputs that are not initializers, in order.
std::vector<const onnx::ValueInfoProto*> runtime_inputs(const onnx::GraphProto& g) {
  const auto inits = initializer_names(g);
  std::vector<const onnx::ValueInfoProto*> r;
  for (const auto& i : g.input())
    if (!inits.count(i.name())) r.push_back(&i);
  return r;
}

onnx::TensorProto make_tensor(const std::string& name, DType dtype, const Shape& dims,
                              const void* data, size_t bytes) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(static_cast<int>(dtype));
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(static_cast<const char*>(data), bytes));
  return t;
}

template <class T>
onnx::TensorProto make_tensor(const std::string& name, DType dtype, const Shape& dims,
                              const std::vector<T>& values) {
  return make_tensor(name, dtype, dims, values.data(), values.size() * sizeof(T));
}

/// The range of one tensor over the calibration runs.
struct Range {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  std::vector<uint64_t>
      histogram;  // percentile method, second pass: kHistogramBins over [min, max]
  uint64_t count = 0;
  bool seen() const { return min <= max; }
};

/// The value of histogram quantile `q` in [0, 1] (the lower edge of the bin holding it).
double histogram_quantile(const Range& r, double q) {
  if (r.max == r.min || r.count == 0) return q < 0.5 ? r.min : r.max;
  const double width = (r.max - r.min) / kHistogramBins;
  // The rank of the quantile: the ceil(q x count)-th smallest value (the 1e-9 keeps 0.999 x 1000
  // at 999, not 999.0000000000001 -> 1000).
  const uint64_t rank = std::max<uint64_t>(
      1, static_cast<uint64_t>(std::ceil(q * static_cast<double>(r.count) - 1e-9)));
  uint64_t acc = 0;
  for (int b = 0; b < kHistogramBins; ++b) {
    acc += r.histogram[b];
    if (acc >= rank) return r.min + width * (q < 0.5 ? b : b + 1);
  }
  return r.max;
}

/// Runs the reference on every calibration set and measures the ranges of `wanted` tensors.
std::map<std::string, Range> calibrate(const Graph& graph,
                                       const std::vector<std::map<std::string, Tensor>>& sets,
                                       const std::set<std::string>& wanted,
                                       const QuantizeOptions& options) {
  std::map<std::string, Range> ranges;
  auto minmax_hook = [&](const Value& v, const Node*, Tensor& t) {
    if (!wanted.count(v.name) || !dtype_is_float(t.dtype())) return;
    Range& r = ranges[v.name];
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double x = t.get_as_double(i);
      if (!std::isfinite(x)) continue;
      r.min = std::min(r.min, x);
      r.max = std::max(r.max, x);
    }
  };
  for (const auto& s : sets) ops::run_reference(graph, s, minmax_hook);
  if (options.method == CalibrationMethod::percentile) {
    for (auto& [name, r] : ranges) r.histogram.assign(kHistogramBins, 0);
    auto histogram_hook = [&](const Value& v, const Node*, Tensor& t) {
      auto it = ranges.find(v.name);
      if (it == ranges.end() || !it->second.seen()) return;
      Range& r = it->second;
      const double width = (r.max - r.min) / kHistogramBins;
      for (int64_t i = 0; i < t.numel(); ++i) {
        const double x = t.get_as_double(i);
        if (!std::isfinite(x)) continue;
        int b = width > 0 ? static_cast<int>((x - r.min) / width) : 0;
        b = std::clamp(b, 0, kHistogramBins - 1);
        ++r.histogram[b];
        ++r.count;
      }
    };
    for (const auto& s : sets) ops::run_reference(graph, s, histogram_hook);
    const double p = options.percentile / 100.0;
    for (auto& [name, r] : ranges) {
      if (!r.seen()) continue;
      const double lo = histogram_quantile(r, 1.0 - p), hi = histogram_quantile(r, p);
      r.min = lo;
      r.max = hi;
    }
  }
  return ranges;
}

/// Names that do not exist in the graph yet.
class Namer {
 public:
  explicit Namer(const onnx::GraphProto& g) {
    for (const auto& t : g.initializer()) used_.insert(t.name());
    for (const auto& i : g.input()) used_.insert(i.name());
    for (const auto& n : g.node()) {
      used_.insert(n.name());
      for (const auto& o : n.output()) used_.insert(o);
    }
  }
  std::string make(const std::string& base) {
    std::string n = base;
    for (int k = 1; used_.count(n); ++k) n = base + "_" + std::to_string(k);
    used_.insert(n);
    return n;
  }

 private:
  std::set<std::string> used_;
};

onnx::NodeProto make_node(const std::string& op, const std::string& name,
                          const std::vector<std::string>& inputs, const std::string& output,
                          std::optional<int64_t> axis = std::nullopt) {
  onnx::NodeProto n;
  n.set_op_type(op);
  n.set_name(name);
  for (const auto& i : inputs) n.add_input(i);
  n.add_output(output);
  if (axis) {
    auto* a = n.add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(*axis);
  }
  return n;
}

/// The weight input of a node and the axis of its output channels (-1: per tensor only).
struct WeightSlot {
  int input = -1;
  int64_t channel_axis = -1;
};

WeightSlot weight_slot(const onnx::NodeProto& n, const Tensor& w) {
  if (n.op_type() == "Conv") return {1, 0};
  if (n.op_type() == "Gemm") return {1, proto_attr_int(n, "transB", 0) ? 0 : 1};
  if (n.op_type() == "MatMul") return {1, w.rank() == 2 ? 1 : -1};
  return {};
}

/// The converter's IR writes initializers back as Constant nodes: turn every Constant with a
/// `value` tensor into an initializer again (the form quantised models and ONNX Runtime expect).
void constants_to_initializers(onnx::GraphProto& g) {
  google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
  for (const auto& n : g.node()) {
    const bool tensor_constant = n.op_type() == "Constant" && n.attribute_size() == 1 &&
                                 n.attribute(0).name() == "value" && n.output_size() == 1;
    if (!tensor_constant) {
      *kept.Add() = n;
      continue;
    }
    onnx::TensorProto t = n.attribute(0).t();
    t.set_name(n.output(0));
    *g.add_initializer() = std::move(t);
  }
  g.mutable_node()->Swap(&kept);
}

}  // namespace

QParams activation_qparams(double rmin, double rmax) {
  if (!std::isfinite(rmin) || !std::isfinite(rmax) || rmin > rmax)
    fail("activation range [{}, {}] is not a finite interval", rmin, rmax);
  rmin = std::min(rmin, 0.0);
  rmax = std::max(rmax, 0.0);
  if (rmax == rmin) return {1.f, 0};
  QParams p;
  p.scale = static_cast<float>((rmax - rmin) / 255.0);
  p.zero_point = static_cast<int32_t>(
      std::clamp(round_half_even(-128.0 - rmin / static_cast<double>(p.scale)), -128.0, 127.0));
  return p;
}

QParams weight_qparams(double absmax) {
  if (!std::isfinite(absmax) || absmax < 0)
    fail("weight magnitude {} is not a finite non-negative number", absmax);
  if (absmax == 0) return {1.f, 0};
  return {static_cast<float>(absmax / 127.0), 0};
}

int8_t quantize_int8(float x, QParams p) {
  const double q = round_half_even(static_cast<double>(x) / p.scale) + p.zero_point;
  return static_cast<int8_t>(std::clamp(q, -128.0, 127.0));
}

onnx::ModelProto quantize_static(const onnx::ModelProto& given_model, const std::string& model_name,
                                 const std::vector<std::map<std::string, Tensor>>& calibration,
                                 const QuantizeOptions& options, QuantizeSummary* summary_out) {
  if (calibration.empty()) fail("{}: no calibration input set", model_name);
  if (options.method == CalibrationMethod::percentile &&
      !(options.percentile > 50 && options.percentile <= 100))
    fail("percentile {} is outside (50, 100]", options.percentile);
  try {
    onnx::checker::check_model(given_model);
  } catch (const std::exception& e) {
    fail("{}: onnx::checker rejects the model: {}", model_name, e.what());
  }
  QuantizeSummary summary;
  // BatchNormalization folded first, so that calibration sees the folded Conv's output.
  onnx::ModelProto float_model = given_model;
  if (options.fuse) {
    // Weights and BN parameters may be Constant nodes (older exporters): initializers first, as
    // the version converter's output gets below.
    constants_to_initializers(*float_model.mutable_graph());
    summary.batchnorms_folded = fold_conv_batchnorm(float_model, model_name);
  }
  summary.opset_before = default_opset(float_model);

  // Shapes of the runtime inputs, from the first set; every set must match.
  frontend::ImportOptions io;
  for (const auto* in : runtime_inputs(float_model.graph())) {
    for (size_t s = 0; s < calibration.size(); ++s) {
      auto it = calibration[s].find(in->name());
      if (it == calibration[s].end())
        fail("{}: calibration set {} has no tensor for input '{}'", model_name, s, in->name());
      if (s == 0) io.input_shapes[in->name()] = it->second.shape();
      if (it->second.shape() != io.input_shapes[in->name()])
        fail("{}: calibration set {} gives input '{}' shape {}, set 0 gives {}", model_name, s,
             in->name(), shape_to_string(it->second.shape()),
             shape_to_string(io.input_shapes[in->name()]));
    }
  }
  // The float model through tessel's importer: its shapes (for the version converter) and the
  // graph the calibration runs on. Tensor names are the model's, and the converter keeps them.
  std::string bytes;
  if (!float_model.SerializeToString(&bytes)) fail("{}: cannot serialize the model", model_name);
  const auto graph = frontend::import_onnx_bytes(bytes, model_name, io);

  onnx::ModelProto model = float_model;
  if (summary.opset_before < kQdqOpset) {
    try {
      // The converter's adapters need tensor ranks (Softmax-13's axis): give it every tensor's
      // type and shape as tessel's shape inference found them. The result keeps the model's own
      // input types and value_info (the dims bound for calibration stay out of the model).
      onnx::ModelProto typed = float_model;
      auto* vi = typed.mutable_graph()->mutable_value_info();
      vi->Clear();
      std::set<std::string> io_names;
      for (const auto& i : typed.graph().input()) io_names.insert(i.name());
      for (const auto& o : typed.graph().output()) io_names.insert(o.name());
      for (const auto& v : graph->values()) {
        if (io_names.count(v->name) || v->dtype == DType::undefined) continue;
        auto* e = vi->Add();
        e->set_name(v->name);
        auto* tt = e->mutable_type()->mutable_tensor_type();
        tt->set_elem_type(static_cast<int>(v->dtype));
        auto* shape = tt->mutable_shape();
        for (int64_t d : v->shape) shape->add_dim()->set_dim_value(d);
      }
      model = onnx::version_conversion::ConvertVersion(typed, kQdqOpset);
      *model.mutable_graph()->mutable_value_info() = float_model.graph().value_info();
      constants_to_initializers(*model.mutable_graph());
    } catch (const std::exception& e) {
      fail(
          "{}: ONNX's version converter cannot bring opset {} to {} (needed for per-axis "
          "DequantizeLinear): {}",
          model_name, summary.opset_before, kQdqOpset, e.what());
    }
  }
  summary.opset_after = default_opset(model);
  onnx::GraphProto& g = *model.mutable_graph();

  const auto inits = initializer_names(g);
  std::map<std::string, int> init_index;
  for (int i = 0; i < g.initializer_size(); ++i) init_index[g.initializer(i).name()] = i;
  std::map<std::string, int> consumers;  // tensor -> number of node inputs reading it
  std::map<std::string, int> reader;     // tensor -> index of a node reading it
  for (int ni = 0; ni < g.node_size(); ++ni)
    for (const auto& i : g.node(ni).input()) {
      ++consumers[i];
      reader[i] = ni;
    }
  std::set<std::string> graph_outputs;
  for (const auto& o : g.output()) graph_outputs.insert(o.name());
  // options.fuse: the Relu that alone reads tensor t (t not a graph output), or null.
  auto sole_relu = [&](const std::string& t) -> const onnx::NodeProto* {
    if (!options.fuse || consumers[t] != 1 || graph_outputs.count(t)) return nullptr;
    const auto& r = g.node(reader.at(t));
    return r.op_type() == "Relu" && r.output_size() == 1 ? &r : nullptr;
  };

  // Which activations the quantised nodes read and write.
  std::set<std::string> wanted;
  for (const auto& n : g.node()) {
    if (!options.op_types.count(n.op_type())) continue;
    for (int i = 0; i < std::min(n.input_size(), 2); ++i)
      if (!inits.count(n.input(i))) wanted.insert(n.input(i));
    wanted.insert(n.output(0));
    if (const auto* r = sole_relu(n.output(0))) wanted.insert(r->output(0));
  }
  const auto ranges = calibrate(*graph, calibration, wanted, options);

  Namer namer(g);
  std::map<std::string, QParams> act;          // activation -> its parameters (Q/DQ to insert)
  std::map<std::string, std::string> dq_name;  // tensor -> its DequantizeLinear output
  std::vector<onnx::NodeProto> weight_nodes;   // DequantizeLinear of the quantised initializers
  std::set<std::string> drop_inits;            // float initializers replaced by int ones
  std::vector<onnx::TensorProto> new_inits;
  auto activation = [&](const std::string& t) -> std::optional<QParams> {
    if (act.count(t)) return act.at(t);
    auto it = ranges.find(t);
    if (it == ranges.end() || !it->second.seen()) return std::nullopt;
    act[t] = activation_qparams(it->second.min, it->second.max);
    return act.at(t);
  };
  // Quantised initializer `name` (int8 weights or int32 biases) behind a DequantizeLinear.
  auto quantized_initializer = [&](const std::string& name, const Tensor& q,
                                   const std::vector<float>& scales, DType zp_dtype,
                                   std::optional<int64_t> axis) {
    const std::string qn = namer.make(name + "_quantized"), sn = namer.make(name + "_scale"),
                      zn = namer.make(name + "_zero_point"),
                      dn = namer.make(name + "_DequantizeLinear_Output");
    new_inits.push_back(make_tensor(qn, q.dtype(), q.shape(), q.raw(), q.nbytes()));
    const Shape sshape = axis ? Shape{static_cast<int64_t>(scales.size())} : Shape{};
    new_inits.push_back(make_tensor(sn, DType::f32, sshape, scales));
    const size_t zbytes = scales.size() * dtype_size(zp_dtype);
    std::vector<std::byte> zeros(zbytes);
    new_inits.push_back(make_tensor(zn, zp_dtype, sshape, zeros.data(), zbytes));
    weight_nodes.push_back(make_node("DequantizeLinear", namer.make(name + "_DequantizeLinear"),
                                     {qn, sn, zn}, dn, axis));
    drop_inits.insert(name);
    summary.weight_bytes_float += static_cast<int64_t>(q.numel()) * 4;
    summary.weight_bytes_quantized += static_cast<int64_t>(q.nbytes());
    return dn;
  };

  std::map<int, std::map<int, std::string>> rewired;  // node index -> input slot -> new name
  for (int ni = 0; ni < g.node_size(); ++ni) {
    const auto& n = g.node(ni);
    if (!options.op_types.count(n.op_type())) continue;
    const std::string what = fmt::format("node {} ({})", n.name(), n.op_type());
    if (n.input_size() < 2) {
      summary.skipped.push_back(what + ": fewer than two inputs");
      continue;
    }
    // The activation input(s) and the weight.
    const std::string& a = n.input(0);
    const std::string& b = n.input(1);
    if (inits.count(a)) {
      summary.skipped.push_back(what + ": its first input is an initializer");
      continue;
    }
    const auto pa = activation(a);
    if (!pa) {
      summary.skipped.push_back(what + ": input '" + a + "' is never computed at run time");
      continue;
    }
    const bool b_is_weight = inits.count(b) > 0;
    std::optional<QParams> pb;
    Tensor w;
    if (b_is_weight) {
      const auto& proto = g.initializer(init_index.at(b));
      w = frontend::parse_tensor_pb(proto.SerializeAsString(), model_name + " initializer " + b);
      if (w.dtype() != DType::f32) {
        summary.skipped.push_back(what + ": weight '" + b + "' is not float32");
        continue;
      }
      if (consumers[b] != 1) {
        summary.skipped.push_back(what + ": weight '" + b + "' is shared with another node");
        continue;
      }
    } else {
      pb = activation(b);
      if (!pb) {
        summary.skipped.push_back(what + ": input '" + b + "' is never computed at run time");
        continue;
      }
    }
    // Weight scales: one, or one per output channel.
    std::vector<float> wscales;
    if (b_is_weight) {
      const WeightSlot slot = weight_slot(n, w);
      const bool per_channel = options.per_channel && slot.channel_axis >= 0;
      const int64_t axis = per_channel ? slot.channel_axis : -1;
      const int64_t channels = per_channel ? w.shape()[axis] : 1;
      int64_t inner = 1;  // elements after the axis
      for (int d = static_cast<int>(axis) + 1; per_channel && d < w.rank(); ++d)
        inner *= w.shape()[d];
      auto channel_of = [&](int64_t i) { return per_channel ? (i / inner) % channels : 0; };
      std::vector<double> absmax(channels, 0.0);
      const float* wd = w.data<float>();
      for (int64_t i = 0; i < w.numel(); ++i)
        absmax[channel_of(i)] = std::max(absmax[channel_of(i)], std::fabs(double(wd[i])));
      std::vector<QParams> qp;
      for (double m : absmax) qp.push_back(weight_qparams(m));
      Tensor q(DType::i8, w.shape());
      for (int64_t i = 0; i < w.numel(); ++i)
        q.data<int8_t>()[i] = quantize_int8(wd[i], qp[channel_of(i)]);
      for (const auto& p : qp) wscales.push_back(p.scale);
      rewired[ni][1] = quantized_initializer(
          b, q, wscales, DType::i8, per_channel ? std::optional<int64_t>(axis) : std::nullopt);
      ++summary.weights_quantized;
      // Bias: int32 at scale input_scale x weight_scale, so that the int32 accumulator adds it.
      const bool bias_ok = n.input_size() > 2 && inits.count(n.input(2)) &&
                           consumers[n.input(2)] == 1 &&
                           (n.op_type() == "Conv" ||
                            (n.op_type() == "Gemm" && proto_attr_float(n, "alpha", 1.f) == 1.f &&
                             proto_attr_float(n, "beta", 1.f) == 1.f));
      if (bias_ok) {
        const std::string& bn = n.input(2);
        Tensor bias =
            frontend::parse_tensor_pb(g.initializer(init_index.at(bn)).SerializeAsString(),
                                      model_name + " initializer " + bn);
        const int64_t oc = per_channel ? channels : 1;
        if (bias.dtype() == DType::f32 && bias.rank() == 1 && (oc == 1 || bias.numel() == oc)) {
          std::vector<float> bscales;
          for (float s : wscales) bscales.push_back(pa->scale * s);
          Tensor qb(DType::i32, bias.shape());
          for (int64_t i = 0; i < bias.numel(); ++i) {
            const double s = bscales[oc == 1 ? 0 : i];
            const double v = round_half_even(bias.data<float>()[i] / s);
            qb.data<int32_t>()[i] =
                static_cast<int32_t>(std::clamp(v, double(std::numeric_limits<int32_t>::min()),
                                                double(std::numeric_limits<int32_t>::max())));
          }
          rewired[ni][2] = quantized_initializer(
              bn, qb, bscales, DType::i32, oc == 1 ? std::nullopt : std::optional<int64_t>(0));
          ++summary.biases_quantized;
        }
      }
    }
    ++summary.nodes_quantized;
    // The output, when something inside the graph reads it (after the Relu that alone reads it).
    if (const auto* r = sole_relu(n.output(0))) {
      if (consumers[r->output(0)] > 0 && activation(r->output(0))) ++summary.relus_fused;
    } else if (consumers[n.output(0)] > 0) {
      activation(n.output(0));
    }
  }

  // Activation Q/DQ pairs, each placed right after its producer (graph inputs: first).
  std::map<std::string, std::vector<onnx::NodeProto>> pair_after;  // producer output -> Q, DQ
  for (const auto& [t, p] : act) {
    const std::string sn = namer.make(t + "_scale"), zn = namer.make(t + "_zero_point"),
                      qn = namer.make(t + "_QuantizeLinear_Output"),
                      dn = namer.make(t + "_DequantizeLinear_Output");
    new_inits.push_back(make_tensor(sn, DType::f32, {}, std::vector<float>{p.scale}));
    new_inits.push_back(
        make_tensor(zn, DType::i8, {}, std::vector<int8_t>{static_cast<int8_t>(p.zero_point)}));
    pair_after[t].push_back(
        make_node("QuantizeLinear", namer.make(t + "_QuantizeLinear"), {t, sn, zn}, qn));
    pair_after[t].push_back(
        make_node("DequantizeLinear", namer.make(t + "_DequantizeLinear"), {qn, sn, zn}, dn));
    dq_name[t] = dn;
    ++summary.activation_pairs;
  }

  std::vector<onnx::NodeProto> nodes = weight_nodes;
  for (const auto* in : runtime_inputs(g))
    if (pair_after.count(in->name()))
      for (const auto& q : pair_after.at(in->name())) nodes.push_back(q);
  for (int ni = 0; ni < g.node_size(); ++ni) {
    onnx::NodeProto n = g.node(ni);
    for (int i = 0; i < n.input_size(); ++i) {
      if (rewired.count(ni) && rewired.at(ni).count(i)) {
        n.set_input(i, rewired.at(ni).at(i));
      } else if (dq_name.count(n.input(i))) {
        n.set_input(i, dq_name.at(n.input(i)));
      }
    }
    nodes.push_back(n);
    for (const auto& o : g.node(ni).output())
      if (pair_after.count(o))
        for (const auto& q : pair_after.at(o)) nodes.push_back(q);
  }
  g.clear_node();
  for (auto& n : nodes) *g.add_node() = std::move(n);

  // Initializers: the float ones replaced are dropped (and their graph inputs, in IR < 4 models).
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (const auto& t : g.initializer())
    if (!drop_inits.count(t.name())) *kept.Add() = t;
  for (auto& t : new_inits) *kept.Add() = std::move(t);
  g.mutable_initializer()->Swap(&kept);
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs;
  for (const auto& i : g.input())
    if (!drop_inits.count(i.name())) *inputs.Add() = i;
  g.mutable_input()->Swap(&inputs);
  // value_info of the rewired tensors is still right (their float tensors keep their names).

  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    internal_fail("{}: the quantised model fails onnx::checker: {}", model_name, e.what());
  }
  if (!model.SerializeToString(&bytes))
    fail("{}: cannot serialize the quantised model", model_name);
  frontend::import_onnx_bytes(bytes, model_name + " (quantised)", io);
  if (summary_out) *summary_out = summary;
  return model;
}

std::vector<std::map<std::string, Tensor>> random_calibration(
    const onnx::ModelProto& model, const std::string& model_name, int n, uint64_t seed,
    const std::map<std::string, Shape>& input_shapes) {
  if (n < 1) fail("--random {}: give at least one calibration set", n);
  uint64_t state = seed;
  auto next = [&] {  // SplitMix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  const auto inputs = runtime_inputs(model.graph());
  for (const auto& [name, s] : input_shapes)
    if (std::none_of(inputs.begin(), inputs.end(),
                     [&](const auto* i) { return i->name() == name; }))
      fail("--input-shape {}: the model has no runtime input of that name", name);
  std::vector<std::pair<std::string, Shape>> shapes;
  for (const auto* in : inputs) {
    const auto& tt = in->type().tensor_type();
    if (tt.elem_type() != static_cast<int>(DType::f32))
      fail("{}: input '{}' is not float32: give its calibration data with --calibration DIR",
           model_name, in->name());
    Shape s;
    auto bound = input_shapes.find(in->name());
    if (bound != input_shapes.end()) {
      s = bound->second;
    } else {
      for (const auto& d : tt.shape().dim()) {
        if (!d.has_dim_value() || d.dim_value() <= 0)
          fail("{}: input '{}' has a dynamic dim: bind it with --input-shape {}=D0,D1,...",
               model_name, in->name(), in->name());
        s.push_back(d.dim_value());
      }
    }
    shapes.emplace_back(in->name(), s);
  }
  std::vector<std::map<std::string, Tensor>> sets(n);
  for (auto& set : sets)
    for (const auto& [name, s] : shapes) {
      Tensor t(DType::f32, s);
      for (int64_t i = 0; i < t.numel(); ++i)
        t.data<float>()[i] = static_cast<float>(
            2.0 * static_cast<double>(next() >> 40) / static_cast<double>(1 << 24) - 1.0);
      set.emplace(name, std::move(t));
    }
  return sets;
}

std::vector<std::map<std::string, Tensor>> load_calibration_dir(const onnx::ModelProto& model,
                                                                const std::string& dir) {
  if (!fs::is_directory(dir)) fail("--calibration {}: not a directory", dir);
  std::vector<fs::path> set_dirs = test_data_set_dirs(dir);
  if (set_dirs.empty()) set_dirs.push_back(dir);
  const auto inputs = runtime_inputs(model.graph());
  std::vector<std::map<std::string, Tensor>> sets;
  for (const auto& d : set_dirs) {
    std::map<std::string, Tensor> set;
    for (size_t k = 0; k < inputs.size(); ++k) {
      const fs::path f = d / ("input_" + std::to_string(k) + ".pb");
      if (!fs::exists(f))
        fail("--calibration {}: {} is missing (input {} of the model, '{}')", dir, f.string(), k,
             inputs[k]->name());
      set.emplace(inputs[k]->name(), frontend::load_tensor_pb(f.string()));
    }
    sets.push_back(std::move(set));
  }
  return sets;
}

}  // namespace tessel::driver
