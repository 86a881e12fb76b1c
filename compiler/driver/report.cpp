// JSON reports and text tables (see report.h).
#include "compiler/driver/report.h"

#include <fmt/format.h>

#include "npu_model/area_energy.h"
#include "npu_model/roofline.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>

namespace tessel::driver {

namespace {

bool numeric_cell(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == ',' || c == '.' || c == '%' ||
          c == '-' || c == 'e' || c == '+'))
      return false;
  return std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-';
}

constexpr isa::Pipe kPipes[] = {isa::Pipe::scalar, isa::Pipe::mte2, isa::Pipe::mte1,
                                isa::Pipe::cube,   isa::Pipe::fix,  isa::Pipe::vector,
                                isa::Pipe::mte3};

/// Sums of DRAM channel counters (the report's "all" row and JSON totals).
struct DramTotals {
  uint64_t read_bytes = 0, write_bytes = 0, requests = 0, row_hits = 0, row_misses = 0,
           bank_conflicts = 0, refreshes = 0, refresh_stall_cycles = 0, busy_cycles = 0,
           channels = 0;
  void add(const sim::DramChannelStats& c) {
    read_bytes += c.read_bytes;
    write_bytes += c.write_bytes;
    requests += c.requests;
    row_hits += c.row_hits;
    row_misses += c.row_misses;
    bank_conflicts += c.bank_conflicts;
    refreshes += c.refreshes;
    refresh_stall_cycles += c.refresh_stall_cycles;
    busy_cycles += c.busy_cycles;
    ++channels;
  }
};

}  // namespace

std::string with_commas(uint64_t v) {
  std::string s = std::to_string(v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

std::string Table::str(const std::string& indent) const {
  std::vector<size_t> width(headers_.size(), 0);
  for (size_t c = 0; c < headers_.size(); ++c) width[c] = headers_[c].size();
  for (const auto& r : rows_)
    for (size_t c = 0; c < r.size() && c < width.size(); ++c)
      width[c] = std::max(width[c], r[c].size());
  auto line = [&](const std::vector<std::string>& cells, bool header) {
    std::string s = indent;
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < cells.size() ? cells[c] : "";
      const bool right = !header && numeric_cell(cell);
      const std::string pad(width[c] - cell.size(), ' ');
      s += right ? pad + cell : cell + pad;
      if (c + 1 < width.size()) s += "  ";
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    return s + "\n";
  };
  std::string out = line(headers_, true);
  std::string rule = indent;
  for (size_t c = 0; c < width.size(); ++c)
    rule += std::string(width[c], '-') + (c + 1 < width.size() ? "  " : "");
  out += rule + "\n";
  for (const auto& r : rows_) out += line(r, false);
  return out;
}

nlohmann::json dram_json(const sim::SimResult& s, const npu::HwConfig& hw) {
  using nlohmann::json;
  json channels = json::array();
  DramTotals t;
  for (const sim::DramChannelStats& c : s.dram_channels) {
    const double bpc = s.total_cycles ? static_cast<double>(c.read_bytes + c.write_bytes) /
                                            static_cast<double>(s.total_cycles)
                                      : 0.0;
    channels.push_back({{"read_bytes", c.read_bytes},
                        {"write_bytes", c.write_bytes},
                        {"requests", c.requests},
                        {"row_hits", c.row_hits},
                        {"row_misses", c.row_misses},
                        {"bank_conflicts", c.bank_conflicts},
                        {"activates", c.activates},
                        {"precharges", c.precharges},
                        {"refreshes", c.refreshes},
                        {"refresh_stall_cycles", c.refresh_stall_cycles},
                        {"busy_cycles", c.busy_cycles},
                        {"bytes_per_cycle", bpc},
                        {"gb_per_s", bpc * hw.clock_ghz}});
    t.add(c);
  }
  json j = {{"model", s.dram_model},
            {"requests", t.requests},
            {"row_hits", t.row_hits},
            {"row_misses", t.row_misses},
            {"bank_conflicts", t.bank_conflicts},
            {"refreshes", t.refreshes},
            {"refresh_stall_cycles", t.refresh_stall_cycles},
            {"channels", channels}};
  if (hw.dram.model == npu::DramModel::banked) j["device"] = hw.dram.banked.name;
  return j;
}

nlohmann::json npu_run_json(const NpuRun& run, const npu::HwConfig& hw) {
  using nlohmann::json;
  const auto& s = run.sim;
  json j;
  j["total_cycles"] = s.total_cycles;
  j["time_us"] = static_cast<double>(s.total_cycles) / (hw.clock_ghz * 1e3);
  uint64_t static_instr = 0;
  for (const auto& c : run.module.program.cores) static_instr += c.size();
  j["instructions"] = {{"static", static_instr}, {"dynamic", s.instructions}};
  json busy = json::object(), util = json::object(), per_core = json::array();
  for (isa::Pipe p : kPipes) {
    uint64_t b = 0;
    for (const auto& c : s.cores) b += c.pipes[static_cast<int>(p)].busy_cycles;
    busy[isa::pipe_name(p)] = b;
    const double denom = static_cast<double>(s.total_cycles) *
                         static_cast<double>(std::max<size_t>(s.cores.size(), 1));
    util[isa::pipe_name(p)] = denom > 0 ? static_cast<double>(b) / denom : 0.0;
  }
  for (const auto& c : s.cores) {
    json cj;
    for (isa::Pipe p : kPipes)
      cj["busy_cycles"][isa::pipe_name(p)] = c.pipes[static_cast<int>(p)].busy_cycles;
    cj["finish_cycle"] = c.finish_cycle;
    per_core.push_back(cj);
  }
  j["per_pipe_busy_cycles"] = busy;
  j["per_pipe_utilization"] = util;
  j["per_core"] = per_core;
  json bytes = json::object();
  for (int sc = 0; sc < isa::kNumScopes; ++sc) {
    uint64_t r = 0, w = 0;
    for (const auto& c : s.cores) {
      r += c.bytes_read[sc];
      w += c.bytes_written[sc];
    }
    bytes[isa::scope_name(static_cast<isa::Scope>(sc))] = {{"read", r}, {"written", w}};
  }
  j["bytes"] = bytes;
  j["dram_bytes"] = {{"read", s.dram_read_bytes},
                     {"written", s.dram_write_bytes},
                     {"total", s.dram_read_bytes + s.dram_write_bytes},
                     // the bytes of the whole DRAM bursts those accesses occupied
                     // (memory.dram.burst_bytes; equal to total when it is 1)
                     {"burst", s.dram_burst_bytes}};
  j["dram"] = dram_json(s, hw);
  if (hw.l2.enabled()) {  // memory.l2: dram_bytes above are then what DRAM itself moved
    const sim::L2Stats& l = s.l2;
    j["l2"] = {{"requests", l.requests},
               {"hit_requests", l.hit_requests},
               {"read_hit_lines", l.read_hit_lines},
               {"read_miss_lines", l.read_miss_lines},
               {"write_hit_lines", l.write_hit_lines},
               {"write_miss_lines", l.write_miss_lines},
               {"read_bytes", l.read_bytes},
               {"write_bytes", l.write_bytes},
               {"fill_bytes", l.fill_bytes},
               {"writeback_bytes", l.writeback_bytes},
               {"dirty_bytes_at_end", l.dirty_bytes_at_end}};
    if (l.prefetch_requests > 0 || l.discard_requests > 0)  // memory.l2.placement hints
      j["l2"]["placement"] = {{"prefetch_requests", l.prefetch_requests},
                              {"prefetch_bytes", l.prefetch_bytes},
                              {"prefetch_fill_bytes", l.prefetch_fill_bytes},
                              {"prefetch_used_lines", l.prefetch_used_lines},
                              {"prefetch_dropped_bytes", l.prefetch_dropped_bytes},
                              {"discard_requests", l.discard_requests},
                              {"discarded_bytes", l.discarded_bytes},
                              {"discarded_dirty_bytes", l.discarded_dirty_bytes}};
  }
  if (s.multicast.requests > 0)
    j["multicast"] = {{"requests", s.multicast.requests},
                      {"received", s.multicast.received},
                      {"saved_bytes", s.multicast.saved_bytes}};
  if (s.rtl.enabled)  // core.cube.model: rtl (docs/rtl.md)
    j["rtl"] = {{"mmad_checked", s.rtl.mmad_checked},
                {"value_mismatches", s.rtl.value_mismatches},
                {"cycle_mismatches", s.rtl.cycle_mismatches},
                {"max_cycle_error", s.rtl.max_cycle_error},
                {"float_mmads", s.rtl.float_mmads},
                {"unsampled_mmads", s.rtl.unsampled_mmads},
                {"rtl_cycles", s.rtl.rtl_cycles}};
  // Compiled kernels, counted as the summary line counts them (a fusion group is one kernel).
  j["kernels"] = std::count_if(run.module.kernels.begin(), run.module.kernels.end(),
                               [](const auto& k) { return k.op_index >= 0; });
  json ops = json::array();
  double roof_total = 0;
  for (const auto& k : run.module.kernels) {
    json o = {{"name", k.node},
              {"op_type", k.op_type},
              {"kind", k.kind},
              {"instructions", k.instructions}};
    uint64_t cycles = 0;
    if (k.op_index >= 0 && static_cast<size_t>(k.op_index) < s.op_cycles.size())
      cycles = s.op_cycles[k.op_index];
    o["cycles"] = cycles;
    o["simulated_cycles"] = cycles;
    if (k.op_index >= 0 && static_cast<size_t>(k.op_index) < s.op_busy_cycles.size()) {
      // Busy cycles of the op's instructions per pipe (all cores), and utilisation over the op's
      // span: busy / (cycles x cores).
      json ob = json::object(), ou = json::object();
      const double denom =
          static_cast<double>(cycles) * static_cast<double>(std::max<size_t>(s.cores.size(), 1));
      for (isa::Pipe p : kPipes) {
        if (p == isa::Pipe::scalar) continue;
        const uint64_t b = s.op_busy_cycles[k.op_index][static_cast<int>(p)];
        ob[isa::pipe_name(p)] = b;
        ou[isa::pipe_name(p)] = denom > 0 ? static_cast<double>(b) / denom : 0.0;
      }
      o["per_pipe_busy_cycles"] = ob;
      o["per_pipe_utilization"] = ou;
    }
    if (s.dram_model == "banked" && k.op_index >= 0 &&
        static_cast<size_t>(k.op_index) < s.op_dram.size()) {
      const sim::OpDramStats& d = s.op_dram[k.op_index];
      o["dram"] = {{"requests", d.requests},
                   {"row_hits", d.row_hits},
                   {"row_misses", d.row_misses},
                   {"bank_conflicts", d.bank_conflicts}};
    }
    if (!k.schedules.empty()) {
      json sch = json::array();
      for (const auto& sk : k.schedules)
        sch.push_back({{"task", sk.task},
                       {"kind", sk.kind},
                       {"knobs", sk.knobs},
                       {"source", npu_backend::knob_source_name(sk.source)}});
      o["schedules"] = sch;
    }
    if (k.op_index >= 0) {
      const npu::Roofline r = npu::roofline(hw, k.work);
      roof_total += r.cycles;
      o["roofline_cycles"] = r.cycles;
      o["bound"] = r.bound;
      o["efficiency"] = cycles ? r.cycles / static_cast<double>(cycles) : 0.0;
      o["macs"] = k.work.cube_macs;
      o["roofline_per_unit"] = {{"cube", r.cube}, {"vector", r.vector}, {"mte1", r.mte1},
                                {"mte2", r.mte2}, {"fix", r.fix},       {"mte3", r.mte3},
                                {"dram", r.dram}};
      if (hw.l2.enabled()) o["roofline_per_unit"]["l2"] = r.l2;
    }
    ops.push_back(o);
  }
  j["ops"] = ops;
  j["roofline_cycles"] = roof_total;
  j["efficiency"] = s.total_cycles ? roof_total / static_cast<double>(s.total_cycles) : 0.0;
  j["compile_seconds"] = run.compile_seconds;
  j["schedule_seconds"] = run.schedule_seconds;
  j["simulate_seconds"] = s.host_seconds;
  const npu::AreaEnergy ae = npu::area_energy(hw, s);
  j["area_mm2"] = ae.area_mm2;
  j["energy_uj"] = ae.energy_uj;
  j["edp_uj_s"] = ae.edp_uj_s;
  j["average_power_w"] = ae.average_power_w;
  json components = json::array();
  for (const auto& c : ae.components)
    components.push_back({{"name", c.name},
                          {"area_mm2", c.area_mm2},
                          {"dynamic_uj", c.dynamic_uj},
                          {"leakage_uj", c.leakage_uj},
                          {"energy_uj", c.energy_uj()}});
  j["area_energy"] = {{"tech", ae.tech_name},        {"tech_file", ae.tech_file},
                      {"seconds", ae.seconds},       {"dynamic_uj", ae.dynamic_uj},
                      {"leakage_uj", ae.leakage_uj}, {"components", components}};
  // The counts the model priced (all cores), so that a figure can be checked by hand.
  const npu::Activity act = npu::activity_of(s);
  json vector_ops = json::object();
  const char* classes[] = {"add", "mult", "mac"};
  for (int k = 0; k < npu::kNumVectorOpClasses; ++k)
    for (int t = 0; t < npu::kNumTechTypes; ++t)
      vector_ops[classes[k]][npu::tech_type_name(static_cast<npu::TechType>(t))] =
          act.ops.vector_elem_ops[k][t];
  json delivered = json::object();
  for (isa::Pipe p : {isa::Pipe::mte2, isa::Pipe::mte1, isa::Pipe::fix, isa::Pipe::mte3})
    delivered[isa::pipe_name(p)] = act.ops.pipe_bytes_written[static_cast<int>(p)];
  j["area_energy"]["counts"] = {{"cube_macs", act.ops.cube_macs},
                                {"vector_elem_ops", vector_ops},
                                {"scalar_instructions", act.scalar_instructions},
                                {"dma_bytes_delivered", delivered},
                                {"dram_burst_bytes", act.dram_burst_bytes},
                                {"l2_data_bytes", act.l2_data_bytes},
                                {"l2_line_lookups", act.l2_line_lookups},
                                {"l2_dirty_bytes_at_end", act.l2_dirty_bytes_at_end}};
  return j;
}

std::string npu_run_text(const NpuRun& run, const npu::HwConfig& hw,
                         const std::vector<std::string>& sections) {
  const auto& s = run.sim;
  auto has = [&](const char* k) {
    return std::find(sections.begin(), sections.end(), k) != sections.end();
  };
  std::string out;
  uint64_t static_instr = 0;
  for (const auto& c : run.module.program.cores) static_instr += c.size();
  size_t kernels = 0;
  for (const auto& k : run.module.kernels) kernels += k.op_index >= 0;
  if (has("summary")) {
    out += fmt::format("  compiled   {} kernels, {} instructions in {:.2f} s\n", kernels,
                       with_commas(static_instr), run.compile_seconds);
    out += fmt::format(
        "  simulated  {} cycles = {:.1f} us at {:g} GHz ({} instructions executed, {:.2f} s "
        "host)\n",
        with_commas(s.total_cycles), static_cast<double>(s.total_cycles) / (hw.clock_ghz * 1e3),
        hw.clock_ghz, with_commas(s.instructions), s.host_seconds);
    out +=
        fmt::format("  DRAM       {} bytes read, {} bytes written ({} bytes in {}-byte bursts)\n",
                    with_commas(s.dram_read_bytes), with_commas(s.dram_write_bytes),
                    with_commas(s.dram_burst_bytes), hw.dram.burst_bytes);
    if (hw.l2.enabled()) {
      const sim::L2Stats& l = s.l2;
      const uint64_t lines = l.read_hit_lines + l.read_miss_lines;
      out += fmt::format(
          "  L2         {} MiB: {} requests ({} all hits), read lines {} hit / {} miss ({:.1f}% "
          "hits), write lines {} hit / {} miss; {} bytes filled, {} written back, {} dirty at "
          "end\n",
          static_cast<double>(hw.l2.capacity_bytes) / (1 << 20), with_commas(l.requests),
          with_commas(l.hit_requests), with_commas(l.read_hit_lines),
          with_commas(l.read_miss_lines),
          lines ? 100.0 * static_cast<double>(l.read_hit_lines) / static_cast<double>(lines) : 0.0,
          with_commas(l.write_hit_lines), with_commas(l.write_miss_lines),
          with_commas(l.fill_bytes), with_commas(l.writeback_bytes),
          with_commas(l.dirty_bytes_at_end));
      if (l.prefetch_requests > 0 || l.discard_requests > 0)
        out += fmt::format(
            "  L2 hints   {} prefetches ({} bytes asked, {} filled, {} lines used, {} dropped), "
            "{} discards ({} bytes dropped, {} of them dirty)\n",
            with_commas(l.prefetch_requests), with_commas(l.prefetch_bytes),
            with_commas(l.prefetch_fill_bytes), with_commas(l.prefetch_used_lines),
            with_commas(l.prefetch_dropped_bytes), with_commas(l.discard_requests),
            with_commas(l.discarded_bytes), with_commas(l.discarded_dirty_bytes));
    }
    if (s.multicast.requests > 0)
      out += fmt::format(
          "  multicast  {} dma_mc requests, {} received from another core's read ({} GM bytes "
          "not re-read)\n",
          with_commas(s.multicast.requests), with_commas(s.multicast.received),
          with_commas(s.multicast.saved_bytes));
    if (s.rtl.enabled)
      out += fmt::format(
          "  rtl        {} int8 mmads on the RTL cube, checked in lockstep: {} value and {} cycle "
          "mismatches (max cycle error {}); transaction-level: {} float, {} beyond rtl_sample; "
          "{} RTL cycles\n",
          with_commas(s.rtl.mmad_checked), s.rtl.value_mismatches, s.rtl.cycle_mismatches,
          s.rtl.max_cycle_error, with_commas(s.rtl.float_mmads), with_commas(s.rtl.unsampled_mmads),
          with_commas(s.rtl.rtl_cycles));
    double roof = 0;
    for (const auto& k : run.module.kernels)
      if (k.op_index >= 0) roof += npu::roofline(hw, k.work).cycles;
    out += fmt::format(
        "  roofline   {} cycles (sum over ops of the largest work / throughput), "
        "efficiency {:.1f}%\n",
        with_commas(static_cast<uint64_t>(roof)),
        s.total_cycles ? 100.0 * roof / static_cast<double>(s.total_cycles) : 0.0);
  }
  const bool energy = has("summary") || has("energy");
  const npu::AreaEnergy ae = energy ? npu::area_energy(hw, s) : npu::AreaEnergy{};
  if (has("summary")) {
    out += fmt::format(
        "  energy     {:.1f} uJ ({:.1f} dynamic + {:.1f} leakage), {:.3f} W average; area {:.1f} "
        "mm2; EDP {:.4g} uJ*s (tech {})\n",
        ae.energy_uj, ae.dynamic_uj, ae.leakage_uj, ae.average_power_w, ae.area_mm2, ae.edp_uj_s,
        ae.tech_name);
  }
  if (has("pipes")) {
    Table t({"pipe", "busy cycles", "utilisation", "instructions"});
    for (isa::Pipe p : kPipes) {
      uint64_t b = 0, n = 0;
      for (const auto& c : s.cores) {
        b += c.pipes[static_cast<int>(p)].busy_cycles;
        n += c.pipes[static_cast<int>(p)].instructions;
      }
      const double denom = static_cast<double>(s.total_cycles) *
                           static_cast<double>(std::max<size_t>(s.cores.size(), 1));
      t.add({isa::pipe_name(p), with_commas(b),
             fmt::format("{:.1f}%", denom > 0 ? 100.0 * static_cast<double>(b) / denom : 0.0),
             with_commas(n)});
    }
    out += "\n" + t.str();
  }
  if (has("memory")) {
    Table t({"memory", "bytes read", "bytes written"});
    for (int sc = 0; sc < isa::kNumScopes; ++sc) {
      uint64_t r = 0, w = 0;
      for (const auto& c : s.cores) {
        r += c.bytes_read[sc];
        w += c.bytes_written[sc];
      }
      t.add({isa::scope_name(static_cast<isa::Scope>(sc)), with_commas(r), with_commas(w)});
    }
    out += "\n" + t.str();
  }
  if (has("memory") && s.dram_model == "banked") {
    // The banked DRAM's channels: bytes, bandwidth over the run, row-buffer outcomes, refresh.
    Table t({"dram channel", "bytes read", "bytes written", "GB/s", "busy", "row hits",
             "row misses", "bank conflicts", "refresh stall cycles"});
    DramTotals sum;
    auto row = [&](const std::string& name, const DramTotals& c) {
      const double cycles = static_cast<double>(std::max<uint64_t>(s.total_cycles, 1));
      t.add({name, with_commas(c.read_bytes), with_commas(c.write_bytes),
             fmt::format("{:.1f}",
                         static_cast<double>(c.read_bytes + c.write_bytes) / cycles * hw.clock_ghz),
             fmt::format("{:.1f}%", 100.0 * static_cast<double>(c.busy_cycles) /
                                        (cycles * static_cast<double>(c.channels))),
             with_commas(c.row_hits), with_commas(c.row_misses), with_commas(c.bank_conflicts),
             with_commas(c.refresh_stall_cycles)});
    };
    for (size_t i = 0; i < s.dram_channels.size(); ++i) {
      DramTotals one;
      one.add(s.dram_channels[i]);
      row(std::to_string(i), one);
      sum.add(s.dram_channels[i]);
    }
    row("all", sum);
    out += "\n" + t.str();
  }
  if (has("energy")) {
    Table t({"component", "area mm2", "dynamic uJ", "leakage uJ", "energy uJ", "share"});
    for (const auto& c : ae.components)
      t.add(
          {c.name, fmt::format("{:.3f}", c.area_mm2), fmt::format("{:.3f}", c.dynamic_uj),
           fmt::format("{:.3f}", c.leakage_uj), fmt::format("{:.3f}", c.energy_uj()),
           fmt::format("{:.1f}%", ae.energy_uj > 0 ? 100.0 * c.energy_uj() / ae.energy_uj : 0.0)});
    t.add({"total", fmt::format("{:.3f}", ae.area_mm2), fmt::format("{:.3f}", ae.dynamic_uj),
           fmt::format("{:.3f}", ae.leakage_uj), fmt::format("{:.3f}", ae.energy_uj), "100.0%"});
    out += fmt::format("\n  area and energy (tech {}: {})\n", ae.tech_name, ae.tech_file) + t.str();
  }
  if (has("ops")) {
    std::vector<const npu_backend::KernelInfo*> ks;
    for (const auto& k : run.module.kernels)
      if (k.op_index >= 0) ks.push_back(&k);
    auto cycles = [&](const npu_backend::KernelInfo* k) {
      return static_cast<size_t>(k->op_index) < s.op_cycles.size() ? s.op_cycles[k->op_index] : 0;
    };
    std::stable_sort(ks.begin(), ks.end(), [&](auto* a, auto* b) { return cycles(a) > cycles(b); });
    const size_t shown = std::min<size_t>(ks.size(), 12);
    Table t({"op", "type", "unit", "cycles", "share", "roofline", "bound", "efficiency", "knobs"});
    for (size_t i = 0; i < shown; ++i) {
      const auto* k = ks[i];
      const npu::Roofline r = npu::roofline(hw, k->work);
      const double total = static_cast<double>(s.total_cycles);
      const double c = static_cast<double>(cycles(k));
      std::string src;
      for (const auto& sk : k->schedules) {
        const std::string n = npu_backend::knob_source_name(sk.source);
        if (src.find(n) == std::string::npos) src += (src.empty() ? "" : "+") + n;
      }
      t.add({k->node, k->op_type, k->kind, with_commas(cycles(k)),
             fmt::format("{:.1f}%", total > 0 ? 100.0 * c / total : 0.0),
             with_commas(static_cast<uint64_t>(r.cycles)), r.bound,
             fmt::format("{:.1f}%", c > 0 ? 100.0 * r.cycles / c : 0.0), src});
    }
    out += "\n" + t.str();
    if (ks.size() > shown)
      out += fmt::format("  ... {} more ops (all of them in --report)\n", ks.size() - shown);
  }
  return out;
}

nlohmann::json tuning_json(const tuner::TuneResult& r, const tuner::TuneOptions* o) {
  using nlohmann::json;
  json j = {{"run", r.run},
            {"trials", r.trials},
            {"replayed_trials", r.replayed},
            {"warm_started_trials", r.warm_started},
            {"seconds", r.seconds},
            {"default_total_cycles", r.default_total},
            {"tuned_total_cycles", r.best_total}};
  if (o) {
    j["strategy"] = tuner::strategy_name(o->strategy);
    j["oracle"] = tuner::oracle_name(o->oracle);
    j["seed"] = o->seed;
    j["budget"] = o->budget;
    j["jobs"] = o->jobs;
    if (!o->log_path.empty()) j["log"] = o->log_path;
  }
  json tasks = json::array();
  for (const auto& t : r.tasks)
    tasks.push_back({{"task", t.task.key},
                     {"kind", t.task.kind},
                     {"ops", t.task.ops},
                     {"weight", t.task.weight},
                     {"space_size", t.space_size},
                     {"trials", t.trials},
                     {"roofline_cycles", t.task.roofline_cycles},
                     {"default_cycles", t.default_cycles},
                     {"best_cycles", t.best_cycles},
                     {"knobs", t.best},
                     {"kept_default", t.kept_default},
                     {"fixed", t.task.fixed}});
  j["tasks"] = tasks;
  if (r.program.checked)
    j["program_check"] = {{"tuned_cycles", r.program.tuned_cycles},
                          {"default_cycles", r.program.default_cycles},
                          {"mixed_cycles", r.program.mixed_cycles},
                          {"cycles", r.program.cycles},
                          {"choice", r.program.choice},
                          {"seconds", r.program.seconds}};
  else
    j["program_check"] = nullptr;
  json curve = json::array();
  for (const auto& c : r.curve)
    curve.push_back(
        {{"trials", c.trials}, {"seconds", c.seconds}, {"total_cycles", c.total_cycles}});
  j["curve"] = curve;
  return j;
}

std::string tuning_text(const tuner::TuneResult& r) {
  std::string out = fmt::format(
      "  tuned      {} tasks, {} trials in {:.1f} s{}: sum over tasks of weight x kernel cycles "
      "{} -> {} ({:+.1f}%)\n",
      r.tasks.size(), with_commas(static_cast<uint64_t>(r.trials)), r.seconds,
      r.replayed ? fmt::format(" ({} replayed from the log)", r.replayed) : std::string(),
      with_commas(static_cast<uint64_t>(r.default_total)),
      with_commas(static_cast<uint64_t>(r.best_total)),
      r.default_total > 0 ? 100.0 * (r.best_total - r.default_total) / r.default_total : 0.0);
  if (r.program.checked) {
    size_t kept = 0;
    for (const auto& t : r.tasks) kept += t.kept_default;
    out += fmt::format(
        "  program    whole program (timing-only) with the tuned points {}, with the default "
        "points {}{}: kept {}{}\n",
        with_commas(r.program.tuned_cycles), with_commas(r.program.default_cycles),
        r.program.mixed_cycles ? ", mixed " + with_commas(r.program.mixed_cycles) : std::string(),
        r.program.choice,
        kept ? fmt::format(" ({} tasks keep their default)", kept) : std::string());
  }
  std::vector<const tuner::TaskResult*> ts;
  for (const auto& t : r.tasks) ts.push_back(&t);
  auto gain = [](const tuner::TaskResult* t) {
    return t->task.weight *
           (static_cast<double>(t->default_cycles) - static_cast<double>(t->best_cycles));
  };
  std::stable_sort(ts.begin(), ts.end(), [&](auto* a, auto* b) { return gain(a) > gain(b); });
  Table tab({"task", "first op", "weight", "trials", "default cycles", "tuned cycles", "gain"});
  for (size_t i = 0; i < ts.size() && i < 8; ++i) {
    const auto& t = *ts[i];
    tab.add({t.task.key, t.task.ops.empty() ? "" : t.task.ops.front(),
             fmt::format("{:g}", t.task.weight), std::to_string(t.trials),
             with_commas(t.default_cycles), with_commas(t.best_cycles),
             t.default_cycles
                 ? fmt::format("{:+.1f}%", 100.0 *
                                               (static_cast<double>(t.best_cycles) -
                                                static_cast<double>(t.default_cycles)) /
                                               static_cast<double>(t.default_cycles))
                 : std::string("")});
  }
  out += "\n" + tab.str();
  if (ts.size() > 8)
    out += fmt::format("  ... {} more tasks (all of them in --report)\n", ts.size() - 8);
  return out;
}

std::function<void(const tuner::Progress&)> tune_progress(std::ostream& err) {
  if (&err != &std::cerr || !::isatty(2)) return {};
  return [&err](const tuner::Progress& p) {
    err << fmt::format(
        "\rtune: {}/{} trials, {:.1f} trials/s, best {} cycles{}   ", p.trials, p.budget,
        p.trials_per_second, with_commas(static_cast<uint64_t>(p.best_total_cycles)),
        p.eta_seconds >= 0 ? fmt::format(", ETA {:.0f} s", p.eta_seconds) : std::string());
    if (p.trials >= p.budget) err << "\n";
    err.flush();
  };
}

std::function<void(const std::string&, size_t, size_t)> compile_progress(std::ostream& err) {
  if (&err != &std::cerr || !::isatty(2)) return {};
  const auto start = std::chrono::steady_clock::now();
  auto shown = std::make_shared<bool>(false);
  return [&err, start, shown](const std::string& phase, size_t done, size_t total) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!*shown && s < 2.0) return;
    *shown = true;
    const char* unit = phase == "lower" ? "nodes" : phase == "measure" ? "candidates" : "kernels";
    err << fmt::format("\rcompile: {} {}/{} {}, {:.0f} s   ", phase, done, total, unit, s);
    if (phase == "compile" && done == total) err << "\n";
    err.flush();
  };
}

nlohmann::json checks_json(const std::vector<OutputCheck>& checks) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& c : checks) {
    a.push_back({{"name", c.name},
                 {"shape_ok", c.shape_ok},
                 {"max_abs_error", std::isfinite(c.max_abs_error) ? nlohmann::json(c.max_abs_error)
                                                                  : nlohmann::json("inf")},
                 {"max_rel_error", c.max_rel_error},
                 {"max_expected", c.max_expected},
                 {"error_over_bound", std::isfinite(c.worst_ratio) ? nlohmann::json(c.worst_ratio)
                                                                   : nlohmann::json("inf")},
                 {"atol", c.tolerance.atol},
                 {"rtol", c.tolerance.rtol},
                 {"tolerance_basis", c.tolerance.basis},
                 {"pass", c.pass}});
  }
  return a;
}

std::string checks_text(const std::vector<OutputCheck>& checks) {
  Table t({"output", "max abs error", "error / bound", "atol", "rtol", "result"});
  for (const auto& c : checks) {
    if (!c.shape_ok) {
      t.add({c.name, "shape mismatch", "", "", "", "FAIL"});
      continue;
    }
    t.add({c.name, fmt::format("{:.3e}", c.max_abs_error),
           std::isfinite(c.worst_ratio) ? fmt::format("{:.3f}", c.worst_ratio) : "inf",
           fmt::format("{:.2e}", c.tolerance.atol), fmt::format("{:.2e}", c.tolerance.rtol),
           c.pass ? "PASS" : "FAIL"});
  }
  return t.str();
}

std::string tolerance_lines(const std::vector<OutputCheck>& checks) {
  std::string out;
  for (const auto& c : checks)
    out += checks.size() == 1 ? fmt::format("  tolerance: {}\n", c.tolerance.basis)
                              : fmt::format("  tolerance of {}: {}\n", c.name, c.tolerance.basis);
  return out;
}

}  // namespace tessel::driver
