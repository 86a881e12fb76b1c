// Builders of the synthetic programs the simulator benchmarks run (bench_simulator.cpp,
// bench_sim_scale.cpp): instructions built as structs, no assembler involved.
#pragma once

#include "isa/isa.h"

namespace tessel::bench {

/// A scalar-unit instruction: rd <- op(rs, imm), or a branch to `target`.
inline isa::Instruction scalar(isa::Opcode op, uint8_t rd, uint8_t rs, int64_t imm,
                               int32_t target = -1) {
  isa::Instruction in;
  in.op = op;
  in.args = isa::ScalarArgs{rd, rs, 0, imm, target};
  return in;
}

/// set_flag / wait_flag between pipes `src` and `dst`, event 0.
inline isa::Instruction flag(isa::Opcode op, isa::Pipe src, isa::Pipe dst) {
  isa::Instruction in;
  in.op = op;
  in.args = isa::SyncArgs{src, dst, 0};
  return in;
}

/// A contiguous fp16 dma of `elems` elements from `src` to `dst`.
inline isa::Instruction dma(isa::MemRef dst, isa::MemRef src, uint32_t elems) {
  isa::DmaArgs d;
  d.dtype = isa::DType::f16;
  d.dst = dst;
  d.src = src;
  d.ndims = 1;
  d.extent[0] = elems;
  d.dst_stride[0] = d.src_stride[0] = 1;
  d.valid_end[0] = elems;
  isa::Instruction in;
  in.op = isa::Opcode::dma;
  in.args = d;
  return in;
}

/// A unit-stride fp16 vector op over `count` elements of UB: dst <- op(src, src) (scalar 1.0).
inline isa::Instruction vec(isa::Opcode op, int64_t dst, int64_t src, uint32_t count) {
  using isa::MemRef;
  using isa::Scope;
  isa::Instruction in;
  in.op = op;
  in.args = isa::VectorArgs{isa::DType::f16,
                            {MemRef{Scope::ub, 0, dst}, 1, 0},
                            {MemRef{Scope::ub, 0, src}, 1, 0},
                            {MemRef{Scope::ub, 0, src}, 1, 0},
                            count,
                            1,
                            1.0f};
  return in;
}

}  // namespace tessel::bench
