// BankedDram: JEDEC-style bank/row timing with FR-FCFS per channel (see dram_banked.h).
#include "simulator/dram_banked.h"

#include <algorithm>
#include <cmath>

#include "compiler/support/error.h"

namespace tessel::sim {
namespace {

// "No such command yet": far enough in the past that every constraint from it is met.
constexpr int64_t kNever = -(int64_t{1} << 40);

}  // namespace

BankedDram::BankedDram(const npu::HwConfig& hw) : cfg_(hw.dram.banked), map_(hw.dram.banked) {
  const npu::DramTimingConfig& t = cfg_.timing;
  if (hw.dram.model != npu::DramModel::banked || cfg_.channels < 1 || cfg_.transfers_per_ck < 1 ||
      t.tCK_ps < 1 || hw.clock_ghz <= 0)
    internal_fail("BankedDram: memory.dram.banked is not a validated banked config");
  t_burst_ = cfg_.burst_length / cfg_.transfers_per_ck;
  burst_bytes_ = static_cast<uint64_t>(npu::dram_burst_bytes(cfg_));
  npu_fs_ = static_cast<uint64_t>(std::llround(1e6 / hw.clock_ghz));
  tck_fs_ = static_cast<uint64_t>(t.tCK_ps) * 1000;
  const size_t banks = size_t(cfg_.ranks) * cfg_.bank_groups * cfg_.banks_per_group;
  channels_.resize(cfg_.channels);
  for (Channel& ch : channels_) {
    ch.banks.assign(banks, Bank{});
    for (Bank& b : ch.banks) b.act_ready = b.pre_ready = b.col_ready = kNever;
    Rank r;
    r.last_act = kNever;
    r.bg_act.assign(cfg_.bank_groups, kNever);
    std::fill(std::begin(r.faw), std::end(r.faw), kNever);
    r.next_refresh = t.tREFI;
    r.refresh_end = kNever;
    r.last_cmd = kNever;
    r.last_write_end = kNever;
    ch.ranks.assign(cfg_.ranks, r);
    ch.bg_col.assign(size_t(cfg_.ranks) * cfg_.bank_groups, kNever);
    ch.last_col = kNever;
  }
}

uint64_t BankedDram::to_dram_ck(uint64_t c) const {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(c) * npu_fs_ + tck_fs_ - 1) /
                               tck_fs_);
}

uint64_t BankedDram::to_npu_cycles(uint64_t d) const {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(d) * tck_fs_ + npu_fs_ - 1) /
                               npu_fs_);
}

size_t BankedDram::bank_index(const npu::DramCoord& c) const {
  return (size_t(c.rank) * cfg_.bank_groups + c.bank_group) * cfg_.banks_per_group + c.bank;
}

BankedDram::Plan BankedDram::plan(const Channel& ch, const npu::DramCoord& c, bool read,
                                  int64_t t) const {
  const npu::DramTimingConfig& tm = cfg_.timing;
  const Bank& b = ch.banks[bank_index(c)];
  const Rank& r = ch.ranks[c.rank];
  Plan p;
  int64_t col = t;
  if (b.open && b.row == c.row) {
    p.outcome = RowOutcome::hit;
    col = std::max(col, b.col_ready);
  } else {
    int64_t act = t;
    if (b.open) {  // another row open: precharge it first
      p.outcome = RowOutcome::conflict;
      p.pre = std::max(t, b.pre_ready);
      act = p.pre + tm.tRP;
    } else {
      p.outcome = RowOutcome::miss;
    }
    act = std::max({act, b.act_ready, r.last_act + tm.tRRD_S, r.bg_act[c.bank_group] + tm.tRRD_L,
                    r.faw[r.faw_pos] + tm.tFAW});
    if (r.refresh_end > act) {
      p.refresh_wait = r.refresh_end - act;
      act = r.refresh_end;
    }
    p.act = act;
    col = act + tm.tRCD;
  }
  const int64_t latency = read ? tm.tCL : tm.tCWL;
  col = std::max({col, ch.last_col + tm.tCCD_S,
                  ch.bg_col[size_t(c.rank) * cfg_.bank_groups + c.bank_group] + tm.tCCD_L,
                  ch.data_free - latency});
  if (read) col = std::max(col, r.last_write_end + tm.tWTR);
  p.col = col;
  p.data_start = col + latency;
  p.data_end = p.data_start + t_burst_;
  return p;
}

void BankedDram::commit(Channel& ch, const npu::DramCoord& c, bool read, const Plan& p) {
  const npu::DramTimingConfig& tm = cfg_.timing;
  Bank& b = ch.banks[bank_index(c)];
  Rank& r = ch.ranks[c.rank];
  DramChannelStats& s = ch.stats;
  if (p.pre >= 0) {
    b.open = false;
    b.act_ready = std::max(b.act_ready, p.pre + tm.tRP);
    ++s.precharges;
  }
  if (p.act >= 0) {
    b.open = true;
    b.row = c.row;
    b.col_ready = p.act + tm.tRCD;
    b.pre_ready = p.act + tm.tRAS;
    b.act_ready = p.act + tm.tRAS + tm.tRP;  // tRC
    r.last_act = p.act;
    r.bg_act[c.bank_group] = p.act;
    r.faw[r.faw_pos] = p.act;
    r.faw_pos = (r.faw_pos + 1) % 4;
    ++s.activates;
  }
  ch.last_col = p.col;
  ch.bg_col[size_t(c.rank) * cfg_.bank_groups + c.bank_group] = p.col;
  ch.data_free = p.data_end;
  b.pre_ready = std::max(b.pre_ready, read ? p.col + tm.tRTP : p.data_end + tm.tWR);
  if (!read) r.last_write_end = p.data_end;
  r.last_cmd = std::max(r.last_cmd, p.col);
  if (cfg_.page_policy == npu::PagePolicy::closed_page) {  // auto-precharge at the earliest
    b.open = false;
    b.act_ready = std::max(b.act_ready, b.pre_ready + tm.tRP);
    r.last_cmd = std::max(r.last_cmd, b.pre_ready);
    ++s.precharges;
  }
  ++s.requests;
  (read ? s.read_bytes : s.write_bytes) += burst_bytes_;
  ++(p.outcome == RowOutcome::hit    ? s.row_hits
     : p.outcome == RowOutcome::miss ? s.row_misses
                                     : s.bank_conflicts);
  ch.data_busy_ck += static_cast<uint64_t>(t_burst_);
}

void BankedDram::refresh(Channel& ch, Rank& r, uint32_t rank_index) {
  const npu::DramTimingConfig& tm = cfg_.timing;
  // REF needs every bank of the rank precharged: close the open rows (PRE all), then REF.
  int64_t ref = std::max(r.next_refresh, r.last_cmd + 1);
  const size_t per_rank = size_t(cfg_.bank_groups) * cfg_.banks_per_group;
  bool any_open = false;
  int64_t pre_all = ref;
  for (size_t i = 0; i < per_rank; ++i) {
    const Bank& b = ch.banks[rank_index * per_rank + i];
    if (b.open) {
      any_open = true;
      pre_all = std::max(pre_all, b.pre_ready);
    } else {
      ref = std::max(ref, b.act_ready);  // its last PRE + tRP (and tRC after its last ACT)
    }
  }
  if (any_open) {
    ref = std::max(ref, pre_all + tm.tRP);
    ++ch.stats.precharges;
  }
  const int64_t end = ref + tm.tRFC;
  for (size_t i = 0; i < per_rank; ++i) {
    Bank& b = ch.banks[rank_index * per_rank + i];
    b.open = false;
    b.act_ready = std::max(b.act_ready, end);
  }
  r.refresh_end = end;
  r.last_cmd = std::max(r.last_cmd, ref);
  r.next_refresh += tm.tREFI;
  ++ch.stats.refreshes;
}

DramRequestResult BankedDram::schedule(Channel& ch, const npu::DramCoord& c, bool read,
                                       int64_t arrival) {
  Rank& r = ch.ranks[c.rank];
  // Refreshes that fell due while the channel was idle, up to this request's arrival.
  while (r.next_refresh <= arrival) refresh(ch, r, c.rank);
  Plan p = plan(ch, c, read, arrival);
  int64_t stall = p.refresh_wait;
  // A refresh falls due before this request's last command: it goes first, the request waits.
  while (std::max(p.col, p.act) >= r.next_refresh) {
    const int64_t before = p.col;
    refresh(ch, r, c.rank);
    p = plan(ch, c, read, arrival);
    stall = std::max<int64_t>(stall, 0) + std::max<int64_t>(0, p.col - before);
  }
  commit(ch, c, read, p);
  ch.refresh_stall_ck += static_cast<uint64_t>(std::max<int64_t>(stall, 0));
  DramRequestResult out;
  out.channel = c.channel;
  out.outcome = p.outcome;
  out.column_ck = static_cast<uint64_t>(p.col);
  out.data_start_ck = static_cast<uint64_t>(p.data_start);
  out.data_end_ck = static_cast<uint64_t>(p.data_end);
  return out;
}

uint64_t BankedDram::serve(uint64_t arrival_cycle, bool read,
                           const std::vector<uint64_t>& burst_addresses,
                           std::vector<DramRequestResult>* results, uint64_t* accepted_cycle) {
  if (results) results->assign(burst_addresses.size(), DramRequestResult{});
  if (accepted_cycle) *accepted_cycle = arrival_cycle;
  if (burst_addresses.empty()) return arrival_cycle;
  const int64_t arrival = static_cast<int64_t>(to_dram_ck(arrival_cycle));
  // Per channel, the requests in arrival order; FR-FCFS over the first queue_depth of them.
  std::vector<npu::DramCoord>& coords = coords_;
  std::vector<std::vector<uint32_t>>& per_channel = per_channel_;
  coords.resize(burst_addresses.size());
  per_channel.resize(channels_.size());
  for (auto& q : per_channel) q.clear();
  for (size_t i = 0; i < burst_addresses.size(); ++i) {
    coords[i] = map_.map(burst_addresses[i]);
    per_channel[coords[i].channel].push_back(static_cast<uint32_t>(i));
  }
  uint64_t last_end = 0, last_column = 0;
  const size_t depth = static_cast<size_t>(cfg_.queue_depth);
  for (size_t chi = 0; chi < channels_.size(); ++chi) {
    std::vector<uint32_t>& pending = per_channel[chi];  // unscheduled, oldest first
    Channel& ch = channels_[chi];
    size_t head = 0;  // pending[0, head) are scheduled; the window may have holes (UINT32_MAX)
    while (head < pending.size()) {
      // First ready, first come: of the window's requests, the one whose column command can
      // issue first (a row hit wins a tie, then the oldest). The oldest is taken at once when
      // nothing can go earlier than it (the channel's next column slot).
      const int64_t bound = std::max(ch.last_col + cfg_.timing.tCCD_S, arrival);
      size_t pick = head;
      int64_t best = INT64_MAX;
      bool best_hit = false;
      size_t seen = 0;
      for (size_t k = head; k < pending.size() && seen < depth; ++k) {
        if (pending[k] == UINT32_MAX) continue;
        ++seen;
        const Plan p = plan(ch, coords[pending[k]], read, arrival);
        const bool hit = p.outcome == RowOutcome::hit;
        if (p.col < best || (p.col == best && hit && !best_hit)) {
          best = p.col;
          best_hit = hit;
          pick = k;
        }
        if (best <= bound && (best_hit || k == head)) break;
      }
      const uint32_t i = pending[pick];
      const DramRequestResult res = schedule(ch, coords[i], read, arrival);
      last_end = std::max(last_end, res.data_end_ck);
      last_column = std::max(last_column, res.column_ck);
      if (results) (*results)[i] = res;
      pending[pick] = UINT32_MAX;
      while (head < pending.size() && pending[head] == UINT32_MAX) ++head;
    }
  }
  if (accepted_cycle) *accepted_cycle = std::max(arrival_cycle, to_npu_cycles(last_column + 1));
  return std::max(arrival_cycle, to_npu_cycles(last_end));
}

std::vector<DramChannelStats> BankedDram::stats() const {
  std::vector<DramChannelStats> out;
  for (const Channel& ch : channels_) {
    DramChannelStats s = ch.stats;
    s.refresh_stall_cycles = to_npu_cycles(ch.refresh_stall_ck);
    s.busy_cycles = to_npu_cycles(ch.data_busy_ck);
    out.push_back(s);
  }
  return out;
}

}  // namespace tessel::sim
