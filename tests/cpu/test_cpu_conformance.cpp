// ONNX backend-test suites on the CPU backend, as regression tests: every case of the installed
// suites (/usr/share/libonnx-testdata/data/{node,pytorch-converted,pytorch-operator,simple}) must
// end with the status recorded in tests/cpu/expected_conform_cpu.txt (as tests/conformance does
// for ref and npu; see its file comment). The file is written by
//   tessel conform
//   /usr/share/libonnx-testdata/data/{node,pytorch-converted,pytorch-operator,simple}
//       --target cpu -j2 --write-expected tests/cpu/expected_conform_cpu.txt
// Tolerance: the ONNX backend-test default (rtol 1e-3, atol 1e-7; driver::conform_tolerance), as
// for the fp32 reference: the CPU computes in fp32 too and differs only in summation order.
// Every case runs in its own child process (one JIT compile each, ~10-50 ms). The pass count of
// every suite is pinned (kCpuPinnedPasses in tests/test_conform_suite.h;
// tests/conformance/test_conformance_suites.cpp says why).
#include <gtest/gtest.h>

#include <filesystem>

#include "compiler/driver/conform.h"
#include "tests/test_conform_suite.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;

const std::string kSrc = TESSEL_SOURCE_DIR;

class CpuOnnxSuite : public ::testing::TestWithParam<std::string> {};

TEST_P(CpuOnnxSuite, EveryCaseHasItsExpectedStatus) {
  const std::string suite = GetParam();
  const std::string dir = kOnnxDataDir + "/" + suite;
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " is missing (install the libonnx-testdata package)";
  const auto expected = driver::load_conform_expected(kSrc + "/tests/cpu/expected_conform_cpu.txt");
  const auto cases = driver::find_conform_cases({dir});
  ASSERT_FALSE(cases.empty()) << "no case under " << dir;

  driver::ConformOptions o;
  o.target = driver::Target::cpu;
  o.isolate = true;
  o.timeout_seconds = 60;  // the slowest passing case compiles and runs in < 1 s: 60 s is a hang
  const auto results = driver::run_conform_cases(cases, o, 2);

  expect_suite_as_recorded("cpu", suite, dir, "expected_conform_cpu.txt", expected, results,
                           kCpuPinnedPasses.at(suite));
}

INSTANTIATE_TEST_SUITE_P(Conformance, CpuOnnxSuite, ::testing::ValuesIn(kOnnxSuites),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return gtest_param_name(i.param);
                         });

}  // namespace
}  // namespace tessel::testing
