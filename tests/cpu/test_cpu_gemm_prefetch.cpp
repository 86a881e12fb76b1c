// The weight prefetch of the BLIS schedule (passes/loop/cpu_gemm.cpp, knob
// CpuGemmKnobs::prefetch): in the k loop of every micro-tile, a loop-IR `prefetch` of the
// constant operand's next micro-panel (A: the next M panel's, or the chunk's first panel in the
// next K block; B: the next N panel's row), lowered to llvm.prefetch (prefetcht0 on x86).
// A prefetch changes no value, so the checks are: the loop IR has the statement on the operand
// the schedule says (and none when off), the native code has the instruction, and the outputs
// match the reference interpreter with the prefetch on and off on geometries where the "next"
// panel's address runs past the packed buffer (the last M panel of the last K block, the last N
// panel), several K blocks, M chunks (tasks_m), partial micro-tiles, the transposed orientation
// and a matmul by constant weights.
//
// Tolerance: K <= 1152 terms of magnitude <= 1 in fp32 with FMA and reassociation differ from
// the reference's sequential sum by <= K u max|y| ~ 1152 * 6e-8 = 7e-5 relative; 1e-4.
#include <sstream>

#include "compiler/backend/cpu/aot.h"
#include "tests/cpu/cpu_test_util.h"

namespace tessel::testing {
namespace {

struct PfCase {
  const char* name;
  Shape x;  // conv: N C H W; matmul: M K
  Shape w;  // conv: OC IC KH KW; matmul: K N
  int64_t pad;
  int64_t tasks_m;     // > 0: the knob (M chunks), else the schedule's choice
  int transposed;      // conv only: the knob
  const char* packed;  // the operand the prefetch must read: "A" or "B"
};

void PrintTo(const PfCase& c, std::ostream* os) { *os << c.name; }

const PfCase kCases[] = {
    // 3x3 pad 1, 40 output channels (partial M panels), 128 input channels x 9 = 1152 = several
    // K blocks, 15x13 pixels (partial N panels), two M chunks.
    {"conv3x3_kblocks_chunks", {1, 128, 15, 13}, {40, 128, 3, 3}, 1, 2, 0, "A"},
    // 1x1, one M chunk, a single N panel (the A prefetch step is mr elements).
    {"conv1x1_one_n_panel", {1, 64, 3, 5}, {24, 64, 1, 1}, 0, 1, 0, "A"},
    // layer4 class, transposed (weights are the vector panels B): 7x7 pixels.
    {"conv3x3_transposed", {1, 48, 7, 7}, {48, 48, 3, 3}, 1, 0, 1, "B"},
    // MatMul by a constant [K, N]: B constant, A packed at run time.
    {"matmul_const_b", {37, 300}, {300, 70}, 0, 0, -1, "B"},
};

class CpuGemmPrefetch : public ::testing::TestWithParam<PfCase> {};

TEST_P(CpuGemmPrefetch, MatchesReferenceOnAndOff) {
  const PfCase& c = GetParam();
  const bool conv = c.x.size() == 4;
  for (int pf : {-1, 0, 1}) {
    SCOPED_TRACE(fmt::format("prefetch knob {}", pf));
    CpuGraph b;
    Value* x = b.input("x", c.x);
    Value* w = b.constant("w", cpu_random(c.w, 61));
    Value* y = conv ? b.node("Conv", {x, w, b.constant("b", cpu_random({c.w[0]}, 62))},
                             attrs({{"pads", std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad}}}))
                    : b.node("MatMul", {x, w});
    y = b.node("Relu", {y});
    auto g = b.finish({y});
    cpu_backend::CpuCompileOptions opts;
    opts.keep_loop_ir = true;
    passes::CpuGemmKnobs k;
    k.prefetch = pf;
    if (c.tasks_m > 0) k.tasks_m = c.tasks_m;
    if (conv) k.transposed = c.transposed;
    opts.gemm_knobs[g->nodes().back()->name] = k;  // the kernel is named after the Relu
    auto prog = cpu_backend::compile_cpu(*g, opts);
    // Automatic (-1): A's prefetch only (B's measured slower on ResNet-50's layer4 and fc).
    const bool on = pf == 1 || (pf == -1 && std::string(c.packed) == "A");
    int gemm = 0;
    for (const auto& kern : prog.kernels) {
      if (kern.kind != "gemm") continue;
      ++gemm;
      EXPECT_EQ(kern.gemm.prefetch, on ? 1 : 0);
      if (c.tasks_m > 0) {
        EXPECT_EQ(kern.gemm.tasks_m, c.tasks_m);
      }
      // Every prefetch line reads the expected packed operand.
      int lines = 0;
      const std::string want = fmt::format(".{}_packed[", c.packed);
      std::istringstream text(kern.loop_ir);
      for (std::string line; std::getline(text, line);) {
        const size_t at = line.find_first_not_of(' ');
        if (at == std::string::npos || line.compare(at, 9, "prefetch ") != 0) continue;
        ++lines;
        EXPECT_NE(line.find(want), std::string::npos) << line;
      }
      EXPECT_EQ(lines > 0, on) << kern.loop_ir;
    }
    EXPECT_EQ(gemm, 1);
    if (on) {
      // The statement reaches the machine code (x86: prefetcht0 = locality 3).
      const std::string ir = cpu_backend::llvm_ir_text(prog, false);
      EXPECT_NE(ir.find("@llvm.prefetch"), std::string::npos);
#if defined(__x86_64__)
      EXPECT_NE(cpu_backend::native_assembly(prog).find("prefetcht0"), std::string::npos);
#endif
    }
    check_cpu(*g, {{"x", cpu_random(c.x, 63)}}, 1e-4, opts);
  }
}

INSTANTIATE_TEST_SUITE_P(Geometries, CpuGemmPrefetch, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CpuGemmPrefetchKnob, AutoIsOffAndOnIsRefusedWithoutConstantWeights) {
  // MatMul of two run-time operands: both packed at run time (in cache), nothing to prefetch.
  CpuGraph b;
  Value* y = b.node("MatMul", {b.input("a", {20, 33}), b.input("b", {33, 40})});
  auto g = b.finish({y});
  cpu_backend::CpuCompileOptions opts;
  opts.keep_loop_ir = true;
  auto prog = cpu_backend::compile_cpu(*g, opts);
  for (const auto& kern : prog.kernels)
    if (kern.kind == "gemm") {
      EXPECT_EQ(kern.gemm.prefetch, 0);
      EXPECT_EQ(kern.loop_ir.find("prefetch "), std::string::npos) << kern.loop_ir;
    }
  check_cpu(*g, {{"a", cpu_random({20, 33}, 64)}, {"b", cpu_random({33, 40}, 65)}}, 1e-4, opts);
  passes::CpuGemmKnobs k;
  k.prefetch = 1;
  opts.gemm_knobs[g->nodes().back()->name] = k;
  try {
    cpu_backend::compile_cpu(*g, opts);
    ADD_FAILURE() << "prefetch=1 without a constant operand was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("prefetch=1"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessel::testing
