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
// every suite is pinned (kPinnedPasses; tests/conformance/test_conformance_suites.cpp says why).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "compiler/driver/conform.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;

const std::string kSrc = TESSEL_SOURCE_DIR;
const std::string kDataDir = "/usr/share/libonnx-testdata/data";

/// Passing cases per suite: raised with an improvement (and the expected file); lowering one needs
/// the case and its reason in a comment beside it.
const std::map<std::string, int> kPinnedPasses = {
    {"node", 393}, {"pytorch-converted", 50}, {"pytorch-operator", 25}, {"simple", 5}};

class CpuOnnxSuite : public ::testing::TestWithParam<std::string> {};

TEST_P(CpuOnnxSuite, EveryCaseHasItsExpectedStatus) {
  const std::string suite = GetParam();
  const std::string dir = kDataDir + "/" + suite;
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " is missing (install the libonnx-testdata package)";
  const auto expected = driver::load_conform_expected(kSrc + "/tests/cpu/expected_conform_cpu.txt");
  const auto cases = driver::find_conform_cases({dir});
  ASSERT_FALSE(cases.empty()) << "no case under " << dir;

  driver::ConformOptions o;
  o.target = driver::Target::cpu;
  o.isolate = true;
  o.timeout_seconds = 60;  // the slowest passing case compiles and runs in < 1 s: 60 s is a hang
  const auto results = driver::run_conform_cases(cases, o, 2);

  std::set<std::string> ran;
  int passed = 0;
  for (const auto& r : results) {
    ran.insert(r.c.id());
    passed += r.status == driver::ConformStatus::pass;
    if (driver::conform_change(expected, r) != driver::ConformChange::same)
      ADD_FAILURE() << driver::conform_change_text(expected, r);
  }
  for (const auto& [id, status] : expected.status)
    if (id.rfind(suite + "/", 0) == 0 && !ran.count(id))
      ADD_FAILURE() << id << " is in expected_conform_cpu.txt ("
                    << driver::conform_status_name(status) << ") but not installed under " << dir;
  int listed_passes = 0;  // in the expected file
  for (const auto& [id, status] : expected.status)
    listed_passes += id.rfind(suite + "/", 0) == 0 && status == driver::ConformStatus::pass;
  const int pinned = kPinnedPasses.at(suite);
  EXPECT_EQ(passed, pinned) << "cpu " << suite << ": passing cases now vs kPinnedPasses";
  EXPECT_EQ(listed_passes, pinned) << "expected_conform_cpu.txt lists that many passing " << suite
                                   << " cases; kPinnedPasses says " << pinned;
  for (const auto& [s, c] : driver::conform_counts(results))
    std::cout << "[conformance] cpu " << driver::conform_summary_line(s, c) << "\n";
}

INSTANTIATE_TEST_SUITE_P(Conformance, CpuOnnxSuite,
                         ::testing::Values("node", "pytorch-converted", "pytorch-operator",
                                           "simple"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           std::string n = i.param;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

}  // namespace
}  // namespace tessel::testing
