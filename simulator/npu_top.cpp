// NpuTop: builds and binds the modules; deadlock reports; Chrome trace output.
#include "simulator/npu_top.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "compiler/support/error.h"

namespace tessel::sim {

void RunState::fail_with(std::exception_ptr e) {
  if (!error) error = e;
  // From outside the kernel (an RTL cube's check, core.cube.model: rtl) SystemC stops too.
  if (kernel.current() == MethodKernel::kNone) sc_core::sc_stop();
  kernel.stop();
}

NpuTop::NpuTop(sc_core::sc_module_name name, RunState& run) : sc_core::sc_module(name), run_(run) {
  const int n = static_cast<int>(run.code->size());
  barrier_ = std::make_unique<CoreBarrier>(n, run.kernel, &run.multicast);
  dram_ = std::make_unique<Dram>("dram", run);
  if (run.hw->l2.enabled()) {  // cores -> L2 -> DRAM; without an L2 the cores reach DRAM directly
    l2_ = std::make_unique<L2>("l2", run, *dram_);
    l2_->dram_socket.bind(dram_->socket);
  }
  for (int c = 0; c < n; ++c) {
    const std::string core_name = fmt::format("core{}", c);
    cores_.push_back(std::make_unique<Core>(core_name.c_str(), c, run, *barrier_));
    cores_.back()->connect(l2_ ? l2_->core_target() : dram_->core_target());
  }
  sc_core::sc_spawn_options opts;
  opts.spawn_method();
  sc_core::sc_spawn([this] { kernel_method(); }, "kernel", &opts);
}

void NpuTop::kernel_method() {
  try {
    run_.kernel.run();
    // Yield mode (core.cube.model: rtl): SystemC moves time to the kernel's next entry.
    if (run_.kernel.resumable())
      sc_core::next_trigger(
          sc_core::sc_time::from_value(run_.kernel.next_time() - run_.kernel.now()));
  } catch (...) {  // the processes catch their own errors; this is the kernel's (internal_fail)
    run_.fail_with(std::current_exception());
  }
}

NpuTop::~NpuTop() {
  while (!cores_.empty()) cores_.pop_back();
}

void NpuTop::finish_memory() {
  if (l2_) l2_->finish();
}

bool NpuTop::finished() const {
  for (const auto& c : cores_)
    if (!c->finished()) return false;
  return true;
}

std::string NpuTop::deadlock_report(uint64_t cycle) const {
  std::vector<std::string> causes;
  for (const auto& c : cores_)
    for (std::string& w : c->blocked_waits())
      causes.push_back(w + ", which no queued or running instruction can set");
  // Core barrier mismatches: some cores wait in a core_barrier that others never reach.
  std::vector<int> in_barrier, ended;
  for (size_t i = 0; i < cores_.size(); ++i) {
    if (cores_[i]->core_barrier_pc() >= 0) in_barrier.push_back(int(i));
    if (cores_[i]->finished()) ended.push_back(int(i));
  }
  if (!in_barrier.empty() && !ended.empty())
    causes.push_back(fmt::format(
        "cores {} wait in a core_barrier that cores {} never reach (they ended their streams); "
        "every core must execute the same number of core_barriers",
        fmt::join(in_barrier, ", "), fmt::join(ended, ", ")));
  // The last activity: the kernel's time or the latest completion of a started instruction.
  for (const auto& c : cores_) cycle = std::max(cycle, c->finish_cycle());
  std::string msg = fmt::format("deadlock (no unit can make progress after cycle {}): ", cycle);
  if (causes.empty())
    msg += "no unit can make progress";
  else
    msg += fmt::format("{}", fmt::join(causes, "; "));
  msg += ". State of every unit: ";
  for (size_t i = 0; i < cores_.size(); ++i) {
    if (i) msg += " | ";
    msg += cores_[i]->state_report();
  }
  return msg;
}

namespace {

/// The DRAM counter's window: about 2,000 samples over the run, rounded up to 1, 2 or 5 x 10^k
/// cycles (at least 1).
uint64_t counter_window_cycles(uint64_t total_cycles) {
  const uint64_t want = std::max<uint64_t>(1, (total_cycles + 1999) / 2000);
  for (uint64_t decade = 1;; decade *= 10)
    for (uint64_t m : {1, 2, 5})
      if (m * decade >= want) return m * decade;
}

}  // namespace

void write_chrome_trace(const std::string& path, const RunState& run,
                        const std::vector<std::string>& op_names) {
  using nlohmann::json;
  const size_t ncores = run.code->size();
  const double ghz = run.hw->clock_ghz > 0 ? run.hw->clock_ghz : 1.0;
  // Chrome/Perfetto read ts and dur as microseconds: simulated time, cycles / (1000 x GHz).
  const auto us = [ghz](uint64_t cycles) { return static_cast<double>(cycles) / (1000.0 * ghz); };
  const int ops_tid = isa::kNumPipes;  // per-core op span track
  const size_t npu_pid = ncores;       // the whole NPU: op spans over all cores, DRAM counter
  auto op_name = [&](int32_t op) {
    return op >= 0 && static_cast<size_t>(op) < op_names.size() ? op_names[op]
                                                                : fmt::format("op {}", op);
  };
  json events = json::array();
  auto meta = [&](const char* what, size_t pid, int tid, json args) {
    json e = {{"name", what}, {"ph", "M"}, {"pid", pid}, {"args", std::move(args)}};
    if (tid >= 0) e["tid"] = tid;
    events.push_back(std::move(e));
  };
  for (size_t c = 0; c < ncores; ++c) {
    meta("process_name", c, -1, {{"name", fmt::format("core {}", c)}});
    meta("process_sort_index", c, -1, {{"sort_index", c}});
    meta("thread_name", c, ops_tid, {{"name", "ops"}});
    meta("thread_sort_index", c, ops_tid, {{"sort_index", 0}});
    for (int p = 0; p < isa::kNumPipes; ++p) {
      meta("thread_name", c, p,
           {{"name", p == 0 ? std::string("scalar unit") : isa::pipe_name(isa::Pipe(p))}});
      meta("thread_sort_index", c, p, {{"sort_index", p + 1}});
    }
  }
  meta("process_name", npu_pid, -1, {{"name", "NPU (all cores)"}});
  meta("process_sort_index", npu_pid, -1, {{"sort_index", -1}});
  meta("thread_name", npu_pid, 0, {{"name", "ops (first start to last completion, all cores)"}});

  // Flows: a set_flag and the wait_flag it released carry the same id; keep the pairs whose both
  // ends ran (a set no wait consumed has no arrow).
  std::map<uint64_t, int> flow_ends;
  for (const TraceEvent& e : run.trace)
    if (e.flow_id) ++flow_ends[e.flow_id];
  // Per core and op: the first start and last completion of its pipe instructions on that core.
  std::map<std::pair<uint32_t, int32_t>, std::pair<uint64_t, uint64_t>> core_ops;
  for (const TraceEvent& e : run.trace) {
    const bool scalar = e.pipe == isa::Pipe::scalar;
    json args = {{"instruction", e.pc},
                 {"start_cycle", e.start_cycle},
                 {"duration_cycles", e.duration_cycles},
                 {"completion_cycle", e.completion_cycle},
                 {"op_index", e.op_index}};
    if (e.op_index >= 0) args["op"] = op_name(e.op_index);
    const isa::Instruction& in = (*run.code)[e.core][static_cast<size_t>(e.pc)];
    std::string name = isa::opcode_name(e.op);
    const isa::InstrKind kind = isa::instr_info(e.op).kind;
    if (scalar && kind != isa::InstrKind::barrier && kind != isa::InstrKind::core_barrier) {
      name = fmt::format("stall: {} queue full", isa::pipe_name(e.queue));
      args["dispatching"] = isa::opcode_name(e.op);
    }
    if (const auto* sync = std::get_if<isa::SyncArgs>(&in.args))
      args["flag"] = fmt::format("{} -> {} event {}", isa::pipe_name(sync->src),
                                 isa::pipe_name(sync->dst), sync->event);
    json x = {{"name", std::move(name)},
              {"cat", scalar ? "scalar" : isa::pipe_name(e.pipe)},
              {"ph", "X"},
              {"pid", e.core},
              {"tid", int(e.pipe)},
              {"ts", us(e.start_cycle)},
              {"dur", us(e.duration_cycles)},
              {"args", std::move(args)}};
    if (e.flow_id && flow_ends[e.flow_id] == 2) {
      x["bind_id"] = e.flow_id;
      x[kind == isa::InstrKind::set_flag ? "flow_out" : "flow_in"] = true;
    }
    events.push_back(std::move(x));
    if (!scalar && e.op_index >= 0) {
      auto [it, fresh] =
          core_ops.try_emplace({e.core, e.op_index}, e.start_cycle, e.completion_cycle);
      if (!fresh) {
        it->second.first = std::min(it->second.first, e.start_cycle);
        it->second.second = std::max(it->second.second, e.completion_cycle);
      }
    }
  }
  auto span = [&](size_t pid, int tid, int32_t op, uint64_t begin, uint64_t end) {
    events.push_back({{"name", op_name(op)},
                      {"cat", "op"},
                      {"ph", "X"},
                      {"pid", pid},
                      {"tid", tid},
                      {"ts", us(begin)},
                      {"dur", us(end - begin)},
                      {"args",
                       {{"op_index", op},
                        {"start_cycle", begin},
                        {"end_cycle", end},
                        {"cycles", end - begin}}}});
  };
  for (const auto& [key, range] : core_ops)
    span(key.first, ops_tid, key.second, range.first, range.second);
  for (size_t op = 0; op < run.op_first_start.size(); ++op)
    if (run.op_first_start[op] != UINT64_MAX)
      span(npu_pid, 0, static_cast<int32_t>(op), run.op_first_start[op],
           run.op_last_completion[op]);

  // DRAM bandwidth: the burst bytes each transfer moves, spread evenly over the cycles the
  // channel is busy with it, summed per window, as bytes per cycle.
  const uint64_t total = run.result.total_cycles;
  const uint64_t window = counter_window_cycles(total);
  const size_t windows = static_cast<size_t>(total / window + 1);
  // Adds transfer t's bytes to the read or write series, spread over its busy cycles.
  auto spread = [&](const DramTransfer& t, std::vector<double>& read, std::vector<double>& write) {
    const double per_cycle =
        static_cast<double>(t.burst_bytes) / static_cast<double>(t.done_cycle - t.start_cycle);
    for (uint64_t w = t.start_cycle / window; w * window < t.done_cycle && w < windows; ++w) {
      const uint64_t lo = std::max(t.start_cycle, w * window);
      const uint64_t hi = std::min(t.done_cycle, (w + 1) * window);
      (t.read ? read : write)[w] += per_cycle * static_cast<double>(hi - lo);
    }
  };
  // One counter track of read and write bytes per cycle, the mean of each window.
  auto bandwidth_track = [&](const std::string& name, const std::vector<double>& read,
                             const std::vector<double>& write) {
    for (size_t w = 0; w < windows; ++w)
      events.push_back({{"name", name},
                        {"ph", "C"},
                        {"pid", npu_pid},
                        {"ts", us(w * window)},
                        {"args",
                         {{"read", read[w] / static_cast<double>(window)},
                          {"write", write[w] / static_cast<double>(window)}}}});
  };
  std::vector<double> read(windows, 0.0), write(windows, 0.0);
  for (const DramTransfer& t : run.dram_transfers) spread(t, read, write);
  bandwidth_track(fmt::format("DRAM bytes per cycle (mean over {} cycles)", window), read, write);

  // The banked model: per channel its bandwidth (as above) and per window the row-buffer outcomes
  // of the requests whose transfer started its data there (docs/memory.md, "Reports").
  if (run.hw->dram.model == npu::DramModel::banked) {
    const size_t channels = static_cast<size_t>(run.hw->dram.banked.channels);
    std::vector<std::vector<double>> ch_read(channels, std::vector<double>(windows, 0.0)),
        ch_write = ch_read;
    std::vector<std::array<uint64_t, 3>> rows(windows, {0, 0, 0});
    for (const DramTransfer& t : run.dram_transfers) {
      if (t.channel >= channels) continue;
      spread(t, ch_read[t.channel], ch_write[t.channel]);
      const size_t w = std::min<size_t>(t.start_cycle / window, windows - 1);
      rows[w][0] += t.row_hits;
      rows[w][1] += t.row_misses;
      rows[w][2] += t.bank_conflicts;
    }
    for (size_t c = 0; c < channels; ++c)
      bandwidth_track(
          fmt::format("DRAM channel {} bytes per cycle (mean over {} cycles)", c, window),
          ch_read[c], ch_write[c]);
    const std::string name = fmt::format("DRAM row buffer (requests per {} cycles)", window);
    for (size_t w = 0; w < windows; ++w)
      events.push_back({{"name", name},
                        {"ph", "C"},
                        {"pid", npu_pid},
                        {"ts", us(w * window)},
                        {"args",
                         {{"row_hits", rows[w][0]},
                          {"row_misses", rows[w][1]},
                          {"bank_conflicts", rows[w][2]}}}});
  }

  json doc = {
      {"traceEvents", std::move(events)},
      {"displayTimeUnit", "ns"},
      {"otherData",
       {{"time_unit",
         fmt::format("ts and dur are microseconds of simulated time at {} GHz (1 core cycle = {} "
                     "ns); the viewer shows ns; args give the exact core cycles",
                     ghz, 1.0 / ghz)},
        {"clock_ghz", ghz},
        {"total_cycles", total},
        {"dram_counter_window_cycles", window},
        {"hw_config", run.hw->name}}}};
  // Written whole or not at all: a temporary file renamed over `path`.
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) fail("cannot write the trace file '{}'", path);
    out << doc.dump() << '\n';
    if (!out) {
      std::remove(tmp.c_str());
      fail("error while writing the trace file '{}'", path);
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    fail("cannot write the trace file '{}': {}", path, ec.message());
  }
}

}  // namespace tessel::sim
