// NPU code generation: a scheduled, tensorized, memory-planned and synchronised loop-IR kernel ->
// isa::Instruction stream for one core.
//
// Loops become scalar-register counted loops (li / body / addi / blti); a loop of extent 1 binds
// its variable to 0. Every address is buffer address + affine(loop variables) * element size: the
// constant part goes into the MemRef offset, the variable part is computed into a register right
// before the instruction. Copies become dma instructions with up to 4 dims (unit dims dropped,
// contiguous dims merged) and a static valid window for padding. Intrins and syncs are emitted as
// they are, with their MemRefs filled in.
#pragma once

#include <vector>

#include "compiler/loop/loop.h"
#include "isa/isa.h"
#include "passes/loop/npu_passes.h"

namespace tessel::npu_backend {

/// Appends the code of `body` to `code`; every instruction gets `op_index`. All allocations the
/// body uses must have address_bytes set (plan_memory for scratchpads, the GM planner for gm).
/// Throws tessel::InternalError when a copy's padding is not static (partition_loops must run
/// first) or registers run out.
void emit_kernel(const loop::Stmt& body, const passes::NpuTarget& target, int32_t op_index,
                 std::vector<isa::Instruction>& code);

}  // namespace tessel::npu_backend
