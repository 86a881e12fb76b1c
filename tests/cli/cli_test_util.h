// Helpers of the CLI tests: run the built `tessel` binary as a user would and capture its exit
// code and output.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

namespace tessel::testing {

struct CliResult {
  int code = -1;  // exit status; -1 when the process did not exit normally (a signal)
  std::string out, err;
};

inline std::string slurp_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Runs `tessel ARGS` from the repository root. Its stdout/stderr go to files under
/// TempDir()/SCRATCH_PID, private to this process and call (ctest runs tests in parallel).
inline CliResult run_tessel(const std::string& args, const std::string& scratch) {
  static int counter = 0;
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / (scratch + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto out = dir / ("out" + std::to_string(counter) + ".txt");
  const auto err = dir / ("err" + std::to_string(counter++) + ".txt");
  const std::string cmd = "cd '" + std::string(TESSEL_SOURCE_DIR) + "' && '" +
                          std::string(TESSEL_BINARY) + "' " + args + " > '" + out.string() +
                          "' 2> '" + err.string() + "'";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp_file(out);
  r.err = slurp_file(err);
  return r;
}

/// A fresh, empty directory TempDir()/NAME_PID, private to this test process.
inline std::filesystem::path temp_dir(const std::string& name) {
  std::filesystem::path d =
      std::filesystem::path(::testing::TempDir()) / (name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

/// Writes `text` to `p` (bytes as given).
inline void write(const std::filesystem::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

}  // namespace tessel::testing

#define EXPECT_CONTAINS(haystack, needle)                                                         \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "missing \"" << (needle) << "\" in:\n" \
                                                        << (haystack)
