// The GPU loop passes and the schedule knobs they read. The GPU backend
// (compiler/backend/gpu/compile.cpp) runs them per kernel, as a script:
//   contraction ("conv2d" / "matmul" tag, compiler/lower/op_compute.cpp):
//     gpu_gemm            TE -> one thread block per BM x BN output tile: the operand tiles of
//                         each K chunk copied into shared memory by the block's threads
//                         (gpu_copy), warps computing their sub-tiles with tensor cores
//                         (mma.sync m16n8k16, fp16 x fp16 -> fp32; gpu_mma) or threads their
//                         register tiles in fp32, the fused elementwise epilogue at the store
//     gpu_double_buffer   the K-chunk loop software-pipelined over two shared-memory stages, the
//                         next chunk's tiles fetched with cp.async while this one is computed
//   everything else:
//     lower_te            TE -> naive nest per stage (compiler/lower/lower_te.h)
//     gpu_tile            windowed kernels (pooling, depthwise convolution): one block per output
//                         tile, its input windows in shared memory (the NPU's TileEmitter)
//     gpu_bind            every other stage nest's output loops fused and bound to blocks x
//                         threads, a thread owning `vector` consecutive outputs (vectorised
//                         global access)
// The code generator (compiler/backend/gpu/codegen.cpp) maps gpu_block / gpu_thread loops to
// %ctaid.x / %tid.x, shared / local allocations to shared memory / registers and
// StmtKind::Gpu statements to the NVVM intrinsics.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/loop/loop.h"
#include "passes/loop/cpu_passes.h"

namespace tessel::passes {

/// What the GPU passes assume about the device (gpu_target.cpp). The compiler emits PTX for one
/// virtual architecture (sm_80: mma.sync m16n8k16 and cp.async) that every GPU of compute
/// capability 8.0 and later runs; the limits are those every such GPU meets, so a kernel runs
/// on all of them.
struct GpuTarget {
  int sm = 80;         // compute capability of the PTX (.target sm_80)
  int sm_count = 132;  // streaming multiprocessors, for the tile choice (H200: 132)
  int warp_size = 32;
  int max_threads_per_block = 1024;
  /// Dynamic shared memory one block may use (opt-in limit of sm_86/sm_89, the smallest of the
  /// sm_80+ GPUs: 99 KiB; A100 163 KiB, H100/H200 227 KiB).
  int64_t max_shared_bytes = 101376;
  bool tensor_cores = true;  // mma.sync for fp16 x fp16 -> fp32 contractions
  bool cp_async = true;      // asynchronous global -> shared copies

  /// The default target: sm_80 PTX, the limits above.
  static GpuTarget sm80();
};

/// Knobs of a contraction kernel (0 = choose analytically; gpu_gemm.cpp has the model). The
/// output is viewed as C[batch][M][N] (contraction.h).
struct GpuGemmKnobs {
  int64_t bm = 0, bn = 0;  // block tile: outputs along M and N
  int64_t bk = 0;          // K chunk in elements of the flattened K (a multiple of 16 with mma)
  int64_t warps_m = 0, warps_n = 0;  // warp grid of a block (tensor cores)
  int64_t tm = 0, tn = 0;            // outputs per thread along M and N (fp32 SIMT)
  bool tensor_cores = true;          // mma.sync on fp16 operands, fp32 accumulation; else fp32 FMAs
  bool double_buffer = true;  // two shared-memory stages, cp.async prefetch (gpu_double_buffer)
};

/// Knobs of a generic kernel (gpu_bind).
struct GpuGenericKnobs {
  int64_t threads = 256;  // threads per block
  int64_t vector = 4;     // consecutive outputs per thread along a unit-stride innermost axis
};

/// gpu_target.cpp: the GPU's peak throughputs for a roofline, from its properties.
struct GpuRoofline {
  double fp16_tensor_flops = 0;  // dense fp16 mma.sync, fp32 accumulation, flop/s
  double fp32_flops = 0;         // fp32 FMA, flop/s
  double dram_bytes_per_second = 0;
  /// The roofline time of one launch: max(flops / peak, bytes / DRAM bandwidth), the peak of the
  /// tensor cores when it runs on them (else fp32 FMA). Seconds; 0 where a peak is unknown (0).
  double launch_seconds(double flops, double bytes, bool tensor_cores) const;
};
/// Peaks from the SM count, the SM clock (kHz), the memory clock (kHz) and bus width (bits), as
/// cuDeviceGetAttribute reports them; per-SM rates after the compute capability (NVIDIA's
/// architecture whitepapers: dense fp16 tensor FMA/clock/SM 1024 on sm_80, 256 with fp32
/// accumulation on sm_86/sm_89, 2048 on sm_90 -- reached there only by wgmma, which sm_80 PTX
/// does not have; fp32 FMA/clock/SM 64 on sm_80, 128 on the others). DRAM: 2 transfers per
/// memory clock.
GpuRoofline gpu_roofline(int sm, int sm_count, int64_t sm_clock_khz, int64_t mem_clock_khz,
                         int64_t bus_width_bits);

/// gpu_bind.cpp: one GPU kernel per stage nest of a lower_te result (`s`: an Allocate / Seq
/// tree whose other statements are stage nests). A nest's output loops -- its perfect loop prefix,
/// whose iterations write disjoint elements -- are fused into one index bound to
/// `blockIdx.x * threads + threadIdx.x`; when the innermost output loop stores with unit stride
/// and its extent is a multiple of `vector`, every thread takes `vector` consecutive outputs
/// (a vectorized loop: 16-byte global loads and stores). A nest without output loops runs on one
/// thread. Allocations (lower_te's temporaries) stay around the kernels: the backend places them
/// in global memory.
loop::Stmt gpu_bind(const loop::Stmt& s, const GpuTarget& target, const GpuGenericKnobs& knobs);

/// gpu_tile.cpp: a windowed kernel (a reduction reading a placeholder through a sliding window:
/// pooling, depthwise convolution) as one block per output tile with every box of the tile in
/// shared memory, from the NPU's TileEmitter (region inference, padded loop::copy of the input
/// windows, stages over their boxes): copies and stages run on all the block's threads with a
/// barrier between them. Tiles hold up to 2 * knobs.threads outputs and `budget_bytes` of
/// shared memory and divide the output exactly. nullopt when the kernel is not windowed or the
/// emitter cannot tile it (see gpu_tile.cpp).
std::optional<loop::Stmt> gpu_tile(const std::string& name, const te::Tensor& out,
                                   const lower::TensorBuffers& buffers, const GpuTarget& target,
                                   const GpuGenericKnobs& knobs, int64_t budget_bytes);

/// gpu_copy.cpp: the block-cooperative copy of a tile into shared memory, as the block's
/// `threads` threads (thread index `tid`) run it: destination element `i` (a multi-index over
/// `extents`) gets `value(i)`, elements distributed round robin over the threads with the
/// innermost dim fastest (consecutive threads read consecutive addresses), in units of `vector`
/// consecutive innermost elements (a vectorized loop) when vector > 1 (it must divide the
/// innermost extent).
loop::Stmt cooperative_copy(const loop::Var& tid, int64_t threads,
                            const std::vector<int64_t>& extents, int64_t vector,
                            const loop::Buffer& dst,
                            const std::function<loop::Expr(const std::vector<loop::Expr>&)>& value);
/// The same for a loop::copy statement (a region of `copy.src`, padded with copy.pad_value where
/// it leaves the source, into the region `copy.dst`), the statement the NPU's tiling passes emit
/// for GM -> L1/UB.
loop::Stmt cooperative_copy(const loop::Var& tid, int64_t threads, const loop::StmtNode& copy,
                            int64_t vector);

/// gpu_double_buffer.cpp: software pipelining of the tile loop `for kt: {copies; barrier;
/// compute; barrier}` (the loop with variable `kt`, found anywhere in `s`; the copies are the
/// statements before its first barrier, each writing a shared allocation). Every allocation
/// the copies write gets a second stage; copies of tile 0 run before the loop, and iteration kt
/// issues the copies of tile kt+1 into the other stage, then waits for tile kt and computes on
/// it. With `cp_async`, copies whose value is a global load (or a select of one and a constant)
/// of the destination's dtype become cp.async (4 bytes, or 8/16 for vectorized rows whose
/// alignment is proven) with the padded elements stored as zeros, committed as one group per
/// tile, and iteration kt waits for all but the newest group (cp.async.wait_group 1); other
/// copies stay plain loads and stores. Throws tessel::InternalError when the loop does not have
/// that form.
loop::Stmt gpu_double_buffer(const loop::Stmt& s, const loop::VarNode* kt, bool cp_async);

/// gpu_gemm.cpp: the GPU schedule of a contraction kernel (see the file comment there).
/// Returns nullopt when the kernel does not have the contraction-plus-epilogue form, or is too
/// thin for a GEMM (M or N < 8: depthwise convolutions) -- the caller schedules it generically.
/// Constant fp16 operands (weights, with tensor cores) come back as packed constants. `knobs`
/// supplies and receives the choices.
std::optional<CpuGemmResult> gpu_gemm(const CpuKernelSpec& spec, const te::Tensor& contraction,
                                      const GpuTarget& target, GpuGemmKnobs* knobs);

// ---- gpu_mma.cpp: the mma.sync m16n8k16 fragments (PTX ISA 7.0, section 9.7.13.4.8,
// "Matrix Fragments for mma.m16n8k16 with floating point type"). With g = lane / 4 and
// t = lane % 4, a lane holds A elements a0..a7 at row g (i in {0,1,4,5}) or g + 8 (else),
// column 2t + (i & 1) (+ 8 for i >= 4); B elements b0..b3 at row (k) 2t + (i & 1) (+ 8 for
// i >= 2), column (n) g; C/D elements c0..c3 at row g (i < 2) or g + 8, column 2t + (i & 1).
loop::Expr mma_a_row(const loop::Expr& lane, int i);
loop::Expr mma_a_col(const loop::Expr& lane, int i);
loop::Expr mma_b_row(const loop::Expr& lane, int i);
loop::Expr mma_b_col(const loop::Expr& lane, int i);
loop::Expr mma_c_row(const loop::Expr& lane, int i);
loop::Expr mma_c_col(const loop::Expr& lane, int i);

/// gpu_index.cpp: a positive integer every value of index expression `e` is a multiple of (0 when
/// `e` is the constant 0): gcd through sums, products of divisors, floormod by c -> gcd with c;
/// variables and floordiv give 1.
int64_t index_divisor(const loop::Expr& e);

/// The number of threads a kernel's gpu_thread loops use (the largest extent; 1 without one)
/// and the bytes of its shared allocations (each 16-byte aligned, one region each).
int64_t gpu_block_threads(const loop::Stmt& kernel);
int64_t gpu_shared_bytes(const loop::Stmt& kernel);

}  // namespace tessel::passes
