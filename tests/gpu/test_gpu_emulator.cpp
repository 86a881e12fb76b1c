// The host emulator's semantics (compiler/backend/gpu/emulator.h), on small hand-written
// kernels: what makes it a test of the GPU lowering is that it gets wrong results (or errors)
// exactly where a GPU could -- a missing barrier, a read of a cp.async destination before its
// wait, a barrier not every thread reaches, a misaligned cp.async, a write past the shared
// memory -- and that mma.sync follows the PTX fragment layout, implemented there independently
// of the layout the schedules use (passes/loop/gpu_mma.cpp). Each kernel is also checked by
// ptxas where the CUDA toolkit is installed.
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "compiler/backend/gpu/emulator.h"
#include "passes/loop/gpu_passes.h"
#include "tests/gpu/gpu_test_util.h"

namespace tessel::testing {
namespace {

namespace L = tessel::loop;
using gpu_backend::GpuProgram;
using L::Expr;

Expr v(const L::Var& x) { return L::var_ref(x); }
Expr i(int64_t x) { return L::int_imm(x); }

/// A program of one kernel `body` over `params`, for the emulator.
GpuProgram one_kernel(const std::vector<L::Buffer>& params, const L::Stmt& body) {
  GpuProgram p;
  p.context = std::make_unique<llvm::LLVMContext>();
  p.module = std::make_unique<llvm::Module>("test", *p.context);
  p.module->setTargetTriple(gpu_backend::kNvptxTriple);
  p.module->setDataLayout(gpu_backend::kNvptxDataLayout);
  gpu_backend::emit_gpu_kernel(*p.module, "k", params, body);
  return p;
}

/// Runs kernel `k` of `prog` on host buffers; returns "" or the emulator's error.
std::string run(const GpuProgram& prog, const L::Stmt& body,
                std::vector<std::vector<float>*> bufs) {
  gpu_backend::GpuEmulator emu(prog);
  std::vector<void*> args;
  for (auto* b : bufs) args.push_back(b->data());
  try {
    emu.launch("k", gpu_backend::kernel_shape(body), args);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct Exchange {
  L::Buffer x = L::make_buffer("x", L::MemScope::host, DType::f32, {128});
  L::Buffer y = L::make_buffer("y", L::MemScope::host, DType::f32, {128});
  L::Buffer s = L::make_buffer("s", L::MemScope::shared, DType::f32, {64});
  L::Var b = L::make_var("b"), t = L::make_var("t");
  Expr g = L::add(L::mul(v(b), i(64)), v(t));
  /// y[b*64 + t] = x[b*64 + (t+1) % 64] through shared memory, `fill` writing s[t].
  L::Stmt kernel(L::Stmt fill) {
    L::Stmt use = L::store(y, {g}, L::load(s, {L::floormod(L::add(v(t), i(1)), 64)}));
    return L::for_loop(
        b, 2, L::allocate(s, L::for_loop(t, 64, L::seq({fill, use}), L::ForKind::gpu_thread)),
        L::ForKind::gpu_block);
  }
  std::vector<float> in = std::vector<float>(128), out = std::vector<float>(128, 0.f);
  Exchange() {
    for (int k = 0; k < 128; ++k) in[k] = static_cast<float>(k);
  }
  bool correct() const {
    for (int k = 0; k < 128; ++k)
      if (out[k] != in[(k / 64) * 64 + (k % 64 + 1) % 64]) return false;
    return true;
  }
};

TEST(GpuEmulator, BarrierOrdersSharedMemoryAndItsAbsenceIsCaught) {
  Exchange e;
  L::Stmt write = L::store(e.s, {v(e.t)}, L::load(e.x, {e.g}));
  L::Stmt good = e.kernel(L::seq({write, L::gpu_intrin(L::GpuOp::barrier)}));
  GpuProgram p = one_kernel({e.x, e.y}, good);
  ptxas_accepts(gpu_backend::gpu_ptx(p));
  EXPECT_EQ(run(p, good, {&e.in, &e.out}), "");
  EXPECT_TRUE(e.correct());
  // Without the barrier thread 0 reads s[1] before thread 1 wrote it (shared memory starts as
  // NaN bytes): wrong values, as a GPU could give.
  L::Stmt bad = e.kernel(write);
  GpuProgram q = one_kernel({e.x, e.y}, bad);
  EXPECT_EQ(run(q, bad, {&e.in, &e.out}), "");
  EXPECT_FALSE(e.correct());
  EXPECT_TRUE(std::isnan(e.out[0]));
}

TEST(GpuEmulator, CpAsyncCompletesOnlyAtItsWait) {
  Exchange e;
  L::Stmt cp = L::gpu_intrin(L::GpuOp::cp_async, {{e.s, v(e.t)}, {e.x, e.g}}, 4);
  L::Stmt commit = L::gpu_intrin(L::GpuOp::cp_async_commit);
  L::Stmt wait = L::gpu_intrin(L::GpuOp::cp_async_wait, {}, 0);
  L::Stmt bar = L::gpu_intrin(L::GpuOp::barrier);
  L::Stmt good = e.kernel(L::seq({cp, commit, wait, bar}));
  GpuProgram p = one_kernel({e.x, e.y}, good);
  const std::string ptx = gpu_backend::gpu_ptx(p);
  EXPECT_NE(ptx.find("cp.async.ca.shared.global"), std::string::npos);
  ptxas_accepts(ptx);
  EXPECT_EQ(run(p, good, {&e.in, &e.out}), "");
  EXPECT_TRUE(e.correct());
  // Without the wait the barrier does not make the copies visible: stale shared memory.
  L::Stmt bad = e.kernel(L::seq({cp, commit, bar}));
  GpuProgram q = one_kernel({e.x, e.y}, bad);
  EXPECT_EQ(run(q, bad, {&e.in, &e.out}), "");
  EXPECT_FALSE(e.correct());
  // wait_group 1 with one group pending waits for nothing either.
  L::Stmt bad1 = e.kernel(L::seq({cp, commit, L::gpu_intrin(L::GpuOp::cp_async_wait, {}, 1), bar}));
  GpuProgram r = one_kernel({e.x, e.y}, bad1);
  EXPECT_EQ(run(r, bad1, {&e.in, &e.out}), "");
  EXPECT_FALSE(e.correct());
}

TEST(GpuEmulator, BarrierNotReachedByEveryThreadIsAnError) {
  Exchange e;
  L::Stmt write = L::store(e.s, {v(e.t)}, L::load(e.x, {e.g}));
  L::Stmt k =
      e.kernel(L::seq({write, L::if_then(L::lt(v(e.t), i(32)), L::gpu_intrin(L::GpuOp::barrier))}));
  GpuProgram p = one_kernel({e.x, e.y}, k);
  const std::string err = run(p, k, {&e.in, &e.out});
  EXPECT_NE(err.find("deadlock"), std::string::npos) << err;
  EXPECT_NE(err.find("32 threads at bar.sync"), std::string::npos) << err;
  EXPECT_NE(err.find("32 threads exited"), std::string::npos) << err;
}

TEST(GpuEmulator, MisalignedCpAsyncAndSharedOverflowAreErrors) {
  Exchange e;
  // 16-byte copies from x[g + 1]: 4 bytes off their alignment.
  L::Stmt cp = L::gpu_intrin(L::GpuOp::cp_async,
                             {{e.s, L::mul(L::floordiv(v(e.t), 4), i(4))},
                              {e.x, L::add(L::mul(L::floordiv(e.g, 4), i(4)), i(1))}},
                             16);
  L::Stmt k = e.kernel(
      L::seq({L::if_then(L::lt(v(e.t), i(15)), cp), L::gpu_intrin(L::GpuOp::cp_async_commit),
              L::gpu_intrin(L::GpuOp::cp_async_wait, {}, 0), L::gpu_intrin(L::GpuOp::barrier)}));
  GpuProgram p = one_kernel({e.x, e.y}, k);
  std::string err = run(p, k, {&e.in, &e.out});
  EXPECT_NE(err.find("not 16-byte aligned"), std::string::npos) << err;
  // s[t + 1] for t = 63 is one element past the 256 bytes of shared memory.
  L::Stmt over = e.kernel(L::seq({L::store(e.s, {L::add(v(e.t), i(1))}, L::float_imm(1.0)),
                                  L::gpu_intrin(L::GpuOp::barrier)}));
  GpuProgram q = one_kernel({e.x, e.y}, over);
  err = run(q, over, {&e.in, &e.out});
  EXPECT_NE(err.find("past the end of the 256 bytes of shared memory"), std::string::npos) << err;
}

/// One warp: D[16][8] = A[16][16] B[16][8] through fragments loaded from global memory at the
/// positions `a_row` / `a_col` give (the schedules' layout, gpu_mma.cpp, or a wrong one).
std::vector<float> warp_mma(const std::function<Expr(const Expr&, int)>& a_row,
                            const std::function<Expr(const Expr&, int)>& a_col,
                            const std::vector<float>& A, const std::vector<float>& B) {
  L::Buffer ga = L::make_buffer("a", L::MemScope::host, DType::f32, {16, 16});
  L::Buffer gb = L::make_buffer("b", L::MemScope::host, DType::f32, {16, 8});
  L::Buffer gd = L::make_buffer("d", L::MemScope::host, DType::f32, {16, 8});
  L::Buffer af = L::make_buffer("af", L::MemScope::local, DType::f16, {8});
  L::Buffer bf = L::make_buffer("bf", L::MemScope::local, DType::f16, {4});
  L::Buffer acc = L::make_buffer("acc", L::MemScope::local, DType::f32, {4});
  L::Var blk = L::make_var("blk"), lane = L::make_var("lane");
  std::vector<L::Stmt> s;
  for (int q = 0; q < 4; ++q) s.push_back(L::store(acc, {i(q)}, L::float_imm(0.0)));
  for (int q = 0; q < 8; ++q)
    s.push_back(L::store(af, {i(q)}, L::load(ga, {a_row(v(lane), q), a_col(v(lane), q)})));
  for (int q = 0; q < 4; ++q)
    s.push_back(L::store(
        bf, {i(q)}, L::load(gb, {passes::mma_b_row(v(lane), q), passes::mma_b_col(v(lane), q)})));
  s.push_back(L::gpu_intrin(L::GpuOp::mma_m16n8k16, {{acc, i(0)}, {af, i(0)}, {bf, i(0)}}));
  for (int q = 0; q < 4; ++q)
    s.push_back(L::store(gd, {passes::mma_c_row(v(lane), q), passes::mma_c_col(v(lane), q)},
                         L::load(acc, {i(q)})));
  L::Stmt body = L::for_loop(
      blk, 1,
      L::for_loop(lane, 32, L::allocate(acc, L::allocate(af, L::allocate(bf, L::seq(s)))),
                  L::ForKind::gpu_thread),
      L::ForKind::gpu_block);
  GpuProgram p = one_kernel({ga, gb, gd}, body);
  ptxas_accepts(gpu_backend::gpu_ptx(p));
  std::vector<float> a = A, b = B, d(128, -1.f);
  EXPECT_EQ(run(p, body, {&a, &b, &d}), "");
  return d;
}

TEST(GpuEmulator, MmaSyncFollowsThePtxFragmentLayout) {
  std::vector<float> A(256), B(128);
  for (int k = 0; k < 256; ++k) A[k] = static_cast<float>((k * 7) % 13 - 6) / 8;
  for (int k = 0; k < 128; ++k) B[k] = static_cast<float>((k * 5) % 11 - 5) / 4;
  std::vector<float> want(128, 0.f);
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 8; ++c)
      for (int k = 0; k < 16; ++k) want[r * 8 + c] += A[r * 16 + k] * B[k * 8 + c];
  // Every product and sum is exact in fp32 (eighths times quarters, |sum| < 64).
  EXPECT_EQ(warp_mma(passes::mma_a_row, passes::mma_a_col, A, B), want);
  // Fragments loaded transposed (row and column swapped): the emulator's mma computes with A^T.
  EXPECT_NE(warp_mma(passes::mma_a_col, passes::mma_a_row, A, B), want);
}

}  // namespace
}  // namespace tessel::testing
