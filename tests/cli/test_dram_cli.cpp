// The DRAM model options as a user runs them (docs/memory.md): `--dram-trace FILE` on sim, run and
// check writes every DRAM request, whose bytes add up to the report's DRAM burst bytes with the
// simple and the banked model; the banked preset's report has per-channel row-buffer counters;
// bad use (a target without DRAM, a bad path, an inconsistent timing) is exit 2 with nothing
// written.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "tests/cli/cli_test_util.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
const std::string kModels = TESSEL_MODELS_DIR;
const std::string kCls = kModels + "/ch_ppocr_mobile_v2.0_cls_infer.onnx";

CliResult tessel(const std::string& args) { return run_tessel(args, "tessel_dram"); }

struct TraceSums {
  uint64_t bytes = 0, read_bytes = 0, lines = 0;
  std::set<int> channels;
};

/// Sums a --dram-trace file; every line must be CYCLE CORE CHANNEL 0xADDRESS BYTES R|W.
TraceSums sum_trace(const fs::path& p) {
  std::ifstream in(p);
  EXPECT_TRUE(in.good()) << p;
  TraceSums s;
  std::string line;
  uint64_t last_cycle = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    uint64_t cycle = 0, bytes = 0;
    int core = -1, channel = -1;
    std::string address, op;
    f >> cycle >> core >> channel >> address >> bytes >> op;
    EXPECT_FALSE(f.fail()) << line;
    EXPECT_TRUE(op == "R" || op == "W") << line;
    EXPECT_EQ(address.rfind("0x", 0), 0u) << line;
    EXPECT_GE(core, 0) << line;
    EXPECT_GE(cycle, last_cycle) << "requests are in arrival order: " << line;
    last_cycle = cycle;
    s.bytes += bytes;
    if (op == "R") s.read_bytes += bytes;
    s.channels.insert(channel);
    ++s.lines;
  }
  return s;
}

json sim_with_trace(const std::string& hw, const fs::path& dir) {
  const CliResult r = tessel(
      "sim '" + kCls + "' --hw " + hw + " --input-shape x=1,3,48,192 --timing-only --report '" +
      (dir / "r.json").string() + "' --dram-trace '" + (dir / "t.txt").string() + "'");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "dram trace " + (dir / "t.txt").string());
  if (r.code != 0) return json::object();
  return json::parse(slurp_file(dir / "r.json"))["runs"][0];
}

TEST(DramCli, TraceBytesAddUpToTheReportWithTheBankedModel) {
  const fs::path d = temp_dir("dram_banked");
  const json run = sim_with_trace("hw_configs/npu_4core_lpddr5.yaml", d);
  ASSERT_TRUE(run.contains("dram"));
  const TraceSums t = sum_trace(d / "t.txt");
  EXPECT_EQ(t.bytes, run["dram_bytes"]["burst"].get<uint64_t>());
  EXPECT_EQ(run["dram"]["model"], "banked");
  ASSERT_EQ(run["dram"]["channels"].size(), 8u);
  uint64_t read = 0, requests = 0;
  for (const json& c : run["dram"]["channels"]) {
    read += c["read_bytes"].get<uint64_t>();
    requests += c["requests"].get<uint64_t>();
  }
  EXPECT_EQ(read, t.read_bytes);
  EXPECT_EQ(requests, t.lines);  // one line per 32-byte burst
  EXPECT_EQ(t.bytes, 32 * t.lines);
  EXPECT_EQ(t.channels.size(), 8u);
  EXPECT_EQ(run["dram"]["requests"].get<uint64_t>(),
            run["dram"]["row_hits"].get<uint64_t>() + run["dram"]["row_misses"].get<uint64_t>() +
                run["dram"]["bank_conflicts"].get<uint64_t>());
}

TEST(DramCli, TraceBytesAddUpToTheReportWithTheSimpleModel) {
  const fs::path d = temp_dir("dram_simple");
  const json run = sim_with_trace("hw_configs/npu_4core.yaml", d);
  const TraceSums t = sum_trace(d / "t.txt");
  EXPECT_EQ(t.bytes, run["dram_bytes"]["burst"].get<uint64_t>());
  EXPECT_EQ(run["dram"]["model"], "simple");
  EXPECT_EQ(t.channels, std::set<int>{0});
  EXPECT_EQ(run["dram"]["channels"][0]["read_bytes"].get<uint64_t>(), t.read_bytes);
}

TEST(DramCli, TraceBytesAddUpWithL2PlacementHints) {
  // An 8 MiB L2 with memory.l2.placement=prefetch_discard on the banked model: the prefetch fills
  // the L2 makes in DRAM idle time are traced (under the core that asked) like every other
  // request, and the trace still adds up to the report's burst bytes.
  const fs::path d = temp_dir("dram_hints");
  const CliResult r = tessel(
      "sim '" + kCls +
      "' --hw hw_configs/npu_4core_lpddr5.yaml --hw-set memory.l2.capacity_bytes=8388608 "
      "--hw-set memory.l2.placement=prefetch_discard --input-shape x=1,3,48,192 --timing-only "
      "--report '" +
      (d / "r.json").string() + "' --dram-trace '" + (d / "t.txt").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const json run = json::parse(slurp_file(d / "r.json"))["runs"][0];
  ASSERT_TRUE(run["l2"].contains("placement")) << run["l2"].dump();
  EXPECT_GT(run["l2"]["placement"]["prefetch_fill_bytes"].get<uint64_t>(), 0u);
  const TraceSums t = sum_trace(d / "t.txt");
  EXPECT_EQ(t.bytes, run["dram_bytes"]["burst"].get<uint64_t>());
  EXPECT_EQ(t.read_bytes, run["dram_bytes"]["read"].get<uint64_t>());
}

TEST(DramCli, BankedReportHasAChannelTable) {
  const CliResult r = tessel("sim '" + kCls +
                             "' --hw hw_configs/npu_4core_lpddr5.yaml --input-shape x=1,3,48,192 "
                             "--timing-only");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "dram channel  bytes read");
  EXPECT_CONTAINS(r.out, "row hits");
  EXPECT_CONTAINS(r.out, "\n  all ");
}

TEST(DramCli, CheckWritesATracePerNpuRunAndRejectsOtherTargets) {
  const fs::path d = temp_dir("dram_check");
  CliResult r = tessel(
      "check tests/data/cases/hello_deepa --target npu --hw "
      "hw_configs/npu_4core_lpddr5.yaml --dram-trace '" +
      (d / "c.txt").string() + "'");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_GT(sum_trace(d / "c.txt").lines, 0u);
  r = tessel("check tests/data/cases/hello_deepa --target ref --dram-trace '" +
             (d / "ref.txt").string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "--dram-trace only applies to --target npu");
  EXPECT_FALSE(fs::exists(d / "ref.txt"));
}

TEST(DramCli, BadUseIsAnErrorAndWritesNothing) {
  const fs::path d = temp_dir("dram_bad");
  // A run without an NPU target has no simulated DRAM.
  write(d / "cpu.yaml",
        "model: " + kCls + "\ninputs:\n  x: {shape: [1, 3, 48, 192]}\ntarget: ref\ncheck: none\n");
  CliResult r = tessel("run '" + (d / "cpu.yaml").string() + "' --dram-trace '" +
                       (d / "t.txt").string() + "'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_CONTAINS(r.err, "--dram-trace '" + (d / "t.txt").string() + "': no run of");
  EXPECT_FALSE(fs::exists(d / "t.txt"));
  r = tessel("sim '" + kCls +
             "' --hw hw_configs/npu_4core.yaml --timing-only --dram-trace /no/such/dir/t.txt");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "--dram-trace '/no/such/dir/t.txt': directory '/no/such/dir' does not");
  // An inconsistent timing set by --hw-set: exit 2 naming the key.
  r = tessel("sim '" + kCls +
             "' --hw hw_configs/npu_4core_lpddr5.yaml --timing-only --hw-set "
             "memory.dram.banked.timing_ck.tRAS=5 --dram-trace '" +
             (d / "t2.txt").string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err,
                  "hw_configs/npu_4core_lpddr5.yaml: --hw-set "
                  "memory.dram.banked.timing_ck.tRAS=5: tRAS = 5 nCK is less than tRCD");
  EXPECT_FALSE(fs::exists(d / "t2.txt"));
}

}  // namespace
}  // namespace tessel::testing
