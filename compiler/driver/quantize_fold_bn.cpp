// Pre-quantisation folding for `tessel quantize`: BatchNormalization into the Conv before it, on
// the ONNX model itself (see quantize.h, fold_conv_batchnorm).
//
// BatchNormalization in inference is y = (x - mean) / sqrt(var + eps) * scale + B per channel
// (https://onnx.ai/onnx/operators/onnx__BatchNormalization.html), an affine map a*x + (B - a*mean)
// with a = scale / sqrt(var + eps). After x = Conv(input, W, b) it folds into the weights and
// bias: W'[m] = a[m] * W[m], b'[m] = a[m] * (b[m] - mean[m]) + B[m] (b = 0 without a bias). This
// is what ONNX Runtime's quantisation pre-processing (quant_pre_process -> its ConvBNFusion) does
// before quantize_static, so that Q/DQ land on the folded Conv's output, not between Conv and BN.
//
//   before: %c = Conv(%x, %w[, %b]) {...}
//           %y = BatchNormalization(%c, %scale, %B, %mean, %var) {epsilon}
//   after:  %y = Conv(%x, %w_bnfold, %w_bnfold_bias) {...}
//
// Runs before: the calibration and the Q/DQ insertion of quantize_static (on the float model, any
// opset: BatchNormalization's inference semantics did not change, opset <= 6 `is_test` and
// opset < 9 `spatial` = 1 are the same map; `spatial` = 0 is not folded).
// Guarantees: every Conv -> BatchNormalization pair where the Conv output is read only by the BN
// and is not a graph output, W, b and the BN parameters are float32 initializers of the right
// sizes (W read by that Conv only), the BN has one output and training_mode 0, becomes one Conv
// that writes the BN's output tensor (same name, shape). The arithmetic is in double, rounded to
// float32 once per element. Everything else is left as it was.
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <set>

#include "compiler/driver/onnx_proto_attrs.h"
#include "compiler/driver/quantize.h"
#include "compiler/frontend/onnx_import.h"

namespace tessel::driver {

namespace {

const onnx::TensorProto* find_init(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer())
    if (t.name() == name) return &t;
  return nullptr;
}

onnx::TensorProto float_tensor(const std::string& name, const Shape& dims,
                               const std::vector<float>& v) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
  return t;
}

std::string unique_name(const std::set<std::string>& used, const std::string& base) {
  std::string n = base;
  for (int k = 1; used.count(n); ++k) n = base + "_" + std::to_string(k);
  return n;
}

}  // namespace

int fold_conv_batchnorm(onnx::ModelProto& model, const std::string& model_name) {
  onnx::GraphProto& g = *model.mutable_graph();
  std::map<std::string, int> consumers;
  std::map<std::string, int> reader;  // tensor -> index of its (last) reading node
  std::set<std::string> used, graph_outputs;
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& in : g.node(i).input()) {
      ++consumers[in];
      reader[in] = i;
    }
  for (const auto& n : g.node())
    for (const auto& o : n.output()) used.insert(o);
  for (const auto& t : g.initializer()) used.insert(t.name());
  for (const auto& i : g.input()) used.insert(i.name());
  for (const auto& o : g.output()) graph_outputs.insert(o.name());

  auto f32 = [&](const std::string& name) -> std::optional<Tensor> {
    const auto* p = find_init(g, name);
    if (!p || p->data_type() != onnx::TensorProto::FLOAT) return std::nullopt;
    return frontend::parse_tensor_pb(p->SerializeAsString(), model_name + " initializer " + name);
  };

  std::set<int> drop;                // BN nodes folded away
  std::set<std::string> drop_inits;  // replaced weights and biases
  std::vector<onnx::TensorProto> new_inits;
  int folded = 0;
  for (int ci = 0; ci < g.node_size(); ++ci) {
    onnx::NodeProto& conv = *g.mutable_node(ci);
    if (conv.op_type() != "Conv" || conv.output_size() != 1 || conv.input_size() < 2) continue;
    const std::string& c = conv.output(0);
    if (consumers[c] != 1 || graph_outputs.count(c)) continue;
    const int bi = reader[c];
    const onnx::NodeProto& bn = g.node(bi);
    if (bn.op_type() != "BatchNormalization" || bn.input_size() != 5 || bn.input(0) != c ||
        bn.output_size() != 1 || proto_attr_int(bn, "training_mode", 0) != 0 ||
        proto_attr_int(bn, "spatial", 1) != 1)
      continue;
    const std::string& wn = conv.input(1);
    if (consumers[wn] != 1) continue;
    const auto w = f32(wn);
    if (!w || w->rank() < 3) continue;
    const int64_t m = w->shape()[0];
    std::optional<Tensor> b;
    if (conv.input_size() > 2 && !conv.input(2).empty()) {
      if (consumers[conv.input(2)] != 1) continue;
      b = f32(conv.input(2));
      if (!b || b->numel() != m) continue;
    }
    const auto scale = f32(bn.input(1)), bias = f32(bn.input(2)), mean = f32(bn.input(3)),
               var = f32(bn.input(4));
    if (!scale || !bias || !mean || !var) continue;
    if (scale->numel() != m || bias->numel() != m || mean->numel() != m || var->numel() != m)
      continue;
    const double eps = proto_attr_float(bn, "epsilon", 1e-5f);
    const int64_t per = w->numel() / m;
    std::vector<float> w2(static_cast<size_t>(w->numel())), b2(static_cast<size_t>(m));
    const float* wd = w->data<float>();
    for (int64_t k = 0; k < m; ++k) {
      const double a =
          double(scale->data<float>()[k]) / std::sqrt(double(var->data<float>()[k]) + eps);
      for (int64_t i = 0; i < per; ++i) w2[k * per + i] = static_cast<float>(a * wd[k * per + i]);
      const double bk = b ? double(b->data<float>()[k]) : 0.0;
      b2[k] = static_cast<float>(a * (bk - double(mean->data<float>()[k])) +
                                 double(bias->data<float>()[k]));
    }
    const std::string nw = unique_name(used, wn + "_bnfold");
    used.insert(nw);
    const std::string nb = unique_name(used, wn + "_bnfold_bias");
    used.insert(nb);
    new_inits.push_back(float_tensor(nw, w->shape(), w2));
    new_inits.push_back(float_tensor(nb, {m}, b2));
    drop_inits.insert(wn);
    if (b) drop_inits.insert(conv.input(2));
    conv.set_input(1, nw);
    if (conv.input_size() > 2)
      conv.set_input(2, nb);
    else
      conv.add_input(nb);
    conv.set_output(0, bn.output(0));
    drop.insert(bi);
    ++folded;
  }
  if (!folded) return 0;
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (int i = 0; i < g.node_size(); ++i)
    if (!drop.count(i)) *nodes.Add() = g.node(i);
  g.mutable_node()->Swap(&nodes);
  // BN parameters nothing reads any more go too, as do the replaced weights.
  std::set<std::string> read;
  for (const auto& n : g.node())
    for (const auto& in : n.input()) read.insert(in);
  std::set<std::string> initializer_before;
  for (const auto& t : g.initializer()) initializer_before.insert(t.name());
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (const auto& t : g.initializer())
    if (!drop_inits.count(t.name()) && read.count(t.name())) *kept.Add() = t;
  for (auto& t : new_inits) *kept.Add() = std::move(t);
  g.mutable_initializer()->Swap(&kept);
  // IR < 4 lists initializers as graph inputs too: those dropped above go from the inputs.
  std::set<std::string> kept_inits;
  for (const auto& t : g.initializer()) kept_inits.insert(t.name());
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> inputs;
  for (const auto& i : g.input())
    if (!initializer_before.count(i.name()) || kept_inits.count(i.name())) *inputs.Add() = i;
  g.mutable_input()->Swap(&inputs);
  // The Conv outputs that were renamed away: their value_info goes.
  google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> vi;
  std::set<std::string> produced;
  for (const auto& n : g.node())
    for (const auto& o : n.output()) produced.insert(o);
  for (const auto& v : g.value_info())
    if (produced.count(v.name())) *vi.Add() = v;
  g.mutable_value_info()->Swap(&vi);
  return folded;
}

}  // namespace tessel::driver
