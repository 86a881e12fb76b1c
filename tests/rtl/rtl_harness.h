// The RTL cube's unit harness (tests/rtl): runs mmads on rtl::RtlCube alone (no core) in a fresh
// SystemC context, issued at given cycles by a SystemC method as the cube pipe would, and the
// references: isa/semantics' mmad and npu::instruction_cost.
#pragma once

#include <gtest/gtest.h>

#include <systemc>

#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "compiler/support/error.h"
#include "isa/semantics.h"
#include "npu_model/hw_config.h"
#include "npu_model/timing.h"
#include "simulator/rtl/rtl_cube.h"

namespace tessel::rtl_test {

using isa::DType;
using isa::Scope;

/// npu_4core with DaVinci's int8 fractal, core.cube.int8 = 16 x 32 x 16 (the second verilated
/// shape).
inline npu::HwConfig davinci() {
  return npu::load_hw_config(
      std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml",
      {{"core.cube.int8.m", "16"}, {"core.cube.int8.k", "32"}, {"core.cube.int8.n", "16"}});
}

inline npu::HwConfig preset() {
  return npu::load_hw_config(std::string(TESSEL_SOURCE_DIR) + "/hw_configs/npu_4core.yaml");
}

// A fresh SystemC context (SystemC cannot restart a simulation in one), as simulator.cpp's.
class ScContext {
 public:
  ScContext() {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    context_ = new sc_core::sc_simcontext();
    sc_core::sc_curr_simcontext = context_;
    sc_core::sc_default_global_context = context_;
    sc_core::sc_set_time_resolution(1, sc_core::SC_NS);
  }
  ~ScContext() {
    delete context_;
    sc_core::sc_curr_simcontext = nullptr;
    sc_core::sc_default_global_context = nullptr;
  }

 private:
  sc_core::sc_simcontext* context_;
};

// L0A / L0B / L0C of the preset's sizes.
struct Memory {
  std::vector<uint8_t> l0a, l0b, l0c;
  isa::CoreMemory mem;
  explicit Memory(const npu::HwConfig& hw)
      : l0a(hw.core.buffers_bytes.l0a),
        l0b(hw.core.buffers_bytes.l0b),
        l0c(hw.core.buffers_bytes.l0c) {
    mem.base[int(Scope::l0a)] = l0a.data();
    mem.base[int(Scope::l0b)] = l0b.data();
    mem.base[int(Scope::l0c)] = l0c.data();
    mem.size[int(Scope::l0a)] = l0a.size();
    mem.size[int(Scope::l0b)] = l0b.size();
    mem.size[int(Scope::l0c)] = l0c.size();
  }
  Memory(const Memory& o) : Memory(o.l0a, o.l0b, o.l0c) {}
  Memory(std::vector<uint8_t> a, std::vector<uint8_t> b, std::vector<uint8_t> c)
      : l0a(std::move(a)), l0b(std::move(b)), l0c(std::move(c)) {
    mem.base[int(Scope::l0a)] = l0a.data();
    mem.base[int(Scope::l0b)] = l0b.data();
    mem.base[int(Scope::l0c)] = l0c.data();
    mem.size[int(Scope::l0a)] = l0a.size();
    mem.size[int(Scope::l0b)] = l0b.size();
    mem.size[int(Scope::l0c)] = l0c.size();
  }
};

inline isa::MmadArgs mmad(uint32_t m1, uint32_t k1, uint32_t n1, bool acc, DType a_dtype,
                          DType b_dtype, int64_t a_addr, int64_t b_addr, int64_t c_addr) {
  isa::MmadArgs a;
  a.a = {Scope::l0a, 0, a_addr};
  a.b = {Scope::l0b, 0, b_addr};
  a.c = {Scope::l0c, 0, c_addr};
  a.m1 = m1;
  a.k1 = k1;
  a.n1 = n1;
  a.accumulate = acc;
  a.a_dtype = a_dtype;
  a.b_dtype = b_dtype;
  return a;
}

inline isa::Instruction instr(const isa::MmadArgs& a) {
  isa::Instruction in;
  in.op = isa::Opcode::mmad;
  in.args = a;
  return in;
}

struct Issue {
  isa::MmadArgs args;
  uint64_t cycle = 0;  // the cycle the command is issued
};

// Issues each command at its cycle (a SystemC method, as the core's cube pipe) and records the
// completions.
struct Driver : sc_core::sc_module {
  SC_HAS_PROCESS(Driver);
  rtl::RtlCube& cube;
  const std::vector<Issue>& issues;
  size_t next = 0;
  Driver(sc_core::sc_module_name n, rtl::RtlCube& c, const std::vector<Issue>& i)
      : sc_core::sc_module(n), cube(c), issues(i) {
    SC_METHOD(step);
  }
  void step() {
    const uint64_t now = sc_core::sc_time_stamp().value();
    while (next < issues.size() && issues[next].cycle <= now) {
      cube.issue(issues[next].args, next);
      ++next;
    }
    if (next < issues.size())
      sc_core::next_trigger(sc_core::sc_time::from_value(issues[next].cycle - now));
  }
};

// Runs `issues` on the RTL over `m` and returns the completions in issue order.
inline std::vector<rtl::RtlCompletion> run_rtl(Memory& m, const std::vector<Issue>& issues,
                                               uint64_t* edges = nullptr,
                                               double* host_seconds = nullptr,
                                               const rtl::RtlCubeShape& shape = {16, 16, 16, 8}) {
  std::vector<rtl::RtlCompletion> done;
  std::string error;
  {
    ScContext context;
    auto cube = std::make_unique<rtl::RtlCube>("rtl_cube", m.mem, shape);
    cube->on_complete = [&](const rtl::RtlCompletion& c) { done.push_back(c); };
    cube->on_error = [&](const std::string& e) {
      if (error.empty()) error = e;
    };
    auto driver = std::make_unique<Driver>("driver", *cube, issues);
    const auto t0 = std::chrono::steady_clock::now();
    sc_core::sc_start();  // the clock is gated: the simulation ends when the cube is idle
    if (host_seconds)
      *host_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (edges) *edges = cube->clock_edges();
    driver.reset();
    cube.reset();
  }
  EXPECT_EQ(error, "");
  return done;
}

// The reference: isa/semantics' mmad applied in issue order.
inline void run_reference(const npu::HwConfig& hw, Memory& m, const std::vector<Issue>& issues) {
  for (const Issue& i : issues) isa::execute(hw, instr(i.args), m.mem);
}

inline uint64_t cost_cycles(const npu::HwConfig& hw, const isa::MmadArgs& a) {
  const npu::InstrCost c = npu::instruction_cost(hw, instr(a));
  return c.occupancy_cycles + c.latency_cycles;
}

// The first differing int32 of L0C, or "" when equal.
inline std::string first_difference(const Memory& rtl, const Memory& ref) {
  for (size_t i = 0; i + 4 <= rtl.l0c.size(); i += 4)
    if (std::memcmp(&rtl.l0c[i], &ref.l0c[i], 4) != 0) {
      int32_t a, b;
      std::memcpy(&a, &rtl.l0c[i], 4);
      std::memcpy(&b, &ref.l0c[i], 4);
      return fmt::format("l0c byte {}: rtl {} vs semantics {}", i, a, b);
    }
  return "";
}

inline void fill_random(std::vector<uint8_t>& v, std::mt19937& rng) {
  std::uniform_int_distribution<int> d(0, 255);
  for (uint8_t& b : v) b = static_cast<uint8_t>(d(rng));
}

}  // namespace tessel::rtl_test
