// Real models on the CPU backend through the driver: `tessel check --target cpu` on every golden
// real-model case (expected outputs from ONNX Runtime, tests/data/cases; tolerance of `tessel
// check`: atol 1e-5, rtol 1e-3 for an fp32 target against independent fp32 data), and `target:
// cpu` in an experiment file (per-op wall times in the text and JSON reports, the `threads` key).
//
// Cost on this 2-core machine (CPU time, cold kernel cache): hello_deepa 0.2 s, the PP-OCR
// classifier ~3 s per batch size, the detector ~7 s, the recogniser ~8 s, nearly all of it LLVM
// compiling kernels; the cases of one model are separate tests so ctest runs them side by side.
// Each check has its own kernel cache in a fresh temporary directory: the second detector case
// (same model, other data) takes every kernel from the cache the first one filled.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "compiler/backend/cpu/runtime/cpu_runtime.h"
#include "compiler/driver/commands.h"
#include "tests/cpu/cpu_test_util.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;
const std::string kSrc = TESSEL_SOURCE_DIR;

bool have_models() { return fs::exists(kSrc + "/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"); }

/// `tessel check --target cpu` on `cases` (directories under tests/data/cases) with a kernel
/// cache in `tmp`: every output of every data set passes, every kernel is timed and the times add
/// up to at most the entry's wall time. Returns the JSON report.
nlohmann::json check_on_cpu(const std::vector<std::string>& cases, const CpuTempDir& tmp) {
  ScopedEnv cache("TESSEL_CACHE_DIR", (tmp.path / "cache").c_str());
  driver::CheckArgs args;
  for (const auto& c : cases) args.case_dirs.push_back(kSrc + "/tests/data/cases/" + c);
  args.target = "cpu";
  args.report_path = (tmp.path / "check.json").string();
  std::ostringstream out, err;
  EXPECT_EQ(driver::cmd_check(args, out, err), 0) << out.str() << err.str();
  std::ifstream f(args.report_path);
  const auto j = nlohmann::json::parse(f);
  EXPECT_EQ(j.at("target"), "cpu");
  EXPECT_EQ(j.at("cases").size(), cases.size());
  for (const auto& c : j.at("cases")) {
    EXPECT_EQ(c.at("status"), "pass") << c.at("dir");
    for (const auto& ds : c.at("data_sets")) {
      EXPECT_FALSE(ds.at("outputs").empty()) << c.at("dir");
      for (const auto& o : ds.at("outputs")) EXPECT_TRUE(o.at("pass").get<bool>()) << o.dump();
      // Per-op wall times are reported: one entry per compiled kernel, each naming its node and
      // carrying a time (what the time is, is the machine's business: no clock bound here).
      const auto& cpu = ds.at("cpu");
      EXPECT_FALSE(cpu.at("kernels").empty());
      std::set<std::string> nodes;
      for (const auto& k : cpu.at("kernels")) {
        EXPECT_TRUE(k.at("seconds").is_number()) << k.dump();
        EXPECT_FALSE(k.at("node").get<std::string>().empty()) << k.dump();
        EXPECT_TRUE(nodes.insert(k.at("node").get<std::string>()).second)
            << "kernel listed twice: " << k.dump();
      }
      EXPECT_TRUE(cpu.at("run_seconds").is_number());
    }
  }
  return j;
}

TEST(CpuModels, CheckHelloAndClassifierOnCpu) {
  ASSERT_TRUE(have_models()) << "models missing: run scripts/fetch_models.sh";
  CpuTempDir tmp;
  check_on_cpu({"hello_deepa", "ppocr_cls_b1"}, tmp);
}

TEST(CpuModels, CheckClassifierBatch4OnCpu) {
  ASSERT_TRUE(have_models()) << "models missing: run scripts/fetch_models.sh";
  CpuTempDir tmp;
  check_on_cpu({"ppocr_cls_b4"}, tmp);
}

TEST(CpuModels, CheckDetectorOnCpuSecondCaseFromTheCache) {
  ASSERT_TRUE(have_models()) << "models missing: run scripts/fetch_models.sh";
  CpuTempDir tmp;
  const auto j = check_on_cpu({"ppocr_det_64x96", "ppocr_det_64x96_strokes"}, tmp);
  ASSERT_EQ(j.at("cases").size(), 2u);
  const auto& first = j.at("cases")[0].at("data_sets")[0].at("cpu");
  const auto& second = j.at("cases")[1].at("data_sets")[0].at("cpu");
  // The same model at the same shape: the second compile has the same distinct kernels and
  // finds every one in the cache the first one filled (kernel IR does not depend on what the
  // process compiled before: tests/cpu/test_cpu_determinism.cpp).
  const int compiled = first.at("kernels_compiled").get<int>();
  EXPECT_GT(compiled, 0);
  EXPECT_EQ(first.at("kernels_cached").get<int>(), 0);
  EXPECT_EQ(second.at("kernels_compiled").get<int>(), 0);
  EXPECT_EQ(second.at("kernels_cached").get<int>(), compiled);
}

TEST(CpuModels, CheckRecogniserOnCpu) {
  ASSERT_TRUE(have_models()) << "models missing: run scripts/fetch_models.sh";
  CpuTempDir tmp;
  check_on_cpu({"ppocr_rec_48x320"}, tmp);
}

/// Writes an experiment file running hello_deepa with `target: cpu` plus `extra` (YAML lines).
fs::path hello_experiment(const CpuTempDir& tmp, const std::string& extra) {
  const fs::path yaml = tmp.path / "exp.yaml";
  std::ofstream(yaml) << "name: cpu_hello\n"
                      << "model: " << kSrc << "/models/hello_deepa.onnx\n"
                      << "inputs:\n  onnx::Flatten_0: {shape: [1, 25, 96], fill: uniform, low: "
                         "-1.0, high: 1.0, seed: 3}\n"
                      << "target: cpu\ncheck: reference\nreport: [summary, ops, check]\n"
                      << extra;
  return yaml;
}

TEST(CpuModels, ExperimentTargetCpu) {
  ASSERT_TRUE(have_models()) << "models missing: run scripts/fetch_models.sh";
  CpuTempDir tmp;
  driver::RunArgs args;
  args.experiment = hello_experiment(tmp, "").string();
  args.report_path = (tmp.path / "report.json").string();
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

  // A hardware config with target cpu is a mistake the experiment loader names.
  std::ofstream(tmp.path / "exp.yaml")
      << "name: cpu_hw\nmodel: " << kSrc << "/models/hello_deepa.onnx\n"
      << "hw: " << kSrc << "/hw_configs/npu_4core.yaml\n"
      << "target: cpu\n";
  std::ostringstream out2, err2;
  args.report_path.clear();
  EXPECT_EQ(driver::cmd_run(args, out2, err2), 2);
  EXPECT_NE(err2.str().find("target is cpu"), std::string::npos) << err2.str();
}

TEST(CpuModels, ExperimentThreadsKey) {
  ASSERT_TRUE(have_models()) << "models missing: run scripts/fetch_models.sh";
  CpuTempDir tmp;
  const int before = tessel_cpu_get_threads();
  // Two runs with different thread counts: each one's report says the count the pool ran it
  // with, the values still match the reference, and the pool's count is restored afterwards.
  driver::RunArgs args;
  args.experiment =
      hello_experiment(tmp, "runs:\n  - {name: t1, threads: 1}\n  - {name: t3, threads: 3}\n")
          .string();
  args.report_path = (tmp.path / "report.json").string();
  std::ostringstream out, err;
  EXPECT_EQ(driver::cmd_run(args, out, err), 0) << out.str() << err.str();
  EXPECT_NE(out.str().find(", 1 thread, "), std::string::npos) << out.str();
  EXPECT_NE(out.str().find(", 3 threads, "), std::string::npos) << out.str();
  std::ifstream f(args.report_path);
  const auto j = nlohmann::json::parse(f);
  ASSERT_EQ(j.at("runs").size(), 2u);
  EXPECT_EQ(j.at("runs")[0].at("cpu").at("threads"), 1);
  EXPECT_EQ(j.at("runs")[1].at("cpu").at("threads"), 3);
  EXPECT_EQ(tessel_cpu_get_threads(), before);

  // Errors name the file, line and key: a count out of range, and threads on another target.
  for (const auto& [extra, want] : std::vector<std::pair<std::string, std::string>>{
           {"threads: 0\n", "exp.yaml:8:"},
           {"threads: 0\n", "threads: expected an integer from 1 to 1024, got 0"},
           {"threads: two\n", "expected an integer, got 'two'"},
           {"runs:\n  - {target: ref, threads: 2}\n",
            "runs[0].threads: threads applies to target cpu only"}}) {
    args.experiment = hello_experiment(tmp, extra).string();
    args.report_path.clear();
    std::ostringstream o, e;
    EXPECT_EQ(driver::cmd_run(args, o, e), 2) << extra;
    EXPECT_NE(e.str().find(want), std::string::npos) << extra << e.str();
  }
}

}  // namespace
}  // namespace tessel::testing
