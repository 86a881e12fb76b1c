// `tessel dse --explain DIR POINT`: the share of cycles per bound unit and the largest stalls --
// per op, the cycles the pipe bounding it sat idle -- equal what the same point's `tessel sim
// --report` gives, op by op.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compiler/driver/report.h"
#include "tests/cli/cli_test_util.h"

namespace tessel::testing {
namespace {

const std::string kSrc = TESSEL_SOURCE_DIR;
const std::string kModels = TESSEL_MODELS_DIR;

TEST(DseExplain, LargestStallsAreTheBoundPipesIdleCyclesOfTheSimReport) {
  const auto d = temp_dir("dse_explain");
  write(d / "e.yaml", "name: x\nsweep:\n  base: " + kSrc +
                          "/hw_configs/npu_4core.yaml\n  grid: {memory.dram.bytes_per_cycle: [32, "
                          "256]}\nworkloads: [{model: " +
                          kModels + "/hello_deepa.onnx}]\nobjectives: [cycles, dram_bytes]\n");
  auto r =
      run_tessel("dse " + (d / "e.yaml").string() + " --out " + (d / "o").string(), "dse_explain");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_tessel("dse --explain " + (d / "o").string() + " 0", "dse_explain");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "bound unit  share of op cycles");
  EXPECT_CONTAINS(r.out, "the largest stalls");
  // The same point through tessel sim: per op, idle = cycles x (1 - utilisation of the pipe
  // bounding it, MTE2 for a DRAM-bound op); the five largest, largest first.
  const auto rep = d / "sim.json";
  const auto s = run_tessel(
      "sim models/hello_deepa.onnx --hw hw_configs/npu_4core.yaml --timing-only --hw-set "
      "memory.dram.bytes_per_cycle=32 --report " +
          rep.string(),
      "dse_explain");
  ASSERT_EQ(s.code, 0) << s.err;
  const auto j = nlohmann::json::parse(slurp_file(rep))["runs"][0];
  struct Expected {
    double idle;
    std::string name, pipe;
  };
  std::vector<Expected> want;
  for (const auto& o : j["ops"]) {
    if (!o.contains("bound") || !o.contains("per_pipe_utilization")) continue;
    const std::string b = o["bound"];
    const std::string pipe = b == "dram" || b == "l2" ? "mte2" : b;
    if (!o["per_pipe_utilization"].contains(pipe)) continue;
    want.push_back({o["cycles"].get<double>() * (1 - o["per_pipe_utilization"][pipe].get<double>()),
                    o["name"], pipe});
  }
  std::stable_sort(want.begin(), want.end(),
                   [](const Expected& a, const Expected& b) { return a.idle > b.idle; });
  ASSERT_GE(want.size(), 2u);
  const std::string table = r.out.substr(r.out.find("the largest stalls"));
  std::istringstream lines(table);
  std::string line;
  for (int i = 0; i < 3; ++i) std::getline(lines, line);  // title (2 lines), header
  std::getline(lines, line);                              // the rule under the header
  for (size_t i = 0; i < std::min<size_t>(want.size(), 5); ++i) {
    ASSERT_TRUE(std::getline(lines, line));
    std::istringstream f(line);
    std::string name;
    f >> name;
    EXPECT_EQ(name, want[i].name) << table;
    EXPECT_CONTAINS(line, " " + want[i].pipe + " ");
    EXPECT_CONTAINS(line, driver::with_commas(static_cast<uint64_t>(std::llround(want[i].idle))));
  }
}

}  // namespace
}  // namespace tessel::testing
