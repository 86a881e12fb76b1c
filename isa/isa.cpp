// Names of ISA enums, and the pipe of an instruction from its record (isa/instruction_list.h).
#include "isa/isa.h"

#include <algorithm>

#include "compiler/support/error.h"
#include "isa/operand_classes.h"

namespace tessel::isa {

const char* pipe_name(Pipe p) {
  switch (p) {
    case Pipe::scalar:
      return "scalar";
    case Pipe::mte2:
      return "mte2";
    case Pipe::mte1:
      return "mte1";
    case Pipe::cube:
      return "cube";
    case Pipe::fix:
      return "fix";
    case Pipe::vector:
      return "vector";
    case Pipe::mte3:
      return "mte3";
  }
  return "?";
}

const char* scope_name(Scope s) {
  switch (s) {
    case Scope::gm:
      return "gm";
    case Scope::l1:
      return "l1";
    case Scope::l0a:
      return "l0a";
    case Scope::l0b:
      return "l0b";
    case Scope::l0c:
      return "l0c";
    case Scope::ub:
      return "ub";
  }
  return "?";
}

const char* dtype_name(DType t) {
#define TESSEL_ISA_X(e, name, bytes, cls) name,
  static constexpr const char* kNames[] = {TESSEL_ISA_DTYPES(TESSEL_ISA_X)};
#undef TESSEL_ISA_X
  return static_cast<int>(t) < kNumDTypes ? kNames[static_cast<int>(t)] : "?";
}

const char* opcode_name(Opcode o) { return is_valid_opcode(o) ? instr_info(o).mnemonic : "?"; }

int vector_elem_bytes(Opcode op, const VectorArgs& v) {
  const InstrInfo& r = instr_info(op);
  int bytes = dtype_bytes(vector_operand_dtype(op, v, Field::dst));
  for (Field f : {Field::src0, Field::src1, Field::src2})
    if (r.uses(f)) bytes = std::max(bytes, dtype_bytes(vector_operand_dtype(op, v, f)));
  return bytes;
}

bool reads_destination(const Instruction& in) {
  if (!is_valid_opcode(in.op)) return false;
  if (instr_info(in.op).reads_dst) return true;
  bool accumulating_dst = false, acc = false;
  std::visit(
      [&](const auto& a) {
        using A = std::decay_t<decltype(a)>;
        bool first = true;
        opclass::for_each_field<A>([&](const auto& d) {
          using K = typename std::decay_t<decltype(d)>::kind_type;
          if constexpr (std::is_same_v<K, opclass::kind::Bool>) {
            if (d.name == Field::acc) acc = d.get(a);
          }
          if (d.text != opclass::Text::operand) return;
          if (first) accumulating_dst = d.access == opclass::Access::write_acc;
          first = false;
        });
      },
      in.args);
  return accumulating_dst && acc;
}

Pipe Instruction::pipe() const {
  const InstrInfo& r = instr_info(op);
  switch (r.pipe_rule) {
    case PipeRule::fixed:
      return r.pipe;
    case PipeRule::by_flag: {
      const auto& s = std::get<SyncArgs>(args);
      return r.kind == InstrKind::set_flag ? s.src : s.dst;
    }
    case PipeRule::by_direction:
      return std::get<DmaArgs>(args).src.scope == Scope::gm ? Pipe::mte2 : Pipe::mte3;
  }
  return Pipe::scalar;
}

}  // namespace tessel::isa
