// The banked DRAM model's address mapping (memory.dram.banked.address_mapping): how a GM byte
// address splits into channel, rank, bank group, bank, row and column. Parsed once from the
// config's text (validated by the hardware-config loader, used by simulator/dram_banked.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "npu_model/hw_config.h"

namespace tessel::npu {

/// The coordinates of one burst in the DRAM: column is in bursts within the row.
struct DramCoord {
  uint32_t channel = 0, rank = 0, bank_group = 0, bank = 0;
  uint64_t row = 0, column = 0;
};

enum class DramField { channel, rank, bank_group, bank, row, column };

/// A slice of the burst index: `bits` bits of `field`, placed at `shift` within that field.
struct DramAddressSlice {
  DramField field = DramField::row;
  int bits = 0;
  int shift = 0;  // position of these bits inside the field's value
};

/// The mapping from a byte address to DramCoord. Bits below log2(burst bytes) are the offset
/// inside the burst; the slices take the bits above it, least significant first. Address bits
/// above all slices are ignored (the loader checks memory.dram.capacity_bytes fits the geometry).
class DramAddressMap {
 public:
  /// Parses `cfg.address_mapping`: fields from the most to the least significant bit separated by
  /// spaces, each one of row, rank, bank, bank_group, column, channel, optionally ":BITS" to take
  /// only BITS of it (the piece without ":BITS" takes the rest; e.g. "row bank column channel
  /// column:2" interleaves channels every 4 bursts). Every field with more than one value
  /// (channels > 1, ...) must appear; the counts must be powers of two (the loader checks them).
  /// With cfg.channel_xor the channel is then XORed with every log2(channels)-bit group of the
  /// burst index above the channel's most significant slice (a bijection: the other fields are
  /// unchanged).
  /// Throws tessel::Error with a message (no file position; the loader adds it) on an unknown
  /// field, a field missing or given twice without widths, or widths beyond the field's bits.
  explicit DramAddressMap(const DramBankedConfig& cfg);

  DramCoord map(uint64_t byte_address) const;
  int burst_shift() const { return burst_shift_; }
  const std::vector<DramAddressSlice>& slices() const { return slices_; }  // LSB first

 private:
  int burst_shift_ = 0;
  std::vector<DramAddressSlice> slices_;
  bool channel_xor_ = false;
  int channel_bits_ = 0;   // log2(channels)
  int above_channel_ = 0;  // burst-index bit just above the most significant channel slice
};

/// Bytes one burst (one request) moves: bus_width_bits / 8 * burst_length.
inline int64_t dram_burst_bytes(const DramBankedConfig& c) {
  return int64_t{c.bus_width_bits} / 8 * c.burst_length;
}

/// Bytes the geometry addresses: channels * ranks * bank_groups * banks_per_group * rows *
/// row_bytes.
inline int64_t dram_geometry_bytes(const DramBankedConfig& c) {
  return int64_t{c.channels} * c.ranks * c.bank_groups * c.banks_per_group * c.rows * c.row_bytes;
}

}  // namespace tessel::npu
