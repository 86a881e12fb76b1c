// The pieces of `tessel dse` that neither compile nor simulate (compiler/dse/): sweep points and
// their sampling, `where:` constraints through muparser, Pareto fronts and hypervolume through
// pagmo2, the SQLite results store, and the experiment file's sweep keys with their errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "compiler/driver/experiment.h"
#include "compiler/dse/pareto.h"
#include "compiler/dse/report.h"
#include "compiler/dse/search.h"
#include "compiler/dse/store.h"
#include "compiler/dse/sweep.h"
#include "compiler/dse/where.h"
#include "compiler/support/error.h"
#include "tests/cli/cli_test_util.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;
using dse::RangeAxis;
using dse::Scale;

TEST(DseSweep, LatinHypercubeHoldsOneSampleInEveryStratumOfEveryKey) {
  const size_t n = 10, d = 3;
  const auto s = dse::latin_hypercube(n, d, 7);
  ASSERT_EQ(s.size(), n);
  for (size_t j = 0; j < d; ++j) {
    std::set<int> strata;
    for (const auto& p : s) {
      ASSERT_GE(p[j], 0.0);
      ASSERT_LT(p[j], 1.0);
      strata.insert(static_cast<int>(p[j] * n));
    }
    EXPECT_EQ(strata.size(), n) << "dimension " << j << ": a stratum holds two samples";
  }
  EXPECT_EQ(dse::latin_hypercube(n, d, 7), s) << "not deterministic for a seed";
  EXPECT_NE(dse::latin_hypercube(n, d, 8), s) << "the seed is not used";
  // Uniform draws are not stratified: with 10 draws some stratum is (almost surely) empty, and
  // the draws are deterministic for a seed too.
  EXPECT_EQ(dse::uniform_samples(n, d, 7), dse::uniform_samples(n, d, 7));
}

TEST(DseSweep, RangeValuesMapTheUnitSampleByScale) {
  RangeAxis lin{"k", 1, 4, Scale::lin, true};
  // integers over [low, high + 1): floor(1 + u * 4)
  EXPECT_EQ(dse::range_value(lin, 0.0), "1");
  EXPECT_EQ(dse::range_value(lin, 0.5), "3");
  EXPECT_EQ(dse::range_value(lin, 0.99), "4");
  RangeAxis log{"k", 32, 512, Scale::log, true};
  EXPECT_EQ(dse::range_value(log, 0.0), "32");
  // exp((ln 32 + ln 513) / 2) = sqrt(32 * 513) = 128.1 -> 128
  EXPECT_EQ(dse::range_value(log, 0.5), "128");
  EXPECT_EQ(dse::range_value(log, 0.999999), "512");
  RangeAxis pow2{"k", 8, 64, Scale::pow2, true};  // 8, 16, 32, 64 equally likely
  EXPECT_EQ(dse::range_value(pow2, 0.0), "8");
  EXPECT_EQ(dse::range_value(pow2, 0.25), "16");
  EXPECT_EQ(dse::range_value(pow2, 0.74), "32");
  EXPECT_EQ(dse::range_value(pow2, 0.99), "64");
  RangeAxis real{"k", 0.5, 1.5, Scale::lin, false};
  EXPECT_EQ(dse::range_value(real, 0.25), "0.75");
}

TEST(DseSweep, PointsAreTheGridRowMajorTimesTheSamples) {
  dse::SweepSpec spec;
  spec.grid = {{"a", {"1", "2"}}, {"b", {"x", "y", "z"}}};
  spec.ranges = {{"c", 1, 1000, Scale::lin, true}};
  spec.samples = 2;
  spec.seed = 3;
  spec.sampling = dse::Sampling::lhs;
  EXPECT_EQ(dse::swept_keys(spec), (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(dse::point_count(spec), 12);
  const auto pts = dse::enumerate_points(spec);
  ASSERT_EQ(pts.size(), 12u);
  const auto lhs = dse::latin_hypercube(2, 1, 3);
  const std::string s0 = dse::range_value(spec.ranges[0], lhs[0][0]);
  const std::string s1 = dse::range_value(spec.ranges[0], lhs[1][0]);
  EXPECT_EQ(pts[0].values, (std::vector<std::string>{"1", "x", s0}));
  EXPECT_EQ(pts[1].values, (std::vector<std::string>{"1", "x", s1}));
  EXPECT_EQ(pts[2].values, (std::vector<std::string>{"1", "y", s0}));
  EXPECT_EQ(pts[6].values, (std::vector<std::string>{"2", "x", s0}));
  EXPECT_EQ(pts[11].values, (std::vector<std::string>{"2", "z", s1}));
  for (size_t i = 0; i < pts.size(); ++i) EXPECT_EQ(pts[i].index, static_cast<int64_t>(i));
}

TEST(DseSearch, DecisionVectorsDecodeToGridValuesAndRanges) {
  dse::SweepSpec spec;
  spec.grid = {{"a", {"8", "16", "32"}}};
  spec.ranges = {{"b", 8, 64, Scale::pow2, true}};
  // a: floor(x * 3) -> 0.0, 0.34, 0.99, 1.0 pick 8, 16, 32, 32; b: as range_value.
  EXPECT_EQ(dse::decode(spec, {0.0, 0.0}), (std::vector<std::string>{"8", "8"}));
  EXPECT_EQ(dse::decode(spec, {0.34, 0.25}), (std::vector<std::string>{"16", "16"}));
  EXPECT_EQ(dse::decode(spec, {0.99, 0.99}), (std::vector<std::string>{"32", "64"}));
  EXPECT_EQ(dse::decode(spec, {1.0, 1.0}), (std::vector<std::string>{"32", "64"}));
}

TEST(DseSearch, Nsga2IsSeededAndEvaluatesWholeGenerations) {
  dse::SweepSpec spec;
  spec.ranges = {{"x", 0, 1, Scale::lin, false}, {"y", 0, 1, Scale::lin, false}};
  spec.search = dse::SearchSpec{8, 3, 11};
  // Two conflicting objectives: x and 1 - x + y (the front is y = 0).
  auto run = [&](std::vector<size_t>& batches) {
    const dse::BatchFitness f = [&](const std::vector<std::vector<double>>& xs) {
      batches.push_back(xs.size());
      std::vector<std::vector<double>> out;
      for (const auto& x : xs) out.push_back({x[0], 1 - x[0] + x[1]});
      return out;
    };
    return dse::nsga2(spec, 2, f);
  };
  std::vector<size_t> b1, b2;
  const auto x1 = run(b1), x2 = run(b2);
  EXPECT_EQ(x1, x2) << "the same seed gave another search";
  // The initial population, then one batch of 8 offspring per generation.
  EXPECT_EQ(b1, (std::vector<size_t>{8, 8, 8, 8}));
  ASSERT_EQ(x1.size(), 8u);
  spec.search->seed = 12;
  std::vector<size_t> b3;
  EXPECT_NE(run(b3), x1);
}

TEST(DseWhere, ConstraintsOverDottedKeys) {
  const std::map<std::string, double> base = {{"core.cube.m", 16},
                                              {"core.buffers_bytes.l0c", 4096}};
  const dse::Constraints c(
      {"core.buffers_bytes.l0c >= 4 * core.cube.m * 16 * 4", "core.cube.m < 64"},
      {"e.yaml:3:5: sweep.where[0]", "e.yaml:3:9: sweep.where[1]"}, base);
  EXPECT_EQ(c.violated(base), -1);  // 4096 >= 4 * 16 * 16 * 4 = 4096
  auto v = base;
  v["core.cube.m"] = 32;  // 4096 < 8192
  EXPECT_EQ(c.violated(v), 0);
  v["core.buffers_bytes.l0c"] = 1 << 20;
  v["core.cube.m"] = 64;
  EXPECT_EQ(c.violated(v), 1);
  try {
    dse::Constraints({"core.cube.mm > 1"}, {"e.yaml:3:5: sweep.where[0]"}, base);
    FAIL() << "an unknown key compiled";
  } catch (const Error& e) {
    EXPECT_CONTAINS(std::string(e.what()), "e.yaml:3:5: sweep.where[0]");
    EXPECT_CONTAINS(std::string(e.what()), "unknown key 'core.cube.mm'");
    EXPECT_CONTAINS(std::string(e.what()), "core.cube.m");
  }
  EXPECT_THROW(dse::Constraints({"core.cube.m >="}, {"w"}, base), Error);
}

TEST(DsePareto, FrontAndHypervolumeByHand) {
  // (3,4) is dominated by (2,3); the two equal (2,3) rows are both kept.
  const std::vector<std::vector<double>> pts = {{1, 5}, {2, 3}, {3, 4}, {4, 1}, {2, 3}};
  EXPECT_EQ(dse::pareto_front(pts), (std::vector<size_t>{0, 1, 3, 4}));
  EXPECT_EQ(dse::pareto_front({{7, 7}}), (std::vector<size_t>{0}));
  EXPECT_TRUE(dse::pareto_front({}).empty());
  // Up to (5, 6): x in [1,2) height 6-5 = 1, [2,4) height 6-3 = 3, [4,5) height 6-1 = 5:
  // 1 + 6 + 5 = 12.
  EXPECT_DOUBLE_EQ(dse::hypervolume({{1, 5}, {2, 3}, {4, 1}}, {5, 6}), 12.0);
  EXPECT_THROW(dse::hypervolume({{1, 7}}, {5, 6}), Error);
}

dse::Row row(int64_t point, const std::string& status, std::optional<int64_t> cycles,
             std::optional<int64_t> dram, std::vector<std::string> values) {
  dse::Row r;
  r.point = point;
  r.workload = "m";
  r.values = std::move(values);
  r.status = status;
  r.total_cycles = cycles;
  r.dram_bytes = dram;
  r.tessel_version = "t";
  if (status == "ok") r.efficiency = 0.5;
  return r;
}

TEST(DseStore, RowsCommittedOnceAndReadBackInOrder) {
  const fs::path dir = temp_dir("dse_store");
  const std::string path = (dir / "results.sqlite").string();
  {
    auto store =
        dse::ResultStore::create(path, {"core.cube.m", "core.cube.input_dtype"}, R"({"a":1})", "t");
    store.insert(row(1, "ok", 100, 7, {"32", "fp16"}));
    store.insert(row(0, "invalid", std::nullopt, std::nullopt, {"0", "fp16"}));
    EXPECT_THROW(store.insert(row(1, "ok", 100, 7, {"32", "fp16"})), Error) << "a duplicate row";
    const auto rows = store.rows();
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0].point, 0);
    EXPECT_EQ(rows[1].values, (std::vector<std::string>{"32", "fp16"}));
    EXPECT_EQ(*rows[1].total_cycles, 100);
    EXPECT_FALSE(rows[0].total_cycles.has_value());
    EXPECT_EQ(store.done(), (std::set<std::pair<int64_t, int64_t>>{{0, 0}, {1, 0}}));
  }
  try {
    dse::ResultStore::create(path, {"core.cube.m"}, "{}", "t");
    FAIL() << "created over an existing sweep";
  } catch (const Error& e) {
    EXPECT_CONTAINS(std::string(e.what()), "--resume");
  }
  try {
    dse::ResultStore::resume(path, {"core.cube.m", "core.cube.input_dtype"}, R"({"a":2})");
    FAIL() << "resumed a different experiment";
  } catch (const Error& e) {
    EXPECT_CONTAINS(std::string(e.what()), "different sweep");
    EXPECT_CONTAINS(std::string(e.what()), "'a': stored 1, now 2");
  }
  auto again =
      dse::ResultStore::resume(path, {"core.cube.m", "core.cube.input_dtype"}, R"({"a":1})");
  EXPECT_EQ(again.rows().size(), 2u);
  EXPECT_THROW(dse::ResultStore::resume((dir / "none.sqlite").string(), {}, "{}"), Error);
}

TEST(DseReport, CsvAndParetoFromRows) {
  // cycles/dram: p0 (100, 9), p1 (90, 9) dominates p0, p2 (120, 5), p3 error.
  const std::vector<dse::Row> rows = {row(0, "ok", 100, 9, {"8"}), row(1, "ok", 90, 9, {"16"}),
                                      row(2, "ok", 120, 5, {"32"}),
                                      row(3, "error", std::nullopt, std::nullopt, {"64"})};
  const auto fronts = dse::pareto_fronts(rows, {"cycles", "dram_bytes", "area"});
  ASSERT_EQ(fronts.size(), 3u);  // cycles,dram_bytes; cycles,area; dram_bytes,area
  EXPECT_EQ(fronts[0].rows, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(fronts[0].candidates, 3u);
  EXPECT_EQ(fronts[1].candidates, 0u) << "area is empty";
  const std::string csv = dse::pareto_csv({"core.cube.m"}, rows, fronts);
  EXPECT_EQ(csv,
            "objectives,point,workload,core.cube.m,status,reason,total_cycles,area_mm2,energy_uj,"
            "edp,efficiency,bound,dram_bytes,config_sha256,tessel_version\n"
            "\"cycles,dram_bytes\",1,m,16,ok,,90,,,,0.5,,9,,t\n"
            "\"cycles,dram_bytes\",2,m,32,ok,,120,,,,0.5,,5,,t\n");
  EXPECT_CONTAINS(dse::results_csv({"core.cube.m"}, rows), "\n3,m,64,error,,,,,,,,,,t\n");
}

/// The experiment file's sweep keys: what they parse to and the errors they give.
class DseExperiment : public ::testing::Test {
 protected:
  const std::string path = std::string(TESSEL_SOURCE_DIR) + "/experiments/x.yaml";
  std::string error_of(const std::string& text) {
    try {
      driver::parse_experiment(text, path);
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  }
  const std::string head = "sweep:\n  base: ../hw_configs/npu_4core.yaml\n";
  const std::string wl = "workloads: [{model: ../models/hello_deepa.onnx}]\n";
};

TEST_F(DseExperiment, ParsesGridRandomWhereWorkloadsObjectives) {
  const auto ex = driver::parse_experiment(
      head +
          "  grid: {core.cube.m: [8, 16], core.cube.input_dtype: [fp16]}\n"
          "  random: {samples: 5, seed: 2, method: lhs, ranges: {memory.dram.bytes_per_cycle: "
          "[32, 512, log], clock_ghz: [0.5, 1.5]}}\n"
          "  where: [\"core.cube.m <= 16\"]\n" +
          wl + "objectives: [cycles, dram_bytes]\ntune: {budget: 8}\n",
      path);
  ASSERT_TRUE(ex.dse);
  const auto& s = ex.dse->sweep;
  EXPECT_EQ(dse::swept_keys(s),
            (std::vector<std::string>{"core.cube.m", "core.cube.input_dtype",
                                      "memory.dram.bytes_per_cycle", "clock_ghz"}));
  EXPECT_EQ(s.samples, 5);
  EXPECT_EQ(s.sampling, dse::Sampling::lhs);
  EXPECT_TRUE(s.ranges[0].integer);
  EXPECT_EQ(s.ranges[0].scale, Scale::log);
  EXPECT_FALSE(s.ranges[1].integer);
  EXPECT_EQ(dse::point_count(s), 10);
  ASSERT_EQ(ex.runs.size(), 1u);
  EXPECT_EQ(ex.runs[0].name, "hello_deepa");
  EXPECT_TRUE(ex.runs[0].timing_only);
  ASSERT_TRUE(ex.runs[0].tune);
  EXPECT_EQ(ex.runs[0].tune->budget, 8);
  EXPECT_EQ(ex.dse->objectives, (std::vector<std::string>{"cycles", "dram_bytes"}));
  EXPECT_CONTAINS(ex.dse->where_context[0], "x.yaml:5:11: sweep.where[0]");
}

TEST_F(DseExperiment, BadInputNamesFileLineAndKey) {
  EXPECT_CONTAINS(error_of(head + "  grid: {core.cube.mm: [8]}\n" + wl),
                  "x.yaml:3:10: sweep.grid.core.cube.mm: not a hardware config key");
  EXPECT_CONTAINS(error_of(head + "  grid: {core.cube.m: [8], core.cube.m: [16]}\n" + wl),
                  "sweep.grid.core.cube.m: swept twice");
  EXPECT_CONTAINS(error_of(head + "  grid: {core.cube.m: []}\n" + wl),
                  "sweep.grid.core.cube.m: expected a non-empty list");
  EXPECT_CONTAINS(
      error_of(head + "  random: {samples: 2, ranges: {core.cube.m: [12, 64, pow2]}}\n" + wl),
      "a pow2 range needs powers of two");
  EXPECT_CONTAINS(
      error_of(head + "  random: {samples: 2, ranges: {core.cube.m: [8, 64, cubic]}}\n" + wl),
      "'cubic' is not one of lin, log, pow2");
  EXPECT_CONTAINS(error_of(head + "  random: {ranges: {core.cube.m: [8, 64]}}\n" + wl),
                  "missing 'samples'");
  EXPECT_CONTAINS(error_of(head + "  where: [\"core.cube.q > 1\"]\n" + wl),
                  "x.yaml:3:11: sweep.where[0]: 'core.cube.q > 1': unknown key 'core.cube.q'");
  EXPECT_CONTAINS(error_of(head + wl + "hw: ../hw_configs/npu_4core.yaml\n"),
                  "x.yaml:4:1: hw: does not apply to a sweep");
  EXPECT_CONTAINS(error_of(head), "missing 'workloads'");
  EXPECT_CONTAINS(error_of(head + "workloads: [{model: ../models/hello_deepa.onnx}, {model: "
                                  "../models/hello_deepa.onnx}]\n"),
                  "workload name 'hello_deepa' is already the name of workloads[0]");
  EXPECT_CONTAINS(error_of(head + wl + "objectives: [cycles, speed]\n"),
                  "'speed' is not an objective");
  EXPECT_CONTAINS(error_of(head + wl + "tune: {budget: 4, log: t.jsonl}\n"),
                  "tune.log: does not apply to a sweep");
  EXPECT_CONTAINS(error_of("sweep:\n  grid: {core.cube.m: [8]}\n" + wl), "missing 'base'");
  EXPECT_CONTAINS(error_of(head +
                           "  grid: {core.cube.m: [8, 16]}\n  search: {population: 10, "
                           "generations: 2}\n" +
                           wl),
                  "sweep.search.population: expected a multiple of 4 from 8");
  EXPECT_CONTAINS(error_of(head +
                           "  search: {population: 8, generations: 2}\n  random: "
                           "{samples: 4, ranges: {core.cube.m: [8, 64, pow2]}}\n" +
                           wl),
                  "sweep.random.samples: does not apply with sweep.search");
  EXPECT_CONTAINS(error_of(head + "  grid: {core.cube.m: [8, 16]}\n" + wl +
                           "objectives: [cycles, dram_bytes]\nhypervolume_reference: {area: 1}\n"),
                  "hypervolume_reference.area: not one of this sweep's objectives");
}

}  // namespace
}  // namespace tessel::testing
