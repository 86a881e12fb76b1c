// Search strategies over one task's schedule space (passes/loop/schedule.h): exhaustive, random,
// simulated annealing (AutoTVM, Chen et al. NeurIPS'18: annealing walks over the cost model and
// the best points it finds are measured) and evolutionary search with mutation and crossover
// (Ansor, Zheng et al. OSDI'20: offspring of the best measured points, screened by the cost
// model). A strategy proposes points not measured before and learns the measured costs; every
// random choice comes from its own seeded generator, so a strategy's proposals depend only on the
// seed and the costs it was told.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "passes/loop/schedule.h"

namespace tessel::tuner {

enum class Strategy { exhaustive, random, anneal, evolutionary };
/// "exhaustive" | "random" | "anneal" | "evolutionary".
const char* strategy_name(Strategy s);
/// Parses a strategy name; throws tessel::Error naming `context` and the valid names.
Strategy parse_strategy(const std::string& name, const std::string& context);

/// The deterministic random source of a strategy (64-bit Mersenne Twister; `below` reduces by
/// modulo, so the sequence is the same on every platform).
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed) {}
  uint64_t below(uint64_t n) { return n ? gen_() % n : 0; }
  double unit() { return static_cast<double>(gen_() >> 11) * (1.0 / 9007199254740992.0); }

 private:
  std::mt19937_64 gen_;
};

/// What a strategy may ask about the space: validity (the pass's rule) and a cheap screening cost
/// (lower is better: the analytical estimate, or the learned model's score).
struct SpaceView {
  const passes::Space* space = nullptr;
  std::function<bool(const passes::Knobs&)> valid;
  /// Screening costs of a batch of points (same order).
  std::function<std::vector<double>(const std::vector<passes::Knobs>&)> screen;
};

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  /// Up to `n` valid points never proposed before (fewer when the space is exhausted).
  virtual std::vector<passes::Knobs> propose(size_t n) = 0;
  /// The measured cost of a proposed (or seeded) point; nullopt when it could not be measured.
  virtual void observe(const passes::Knobs& knobs, std::optional<double> cost);
  /// Marks `knobs` as already proposed (e.g. measured by the default strategy) with its cost.
  void seed_point(const passes::Knobs& knobs, std::optional<double> cost);
  /// No valid point is left to propose.
  bool exhausted() const { return exhausted_; }

 public:
  SearchStrategy(SpaceView view, uint64_t seed) : view_(std::move(view)), rng_(seed) {}

 protected:
  /// A uniformly random point of the product space (possibly invalid).
  passes::Knobs random_point();
  /// `p` with one or two knobs moved to a neighbouring value of their domains (or, one time in
  /// five, a random value).
  passes::Knobs mutate(const passes::Knobs& p);
  /// Each knob from `a` or `b` at random.
  passes::Knobs crossover(const passes::Knobs& a, const passes::Knobs& b);
  /// Up to `n` new valid random points (at most `tries` draws).
  std::vector<passes::Knobs> random_valid(size_t n, size_t tries);
  bool is_new(const passes::Knobs& p) const { return !proposed_.count(p); }
  /// The measured points, best first.
  std::vector<std::pair<double, passes::Knobs>> best_measured(size_t n) const;

  SpaceView view_;
  Rng rng_;
  std::set<passes::Knobs> proposed_;
  std::map<passes::Knobs, double> measured_;
  bool exhausted_ = false;
};

/// A strategy over `view` seeded with `seed`. Exhaustive enumerates every valid point of the
/// product space in screening order; it throws tessel::Error when the product exceeds
/// `max_exhaustive` points (naming the size).
std::unique_ptr<SearchStrategy> make_strategy(Strategy s, SpaceView view, uint64_t seed,
                                              double max_exhaustive = 2e6);

}  // namespace tessel::tuner
