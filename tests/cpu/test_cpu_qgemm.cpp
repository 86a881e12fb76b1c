// The CPU's int8 matrix product kernels (compiler/backend/cpu/qgemm.h), both paths (plain and
// AVX-512 VNNI), bit-exact against the reference interpreter's QLinearMatMul (whose
// requantisation is ONNX Runtime's MlasRequantizeOutput, ops::requantize_fp32): every dtype
// combination, zero points, per-column scales, K and N not multiples of the packing, rounding
// ties and saturation at both ends, plus hand-derived values.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <random>

#include "compiler/backend/cpu/qgemm.h"
#include "compiler/driver/runner.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/reference.h"
#include "tests/test_conform_suite.h"
#include "tests/test_tensors.h"

namespace tessel::testing {
namespace {

using cpu_backend::QGemmPath;

struct QArgs {
  Tensor a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp;
};

/// The reference interpreter's QLinearMatMul on `q`.
Tensor reference(const QArgs& q) {
  Graph g;
  std::vector<const Tensor*> ts = {&q.a,       &q.a_scale, &q.a_zp,    &q.b,
                                   &q.b_scale, &q.b_zp,    &q.y_scale, &q.y_zp};
  std::vector<Value*> ins;
  for (size_t i = 0; i < ts.size(); ++i)
    ins.push_back(g.add_value("in" + std::to_string(i), ts[i]->dtype(), ts[i]->shape()));
  Value* y = g.add_value("y", q.y_zp.dtype(), {q.a.shape()[0], q.b.shape()[1]});
  Node* n = g.add_node("QLinearMatMul", "qmm", ins, {y});
  return ops::run_reference_node(*n, ts).at(0);
}

std::vector<int64_t> ints(const Tensor& t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(static_cast<int64_t>(t.get_as_double(i)));
  return v;
}

std::vector<QGemmPath> paths() {
  std::vector<QGemmPath> p = {QGemmPath::plain};
  if (cpu_backend::qgemm_host_path() == QGemmPath::vnni) p.push_back(QGemmPath::vnni);
  return p;
}

Tensor run(const QArgs& q, QGemmPath p, const Tensor* bias = nullptr) {
  return cpu_backend::qlinear_matmul_cpu(q.a, q.a_scale, q.a_zp, q.b, q.b_scale, q.b_zp, q.y_scale,
                                         q.y_zp, bias, p);
}

TEST(CpuQGemm, HostPathIsVnniOnThisMachine) {
  // The development host has avx512_vnni (/proc/cpuinfo); elsewhere the plain path runs.
  __builtin_cpu_init();
  const bool vnni = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
  EXPECT_EQ(cpu_backend::qgemm_host_path(), vnni ? QGemmPath::vnni : QGemmPath::plain);
  if (!vnni) GTEST_SKIP() << "no AVX-512 VNNI: only the plain path is tested here";
  // The vnni function's code has vpdpbusd; the plain one's (compiled without VNNI) has none.
  const std::string s = cpu_backend::qgemm_assembly();
  const size_t plain = s.find("tessel_qgemm_plain:"), vnni_fn = s.find("tessel_qgemm_vnni:");
  ASSERT_NE(plain, std::string::npos);
  ASSERT_NE(vnni_fn, std::string::npos);
  const std::string plain_code =
      plain < vnni_fn ? s.substr(plain, vnni_fn - plain) : s.substr(plain);
  const std::string vnni_code =
      plain < vnni_fn ? s.substr(vnni_fn) : s.substr(vnni_fn, plain - vnni_fn);
  EXPECT_NE(vnni_code.find("vpdpbusd"), std::string::npos);
  EXPECT_EQ(plain_code.find("vpdpbusd"), std::string::npos);
  EXPECT_NE(vnni_code.find("vrndscaleps"), std::string::npos);  // nearbyint on 16 lanes
}

TEST(CpuQGemm, HandDerivedValuesWithTiesAndSaturation) {
  // a (u8, zp 128) = [[130, 120, 128, 129], [0, 255, 128, 128]] -> a - 128 = [[2,-8,0,1],
  // [-128, 127, 0, 0]]; b (s8) = [[1,-2],[3,4],[5,6],[1,1]]:
  //   acc row 0 = [2 - 24 + 0 + 1, -4 - 32 + 0 + 1] = [-21, -35]
  //   acc row 1 = [-128 + 381, 256 + 508] = [253, 764]
  // scale = 0.5 * 1 / 1 = 0.5 (per tensor), y (s8, zp 0):
  //   -10.5 -> -10 (tie to even), -17.5 -> -18 (tie to even), 126.5 -> 126 (tie), 382 -> 127
  QArgs q{Tensor(DType::u8, {2, 4}), scalar(DType::f32, 0.5), scalar(DType::u8, 128),
          Tensor(DType::i8, {4, 2}), scalar(DType::f32, 1.0), scalar(DType::i8, 0),
          scalar(DType::f32, 1.0),   scalar(DType::i8, 0)};
  const int a[] = {130, 120, 128, 129, 0, 255, 128, 128};
  const int b[] = {1, -2, 3, 4, 5, 6, 1, 1};
  for (int i = 0; i < 8; ++i) q.a.set_from_double(i, a[i]), q.b.set_from_double(i, b[i]);
  const std::vector<int64_t> want = {-10, -18, 126, 127};
  EXPECT_EQ(ints(reference(q)), want);
  for (QGemmPath p : paths()) EXPECT_EQ(ints(run(q, p)), want) << cpu_backend::qgemm_path_name(p);
  // With a bias [1, -1000] (QLinearConv's B): [-20, -1035] * 0.5 -> -10, -517.5 -> -128 (saturates
  // at the low end); [254, -236] * 0.5 -> 127, -118.
  const Tensor bias = vec(DType::i32, {1, -1000});
  for (QGemmPath p : paths())
    EXPECT_EQ(ints(run(q, p, &bias)), (std::vector<int64_t>{-10, -128, 127, -118}))
        << cpu_backend::qgemm_path_name(p);
}

TEST(CpuQGemm, RandomCasesMatchTheReferenceBitForBit) {
  std::mt19937 rng(2026);
  struct Shape3 {
    int64_t M, K, N;
  };
  // K and N below, at and above the packing (4 and 16), and a classifier-sized product.
  const std::vector<Shape3> shapes = {{1, 1, 1},   {3, 5, 7},   {4, 16, 16},  {5, 17, 33},
                                      {2, 64, 48}, {7, 288, 2}, {1, 480, 129}};
  int cases = 0;
  for (const auto& s : shapes)
    for (DType da : {DType::u8, DType::i8})
      for (DType db : {DType::i8, DType::u8})
        for (DType dy : {DType::u8, DType::i8})
          for (bool per_col : {false, true}) {
            auto rnd = [&](int lo, int hi) {
              return std::uniform_int_distribution<int>(lo, hi)(rng);
            };
            const int alo = da == DType::u8 ? 0 : -128, ahi = da == DType::u8 ? 255 : 127;
            const int blo = db == DType::u8 ? 0 : -128, bhi = db == DType::u8 ? 255 : 127;
            QArgs q;
            q.a = Tensor(da, {s.M, s.K});
            q.b = Tensor(db, {s.K, s.N});
            for (int64_t i = 0; i < q.a.numel(); ++i) q.a.set_from_double(i, rnd(alo, ahi));
            for (int64_t i = 0; i < q.b.numel(); ++i) q.b.set_from_double(i, rnd(blo, bhi));
            q.a_scale = scalar(DType::f32, 0.02 + 0.001 * rnd(0, 40));
            q.a_zp = scalar(da, rnd(alo, ahi));
            // Scales chosen so that the outputs span the whole range (both saturations).
            const double ys = 0.05 * std::sqrt(double(s.K)) * 64;
            q.y_scale = scalar(DType::f32, ys);
            q.y_zp = scalar(dy, rnd(dy == DType::u8 ? 0 : -128, dy == DType::u8 ? 255 : 127));
            if (per_col) {
              std::vector<double> sc, zp;
              for (int64_t n = 0; n < s.N; ++n) {
                sc.push_back(0.01 * rnd(1, 30));
                zp.push_back(rnd(blo, bhi));
              }
              q.b_scale = vec(DType::f32, sc);
              q.b_zp = vec(db, zp);
              if (s.N == 1) {  // a 1-element 1-D parameter is per tensor
                q.b_scale = scalar(DType::f32, sc[0]);
                q.b_zp = scalar(db, zp[0]);
              }
            } else {
              q.b_scale = scalar(DType::f32, 0.01 * rnd(1, 30));
              q.b_zp = scalar(db, rnd(blo, bhi));
            }
            const Tensor want = reference(q);
            for (QGemmPath p : paths()) {
              const Tensor got = run(q, p);
              ASSERT_EQ(got.dtype(), want.dtype());
              EXPECT_EQ(ints(got), ints(want))
                  << cpu_backend::qgemm_path_name(p) << " M=" << s.M << " K=" << s.K << " N=" << s.N
                  << " a " << dtype_to_string(da) << " b " << dtype_to_string(db) << " y "
                  << dtype_to_string(dy) << " per_col " << per_col;
            }
            ++cases;
          }
  EXPECT_EQ(cases, 7 * 16);
}

/// The reference interpreter's QLinearConv.
Tensor reference_conv(const std::vector<const Tensor*>& ts, const cpu_backend::QConvGeometry& geo,
                      const Shape& out_shape) {
  Graph g;
  std::vector<Value*> ins;
  for (size_t i = 0; i < ts.size(); ++i)
    ins.push_back(g.add_value("in" + std::to_string(i), ts[i]->dtype(), ts[i]->shape()));
  Value* y = g.add_value("y", ts[7]->dtype(), out_shape);
  Attributes attrs;
  attrs.set("strides", geo.strides);
  attrs.set("pads", geo.pads);
  attrs.set("dilations", geo.dilations);
  attrs.set("group", geo.group);
  attrs.set("kernel_shape", std::vector<int64_t>{ts[3]->shape()[2], ts[3]->shape()[3]});
  Node* n = g.add_node("QLinearConv", "qconv", ins, {y}, attrs);
  return ops::run_reference_node(*n, ts).at(0);
}

TEST(CpuQGemm, QLinearConvMatchesTheReferenceBitForBit) {
  // Padding (taps at x's zero point), stride 2, dilation, grouped and depthwise (MobileNet's)
  // convolutions, per-channel weights, u8 and s8 activations, with and without bias.
  std::mt19937 rng(7);
  auto rnd = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  struct Case {
    int64_t N, C, H, W, M, k, group;
    cpu_backend::QConvGeometry geo;
  };
  const std::vector<Case> cases = {
      {1, 3, 8, 9, 4, 3, 1, {{1, 1}, {1, 1, 1, 1}, {1, 1}, 1}},
      {2, 8, 7, 7, 6, 3, 2, {{2, 2}, {1, 0, 1, 2}, {1, 1}, 2}},
      {1, 16, 6, 10, 16, 3, 16, {{1, 1}, {1, 1, 1, 1}, {1, 1}, 16}},  // depthwise
      {1, 5, 9, 9, 7, 3, 1, {{1, 2}, {2, 2, 2, 2}, {2, 2}, 1}},       // dilated
      {1, 32, 4, 4, 24, 1, 1, {{1, 1}, {0, 0, 0, 0}, {1, 1}, 1}},     // pointwise
  };
  int runs = 0;
  for (const Case& c : cases)
    for (DType dx : {DType::u8, DType::i8})
      for (bool with_bias : {false, true}) {
        const int xlo = dx == DType::u8 ? 0 : -128, xhi = dx == DType::u8 ? 255 : 127;
        Tensor x(dx, {c.N, c.C, c.H, c.W}), w(DType::i8, {c.M, c.C / c.group, c.k, c.k});
        for (int64_t i = 0; i < x.numel(); ++i) x.set_from_double(i, rnd(xlo, xhi));
        for (int64_t i = 0; i < w.numel(); ++i) w.set_from_double(i, rnd(-127, 127));
        std::vector<double> ws, wz, bv;
        for (int64_t m = 0; m < c.M; ++m) {
          ws.push_back(0.001 * rnd(1, 20));
          wz.push_back(0);
          bv.push_back(rnd(-5000, 5000));
        }
        const Tensor xs = scalar(DType::f32, 0.02), xz = scalar(dx, rnd(xlo, xhi));
        const Tensor wst = vec(DType::f32, ws), wzt = vec(DType::i8, wz);
        const Tensor ys = scalar(DType::f32, 0.01 + 0.002 * rnd(0, 10)),
                     yz = scalar(dx, rnd(xlo, xhi));
        const Tensor bias = vec(DType::i32, bv);
        std::vector<const Tensor*> ts = {&x, &xs, &xz, &w, &wst, &wzt, &ys, &yz};
        if (with_bias) ts.push_back(&bias);
        for (QGemmPath p : paths()) {
          const Tensor got = cpu_backend::qlinear_conv_cpu(x, xs, xz, w, wst, wzt, ys, yz,
                                                           with_bias ? &bias : nullptr, c.geo, p);
          const Tensor want = reference_conv(ts, c.geo, got.shape());
          EXPECT_EQ(ints(got), ints(want)) << cpu_backend::qgemm_path_name(p) << " C=" << c.C
                                           << " group=" << c.group << " bias " << with_bias;
          ++runs;
        }
      }
  EXPECT_GE(runs, 20);
}

/// The inputs and expected output of ONNX backend node test `name` (test_data_set_0).
struct NodeCase {
  std::vector<Tensor> in;
  Tensor want;
  std::unique_ptr<Graph> graph;
};
NodeCase node_case(const std::string& name) {
  const std::string dir = kOnnxDataDir + "/node/" + name;
  NodeCase c;
  graph_passes::PipelineOptions none;
  none.enabled = false;
  c.graph = driver::load_model(dir + "/model.onnx", {}, none);
  for (int i = 0; i < 9; ++i) {
    const std::string f = dir + "/test_data_set_0/input_" + std::to_string(i) + ".pb";
    if (std::ifstream(f).good()) c.in.push_back(frontend::load_tensor_pb(f));
  }
  c.want = frontend::load_tensor_pb(dir + "/test_data_set_0/output_0.pb");
  return c;
}

TEST(CpuQGemm, OnnxNodeTestsOfQLinearConvAndQLinearMatMul) {
  if (!std::ifstream(kOnnxDataDir + "/node/test_qlinearconv/model.onnx").good())
    GTEST_SKIP() << "libonnx-testdata missing";
  for (QGemmPath p : paths()) {
    {
      NodeCase c = node_case("test_qlinearconv");
      const Node& n = *c.graph->nodes().at(0);
      cpu_backend::QConvGeometry geo;
      geo.strides = n.attrs.get_ints_or("strides", {1, 1}, n.name);
      geo.pads = n.attrs.get_ints_or("pads", {0, 0, 0, 0}, n.name);
      geo.dilations = n.attrs.get_ints_or("dilations", {1, 1}, n.name);
      geo.group = n.attrs.get_int_or("group", 1, n.name);
      const auto& v = c.in;
      const Tensor got = cpu_backend::qlinear_conv_cpu(
          v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v.size() > 8 ? &v[8] : nullptr, geo, p);
      EXPECT_EQ(got.shape(), c.want.shape());
      EXPECT_EQ(ints(got), ints(c.want)) << cpu_backend::qgemm_path_name(p);
    }
    for (const std::string name : {"test_qlinearmatmul_2D", "test_qlinearmatmul_3D"}) {
      NodeCase c = node_case(name);
      const auto& v = c.in;
      // 3-D: one 2-D product per batch entry (both operands batched in the test data).
      const int64_t batch = v[0].rank() == 3 ? v[0].shape()[0] : 1;
      const int64_t M = v[0].shape()[v[0].rank() - 2], K = v[0].shape()[v[0].rank() - 1];
      const int64_t N = v[3].shape()[v[3].rank() - 1];
      std::vector<int64_t> got;
      for (int64_t bi = 0; bi < batch; ++bi) {
        Tensor a(v[0].dtype(), {M, K}), b(v[3].dtype(), {K, N});
        std::copy_n(v[0].raw() + bi * M * K, M * K, a.raw());
        std::copy_n(v[3].raw() + (v[3].rank() == 3 ? bi * K * N : 0), K * N, b.raw());
        const auto r = ints(
            cpu_backend::qlinear_matmul_cpu(a, v[1], v[2], b, v[4], v[5], v[6], v[7], nullptr, p));
        got.insert(got.end(), r.begin(), r.end());
      }
      EXPECT_EQ(got, ints(c.want)) << name << " " << cpu_backend::qgemm_path_name(p);
    }
  }
}

TEST(CpuQGemm, OnnxNodeTestsOfConvIntegerAndMatMulInteger) {
  if (!std::ifstream(kOnnxDataDir + "/node/test_matmulinteger/model.onnx").good())
    GTEST_SKIP() << "libonnx-testdata missing";
  for (QGemmPath p : paths()) {
    for (const std::string name : {"test_basic_convinteger", "test_convinteger_with_padding",
                                   "test_convinteger_without_padding"}) {
      NodeCase c = node_case(name);
      const Node& n = *c.graph->nodes().at(0);
      cpu_backend::QConvGeometry geo;
      geo.strides = n.attrs.get_ints_or("strides", {1, 1}, n.name);
      geo.pads = n.attrs.get_ints_or("pads", {0, 0, 0, 0}, n.name);
      geo.dilations = n.attrs.get_ints_or("dilations", {1, 1}, n.name);
      geo.group = n.attrs.get_int_or("group", 1, n.name);
      const Tensor zx = c.in.size() > 2 ? c.in[2] : scalar(c.in[0].dtype(), 0);
      const Tensor zw = c.in.size() > 3 ? c.in[3] : scalar(c.in[1].dtype(), 0);
      const Tensor got = cpu_backend::conv_integer_cpu(c.in[0], zx, c.in[1], zw, geo, p);
      EXPECT_EQ(got.dtype(), DType::i32);
      EXPECT_EQ(got.shape(), c.want.shape()) << name;
      EXPECT_EQ(ints(got), ints(c.want)) << name << " " << cpu_backend::qgemm_path_name(p);
    }
    NodeCase c = node_case("test_matmulinteger");
    const Tensor got = cpu_backend::matmul_integer_cpu(c.in[0], c.in[2], c.in[1], c.in[3], p);
    EXPECT_EQ(ints(got), ints(c.want)) << cpu_backend::qgemm_path_name(p);
  }
}

TEST(CpuQGemm, RandomConvIntegerMatchesTheReference) {
  std::mt19937 rng(11);
  auto rnd = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (QGemmPath p : paths())
    for (DType dx : {DType::u8, DType::i8}) {
      const int xlo = dx == DType::u8 ? 0 : -128, xhi = dx == DType::u8 ? 255 : 127;
      Tensor x(dx, {1, 6, 7, 5}), w(DType::u8, {4, 3, 3, 3});
      for (int64_t i = 0; i < x.numel(); ++i) x.set_from_double(i, rnd(xlo, xhi));
      for (int64_t i = 0; i < w.numel(); ++i) w.set_from_double(i, rnd(0, 255));
      const Tensor zx = scalar(dx, rnd(xlo, xhi)), zw = vec(DType::u8, {3, 250, 128, 0});
      cpu_backend::QConvGeometry geo{{2, 1}, {1, 1, 0, 1}, {1, 1}, 2};
      const Tensor got = cpu_backend::conv_integer_cpu(x, zx, w, zw, geo, p);
      Graph g;
      std::vector<const Tensor*> ts = {&x, &w, &zx, &zw};
      std::vector<Value*> ins;
      for (size_t i = 0; i < ts.size(); ++i)
        ins.push_back(g.add_value("in" + std::to_string(i), ts[i]->dtype(), ts[i]->shape()));
      Value* y = g.add_value("y", DType::i32, got.shape());
      Attributes attrs;
      attrs.set("strides", geo.strides);
      attrs.set("pads", geo.pads);
      attrs.set("group", geo.group);
      attrs.set("kernel_shape", std::vector<int64_t>{3, 3});
      Node* n = g.add_node("ConvInteger", "ci", ins, {y}, attrs);
      EXPECT_EQ(ints(got), ints(ops::run_reference_node(*n, ts).at(0)))
          << cpu_backend::qgemm_path_name(p) << " " << dtype_to_string(dx);
    }
}

/// The reference's QuantizeLinear / DequantizeLinear on (x, scale[, zp]) with `axis`.
Tensor reference_linear(const std::string& op, const std::vector<const Tensor*>& ts, int64_t axis,
                        DType out) {
  Graph g;
  std::vector<Value*> ins;
  for (size_t i = 0; i < ts.size(); ++i)
    ins.push_back(g.add_value("in" + std::to_string(i), ts[i]->dtype(), ts[i]->shape()));
  Value* y = g.add_value("y", out, ts[0]->shape());
  Attributes attrs;
  attrs.set("axis", axis);
  Node* n = g.add_node(op, "q", ins, {y}, attrs);
  return ops::run_reference_node(*n, ts).at(0);
}

TEST(CpuQGemm, QuantizeAndDequantizeLinearMatchTheReference) {
  // Hand-derived: scale 0.5, zp -3 (s8): x = 1.25 -> 2.5 -> 2 (tie to even) - 3 = -1;
  // -1.25 -> -2.5 -> -2 - 3 = -5; 0.75 -> 1.5 -> 2 - 3 = -1; 100 -> 200 -> saturates at 127;
  // -100 -> -200 -> -128; NaN -> the zero point -3.
  const Tensor x = vec(DType::f32, {1.25, -1.25, 0.75, 100, -100, std::nan("")});
  const Tensor s = scalar(DType::f32, 0.5), z = scalar(DType::i8, -3);
  const std::vector<int64_t> want = {-1, -5, -1, 127, -128, -3};
  EXPECT_EQ(ints(reference_linear("QuantizeLinear", {&x, &s, &z}, 1, DType::i8)), want);
  EXPECT_EQ(ints(cpu_backend::quantize_linear_cpu(x, s, &z)), want);
  // Random, per tensor and per axis, u8 and s8, with ties x = (k + 0.5) * scale.
  std::mt19937 rng(5);
  auto rnd = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (DType dt : {DType::u8, DType::i8})
    for (int64_t axis : {-1, 0, 1, 2}) {
      Tensor xs(DType::f32, {3, 4, 5});
      const int64_t count = axis < 0 ? 1 : xs.shape()[axis];
      std::vector<double> sc, zp;
      for (int64_t c = 0; c < count; ++c) {
        sc.push_back(0.125 * rnd(1, 8));
        zp.push_back(dt == DType::u8 ? rnd(0, 255) : rnd(-128, 127));
      }
      const Tensor st = count == 1 ? scalar(DType::f32, sc[0]) : vec(DType::f32, sc);
      const Tensor zt = count == 1 ? scalar(dt, zp[0]) : vec(dt, zp);
      for (int64_t i = 0; i < xs.numel(); ++i)
        xs.set_from_double(i, (rnd(-300, 300) + (i % 3 == 0 ? 0.5 : 0.37 * rnd(0, 2))) *
                                  sc[count == 1 ? 0
                                                : (axis == 0   ? i / 20
                                                   : axis == 1 ? i / 5 % 4
                                                               : i % 5)]);
      const int64_t ax = axis < 0 ? 1 : axis;
      const Tensor q = cpu_backend::quantize_linear_cpu(xs, st, &zt, ax);
      EXPECT_EQ(ints(q), ints(reference_linear("QuantizeLinear", {&xs, &st, &zt}, ax, dt)))
          << dtype_to_string(dt) << " axis " << axis;
      const Tensor d = cpu_backend::dequantize_linear_cpu(q, st, &zt, ax);
      EXPECT_EQ(
          d.to_float_vector(),
          reference_linear("DequantizeLinear", {&q, &st, &zt}, ax, DType::f32).to_float_vector())
          << dtype_to_string(dt) << " axis " << axis;
    }
  // DequantizeLinear of an int32 bias (scale sx * sw).
  const Tensor b = vec(DType::i32, {3, -5, 1 << 20}), bs = scalar(DType::f32, 0.125);
  EXPECT_EQ(cpu_backend::dequantize_linear_cpu(b, bs, nullptr).to_float_vector(),
            (std::vector<float>{0.375f, -0.625f, 131072.0f}));
}

TEST(CpuQGemm, OnnxNodeTestsOfQuantizeAndDequantizeLinear) {
  if (!std::ifstream(kOnnxDataDir + "/node/test_quantizelinear/model.onnx").good())
    GTEST_SKIP() << "libonnx-testdata missing";
  for (const std::string name : {"test_quantizelinear", "test_quantizelinear_axis",
                                 "test_dequantizelinear", "test_dequantizelinear_axis"}) {
    NodeCase c = node_case(name);
    const Node& n = *c.graph->nodes().at(0);
    const int64_t axis = n.attrs.get_int_or("axis", 1, n.name);
    const Tensor* zp = c.in.size() > 2 ? &c.in[2] : nullptr;
    const Tensor got = name.find("de") == 5
                           ? cpu_backend::dequantize_linear_cpu(c.in[0], c.in[1], zp, axis)
                           : cpu_backend::quantize_linear_cpu(c.in[0], c.in[1], zp, axis);
    EXPECT_EQ(got.dtype(), c.want.dtype()) << name;
    EXPECT_EQ(got.to_float_vector(), c.want.to_float_vector()) << name;
  }
}

/// The CPU kernel's result for a QLinearConv or QLinearMatMul node of a graph, from its inputs.
Tensor cpu_node(const Node& n, const std::vector<const Tensor*>& v, QGemmPath p,
                double* kernel_seconds) {
  if (n.op_type == "QLinearConv") {
    cpu_backend::QConvGeometry geo;
    geo.strides = n.attrs.get_ints_or("strides", {1, 1}, n.name);
    geo.pads = n.attrs.get_ints_or("pads", {0, 0, 0, 0}, n.name);
    geo.dilations = n.attrs.get_ints_or("dilations", {1, 1}, n.name);
    geo.group = n.attrs.get_int_or("group", 1, n.name);
    return cpu_backend::qlinear_conv_cpu(*v[0], *v[1], *v[2], *v[3], *v[4], *v[5], *v[6], *v[7],
                                         v.size() > 8 ? v[8] : nullptr, geo, p, kernel_seconds);
  }
  if (n.op_type == "QuantizeLinear" || n.op_type == "DequantizeLinear") {
    const int64_t axis = n.attrs.get_int_or("axis", 1, n.name);
    const Tensor* zp = v.size() > 2 ? v[2] : nullptr;
    return n.op_type == "QuantizeLinear"
               ? cpu_backend::quantize_linear_cpu(*v[0], *v[1], zp, axis)
               : cpu_backend::dequantize_linear_cpu(*v[0], *v[1], zp, axis);
  }
  return cpu_backend::qlinear_matmul_cpu(*v[0], *v[1], *v[2], *v[3], *v[4], *v[5], *v[6], *v[7],
                                         nullptr, p, kernel_seconds);
}

TEST(CpuQGemm, FoldedInt8ClassifierLayersMatchTheReferenceAndOnnxRuntime) {
  // The int8 PP-OCR classifier after fold_qdq (53 QLinearConv: 3x3 / 5x5 depthwise, strided,
  // pointwise; 1 QLinearMatMul; the QuantizeLinear / DequantizeLinear nodes left around the float
  // ops) on the golden input: every one of those nodes' outputs is recomputed by the CPU kernels
  // from the node's inputs and compared with the reference's, then put in its place, so the model's
  // output comes from the CPU kernels' integers and is checked against ONNX Runtime's (optimisation
  // level all).
  const std::string src = TESSEL_SOURCE_DIR;
  const std::string model = src + "/tests/data/models/ch_ppocr_mobile_v2.0_cls_infer_int8.onnx";
  auto g = driver::load_model(model, {{"x", {1, 3, 48, 192}}});  // every pass, fold_qdq included
  const std::string dir = src + "/tests/data/cases/ppocr_cls_int8_b1_ort_all/test_data_set_0";
  const std::map<std::string, Tensor> inputs = {
      {"x", frontend::load_tensor_pb(dir + "/input_0.pb")}};
  const Tensor ort = frontend::load_tensor_pb(dir + "/output_0.pb");
  for (QGemmPath p : paths()) {
    std::map<const Value*, Tensor> seen;
    int layers = 0, equal = 0, qdq = 0, qdq_equal = 0;
    double seconds = 0, kernel_seconds = 0;
    ops::ValueHook hook = [&](const Value& v, const Node* producer, Tensor& t) {
      const bool linear = producer && (producer->op_type == "QuantizeLinear" ||
                                       producer->op_type == "DequantizeLinear");
      if (linear) {  // no timing: these are not the contraction layers
        std::vector<const Tensor*> in;
        for (const Value* i : producer->inputs) in.push_back(i ? &seen.at(i) : nullptr);
        Tensor got = cpu_node(*producer, in, p, nullptr);
        ++qdq;
        qdq_equal += got.dtype() == t.dtype() && got.to_float_vector() == t.to_float_vector();
        t = std::move(got);
      } else if (producer &&
                 (producer->op_type == "QLinearConv" || producer->op_type == "QLinearMatMul")) {
        std::vector<const Tensor*> in;
        for (const Value* i : producer->inputs) in.push_back(i ? &seen.at(i) : nullptr);
        const auto t0 = std::chrono::steady_clock::now();
        Tensor got = cpu_node(*producer, in, p, &kernel_seconds);
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ++layers;
        equal += ints(got) == ints(t);
        t = std::move(got);
      }
      seen[&v] = t;
    };
    const auto out = ops::run_reference(*g, inputs, hook);
    EXPECT_EQ(layers, 54) << cpu_backend::qgemm_path_name(p);
    EXPECT_EQ(equal, layers) << cpu_backend::qgemm_path_name(p);
    // The standalone Q/DQ pairs around the float ops (HardSwish, pooling, the softmax input).
    EXPECT_EQ(qdq, 115) << cpu_backend::qgemm_path_name(p);  // counted in the folded graph
    EXPECT_EQ(qdq_equal, qdq) << cpu_backend::qgemm_path_name(p);
    const auto got = out.at("softmax_0.tmp_0").to_float_vector(), want = ort.to_float_vector();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6);
    std::cout << "  " << cpu_backend::qgemm_path_name(p) << ": " << equal << " of " << layers
              << " layers and " << qdq_equal << " of " << qdq
              << " QuantizeLinear/DequantizeLinear bit-exact; " << seconds * 1e3
              << " ms in the CPU int8 layers (im2col, packing and kernels, one thread), "
              << kernel_seconds * 1e3 << " ms of it in the generated kernels; output " << got[0]
              << ", " << got[1] << " (ORT " << want[0] << ", " << want[1] << ")\n";
  }
}

}  // namespace
}  // namespace tessel::testing
