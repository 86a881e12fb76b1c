// Assembler and disassembler of the tessel NPU ISA text form. The syntax is specified in
// docs/isa.md ("Assembly syntax"); this file is its implementation:
//   - formatting: format_instruction / disassemble print the canonical text;
//   - parsing: a line-oriented lexer and a recursive-descent parser with errors that name the
//     source, line, column and what was expected.
// Instructions are printed and parsed from their records and operand classes
// (isa/instruction_list.h, isa/operand_classes.h): one formatter and one parser per value kind, no
// code per opcode. Fields an opcode does not use are printed as `key=value` only when they differ
// from their defaults, so assemble(disassemble(p)) == p holds exactly for every program whose
// registers are x0..x31 and whose operand scopes are legal (the assembler rejects anything else).
#include "isa/asm.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "compiler/support/error.h"
#include "isa/operand_classes.h"
#include "isa/verifier.h"

namespace tessel::isa {

namespace oc = opclass;

VectorOperandUse vector_operand_use(Opcode op) {
  if (!is_valid_opcode(op) || !is_vector_opcode(op)) return {};
  const InstrInfo& r = instr_info(op);
  return {r.uses(Field::src0), r.uses(Field::src1), r.uses(Field::scalar)};
}

std::string invalid_enum_field(const Instruction& in) {
  if (!is_valid_opcode(in.op)) {
    return fmt::format("invalid opcode value {}", static_cast<int>(in.op));
  }
  std::string bad;
  std::visit(
      [&](const auto& a) {
        using A = std::decay_t<decltype(a)>;
        oc::for_each_field<A>([&](const auto& d) {
          using K = typename std::decay_t<decltype(d)>::kind_type;
          if (!bad.empty()) return;
          if constexpr (std::is_same_v<K, oc::kind::PipeName>) {
            if (static_cast<int>(d.get(a)) >= kNumPipes)
              bad = fmt::format("invalid pipe value {}", static_cast<int>(d.get(a)));
          } else if constexpr (std::is_same_v<K, oc::kind::DTypeSuffix> ||
                               std::is_same_v<K, oc::kind::DTypeKey>) {
            if (static_cast<int>(d.get(a)) >= kNumDTypes)
              bad = fmt::format("invalid dtype value {}", static_cast<int>(d.get(a)));
          } else if constexpr (oc::kIsMemory<K>) {
            const Scope s = oc::mem_ref(d.get(a)).scope;
            if (static_cast<int>(s) >= kNumScopes)
              bad = fmt::format("invalid scope value {}", static_cast<int>(s));
          }
        });
      },
      in.args);
  return bad;
}

bool opcode_from_name(const std::string& mnemonic, Opcode& op) {
  for (const InstrInfo& r : kInstructions) {
    if (mnemonic == r.mnemonic) {
      op = r.op;
      return true;
    }
  }
  return false;
}

namespace {

using oc::float_bits;

float bits_float(uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

constexpr uint32_t kQuietNanBits = 0x7fc00000u;
constexpr uint32_t kNegQuietNanBits = 0xffc00000u;

const char* class_name_of(const Instruction& in) {
  return args_class_name(static_cast<ArgsClass>(in.args.index()));
}

// ------------------------------------------------------------------------------------------------
// Formatting
// ------------------------------------------------------------------------------------------------

std::string format_float(float v) {
  const uint32_t b = float_bits(v);
  if (std::isnan(v)) {
    if (b == kQuietNanBits) return "nan";
    if (b == kNegQuietNanBits) return "-nan";
    return fmt::format("nan(0x{:08x})", b);
  }
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  return std::string(buf, r.ptr);
}

bool is_bare_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '/' || c == ':' || c == '-';
}

// A name (program, buffer, op) as printed: bare when it consists of [A-Za-z0-9_./:-] only,
// otherwise a double-quoted string with \" \\ \n \t \r \xHH escapes.
std::string format_name(const std::string& s) {
  bool bare = !s.empty();
  for (char c : s) bare = bare && is_bare_name_char(c);
  if (bare) return s;
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"')
      out += "\\\"";
    else if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\r')
      out += "\\r";
    else if (u < 0x20 || u == 0x7f)
      out += fmt::format("\\x{:02x}", u);
    else
      out += c;
  }
  out += '"';
  return out;
}

void put_reg(std::string& out, uint8_t r) { fmt::format_to(std::back_inserter(out), "x{}", r); }

void put_mem(std::string& out, const MemRef& m) {
  fmt::format_to(std::back_inserter(out), "{}[x{}{:+}]", scope_name(m.scope), m.reg, m.offset);
}

void put_vec(std::string& out, const VecOperand& v) {
  put_mem(out, v.addr);
  fmt::format_to(std::back_inserter(out), "{{{},{}}}", v.elem_stride, v.repeat_stride);
}

// label_limit < 0: every target >= 0 prints as a label; otherwise targets in [0, label_limit].
void put_target(std::string& out, int32_t t, int32_t label_limit) {
  if (t >= 0 && (label_limit < 0 || t <= label_limit)) {
    fmt::format_to(std::back_inserter(out), "L{}", t);
  } else {
    fmt::format_to(std::back_inserter(out), "{}", t);
  }
}

template <class T, std::size_t N>
void put_list(std::string& out, const std::array<T, N>& a, int n) {
  out += '[';
  for (int i = 0; i < n; ++i) {
    if (i) out += ',';
    fmt::format_to(std::back_inserter(out), "{}", a[i]);
  }
  out += ']';
}

// Separator management: the first operand follows the mnemonic after a space, the others ", ".
struct OperandWriter {
  std::string& out;
  bool first = true;
  void sep() {
    out += first ? " " : ", ";
    first = false;
  }
  template <class... A>
  void key(const char* name, fmt::format_string<A...> f, A&&... a) {
    sep();
    out += name;
    out += '=';
    fmt::format_to(std::back_inserter(out), f, std::forward<A>(a)...);
  }
};

// Whether the instruction has a dtype suffix (its class has a suffix field), and its value.
template <class A>
constexpr bool has_suffix() {
  bool s = false;
  oc::for_each_field<A>([&](const auto& d) { s = s || d.text == oc::Text::suffix; });
  return s;
}
bool has_dtype_suffix(Opcode op) {
  return oc::with_class(instr_info(op).cls,
                        [](auto t) { return has_suffix<typename decltype(t)::type>(); });
}

// dma's lists print `ndims` entries unless an entry past ndims is set (or ndims > 4): then all
// kMaxDmaDims entries print and `ndims=` follows explicitly.
int dma_listed_dims(const DmaArgs& a) {
  bool tail_zero = a.ndims <= kMaxDmaDims;
  for (int d = std::min<int>(a.ndims, kMaxDmaDims); d < kMaxDmaDims; ++d) {
    tail_zero = tail_zero && a.extent[d] == 0 && a.dst_stride[d] == 0 && a.src_stride[d] == 0 &&
                a.valid_begin[d] == 0 && a.valid_end[d] == 0;
  }
  return tail_zero ? a.ndims : kMaxDmaDims;
}

void put_dma_dims(OperandWriter& w, const DmaArgs& a) {
  std::string& out = w.out;
  const int n = dma_listed_dims(a);
  w.sep();
  out += "extent=";
  put_list(out, a.extent, n);
  w.sep();
  out += "dst_stride=";
  put_list(out, a.dst_stride, n);
  w.sep();
  out += "src_stride=";
  put_list(out, a.src_stride, n);
  bool full_window = true;
  for (int d = 0; d < n; ++d) {
    full_window = full_window && a.valid_begin[d] == 0 && a.valid_end[d] == a.extent[d];
  }
  if (!full_window) {
    w.sep();
    out += "valid=[";
    for (int d = 0; d < n; ++d) {
      if (d) out += ',';
      fmt::format_to(std::back_inserter(out), "{}:{}", a.valid_begin[d], a.valid_end[d]);
    }
    out += ']';
  }
}

// The text of one value of kind K. A branch target prints as a label when it is a positional
// operand in [0, label_limit] (label_limit < 0: any target >= 0), otherwise as a number.
template <class K, class T>
void put_value(std::string& out, const T& v, bool positional, int32_t label_limit) {
  if constexpr (std::is_same_v<K, oc::kind::Reg>) {
    put_reg(out, v);
  } else if constexpr (std::is_same_v<K, oc::kind::Target>) {
    if (positional)
      put_target(out, v, label_limit);
    else
      fmt::format_to(std::back_inserter(out), "{}", v);
  } else if constexpr (std::is_same_v<K, oc::kind::Bool>) {
    out += v ? '1' : '0';
  } else if constexpr (std::is_same_v<K, oc::kind::F32>) {
    out += format_float(v);
  } else if constexpr (std::is_same_v<K, oc::kind::PipeName>) {
    out += pipe_name(v);
  } else if constexpr (std::is_same_v<K, oc::kind::DTypeSuffix> ||
                       std::is_same_v<K, oc::kind::DTypeKey>) {
    out += dtype_name(v);
  } else if constexpr (std::is_same_v<K, oc::kind::Mem>) {
    put_mem(out, v);
  } else if constexpr (std::is_same_v<K, oc::kind::Vec>) {
    put_vec(out, v);
  } else {
    static_assert(std::is_integral_v<T>, "a value kind without a text form");
    fmt::format_to(std::back_inserter(out), "{}",
                   static_cast<std::conditional_t<sizeof(T) == 1, int, T>>(v));
  }
}

// The operands of one instruction: the used operand fields as positional operands, the key=value
// fields (required ones always, optional ones when not at their default), then unused fields
// that differ from their default (docs/isa.md, "Fields an opcode does not use").
template <class A>
void format_args(std::string& out, Opcode op, const A& a, int32_t label_limit) {
  OperandWriter w{out};
  oc::for_each_field_indexed<A>([&](const auto& d, int i) {
    using K = typename std::decay_t<decltype(d)>::kind_type;
    if constexpr (!std::decay_t<decltype(d)>::kWhole) {
      if (d.text == oc::Text::operand && oc::field_used(op, i)) {
        w.sep();
        put_value<K>(out, d.get(a), true, label_limit);
      }
    }
  });
  oc::for_each_field_indexed<A>([&](const auto& d, int i) {
    using K = typename std::decay_t<decltype(d)>::kind_type;
    if (d.text == oc::Text::operand || d.text == oc::Text::suffix || !oc::field_used(op, i)) return;
    // The inner tests on A keep clang 14 (the fuzz build) from checking these calls for other
    // argument classes: it does not discard a branch whose condition depends on the lambda's own
    // parameter when the call in it no longer does.
    if constexpr (std::is_same_v<K, oc::kind::DmaDims>) {
      if constexpr (std::is_same_v<A, DmaArgs>) put_dma_dims(w, a);
    } else if constexpr (std::is_same_v<K, oc::kind::DmaNdims>) {
      if constexpr (std::is_same_v<A, DmaArgs>)
        if (dma_listed_dims(a) != a.ndims) w.key("ndims", "{}", a.ndims);
    } else if (d.text == oc::Text::required || !oc::is_default(d, a)) {
      w.sep();
      out += field_name(d.name);
      out += '=';
      put_value<K>(out, d.get(a), false, label_limit);
    }
  });
  oc::for_each_field_indexed<A>([&](const auto& d, int i) {
    using K = typename std::decay_t<decltype(d)>::kind_type;
    if constexpr (!std::decay_t<decltype(d)>::kWhole) {
      if (oc::field_used(op, i) || oc::is_default(d, a)) return;
      w.sep();
      out += field_name(d.name);
      out += '=';
      put_value<K>(out, d.get(a), false, label_limit);
    }
  });
}

void format_into(std::string& out, const Instruction& in, int32_t label_limit) {
  if (!is_valid_opcode(in.op)) {
    fmt::format_to(std::back_inserter(out), "<invalid opcode {}>", static_cast<int>(in.op));
    return;
  }
  out += opcode_name(in.op);
  if (args_index(in.op) != in.args.index()) {
    fmt::format_to(std::back_inserter(out), " <operands of class {}, expected {}>",
                   class_name_of(in), args_class_name(instr_info(in.op).cls));
    return;
  }
  std::visit(
      [&](const auto& a) {
        using A = std::decay_t<decltype(a)>;
        oc::for_each_field<A>([&](const auto& d) {
          using K = typename std::decay_t<decltype(d)>::kind_type;
          if constexpr (std::is_same_v<K, oc::kind::DTypeSuffix>) {
            out += '.';
            out += dtype_name(d.get(a));
          }
        });
        format_args(out, in.op, a, label_limit);
      },
      in.args);
}

// ------------------------------------------------------------------------------------------------
// Lexer
// ------------------------------------------------------------------------------------------------

enum class TokKind : uint8_t { ident, number, punct, string };

struct Tok {
  TokKind kind;
  std::string_view text;
  int col;  // 1-based column of the first character
};

struct LineCtx {
  const std::string& source;
  int line;
  int end_col;  // column just past the last non-comment character, for "expected X" at the end
};

template <class... A>
[[noreturn]] void syntax_error(const LineCtx& ctx, int col, fmt::format_string<A...> f, A&&... a) {
  fail("{}:{}:{}: {}", ctx.source, ctx.line, col, fmt::format(f, std::forward<A>(a)...));
}

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

// Lexes `line` from byte `pos`; the text after an unquoted '#' is returned in `comment`.
std::vector<Tok> lex(std::string_view line, std::size_t pos, LineCtx& ctx,
                     std::string_view& comment) {
  std::vector<Tok> toks;
  comment = {};
  const std::size_t n = line.size();
  std::size_t i = pos;
  ctx.end_col = static_cast<int>(pos) + 1;
  while (i < n) {
    const char c = line[i];
    if (c == ' ' || c == '\t') {
      ++i;
      continue;
    }
    if (c == '#') {
      comment = line.substr(i + 1);
      break;
    }
    const std::size_t start = i;
    TokKind kind;
    if (is_ident_start(c)) {
      while (i < n && is_ident_char(line[i])) ++i;
      kind = TokKind::ident;
    } else if (is_digit(c)) {
      const bool hex = c == '0' && i + 1 < n && (line[i + 1] == 'x' || line[i + 1] == 'X');
      ++i;
      while (i < n) {
        const char d = line[i];
        if (is_ident_char(d) || d == '.') {
          ++i;
        } else if ((d == '+' || d == '-') && !hex && (line[i - 1] == 'e' || line[i - 1] == 'E')) {
          ++i;
        } else {
          break;
        }
      }
      kind = TokKind::number;
    } else if (c == '"') {
      ++i;
      while (i < n && line[i] != '"') i += line[i] == '\\' ? 2 : 1;
      if (i >= n) syntax_error(ctx, static_cast<int>(start) + 1, "unterminated string");
      ++i;
      kind = TokKind::string;
    } else if (std::strchr("[]{}(),=:+-.", c) != nullptr) {
      ++i;
      kind = TokKind::punct;
    } else {
      syntax_error(ctx, static_cast<int>(start) + 1, "unexpected character '{}'", c);
    }
    toks.push_back({kind, line.substr(start, i - start), static_cast<int>(start) + 1});
    ctx.end_col = static_cast<int>(i) + 1;
  }
  return toks;
}

// Decodes a quoted string token (with its quotes).
std::string unquote(const Tok& t, const LineCtx& ctx) {
  std::string out;
  const std::string_view s = t.text.substr(1, t.text.size() - 2);
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out += s[i];
      continue;
    }
    const int col = t.col + 1 + static_cast<int>(i);
    if (++i >= s.size()) syntax_error(ctx, col, "incomplete escape sequence");
    switch (s[i]) {
      case '"':
        out += '"';
        break;
      case '\\':
        out += '\\';
        break;
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'x': {
        unsigned v = 0;
        if (i + 3 > s.size()) syntax_error(ctx, col, "\\x needs 2 hex digits");
        const auto r = std::from_chars(s.data() + i + 1, s.data() + i + 3, v, 16);
        if (r.ptr != s.data() + i + 3) syntax_error(ctx, col, "\\x needs 2 hex digits");
        out += static_cast<char>(v);
        i += 2;
        break;
      }
      default:
        syntax_error(ctx, col, "unknown escape '\\{}' (expected \\\" \\\\ \\n \\t \\r \\xHH)",
                     s[i]);
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------------
// Value parsers over a token range
// ------------------------------------------------------------------------------------------------

struct Cursor {
  const std::vector<Tok>& toks;
  std::size_t pos, end;
  const LineCtx& ctx;

  bool at_end() const { return pos >= end; }
  // Column of the next token, or just past the range's last token when at its end.
  int col() const {
    if (!at_end()) return toks[pos].col;
    return end > 0 ? end_col_of(end - 1) : ctx.end_col;
  }
  int end_col_of(std::size_t i) const {
    return toks[i].col + static_cast<int>(toks[i].text.size());
  }
  std::string found() const {
    return at_end() ? std::string("end of operand") : fmt::format("'{}'", toks[pos].text);
  }
  const Tok& next(const char* what) {
    if (at_end()) syntax_error(ctx, col(), "expected {}, found {}", what, found());
    return toks[pos++];
  }
  bool is_punct(char c) const {
    return !at_end() && toks[pos].kind == TokKind::punct && toks[pos].text[0] == c;
  }
  bool accept(char c) {
    if (!is_punct(c)) return false;
    ++pos;
    return true;
  }
  void expect(char c, const char* what) {
    if (!accept(c)) syntax_error(ctx, col(), "expected {}, found {}", what, found());
  }
};

struct Integer {
  bool negative = false;
  uint64_t magnitude = 0;
  int col = 0;
  std::string text;
};

Integer parse_integer(Cursor& cur, const char* what) {
  Integer v;
  v.col = cur.col();
  if (cur.accept('-'))
    v.negative = true;
  else
    cur.accept('+');
  if (cur.at_end() || cur.toks[cur.pos].kind != TokKind::number) {
    syntax_error(cur.ctx, cur.col(), "expected {}, found {}", what, cur.found());
  }
  const Tok& t = cur.next(what);
  std::string_view s = t.text;
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    s.remove_prefix(2);
  }
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v.magnitude, base);
  if (r.ec == std::errc::result_out_of_range) {
    syntax_error(cur.ctx, t.col, "number '{}' out of range for {}", t.text, what);
  }
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) {
    syntax_error(cur.ctx, t.col, "expected {}, found '{}'", what, t.text);
  }
  v.text = v.negative ? fmt::format("-{}", t.text) : std::string(t.text);
  return v;
}

int64_t parse_signed(Cursor& cur, int64_t lo, int64_t hi, const char* what) {
  const Integer v = parse_integer(cur, what);
  bool ok;
  int64_t x = 0;
  if (v.negative) {
    ok = v.magnitude <= uint64_t{1} << 63;
    if (ok)
      x = v.magnitude == (uint64_t{1} << 63) ? std::numeric_limits<int64_t>::min()
                                             : -static_cast<int64_t>(v.magnitude);
  } else {
    ok = v.magnitude <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    x = static_cast<int64_t>(v.magnitude);
  }
  if (!ok || x < lo || x > hi) {
    syntax_error(cur.ctx, v.col, "number {} out of range for {} (expected {}..{})", v.text, what,
                 lo, hi);
  }
  return x;
}

uint64_t parse_unsigned(Cursor& cur, uint64_t hi, const char* what) {
  const Integer v = parse_integer(cur, what);
  if ((v.negative && v.magnitude != 0) || v.magnitude > hi) {
    syntax_error(cur.ctx, v.col, "number {} out of range for {} (expected 0..{})", v.text, what,
                 hi);
  }
  return v.magnitude;
}

uint32_t parse_u32(Cursor& cur, const char* what) {
  return static_cast<uint32_t>(parse_unsigned(cur, std::numeric_limits<uint32_t>::max(), what));
}
int32_t parse_i32(Cursor& cur, const char* what) {
  return static_cast<int32_t>(parse_signed(cur, std::numeric_limits<int32_t>::min(),
                                           std::numeric_limits<int32_t>::max(), what));
}
int64_t parse_i64(Cursor& cur, const char* what) {
  return parse_signed(cur, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                      what);
}
bool parse_bool(Cursor& cur, const char* what) { return parse_unsigned(cur, 1, what) != 0; }

// Floats: shortest decimal (std::from_chars), inf, -inf, nan, -nan, nan(0xBITS) for other NaNs.
float parse_float(Cursor& cur, const char* what) {
  const int col = cur.col();
  const bool negative = cur.accept('-');
  if (!negative) cur.accept('+');
  if (cur.at_end()) syntax_error(cur.ctx, cur.col(), "expected {}, found {}", what, cur.found());
  const Tok& t = cur.toks[cur.pos];
  if (t.kind == TokKind::ident && t.text == "inf") {
    ++cur.pos;
    return negative ? -std::numeric_limits<float>::infinity()
                    : std::numeric_limits<float>::infinity();
  }
  if (t.kind == TokKind::ident && t.text == "nan") {
    ++cur.pos;
    if (!cur.accept('(')) return bits_float(negative ? kNegQuietNanBits : kQuietNanBits);
    if (negative)
      syntax_error(cur.ctx, col, "write a NaN with explicit bits as nan(0x...), without '-'");
    const uint64_t bits = parse_unsigned(cur, 0xffffffffu, "NaN bit pattern (32-bit)");
    cur.expect(')', "')' after the NaN bit pattern");
    const float v = bits_float(static_cast<uint32_t>(bits));
    if (!std::isnan(v)) syntax_error(cur.ctx, col, "nan(0x{:08x}) is not a NaN bit pattern", bits);
    return v;
  }
  if (t.kind != TokKind::number)
    syntax_error(cur.ctx, t.col, "expected {}, found '{}'", what, t.text);
  ++cur.pos;
  float v = 0;
  const auto r = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (r.ec == std::errc::result_out_of_range) {
    syntax_error(cur.ctx, t.col, "number '{}' out of range for {} (an fp32 value)", t.text, what);
  }
  if (r.ec != std::errc() || r.ptr != t.text.data() + t.text.size()) {
    syntax_error(cur.ctx, t.col, "expected {}, found '{}'", what, t.text);
  }
  return negative ? -v : v;
}

uint8_t parse_reg(Cursor& cur) {
  const int col = cur.col();
  if (cur.at_end() || cur.toks[cur.pos].kind != TokKind::ident) {
    syntax_error(cur.ctx, col, "expected a register x0..x31, found {}", cur.found());
  }
  const Tok& t = cur.next("a register");
  unsigned r = 0;
  bool ok = t.text.size() >= 2 && t.text.size() <= 3 && t.text[0] == 'x';
  if (ok) {
    const auto res = std::from_chars(t.text.data() + 1, t.text.data() + t.text.size(), r);
    ok = res.ec == std::errc() && res.ptr == t.text.data() + t.text.size() &&
         r < static_cast<unsigned>(kNumRegs) && !(t.text.size() == 3 && t.text[1] == '0');
  }
  if (!ok) syntax_error(cur.ctx, col, "bad register '{}' (expected x0..x31)", t.text);
  return static_cast<uint8_t>(r);
}

Scope parse_scope(Cursor& cur) {
  const int col = cur.col();
  const Tok& t = cur.next("a memory scope");
  for (int s = 0; s < kNumScopes; ++s) {
    if (t.kind == TokKind::ident && t.text == scope_name(static_cast<Scope>(s))) {
      return static_cast<Scope>(s);
    }
  }
  syntax_error(cur.ctx, col, "unknown memory scope '{}' (expected gm, l1, l0a, l0b, l0c or ub)",
               t.text);
}

MemRef parse_mem(Cursor& cur) {
  MemRef m;
  m.scope = parse_scope(cur);
  cur.expect('[', "'[' after the memory scope");
  m.reg = parse_reg(cur);
  if (cur.is_punct('+') || cur.is_punct('-')) {
    m.offset = parse_i64(cur, "a byte offset");
  }
  cur.expect(']', "']' closing the memory operand (form scope[xR+offset])");
  return m;
}

VecOperand parse_vec(Cursor& cur) {
  VecOperand v;
  v.addr = parse_mem(cur);
  if (cur.accept('{')) {
    v.elem_stride = parse_i32(cur, "an element stride");
    cur.expect(',', "',' between elem_stride and repeat_stride");
    v.repeat_stride = parse_i32(cur, "a repeat stride");
    cur.expect('}', "'}' closing {elem_stride,repeat_stride}");
  }
  return v;
}

Pipe parse_pipe(Cursor& cur) {
  const int col = cur.col();
  const Tok& t = cur.next("a pipe name");
  for (int p = 0; p < kNumPipes; ++p) {
    if (t.kind == TokKind::ident && t.text == pipe_name(static_cast<Pipe>(p))) {
      return static_cast<Pipe>(p);
    }
  }
  syntax_error(cur.ctx, col,
               "unknown pipe '{}' (expected scalar, mte2, mte1, cube, fix, vector or mte3)",
               t.text);
}

// The dtype names joined with `sep` and a final `last` ("f16 or f32").
std::string dtype_names(const char* sep, const char* last, const char* prefix = "") {
  std::string out;
  for (int i = 0; i < kNumDTypes; ++i) {
    if (i) out += i + 1 == kNumDTypes ? last : sep;
    out += prefix;
    out += dtype_name(static_cast<DType>(i));
  }
  return out;
}

DType parse_dtype_name(const Tok& t, const LineCtx& ctx) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (t.kind == TokKind::ident && t.text == dtype_name(static_cast<DType>(i)))
      return static_cast<DType>(i);
  }
  syntax_error(ctx, t.col, "unknown dtype '{}' (expected {})", t.text, dtype_names(", ", " or "));
}

// '[' elem (',' elem)* ']' or '[]'.
template <class F>
void parse_list(Cursor& cur, const char* what, F elem) {
  cur.expect('[', what);
  if (cur.accept(']')) return;
  do {
    elem();
  } while (cur.accept(','));
  cur.expect(']', "',' or ']' in the list");
}

// A branch target: a label name, resolved when the core section ends, or an instruction index.
struct TargetRef {
  Field field = Field::target;  // the branch-target field the label is for
  bool is_label = false;
  std::string label;
  int32_t index = -1;
  int col = 0;
};

TargetRef parse_target(Cursor& cur) {
  TargetRef t;
  t.col = cur.col();
  if (!cur.at_end() && cur.toks[cur.pos].kind == TokKind::ident) {
    t.is_label = true;
    t.label = std::string(cur.next("a label").text);
  } else {
    t.index = parse_i32(cur, "a label or instruction index");
  }
  return t;
}

// ------------------------------------------------------------------------------------------------
// Instruction operands: a comma-separated list of positional operands followed by key=value fields
// ------------------------------------------------------------------------------------------------

struct Item {
  std::string_view key;    // empty for a positional operand
  std::size_t begin, end;  // value tokens
  int col;                 // column of the item
  bool used = false;
};

class Operands {
 public:
  Operands(const std::vector<Tok>& toks, std::size_t first, const LineCtx& ctx,
           std::string mnemonic)
      : toks_(toks), ctx_(ctx), mnemonic_(std::move(mnemonic)) {
    std::size_t i = first;
    if (i >= toks.size()) return;
    while (true) {
      const std::size_t begin = i;
      int depth = 0;
      while (i < toks.size()) {
        const Tok& t = toks[i];
        if (t.kind == TokKind::punct) {
          const char c = t.text[0];
          if (c == '[' || c == '{' || c == '(') ++depth;
          if (c == ']' || c == '}' || c == ')') --depth;
          if (c == ',' && depth == 0) break;
        }
        ++i;
      }
      const int col = begin < toks.size() ? toks[begin].col : ctx.end_col;
      if (begin == i) syntax_error(ctx, col, "missing operand (empty between commas)");
      Item item{{}, begin, i, col};
      if (i - begin >= 2 && toks[begin].kind == TokKind::ident &&
          toks[begin + 1].kind == TokKind::punct && toks[begin + 1].text[0] == '=') {
        item.key = toks[begin].text;
        item.begin = begin + 2;
        if (item.begin == item.end) {
          syntax_error(ctx, toks[begin + 1].col + 1, "missing value after '{}='", item.key);
        }
        for (const Item& k : keyed_) {
          if (k.key == item.key) syntax_error(ctx, col, "field '{}' given twice", item.key);
        }
        keyed_.push_back(item);
      } else {
        if (!keyed_.empty()) {
          syntax_error(ctx, col, "positional operand after key=value fields (operands come first)");
        }
        positional_.push_back(item);
      }
      if (i >= toks.size()) break;
      ++i;  // the comma
      if (i >= toks.size()) syntax_error(ctx, ctx.end_col, "missing operand after ','");
    }
  }

  // Parses positional operand `i` with `f(Cursor&)`.
  template <class F>
  auto pos(std::size_t i, const char* what, F f) {
    if (i >= positional_.size()) {
      syntax_error(ctx_, ctx_.end_col, "missing operand {} of {} (expected {})", i + 1, mnemonic_,
                   what);
    }
    return run(positional_[i], what, f);
  }
  const LineCtx& ctx() const { return ctx_; }
  int pos_col(std::size_t i) const {
    return i < positional_.size() ? positional_[i].col : ctx_.end_col;
  }

  // Parses the field `name=` with `f(Cursor&)` if present; returns whether it was present.
  template <class F>
  bool key(const char* name, const char* what, F f) {
    for (Item& k : keyed_) {
      if (k.key == name) {
        k.used = true;
        run(k, what, f);
        return true;
      }
    }
    return false;
  }
  template <class F>
  void required(const char* name, const char* what, F f) {
    if (!key(name, what, f)) {
      syntax_error(ctx_, ctx_.end_col, "missing field '{}=' of {} (expected {})", name, mnemonic_,
                   what);
    }
  }

  void finish(std::size_t n_positional) {
    if (positional_.size() > n_positional) {
      syntax_error(ctx_, positional_[n_positional].col, "too many operands for {}: expected {}",
                   mnemonic_, n_positional);
    }
    for (const Item& k : keyed_) {
      if (!k.used) syntax_error(ctx_, k.col, "unknown field '{}' for {}", k.key, mnemonic_);
    }
  }

 private:
  template <class F>
  auto run(const Item& item, const char* what, F f) {
    Cursor cur{toks_, item.begin, item.end, ctx_};
    auto check_end = [&] {
      if (!cur.at_end()) {
        syntax_error(ctx_, cur.col(), "unexpected {} after {} (missing ','?)", cur.found(), what);
      }
    };
    if constexpr (std::is_void_v<decltype(f(cur))>) {
      f(cur);
      check_end();
    } else {
      auto v = f(cur);
      check_end();
      return v;
    }
  }

  const std::vector<Tok>& toks_;
  const LineCtx& ctx_;
  std::string mnemonic_;
  std::vector<Item> positional_, keyed_;
};

struct PendingTarget {
  std::size_t instr;
  TargetRef ref;
  int line;
};

// Label references of the instruction being parsed: (field, label) pairs resolved when the core
// section ends.
struct ParseCtx {
  std::vector<TargetRef>& targets;
};

// Parses one value of kind K for field `d`.
template <class K, class D>
typename K::type parse_value(Cursor& c, const D& d, ParseCtx& ctx) {
  if constexpr (std::is_same_v<K, oc::kind::Reg>) {
    return parse_reg(c);
  } else if constexpr (std::is_same_v<K, oc::kind::Target>) {
    TargetRef t = parse_target(c);
    if (!t.is_label) return t.index;
    t.field = d.name;
    ctx.targets.push_back(std::move(t));
    return d.get(oc::kDefaultArgs<typename D::args_type>);
  } else if constexpr (std::is_same_v<K, oc::kind::I64>) {
    return parse_i64(c, d.value_what());
  } else if constexpr (std::is_same_v<K, oc::kind::I32>) {
    return parse_i32(c, d.value_what());
  } else if constexpr (std::is_same_v<K, oc::kind::U32>) {
    return parse_u32(c, d.value_what());
  } else if constexpr (std::is_same_v<K, oc::kind::U8>) {
    return static_cast<uint8_t>(
        parse_unsigned(c, std::numeric_limits<uint8_t>::max(), d.value_what()));
  } else if constexpr (std::is_same_v<K, oc::kind::Bool>) {
    return parse_bool(c, fmt::format("{} (0 or 1)", field_name(d.name)).c_str());
  } else if constexpr (std::is_same_v<K, oc::kind::F32>) {
    return parse_float(c, d.value_what());
  } else if constexpr (std::is_same_v<K, oc::kind::PipeName>) {
    return parse_pipe(c);
  } else if constexpr (std::is_same_v<K, oc::kind::DTypeSuffix> ||
                       std::is_same_v<K, oc::kind::DTypeKey>) {
    return parse_dtype_name(c.next("a dtype"), c.ctx);
  } else if constexpr (std::is_same_v<K, oc::kind::Mem>) {
    return parse_mem(c);
  } else {
    static_assert(std::is_same_v<K, oc::kind::Vec>, "a value kind without a parser");
    return parse_vec(c);
  }
}

// What dma's lists parsed to, checked after the whole instruction was read.
struct DmaListState {
  int n_extent = 0, n_dst = 0, n_src = 0, n_valid = 0;
  bool has_valid = false, has_ndims = false;
  int ndims = -1;
};

void parse_dma_dims(Operands& ops, DmaArgs& a, DmaListState& st) {
  auto too_many = [](Cursor& c) {
    syntax_error(c.ctx, c.col(), "too many dimensions (at most {})", kMaxDmaDims);
  };
  ops.required("extent", "a list [e0,e1,..] of element counts", [&](Cursor& c) {
    parse_list(c, "'[' starting the extent list", [&] {
      if (st.n_extent == kMaxDmaDims) too_many(c);
      a.extent[st.n_extent++] = parse_u32(c, "an extent");
    });
  });
  ops.required("dst_stride", "a list of element strides", [&](Cursor& c) {
    parse_list(c, "'[' starting the dst_stride list", [&] {
      if (st.n_dst == kMaxDmaDims) too_many(c);
      a.dst_stride[st.n_dst++] = parse_i64(c, "a stride");
    });
  });
  ops.required("src_stride", "a list of element strides", [&](Cursor& c) {
    parse_list(c, "'[' starting the src_stride list", [&] {
      if (st.n_src == kMaxDmaDims) too_many(c);
      a.src_stride[st.n_src++] = parse_i64(c, "a stride");
    });
  });
  st.has_valid = ops.key("valid", "a list [begin:end,..]", [&](Cursor& c) {
    parse_list(c, "'[' starting the valid list", [&] {
      if (st.n_valid == kMaxDmaDims) too_many(c);
      a.valid_begin[st.n_valid] = parse_u32(c, "a valid-window begin");
      c.expect(':', "':' between the valid-window begin and end");
      a.valid_end[st.n_valid++] = parse_u32(c, "a valid-window end");
    });
  });
}

void parse_dma_ndims(Operands& ops, DmaListState& st) {
  st.has_ndims = ops.key("ndims", "a dimension count", [&](Cursor& c) {
    st.ndims = static_cast<int>(parse_unsigned(c, 255, "ndims"));
  });
}

void finish_dma_dims(Operands& ops, DmaArgs& a, const DmaListState& st) {
  if (st.n_dst != st.n_extent || st.n_src != st.n_extent ||
      (st.has_valid && st.n_valid != st.n_extent)) {
    syntax_error(ops.ctx(), ops.pos_col(0),
                 "dma lists differ in length (extent {}, dst_stride {}, src_stride {}{}): "
                 "expected one entry per dimension in each",
                 st.n_extent, st.n_dst, st.n_src,
                 st.has_valid ? fmt::format(", valid {}", st.n_valid) : "");
  }
  if (!st.has_valid) {
    for (int d = 0; d < st.n_extent; ++d) a.valid_end[d] = a.extent[d];
  }
  if (!st.has_ndims && st.n_extent == 0) {
    syntax_error(ops.ctx(), ops.pos_col(0), "dma needs at least one dimension in extent=[..]");
  }
  a.ndims = static_cast<uint8_t>(st.has_ndims ? st.ndims : st.n_extent);
}

// Parses the operands of one instruction of class A (the inverse of format_args): positional
// operands, key=value fields, extras for unused fields, then the class's own checks.
template <class A>
A parse_args(Operands& ops, Opcode op, DType dtype, ParseCtx& ctx) {
  A a{};
  DmaListState dma;
  std::size_t pos = 0;
  oc::for_each_field_indexed<A>([&](const auto& d, int i) {
    using K = typename std::decay_t<decltype(d)>::kind_type;
    if constexpr (std::is_same_v<K, oc::kind::DTypeSuffix>) {
      d.get(a) = dtype;
    } else if constexpr (!std::decay_t<decltype(d)>::kWhole) {
      if (d.text == oc::Text::operand && oc::field_used(op, i))
        ops.pos(pos++, d.what, [&](Cursor& c) { d.get(a) = parse_value<K>(c, d, ctx); });
    }
  });
  oc::for_each_field_indexed<A>([&](const auto& d, int i) {
    using K = typename std::decay_t<decltype(d)>::kind_type;
    if (d.text == oc::Text::operand || d.text == oc::Text::suffix || !oc::field_used(op, i)) return;
    if constexpr (std::is_same_v<K, oc::kind::DmaDims>) {
      if constexpr (std::is_same_v<A, DmaArgs>) parse_dma_dims(ops, a, dma);  // clang 14: above
    } else if constexpr (std::is_same_v<K, oc::kind::DmaNdims>) {
      parse_dma_ndims(ops, dma);
    } else if constexpr (!std::decay_t<decltype(d)>::kWhole) {
      auto f = [&](Cursor& c) { d.get(a) = parse_value<K>(c, d, ctx); };
      if (d.text == oc::Text::required)
        ops.required(field_name(d.name), d.what, f);
      else
        ops.key(field_name(d.name), d.what, f);
    }
  });
  oc::for_each_field_indexed<A>([&](const auto& d, int i) {
    using K = typename std::decay_t<decltype(d)>::kind_type;
    if constexpr (!std::decay_t<decltype(d)>::kWhole && !std::is_same_v<K, oc::kind::DTypeSuffix>) {
      if (!oc::field_used(op, i))
        ops.key(field_name(d.name), d.what,
                [&](Cursor& c) { d.get(a) = parse_value<K>(c, d, ctx); });
    }
  });
  ops.finish(pos);
  if constexpr (std::is_same_v<A, DmaArgs>) finish_dma_dims(ops, a, dma);
  return a;
}

void parse_operands(Operands& ops, Instruction& in, DType dtype, std::vector<TargetRef>& targets) {
  ParseCtx ctx{targets};
  oc::with_class(instr_info(in.op).cls, [&](auto t) {
    using A = typename decltype(t)::type;
    in.args = parse_args<A>(ops, in.op, dtype, ctx);
  });
}

// Sets the branch-target field `f` of `in` (resolving a label).
void set_target(Instruction& in, Field f, int32_t value) {
  std::visit(
      [&](auto& a) {
        using A = std::decay_t<decltype(a)>;
        oc::for_each_field<A>([&](const auto& d) {
          using K = typename std::decay_t<decltype(d)>::kind_type;
          if constexpr (std::is_same_v<K, oc::kind::Target>) {
            if (d.name == f) d.get(a) = value;
          }
        });
      },
      in.args);
}

// Calls fn(target) for every used branch-target field of `in` (labels in the disassembly).
template <class Fn>
void for_each_target(const Instruction& in, Fn&& fn) {
  std::visit(
      [&](const auto& a) {
        using A = std::decay_t<decltype(a)>;
        oc::for_each_field_indexed<A>([&](const auto& d, int i) {
          using K = typename std::decay_t<decltype(d)>::kind_type;
          if constexpr (std::is_same_v<K, oc::kind::Target>) {
            if (oc::field_used(in.op, i)) fn(d.get(a));
          }
        });
      },
      in.args);
}

// ------------------------------------------------------------------------------------------------
// Exact comparison
// ------------------------------------------------------------------------------------------------

// Equal field by field, floats by bit pattern (operator== treats NaN != NaN and -0 == +0).
bool args_identical(const Instruction& a, const Instruction& b) {
  if (a.args.index() != b.args.index()) return false;
  return std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        T u = x, v = std::get<T>(b.args);
        bool floats_same = true;
        oc::for_each_field<T>([&](const auto& d) {
          using K = typename std::decay_t<decltype(d)>::kind_type;
          if constexpr (std::is_same_v<K, oc::kind::F32>) {
            floats_same = floats_same && float_bits(d.get(u)) == float_bits(d.get(v));
            d.get(u) = d.get(v) = 0.0f;
          }
        });
        return floats_same && u == v;
      },
      a.args);
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Public API
// ------------------------------------------------------------------------------------------------

std::string format_instruction(const Instruction& instr) {
  std::string out;
  format_into(out, instr, -1);
  return out;
}

std::string disassemble(const Program& program) {
  std::string out;
  fmt::format_to(std::back_inserter(out), ".program {}\n.gm_bytes {}\n", format_name(program.name),
                 program.gm_bytes);
  for (std::size_t i = 0; i < program.op_names.size(); ++i) {
    fmt::format_to(std::back_inserter(out), ".op {} {}\n", i, format_name(program.op_names[i]));
  }
  for (const GmBuffer& b : program.buffers) {
    const char* kinds[] = {"input", "output", "constant", "scratch"};
    if (static_cast<int>(b.dtype) >= kNumDTypes) {
      fail("disassemble: buffer '{}' has an invalid dtype value {}", b.name,
           static_cast<int>(b.dtype));
    }
    if (static_cast<int>(b.kind) > 3) {
      fail("disassemble: buffer '{}' has an invalid kind value {}", b.name,
           static_cast<int>(b.kind));
    }
    fmt::format_to(std::back_inserter(out),
                   ".buffer {} kind={} addr={:#x} bytes={} dtype={} shape=[{}]\n",
                   format_name(b.name), kinds[static_cast<int>(b.kind)], b.address, b.bytes,
                   dtype_name(b.dtype), fmt::join(b.shape, ","));
  }
  std::vector<bool> is_target;
  for (std::size_t c = 0; c < program.cores.size(); ++c) {
    const auto& stream = program.cores[c];
    const auto n = static_cast<int32_t>(stream.size());
    fmt::format_to(std::back_inserter(out), "\n.core {}\n", c);
    is_target.assign(stream.size() + 1, false);
    for (std::size_t i = 0; i < stream.size(); ++i) {
      const Instruction& in = stream[i];
      if (const std::string bad = invalid_enum_field(in); !bad.empty()) {
        fail("disassemble: core {}, instruction {}: {}", c, i, bad);
      }
      if (args_index(in.op) != in.args.index()) {
        fail("disassemble: core {}, instruction {}: {} holds {} operands (expected {})", c, i,
             opcode_name(in.op), class_name_of(in), args_class_name(instr_info(in.op).cls));
      }
      for_each_target(in, [&](int32_t t) {
        if (t >= 0 && t <= n) is_target[t] = true;
      });
    }
    for (std::size_t i = 0; i <= stream.size(); ++i) {
      if (is_target[i]) fmt::format_to(std::back_inserter(out), "L{}:\n", i);
      if (i == stream.size()) break;
      out += "  ";
      format_into(out, stream[i], n);
      if (stream[i].op_index != -1)
        fmt::format_to(std::back_inserter(out), "  # op={}", stream[i].op_index);
      out += '\n';
    }
  }
  return out;
}

namespace {

void skip_ws(std::string_view s, std::size_t& i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
}

// Reads a name at `i`: a quoted string or a bare run of non-blank characters up to '#'.
std::string read_name(std::string_view line, std::size_t& i, LineCtx& ctx, const char* what) {
  skip_ws(line, i);
  if (i >= line.size() || line[i] == '#') {
    syntax_error(ctx, static_cast<int>(i) + 1, "expected {}", what);
  }
  if (line[i] == '"') {
    std::size_t j = i + 1;
    while (j < line.size() && line[j] != '"') j += line[j] == '\\' ? 2 : 1;
    if (j >= line.size()) syntax_error(ctx, static_cast<int>(i) + 1, "unterminated string");
    const Tok s{TokKind::string, line.substr(i, j + 1 - i), static_cast<int>(i) + 1};
    i = j + 1;
    return unquote(s, ctx);
  }
  const std::size_t start = i;
  while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '#') {
    if (line[i] == '"' || line[i] == '=') {
      syntax_error(ctx, static_cast<int>(i) + 1,
                   "unexpected '{}' in {} (quote names that contain it)", line[i], what);
    }
    ++i;
  }
  return std::string(line.substr(start, i - start));
}

void expect_line_end(const std::vector<Tok>& toks, std::size_t i, const LineCtx& ctx,
                     const char* after) {
  if (i < toks.size())
    syntax_error(ctx, toks[i].col, "unexpected '{}' after {}", toks[i].text, after);
}

}  // namespace

Program assemble(const std::string& text, const std::string& source_name) {
  Program p;
  bool have_program = false, have_gm_bytes = false;
  int program_line = 0, gm_line = 0;
  std::unordered_map<std::string, std::pair<int32_t, int>> labels;  // name -> (index, line)
  std::vector<PendingTarget> pending;
  std::vector<TargetRef> targets;
  std::unordered_map<std::string, int> buffer_lines;

  auto finish_core = [&]() {
    if (p.cores.empty()) return;
    auto& stream = p.cores.back();
    for (const PendingTarget& pt : pending) {
      const auto it = labels.find(pt.ref.label);
      if (it == labels.end()) {
        LineCtx ctx{source_name, pt.line, 0};
        syntax_error(ctx, pt.ref.col, "unknown label '{}' (not defined in core {})", pt.ref.label,
                     p.cores.size() - 1);
      }
      set_target(stream[pt.instr], pt.ref.field, it->second.first);
    }
    pending.clear();
    labels.clear();
  };

  int line_no = 0;
  std::size_t start = 0;
  std::string_view all(text);
  while (start <= all.size()) {
    std::size_t nl = all.find('\n', start);
    if (nl == std::string_view::npos) nl = all.size();
    std::string_view line = all.substr(start, nl - start);
    start = nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    LineCtx ctx{source_name, line_no, 1};
    std::size_t i = 0;
    skip_ws(line, i);
    if (i >= line.size() || line[i] == '#') continue;

    std::string_view comment;
    if (line[i] == '.') {  // ---- directive ----
      const std::size_t dstart = i;
      ++i;
      while (i < line.size() && is_ident_char(line[i])) ++i;
      const std::string_view dir = line.substr(dstart, i - dstart);
      const int dcol = static_cast<int>(dstart) + 1;
      if (dir == ".program") {
        if (have_program)
          syntax_error(ctx, dcol, ".program given twice (first at line {})", program_line);
        p.name = read_name(line, i, ctx, "a program name");
        have_program = true;
        program_line = line_no;
        const auto toks = lex(line, i, ctx, comment);
        expect_line_end(toks, 0, ctx, "the program name");
      } else if (dir == ".gm_bytes") {
        if (have_gm_bytes)
          syntax_error(ctx, dcol, ".gm_bytes given twice (first at line {})", gm_line);
        const auto toks = lex(line, i, ctx, comment);
        Cursor cur{toks, 0, toks.size(), ctx};
        p.gm_bytes = parse_unsigned(cur, std::numeric_limits<uint64_t>::max(), "a byte count");
        expect_line_end(toks, cur.pos, ctx, "the byte count");
        have_gm_bytes = true;
        gm_line = line_no;
      } else if (dir == ".op") {
        skip_ws(line, i);
        std::size_t kend = i;
        while (kend < line.size() && line[kend] != ' ' && line[kend] != '\t') ++kend;
        const auto toks_k = lex(line.substr(0, kend), i, ctx, comment);
        Cursor cur{toks_k, 0, toks_k.size(), ctx};
        const int kcol = static_cast<int>(i) + 1;
        const uint64_t k = parse_unsigned(cur, std::numeric_limits<int32_t>::max(), "an op index");
        if (k != p.op_names.size()) {
          syntax_error(ctx, kcol, "expected '.op {}' (op indices are consecutive from 0), found {}",
                       p.op_names.size(), k);
        }
        expect_line_end(toks_k, cur.pos, ctx, "the op index");
        i = kend;
        p.op_names.push_back(read_name(line, i, ctx, "an op name"));
        const auto toks = lex(line, i, ctx, comment);
        expect_line_end(toks, 0, ctx, "the op name");
      } else if (dir == ".buffer") {
        GmBuffer b;
        const int ncol = static_cast<int>(i) + 2;
        b.name = read_name(line, i, ctx, "a buffer name");
        if (const auto it = buffer_lines.find(b.name); it != buffer_lines.end()) {
          syntax_error(ctx, ncol, "buffer '{}' already defined at line {}", b.name, it->second);
        }
        buffer_lines[b.name] = line_no;
        const auto toks = lex(line, i, ctx, comment);
        bool seen[5] = {};
        static const char* const keys[] = {"kind", "addr", "bytes", "dtype", "shape"};
        std::size_t t = 0;
        while (t < toks.size()) {
          const Tok& k = toks[t];
          int key = -1;
          for (int j = 0; j < 5; ++j) {
            if (k.kind == TokKind::ident && k.text == keys[j]) key = j;
          }
          if (key < 0) {
            syntax_error(ctx, k.col,
                         "unknown buffer field '{}' (expected kind, addr, bytes, dtype or shape)",
                         k.text);
          }
          if (seen[key]) syntax_error(ctx, k.col, "field '{}' given twice", k.text);
          seen[key] = true;
          if (t + 1 >= toks.size() || toks[t + 1].text != "=") {
            syntax_error(ctx, k.col + static_cast<int>(k.text.size()), "expected '=' after '{}'",
                         k.text);
          }
          // The value runs up to the next `ident =` pair.
          std::size_t vend = t + 2;
          int depth = 0;
          while (vend < toks.size()) {
            const Tok& v = toks[vend];
            if (v.text == "[") ++depth;
            if (v.text == "]") --depth;
            if (depth == 0 && v.kind == TokKind::ident && vend + 1 < toks.size() &&
                toks[vend + 1].text == "=") {
              break;
            }
            ++vend;
          }
          Cursor cur{toks, t + 2, vend, ctx};
          switch (key) {
            case 0: {
              const Tok& v = cur.next("a buffer kind");
              static const char* const kinds[] = {"input", "output", "constant", "scratch"};
              int kind = -1;
              for (int j = 0; j < 4; ++j) {
                if (v.text == kinds[j]) kind = j;
              }
              if (kind < 0) {
                syntax_error(
                    ctx, v.col,
                    "unknown buffer kind '{}' (expected input, output, constant or scratch)",
                    v.text);
              }
              b.kind = static_cast<GmKind>(kind);
              break;
            }
            case 1:
              b.address = parse_unsigned(cur, std::numeric_limits<uint64_t>::max(), "an address");
              break;
            case 2:
              b.bytes = parse_unsigned(cur, std::numeric_limits<uint64_t>::max(), "a byte count");
              break;
            case 3:
              b.dtype = parse_dtype_name(cur.next("a dtype"), ctx);
              break;
            default:
              parse_list(cur, "'[' starting the shape",
                         [&] { b.shape.push_back(parse_i64(cur, "a dimension")); });
              break;
          }
          if (!cur.at_end())
            syntax_error(ctx, cur.col(), "unexpected {} in field '{}'", cur.found(), keys[key]);
          t = vend;
        }
        for (int j = 0; j < 3; ++j) {
          if (!seen[j]) syntax_error(ctx, ctx.end_col, "missing field '{}=' of .buffer", keys[j]);
        }
        p.buffers.push_back(std::move(b));
      } else if (dir == ".core") {
        const auto toks = lex(line, i, ctx, comment);
        Cursor cur{toks, 0, toks.size(), ctx};
        const int ccol = cur.col();
        const uint64_t n =
            parse_unsigned(cur, std::numeric_limits<int32_t>::max(), "a core number");
        expect_line_end(toks, cur.pos, ctx, "the core number");
        if (n != p.cores.size()) {
          syntax_error(ctx, ccol,
                       "expected '.core {}' (cores are numbered consecutively from 0), found {}",
                       p.cores.size(), n);
        }
        finish_core();
        p.cores.emplace_back();
      } else {
        syntax_error(ctx, dcol,
                     "unknown directive '{}' (expected .program, .gm_bytes, .op, .buffer or .core)",
                     dir);
      }
      continue;
    }

    // ---- labels and an instruction ----
    const auto toks = lex(line, i, ctx, comment);
    std::size_t t = 0;
    while (t + 1 < toks.size() && toks[t].kind == TokKind::ident && toks[t + 1].text == ":") {
      const std::string name(toks[t].text);
      if (p.cores.empty()) {
        syntax_error(ctx, toks[t].col,
                     "label '{}' outside a .core section (expected '.core N' first)", name);
      }
      const auto [it, inserted] = labels.emplace(
          name, std::make_pair(static_cast<int32_t>(p.cores.back().size()), line_no));
      if (!inserted)
        syntax_error(ctx, toks[t].col, "label '{}' already defined at line {}", name,
                     it->second.second);
      t += 2;
    }
    if (t >= toks.size()) continue;
    const Tok& mn = toks[t];
    if (mn.kind != TokKind::ident) {
      syntax_error(ctx, mn.col, "expected a mnemonic or a label, found '{}'", mn.text);
    }
    Instruction in;
    if (!opcode_from_name(std::string(mn.text), in.op)) {
      syntax_error(
          ctx, mn.col,
          "unknown mnemonic '{}' (expected an opcode of docs/isa.md, e.g. vadd, dma, mmad)",
          mn.text);
    }
    if (p.cores.empty()) {
      syntax_error(ctx, mn.col, "instruction outside a .core section (expected '.core N' first)");
    }
    ++t;
    DType dtype = DType::f16;
    if (t < toks.size() && toks[t].text == ".") {
      if (!has_dtype_suffix(in.op)) {
        syntax_error(ctx, toks[t].col, "{} takes no dtype suffix", mn.text);
      }
      if (t + 1 >= toks.size())
        syntax_error(ctx, ctx.end_col, "expected a dtype ({}) after '.'",
                     dtype_names(", ", " or "));
      dtype = parse_dtype_name(toks[t + 1], ctx);
      t += 2;
    } else if (has_dtype_suffix(in.op)) {
      syntax_error(ctx, mn.col + static_cast<int>(mn.text.size()),
                   "missing dtype suffix: expected {}",
                   dtype_names(", ", " or ", fmt::format("{}.", mn.text).c_str()));
    }
    Operands ops(toks, t, ctx, std::string(mn.text));
    targets.clear();
    parse_operands(ops, in, dtype, targets);
    ScopeViolation v;
    if (!check_operand_scopes(in, v)) {
      syntax_error(ctx, ops.pos_col(static_cast<std::size_t>(v.operand)), "scope not allowed: {}",
                   v.message);
    }
    // op_index: a trailing comment "op=K".
    std::size_t c = 0;
    skip_ws(comment, c);
    if (comment.substr(c, 3) == "op=") {
      const int ccol = static_cast<int>(comment.data() - line.data()) + 1 + static_cast<int>(c);
      LineCtx cctx = ctx;
      std::string_view ignored;
      const auto ctoks = lex(line, static_cast<std::size_t>(ccol - 1 + 3), cctx, ignored);
      Cursor cur{ctoks, 0, ctoks.size(), cctx};
      in.op_index = parse_i32(cur, "an op index in '# op=K'");
      if (!cur.at_end()) syntax_error(cctx, cur.col(), "unexpected {} after '# op=K'", cur.found());
    }
    auto& stream = p.cores.back();
    for (TargetRef& tr : targets) pending.push_back({stream.size(), std::move(tr), line_no});
    stream.push_back(std::move(in));
  }
  finish_core();
  return p;
}

std::string program_difference(const Program& a, const Program& b) {
  if (a.name != b.name) return fmt::format("name: '{}' vs '{}'", a.name, b.name);
  if (a.gm_bytes != b.gm_bytes) return fmt::format("gm_bytes: {} vs {}", a.gm_bytes, b.gm_bytes);
  if (a.op_names != b.op_names) {
    if (a.op_names.size() != b.op_names.size()) {
      return fmt::format("op_names: {} vs {} entries", a.op_names.size(), b.op_names.size());
    }
    for (std::size_t i = 0; i < a.op_names.size(); ++i) {
      if (a.op_names[i] != b.op_names[i]) {
        return fmt::format("op_names[{}]: '{}' vs '{}'", i, a.op_names[i], b.op_names[i]);
      }
    }
  }
  if (a.buffers.size() != b.buffers.size()) {
    return fmt::format("buffers: {} vs {} entries", a.buffers.size(), b.buffers.size());
  }
  for (std::size_t i = 0; i < a.buffers.size(); ++i) {
    const GmBuffer& x = a.buffers[i];
    const GmBuffer& y = b.buffers[i];
    if (x.name != y.name || x.kind != y.kind || x.address != y.address || x.bytes != y.bytes ||
        x.dtype != y.dtype || x.shape != y.shape) {
      return fmt::format("buffers[{}] ('{}' vs '{}'): name/kind/address/bytes/dtype/shape differ",
                         i, x.name, y.name);
    }
    if (x.init != y.init) {
      return fmt::format("buffers[{}] ('{}'): init data differs ({} vs {} bytes)", i, x.name,
                         x.init.size(), y.init.size());
    }
  }
  if (a.cores.size() != b.cores.size()) {
    return fmt::format("cores: {} vs {}", a.cores.size(), b.cores.size());
  }
  for (std::size_t c = 0; c < a.cores.size(); ++c) {
    const auto& s = a.cores[c];
    const auto& t = b.cores[c];
    for (std::size_t i = 0; i < std::min(s.size(), t.size()); ++i) {
      if (s[i].op != t[i].op || s[i].op_index != t[i].op_index || !args_identical(s[i], t[i])) {
        return fmt::format("core {}, instruction {}: '{}' (op={}) vs '{}' (op={})", c, i,
                           format_instruction(s[i]), s[i].op_index, format_instruction(t[i]),
                           t[i].op_index);
      }
    }
    if (s.size() != t.size()) {
      return fmt::format("core {}: {} vs {} instructions", c, s.size(), t.size());
    }
  }
  return "";
}

}  // namespace tessel::isa
