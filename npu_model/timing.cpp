// Per-instruction timing formulas: docs/isa.md, section "Timing" (the table of occupancy and
// latency per instruction class). Used by the SystemC simulator and the analytical cost model.
#include "npu_model/timing.h"

#include <algorithm>
#include <array>
#include <bit>
#include <functional>
#include <numeric>

#include "compiler/support/error.h"
#include "isa/semantics.h"

namespace tessel::npu {

namespace {

using isa::Opcode;
using isa::Scope;

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

uint64_t positive(int v, const char* key) {
  if (v <= 0) fail("hardware config: {} is {}, expected a positive value", key, v);
  return static_cast<uint64_t>(v);
}

// Bytes written to L0A/L0B by load2d/img2col, including fractal zero-padding (W in docs/isa.md).
// i8/u8 operands use the int8 mode's fractal (core.cube.int8).
uint64_t fractal_bytes(const HwConfig& hw, Opcode op, Scope dst, uint64_t rows, uint64_t cols,
                       isa::DType dtype) {
  uint64_t b0 = 0, b1 = 0;
  const CubeFractal f = hw.core.cube.fractal(isa::is_cube_int8_dtype(dtype));
  if (dst == Scope::l0a) {
    b0 = positive(f.m, "core.cube.m");
    b1 = positive(f.k, "core.cube.k");
  } else if (dst == Scope::l0b) {
    b0 = positive(f.k, "core.cube.k");
    b1 = positive(f.n, "core.cube.n");
  } else {
    fail("{}: destination scope {} is illegal, expected l0a or l0b", isa::opcode_name(op),
         isa::scope_name(dst));
  }
  return ceil_div(rows, b0) * b0 * ceil_div(cols, b1) * b1 * isa::dtype_bytes(dtype);
}

void check_ndims(const isa::DmaArgs& d) {
  if (d.ndims < 1 || d.ndims > isa::kMaxDmaDims)
    internal_fail("dma: ndims is {}, expected 1..{}", d.ndims, isa::kMaxDmaDims);
}

uint64_t dma_elements(const isa::DmaArgs& d) {
  check_ndims(d);
  uint64_t n = 1;
  for (int k = 0; k < d.ndims; ++k) n *= d.extent[k];
  return n;
}

uint64_t dma_valid_elements(const isa::DmaArgs& d) {
  check_ndims(d);
  uint64_t n = 1;
  for (int k = 0; k < d.ndims; ++k) {
    const uint64_t vb = std::min<uint64_t>(d.valid_begin[k], d.extent[k]);
    const uint64_t ve = std::min<uint64_t>(d.valid_end[k], d.extent[k]);
    n *= ve > vb ? ve - vb : 0;
  }
  return n;
}

// Number of (output index, kernel index) pairs along one axis that land inside [0, size).
uint64_t valid_taps(uint64_t out, uint64_t k, uint64_t stride, uint64_t dilation, int64_t pad,
                    uint64_t size) {
  uint64_t n = 0;
  for (uint64_t i = 0; i < out; ++i)
    for (uint64_t r = 0; r < k; ++r) {
      const int64_t pos = static_cast<int64_t>(i * stride + r * dilation) - pad;
      n += pos >= 0 && pos < static_cast<int64_t>(size);
    }
  return n;
}

// Vector per-repeat cycles (docs/isa.md, "vector per_repeat").
uint64_t vector_per_repeat(const HwConfig& hw, Opcode op, const isa::VectorArgs& v) {
  const isa::VectorAccess u = isa::vector_access(op);
  auto unit = [](const isa::VecOperand& o) { return o.elem_stride == 0 || o.elem_stride == 1; };
  // A reduction's dst holds one element per repeat: its elem_stride is never used.
  bool contiguous = u.reduction ? true : unit(v.dst);
  if (u.src0) contiguous = contiguous && unit(v.src0);
  if (u.src1) contiguous = contiguous && unit(v.src1);
  if (u.src2) contiguous = contiguous && unit(v.src2);
  const uint64_t width = positive(hw.core.vector.width_bytes, "core.vector.width_bytes");
  // Operands of different element sizes (comparisons, vsel, vconv): the widest counts.
  if (contiguous) return ceil_div(uint64_t{v.count} * isa::vector_elem_bytes(op, v), width);
  // A strided element costs one 32-byte block: width / 32 elements per cycle (at least 1).
  return ceil_div(v.count, std::max<uint64_t>(1, width / 32));
}

}  // namespace

uint64_t dma_gm_bytes(const isa::DmaArgs& dma) {
  const uint64_t es = isa::dtype_bytes(dma.dtype);
  if (dma.src.scope == Scope::gm) return dma_valid_elements(dma) * es;
  if (dma.dst.scope == Scope::gm) return dma_elements(dma) * es;
  return 0;
}

namespace {

/// The GM access of a dma as maximal contiguous runs (see dma_gm_burst_bytes): runs of
/// `run_bytes` bytes at base + sum_k idx[k] * step[k] over idx in [0, count) for k < outer.
/// empty: nothing is accessed.
struct GmRunShape {
  bool empty = false;
  int64_t base = 0, run_bytes = 0;
  int outer = 0;
  std::array<int64_t, isa::kMaxDmaDims> count{}, step{};
};

GmRunShape gm_run_shape(const isa::DmaArgs& d) {
  GmRunShape r;
  const bool load = d.src.scope == Scope::gm;
  const int64_t es = isa::dtype_bytes(d.dtype);
  const auto& stride = load ? d.src_stride : d.dst_stride;
  // The accessed index ranges, dimensions with a single index folded into the base address.
  int64_t base = (load ? d.src : d.dst).offset;  // GM byte address of the first accessed element
  auto& count = r.count;
  auto& step = r.step;  // per kept dim: indices, stride in bytes
  int n = 0;
  for (int k = 0; k < d.ndims; ++k) {
    int64_t b = 0, e = d.extent[k];
    if (load) {
      b = std::min<int64_t>(d.valid_begin[k], e);
      e = std::min<int64_t>(d.valid_end[k], e);
    }
    if (e <= b) {
      r.empty = true;  // nothing accessed
      return r;
    }
    base += b * stride[k] * es;
    if (e - b == 1) continue;
    count[n] = e - b;
    step[n] = stride[k] * es;
    ++n;
  }
  // Merge the innermost dims into one contiguous run of run_elems elements.
  int64_t run_elems = 1;
  int outer = n;  // dims [0, outer) enumerate the runs
  if (n > 0 && step[n - 1] == es) {
    run_elems = count[n - 1];
    outer = n - 1;
    while (outer > 0 && step[outer - 1] == run_elems * es) run_elems *= count[--outer];
  }
  r.base = base;
  r.run_bytes = run_elems * es;
  r.outer = outer;
  return r;
}

}  // namespace

void for_each_gm_run(const isa::DmaArgs& d,
                     const std::function<void(uint64_t address, uint64_t bytes)>& fn) {
  if (d.src.scope != Scope::gm && d.dst.scope != Scope::gm) return;
  check_ndims(d);
  const GmRunShape r = gm_run_shape(d);
  if (r.empty) return;
  std::array<int64_t, isa::kMaxDmaDims> idx{};
  while (true) {
    int64_t a = r.base;
    for (int k = 0; k < r.outer; ++k) a += idx[k] * r.step[k];
    fn(static_cast<uint64_t>(a), static_cast<uint64_t>(r.run_bytes));
    int k = r.outer - 1;  // odometer over dims [0, outer)
    while (k >= 0 && ++idx[k] == r.count[k]) idx[k--] = 0;
    if (k < 0) break;
  }
}

uint64_t dma_gm_burst_bytes(const HwConfig& hw, const isa::DmaArgs& d) {
  const bool load = d.src.scope == Scope::gm;
  if (!load && d.dst.scope != Scope::gm) return 0;
  check_ndims(d);
  const int64_t burst = hw.dram.burst_bytes;
  if (burst < 1 || burst > 4096 || (burst & (burst - 1)) != 0)
    fail("hardware config: memory.dram.burst_bytes is {}, expected a power of two in [1, 4096]",
         burst);
  const int shift = std::countr_zero(static_cast<uint64_t>(burst));  // B = 2^shift
  const GmRunShape shape = gm_run_shape(d);
  if (shape.empty) return 0;
  const int64_t base = shape.base, L = shape.run_bytes;
  const int outer = shape.outer;
  const auto& count = shape.count;
  const auto& step = shape.step;
  // Blocks touched by a run at address a (arithmetic shift = floor division by B).
  auto blocks = [&](int64_t a) { return ((a + L - 1) >> shift) - (a >> shift) + 1; };
  if (outer == 0) return static_cast<uint64_t>(blocks(base)) << shift;
  // The runs along the innermost iterated dim j: address a0 + i * s. blocks() depends on the
  // address modulo B only, which repeats with period B / gcd(s mod B, B): sum one period.
  const int j = outer - 1;
  const int64_t s = step[j], cj = count[j];
  const int64_t period =
      std::min<int64_t>(cj, burst / std::gcd(((s % burst) + burst) % burst, burst));
  const int64_t whole = cj / period, rest = cj % period;
  std::array<int64_t, isa::kMaxDmaDims> idx{};
  uint64_t total_blocks = 0;
  while (true) {
    int64_t a0 = base;
    for (int k = 0; k < j; ++k) a0 += idx[k] * step[k];
    int64_t per_period = 0, rest_sum = 0;
    for (int64_t i = 0; i < period; ++i) {
      const int64_t bl = blocks(a0 + i * s);
      per_period += bl;
      if (i < rest) rest_sum += bl;
    }
    total_blocks += static_cast<uint64_t>(per_period * whole + rest_sum);
    int k = j - 1;  // odometer over dims [0, j)
    while (k >= 0 && ++idx[k] == count[k]) idx[k--] = 0;
    if (k < 0) break;
  }
  return total_blocks << shift;
}

uint64_t dram_transfer_cycles(const HwConfig& hw, uint64_t gm_bytes) {
  return ceil_div(gm_bytes, positive(hw.dram.bytes_per_cycle, "memory.dram.bytes_per_cycle"));
}

namespace {

// Bytes each data instruction class reads and writes per scope (docs in timing.h, scope_traffic).
void traffic(const HwConfig&, Opcode, const isa::DmaArgs& d, ScopeTraffic& t) {
  const uint64_t es = isa::dtype_bytes(d.dtype);
  t.read[int(d.src.scope)] += dma_valid_elements(d) * es;
  t.written[int(d.dst.scope)] += dma_elements(d) * es;
}

void traffic(const HwConfig& hw, Opcode op, const isa::Load2dArgs& l, ScopeTraffic& t) {
  t.read[int(Scope::l1)] += uint64_t{l.rows} * l.cols * isa::dtype_bytes(l.dtype);
  if (l.rows && l.cols)
    t.written[int(l.dst.scope)] += fractal_bytes(hw, op, l.dst.scope, l.rows, l.cols, l.dtype);
}

void traffic(const HwConfig& hw, Opcode op, const isa::Img2colArgs& g, ScopeTraffic& t) {
  const uint64_t K = uint64_t{g.c} * g.kh * g.kw, N = uint64_t{g.oh} * g.ow;
  if (K == 0 || N == 0) return;
  const uint64_t taps = valid_taps(g.oh, g.kh, g.stride_h, g.dilation_h, g.pad_top, g.h) *
                        valid_taps(g.ow, g.kw, g.stride_w, g.dilation_w, g.pad_left, g.w);
  // Every in-bounds element of X is one L1 element read, in either source layout (dense or
  // NC1HWC0, g.c0 > 0): NC1HWC0 only moves the elements, and its pad channels are never read.
  t.read[int(Scope::l1)] += uint64_t{g.c} * taps * isa::dtype_bytes(g.dtype);
  const bool to_a = g.dst.scope == Scope::l0a;
  t.written[int(g.dst.scope)] +=
      fractal_bytes(hw, op, g.dst.scope, to_a ? N : K, to_a ? K : N, g.dtype);
}

void traffic(const HwConfig& hw, Opcode, const isa::MmadArgs& a, ScopeTraffic& t) {
  const bool i8 = isa::mmad_int8(a);
  const CubeFractal c = hw.core.cube.fractal(i8);
  const uint64_t ib = i8 ? 1 : isa::dtype_bytes(hw.core.cube.input_dtype);
  const uint64_t ab = i8 ? 4 : isa::dtype_bytes(hw.core.cube.acc_dtype);
  t.read[int(Scope::l0a)] += uint64_t{a.m1} * a.k1 * c.m * c.k * ib;
  t.read[int(Scope::l0b)] += uint64_t{a.k1} * a.n1 * c.k * c.n * ib;
  const uint64_t cb = uint64_t{a.m1} * a.n1 * c.m * c.n * ab;
  if (a.accumulate) t.read[int(Scope::l0c)] += cb;
  t.written[int(Scope::l0c)] += cb;
}

// The L0C bytes fix reads (R in docs/isa.md): whole fractals of the mode's accumulators.
uint64_t fix_l0c_bytes(const HwConfig& hw, const isa::FixArgs& f) {
  const bool i8 = isa::fix_int8(f);
  const CubeFractal c = hw.core.cube.fractal(i8);
  const uint64_t m0 = positive(c.m, "core.cube.m");
  const uint64_t n0 = positive(c.n, "core.cube.n");
  const uint64_t ab = i8 ? 4 : isa::dtype_bytes(hw.core.cube.acc_dtype);
  return ceil_div(f.m, m0) * m0 * ceil_div(f.n, n0) * n0 * ab;
}

void traffic(const HwConfig& hw, Opcode, const isa::FixArgs& f, ScopeTraffic& t) {
  t.read[int(Scope::l0c)] += fix_l0c_bytes(hw, f);
  if (isa::fix_int8(f) && f.m && f.n)
    t.read[int(Scope::ub)] += uint64_t{isa::fix_quant_entries(f)} * isa::kFixQuantEntryBytes;
  t.written[int(Scope::ub)] += uint64_t{f.m} * f.n * isa::dtype_bytes(f.dst_dtype);
}

void traffic(const HwConfig&, Opcode op, const isa::VectorArgs& v, ScopeTraffic& t) {
  const isa::VectorAccess u = isa::vector_access(op);
  auto bytes = [&](isa::Field f) {
    return uint64_t{v.count} * v.repeat * isa::dtype_bytes(isa::vector_operand_dtype(op, v, f));
  };
  uint64_t& r = t.read[int(Scope::ub)];
  if (u.src0) r += bytes(isa::Field::src0);
  if (u.src1) r += bytes(isa::Field::src1);
  if (u.src2) r += bytes(isa::Field::src2);
  if (u.dst_read) r += bytes(isa::Field::dst);
  const uint64_t dst_bytes = isa::dtype_bytes(isa::vector_operand_dtype(op, v, isa::Field::dst));
  t.written[int(Scope::ub)] +=
      u.reduction ? (v.count ? uint64_t{v.repeat} * dst_bytes : 0) : bytes(isa::Field::dst);
}

void traffic(const HwConfig&, Opcode, const isa::ScalarArgs&, ScopeTraffic&) {}
// l2_prefetch / l2_discard move nothing through the core's scopes (the L2's fills are DRAM bytes).
void traffic(const HwConfig&, Opcode, const isa::L2HintArgs&, ScopeTraffic&) {}
void traffic(const HwConfig&, Opcode, const isa::SyncArgs&, ScopeTraffic&) {}

// The pipe-side cost (occupancy before the 1-cycle minimum, latency) of each data instruction
// class: docs/isa.md, Timing.
void engine_cost(const HwConfig& hw, Opcode, const isa::DmaArgs& d, InstrCost& cost) {
  const auto& core = hw.core;
  const uint64_t B = dma_elements(d) * isa::dtype_bytes(d.dtype);
  // MTE2 for loads from GM, MTE3 for everything leaving UB (to GM or to L1).
  const DmaEngineConfig& mte = d.src.scope == Scope::gm ? core.mte2 : core.mte3;
  cost.occupancy_cycles = ceil_div(
      B, positive(mte.bytes_per_cycle, d.src.scope == Scope::gm ? "core.dma.mte2.bytes_per_cycle"
                                                                : "core.dma.mte3.bytes_per_cycle"));
  cost.latency_cycles = static_cast<uint64_t>(mte.latency_cycles);
}

void engine_cost(const HwConfig& hw, Opcode op, const isa::Load2dArgs& l, InstrCost& cost) {
  const uint64_t W = fractal_bytes(hw, op, l.dst.scope, l.rows, l.cols, l.dtype);
  cost.occupancy_cycles =
      ceil_div(W, positive(hw.core.mte1.bytes_per_cycle, "core.dma.mte1.bytes_per_cycle"));
  cost.latency_cycles = static_cast<uint64_t>(hw.core.mte1.latency_cycles);
}

void engine_cost(const HwConfig& hw, Opcode op, const isa::Img2colArgs& g, InstrCost& cost) {
  const uint64_t K = uint64_t{g.c} * g.kh * g.kw, N = uint64_t{g.oh} * g.ow;
  const bool to_a = g.dst.scope == Scope::l0a;
  const uint64_t W = fractal_bytes(hw, op, g.dst.scope, to_a ? N : K, to_a ? K : N, g.dtype);
  cost.occupancy_cycles =
      ceil_div(W, positive(hw.core.mte1.bytes_per_cycle, "core.dma.mte1.bytes_per_cycle"));
  cost.latency_cycles = static_cast<uint64_t>(hw.core.mte1.latency_cycles);
}

void engine_cost(const HwConfig& hw, Opcode, const isa::MmadArgs& a, InstrCost& cost) {
  // One fractal step per cycle; k1 = 0 still writes each of the m1 x n1 C blocks (zeros, or C
  // unchanged when accumulating), one per cycle (docs/isa.md; the RTL cube, simulator/rtl/cube.sv).
  cost.occupancy_cycles = uint64_t{a.m1} * std::max<uint64_t>(a.k1, 1) * a.n1;
  cost.latency_cycles = static_cast<uint64_t>(hw.core.cube.pipeline_latency_cycles);
}

void engine_cost(const HwConfig& hw, Opcode, const isa::FixArgs& f, InstrCost& cost) {
  const auto& core = hw.core;
  const uint64_t R = fix_l0c_bytes(hw, f);
  cost.occupancy_cycles =
      ceil_div(R, positive(core.fix.bytes_per_cycle, "core.dma.fix.bytes_per_cycle"));
  cost.latency_cycles = static_cast<uint64_t>(core.fix.latency_cycles);
}

void engine_cost(const HwConfig& hw, Opcode op, const isa::VectorArgs& v, InstrCost& cost) {
  cost.occupancy_cycles = uint64_t{v.repeat} * vector_per_repeat(hw, op, v);
  cost.latency_cycles = static_cast<uint64_t>(hw.core.vector.pipeline_latency_cycles);
}

// l2_prefetch / l2_discard: the MTE2 pipe only hands the hint to the L2 (occupancy 1 cycle, set by
// instruction_cost's minimum; no latency): the fills happen in the background (simulator/l2.h).
void engine_cost(const HwConfig&, Opcode, const isa::L2HintArgs&, InstrCost& cost) {
  cost.occupancy_cycles = 1;
  cost.latency_cycles = 0;
}

[[noreturn]] void not_data(Opcode op) {
  internal_fail("{}: not a data instruction", isa::opcode_name(op));
}
void engine_cost(const HwConfig&, Opcode op, const isa::ScalarArgs&, InstrCost&) { not_data(op); }
void engine_cost(const HwConfig&, Opcode op, const isa::SyncArgs&, InstrCost&) { not_data(op); }

// The operand struct must match the opcode (InternalError otherwise).
void check_class(const isa::Instruction& in) {
  if (!isa::is_valid_opcode(in.op) || in.args.index() != isa::args_index(in.op))
    internal_fail("{}: operand struct does not match the opcode", isa::opcode_name(in.op));
}

}  // namespace

ScopeTraffic scope_traffic(const HwConfig& hw, const isa::Instruction& in) {
  ScopeTraffic t;
  check_class(in);
  std::visit([&](const auto& a) { traffic(hw, in.op, a, t); }, in.args);
  return t;
}

InstrCost instruction_cost(const HwConfig& hw, const isa::Instruction& in) {
  InstrCost cost;
  check_class(in);
  switch (isa::instr_info(in.op).kind) {
    case isa::InstrKind::alu:
    case isa::InstrKind::branch:
    case isa::InstrKind::jump:
    case isa::InstrKind::barrier:
    case isa::InstrKind::core_barrier:
      cost.occupancy_cycles = static_cast<uint64_t>(hw.core.scalar.cycles_per_instruction);
      return cost;
    case isa::InstrKind::load:  // lbu: the scalar unit waits for the byte (docs/isa.md, Timing)
      cost.occupancy_cycles = static_cast<uint64_t>(hw.core.scalar.cycles_per_instruction);
      cost.latency_cycles = static_cast<uint64_t>(std::max(0, hw.dram.latency_cycles));
      return cost;
    case isa::InstrKind::set_flag:
    case isa::InstrKind::wait_flag:
      return cost;
    case isa::InstrKind::data:
      break;
  }
  std::visit([&](const auto& a) { engine_cost(hw, in.op, a, cost); }, in.args);
  // Every data instruction occupies its pipe for at least one cycle.
  cost.occupancy_cycles = std::max<uint64_t>(1, cost.occupancy_cycles);
  const ScopeTraffic t = scope_traffic(hw, in);
  for (int s = 0; s < isa::kNumScopes; ++s) {
    cost.bytes_read += t.read[s];
    cost.bytes_written += t.written[s];
  }
  return cost;
}

}  // namespace tessel::npu
