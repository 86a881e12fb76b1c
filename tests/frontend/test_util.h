// Helpers shared by the frontend/IR tests: structural graph comparison and test-only ops.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"

namespace tessel::testing {

/// True when both tensors have the same dtype, shape and bytes (bit-exact, NaN payloads included).
inline bool same_tensor(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         (a.nbytes() == 0 || std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0);
}

/// Bit-exact attribute equality (floats compared by their bits).
inline bool same_attr(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  if (const auto* f = std::get_if<float>(&a)) {
    return std::memcmp(f, &std::get<float>(b), sizeof(float)) == 0;
  }
  if (const auto* fs = std::get_if<std::vector<float>>(&a)) {
    const auto& gs = std::get<std::vector<float>>(b);
    return fs->size() == gs.size() &&
           (fs->empty() || std::memcmp(fs->data(), gs.data(), fs->size() * sizeof(float)) == 0);
  }
  if (const auto* t = std::get_if<Tensor>(&a)) return same_tensor(*t, std::get<Tensor>(b));
  if (const auto* g = std::get_if<GraphAttr>(&a)) {  // subgraphs: equal text forms
    const GraphAttr& h = std::get<GraphAttr>(b);
    return *g && h && graph_to_string(**g) == graph_to_string(*h);
  }
  if (const auto* i = std::get_if<int64_t>(&a)) return *i == std::get<int64_t>(b);
  if (const auto* s = std::get_if<std::string>(&a)) return *s == std::get<std::string>(b);
  if (const auto* is = std::get_if<std::vector<int64_t>>(&a)) {
    return *is == std::get<std::vector<int64_t>>(b);
  }
  return std::get<std::vector<std::string>>(a) == std::get<std::vector<std::string>>(b);
}

inline std::string value_name(const Value* v) { return v ? v->name : std::string("<omitted>"); }

/// Expects `b` to equal `a` in structure, names, dtypes, shapes, attributes and constant bytes.
inline void expect_same_graph(const Graph& a, const Graph& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.opset, b.opset);
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (size_t i = 0; i < a.inputs.size(); ++i) EXPECT_EQ(a.inputs[i]->name, b.inputs[i]->name);
  ASSERT_EQ(a.outputs.size(), b.outputs.size());
  for (size_t i = 0; i < a.outputs.size(); ++i) EXPECT_EQ(a.outputs[i]->name, b.outputs[i]->name);
  size_t compared = 0;
  for (const auto& va : a.values()) {
    if (!va->producer && !va->constant &&
        std::find(a.inputs.begin(), a.inputs.end(), va.get()) == a.inputs.end()) {
      continue;  // dead value: not part of the printed graph
    }
    const Value* vb = b.find_value(va->name);
    ASSERT_NE(vb, nullptr) << "value %" << va->name << " missing";
    EXPECT_EQ(va->dtype, vb->dtype) << va->name;
    EXPECT_EQ(va->shape, vb->shape) << va->name;
    ASSERT_EQ(va->constant != nullptr, vb->constant != nullptr) << va->name;
    if (va->constant) {
      EXPECT_TRUE(same_tensor(*va->constant, *vb->constant)) << va->name;
    }
    ASSERT_EQ(va->producer != nullptr, vb->producer != nullptr) << va->name;
    if (va->producer) {
      EXPECT_EQ(va->producer->name, vb->producer->name);
      EXPECT_EQ(va->producer_output, vb->producer_output);
    }
    ++compared;
  }
  EXPECT_GT(compared + a.nodes().size(), 0u);
  ASSERT_EQ(a.nodes().size(), b.nodes().size());
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const Node& na = *a.nodes()[i];
    const Node& nb = *b.nodes()[i];
    EXPECT_EQ(na.name, nb.name);
    EXPECT_EQ(na.op_type, nb.op_type);
    ASSERT_EQ(na.inputs.size(), nb.inputs.size()) << na.name;
    for (size_t k = 0; k < na.inputs.size(); ++k) {
      EXPECT_EQ(value_name(na.inputs[k]), value_name(nb.inputs[k])) << na.name;
    }
    ASSERT_EQ(na.outputs.size(), nb.outputs.size()) << na.name;
    for (size_t k = 0; k < na.outputs.size(); ++k) {
      EXPECT_EQ(na.outputs[k]->name, nb.outputs[k]->name) << na.name;
    }
    ASSERT_EQ(na.attrs.all().size(), nb.attrs.all().size()) << na.name;
    for (const auto& [key, value] : na.attrs.all()) {
      ASSERT_TRUE(nb.attrs.has(key)) << na.name << " attribute " << key;
      EXPECT_TRUE(same_attr(value, nb.attrs.all().at(key))) << na.name << " attribute " << key;
    }
  }
}

/// Registers `def` unless an op of that name is already registered (by the op library or an
/// earlier test), so tests can rely on an op whether or not the library provides it yet.
inline void ensure_op(ops::OpDef def) {
  if (!ops::find_op(def.op_type)) ops::register_op(std::move(def));
}

/// Registers the test-only ops (idempotent; names never clash with the op library):
///   TestAdd(a, b) -> a + b        same shapes, f32 or i64
///   TestIdentity(x) -> x
///   TestIota() -> i64[n] 0..n-1   attribute n, no inputs
///   TestNoKernel(x) -> x's type   a shape rule without a reference kernel
///   TestUnsupported(x) -> x       a kernel that always throws tessel::Unsupported
///   RandomTestOp() -> f32[2]      named Random*: never computed at compile time
/// and counts TestAdd kernel calls in test_add_calls().
void register_test_ops();
int& test_add_calls();

}  // namespace tessel::testing
