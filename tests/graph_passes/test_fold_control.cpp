// fold_control: If with a known condition, Loop with a known trip count and Scan become
// straight-line graphs with the reference's values; unknown conditions are left alone.
#include <gtest/gtest.h>

#include "compiler/frontend/onnx_import.h"
#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/reference.h"
#include "passes/graph/graph_passes.h"
#include "tests/frontend/onnx_builder.h"
#include "tests/graph_passes/gp_util.h"

namespace tessel {
namespace {

// If(c) { x * 2 } else { x + 10 }, then a Scan summing the rows of m into a state s0 = y[0:2].
const char* kGraph = R"(graph g opset 17 (%x: f32[2], %m: f32[3,2]) -> (%y, %sum, %rows) {
  %c: bool[] = const [true]
  %two: f32[] = const [2]
  %ten: f32[] = const [10]
  %y: f32[2] = If(%c, %x, %two, %ten) {else_branch=graph e () captures (%x: f32[2], %two: f32[] known [2], %ten: f32[] known [10]) -> (%b) {
      %b: f32[2] = Add(%x, %ten)  # plus
    }, then_branch=graph t () captures (%x: f32[2], %two: f32[] known [2], %ten: f32[] known [10]) -> (%a) {
      %a: f32[2] = Mul(%x, %two)  # times
    }}  # if
  %sum: f32[2], %rows: f32[3,2] = Scan(%y, %m) {body=graph body (%s: f32[2], %r: f32[2]) -> (%s2, %o) {
      %s2: f32[2] = Add(%s, %r)  # acc
      %o: f32[2] = Identity(%s2)  # out
    }, num_scan_inputs=1, scan_input_directions=[1]}  # scan
}
)";

using testing::count_op;

TEST(FoldControl, FoldsKnownIfAndUnrollsScanWithTheSameValues) {
  auto g = parse_graph(kGraph, "g");
  ops::infer_graph(*g);
  verify_graph(*g);
  const std::map<std::string, Tensor> in = {{"x", Tensor::from_floats({2}, {1, 2})},
                                            {"m", Tensor::from_floats({3, 2}, {1, 2, 3, 4, 5, 6})}};
  const auto before = ops::run_reference(*g, in);
  // y = 2x = [2, 4]; rows scanned backwards: [7, 10], [10, 14], [11, 16], stored in scan order.
  EXPECT_EQ(before.at("y").to_float_vector(), std::vector<float>({2, 4}));
  EXPECT_EQ(before.at("sum").to_float_vector(), std::vector<float>({11, 16}));
  EXPECT_EQ(before.at("rows").to_float_vector(), std::vector<float>({7, 10, 10, 14, 11, 16}));

  EXPECT_TRUE(graph_passes::fold_control(*g));
  verify_graph(*g);
  EXPECT_EQ(count_op(*g, "If"), 0u);
  EXPECT_EQ(count_op(*g, "Scan"), 0u);
  EXPECT_EQ(count_op(*g, "Mul"), 1u);   // the branch taken only
  EXPECT_EQ(count_op(*g, "Add"), 3u);   // one body copy per row
  EXPECT_EQ(g->outputs[0]->name, "y");  // outputs keep their names
  const auto after = ops::run_reference(*g, in);
  for (const auto& [name, t] : before)
    EXPECT_EQ(after.at(name).to_float_vector(), t.to_float_vector()) << name;
  EXPECT_FALSE(graph_passes::fold_control(*g));
}

TEST(FoldControl, LeavesAnIfOnARuntimeConditionAlone) {
  const std::string text = R"(graph g opset 17 (%x: f32[2], %c: bool[]) -> (%y) {
  %y: f32[2] = If(%c, %x) {else_branch=graph e () captures (%x: f32[2]) -> (%b) {
      %b: f32[2] = Neg(%x)  # neg
    }, then_branch=graph t () captures (%x: f32[2]) -> (%x) {
    }}  # if
}
)";
  auto g = parse_graph(text, "g");
  ops::infer_graph(*g);
  EXPECT_FALSE(graph_passes::fold_control(*g));
  EXPECT_EQ(count_op(*g, "If"), 1u);
}

// y = If(sr == 16000) { x * 2 } else { x + 10 }: the branch on a sample-rate input that real audio
// models have. Bound with ImportOptions::input_values (--input-value sr=16000), the condition is
// known at import and fold_control leaves only the branch taken.
std::string sample_rate_model() {
  using namespace tessel::testing;
  auto m = make_model(13);
  add_input(m, "x", onnx::TensorProto::FLOAT, {int64_t{2}});
  add_input(m, "sr", onnx::TensorProto::INT64, {});
  add_initializer(m, int64_tensor("k", {}, {16000}));
  add_initializer(m, float_tensor("two", {}, {2}));
  add_initializer(m, float_tensor("ten", {}, {10}));
  add_node(m, "Equal", {"sr", "k"}, {"c"}, "is_16k");
  auto* n = add_node(m, "If", {"c"}, {"y"}, "branch");
  auto* t = new_attr(n, "then_branch", onnx::AttributeProto::GRAPH)->mutable_g();
  t->set_name("t");
  auto* mul = t->add_node();
  mul->set_op_type("Mul");
  mul->set_name("times");
  mul->add_input("x");
  mul->add_input("two");
  mul->add_output("a");
  t->add_output()->set_name("a");
  auto* e = new_attr(n, "else_branch", onnx::AttributeProto::GRAPH)->mutable_g();
  e->set_name("e");
  auto* add = e->add_node();
  add->set_op_type("Add");
  add->set_name("plus");
  add->add_input("x");
  add->add_input("ten");
  add->add_output("b");
  e->add_output()->set_name("b");
  add_output(m, "y");
  return serialize(m);
}

TEST(FoldControl, AnInputBoundToAValueSelectsTheBranch) {
  const std::string bytes = sample_rate_model();
  const std::map<std::string, Tensor> x = {{"x", Tensor::from_floats({2}, {1, 2})}};
  for (double sr : {16000.0, 8000.0}) {
    frontend::ImportOptions opts;
    opts.input_values["sr"] = {sr};
    auto g = frontend::import_onnx_bytes(bytes, "sr.onnx", opts);
    ASSERT_EQ(g->inputs.size(), 1u);  // sr is a constant now
    EXPECT_EQ(g->inputs[0]->name, "x");
    EXPECT_TRUE(graph_passes::fold_control(*g));
    EXPECT_EQ(count_op(*g, "If"), 0u);
    EXPECT_EQ(count_op(*g, "Mul"), sr == 16000.0 ? 1u : 0u);
    EXPECT_EQ(count_op(*g, "Add"), sr == 16000.0 ? 0u : 1u);
    EXPECT_EQ(ops::run_reference(*g, x).at("y").to_float_vector(),
              sr == 16000.0 ? std::vector<float>({2, 4}) : std::vector<float>({11, 12}));
  }
  // Unbound, the If stays and the reference decides at run time.
  auto g = frontend::import_onnx_bytes(bytes, "sr.onnx");
  EXPECT_FALSE(graph_passes::fold_control(*g));
  std::map<std::string, Tensor> in = x;
  in["sr"] = Tensor::from_int64s({}, {8000});
  EXPECT_EQ(ops::run_reference(*g, in).at("y").to_float_vector(), std::vector<float>({11, 12}));
}

TEST(FoldControl, BoundValuesAreCheckedAgainstTheInput) {
  const std::string bytes = sample_rate_model();
  auto error_of = [&](const std::string& name, std::vector<double> v) {
    frontend::ImportOptions opts;
    opts.input_values[name] = std::move(v);
    try {
      frontend::import_onnx_bytes(bytes, "sr.onnx", opts);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("rate", {16000}),
            "sr.onnx: a value is given for 'rate', which is not a runtime input of the model "
            "(runtime inputs: x, sr)");
  EXPECT_EQ(error_of("sr", {16000, 8000}),
            "sr.onnx: input 'sr' is i64[] (1 elements) but 2 values are given for it");
  EXPECT_EQ(error_of("sr", {16000.5}),
            "sr.onnx: input 'sr' is i64: the value 16000.5 given for it is not one (an integer in "
            "its range)");
}

// An exporter's dead branch whose shapes do not infer (silero_vad_v5: a Squeeze of a size-2 axis
// in the 8 kHz branch of a model given 16 kHz frames). With a known condition only the branch
// taken is inferred; with a run-time one the failing branch is deferred (the If takes the other
// branch's types) and only running it reports the error, as ONNX Runtime does. Before, the import
// failed with "cannot squeeze axis 0 of size 4".
TEST(FoldControl, ADeadBranchWhoseShapesDoNotInferIsDeferred) {
  const char* text = R"(graph g opset 17 (%x: f32[4], %c: bool[]) -> (%y, %w) {
  %k: bool[] = const [true]
  %y: ? = If(%k, %x) {else_branch=graph e () captures (%x: f32[4]) -> (%b) {
      %ax: i64[1] = const [0]
      %b: ? = Squeeze(%x, %ax)  # dead
    }, then_branch=graph t () captures (%x: f32[4]) -> (%a) {
      %a: f32[4] = Neg(%x)  # neg
    }}  # known
  %w: ? = If(%c, %x) {else_branch=graph e2 () captures (%x: f32[4]) -> (%b2) {
      %ax2: i64[1] = const [0]
      %b2: ? = Squeeze(%x, %ax2)  # fails_if_taken
    }, then_branch=graph t2 () captures (%x: f32[4]) -> (%a2) {
      %a2: f32[4] = Neg(%x)  # neg2
    }}  # unknown
}
)";
  auto g = parse_graph(text, "g");
  ops::infer_graph(*g);
  verify_graph(*g);
  EXPECT_EQ(shape_to_string(g->find_value("y")->shape), "[4]");
  EXPECT_EQ(shape_to_string(g->find_value("w")->shape), "[4]");
  Tensor c(DType::boolean, {});
  c.set_from_double(0, 1.0);
  const auto out =
      ops::run_reference(*g, {{"x", Tensor::from_floats({4}, {1, -2, 3, 0.5f})}, {"c", c}});
  EXPECT_EQ(out.at("y").to_float_vector(), std::vector<float>({-1, 2, -3, -0.5f}));
  EXPECT_EQ(out.at("w").to_float_vector(), std::vector<float>({-1, 2, -3, -0.5f}));
  c.set_from_double(0, 0.0);
  try {
    ops::run_reference(*g, {{"x", Tensor::from_floats({4}, {1, -2, 3, 0.5f})}, {"c", c}});
    FAIL() << "the failing branch ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot squeeze axis 0 of size 4"), std::string::npos)
        << e.what();
  }
  // The compiled targets compile both branches of `unknown`: refused, naming the If and branch.
  EXPECT_TRUE(graph_passes::fold_control(*g));  // `known`
  try {
    graph_passes::guard_branches(*g, [](Graph&) {});
    FAIL() << "a branch that does not type was compiled";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("If 'unknown': else_branch does not compile"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tessel
