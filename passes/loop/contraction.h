// Contraction: a "conv2d" or "matmul" tensor expression (compiler/lower/op_compute.cpp) viewed
// as a batched GEMM, and its fused elementwise epilogue -- the analysis the contraction
// schedules share (CPU: cpu_gemm.cpp; GPU: gpu_gemm.cpp).
//
// C[b][m][n] = sum_k A[b][m][k] * B[b][k][n], with N the contiguous output axis (the pixels
// oh*OW+ow of a convolution as one flattened axis; the columns of a matmul), M the other output
// axis (output channels of a group; rows), K the reduction (input channels x window; the inner
// dimension) and b the batch (image and group; matmul batch dims). A convolution's B is the
// implicit im2col matrix: its index expressions read the (padded) input window directly.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "compiler/loop/loop.h"
#include "compiler/lower/lower_te.h"
#include "compiler/te/te.h"

namespace tessel::passes {

/// The contraction as C[b][m][n] = sum_k A[b][m][k] B[b][k][n]: index expressions of A, B and C
/// over the variables below (batch vars, m, flattened n, one var per K dim).
struct Contraction {
  std::vector<loop::Var> bvars;
  std::vector<int64_t> bext;
  loop::Var m, n;
  int64_t M = 1, N = 1;
  std::vector<loop::Var> kvars;
  std::vector<int64_t> kext;                    // K dims; K blocks split the first
  te::Tensor a, b;                              // placeholders
  std::vector<loop::Expr> a_idx, b_idx, c_idx;  // c_idx: index into the contraction's output
  bool b_padded = false;
  // Convolution only: N = oh * OW + ow, and B's index over (oh, ow) instead of the flattened n
  // (for the row-wise pack of B, which reads input rows with a constant stride).
  bool conv = false;
  int64_t OH = 0, OW = 0;
  loop::Var oh, ow;
  std::vector<loop::Expr> b_idx_rows;
  // Convolution only: the window (kernel extent, stride, dilation, leading padding per spatial
  // dim), the groups, input channels per group and the input's [N, C, H, W] shape.
  int64_t KH = 1, KW = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_h = 0, pad_w = 0, groups = 1, cin_g = 0;
  Shape input_shape;

  int64_t K() const {
    int64_t k = 1;
    for (int64_t e : kext) k *= e;
    return k;
  }
  int64_t batch() const {
    int64_t p = 1;
    for (int64_t e : bext) p *= e;
    return p;
  }
};

/// The GEMM view of contraction `c` (tag "conv2d" or "matmul"), or nullopt when `c` does not have
/// that form (an operand that is not a placeholder, a matmul with a 1-D right operand).
std::optional<Contraction> contraction_of(const te::Tensor& c);

/// True when the stages between contraction `c` and `out` form an elementwise epilogue: untagged,
/// no reduction, and every read of a computed tensor reads a chain stage (or c) of the same shape
/// at the reader's own index.
bool epilogue_ok(const te::Tensor& out, const te::Tensor& c);

/// The epilogue stage `t` (out, or a stage it reads) at output index `idx`, with the
/// contraction's value there `acc`; placeholders are read through `buffers`.
loop::Expr epilogue_at(const te::Tensor& t, const te::Tensor& c, const std::vector<loop::Expr>& idx,
                       const loop::Expr& acc, const lower::TensorBuffers& buffers);

/// The batch dims (indices into g.bvars) operand index `idx` uses.
std::vector<size_t> used_batch_dims(const Contraction& g, const std::vector<loop::Expr>& idx);

/// Every element of an operand read through index `idx` (of a dense row-major tensor of
/// `shape`): fn(bi, kf, r, src) for bi over the values of the used batch dims (row-major, the
/// last fastest), kf over the flattened K, r in [0, extent) along `rvar` (m or n); src is the
/// element's offset in the tensor. For packing constant operands at compile time. Returns false
/// (calling nothing) when the offset is not affine in the variables.
bool for_each_operand_element(
    const Contraction& g, const Shape& shape, const std::vector<loop::Expr>& idx,
    const loop::Var& rvar, int64_t extent,
    const std::function<void(int64_t bi, int64_t kf, int64_t r, int64_t src)>& fn);

}  // namespace tessel::passes
