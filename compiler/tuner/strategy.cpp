// Search strategies (see strategy.h).
#include "compiler/tuner/strategy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "compiler/support/error.h"

namespace tessel::tuner {

using passes::Knobs;

const char* strategy_name(Strategy s) {
  switch (s) {
    case Strategy::exhaustive:
      return "exhaustive";
    case Strategy::random:
      return "random";
    case Strategy::anneal:
      return "anneal";
    case Strategy::evolutionary:
      return "evolutionary";
  }
  return "?";
}

Strategy parse_strategy(const std::string& name, const std::string& context) {
  for (Strategy s :
       {Strategy::exhaustive, Strategy::random, Strategy::anneal, Strategy::evolutionary})
    if (name == strategy_name(s)) return s;
  fail("{}: unknown strategy '{}' (expected exhaustive, random, anneal or evolutionary)", context,
       name);
}

void SearchStrategy::observe(const Knobs& knobs, std::optional<double> cost) {
  proposed_.insert(knobs);
  if (cost) measured_[knobs] = *cost;
}

void SearchStrategy::seed_point(const Knobs& knobs, std::optional<double> cost) {
  observe(knobs, cost);
}

Knobs SearchStrategy::random_point() {
  Knobs p;
  for (const auto& k : view_.space->knobs) p[k.name] = k.values[rng_.below(k.values.size())];
  return p;
}

Knobs SearchStrategy::mutate(const Knobs& p) {
  Knobs q = p;
  std::vector<const passes::Knob*> movable;
  for (const auto& k : view_.space->knobs)
    if (k.values.size() > 1) movable.push_back(&k);
  if (movable.empty()) return q;
  const int moves = rng_.unit() < 0.3 ? 2 : 1;
  for (int m = 0; m < moves; ++m) {
    const passes::Knob& k = *movable[rng_.below(movable.size())];
    const auto it = std::find(k.values.begin(), k.values.end(), q.at(k.name));
    const size_t i = static_cast<size_t>(it - k.values.begin());
    if (rng_.unit() < 0.2 || it == k.values.end()) {
      q[k.name] = k.values[rng_.below(k.values.size())];
    } else if (i == 0) {
      q[k.name] = k.values[1];
    } else if (i + 1 == k.values.size()) {
      q[k.name] = k.values[i - 1];
    } else {
      q[k.name] = k.values[rng_.below(2) ? i + 1 : i - 1];
    }
  }
  return q;
}

Knobs SearchStrategy::crossover(const Knobs& a, const Knobs& b) {
  Knobs q;
  for (const auto& k : view_.space->knobs) q[k.name] = rng_.below(2) ? a.at(k.name) : b.at(k.name);
  return q;
}

std::vector<Knobs> SearchStrategy::random_valid(size_t n, size_t tries) {
  std::vector<Knobs> out;
  std::set<Knobs> seen;
  for (size_t t = 0; t < tries && out.size() < n; ++t) {
    Knobs p = random_point();
    if (!is_new(p) || seen.count(p) || !view_.valid(p)) continue;
    seen.insert(p);
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<std::pair<double, Knobs>> SearchStrategy::best_measured(size_t n) const {
  std::vector<std::pair<double, Knobs>> all;
  for (const auto& [k, c] : measured_) all.push_back({c, k});
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  if (all.size() > n) all.resize(n);
  return all;
}

namespace {

/// Every valid point of the product space in screening order.
class Exhaustive final : public SearchStrategy {
 public:
  Exhaustive(SpaceView view, uint64_t seed, double max_points)
      : SearchStrategy(std::move(view), seed) {
    const double size = view_.space->size();
    if (size > max_points)
      fail(
          "the schedule space of a {} kernel has {:.0f} points, more than the {:.0f} exhaustive "
          "search enumerates: use --strategy random, anneal or evolutionary",
          view_.space->kind, size, max_points);
  }
  std::vector<Knobs> propose(size_t n) override {
    if (!enumerated_) enumerate();
    std::vector<Knobs> out;
    while (next_ < order_.size() && out.size() < n) {
      const Knobs& p = order_[next_++];
      if (is_new(p)) {
        proposed_.insert(p);
        out.push_back(p);
      }
    }
    if (next_ >= order_.size()) exhausted_ = true;
    return out;
  }

 private:
  void enumerate() {
    enumerated_ = true;
    const auto& knobs = view_.space->knobs;
    std::vector<size_t> idx(knobs.size(), 0);
    std::vector<Knobs> valid;
    while (true) {
      Knobs p;
      for (size_t i = 0; i < knobs.size(); ++i) p[knobs[i].name] = knobs[i].values[idx[i]];
      if (view_.valid(p)) valid.push_back(std::move(p));
      size_t i = knobs.size();
      while (i > 0 && ++idx[i - 1] == knobs[i - 1].values.size()) idx[--i] = 0;
      if (i == 0) break;
    }
    const std::vector<double> cost = view_.screen(valid);
    std::vector<size_t> order(valid.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return cost[a] < cost[b]; });
    for (size_t i : order) order_.push_back(valid[i]);
  }
  bool enumerated_ = false;
  std::vector<Knobs> order_;
  size_t next_ = 0;
};

/// Uniform random valid points, unscreened (the baseline).
class RandomSearch final : public SearchStrategy {
 public:
  using SearchStrategy::SearchStrategy;
  std::vector<Knobs> propose(size_t n) override {
    std::vector<Knobs> out = random_valid(n, 400 * n + 400);
    for (const auto& p : out) proposed_.insert(p);
    if (out.empty()) exhausted_ = true;
    return out;
  }
};

/// Takes the `n` cheapest of `pool` by screening cost (the rest by exploration share `explore`,
/// picked at random) and marks them proposed.
std::vector<Knobs> take_best(std::vector<Knobs> pool, const SpaceView& view, size_t n,
                             double explore, Rng& rng, std::set<Knobs>& proposed) {
  std::vector<Knobs> out;
  if (pool.empty()) return out;
  const std::vector<double> cost = view.screen(pool);
  std::vector<size_t> order(pool.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return cost[a] < cost[b]; });
  const size_t greedy = std::min(pool.size(), n - static_cast<size_t>(explore * n));
  std::vector<bool> used(pool.size(), false);
  for (size_t i = 0; i < greedy; ++i) {
    out.push_back(pool[order[i]]);
    used[order[i]] = true;
  }
  std::vector<size_t> rest;
  for (size_t i = 0; i < pool.size(); ++i)
    if (!used[i]) rest.push_back(i);
  while (out.size() < n && !rest.empty()) {
    const size_t j = rng.below(rest.size());
    out.push_back(pool[rest[j]]);
    rest.erase(rest.begin() + static_cast<long>(j));
  }
  for (const auto& p : out) proposed.insert(p);
  return out;
}

/// Simulated annealing over the screening cost (AutoTVM's SA model optimizer): parallel chains
/// start from the best measured points and random ones, walk by mutation for a fixed number of
/// steps with a temperature falling to zero, and the best new points they visit are proposed.
class Anneal final : public SearchStrategy {
 public:
  using SearchStrategy::SearchStrategy;
  std::vector<Knobs> propose(size_t n) override {
    const size_t chains = std::max<size_t>(8, n);
    std::vector<Knobs> cur;
    for (const auto& [c, p] : best_measured(chains / 2)) cur.push_back(p);
    for (auto& p : random_valid(chains - cur.size(), 200 * chains)) cur.push_back(std::move(p));
    if (cur.empty()) {
      exhausted_ = true;
      return {};
    }
    std::vector<double> cost = view_.screen(cur);
    std::map<Knobs, double> visited;
    for (size_t i = 0; i < cur.size(); ++i)
      if (is_new(cur[i])) visited[cur[i]] = cost[i];
    const int steps = 40;
    for (int s = 0; s < steps; ++s) {
      const double temp = 1.0 - static_cast<double>(s) / steps;
      std::vector<Knobs> next;
      std::vector<size_t> who;
      for (size_t i = 0; i < cur.size(); ++i) {
        for (int t = 0; t < 8; ++t) {
          Knobs q = mutate(cur[i]);
          if (q != cur[i] && view_.valid(q)) {
            next.push_back(std::move(q));
            who.push_back(i);
            break;
          }
        }
      }
      if (next.empty()) break;
      const std::vector<double> nc = view_.screen(next);
      for (size_t j = 0; j < next.size(); ++j) {
        const size_t i = who[j];
        if (is_new(next[j])) visited.emplace(next[j], nc[j]);
        // Metropolis on the relative cost change.
        const double rel = (nc[j] - cost[i]) / std::max(1.0, std::abs(cost[i]));
        if (rel < 0 || (temp > 0 && rng_.unit() < std::exp(-rel / (0.05 * temp)))) {
          cur[i] = next[j];
          cost[i] = nc[j];
        }
      }
    }
    std::vector<Knobs> pool;
    for (const auto& [p, c] : visited) pool.push_back(p);
    std::vector<Knobs> out = take_best(pool, view_, n, 0.0, rng_, proposed_);
    if (out.empty()) {
      out = random_valid(n, 400 * n);
      for (const auto& p : out) proposed_.insert(p);
      if (out.empty()) exhausted_ = true;
    }
    return out;
  }
};

/// Evolutionary search (Ansor): a pool of offspring of the best measured points -- mutations,
/// crossovers and a share of random points -- screened by the cost model; the cheapest are
/// proposed, with a small random share for exploration.
class Evolutionary final : public SearchStrategy {
 public:
  using SearchStrategy::SearchStrategy;
  std::vector<Knobs> propose(size_t n) override {
    const auto elites = best_measured(16);
    const size_t want = std::max<size_t>(64, 8 * n);
    std::vector<Knobs> pool;
    std::set<Knobs> in_pool;
    auto pick = [&]() -> const Knobs& {  // tournament of two, fitter (cheaper) wins
      const size_t a = rng_.below(elites.size()), b = rng_.below(elites.size());
      return elites[std::min(a, b)].second;
    };
    for (size_t t = 0; t < 6 * want && pool.size() < want; ++t) {
      Knobs q;
      const double r = rng_.unit();
      if (elites.empty() || r >= 0.9) {
        q = random_point();
      } else if (r < 0.6 || elites.size() < 2) {
        q = mutate(pick());
      } else {
        q = crossover(pick(), pick());
      }
      if (!is_new(q) || in_pool.count(q) || !view_.valid(q)) continue;
      in_pool.insert(q);
      pool.push_back(std::move(q));
    }
    if (pool.size() < n)
      for (auto& p : random_valid(n - pool.size(), 400 * n))
        if (!in_pool.count(p)) pool.push_back(std::move(p));
    std::vector<Knobs> out = take_best(pool, view_, n, 0.2, rng_, proposed_);
    if (out.empty()) exhausted_ = true;
    return out;
  }
};

}  // namespace

std::unique_ptr<SearchStrategy> make_strategy(Strategy s, SpaceView view, uint64_t seed,
                                              double max_exhaustive) {
  switch (s) {
    case Strategy::exhaustive:
      return std::make_unique<Exhaustive>(std::move(view), seed, max_exhaustive);
    case Strategy::random:
      return std::make_unique<RandomSearch>(std::move(view), seed);
    case Strategy::anneal:
      return std::make_unique<Anneal>(std::move(view), seed);
    case Strategy::evolutionary:
      return std::make_unique<Evolutionary>(std::move(view), seed);
  }
  internal_fail("make_strategy: unknown strategy");
}

}  // namespace tessel::tuner
