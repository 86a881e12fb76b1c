// QLinearMatMul and MatMulInteger on the NPU's int8 cube mode (compiler/backend/npu/int8_ops.h,
// the int8 mode of passes/loop/tile_cube.cpp): every case compiles a graph with constant weights,
// scales and zero points for npu_4core with DaVinci's int8 fractal (core.cube.int8 = 16x32x16),
// runs it on the functional interpreter and the SystemC model (same bits), on one core with the
// same tiles (same bits), and requires every output element to equal ONNX Runtime's arithmetic
// bit for bit: int32 for MatMulInteger (also the reference interpreter's), and for QLinearMatMul
// the requantisation of MlasRequantizeOutput (scale = fp32(fp32(a_scale * b_scale) / y_scale),
// float(acc) * scale in fp32, clamp, round half to even, + zero point), transcribed here from
// ORT independently of the NPU code. The reference interpreter (compiler/ops) rounds
// acc * (a_scale * b_scale / y_scale) in double; where that product differs from ORT's fp32 one
// at a tie the two differ by 1, so the reference comparison allows 1 and counts the differences.
#include <fmt/format.h>

#include <cmath>

#include "npu_model/roofline.h"
#include "tests/compiler/npu_test_util.h"
#include "tests/test_tensors.h"

namespace tessel::testing {
namespace {

npu::HwConfig int8_hw(int cores = 4) {
  return npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml",
                             {{"core.cube.int8.m", "16"},
                              {"core.cube.int8.k", "32"},
                              {"core.cube.int8.n", "16"},
                              {"cores", std::to_string(cores)}});
}

/// ORT's MlasRequantizeOutput of one accumulator (scalar path).
int64_t ort_requant(int32_t acc, float scale, int64_t zp, int64_t lo, int64_t hi) {
  float v = static_cast<float>(acc) * scale;
  v = std::max(v, static_cast<float>(lo - zp));
  v = std::min(v, static_cast<float>(hi - zp));
  const float biased = v + 12582912.0f;
  int32_t bits;
  std::memcpy(&bits, &biased, 4);
  return (bits - 0x4B400000) + zp;
}

struct Int8Run {
  npu_backend::NpuModule mod;
  Tensor y;
  sim::SimResult sim;
};

/// Compiles and runs `g` (its one output) on int8_hw: interpreter = simulator = one core.
Int8Run run_int8(const Graph& g, const std::map<std::string, Tensor>& inputs,
                 const npu_backend::NpuCompileOptions& options = {}) {
  const std::string y = g.outputs.at(0)->name;
  const npu::HwConfig hw = int8_hw();
  Int8Run r;
  r.mod = npu_backend::compile_npu(g, hw, options);
  const auto got = run_interpreter(r.mod, hw, inputs);
  const auto simulated = run_simulator(r.mod, hw, inputs, &r.sim);
  EXPECT_TRUE(bit_equal(got.at(y), simulated.at(y))) << "simulator differs from interpreter";
  const npu::HwConfig one = int8_hw(1);
  const auto single = run_interpreter(
      npu_backend::compile_npu(g, one, npu_backend::same_tiles_on_one_core(r.mod)), one, inputs);
  EXPECT_TRUE(bit_equal(got.at(y), single.at(y))) << "multicore differs from one core";
  r.y = got.at(y);
  return r;
}

struct QCase {
  DType a_dt, b_dt, y_dt;
  int64_t a_zp, b_zp, y_zp;
  float a_scale, b_scale, y_scale;
  Shape a_shape;
  int64_t N;
  int64_t b_lo, b_hi;  // B's values
};

/// y = QLinearMatMul(a, B) with constant B, scales and zero points; checks the NPU's bits against
/// ORT's arithmetic and the reference interpreter within 1.
void check_qlinear(const QCase& c, const npu_backend::NpuCompileOptions& options = {},
                   int64_t* ties = nullptr) {
  const int64_t K = c.a_shape.back(), M = c.a_shape[c.a_shape.size() - 2];
  const int64_t batches = shape_numel(c.a_shape) / (M * K);
  const auto [alo, ahi] = c.a_dt == DType::u8 ? std::pair<int64_t, int64_t>{0, 255}
                                              : std::pair<int64_t, int64_t>{-128, 127};
  const Tensor A = random_int_tensor(c.a_shape, c.a_dt, 71, alo, ahi);
  const Tensor B = random_int_tensor({K, c.N}, c.b_dt, 72, c.b_lo, c.b_hi);
  GraphBuilder gb;
  Value* a = gb.input("a", c.a_shape, c.a_dt);
  Value* y =
      gb.node("QLinearMatMul", {a, gb.constant("a_scale", Tensor::scalar_f32(c.a_scale)),
                                gb.constant("a_zp", scalar(c.a_dt, c.a_zp)), gb.constant("b", B),
                                gb.constant("b_scale", Tensor::scalar_f32(c.b_scale)),
                                gb.constant("b_zp", scalar(c.b_dt, c.b_zp)),
                                gb.constant("y_scale", Tensor::scalar_f32(c.y_scale)),
                                gb.constant("y_zp", scalar(c.y_dt, c.y_zp))});
  auto g = gb.finish({y});
  const Int8Run r = run_int8(*g, {{"a", A}}, options);
  ASSERT_EQ(r.y.dtype(), c.y_dt);
  const float scale = c.a_scale * c.b_scale / c.y_scale;  // fp32, left to right, as ORT
  const int64_t lo = c.y_dt == DType::u8 ? 0 : -128, hi = c.y_dt == DType::u8 ? 255 : 127;
  Shape ys = c.a_shape;
  ys.back() = c.N;
  const auto want_ref = ops::run_reference(*g, {{"a", A}}).at(y->name);
  int64_t off_by_one = 0, mismatches = 0, tie_count = 0;
  for (int64_t bi = 0; bi < batches; ++bi)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < c.N; ++j) {
        int32_t acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += static_cast<int32_t>(A.get_as_double((bi * M + i) * K + k) - c.a_zp) *
                 static_cast<int32_t>(B.get_as_double(k * c.N + j) - c.b_zp);
        const float x = static_cast<float>(acc) * scale;
        tie_count += x - std::floor(x) == 0.5f;
        const int64_t want = ort_requant(acc, scale, c.y_zp, lo, hi);
        const int64_t idx = (bi * M + i) * c.N + j;
        const int64_t got = static_cast<int64_t>(r.y.get_as_double(idx));
        if (got != want && mismatches++ < 5)
          ADD_FAILURE() << "y[" << bi << "," << i << "," << j << "] = " << got << ", ORT " << want
                        << " (acc " << acc << ")";
        const int64_t ref = static_cast<int64_t>(want_ref.get_as_double(idx));
        EXPECT_LE(std::abs(ref - got), 1) << idx;
        off_by_one += ref != got;
      }
  EXPECT_EQ(mismatches, 0);
  if (ties) *ties = tie_count;
  std::cout << "[int8] QLinearMatMul " << dtype_to_string(c.a_dt) << "x" << dtype_to_string(c.b_dt)
            << "->" << dtype_to_string(c.y_dt) << ": " << r.y.numel() << " elements, " << tie_count
            << " ties, " << off_by_one << " differ by 1 from the reference interpreter, "
            << r.sim.total_cycles << " cycles\n";
}

TEST(NpuInt8, QLinearMatMulU8xI8PerTensorBatched) {
  // A u8 [2, 37, 70] (batch 2, a tail in every dim), B i8 [70, 45] in [-1, 1] with zero point 0;
  // a_zp 131 makes the bias per column (-131 * column sums). scale = 0.5 * 0.25 / 0.25 = 0.5
  // exactly: every odd accumulator is a tie (x.5), rounded to even, and many saturate at 0 / 255.
  int64_t ties = 0;
  check_qlinear(
      {DType::u8, DType::i8, DType::u8, 131, 0, 120, 0.5f, 0.25f, 0.25f, {2, 37, 70}, 45, -1, 1},
      {}, &ties);
  EXPECT_GT(ties, 500);  // the tie rounding is exercised
}

TEST(NpuInt8, QLinearMatMulU8WeightsWithZeroPoint128ToI8) {
  // u8 weights with zero point 128 (ORT's U8U8 form): B - 128 fits i8. i8 activations with a
  // negative zero point, i8 output; scales not powers of two (rounded fp32 products).
  check_qlinear({DType::i8,
                 DType::u8,
                 DType::i8,
                 -7,
                 128,
                 -3,
                 0.0173f,
                 0.0041f,
                 0.093f,
                 {48, 100},
                 33,
                 0,
                 255});
}

TEST(NpuInt8, QLinearMatMulSmallTilesAccumulateOverK) {
  // Tiles of 16 x 32 outputs and 64-element K chunks: mmad accumulates over 5 K chunks, the
  // table is sliced per n tile, the m and n tails run.
  npu_backend::NpuCompileOptions o;
  o.op_knobs["QLinearMatMul_0"] = {{"mt", 16}, {"nt", 32}, {"kt", 64}, {"a_resident", 0}};
  QCase c{DType::u8, DType::i8, DType::u8, 17, 0,    100, 0.02f,
          0.01f,     0.5f,      {40, 300}, 70, -128, 127};
  check_qlinear(c, o);
}

TEST(NpuInt8, MatMulIntegerIsExactInInt32) {
  // A u8 [33, 50], B u8 [50, 20] with zero points 3 and 7 (B - 7 in [0, 120] fits i8): Y i32
  // equals the reference interpreter's exactly.
  const Tensor A = random_int_tensor({33, 50}, DType::u8, 81, 0, 255);
  const Tensor B = random_int_tensor({50, 20}, DType::u8, 82, 7, 127);
  GraphBuilder gb;
  Value* a = gb.input("a", {33, 50}, DType::u8);
  Value* y =
      gb.node("MatMulInteger", {a, gb.constant("b", B), gb.constant("azp", scalar(DType::u8, 3)),
                                gb.constant("bzp", scalar(DType::u8, 7))});
  auto g = gb.finish({y});
  const Int8Run r = run_int8(*g, {{"a", A}});
  const Tensor want = ops::run_reference(*g, {{"a", A}}).at(y->name);
  ASSERT_EQ(r.y.dtype(), DType::i32);
  EXPECT_TRUE(bit_equal(r.y, want));
  // One value by hand: y[0][0] = sum_k (a[0][k] - 3) * (b[k][0] - 7).
  int64_t y00 = 0;
  for (int k = 0; k < 50; ++k) y00 += (A.get_as_double(k) - 3) * (B.get_as_double(k * 20) - 7);
  EXPECT_EQ(r.y.data<int32_t>()[0], y00);
  // The kernel ran on the cube in the int8 mode: its assembly has u8 x i8 mmads and a fix to i32.
  bool int8_mmad = false, fix_i32 = false;
  for (const auto& in : r.mod.program.cores[0]) {
    if (const auto* m = std::get_if<isa::MmadArgs>(&in.args))
      int8_mmad |= m->a_dtype == isa::DType::u8 && m->b_dtype == isa::DType::i8;
    if (const auto* f = std::get_if<isa::FixArgs>(&in.args))
      fix_i32 |= f->dst_dtype == isa::DType::i32;
  }
  EXPECT_TRUE(int8_mmad);
  EXPECT_TRUE(fix_i32);
}

TEST(NpuInt8, RuntimeWeightsAreRefusedNamingTheNode) {
  GraphBuilder gb;
  Value* a = gb.input("a", {4, 3}, DType::u8);
  Value* b = gb.input("b", {3, 2}, DType::u8);
  Value* y = gb.node("MatMulInteger", {a, b});
  auto g = gb.finish({y});
  try {
    npu_backend::compile_npu(*g, int8_hw());
    ADD_FAILURE() << "expected Unsupported";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("B (the weights) must be a constant on the NPU"),
              std::string::npos)
        << e.what();
  }
}

TEST(NpuInt8, RooflineCountsInt8FractalsAndBytes) {
  // MatMulInteger 64 x 128 x 64: in the int8 fractal 16x32x16 that is 4 * 4 * 4 = 64 fractals
  // (the fp16 fractal would need 128); GM reads A 64*128 B + B' 128*64 B + the table, writes
  // 64*64*4 B of int32.
  const Tensor B = random_int_tensor({128, 64}, DType::i8, 91, -128, 127);
  GraphBuilder gb;
  Value* a = gb.input("a", {64, 128}, DType::i8);
  Value* y = gb.node("MatMulInteger", {a, gb.constant("b", B)});
  auto g = gb.finish({y});
  const auto mod = npu_backend::compile_npu(*g, int8_hw());
  const npu::OpWork* w = nullptr;
  for (const auto& k : mod.kernels)
    if (k.op_type == "MatMulInteger") w = &k.work;
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->cube_fractals, 64.0);
  EXPECT_EQ(w->cube_macs, 64.0 * 128 * 64);
  EXPECT_EQ(w->gm_read_bytes, 64.0 * 128 + 128.0 * 64 + 2 * 4);  // one table entry (zp 0)
  EXPECT_EQ(w->gm_write_bytes, 64.0 * 64 * 4);
  EXPECT_EQ(w->mte1_bytes, 64.0 * 128 + 128.0 * 64);
  EXPECT_EQ(w->fix_bytes, 64.0 * 64 * 4);
}

}  // namespace
}  // namespace tessel::testing

namespace tessel::testing {
namespace {

/// Two chained layers y = L2(L1(x)), [256 x 512] x [512 x 512] then x [512 x 256], as
/// QLinearMatMul (u8 activations, i8 weights) or as MatMul (fp16 on the NPU); prints cycles, DRAM
/// bytes and each kernel's roofline (docs/results.md, "int8 on the cube").
struct ChainResult {
  uint64_t cycles = 0, dram_bytes = 0;
  double roofline = 0;
  std::string bound;
};
ChainResult run_chain(bool int8) {
  const int64_t M = 256, K = 512, N1 = 512, N2 = 256;
  GraphBuilder gb;
  Value* x = gb.input("x", {M, K}, int8 ? DType::u8 : DType::f32);
  auto layer = [&](Value* in, int64_t k, int64_t n, uint32_t seed) -> Value* {
    if (!int8) {
      Tensor w = random_int_tensor({k, n}, DType::i64, seed, -8, 8).cast(DType::f32);
      return gb.node("MatMul", {in, gb.constant(fmt::format("w{}", seed), w)});
    }
    return gb.node("QLinearMatMul",
                   {in, gb.constant(fmt::format("as{}", seed), Tensor::scalar_f32(0.02f)),
                    gb.constant(fmt::format("az{}", seed), scalar(DType::u8, 128)),
                    gb.constant(fmt::format("w{}", seed),
                                random_int_tensor({k, n}, DType::i8, seed, -128, 127)),
                    gb.constant(fmt::format("ws{}", seed), Tensor::scalar_f32(0.01f)),
                    gb.constant(fmt::format("wz{}", seed), scalar(DType::i8, 0)),
                    gb.constant(fmt::format("ys{}", seed), Tensor::scalar_f32(0.5f)),
                    gb.constant(fmt::format("yz{}", seed), scalar(DType::u8, 128))});
  };
  Value* y = layer(layer(x, K, N1, 1), N1, N2, 2);
  auto g = gb.finish({y});
  const npu::HwConfig hw = int8_hw();
  const auto mod = npu_backend::compile_npu(*g, hw);
  const Tensor in = int8 ? random_int_tensor({M, K}, DType::u8, 3, 0, 255)
                         : random_int_tensor({M, K}, DType::i64, 3, -4, 4).cast(DType::f32);
  sim::SimResult r;
  run_simulator(mod, hw, {{"x", in}}, &r);
  ChainResult c{r.total_cycles, r.dram_read_bytes + r.dram_write_bytes, 0, ""};
  for (const auto& k : mod.kernels)
    if (k.op_index >= 0) {
      const npu::Roofline rl = npu::roofline(hw, k.work);
      c.roofline += rl.cycles;
      c.bound += (c.bound.empty() ? "" : ", ") + rl.bound;
    }
  return c;
}

TEST(NpuInt8, ChainInt8VsFp16OnTheCube) {
  const ChainResult f = run_chain(false), q = run_chain(true);
  std::cout << "| chain (npu_4core, core.cube.int8 = 16x32x16) | cycles | DRAM bytes | roofline "
               "cycles (bound) | efficiency |\n|---|---|---|---|---|\n";
  for (const auto& [name, c] :
       {std::pair{"MatMul x2, fp16", f}, std::pair{"QLinearMatMul x2, int8", q}})
    std::cout << fmt::format("| {} | {} | {} | {:.0f} ({}) | {:.1f}% |\n", name, c.cycles,
                             c.dram_bytes, c.roofline, c.bound, 100.0 * c.roofline / c.cycles);
  // int8 moves half the activation and weight bytes of fp16 (the fix table adds 8 bytes a column
  // at most) and its fractal does twice the MACs per cycle. The DRAM bytes include the re-reads
  // of each program's default tiles, which differ: 62% of fp16's measured with the cost model of
  // 2026-12-03 (1,382,400 vs 2,228,223 bytes; below 60% before it).
  EXPECT_LT(q.dram_bytes, f.dram_bytes * 65 / 100);
  EXPECT_LT(q.roofline, f.roofline);
}

}  // namespace
}  // namespace tessel::testing
