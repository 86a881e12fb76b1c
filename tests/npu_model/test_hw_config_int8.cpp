// The optional int8-mode fractal of the cube (core.cube.int8, npu_model/hw_config.cpp,
// docs/hw_config.md): absent = the int8 mode uses the float fractal and the presets' YAML (and so
// their config hash) is unchanged; present or set with --hw-set it is read, derived (int8 MACs and
// ops per cycle) and written back; its L0 fractals must fit like the float ones.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/support/error.h"
#include "npu_model/hw_config.h"

namespace tessel::npu {
namespace {

const std::string kSourceDir = TESSEL_SOURCE_DIR;

HwConfig preset(const std::vector<HwOverride>& overrides = {}) {
  return load_hw_config(kSourceDir + "/hw_configs/npu_4core.yaml", overrides);
}

const std::vector<HwOverride> kDaVinciInt8 = {
    {"core.cube.int8.m", "16"}, {"core.cube.int8.k", "32"}, {"core.cube.int8.n", "16"}};

TEST(HwConfigInt8, AbsentMeansTheFloatFractalAndTheYamlHasNoSection) {
  for (const char* file : {"npu_4core.yaml", "edge_1core.yaml", "server_32core.yaml"}) {
    SCOPED_TRACE(file);
    const HwConfig hw = load_hw_config(kSourceDir + "/hw_configs/" + file);
    EXPECT_EQ(hw.core.cube.int8, CubeFractal{});
    EXPECT_EQ(hw.core.cube.int8_fractal(), hw.core.cube.float_fractal());
    EXPECT_EQ(hw.derived.cube_int8_macs_per_cycle, hw.derived.cube_macs_per_cycle);
    EXPECT_EQ(hw_config_to_yaml(hw).find("int8"), std::string::npos);
  }
}

TEST(HwConfigInt8, HwSetAddsDaVincisInt8FractalAndItRoundTrips) {
  const HwConfig hw = preset(kDaVinciInt8);
  EXPECT_EQ(hw.core.cube.int8_fractal(), (CubeFractal{16, 32, 16}));
  EXPECT_EQ(hw.core.cube.float_fractal(), (CubeFractal{16, 16, 16}));  // fp16 unchanged
  // 16 * 32 * 16 = 8192 int8 MACs per core and cycle (Hot Chips 31: "8192 INT8 MACs"); 4 cores,
  // 2 ops per MAC: 65536 ops per cycle = 65.536 TOPS at 1 GHz, twice the fp16 32.768 TFLOPS.
  EXPECT_EQ(hw.derived.cube_int8_macs_per_cycle, 8192);
  EXPECT_EQ(hw.derived.chip_int8_ops_per_cycle, 65536);
  EXPECT_DOUBLE_EQ(hw.derived.peak_int8_tops, 65.536);
  EXPECT_DOUBLE_EQ(hw.derived.peak_tflops, 32.768);
  const std::string yaml = hw_config_to_yaml(hw);
  EXPECT_NE(yaml.find("int8:"), std::string::npos) << yaml;
  HwConfig again = parse_hw_config(yaml, hw.source_file);
  EXPECT_EQ(again, hw);
}

TEST(HwConfigInt8, SectionInAFile) {
  std::string text = hw_config_to_yaml(preset());
  const std::string at = "    pipeline_latency_cycles: 8\n";
  const auto pos = text.find(at);
  ASSERT_NE(pos, std::string::npos) << text;
  text.insert(pos + at.size(), "    int8: {m: 16, k: 32, n: 16}\n");
  const HwConfig hw = parse_hw_config(text, "<int8>");
  EXPECT_EQ(hw.core.cube.int8, (CubeFractal{16, 32, 16}));
  // A section missing a key names it.
  std::string bad = text;
  bad.replace(bad.find("int8: {m: 16, k: 32, n: 16}"), 27, "int8: {m: 16, k: 32}");
  try {
    parse_hw_config(bad, "<bad>");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("<bad>:15:5: core.cube.int8: missing required key 'n'"),
              std::string::npos)
        << e.what();
  }
}

TEST(HwConfigInt8, Int8FractalsMustFitTheL0Buffers) {
  // k = 4096: two 16 x 4096 int8 L0A fractals are 131072 bytes > 65536.
  try {
    preset({{"core.cube.int8.m", "16"}, {"core.cube.int8.k", "4096"}, {"core.cube.int8.n", "16"}});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("core.buffers_bytes.l0a: 65536 bytes cannot hold two int8 m x k L0A "
                       "fractals of core.cube.int8 (16x4096x16: 131072 bytes)"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("core.cube.int8.k was set by --hw-set"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace tessel::npu
