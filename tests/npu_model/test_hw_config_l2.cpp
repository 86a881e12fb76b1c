// The optional shared-L2 section of the hardware config (memory.l2, npu_model/hw_config.cpp,
// docs/hw_config.md): absent = no L2 and the presets' YAML unchanged; present or set with --hw-set
// it is read with its documented defaults; bad values name the file, line and key.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/support/error.h"
#include "npu_model/hw_config.h"

namespace tessel::npu {
namespace {

const std::string kSourceDir = TESSEL_SOURCE_DIR;

// npu_4core.yaml as the base (its memory section is last, so appending lines extends it).
HwConfig preset(const std::vector<HwOverride>& overrides = {}) {
  return load_hw_config(kSourceDir + "/hw_configs/npu_4core.yaml", overrides);
}

std::string preset_text() { return hw_config_to_yaml(preset()); }

std::string preset_text_from_file() {
  std::ifstream in(kSourceDir + "/hw_configs/npu_4core.yaml");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string error_of(const std::string& text, const std::vector<HwOverride>& overrides = {}) {
  try {
    parse_hw_config(text, "<test>", overrides);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a tessel::Error";
  return "";
}

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

TEST(HwConfigL2, AbsentMeansNoL2AndTheYamlHasNoSection) {
  const HwConfig hw = preset();
  EXPECT_FALSE(hw.l2.enabled());
  EXPECT_EQ(hw.l2.capacity_bytes, 0);
  EXPECT_EQ(hw_config_to_yaml(hw).find("l2"), std::string::npos);
}

TEST(HwConfigL2, SectionIsReadWithDefaultsAndRoundTrips) {
  const std::string text = preset_text();
  // hw_config_to_yaml writes `memory:` last with `dram:` indented by 2.
  const HwConfig hw = parse_hw_config(text + "  l2:\n    capacity_bytes: 8388608\n", "<test>");
  EXPECT_TRUE(hw.l2.enabled());
  EXPECT_EQ(hw.l2.capacity_bytes, 8 << 20);
  EXPECT_EQ(hw.l2.line_bytes, 128);
  EXPECT_EQ(hw.l2.ways, 16);
  EXPECT_EQ(hw.l2.banks, 16);
  EXPECT_EQ(hw.l2.bytes_per_cycle, 64);
  EXPECT_EQ(hw.l2.latency_cycles, 40);
  EXPECT_EQ(hw.l2.write_policy, L2WritePolicy::write_back);
  EXPECT_EQ(hw.l2.sets(), (8 << 20) / (128 * 16));
  EXPECT_EQ(parse_hw_config(hw_config_to_yaml(hw), "<test>"), hw);
  // The section is written whole, defaults included (reports list every key of it).
  EXPECT_NE(hw_config_to_yaml(hw).find("    write_policy: write_back\n"), std::string::npos);
  const HwConfig wt = parse_hw_config(
      text + "  l2:\n    capacity_bytes: 65536\n    write_policy: write_through\n    ways: 4\n",
      "<test>");
  EXPECT_EQ(wt.l2.write_policy, L2WritePolicy::write_through);
  EXPECT_EQ(wt.l2.ways, 4);
  EXPECT_EQ(parse_hw_config(hw_config_to_yaml(wt), "<test>"), wt);
}

TEST(HwConfigL2, HwSetOfTheCapacityAddsAnL2) {
  const HwConfig hw = preset({{"memory.l2.capacity_bytes", "4194304"}, {"memory.l2.banks", "8"}});
  EXPECT_EQ(hw.l2.capacity_bytes, 4 << 20);
  EXPECT_EQ(hw.l2.banks, 8);
  EXPECT_EQ(hw.l2.line_bytes, 128);
  // Another l2 key alone is not enough: the capacity is required once the section exists.
  try {
    preset({{"memory.l2.banks", "8"}});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), "memory.l2: missing required key 'capacity_bytes'");
  }
}

TEST(HwConfigMulticast, OptionalKeyDefaultsToNoneAndRoundTrips) {
  EXPECT_FALSE(preset().multicast);
  EXPECT_EQ(preset_text().find("multicast"), std::string::npos);
  const HwConfig hw = preset({{"memory.multicast", "dma_mc"}});
  EXPECT_TRUE(hw.multicast);
  EXPECT_EQ(parse_hw_config(hw_config_to_yaml(hw), "<test>").multicast, true);
  EXPECT_HAS(error_of(preset_text(), {{"memory.multicast", "yes"}}),
             "<test>: --hw-set memory.multicast=yes: expected one of none, dma_mc (optional: when "
             "absent, none: no multicast, dma_mc is an error), got 'yes'");
}

TEST(HwConfigL2, BadValuesNameLineAndKey) {
  const std::string text = preset_text();
  const int line = 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));  // l2:
  EXPECT_HAS(error_of(text + "  l2:\n    capacity_bytes: 1000000\n"),
             "<test>:" + std::to_string(line + 1) +
                 ":21: memory.l2.capacity_bytes: 1000000 bytes is not a whole number of sets of "
                 "line_bytes x ways = 128 x 16 = 2048 bytes; expected a multiple of 2048");
  EXPECT_HAS(error_of(text + "  l2:\n    capacity_bytes: 65536\n    write_policy: writeback\n"),
             "<test>:" + std::to_string(line + 2) +
                 ":19: memory.l2.write_policy: expected one of write_back, write_through "
                 "(optional: when absent, write_back), got 'writeback'");
  EXPECT_HAS(error_of(text + "  l2:\n    capacity_bytes: 65536\n    line_bytes: 96\n"),
             "memory.l2.line_bytes: expected a power of two in [32, 4096] (optional: when absent, "
             "128 = 128-byte lines), got 96, which is not a power of two");
  EXPECT_HAS(error_of(text + "  l2:\n    capacity_bytes: 65536\n    banks: 0\n"),
             "memory.l2.banks: expected an integer in [1, 1024] (optional: when absent, 16 = 16 "
             "banks), got 0");
  EXPECT_HAS(error_of(text + "  l2:\n    capacity_bytes: 65536\n    sets: 4\n"),
             "memory.l2.sets: unknown key; expected one of capacity_bytes, line_bytes, ways, "
             "banks, bytes_per_cycle, latency_cycles, write_policy");
  EXPECT_HAS(error_of(text + "  l2: 8388608\n"), "memory.l2: expected a map with keys");
  EXPECT_HAS(error_of(text, {{"memory.l2.capacity_bytes", "3000"}}),
             "<test>: --hw-set memory.l2.capacity_bytes=3000: 3000 bytes is not a whole number of "
             "sets");
}

TEST(HwConfigL2, PastedMessagesMatchTheLoader) {
  // docs/hw_config.md, "Error messages": the L2 examples, as a run from the repository root
  // prints them.
  std::ifstream in(kSourceDir + "/docs/hw_config.md");
  std::ostringstream docs;
  docs << in.rdbuf();
  const std::vector<std::vector<HwOverride>> cases = {
      {parse_hw_override("memory.l2.capacity_bytes=3000000")},
      {parse_hw_override("memory.l2.capacity_bytes=3000000"),
       parse_hw_override("memory.l2.write_policy=writeback")}};
  for (const auto& sets : cases) {
    std::string m;
    try {
      parse_hw_config(preset_text_from_file(), "hw_configs/npu_4core.yaml", sets);
    } catch (const Error& e) {
      m = e.what();
    }
    ASSERT_FALSE(m.empty());
    EXPECT_NE(docs.str().find("```\n" + m + "\n```"), std::string::npos)
        << "docs/hw_config.md lacks this message in a code block:\n"
        << m;
  }
}

}  // namespace
}  // namespace tessel::npu
