// ONNX backend-test suites as regression tests: every case of the installed suites
// (/usr/share/libonnx-testdata/data/{node,pytorch-converted,pytorch-operator,simple}), on the
// reference interpreter and on the NPU (hw_configs/npu_4core.yaml), must end with the status
// recorded in tests/conformance/expected_ref.txt / expected_npu_4core.txt. A case that now does
// worse is a regression; one that does better is an improvement that must be recorded in the
// file; both fail the test with one message per case saying which. Because `--write-expected`
// rewrites a whole file, a file regenerated after a regression would match its own run: the pass
// count of every (target, suite) is therefore also pinned here (kPinnedPasses), and both the run
// and the file must have exactly that many passing cases. The files are written by
// `tessel conform ... --write-expected FILE` (their header has the exact command; see
// docs/conformance.md), and `tessel conform DIR --expected FILE` checks a single case the same way.
//
// The test is parameterised by (target, suite), not by case: one ctest process per case would
// cost ~0.1 s of process start-up each (2 x 1072 cases: minutes), while one run of a suite takes
// seconds. Every case still runs in its own child process (driver::run_conform_cases), so a crash
// or hang is that case's "error" status, with the message naming it.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "compiler/driver/conform.h"
#include "compiler/support/error.h"
#include "npu_model/hw_config.h"
#include "tests/test_conform_suite.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;

const std::string kSrc = TESSEL_SOURCE_DIR;

/// Passing cases per (target, suite). An improvement raises its number together with the expected
/// file; lowering one is a regression and needs the case and its reason in a comment beside it.
const std::map<std::pair<std::string, std::string>, int> kPinnedPasses = {
    {{"ref", "node"}, 871},
    {{"ref", "pytorch-converted"}, 82},
    {{"ref", "pytorch-operator"}, 35},
    {{"ref", "simple"}, 7},
    {{"npu", "node"}, 826},
    {{"npu", "pytorch-converted"}, 81},
    {{"npu", "pytorch-operator"}, 31},
    {{"npu", "simple"}, 7},
};

struct SuiteRun {
  std::string target;    // "ref" | "npu"
  std::string expected;  // expected-results file under tests/conformance
  std::string suite;
};

void PrintTo(const SuiteRun& p, std::ostream* os) { *os << p.target << " " << p.suite; }

std::vector<SuiteRun> all_runs() {
  std::vector<SuiteRun> runs;
  for (const auto& s : kOnnxSuites) {
    runs.push_back({"ref", "expected_ref.txt", s});
    runs.push_back({"npu", "expected_npu_4core.txt", s});
  }
  return runs;
}

class OnnxSuite : public ::testing::TestWithParam<SuiteRun> {};

TEST_P(OnnxSuite, EveryCaseHasItsExpectedStatus) {
  const SuiteRun& p = GetParam();
  const std::string dir = kOnnxDataDir + "/" + p.suite;
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " is missing (install the libonnx-testdata package)";
  const auto expected = driver::load_conform_expected(kSrc + "/tests/conformance/" + p.expected);
  const auto cases = driver::find_conform_cases({dir});
  ASSERT_FALSE(cases.empty()) << "no case under " << dir;

  driver::ConformOptions o;
  o.isolate = true;
  // The slowest passing case takes ~0.2 s; a case still running after 60 s is a hang.
  o.timeout_seconds = 60;
  npu::HwConfig hw;
  if (p.target == "npu") {
    hw = npu::load_hw_config(kSrc + "/hw_configs/npu_4core.yaml");
    o.target = driver::Target::npu;
    o.hw = &hw;
  }
  const auto results = driver::run_conform_cases(cases, o, 2);

  expect_suite_as_recorded(p.target, p.suite, dir, p.expected, expected, results,
                           kPinnedPasses.at({p.target, p.suite}));
}

std::string run_name(const ::testing::TestParamInfo<SuiteRun>& info) {
  return gtest_param_name(info.param.target + "_" + info.param.suite);
}

INSTANTIATE_TEST_SUITE_P(Conformance, OnnxSuite, ::testing::ValuesIn(all_runs()), run_name);

}  // namespace
}  // namespace tessel::testing
