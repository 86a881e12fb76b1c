// GpuExecutable: a compiled GPU program ready to run -- on the CUDA device (the PTX loaded by
// the driver) or on the host emulator (emulator.h) -- with its device memory: the constants
// uploaded once, the arena and scratch area allocated once, and per run every input uploaded
// and every output downloaded, each in its binding's dtype (cpu_backend::HostBinding: fp32 for
// float32 / float16 values, else the value's own dtype, bool as one byte 0 / 1).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/backend/gpu/compile.h"
#include "compiler/ir/tensor.h"

namespace tessel::gpu_backend {

enum class GpuDevice { cuda, emulator };

class GpuExecutable {
 public:
  /// Loads `program` on `device`: cuda compiles the PTX (gpu_ptx) and loads it through the
  /// driver (throws tessel::Error "no CUDA device: ..." where there is none); emulator
  /// JIT-compiles the host module. Throws tessel::Error on a PTX JIT or emulator failure.
  GpuExecutable(GpuProgram program, GpuDevice device);
  ~GpuExecutable();
  GpuExecutable(const GpuExecutable&) = delete;
  GpuExecutable& operator=(const GpuExecutable&) = delete;

  const GpuProgram& program() const { return program_; }
  GpuDevice device() const { return device_; }
  /// "NVIDIA H200 (sm_90, 132 SMs)" or "host emulator".
  std::string device_description() const;
  double load_seconds() const { return load_seconds_; }
  /// The device's peak throughputs (passes::gpu_roofline); nullopt on the emulator.
  std::optional<passes::GpuRoofline> roofline() const;

  struct Result {
    std::map<std::string, Tensor> outputs;  // by graph output name, in the bindings' dtypes
    std::vector<double> launch_seconds;     // per launch in execution order (profile only)
    double seconds = 0;                     // the launches (device) or their emulation (host)
  };
  /// Runs on named tensors (converted to their bindings' dtypes; shapes checked against the
  /// bound graph). Kernels of an If branch run when their guard, read back, is true. With
  /// `profile`, every launch is timed (CUDA events around it on the device; wall time on the
  /// emulator). Throws tessel::Error naming a missing input, a shape mismatch, a failed launch.
  Result run(const std::map<std::string, Tensor>& inputs, bool profile = false);

  class Backend;

 private:
  GpuProgram program_;
  GpuDevice device_;
  std::unique_ptr<Backend> backend_;
  uint64_t arena_ = 0, scratch_ = 0;
  std::vector<uint64_t> constants_, inputs_, outputs_;
  double load_seconds_ = 0;
};

}  // namespace tessel::gpu_backend
