// Calibration of the cube's timing formula against the RTL (docs/rtl.md, docs/results.md, "RTL
// cube in the loop"): 72 int8 tile shapes (m1 in {1, 2, 4, 8} x k1 in {1, 2, 3, 8, 16, 32} x n1
// in {1, 2, 4} fractals of 16 x 16 x 16; 69 of them, those that fit the L0 buffers, of DaVinci's
// 16 x 32 x 16), each issued three ways on the RTL cube alone --
//   alone:        one mmad;
//   back to back: three, each at its predecessor's issue + occupancy (the cube pipe's issue rule
//                 when nothing stalls it), into disjoint C blocks, overlapping in the pipeline;
//   stalled:      two, the second presented one cycle after the first while the cube is busy
//                 (the RTL holds it until ready; the formula's pipe starts it at
//                 max(issue, predecessor's start + occupancy)) --
// with random operands (every i8/u8 mix) and alternating accumulation. Each mmad's RTL cycles
// (completion - the cycle the formula starts it) are compared with npu::instruction_cost's
// occupancy + latency, and every L0C byte with isa/semantics. Prints the per-shape table and the
// RTL's speed (RTL cycles per host second, one thread, SystemC and DPI included).
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>

#include "tests/rtl/rtl_harness.h"

namespace tessel {
namespace {

using namespace rtl_test;
using isa::DType;

struct Pattern {
  const char* name;
  int count;
  bool stalled;
};

// Runs the sweep on `hw`'s int8 fractal (`shape`); shapes whose operands do not fit L0A / L0B /
// L0C are skipped. Returns the shapes run.
uint64_t calibrate(const npu::HwConfig& hw, const rtl::RtlCubeShape& shape, const char* label) {
  const uint32_t m1s[] = {1, 2, 4, 8}, k1s[] = {1, 2, 3, 8, 16, 32}, n1s[] = {1, 2, 4};
  const Pattern patterns[] = {
      {"alone", 1, false}, {"back_to_back", 3, false}, {"stalled", 2, true}};
  const DType dts[] = {DType::i8, DType::u8};
  std::mt19937 rng(2026);
  uint64_t mmads = 0, exact_values = 0, cycle_mismatches = 0, edges_total = 0, shapes = 0;
  double abs_rel_error_sum = 0, host_total = 0;
  uint64_t max_error = 0;
  std::cout << "[rtl calibration " << label
            << "] m1 k1 n1 | formula cycles alone / back_to_back (each) / stalled "
               "(2nd) | RTL cycles\n";
  for (uint32_t m1 : m1s)
    for (uint32_t k1 : k1s)
      for (uint32_t n1 : n1s) {
        const uint64_t a_bytes = uint64_t{m1} * k1 * shape.m * shape.k,
                       b_bytes = uint64_t{k1} * n1 * shape.k * shape.n,
                       c_bytes = uint64_t{m1} * n1 * shape.m * shape.n * 4 * 3;
        if (a_bytes > hw.core.buffers_bytes.l0a || b_bytes > hw.core.buffers_bytes.l0b ||
            c_bytes > hw.core.buffers_bytes.l0c)
          continue;
        ++shapes;
        const uint64_t T = uint64_t{m1} * k1 * n1;
        std::string line = fmt::format("[rtl calibration {}] {} {} {} |", label, m1, k1, n1);
        std::string rtl_line;
        for (const Pattern& p : patterns) {
          Memory m(hw);
          fill_random(m.l0a, rng);
          fill_random(m.l0b, rng);
          fill_random(m.l0c, rng);
          Memory ref(m);
          std::vector<Issue> issues;
          std::vector<uint64_t> start;  // the cycle the formula's pipe starts each
          uint64_t t = 2, free_cycle = 0;
          for (int i = 0; i < p.count; ++i) {
            const int mix = static_cast<int>(mmads + i) % 4;
            const isa::MmadArgs a = mmad(m1, k1, n1, (mmads + i) % 2 == 1, dts[mix & 1],
                                         dts[mix >> 1], 0, 0, int64_t{i} * m1 * n1 * 16 * 16 * 4);
            issues.push_back({a, t});
            start.push_back(std::max(t, free_cycle));
            free_cycle = start.back() + T;
            t = p.stalled ? t + 1 : t + T;
          }
          uint64_t edges = 0;
          double host = 0;
          const auto done = run_rtl(m, issues, &edges, &host, shape);
          run_reference(hw, ref, issues);
          EXPECT_EQ(done.size(), issues.size());
          if (done.size() != issues.size()) return shapes;
          const bool exact = first_difference(m, ref).empty();
          EXPECT_TRUE(exact) << m1 << "x" << k1 << "x" << n1 << " " << p.name << ": "
                             << first_difference(m, ref);
          edges_total += edges;
          host_total += host;
          for (size_t i = 0; i < done.size(); ++i) {
            const uint64_t formula = cost_cycles(hw, issues[i].args);  // T + 8
            const uint64_t rtl = done[i].completion_cycle - start[i];
            const uint64_t err = rtl > formula ? rtl - formula : formula - rtl;
            ++mmads;
            exact_values += exact;
            cycle_mismatches += err != 0;
            max_error = std::max(max_error, err);
            abs_rel_error_sum += static_cast<double>(err) / static_cast<double>(formula);
            EXPECT_EQ(rtl, formula) << m1 << "x" << k1 << "x" << n1 << " " << p.name << " #" << i;
            EXPECT_EQ(formula, T + 8);
            if (i + 1 == done.size()) {
              line += fmt::format(" {}", formula);
              rtl_line += fmt::format(" {}", rtl);
            }
          }
        }
        std::cout << line << " |" << rtl_line << "\n";
      }
  EXPECT_EQ(mmads, shapes * 6);
  std::cout << fmt::format(
      "[rtl calibration {}] {} shapes, {} mmads: {} bit-exact, {} cycle mismatches, mean absolute "
      "cycle error {:.4f}%, max {} cycles; {} RTL cycles in {:.3f} s = {:.0f} RTL cycles per host "
      "second\n",
      label, shapes, mmads, exact_values, cycle_mismatches,
      100.0 * abs_rel_error_sum / double(mmads), max_error, edges_total, host_total,
      double(edges_total) / host_total);
  return shapes;
}

TEST(RtlCalibration, SeventyTwoTileShapesThreeIssuePatterns) {
  EXPECT_EQ(calibrate(preset(), {16, 16, 16, 8}, "16x16x16"), 72u);
}

// DaVinci's int8 fractal (core.cube.int8 = 16 x 32 x 16, the second verilated cube): the 72 shapes
// but the 3 of m1 = 8, k1 = 32 (A: 128 KiB > L0A's 64 KiB).
TEST(RtlCalibration, DaVinciInt8FractalSixtyNineShapes) {
  EXPECT_EQ(calibrate(davinci(), {16, 32, 16, 8}, "16x32x16"), 69u);
}

}  // namespace
}  // namespace tessel
