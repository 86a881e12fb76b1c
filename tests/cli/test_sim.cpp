// `tessel sim` as a user runs it: the same cycles as `tessel run` on the same config, the report's
// fields (total/roofline cycles, efficiency, per-pipe utilisation, per op), --hw-set and the
// schedule options reaching the compiled program, zoo:NAME models, and errors (exit code 2, a
// message naming the key/value/file, nothing written).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "tests/cli/cli_test_util.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
const std::string kSrc = TESSEL_SOURCE_DIR;
const std::string kModels = TESSEL_MODELS_DIR;
const std::string kCls = kModels + "/ch_ppocr_mobile_v2.0_cls_infer.onnx";
const std::string kHw = "hw_configs/npu_4core.yaml";

using Result = CliResult;
constexpr auto slurp = slurp_file;

fs::path temp_dir() {
  const fs::path d = fs::path(::testing::TempDir()) / ("tessel_sim_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

/// Runs `tessel ARGS` from the repository root (files private to this process).
Result tessel(const std::string& args) { return run_tessel(args, "tessel_sim"); }

json read_json(const fs::path& p) { return json::parse(slurp(p)); }

/// `tessel sim` on the classifier, timing only, with extra options; returns the report's run.
json sim_report(const std::string& extra, const std::string& tag) {
  const fs::path rep = temp_dir() / ("sim_" + tag + ".json");
  const Result r =
      tessel("sim '" + kCls + "' --hw " + kHw +
             " --input-shape x=1,3,48,192 --timing-only --report '" + rep.string() + "' " + extra);
  EXPECT_EQ(r.code, 0) << r.err;
  if (r.code != 0) return json::object();
  const json j = read_json(rep);
  EXPECT_EQ(j["command"], "sim");
  return j["runs"][0];
}

TEST(SimCli, SameCyclesAsTheExperimentPathAndACompleteReport) {
  const json s = sim_report("", "default");
  ASSERT_TRUE(s.contains("total_cycles"));
  // The experiment file with the same model, input shape, config and timing-only mode.
  const fs::path ex = temp_dir() / "same.yaml";
  std::ofstream(ex) << "model: " << kCls << "\ninputs:\n  x: {shape: [1, 3, 48, 192]}\nhw: " << kSrc
                    << "/" << kHw << "\ncheck: none\ntiming_only: true\n";
  const fs::path rep = temp_dir() / "run.json";
  const Result r = tessel("run '" + ex.string() + "' --report '" + rep.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const json e = read_json(rep)["runs"][0];
  EXPECT_EQ(s["total_cycles"], e["total_cycles"]);
  ASSERT_EQ(s["ops"].size(), e["ops"].size());
  for (size_t i = 0; i < s["ops"].size(); ++i)
    EXPECT_EQ(s["ops"][i]["cycles"], e["ops"][i]["cycles"]) << s["ops"][i]["name"];
  // The report: efficiency = roofline / simulated, in (0, 1]; utilisation per pipe, per op.
  const double total = s["total_cycles"], roof = s["roofline_cycles"], eff = s["efficiency"];
  EXPECT_GT(total, 0);
  EXPECT_GT(roof, 0);
  EXPECT_NEAR(eff, roof / total, 1e-12);
  EXPECT_LE(eff, 1.0);
  for (const char* p : {"mte2", "mte1", "cube", "fix", "vector", "mte3"}) {
    const double u = s["per_pipe_utilization"][p];
    EXPECT_GE(u, 0.0) << p;
    EXPECT_LE(u, 1.0) << p;
  }
  EXPECT_EQ(s["hw"]["cores"], 4);
  EXPECT_EQ(s["schedule"]["double_buffer"], true);
  EXPECT_EQ(s["schedule"]["multicore"], true);
  size_t with_roofline = 0;
  for (const auto& o : s["ops"]) {
    // Every op with code has its roofline and per-pipe utilisation.
    EXPECT_EQ(o.contains("roofline_cycles"), o["instructions"].get<uint64_t>() > 0) << o["name"];
    if (!o.contains("roofline_cycles")) continue;
    ASSERT_TRUE(o.contains("per_pipe_utilization")) << o["name"];
    ++with_roofline;
    const double c = o["cycles"], rc = o["roofline_cycles"], oe = o["efficiency"];
    if (c > 0) {
      EXPECT_NEAR(oe, rc / c, 1e-12) << o["name"];
    }
    // busy cycles of a pipe within an op <= its span x cores.
    for (const auto& [p, u] : o["per_pipe_utilization"].items()) {
      EXPECT_LE(u.get<double>(), 1.0 + 1e-12) << o["name"] << " " << p;
      const double busy = o["per_pipe_busy_cycles"][p].get<double>();
      EXPECT_NEAR(busy, u.get<double>() * c * 4, 1e-9 * std::max(1.0, busy)) << o["name"];
    }
  }
  EXPECT_GT(with_roofline, 50u);  // the classifier compiles to ~75 kernels
}

TEST(SimCli, HwSetCoresChangesTheCoreCount) {
  const json four = sim_report("", "four");
  const json one = sim_report("--hw-set cores=1", "one");
  ASSERT_TRUE(one.contains("hw"));
  EXPECT_EQ(one["hw"]["cores"], 1);
  EXPECT_EQ(one["per_core"].size(), 1u);
  EXPECT_EQ(one["hw_set"]["cores"], 1);  // typed as in the YAML, not the text "1"
  EXPECT_EQ(four["per_core"].size(), 4u);
  EXPECT_GT(one["total_cycles"].get<uint64_t>(), four["total_cycles"].get<uint64_t>());
}

// The area and energy model's report fields (npu_model/area_energy.h, docs/area_energy.md): the
// totals are the sums of the breakdown, EDP = energy x run time, the config's `tech` key picks
// the table, and fewer cores have less area.
TEST(SimCli, ReportsAreaEnergyAndEdp) {
  const json s = sim_report("", "energy");
  ASSERT_TRUE(s.contains("area_energy"));
  const json& ae = s["area_energy"];
  EXPECT_EQ(ae["tech"], "45nm");
  EXPECT_EQ(ae["tech_file"], "<built-in hw_configs/tech/45nm.yaml>");
  ASSERT_EQ(ae["components"].size(), 14u);
  double area = 0, dynamic = 0, leakage = 0;
  for (const json& c : ae["components"]) {
    area += c["area_mm2"].get<double>();
    dynamic += c["dynamic_uj"].get<double>();
    leakage += c["leakage_uj"].get<double>();
    EXPECT_NEAR(c["energy_uj"].get<double>(),
                c["dynamic_uj"].get<double>() + c["leakage_uj"].get<double>(), 1e-9)
        << c["name"];
  }
  const double energy = s["energy_uj"];
  EXPECT_NEAR(s["area_mm2"].get<double>(), area, 1e-9);
  EXPECT_NEAR(energy, dynamic + leakage, 1e-9);
  EXPECT_GT(dynamic, 0);
  EXPECT_GT(leakage, 0);
  // npu_4core runs at 1 GHz: T = total_cycles x 1e-9 s.
  const double seconds = s["total_cycles"].get<double>() * 1e-9;
  EXPECT_NEAR(ae["seconds"].get<double>(), seconds, 1e-15);
  EXPECT_NEAR(s["edp_uj_s"].get<double>(), energy * seconds, 1e-12 * energy * seconds);
  EXPECT_NEAR(s["average_power_w"].get<double>(), energy * 1e-6 / seconds, 1e-9);
  // The counts it priced: every mmad occupies the cube m1*k1*n1 cycles and does that many
  // 16x16x16 fractals, so cube MACs = cube busy cycles x 4096, and the cube's dynamic energy is
  // MACs x (fp16 mult 1.1 + fp32 add 0.9 pJ); DRAM energy = burst bytes x 8 x 20 pJ/bit.
  const json& n = ae["counts"];
  const uint64_t macs = n["cube_macs"];
  EXPECT_EQ(macs, s["per_pipe_busy_cycles"]["cube"].get<uint64_t>() * 4096);
  EXPECT_GT(macs, 0u);
  EXPECT_EQ(n["dram_burst_bytes"], s["dram_bytes"]["burst"]);
  // Every GM write is an MTE3 store (MTE3 also moves UB -> L1).
  EXPECT_GE(n["dma_bytes_delivered"]["mte3"].get<uint64_t>(),
            s["dram_bytes"]["written"].get<uint64_t>());
  uint64_t vector_ops = 0;
  for (const auto& [cls, types] : n["vector_elem_ops"].items())
    for (const auto& [t, count] : types.items()) vector_ops += count.get<uint64_t>();
  EXPECT_GT(vector_ops, 0u);
  EXPECT_EQ(n["scalar_instructions"], s["instructions"]["dynamic"]);
  for (const json& c : ae["components"]) {
    if (c["name"] == "cube") {
      EXPECT_NEAR(c["dynamic_uj"].get<double>(), static_cast<double>(macs) * 2.0e-6, 1e-9);
    }
    if (c["name"] == "dram") {
      EXPECT_NEAR(c["dynamic_uj"].get<double>(), n["dram_burst_bytes"].get<double>() * 8 * 20e-6,
                  1e-9);
    }
  }
  // Another table through --hw-set tech=PATH: its name, a different energy for the same cycles.
  const std::string round = kSrc + "/tests/npu_model/data/tech_round.yaml";
  const json r = sim_report("--hw-set tech='" + round + "'", "round");
  EXPECT_EQ(r["area_energy"]["tech"], "round");
  EXPECT_EQ(r["area_energy"]["tech_file"], round);
  EXPECT_EQ(r["total_cycles"], s["total_cycles"]);
  EXPECT_NE(r["energy_uj"], s["energy_uj"]);
  // One core: a quarter of every per-core component's area, the DRAM interface unchanged.
  const json one = sim_report("--hw-set cores=1", "energy_one");
  for (size_t i = 0; i < 14; ++i) {
    const json& c1 = one["area_energy"]["components"][i];
    const json& c4 = ae["components"][i];
    const double factor = c1["name"] == "dram" || c1["name"] == "l2" ? 1.0 : 0.25;
    EXPECT_NEAR(c1["area_mm2"].get<double>(), factor * c4["area_mm2"].get<double>(), 1e-9)
        << c1["name"];
  }
}

TEST(SimCli, ScheduleOptionsReachTheProgram) {
  const json both = sim_report("", "both");
  const json single = sim_report("--single-core", "single");
  const json no_db = sim_report("--no-double-buffer", "nodb");
  ASSERT_TRUE(single.contains("per_core"));
  EXPECT_EQ(single["schedule"]["multicore"], false);
  EXPECT_EQ(no_db["schedule"]["double_buffer"], false);
  // --single-core: cores 1..3 execute no data instruction (only the barriers).
  for (size_t c = 1; c < 4; ++c)
    for (const char* p : {"mte2", "mte1", "cube", "fix", "vector", "mte3"})
      EXPECT_EQ(single["per_core"][c]["busy_cycles"][p], 0) << "core " << c << " " << p;
  EXPECT_GT(single["total_cycles"].get<uint64_t>(), both["total_cycles"].get<uint64_t>());
  // Double buffering unrolls the tile loops by two over ping and pong buffers: more static
  // instructions, other cycles (whether faster depends on the tiling, see docs/results.md).
  EXPECT_GT(both["instructions"]["static"].get<uint64_t>(),
            no_db["instructions"]["static"].get<uint64_t>());
  EXPECT_NE(no_db["total_cycles"].get<uint64_t>(), both["total_cycles"].get<uint64_t>());
  // The same schedule through an experiment file's schedule key gives the same cycles.
  const fs::path ex = temp_dir() / "schedule.yaml";
  std::ofstream(ex) << "model: " << kCls << "\ninputs:\n  x: {shape: [1, 3, 48, 192]}\nhw: " << kSrc
                    << "/" << kHw
                    << "\ncheck: none\ntiming_only: true\nschedule: {double_buffer: false, "
                       "multicore: true}\n";
  const fs::path rep = temp_dir() / "schedule.json";
  const Result r = tessel("run '" + ex.string() + "' --report '" + rep.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_json(rep)["runs"][0]["total_cycles"], no_db["total_cycles"]);
}

TEST(SimCli, FunctionalRunIsChecked) {
  const Result r =
      tessel("sim '" + kCls + "' --hw " + kHw + " --input-shape x=1,3,48,192 --hw-set cores=2");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "PASS");
  EXPECT_CONTAINS(r.out, "npu-4core (2 cores");
  // The summary's energy line and the energy section (docs/area_energy.md, "Output").
  EXPECT_CONTAINS(r.out, " dynamic + ");
  EXPECT_CONTAINS(r.out, " W average; area ");
  EXPECT_CONTAINS(r.out, "area and energy (tech 45nm: <built-in hw_configs/tech/45nm.yaml>)");
  EXPECT_CONTAINS(r.out, "component  area mm2  dynamic uJ  leakage uJ  energy uJ  share");
}

/// Runs `tessel sim ARGS --report R`, expects exit 2, the message, and no report file.
void expect_error(const std::string& args, const std::string& message) {
  const fs::path rep = temp_dir() / "never.json";
  fs::remove(rep);
  const Result r = tessel("sim " + args + " --report '" + rep.string() + "'");
  EXPECT_EQ(r.code, 2) << args << "\n" << r.out << r.err;
  EXPECT_CONTAINS(r.err, message);
  EXPECT_FALSE(fs::exists(rep)) << args;
  EXPECT_FALSE(fs::exists(rep.string() + ".tmp")) << args;
}

TEST(SimCli, BadInputIsAClearErrorAndWritesNothing) {
  const std::string m = "'" + kCls + "' --hw " + kHw + " --timing-only ";
  expect_error(m + "--input-shape x=1,3,48,192 --hw-set core.no_such_key=1", "no_such_key");
  expect_error(m + "--input-shape x=1,3,48,192 --hw-set cores=abc", "cores");
  expect_error(m + "--input-shape x=1,3,48,192 --hw-set cores=0", "cores");
  expect_error(m + "--input-shape x=1,3,48,192 --hw-set cores", "cores");
  expect_error(m + "--input-shape x=1,3,x,192", "--input-shape x=1,3,x,192");
  expect_error(m + "--input-shape x", "expected NAME=D0,D1,...");
  expect_error(m + "--input-shape nosuch=1,3,48,192", "nosuch");
  expect_error("no/such/model.onnx --hw " + kHw, "no/such/model.onnx: cannot open model file");
  expect_error("'" + kCls + "' --hw no/such/hw.yaml --input-shape x=1,3,48,192", "no/such/hw.yaml");
  expect_error("zoo:resnet51 --hw " + kHw, "unknown model 'resnet51'");
  // A technology table that does not exist: the key, the path, no fallback to the default.
  expect_error(m + "--input-shape x=1,3,48,192 --hw-set tech=no/such/tech.yaml",
               "--hw-set tech=no/such/tech.yaml: cannot use the technology table "
               "'no/such/tech.yaml'");
  expect_error("'" + kCls + "' --input-shape x=1,3,48,192", "--hw");
  // The report would overwrite the trace: refused before anything runs.
  const std::string same = (temp_dir() / "never.json").string();
  expect_error(m + "--input-shape x=1,3,48,192 --trace '" + same + "'", "are the same file");
}

TEST(SimCli, ZooModelInAnExperimentFileIsValidated) {
  const fs::path ex = temp_dir() / "zoo_bad.yaml";
  std::ofstream(ex) << "model: zoo:resnet51\ninputs:\n  input: {shape: [1, 3, 224, 224]}\nhw: "
                    << kSrc << "/" << kHw << "\n";
  const Result r = tessel("run '" + ex.string() + "'");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, ex.string() + ":1:");
  EXPECT_CONTAINS(r.err, "unknown model 'resnet51'");
  const fs::path ex2 = temp_dir() / "sched_bad.yaml";
  std::ofstream(ex2) << "model: " << kCls
                     << "\ninputs:\n  x: {shape: [1, 3, 48, 192]}\nhw: " << kSrc << "/" << kHw
                     << "\nschedule: {double_buffer: maybe}\n";
  const Result r2 = tessel("run '" + ex2.string() + "'");
  EXPECT_EQ(r2.code, 2);
  EXPECT_CONTAINS(r2.err, "schedule.double_buffer");
  EXPECT_CONTAINS(r2.err, "expected true or false, got 'maybe'");
  const fs::path ex3 = temp_dir() / "sched_key.yaml";
  std::ofstream(ex3) << "model: " << kCls
                     << "\ninputs:\n  x: {shape: [1, 3, 48, 192]}\nhw: " << kSrc << "/" << kHw
                     << "\nschedule: {multicores: false}\n";
  const Result r3 = tessel("run '" + ex3.string() + "'");
  EXPECT_EQ(r3.code, 2);
  EXPECT_CONTAINS(r3.err, "schedule.multicores: unknown key");
}

TEST(SimCli, ZooModelSimulates) {
  // zoo:bert_layer built in memory (no file), timing only: its 12-head attention and FFN matmuls
  // run on the cube.
  const fs::path rep = temp_dir() / "bert.json";
  const Result r =
      tessel("sim zoo:bert_layer --hw " + kHw + " --timing-only --report '" + rep.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = read_json(rep)["runs"][0];
  EXPECT_EQ(j["model"], "zoo:bert_layer");
  EXPECT_EQ(j["inputs"]["hidden_states"], json::array({1, 128, 768}));
  uint64_t macs = 0;
  for (const auto& o : j["ops"])
    if (o.contains("macs")) macs += o["macs"].get<uint64_t>();
  // 931,135,488 MACs (docs/zoo.md): 4*128*768^2 + 2*12*128^2*64 + 2*128*768*3072.
  EXPECT_EQ(macs, 931135488u);
  EXPECT_GT(j["per_pipe_busy_cycles"]["cube"].get<uint64_t>(), 0u);
}

}  // namespace
}  // namespace tessel::testing
