// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1"): tessel neither links
// against CUDA nor needs its headers, so it builds and runs on machines without a GPU or driver,
// and only `--target gpu` needs one. The few entry points used are declared here with the types
// of cuda.h (CUDA 11+ ABI: 64-bit CUdeviceptr, the _v2 memory functions).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tessel::gpu_backend {

/// A CUDA device (device 0) and its primary context, made current on the calling thread by
/// every call. All methods throw tessel::Error naming the failing driver call and its error.
class CudaDevice {
 public:
  /// The process's device. Throws tessel::Error starting "no CUDA device" when libcuda.so.1
  /// cannot be loaded, cuInit fails or the driver sees no device.
  static CudaDevice& get();
  /// True when get() would succeed; otherwise `reason` (if given) receives why.
  static bool available(std::string* reason = nullptr);
  /// available(), asked in a child process (fork) so that this process does not initialise the
  /// driver: for a process that forks workers afterwards (tessel conform's isolated cases), as a
  /// CUDA context does not survive fork and a child of an initialised process cannot use the
  /// device. In a process that already initialised the driver, the same as available().
  static bool available_in_child(std::string* reason = nullptr);

  struct Properties {
    std::string name;
    int sm = 0;                    // compute capability, e.g. 90
    int sm_count = 0;              // streaming multiprocessors
    int64_t clock_khz = 0;         // SM clock
    int64_t memory_clock_khz = 0;  // memory clock
    int64_t bus_width_bits = 0;    // global memory bus
    int64_t max_shared_optin = 0;  // dynamic shared memory a block may opt in to
  };
  const Properties& properties() const { return props_; }

  uint64_t alloc(size_t bytes);
  void free(uint64_t ptr);
  void upload(uint64_t dst, const void* src, size_t bytes);
  void download(void* dst, uint64_t src, size_t bytes);

  /// A module loaded from PTX (JIT-compiled by the driver for this device).
  class Module {
   public:
    ~Module();
    /// Launches entry `entry` (grid x block, shared_bytes dynamic shared memory) with one device
    /// pointer per parameter, on the default stream.
    void launch(const std::string& entry, int64_t grid, int64_t block, int64_t shared_bytes,
                const std::vector<uint64_t>& args);

   private:
    friend class CudaDevice;
    void* module_ = nullptr;
  };
  /// Loads `ptx`; a JIT failure throws with the driver's error log.
  std::unique_ptr<Module> load(const std::string& ptx);

  void synchronize();
  /// Seconds between two events recorded around `fn` on the default stream.
  double timed(const std::function<void()>& fn);

 private:
  CudaDevice();
  Properties props_;
};

}  // namespace tessel::gpu_backend
