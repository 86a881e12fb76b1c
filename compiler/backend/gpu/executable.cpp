// Running a GPU program on the CUDA device or the host emulator (see executable.h).
#include "compiler/backend/gpu/executable.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "compiler/backend/gpu/cuda_driver.h"
#include "compiler/backend/gpu/emulator.h"
#include "compiler/support/error.h"

namespace tessel::gpu_backend {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Bytes of a graph input's or output's device buffer.
size_t binding_bytes(const cpu_backend::HostBinding& b) {
  return static_cast<size_t>(shape_numel(b.shape)) * dtype_size(b.dtype);
}
}  // namespace

/// Device memory and launches: the CUDA driver or the emulator's host memory.
class GpuExecutable::Backend {
 public:
  virtual ~Backend() = default;
  virtual uint64_t alloc(size_t bytes) = 0;
  virtual void free(uint64_t p) = 0;
  virtual void upload(uint64_t dst, const void* src, size_t bytes) = 0;
  virtual void download(void* dst, uint64_t src, size_t bytes) = 0;
  virtual void launch(const GpuLaunch& l, const std::vector<uint64_t>& args) = 0;
  /// Seconds `fn` (launches) takes.
  virtual double timed(const std::function<void()>& fn) = 0;
  virtual std::string description() const = 0;
  virtual std::optional<passes::GpuRoofline> roofline() const { return std::nullopt; }
};

namespace {

class CudaBackend : public GpuExecutable::Backend {
 public:
  explicit CudaBackend(const GpuProgram& p) : dev_(CudaDevice::get()) {
    module_ = dev_.load(gpu_ptx(p));
  }
  uint64_t alloc(size_t bytes) override { return dev_.alloc(bytes); }
  void free(uint64_t p) override { dev_.free(p); }
  void upload(uint64_t dst, const void* src, size_t bytes) override {
    dev_.upload(dst, src, bytes);
  }
  void download(void* dst, uint64_t src, size_t bytes) override { dev_.download(dst, src, bytes); }
  void launch(const GpuLaunch& l, const std::vector<uint64_t>& args) override {
    if (l.shape.shared_bytes > dev_.properties().max_shared_optin)
      fail("launch {} needs {} bytes of shared memory; {} allows {}", l.entry, l.shape.shared_bytes,
           dev_.properties().name, dev_.properties().max_shared_optin);
    module_->launch(l.entry, l.shape.grid, l.shape.block, l.shape.shared_bytes, args);
  }
  double timed(const std::function<void()>& fn) override { return dev_.timed(fn); }
  std::string description() const override {
    const auto& p = dev_.properties();
    return fmt::format("{} (sm_{}, {} SMs)", p.name, p.sm, p.sm_count);
  }
  std::optional<passes::GpuRoofline> roofline() const override {
    const auto& p = dev_.properties();
    return passes::gpu_roofline(p.sm, p.sm_count, p.clock_khz, p.memory_clock_khz,
                                p.bus_width_bits);
  }

 private:
  CudaDevice& dev_;
  std::unique_ptr<CudaDevice::Module> module_;
};

class EmuBackend : public GpuExecutable::Backend {
 public:
  explicit EmuBackend(const GpuProgram& p) : emu_(p) {}
  uint64_t alloc(size_t bytes) override {
    void* p = std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) / 256 * 256);
    if (!p) throw std::bad_alloc();
    // Fresh device memory is not zero on a GPU either: NaN bytes expose reads of unwritten data.
    std::memset(p, 0xFF, bytes);
    return reinterpret_cast<uint64_t>(p);
  }
  void free(uint64_t p) override { std::free(reinterpret_cast<void*>(p)); }
  void upload(uint64_t dst, const void* src, size_t bytes) override {
    if (bytes) std::memcpy(reinterpret_cast<void*>(dst), src, bytes);
  }
  void download(void* dst, uint64_t src, size_t bytes) override {
    if (bytes) std::memcpy(dst, reinterpret_cast<const void*>(src), bytes);
  }
  void launch(const GpuLaunch& l, const std::vector<uint64_t>& args) override {
    std::vector<void*> a;
    for (uint64_t x : args) a.push_back(reinterpret_cast<void*>(x));
    emu_.launch(l.entry, l.shape, a);
  }
  double timed(const std::function<void()>& fn) override {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    return seconds_since(t0);
  }
  std::string description() const override { return "host emulator"; }

 private:
  GpuEmulator emu_;
};

}  // namespace

GpuExecutable::GpuExecutable(GpuProgram program, GpuDevice device)
    : program_(std::move(program)), device_(device) {
  const auto t0 = std::chrono::steady_clock::now();
  if (device == GpuDevice::cuda) {
    backend_ = std::make_unique<CudaBackend>(program_);
  } else {
    backend_ = std::make_unique<EmuBackend>(program_);
  }
  const auto& plan = program_.plan;
  arena_ = backend_->alloc(static_cast<size_t>(plan.arena_bytes));
  scratch_ = backend_->alloc(static_cast<size_t>(program_.scratch_bytes));
  for (const auto& c : plan.constants) {
    const size_t bytes = c.data().nbytes();
    constants_.push_back(backend_->alloc(bytes));
    backend_->upload(constants_.back(), c.data().raw(), bytes);
  }
  // Every binding in its dtype (HostBinding::dtype: fp32, or an integer / bool / float64 value's
  // own).
  for (const auto& b : plan.inputs) inputs_.push_back(backend_->alloc(binding_bytes(b)));
  for (const auto& b : plan.outputs) outputs_.push_back(backend_->alloc(binding_bytes(b)));
  load_seconds_ = seconds_since(t0);
}

GpuExecutable::~GpuExecutable() {
  if (!backend_) return;
  for (uint64_t p : constants_) backend_->free(p);
  for (uint64_t p : inputs_) backend_->free(p);
  for (uint64_t p : outputs_) backend_->free(p);
  backend_->free(arena_);
  backend_->free(scratch_);
}

std::string GpuExecutable::device_description() const { return backend_->description(); }

std::optional<passes::GpuRoofline> GpuExecutable::roofline() const { return backend_->roofline(); }

GpuExecutable::Result GpuExecutable::run(const std::map<std::string, Tensor>& inputs,
                                         bool profile) {
  const auto& plan = program_.plan;
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const auto& b = plan.inputs[i];
    auto it = inputs.find(b.value);
    if (it == inputs.end()) fail("no data for graph input '{}'", b.value);
    if (it->second.shape() != b.shape)
      fail("input '{}' has shape {}, the model was bound to {}", b.value,
           shape_to_string(it->second.shape()), shape_to_string(b.shape));
    const Tensor f = it->second.dtype() == b.dtype ? it->second : it->second.cast(b.dtype);
    backend_->upload(inputs_[i], f.raw(), binding_bytes(b));
  }
  auto pointer = [&](const GpuArg& a) -> uint64_t {
    switch (a.kind) {
      case GpuArg::Kind::input:
        return inputs_[static_cast<size_t>(a.index)];
      case GpuArg::Kind::output:
        return outputs_[static_cast<size_t>(a.index)];
      case GpuArg::Kind::constant:
        return constants_[static_cast<size_t>(a.index)];
      case GpuArg::Kind::arena:
        return arena_ + static_cast<uint64_t>(a.offset_bytes);
      case GpuArg::Kind::scratch:
        return scratch_ + static_cast<uint64_t>(a.offset_bytes);
    }
    return 0;
  };
  Result r;
  auto launch_all = [&] {
    for (const auto& k : program_.kernels) {
      if (k.guard) {
        // A kernel of an If branch: its guard (a bool byte a kernel computed) read back; the
        // download waits for the launches before it.
        uint8_t on = 0;
        backend_->download(&on, pointer(*k.guard), 1);
        if (!on) {
          if (profile)
            for (size_t i = 0; i < k.launches.size(); ++i) r.launch_seconds.push_back(0.0);
          continue;
        }
      }
      for (const auto& l : k.launches) {
        std::vector<uint64_t> args;
        for (const auto& a : l.args) args.push_back(pointer(a));
        if (profile) {
          r.launch_seconds.push_back(backend_->timed([&] { backend_->launch(l, args); }));
        } else {
          backend_->launch(l, args);
        }
      }
    }
  };
  r.seconds = backend_->timed(launch_all);
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    Tensor t(plan.outputs[i].dtype, plan.outputs[i].shape);
    backend_->download(t.raw(), outputs_[i], binding_bytes(plan.outputs[i]));
    r.outputs[plan.outputs[i].value] = std::move(t);
  }
  return r;
}

}  // namespace tessel::gpu_backend
