// Real models on the CPU backend through the driver: `tessel check --target cpu` on the golden
// cases (expected outputs from ONNX Runtime, tests/data/cases; tolerance of `tessel check`: atol
// 1e-5, rtol 1e-3 for an fp32 target against independent fp32 data), and `target: cpu` in an
// experiment file (per-op wall times in the text and JSON reports).
//
// Only the small models run here (hello_deepa 0.2 s, the PP-OCR classifier ~6 s of JIT compile
// on this 2-core machine); the detector and recogniser cases pass the same command in ~20 s each
// (docs/cpu_backend.md lists the command), too slow for every `make test`.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/driver/commands.h"
#include "tests/cpu/cpu_test_util.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;
const std::string kSrc = TESSEL_SOURCE_DIR;

bool have_models() { return fs::exists(kSrc + "/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"); }

TEST(CpuModels, CheckGoldenCasesOnCpu) {
  if (!have_models()) GTEST_SKIP() << "run scripts/fetch_models.sh";
  const fs::path report = fs::temp_directory_path() / "tessel_cpu_models_check.json";
  driver::CheckArgs args;
  args.case_dirs = {kSrc + "/tests/data/cases/hello_deepa",
                    kSrc + "/tests/data/cases/ppocr_cls_b1"};
  args.target = "cpu";
  args.report_path = report.string();
  std::ostringstream out, err;
  EXPECT_EQ(driver::cmd_check(args, out, err), 0) << out.str() << err.str();
  std::ifstream f(report);
  const auto j = nlohmann::json::parse(f);
  fs::remove(report);
  EXPECT_EQ(j.at("target"), "cpu");
  ASSERT_EQ(j.at("cases").size(), 2u);
  for (const auto& c : j.at("cases")) {
    EXPECT_EQ(c.at("status"), "pass") << c.at("dir");
    for (const auto& ds : c.at("data_sets")) {
      for (const auto& o : ds.at("outputs")) EXPECT_TRUE(o.at("pass").get<bool>()) << o.dump();
      // Per-op wall times: every kernel timed, and they add up to at most the entry's wall time.
      const auto& cpu = ds.at("cpu");
      double sum = 0;
      ASSERT_FALSE(cpu.at("kernels").empty());
      for (const auto& k : cpu.at("kernels")) {
        EXPECT_GE(k.at("seconds").get<double>(), 0.0);
        sum += k.at("seconds").get<double>();
      }
      EXPECT_LE(sum, cpu.at("run_seconds").get<double>() * 1.0001 + 1e-6);
    }
  }
}

TEST(CpuModels, ExperimentTargetCpu) {
  if (!have_models()) GTEST_SKIP() << "run scripts/fetch_models.sh";
  const fs::path dir = fs::temp_directory_path() / "tessel_cpu_models_exp";
  fs::create_directories(dir);
  const fs::path yaml = dir / "exp.yaml";
  std::ofstream(yaml) << "name: cpu_hello\n"
                      << "model: " << kSrc << "/models/hello_deepa.onnx\n"
                      << "inputs:\n  onnx::Flatten_0: {shape: [1, 25, 96], fill: uniform, low: "
                         "-1.0, high: 1.0, seed: 3}\n"
                      << "target: cpu\ncheck: reference\nreport: [summary, ops, check]\n";
  driver::RunArgs args;
  args.experiment = yaml.string();
  args.report_path = (dir / "report.json").string();
  std::ostringstream out, err;
  EXPECT_EQ(driver::cmd_run(args, out, err), 0) << out.str() << err.str();
  const std::string text = out.str();
  EXPECT_NE(text.find("cpu (host CPU through LLVM)"), std::string::npos) << text;
  EXPECT_NE(text.find("ms wall"), std::string::npos) << text;       // per model
  EXPECT_NE(text.find("/layer1/Gemm"), std::string::npos) << text;  // per op
  EXPECT_NE(text.find("PASS"), std::string::npos) << text;
  std::ifstream f(args.report_path);
  const std::string json_text((std::istreambuf_iterator<char>(f)), {});
  EXPECT_NE(json_text.find("\"kernels\""), std::string::npos);
  fs::remove_all(dir);

  // A hardware config with target cpu is a mistake the experiment loader names.
  fs::create_directories(dir);
  std::ofstream(yaml) << "name: cpu_hw\nmodel: " << kSrc << "/models/hello_deepa.onnx\n"
                      << "hw: " << kSrc << "/hw_configs/npu_4core.yaml\ntarget: cpu\n";
  std::ostringstream out2, err2;
  args.report_path.clear();
  EXPECT_EQ(driver::cmd_run(args, out2, err2), 2);
  EXPECT_NE(err2.str().find("target is cpu"), std::string::npos) << err2.str();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tessel::testing
