// The CPU loop passes and the schedule knobs they read. The CPU backend
// (compiler/backend/cpu/compile.cpp) runs them per kernel:
//   contraction ("conv2d" / "matmul" tag):
//     cpu_gemm            TE -> BLIS-style nest: packed panels, register-blocked micro-kernel
//                         (unrolled rows x vectorized columns), fused elementwise epilogue,
//                         parallel task loop
//   depthwise convolution ("depthwise_conv2d" tag):
//     cpu_depthwise       zero-padded staging of the input rows, window as plain vector loads
//                         along output rows or pitched rows, fused epilogue, parallel planes
//   everything else:
//     lower_te            TE -> naive nest per stage (compiler/lower/lower_te.h)
//     cpu_vectorize       innermost unit-stride output loop split by the vector width, reduction
//                         loops moved inside it (cpu_reorder), vectorized
//     cpu_unroll          small constant loops inside vectorized code fully unrolled
//     cpu_parallel        the outermost loop of every nest with enough work runs on the pool
// The code generator (compiler/backend/cpu/codegen.cpp) turns ForKind::vectorized loops into
// LLVM vector instructions, ForKind::unrolled loops into straight-line code and
// ForKind::parallel loops into outlined bodies run by the runtime's thread pool.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/tensor.h"
#include "compiler/loop/loop.h"
#include "compiler/lower/lower_te.h"
#include "compiler/te/te.h"

namespace tessel::passes {

/// What the CPU passes need to know about the machine (cpu_target.cpp reads the host).
struct CpuTarget {
  int vector_lanes = 8;        // fp32 lanes of the vector registers used: 8 (AVX2), 16 (AVX-512)
  int vector_registers = 16;   // architectural vector registers: 16 (AVX2), 32 (AVX-512)
  bool fma = true;             // fused multiply-add
  int64_t l1d_bytes = 32768;   // per core
  int64_t l2_bytes = 1 << 20;  // per core
  int64_t l3_bytes = 8 << 20;  // shared
  int threads = 1;             // worker threads of the runtime pool (parallel loops)

  /// The host: vector width from the CPU's features (AVX-512F -> 16 lanes, AVX2 -> 8, else 4),
  /// cache sizes from sysconf (_SC_LEVEL1_DCACHE_SIZE, ...), threads from TESSEL_CPU_THREADS or
  /// the number of online cores.
  static CpuTarget host();
};

/// Knobs of a contraction kernel (0 = choose analytically; see cpu_gemm.cpp for the model).
/// The output is viewed as C[batch][M][N] with N the contiguous output axis (pixels of a
/// convolution, columns of a matmul) and K the reduction (input channels x window).
struct CpuGemmKnobs {
  int64_t mr = 0;        // micro-tile rows (broadcast operand), unrolled
  int64_t nr = 0;        // micro-tile columns, a multiple of the vector width (vectorized)
  int64_t kc = 0;        // K block (elements of the flattened K), so an A micro-panel stays in L1
  int64_t nc = 0;        // N block, a multiple of nr, so the packed B block stays in L2
  int64_t mc = 0;        // M block, a multiple of mr
  int64_t tasks_m = 0;   // parallel tasks along M per N block (0: enough to feed the threads)
  bool parallel = true;  // run the task loop on the thread pool
  // Vectorize along M instead of N (a convolution's output channels instead of its pixels: the
  // roles of A and B swapped, C stored with strided scatters once per micro-tile): -1 when the
  // padding waste of the two orientations' best micro-tiles says so (a 7x7 output vectorized by
  // pixels fills 49 of 64 lanes), 0 never, 1 always (a convolution with constant weights only).
  int transposed = -1;
  // Software prefetch of the constant operand's next micro-panel (the packed weights, read from
  // memory once per call): in the k loop of every micro-tile, one prefetcht0 per k step of the
  // panel used after this one, spread so the whole next panel is requested while the current one
  // computes. -1: on when A (the broadcast operand) is packed at compile time, 0 off, 1 on
  // (needs a packed operand; B's when only B is, e.g. the transposed orientation).
  int prefetch = -1;
};

/// Knobs of a depthwise convolution kernel (cpu_depthwise.cpp; -1 / 0 = choose).
struct CpuDepthwiseKnobs {
  // 1: flat mode (a block's output rows in one pitched index, rows shorter than a vector; stride 1
  // along H, at most 4 along W), 0: rows mode (vectors along each output row), -1: flat when its
  // pitched rows waste fewer lanes than whole vectors per row.
  int flat = -1;
  int64_t rows = 0;      // output rows per staged block (0: as many as fit the ~16 KiB stage)
  bool parallel = true;  // the plane loop on the thread pool (when the kernel has enough work)
};

/// Knobs of a generic (elementwise / reduction) kernel.
struct CpuGenericKnobs {
  bool vectorize = true;
  bool parallel = true;
  int64_t unroll_max_extent = 16;       // loops inside vector code up to this extent are unrolled
  int64_t parallel_min_work = 1 << 15;  // element operations below which a nest runs serially
};

/// A kernel to schedule: its output compute, the buffer of every placeholder and of the output,
/// and the data of placeholders known at compile time (weights), which a schedule may re-layout.
struct CpuKernelSpec {
  std::string name;
  te::Tensor out;
  lower::TensorBuffers buffers;
  std::map<const te::TensorNode*, const Tensor*> constants;
};

/// A constant created by a schedule (e.g. weights packed into micro-panels): a new kernel
/// parameter buffer with its contents.
struct PackedConstant {
  loop::Buffer buffer;
  Tensor data;
};

struct CpuGemmResult {
  loop::Stmt body;
  std::vector<PackedConstant> constants;
  double flops = 0;  // 2 * batch * M * N * K
};

/// cpu_gemm.cpp: the BLIS schedule (Goto & van de Geijn 2008; Van Zee & van de Geijn 2015; block
/// sizes after Low et al., "Analytical Modeling Is Enough for High-Performance BLIS", TOMS 2016)
/// for `contraction` (tag "conv2d" or "matmul", compiler/lower/op_compute.cpp) and the elementwise
/// stages between it and spec.out (bias, activation, residual: fused into the store of C). Returns
/// nullopt when the kernel does not have that form (other stages, a matmul with a 1-D right
/// operand): the caller schedules it generically. `knobs` supplies and receives the choices.
std::optional<CpuGemmResult> cpu_gemm(const CpuKernelSpec& spec, const te::Tensor& contraction,
                                      const CpuTarget& target, CpuGemmKnobs* knobs);

struct CpuDepthwiseResult {
  loop::Stmt body;
  double flops = 0;  // 2 * batch * channels * OH * OW * KH * KW
};

/// cpu_depthwise.cpp: the schedule of `dw` (tag "depthwise_conv2d", NCHW, one output channel
/// per group) and the elementwise stages between it and spec.out (fused into its store): per
/// plane, input rows staged into a zero-padded buffer, the window as plain vector loads along
/// output rows (rows mode) or along a block's pitched rows (flat mode, rows shorter than a
/// vector). Returns nullopt when the kernel does not have that form (another epilogue, non-fp32
/// buffers): the caller schedules it generically. `knobs` supplies and receives the choices;
/// flat=1 where it is impossible is an error naming the kernel.
std::optional<CpuDepthwiseResult> cpu_depthwise(const CpuKernelSpec& spec, const te::Tensor& dw,
                                                const CpuTarget& target, CpuDepthwiseKnobs* knobs);

/// cpu_split.cpp: splits loop `var` (found anywhere in `s`) into an outer loop over
/// floor(extent / factor) blocks and an inner loop of `factor` iterations (kind `inner_kind`),
/// plus a tail loop of extent % factor iterations (serial; no guards in either). A loop not found
/// leaves `s` unchanged.
loop::Stmt split_loop(const loop::Stmt& s, const loop::VarNode* var, int64_t factor,
                      loop::ForKind inner_kind = loop::ForKind::serial);

/// cpu_reorder.cpp: in a reduction nest `for x: { init(x); for r..: update(x, r) }` where `x` is
/// the innermost output loop, moves `x` inside the reduction loops:
/// `{ for x: init(x); for r..: for x: update(x, r) }`. Legal because iterations of x touch
/// disjoint outputs. Applies to every such nest in `s` whose loop x has kind `kind`.
loop::Stmt sink_output_loops(const loop::Stmt& s, loop::ForKind kind);

/// cpu_vectorize.cpp: vectorizes every stage nest whose innermost output loop stores with unit
/// stride and has at least `target.vector_lanes` iterations: split by the vector width (tail
/// scalar), reductions sunk inside (sink_output_loops), the lane loop marked vectorized.
loop::Stmt cpu_vectorize(const loop::Stmt& s, const CpuTarget& target);

/// cpu_unroll.cpp: marks serial reduction loops of at most `max_extent` iterations that enclose a
/// vectorized loop as unrolled, up to 64 copies of a body (e.g. the 3x3 window of a depthwise
/// convolution around its vector lane loop).
loop::Stmt cpu_unroll(const loop::Stmt& s, int64_t max_extent);

/// cpu_parallel.cpp: marks the outermost loop of every top-level nest parallel when the nest does
/// at least `min_work` innermost iterations and the loop has at least 2 iterations; parallel loops
/// never nest.
loop::Stmt cpu_parallel(const loop::Stmt& s, const CpuTarget& target, int64_t min_work);

// ---- index analysis shared by the passes and the code generator (cpu_index.cpp) ----

/// True when `e` mentions variable `v`.
bool uses_var(const loop::Expr& e, const loop::VarNode* v);

/// Canonical integer expression: sums of constant multiples of atoms, with
/// floordiv(x, c) * (c * s) + floormod(x, c) * s merged into x * s (how a flattened loop over
/// pixels addresses a row-major image).
loop::Expr simplify_index(const loop::Expr& e);

/// The element offset of `buffer[indices]` from its allocation's element 0 (elem_offset plus
/// index times stride per dim), simplified.
loop::Expr linear_index(const loop::BufferNode& buffer, const std::vector<loop::Expr>& indices);

/// c when e == f + c * v with f independent of v (after simplify_index), nullopt otherwise.
std::optional<int64_t> var_coefficient(const loop::Expr& e, const loop::VarNode* v);

/// Product of the extents of every loop in `s` along its deepest path (innermost iterations).
int64_t nest_work(const loop::Stmt& s);

}  // namespace tessel::passes
