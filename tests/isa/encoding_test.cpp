// Tests of the binary encoding (isa/encoding.h): exact round trips (every field, op_index, constant
// data, NaN payloads, values only the binary can hold), golden bytes of the documented layout,
// instruction sizes of the common cases, and errors on truncated or corrupt images.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "compiler/support/error.h"
#include "isa/asm.h"
#include "isa/encoding.h"
#include "isa_test_programs.h"

namespace tessel::isa {
namespace {

using namespace test_programs;

std::string decode_error(const std::vector<uint8_t>& bytes) {
  try {
    decode(bytes, "img.bin");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

Program with_constant_data() {
  Program p = every_opcode_program();
  p.buffers[1].init.resize(p.buffers[1].bytes);
  for (std::size_t i = 0; i < p.buffers[1].init.size(); ++i) {
    p.buffers[1].init[i] = static_cast<uint8_t>(i * 37 + 1);
  }
  return p;
}

TEST(Encoding, RoundTripEveryOpcode) {
  const Program p = with_constant_data();
  const std::vector<uint8_t> bytes = encode(p);
  const Program q = decode(bytes);
  EXPECT_EQ(program_difference(p, q), "");
  EXPECT_EQ(q.buffers[1].init, p.buffers[1].init);
  EXPECT_EQ(encode(q), bytes);  // the encoding is deterministic
}

TEST(Encoding, RoundTripRandomIncludingNonTextValues) {
  // Registers >= 32, operand classes that do not match the opcode, ndims > 4, entries past ndims,
  // NaN payloads: all representable in the binary (full form), all must come back exactly.
  std::mt19937_64 rng(777);
  for (int trial = 0; trial < 20; ++trial) {
    Program p;
    p.name = fmt::format("rand{}", trial);
    p.gm_bytes = rng();
    p.op_names = {"a", "", "c\n"};
    p.buffers.push_back({"k", GmKind::constant, rng(), 5, DType::f32, {-1, 5}, {9, 8, 7, 6, 5}});
    p.cores.resize(1 + trial % 4);
    for (auto& core : p.cores) {
      for (int i = 0; i < 80; ++i) core.push_back(random_instruction(rng, /*text_safe=*/false));
    }
    const Program q = decode(encode(p));
    ASSERT_EQ(program_difference(p, q), "") << "trial " << trial;
  }
}

TEST(Encoding, GoldenBytes) {
  // .program t / .core 0 / li x1, -5 (no op) / jmp L0 (op 0): the layout of docs/isa.md.
  Program p;
  p.name = "t";
  p.cores.resize(1);
  p.cores[0].push_back(make(Opcode::li, sargs(1, 0, 0, -5, -1), -1));
  p.cores[0].push_back(make(Opcode::jmp, sargs(0, 0, 0, 0, 0), 0));
  const std::vector<uint8_t> expected = {
      'T',  'S',  'N',  'P',   // magic
      0x08,                    // version
      0x01,                    // core count (uvarint)
      0x01, 't',               // name: length, bytes
      0x00,                    // gm_bytes
      0x00,                    // op name count
      0x00,                    // buffer count
      0x02,                    // core 0: instruction count
      0x00,                    // li = opcode 0; op_index unchanged (-1), compact form
      0x01, 0x09,              // rd = x1; imm = -5 zigzag-mapped to 9
      0x48,                    // jmp = opcode 8 | 0x40 (op_index delta follows)
      0x02,                    // delta +1 (zigzag 2): op_index -1 -> 0
      0x00,                    // target 0 (uvarint)
      0x19, 0x14, 0xac, 0xc1,  // CRC-32 of the 18 bytes above (zlib.crc32 = 0xc1ac1419), LE
  };
  EXPECT_EQ(encode(p), expected);
}

std::size_t encoded_size(const Instruction& in) {
  // Size of one instruction = image size minus the same image without it (op_index -1 in both).
  Program a, b;
  a.cores.resize(1);
  b.cores.resize(1);
  a.cores[0].push_back(in);
  return encode(a).size() - encode(b).size();
}

// CRC-32 (IEEE, reflected 0xEDB88320), as the image trailer uses it.
uint32_t crc32_of(const std::vector<uint8_t>& b, std::size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= b[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xFFFFFFFFu;
}

TEST(Encoding, Version3ImagesStillDecode) {
  // Version 4 added dma_mc and dma's `cores` field (the last field of the dma class, so the last
  // byte of a full-form dma). A version-3 image is the same bytes without it: take a one-dma
  // image whose dma needs the full form (register 40), drop that byte, write version 3 and the
  // CRC of the result; it decodes to the same program (cores = 0).
  Program p;
  p.name = "t";
  p.gm_bytes = 1 << 16;
  p.cores.resize(1);
  DmaArgs d;
  d.dst = mem(Scope::ub, 40, 0), d.src = mem(Scope::gm, 1, 64);
  d.extent[0] = 16, d.dst_stride[0] = d.src_stride[0] = 1, d.valid_end[0] = 16;
  p.cores[0].push_back(make(Opcode::dma, d));
  std::vector<uint8_t> b = encode(p);
  ASSERT_EQ(b[4], kEncodingVersion);
  ASSERT_EQ(b[b.size() - 5], 0x00);  // cores = 0 (uvarint), just before the CRC
  b.erase(b.end() - 5);
  b[4] = 3;
  const uint32_t crc = crc32_of(b, b.size() - 4);
  for (int i = 0; i < 4; ++i) b[b.size() - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
  EXPECT_EQ(program_difference(decode(b, "v3.bin"), p), "");
  // The same bytes read as version 4 lack the field: a truncated image.
  b[4] = 4;
  const uint32_t crc4 = crc32_of(b, b.size() - 4);
  for (int i = 0; i < 4; ++i) b[b.size() - 4 + i] = static_cast<uint8_t>(crc4 >> (8 * i));
  EXPECT_THROW(decode(b, "v4.bin"), Error);
}

TEST(Encoding, Version4ImagesStillDecode) {
  // Version 5 added the int8 cube mode's fields at the end of mmad's and fix's full forms: mmad
  // a_dtype, b_dtype (u8 each), fix per_channel (u8), quant (scope u8, reg u8, offset sv),
  // zero_point (sv). A version-4 image is the same bytes without them: take full-form (register
  // 40) mmad and fix instructions at their defaults, drop those trailing bytes, write version 4
  // and the CRC; the program decodes unchanged (the new fields at their defaults).
  for (int which = 0; which < 2; ++which) {
    Program p;
    p.name = "t";
    p.cores.resize(1);
    std::size_t tail = 0;
    if (which == 0) {
      MmadArgs m;
      m.c = mem(Scope::l0c, 40, 0), m.a = mem(Scope::l0a, 0, 0), m.b = mem(Scope::l0b, 0, 0);
      m.m1 = m.k1 = m.n1 = 1;
      p.cores[0].push_back(make(Opcode::mmad, m));
      tail = 2;  // a_dtype, b_dtype
    } else {
      FixArgs f;
      f.dst = mem(Scope::ub, 40, 0), f.src = mem(Scope::l0c, 0, 0);
      f.m = f.n = 1, f.dst_row_stride = 1;
      p.cores[0].push_back(make(Opcode::fix, f));
      tail = 6;  // per_channel, quant scope, reg, offset 0, zero_point 0, per_row (version 7)
    }
    std::vector<uint8_t> b = encode(p);
    ASSERT_EQ(b[4], kEncodingVersion);
    b.erase(b.end() - 4 - static_cast<std::ptrdiff_t>(tail), b.end() - 4);
    b[4] = 4;
    const uint32_t crc = crc32_of(b, b.size() - 4);
    for (int i = 0; i < 4; ++i) b[b.size() - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
    EXPECT_EQ(program_difference(decode(b, "v4.bin"), p), "") << which;
  }
}

TEST(Encoding, Version5ImagesStillDecodeAndHaveNoL2Hints) {
  // Version 6 added l2_prefetch and l2_discard (opcodes 52, 53; operand class 8) and changed no
  // existing form: a version-5 image of a program without them is the version-6 bytes with the
  // version byte 5. One with an l2_prefetch is corrupt as version 5.
  Program p;
  p.name = "t";
  p.gm_bytes = 1 << 16;
  p.cores.resize(1);
  DmaArgs d;
  d.dst = mem(Scope::ub, 0, 0), d.src = mem(Scope::gm, 1, 64);
  d.extent[0] = 16, d.dst_stride[0] = d.src_stride[0] = 1, d.valid_end[0] = 16;
  p.cores[0].push_back(make(Opcode::dma, d));
  auto as_version = [](std::vector<uint8_t> b, uint8_t v) {
    b[4] = v;
    const uint32_t crc = crc32_of(b, b.size() - 4);
    for (int i = 0; i < 4; ++i) b[b.size() - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
    return b;
  };
  std::vector<uint8_t> b = encode(p);
  ASSERT_EQ(b[4], kEncodingVersion);
  EXPECT_EQ(program_difference(decode(as_version(b, 5), "v5.bin"), p), "");
  p.cores[0].push_back(make(Opcode::l2_prefetch, L2HintArgs{mem(Scope::gm, 0, 4096), 2048}));
  b = encode(p);
  EXPECT_EQ(program_difference(decode(b, "v6.bin"), p), "");
  EXPECT_THROW(decode(as_version(b, 5), "v5.bin"), Error);
}

TEST(Encoding, Version7ImagesStillDecodeAndHaveNoScalarLoad) {
  // Version 8 added lbu (opcode 54, ScalarArgs' compact form: rd, rs, imm) and changed no
  // existing form: a version-7 image of a program without it is the version-8 bytes with the
  // version byte 7. One with an lbu is corrupt as version 7.
  Program p;
  p.name = "t";
  p.gm_bytes = 1 << 16;
  p.cores.resize(1);
  p.cores[0].push_back(make(Opcode::blti, sargs(0, 1, 0, 1, 1)));
  auto as_version = [](std::vector<uint8_t> b, uint8_t v) {
    b[4] = v;
    const uint32_t crc = crc32_of(b, b.size() - 4);
    for (int i = 0; i < 4; ++i) b[b.size() - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
    return b;
  };
  std::vector<uint8_t> b = encode(p);
  ASSERT_EQ(b[4], 8);
  EXPECT_EQ(program_difference(decode(as_version(b, 7), "v7.bin"), p), "");
  p.cores[0].insert(p.cores[0].begin(), make(Opcode::lbu, sargs(1, 0, 0, 4096, -1)));
  b = encode(p);
  EXPECT_EQ(program_difference(decode(b, "v8.bin"), p), "");
  // opcode byte 54, rd 1, rs 0, imm 4096 (zigzag 8192: 0x80 0x40): 5 bytes.
  EXPECT_EQ(encoded_size(make(Opcode::lbu, sargs(1, 0, 0, 4096, -1))), 5u);
  try {
    decode(as_version(b, 7), "v7.bin");
    ADD_FAILURE() << "a version-7 image with lbu decoded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("invalid opcode 54 in a version 7 image"),
              std::string::npos)
        << e.what();
  }
}

TEST(Encoding, Version6ImagesStillDecodeWithoutFixPerRow) {
  // Version 7 added fix's per_row: a flag bit (bit 6) of fix's compact form, before the bit that
  // says the quant/zero_point group follows (bit 6 in version 6, bit 7 now), and a byte at the
  // end of its full form. A version-6 image of a compact fix with the group is the version-7
  // bytes with the group bit moved down; it decodes to the same program (per_row = 0).
  Program p;
  p.name = "t";
  p.cores.resize(1);
  FixArgs f;
  f.dst_dtype = DType::i8;
  f.dst = mem(Scope::ub, 1, 0), f.src = mem(Scope::l0c, 2, 0);
  f.m = 16, f.n = 16, f.dst_row_stride = 16;
  f.per_channel = true, f.quant = mem(Scope::ub, 3, 4096), f.zero_point = -5;
  p.cores[0].push_back(make(Opcode::fix, f));
  const std::vector<uint8_t> b = encode(p);
  Program q = p;
  std::get<FixArgs>(q.cores[0][0].args).per_channel = false;
  std::get<FixArgs>(q.cores[0][0].args).per_row = true;
  const std::vector<uint8_t> bq = encode(q);
  ASSERT_EQ(b.size(), bq.size());
  std::size_t at = 0;  // the flag byte: the first byte the two images differ in
  while (at < b.size() && b[at] == bq[at]) ++at;
  ASSERT_LT(at, b.size() - 4);
  EXPECT_EQ(b[at] ^ bq[at], 0x60);  // bit 5 per_channel, bit 6 per_row
  EXPECT_EQ(b[at] & 0x80, 0x80);    // the group bit
  EXPECT_EQ(program_difference(decode(bq, "v7.bin"), q), "");
  std::vector<uint8_t> v6 = b;
  v6[at] = static_cast<uint8_t>((b[at] & 0x3f) | 0x40);
  v6[4] = 6;
  const uint32_t crc = crc32_of(v6, v6.size() - 4);
  for (int i = 0; i < 4; ++i) v6[v6.size() - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
  EXPECT_EQ(program_difference(decode(v6, "v6.bin"), p), "");
  // The version-6 flag byte read as version 7 sets per_row and drops the group: another program.
  v6[4] = 7;
  const uint32_t crc7 = crc32_of(v6, v6.size() - 4);
  for (int i = 0; i < 4; ++i) v6[v6.size() - 4 + i] = static_cast<uint8_t>(crc7 >> (8 * i));
  bool differs = true;
  try {
    differs = program_difference(decode(v6, "v7.bin"), p) != "";
  } catch (const Error&) {
  }
  EXPECT_TRUE(differs);
}

TEST(Encoding, CommonInstructionsAreSmall) {
  // li x1, 5: opcode, rd, imm (zigzag 10) = 3 bytes.
  EXPECT_EQ(encoded_size(make(Opcode::li, sargs(1, 0, 0, 5, -1))), 3u);
  // set_flag mte2, vector, 0: opcode, packed pipes, event = 3 bytes.
  EXPECT_EQ(encoded_size(make(Opcode::set_flag, SyncArgs{Pipe::mte2, Pipe::vector, 0})), 3u);
  // mmad l0c[x0+0], l0a[x0+0], l0b[x0+0], m1=2, k1=9, n1=4, acc=1:
  // opcode 1 + flags 1 + 3 x (scope|reg 1 + offset 1) + m1 1 + k1 1 + n1 1 = 11 bytes.
  MmadArgs m;
  m.c = mem(Scope::l0c, 0, 0), m.a = mem(Scope::l0a, 0, 0), m.b = mem(Scope::l0b, 0, 0);
  m.m1 = 2, m.k1 = 9, m.n1 = 4, m.accumulate = true;
  EXPECT_EQ(encoded_size(make(Opcode::mmad, m)), 11u);
  // vadd.f16 ub[x4+0]{1,128}, ub[x5+256]{1,128}, ub[x6+0]{0,1}, count=128, repeat=8:
  // opcode 1 + flags 1 + dst (1 + 1 + 1 + 2) + src0 (1 + 2 + 1 + 2) + src1 (1 + 1 + 1 + 1)
  // + count 128 (2) + repeat 8 (1) = 20 bytes (zigzag: 128 -> 256 and 256 -> 512 take 2 bytes).
  VectorArgs v = vargs(DType::f16, vec(Scope::ub, 4, 0, 1, 128), vec(Scope::ub, 5, 256, 1, 128),
                       vec(Scope::ub, 6, 0, 0, 1), 128, 8, 0.0f);
  EXPECT_EQ(encoded_size(make(Opcode::vadd, v)), 20u);
  // A 3-d dma with a valid window, no pad: opcode 1 + flags 1 + dst (1 + 1) + src (1 + 2: 4096
  // zigzags to 8192) + per dim extent/dst_stride/src_stride (1+2+2) + (1+2+2) + (1+1+1)
  // + valid window 6 x 1 = 26 bytes.
  DmaArgs d;
  d.dtype = DType::f16;
  d.dst = mem(Scope::ub, 2, 0);
  d.src = mem(Scope::gm, 3, 4096);
  d.ndims = 3;
  d.extent = {8, 24, 96, 0};
  d.dst_stride = {2304, 96, 1, 0};
  d.src_stride = {4608, 192, 1, 0};
  d.valid_begin = {0, 1, 0, 0};
  d.valid_end = {8, 24, 96, 0};
  EXPECT_EQ(encoded_size(make(Opcode::dma, d)), 26u);
}

TEST(Encoding, TruncatedImagesAreErrorsNamingTheOffset) {
  const std::vector<uint8_t> bytes = encode(with_constant_data());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n));
    const std::string msg = decode_error(cut);
    ASSERT_NE(msg, "") << "truncation to " << n << " bytes decoded without error";
    ASSERT_NE(msg.find("img.bin: offset "), std::string::npos) << msg;
  }
}

TEST(Encoding, EveryCorruptByteIsDetected) {
  // A changed byte either breaks the structure (reported at its offset) or the CRC-32, which
  // detects every error burst of up to 32 bits.
  const std::vector<uint8_t> bytes = encode(with_constant_data());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t x : {0x01, 0x80, 0xff}) {
      std::vector<uint8_t> bad = bytes;
      bad[i] ^= x;
      const std::string msg = decode_error(bad);
      ASSERT_NE(msg, "") << "byte " << i << " ^ " << int(x) << " not detected";
      ASSERT_NE(msg.find("img.bin: offset "), std::string::npos) << msg;
    }
  }
}

TEST(Encoding, SpecificCorruptions) {
  Program p;
  p.name = "t";
  p.cores.resize(1);
  p.cores[0].push_back(make(Opcode::li, sargs(1, 0, 0, -5, -1)));
  const std::vector<uint8_t> good = encode(p);
  // Layout: magic 0-3, version 4, core count 5, name 6-7, gm_bytes 8, ops 9, buffers 10,
  // count 11, opcode byte 12, rd 13, imm 14, CRC 15-18.
  ASSERT_EQ(good.size(), 19u);
  auto err = [&](std::size_t at, uint8_t v) {
    std::vector<uint8_t> b = good;
    b[at] = v;
    return decode_error(b);
  };
  EXPECT_NE(err(0, 'X').find("img.bin: offset 0: not a tessel program image"), std::string::npos);
  EXPECT_NE(err(4, 9).find("offset 4: unsupported format version 9"), std::string::npos);
  EXPECT_NE(err(12, 0x3f).find("offset 12: invalid opcode 63"), std::string::npos);
  EXPECT_NE(err(13, 40).find("offset 13: register 40 out of range"), std::string::npos);
  EXPECT_NE(err(11, 100).find("offset 11: an instruction count = 100 exceeds"), std::string::npos);
  EXPECT_NE(err(14, 0x0a).find("offset 15: CRC-32 mismatch"), std::string::npos);  // imm 5
  std::vector<uint8_t> longer = good;
  longer.insert(longer.begin() + 15, 0x00);
  EXPECT_NE(decode_error(longer).find("offset 15: 1 unexpected bytes after the last instruction"),
            std::string::npos);
  EXPECT_NE(decode_error({}).find("offset 0: truncated"), std::string::npos);
}

// Found by fuzz_decode after 4,351,348 executions (UBSan): an op_index delta near INT64_MIN
// overflowed prev_op + delta. It is now an error at the delta's offset.
TEST(Encoding, AnOpIndexDeltaFarOutOfRangeIsAnError) {
  std::ifstream f(std::string(TESSEL_SOURCE_DIR) +
                      "/tests/fuzz/regressions/decode/op-index-delta-overflows-int64.bin",
                  std::ios::binary);
  ASSERT_TRUE(f) << "regression input missing";
  const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)),
                                   std::istreambuf_iterator<char>());
  const std::string e = decode_error(bytes);
  EXPECT_NE(e.find("is outside +-2^33: no op_index fits"), std::string::npos) << e;
}

TEST(Encoding, InvalidEnumValuesAreNotEncodable) {
  Program p;
  p.cores.resize(1);
  VectorArgs v;
  v.dst.addr.scope = static_cast<Scope>(9);
  p.cores[0].push_back(make(Opcode::vexp, v));
  try {
    encode(p);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("core 0, instruction 0: invalid scope value 9"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tessel::isa
