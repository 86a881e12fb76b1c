// qdq_maxpool (passes/graph/qdq_maxpool.cpp): DequantizeLinear -> MaxPool becomes MaxPool on the
// int8 values -> DequantizeLinear. The rewritten graph's outputs are the original's bit for bit on
// the reference interpreter (every element, including the padded border and the requantising Q
// after the pool); the cases it must leave alone stay as they are.
#include <gtest/gtest.h>

#include "compiler/ops/reference.h"
#include "passes/graph/graph_passes.h"
#include "tests/graph_passes/gp_util.h"
#include "tests/test_graph_builder.h"

namespace tessel::testing {
namespace {

using namespace tessel::graph_passes;
using Nodes = std::vector<std::string>;

// The ResNet stem's tail as `tessel quantize` writes it: the int8 Relu output, its DQ, a 3x3
// stride-2 MaxPool with pads 1, and the Q (other scale and zero point) the next conv reads.
const char* kStem = R"(graph t opset 13 (%xq: u8[1,3,9,11]) -> (%y) {
    %s: f32[SHAPE] = const [SCALE]
    %z: u8[SHAPE] = const [ZERO]
    %sy: f32[] = const [0.0625]
    %zy: i8[] = const [-5]
    %xf: f32[1,3,9,11] = DequantizeLinear(%xq, %s, %z) AXIS
    %p: f32[1,3,5,6] = MaxPool(%xf) {kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]}
    %y: i8[1,3,5,6] = QuantizeLinear(%p, %sy, %zy)
  })";

std::string stem(const std::string& shape, const std::string& scale, const std::string& zero,
                 const std::string& axis) {
  std::string s = kStem;
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"SHAPE", shape}, {"SCALE", scale}, {"ZERO", zero}, {"AXIS", axis}}) {
    const size_t p = s.find(from);
    s.replace(p, from.size(), to);
    if (from == "SHAPE") s.replace(s.find(from), from.size(), to);  // the zero point's too
  }
  return s;
}

TEST(QdqMaxPool, MaxPoolTakesTheInt8ValuesWithTheSameOutputs) {
  const Tensor x = random_int_tensor({1, 3, 9, 11}, DType::u8, 7, 0, 255);
  for (const auto& [shape, scale, zero, axis] :
       std::vector<std::tuple<std::string, std::string, std::string, std::string>>{
           {"", "0.0173", "131", ""},                                   // per tensor
           {"3", "0.02, 0.0625, 0.011", "0, 128, 255", "{axis=1}"}}) {  // per channel
    SCOPED_TRACE(scale);
    auto before = parse_ok(stem(shape, scale, zero, axis));
    auto g = parse_ok(stem(shape, scale, zero, axis));
    EXPECT_TRUE(qdq_maxpool(*g));
    verify_graph(*g);
    EXPECT_EQ(node_list(*g), (Nodes{"p_int8 = MaxPool(xq)", "p = DequantizeLinear(p_int8, s, z)",
                                    "y = QuantizeLinear(p, sy, zy)"}));
    EXPECT_EQ(g->find_value("p_int8")->dtype, DType::u8);
    EXPECT_EQ(g->find_node("xf"), nullptr);
    const Tensor want = ops::run_reference(*before, {{"xq", x}}).at("y");
    const Tensor got = ops::run_reference(*g, {{"xq", x}}).at("y");
    ASSERT_EQ(got.dtype(), DType::i8);
    ASSERT_EQ(got.numel(), 90);
    int64_t differ = 0;
    for (int64_t i = 0; i < got.numel(); ++i)
      differ += got.get_as_double(i) != want.get_as_double(i);
    EXPECT_EQ(differ, 0);
    EXPECT_FALSE(qdq_maxpool(*g));  // nothing left to move
  }
}

TEST(QdqMaxPool, LeavesWhatItCannotMove) {
  // A negative scale (DQ decreasing: max would become min), a DQ read by another node too, the
  // MaxPool's Indices output in use, per-axis parameters on another axis, and a target without
  // int8 kernels.
  auto negative = parse_ok(stem("", "-0.5", "3", ""));
  EXPECT_FALSE(qdq_maxpool(*negative));
  auto axis2 = parse_ok(R"(graph t opset 13 (%xq: u8[1,2,3,4]) -> (%p) {
    %s: f32[3] = const [0.5, 0.25, 1]
    %z: u8[3] = const [0, 0, 0]
    %xf: f32[1,2,3,4] = DequantizeLinear(%xq, %s, %z) {axis=2}
    %p: f32[1,2,3,4] = MaxPool(%xf) {kernel_shape=[1, 1]}
  })");
  EXPECT_FALSE(qdq_maxpool(*axis2));
  auto shared = parse_ok(R"(graph t opset 13 (%xq: i8[1,2,4,4]) -> (%p, %r) {
    %s: f32[] = const [0.5]
    %z: i8[] = const [0]
    %xf: f32[1,2,4,4] = DequantizeLinear(%xq, %s, %z)
    %p: f32[1,2,2,2] = MaxPool(%xf) {kernel_shape=[2, 2], strides=[2, 2]}
    %r: f32[1,2,4,4] = Relu(%xf)
  })");
  EXPECT_FALSE(qdq_maxpool(*shared));
  auto indices = parse_ok(R"(graph t opset 13 (%xq: i8[1,2,4,4]) -> (%p, %i) {
    %s: f32[] = const [0.5]
    %z: i8[] = const [0]
    %xf: f32[1,2,4,4] = DequantizeLinear(%xq, %s, %z)
    %p: f32[1,2,2,2], %i: i64[1,2,2,2] = MaxPool(%xf) {kernel_shape=[2, 2], strides=[2, 2]}
  })");
  EXPECT_FALSE(qdq_maxpool(*indices));
  auto g = parse_ok(stem("", "0.5", "3", ""));
  EXPECT_FALSE(qdq_maxpool(*g, [](const std::string& op) { return op != "QLinearConv"; }));
  EXPECT_TRUE(qdq_maxpool(*g, [](const std::string&) { return true; }));
}

}  // namespace
}  // namespace tessel::testing
