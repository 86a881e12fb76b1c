// The banked DRAM keys of the hardware config (memory.dram.model, memory.dram.banked; docs/
// memory.md): the presets load with the numbers their comments cite, the section may live in its
// own file, and every bad value is an error naming the file, line and dotted key.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/support/error.h"
#include "npu_model/dram_address.h"
#include "npu_model/hw_config.h"

namespace tessel::npu {
namespace {

namespace fs = std::filesystem;

const std::string kSourceDir = TESSEL_SOURCE_DIR;
const std::string kPreset = kSourceDir + "/hw_configs/npu_4core_lpddr5.yaml";
const std::string kLpddr5 = kSourceDir + "/hw_configs/dram/lpddr5_6400.yaml";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// `text` with `from` (which must occur) replaced by `to`.
std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "test bug: '" << from << "' not in the text";
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

/// Writes `text` to a file named `name` in a fresh test directory; returns its path.
std::string write_file(const std::string& dir, const std::string& name, const std::string& text) {
  fs::create_directories(dir);
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

/// The 1-based line of the first line of `text` containing `needle`.
int line_of(const std::string& text, const std::string& needle) {
  const size_t at = text.find(needle);
  EXPECT_NE(at, std::string::npos) << needle;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
}

std::string error_of(const std::string& path, const std::vector<HwOverride>& overrides = {}) {
  try {
    load_hw_config(path, overrides);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a tessel::Error for " << path;
  return "";
}

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

/// A test directory holding a copy of npu_4core_lpddr5.yaml and its DRAM file, with `dram_text`
/// in place of the DRAM file; returns the hw config's path.
std::string with_dram_file(const std::string& test, const std::string& dram_text) {
  const std::string dir = ::testing::TempDir() + "/hw_dram_" + test;
  write_file(dir + "/dram", "lpddr5_6400.yaml", dram_text);
  return write_file(dir, "hw.yaml", read_text(kPreset));
}

TEST(HwConfigDram, Lpddr5PresetLoadsWithItsCitedTimings) {
  const HwConfig hw = load_hw_config(kPreset);
  EXPECT_EQ(hw.dram.model, DramModel::banked);
  const DramBankedConfig& b = hw.dram.banked;
  EXPECT_EQ(b.channels, 8);
  EXPECT_EQ(b.bank_groups * b.banks_per_group, 16);
  EXPECT_EQ(b.row_bytes, 2048);
  EXPECT_EQ(b.page_policy, PagePolicy::open_page);
  EXPECT_EQ(b.timing.tCK_ps, 1250);
  // 18 ns / 1.25 = 14.4 -> 15; 42 ns -> 34; 3.906 us -> 3125; 280 ns -> 224.
  EXPECT_EQ(b.timing.tRCD, 15);
  EXPECT_EQ(b.timing.tRAS, 34);
  EXPECT_EQ(b.timing.tREFI, 3125);
  EXPECT_EQ(b.timing.tRFC, 224);
  // A request is one BL16 burst of a x16 channel: 32 B, the compiler's memory.dram.burst_bytes.
  EXPECT_EQ(dram_burst_bytes(b), 32);
  EXPECT_EQ(hw.dram.burst_bytes, 32);
  // Peak: 8 channels x 32 B per BL16 burst (16 / 8 = 2 nCK = 2.5 ns) = 102.4 GB/s.
  EXPECT_DOUBLE_EQ(8 * 32 / (b.burst_length / b.transfers_per_ck * b.timing.tCK_ps / 1000.0),
                   102.4);
  // 8 x 16 banks x 65536 rows x 2 KB = 16 GiB >= the 8 GiB capacity.
  EXPECT_EQ(dram_geometry_bytes(b), int64_t{16} << 30);
  // Everything but the DRAM model (and the name, latency) is npu_4core.
  HwConfig base = load_hw_config(kSourceDir + "/hw_configs/npu_4core.yaml");
  HwConfig same = hw;
  same.name = base.name;
  same.source_file = base.source_file;
  same.dram.latency_cycles = base.dram.latency_cycles;
  same.dram.model = DramModel::simple;
  same.dram.banked = DramBankedConfig{};
  EXPECT_EQ(same, base);
}

TEST(HwConfigDram, Hbm2ePresetLoadsFromAnyHwConfig) {
  const std::string dir = ::testing::TempDir() + "/hw_dram_hbm2e";
  const std::string text = replaced(read_text(kPreset), "banked: dram/lpddr5_6400.yaml",
                                    "banked: " + kSourceDir + "/hw_configs/dram/hbm2e.yaml");
  const HwConfig hw = load_hw_config(write_file(dir, "hw.yaml", text));
  const DramBankedConfig& b = hw.dram.banked;
  EXPECT_EQ(b.channels, 16);
  EXPECT_EQ(b.timing.tCK_ps, 625);
  EXPECT_EQ(b.timing.tRCD, 23);  // 14 ns / 0.625 = 22.4 -> 23
  // 16 pseudo-channels x 32 B per BL4 burst (2 nCK = 1.25 ns) = 409.6 GB/s.
  EXPECT_DOUBLE_EQ(16 * 32 / (b.burst_length / b.transfers_per_ck * b.timing.tCK_ps / 1000.0),
                   409.6);
}

TEST(HwConfigDram, RoundTripsThroughYamlWithTheSectionInline) {
  const HwConfig hw = load_hw_config(kPreset);
  const std::string yaml = hw_config_to_yaml(hw);
  EXPECT_NE(yaml.find("tRFC: 224"), std::string::npos) << yaml;
  EXPECT_EQ(parse_hw_config(yaml, hw.source_file), hw);
  HwConfig built = hw;
  built.derived = DerivedConfig{};
  finalize_hw_config(built);
  EXPECT_EQ(built, hw);
  // The simple model writes no banked section.
  const HwConfig simple = load_hw_config(kSourceDir + "/hw_configs/npu_4core.yaml");
  EXPECT_EQ(hw_config_to_yaml(simple).find("banked"), std::string::npos);
  EXPECT_EQ(simple.dram.model, DramModel::simple);
}

TEST(HwConfigDram, OverridesReachTheIncludedSection) {
  const HwConfig hw = load_hw_config(kPreset, {{"memory.dram.banked.channels", "4"},
                                               {"memory.dram.banked.page_policy", "closed_page"}});
  EXPECT_EQ(hw.dram.banked.channels, 4);
  EXPECT_EQ(hw.dram.banked.page_policy, PagePolicy::closed_page);
  // On a simple-model config a banked key does not apply.
  EXPECT_HAS(
      error_of(kSourceDir + "/hw_configs/npu_4core.yaml", {{"memory.dram.banked.channels", "4"}}),
      "--hw-set memory.dram.banked.channels=4: 'memory.dram.banked.channels' does not "
      "apply: the config has no memory.dram.banked section (it needs memory.dram.model is "
      "banked)");
  // model=banked by override needs the section.
  EXPECT_HAS(error_of(kSourceDir + "/hw_configs/npu_4core.yaml", {{"memory.dram.model", "banked"}}),
             "missing required key 'memory.dram.banked' (memory.dram.model is banked)");
}

TEST(HwConfigDram, TimingErrorsNameTheIncludedFileLineAndKey) {
  const std::string dram = read_text(kLpddr5);
  const std::string base = fs::path(::testing::TempDir() + "/hw_dram_").lexically_normal().string();
  // Missing key: reported at the section's map in the DRAM file.
  {
    const std::string text = replaced(dram, "  tRAS: 34", "  # tRAS removed");
    const std::string msg = error_of(with_dram_file("missing", text));
    EXPECT_HAS(msg, base + "missing/dram/lpddr5_6400.yaml:");
    EXPECT_HAS(msg, "memory.dram.banked.timing_ck: missing required key 'tRAS'");
  }
  // Negative value: the file, line and column of the value.
  {
    const std::string text = replaced(dram, "tRCD: 15", "tRCD: -3");
    const std::string msg = error_of(with_dram_file("negative", text));
    EXPECT_HAS(
        msg, base + "negative/dram/lpddr5_6400.yaml:" + std::to_string(line_of(text, "tRCD: -3")) +
                 ":9: memory.dram.banked.timing_ck.tRCD: expected an integer >= 1, got -3");
  }
  // Inconsistent: tRAS < tRCD.
  {
    const std::string text = replaced(dram, "tRAS: 34", "tRAS: 9");
    const std::string msg = error_of(with_dram_file("tras", text));
    EXPECT_HAS(msg, "lpddr5_6400.yaml:" + std::to_string(line_of(text, "tRAS: 9")) +
                        ":9: memory.dram.banked.timing_ck.tRAS: tRAS = 9 nCK is less than tRCD = "
                        "15 nCK (a row must stay open until it can be read); expected tRAS >= "
                        "tRCD");
  }
  // tREFI must exceed tRFC.
  {
    const std::string msg =
        error_of(with_dram_file("refi", replaced(dram, "tREFI: 3125", "tREFI: 200")));
    EXPECT_HAS(msg, "memory.dram.banked.timing_ck.tREFI: tREFI = 200 nCK is less than tRFC = 224");
  }
  // Same-group spacing below the different-group one.
  EXPECT_HAS(error_of(with_dram_file("ccd", replaced(dram, "tCCD_L: 4", "tCCD_L: 1"))),
             "memory.dram.banked.timing_ck.tCCD_L: tCCD_L = 1 nCK is less than tCCD_S = 2 nCK");
  // Non-power-of-two geometry (the interleave needs whole address bits).
  {
    const std::string text = replaced(dram, "channels: 8 ", "channels: 6 ");
    EXPECT_HAS(error_of(with_dram_file("channels", text)),
               "lpddr5_6400.yaml:" + std::to_string(line_of(text, "channels: 6")) +
                   ":11: memory.dram.banked.channels: expected a power of two in [1, 1024], got "
                   "6, which is not a power of two");
  }
  // An address mapping that leaves out the channel bits.
  EXPECT_HAS(error_of(with_dram_file(
                 "mapping", replaced(dram, "\"row rank bank column bank_group channel column:2\"",
                                     "\"row rank bank column bank_group column:2\""))),
             "memory.dram.banked.address_mapping: field 'channel' is missing: the geometry gives "
             "it 3 bits");
  EXPECT_HAS(error_of(with_dram_file("mapping2", replaced(dram, "bank_group channel column:2",
                                                          "bank_group chanel column:2"))),
             "unknown field 'chanel'");
  // Unknown page policy and unknown key.
  EXPECT_HAS(error_of(with_dram_file("policy", replaced(dram, "open_page", "open"))),
             "memory.dram.banked.page_policy: expected one of open_page, closed_page, got 'open'");
  EXPECT_HAS(error_of(with_dram_file("key", replaced(dram, "tWTR: 10", "tWTR_S: 10"))),
             "memory.dram.banked.timing_ck.tWTR_S: unknown key");
}

TEST(HwConfigDram, ModelAndSectionErrorsNameTheHwConfigLine) {
  const std::string hw = read_text(kPreset);
  const std::string dir = ::testing::TempDir() + "/hw_dram_model";
  fs::create_directories(dir + "/dram");
  fs::copy_file(kLpddr5, dir + "/dram/lpddr5_6400.yaml", fs::copy_options::overwrite_existing);
  auto path = [&](const std::string& name, const std::string& text) {
    return write_file(dir, name, text);
  };
  {
    const std::string text = replaced(hw, "model: banked", "model: bankd");
    EXPECT_HAS(error_of(path("a.yaml", text)),
               "a.yaml:" + std::to_string(line_of(text, "model: bankd")) +
                   ":12: memory.dram.model: expected one of simple, banked (optional: when "
                   "absent, simple), got 'bankd'");
  }
  {
    const std::string text = replaced(hw, "model: banked", "model: simple");
    EXPECT_HAS(error_of(path("b.yaml", text)),
               "b.yaml:" + std::to_string(line_of(text, "banked: dram")) +
                   ":5: memory.dram.banked: given, but it applies only when memory.dram.model "
                   "is banked");
  }
  {
    const std::string text =
        replaced(hw, "banked: dram/lpddr5_6400.yaml", "banked: dram/none.yaml");
    EXPECT_HAS(error_of(path("c.yaml", text)),
               "memory.dram.banked: cannot read '" + dir + "/dram/none.yaml' (no such file)");
  }
  {
    const std::string text = replaced(hw, "burst_bytes: 32 ", "burst_bytes: 64 ");
    EXPECT_HAS(error_of(path("d.yaml", text)),
               "memory.dram.burst_bytes: 64 bytes, but the banked model's burst is "
               "bus_width_bits / 8 x burst_length = 16 / 8 x 16 = 32 bytes; expected 32");
  }
  {
    const std::string text =
        replaced(hw, "capacity_bytes: 8589934592", "capacity_bytes: 34359738368");
    EXPECT_HAS(error_of(path("e.yaml", text)),
               "memory.dram.capacity_bytes: 34359738368 bytes, more than the banked geometry "
               "addresses");
  }
  // The section inline instead of a file name loads the same config.
  {
    std::string inline_text = "\n";
    std::istringstream in(read_text(kLpddr5));
    for (std::string line; std::getline(in, line);)
      if (!line.empty() && line[0] != '#') inline_text += "      " + line + "\n";
    const std::string text = replaced(hw, " dram/lpddr5_6400.yaml", inline_text);
    HwConfig a = load_hw_config(path("f.yaml", text)), b = load_hw_config(kPreset);
    a.source_file = b.source_file;
    EXPECT_EQ(a, b);
  }
}

TEST(HwConfigDram, AddressMapSplitsFieldsAndChecksWidths) {
  DramBankedConfig c = load_hw_config(kPreset).dram.banked;
  EXPECT_TRUE(c.channel_xor);  // the preset hashes channels; the slices are checked without it
  c.channel_xor = false;
  // "row rank bank column bank_group channel column:2": above the 5 offset bits, 2 column bits,
  // 3 channel bits, 2 bank-group bits, the other 4 column bits (64 bursts per 2 KB row), 2 bank
  // bits, then the row.
  const DramAddressMap map(c);
  // Bits 0-4 offset, 5-6 column, 7-9 channel, 10-11 bank group, 12-15 column, 16-17 bank, row.
  const DramCoord a = map.map(0x400);
  EXPECT_EQ(a.bank_group, 1u);
  EXPECT_EQ(a.channel, 0u);
  EXPECT_EQ(map.map(0x1000).column, 4u);
  const DramCoord b = map.map(0xC0);  // bit 6: column bit 1; bit 7: channel bit 0
  EXPECT_EQ(b.column, 2u);
  EXPECT_EQ(b.channel, 1u);
  const DramCoord r = map.map(uint64_t{1} << (5 + 2 + 3 + 2 + 4 + 2));
  EXPECT_EQ(r.row, 1u);
  EXPECT_EQ(r.bank, 0u);
  c.address_mapping = "row rank bank column:9 bank_group channel column:2";
  EXPECT_THROW(DramAddressMap{c}, Error);  // column has 6 bits, not 11
  c.address_mapping = "row rank bank column bank_group channel column";
  EXPECT_THROW(DramAddressMap{c}, Error);  // two pieces without a width
}

}  // namespace
}  // namespace tessel::npu
