// Host emulation of the GPU kernels (see emulator.h).
#include "compiler/backend/gpu/emulator.h"

#include <fmt/format.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <sys/mman.h>
#include <ucontext.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "compiler/backend/cpu/jit.h"
#include "compiler/backend/gpu/compile.h"
#include "compiler/support/error.h"
#include "compiler/support/fp16.h"

namespace tessel::gpu_backend {

// ======================================================================= the runtime
namespace {

constexpr size_t kStackBytes = 128 * 1024;
constexpr int64_t kGuardBytes = 64;
constexpr uint8_t kGuardByte = 0xA5;

struct PendingCopy {
  void* dst;
  const void* src;
  int bytes;
};

struct EmuThread {
  ucontext_t ctx;
  int tid = 0;
  enum class State { ready, barrier, warp, done } state = State::ready;
  std::deque<std::vector<PendingCopy>> groups;  // committed, oldest first
  std::vector<PendingCopy> open;                // not committed yet
  float* mma_out = nullptr;
  int mma_site = 0;
};

/// One warp's pending mma.sync: the fragments deposited by the lanes that arrived.
struct WarpMma {
  int arrived = 0;
  int site = -1;
  uint32_t a[32][4];
  uint32_t b[32][2];
  float c[32][4];
};

struct EmuBlock {
  int ctaid = 0, nctaid = 1, ntid = 1;
  std::vector<EmuThread> threads;
  std::vector<WarpMma> warps;
  uint8_t* shared = nullptr;
  ucontext_t sched;
  EmuThread* cur = nullptr;
  int at_barrier = 0;
  bool coroutines = false;
  std::string error;
  void (*fn)(void**) = nullptr;
  void** args = nullptr;
};

thread_local EmuBlock* g_block = nullptr;

EmuBlock& block() { return *g_block; }

/// Records `msg` as the block's error. A coroutine thread then ends (the scheduler stops the
/// block and reports it; it is never resumed); a thread run as a plain call returns (no
/// exception may unwind through the JIT-compiled kernel) and the caller returns at once.
void thread_error(const std::string& msg) {
  EmuBlock& b = block();
  if (b.error.empty())
    b.error = fmt::format("block {} thread {}: {}", b.ctaid, b.cur ? b.cur->tid : -1, msg);
  if (!b.coroutines) return;
  b.cur->state = EmuThread::State::done;
  swapcontext(&b.cur->ctx, &b.sched);
  std::abort();  // never resumed
}

void yield_thread() {
  EmuBlock& b = block();
  swapcontext(&b.cur->ctx, &b.sched);
}

void perform(const PendingCopy& c) { std::memcpy(c.dst, c.src, static_cast<size_t>(c.bytes)); }

void flush_copies(EmuThread& t) {
  for (const auto& g : t.groups)
    for (const auto& c : g) perform(c);
  t.groups.clear();
  for (const auto& c : t.open) perform(c);
  t.open.clear();
}

float half_bits(uint32_t reg, int hi) {
  return f16_bits_to_f32(static_cast<uint16_t>(hi ? reg >> 16 : reg & 0xFFFF));
}

/// D = A x B + C for the 32 lanes of a warp (PTX ISA 7.0, 9.7.13.4.8).
void warp_mma(const WarpMma& w, float d[32][4]) {
  float A[16][16], B[16][8], C[16][8];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane >> 2, t = lane % 4;
    for (int i = 0; i < 8; ++i) {  // a_i: row g (i in 0,1,4,5) or g+8; col 2t + (i&1) (+8, i>=4)
      const int row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
      const int col = t * 2 + (i & 1) + (i >= 4 ? 8 : 0);
      A[row][col] = half_bits(w.a[lane][i / 2], i % 2);
    }
    for (int i = 0; i < 4; ++i) {  // b_i: row 2t + (i&1) (+8 for i>=2), col g
      const int row = t * 2 + (i & 1) + (i >= 2 ? 8 : 0);
      B[row][g] = half_bits(w.b[lane][i / 2], i % 2);
    }
    for (int i = 0; i < 4; ++i) {  // c_i: row g (i<2) or g+8, col 2t + (i&1)
      const int row = i < 2 ? g : g + 8;
      C[row][t * 2 + (i & 1)] = w.c[lane][i];
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane >> 2, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
      const int row = i < 2 ? g : g + 8, col = t * 2 + (i & 1);
      float acc = C[row][col];
      for (int k = 0; k < 16; ++k) acc += A[row][k] * B[k][col];
      d[lane][i] = acc;
    }
  }
}

}  // namespace

extern "C" {

int tessel_gpu_emu_sreg(int which) {
  EmuBlock& b = block();
  switch (which) {
    case 0:
      return b.cur->tid;  // %tid.x
    case 1:
      return b.ntid;  // %ntid.x
    case 2:
      return b.ctaid;  // %ctaid.x
    case 3:
      return b.nctaid;  // %nctaid.x
    case 4:
      return 0;  // %tid.y / .z, %ctaid.y / .z
    default:
      return 1;  // %ntid.y / .z, %nctaid.y / .z
  }
}

void* tessel_gpu_emu_shared() { return block().shared; }

void tessel_gpu_emu_barrier() {
  EmuBlock& b = block();
  if (!b.coroutines) return thread_error("bar.sync in a kernel run without coroutines");
  EmuThread& t = *b.cur;
  t.state = EmuThread::State::barrier;
  if (++b.at_barrier == b.ntid) {
    for (auto& x : b.threads)
      if (x.state == EmuThread::State::barrier) x.state = EmuThread::State::ready;
    b.at_barrier = 0;
    return;  // the last thread to arrive goes on
  }
  yield_thread();
}

void tessel_gpu_emu_mma(int site, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3, uint32_t b0,
                        uint32_t b1, float c0, float c1, float c2, float c3, float* d) {
  EmuBlock& b = block();
  if (!b.coroutines) return thread_error("mma.sync in a kernel run without coroutines");
  EmuThread& t = *b.cur;
  const int warp = t.tid / 32, lane = t.tid % 32;
  if ((warp + 1) * 32 > b.ntid)
    thread_error(
        fmt::format("mma.sync in warp {} of fewer than 32 threads (block of {})", warp, b.ntid));
  WarpMma& w = b.warps[static_cast<size_t>(warp)];
  if (w.arrived > 0 && w.site != site)
    thread_error(fmt::format("mma.sync: lanes of warp {} are at different mma instructions", warp));
  w.site = site;
  const uint32_t av[4] = {a0, a1, a2, a3};
  const uint32_t bv[2] = {b0, b1};
  const float cv[4] = {c0, c1, c2, c3};
  std::memcpy(w.a[lane], av, sizeof av);
  std::memcpy(w.b[lane], bv, sizeof bv);
  std::memcpy(w.c[lane], cv, sizeof cv);
  t.mma_out = d;
  t.mma_site = site;
  t.state = EmuThread::State::warp;
  if (++w.arrived == 32) {
    float out[32][4];
    warp_mma(w, out);
    for (int l = 0; l < 32; ++l) {
      EmuThread& x = b.threads[static_cast<size_t>(warp * 32 + l)];
      std::memcpy(x.mma_out, out[l], sizeof out[l]);
      x.state = EmuThread::State::ready;
    }
    w.arrived = 0;
    w.site = -1;
    return;
  }
  yield_thread();
}

void tessel_gpu_emu_cp_async(void* dst, const void* src, int bytes) {
  const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  const auto align = static_cast<uintptr_t>(bytes);
  if (d % align != 0 || s % align != 0)
    return thread_error(fmt::format("cp.async of {} bytes from {:#x} to {:#x}: not {}-byte aligned",
                                    bytes, s, d, bytes));
  block().cur->open.push_back({dst, src, bytes});
}

void tessel_gpu_emu_cp_async_commit() {
  EmuThread& t = *block().cur;
  t.groups.push_back(std::move(t.open));
  t.open.clear();
}

void tessel_gpu_emu_cp_async_wait(int pending) {
  EmuThread& t = *block().cur;
  while (static_cast<int>(t.groups.size()) > pending) {
    for (const auto& c : t.groups.front()) perform(c);
    t.groups.pop_front();
  }
}

}  // extern "C"

namespace {

void coroutine_main() {
  EmuBlock& b = block();
  EmuThread& t = *b.cur;
  b.fn(b.args);
  flush_copies(t);
  t.state = EmuThread::State::done;
  // uc_link returns to the scheduler.
}

std::string thread_states(const EmuBlock& b) {
  std::map<std::string, std::vector<int>> by;
  for (const auto& t : b.threads) {
    const char* s = t.state == EmuThread::State::barrier ? "at bar.sync"
                    : t.state == EmuThread::State::warp  ? "at mma.sync"
                    : t.state == EmuThread::State::done  ? "exited"
                                                         : "ready";
    by[s].push_back(t.tid);
  }
  std::string r;
  for (const auto& [s, ids] : by) {
    r += fmt::format("{}{} thread{} {}", r.empty() ? "" : "; ", ids.size(),
                     ids.size() > 1 ? "s" : "", s);
    if (ids.size() <= 4) {
      r += " (";
      for (size_t i = 0; i < ids.size(); ++i) r += (i ? "," : "") + std::to_string(ids[i]);
      r += ")";
    }
  }
  return r;
}

/// The host resources one emulating thread reuses across blocks.
struct Worker {
  std::vector<uint8_t> shared;
  uint8_t* stacks = nullptr;
  size_t stack_count = 0;
  ~Worker() {
    if (stacks) munmap(stacks, stack_count * kStackBytes);
  }
  void ensure_stacks(size_t n) {
    if (stack_count >= n) return;
    if (stacks) munmap(stacks, stack_count * kStackBytes);
    void* p = mmap(nullptr, n * kStackBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    stacks = static_cast<uint8_t*>(p);
    stack_count = n;
  }
};

/// Runs block `ctaid` on the calling host thread; returns "" or the error.
std::string run_block(Worker& w, void (*fn)(void**), void** args, bool coroutines, int ctaid,
                      const KernelShape& shape) {
  EmuBlock b;
  b.ctaid = ctaid;
  b.nctaid = static_cast<int>(shape.grid);
  b.ntid = static_cast<int>(shape.block);
  b.fn = fn;
  b.args = args;
  b.coroutines = coroutines;
  b.threads.resize(static_cast<size_t>(b.ntid));
  b.warps.resize(static_cast<size_t>((b.ntid + 31) / 32));
  w.shared.assign(static_cast<size_t>(shape.shared_bytes + kGuardBytes), 0xFF);
  std::memset(w.shared.data() + shape.shared_bytes, kGuardByte, kGuardBytes);
  b.shared = w.shared.data();
  for (int i = 0; i < b.ntid; ++i) b.threads[static_cast<size_t>(i)].tid = i;
  EmuBlock* saved = g_block;
  g_block = &b;
  struct Restore {
    EmuBlock* saved;
    ~Restore() { g_block = saved; }
  } restore{saved};
  if (!coroutines) {
    for (auto& t : b.threads) {
      b.cur = &t;
      fn(args);
      if (!b.error.empty()) return b.error;
      flush_copies(t);
    }
  } else {
    w.ensure_stacks(b.threads.size());
    for (size_t i = 0; i < b.threads.size(); ++i) {
      EmuThread& t = b.threads[i];
      getcontext(&t.ctx);
      t.ctx.uc_stack.ss_sp = w.stacks + i * kStackBytes;
      t.ctx.uc_stack.ss_size = kStackBytes;
      t.ctx.uc_link = &b.sched;
      makecontext(&t.ctx, coroutine_main, 0);
    }
    for (;;) {
      bool ran = false, all_done = true;
      for (auto& t : b.threads) {
        if (t.state == EmuThread::State::ready) {
          b.cur = &t;
          swapcontext(&b.sched, &t.ctx);
          ran = true;
          if (!b.error.empty()) return b.error;
        }
        all_done &= t.state == EmuThread::State::done;
      }
      if (all_done) break;
      if (!ran) {
        bool any = false;
        for (const auto& t : b.threads) any |= t.state == EmuThread::State::ready;
        if (!any)
          return fmt::format(
              "block {}: deadlock: {} (a barrier or mma.sync that not every thread reaches)", ctaid,
              thread_states(b));
      }
    }
  }
  for (int64_t i = 0; i < kGuardBytes; ++i)
    if (w.shared[static_cast<size_t>(shape.shared_bytes + i)] != kGuardByte)
      return fmt::format("block {}: a thread wrote past the end of the {} bytes of shared memory",
                         ctaid, shape.shared_bytes);
  return "";
}

// ======================================================================= the host module
int sreg_code(llvm::Intrinsic::ID id) {
  switch (id) {
    case llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x:
      return 0;
    case llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_x:
      return 1;
    case llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x:
      return 2;
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x:
      return 3;
    case llvm::Intrinsic::nvvm_read_ptx_sreg_tid_y:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_tid_z:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z:
      return 4;
    case llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_y:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_ntid_z:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y:
    case llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z:
      return 5;
    default:
      return -1;
  }
}

/// The generic pointer an address-space cast instruction was made from.
llvm::Value* generic_of(llvm::Value* v) {
  if (auto* c = llvm::dyn_cast<llvm::AddrSpaceCastInst>(v)) return c->getOperand(0);
  fail("gpu emulator: a cp.async operand that is not an address-space cast of a generic pointer");
}

}  // namespace

std::unique_ptr<llvm::Module> host_module(const llvm::Module& nvptx, llvm::LLVMContext& context,
                                          std::map<std::string, bool>* needs_threads) {
  // A copy in `context` (through bitcode: the module may be used on another thread).
  std::string bits;
  {
    llvm::raw_string_ostream os(bits);
    llvm::WriteBitcodeToFile(nvptx, os);
  }
  auto parsed = llvm::parseBitcodeFile(llvm::MemoryBufferRef(bits, nvptx.getName()), context);
  if (!parsed) fail("gpu emulator: {}", llvm::toString(parsed.takeError()));
  std::unique_ptr<llvm::Module> m = std::move(*parsed);
  auto* i32 = llvm::Type::getInt32Ty(context);
  auto* i8p = llvm::Type::getInt8PtrTy(context);
  auto* f32 = llvm::Type::getFloatTy(context);
  auto* vd = llvm::Type::getVoidTy(context);
  auto callee = [&](const char* name, llvm::Type* ret, std::vector<llvm::Type*> args) {
    return m->getOrInsertFunction(name, llvm::FunctionType::get(ret, args, false));
  };
  // Kernel entries, from the annotations.
  std::vector<llvm::Function*> kernels;
  if (llvm::NamedMDNode* ann = m->getNamedMetadata("nvvm.annotations")) {
    for (llvm::MDNode* op : ann->operands()) {
      if (op->getNumOperands() < 3) continue;
      auto* key = llvm::dyn_cast<llvm::MDString>(op->getOperand(1));
      if (!key || key->getString() != "kernel") continue;
      auto* f = llvm::mdconst::dyn_extract_or_null<llvm::Function>(op->getOperand(0));
      if (f) kernels.push_back(f);
    }
    ann->eraseFromParent();
  }
  std::map<llvm::Function*, bool> sync;
  int site = 0;
  std::vector<llvm::Instruction*> dead;
  for (llvm::Function& f : *m) {
    for (llvm::BasicBlock& bb : f) {
      for (llvm::Instruction& inst : bb) {
        // The shared memory: addrspacecast(@K_smem) -> the block's host buffer.
        if (auto* asc = llvm::dyn_cast<llvm::AddrSpaceCastInst>(&inst)) {
          auto* g = llvm::dyn_cast<llvm::GlobalVariable>(asc->getOperand(0)->stripPointerCasts());
          if (g && g->getAddressSpace() == 3) {
            llvm::IRBuilder<> b(asc);
            llvm::Value* p = b.CreateCall(callee("tessel_gpu_emu_shared", i8p, {}), {});
            asc->replaceAllUsesWith(b.CreateBitCast(p, asc->getType()));
            dead.push_back(asc);
          }
          continue;
        }
        auto* call = llvm::dyn_cast<llvm::CallInst>(&inst);
        if (!call || !call->getCalledFunction()) continue;
        const llvm::Intrinsic::ID id = call->getCalledFunction()->getIntrinsicID();
        if (id == llvm::Intrinsic::not_intrinsic) continue;
        llvm::IRBuilder<> b(call);
        llvm::Value* r = nullptr;
        if (const int code = sreg_code(id); code >= 0) {
          r = b.CreateCall(callee("tessel_gpu_emu_sreg", i32, {i32}), {b.getInt32(code)});
        } else {
          switch (id) {
            case llvm::Intrinsic::nvvm_barrier0:
              b.CreateCall(callee("tessel_gpu_emu_barrier", vd, {}), {});
              sync[&f] = true;
              break;
            case llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4:
            case llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8:
            case llvm::Intrinsic::nvvm_cp_async_ca_shared_global_16:
            case llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16: {
              const int bytes = id == llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4   ? 4
                                : id == llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8 ? 8
                                                                                          : 16;
              llvm::Value* dst = generic_of(call->getArgOperand(0));
              llvm::Value* src = generic_of(call->getArgOperand(1));
              b.CreateCall(
                  callee("tessel_gpu_emu_cp_async", vd, {i8p, i8p, i32}),
                  {b.CreateBitCast(dst, i8p), b.CreateBitCast(src, i8p), b.getInt32(bytes)});
              break;
            }
            case llvm::Intrinsic::nvvm_cp_async_commit_group:
              b.CreateCall(callee("tessel_gpu_emu_cp_async_commit", vd, {}), {});
              break;
            case llvm::Intrinsic::nvvm_cp_async_wait_group:
              b.CreateCall(callee("tessel_gpu_emu_cp_async_wait", vd, {i32}),
                           {call->getArgOperand(0)});
              break;
            case llvm::Intrinsic::nvvm_cp_async_wait_all:
              b.CreateCall(callee("tessel_gpu_emu_cp_async_wait", vd, {i32}), {b.getInt32(0)});
              break;
            case llvm::Intrinsic::nvvm_mma_m16n8k16_row_col_f32_f32: {
              std::vector<llvm::Value*> args = {b.getInt32(static_cast<uint32_t>(site++))};
              for (unsigned i = 0; i < 6; ++i)
                args.push_back(b.CreateBitCast(call->getArgOperand(i), i32));
              for (unsigned i = 6; i < 10; ++i) args.push_back(call->getArgOperand(i));
              llvm::IRBuilder<> eb(&f.getEntryBlock(), f.getEntryBlock().begin());
              llvm::AllocaInst* out = eb.CreateAlloca(llvm::ArrayType::get(f32, 4));
              args.push_back(b.CreateBitCast(out, llvm::PointerType::getUnqual(f32)));
              std::vector<llvm::Type*> tys(7, i32);
              for (int i = 0; i < 4; ++i) tys.push_back(f32);
              tys.push_back(llvm::PointerType::getUnqual(f32));
              b.CreateCall(callee("tessel_gpu_emu_mma", vd, tys), args);
              llvm::Value* st = llvm::UndefValue::get(call->getType());
              for (unsigned i = 0; i < 4; ++i)
                st = b.CreateInsertValue(st,
                                         b.CreateLoad(f32, b.CreateConstInBoundsGEP2_32(
                                                               out->getAllocatedType(), out, 0, i)),
                                         {i});
              r = st;
              sync[&f] = true;
              break;
            }
            case llvm::Intrinsic::nvvm_ex2_approx_f:
              r = b.CreateCall(callee("exp2f", f32, {f32}), {call->getArgOperand(0)});
              break;
            case llvm::Intrinsic::nvvm_lg2_approx_f:
              r = b.CreateCall(callee("log2f", f32, {f32}), {call->getArgOperand(0)});
              break;
            default:
              if (call->getCalledFunction()->getName().startswith("llvm.nvvm."))
                fail("gpu emulator: kernel {} uses {}, which the emulator does not implement",
                     f.getName().str(), call->getCalledFunction()->getName().str());
              continue;  // a target-independent intrinsic (fmuladd, sqrt, masked loads, ...)
          }
        }
        if (r) call->replaceAllUsesWith(r);
        dead.push_back(call);
      }
    }
  }
  for (llvm::Instruction* i : dead) i->eraseFromParent();
  // The address-space casts that fed cp.async, now unused.
  for (llvm::Function& f : *m)
    for (llvm::BasicBlock& bb : f)
      for (auto it = bb.begin(); it != bb.end();) {
        llvm::Instruction& i = *it++;
        if (llvm::isa<llvm::AddrSpaceCastInst>(i) && i.use_empty()) i.eraseFromParent();
      }
  for (auto it = m->global_begin(); it != m->global_end();) {
    llvm::GlobalVariable& g = *it++;
    if (g.getAddressSpace() != 0) {
      g.removeDeadConstantUsers();
      if (!g.use_empty())
        fail("gpu emulator: address-space {} global {} still used", g.getAddressSpace(),
             g.getName().str());
      g.eraseFromParent();
    }
  }
  // Wrappers E.emu(i8** args).
  auto* i8pp = llvm::PointerType::getUnqual(i8p);
  for (llvm::Function* k : kernels) {
    auto* w = llvm::Function::Create(llvm::FunctionType::get(vd, {i8pp}, false),
                                     llvm::Function::ExternalLinkage, k->getName() + ".emu", *m);
    llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", w));
    std::vector<llvm::Value*> args;
    for (unsigned i = 0; i < k->arg_size(); ++i) {
      llvm::Value* p = b.CreateLoad(i8p, b.CreateConstGEP1_64(i8p, w->getArg(0), i));
      args.push_back(b.CreateBitCast(p, k->getArg(i)->getType()));
    }
    b.CreateCall(k, args);
    b.CreateRetVoid();
    if (needs_threads) (*needs_threads)[k->getName().str()] = sync.count(k) > 0;
  }
  std::string diag;
  llvm::raw_string_ostream os(diag);
  if (llvm::verifyModule(*m, &os)) {
    os.flush();
    fail("gpu emulator: the host module is invalid: {}", diag);
  }
  return m;
}

GpuEmulator::GpuEmulator(const GpuProgram& program) {
  auto ctx = std::make_unique<llvm::LLVMContext>();
  std::map<std::string, bool> needs;
  auto m = host_module(*program.module, *ctx, &needs);
  const std::map<std::string, const void*> syms = {
      {"tessel_gpu_emu_sreg", reinterpret_cast<const void*>(&tessel_gpu_emu_sreg)},
      {"tessel_gpu_emu_shared", reinterpret_cast<const void*>(&tessel_gpu_emu_shared)},
      {"tessel_gpu_emu_barrier", reinterpret_cast<const void*>(&tessel_gpu_emu_barrier)},
      {"tessel_gpu_emu_mma", reinterpret_cast<const void*>(&tessel_gpu_emu_mma)},
      {"tessel_gpu_emu_cp_async", reinterpret_cast<const void*>(&tessel_gpu_emu_cp_async)},
      {"tessel_gpu_emu_cp_async_commit",
       reinterpret_cast<const void*>(&tessel_gpu_emu_cp_async_commit)},
      {"tessel_gpu_emu_cp_async_wait",
       reinterpret_cast<const void*>(&tessel_gpu_emu_cp_async_wait)}};
  jit_ = cpu_backend::host_jit(std::move(m), std::move(ctx), syms);
  for (const auto& [name, co] : needs) {
    Entry e;
    e.fn = reinterpret_cast<void (*)(void**)>(cpu_backend::jit_lookup(*jit_, name + ".emu"));
    e.coroutines = co;
    entries_[name] = e;
  }
  threads_ = static_cast<int>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 8));
}

GpuEmulator::~GpuEmulator() = default;

void GpuEmulator::launch(const std::string& entry, const KernelShape& shape,
                         const std::vector<void*>& args) {
  auto it = entries_.find(entry);
  TESSEL_CHECK(it != entries_.end(), "gpu emulator: no entry {}", entry);
  const Entry e = it->second;
  std::vector<void*> a = args;
  std::atomic<int64_t> next{0};
  std::mutex mu;
  std::string error;
  auto work = [&] {
    Worker w;
    for (;;) {
      const int64_t blk = next.fetch_add(1);
      if (blk >= shape.grid) return;
      std::string err;
      try {
        err = run_block(w, e.fn, a.data(), e.coroutines, static_cast<int>(blk), shape);
      } catch (const std::bad_alloc&) {
        err = "out of host memory for the emulated threads' stacks";
      }
      if (!err.empty()) {
        std::lock_guard<std::mutex> lock(mu);
        if (error.empty()) error = err;
        next = shape.grid;  // stop the other workers
        return;
      }
    }
  };
  const int n = static_cast<int>(std::min<int64_t>(threads_, shape.grid));
  if (n <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (int i = 0; i < n; ++i) pool.emplace_back(work);
    for (auto& t : pool) t.join();
  }
  if (!error.empty()) fail("gpu emulator: {}: {}", entry, error);
}

}  // namespace tessel::gpu_backend
