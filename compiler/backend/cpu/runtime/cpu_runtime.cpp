// The CPU runtime (see cpu_runtime.h): a fork-join thread pool (dynamic chunk claiming) with
// spinning workers that fall asleep after a short wait, per-thread scratch buffers and a clock.
#include "compiler/backend/cpu/runtime/cpu_runtime.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace {

thread_local bool tl_in_parallel = false;

class Pool {
 public:
  static Pool& get() {
    static Pool pool;
    return pool;
  }

  int threads() const { return active_; }

  int set_threads(int n) {
    std::lock_guard<std::mutex> run(run_mutex_);
    const int prev = active_;
    if (n < 1) n = 1;
    grow(n);
    active_ = n;
    return prev;
  }

  /// Fork-join with dynamic chunk claiming: the range is cut into up to 4 chunks per thread;
  /// the caller and every awake worker claim chunks until none is left, and the caller waits
  /// only for chunks already claimed. A worker that is descheduled (an oversubscribed machine)
  /// therefore delays nothing: the caller runs its share.
  void run(int64_t n, tessel_cpu_task_fn fn, void* closure) {
    if (n <= 0) return;
    if (active_ <= 1 || n < 2 || tl_in_parallel) {
      fn(closure, 0, n);
      return;
    }
    std::lock_guard<std::mutex> run(run_mutex_);
    const int64_t parts = std::min<int64_t>(n, 4 * static_cast<int64_t>(active_));
    uint64_t gen;
    {
      std::lock_guard<std::mutex> lk(mutex_);
      fn_ = fn;
      closure_ = closure;
      n_ = n;
      parts_ = parts;
      done_.store(0, std::memory_order_relaxed);
      gen = generation_.fetch_add(1, std::memory_order_acq_rel) + 1;
      claim_.store(gen << 32, std::memory_order_release);
    }
    cv_.notify_all();
    tl_in_parallel = true;
    int64_t part;
    while ((part = claim(gen, parts)) >= 0) {
      fn(closure, chunk_begin(part, n, parts), chunk_begin(part + 1, n, parts));
      done_.fetch_add(1, std::memory_order_acq_rel);
    }
    tl_in_parallel = false;
    while (done_.load(std::memory_order_acquire) != parts) std::this_thread::yield();
  }

 private:
  Pool() {
    int n = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (const char* env = std::getenv("TESSEL_CPU_THREADS")) {
      const int v = std::atoi(env);
      if (v >= 1 && v <= 1024) n = v;
    }
    grow(n);
    active_ = n;
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(mutex_);
      stop_ = true;
      generation_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

  static int64_t chunk_begin(int64_t part, int64_t n, int64_t parts) { return n * part / parts; }

  /// The next unclaimed chunk of job `gen` (claim_ holds generation << 32 | next chunk), or -1
  /// when that job has no chunk left or a newer job replaced it.
  int64_t claim(uint64_t gen, int64_t parts) {
    uint64_t c = claim_.load(std::memory_order_acquire);
    for (;;) {
      if ((c >> 32) != (gen & 0xffffffffu) || static_cast<int64_t>(c & 0xffffffffu) >= parts)
        return -1;
      if (claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel)) return c & 0xffffffffu;
    }
  }

  void grow(int n) {
    while (static_cast<int>(workers_.size()) + 1 < n) {
      // The worker starts from the current generation (read here, not in the new thread, so a
      // job posted before the thread runs is not missed).
      const uint64_t start = generation_.load(std::memory_order_acquire);
      workers_.emplace_back([this, start] { worker(start); });
    }
  }

  void worker(uint64_t seen) {
    tl_in_parallel = true;
    for (;;) {
      // Spin briefly (kernels follow each other within microseconds), then sleep.
      const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
      while (generation_.load(std::memory_order_acquire) == seen &&
             std::chrono::steady_clock::now() < spin_until) {
      }
      if (generation_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lk(mutex_);
        cv_.wait(lk, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      }
      tessel_cpu_task_fn fn;
      void* closure;
      int64_t n, parts;
      {
        std::lock_guard<std::mutex> lk(mutex_);
        if (stop_) return;
        seen = generation_.load(std::memory_order_acquire);
        fn = fn_;
        closure = closure_;
        n = n_;
        parts = parts_;
      }
      int64_t part;
      while ((part = claim(seen, parts)) >= 0) {
        fn(closure, chunk_begin(part, n, parts), chunk_begin(part + 1, n, parts));
        done_.fetch_add(1, std::memory_order_acq_rel);
      }
    }
  }

  std::mutex run_mutex_;  // one parallel loop at a time
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::thread> workers_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> claim_{0};  // generation << 32 | next chunk of the current job
  std::atomic<int64_t> done_{0};    // chunks of the current job finished
  tessel_cpu_task_fn fn_ = nullptr;
  void* closure_ = nullptr;
  int64_t n_ = 0;
  int64_t parts_ = 0;
  int active_ = 1;
  bool stop_ = false;
};

struct Scratch {
  std::vector<std::pair<void*, int64_t>> slots;
  ~Scratch() {
    for (auto& s : slots) std::free(s.first);
  }
};
thread_local Scratch tl_scratch;

}  // namespace

extern "C" {

void tessel_cpu_parallel_for(int64_t n, tessel_cpu_task_fn fn, void* closure) {
  Pool::get().run(n, fn, closure);
}

void* tessel_cpu_scratch(int64_t slot, int64_t bytes) {
  if (slot < 0 || bytes < 0) return nullptr;
  auto& slots = tl_scratch.slots;
  if (static_cast<int64_t>(slots.size()) <= slot) slots.resize(static_cast<size_t>(slot) + 1);
  auto& s = slots[static_cast<size_t>(slot)];
  if (s.second < bytes) {
    std::free(s.first);
    const int64_t rounded = (bytes + 63) / 64 * 64;
    s.first = std::aligned_alloc(64, static_cast<size_t>(rounded));
    s.second = s.first ? rounded : 0;
  }
  return s.first;
}

double tessel_cpu_now_seconds(void) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int tessel_cpu_set_threads(int threads) { return Pool::get().set_threads(threads); }

int tessel_cpu_get_threads(void) { return Pool::get().threads(); }
}
