// Tests of the hardware-config loader (npu_model/hw_config.cpp): the presets load with the numbers
// their comments derive, every class of bad input gives a tessel::Error naming the line, column and
// dotted key, --hw-set overrides are applied and validated like the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "compiler/support/error.h"
#include "npu_model/hw_config.h"
#include "tests/npu_model/npu_model_test_util.h"

namespace tessel::npu {
namespace {

const std::string kSourceDir = TESSEL_SOURCE_DIR;

std::string preset_path(const std::string& file) { return kSourceDir + "/hw_configs/" + file; }

using testutil::read_text;
using testutil::replaced;

// A valid config, one key per line so that tests can point at exact lines and columns.
const std::string kValid = R"(name: test-npu
clock_ghz: 1.0
cores: 4
core:
  scalar:
    cycles_per_instruction: 1
    issue_queue_depth: 16
  cube:
    m: 16
    k: 16
    n: 16
    input_dtype: fp16
    acc_dtype: fp32
    pipeline_latency_cycles: 8
  vector:
    width_bytes: 256
    pipeline_latency_cycles: 4
  buffers_bytes:
    l1: 1048576
    l0a: 65536
    l0b: 65536
    l0c: 262144
    ub: 262144
  dma:
    mte1: {bytes_per_cycle: 256, latency_cycles: 4}
    mte2: {bytes_per_cycle: 64, latency_cycles: 100}
    mte3: {bytes_per_cycle: 64, latency_cycles: 100}
    fix: {bytes_per_cycle: 256, latency_cycles: 4}
  sync:
    event_ids: 8
memory:
  dram:
    bytes_per_cycle: 128
    latency_cycles: 200
    capacity_bytes: 8589934592
)";

/// "<test>:LINE:COL" of `token` on the first line of `text` that contains `line_text`.
std::string loc(const std::string& text, const std::string& line_text, const std::string& token) {
  const size_t line_start_hint = text.find(line_text);
  EXPECT_NE(line_start_hint, std::string::npos) << "test bug: '" << line_text << "' not in text";
  const size_t line_begin = text.rfind('\n', line_start_hint) == std::string::npos
                                ? 0
                                : text.rfind('\n', line_start_hint) + 1;
  const size_t line_end = text.find('\n', line_begin);
  const std::string line = text.substr(line_begin, line_end - line_begin);
  const size_t col = line.find(token);
  EXPECT_NE(col, std::string::npos) << "test bug: '" << token << "' not on line '" << line << "'";
  const int line_no =
      1 + static_cast<int>(std::count(text.begin(), text.begin() + line_begin, '\n'));
  return "<test>:" + std::to_string(line_no) + ":" + std::to_string(col + 1);
}

/// The message of the tessel::Error that parsing `text` raises (test fails if none is raised).
std::string error_of(const std::string& text, const std::vector<HwOverride>& overrides = {}) {
  try {
    parse_hw_config(text, "<test>", overrides);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a tessel::Error for:\n" << text;
  return "";
}

#define EXPECT_HAS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "message: " << (haystack)

// ---------------------------------------------------------------------------------------------
// Presets. Each expected number restates the derivation in the preset's comments.

TEST(HwConfigPresets, Npu4CoreLoadsWithDerivedValues) {
  const HwConfig hw = load_hw_config(preset_path("npu_4core.yaml"));
  EXPECT_EQ(hw.name, "npu-4core");
  EXPECT_EQ(hw.source_file, preset_path("npu_4core.yaml"));
  EXPECT_DOUBLE_EQ(hw.clock_ghz, 1.0);
  EXPECT_EQ(hw.cores, 4);
  EXPECT_EQ(hw.core.scalar.cycles_per_instruction, 1);
  EXPECT_EQ(hw.core.scalar.issue_queue_depth, 16);
  EXPECT_EQ(hw.core.cube.m, 16);
  EXPECT_EQ(hw.core.cube.k, 16);
  EXPECT_EQ(hw.core.cube.n, 16);
  EXPECT_EQ(hw.core.cube.input_dtype, isa::DType::f16);
  EXPECT_EQ(hw.core.cube.acc_dtype, isa::DType::f32);
  EXPECT_EQ(hw.core.cube.pipeline_latency_cycles, 8);
  EXPECT_EQ(hw.core.vector.width_bytes, 256);
  EXPECT_EQ(hw.core.vector.pipeline_latency_cycles, 4);
  EXPECT_EQ(hw.core.buffers_bytes.l1, 1048576);
  EXPECT_EQ(hw.core.buffers_bytes.l0a, 65536);
  EXPECT_EQ(hw.core.buffers_bytes.l0b, 65536);
  EXPECT_EQ(hw.core.buffers_bytes.l0c, 262144);
  EXPECT_EQ(hw.core.buffers_bytes.ub, 262144);
  EXPECT_EQ(hw.core.mte1.bytes_per_cycle, 256);
  EXPECT_EQ(hw.core.mte1.latency_cycles, 4);
  EXPECT_EQ(hw.core.mte2.bytes_per_cycle, 64);
  EXPECT_EQ(hw.core.mte2.latency_cycles, 100);
  EXPECT_EQ(hw.core.mte3.bytes_per_cycle, 64);
  EXPECT_EQ(hw.core.mte3.latency_cycles, 100);
  EXPECT_EQ(hw.core.fix.bytes_per_cycle, 256);
  EXPECT_EQ(hw.core.fix.latency_cycles, 4);
  EXPECT_EQ(hw.core.sync_event_ids, 8);
  EXPECT_EQ(hw.dram.bytes_per_cycle, 102);
  EXPECT_EQ(hw.dram.latency_cycles, 200);
  EXPECT_EQ(hw.dram.capacity_bytes, int64_t{8} << 30);
  // 16*16*16 = 4096 MAC/cycle/core; 2 FLOP/MAC * 4096 * 4 cores = 32768 FLOP/cycle;
  // 32768 FLOP/cycle * 1.0e9 cycle/s = 32.768 TFLOPS.
  EXPECT_EQ(hw.derived.cube_macs_per_cycle, 4096);
  EXPECT_EQ(hw.derived.chip_flops_per_cycle, 32768);
  EXPECT_DOUBLE_EQ(hw.derived.peak_tflops, 32.768);
  EXPECT_EQ(hw.derived.vector_fp16_elems_per_cycle, 128);  // 256 B / 2 B
  EXPECT_EQ(hw.derived.vector_fp32_elems_per_cycle, 64);   // 256 B / 4 B
  EXPECT_DOUBLE_EQ(hw.derived.dram_gb_per_s, 102.0);       // 102 B/cycle * 1.0 GHz
  EXPECT_EQ(hw.derived.a_fractal_bytes, 512);              // 16*16*2
  EXPECT_EQ(hw.derived.b_fractal_bytes, 512);              // 16*16*2
  EXPECT_EQ(hw.derived.c_fractal_bytes, 1024);             // 16*16*4
  EXPECT_DOUBLE_EQ(hw.derived.ridge_flops_per_dram_byte, 32768.0 / 102.0);
}

TEST(HwConfigPresets, Edge1CoreLoadsWithDerivedValues) {
  const HwConfig hw = load_hw_config(preset_path("edge_1core.yaml"));
  EXPECT_EQ(hw.name, "edge-1core");
  EXPECT_DOUBLE_EQ(hw.clock_ghz, 0.68);
  EXPECT_EQ(hw.cores, 1);
  EXPECT_EQ(hw.core.scalar.issue_queue_depth, 8);
  EXPECT_EQ(hw.core.cube.m, 8);
  EXPECT_EQ(hw.core.cube.k, 16);
  EXPECT_EQ(hw.core.cube.n, 16);
  EXPECT_EQ(hw.core.vector.width_bytes, 128);
  EXPECT_EQ(hw.core.buffers_bytes.l1, 524288);
  EXPECT_EQ(hw.core.buffers_bytes.l0a, 32768);
  EXPECT_EQ(hw.core.buffers_bytes.l0b, 32768);
  EXPECT_EQ(hw.core.buffers_bytes.l0c, 131072);
  EXPECT_EQ(hw.core.buffers_bytes.ub, 131072);
  EXPECT_EQ(hw.core.mte1.bytes_per_cycle, 128);
  EXPECT_EQ(hw.core.mte2.bytes_per_cycle, 32);
  EXPECT_EQ(hw.core.mte3.bytes_per_cycle, 32);
  EXPECT_EQ(hw.core.fix.bytes_per_cycle, 128);
  EXPECT_EQ(hw.dram.bytes_per_cycle, 50);
  EXPECT_EQ(hw.dram.latency_cycles, 150);
  EXPECT_EQ(hw.dram.capacity_bytes, int64_t{4} << 30);
  // 8*16*16 = 2048 MAC/cycle (half a DaVinci Max cube); 2 * 2048 * 1 core = 4096 FLOP/cycle;
  // 4096 * 0.68e9 = 2.78528 TFLOPS.
  EXPECT_EQ(hw.derived.cube_macs_per_cycle, 2048);
  EXPECT_EQ(hw.derived.chip_flops_per_cycle, 4096);
  EXPECT_NEAR(hw.derived.peak_tflops, 2.78528, 1e-12);
  EXPECT_EQ(hw.derived.vector_fp16_elems_per_cycle, 64);  // 128 B / 2 B
  EXPECT_EQ(hw.derived.vector_fp32_elems_per_cycle, 32);  // 128 B / 4 B
  EXPECT_NEAR(hw.derived.dram_gb_per_s, 34.0, 1e-12);     // 50 B/cycle * 0.68 GHz
  EXPECT_EQ(hw.derived.a_fractal_bytes, 256);             // 8*16*2
  EXPECT_EQ(hw.derived.b_fractal_bytes, 512);             // 16*16*2
  EXPECT_EQ(hw.derived.c_fractal_bytes, 512);             // 8*16*4
  EXPECT_DOUBLE_EQ(hw.derived.ridge_flops_per_dram_byte, 4096.0 / 50.0);
}

TEST(HwConfigPresets, Server32CoreLoadsWithDerivedValues) {
  const HwConfig hw = load_hw_config(preset_path("server_32core.yaml"));
  EXPECT_EQ(hw.name, "server-32core");
  EXPECT_DOUBLE_EQ(hw.clock_ghz, 1.0);
  EXPECT_EQ(hw.cores, 32);
  EXPECT_EQ(hw.core.cube.m, 16);
  EXPECT_EQ(hw.core.cube.k, 16);
  EXPECT_EQ(hw.core.cube.n, 16);
  EXPECT_EQ(hw.core.vector.width_bytes, 256);
  EXPECT_EQ(hw.core.buffers_bytes.l1, 1048576);
  EXPECT_EQ(hw.core.buffers_bytes.l0c, 262144);
  EXPECT_EQ(hw.core.mte2.bytes_per_cycle, 128);
  EXPECT_EQ(hw.core.mte3.bytes_per_cycle, 64);
  EXPECT_EQ(hw.dram.bytes_per_cycle, 1200);
  EXPECT_EQ(hw.dram.latency_cycles, 150);
  EXPECT_EQ(hw.dram.capacity_bytes, int64_t{32} << 30);
  // 32 cores * 4096 MAC * 2 FLOP = 262144 FLOP/cycle; at 1.0 GHz 262.144 TFLOPS (Ascend 910: 256
  // TFLOPS quoted); 1200 B/cycle * 1 GHz = 1200 GB/s (the quoted ~1.2 TB/s of HBM).
  EXPECT_EQ(hw.derived.cube_macs_per_cycle, 4096);
  EXPECT_EQ(hw.derived.chip_flops_per_cycle, 262144);
  EXPECT_DOUBLE_EQ(hw.derived.peak_tflops, 262.144);
  EXPECT_DOUBLE_EQ(hw.derived.dram_gb_per_s, 1200.0);
  EXPECT_DOUBLE_EQ(hw.derived.ridge_flops_per_dram_byte, 262144.0 / 1200.0);
}

TEST(HwConfigPresets, EveryPresetRoundTripsThroughYaml) {
  for (const char* file : {"npu_4core.yaml", "edge_1core.yaml", "server_32core.yaml"}) {
    SCOPED_TRACE(file);
    const HwConfig hw = load_hw_config(preset_path(file));
    HwConfig again = parse_hw_config(hw_config_to_yaml(hw), hw.source_file);
    EXPECT_EQ(again, hw);
    HwConfig built = hw;
    built.derived = DerivedConfig{};
    finalize_hw_config(built);
    EXPECT_EQ(built, hw);
  }
}

TEST(HwConfigPresets, KeysListIsTheSchemaAndDocsDescribeEveryKey) {
  const std::vector<std::string> keys = hw_config_keys();
  // 3 top-level + scalar 2 + cube 6 + cube.int8 3 + cube.model, rtl_sample 2 + vector 2 + buffers 5
  // + dma 4x2 + sync 1 + dram 5 + banked 15 + banked.timing_ck 15 + l2 8 + multicast 1 + tech = 77
  // (cube.int8: the optional int8-mode fractal m, k, n; cube.model, rtl_sample: the optional tlm /
  // rtl cube and its sampling, docs/rtl.md; dram: bytes_per_cycle, latency_cycles, capacity_bytes
  // and the optional burst_bytes and model; banked: the banked model's section with the optional
  // channel_hash, docs/memory.md; the optional section l2: capacity_bytes, line_bytes, ways, banks,
  // bytes_per_cycle, latency_cycles, write_policy, placement; the optional memory.multicast; tech:
  // the optional technology table of the area/energy model, last).
  ASSERT_EQ(keys.size(), 77u);
  EXPECT_EQ(keys.front(), "name");
  EXPECT_EQ(keys[3], "core.scalar.cycles_per_instruction");
  EXPECT_EQ(keys[10], "core.cube.pipeline_latency_cycles");
  EXPECT_EQ(keys[11], "core.cube.int8.m");
  EXPECT_EQ(keys[13], "core.cube.int8.n");
  EXPECT_EQ(keys[14], "core.cube.model");
  EXPECT_EQ(keys[15], "core.cube.rtl_sample");
  EXPECT_EQ(keys[34], "memory.dram.capacity_bytes");
  EXPECT_EQ(keys[35], "memory.dram.burst_bytes");
  EXPECT_EQ(keys[36], "memory.dram.model");
  EXPECT_EQ(keys[66], "memory.dram.banked.timing_ck.tRFC");
  EXPECT_EQ(keys[67], "memory.l2.capacity_bytes");
  EXPECT_EQ(keys[73], "memory.l2.write_policy");
  EXPECT_EQ(keys[74], "memory.l2.placement");
  EXPECT_EQ(keys[75], "memory.multicast");
  EXPECT_EQ(keys.back(), "tech");
  const std::string docs = read_text(kSourceDir + "/docs/hw_config.md");
  for (const std::string& key : keys) {
    EXPECT_NE(docs.find("`" + key + "`"), std::string::npos)
        << key << " is not in docs/hw_config.md";
  }
}

TEST(HwConfigPresets, EveryPresetHas32ByteDramBursts) {
  // LPDDR5 (npu_4core) and LPDDR4X (edge_1core): BL16 on a x16 channel = 16 * 2 B = 32 B;
  // HBM2 pseudo-channel (server_32core): 64 bit x BL4 = 32 B. The header comments cite them.
  for (const char* file : {"npu_4core.yaml", "edge_1core.yaml", "server_32core.yaml"}) {
    SCOPED_TRACE(file);
    EXPECT_EQ(load_hw_config(preset_path(file)).dram.burst_bytes, 32);
  }
}

TEST(HwConfigPresets, BaseTextOfTheseTestsIsValid) {
  const HwConfig hw = parse_hw_config(kValid, "<test>");
  EXPECT_EQ(hw.name, "test-npu");
  EXPECT_EQ(hw.source_file, "<test>");
  EXPECT_EQ(hw.dram.bytes_per_cycle, 128);
  // memory.dram.burst_bytes is absent from kValid: the documented default 1 (byte-granular).
  EXPECT_EQ(hw.dram.burst_bytes, 1);
}

TEST(HwConfigBurstBytes, OptionalKeyIsReadOverriddenAndRoundTrips) {
  const std::string text = kValid + "    burst_bytes: 64\n";
  const HwConfig hw = parse_hw_config(text, "<test>");
  EXPECT_EQ(hw.dram.burst_bytes, 64);
  EXPECT_EQ(parse_hw_config(hw_config_to_yaml(hw), "<again>").dram.burst_bytes, 64);
  EXPECT_EQ(
      parse_hw_config(kValid, "<test>", {{"memory.dram.burst_bytes", "4096"}}).dram.burst_bytes,
      4096);
  EXPECT_EQ(parse_hw_config(text, "<test>", {{"memory.dram.burst_bytes", "1"}}).dram.burst_bytes,
            1);
  // A config built in code without it gets the default 1 and validates.
  HwConfig built = parse_hw_config(kValid, "<test>");
  built.dram = DramConfig{128, 200, int64_t{8} << 30};
  finalize_hw_config(built);
  EXPECT_EQ(built.dram.burst_bytes, 1);
}

TEST(HwConfigBurstBytes, BadValuesNameFileLineKeyAndTheDefault) {
  const std::string expected =
      "expected a power of two in [1, 4096] (optional: when absent, 1 = byte-granular DRAM, no "
      "burst rounding), got ";
  const std::string want = "memory.dram.burst_bytes: " + expected;
  const std::string t48 = kValid + "    burst_bytes: 48\n";
  EXPECT_HAS(error_of(t48),
             loc(t48, "burst_bytes: 48", "48") + ": " + want + "48, which is not a power of two");
  const std::string t0 = kValid + "    burst_bytes: 0\n";
  EXPECT_HAS(error_of(t0), loc(t0, "burst_bytes: 0", "0") + ": " + want + "0");
  EXPECT_HAS(error_of(kValid + "    burst_bytes: 8192\n"), want + "8192");
  EXPECT_HAS(error_of(kValid + "    burst_bytes: -32\n"), want + "-32");
  EXPECT_HAS(error_of(kValid + "    burst_bytes: 32.0\n"), want + "32.0, which is not an integer");
  EXPECT_HAS(error_of(kValid + "    burst_bytes:\n"), want + "nothing (an empty value)");
  EXPECT_HAS(error_of(kValid, {{"memory.dram.burst_bytes", "24"}}),
             "<test>: --hw-set memory.dram.burst_bytes=24: " + expected +
                 "24, which is not a power of two");
}

// ---------------------------------------------------------------------------------------------
// Files and YAML syntax.

TEST(HwConfigErrors, MissingFileNamesThePath) {
  try {
    load_hw_config("/nonexistent/dir/npu.yaml");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), "/nonexistent/dir/npu.yaml: cannot read hardware config: no such file");
  }
}

TEST(HwConfigErrors, DirectoryIsNotAConfig) {
  try {
    load_hw_config(kSourceDir + "/hw_configs");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), "hw_configs: cannot read hardware config: not a regular file");
  }
}

TEST(HwConfigErrors, ErrorsInAFileNameTheFile) {
  const auto path = std::filesystem::temp_directory_path() / "tessel_test_hw_bad_cores.yaml";
  {
    std::ofstream out(path);
    out << replaced(kValid, "cores: 4", "cores: 0");
  }
  try {
    load_hw_config(path.string());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), path.string() + ":3:8: cores: expected an integer in [1, 1024], got 0");
  }
  std::filesystem::remove(path);
}

TEST(HwConfigErrors, YamlSyntaxErrorGivesLine) {
  // A tab in indentation is illegal YAML; yaml-cpp reports it at the tab (line 10, column 1).
  const std::string text = replaced(kValid, "    k: 16\n", "\tk: 16\n");
  const std::string msg = error_of(text);
  EXPECT_HAS(msg, "<test>:10:1: YAML syntax error: illegal tab");
  // An unclosed flow map: the error is reported where the parser gave up, with a line number.
  const std::string msg2 = error_of(replaced(kValid, "{bytes_per_cycle: 64, latency_cycles: 100}",
                                             "{bytes_per_cycle: 64, latency_cycles: 100"));
  EXPECT_HAS(msg2, "YAML syntax error");
  EXPECT_HAS(msg2, "<test>:");
}

TEST(HwConfigErrors, EmptyOrCommentOnlyFile) {
  EXPECT_HAS(error_of(""),
             "<test>:1:1: the file has no content; expected a map with keys name, "
             "clock_ghz, cores, core, memory");
  EXPECT_HAS(error_of("# nothing here\n"), "<test>:1:1: the file has no content");
}

TEST(HwConfigErrors, SecondDocumentIsRejected) {
  EXPECT_HAS(error_of(kValid + "---\nname: x\n"),
             "<test>:37:1: a hardware config is one YAML document");
}

// Found by fuzzing (tests/fuzz/regressions/hw_config): yaml-cpp 0.7's LoadAll never returns on a
// token no rule consumes (a stray ',' alone on a line), growing memory; the loader must report it.
// Run in a child process with a 20 s alarm, so that a hang fails the test instead of stalling it.
TEST(HwConfigErrors, StrayCommaIsASyntaxErrorNotAHang) {
  EXPECT_EXIT(
      {
        alarm(20);
        const std::string msg = error_of("\n,\n");
        std::_Exit(
            msg.find("<test>:2:1: YAML syntax error: unexpected ','") != std::string::npos ? 0 : 3);
      },
      ::testing::ExitedWithCode(0), "");
  EXPECT_HAS(error_of(",\n"), "<test>:1:1: YAML syntax error: unexpected ','");
  // After a whole document, the stray token starts a second one.
  EXPECT_HAS(error_of(kValid + "---\n,\n"), "<test>:37:1: a hardware config is one YAML document");
}

TEST(HwConfigErrors, TopLevelMustBeAMap) {
  EXPECT_HAS(
      error_of("- 1\n- 2\n"),
      "<test>:1:1: expected a map with keys name, clock_ghz, cores, core, memory, tech, got a "
      "list");
}

// ---------------------------------------------------------------------------------------------
// Keys.

TEST(HwConfigErrors, UnknownKeyNamesLineAndDottedKey) {
  const std::string text = replaced(kValid, "    n: 16\n", "    n: 16\n    q: 3\n");
  EXPECT_HAS(error_of(text), loc(text, "    q: 3", "q") +
                                 ": core.cube.q: unknown key; expected one of m, k, n, "
                                 "input_dtype, acc_dtype, pipeline_latency_cycles");
}

TEST(HwConfigErrors, UnknownKeySuggestsCloseSpelling) {
  const std::string text = replaced(kValid, "    l0c: 262144", "    lOc: 262144");
  const std::string msg = error_of(text);
  EXPECT_HAS(msg, loc(text, "lOc", "lOc") + ": core.buffers_bytes.lOc: unknown key");
  EXPECT_HAS(msg, "(did you mean 'l0c'?)");
  // ...and the real key is then missing, reported at the parent's line.
  EXPECT_HAS(msg, loc(text, "buffers_bytes:", "buffers_bytes") +
                      ": core.buffers_bytes: missing required key 'l0c'");
}

TEST(HwConfigErrors, UnknownTopLevelKey) {
  const std::string text = kValid + "frequency_mhz: 1000\n";
  EXPECT_HAS(error_of(text),
             "<test>:36:1: frequency_mhz: unknown key; expected one of name, "
             "clock_ghz, cores, core, memory");
}

TEST(HwConfigErrors, UnknownKeyInsideFlowMap) {
  const std::string text = replaced(kValid, "mte2: {bytes_per_cycle: 64, latency_cycles: 100}",
                                    "mte2: {bytes_per_cycle: 64, latency_cycles: 100, burst: 2}");
  EXPECT_HAS(error_of(text), loc(text, "burst", "burst") +
                                 ": core.dma.mte2.burst: unknown key; expected one of "
                                 "bytes_per_cycle, latency_cycles");
}

TEST(HwConfigErrors, DuplicateKey) {
  const std::string text = replaced(kValid, "    k: 16\n", "    k: 16\n    k: 32\n");
  EXPECT_HAS(error_of(text),
             loc(text, "    k: 32", "k") + ": core.cube.k: duplicate key (first given at line 10)");
}

TEST(HwConfigErrors, MissingKeyNamesTheParentLine) {
  const std::string text = replaced(kValid, "    n: 16\n", "");
  EXPECT_HAS(error_of(text), loc(text, "  cube:", "cube") +
                                 ": core.cube: missing required key 'n'; expected an integer in "
                                 "[1, 4096]");
}

TEST(HwConfigErrors, MissingSectionAndTopLevelKey) {
  const std::string no_memory = kValid.substr(0, kValid.find("memory:"));
  EXPECT_HAS(error_of(no_memory),
             "<test>:1:1: missing required key 'memory'; expected a map with keys dram");
  const std::string no_cores = replaced(kValid, "cores: 4\n", "");
  EXPECT_HAS(error_of(no_cores),
             "<test>:1:1: missing required key 'cores'; expected an integer in "
             "[1, 1024]");
  const std::string no_fix =
      replaced(kValid, "    fix: {bytes_per_cycle: 256, latency_cycles: 4}\n", "");
  EXPECT_HAS(error_of(no_fix), loc(no_fix, "  dma:", "dma") +
                                   ": core.dma: missing required key 'fix'; expected a map with "
                                   "keys bytes_per_cycle, latency_cycles");
}

// ---------------------------------------------------------------------------------------------
// Types and ranges.

TEST(HwConfigErrors, StringWhereIntegerExpected) {
  const std::string text = replaced(kValid, "cores: 4", "cores: four");
  EXPECT_HAS(error_of(text), "<test>:3:8: cores: expected an integer in [1, 1024], got 'four'");
}

TEST(HwConfigErrors, QuotedNumberIsAString) {
  const std::string text = replaced(kValid, "cores: 4", "cores: \"4\"");
  EXPECT_HAS(error_of(text),
             "<test>:3:8: cores: expected an integer in [1, 1024], got the quoted "
             "string '4' (write the number without quotes)");
}

TEST(HwConfigErrors, FloatWhereIntegerExpected) {
  const std::string text = replaced(kValid, "    m: 16", "    m: 16.5");
  EXPECT_HAS(error_of(text), loc(text, "m: 16.5", "16.5") +
                                 ": core.cube.m: expected an integer in [1, 4096], got 16.5, "
                                 "which is not an integer");
  const std::string text2 = replaced(kValid, "capacity_bytes: 8589934592", "capacity_bytes: 8e9");
  EXPECT_HAS(error_of(text2),
             "memory.dram.capacity_bytes: expected an integer >= 1, got 8e9, "
             "which is not an integer");
}

TEST(HwConfigErrors, LeadingZerosAreAmbiguous) {
  // YAML 1.1 reads 016 as octal 14, YAML 1.2 as 16: rejected rather than guessed.
  EXPECT_HAS(error_of(replaced(kValid, "cores: 4", "cores: 016")),
             "<test>:3:8: cores: expected an integer in [1, 1024], got 016: write integers without "
             "leading zeros");
  EXPECT_HAS(error_of(replaced(kValid, "cores: 4", "cores: 00")), "got 00: write integers without");
  // A plain 0 is fine where 0 is allowed.
  EXPECT_EQ(parse_hw_config(
                replaced(kValid, "pipeline_latency_cycles: 8", "pipeline_latency_cycles: 0"), "<t>")
                .core.cube.pipeline_latency_cycles,
            0);
}

TEST(HwConfigErrors, NegativeAndZero) {
  const std::string text = replaced(kValid, "mte2: {bytes_per_cycle: 64, latency_cycles: 100}",
                                    "mte2: {bytes_per_cycle: 64, latency_cycles: -1}");
  EXPECT_HAS(error_of(text),
             loc(text, "mte2:", "-1") +
                 ": core.dma.mte2.latency_cycles: expected an integer >= 0, got -1");
  const std::string text2 =
      replaced(kValid, "mte3: {bytes_per_cycle: 64,", "mte3: {bytes_per_cycle: 0,");
  EXPECT_HAS(error_of(text2),
             loc(text2, "mte3:", "0,") +
                 ": core.dma.mte3.bytes_per_cycle: expected an integer >= 1, got 0");
}

TEST(HwConfigErrors, MapOrListWhereScalarExpected) {
  const std::string text = replaced(kValid, "    m: 16", "    m: {value: 16}");
  EXPECT_HAS(error_of(text), loc(text, "m: {value", "{") +
                                 ": core.cube.m: expected an integer in [1, 4096], got a map");
  const std::string text2 = replaced(kValid, "name: test-npu", "name: [a, b]");
  EXPECT_HAS(error_of(text2), "<test>:1:7: name: expected a non-empty string, got a list");
}

TEST(HwConfigErrors, ScalarWhereMapExpected) {
  const std::string text = replaced(kValid, "  sync:\n    event_ids: 8\n", "  sync: 8\n");
  EXPECT_HAS(error_of(text), loc(text, "  sync: 8", "8") +
                                 ": core.sync: expected a map with keys event_ids, got '8'");
}

TEST(HwConfigErrors, EmptyValuePointsAtItsKey) {
  const std::string text = replaced(kValid, "cores: 4", "cores:");
  EXPECT_HAS(error_of(text),
             "<test>:3:1: cores: expected an integer in [1, 1024], got nothing (an empty value)");
}

TEST(HwConfigErrors, BooleanWhereIntegerExpected) {
  const std::string text = replaced(kValid, "    event_ids: 8", "    event_ids: true");
  EXPECT_HAS(error_of(text), loc(text, "event_ids: true", "true") +
                                 ": core.sync.event_ids: expected an integer in [1, 64], got the "
                                 "boolean true");
}

TEST(HwConfigErrors, IntegerRanges) {
  EXPECT_HAS(error_of(replaced(kValid, "cores: 4", "cores: 2000")),
             "<test>:3:8: cores: expected an integer in [1, 1024], got 2000");
  EXPECT_HAS(error_of(replaced(kValid, "event_ids: 8", "event_ids: 65")),
             "core.sync.event_ids: expected an integer in [1, 64], got 65");
  const std::string big =
      replaced(kValid, "    bytes_per_cycle: 128", "    bytes_per_cycle: 3000000000");
  EXPECT_HAS(error_of(big),
             "memory.dram.bytes_per_cycle: expected an integer >= 1, got 3000000000, "
             "which is above the largest supported value 2147483647");
  const std::string huge =
      replaced(kValid, "capacity_bytes: 8589934592", "capacity_bytes: 99999999999999999999");
  EXPECT_HAS(error_of(huge),
             "memory.dram.capacity_bytes: expected an integer >= 1, got "
             "99999999999999999999, which is out of range");
  EXPECT_HAS(error_of(replaced(kValid, "l1: 1048576", "l1: 2147483648")),
             "core.buffers_bytes.l1: expected an integer in [32, 1073741824] and a multiple of 32, "
             "got 2147483648");
}

TEST(HwConfigErrors, MultipleOf32) {
  const std::string text = replaced(kValid, "    l0a: 65536", "    l0a: 1000");
  EXPECT_HAS(error_of(text),
             loc(text, "l0a: 1000", "1000") +
                 ": core.buffers_bytes.l0a: expected an integer in [32, 1073741824] "
                 "and a multiple of 32, got 1000, which is not a multiple of 32");
  const std::string text2 = replaced(kValid, "    width_bytes: 256", "    width_bytes: 16");
  EXPECT_HAS(error_of(text2),
             "core.vector.width_bytes: expected an integer >= 32 and a multiple of "
             "32, got 16");
  const std::string text3 = replaced(kValid, "    width_bytes: 256", "    width_bytes: 100");
  EXPECT_HAS(error_of(text3), "got 100, which is not a multiple of 32");
}

TEST(HwConfigErrors, Dtypes) {
  const std::string text = replaced(kValid, "input_dtype: fp16", "input_dtype: int8");
  EXPECT_HAS(error_of(text), loc(text, "input_dtype", "int8") +
                                 ": core.cube.input_dtype: expected one of fp16, fp32, got 'int8'");
  // fp32 inputs with fp16 accumulation would lose precision in every MAC: rejected.
  const std::string text2 = replaced(replaced(kValid, "input_dtype: fp16", "input_dtype: fp32"),
                                     "acc_dtype: fp32", "acc_dtype: fp16");
  EXPECT_HAS(error_of(text2), loc(text2, "acc_dtype", "fp16") +
                                  ": core.cube.acc_dtype: accumulating in fp16 is narrower than "
                                  "the fp32 inputs");
}

// core.cube.model (docs/rtl.md): absent = tlm and not written back (the config's text and hash are
// unchanged); rtl is parsed and written; anything else is an error naming the line and the choices.
TEST(HwConfigErrors, CubeModel) {
  EXPECT_EQ(parse_hw_config(kValid, "<test>").core.cube.model, CubeModel::tlm);
  EXPECT_EQ(hw_config_to_yaml(parse_hw_config(kValid, "<test>")).find("model: tlm"),
            std::string::npos);
  const std::string rtl = replaced(kValid, "    pipeline_latency_cycles: 8\n  vector:",
                                   "    pipeline_latency_cycles: 8\n    model: rtl\n  vector:");
  const HwConfig h = parse_hw_config(rtl, "<test>");
  EXPECT_EQ(h.core.cube.model, CubeModel::rtl);
  EXPECT_EQ(parse_hw_config(hw_config_to_yaml(h), "<again>").core.cube.model, CubeModel::rtl);
  const std::string bad = replaced(rtl, "model: rtl", "model: verilog");
  EXPECT_HAS(error_of(bad), loc(bad, "model: verilog", "verilog") +
                                ": core.cube.model: expected one of tlm, rtl (optional: when "
                                "absent, tlm), got 'verilog'");
  EXPECT_HAS(error_of(kValid, {{"core.cube.model", "RTL"}}),
             "<test>: --hw-set core.cube.model=RTL: expected one of tlm, rtl");
  EXPECT_EQ(parse_hw_config(kValid, "<test>", {{"core.cube.model", "rtl"}}).core.cube.model,
            CubeModel::rtl);
  // core.cube.rtl_sample: with rtl, written back when set; with tlm an error naming both keys.
  const HwConfig sampled = parse_hw_config(rtl, "<test>", {{"core.cube.rtl_sample", "3"}});
  EXPECT_EQ(sampled.core.cube.rtl_sample, 3);
  EXPECT_EQ(parse_hw_config(hw_config_to_yaml(sampled), "<again>").core.cube.rtl_sample, 3);
  EXPECT_EQ(hw_config_to_yaml(h).find("rtl_sample"), std::string::npos);
  EXPECT_HAS(error_of(kValid, {{"core.cube.rtl_sample", "3"}}),
             "<test>: --hw-set core.cube.rtl_sample=3: 3 mmads sampled, but it applies only when "
             "core.cube.model is rtl");
  EXPECT_HAS(error_of(rtl, {{"core.cube.rtl_sample", "-1"}}),
             "--hw-set core.cube.rtl_sample=-1: expected an integer");
}

TEST(HwConfigErrors, ClockGhz) {
  EXPECT_HAS(error_of(replaced(kValid, "clock_ghz: 1.0", "clock_ghz: 0")),
             "<test>:2:12: clock_ghz: expected a number > 0 and <= 100, got 0");
  EXPECT_HAS(error_of(replaced(kValid, "clock_ghz: 1.0", "clock_ghz: -1.5")),
             "clock_ghz: expected a number > 0 and <= 100, got -1.5");
  EXPECT_HAS(error_of(replaced(kValid, "clock_ghz: 1.0", "clock_ghz: 1000")),
             "clock_ghz: expected a number > 0 and <= 100, got 1000");
  EXPECT_HAS(error_of(replaced(kValid, "clock_ghz: 1.0", "clock_ghz: .inf")),
             "clock_ghz: expected a number > 0 and <= 100, got '.inf'");
  EXPECT_HAS(error_of(replaced(kValid, "clock_ghz: 1.0", "clock_ghz: fast")),
             "clock_ghz: expected a number > 0 and <= 100, got 'fast'");
  // An integer is a valid number.
  EXPECT_DOUBLE_EQ(
      parse_hw_config(replaced(kValid, "clock_ghz: 1.0", "clock_ghz: 2"), "<t>").clock_ghz, 2.0);
}

TEST(HwConfigErrors, EmptyName) {
  EXPECT_HAS(error_of(replaced(kValid, "name: test-npu", "name: \"\"")),
             "<test>:1:7: name: expected a non-empty string, got an empty string");
}

// Found by fuzzing (tests/fuzz/regressions/hw_config/name-not-utf8.yaml): a name with a byte that
// is not UTF-8 was accepted, and hw_config_to_yaml wrote it back as U+FFFD, a different name.
TEST(HwConfigErrors, NameMustBeUtf8) {
  EXPECT_HAS(error_of(replaced(kValid, "name: test-npu", "name: test-np\xf5")),
             "<test>:1:7: name: expected a non-empty string of UTF-8 text, got byte 0xf5 at "
             "offset 7, which is not valid UTF-8 there");
  // A sequence cut short, an overlong '/' (C0 AF) and a surrogate (ED A0 80) are not UTF-8 either.
  EXPECT_HAS(error_of(replaced(kValid, "name: test-npu", "name: \"npu \xe2\x82\"")),
             "got byte 0xe2 at offset 4");
  EXPECT_HAS(error_of(replaced(kValid, "name: test-npu", "name: a\xc0\xaf")),
             "got byte 0xc0 at offset 1");
  EXPECT_HAS(error_of(replaced(kValid, "name: test-npu", "name: a\xed\xa0\x80")),
             "got byte 0xed at offset 1");
  // Well-formed UTF-8 is kept and round-trips (2-, 3- and 4-byte sequences).
  const std::string name = "npu-\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";
  const HwConfig hw = parse_hw_config(replaced(kValid, "name: test-npu", "name: " + name), "<t>");
  EXPECT_EQ(hw.name, name);
  EXPECT_EQ(parse_hw_config(hw_config_to_yaml(hw), "<t>").name, name);
  // The same check applies to --hw-set name=...
  EXPECT_HAS(error_of(kValid, {parse_hw_override("name=x\xff")}), "got byte 0xff at offset 1");
}

// ---------------------------------------------------------------------------------------------
// Minimum tiles: a 16x16x16 fp16 -> fp32 cube has A and B fractals of 16*16*2 = 512 bytes and a
// C fractal of 16*16*4 = 1024 bytes; the compiler double-buffers L0A/L0B/L0C, so each holds two
// (the smallest tile: one fractal per copy). 4 vector widths of 256 bytes are 1024 bytes.

TEST(HwConfigErrors, L0aMustHoldTwoFractals) {
  const std::string text = replaced(kValid, "    l0a: 65536", "    l0a: 992");
  EXPECT_HAS(
      error_of(text),
      loc(text, "l0a: 992", "992") +
          ": core.buffers_bytes.l0a: 992 bytes cannot hold two 16x16 fp16 L0A fractals "
          "(two: the compiler double-buffers L0A/L0B/L0C, and its smallest tile is one "
          "fractal; 2 x core.cube.m x core.cube.k x 2 bytes = 1024 bytes); expected >= 1024");
  // Exactly two fractals are enough; one is not.
  EXPECT_NO_THROW(parse_hw_config(replaced(kValid, "    l0a: 65536", "    l0a: 1024"), "<t>"));
  EXPECT_HAS(error_of(replaced(kValid, "    l0a: 65536", "    l0a: 512")), "expected >= 1024");
}

TEST(HwConfigErrors, L0bAndL0cMustHoldTwoFractals) {
  const std::string text = replaced(kValid, "    l0b: 65536", "    l0b: 992");
  EXPECT_HAS(error_of(text), loc(text, "l0b: 992", "992") +
                                 ": core.buffers_bytes.l0b: 992 bytes cannot hold two 16x16 fp16 "
                                 "L0B fractals (two: the compiler double-buffers L0A/L0B/L0C, and "
                                 "its smallest tile is one fractal; 2 x core.cube.k x core.cube.n "
                                 "x 2 bytes = 1024 bytes); expected >= 1024");
  EXPECT_NO_THROW(parse_hw_config(replaced(kValid, "    l0b: 65536", "    l0b: 1024"), "<t>"));
  const std::string text2 = replaced(kValid, "    l0c: 262144", "    l0c: 2016");
  EXPECT_HAS(error_of(text2), loc(text2, "l0c: 2016", "2016") +
                                  ": core.buffers_bytes.l0c: 2016 bytes cannot hold two 16x16 "
                                  "fp32 L0C fractals (two: the compiler double-buffers "
                                  "L0A/L0B/L0C, and its smallest tile is one fractal; 2 x "
                                  "core.cube.m x core.cube.n x 4 bytes = 2048 bytes); expected "
                                  ">= 2048");
  EXPECT_NO_THROW(parse_hw_config(replaced(kValid, "    l0c: 262144", "    l0c: 2048"), "<t>"));
}

TEST(HwConfigErrors, UbMustHoldAFractalAndFourVectorWidths) {
  // max(1024, 4 * 256) = 1024.
  const std::string text = replaced(kValid, "    ub: 262144", "    ub: 992");
  EXPECT_HAS(error_of(text), loc(text, "ub: 992", "992") +
                                 ": core.buffers_bytes.ub: 992 bytes cannot hold one 16x16 fp32 "
                                 "L0C fractal (1024 bytes) and 4 vector widths (4 x 256 = 1024 "
                                 "bytes); expected >= 1024");
  // With a 1024-byte vector, 4 widths = 4096 bytes dominate.
  const std::string text2 = replaced(replaced(kValid, "    ub: 262144", "    ub: 2048"),
                                     "width_bytes: 256", "width_bytes: 1024");
  EXPECT_HAS(error_of(text2),
             "core.buffers_bytes.ub: 2048 bytes cannot hold one 16x16 fp32 L0C "
             "fractal (1024 bytes) and 4 vector widths (4 x 1024 = 4096 bytes); "
             "expected >= 4096");
}

TEST(HwConfigErrors, L1MustHoldAnAAndABFractal) {
  const std::string text = replaced(kValid, "    l1: 1048576", "    l1: 992");
  EXPECT_HAS(error_of(text), loc(text, "l1: 992", "992") +
                                 ": core.buffers_bytes.l1: 992 bytes cannot hold one L0A fractal "
                                 "and one L0B fractal (512 + 512 = 1024 bytes); expected >= 1024");
}

TEST(HwConfigErrors, EveryErrorIsReportedAtOnce) {
  const std::string text =
      replaced(replaced(kValid, "cores: 4", "cores: -2"), "    k: 16\n", "    k: 16\n    q: 1\n");
  const std::string msg = error_of(text);
  EXPECT_HAS(msg, "<test>:3:8: cores: expected an integer in [1, 1024], got -2");
  EXPECT_HAS(msg, "\n");
  EXPECT_HAS(msg, ": core.cube.q: unknown key");
}

// ---------------------------------------------------------------------------------------------
// --hw-set overrides.

TEST(HwConfigOverrides, ChangeValuesAndDerivedValues) {
  const HwConfig hw =
      load_hw_config(preset_path("npu_4core.yaml"), {{"cores", "8"},
                                                     {"core.dma.mte2.bytes_per_cycle", "128"},
                                                     {"clock_ghz", "1.5"},
                                                     {"core.buffers_bytes.ub", "131072"}});
  EXPECT_EQ(hw.cores, 8);
  EXPECT_EQ(hw.core.mte2.bytes_per_cycle, 128);
  EXPECT_EQ(hw.core.buffers_bytes.ub, 131072);
  EXPECT_DOUBLE_EQ(hw.clock_ghz, 1.5);
  // 2 * 4096 * 8 cores = 65536 FLOP/cycle * 1.5 GHz = 98.304 TFLOPS; 102 B/cycle * 1.5 = 153 GB/s.
  EXPECT_DOUBLE_EQ(hw.derived.peak_tflops, 98.304);
  EXPECT_DOUBLE_EQ(hw.derived.dram_gb_per_s, 153.0);
  // Untouched keys keep the file's values.
  EXPECT_EQ(hw.core.mte3.bytes_per_cycle, 64);
}

TEST(HwConfigOverrides, DtypeOverrideChangesFractalSizes) {
  const HwConfig hw = parse_hw_config(kValid, "<test>", {{"core.cube.input_dtype", "fp32"}});
  EXPECT_EQ(hw.core.cube.input_dtype, isa::DType::f32);
  EXPECT_EQ(hw.derived.a_fractal_bytes, 1024);  // 16*16*4
}

TEST(HwConfigOverrides, ValueIsValidatedLikeTheFile) {
  EXPECT_HAS(error_of(kValid, {{"core.buffers_bytes.ub", "abc"}}),
             "<test>: --hw-set core.buffers_bytes.ub=abc: expected an integer in [32, 1073741824] "
             "and a multiple of 32, got 'abc'");
  EXPECT_HAS(error_of(kValid, {{"core.dma.mte2.latency_cycles", "-5"}}),
             "<test>: --hw-set core.dma.mte2.latency_cycles=-5: expected an integer >= 0, got -5");
  EXPECT_HAS(
      error_of(kValid, {{"cores", "2.5"}}),
      "<test>: --hw-set cores=2.5: expected an integer in [1, 1024], got 2.5, which is not an "
      "integer");
  EXPECT_HAS(error_of(kValid, {{"core.cube.acc_dtype", "bf16"}}),
             "<test>: --hw-set core.cube.acc_dtype=bf16: expected one of fp16, fp32, got 'bf16'");
  EXPECT_HAS(error_of(kValid, {{"cores", "{a: 1}"}}),
             "<test>: --hw-set cores={a: 1}: expected an integer in [1, 1024], got a map");
  EXPECT_HAS(error_of(kValid, {{"cores", "[1,"}}),
             "<test>: --hw-set cores=[1,: the value is not a valid YAML scalar");
}

TEST(HwConfigOverrides, OverrideOnAPresetFileNamesTheFile) {
  try {
    load_hw_config(preset_path("npu_4core.yaml"), {parse_hw_override("core.buffers_bytes.ub=abc")});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_HAS(e.what(), preset_path("npu_4core.yaml") +
                             ": --hw-set core.buffers_bytes.ub=abc: expected an integer");
  }
}

TEST(HwConfigOverrides, UnknownKeyIsAnErrorNamingIt) {
  EXPECT_HAS(error_of(kValid, {{"core.buffers_bytes.l2", "1024"}}),
             "<test>: --hw-set core.buffers_bytes.l2=1024: unknown key 'core.buffers_bytes.l2'; "
             "'core.buffers_bytes' has keys l1, l0a, l0b, l0c, ub");
  EXPECT_HAS(error_of(kValid, {{"frequency", "1"}}),
             "<test>: --hw-set frequency=1: unknown key 'frequency'; the top-level keys are name, "
             "clock_ghz, cores, core, memory");
  EXPECT_HAS(
      error_of(kValid, {{"cores.count", "1"}}),
      "<test>: --hw-set cores.count=1: unknown key 'cores.count'; 'cores' is a value and has "
      "no keys");
  EXPECT_HAS(error_of(kValid, {{"core.cube.m.x", "1"}}),
             "unknown key 'core.cube.m.x'; 'core.cube.m' is a value and has no keys");
}

TEST(HwConfigOverrides, SectionKeyIsNotAValue) {
  EXPECT_HAS(error_of(kValid, {{"core.sync", "8"}}),
             "<test>: --hw-set core.sync=8: 'core.sync' is a section, not a value; set one of its "
             "keys instead: core.sync.event_ids");
}

TEST(HwConfigOverrides, OverrideThatBreaksAMinimumTileIsNamed) {
  // m = 4096: two A fractals are 2*4096*16*2 = 262144 bytes > l0a = 65536 (two C fractals,
  // 2*4096*16*4 = 524288 bytes, exceed l0c = 262144 as well; L1 holds 131072 + 512).
  EXPECT_HAS(error_of(kValid, {{"core.cube.m", "4096"}}),
             loc(kValid, "l0a: 65536", "65536") +
                 ": core.buffers_bytes.l0a: 65536 bytes cannot hold two 4096x16 fp16 L0A fractals "
                 "(two: the compiler double-buffers L0A/L0B/L0C, and its smallest tile is one "
                 "fractal; 2 x core.cube.m x core.cube.k x 2 bytes = 262144 bytes); expected >= "
                 "262144 [core.cube.m was set by --hw-set core.cube.m=4096]");
  EXPECT_HAS(error_of(kValid, {{"core.cube.m", "4096"}}),
             "core.buffers_bytes.l0c: 262144 bytes cannot hold two 4096x16 fp32 L0C fractals");
  EXPECT_HAS(
      error_of(kValid, {{"core.buffers_bytes.l0b", "256"}}),
      "<test>: --hw-set core.buffers_bytes.l0b=256: 256 bytes cannot hold two 16x16 fp16 L0B "
      "fractals");
}

TEST(HwConfigOverrides, OverrideCanSupplyAMissingKey) {
  const std::string text = replaced(kValid, "    n: 16\n", "");
  const HwConfig hw = parse_hw_config(text, "<test>", {{"core.cube.n", "32"}});
  EXPECT_EQ(hw.core.cube.n, 32);
  EXPECT_EQ(hw.derived.cube_macs_per_cycle, 16 * 16 * 32);
}

TEST(HwConfigOverrides, LaterOverrideOfTheSameKeyWins) {
  const HwConfig hw = parse_hw_config(kValid, "<test>", {{"cores", "2"}, {"cores", "16"}});
  EXPECT_EQ(hw.cores, 16);
}

TEST(HwConfigOverrides, OverrideReplacesAnInvalidFileValue) {
  // The override is applied to the tree before validation, so the file's bad value never counts.
  const HwConfig hw =
      parse_hw_config(replaced(kValid, "cores: 4", "cores: lots"), "<test>", {{"cores", "3"}});
  EXPECT_EQ(hw.cores, 3);
}

TEST(HwOverrideSyntax, ParsesKeyAndValue) {
  HwOverride ov = parse_hw_override("core.buffers_bytes.ub=131072");
  EXPECT_EQ(ov.key, "core.buffers_bytes.ub");
  EXPECT_EQ(ov.value, "131072");
  ov = parse_hw_override("  cores = 8 ");
  EXPECT_EQ(ov.key, "cores");
  EXPECT_EQ(ov.value, "8");
  ov = parse_hw_override("name=a=b");  // split at the first '='
  EXPECT_EQ(ov.key, "name");
  EXPECT_EQ(ov.value, "a=b");
}

TEST(HwOverrideSyntax, Errors) {
  auto message = [](const std::string& text) -> std::string {
    try {
      parse_hw_override(text);
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error for " << text;
    return "";
  };
  // A key without '=': a known key is told how to add its value, an unknown one what KEY is.
  EXPECT_HAS(message("cores"),
             "--hw-set cores: the value is missing: write --hw-set cores=VALUE (one argument, "
             "KEY=VALUE)");
  EXPECT_HAS(message("core.buffers_bytes.ub"), "write --hw-set core.buffers_bytes.ub=VALUE");
  EXPECT_HAS(message("coers"), "--hw-set coers: expected KEY=VALUE as one argument");
  EXPECT_HAS(message("coers"), "(did you mean 'cores'?)");
  EXPECT_HAS(message("=8"), "--hw-set =8: the key before '=' is empty");
  EXPECT_HAS(message("cores="), "--hw-set cores=: the value after '=' is empty");
  EXPECT_HAS(message("core..ub=1"), "'core..ub' is not a dotted key");
  EXPECT_HAS(message(".cores=1"), "'.cores' is not a dotted key");
  EXPECT_HAS(message("core.=1"), "'core.' is not a dotted key");
  EXPECT_HAS(message("core cube.m=1"), "'core cube.m' is not a dotted key");
}

TEST(HwConfigFinalize, ValidatesAConfigBuiltInCode) {
  HwConfig hw = load_hw_config(preset_path("npu_4core.yaml"));
  hw.cores = 2;
  hw.derived = DerivedConfig{};
  finalize_hw_config(hw);
  EXPECT_EQ(hw.derived.chip_flops_per_cycle, 2 * 4096 * 2);
  EXPECT_EQ(hw.source_file, preset_path("npu_4core.yaml"));
  hw.core.buffers_bytes.l0c = 512;
  try {
    finalize_hw_config(hw);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_HAS(e.what(),
               "core.buffers_bytes.l0c: 512 bytes cannot hold two 16x16 fp32 L0C fractals");
  }
}

// docs/hw_config.md pastes messages from real runs; they must stay what the loader prints.
TEST(HwConfigDocs, PastedMessagesMatchTheLoader) {
  const std::string docs = read_text(kSourceDir + "/docs/hw_config.md");
  // The message for (repository-relative path, overrides), as a run from the repository root
  // prints it.
  auto message = [](const std::string& relative_path, const std::vector<std::string>& sets) {
    std::vector<HwOverride> overrides;
    for (const auto& s : sets) overrides.push_back(parse_hw_override(s));
    try {
      parse_hw_config(read_text(kSourceDir + "/" + relative_path), relative_path, overrides);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << "no error for " << relative_path;
    return std::string();
  };
  const std::vector<std::string> pasted = {
      message("tests/npu_model/data/bad_l0a.yaml", {}),
      message("hw_configs/npu_4core.yaml", {"core.buffers_bytes.ub=abc"}),
      message("hw_configs/npu_4core.yaml", {"core.cube.m=4096"}),
      message("tests/npu_model/data/typo_keys.yaml", {}),
      message("hw_configs/npu_4core.yaml", {"core.dma.mte9.latency_cycles=1"}),
  };
  for (const std::string& m : pasted) {
    ASSERT_FALSE(m.empty());
    EXPECT_NE(docs.find("```\n" + m + "\n```"), std::string::npos)
        << "docs/hw_config.md lacks this message in a code block:\n"
        << m;
  }
}

}  // namespace
}  // namespace tessel::npu
