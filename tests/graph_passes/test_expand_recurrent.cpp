// expand_recurrent: LSTM, GRU and RNN nodes unrolled into MatMul/Add/Slice/activations/Concat
// give the reference kernel's values (compiler/ops/rnn.cpp) on random data, for every direction,
// both layouts, peepholes, initial states, biases, clip, input_forget, linear_before_reset,
// activations with alpha/beta and shorter sequence_lens (constant and run time); the CPU target
// then runs the original graph (driver::run_model expands it) to the same values.
#include <gtest/gtest.h>

#include <cmath>

#include "compiler/driver/compare.h"
#include "compiler/driver/runner.h"
#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/reference.h"
#include "npu_model/hw_config.h"
#include "passes/graph/graph_passes.h"
#include "tests/test_graph_builder.h"

namespace tessel {
namespace {

using testing::random_tensor;

struct Rnn {
  std::string op = "LSTM";
  std::string direction = "forward";
  int64_t layout = 0, seq = 4, batch = 3, input = 5, hidden = 6;
  bool bias = false, initial = false, peepholes = false, const_weights = false;
  bool runtime_lens = false;
  std::vector<int32_t> lens;  // empty: no sequence_lens
  Attributes extra;
  int outputs = 3;
};

int gates(const std::string& op) { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }

/// A graph of one recurrent node; X (and W, R unless const_weights) are graph inputs with data in
/// `feeds`.
std::unique_ptr<Graph> make_graph(const Rnn& r, std::map<std::string, Tensor>& feeds) {
  auto g = std::make_unique<Graph>();
  g->name = "rnn";
  g->opset = 17;
  const int64_t D = r.direction == "bidirectional" ? 2 : 1, G = gates(r.op), H = r.hidden;
  uint32_t seed = 11;
  auto input = [&](const std::string& name, const Shape& s, float lo = -1, float hi = 1) {
    Value* v = g->add_value(name, DType::f32, s);
    g->inputs.push_back(v);
    feeds[name] = random_tensor(s, seed++, lo, hi);
    return v;
  };
  auto weight = [&](const std::string& name, const Shape& s) {
    if (!r.const_weights) return input(name, s, -0.6f, 0.6f);
    return g->add_constant(name, random_tensor(s, seed++, -0.6f, 0.6f));
  };
  const Shape xs = r.layout ? Shape{r.batch, r.seq, r.input} : Shape{r.seq, r.batch, r.input};
  const Shape ss = r.layout ? Shape{r.batch, D, H} : Shape{D, r.batch, H};
  std::vector<Value*> ins = {input("X", xs, -2, 2), weight("W", {D, G * H, r.input}),
                             weight("R", {D, G * H, H})};
  ins.push_back(r.bias ? weight("B", {D, 2 * G * H}) : nullptr);
  if (r.lens.empty()) {
    ins.push_back(nullptr);
  } else {
    std::vector<int64_t> l(r.lens.begin(), r.lens.end());
    Tensor t = Tensor::from_int64s({r.batch}, l).cast(DType::i32);
    if (r.runtime_lens) {
      Value* v = g->add_value("sequence_lens", DType::i32, {r.batch});
      g->inputs.push_back(v);
      feeds["sequence_lens"] = t;
      ins.push_back(v);
    } else {
      ins.push_back(g->add_constant("sequence_lens", t));
    }
  }
  if (r.initial) {
    ins.push_back(input("initial_h", ss));
    if (r.op == "LSTM") ins.push_back(input("initial_c", ss));
  }
  if (r.peepholes) {
    while (ins.size() < 7) ins.push_back(nullptr);
    ins.push_back(weight("P", {D, 3 * H}));
  }
  Attributes a = r.extra;
  a.set("hidden_size", H);
  a.set("direction", r.direction);
  a.set("layout", r.layout);
  std::vector<Value*> outs;
  const char* names[] = {"Y", "Y_h", "Y_c"};
  for (int k = 0; k < r.outputs; ++k) {
    outs.push_back(g->add_value(names[k], DType::undefined, {}));
    g->outputs.push_back(outs.back());
  }
  g->add_node(r.op, "rnn", ins, outs, a);
  ops::infer_graph(*g);
  verify_graph(*g);
  return g;
}

void expect_close(const std::map<std::string, Tensor>& got,
                  const std::map<std::string, Tensor>& want, double tol, const std::string& what) {
  for (const auto& [name, t] : want) {
    ASSERT_TRUE(got.count(name)) << what << " " << name;
    ASSERT_EQ(got.at(name).shape(), t.shape()) << what << " " << name;
    const auto a = got.at(name).to_float_vector(), e = t.to_float_vector();
    double max_err = 0;
    for (size_t i = 0; i < a.size(); ++i)
      max_err = std::max(max_err, double(std::abs(a[i] - e[i])));
    EXPECT_LE(max_err, tol) << what << " " << name;
  }
}

/// Expands `r`'s graph and checks: no recurrent node left, every node single-output, the
/// reference values unchanged; then the CPU runs the original graph (when `cpu`).
void check(const Rnn& r, bool cpu = true) {
  std::map<std::string, Tensor> feeds;
  auto g = make_graph(r, feeds);
  const auto want = ops::run_reference(*g, feeds);
  // The outputs are not trivially zero (every test would pass on an empty expansion otherwise).
  for (const auto& [name, t] : want) {
    double mx = 0;
    for (float v : t.to_float_vector()) mx = std::max(mx, double(std::abs(v)));
    EXPECT_GT(mx, 0.05) << name;
  }
  auto e = clone_graph(*g);
  ASSERT_TRUE(graph_passes::needs_expand_recurrent(*e));
  EXPECT_TRUE(graph_passes::expand_recurrent(*e));
  verify_graph(*e);
  EXPECT_FALSE(graph_passes::needs_expand_recurrent(*e));
  size_t matmuls = 0;
  for (const auto& n : e->nodes()) {
    EXPECT_EQ(n->outputs.size(), 1u) << n->describe();
    matmuls += n->op_type == "MatMul";
  }
  EXPECT_GE(matmuls, 1u);
  expect_close(ops::run_reference(*e, feeds), want, 1e-5, "expanded (ref)");
  if (cpu)
    expect_close(driver::run_model(*g, driver::Target::cpu, nullptr, feeds).outputs, want, 1e-4,
                 "cpu");
}

TEST(ExpandRecurrent, LstmBidirectionalWithPeepholesInitialStatesBiasAndClip) {
  Rnn r;
  r.direction = "bidirectional";
  r.bias = r.initial = r.peepholes = true;
  r.extra.set("clip", 1.5f);
  check(r);
}

TEST(ExpandRecurrent, LstmShorterSequenceLensFreezeTheStateAndZeroY) {
  Rnn r;
  r.direction = "bidirectional";
  r.bias = r.initial = true;
  r.lens = {4, 2, 1};
  check(r);
  r.const_weights = true;  // weight slices and transposes folded to constants
  r.layout = 1;
  r.extra.set("input_forget", int64_t{1});
  check(r);
}

TEST(ExpandRecurrent, LstmRuntimeSequenceLensOnTheReference) {
  // The masks come from Cast(sequence_lens) at run time; the CPU takes no i32 input yet.
  Rnn r;
  r.direction = "reverse";
  r.lens = {3, 4, 1};
  r.runtime_lens = true;
  check(r, false);
}

TEST(ExpandRecurrent, LstmLayout1CustomActivations) {
  Rnn r;
  r.layout = 1;
  r.peepholes = true;
  r.extra.set("activations", std::vector<std::string>{"HardSigmoid", "LeakyRelu", "Softsign"});
  r.extra.set("activation_alpha", std::vector<float>{0.3f, 0.2f});
  r.extra.set("activation_beta", std::vector<float>{0.45f});
  check(r);
}

TEST(ExpandRecurrent, GruBothResetFormsDirectionsAndLayouts) {
  for (int64_t lbr : {0, 1})
    for (const char* dir : {"forward", "reverse", "bidirectional"}) {
      SCOPED_TRACE(std::string(dir) + " linear_before_reset=" + std::to_string(lbr));
      Rnn r;
      r.op = "GRU";
      r.outputs = 2;
      r.direction = dir;
      r.bias = r.initial = true;
      r.layout = lbr;
      r.extra.set("linear_before_reset", lbr);
      if (lbr) r.lens = {2, 4, 3};
      check(r);
    }
}

TEST(ExpandRecurrent, RnnAffineScaledTanhElu) {
  Rnn r;
  r.op = "RNN";
  r.outputs = 2;
  r.direction = "bidirectional";
  r.bias = true;
  r.extra.set("activations", std::vector<std::string>{"ScaledTanh", "Affine"});
  r.extra.set("activation_alpha", std::vector<float>{0.8f, 0.5f});
  r.extra.set("activation_beta", std::vector<float>{1.2f, 0.1f});
  check(r);
  r.extra = {};
  r.extra.set("activations", std::vector<std::string>{"Elu", "Relu"});
  r.extra.set("activation_alpha", std::vector<float>{0.7f});
  check(r);
}

TEST(ExpandRecurrent, LstmOnTheNpuWithinItsDerivedTolerance) {
  // The gate matmuls on the cube (fp16), the rest on the vector unit; the tolerance is derived on
  // the expanded graph (driver::npu_tolerances on compiled_form).
  Rnn r;
  r.direction = "bidirectional";
  r.bias = r.initial = r.peepholes = r.const_weights = true;
  r.lens = {4, 3, 2};
  std::map<std::string, Tensor> feeds;
  auto g = make_graph(r, feeds);
  const npu::HwConfig hw =
      npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml");
  std::map<std::string, Tensor> want;
  const auto tol = driver::npu_tolerances(hw, *g, feeds, &want);
  const auto got = driver::run_model(*g, driver::Target::npu, &hw, feeds).outputs;
  for (const auto& [name, e] : want) {
    const auto c = driver::compare_output(name, got.at(name), e, tol.at(name));
    EXPECT_TRUE(c.pass) << name << ": max abs error " << c.max_abs_error << ", atol "
                        << tol.at(name).atol;
    EXPECT_LT(tol.at(name).atol, 0.05) << name;  // a bound that says something
    EXPECT_GT(c.max_abs_error, 0) << name;       // fp16 did round: the NPU really ran it
  }
}

TEST(ExpandRecurrent, OnlyYhUsedBuildsNoY) {
  Rnn r;
  r.op = "GRU";
  std::map<std::string, Tensor> feeds;
  r.outputs = 2;
  auto g = make_graph(r, feeds);
  g->outputs.erase(g->outputs.begin());  // Y unused
  const auto want = ops::run_reference(*g, feeds);
  graph_passes::expand_recurrent(*g);
  verify_graph(*g);
  size_t concats = 0;
  for (const auto& n : g->nodes()) concats += n->op_type == "Concat";
  EXPECT_EQ(concats, 0u);  // Y would be a Concat over the steps
  expect_close(ops::run_reference(*g, feeds), want, 1e-5, "expanded");
}

}  // namespace
}  // namespace tessel
