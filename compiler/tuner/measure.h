// The simulator oracle: measures points of a lowered graph's kernels by compiling each kernel alone
// (LoweredGraph::kernel_program) and simulating it timing-only on the SystemC model
// (simulator/). SystemC keeps its kernel in process globals, so parallel measurements run in
// worker processes (fork), never threads; a measurement depends only on (kernel, knobs), so the
// results are identical whatever the number of workers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/backend/npu/compile.h"
#include "npu_model/hw_config.h"

namespace tessel::tuner {

/// One measurement: the simulated cycles of the kernel alone (from its first instruction to its
/// closing barrier), or why there are none (the pass rejected the point, the simulation failed).
struct Measurement {
  uint64_t cycles = 0;
  std::string error;  // "" when measured
  bool ok() const { return error.empty(); }
};

/// A point to measure: a kernel index of the lowered graph and its knobs.
struct Request {
  size_t kernel = 0;
  passes::Knobs knobs;
};

/// Measures requests on `jobs` worker processes (1: in this process). The workers are forked when
/// the Measurer is built and see the lowered graph as it was then; they exit with it.
class Measurer {
 public:
  /// Throws tessel::Error if a worker cannot be started (fork or pipe failure).
  Measurer(const npu_backend::LoweredGraph& lowered, const npu::HwConfig& hw, int jobs);
  ~Measurer();
  Measurer(const Measurer&) = delete;
  Measurer& operator=(const Measurer&) = delete;

  /// The measurements of `batch`, in its order. Requests are handed to idle workers as they
  /// free up; the result of each is independent of which worker ran it.
  /// `progress`, when set, is called with (done, total) as measurements complete.
  std::vector<Measurement> measure(
      const std::vector<Request>& batch,
      const std::function<void(size_t done, size_t total)>& progress = {});
  int jobs() const {
    return static_cast<int>(workers_.size()) > 0 ? static_cast<int>(workers_.size()) : 1;
  }

  /// One measurement in this process (what a worker runs).
  static Measurement measure_one(const npu_backend::LoweredGraph& lowered, const npu::HwConfig& hw,
                                 const Request& r);

 private:
  struct Worker {
    int pid = -1;
    int to_child = -1, from_child = -1;
  };
  const npu_backend::LoweredGraph& lowered_;
  const npu::HwConfig& hw_;
  std::vector<Worker> workers_;
};

}  // namespace tessel::tuner
