// Fuzz target `decode`: a binary NPU program (the image `tessel compile --emit bin` writes,
// docs/isa.md "Binary encoding") through the decoder, the static verifier and the sync verifier
// (isa/verifier.h, on hw_configs/npu_4core.yaml).
// Properties checked on an accepted image: decode(encode(p)) == p, and the disassembly assembles
// back to p (constant data aside: the text form does not carry it).
#include "isa/asm.h"
#include "isa/encoding.h"
#include "isa/verifier.h"
#include "npu_model/hw_config.h"
#include "tests/fuzz/fuzz_target.h"

TESSEL_FUZZ_TARGET(decode) {
  using namespace tessel;
  static const npu::HwConfig hw =
      npu::load_hw_config(TESSEL_SOURCE_DIR "/hw_configs/npu_4core.yaml");
  const std::vector<uint8_t> bytes(data.begin(), data.end());
  const isa::Program p = isa::decode(bytes, "fuzz.bin");
  isa::verify_program(p, hw);
  isa::verify_sync(p, hw);

  const isa::Program q = fuzz::must_succeed("decode(encode(p))",
                                            [&] { return isa::decode(isa::encode(p), "encoded"); });
  const std::string diff = isa::program_difference(q, p);
  fuzz::fuzz_check(diff.empty(), "decode(encode(p)) != p: {}", diff);

  isa::Program no_data = p;
  for (auto& buffer : no_data.buffers) buffer.init.clear();
  const std::string text = fuzz::must_succeed("disassemble", [&] { return isa::disassemble(p); });
  const isa::Program r = fuzz::must_succeed("assemble(disassemble(p))",
                                            [&] { return isa::assemble(text, "disassembly"); });
  const std::string text_diff = isa::program_difference(r, no_data);
  fuzz::fuzz_check(text_diff.empty(), "assemble(disassemble(p)) != p: {}\n{}", text_diff, text);
  return true;
}
