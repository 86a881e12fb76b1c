// GM target: the simple (next-free-time) or banked DRAM timing, the functional copy, and the
// --dram-trace request log.
#include "simulator/dram.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

#include "compiler/support/error.h"
#include "npu_model/timing.h"
#include "simulator/run_state.h"

namespace tessel::sim {

Dram::Dram(sc_core::sc_module_name name, RunState& run)
    : sc_core::sc_module(name),
      socket("socket"),
      run_(run),
      core_target_(this,
                   [](void* d, tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
                     static_cast<Dram*>(d)->b_transport(0, t, delay);
                   }),
      bytes_per_cycle_(static_cast<uint64_t>(run.hw->dram.bytes_per_cycle)),
      latency_cycles_(static_cast<uint64_t>(run.hw->dram.latency_cycles)),
      burst_bytes_(static_cast<uint64_t>(std::max(run.hw->dram.burst_bytes, 1))) {
  if (run.hw->dram.bytes_per_cycle <= 0)
    fail("hardware config: memory.dram.bytes_per_cycle is {}, expected a positive value",
         run.hw->dram.bytes_per_cycle);
  if (run.hw->dram.latency_cycles < 0)
    fail("hardware config: memory.dram.latency_cycles is {}, expected >= 0",
         run.hw->dram.latency_cycles);
  if (run.hw->dram.model == npu::DramModel::banked) {
    banked_ = std::make_unique<BankedDram>(*run.hw);
    if (static_cast<int64_t>(burst_bytes_) != npu::dram_burst_bytes(run.hw->dram.banked))
      fail(
          "hardware config: memory.dram.burst_bytes is {} but the banked model moves {}-byte "
          "bursts",
          burst_bytes_, npu::dram_burst_bytes(run.hw->dram.banked));
  }
  const std::string& path = run.options->dram_trace_path;
  if (!path.empty()) {
    trace_path_ = path;
    trace_tmp_ = path + ".tmp";
    trace_.open(trace_tmp_);
    if (!trace_) fail("cannot write the DRAM trace file '{}'", path);
    const npu::HwConfig& hw = *run.hw;
    trace_ << "# tessel DRAM request trace v1 (docs/memory.md): CYCLE CORE CHANNEL ADDRESS BYTES "
              "R|W\n";
    trace_ << fmt::format("# hw {} | model {} | clock_ghz {} | burst_bytes {} | channels {}{}\n",
                          hw.name, banked_ ? "banked" : "simple", hw.clock_ghz, burst_bytes_,
                          banked_ ? hw.dram.banked.channels : 1,
                          banked_ ? fmt::format(" | dram {} | tCK_ps {}", hw.dram.banked.name,
                                                hw.dram.banked.timing.tCK_ps)
                                  : "");
  }
  socket.register_b_transport(this, &Dram::b_transport);
}

Dram::~Dram() {
  if (trace_.is_open()) {
    trace_.close();
    std::remove(trace_tmp_.c_str());
  }
}

void Dram::commit_trace() {
  if (!trace_.is_open()) return;
  trace_.flush();
  const bool ok = static_cast<bool>(trace_);
  trace_.close();
  if (!ok) {
    std::remove(trace_tmp_.c_str());
    fail("error while writing the DRAM trace file '{}'", trace_path_);
  }
  std::error_code ec;
  std::filesystem::rename(trace_tmp_, trace_path_, ec);
  if (ec) {
    std::remove(trace_tmp_.c_str());
    fail("cannot write the DRAM trace file '{}': {}", trace_path_, ec.message());
  }
}

std::vector<DramChannelStats> Dram::channel_stats() const {
  if (banked_) return banked_->stats();
  return {simple_stats_};
}

void Dram::record(uint64_t issue, bool read, int core, const std::vector<uint64_t>& bursts,
                  const std::vector<DramRequestResult>& results) {
  // Chrome trace: one DramTransfer per channel this transfer used (its data span and counts).
  std::vector<DramTransfer> per_channel;
  for (size_t i = 0; i < results.size(); ++i) {
    const DramRequestResult& r = results[i];
    if (trace_.is_open())
      trace_ << issue << ' ' << core << ' ' << r.channel << " 0x" << std::hex << bursts[i]
             << std::dec << ' ' << burst_bytes_ << (read ? " R\n" : " W\n");
    if (!run_.tracing) continue;
    DramTransfer* t = nullptr;
    for (DramTransfer& x : per_channel)
      if (x.channel == r.channel) t = &x;
    if (t == nullptr) {
      per_channel.push_back(DramTransfer{});
      t = &per_channel.back();
      t->channel = r.channel;
      t->read = read;
      t->start_cycle = UINT64_MAX;
    }
    t->start_cycle = std::min(t->start_cycle, banked_->to_npu_cycles(r.data_start_ck));
    t->done_cycle = std::max(t->done_cycle, banked_->to_npu_cycles(r.data_end_ck));
    t->burst_bytes += burst_bytes_;
    ++(r.outcome == RowOutcome::hit    ? t->row_hits
       : r.outcome == RowOutcome::miss ? t->row_misses
                                       : t->bank_conflicts);
  }
  for (DramTransfer& t : per_channel) {
    if (t.done_cycle <= t.start_cycle) t.done_cycle = t.start_cycle + 1;
    run_.dram_transfers.push_back(t);
  }
}

DramServed Dram::serve_runs(uint64_t issue, bool read, int core, const std::vector<GmRun>& runs,
                            uint64_t* burst_bytes) {
  const uint64_t b = burst_bytes_;
  if (banked_) {
    bursts_.clear();
    for (const GmRun& r : runs) {
      if (r.bytes == 0) continue;
      for (uint64_t blk = r.address / b; blk <= (r.address + r.bytes - 1) / b; ++blk)
        bursts_.push_back(blk * b);
    }
    DramServed served;
    served.done_cycle = banked_->serve(issue, read, bursts_, &results_, &served.accepted_cycle);
    *burst_bytes += bursts_.size() * b;
    last_ = OpDramStats{};
    for (const DramRequestResult& r : results_) {
      ++last_.requests;
      ++(r.outcome == RowOutcome::hit    ? last_.row_hits
         : r.outcome == RowOutcome::miss ? last_.row_misses
                                         : last_.bank_conflicts);
    }
    if (trace_.is_open() || run_.tracing) record(issue, read, core, bursts_, results_);
    return served;
  }
  uint64_t total = 0;
  for (const GmRun& r : runs) {
    if (r.bytes == 0) continue;
    const uint64_t first = r.address / b, last = (r.address + r.bytes - 1) / b;
    total += (last - first + 1) * b;
    if (trace_.is_open())
      trace_ << issue << ' ' << core << " 0 0x" << std::hex << first * b << std::dec << ' '
             << (last - first + 1) * b << (read ? " R\n" : " W\n");
  }
  *burst_bytes += total;
  if (total == 0) return {issue, issue};
  const uint64_t start = std::max(issue, next_free_cycle_);
  const uint64_t done = start + (total + bytes_per_cycle_ - 1) / bytes_per_cycle_;
  next_free_cycle_ = done;
  ++simple_stats_.requests;
  (read ? simple_stats_.read_bytes : simple_stats_.write_bytes) += total;
  simple_stats_.busy_cycles += done - start;
  if (run_.tracing) run_.dram_transfers.push_back({start, done, total, read});
  return {done, done};
}

void Dram::b_transport(int /*id*/, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  DmaExtension* ext = trans.get_extension<DmaExtension>();
  if (!ext || !ext->instr) internal_fail("Dram: transaction without a DmaExtension");
  const uint64_t issue = run_.kernel.now() + delay.value();
  const uint64_t g = trans.get_data_length();
  // The descriptor is read only where it is needed (the instruction is a cache miss at scale).
  auto dma_args = [&]() -> const isa::DmaArgs& {
    const auto* dma = std::get_if<isa::DmaArgs>(&ext->instr->args);
    if (!dma) internal_fail("Dram: transaction for a non-dma instruction");
    return *dma;
  };
  uint64_t burst_bytes = 0;
  uint64_t done = issue, tail = 0;  // tail: banked data still in flight after `done`
  if (!banked_ && !trace_.is_open()) {
    // The simple model's fast path: the channel moves whole bursts, busy for the burst-rounded
    // bytes (== g when memory.dram.burst_bytes is 1), counted without listing the runs.
    burst_bytes = g == 0             ? 0
                  : ext->burst_bytes ? ext->burst_bytes
                                     : npu::dma_gm_burst_bytes(*run_.hw, dma_args());
    if (burst_bytes > 0) {
      const uint64_t start = std::max(issue, next_free_cycle_);
      done = start + (burst_bytes + bytes_per_cycle_ - 1) / bytes_per_cycle_;
      next_free_cycle_ = done;
      ++simple_stats_.requests;
      (trans.is_read() ? simple_stats_.read_bytes : simple_stats_.write_bytes) += burst_bytes;
      simple_stats_.busy_cycles += done - start;
      if (run_.tracing) run_.dram_transfers.push_back({start, done, burst_bytes, trans.is_read()});
    }
  } else if (g > 0) {
    runs_.clear();
    npu::for_each_gm_run(dma_args(), [&](uint64_t a, uint64_t n) { runs_.push_back({a, n}); });
    const DramServed served = serve_runs(issue, trans.is_read(), ext->core, runs_, &burst_bytes);
    done = served.accepted_cycle;
    tail = served.done_cycle - served.accepted_cycle;
    const int op = ext->instr->op_index;
    if (banked_ && op >= 0 && static_cast<size_t>(op) < run_.result.op_dram.size()) {
      OpDramStats& s = run_.result.op_dram[op];
      s.requests += last_.requests;
      s.row_hits += last_.row_hits;
      s.row_misses += last_.row_misses;
      s.bank_conflicts += last_.bank_conflicts;
    }
  }
  if (trans.is_read())
    run_.result.dram_read_bytes += g;
  else
    run_.result.dram_write_bytes += g;
  run_.result.dram_burst_bytes += burst_bytes;
  if (ext->functional) {
    isa::CoreMemory mem = *ext->memory;
    mem.base[int(isa::Scope::gm)] = run_.gm;
    mem.size[int(isa::Scope::gm)] = run_.gm_bytes;
    isa::execute(*run_.hw, *ext->instr, mem);
  }
  ext->dram_done_cycle = done;
  ext->dram_latency_cycles = latency_cycles_ + tail;
  delay = sc_core::sc_time::from_value(done - run_.kernel.now());
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace tessel::sim
