// Loop IR -> NPU instructions (see codegen.h).
#include "compiler/backend/npu/codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "compiler/support/error.h"

namespace tessel::npu_backend {

namespace L = tessel::loop;
using isa::Instruction;
using isa::MemRef;
using isa::Opcode;

namespace {

class Codegen {
 public:
  Codegen(const passes::NpuTarget& target, int32_t op_index, std::vector<Instruction>& code)
      : target_(target), op_index_(op_index), code_(code) {}

  void stmt(const L::Stmt& s) {
    switch (s->kind) {
      case L::StmtKind::Seq:
        for (const auto& x : s->seq) stmt(x);
        break;
      case L::StmtKind::For:
        loop(*s);
        break;
      case L::StmtKind::Copy:
        copy(*s);
        break;
      case L::StmtKind::Intrin:
        intrin(*s);
        break;
      case L::StmtKind::Sync:
        push(s->instr);
        break;
      default:
        internal_fail("codegen: statement kind {} survived the NPU passes",
                      static_cast<int>(s->kind));
    }
  }

 private:
  const passes::NpuTarget& target_;
  int32_t op_index_;
  std::vector<Instruction>& code_;
  std::map<const L::VarNode*, int> var_reg_;         // loop variable -> register
  std::map<const L::VarNode*, L::Interval> bounds_;  // loop variable ranges
  std::vector<bool> reg_used_ = std::vector<bool>(isa::kNumRegs, false);

  int alloc_reg() {
    for (int r = 1; r < isa::kNumRegs; ++r)
      if (!reg_used_[r]) {
        reg_used_[r] = true;
        return r;
      }
    internal_fail("codegen: out of scalar registers (loop nest too deep)");
  }
  void free_reg(int r) { reg_used_[r] = false; }

  void push(Instruction in) {
    in.op_index = op_index_;
    code_.push_back(std::move(in));
  }

  void scalar(Opcode op, int rd, int rs, int rt, int64_t imm, int32_t target = -1) {
    Instruction in;
    in.op = op;
    isa::ScalarArgs a;
    a.rd = static_cast<uint8_t>(rd);
    a.rs = static_cast<uint8_t>(rs);
    a.rt = static_cast<uint8_t>(rt);
    a.imm = imm;
    a.target = target;
    in.args = a;
    push(in);
  }

  void loop(const L::StmtNode& f) {
    bounds_[f.var.get()] = {0, f.extent - 1};
    if (f.extent == 1) {
      var_reg_[f.var.get()] = -1;  // bound to 0
      stmt(f.body);
      var_reg_.erase(f.var.get());
      return;
    }
    const int r = alloc_reg();
    var_reg_[f.var.get()] = r;
    scalar(Opcode::li, r, 0, 0, 0);
    const int32_t top = static_cast<int32_t>(code_.size());
    stmt(f.body);
    scalar(Opcode::addi, r, r, 0, 1);
    scalar(Opcode::blti, 0, r, 0, f.extent, top);
    var_reg_.erase(f.var.get());
    bounds_.erase(f.var.get());
    free_reg(r);
  }

  /// Materialises `byte_base + elem_offset * esize` as a MemRef; registers it allocates are
  /// appended to `temps`.
  MemRef address(L::MemScope scope, int64_t byte_base, const L::Expr& elem_offset, int esize,
                 std::vector<int>& temps) {
    auto a = L::to_affine(elem_offset);
    TESSEL_CHECK(a.has_value(), "codegen: non-affine address {}", L::to_string(elem_offset));
    MemRef m;
    m.scope = L::to_isa_scope(scope);
    m.offset = byte_base + a->constant * esize;
    int acc = -1;
    // Deterministic order: by variable id.
    std::vector<std::pair<const L::VarNode*, int64_t>> terms(a->coeffs.begin(), a->coeffs.end());
    std::sort(terms.begin(), terms.end(),
              [](const auto& x, const auto& y) { return x.first->id < y.first->id; });
    for (auto [v, c] : terms) {
      auto it = var_reg_.find(v);
      TESSEL_CHECK(it != var_reg_.end(), "codegen: variable {} is not a loop variable", v->name);
      if (it->second < 0) continue;  // extent-1 loop: value 0
      const int64_t k = c * esize;
      if (acc < 0) {
        acc = alloc_reg();
        temps.push_back(acc);
        scalar(Opcode::muli, acc, it->second, 0, k);
      } else {
        const int t = alloc_reg();
        scalar(Opcode::muli, t, it->second, 0, k);
        scalar(Opcode::add, acc, acc, t, 0);
        free_reg(t);
      }
    }
    m.reg = static_cast<uint8_t>(acc < 0 ? 0 : acc);
    return m;
  }

  static int64_t base_address(const L::Buffer& b) {
    const L::BufferNode* s = b->storage();
    TESSEL_CHECK(s->address_bytes >= 0, "buffer {} has no address (memory planning)", s->name);
    return s->address_bytes;
  }

  /// Element offset (from the allocation's element 0) of a region's first element.
  static L::Expr region_offset(const L::Region& r) {
    L::Expr e = L::int_imm(r.buffer->elem_offset);
    for (size_t d = 0; d < r.starts.size(); ++d)
      e = L::add(e, L::mul(r.starts[d], L::int_imm(r.buffer->strides[d])));
    return e;
  }

  void copy(const L::StmtNode& c) {
    const L::Region& dst = c.dst;
    const L::Region& src = c.src;
    const size_t rank = dst.extents.size();
    struct D {
      int64_t extent, dst_stride, src_stride, valid_lo, valid_hi;
    };
    std::vector<D> dims;
    for (size_t d = 0; d < rank; ++d) {
      D x{dst.extents[d], dst.buffer->strides[d], src.buffer->strides[d], 0, dst.extents[d]};
      // Valid window of the source along d.
      const int64_t dim = src.buffer->shape[d];
      L::Interval b = L::bound_of(src.starts[d], bounds_);
      if (b.lo < 0 || b.hi + x.extent > dim) {
        auto a = L::to_affine(src.starts[d]);
        bool constant = a && a->is_constant();
        if (!constant) {
          // Variables bound to extent-1 loops count as 0.
          constant = a.has_value();
          if (a)
            for (auto [v, k] : a->coeffs) constant &= var_reg_.count(v) && var_reg_.at(v) < 0;
        }
        if (!constant)
          internal_fail(
              "codegen: copy {} <- {} may read outside dim {} at a loop-dependent "
              "position (partition_loops did not make it static)",
              dst.buffer->name, src.buffer->name, d);
        const int64_t s0 = b.lo;
        x.valid_lo = std::clamp<int64_t>(-s0, 0, x.extent);
        x.valid_hi = std::clamp<int64_t>(dim - s0, x.valid_lo, x.extent);
      }
      dims.push_back(x);
    }
    // Drop unit dims that are valid; merge contiguous fully-valid dims.
    std::vector<D> m;
    for (const auto& d : dims) {
      if (d.extent == 1 && d.valid_lo == 0 && d.valid_hi == 1) continue;
      if (!m.empty()) {
        D& o = m.back();
        const bool full =
            o.valid_lo == 0 && o.valid_hi == o.extent && d.valid_lo == 0 && d.valid_hi == d.extent;
        if (full && o.dst_stride == d.extent * d.dst_stride &&
            o.src_stride == d.extent * d.src_stride) {
          o.extent *= d.extent;
          o.dst_stride = d.dst_stride;
          o.src_stride = d.src_stride;
          o.valid_hi = o.extent;
          continue;
        }
      }
      m.push_back(d);
    }
    if (m.empty()) m.push_back(D{1, 1, 1, 0, 1});
    if (m.size() > static_cast<size_t>(isa::kMaxDmaDims))
      internal_fail("codegen: copy {} <- {} needs {} dims after merging (max {})", dst.buffer->name,
                    src.buffer->name, m.size(), isa::kMaxDmaDims);
    // Every element the copy touches must lie inside its allocations (catches schedule bugs
    // before they corrupt other tensors).
    auto check_inside = [&](const L::Region& r, bool is_src) {
      const L::BufferNode* st = r.buffer->storage();
      const int64_t esz = dtype_size(r.buffer->dtype);
      const L::Interval base = L::bound_of(region_offset(r), bounds_);
      int64_t lo = base.lo, hi = base.hi;
      for (size_t d = 0; d < m.size(); ++d) {
        const int64_t stride = is_src ? m[d].src_stride : m[d].dst_stride;
        const int64_t first = is_src ? m[d].valid_lo : 0;
        const int64_t last = (is_src ? m[d].valid_hi : m[d].extent) - 1;
        if (last < first) return;  // nothing read along this dim
        lo += std::min(first * stride, last * stride);
        hi += std::max(first * stride, last * stride);
      }
      if (lo < 0 || (hi + 1) * esz > st->alloc_bytes)
        internal_fail("codegen: copy {} <- {} touches elements [{}, {}] of {} ({} bytes)",
                      dst.buffer->name, src.buffer->name, lo, hi, st->name, st->alloc_bytes);
    };
    check_inside(dst, false);
    check_inside(src, true);
    isa::DmaArgs a;
    a.dtype = passes::isa_dtype(dst.buffer->dtype);
    a.ndims = static_cast<uint8_t>(m.size());
    for (size_t d = 0; d < m.size(); ++d) {
      a.extent[d] = static_cast<uint32_t>(m[d].extent);
      a.dst_stride[d] = m[d].dst_stride;
      a.src_stride[d] = m[d].src_stride;
      a.valid_begin[d] = static_cast<uint32_t>(m[d].valid_lo);
      a.valid_end[d] = static_cast<uint32_t>(m[d].valid_hi);
    }
    a.pad_value = static_cast<float>(c.pad_value);
    const int esize = dtype_size(dst.buffer->dtype);
    std::vector<int> temps;
    a.dst = address(dst.buffer->scope, base_address(dst.buffer), region_offset(dst), esize, temps);
    a.src = address(src.buffer->scope, base_address(src.buffer), region_offset(src), esize, temps);
    Instruction in;
    in.op = Opcode::dma;
    if (c.multicast_cores > 1) {  // the same load on every core of the set: one GM read
      in.op = Opcode::dma_mc;
      a.cores = static_cast<uint32_t>(c.multicast_cores);
    }
    in.args = a;
    push(in);
    for (int r : temps) free_reg(r);
  }

  void intrin(const L::StmtNode& s) {
    Instruction in = s.instr;
    std::vector<int> temps;
    std::vector<MemRef> refs;
    for (const auto& o : s.operands) {
      if (!o.buffer) {
        refs.emplace_back();
        continue;
      }
      refs.push_back(address(o.buffer->scope, base_address(o.buffer), o.elem_offset,
                             dtype_size(o.buffer->dtype), temps));
    }
    auto ref = [&](size_t i) { return i < refs.size() ? refs[i] : MemRef{}; };
    std::visit(
        [&](auto& args) {
          using T = std::decay_t<decltype(args)>;
          if constexpr (std::is_same_v<T, isa::VectorArgs>) {
            args.dst.addr = ref(0);
            if (refs.size() > 1) args.src0.addr = ref(1);
            if (refs.size() > 2) args.src1.addr = ref(2);
            if (refs.size() > 3) args.src2.addr = ref(3);
          } else if constexpr (std::is_same_v<T, isa::MmadArgs>) {
            args.c = ref(0);
            args.a = ref(1);
            args.b = ref(2);
          } else if constexpr (std::is_same_v<T, isa::Load2dArgs> ||
                               std::is_same_v<T, isa::Img2colArgs> ||
                               std::is_same_v<T, isa::FixArgs> || std::is_same_v<T, isa::DmaArgs>) {
            args.dst = ref(0);
            args.src = ref(1);
            if constexpr (std::is_same_v<T, isa::FixArgs>)
              if (refs.size() > 2) args.quant = ref(2);  // the int8 mode's table
          } else {
            internal_fail("codegen: intrin with scalar/sync operands");
          }
        },
        in.args);
    push(in);
    for (int r : temps) free_reg(r);
  }
};

}  // namespace

void emit_kernel(const L::Stmt& body, const passes::NpuTarget& target, int32_t op_index,
                 std::vector<isa::Instruction>& code) {
  Codegen cg(target, op_index, code);
  cg.stmt(body);
}

}  // namespace tessel::npu_backend
