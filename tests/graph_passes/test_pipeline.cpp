// The pass manager (verifier between passes, errors, IR dumps, timing, disabling), the CLI flags
// of run/check/compile and the experiment key graph_passes.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compiler/driver/cli.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/experiment.h"
#include "compiler/driver/report.h"
#include "compiler/driver/runner.h"
#include "passes/graph/graph_passes.h"
#include "tests/graph_passes/gp_util.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;
using namespace tessel::graph_passes;

const std::string kModels = TESSEL_MODELS_DIR;
std::string kSrcCases() { return std::string(TESSEL_SOURCE_DIR) + "/tests/data/cases"; }

const std::vector<std::string> kPipeline = {"fold_qdq",
                                            "qdq_maxpool",
                                            "shape_folding",
                                            "constant_folding",
                                            "simplify",
                                            "fold_batchnorm",
                                            "fuse_hard_swish",
                                            "fuse_gelu",
                                            "fuse_layer_norm",
                                            "fuse_silu",
                                            "cse",
                                            "dce",
                                            "fuse_kernels",
                                            "layout_nc1hwc0",
                                            "cancel_transdata"};

constexpr const char* kSmall = R"(graph t opset 17 (%x: f32[2,4]) -> (%y) {
    %one: f32[] = const [1]
    %a: f32[2,4] = Mul(%x, %one)
    %s: f32[2,4] = Sigmoid(%a)
    %m: f32[2,4] = Mul(%a, %s)
    %dead: f32[2,4] = Neg(%x)
    %y: f32[2,4] = Relu(%m)
  })";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(PassManager, DefaultPipelineIsTheDocumentedList) {
  EXPECT_EQ(default_pass_names(), kPipeline);
  for (const auto& p : default_pipeline()) EXPECT_FALSE(p.summary.empty()) << p.name;
}

TEST(PassManager, RunsEveryPassAndReportsWhatChanged) {
  auto g = parse_ok(kSmall);
  std::ostringstream out;
  PipelineOptions o;
  o.out = &out;
  const PipelineReport r = run_pipeline(*g, o);
  ASSERT_EQ(r.passes.size(), kPipeline.size());
  std::vector<std::string> changed;
  for (const auto& p : r.passes) {
    EXPECT_TRUE(p.ran);
    if (p.changed) changed.push_back(p.name);
  }
  // simplify removes x*1, fuse_silu forms Silu, dce removes Neg and the constant, fuse_kernels
  // groups Silu + Relu.
  EXPECT_EQ(changed, (std::vector<std::string>{"simplify", "fuse_silu", "dce", "fuse_kernels"}));
  EXPECT_EQ(node_list(*g), (std::vector<std::string>{"m = Silu(x)", "y = Relu(m)"}));
  EXPECT_EQ(out.str(), "");  // nothing printed unless asked
  // The result prints and parses back exactly.
  const std::string text = graph_to_string(*g);
  EXPECT_EQ(graph_to_string(*parse_graph(text)), text);
}

TEST(PassManager, APassThatBreaksTheVerifierAbortsWithItsNameAndTheIR) {
  auto g = parse_ok(kSmall);
  // A test-only pass that gives the Relu's output a wrong shape.
  const std::vector<GraphPass> pipeline = {{"simplify", "", simplify},
                                           {"break_shapes", "test: corrupts a shape",
                                            [](Graph& g) {
                                              g.find_value("y")->shape = {3, 3};
                                              return true;
                                            }},
                                           {"dce", "", dce}};
  const std::string msg = error_of([&] { run_passes(*g, pipeline, PipelineOptions{}); });
  EXPECT_EQ(msg.rfind("pass 'break_shapes' broke the graph: verify graph 't': Relu 'Relu_0': "
                      "output %y is f32[3,3] but the shape rule gives f32[2,4]",
                      0),
            0u)
      << msg;
  EXPECT_NE(msg.find("IR after the pass:\ngraph t opset 17 (%x: f32[2,4]) -> (%y) {"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("%y: f32[3,3] = Relu(%m)"), std::string::npos) << msg;
}

TEST(PassManager, ErrorsInsideAPassAndInvalidInputGraphsAreNamed) {
  auto g = parse_ok(kSmall);
  const std::vector<GraphPass> throwing = {
      {"thrower", "", [](Graph&) -> bool { fail("node 'n': something is wrong"); }}};
  EXPECT_EQ(error_of([&] { run_passes(*g, throwing, {}); }),
            "pass 'thrower': node 'n': something is wrong");
  g->find_value("y")->shape = {1};
  EXPECT_EQ(error_of([&] {
              run_pipeline(*g);
            }).rfind("the graph is invalid before the graph passes: verify graph 't'", 0),
            0u);
}

TEST(PassManager, UnknownPassNamesListTheValidOnes) {
  auto g = parse_ok(kSmall);
  PipelineOptions o;
  o.disabled = {"fuse_everything"};
  std::string names;
  for (const auto& n : kPipeline) names += (names.empty() ? "" : ", ") + n;
  EXPECT_EQ(error_of([&] { run_pipeline(*g, o); }),
            "unknown graph pass 'fuse_everything' in --disable-pass (passes: " + names + ")");
  o.disabled.clear();
  o.print_ir_after = {"simplfy"};
  EXPECT_EQ(error_of([&] { run_pipeline(*g, o); }),
            "unknown graph pass 'simplfy' in --print-ir-after (passes: " + names + ", or all)");
  o.enabled = false;  // names are checked even when no pass runs
  EXPECT_NE(error_of([&] { run_pipeline(*g, o); }), "<no error>");
}

TEST(PassManager, DisabledPassesAndNoPasses) {
  auto g = parse_ok(kSmall);
  PipelineOptions o;
  o.disabled = {"fuse_silu", "fuse_kernels"};
  const PipelineReport r = run_pipeline(*g, o);
  EXPECT_FALSE(r.passes[9].ran);
  EXPECT_EQ(r.passes[9].name, "fuse_silu");
  EXPECT_EQ(node_list(*g),
            (std::vector<std::string>{"s = Sigmoid(x)", "m = Mul(x, s)", "y = Relu(m)"}));
  for (const auto& n : g->nodes()) EXPECT_FALSE(n->attrs.has(kFusionGroupAttr));

  auto h = parse_ok(kSmall);
  const std::string before = graph_to_string(*h);
  PipelineOptions none;
  none.enabled = false;
  EXPECT_TRUE(run_pipeline(*h, none).passes.empty());
  EXPECT_EQ(graph_to_string(*h), before);
}

TEST(PassManager, OnlyOpsTheTargetSupportsAreFormed) {
  auto g = parse_ok(kSmall);
  PipelineOptions o;
  o.available = [](const std::string& op) { return op != "Silu"; };
  run_pipeline(*g, o);
  EXPECT_EQ(node_list(*g),
            (std::vector<std::string>{"s = Sigmoid(x)", "m = Mul(x, s)", "y = Relu(m)"}));
}

TEST(PassManager, PrintIrAfterAPassAfterChangesAndTiming) {
  auto g = parse_ok(kSmall);
  std::ostringstream out;
  PipelineOptions o;
  o.out = &out;
  o.print_ir_after = {"cse", "fuse_silu"};
  run_pipeline(*g, o);
  const std::string s = out.str();
  EXPECT_NE(s.find("// ----- IR after fuse_silu -----\ngraph t opset 17"), std::string::npos) << s;
  EXPECT_NE(s.find("%m: f32[2,4] = Silu(%x)  # Mul_1"), std::string::npos) << s;
  EXPECT_NE(s.find("// ----- IR after cse (no change) -----"), std::string::npos) << s;
  EXPECT_EQ(s.find("IR after simplify"), std::string::npos);

  auto h = parse_ok(kSmall);
  std::ostringstream out2;
  PipelineOptions c;
  c.out = &out2;
  c.print_ir_after_change = true;
  c.timing = true;
  run_pipeline(*h, c);
  const std::string t = out2.str();
  size_t dumps = 0;
  for (size_t p = t.find("// ----- IR after "); p != std::string::npos;
       p = t.find("// ----- IR after ", p + 1))
    ++dumps;
  EXPECT_EQ(dumps, 4u);  // simplify, fuse_silu, dce, fuse_kernels
  EXPECT_NE(t.find("graph pass timing:\n  pass              changed     seconds  nodes before  "
                   "nodes after\n"),
            std::string::npos)
      << t;
  // simplify: 5 nodes -> 4 (the Mul by one), fuse_silu 4 -> 3, dce 3 -> 2.
  EXPECT_NE(t.find("  simplify          yes"), std::string::npos) << t;
  EXPECT_NE(t.find("            5            4\n"), std::string::npos) << t;
  EXPECT_NE(t.find("  dce               yes"), std::string::npos) << t;
  EXPECT_NE(t.find("            3            2\n"), std::string::npos) << t;
  EXPECT_NE(t.find("  total  "), std::string::npos) << t;
}

// ---------------------------------------------------------------------------------------------
// CLI flags

/// Runs `tessel ARGS...` in-process through the registered subcommands; returns {exit, out, err}.
struct CliRun {
  int code = -1;
  std::string out, err;
};
CliRun run_cli(std::vector<std::string> args) {
  CLI::App app("tessel");
  std::vector<driver::Command> cmds = {driver::add_run_command(app), driver::add_check_command(app),
                                       driver::add_compile_command(app)};
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  std::ostringstream out, err;
  auto* old_out = std::cout.rdbuf(out.rdbuf());
  auto* old_err = std::cerr.rdbuf(err.rdbuf());
  CliRun r;
  try {
    app.parse(reversed);
    for (auto& c : cmds)
      if (c.app->parsed()) r.code = c.run();
  } catch (const CLI::ParseError& e) {
    r.code = 100;
    err << e.what();
  }
  std::cout.rdbuf(old_out);
  std::cerr.rdbuf(old_err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

size_t count_nodes(const std::string& ir) {
  size_t n = 0;
  std::istringstream is(ir);
  for (std::string line; std::getline(is, line);)
    if (line.find(" = ") != std::string::npos && line.find(" = const ") == std::string::npos) ++n;
  return n;
}

TEST(Flags, CompileDisablePassNoGraphPassesPrintIrAndTiming) {
  const std::string model = kModels + "/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  const CliRun all = run_cli({"compile", model, "--input-shape", "x=1,3,48,192", "--emit", "graph",
                              "--pass-timing", "--print-ir-after=fuse_hard_swish"});
  ASSERT_EQ(all.code, 0) << all.err;
  const CliRun none = run_cli(
      {"compile", model, "--input-shape=x=1,3,48,192", "--emit=graph", "--no-graph-passes"});
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_EQ(none.err, "");
  EXPECT_EQ(count_nodes(none.out), 221u);  // as imported
  EXPECT_LT(count_nodes(all.out), 150u);
  EXPECT_EQ(all.out.find("BatchNormalization("), std::string::npos);
  EXPECT_NE(all.out.find("HardSwish("), std::string::npos);
  EXPECT_NE(all.err.find("// ----- IR after fuse_hard_swish -----"), std::string::npos);
  EXPECT_NE(all.err.find("graph pass timing:"), std::string::npos);
  EXPECT_NE(all.err.find("  fold_batchnorm    yes"), std::string::npos) << all.err;

  const CliRun some = run_cli({"compile", model, "--input-shape", "x=1,3,48,192", "--emit", "graph",
                               "--disable-pass", "fold_batchnorm", "--disable-pass=fuse_hard_swish",
                               "--print-ir-after-change"});
  ASSERT_EQ(some.code, 0) << some.err;
  EXPECT_NE(some.out.find("BatchNormalization("), std::string::npos);
  EXPECT_EQ(some.out.find("HardSwish("), std::string::npos);
  EXPECT_NE(some.err.find("// ----- IR after simplify -----"), std::string::npos);
  EXPECT_EQ(some.err.find("IR after fold_batchnorm"), std::string::npos);
}

TEST(Flags, UnknownPassNameIsAnErrorNamingTheValidOnes) {
  const CliRun r = run_cli(
      {"compile", kModels + "/hello_deepa.onnx", "--emit", "graph", "--disable-pass=fold_bn"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(
      r.err,
      "error: unknown graph pass 'fold_bn' in --disable-pass (passes: fold_qdq, qdq_maxpool, "
      "shape_folding, constant_folding, simplify, fold_batchnorm, fuse_hard_swish, fuse_gelu, "
      "fuse_layer_norm, fuse_silu, cse, dce, fuse_kernels, layout_nc1hwc0, cancel_transdata)\n");
  EXPECT_EQ(r.out, "");
  const CliRun p = run_cli({"check", kSrcCases() + "/hello_deepa", "--print-ir-after", "al"});
  EXPECT_EQ(p.code, 2);
  EXPECT_NE(p.err.find("unknown graph pass 'al' in --print-ir-after"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Experiment files

std::string write_yaml(const std::string& name, const std::string& body) {
  // The process id keeps concurrent test runs (ctest -j, other checkouts) apart.
  const std::string path = ::testing::TempDir() + "/" + std::to_string(::getpid()) + "_" + name;
  std::ofstream(path) << "model: " << kModels << "/hello_deepa.onnx\n"
                      << "inputs: {\"onnx::Flatten_0\": {shape: [1, 25, 96]}}\ntarget: ref\n"
                      << body;
  return path;
}

TEST(Experiment, GraphPassesKey) {
  EXPECT_TRUE(driver::load_experiment(write_yaml("gp_default.yaml", "")).runs[0].graph_passes);
  const auto none = driver::load_experiment(write_yaml("gp_none.yaml", "graph_passes: none\n"));
  EXPECT_FALSE(none.runs[0].graph_passes);
  const auto some = driver::load_experiment(
      write_yaml("gp_some.yaml",
                 "graph_passes: {disable: [cse, fuse_kernels]}\n"
                 "runs:\n  - {name: a}\n  - {name: b, graph_passes: all}\n"));
  EXPECT_EQ(some.runs[0].disabled_passes, (std::vector<std::string>{"cse", "fuse_kernels"}));
  EXPECT_TRUE(some.runs[1].disabled_passes.empty());
  EXPECT_TRUE(some.runs[1].graph_passes);

  const std::string bad = write_yaml("gp_bad.yaml", "graph_passes: {disable: [cse, fold]}\n");
  EXPECT_EQ(error_of([&] { driver::load_experiment(bad); }),
            bad +
                ":4:31: graph_passes.disable: unknown graph pass 'fold' (passes: "
                "fold_qdq, qdq_maxpool, shape_folding, constant_folding, simplify, fold_batchnorm, "
                "fuse_hard_swish, fuse_gelu, fuse_layer_norm, fuse_silu, cse, dce, fuse_kernels, "
                "layout_nc1hwc0, "
                "cancel_transdata)");
  const std::string word = write_yaml("gp_word.yaml", "graph_passes: some\n");
  EXPECT_EQ(error_of([&] { driver::load_experiment(word); }),
            word + ":4:15: graph_passes: 'some' is not one of all, none, {disable: [...]}");
  const std::string key = write_yaml("gp_key.yaml", "graph_passes: {enable: [cse]}\n");
  EXPECT_EQ(error_of([&] { driver::load_experiment(key); }),
            key + ":4:16: graph_passes.enable: unknown key (allowed: disable)");
}

TEST(Experiment, RunHonoursTheKeyAndTheFlags) {
  driver::RunArgs args;
  args.experiment = write_yaml("gp_run.yaml", "graph_passes: {disable: [fuse_layer_norm]}\n");
  args.passes.timing = true;
  std::ostringstream out, err;
  ASSERT_EQ(driver::cmd_run(args, out, err), 0) << out.str() << err.str();
  EXPECT_NE(err.str().find("  fuse_layer_norm   disabled"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("  fold_batchnorm    no"), std::string::npos) << err.str();
  // --no-graph-passes would silently drop the file's disable list: an error naming both.
  args.passes.none = true;
  std::ostringstream out2, err2;
  ASSERT_EQ(driver::cmd_run(args, out2, err2), 2) << err2.str();
  EXPECT_NE(err2.str().find("graph_passes: {disable: [fuse_layer_norm, ...]} has no effect with "
                            "--no-graph-passes"),
            std::string::npos)
      << err2.str();
  EXPECT_EQ(out2.str(), "");
}

TEST(Flags, CheckAndRunTakeTheFlags) {
  const std::string dir = kSrcCases() + "/hello_deepa";
  const CliRun c = run_cli({"check", dir, "--disable-pass=fuse_layer_norm", "--pass-timing"});
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.out.find("PASS"), std::string::npos) << c.out;
  EXPECT_NE(c.err.find("  fuse_layer_norm   disabled"), std::string::npos) << c.err;
  EXPECT_NE(c.err.find("  fold_batchnorm    no"), std::string::npos) << c.err;
  // No pass runs, so --print-ir-after=all could print nothing: an error, not a silent no-op.
  const CliRun n = run_cli({"check", dir, "--no-graph-passes", "--print-ir-after=all"});
  ASSERT_EQ(n.code, 2) << n.err;
  EXPECT_NE(n.err.find("--print-ir-after all has no effect with --no-graph-passes"),
            std::string::npos)
      << n.err;

  const std::string yaml = write_yaml("gp_flags.yaml", "");
  const CliRun r = run_cli({"run", yaml, "--print-ir-after", "fuse_layer_norm"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("// ----- IR after fuse_layer_norm -----"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("LayerNormalization("), std::string::npos) << r.err;
  const CliRun bad = run_cli({"run", yaml, "--disable-pass", "nope"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_EQ(bad.err.rfind("error: unknown graph pass 'nope' in --disable-pass (passes: "
                          "fold_qdq, qdq_maxpool, shape_folding, constant_folding, ",
                          0),
            0u)
      << bad.err;
  EXPECT_EQ(bad.out, "");
}

// The JSON report carries the node count after the graph passes and the kernel count, and
// scripts/graph_passes_table.py turns it into the docs/results.md table.
TEST(Experiment, ReportCarriesGraphNodesAndKernelsAndTheTableScriptReadsIt) {
  const std::string src = TESSEL_SOURCE_DIR;
  const std::string yaml =
      ::testing::TempDir() + "/" + std::to_string(::getpid()) + "_gp_report.yaml";
  std::ofstream(yaml) << "model: " << kModels << "/hello_deepa.onnx\n"
                      << "inputs: {\"onnx::Flatten_0\": {shape: [1, 25, 96]}}\n"
                      << "hw: " << src << "/hw_configs/npu_4core.yaml\ntarget: npu\n"
                      << "check: none\ntiming_only: true\nreport: [summary]\nruns:\n"
                      << "  - {name: hello_deepa/none, graph_passes: none}\n"
                      << "  - {name: hello_deepa/all}\n"
                      << "  - {name: hello_deepa/-fuse_kernels, "
                         "graph_passes: {disable: [fuse_kernels]}}\n";
  const std::string report =
      ::testing::TempDir() + "/" + std::to_string(::getpid()) + "_gp_report.json";
  driver::RunArgs args;
  args.experiment = yaml;
  args.report_path = report;
  std::ostringstream out, err;
  ASSERT_EQ(driver::cmd_run(args, out, err), 0) << out.str() << err.str();
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(report));
  const auto& runs = j.at("runs");
  ASSERT_EQ(runs.size(), 3u);
  // 25 nodes as imported; 9 after the passes (the two 9-node layer norms become one node each:
  // 25 - 2 * 8 = 9; tests Models/PipelineOnRealModel.* check the same count).
  EXPECT_EQ(runs[0].at("graph_nodes"), 25);
  EXPECT_EQ(runs[1].at("graph_nodes"), 9);
  EXPECT_EQ(runs[2].at("graph_nodes"), 9);
  EXPECT_EQ(runs[0].at("graph_passes").at("enabled"), false);
  EXPECT_EQ(runs[1].at("graph_passes").at("disabled"), nlohmann::json::array());
  EXPECT_EQ(runs[2].at("graph_passes").at("disabled"), (nlohmann::json{"fuse_kernels"}));
  // fuse_kernels forms 3 groups over 6 nodes ({LayerNormalization, Relu} twice: a layer norm
  // cannot follow a contraction in a group; {Gemm, Sigmoid}); each compiles as one kernel
  // instead of two, so the pipeline without fuse_kernels compiles 6 - 3 = 3 kernels more.
  const int k_all = runs[1].at("kernels"), k_nofuse = runs[2].at("kernels");
  EXPECT_EQ(k_nofuse - k_all, 3);
  EXPECT_LT(k_all, runs[0].at("kernels").get<int>());

  ASSERT_EQ(std::system("python3 --version >/dev/null 2>&1"), 0)
      << "python3 is missing (scripts/install_deps.sh installs it)";
  const std::string md = report + ".md";
  ASSERT_EQ(std::system(("python3 " + src + "/scripts/graph_passes_table.py " + report + " > " +
                         md + " 2>&1")
                            .c_str()),
            0);
  std::stringstream text;
  text << std::ifstream(md).rdbuf();
  const std::string t = text.str();
  auto dram = [&](int i) {
    return driver::with_commas(runs[i].at("dram_bytes").at("total").get<uint64_t>());
  };
  auto cycles = [&](int i) {
    return driver::with_commas(runs[i].at("total_cycles").get<uint64_t>());
  };
  const std::string row_none = fmt::format("| hello_deepa | none | 25 | {} | {} | ",
                                           runs[0].at("kernels").get<int>(), dram(0));
  EXPECT_NE(t.find(row_none), std::string::npos) << row_none << "\n" << t;
  EXPECT_NE(t.find(fmt::format("| hello_deepa | all | 9 | {} | {} | +0.0% | {} | +0.0% |", k_all,
                               dram(1), cycles(1))),
            std::string::npos)
      << t;
  EXPECT_NE(t.find(fmt::format("| hello_deepa | all but `fuse_kernels` | 9 | {} | {} |", k_nofuse,
                               dram(2))),
            std::string::npos)
      << t;
  EXPECT_NE(t.find(fmt::format("takes DRAM traffic from {} to {} bytes", dram(2), dram(1))),
            std::string::npos)
      << t;
}

// experiments/graph_passes.yaml (docs/results.md) covers every pass of the pipeline: per model a
// run with none, one with all and one with each pass disabled, timing-only on npu_4core.
TEST(Experiment, GraphPassesExperimentDisablesEachPassInTurn) {
  const auto ex =
      driver::load_experiment(std::string(TESSEL_SOURCE_DIR) + "/experiments/graph_passes.yaml");
  std::map<std::string, std::vector<std::string>> configs;  // model -> configs in order
  for (const auto& r : ex.runs) {
    const auto slash = r.name.find('/');
    ASSERT_NE(slash, std::string::npos) << r.name;
    const std::string model = r.name.substr(0, slash), config = r.name.substr(slash + 1);
    configs[model].push_back(config);
    EXPECT_EQ(r.target, driver::Target::npu) << r.name;
    EXPECT_TRUE(r.timing_only) << r.name;
    EXPECT_EQ(fs::path(r.hw).filename(), "npu_4core.yaml") << r.name;
    if (config == "none") {
      EXPECT_FALSE(r.graph_passes) << r.name;
    } else if (config == "all") {
      EXPECT_TRUE(r.graph_passes && r.disabled_passes.empty()) << r.name;
    } else {
      EXPECT_EQ(r.disabled_passes, (std::vector<std::string>{config.substr(1)})) << r.name;
    }
  }
  std::vector<std::string> want = {"none", "all"};
  for (const auto& p : kPipeline) want.push_back("-" + p);
  EXPECT_EQ(configs.size(), 5u);  // ppocr_cls, hello_deepa, ppocr_det, ppocr_rec, resnet50
  for (const auto& [model, got] : configs) EXPECT_EQ(got, want) << model;
}

}  // namespace
}  // namespace tessel::testing
