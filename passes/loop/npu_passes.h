// The NPU loop passes; the schedule knobs the tiling passes read are in schedule.h. The NPU backend
// runs them as a script (compiler/backend/npu/compile.cpp):
//   tile_vector | tile_cube   kernel TE -> tiled loop IR (copies into scratchpads, stage nests)
//   split_cores               per core: its share of the kernel's core-bound loop
//   double_buffer             ping-pong buffers in the innermost GM-copy loops
//   partition_loops           peel tile iterations so every DMA's padding is static
//   tensorize_vector          scalar stage nests on UB -> vector instructions
//   plan_memory               scratchpad addresses for every allocation (capacity checked)
//   insert_sync               set_flag/wait_flag pairs for the cross-pipe dependences only
// and, over the whole program's kernels when memory.l2.placement asks for them (an L2 only):
//   l2_prefetch               at a kernel's start, prefetch the next kernels' weights into L2
//   l2_discard                after an intermediate GM tensor's last reader, drop its L2 lines
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/loop/loop.h"
#include "compiler/te/te.h"
#include "isa/isa.h"
#include "npu_model/hw_config.h"

namespace tessel::passes {

/// What the NPU loop passes need to know about the target.
struct NpuTarget {
  const npu::HwConfig* hw = nullptr;
  DType act_dtype =
      DType::f16;  // storage dtype of activations in GM and on chip (cube input dtype)
  int act_bytes() const { return dtype_size(act_dtype); }
  /// The storage dtype of tensor data of element type `t` (a te tensor's or graph value's dtype):
  /// floats in act_dtype, integers and bool as they are.
  DType storage(DType t) const { return dtype_is_float(t) ? act_dtype : t; }
};

/// The ISA data type of a storage dtype (f16, f32, the integers, bool). Throws InternalError for
/// other dtypes (f64 and strings have no NPU storage).
isa::DType isa_dtype(DType t);

/// One kernel to lower: its output compute and the GM buffer of every placeholder it reads and of
/// its output (views allowed, e.g. a slice of a Concat output).
struct KernelSpec {
  std::string name;
  te::Tensor out;
  std::map<const te::TensorNode*, loop::Buffer> gm;
};

/// A point of a kernel's schedule space: one value per knob, by name (passes/loop/schedule.h
/// lists the knobs of each pass; a partial point is completed by passes::default_knobs).
using Knobs = std::map<std::string, int64_t>;

/// Tiling for vector kernels (any TE DAG of elementwise and reduction stages): emits the point
/// `knobs` of the kernel's space (vector_schedule in schedule.h: tile_axis, tiles,
/// double_buffer, split, cores) -- tile loops with static tails, each tile's input regions copied
/// GM -> UB (with padding), every stage computed at the tile (compute_at) into UB, the output tile
/// copied UB -> GM. Requires affine reads (tessel::Unsupported otherwise). Throws
/// passes::InvalidKnobs with the reason for a point that does not fit UB.
loop::Stmt tile_vector(const KernelSpec& spec, const NpuTarget& target, const Knobs& knobs);

/// Tiling for cube kernels: a "conv2d" or "matmul" contraction (compiler/lower/op_compute.cpp),
/// optionally followed by elementwise epilogue stages (bias, activation) computed on the UB tile.
/// Emits the point `knobs` (cube_schedule in schedule.h: conv mt/kc/ht/wt/weights_resident/
/// k_sub/row_groups, matmul mt/nt/kt/a_resident, and double_buffer/split/cores): GM->L1 copies,
/// load2d/img2col (L0A/L0B ping-pong), mmad (accumulating over K), fix into UB, the epilogue and
/// the UB->GM copy. Throws passes::InvalidKnobs with the reason (the buffer, the bytes needed and
/// available) for a point that does not fit.
loop::Stmt tile_cube(const KernelSpec& spec, const te::Tensor& contraction, const NpuTarget& target,
                     const Knobs& knobs);

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

/// A GM byte range [address, address + bytes) of one allocation (a GM tensor).
struct GmRange {
  uint64_t address = 0, bytes = 0;
  bool operator==(const GmRange&) const = default;
  bool operator<(const GmRange& o) const {
    return address != o.address ? address < o.address : bytes < o.bytes;
  }
};

/// The GM allocations one kernel touches, for the L2 placement passes (whole allocations: a view
/// counts as its allocation). `constants` are read-only weights (isa::GmKind::constant);
/// `intermediates` are the scratch tensors (neither graph input, output nor constant) it reads
/// or writes.
struct KernelGmUse {
  std::vector<GmRange> constants;
  std::vector<GmRange> intermediates;
};

/// The l2_prefetch plan (passes/loop/l2_prefetch.cpp): for each kernel, in program order, the
/// ranges core 0 prefetches at its start: the constants of the following kernels, nearest first,
/// while the constants ahead of the kernel fit in half of `l2_capacity_bytes` (a range that does
/// not fit is cut to the part that does). Each constant is prefetched at most once, never by
/// the kernel that reads it first. Empty lists when l2_capacity_bytes is 0.
std::vector<std::vector<GmRange>> plan_l2_prefetch(const std::vector<KernelGmUse>& kernels,
                                                   uint64_t l2_capacity_bytes);

/// The l2_discard plan (passes/loop/l2_discard.cpp): for each kernel i, the intermediates whose
/// last use (read or write) is kernel i, to be discarded after every core has finished kernel i
/// (the caller places them after kernel i's core barrier). Sorted by address.
std::vector<std::vector<GmRange>> plan_l2_discard(const std::vector<KernelGmUse>& kernels);

/// One l2_prefetch or l2_discard instruction (`op`) of GM range `r` (gm[x0 + address], bytes),
/// tagged with `op_index`. Throws tessel::Error if r.bytes does not fit the operand (2^32 - 1).
isa::Instruction l2_hint(isa::Opcode op, const GmRange& r, int32_t op_index);

}  // namespace tessel::passes
