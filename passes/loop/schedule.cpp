// Schedule spaces (see schedule.h): the generic part -- spaces, validity, the analytical screening
// and default -- shared by the tiling passes tile_cube and tile_vector, which define the knobs.
#include "passes/loop/schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>

#include "passes/loop/schedule_util.h"
#include "passes/loop/tile_emitter.h"

namespace tessel::passes {

std::string Knob::label(int64_t value) const {
  if (labels.size() != values.size()) return "";
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] == value) return labels[i];
  return "";
}

double Space::size() const {
  double n = 1;
  for (const auto& k : knobs) n *= static_cast<double>(k.values.size());
  return n;
}

const Knob* Space::find(const std::string& name) const {
  for (const auto& k : knobs)
    if (k.name == name) return &k;
  return nullptr;
}

std::string knobs_to_string(const Knobs& knobs) {
  std::string s;
  for (const auto& [k, v] : knobs) s += fmt::format("{}{}: {}", s.empty() ? "" : ", ", k, v);
  return "{" + s + "}";
}

void KernelSchedule::restrict_knob(const std::string& name, const std::vector<int64_t>& values) {
  for (auto& k : space_.knobs) {
    if (k.name != name) continue;
    std::vector<int64_t> kept;
    std::vector<std::string> labels;
    for (size_t i = 0; i < k.values.size(); ++i)
      if (std::find(values.begin(), values.end(), k.values[i]) != values.end()) {
        kept.push_back(k.values[i]);
        if (k.labels.size() == k.values.size()) labels.push_back(k.labels[i]);
      }
    if (kept.empty())
      fail("kernel {}: restricting knob '{}' leaves no value of its domain", name_, name);
    k.values = kept;
    k.labels = labels;
    return;
  }
  internal_fail("kernel {}: no knob '{}' to restrict", name_, name);
}

std::optional<std::string> KernelSchedule::reject(const Knobs& knobs) const {
  for (const auto& [name, v] : knobs)
    if (!space_.find(name)) {
      std::string list;
      for (const auto& k : space_.knobs) list += (list.empty() ? "" : ", ") + k.name;
      return fmt::format("unknown knob '{}' for a {} kernel (its knobs: {})", name, space_.kind,
                         list);
    }
  for (const auto& k : space_.knobs) {
    auto it = knobs.find(k.name);
    if (it == knobs.end()) return fmt::format("knob '{}' is missing", k.name);
    if (std::find(k.values.begin(), k.values.end(), it->second) == k.values.end()) {
      std::string list;
      for (size_t i = 0; i < k.values.size() && i < 24; ++i)
        list += (list.empty() ? "" : ", ") + std::to_string(k.values[i]);
      if (k.values.size() > 24) list += ", ...";
      return fmt::format("{} = {} is outside its domain ({}): {}", k.name, it->second, list,
                         k.help);
    }
  }
  std::string why;
  if (check(knobs, &why)) return std::nullopt;
  return why;
}

bool KernelSchedule::derive(Knobs& knobs) const {
  std::vector<const Knob*> derived;
  for (const auto& k : space_.knobs)
    if (k.derived) derived.push_back(&k);
  std::function<bool(size_t)> fill = [&](size_t i) -> bool {
    if (i == derived.size()) return valid(knobs);
    for (int64_t v : derived[i]->values) {
      knobs[derived[i]->name] = v;
      if (fill(i + 1)) return true;
    }
    return false;
  };
  return fill(0);
}

bool KernelSchedule::double_buffered_only() const {
  const Knob* db = space_.find("double_buffer");
  return db && std::find(db->values.begin(), db->values.end(), 0) == db->values.end();
}

void KernelSchedule::require_valid(const Knobs& knobs) const {
  if (auto why = reject(knobs))
    throw InvalidKnobs(
        fmt::format("kernel {}: knobs {} rejected: {}", name_, knobs_to_string(knobs), *why));
}

std::unique_ptr<KernelSchedule> kernel_schedule(const KernelSpec& spec, const NpuTarget& target) {
  te::Tensor found;
  for (const auto& t : te::post_order(spec.out))
    if (t->tag == "conv2d" || t->tag == "matmul") {
      if (found) throw Unsupported(fmt::format("kernel {} has two cube contractions", spec.name));
      found = t;
    }
  if (found) return cube_schedule(spec, found, target);
  return vector_schedule(spec, target);
}

Screened::Screened(const Space& space) {
  for (const auto& k : space.knobs) names_.push_back(k.name);
}

void Screened::add(const Knobs& knobs, double cycles) {
  for (const auto& n : names_) values_.push_back(knobs.at(n));
  cycles_.push_back(cycles);
}

double Screened::raw_cycles(size_t i) const { return cycles_[i]; }

int64_t Screened::raw_value(size_t i, const std::string& name) const {
  for (size_t j = 0; j < names_.size(); ++j)
    if (names_[j] == name) return values_[i * names_.size() + j];
  return -1;
}

void Screened::keep(const std::vector<bool>& keep) {
  size_t w = 0;
  const size_t n = names_.size();
  for (size_t i = 0; i < cycles_.size(); ++i) {
    if (!keep[i]) continue;
    for (size_t j = 0; j < n; ++j) values_[w * n + j] = values_[i * n + j];
    cycles_[w++] = cycles_[i];
  }
  cycles_.resize(w);
  values_.resize(w * n);
  order_.clear();
}

void Screened::sort() {
  order_.resize(cycles_.size());
  for (uint32_t i = 0; i < order_.size(); ++i) order_[i] = i;
  std::stable_sort(order_.begin(), order_.end(),
                   [&](uint32_t a, uint32_t b) { return cycles_[a] < cycles_[b]; });
}

Knobs Screened::knobs(size_t i) const {
  Knobs k;
  const size_t base = static_cast<size_t>(order_[i]) * names_.size();
  for (size_t j = 0; j < names_.size(); ++j) k[names_[j]] = values_[base + j];
  return k;
}

int64_t Screened::value(size_t i, const std::string& name) const {
  for (size_t j = 0; j < names_.size(); ++j)
    if (names_[j] == name) return values_[static_cast<size_t>(order_[i]) * names_.size() + j];
  return -1;
}

Screened screen(const KernelSchedule& schedule, const npu::HwConfig& hw, const Knobs& fixed,
                double within) {
  const Space& space = schedule.space();
  for (const auto& [name, v] : fixed) {
    const Knob* k = space.find(name);
    if (!k || std::find(k->values.begin(), k->values.end(), v) == k->values.end()) {
      Knobs probe = fixed;
      for (const auto& kn : space.knobs) probe.emplace(kn.name, kn.values.front());
      throw InvalidKnobs(fmt::format("kernel {}: knobs {} rejected: {}", schedule.name(),
                                     knobs_to_string(fixed),
                                     schedule.reject(probe).value_or("invalid")));
    }
  }
  // Derived knobs are set by derive() unless one of them is fixed: then the others are free too.
  bool derived_fixed = false;
  for (const auto& k : space.knobs) derived_fixed |= k.derived && fixed.count(k.name);
  std::vector<const Knob*> free;
  bool any_derived = false;
  for (const auto& k : space.knobs) {
    if (fixed.count(k.name)) continue;
    if (k.derived && !derived_fixed) {
      any_derived = true;
    } else {
      free.push_back(&k);
    }
  }
  Screened out(space);
  Knobs p = fixed;
  for (const auto& k : space.knobs) p.emplace(k.name, k.values.front());
  std::optional<Knobs> first_tried;
  // A point's validity apart from the core split rule (check_split) does not depend on `split`
  // and `cores`, nor do its derived knobs: when both are free and enumerated last, each tile point
  // is tried once on one core; an invalid one is skipped with all its core splits, a valid one
  // keeps its derived knobs for them.
  size_t core_from = free.size();
  while (core_from > 0 &&
         (free[core_from - 1]->name == "split" || free[core_from - 1]->name == "cores"))
    --core_from;
  const Knob* cores_knob = space.find("cores");
  const bool split_last = free.size() - core_from == 2 && cores_knob &&
                          std::find(cores_knob->values.begin(), cores_knob->values.end(), 1) !=
                              cores_knob->values.end();
  const int64_t split_first = space.find("split") ? space.find("split")->values.front() : 0;
  // Pruning (within > 0): the estimate of a tile point on c cores is at least its one-core
  // estimate's core part spread over c cores (the busiest core has at least 1/c of the tiles and
  // of the exposed loads; its per-tile steady state and fill (CostEstimate::fill_cycles) do not
  // change) and at least its one-core DRAM part (a split only adds re-reads):
  //   estimate(c) >= max((core_1 - fill) / c + fill, dram_1).
  // A point whose bound exceeds `within` x the best estimate seen so far with c cores cannot be
  // within that factor of the final best, so it is neither estimated nor kept.
  const bool prune = within > 0 && split_last;
  std::map<int64_t, double> best_of_cores;  // cores -> best estimate so far
  double core_1 = 0, dram_1 = 0, fill_1 = 0, est_1 = 0;
  auto note = [&](int64_t cores, double cycles) {
    auto [it, fresh] = best_of_cores.emplace(cores, cycles);
    if (!fresh) it->second = std::min(it->second, cycles);
  };
  struct Kept {
    double cycles;
    int64_t cores;
  };
  std::vector<Kept> kept;  // parallel to out's points when pruning
  bool probed = false;
  std::function<void(size_t)> walk = [&](size_t i) {
    if (split_last && i == core_from) {
      p["cores"] = 1;
      p["split"] = split_first;
      if (!first_tried) first_tried = p;
      if (!(any_derived ? schedule.derive(p) : schedule.valid(p))) return;
      probed = true;
      if (prune) {
        const npu::KernelProfile prof = schedule.profile(p);
        const npu::CostEstimate e = npu::estimate_kernel(hw, prof);
        est_1 = e.cycles;
        core_1 = e.core_cycles;
        dram_1 = e.dram_cycles;
        fill_1 = e.fill_cycles;
      }
    }
    if (i == free.size()) {
      if (!first_tried) first_tried = p;
      if (prune) {
        const int64_t c = p.at("cores");
        const bool one = c == 1 && p.at("split") == split_first;
        if (!one) {
          auto b = best_of_cores.find(c);
          const double bound =
              std::max((core_1 - fill_1) / static_cast<double>(c) + fill_1, dram_1);
          if (b != best_of_cores.end() && bound * (1 - 1e-9) > within * b->second) return;
          if (!schedule.valid(p)) return;
        }
        const double cycles = one ? est_1 : npu::estimate_kernel(hw, schedule.profile(p)).cycles;
        note(c, cycles);
        out.add(p, cycles);
        kept.push_back({cycles, c});
        return;
      }
      if (probed ? schedule.valid(p) : any_derived ? schedule.derive(p) : schedule.valid(p))
        out.add(p, npu::estimate_kernel(hw, schedule.profile(p)).cycles);
      return;
    }
    for (int64_t v : free[i]->values) {
      p[free[i]->name] = v;
      walk(i + 1);
    }
  };
  walk(0);
  if (out.empty() && fixed.empty()) schedule.explain_nothing_fits();
  if (out.empty())
    throw InvalidKnobs(fmt::format("kernel {}: no point of its schedule space fits{}: {}",
                                   schedule.name(),
                                   fixed.empty() ? "" : " with knobs " + knobs_to_string(fixed),
                                   first_tried ? schedule.reject(*first_tried).value_or("?")
                                               : std::string("the space is empty")));
  if (within > 0) {
    // Keep the points within `within` of the best with their cores value (without pruning:
    // the best per cores value over all points).
    if (!prune) {
      for (size_t i = 0; i < out.size(); ++i)
        kept.push_back({out.raw_cycles(i), out.raw_value(i, "cores")});
      for (const Kept& k : kept) note(k.cores, k.cycles);
    }
    std::vector<bool> keep(kept.size());
    for (size_t i = 0; i < kept.size(); ++i)
      keep[i] = kept[i].cycles <= within * best_of_cores.at(kept[i].cores);
    out.keep(keep);
  }
  out.sort();
  return out;
}

Knobs default_knobs(const KernelSchedule& schedule, const npu::HwConfig& hw, const Knobs& fixed) {
  Knobs complete = fixed;
  bool partial = false;
  for (const auto& k : schedule.space().knobs) partial |= !fixed.count(k.name);
  if (!partial) {
    if (auto why = schedule.reject(fixed))
      throw InvalidKnobs(fmt::format("kernel {}: knobs {} rejected: {}", schedule.name(),
                                     knobs_to_string(fixed), *why));
    return fixed;
  }
  return screen(schedule, hw, fixed, 1.0).knobs(0);
}

// ---------------------------------------------------------------------------------------------
// Helpers of the tiling passes (schedule_util.h).

std::vector<int> flag_groups(const std::vector<int>& consumers) {
  const int n = static_cast<int>(consumers.size());
  std::vector<int> group(consumers.size());
  // Backwards: a flag is kept when no later transfer is needed at or before its consumer.
  int next_kept = -1, min_later = std::numeric_limits<int>::max();
  for (int i = n - 1; i >= 0; --i) {
    if (consumers[i] < min_later) next_kept = i;
    min_later = std::min(min_later, consumers[i]);
    group[i] = next_kept;
  }
  return group;
}

std::vector<int64_t> tile_extent_values(int64_t extent, int64_t step) {
  std::vector<int64_t> v;
  auto add = [&](int64_t tiles) {
    int64_t t = (extent + tiles - 1) / tiles;
    t = std::min(extent, (t + step - 1) / step * step);
    if (t >= 1 && std::find(v.begin(), v.end(), t) == v.end()) v.push_back(t);
  };
  for (int64_t d = 1; d <= std::min<int64_t>(extent, 8); ++d) add(d);
  for (int64_t d = 16; d < 2 * extent; d *= 2) add(std::min(d, extent));
  std::sort(v.rbegin(), v.rend());
  return v;
}

Knob double_buffer_knob() {
  return {"double_buffer",
          {1, 0},
          "leave half of every scratchpad for the pong copies (1) or not (0)",
          {},
          false};
}

Knob cores_knob(const npu::HwConfig& hw) {
  Knob k{
      "cores", {}, "cores that take tiles (the others only meet the closing barrier)", {}, false};
  for (int64_t c = 1; c < hw.cores; c *= 2) k.values.push_back(c);
  k.values.push_back(std::max(1, hw.cores));
  std::sort(k.values.rbegin(), k.values.rend());
  return k;
}

Knob split_knob(const std::vector<std::string>& loops) {
  Knob k{"split", {}, "the loop whose tiles are distributed over the cores", loops, false};
  for (size_t i = 0; i < loops.size(); ++i) k.values.push_back(static_cast<int64_t>(i));
  return k;
}

bool check_split(const Knobs& knobs, const Knob& split, const std::vector<int64_t>& tiles,
                 std::string* why) {
  const int64_t cores = knobs.at("cores"), s = knobs.at("split");
  if (cores == 1) {
    if (s != split.values.front())
      return no(why, [&] {
        return fmt::format("split = {} ({}) with cores = 1: nothing is split (use split = {})", s,
                           split.label(s), split.values.front());
      });
    return true;
  }
  const int64_t n = tiles.at(static_cast<size_t>(s));
  if (n < cores)
    return no(why, [&] {
      return fmt::format("split = {} ({}) has {} tile{}, fewer than cores = {}", s, split.label(s),
                         n, n == 1 ? "" : "s", cores);
    });
  return true;
}

isa::DmaArgs region_dma(const std::vector<int64_t>& extents, const std::vector<int64_t>& gm_strides,
                        const std::vector<int64_t>& local_strides, bool load, DType dtype) {
  struct D {
    int64_t extent, gm_stride, local_stride;
  };
  std::vector<D> dims;
  for (size_t d = 0; d < extents.size(); ++d) {
    if (extents[d] == 1) continue;
    if (!dims.empty() && dims.back().gm_stride == extents[d] * gm_strides[d] &&
        dims.back().local_stride == extents[d] * local_strides[d]) {
      dims.back().extent *= extents[d];
      dims.back().gm_stride = gm_strides[d];
      dims.back().local_stride = local_strides[d];
      continue;
    }
    dims.push_back({extents[d], gm_strides[d], local_strides[d]});
  }
  if (dims.empty()) dims.push_back({1, 1, 1});
  while (dims.size() > static_cast<size_t>(isa::kMaxDmaDims)) {  // fold the outermost dims
    dims[1].extent *= dims[0].extent;
    dims.erase(dims.begin());
  }
  isa::DmaArgs a;
  a.dtype = isa_dtype(dtype);
  a.ndims = static_cast<uint8_t>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    a.extent[d] = static_cast<uint32_t>(dims[d].extent);
    a.valid_begin[d] = 0;
    a.valid_end[d] = static_cast<uint32_t>(dims[d].extent);
    (load ? a.src_stride : a.dst_stride)[d] = dims[d].gm_stride;
    (load ? a.dst_stride : a.src_stride)[d] = dims[d].local_stride;
  }
  a.src.scope = load ? isa::Scope::gm : isa::Scope::ub;
  a.dst.scope = load ? isa::Scope::ub : isa::Scope::gm;
  return a;
}

isa::DmaArgs box_dma(const loop::Buffer& gm, const std::vector<int64_t>& box, bool load,
                     DType dtype) {
  // GM-side extents (NC1HWC0 buffers: the 5-D blocks of whole C0 channels); the local side dense.
  std::vector<int64_t> ext = box;
  if (is_nc1hwc0(gm, box.size())) {
    const int64_t c0 = gm->shape[4];
    ext = {box[0], (box[1] + c0 - 1) / c0, box[2], box[3], c0};
  }
  return region_dma(ext, gm->strides, loop::dense_strides(ext), load, dtype);
}

}  // namespace tessel::passes
