// GpuEmulator: the GPU program's kernels run on the host CPU, so the GPU lowering is checked
// against the reference interpreter without a GPU.
//
// What runs is the NVPTX module the backend generated (compile.h), unoptimised, with only its
// target-specific operations replaced by calls into this emulator (host_module): %tid / %ntid /
// %ctaid / %nctaid reads, bar.sync, cp.async and its groups, mma.sync, ex2 / lg2.approx (exp2f /
// log2f), and the kernel's dynamic shared memory (a per-block host buffer). Everything else --
// index arithmetic, loads, stores, vector accesses, fragment packing, the epilogue math -- is the
// same IR, compiled for x86 by LLVM's O2 pipeline and ORC LLJIT.
//
// Execution follows the CUDA model: blocks are independent (run on host threads, in any
// order); the threads of a block are coroutines (ucontext) run one after another, each until it
// reaches a barrier or a warp-collective instruction -- so a thread runs as far ahead of the
// others as the program allows, which exposes missing barriers. The semantics are those of the
// PTX ISA 7.0:
//   bar.sync 0         waits until every thread of the block arrived; a thread that exits while
//                      others wait, or threads waiting at different points, is an error
//   mma.sync m16n8k16  the 32 lanes of a warp deposit their fragments; the last to arrive
//                      computes D = A x B + C from the fragment layout (section 9.7.13.4.8, its
//                      own table here, independent of passes/loop/gpu_mma.cpp), fp16 inputs
//                      exact in fp32, fp32 accumulation in k order; a lane at another
//                      instruction is an error
//   cp.async           only recorded; the copy happens at the cp.async.wait_group that
//                      requires it (groups in commit order), or at thread exit -- so a thread
//                      that reads shared memory before waiting reads stale data; 16-byte copies
//                      need 16-byte aligned addresses, 8-byte ones 8
// Shared memory starts filled with 0xFF bytes (NaN in fp32 and fp16) each block, so a read of an
// element no thread wrote yields NaN; 64 guard bytes after it are checked after every block.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/backend/gpu/codegen.h"

namespace llvm {
class LLVMContext;
class Module;
namespace orc {
class LLJIT;
}
}  // namespace llvm

namespace tessel::gpu_backend {

struct GpuProgram;

/// The host module for `nvptx` (see the file comment), in `context`: for every kernel entry E a
/// wrapper `E.emu(i8** args)` calling it with args[i] as its i-th pointer. `needs_threads`
/// receives, per entry, whether it has barriers or warp collectives (its threads must run as
/// coroutines). Throws tessel::Error naming the construct the emulator cannot run.
std::unique_ptr<llvm::Module> host_module(const llvm::Module& nvptx, llvm::LLVMContext& context,
                                          std::map<std::string, bool>* needs_threads);

class GpuEmulator {
 public:
  /// JIT-compiles every entry of `program` for the host.
  explicit GpuEmulator(const GpuProgram& program);
  ~GpuEmulator();
  GpuEmulator(const GpuEmulator&) = delete;
  GpuEmulator& operator=(const GpuEmulator&) = delete;

  /// Runs entry `entry` over `shape` (grid x block threads, shape.shared_bytes of shared memory
  /// per block) with `args` (one host pointer per kernel parameter). Throws tessel::Error naming
  /// the entry, block and threads on a barrier not reached by every thread, a warp collective
  /// not reached by every lane, a misaligned cp.async or a write past the shared memory.
  void launch(const std::string& entry, const KernelShape& shape, const std::vector<void*>& args);

  /// Host threads blocks run on (default: the online cores, at most 8).
  void set_threads(int threads) { threads_ = threads < 1 ? 1 : threads; }

 private:
  struct Entry {
    void (*fn)(void**) = nullptr;
    bool coroutines = false;
  };
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::map<std::string, Entry> entries_;
  int threads_ = 1;
};

}  // namespace tessel::gpu_backend
