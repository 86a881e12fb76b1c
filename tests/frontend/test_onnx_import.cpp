// ONNX frontend: import errors, initializers/constants/attributes, dynamic-dim binding, opset
// canonicalisation, load_tensor_pb, parse_dims.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include <sys/resource.h>
#include <unistd.h>

#include "compiler/frontend/onnx_import.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/reference.h"
#include "compiler/support/fp16.h"
#include "tests/frontend/onnx_builder.h"
#include "tests/frontend/test_util.h"

namespace tessel {
namespace {

using frontend::import_onnx;
using frontend::import_onnx_bytes;
using frontend::ImportOptions;
using namespace tessel::testing;

constexpr int kF32 = onnx::TensorProto::FLOAT;
constexpr int kI64 = onnx::TensorProto::INT64;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no error>";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

std::unique_ptr<Graph> import_model(const onnx::ModelProto& m, const ImportOptions& o = {}) {
  return import_onnx_bytes(serialize(m), "model.onnx", o);
}

// Ops whose shape rule this file registered as a stand-in (the op library lacks them).
std::set<std::string>& stand_ins() {
  static std::set<std::string> s;
  return s;
}

// Makes sure `op` has a shape rule: the op library's own, or a pass-through stand-in (every output
// gets input 0's dtype and shape; no kernel) so the structure of canonicalised graphs can be
// checked before the library has the op. Returns true when the library's op (with a reference
// kernel) is used, i.e. values can be checked too.
bool have_op(const std::string& op) {
  register_test_ops();
  if (const ops::OpDef* def = ops::find_op(op)) {
    return !stand_ins().count(op) && static_cast<bool>(def->reference);
  }
  ops::register_op({op,
                    [](Node& n) {
                      for (Value* out : n.outputs) {
                        out->dtype = n.input(0) ? n.input(0)->dtype : DType::f32;
                        out->shape = n.input(0) ? n.input(0)->shape : Shape{};
                      }
                    },
                    nullptr});
  stand_ins().insert(op);
  return false;
}

std::vector<int64_t> known_ints(const Value* v) {
  EXPECT_NE(v, nullptr);
  if (!v || !v->constant) {
    ADD_FAILURE() << "value " << (v ? v->name : "null") << " is not a constant";
    return {};
  }
  return v->constant->to_int64_vector();
}

Tensor iota_f32(const Shape& shape, float start = 0.0f, float step = 1.0f) {
  Tensor t(DType::f32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + step * static_cast<float>(i);
  return t;
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(OnnxImport, MissingFileNamesTheFile) {
  EXPECT_EQ(error_of([] { import_onnx("/nonexistent/dir/model.onnx"); }),
            "cannot open ONNX model '/nonexistent/dir/model.onnx': no such file");
  EXPECT_EQ(error_of([] { import_onnx("/tmp"); }),
            "cannot open ONNX model '/tmp': not a regular file");
}

TEST(OnnxImport, CorruptBytesNameTheSource) {
  EXPECT_EQ(error_of([] { import_onnx_bytes("this is not an onnx model", "junk.onnx"); }),
            "junk.onnx: not a valid ONNX model (the protobuf data cannot be parsed: is the file "
            "truncated or not an .onnx file?)");
  // A real model cut in half, from a file: the error names the file.
  const std::string model = std::string(TESSEL_MODELS_DIR) + "/hello_deepa.onnx";
  ASSERT_TRUE(std::filesystem::exists(model))
      << "model missing (scripts/fetch_models.sh): " << model;
  std::ifstream in(model, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = ::testing::TempDir() + "/truncated.onnx";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_CONTAINS(error_of([&] { import_onnx(cut); }), cut + ": not a valid ONNX model");
  // An empty ModelProto parses but has no graph.
  EXPECT_EQ(error_of([] { import_onnx_bytes("", "empty.onnx"); }),
            "empty.onnx: the ONNX model contains no graph");
}

TEST(OnnxImport, OpsetRange) {
  for (int64_t opset : {5, 19}) {
    auto m = make_model(opset);
    EXPECT_EQ(error_of([&] { import_model(m); }),
              fmt::format("model.onnx: the model uses default-domain opset {}; tessel supports "
                          "opsets 6 to 18",
                          opset));
    EXPECT_THROW(import_model(m), Unsupported);
  }
  auto m = make_model(13);
  m.mutable_opset_import(0)->set_domain("com.microsoft");
  EXPECT_EQ(error_of([&] { import_model(m); }),
            "model.onnx: the model declares no default-domain opset (opset_import: [com.microsoft "
            "13]); tessel supports only the default ONNX domain");
  // "ai.onnx" is the default domain's other spelling.
  m.mutable_opset_import(0)->set_domain("ai.onnx");
  EXPECT_NO_THROW(import_model(m));
}

TEST(OnnxImport, UnsupportedOpAndDomainNameTheNode) {
  register_test_ops();
  auto m = make_model(13);
  add_input(m, "x", kF32, {int64_t{2}});
  add_node(m, "FancyOp", {"x"}, {"y"}, "fancy");
  add_output(m, "y");
  try {
    import_model(m);
    FAIL();
  } catch (const Unsupported& e) {
    EXPECT_EQ(std::string(e.what()), "model.onnx: unsupported op 'FancyOp' (node 'fancy')");
  }
  auto d = make_model(13);
  add_input(d, "x", kF32, {int64_t{2}});
  add_node(d, "FusedConv", {"x"}, {"y"}, "fused")->set_domain("com.microsoft");
  add_output(d, "y");
  try {
    import_model(d);
    FAIL();
  } catch (const Unsupported& e) {
    EXPECT_EQ(std::string(e.what()),
              "model.onnx: node 'fused' (FusedConv) is in domain 'com.microsoft'; tessel supports "
              "only the default ONNX domain");
  }
  // Subgraphs are taken by If, Loop and Scan only.
  auto g = make_model(13);
  add_input(g, "x", onnx::TensorProto::FLOAT, {int64_t{1}});
  auto* n = add_node(g, "Relu", {"x"}, {"y"}, "relu_0");
  new_attr(n, "body", onnx::AttributeProto::GRAPH)->mutable_g()->set_name("t");
  add_output(g, "y");
  try {
    import_model(g);
    FAIL();
  } catch (const Unsupported& e) {
    EXPECT_EQ(std::string(e.what()),
              "model.onnx: node 'relu_0' (Relu): has a subgraph attribute; tessel runs the "
              "subgraphs of If, Loop and Scan only");
  }
  // An If without its else branch names what is missing.
  auto h = make_model(13);
  add_input(h, "c", onnx::TensorProto::BOOL, {int64_t{1}});
  auto* i = add_node(h, "If", {"c"}, {"y"}, "if_0");
  new_attr(i, "then_branch", onnx::AttributeProto::GRAPH)->mutable_g()->set_name("t");
  add_output(h, "y");
  try {
    import_model(h);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "model.onnx: If 'if_0': missing required subgraph attribute 'else_branch'");
  }
}

TEST(OnnxImport, MalformedGraphs) {
  register_test_ops();
  {
    auto m = make_model(13);
    add_input(m, "x", kF32, {int64_t{2}});
    add_node(m, "TestIdentity", {"nowhere"}, {"y"}, "id");
    add_output(m, "y");
    EXPECT_EQ(error_of([&] { import_model(m); }),
              "model.onnx: node 'id' (TestIdentity): input 'nowhere' is not produced by any node, "
              "initializer or graph input");
  }
  {
    auto m = make_model(13);
    add_input(m, "x", kF32, {int64_t{2}});
    add_node(m, "TestIdentity", {"x"}, {"y"}, "a");
    add_node(m, "TestIdentity", {"x"}, {"y"}, "b");
    add_output(m, "y");
    EXPECT_EQ(error_of([&] { import_model(m); }),
              "model.onnx: value 'y' is produced by two nodes ('a' and 'b')");
  }
  {
    auto m = make_model(13);
    add_input(m, "x", kF32, {int64_t{2}});
    add_node(m, "TestIdentity", {"x"}, {"y"}, "a");
    add_output(m, "z");
    EXPECT_EQ(error_of([&] { import_model(m); }),
              "model.onnx: graph output 'z' is not produced by any node, initializer or input");
  }
  {
    auto m = make_model(13);
    add_input(m, "x", kF32, {int64_t{2}});
    add_node(m, "TestAdd", {"x", "q"}, {"p"}, "a");
    add_node(m, "TestAdd", {"x", "p"}, {"q"}, "b");
    add_output(m, "q");
    EXPECT_CONTAINS(error_of([&] { import_model(m); }),
                    "model.onnx: the graph's nodes form a cycle");
  }
  {
    auto m = make_model(13);
    add_input(m, "x", kF32, {int64_t{2}});
    add_node(m, "TestIdentity", {"x"}, {"y"}, "a");
    auto* out = m.mutable_graph()->add_output();
    out->set_name("y");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(kI64);
    EXPECT_EQ(error_of([&] { import_model(m); }),
              "model.onnx: graph output 'y' is declared INT64 in the model, but shape inference "
              "gives f32");
  }
  {
    auto m = make_model(13);
    add_input(m, "x", onnx::TensorProto::STRING, {int64_t{2}});
    EXPECT_EQ(error_of([&] { import_model(m); }),
              "model.onnx: graph input 'x' has element type STRING, which tessel does not support");
  }
}

TEST(OnnxImport, ExternalDataIsUnsupported) {
  auto m = make_model(13);
  onnx::TensorProto t;
  t.set_name("w");
  t.set_data_type(kF32);
  t.add_dims(4);
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* kv = t.add_external_data();
  kv->set_key("location");
  kv->set_value("weights.bin");
  add_initializer(m, t);
  try {
    import_model(m);
    FAIL();
  } catch (const Unsupported& e) {
    EXPECT_EQ(std::string(e.what()),
              "model.onnx: initializer 'w' keeps its data in an external file ('weights.bin'); "
              "tessel reads only tensors stored inside the .onnx file");
  }
  // raw_data of the wrong size.
  auto b = make_model(13);
  auto bad = raw_tensor<float>("w", kF32, {3}, {1.0f, 2.0f});
  add_initializer(b, bad);
  EXPECT_EQ(error_of([&] { import_model(b); }),
            "model.onnx: initializer 'w': raw_data holds 8 bytes, but f32[3] needs 12");
  auto c = make_model(13);
  add_initializer(c, float_tensor("w", {3}, {1.0f}));
  EXPECT_EQ(error_of([&] { import_model(c); }),
            "model.onnx: initializer 'w': float_data holds 1 values, but f32[3] has 3 elements");
}

// ---------------------------------------------------------------------------------------------
// Dynamic dims

onnx::ModelProto dynamic_model() {
  register_test_ops();
  auto m = make_model(13);
  add_input(m, "x", kF32, {std::string("batch"), int64_t{3}, std::string(""), std::string("w")});
  add_node(m, "TestIdentity", {"x"}, {"y"}, "id");
  add_output(m, "y");
  return m;
}

TEST(OnnxImport, DynamicDimsMustBeBound) {
  auto m = dynamic_model();
  EXPECT_EQ(error_of([&] { import_model(m); }),
            "model.onnx: graph input 'x' axis 0 is dynamic (dim 'batch'); bind it with "
            "--input-shape x=?,3,?,?, replacing each ? by a positive "
            "size");
  ImportOptions o;
  o.input_shapes["x"] = {2, 3, 48, 192};
  auto g = import_model(m, o);
  ASSERT_EQ(g->inputs.size(), 1u);
  EXPECT_EQ(g->inputs[0]->shape, (Shape{2, 3, 48, 192}));
  EXPECT_EQ(g->outputs[0]->shape, (Shape{2, 3, 48, 192}));

  // Only axis 2 (no dim_param) left unbound... cannot happen partially: binding is per input.
  auto p = make_model(13);
  add_input(p, "x", kF32, {int64_t{1}, std::string("")});
  add_node(p, "TestIdentity", {"x"}, {"y"}, "id");
  add_output(p, "y");
  EXPECT_EQ(error_of([&] { import_model(p); }),
            "model.onnx: graph input 'x' axis 1 is dynamic (an unnamed dim); bind it with "
            "--input-shape x=1,?, replacing each ? by a positive "
            "size");
}

TEST(OnnxImport, BoundShapesAreChecked) {
  auto m = dynamic_model();
  ImportOptions o;
  o.input_shapes["x"] = {1, 3, 48};
  EXPECT_EQ(error_of([&] { import_model(m, o); }),
            "model.onnx: input shape [1,3,48] given for graph input 'x' has rank 3, but the "
            "model's input has rank 4 (shape [?,3,?,?])");
  o.input_shapes["x"] = {1, 4, 48, 192};
  EXPECT_EQ(error_of([&] { import_model(m, o); }),
            "model.onnx: input shape [1,4,48,192] given for graph input 'x' conflicts with the "
            "model at axis 1: the model fixes it to 3 (model shape [?,3,?,?])");
  o.input_shapes["x"] = {1, 3, 0, 192};
  EXPECT_EQ(error_of([&] { import_model(m, o); }),
            "model.onnx: input shape [1,3,0,192] given for graph input 'x' has a non-positive "
            "dimension");
  o.input_shapes["x"] = {1, 3, 48, 192};
  o.input_shapes["y"] = {1};
  EXPECT_EQ(error_of([&] { import_model(m, o); }),
            "model.onnx: an input shape is given for 'y', which is not an input of the model "
            "(runtime inputs: x)");
}

TEST(OnnxImport, InputsThatAreInitializersAreConstants) {
  register_test_ops();
  auto m = make_model(9);
  add_input(m, "x", kF32, {int64_t{2}});
  add_input(m, "w", kF32, {int64_t{2}});  // listed as an input and given as an initializer
  add_initializer(m, float_tensor("w", {2}, {0.5f, 1.5f}));
  add_node(m, "TestAdd", {"x", "w"}, {"y"}, "add");
  add_output(m, "y");
  auto g = import_model(m);
  ASSERT_EQ(g->inputs.size(), 1u);
  EXPECT_EQ(g->inputs[0]->name, "x");
  const Value* w = g->find_value("w");
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->is_constant());
  EXPECT_EQ(w->constant->to_float_vector(), (std::vector<float>{0.5f, 1.5f}));
  ImportOptions o;
  o.input_shapes["w"] = {2};
  EXPECT_EQ(error_of([&] { import_model(m, o); }),
            "model.onnx: an input shape is given for 'w', which is an initializer (a constant), "
            "not a runtime input (runtime inputs: x)");
}

// ---------------------------------------------------------------------------------------------
// Initializers, Constant nodes, attributes, names

TEST(OnnxImport, InitializersOfEveryDtypeRawAndTyped) {
  auto m = make_model(13);
  add_initializer(m, raw_tensor<float>("f32_raw", kF32, {2}, {1.5f, -0.0f}));
  add_initializer(m, float_tensor("f32_typed", {2, 1}, {3.25f, 1e-30f}));
  add_initializer(m, raw_tensor<double>("f64_raw", onnx::TensorProto::DOUBLE, {1}, {0.1}));
  onnx::TensorProto f64;
  f64.set_name("f64_typed");
  f64.set_data_type(onnx::TensorProto::DOUBLE);
  f64.add_dims(1);
  f64.add_double_data(-2.5);
  add_initializer(m, f64);
  add_initializer(
      m, raw_tensor<uint16_t>("f16_raw", onnx::TensorProto::FLOAT16, {2}, {0x3c00, 0x7bff}));
  onnx::TensorProto f16;  // f16 in int32_data: one bit pattern per int32
  f16.set_name("f16_typed");
  f16.set_data_type(onnx::TensorProto::FLOAT16);
  f16.add_dims(2);
  f16.add_int32_data(0xc000);  // -2.0
  f16.add_int32_data(0x0001);  // smallest subnormal
  add_initializer(m, f16);
  onnx::TensorProto i8;
  i8.set_name("i8_typed");
  i8.set_data_type(onnx::TensorProto::INT8);
  i8.add_dims(2);
  i8.add_int32_data(-128);
  i8.add_int32_data(127);
  add_initializer(m, i8);
  onnx::TensorProto u16;
  u16.set_name("u16_typed");
  u16.set_data_type(onnx::TensorProto::UINT16);
  u16.add_dims(1);
  u16.add_int32_data(65535);
  add_initializer(m, u16);
  onnx::TensorProto i32;
  i32.set_name("i32_typed");
  i32.set_data_type(onnx::TensorProto::INT32);
  i32.add_dims(1);
  i32.add_int32_data(-7);
  add_initializer(m, i32);
  add_initializer(m, int64_tensor("i64_typed", {3}, {1, -2, std::numeric_limits<int64_t>::max()}));
  add_initializer(m, raw_tensor<int64_t>("i64_raw", kI64, {0}, {}));
  onnx::TensorProto u64;
  u64.set_name("u64_typed");
  u64.set_data_type(onnx::TensorProto::UINT64);
  u64.add_dims(1);
  u64.add_uint64_data(18446744073709551615ull);
  add_initializer(m, u64);
  onnx::TensorProto u32;
  u32.set_name("u32_typed");
  u32.set_data_type(onnx::TensorProto::UINT32);
  u32.add_dims(1);
  u32.add_uint64_data(4000000000u);
  add_initializer(m, u32);
  onnx::TensorProto b;
  b.set_name("bool_typed");
  b.set_data_type(onnx::TensorProto::BOOL);
  b.add_dims(3);
  b.add_int32_data(1);
  b.add_int32_data(0);
  b.add_int32_data(1);
  add_initializer(m, b);
  add_initializer(m, raw_tensor<uint8_t>("u8_raw", onnx::TensorProto::UINT8, {2}, {0, 200}));
  add_initializer(m, raw_tensor<int16_t>("i16_raw", onnx::TensorProto::INT16, {1}, {-300}));
  add_initializer(m, raw_tensor<uint8_t>("bool_raw", onnx::TensorProto::BOOL, {2}, {0, 1}));
  auto g = import_model(m);
  auto c = [&](const char* name) -> const Tensor& {
    const Value* v = g->find_value(name);
    EXPECT_NE(v, nullptr) << name;
    EXPECT_TRUE(v->is_constant()) << name;
    return *v->constant;
  };
  EXPECT_EQ(c("f32_raw").to_float_vector(), (std::vector<float>{1.5f, -0.0f}));
  EXPECT_TRUE(std::signbit(c("f32_raw").data<float>()[1]));
  EXPECT_EQ(c("f32_typed").shape(), (Shape{2, 1}));
  EXPECT_EQ(c("f32_typed").to_float_vector(), (std::vector<float>{3.25f, 1e-30f}));
  EXPECT_EQ(c("f64_raw").data<double>()[0], 0.1);
  EXPECT_EQ(c("f64_typed").data<double>()[0], -2.5);
  EXPECT_EQ(c("f16_raw").dtype(), DType::f16);
  EXPECT_EQ(c("f16_raw").data<uint16_t>()[1], 0x7bff);
  EXPECT_EQ(c("f16_raw").get_as_double(1), 65504.0);
  EXPECT_EQ(c("f16_typed").data<uint16_t>()[0], 0xc000);
  EXPECT_EQ(c("f16_typed").get_as_double(1), std::ldexp(1.0, -24));
  EXPECT_EQ(c("i8_typed").to_int64_vector(), (std::vector<int64_t>{-128, 127}));
  EXPECT_EQ(c("u16_typed").to_int64_vector(), (std::vector<int64_t>{65535}));
  EXPECT_EQ(c("i32_typed").to_int64_vector(), (std::vector<int64_t>{-7}));
  EXPECT_EQ(c("i64_typed").to_int64_vector(),
            (std::vector<int64_t>{1, -2, std::numeric_limits<int64_t>::max()}));
  EXPECT_EQ(c("i64_raw").numel(), 0);
  EXPECT_EQ(c("u64_typed").data<uint64_t>()[0], 18446744073709551615ull);
  EXPECT_EQ(c("u32_typed").data<uint32_t>()[0], 4000000000u);
  EXPECT_EQ(c("bool_typed").dtype(), DType::boolean);
  EXPECT_EQ(c("bool_typed").to_int64_vector(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(c("u8_raw").to_int64_vector(), (std::vector<int64_t>{0, 200}));
  EXPECT_EQ(c("i16_raw").to_int64_vector(), (std::vector<int64_t>{-300}));
  EXPECT_EQ(c("bool_raw").to_int64_vector(), (std::vector<int64_t>{0, 1}));
  // The constants survive the text round trip bit-exactly.
  auto parsed = parse_graph(graph_to_string(*g));
  expect_same_graph(*g, *parsed);
}

TEST(OnnxImport, ConstantNodesBecomeConstants) {
  register_test_ops();
  auto m = make_model(13);
  auto* n1 = add_node(m, "Constant", {}, {"c_tensor"});
  *new_attr(n1, "value", onnx::AttributeProto::TENSOR)->mutable_t() =
      float_tensor("", {2}, {1.0f, 2.0f});
  attr_float(add_node(m, "Constant", {}, {"c_float"}), "value_float", 0.25f);
  attr_floats(add_node(m, "Constant", {}, {"c_floats"}), "value_floats", {1.0f, -1.0f, 3.0f});
  attr_int(add_node(m, "Constant", {}, {"c_int"}), "value_int", -5);
  attr_ints(add_node(m, "Constant", {}, {"c_ints"}), "value_ints", {4, 5});
  add_node(m, "TestAdd", {"c_tensor", "c_tensor"}, {"sum"}, "add");
  for (const char* o : {"c_float", "c_floats", "c_int", "c_ints", "sum"}) add_output(m, o);
  auto g = import_model(m);
  ASSERT_EQ(g->nodes().size(), 1u);  // Constant nodes are not nodes
  EXPECT_EQ(g->find_value("c_tensor")->constant->to_float_vector(), (std::vector<float>{1, 2}));
  EXPECT_EQ(g->find_value("c_float")->shape, Shape{});
  EXPECT_EQ(g->find_value("c_float")->constant->data<float>()[0], 0.25f);
  EXPECT_EQ(g->find_value("c_floats")->shape, (Shape{3}));
  EXPECT_EQ(g->find_value("c_int")->dtype, DType::i64);
  EXPECT_EQ(known_ints(g->find_value("c_int")), (std::vector<int64_t>{-5}));
  EXPECT_EQ(known_ints(g->find_value("c_ints")), (std::vector<int64_t>{4, 5}));
  // sum depends only on constants: known at compile time, node kept.
  ASSERT_NE(g->find_value("sum")->constant, nullptr);
  EXPECT_EQ(g->find_value("sum")->constant->to_float_vector(), (std::vector<float>{2, 4}));

  auto bad = make_model(13);
  auto* b = add_node(bad, "Constant", {}, {"c"}, "two_values");
  attr_int(b, "value_int", 1);
  attr_float(b, "value_float", 1.0f);
  EXPECT_EQ(error_of([&] { import_model(bad); }),
            "model.onnx: node 'two_values' (Constant) must have exactly one of the attributes "
            "value, value_float, value_floats, value_int, value_ints (has 2)");
  auto str = make_model(13);
  attr_string(add_node(str, "Constant", {}, {"c"}, "s"), "value_string", "hello");
  EXPECT_THROW(import_model(str), Unsupported);
}

TEST(OnnxImport, AttributesOfAllKindsAndNodeNames) {
  register_test_ops();
  auto m = make_model(13);
  add_input(m, "x", kF32, {int64_t{2}});
  auto* n = add_node(m, "TestIdentity", {"x"}, {"a"});  // unnamed
  attr_int(n, "i", -3);
  attr_float(n, "f", 0.1f);
  attr_string(n, "s", "nearest");
  attr_ints(n, "is", {1, 2});
  attr_floats(n, "fs", {0.5f});
  attr_strings(n, "ss", {"x", "y"});
  *new_attr(n, "t", onnx::AttributeProto::TENSOR)->mutable_t() = int64_tensor("", {2}, {7, 8});
  // An attribute without `type` (old exporters): the kind comes from the field that is set.
  auto* untyped = n->add_attribute();
  untyped->set_name("legacy");
  untyped->set_i(9);
  add_node(m, "TestIdentity", {"a"}, {"b"});  // unnamed
  add_node(m, "TestIdentity", {"b"}, {"c"}, "TestIdentity_2");
  add_node(m, "TestIdentity", {"c"}, {"d"});  // unnamed; must not take "TestIdentity_2"
  add_output(m, "d");
  auto g = import_model(m);
  ASSERT_EQ(g->nodes().size(), 4u);
  EXPECT_EQ(g->nodes()[0]->name, "TestIdentity_0");
  EXPECT_EQ(g->nodes()[1]->name, "TestIdentity_1");
  EXPECT_EQ(g->nodes()[2]->name, "TestIdentity_2");
  EXPECT_EQ(g->nodes()[3]->name, "TestIdentity_3");
  const Attributes& a = g->nodes()[0]->attrs;
  EXPECT_EQ(a.get_int("i", ""), -3);
  EXPECT_EQ(a.get_float_or("f", 0, ""), 0.1f);
  EXPECT_EQ(a.get_string_or("s", "", ""), "nearest");
  EXPECT_EQ(a.get_ints_or("is", {}, ""), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(a.get_floats_or("fs", {}, ""), (std::vector<float>{0.5f}));
  EXPECT_EQ(std::get<std::vector<std::string>>(a.all().at("ss")),
            (std::vector<std::string>{"x", "y"}));
  ASSERT_NE(a.get_tensor("t"), nullptr);
  EXPECT_EQ(a.get_tensor("t")->to_int64_vector(), (std::vector<int64_t>{7, 8}));
  EXPECT_EQ(a.get_int("legacy", ""), 9);
  auto parsed = parse_graph(graph_to_string(*g));
  expect_same_graph(*g, *parsed);
}

TEST(OnnxImport, NodesOutOfOrderAreSorted) {
  register_test_ops();
  auto m = make_model(13);
  add_input(m, "x", kF32, {int64_t{2}});
  add_node(m, "TestIdentity", {"a"}, {"b"}, "second");
  add_node(m, "TestIdentity", {"x"}, {"a"}, "first");
  add_output(m, "b");
  auto g = import_model(m);
  EXPECT_EQ(g->nodes()[0]->name, "first");
  EXPECT_EQ(g->nodes()[1]->name, "second");
}

// ---------------------------------------------------------------------------------------------
// Canonicalisation to the opset-17 forms

// Runs the reference interpreter on `g` with input "x" and returns output `name`.
Tensor run1(const Graph& g, const Tensor& x, const std::string& name) {
  auto out = ops::run_reference(g, {{"x", x}});
  return out.at(name);
}

TEST(Canonicalise, Clip6AttributesBecomeInputs) {
  const bool values = have_op("Clip");
  auto m = make_model(9);
  add_input(m, "x", kF32, {int64_t{5}});
  auto* n = add_node(m, "Clip", {"x"}, {"y"}, "clip");
  attr_float(n, "min", -0.25f);
  attr_float(n, "max", 1.0f);
  add_node(m, "Clip", {"y"}, {"z"}, "clip_max_only");
  attr_float(m.mutable_graph()->mutable_node(1), "max", 0.75f);
  add_output(m, "z");
  auto g = import_model(m);
  const Node* clip = g->find_node("clip");
  ASSERT_EQ(clip->inputs.size(), 3u);
  EXPECT_TRUE(clip->attrs.all().empty());
  ASSERT_TRUE(clip->inputs[1]->is_constant());
  EXPECT_EQ(clip->inputs[1]->shape, Shape{});
  EXPECT_EQ(clip->inputs[1]->constant->data<float>()[0], -0.25f);
  EXPECT_EQ(clip->inputs[2]->constant->data<float>()[0], 1.0f);
  const Node* clip2 = g->find_node("clip_max_only");
  ASSERT_EQ(clip2->inputs.size(), 3u);
  EXPECT_EQ(clip2->inputs[1], nullptr);  // min omitted
  EXPECT_EQ(clip2->inputs[2]->constant->data<float>()[0], 0.75f);
  if (values) {
    Tensor x = Tensor::from_floats({5}, {-2.0f, -0.5f, 0.0f, 0.5f, 2.0f});
    EXPECT_EQ(run1(*g, x, "z").to_float_vector(),
              (std::vector<float>{-0.25f, -0.25f, 0.0f, 0.5f, 0.75f}));
  }
}

TEST(Canonicalise, Slice1AttributesBecomeInputs) {
  const bool values = have_op("Slice");
  auto m = make_model(9);
  add_input(m, "x", kF32, {int64_t{3}, int64_t{4}});
  auto* n = add_node(m, "Slice", {"x"}, {"y"}, "slice");
  attr_ints(n, "starts", {0, 1});
  attr_ints(n, "ends", {2, 3});
  attr_ints(n, "axes", {0, 1});
  add_output(m, "y");
  auto g = import_model(m);
  const Node* s = g->find_node("slice");
  ASSERT_EQ(s->inputs.size(), 4u);
  EXPECT_TRUE(s->attrs.all().empty());
  EXPECT_EQ(known_ints(s->inputs[1]), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(known_ints(s->inputs[2]), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(known_ints(s->inputs[3]), (std::vector<int64_t>{0, 1}));
  if (values) {
    // x = 0..11 as 3x4; rows 0..1, cols 1..2 -> [1, 2, 5, 6]
    EXPECT_EQ(g->outputs[0]->shape, (Shape{2, 2}));
    EXPECT_EQ(run1(*g, iota_f32({3, 4}), "y").to_float_vector(), (std::vector<float>{1, 2, 5, 6}));
  }
}

TEST(Canonicalise, SqueezeUnsqueezeReduceSumAxesBecomeInputs) {
  const bool values = have_op("Squeeze") & have_op("Unsqueeze") & have_op("ReduceSum");
  auto m = make_model(11);
  add_input(m, "x", kF32, {int64_t{1}, int64_t{3}, int64_t{1}, int64_t{2}});
  attr_ints(add_node(m, "Squeeze", {"x"}, {"sq"}, "squeeze"), "axes", {0, 2});
  attr_ints(add_node(m, "Unsqueeze", {"sq"}, {"un"}, "unsqueeze"), "axes", {0});
  auto* r = add_node(m, "ReduceSum", {"un"}, {"sum"}, "reduce");
  attr_ints(r, "axes", {1});
  attr_int(r, "keepdims", 0);
  add_node(m, "Squeeze", {"x"}, {"sq_all"}, "squeeze_all");  // no axes: stays without input
  add_output(m, "sum");
  add_output(m, "sq_all");
  auto g = import_model(m);
  EXPECT_EQ(known_ints(g->find_node("squeeze")->input(1)), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(known_ints(g->find_node("unsqueeze")->input(1)), (std::vector<int64_t>{0}));
  const Node* red = g->find_node("reduce");
  EXPECT_EQ(known_ints(red->input(1)), (std::vector<int64_t>{1}));
  EXPECT_FALSE(red->attrs.has("axes"));
  EXPECT_EQ(red->attrs.get_int("keepdims", ""), 0);
  EXPECT_EQ(g->find_node("squeeze_all")->inputs.size(), 1u);
  if (values) {
    // x = 0..5 as [1,3,1,2] -> sq [3,2] -> un [1,3,2] -> sum over axis 1: [0+2+4, 1+3+5]
    EXPECT_EQ(g->find_value("sum")->shape, (Shape{1, 2}));
    EXPECT_EQ(run1(*g, iota_f32({1, 3, 1, 2}), "sum").to_float_vector(),
              (std::vector<float>{6, 9}));
    EXPECT_EQ(g->find_value("sq_all")->shape, (Shape{3, 2}));
  }
}

TEST(Canonicalise, Reduce18AxesInputBecomesAttribute) {
  const bool values = have_op("ReduceMax") & have_op("Identity");
  auto m = make_model(18);
  add_input(m, "x", kF32, {int64_t{2}, int64_t{3}});
  add_initializer(m, int64_tensor("axes", {1}, {1}));
  auto* r = add_node(m, "ReduceMax", {"x", "axes"}, {"mx"}, "rmax");
  attr_int(r, "keepdims", 1);
  auto* noop = add_node(m, "ReduceMean", {"x"}, {"same"}, "rnoop");
  attr_int(noop, "noop_with_empty_axes", 1);
  add_output(m, "mx");
  add_output(m, "same");
  auto g = import_model(m);
  const Node* rmax = g->find_node("rmax");
  EXPECT_EQ(rmax->inputs.size(), 1u);
  EXPECT_EQ(rmax->attrs.get_ints_or("axes", {}, ""), (std::vector<int64_t>{1}));
  EXPECT_EQ(rmax->attrs.get_int("keepdims", ""), 1);
  EXPECT_EQ(g->find_node("rnoop")->op_type, "Identity");
  EXPECT_TRUE(g->find_node("rnoop")->attrs.all().empty());
  if (values) {
    EXPECT_EQ(run1(*g, iota_f32({2, 3}), "mx").to_float_vector(), (std::vector<float>{2, 5}));
  }
  // A computed (not constant) axes input cannot be turned into an attribute.
  auto d = make_model(18);
  add_input(d, "x", kF32, {int64_t{2}, int64_t{3}});
  add_input(d, "axes", kI64, {int64_t{1}});
  add_node(d, "ReduceMax", {"x", "axes"}, {"mx"}, "rmax");
  add_output(d, "mx");
  try {
    import_model(d);
    FAIL();
  } catch (const Unsupported& e) {
    EXPECT_EQ(std::string(e.what()),
              "model.onnx: node 'rmax' (ReduceMax): input 1 (axes) must be known at compile time");
  }
}

TEST(Canonicalise, SplitAttributeAndNumOutputs) {
  const bool values = have_op("Split");
  auto m = make_model(11);
  add_input(m, "x", kF32, {int64_t{3}, int64_t{2}});
  auto* s = add_node(m, "Split", {"x"}, {"a", "b"}, "split");
  attr_ints(s, "split", {1, 2});
  add_output(m, "a");
  add_output(m, "b");
  auto g = import_model(m);
  EXPECT_EQ(known_ints(g->find_node("split")->input(1)), (std::vector<int64_t>{1, 2}));
  EXPECT_FALSE(g->find_node("split")->attrs.has("split"));
  if (values) {
    EXPECT_EQ(g->find_value("b")->shape, (Shape{2, 2}));
    auto out = ops::run_reference(*g, {{"x", iota_f32({3, 2})}});
    EXPECT_EQ(out["a"].to_float_vector(), (std::vector<float>{0, 1}));
    EXPECT_EQ(out["b"].to_float_vector(), (std::vector<float>{2, 3, 4, 5}));
  }
  // Opset 18: num_outputs=3 over 7 -> sizes ceil(7/3)=3, 3, 1; over 6 -> equal parts, no input.
  auto n = make_model(18);
  add_input(n, "x", kF32, {int64_t{7}});
  add_input(n, "x6", kF32, {int64_t{6}});
  attr_int(add_node(n, "Split", {"x"}, {"p", "q", "r"}, "uneven"), "num_outputs", 3);
  attr_int(add_node(n, "Split", {"x6"}, {"s", "t", "u"}, "even"), "num_outputs", 3);
  for (const char* o : {"p", "q", "r", "s", "t", "u"}) add_output(n, o);
  auto h = import_model(n);
  EXPECT_EQ(known_ints(h->find_node("uneven")->input(1)), (std::vector<int64_t>{3, 3, 1}));
  EXPECT_FALSE(h->find_node("uneven")->attrs.has("num_outputs"));
  EXPECT_EQ(h->find_node("even")->inputs.size(), 1u);
  EXPECT_FALSE(h->find_node("even")->attrs.has("num_outputs"));
  if (values) {
    EXPECT_EQ(h->find_value("r")->shape, (Shape{1}));
  }
}

TEST(Canonicalise, PadAttributesAndAxes) {
  const bool values = have_op("Pad");
  auto m = make_model(10);
  add_input(m, "x", kF32, {int64_t{1}, int64_t{2}});
  auto* p = add_node(m, "Pad", {"x"}, {"y"}, "pad");
  attr_ints(p, "pads", {0, 1, 0, 1});
  attr_float(p, "value", 2.5f);
  attr_string(p, "mode", "constant");
  add_output(m, "y");
  auto g = import_model(m);
  const Node* pad = g->find_node("pad");
  ASSERT_EQ(pad->inputs.size(), 3u);
  EXPECT_EQ(known_ints(pad->inputs[1]), (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(pad->inputs[2]->shape, Shape{});
  EXPECT_EQ(pad->inputs[2]->constant->data<float>()[0], 2.5f);
  EXPECT_EQ(pad->attrs.get_string_or("mode", "", ""), "constant");
  EXPECT_FALSE(pad->attrs.has("pads"));
  if (values) {
    EXPECT_EQ(run1(*g, Tensor::from_floats({1, 2}, {7, 8}), "y").to_float_vector(),
              (std::vector<float>{2.5f, 7, 8, 2.5f}));
  }
  // Opset 18: pads [1, 2] on axes [1] of a rank-2 input -> [0, 1, 0, 2] over all axes.
  auto n = make_model(18);
  add_input(n, "x", kF32, {int64_t{1}, int64_t{2}});
  add_initializer(n, int64_tensor("pads", {2}, {1, 2}));
  add_initializer(n, int64_tensor("axes", {1}, {-1}));
  add_node(n, "Pad", {"x", "pads", "", "axes"}, {"y"}, "pad18");
  add_output(n, "y");
  auto h = import_model(n);
  const Node* pad18 = h->find_node("pad18");
  ASSERT_EQ(pad18->inputs.size(), 2u);
  EXPECT_EQ(known_ints(pad18->inputs[1]), (std::vector<int64_t>{0, 1, 0, 2}));
  if (values) {
    EXPECT_EQ(run1(*h, Tensor::from_floats({1, 2}, {7, 8}), "y").to_float_vector(),
              (std::vector<float>{0, 7, 8, 0, 0}));
  }
}

TEST(Canonicalise, TopK1KBecomesInput) {
  const bool values = have_op("TopK");
  auto m = make_model(9);
  add_input(m, "x", kF32, {int64_t{5}});
  attr_int(add_node(m, "TopK", {"x"}, {"v", "i"}, "topk"), "k", 2);
  add_output(m, "v");
  add_output(m, "i");
  auto g = import_model(m);
  const Node* t = g->find_node("topk");
  ASSERT_EQ(t->inputs.size(), 2u);
  EXPECT_EQ(t->inputs[1]->shape, (Shape{1}));
  EXPECT_EQ(known_ints(t->inputs[1]), (std::vector<int64_t>{2}));
  EXPECT_FALSE(t->attrs.has("k"));
  if (values) {
    auto out = ops::run_reference(*g, {{"x", Tensor::from_floats({5}, {3, 9, 1, 7, 5})}});
    EXPECT_EQ(out["v"].to_float_vector(), (std::vector<float>{9, 7}));
    EXPECT_EQ(out["i"].to_int64_vector(), (std::vector<int64_t>{1, 3}));
  }
}

TEST(Canonicalise, Softmax11CoercesTo2D) {
  const bool values =
      have_op("Softmax") & have_op("Reshape") & have_op("LogSoftmax") & have_op("Hardmax");
  auto m = make_model(11);
  add_input(m, "x", kF32, {int64_t{2}, int64_t{3}, int64_t{2}});
  add_node(m, "Softmax", {"x"}, {"y"}, "softmax");  // default axis=1, not the last axis
  attr_int(add_node(m, "LogSoftmax", {"x"}, {"z"}, "logsoftmax"), "axis", -1);  // the last axis
  add_node(m, "Hardmax", {"y"}, {"h"}, "hardmax");
  add_output(m, "y");
  add_output(m, "z");
  add_output(m, "h");
  auto g = import_model(m);
  // softmax: Reshape(x, [2, 6]) -> Softmax(axis=1) -> Reshape(back to [2, 3, 2]).
  const Node* sm = g->find_node("softmax");
  ASSERT_NE(sm, nullptr);
  EXPECT_EQ(sm->attrs.get_int("axis", ""), 1);
  const Node* to2d = sm->inputs[0]->producer;
  ASSERT_NE(to2d, nullptr);
  EXPECT_EQ(to2d->op_type, "Reshape");
  EXPECT_EQ(to2d->inputs[0]->name, "x");
  EXPECT_EQ(known_ints(to2d->inputs[1]), (std::vector<int64_t>{2, 6}));
  const Value* y = g->find_value("y");
  ASSERT_NE(y->producer, nullptr);
  EXPECT_EQ(y->producer->op_type, "Reshape");
  EXPECT_EQ(y->producer->inputs[0], sm->outputs[0]);
  EXPECT_EQ(known_ints(y->producer->inputs[1]), (std::vector<int64_t>{2, 3, 2}));
  // logsoftmax over the last axis: one node, axis made explicit.
  const Node* lsm = g->find_node("logsoftmax");
  EXPECT_EQ(lsm->inputs[0]->name, "x");
  EXPECT_EQ(lsm->attrs.get_int("axis", ""), 2);
  EXPECT_EQ(g->find_node("hardmax")->op_type, "Hardmax");
  verify_graph(*g);
  if (values) {
    EXPECT_EQ(y->shape, (Shape{2, 3, 2}));
    // Opset-11 semantics: softmax over each row of 6 = x[b].flatten().
    Tensor x = iota_f32({2, 3, 2}, -1.0f, 0.25f);
    auto out = ops::run_reference(*g, {{"x", x}});
    for (int b = 0; b < 2; ++b) {
      double sum = 0;
      for (int j = 0; j < 6; ++j) sum += std::exp(static_cast<double>(x.data<float>()[b * 6 + j]));
      for (int j = 0; j < 6; ++j) {
        const double expected = std::exp(static_cast<double>(x.data<float>()[b * 6 + j])) / sum;
        EXPECT_NEAR(out["y"].data<float>()[b * 6 + j], expected, 1e-6);
      }
    }
    // Hardmax over rows of 6 (the input is increasing): 1 at the last element of each row.
    EXPECT_EQ(out["h"].to_float_vector(), (std::vector<float>{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1}));
  }
}

TEST(Canonicalise, Resize10AndUpsample) {
  const bool values = have_op("Resize");
  auto m = make_model(10);
  add_input(m, "x", kF32, {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{2}});
  add_initializer(m, float_tensor("scales", {4}, {1, 1, 2, 2}));
  attr_string(add_node(m, "Resize", {"x", "scales"}, {"y"}, "resize"), "mode", "nearest");
  add_output(m, "y");
  auto g = import_model(m);
  const Node* r = g->find_node("resize");
  ASSERT_EQ(r->inputs.size(), 3u);
  EXPECT_EQ(r->inputs[1]->shape, (Shape{0}));  // roi: empty
  EXPECT_EQ(r->inputs[2]->name, "scales");
  EXPECT_EQ(r->attrs.get_string_or("mode", "", ""), "nearest");
  EXPECT_EQ(r->attrs.get_string_or("coordinate_transformation_mode", "", ""), "asymmetric");
  EXPECT_EQ(r->attrs.get_string_or("nearest_mode", "", ""), "floor");
  if (values) {
    // Nearest, asymmetric, floor: out[i][j] = x[floor(i/2)][floor(j/2)].
    EXPECT_EQ(run1(*g, iota_f32({1, 1, 2, 2}), "y").to_float_vector(),
              (std::vector<float>{0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3}));
  }
  // Upsample-7: scales attribute, bilinear -> linear.
  auto u7 = make_model(7);
  add_input(u7, "x", kF32, {int64_t{1}, int64_t{1}, int64_t{1}, int64_t{2}});
  auto* up = add_node(u7, "Upsample", {"x"}, {"y"}, "up");
  attr_floats(up, "scales", {1, 1, 1, 2});
  attr_string(up, "mode", "bilinear");
  add_output(u7, "y");
  auto h = import_model(u7);
  const Node* ur = h->find_node("up");
  EXPECT_EQ(ur->op_type, "Resize");
  ASSERT_EQ(ur->inputs.size(), 3u);
  EXPECT_EQ(ur->inputs[1]->shape, (Shape{0}));
  EXPECT_EQ(ur->inputs[2]->constant->to_float_vector(), (std::vector<float>{1, 1, 1, 2}));
  EXPECT_EQ(ur->attrs.get_string_or("mode", "", ""), "linear");
  EXPECT_EQ(ur->attrs.get_string_or("coordinate_transformation_mode", "", ""), "asymmetric");
  EXPECT_FALSE(ur->attrs.has("nearest_mode"));
  EXPECT_FALSE(ur->attrs.has("scales"));
  if (values) {
    // Linear, asymmetric: x_in = x_out / 2 -> [0, 0.5, 1, 1] * (x1 - x0) + x0 (edge clamped).
    EXPECT_EQ(run1(*h, Tensor::from_floats({1, 1, 1, 2}, {2, 4}), "y").to_float_vector(),
              (std::vector<float>{2, 3, 4, 4}));
  }
  // Upsample-9: scales input, default mode nearest.
  auto u9 = make_model(9);
  add_input(u9, "x", kF32, {int64_t{1}, int64_t{1}, int64_t{1}, int64_t{2}});
  add_initializer(u9, float_tensor("s", {4}, {1, 1, 2, 1}));
  add_node(u9, "Upsample", {"x", "s"}, {"y"}, "up9");
  add_output(u9, "y");
  auto k = import_model(u9);
  const Node* u9r = k->find_node("up9");
  EXPECT_EQ(u9r->op_type, "Resize");
  EXPECT_EQ(u9r->inputs[2]->name, "s");
  EXPECT_EQ(u9r->attrs.get_string_or("nearest_mode", "", ""), "floor");
  // Resize-18 with antialias has no opset-17 form.
  auto r18 = make_model(18);
  add_input(r18, "x", kF32, {int64_t{1}, int64_t{1}, int64_t{2}, int64_t{2}});
  add_initializer(r18, float_tensor("scales", {4}, {1, 1, 2, 2}));
  attr_int(add_node(r18, "Resize", {"x", "", "scales"}, {"y"}, "aa"), "antialias", 1);
  add_output(r18, "y");
  EXPECT_EQ(error_of([&] { import_model(r18); }),
            "model.onnx: node 'aa' (Resize): antialias=1 is not supported");
}

onnx::ModelProto batchnorm_model(int64_t opset) {
  auto m = make_model(opset);
  add_input(m, "x", kF32, {int64_t{1}, int64_t{2}, int64_t{1}, int64_t{1}});
  add_initializer(m, float_tensor("scale", {2}, {2, 3}));
  add_initializer(m, float_tensor("bias", {2}, {1, -1}));
  add_initializer(m, float_tensor("mean", {2}, {0, 1}));
  add_initializer(m, float_tensor("var", {2}, {1, 4}));
  return m;
}

TEST(Canonicalise, BatchNormAndDropoutInferenceForms) {
  const bool values = have_op("BatchNormalization") & have_op("Dropout");
  auto m = batchnorm_model(7);
  auto* bn = add_node(m, "BatchNormalization", {"x", "scale", "bias", "mean", "var"},
                      {"y", "saved_mean", "", "", ""}, "bn");
  attr_int(bn, "spatial", 1);
  attr_int(bn, "is_test", 1);
  attr_float(bn, "epsilon", 0.0f);
  auto* dr = add_node(m, "Dropout", {"y"}, {"z"}, "drop");
  attr_float(dr, "ratio", 0.3f);
  add_output(m, "z");
  auto g = import_model(m);
  const Node* b = g->find_node("bn");
  EXPECT_EQ(b->outputs.size(), 1u);  // unused training statistics dropped
  EXPECT_FALSE(b->attrs.has("spatial"));
  EXPECT_FALSE(b->attrs.has("is_test"));
  EXPECT_EQ(b->attrs.get_float_or("epsilon", -1, ""), 0.0f);
  EXPECT_TRUE(g->find_node("drop")->attrs.all().empty());
  if (values) {
    // y = scale * (x - mean) / sqrt(var + eps) + bias = [2*(4-0)/1+1, 3*(5-1)/2-1] = [9, 5]
    EXPECT_EQ(run1(*g, Tensor::from_floats({1, 2, 1, 1}, {4, 5}), "z").to_float_vector(),
              (std::vector<float>{9, 5}));
  }
  auto s0 = batchnorm_model(8);
  attr_int(add_node(s0, "BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "bn0"),
           "spatial", 0);
  add_output(s0, "y");
  EXPECT_EQ(error_of([&] { import_model(s0); }),
            "model.onnx: node 'bn0' (BatchNormalization): spatial=0 (per-activation statistics) is "
            "not supported");
  auto used = batchnorm_model(9);
  add_node(used, "BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y", "rm"}, "bn1");
  add_output(used, "y");
  add_output(used, "rm");
  EXPECT_EQ(error_of([&] { import_model(used); }),
            "model.onnx: node 'bn1' (BatchNormalization): output 'rm' (training statistics) is "
            "used; tessel imports inference graphs only");
}

// Opset 6 -> 7: legacy broadcasting (broadcast/axis) becomes numpy broadcasting, Gemm's broadcast
// is dropped, PRelu-6's per-channel 1-D slope is reshaped to [C, 1, 1]; BatchNormalization-6 and
// Dropout-6 in training mode (is_test=0, the default) are refused.
TEST(Canonicalise, Opset6LegacyBroadcastGemmPReluAndTrainingModes) {
  const bool values =
      have_op("Add") & have_op("Mul") & have_op("Gemm") & have_op("PRelu") & have_op("Reshape");
  auto m = make_model(6);
  add_input(m, "x", kF32, {int64_t{1}, int64_t{2}, int64_t{2}, int64_t{2}});
  add_initializer(m, float_tensor("b", {2}, {10, 20}));
  add_initializer(m, float_tensor("slope", {2}, {0.5f, 0.25f}));
  // y = x + b with b along axis 1 (channels): b is reshaped to [2, 1, 1].
  auto* add = add_node(m, "Add", {"x", "b"}, {"y"}, "add");
  attr_int(add, "broadcast", 1);
  attr_int(add, "axis", 1);
  // z = y * y (no broadcast attribute: equal shapes).
  add_node(m, "Mul", {"y", "y"}, {"z"}, "mul");
  // w = z * bi along axis 1, with bi = Identity(b) computed by a node: the importer inserts a
  // Reshape node instead of reshaping a constant.
  add_node(m, "Identity", {"b"}, {"bi"}, "id");
  auto* mul2 = add_node(m, "Mul", {"z", "bi"}, {"w"}, "mul2");
  attr_int(mul2, "broadcast", 1);
  attr_int(mul2, "axis", 1);
  // p = PRelu(w - 1000, slope): per channel in opset 6.
  add_initializer(m, float_tensor("k", {1}, {1000}));
  auto* sub = add_node(m, "Sub", {"w", "k"}, {"v"}, "sub");
  attr_int(sub, "broadcast", 1);  // no axis: suffix alignment, as numpy
  add_node(m, "PRelu", {"v", "slope"}, {"p"}, "prelu");
  add_output(m, "p");
  auto g = import_model(m);
  EXPECT_FALSE(g->find_node("add")->attrs.has("broadcast"));
  EXPECT_FALSE(g->find_node("add")->attrs.has("axis"));
  EXPECT_EQ(g->find_node("add")->input(1)->shape, (Shape{2, 1, 1}));
  EXPECT_EQ(g->find_node("mul2")->input(1)->shape, (Shape{2, 1, 1}));
  ASSERT_NE(g->find_node("mul2")->input(1)->producer, nullptr);
  EXPECT_EQ(g->find_node("mul2")->input(1)->producer->op_type, "Reshape");
  EXPECT_EQ(g->find_node("prelu")->input(1)->shape, (Shape{2, 1, 1}));
  if (values) {
    // x = [1..8] as [1,2,2,2]: channel 0 = 1..4, channel 1 = 5..8.
    // y = x + [10 | 20] = [11..14 | 25..28]; z = y^2; w = z * [10 | 20];
    // v = w - 1000: channel 0: 10*[121,144,169,196] - 1000 = [210, 440, 690, 960];
    // channel 1: 20*[625,676,729,784] - 1000 = [11500, 12520, 13580, 14680]; all positive,
    // so PRelu passes them through.
    std::vector<float> x(8);
    for (int i = 0; i < 8; ++i) x[i] = static_cast<float>(i + 1);
    EXPECT_EQ(run1(*g, Tensor::from_floats({1, 2, 2, 2}, x), "p").to_float_vector(),
              (std::vector<float>{210, 440, 690, 960, 11500, 12520, 13580, 14680}));
  }
  // PRelu-6 alone: v = x, slope per channel: negatives scaled by 0.5 (channel 0), 0.25 (1).
  auto pm = make_model(6);
  add_input(pm, "x", kF32, {int64_t{1}, int64_t{2}, int64_t{1}, int64_t{2}});
  add_initializer(pm, float_tensor("slope", {2}, {0.5f, 0.25f}));
  add_node(pm, "PRelu", {"x", "slope"}, {"p"}, "prelu");
  add_output(pm, "p");
  auto pg = import_model(pm);
  if (values) {
    EXPECT_EQ(run1(*pg, Tensor::from_floats({1, 2, 1, 2}, {-4, 4, -4, 4}), "p").to_float_vector(),
              (std::vector<float>{-2, 4, -1, 4}));
  }
  // Gemm-6 with broadcast=1: the attribute is dropped.
  auto gm = make_model(6);
  add_input(gm, "x", kF32, {int64_t{1}, int64_t{2}});
  add_initializer(gm, float_tensor("w", {2, 2}, {1, 2, 3, 4}));
  add_initializer(gm, float_tensor("c", {2}, {100, 200}));
  attr_int(add_node(gm, "Gemm", {"x", "w", "c"}, {"y"}, "gemm"), "broadcast", 1);
  add_output(gm, "y");
  auto gg = import_model(gm);
  EXPECT_FALSE(gg->find_node("gemm")->attrs.has("broadcast"));
  if (values) {
    // [1, 1] x [[1, 2], [3, 4]] + [100, 200] = [104, 206]
    EXPECT_EQ(run1(*gg, Tensor::from_floats({1, 2}, {1, 1}), "y").to_float_vector(),
              (std::vector<float>{104, 206}));
  }
  // BatchNormalization-6 and Dropout-6 default to training mode (is_test=0): refused.
  auto bn6 = batchnorm_model(6);
  add_node(bn6, "BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"y"}, "bn6");
  add_output(bn6, "y");
  EXPECT_EQ(error_of([&] { import_model(bn6); }),
            "model.onnx: node 'bn6' (BatchNormalization): BatchNormalization-6 without is_test=1 "
            "runs in training mode (batch statistics); tessel imports inference graphs only");
  EXPECT_THROW(import_model(bn6), Unsupported);
  attr_int(bn6.mutable_graph()->mutable_node(0), "is_test", 1);
  EXPECT_NO_THROW(import_model(bn6));
  auto dr6 = batchnorm_model(6);
  add_node(dr6, "Dropout", {"x"}, {"y"}, "drop6");
  add_output(dr6, "y");
  EXPECT_EQ(error_of([&] { import_model(dr6); }),
            "model.onnx: node 'drop6' (Dropout): Dropout-6 without is_test=1 runs in training mode "
            "(a random mask); tessel imports inference graphs only");
  attr_float(dr6.mutable_graph()->mutable_node(0), "ratio", 0.0f);
  EXPECT_NO_THROW(import_model(dr6));
  // Bad legacy broadcasts name the node.
  auto bad = make_model(6);
  add_input(bad, "x", kF32, {int64_t{2}, int64_t{3}});
  add_initializer(bad, float_tensor("b", {3}, {1, 2, 3}));
  attr_int(add_node(bad, "Add", {"x", "b"}, {"y"}, "noflag"), "axis", 0);
  add_output(bad, "y");
  EXPECT_EQ(error_of([&] { import_model(bad); }),
            "model.onnx: node 'noflag' (Add): without broadcast=1 (opset 6) A and B must have the "
            "same shape, got [2,3] and [3]");
  auto bad2 = make_model(6);
  add_input(bad2, "x", kF32, {int64_t{2}, int64_t{3}});
  add_initializer(bad2, float_tensor("b", {3}, {1, 2, 3}));
  auto* a2 = add_node(bad2, "Add", {"x", "b"}, {"y"}, "axis0");
  attr_int(a2, "broadcast", 1);
  attr_int(a2, "axis", 0);
  add_output(bad2, "y");
  EXPECT_EQ(error_of([&] { import_model(bad2); }),
            "model.onnx: node 'axis0' (Add): B [3] does not broadcast into A [2,3] from axis 0");
}

// ---------------------------------------------------------------------------------------------
// load_tensor_pb, parse_dims

const std::string kAddData = "/usr/share/libonnx-testdata/data/node/test_add/test_data_set_0/";

TEST(LoadTensorPb, ReadsBackendTestData) {
  ASSERT_TRUE(std::filesystem::exists(kAddData))
      << kAddData << " missing: install libonnx-testdata";
  Tensor x = frontend::load_tensor_pb(kAddData + "input_0.pb");
  Tensor y = frontend::load_tensor_pb(kAddData + "input_1.pb");
  Tensor sum = frontend::load_tensor_pb(kAddData + "output_0.pb");
  for (const Tensor* t : {&x, &y, &sum}) {
    EXPECT_EQ(t->dtype(), DType::f32);
    EXPECT_EQ(t->shape(), (Shape{3, 4, 5}));
  }
  // The test generator draws x and y with numpy's randn after np.random.seed(0) (x first):
  // randn() = 1.764052345967664, 0.4001572083672233, ... stored as f32 bit patterns.
  const uint32_t x_bits[] = {0x3fe1cc78u, 0x3ecce168u, 0x3f7a8e93u};
  for (int i = 0; i < 3; ++i) {
    uint32_t b;
    std::memcpy(&b, x.data<float>() + i, 4);
    EXPECT_EQ(b, x_bits[i]) << i;
  }
  EXPECT_FLOAT_EQ(x.data<float>()[0], 1.7640524f);
  EXPECT_FLOAT_EQ(y.data<float>()[0], -0.67246044f);
  // output = x + y, computed by numpy in f32: bit-exact with a C++ f32 addition.
  for (int64_t i = 0; i < sum.numel(); ++i) {
    EXPECT_EQ(sum.data<float>()[i], x.data<float>()[i] + y.data<float>()[i]) << i;
  }
}

TEST(LoadTensorPb, TypedFieldsAndErrors) {
  const std::string path = ::testing::TempDir() + "/typed_tensor.pb";
  {
    onnx::TensorProto t = int64_tensor("idx", {2, 2}, {1, -2, 3, 1LL << 40});
    std::ofstream(path, std::ios::binary) << t.SerializeAsString();
  }
  Tensor t = frontend::load_tensor_pb(path);
  EXPECT_EQ(t.dtype(), DType::i64);
  EXPECT_EQ(t.shape(), (Shape{2, 2}));
  EXPECT_EQ(t.to_int64_vector(), (std::vector<int64_t>{1, -2, 3, 1LL << 40}));
  EXPECT_EQ(error_of([] { frontend::load_tensor_pb("/nonexistent/input_0.pb"); }),
            "cannot open tensor file '/nonexistent/input_0.pb': no such file");
  const std::string junk = ::testing::TempDir() + "/junk.pb";
  std::ofstream(junk, std::ios::binary) << "\xff\xff\xff garbage";
  EXPECT_EQ(error_of([&] { frontend::load_tensor_pb(junk); }),
            junk + ": not a valid serialized ONNX TensorProto");
}

// Lets this process's address space grow by at most `bytes` more (RLIMIT_AS relative to the
// current size, so it also works under ASan, whose shadow memory is reserved up front).
void limit_address_space_growth(uint64_t bytes) {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  statm >> pages;
  const rlimit limit{pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) + bytes, RLIM_INFINITY};
  setrlimit(RLIMIT_AS, &limit);
}

// Found by fuzzing (tests/fuzz/regressions/tensor_pb): a 72-byte TensorProto claiming a 3 GiB
// shape (below the 4 GiB limit) made the reader allocate 3 GiB of zeros before it found that the
// data was missing. The data is now checked first: in a child process that may grow by only
// 256 MiB, the reader ends with the error instead of failing to allocate.
TEST(LoadTensorPb, DataIsCheckedBeforeTheTensorIsAllocated) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(3);
  p.add_dims(int64_t{1} << 28);  // 3 x 2^28 floats = 3 GiB
  const std::string bytes = p.SerializeAsString();
  const std::string want =
      "t.pb: tensor '': float_data holds 0 values, but f32[3,268435456] has 805306368 elements";
  EXPECT_EXIT(
      {
        limit_address_space_growth(256u << 20);
        try {
          frontend::parse_tensor_pb(bytes, "t.pb");
        } catch (const Error& e) {
          std::_Exit(e.what() == want ? 0 : 3);
        }
        std::_Exit(4);
      },
      ::testing::ExitedWithCode(0), "");
  p.set_raw_data(std::string(8, '\0'));
  EXPECT_EXIT(
      {
        limit_address_space_growth(256u << 20);
        try {
          frontend::parse_tensor_pb(p.SerializeAsString(), "t.pb");
        } catch (const Error& e) {
          std::_Exit(std::string(e.what()).find("raw_data holds 8 bytes, but f32[3,268435456] "
                                                "needs 3221225472") != std::string::npos
                         ? 0
                         : 3);
        }
        std::_Exit(4);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(ParseDims, ValidAndInvalid) {
  EXPECT_EQ(frontend::parse_dims("1,3,48,192", "--input-shape x"), (Shape{1, 3, 48, 192}));
  EXPECT_EQ(frontend::parse_dims("7", "c"), (Shape{7}));
  EXPECT_EQ(frontend::parse_dims(" 2 , 5 ", "c"), (Shape{2, 5}));
  EXPECT_EQ(error_of([] { frontend::parse_dims("1,x,3", "--input-shape x"); }),
            "--input-shape x: bad shape '1,x,3': 'x' is not an integer (expected positive integers "
            "separated by commas, e.g. 1,3,48,192)");
  EXPECT_EQ(error_of([] { frontend::parse_dims("1,0", "c"); }),
            "c: bad shape '1,0': dimension 1 is 0, must be positive (expected positive integers "
            "separated by commas, e.g. 1,3,48,192)");
  EXPECT_CONTAINS(error_of([] { frontend::parse_dims("1,,2", "c"); }), "dimension 1 is empty");
  EXPECT_CONTAINS(error_of([] { frontend::parse_dims("1,2,", "c"); }), "dimension 2 is empty");
  EXPECT_CONTAINS(error_of([] { frontend::parse_dims("", "c"); }), "it is empty");
  EXPECT_CONTAINS(error_of([] { frontend::parse_dims("-3", "c"); }), "dimension 0 is -3");
  EXPECT_CONTAINS(error_of([] { frontend::parse_dims("2x3", "c"); }), "'2x3' is not an integer");
}

// ---------------------------------------------------------------------------------------------
// Whole models

TEST(OnnxImport, BackendTestModelRunsOnTheReference) {
  const std::string dir = "/usr/share/libonnx-testdata/data/node/test_add/";
  ASSERT_TRUE(std::filesystem::exists(dir)) << dir << " missing: install libonnx-testdata";
  ASSERT_NE(ops::find_op("Add"), nullptr) << "the op library is not registered";
  auto g = import_onnx(dir + "model.onnx");
  ASSERT_EQ(g->inputs.size(), 2u);
  auto out = ops::run_reference(*g, {{"x", frontend::load_tensor_pb(kAddData + "input_0.pb")},
                                     {"y", frontend::load_tensor_pb(kAddData + "input_1.pb")}});
  Tensor expected = frontend::load_tensor_pb(kAddData + "output_0.pb");
  EXPECT_TRUE(same_tensor(out.at("sum"), expected));
}

std::string model_path(const char* file) { return std::string(TESSEL_MODELS_DIR) + "/" + file; }

// The PP-OCR direction classifier: imports for batch 1 and 4, the Shape->Cast->Slice->Concat chain
// makes the Reshape target known, the text form round-trips exactly, and the reference runs.
TEST(RealModels, PpocrClassifier) {
  ASSERT_NE(ops::find_op("Conv"), nullptr) << "the op library is not registered";
  const std::string path = model_path("ch_ppocr_mobile_v2.0_cls_infer.onnx");
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " missing (scripts/fetch_models.sh)";
  for (int64_t batch : {1, 4}) {
    SCOPED_TRACE(batch);
    ImportOptions o;
    o.input_shapes["x"] = {batch, 3, 48, 192};
    auto g = import_onnx(path, o);
    verify_graph(*g);
    ASSERT_EQ(g->outputs.size(), 1u);
    EXPECT_EQ(g->outputs[0]->dtype, DType::f32);
    EXPECT_EQ(g->outputs[0]->shape, (Shape{batch, 2}));
    const Node* reshape = g->find_node("p2o.Reshape.36");
    ASSERT_NE(reshape, nullptr);
    ASSERT_NE(reshape->input(1), nullptr);
    ASSERT_TRUE(reshape->input(1)->constant) << "Reshape target not known at compile time";
    EXPECT_EQ(reshape->input(1)->constant->to_int64_vector()[0], batch);
    EXPECT_EQ(reshape->outputs[0]->shape.size(), 2u);
    EXPECT_EQ(reshape->outputs[0]->shape[0], batch);
    // Opset 9: no Clip keeps min/max attributes; Softmax (axis 1 of rank 2) is the last axis.
    for (const auto& n : g->nodes()) {
      if (n->op_type == "Clip") {
        EXPECT_FALSE(n->attrs.has("min"));
        EXPECT_FALSE(n->attrs.has("max"));
      }
      if (n->op_type == "Slice") {
        EXPECT_FALSE(n->attrs.has("starts"));
      }
    }
    const std::string text = graph_to_string(*g);
    auto parsed = parse_graph(text, "cls.tir");
    expect_same_graph(*g, *parsed);
    EXPECT_EQ(graph_to_string(*parsed), text);
    verify_graph(*parsed);

    Tensor x(DType::f32, {batch, 3, 48, 192});
    for (int64_t i = 0; i < x.numel(); ++i) {
      x.data<float>()[i] = static_cast<float>((i * 37) % 101) / 101.0f - 0.5f;
    }
    auto out = ops::run_reference(*g, {{"x", x}});
    const Tensor& p = out.at(g->outputs[0]->name);
    for (int64_t b = 0; b < batch; ++b) {
      // Softmax over 2 classes: probabilities in [0, 1] that sum to 1 (f32 rounding: 1e-6).
      const float p0 = p.data<float>()[2 * b];
      const float p1 = p.data<float>()[2 * b + 1];
      EXPECT_GE(p0, 0.0f);
      EXPECT_GE(p1, 0.0f);
      EXPECT_NEAR(p0 + p1, 1.0f, 1e-6f);
    }
  }
}

TEST(RealModels, HelloDeepa) {
  ASSERT_NE(ops::find_op("Conv"), nullptr) << "the op library is not registered";
  const std::string path = model_path("hello_deepa.onnx");
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " missing (scripts/fetch_models.sh)";
  ImportOptions o;
  o.input_shapes["onnx::Flatten_0"] = {1, 25, 96};  // the model's own static shape
  auto g = import_onnx(path, o);
  verify_graph(*g);
  ASSERT_EQ(g->inputs.size(), 1u);
  EXPECT_EQ(g->inputs[0]->shape, (Shape{1, 25, 96}));
  ASSERT_EQ(g->outputs.size(), 1u);
  EXPECT_EQ(g->outputs[0]->shape, (Shape{1, 1}));
  const std::string text = graph_to_string(*g);
  EXPECT_NE(text.find("%\"onnx::Flatten_0\": f32[1,25,96]"), std::string::npos);
  auto parsed = parse_graph(text, "deepa.tir");
  expect_same_graph(*g, *parsed);
  EXPECT_EQ(graph_to_string(*parsed), text);
  // Without the binding, the model's static shape is used as is.
  auto g2 = import_onnx(path);
  EXPECT_EQ(graph_to_string(*g2), text);
  Tensor x(DType::f32, {1, 25, 96});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = std::sin(static_cast<float>(i));
  auto out = ops::run_reference(*g, {{"onnx::Flatten_0", x}});
  const float y = out.at(g->outputs[0]->name).data<float>()[0];
  EXPECT_GE(y, 0.0f);  // the model ends in a Sigmoid
  EXPECT_LE(y, 1.0f);
}

}  // namespace
}  // namespace tessel
