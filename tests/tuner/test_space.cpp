// Schedule spaces as data (passes/loop/schedule.h): a small conv's space printed and sized
// exactly, invalid points rejected with their reason (never emitted), partial knobs completed by
// the analytical default.
#include <gtest/gtest.h>

#include <iostream>
#include <map>

#include "compiler/backend/npu/compile.h"
#include "compiler/driver/runner.h"
#include "compiler/tuner/tuner.h"
#include "passes/loop/schedule.h"
#include "tests/cli/cli_test_util.h"
#include "tests/tuner/tuner_test_util.h"

namespace tessel::testing {
namespace {

// Conv 1x16x2x2 -> 16 channels, 1x1 kernel, fused with its Relu: one conv task. Its knobs on
// npu_4core (4 cores, 16x16x16 cube):
//   mt {16} (cout 16: no smaller multiple of 16)              1
//   kc {16, 8, 4, 2, 1} (halvings of cin)                      5
//   ht {2, 1}, wt {2, 1} (ceil(2 / d))                         2 x 2
//   weights_resident {1, 0}, double_buffer {1, 0}              2 x 2
//   k_sub {1, 2, 4, 8, 16} (up to cin / 1)                     5
//   row_groups {1, 2} (up to oh = 2)                           2
//   split {batch, group, cout, rows}, cores {4, 2, 1}          4 x 3
// = 9,600 points. Valid ones: every buffer fits (the largest, L0A, holds 16 x 16 fp16 = 512 bytes);
// k_sub must give exactly k_sub sub-chunks of ceil(kc / k_sub) channels: kc = 16 takes all 5
// values, 8 four, 4 three, 2 two, 1 one = 15 (kc, k_sub) pairs; row_groups must give exactly that
// many groups of ceil(ht / row_groups) rows: ht = 2 takes 1 and 2, ht = 1 only 1; with cores = 1
// split must be batch (1 way), with 2 cores it needs a loop of >= 2 tiles -- only rows, with
// ht = 1 (2 row tiles); 4 cores: none. So per (kc, k_sub, wt, resident, double_buffer):
// ht = 2: 2 row_groups x 1 split + ht = 1: 1 x 2 = 4, and 15 x 2 x 2 x 2 x 4 = 480 valid points.
TEST(Space, SmallConvPrintedAndSizedExactly) {
  const auto dir = scratch_dir("space");
  write_conv_model(dir / "conv.onnx", 16, 16, 2, 2, 1);
  const auto r = run_tessel(
      "tune " + (dir / "conv.onnx").string() + " --hw hw_configs/npu_4core.yaml --space", "space");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "space 9,600 points, 480 valid");
  EXPECT_CONTAINS(r.out, "1 tasks, 9,600 points in all");
  EXPECT_CONTAINS(r.out, "kc                16 8 4 2 1");
  EXPECT_CONTAINS(r.out, "split             0=batch 1=group 2=cout 3=rows");
  EXPECT_CONTAINS(r.out, "cores             4 2 1");
}

struct Lowered {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<npu_backend::LoweredGraph> lowered;
  const passes::KernelSchedule& schedule(size_t i = 0) const {
    return *lowered->kernels().at(i).schedule;
  }
};

Lowered lower(const std::filesystem::path& model, const npu::HwConfig& hw) {
  Lowered l;
  graph_passes::PipelineOptions passes;
  passes.available = driver::target_ops(driver::Target::npu);
  l.graph = driver::load_model(model.string(), {}, passes);
  l.lowered =
      std::make_unique<npu_backend::LoweredGraph>(*l.graph, hw, npu_backend::NpuCompileOptions{});
  return l;
}

TEST(Space, InvalidPointsAreRejectedWithTheirReasonAndNeverEmitted) {
  const auto dir = scratch_dir("space");
  // 64 -> 64 channels, 3x3, 56x56.
  write_conv_model(dir / "big.onnx", 64, 64, 56, 56, 3);
  const npu::HwConfig hw = preset("npu_4core");
  const Lowered l = lower(dir / "big.onnx", hw);
  const passes::KernelSchedule& s = l.schedule();
  passes::Knobs k = passes::default_knobs(s, hw);
  ASSERT_FALSE(s.reject(k)) << *s.reject(k);
  // The whole 56 x 56 image in one pixel tile and one row group, 64 channels per K chunk in 32
  // sub-chunks of 2 (K = 2 x 9 = 18, padded to 32 rows): L1 holds two windows of 64 x 58 x 58
  // fp16 (861,184 bytes) and the resident 64 x 576 weights (73,728): 934,912 <= 1 MiB; but the
  // im2col block of the row group is 32 x 3,136 pixels x 2 bytes = 200,704 bytes, and L0B has
  // 32,768 per buffer.
  passes::Knobs big = k;
  big["kc"] = 64;
  big["weights_resident"] = 1;
  big["double_buffer"] = 1;
  big["ht"] = 56;
  big["wt"] = 56;
  big["row_groups"] = 1;
  big["k_sub"] = 32;
  big["cores"] = 1;
  big["split"] = 0;
  const auto why = s.reject(big);
  ASSERT_TRUE(why.has_value());
  EXPECT_CONTAINS(*why,
                  "the im2col block of one row group needs 200704 bytes of l0b, 32768 available");
  EXPECT_CONTAINS(*why, "core.buffers_bytes.l0b = 65536, halved for double buffering");
  EXPECT_THROW(s.emit(big), passes::InvalidKnobs);
  // A knob outside its domain and an unknown knob.
  passes::Knobs odd = k;
  odd["mt"] = 48;
  EXPECT_CONTAINS(s.reject(odd).value_or(""), "mt = 48 is outside its domain (64, 32, 16)");
  passes::Knobs unknown = k;
  unknown["tile"] = 3;
  EXPECT_CONTAINS(s.reject(unknown).value_or(""), "unknown knob 'tile' for a conv kernel");
  // A core split over a loop with too few tiles: one row tile cannot feed 4 cores.
  passes::Knobs split = k;
  split["ht"] = 56;
  split["split"] = 3;
  split["cores"] = 4;
  EXPECT_CONTAINS(s.reject(split).value_or(""),
                  "split = 3 (rows) has 1 tile, fewer than cores = 4");
}

TEST(Space, PartialKnobsAreCompletedByTheAnalyticalDefault) {
  const auto dir = scratch_dir("space");
  write_conv_model(dir / "conv.onnx", 32, 64, 14, 14, 3);
  const npu::HwConfig hw = preset("npu_4core");
  const Lowered l = lower(dir / "conv.onnx", hw);
  const passes::KernelSchedule& s = l.schedule();
  const passes::Knobs k = passes::default_knobs(s, hw, {{"mt", 16}, {"cores", 2}});
  EXPECT_EQ(k.at("mt"), 16);
  EXPECT_EQ(k.at("cores"), 2);
  EXPECT_FALSE(s.reject(k));
  // Among the completions the default is the one with the lowest estimate.
  const passes::Screened ranked = passes::screen(s, hw, {{"mt", 16}, {"cores", 2}});
  ASSERT_GT(ranked.size(), 10u);
  EXPECT_EQ(ranked.knobs(0), k);
  for (size_t i = 1; i < ranked.size(); ++i) {
    EXPECT_GE(ranked.cycles(i), ranked.cycles(i - 1));
    EXPECT_EQ(ranked.value(i, "mt"), 16);
  }
  // A fixed knob no point can take is an error naming it.
  EXPECT_THROW(passes::default_knobs(s, hw, {{"mt", 48}}), passes::InvalidKnobs);
}

}  // namespace
}  // namespace tessel::testing

namespace tessel::testing {
namespace {

// Screening for the default schedule prunes the space (passes::screen with `within`): it keeps
// exactly the points of the full screening estimated within the factor of the best with their
// cores value, in the same order, so the default candidates (within 1.5) and the analytical
// default (within 1) are the same as from the full screening. Checked on every task of the
// PP-OCR classifier (conv, depthwise and pointwise, matmul and vector kernels); a bound that
// overestimated a point's cost on more cores would drop a kept point and fail here.
TEST(Space, PrunedScreeningKeepsExactlyThePointsWithinTheFactor) {
  const npu::HwConfig hw = preset("npu_4core");
  graph_passes::PipelineOptions passes;
  passes.available = driver::target_ops(driver::Target::npu);
  const auto graph = driver::load_model(
      std::string(TESSEL_SOURCE_DIR) + "/tests/data/cases/ppocr_cls_b1/model.onnx",
      {{"x", {1, 3, 48, 192}}}, passes);
  const npu_backend::LoweredGraph lowered(*graph, hw, {});
  std::map<std::string, int> kinds;
  size_t full_points = 0, kept_points = 0;
  for (const auto& task : tuner::tasks_of(lowered)) {
    const passes::KernelSchedule& s = *lowered.kernels()[task.kernels.front()].schedule;
    const passes::Screened full = passes::screen(s, hw);
    for (double within : {1.0, tuner::kDefaultCandidatesWithin}) {
      const passes::Screened pruned = passes::screen(s, hw, {}, within);
      std::map<int64_t, double> best;
      for (size_t i = 0; i < full.size(); ++i) best.emplace(full.value(i, "cores"), full.cycles(i));
      std::vector<size_t> want;
      for (size_t i = 0; i < full.size(); ++i)
        if (full.cycles(i) <= within * best.at(full.value(i, "cores"))) want.push_back(i);
      ASSERT_EQ(pruned.size(), want.size()) << task.key << " within " << within;
      for (size_t j = 0; j < want.size(); ++j) {
        ASSERT_EQ(pruned.knobs(j), full.knobs(want[j])) << task.key << " point " << j;
        ASSERT_EQ(pruned.cycles(j), full.cycles(want[j])) << task.key << " point " << j;
      }
      if (within > 1) {
        EXPECT_EQ(tuner::default_candidates(pruned), tuner::default_candidates(full)) << task.key;
        kept_points += pruned.size();
      }
    }
    full_points += full.size();
    ++kinds[task.kind];
  }
  EXPECT_GT(kinds["conv"], 0);
  EXPECT_GT(kinds["matmul"] + kinds["vector"], 0);
  std::cout << "  " << kinds["conv"] << " conv, " << kinds["matmul"] << " matmul, "
            << kinds["vector"] << " vector tasks: " << kept_points << " of " << full_points
            << " screened points kept within " << tuner::kDefaultCandidatesWithin << "\n";
}

}  // namespace
}  // namespace tessel::testing
