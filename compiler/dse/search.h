// Multi-objective search over a sweep's space for spaces too large to enumerate: NSGA-II (Deb,
// Pratap, Agarwal & Meyarivan, IEEE TEC 6(2), 2002) from pagmo2 (Debian's libpagmo-dev), on
// decision vectors x in [0, 1]^d, one entry per swept key, decoded to a point's values (decode).
// Every generation is evaluated as one batch (pagmo's batch fitness evaluation), so the caller
// runs a generation's points in parallel. Deterministic: the same spec, seed and fitness values
// give the same sequence of batches (a resumed search replays it, taking stored results).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "compiler/dse/sweep.h"

namespace tessel::dse {

/// The point values decision vector `x` (one entry in [0, 1] per swept key, swept_keys order)
/// names: grid key with k values -> values[min(floor(x k), k - 1)]; range key -> range_value.
std::vector<std::string> decode(const SweepSpec& spec, const std::vector<double>& x);

/// Fitness of a batch of decision vectors: one vector of `nobj` objectives (minimised) per input.
using BatchFitness =
    std::function<std::vector<std::vector<double>>(const std::vector<std::vector<double>>&)>;

/// Runs NSGA-II: an initial population of spec.search->population random vectors (seeded), then
/// spec.search->generations evolutions, each batch evaluated by `fitness`. Returns the final
/// population's decision vectors. Throws tessel::Error for a population pagmo refuses or
/// nobj < 2; whatever `fitness` throws passes through.
std::vector<std::vector<double>> nsga2(const SweepSpec& spec, size_t nobj,
                                       const BatchFitness& fitness);

}  // namespace tessel::dse
