// Tuning logs (compiler/tuner/log.h): records applied with --tuning-log, bad records as clear
// errors naming the file and line, the same seed giving the same log whatever --jobs, a killed
// tune resumed to the same end as an uninterrupted one.
#include <gtest/gtest.h>

#include <signal.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "compiler/driver/runner.h"
#include "compiler/tuner/log.h"
#include "compiler/tuner/tuner.h"
#include "tests/cli/cli_test_util.h"
#include "tests/tuner/tuner_test_util.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;

/// conv 16 -> 32 (3x3) -> Relu -> conv 32 -> 32 (1x1) -> Relu on 1x16x8x8: two conv tasks.
void write_two_convs(const fs::path& path) {
  onnx::ModelProto m = make_model(17);
  add_input(m, "x", onnx::TensorProto::FLOAT, {int64_t{1}, int64_t{16}, int64_t{8}, int64_t{8}});
  add_weights(m, "w1", {32, 16, 3, 3});
  add_weights(m, "w2", {32, 32, 1, 1});
  auto* c1 = add_node(m, "Conv", {"x", "w1"}, {"c1"}, "conv1");
  attr_ints(c1, "kernel_shape", {3, 3});
  attr_ints(c1, "pads", {1, 1, 1, 1});
  add_node(m, "Relu", {"c1"}, {"r1"}, "relu1");
  auto* c2 = add_node(m, "Conv", {"r1", "w2"}, {"c2"}, "conv2");
  attr_ints(c2, "kernel_shape", {1, 1});
  add_node(m, "Relu", {"c2"}, {"y"}, "relu2");
  add_output(m, "y");
  std::ofstream f(path, std::ios::binary);
  m.SerializeToOstream(&f);
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream f(p);
  std::vector<std::string> v;
  std::string l;
  while (std::getline(f, l)) v.push_back(l);
  return v;
}

/// The task keys of a model on npu_4core, in program order.
std::vector<std::string> task_keys(const fs::path& model) {
  graph_passes::PipelineOptions passes;
  passes.available = driver::target_ops(driver::Target::npu);
  const auto graph = driver::load_model(model.string(), {}, passes);
  const auto hw = preset("npu_4core");  // LoweredGraph keeps a reference: not a temporary
  const npu_backend::LoweredGraph lowered(*graph, hw, {});
  std::vector<std::string> keys;
  for (const auto& t : tuner::tasks_of(lowered)) keys.push_back(t.key);
  return keys;
}

std::string trial(const std::string& task, const nlohmann::json& knobs, uint64_t cycles) {
  nlohmann::json j = {
      {"type", "trial"},      {"run", "hand"},    {"trial", 0},
      {"task", task},         {"kind", "conv"},   {"hw", tuner::hw_hash(preset("npu_4core"))},
      {"knobs", knobs},       {"cycles", cycles}, {"oracle", "sim"},
      {"strategy", "random"}, {"seed", 0},        {"version", "test"}};
  return j.dump();
}

TEST(TuningLog, InvalidKnobsInALogNameTheRecordAndLine) {
  const auto dir = scratch_dir("log");
  write_two_convs(dir / "m.onnx");
  const auto keys = task_keys(dir / "m.onnx");
  ASSERT_EQ(keys.size(), 2u);
  // Line 1: a hw record; line 2: a record of a task the model does not have (ignored); line 3:
  // the first task with mt = 9999 (not in its domain {32, 16}).
  std::ofstream(dir / "bad.jsonl")
      << R"({"type": "hw", "hw": "x", "name": "other", "config": "name: other"})"
      << "\n"
      << trial("conv-0000000000000000", {{"mt", 32}}, 500) << "\n"
      << trial(keys[0],
               {{"mt", 9999},
                {"kc", 16},
                {"ht", 8},
                {"wt", 8},
                {"weights_resident", 1},
                {"k_sub", 1},
                {"row_groups", 1},
                {"double_buffer", 1},
                {"split", 0},
                {"cores", 1}},
               400)
      << "\n";
  const auto r = run_tessel("sim " + (dir / "m.onnx").string() +
                                " --hw hw_configs/npu_4core.yaml --timing-only --tuning-log " +
                                (dir / "bad.jsonl").string(),
                            "log");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "bad.jsonl:3: knobs");
  EXPECT_CONTAINS(r.err, "mt = 9999 is outside its domain (32, 16)");
  // A line that is not JSON, and a trial without its cycles.
  std::ofstream(dir / "broken.jsonl") << trial(keys[1], {{"mt", 32}}, 500) << "\n{\"type\": \n";
  auto b = run_tessel("sim " + (dir / "m.onnx").string() +
                          " --hw hw_configs/npu_4core.yaml --timing-only --tuning-log " +
                          (dir / "broken.jsonl").string(),
                      "log");
  EXPECT_EQ(b.code, 2);
  EXPECT_CONTAINS(b.err, "broken.jsonl:2: not a JSON object");
  std::ofstream(dir / "nocycles.jsonl")
      << R"({"type": "trial", "run": "r", "trial": 0, "task": "t", "kind": "conv", "hw": "h", "knobs": {}, "oracle": "sim", "strategy": "random", "seed": 0, "version": "v"})"
      << "\n";
  b = run_tessel("sim " + (dir / "m.onnx").string() +
                     " --hw hw_configs/npu_4core.yaml --timing-only --tuning-log " +
                     (dir / "nocycles.jsonl").string(),
                 "log");
  EXPECT_EQ(b.code, 2);
  EXPECT_CONTAINS(b.err, "nocycles.jsonl:1: field \"cycles\" must be a non-negative integer");
  // A missing log file.
  b = run_tessel("sim " + (dir / "m.onnx").string() +
                     " --hw hw_configs/npu_4core.yaml --timing-only --tuning-log " +
                     (dir / "missing.jsonl").string(),
                 "log");
  EXPECT_EQ(b.code, 2);
  EXPECT_CONTAINS(b.err, "missing.jsonl': no such file");
}

TEST(TuningLog, AppliedRecordsAreTheKnobsCompiledAndReported) {
  const auto dir = scratch_dir("log");
  write_two_convs(dir / "m.onnx");
  const std::string tune = "tune " + (dir / "m.onnx").string() +
                           " --hw hw_configs/npu_4core.yaml --budget 40 --seed 1 --oracle sim";
  auto r = run_tessel(
      tune + " --log " + (dir / "t.jsonl").string() + " --report " + (dir / "tune.json").string(),
      "log");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto tuned = nlohmann::json::parse(slurp_file(dir / "tune.json"))["runs"][0];
  r = run_tessel("sim " + (dir / "m.onnx").string() +
                     " --hw hw_configs/npu_4core.yaml --timing-only --tuning-log " +
                     (dir / "t.jsonl").string() + " --report " + (dir / "sim.json").string(),
                 "log");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto sim = nlohmann::json::parse(slurp_file(dir / "sim.json"))["runs"][0];
  // The log's best record per task is what the sim compiled, reported with source "log", and
  // the program is the tuned one (same cycles as the tune's own simulation).
  EXPECT_EQ(sim["total_cycles"], tuned["total_cycles"]);
  int with_knobs = 0;
  for (size_t i = 0; i < sim["ops"].size(); ++i) {
    const auto& op = sim["ops"][i];
    if (!op.contains("schedules")) continue;
    ++with_knobs;
    EXPECT_EQ(op["schedules"][0]["source"], "log") << op["name"];
    EXPECT_EQ(op["schedules"][0]["knobs"], tuned["ops"][i]["schedules"][0]["knobs"]) << op["name"];
    EXPECT_EQ(tuned["ops"][i]["schedules"][0]["source"], "tuned") << op["name"];
  }
  EXPECT_EQ(with_knobs, 2);
}

TEST(TuningLog, SameSeedSameLogWhateverJobs) {
  const auto dir = scratch_dir("log");
  write_two_convs(dir / "m.onnx");
  const std::string tune = "tune " + (dir / "m.onnx").string() +
                           " --hw hw_configs/npu_4core.yaml --budget 48 --strategy evolutionary "
                           "--oracle sim";
  ASSERT_EQ(run_tessel(tune + " --seed 7 --jobs 1 --log " + (dir / "a.jsonl").string(), "log").code,
            0);
  ASSERT_EQ(run_tessel(tune + " --seed 7 --jobs 2 --log " + (dir / "b.jsonl").string(), "log").code,
            0);
  ASSERT_EQ(run_tessel(tune + " --seed 8 --jobs 2 --log " + (dir / "c.jsonl").string(), "log").code,
            0);
  const std::string a = slurp_file(dir / "a.jsonl"), b = slurp_file(dir / "b.jsonl"),
                    c = slurp_file(dir / "c.jsonl");
  EXPECT_EQ(lines_of(dir / "a.jsonl").size(), 49u);  // the hw record + 48 trials
  EXPECT_EQ(a, b) << "the log depends on --jobs";
  EXPECT_NE(a, c) << "the seed changes nothing: the test would not see a nondeterministic log";
}

TEST(TuningLog, KilledAndResumedTuneEndsLikeAnUninterruptedOne) {
  const auto dir = scratch_dir("log");
  write_two_convs(dir / "m.onnx");
  const std::string tune = "tune " + (dir / "m.onnx").string() +
                           " --hw hw_configs/npu_4core.yaml --budget 160 --seed 3 --oracle sim";
  auto full = run_tessel(tune + " --log " + (dir / "full.jsonl").string() + " --report " +
                             (dir / "full.json").string(),
                         "log");
  ASSERT_EQ(full.code, 0) << full.err;
  // Start the same tune, kill it (SIGKILL) once 40 records are in its log.
  const fs::path log = dir / "killed.jsonl";
  const std::string cmd = "cd '" + std::string(TESSEL_SOURCE_DIR) + "' && ('" +
                          std::string(TESSEL_BINARY) + "' " + tune + " --log '" + log.string() +
                          "' > /dev/null 2>&1 & pid=$!; while [ \"$(cat '" + log.string() +
                          "' 2>/dev/null | wc -l)\" -lt 40 ]; do sleep 0.01; done; kill -9 $pid;"
                          " wait $pid 2>/dev/null; true)";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const size_t killed_lines = lines_of(log).size();
  ASSERT_LT(killed_lines, lines_of(dir / "full.jsonl").size()) << "the tune ended before the kill";
  // Without --resume the log is refused; with it the run continues.
  auto again = run_tessel(tune + " --log " + log.string(), "log");
  EXPECT_EQ(again.code, 2);
  EXPECT_CONTAINS(again.err, "pass --resume to continue it");
  auto resumed = run_tessel(
      tune + " --log " + log.string() + " --resume --report " + (dir / "resumed.json").string(),
      "log");
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_EQ(slurp_file(log), slurp_file(dir / "full.jsonl"));
  const auto a = nlohmann::json::parse(slurp_file(dir / "full.json"))["runs"][0];
  const auto b = nlohmann::json::parse(slurp_file(dir / "resumed.json"))["runs"][0];
  EXPECT_EQ(a["total_cycles"], b["total_cycles"]);
  EXPECT_EQ(a["tuning"]["tuned_total_cycles"], b["tuning"]["tuned_total_cycles"]);
  EXPECT_GT(b["tuning"]["replayed_trials"].get<int>(), 30);
}

TEST(TuningLog, AnIncompleteLastRecordIsDroppedOnResume) {
  const auto dir = scratch_dir("log");
  const fs::path p = dir / "cut.jsonl";
  std::ofstream(p) << trial("t", {{"mt", 16}}, 100) << "\n"
                   << R"({"type": "trial", "run": )";
  const auto log = tuner::TuningLog::read(p.string());
  EXPECT_EQ(log.trials().size(), 1u);
  {
    tuner::LogWriter w(p.string(), &log);
    tuner::TrialRecord r;
    r.run = "x";
    r.task = "t";
    r.cycles = 5;
    w.trial(r);
  }
  const auto back = tuner::TuningLog::read(p.string());
  ASSERT_EQ(back.trials().size(), 2u);
  EXPECT_EQ(back.trials()[1].cycles, 5u);
  EXPECT_EQ(back.trials()[1].line, 2u);
}

}  // namespace
}  // namespace tessel::testing
