// Analytical screening of a sweep (docs/dse.md, "Screening"): every design point's cycles
// estimated with the compiler's cost model (npu_model/cost_model.h) instead of compiling and
// simulating it, so that a sweep can rank a million points and simulate only the best K.
//
// The points are grouped by their *structural* values -- every swept key but the per-point keys
// below (cube shape, buffer sizes, cores, pipe bandwidths, ...): each distinct group is an anchor,
// lowered once per workload with the analytical default schedules (npu_backend::LoweredGraph:
// the tiling passes' screening picks every kernel's tiles by the cost model), and every kernel's
// cost-model profile at its knobs is kept (ScreenAnchor). A point is then priced in a tight
// loop: for each kernel, its GM transfers are re-priced for the point's DRAM channel
// (reprice_dram) and npu::estimate_kernel gives its cycles; the point's estimate is the sum over
// the kernels (estimate_cycles). The per-point keys are those the cost model reads without
// re-tiling: memory.dram.bytes_per_cycle and memory.dram.latency_cycles. Each GM transfer is
// priced as the tuner prices it (the whole channel; the channel shared by a split kernel's cores
// is the cost model's dram_cycles term, every core's bytes). The tiles of an anchor
// are those chosen at its bandwidth octave's and latency band's values of the per-point keys
// (the base config's for a key not swept), so what the estimate misses is a point whose DRAM
// would change the default's tiles within its octave and band, the measured default's pick
// among candidates (the simulated points run compile_npu's measured default), and what only the
// simulator sees (exact queueing in the channel, exact overlap).
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "npu_model/cost_model.h"
#include "npu_model/hw_config.h"

namespace tessel::npu_backend {
struct NpuCompileOptions;
}

namespace tessel::dse {

/// The swept keys the screening model evaluates per point without lowering again (the others
/// are structural: one anchor per distinct combination of their values).
const std::vector<std::string>& screen_point_keys();
/// True when `key` is one of screen_point_keys().
bool is_screen_point_key(const std::string& key);

/// Sets per-point key `key` (is_screen_point_key) of `hw` to `value`. Throws tessel::Error when
/// the value is not a positive integer (the keys are integers in cycles or bytes per cycle;
/// latency may be 0).
void set_screen_point_key(npu::HwConfig& hw, const std::string& key, double value);

/// The DRAM bandwidth octave a screened point's anchor is lowered at: round(log2(bytes_per_cycle))
/// (bytes_per_cycle >= 1). The analytical default picks a kernel's tiles by the cost model, which
/// prices GM transfers on the channel, so the tiles of a point at 370 B/cycle are not those at the
/// base config's 102: one anchor per structural config and octave keeps every point within a
/// factor sqrt(2) of the bandwidth its tiles were chosen for (docs/dse.md, "Screening").
int bandwidth_octave(double bytes_per_cycle);
/// The bandwidth an octave's anchor is lowered at: 2^octave bytes per cycle, rounded.
int octave_bytes_per_cycle(int octave);

/// The DRAM latency band a screened point's anchor is lowered at: round(log2(latency_cycles))
/// (latency >= 1; 0 is band 0). The analytical default's tiles depend on the latency a GM
/// transfer holds its pipe for (larger K chunks hide a longer one), so, as with the bandwidth,
/// one anchor per structural config, octave and band keeps every point within a factor sqrt(2)
/// of the latency its tiles were chosen for: priced on tiles chosen at the base config's 200
/// cycles, a ResNet-50 point at 384 cycles was estimated 29.6% high (docs/dse.md, "Screening").
int latency_band(double latency_cycles);
/// The latency a band's anchor is lowered at: 2^band cycles, rounded (band 0: 1 cycle).
int band_latency_cycles(int band);

/// One workload lowered for one structural config: every kernel's cost-model profile at its
/// analytical default knobs, in program order.
struct ScreenAnchor {
  std::vector<npu::KernelProfile> kernels;
  /// dram.latency_cycles of the config the profiles were priced on (reprice_dram takes it off
  /// the GM transfers' latencies).
  double priced_dram_latency_cycles = 0;
  /// Cycles outside the kernels: one barrier per kernel (core_barrier's cost on several cores).
  double barrier_cycles = 0;
};

/// Lowers `graph` for `hw` with `options` (the workload's double_buffer / multicore / op knobs;
/// task knobs and candidates are not used: the analytical default picks every kernel's tiles)
/// and keeps each kernel's profile. Throws what npu_backend::LoweredGraph throws (a layer that
/// cannot be tiled into the config's scratchpads, an op without an NPU lowering).
ScreenAnchor lower_anchor(const Graph& graph, const npu::HwConfig& hw,
                          const npu_backend::NpuCompileOptions& options);

/// `profile` (priced on a config whose dram.latency_cycles was `priced_dram_latency_cycles`)
/// with its GM transfers re-priced for `hw`'s DRAM channel: each GM dma's occupancy is max(its
/// pipe occupancy, ceil(its burst-rounded bytes / dram.bytes_per_cycle)) and its latency its pipe
/// latency + hw.dram.latency_cycles: what npu::KernelProfile::add prices on `hw`. A kernel split
/// over cores shares the channel through estimate_kernel's dram_cycles (profile.dram_bytes is
/// every core's bytes), not per transfer: in the simulator's FIFO channel the cores fall into a
/// staggered order and one core's latency overlaps the others' transfers.
/// Writes into `out` (reused: no allocation once its capacity suffices).
void reprice_dram(const npu::HwConfig& hw, const npu::KernelProfile& profile,
                  double priced_dram_latency_cycles, npu::KernelProfile& out);

/// Scratch space of estimate_cycles (one per thread).
struct ScreenScratch {
  npu::KernelProfile profile;
};

/// The estimated cycles of `anchor` on `hw` (the anchor's structural config with the point's
/// per-point keys): the sum over its kernels of npu::estimate_kernel(hw, reprice_dram(...))
/// .cycles, plus anchor.barrier_cycles.
double estimate_cycles(const ScreenAnchor& anchor, const npu::HwConfig& hw, ScreenScratch& scratch);

/// Kendall's tau-b rank correlation of `x` and `y` (same length n >= 2): (concordant - discordant)
/// / sqrt((n0 - tx) (n0 - ty)), n0 = n (n - 1) / 2 pairs, tx / ty the pairs tied in x / y
/// (Kendall 1945; the tau-b of scipy.stats.kendalltau). O(n^2). Throws tessel::Error when the
/// lengths differ, n < 2, or every value of x or of y is the same (tau undefined).
double kendall_tau(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace tessel::dse
