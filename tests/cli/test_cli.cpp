// The command-line interface as a user runs it: exit codes (0 pass, 1 mismatch, 2 error), messages
// that name the file/line/key/node, and no half-written output files on errors.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "compiler/frontend/onnx_import.h"
#include "isa/asm.h"
#include "tests/cli/cli_test_util.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;
const std::string kSrc = TESSEL_SOURCE_DIR;
const std::string kModels = TESSEL_MODELS_DIR;

using Result = CliResult;
constexpr auto slurp = slurp_file;

/// Runs `tessel ARGS` from the repository root (output files private to this process and call).
Result tessel(const std::string& args) { return run_tessel(args, "tessel_cli"); }

TEST(Cli, HelpListsTheCommands) {
  Result r = tessel("--help");
  EXPECT_EQ(r.code, 0);
  for (const char* c : {"run", "check", "compile"}) EXPECT_CONTAINS(r.out, c);
}

TEST(Cli, NoCommandIsAnError) { EXPECT_EQ(tessel("").code, 2); }

TEST(Cli, CheckRefPassesOnARealModel) {
  Result r = tessel("check tests/data/cases/hello_deepa --target ref");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_CONTAINS(r.out, "PASS");
  EXPECT_CONTAINS(r.out, "max abs error");
  EXPECT_CONTAINS(r.out, "error / bound");  // the tested quantity, not max rel error (issue 10)
}

TEST(Cli, MismatchExitsWithOne) {
  // A copy of the hello_deepa case whose expected output is off by 0.5.
  fs::path d = temp_dir("mismatch_case");
  fs::create_symlink(fs::absolute(kModels + "/hello_deepa.onnx"), d / "model.onnx");
  fs::create_directories(d / "test_data_set_0");
  const fs::path src = kSrc + "/tests/data/cases/hello_deepa/test_data_set_0";
  fs::copy_file(src / "input_0.pb", d / "test_data_set_0/input_0.pb");
  onnx::TensorProto t;
  std::ifstream in(src / "output_0.pb", std::ios::binary);
  ASSERT_TRUE(t.ParseFromIstream(&in));
  std::string raw = t.raw_data();
  float v;
  std::memcpy(&v, raw.data(), 4);
  v += 0.5f;
  std::memcpy(raw.data(), &v, 4);
  t.set_raw_data(raw);
  std::ofstream o(d / "test_data_set_0/output_0.pb", std::ios::binary);
  ASSERT_TRUE(t.SerializeToOstream(&o));
  o.close();
  Result r = tessel("check '" + d.string() + "' --target ref");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_CONTAINS(r.out, "FAIL");
  EXPECT_CONTAINS(r.out, "MISMATCH");
}

TEST(Cli, CaseDirectoryWithoutOutputs) {
  fs::path d = temp_dir("no_outputs_case");
  fs::create_symlink(fs::absolute(kModels + "/hello_deepa.onnx"), d / "model.onnx");
  fs::create_directories(d / "test_data_set_0");
  fs::copy_file(kSrc + "/tests/data/cases/hello_deepa/test_data_set_0/input_0.pb",
                d / "test_data_set_0/input_0.pb");
  Result r = tessel("check '" + d.string() + "' --target ref");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "no expected outputs");
  EXPECT_CONTAINS(r.err, "test_data_set_0");
}

TEST(Cli, CaseDirectoryWithoutModel) {
  fs::path d = temp_dir("no_model_case");
  Result r = tessel("check '" + d.string() + "' --target ref");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "no model.onnx");
}

TEST(Cli, OpWithoutNpuLoweringNamesOpAndNode) {
  // Det has a reference kernel but no NPU lowering.
  Result r = tessel(
      "check /usr/share/libonnx-testdata/data/node/test_det_2d --target npu --hw "
      "hw_configs/npu_4core.yaml");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_CONTAINS(r.err, "Det");
  EXPECT_CONTAINS(r.err, "no compute definition");
}

TEST(Cli, NpuTargetNeedsAHardwareConfig) {
  Result r = tessel("check tests/data/cases/hello_deepa --target npu");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "--hw");
}

TEST(Cli, UnknownTarget) {
  Result r = tessel("check tests/data/cases/hello_deepa --target tpu");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "unknown target 'tpu'");
}

TEST(Cli, BufferSizeZeroIsRejected) {
  Result r = tessel(
      "check tests/data/cases/hello_deepa --target npu --hw hw_configs/npu_4core.yaml "
      "--hw-set core.buffers_bytes.ub=0");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "core.buffers_bytes.ub");
  EXPECT_CONTAINS(r.err, "npu_4core.yaml");
}

TEST(Cli, BufferTooSmallForTheMinimumTile) {
  Result r = tessel(
      "check tests/data/cases/hello_deepa --target npu --hw hw_configs/npu_4core.yaml "
      "--hw-set core.buffers_bytes.l0a=256");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "core.buffers_bytes.l0a");
  EXPECT_CONTAINS(r.err, "fractal");
}

TEST(Cli, UnknownKeyInHardwareConfig) {
  fs::path d = temp_dir("bad_hw");
  std::string y = slurp(kSrc + "/hw_configs/npu_4core.yaml");
  const auto pos = y.find("clock_ghz:");
  ASSERT_NE(pos, std::string::npos);
  y.replace(pos, 10, "clock_ghx:");
  write(d / "hw.yaml", y);
  Result r = tessel("check tests/data/cases/hello_deepa --target npu --hw '" +
                    (d / "hw.yaml").string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "hw.yaml:");
  EXPECT_CONTAINS(r.err, "clock_ghx");
}

TEST(Cli, MissingOnnxFile) {
  Result r = tessel("compile no/such/model.onnx --emit graph");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "no/such/model.onnx");
}

TEST(Cli, CorruptOnnxFile) {
  fs::path d = temp_dir("corrupt_onnx");
  write(d / "model.onnx", std::string("\x08\x07\x12\xff\xff\xff this is not a model"));
  Result r = tessel("compile '" + (d / "model.onnx").string() + "' --emit graph");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "model.onnx");
}

TEST(Cli, UnboundDynamicDimensionSaysHowToBindIt) {
  Result r = tessel("compile models/ch_ppocr_mobile_v2.0_cls_infer.onnx --emit graph");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "'x'");
  EXPECT_CONTAINS(r.err, "--input-shape");
}

TEST(Cli, ExperimentWithUnknownKey) {
  fs::path d = temp_dir("bad_experiment");
  write(d / "e.yaml",
        "name: bad\n"
        "model: " +
            kModels +
            "/hello_deepa.onnx\n"
            "targt: npu\n");
  const fs::path report = d / "report.json";
  Result r = tessel("run '" + (d / "e.yaml").string() + "' --report '" + report.string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "e.yaml:3:1: targt: unknown key");
  EXPECT_FALSE(fs::exists(report)) << "a report was written although the run failed";
}

// Found by fuzzing (tests/fuzz/regressions/experiment): a list used as a mapping key ended as an
// internal error (yaml-cpp's "bad conversion"), not as an error naming the key.
TEST(Cli, ExperimentWithAListAsKey) {
  fs::path d = temp_dir("list_key");
  write(d / "e.yaml",
        "name: bad\nmodel: " + kModels + "/hello_deepa.onnx\ninputs:\n  x: {shape: 1, [3, 48]}\n");
  Result r = tessel("run '" + (d / "e.yaml").string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err,
                  "e.yaml:4:17: inputs.x: expected a key name, got a list, mapping or nothing");
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

// Found by fuzzing (tests/fuzz/regressions/experiment/hw-path-name-too-long.yaml): a path whose
// component is longer than NAME_MAX (255 bytes on Linux) ended as an internal error (an uncaught
// std::filesystem_error from the existence check), not as an error naming the key.
TEST(Cli, ExperimentWithAnHwPathTooLongToLookUp) {
  fs::path d = temp_dir("long_hw_path");
  write(d / "e.yaml", "name: bad\nmodel: " + kModels +
                          "/hello_deepa.onnx\nhw: " + std::string(300, 'a') + ".yaml\n");
  Result r = tessel("run '" + (d / "e.yaml").string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "hw: file '");
  EXPECT_CONTAINS(r.err, "' cannot be looked up: File name too long");
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

TEST(Cli, ExperimentWithYamlSyntaxError) {
  fs::path d = temp_dir("bad_yaml");
  write(d / "e.yaml", "name: [unclosed\nmodel: x\n");
  Result r = tessel("run '" + (d / "e.yaml").string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "YAML syntax error");
  EXPECT_CONTAINS(r.err, "e.yaml:");
}

TEST(Cli, ExperimentWithNonPositiveShape) {
  fs::path d = temp_dir("bad_shape");
  write(d / "e.yaml", "model: " + kModels +
                          "/hello_deepa.onnx\n"
                          "inputs:\n"
                          "  onnx::Flatten_0: {shape: [1, 0, 96]}\n"
                          "target: ref\n");
  Result r = tessel("run '" + (d / "e.yaml").string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "e.yaml:3:");
  EXPECT_CONTAINS(r.err, "dims must be positive");
}

TEST(Cli, OutputIntoAMissingDirectoryWritesNothing) {
  Result r = tessel("compile models/hello_deepa.onnx --emit graph -o no/such/dir/out.txt");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "no/such/dir");
  EXPECT_FALSE(fs::exists(kSrc + "/no/such/dir/out.txt"));
}

TEST(Cli, CompiledAssemblyRoundTrips) {
  fs::path d = temp_dir("asm_out");
  Result r =
      tessel("compile models/hello_deepa.onnx --hw hw_configs/npu_4core.yaml --emit asm -o '" +
             (d / "wake.s").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string text = slurp(d / "wake.s");
  EXPECT_CONTAINS(text, "mmad");
  EXPECT_EQ(isa::disassemble(isa::assemble(text, "wake.s")), text);
}

// `tessel compile` and `tessel sim` compile the form run_model and `check` compile
// (driver::compiled_form): M-LSD's Resize linear/half_pixel as resize_as_matmul's MatMuls on the
// cube, the LSTM of Silero VAD unrolled; before, compile and sim refused what check ran.
TEST(Cli, CompileAndSimTakeTheCompiledForm) {
  fs::path d = temp_dir("compiled_form");
  Result r = tessel("compile models/mlsd_320x320_tiny.onnx --hw hw_configs/npu_4core.yaml -o '" +
                    (d / "mlsd.s").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(slurp(d / "mlsd.s"), "mmad");
  r = tessel("compile models/oww_hey_jarvis_v0.1.onnx --target cpu --emit llvm -o '" +
             (d / "jarvis.ll").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(slurp(d / "jarvis.ll"), "define");
  r = tessel(
      "sim models/silero_vad_16k_op15.onnx --hw hw_configs/npu_4core.yaml --timing-only "
      "--input-shape input=1,512 --input-shape state=2,1,128 --input-value sr=16000");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "cycles");
}

}  // namespace
}  // namespace tessel::testing

namespace tessel::testing {
namespace {

TEST(Cli, UnknownCommandIsNamed) {
  Result r = tessel("frobnicate");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "unknown command 'frobnicate'");
}

TEST(Cli, RepeatableOptionsDoNotSwallowThePositional) {
  Result r = tessel(
      "compile --input-shape x=1,3,48,192 models/ch_ppocr_mobile_v2.0_cls_infer.onnx --emit graph");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "%x: f32[1,3,48,192]");
}

TEST(Cli, MisspeltInputShapeNameIsReportedFirst) {
  Result r = tessel(
      "compile models/ch_ppocr_mobile_v2.0_cls_infer.onnx --input-shape y=1,3,48,192 --emit graph");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "'y', which is not an input of the model (runtime inputs: x)");
}

TEST(Cli, HardwareOptionsWithTheReferenceTargetAreAnError) {
  Result r = tessel("check tests/data/cases/hello_deepa --target ref --hw-set cores=2");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "--hw-set only applies to --target npu");
}

// --emit graph does not need the hardware config, but a bad one given with it is still an error.
TEST(Cli, EmitGraphStillValidatesTheHardwareConfig) {
  Result r = tessel(
      "compile models/hello_deepa.onnx --emit graph --hw hw_configs/npu_4core.yaml "
      "--hw-set memory.dram.burst_bytes=48");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "memory.dram.burst_bytes");
  EXPECT_CONTAINS(r.err, "power of two");
  r = tessel("compile models/hello_deepa.onnx --emit graph --hw no/such/config.yaml");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "no/such/config.yaml");
  r = tessel("compile models/hello_deepa.onnx --emit graph --hw-set cores=2");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "--hw-set needs --hw FILE");
}

// An experiment's hw_set is validated like the config file: a quoted number is a string there.
TEST(Cli, ExperimentHwSetQuotedNumberIsRejectedLikeTheFile) {
  fs::path d = temp_dir("hw_set_quoted");
  write(d / "e.yaml", "model: " + kModels +
                          "/hello_deepa.onnx\n"
                          "inputs: {onnx::Flatten_0: {shape: [1, 25, 96]}}\n"
                          "hw: " +
                          kSrc +
                          "/hw_configs/npu_4core.yaml\n"
                          "hw_set: {memory.dram.burst_bytes: \"32\"}\n");
  Result r = tessel("run '" + (d / "e.yaml").string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "memory.dram.burst_bytes");
  EXPECT_CONTAINS(r.err, "quoted string");
}

TEST(Cli, ExperimentDuplicateKey) {
  fs::path d = temp_dir("dup_key");
  write(d / "e.yaml", "model: " + kModels + "/hello_deepa.onnx\ntarget: ref\ntarget: npu\n");
  Result r = tessel("run '" + (d / "e.yaml").string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "e.yaml:3:1: target: key given twice");
}

TEST(Cli, LaterRunsAreValidatedBeforeAnyRunStarts) {
  fs::path d = temp_dir("multi_run");
  write(d / "e.yaml", "model: " + kModels +
                          "/hello_deepa.onnx\n"
                          "inputs: {onnx::Flatten_0: {shape: [1, 25, 96]}}\n"
                          "hw: " +
                          kSrc +
                          "/hw_configs/npu_4core.yaml\n"
                          "runs:\n"
                          "  - {name: ok}\n"
                          "  - {name: bad, hw_set: {cores: 0}}\n");
  Result r = tessel("run '" + (d / "e.yaml").string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out.find("run ok"), std::string::npos)
      << "run 'ok' ran before the bad run was checked";
  EXPECT_CONTAINS(r.err, "run 'bad'");
  EXPECT_CONTAINS(r.err, "hw_set is from the experiment file");
}

TEST(Cli, BadReportOrTracePathFailsBeforeRunning) {
  Result r = tessel("run experiments/quickstart.yaml --report /no/such/dir/r.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "--report '/no/such/dir/r.json': directory '/no/such/dir' does not exist");
  EXPECT_TRUE(r.out.empty()) << r.out;
  r = tessel("run experiments/quickstart.yaml --trace /no/such/dir/t.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "--trace");
}

TEST(Cli, TraceIsWrittenAndIsValidJson) {
  fs::path d = temp_dir("trace");
  Result r = tessel("run experiments/quickstart.yaml --trace '" + (d / "t.json").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string t = slurp(d / "t.json");
  EXPECT_CONTAINS(t, "traceEvents");
  EXPECT_CONTAINS(t, "\"mmad\"");
}

TEST(Cli, HugeShapeIsAClearErrorNotACrash) {
  fs::path d = temp_dir("huge_shape");
  write(d / "e.yaml", "model: " + kModels +
                          "/ch_ppocr_mobile_v2.0_cls_infer.onnx\n"
                          "inputs: {x: {shape: [4, 3, 2147483648, 2147483648]}}\n"
                          "target: ref\n");
  Result r = tessel("run '" + (d / "e.yaml").string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "inputs.x");
  EXPECT_CONTAINS(r.err, "[4,3,2147483648,2147483648]");
}

TEST(Cli, ScalarOutputOnSeveralCoresIsNotACrash) {
  // A rank-0 vector kernel on a 4-core config (once a segfault in the multicore tile split).
  Result r = tessel(
      "check /usr/share/libonnx-testdata/data/node/test_reduce_sum_default_axes_keepdims_example "
      "--target npu --hw hw_configs/npu_4core.yaml");
  EXPECT_NE(r.code, 139);
  EXPECT_TRUE(r.code == 0 || r.code == 2) << r.out << r.err;
}

TEST(Cli, UnusedSecondOutputOnTheNpuIsReported) {
  // training_mode and ratio are run-time inputs here, so the mask is not known to be all true
  // (split_outputs expands a Dropout's mask only when it is: test_dropout_default_mask passes).
  Result r = tessel(
      "check /usr/share/libonnx-testdata/data/node/test_training_dropout_zero_ratio_mask "
      "--target npu --hw hw_configs/npu_4core.yaml");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err,
                  "output 1 ('z') is used but the NPU backend computes only the first output");
}

}  // namespace
}  // namespace tessel::testing
