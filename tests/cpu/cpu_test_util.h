// Helpers for CPU backend tests: small graphs, a JIT run and the reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <string>

#include "compiler/backend/cpu/compile.h"
#include "compiler/backend/cpu/jit.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/reference.h"
#include "tests/test_compare.h"
#include "tests/test_graph_builder.h"

namespace tessel::testing {

/// Random inputs and graphs for the CPU tests: the shared helpers, with unique output names.
inline Tensor cpu_random(const Shape& shape, uint32_t seed, float lo = -1.f, float hi = 1.f) {
  return random_tensor(shape, seed, lo, hi);
}
struct CpuGraph : GraphBuilder {
  CpuGraph() : GraphBuilder(/*unique_names=*/true) {}
};

/// A fresh temporary directory named after the process and the running test, removed with its
/// contents at the end of the test.
struct CpuTempDir {
  std::filesystem::path path;
  CpuTempDir() {
    path = std::filesystem::temp_directory_path() /
           fmt::format("tessel_cpu_{}_{}", ::getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~CpuTempDir() { std::filesystem::remove_all(path); }
};

/// Sets (value non-null) or unsets an environment variable for the scope, restoring the old
/// value at its end.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const std::string& n, const char* value) : name(n) {
    if (const char* o = std::getenv(n.c_str())) old = o;
    if (value) {
      ::setenv(n.c_str(), value, 1);
    } else {
      ::unsetenv(n.c_str());
    }
  }
  ~ScopedEnv() {
    if (old) {
      ::setenv(name.c_str(), old->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }
};

/// Checks that `got` (a compiled target's outputs of `graph` on `inputs`) has every output of the
/// reference interpreter, each within |got - ref| <= rel * max|ref| + 1e-6.
inline void expect_outputs_match_reference(const Graph& graph,
                                           const std::map<std::string, Tensor>& inputs,
                                           const std::map<std::string, Tensor>& got, double rel) {
  for (const auto& [name, ref] : ops::run_reference(graph, inputs)) {
    EXPECT_TRUE(got.count(name)) << name;
    if (!got.count(name)) continue;
    EXPECT_TRUE(all_close(got.at(name), ref, rel * max_abs(ref) + 1e-6)) << name;
  }
}

/// Compiles `graph` for the CPU (JIT), runs it and checks every output against the reference
/// interpreter (expect_outputs_match_reference). Returns the JIT result.
inline cpu_backend::CpuJit::Result check_cpu(const Graph& graph,
                                             const std::map<std::string, Tensor>& inputs,
                                             double rel, cpu_backend::CpuCompileOptions opts = {}) {
  cpu_backend::CpuJit jit(cpu_backend::compile_cpu(graph, opts));
  auto got = jit.run(inputs, true);
  expect_outputs_match_reference(graph, inputs, got.outputs, rel);
  return got;
}

}  // namespace tessel::testing
