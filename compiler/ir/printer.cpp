// Graph IR text printer (the syntax is documented in graph.h; parser.cpp reads it back).
#include <charconv>
#include <cmath>
#include <cstring>
#include <ostream>
#include <sstream>
#include <unordered_set>

#include "compiler/ir/graph.h"
#include "compiler/support/fp16.h"

namespace tessel {

namespace {

// Constants/known values with more elements than this are elided by PrintOptions::elide_constants.
constexpr int64_t kElideAboveElements = 8;

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-' || c == '/' || c == '+';
}

// A name can be printed without quotes if the lexer reads it back as one word.
bool is_bare_name(const std::string& s) {
  if (s.empty() || s.find("//") != std::string::npos) return false;
  for (char c : s) {
    if (!is_word_char(c)) return false;
  }
  return true;
}

void append_quoted(std::string& out, const std::string& s) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += "\\x";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += ch;  // printable ASCII and UTF-8 bytes as they are
        }
    }
  }
  out += '"';
}

void append_name(std::string& out, const std::string& s) {
  if (is_bare_name(s)) {
    out += s;
  } else {
    append_quoted(out, s);
  }
}

void append_value_ref(std::string& out, const Value* v) {
  out += '%';
  append_name(out, v->name);
}

template <class T>
void append_chars(std::string& out, T v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, res.ptr);
}

void append_hex_bits(std::string& out, uint64_t bits, int digits) {
  static const char* hex = "0123456789abcdef";
  out += "nan0x";
  for (int i = digits - 1; i >= 0; --i) out += hex[(bits >> (4 * i)) & 15];
}

// NaN: "nan" / "-nan" for the canonical quiet NaN, else "nan0x<bits>" (the full bit pattern).
// Other values: the shortest decimal that reads back to the same value (std::to_chars).
void append_f32(std::string& out, float v) {
  if (std::isnan(v)) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    if (bits == 0x7fc00000u) {
      out += "nan";
    } else if (bits == 0xffc00000u) {
      out += "-nan";
    } else {
      append_hex_bits(out, bits, 8);
    }
    return;
  }
  append_chars(out, v);
}

void append_f64(std::string& out, double v) {
  if (std::isnan(v)) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    if (bits == 0x7ff8000000000000ull) {
      out += "nan";
    } else if (bits == 0xfff8000000000000ull) {
      out += "-nan";
    } else {
      append_hex_bits(out, bits, 16);
    }
    return;
  }
  append_chars(out, v);
}

// f16 as the f32 shortest form of its value (every f16 is exactly an f32, so it reads back to the
// same f32 and hence the same f16 bits).
void append_f16(std::string& out, uint16_t bits) {
  if ((bits & 0x7c00u) == 0x7c00u && (bits & 0x3ffu) != 0) {
    if (bits == 0x7e00u) {
      out += "nan";
    } else if (bits == 0xfe00u) {
      out += "-nan";
    } else {
      append_hex_bits(out, bits, 4);
    }
    return;
  }
  append_chars(out, f16_bits_to_f32(bits));
}

// An attribute float: like append_f32, but always recognisable as a float (not an int).
void append_attr_float(std::string& out, float v) {
  const size_t start = out.size();
  append_f32(out, v);
  if (out.find_first_of(".en", start) == std::string::npos) out += ".0";
}

template <class T>
void append_ints(std::string& out, const T* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    if (i) out += ", ";
    append_chars(out, p[i]);
  }
}

void append_data(std::string& out, const Tensor& t, const PrintOptions& opts) {
  const int64_t n = t.numel();
  if (opts.elide_constants && n > kElideAboveElements) {
    out += "dense<...>";
    return;
  }
  out += '[';
  switch (t.dtype()) {
    case DType::f32:
      for (int64_t i = 0; i < n; ++i) {
        if (i) out += ", ";
        append_f32(out, t.data<float>()[i]);
      }
      break;
    case DType::f64:
      for (int64_t i = 0; i < n; ++i) {
        if (i) out += ", ";
        append_f64(out, t.data<double>()[i]);
      }
      break;
    case DType::f16:
      for (int64_t i = 0; i < n; ++i) {
        if (i) out += ", ";
        append_f16(out, t.data<uint16_t>()[i]);
      }
      break;
    case DType::boolean:
      for (int64_t i = 0; i < n; ++i) {
        if (i) out += ", ";
        out += t.data<uint8_t>()[i] ? "true" : "false";
      }
      break;
    case DType::u8:
      append_ints(out, t.data<uint8_t>(), n);
      break;
    case DType::i8:
      append_ints(out, t.data<int8_t>(), n);
      break;
    case DType::u16:
      append_ints(out, t.data<uint16_t>(), n);
      break;
    case DType::i16:
      append_ints(out, t.data<int16_t>(), n);
      break;
    case DType::i32:
      append_ints(out, t.data<int32_t>(), n);
      break;
    case DType::i64:
      append_ints(out, t.data<int64_t>(), n);
      break;
    case DType::u32:
      append_ints(out, t.data<uint32_t>(), n);
      break;
    case DType::u64:
      append_ints(out, t.data<uint64_t>(), n);
      break;
    case DType::undefined:
    case DType::string:
      internal_fail("cannot print a tensor of element type {}", dtype_to_string(t.dtype()));
  }
  out += ']';
}

void append_type(std::string& out, DType dtype, const Shape& shape) {
  if (dtype == DType::undefined) {  // a subgraph value typed when the body is instantiated
    out += '?';
    return;
  }
  out += dtype_to_string(dtype);
  out += shape_to_string(shape);
}

// "%name: f32[1,2]" plus " known [...]" when the value is known at compile time and
// " format NC1HWC0" when it is not stored plain.
void append_decl(std::string& out, const Value* v, const PrintOptions& opts) {
  append_value_ref(out, v);
  out += ": ";
  append_type(out, v->dtype, v->shape);
  if (v->constant) {
    out += " known ";
    append_data(out, *v->constant, opts);
  }
  if (v->format != StorageFormat::plain) {
    out += " format ";
    out += storage_format_name(v->format);
  }
}

void append_graph(std::string& out, const Graph& g, const PrintOptions& opts,
                  const std::string& indent, bool is_subgraph, std::ostream* flush_to);

void append_attr_value(std::string& out, const AttrValue& value, const PrintOptions& opts,
                       const std::string& indent) {
  if (const auto* i = std::get_if<int64_t>(&value)) {
    append_chars(out, *i);
  } else if (const auto* f = std::get_if<float>(&value)) {
    append_attr_float(out, *f);
  } else if (const auto* s = std::get_if<std::string>(&value)) {
    append_quoted(out, *s);
  } else if (const auto* is = std::get_if<std::vector<int64_t>>(&value)) {
    if (is->empty()) out += "ints";
    out += '[';
    append_ints(out, is->data(), static_cast<int64_t>(is->size()));
    out += ']';
  } else if (const auto* fs = std::get_if<std::vector<float>>(&value)) {
    if (fs->empty()) out += "floats";
    out += '[';
    for (size_t k = 0; k < fs->size(); ++k) {
      if (k) out += ", ";
      append_attr_float(out, (*fs)[k]);
    }
    out += ']';
  } else if (const auto* ss = std::get_if<std::vector<std::string>>(&value)) {
    if (ss->empty()) out += "strings";
    out += '[';
    for (size_t k = 0; k < ss->size(); ++k) {
      if (k) out += ", ";
      append_quoted(out, (*ss)[k]);
    }
    out += ']';
  } else if (const auto* t = std::get_if<Tensor>(&value)) {
    out += "tensor<";
    append_type(out, t->dtype(), t->shape());
    out += ' ';
    append_data(out, *t, opts);
    out += '>';
  } else if (const auto* g = std::get_if<GraphAttr>(&value)) {
    if (!*g) internal_fail("cannot print a null subgraph attribute");
    append_graph(out, **g, opts, indent, /*is_subgraph=*/true, nullptr);
  }
}

// The graph header and body; statements are indented by `indent` + two spaces and the closing
// brace by `indent`. A subgraph prints no opset and its captures; `flush_to` (the top level only)
// receives the text in chunks so that large graphs are not held twice.
void append_graph(std::string& out, const Graph& g, const PrintOptions& opts,
                  const std::string& indent, bool is_subgraph, std::ostream* flush_to) {
  const std::string inner = indent + "  ";
  auto maybe_flush = [&] {
    if (flush_to && out.size() > (1u << 20)) {
      *flush_to << out;
      out.clear();
    }
  };
  out += "graph ";
  append_name(out, g.name);
  if (!is_subgraph) {
    out += " opset ";
    append_chars(out, g.opset);
  }
  out += " (";
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    if (i) out += ", ";
    append_decl(out, g.inputs[i], opts);
  }
  out += ")";
  if (!g.captures.empty()) {
    out += " captures (";
    for (size_t i = 0; i < g.captures.size(); ++i) {
      if (i) out += ", ";
      append_decl(out, g.captures[i], opts);
    }
    out += ")";
  }
  out += " -> (";
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    if (i) out += ", ";
    append_value_ref(out, g.outputs[i]);
  }
  out += ") {\n";
  // Constants first, in creation order, then nodes in their (topological) order.
  std::unordered_set<const Value*> is_input(g.inputs.begin(), g.inputs.end());
  is_input.insert(g.captures.begin(), g.captures.end());
  for (const auto& v : g.values()) {
    if (v->producer || !v->constant || is_input.count(v.get())) continue;
    out += inner;
    append_value_ref(out, v.get());
    out += ": ";
    append_type(out, v->dtype, v->shape);
    out += " = const ";
    append_data(out, *v->constant, opts);
    out += '\n';
    maybe_flush();
  }
  for (const auto& n : g.nodes()) {
    out += inner;
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      if (i) out += ", ";
      append_decl(out, n->outputs[i], opts);
    }
    out += " = ";
    if (n->op_type == "const") {
      append_quoted(out, n->op_type);  // the keyword for constants at this position
    } else {
      append_name(out, n->op_type);
    }
    out += '(';
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      if (i) out += ", ";
      if (n->inputs[i]) {
        append_value_ref(out, n->inputs[i]);
      } else {
        out += '_';
      }
    }
    out += ')';
    if (!n->attrs.all().empty()) {
      out += " {";
      bool first = true;
      for (const auto& [name, value] : n->attrs.all()) {
        if (!first) out += ", ";
        first = false;
        append_name(out, name);
        out += '=';
        append_attr_value(out, value, opts, inner);
      }
      out += '}';
    }
    out += "  # ";
    append_name(out, n->name);
    out += '\n';
    maybe_flush();
  }
  out += indent;
  out += "}";
  if (!is_subgraph) out += '\n';
}

}  // namespace

void print_graph(const Graph& g, std::ostream& os, const PrintOptions& opts) {
  std::string out;
  append_graph(out, g, opts, "", /*is_subgraph=*/false, &os);
  os << out;
}

std::string graph_to_string(const Graph& g, const PrintOptions& opts) {
  std::ostringstream os;
  print_graph(g, os, opts);
  return os.str();
}

}  // namespace tessel
