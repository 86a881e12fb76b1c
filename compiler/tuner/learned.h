// The learned cost model: gradient-boosted trees (XGBoost, Chen & Guestrin KDD'16, Debian's
// libxgboost through its C API) with a pairwise ranking objective (rank:pairwise), as AutoTVM
// and Ansor rank schedules: within one task only the order of points matters. Features are
// task-independent (so the model transfers to tasks it was not trained on): the analytical
// model's terms for the point (npu_model/cost_model.h: estimate, per-pipe busy cycles, DRAM,
// latency chain, tiles) relative to the kernel's roofline, and knob-derived ones (cores used,
// double buffering, loop order). Training is deterministic (one thread, fixed seed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "npu_model/cost_model.h"
#include "npu_model/hw_config.h"
#include "passes/loop/schedule.h"

namespace tessel::tuner {

/// The features of one point (feature_names() gives their names).
std::vector<float> point_features(const npu::HwConfig& hw, const std::string& kind,
                                  const passes::Knobs& knobs, const npu::KernelProfile& profile,
                                  const npu::CostEstimate& estimate, double roofline_cycles);
const std::vector<std::string>& feature_names();

/// One training example: a point of a task (its group) with its measured cycles.
struct Example {
  uint32_t group = 0;  // the task (examples of a group are ranked against each other)
  std::vector<float> features;
  double cycles = 0;
};

class LearnedModel {
 public:
  LearnedModel();
  ~LearnedModel();
  LearnedModel(const LearnedModel&) = delete;
  LearnedModel& operator=(const LearnedModel&) = delete;

  /// (Re)trains on `examples` (grouped by `group`; groups need not be contiguous) for `rounds`
  /// boosting rounds. Throws tessel::Error with XGBoost's message on failure.
  void train(const std::vector<Example>& examples, int rounds = 60, uint64_t seed = 0);
  bool trained() const { return booster_ != nullptr; }
  /// Scores (lower = predicted faster) of feature rows; ranks within a task only.
  std::vector<double> score(const std::vector<std::vector<float>>& rows) const;

 private:
  void* booster_ = nullptr;  // BoosterHandle
};

/// Fraction of pairs (i, j) of the same group with different cycles whose scores are ordered as
/// their cycles (ties in score count half).
double pairwise_accuracy(const std::vector<Example>& examples, const std::vector<double>& scores);
/// Fraction of groups whose fastest example is among the `k` best-scored examples of its group.
double top_k_recall(const std::vector<Example>& examples, const std::vector<double>& scores,
                    size_t k);

}  // namespace tessel::tuner
