// Binary encoding of isa::Program. The byte layout is specified in docs/isa.md ("Binary
// encoding"); in short: a header (magic "TSNP", version, core count), the program name, gm_bytes,
// op names, the memory map with constant data, one instruction stream per core, a CRC-32 trailer.
// Integers are LEB128 varints (signed ones zigzag-mapped first, as in Protocol Buffers); floats are
// their 4 IEEE-754 bytes, little-endian. Each instruction is an opcode byte followed by a compact
// per-opcode form when the instruction is in the common shape, or a full form holding every field.
#include "isa/encoding.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <limits>

#include "compiler/support/error.h"
#include "isa/asm.h"

namespace tessel::isa {

namespace {

constexpr uint8_t kOpIndexFlag = 0x40;   // opcode byte: an op_index delta follows
constexpr uint8_t kFullFormFlag = 0x80;  // opcode byte: the full form follows
constexpr uint8_t kOpcodeMask = 0x3f;
static_assert(kNumOpcodes <= kOpcodeMask + 1, "opcode no longer fits the 6-bit opcode field");

uint32_t float_bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), the checksum of zlib/PNG.
uint32_t crc32(const uint8_t* data, std::size_t n) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) c = table[(c ^ data[i]) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// ------------------------------------------------------------------------------------------------
// Writer
// ------------------------------------------------------------------------------------------------

class Writer {
 public:
  explicit Writer(std::vector<uint8_t>& out) : out_(out) {}
  void u8(uint8_t v) { out_.push_back(v); }
  void uvar(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<uint8_t>(v | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<uint8_t>(v));
  }
  void svar(int64_t v) { uvar(zigzag(v)); }
  void u32le(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  void f32(float v) { u32le(float_bits(v)); }
  void str(const std::string& s) {
    uvar(s.size());
    out_.insert(out_.end(), s.begin(), s.end());
  }
  // Compact memory operand: one byte scope | reg << 3 (reg < 32), then the offset.
  void mem_compact(const MemRef& m) {
    u8(static_cast<uint8_t>(static_cast<uint8_t>(m.scope) | (m.reg << 3)));
    svar(m.offset);
  }
  void mem_full(const MemRef& m) {
    u8(static_cast<uint8_t>(m.scope));
    u8(m.reg);
    svar(m.offset);
  }
  void vec_compact(const VecOperand& v) {
    mem_compact(v.addr);
    svar(v.elem_stride);
    svar(v.repeat_stride);
  }
  void vec_full(const VecOperand& v) {
    mem_full(v.addr);
    svar(v.elem_stride);
    svar(v.repeat_stride);
  }

 private:
  std::vector<uint8_t>& out_;
};

// ------------------------------------------------------------------------------------------------
// Validation of enum values before encoding (values outside the enumerators are not encodable)
// ------------------------------------------------------------------------------------------------

// ------------------------------------------------------------------------------------------------
// Compact forms: when an instruction has them, and how they are written
// ------------------------------------------------------------------------------------------------

bool reg_ok(uint8_t r) { return r < kNumRegs; }

// The ScalarArgs an opcode's compact form can carry: the used fields of `a`, defaults elsewhere.
ScalarArgs project_scalar(Opcode op, const ScalarArgs& a) {
  ScalarArgs p;
  switch (op) {
    case Opcode::li:
      p.rd = a.rd, p.imm = a.imm;
      break;
    case Opcode::addi:
    case Opcode::muli:
      p.rd = a.rd, p.rs = a.rs, p.imm = a.imm;
      break;
    case Opcode::add:
    case Opcode::sub:
    case Opcode::mul:
      p.rd = a.rd, p.rs = a.rs, p.rt = a.rt;
      break;
    case Opcode::blt:
      p.rs = a.rs, p.rt = a.rt, p.target = a.target;
      break;
    case Opcode::blti:
      p.rs = a.rs, p.imm = a.imm, p.target = a.target;
      break;
    case Opcode::jmp:
      p.target = a.target;
      break;
    default:
      break;
  }
  return p;
}

bool is_branch(Opcode op) { return op == Opcode::blt || op == Opcode::blti || op == Opcode::jmp; }

bool compact_ok(const Instruction& in) {
  if (args_index(in.op) != in.args.index()) return false;
  return std::visit(
      [&](const auto& a) -> bool {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, ScalarArgs>) {
          return project_scalar(in.op, a) == a && reg_ok(a.rd) && reg_ok(a.rs) && reg_ok(a.rt) &&
                 (!is_branch(in.op) || a.target >= 0);
        } else if constexpr (std::is_same_v<T, SyncArgs>) {
          return true;
        } else if constexpr (std::is_same_v<T, DmaArgs>) {
          if (a.ndims < 1 || a.ndims > kMaxDmaDims || !reg_ok(a.dst.reg) || !reg_ok(a.src.reg)) {
            return false;
          }
          for (int d = a.ndims; d < kMaxDmaDims; ++d) {
            if (a.extent[d] || a.dst_stride[d] || a.src_stride[d] || a.valid_begin[d] ||
                a.valid_end[d]) {
              return false;
            }
          }
          return true;
        } else if constexpr (std::is_same_v<T, MmadArgs>) {
          return reg_ok(a.a.reg) && reg_ok(a.b.reg) && reg_ok(a.c.reg);
        } else if constexpr (std::is_same_v<T, VectorArgs>) {
          const VectorOperandUse u = vector_operand_use(in.op);
          return reg_ok(a.dst.addr.reg) &&
                 (u.src0 ? reg_ok(a.src0.addr.reg) : a.src0 == VecOperand{}) &&
                 (u.src1 ? reg_ok(a.src1.addr.reg) : a.src1 == VecOperand{}) &&
                 (u.scalar || float_bits(a.scalar) == 0);
        } else {
          return reg_ok(a.dst.reg) && reg_ok(a.src.reg);  // Load2d, Img2col, Fix
        }
      },
      in.args);
}

bool dma_full_window(const DmaArgs& a) {
  for (int d = 0; d < a.ndims; ++d) {
    if (a.valid_begin[d] != 0 || a.valid_end[d] != a.extent[d]) return false;
  }
  return true;
}

bool img2col_default_geometry(const Img2colArgs& a) {
  return a.stride_h == 1 && a.stride_w == 1 && a.dilation_h == 1 && a.dilation_w == 1 &&
         a.pad_top == 0 && a.pad_left == 0;
}

void write_compact(Writer& w, const Instruction& in) {
  std::visit(
      [&](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, ScalarArgs>) {
          switch (in.op) {
            case Opcode::li:
              w.u8(a.rd), w.svar(a.imm);
              break;
            case Opcode::addi:
            case Opcode::muli:
              w.u8(a.rd), w.u8(a.rs), w.svar(a.imm);
              break;
            case Opcode::add:
            case Opcode::sub:
            case Opcode::mul:
              w.u8(a.rd), w.u8(a.rs), w.u8(a.rt);
              break;
            case Opcode::blt:
              w.u8(a.rs), w.u8(a.rt), w.uvar(static_cast<uint64_t>(a.target));
              break;
            case Opcode::blti:
              w.u8(a.rs), w.svar(a.imm), w.uvar(static_cast<uint64_t>(a.target));
              break;
            case Opcode::jmp:
              w.uvar(static_cast<uint64_t>(a.target));
              break;
            default:
              break;
          }
        } else if constexpr (std::is_same_v<T, SyncArgs>) {
          w.u8(static_cast<uint8_t>(static_cast<uint8_t>(a.src) |
                                    (static_cast<uint8_t>(a.dst) << 3)));
          w.u8(a.event);
        } else if constexpr (std::is_same_v<T, DmaArgs>) {
          const bool valid = !dma_full_window(a);
          const bool pad = float_bits(a.pad_value) != 0;
          w.u8(static_cast<uint8_t>(static_cast<uint8_t>(a.dtype) | ((a.ndims - 1) << 1) |
                                    (valid << 3) | (pad << 4)));
          w.mem_compact(a.dst);
          w.mem_compact(a.src);
          for (int d = 0; d < a.ndims; ++d) {
            w.uvar(a.extent[d]);
            w.svar(a.dst_stride[d]);
            w.svar(a.src_stride[d]);
          }
          if (valid) {
            for (int d = 0; d < a.ndims; ++d) {
              w.uvar(a.valid_begin[d]);
              w.uvar(a.valid_end[d]);
            }
          }
          if (pad) w.f32(a.pad_value);
        } else if constexpr (std::is_same_v<T, Load2dArgs>) {
          w.u8(static_cast<uint8_t>(static_cast<uint8_t>(a.dtype) | (a.transpose << 1)));
          w.mem_compact(a.dst);
          w.mem_compact(a.src);
          w.uvar(a.rows);
          w.uvar(a.cols);
          w.svar(a.src_row_stride);
        } else if constexpr (std::is_same_v<T, Img2colArgs>) {
          const bool geom = !img2col_default_geometry(a);
          const bool c0 = a.c0 != 0;
          w.u8(static_cast<uint8_t>(static_cast<uint8_t>(a.dtype) | (geom << 1) | (c0 << 2)));
          w.mem_compact(a.dst);
          w.mem_compact(a.src);
          for (uint32_t v : {a.c, a.h, a.w, a.kh, a.kw, a.oh, a.ow}) w.uvar(v);
          if (geom) {
            for (uint32_t v : {a.stride_h, a.stride_w, a.dilation_h, a.dilation_w}) w.uvar(v);
            w.svar(a.pad_top);
            w.svar(a.pad_left);
          }
          if (c0) w.uvar(a.c0);
        } else if constexpr (std::is_same_v<T, MmadArgs>) {
          w.u8(a.accumulate ? 1 : 0);
          w.mem_compact(a.c);
          w.mem_compact(a.a);
          w.mem_compact(a.b);
          w.uvar(a.m1);
          w.uvar(a.k1);
          w.uvar(a.n1);
        } else if constexpr (std::is_same_v<T, FixArgs>) {
          w.u8(static_cast<uint8_t>(static_cast<uint8_t>(a.dst_dtype) | (a.relu << 1)));
          w.mem_compact(a.dst);
          w.mem_compact(a.src);
          w.uvar(a.m);
          w.uvar(a.n);
          w.svar(a.dst_row_stride);
        } else {
          const VectorOperandUse u = vector_operand_use(in.op);
          w.u8(static_cast<uint8_t>(static_cast<uint8_t>(a.dtype) | ((a.repeat != 1) << 1)));
          w.vec_compact(a.dst);
          if (u.src0) w.vec_compact(a.src0);
          if (u.src1) w.vec_compact(a.src1);
          w.uvar(a.count);
          if (a.repeat != 1) w.uvar(a.repeat);
          if (u.scalar) w.f32(a.scalar);
        }
      },
      in.args);
}

// The full form: the args alternative index, then every field of it.
void write_full(Writer& w, const Instruction& in) {
  w.u8(static_cast<uint8_t>(in.args.index()));
  std::visit(
      [&](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, ScalarArgs>) {
          w.u8(a.rd), w.u8(a.rs), w.u8(a.rt), w.svar(a.imm), w.svar(a.target);
        } else if constexpr (std::is_same_v<T, SyncArgs>) {
          w.u8(static_cast<uint8_t>(a.src)), w.u8(static_cast<uint8_t>(a.dst)), w.u8(a.event);
        } else if constexpr (std::is_same_v<T, DmaArgs>) {
          w.u8(static_cast<uint8_t>(a.dtype));
          w.mem_full(a.dst);
          w.mem_full(a.src);
          w.u8(a.ndims);
          for (int d = 0; d < kMaxDmaDims; ++d) {
            w.uvar(a.extent[d]);
            w.svar(a.dst_stride[d]);
            w.svar(a.src_stride[d]);
            w.uvar(a.valid_begin[d]);
            w.uvar(a.valid_end[d]);
          }
          w.f32(a.pad_value);
        } else if constexpr (std::is_same_v<T, Load2dArgs>) {
          w.u8(static_cast<uint8_t>(a.dtype));
          w.mem_full(a.dst);
          w.mem_full(a.src);
          w.uvar(a.rows), w.uvar(a.cols), w.svar(a.src_row_stride), w.u8(a.transpose);
        } else if constexpr (std::is_same_v<T, Img2colArgs>) {
          w.u8(static_cast<uint8_t>(a.dtype));
          w.mem_full(a.dst);
          w.mem_full(a.src);
          for (uint32_t v :
               {a.c, a.h, a.w, a.kh, a.kw, a.stride_h, a.stride_w, a.dilation_h, a.dilation_w}) {
            w.uvar(v);
          }
          w.svar(a.pad_top), w.svar(a.pad_left), w.uvar(a.oh), w.uvar(a.ow), w.uvar(a.c0);
        } else if constexpr (std::is_same_v<T, MmadArgs>) {
          w.mem_full(a.c);
          w.mem_full(a.a);
          w.mem_full(a.b);
          w.uvar(a.m1), w.uvar(a.k1), w.uvar(a.n1), w.u8(a.accumulate);
        } else if constexpr (std::is_same_v<T, FixArgs>) {
          w.u8(static_cast<uint8_t>(a.dst_dtype));
          w.mem_full(a.dst);
          w.mem_full(a.src);
          w.uvar(a.m), w.uvar(a.n), w.svar(a.dst_row_stride), w.u8(a.relu);
        } else {
          w.u8(static_cast<uint8_t>(a.dtype));
          w.vec_full(a.dst);
          w.vec_full(a.src0);
          w.vec_full(a.src1);
          w.uvar(a.count), w.uvar(a.repeat), w.f32(a.scalar);
        }
      },
      in.args);
}

// ------------------------------------------------------------------------------------------------
// Reader
// ------------------------------------------------------------------------------------------------

class Reader {
 public:
  Reader(const std::vector<uint8_t>& bytes, std::size_t end, const std::string& source)
      : d_(bytes.data()), end_(end), source_(source) {}

  std::size_t pos() const { return pos_; }
  std::size_t remaining() const { return end_ - pos_; }

  template <class... A>
  [[noreturn]] void corrupt(std::size_t offset, fmt::format_string<A...> f, A&&... a) const {
    fail("{}: offset {}: {}", source_, offset, fmt::format(f, std::forward<A>(a)...));
  }
  [[noreturn]] void truncated(const char* what) const {
    corrupt(pos_,
            "truncated or corrupt image: expected {}, but the data before the 4-byte CRC-32 "
            "trailer ends at byte {}",
            what, end_);
  }

  uint8_t u8(const char* what) {
    if (pos_ >= end_) truncated(what);
    return d_[pos_++];
  }
  uint64_t uvar(const char* what) {
    const std::size_t start = pos_;
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      if (pos_ >= end_) truncated(what);
      const uint8_t b = d_[pos_++];
      if (shift == 63 && b > 1) corrupt(start, "varint for {} overflows 64 bits", what);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    return v;
  }
  int64_t svar(const char* what) { return unzigzag(uvar(what)); }
  uint32_t u32v(const char* what) {
    const std::size_t start = pos_;
    const uint64_t v = uvar(what);
    if (v > std::numeric_limits<uint32_t>::max()) {
      corrupt(start, "{} = {} does not fit 32 bits", what, v);
    }
    return static_cast<uint32_t>(v);
  }
  int32_t i32v(const char* what) {
    const std::size_t start = pos_;
    const int64_t v = svar(what);
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
      corrupt(start, "{} = {} does not fit a signed 32-bit value", what, v);
    }
    return static_cast<int32_t>(v);
  }
  uint32_t u32le(const char* what) {
    if (remaining() < 4) truncated(what);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(d_[pos_ + i]) << (8 * i);
    pos_ += 4;
    return v;
  }
  float f32(const char* what) {
    const uint32_t b = u32le(what);
    float v;
    std::memcpy(&v, &b, 4);
    return v;
  }
  bool boolean(const char* what) {
    const std::size_t start = pos_;
    const uint8_t v = u8(what);
    if (v > 1) corrupt(start, "{} = {} is not 0 or 1", what, v);
    return v != 0;
  }
  // A count of items that each take at least one byte: bounded by the bytes left.
  uint64_t count(const char* what) {
    const std::size_t start = pos_;
    const uint64_t n = uvar(what);
    if (n > remaining()) {
      corrupt(start, "{} = {} exceeds the {} bytes left in the image", what, n, remaining());
    }
    return n;
  }
  std::string str(const char* what) {
    const uint64_t n = count(what);
    std::string s(reinterpret_cast<const char*>(d_ + pos_), n);
    pos_ += n;
    return s;
  }
  Scope scope(uint8_t v, std::size_t at) const {
    if (v >= kNumScopes)
      corrupt(at, "invalid memory scope value {} (expected 0..{})", v, kNumScopes - 1);
    return static_cast<Scope>(v);
  }
  DType dtype(uint8_t v, std::size_t at) const {
    if (v > 1) corrupt(at, "invalid dtype value {} (expected 0 = f16 or 1 = f32)", v);
    return static_cast<DType>(v);
  }
  Pipe pipe(uint8_t v, std::size_t at) const {
    if (v >= kNumPipes) corrupt(at, "invalid pipe value {} (expected 0..{})", v, kNumPipes - 1);
    return static_cast<Pipe>(v);
  }
  uint8_t reg_compact(const char* what) {
    const std::size_t at = pos_;
    const uint8_t r = u8(what);
    if (r >= kNumRegs) corrupt(at, "register {} out of range in a compact form (x0..x31)", r);
    return r;
  }
  MemRef mem_compact() {
    const std::size_t at = pos_;
    const uint8_t b = u8("a memory operand");
    MemRef m;
    m.scope = scope(b & 7, at);
    m.reg = static_cast<uint8_t>(b >> 3);
    m.offset = svar("a memory offset");
    return m;
  }
  MemRef mem_full() {
    MemRef m;
    const std::size_t at = pos_;
    m.scope = scope(u8("a memory scope"), at);
    m.reg = u8("a register");
    m.offset = svar("a memory offset");
    return m;
  }
  VecOperand vec(bool compact) {
    VecOperand v;
    v.addr = compact ? mem_compact() : mem_full();
    v.elem_stride = i32v("an element stride");
    v.repeat_stride = i32v("a repeat stride");
    return v;
  }
  // Flag byte whose bits above `used_bits` must be zero.
  uint8_t flags(int used_bits, const char* what) {
    const std::size_t at = pos_;
    const uint8_t f = u8(what);
    if (f >> used_bits) corrupt(at, "{} = {:#04x} sets reserved bits", what, f);
    return f;
  }

 private:
  const uint8_t* d_;
  std::size_t pos_ = 0, end_;
  const std::string& source_;
};

void read_compact(Reader& r, Instruction& in) {
  switch (args_index(in.op)) {
    case 0: {
      ScalarArgs a;
      auto target = [&] {
        const std::size_t at = r.pos();
        const uint64_t t = r.uvar("a branch target");
        if (t > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
          r.corrupt(at, "branch target {} does not fit 31 bits", t);
        }
        return static_cast<int32_t>(t);
      };
      switch (in.op) {
        case Opcode::li:
          a.rd = r.reg_compact("rd"), a.imm = r.svar("imm");
          break;
        case Opcode::addi:
        case Opcode::muli:
          a.rd = r.reg_compact("rd"), a.rs = r.reg_compact("rs"), a.imm = r.svar("imm");
          break;
        case Opcode::add:
        case Opcode::sub:
        case Opcode::mul:
          a.rd = r.reg_compact("rd"), a.rs = r.reg_compact("rs"), a.rt = r.reg_compact("rt");
          break;
        case Opcode::blt:
          a.rs = r.reg_compact("rs"), a.rt = r.reg_compact("rt"), a.target = target();
          break;
        case Opcode::blti:
          a.rs = r.reg_compact("rs"), a.imm = r.svar("imm"), a.target = target();
          break;
        case Opcode::jmp:
          a.target = target();
          break;
        default:
          break;
      }
      in.args = a;
      break;
    }
    case 1: {
      SyncArgs a;
      const std::size_t at = r.pos();
      const uint8_t b = r.flags(6, "the sync pipe byte");
      a.src = r.pipe(b & 7, at);
      a.dst = r.pipe(b >> 3, at);
      a.event = r.u8("an event id");
      in.args = a;
      break;
    }
    case 2: {
      DmaArgs a;
      const std::size_t at = r.pos();
      const uint8_t f = r.flags(5, "the dma flag byte");
      a.dtype = r.dtype(f & 1, at);
      a.ndims = static_cast<uint8_t>(((f >> 1) & 3) + 1);
      a.dst = r.mem_compact();
      a.src = r.mem_compact();
      for (int d = 0; d < a.ndims; ++d) {
        a.extent[d] = r.u32v("an extent");
        a.dst_stride[d] = r.svar("a dst stride");
        a.src_stride[d] = r.svar("a src stride");
        a.valid_end[d] = a.extent[d];
      }
      if (f & 8) {
        for (int d = 0; d < a.ndims; ++d) {
          a.valid_begin[d] = r.u32v("a valid-window begin");
          a.valid_end[d] = r.u32v("a valid-window end");
        }
      }
      if (f & 16) a.pad_value = r.f32("the pad value");
      in.args = a;
      break;
    }
    case 3: {
      Load2dArgs a;
      const std::size_t at = r.pos();
      const uint8_t f = r.flags(2, "the load2d flag byte");
      a.dtype = r.dtype(f & 1, at);
      a.transpose = (f & 2) != 0;
      a.dst = r.mem_compact();
      a.src = r.mem_compact();
      a.rows = r.u32v("rows");
      a.cols = r.u32v("cols");
      a.src_row_stride = r.svar("src_row_stride");
      in.args = a;
      break;
    }
    case 4: {
      Img2colArgs a;
      const std::size_t at = r.pos();
      const uint8_t f = r.flags(3, "the img2col flag byte");
      a.dtype = r.dtype(f & 1, at);
      a.dst = r.mem_compact();
      a.src = r.mem_compact();
      for (uint32_t* v : {&a.c, &a.h, &a.w, &a.kh, &a.kw, &a.oh, &a.ow})
        *v = r.u32v("an img2col size");
      if (f & 2) {
        for (uint32_t* v : {&a.stride_h, &a.stride_w, &a.dilation_h, &a.dilation_w}) {
          *v = r.u32v("an img2col stride or dilation");
        }
        a.pad_top = r.i32v("pad_top");
        a.pad_left = r.i32v("pad_left");
      }
      if (f & 4) a.c0 = r.u32v("c0");
      in.args = a;
      break;
    }
    case 5: {
      MmadArgs a;
      a.accumulate = r.flags(1, "the mmad flag byte") != 0;
      a.c = r.mem_compact();
      a.a = r.mem_compact();
      a.b = r.mem_compact();
      a.m1 = r.u32v("m1");
      a.k1 = r.u32v("k1");
      a.n1 = r.u32v("n1");
      in.args = a;
      break;
    }
    case 6: {
      FixArgs a;
      const std::size_t at = r.pos();
      const uint8_t f = r.flags(2, "the fix flag byte");
      a.dst_dtype = r.dtype(f & 1, at);
      a.relu = (f & 2) != 0;
      a.dst = r.mem_compact();
      a.src = r.mem_compact();
      a.m = r.u32v("m");
      a.n = r.u32v("n");
      a.dst_row_stride = r.svar("dst_row_stride");
      in.args = a;
      break;
    }
    default: {
      VectorArgs a;
      const VectorOperandUse u = vector_operand_use(in.op);
      const std::size_t at = r.pos();
      const uint8_t f = r.flags(2, "the vector flag byte");
      a.dtype = r.dtype(f & 1, at);
      a.dst = r.vec(true);
      if (u.src0) a.src0 = r.vec(true);
      if (u.src1) a.src1 = r.vec(true);
      a.count = r.u32v("count");
      if (f & 2) a.repeat = r.u32v("repeat");
      if (u.scalar) a.scalar = r.f32("the scalar");
      in.args = a;
      break;
    }
  }
}

void read_full(Reader& r, Instruction& in) {
  const std::size_t at = r.pos();
  const uint8_t k = r.u8("the operand class");
  switch (k) {
    case 0: {
      ScalarArgs a;
      a.rd = r.u8("rd"), a.rs = r.u8("rs"), a.rt = r.u8("rt");
      a.imm = r.svar("imm");
      a.target = r.i32v("target");
      in.args = a;
      break;
    }
    case 1: {
      SyncArgs a;
      std::size_t p = r.pos();
      a.src = r.pipe(r.u8("the source pipe"), p);
      p = r.pos();
      a.dst = r.pipe(r.u8("the destination pipe"), p);
      a.event = r.u8("an event id");
      in.args = a;
      break;
    }
    case 2: {
      DmaArgs a;
      const std::size_t p = r.pos();
      a.dtype = r.dtype(r.u8("a dtype"), p);
      a.dst = r.mem_full();
      a.src = r.mem_full();
      a.ndims = r.u8("ndims");
      for (int d = 0; d < kMaxDmaDims; ++d) {
        a.extent[d] = r.u32v("an extent");
        a.dst_stride[d] = r.svar("a dst stride");
        a.src_stride[d] = r.svar("a src stride");
        a.valid_begin[d] = r.u32v("a valid-window begin");
        a.valid_end[d] = r.u32v("a valid-window end");
      }
      a.pad_value = r.f32("the pad value");
      in.args = a;
      break;
    }
    case 3: {
      Load2dArgs a;
      const std::size_t p = r.pos();
      a.dtype = r.dtype(r.u8("a dtype"), p);
      a.dst = r.mem_full();
      a.src = r.mem_full();
      a.rows = r.u32v("rows");
      a.cols = r.u32v("cols");
      a.src_row_stride = r.svar("src_row_stride");
      a.transpose = r.boolean("transpose");
      in.args = a;
      break;
    }
    case 4: {
      Img2colArgs a;
      const std::size_t p = r.pos();
      a.dtype = r.dtype(r.u8("a dtype"), p);
      a.dst = r.mem_full();
      a.src = r.mem_full();
      for (uint32_t* v : {&a.c, &a.h, &a.w, &a.kh, &a.kw, &a.stride_h, &a.stride_w, &a.dilation_h,
                          &a.dilation_w}) {
        *v = r.u32v("an img2col size");
      }
      a.pad_top = r.i32v("pad_top");
      a.pad_left = r.i32v("pad_left");
      a.oh = r.u32v("oh");
      a.ow = r.u32v("ow");
      a.c0 = r.u32v("c0");
      in.args = a;
      break;
    }
    case 5: {
      MmadArgs a;
      a.c = r.mem_full();
      a.a = r.mem_full();
      a.b = r.mem_full();
      a.m1 = r.u32v("m1");
      a.k1 = r.u32v("k1");
      a.n1 = r.u32v("n1");
      a.accumulate = r.boolean("acc");
      in.args = a;
      break;
    }
    case 6: {
      FixArgs a;
      const std::size_t p = r.pos();
      a.dst_dtype = r.dtype(r.u8("a dtype"), p);
      a.dst = r.mem_full();
      a.src = r.mem_full();
      a.m = r.u32v("m");
      a.n = r.u32v("n");
      a.dst_row_stride = r.svar("dst_row_stride");
      a.relu = r.boolean("relu");
      in.args = a;
      break;
    }
    case 7: {
      VectorArgs a;
      const std::size_t p = r.pos();
      a.dtype = r.dtype(r.u8("a dtype"), p);
      a.dst = r.vec(false);
      a.src0 = r.vec(false);
      a.src1 = r.vec(false);
      a.count = r.u32v("count");
      a.repeat = r.u32v("repeat");
      a.scalar = r.f32("the scalar");
      in.args = a;
      break;
    }
    default:
      r.corrupt(at, "invalid operand class {} (expected 0..7)", k);
  }
}

}  // namespace

std::vector<uint8_t> encode(const Program& program) {
  std::vector<uint8_t> out;
  Writer w(out);
  for (uint8_t b : kEncodingMagic) w.u8(b);
  w.u8(kEncodingVersion);
  w.uvar(program.cores.size());
  w.str(program.name);
  w.uvar(program.gm_bytes);
  w.uvar(program.op_names.size());
  for (const std::string& s : program.op_names) w.str(s);
  w.uvar(program.buffers.size());
  for (const GmBuffer& b : program.buffers) {
    if (static_cast<int>(b.kind) > static_cast<int>(GmKind::scratch)) {
      fail("encode: buffer '{}' has an invalid kind value {}", b.name, static_cast<int>(b.kind));
    }
    if (static_cast<int>(b.dtype) > static_cast<int>(DType::f32)) {
      fail("encode: buffer '{}' has an invalid dtype value {}", b.name, static_cast<int>(b.dtype));
    }
    w.str(b.name);
    w.u8(static_cast<uint8_t>(b.kind));
    w.uvar(b.address);
    w.uvar(b.bytes);
    w.u8(static_cast<uint8_t>(b.dtype));
    w.uvar(b.shape.size());
    for (int64_t d : b.shape) w.svar(d);
    w.uvar(b.init.size());
    out.insert(out.end(), b.init.begin(), b.init.end());
  }
  for (std::size_t c = 0; c < program.cores.size(); ++c) {
    const auto& stream = program.cores[c];
    w.uvar(stream.size());
    int64_t prev_op = -1;
    for (std::size_t i = 0; i < stream.size(); ++i) {
      const Instruction& in = stream[i];
      if (const std::string bad = invalid_enum_field(in); !bad.empty()) {
        fail("encode: core {}, instruction {}: {}", c, i, bad);
      }
      const bool compact = compact_ok(in);
      const bool op_changes = in.op_index != prev_op;
      w.u8(static_cast<uint8_t>(static_cast<uint8_t>(in.op) | (op_changes ? kOpIndexFlag : 0) |
                                (compact ? 0 : kFullFormFlag)));
      if (op_changes) w.svar(in.op_index - prev_op);
      prev_op = in.op_index;
      if (compact)
        write_compact(w, in);
      else
        write_full(w, in);
    }
  }
  w.u32le(crc32(out.data(), out.size()));
  return out;
}

Program decode(const std::vector<uint8_t>& bytes, const std::string& source_name) {
  // The last 4 bytes are the CRC-32 trailer; the structure is decoded first, so corrupt fields are
  // reported at their own offset, and the checksum catches what the structure cannot.
  Reader header(bytes, bytes.size(), source_name);
  for (std::size_t i = 0; i < 4; ++i) {
    if (header.u8("the magic bytes \"TSNP\"") != kEncodingMagic[i]) {
      header.corrupt(i, "not a tessel program image (expected magic bytes \"TSNP\")");
    }
  }
  const uint8_t version = header.u8("the format version");
  if (version != kEncodingVersion) {
    header.corrupt(4, "unsupported format version {} (this build reads version {})", version,
                   kEncodingVersion);
  }
  if (bytes.size() < 9) {
    header.corrupt(bytes.size(),
                   "truncated image: {} bytes cannot hold the header and the CRC-32 trailer",
                   bytes.size());
  }
  Reader r(bytes, bytes.size() - 4, source_name);
  for (int i = 0; i < 5; ++i) r.u8("the header");
  Program p;
  p.cores.resize(r.count("the core count"));
  p.name = r.str("the program name");
  p.gm_bytes = r.uvar("gm_bytes");
  p.op_names.resize(r.count("the op name count"));
  for (std::string& s : p.op_names) s = r.str("an op name");
  p.buffers.resize(r.count("the buffer count"));
  for (GmBuffer& b : p.buffers) {
    b.name = r.str("a buffer name");
    std::size_t at = r.pos();
    const uint8_t kind = r.u8("a buffer kind");
    if (kind > static_cast<uint8_t>(GmKind::scratch)) {
      r.corrupt(at, "invalid buffer kind value {} (expected 0..3)", kind);
    }
    b.kind = static_cast<GmKind>(kind);
    b.address = r.uvar("a buffer address");
    b.bytes = r.uvar("a buffer size");
    at = r.pos();
    b.dtype = r.dtype(r.u8("a buffer dtype"), at);
    b.shape.resize(r.count("a buffer rank"));
    for (int64_t& d : b.shape) d = r.svar("a buffer dimension");
    const uint64_t n = r.count("the init byte count");
    b.init.assign(bytes.begin() + static_cast<std::ptrdiff_t>(r.pos()),
                  bytes.begin() + static_cast<std::ptrdiff_t>(r.pos() + n));
    for (uint64_t i = 0; i < n; ++i) r.u8("init data");
  }
  for (auto& stream : p.cores) {
    stream.resize(r.count("an instruction count"));
    int64_t prev_op = -1;
    for (Instruction& in : stream) {
      const std::size_t at = r.pos();
      const uint8_t b = r.u8("an opcode byte");
      const uint8_t op = b & kOpcodeMask;
      if (op >= kNumOpcodes)
        r.corrupt(at, "invalid opcode {} (expected 0..{})", op, kNumOpcodes - 1);
      in.op = static_cast<Opcode>(op);
      if (b & kOpIndexFlag) {
        const std::size_t dat = r.pos();
        const int64_t v = prev_op + r.svar("an op_index delta");
        if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
          r.corrupt(dat, "op_index {} does not fit a signed 32-bit value", v);
        }
        in.op_index = static_cast<int32_t>(v);
      } else {
        in.op_index = static_cast<int32_t>(prev_op);
      }
      prev_op = in.op_index;
      if (b & kFullFormFlag)
        read_full(r, in);
      else
        read_compact(r, in);
    }
  }
  if (r.remaining() != 0) {
    r.corrupt(r.pos(), "{} unexpected bytes after the last instruction stream", r.remaining());
  }
  const std::size_t crc_at = bytes.size() - 4;
  uint32_t stored = 0;
  for (int i = 0; i < 4; ++i) stored |= static_cast<uint32_t>(bytes[crc_at + i]) << (8 * i);
  const uint32_t actual = crc32(bytes.data(), crc_at);
  if (stored != actual) {
    r.corrupt(
        crc_at,
        "CRC-32 mismatch: trailer holds {:#010x}, the data hashes to {:#010x} (corrupt image)",
        stored, actual);
  }
  return p;
}

}  // namespace tessel::isa
