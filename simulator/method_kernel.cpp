// MethodKernel: the rare paths (events with several waiters, growth) and the run loop; the
// ordering rules are the header's.
#include "simulator/method_kernel.h"

#include <utility>

#include "compiler/support/error.h"

namespace tessel::sim {

uint32_t MethodKernel::add_process(void* object, Callback fn, uint32_t arg, Prefetch prefetch) {
  const auto id = static_cast<uint32_t>(processes_.size());
  processes_.push_back(Process{object, fn, prefetch, arg, false, false});
  if (processes_.size() > runnable_.size()) grow_runnable();
  make_runnable(id);  // initialisation: runnable in the order of creation
  return id;
}

uint32_t MethodKernel::add_event() {
  events_.push_back(Event{});
  return static_cast<uint32_t>(events_.size() - 1);
}

void MethodKernel::grow_runnable() {
  // The ring holds every process at most once: a power of two >= the process count.
  size_t capacity = runnable_.empty() ? 64 : runnable_.size() * 2;
  while (capacity < processes_.size()) capacity *= 2;
  std::vector<uint32_t> ring(capacity, kNone);
  for (size_t i = 0; i < size_; ++i) ring[i] = runnable_[(head_ + i) & mask_];
  runnable_ = std::move(ring);
  head_ = 0;
  mask_ = capacity - 1;
}

void MethodKernel::begin_wait() {
  if (current_ == kNone) internal_fail("MethodKernel: a wait outside a process activation");
  Process& p = processes_[current_];
  // An SC_METHOD's second next_trigger in one activation replaces the first; no unit of the
  // simulator does that, and replacing a timed entry would leave a dead entry in the heap that
  // changes its order, so it is refused instead of half reproduced.
  if (p.waiting) internal_fail("MethodKernel: process {} waits twice in one activation", current_);
  p.waiting = true;
}

void MethodKernel::add_waiter(Event& e, uint32_t p) {
  if (e.overflow == kNone) {
    if (free_overflow_.empty()) {
      overflow_.emplace_back();
      e.overflow = static_cast<uint32_t>(overflow_.size() - 1);
    } else {
      e.overflow = free_overflow_.back();
      free_overflow_.pop_back();
    }
  }
  // Waiters in the order they waited: `waiter`, then overflow_[e.overflow] (sc_event's
  // m_methods_dynamic, add_dynamic's push_back). `waiter` is empty only if the list is.
  if (e.waiter == kNone)
    e.waiter = p;
  else
    overflow_[e.overflow].push_back(p);
}

void MethodKernel::notify_many(Event& e) {
  // sc_event::trigger over m_methods_dynamic: from the front, each triggered waiter replaced by
  // the last one (which is looked at next); a waiter that is the notifier stays.
  std::vector<uint32_t>& rest = overflow_[e.overflow];
  std::vector<uint32_t>& list = scratch_;
  list.clear();
  if (e.waiter != kNone) list.push_back(e.waiter);
  list.insert(list.end(), rest.begin(), rest.end());
  int last = static_cast<int>(list.size()) - 1;
  for (int i = 0; i <= last; ++i) {
    const uint32_t p = list[static_cast<size_t>(i)];
    if (p == current_) continue;  // trigger_dynamic returns false: it keeps waiting
    list[static_cast<size_t>(i)] = list[static_cast<size_t>(last)];
    --last;
    --i;
    processes_[p].waiting = false;
    make_runnable(p);
  }
  list.resize(static_cast<size_t>(last + 1));
  rest.clear();
  if (list.empty()) {
    e.waiter = kNone;
  } else {
    e.waiter = list[0];
    rest.assign(list.begin() + 1, list.end());
  }
  if (rest.empty()) {
    free_overflow_.push_back(e.overflow);
    e.overflow = kNone;
  }
}

// sc_ppq_base::insert with sc_notify_time_compare: the new entry moves up past every parent of a
// later time (an equal time stops it).
void MethodKernel::heap_insert(Timed t) {
  heap_.push_back(t);
  size_t i = heap_.size() - 1;
  while (i > 1 && heap_[i >> 1].time > t.time) {
    heap_[i] = heap_[i >> 1];
    i >>= 1;
  }
  heap_[i] = t;
}

// sc_ppq_base::extract_top and heapify: the last entry moves to the top and down, each step to
// the earlier child (the left one on a tie between them), while that child is earlier.
MethodKernel::Timed MethodKernel::heap_extract_top() {
  const Timed top = heap_[1];
  const size_t n = heap_.size() - 2;  // the size after the extraction
  heap_[1] = heap_.back();
  heap_.pop_back();
  size_t i = 1;
  for (size_t l = 2; l <= n; l = 2 * i) {
    size_t largest = heap_[l].time < heap_[i].time ? l : i;
    const size_t r = l + 1;
    if (r <= n && heap_[r].time < heap_[largest].time) largest = r;
    if (largest == i) break;
    std::swap(heap_[i], heap_[largest]);
    i = largest;
  }
  return top;
}

void MethodKernel::advance() {
  now_ = heap_[1].time;
  do {
    const Timed t = heap_extract_top();
    processes_[t.process].waiting = false;
    make_runnable(t.process);
  } while (heap_.size() > 1 && heap_[1].time == now_);
}

void MethodKernel::hint_ahead() {
  // After the running one: the queue's processes, then the heap's (its top, then one of the top's
  // children), unless the running one wakes others first.
  const size_t n = heap_.size() - 1;
  uint32_t s0 = kNone, s1 = kNone;
  if (size_ >= 2) {
    s0 = runnable_[(head_ + 1) & mask_];
    hint_next(runnable_[head_]);
  } else if (size_ == 1) {
    if (n >= 1) s0 = heap_[1].process;
    hint_next(runnable_[head_]);
  } else if (n >= 1) {
    if (n >= 2) s0 = heap_[2].process;
    if (n >= 3) s1 = heap_[3].process;
    hint_next(heap_[1].process);
  }
  if (s0 != kNone) hint(s0, false);
  if (s1 != kNone) hint(s1, false);
  shallow_[0] = s0;
  shallow_[1] = s1;
}

void MethodKernel::run() {
  if (stopped_) return;    // stopped from outside the kernel (an RTL cube's check failed)
  if (advance_pending_) {  // resumed by SystemC at the time the last run() stopped for
    advance_pending_ = false;
    advance();
  }
  for (;;) {
    // Evaluate phase: the runnable processes in FIFO order, including the ones they wake.
    while (size_ != 0) {
      const uint32_t p = runnable_[head_];
      head_ = (head_ + 1) & mask_;
      --size_;
      Process& pr = processes_[p];
      pr.runnable = false;
      pr.waiting = false;
      hint_ahead();
      current_ = p;
      pr.fn(pr.object, pr.arg);
      current_ = kNone;
      if (stopped_) return;
    }
    // Timed phase: the next time, and every entry of that time in heap order.
    if (heap_.size() <= 1) return;  // starvation: the run is over
    if (yield_at_time_advance_) {   // SystemC moves time (and runs its own processes) first
      advance_pending_ = true;
      return;
    }
    advance();
  }
}

}  // namespace tessel::sim
