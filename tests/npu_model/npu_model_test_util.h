// Helpers shared by the hardware-model tests (tests/npu_model): reading a file and editing a
// known-good YAML text into a bad one.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace tessel::npu::testutil {

/// The whole file at `path` (a test failure when it cannot be opened).
inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// `text` with the first occurrence of `from` replaced by `to` (which must exist).
inline std::string replaced(const std::string& text, const std::string& from,
                            const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << "test bug: '" << from << "' not in the text";
  if (at == std::string::npos) return text;
  std::string out = text;
  out.replace(at, from.size(), to);
  return out;
}

}  // namespace tessel::npu::testutil
