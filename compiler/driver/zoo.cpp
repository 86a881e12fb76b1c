// The zoo's model builders (see zoo.h for architectures, sources and the weight recipe).
#include "compiler/driver/zoo.h"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <map>
#include <random>
#include <set>

#include "compiler/frontend/onnx_import.h"
#include "compiler/ops/op_registry.h"
#include "compiler/support/error.h"

namespace tessel::zoo {

namespace {

static_assert(std::endian::native == std::endian::little,
              "ONNX raw_data is little-endian; the builders copy host floats");

constexpr int64_t kMaxBatch = 4096;
constexpr float kBatchNormEpsilon = 1e-5f;  // torch.nn.BatchNorm2d's default
/// BatchNormalization scale ranges (zoo.h): most layers, and the last layer of a residual branch.
constexpr double kScaleLo = 0.5, kScaleHi = 1.5;
constexpr double kResidualScaleLo = 0.1, kResidualScaleHi = 0.3;
/// Floor of a measured running variance, relative to the layer's mean variance, so that a channel
/// that is constant on the calibration input is not amplified by 1/sqrt(epsilon) on others.
constexpr double kMinRelativeVariance = 1e-3;

/// A uniform stream for one initializer (see zoo.h): mt19937_64, top 53 bits -> [0, 1).
class TensorRng {
 public:
  explicit TensorRng(uint64_t seed) : engine_(seed) {}
  /// U(lo, hi), computed in double and rounded once to float.
  float uniform(double lo, double hi) {
    const double u = static_cast<double>(engine_() >> 11) * 0x1.0p-53;
    return static_cast<float>(lo + (hi - lo) * u);
  }

 private:
  std::mt19937_64 engine_;
};

onnx::AttributeProto attr_int(const std::string& name, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}

onnx::AttributeProto attr_ints(const std::string& name, const std::vector<int64_t>& v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a.add_ints(x);
  return a;
}

onnx::AttributeProto attr_float(const std::string& name, float v) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}

void set_tensor_type(onnx::ValueInfoProto* vi, const std::string& name, const Shape& shape) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  auto* sh = tt->mutable_shape();
  for (int64_t d : shape) sh->add_dim()->set_dim_value(d);
}

/// Appends nodes and initializers to a GraphProto. Value names equal the names of the nodes that
/// produce them (ONNX keeps node and value names apart); initializers are "<layer>.<param>" as in
/// the PyTorch state dicts.
class Builder {
 public:
  Builder(onnx::GraphProto* graph, uint64_t seed) : graph_(graph), seed_(seed) {}

  std::string input(const std::string& name, const Shape& shape) {
    set_tensor_type(graph_->add_input(), name, shape);
    return name;
  }
  void output(const std::string& name, const Shape& shape) {
    set_tensor_type(graph_->add_output(), name, shape);
  }

  /// A float initializer of `dims` with values U(lo, hi) from the tensor's own stream.
  std::string uniform_init(const std::string& name, const Shape& dims, double lo, double hi) {
    return float_init(name, dims, draw(name, shape_numel(dims), lo, hi));
  }
  /// `count` values U(lo, hi) from the stream of initializer `name`.
  std::vector<float> draw(const std::string& name, int64_t count, double lo, double hi) const {
    TensorRng rng(tensor_seed(seed_, name));
    std::vector<float> v(static_cast<size_t>(count));
    for (float& x : v) x = rng.uniform(lo, hi);
    return v;
  }
  std::string float_init(const std::string& name, const Shape& dims, const std::vector<float>& v) {
    TESSEL_CHECK(static_cast<int64_t>(v.size()) == shape_numel(dims), "initializer {}", name);
    auto* t = graph_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
    return name;
  }
  /// A float scalar (rank 0) initializer, created once per name.
  std::string scalar(const std::string& name, float value) {
    if (scalars_.insert(name).second) float_init(name, {}, {value});
    return name;
  }
  std::string int64_init(const std::string& name, const std::vector<int64_t>& v) {
    auto* t = graph_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<int64_t>(v.size()));
    for (int64_t x : v) t->add_int64_data(x);
    return name;
  }

  /// Appends a node named `name` whose output value is `out` (default: `name`).
  std::string node(const std::string& op, const std::string& name,
                   const std::vector<std::string>& inputs,
                   const std::vector<onnx::AttributeProto>& attrs = {},
                   const std::string& out = "") {
    auto* n = graph_->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    const std::string o = out.empty() ? name : out;
    n->add_output(o);
    for (const auto& a : attrs) *n->add_attribute() = a;
    return o;
  }

  // --- CNN layers ---------------------------------------------------------------------------

  /// Conv without bias (a BatchNormalization follows), He-uniform weight [cout, cin/group, k, k].
  std::string conv(const std::string& name, const std::string& x, int64_t cin, int64_t cout,
                   int64_t k, int64_t stride, int64_t pad, int64_t group = 1) {
    const int64_t fan_in = cin / group * k * k;
    const double bound = std::sqrt(6.0 / static_cast<double>(fan_in));
    const std::string w = uniform_init(name + ".weight", {cout, cin / group, k, k}, -bound, bound);
    return node("Conv", name, {x, w},
                {attr_ints("dilations", {1, 1}), attr_int("group", group),
                 attr_ints("kernel_shape", {k, k}), attr_ints("pads", {pad, pad, pad, pad}),
                 attr_ints("strides", {stride, stride})});
  }

  /// BatchNormalization (inference form; epsilon 1e-5 as torch.nn.BatchNorm2d) over `c` channels:
  /// scale U(scale_lo, scale_hi), bias U(-0.25, 0.25); running mean 0 and variance 1 until
  /// measure_batch_norm replaces them with measured statistics.
  std::string bn(const std::string& name, const std::string& x, int64_t c,
                 double scale_lo = kScaleLo, double scale_hi = kScaleHi) {
    return node("BatchNormalization", name,
                {x, uniform_init(name + ".weight", {c}, scale_lo, scale_hi),
                 uniform_init(name + ".bias", {c}, -0.25, 0.25),
                 float_init(name + ".running_mean", {c}, std::vector<float>(c, 0.0f)),
                 float_init(name + ".running_var", {c}, std::vector<float>(c, 1.0f))},
                {attr_float("epsilon", kBatchNormEpsilon), attr_float("momentum", 0.9f)});
  }

  std::string relu(const std::string& name, const std::string& x) {
    return node("Relu", name, {x});
  }

  /// ReLU6 as torch.onnx exports it: Clip(x, 0, 6) with scalar min/max inputs.
  std::string relu6(const std::string& name, const std::string& x) {
    return node("Clip", name, {x, scalar("relu6.min", 0.0f), scalar("relu6.max", 6.0f)});
  }

  std::string add(const std::string& name, const std::string& a, const std::string& b) {
    return node("Add", name, {a, b});
  }

  std::string maxpool(const std::string& name, const std::string& x, int64_t k, int64_t stride,
                      int64_t pad) {
    return node("MaxPool", name, {x},
                {attr_int("ceil_mode", 0), attr_ints("dilations", {1, 1}),
                 attr_ints("kernel_shape", {k, k}), attr_ints("pads", {pad, pad, pad, pad}),
                 attr_ints("strides", {stride, stride})});
  }

  /// GlobalAveragePool -> Flatten(axis 1) -> Gemm(transB) to `out_name`, as torch.onnx exports
  /// AdaptiveAvgPool2d(1) + flatten + Linear. LeCun-uniform weight [classes, features].
  std::string classifier(const std::string& pool_name, const std::string& fc_name,
                         const std::string& x, int64_t features, int64_t classes,
                         const std::string& out_name) {
    const std::string p = node("GlobalAveragePool", pool_name, {x});
    const std::string f = node("Flatten", "flatten", {p}, {attr_int("axis", 1)});
    const double fan_in = static_cast<double>(features);
    const std::string w = uniform_init(fc_name + ".weight", {classes, features},
                                       -std::sqrt(3 / fan_in), std::sqrt(3 / fan_in));
    const std::string b =
        uniform_init(fc_name + ".bias", {classes}, -1 / std::sqrt(fan_in), 1 / std::sqrt(fan_in));
    return node("Gemm", fc_name, {f, w, b},
                {attr_float("alpha", 1.0f), attr_float("beta", 1.0f), attr_int("transB", 1)},
                out_name);
  }

  // --- Transformer layers -------------------------------------------------------------------

  /// nn.Linear on a [N, S, in] tensor as torch.onnx exports it: MatMul with the transposed weight
  /// [in, out] (initializer "<name>.weight"), then Add of the bias.
  std::string linear(const std::string& name, const std::string& x, int64_t in, int64_t out) {
    const double fan_in = static_cast<double>(in);
    const std::string w =
        uniform_init(name + ".weight", {in, out}, -std::sqrt(3 / fan_in), std::sqrt(3 / fan_in));
    const std::string b =
        uniform_init(name + ".bias", {out}, -1 / std::sqrt(fan_in), 1 / std::sqrt(fan_in));
    const std::string mm = node("MatMul", name + ".MatMul", {x, w});
    return node("Add", name + ".Add", {mm, b});
  }

  /// LayerNorm over the last axis as torch.onnx exports it at opset <= 16:
  /// y = (x - mean) / sqrt(mean((x - mean)^2) + eps) * gamma + beta.
  std::string layer_norm(const std::string& name, const std::string& x, int64_t hidden, float eps,
                         const std::string& out = "") {
    const std::string gamma = uniform_init(name + ".weight", {hidden}, 0.8, 1.2);
    const std::string beta = uniform_init(name + ".bias", {hidden}, -0.1, 0.1);
    const std::vector<onnx::AttributeProto> last_axis = {attr_ints("axes", {-1}),
                                                         attr_int("keepdims", 1)};
    const std::string mean = node("ReduceMean", name + ".ReduceMean", {x}, last_axis);
    const std::string d = node("Sub", name + ".Sub", {x, mean});
    const std::string sq = node("Pow", name + ".Pow", {d, scalar("layer_norm.two", 2.0f)});
    const std::string var = node("ReduceMean", name + ".ReduceMean_1", {sq}, last_axis);
    const std::string ve = node("Add", name + ".Add", {var, scalar("layer_norm.eps", eps)});
    const std::string sd = node("Sqrt", name + ".Sqrt", {ve});
    const std::string n = node("Div", name + ".Div", {d, sd});
    const std::string s = node("Mul", name + ".Mul", {n, gamma});
    return node("Add", name + ".Add_1", {s, beta}, {}, out);
  }

  /// GELU (erf form) as torch.onnx exports it: x * (erf(x / sqrt(2)) + 1) * 0.5.
  std::string gelu(const std::string& name, const std::string& x) {
    const std::string a =
        node("Div", name + ".Div", {x, scalar("gelu.sqrt2", static_cast<float>(std::sqrt(2.0)))});
    const std::string e = node("Erf", name + ".Erf", {a});
    const std::string p = node("Add", name + ".Add", {e, scalar("gelu.one", 1.0f)});
    const std::string m = node("Mul", name + ".Mul", {x, p});
    return node("Mul", name + ".Mul_1", {m, scalar("gelu.half", 0.5f)});
  }

 private:
  onnx::GraphProto* graph_;
  uint64_t seed_;
  std::set<std::string> scalars_;
};

// --- Models ---------------------------------------------------------------------------------

/// torchvision.models.resnet: 7x7/2 stem, 3x3/2 max pool, four stages of basic (expansion 1) or
/// bottleneck (expansion 4, stride on the 3x3 conv: v1.5) blocks, global average pool, FC 1000.
void build_resnet(Builder& b, bool bottleneck, const std::array<int, 4>& blocks, int64_t batch) {
  std::string x = b.input("input", {batch, 3, 224, 224});
  x = b.conv("conv1", x, 3, 64, 7, 2, 3);
  x = b.bn("bn1", x, 64);
  x = b.relu("relu", x);
  x = b.maxpool("maxpool", x, 3, 2, 1);
  const int64_t expansion = bottleneck ? 4 : 1;
  int64_t inplanes = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t planes = int64_t{64} << stage;
    for (int i = 0; i < blocks[stage]; ++i) {
      const std::string p = fmt::format("layer{}.{}", stage + 1, i);
      const int64_t stride = (i == 0 && stage > 0) ? 2 : 1;
      const int64_t outc = planes * expansion;
      std::string y;
      if (!bottleneck) {
        y = b.conv(p + ".conv1", x, inplanes, planes, 3, stride, 1);
        y = b.bn(p + ".bn1", y, planes);
        y = b.relu(p + ".relu1", y);
        y = b.conv(p + ".conv2", y, planes, planes, 3, 1, 1);
        y = b.bn(p + ".bn2", y, planes, kResidualScaleLo, kResidualScaleHi);
      } else {
        y = b.conv(p + ".conv1", x, inplanes, planes, 1, 1, 0);
        y = b.bn(p + ".bn1", y, planes);
        y = b.relu(p + ".relu1", y);
        y = b.conv(p + ".conv2", y, planes, planes, 3, stride, 1);
        y = b.bn(p + ".bn2", y, planes);
        y = b.relu(p + ".relu2", y);
        y = b.conv(p + ".conv3", y, planes, outc, 1, 1, 0);
        y = b.bn(p + ".bn3", y, outc, kResidualScaleLo, kResidualScaleHi);
      }
      std::string identity = x;
      if (stride != 1 || inplanes != outc) {
        identity = b.conv(p + ".downsample.0", x, inplanes, outc, 1, stride, 0);
        identity = b.bn(p + ".downsample.1", identity, outc);
      }
      x = b.relu(p + ".relu", b.add(p + ".add", y, identity));
      inplanes = outc;
    }
  }
  b.classifier("avgpool", "fc", x, inplanes, 1000, "logits");
  b.output("logits", {batch, 1000});
}

/// torchvision.models.mobilenet_v2 (width 1.0): features.0 = 3x3/2 conv 32, then inverted
/// residual blocks (t, c, n, s) = (1,16,1,1) (6,24,2,2) (6,32,3,2) (6,64,4,2) (6,96,3,1)
/// (6,160,3,2) (6,320,1,1) of [1x1 expand + BN + ReLU6 when t != 1] + 3x3 depthwise (stride s on
/// the first of n) + BN + ReLU6 + 1x1 linear projection + BN, with a residual Add when stride 1
/// and in == out channels; features.18 = 1x1 conv 1280; classifier = pool + Linear(1280, 1000)
/// (its Dropout is the identity at inference).
void build_mobilenetv2(Builder& b, int64_t batch) {
  std::string x = b.input("input", {batch, 3, 224, 224});
  x = b.conv("features.0.0", x, 3, 32, 3, 2, 1);
  x = b.bn("features.0.1", x, 32);
  x = b.relu6("features.0.2", x);
  struct Setting {
    int64_t t, c, n, s;
  };
  const Setting settings[] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                              {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int64_t inp = 32;
  int index = 1;
  for (const Setting& st : settings) {
    for (int64_t i = 0; i < st.n; ++i, ++index) {
      const int64_t stride = i == 0 ? st.s : 1;
      const int64_t hidden = inp * st.t;
      const std::string p = fmt::format("features.{}.conv", index);
      std::string y = x;
      int j = 0;
      if (st.t != 1) {
        y = b.conv(fmt::format("{}.0.0", p), y, inp, hidden, 1, 1, 0);
        y = b.bn(fmt::format("{}.0.1", p), y, hidden);
        y = b.relu6(fmt::format("{}.0.2", p), y);
        j = 1;
      }
      y = b.conv(fmt::format("{}.{}.0", p, j), y, hidden, hidden, 3, stride, 1, hidden);
      y = b.bn(fmt::format("{}.{}.1", p, j), y, hidden);
      y = b.relu6(fmt::format("{}.{}.2", p, j), y);
      y = b.conv(fmt::format("{}.{}", p, j + 1), y, hidden, st.c, 1, 1, 0);
      const bool residual = stride == 1 && inp == st.c;
      y = b.bn(fmt::format("{}.{}", p, j + 2), y, st.c, residual ? kResidualScaleLo : kScaleLo,
               residual ? kResidualScaleHi : kScaleHi);
      if (residual) y = b.add(fmt::format("features.{}.add", index), x, y);
      x = y;
      inp = st.c;
    }
  }
  x = b.conv("features.18.0", x, inp, 1280, 1, 1, 0);
  x = b.bn("features.18.1", x, 1280);
  x = b.relu6("features.18.2", x);
  b.classifier("avgpool", "classifier.1", x, 1280, 1000, "logits");
  b.output("logits", {batch, 1000});
}

/// One BERT-base encoder layer as HuggingFace BertLayer (post-LN): self-attention (Q, K, V
/// projections, heads, softmax(Q K^T / sqrt(64)) V, output projection), residual + LayerNorm,
/// FFN 768 -> 3072 -> GELU -> 768, residual + LayerNorm.
void build_bert_layer(Builder& b, int64_t batch) {
  constexpr int64_t seq = 128, hidden = 768, heads = 12, head_dim = 64, ffn = 3072;
  constexpr float eps = 1e-12f;  // BertConfig.layer_norm_eps
  const std::string x = b.input("hidden_states", {batch, seq, hidden});
  const std::string heads_shape =
      b.int64_init("attention.self.heads_shape", {batch, seq, heads, head_dim});
  const std::string merge_shape = b.int64_init("attention.self.merge_shape", {batch, seq, hidden});

  auto split_heads = [&](const std::string& name, const std::string& v,
                         const std::vector<int64_t>& perm) {
    const std::string r = b.node("Reshape", name + ".Reshape", {v, heads_shape});
    return b.node("Transpose", name + ".Transpose", {r}, {attr_ints("perm", perm)});
  };
  // [N,S,768] -> [N,12,S,64] for Q and V, [N,12,64,S] for K (PyTorch exports K^T this way).
  const std::string q = split_heads(
      "attention.self.query", b.linear("attention.self.query", x, hidden, hidden), {0, 2, 1, 3});
  const std::string k = split_heads(
      "attention.self.key", b.linear("attention.self.key", x, hidden, hidden), {0, 2, 3, 1});
  const std::string v = split_heads(
      "attention.self.value", b.linear("attention.self.value", x, hidden, hidden), {0, 2, 1, 3});
  std::string s = b.node("MatMul", "attention.self.scores", {q, k});
  s = b.node("Div", "attention.self.scale",
             {s, b.scalar("attention.self.sqrt_head_dim",
                          static_cast<float>(std::sqrt(static_cast<double>(head_dim))))});
  const std::string probs =
      b.node("Softmax", "attention.self.Softmax", {s}, {attr_int("axis", -1)});
  std::string ctx = b.node("MatMul", "attention.self.context", {probs, v});
  ctx = b.node("Transpose", "attention.self.context.Transpose", {ctx},
               {attr_ints("perm", {0, 2, 1, 3})});
  ctx = b.node("Reshape", "attention.self.context.Reshape", {ctx, merge_shape});
  std::string a = b.linear("attention.output.dense", ctx, hidden, hidden);
  a = b.node("Add", "attention.output.residual", {a, x});
  a = b.layer_norm("attention.output.LayerNorm", a, hidden, eps);

  std::string h = b.linear("intermediate.dense", a, hidden, ffn);
  h = b.gelu("intermediate.gelu", h);
  h = b.linear("output.dense", h, ffn, hidden);
  h = b.node("Add", "output.residual", {h, a});
  b.layer_norm("output.LayerNorm", h, hidden, eps, "output");
  b.output("output", {batch, seq, hidden});
}

/// The model with BatchNormalization running statistics mean 0, variance 1.
onnx::ModelProto build_uncalibrated(const ZooModel& info, int64_t batch, uint64_t seed) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  model.set_producer_name("tessel zoo");
  model.set_producer_version("0.1.0");
  model.set_doc_string(
      fmt::format("{}: {}. Deterministic pseudo-random weights (seed {}); see docs/zoo.md.",
                  info.title, info.source, seed));
  const std::pair<std::string, std::string> props[] = {{"tessel.zoo.model", info.name},
                                                       {"tessel.zoo.seed", std::to_string(seed)},
                                                       {"tessel.zoo.batch", std::to_string(batch)}};
  for (const auto& [k, v] : props) {
    auto* p = model.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name(info.name);
  Builder b(graph, seed);
  if (info.name == "resnet18") {
    build_resnet(b, false, {2, 2, 2, 2}, batch);
  } else if (info.name == "resnet50") {
    build_resnet(b, true, {3, 4, 6, 3}, batch);
  } else if (info.name == "mobilenetv2") {
    build_mobilenetv2(b, batch);
  } else if (info.name == "bert_layer") {
    build_bert_layer(b, batch);
  } else {
    internal_fail("zoo model '{}' has no builder", info.name);
  }
  return model;
}

/// Runs `model` (batch 1) on the reference interpreter with the calibration input and returns,
/// by initializer name, every BatchNormalization's running mean and variance measured on its
/// input: per channel, the mean and the (biased) variance over batch and spatial positions,
/// computed in double, the variance floored at kMinRelativeVariance x the layer's mean variance.
/// Layers are calibrated in order, each seeing the outputs of the calibrated layers before it.
std::map<std::string, std::vector<float>> measure_batch_norm(const onnx::ModelProto& model,
                                                             const ZooModel& info, uint64_t seed) {
  std::map<std::string, std::vector<float>> stats;
  bool any = false;
  for (const auto& n : model.graph().node()) any |= n.op_type() == "BatchNormalization";
  if (!any) return stats;
  auto graph = frontend::import_onnx_bytes(serialize_model(model),
                                           "zoo model " + info.name + " (calibration)");
  Graph& g = *graph;
  TESSEL_CHECK(g.inputs.size() == 1 && g.inputs[0]->shape == info.input_shape, "{}", info.name);
  // The calibration input: unit mean square, U(-sqrt(3), sqrt(3)), from its own stream.
  TensorRng rng(tensor_seed(seed, "calibration.input"));
  Tensor input(DType::f32, info.input_shape);
  for (int64_t i = 0; i < input.numel(); ++i)
    input.data<float>()[i] = rng.uniform(-std::sqrt(3.0), std::sqrt(3.0));

  std::map<const Value*, size_t> last_use;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (const Value* v : g.nodes()[i]->inputs)
      if (v) last_use[v] = i;
  std::map<const Value*, Tensor> env;
  env.emplace(g.inputs[0], std::move(input));
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    Node& n = *g.nodes()[i];
    if (n.op_type == "BatchNormalization") {
      const Tensor& x = env.at(n.inputs.at(0));
      const int64_t c = x.shape().at(1);
      const int64_t inner = x.numel() / (x.shape()[0] * c);
      std::vector<double> mean(c, 0.0), var(c, 0.0);
      const float* p = x.data<float>();
      for (int64_t b = 0; b < x.shape()[0]; ++b)
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t k = 0; k < inner; ++k) mean[ch] += p[(b * c + ch) * inner + k];
      const double count = static_cast<double>(x.shape()[0] * inner);
      for (double& m : mean) m /= count;
      for (int64_t b = 0; b < x.shape()[0]; ++b)
        for (int64_t ch = 0; ch < c; ++ch)
          for (int64_t k = 0; k < inner; ++k) {
            const double d = p[(b * c + ch) * inner + k] - mean[ch];
            var[ch] += d * d;
          }
      double mean_var = 0;
      for (double& v : var) mean_var += (v /= count);
      mean_var /= static_cast<double>(c);
      std::vector<float> mean_f(c), var_f(c);
      for (int64_t ch = 0; ch < c; ++ch) {
        mean_f[ch] = static_cast<float>(mean[ch]);
        var_f[ch] = static_cast<float>(std::max(var[ch], kMinRelativeVariance * mean_var));
      }
      n.inputs.at(3)->constant = std::make_shared<Tensor>(Tensor::from_floats({c}, mean_f));
      n.inputs.at(4)->constant = std::make_shared<Tensor>(Tensor::from_floats({c}, var_f));
      stats[n.inputs[3]->name] = std::move(mean_f);
      stats[n.inputs[4]->name] = std::move(var_f);
    }
    const bool known = std::all_of(n.outputs.begin(), n.outputs.end(),
                                   [](const Value* v) { return !v || v->is_constant(); });
    if (!known) {
      std::vector<const Tensor*> ins;
      for (const Value* v : n.inputs)
        ins.push_back(!v ? nullptr : v->is_constant() ? v->constant.get() : &env.at(v));
      auto outs = ops::run_reference_node(n, ins);
      for (size_t k = 0; k < n.outputs.size() && k < outs.size(); ++k)
        if (n.outputs[k]) env[n.outputs[k]] = std::move(outs[k]);
    }
    for (const Value* v : n.inputs)
      if (v && last_use[v] == i) env.erase(v);
  }
  return stats;
}

}  // namespace

const std::vector<ZooModel>& zoo_models() {
  static const std::vector<ZooModel> models = {
      {"resnet18",
       "ResNet-18",
       "He, Zhang, Ren, Sun, \"Deep Residual Learning for Image Recognition\", CVPR 2016; layout "
       "of torchvision.models.resnet18",
       18,
       "input",
       {1, 3, 224, 224},
       "logits"},
      {"resnet50",
       "ResNet-50 (v1.5)",
       "He, Zhang, Ren, Sun, \"Deep Residual Learning for Image Recognition\", CVPR 2016; layout "
       "of torchvision.models.resnet50 (stride on the bottleneck's 3x3 conv)",
       50,
       "input",
       {1, 3, 224, 224},
       "logits"},
      {"mobilenetv2",
       "MobileNetV2 (width 1.0)",
       "Sandler, Howard, Zhu, Zhmoginov, Chen, \"MobileNetV2: Inverted Residuals and Linear "
       "Bottlenecks\", CVPR 2018; layout of torchvision.models.mobilenet_v2",
       2,
       "input",
       {1, 3, 224, 224},
       "logits"},
      {"bert_layer",
       "BERT-base encoder layer (seq 128)",
       "Devlin, Chang, Lee, Toutanova, \"BERT: Pre-training of Deep Bidirectional Transformers "
       "for Language Understanding\", NAACL 2019; Vaswani et al., \"Attention Is All You Need\", "
       "NeurIPS 2017; layout of HuggingFace BertLayer exported by torch.onnx at opset <= 16",
       768,
       "hidden_states",
       {1, 128, 768},
       "output"},
  };
  return models;
}

const ZooModel& find_zoo_model(const std::string& name) {
  std::string names;
  for (const auto& m : zoo_models()) {
    if (m.name == name) return m;
    names += (names.empty() ? "" : ", ") + m.name;
  }
  fail("unknown model '{}' (models: {})", name, names);
}

uint64_t tensor_seed(uint64_t model_seed, const std::string& tensor_name) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis
  for (unsigned char c : tensor_name) {
    h ^= c;
    h *= 0x100000001b3ull;  // FNV-1a 64 prime
  }
  // SplitMix64 (Steele, Lea, Flood, "Fast Splittable Pseudorandom Number Generators", OOPSLA 2014).
  uint64_t z = (model_seed ^ h) + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

onnx::ModelProto build_zoo_model(const std::string& name, const ZooOptions& options) {
  const ZooModel& info = find_zoo_model(name);
  if (options.batch < 1 || options.batch > kMaxBatch)
    fail("batch {}: expected an integer from 1 to {}", options.batch, kMaxBatch);
  const uint64_t seed = options.seed.value_or(info.default_seed);
  onnx::ModelProto model = build_uncalibrated(info, options.batch, seed);
  if (options.calibrate) {
    // Statistics are measured at batch 1, so the weights do not depend on the batch.
    const auto stats = options.batch == 1
                           ? measure_batch_norm(model, info, seed)
                           : measure_batch_norm(build_uncalibrated(info, 1, seed), info, seed);
    for (auto& t : *model.mutable_graph()->mutable_initializer()) {
      auto it = stats.find(t.name());
      if (it == stats.end()) continue;
      TESSEL_CHECK(t.raw_data().size() == it->second.size() * sizeof(float), "{}", t.name());
      t.set_raw_data(std::string(reinterpret_cast<const char*>(it->second.data()),
                                 it->second.size() * sizeof(float)));
    }
  }
  return model;
}

std::string serialize_model(const onnx::ModelProto& model) {
  const size_t size = model.ByteSizeLong();
  if (size > static_cast<size_t>(INT32_MAX))
    fail("model '{}' is {} bytes, over protobuf's 2 GiB limit", model.graph().name(), size);
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    if (!model.SerializeToCodedStream(&coded))
      fail("model '{}': protobuf serialization failed", model.graph().name());
  }
  return bytes;
}

int64_t count_parameters(const Graph& graph) {
  std::set<const Value*> buffers, params;
  for (const auto& n : graph.nodes()) {
    if (n->op_type == "BatchNormalization")
      for (size_t i : {3, 4})
        if (n->input(i)) buffers.insert(n->input(i));
    for (const Value* v : n->inputs)
      if (v && v->is_constant() && !v->producer && dtype_is_float(v->dtype) &&
          shape_numel(v->shape) > 1)
        params.insert(v);
  }
  int64_t total = 0;
  for (const Value* v : params)
    if (!buffers.count(v)) total += shape_numel(v->shape);
  return total;
}

int64_t count_macs(const Graph& graph) {
  int64_t total = 0;
  for (const auto& n : graph.nodes()) {
    const bool conv = n->op_type == "Conv", gemm = n->op_type == "Gemm",
               matmul = n->op_type == "MatMul";
    if (!conv && !gemm && !matmul) continue;
    const Value* a = n->input(0);
    const Value* w = n->input(1);
    const Value* y = n->outputs.empty() ? nullptr : n->outputs[0];
    if (!a || !w || !y) fail("{}: cannot count MACs: a missing input or output", n->describe());
    int64_t k = 0;
    if (conv) {
      k = 1;
      for (size_t i = 1; i < w->shape.size(); ++i) k *= w->shape[i];
    } else if (gemm) {
      const bool trans_a = n->attrs.get_int_or("transA", 0, n->name) != 0;
      if (a->shape.size() != 2) fail("{}: cannot count MACs: A is not 2-D", n->describe());
      k = trans_a ? a->shape[0] : a->shape[1];
    } else {
      if (a->shape.empty()) fail("{}: cannot count MACs: A is a scalar", n->describe());
      k = a->shape.back();
    }
    total += shape_numel(y->shape) * k;
  }
  return total;
}

}  // namespace tessel::zoo
