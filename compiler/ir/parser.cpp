// Graph IR text parser: reads what printer.cpp writes (syntax in graph.h). Recursive descent over
// a small lexer; every error names the source, the line and what was expected.
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "compiler/ir/graph.h"
#include "compiler/support/fp16.h"

namespace tessel {

namespace {

bool is_word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-' || c == '/' || c == '+';
}

enum class Tok { end, word, string, value_ref, punct, arrow };

struct Token {
  Tok kind = Tok::end;
  std::string_view text;  // word text, or the punctuation character
  std::string str;        // decoded string / value name (quoted forms)
  int line = 0;
};

class Lexer {
 public:
  Lexer(const std::string& text, const std::string& source) : text_(text), source_(source) {
    advance();
  }

  const Token& peek() const { return tok_; }
  Token next() {
    Token t = std::move(tok_);
    advance();
    return t;
  }
  const std::string& source() const { return source_; }

  [[noreturn]] void error_at(int line, const std::string& msg) const {
    fail("{}:{}: {}", source_, line, msg);
  }

 private:
  void advance() {
    skip_space();
    tok_ = Token{};
    tok_.line = line_;
    if (pos_ >= text_.size()) return;
    const char c = text_[pos_];
    if (c == '"') {
      tok_.kind = Tok::string;
      tok_.str = read_string();
      return;
    }
    if (c == '%') {
      ++pos_;
      tok_.kind = Tok::value_ref;
      if (pos_ < text_.size() && text_[pos_] == '"') {
        tok_.str = read_string();
      } else {
        std::string_view w = read_word();
        if (w.empty()) error_at(line_, "expected a value name after '%'");
        tok_.str = std::string(w);
      }
      return;
    }
    if (c == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '>') {
      tok_.kind = Tok::arrow;
      tok_.text = std::string_view(text_).substr(pos_, 2);
      pos_ += 2;
      return;
    }
    if (is_word_char(c)) {
      tok_.kind = Tok::word;
      tok_.text = read_word();
      return;
    }
    if (std::strchr("()[]{},:=<>#?", c) && c != '\0') {
      tok_.kind = Tok::punct;
      tok_.text = std::string_view(text_).substr(pos_, 1);
      ++pos_;
      return;
    }
    error_at(line_, fmt::format("unexpected character '{}'", describe_char(c)));
  }

  static std::string describe_char(char c) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) return fmt::format("\\x{:02x}", u);
    return std::string(1, c);
  }

  void skip_space() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n') {
        ++line_;
        ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view read_word() {
    const size_t start = pos_;
    while (pos_ < text_.size() && is_word_char(text_[pos_])) {
      if (text_[pos_] == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '/') break;
      ++pos_;
    }
    return std::string_view(text_).substr(start, pos_ - start);
  }

  static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  std::string read_string() {
    const int start_line = line_;
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) error_at(start_line, "unterminated string literal");
      const char c = text_[pos_++];
      if (c == '"') break;
      if (c == '\n') error_at(start_line, "unterminated string literal (newline inside quotes)");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) error_at(start_line, "unterminated string literal");
      const char e = text_[pos_++];
      switch (e) {
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
          const int hi = pos_ < text_.size() ? hex_digit(text_[pos_]) : -1;
          const int lo = pos_ + 1 < text_.size() ? hex_digit(text_[pos_ + 1]) : -1;
          if (hi < 0 || lo < 0) error_at(line_, "expected two hex digits after '\\x' in a string");
          out += static_cast<char>(hi * 16 + lo);
          pos_ += 2;
          break;
        }
        default:
          error_at(line_, fmt::format("unknown escape '\\{}' in a string (expected \\\" \\\\ \\n "
                                      "\\t \\r or \\xHH)",
                                      describe_char(e)));
      }
    }
    return out;
  }

  const std::string& text_;
  std::string source_;
  size_t pos_ = 0;
  int line_ = 1;
  Token tok_;
};

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::end:
      return "end of input";
    case Tok::word:
      return fmt::format("'{}'", t.text);
    case Tok::string:
      return fmt::format("string \"{}\"", t.str);
    case Tok::value_ref:
      return fmt::format("value %{}", t.str);
    case Tok::punct:
      return fmt::format("'{}'", t.text);
    case Tok::arrow:
      return "'->'";
  }
  return "?";
}

template <class T>
bool parse_integer(std::string_view s, T& out) {
  if (s.empty()) return false;
  auto res = std::from_chars(s.data(), s.data() + s.size(), out);
  return res.ec == std::errc() && res.ptr == s.data() + s.size();
}

// Parses the float forms the printer writes: nan, -nan, nan0x<bits>, inf, -inf, decimals.
// `Bits` is the unsigned type of the same width as F (for nan0x...).
template <class F, class Bits>
bool parse_float(std::string_view s, F& out) {
  if (s == "nan") {
    out = std::numeric_limits<F>::quiet_NaN();
    return true;
  }
  if (s == "-nan") {
    out = -std::numeric_limits<F>::quiet_NaN();
    return true;
  }
  if (s.substr(0, 5) == "nan0x") {
    Bits bits;
    auto sv = s.substr(5);
    auto res = std::from_chars(sv.data(), sv.data() + sv.size(), bits, 16);
    if (res.ec != std::errc() || res.ptr != sv.data() + sv.size() || sv.size() != 2 * sizeof(F)) {
      return false;
    }
    std::memcpy(&out, &bits, sizeof(F));
    return true;
  }
  if (s == "inf") {
    out = std::numeric_limits<F>::infinity();
    return true;
  }
  if (s == "-inf") {
    out = -std::numeric_limits<F>::infinity();
    return true;
  }
  if (s.empty()) return false;
  // from_chars does not accept "infinity"/"nan" spellings we did not handle above being mixed with
  // digits, and rejects a leading '+'.
  auto res = std::from_chars(s.data(), s.data() + s.size(), out);
  if (res.ec == std::errc::result_out_of_range) return false;
  return res.ec == std::errc() && res.ptr == s.data() + s.size();
}

// f16 elements: NaN forms as for f32 (4 hex digits of bits); decimals are read as f32 and rounded
// to f16 (exact for what the printer writes; a hand-written decimal may round twice).
bool parse_f16_bits(std::string_view s, uint16_t& bits) {
  if (s == "nan") {
    bits = 0x7e00u;
    return true;
  }
  if (s == "-nan") {
    bits = 0xfe00u;
    return true;
  }
  if (s.substr(0, 5) == "nan0x") {
    auto sv = s.substr(5);
    auto res = std::from_chars(sv.data(), sv.data() + sv.size(), bits, 16);
    return res.ec == std::errc() && res.ptr == sv.data() + sv.size() && sv.size() == 4;
  }
  float f;
  if (!parse_float<float, uint32_t>(s, f)) return false;
  bits = f32_to_f16_bits(f);
  return true;
}

class Parser {
 public:
  Parser(const std::string& text, const std::string& source) : lex_(text, source) {}

  std::unique_ptr<Graph> parse() {
    expect_word("graph", "'graph' at the start of the text");
    std::unique_ptr<Graph> g = parse_graph_after_keyword(/*is_subgraph=*/false);
    if (lex_.peek().kind != Tok::end) error("end of input after the closing '}'");
    return g;
  }

 private:
  // "NAME [opset N] (inputs) [captures (...)] -> (outputs) { statements }" after the word
  // 'graph'; a subgraph has no opset (it takes the enclosing graph's) and its own scope of names.
  std::unique_ptr<Graph> parse_graph_after_keyword(bool is_subgraph) {
    std::unique_ptr<Graph> saved_graph = std::move(g_);
    std::unordered_map<std::string, int> saved_defs = std::move(def_line_);
    def_line_.clear();
    g_ = std::make_unique<Graph>();
    g_->name = parse_name("the graph name");
    if (is_subgraph) {
      g_->opset = saved_graph ? saved_graph->opset : 0;
    } else {
      expect_word("opset", "'opset' after the graph name");
      g_->opset = parse_int<int64_t>("the opset version");
    }
    expect_punct('(', "'(' before the graph inputs");
    if (!is_punct(')')) {
      do {
        g_->inputs.push_back(parse_decl(/*allow_known=*/true));
      } while (accept_punct(','));
    }
    expect_punct(')', "',' or ')' in the graph input list");
    if (is_subgraph && is_word("captures")) {
      lex_.next();
      expect_punct('(', "'(' before the captured values");
      if (!is_punct(')')) {
        do {
          g_->captures.push_back(parse_decl(/*allow_known=*/true));
        } while (accept_punct(','));
      }
      expect_punct(')', "',' or ')' in the capture list");
    }
    if (lex_.peek().kind != Tok::arrow) error("'->' after the graph inputs");
    lex_.next();
    expect_punct('(', "'(' before the graph outputs");
    std::vector<std::pair<std::string, int>> output_names;
    if (!is_punct(')')) {
      do {
        if (lex_.peek().kind != Tok::value_ref) error("a graph output value (%name)");
        Token t = lex_.next();
        output_names.emplace_back(t.str, t.line);
      } while (accept_punct(','));
    }
    expect_punct(')', "',' or ')' in the graph output list");
    expect_punct('{', "'{' to open the graph body");
    while (!is_punct('}')) {
      if (lex_.peek().kind == Tok::end) error("'}' to close the graph body");
      parse_statement();
    }
    lex_.next();
    for (const auto& [name, line] : output_names) {
      Value* v = def_line_.count(name) ? g_->find_value(name) : nullptr;
      if (!v) lex_.error_at(line, fmt::format("graph output %{} is not defined", name));
      g_->outputs.push_back(v);
    }
    std::unique_ptr<Graph> result = std::move(g_);
    g_ = std::move(saved_graph);
    def_line_ = std::move(saved_defs);
    return result;
  }

  [[noreturn]] void error(const std::string& expected) const {
    lex_.error_at(lex_.peek().line,
                  fmt::format("expected {}, got {}", expected, describe(lex_.peek())));
  }

  bool is_punct(char c) const { return lex_.peek().kind == Tok::punct && lex_.peek().text[0] == c; }
  bool is_word(std::string_view w) const {
    return lex_.peek().kind == Tok::word && lex_.peek().text == w;
  }
  bool accept_punct(char c) {
    if (!is_punct(c)) return false;
    lex_.next();
    return true;
  }
  void expect_punct(char c, const char* what) {
    if (!accept_punct(c)) error(what);
  }
  void expect_word(std::string_view w, const char* what) {
    if (!is_word(w)) error(what);
    lex_.next();
  }

  // A bare word or a quoted string.
  std::string parse_name(const char* what) {
    const Token& t = lex_.peek();
    if (t.kind == Tok::word) return std::string(lex_.next().text);
    if (t.kind == Tok::string) return lex_.next().str;
    error(what);
  }

  template <class T>
  T parse_int(const char* what) {
    T v{};
    if (lex_.peek().kind != Tok::word || !parse_integer(lex_.peek().text, v)) {
      error(fmt::format("an integer ({})", what));
    }
    lex_.next();
    return v;
  }

  void parse_type(DType& dtype, Shape& shape) {
    if (accept_punct('?')) {  // a subgraph value typed when its body is instantiated
      dtype = DType::undefined;
      shape.clear();
      return;
    }
    if (lex_.peek().kind != Tok::word) error("an element type (f32, i64, ...)");
    const Token t = lex_.next();
    try {
      dtype = dtype_from_string(std::string(t.text));
    } catch (const Error& e) {
      lex_.error_at(t.line, e.what());
    }
    expect_punct('[', "'[' to start the shape");
    shape.clear();
    if (!is_punct(']')) {
      do {
        const int64_t d = parse_int<int64_t>("a dimension");
        if (d < 0) lex_.error_at(t.line, fmt::format("negative dimension {} in a shape", d));
        shape.push_back(d);
      } while (accept_punct(','));
    }
    expect_punct(']', "',' or ']' in the shape");
  }

  // Reads one element of `t` at flat index i from a word token.
  void parse_element(Tensor& t, int64_t i, const Token& tok) {
    const std::string_view s = tok.text;
    bool ok = false;
    switch (t.dtype()) {
      case DType::f32:
        ok = parse_float<float, uint32_t>(s, t.data<float>()[i]);
        break;
      case DType::f64:
        ok = parse_float<double, uint64_t>(s, t.data<double>()[i]);
        break;
      case DType::f16:
        ok = parse_f16_bits(s, t.data<uint16_t>()[i]);
        break;
      case DType::boolean:
        ok = s == "true" || s == "false";
        t.data<uint8_t>()[i] = s == "true" ? 1 : 0;
        break;
      case DType::u8:
        ok = parse_integer(s, t.data<uint8_t>()[i]);
        break;
      case DType::i8:
        ok = parse_integer(s, t.data<int8_t>()[i]);
        break;
      case DType::u16:
        ok = parse_integer(s, t.data<uint16_t>()[i]);
        break;
      case DType::i16:
        ok = parse_integer(s, t.data<int16_t>()[i]);
        break;
      case DType::i32:
        ok = parse_integer(s, t.data<int32_t>()[i]);
        break;
      case DType::i64:
        ok = parse_integer(s, t.data<int64_t>()[i]);
        break;
      case DType::u32:
        ok = parse_integer(s, t.data<uint32_t>()[i]);
        break;
      case DType::u64:
        ok = parse_integer(s, t.data<uint64_t>()[i]);
        break;
      case DType::undefined:
      case DType::string:
        break;
    }
    if (!ok) {
      const char* expected = t.dtype() == DType::boolean ? "true or false"
                             : dtype_is_float(t.dtype())
                                 ? "a decimal number, inf, -inf, nan or nan0x<bits>"
                                 : "an integer in range";
      lex_.error_at(tok.line, fmt::format("bad {} element '{}' (expected {})",
                                          dtype_to_string(t.dtype()), s, expected));
    }
  }

  // "[e0, e1, ...]" with exactly numel(shape) elements.
  Tensor parse_data(DType dtype, const Shape& shape) {
    if (is_word("dense")) {
      lex_.error_at(lex_.peek().line,
                    "tensor data was elided ('dense<...>', printed with "
                    "PrintOptions::elide_constants); this text cannot be parsed back");
    }
    const int line = lex_.peek().line;
    if (dtype == DType::undefined || dtype == DType::string) {
      lex_.error_at(line, fmt::format("tensor data of element type {} is not supported",
                                      dtype_to_string(dtype)));
    }
    Tensor t(dtype, shape);
    const int64_t n = t.numel();
    expect_punct('[', "'[' to start the tensor data");
    int64_t i = 0;
    if (!is_punct(']')) {
      do {
        if (lex_.peek().kind != Tok::word) error("a tensor element");
        const Token tok = lex_.next();
        if (i >= n) {
          lex_.error_at(tok.line, fmt::format("too many elements: {}{} holds {}",
                                              dtype_to_string(dtype), shape_to_string(shape), n));
        }
        parse_element(t, i++, tok);
      } while (accept_punct(','));
    }
    expect_punct(']', "',' or ']' in the tensor data");
    if (i != n) {
      lex_.error_at(line, fmt::format("{} elements given for {}{}, which holds {}", i,
                                      dtype_to_string(dtype), shape_to_string(shape), n));
    }
    return t;
  }

  // "[format NC1HWC0]" after a declared type (absent: plain).
  StorageFormat parse_format() {
    if (!is_word("format")) return StorageFormat::plain;
    lex_.next();
    if (!is_word("NC1HWC0")) error("a storage format after 'format' (NC1HWC0)");
    lex_.next();
    return StorageFormat::nc1hwc0;
  }

  // "%name: type [known data] [format NC1HWC0]": creates the value.
  Value* parse_decl(bool allow_known) {
    if (lex_.peek().kind != Tok::value_ref) error("a value declaration (%name: type)");
    const Token ref = lex_.next();
    auto it = def_line_.find(ref.str);
    if (it != def_line_.end()) {
      lex_.error_at(ref.line,
                    fmt::format("value %{} is already defined (line {})", ref.str, it->second));
    }
    expect_punct(':', "':' after the value name");
    DType dtype;
    Shape shape;
    parse_type(dtype, shape);
    std::shared_ptr<const Tensor> known;
    if (allow_known && is_word("known")) {
      lex_.next();
      known = std::make_shared<const Tensor>(parse_data(dtype, shape));
    }
    const StorageFormat format = parse_format();
    Value* v = g_->add_value(ref.str, dtype, shape);
    TESSEL_CHECK(v->name == ref.str, "value name {} changed to {}", ref.str, v->name);
    v->constant = std::move(known);
    v->format = format;
    def_line_[ref.str] = ref.line;
    return v;
  }

  Value* parse_use() {
    if (is_word("_")) {
      lex_.next();
      return nullptr;
    }
    if (lex_.peek().kind != Tok::value_ref) error("an operand (%name or _)");
    const Token ref = lex_.next();
    Value* v = def_line_.count(ref.str) ? g_->find_value(ref.str) : nullptr;
    if (!v) {
      lex_.error_at(ref.line, fmt::format("use of undefined value %{} (values must be defined "
                                          "before they are used)",
                                          ref.str));
    }
    return v;
  }

  // Attribute value; see graph.h for the forms.
  AttrValue parse_attr_value(const std::string& attr) {
    const Token& t = lex_.peek();
    if (t.kind == Tok::string) return lex_.next().str;
    if (t.kind == Tok::word) {
      if (t.text == "ints" || t.text == "floats" || t.text == "strings") {
        const std::string kind(lex_.next().text);
        expect_punct('[', "'[' after the list kind");
        expect_punct(']', "']' (a typed list prefix is only used for empty lists)");
        if (kind == "ints") return std::vector<int64_t>{};
        if (kind == "floats") return std::vector<float>{};
        return std::vector<std::string>{};
      }
      if (t.text == "graph") {
        lex_.next();
        return GraphAttr(parse_graph_after_keyword(/*is_subgraph=*/true));
      }
      if (t.text == "tensor") {
        lex_.next();
        expect_punct('<', "'<' after 'tensor'");
        DType dtype;
        Shape shape;
        parse_type(dtype, shape);
        Tensor value = parse_data(dtype, shape);
        expect_punct('>', "'>' to close the tensor attribute");
        return value;
      }
      const Token w = lex_.next();
      int64_t i;
      if (parse_integer(w.text, i)) return i;
      float f;
      if (parse_float<float, uint32_t>(w.text, f)) return f;
      lex_.error_at(w.line, fmt::format("bad value '{}' for attribute '{}' (expected an int, a "
                                        "float, a string, a list or tensor<...>)",
                                        w.text, attr));
    }
    if (is_punct('[')) {
      const int line = t.line;
      lex_.next();
      if (is_punct(']')) {
        lex_.error_at(line, fmt::format("empty list for attribute '{}' needs its kind: ints[], "
                                        "floats[] or strings[]",
                                        attr));
      }
      if (lex_.peek().kind == Tok::string) {
        std::vector<std::string> out;
        do {
          if (lex_.peek().kind != Tok::string) error("a string (the list holds strings)");
          out.push_back(lex_.next().str);
        } while (accept_punct(','));
        expect_punct(']', "',' or ']' in the list");
        return out;
      }
      std::vector<Token> words;
      do {
        if (lex_.peek().kind != Tok::word) error("a number in the list");
        words.push_back(lex_.next());
      } while (accept_punct(','));
      expect_punct(']', "',' or ']' in the list");
      std::vector<int64_t> ints;
      for (const Token& w : words) {
        int64_t v;
        if (!parse_integer(w.text, v)) break;
        ints.push_back(v);
      }
      if (ints.size() == words.size()) return ints;
      std::vector<float> floats;
      for (const Token& w : words) {
        float v;
        if (!parse_float<float, uint32_t>(w.text, v)) {
          lex_.error_at(w.line, fmt::format("bad list element '{}' for attribute '{}' (expected "
                                            "a number)",
                                            w.text, attr));
        }
        floats.push_back(v);
      }
      return floats;
    }
    error(fmt::format("a value for attribute '{}'", attr));
  }

  void parse_statement() {
    const int line = lex_.peek().line;
    // Declarations are parsed first but created only after the right-hand side is read, so that
    // uses on the right cannot refer to the values being defined.
    struct Decl {
      std::string name;
      DType dtype;
      Shape shape;
      std::shared_ptr<const Tensor> known;
      int line;
      StorageFormat format = StorageFormat::plain;
    };
    std::vector<Decl> decls;
    do {
      if (lex_.peek().kind != Tok::value_ref) error("a value declaration (%name: type)");
      const Token ref = lex_.next();
      Decl d{ref.str, DType::undefined, {}, nullptr, ref.line};
      expect_punct(':', "':' after the value name");
      parse_type(d.dtype, d.shape);
      if (is_word("known")) {
        lex_.next();
        d.known = std::make_shared<const Tensor>(parse_data(d.dtype, d.shape));
      }
      d.format = parse_format();
      decls.push_back(std::move(d));
    } while (accept_punct(','));
    expect_punct('=', "'=' after the declared values");

    auto define = [&](const Decl& d) {
      auto it = def_line_.find(d.name);
      if (it != def_line_.end()) {
        lex_.error_at(d.line,
                      fmt::format("value %{} is already defined (line {})", d.name, it->second));
      }
      Value* v = g_->add_value(d.name, d.dtype, d.shape);
      TESSEL_CHECK(v->name == d.name, "value name {} changed to {}", d.name, v->name);
      v->constant = d.known;
      v->format = d.format;
      def_line_[d.name] = d.line;
      return v;
    };

    if (is_word("const")) {
      lex_.next();
      if (decls.size() != 1 || decls[0].known) {
        lex_.error_at(line, "a constant defines exactly one value, without 'known'");
      }
      Tensor data = parse_data(decls[0].dtype, decls[0].shape);
      Value* v = define(decls[0]);
      v->constant = std::make_shared<const Tensor>(std::move(data));
      return;
    }
    if (lex_.peek().kind != Tok::word && lex_.peek().kind != Tok::string) {
      error("'const' or an op type after '='");
    }
    const std::string op_type = parse_name("an op type");
    expect_punct('(', "'(' after the op type");
    std::vector<Value*> inputs;
    if (!is_punct(')')) {
      do {
        inputs.push_back(parse_use());
      } while (accept_punct(','));
    }
    expect_punct(')', "',' or ')' in the operand list");
    Attributes attrs;
    if (accept_punct('{')) {
      if (!is_punct('}')) {
        do {
          const int attr_line = lex_.peek().line;
          const std::string name = parse_name("an attribute name");
          if (attrs.has(name)) {
            lex_.error_at(attr_line, fmt::format("attribute '{}' given twice", name));
          }
          expect_punct('=', "'=' after the attribute name");
          attrs.set(name, parse_attr_value(name));
        } while (accept_punct(','));
      }
      expect_punct('}', "',' or '}' in the attribute list");
    }
    std::string node_name;
    if (accept_punct('#')) {
      const int name_line = lex_.peek().line;
      node_name = parse_name("the node name after '#'");
      if (g_->find_node(node_name)) {
        lex_.error_at(name_line, fmt::format("node name '{}' is used twice", node_name));
      }
    }
    std::vector<Value*> outputs;
    for (const Decl& d : decls) outputs.push_back(define(d));
    Node* n =
        g_->add_node(op_type, node_name, std::move(inputs), std::move(outputs), std::move(attrs));
    TESSEL_CHECK(node_name.empty() || n->name == node_name, "node name {} changed to {}", node_name,
                 n->name);
  }

  Lexer lex_;
  std::unique_ptr<Graph> g_;
  std::unordered_map<std::string, int> def_line_;
};

}  // namespace

std::unique_ptr<Graph> parse_graph(const std::string& text, const std::string& source_name) {
  Parser p(text, source_name);
  return p.parse();
}

}  // namespace tessel
