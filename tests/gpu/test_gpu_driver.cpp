// The GPU target through the driver: `tessel compile --target gpu --emit loop|llvm|ptx`, the
// golden real-model cases with `tessel check --target gpu-emu` (the GPU kernels on the host
// emulator; tolerance: tessel check's fp16 bound for tensor-core runs, driver::gpu_tolerance),
// `--target gpu` without a CUDA device (exit code 2, "no CUDA device") and on one where the
// machine has one, and flags that do not apply. The conformance suites are in
// test_gpu_conformance.cpp.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "compiler/backend/cpu/model_plan.h"
#include "compiler/backend/gpu/cuda_driver.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/conform.h"
#include "compiler/support/error.h"
#include "passes/graph/graph_passes.h"
#include "tests/gpu/gpu_test_util.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;
const std::string kSrc = TESSEL_SOURCE_DIR;

bool have_models() { return fs::exists(kSrc + "/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"); }

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(GpuDriver, CompileEmitsLoopLlvmAndPtx) {
  ASSERT_TRUE(have_models()) << "models missing: run scripts/fetch_models.sh";
  const fs::path dir = fs::temp_directory_path() / "tessel_gpu_compile";
  fs::create_directories(dir);
  driver::CompileArgs a;
  a.model = kSrc + "/models/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  a.input_shapes = {"x=1,3,48,192"};
  a.target = "gpu";
  std::ostringstream out, err;
  a.output = (dir / "cls.ptx").string();
  ASSERT_EQ(driver::cmd_compile(a, out, err), 0) << err.str();
  const std::string ptx = slurp(a.output);
  EXPECT_NE(ptx.find(".target sm_80"), std::string::npos);
  EXPECT_NE(ptx.find("mma.sync.aligned.m16n8k16"), std::string::npos);
  std::string why;
  if (ptxas_accepts(ptx, &why)) {
    // The whole model's PTX assembled for sm_80 and sm_90 (ptxas_accepts).
  } else {
    std::cout << "[gpu] ptxas check skipped: " << why << "\n";
  }
  a.emit = "llvm";
  a.output = (dir / "cls.ll").string();
  ASSERT_EQ(driver::cmd_compile(a, out, err), 0) << err.str();
  const std::string ll = slurp(a.output);
  EXPECT_NE(ll.find("target triple = \"nvptx64-nvidia-cuda\""), std::string::npos);
  EXPECT_NE(ll.find("llvm.nvvm.mma.m16n8k16.row.col.f32.f32"), std::string::npos);
  a.emit = "loop";
  a.output = (dir / "cls.loop").string();
  ASSERT_EQ(driver::cmd_compile(a, out, err), 0) << err.str();
  const std::string loop = slurp(a.output);
  EXPECT_NE(loop.find("blockIdx.x"), std::string::npos);
  EXPECT_NE(loop.find("gpu.mma_m16n8k16"), std::string::npos);
  fs::remove_all(dir);
  // What does not apply is an error (exit 2), before any work.
  a.output.clear();
  a.emit = "asm";
  EXPECT_EQ(driver::cmd_compile(a, out, err), 2);
  EXPECT_NE(err.str().find("expected graph, loop, llvm or ptx for --target gpu"),
            std::string::npos);
  a.emit = "ptx";
  a.hw = kSrc + "/hw_configs/npu_4core.yaml";
  EXPECT_EQ(driver::cmd_compile(a, out, err), 2);
  EXPECT_NE(err.str().find("--hw only applies to --target npu"), std::string::npos);
}

/// `tessel check --target gpu-emu` on `cases` (directories under tests/data/cases): every
/// output of every data set passes, on the emulator, with the fp16 tensor-core bound where a
/// contraction ran on the tensor cores (every golden model has convolutions), every launch has a
/// grid and a block. Returns the text output.
std::string check_on_emulator(const std::vector<std::string>& cases) {
  const fs::path report =
      fs::temp_directory_path() / ("tessel_gpu_check." + std::to_string(getpid()) + "." +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  driver::CheckArgs args;
  for (const auto& c : cases) args.case_dirs.push_back(kSrc + "/tests/data/cases/" + c);
  args.target = "gpu-emu";
  args.report_path = report.string();
  std::ostringstream out, err;
  EXPECT_EQ(driver::cmd_check(args, out, err), 0) << out.str() << err.str();
  const auto j = nlohmann::json::parse(slurp(report));
  fs::remove(report);
  EXPECT_EQ(j.at("target"), "gpu-emu");
  EXPECT_EQ(j.at("cases").size(), cases.size());
  for (const auto& c : j.at("cases")) {
    EXPECT_EQ(c.at("status"), "pass") << c.at("dir");
    for (const auto& ds : c.at("data_sets")) {
      EXPECT_FALSE(ds.at("outputs").empty()) << c.at("dir");
      for (const auto& o : ds.at("outputs")) EXPECT_TRUE(o.at("pass").get<bool>()) << o.dump();
      const auto& gpu = ds.at("gpu");
      EXPECT_EQ(gpu.at("device"), "host emulator");
      const bool fp16 = gpu.at("fp16_tensor_cores").get<bool>();
      for (const auto& o : ds.at("outputs"))
        EXPECT_EQ(o.at("rtol").get<double>(), fp16 ? 0.0625 : 1e-3) << o.dump();
      EXPECT_FALSE(gpu.at("launches").empty());
      for (const auto& l : gpu.at("launches")) {
        EXPECT_GE(l.at("grid").get<int64_t>(), 1);
        EXPECT_GE(l.at("block").get<int64_t>(), 1);
      }
    }
  }
  return out.str();
}

// CPU time of the golden cases on the emulator on the 2-core development machine (mostly the
// emulator's x86 JIT compile of the kernels; wall time under load about twice that):
// hello_deepa with the classifier ~7 s (in ctest), the classifier at batch 4 ~12 s, each
// detector case ~9 s, the recogniser ~47 s. All but the first test are kept out of ctest
// (DISABLED_; docs/gpu_backend.md has the command and their results): ctest's tests take a few
// seconds each.
TEST(GpuDriver, GoldenHelloAndClassifierOnTheEmulator) {
  ASSERT_TRUE(have_models()) << "models missing: run scripts/fetch_models.sh";
  const std::string out = check_on_emulator({"hello_deepa", "ppocr_cls_b1"});
  // The classifier's convolutions ran on the tensor cores: the fp16 bound was used.
  EXPECT_NE(out.find("6.25e-02"), std::string::npos) << out;
}

// Run with: build/bin/test_gpu --gtest_also_run_disabled_tests --gtest_filter='*GoldenSlow*'
TEST(GpuDriver, DISABLED_GoldenSlowDetectorOnTheEmulator) {
  ASSERT_TRUE(have_models()) << "models missing: run scripts/fetch_models.sh";
  check_on_emulator({"ppocr_det_64x96", "ppocr_det_64x96_strokes"});
}

TEST(GpuDriver, DISABLED_GoldenSlowClassifierBatch4AndRecogniserOnTheEmulator) {
  ASSERT_TRUE(have_models()) << "models missing: run scripts/fetch_models.sh";
  check_on_emulator({"ppocr_cls_b4", "ppocr_rec_48x320"});
}

TEST(GpuDriver, TargetGpuNeedsACudaDevice) {
  ASSERT_TRUE(have_models()) << "models missing: run scripts/fetch_models.sh";
  // Asked in a child process: the conform run below forks its cases, and a child of a process
  // that initialised the CUDA driver cannot use the device.
  std::string why;
  const bool device = gpu_backend::CudaDevice::available_in_child(&why);
  EXPECT_EQ(device, why.empty()) << why;
  if (!device) {
    EXPECT_EQ(why.rfind("no CUDA device", 0), 0u) << why;
  }
  driver::ConformArgs ca;
  ca.dirs = {"/usr/share/libonnx-testdata/data/node/test_relu"};
  ca.target = "gpu";
  std::ostringstream cout_, cerr_;
  const int crc = driver::cmd_conform(ca, cout_, cerr_);
  if (device) {
    EXPECT_EQ(crc, 0) << cout_.str() << cerr_.str();  // the case passed in its child process
  } else {
    EXPECT_EQ(crc, 2);
    EXPECT_NE(cerr_.str().find("no CUDA device"), std::string::npos) << cerr_.str();
  }
  driver::CheckArgs args;
  args.case_dirs = {kSrc + "/tests/data/cases/hello_deepa"};
  args.target = "gpu";
  std::ostringstream out, err;
  const int rc = driver::cmd_check(args, out, err);
  if (device) {
    EXPECT_EQ(rc, 0) << out.str() << err.str();
  } else {
    EXPECT_EQ(rc, 2);
    EXPECT_NE(err.str().find("no CUDA device"), std::string::npos) << err.str();
    EXPECT_TRUE(out.str().empty()) << "nothing runs before the device check: " << out.str();
  }
  // A hardware config does not apply to the GPU.
  args.target = "gpu-emu";
  args.hw = kSrc + "/hw_configs/npu_4core.yaml";
  EXPECT_EQ(driver::cmd_check(args, out, err), 2);
}

TEST(GpuDevice, ModelRunsOnTheCudaDeviceLikeOnTheEmulator) {
  std::string why;
  if (!gpu_backend::CudaDevice::available(&why)) GTEST_SKIP() << why;
  GpuGraph b;
  Value* x = b.input("x", {2, 16, 20, 24});
  Value* w = b.constant("w", fp16_exact_random({32, 16, 3, 3}, 1));
  Value* y =
      b.node("Relu", {b.node("Conv", {x, w}, attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}))});
  Value* z = b.node("Softmax", {y}, attrs({{"axis", int64_t{-1}}}));
  auto g = b.finish({z});
  const std::map<std::string, Tensor> in = {{"x", fp16_exact_random({2, 16, 20, 24}, 2)}};
  gpu_backend::GpuExecutable dev(gpu_backend::compile_gpu(*g), gpu_backend::GpuDevice::cuda);
  gpu_backend::GpuExecutable emu(gpu_backend::compile_gpu(*g), gpu_backend::GpuDevice::emulator);
  auto got = dev.run(in, true);
  auto want = emu.run(in);
  auto ref = ops::run_reference(*g, in);
  const std::string name = g->outputs[0]->name;
  EXPECT_TRUE(all_close(got.outputs.at(name), ref.at(name), 1e-5 * max_abs(ref.at(name)) + 1e-6));
  EXPECT_TRUE(all_close(got.outputs.at(name), want.outputs.at(name), 1e-5));
  EXPECT_EQ(got.launch_seconds.size(), dev.program().launch_count());
}

}  // namespace
}  // namespace tessel::testing
