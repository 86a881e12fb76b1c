// How kernels become machine code (compiler/backend/cpu/objects.h, kernel_cache.h): weights
// outside the code (one blob, kernels read it through pointers), kernels with the same code
// compiled once, the content-hash kernel cache (hits, invalid entries, concurrent writers, keys
// that change with the options) and the environment knobs. Every test uses its own cache
// directory under a fresh temporary directory.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "compiler/backend/cpu/aot.h"
#include "compiler/backend/cpu/kernel_cache.h"
#include "compiler/backend/cpu/objects.h"
#include "compiler/support/error.h"
#include "tests/cpu/cpu_test_util.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;

using TempDir = CpuTempDir;

/// Two convolutions of the same shape and different weights, each with a fused Relu, then a
/// MaxPool: the two conv kernels have the same code (weights are arguments).
std::unique_ptr<Graph> twin_convs() {
  CpuGraph b;
  Value* x = b.input("x", {1, 8, 10, 12});
  auto conv = [&](Value* in, uint32_t seed) {
    Value* c =
        b.node("Conv", {in, b.constant("w" + std::to_string(seed), cpu_random({8, 8, 3, 3}, seed))},
               attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
    return b.node("Relu", {c});
  };
  Value* a = conv(x, 11);
  Value* c = conv(a, 12);
  return b.finish({b.node("MaxPool", {c},
                          attrs({{"kernel_shape", std::vector<int64_t>{2, 2}},
                                 {"strides", std::vector<int64_t>{2, 2}}}))});
}

cpu_backend::CpuCompileOptions with_cache(const fs::path& dir) {
  cpu_backend::CpuCompileOptions o;
  o.build.cache_dir = dir.string();
  return o;
}

TEST(CpuBuild, WeightsAreOneBlobOutsideTheCode) {
  TempDir tmp;
  auto g = twin_convs();
  auto prog = cpu_backend::compile_cpu(*g, with_cache(tmp.path / "cache"));
  // The packed panels of both 8x8x3x3 weight tensors (576 floats each, panels zero-padded to the
  // micro-tile rows) are in the blob; the original tensors are not (no kernel reads them).
  EXPECT_GE(prog.constant_bytes, 2 * 576 * 4);
  EXPECT_LT(prog.constant_bytes, 2 * 2 * 576 * 4);
  EXPECT_GE(prog.weights.size, prog.constant_bytes);
  int weight_args = 0;
  for (const auto& c : prog.code)
    for (const auto& a : c.args)
      if (a.kind == cpu_backend::CpuArg::Kind::weights) {
        ++weight_args;
        EXPECT_EQ(a.offset_bytes % 64, 0);
        EXPECT_LT(a.offset_bytes, prog.weights.size);
      }
  EXPECT_EQ(weight_args, 2);
  // The LLVM IR of the program holds no constant data: the weights are the external blob.
  const std::string ir = cpu_backend::llvm_ir_text(prog, false);
  EXPECT_NE(ir.find("@tessel_weights = external"), std::string::npos);
  EXPECT_EQ(ir.find("constant ["), std::string::npos);
}

TEST(CpuBuild, SameCodeIsCompiledOnceAndCached) {
  TempDir tmp;
  auto g = twin_convs();
  const std::map<std::string, Tensor> in = {{"x", cpu_random({1, 8, 10, 12}, 3)}};
  auto prog = cpu_backend::compile_cpu(*g, with_cache(tmp.path / "cache"));
  ASSERT_EQ(prog.code.size(), 3u);  // conv+relu, conv+relu, maxpool
  const auto objs = cpu_backend::build_objects(prog);
  EXPECT_EQ(objs.symbols[0], objs.symbols[1]);  // the twin convolutions: one function
  EXPECT_NE(objs.symbols[0], objs.symbols[2]);
  EXPECT_EQ(objs.kernels.size(), 2u);
  EXPECT_EQ(objs.compiled, 2);
  EXPECT_EQ(objs.cached, 0);
  // The entries are in the cache now: a second compile (a new process would see the same) takes
  // every distinct kernel from it, with the same symbols, and still computes the right values.
  cpu_backend::CpuJit jit(cpu_backend::compile_cpu(*g, with_cache(tmp.path / "cache")));
  EXPECT_EQ(jit.kernels_compiled(), 0);
  EXPECT_EQ(jit.kernels_cached(), 2);
  auto got = jit.run(in, false);
  auto want = ops::run_reference(*g, in);
  for (const auto& [name, ref] : want)
    EXPECT_LE(max_abs_diff(got.outputs.at(name), ref), 1e-5 * max_abs(ref) + 1e-6) << name;
  // Each kernel's entry is a file named by its key.
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(tmp.path / "cache"))
    if (e.is_regular_file() && e.path().extension() == ".o") ++files;
  EXPECT_EQ(files, 2);
}

TEST(CpuBuild, KeyChangesWithTheOptimisationLevel) {
  TempDir tmp;
  auto g = twin_convs();
  auto o = with_cache(tmp.path / "cache");
  o.build.opt_level = 1;
  const auto a = cpu_backend::build_objects(cpu_backend::compile_cpu(*g, o));
  o.build.opt_level = 2;
  const auto b = cpu_backend::build_objects(cpu_backend::compile_cpu(*g, o));
  EXPECT_NE(a.symbols[0], b.symbols[0]);
  EXPECT_EQ(b.compiled, 2);  // nothing of the O1 objects was reused
  EXPECT_EQ(b.cached, 0);
}

TEST(CpuBuild, InvalidEntryIsCompiledAgainAndReplaced) {
  TempDir tmp;
  auto g = twin_convs();
  const auto first = cpu_backend::build_objects(cpu_backend::compile_cpu(*g, with_cache(tmp.path)));
  // Truncate one entry (as a disk-full writer outside tessel might leave it) and empty the other.
  std::vector<fs::path> entries;
  for (const auto& e : fs::recursive_directory_iterator(tmp.path))
    if (e.is_regular_file()) entries.push_back(e.path());
  ASSERT_EQ(entries.size(), 2u);
  fs::resize_file(entries[0], fs::file_size(entries[0]) / 2);
  fs::resize_file(entries[1], 0);
  const auto second =
      cpu_backend::build_objects(cpu_backend::compile_cpu(*g, with_cache(tmp.path)));
  EXPECT_EQ(second.compiled, 2);
  EXPECT_EQ(second.cached, 0);
  EXPECT_EQ(second.symbols, first.symbols);
  EXPECT_EQ(second.kernels[0].bytes, first.kernels[0].bytes);  // deterministic code
  const auto third = cpu_backend::build_objects(cpu_backend::compile_cpu(*g, with_cache(tmp.path)));
  EXPECT_EQ(third.cached, 2);  // replaced by valid entries
}

TEST(CpuBuild, ConcurrentCompilesShareOneCache) {
  TempDir tmp;
  auto g = twin_convs();
  const std::map<std::string, Tensor> in = {{"x", cpu_random({1, 8, 10, 12}, 5)}};
  const auto want = ops::run_reference(*g, in);
  // Four threads compile the same program into one empty cache at once: each writes entries
  // (temporary file + rename) while the others may read them; every result must be right.
  std::vector<std::thread> threads;
  std::vector<double> diffs(4, INFINITY);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      auto o = with_cache(tmp.path);
      o.build.threads = 1;
      cpu_backend::CpuJit jit(cpu_backend::compile_cpu(*g, o));
      auto got = jit.run(in, false);
      diffs[t] = max_abs_diff(got.outputs.begin()->second, want.begin()->second);
    });
  for (auto& th : threads) th.join();
  for (double d : diffs) EXPECT_LE(d, 1e-5 * max_abs(want.begin()->second) + 1e-6);
  for (const auto& e : fs::recursive_directory_iterator(tmp.path))
    EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();  // none left over
  const auto after = cpu_backend::build_objects(cpu_backend::compile_cpu(*g, with_cache(tmp.path)));
  EXPECT_EQ(after.cached, 2);
}

TEST(CpuBuild, DisabledCacheWritesNothing) {
  TempDir tmp;
  ScopedEnv home("HOME", tmp.path.c_str());
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  ScopedEnv dir("TESSEL_CACHE_DIR", "");
  auto g = twin_convs();
  const auto a = cpu_backend::build_objects(cpu_backend::compile_cpu(*g));
  const auto b = cpu_backend::build_objects(cpu_backend::compile_cpu(*g));
  EXPECT_EQ(b.compiled, 2);
  EXPECT_TRUE(fs::is_empty(tmp.path));
}

TEST(CpuBuild, DefaultCacheIsUnderTheUsersCacheDirectory) {
  TempDir tmp;
  ScopedEnv dir("TESSEL_CACHE_DIR", nullptr);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", (tmp.path / "xdg").c_str());
    EXPECT_EQ(cpu_backend::KernelCache::default_dir(), (tmp.path / "xdg" / "tessel").string());
  }
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  ScopedEnv home("HOME", tmp.path.c_str());
  EXPECT_EQ(cpu_backend::KernelCache::default_dir(), (tmp.path / ".cache" / "tessel").string());
  auto g = twin_convs();
  cpu_backend::build_objects(cpu_backend::compile_cpu(*g));
  EXPECT_TRUE(fs::is_directory(tmp.path / ".cache" / "tessel" / "cpu-kernels"));
}

TEST(CpuBuild, BadEnvironmentIsAnError) {
  auto g = twin_convs();
  {
    ScopedEnv dir("TESSEL_CACHE_DIR", "relative/cache");
    try {
      cpu_backend::build_objects(cpu_backend::compile_cpu(*g));
      FAIL() << "relative TESSEL_CACHE_DIR accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("TESSEL_CACHE_DIR='relative/cache'"), std::string::npos)
          << e.what();
    }
  }
  for (const char* bad : {"0", "two", "3x"}) {
    ScopedEnv threads("TESSEL_COMPILE_THREADS", bad);
    try {
      cpu_backend::build_objects(cpu_backend::compile_cpu(*g));
      FAIL() << "TESSEL_COMPILE_THREADS=" << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("TESSEL_COMPILE_THREADS"), std::string::npos)
          << e.what();
    }
  }
  ScopedEnv level("TESSEL_CPU_OPT_LEVEL", "4");
  try {
    cpu_backend::build_objects(cpu_backend::compile_cpu(*g));
    FAIL() << "TESSEL_CPU_OPT_LEVEL=4 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("TESSEL_CPU_OPT_LEVEL='4'"), std::string::npos)
        << e.what();
  }
}

TEST(CpuBuild, UnwritableCacheNamesTheDirectory) {
  TempDir tmp;
  std::ofstream(tmp.path / "file") << "not a directory";
  auto g = twin_convs();
  try {
    cpu_backend::build_objects(cpu_backend::compile_cpu(*g, with_cache(tmp.path / "file")));
    FAIL() << "no error for a cache under a file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find((tmp.path / "file").string()), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tessel::testing
