// Static verifier for isa::Program (checks listed in isa/verifier.h and docs/isa.md "Verifier").
//
// Operand footprints are computed here independently of isa/semantics (they follow the operand
// definitions of isa/isa.h), so the verifier also cross-checks the compiler's address arithmetic
// for every operand whose base register is x0 (a constant address).
#include "isa/verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "isa/asm.h"

namespace tessel::isa {

namespace {

using i128 = __int128;

const char* kArgsClassNames[] = {"ScalarArgs",  "SyncArgs", "DmaArgs", "Load2dArgs",
                                 "Img2colArgs", "MmadArgs", "FixArgs", "VectorArgs"};

bool scope_ok(Scope s) { return static_cast<int>(s) < kNumScopes; }

std::string scope_str(Scope s) {
  return scope_ok(s) ? scope_name(s) : fmt::format("<scope {}>", static_cast<int>(s));
}

bool violation(ScopeViolation& v, int operand, std::string message) {
  v.operand = operand;
  v.message = std::move(message);
  return false;
}

// Checks that `s` is one of `allowed`; fills `v` otherwise.
bool require_scope(ScopeViolation& v, Opcode op, int operand, const char* role, Scope s,
                   std::initializer_list<Scope> allowed) {
  for (Scope a : allowed) {
    if (s == a) return true;
  }
  std::string list;
  for (Scope a : allowed) list += (list.empty() ? "" : " or ") + std::string(scope_name(a));
  return violation(v, operand,
                   fmt::format("{} operand {} ({}) must be in {}, not {}", opcode_name(op),
                               operand + 1, role, list, scope_str(s)));
}

// A byte range [lo, hi) relative to an operand's address; empty when nothing is accessed.
struct Span {
  i128 lo = 0, hi = 0;
  bool empty() const { return hi <= lo; }
  i128 size() const { return empty() ? 0 : hi - lo; }
};

// Elements at sum_d i_d * stride_d, i_d in [begin_d, end_d), as a byte span.
Span box_span(int n, const i128* begin, const i128* end, const i128* stride, int elem_bytes) {
  i128 lo = 0, hi = 0;
  for (int d = 0; d < n; ++d) {
    if (end[d] <= begin[d]) return {};
    const i128 a = begin[d] * stride[d];
    const i128 b = (end[d] - 1) * stride[d];
    lo += std::min(a, b);
    hi += std::max(a, b);
  }
  return {lo * elem_bytes, (hi + 1) * elem_bytes};
}

// Span of a strided vector operand over repeat x count elements.
Span vec_span(const VecOperand& v, uint32_t count, uint32_t repeat, int elem_bytes) {
  const i128 begin[2] = {0, 0};
  const i128 end[2] = {repeat, count};
  const i128 stride[2] = {v.repeat_stride, v.elem_stride};
  return box_span(2, begin, end, stride, elem_bytes);
}

i128 ceil_div(i128 a, i128 b) { return (a + b - 1) / b; }

std::string i128_str(i128 v) {
  if (v >= 0 && v <= static_cast<i128>(UINT64_MAX))
    return fmt::format("{}", static_cast<uint64_t>(v));
  if (v < 0 && v >= static_cast<i128>(INT64_MIN)) return fmt::format("{}", static_cast<int64_t>(v));
  return v < 0 ? "< -2^63" : "> 2^64";
}

class Verifier {
 public:
  Verifier(const Program& p, const npu::HwConfig& hw) : p_(p), hw_(hw) {
    m0_ = std::max(1, hw.core.cube.m);
    k0_ = std::max(1, hw.core.cube.k);
    n0_ = std::max(1, hw.core.cube.n);
    in_bytes_ = dtype_bytes(hw.core.cube.input_dtype);
    acc_bytes_ = dtype_bytes(hw.core.cube.acc_dtype);
  }

  std::vector<std::string> run() {
    if (static_cast<int64_t>(p_.cores.size()) != hw_.cores) {
      out_.push_back(fmt::format("program: {} core streams, but hw config '{}' has cores = {}",
                                 p_.cores.size(), hw_.name, hw_.cores));
    }
    check_buffers();
    for (std::size_t c = 0; c < p_.cores.size(); ++c) {
      core_ = c;
      const auto& stream = p_.cores[c];
      for (std::size_t i = 0; i < stream.size(); ++i) {
        index_ = i;
        instr_ = &stream[i];
        check_instruction(static_cast<int64_t>(stream.size()));
      }
    }
    return std::move(out_);
  }

 private:
  template <class... A>
  void problem(fmt::format_string<A...> f, A&&... a) {
    out_.push_back(fmt::format("core {}, instruction {} ({}): {}", core_, index_,
                               format_instruction(*instr_), fmt::format(f, std::forward<A>(a)...)));
  }

  // Capacity of a scope in bytes; 0 when unknown (GM without gm_bytes and DRAM capacity).
  i128 capacity(Scope s) const {
    const auto& b = hw_.core.buffers_bytes;
    switch (s) {
      case Scope::gm:
        return p_.gm_bytes ? p_.gm_bytes : hw_.dram.capacity_bytes;
      case Scope::l1:
        return b.l1;
      case Scope::l0a:
        return b.l0a;
      case Scope::l0b:
        return b.l0b;
      case Scope::l0c:
        return b.l0c;
      case Scope::ub:
        return b.ub;
    }
    return 0;
  }

  void check_buffers() {
    std::unordered_map<std::string, std::size_t> names;
    for (std::size_t i = 0; i < p_.buffers.size(); ++i) {
      const GmBuffer& b = p_.buffers[i];
      auto bad = [&](const std::string& msg) {
        out_.push_back(fmt::format("buffer {} '{}': {}", i, b.name, msg));
      };
      if (const auto [it, fresh] = names.emplace(b.name, i); !fresh) {
        bad(fmt::format("name already used by buffer {}", it->second));
      }
      if (static_cast<int>(b.kind) > static_cast<int>(GmKind::scratch)) {
        bad(fmt::format("invalid kind value {}", static_cast<int>(b.kind)));
      }
      if (static_cast<int>(b.dtype) > static_cast<int>(DType::f32)) {
        bad(fmt::format("invalid dtype value {}", static_cast<int>(b.dtype)));
      }
      if (static_cast<i128>(b.address) + b.bytes > static_cast<i128>(p_.gm_bytes)) {
        bad(fmt::format("[{:#x}, {:#x}) lies outside gm_bytes = {}", b.address,
                        static_cast<uint64_t>(b.address + b.bytes), p_.gm_bytes));
      }
      if (b.kind == GmKind::input || b.kind == GmKind::output) {
        i128 elems = 1;
        bool ok = true;
        for (int64_t d : b.shape) {
          ok = ok && d >= 0;
          elems *= d < 0 ? 0 : d;
          if (elems > (static_cast<i128>(1) << 64)) elems = static_cast<i128>(1) << 64;
        }
        if (!ok)
          bad("negative dimension in shape");
        else if (elems * dtype_bytes(b.dtype) != static_cast<i128>(b.bytes)) {
          bad(fmt::format("bytes = {}, but shape [{}] of {} needs {}", b.bytes,
                          fmt::join(b.shape, ","), dtype_name(b.dtype),
                          i128_str(elems * dtype_bytes(b.dtype))));
        }
      }
      if (b.kind == GmKind::constant && !b.init.empty() && b.init.size() != b.bytes) {
        bad(fmt::format("init holds {} bytes, expected bytes = {}", b.init.size(), b.bytes));
      }
      if (b.kind != GmKind::constant && !b.init.empty()) {
        bad("only constant buffers carry init data");
      }
    }
  }

  void check_reg(uint8_t r, const char* what) {
    if (r >= kNumRegs) problem("register x{} of {} out of range (x0..x{})", r, what, kNumRegs - 1);
  }

  // Checks an operand's footprint: fits its scope, and for a constant address (x0) lies inside it.
  void check_operand(const char* what, const MemRef& m, Span span) {
    check_reg(m.reg, what);
    if (scopes_illegal_ || span.empty() || !scope_ok(m.scope)) return;
    const i128 cap = capacity(m.scope);
    if (cap <= 0) return;
    if (span.size() > cap) {
      problem("{} spans {} bytes, more than {} holds ({} bytes)", what, i128_str(span.size()),
              scope_name(m.scope), i128_str(cap));
      return;
    }
    if (m.reg == 0) {
      const i128 lo = m.offset + span.lo, hi = m.offset + span.hi;
      if (lo < 0 || hi > cap) {
        problem("{} accesses {}[{}, {}), outside {} ({} bytes)", what, scope_name(m.scope),
                i128_str(lo), i128_str(hi), scope_name(m.scope), i128_str(cap));
      }
    }
  }

  // Reports an illegal operand scope; footprints are then not checked (capacity is meaningless).
  void check_scopes() {
    ScopeViolation v;
    scopes_illegal_ = !check_operand_scopes(*instr_, v);
    if (scopes_illegal_) problem("{}", v.message);
  }

  void check_instruction(int64_t n) {
    const Instruction& in = *instr_;
    if (const std::string bad = invalid_enum_field(in); !bad.empty()) {
      problem("{}", bad);
      return;
    }
    if (args_index(in.op) != in.args.index()) {
      problem("holds {} operands, {} needs {}", kArgsClassNames[in.args.index()],
              opcode_name(in.op), kArgsClassNames[args_index(in.op)]);
      return;
    }
    if (in.op_index < -1 ||
        (in.op_index >= 0 && static_cast<std::size_t>(in.op_index) >= p_.op_names.size())) {
      problem("op_index {} has no entry in op_names ({} names)", in.op_index, p_.op_names.size());
    }
    check_scopes();
    std::visit([&](const auto& a) { check(a, n); }, in.args);
  }

  void check(const ScalarArgs& a, int64_t n) {
    switch (instr_->op) {
      case Opcode::li:
        check_reg(a.rd, "rd");
        break;
      case Opcode::addi:
      case Opcode::muli:
        check_reg(a.rd, "rd");
        check_reg(a.rs, "rs");
        break;
      case Opcode::add:
      case Opcode::sub:
      case Opcode::mul:
        check_reg(a.rd, "rd");
        check_reg(a.rs, "rs");
        check_reg(a.rt, "rt");
        break;
      case Opcode::blt:
        check_reg(a.rs, "rs");
        check_reg(a.rt, "rt");
        break;
      case Opcode::blti:
        check_reg(a.rs, "rs");
        break;
      default:
        break;
    }
    if (instr_->op == Opcode::blt || instr_->op == Opcode::blti || instr_->op == Opcode::jmp) {
      // Target n (one past the last instruction) ends the stream.
      if (a.target < 0 || a.target > n) {
        problem("branch target {} out of range (0..{}, {} ends the stream)", a.target, n, n);
      }
    }
  }

  void check(const SyncArgs& a, int64_t) {
    const bool src_ok = static_cast<int>(a.src) < kNumPipes;
    const bool dst_ok = static_cast<int>(a.dst) < kNumPipes;
    if (!src_ok) problem("invalid source pipe value {}", static_cast<int>(a.src));
    if (!dst_ok) problem("invalid destination pipe value {}", static_cast<int>(a.dst));
    if (src_ok && dst_ok && a.src == a.dst) {
      problem("{} between pipe {} and itself (src and dst must differ)", opcode_name(instr_->op),
              pipe_name(a.src));
    }
    if (a.event >= hw_.core.sync_event_ids) {
      problem("event id {} >= core.sync.event_ids = {}", a.event, hw_.core.sync_event_ids);
    }
  }

  void check(const DmaArgs& a, int64_t) {
    const int eb = dtype_bytes(a.dtype);
    if (a.ndims < 1 || a.ndims > kMaxDmaDims) {
      problem("ndims = {} (expected 1..{})", a.ndims, kMaxDmaDims);
      check_reg(a.dst.reg, "dst");
      check_reg(a.src.reg, "src");
      return;
    }
    const int n = a.ndims;
    i128 zero[kMaxDmaDims] = {}, ext[kMaxDmaDims], vb[kMaxDmaDims], ve[kMaxDmaDims];
    i128 ds[kMaxDmaDims], ss[kMaxDmaDims];
    bool ok = true;
    for (int d = 0; d < n; ++d) {
      ext[d] = a.extent[d];
      vb[d] = a.valid_begin[d];
      ve[d] = a.valid_end[d];
      ds[d] = a.dst_stride[d];
      ss[d] = a.src_stride[d];
      if (a.extent[d] == 0) {
        problem("zero extent in dimension {}", d);
        ok = false;
      } else if (a.valid_begin[d] > a.valid_end[d] || a.valid_end[d] > a.extent[d]) {
        problem("valid window [{}, {}) of dimension {} is not within [0, extent = {}]",
                a.valid_begin[d], a.valid_end[d], d, a.extent[d]);
        ok = false;
      }
    }
    if (!ok) return;
    check_operand("dst", a.dst, box_span(n, zero, ext, ds, eb));
    check_operand("src", a.src, box_span(n, vb, ve, ss, eb));
  }

  // Bytes of a fractal-padded rows x cols matrix in L0A (m0 x k0 blocks) or L0B (k0 x n0 blocks).
  i128 fractal_bytes(Scope s, i128 rows, i128 cols, int eb) const {
    if (s == Scope::l0a) return ceil_div(rows, m0_) * m0_ * ceil_div(cols, k0_) * k0_ * eb;
    return ceil_div(rows, k0_) * k0_ * ceil_div(cols, n0_) * n0_ * eb;
  }

  void check_cube_dtype(DType t) {
    if (t != hw_.core.cube.input_dtype) {
      problem("dtype {} differs from the cube input dtype {} (core.cube.input_dtype)",
              dtype_name(t), dtype_name(hw_.core.cube.input_dtype));
    }
  }

  void check(const Load2dArgs& a, int64_t) {
    if (a.rows == 0 || a.cols == 0) {
      problem("zero extent: rows = {}, cols = {}", a.rows, a.cols);
      return;
    }
    check_cube_dtype(a.dtype);
    const int eb = dtype_bytes(a.dtype);
    const i128 s = a.src_row_stride;
    // (r, c) at r * s + c, or transposed at c * s + r.
    const i128 outer = a.transpose ? a.cols : a.rows;
    const i128 inner = a.transpose ? a.rows : a.cols;
    const Span src{std::min<i128>(0, (outer - 1) * s) * eb,
                   (std::max<i128>(0, (outer - 1) * s) + inner) * eb};
    check_operand("src", a.src, src);
    if (a.dst.scope == Scope::l0a || a.dst.scope == Scope::l0b) {
      check_operand("dst", a.dst, {0, fractal_bytes(a.dst.scope, a.rows, a.cols, eb)});
    } else {
      check_reg(a.dst.reg, "dst");
    }
  }

  void check(const Img2colArgs& a, int64_t) {
    const uint32_t fields[] = {a.c,        a.h,          a.w,          a.kh, a.kw, a.stride_h,
                               a.stride_w, a.dilation_h, a.dilation_w, a.oh, a.ow};
    static const char* const names[] = {
        "c", "h", "w", "kh", "kw", "stride_h", "stride_w", "dilation_h", "dilation_w", "oh", "ow"};
    bool ok = true;
    for (int i = 0; i < 11; ++i) {
      if (fields[i] == 0) {
        problem("zero extent: {} = 0", names[i]);
        ok = false;
      }
    }
    if (!ok) return;
    check_cube_dtype(a.dtype);
    const int eb = dtype_bytes(a.dtype);
    // The source block: dense c x h x w, or NC1HWC0 [ceil(c/c0)][h][w][c0] when c0 > 0.
    const i128 src_elems = a.c0 > 0 ? (static_cast<i128>(a.c) + a.c0 - 1) / a.c0 * a.h * a.w * a.c0
                                    : static_cast<i128>(a.c) * a.h * a.w;
    check_operand("src", a.src, {0, src_elems * eb});
    const i128 k = static_cast<i128>(a.c) * a.kh * a.kw;
    const i128 np = static_cast<i128>(a.oh) * a.ow;
    if (a.dst.scope == Scope::l0b) {
      check_operand("dst", a.dst, {0, fractal_bytes(Scope::l0b, k, np, eb)});  // B = X, K x N
    } else if (a.dst.scope == Scope::l0a) {
      check_operand("dst", a.dst, {0, fractal_bytes(Scope::l0a, np, k, eb)});  // A = X^T, N x K
    } else {
      check_reg(a.dst.reg, "dst");
    }
  }

  void check(const MmadArgs& a, int64_t) {
    if (a.m1 == 0 || a.k1 == 0 || a.n1 == 0) {
      problem("zero extent: m1 = {}, k1 = {}, n1 = {}", a.m1, a.k1, a.n1);
      return;
    }
    check_operand("a", a.a, {0, static_cast<i128>(a.m1) * a.k1 * m0_ * k0_ * in_bytes_});
    check_operand("b", a.b, {0, static_cast<i128>(a.k1) * a.n1 * k0_ * n0_ * in_bytes_});
    check_operand("c", a.c, {0, static_cast<i128>(a.m1) * a.n1 * m0_ * n0_ * acc_bytes_});
  }

  void check(const FixArgs& a, int64_t) {
    if (a.m == 0 || a.n == 0) {
      problem("zero extent: m = {}, n = {}", a.m, a.n);
      return;
    }
    if (a.dst_row_stride < static_cast<int64_t>(a.n)) {
      problem("dst_row_stride {} < n = {}: output rows would overlap", a.dst_row_stride, a.n);
    }
    // L0C tile [M1][N1][m0][n0]: the bytes from element 0 to the last element read, (m-1, n-1).
    const i128 M1 = ceil_div(a.m, m0_), N1 = ceil_div(a.n, n0_);
    const i128 last = ((M1 - 1) * N1 + (N1 - 1)) * m0_ * n0_ + (a.m - 1 - (M1 - 1) * m0_) * n0_ +
                      (a.n - 1 - (N1 - 1) * n0_);
    check_operand("src", a.src, {0, (last + 1) * acc_bytes_});
    const int eb = dtype_bytes(a.dst_dtype);
    const i128 s = a.dst_row_stride;
    check_operand(
        "dst", a.dst,
        {std::min<i128>(0, (a.m - 1) * s) * eb, (std::max<i128>(0, (a.m - 1) * s) + a.n) * eb});
  }

  void check(const VectorArgs& a, int64_t) {
    if (a.count == 0 || a.repeat == 0) {
      problem("zero extent: count = {}, repeat = {}", a.count, a.repeat);
      return;
    }
    const int eb = dtype_bytes(a.dtype);
    const VectorOperandUse use = vector_operand_use(instr_->op);
    const bool reduction =
        instr_->op == Opcode::vrsum || instr_->op == Opcode::vrmax || instr_->op == Opcode::vrmin;
    check_operand("dst", a.dst.addr, vec_span(a.dst, reduction ? 1 : a.count, a.repeat, eb));
    if (use.src0) check_operand("src0", a.src0.addr, vec_span(a.src0, a.count, a.repeat, eb));
    if (use.src1) check_operand("src1", a.src1.addr, vec_span(a.src1, a.count, a.repeat, eb));
  }

  const Program& p_;
  const npu::HwConfig& hw_;
  std::vector<std::string> out_;
  std::size_t core_ = 0, index_ = 0;
  const Instruction* instr_ = nullptr;
  bool scopes_illegal_ = false;
  int m0_, k0_, n0_, in_bytes_, acc_bytes_;
};

}  // namespace

bool check_operand_scopes(const Instruction& in, ScopeViolation& v) {
  if (static_cast<int>(in.op) >= kNumOpcodes || args_index(in.op) != in.args.index()) return true;
  const Opcode op = in.op;
  switch (in.args.index()) {
    case 2: {
      const auto& a = std::get<DmaArgs>(in.args);
      if (!require_scope(v, op, 1, "src", a.src.scope, {Scope::gm, Scope::ub})) return false;
      if (a.src.scope == Scope::gm) {
        return require_scope(v, op, 0, "dst of a dma from gm", a.dst.scope, {Scope::l1, Scope::ub});
      }
      return require_scope(v, op, 0, "dst of a dma from ub", a.dst.scope, {Scope::gm, Scope::l1});
    }
    case 3: {
      const auto& a = std::get<Load2dArgs>(in.args);
      return require_scope(v, op, 0, "dst", a.dst.scope, {Scope::l0a, Scope::l0b}) &&
             require_scope(v, op, 1, "src", a.src.scope, {Scope::l1});
    }
    case 4: {
      const auto& a = std::get<Img2colArgs>(in.args);
      return require_scope(v, op, 0, "dst", a.dst.scope, {Scope::l0a, Scope::l0b}) &&
             require_scope(v, op, 1, "src", a.src.scope, {Scope::l1});
    }
    case 5: {
      const auto& a = std::get<MmadArgs>(in.args);
      return require_scope(v, op, 0, "c", a.c.scope, {Scope::l0c}) &&
             require_scope(v, op, 1, "a", a.a.scope, {Scope::l0a}) &&
             require_scope(v, op, 2, "b", a.b.scope, {Scope::l0b});
    }
    case 6: {
      const auto& a = std::get<FixArgs>(in.args);
      return require_scope(v, op, 0, "dst", a.dst.scope, {Scope::ub}) &&
             require_scope(v, op, 1, "src", a.src.scope, {Scope::l0c});
    }
    case 7: {
      const auto& a = std::get<VectorArgs>(in.args);
      const VectorOperandUse use = vector_operand_use(op);
      if (!require_scope(v, op, 0, "dst", a.dst.addr.scope, {Scope::ub})) return false;
      if (use.src0 && !require_scope(v, op, 1, "src0", a.src0.addr.scope, {Scope::ub}))
        return false;
      if (use.src1 && !require_scope(v, op, 2, "src1", a.src1.addr.scope, {Scope::ub}))
        return false;
      return true;
    }
    default:
      return true;
  }
}

std::vector<std::string> verify_program(const Program& program, const npu::HwConfig& hw) {
  return Verifier(program, hw).run();
}

}  // namespace tessel::isa
