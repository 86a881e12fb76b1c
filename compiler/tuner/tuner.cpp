// The tuner (see tuner.h).
#include "compiler/tuner/tuner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <tuple>

#include "compiler/support/error.h"
#include "compiler/tuner/learned.h"
#include "compiler/tuner/log.h"
#include "compiler/tuner/measure.h"
#include "npu_model/roofline.h"
#include "simulator/simulator.h"

namespace tessel::tuner {

using passes::Knobs;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

/// The numeric fields of a config (for the distance between configs).
std::vector<double> hw_vector(const npu::HwConfig& h) {
  const auto& c = h.core;
  return {static_cast<double>(h.cores),
          h.clock_ghz,
          static_cast<double>(c.scalar.cycles_per_instruction),
          static_cast<double>(c.scalar.issue_queue_depth),
          static_cast<double>(c.cube.m),
          static_cast<double>(c.cube.k),
          static_cast<double>(c.cube.n),
          static_cast<double>(c.cube.pipeline_latency_cycles),
          static_cast<double>(c.vector.width_bytes),
          static_cast<double>(c.vector.pipeline_latency_cycles),
          static_cast<double>(c.buffers_bytes.l1),
          static_cast<double>(c.buffers_bytes.l0a),
          static_cast<double>(c.buffers_bytes.l0b),
          static_cast<double>(c.buffers_bytes.l0c),
          static_cast<double>(c.buffers_bytes.ub),
          static_cast<double>(c.mte1.bytes_per_cycle),
          static_cast<double>(c.mte1.latency_cycles),
          static_cast<double>(c.mte2.bytes_per_cycle),
          static_cast<double>(c.mte2.latency_cycles),
          static_cast<double>(c.mte3.bytes_per_cycle),
          static_cast<double>(c.mte3.latency_cycles),
          static_cast<double>(c.fix.bytes_per_cycle),
          static_cast<double>(c.fix.latency_cycles),
          static_cast<double>(c.sync_event_ids),
          static_cast<double>(h.dram.bytes_per_cycle),
          static_cast<double>(h.dram.latency_cycles),
          static_cast<double>(h.dram.burst_bytes)};
}

double hw_distance(const npu::HwConfig& a, const npu::HwConfig& b) {
  const auto x = hw_vector(a), y = hw_vector(b);
  double d = 0;
  for (size_t i = 0; i < x.size(); ++i) d += std::abs(std::log1p(x[i]) - std::log1p(y[i]));
  return d;
}

}  // namespace

const char* oracle_name(Oracle o) {
  switch (o) {
    case Oracle::sim:
      return "sim";
    case Oracle::analytical:
      return "analytical";
    case Oracle::learned:
      return "learned";
  }
  return "?";
}

Oracle parse_oracle(const std::string& name, const std::string& context) {
  for (Oracle o : {Oracle::sim, Oracle::analytical, Oracle::learned})
    if (name == oracle_name(o)) return o;
  fail("{}: unknown oracle '{}' (expected sim, analytical or learned)", context, name);
}

std::vector<Task> tasks_of(const npu_backend::LoweredGraph& lowered) {
  std::vector<Task> tasks;
  std::map<std::string, size_t> index;
  const auto& kernels = lowered.kernels();
  const auto& ops = lowered.ops();
  for (size_t i = 0; i < kernels.size(); ++i) {
    const auto& k = kernels[i];
    auto it = index.find(k.task);
    if (it == index.end()) {
      Task t;
      t.key = k.task;
      t.kind = k.schedule->space().kind;
      t.roofline_cycles = npu::roofline(lowered.hw(), k.work).cycles;
      t.work = k.work;
      it = index.emplace(k.task, tasks.size()).first;
      tasks.push_back(std::move(t));
    }
    Task& t = tasks[it->second];
    t.kernels.push_back(i);
    t.weight += 1;
    t.fixed |= k.source == npu_backend::KnobSource::schedule;
    const std::string& op = ops[k.op].node;
    if (std::find(t.ops.begin(), t.ops.end(), op) == t.ops.end()) t.ops.push_back(op);
  }
  return tasks;
}

std::vector<Knobs> default_candidates(const passes::Screened& screened) {
  constexpr size_t kPerCores = 4;
  std::vector<size_t> out_index;
  std::set<size_t> seen;
  std::vector<int64_t> cores_values;
  const size_t n = screened.size();
  std::vector<int64_t> cores(n), res(n), ares(n), db(n), size(n);
  const bool has_mt =
      std::find(screened.names().begin(), screened.names().end(), "mt") != screened.names().end();
  for (size_t i = 0; i < n; ++i) {
    cores[i] = screened.value(i, "cores");
    res[i] = screened.value(i, "weights_resident");
    ares[i] = screened.value(i, "a_resident");
    db[i] = screened.value(i, "double_buffer");
    size[i] = screened.value(i, has_mt ? "mt" : "tile_axis");
    if (std::find(cores_values.begin(), cores_values.end(), cores[i]) == cores_values.end())
      cores_values.push_back(cores[i]);
  }
  std::sort(cores_values.rbegin(), cores_values.rend());
  for (int64_t c : cores_values) {
    size_t mine = 0;
    auto add = [&](size_t i) {
      if (mine >= kPerCores || seen.count(i)) return;
      seen.insert(i);
      out_index.push_back(i);
      ++mine;
    };
    // Points estimated far slower than the best with c cores are not measured: they rarely win,
    // and the worst of them (tiny tiles) are the slowest to simulate.
    std::vector<size_t> with_c;
    double best_c = -1;
    for (size_t i = 0; i < n; ++i)
      if (cores[i] == c) {
        if (best_c < 0) best_c = screened.cycles(i);
        if (screened.cycles(i) <= kDefaultCandidatesWithin * best_c) with_c.push_back(i);
      }
    for (size_t j = 0; j < with_c.size() && j < 3; ++j) add(with_c[j]);
    std::set<std::tuple<int64_t, int64_t, int64_t>> structures;
    for (size_t i : with_c)
      if (structures.insert({res[i], ares[i], db[i]}).second) add(i);
    std::set<int64_t> sizes;
    for (size_t i : with_c)
      if (sizes.insert(size[i]).second) add(i);
  }
  std::vector<Knobs> out;
  for (size_t i : out_index) out.push_back(screened.knobs(i));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Tuning

namespace {

/// One task's search state.
struct TaskState {
  Task task;
  const passes::KernelSchedule* schedule = nullptr;
  std::unique_ptr<SearchStrategy> strategy;
  uint64_t best = 0;  // 0: nothing measured yet
  Knobs best_knobs;
  uint64_t default_best = 0;  // the best of the default candidates (0: none measured)
  Knobs default_knobs;        // ... its point: what a plain compile chooses
  int64_t trials = 0;
  uint64_t best_before_round = 0;
  int64_t last_round = 0;
  uint32_t group = 0;  // for the learned model
};

class Tuner {
 public:
  Tuner(const npu_backend::LoweredGraph& lowered, const npu::HwConfig& hw,
        const TuneOptions& options)
      : lowered_(lowered), hw_(hw), o_(options), t0_(std::chrono::steady_clock::now()) {}

  TuneResult run();

 private:
  const npu_backend::LoweredGraph& lowered_;
  const npu::HwConfig& hw_;
  TuneOptions o_;
  std::chrono::steady_clock::time_point t0_;
  std::vector<TaskState> tasks_;
  std::unique_ptr<Measurer> measurer_;
  std::unique_ptr<LogWriter> writer_;
  std::vector<const TrialRecord*> replay_;
  size_t replay_next_ = 0;
  TuningLog log_;
  TuneResult result_;
  std::string hw_hash_;
  LearnedModel model_;
  std::vector<Example> examples_;
  size_t trained_on_ = 0;

  npu::CostEstimate estimate(const TaskState& t, const Knobs& k) const {
    return npu::estimate_kernel(hw_, t.schedule->profile(k));
  }
  std::vector<double> screen(const TaskState& t, const std::vector<Knobs>& pool);
  std::vector<float> features(const TaskState& t, const Knobs& k) const {
    const npu::KernelProfile p = t.schedule->profile(k);
    return point_features(hw_, t.task.kind, k, p, npu::estimate_kernel(hw_, p),
                          t.task.roofline_cycles);
  }
  /// Measures (or replays) `points` of task `ti`, logs them, tells the strategy (when `tell`).
  std::vector<std::optional<double>> measure(size_t ti, const std::vector<Knobs>& points);
  double total() const {
    double s = 0;
    for (const auto& t : tasks_) s += t.task.weight * static_cast<double>(t.best);
    return s;
  }
  void report_progress();
  size_t pick_task(Rng& rng) const;
  std::vector<Knobs> warm_start(const TaskState& t);
  /// The whole-program check (fills result_.program); returns the tasks that keep their default.
  std::set<std::string> check_program();
};

std::vector<double> Tuner::screen(const TaskState& t, const std::vector<Knobs>& pool) {
  std::vector<double> cost(pool.size());
  for (size_t i = 0; i < pool.size(); ++i) cost[i] = estimate(t, pool[i]).cycles;
  if (o_.oracle != Oracle::learned || !model_.trained() || pool.size() < 2) return cost;
  // Multi-fidelity: the analytical model keeps the better half, the learned model ranks it.
  std::vector<size_t> order(pool.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return cost[a] < cost[b]; });
  const size_t keep = std::max<size_t>(2, (pool.size() + 1) / 2);
  std::vector<std::vector<float>> rows;
  for (size_t r = 0; r < keep; ++r) rows.push_back(features(t, pool[order[r]]));
  const std::vector<double> s = model_.score(rows);
  std::vector<double> out(pool.size(), 1e30);
  for (size_t r = 0; r < keep; ++r) out[order[r]] = s[r];
  for (size_t r = keep; r < order.size(); ++r) out[order[r]] = 1e30 + cost[order[r]];
  return out;
}

std::vector<std::optional<double>> Tuner::measure(size_t ti, const std::vector<Knobs>& points) {
  TaskState& t = tasks_[ti];
  std::vector<std::optional<double>> out(points.size());
  std::vector<Request> pending;
  std::vector<size_t> where;
  std::vector<std::string> errors(points.size());
  std::vector<uint64_t> cycles(points.size(), 0);
  std::vector<bool> from_log(points.size(), false);
  for (size_t i = 0; i < points.size(); ++i) {
    if (replay_next_ < replay_.size()) {
      const TrialRecord& r = *replay_[replay_next_++];
      if (r.task != t.task.key || r.knobs != points[i])
        fail(
            "{}:{}: the log does not continue this tuning run: it has task {} knobs {}, the run "
            "proposes task {} knobs {} (was it written by another tessel version or model?)",
            log_.path(), r.line, r.task, passes::knobs_to_string(r.knobs), t.task.key,
            passes::knobs_to_string(points[i]));
      cycles[i] = r.cycles;
      errors[i] = r.error;
      from_log[i] = true;
      ++result_.replayed;
      continue;
    }
    if (o_.oracle == Oracle::analytical) {
      cycles[i] = static_cast<uint64_t>(std::llround(estimate(t, points[i]).cycles));
    } else {
      pending.push_back({t.task.kernels.front(), points[i]});
      where.push_back(i);
    }
  }
  if (!pending.empty()) {
    const auto ms = measurer_->measure(pending);
    for (size_t j = 0; j < ms.size(); ++j) {
      cycles[where[j]] = ms[j].cycles;
      errors[where[j]] = ms[j].error;
    }
  }
  for (size_t i = 0; i < points.size(); ++i) {
    TrialRecord r;
    r.run = result_.run;
    r.trial = result_.trials++;
    r.task = t.task.key;
    r.kind = t.task.kind;
    r.hw = hw_hash_;
    r.knobs = points[i];
    r.cycles = errors[i].empty() ? cycles[i] : 0;
    r.error = errors[i];
    r.oracle = o_.oracle == Oracle::analytical ? "analytical" : "sim";
    r.strategy = strategy_name(o_.strategy);
    r.seed = o_.seed;
    r.version = tessel_version();
    if (writer_ && !from_log[i]) writer_->trial(r);
    ++t.trials;
    if (!r.ok()) continue;
    out[i] = static_cast<double>(r.cycles);
    if (t.best == 0 || r.cycles < t.best) {
      t.best = r.cycles;
      t.best_knobs = points[i];
    }
    if (o_.oracle == Oracle::learned)
      examples_.push_back({t.group, features(t, points[i]), static_cast<double>(r.cycles)});
  }
  if (o_.oracle == Oracle::learned && examples_.size() >= trained_on_ + 256) {
    model_.train(examples_, 60, o_.seed);
    trained_on_ = examples_.size();
  }
  result_.curve.push_back({result_.trials, seconds_since(t0_), total()});
  return out;
}

void Tuner::report_progress() {
  if (!o_.progress) return;
  Progress p;
  p.trials = result_.trials;
  p.budget = o_.budget;
  p.seconds = seconds_since(t0_);
  p.trials_per_second = p.seconds > 0 ? static_cast<double>(p.trials) / p.seconds : 0;
  p.best_total_cycles = total();
  if (p.trials_per_second > 0 && o_.budget > 0)
    p.eta_seconds = static_cast<double>(o_.budget - p.trials) / p.trials_per_second;
  o_.progress(p);
}

size_t Tuner::pick_task(Rng& rng) const {
  // Ansor's gradient: weight x (alpha x the last round's improvement per trial + (1 - alpha) x
  // an optimistic forward estimate: the average improvement per trial so far, capped by the gap
  // to the task's roofline). Exhausted and fixed tasks get none.
  std::vector<size_t> live;
  for (size_t i = 0; i < tasks_.size(); ++i)
    if (!tasks_[i].task.fixed && !tasks_[i].strategy->exhausted()) live.push_back(i);
  if (live.empty()) return tasks_.size();
  if (rng.unit() < 0.05) return live[rng.below(live.size())];
  const double alpha = 0.2;
  size_t best = live.front();
  double best_g = -1;
  for (size_t i : live) {
    const TaskState& t = tasks_[i];
    const double b = static_cast<double>(t.best);
    const double back = t.last_round > 0 ? (static_cast<double>(t.best_before_round) - b) /
                                               static_cast<double>(t.last_round)
                                         : 0.0;
    const double forward = std::min(b / std::max<double>(1.0, static_cast<double>(t.trials)),
                                    std::max(0.0, b - t.task.roofline_cycles));
    const double g = t.task.weight * (alpha * back + (1 - alpha) * forward);
    if (g > best_g) {
      best_g = g;
      best = i;
    }
  }
  return best;
}

std::vector<Knobs> Tuner::warm_start(const TaskState& t) {
  // The best records of the nearest other config for this task (first candidates).
  double nearest = 1e300;
  std::string nearest_hash;
  for (const auto& [h, yaml] : log_.hw_configs()) {
    if (h == hw_hash_) continue;
    npu::HwConfig other;
    try {
      other = npu::parse_hw_config(yaml, log_.path() + " (hw record " + h + ")");
    } catch (const Error&) {
      continue;
    }
    const double d = hw_distance(hw_, other);
    if (d < nearest) {
      nearest = d;
      nearest_hash = h;
    }
  }
  std::vector<Knobs> out;
  if (nearest_hash.empty()) return out;
  std::vector<const TrialRecord*> recs;
  for (const auto& r : log_.trials())
    if (r.hw == nearest_hash && r.task == t.task.key && r.ok()) recs.push_back(&r);
  std::stable_sort(recs.begin(), recs.end(), [](const TrialRecord* a, const TrialRecord* b) {
    return a->cycles < b->cycles;
  });
  std::set<Knobs> seen;
  for (const TrialRecord* r : recs) {
    if (out.size() >= 4) break;
    if (seen.insert(r->knobs).second && !t.schedule->reject(r->knobs)) out.push_back(r->knobs);
  }
  return out;
}

TuneResult Tuner::run() {
  hw_hash_ = hw_hash(hw_);
  for (const Task& task : tasks_of(lowered_)) {
    TaskState s;
    s.task = task;
    s.schedule = lowered_.kernels()[task.kernels.front()].schedule.get();
    s.group = static_cast<uint32_t>(tasks_.size());
    tasks_.push_back(std::move(s));
  }
  // The run id: what determines the trials (tasks, config, strategy, oracle, seed).
  std::string id = hw_hash_ + strategy_name(o_.strategy) + oracle_name(o_.oracle) +
                   std::to_string(o_.seed) + std::to_string(o_.batch);
  for (const auto& t : tasks_) id += t.task.key + (t.task.fixed ? "f" : "");
  result_.run = fmt::format("{:016x}", fnv1a(id));
  if (o_.resume && o_.log_path.empty()) fail("--resume continues a log: give --log FILE");
  if (!o_.log_path.empty()) {
    log_ = TuningLog::read(o_.log_path);
    replay_ = log_.run_trials(result_.run);
    if (!replay_.empty() && !o_.resume)
      fail(
          "{}: already holds {} trials of this tuning run (same model, config, strategy, oracle "
          "and seed): pass --resume to continue it, or use another --log",
          o_.log_path, replay_.size());
    writer_ = std::make_unique<LogWriter>(o_.log_path, &log_);
    writer_->hw(hw_, log_);
  }
  measurer_ =
      std::make_unique<Measurer>(lowered_, hw_, o_.oracle == Oracle::analytical ? 1 : o_.jobs);
  for (size_t i = 0; i < tasks_.size(); ++i) {
    TaskState& t = tasks_[i];
    SpaceView view;
    view.space = &t.schedule->space();
    const passes::KernelSchedule* sched = t.schedule;
    view.valid = [sched](const Knobs& k) { return sched->valid(k); };
    view.screen = [this, i](const std::vector<Knobs>& pool) { return screen(tasks_[i], pool); };
    t.strategy = make_strategy(o_.strategy, view, o_.seed * 1000003 + i);
  }
  // Warm-up: every task first measures the nearest config's best records (within the budget:
  // at most budget / (2 x live tasks) points per task with its own candidates) and then, whatever
  // the budget, every point a plain compile chooses from: its resolved knobs when a log set them
  // and all its default candidates (the measured default). So the best a tuning run ends with is
  // never slower alone than what the measured default picks, at any budget; a budget smaller
  // than the warm-up leaves the search no trials (the result is the measured default).
  const int64_t n_live =
      std::count_if(tasks_.begin(), tasks_.end(), [](const TaskState& t) { return !t.task.fixed; });
  const int64_t warm_cap = n_live > 0 ? std::max<int64_t>(1, o_.budget / (2 * n_live)) : 0;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    TaskState& t = tasks_[i];
    if (t.task.fixed) continue;
    // What a plain compile chooses from: the default candidates (measured default), or the
    // knobs a log (or the caller) set, which it keeps; the tuner measures those and then the
    // default candidates too.
    const auto* kept = lowered_.candidates(t.task.key);
    const bool measured_default = kept != nullptr;
    std::vector<Knobs> own;
    if (!kept) {
      own.push_back(lowered_.kernels()[t.task.kernels.front()].knobs);
      for (const Knobs& k :
           default_candidates(passes::screen(*t.schedule, hw_, {}, kDefaultCandidatesWithin)))
        own.push_back(k);
      kept = &own;
    }
    std::vector<Knobs> defaults;
    for (const Knobs& k : *kept)
      if (std::find(defaults.begin(), defaults.end(), k) == defaults.end()) defaults.push_back(k);
    auto is_default = [&](const Knobs& k) {
      return std::find(defaults.begin(), defaults.end(), k) != defaults.end();
    };
    // The nearest config's best records first (those that are not default candidates as far as
    // the cap leaves room), then the default candidates.
    std::vector<Knobs> first;
    int64_t room = warm_cap - static_cast<int64_t>(defaults.size());
    for (const Knobs& k : warm_start(t)) {
      if (!is_default(k)) {
        if (room <= 0) continue;
        --room;
      }
      first.push_back(k);
    }
    result_.warm_started += static_cast<int64_t>(first.size());
    for (const Knobs& k : defaults)
      if (std::find(first.begin(), first.end(), k) == first.end()) first.push_back(k);
    const auto costs = measure(i, first);
    for (size_t j = 0; j < first.size(); ++j) t.strategy->seed_point(first[j], costs[j]);
    // The plain compile's pick: the first fastest default candidate in their order (as
    // compile_scheduled's measured default picks; the first when none was measured), or the
    // knobs the log set.
    t.default_knobs = defaults.front();
    for (size_t d = 0; d < (measured_default ? defaults.size() : 1); ++d) {
      const size_t j =
          static_cast<size_t>(std::find(first.begin(), first.end(), defaults[d]) - first.begin());
      if (costs[j] && (t.default_best == 0 || static_cast<uint64_t>(*costs[j]) < t.default_best)) {
        t.default_best = static_cast<uint64_t>(*costs[j]);
        t.default_knobs = defaults[d];
      }
    }
  }
  report_progress();
  Rng rng(o_.seed ^ 0x9e3779b97f4a7c15ull);
  while (result_.trials < o_.budget) {
    if (o_.seconds > 0 && seconds_since(t0_) >= o_.seconds) break;
    const size_t ti = pick_task(rng);
    if (ti >= tasks_.size()) break;
    TaskState& t = tasks_[ti];
    const size_t n = std::min<size_t>(o_.batch, static_cast<size_t>(o_.budget - result_.trials));
    const std::vector<Knobs> points = t.strategy->propose(n);
    if (points.empty()) continue;  // exhausted now; pick another
    t.best_before_round = t.best;
    t.last_round = static_cast<int64_t>(points.size());
    const auto costs = measure(ti, points);
    for (size_t j = 0; j < points.size(); ++j) t.strategy->observe(points[j], costs[j]);
    report_progress();
  }
  result_.seconds = seconds_since(t0_);
  const std::set<std::string> keep_default =
      o_.oracle == Oracle::analytical ? std::set<std::string>{} : check_program();
  for (const auto& t : tasks_) {
    TaskResult r;
    r.task = t.task;
    r.space_size = t.schedule->space().size();
    r.best = t.best_knobs;
    r.best_cycles = t.best;
    r.default_cycles = t.default_best;
    r.trials = t.trials;
    r.kept_default = keep_default.count(t.task.key) > 0;
    result_.default_total += t.task.weight * static_cast<double>(t.default_best);
    result_.best_total += t.task.weight * static_cast<double>(t.best);
    if (r.kept_default) {
      const bool log = lowered_.candidates(t.task.key) == nullptr;
      result_.knobs[t.task.key] = {
          t.default_knobs, log ? npu_backend::KnobSource::log : npu_backend::KnobSource::measured,
          "the whole-program check"};
    } else if (!t.task.fixed && t.best > 0) {
      result_.knobs[t.task.key] = {t.best_knobs, npu_backend::KnobSource::tuned, "tuning"};
    }
    result_.tasks.push_back(std::move(r));
  }
  return result_;
}

std::set<std::string> Tuner::check_program() {
  // Kernels are measured alone; in the program each runs after the others (other GM addresses for
  // the other kernels of its task, the DRAM channel and the cores as the previous kernel left
  // them). The search's best per task (T) is compared with the plain compile's picks (D) on the
  // whole program, timing-only; where T is slower, the tasks whose kernels were slower in it are
  // given back their default (M), and the fastest of T, M and D is kept (ties: T, then M).
  const auto t0 = std::chrono::steady_clock::now();
  std::map<std::string, Knobs> tuned, fallback;
  std::vector<std::string> differ;
  for (const auto& t : tasks_) {
    if (t.task.fixed || t.best == 0) continue;
    tuned[t.task.key] = t.best_knobs;
    fallback[t.task.key] = t.default_knobs;
    if (t.best_knobs != t.default_knobs) differ.push_back(t.task.key);
  }
  std::set<std::string> out;
  if (differ.empty()) return out;
  // Timing only: the cube runs transaction-level (as Measurer::measure_one; docs/rtl.md).
  npu::HwConfig tlm_hw = hw_;
  tlm_hw.core.cube.model = npu::CubeModel::tlm;
  tlm_hw.core.cube.rtl_sample = 0;
  auto simulate = [&](const std::map<std::string, Knobs>& knobs) {
    sim::SimOptions so;
    so.functional = false;
    so.skip_gm_image = true;
    sim::Simulator simulator(tlm_hw, so);
    simulator.load(lowered_.timing_program(knobs));
    return simulator.run();
  };
  const sim::SimResult rt = simulate(tuned), rd = simulate(fallback);
  result_.program.checked = true;
  result_.program.tuned_cycles = rt.total_cycles;
  result_.program.default_cycles = rd.total_cycles;
  result_.program.cycles = rt.total_cycles;
  result_.program.choice = "tuned";
  if (rt.total_cycles > rd.total_cycles) {
    // Per task, the cycles of its ops (first start to last completion) in T and in D.
    std::map<std::string, double> delta;
    const auto& ks = lowered_.kernels();
    std::map<int32_t, std::set<std::string>> op_tasks;
    for (const auto& k : ks) op_tasks[lowered_.ops()[k.op].op_index].insert(k.task);
    for (const auto& [op, ts] : op_tasks) {
      if (op < 0 || static_cast<size_t>(op) >= rt.op_cycles.size() ||
          static_cast<size_t>(op) >= rd.op_cycles.size())
        continue;
      const double d =
          static_cast<double>(rt.op_cycles[op]) - static_cast<double>(rd.op_cycles[op]);
      for (const std::string& task : ts) delta[task] += d;
    }
    std::map<std::string, Knobs> mixed = tuned;
    std::set<std::string> reverted;
    for (const std::string& task : differ)
      if (delta[task] >= 0) {
        mixed[task] = fallback[task];
        reverted.insert(task);
      }
    uint64_t best = rd.total_cycles;
    out.insert(differ.begin(), differ.end());
    result_.program.choice = "default";
    if (!reverted.empty() && reverted.size() < differ.size()) {
      const uint64_t rm = simulate(mixed).total_cycles;
      result_.program.mixed_cycles = rm;
      if (rm <= best) {
        best = rm;
        out = reverted;
        result_.program.choice = "mixed";
      }
    }
    result_.program.cycles = best;
  }
  result_.program.seconds = seconds_since(t0);
  return out;
}

}  // namespace

TuneResult tune(const npu_backend::LoweredGraph& lowered, const npu::HwConfig& hw,
                const TuneOptions& options) {
  return Tuner(lowered, hw, options).run();
}

ScheduledModule compile_scheduled(const Graph& graph, const npu::HwConfig& hw,
                                  const npu_backend::NpuCompileOptions& base,
                                  const ScheduleRequest& request) {
  const auto t0 = std::chrono::steady_clock::now();
  ScheduledModule out;
  npu_backend::NpuCompileOptions options = base;
  if (!request.tuning_log.empty()) {
    if (!std::filesystem::is_regular_file(request.tuning_log))
      fail("tuning log '{}': {}", request.tuning_log,
           std::filesystem::exists(request.tuning_log) ? "not a regular file" : "no such file");
    const TuningLog log = TuningLog::read(request.tuning_log);
    for (auto& [task, k] : log_knobs(log, hw)) options.task_knobs.emplace(task, k);
  }
  options.candidates = default_candidates;
  options.candidates_within = kDefaultCandidatesWithin;
  if (request.progress) options.progress = request.progress;
  npu_backend::LoweredGraph lowered(graph, hw, options);
  if (request.tune) {
    out.tuned = tune(lowered, hw, *request.tune);
    for (const auto& [task, k] : out.tuned->knobs) lowered.set_task_knobs(task, k);
  } else if (request.measure_default) {
    // The default small-budget strategy: the default candidates of every task whose knobs the
    // analytical default chose, simulated alone in one batch; the fastest wins (ties: the
    // earlier, i.e. the better estimate).
    std::vector<Request> batch;
    std::vector<std::pair<std::string, size_t>> owner;  // task, first request
    for (const Task& t : tasks_of(lowered)) {
      const auto* kept = lowered.candidates(t.key);
      if (!kept ||
          lowered.kernels()[t.kernels.front()].source != npu_backend::KnobSource::analytical)
        continue;
      const std::vector<Knobs>& cands = *kept;
      if (cands.size() < 2) continue;
      owner.push_back({t.key, batch.size()});
      for (const Knobs& k : cands) batch.push_back({t.kernels.front(), k});
    }
    if (!batch.empty()) {
      Measurer measurer(lowered, hw, request.jobs);
      std::function<void(size_t, size_t)> measured;
      if (request.progress)
        measured = [&request](size_t done, size_t total) {
          request.progress("measure", done, total);
        };
      const std::vector<Measurement> ms = measurer.measure(batch, measured);
      for (size_t o = 0; o < owner.size(); ++o) {
        const size_t end = o + 1 < owner.size() ? owner[o + 1].second : batch.size();
        size_t best = end;
        for (size_t r = owner[o].second; r < end; ++r)
          if (ms[r].ok() && (best == end || ms[r].cycles < ms[best].cycles)) best = r;
        if (best == end) continue;  // nothing measured: keep the analytical choice
        lowered.set_task_knobs(owner[o].first,
                               {batch[best].knobs, npu_backend::KnobSource::measured, ""});
      }
    }
  }
  out.schedule_seconds = seconds_since(t0);
  out.module = lowered.finish();
  return out;
}

}  // namespace tessel::tuner
