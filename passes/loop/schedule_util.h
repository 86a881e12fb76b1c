// Helpers the tiling passes share to define their schedule spaces (schedule.h) and describe their
// points to the analytical cost model (npu_model/cost_model.h). Internal to passes/loop.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "passes/loop/schedule.h"

namespace tessel::passes {

/// Tile extents for an axis of `extent`: ceil(extent / d) for d = 1..8 and d = 16, 32, ...
/// (rounded up to a multiple of `step`, at most `extent`), distinct, largest first -- the extents
/// that give 1, 2, ..., 8, 16, ... tiles.
std::vector<int64_t> tile_extent_values(int64_t extent, int64_t step = 1);

/// The standard knobs: double_buffer {1, 0}; cores {hw.cores, ..., 4, 2, 1} (powers of two and the
/// count itself); split over the named loops (values 0..n-1, labelled).
Knob double_buffer_knob();
Knob cores_knob(const npu::HwConfig& hw);
Knob split_knob(const std::vector<std::string>& loops);

/// The core-split rule: with cores = 1 split must be its first value (nothing is split); with more
/// cores the split loop must have at least `cores` tiles (`tiles[split]`). False (and the reason
/// in `why`, when given) otherwise.
bool check_split(const Knobs& knobs, const Knob& split, const std::vector<int64_t>& tiles,
                 std::string* why);

/// Rejects with the reason `make()` builds only when it is asked for (`why` given): the fast
/// validity path formats no message.
template <class F>
bool no(std::string* why, F&& make) {
  if (why) *why = make();
  return false;
}

/// A dma (for the cost model) moving the box `box` (logical extents of a rank-N tensor) between
/// the GM buffer `gm` (dense, a strided view, or NC1HWC0: whole C0 blocks) and a dense local
/// buffer: `load` GM -> UB, else UB -> GM. Unit dims dropped, contiguous dims merged, at most
/// isa::kMaxDmaDims dims (outer ones folded); addresses 0, no padding.
isa::DmaArgs box_dma(const loop::Buffer& gm, const std::vector<int64_t>& box, bool load,
                     DType dtype);

/// A dma (for the cost model) of a copy with `extents` whose GM side has element strides
/// `gm_strides` and local side `local_strides` (as box_dma, without the layout handling).
isa::DmaArgs region_dma(const std::vector<int64_t>& extents, const std::vector<int64_t>& gm_strides,
                        const std::vector<int64_t>& local_strides, bool load, DType dtype);

/// The set_flag each of a tile's flagged GM transfers on one pipe waits behind, as insert_sync
/// places them: transfer i (in issue order) is first needed by the leaf at program position
/// `consumers[i]`. A transfer's flag is dropped when a later transfer's is needed no later (one
/// set_flag after both covers it), so transfer i waits behind the first kept flag at or after
/// it; the result is that flag's index for each transfer (npu::InstrUse::flag_group). E.g.
/// consumers {5, 5, 9} (input and weights read by one stage, the bias by a later one) give
/// {1, 1, 2}: two set_flags, each holding the pipe for its transfers' latency.
std::vector<int> flag_groups(const std::vector<int>& consumers);

/// An instruction with opcode `op` and operands `args`.
template <class Args>
isa::Instruction make_instr(isa::Opcode op, Args args) {
  isa::Instruction in;
  in.op = op;
  in.args = std::move(args);
  return in;
}

}  // namespace tessel::passes
