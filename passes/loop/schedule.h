// Schedule spaces: the knobs of a kernel's tiling pass as data. A tiling pass (tile_cube for
// convolution and matmul, tile_vector for every other kernel) exposes, per kernel and target, its
// space -- named knobs, each with the finite list of values it may take -- and emits the point it
// is handed; it never ranks points. Invalid points (a tile that overflows a scratchpad, a core
// split over an axis with too few tiles, ...) are rejected with the reason, never emitted. The
// analytical default (default_knobs), the tuner's strategies and a tuning log all choose points of
// these spaces; the NPU backend compiles the chosen point.
//
// Knobs every space has: `double_buffer` (0/1: leave half of every scratchpad for the pong copies
// of double_buffer / the tiler's L0 ping-pong), `split` (which loop of the kernel is distributed
// over the cores; its labels name the loops) and `cores` (how many cores take tiles: powers of two
// up to the config's cores, and the count itself; the other cores only meet the closing barrier).
// Conv: mt, kc, ht, wt, weights_resident, k_sub (L0 sub-chunks per K chunk), row_groups (L0 row
// groups per pixel tile). Matmul: mt, nt, kt, a_resident. Vector: tile_axis, tiles.
// docs/architecture.md ("Schedule spaces") documents each knob.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/support/error.h"
#include "npu_model/cost_model.h"
#include "passes/loop/npu_passes.h"

namespace tessel::passes {

/// "{mt: 64, kc: 32, ...}" in the space's knob order (labels for labelled knobs).
std::string knobs_to_string(const Knobs& knobs);

/// One knob: its name, the values it may take (in the order strategies enumerate them), what it
/// means, and optional labels of the values (e.g. the loops `split` may distribute).
struct Knob {
  std::string name;
  std::vector<int64_t> values;
  std::string help;
  std::vector<std::string> labels;  // empty, or one per value
  /// The analytical default takes the first value in domain order that gives a valid point
  /// (e.g. the fewest L0 sub-chunks that fit) instead of ranking every value.
  bool derived = false;
  /// The label of `value` ("" when unlabelled or not in the domain).
  std::string label(int64_t value) const;
};

/// A kernel's schedule space: the cartesian product of its knobs' domains (size()), of which the
/// pass accepts the valid points.
struct Space {
  std::string kind;  // conv | matmul | vector
  std::vector<Knob> knobs;
  /// Product of the domain sizes.
  double size() const;
  /// The knob `name`, or nullptr.
  const Knob* find(const std::string& name) const;
};

/// A point the pass rejects: the message names the kernel, the knob or buffer and why.
class InvalidKnobs : public Error {
 public:
  using Error::Error;
};

/// The schedule space of one kernel and the tiling pass that emits its points.
class KernelSchedule {
 public:
  virtual ~KernelSchedule() = default;
  const Space& space() const { return space_; }
  /// Restricts knob `name` to the values of its domain that are in `values` (e.g. double_buffer to
  /// {0} when double buffering is off). Throws tessel::Error if none is left.
  void restrict_knob(const std::string& name, const std::vector<int64_t>& values);
  /// nullopt when `knobs` (a complete point) can be emitted, else why not: a knob missing, unknown
  /// or outside its domain, or the pass's own reason (the buffer, the bytes needed and available).
  std::optional<std::string> reject(const Knobs& knobs) const;
  /// True when `knobs` -- a complete point with every value in its domain -- is valid (the fast
  /// path: no message).
  bool valid(const Knobs& knobs) const { return check(knobs, nullptr); }
  /// Sets the derived knobs of `knobs` (Knob::derived) to the first values of their domains that
  /// make the point valid given the other knobs; false when none does. The default tries the
  /// values in order; a pass may compute them directly.
  virtual bool derive(Knobs& knobs) const;
  /// The analytical model's view of a valid point (npu_model/cost_model.h).
  virtual npu::KernelProfile profile(const Knobs& knobs) const = 0;
  /// The tiled loop IR of `knobs`: the kernel's tile loops (one marked core-bound when cores > 1),
  /// copies into the scratchpads, the stages. Throws InvalidKnobs (the reject() reason) for an
  /// invalid point.
  virtual loop::Stmt emit(const Knobs& knobs) const = 0;
  /// The kernel's name (its output tensor).
  const std::string& name() const { return name_; }
  /// Called by screen() when no point of the space is valid: throws the pass's account of why --
  /// the smallest tile of the space, the scratchpads it overflows, the bytes it needs there and
  /// the bytes the config gives (tessel::Error, or Unsupported where the kernel cannot be tiled
  /// at all) -- or returns, and screen() gives the reason of the first point it tried.
  virtual void explain_nothing_fits() const {}
  /// True when the space holds only double-buffered points (double_buffer restricted to {1}):
  /// the smallest tile then has half of every scratchpad.
  bool double_buffered_only() const;

 protected:
  /// The pass's validity rule for a complete point whose values are in their domains; when the
  /// point is invalid and `why` is given, the reason goes there.
  virtual bool check(const Knobs& knobs, std::string* why) const = 0;
  /// Throws InvalidKnobs with reject()'s reason unless `knobs` is valid.
  void require_valid(const Knobs& knobs) const;
  Space space_;
  std::string name_;
};

/// The schedule of the kernel `spec` on `target`: tile_cube's for a kernel with a "conv2d" or
/// "matmul" contraction, tile_vector's otherwise. Throws tessel::Unsupported for a kernel neither
/// pass can tile (e.g. a reduction epilogue after a contraction), tessel::Error for a kernel whose
/// space holds no point at all that could fit (naming the buffer).
std::unique_ptr<KernelSchedule> kernel_schedule(const KernelSpec& spec, const NpuTarget& target);

/// tile_cube's schedule of the contraction `contraction` of `spec` (see kernel_schedule).
std::unique_ptr<KernelSchedule> cube_schedule(const KernelSpec& spec, const te::Tensor& contraction,
                                              const NpuTarget& target);
/// tile_vector's schedule of `spec` (see kernel_schedule).
std::unique_ptr<KernelSchedule> vector_schedule(const KernelSpec& spec, const NpuTarget& target);

/// The analytical screening of a schedule: its valid points, best estimate first, stored flat
/// (one value per knob of the space, in the space's knob order) so large spaces stay cheap.
class Screened {
 public:
  Screened() = default;
  explicit Screened(const Space& space);
  /// Number of points.
  size_t size() const { return cycles_.size(); }
  bool empty() const { return cycles_.empty(); }
  /// The i-th best point (0: the lowest estimate) and its estimated cycles.
  Knobs knobs(size_t i) const;
  double cycles(size_t i) const { return cycles_[order_[i]]; }
  /// The value of knob `name` in the i-th best point (-1 when the space has no such knob).
  int64_t value(size_t i, const std::string& name) const;
  const std::vector<std::string>& names() const { return names_; }
  /// Appends a point (values in knob order) with its estimate; sort() orders them.
  void add(const Knobs& knobs, double cycles);
  /// The estimate and a knob's value of the i-th point in the order added (before sort()).
  double raw_cycles(size_t i) const;
  int64_t raw_value(size_t i, const std::string& name) const;
  /// Drops the points (in the order added) whose `keep` entry is false; sort() again after.
  void keep(const std::vector<bool>& keep);
  /// Orders the points by estimate (stable: ties keep enumeration order).
  void sort();

 private:
  std::vector<std::string> names_;
  std::vector<int64_t> values_;  // size() x names_.size()
  std::vector<double> cycles_;
  std::vector<uint32_t> order_;
};

/// The analytical screening set of a schedule: every point of the product of the non-derived
/// knobs' domains (with `fixed` knobs held at their values), each derived knob at the first value
/// of its domain that makes the point valid (KernelSchedule::derive), invalid points dropped;
/// sorted by the estimate of npu_model/cost_model (ties: enumeration order). Deterministic.
/// `within` > 0 keeps only the points estimated at most `within` x the best estimate among the
/// points with the same `cores` value -- the same points, in the same order, as screening all and
/// dropping the others -- and prunes the space while enumerating it with a lower bound (a tile
/// point on c cores costs at least its one-core pipeline spread over c cores, and at least its
/// one-core DRAM time), so that screening for the default schedule (within 1.5: the default
/// candidates; 1: the analytical default) estimates a fraction of the space.
/// Throws InvalidKnobs naming the kernel when no point is valid (with the reason of the first
/// point tried).
Screened screen(const KernelSchedule& schedule, const npu::HwConfig& hw, const Knobs& fixed = {},
                double within = 0);

/// The analytical default: the first point of screen() (the lowest estimate; screened with
/// within = 1). `fixed` holds knobs given by the user; the others are chosen.
Knobs default_knobs(const KernelSchedule& schedule, const npu::HwConfig& hw,
                    const Knobs& fixed = {});

}  // namespace tessel::passes
