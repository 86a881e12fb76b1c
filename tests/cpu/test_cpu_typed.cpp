// Integer, bool and float64 tensors in the CPU backend's generated kernels (model_plan.h
// PlanOptions::typed_values, loop_codegen.h): graph inputs, outputs and intermediates in their
// own dtypes, the typed computes of lower::op_compute (comparisons, logic, Where, Cast, Gather,
// GatherElements, ArgMax/ArgMin, Trilu, Mod) and integer inputs of the ops exact on integers
// (wrapping Add/Sub/Mul, truncating Div, Min/Max/Abs/Neg/Clip/MaxPool, data movement).
//
// Every integer and bool output is compared with hand-derived values and with the reference
// interpreter element for element (dtype, shape and bytes equal); float outputs of typed ops
// (Where, Gather of floats, Cast to float) are exact too (they select or convert, never round
// twice). `EveryTypedOpHasACase` fails when a typed compute is added without a case here.
#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "compiler/backend/cpu/aot.h"
#include "compiler/lower/op_compute.h"
#include "tests/cpu/cpu_test_util.h"
#include "tests/test_tensors.h"

namespace tessel::testing {
namespace {

/// Runs `graph` on the CPU; every output has the reference's dtype, shape and bytes (NaN bits
/// aside: a float output compares NaN positions). Returns the CPU's outputs.
std::map<std::string, Tensor> run_exact(const Graph& graph,
                                        const std::map<std::string, Tensor>& in) {
  cpu_backend::CpuJit jit(cpu_backend::compile_cpu(graph));
  auto got = jit.run(in, true);
  EXPECT_FALSE(got.kernel_seconds.empty());
  expect_outputs_exact(got.outputs, ops::run_reference(graph, in));
  return got.outputs;
}

TEST(CpuTyped, IntegerGatherWithNegativeIndices) {
  // Gather axis 0 of an i64 [5, 3] table with i64 indices [[4, -1], [0, -5]] (-1 -> 4, -5 -> 0);
  // axis 1 with i32 indices [2, -3]; GatherElements axis 1 with [[0, 2, -1], ...].
  CpuGraph b;
  Value* data = b.input("data", {5, 3}, DType::i64);
  Value* idx = b.input("idx", {2, 2}, DType::i64);
  Value* idx1 = b.input("idx1", {2}, DType::i32);
  Value* eidx = b.input("eidx", {5, 3}, DType::i64);
  Value* g0 = b.node("Gather", {data, idx}, attrs({{"axis", int64_t{0}}}));
  Value* g1 = b.node("Gather", {data, idx1}, attrs({{"axis", int64_t{1}}}));
  Value* ge = b.node("GatherElements", {data, eidx}, attrs({{"axis", int64_t{1}}}));
  auto g = b.finish({g0, g1, ge});
  std::vector<double> d;
  for (int i = 0; i < 15; ++i) d.push_back(i == 7 ? 5000000000.0 : 10 * i - 30);  // > 2^32
  std::map<std::string, Tensor> in = {
      {"data", vec(DType::i64, d, {5, 3})},
      {"idx", vec(DType::i64, {4, -1, 0, -5}, {2, 2})},
      {"idx1", vec(DType::i32, {2, -3})},
      {"eidx", vec(DType::i64, {0, 2, -1, 1, 1, 1, 2, 0, 1, 0, 0, 0, -3, -2, -1}, {5, 3})}};
  auto out = run_exact(*g, in);
  EXPECT_EQ(values(out.at(g0->name)),
            (std::vector<double>{90, 100, 110, 90, 100, 110, -30, -20, -10, -30, -20, -10}));
  EXPECT_EQ(values(out.at(g1->name)),
            (std::vector<double>{-10, -30, 20, 0, 50, 30, 80, 60, 110, 90}));
  EXPECT_EQ(values(out.at(ge->name)),
            (std::vector<double>{-30, -10, -10, 10, 10, 10, 50, 30, 5000000000.0, 60, 60, 60, 90,
                                 100, 110}));
  EXPECT_EQ(out.at(g0->name).dtype(), DType::i64);
}

TEST(CpuTyped, ScatterElementsLastUpdateWinsAndReductionsCombine) {
  // data [2, 4] = [[0, 1, 2, 3], [4, 5, 6, 7]], indices [[3, -1, 0]] (one row: data row 1 is
  // out of the indices' reach; -1 is column 3, so column 3 is updated twice), updates [[100, 200,
  // 300]] along axis 1: none -> [[300, 1, 2, 200], row 1 kept] (the last update wins), add ->
  // column 3 = 3 + 100 + 200, mul -> 3 * 100 * 200 and column 0 = 0 * 300. Scatter (opset 9)
  // along axis 0: out[idx[i][j]][j] = upd[i][j].
  CpuGraph b;
  Value* data = b.input("data", {2, 4}, DType::i64);
  Value* idx = b.input("idx", {1, 3}, DType::i64);
  Value* upd = b.input("upd", {1, 3}, DType::i64);
  Value* z = b.input("z", {3, 2}, DType::i32);
  Value* sidx = b.input("sidx", {2, 2}, DType::i64);
  Value* supd = b.input("supd", {2, 2}, DType::i32);
  auto scatter = [&](const char* reduction) {
    return b.node("ScatterElements", {data, idx, upd},
                  attrs({{"axis", int64_t{1}}, {"reduction", std::string(reduction)}}));
  };
  Value* none = scatter("none");
  Value* add = scatter("add");
  Value* mul = scatter("mul");
  Value* old = b.node("Scatter", {z, sidx, supd}, attrs({{"axis", int64_t{0}}}));
  auto g = b.finish({none, add, mul, old});
  std::map<std::string, Tensor> in = {{"data", vec(DType::i64, {0, 1, 2, 3, 4, 5, 6, 7}, {2, 4})},
                                      {"idx", vec(DType::i64, {3, -1, 0}, {1, 3})},
                                      {"upd", vec(DType::i64, {100, 200, 300}, {1, 3})},
                                      {"z", vec(DType::i32, {0, 0, 0, 0, 0, 0}, {3, 2})},
                                      {"sidx", vec(DType::i64, {1, 0, 2, 1}, {2, 2})},
                                      {"supd", vec(DType::i32, {10, 11, 20, 21}, {2, 2})}};
  auto out = run_exact(*g, in);
  EXPECT_EQ(values(out.at(none->name)), (std::vector<double>{300, 1, 2, 200, 4, 5, 6, 7}));
  EXPECT_EQ(values(out.at(add->name)), (std::vector<double>{300, 1, 2, 303, 4, 5, 6, 7}));
  EXPECT_EQ(values(out.at(mul->name)), (std::vector<double>{0, 1, 2, 60000, 4, 5, 6, 7}));
  EXPECT_EQ(values(out.at(old->name)), (std::vector<double>{0, 11, 10, 21, 20, 0}));
}

TEST(CpuTyped, ScatterNDAndGatherND) {
  // data [4, 2] = [[0, 1], [2, 3], [4, 5], [6, 7]], row indices [[2], [-1], [2]] (row 2 twice,
  // -1 is row 3), updates [[10, 11], [20, 21], [30, 31]]: none -> row 2 = [30, 31] (last), row
  // 3 = [20, 21]; add -> row 2 = [4 + 10 + 30, 5 + 11 + 31]; mul -> [4 * 10 * 30, 5 * 11 * 31].
  // Element indices [[0, 1], [3, 0]] with updates [100, 200]. GatherND of data3 [2, 2, 2] = 0..7
  // by [[0, 1], [1, -1]] -> [[2, 3], [6, 7]]; batch_dims 1 by [[1], [0]] -> [[2, 3], [4, 5]].
  CpuGraph b;
  Value* data = b.input("data", {4, 2}, DType::i64);
  Value* idx = b.input("idx", {3, 1}, DType::i64);
  Value* upd = b.input("upd", {3, 2}, DType::i64);
  Value* eidx = b.input("eidx", {2, 2}, DType::i64);
  Value* eupd = b.input("eupd", {2}, DType::i64);
  Value* d3 = b.input("d3", {2, 2, 2}, DType::i32);
  Value* g0 = b.input("g0", {2, 2}, DType::i64);
  Value* g1 = b.input("g1", {2, 1}, DType::i64);
  auto scatter = [&](Value* i, Value* u, const char* reduction) {
    return b.node("ScatterND", {data, i, u}, attrs({{"reduction", std::string(reduction)}}));
  };
  Value* none = scatter(idx, upd, "none");
  Value* add = scatter(idx, upd, "add");
  Value* mul = scatter(idx, upd, "mul");
  Value* elem = scatter(eidx, eupd, "none");
  Value* gnd = b.node("GatherND", {d3, g0});
  Value* gb = b.node("GatherND", {d3, g1}, attrs({{"batch_dims", int64_t{1}}}));
  auto g = b.finish({none, add, mul, elem, gnd, gb});
  std::map<std::string, Tensor> in = {{"data", vec(DType::i64, {0, 1, 2, 3, 4, 5, 6, 7}, {4, 2})},
                                      {"idx", vec(DType::i64, {2, -1, 2}, {3, 1})},
                                      {"upd", vec(DType::i64, {10, 11, 20, 21, 30, 31}, {3, 2})},
                                      {"eidx", vec(DType::i64, {0, 1, 3, 0}, {2, 2})},
                                      {"eupd", vec(DType::i64, {100, 200})},
                                      {"d3", vec(DType::i32, {0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2})},
                                      {"g0", vec(DType::i64, {0, 1, 1, -1}, {2, 2})},
                                      {"g1", vec(DType::i64, {1, 0}, {2, 1})}};
  auto out = run_exact(*g, in);
  EXPECT_EQ(values(out.at(none->name)), (std::vector<double>{0, 1, 2, 3, 30, 31, 20, 21}));
  EXPECT_EQ(values(out.at(add->name)), (std::vector<double>{0, 1, 2, 3, 44, 47, 26, 28}));
  EXPECT_EQ(values(out.at(mul->name)), (std::vector<double>{0, 1, 2, 3, 1200, 1705, 120, 147}));
  EXPECT_EQ(values(out.at(elem->name)), (std::vector<double>{0, 100, 2, 3, 4, 5, 200, 7}));
  EXPECT_EQ(values(out.at(gnd->name)), (std::vector<double>{2, 3, 6, 7}));
  EXPECT_EQ(values(out.at(gb->name)), (std::vector<double>{2, 3, 4, 5}));
}

TEST(CpuTyped, BitShiftReverseSequenceAndPowByIntegers) {
  // u8 [16, 4, 1, 255] << [1, 2, 3, 8] = [32, 16, 8, 0] (a shift by the width gives 0), >> the
  // same = [8, 1, 0, 0]; u64 [1, 2^63, 12345678901234] << [63, 1, 4] = [2^63, 0 (wraps),
  // 197530862419744], >> = [0, 2^62, 771604931327]. ReverseSequence of x[t][b] = 10 t + b
  // [4, 2] (time axis 0) with lengths [3, 1]: column 0 -> [20, 10, 0, 30], column 1 kept. Pow of
  // floats [2, -3, 0.5] by i32 [3, 3, -2] = [8, -27, 4].
  CpuGraph b;
  Value* x8 = b.input("x8", {4}, DType::u8);
  Value* y8 = b.input("y8", {4}, DType::u8);
  Value* x64 = b.input("x64", {3}, DType::u64);
  Value* y64 = b.input("y64", {3}, DType::u64);
  Value* xs = b.input("xs", {4, 2});
  Value* lens = b.input("lens", {2}, DType::i64);
  Value* px = b.input("px", {3});
  Value* py = b.input("py", {3}, DType::i32);
  auto shift = [&](Value* x, Value* y, const char* dir) {
    return b.node("BitShift", {x, y}, attrs({{"direction", std::string(dir)}}));
  };
  Value* l8 = shift(x8, y8, "LEFT");
  Value* r8 = shift(x8, y8, "RIGHT");
  Value* l64 = shift(x64, y64, "LEFT");
  Value* r64 = shift(x64, y64, "RIGHT");
  Value* rev = b.node("ReverseSequence", {xs, lens},
                      attrs({{"time_axis", int64_t{0}}, {"batch_axis", int64_t{1}}}));
  Value* pw = b.node("Pow", {px, py});
  auto g = b.finish({l8, r8, l64, r64, rev, pw});
  Tensor x64v(DType::u64, {3});
  x64v.data<uint64_t>()[0] = 1;
  x64v.data<uint64_t>()[1] = uint64_t{1} << 63;
  x64v.data<uint64_t>()[2] = 12345678901234ull;
  std::map<std::string, Tensor> in = {
      {"x8", vec(DType::u8, {16, 4, 1, 255})},
      {"y8", vec(DType::u8, {1, 2, 3, 8})},
      {"x64", x64v},
      {"y64", vec(DType::u64, {63, 1, 4})},
      {"xs", vec(DType::f32, {0, 1, 10, 11, 20, 21, 30, 31}, {4, 2})},
      {"lens", vec(DType::i64, {3, 1})},
      {"px", vec(DType::f32, {2, -3, 0.5})},
      {"py", vec(DType::i32, {3, 3, -2})}};
  cpu_backend::CpuJit jit(cpu_backend::compile_cpu(*g));
  auto out = jit.run(in, true).outputs;
  EXPECT_EQ(values(out.at(l8->name)), (std::vector<double>{32, 16, 8, 0}));
  EXPECT_EQ(values(out.at(r8->name)), (std::vector<double>{8, 1, 0, 0}));
  EXPECT_EQ(out.at(l64->name).data<uint64_t>()[0], uint64_t{1} << 63);
  EXPECT_EQ(out.at(l64->name).data<uint64_t>()[1], 0u);
  EXPECT_EQ(out.at(l64->name).data<uint64_t>()[2], 197530862419744ull);
  EXPECT_EQ(out.at(r64->name).data<uint64_t>()[0], 0u);
  EXPECT_EQ(out.at(r64->name).data<uint64_t>()[1], uint64_t{1} << 62);
  EXPECT_EQ(out.at(r64->name).data<uint64_t>()[2], 771604931327ull);
  EXPECT_EQ(values(out.at(rev->name)), (std::vector<double>{20, 1, 10, 11, 0, 21, 30, 31}));
  const auto p = values(out.at(pw->name));  // exp(y log|x|) in fp32: a few ulp
  ASSERT_EQ(p.size(), 3u);
  EXPECT_NEAR(p[0], 8.0, 1e-4);
  EXPECT_NEAR(p[1], -27.0, 1e-4);
  EXPECT_NEAR(p[2], 4.0, 1e-4);
}

TEST(CpuTyped, PowOfAnIntegerBaseIsRefusedNamingTheNode) {
  CpuGraph b;
  Value* x = b.input("x", {3}, DType::i64);
  Value* y = b.input("y", {3}, DType::i64);
  Value* z = b.node("Pow", {x, y});
  auto g = b.finish({z});
  try {
    cpu_backend::compile_cpu(*g);
    FAIL() << "compiled";
  } catch (const Unsupported& e) {
    EXPECT_NE(std::string(e.what()).find("Pow of an integer base"), std::string::npos) << e.what();
  }
}

TEST(CpuTyped, ComparisonsAndWhere) {
  // Less / Greater / Equal of i32 (broadcast), of floats with NaN (every ordered comparison
  // with NaN is false, Not(Equal) true), And / Or / Xor / Not of bools, Where selecting i64.
  CpuGraph b;
  Value* a = b.input("a", {2, 4}, DType::i32);
  Value* c = b.input("c", {4}, DType::i32);
  Value* x = b.input("x", {4});
  Value* y = b.input("y", {4});
  Value* p = b.input("p", {4}, DType::i64);
  Value* q = b.input("q", {4}, DType::i64);
  Value* lt = b.node("Less", {a, c});
  Value* gt = b.node("Greater", {a, c});
  Value* le = b.node("LessOrEqual", {a, c});
  Value* ge = b.node("GreaterOrEqual", {x, y});
  Value* eq = b.node("Equal", {x, y});
  Value* ne = b.node("Not", {eq});
  Value* both = b.node("And", {ge, ne});
  Value* either = b.node("Or", {ge, eq});
  Value* xo = b.node("Xor", {ge, ne});
  Value* w = b.node("Where", {ge, p, q});
  auto g = b.finish({lt, gt, le, eq, ne, both, either, xo, w});
  const double nan = std::nan("");
  std::map<std::string, Tensor> in = {
      {"a", vec(DType::i32, {-5, 0, 7, 2147483647, 3, 3, 3, -2147483648.0}, {2, 4})},
      {"c", vec(DType::i32, {-6, 0, 8, -1})},
      {"x", vec(DType::f32, {1.5, nan, -0.0, 2})},
      {"y", vec(DType::f32, {1.5, nan, 0.0, 3})},
      {"p", vec(DType::i64, {1, 2, 3, 4})},
      {"q", vec(DType::i64, {-1, -2, -3, -9000000000.0})}};
  auto out = run_exact(*g, in);
  EXPECT_EQ(out.at(lt->name).dtype(), DType::boolean);
  EXPECT_EQ(values(out.at(lt->name)), (std::vector<double>{0, 0, 1, 0, 0, 0, 1, 1}));
  EXPECT_EQ(values(out.at(gt->name)), (std::vector<double>{1, 0, 0, 1, 1, 1, 0, 0}));
  EXPECT_EQ(values(out.at(le->name)), (std::vector<double>{0, 1, 1, 0, 0, 0, 1, 1}));
  EXPECT_EQ(values(out.at(eq->name)), (std::vector<double>{1, 0, 1, 0}));  // -0 == 0
  EXPECT_EQ(values(out.at(ne->name)), (std::vector<double>{0, 1, 0, 1}));
  EXPECT_EQ(values(out.at(both->name)), (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(values(out.at(either->name)), (std::vector<double>{1, 0, 1, 0}));
  EXPECT_EQ(values(out.at(xo->name)), (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(values(out.at(w->name)), (std::vector<double>{1, -2, 3, -9000000000.0}));
}

TEST(CpuTyped, CastRules) {
  // float -> integer truncates toward zero and saturates (NaN -> 0), as the reference's Cast;
  // float -> bool is x != 0 (NaN -> true, -0 -> false); integer -> integer wraps; bool -> number
  // is 0 / 1; integer -> float rounds (2^24 + 1 -> 2^24 in fp32).
  CpuGraph b;
  Value* f = b.input("f", {8});
  Value* i = b.input("i", {6}, DType::i64);
  Value* u = b.input("u", {3}, DType::u8);
  Value* s = b.input("s", {3}, DType::i8);
  auto cast = [&](Value* v, DType to) {
    return b.node("Cast", {v}, attrs({{"to", static_cast<int64_t>(to)}}));
  };
  Value* f_i32 = cast(f, DType::i32);
  Value* f_u8 = cast(f, DType::u8);
  Value* f_b = cast(f, DType::boolean);
  Value* b_f = cast(f_b, DType::f32);
  Value* b_i64 = cast(f_b, DType::i64);
  Value* i_i8 = cast(i, DType::i8);
  Value* i_f = cast(i, DType::f32);
  Value* u_i32 = cast(u, DType::i32);
  Value* s_u16 = cast(s, DType::u16);
  Value* s_i64 = cast(s, DType::i64);
  auto g = b.finish({f_i32, f_u8, f_b, b_f, b_i64, i_i8, i_f, u_i32, s_u16, s_i64});
  const double nan = std::nan("");
  std::map<std::string, Tensor> in = {
      {"f", vec(DType::f32, {2.7, -2.7, nan, 1e10, -1e10, -0.0, 300.5, 0.4})},
      {"i", vec(DType::i64, {300, -129, 127, -1, 16777217, -9000000000.0})},
      {"u", vec(DType::u8, {0, 200, 255})},
      {"s", vec(DType::i8, {-1, -128, 5})}};
  auto out = run_exact(*g, in);
  EXPECT_EQ(values(out.at(f_i32->name)),
            (std::vector<double>{2, -2, 0, 2147483647, -2147483648.0, 0, 300, 0}));
  EXPECT_EQ(values(out.at(f_u8->name)), (std::vector<double>{2, 0, 0, 255, 0, 0, 255, 0}));
  EXPECT_EQ(values(out.at(f_b->name)), (std::vector<double>{1, 1, 1, 1, 1, 0, 1, 1}));
  EXPECT_EQ(values(out.at(b_f->name)), (std::vector<double>{1, 1, 1, 1, 1, 0, 1, 1}));
  EXPECT_EQ(values(out.at(b_i64->name)), (std::vector<double>{1, 1, 1, 1, 1, 0, 1, 1}));
  EXPECT_EQ(values(out.at(i_i8->name)), (std::vector<double>{44, 127, 127, -1, 1, 0}));
  EXPECT_EQ(values(out.at(i_f->name)),
            (std::vector<double>{300, -129, 127, -1, 16777216, -8999999488.0}));  // ties to even
  EXPECT_EQ(values(out.at(u_i32->name)), (std::vector<double>{0, 200, 255}));
  EXPECT_EQ(values(out.at(s_u16->name)), (std::vector<double>{65535, 65408, 5}));
  EXPECT_EQ(values(out.at(s_i64->name)), (std::vector<double>{-1, -128, 5}));
  EXPECT_EQ(out.at(s_u16->name).dtype(), DType::u16);
}

TEST(CpuTyped, IntegerArithmeticWrapsAndDivTruncates) {
  // i32 Div truncates toward zero; Mod fmod=0 takes the divisor's sign, fmod=1 the dividend's;
  // u8 Div / Sub / Mul are unsigned and wrap; i32 Add wraps at 2^31; Abs / Neg / Min / Max.
  CpuGraph b;
  Value* a = b.input("a", {6}, DType::i32);
  Value* d = b.input("d", {6}, DType::i32);
  Value* ua = b.input("ua", {4}, DType::u8);
  Value* ud = b.input("ud", {4}, DType::u8);
  Value* div = b.node("Div", {a, d});
  Value* mod = b.node("Mod", {a, d});
  Value* fmod = b.node("Mod", {a, d}, attrs({{"fmod", int64_t{1}}}));
  Value* add = b.node("Add", {a, d});
  Value* mul = b.node("Mul", {a, d});
  Value* udiv = b.node("Div", {ua, ud});
  Value* usub = b.node("Sub", {ua, ud});
  Value* umul = b.node("Mul", {ua, ud});
  Value* umod = b.node("Mod", {ua, ud});
  Value* abs = b.node("Abs", {a});
  Value* neg = b.node("Neg", {a});
  Value* mn = b.node("Min", {a, d});
  Value* mx = b.node("Max", {ua, ud});
  auto g = b.finish({div, mod, fmod, add, mul, udiv, usub, umul, umod, abs, neg, mn, mx});
  std::map<std::string, Tensor> in = {
      {"a", vec(DType::i32, {7, -7, 7, -7, 2147483647, -2147483647})},
      {"d", vec(DType::i32, {2, 2, -2, -2, 1, 3})},
      {"ua", vec(DType::u8, {200, 3, 255, 16})},
      {"ud", vec(DType::u8, {3, 5, 2, 16})}};
  auto out = run_exact(*g, in);
  EXPECT_EQ(values(out.at(div->name)), (std::vector<double>{3, -3, -3, 3, 2147483647, -715827882}));
  EXPECT_EQ(values(out.at(mod->name)), (std::vector<double>{1, 1, -1, -1, 0, 2}));
  EXPECT_EQ(values(out.at(fmod->name)), (std::vector<double>{1, -1, 1, -1, 0, -1}));
  EXPECT_EQ(values(out.at(add->name)),
            (std::vector<double>{9, -5, 5, -9, -2147483648.0, -2147483644}));
  EXPECT_EQ(values(out.at(mul->name)),
            (std::vector<double>{14, -14, -14, 14, 2147483647, -2147483645}));  // wraps
  EXPECT_EQ(values(out.at(udiv->name)), (std::vector<double>{66, 0, 127, 1}));
  EXPECT_EQ(values(out.at(usub->name)), (std::vector<double>{197, 254, 253, 0}));
  EXPECT_EQ(values(out.at(umul->name)), (std::vector<double>{88, 15, 254, 0}));
  EXPECT_EQ(values(out.at(umod->name)), (std::vector<double>{2, 3, 1, 0}));
  EXPECT_EQ(values(out.at(abs->name)), (std::vector<double>{7, 7, 7, 7, 2147483647, 2147483647}));
  EXPECT_EQ(values(out.at(neg->name)),
            (std::vector<double>{-7, 7, -7, 7, -2147483647, 2147483647}));
  EXPECT_EQ(values(out.at(mn->name)), (std::vector<double>{2, -7, -2, -7, 1, -2147483647}));
  EXPECT_EQ(values(out.at(mx->name)), (std::vector<double>{200, 5, 255, 16}));
}

TEST(CpuTyped, ArgMaxArgMinTies) {
  // Ties: the first index, or the last with select_last_index=1; rows of 37 (a vector tail) with
  // the extreme repeated; i32 input for ArgMin; keepdims=0.
  CpuGraph b;
  Value* x = b.input("x", {3, 37});
  Value* xi = b.input("xi", {3, 37}, DType::i32);
  Value* first = b.node("ArgMax", {x}, attrs({{"axis", int64_t{1}}}));
  Value* last =
      b.node("ArgMax", {x}, attrs({{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}}));
  Value* amin = b.node("ArgMin", {xi}, attrs({{"axis", int64_t{-1}}, {"keepdims", int64_t{0}}}));
  Value* amin0 = b.node("ArgMin", {xi}, attrs({{"axis", int64_t{0}}}));
  auto g = b.finish({first, last, amin, amin0});
  std::vector<double> xv(3 * 37), iv(3 * 37);
  for (int r = 0; r < 3; ++r)
    for (int k = 0; k < 37; ++k) {
      xv[r * 37 + k] = (k * 7 + r) % 11 * 0.25;  // max 2.5 at several k
      iv[r * 37 + k] = (k * 5 + r) % 13 - 6;     // min -6 at several k
    }
  // Row 2 all equal: first 0, last 36.
  for (int k = 0; k < 37; ++k) xv[2 * 37 + k] = -1.5;
  auto out =
      run_exact(*g, {{"x", vec(DType::f32, xv, {3, 37})}, {"xi", vec(DType::i32, iv, {3, 37})}});
  // Row 0: (7k) % 11 == 10 at k = 3, 14, 25, 36; row 1: (7k + 1) % 11 == 10 at k = 6, 17, 28.
  EXPECT_EQ(values(out.at(first->name)), (std::vector<double>{3, 6, 0}));
  EXPECT_EQ(values(out.at(last->name)), (std::vector<double>{36, 28, 36}));
  EXPECT_EQ(out.at(first->name).dtype(), DType::i64);
  EXPECT_EQ(out.at(first->name).shape(), (Shape{3, 1}));
  // (5k + r) % 13 == 0: row 0 k = 0, 13, 26; row 1 k = 5, 18, 31; row 2 k = 10, 23, 36.
  EXPECT_EQ(values(out.at(amin->name)), (std::vector<double>{0, 5, 10}));
  EXPECT_EQ(out.at(amin->name).shape(), (Shape{3}));
}

TEST(CpuTyped, TriluClipMaxPoolAndDataMovementOnIntegers) {
  // Trilu of i64 with a runtime k, Clip of i32 with scalar bounds, MaxPool of u8 with padding
  // (the pad is the type's minimum, never a value), Transpose / Concat / Slice / Expand / Tile of
  // integers, an int64 graph output that is a view of an input (a typed copy kernel).
  CpuGraph b;
  Value* m = b.input("m", {3, 4}, DType::i64);
  Value* k = b.input("k", {}, DType::i64);
  Value* ci = b.input("ci", {5}, DType::i32);
  Value* img = b.input("img", {1, 1, 3, 3}, DType::u8);
  Value* tu = b.node("Trilu", {m, k});
  Value* tl = b.node("Trilu", {m, k}, attrs({{"upper", int64_t{0}}}));
  Value* lo = b.constant("lo", scalar(DType::i32, -3));
  Value* hi = b.constant("hi", scalar(DType::i32, 100000));
  Value* cl = b.node("Clip", {ci, lo, hi});
  Value* mp = b.node("MaxPool", {img},
                     attrs({{"kernel_shape", std::vector<int64_t>{2, 2}},
                            {"pads", std::vector<int64_t>{1, 1, 0, 0}}}));
  Value* tr = b.node("Transpose", {m});
  Value* cc = b.node("Concat", {m, m}, attrs({{"axis", int64_t{0}}}));
  Value* rs = b.node("Reshape", {m, b.constant("shape", vec(DType::i64, {4, 3}))});
  auto g = b.finish({tu, tl, cl, mp, tr, cc, rs});
  std::vector<double> mv;
  for (int i = 0; i < 12; ++i) mv.push_back(i - 4 + (i == 5 ? 1e12 : 0));
  auto out = run_exact(*g, {{"m", vec(DType::i64, mv, {3, 4})},
                            {"k", scalar(DType::i64, 1)},
                            {"ci", vec(DType::i32, {-100, -3, 0, 99999, 2000000000})},
                            {"img", vec(DType::u8, {0, 1, 2, 3, 4, 255, 6, 7, 8}, {1, 1, 3, 3})}});
  // upper, k = 1: keep j - i >= 1.
  EXPECT_EQ(values(out.at(tu->name)), (std::vector<double>{0, -3, -2, -1, 0, 0, 2, 3, 0, 0, 0, 7}));
  EXPECT_EQ(values(out.at(tl->name)),
            (std::vector<double>{-4, -3, 0, 0, 0, 1e12 + 1, 2, 0, 4, 5, 6, 7}));
  EXPECT_EQ(values(out.at(cl->name)), (std::vector<double>{-3, -3, 0, 99999, 100000}));
  EXPECT_EQ(values(out.at(mp->name)), (std::vector<double>{0, 1, 2, 3, 4, 255, 6, 7, 255}));
  EXPECT_EQ(out.at(rs->name).dtype(), DType::i64);
}

TEST(CpuTyped, Float64ComputesInDouble) {
  // Values beyond fp32's range and digits beyond its precision survive: Add, Mul, a reduction,
  // Softmax, a Cast to and from float32, a MatMul (generic schedule, not the fp32 BLIS one).
  CpuGraph b;
  Value* x = b.input("x", {2, 3}, DType::f64);
  Value* y = b.input("y", {3, 2}, DType::f64);
  Value* z = b.input("z", {3}, DType::f64);
  Value* add = b.node("Add", {x, x});
  Value* mul = b.node("Mul", {x, b.constant("c", scalar(DType::f64, 1.0000000001))});
  Value* mm = b.node("MatMul", {x, y});
  Value* sm = b.node("Softmax", {b.node("Cast", {z}, attrs({{"to", int64_t{1}}}))});
  Value* back = b.node("Cast", {sm}, attrs({{"to", int64_t{11}}}));
  auto g = b.finish({add, mul, mm, back});
  auto got = check_cpu(*g,
                       {{"x", vec(DType::f64, {1e200, -3e250, 1.0, 2.0, 0.5, 1 + 1e-12}, {2, 3})},
                        {"y", vec(DType::f64, {1, 2, 3, 4, 5, 6}, {3, 2})},
                        {"z", vec(DType::f64, {0.5, 1, 2})}},
                       1e-7);
  EXPECT_EQ(got.outputs.at(add->name).dtype(), DType::f64);
  EXPECT_EQ(got.outputs.at(add->name).get_as_double(0), 2e200);
  EXPECT_EQ(got.outputs.at(add->name).get_as_double(5), 2 + 2e-12);
  EXPECT_EQ(got.outputs.at(mul->name).get_as_double(1), -3e250 * 1.0000000001);
  EXPECT_EQ(got.outputs.at(back->name).dtype(), DType::f64);
}

TEST(CpuTyped, SharedLibraryTakesIntegerAndBoolBuffers) {
  // AOT: an i64 input, a bool and an i32 output through the C entry point (pointers cast to
  // float*, as the header says), the header naming each buffer's C type and dtype.
  CpuGraph b;
  Value* x = b.input("x", {5}, DType::i64);
  Value* t = b.constant("t", scalar(DType::i64, 3));
  Value* gt = b.node("Greater", {x, t});
  Value* c = b.node("Cast", {b.node("Add", {x, t})}, attrs({{"to", int64_t{6}}}));
  auto g = b.finish({gt, c});
  auto prog = cpu_backend::compile_cpu(*g);
  CpuTempDir dir;
  const auto so = dir.path / "typed.so";
  cpu_backend::write_shared_library(prog, so.string(), "typed");
  const std::string header = cpu_backend::c_header(prog, "typed");
  EXPECT_NE(header.find("int64_t[5]"), std::string::npos) << header;
  EXPECT_NE(header.find("TESSEL_MODEL_OUTPUT_0_DTYPE \"bool\""), std::string::npos) << header;
  EXPECT_NE(header.find("TESSEL_MODEL_OUTPUT_1_DTYPE \"i32\""), std::string::npos) << header;
  void* h = ::dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr) << ::dlerror();
  auto run = reinterpret_cast<int (*)(const float**, float**)>(::dlsym(h, "tessel_model_run"));
  ASSERT_NE(run, nullptr);
  int64_t xin[5] = {1, 3, 4, -7, 5000000000};
  uint8_t gout[5] = {9, 9, 9, 9, 9};
  int32_t cout[5] = {};
  const float* ins[] = {reinterpret_cast<const float*>(xin)};
  float* outs[] = {reinterpret_cast<float*>(gout), reinterpret_cast<float*>(cout)};
  EXPECT_EQ(run(ins, outs), 0);
  EXPECT_EQ(std::vector<int>(gout, gout + 5), (std::vector<int>{0, 0, 1, 0, 1}));
  // 5000000003 wraps to 5000000003 - 2^32 = 705032707.
  EXPECT_EQ(std::vector<int32_t>(cout, cout + 5), (std::vector<int32_t>{4, 6, 7, -4, 705032707}));
  ::dlclose(h);
}

TEST(CpuTyped, VectorizedAndParallelIntegerKernelsMatchTheReference) {
  // Rows of 45 (vector loops with a masked / scalar tail), and a 64 x 1024 i64 Add (a parallel
  // loop outlined with typed buffer pointers): i32 Add, Cast f32 -> i16 and -> bool, Less of u8,
  // Where over i64 with a bool condition, Gather of a [45, 45] f32 table by i64 indices, ArgMax
  // along axis 0; all equal to the reference element for element.
  CpuGraph b;
  Value* a = b.input("a", {5, 45}, DType::i32);
  Value* c = b.input("c", {5, 45}, DType::i32);
  Value* f = b.input("f", {5, 45});
  Value* u = b.input("u", {5, 45}, DType::u8);
  Value* v = b.input("v", {5, 45}, DType::u8);
  Value* p = b.input("p", {5, 45}, DType::i64);
  Value* big = b.input("big", {64, 1024}, DType::i64);
  Value* idx = b.input("idx", {5, 45}, DType::i64);
  Value* table = b.input("table", {45, 45});
  Value* add = b.node("Add", {a, c});
  Value* f16 = b.node("Cast", {f}, attrs({{"to", int64_t{5}}}));
  Value* fb = b.node("Cast", {f}, attrs({{"to", int64_t{9}}}));
  Value* lt = b.node("Less", {u, v});
  Value* w = b.node("Where", {lt, p, b.node("Neg", {p})});
  Value* g = b.node("Gather", {table, idx}, attrs({{"axis", int64_t{0}}}));
  Value* am = b.node("ArgMax", {a}, attrs({{"axis", int64_t{0}}}));
  Value* bb = b.node("Add", {big, big});
  auto graph = b.finish({add, f16, fb, lt, w, g, am, bb});
  Tensor fv = cpu_random({5, 45}, 7, -40000.f, 40000.f);
  for (int64_t i = 0; i < fv.numel(); i += 9) fv.set_from_double(i, 0.0);
  std::map<std::string, Tensor> in = {
      {"a", random_int_tensor({5, 45}, DType::i32, 1, -2147483648LL, 2147483647LL)},
      {"c", random_int_tensor({5, 45}, DType::i32, 2, -2147483648LL, 2147483647LL)},
      {"f", fv},
      {"u", random_int_tensor({5, 45}, DType::u8, 3, 0, 255)},
      {"v", random_int_tensor({5, 45}, DType::u8, 4, 0, 255)},
      {"p", random_int_tensor({5, 45}, DType::i64, 5, -(1LL << 50), 1LL << 50)},
      {"big", random_int_tensor({64, 1024}, DType::i64, 6, -(1LL << 62), 1LL << 62)},
      {"idx", random_int_tensor({5, 45}, DType::i64, 8, -45, 44)},
      {"table", cpu_random({45, 45}, 9)}};
  // The schedules really vectorized the integer kernels and ran the big Add in parallel.
  cpu_backend::CpuCompileOptions o;
  o.keep_loop_ir = true;
  const auto prog = cpu_backend::compile_cpu(*graph, o);
  std::map<std::string, std::string> ir;
  for (const auto& k : prog.kernels) ir[k.node] = k.loop_ir;
  EXPECT_NE(ir.at(add->producer->name).find("vectorized"), std::string::npos);
  EXPECT_NE(ir.at(w->producer->name).find("vectorized"), std::string::npos);
  EXPECT_NE(ir.at(bb->producer->name).find("parallel"), std::string::npos);
  auto out = run_exact(*graph, in);
  EXPECT_EQ(out.at(f16->name).dtype(), DType::i16);
  EXPECT_EQ(out.at(bb->name).dtype(), DType::i64);
}

TEST(CpuTyped, FloatOnlyOpsRefuseIntegerInputsByName) {
  CpuGraph b;
  // MatMul takes int32 in ONNX; its compute is a float contraction, so the CPU refuses it.
  Value* x = b.input("x", {2, 4}, DType::i32);
  Value* e = b.node("MatMul", {x, b.constant("w", vec(DType::i32, {1, 2, 3, 4}, Shape{4, 1}))});
  auto g = b.finish({e});
  try {
    cpu_backend::compile_cpu(*g);
    FAIL() << "MatMul of i32 tensors compiled";
  } catch (const Unsupported& err) {
    EXPECT_NE(std::string(err.what()).find("MatMul"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find("i32"), std::string::npos) << err.what();
  }
}

TEST(CpuTyped, IsNaNIsInfAndCastLike) {
  // IsNaN and IsInf (detect_negative 0: +inf only) give bool, bit-equal to the reference.
  CpuGraph b;
  Value* x = b.input("x", {6}, DType::f32);
  Value* nan = b.node("IsNaN", {x});
  Value* inf = b.node("IsInf", {x});
  Value* pinf = b.node("IsInf", {x}, attrs({{"detect_negative", int64_t{0}}}));
  auto g = b.finish({nan, inf, pinf});
  const double q = std::numeric_limits<double>::quiet_NaN(), i = INFINITY;
  auto out = run_exact(*g, {{"x", vec(DType::f32, {1.5, q, i, -i, -2.75, 0})}});
  EXPECT_EQ(values(out.at(nan->name)), (std::vector<double>{0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(values(out.at(inf->name)), (std::vector<double>{0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(values(out.at(pinf->name)), (std::vector<double>{0, 0, 1, 0, 0, 0}));
  EXPECT_EQ(out.at(nan->name).dtype(), DType::boolean);
  // CastLike takes the dtype of its second input (i32: truncation toward zero, as Cast).
  CpuGraph c;
  Value* y = c.input("y", {4}, DType::f32);
  Value* like = c.input("like", {1}, DType::i32);
  Value* cl = c.node("CastLike", {y, like});
  auto g2 = c.finish({cl});
  auto out2 = run_exact(
      *g2, {{"y", vec(DType::f32, {1.5, -2.75, 100.9, 0})}, {"like", vec(DType::i32, {7})}});
  EXPECT_EQ(values(out2.at(cl->name)), (std::vector<double>{1, -2, 100, 0}));
  EXPECT_EQ(out2.at(cl->name).dtype(), DType::i32);
}

TEST(CpuTyped, EveryTypedOpHasACase) {
  // The ops the cases above run (CpuOps.* covers the float ops).
  const std::set<std::string> covered = {"Equal",
                                         "Less",
                                         "LessOrEqual",
                                         "Greater",
                                         "GreaterOrEqual",
                                         "And",
                                         "Or",
                                         "Xor",
                                         "Not",
                                         "Where",
                                         "Cast",
                                         "Gather",
                                         "GatherElements",
                                         "ArgMax",
                                         "ArgMin",
                                         "Trilu",
                                         "Mod",
                                         "IsNaN",
                                         "IsInf",
                                         "CastLike",
                                         "ScatterElements",
                                         "Scatter",
                                         "ScatterND",
                                         "GatherND",
                                         "BitShift",
                                         "ReverseSequence"};
  for (const auto& op : lower::typed_compute_ops())
    EXPECT_TRUE(covered.count(op)) << op << " is a typed compute without a case here";
}

}  // namespace
}  // namespace tessel::testing
