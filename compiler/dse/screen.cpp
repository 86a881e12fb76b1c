// Analytical screening of a sweep (see screen.h).
#include "compiler/dse/screen.h"

#include <algorithm>
#include <cmath>

#include "compiler/backend/npu/compile.h"
#include "compiler/support/error.h"
#include "npu_model/timing.h"

namespace tessel::dse {

const std::vector<std::string>& screen_point_keys() {
  static const std::vector<std::string> keys = {"memory.dram.bytes_per_cycle",
                                                "memory.dram.latency_cycles"};
  return keys;
}

bool is_screen_point_key(const std::string& key) {
  const auto& k = screen_point_keys();
  return std::find(k.begin(), k.end(), key) != k.end();
}

void set_screen_point_key(npu::HwConfig& hw, const std::string& key, double value) {
  const bool latency = key == "memory.dram.latency_cycles";
  if (!(value == std::floor(value)) || value < (latency ? 0 : 1) || value > 1e9)
    fail("screening: {} = {}: expected an integer {}", key, value, latency ? ">= 0" : ">= 1");
  if (key == "memory.dram.bytes_per_cycle")
    hw.dram.bytes_per_cycle = static_cast<int>(value);
  else if (latency)
    hw.dram.latency_cycles = static_cast<int>(value);
  else
    fail("screening: {} is not a per-point key", key);
}

int bandwidth_octave(double bytes_per_cycle) {
  return static_cast<int>(std::lround(std::log2(std::max(1.0, bytes_per_cycle))));
}

int octave_bytes_per_cycle(int octave) {
  return static_cast<int>(std::lround(std::ldexp(1.0, std::clamp(octave, 0, 30))));
}

int latency_band(double latency_cycles) {
  return static_cast<int>(std::lround(std::log2(std::max(1.0, latency_cycles))));
}

int band_latency_cycles(int band) {
  return static_cast<int>(std::lround(std::ldexp(1.0, std::clamp(band, 0, 30))));
}

ScreenAnchor lower_anchor(const Graph& graph, const npu::HwConfig& hw,
                          const npu_backend::NpuCompileOptions& options) {
  npu_backend::NpuCompileOptions o;
  o.op_knobs = options.op_knobs;
  o.double_buffer = options.double_buffer;
  o.multicore = options.multicore;
  const npu_backend::LoweredGraph lowered(graph, hw, o);
  ScreenAnchor a;
  a.priced_dram_latency_cycles = hw.dram.latency_cycles;
  for (const auto& k : lowered.kernels()) a.kernels.push_back(k.schedule->profile(k.knobs));
  // Every kernel ends with a barrier (core_barrier on several cores): one scalar issue each.
  a.barrier_cycles =
      static_cast<double>(a.kernels.size()) * std::max(1, hw.core.scalar.cycles_per_instruction);
  return a;
}

void reprice_dram(const npu::HwConfig& hw, const npu::KernelProfile& p,
                  double priced_dram_latency_cycles, npu::KernelProfile& out) {
  out.uses.assign(p.uses.begin(), p.uses.end());
  out.tiles = p.tiles;
  out.steps_per_tile = p.steps_per_tile;
  out.dram_bytes = p.dram_bytes;
  out.scalar_per_tile = p.scalar_per_tile;
  out.double_buffer = p.double_buffer;
  out.cores_used = p.cores_used;
  const double latency = static_cast<double>(hw.dram.latency_cycles) - priced_dram_latency_cycles;
  // Each transfer is priced on the whole channel, as the tuner prices it: in the simulator's
  // FIFO channel (simulator/dram.cpp) the cores of a split kernel fall into a staggered order, and
  // while one core's MTE2 waits out its latency the channel serves the others, so the sharing is
  // the kernel's channel time (estimate_kernel's dram_cycles, every core's bytes) against its
  // pipeline, not 1/c of the channel for every transfer on top of its latency.
  const double bpc = static_cast<double>(std::max(1, hw.dram.bytes_per_cycle));
  for (npu::InstrUse& u : out.uses) {
    if (u.dram_bytes <= 0) continue;
    // dram_transfer_cycles(hw, bytes) = ceil(bytes / bytes_per_cycle), inlined.
    u.occupancy_cycles = std::max(u.pipe_occupancy_cycles, std::ceil(u.dram_bytes / bpc));
    u.latency_cycles += latency;
  }
}

double estimate_cycles(const ScreenAnchor& anchor, const npu::HwConfig& hw,
                       ScreenScratch& scratch) {
  double cycles = anchor.barrier_cycles;
  for (const npu::KernelProfile& k : anchor.kernels) {
    reprice_dram(hw, k, anchor.priced_dram_latency_cycles, scratch.profile);
    cycles += npu::estimate_kernel(hw, scratch.profile).cycles;
  }
  return cycles;
}

double kendall_tau(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size())
    fail("kendall_tau: {} values of x and {} of y (expected pairs)", x.size(), y.size());
  if (x.size() < 2) fail("kendall_tau: {} pairs (needs at least 2)", x.size());
  const size_t n = x.size();
  double concordant = 0, discordant = 0, tied_x = 0, tied_y = 0;
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 1; j < n; ++j) {
      const double dx = x[i] - x[j], dy = y[i] - y[j];
      if (dx == 0) tied_x += 1;
      if (dy == 0) tied_y += 1;
      if (dx == 0 || dy == 0) continue;
      ((dx > 0) == (dy > 0) ? concordant : discordant) += 1;
    }
  const double pairs = static_cast<double>(n) * static_cast<double>(n - 1) / 2;
  if (tied_x == pairs || tied_y == pairs)
    fail("kendall_tau: every {} value is the same (tau is undefined)", tied_x == pairs ? "x" : "y");
  return (concordant - discordant) / std::sqrt((pairs - tied_x) * (pairs - tied_y));
}

}  // namespace tessel::dse
