// MethodKernel (simulator/method_kernel.h) against SystemC itself: the same random scripts of
// notifications, event waits and timed waits run as SystemC SC_METHODs and as kernel processes,
// and every activation (time, process) must come in the same order. Many processes share few
// events (events with many waiters) and the timed waits are 1-3 cycles (many entries of equal
// time in the timed-event heap, whose order SystemC's heap decides).
#include <gtest/gtest.h>

#include <systemc>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

#include "simulator/method_kernel.h"

namespace {

using tessel::sim::MethodKernel;

/// What activation `k` of process `p` does: notify up to two events, then wait on an event, wait
/// 1-3 cycles or end (always after `max_activations`).
struct Step {
  std::vector<int> notify;
  enum { wait_event, wait_cycles, end } kind;
  int event = 0;
  uint64_t cycles = 0;
};

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Script {
  uint64_t seed;
  int processes, events, max_activations;
  Step step(int p, int k) const {
    uint64_t r = mix(seed * 1000003 + static_cast<uint64_t>(p) * 7919 + static_cast<uint64_t>(k));
    Step s;
    const int n = static_cast<int>(r % 3);
    r = mix(r);
    for (int i = 0; i < n; ++i, r = mix(r)) s.notify.push_back(static_cast<int>(r % events));
    if (k + 1 >= max_activations) {
      s.kind = Step::end;
    } else if (r % 100 < 45) {
      s.kind = Step::wait_event;
      s.event = static_cast<int>(mix(r) % events);
    } else if (r % 100 < 95) {
      s.kind = Step::wait_cycles;
      s.cycles = 1 + mix(r) % 3;
    } else {
      s.kind = Step::end;
    }
    return s;
  }
};

using Trace = std::vector<std::pair<uint64_t, int>>;  // (time, process) per activation

// The script as SystemC SC_METHODs in a fresh simulation context (as tessel's Simulator makes one).
Trace run_systemc(const Script& script) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  auto* context = new sc_core::sc_simcontext();
  sc_core::sc_curr_simcontext = context;
  sc_core::sc_default_global_context = context;
  sc_core::sc_set_time_resolution(1, sc_core::SC_NS);
  Trace trace;
  {
    std::vector<std::unique_ptr<sc_core::sc_event>> events;
    for (int e = 0; e < script.events; ++e) events.push_back(std::make_unique<sc_core::sc_event>());
    std::vector<int> activations(static_cast<size_t>(script.processes), 0);
    sc_core::sc_spawn_options opts;
    opts.spawn_method();
    for (int p = 0; p < script.processes; ++p)
      sc_core::sc_spawn(
          [&, p] {
            trace.emplace_back(sc_core::sc_time_stamp().value(), p);
            const Step s = script.step(p, activations[static_cast<size_t>(p)]++);
            for (int e : s.notify) events[static_cast<size_t>(e)]->notify();
            if (s.kind == Step::wait_event)
              sc_core::next_trigger(*events[static_cast<size_t>(s.event)]);
            else if (s.kind == Step::wait_cycles)
              sc_core::next_trigger(sc_core::sc_time::from_value(s.cycles));
          },
          sc_core::sc_gen_unique_name("p"), &opts);
    sc_core::sc_start();
  }
  delete context;
  sc_core::sc_curr_simcontext = nullptr;
  sc_core::sc_default_global_context = nullptr;
  return trace;
}

struct KernelRun {
  const Script* script;
  MethodKernel kernel;
  std::vector<uint32_t> events;
  std::vector<int> activations;
  Trace trace;
  static void body(void* self, uint32_t p) {
    auto& r = *static_cast<KernelRun*>(self);
    r.trace.emplace_back(r.kernel.now(), static_cast<int>(p));
    const Step s = r.script->step(static_cast<int>(p), r.activations[p]++);
    for (int e : s.notify) r.kernel.notify(r.events[static_cast<size_t>(e)]);
    if (s.kind == Step::wait_event)
      r.kernel.wait_event(r.events[static_cast<size_t>(s.event)]);
    else if (s.kind == Step::wait_cycles)
      r.kernel.wait_cycles(s.cycles);
  }
};

Trace run_kernel(const Script& script) {
  KernelRun r;
  r.script = &script;
  r.activations.assign(static_cast<size_t>(script.processes), 0);
  for (int p = 0; p < script.processes; ++p)
    EXPECT_EQ(r.kernel.add_process(&r, &KernelRun::body, static_cast<uint32_t>(p)),
              static_cast<uint32_t>(p));
  for (int e = 0; e < script.events; ++e) r.events.push_back(r.kernel.add_event());
  r.kernel.run();
  return std::move(r.trace);
}

TEST(MethodKernel, ActivationOrderIsSystemCs) {
  // 40 scripts: 2-200 processes on 1-8 events; 20-60 activations each.
  size_t activations = 0, multi_waiter_scripts = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Script s{seed, static_cast<int>(2 + mix(seed) % 199), static_cast<int>(1 + mix(seed + 99) % 8),
             static_cast<int>(20 + mix(seed + 7) % 41)};
    const Trace want = run_systemc(s);
    const Trace got = run_kernel(s);
    ASSERT_EQ(got.size(), want.size()) << "seed " << seed;
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(got[i], want[i]) << "seed " << seed << " activation " << i;
    activations += want.size();
    if (s.processes > 2 * s.events) ++multi_waiter_scripts;
  }
  EXPECT_GT(activations, 10000u);  // the scripts do run (not just the initial activations)
  EXPECT_GT(multi_waiter_scripts, 20u);
}

TEST(MethodKernel, TiesInTheTimedHeapComeOutInSystemCsOrder) {
  // 64 processes on one event, half their activations a timed wait of 1-3 cycles: a time step
  // extracts dozens of entries of equal time, in the order of sc_ppq's heap (neither FIFO nor by
  // process).
  Script s{12345, 64, 1, 30};
  const Trace want = run_systemc(s);
  ASSERT_EQ(run_kernel(s), want);
  // The order within a time step is not the process order (so the test can tell the heap's).
  bool reordered = false;
  for (size_t i = 1; i < want.size(); ++i)
    if (want[i].first == want[i - 1].first && want[i].second < want[i - 1].second) reordered = true;
  EXPECT_TRUE(reordered);
}

TEST(MethodKernel, AWaitOutsideAnActivationOrTwiceInOneFails) {
  MethodKernel k;
  EXPECT_ANY_THROW(k.wait_cycles(1));
  struct Twice {
    MethodKernel* k;
    static void body(void* self, uint32_t) {
      auto* t = static_cast<Twice*>(self);
      t->k->wait_cycles(1);
      t->k->wait_cycles(2);
    }
  } twice{&k};
  k.add_process(&twice, &Twice::body, 0);
  EXPECT_ANY_THROW(k.run());
}

}  // namespace
