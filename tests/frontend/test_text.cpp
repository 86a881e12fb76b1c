// Graph IR text form: exact print/parse round-trip, every dtype and attribute kind, parse errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/ir/graph.h"
#include "compiler/support/fp16.h"
#include "tests/frontend/test_util.h"

namespace tessel {
namespace {

using testing::expect_same_graph;
using testing::same_tensor;

// Prints g, parses it, checks the parsed graph equals g and prints identically; returns the text.
std::string expect_round_trip(const Graph& g) {
  const std::string text = graph_to_string(g);
  std::unique_ptr<Graph> parsed = parse_graph(text, "roundtrip");
  expect_same_graph(g, *parsed);
  EXPECT_EQ(graph_to_string(*parsed), text);
  return text;
}

template <class T>
Tensor make_tensor(DType dtype, const Shape& shape, const std::vector<T>& values) {
  Tensor t(dtype, shape);
  EXPECT_EQ(t.nbytes(), values.size() * sizeof(T));
  std::memcpy(t.raw(), values.data(), t.nbytes());
  return t;
}

float f32_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

double f64_from_bits(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, 8);
  return d;
}

TEST(Text, PrintsTheDocumentedForm) {
  Graph g;
  g.name = "tiny";
  g.opset = 17;
  Value* x = g.add_value("x", DType::f32, {1, 2});
  g.inputs.push_back(x);
  Value* w = g.add_constant("w", Tensor::from_floats({1, 2}, {0.5f, -1.0f}));
  Value* y = g.add_value("y", DType::f32, {1, 2});
  Value* s = g.add_value("s", DType::i64, {2});
  s->constant = std::make_shared<const Tensor>(Tensor::from_int64s({2}, {1, 2}));
  Attributes attrs;
  attrs.set("alpha", 1.0f);
  attrs.set("axes", std::vector<int64_t>{0, 1});
  g.add_node("Add", "add_0", {x, w}, {y}, attrs);
  g.add_node("Shape", "shape_0", {y}, {s});
  g.outputs = {y, s};
  const std::string expected =
      "graph tiny opset 17 (%x: f32[1,2]) -> (%y, %s) {\n"
      "  %w: f32[1,2] = const [0.5, -1]\n"
      "  %y: f32[1,2] = Add(%x, %w) {alpha=1.0, axes=[0, 1]}  # add_0\n"
      "  %s: i64[2] known [1, 2] = Shape(%y)  # shape_0\n"
      "}\n";
  EXPECT_EQ(graph_to_string(g), expected);
  expect_round_trip(g);
}

TEST(Text, RoundTripsEveryDtypeBitExactly) {
  Graph g;
  g.name = "dtypes";
  g.opset = 13;
  const float tiny = std::numeric_limits<float>::denorm_min();
  g.add_constant("f32",
                 Tensor::from_floats({8}, {0.1f, -0.0f, 1e-38f, tiny, 3.4028235e38f,
                                           std::numeric_limits<float>::infinity(),
                                           -std::numeric_limits<float>::infinity(), 16777217.0f}));
  g.add_constant("f32_nans",
                 make_tensor<uint32_t>(DType::f32, {3}, {0x7fc00000u, 0xffc00000u, 0x7f800001u}));
  g.add_constant("f64", make_tensor<double>(DType::f64, {5},
                                            {0.1, -1e-308, 4.9406564584124654e-324,
                                             1.7976931348623157e308, 1.0 / 3.0}));
  g.add_constant("f64_nan", make_tensor<uint64_t>(DType::f64, {2},
                                                  {0x7ff8000000000000ull, 0x7ff0000000000123ull}));
  // f16: 1.0, the smallest subnormal, max finite, -0, inf, canonical NaN, a payload NaN, 0.1.
  g.add_constant("f16", make_tensor<uint16_t>(
                            DType::f16, {8},
                            {0x3c00, 0x0001, 0x7bff, 0x8000, 0x7c00, 0x7e00, 0x7c01, 0x2e66}));
  g.add_constant("i8", make_tensor<int8_t>(DType::i8, {3}, {-128, 0, 127}));
  g.add_constant("u8", make_tensor<uint8_t>(DType::u8, {2}, {0, 255}));
  g.add_constant("i16", make_tensor<int16_t>(DType::i16, {2}, {-32768, 32767}));
  g.add_constant("u16", make_tensor<uint16_t>(DType::u16, {1}, {65535}));
  g.add_constant("i32", make_tensor<int32_t>(DType::i32, {2}, {-2147483647 - 1, 2147483647}));
  g.add_constant("u32", make_tensor<uint32_t>(DType::u32, {1}, {4294967295u}));
  g.add_constant("i64", make_tensor<int64_t>(DType::i64, {2},
                                             {std::numeric_limits<int64_t>::min(),
                                              std::numeric_limits<int64_t>::max()}));
  g.add_constant("u64", make_tensor<uint64_t>(DType::u64, {1}, {18446744073709551615ull}));
  g.add_constant("bool", make_tensor<uint8_t>(DType::boolean, {2, 1}, {1, 0}));
  g.add_constant("scalar", Tensor::scalar_f32(2.5f));
  g.add_constant("empty", Tensor(DType::f32, {0, 3}));
  const std::string text = expect_round_trip(g);
  // The literal forms: shortest decimals, special values, NaN payloads as bits.
  EXPECT_NE(text.find("%f32: f32[8] = const [0.1, -0, 1e-38, 1e-45, 3.4028235e+38, inf, -inf, "
                      "16777216]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[nan, -nan, nan0x7f800001]"), std::string::npos) << text;
  EXPECT_NE(text.find("[nan, nan0x7ff0000000000123]"), std::string::npos) << text;
  EXPECT_NE(text.find("%f16: f16[8] = const [1, 5.9604645e-08, 65504, -0, inf, nan, nan0x7c01, "
                      "0.099975586]"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%bool: bool[2,1] = const [true, false]"), std::string::npos) << text;
  EXPECT_NE(text.find("%empty: f32[0,3] = const []"), std::string::npos) << text;
  EXPECT_NE(text.find("%scalar: f32[] = const [2.5]"), std::string::npos) << text;
  // Spot-check a parsed NaN payload and a denormal bit-exactly.
  auto parsed = parse_graph(text);
  uint32_t bits;
  std::memcpy(&bits, parsed->find_value("f32_nans")->constant->data<float>() + 2, 4);
  EXPECT_EQ(bits, 0x7f800001u);
  EXPECT_EQ(parsed->find_value("f32")->constant->data<float>()[3], tiny);
  EXPECT_EQ(parsed->find_value("f16")->constant->data<uint16_t>()[6], 0x7c01);
  (void)f32_from_bits;
  (void)f64_from_bits;
}

TEST(Text, RoundTripsEveryAttributeKindAndOddNames) {
  Graph g;
  g.name = "graph with spaces";
  g.opset = 11;
  Value* x = g.add_value("onnx::Conv_0", DType::f32, {1, 3});
  g.inputs.push_back(x);
  Value* y = g.add_value("out \"quoted\"\n", DType::f32, {1, 3});
  Value* z = g.add_value("/block.1/Relu_output_0", DType::f32, {1, 3});
  Value* m = g.add_value("mask", DType::boolean, {1, 3});
  Attributes a;
  a.set("i", int64_t{-7});
  a.set("big", std::numeric_limits<int64_t>::min());
  a.set("f", 0.1f);
  a.set("f_int_valued", 2.0f);
  a.set("f_neg_zero", -0.0f);
  a.set("f_inf", -std::numeric_limits<float>::infinity());
  a.set("f_nan", std::numeric_limits<float>::quiet_NaN());
  a.set("s", std::string("tab\there \"q\" back\\slash \x01 caf\xc3\xa9"));
  a.set("s_empty", std::string());
  a.set("ints", std::vector<int64_t>{1, -2, 3});
  a.set("ints_empty", std::vector<int64_t>{});
  a.set("floats", std::vector<float>{1.0f, 0.5f, -3.25e-20f});
  a.set("floats_empty", std::vector<float>{});
  a.set("strings", std::vector<std::string>{"a", "", "b,c]"});
  a.set("strings_empty", std::vector<std::string>{});
  a.set("t", Tensor::from_int64s({2, 2}, {1, 2, 3, 4}));
  a.set("t_f16", make_tensor<uint16_t>(DType::f16, {1}, {0x3555}));
  a.set("weird key", int64_t{1});
  g.add_node("CustomOp", "node #1 (x)", {x, nullptr, x}, {y, m}, a);
  g.add_node("Relu", "/block.1/Relu", {y}, {z});
  Value* w = g.add_value("w", DType::f32, {1, 3});
  g.add_node("const", "op named const", {z}, {w});  // an op type equal to the keyword
  g.outputs = {z, m, x};
  const std::string text = expect_round_trip(g);
  EXPECT_NE(text.find("graph \"graph with spaces\" opset 11 (%\"onnx::Conv_0\": f32[1,3])"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%\"out \\\"quoted\\\"\\n\": f32[1,3], %mask: bool[1,3] = "
                      "CustomOp(%\"onnx::Conv_0\", _, %\"onnx::Conv_0\")"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("f=0.1, f_inf=-inf, f_int_valued=2.0, f_nan=nan, f_neg_zero=-0.0"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("ints_empty=ints[], s=\"tab\\there \\\"q\\\" back\\\\slash \\x01 caf\xc3\xa9\""),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("t=tensor<i64[2,2] [1, 2, 3, 4]>"), std::string::npos) << text;
  EXPECT_NE(text.find("# \"node #1 (x)\""), std::string::npos) << text;
  EXPECT_NE(text.find("%/block.1/Relu_output_0: f32[1,3] = Relu(%\"out"), std::string::npos)
      << text;
  EXPECT_NE(text.find("%w: f32[1,3] = \"const\"(%/block.1/Relu_output_0)"), std::string::npos)
      << text;
}

TEST(Text, ParsesCommentsAndWhitespaceFreely) {
  const std::string text =
      "// a hand-written graph\n"
      "graph g opset 17 (%x: f32[2]) -> (%y) {\n"
      "  %c: f32[2] = const [1.5, 2]   // trailing comment\n"
      "  %y: f32[2] =\n"
      "      Add(%x,\n"
      "          %c) {alpha = 1, beta = [1.5, 2], mixed=[1, 2.5], names=[\"a\"]}\n"
      "  %z: f32[2] = Relu(%y)\n"  // no name: gets one
      "}\n";
  auto g = parse_graph(text, "hand.tir");
  ASSERT_EQ(g->nodes().size(), 2u);
  const Node& add = *g->nodes()[0];
  EXPECT_EQ(add.op_type, "Add");
  EXPECT_EQ(add.name, "Add_0");
  EXPECT_EQ(add.attrs.get_int("alpha", add.name), 1);
  EXPECT_EQ(add.attrs.get_floats_or("beta", {}, add.name), (std::vector<float>{1.5f, 2.0f}));
  EXPECT_EQ(add.attrs.get_floats_or("mixed", {}, add.name), (std::vector<float>{1.0f, 2.5f}));
  EXPECT_EQ(g->nodes()[1]->name, "Relu_0");
  EXPECT_EQ(g->find_value("c")->constant->to_float_vector(), (std::vector<float>{1.5f, 2.0f}));
  EXPECT_EQ(g->outputs[0]->name, "y");
}

TEST(Text, ElidedConstantsAreShortAndRefuseToParse) {
  Graph g;
  g.name = "e";
  Value* big = g.add_constant("big", Tensor(DType::f32, {4, 4}));
  Value* small = g.add_constant("small", Tensor::from_int64s({2}, {3, 4}));
  g.outputs = {big, small};
  PrintOptions opts;
  opts.elide_constants = true;
  const std::string text = graph_to_string(g, opts);
  EXPECT_NE(text.find("%big: f32[4,4] = const dense<...>"), std::string::npos) << text;
  EXPECT_NE(text.find("%small: i64[2] = const [3, 4]"), std::string::npos) << text;
  try {
    parse_graph(text, "elided.tir");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("elided.tir:2: tensor data was elided"), std::string::npos)
        << e.what();
  }
}

// Parse errors: each names the source and line and says what was expected.
struct BadText {
  const char* text;
  const char* message;  // expected substring of the error
};

TEST(Text, ParseErrorsNameSourceLineAndExpectation) {
  const BadText cases[] = {
      {"grph g opset 1 () -> () {}",
       "bad.tir:1: expected 'graph' at the start of the text, got "
       "'grph'"},
      {"graph g opset x () -> () {}",
       "bad.tir:1: expected an integer (the opset version), got 'x'"},
      {"graph g opset 1 (%x: f32[2]) -> (%y) {\n}\n", "bad.tir:1: graph output %y is not defined"},
      {"graph g opset 1 () -> () {\n  %c: f32[2] = const [1, 2, 3]\n}",
       "bad.tir:2: too many elements: f32[2] holds 2"},
      {"graph g opset 1 () -> () {\n  %c: f32[3] =\n const [1, 2]\n}",
       "bad.tir:3: 2 elements given for f32[3], which holds 3"},
      {"graph g opset 1 () -> () {\n\n  %c: i8[1] = const [300]\n}",
       "bad.tir:3: bad i8 element '300' (expected an integer in range)"},
      {"graph g opset 1 () -> () {\n  %c: f32[1] = const [1.5.5]\n}",
       "bad.tir:2: bad f32 element '1.5.5'"},
      {"graph g opset 1 () -> () {\n  %c: bool[1] = const [1]\n}",
       "bad.tir:2: bad bool element '1' (expected true or false)"},
      {"graph g opset 1 () -> () {\n  %c: f33[1] = const [1]\n}",
       "bad.tir:2: unknown element type "
       "'f33'"},
      {"graph g opset 1 (%x: f32[1]) -> () {\n  %y: f32[1] = Relu(%z)\n}",
       "bad.tir:2: use of undefined value %z"},
      {"graph g opset 1 (%x: f32[1]) -> () {\n  %y: f32[1] = Relu(%y)\n}",
       "bad.tir:2: use of undefined value %y"},
      {"graph g opset 1 (%x: f32[1]) -> () {\n  %x: f32[1] = Relu(%x)\n}",
       "bad.tir:2: value %x is already defined (line 1)"},
      {"graph g opset 1 (%x: f32[1]) -> () {\n  %y: f32[1] = Relu(%x)  # n\n  %z: f32[1] = "
       "Relu(%x)  # n\n}",
       "bad.tir:3: node name 'n' is used twice"},
      {"graph g opset 1 (%x: f32[1]) -> () {\n  %y: f32[1] = Relu(%x {a=1}\n}",
       "bad.tir:2: expected ',' or ')' in the operand list, got '{'"},
      {"graph g opset 1 (%x: f32[1]) -> () {\n  %y: f32[1] = Relu(%x) {a=1, a=2}\n}",
       "bad.tir:2: attribute 'a' given twice"},
      {"graph g opset 1 (%x: f32[1]) -> () {\n  %y: f32[1] = Relu(%x) {a=[]}\n}",
       "bad.tir:2: empty list for attribute 'a' needs its kind: ints[], floats[] or strings[]"},
      {"graph g opset 1 (%x: f32[1]) -> () {\n  %y: f32[1] = Relu(%x) {a=zz}\n}",
       "bad.tir:2: bad value 'zz' for attribute 'a'"},
      {"graph g opset 1 (%x: f32[1]) -> () {\n  %y: f32[1] = Relu(%x) {s=\"abc}\n}",
       "bad.tir:2: unterminated string literal"},
      {"graph g opset 1 (%x: f32[1]) -> () {\n  %y: f32[1] = Relu(%x) {s=\"\\q\"}\n}",
       "bad.tir:2: unknown escape '\\q'"},
      {"graph g opset 1 (%x: f32[1]) -> () {\n  %y: f32[1] = Relu(%x) ;\n}",
       "bad.tir:2: unexpected character ';'"},
      {"graph g opset 1 (%x: f32[1]) -> () {\n  %y: f32[1] = Relu(%x)\n",
       "bad.tir:3: expected '}' "
       "to close the graph body, "
       "got end of input"},
      {"graph g opset 1 () -> () {\n} extra",
       "bad.tir:2: expected end of input after the closing "
       "'}', got 'extra'"},
      {"graph g opset 1 () -> () {\n  %a: f32[1], %b: f32[1] = const [1]\n}",
       "bad.tir:2: a constant defines exactly one value"},
      {"graph g opset 1 () -> () {\n  %a: f32[-1] = const []\n}",
       "bad.tir:2: negative dimension -1 in a shape"},
  };
  for (const BadText& c : cases) {
    try {
      parse_graph(c.text, "bad.tir");
      ADD_FAILURE() << "parsed without error: " << c.text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
          << "text:\n"
          << c.text << "\nerror: " << e.what() << "\nexpected: " << c.message;
    }
  }
}

TEST(Text, RandomCorruptionNeverCrashes) {
  // Every truncation of a valid text either parses (only the full text does) or throws Error.
  Graph g;
  g.name = "t";
  g.opset = 17;
  Value* x = g.add_value("x", DType::f32, {2});
  g.inputs.push_back(x);
  Value* c = g.add_constant("c", Tensor::from_floats({2}, {1.0f, 2.0f}));
  Value* y = g.add_value("y", DType::f32, {2});
  Attributes a;
  a.set("s", std::string("x\"y"));
  a.set("t", Tensor::from_floats({1}, {3.0f}));
  g.add_node("Add", "add", {x, c}, {y}, a);
  g.outputs = {y};
  const std::string text = graph_to_string(g);
  int errors = 0;
  for (size_t len = 0; len < text.size() - 1; ++len) {
    try {
      parse_graph(text.substr(0, len), "cut");
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_EQ(errors, static_cast<int>(text.size() - 1));
}

}  // namespace
}  // namespace tessel
