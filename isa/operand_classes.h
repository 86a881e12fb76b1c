// The operand classes of the ISA described field by field: for every operand struct of isa/isa.h
// (ScalarArgs .. VectorArgs) a table of its fields in declaration order, each with its value kind
// (how it is printed, parsed and encoded), its role in the text form, its role as an operand
// (read/written, allowed scopes), its place in the compact binary form and its verifier rule.
// Together with the instruction records (isa/instruction_list.h) these tables are the single
// description of the instruction set: the assembler and disassembler (isa/asm.cpp), the encoder
// and decoder (isa/encoding.cpp), the verifier (isa/verifier.cpp), the operand footprints
// (isa/footprint.h) and the generated tables of docs/isa.md (isa/reference.cpp) are written once
// over these tables, per value kind, not per opcode.
//
// The three forms, in terms of the tables (docs/isa.md, "Assembly syntax" and "Binary encoding"):
//  - text: mnemonic, `.dtype` for the suffix field, the used operand fields as positional operands,
//    then the key=value fields in table order (required ones always, optional ones when they
//    differ from their default), then the unused operand fields that differ from their default.
//  - compact binary: a flag byte holding the flag-bit fields (dtype, bools, pipes) in table order
//    and then one presence bit per optional group, followed by the payload of the used fields in
//    compact order (table order unless the class gives compact_order), an optional group's fields
//    only when its presence bit is set. A class without flag bits has no flag byte.
//  - full binary: every field in table order (the struct's declaration order).
// Internal to the isa library (not part of its public API).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "isa/isa.h"

namespace tessel::isa::opclass {

/// Bits of the dtype field in the compact binary form (encoding version 3: 4 bits, the 11 dtypes;
/// version 2 had 1 bit, f16 or f32).
inline constexpr int kDTypeFlagBits = 4;
static_assert(kNumDTypes <= (1 << kDTypeFlagBits),
              "a new dtype no longer fits the compact form's dtype bit: widen kDTypeFlagBits and "
              "bump kEncodingVersion (isa/encoding.h)");

// ---------------------------------------------------------------------------------------------
// Value kinds. A kind names how a field's value is written; asm.cpp implements its text form and
// encoding.cpp its binary forms. `compact`/`full` are its wire types in the two binary forms (none:
// no payload, the value lives in flag bits); `flag_bits` is its width in the compact flag byte.
namespace kind {
// A binary wire type (docs/isa.md, "Binary encoding"); none: no payload in that form.
enum class Wire : uint8_t { none, u8, uv, sv, f32, mem, vec, dims };
constexpr const char* wire_name(Wire w) {
  constexpr const char* kNames[] = {"", "u8", "uv", "sv", "f32", "mem", "vec", "dims"};
  return kNames[static_cast<int>(w)];
}
template <class T, int FlagBits, Wire Compact, Wire Full>
struct Kind {
  using type = T;
  static constexpr int flag_bits = FlagBits;
  static constexpr Wire compact = Compact, full = Full;
};
// A scalar register index: text xN; compact u8 (< 32); full u8.
struct Reg : Kind<uint8_t, 0, Wire::u8, Wire::u8> {};
// A branch target: a label (positional) or an instruction index; compact uv (>= 0); full sv.
struct Target : Kind<int32_t, 0, Wire::uv, Wire::sv> {};
struct I64 : Kind<int64_t, 0, Wire::sv, Wire::sv> {};
struct I32 : Kind<int32_t, 0, Wire::sv, Wire::sv> {};
struct U32 : Kind<uint32_t, 0, Wire::uv, Wire::uv> {};
struct U8 : Kind<uint8_t, 0, Wire::u8, Wire::u8> {};
// Text 0/1; compact: one flag bit; full u8.
struct Bool : Kind<bool, 1, Wire::none, Wire::u8> {};
// Text: the shortest round-trip decimal, inf, nan(0xBITS); binary: the IEEE-754 bits.
struct F32 : Kind<float, 0, Wire::f32, Wire::f32> {};
// A pipe by name; compact: 3 flag bits; full u8.
struct PipeName : Kind<Pipe, 3, Wire::none, Wire::u8> {};
// The element type: the mnemonic's `.f16`/`.f32` suffix; compact: kDTypeFlagBits flag bits.
struct DTypeSuffix : Kind<DType, kDTypeFlagBits, Wire::none, Wire::u8> {};
// A second element type as a key=value field (`src_dtype=f32`); compact and full: u8.
struct DTypeKey : Kind<DType, 0, Wire::u8, Wire::u8> {};
// scope[xR+offset]; compact: u8 scope | reg << 3, offset sv; full: scope u8, reg u8, offset sv.
struct Mem : Kind<MemRef, 0, Wire::mem, Wire::mem> {};
// A memory operand with {elem_stride,repeat_stride}, each sv in binary.
struct Vec : Kind<VecOperand, 0, Wire::vec, Wire::vec> {};
// dma's dimensions: ndims, extent, dst_stride, src_stride and the valid window, as the lists
// extent=[..], dst_stride=[..], src_stride=[..] and valid=[b:e,..] of the text form. Compact: flag
// bits 0-1 ndims - 1, bit 2 a valid window follows; payload per dim extent uv, dst_stride sv,
// src_stride sv, then (bit 2) per dim valid_begin uv, valid_end uv. Full: ndims u8, then for all
// kMaxDmaDims dims extent uv, dst_stride sv, src_stride sv, valid_begin uv, valid_end uv.
struct DmaDims : Kind<DmaArgs, 3, Wire::dims, Wire::dims> {};
// dma's `ndims=` key, printed only when the lists print more entries than ndims (entries past
// ndims are set, or ndims > 4). Stored by DmaDims in both binary forms.
struct DmaNdims : Kind<DmaArgs, 0, Wire::none, Wire::none> {};
}  // namespace kind

/// How a field appears in the text form.
enum class Text : uint8_t {
  suffix,    // the mnemonic's dtype suffix (`vadd.f16`)
  operand,   // a positional operand of the instructions whose record lists it; an unused operand
             // is printed as an extra `name=value` when it differs from its default
  required,  // `name=value`, must be given
  optional,  // `name=value`, printed only when it differs from its default
  custom,    // the kind prints and parses its own keys (dma's lists)
};

/// What an instruction does with an operand (docs tables, footprints).
enum class Access : uint8_t {
  none,
  read,
  write,
  write_acc,  // written; also read when the instruction accumulates (mmad acc=1)
};

/// A set of memory scopes, bit s for Scope s.
using ScopeSet = uint8_t;
constexpr ScopeSet scopes(std::initializer_list<Scope> list) {
  ScopeSet s = 0;
  for (Scope x : list) s = static_cast<ScopeSet>(s | (1u << static_cast<int>(x)));
  return s;
}
constexpr bool in_set(ScopeSet set, Scope s) {
  return static_cast<int>(s) < kNumScopes && ((set >> static_cast<int>(s)) & 1);
}

/// The scopes of `set` joined by `sep` ("l0a or l0b").
inline std::string scope_list(ScopeSet set, const char* sep = " or ") {
  std::string out;
  for (int s = 0; s < kNumScopes; ++s) {
    if (!((set >> s) & 1)) continue;
    if (!out.empty()) out += sep;
    out += scope_name(static_cast<Scope>(s));
  }
  return out;
}

/// One field of an operand class. Built with field<Kind>(name, &Args::member) (or
/// composite<Kind, Args>(name) for kinds that read the whole struct) and the setters below.
template <class A, class K>
struct FieldDesc {
  using args_type = A;
  using kind_type = K;
  using value_type = typename K::type;
  static constexpr bool kWhole = std::is_same_v<value_type, A>;
  using member_type = std::conditional_t<kWhole, std::nullptr_t, value_type A::*>;

  Field name;
  member_type member{};
  Text text = Text::required;
  const char* what = "";               // what the value is, for "expected ..." in errors
  const char* value_what_ = nullptr;   // names the value in range errors (default: see value_what)
  const char* placeholder_ = nullptr;  // the operand in the docs' syntax column (default: name)
  Access access = Access::none;
  ScopeSet allowed = 0;     // memory operands: the scopes the operand may be in
  uint8_t group = 0;        // compact form: 0 always written, g > 0 optional group g
  bool nonzero_ = false;    // verifier: a zero value is a "zero extent"
  bool selectable = false;  // used only by instructions whose record lists it
  uint8_t since = 0;        // binary forms: first encoding version that has the field

  constexpr const value_type& get(const A& a) const {
    if constexpr (kWhole)
      return a;
    else
      return a.*member;
  }
  constexpr value_type& get(A& a) const {
    if constexpr (kWhole)
      return a;
    else
      return a.*member;
  }
  /// The name in range errors: for keys the field name, for positional operands `what`.
  constexpr const char* value_what() const {
    return value_what_ ? value_what_ : text == Text::operand ? what : field_name(name);
  }
  constexpr const char* placeholder() const {
    return placeholder_ ? placeholder_ : field_name(name);
  }

  // Setters (each returns the changed copy).
  constexpr FieldDesc operand(const char* w) const {
    FieldDesc d = *this;
    d.text = Text::operand, d.what = w, d.selectable = true;
    return d;
  }
  constexpr FieldDesc required(const char* w) const {
    FieldDesc d = *this;
    d.text = Text::required, d.what = w;
    return d;
  }
  constexpr FieldDesc optional(const char* w) const {
    FieldDesc d = *this;
    d.text = Text::optional, d.what = w;
    return d;
  }
  /// A key=value field used only by the instructions whose record lists it (like an operand).
  constexpr FieldDesc only_when_listed() const {
    FieldDesc d = *this;
    d.selectable = true;
    return d;
  }
  constexpr FieldDesc suffix() const {
    FieldDesc d = *this;
    d.text = Text::suffix, d.what = "a dtype";
    return d;
  }
  constexpr FieldDesc custom() const {
    FieldDesc d = *this;
    d.text = Text::custom;
    return d;
  }
  constexpr FieldDesc reads(ScopeSet s = 0) const {
    FieldDesc d = *this;
    d.access = Access::read, d.allowed = s;
    return d;
  }
  constexpr FieldDesc writes(ScopeSet s = 0) const {
    FieldDesc d = *this;
    d.access = Access::write, d.allowed = s;
    return d;
  }
  constexpr FieldDesc accumulates(ScopeSet s) const {
    FieldDesc d = *this;
    d.access = Access::write_acc, d.allowed = s;
    return d;
  }
  constexpr FieldDesc in_group(uint8_t g) const {
    FieldDesc d = *this;
    d.group = g;
    return d;
  }
  constexpr FieldDesc nonzero() const {
    FieldDesc d = *this;
    d.nonzero_ = true;
    return d;
  }
  constexpr FieldDesc named_in_errors(const char* w) const {
    FieldDesc d = *this;
    d.value_what_ = w;
    return d;
  }
  /// The field exists in images of encoding version >= v only (decode of an older image leaves
  /// it at its default).
  constexpr FieldDesc since_version(uint8_t v) const {
    FieldDesc d = *this;
    d.since = v;
    return d;
  }
  constexpr FieldDesc shown_as(const char* p) const {
    FieldDesc d = *this;
    d.placeholder_ = p;
    return d;
  }
};

template <class K, class A>
constexpr FieldDesc<A, K> field(Field name, typename K::type A::*member) {
  FieldDesc<A, K> d{};
  d.name = name;
  d.member = member;
  return d;
}
template <class K, class A>
constexpr FieldDesc<A, K> composite(Field name) {
  FieldDesc<A, K> d{};
  d.name = name;
  return d;
}

// ---------------------------------------------------------------------------------------------
// The classes. Field order = declaration order of the struct (the full binary form's order) =
// the text form's key order. `flags_what` names the compact flag byte in decoding errors.

template <class A>
struct ClassDesc;

template <>
struct ClassDesc<ScalarArgs> {
  static constexpr const char* flags_what = nullptr;
  static constexpr const char* kReg = "a register x0..x31";
  static constexpr auto fields = std::make_tuple(
      field<kind::Reg>(Field::rd, &ScalarArgs::rd).operand(kReg).writes().shown_as("xd"),
      field<kind::Reg>(Field::rs, &ScalarArgs::rs).operand(kReg).reads().shown_as("xs"),
      field<kind::Reg>(Field::rt, &ScalarArgs::rt).operand(kReg).reads().shown_as("xt"),
      field<kind::I64>(Field::imm, &ScalarArgs::imm).operand("an integer immediate"),
      field<kind::Target>(Field::target, &ScalarArgs::target)
          .operand("a label or instruction index"));
};

template <>
struct ClassDesc<SyncArgs> {
  static constexpr const char* flags_what = "the sync pipe byte";
  static constexpr auto fields = std::make_tuple(
      field<kind::PipeName>(Field::src, &SyncArgs::src).operand("the source pipe").shown_as("SRC"),
      field<kind::PipeName>(Field::dst, &SyncArgs::dst)
          .operand("the destination pipe")
          .shown_as("DST"),
      field<kind::U8>(Field::event, &SyncArgs::event).operand("an event id"));
};

template <>
struct ClassDesc<DmaArgs> {
  static constexpr const char* flags_what = "the dma flag byte";
  /// The legal (src, dst) scope pairs: MTE2 loads gm->l1, gm->ub; MTE3 stores ub->gm, ub->l1.
  static constexpr std::array<std::pair<Scope, Scope>, 4> scope_pairs = {{{Scope::gm, Scope::l1},
                                                                          {Scope::gm, Scope::ub},
                                                                          {Scope::ub, Scope::gm},
                                                                          {Scope::ub, Scope::l1}}};
  static constexpr auto fields =
      std::make_tuple(field<kind::DTypeSuffix>(Field::dtype, &DmaArgs::dtype).suffix(),
                      field<kind::Mem>(Field::dst, &DmaArgs::dst)
                          .operand("the destination memory operand scope[xR+offset]")
                          .writes(scopes({Scope::gm, Scope::l1, Scope::ub})),
                      field<kind::Mem>(Field::src, &DmaArgs::src)
                          .operand("the source memory operand scope[xR+offset]")
                          .reads(scopes({Scope::gm, Scope::ub})),
                      composite<kind::DmaDims, DmaArgs>(Field::dims).custom(),
                      field<kind::F32>(Field::pad, &DmaArgs::pad_value)
                          .optional("a pad value")
                          .named_in_errors("a pad value")
                          .in_group(1),
                      composite<kind::DmaNdims, DmaArgs>(Field::ndims).custom(),
                      // Last, and only in images of version >= 4 (the full form of version 3 has
                      // no such field: decode leaves it 0).
                      field<kind::U32>(Field::cores, &DmaArgs::cores)
                          .operand("the multicast core-set size")
                          .since_version(4));
};

template <>
struct ClassDesc<Load2dArgs> {
  static constexpr bool uses_fractal = true;  // footprints depend on the cube fractal
  static constexpr const char* flags_what = "the load2d flag byte";
  static constexpr auto fields = std::make_tuple(
      field<kind::DTypeSuffix>(Field::dtype, &Load2dArgs::dtype).suffix(),
      field<kind::Mem>(Field::dst, &Load2dArgs::dst)
          .operand("the destination memory operand")
          .writes(scopes({Scope::l0a, Scope::l0b})),
      field<kind::Mem>(Field::src, &Load2dArgs::src)
          .operand("the source memory operand")
          .reads(scopes({Scope::l1})),
      field<kind::U32>(Field::rows, &Load2dArgs::rows).required("a row count").nonzero(),
      field<kind::U32>(Field::cols, &Load2dArgs::cols).required("a column count").nonzero(),
      field<kind::I64>(Field::src_row_stride, &Load2dArgs::src_row_stride)
          .required("a row stride in elements"),
      field<kind::Bool>(Field::transpose, &Load2dArgs::transpose).optional("0 or 1"));
};

template <>
struct ClassDesc<Img2colArgs> {
  static constexpr bool uses_fractal = true;  // footprints depend on the cube fractal
  static constexpr const char* flags_what = "the img2col flag byte";
  static constexpr const char* kCount = "a non-negative integer";
  static constexpr auto fields = std::make_tuple(
      field<kind::DTypeSuffix>(Field::dtype, &Img2colArgs::dtype).suffix(),
      field<kind::Mem>(Field::dst, &Img2colArgs::dst)
          .operand("the destination memory operand")
          .writes(scopes({Scope::l0a, Scope::l0b})),
      field<kind::Mem>(Field::src, &Img2colArgs::src)
          .operand("the source memory operand")
          .reads(scopes({Scope::l1})),
      field<kind::U32>(Field::c, &Img2colArgs::c).required(kCount).nonzero(),
      field<kind::U32>(Field::h, &Img2colArgs::h).required(kCount).nonzero(),
      field<kind::U32>(Field::w, &Img2colArgs::w).required(kCount).nonzero(),
      field<kind::U32>(Field::kh, &Img2colArgs::kh).required(kCount).nonzero(),
      field<kind::U32>(Field::kw, &Img2colArgs::kw).required(kCount).nonzero(),
      field<kind::U32>(Field::stride_h, &Img2colArgs::stride_h)
          .optional(kCount)
          .nonzero()
          .in_group(1),
      field<kind::U32>(Field::stride_w, &Img2colArgs::stride_w)
          .optional(kCount)
          .nonzero()
          .in_group(1),
      field<kind::U32>(Field::dilation_h, &Img2colArgs::dilation_h)
          .optional(kCount)
          .nonzero()
          .in_group(1),
      field<kind::U32>(Field::dilation_w, &Img2colArgs::dilation_w)
          .optional(kCount)
          .nonzero()
          .in_group(1),
      field<kind::I32>(Field::pad_top, &Img2colArgs::pad_top).optional("an integer").in_group(1),
      field<kind::I32>(Field::pad_left, &Img2colArgs::pad_left).optional("an integer").in_group(1),
      field<kind::U32>(Field::oh, &Img2colArgs::oh).required(kCount).nonzero(),
      field<kind::U32>(Field::ow, &Img2colArgs::ow).required(kCount).nonzero(),
      field<kind::U32>(Field::c0, &Img2colArgs::c0)
          .optional("a non-negative integer (0: dense source, > 0: NC1HWC0 with this C0)")
          .in_group(2));
  /// The compact payload writes the output size before the optional geometry group.
  static constexpr std::array compact_order = {
      Field::dst,        Field::src,      Field::c,        Field::h,
      Field::w,          Field::kh,       Field::kw,       Field::oh,
      Field::ow,         Field::stride_h, Field::stride_w, Field::dilation_h,
      Field::dilation_w, Field::pad_top,  Field::pad_left, Field::c0};
};

template <>
struct ClassDesc<MmadArgs> {
  static constexpr bool uses_fractal = true;  // footprints depend on the cube fractal
  static constexpr const char* flags_what = "the mmad flag byte";
  static constexpr auto fields = std::make_tuple(
      field<kind::Mem>(Field::c, &MmadArgs::c)
          .operand("the L0C accumulator operand")
          .accumulates(scopes({Scope::l0c})),
      field<kind::Mem>(Field::a, &MmadArgs::a)
          .operand("the L0A operand")
          .reads(scopes({Scope::l0a})),
      field<kind::Mem>(Field::b, &MmadArgs::b)
          .operand("the L0B operand")
          .reads(scopes({Scope::l0b})),
      field<kind::U32>(Field::m1, &MmadArgs::m1).required("a fractal count").nonzero(),
      field<kind::U32>(Field::k1, &MmadArgs::k1).required("a fractal count").nonzero(),
      field<kind::U32>(Field::n1, &MmadArgs::n1).required("a fractal count").nonzero(),
      field<kind::Bool>(Field::acc, &MmadArgs::accumulate).optional("0 or 1"),
      // The int8 mode (encoding version 5): one optional group, absent in float-mode mmads.
      field<kind::DTypeKey>(Field::a_dtype, &MmadArgs::a_dtype)
          .optional("the element type of A (f16, i8 or u8)")
          .in_group(1)
          .since_version(5),
      field<kind::DTypeKey>(Field::b_dtype, &MmadArgs::b_dtype)
          .optional("the element type of B (f16, i8 or u8)")
          .in_group(1)
          .since_version(5));
};

template <>
struct ClassDesc<FixArgs> {
  static constexpr bool uses_fractal = true;  // footprints depend on the cube fractal
  static constexpr const char* flags_what = "the fix flag byte";
  static constexpr auto fields = std::make_tuple(
      field<kind::DTypeSuffix>(Field::dst_dtype, &FixArgs::dst_dtype).suffix(),
      field<kind::Mem>(Field::dst, &FixArgs::dst)
          .operand("the destination memory operand")
          .writes(scopes({Scope::ub})),
      field<kind::Mem>(Field::src, &FixArgs::src)
          .operand("the L0C source operand")
          .reads(scopes({Scope::l0c})),
      field<kind::U32>(Field::m, &FixArgs::m).required("a row count").nonzero(),
      field<kind::U32>(Field::n, &FixArgs::n).required("a column count").nonzero(),
      field<kind::I64>(Field::dst_row_stride, &FixArgs::dst_row_stride)
          .required("a row stride in elements"),
      field<kind::Bool>(Field::relu, &FixArgs::relu).optional("0 or 1"),
      // Requantisation (encoding version 5): read when dst_dtype is i8 or u8.
      field<kind::Bool>(Field::per_channel, &FixArgs::per_channel)
          .optional("0 or 1")
          .since_version(5),
      field<kind::Mem>(Field::quant, &FixArgs::quant)
          .optional("the requantisation table operand ub[xR+offset]")
          .reads(scopes({Scope::ub}))
          .in_group(1)
          .since_version(5),
      field<kind::I32>(Field::zero_point, &FixArgs::zero_point)
          .optional("an integer zero point")
          .in_group(1)
          .since_version(5),
      // Per-row table entries (encoding version 7): the convolution's channels.
      field<kind::Bool>(Field::per_row, &FixArgs::per_row).optional("0 or 1").since_version(7));
};

template <>
struct ClassDesc<VectorArgs> {
  static constexpr const char* flags_what = "the vector flag byte";
  static constexpr const char* kVec = "a vector operand ub[xR+offset]{elem_stride,repeat_stride}";
  static constexpr auto fields = std::make_tuple(
      field<kind::DTypeSuffix>(Field::dtype, &VectorArgs::dtype).suffix(),
      field<kind::Vec>(Field::dst, &VectorArgs::dst).operand(kVec).writes(scopes({Scope::ub})),
      field<kind::Vec>(Field::src0, &VectorArgs::src0).operand(kVec).reads(scopes({Scope::ub})),
      field<kind::Vec>(Field::src1, &VectorArgs::src1).operand(kVec).reads(scopes({Scope::ub})),
      field<kind::Vec>(Field::src2, &VectorArgs::src2).operand(kVec).reads(scopes({Scope::ub})),
      field<kind::U32>(Field::count, &VectorArgs::count)
          .required("an element count per repeat")
          .nonzero(),
      field<kind::U32>(Field::repeat, &VectorArgs::repeat)
          .optional("a repeat count")
          .nonzero()
          .in_group(1),
      field<kind::F32>(Field::scalar, &VectorArgs::scalar).operand("a scalar value"),
      field<kind::DTypeKey>(Field::src_dtype, &VectorArgs::src_dtype)
          .required("the source dtype")
          .only_when_listed());
};

template <>
struct ClassDesc<L2HintArgs> {
  static constexpr const char* flags_what = nullptr;
  // Encoding version 6 added the class; every field exists since then.
  static constexpr auto fields = std::make_tuple(
      field<kind::Mem>(Field::src, &L2HintArgs::src)
          .operand("the GM operand gm[xR+offset]")
          .reads(scopes({Scope::gm})),
      field<kind::U32>(Field::bytes, &L2HintArgs::bytes).required("a byte count").nonzero());
};

// ---------------------------------------------------------------------------------------------
// Traversal

template <class A>
inline constexpr std::size_t kNumFields =
    std::tuple_size_v<std::decay_t<decltype(ClassDesc<A>::fields)>>;

/// Calls fn(desc) for every field of class A in table order.
template <class A, class Fn>
constexpr void for_each_field(Fn&& fn) {
  [&]<std::size_t... I>(std::index_sequence<I...>) { (fn(std::get<I>(ClassDesc<A>::fields)), ...); }
  (std::make_index_sequence<kNumFields<A>>{});
}

/// Calls fn(desc, index) for every field of class A in table order.
template <class A, class Fn>
constexpr void for_each_field_indexed(Fn&& fn) {
  [&]<std::size_t... I>(std::index_sequence<I...>) {
    (fn(std::get<I>(ClassDesc<A>::fields), static_cast<int>(I)), ...);
  }
  (std::make_index_sequence<kNumFields<A>>{});
}

/// The index of field `f` in class A's table, -1 if A has none.
template <class A>
constexpr int field_index(Field f) {
  int index = -1;
  for_each_field_indexed<A>([&](const auto& d, int i) {
    if (d.name == f) index = i;
  });
  return index;
}

/// Calls fn(std::type_identity<Args>{}) for the struct of operand class `c`.
template <class Fn>
constexpr decltype(auto) with_class(ArgsClass c, Fn&& fn) {
  switch (c) {
#define TESSEL_ISA_X(cls, type) \
  case ArgsClass::cls:          \
    return fn(std::type_identity<type>{});
    TESSEL_ISA_ARGS_CLASSES(TESSEL_ISA_X)
#undef TESSEL_ISA_X
  }
  return fn(std::type_identity<ScalarArgs>{});  // not reached for a declared class
}

/// Bit i is set when the instruction uses field i of its class: every field that is not
/// selectable, and the selectable ones its record lists. Throws (at compile time) when a record
/// lists a field its class does not have, a field that is not selectable, or fields out of order.
template <class A>
constexpr uint32_t used_fields(const InstrInfo& r) {
  uint32_t mask = 0;
  for_each_field_indexed<A>([&](const auto& d, int i) {
    if (!d.selectable) mask |= 1u << i;
  });
  int last = -1;
  for (int k = 0; k < r.num_operands; ++k) {
    const int i = field_index<A>(r.operands[k]);
    if (i < 0) throw "a record lists a field its operand class does not have";
    if (i <= last) throw "a record lists its operands out of the class's field order";
    bool selectable = false;
    for_each_field_indexed<A>([&](const auto& d, int j) {
      if (j == i) selectable = d.selectable;
    });
    if (!selectable) throw "a record lists a field that is always used";
    mask |= 1u << i;
    last = i;
  }
  return mask;
}

/// used_fields() of every opcode.
inline constexpr std::array<uint32_t, kNumOpcodes> kUsedFields = [] {
  std::array<uint32_t, kNumOpcodes> m{};
  for (int op = 0; op < kNumOpcodes; ++op) {
    const InstrInfo& r = kInstructions[op];
    if (static_cast<int>(r.op) != op) throw "kInstructions is not indexed by opcode";
    m[op] = with_class(r.cls, [&](auto t) { return used_fields<typename decltype(t)::type>(r); });
  }
  return m;
}();

constexpr bool field_used(Opcode op, int index) {
  return (kUsedFields[static_cast<int>(op)] >> index) & 1;
}

/// Memory operand kinds (their fields have an address and a scope).
template <class K>
inline constexpr bool kIsMemory = std::is_same_v<K, kind::Mem> || std::is_same_v<K, kind::Vec>;
inline const MemRef& mem_ref(const MemRef& m) { return m; }
inline const MemRef& mem_ref(const VecOperand& v) { return v.addr; }
inline MemRef& mem_ref(MemRef& m) { return m; }
inline MemRef& mem_ref(VecOperand& v) { return v.addr; }

/// A default-constructed operand struct: the default of every field.
template <class A>
inline constexpr A kDefaultArgs{};

inline uint32_t float_bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

/// Exact equality of two values of a kind (floats by bit pattern; composites compare what they
/// store).
template <class K>
bool same_value(const typename K::type& x, const typename K::type& y) {
  if constexpr (std::is_same_v<K, kind::F32>) {
    return float_bits(x) == float_bits(y);
  } else if constexpr (std::is_same_v<K, kind::DmaDims>) {
    return x.ndims == y.ndims && x.extent == y.extent && x.dst_stride == y.dst_stride &&
           x.src_stride == y.src_stride && x.valid_begin == y.valid_begin &&
           x.valid_end == y.valid_end;
  } else if constexpr (std::is_same_v<K, kind::DmaNdims>) {
    return x.ndims == y.ndims;
  } else {
    return x == y;
  }
}

/// True when field `d` of `a` holds its default value.
template <class D>
bool is_default(const D& d, const typename D::args_type& a) {
  return same_value<typename D::kind_type>(d.get(a), d.get(kDefaultArgs<typename D::args_type>));
}

/// True when class A's compact_order lists each field that has a compact payload exactly once.
template <class A>
constexpr bool compact_order_complete() {
  bool ok = true;
  for_each_field<A>([&](const auto& d) {
    int n = 0;
    for (Field f : ClassDesc<A>::compact_order) n += f == d.name;
    ok = ok && n == (std::decay_t<decltype(d)>::kind_type::compact != kind::Wire::none ? 1 : 0);
  });
  return ok;
}

/// Calls fn(desc, index) for class A's fields in compact-payload order.
template <class A, class Fn>
void for_each_field_compact(Fn&& fn) {
  if constexpr (requires { ClassDesc<A>::compact_order; }) {
    constexpr auto& order = ClassDesc<A>::compact_order;
    static_assert(compact_order_complete<A>(),
                  "compact_order must list every field with a compact payload exactly once");
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (fn(std::get<field_index<A>(order[I])>(ClassDesc<A>::fields), field_index<A>(order[I])), ...);
    }
    (std::make_index_sequence<order.size()>{});
  } else {
    for_each_field_indexed<A>(fn);
  }
}

/// Total width of the compact flag byte's used bits: flag-bit fields, then one presence bit per
/// optional group (groups are numbered 1, 2, ...).
template <class A>
constexpr int num_groups() {
  int g = 0;
  for_each_field<A>([&](const auto& d) { g = d.group > g ? d.group : g; });
  return g;
}
template <class A>
constexpr int flag_field_bits() {
  int bits = 0;
  for_each_field<A>(
      [&](const auto& d) { bits += std::decay_t<decltype(d)>::kind_type::flag_bits; });
  return bits;
}
template <class A>
constexpr int flag_byte_bits() {
  return flag_field_bits<A>() + num_groups<A>();
}

}  // namespace tessel::isa::opclass
