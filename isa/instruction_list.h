// The tessel NPU instruction set, one record per instruction (an X-macro list). isa/isa.h expands
// it into the Opcode enum and the constexpr record table isa::kInstructions; the assembler,
// disassembler, encoder, decoder, verifier and the generated tables of docs/isa.md all read the
// records and the operand classes of isa/operand_classes.h -- nothing else lists opcodes.
//
//   X(mnemonic, class, kind, pipe, (operands), (traits))
//
// mnemonic  the Opcode enumerator and the assembly name. The enumerator's value is the binary
//           opcode (isa/encoding.h): append new instructions at the end of the list.
// class     the operand class: the Instruction::args alternative (isa::ArgsClass) whose field table
//           (isa/operand_classes.h) gives the operands' text form, binary form, scopes and roles.
// kind      what executes it (isa::InstrKind): alu (scalar unit, writes rd), load (scalar unit,
//           writes rd from GM), branch (conditional), jump, barrier, core_barrier, set_flag,
//           wait_flag, data (a pipe instruction with memory operands; its effect is
//           isa/semantics.cpp, its cost npu_model/timing.cpp).
// pipe      the executing pipe (isa::Pipe), or by_flag (set_flag: its src pipe, wait_flag: its
//           dst pipe) or by_direction (dma: mte2 when the source is gm, else mte3).
// operands  the class's selectable fields the instruction uses, in the class's field order: the
//           positional operands of the text form. Other fields of the class (the key=value fields)
//           are always used. An unused field keeps its default (the compact binary form requires
//           it; the text form prints it as an extra key=value only when it differs).
// traits    reads_dst: the destination is also read (dst = dst + ...); reduction: the destination
//           holds one element per repeat; bool_dst: the destination holds bool elements whatever
//           the dtype (comparisons); bool_src0: src0 holds bool elements (the mask of vsel);
//           converts: src0 holds elements of the `src_dtype` field (vconv); float_only: the dtype
//           must be a float type (f16, f32); bits_only: the dtype must be an integer type or bool.
//
// A new instruction is: its record here, its semantics (isa/semantics.cpp), its timing formula
// (npu_model/timing.cpp; automatic for a new member of an existing class) and its line in the
// "Instructions" section of docs/isa.md (tests/isa/docs_tables_test.cpp checks the line exists and
// regenerates the operand and encoding tables with TESSEL_UPDATE_GOLDEN=1).
#pragma once

// clang-format off
#define TESSEL_ISA_INSTRUCTIONS(X)                                                               \
  /* ---- scalar unit ---- */                                                                   \
  X(li,           scalar,  alu,          scalar,       (rd, imm),           ())                  \
  X(addi,         scalar,  alu,          scalar,       (rd, rs, imm),       ())                  \
  X(add,          scalar,  alu,          scalar,       (rd, rs, rt),        ())                  \
  X(sub,          scalar,  alu,          scalar,       (rd, rs, rt),        ())                  \
  X(mul,          scalar,  alu,          scalar,       (rd, rs, rt),        ())                  \
  X(muli,         scalar,  alu,          scalar,       (rd, rs, imm),       ())                  \
  X(blt,          scalar,  branch,       scalar,       (rs, rt, target),    ())                  \
  X(blti,         scalar,  branch,       scalar,       (rs, imm, target),   ())                  \
  X(jmp,          scalar,  jump,         scalar,       (target),            ())                  \
  /* ---- synchronisation ---- */                                                               \
  X(set_flag,     sync,    set_flag,     by_flag,      (src, dst, event),   ())                  \
  X(wait_flag,    sync,    wait_flag,    by_flag,      (src, dst, event),   ())                  \
  X(barrier,      scalar,  barrier,      scalar,       (),                  ())                  \
  X(core_barrier, scalar,  core_barrier, scalar,       (),                  ())                  \
  /* ---- data movement, cube, fix pipe ---- */                                                 \
  X(dma,          dma,     data,         by_direction, (dst, src),          ())                  \
  X(load2d,       load2d,  data,         mte1,         (dst, src),          ())                  \
  X(img2col,      img2col, data,         mte1,         (dst, src),          ())                  \
  X(mmad,         mmad,    data,         cube,         (c, a, b),           ())                  \
  X(fix,          fix,     data,         fix,          (dst, src),          ())                  \
  /* ---- vector unit (UB only) ---- */                                                         \
  X(vadd,         vector,  data,         vector,       (dst, src0, src1),   ())                  \
  X(vsub,         vector,  data,         vector,       (dst, src0, src1),   ())                  \
  X(vmul,         vector,  data,         vector,       (dst, src0, src1),   ())                  \
  X(vdiv,         vector,  data,         vector,       (dst, src0, src1),   ())                  \
  X(vmax,         vector,  data,         vector,       (dst, src0, src1),   ())                  \
  X(vmin,         vector,  data,         vector,       (dst, src0, src1),   ())                  \
  X(vmla,         vector,  data,         vector,       (dst, src0, src1),   (reads_dst))         \
  X(vadds,        vector,  data,         vector,       (dst, src0, scalar), ())                  \
  X(vmuls,        vector,  data,         vector,       (dst, src0, scalar), ())                  \
  X(vmaxs,        vector,  data,         vector,       (dst, src0, scalar), ())                  \
  X(vmins,        vector,  data,         vector,       (dst, src0, scalar), ())                  \
  X(vexp,         vector,  data,         vector,       (dst, src0),         (float_only))         \
  X(vln,          vector,  data,         vector,       (dst, src0),         (float_only))         \
  X(vsqrt,        vector,  data,         vector,       (dst, src0),         (float_only))         \
  X(vrec,         vector,  data,         vector,       (dst, src0),         (float_only))         \
  X(vabs,         vector,  data,         vector,       (dst, src0),         ())                  \
  X(vrelu,        vector,  data,         vector,       (dst, src0),         ())                  \
  X(vneg,         vector,  data,         vector,       (dst, src0),         ())                  \
  X(vcopy,        vector,  data,         vector,       (dst, src0),         ())                  \
  X(vdup,         vector,  data,         vector,       (dst, scalar),       ())                  \
  X(vrsum,        vector,  data,         vector,       (dst, src0),         (reduction))         \
  X(vrmax,        vector,  data,         vector,       (dst, src0),         (reduction))         \
  X(vrmin,        vector,  data,         vector,       (dst, src0),         (reduction))         \
  /* ---- vector unit: comparisons, select, logic, conversion (any dtype unless a trait says) */ \
  X(vcmp_eq,      vector,  data,         vector,       (dst, src0, src1),   (bool_dst))          \
  X(vcmp_ne,      vector,  data,         vector,       (dst, src0, src1),   (bool_dst))          \
  X(vcmp_lt,      vector,  data,         vector,       (dst, src0, src1),   (bool_dst))          \
  X(vcmp_le,      vector,  data,         vector,       (dst, src0, src1),   (bool_dst))          \
  X(vsel,         vector,  data,         vector,       (dst, src0, src1, src2), (bool_src0))     \
  X(vand,         vector,  data,         vector,       (dst, src0, src1),   (bits_only))         \
  X(vor,          vector,  data,         vector,       (dst, src0, src1),   (bits_only))         \
  X(vxor,         vector,  data,         vector,       (dst, src0, src1),   (bits_only))         \
  X(vnot,         vector,  data,         vector,       (dst, src0),         (bits_only))         \
  X(vconv,        vector,  data,         vector,       (dst, src0, src_dtype), (converts))   \
  /* ---- data movement: multicast (one GM read delivered to a set of cores) ---- */         \
  X(dma_mc,       dma,     data,         mte2,         (dst, src, cores),   ())                  \
  /* ---- L2 placement hints (no effect on values; no-ops without an L2) ---- */              \
  X(l2_prefetch,  l2hint,  data,         mte2,         (src),               ())                  \
  X(l2_discard,   l2hint,  data,         mte2,         (src),               ())                  \
  /* ---- scalar unit: a byte of GM into a register (run-time control flow) ---- */           \
  X(lbu,          scalar,  load,         scalar,       (rd, rs, imm),       ())

// The element types of data operands: X(enumerator, name, bytes, class). The enumerator's value is
// the binary dtype code; the compact binary form stores it in kDTypeFlagBits bits (isa/encoding.cpp).
// `name` is the assembly suffix. class: float (IEEE binary16/binary32), sint/uint (two's complement
// integers, arithmetic wraps), boolean (one byte holding 0 or 1).
#define TESSEL_ISA_DTYPES(X)      \
  X(f16, "f16", 2, float)         \
  X(f32, "f32", 4, float)         \
  X(i8, "i8", 1, sint)            \
  X(u8, "u8", 1, uint)            \
  X(i16, "i16", 2, sint)          \
  X(u16, "u16", 2, uint)          \
  X(i32, "i32", 4, sint)          \
  X(u32, "u32", 4, uint)          \
  X(i64, "i64", 8, sint)          \
  X(u64, "u64", 8, uint)          \
  X(boolean, "bool", 1, boolean)

// The names of the fields of all operand classes (isa/operand_classes.h). A name is the field's key
// in the text form (`rows=`) and how records and error messages refer to it.
#define TESSEL_ISA_FIELDS(X)                                                                     \
  X(rd) X(rs) X(rt) X(imm) X(target)                                                            \
  X(src) X(dst) X(event)                                                                        \
  X(dtype) X(dims) X(pad) X(ndims)                                                              \
  X(rows) X(cols) X(src_row_stride) X(transpose)                                                \
  X(c) X(h) X(w) X(kh) X(kw) X(stride_h) X(stride_w) X(dilation_h) X(dilation_w) X(pad_top)     \
  X(pad_left) X(oh) X(ow) X(c0)                                                                 \
  X(a) X(b) X(m1) X(k1) X(n1) X(acc)                                                            \
  X(dst_dtype) X(m) X(n) X(dst_row_stride) X(relu)                                              \
  X(src0) X(src1) X(src2) X(count) X(repeat) X(scalar) X(src_dtype) X(cores)                \
  X(a_dtype) X(b_dtype) X(quant) X(zero_point) X(per_channel) X(bytes)    \
  X(per_row)
// clang-format on
