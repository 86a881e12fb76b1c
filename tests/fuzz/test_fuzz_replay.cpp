// Replays the fuzz targets' corpora (tests/fuzz/corpus/<target>/: the seeds; tests/fuzz/
// regressions/<target>/: every input a fuzzing campaign found a bug with) through the targets
// (tests/fuzz/fuzz_*.cpp, compiled here without libFuzzer). An input passes when the target
// accepts it or rejects it with tessel::Error; a crash, another exception or a broken round-trip
// property fails the test naming the file. Under `make test-sanitize` the same replay runs with
// ASan and UBSan, which is how a regression input that once read out of bounds is caught.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "tests/fuzz/fuzz_target.h"

namespace {

namespace fs = std::filesystem;
using tessel::fuzz::Outcome;

const std::vector<std::string> kTargets = {"asm",       "decode", "experiment",
                                           "hw_config", "onnx",   "tensor_pb"};

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename().string()[0] != '.') files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Counts {
  int accepted = 0, rejected = 0;
};

/// Runs every file of `dir` through `target`; a finding is a test failure naming the file.
Counts replay(const std::string& target, const fs::path& dir) {
  const auto it = tessel::fuzz::registry().find(target);
  Counts counts;
  if (it == tessel::fuzz::registry().end()) {
    ADD_FAILURE() << "no fuzz target '" << target << "' is linked into test_fuzz";
    return counts;
  }
  for (const auto& file : files_in(dir)) {
    std::string message;
    switch (tessel::fuzz::run_target(it->second, read_bytes(file), message)) {
      case Outcome::accepted:
        ++counts.accepted;
        break;
      case Outcome::rejected:
        ++counts.rejected;
        if (getenv("TESSEL_FUZZ_VERBOSE")) std::cout << file.string() << ": " << message << "\n";
        break;
      case Outcome::finding:
        ADD_FAILURE() << file.string() << ": " << message;
        break;
    }
  }
  return counts;
}

const fs::path kFuzzDir = fs::path(TESSEL_SOURCE_DIR) / "tests" / "fuzz";

class FuzzReplay : public ::testing::TestWithParam<std::string> {};

// The seeds are real inputs (models, presets, experiments, golden programs, tensors): most must be
// accepted, else the target's harness is broken and fuzzing from them explores only error paths.
TEST_P(FuzzReplay, SeedCorpus) {
  const fs::path dir = kFuzzDir / "corpus" / GetParam();
  const auto files = files_in(dir);
  ASSERT_GE(files.size(), 3u) << dir << " should hold seed inputs";
  const Counts c = replay(GetParam(), dir);
  std::cout << dir.string() << ": " << c.accepted << " accepted, " << c.rejected << " rejected\n";
  EXPECT_GT(c.accepted, c.rejected)
      << dir << ": " << c.accepted << " accepted, " << c.rejected << " rejected";
}

// Every input that once crashed (or hung, or broke a property) now ends as accepted or as a clear
// tessel::Error.
TEST_P(FuzzReplay, RegressionCorpus) { replay(GetParam(), kFuzzDir / "regressions" / GetParam()); }

INSTANTIATE_TEST_SUITE_P(Targets, FuzzReplay, ::testing::ValuesIn(kTargets),
                         [](const auto& info) { return info.param; });

TEST(FuzzTargets, EveryLinkedTargetIsReplayed) {
  std::vector<std::string> linked;
  for (const auto& [name, fn] : tessel::fuzz::registry()) linked.push_back(name);
  EXPECT_EQ(linked, kTargets);
}

}  // namespace
