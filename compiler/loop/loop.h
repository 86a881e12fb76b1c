// Loop IR: a kernel as a structured program over buffers in memory scopes.
//
// Statements: seq, for (serial / parallel / core-bound / pipelined / unrolled / vectorized),
// allocate, store (scalar compute, before tensorization), if, copy (a DMA of a rectangular region,
// with padding for reads outside the source), intrin (one NPU instruction with symbolic buffer
// addresses, after tensorization), sync (set_flag / wait_flag / barrier), gpu (a GPU intrinsic:
// block barrier, cp.async and its groups, mma.sync; compiler/backend/gpu), prefetch (a cache hint
// for one element's line; CPU only, compiler/backend/cpu). Passes are small classes
// deriving from StmtMutator / StmtVisitor. Printing: print_stmt (text form, one statement per
// line).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/tensor.h"
#include "compiler/loop/expr.h"
#include "isa/isa.h"

namespace tessel::loop {

/// Where a buffer lives. `gm` buffers are kernel parameters (graph tensors in DRAM); l1..ub are
/// scratchpads of one NPU core; `host` is plain memory (CPU backend, interpreters; on the GPU its
/// global memory); `shared` is a GPU thread block's shared memory, `local` one GPU thread's
/// registers (or local memory).
enum class MemScope : uint8_t { host, gm, l1, l0a, l0b, l0c, ub, shared, local };
const char* scope_name(MemScope s);
/// The ISA scope of a device scope (throws InternalError for host).
isa::Scope to_isa_scope(MemScope s);

/// A buffer: a strided view `elem_offset + sum(index[d] * strides[d])` of a linear memory, in
/// elements of `dtype`. A buffer either is an allocation (`base` null) or views the allocation
/// `base` (same scope and dtype; elem_offset counts from the base's element 0). Memory planning
/// assigns `address_bytes` to allocations (scratchpads) and the GM planner to gm allocations;
/// dependence analysis works on allocations, so views of one allocation conflict.
struct BufferNode {
  std::string name;
  MemScope scope = MemScope::host;
  DType dtype = DType::f32;
  Shape shape;
  std::vector<int64_t> strides;  // elements; dense row-major when built by make_buffer
  int64_t elem_offset = 0;
  Buffer base;                 // the allocation this buffer views; null for an allocation
  int64_t address_bytes = -1;  // allocations only
  int64_t alloc_bytes = 0;     // allocations only: bytes reserved (>= span_bytes of every view)
  // Allocations only: the double_buffer pass must not give it a pong copy (the tiler alternates
  // it with a twin itself, or keeps it resident across the tiles).
  bool no_double_buffer = false;

  int64_t numel() const { return shape_numel(shape); }
  /// Bytes spanned from element 0 to the last element, inclusive (0 for an empty shape).
  int64_t span_bytes() const;
  /// The allocation: `base` or this buffer itself.
  const BufferNode* storage() const { return base ? base.get() : this; }
};

/// A dense row-major allocation.
Buffer make_buffer(const std::string& name, MemScope scope, DType dtype, Shape shape);
/// A view of `storage` (an allocation or a view of one) with its own shape, strides and offset
/// (offset in elements from the allocation's element 0).
Buffer make_view(const Buffer& storage, const std::string& name, Shape shape,
                 std::vector<int64_t> strides, int64_t elem_offset);
/// Row-major strides of `shape`.
std::vector<int64_t> dense_strides(const Shape& shape);

/// A rectangular region of a buffer: per dim [start, start + extent). `start` may depend on loop
/// variables; extents are static.
struct Region {
  Buffer buffer;
  std::vector<Expr> starts;
  std::vector<int64_t> extents;
};

/// Prefetch: a hint that the cache line holding element `indices` of `buffer` will be read soon
/// (llvm.prefetch, x86 prefetcht0..nta); it reads and writes no value and never faults. The
/// address is the buffer's strided offset of the indices, which may run past a dimension's extent
/// (an address further on in the same memory); nothing checks it against the buffer's bounds.
enum class StmtKind : uint8_t { Seq, For, Store, Allocate, If, Copy, Intrin, Sync, Gpu, Prefetch };
/// gpu_block: the iterations are the thread blocks of a GPU grid (blockIdx.x); gpu_thread: the
/// threads of a block (threadIdx.x), all of which run the body (its barriers are block-wide).
enum class ForKind : uint8_t {
  serial,
  parallel,
  core_bound,
  pipelined,
  unrolled,
  vectorized,
  gpu_block,
  gpu_thread
};
const char* for_kind_name(ForKind k);

/// GPU intrinsics (StmtKind::Gpu), after the PTX ISA (NVIDIA, "Parallel Thread Execution ISA",
/// version 7.0; compiler/backend/gpu/codegen.cpp maps them to the NVVM intrinsics):
///   barrier           bar.sync 0: every thread of the block waits for all the others
///   cp_async          cp.async.{ca,cg}.shared.global: operands {dst (shared), src (global)},
///                     gpu_imm bytes (4, 8 or 16); completes only at a cp_async_wait
///   cp_async_commit   cp.async.commit_group: the thread's pending cp.asyncs form a group
///   cp_async_wait     cp.async.wait_group gpu_imm: waits until at most gpu_imm groups pend
///   mma_m16n8k16      mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32: operands {D/C: 4 fp32
///                     (local), A: 8 fp16 (local), B: 4 fp16 (local)}, D += A x B over the warp,
///                     fragments in the PTX layout (gpu_mma.cpp)
enum class GpuOp : uint8_t { barrier, cp_async, cp_async_commit, cp_async_wait, mma_m16n8k16 };
const char* gpu_op_name(GpuOp op);

struct StmtNode;
using Stmt = std::shared_ptr<StmtNode>;

/// One address operand of an intrin: buffer base + elem_offset elements.
struct IntrinOperand {
  Buffer buffer;
  Expr elem_offset;
};

struct StmtNode {
  StmtKind kind = StmtKind::Seq;
  // Seq
  std::vector<Stmt> seq;
  // For
  Var var;
  int64_t extent = 0;
  ForKind for_kind = ForKind::serial;
  Stmt body;  // For, Allocate, If (then)
  // Store
  Buffer buffer;  // also Allocate
  std::vector<Expr> indices;
  Expr value;
  // If
  Expr cond;
  Stmt else_body;
  // Copy: dst region <- src region (same extents); src positions outside the source buffer's
  // shape read pad_value
  Region dst, src;
  double pad_value = 0;
  // Copy from GM: > 1 delivers it to the aligned set of that many cores (dma_mc, docs/isa.md);
  // every core of the set runs the same copy. 0: a plain dma.
  int multicast_cores = 0;
  // Intrin: the instruction with its MemRefs filled from `operands` at code generation, in the
  // order of isa memref slots (destination first).
  isa::Instruction instr;
  std::vector<IntrinOperand> operands;
  // Sync: instr holds set_flag / wait_flag / barrier / core_barrier
  // Gpu: the intrinsic, its immediate and its address operands (`operands`)
  GpuOp gpu_op = GpuOp::barrier;
  int64_t gpu_imm = 0;
  // Prefetch (the address is `buffer` / `indices`): temporal locality, 3 = keep in every cache
  // level (prefetcht0), 2 = L2 and out (prefetcht1), 1 = L3 (prefetcht2), 0 = non-temporal.
  int prefetch_locality = 3;
  // Debug
  std::string comment;
};

// ---- constructors ----
Stmt seq(std::vector<Stmt> stmts);
Stmt for_loop(Var var, int64_t extent, Stmt body, ForKind kind = ForKind::serial);
Stmt store(Buffer buffer, std::vector<Expr> indices, Expr value);
Stmt allocate(Buffer buffer, Stmt body);
Stmt if_then(Expr cond, Stmt then_body, Stmt else_body = nullptr);
Stmt copy(Region dst, Region src, double pad_value = 0);
Stmt intrin(isa::Instruction instr, std::vector<IntrinOperand> operands);
Stmt sync(isa::Instruction instr);
Stmt gpu_intrin(GpuOp op, std::vector<IntrinOperand> operands = {}, int64_t imm = 0);
/// A read prefetch of the line holding buffer[indices] (StmtKind::Prefetch); locality 0..3.
Stmt prefetch(Buffer buffer, std::vector<Expr> indices, int locality = 3);

/// The pipe a leaf statement runs on (copy: mte2 if the source is gm, else mte3; intrin/sync from
/// the instruction).
isa::Pipe stmt_pipe(const StmtNode& s);

/// Buffers a leaf statement reads and writes (copy: src / dst; intrin: sources / destination,
/// the destination is also read by accumulating instructions; gpu: cp_async src / dst, mma
/// A, B / D (also read)).
void stmt_buffers(const StmtNode& s, std::vector<Buffer>* reads, std::vector<Buffer>* writes);

/// A kernel: a body over gm parameter buffers.
struct Kernel {
  std::string name;
  std::vector<Buffer> params;
  Stmt body;
};

/// Text form of a statement (indented, one statement per line).
std::string to_string(const Stmt& s);
std::string to_string(const Kernel& k);

/// Pre-order traversal of every statement.
void visit_stmt(const Stmt& s, const std::function<void(const Stmt&)>& fn);

/// Rebuilds a statement tree bottom-up: `fn` receives each node with already-rewritten children
/// and returns its replacement (or the node itself). Children are rewritten in place on a copy.
Stmt rewrite_stmt(const Stmt& s, const std::function<Stmt(const Stmt&)>& fn);

/// Substitutes variables in every expression of a statement tree (returns a deep copy).
Stmt substitute_stmt(const Stmt& s, const std::map<const VarNode*, Expr>& subst);

}  // namespace tessel::loop
