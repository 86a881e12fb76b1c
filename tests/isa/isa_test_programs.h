// Programs and hardware configs built in code for the ISA tests (asm, encoding, verifier).
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "isa/isa.h"
#include "npu_model/hw_config.h"

namespace tessel::isa::test_programs {

inline float float_from_bits(uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

inline MemRef mem(Scope s, uint8_t reg, int64_t offset) { return MemRef{s, reg, offset}; }
inline VecOperand vec(Scope s, uint8_t reg, int64_t offset, int32_t es, int32_t rs) {
  return VecOperand{MemRef{s, reg, offset}, es, rs};
}

inline Instruction make(Opcode op, ScalarArgs a, int32_t op_index = -1) {
  Instruction in;
  in.op = op;
  in.args = a;
  in.op_index = op_index;
  return in;
}
template <class A>
Instruction make(Opcode op, A a, int32_t op_index = -1) {
  Instruction in;
  in.op = op;
  in.args = a;
  in.op_index = op_index;
  return in;
}

inline ScalarArgs sargs(uint8_t rd, uint8_t rs, uint8_t rt, int64_t imm, int32_t target) {
  ScalarArgs a{};
  a.rd = rd, a.rs = rs, a.rt = rt, a.imm = imm, a.target = target;
  return a;
}

inline VectorArgs vargs(DType t, VecOperand dst, VecOperand src0, VecOperand src1, uint32_t count,
                        uint32_t repeat, float scalar) {
  VectorArgs a{};
  a.dtype = t, a.dst = dst, a.src0 = src0, a.src1 = src1, a.count = count, a.repeat = repeat;
  a.scalar = scalar;
  return a;
}

/// A 2-core program that uses every opcode, each with non-default values in every field the opcode
/// uses; core 1 also carries non-default values in fields its opcodes do NOT use (printed as
/// key=value extras). Registers are x0..x31 and scopes legal, so the text form round-trips it.
inline Program every_opcode_program() {
  Program p;
  p.name = "every_opcode";
  p.gm_bytes = 1 << 20;
  p.op_names = {"conv/0", "relu 1", "add\"2\""};
  GmBuffer in{"x", GmKind::input, 0x0, 8 * 24 * 96 * 2, DType::f16, {8, 24, 96}, {}};
  GmBuffer w{"w.0", GmKind::constant, 0x10000, 16, DType::f32, {4}, {}};
  GmBuffer out{"y", GmKind::output, 0x20000, 4096, DType::f32, {32, 32}, {}};
  GmBuffer tmp{"tmp space", GmKind::scratch, 0x30000, 64, DType::f16, {}, {}};
  p.buffers = {in, w, out, tmp};

  std::vector<Instruction> c0;
  c0.push_back(make(Opcode::li, sargs(1, 0, 0, -5, -1), 0));
  c0.push_back(make(Opcode::addi, sargs(2, 1, 0, 100, -1), 0));
  c0.push_back(make(Opcode::add, sargs(3, 1, 2, 0, -1), 0));
  c0.push_back(make(Opcode::sub, sargs(4, 3, 1, 0, -1), 0));
  c0.push_back(make(Opcode::mul, sargs(5, 4, 31, 0, -1), 0));
  c0.push_back(make(Opcode::muli, sargs(6, 5, 0, std::numeric_limits<int64_t>::min(), -1), 0));
  c0.push_back(make(Opcode::blt, sargs(0, 1, 2, 0, 0), 0));    // back to the start
  c0.push_back(make(Opcode::blti, sargs(0, 3, 0, 12, 9), 0));  // forward
  c0.push_back(make(Opcode::jmp, sargs(0, 0, 0, 0, 0), 0));    // target set below: stream end
  c0.push_back(make(Opcode::set_flag, SyncArgs{Pipe::mte2, Pipe::vector, 3}, 1));
  c0.push_back(make(Opcode::wait_flag, SyncArgs{Pipe::cube, Pipe::fix, 7}, 1));
  c0.push_back(make(Opcode::barrier, ScalarArgs{}, 1));
  c0.push_back(make(Opcode::core_barrier, ScalarArgs{}, -1));
  {
    DmaArgs d;
    d.dtype = DType::f16;
    d.dst = mem(Scope::ub, 2, 0);
    d.src = mem(Scope::gm, 3, 4096);
    d.ndims = 3;
    d.extent = {8, 24, 96, 0};
    d.dst_stride = {2304, 96, 1, 0};
    d.src_stride = {4608, 192, 1, 0};
    d.valid_begin = {0, 1, 0, 0};
    d.valid_end = {8, 24, 96, 0};
    d.pad_value = -1.5f;
    c0.push_back(make(Opcode::dma, d, 2));
    DmaArgs e;
    e.dtype = DType::f32;
    e.dst = mem(Scope::gm, 4, -16);
    e.src = mem(Scope::ub, 0, 256);
    e.ndims = 4;
    e.extent = {2, 3, 4, 5};
    e.dst_stride = {-60, 20, 5, 1};
    e.src_stride = {0, 20, 5, 1};
    e.valid_begin = {0, 0, 0, 0};
    e.valid_end = {2, 3, 4, 5};
    e.pad_value = float_from_bits(0x7fa00001u);  // a signalling NaN with a payload
    c0.push_back(make(Opcode::dma, e, 2));
    DmaArgs f;
    f.dtype = DType::f16;
    f.dst = mem(Scope::l1, 7, 512);
    f.src = mem(Scope::ub, 8, 0);
    f.ndims = 1;
    f.extent = {1000, 0, 0, 0};
    f.dst_stride = {1, 0, 0, 0};
    f.src_stride = {2, 0, 0, 0};
    f.valid_begin = {3, 0, 0, 0};
    f.valid_end = {900, 0, 0, 0};
    f.pad_value = std::numeric_limits<float>::infinity();
    c0.push_back(make(Opcode::dma, f, 2));
  }
  {
    Load2dArgs l;
    l.dtype = DType::f16;
    l.dst = mem(Scope::l0a, 1, 64);
    l.src = mem(Scope::l1, 2, 0);
    l.rows = 30, l.cols = 40, l.src_row_stride = 48, l.transpose = true;
    c0.push_back(make(Opcode::load2d, l, 2));
    Load2dArgs m = l;
    m.dtype = DType::f32;
    m.dst = mem(Scope::l0b, 0, 0);
    m.transpose = false;
    m.src_row_stride = -40;
    c0.push_back(make(Opcode::load2d, m, 2));
  }
  {
    Img2colArgs g;
    g.dtype = DType::f16;
    g.dst = mem(Scope::l0b, 9, 128);
    g.src = mem(Scope::l1, 10, 2048);
    g.c = 3, g.h = 17, g.w = 19, g.kh = 3, g.kw = 5;
    g.stride_h = 2, g.stride_w = 3, g.dilation_h = 4, g.dilation_w = 2;
    g.pad_top = 1, g.pad_left = -2, g.oh = 8, g.ow = 7, g.c0 = 16;
    c0.push_back(make(Opcode::img2col, g, 2));
  }
  {
    MmadArgs m;
    m.c = mem(Scope::l0c, 11, 1024);
    m.a = mem(Scope::l0a, 12, 0);
    m.b = mem(Scope::l0b, 13, 512);
    m.m1 = 2, m.k1 = 9, m.n1 = 4, m.accumulate = true;
    c0.push_back(make(Opcode::mmad, m, 2));
    m.a_dtype = DType::u8, m.b_dtype = DType::i8;  // the int8 mode
    c0.push_back(make(Opcode::mmad, m, 2));
  }
  {
    FixArgs f;
    f.dst_dtype = DType::f32;
    f.dst = mem(Scope::ub, 14, 8192);
    f.src = mem(Scope::l0c, 15, 0);
    f.m = 31, f.n = 17, f.dst_row_stride = 32, f.relu = true;
    c0.push_back(make(Opcode::fix, f, 2));
    // Requantisation to i8 with a per-channel table and a zero point.
    f.dst_dtype = DType::i8, f.relu = false;
    f.per_channel = true, f.quant = mem(Scope::ub, 16, 65536), f.zero_point = -7;
    c0.push_back(make(Opcode::fix, f, 2));
  }
  const VecOperand d = vec(Scope::ub, 4, 0, 1, 128);
  const VecOperand s0 = vec(Scope::ub, 5, 256, 2, 256);
  const VecOperand s1 = vec(Scope::ub, 6, -32, 0, 1);
  for (Opcode op : {Opcode::vadd, Opcode::vsub, Opcode::vmul, Opcode::vdiv, Opcode::vmax,
                    Opcode::vmin, Opcode::vmla}) {
    c0.push_back(make(op, vargs(DType::f16, d, s0, s1, 128, 8, 0.0f), 2));
  }
  const float scalars[] = {1.5f, -0.0f, 1e-45f, 3.4028235e38f};
  int k = 0;
  for (Opcode op : {Opcode::vadds, Opcode::vmuls, Opcode::vmaxs, Opcode::vmins}) {
    c0.push_back(make(op, vargs(DType::f32, d, s0, VecOperand{}, 64, 3, scalars[k++]), 2));
  }
  for (Opcode op : {Opcode::vexp, Opcode::vln, Opcode::vsqrt, Opcode::vrec, Opcode::vabs,
                    Opcode::vrelu, Opcode::vneg, Opcode::vcopy}) {
    c0.push_back(make(op, vargs(DType::f16, d, s0, VecOperand{}, 100, 2, 0.0f), 2));
  }
  c0.push_back(make(Opcode::vdup,
                    vargs(DType::f16, d, VecOperand{}, VecOperand{}, 128, 16,
                          -std::numeric_limits<float>::infinity()),
                    2));
  for (Opcode op : {Opcode::vrsum, Opcode::vrmax, Opcode::vrmin}) {
    c0.push_back(
        make(op, vargs(DType::f32, vec(Scope::ub, 7, 64, 1, 1), s0, VecOperand{}, 64, 5, 0.0f), 2));
  }
  // Comparisons, select, logic and conversion: other dtypes than f16/f32.
  for (Opcode op : {Opcode::vcmp_eq, Opcode::vcmp_ne, Opcode::vcmp_lt, Opcode::vcmp_le})
    c0.push_back(
        make(op, vargs(DType::i32, vec(Scope::ub, 8, 0, 1, 128), s0, s1, 128, 8, 0.0f), 2));
  {
    VectorArgs sel = vargs(DType::u16, d, vec(Scope::ub, 9, 4096, 1, 64), s0, 64, 4, 0.0f);
    sel.src2 = s1;
    c0.push_back(make(Opcode::vsel, sel, 2));
  }
  for (Opcode op : {Opcode::vand, Opcode::vor, Opcode::vxor})
    c0.push_back(make(op, vargs(DType::boolean, d, s0, s1, 32, 2, 0.0f), 2));
  c0.push_back(make(Opcode::vnot, vargs(DType::i8, d, s0, VecOperand{}, 40, 1, 0.0f), 2));
  {
    VectorArgs cv = vargs(DType::f16, d, s0, VecOperand{}, 64, 2, 0.0f);
    cv.src_dtype = DType::i64;
    c0.push_back(make(Opcode::vconv, cv, 2));
  }
  std::get<ScalarArgs>(c0[8].args).target = static_cast<int32_t>(c0.size());  // ends the stream
  p.cores.push_back(c0);

  // Core 1: fields the opcode does not use set to non-default values, op_index jumps, x0 bases.
  std::vector<Instruction> c1;
  c1.push_back(make(Opcode::li, sargs(1, 9, 10, 7, 3), 1));       // rs, rt, target unused
  c1.push_back(make(Opcode::jmp, sargs(2, 0, 0, 42, 0), 0));      // rd, imm unused
  c1.push_back(make(Opcode::barrier, sargs(0, 0, 0, 5, -1), 2));  // imm unused
  c1.push_back(make(Opcode::vexp,
                    vargs(DType::f32, vec(Scope::ub, 0, 0, 1, 0), vec(Scope::ub, 0, 64, 1, 0),
                          vec(Scope::l1, 3, 4, 5, 6), 16, 1, 2.0f),
                    -1));  // src1 and scalar unused
  c1.push_back(make(Opcode::vdup,
                    vargs(DType::f16, vec(Scope::ub, 0, 0, 1, 0), vec(Scope::gm, 0, 0, 1, 1),
                          VecOperand{}, 16, 1, float_from_bits(0xffc00000u)),
                    -1));  // src0 unused; scalar = -nan
  {
    DmaArgs d2;  // an entry past ndims is set: lists print all 4 entries plus ndims=
    d2.dtype = DType::f32;
    d2.dst = mem(Scope::ub, 0, 0);
    d2.src = mem(Scope::gm, 1, 0);
    d2.ndims = 2;
    d2.extent = {4, 4, 9, 0};
    d2.dst_stride = {4, 1, 0, 0};
    d2.src_stride = {8, 1, 0, 0};
    d2.valid_begin = {0, 0, 0, 0};
    d2.valid_end = {4, 4, 0, 0};
    c1.push_back(make(Opcode::dma, d2, 1));
    DmaArgs m = d2;  // a multicast load to the 2-core set
    m.dst = mem(Scope::l1, 5, 1024);
    m.cores = 2;
    c1.push_back(make(Opcode::dma_mc, m, 1));
    // L2 hints (GM only): a prefetch by register, a discard at an absolute address.
    c1.push_back(make(Opcode::l2_prefetch, L2HintArgs{mem(Scope::gm, 3, 128), 4096}, 1));
    c1.push_back(make(Opcode::l2_discard, L2HintArgs{mem(Scope::gm, 0, 512), 256}, 1));
  }
  // Scalar loads of a GM byte: through a register, and at an absolute address.
  c1.push_back(make(Opcode::lbu, sargs(7, 3, 0, 96, -1), 2));
  c1.push_back(make(Opcode::lbu, sargs(8, 0, 0, 0x30000, -1), 2));
  p.cores.push_back(c1);
  return p;
}

/// A small valid hardware config (the shape of hw_configs' DaVinci-like preset), built in code.
inline npu::HwConfig test_hw(int cores = 2) {
  npu::HwConfig hw;
  hw.name = "test-hw";
  hw.clock_ghz = 1.0;
  hw.cores = cores;
  hw.core.scalar = {1, 16};
  hw.core.cube = {16, 16, 16, DType::f16, DType::f32, 8};
  hw.core.vector = {256, 4};
  hw.core.buffers_bytes = {1 << 20, 64 << 10, 64 << 10, 256 << 10, 256 << 10};
  hw.core.mte1 = {256, 4};
  hw.core.mte2 = {64, 200};
  hw.core.mte3 = {64, 200};
  hw.core.fix = {128, 4};
  hw.core.sync_event_ids = 8;
  hw.dram = {128, 300, int64_t{1} << 32};
  hw.multicast = true;  // every_opcode_program() uses dma_mc
  return hw;
}

/// A random instruction. With `text_safe`, registers are x0..x31, scopes legal for the opcode and
/// enum values valid (so the text form can represent it); otherwise any encodable value may occur
/// (registers up to 255, any args alternative, ndims up to 255).
inline Instruction random_instruction(std::mt19937_64& rng, bool text_safe) {
  auto u = [&](uint64_t lo, uint64_t hi) {
    return std::uniform_int_distribution<uint64_t>(lo, hi)(rng);
  };
  auto i64 = [&]() -> int64_t {
    switch (u(0, 3)) {
      case 0:
        return static_cast<int64_t>(u(0, 100)) - 50;
      case 1:
        return static_cast<int64_t>(u(0, 1 << 20));
      case 2:
        return static_cast<int64_t>(rng());
      default:
        return -static_cast<int64_t>(u(0, 1u << 30));
    }
  };
  auto i32 = [&]() {
    return static_cast<int32_t>(static_cast<int64_t>(u(0, 1 << 16)) - (1 << 15));
  };
  auto u32 = [&]() -> uint32_t {
    return u(0, 1) ? static_cast<uint32_t>(u(0, 300)) : static_cast<uint32_t>(rng());
  };
  auto reg = [&]() { return static_cast<uint8_t>(text_safe ? u(0, 31) : u(0, 255)); };
  auto flt = [&]() -> float {
    switch (u(0, 3)) {
      case 0:
        return 0.0f;
      case 1:
        return static_cast<float>(static_cast<int>(u(0, 20)) - 10) * 0.25f;
      default:
        return float_from_bits(static_cast<uint32_t>(rng()));  // includes NaN payloads
    }
  };
  auto scope_of = [&](std::initializer_list<Scope> allowed) {
    if (!text_safe) return static_cast<Scope>(u(0, kNumScopes - 1));
    return *(allowed.begin() + u(0, allowed.size() - 1));
  };
  auto memref = [&](std::initializer_list<Scope> allowed) {
    return MemRef{scope_of(allowed), reg(), i64()};
  };
  auto dtype = [&]() { return u(0, 1) ? DType::f32 : DType::f16; };
  auto any_dtype = [&]() { return static_cast<DType>(u(0, kNumDTypes - 1)); };
  const auto all = {Scope::gm, Scope::l1, Scope::l0a, Scope::l0b, Scope::l0c, Scope::ub};

  Instruction in;
  in.op = static_cast<Opcode>(u(0, kNumOpcodes - 1));
  in.op_index = u(0, 2) == 0 ? -1 : static_cast<int32_t>(u(0, 5));
  const InstrInfo& r = instr_info(in.op);  // the operand class and fields come from the record
  std::size_t cls = args_index(in.op);
  if (!text_safe && u(0, 9) == 0) cls = u(0, 8);  // wrong operand class: only the binary keeps it
  const bool extras = u(0, 3) == 0;               // set fields the opcode does not use
  switch (cls) {
    case 0: {
      ScalarArgs a{};
      a.rd = reg(), a.rs = reg(), a.rt = reg(), a.imm = i64();
      a.target = static_cast<int32_t>(u(0, 40));
      if (!extras) {  // keep only what the opcode uses
        ScalarArgs p;
        if (r.uses(Field::rd)) p.rd = a.rd;
        if (r.uses(Field::rs)) p.rs = a.rs;
        if (r.uses(Field::rt)) p.rt = a.rt;
        if (r.uses(Field::imm)) p.imm = a.imm;
        if (r.uses(Field::target)) p.target = a.target;
        a = p;
      }
      if (u(0, 9) == 0) a.target = -static_cast<int32_t>(u(1, 5));
      in.args = a;
      break;
    }
    case 1:
      in.args = SyncArgs{static_cast<Pipe>(u(0, kNumPipes - 1)),
                         static_cast<Pipe>(u(0, kNumPipes - 1)), static_cast<uint8_t>(u(0, 255))};
      break;
    case 2: {
      auto& a = in.args.emplace<DmaArgs>();
      a.dtype = any_dtype();
      if (text_safe) {
        switch (u(0, 3)) {
          case 0:
            a.dst = memref({Scope::l1}), a.src = memref({Scope::gm});
            break;
          case 1:
            a.dst = memref({Scope::ub}), a.src = memref({Scope::gm});
            break;
          case 2:
            a.dst = memref({Scope::gm}), a.src = memref({Scope::ub});
            break;
          default:
            a.dst = memref({Scope::l1}), a.src = memref({Scope::ub});
            break;
        }
      } else {
        a.dst = memref(all), a.src = memref(all);
      }
      a.ndims = static_cast<uint8_t>(text_safe || u(0, 3) ? u(1, kMaxDmaDims) : u(0, 255));
      const int n = extras ? kMaxDmaDims : std::min<int>(a.ndims, kMaxDmaDims);
      for (int d = 0; d < n; ++d) {
        a.extent[d] = u32();
        a.dst_stride[d] = i64();
        a.src_stride[d] = i64();
        if (u(0, 1)) {
          a.valid_begin[d] = 0, a.valid_end[d] = a.extent[d];
        } else {
          a.valid_begin[d] = u32(), a.valid_end[d] = u32();
        }
      }
      a.pad_value = flt();
      break;
    }
    case 3: {
      auto& a = in.args.emplace<Load2dArgs>();
      a.dtype = dtype();
      a.dst = memref({Scope::l0a, Scope::l0b});
      a.src = memref({Scope::l1});
      a.rows = u32(), a.cols = u32(), a.src_row_stride = i64(), a.transpose = u(0, 1);
      break;
    }
    case 4: {
      auto& a = in.args.emplace<Img2colArgs>();
      a.dtype = dtype();
      a.dst = memref({Scope::l0a, Scope::l0b});
      a.src = memref({Scope::l1});
      a.c = u32(), a.h = u32(), a.w = u32(), a.kh = u32(), a.kw = u32(), a.oh = u32(), a.ow = u32();
      if (u(0, 1)) {
        a.stride_h = u32(), a.stride_w = u32(), a.dilation_h = u32(), a.dilation_w = u32();
        a.pad_top = i32(), a.pad_left = i32();
      }
      if (u(0, 1)) a.c0 = u32();  // NC1HWC0 source (0 = dense)
      break;
    }
    case 5: {
      auto& a = in.args.emplace<MmadArgs>();
      a.c = memref({Scope::l0c}), a.a = memref({Scope::l0a}), a.b = memref({Scope::l0b});
      a.m1 = u32(), a.k1 = u32(), a.n1 = u32(), a.accumulate = u(0, 1);
      if (u(0, 1)) a.a_dtype = dtype(), a.b_dtype = dtype();
      break;
    }
    case 6: {
      auto& a = in.args.emplace<FixArgs>();
      a.dst_dtype = dtype();
      a.dst = memref({Scope::ub}), a.src = memref({Scope::l0c});
      a.m = u32(), a.n = u32(), a.dst_row_stride = i64(), a.relu = u(0, 1);
      if (u(0, 1)) {
        a.per_channel = u(0, 1), a.quant = memref({Scope::ub});
        a.zero_point = static_cast<int32_t>(i64());
      }
      break;
    }
    case 8: {
      auto& a = in.args.emplace<L2HintArgs>();
      a.src = memref({Scope::gm}), a.bytes = u32();
      break;
    }
    default: {
      auto& a = in.args.emplace<VectorArgs>();
      auto v = [&](bool used) {
        if (!used && !extras) return VecOperand{};
        // Unused operands may name any scope; used ones must be in UB for the text form.
        const MemRef m = used ? memref({Scope::ub}) : memref(all);
        return VecOperand{m, i32(), i32()};
      };
      // A non-vector opcode given VectorArgs (the binary-only wrong-class case) gets a src0.
      a.dtype = any_dtype();
      a.dst = v(true);
      a.src0 = v(!is_vector_opcode(in.op) || r.uses(Field::src0));
      a.src1 = v(r.uses(Field::src1));
      a.src2 = v(r.uses(Field::src2));
      a.count = u32();
      a.repeat = u(0, 1) ? 1 : u32();
      a.scalar = r.uses(Field::scalar) || extras ? flt() : 0.0f;
      if (r.uses(Field::src_dtype) || extras) a.src_dtype = any_dtype();
      break;
    }
  }
  return in;
}

}  // namespace tessel::isa::test_programs
