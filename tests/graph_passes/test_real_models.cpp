// The graph pass pipeline on the real models: the reference interpreter's outputs with all passes
// equal those of the graph as imported, the rewritten graphs verify and round-trip through the
// text form, and the passes did what they are for (BN folded, hard-swish/layer-norm/SiLU fused,
// kernels grouped). Node counts before/after are printed (docs/graph_passes.md quotes them).
//
// Tolerance: |after - before| <= 1e-4 |before| + 1e-4 max|before| per output (fp32: the rewrites
// change rounding only - folded BN weights, reciprocals instead of divisions, fused kernels'
// evaluation order - and the error stays orders of magnitude below 1e-4 relative).
#include <gtest/gtest.h>

#include <iostream>
#include <set>

#include "compiler/driver/runner.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/ops/reference.h"
#include "passes/graph/graph_passes.h"
#include "tests/graph_passes/gp_util.h"

namespace tessel::testing {
namespace {

using namespace tessel::graph_passes;

struct ModelCase {
  std::string name;   // golden case directory under tests/data/cases
  std::string model;  // file under models/
  std::string input;
  Shape shape;
  std::map<std::string, int> ops_after;  // op -> count expected after all passes (reference)
};

std::map<std::string, int> op_counts(const Graph& g) {
  std::map<std::string, int> m;
  for (const auto& n : g.nodes()) ++m[n->op_type];
  return m;
}

struct Groups {
  int groups = 0, nodes = 0;
};
Groups fusion_groups(const Graph& g) {
  std::set<int64_t> ids;
  Groups r;
  for (const auto& n : g.nodes())
    if (n->attrs.has(kFusionGroupAttr)) {
      ids.insert(n->attrs.get_int(kFusionGroupAttr, n->name));
      ++r.nodes;
    }
  r.groups = static_cast<int>(ids.size());
  return r;
}

class PipelineOnRealModel : public ::testing::TestWithParam<ModelCase> {};

TEST_P(PipelineOnRealModel, ReferenceOutputsUnchanged) {
  const ModelCase& c = GetParam();
  const std::string path = std::string(TESSEL_MODELS_DIR) + "/" + c.model;
  const std::map<std::string, Shape> shapes = {{c.input, c.shape}};
  PipelineOptions none;
  none.enabled = false;
  auto imported = driver::load_model(path, shapes, none);
  auto all = driver::load_model(path, shapes);  // every op available (the reference)
  PipelineOptions npu;
  npu.available = driver::target_ops(driver::Target::npu);
  auto for_npu = driver::load_model(path, shapes, npu);

  const std::map<std::string, Tensor> inputs = {
      {c.input, frontend::load_tensor_pb(std::string(TESSEL_SOURCE_DIR) + "/tests/data/cases/" +
                                         c.name + "/test_data_set_0/input_0.pb")}};
  const auto want = ops::run_reference(*imported, inputs);
  const auto got = ops::run_reference(*all, inputs);
  const auto got_npu = ops::run_reference(*for_npu, inputs);
  const double err = max_scaled_error(got, want), err_npu = max_scaled_error(got_npu, want);
  EXPECT_LE(err, 1e-4);
  EXPECT_LE(err_npu, 1e-4);

  const Groups gr = fusion_groups(*all);
  std::cout << "  " << c.model << ": " << imported->nodes().size() << " nodes imported -> "
            << all->nodes().size() << " after all passes (" << for_npu->nodes().size()
            << " with the NPU's ops), " << gr.groups << " fusion groups over " << gr.nodes
            << " nodes; max scaled output error " << err << " (NPU ops " << err_npu << ")\n";
  EXPECT_LT(all->nodes().size(), imported->nodes().size());

  const auto ops = op_counts(*all);
  for (const auto& [op, n] : c.ops_after) {
    EXPECT_EQ(ops.count(op) ? ops.at(op) : 0, n) << op;
  }
  EXPECT_GT(gr.groups, 0);

  // The rewritten graph prints and parses back exactly.
  for (const Graph* g : {all.get(), for_npu.get()}) {
    const std::string text = graph_to_string(*g);
    auto parsed = parse_graph(text, c.model);
    verify_graph(*parsed);
    EXPECT_EQ(graph_to_string(*parsed), text);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, PipelineOnRealModel,
    ::testing::Values(
        // MobileNetV3: 35 BatchNormalizations fold into their convs; 18 exported hard-swishes.
        ModelCase{"ppocr_cls_b1",
                  "ch_ppocr_mobile_v2.0_cls_infer.onnx",
                  "x",
                  {1, 3, 48, 192},
                  {{"BatchNormalization", 0}, {"HardSwish", 18}, {"Clip", 0}, {"Div", 0}}},
        // Two decomposed layer norms.
        ModelCase{"hello_deepa",
                  "hello_deepa.onnx",
                  "onnx::Flatten_0",
                  {1, 25, 96},
                  {{"LayerNormalization", 2}, {"ReduceMean", 0}, {"Pow", 0}}},
        ModelCase{"ppocr_det_64x96",
                  "ch_PP-OCRv4_det_infer.onnx",
                  "x",
                  {1, 3, 64, 96},
                  {{"BatchNormalization", 0}, {"Clip", 0}}},
        // SVTR neck: layer norms and swish (x * sigmoid(x * 1)) in the transformer blocks.
        ModelCase{"ppocr_rec_48x320",
                  "ch_PP-OCRv4_rec_infer.onnx",
                  "x",
                  {1, 3, 48, 320},
                  {{"BatchNormalization", 0}, {"ReduceMean", 0}, {"Sigmoid", 0}}}),
    [](const ::testing::TestParamInfo<ModelCase>& info) { return info.param.name; });

}  // namespace
}  // namespace tessel::testing
