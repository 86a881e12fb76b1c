// Pareto fronts and hypervolume through pagmo2 (see pareto.h).
#include "compiler/dse/pareto.h"

#include <pagmo/utils/hypervolume.hpp>
#include <pagmo/utils/multi_objective.hpp>

#include <algorithm>

#include "compiler/support/error.h"

namespace tessel::dse {

std::vector<size_t> pareto_front(const std::vector<std::vector<double>>& points) {
  if (points.empty()) return {};
  if (points.size() == 1) return {0};  // pagmo's sorting needs two points
  const auto fronts = std::get<0>(pagmo::fast_non_dominated_sorting(points));
  std::vector<size_t> front(fronts.front().begin(), fronts.front().end());
  std::sort(front.begin(), front.end());
  return front;
}

double hypervolume(const std::vector<std::vector<double>>& points,
                   const std::vector<double>& reference) {
  if (points.empty()) return 0;
  for (const auto& p : points)
    for (size_t i = 0; i < p.size(); ++i)
      if (!(p[i] <= reference[i]))
        fail("hypervolume: reference point objective {} ({}) is better than a point's ({})", i,
             reference[i], p[i]);
  try {
    return pagmo::hypervolume(points, true).compute(reference);
  } catch (const std::exception& e) {
    fail("hypervolume: {}", e.what());
  }
}

}  // namespace tessel::dse
