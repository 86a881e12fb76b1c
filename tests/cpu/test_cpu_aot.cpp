// The ahead-of-time path: shared libraries with the C entry point `tessel_model_run`, loaded with
// dlopen and called like a C program would (compiler/backend/cpu/aot.h, docs/cpu_backend.md), the
// generated C header, object files, and bad input (a missing output directory, an op the CPU
// does not compile).
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include "compiler/backend/cpu/aot.h"
#include "compiler/backend/cpu/codegen.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/runner.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/support/error.h"
#include "tests/cpu/cpu_test_util.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;

using RunFn = int (*)(const float**, float**);
using RunProfiledFn = int (*)(const float**, float**, double*);

using TempDir = CpuTempDir;

/// dlopen()ed library, closed at scope exit.
struct Library {
  void* handle = nullptr;
  explicit Library(const fs::path& p) { handle = ::dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL); }
  ~Library() {
    if (handle) ::dlclose(handle);
  }
  template <class F>
  F sym(const char* name) {
    return reinterpret_cast<F>(::dlsym(handle, name));
  }
};

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// Conv(3x3, pad 1) + Relu -> GlobalAveragePool -> Flatten -> Gemm -> Softmax: gemm and generic
/// kernels, a fused epilogue, a view, weights embedded as constants.
std::unique_ptr<Graph> small_cnn() {
  CpuGraph b;
  Value* x = b.input("x", {1, 4, 9, 11});
  Value* w = b.constant("w", cpu_random({8, 4, 3, 3}, 51));
  Value* c = b.node("Conv", {x, w}, attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  Value* r = b.node("Relu", {c});
  Value* p = b.node("GlobalAveragePool", {r});
  Value* f = b.node("Flatten", {p});
  Value* g = b.node("Gemm", {f, b.constant("fc", cpu_random({8, 5}, 52))});
  Value* s = b.node("Softmax", {g}, attrs({{"axis", int64_t{1}}}));
  return b.finish({s, r});
}

TEST(CpuAot, SharedLibraryRunsThroughDlopen) {
  TempDir dir;
  auto g = small_cnn();
  cpu_backend::CpuCompileOptions o;
  auto prog = cpu_backend::compile_cpu(*g, o);
  const size_t kernels = prog.timed_kernels().size();
  const fs::path so = dir.path / "cnn.so";
  cpu_backend::write_shared_library(prog, so.string(), "small_cnn");
  ASSERT_TRUE(fs::exists(so));
  ASSERT_TRUE(fs::exists(dir.path / "cnn.h"));

  Library lib(so);
  ASSERT_NE(lib.handle, nullptr) << ::dlerror();
  auto run = lib.sym<RunFn>("tessel_model_run");
  auto run_profiled = lib.sym<RunProfiledFn>("tessel_model_run_profiled");
  ASSERT_NE(run, nullptr);
  ASSERT_NE(run_profiled, nullptr);

  const Tensor x = cpu_random({1, 4, 9, 11}, 53);
  std::vector<float> xin(x.data<float>(), x.data<float>() + x.numel());
  std::vector<float> probs(5, -1.f), relu(8 * 9 * 11, -1.f);
  const float* inputs[] = {xin.data()};
  float* outputs[] = {probs.data(), relu.data()};
  ASSERT_EQ(run(inputs, outputs), 0);

  auto want = ops::run_reference(*g, {{"x", x}});
  const Tensor& wp = want.at(g->outputs[0]->name);
  const Tensor& wr = want.at(g->outputs[1]->name);
  // fp32 on both sides, 36-term dot products then 8-term ones: 2e-5 relative (cpu_test_util.h).
  EXPECT_TRUE(all_close(Tensor::from_floats({1, 5}, probs), wp, 2e-5 * max_abs(wp) + 1e-6));
  EXPECT_TRUE(all_close(Tensor::from_floats({1, 8, 9, 11}, relu), wr, 2e-5 * max_abs(wr) + 1e-6));

  // The profiled entry computes the same values and times every kernel with code (>= 0 s).
  std::vector<float> probs2(5), relu2(relu.size());
  float* outputs2[] = {probs2.data(), relu2.data()};
  std::vector<double> seconds(kernels, -1.0);
  ASSERT_EQ(run_profiled(inputs, outputs2, seconds.data()), 0);
  EXPECT_EQ(probs2, probs);
  EXPECT_EQ(relu2, relu);
  for (double s : seconds) EXPECT_GE(s, 0.0);

  // The header states names, shapes and the kernel count, and is valid C.
  const std::string h = read_text(dir.path / "cnn.h");
  EXPECT_NE(h.find("#define TESSEL_MODEL_INPUT_0_SHAPE {1, 4, 9, 11}"), std::string::npos) << h;
  EXPECT_NE(h.find("#define TESSEL_MODEL_OUTPUT_1_NUMEL 792"), std::string::npos) << h;
  EXPECT_NE(h.find(fmt::format("#define TESSEL_MODEL_NUM_KERNELS {}", kernels)), std::string::npos);
  const fs::path c = dir.path / "use.c";
  std::ofstream(c) << "#include \"cnn.h\"\nint main(void) {\n"
                      "  static const long long s[] = TESSEL_MODEL_INPUT_0_SHAPE;\n"
                      "  int (*run)(const float**, float**) = tessel_model_run;\n"
                      "  return (int)s[0] - 1 + (run != tessel_model_run);\n}\n";
  EXPECT_EQ(std::system(fmt::format("cc -std=c99 -Wall -Werror -fsyntax-only -I'{}' '{}'",
                                    dir.path.string(), c.string())
                            .c_str()),
            0);
}

TEST(CpuAot, CompileCommandWritesALibraryMatchingOnnxRuntime) {
  // `tessel compile MODEL --target cpu -o model.so` on the golden case hello_deepa: the library's
  // output must match ONNX Runtime's (tests/data/cases/hello_deepa) within the check tolerance
  // (atol 1e-5, rtol 1e-3: fp32 vs an independent fp32 implementation).
  const std::string src = TESSEL_SOURCE_DIR;
  const std::string case_dir = src + "/tests/data/cases/hello_deepa";
  ASSERT_TRUE(fs::exists(src + "/models/hello_deepa.onnx"))
      << "models missing: run scripts/fetch_models.sh";
  TempDir dir;
  driver::CompileArgs args;
  args.model = case_dir + "/model.onnx";
  args.target = "cpu";
  args.output = (dir.path / "hello.so").string();
  std::ostringstream out, err;
  ASSERT_EQ(driver::cmd_compile(args, out, err), 0) << err.str();
  EXPECT_NE(out.str().find("hello.so"), std::string::npos) << out.str();

  Library lib(dir.path / "hello.so");
  ASSERT_NE(lib.handle, nullptr) << ::dlerror();
  auto run = lib.sym<RunFn>("tessel_model_run");
  ASSERT_NE(run, nullptr);
  const Tensor in = frontend::load_tensor_pb(case_dir + "/test_data_set_0/input_0.pb");
  const Tensor want = frontend::load_tensor_pb(case_dir + "/test_data_set_0/output_0.pb");
  std::vector<float> x(static_cast<size_t>(in.numel()));
  for (int64_t i = 0; i < in.numel(); ++i) x[i] = static_cast<float>(in.get_as_double(i));
  std::vector<float> y(static_cast<size_t>(want.numel()), -1.f);
  const float* inputs[] = {x.data()};
  float* outputs[] = {y.data()};
  ASSERT_EQ(run(inputs, outputs), 0);
  for (int64_t i = 0; i < want.numel(); ++i)
    EXPECT_NEAR(y[i], want.get_as_double(i), 1e-5 + 1e-3 * std::abs(want.get_as_double(i)));
  // Only the API is exported: the weights blob and the kernels are local to the library.
  EXPECT_NE(lib.sym<void*>("tessel_cpu_set_threads"), nullptr);
  EXPECT_EQ(lib.sym<void*>("tessel_weights"), nullptr);
  EXPECT_EQ(lib.sym<void*>("tessel_cpu_parallel_for"), nullptr);
}

TEST(CpuAot, ObjectFileIsElf) {
  TempDir dir;
  auto g = small_cnn();
  cpu_backend::CpuCompileOptions o;
  auto prog = cpu_backend::compile_cpu(*g, o);
  const fs::path obj = dir.path / "cnn.o";
  cpu_backend::write_object(prog, obj.string());
  const std::string bytes = read_text(obj);
  ASSERT_GT(bytes.size(), 4u);
  EXPECT_EQ(bytes.substr(0, 4), std::string("\x7f"
                                            "ELF"));
  // One relocatable object: the entry points, the kernels and the weights section.
  EXPECT_NE(bytes.find("tessel_model_run_profiled"), std::string::npos);
  EXPECT_NE(bytes.find("tessel_weights"), std::string::npos);
  EXPECT_NE(bytes.find(".rodata.tessel_weights"), std::string::npos);
}

TEST(CpuAot, MissingOutputDirectoryFailsCleanly) {
  TempDir dir;
  const fs::path missing = dir.path / "no_such_dir" / "model.so";
  auto g = small_cnn();
  cpu_backend::CpuCompileOptions o;
  auto prog = cpu_backend::compile_cpu(*g, o);
  try {
    cpu_backend::write_shared_library(prog, missing.string());
    FAIL() << "no error for a missing directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_dir"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir.path / "no_such_dir"));

  // The CLI: exit code 2 and the directory named, before any compilation.
  driver::CompileArgs args;
  args.model = std::string(TESSEL_SOURCE_DIR) + "/tests/data/cases/hello_deepa/model.onnx";
  args.target = "cpu";
  args.output = missing.string();
  std::ostringstream out, err;
  EXPECT_EQ(driver::cmd_compile(args, out, err), 2);
  EXPECT_NE(err.str().find("does not exist"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("no_such_dir"), std::string::npos) << err.str();
  EXPECT_TRUE(fs::is_empty(dir.path));  // nothing left behind
}

TEST(CpuAot, UnsupportedOpNamesTheNode) {
  CpuGraph b;
  Value* x = b.input("x", {3, 7, 7});
  Value* r = b.node("Relu", {x});
  Value* f = b.node("Det", {r});  // registered (shape rule, reference) but no compute
  auto g = b.finish({f});
  try {
    cpu_backend::compile_cpu(*g);
    FAIL() << "Det compiled for the CPU";
  } catch (const Unsupported& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("Det_1"), std::string::npos) << m;
    EXPECT_NE(m.find("Det"), std::string::npos) << m;
  }
}

TEST(CpuAot, CodegenRejectionNamesTheKernel) {
  // Loop IR the CPU cannot run: a vectorized loop storing one element from every lane. The code
  // generator names the kernel and the problem (compile_cpu adds the node and op around it).
  namespace L = tessel::loop;
  L::Buffer buf = L::make_buffer("b", L::MemScope::host, DType::f32, {4});
  L::Var l = L::make_var("l");
  L::Stmt body =
      L::for_loop(l, 8, L::store(buf, {L::int_imm(0)}, L::float_imm(1.0)), L::ForKind::vectorized);
  llvm::LLVMContext ctx;
  llvm::Module mod("m", ctx);
  try {
    cpu_backend::emit_kernel(mod, "bad_kernel", {buf}, body, cpu_backend::CodegenTarget::host(8));
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("bad_kernel"), std::string::npos) << m;
    EXPECT_NE(m.find("every vector lane"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace tessel::testing
