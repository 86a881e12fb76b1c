// The NPU's mixed-precision plan (compiler/backend/npu/precision.h): vector kernels keep fp32
// sources in fp32, the cube takes fp16, conversion kernels sit between, and float64 inputs are
// computed in fp32 or refused when their values do not fit. Values checked against the reference
// interpreter and against hand-derived numbers.
#include <cmath>
#include <string>

#include "compiler/backend/npu/precision.h"
#include "compiler/driver/runner.h"
#include "compiler/support/error.h"
#include "tests/compiler/npu_test_util.h"

namespace tessel::testing {
namespace {

/// Vector instructions of `mod` by element type: {f16 count, f32 count}.
std::pair<int, int> vector_dtypes(const npu_backend::NpuModule& mod) {
  int f16 = 0, f32 = 0;
  for (const auto& core : mod.program.cores)
    for (const auto& in : core)
      if (const auto* v = std::get_if<isa::VectorArgs>(&in.args)) {
        f16 += v->dtype == isa::DType::f16;
        f32 += v->dtype == isa::DType::f32;
      }
  return {f16, f32};
}

TEST(NpuPrecision, SoftmaxOfLargeNumbersInFp32) {
  // ONNX test_softmax_large_number's second row: 10000..10003 are one fp16 value (spacing 8), so
  // fp16 storage gives 0.25 each. In fp32 they are exact; softmax = e^k / (1 + e + e^2 + e^3):
  // 0.0320586, 0.0871443, 0.2368828, 0.6439142 for both rows.
  GraphBuilder b;
  Value* x = b.input("x", {2, 4});
  Value* y = b.node("Softmax", {x}, attrs({{"axis", int64_t{1}}}));
  auto g = b.finish({y});
  const auto plan = npu_backend::float_storage_plan(*g, DType::f16);
  EXPECT_EQ(plan.at(x->name), DType::f32);
  EXPECT_EQ(plan.at(y->name), DType::f32);
  const Tensor in = Tensor::from_floats({2, 4}, {0, 1, 2, 3, 10000, 10001, 10002, 10003});
  const NpuCheck c = check_npu(*g, {{"x", in}}, "npu_4core", {1e-6, 1e-5});
  const Tensor& out = c.outputs.at(y->name);
  const double s = 1 + std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 4; ++k)
      EXPECT_NEAR(out.get_as_double(r * 4 + k), std::exp(double(k)) / s, 1e-6) << r << "," << k;
  EXPECT_EQ(c.module.inputs.at(0).storage, DType::f32);
  EXPECT_EQ(c.module.outputs.at(0).storage, DType::f32);
  const auto [f16, f32] = vector_dtypes(c.module);
  EXPECT_EQ(f16, 0);
  EXPECT_GT(f32, 0);
}

TEST(NpuPrecision, ReduceProdBeyondFp16Range) {
  // test_reduce_prod_default_axes_keepdims_example: 1 x 2 x ... x 12 = 479001600 > 65504; every
  // partial product is an integer below 2^24 up to 11! = 39916800, so fp32 gives it exactly.
  GraphBuilder b;
  Value* x = b.input("x", {3, 2, 2});
  Value* y = b.node("ReduceProd", {x}, attrs({{"keepdims", int64_t{1}}}));
  auto g = b.finish({y});
  std::vector<float> v(12);
  for (int i = 0; i < 12; ++i) v[i] = float(i + 1);
  const NpuCheck c =
      check_npu(*g, {{"x", Tensor::from_floats({3, 2, 2}, v)}}, "npu_4core", {0.0, 1e-7});
  EXPECT_EQ(c.outputs.at(y->name).get_as_double(0), 479001600.0);
}

TEST(NpuPrecision, CnnStaysFp16) {
  // An input only a Conv reads stays fp16 (packed by the host, as before the plan), and the
  // chain after the cube computes in fp16: no fp32 vector instruction, no conversion kernel.
  GraphBuilder b;
  Value* x = b.input("x", {1, 16, 8, 8});
  Value* w = b.constant("w", random_tensor({16, 16, 3, 3}, 3, -0.1f, 0.1f));
  Value* c = b.node("Conv", {x, w}, attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  Value* r = b.node("Relu", {c});
  Value* y = b.node("Softmax", {r}, attrs({{"axis", int64_t{1}}}));
  auto g = b.finish({y});
  const auto plan = npu_backend::float_storage_plan(*g, DType::f16);
  for (const Value* v : {x, c, r, y}) EXPECT_EQ(plan.at(v->name), DType::f16) << v->name;
  const NpuCheck k =
      check_npu(*g, {{"x", random_tensor({1, 16, 8, 8}, 4)}}, "npu_4core", {4e-3, 0.0});
  EXPECT_EQ(k.module.inputs.at(0).storage, DType::f16);
  EXPECT_EQ(vector_dtypes(k.module).second, 0);
  for (const auto& info : k.module.kernels) EXPECT_LE(info.schedules.size(), 1u) << info.node;
}

TEST(NpuPrecision, Fp32ValueConvertedBeforeTheCube) {
  // x * 3 is a vector kernel on an fp32 source: fp32; the MatMul reads it through a conversion
  // kernel (vconv to fp16) and returns fp16. Within fp16's bound: inputs in [-1, 1] times 3,
  // 32-term products of weights in [-0.5, 0.5]: |y| <= 48; roundings of x*3 and W to fp16
  // (2 x 2^-11 relative each term) and of y: <= 2^-11 (2 * 48 + 48) ~ 0.07.
  GraphBuilder b;
  Value* x = b.input("x", {16, 32});
  Value* three = b.constant("three", Tensor::scalar_f32(3.f));
  Value* w = b.constant("w", random_tensor({32, 16}, 5, -0.5f, 0.5f));
  Value* m = b.node("Mul", {x, three});
  Value* y = b.node("MatMul", {m, w});
  auto g = b.finish({y});
  const auto plan = npu_backend::float_storage_plan(*g, DType::f16);
  EXPECT_EQ(plan.at(m->name), DType::f32);
  EXPECT_EQ(plan.at(y->name), DType::f16);
  const NpuCheck k = check_npu(*g, {{"x", random_tensor({16, 32}, 6)}}, "npu_4core", {0.07, 0.0});
  bool converted = false;
  for (const auto& info : k.module.kernels)
    if (info.node == y->producer->name) converted = info.schedules.size() == 2;
  EXPECT_TRUE(converted) << "the MatMul has its conversion kernel and its cube kernel";
  bool vconv = false;
  for (const auto& core : k.module.program.cores)
    for (const auto& in : core)
      if (in.op == isa::Opcode::vconv) {
        const auto& v = std::get<isa::VectorArgs>(in.args);
        vconv = vconv || (v.dtype == isa::DType::f16 && v.src_dtype == isa::DType::f32);
      }
  EXPECT_TRUE(vconv);
}

TEST(NpuPrecision, Float64InputsComputedInFp32OrRefused) {
  // A float64 input is stored in fp32: 1e30 + 1e30 = 2e30 (beyond fp16, within fp32) comes back
  // within fp32's rounding; 1e200 does not fit fp32 and is refused, naming the input.
  GraphBuilder b;
  Value* x = b.input("x", {2}, DType::f64);
  Value* y = b.node("Add", {x, x});
  auto g = b.finish({y});
  const npu::HwConfig hw = preset("npu_4core");
  Tensor in(DType::f64, {2});
  in.set_from_double(0, 1e30);
  in.set_from_double(1, -0.5);
  const auto r = driver::run_model(*g, driver::Target::npu, &hw, {{"x", in}});
  EXPECT_NEAR(r.outputs.at(y->name).get_as_double(0), 2e30, 2e30 * 1.2e-7);
  EXPECT_EQ(r.outputs.at(y->name).get_as_double(1), -1.0);
  in.set_from_double(0, 1e200);
  try {
    driver::run_model(*g, driver::Target::npu, &hw, {{"x", in}});
    ADD_FAILURE() << "1e200 in a float64 input was not refused";
  } catch (const Unsupported& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("graph input 'x'"), std::string::npos) << m;
    EXPECT_NE(m.find("beyond the range of fp32"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace tessel::testing
