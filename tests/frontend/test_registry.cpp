// Op registry, shape inference with data propagation, the verifier and the reference driver.
#include <gtest/gtest.h>

#include <thread>

#include "compiler/ops/op_registry.h"
#include "compiler/ops/reference.h"
#include "tests/frontend/test_util.h"

namespace tessel {
namespace {

using testing::register_test_ops;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(Registry, RegisterFindAndList) {
  register_test_ops();
  const ops::OpDef* add = ops::find_op("TestAdd");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->op_type, "TestAdd");
  EXPECT_TRUE(static_cast<bool>(add->reference));
  EXPECT_EQ(ops::find_op("NoSuchOp"), nullptr);
  auto all = ops::registered_ops();
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
  EXPECT_NE(std::find(all.begin(), all.end(), "TestIota"), all.end());
  // Registering the same op twice is a bug in the registering code.
  EXPECT_THROW(ops::register_op({"TestAdd", [](Node&) {}, nullptr}), InternalError);
  EXPECT_THROW(ops::register_op({"", [](Node&) {}, nullptr}), InternalError);
}

TEST(Registry, ConcurrentLookupsSeeOneRegistry) {
  register_test_ops();
  std::vector<const ops::OpDef*> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&seen, i] { seen[i] = ops::find_op("TestIdentity"); });
  }
  for (auto& t : threads) t.join();
  for (const auto* p : seen) EXPECT_EQ(p, seen[0]);
  EXPECT_NE(seen[0], nullptr);
}

TEST(Registry, InferNodeUnknownOpIsUnsupported) {
  Graph g;
  Value* x = g.add_value("x", DType::f32, {1});
  Value* y = g.add_value("y", DType::undefined, {});
  Node* n = g.add_node("FancyOp", "fancy_1", {x}, {y});
  try {
    ops::infer_node(*n);
    FAIL();
  } catch (const Unsupported& e) {
    EXPECT_EQ(std::string(e.what()), "unsupported op 'FancyOp' (node 'fancy_1')");
  }
  EXPECT_THROW(ops::run_reference_node(*n, {nullptr}), Unsupported);
}

TEST(Registry, BroadcastShapes) {
  using ops::broadcast_shapes;
  EXPECT_EQ(broadcast_shapes({2, 3, 4}, {4}, "c"), (Shape{2, 3, 4}));
  EXPECT_EQ(broadcast_shapes({2, 1, 4}, {3, 1}, "c"), (Shape{2, 3, 4}));
  EXPECT_EQ(broadcast_shapes({}, {5, 6}, "c"), (Shape{5, 6}));
  EXPECT_EQ(broadcast_shapes({1}, {0}, "c"), (Shape{0}));  // 1 broadcasts to 0
  EXPECT_EQ(broadcast_shapes({8, 1, 6, 1}, {7, 1, 5}, "c"), (Shape{8, 7, 6, 5}));
  EXPECT_EQ(error_of([] {
              ops::broadcast_shapes({2, 3}, {4, 3}, "Add 'a'");
            }),
            "Add 'a': shapes [2,3] and [4,3] cannot be broadcast (axis 0 of the result: 2 vs 4)");
  EXPECT_THROW(ops::broadcast_shapes({3}, {0}, "c"), Error);
}

// x(i64[3]) + k -> s ; iota(n=3) + k -> t (known) ; iota(n=5000) -> big (too large to propagate).
TEST(Registry, InferGraphPropagatesSmallKnownValues) {
  register_test_ops();
  Graph g;
  Value* x = g.add_value("x", DType::i64, {3});
  g.inputs.push_back(x);
  Value* k = g.add_constant("k", Tensor::from_int64s({3}, {10, 20, 30}));
  Value* s = g.add_value("s", DType::undefined, {});
  Value* iota = g.add_value("iota", DType::undefined, {});
  Value* t = g.add_value("t", DType::undefined, {});
  Value* big = g.add_value("big", DType::undefined, {});
  Value* nokernel = g.add_value("nk", DType::undefined, {});
  Value* unsup = g.add_value("unsup", DType::undefined, {});
  Value* rnd = g.add_value("rnd", DType::undefined, {});
  Attributes n3, n5000;
  n3.set("n", int64_t{3});
  n5000.set("n", int64_t{4097});
  g.add_node("TestAdd", "add_x", {x, k}, {s});
  g.add_node("TestIota", "iota3", {}, {iota}, n3);
  g.add_node("TestAdd", "add_known", {iota, k}, {t});
  g.add_node("TestIota", "iota_big", {}, {big}, n5000);
  g.add_node("TestNoKernel", "nk", {k}, {nokernel});
  g.add_node("TestUnsupported", "unsup", {k}, {unsup});
  g.add_node("RandomTestOp", "rnd", {}, {rnd});
  g.outputs = {s, t, big, nokernel, unsup, rnd};
  ops::infer_graph(g);
  EXPECT_EQ(s->dtype, DType::i64);
  EXPECT_EQ(s->shape, (Shape{3}));
  EXPECT_EQ(s->constant, nullptr);  // depends on a runtime input
  ASSERT_NE(t->constant, nullptr);  // 0..2 + 10,20,30, computed at compile time
  EXPECT_EQ(t->constant->to_int64_vector(), (std::vector<int64_t>{10, 21, 32}));
  EXPECT_NE(t->producer, nullptr);  // the node is kept
  EXPECT_EQ(g.nodes().size(), 7u);
  EXPECT_EQ(big->shape, (Shape{4097}));
  EXPECT_EQ(big->constant, nullptr);  // 4097 > kMaxPropagatedElements
  EXPECT_EQ(nokernel->constant, nullptr);
  EXPECT_EQ(unsup->constant, nullptr);
  EXPECT_EQ(rnd->constant, nullptr);  // Random*: never folded
  EXPECT_EQ(ops::kMaxPropagatedElements, 4096);

  // Re-inference clears values that are no longer known (here: k replaced by the runtime input).
  g.find_node("add_known")->inputs[1] = x;
  ops::infer_graph(g);
  EXPECT_EQ(t->constant, nullptr);
}

TEST(Registry, ShapeAndSizeAreKnownFromStaticShapes) {
  // The op library provides Shape/Size; data propagation computes them without running a kernel
  // on the (unknown) input data.
  ASSERT_TRUE(ops::find_op("Shape") && ops::find_op("Size")) << "the op library is not registered";
  Graph g;
  Value* x = g.add_value("x", DType::f32, {1, 3, 48, 192});
  g.inputs.push_back(x);
  Value* s = g.add_value("s", DType::undefined, {});
  Value* s_tail = g.add_value("s_tail", DType::undefined, {});
  Value* n = g.add_value("n", DType::undefined, {});
  Attributes tail;
  tail.set("start", int64_t{-2});
  g.add_node("Shape", "shape", {x}, {s});
  g.add_node("Shape", "shape_tail", {x}, {s_tail}, tail);
  g.add_node("Size", "size", {x}, {n});
  g.outputs = {s, s_tail, n};
  ops::infer_graph(g);
  ASSERT_NE(s->constant, nullptr);
  EXPECT_EQ(s->constant->to_int64_vector(), (std::vector<int64_t>{1, 3, 48, 192}));
  ASSERT_NE(s_tail->constant, nullptr);
  EXPECT_EQ(s_tail->constant->to_int64_vector(), (std::vector<int64_t>{48, 192}));
  ASSERT_NE(n->constant, nullptr);
  EXPECT_EQ(n->constant->to_int64_vector(), (std::vector<int64_t>{27648}));  // 1*3*48*192
}

// Shape -> Gather -> Concat -> Reshape: the reshape target is computed at compile time, so the
// Reshape shape rule sees a static shape (the pattern of the PP-OCR classifier's head).
TEST(Registry, DataPropagationThroughShapeGatherConcatReshape) {
  for (const char* op : {"Shape", "Gather", "Concat", "Reshape"}) {
    ASSERT_NE(ops::find_op(op), nullptr) << "the op library is not registered (" << op << ")";
  }
  Graph g;
  Value* x = g.add_value("x", DType::f32, {4, 3, 2, 5});
  g.inputs.push_back(x);
  Value* idx = g.add_constant("idx", Tensor::from_int64s({1}, {0}));
  Value* minus1 = g.add_constant("minus1", Tensor::from_int64s({1}, {-1}));
  Value* shape = g.add_value("shape", DType::undefined, {});
  Value* batch = g.add_value("batch", DType::undefined, {});
  Value* target = g.add_value("target", DType::undefined, {});
  Value* y = g.add_value("y", DType::undefined, {});
  Attributes axis0;
  axis0.set("axis", int64_t{0});
  g.add_node("Shape", "shape", {x}, {shape});
  g.add_node("Gather", "gather", {shape, idx}, {batch}, axis0);
  g.add_node("Concat", "concat", {batch, minus1}, {target}, axis0);
  g.add_node("Reshape", "reshape", {x, target}, {y});
  g.outputs = {y};
  ops::infer_graph(g);
  ASSERT_NE(batch->constant, nullptr);
  EXPECT_EQ(batch->constant->to_int64_vector(), (std::vector<int64_t>{4}));
  ASSERT_NE(target->constant, nullptr);
  EXPECT_EQ(target->constant->to_int64_vector(), (std::vector<int64_t>{4, -1}));
  EXPECT_EQ(y->shape, (Shape{4, 30}));
  EXPECT_EQ(y->constant, nullptr);  // depends on x's data
  verify_graph(g);
  // The reference run takes the known values and computes y = x reshaped.
  Tensor in(DType::f32, {4, 3, 2, 5});
  for (int64_t i = 0; i < in.numel(); ++i) in.data<float>()[i] = static_cast<float>(i) * 0.5f;
  auto out = ops::run_reference(g, {{"x", in}});
  ASSERT_EQ(out.count("y"), 1u);
  EXPECT_EQ(out["y"].shape(), (Shape{4, 30}));
  EXPECT_EQ(out["y"].to_float_vector(), in.to_float_vector());
}

// x, k -> add1 = x + k -> add2 = add1 + add1 -> outputs (add2, k).
struct AddGraph {
  Graph g;
  Value *x, *k, *a1, *a2;
  AddGraph() {
    register_test_ops();
    g.name = "adds";
    x = g.add_value("x", DType::f32, {2, 2});
    g.inputs.push_back(x);
    k = g.add_constant("k", Tensor::from_floats({2, 2}, {1, 2, 3, 4}));
    a1 = g.add_value("a1", DType::undefined, {});
    a2 = g.add_value("a2", DType::undefined, {});
    g.add_node("TestAdd", "add1", {x, k}, {a1});
    g.add_node("TestAdd", "add2", {a1, a1}, {a2});
    g.outputs = {a2, k};
    ops::infer_graph(g);
  }
};

TEST(Reference, RunsNodesInOrderAndChecksInputs) {
  AddGraph s;
  Tensor x = Tensor::from_floats({2, 2}, {0.5f, -1, 0, 10});
  auto out = ops::run_reference(s.g, {{"x", x}});
  ASSERT_EQ(out.size(), 2u);
  // a2 = 2 * (x + k) = 2 * [1.5, 1, 3, 14]
  EXPECT_EQ(out["a2"].to_float_vector(), (std::vector<float>{3, 2, 6, 28}));
  EXPECT_EQ(out["k"].to_float_vector(), (std::vector<float>{1, 2, 3, 4}));

  EXPECT_EQ(error_of([&] { ops::run_reference(s.g, {}); }),
            "reference run of graph 'adds': missing input 'x' (expected f32[2,2])");
  EXPECT_EQ(error_of([&] {
              ops::run_reference(s.g, {{"x", Tensor(DType::f32, {4})}});
            }),
            "reference run of graph 'adds': input 'x' is f32[4] but the graph expects f32[2,2]");
  EXPECT_EQ(error_of([&] {
              ops::run_reference(s.g, {{"x", Tensor(DType::i64, {2, 2})}});
            }),
            "reference run of graph 'adds': input 'x' is i64[2,2] but the graph expects f32[2,2]");
  EXPECT_EQ(error_of([&] {
              ops::run_reference(s.g, {{"x", x}, {"q", x}});
            }),
            "reference run of graph 'adds': 'q' is not a graph input (inputs: x)");
}

TEST(Reference, KnownValuesAreNotRecomputed) {
  register_test_ops();
  Graph g;
  g.name = "known";
  Value* k = g.add_constant("k", Tensor::from_floats({2}, {1, 2}));
  Value* a = g.add_value("a", DType::undefined, {});
  g.add_node("TestAdd", "add", {k, k}, {a});
  g.outputs = {a};
  const int before = testing::test_add_calls();
  ops::infer_graph(g);  // propagates a = [2, 4]: one kernel call
  EXPECT_EQ(testing::test_add_calls(), before + 1);
  auto out = ops::run_reference(g, {});
  EXPECT_EQ(testing::test_add_calls(), before + 1);  // taken from Value::constant
  EXPECT_EQ(out["a"].to_float_vector(), (std::vector<float>{2, 4}));
}

TEST(Reference, OpWithoutKernelNamesTheNode) {
  register_test_ops();
  Graph g;
  g.name = "nk";
  Value* x = g.add_value("x", DType::f32, {1});
  g.inputs.push_back(x);
  Value* y = g.add_value("y", DType::undefined, {});
  g.add_node("TestNoKernel", "no_kernel_3", {x}, {y});
  g.outputs = {y};
  ops::infer_graph(g);
  try {
    ops::run_reference(g, {{"x", Tensor(DType::f32, {1})}});
    FAIL();
  } catch (const Unsupported& e) {
    EXPECT_EQ(std::string(e.what()),
              "op 'TestNoKernel' (node 'no_kernel_3') has no reference kernel");
  }
}

// ---------------------------------------------------------------------------------------------
// Verifier

TEST(Verifier, AcceptsAWellFormedGraph) {
  AddGraph s;
  EXPECT_NO_THROW(verify_graph(s.g));
}

TEST(Verifier, UseBeforeDefinition) {
  AddGraph s;
  // Swap the two nodes: add2 reads a1 before add1 produces it.
  Graph& g = s.g;
  Node* add2 = g.find_node("add2");
  std::vector<Value*> in = add2->inputs;
  Value* out = add2->outputs[0];
  g.replace_all_uses(out, s.x);
  g.remove_node(add2);
  Value* a3 = g.add_value("a3", DType::f32, {2, 2});
  g.insert_node_before(g.find_node("add1"), "TestAdd", "add2", in, {a3});
  EXPECT_EQ(
      error_of([&] { verify_graph(g); }),
      "verify graph 'adds': TestAdd 'add2' uses %a1 before its producer TestAdd 'add1' (nodes "
      "are not in topological order)");
  g.topo_sort();
  EXPECT_NO_THROW(verify_graph(g));
}

TEST(Verifier, UndefinedValueAndForeignValue) {
  AddGraph s;
  Value* orphan = s.g.add_value("orphan", DType::f32, {2, 2});
  s.g.find_node("add2")->inputs[1] = orphan;
  EXPECT_EQ(error_of([&] { verify_graph(s.g); }),
            "verify graph 'adds': TestAdd 'add2' uses %orphan, which is neither a graph input, a "
            "constant nor a node output");
  Graph other;
  Value* foreign = other.add_value("f", DType::f32, {2, 2});
  s.g.find_node("add2")->inputs[1] = foreign;
  EXPECT_EQ(error_of([&] { verify_graph(s.g); }),
            "verify graph 'adds': TestAdd 'add2' input 1 is not a value of this graph");
}

TEST(Verifier, DuplicateNamesAndProducers) {
  {
    AddGraph s;
    s.a2->name = "a1";  // renamed behind the graph's back
    EXPECT_EQ(error_of([&] { verify_graph(s.g); }),
              "verify graph 'adds': two values are named %a1");
  }
  {
    AddGraph s;
    s.g.find_node("add2")->name = "add1";
    EXPECT_EQ(error_of([&] { verify_graph(s.g); }),
              "verify graph 'adds': two nodes are named 'add1'");
  }
  {
    AddGraph s;
    // add2 lists add1's output as its own output too: two producers for a1.
    s.g.find_node("add2")->outputs.push_back(s.a1);
    EXPECT_EQ(error_of([&] { verify_graph(s.g); }),
              "verify graph 'adds': TestAdd 'add2' output 1 (%a1) records producer TestAdd 'add1' "
              "output 0");
  }
  {
    AddGraph s;
    s.g.inputs.push_back(s.a1);
    EXPECT_EQ(error_of([&] { verify_graph(s.g); }),
              "verify graph 'adds': graph input %a1 is produced by TestAdd 'add1'");
  }
}

TEST(Verifier, OutputsMustBeProduced) {
  AddGraph s;
  Value* lost = s.g.add_value("lost", DType::f32, {1});
  s.g.outputs.push_back(lost);
  EXPECT_EQ(
      error_of([&] { verify_graph(s.g); }),
      "verify graph 'adds': graph output %lost is not produced by any node, input or constant");
}

TEST(Verifier, TypesMustMatchTheShapeRuleAndKnownData) {
  {
    AddGraph s;
    s.a2->shape = {4};
    EXPECT_EQ(error_of([&] { verify_graph(s.g); }),
              "verify graph 'adds': TestAdd 'add2': output %a2 is f32[4] but the shape rule gives "
              "f32[2,2]");
  }
  {
    AddGraph s;
    s.a1->dtype = DType::undefined;
    EXPECT_EQ(error_of([&] { verify_graph(s.g); }),
              "verify graph 'adds': TestAdd 'add1': value %a1 has element type undefined (expected "
              "a numeric type; was shape inference run?)");
  }
  {
    AddGraph s;
    s.k->shape = {4};
    EXPECT_EQ(error_of([&] { verify_graph(s.g); }),
              "verify graph 'adds': constant: value %k is declared f32[4] but its known data is "
              "f32[2,2]");
  }
  {
    // An unregistered op is checked for SSA only.
    Graph g;
    Value* x = g.add_value("x", DType::f32, {1});
    g.inputs.push_back(x);
    Value* y = g.add_value("y", DType::f32, {7});
    g.add_node("NotRegisteredAnywhere", "n", {x}, {y});
    g.outputs = {y};
    EXPECT_NO_THROW(verify_graph(g));
  }
}

}  // namespace
}  // namespace tessel
