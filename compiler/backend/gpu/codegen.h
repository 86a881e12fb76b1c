// Loop IR -> LLVM IR for NVPTX (the GPU backend's code generator).
//
// A kernel (one gpu_block loop, passes/loop/gpu_passes.h) becomes a PTX entry
// `void NAME(T0* noalias p0, ..., Tn* noalias pn)` over its buffers (generic pointers to global
// memory, element type by the buffer's dtype: fp32, fp16, fp64, i8..i64, bool as i8; NVPTX's
// kernel-argument lowering and address-space inference make the accesses ld.global /
// st.global), annotated as a kernel with
// its block size (maxntid). On top of the target-independent part (LoopCodegen,
// compiler/backend/cpu/loop_codegen.h: expressions, loads/stores, serial / unrolled / vectorized
// loops):
//   for (gpu_block)   the variable is %ctaid.x (the grid has exactly `extent` blocks)
//   for (gpu_thread)  the variable is %tid.x; a loop of fewer iterations than the block has
//                     threads is guarded (and must contain no barrier)
//   allocate shared   a region of the kernel's dynamic shared memory (`NAME.smem`, extern
//                     .shared, 16-byte aligned regions in allocation order)
//   allocate local    an array in the thread's registers (an entry-block alloca)
//   gpu barrier       llvm.nvvm.barrier0 (bar.sync 0)
//   gpu cp_async      llvm.nvvm.cp.async.{ca,cg}.shared.global.{4,8,16} (cg for 16 bytes),
//                     commit_group / wait_group
//   gpu mma_m16n8k16  llvm.nvvm.mma.m16n8k16.row.col.f32.f32: the fragments are packed into
//                     .f16x2 registers, a0 in the low half (PTX ISA 7.0, 9.7.13.4.8)
//   exp / log         fp32: ex2.approx.f32 / lg2.approx.f32 with the base change (relative
//                     error about 2^-22 plus the rounding of x * log2(e)); fp64 (no fp64 ex2 /
//                     lg2 in PTX): range reduction and series in double (within 4 ulps)
//   tanh / erf        computed in fp32 (expm1 series near 0, A&S 7.1.26 for |x| >= 1, Taylor
//                     series below): absolute error under 2e-7
// Vector accesses get the alignment index_divisor proves for their first element (buffers
// start 16-byte aligned), so 16-byte rows become ld.global.v4 / st.shared.v4.
#pragma once

#include <string>
#include <vector>

#include "compiler/loop/loop.h"

namespace llvm {
class Function;
class Module;
}  // namespace llvm

namespace tessel::gpu_backend {

/// The shape a kernel is launched with (computed from its loop IR, gpu_passes.h).
struct KernelShape {
  int64_t grid = 1;          // blocks (the gpu_block loop's extent)
  int64_t block = 1;         // threads per block (the largest gpu_thread extent)
  int64_t shared_bytes = 0;  // dynamic shared memory
};

/// The launch shape of kernel `body`; throws tessel::InternalError when `body` is not one
/// gpu_block loop.
KernelShape kernel_shape(const loop::Stmt& body);

/// Emits PTX entry `name` into `module` (see the file comment). Throws tessel::Error naming the
/// kernel and the statement for loop IR the GPU code generator cannot express.
llvm::Function* emit_gpu_kernel(llvm::Module& module, const std::string& name,
                                const std::vector<loop::Buffer>& params, const loop::Stmt& body);

/// The NVPTX triple and data layout (64-bit pointers).
extern const char* const kNvptxTriple;
extern const char* const kNvptxDataLayout;

}  // namespace tessel::gpu_backend
