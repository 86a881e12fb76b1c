// Robustness of every registered op: shape rules and kernels given arbitrary small inputs (wrong
// counts, ranks and dtypes; no attributes) must either work or throw tessel::Error (or
// tessel::Unsupported) - never crash, hang, throw another exception type (a broken invariant,
// std::out_of_range, ...) or disagree with each other about the outputs' dtype and shape.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/ops/op_registry.h"
#include "tests/ops/op_test_util.h"

namespace tessel::testing_ops {
namespace {

struct Spec {
  DType dtype;
  Shape shape;
};

const std::vector<Spec> kSpecs = {
    {DType::f32, {2, 3}},       {DType::f32, {1, 2, 3, 3}}, {DType::i64, {2}},
    {DType::i64, {}},           {DType::boolean, {2, 3}},   {DType::f32, {}},
    {DType::u8, {1, 2, 3, 3}},
};

Tensor filled(const Spec& s, double v) {
  Tensor t(s.dtype, s.shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, v);
  return t;
}

/// Runs shape rule and kernel; returns "" or a description of a forbidden outcome.
std::string probe(const std::string& op, const std::vector<Spec>& specs, double fill,
                  size_t n_outputs) {
  std::vector<Arg> args;
  for (const Spec& s : specs) args.push_back(cst(filled(s, fill)));
  OneNode n(op, args, {}, n_outputs);
  try {
    n.infer();
  } catch (const Error&) {
    return "";  // a clear rejection
  } catch (const std::exception& e) {
    return std::string("shape rule threw a non-tessel::Error: ") + e.what();
  }
  std::vector<const Tensor*> ptrs;
  for (const Tensor& t : n.input_tensors) ptrs.push_back(&t);
  std::vector<Tensor> outs;
  try {
    outs = ops::run_reference_node(*n.node, ptrs);
  } catch (const Error&) {
    return "";
  } catch (const std::exception& e) {
    return std::string("kernel threw a non-tessel::Error: ") + e.what();
  }
  if (outs.size() != n.node->outputs.size()) return "kernel returned a wrong number of outputs";
  for (size_t k = 0; k < outs.size(); ++k)
    if (outs[k].dtype() != n.node->outputs[k]->dtype || outs[k].shape() != n.node->outputs[k]->shape)
      return "kernel output " + std::to_string(k) + " is " + dtype_to_string(outs[k].dtype()) +
             shape_to_string(outs[k].shape()) + " but the shape rule says " +
             dtype_to_string(n.node->outputs[k]->dtype) +
             shape_to_string(n.node->outputs[k]->shape);
  return "";
}

TEST(Robustness, EveryOpRejectsArbitraryInputsCleanly) {
  const auto ops_list = ops::registered_ops();
  ASSERT_GT(ops_list.size(), 100u);
  int64_t probes = 0;
  for (const std::string& op : ops_list) {
    std::vector<std::vector<Spec>> combos = {{}};
    for (const Spec& a : kSpecs) {
      combos.push_back({a});
      for (const Spec& b : kSpecs) {
        combos.push_back({a, b});
        for (const Spec& c : kSpecs) combos.push_back({a, b, c});
      }
    }
    for (const auto& combo : combos)
      for (double fill : {0.0, 1.0})
        for (size_t n_out : {size_t{1}, size_t{2}}) {
          const std::string bad = probe(op, combo, fill, n_out);
          ++probes;
          if (!bad.empty()) {
            std::string desc;
            for (const Spec& s : combo)
              desc += std::string(dtype_to_string(s.dtype)) + shape_to_string(s.shape) + " ";
            ADD_FAILURE() << op << " with inputs " << desc << "(fill " << fill << ", " << n_out
                          << " outputs): " << bad;
          }
        }
  }
  // Every registered op x 400 input combinations x 2 fills x 2 output counts.
  EXPECT_EQ(probes, static_cast<int64_t>(ops_list.size()) * 400 * 4);
}

}  // namespace
}  // namespace tessel::testing_ops
