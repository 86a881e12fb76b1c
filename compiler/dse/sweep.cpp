// Design points of a sweep (see sweep.h).
#include "compiler/dse/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "compiler/support/error.h"

namespace tessel::dse {

const char* scale_name(Scale s) {
  switch (s) {
    case Scale::lin:
      return "lin";
    case Scale::log:
      return "log";
    case Scale::pow2:
      return "pow2";
  }
  return "?";
}

const char* sampling_name(Sampling s) { return s == Sampling::lhs ? "lhs" : "uniform"; }

std::vector<std::string> swept_keys(const SweepSpec& spec) {
  std::vector<std::string> keys;
  for (const auto& g : spec.grid) keys.push_back(g.key);
  for (const auto& r : spec.ranges) keys.push_back(r.key);
  return keys;
}

int64_t point_count(const SweepSpec& spec) {
  int64_t n = 1;
  for (const auto& g : spec.grid) n *= static_cast<int64_t>(g.values.size());
  if (!spec.ranges.empty()) n *= spec.samples;
  return n;
}

namespace {

/// A double in [0, 1) from the top 53 bits of one draw.
double unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

}  // namespace

std::vector<std::vector<double>> uniform_samples(size_t n, size_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<double>> s(n, std::vector<double>(d));
  for (auto& p : s)
    for (auto& x : p) x = unit(rng);
  return s;
}

std::vector<std::vector<double>> latin_hypercube(size_t n, size_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<double>> s(n, std::vector<double>(d));
  std::vector<size_t> perm(n);
  for (size_t j = 0; j < d; ++j) {
    std::iota(perm.begin(), perm.end(), 0);
    for (size_t i = n; i > 1; --i) {  // Fisher-Yates with an unbiased index below i
      const uint64_t bound = i, limit = UINT64_MAX - UINT64_MAX % bound;
      uint64_t r;
      do r = rng();
      while (r >= limit);
      std::swap(perm[i - 1], perm[r % bound]);
    }
    for (size_t i = 0; i < n; ++i)
      s[i][j] = (static_cast<double>(perm[i]) + unit(rng)) / static_cast<double>(n);
  }
  return s;
}

std::string range_value(const RangeAxis& a, double u) {
  u = std::clamp(u, 0.0, std::nextafter(1.0, 0.0));
  if (a.scale == Scale::pow2) {
    const int lo = static_cast<int>(std::lround(std::log2(a.low)));
    const int hi = static_cast<int>(std::lround(std::log2(a.high)));
    const int e = lo + static_cast<int>(std::floor(u * (hi - lo + 1)));
    return std::to_string(int64_t{1} << std::min(e, hi));
  }
  if (a.integer) {
    double v = a.scale == Scale::lin
                   ? a.low + u * (a.high + 1 - a.low)
                   : std::exp(std::log(a.low) + u * (std::log(a.high + 1) - std::log(a.low)));
    const int64_t i = std::clamp(static_cast<int64_t>(std::floor(v)), static_cast<int64_t>(a.low),
                                 static_cast<int64_t>(a.high));
    return std::to_string(i);
  }
  const double v = a.scale == Scale::lin
                       ? a.low + u * (a.high - a.low)
                       : std::exp(std::log(a.low) + u * (std::log(a.high) - std::log(a.low)));
  return fmt::format("{}", std::clamp(v, a.low, a.high));
}

std::vector<Point> enumerate_points(const SweepSpec& spec) {
  std::vector<std::vector<double>> samples;
  if (!spec.ranges.empty()) {
    TESSEL_CHECK(spec.samples > 0, "a sweep with range keys needs samples");
    samples =
        spec.sampling == Sampling::lhs
            ? latin_hypercube(static_cast<size_t>(spec.samples), spec.ranges.size(), spec.seed)
            : uniform_samples(static_cast<size_t>(spec.samples), spec.ranges.size(), spec.seed);
  }
  std::vector<Point> points;
  const int64_t total = point_count(spec);
  points.reserve(static_cast<size_t>(total));
  std::vector<size_t> idx(spec.grid.size(), 0);
  const size_t per_combination = spec.ranges.empty() ? 1 : samples.size();
  for (int64_t combo = 0; points.size() < static_cast<size_t>(total); ++combo) {
    for (size_t s = 0; s < per_combination; ++s) {
      Point p;
      p.index = static_cast<int64_t>(points.size());
      for (size_t g = 0; g < spec.grid.size(); ++g) p.values.push_back(spec.grid[g].values[idx[g]]);
      for (size_t r = 0; r < spec.ranges.size(); ++r)
        p.values.push_back(range_value(spec.ranges[r], samples[s][r]));
      points.push_back(std::move(p));
    }
    // Next grid combination (row-major: the last key varies fastest).
    for (size_t g = spec.grid.size(); g > 0; --g) {
      if (++idx[g - 1] < spec.grid[g - 1].values.size()) break;
      idx[g - 1] = 0;
    }
  }
  return points;
}

}  // namespace tessel::dse
