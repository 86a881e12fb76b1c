// The real models from other npm packages (issue 15; scripts/fetch_models.sh names each package,
// version, file and SHA-256; tests/data/cases/<case>/README.md the inputs; docs/golden_cases.md
// the list and what blocks the others): every case is checked against ONNX Runtime 1.20.1's
// outputs on the reference interpreter, and the cases that compile are checked on the simulated
// NPU (three presets) and on the CPU backend, value by value, through `tessel check`.
//
// Tolerances: the reference and the CPU backend use the fp32 tolerance of `tessel check` (rtol
// 1e-3, atol 1e-5, widened where the model amplifies fp32 rounding: driver::fp32_tolerances), the
// NPU its derived fp16 bound (driver::npu_tolerances) on the graph `check` compiles for it (after
// graph_passes::fp16_range, calibrated on the data set's inputs).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/driver/commands.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;
const std::string kSrc = TESSEL_SOURCE_DIR;

struct CheckRun {
  int exit_code;
  std::string out, err;
  nlohmann::json report;
};

/// `tessel check tests/data/cases/<name> --target <target> [--hw hw_configs/<hw>.yaml]`. The CPU
/// backend's kernel cache goes to a directory of this test's own.
CheckRun check_case(const std::string& name, const std::string& target, const std::string& hw = "",
                    bool fp16_range = true) {
  const std::string tag = name + "_" + target + (hw.empty() ? "" : "_" + hw);
  const fs::path tmp = fs::path(::testing::TempDir()) / ("npm_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  setenv("TESSEL_CACHE_DIR", (tmp / "cache").c_str(), 1);
  driver::CheckArgs args;
  args.case_dirs = {kSrc + "/tests/data/cases/" + name};
  args.target = target;
  if (!hw.empty()) args.hw = kSrc + "/hw_configs/" + hw + ".yaml";
  args.report_path = (tmp / (tag + (fp16_range ? "" : "_no_fp16_range") + ".json")).string();
  args.fp16_range = fp16_range;
  std::ostringstream out, err;
  CheckRun r;
  r.exit_code = driver::cmd_check(args, out, err);
  r.out = out.str();
  r.err = err.str();
  std::ifstream f(args.report_path);
  if (f) r.report = nlohmann::json::parse(f);
  return r;
}

/// Every output of the case's one data set passes; returns the outputs' JSON.
nlohmann::json expect_pass(const CheckRun& r, const std::string& what) {
  EXPECT_EQ(r.exit_code, 0) << what << "\n" << r.out << r.err;
  if (r.report.is_null()) return {};
  const auto& set = r.report["cases"][0]["data_sets"][0];
  EXPECT_EQ(set["status"], "pass") << what;
  EXPECT_FALSE(set["outputs"].empty()) << what;
  for (const auto& o : set["outputs"]) {
    EXPECT_TRUE(o["pass"].get<bool>()) << what << " " << o.dump();
    std::cout << "  " << what << " " << o["name"].get<std::string>()
              << ": max_abs_error=" << o["max_abs_error"]
              << " error/bound=" << o["error_over_bound"] << "\n";
  }
  return set["outputs"];
}

bool have(const std::string& name) {
  return fs::exists(kSrc + "/tests/data/cases/" + name + "/model.onnx");
}

// Cases that pass on ref, npu and cpu.
const std::vector<std::string> kCompiled = {
    "oww_alexa",
    "oww_hey_rhasspy",
    "oww_weather",
    "oww_timer",
    "oww_embedding",
    "blazeface_front_128",
    "blazeface_back_256",
    "hello_deepa_old",
    "namaste_deepa",
    // If on a run-time value (jarvis), LSTM inside If (silero): both branches compiled
    // (guard_branches; the CPU runs the taken one, the NPU computes both and Where picks).
    "oww_hey_jarvis",
    "silero_vad_16k_op15",
    "silero_vad_op18_ifless",
    // Values beyond fp16's range, rescaled around the cube or kept in fp32 on the NPU
    // (graph_passes::fp16_range, calibrated by `tessel check` on the data set's inputs): the
    // melspectrogram's power spectrum (Pow of the STFT Conv reaches 2.7e9, the mel MatMul 7.1e7)
    // and silero legacy's log(1 + 2^20 |STFT|) (Mul_93 reaches 2.07e7).
    "oww_melspectrogram",
    "silero_vad_legacy",
};
// Cases the reference runs but a compiled target does not compile yet (docs/golden_cases.md has
// each one's blocking op and message).
const std::vector<std::string> kReferenceOnly = {
    // The 8 kHz branch of its sample-rate If does not type for 512-sample frames (a dead branch the
    // reference defers, ops/control_flow.cpp); the compiled targets compile both branches and
    // refuse it (bind sr with --input-value to compile only the 16 kHz one).
    "silero_vad_v5",
};
// Cases that pass on ref and cpu, and whose every NPU kernel passes its own fp16 bound, but whose
// outputs the NPU cannot compute as a whole: the derived fp16 bound of the M-LSD detectors hits
// its ceiling (the model moves `offsets` by up to 48 (tiny) / 57 (large) for the NPU's modelled
// roundings, against a ceiling of 128 u max|expected| = 10.9 / 5.2; `tessel check --per-node`).
const std::vector<std::string> kCpuAndNpuKernels = {"mlsd_tiny_320", "mlsd_large_320"};

class NpmModel : public ::testing::TestWithParam<std::string> {};

TEST_P(NpmModel, ReferenceMatchesOnnxRuntime) {
  ASSERT_TRUE(have(GetParam())) << "models missing: run scripts/fetch_models.sh";
  expect_pass(check_case(GetParam(), "ref"), GetParam() + " ref");
}

INSTANTIATE_TEST_SUITE_P(Compiled, NpmModel, ::testing::ValuesIn(kCompiled));
INSTANTIATE_TEST_SUITE_P(ReferenceOnly, NpmModel, ::testing::ValuesIn(kReferenceOnly));
INSTANTIATE_TEST_SUITE_P(CpuAndNpuKernels, NpmModel, ::testing::ValuesIn(kCpuAndNpuKernels));

class NpmModelCompiled : public ::testing::TestWithParam<std::string> {};

TEST_P(NpmModelCompiled, NpuMatchesOnnxRuntimeOnEveryPreset) {
  ASSERT_TRUE(have(GetParam())) << "models missing: run scripts/fetch_models.sh";
  for (const char* hw : {"npu_4core", "edge_1core", "server_32core"}) {
    const CheckRun r = check_case(GetParam(), "npu", hw);
    expect_pass(r, GetParam() + " npu " + hw);
    if (r.report.is_null()) continue;
    const auto& set = r.report["cases"][0]["data_sets"][0];
    EXPECT_GT(set["total_cycles"].get<uint64_t>(), 0u);
    EXPECT_GT(set["dram_bytes"]["read"].get<uint64_t>(), 0u);
  }
}

TEST_P(NpmModelCompiled, CpuMatchesOnnxRuntime) {
  ASSERT_TRUE(have(GetParam())) << "models missing: run scripts/fetch_models.sh";
  const CheckRun r = check_case(GetParam(), "cpu");
  expect_pass(r, GetParam() + " cpu");
  if (r.report.is_null()) return;
  EXPECT_FALSE(r.report["cases"][0]["data_sets"][0]["cpu"]["kernels"].empty());
}

INSTANTIATE_TEST_SUITE_P(Cases, NpmModelCompiled, ::testing::ValuesIn(kCompiled));

class NpmModelCpu : public ::testing::TestWithParam<std::string> {};

TEST_P(NpmModelCpu, CpuMatchesOnnxRuntime) {
  ASSERT_TRUE(have(GetParam())) << "models missing: run scripts/fetch_models.sh";
  const CheckRun r = check_case(GetParam(), "cpu");
  expect_pass(r, GetParam() + " cpu");
}

INSTANTIATE_TEST_SUITE_P(CpuAndNpuKernels, NpmModelCpu, ::testing::ValuesIn(kCpuAndNpuKernels));

class NpmModelCpuAndNpuKernels : public ::testing::TestWithParam<std::string> {};

// Every kernel the NPU runs (the Resizes as resize_as_matmul's MatMuls among them) is within its
// own derived fp16 bound on the inputs the NPU read (`check --per-node`: kernel_checks); the
// whole-model bound is at its ceiling, which the report says, and the check fails there.
TEST_P(NpmModelCpuAndNpuKernels, EveryNpuKernelWithinItsOwnBound) {
  ASSERT_TRUE(have(GetParam())) << "models missing: run scripts/fetch_models.sh";
  const fs::path tmp = fs::path(::testing::TempDir()) / ("npm_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  driver::CheckArgs args;
  args.case_dirs = {kSrc + "/tests/data/cases/" + GetParam()};
  args.target = "npu";
  args.hw = kSrc + "/hw_configs/npu_4core.yaml";
  args.per_node = true;
  args.report_path = (tmp / (GetParam() + "_npu_kernels.json")).string();
  std::ostringstream out, err;
  driver::cmd_check(args, out, err);
  const std::string text = out.str() + err.str();
  const auto at = text.find("per-kernel check: ");
  ASSERT_NE(at, std::string::npos) << text;
  std::istringstream line(text.substr(at + 18));
  int failing = -1, total = -1;
  std::string of;
  line >> failing >> of >> total;
  EXPECT_EQ(failing, 0) << text;
  EXPECT_GT(total, 40) << text;
  EXPECT_NE(text.find("storage alone moves this output further"), std::string::npos) << text;
}

INSTANTIATE_TEST_SUITE_P(Cases, NpmModelCpuAndNpuKernels, ::testing::ValuesIn(kCpuAndNpuKernels));

// The M-LSD line-segment detector is the TensorFlow-exported model of issue 15 whose reference
// output `offsets` differed from ONNX Runtime's by up to 3% relative (here 1.26e-2 absolute at
// values near 0.4; max|offsets| 174). That is rounding amplified by the model, not a rule of the
// reference: every one of its 111 nodes, run alone on ONNX Runtime's own inputs for it, agrees
// with ONNX Runtime within 0.68 of the fixed bound; ONNX Runtime against itself moves `offsets`
// by 5.4e-3 for a 1e-7 relative change of the input and by 1.39e-2 between its graph
// optimization levels (docs/golden_cases.md). The check's fp32 tolerance follows that
// amplification (fp32_tolerances): `offsets` passes with atol widened to about 0.03, and
// `scores`, which the model does not amplify, keeps close to the fixed bound.
TEST(NpmModelTolerance, MlsdOffsetsWithinTheDerivedFp32Bound) {
  ASSERT_TRUE(have("mlsd_tiny_320")) << "models missing: run scripts/fetch_models.sh";
  const auto outs = expect_pass(check_case("mlsd_tiny_320", "ref"), "mlsd_tiny_320 ref");
  ASSERT_EQ(outs.size(), 2u);
  const auto& offsets = outs[0];
  const auto& scores = outs[1];
  EXPECT_EQ(offsets["name"], "offsets");
  // The difference from ORT is far above the fixed atol 1e-5 (before fp32_tolerances this case
  // failed with error / bound 122.9) and the widened atol stays below 0.03% of max|offsets|.
  EXPECT_GT(offsets["max_abs_error"].get<double>(), 1e-3);
  EXPECT_GT(offsets["atol"].get<double>(), offsets["max_abs_error"].get<double>());
  EXPECT_LT(offsets["atol"].get<double>(), 3e-4 * offsets["max_expected"].get<double>());
  EXPECT_EQ(offsets["rtol"].get<double>(), 1e-3);
  EXPECT_LT(scores["atol"].get<double>(), 1e-4);
}

// The two models fp16_range moved into kCompiled: without it (`check --no-fp16-range`) the NPU's
// fp16 values overflow (the failure they had before), so the pass is what makes them pass.
TEST(NpmModelFp16Range, WithoutTheRescaleTheNpuOverflows) {
  for (const char* name : {"oww_melspectrogram", "silero_vad_legacy"}) {
    ASSERT_TRUE(have(name)) << "models missing: run scripts/fetch_models.sh";
    const CheckRun off = check_case(name, "npu", "npu_4core", /*fp16_range=*/false);
    EXPECT_NE(off.exit_code, 0) << name << "\n" << off.out;
    ASSERT_FALSE(off.report.is_null()) << name << off.err;
    bool failed = false;
    for (const auto& o : off.report["cases"][0]["data_sets"][0]["outputs"])
      failed = failed || !o["pass"].get<bool>();
    EXPECT_TRUE(failed) << name;
    const CheckRun on = check_case(name, "npu", "npu_4core");
    EXPECT_NE(on.out.find("fp16 range (calibrated on test_data_set_0)"), std::string::npos)
        << name << "\n"
        << on.out;
    expect_pass(on, std::string(name) + " npu npu_4core");
  }
}

// `check --per-node` checks the kernels of the graph the NPU compiles, inside control flow too:
// without fp16_range, the first kernel of silero_vad_legacy outside its own bound is the taken
// branch's Mul by 2^20 of the STFT magnitude (2.07e7 in fp16: inf), which is how its failure was
// found (before, the per-node check saw only the If as one node).
TEST(NpmModelFp16Range, PerNodeFindsTheFirstOverflowInsideTheIf) {
  ASSERT_TRUE(have("silero_vad_legacy")) << "models missing: run scripts/fetch_models.sh";
  const fs::path tmp = fs::path(::testing::TempDir()) / ("npm_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  driver::CheckArgs args;
  args.case_dirs = {kSrc + "/tests/data/cases/silero_vad_legacy"};
  args.target = "npu";
  args.hw = kSrc + "/hw_configs/npu_4core.yaml";
  args.per_node = true;
  args.fp16_range = false;
  args.report_path = (tmp / "silero_legacy_per_node.json").string();
  std::ostringstream out, err;
  EXPECT_NE(driver::cmd_check(args, out, err), 0);
  const std::string text = out.str();
  // The table lists kernels in graph order; the first failing one of the taken branch (the
  // untaken 8 kHz branch's kernels, skipped at run time, fail too):
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto at = line.find_first_not_of(' ');
    if (at != std::string::npos && line.compare(at, 11, "If_25/then/") == 0 &&
        line.find("FAIL") != std::string::npos) {
      line = line.substr(at);
      break;
    }
  }
  EXPECT_EQ(line.rfind("If_25/then/Mul_93 ", 0), 0u) << line;
  EXPECT_NE(line.find("FAIL"), std::string::npos) << line;
  EXPECT_NE(line.find("2.072e+07"), std::string::npos) << line;
}

}  // namespace
}  // namespace tessel::testing
