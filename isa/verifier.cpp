// Static verifier for isa::Program (checks listed in isa/verifier.h and docs/isa.md "Verifier").
//
// The checks come from the instruction records and operand classes (isa/instruction_list.h,
// isa/operand_classes.h): the registers an instruction uses, its branch targets, the scopes its
// operands may be in, the fields that must not be zero; plus a few rules per operand class (flag
// pipes and events, dma windows, the cube input dtype, fix row strides). Operand footprints are the
// ones the run-time checks use (isa/footprint.h): statically each one must fit its scratchpad, and
// for an operand whose base register is x0 (a constant address) the absolute range must lie inside
// it, which cross-checks the compiler's address arithmetic.
#include "isa/verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "isa/asm.h"
#include "isa/footprint.h"
#include "isa/operand_classes.h"

namespace tessel::isa {

namespace {

namespace oc = opclass;
using i128 = __int128;

template <class D>
using kind_of = typename std::decay_t<D>::kind_type;

bool scope_ok(Scope s) { return static_cast<int>(s) < kNumScopes; }

std::string scope_str(Scope s) {
  return scope_ok(s) ? scope_name(s) : fmt::format("<scope {}>", static_cast<int>(s));
}

// Checks that `s` is in `allowed`; fills `v` for operand position `operand` otherwise. The role
// names the operand in the message: `role`, or "ROLE of a OP from FROM" when `from` is given.
bool require_scope(ScopeViolation& v, Opcode op, int operand, const char* role, Scope s,
                   oc::ScopeSet allowed, const Scope* from = nullptr) {
  if (oc::in_set(allowed, s)) return true;
  v.operand = operand;
  const std::string who =
      from ? fmt::format("{} of a {} from {}", role, opcode_name(op), scope_name(*from)) : role;
  v.message = fmt::format("{} operand {} ({}) must be in {}, not {}", opcode_name(op), operand + 1,
                          who, oc::scope_list(allowed), scope_str(s));
  return false;
}

template <class A>
bool check_scopes_of(Opcode op, const A& a, ScopeViolation& v) {
  using Desc = oc::ClassDesc<A>;
  if constexpr (requires { Desc::scope_pairs; }) {
    // The (src, dst) pairs: src must start a pair, dst must end one that src starts.
    oc::ScopeSet srcs = 0, dsts = 0;
    for (const auto& [s, t] : Desc::scope_pairs) srcs |= oc::scopes({s});
    if (!require_scope(v, op, 1, "src", a.src.scope, srcs)) return false;
    for (const auto& [s, t] : Desc::scope_pairs)
      if (s == a.src.scope) dsts |= oc::scopes({t});
    return require_scope(v, op, 0, "dst", a.dst.scope, dsts, &a.src.scope);
  } else {
    bool ok = true;
    int position = 0;  // the operand's position in the text form
    oc::for_each_field_indexed<A>([&](const auto& d, int i) {
      if (!ok || d.text != oc::Text::operand || !oc::field_used(op, i)) return;
      if constexpr (oc::kIsMemory<kind_of<decltype(d)>>) {
        if (d.allowed)
          ok = require_scope(v, op, position, field_name(d.name), oc::mem_ref(d.get(a)).scope,
                             d.allowed);
      }
      ++position;
    });
    return ok;
  }
}

std::string i128_str(i128 v) {
  if (v >= 0 && v <= static_cast<i128>(UINT64_MAX))
    return fmt::format("{}", static_cast<uint64_t>(v));
  if (v < 0 && v >= static_cast<i128>(INT64_MIN)) return fmt::format("{}", static_cast<int64_t>(v));
  return v < 0 ? "< -2^63" : "> 2^64";
}

class Verifier {
 public:
  Verifier(const Program& p, const npu::HwConfig& hw) : p_(p), hw_(hw) {
    fractal_.m0 = std::max(1, hw.core.cube.m);
    fractal_.k0 = std::max(1, hw.core.cube.k);
    fractal_.n0 = std::max(1, hw.core.cube.n);
    fractal_.in_bytes = dtype_bytes(hw.core.cube.input_dtype);
    fractal_.acc_bytes = dtype_bytes(hw.core.cube.acc_dtype);
    const npu::CubeFractal i8 = hw.core.cube.int8_fractal();
    fractal_.int8_m0 = std::max(1, i8.m);
    fractal_.int8_k0 = std::max(1, i8.k);
    fractal_.int8_n0 = std::max(1, i8.n);
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
      if (static_cast<int>(b.dtype) >= kNumDTypes) {
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

  // Checks a footprint: fits its scope, and for a constant address (x0) lies inside it.
  void check_span(const char* what, const MemRef& m, i128 span_lo, i128 span_hi) {
    if (span_hi <= span_lo || !scope_ok(m.scope)) return;
    const i128 cap = capacity(m.scope);
    if (cap <= 0) return;
    if (span_hi - span_lo > cap) {
      problem("{} spans {} bytes, more than {} holds ({} bytes)", what, i128_str(span_hi - span_lo),
              scope_name(m.scope), i128_str(cap));
      return;
    }
    if (m.reg == 0) {
      const i128 lo = m.offset + span_lo, hi = m.offset + span_hi;
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
      problem("holds {} operands, {} needs {}",
              args_class_name(static_cast<ArgsClass>(in.args.index())), opcode_name(in.op),
              args_class_name(instr_info(in.op).cls));
      return;
    }
    if (in.op_index < -1 ||
        (in.op_index >= 0 && static_cast<std::size_t>(in.op_index) >= p_.op_names.size())) {
      problem("op_index {} has no entry in op_names ({} names)", in.op_index, p_.op_names.size());
    }
    check_scopes();
    std::visit([&](const auto& a) { check(a, n); }, in.args);
  }

  // The checks every class gets from its field table, then the class's own rules, then the
  // footprints.
  template <class A>
  void check(const A& a, int64_t n) {
    const Opcode op = instr_->op;
    std::string zeros;
    oc::for_each_field_indexed<A>([&](const auto& d, int i) {
      using K = kind_of<decltype(d)>;
      if (!oc::field_used(op, i)) return;
      if constexpr (std::is_same_v<K, oc::kind::Reg>) {
        check_reg(d.get(a), field_name(d.name));
      } else if constexpr (oc::kIsMemory<K>) {
        check_reg(oc::mem_ref(d.get(a)).reg, field_name(d.name));
      } else if constexpr (std::is_same_v<K, oc::kind::Target>) {
        // Target n (one past the last instruction) ends the stream.
        if (d.get(a) < 0 || d.get(a) > n) {
          problem("branch target {} out of range (0..{}, {} ends the stream)", d.get(a), n, n);
        }
      } else if constexpr (std::is_integral_v<typename K::type>) {
        if (d.nonzero_ && d.get(a) == 0)
          zeros += fmt::format("{}{} = 0", zeros.empty() ? "" : ", ", field_name(d.name));
      }
    });
    if (!zeros.empty()) {
      problem("zero extent: {}", zeros);
      return;
    }
    if (!rules(a)) return;
    if (scopes_illegal_) return;
    // Each operand once: its write span, or its read span when it is only read.
    std::array<footprint::Span, kMaxSpans> spans;
    int count = 0;
    footprint::for_each_access(fractal_, op, a, [&](const footprint::Span& s) {
      if (count < kMaxSpans) spans[count++] = s;
    });
    for (int i = 0; i < count; ++i) {
      const footprint::Span& s = spans[i];
      bool written_later = false;
      for (int j = i + 1; j < count; ++j) written_later |= spans[j].field == s.field;
      if (!written_later) check_span(field_name(s.field), *s.ref, s.lo, s.hi);
    }
  }

  // The rules of each operand class beyond its field table; false: skip the footprints.
  // lbu with base register x0: its byte must lie in the program's GM.
  bool rules(const ScalarArgs& a) {
    if (instr_->op == Opcode::lbu && a.rs == 0 && p_.gm_bytes > 0 &&
        (a.imm < 0 || static_cast<uint64_t>(a.imm) >= p_.gm_bytes))
      problem("lbu of GM byte {} outside the program's {} GM bytes", a.imm, p_.gm_bytes);
    return true;
  }

  // l2_prefetch / l2_discard: src in GM (the field table), bytes > 0 (nonzero); the range must
  // lie in the program's GM.
  bool rules(const L2HintArgs& a) {
    if (a.src.reg == 0 && p_.gm_bytes > 0 &&
        (a.src.offset < 0 || static_cast<uint64_t>(a.src.offset) + a.bytes > p_.gm_bytes))
      problem("{} of GM bytes [{}, {}) outside the program's {} GM bytes", opcode_name(instr_->op),
              a.src.offset, a.src.offset + static_cast<int64_t>(a.bytes), p_.gm_bytes);
    return true;
  }

  bool rules(const SyncArgs& a) {
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
    return true;
  }

  bool rules(const DmaArgs& a) {
    if (a.ndims < 1 || a.ndims > kMaxDmaDims) {
      problem("ndims = {} (expected 1..{})", a.ndims, kMaxDmaDims);
      return false;
    }
    bool ok = true;
    if (instr_->op == Opcode::dma_mc) {  // a multicast load: GM -> L1/UB of a set of cores
      if (!hw_.multicast)
        problem("dma_mc on hardware without multicast (hw config '{}': memory.multicast is none)",
                hw_.name);
      if (a.src.scope != Scope::gm) {
        problem("dma_mc reads GM (a multicast load gm->l1 or gm->ub), not {}",
                scope_name(a.src.scope));
        ok = false;
      }
      if (a.cores < 1 || static_cast<int64_t>(a.cores) > hw_.cores) {
        problem("dma_mc core set of {} cores (expected 1..cores = {})", a.cores, hw_.cores);
        ok = false;
      }
    } else if (a.cores != 0) {
      problem("cores = {} on a dma (a core set is for dma_mc only)", a.cores);
    }
    for (int d = 0; d < a.ndims; ++d) {
      if (a.extent[d] == 0) {
        problem("zero extent in dimension {}", d);
        ok = false;
      } else if (a.valid_begin[d] > a.valid_end[d] || a.valid_end[d] > a.extent[d]) {
        problem("valid window [{}, {}) of dimension {} is not within [0, extent = {}]",
                a.valid_begin[d], a.valid_end[d], d, a.extent[d]);
        ok = false;
      }
    }
    return ok;
  }

  // The float mode's operands are core.cube.input_dtype; i8 and u8 are the int8 mode's.
  void check_cube_dtype(DType t) {
    if (t != hw_.core.cube.input_dtype && !is_cube_int8_dtype(t)) {
      problem(
          "dtype {} differs from the cube input dtype {} (core.cube.input_dtype) and is not "
          "an int8-mode dtype (i8, u8)",
          dtype_name(t), dtype_name(hw_.core.cube.input_dtype));
    }
  }

  bool rules(const Load2dArgs& a) {
    check_cube_dtype(a.dtype);
    return true;
  }

  bool rules(const Img2colArgs& a) {
    check_cube_dtype(a.dtype);
    return true;
  }

  bool rules(const MmadArgs& a) {
    const bool ia = is_cube_int8_dtype(a.a_dtype), ib = is_cube_int8_dtype(a.b_dtype);
    if (ia != ib || (!ia && (!is_float_dtype(a.a_dtype) || !is_float_dtype(a.b_dtype))))
      problem(
          "a_dtype {} and b_dtype {} are not both float (the float mode) or both i8/u8 (the "
          "int8 mode)",
          dtype_name(a.a_dtype), dtype_name(a.b_dtype));
    return true;
  }

  bool rules(const FixArgs& a) {
    if (a.dst_row_stride < static_cast<int64_t>(a.n)) {
      problem("dst_row_stride {} < n = {}: output rows would overlap", a.dst_row_stride, a.n);
    }
    if (!is_float_dtype(a.dst_dtype) && !fix_int8(a))
      problem("fix writes f16 or f32 (float mode) or i8, u8, i32 (int8 mode), not {}",
              dtype_name(a.dst_dtype));
    if (a.per_row && a.per_channel)
      problem("per_row and per_channel both set: the table is indexed by rows or by columns");
    return true;
  }

  // The dtype traits of the records: float_only instructions take f16/f32, bits_only ones an
  // integer dtype or bool.
  bool rules(const VectorArgs& a) {
    const InstrInfo& r = instr_info(instr_->op);
    if (r.float_only && !is_float_dtype(a.dtype))
      problem("{} takes a float dtype (f16 or f32), not {}", r.mnemonic, dtype_name(a.dtype));
    if (r.bits_only && is_float_dtype(a.dtype))
      problem("{} takes an integer dtype or bool, not {}", r.mnemonic, dtype_name(a.dtype));
    return true;
  }

  static constexpr int kMaxSpans = 8;
  const Program& p_;
  const npu::HwConfig& hw_;
  std::vector<std::string> out_;
  std::size_t core_ = 0, index_ = 0;
  const Instruction* instr_ = nullptr;
  bool scopes_illegal_ = false;
  footprint::Fractal fractal_;
};

}  // namespace

bool check_operand_scopes(const Instruction& in, ScopeViolation& v) {
  if (!is_valid_opcode(in.op) || args_index(in.op) != in.args.index()) return true;
  return std::visit([&](const auto& a) { return check_scopes_of(in.op, a, v); }, in.args);
}

std::vector<std::string> verify_program(const Program& program, const npu::HwConfig& hw) {
  return Verifier(program, hw).run();
}

}  // namespace tessel::isa
