// The GPU target through the driver: `tessel compile --target gpu --emit loop|llvm|ptx`, the
// golden real-model cases with `tessel check --target gpu-emu` (the GPU kernels on the host
// emulator; tolerance: tessel check's fp16 bound for tensor-core runs, driver::gpu_tolerance),
// `--target gpu` without a CUDA device (exit code 2, "no CUDA device") and on one where the
// machine has one, the node conformance suite on gpu-emu (every case's PTX assembled by ptxas
// for sm_80 and sm_90 where the CUDA toolkit is installed), and flags that do not apply.
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
  if (!have_models()) GTEST_SKIP() << "run scripts/fetch_models.sh";
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

TEST(GpuDriver, GoldenCasesPassOnTheEmulator) {
  if (!have_models()) GTEST_SKIP() << "run scripts/fetch_models.sh";
  const fs::path report = fs::temp_directory_path() / "tessel_gpu_check.json";
  driver::CheckArgs args;
  args.case_dirs = {kSrc + "/tests/data/cases/hello_deepa",
                    kSrc + "/tests/data/cases/ppocr_cls_b1"};
  args.target = "gpu-emu";
  args.report_path = report.string();
  std::ostringstream out, err;
  EXPECT_EQ(driver::cmd_check(args, out, err), 0) << out.str() << err.str();
  const auto j = nlohmann::json::parse(slurp(report));
  fs::remove(report);
  EXPECT_EQ(j.at("target"), "gpu-emu");
  ASSERT_EQ(j.at("cases").size(), 2u);
  for (const auto& c : j.at("cases")) {
    EXPECT_EQ(c.at("status"), "pass") << c.at("dir");
    for (const auto& ds : c.at("data_sets")) {
      const auto& gpu = ds.at("gpu");
      EXPECT_EQ(gpu.at("device"), "host emulator");
      ASSERT_FALSE(gpu.at("launches").empty());
      for (const auto& l : gpu.at("launches")) {
        EXPECT_GE(l.at("grid").get<int64_t>(), 1);
        EXPECT_GE(l.at("block").get<int64_t>(), 1);
      }
    }
  }
  // The classifier's convolutions ran on the tensor cores: the fp16 bound was used.
  EXPECT_NE(out.str().find("6.25e-02"), std::string::npos) << out.str();
}

TEST(GpuDriver, TargetGpuNeedsACudaDevice) {
  if (!have_models()) GTEST_SKIP() << "run scripts/fetch_models.sh";
  std::string why;
  const bool device = gpu_backend::CudaDevice::available(&why);
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
  driver::ConformArgs ca;
  ca.dirs = {"/usr/share/libonnx-testdata/data/node/test_relu"};
  ca.target = "gpu";
  std::ostringstream cout_, cerr_;
  const int crc = driver::cmd_conform(ca, cout_, cerr_);
  if (!device) {
    EXPECT_EQ(crc, 2);
    EXPECT_NE(cerr_.str().find("no CUDA device"), std::string::npos) << cerr_.str();
  }
  // A hardware config does not apply to the GPU.
  args.target = "gpu-emu";
  args.hw = kSrc + "/hw_configs/npu_4core.yaml";
  EXPECT_EQ(driver::cmd_check(args, out, err), 2);
}

TEST(GpuDriver, NodeConformanceOnTheEmulator) {
  const std::string dir = "/usr/share/libonnx-testdata/data/node";
  ASSERT_TRUE(fs::is_directory(dir)) << dir << " is missing (install libonnx-testdata)";
  const auto expected = driver::load_conform_expected(kSrc + "/tests/gpu/expected_conform_gpu.txt");
  const auto cases = driver::find_conform_cases({dir});
  driver::ConformOptions o;
  o.target = driver::Target::gpu_emu;
  o.isolate = true;
  o.timeout_seconds = 60;
  // Every case's PTX (all the kernels it compiles to) is written by the case's child process
  // (entries prefixed with the case, so they can share one module) and assembled below.
  const fs::path ptx_dir =
      fs::temp_directory_path() / ("tessel_gpu_conform_ptx." + std::to_string(getpid()));
  fs::remove_all(ptx_dir);
  fs::create_directories(ptx_dir);
  o.after_import = [&](const driver::ConformCase& c, const Graph& g) {
    gpu_backend::GpuCompileOptions go;
    go.entry_prefix = cpu_backend::sanitize_symbol(c.id()) + "_";
    // Compiled before the file is opened: a case the backend does not support (it throws)
    // leaves no file.
    // The compiled targets take straight-line graphs: known control flow is inlined first, as
    // driver::run_model does.
    auto inlined = clone_graph(g);
    graph_passes::fold_control(*inlined);
    const std::string ptx = gpu_backend::gpu_ptx(gpu_backend::compile_gpu(*inlined, go));
    std::ofstream(ptx_dir / (go.entry_prefix + ".ptx")) << ptx;
  };
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
    if (id.rfind("node/", 0) == 0 && !ran.count(id))
      ADD_FAILURE() << id << " is in expected_conform_gpu.txt but not installed under " << dir;
  EXPECT_GT(passed, 250);
  for (const auto& [s, c] : driver::conform_counts(results))
    std::cout << "[conformance] gpu-emu " << driver::conform_summary_line(s, c) << "\n";
  // One module of every case's PTX (one header, then every case's entries): ptxas for sm_80
  // and sm_90, where the CUDA toolkit is installed.
  std::string merged;
  int files = 0;
  for (const auto& e : fs::directory_iterator(ptx_dir)) {
    std::string ptx = slurp(e.path());
    const size_t body = ptx.find(".address_size 64");
    ASSERT_NE(body, std::string::npos) << e.path();
    merged += files++ == 0 ? ptx : ptx.substr(body + std::string(".address_size 64").size());
  }
  fs::remove_all(ptx_dir);
  EXPECT_GE(files, passed);  // every case that ran (unsupported ones stop before the hook's end)
  std::string why;
  if (!ptxas_accepts(merged, &why))
    std::cout << "[gpu] " << why << ": the cases' PTX is not assembled\n";
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
  EXPECT_LE(max_diff(got.outputs.at(name), ref.at(name)), 1e-5 * max_abs(ref.at(name)) + 1e-6);
  EXPECT_LE(max_diff(got.outputs.at(name), want.outputs.at(name)), 1e-5);
  EXPECT_EQ(got.launch_seconds.size(), dev.program().launch_count());
}

}  // namespace
}  // namespace tessel::testing
