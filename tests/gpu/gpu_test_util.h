// Helpers for the GPU backend tests: a compile, a run on the host emulator (and the PTX checked
// by ptxas for sm_80 and sm_90 when the CUDA toolkit is installed), and the reference
// interpreter.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "compiler/backend/gpu/compile.h"
#include "compiler/backend/gpu/executable.h"
#include "compiler/backend/gpu/ptxas.h"
#include "compiler/ops/reference.h"
#include "tests/cpu/cpu_test_util.h"

namespace tessel::testing {

struct GpuGraph : GraphBuilder {
  GpuGraph() : GraphBuilder(/*unique_names=*/true) {}
};

/// Random values exactly representable in fp16: multiples of 1/64 in [-1, 1) (7 significant
/// bits). A product of two is exact in fp32 and a sum of fewer than 2^10 of them is too, so a
/// contraction over them on the tensor cores differs from the fp32 reference only by the order
/// of its fp32 additions.
inline Tensor fp16_exact_random(const Shape& shape, uint32_t seed) {
  Tensor t = random_tensor(shape, seed, -1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data<float>()[i] = std::floor(t.data<float>()[i] * 64.f) / 64.f;
  return t;
}

/// Asserts that `ptx` assembles with ptxas for sm_80 and sm_90; returns false (and the caller
/// skips) when ptxas is not installed.
inline bool ptxas_accepts(const std::string& ptx, std::string* why_not = nullptr) {
  const std::string ptxas = gpu_backend::find_ptxas();
  if (ptxas.empty()) {
    if (why_not) *why_not = "ptxas not found (/usr/local/cuda/bin/ptxas, $TESSEL_PTXAS, $PATH)";
    return false;
  }
  for (const char* arch : {"sm_80", "sm_90"}) {
    auto r = gpu_backend::run_ptxas(ptxas, ptx, arch);
    EXPECT_TRUE(r.ok) << "ptxas -arch=" << arch << " rejected the PTX:\n" << r.log;
  }
  return true;
}

/// Compiles `graph` for the GPU, checks its PTX with ptxas (when installed), runs it on the host
/// emulator and checks every output against the reference interpreter:
/// |gpu - ref| <= rel * max|ref| + 1e-6. Returns the compiled program's launches' kinds via
/// `program` (if given).
inline gpu_backend::GpuExecutable::Result check_gpu(const Graph& graph,
                                                    const std::map<std::string, Tensor>& inputs,
                                                    double rel,
                                                    gpu_backend::GpuCompileOptions opts = {},
                                                    std::string* ptx_out = nullptr,
                                                    std::vector<std::string>* kinds = nullptr) {
  gpu_backend::GpuProgram prog = gpu_backend::compile_gpu(graph, opts);
  const std::string ptx = gpu_backend::gpu_ptx(prog);
  ptxas_accepts(ptx);
  if (ptx_out) *ptx_out = ptx;
  if (kinds)
    for (const auto& k : prog.kernels) kinds->push_back(prog.plan.kernels[k.info_index].kind);
  gpu_backend::GpuExecutable exe(std::move(prog), gpu_backend::GpuDevice::emulator);
  auto got = exe.run(inputs, true);
  expect_outputs_match_reference(graph, inputs, got.outputs, rel);
  return got;
}

}  // namespace tessel::testing
