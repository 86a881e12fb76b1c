// RtlCube (rtl_cube.h): the SystemC side of the verilated cube, and the DPI-C functions through
// which cube_top.sv reads and writes a core's scratchpads.
#include "simulator/rtl/rtl_cube.h"

#include <bit>
#include <cstring>
#include <vector>

#include "Vtessel_cube_top.h"
#include "Vtessel_cube_top__Dpi.h"
#include "Vtessel_cube_top_k2.h"
#include "compiler/support/error.h"

#ifndef TESSEL_RTL_CUBE_K2
#error "TESSEL_RTL_CUBE_M/K/K2/N/LATENCY: the verilated cube's parameters (CMakeLists.txt)"
#endif

namespace tessel::rtl {

namespace {

static_assert(
    std::endian::native == std::endian::little,
    "svBitVecVal words hold bytes little-endian: the DPI copies assume a little-endian host");

// The memories of the live RtlCube modules, indexed by their mem_id (cube_top.sv's `mem_id`).
// SystemC runs one process at a time, and every simulation of a process runs on one thread.
struct Slot {
  isa::CoreMemory* memory = nullptr;
  RtlCube* owner = nullptr;
  std::function<void(const std::string&)>* on_error = nullptr;
};
std::vector<Slot>& slots() {
  static std::vector<Slot> s;
  return s;
}

uint32_t register_memory(isa::CoreMemory* memory, RtlCube* owner,
                         std::function<void(const std::string&)>* on_error) {
  auto& s = slots();
  for (size_t i = 0; i < s.size(); ++i)
    if (!s[i].memory) {
      s[i] = {memory, owner, on_error};
      return static_cast<uint32_t>(i);
    }
  s.push_back({memory, owner, on_error});
  return static_cast<uint32_t>(s.size() - 1);
}

// The bytes [offset, offset + bytes) of `scope` in memory `mem`; nullptr (after reporting) when
// they fall outside it.
uint8_t* bytes_at(uint32_t mem, isa::Scope scope, uint32_t offset, uint32_t bytes,
                  const char* what) {
  auto& s = slots();
  if (mem >= s.size() || !s[mem].memory)
    internal_fail("tessel_cube_top: DPI {} with unknown mem_id {}", what, mem);
  const isa::CoreMemory& m = *s[mem].memory;
  const uint64_t size = m.size[int(scope)];
  if (uint64_t{offset} + bytes > size) {
    const std::string msg = fmt::format(
        "RTL cube {} of {} bytes [{}, {}) is outside the {}-byte {}", what, isa::scope_name(scope),
        offset, uint64_t{offset} + bytes, size, isa::scope_name(scope));
    if (s[mem].on_error && *s[mem].on_error) (*s[mem].on_error)(msg);
    return nullptr;
  }
  return m.base[int(scope)] + offset;
}

void read_into(uint32_t mem, isa::Scope scope, uint32_t offset, uint32_t bytes, svBitVecVal* data) {
  const uint8_t* p = bytes_at(mem, scope, offset, bytes, "read");
  if (p)
    std::memcpy(data, p, bytes);
  else
    std::memset(data, 0, bytes);
}

}  // namespace

std::vector<RtlCubeShape> verilated_cube_shapes() {
  return {{TESSEL_RTL_CUBE_M, TESSEL_RTL_CUBE_K, TESSEL_RTL_CUBE_N, TESSEL_RTL_CUBE_LATENCY},
          {TESSEL_RTL_CUBE_M, TESSEL_RTL_CUBE_K2, TESSEL_RTL_CUBE_N, TESSEL_RTL_CUBE_LATENCY}};
}

void check_rtl_cube_config(const npu::HwConfig& hw, const std::string& where) {
  const npu::CubeFractal f = hw.core.cube.int8_fractal();
  std::string shapes;
  for (const RtlCubeShape& v : verilated_cube_shapes()) {
    if (f.m == v.m && f.k == v.k && f.n == v.n &&
        hw.core.cube.pipeline_latency_cycles == v.latency_cycles)
      return;
    shapes += fmt::format("{}{} x {} x {}", shapes.empty() ? "" : " or ", v.m, v.k, v.n);
  }
  fail(
      "{}: core.cube.model: rtl needs a cube the RTL was verilated for, int8 fractal {} with "
      "pipeline_latency_cycles {}; this config has {} x {} x {} ({}) and {}",
      where, shapes, verilated_cube_shapes().front().latency_cycles, f.m, f.k, f.n,
      hw.core.cube.int8.m > 0 ? "core.cube.int8" : "core.cube m, k, n",
      hw.core.cube.pipeline_latency_cycles);
}

template <class V>
void RtlCube::make_top() {
  auto top = std::make_unique<V>("cube");
  top->clk(clk_);
  top->rst_n(rst_n_);
  top->mem_id(mem_sig_);
  top->start(start_);
  top->ready(ready_);
  top->m1(m1_);
  top->k1(k1_);
  top->n1(n1_);
  top->accumulate(accumulate_);
  top->a_signed(a_signed_);
  top->b_signed(b_signed_);
  top->a_base(a_base_);
  top->b_base(b_base_);
  top->c_base(c_base_);
  top->tag(tag_);
  top->done(done_);
  top->done_tag(done_tag_);
  top_ = std::move(top);
}

RtlCube::RtlCube(sc_core::sc_module_name name, isa::CoreMemory& memory, const RtlCubeShape& shape)
    : sc_core::sc_module(name) {
  for (isa::Scope s : {isa::Scope::l0a, isa::Scope::l0b, isa::Scope::l0c})
    if (!memory.base[int(s)])
      fail("RTL cube: {} is not mapped (core.cube.model: rtl needs a functional run)",
           isa::scope_name(s));
  const std::vector<RtlCubeShape> shapes = verilated_cube_shapes();
  auto is = [&](const RtlCubeShape& v) {
    return shape.m == v.m && shape.k == v.k && shape.n == v.n &&
           shape.latency_cycles == v.latency_cycles;
  };
  if (is(shapes[0]))
    make_top<Vtessel_cube_top>();
  else if (is(shapes[1]))
    make_top<Vtessel_cube_top_k2>();
  else
    internal_fail("RtlCube: no verilated cube of {} x {} x {}, latency {}", shape.m, shape.k,
                  shape.n, shape.latency_cycles);
  mem_id_ = register_memory(&memory, this, &on_error);
  mem_sig_.write(mem_id_);
  SC_METHOD(tick);  // runs at time 0 (initialisation): the reset sequence
}

RtlCube::~RtlCube() {
  auto& s = slots();
  if (mem_id_ < s.size()) s[mem_id_] = {};
}

void RtlCube::issue(const isa::MmadArgs& a, uint64_t tag, uint64_t deadline_cycle) {
  if (!isa::mmad_int8(a) || !isa::is_cube_int8_dtype(a.b_dtype))
    internal_fail("RtlCube::issue: mmad {} x {} is not the int8 mode", isa::dtype_name(a.a_dtype),
                  isa::dtype_name(a.b_dtype));
  for (const isa::MemRef* r : {&a.a, &a.b, &a.c})
    if (r->offset < 0 || r->offset > INT64_C(0xffffffff))
      internal_fail("RtlCube::issue: address {} does not fit the RTL's 32-bit ports", r->offset);
  Command c;
  c.args = a;
  c.tag = tag;
  c.issue_cycle = sc_core::sc_time_stamp().value();
  c.deadline_cycle = deadline_cycle;
  pending_.push_back(c);
  if (phase_ == Phase::idle) wake_.notify(sc_core::SC_ZERO_TIME);
}

// The clock process: a state machine over delta cycles. Per clocked cycle t (the edge at time t
// ends cycle t - 1): `drive` writes the inputs of cycle t - 1 (a pending command issued in a cycle
// <= t - 1, if the RTL was ready in it), `rise` raises clk, `settle` lets the verilated model
// evaluate the edge, `sample` reads its outputs of cycle t (ready, done) and lowers clk.
void RtlCube::tick() {
  const uint64_t now = sc_core::sc_time_stamp().value();
  switch (phase_) {
    case Phase::reset:
      // Two rising edges with rst_n low at time 0, then rst_n high; no simulated time passes.
      // Steps: 0 rst_n low, 1 clk high, 2 the model evaluates, 3 clk low, 4 high, 5, 6 low.
      switch (reset_step_++) {
        case 0:
          rst_n_.write(false);
          break;
        case 1:
        case 4:
          clk_.write(true);
          break;
        case 3:
          clk_.write(false);
          break;
        case 6:
          clk_.write(false);
          rst_n_.write(true);
          ready_seen_ = true;  // ready = !busy after reset
          if (pending_.empty()) {
            phase_ = Phase::idle;
            sc_core::next_trigger(wake_);
          } else {
            phase_ = Phase::drive;
            sc_core::next_trigger(1, sc_core::SC_NS);
          }
          return;
        default:
          break;
      }
      sc_core::next_trigger(sc_core::SC_ZERO_TIME);
      return;
    case Phase::idle:
      phase_ = Phase::drive;
      sc_core::next_trigger(1, sc_core::SC_NS);  // the edge that ends the issue cycle
      return;
    case Phase::drive: {
      bool take = false;
      if (!pending_.empty() && pending_.front().issue_cycle < now && ready_seen_) {
        Command c = pending_.front();
        pending_.pop_front();
        const isa::MmadArgs& a = c.args;
        m1_.write(a.m1);
        k1_.write(a.k1);
        n1_.write(a.n1);
        accumulate_.write(a.accumulate);
        a_signed_.write(a.a_dtype == isa::DType::i8);
        b_signed_.write(a.b_dtype == isa::DType::i8);
        a_base_.write(static_cast<uint32_t>(a.a.offset));
        b_base_.write(static_cast<uint32_t>(a.b.offset));
        c_base_.write(static_cast<uint32_t>(a.c.offset));
        c.rtl_tag = next_tag_++;
        tag_.write(c.rtl_tag);
        c.accepted_cycle = now - 1;
        inflight_.push_back(c);
        take = true;
      }
      start_.write(take);
      phase_ = Phase::rise;
      sc_core::next_trigger(sc_core::SC_ZERO_TIME);
      return;
    }
    case Phase::rise:
      clk_.write(true);
      ++edges_;
      phase_ = Phase::settle;
      sc_core::next_trigger(sc_core::SC_ZERO_TIME);
      return;
    case Phase::settle:
      phase_ = Phase::sample;
      sc_core::next_trigger(sc_core::SC_ZERO_TIME);
      return;
    case Phase::sample: {
      clk_.write(false);
      start_.write(false);
      ready_seen_ = ready_.read();
      if (done_.read()) {
        if (inflight_.empty())
          internal_fail("RTL cube: done (tag {}) with no command in flight", done_tag_.read());
        const Command c = inflight_.front();
        inflight_.pop_front();
        if (done_tag_.read() != c.rtl_tag)
          internal_fail("RTL cube: done with tag {}, expected {} (commands complete in order)",
                        done_tag_.read(), c.rtl_tag);
        RtlCompletion done;
        done.tag = c.tag;
        done.issue_cycle = c.issue_cycle;
        done.accepted_cycle = c.accepted_cycle;
        done.completion_cycle = now + 1;  // done is high in cycle `now`
        if (on_complete) on_complete(done);
      }
      // A command whose done would have been seen by now (done high in the cycle before its
      // deadline) is late. Commands complete in order: the oldest is checked.
      const Command* oldest = !inflight_.empty()  ? &inflight_.front()
                              : !pending_.empty() ? &pending_.front()
                                                  : nullptr;
      if (oldest && oldest->deadline_cycle != 0 && now + 1 >= oldest->deadline_cycle && on_error)
        on_error(fmt::format(
            "mmad issued in cycle {} is not done by cycle {} (issue + npu::instruction_cost); the "
            "RTL {}",
            oldest->issue_cycle, oldest->deadline_cycle,
            inflight_.empty() ? "has not taken it yet (not ready)"
                              : fmt::format("took it in cycle {}", oldest->accepted_cycle)));
      if (idle()) {
        phase_ = Phase::idle;
        sc_core::next_trigger(wake_);
      } else {
        phase_ = Phase::drive;
        sc_core::next_trigger(1, sc_core::SC_NS);
      }
      return;
    }
  }
}

}  // namespace tessel::rtl

// ---------------------------------------------------------------------------------------------
// DPI-C imports of cube_top.sv: synchronous scratchpad reads and the write of a C block.

extern "C" void tessel_rtl_read_a(unsigned int mem, unsigned int offset, unsigned int bytes,
                                  svBitVecVal* data) {
  tessel::rtl::read_into(mem, tessel::isa::Scope::l0a, offset, bytes, data);
}

extern "C" void tessel_rtl_read_b(unsigned int mem, unsigned int offset, unsigned int bytes,
                                  svBitVecVal* data) {
  tessel::rtl::read_into(mem, tessel::isa::Scope::l0b, offset, bytes, data);
}

extern "C" void tessel_rtl_read_c(unsigned int mem, unsigned int offset, unsigned int bytes,
                                  svBitVecVal* data) {
  tessel::rtl::read_into(mem, tessel::isa::Scope::l0c, offset, bytes, data);
}

extern "C" void tessel_rtl_write_c(unsigned int mem, unsigned int offset, unsigned int bytes,
                                   const svBitVecVal* data) {
  uint8_t* p = tessel::rtl::bytes_at(mem, tessel::isa::Scope::l0c, offset, bytes, "write");
  if (p) std::memcpy(p, data, bytes);
}
