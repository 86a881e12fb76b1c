// The memory system in `tessel sim` reports (issue 17): with memory.l2 the text report has an L2
// line and the JSON report an `l2` section whose bytes agree with the DRAM counts (write_back: the
// DRAM reads are the L2's line fills, the DRAM writes its write-backs) and an l2 roofline term per
// op; with memory.multicast a `multicast` section; a preset run has neither; a bad L2 key is
// exit 2 naming the key.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "tests/cli/cli_test_util.h"

namespace tessel::testing {
namespace {

using nlohmann::json;
const std::string kHw = std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml";

CliResult tessel(const std::string& args) { return run_tessel(args, "tessel_memory"); }

TEST(MemoryReport, L2AndMulticastSectionsAgreeWithTheDramCounts) {
  const auto d = temp_dir("memory_report");
  const CliResult r = tessel("sim models/hello_deepa.onnx --hw " + kHw +
                             " --hw-set memory.l2.capacity_bytes=1048576 --hw-set "
                             "memory.multicast=dma_mc --report '" +
                             (d / "r.json").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;  // functional: checked against the reference interpreter
  EXPECT_NE(r.out.find("  L2         1 MiB: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  multicast  "), std::string::npos) << r.out;
  const json run = json::parse(slurp_file(d / "r.json")).at("runs").at(0);
  const json& l2 = run.at("l2");
  EXPECT_GT(l2.at("requests").get<uint64_t>(), 0u);
  EXPECT_EQ(l2.at("fill_bytes"), run.at("dram_bytes").at("read"));
  EXPECT_EQ(l2.at("writeback_bytes"), run.at("dram_bytes").at("written"));
  // Lines are 128 bytes: the fills are whole lines.
  EXPECT_EQ(l2.at("fill_bytes").get<uint64_t>(), 128 * l2.at("read_miss_lines").get<uint64_t>());
  const json& mc = run.at("multicast");
  EXPECT_GT(mc.at("requests").get<uint64_t>(), mc.at("received").get<uint64_t>());
  EXPECT_GT(mc.at("received").get<uint64_t>(), 0u);
  EXPECT_EQ(run.at("hw").at("config").at("memory").at("l2").at("capacity_bytes"), 1048576);
  for (const json& op : run.at("ops"))
    if (op.contains("roofline_per_unit")) EXPECT_TRUE(op.at("roofline_per_unit").contains("l2"));
}

TEST(MemoryReport, APresetRunHasNeitherSection) {
  const auto d = temp_dir("memory_report_preset");
  const CliResult r = tessel("sim models/hello_deepa.onnx --hw " + kHw +
                             " --timing-only --report '" + (d / "r.json").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("  L2  "), std::string::npos);
  const json run = json::parse(slurp_file(d / "r.json")).at("runs").at(0);
  EXPECT_FALSE(run.contains("l2"));
  EXPECT_FALSE(run.contains("multicast"));
  EXPECT_FALSE(run.at("hw").at("config").at("memory").contains("l2"));
}

TEST(MemoryReport, ABadL2KeyIsExit2NamingIt) {
  const CliResult r = tessel("sim models/hello_deepa.onnx --hw " + kHw +
                             " --timing-only --hw-set memory.l2.capacity_bytes=1000");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--hw-set memory.l2.capacity_bytes=1000: 1000 bytes is not a whole number "
                       "of sets of line_bytes x ways = 128 x 16 = 2048 bytes"),
            std::string::npos)
      << r.err;
}

TEST(MemoryReport, L2PlacementHintsAreReportedAndABadValueIsExit2) {
  const auto d = temp_dir("memory_report_placement");
  CliResult r = tessel("sim models/hello_deepa.onnx --hw " + kHw +
                       " --hw-set memory.l2.capacity_bytes=1048576 --hw-set "
                       "memory.l2.placement=prefetch_discard --report '" +
                       (d / "r.json").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;  // functional: checked against the reference interpreter
  EXPECT_NE(r.out.find("  L2 hints   "), std::string::npos) << r.out;
  const json run = json::parse(slurp_file(d / "r.json")).at("runs").at(0);
  const json& l2 = run.at("l2");
  ASSERT_TRUE(l2.contains("placement")) << l2.dump();
  EXPECT_GT(l2.at("placement").at("discard_requests").get<uint64_t>(), 0u);
  // Prefetch fills are line fills too: the DRAM reads are still the L2's fills.
  EXPECT_EQ(l2.at("fill_bytes"), run.at("dram_bytes").at("read"));
  EXPECT_EQ(run.at("hw").at("config").at("memory").at("l2").at("placement"), "prefetch_discard");
  r = tessel("sim models/hello_deepa.onnx --hw " + kHw +
             " --timing-only --hw-set memory.l2.capacity_bytes=1048576 --hw-set "
             "memory.l2.placement=prefetch-discard");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--hw-set memory.l2.placement=prefetch-discard: expected one of none, "
                       "prefetch, discard, prefetch_discard"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace tessel::testing
