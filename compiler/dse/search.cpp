// NSGA-II over a sweep's space through pagmo2 (see search.h).
#include "compiler/dse/search.h"

#include <pagmo/algorithms/nsga2.hpp>
#include <pagmo/batch_evaluators/default_bfe.hpp>
#include <pagmo/bfe.hpp>
#include <pagmo/population.hpp>
#include <pagmo/problem.hpp>

#include <algorithm>
#include <cmath>

#include "compiler/support/error.h"

namespace tessel::dse {

std::vector<std::string> decode(const SweepSpec& spec, const std::vector<double>& x) {
  TESSEL_CHECK(x.size() == spec.grid.size() + spec.ranges.size(), "decision vector of {} for {}",
               x.size(), spec.grid.size() + spec.ranges.size());
  std::vector<std::string> v;
  for (size_t i = 0; i < spec.grid.size(); ++i) {
    const size_t k = spec.grid[i].values.size();
    const size_t j =
        std::min(k - 1, static_cast<size_t>(std::floor(std::clamp(x[i], 0.0, 1.0) * k)));
    v.push_back(spec.grid[i].values[j]);
  }
  for (size_t r = 0; r < spec.ranges.size(); ++r)
    v.push_back(range_value(spec.ranges[r], x[spec.grid.size() + r]));
  return v;
}

namespace {

/// The pagmo problem: bounds [0, 1]^d and `nobj` objectives; fitness through the batch callback
/// (pagmo needs a default-constructible, copyable problem, so it holds a pointer).
struct Problem {
  size_t dims = 1, nobj = 2;
  const BatchFitness* fitness_fn = nullptr;
  pagmo::vector_double fitness(const pagmo::vector_double& x) const {
    return (*fitness_fn)({x}).front();
  }
  std::pair<pagmo::vector_double, pagmo::vector_double> get_bounds() const {
    return {pagmo::vector_double(dims, 0.0), pagmo::vector_double(dims, 1.0)};
  }
  pagmo::vector_double::size_type get_nobj() const { return nobj; }
};

/// Evaluates pagmo's batches (decision vectors laid end to end) through the callback at once.
struct Batch {
  pagmo::vector_double operator()(const pagmo::problem& p, const pagmo::vector_double& dvs) const {
    const Problem* prob = p.extract<Problem>();
    TESSEL_CHECK(prob != nullptr, "not a dse problem");
    std::vector<std::vector<double>> xs;
    for (size_t i = 0; i < dvs.size(); i += prob->dims)
      xs.emplace_back(dvs.begin() + static_cast<std::ptrdiff_t>(i),
                      dvs.begin() + static_cast<std::ptrdiff_t>(i + prob->dims));
    pagmo::vector_double out;
    for (const auto& f : (*prob->fitness_fn)(xs)) out.insert(out.end(), f.begin(), f.end());
    return out;
  }
};

}  // namespace

std::vector<std::vector<double>> nsga2(const SweepSpec& spec, size_t nobj,
                                       const BatchFitness& fitness) {
  TESSEL_CHECK(spec.search.has_value(), "nsga2 without a search spec");
  if (nobj < 2) fail("NSGA-II needs at least two objectives, got {}", nobj);
  const SearchSpec& s = *spec.search;
  Problem prob;
  prob.dims = spec.grid.size() + spec.ranges.size();
  prob.nobj = nobj;
  prob.fitness_fn = &fitness;
  try {
    const pagmo::problem p{prob};
    const pagmo::bfe bfe{Batch{}};
    const auto seed = static_cast<unsigned>(s.seed);
    pagmo::population pop(p, bfe, static_cast<pagmo::population::size_type>(s.population), seed);
    // Mutation probability 1/d per gene (Deb et al. 2002), crossover 0.95, pagmo's indices.
    pagmo::nsga2 algo(static_cast<unsigned>(s.generations), 0.95, 10.,
                      1.0 / static_cast<double>(prob.dims), 50., seed);
    algo.set_bfe(bfe);
    pop = algo.evolve(pop);
    return pop.get_x();
  } catch (const std::invalid_argument& e) {
    fail("NSGA-II (pagmo2): {}", e.what());
  }
}

}  // namespace tessel::dse
