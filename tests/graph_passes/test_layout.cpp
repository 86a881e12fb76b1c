// Before/after tests of the layout pass (passes/graph/layout_nc1hwc0.cpp, then
// cancel_transdata.cpp) on small graphs, and the storage format in the Graph IR text form and the
// verifier.
#include <gtest/gtest.h>

#include "compiler/ops/reference.h"
#include "passes/graph/graph_passes.h"
#include "tests/graph_passes/gp_util.h"

namespace tessel::testing {
namespace {

using namespace tessel::graph_passes;

/// Names of the values stored NC1HWC0, in value order.
std::vector<std::string> nc1hwc0_values(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& v : g.values())
    if (v->format == StorageFormat::nc1hwc0) out.push_back(v->name);
  return out;
}

/// Number of TransData nodes.
int transdata_count(const Graph& g) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node->op_type == "TransData";
  return n;
}

/// Runs fuse_kernels, layout_nc1hwc0 and cancel_transdata on `text`, checks the reference outputs
/// are unchanged (formats do not change logical values) and returns the graph.
std::unique_ptr<Graph> layout(const std::string& text) {
  auto g = parse_ok(text);
  fuse_kernels(*g);
  layout_nc1hwc0(*g);
  verify_graph(*g);
  cancel_transdata(*g);
  verify_graph(*g);
  EXPECT_EQ(transdata_count(*g), 0);
  auto before = parse_ok(text);
  const auto inputs = random_inputs(*before);
  EXPECT_EQ(max_scaled_error(ops::run_reference(*g, inputs), ops::run_reference(*before, inputs)),
            0.0);
  return g;
}

// A residual block: c1 = Relu(Conv(x)), c2 = Relu(Conv(c1) + x'), where x' = c0 is the result of a
// first conv. c0 is read by conv c1 (as X) and by c2's fused epilogue Add (same shape): NC1HWC0.
// c1r is read only by conv c2: NC1HWC0. y is the graph output: plain. The first conv reads the
// graph input x: plain (inputs are never converted).
constexpr const char* kResidual = R"(graph t opset 17 (%x: f32[1,16,6,6]) -> (%y) {
    %w0: f32[32,16,3,3] = const dense
    %w1: f32[32,32,3,3] = const dense
    %w2: f32[32,32,1,1] = const dense
    %b1: f32[32] = const dense
    %c0: f32[1,32,6,6] = Conv(%x, %w0) {pads=[1, 1, 1, 1]}
    %c1: f32[1,32,6,6] = Conv(%c0, %w1, %b1) {pads=[1, 1, 1, 1]}
    %c1r: f32[1,32,6,6] = Relu(%c1)
    %c2: f32[1,32,6,6] = Conv(%c1r, %w2)
    %s: f32[1,32,6,6] = Add(%c2, %c0)
    %y: f32[1,32,6,6] = Relu(%s)
  })";

TEST(LayoutNc1hwc0, InsertsConversionsAroundEveryConvKernel) {
  auto g = parse_ok(kResidual);
  fuse_kernels(*g);
  EXPECT_TRUE(layout_nc1hwc0(*g));
  verify_graph(*g);
  // Kernels: {c0}, {c1, c1r}, {c2, s, y}. To NC1HWC0: x (c0's X), c0_nchw (c1's X and the
  // residual of {c2, s, y}: one conversion), c1r_nchw (c2's X) = 3. To NCHW: c0, c1r = 2 (y is
  // the graph output and stays plain).
  std::vector<std::string> to;
  for (const auto& n : g->nodes())
    if (n->op_type == "TransData")
      to.push_back(n->inputs[0]->name + "->" + n->attrs.get_string_or("dst_format", "", n->name));
  EXPECT_EQ(to, (std::vector<std::string>{"x->NC1HWC0", "c0->NCHW", "c0_nchw->NC1HWC0", "c1r->NCHW",
                                          "c1r_nchw->NC1HWC0"}));
  EXPECT_EQ(nc1hwc0_values(*g), (std::vector<std::string>{"c0", "c1r", "x_nc1hwc0",
                                                          "c0_nchw_nc1hwc0", "c1r_nchw_nc1hwc0"}));
  // The reference interpreter copies through TransData: outputs unchanged.
  auto before = parse_ok(kResidual);
  const auto inputs = random_inputs(*before);
  EXPECT_EQ(max_scaled_error(ops::run_reference(*g, inputs), ops::run_reference(*before, inputs)),
            0.0);
  // Step 2: the two inverse pairs cancel; x's conversion does not pay (x is read plain).
  EXPECT_TRUE(cancel_transdata(*g));
  verify_graph(*g);
  EXPECT_EQ(transdata_count(*g), 0);
  EXPECT_EQ(nc1hwc0_values(*g), (std::vector<std::string>{"c0", "c1r"}));
  EXPECT_FALSE(cancel_transdata(*g));
}

TEST(LayoutNc1hwc0, ResidualBlockBetweenConvKernels) {
  auto g = layout(kResidual);
  EXPECT_EQ(nc1hwc0_values(*g), (std::vector<std::string>{"c0", "c1r"}));
  // The text form carries the format and parses back to the same graph.
  const std::string text = graph_to_string(*g);
  EXPECT_NE(text.find("%c0: f32[1,32,6,6] format NC1HWC0 = Conv("), std::string::npos) << text;
  EXPECT_EQ(graph_to_string(*parse_ok(text)), text);
}

TEST(LayoutNc1hwc0, OtherReadersKeepAValuePlain) {
  // c0 is also read by a MaxPool (a vector kernel): plain. c1 by a grouped conv: plain. The
  // depthwise conv's own result d is read by a normal conv, but a grouped conv cannot write it.
  auto g = layout(R"(graph t opset 17 (%x: f32[1,16,8,8]) -> (%y, %p) {
    %w0: f32[16,16,1,1] = const dense
    %wd: f32[16,1,3,3] = const dense
    %w2: f32[16,16,1,1] = const dense
    %c0: f32[1,16,8,8] = Conv(%x, %w0)
    %p: f32[1,16,4,4] = MaxPool(%c0) {kernel_shape=[2, 2], strides=[2, 2]}
    %c1: f32[1,16,8,8] = Conv(%c0, %w0)
    %d: f32[1,16,8,8] = Conv(%c1, %wd) {group=16, pads=[1, 1, 1, 1]}
    %y: f32[1,16,8,8] = Conv(%d, %w2)
  })");
  EXPECT_TRUE(nc1hwc0_values(*g).empty());
}

TEST(LayoutNc1hwc0, ChannelsNotAMultipleOfC0AndBroadcastOperandsStayPlain) {
  // a has 24 channels (not a multiple of 16): plain. b (32 channels) is read by conv c and by a
  // GlobalAveragePool (a vector kernel): plain. c's kernel {c, m, y} ends in the graph output.
  auto g = layout(R"(graph t opset 17 (%x: f32[1,16,4,4]) -> (%y) {
    %wa: f32[24,16,1,1] = const dense
    %wb: f32[32,24,1,1] = const dense
    %wc: f32[32,32,1,1] = const dense
    %a: f32[1,24,4,4] = Conv(%x, %wa)
    %b: f32[1,32,4,4] = Conv(%a, %wb)
    %c: f32[1,32,4,4] = Conv(%b, %wc)
    %g1: f32[1,32,1,1] = GlobalAveragePool(%b)
    %m: f32[1,32,4,4] = Mul(%c, %g1)
    %y: f32[1,32,4,4] = Relu(%m)
  })");
  // Nothing qualifies.
  EXPECT_TRUE(nc1hwc0_values(*g).empty());

  auto h = layout(R"(graph t opset 17 (%x: f32[1,16,4,4]) -> (%y) {
    %wb: f32[32,16,1,1] = const dense
    %wc: f32[32,32,1,1] = const dense
    %wd: f32[32,32,1,1] = const dense
    %b: f32[1,32,4,4] = Conv(%x, %wb)
    %e: f32[1,32,4,4] = Conv(%x, %wb)
    %s: f32[1,32,1,1] = ReduceMean(%e) {axes=[2, 3]}
    %c: f32[1,32,4,4] = Conv(%b, %wc)
    %m: f32[1,32,4,4] = Mul(%c, %s)
    %y: f32[1,32,4,4] = Conv(%m, %wd)
  })");
  // b: conv -> conv (X): NC1HWC0. m: the conv c kernel's result {c, m} (Mul by the broadcast s,
  // which is not a conv result) read by conv y: NC1HWC0. e: read by a reduction: plain.
  EXPECT_EQ(nc1hwc0_values(*h), (std::vector<std::string>{"b", "m"}));
}

TEST(LayoutNc1hwc0, WithoutFusionOnlyConvToConvEdges) {
  // Without fusion groups every node is its own kernel. In the residual block c0 is read by the
  // standalone Add (a vector kernel), c1 and c2 by a Relu / the Add, c1r is a Relu's result:
  // nothing qualifies.
  auto g = parse_ok(kResidual);
  layout_nc1hwc0(*g);
  cancel_transdata(*g);
  verify_graph(*g);
  EXPECT_EQ(transdata_count(*g), 0);
  EXPECT_TRUE(nc1hwc0_values(*g).empty());
  // A plain conv -> conv edge does.
  auto h = parse_ok(R"(graph t opset 17 (%x: f32[1,16,4,4]) -> (%y) {
    %w: f32[16,16,1,1] = const dense
    %a: f32[1,16,4,4] = Conv(%x, %w)
    %b: f32[1,16,4,4] = Conv(%a, %w)
    %y: f32[1,16,4,4] = Relu(%b)
  })");
  EXPECT_TRUE(layout_nc1hwc0(*h));
  EXPECT_TRUE(cancel_transdata(*h));
  verify_graph(*h);
  EXPECT_EQ(nc1hwc0_values(*h), (std::vector<std::string>{"a"}));
}

TEST(StorageFormatText, ParserAndVerifierErrors) {
  // An unknown format word names the line and what was expected.
  try {
    parse_graph(with_data(R"(graph t opset 17 (%x: f32[1,16,2,2]) -> (%y) {
    %w: f32[16,16,1,1] = const dense
    %c: f32[1,16,2,2] format NHWC = Conv(%x, %w)
    %y: f32[1,16,2,2] = Relu(%c)
  })"));
    FAIL() << "parsed an unknown format";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(":3:"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("NC1HWC0"), std::string::npos) << e.what();
  }
  // NC1HWC0 needs C % 16 == 0.
  auto g = parse_graph(with_data(R"(graph t opset 17 (%x: f32[1,8,2,2]) -> (%y) {
    %w: f32[8,8,1,1] = const dense
    %c: f32[1,8,2,2] format NC1HWC0 = Conv(%x, %w)
    %y: f32[1,8,2,2] = Relu(%c)
  })"));
  try {
    verify_graph(*g);
    FAIL() << "verified NC1HWC0 with 8 channels";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("%c is f32[1,8,2,2] in format NC1HWC0"), std::string::npos)
        << e.what();
  }
  // A TransData writes the format it names.
  auto t = parse_graph(with_data(R"(graph t opset 17 (%x: f32[1,16,2,2]) -> (%y) {
    %c: f32[1,16,2,2] = TransData(%x) {dst_format="NC1HWC0"}
    %y: f32[1,16,2,2] = Relu(%c)
  })"));
  try {
    verify_graph(*t);
    FAIL() << "verified a TransData to NC1HWC0 with a plain output";
  } catch (const Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("has dst_format \"NC1HWC0\" but its output %c is stored plain"),
        std::string::npos)
        << e.what();
  }
  // A graph output must be plain.
  auto h = parse_graph(with_data(R"(graph t opset 17 (%x: f32[1,16,2,2]) -> (%y) {
    %w: f32[16,16,1,1] = const dense
    %y: f32[1,16,2,2] format NC1HWC0 = Conv(%x, %w)
  })"));
  try {
    verify_graph(*h);
    FAIL() << "verified an NC1HWC0 graph output";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("graph output %y is in format NC1HWC0"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tessel::testing
