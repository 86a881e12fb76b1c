// Tensor, Attributes and Graph unit tests.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "compiler/ir/graph.h"
#include "compiler/support/fp16.h"
#include "tests/frontend/test_util.h"

namespace tessel {
namespace {

TEST(DType, SizesNamesAndRoundTrip) {
  EXPECT_EQ(dtype_size(DType::f32), 4);
  EXPECT_EQ(dtype_size(DType::f16), 2);
  EXPECT_EQ(dtype_size(DType::f64), 8);
  EXPECT_EQ(dtype_size(DType::boolean), 1);
  EXPECT_EQ(dtype_size(DType::u64), 8);
  EXPECT_EQ(dtype_size(DType::string), 0);
  for (DType t : {DType::f32, DType::u8, DType::i8, DType::u16, DType::i16, DType::i32, DType::i64,
                  DType::boolean, DType::f16, DType::f64, DType::u32, DType::u64}) {
    EXPECT_EQ(dtype_from_string(dtype_to_string(t)), t);
  }
  EXPECT_STREQ(dtype_to_string(DType::boolean), "bool");
  EXPECT_THROW(dtype_from_string("float32"), Error);
  EXPECT_TRUE(dtype_is_float(DType::f16));
  EXPECT_FALSE(dtype_is_float(DType::i32));
}

TEST(Shape, NumelAndString) {
  EXPECT_EQ(shape_numel({}), 1);
  EXPECT_EQ(shape_numel({1, 3, 48, 192}), 27648);
  EXPECT_EQ(shape_numel({4, 0}), 0);
  EXPECT_EQ(shape_to_string({1, 3, 48, 192}), "[1,3,48,192]");
  EXPECT_EQ(shape_to_string({}), "[]");
}

TEST(Tensor, ConstructionZeroInitialisedAndChecked) {
  Tensor t(DType::i32, {2, 3});
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(t.rank(), 2);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t.data<int32_t>()[i], 0);
  EXPECT_THROW(Tensor(DType::f32, {2, -1}), Error);
  EXPECT_THROW(Tensor(DType::string, {2}), Unsupported);
  EXPECT_THROW(Tensor(DType::undefined, {2}), Error);
}

TEST(Tensor, GetSetAsDouble) {
  Tensor h(DType::f16, {3});
  h.set_from_double(0, 1.5);
  h.set_from_double(1, 65520.0);  // rounds to +inf in f16 (max finite is 65504)
  h.set_from_double(2, 0.1);      // nearest f16 is 0x2e66 = 0.0999755859375
  EXPECT_EQ(h.data<uint16_t>()[0], 0x3e00);
  EXPECT_EQ(h.data<uint16_t>()[1], 0x7c00);
  EXPECT_EQ(h.data<uint16_t>()[2], 0x2e66);
  EXPECT_DOUBLE_EQ(h.get_as_double(2), 0.0999755859375);

  Tensor i8(DType::i8, {3});
  i8.set_from_double(0, -3.7);   // truncation toward zero, as ONNX Cast
  i8.set_from_double(1, 300.0);  // saturates (out of range)
  i8.set_from_double(2, std::nan(""));
  EXPECT_EQ(i8.data<int8_t>()[0], -3);
  EXPECT_EQ(i8.data<int8_t>()[1], 127);
  EXPECT_EQ(i8.data<int8_t>()[2], 0);

  Tensor b(DType::boolean, {2});
  b.set_from_double(0, 0.5);
  EXPECT_EQ(b.data<uint8_t>()[0], 1);
  EXPECT_EQ(b.data<uint8_t>()[1], 0);
  EXPECT_EQ(b.get_as_double(0), 1.0);
  EXPECT_THROW(b.get_as_double(2), InternalError);
}

TEST(Tensor, VectorsFactoriesAndReshape) {
  Tensor f = Tensor::from_floats({2, 2}, {1.0f, -2.5f, 3.0f, 4.25f});
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_EQ(f.to_float_vector(), (std::vector<float>{1.0f, -2.5f, 3.0f, 4.25f}));
  EXPECT_THROW(f.to_int64_vector(), Error);
  EXPECT_THROW(Tensor::from_floats({3}, {1.0f}), Error);

  Tensor i = Tensor::from_int64s({3}, {5, -6, 7});
  EXPECT_EQ(i.to_int64_vector(), (std::vector<int64_t>{5, -6, 7}));
  EXPECT_EQ(i.to_float_vector(), (std::vector<float>{5.0f, -6.0f, 7.0f}));

  Tensor s = Tensor::scalar_f32(2.5f);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.data<float>()[0], 2.5f);

  Tensor r = f.reshaped({4});
  EXPECT_EQ(r.shape(), (Shape{4}));
  EXPECT_EQ(r.to_float_vector(), f.to_float_vector());
  EXPECT_THROW(f.reshaped({3}), Error);
}

TEST(Tensor, CastFollowsOnnxCast) {
  Tensor f = Tensor::from_floats({5}, {-1.9f, 2.7f, 0.0f, 1e10f, 0.1f});
  Tensor i = f.cast(DType::i32);
  // Truncation toward zero; 1e10 is out of int32 range and saturates (ONNX leaves it undefined).
  EXPECT_EQ(i.to_int64_vector(), (std::vector<int64_t>{-1, 2, 0, 2147483647, 0}));
  Tensor b = f.cast(DType::boolean);
  EXPECT_EQ(b.to_int64_vector(), (std::vector<int64_t>{1, 1, 0, 1, 1}));
  Tensor h = f.cast(DType::f16);
  EXPECT_EQ(h.data<uint16_t>()[0], f32_to_f16_bits(-1.9f));
  EXPECT_EQ(h.data<uint16_t>()[3], 0x7c00);  // 1e10 overflows f16 to +inf
  Tensor back = h.cast(DType::f32);
  EXPECT_EQ(back.data<float>()[1], round_to_f16(2.7f));
  // i64 -> f64 -> i64 keeps values exactly below 2^53; i64 -> u8 wraps like a C cast.
  Tensor big = Tensor::from_int64s({2}, {(int64_t{1} << 52) + 1, 258});
  EXPECT_EQ(big.cast(DType::f64).cast(DType::i64).to_int64_vector(), big.to_int64_vector());
  EXPECT_EQ(big.cast(DType::u8).data<uint8_t>()[1], 2);
  // Same-dtype cast is a copy.
  EXPECT_TRUE(testing::same_tensor(f.cast(DType::f32), f));
}

TEST(Attributes, TypedGettersDefaultsAndErrors) {
  Attributes a;
  a.set("group", int64_t{2});
  a.set("alpha", 0.5f);
  a.set("mode", std::string("nearest"));
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  a.set("scales", std::vector<float>{1.0f, 2.0f});
  a.set("value", Tensor::scalar_f32(3.0f));
  EXPECT_EQ(a.get_int("group", "n"), 2);
  EXPECT_EQ(a.get_int_or("axis", 1, "n"), 1);  // ONNX default when absent
  EXPECT_EQ(a.get_float_or("alpha", 0.2f, "n"), 0.5f);
  EXPECT_EQ(a.get_float_or("beta", 0.2f, "n"), 0.2f);
  EXPECT_EQ(a.get_string_or("mode", "linear", "n"), "nearest");
  EXPECT_EQ(a.get_ints_or("pads", {}, "n"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(a.get_ints_or("strides", {1, 1}, "n"), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(a.get_floats_or("scales", {}, "n"), (std::vector<float>{1.0f, 2.0f}));
  ASSERT_NE(a.get_tensor("value"), nullptr);
  EXPECT_EQ(a.get_tensor("value")->data<float>()[0], 3.0f);
  EXPECT_EQ(a.get_tensor("absent"), nullptr);
  EXPECT_TRUE(a.has("mode"));
  a.erase("mode");
  EXPECT_FALSE(a.has("mode"));

  // Missing required / type mismatch: errors name the node and the attribute.
  try {
    a.get_int("axis", "conv_3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv_3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("axis"), std::string::npos) << e.what();
  }
  try {
    a.get_float_or("group", 1.0f, "conv_3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "node 'conv_3': attribute 'group' is of kind int, expected float");
  }
  EXPECT_THROW(a.get_ints_or("alpha", {}, "n"), Error);
  EXPECT_THROW(a.get_string_or("pads", "", "n"), Error);
  EXPECT_THROW(a.get_floats_or("pads", {}, "n"), Error);
  EXPECT_THROW(a.get_tensor("group"), Error);
}

// x -> A -> B -> y, with an unused constant and a dead node D.
struct SmallGraph {
  Graph g;
  Value *x, *c, *a, *b, *d;
  Node *na, *nb, *nd;
  SmallGraph() {
    g.name = "small";
    x = g.add_value("x", DType::f32, {2});
    g.inputs.push_back(x);
    c = g.add_constant("c", Tensor::from_floats({2}, {1, 2}));
    a = g.add_value("a", DType::f32, {2});
    b = g.add_value("b", DType::f32, {2});
    d = g.add_value("d", DType::f32, {2});
    na = g.add_node("TestAdd", "A", {x, c}, {a});
    nb = g.add_node("TestIdentity", "B", {a}, {b});
    nd = g.add_node("TestIdentity", "D", {a}, {d});
    g.outputs.push_back(b);
  }
};

TEST(Graph, UniqueNamesAndLookup) {
  Graph g;
  Value* v1 = g.add_value("t", DType::f32, {1});
  Value* v2 = g.add_value("t", DType::f32, {1});
  Value* v3 = g.add_value("t", DType::f32, {1});
  EXPECT_EQ(v1->name, "t");
  EXPECT_EQ(v2->name, "t_1");
  EXPECT_EQ(v3->name, "t_2");
  EXPECT_EQ(g.unique_value_name("t"), "t_3");
  EXPECT_EQ(g.unique_value_name("u"), "u");
  EXPECT_EQ(g.find_value("t_1"), v2);
  EXPECT_EQ(g.find_value("nope"), nullptr);
  Node* n0 = g.add_node("Relu", "", {v1}, {v2});
  Node* n1 = g.add_node("Relu", "", {v2}, {v3});
  EXPECT_EQ(n0->name, "Relu_0");
  EXPECT_EQ(n1->name, "Relu_1");
  Value* v4 = g.add_value("w", DType::f32, {1});
  Node* n2 = g.add_node("Relu", "Relu_0", {v3}, {v4});
  EXPECT_EQ(n2->name, "Relu_0_1");
  EXPECT_EQ(g.find_node("Relu_1"), n1);
  EXPECT_EQ(n1->describe(), "Relu 'Relu_1'");
  EXPECT_EQ(v3->producer, n1);
  EXPECT_EQ(v3->producer_output, 0);
  // A value can have only one producer.
  EXPECT_THROW(g.add_node("Relu", "again", {v1}, {v3}), Error);
}

TEST(Graph, UsersReplaceAllUsesAndOutputs) {
  SmallGraph s;
  auto users = s.g.users(s.a);
  ASSERT_EQ(users.size(), 2u);
  EXPECT_EQ(users[0], s.nb);
  EXPECT_EQ(users[1], s.nd);
  // Replacing b (a graph output) also updates the graph outputs.
  Value* b2 = s.g.add_value("b2", DType::f32, {2});
  s.g.replace_all_uses(s.b, b2);
  EXPECT_EQ(s.g.outputs[0], b2);
  s.g.replace_all_uses(s.a, s.x);
  EXPECT_EQ(s.nb->inputs[0], s.x);
  EXPECT_EQ(s.nd->inputs[0], s.x);
  EXPECT_TRUE(s.g.users(s.a).empty());
}

TEST(Graph, InsertBeforeAndRemoveNode) {
  SmallGraph s;
  Value* e = s.g.add_value("e", DType::f32, {2});
  Node* ne = s.g.insert_node_before(s.nb, "TestIdentity", "E", {s.a}, {e});
  ASSERT_EQ(s.g.nodes().size(), 4u);
  EXPECT_EQ(s.g.nodes()[1].get(), ne);
  EXPECT_EQ(s.g.nodes()[2].get(), s.nb);
  // D's output is unused: it can be removed; A's output is still used: removing it is a bug.
  s.g.remove_node(s.nd);
  EXPECT_EQ(s.g.nodes().size(), 3u);
  EXPECT_EQ(s.d->producer, nullptr);
  EXPECT_EQ(s.g.find_node("D"), nullptr);
  EXPECT_THROW(s.g.remove_node(s.na), InternalError);
}

TEST(Graph, RemoveDeadKeepsLiveNodesInputsAndValues) {
  SmallGraph s;
  Value* unused_const = s.g.add_constant("unused", Tensor::scalar_f32(1));
  (void)unused_const;
  Value* y = s.g.add_value("unused_input", DType::f32, {1});
  s.g.inputs.push_back(y);
  s.g.remove_dead();
  ASSERT_EQ(s.g.nodes().size(), 2u);
  EXPECT_EQ(s.g.nodes()[0]->name, "A");
  EXPECT_EQ(s.g.nodes()[1]->name, "B");
  EXPECT_EQ(s.g.find_value("d"), nullptr);
  EXPECT_EQ(s.g.find_value("unused"), nullptr);
  EXPECT_NE(s.g.find_value("unused_input"), nullptr);  // graph inputs are the interface
  EXPECT_NE(s.g.find_value("c"), nullptr);
  EXPECT_EQ(s.g.values().size(), 5u);  // x, c, a, b, unused_input
}

TEST(Graph, TopoSortRestoresOrderAndDetectsCycles) {
  Graph g;
  Value* x = g.add_value("x", DType::f32, {1});
  g.inputs.push_back(x);
  Value* a = g.add_value("a", DType::f32, {1});
  Value* b = g.add_value("b", DType::f32, {1});
  Value* c = g.add_value("c", DType::f32, {1});
  // Added in reverse order: C(b), B(a), A(x), plus an independent node I(x) first.
  Value* i = g.add_value("i", DType::f32, {1});
  g.add_node("TestIdentity", "I", {x}, {i});
  g.add_node("TestIdentity", "C", {b}, {c});
  g.add_node("TestIdentity", "B", {a}, {b});
  g.add_node("TestIdentity", "A", {x}, {a});
  g.topo_sort();
  std::vector<std::string> order;
  for (const auto& n : g.nodes()) order.push_back(n->name);
  EXPECT_EQ(order, (std::vector<std::string>{"I", "A", "B", "C"}));

  // A -> B -> A is a cycle.
  Graph h;
  h.name = "cyclic";
  Value* p = h.add_value("p", DType::f32, {1});
  Value* q = h.add_value("q", DType::f32, {1});
  h.add_node("TestIdentity", "P", {q}, {p});
  h.add_node("TestIdentity", "Q", {p}, {q});
  try {
    h.topo_sort();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("TestIdentity 'P'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessel
