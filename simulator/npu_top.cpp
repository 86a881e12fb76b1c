// NpuTop: builds and binds the modules; deadlock reports; Chrome trace output.
#include "simulator/npu_top.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

#include "compiler/support/error.h"

namespace tessel::sim {

void RunState::fail_with(std::exception_ptr e) {
  if (!error) error = e;
  sc_core::sc_stop();
}

NpuTop::NpuTop(sc_core::sc_module_name name, RunState& run) : sc_core::sc_module(name), run_(run) {
  const int n = static_cast<int>(run.code->size());
  barrier_ = std::make_unique<CoreBarrier>(n);
  dram_ = std::make_unique<Dram>("dram", run);
  for (int c = 0; c < n; ++c) {
    const std::string core_name = fmt::format("core{}", c);
    cores_.push_back(std::make_unique<Core>(core_name.c_str(), c, run, *barrier_));
    cores_.back()->mte2_socket.bind(dram_->socket);
    cores_.back()->mte3_socket.bind(dram_->socket);
  }
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
  // The last activity: SystemC time or the latest completion of a started instruction.
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

void write_chrome_trace(const std::string& path, const RunState& run,
                        const std::vector<std::string>& op_names) {
  using nlohmann::json;
  json events = json::array();
  const size_t ncores = run.code->size();
  for (size_t c = 0; c < ncores; ++c) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", c},
                      {"args", {{"name", fmt::format("core {}", c)}}}});
    events.push_back(
        {{"name", "process_sort_index"}, {"ph", "M"}, {"pid", c}, {"args", {{"sort_index", c}}}});
    for (int p = 1; p < isa::kNumPipes; ++p) {
      events.push_back({{"name", "thread_name"},
                        {"ph", "M"},
                        {"pid", c},
                        {"tid", p},
                        {"args", {{"name", isa::pipe_name(isa::Pipe(p))}}}});
      events.push_back({{"name", "thread_sort_index"},
                        {"ph", "M"},
                        {"pid", c},
                        {"tid", p},
                        {"args", {{"sort_index", p}}}});
    }
  }
  for (const TraceEvent& e : run.trace) {
    json args = {
        {"op_index", e.op_index}, {"instruction", e.pc}, {"completion_cycle", e.completion_cycle}};
    if (e.op_index >= 0 && static_cast<size_t>(e.op_index) < op_names.size())
      args["op"] = op_names[e.op_index];
    events.push_back({{"name", isa::opcode_name(e.op)},
                      {"cat", isa::pipe_name(e.pipe)},
                      {"ph", "X"},
                      {"pid", e.core},
                      {"tid", int(e.pipe)},
                      {"ts", e.start_cycle},
                      {"dur", e.duration_cycles},
                      {"args", std::move(args)}});
  }
  json doc = {{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ns"},
              {"otherData",
               {{"time_unit", "core cycles (shown as microseconds)"},
                {"total_cycles", run.result.total_cycles},
                {"hw_config", run.hw->name}}}};
  std::ofstream out(path);
  if (!out) fail("cannot write the trace file '{}'", path);
  out << doc.dump() << '\n';
  if (!out) fail("error while writing the trace file '{}'", path);
}

}  // namespace tessel::sim
