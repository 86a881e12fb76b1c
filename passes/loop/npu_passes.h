// The NPU loop passes and the schedule knobs they read. The NPU backend runs them as a script
// (compiler/backend/npu/compile.cpp):
//   tile_vector | tile_cube   kernel TE -> tiled loop IR (copies into scratchpads, stage nests)
//   split_cores               per core: its share of the kernel's core-bound loop
//   double_buffer             ping-pong buffers in the innermost GM-copy loops
//   partition_loops           peel tile iterations so every DMA's padding is static
//   tensorize_vector          scalar stage nests on UB -> vector instructions
//   plan_memory               scratchpad addresses for every allocation (capacity checked)
//   insert_sync               set_flag/wait_flag pairs for the cross-pipe dependences only
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/loop/loop.h"
#include "compiler/te/te.h"
#include "npu_model/hw_config.h"

namespace tessel::passes {

/// What the NPU loop passes need to know about the target.
struct NpuTarget {
  const npu::HwConfig* hw = nullptr;
  DType act_dtype =
      DType::f16;  // storage dtype of activations in GM and on chip (cube input dtype)
  int act_bytes() const { return dtype_size(act_dtype); }
};

/// One kernel to lower: its output compute and the GM buffer of every placeholder it reads and of
/// its output (views allowed, e.g. a slice of a Concat output).
struct KernelSpec {
  std::string name;
  te::Tensor out;
  std::map<const te::TensorNode*, loop::Buffer> gm;
};

/// Knobs of a vector-unit kernel: tile extent per output axis (empty = choose analytically).
struct VectorKnobs {
  std::vector<int64_t> tile;
  bool double_buffer = true;  // leave half of UB for the pong buffers of double_buffer
};

/// Knobs of a cube kernel (0 = choose analytically). Convolution: mt output channels, kc input
/// channels per K chunk, ht x wt output pixels per L1 tile, weights_resident (the co tile's
/// weights stay in L1 across pixel tiles: the weight-stationary loop order; else they stream with
/// each K chunk). Matmul: mt x nt output tile, kt K chunk.
struct CubeKnobs {
  int64_t mt = 0, kc = 0, ht = 0, wt = 0;
  int64_t nt = 0, kt = 0;
  bool double_buffer = true;  // leave half of every scratchpad for the pong buffers
  bool weights_resident = false;
  /// Matmul loop order: A's m tile (all of K) stays in L1 and the n loop runs inside the m loop
  /// (A is read from GM once); otherwise n outer, m inner, A re-read per n tile.
  bool a_resident = false;
};

/// Tiling for vector kernels (any TE DAG of elementwise and reduction stages). Chooses the tile
/// (innermost axes whole, the first axis that does not fit split to the largest extent whose UB
/// footprint -- inputs, stages, output and tensorizer temporaries -- fits), emits tile loops with
/// static tails, copies each input's tile region (with padding) GM -> UB, computes every stage at
/// the tile (compute_at) into UB and copies the output tile UB -> GM. Requires affine reads.
/// Throws tessel::Error naming the kernel when even a 1-element tile does not fit UB, and
/// tessel::Unsupported for non-affine reads. `knobs` (optional) supplies and receives the tile.
loop::Stmt tile_vector(const KernelSpec& spec, const NpuTarget& target, VectorKnobs* knobs);

/// Tiling for cube kernels: a "conv2d" or "matmul" contraction (compiler/lower/op_compute.cpp),
/// optionally followed by elementwise epilogue stages (bias, activation) computed on the UB tile.
/// Chooses mt/kc/ht/wt/weights_resident (conv) or mt/nt/kt (matmul) by an analytical cost over
/// the candidates that fit L1, L0A, L0B, L0C and UB; emits GM->L1 copies, load2d/img2col (L0A/L0B
/// ping-pong), mmad (accumulating over K), fix into UB, the epilogue and the UB->GM copy.
/// `knobs` (optional) supplies (mt > 0) and receives the tiling. When `candidates` is given and
/// the tiling is chosen here, it receives the `n_candidates` best distinct tilings by the estimate
/// (best first) -- for measured selection (compile.cpp simulates each).
loop::Stmt tile_cube(const KernelSpec& spec, const te::Tensor& contraction, const NpuTarget& target,
                     CubeKnobs* knobs, std::vector<CubeKnobs>* candidates = nullptr,
                     int n_candidates = 0);

/// Multicore: keeps core `core`'s share of the kernel's core-bound loop (marked by the tiling
/// passes; `else_body` of that loop is its tail iteration). See split_cores.cpp.
loop::Stmt split_cores(const loop::Stmt& body, int core, int cores);

/// Double buffering: in every innermost loop that copies from GM, the scratchpad buffers used only
/// inside the loop get a pong copy and the loop is unrolled by two (see double_buffer.cpp).
loop::Stmt double_buffer(const loop::Stmt& body);

/// Loop partitioning: splits loops so that, inside every resulting loop, each GM->scratchpad copy
/// is either wholly inside its source or has padding at static positions (the ISA's dma takes a
/// static valid window). Boundary iterations are peeled with the loop variable substituted.
loop::Stmt partition_loops(const loop::Stmt& body);

/// Tensorization for the vector unit: every perfect loop nest ending in a Store over UB buffers
/// becomes vector instructions (one per expression node, with repeat and strides covering the two
/// innermost fusable loops; outer loops stay). Reductions map to vrsum/vrmax/vrmin along a
/// contiguous reduced axis, otherwise to accumulation (vadd/vmax/vmin/vmla) per reduction step.
/// Must run after tiling; leaves no Store on UB. Throws tessel::Unsupported for an expression
/// node without a vector instruction (naming it).
loop::Stmt tensorize_vector(const loop::Stmt& body, const NpuTarget& target);

/// Live temporaries the vector tensorizer needs to evaluate `e` (in-place evaluation order).
int vector_temp_count(const loop::Expr& e);

/// Memory planning: assigns a scratchpad address to every allocation the kernel uses (32-byte
/// aligned, one region each). Throws tessel::Error naming the kernel, scope and bytes when a
/// scratchpad overflows.
void plan_memory(const loop::Stmt& body, const NpuTarget& target, const std::string& kernel_name);

/// Sync insertion: for every dependence between leaf statements on different pipes (read-after-
/// write, write-after-read, write-after-write on one allocation), within an iteration or carried by
/// a loop, inserts a set_flag after the source and a wait_flag before the sink at their lowest
/// common level; loop-carried pairs are pre-set before the loop and drained after it. Pairs covered
/// by an earlier pair of the same pipes are dropped. Event ids are assigned per pipe pair; when a
/// pair of pipes needs more than core.sync.event_ids, the remaining dependences get a barrier.
loop::Stmt insert_sync(const loop::Stmt& body, const NpuTarget& target);

}  // namespace tessel::passes
