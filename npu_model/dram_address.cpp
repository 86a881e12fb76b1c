// DramAddressMap: parse memory.dram.banked.address_mapping into bit slices; map addresses.
#include "npu_model/dram_address.h"

#include <bit>
#include <sstream>

#include "compiler/support/error.h"

namespace tessel::npu {
namespace {

int log2_of(int64_t v) { return v > 0 ? std::countr_zero(static_cast<uint64_t>(v)) : 0; }

const char* const kFieldNames[] = {"channel", "rank", "bank_group", "bank", "row", "column"};

}  // namespace

DramAddressMap::DramAddressMap(const DramBankedConfig& cfg) {
  burst_shift_ = log2_of(dram_burst_bytes(cfg));
  const int64_t columns = cfg.row_bytes / std::max<int64_t>(dram_burst_bytes(cfg), 1);
  const int total[6] = {log2_of(cfg.channels),        log2_of(cfg.ranks), log2_of(cfg.bank_groups),
                        log2_of(cfg.banks_per_group), log2_of(cfg.rows),  log2_of(columns)};
  struct Piece {
    DramField field;
    int bits;  // -1: the rest
  };
  std::vector<Piece> pieces;  // MSB first, as written
  std::istringstream in(cfg.address_mapping);
  std::string word;
  while (in >> word) {
    const size_t colon = word.find(':');
    const std::string name = word.substr(0, colon);
    int f = -1;
    for (int i = 0; i < 6; ++i)
      if (name == kFieldNames[i]) f = i;
    if (f < 0)
      fail(
          "unknown field '{}'; expected fields among row, rank, bank, bank_group, column, "
          "channel (optionally NAME:BITS), most significant first",
          name);
    int bits = -1;
    if (colon != std::string::npos) {
      const std::string b = word.substr(colon + 1);
      if (b.empty() || b.size() > 2 || b.find_first_not_of("0123456789") != std::string::npos ||
          std::stoi(b) < 1)
        fail("'{}': expected {}:BITS with BITS a positive integer", word, name);
      bits = std::stoi(b);
    }
    pieces.push_back({static_cast<DramField>(f), bits});
  }
  int fixed[6] = {}, rest_pieces[6] = {};
  bool named[6] = {};
  for (const Piece& p : pieces) {
    const int f = static_cast<int>(p.field);
    named[f] = true;
    if (p.bits < 0)
      ++rest_pieces[f];
    else
      fixed[f] += p.bits;
  }
  for (int f = 0; f < 6; ++f) {
    if (!named[f] && total[f] > 0)
      fail(
          "field '{}' is missing: the geometry gives it {} bits (it may be left out only when it "
          "has a single value)",
          kFieldNames[f], total[f]);
    if (rest_pieces[f] > 1)
      fail("field '{}' is given {} times without :BITS; all but one of its pieces need a width",
           kFieldNames[f], rest_pieces[f]);
    if (fixed[f] > total[f] || (rest_pieces[f] == 0 && named[f] && fixed[f] != total[f]))
      fail("field '{}' has {} bits in the geometry but the mapping gives it {}{}", kFieldNames[f],
           total[f], fixed[f], rest_pieces[f] ? " plus the rest" : "");
  }
  // Build LSB-first slices; shifts inside a field count from its least significant piece.
  int used[6] = {};
  int position = 0;
  for (auto it = pieces.rbegin(); it != pieces.rend(); ++it) {
    const int f = static_cast<int>(it->field);
    const int bits = it->bits >= 0 ? it->bits : total[f] - fixed[f];
    if (bits == 0) continue;
    slices_.push_back({it->field, bits, used[f]});
    used[f] += bits;
    position += bits;
    if (it->field == DramField::channel) above_channel_ = position;
  }
  channel_bits_ = total[0];
  channel_xor_ = cfg.channel_xor && channel_bits_ > 0;
}

DramCoord DramAddressMap::map(uint64_t byte_address) const {
  uint64_t a = byte_address >> burst_shift_;
  uint64_t v[6] = {};
  for (const DramAddressSlice& s : slices_) {
    v[static_cast<int>(s.field)] |= (a & ((uint64_t{1} << s.bits) - 1)) << s.shift;
    a >>= s.bits;
  }
  if (channel_xor_) {
    uint64_t above = (byte_address >> burst_shift_) >> above_channel_;
    const uint64_t mask = (uint64_t{1} << channel_bits_) - 1;
    for (; above != 0; above >>= channel_bits_) v[0] ^= above & mask;
  }
  DramCoord c;
  c.channel = static_cast<uint32_t>(v[0]);
  c.rank = static_cast<uint32_t>(v[1]);
  c.bank_group = static_cast<uint32_t>(v[2]);
  c.bank = static_cast<uint32_t>(v[3]);
  c.row = v[4];
  c.column = v[5];
  return c;
}

}  // namespace tessel::npu
