// Helpers for the simulator/semantics tests: a hardware config built in code and small builders
// for isa::Instruction structs (so tests do not depend on the YAML loader or the assembler).
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <random>
#include <vector>

#include "compiler/support/fp16.h"
#include "isa/isa.h"
#include "isa/semantics.h"
#include "npu_model/hw_config.h"

namespace tessel::testutil {

using isa::DType;
using isa::Instruction;
using isa::MemRef;
using isa::Opcode;
using isa::Pipe;
using isa::Scope;

/// The test NPU: cube 16x16x16 f16 -> f32 (latency 8), vector 256 B/cycle (latency 4), L1 1 MiB,
/// L0A/L0B 64 KiB, L0C 256 KiB, UB 256 KiB, MTE2/MTE3 64 B/cycle latency 100, MTE1 256 B/cycle
/// latency 4, FIX 256 B/cycle latency 4, DRAM 128 B/cycle latency 200, scalar 1 cycle/instruction,
/// issue queues of 16, 8 event ids.
inline npu::HwConfig test_hw(int cores = 1) {
  npu::HwConfig hw;
  hw.name = "test-npu";
  hw.clock_ghz = 1.0;
  hw.cores = cores;
  auto& c = hw.core;
  c.scalar = {1, 16};
  c.cube = {16, 16, 16, DType::f16, DType::f32, 8};
  c.vector = {256, 4};
  c.buffers_bytes = {1 << 20, 64 << 10, 64 << 10, 256 << 10, 256 << 10};
  c.mte1 = {256, 4};
  c.mte2 = {64, 100};
  c.mte3 = {64, 100};
  c.fix = {256, 4};
  c.sync_event_ids = 8;
  hw.dram = {128, 200, int64_t{1} << 32};
  return hw;
}

/// One core's memories as byte vectors sized by test_hw() (GM 1 MiB), run through isa::execute;
/// put/get read and write a T at a byte offset of a scope.
struct Mem {
  npu::HwConfig hw = test_hw();
  std::array<std::vector<uint8_t>, isa::kNumScopes> bytes;
  isa::CoreMemory core;
  Mem() {
    const auto& b = hw.core.buffers_bytes;
    const std::array<int64_t, isa::kNumScopes> sizes{1 << 20, b.l1, b.l0a, b.l0b, b.l0c, b.ub};
    for (int s = 0; s < isa::kNumScopes; ++s) {
      bytes[s].assign(sizes[s], 0);
      core.base[s] = bytes[s].data();
      core.size[s] = bytes[s].size();
    }
  }
  std::vector<uint8_t>& operator[](Scope s) { return bytes[int(s)]; }
  void run(const Instruction& in) { isa::execute(hw, in, core); }
  template <class T>
  void put(Scope s, int64_t byte, T v) {
    std::memcpy(&bytes[int(s)][byte], &v, sizeof(T));
  }
  template <class T>
  T get(Scope s, int64_t byte) {
    T v;
    std::memcpy(&v, &bytes[int(s)][byte], sizeof(T));
    return v;
  }
  /// The elements `vs` of T, contiguous from UB byte `at`.
  template <class T>
  void ub_fill(int64_t at, std::initializer_list<T> vs) {
    int64_t i = 0;
    for (T v : vs) put<T>(Scope::ub, at + i++ * int64_t{sizeof(T)}, v);
  }
};

inline MemRef at(Scope s, int64_t offset, uint8_t reg = 0) { return MemRef{s, reg, offset}; }
inline MemRef gm(int64_t off, uint8_t reg = 0) { return at(Scope::gm, off, reg); }
inline MemRef ub(int64_t off, uint8_t reg = 0) { return at(Scope::ub, off, reg); }
inline MemRef l1(int64_t off, uint8_t reg = 0) { return at(Scope::l1, off, reg); }
inline MemRef l0a(int64_t off, uint8_t reg = 0) { return at(Scope::l0a, off, reg); }
inline MemRef l0b(int64_t off, uint8_t reg = 0) { return at(Scope::l0b, off, reg); }
inline MemRef l0c(int64_t off, uint8_t reg = 0) { return at(Scope::l0c, off, reg); }

inline Instruction scalar(Opcode op, uint8_t rd, uint8_t rs, uint8_t rt, int64_t imm,
                          int32_t target = -1) {
  Instruction in;
  in.op = op;
  in.args = isa::ScalarArgs{rd, rs, rt, imm, target};
  return in;
}
inline Instruction li(uint8_t rd, int64_t imm) { return scalar(Opcode::li, rd, 0, 0, imm); }
inline Instruction addi(uint8_t rd, uint8_t rs, int64_t imm) {
  return scalar(Opcode::addi, rd, rs, 0, imm);
}
inline Instruction blti(uint8_t rs, int64_t imm, int32_t target) {
  return scalar(Opcode::blti, 0, rs, 0, imm, target);
}
inline Instruction blt(uint8_t rs, uint8_t rt, int32_t target) {
  return scalar(Opcode::blt, 0, rs, rt, 0, target);
}
inline Instruction jmp(int32_t target) { return scalar(Opcode::jmp, 0, 0, 0, 0, target); }
inline Instruction barrier() { return scalar(Opcode::barrier, 0, 0, 0, 0); }
inline Instruction core_barrier() { return scalar(Opcode::core_barrier, 0, 0, 0, 0); }

inline Instruction sync(Opcode op, Pipe src, Pipe dst, uint8_t event) {
  Instruction in;
  in.op = op;
  in.args = isa::SyncArgs{src, dst, event};
  return in;
}
inline Instruction set_flag(Pipe src, Pipe dst, uint8_t ev) {
  return sync(Opcode::set_flag, src, dst, ev);
}
inline Instruction wait_flag(Pipe src, Pipe dst, uint8_t ev) {
  return sync(Opcode::wait_flag, src, dst, ev);
}

/// A dense (row-major, fully valid) dma of `extent` elements: strides are the suffix products.
inline isa::DmaArgs dma_args(DType t, MemRef dst, MemRef src, std::vector<uint32_t> extent) {
  isa::DmaArgs d;
  d.dtype = t;
  d.dst = dst;
  d.src = src;
  d.ndims = static_cast<uint8_t>(extent.size());
  int64_t stride = 1;
  for (int k = static_cast<int>(extent.size()) - 1; k >= 0; --k) {
    d.extent[k] = extent[k];
    d.dst_stride[k] = d.src_stride[k] = stride;
    d.valid_begin[k] = 0;
    d.valid_end[k] = extent[k];
    stride *= extent[k];
  }
  return d;
}
inline Instruction dma(const isa::DmaArgs& d) {
  Instruction in;
  in.op = Opcode::dma;
  in.args = d;
  return in;
}
inline Instruction dma(DType t, MemRef dst, MemRef src, std::vector<uint32_t> extent) {
  return dma(dma_args(t, dst, src, std::move(extent)));
}

inline isa::VecOperand vo(MemRef m, int32_t elem_stride = 1, int32_t repeat_stride = 0) {
  return isa::VecOperand{m, elem_stride, repeat_stride};
}
inline Instruction vec(Opcode op, DType t, isa::VecOperand dst, isa::VecOperand src0,
                       isa::VecOperand src1, uint32_t count, uint32_t repeat = 1,
                       float scalar_value = 0.0f) {
  Instruction in;
  in.op = op;
  in.args = isa::VectorArgs{t, dst, src0, src1, count, repeat, scalar_value};
  return in;
}

inline Instruction load2d(DType t, MemRef dst, MemRef src, uint32_t rows, uint32_t cols,
                          int64_t row_stride, bool transpose = false) {
  Instruction in;
  in.op = Opcode::load2d;
  in.args = isa::Load2dArgs{t, dst, src, rows, cols, row_stride, transpose};
  return in;
}
inline Instruction img2col(const isa::Img2colArgs& g) {
  Instruction in;
  in.op = Opcode::img2col;
  in.args = g;
  return in;
}
inline Instruction mmad(MemRef c, MemRef a, MemRef b, uint32_t m1, uint32_t k1, uint32_t n1,
                        bool accumulate = false) {
  Instruction in;
  in.op = Opcode::mmad;
  in.args = isa::MmadArgs{c, a, b, m1, k1, n1, accumulate};
  return in;
}
inline Instruction fix(DType t, MemRef dst, MemRef src, uint32_t m, uint32_t n, int64_t stride,
                       bool relu = false) {
  Instruction in;
  in.op = Opcode::fix;
  in.args = isa::FixArgs{t, dst, src, m, n, stride, relu};
  return in;
}

/// A one-core program over a GM of `gm_bytes`.
inline isa::Program program(std::vector<Instruction> code, uint64_t gm_bytes = 1 << 20) {
  isa::Program p;
  p.name = "test";
  p.cores.push_back(std::move(code));
  p.gm_bytes = gm_bytes;
  return p;
}

/// Raw little-endian element access in a byte vector.
inline float get_f16(const std::vector<uint8_t>& m, uint64_t byte) {
  uint16_t h;
  std::memcpy(&h, m.data() + byte, 2);
  return f16_bits_to_f32(h);
}
inline void put_f16(std::vector<uint8_t>& m, uint64_t byte, float v) {
  const uint16_t h = f32_to_f16_bits(v);
  std::memcpy(m.data() + byte, &h, 2);
}
inline float get_f32(const std::vector<uint8_t>& m, uint64_t byte) {
  float f;
  std::memcpy(&f, m.data() + byte, 4);
  return f;
}
inline void put_f32(std::vector<uint8_t>& m, uint64_t byte, float v) {
  std::memcpy(m.data() + byte, &v, 4);
}

}  // namespace tessel::testutil
