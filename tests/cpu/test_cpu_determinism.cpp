// Kernel code is a function of the graph alone, not of what the process compiled before: the
// kernel cache (docs/cpu_backend.md, "Machine code") keys a kernel by the SHA-256 of its LLVM IR
// text, so a kernel lowered to other IR in a second compile of the same model misses the cache.
//
// Loop variables get their ids from one process-wide counter (loop::make_var), so the second
// compile of a model sees other ids. The index simplifier (passes/loop/cpu_index.cpp) used to sort
// the terms of an index sum by the decimal text of those ids, and "v100003" sorts before "v99998":
// a kernel whose variables straddle a power of ten got its address arithmetic in another order
// (seen on the PP-OCR detector's fused conv + residual p2o.Add.14 compiled after other models).
// These tests compile models in one process in two orders, the second with the id counter just
// below a power of ten, and require every kernel's IR text (what the cache hashes) to be equal.
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <filesystem>

#include "compiler/backend/cpu/objects.h"
#include "compiler/driver/runner.h"
#include "compiler/loop/expr.h"
#include "tests/cpu/cpu_test_util.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;
namespace L = tessel::loop;

struct KernelIr {
  std::string node;
  std::string ir;  // the unoptimised module as build_objects hashes it (value names discarded)
};

/// Every generated kernel of `graph` as LLVM IR text.
std::vector<KernelIr> kernel_irs(const Graph& graph) {
  cpu_backend::CpuCompileOptions o;
  o.build.cache_dir = "";
  const cpu_backend::CpuProgram prog = cpu_backend::compile_cpu(graph, o);
  std::vector<KernelIr> r;
  for (size_t i = 0; i < prog.code.size(); ++i) {
    if (prog.code[i].ext) continue;
    llvm::LLVMContext ctx;
    ctx.setDiscardValueNames(true);
    auto m = cpu_backend::kernel_module(prog, i, "tessel_kernel", ctx);
    std::string text;
    llvm::raw_string_ostream os(text);
    m->print(os, nullptr);
    os.flush();
    r.push_back({prog.kernels.at(prog.code[i].info_index).node, text});
  }
  return r;
}

/// The id the next loop variable gets (the probe takes one).
int64_t next_var_id() { return L::make_var("probe")->id + 1; }

/// Creates loop variables until the next one's id is `below` less than a power of ten (the first
/// such power more than `below` above the current id).
void place_var_ids_below_power_of_ten(int64_t below) {
  int64_t id = L::make_var("pad")->id;
  int64_t p = 10;
  while (p - below <= id + 1) p *= 10;
  while (id + 1 < p - below) id = L::make_var("pad")->id;
}

/// The first line where `a` and `b` differ, both versions (for a readable failure).
std::string first_difference(const std::string& a, const std::string& b) {
  size_t i = 0, line = 1, start = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) {
    if (a[i] == '\n') {
      ++line;
      start = i + 1;
    }
    ++i;
  }
  auto line_at = [&](const std::string& s) {
    const size_t e = s.find('\n', start);
    return s.substr(start, e == std::string::npos ? std::string::npos : e - start);
  };
  return fmt::format("line {}:\n  first:  {}\n  second: {}", line, line_at(a), line_at(b));
}

void expect_same_kernels(const std::vector<KernelIr>& first, const std::vector<KernelIr>& second,
                         const std::string& what) {
  ASSERT_EQ(first.size(), second.size()) << what;
  for (size_t k = 0; k < first.size(); ++k) {
    EXPECT_EQ(first[k].node, second[k].node) << what;
    EXPECT_TRUE(first[k].ir == second[k].ir)
        << what << ": kernel " << k << " (" << first[k].node << ") lowered to other LLVM IR, "
        << first_difference(first[k].ir, second[k].ir);
  }
}

/// Conv 3x3 -> BatchNormalization -> residual Add -> Relu: one GEMM kernel with a fused residual
/// epilogue (the shape of the detector's p2o.Add.14).
std::unique_ptr<Graph> conv_residual() {
  CpuGraph b;
  Value* x = b.input("x", {1, 16, 14, 14});
  Value* c = b.node(
      "Conv",
      {x, b.constant("w", cpu_random({16, 16, 3, 3}, 1)), b.constant("bias", cpu_random({16}, 2))},
      attrs({{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  Value* bn = b.node(
      "BatchNormalization",
      {c, b.constant("s", cpu_random({16}, 3, 0.5f, 1.5f)), b.constant("o", cpu_random({16}, 4)),
       b.constant("mu", cpu_random({16}, 5)), b.constant("var", cpu_random({16}, 6, 0.5f, 1.5f))});
  return b.finish({b.node("Relu", {b.node("Add", {bn, x})})});
}

/// Depthwise 3x3 stride 2 -> HardSwish, a 1x1 conv, global average pool, MatMul + Add.
std::unique_ptr<Graph> depthwise_head() {
  CpuGraph b;
  Value* x = b.input("x", {1, 24, 15, 17});
  Value* d = b.node("Conv", {x, b.constant("wd", cpu_random({24, 1, 3, 3}, 7))},
                    attrs({{"group", int64_t{24}},
                           {"strides", std::vector<int64_t>{2, 2}},
                           {"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
  Value* p =
      b.node("Conv", {b.node("HardSwish", {d}), b.constant("wp", cpu_random({40, 24, 1, 1}, 8))});
  Value* g = b.node("Flatten", {b.node("GlobalAveragePool", {p})});
  Value* m = b.node("MatMul", {g, b.constant("fc", cpu_random({40, 10}, 9))});
  return b.finish({b.node("Add", {m, b.constant("fcb", cpu_random({10}, 10))})});
}

/// A real model when the checkout has it (scripts/fetch_models.sh), else null.
std::unique_ptr<Graph> real_model(const std::string& file, const std::string& input,
                                  const Shape& shape) {
  const std::string path = std::string(TESSEL_SOURCE_DIR) + "/models/" + file;
  if (!fs::exists(path)) return nullptr;
  graph_passes::PipelineOptions passes;
  passes.available = driver::target_ops(driver::Target::cpu);
  auto g = driver::load_model(path, {{input, shape}}, passes);
  if (auto form = driver::compiled_form(*g)) g = std::move(form);
  return g;
}

TEST(CpuDeterminism, KernelIrIsTheSameInEitherCompileOrder) {
  std::vector<std::pair<std::string, std::unique_ptr<Graph>>> models;
  models.emplace_back("conv_residual", conv_residual());
  models.emplace_back("depthwise_head", depthwise_head());
  if (auto cls = real_model("ch_ppocr_mobile_v2.0_cls_infer.onnx", "x", {1, 3, 48, 192}))
    models.emplace_back("ppocr_cls", std::move(cls));
  if (auto det = real_model("ch_PP-OCRv4_det_infer.onnx", "x", {1, 3, 64, 96}))
    models.emplace_back("ppocr_det", std::move(det));
  // Order 1: as listed, wherever the id counter stands.
  std::vector<std::vector<KernelIr>> first;
  std::vector<int64_t> ids_used;
  for (const auto& [name, g] : models) {
    const int64_t before = next_var_id();
    first.push_back(kernel_irs(*g));
    ids_used.push_back(next_var_id() - before);
    ASSERT_FALSE(first.back().empty()) << name;
  }
  // Order 2: reversed, each model compiled with a power of ten half-way through its variables.
  for (size_t r = models.size(); r-- > 0;) {
    place_var_ids_below_power_of_ten(ids_used[r] / 2);
    expect_same_kernels(first[r], kernel_irs(*models[r].second),
                        models[r].first + " compiled again, a power of ten half-way through");
  }
}

}  // namespace
}  // namespace tessel::testing
