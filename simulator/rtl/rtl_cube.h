// RtlCube: the verilated SystemVerilog cube unit (simulator/rtl/cube.sv, tessel_cube, inside
// cube_top.sv) as a SystemC module, clocked by a SystemC clock signal, executing int8 mmad
// instructions on a core's L0A / L0B / L0C (docs/rtl.md).
//
// Time: 1 SystemC time unit = 1 core cycle (simulator/core.h). A command issued in cycle s (issue()
// called at SystemC time s) is presented to the RTL during cycle s and sampled by the rising edge
// that ends it; the module raises that edge at time s + 1, in delta cycles after writing the
// inputs (SystemC's sc_clock cannot have a 1-unit period at this resolution: its high and low
// phases would be half a unit), so every input is stable before the edge that samples it. The RTL
// reads and writes the core's scratchpads through DPI-C at its clock edges. The clock is gated:
// it runs only while a command is pending or in flight, so an idle cube costs no host time.
#pragma once

#include <systemc>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "isa/semantics.h"
#include "npu_model/hw_config.h"

namespace tessel::rtl {

/// A fractal (M x K x N, int8 elements) and pipeline depth (LATENCY, cycles) of tessel_cube.
struct RtlCubeShape {
  int m = 0, k = 0, n = 0;
  int latency_cycles = 0;
};
/// The shapes the build verilated (CMake passes them to verilator as -G parameters): the presets'
/// 16 x 16 x 16 and DaVinci's int8 16 x 32 x 16 (core.cube.int8), both with 8 cycles.
std::vector<RtlCubeShape> verilated_cube_shapes();

/// Checks that `hw`'s int8 fractal (core.cube.int8, or the float fractal without it) and
/// core.cube.pipeline_latency_cycles are one of verilated_cube_shapes(); throws tessel::Error
/// "<where>: core.cube.model: rtl needs a cube the RTL was verilated for, ..." naming the verilated
/// shapes and the config's otherwise.
void check_rtl_cube_config(const npu::HwConfig& hw, const std::string& where);

/// One mmad the RTL completed. Cycles are core cycles (SystemC time units).
struct RtlCompletion {
  uint64_t tag = 0;               // issue()'s tag
  uint64_t issue_cycle = 0;       // the cycle issue() was called
  uint64_t accepted_cycle = 0;    // the cycle its first step issued (ready was high)
  uint64_t completion_cycle = 0;  // the first cycle its results are usable: the cycle after the
                                  // one in which `done` was high
};

class RtlCube : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(RtlCube);
  /// `memory`: the core's memories; L0A, L0B and L0C must be mapped (a functional run) and stay
  /// valid while the module lives. Throws tessel::Error when they are not, tessel::InternalError
  /// when `shape` is not one of verilated_cube_shapes().
  RtlCube(sc_core::sc_module_name name, isa::CoreMemory& memory,
          const RtlCubeShape& shape = RtlCubeShape{16, 16, 16, 8});
  ~RtlCube() override;

  /// Presents int8 mmad `a` (resolved: its offsets are byte addresses) in the current cycle; it is
  /// taken when the RTL is ready (queued behind earlier commands otherwise). Throws
  /// tessel::InternalError for a float-mode mmad or an address beyond 32 bits.
  /// `deadline_cycle` (0: none): the cycle by which it must have completed; a command not done
  /// by then is reported through on_error when the cycle before it has been clocked.
  void issue(const isa::MmadArgs& a, uint64_t tag, uint64_t deadline_cycle = 0);
  /// Called (inside the module's process) for each completed command, in issue order.
  std::function<void(const RtlCompletion&)> on_complete;
  /// Called (inside the module's process) when an access of the RTL fell outside a scratchpad.
  std::function<void(const std::string&)> on_error;
  /// True when no command is pending or in flight.
  bool idle() const { return pending_.empty() && inflight_.empty(); }
  /// Rising clock edges the module raised (the RTL cycles simulated).
  uint64_t clock_edges() const { return edges_; }

 private:
  struct Command {
    isa::MmadArgs args;
    uint64_t tag = 0, issue_cycle = 0, accepted_cycle = 0, deadline_cycle = 0;
    uint32_t rtl_tag = 0;  // the tag the RTL carries (cube_top.sv's 32-bit `tag`)
  };
  enum class Phase : uint8_t { reset, drive, rise, settle, sample, idle };
  void tick();
  /// Instantiates the verilated model V (one of the shapes) as "cube" and binds its ports.
  template <class V>
  void make_top();

  std::unique_ptr<sc_core::sc_module> top_;
  uint32_t mem_id_;
  sc_core::sc_signal<bool> clk_{"clk"}, rst_n_{"rst_n"}, start_{"start"}, ready_{"ready"},
      done_{"done"}, accumulate_{"accumulate"}, a_signed_{"a_signed"}, b_signed_{"b_signed"};
  sc_core::sc_signal<uint32_t> mem_sig_{"mem_id"}, m1_{"m1"}, k1_{"k1"}, n1_{"n1"},
      a_base_{"a_base"}, b_base_{"b_base"}, c_base_{"c_base"}, tag_{"tag"}, done_tag_{"done_tag"};
  sc_core::sc_event wake_;
  std::deque<Command> pending_, inflight_;
  Phase phase_ = Phase::reset;
  int reset_step_ = 0;
  bool ready_seen_ = false;  // `ready` during the last clocked cycle
  uint32_t next_tag_ = 0;    // the RTL's 32-bit tag of the next command
  uint64_t edges_ = 0;
};

}  // namespace tessel::rtl
