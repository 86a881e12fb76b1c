// TileEmitter: the machinery shared by the tiling passes. Given a kernel's output tile, it infers
// the region (box) of every tensor the tile needs (TVM's InferBound on affine reads), sizes the UB
// buffers, and emits for one tile: GM->UB copies of the inputs' regions (with padding), each stage
// computed over its box as a scalar Store nest on UB (compute_at the tile), and the UB->GM copy of
// the output. Tensors the caller computes itself (a cube contraction) are "precomputed": the
// emitter reads them from views the caller supplies and does not descend into their inputs.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "passes/loop/npu_passes.h"

namespace tessel::passes {

/// A tile region: per dim an affine start over tile loop variables and a static extent.
struct TileBox {
  std::vector<loop::Affine> start;
  std::vector<int64_t> extent;
};

class TileEmitter {
 public:
  TileEmitter(const KernelSpec& spec, const NpuTarget& target,
              std::set<const te::TensorNode*> precomputed = {});

  /// Registers a tile loop variable (so affine starts can be turned back into expressions).
  void register_var(const loop::Var& v) { vars_[v.get()] = v; }

  /// The box of every tensor needed for the output tile `out_box`.
  std::map<const te::TensorNode*, TileBox> infer(const TileBox& out_box) const;

  /// UB bytes for an output tile of `extents` (allocations of every tensor of the tile, plus the
  /// tensorizer's temporaries).
  int64_t footprint_bytes(const std::vector<int64_t>& extents) const;

  /// False when tiling `axis` of the output (tiles of `extents`) gives some tensor reads that move
  /// differently with the tile (e.g. the axis a softmax reduces over): then it must stay whole.
  bool can_tile_axis(size_t axis, const std::vector<int64_t>& extents) const;

  /// Creates the UB allocation of every tensor for the full tile `extents`.
  void allocate(const std::vector<int64_t>& extents);

  /// A dense view with `extents` of tensor `t`'s UB allocation.
  loop::Buffer ub_view(const te::TensorNode* t, const std::vector<int64_t>& extents) const;

  /// Copies in, stages and copy out for the output tile `out_box`; `precomputed_views` maps each
  /// precomputed tensor to the UB view holding its box.
  loop::Stmt emit_tile(
      const TileBox& out_box,
      const std::map<const te::TensorNode*, loop::Buffer>& precomputed_views) const;

  /// Compute stages in producer-before-consumer order (excluding precomputed tensors).
  const std::vector<te::Tensor>& stages() const { return stages_; }
  /// Placeholders read by the stages, in first-read order.
  const std::vector<te::Tensor>& inputs() const { return inputs_; }
  /// An expression for an affine start over the registered tile variables.
  loop::Expr start_expr(const loop::Affine& a) const;

 private:
  /// The UB element type of tensor `t`'s tile: a GM tensor's storage dtype, else the target's.
  DType ub_dtype(const te::TensorNode* t) const;

  KernelSpec spec_;
  NpuTarget target_;
  std::set<const te::TensorNode*> precomputed_;
  std::vector<te::Tensor> stages_;
  std::vector<te::Tensor> inputs_;
  std::map<const te::TensorNode*, double> pad_value_;
  std::map<const te::TensorNode*, loop::Buffer> ub_;
  std::map<const loop::VarNode*, loop::Var> vars_;
};

/// True when `gm` holds a rank-`logical_rank` tensor stored NC1HWC0: the NPU backend allocates a
/// [N, C, H, W] value in that format (graph.h, StorageFormat) as the 5-D [N, C/C0, H, W, C0]
/// buffer, while the kernel's tensor expressions keep the logical NCHW shape.
bool is_nc1hwc0(const loop::Buffer& gm, size_t logical_rank);

/// The copy of one tile `box` (NCHW coordinates) between a local (UB or L1) view `local` of shape
/// box.extent laid out [n][c][h][w] (any strides) and the GM tensor `gm`: `to_gm` stores local ->
/// gm, else loads gm -> local (positions outside gm read `pad_value`). For a plain `gm` this is
/// loop::copy of the box; for an NC1HWC0 `gm` it is the same elements as a 5-D copy
/// [n][c1][h][w][c0] whose innermost dim is GM-contiguous (whole C0 blocks per pixel). Throws
/// tessel::InternalError naming `kernel` when an NC1HWC0 box's channel start or extent is not a
/// multiple of C0.
loop::Stmt copy_gm_box(const TileEmitter& em, const loop::Buffer& local, const loop::Buffer& gm,
                       const TileBox& box, bool to_gm, double pad_value, const std::string& kernel);

/// `a` / `d` when every coefficient and the constant of `a` is a multiple of `d`, else nullopt.
std::optional<loop::Affine> affine_div_exact(const loop::Affine& a, int64_t d);

/// Arithmetic nodes of an expression (each is at least one vector instruction per element row).
int arithmetic_nodes(const loop::Expr& e);

/// Round `bytes` up to the 32-byte scratchpad alignment.
inline int64_t align32(int64_t bytes) { return (bytes + 31) / 32 * 32; }

}  // namespace tessel::passes
