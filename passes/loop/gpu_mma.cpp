// gpu_mma: the fragment layout of mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32, the one
// tensor-core instruction the GPU schedules use (gpu_gemm.cpp).
//
// Source: NVIDIA, "Parallel Thread Execution ISA" 7.0, section 9.7.13.4.8 "Matrix Fragments for
// mma.m16n8k16 with floating point type". A warp computes D[16x8] = A[16x16] x B[16x8] + C[16x8];
// every lane holds 8 elements of A, 4 of B and 4 of C/D (the expressions below give the row and
// column of element i of lane `lane`). The host emulator (compiler/backend/gpu/emulator.cpp)
// implements the instruction from the same table, independently of this file, so a schedule that
// loads fragments at the wrong place computes wrong values there.
#include "passes/loop/gpu_passes.h"

namespace tessel::passes {

namespace L = tessel::loop;

namespace {
L::Expr group_id(const L::Expr& lane) { return L::floordiv(lane, 4); }  // %laneid >> 2
L::Expr thread_in_group(const L::Expr& lane) { return L::floormod(lane, 4); }
}  // namespace

L::Expr mma_a_row(const L::Expr& lane, int i) {
  const bool low = i < 2 || (i >= 4 && i < 6);
  return low ? group_id(lane) : L::add(group_id(lane), L::int_imm(8));
}

L::Expr mma_a_col(const L::Expr& lane, int i) {
  return L::add(L::mul(thread_in_group(lane), L::int_imm(2)),
                L::int_imm((i & 1) + (i >= 4 ? 8 : 0)));
}

L::Expr mma_b_row(const L::Expr& lane, int i) {
  return L::add(L::mul(thread_in_group(lane), L::int_imm(2)),
                L::int_imm((i & 1) + (i >= 2 ? 8 : 0)));
}

L::Expr mma_b_col(const L::Expr& lane, int) { return group_id(lane); }

L::Expr mma_c_row(const L::Expr& lane, int i) {
  return i < 2 ? group_id(lane) : L::add(group_id(lane), L::int_imm(8));
}

L::Expr mma_c_col(const L::Expr& lane, int i) {
  return L::add(L::mul(thread_in_group(lane), L::int_imm(2)), L::int_imm(i & 1));
}

}  // namespace tessel::passes
