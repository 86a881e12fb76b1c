// Test-only ops (see test_util.h).
#include "tests/frontend/test_util.h"

#include <mutex>

namespace tessel::testing {

int& test_add_calls() {
  static int calls = 0;
  return calls;
}

namespace {

void same_as_input0(Node& n) {
  if (!n.input(0)) throw Error(n.describe() + ": missing input 0");
  n.outputs[0]->dtype = n.input(0)->dtype;
  n.outputs[0]->shape = n.input(0)->shape;
}

}  // namespace

void register_test_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    ops::register_op({"TestAdd",
                      [](Node& n) {
                        if (!n.input(0) || !n.input(1))
                          throw Error(n.describe() + ": needs 2 inputs");
                        if (n.input(0)->shape != n.input(1)->shape) {
                          throw Error(n.describe() + ": shapes differ");
                        }
                        same_as_input0(n);
                      },
                      [](const Node& n, const std::vector<const Tensor*>& in) {
                        ++test_add_calls();
                        Tensor out(in[0]->dtype(), in[0]->shape());
                        for (int64_t i = 0; i < out.numel(); ++i) {
                          out.set_from_double(i, in[0]->get_as_double(i) + in[1]->get_as_double(i));
                        }
                        return std::vector<Tensor>{out};
                      }});
    ops::register_op(
        {"TestIdentity", same_as_input0, [](const Node&, const std::vector<const Tensor*>& in) {
           return std::vector<Tensor>{*in[0]};
         }});
    ops::register_op({"TestIota",
                      [](Node& n) {
                        n.outputs[0]->dtype = DType::i64;
                        n.outputs[0]->shape = {n.attrs.get_int("n", n.name)};
                      },
                      [](const Node& n, const std::vector<const Tensor*>&) {
                        const int64_t count = n.attrs.get_int("n", n.name);
                        Tensor t(DType::i64, {count});
                        for (int64_t i = 0; i < count; ++i) t.data<int64_t>()[i] = i;
                        return std::vector<Tensor>{t};
                      }});
    ops::register_op({"TestNoKernel", same_as_input0, nullptr});
    ops::register_op({"TestUnsupported", same_as_input0,
                      [](const Node& n, const std::vector<const Tensor*>&) -> std::vector<Tensor> {
                        throw Unsupported(n.describe() + ": never computes");
                      }});
    ops::register_op({"RandomTestOp",
                      [](Node& n) {
                        n.outputs[0]->dtype = DType::f32;
                        n.outputs[0]->shape = {2};
                      },
                      [](const Node&, const std::vector<const Tensor*>&) {
                        return std::vector<Tensor>{Tensor::from_floats({2}, {0.25f, 0.5f})};
                      }});
  });
}

}  // namespace tessel::testing
