// Binary encoding of isa::Program: a compact little-endian byte format (layout in docs/isa.md),
// including the memory map and constant data. decode(encode(p)) == p.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/isa.h"

namespace tessel::isa {

std::vector<uint8_t> encode(const Program& program);
/// Throws tessel::Error naming the byte offset on a truncated or corrupt image.
Program decode(const std::vector<uint8_t>& bytes, const std::string& source_name = "<binary>");

}  // namespace tessel::isa
