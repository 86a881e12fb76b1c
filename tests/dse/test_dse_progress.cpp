// The progress line of `tessel dse` on a terminal ("dse: 3/6 point runs, 2.10/s, ETA 1 s"): the
// sweep runs under util-linux `script`, which gives it a pseudo-terminal as stdout and stderr, so
// the TTY path runs exactly as at a user's shell; without a terminal the line is not written.
#include <gtest/gtest.h>

#include <regex>

#include "tests/cli/cli_test_util.h"

namespace tessel::testing {
namespace {

const std::string kSrc = TESSEL_SOURCE_DIR;
const std::string kModels = TESSEL_MODELS_DIR;

TEST(DseProgress, TerminalShowsPointsDoneRateAndEta) {
  if (std::system("command -v script > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "util-linux script is not installed";
  const auto d = temp_dir("dse_progress");
  write(d / "e.yaml", "name: p\nsweep:\n  base: " + kSrc +
                          "/hw_configs/npu_4core.yaml\n  grid: {core.cube.m: [8, 16, 32]}\n"
                          "workloads: [{model: " +
                          kModels + "/hello_deepa.onnx}]\nobjectives: [cycles, dram_bytes]\n");
  // script -q: no start/done lines; -e: its exit code is the command's; the typescript (every
  // byte the terminal received, carriage returns included) goes to d/typescript.
  const std::string cmd = "cd '" + kSrc + "' && script -qec \"'" + std::string(TESSEL_BINARY) +
                          "' dse '" + (d / "e.yaml").string() + "' --out '" + (d / "o").string() +
                          "'\" '" + (d / "typescript").string() + "' > /dev/null 2>&1 < /dev/null";
  const int status = std::system(cmd.c_str());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
  const std::string tty = slurp_file(d / "typescript");
  // One line per finished point, each rewritten in place (\r), counting up to 3 of 3.
  for (int done = 1; done <= 3; ++done) {
    const std::regex line("\rdse: " + std::to_string(done) +
                          "/3 point runs, [0-9]+\\.[0-9]{2}/s, ETA [0-9]+ (s|min)");
    EXPECT_TRUE(std::regex_search(tty, line)) << "no progress line for " << done << " in:\n" << tty;
  }
  // The last progress line is cleared before the summary.
  EXPECT_CONTAINS(tty, "\r" + std::string(70, ' ') + "\r");
  // Without a terminal (stderr to a file) there is no progress line.
  const auto r = run_tessel("dse " + (d / "e.yaml").string() + " --out " + (d / "o2").string(),
                            "dse_progress");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("point runs,"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace tessel::testing
