// The CUDA driver API through dlopen (see cuda_driver.h).
#include "compiler/backend/gpu/cuda_driver.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <functional>
#include <mutex>

#include "compiler/support/error.h"

namespace tessel::gpu_backend {

namespace {

// The cuda.h types and constants used (CUDA 11+ ABI).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUevent = void*;
using CUstream = void*;
constexpr int CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13;
constexpr int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr int CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36;
constexpr int CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr int CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr int CU_JIT_INFO_LOG_BUFFER = 3;
constexpr int CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4;
constexpr int CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr int CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
constexpr int64_t kDefaultSharedBytes = 48 * 1024;  // more needs the opt-in attribute

struct Api {
  void* lib = nullptr;
  CUresult (*cuInit)(unsigned);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetName)(char*, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuMemAlloc_v2)(CUdeviceptr*, size_t);
  CUresult (*cuMemFree_v2)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD_v2)(CUdeviceptr, const void*, size_t);
  CUresult (*cuMemcpyDtoH_v2)(void*, CUdeviceptr, size_t);
  CUresult (*cuModuleLoadDataEx)(CUmodule*, const void*, unsigned, int*, void**);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void**, void**);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventElapsedTime)(float*, CUevent, CUevent);
  CUresult (*cuEventDestroy_v2)(CUevent);
  CUdevice device = 0;
  CUcontext context = nullptr;
  std::string error;  // why the device is not available ("" when it is)
};

template <typename F>
bool resolve(Api& api, F*& fn, const char* name) {
  fn = reinterpret_cast<F*>(dlsym(api.lib, name));
  if (!fn) api.error = fmt::format("no CUDA device: libcuda.so.1 has no symbol {}", name);
  return fn != nullptr;
}

std::string error_text(const Api& api, CUresult r) {
  const char* s = nullptr;
  if (api.cuGetErrorString && api.cuGetErrorString(r, &s) == 0 && s) return s;
  return fmt::format("CUDA error {}", r);
}

std::atomic<bool> g_driver_touched{false};  // api() ran in this process

Api& api() {
  static Api a;
  static std::once_flag once;
  g_driver_touched = true;
  std::call_once(once, [] {
    a.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a.lib) {
      a.error =
          fmt::format("no CUDA device: cannot load the CUDA driver (libcuda.so.1: {})", dlerror());
      return;
    }
#define TESSEL_CU(name) \
  if (!resolve(a, a.name, #name)) return;
    TESSEL_CU(cuInit)
    TESSEL_CU(cuGetErrorString)
    TESSEL_CU(cuDeviceGetCount)
    TESSEL_CU(cuDeviceGet)
    TESSEL_CU(cuDeviceGetName)
    TESSEL_CU(cuDeviceGetAttribute)
    TESSEL_CU(cuDevicePrimaryCtxRetain)
    TESSEL_CU(cuCtxSetCurrent)
    TESSEL_CU(cuCtxSynchronize)
    TESSEL_CU(cuMemAlloc_v2)
    TESSEL_CU(cuMemFree_v2)
    TESSEL_CU(cuMemcpyHtoD_v2)
    TESSEL_CU(cuMemcpyDtoH_v2)
    TESSEL_CU(cuModuleLoadDataEx)
    TESSEL_CU(cuModuleUnload)
    TESSEL_CU(cuModuleGetFunction)
    TESSEL_CU(cuFuncSetAttribute)
    TESSEL_CU(cuLaunchKernel)
    TESSEL_CU(cuEventCreate)
    TESSEL_CU(cuEventRecord)
    TESSEL_CU(cuEventSynchronize)
    TESSEL_CU(cuEventElapsedTime)
    TESSEL_CU(cuEventDestroy_v2)
#undef TESSEL_CU
    if (CUresult r = a.cuInit(0); r != 0) {
      a.error = fmt::format("no CUDA device: cuInit failed: {}", error_text(a, r));
      return;
    }
    int count = 0;
    if (CUresult r = a.cuDeviceGetCount(&count); r != 0 || count == 0) {
      a.error = "no CUDA device: the driver reports no device";
      return;
    }
    if (CUresult r = a.cuDeviceGet(&a.device, 0); r != 0) {
      a.error = fmt::format("no CUDA device: cuDeviceGet(0) failed: {}", error_text(a, r));
      return;
    }
    if (CUresult r = a.cuDevicePrimaryCtxRetain(&a.context, a.device); r != 0) {
      a.error =
          fmt::format("no CUDA device: cannot create a context on device 0: {}", error_text(a, r));
      return;
    }
  });
  return a;
}

void check(CUresult r, const char* call) {
  if (r != 0) fail("CUDA {} failed: {}", call, error_text(api(), r));
}

void make_current() { check(api().cuCtxSetCurrent(api().context), "cuCtxSetCurrent"); }

}  // namespace

bool CudaDevice::available(std::string* reason) {
  const Api& a = api();
  if (reason) *reason = a.error;
  return a.error.empty();
}

bool CudaDevice::available_in_child(std::string* reason) {
  if (g_driver_touched) return available(reason);
  int fds[2];
  if (::pipe(fds) != 0) fail("no CUDA device: cannot probe the driver (pipe failed)");
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    fail("no CUDA device: cannot probe the driver (fork failed)");
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::string why;
    const bool ok = available(&why);
    for (size_t done = 0; done < why.size();) {
      const ssize_t n = ::write(fds[1], why.data() + done, why.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::_exit(ok ? 0 : 1);
  }
  ::close(fds[1]);
  std::string why;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    why.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok && why.empty()) why = "no CUDA device: the driver probe process crashed";
  if (reason) *reason = ok ? "" : why;
  return ok;
}

CudaDevice& CudaDevice::get() {
  if (!available()) fail("{}", api().error);
  static CudaDevice dev;
  return dev;
}

CudaDevice::CudaDevice() {
  Api& a = api();
  make_current();
  char name[256] = {0};
  check(a.cuDeviceGetName(name, sizeof name - 1, a.device), "cuDeviceGetName");
  props_.name = name;
  auto attr = [&](int which) {
    int v = 0;
    check(a.cuDeviceGetAttribute(&v, which, a.device), "cuDeviceGetAttribute");
    return v;
  };
  props_.sm = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
              attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  props_.sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  props_.clock_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  props_.memory_clock_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  props_.bus_width_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  props_.max_shared_optin = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  if (props_.sm < 80)
    fail("CUDA device {} has compute capability {}.{}; tessel's PTX needs 8.0 or later",
         props_.name, props_.sm / 10, props_.sm % 10);
}

uint64_t CudaDevice::alloc(size_t bytes) {
  make_current();
  CUdeviceptr p = 0;
  check(api().cuMemAlloc_v2(&p, std::max<size_t>(bytes, 1)), "cuMemAlloc");
  return p;
}

void CudaDevice::free(uint64_t ptr) {
  if (!ptr) return;
  make_current();
  api().cuMemFree_v2(ptr);
}

void CudaDevice::upload(uint64_t dst, const void* src, size_t bytes) {
  if (!bytes) return;
  make_current();
  check(api().cuMemcpyHtoD_v2(dst, src, bytes), "cuMemcpyHtoD");
}

void CudaDevice::download(void* dst, uint64_t src, size_t bytes) {
  if (!bytes) return;
  make_current();
  check(api().cuMemcpyDtoH_v2(dst, src, bytes), "cuMemcpyDtoH");
}

std::unique_ptr<CudaDevice::Module> CudaDevice::load(const std::string& ptx) {
  make_current();
  std::vector<char> info(1 << 14, 0), errors(1 << 14, 0);
  int opts[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* vals[] = {info.data(), reinterpret_cast<void*>(info.size() - 1), errors.data(),
                  reinterpret_cast<void*>(errors.size() - 1)};
  auto m = std::unique_ptr<Module>(new Module());
  CUresult r = api().cuModuleLoadDataEx(&m->module_, ptx.c_str(), 4, opts, vals);
  if (r != 0)
    fail("CUDA cuModuleLoadDataEx (PTX JIT) failed: {}: {}", error_text(api(), r), errors.data());
  return m;
}

CudaDevice::Module::~Module() {
  if (module_) api().cuModuleUnload(module_);
}

void CudaDevice::Module::launch(const std::string& entry, int64_t grid, int64_t block,
                                int64_t shared_bytes, const std::vector<uint64_t>& args) {
  make_current();
  CUfunction f = nullptr;
  check(api().cuModuleGetFunction(&f, module_, entry.c_str()), "cuModuleGetFunction");
  if (shared_bytes > kDefaultSharedBytes)
    check(api().cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   static_cast<int>(shared_bytes)),
          "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)");
  std::vector<CUdeviceptr> values(args.begin(), args.end());
  std::vector<void*> params;
  for (auto& v : values) params.push_back(&v);
  CUresult r =
      api().cuLaunchKernel(f, static_cast<unsigned>(grid), 1, 1, static_cast<unsigned>(block), 1, 1,
                           static_cast<unsigned>(shared_bytes), nullptr, params.data(), nullptr);
  if (r != 0) fail("CUDA cuLaunchKernel({}) failed: {}", entry, error_text(api(), r));
}

void CudaDevice::synchronize() {
  make_current();
  check(api().cuCtxSynchronize(), "cuCtxSynchronize (a kernel failed)");
}

double CudaDevice::timed(const std::function<void()>& fn) {
  make_current();
  CUevent start = nullptr, stop = nullptr;
  check(api().cuEventCreate(&start, 0), "cuEventCreate");
  check(api().cuEventCreate(&stop, 0), "cuEventCreate");
  check(api().cuEventRecord(start, nullptr), "cuEventRecord");
  fn();
  check(api().cuEventRecord(stop, nullptr), "cuEventRecord");
  check(api().cuEventSynchronize(stop), "cuEventSynchronize (a kernel failed)");
  float ms = 0;
  check(api().cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
  api().cuEventDestroy_v2(start);
  api().cuEventDestroy_v2(stop);
  return ms / 1e3;
}

}  // namespace tessel::gpu_backend
