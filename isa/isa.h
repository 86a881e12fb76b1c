// The tessel NPU instruction set: pipes, memory scopes, opcodes, instruction operands, programs.
//
// This header is the contract between the compiler (which emits isa::Program) and the simulator
// (which executes it). docs/isa.md specifies every instruction: operands, semantics, timing
// formula. The instructions themselves are records (isa/instruction_list.h), expanded here into the
// Opcode enum and the record table kInstructions; their operand classes are described field by
// field in isa/operand_classes.h.
//
// Execution model (after the DaVinci core, Liao et al., HPCA'21 / Hot Chips'19): each core has a
// scalar unit that fetches its instruction stream in order, executes scalar instructions itself and
// dispatches every other instruction, with register operands already resolved to addresses, into
// the in-order queue of its pipe: MTE2 (GM -> L1/UB), MTE1 (L1 -> L0A/L0B, with im2col), CUBE
// (L0A x L0B -> L0C), FIX (L0C -> UB), VECTOR (UB -> UB), MTE3 (UB -> GM). Pipes run concurrently
// and are ordered against each other only by set_flag/wait_flag pairs and barriers.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "isa/instruction_list.h"

namespace tessel::isa {

/// The execution pipes of a core. `scalar` is the scalar unit itself.
enum class Pipe : uint8_t { scalar, mte2, mte1, cube, fix, vector, mte3 };
inline constexpr int kNumPipes = 7;

/// Memory spaces. `gm` is the off-chip global memory (DRAM) shared by all cores; the rest are
/// per-core scratchpads sized by the hardware config (core.buffers_bytes).
enum class Scope : uint8_t { gm, l1, l0a, l0b, l0c, ub };
inline constexpr int kNumScopes = 6;

/// Element types of data operands (TESSEL_ISA_DTYPES, isa/instruction_list.h).
enum class DType : uint8_t {
#define TESSEL_ISA_X(e, name, bytes, cls) e,
  TESSEL_ISA_DTYPES(TESSEL_ISA_X)
#undef TESSEL_ISA_X
};
#define TESSEL_ISA_X(...) +1
inline constexpr int kNumDTypes = 0 TESSEL_ISA_DTYPES(TESSEL_ISA_X);
#undef TESSEL_ISA_X

/// What kind of number a dtype holds (the `class` column of TESSEL_ISA_DTYPES).
enum class DTypeClass : uint8_t { float_, sint, uint, boolean };

namespace detail {
#define TESSEL_ISA_X(e, name, bytes, cls) bytes,
inline constexpr int kDTypeBytes[] = {TESSEL_ISA_DTYPES(TESSEL_ISA_X)};
#undef TESSEL_ISA_X
}  // namespace detail

/// Bytes per element of `t` (f16: 2, f32: 4, i8: 1, ..., bool: 1). `t` must be a declared
/// enumerator.
constexpr int dtype_bytes(DType t) { return detail::kDTypeBytes[static_cast<int>(t)]; }

/// The number class of `t`, which must be a declared enumerator.
constexpr DTypeClass dtype_class(DType t) {
#define TESSEL_ISA_DTYPE_CLASS_float DTypeClass::float_
#define TESSEL_ISA_DTYPE_CLASS_sint DTypeClass::sint
#define TESSEL_ISA_DTYPE_CLASS_uint DTypeClass::uint
#define TESSEL_ISA_DTYPE_CLASS_boolean DTypeClass::boolean
#define TESSEL_ISA_X(e, name, bytes, cls) TESSEL_ISA_DTYPE_CLASS_##cls,
  constexpr DTypeClass kClass[] = {TESSEL_ISA_DTYPES(TESSEL_ISA_X)};
#undef TESSEL_ISA_X
#undef TESSEL_ISA_DTYPE_CLASS_float
#undef TESSEL_ISA_DTYPE_CLASS_sint
#undef TESSEL_ISA_DTYPE_CLASS_uint
#undef TESSEL_ISA_DTYPE_CLASS_boolean
  return kClass[static_cast<int>(t)];
}
/// f16 or f32.
constexpr bool is_float_dtype(DType t) { return dtype_class(t) == DTypeClass::float_; }

/// Number of scalar registers x0..x31; x0 always reads 0 and ignores writes.
inline constexpr int kNumRegs = 32;

/// Maximum number of dimensions of a DMA descriptor.
inline constexpr int kMaxDmaDims = 4;

/// A memory operand: byte address = x[reg] + offset, in `scope`. Resolved at dispatch.
struct MemRef {
  Scope scope = Scope::gm;
  uint8_t reg = 0;
  int64_t offset = 0;
  bool operator==(const MemRef&) const = default;
};

/// The opcodes, in the order of the records of isa/instruction_list.h (the value is the binary
/// opcode). What each one does: docs/isa.md, "Instructions".
enum class Opcode : uint8_t {
#define TESSEL_ISA_X(name, ...) name,
  TESSEL_ISA_INSTRUCTIONS(TESSEL_ISA_X)
#undef TESSEL_ISA_X
};
#define TESSEL_ISA_X(...) +1
/// Number of opcodes: Opcode values are dense, 0 .. kNumOpcodes - 1.
inline constexpr int kNumOpcodes = 0 TESSEL_ISA_INSTRUCTIONS(TESSEL_ISA_X);
#undef TESSEL_ISA_X

/// Scalar-unit instruction operands. `target` is an instruction index in the same core stream.
struct ScalarArgs {
  uint8_t rd = 0, rs = 0, rt = 0;
  int64_t imm = 0;
  int32_t target = -1;
  bool operator==(const ScalarArgs&) const = default;
};

/// set_flag / wait_flag: the flag (src, dst, event) is a counter private to the core.
struct SyncArgs {
  Pipe src = Pipe::mte2, dst = Pipe::vector;
  uint8_t event = 0;
  bool operator==(const SyncArgs&) const = default;
};

/// dma: for every index vector i (0 <= i[d] < extent[d], d < ndims, dim 0 outermost):
///   dst[i] = in_valid(i) ? src[sum_d i[d] * src_stride[d]] : pad_value
/// where in_valid(i) = valid_begin[d] <= i[d] < valid_end[d] for all d. Strides are in elements of
/// `dtype`; addresses are dst/src byte addresses plus stride * index * dtype_bytes. Padding lets
/// one instruction load a convolution window that hangs over the tensor border (padded positions
/// read nothing from the source).
struct DmaArgs {
  DType dtype = DType::f16;
  MemRef dst, src;
  uint8_t ndims = 1;
  std::array<uint32_t, kMaxDmaDims> extent{};
  std::array<int64_t, kMaxDmaDims> dst_stride{};
  std::array<int64_t, kMaxDmaDims> src_stride{};
  std::array<uint32_t, kMaxDmaDims> valid_begin{};
  std::array<uint32_t, kMaxDmaDims> valid_end{};
  float pad_value = 0.0f;
  /// dma_mc only (dma leaves it 0): the size n of the core set the load is delivered to, the
  /// aligned group [c - c % n, c - c % n + n) of the issuing core c. Every member executes the same
  /// dma_mc (same GM source, descriptor and destination offset); the set reads GM once
  /// (docs/isa.md, dma_mc).
  uint32_t cores = 0;
  bool operator==(const DmaArgs&) const = default;
};

/// load2d: reads a rows x cols matrix from L1, element (r, c) at src + (r * src_row_stride + c)
/// (or, with transpose, at src + (c * src_row_stride + r)), and writes it in fractal layout,
/// zero-padding to whole fractals:
///   dst in L0A (A, M x K = rows x cols): blocks [ceil(M/m0)][ceil(K/k0)], each m0 x k0 row-major
///   dst in L0B (B, K x N = rows x cols): blocks [ceil(K/k0)][ceil(N/n0)], each k0 x n0 row-major
/// with (m0, k0, n0) = the configured cube fractal.
struct Load2dArgs {
  DType dtype = DType::f16;
  MemRef dst, src;
  uint32_t rows = 0, cols = 0;
  int64_t src_row_stride = 0;
  bool transpose = false;
  bool operator==(const Load2dArgs&) const = default;
};

/// img2col: the L1 source is a c x h x w feature map, dense row-major (c0 = 0) or in the NC1HWC0
/// storage format (c0 > 0; see `c0`). The im2col matrix has
/// K = c * kh * kw rows, k = (ci * kh + r) * kw + s, and N = oh * ow columns, p = i * ow + j, with
///   X[k][p] = fm[ci][i*stride_h + r*dilation_h - pad_top][j*stride_w + s*dilation_w - pad_left]
/// and 0 where the row/column falls outside [0,h) x [0,w). With dst in L0B it is written as B = X
/// (K x N); with dst in L0A as A = X^T (N x K); fractal layouts as for load2d.
struct Img2colArgs {
  DType dtype = DType::f16;
  MemRef dst, src;
  uint32_t c = 0, h = 0, w = 0;
  uint32_t kh = 1, kw = 1;
  uint32_t stride_h = 1, stride_w = 1;
  uint32_t dilation_h = 1, dilation_w = 1;
  int32_t pad_top = 0, pad_left = 0;
  uint32_t oh = 0, ow = 0;
  /// Source layout. 0: dense, fm[ci][y][x] at element (ci * h + y) * w + x. > 0: NC1HWC0 (the
  /// Ascend 5-D format, c0 channels contiguous per pixel), the source is a
  /// [ceil(c/c0)][h][w][c0] block and fm[ci][y][x] is at element
  /// ((ci / c0) * h + y) * w * c0 + x * c0 + ci % c0; the c0 - c % c0 pad channels of the last
  /// block are never read. Only the addressing changes: X and the destination are as above.
  uint32_t c0 = 0;
  bool operator==(const Img2colArgs&) const = default;
};

/// mmad: C[m1][n1] (+)= sum_k A[m1][k1] x B[k1][n1] over fractals.
/// Layouts: A in L0A [m1][k1][m0][k0], B in L0B [k1][n1][k0][n0], C in L0C [m1][n1][m0][n0].
/// accumulate = false overwrites C, true adds to it. Two modes (docs/isa.md, "mmad"):
///  - float (a_dtype and b_dtype float, the default f16): A and B hold core.cube.input_dtype,
///    summed in fp32, C in core.cube.acc_dtype; fractal (m0, k0, n0) = core.cube m, k, n.
///  - int8 (a_dtype and b_dtype each i8 or u8): exact integer products summed in int32
///    (two's complement, wrapping), C holds int32; fractal = core.cube.int8 (m, k, n).
struct MmadArgs {
  MemRef c, a, b;
  uint32_t m1 = 0, k1 = 0, n1 = 0;
  bool accumulate = false;
  DType a_dtype = DType::f16;  // element type of A: f16 (float mode), i8 or u8 (int8 mode)
  DType b_dtype = DType::f16;  // element type of B: as a_dtype, and of the same mode
  bool operator==(const MmadArgs&) const = default;
};

/// True for the element types of the cube's int8 mode (i8, u8): L0A/L0B operands of load2d,
/// img2col and mmad.
constexpr bool is_cube_int8_dtype(DType t) { return t == DType::i8 || t == DType::u8; }
/// True when mmad `a` runs in the int8 mode (its a_dtype is i8 or u8).
constexpr bool mmad_int8(const MmadArgs& a) { return is_cube_int8_dtype(a.a_dtype); }

/// fix: reads an m x n block of accumulators from an L0C tile laid out [ceil(m/m0)][ceil(n/n0)]
/// [m0][n0] and writes dst[i * dst_row_stride + j] into UB. By dst_dtype (docs/isa.md, "fix"):
///  - f16/f32: float accumulators (core.cube.acc_dtype), round_to(dst_dtype, relu ? max(v,0) : v).
/// In the int8 mode (dst i32, i8, u8) element (i, j) uses entry e = per_row ? i : per_channel ? j
/// : 0 of the table at `quant` (UB, 8 bytes per entry: f32 scale, i32 bias); per_row (encoding
/// version 7) is the convolution's form, whose output channels are the rows:
///  - i32: v = acc + bias_e (int32, wrapping; relu: max(v, 0)); the scale is not used.
///  - i8/u8: requantised, q = saturate(nearbyint(float(acc + bias_e) * scale_e) + zero_point) in
///    round-half-to-even (ONNX Runtime's MlasRequantizeOutput); relu raises the lower
///    saturation bound to zero_point.
/// The int8-mode forms use the int8 fractal (core.cube.int8 m, n).
struct FixArgs {
  DType dst_dtype = DType::f16;
  MemRef dst, src;
  uint32_t m = 0, n = 0;
  int64_t dst_row_stride = 0;
  bool relu = false;
  bool per_channel = false;       // int8 mode: table entry j per output column (else entry 0)
  MemRef quant{Scope::ub, 0, 0};  // int8 mode: the bias/requantisation table in UB
  int32_t zero_point = 0;         // i8/u8: added after rounding, before saturation
  bool per_row = false;           // int8 mode: table entry i per output row (not with per_channel)
  bool operator==(const FixArgs&) const = default;
};

/// The table entries an int8-mode fix reads: m (per_row), n (per_channel) or 1.
constexpr uint32_t fix_quant_entries(const FixArgs& f) {
  return f.per_row ? f.m : f.per_channel ? f.n : 1u;
}

/// True when fix `f` reads int32 accumulators (dst_dtype i8, u8 or i32: the int8 mode).
constexpr bool fix_int8(const FixArgs& f) {
  return f.dst_dtype == DType::i8 || f.dst_dtype == DType::u8 || f.dst_dtype == DType::i32;
}
/// True when fix `f` requantises (dst_dtype i8 or u8). Every int8-mode fix (fix_int8) reads its
/// `quant` table.
constexpr bool fix_requantises(const FixArgs& f) { return is_cube_int8_dtype(f.dst_dtype); }
/// Bytes of one entry of fix's requantisation table: f32 scale, then i32 bias.
inline constexpr int kFixQuantEntryBytes = 8;

/// One strided vector operand: element (r, e) is at addr + (r * repeat_stride + e * elem_stride)
/// elements. A stride of 0 broadcasts.
struct VecOperand {
  MemRef addr;
  int32_t elem_stride = 1;
  int32_t repeat_stride = 0;
  bool operator==(const VecOperand&) const = default;
};

/// Vector instruction over `repeat` x `count` elements: for r < repeat, e < count,
///   dst(r,e) = f(src0(r,e), src1(r,e), src2(r,e), scalar)
/// Reductions (vrsum/vrmax/vrmin) write one element per repeat: dst(r,0) = reduce_e src0(r,e).
/// Unused operands are ignored. Float dtypes: inputs are widened to fp32, computed, rounded to
/// `dtype`; integer dtypes compute in the dtype (two's complement, wrapping); see docs/isa.md.
/// Operand element types: `dtype`, except a comparison's dst and vsel's mask src0 (bool) and
/// vconv's src0 (`src_dtype`): vector_operand_dtype().
struct VectorArgs {
  DType dtype = DType::f16;
  VecOperand dst, src0, src1;
  uint32_t count = 0, repeat = 1;
  float scalar = 0.0f;
  VecOperand src2;               // vsel: the value taken where the mask is 0
  DType src_dtype = DType::f16;  // vconv: the source element type
  bool operator==(const VectorArgs&) const = default;
};

/// l2_prefetch / l2_discard: a hint about the GM bytes [src, src + bytes) to the shared L2
/// (memory.l2). l2_prefetch fills the range's lines into L2 in the background (DRAM idle
/// cycles); l2_discard drops the range's lines without writing them back (the data is dead).
/// Neither changes a value; without an L2 both do nothing (docs/isa.md, "l2_prefetch").
struct L2HintArgs {
  MemRef src;
  uint32_t bytes = 0;
  bool operator==(const L2HintArgs&) const = default;
};

/// The operand classes: X(class, operand struct). The position is the index of the struct in
/// Instruction::args (the full binary form stores it). Each class's fields are described in
/// isa/operand_classes.h.
#define TESSEL_ISA_ARGS_CLASSES(X) \
  X(scalar, ScalarArgs)            \
  X(sync, SyncArgs)                \
  X(dma, DmaArgs)                  \
  X(load2d, Load2dArgs)            \
  X(img2col, Img2colArgs)          \
  X(mmad, MmadArgs)                \
  X(fix, FixArgs)                  \
  X(vector, VectorArgs)            \
  X(l2hint, L2HintArgs)

/// An operand class, valued as the index of its struct in Instruction::args.
enum class ArgsClass : uint8_t {
#define TESSEL_ISA_X(cls, type) cls,
  TESSEL_ISA_ARGS_CLASSES(TESSEL_ISA_X)
#undef TESSEL_ISA_X
};

/// One instruction. `args` holds the operand struct of the opcode's class; `op_index` is debug
/// information: the index of the compiled graph op it belongs to (-1 if none).
struct Instruction {
  Opcode op = Opcode::li;
  std::variant<ScalarArgs, SyncArgs, DmaArgs, Load2dArgs, Img2colArgs, MmadArgs, FixArgs,
               VectorArgs, L2HintArgs>
      args;
  int32_t op_index = -1;

  /// The pipe this instruction executes on (scalar for scalar/branch/barrier instructions;
  /// the src pipe of set_flag, the dst pipe of wait_flag; mte2 or mte3 for dma by its scopes).
  Pipe pipe() const;
  bool operator==(const Instruction& other) const { return op == other.op && args == other.args; }
};

#define TESSEL_ISA_X(cls, type)                                                           \
  static_assert(                                                                          \
      std::is_same_v<std::variant_alternative_t<static_cast<std::size_t>(ArgsClass::cls), \
                                                decltype(Instruction::args)>,             \
                     type>,                                                               \
      "ArgsClass::" #cls " must be the index of " #type " in Instruction::args");
TESSEL_ISA_ARGS_CLASSES(TESSEL_ISA_X)
#undef TESSEL_ISA_X
#define TESSEL_ISA_X(...) +1
inline constexpr int kNumArgsClasses = 0 TESSEL_ISA_ARGS_CLASSES(TESSEL_ISA_X);
#undef TESSEL_ISA_X
static_assert(kNumArgsClasses == std::variant_size_v<decltype(Instruction::args)>);

// ---------------------------------------------------------------------------------------------
// The instruction records (isa/instruction_list.h)

/// The fields of all operand classes by name (TESSEL_ISA_FIELDS); isa/operand_classes.h maps each
/// class's names to its struct members.
enum class Field : uint8_t {
#define TESSEL_ISA_X(name) name,
  TESSEL_ISA_FIELDS(TESSEL_ISA_X)
#undef TESSEL_ISA_X
};

#define TESSEL_ISA_X(name) +1
static_assert(0 TESSEL_ISA_FIELDS(TESSEL_ISA_X) <= 64, "InstrInfo::operand_bits holds 64 fields");
#undef TESSEL_ISA_X

/// What executes an instruction and how (docs/isa.md, "Machine model").
enum class InstrKind : uint8_t {
  alu,           // scalar unit: computes rd from registers and immediates
  load,          // scalar unit: reads rd from GM (lbu), stalling until the byte arrives
  branch,        // scalar unit: conditional branch to `target`
  jump,          // scalar unit: unconditional branch to `target`
  barrier,       // scalar unit: waits until every pipe of the core is drained
  core_barrier,  // barrier, then waits for every core
  set_flag,      // pipe `src`: sets a flag once its earlier instructions completed
  wait_flag,     // pipe `dst`: waits for a flag
  data,          // dispatched to a pipe; reads and writes memory operands
};

/// How the executing pipe follows from an instruction: `fixed` (InstrInfo::pipe), `by_flag` (the
/// src pipe of set_flag, the dst pipe of wait_flag), `by_direction` (dma: mte2 from gm, else mte3).
enum class PipeRule : uint8_t { fixed, by_flag, by_direction };

/// The record of one instruction: everything about an opcode that is not its semantics or timing.
struct InstrInfo {
  Opcode op;
  const char* mnemonic;
  ArgsClass cls;  // the operand class: the index of its struct in Instruction::args
  InstrKind kind;
  PipeRule pipe_rule;
  Pipe pipe;  // the pipe when pipe_rule == fixed
  /// The class's selectable fields this instruction uses (its positional operands), in order.
  std::array<Field, 8> operands{};
  int num_operands = 0;
  uint64_t operand_bits = 0;  // bit f set for each Field f in `operands`
  bool reads_dst = false;     // trait reads_dst: the destination operand is read as well
  bool reduction = false;     // trait reduction: the destination holds one element per repeat
  bool bool_dst = false;      // trait bool_dst: the destination holds bool elements (comparisons)
  bool bool_src0 = false;     // trait bool_src0: src0 holds bool elements (vsel's mask)
  bool converts = false;      // trait converts: src0 holds elements of `src_dtype` (vconv)
  bool float_only = false;    // trait float_only: the dtype must be f16 or f32
  bool bits_only = false;     // trait bits_only: the dtype must be an integer type or bool

  constexpr bool uses(Field f) const { return (operand_bits >> static_cast<int>(f)) & 1; }
};

namespace detail {

enum class Trait : uint8_t {
  reads_dst,
  reduction,
  bool_dst,
  bool_src0,
  converts,
  float_only,
  bits_only
};

struct PipeSpec {
  PipeRule rule;
  Pipe pipe;
};
namespace pipe_spec {
inline constexpr PipeSpec scalar{PipeRule::fixed, Pipe::scalar}, mte2{PipeRule::fixed, Pipe::mte2},
    mte1{PipeRule::fixed, Pipe::mte1}, cube{PipeRule::fixed, Pipe::cube},
    fix{PipeRule::fixed, Pipe::fix}, vector{PipeRule::fixed, Pipe::vector},
    mte3{PipeRule::fixed, Pipe::mte3}, by_flag{PipeRule::by_flag, Pipe::scalar},
    by_direction{PipeRule::by_direction, Pipe::scalar};
}  // namespace pipe_spec

constexpr InstrInfo make_record(Opcode op, const char* mnemonic, ArgsClass cls, InstrKind kind,
                                PipeSpec pipe, std::initializer_list<Field> operands,
                                std::initializer_list<Trait> traits) {
  InstrInfo r{op, mnemonic, cls, kind, pipe.rule, pipe.pipe};
  for (Field f : operands) {
    if (r.num_operands == static_cast<int>(r.operands.size())) throw "too many operands";
    r.operands[r.num_operands++] = f;
    r.operand_bits |= uint64_t{1} << static_cast<int>(f);
  }
  for (Trait t : traits) {
    switch (t) {
      case Trait::reads_dst:
        r.reads_dst = true;
        break;
      case Trait::reduction:
        r.reduction = true;
        break;
      case Trait::bool_dst:
        r.bool_dst = true;
        break;
      case Trait::bool_src0:
        r.bool_src0 = true;
        break;
      case Trait::converts:
        r.converts = true;
        break;
      case Trait::float_only:
        r.float_only = true;
        break;
      case Trait::bits_only:
        r.bits_only = true;
        break;
    }
  }
  return r;
}

#define TESSEL_ISA_UNPAREN(...) __VA_ARGS__
constexpr std::array<InstrInfo, kNumOpcodes> make_records() {
  using enum Field;
  using enum Trait;
  return {{
#define TESSEL_ISA_X(name, cls, kind, pipe, operands, traits)                        \
  make_record(Opcode::name, #name, ArgsClass::cls, InstrKind::kind, pipe_spec::pipe, \
              {TESSEL_ISA_UNPAREN operands}, {TESSEL_ISA_UNPAREN traits}),
      TESSEL_ISA_INSTRUCTIONS(TESSEL_ISA_X)
#undef TESSEL_ISA_X
  }};
}
#undef TESSEL_ISA_UNPAREN

}  // namespace detail

/// The records, indexed by opcode value.
inline constexpr std::array<InstrInfo, kNumOpcodes> kInstructions = detail::make_records();

/// True when `op` holds one of the declared opcodes (a decoded or fuzzed value may not).
constexpr bool is_valid_opcode(Opcode op) { return static_cast<int>(op) < kNumOpcodes; }
/// The record of `op`, which must be a declared opcode (is_valid_opcode).
constexpr const InstrInfo& instr_info(Opcode op) { return kInstructions[static_cast<int>(op)]; }

/// The index of the Instruction::args alternative an opcode uses (its operand class).
constexpr std::size_t args_index(Opcode op) { return static_cast<std::size_t>(instr_info(op).cls); }
/// blt, blti, jmp: instructions with a branch target.
constexpr bool is_branch(Opcode op) {
  const InstrKind k = instr_info(op).kind;
  return k == InstrKind::branch || k == InstrKind::jump;
}
/// Instructions the scalar unit executes itself without waiting (alu, branches, jumps).
constexpr bool is_scalar_alu_or_branch(Opcode op) {
  const InstrKind k = instr_info(op).kind;
  return k == InstrKind::alu || k == InstrKind::branch || k == InstrKind::jump;
}
/// True for the vector-unit opcodes (operand class VectorArgs).
constexpr bool is_vector_opcode(Opcode op) { return instr_info(op).cls == ArgsClass::vector; }
/// True for instructions with memory operands that isa::execute accepts (kind data).
constexpr bool is_data_instruction(Opcode op) { return instr_info(op).kind == InstrKind::data; }

/// The element type of vector operand `f` (dst, src0, src1 or src2) of `v` executed as vector
/// opcode `op`: v.dtype, except bool for the destination of a comparison (trait bool_dst) and for
/// vsel's mask src0 (bool_src0), and v.src_dtype for vconv's src0 (converts).
constexpr DType vector_operand_dtype(Opcode op, const VectorArgs& v, Field f) {
  const InstrInfo& r = instr_info(op);
  if (f == Field::dst && r.bool_dst) return DType::boolean;
  if (f == Field::src0 && r.bool_src0) return DType::boolean;
  if (f == Field::src0 && r.converts) return v.src_dtype;
  return v.dtype;
}

/// The widest element (bytes) among the vector operands `op` uses (what the vector timing formula
/// counts per element).
int vector_elem_bytes(Opcode op, const VectorArgs& v);

/// True when `in` also reads its destination (its first operand): the trait reads_dst (vmla), or
/// a destination that accumulates and the instruction's `acc` flag is set (mmad acc=1).
bool reads_destination(const Instruction& in);

namespace detail {
#define TESSEL_ISA_X(cls, type) #type,
inline constexpr const char* kArgsClassNames[] = {TESSEL_ISA_ARGS_CLASSES(TESSEL_ISA_X)};
#undef TESSEL_ISA_X
#define TESSEL_ISA_X(name) #name,
inline constexpr const char* kFieldNames[] = {TESSEL_ISA_FIELDS(TESSEL_ISA_X)};
#undef TESSEL_ISA_X
}  // namespace detail

/// The name of an operand class's struct, e.g. "VectorArgs"; "?" for an undeclared value.
constexpr const char* args_class_name(ArgsClass c) {
  return static_cast<int>(c) < kNumArgsClasses ? detail::kArgsClassNames[static_cast<int>(c)] : "?";
}
/// The name of a field, e.g. "src_row_stride" (its key in the text form).
constexpr const char* field_name(Field f) { return detail::kFieldNames[static_cast<int>(f)]; }

/// What a GM region holds.
enum class GmKind : uint8_t { input, output, constant, scratch };

/// A named region of global memory. Inputs and outputs are dense row-major in `shape` with
/// `dtype`; constants carry their initial bytes.
struct GmBuffer {
  std::string name;
  GmKind kind = GmKind::scratch;
  uint64_t address = 0;
  uint64_t bytes = 0;
  DType dtype = DType::f16;
  std::vector<int64_t> shape;
  std::vector<uint8_t> init;  // constants only: `bytes` bytes loaded before execution
};

/// A compiled NPU program: one instruction stream per core plus the GM memory map.
struct Program {
  std::string name;
  std::vector<std::vector<Instruction>> cores;
  std::vector<GmBuffer> buffers;
  uint64_t gm_bytes = 0;              // total GM footprint
  std::vector<std::string> op_names;  // op_index -> name of the graph op
};

const char* pipe_name(Pipe p);      // "scalar", "mte2", "mte1", "cube", "fix", "vector", "mte3"
const char* scope_name(Scope s);    // "gm", "l1", "l0a", "l0b", "l0c", "ub"
const char* dtype_name(DType t);    // "f16", "f32"
const char* opcode_name(Opcode o);  // the assembly mnemonic, e.g. "vadd"

}  // namespace tessel::isa
