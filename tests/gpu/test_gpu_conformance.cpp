// ONNX backend-test suites on the GPU backend's kernels, run on the host emulator (gpu-emu), as
// regression tests: every case of the installed suites
// (/usr/share/libonnx-testdata/data/{node,pytorch-converted,pytorch-operator,simple}) must end
// with the status recorded in tests/gpu/expected_conform_gpu.txt, written by
//   tessel conform
//   /usr/share/libonnx-testdata/data/{node,pytorch-converted,pytorch-operator,simple}
//       --target gpu-emu -j2 --write-expected tests/gpu/expected_conform_gpu.txt
// and the pass count of every suite is pinned (kCompiledTargetPinnedPasses,
// tests/test_conform_suite.h; the target is a GPU conformance at least the cpu's,
// kCpuPinnedPasses). Tolerance: driver::conform_gpu_tolerance (the ONNX default
// for fp32 runs; the NPU's fp16 bound for runs that used the tensor cores).
// Every case runs in its own child process; that process also writes the case's PTX (all the
// kernels it compiles to, entries prefixed with the case so they can share one module), and the
// suite's PTX is assembled by ptxas for sm_80 and sm_90 as one module where the CUDA toolkit is
// installed (the test says so when it is not).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "compiler/backend/cpu/model_plan.h"
#include "compiler/driver/conform.h"
#include "compiler/driver/runner.h"
#include "passes/graph/graph_passes.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/test_conform_suite.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;

const std::string kSrc = TESSEL_SOURCE_DIR;

class GpuOnnxSuite : public ::testing::TestWithParam<std::string> {};

TEST_P(GpuOnnxSuite, EveryCaseHasItsExpectedStatusAndPtxAssembles) {
  const std::string suite = GetParam();
  const std::string dir = kOnnxDataDir + "/" + suite;
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " is missing (install the libonnx-testdata package)";
  const auto expected = driver::load_conform_expected(kSrc + "/tests/gpu/expected_conform_gpu.txt");
  const auto cases = driver::find_conform_cases({dir});
  ASSERT_FALSE(cases.empty()) << "no case under " << dir;

  driver::ConformOptions o;
  o.target = driver::Target::gpu_emu;
  o.isolate = true;
  o.timeout_seconds = 60;  // the slowest passing case compiles and runs in ~1 s: 60 s is a hang
  const fs::path ptx_dir =
      fs::temp_directory_path() / ("tessel_gpu_conform_ptx." + std::to_string(getpid()) + "." +
                                   cpu_backend::sanitize_symbol(suite));
  fs::remove_all(ptx_dir);
  fs::create_directories(ptx_dir);
  o.after_import = [&](const driver::ConformCase& c, const Graph& g) {
    gpu_backend::GpuCompileOptions go;
    go.entry_prefix = cpu_backend::sanitize_symbol(c.id()) + "_";
    // The compiled targets take straight-line graphs of single-output nodes: known control flow
    // is inlined, recurrent layers and losses expanded, multi-output nodes split and 1-D
    // conv/pooling made 2-D: driver::compiled_form, as driver::run_model does. Compiled before the
    // file is opened: a case the backend does not support (it throws) leaves no file.
    std::unique_ptr<Graph> form = driver::compiled_form(g);
    const Graph& inlined = form ? *form : g;
    const std::string ptx = gpu_backend::gpu_ptx(gpu_backend::compile_gpu(inlined, go));
    std::ofstream(ptx_dir / (go.entry_prefix + ".ptx")) << ptx;
  };
  const auto results = driver::run_conform_cases(cases, o, 2);
  const int passed =
      expect_suite_as_recorded("gpu-emu", suite, dir, "expected_conform_gpu.txt", expected, results,
                               kCompiledTargetPinnedPasses.at(suite));

  // One module of every case's PTX (one header, then every case's entries).
  std::string merged;
  int files = 0;
  for (const auto& e : fs::directory_iterator(ptx_dir)) {
    std::ifstream f(e.path());
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string ptx = ss.str();
    const size_t body = ptx.find(".address_size 64");
    ASSERT_NE(body, std::string::npos) << e.path();
    merged += files++ == 0 ? ptx : ptx.substr(body + std::string(".address_size 64").size());
  }
  fs::remove_all(ptx_dir);
  EXPECT_GE(files, passed);  // every case that ran (unsupported ones stop before the hook's end)
  std::string why;
  if (!ptxas_accepts(merged, &why))
    std::cout << "[gpu] " << why << ": the " << suite << " cases' PTX is not assembled\n";
}

INSTANTIATE_TEST_SUITE_P(Conformance, GpuOnnxSuite, ::testing::ValuesIn(kOnnxSuites),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return gtest_param_name(i.param);
                         });

}  // namespace
}  // namespace tessel::testing
