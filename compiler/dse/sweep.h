// Design-space sweeps as data (docs/dse.md): the swept hardware-config keys of an experiment's
// `sweep:` and the design points they span. A point is a list of `--hw-set` overrides (dotted key
// = value text) applied to the sweep's base config, so a point's config is exactly the one
// `tessel sim --hw HW --hw-set K=V ...` builds.
//
//   grid:    every combination of the listed values (row-major: the last key varies fastest)
//   random:  `samples` points with the range keys drawn uniformly at random or by Latin-hypercube
//            sampling (McKay, Beckman & Conover, Technometrics 21(2), 1979: each key's range is cut
//            into `samples` equal strata and each stratum holds exactly one sample)
//   both:    the product: every grid combination with every random sample (the same samples for
//            each combination, so the grid keys are compared on equal terms)
// The points are numbered 0, 1, ... in that order; the numbering depends only on the spec.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tessel::dse {

/// A grid key: its values as override texts (as written in the experiment, e.g. "16", "fp16").
struct GridAxis {
  std::string key;  // dotted hw-config key, e.g. "core.cube.m"
  std::vector<std::string> values;
};

/// How a range key maps a unit sample u in [0, 1) to a value.
///   lin:  low + u (high - low)
///   log:  exp(ln low + u (ln high - ln low))  (low > 0)
///   pow2: 2^(e_lo + floor(u (e_hi - e_lo + 1))) with e = log2 of low and high, which must be
///         powers of two: every power of two in [low, high] equally likely
/// Integer ranges (both bounds written as integers) draw integers: lin and log take
/// floor(value) over [low, high + 1) so that every integer in [low, high] can be drawn.
enum class Scale { lin, log, pow2 };
/// "lin" | "log" | "pow2".
const char* scale_name(Scale s);

/// A random key: its range [low, high] and scale.
struct RangeAxis {
  std::string key;
  double low = 0, high = 0;
  Scale scale = Scale::lin;
  bool integer = false;  // both bounds were written as integers: draw integers
};

enum class Sampling { uniform, lhs };
/// "uniform" | "lhs".
const char* sampling_name(Sampling s);

/// `search:` of a sweep: instead of enumerating the grid x samples, NSGA-II (search.h) searches
/// the space the grid values and the range keys span.
struct SearchSpec {
  int64_t population = 0;   // individuals per generation (>= 8, a multiple of 4: pagmo's NSGA-II)
  int64_t generations = 0;  // evolutions after the initial population
  uint64_t seed = 0;
};

/// The `sweep:` of an experiment, as parsed (driver/experiment.cpp checks keys and values).
struct SweepSpec {
  std::string base;  // the base hardware config file (resolved path)
  std::vector<GridAxis> grid;
  std::vector<RangeAxis> ranges;
  int64_t samples = 0;  // random points (0 when there is no `random:`)
  uint64_t seed = 0;
  Sampling sampling = Sampling::uniform;
  std::vector<std::string> where;    // constraint expressions (where.h)
  std::optional<SearchSpec> search;  // absent: enumerate every point
};

/// One design point: its number and one value text per swept key (swept_keys order).
struct Point {
  int64_t index = 0;
  std::vector<std::string> values;
};

/// The swept keys: the grid keys in their order, then the range keys in theirs.
std::vector<std::string> swept_keys(const SweepSpec& spec);

/// Number of points the spec spans: product of the grid sizes, times `samples` when there are
/// range keys (1 when the spec sweeps nothing).
int64_t point_count(const SweepSpec& spec);

/// Every point of the spec in order (see the header comment). Deterministic for a given spec.
std::vector<Point> enumerate_points(const SweepSpec& spec);

/// `n` points in [0, 1)^d drawn independently and uniformly (std::mt19937_64 seeded with `seed`;
/// 53-bit mantissas taken directly from its output, so the draws do not depend on the standard
/// library's distributions).
std::vector<std::vector<double>> uniform_samples(size_t n, size_t d, uint64_t seed);

/// A Latin hypercube of `n` points in [0, 1)^d: in every dimension, each of the n strata
/// [k/n, (k+1)/n) holds exactly one point, at a uniform position inside it; the strata are paired
/// across dimensions by independent random permutations (Fisher-Yates on std::mt19937_64).
std::vector<std::vector<double>> latin_hypercube(size_t n, size_t d, uint64_t seed);

/// The value text of range `axis` at unit sample `u` in [0, 1) (Scale): integers as integers,
/// other values in the shortest text that reads back as the same double.
std::string range_value(const RangeAxis& axis, double u);

}  // namespace tessel::dse
