// MethodKernel: SystemC 2.3.4's scheduling of SC_METHOD processes, reproduced in compact arrays
// and run inside one SystemC method (NpuTop::kernel_method), so that a run of N cores costs one
// SystemC process instead of 4 N and its events are a few words each instead of SystemC objects.
//
// What runs first matters (the cores arbitrate for the DRAM, the L2 and the multicast table in
// the order their processes run), so the kernel keeps every ordering rule of the SystemC kernel
// (sysc/kernel/sc_simcontext.cpp, sc_event.cpp, sc_method_process.cpp, sc_runnable_int.h and
// sysc/utils/sc_pq.cpp of the 2.3.4 release) for the operations the simulator uses, and a run
// makes the same processes run in the same order at the same times as with one SC_METHOD per
// unit:
//  - Initialisation: every process is runnable, in the order it was added (SystemC pushes the
//    processes of its process table, newest first, at the front of the runnable queue).
//  - Evaluate phase: the runnable queue is one FIFO (SystemC's push and pop lists, toggled when
//    the pop list is empty, behave as one); a process made runnable while it is queued stays
//    where it is.
//  - notify(e) is an immediate notification (sc_event::notify()): the processes waiting on e
//    (next_trigger(e), in the order they started waiting) become runnable at once, in
//    sc_event::trigger's order: the first, then the last, the one before it, ..., the second (it
//    removes each triggered waiter by moving the last one into its place). A process does not
//    trigger itself (it keeps waiting, as without SC_ENABLE_IMMEDIATE_SELF_NOTIFICATIONS).
//  - wait_cycles(d) is next_trigger(sc_time(d)) with d > 0: an entry in the timed-event heap, a
//    binary heap ordered by time alone whose insert and extract are sc_ppq_base's, step for step,
//    so that entries of equal time come out in SystemC's order.
//  - Timed phase (no process runnable): time moves to the heap's top and every entry of that
//    time is extracted, in heap order, each making its process runnable.
//  - No delta notifications, no update phase: the simulator uses neither (no zero-time waits, no
//    primitive channels); the run ends when nothing is runnable and the heap is empty (SystemC's
//    starvation) or at stop().
// A process runs as a plain function call (Callback); where an SC_METHOD returns after
// next_trigger, a process returns after wait_event / wait_cycles (at most one per activation),
// and one that returns without either never runs again.
//
// Time: one unit = one core cycle; the modules read it from now() (the simulation runs inside
// one activation of one SystemC method, so SystemC's own time stays 0).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessel::sim {

class MethodKernel {
 public:
  /// A process body: called as fn(object, arg) each time the process runs.
  using Callback = void (*)(void* object, uint32_t arg);
  /// A process's prefetch hint: prefetch(object, arg, deep) asks the host's caches, ahead of
  /// time, for the memory the process's next activation reads, and changes nothing. The kernel
  /// calls it with deep = false two activations before the process runs (where that is known:
  /// lines at fixed addresses, which it must not read) and with deep = true one activation
  /// before, if the shallow hint came first (lines found by reading the first ones); otherwise
  /// with deep = false then too. At 1,024 cores a core's memory is out of the caches each time it
  /// runs; this overlaps those misses with the activations before it. Which process runs next is
  /// known from the runnable queue and the heap's top, and the hint is only a hint: the order of
  /// the activations does not depend on it.
  using Prefetch = void (*)(void* object, uint32_t arg, bool deep);
  static constexpr uint32_t kNone = UINT32_MAX;

  /// Adds a process (runnable at the start, after the ones added before it); returns its id.
  uint32_t add_process(void* object, Callback fn, uint32_t arg, Prefetch prefetch = nullptr);
  /// Adds an event no process waits on yet; returns its id.
  uint32_t add_event();

  /// The current time in cycles.
  uint64_t now() const { return now_; }
  /// The running process (kNone outside an activation).
  uint32_t current() const { return current_; }

  /// Immediate notification of `event`: its waiters become runnable (the order: header comment).
  void notify(uint32_t event) {
    Event& e = events_[event];
    if (e.overflow == kNone) {
      const uint32_t p = e.waiter;
      if (p == kNone || p == current_) return;  // none, or the notifier itself keeps waiting
      e.waiter = kNone;
      processes_[p].waiting = false;
      make_runnable(p);
      return;
    }
    notify_many(e);
  }
  /// True when a process waits on `event`.
  bool has_waiter(uint32_t event) const {
    const Event& e = events_[event];
    return e.waiter != kNone || e.overflow != kNone;
  }
  /// next_trigger(event) of the running process: it runs again after `event` is notified.
  void wait_event(uint32_t event) {
    begin_wait();
    Event& e = events_[event];
    if (e.waiter == kNone && e.overflow == kNone)
      e.waiter = current_;
    else
      add_waiter(e, current_);
  }
  /// next_trigger(sc_time(cycles)) of the running process, cycles > 0: it runs again at now() +
  /// cycles.
  void wait_cycles(uint64_t cycles) {
    begin_wait();
    heap_insert({now_ + cycles, current_});
  }

  /// Runs the simulation: evaluate and timed phases until no process is runnable and no timed
  /// entry is left, or until stop() (checked after every activation).
  void run();
  /// With `yield` set, run() returns at every time advance instead of moving time itself
  /// (resumable(): the next run() continues at next_time()), so that the SystemC method running
  /// the kernel can hand the advance to SystemC (next_trigger) and SystemC processes outside the
  /// kernel (the verilated RTL cube of core.cube.model: rtl) run at the same cycles.
  void set_yield_at_time_advance(bool yield) { yield_at_time_advance_ = yield; }
  /// True when run() returned at a time advance (yield mode) and the run is not over.
  bool resumable() const { return advance_pending_ && !stopped_; }
  /// The time the next run() continues at (resumable() only).
  uint64_t next_time() const { return heap_[1].time; }

  /// Ends run() after the running activation (an error: RunState::fail_with).
  void stop() { stopped_ = true; }
  bool stopped() const { return stopped_; }

 private:
  struct Process {
    void* object = nullptr;
    Callback fn = nullptr;
    Prefetch prefetch = nullptr;
    uint32_t arg = 0;
    bool runnable = false;  // in the runnable queue
    bool waiting = false;   // waits on an event or a timed entry (a wait of this activation)
  };
  /// An event's waiters: the first inline (most events have one), the others in overflow_[].
  struct Event {
    uint32_t waiter = kNone;
    uint32_t overflow = kNone;  // index into overflow_ when more than one process waited
  };
  /// A timed-event heap entry (sc_event_timed: the notify time; here the process it wakes).
  struct Timed {
    uint64_t time;
    uint32_t process;
  };

  void make_runnable(uint32_t p) {
    Process& pr = processes_[p];
    if (pr.runnable) return;  // trigger_dynamic: an already runnable process is not queued twice
    pr.runnable = true;
    runnable_[(head_ + size_) & mask_] = p;
    ++size_;
  }
  void advance();  // timed phase: time moves to the heap's top, its entries become runnable
  void begin_wait();
  void add_waiter(Event& e, uint32_t p);
  void notify_many(Event& e);
  void heap_insert(Timed t);
  Timed heap_extract_top();
  void grow_runnable();
  void hint(uint32_t p, bool deep) const {
    const Process& n = processes_[p];
    if (n.prefetch) n.prefetch(n.object, n.arg, deep);
  }
  /// Prefetch hints for the next two activations (Prefetch), before the running one.
  void hint_ahead();
  /// The next activation's hint: deep when `p` had its shallow one.
  void hint_next(uint32_t p) const { hint(p, p == shallow_[0] || p == shallow_[1]); }

  std::vector<Process> processes_;
  std::vector<Event> events_;
  std::vector<std::vector<uint32_t>> overflow_;  // per multi-waiter event: waiters 2, 3, ...
  std::vector<uint32_t> free_overflow_;          // overflow_ slots not in use
  // The runnable FIFO: a ring of process ids (a process is queued at most once).
  std::vector<uint32_t> runnable_;
  size_t head_ = 0, size_ = 0, mask_ = 0;
  std::vector<Timed> heap_{Timed{0, kNone}};  // 1-based, as sc_ppq_base (heap_[0] unused)
  std::vector<uint32_t> scratch_;             // notify_many's list of waiters
  uint64_t now_ = 0;
  uint32_t current_ = kNone;
  uint32_t shallow_[2] = {kNone, kNone};  // the processes the last hint_ahead hinted shallow
  bool stopped_ = false;
  bool yield_at_time_advance_ = false;
  bool advance_pending_ = false;  // run() returned for a time advance (yield mode)
};

}  // namespace tessel::sim
