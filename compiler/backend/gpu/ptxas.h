// Checking PTX with NVIDIA's assembler, ptxas, where the CUDA toolkit is installed (it is not
// needed to build or run tessel: the driver JIT-compiles PTX itself).
#pragma once

#include <string>

namespace tessel::gpu_backend {

/// The ptxas to use: $TESSEL_PTXAS if set, else /usr/local/cuda/bin/ptxas, else `ptxas` found on
/// $PATH; "" when there is none.
std::string find_ptxas();

struct PtxasResult {
  bool ok = false;
  std::string log;  // ptxas's output (errors; with verbose, registers and shared memory per entry)
};

/// Assembles `ptx` for `arch` (e.g. "sm_80", "sm_90") with `ptxas`, discarding the binary.
/// `verbose` adds -v (per-entry resource usage). Throws tessel::Error when ptxas cannot be run.
PtxasResult run_ptxas(const std::string& ptxas, const std::string& ptx, const std::string& arch,
                      bool verbose = false);

}  // namespace tessel::gpu_backend
