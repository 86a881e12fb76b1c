// Fuzz target `asm`: NPU assembly text (docs/isa.md, the syntax `tessel compile --emit asm`
// prints) through the assembler, the static verifier and the sync verifier (isa/verifier.h, on
// hw_configs/npu_4core.yaml).
// Properties checked on an accepted program: the disassembly assembles back to the same program
// and disassembles to the same text (isa/asm.h), and decode(encode(p)) == p (isa/encoding.h).
#include "isa/asm.h"
#include "isa/encoding.h"
#include "isa/verifier.h"
#include "npu_model/hw_config.h"
#include "tests/fuzz/fuzz_target.h"

TESSEL_FUZZ_TARGET(asm) {
  using namespace tessel;
  static const npu::HwConfig hw =
      npu::load_hw_config(TESSEL_SOURCE_DIR "/hw_configs/npu_4core.yaml");
  const isa::Program p = isa::assemble(std::string(data), "fuzz.s");
  isa::verify_program(p, hw);
  isa::verify_sync(p, hw);

  const std::string text = fuzz::must_succeed("disassemble", [&] { return isa::disassemble(p); });
  const isa::Program q = fuzz::must_succeed("assemble(disassemble(p))",
                                            [&] { return isa::assemble(text, "disassembly"); });
  const std::string diff = isa::program_difference(q, p);
  fuzz::fuzz_check(diff.empty(), "assemble(disassemble(p)) != p: {}\n{}", diff, text);
  fuzz::fuzz_check(isa::disassemble(q) == text, "disassemble(assemble(t)) != t for t:\n{}", text);
  const isa::Program r = fuzz::must_succeed("decode(encode(p))",
                                            [&] { return isa::decode(isa::encode(p), "encoded"); });
  const std::string bin_diff = isa::program_difference(r, p);
  fuzz::fuzz_check(bin_diff.empty(), "decode(encode(p)) != p: {}", bin_diff);
  return true;
}
