// The one check of an ONNX backend-test suite run against its expected-status file, shared by the
// conformance suites of every target (tests/conformance for ref and npu, tests/cpu, tests/gpu):
// every case that ran has its recorded status (a regression or an unrecorded improvement fails,
// one message per case), every listed case of the suite was installed and ran, and both the run
// and the file have exactly the pinned number of passing cases (a file regenerated after a
// regression would match its own run; the pin does not). See
// tests/conformance/test_conformance_suites.cpp for why the counts are pinned.
#pragma once

#include <gtest/gtest.h>

#include <cctype>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "compiler/driver/conform.h"

namespace tessel::testing {

/// Where Debian's libonnx-testdata installs the ONNX backend-test suites.
inline const std::string kOnnxDataDir = "/usr/share/libonnx-testdata/data";

/// The installed suites every target's conformance test runs, in this order.
inline const std::vector<std::string> kOnnxSuites = {"node", "pytorch-converted",
                                                     "pytorch-operator", "simple"};

/// Passing cases per suite on gpu-emu (the GPU backend's kernels on the host emulator; it shares
/// the CPU backend's kernel planning and takes integer, bool and float64 tensors as the cpu does,
/// the int8 ops as generated kernels, lower::int8_compute, where the cpu has host kernels; every
/// case has the cpu's status): raised with an improvement (and the expected file); lowering one
/// needs the case and its reason beside it.
inline const std::map<std::string, int> kCompiledTargetPinnedPasses = {
    {"node", 827}, {"pytorch-converted", 82}, {"pytorch-operator", 35}, {"simple", 7}};

/// The cpu target's (typed tensors, docs/cpu_backend.md; the node tests of the int8 ops its
/// kernels run, compiler/backend/cpu/int8_kernels.h, are among them).
inline const std::map<std::string, int> kCpuPinnedPasses = {
    {"node", 827}, {"pytorch-converted", 82}, {"pytorch-operator", 35}, {"simple", 7}};

/// `name` with every character outside [A-Za-z0-9] replaced by '_' (a GoogleTest parameter name).
inline std::string gtest_param_name(std::string name) {
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

/// Checks `results` (a run of the cases under `dir`, suite `suite`) against `expected` (read
/// from the file named `expected_name` in messages) and `pinned` passes; prints one summary line
/// per suite prefixed with `target`. Returns the number of passing cases.
inline int expect_suite_as_recorded(const std::string& target, const std::string& suite,
                                    const std::string& dir, const std::string& expected_name,
                                    const driver::ConformExpected& expected,
                                    const std::vector<driver::ConformResult>& results, int pinned) {
  std::set<std::string> ran;
  int passed = 0;
  for (const auto& r : results) {
    ran.insert(r.c.id());
    passed += r.status == driver::ConformStatus::pass;
    if (driver::conform_change(expected, r) != driver::ConformChange::same)
      ADD_FAILURE() << driver::conform_change_text(expected, r);
  }
  int listed_passes = 0;  // in the expected file
  for (const auto& [id, status] : expected.status)
    listed_passes += id.rfind(suite + "/", 0) == 0 && status == driver::ConformStatus::pass;
  EXPECT_EQ(passed, pinned) << target << " " << suite << ": passing cases now vs kPinnedPasses";
  EXPECT_EQ(listed_passes, pinned)
      << expected_name << " lists that many passing " << suite << " cases; kPinnedPasses says "
      << pinned << " (a regenerated file must not lose passes silently)";
  // Listed cases of this suite that are no longer installed (renamed upstream, or data missing).
  for (const auto& [id, status] : expected.status)
    if (id.rfind(suite + "/", 0) == 0 && !ran.count(id))
      ADD_FAILURE() << id << " is in " << expected_name << " ("
                    << driver::conform_status_name(status) << ") but not installed under " << dir;
  for (const auto& [s, c] : driver::conform_counts(results))
    std::cout << "[conformance] " << target << " " << driver::conform_summary_line(s, c) << "\n";
  return passed;
}

}  // namespace tessel::testing
