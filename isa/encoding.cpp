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
#include "isa/operand_classes.h"

namespace tessel::isa {

namespace {

constexpr uint8_t kOpIndexFlag = 0x40;   // opcode byte: an op_index delta follows
constexpr uint8_t kFullFormFlag = 0x80;  // opcode byte: the full form follows
constexpr uint8_t kOpcodeMask = 0x3f;
static_assert(kNumOpcodes <= kOpcodeMask + 1, "opcode no longer fits the 6-bit opcode field");

using opclass::float_bits;

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
// Instructions, from their records and operand classes (isa/operand_classes.h): the flag byte,
// the compact payload and the full form are written per value kind, never per opcode.
// ------------------------------------------------------------------------------------------------

namespace oc = opclass;

template <class D>
using kind_of = typename std::decay_t<D>::kind_type;

bool dma_full_window(const DmaArgs& a) {
  for (int d = 0; d < a.ndims; ++d) {
    if (a.valid_begin[d] != 0 || a.valid_end[d] != a.extent[d]) return false;
  }
  return true;
}

// Whether a used field's value fits the compact form (registers < 32, targets >= 0, dma dims
// 1..4 with zero entries past ndims).
template <class K, class T>
bool compact_value_ok(const T& v) {
  if constexpr (std::is_same_v<K, oc::kind::Reg>) {
    return v < kNumRegs;
  } else if constexpr (oc::kIsMemory<K>) {
    return oc::mem_ref(v).reg < kNumRegs;
  } else if constexpr (std::is_same_v<K, oc::kind::Target>) {
    return v >= 0;
  } else if constexpr (std::is_same_v<K, oc::kind::DmaDims>) {
    if (v.ndims < 1 || v.ndims > kMaxDmaDims) return false;
    for (int d = v.ndims; d < kMaxDmaDims; ++d) {
      if (v.extent[d] || v.dst_stride[d] || v.src_stride[d] || v.valid_begin[d] || v.valid_end[d])
        return false;
    }
    return true;
  } else {
    return true;
  }
}

// The compact form carries an instruction of opcode `op` with operands `a` of its opcode's class
// when every field it does not use is at its default and every used one fits.
template <class A>
bool compact_ok(Opcode op, const A& a) {
  bool ok = true;
  oc::for_each_field_indexed<A>([&](const auto& d, int i) {
    if (!ok) return;
    ok = oc::field_used(op, i) ? compact_value_ok<kind_of<decltype(d)>>(d.get(a))
                               : oc::is_default(d, a);
  });
  return ok;
}

// The value of a flag-bit field in the flag byte.
template <class K, class T>
uint32_t flag_value(const T& v) {
  if constexpr (std::is_same_v<K, oc::kind::DmaDims>) {
    return static_cast<uint32_t>(v.ndims - 1) | (dma_full_window(v) ? 0u : 4u);
  } else {
    return static_cast<uint32_t>(v);
  }
}

// The payload of one value of kind K in the compact (`compact`) or the full form.
template <class K, class T>
void write_value(Writer& w, const T& v, bool compact) {
  if constexpr (std::is_same_v<K, oc::kind::Reg> || std::is_same_v<K, oc::kind::U8>) {
    w.u8(v);
  } else if constexpr (std::is_same_v<K, oc::kind::Bool> || std::is_same_v<K, oc::kind::PipeName> ||
                       std::is_same_v<K, oc::kind::DTypeSuffix>) {
    w.u8(static_cast<uint8_t>(v));  // full form only: the compact form has them in flag bits
  } else if constexpr (std::is_same_v<K, oc::kind::DTypeKey>) {
    w.u8(static_cast<uint8_t>(v));  // both forms
  } else if constexpr (std::is_same_v<K, oc::kind::Target>) {
    if (compact)
      w.uvar(static_cast<uint64_t>(v));
    else
      w.svar(v);
  } else if constexpr (std::is_same_v<K, oc::kind::I64> || std::is_same_v<K, oc::kind::I32>) {
    w.svar(v);
  } else if constexpr (std::is_same_v<K, oc::kind::U32>) {
    w.uvar(v);
  } else if constexpr (std::is_same_v<K, oc::kind::F32>) {
    w.f32(v);
  } else if constexpr (std::is_same_v<K, oc::kind::Mem>) {
    compact ? w.mem_compact(v) : w.mem_full(v);
  } else if constexpr (std::is_same_v<K, oc::kind::Vec>) {
    compact ? w.vec_compact(v) : w.vec_full(v);
  } else if constexpr (std::is_same_v<K, oc::kind::DmaDims>) {
    // Compact: ndims entries, the valid window only when it is not the full one (flag bit).
    // Full: ndims, then every entry of every list.
    if (!compact) w.u8(v.ndims);
    const int n = compact ? v.ndims : kMaxDmaDims;
    const bool window = !compact || !dma_full_window(v);
    for (int d = 0; d < n; ++d) {
      w.uvar(v.extent[d]);
      w.svar(v.dst_stride[d]);
      w.svar(v.src_stride[d]);
      if (!compact) w.uvar(v.valid_begin[d]), w.uvar(v.valid_end[d]);
    }
    if (compact && window) {
      for (int d = 0; d < n; ++d) w.uvar(v.valid_begin[d]), w.uvar(v.valid_end[d]);
    }
  } else {
    static_assert(K::full == oc::kind::Wire::none, "a value kind without a binary form");
  }
}

template <class A>
void write_compact(Writer& w, Opcode op, const A& a) {
  std::array<bool, 8> present{};  // optional groups 1..7 with a field off its default
  if constexpr (oc::flag_byte_bits<A>() > 0) {
    static_assert(oc::flag_byte_bits<A>() <= 8, "the flag byte overflows");
    uint32_t flags = 0;
    int bit = 0;
    oc::for_each_field<A>([&](const auto& d) {
      using K = kind_of<decltype(d)>;
      if constexpr (K::flag_bits > 0) {
        flags |= flag_value<K>(d.get(a)) << bit;
        bit += K::flag_bits;
      }
      if (d.group != 0 && !oc::is_default(d, a)) present[d.group] = true;
    });
    for (int g = 1; g <= oc::num_groups<A>(); ++g) flags |= uint32_t{present[g]} << bit++;
    w.u8(static_cast<uint8_t>(flags));
  }
  oc::for_each_field_compact<A>([&](const auto& d, int i) {
    using K = kind_of<decltype(d)>;
    if constexpr (K::compact != oc::kind::Wire::none) {
      if (oc::field_used(op, i) && (d.group == 0 || present[d.group]))
        write_value<K>(w, d.get(a), true);
    }
  });
}

// The full form: the args alternative index, then every field of it in table order.
void write_full(Writer& w, const Instruction& in) {
  w.u8(static_cast<uint8_t>(in.args.index()));
  std::visit(
      [&](const auto& a) {
        using A = std::decay_t<decltype(a)>;
        oc::for_each_field<A>(
            [&](const auto& d) { write_value<kind_of<decltype(d)>>(w, d.get(a), false); });
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
    if (v >= kNumDTypes) {
      std::string expected;
      for (int t = 0; t < kNumDTypes; ++t)
        expected += fmt::format("{}{} = {}", t ? " or " : "", t, dtype_name(static_cast<DType>(t)));
      corrupt(at, "invalid dtype value {} (expected {})", v, expected);
    }
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

// A flag-bit field's value from its bits of the flag byte (read at `at`).
template <class K, class T>
void read_flag_value(Reader& r, std::size_t at, uint32_t bits, T& v) {
  if constexpr (std::is_same_v<K, oc::kind::Bool>) {
    v = bits != 0;
  } else if constexpr (std::is_same_v<K, oc::kind::PipeName>) {
    v = r.pipe(static_cast<uint8_t>(bits), at);
  } else if constexpr (std::is_same_v<K, oc::kind::DTypeSuffix>) {
    v = r.dtype(static_cast<uint8_t>(bits), at);
  } else if constexpr (std::is_same_v<K, oc::kind::DmaDims>) {
    v.ndims = static_cast<uint8_t>((bits & 3) + 1);
  }
}

// Reads one value of kind K of field `d` in the compact (`compact`; `flag_bits` are the field's
// bits of the flag byte) or the full form.
template <class K, class D, class T>
void read_value(Reader& r, const D& d, T& v, bool compact, uint32_t flag_bits = 0) {
  const char* what = field_name(d.name);
  if constexpr (std::is_same_v<K, oc::kind::Reg>) {
    v = compact ? r.reg_compact(what) : r.u8(what);
  } else if constexpr (std::is_same_v<K, oc::kind::U8>) {
    v = r.u8(what);
  } else if constexpr (std::is_same_v<K, oc::kind::Bool>) {  // full form only (as below)
    v = r.boolean(what);
  } else if constexpr (std::is_same_v<K, oc::kind::PipeName>) {
    const std::size_t at = r.pos();
    v = r.pipe(r.u8(what), at);
  } else if constexpr (std::is_same_v<K, oc::kind::DTypeSuffix> ||
                       std::is_same_v<K, oc::kind::DTypeKey>) {
    const std::size_t at = r.pos();
    v = r.dtype(r.u8("a dtype"), at);
  } else if constexpr (std::is_same_v<K, oc::kind::Target>) {
    if (!compact) {
      v = r.i32v(what);
      return;
    }
    const std::size_t at = r.pos();
    const uint64_t t = r.uvar("a branch target");
    if (t > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      r.corrupt(at, "branch target {} does not fit 31 bits", t);
    }
    v = static_cast<int32_t>(t);
  } else if constexpr (std::is_same_v<K, oc::kind::I64>) {
    v = r.svar(what);
  } else if constexpr (std::is_same_v<K, oc::kind::I32>) {
    v = r.i32v(what);
  } else if constexpr (std::is_same_v<K, oc::kind::U32>) {
    v = r.u32v(what);
  } else if constexpr (std::is_same_v<K, oc::kind::F32>) {
    v = r.f32(what);
  } else if constexpr (std::is_same_v<K, oc::kind::Mem>) {
    v = compact ? r.mem_compact() : r.mem_full();
  } else if constexpr (std::is_same_v<K, oc::kind::Vec>) {
    v = r.vec(compact);
  } else if constexpr (std::is_same_v<K, oc::kind::DmaDims>) {
    // The inverse of write_value: compact reads ndims (from the flag bits) entries and the valid
    // window when flag bit 2 is set; full reads ndims and every entry.
    if (!compact) v.ndims = r.u8("ndims");
    const int n = compact ? v.ndims : kMaxDmaDims;
    for (int k = 0; k < n; ++k) {
      v.extent[k] = r.u32v("an extent");
      v.dst_stride[k] = r.svar("a dst stride");
      v.src_stride[k] = r.svar("a src stride");
      if (compact) {
        v.valid_end[k] = v.extent[k];
      } else {
        v.valid_begin[k] = r.u32v("a valid-window begin");
        v.valid_end[k] = r.u32v("a valid-window end");
      }
    }
    if (compact && (flag_bits & 4)) {
      for (int k = 0; k < n; ++k) {
        v.valid_begin[k] = r.u32v("a valid-window begin");
        v.valid_end[k] = r.u32v("a valid-window end");
      }
    }
  } else {
    static_assert(K::full == oc::kind::Wire::none, "a value kind without a binary form");
  }
}

// `version`: the image's; a flag-bit field newer than it has no bits in its flag byte (the bits
// after it, the groups', sit where that version put them) and keeps its default.
template <class A>
void read_compact(Reader& r, Opcode op, A& a, uint8_t version) {
  std::array<uint32_t, oc::kNumFields<A>> bits_of{};  // each flag-bit field's bits
  std::array<bool, 8> present{};
  if constexpr (oc::flag_byte_bits<A>() > 0) {
    const std::size_t at = r.pos();
    const uint32_t flags = r.flags(oc::flag_byte_bits<A>(), oc::ClassDesc<A>::flags_what);
    int bit = 0;
    oc::for_each_field_indexed<A>([&](const auto& d, int i) {
      using K = kind_of<decltype(d)>;
      if constexpr (K::flag_bits > 0) {
        if (d.since > version) return;
        bits_of[i] = (flags >> bit) & ((1u << K::flag_bits) - 1);
        read_flag_value<K>(r, at, bits_of[i], d.get(a));
        bit += K::flag_bits;
      }
    });
    for (int g = 1; g <= oc::num_groups<A>(); ++g) present[g] = (flags >> bit++) & 1;
  }
  oc::for_each_field_compact<A>([&](const auto& d, int i) {
    using K = kind_of<decltype(d)>;
    if constexpr (K::compact != oc::kind::Wire::none) {
      if (oc::field_used(op, i) && (d.group == 0 || present[d.group]))
        read_value<K>(r, d, d.get(a), true, bits_of[i]);
    }
  });
}

void read_compact(Reader& r, Instruction& in, uint8_t version) {
  oc::with_class(instr_info(in.op).cls, [&](auto t) {
    typename decltype(t)::type a{};
    read_compact(r, in.op, a, version);
    in.args = a;
  });
}

void read_full(Reader& r, Instruction& in, uint8_t version) {
  const std::size_t at = r.pos();
  const uint8_t k = r.u8("the operand class");
  if (k >= kNumArgsClasses)
    r.corrupt(at, "invalid operand class {} (expected 0..{})", k, kNumArgsClasses - 1);
  oc::with_class(static_cast<ArgsClass>(k), [&](auto t) {
    using A = typename decltype(t)::type;
    A a{};
    oc::for_each_field<A>([&](const auto& d) {
      if (d.since <= version) read_value<kind_of<decltype(d)>>(r, d, d.get(a), false);
    });
    in.args = a;
  });
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
    if (static_cast<int>(b.dtype) >= kNumDTypes) {
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
      const bool op_changes = in.op_index != prev_op;
      const bool class_ok = args_index(in.op) == in.args.index();
      std::visit(
          [&](const auto& a) {
            const bool compact = class_ok && compact_ok(in.op, a);
            w.u8(static_cast<uint8_t>(static_cast<uint8_t>(in.op) |
                                      (op_changes ? kOpIndexFlag : 0) |
                                      (compact ? 0 : kFullFormFlag)));
            if (op_changes) w.svar(in.op_index - prev_op);
            if (compact)
              write_compact(w, in.op, a);
            else
              write_full(w, in);
          },
          in.args);
      prev_op = in.op_index;
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
  if (version < kOldestReadableVersion || version > kEncodingVersion) {
    header.corrupt(4, "unsupported format version {} (this build reads versions {} to {})", version,
                   kOldestReadableVersion, kEncodingVersion);
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
      // Version 6 added l2_prefetch and l2_discard (the last opcodes).
      if (version < 6 && op >= static_cast<uint8_t>(Opcode::l2_prefetch))
        r.corrupt(at, "invalid opcode {} in a version {} image (expected 0..{})", op, version,
                  static_cast<int>(Opcode::l2_prefetch) - 1);
      // Version 8 added lbu (the scalar load of a GM byte).
      if (version < 8 && op >= static_cast<uint8_t>(Opcode::lbu))
        r.corrupt(at, "invalid opcode {} in a version {} image (expected 0..{})", op, version,
                  static_cast<int>(Opcode::lbu) - 1);
      in.op = static_cast<Opcode>(op);
      if (b & kOpIndexFlag) {
        const std::size_t dat = r.pos();
        const int64_t delta = r.svar("an op_index delta");
        // prev_op is -1 or an int32 op_index: a delta outside +-2^33 cannot give one (and adding
        // it could overflow int64, found by fuzz_decode: tests/fuzz/regressions/decode)
        const bool far = delta < -(int64_t{1} << 33) || delta > (int64_t{1} << 33);
        if (far) r.corrupt(dat, "op_index delta {} is outside +-2^33: no op_index fits", delta);
        const int64_t v = prev_op + delta;
        if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
          r.corrupt(dat, "op_index {} does not fit a signed 32-bit value", v);
        }
        in.op_index = static_cast<int32_t>(v);
      } else {
        in.op_index = static_cast<int32_t>(prev_op);
      }
      prev_op = in.op_index;
      if (b & kFullFormFlag)
        read_full(r, in, version);
      else
        read_compact(r, in, version);
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
