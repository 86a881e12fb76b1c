// Binary encoding of isa::Program: a compact little-endian byte format (layout in docs/isa.md),
// including the memory map and constant data. decode(encode(p)) == p.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/isa.h"

namespace tessel::isa {

/// Encodes `program` exactly (every field, op_index and constant data; docs/isa.md "Binary
/// encoding"). Throws tessel::Error if an enum field holds a value outside its enumerators.
std::vector<uint8_t> encode(const Program& program);
/// Throws tessel::Error naming the byte offset on a truncated or corrupt image.
Program decode(const std::vector<uint8_t>& bytes, const std::string& source_name = "<binary>");

/// The 4 magic bytes every image starts with ("TSNP") and the format version this build writes.
inline constexpr uint8_t kEncodingMagic[4] = {'T', 'S', 'N', 'P'};
inline constexpr uint8_t kEncodingVersion = 8;
/// Images of versions kOldestReadableVersion .. kEncodingVersion decode: version 3 (no dma_mc,
/// dma's full form without `cores`), version 4 (no int8 cube mode: mmad's full form without
/// a_dtype/b_dtype, fix's without per_channel/quant/zero_point; decode leaves them at their
/// defaults), version 5 (no l2_prefetch/l2_discard: opcodes 52-53 and operand class 8 are new in
/// version 6), version 6 (no fix per_row: its flag bit and full-form byte are new in version 7),
/// version 7 (no lbu: opcode 54 is new in version 8).
inline constexpr uint8_t kOldestReadableVersion = 3;

}  // namespace tessel::isa
