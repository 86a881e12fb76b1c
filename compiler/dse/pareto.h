// Pareto fronts of sweep results: the non-dominated points under minimisation of every objective
// (a point dominates another when it is no worse in every objective and better in one), computed
// with pagmo2's fast non-dominated sorting (Debian's libpagmo-dev; Deb et al., NSGA-II, IEEE TEC
// 6(2), 2002), and the hypervolume indicator of a front (pagmo::hypervolume; Zitzler & Thiele
// 1998).
#pragma once

#include <cstddef>
#include <vector>

namespace tessel::dse {

/// The indices (ascending) of the non-dominated rows of `points`; each row holds the objective
/// values of one point (all rows the same length, >= 1), every objective minimised. Rows equal in
/// every objective are all kept when they are not dominated. Empty for no rows.
std::vector<size_t> pareto_front(const std::vector<std::vector<double>>& points);

/// The hypervolume dominated by `points` (minimisation) up to `reference`, which must be no
/// better than every point in every objective (throws tessel::Error otherwise). 0 for no points.
double hypervolume(const std::vector<std::vector<double>>& points,
                   const std::vector<double>& reference);

}  // namespace tessel::dse
