// The banked DRAM timing model (memory.dram.model: banked): channels of ranks, bank groups and
// banks with a row buffer each, JEDEC-style command timing, open- or closed-page policy,
// all-bank refresh and an FR-FCFS scheduler per channel. docs/memory.md describes it in full.
//
// Requests are bursts (memory.dram.burst_bytes each). One serve() call takes the bursts of one
// transfer (a dma's GM access, or whatever sits in front of the DRAM: an L2's misses), all
// arriving at one NPU cycle, and schedules their commands against the state left by every earlier
// call (the event-driven simulator calls in non-decreasing arrival order). Per channel, FR-FCFS
// over a window of queue_depth pending requests: the oldest request whose row is open (a row hit)
// goes first, else the oldest. For each request the scheduler places, at the earliest DRAM clock
// every constraint allows: PRE (another row open: tRAS after its ACT, tRTP after a RD, tWR after
// write data), ACT (tRP after PRE, tRC = tRAS + tRP after the bank's last ACT, tRRD_S / tRRD_L
// after the rank's / bank group's last ACT, at most 4 ACTs per tFAW, not during a refresh), then
// RD/WR (tRCD after ACT, tCCD_S / tCCD_L after the channel's / bank group's last column command,
// tWTR after the rank's last write data for a read, the data bus free: data occupies tBURST =
// burst_length / transfers_per_ck clocks from tCL (read) or tCWL (write) after the command).
// ACTs are issued in request order per rank and column commands in request order per channel;
// ACT/PRE of a later request may go before an earlier request's column command (bank
// parallelism). Not modelled: command-bus slot conflicts (one command per tCK on a shared CA
// bus), rank-to-rank switching, per-bank refresh, power-down, read-to-write turnaround beyond
// the data bus.
//
// Refresh: every tREFI clocks per rank an all-bank refresh, placed after the rank's last command
// and once every bank can be precharged (open rows are closed: PRE, then REF tRP later); no ACT
// for tRFC after it. A request whose commands would reach a due refresh waits for it.
//
// Clocks: the model runs in DRAM clocks (tCK = tCK_ps). An NPU cycle c arrives at DRAM clock
// ceil(c * T_npu / tCK) and DRAM clock d ends at NPU cycle ceil(d * tCK / T_npu), with
// T_npu = 1 / clock_ghz; both periods are taken in femtoseconds (exact for every clock of a whole
// number of femtoseconds, e.g. 1 GHz = 1,000,000 fs).
#pragma once

#include <cstdint>
#include <vector>

#include "npu_model/dram_address.h"
#include "npu_model/hw_config.h"
#include "simulator/simulator.h"

namespace tessel::sim {

/// What one request found in its bank.
enum class RowOutcome { hit, miss, conflict };

/// One scheduled burst request (returned by BankedDram::serve).
struct DramRequestResult {
  uint32_t channel = 0;
  RowOutcome outcome = RowOutcome::hit;
  uint64_t column_ck = 0;                       // its RD/WR command, DRAM clock
  uint64_t data_start_ck = 0, data_end_ck = 0;  // the data beats on the channel, DRAM clocks
};

class BankedDram {
 public:
  /// hw.dram.banked must be a validated config (the loader's checks); throws tessel::Error on an
  /// address mapping it cannot parse.
  explicit BankedDram(const npu::HwConfig& hw);

  /// Schedules the bursts at `burst_addresses` (byte addresses, each the start of a burst; in
  /// arrival order) of one read or write transfer arriving at NPU cycle `arrival_cycle`; returns
  /// the NPU cycle at which the last data beat has moved (arrival_cycle when there are none).
  /// Fills `results` (one per burst, same order) when given, and `*accepted_cycle` with the NPU
  /// cycle after the last request's column command: from then on the DRAM has taken every request
  /// of the transfer and only their data is in flight (the engine that issued them may go on).
  uint64_t serve(uint64_t arrival_cycle, bool read, const std::vector<uint64_t>& burst_addresses,
                 std::vector<DramRequestResult>* results = nullptr,
                 uint64_t* accepted_cycle = nullptr);

  /// Per-channel counters so far (refresh stalls and data-bus cycles converted to NPU cycles).
  std::vector<DramChannelStats> stats() const;

  /// NPU cycle <-> DRAM clock conversions used by serve() (see the header comment).
  uint64_t to_dram_ck(uint64_t npu_cycle) const;
  uint64_t to_npu_cycles(uint64_t dram_ck) const;
  const npu::DramAddressMap& address_map() const { return map_; }

 private:
  struct Bank {
    bool open = false;
    uint64_t row = 0;
    int64_t act_ready = 0;  // earliest ACT
    int64_t pre_ready = 0;  // earliest PRE (open bank)
    int64_t col_ready = 0;  // earliest RD/WR (open bank)
  };
  struct Rank {
    int64_t last_act;             // latest ACT (kNever: none)
    std::vector<int64_t> bg_act;  // per bank group: latest ACT
    int64_t faw[4];               // the last four ACTs (ring)
    int faw_pos = 0;
    int64_t next_refresh = 0;  // when the next all-bank refresh is due
    int64_t refresh_end;       // no ACT before this
    int64_t last_cmd;          // latest command placed (a refresh goes after it)
    int64_t last_write_end;    // latest write data end (tWTR)
  };
  struct Channel {
    std::vector<Bank> banks;  // [rank][bank_group][bank]
    std::vector<Rank> ranks;
    std::vector<int64_t> bg_col;  // per rank x bank group: latest column command
    int64_t last_col;             // latest column command on the channel
    int64_t data_free = 0;        // the data bus is free from here
    DramChannelStats stats;
    uint64_t refresh_stall_ck = 0, data_busy_ck = 0;
  };
  struct Plan {
    RowOutcome outcome = RowOutcome::hit;
    int64_t pre = -1, act = -1, col = 0, data_start = 0, data_end = 0;
    int64_t refresh_wait = 0;  // clocks a refresh in progress delayed the ACT
  };

  Plan plan(const Channel& ch, const npu::DramCoord& c, bool read, int64_t t) const;
  void commit(Channel& ch, const npu::DramCoord& c, bool read, const Plan& p);
  void refresh(Channel& ch, Rank& r, uint32_t rank_index);
  DramRequestResult schedule(Channel& ch, const npu::DramCoord& c, bool read, int64_t arrival);
  size_t bank_index(const npu::DramCoord& c) const;

  npu::DramBankedConfig cfg_;
  npu::DramAddressMap map_;
  int64_t t_burst_ = 0;  // data clocks per burst
  uint64_t burst_bytes_ = 0;
  uint64_t npu_fs_ = 0, tck_fs_ = 0;  // clock periods, femtoseconds
  std::vector<Channel> channels_;
  // serve()'s scratch, kept across calls so a request allocates nothing once warm.
  std::vector<npu::DramCoord> coords_;
  std::vector<std::vector<uint32_t>> per_channel_;
};

}  // namespace tessel::sim
