// Simulator: owns GM, builds a fresh SystemC context per run(), elaborates NpuTop, runs it and
// collects the statistics.
#include "simulator/simulator.h"

#include <systemc>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "compiler/support/error.h"
#include "simulator/npu_top.h"
#include "simulator/run_state.h"

// libsystemc.so references sc_main (its own main() calls it when a program lets SystemC provide
// main). tessel's executables have their own main() and drive SystemC through sc_start(), so this
// definition only satisfies the linker; it is never called.
int sc_main(int, char**) { return 0; }

namespace tessel::sim {

namespace {

// One-time global SystemC settings: no banner, no info messages (sc_stop's "simulation stopped").
void configure_systemc_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  });
}

// A fresh simulation context for one run; SystemC cannot restart a simulation in a context, so
// every run() gets its own and deletes it afterwards (modules must be deleted before it).
class ScContext {
 public:
  ScContext() {
    configure_systemc_once();
    context_ = new sc_core::sc_simcontext();
    sc_core::sc_curr_simcontext = context_;
    sc_core::sc_default_global_context = context_;
    sc_core::sc_set_time_resolution(1, sc_core::SC_NS);  // 1 time unit = 1 core cycle
  }
  ~ScContext() {
    delete context_;
    sc_core::sc_curr_simcontext = nullptr;
    sc_core::sc_default_global_context = nullptr;
  }
  ScContext(const ScContext&) = delete;
  ScContext& operator=(const ScContext&) = delete;

 private:
  sc_core::sc_simcontext* context_;
};

}  // namespace

Simulator::Simulator(const npu::HwConfig& hw, SimOptions options)
    : hw_(hw), options_(std::move(options)) {}

void Simulator::load_image(const isa::Program& program) {
  if (program.cores.empty()) fail("program '{}' has no core streams", program.name);
  if (hw_.cores > 0 && program.cores.size() > static_cast<size_t>(hw_.cores))
    fail("program '{}' has {} core streams but the hardware config '{}' has {} cores", program.name,
         program.cores.size(), hw_.name, hw_.cores);
  const bool image = options_.functional || !options_.skip_gm_image;
  if (image && hw_.dram.capacity_bytes > 0 &&
      program.gm_bytes > static_cast<uint64_t>(hw_.dram.capacity_bytes))
    fail("program '{}' needs {} bytes of GM but memory.dram.capacity_bytes is {} ({})",
         program.name, program.gm_bytes, hw_.dram.capacity_bytes,
         hw_.source_file.empty() ? std::string("config built in code") : hw_.source_file);
  std::vector<uint8_t> gm(image ? program.gm_bytes : 0, 0);
  for (const isa::GmBuffer& b : program.buffers) {
    if (b.address + b.bytes > program.gm_bytes || b.address + b.bytes < b.address)
      fail("program '{}': buffer '{}' [{}, {}) lies outside the {}-byte GM", program.name, b.name,
           b.address, b.address + b.bytes, program.gm_bytes);
    if (b.kind == isa::GmKind::constant && !b.init.empty()) {
      if (b.init.size() != b.bytes)
        fail("program '{}': constant buffer '{}' has {} init bytes, expected {}", program.name,
             b.name, b.init.size(), b.bytes);
      if (image) std::memcpy(gm.data() + b.address, b.init.data(), b.bytes);
    }
  }
  gm_ = std::move(gm);
  gm_bytes_ = program.gm_bytes;
}

void Simulator::load(std::shared_ptr<const isa::Program> program) {
  if (!program) fail("Simulator::load: no program (null pointer)");
  load_image(*program);
  program_ = std::move(program);
}

// The copy and the move keep what run() reads: the streams, the op names, the name (the
// buffers' init bytes are in the GM image already).
void Simulator::load(const isa::Program& program) {
  load_image(program);
  auto p = std::make_shared<isa::Program>();
  p->name = program.name;
  p->gm_bytes = program.gm_bytes;
  p->cores = program.cores;
  p->op_names = program.op_names;
  program_ = std::move(p);
}

void Simulator::load(isa::Program&& program) {
  load_image(program);
  auto p = std::make_shared<isa::Program>();
  p->name = std::move(program.name);
  p->gm_bytes = program.gm_bytes;
  p->cores = std::move(program.cores);
  p->op_names = std::move(program.op_names);
  program_ = std::move(p);
}

void Simulator::write_gm(uint64_t address, const void* data, uint64_t bytes) {
  if (address + bytes > gm_.size() || address + bytes < address)
    fail("write_gm: range [{}, {}) is outside the {}-byte GM", address, address + bytes,
         gm_.size());
  if (bytes) std::memcpy(gm_.data() + address, data, bytes);
}

void Simulator::read_gm(uint64_t address, void* data, uint64_t bytes) const {
  if (address + bytes > gm_.size() || address + bytes < address)
    fail("read_gm: range [{}, {}) is outside the {}-byte GM", address, address + bytes, gm_.size());
  if (bytes) std::memcpy(data, gm_.data() + address, bytes);
}

SimResult Simulator::run() {
  if (!program_) fail("Simulator::run: no program loaded (call load() first)");
  const isa::Program& program = *program_;
  const auto t0 = std::chrono::steady_clock::now();

  RunState run;
  run.hw = &hw_;
  run.options = &options_;
  run.code = &program.cores;
  run.gm = gm_.empty() ? nullptr : gm_.data();
  run.gm_bytes = gm_.empty() ? gm_bytes_ : gm_.size();
  run.tracing = !options_.trace_path.empty();
  run.result.cores.resize(program.cores.size());
  size_t n_ops = program.op_names.size();

  bool deadlock = false;
  std::string deadlock_message;
  {
    ScContext context;
    std::unique_ptr<NpuTop> top;
    top = std::make_unique<NpuTop>("npu", run);
    // The op tables: each core found its streams' largest op_index while decoding them (one
    // pass over the program per run, not a second one here).
    for (const auto& core : top->cores()) n_ops = std::max(n_ops, core->op_count());
    run.op_first_start.assign(n_ops, UINT64_MAX);
    run.op_last_completion.assign(n_ops, 0);
    run.result.op_busy_cycles.assign(n_ops, {});
    run.result.op_dram.assign(n_ops, {});
    sc_core::sc_start();
    if (!run.error && !top->finished()) {
      deadlock = true;
      deadlock_message = top->deadlock_report(run.kernel.now());
    }
    if (!run.error && !deadlock) {
      top->finish_memory();
      for (size_t c = 0; c < top->cores().size(); ++c) {
        top->cores()[c]->flush_stats();
        const uint64_t f = top->cores()[c]->finish_cycle();
        run.result.cores[c].finish_cycle = f;
        run.result.total_cycles = std::max(run.result.total_cycles, f);
      }
      run.result.dram_model = hw_.dram.model == npu::DramModel::banked ? "banked" : "simple";
      run.result.dram_channels = top->dram().channel_stats();
    }
    if (!run.error && !deadlock) top->dram().commit_trace();  // else its destructor removes it
    top.reset();                                              // modules before their context
  }
  if (run.error) std::rethrow_exception(run.error);
  if (deadlock) throw Error(deadlock_message);

  SimResult& r = run.result;
  r.op_cycles.assign(n_ops, 0);
  for (size_t i = 0; i < n_ops; ++i)
    if (run.op_first_start[i] != UINT64_MAX)
      r.op_cycles[i] = run.op_last_completion[i] - run.op_first_start[i];
  if (run.tracing) write_chrome_trace(options_.trace_path, run, program.op_names);
  r.host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return std::move(run.result);
}

}  // namespace tessel::sim
