// End to end on the real models: the case directories under tests/data/cases hold inputs and the
// outputs ONNX Runtime 1.20.1 computed (docs/golden_cases.md). Each model runs on the reference
// interpreter and, compiled, on the simulated NPU, and is compared value by value.
//
// Tolerances (compiler/driver/compare.h): reference vs ONNX Runtime rtol 1e-3, atol 1e-5 (fp32
// summation order); NPU vs ONNX Runtime within driver::npu_tolerances, derived from each model's
// fp16 roundings (Monte Carlo arithmetic on the reference; rtol u = 2^-11).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "compiler/driver/commands.h"

namespace tessel::testing {
namespace {

const std::string kSrc = TESSEL_SOURCE_DIR;

struct CaseRun {
  int exit_code;
  std::string out, err;
  nlohmann::json report;
};

CaseRun check_case(const std::string& name, const std::string& target, const std::string& hw = "") {
  const std::string report = ::testing::TempDir() + "/e2e_" + name + "_" + target + ".json";
  driver::CheckArgs args;
  args.case_dirs = {kSrc + "/tests/data/cases/" + name};
  args.target = target;
  if (!hw.empty()) args.hw = kSrc + "/hw_configs/" + hw + ".yaml";
  args.report_path = report;
  std::ostringstream out, err;
  CaseRun r;
  r.exit_code = driver::cmd_check(args, out, err);
  r.out = out.str();
  r.err = err.str();
  std::ifstream f(report);
  if (f) r.report = nlohmann::json::parse(f);
  return r;
}

void expect_pass(const CaseRun& r, const std::string& what) {
  ASSERT_EQ(r.exit_code, 0) << what << "\n" << r.out << r.err;
  const auto& set = r.report["cases"][0]["data_sets"][0];
  EXPECT_EQ(set["status"], "pass");
  for (const auto& o : set["outputs"]) {
    EXPECT_TRUE(o["pass"].get<bool>()) << what << " " << o.dump();
    // Record the measured error in the test log.
    std::cout << "  " << what << " " << o["name"].get<std::string>()
              << ": max_abs_error=" << o["max_abs_error"] << " (atol " << o["atol"] << ")\n";
  }
}

class RealModel : public ::testing::TestWithParam<std::string> {};

TEST_P(RealModel, ReferenceMatchesOnnxRuntime) {
  expect_pass(check_case(GetParam(), "ref"), GetParam() + " ref");
}

TEST_P(RealModel, NpuMatchesOnnxRuntimeOnEveryPreset) {
  for (const char* hw : {"npu_4core", "edge_1core", "server_32core"}) {
    CaseRun r = check_case(GetParam(), "npu", hw);
    expect_pass(r, GetParam() + " npu " + hw);
    const auto& set = r.report["cases"][0]["data_sets"][0];
    // The report carries the simulator's numbers.
    EXPECT_GT(set["total_cycles"].get<uint64_t>(), 0u);
    EXPECT_GT(set["instructions"]["dynamic"].get<uint64_t>(),
              set["instructions"]["static"].get<uint64_t>() / 2);
    for (const auto& [pipe, u] : set["per_pipe_utilization"].items()) {
      EXPECT_GE(u.get<double>(), 0.0) << pipe;
      EXPECT_LE(u.get<double>(), 1.0) << pipe;
    }
    EXPECT_GT(set["dram_bytes"]["read"].get<uint64_t>(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, RealModel,
                         ::testing::Values("ppocr_cls_b1", "ppocr_cls_b4", "hello_deepa",
                                           "ppocr_rec_48x320", "ppocr_det_64x96",
                                           "ppocr_det_64x96_strokes"));

TEST(Quickstart, ExperimentRunsAndReportsTheRequiredFields) {
  const std::string report = ::testing::TempDir() + "/quickstart.json";
  driver::RunArgs args;
  args.experiment = kSrc + "/experiments/quickstart.yaml";
  args.report_path = report;
  std::ostringstream out, err;
  ASSERT_EQ(driver::cmd_run(args, out, err), 0) << out.str() << err.str();
  std::ifstream f(report);
  auto j = nlohmann::json::parse(f);
  const auto& run = j["runs"][0];
  EXPECT_GT(run["total_cycles"].get<uint64_t>(), 0u);
  for (const char* pipe : {"scalar", "mte2", "mte1", "cube", "fix", "vector", "mte3"})
    EXPECT_TRUE(run["per_pipe_busy_cycles"].contains(pipe)) << pipe;
  EXPECT_GT(run["per_pipe_busy_cycles"]["cube"].get<uint64_t>(),
            0u);  // convolutions ran on the cube
  EXPECT_GT(run["dram_bytes"]["total"].get<uint64_t>(), 0u);
  // npu_4core moves 32-byte bursts: whole bursts cover at least the bytes accessed, and a
  // multiple of 32 (each dma occupies whole bursts).
  EXPECT_GE(run["dram_bytes"]["burst"].get<uint64_t>(), run["dram_bytes"]["total"].get<uint64_t>());
  EXPECT_EQ(run["hw"]["dram_burst_bytes"].get<uint64_t>(), 32u);
  EXPECT_EQ(run["dram_bytes"]["burst"].get<uint64_t>() % 32, 0u);
  EXPECT_GT(run["instructions"]["dynamic"].get<uint64_t>(), 0u);
  ASSERT_EQ(run["outputs"].size(), 1u);
  EXPECT_LT(run["outputs"][0]["max_abs_error"].get<double>(),
            run["outputs"][0]["atol"].get<double>());
  EXPECT_TRUE(run["outputs"][0]["pass"].get<bool>());
  // The tables a person reads.
  EXPECT_NE(out.str().find("busy cycles"), std::string::npos);
  EXPECT_NE(out.str().find("PASS"), std::string::npos);
}

}  // namespace
}  // namespace tessel::testing
