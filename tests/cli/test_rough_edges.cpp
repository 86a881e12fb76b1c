// Issue 10's rough edges, as a user hits them on the command line: each misleading message or
// silently ignored flag is an error naming what is wrong (exit code 2, nothing on stdout); an
// interrupted multi-run experiment keeps what finished; the report records the effective config;
// the trace holds op spans, flows and a DRAM counter whose values match the report.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "npu_model/hw_config.h"
#include "tests/cli/cli_test_util.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
const std::string kSrc = TESSEL_SOURCE_DIR;
const std::string kModels = TESSEL_MODELS_DIR;
const std::string kHw = kSrc + "/hw_configs/npu_4core.yaml";
const std::string kCls = "models/ch_ppocr_mobile_v2.0_cls_infer.onnx --input-shape x=1,3,48,192";

CliResult tessel(const std::string& args) { return run_tessel(args, "tessel_rough"); }

/// Expects exit code 2, `needle` in stderr and nothing on stdout.
void expect_error(const CliResult& r, const std::string& needle) {
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_CONTAINS(r.err, needle);
  EXPECT_TRUE(r.out.empty()) << "stdout before the error:\n" << r.out;
}

/// An experiment on hello_deepa (static shape [1, 25, 96]) with `extra` appended.
fs::path hello_experiment(const std::string& name, const std::string& extra) {
  const fs::path d = temp_dir(name);
  write(d / "e.yaml", "model: " + kModels +
                          "/hello_deepa.onnx\n"
                          "inputs: {onnx::Flatten_0: {shape: [1, 25, 96]}}\n" +
                          extra);
  return d / "e.yaml";
}

// ---------------------------------------------------------------------------------------------
// Errors and flags that mislead

TEST(RoughEdges, GmCapacityNamesTheModelNotAnInternalProgram) {
  // The BERT layer needs more than 1,000 bytes of GM; the compiler's measured tile selection must
  // not fail first with its own candidate program ('tune'), and nothing may reach stdout.
  const CliResult r = tessel("sim zoo:bert_layer --hw " + kHw +
                             " --timing-only --hw-set memory.dram.capacity_bytes=1000");
  expect_error(r, "model zoo:bert_layer needs ");
  EXPECT_CONTAINS(r.err, "more than memory.dram.capacity_bytes = 1000");
  EXPECT_CONTAINS(r.err, "npu_4core.yaml");
  EXPECT_EQ(r.err.find("'tune'"), std::string::npos) << r.err;
}

TEST(RoughEdges, TraceWithoutAnNpuRunIsAnError) {
  const fs::path e = hello_experiment("trace_ref", "target: ref\n");
  expect_error(
      tessel("run '" + e.string() + "' --trace '" + (e.parent_path() / "t.json").string() + "'"),
      "no run of " + e.string() + " targets the NPU");
  EXPECT_FALSE(fs::exists(e.parent_path() / "t.json"));
}

TEST(RoughEdges, TimingOnlyWithTargetRefIsAnError) {
  const fs::path e = hello_experiment("timing_ref", "target: ref\ntiming_only: true\n");
  expect_error(tessel("run '" + e.string() + "'"), "timing_only applies to target npu only");
  const fs::path c =
      hello_experiment("timing_cpu", "target: cpu\ntiming_only: true\ncheck: none\n");
  expect_error(tessel("run '" + c.string() + "'"), "this run's target is cpu");
}

TEST(RoughEdges, NoGraphPassesWithDisablePassIsAnError) {
  expect_error(tessel("compile models/hello_deepa.onnx --emit graph --no-graph-passes "
                      "--disable-pass cse"),
               "--disable-pass cse has no effect with --no-graph-passes");
  expect_error(tessel("compile models/hello_deepa.onnx --emit graph --no-graph-passes "
                      "--print-ir-after all"),
               "--print-ir-after all has no effect with --no-graph-passes");
  // The same conflict between the command line and the experiment file.
  const fs::path e = hello_experiment("passes_none", "target: ref\ngraph_passes: none\n");
  expect_error(tessel("run '" + e.string() + "' --disable-pass cse"),
               "--disable-pass cse has no effect: the experiment sets graph_passes: none");
  const fs::path f =
      hello_experiment("passes_disable", "target: ref\ngraph_passes: {disable: [dce]}\n");
  expect_error(tessel("run '" + f.string() + "' --no-graph-passes"),
               "graph_passes: {disable: [dce, ...]} has no effect with --no-graph-passes");
}

TEST(RoughEdges, TwoRunsWithTheSameNameAreAnError) {
  const fs::path e = hello_experiment(
      "same_name", "target: ref\nruns:\n  - {name: a}\n  - {name: b}\n  - {name: a}\n");
  expect_error(tessel("run '" + e.string() + "'"),
               "runs[2].name: run name 'a' is already the name of runs[0]");
}

TEST(RoughEdges, ExperimentKeysGetSuggestions) {
  const fs::path d = temp_dir("typo");
  write(d / "e.yaml", "modle: " + kModels + "/hello_deepa.onnx\n");
  expect_error(tessel("run '" + (d / "e.yaml").string() + "'"),
               "e.yaml:1:1: modle: unknown key (did you mean 'model'?)");
  const fs::path e = hello_experiment("typo_nested", "target: ref\nreport: [sumary]\n");
  expect_error(tessel("run '" + e.string() + "'"),
               "'sumary' is not a report section (did you mean 'summary'?)");
}

TEST(RoughEdges, UnboundDimInAnExperimentNamesTheExperimentKey) {
  // The classifier's H and W are dynamic; the experiment gives no inputs.
  const fs::path d = temp_dir("unbound");
  write(d / "e.yaml", "model: " + kModels + "/ch_ppocr_mobile_v2.0_cls_infer.onnx\ntarget: ref\n");
  const CliResult r = tessel("run '" + (d / "e.yaml").string() + "'");
  expect_error(r, "graph input 'x' axis 0 is dynamic");
  EXPECT_CONTAINS(r.err, "the experiment key inputs.x, e.g. inputs: {x: {shape: [?, 3, ?, ?]}}");
  EXPECT_EQ(r.err.find("--input-shape"), std::string::npos) << r.err;
  // On the command line the flag is what to use.
  EXPECT_CONTAINS(tessel("compile models/ch_ppocr_mobile_v2.0_cls_infer.onnx --emit graph").err,
                  "--input-shape x=?,3,?,?");
}

TEST(RoughEdges, HwSetWithoutEqualsSaysHowToWriteIt) {
  expect_error(tessel("sim " + kCls + " --hw " + kHw + " --timing-only --hw-set cores"),
               "--hw-set cores: the value is missing: write --hw-set cores=VALUE");
  expect_error(tessel("sim " + kCls + " --hw " + kHw + " --timing-only --hw-set cores 8"),
               "--hw-set cores 8: KEY and VALUE go in one argument joined by '=': --hw-set "
               "cores=8");
  expect_error(tessel("sim " + kCls + " --hw " + kHw + " --timing-only --hw-set coers"),
               "(did you mean 'cores'?)");
}

// ---------------------------------------------------------------------------------------------
// Validation and compilation agree: what the config alone decides is a validation error; what a
// layer adds is a compile error naming the buffer, the bytes needed and the bytes available.

TEST(RoughEdges, L0BuffersMustHoldTwoFractalsAtValidation) {
  // 16x16 fp16 fractals are 512 bytes (A, B), 16x16 fp32 1,024 (C); double buffering keeps two.
  expect_error(
      tessel("sim " + kCls + " --hw " + kHw + " --timing-only --hw-set core.buffers_bytes.l0a=512"),
      "--hw-set core.buffers_bytes.l0a=512: 512 bytes cannot hold two 16x16 fp16 L0A fractals");
  expect_error(
      tessel("sim " + kCls + " --hw " + kHw + " --timing-only --hw-set core.buffers_bytes.l0b=512"),
      "--hw-set core.buffers_bytes.l0b=512: 512 bytes cannot hold two 16x16 fp16 L0B fractals");
  expect_error(
      tessel("sim " + kCls + " --hw " + kHw +
             " --timing-only --hw-set core.buffers_bytes.l0c=1024"),
      "--hw-set core.buffers_bytes.l0c=1024: 1024 bytes cannot hold two 16x16 fp32 L0C fractals");
  // Two fractals each compile every op of the classifier.
  const CliResult ok = tessel("sim " + kCls + " --hw " + kHw +
                              " --timing-only --hw-set core.buffers_bytes.l0a=1024 --hw-set "
                              "core.buffers_bytes.l0b=1024 --hw-set core.buffers_bytes.l0c=2048");
  EXPECT_EQ(ok.code, 0) << ok.err;
}

TEST(RoughEdges, UbTooSmallForALayerNamesTheSizes) {
  // The classifier's global average pool reduces 6 x 24 pixels whole: its smallest tile needs
  // 4,640 bytes of UB. The default space has single- and double-buffered points, so the whole
  // 1,024-byte UB is the bound (a double-buffered tile would need two copies).
  const CliResult r =
      tessel("sim " + kCls + " --hw " + kHw + " --timing-only --hw-set core.buffers_bytes.ub=1024");
  expect_error(r,
               "needs 4640 bytes of UB, more than the 1024 available: core.buffers_bytes.ub = "
               "1024 (single-buffered); it fits with core.buffers_bytes.ub >= 4640");
  // With 4,640 bytes it compiles and runs (single-buffered where double buffering does not fit).
  const CliResult s =
      tessel("sim " + kCls + " --hw " + kHw + " --timing-only --hw-set core.buffers_bytes.ub=4640");
  EXPECT_EQ(s.code, 0) << s.err;
}

TEST(RoughEdges, SmallestL1ValidationAcceptsCompilesTheClassifier) {
  // Validation and compilation agree: 1,024 bytes of L1 (the least validation accepts: one L0A
  // and one L0B fractal) compile every op of the classifier -- its convolutions take K chunks of
  // a few input channels and single-buffered windows (TileCube.NoConvTileFitsNamesTheSmallest...
  // covers the error below that).
  const CliResult r =
      tessel("sim " + kCls + " --hw " + kHw + " --timing-only --hw-set core.buffers_bytes.l1=1024");
  EXPECT_EQ(r.code, 0) << r.err;
}

// ---------------------------------------------------------------------------------------------
// The report's hw: the effective config after overrides, typed, with a content hash.

TEST(RoughEdges, ReportHwIsTheEffectiveTypedConfigWithAHash) {
  const fs::path d = temp_dir("report_hw");
  const CliResult a = tessel("sim models/hello_deepa.onnx --hw " + kHw +
                             " --timing-only --hw-set cores=2 --hw-set clock_ghz=1.5 --report '" +
                             (d / "a.json").string() + "'");
  ASSERT_EQ(a.code, 0) << a.err;
  const CliResult b = tessel("sim models/hello_deepa.onnx --hw " + kHw +
                             " --timing-only --report '" + (d / "b.json").string() + "'");
  ASSERT_EQ(b.code, 0) << b.err;
  const json ra = json::parse(slurp_file(d / "a.json")).at("runs").at(0);
  const json rb = json::parse(slurp_file(d / "b.json")).at("runs").at(0);
  // Overrides typed as in the YAML.
  EXPECT_EQ(ra.at("hw_set").at("cores"), 2);
  EXPECT_TRUE(ra.at("hw_set").at("cores").is_number_integer());
  EXPECT_EQ(ra.at("hw_set").at("clock_ghz"), 1.5);
  // Every key of the schema, with the effective values: the config the run used, read back.
  const npu::HwConfig want = npu::load_hw_config(kHw, {{"cores", "2"}, {"clock_ghz", "1.5"}});
  const json& cfg = ra.at("hw").at("config");
  for (const std::string& key : npu::hw_config_keys()) {
    // `tech` (the area/energy model's table) is optional and written only when given.
    if (key == "tech" && want.tech.empty()) continue;
    // The optional memory.l2 section is written only by a config that has an L2 (this one not).
    if (key.rfind("memory.l2.", 0) == 0) {
      EXPECT_FALSE(cfg.at("memory").contains("l2"));
      continue;
    }
    // The optional core.cube.int8 section (the int8 fractal) is written only by a config that
    // gives it (this one not), so the preset's config hash is unchanged.
    if (key.rfind("core.cube.int8.", 0) == 0) {
      EXPECT_FALSE(cfg.at("core").at("cube").contains("int8"));
      continue;
    }
    // The banked DRAM section exists only with memory.dram.model: banked (docs/memory.md).
    if (key.rfind("memory.dram.banked.", 0) == 0) continue;
    // memory.multicast is written only when it is not its default (none).
    if (key == "memory.multicast") {
      EXPECT_FALSE(cfg.at("memory").contains("multicast"));
      continue;
    }
    // core.cube.model (default tlm) and core.cube.rtl_sample (default 0) likewise (docs/rtl.md).
    if (key == "core.cube.model" || key == "core.cube.rtl_sample") {
      EXPECT_FALSE(cfg.at("core").at("cube").contains(key.substr(std::string("core.cube.").size())))
          << key;
      continue;
    }
    // memory.dram.model likewise only when it is not its default (simple).
    if (key == "memory.dram.model") {
      EXPECT_FALSE(cfg.at("memory").at("dram").contains("model"));
      continue;
    }
    const json* v = &cfg;
    size_t begin = 0;
    for (size_t dot; (dot = key.find('.', begin)) != std::string::npos; begin = dot + 1)
      v = &v->at(key.substr(begin, dot - begin));
    EXPECT_TRUE(v->contains(key.substr(begin))) << key;
  }
  EXPECT_EQ(cfg.at("cores"), 2);
  EXPECT_EQ(cfg.at("clock_ghz"), 1.5);
  EXPECT_TRUE(cfg.at("clock_ghz").is_number_float());
  EXPECT_EQ(cfg.at("core").at("buffers_bytes").at("ub"), want.core.buffers_bytes.ub);
  EXPECT_EQ(cfg.at("core").at("cube").at("input_dtype"), "fp16");
  EXPECT_EQ(cfg.at("memory").at("dram").at("burst_bytes"), want.dram.burst_bytes);
  // The hash: 64 hex digits, equal for the same config, different for another.
  const std::string ha = ra.at("hw").at("sha256"), hb = rb.at("hw").at("sha256");
  EXPECT_EQ(ha.size(), 64u);
  EXPECT_EQ(ha.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(ha, hb);
  const CliResult c = tessel("sim models/hello_deepa.onnx --hw " + kHw +
                             " --timing-only --hw-set clock_ghz=1.5 --hw-set cores=2 --report '" +
                             (d / "c.json").string() + "'");
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_EQ(json::parse(slurp_file(d / "c.json")).at("runs").at(0).at("hw").at("sha256"), ha);
}

// ---------------------------------------------------------------------------------------------
// SIGINT: a multi-run experiment keeps the runs that finished.

TEST(RoughEdges, SigintKeepsTheFinishedRunsInAnIncompleteReport) {
  // Four timing-only runs of the classifier (each compiles for a few tenths of a second at
  // least). SIGINT goes out as soon as the report written after the first run exists; the run in
  // progress finishes, then the experiment stops.
  const fs::path d = temp_dir("sigint");
  write(d / "e.yaml",
        "model: " + kModels +
            "/ch_ppocr_mobile_v2.0_cls_infer.onnx\n"
            "inputs: {x: {shape: [1, 3, 48, 192]}}\n"
            "hw: " +
            kHw +
            "\n"
            "timing_only: true\ncheck: none\n"
            "runs:\n"
            "  - {name: c1, hw_set: {cores: 1}}\n  - {name: c2, hw_set: {cores: 2}}\n"
            "  - {name: c3, hw_set: {cores: 3}}\n  - {name: c4, hw_set: {cores: 4}}\n");
  const fs::path report = d / "r.json", out = d / "out.txt", err = d / "err.txt";
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::chdir(kSrc.c_str());
    std::freopen(out.c_str(), "w", stdout);
    std::freopen(err.c_str(), "w", stderr);
    ::execl(TESSEL_BINARY, TESSEL_BINARY, "run", (d / "e.yaml").c_str(), "--report", report.c_str(),
            static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  // Wait (up to 10 minutes on a loaded machine) for the report written after run 0.
  int status = 0;
  bool exited = false;
  for (int i = 0; i < 30000 && !fs::exists(report); ++i) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_FALSE(exited) << "tessel ended before the first run's report: " << slurp_file(err);
  ASSERT_TRUE(fs::exists(report));
  ::kill(pid, SIGINT);
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "tessel died of a signal instead of stopping cleanly";
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const json r = json::parse(slurp_file(report));
  EXPECT_EQ(r.at("complete"), false);
  EXPECT_EQ(r.at("runs_planned"), 4);
  const size_t finished = r.at("runs").size();
  EXPECT_GE(finished, 1u);
  EXPECT_LT(finished, 4u);
  EXPECT_EQ(r.at("runs").at(0).at("name"), "c1");
  const std::string o = slurp_file(out), e = slurp_file(err);
  EXPECT_CONTAINS(o, "run c1");
  EXPECT_CONTAINS(o, "interrupted: " + std::to_string(finished) + " of 4 runs finished");
  EXPECT_CONTAINS(e, "interrupted (SIGINT)");
}

// ---------------------------------------------------------------------------------------------
// The trace: its op spans, flows and DRAM counter carry the report's numbers.

TEST(RoughEdges, TraceSpansFlowsAndDramCounterMatchTheReport) {
  const fs::path d = temp_dir("trace_values");
  const CliResult r =
      tessel("sim models/hello_deepa.onnx --hw " + kHw + " --timing-only --trace '" +
             (d / "t.json").string() + "' --report '" + (d / "r.json").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const json run = json::parse(slurp_file(d / "r.json")).at("runs").at(0);
  const json doc = json::parse(slurp_file(d / "t.json"));
  const int cores = run.at("hw").at("cores");
  std::map<std::string, uint64_t> span_cycles;  // op -> cycles of its all-cores span
  std::map<uint64_t, std::vector<json>> flows;
  std::set<std::string> scalar_events;
  double dram_bytes = 0;
  const double window = doc.at("otherData").at("dram_counter_window_cycles");
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") == "X" && e.at("pid") == cores) {
      span_cycles[e.at("name")] = e.at("args").at("cycles");
      // ts/dur are microseconds at 1 GHz: the cycles / 1000.
      EXPECT_NEAR(e.at("dur").get<double>(), e.at("args").at("cycles").get<double>() / 1000, 1e-9);
    }
    if (e.at("ph") == "X" && e.contains("bind_id")) flows[e.at("bind_id")].push_back(e);
    if (e.at("ph") == "X" && e.at("tid") == 0 && e.at("pid") != cores)
      scalar_events.insert(e.at("name"));
    if (e.at("ph") == "C")
      dram_bytes +=
          (e.at("args").at("read").get<double>() + e.at("args").at("write").get<double>()) * window;
  }
  // Every op of the report has its span, of the report's cycles.
  ASSERT_FALSE(run.at("ops").empty());
  for (const auto& op : run.at("ops")) {
    const std::string name = op.at("name");
    if (op.at("cycles") == 0) continue;  // computed at compile time: no instruction, no span
    ASSERT_TRUE(span_cycles.count(name)) << name;
    EXPECT_EQ(span_cycles.at(name), op.at("cycles").get<uint64_t>()) << name;
  }
  // Each flow joins one set_flag to one wait_flag of the same flag and core; the wait ends no
  // earlier than the set.
  ASSERT_FALSE(flows.empty());
  for (const auto& [id, ends] : flows) {
    ASSERT_EQ(ends.size(), 2u) << id;
    const json& set = ends[0].at("name") == "set_flag" ? ends[0] : ends[1];
    const json& wait = ends[0].at("name") == "set_flag" ? ends[1] : ends[0];
    EXPECT_EQ(set.at("name"), "set_flag");
    EXPECT_EQ(wait.at("name"), "wait_flag");
    EXPECT_TRUE(set.value("flow_out", false));
    EXPECT_TRUE(wait.value("flow_in", false));
    EXPECT_EQ(set.at("pid"), wait.at("pid"));
    EXPECT_EQ(set.at("args").at("flag"), wait.at("args").at("flag"));
    const auto end = [](const json& e) {
      return e.at("args").at("start_cycle").get<uint64_t>() +
             e.at("args").at("duration_cycles").get<uint64_t>();
    };
    EXPECT_GE(end(wait), end(set));
  }
  // The scalar unit waits in the core_barrier after every kernel.
  EXPECT_TRUE(scalar_events.count("core_barrier"));
  // The DRAM counter carries every burst byte the report counts.
  EXPECT_NEAR(dram_bytes, run.at("dram_bytes").at("burst").get<double>(), 1e-6 * dram_bytes);
}

// scripts/trace_svg.py draws what the trace holds: per core an ops row and a scalar row above
// the pipes, one arrow per set_flag -> wait_flag flow, the DRAM counter below the cores.
TEST(RoughEdges, TraceSvgDrawsOpsScalarFlowsAndDram) {
  const fs::path d = temp_dir("trace_svg");
  const CliResult r = tessel("sim models/hello_deepa.onnx --hw " + kHw +
                             " --timing-only --trace '" + (d / "t.json").string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const json doc = json::parse(slurp_file(d / "t.json"));
  std::map<uint64_t, int> flow_ends;
  std::set<int> pipe_cores;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    if (e.contains("bind_id")) ++flow_ends[e.at("bind_id")];
    const std::string cat = e.value("cat", "");
    if (cat != "op" && cat != "scalar") pipe_cores.insert(e.at("pid").get<int>());
  }
  int flows = 0;
  for (const auto& [id, n] : flow_ends) flows += n == 2;
  ASSERT_GT(flows, 0);
  const std::string cmd = "python3 '" + kSrc + "/scripts/trace_svg.py' '" +
                          (d / "t.json").string() + "' --flows -o '" + (d / "t.svg").string() +
                          "' > /dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string svg = slurp_file(d / "t.svg");
  ASSERT_FALSE(pipe_cores.empty());
  for (int c : pipe_cores) {
    for (const char* row : {"ops", "scalar", "mte2", "vector", "mte3"})
      EXPECT_CONTAINS(svg, "core " + std::to_string(c) + " " + row + "</text>");
  }
  size_t arrows = 0;
  for (size_t at = svg.find("marker-end="); at != std::string::npos;
       at = svg.find("marker-end=", at + 1))
    ++arrows;
  EXPECT_EQ(arrows, static_cast<size_t>(flows));
  EXPECT_CONTAINS(svg, "DRAM B/cycle");
}

}  // namespace
}  // namespace tessel::testing
