// Names of ISA enums and the opcode -> pipe mapping.
#include "isa/isa.h"

#include "compiler/support/error.h"

namespace tessel::isa {

const char* pipe_name(Pipe p) {
  switch (p) {
    case Pipe::scalar: return "scalar";
    case Pipe::mte2: return "mte2";
    case Pipe::mte1: return "mte1";
    case Pipe::cube: return "cube";
    case Pipe::fix: return "fix";
    case Pipe::vector: return "vector";
    case Pipe::mte3: return "mte3";
  }
  return "?";
}

const char* scope_name(Scope s) {
  switch (s) {
    case Scope::gm: return "gm";
    case Scope::l1: return "l1";
    case Scope::l0a: return "l0a";
    case Scope::l0b: return "l0b";
    case Scope::l0c: return "l0c";
    case Scope::ub: return "ub";
  }
  return "?";
}

const char* dtype_name(DType t) { return t == DType::f16 ? "f16" : "f32"; }

const char* opcode_name(Opcode o) {
  switch (o) {
    case Opcode::li: return "li";
    case Opcode::addi: return "addi";
    case Opcode::add: return "add";
    case Opcode::sub: return "sub";
    case Opcode::mul: return "mul";
    case Opcode::muli: return "muli";
    case Opcode::blt: return "blt";
    case Opcode::blti: return "blti";
    case Opcode::jmp: return "jmp";
    case Opcode::set_flag: return "set_flag";
    case Opcode::wait_flag: return "wait_flag";
    case Opcode::barrier: return "barrier";
    case Opcode::core_barrier: return "core_barrier";
    case Opcode::dma: return "dma";
    case Opcode::load2d: return "load2d";
    case Opcode::img2col: return "img2col";
    case Opcode::mmad: return "mmad";
    case Opcode::fix: return "fix";
    case Opcode::vadd: return "vadd";
    case Opcode::vsub: return "vsub";
    case Opcode::vmul: return "vmul";
    case Opcode::vdiv: return "vdiv";
    case Opcode::vmax: return "vmax";
    case Opcode::vmin: return "vmin";
    case Opcode::vmla: return "vmla";
    case Opcode::vadds: return "vadds";
    case Opcode::vmuls: return "vmuls";
    case Opcode::vmaxs: return "vmaxs";
    case Opcode::vmins: return "vmins";
    case Opcode::vexp: return "vexp";
    case Opcode::vln: return "vln";
    case Opcode::vsqrt: return "vsqrt";
    case Opcode::vrec: return "vrec";
    case Opcode::vabs: return "vabs";
    case Opcode::vrelu: return "vrelu";
    case Opcode::vneg: return "vneg";
    case Opcode::vcopy: return "vcopy";
    case Opcode::vdup: return "vdup";
    case Opcode::vrsum: return "vrsum";
    case Opcode::vrmax: return "vrmax";
    case Opcode::vrmin: return "vrmin";
  }
  return "?";
}

Pipe Instruction::pipe() const {
  switch (op) {
    case Opcode::li:
    case Opcode::addi:
    case Opcode::add:
    case Opcode::sub:
    case Opcode::mul:
    case Opcode::muli:
    case Opcode::blt:
    case Opcode::blti:
    case Opcode::jmp:
    case Opcode::barrier:
    case Opcode::core_barrier:
      return Pipe::scalar;
    case Opcode::set_flag:
      return std::get<SyncArgs>(args).src;
    case Opcode::wait_flag:
      return std::get<SyncArgs>(args).dst;
    case Opcode::dma: {
      const auto& d = std::get<DmaArgs>(args);
      return d.src.scope == Scope::gm ? Pipe::mte2 : Pipe::mte3;
    }
    case Opcode::load2d:
    case Opcode::img2col:
      return Pipe::mte1;
    case Opcode::mmad:
      return Pipe::cube;
    case Opcode::fix:
      return Pipe::fix;
    default:
      return Pipe::vector;
  }
}

}  // namespace tessel::isa
