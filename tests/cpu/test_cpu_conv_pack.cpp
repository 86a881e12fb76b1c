// The convolution packs of the BLIS schedule (passes/loop/cpu_gemm.cpp) on the geometries that
// choose between them, against the reference interpreter:
//   * flat pack: the input pixels of consecutive flattened outputs n = oh * OW + ow are
//     contiguous (stride 1 with OW == IW): one (masked) vector load per panel row;
//   * row-wise pack: otherwise, when the input stride along ow is 1..4 (stride 2/3/4, dilation,
//     "valid" padding with OW != IW, a stride only along H): input rows into a row buffer with
//     contiguous loads de-interleaved by a shuffle (codegen.cpp strided_load), then copied;
//   * stride > 4 along W: the flat pack with gathers.
// The cases cover N blocks that start mid-row (nc knob smaller than a multiple of OW), output
// rows shorter than a vector and longer than four vectors, unpadded stride-2 reads that end at the
// last input element (lanes past the row end must read nothing), batch 2, groups and a fused ReLU.
//
// Tolerance: K = IC/group * KH * KW <= 100 terms of magnitude <= 1 in fp32 with FMA and
// reassociation differ from the reference's sequential sum by <= K u max|y| ~ 100 * 6e-8 = 6e-6
// relative; 2e-5 as in test_cpu_ops.cpp.
#include <fmt/format.h>

#include "tests/cpu/cpu_test_util.h"

namespace tessel::testing {
namespace {

struct PackCase {
  const char* name;
  Shape x;  // N C H W
  Shape w;  // OC IC/group KH KW
  std::vector<int64_t> strides, pads, dilations;
  int64_t group;
  bool relu;
  int64_t nc_vectors;  // > 0: N block of this many vectors (mr = 4, nr = one vector)
  bool row_pack;       // the schedule is expected to pack B row-wise
};

void PrintTo(const PackCase& c, std::ostream* os) { *os << c.name; }

const PackCase kCases[] = {
    // ResNet-50 conv3_1 shape class: 3x3 stride 2 pad 1, N blocks of 2 vectors start mid-row.
    {"s2_pad1_midrow_blocks",
     {1, 5, 23, 21},
     {7, 5, 3, 3},
     {2, 2},
     {1, 1, 1, 1},
     {1, 1},
     1,
     false,
     2,
     true},
    // 1x1 stride 2 without padding (ResNet downsample): the last row's lanes past OW would read
    // past the end of the input.
    {"s2_1x1_nopad", {1, 6, 30, 30}, {5, 6, 1, 1}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, true, 0, true},
    {"s3_batch2_relu",
     {2, 4, 20, 40},
     {6, 4, 3, 3},
     {3, 3},
     {1, 1, 1, 1},
     {1, 1},
     1,
     true,
     0,
     true},
    {"s4_k5", {1, 3, 33, 70}, {4, 3, 5, 5}, {4, 4}, {2, 2, 2, 2}, {1, 1}, 1, false, 0, true},
    // Rows of 75 outputs: more than four vectors per row (a serial chunk loop).
    {"s2_wide_rows", {1, 2, 9, 150}, {3, 2, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1, false, 0, true},
    // Stride only along H: stride 1 along W, but rows of the flattened n are not contiguous.
    {"s2x1", {1, 3, 19, 37}, {5, 3, 3, 3}, {2, 1}, {1, 1, 1, 1}, {1, 1}, 1, false, 0, true},
    // Dilation 2, no padding: OW = 41 != IW = 45.
    {"dilated_valid",
     {1, 4, 17, 45},
     {6, 4, 3, 3},
     {1, 1},
     {0, 0, 0, 0},
     {2, 2},
     1,
     false,
     0,
     true},
    {"grouped_s2", {2, 6, 11, 13}, {10, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 2, false, 0, true},
    // Stride 1 "same": the flattened pixels are contiguous, flat pack.
    {"s1_same", {1, 4, 10, 12}, {6, 4, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, false, 0, false},
    // Stride 5 along W: beyond the de-interleaving strides, flat pack with gathers.
    {"s5_gather", {1, 3, 26, 52}, {4, 3, 3, 3}, {5, 5}, {0, 0, 0, 0}, {1, 1}, 1, false, 0, false},
};

class CpuConvPack : public ::testing::TestWithParam<PackCase> {};

TEST_P(CpuConvPack, MatchesReference) {
  const PackCase& c = GetParam();
  CpuGraph b;
  Value* x = b.input("x", c.x);
  Value* w = b.constant("w", cpu_random(c.w, 41));
  Value* bias = b.constant("b", cpu_random({c.w[0]}, 42));
  Value* y = b.node("Conv", {x, w, bias},
                    attrs({{"strides", c.strides},
                           {"pads", c.pads},
                           {"dilations", c.dilations},
                           {"group", c.group}}));
  if (c.relu) y = b.node("Relu", {y});
  auto g = b.finish({y});
  cpu_backend::CpuCompileOptions opts;
  opts.keep_loop_ir = true;
  if (c.nc_vectors > 0) {
    passes::CpuGemmKnobs k;
    k.mr = 4;
    k.nr = opts.target.vector_lanes;
    k.nc = c.nc_vectors * opts.target.vector_lanes;
    opts.gemm_knobs[g->nodes().back()->name] = k;
  }
  auto prog = cpu_backend::compile_cpu(*g, opts);
  int gemm = 0;
  for (const auto& k : prog.kernels) {
    if (k.kind != "gemm") continue;
    ++gemm;
    // The row-wise pack is the only user of the row buffer <kernel>.Rp.
    EXPECT_EQ(k.loop_ir.find(".Rp[") != std::string::npos, c.row_pack) << k.loop_ir;
    if (c.nc_vectors > 0) EXPECT_EQ(k.gemm.nc, c.nc_vectors * opts.target.vector_lanes);
  }
  EXPECT_EQ(gemm, 1);
  check_cpu(*g, {{"x", cpu_random(c.x, 43)}}, 2e-5, opts);
}

INSTANTIATE_TEST_SUITE_P(Geometries, CpuConvPack, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tessel::testing
