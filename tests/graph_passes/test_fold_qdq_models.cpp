// fold_qdq on the committed int8 QDQ models (tests/data/models, written by `tessel quantize`): how
// many contractions fold, why the others do not, and the element-wise difference between the
// unfolded graph (the float path: DequantizeLinear -> float Conv -> QuantizeLinear, ONNX Runtime
// with graph optimisations off) and the folded one (integer accumulation, one fp32
// requantisation: ONNX Runtime with its QDQ transformer) on every int8 tensor both compute, on
// the golden case's input. docs/graph_passes.md quotes the printed figures.
//
// The two paths can differ by one quantisation step where the exact value x*w*sx*sw/sy lies
// within fp32 rounding of a rounding boundary (the float path rounds the float conv's sum, the
// product with sx*sw, and the division by sy; the integer path the single product
// acc * fp32(sx*sw/sy)); a step can then move later values too. The bound checked, at most 1%
// of the elements of the int8 tensors differ and none by more than 8 steps, is what the measured
// values leave ample room under; the golden outputs themselves are checked exactly equal to ORT's
// (tests/quantize and tessel check).
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "compiler/driver/runner.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/ops/reference.h"
#include "passes/graph/graph_passes.h"
#include "tests/graph_passes/gp_util.h"

namespace tessel::testing {
namespace {

using namespace tessel::graph_passes;

struct Int8Case {
  std::string name, model, input;
  Shape shape;
  int contractions, folded;  // Conv/MatMul/Gemm nodes, of which fold_qdq folds
};

class FoldQdqOnModel : public ::testing::TestWithParam<Int8Case> {};

TEST_P(FoldQdqOnModel, FoldsAndStaysWithinAStepOfTheFloatPath) {
  const Int8Case& c = GetParam();
  const std::string src = TESSEL_SOURCE_DIR;
  const std::string path = src + "/tests/data/models/" + c.model;
  const std::map<std::string, Shape> shapes = {{c.input, c.shape}};
  PipelineOptions none;  // the graphs as imported; fold_qdq alone on one of them
  none.enabled = false;
  auto unfolded = driver::load_model(path, shapes, none);
  auto folded = driver::load_model(path, shapes, none);

  const auto decisions = explain_fold_qdq(*folded);
  int n_folded = 0;
  std::map<std::string, int> reasons;
  for (const auto& d : decisions) {
    n_folded += !d.folded.empty();
    if (d.folded.empty()) ++reasons[d.reason];
  }
  std::cout << "  " << c.model << ": " << n_folded << " of " << decisions.size()
            << " Conv/MatMul/Gemm fold\n";
  for (const auto& [why, n] : reasons) std::cout << "    not folded (" << n << "): " << why << "\n";
  EXPECT_EQ(static_cast<int>(decisions.size()), c.contractions);
  EXPECT_EQ(n_folded, c.folded);
  EXPECT_EQ(fold_qdq(*folded), c.folded > 0);
  verify_graph(*folded);
  size_t qlinear = 0;
  for (const auto& n : folded->nodes()) qlinear += n->op_type.rfind("QLinear", 0) == 0;
  EXPECT_EQ(static_cast<int>(qlinear), c.folded);

  // Every int8 value both graphs compute, by name (a folded node's output keeps the Q's name),
  // as graph outputs of copies of the graphs.
  std::vector<std::string> names;
  for (const auto& n : folded->nodes())
    for (const Value* v : n->outputs)
      if ((v->dtype == DType::i8 || v->dtype == DType::u8) && unfolded->find_value(v->name) &&
          unfolded->find_value(v->name)->producer)
        names.push_back(v->name);
  ASSERT_FALSE(names.empty());
  for (Graph* g : {unfolded.get(), folded.get()})
    for (const auto& nm : names) g->outputs.push_back(g->find_value(nm));
  const std::map<std::string, Tensor> inputs = {
      {c.input, frontend::load_tensor_pb(src + "/tests/data/cases/" + c.name +
                                         "/test_data_set_0/input_0.pb")}};
  const auto a = ops::run_reference(*unfolded, inputs);
  const auto b = ops::run_reference(*folded, inputs);
  int64_t total = 0, differ = 0, max_steps = 0, tensors_differ = 0;
  for (const auto& nm : names) {
    const Tensor &ta = a.at(nm), &tb = b.at(nm);
    ASSERT_EQ(ta.shape(), tb.shape()) << nm;
    int64_t d = 0;
    for (int64_t i = 0; i < ta.numel(); ++i) {
      const int64_t s = std::llabs(static_cast<int64_t>(ta.get_as_double(i)) -
                                   static_cast<int64_t>(tb.get_as_double(i)));
      d += s != 0;
      max_steps = std::max(max_steps, s);
    }
    total += ta.numel();
    differ += d;
    tensors_differ += d != 0;
  }
  // The model's float outputs.
  double out_diff = 0;
  for (const Value* v : unfolded->outputs)
    if (v->dtype == DType::f32) {
      const auto fa = a.at(v->name).to_float_vector(), fb = b.at(v->name).to_float_vector();
      for (size_t i = 0; i < fa.size(); ++i)
        out_diff = std::max(out_diff, double(std::fabs(fa[i] - fb[i])));
    }
  std::cout << "    int8 tensors compared: " << names.size() << " (" << total << " elements); "
            << differ << " elements differ (" << tensors_differ << " tensors), by at most "
            << max_steps << " steps; float outputs differ by at most " << out_diff << "\n";
  EXPECT_LE(differ * 100, total);
  EXPECT_LE(max_steps, 8);
}

INSTANTIATE_TEST_SUITE_P(
    Int8Models, FoldQdqOnModel,
    ::testing::Values(
        Int8Case{"ppocr_cls_int8_b1",
                 "ch_ppocr_mobile_v2.0_cls_infer_int8.onnx",
                 "x",
                 {1, 3, 48, 192},
                 54,
                 54},
        Int8Case{
            "hello_deepa_int8", "hello_deepa_int8.onnx", "onnx::Flatten_0", {1, 25, 96}, 3, 0}),
    [](const ::testing::TestParamInfo<Int8Case>& info) { return info.param.name; });

}  // namespace
}  // namespace tessel::testing
