// Control flow in the Graph IR (If, Loop, Scan): subgraphs with captures in the text form, the
// verifier's scope rules, the reference interpreter's semantics (hand-computed values), import of
// the ONNX node-test models.
#include <gtest/gtest.h>

#include "compiler/frontend/onnx_import.h"
#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/reference.h"
#include "tests/frontend/test_util.h"

namespace tessel {
namespace {

using testing::expect_same_graph;

// y = If(c) { x + 1 } else { x - 1 };  a, s = Loop(3, true, x) { a + x, Slice(a + x, i, i + 1) }:
// the Loop body's slice depends on the iteration number, so it is typed `?` until instantiated.
const char* kControlFlow = R"(graph cf opset 17 (%x: f32[3], %c: bool[]) -> (%y, %a, %s) {
  %one: f32[] = const [1]
  %m: i64[] = const [3]
  %t: bool[] = const [true]
  %y: f32[3] = If(%c, %x, %one) {else_branch=graph else_b () captures (%x: f32[3], %one: f32[] known [1]) -> (%e) {
      %e: f32[3] = Sub(%x, %one)  # sub
    }, then_branch=graph then_b () captures (%x: f32[3], %one: f32[] known [1]) -> (%p) {
      %p: f32[3] = Add(%x, %one)  # add
    }}  # if
  %a: f32[3], %s: f32[3,1] = Loop(%m, %t, %x, %x) {body=graph body (%i: i64[], %cin: bool[], %acc: f32[3]) captures (%x: f32[3]) -> (%cout, %acc2, %sl) {
      %zero: i64[1] = const [0]
      %k1: i64[] = const [1]
      %cout: bool[] = Identity(%cin)  # keep
      %acc2: f32[3] = Add(%acc, %x)  # accumulate
      %i1: i64[] = Add(%i, %k1)  # next
      %st: i64[1] = Unsqueeze(%i, %zero)  # start
      %en: i64[1] = Unsqueeze(%i1, %zero)  # end
      %sl: ? = Slice(%acc2, %st, %en)  # pick
    }}  # loop
}
)";

// `text` with its first `from` replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

std::unique_ptr<Graph> parse_cf() {
  auto g = parse_graph(kControlFlow, "cf");
  ops::infer_graph(*g);
  verify_graph(*g);
  return g;
}

TEST(ControlFlow, TextFormRoundTripsNestedSubgraphsWithCaptures) {
  auto g = parse_cf();
  const std::string text = graph_to_string(*g);
  EXPECT_NE(text.find("captures (%x: f32[3], %one: f32[] known [1])"), std::string::npos) << text;
  EXPECT_NE(text.find("%sl: ? = Slice(%acc2, %st, %en)  # pick"), std::string::npos) << text;
  EXPECT_NE(text.find("%a: f32[3], %s: f32[3,1] = Loop(%m, %t, %x, %x)"), std::string::npos)
      << text;
  auto parsed = parse_graph(text, "again");
  expect_same_graph(*g, *parsed);
  EXPECT_EQ(graph_to_string(*parsed), text);
  EXPECT_EQ(formal_input_count(*g->find_node("if")), 1u);
  EXPECT_EQ(formal_input_count(*g->find_node("loop")), 3u);
}

TEST(ControlFlow, ReferenceRunsBranchesAndIterations) {
  auto g = parse_cf();
  for (bool c : {true, false}) {
    Tensor cond(DType::boolean, {});
    cond.set_from_double(0, c ? 1 : 0);
    auto out = ops::run_reference(*g, {{"x", Tensor::from_floats({3}, {1, 2, 3})}, {"c", cond}});
    // then: x + 1; else: x - 1
    EXPECT_EQ(out.at("y").to_float_vector(),
              c ? std::vector<float>({2, 3, 4}) : std::vector<float>({0, 1, 2}));
    // three iterations of acc += x from acc = x: 4x
    EXPECT_EQ(out.at("a").to_float_vector(), std::vector<float>({4, 8, 12}));
    // iteration i slices element i of (i + 2) x: 2*1, 3*2, 4*3
    EXPECT_EQ(out.at("s").shape(), (Shape{3, 1}));
    EXPECT_EQ(out.at("s").to_float_vector(), std::vector<float>({2, 6, 12}));
  }
}

TEST(ControlFlow, VerifierChecksCaptureTypesAndScopes) {
  // The else branch's capture claims f32[2] for the f32[3] value it stands for.
  const std::string bad =
      replaced(kControlFlow, "captures (%x: f32[3], %one", "captures (%x: f32[2], %one");
  try {
    auto g = parse_graph(bad, "bad");
    verify_graph(*g);
    FAIL() << "expected a verifier error";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("capture %x is f32[2] but the enclosing value %x it stands "
                                   "for is f32[3]"),
        std::string::npos)
        << e.what();
  }
  // A subgraph cannot read an enclosing value it does not capture.
  const std::string unscoped =
      replaced(kControlFlow, "%p: f32[3] = Add(%x, %one)", "%p: f32[3] = Add(%x, %m)");
  try {
    parse_graph(unscoped, "unscoped");
    FAIL() << "expected a parse error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("use of undefined value %m"), std::string::npos)
        << e.what();
  }
}

TEST(ControlFlow, IfOnAnUnknownConditionNeedsEqualBranchTypes) {
  const std::string text =
      replaced(kControlFlow, "%e: f32[3] = Sub(%x, %one)", "%e: f32[] = Sub(%one, %one)");
  auto g = parse_graph(text, "mixed");
  try {
    ops::infer_graph(*g);
    FAIL() << "expected Unsupported";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("output 0 is f32[3] in then_branch and f32[] in "
                                         "else_branch, and the condition is not known"),
              std::string::npos)
        << e.what();
  }
}

// The ONNX node tests: import (subgraphs with captures, Scan-8 rewritten) and reference values.
TEST(ControlFlow, ImportsOnnxNodeTestsAndMatchesTheirOutputs) {
  const std::string d = "/usr/share/libonnx-testdata/data/node/";
  {
    auto g = frontend::import_onnx(d + "test_scan9_sum/model.onnx");
    ASSERT_EQ(g->nodes().size(), 1u);
    EXPECT_EQ(g->nodes()[0]->op_type, "Scan");
    // initial [0, 0] + rows [1,2], [3,4], [5,6]: running sums
    auto out = ops::run_reference(*g, {{"initial", Tensor::from_floats({2}, {0, 0})},
                                       {"x", Tensor::from_floats({3, 2}, {1, 2, 3, 4, 5, 6})}});
    EXPECT_EQ(out.at("y").to_float_vector(), std::vector<float>({9, 12}));
    EXPECT_EQ(out.at("z").to_float_vector(), std::vector<float>({1, 2, 4, 6, 9, 12}));
  }
  {
    // Scan-8 (batch axis): one Scan-9 per batch element.
    auto g = frontend::import_onnx(d + "test_scan_sum/model.onnx");
    auto out = ops::run_reference(*g, {{"initial", Tensor::from_floats({1, 2}, {0, 0})},
                                       {"x", Tensor::from_floats({1, 3, 2}, {1, 2, 3, 4, 5, 6})}});
    EXPECT_EQ(out.at("z").shape(), (Shape{1, 3, 2}));
    EXPECT_EQ(out.at("z").to_float_vector(), std::vector<float>({1, 2, 4, 6, 9, 12}));
  }
  {
    // A Loop with scan outputs whose trip count comes from runtime inputs: their length is not
    // static, so the import says which inputs to bind (conform binds them from the test data).
    try {
      frontend::import_onnx(d + "test_range_float_type_positive_delta_expanded/model.onnx");
      FAIL() << "expected Unsupported";
    } catch (const Unsupported& e) {
      EXPECT_NE(std::string(e.what()).find("its trip count is not known at compile time"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace tessel
