// `tessel dse` end to end, through the built binary on the small hello_deepa model: a point's
// cycles equal a plain `tessel sim --hw-set ...` bit for bit; invalid and failing points are
// recorded and skipped; a sweep killed with SIGKILL or stopped with SIGINT and resumed ends with
// the same files as an uninterrupted one; resume and command-line mistakes are clear errors.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "compiler/dse/store.h"
#include "compiler/support/error.h"
#include "tests/cli/cli_test_util.h"

namespace tessel::testing {
namespace {

namespace fs = std::filesystem;
const std::string kSrc = TESSEL_SOURCE_DIR;
const std::string kModels = TESSEL_MODELS_DIR;

/// An experiment on hello_deepa with the given `sweep:` body (indented two spaces).
std::string experiment(const std::string& sweep_body) {
  return "name: t\nsweep:\n  base: " + kSrc + "/hw_configs/npu_4core.yaml\n" + sweep_body +
         "workloads: [{model: " + kModels +
         "/hello_deepa.onnx}]\nobjectives: [cycles, dram_bytes]\n";
}

/// results.csv as rows of fields (no quoted fields in these sweeps).
std::vector<std::vector<std::string>> csv_rows(const fs::path& p) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(slurp_file(p));
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::string cell;
    std::istringstream ls(line);
    while (std::getline(ls, cell, ',')) f.push_back(cell);
    if (!line.empty() && line.back() == ',') f.push_back("");
    rows.push_back(f);
  }
  return rows;
}

size_t column(const std::vector<std::string>& header, const std::string& name) {
  const auto it = std::find(header.begin(), header.end(), name);
  EXPECT_NE(it, header.end()) << name;
  return static_cast<size_t>(it - header.begin());
}

TEST(DseCli, PointCyclesEqualTesselSimBitForBit) {
  const fs::path d = temp_dir("dse_sim");
  write(d / "e.yaml",
        experiment("  grid: {core.cube.m: [8, 32], memory.dram.bytes_per_cycle: [32, 281]}\n"));
  const auto r = run_tessel(
      "dse " + (d / "e.yaml").string() + " --out " + (d / "o").string() + " --jobs 2", "dse_sim");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto rows = csv_rows(d / "o" / "results.csv");
  ASSERT_EQ(rows.size(), 5u);
  const size_t m = column(rows[0], "core.cube.m"),
               bw = column(rows[0], "memory.dram.bytes_per_cycle"),
               cyc = column(rows[0], "total_cycles"), st = column(rows[0], "status");
  std::set<std::string> distinct;
  for (size_t i = 1; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i][st], "ok") << r.out;
    const fs::path rep = d / ("sim" + std::to_string(i) + ".json");
    const auto s = run_tessel(
        "sim models/hello_deepa.onnx --hw hw_configs/npu_4core.yaml "
        "--timing-only --hw-set core.cube.m=" +
            rows[i][m] + " --hw-set memory.dram.bytes_per_cycle=" + rows[i][bw] + " --report " +
            rep.string(),
        "dse_sim");
    ASSERT_EQ(s.code, 0) << s.err;
    const auto j = nlohmann::json::parse(slurp_file(rep));
    EXPECT_EQ(rows[i][cyc], std::to_string(j["runs"][0]["total_cycles"].get<uint64_t>()))
        << "point " << rows[i][0];
    // Area and energy are the sim report's (npu_model/area_energy.h), to the last bit (both
    // files write the shortest text that reads back as the same double).
    for (const auto& [col, key] : {std::pair<std::string, std::string>{"area_mm2", "area_mm2"},
                                   {"energy_uj", "energy_uj"},
                                   {"edp", "edp_uj_s"}}) {
      ASSERT_FALSE(rows[i][column(rows[0], col)].empty()) << col;
      EXPECT_EQ(std::stod(rows[i][column(rows[0], col)]), j["runs"][0][key].get<double>())
          << col << " of point " << rows[i][0];
    }
    distinct.insert(rows[i][cyc]);
  }
  // The bandwidth changes the cycles (earlier runs: 10,243 at 32 B/cycle, 7,377 at 281), so the
  // comparison would see a point run on the wrong config.
  EXPECT_GE(distinct.size(), 2u);
}

TEST(DseCli, TunedPointCyclesEqualTesselTune) {
  // tune: {budget: 8} in the sweep runs the tuner per point as `tessel tune --budget 8` does
  // (same defaults: evolutionary, learned oracle, seed 0), so the tuned cycles agree.
  const fs::path d = temp_dir("dse_tune");
  write(d / "e.yaml",
        experiment("  grid: {memory.dram.bytes_per_cycle: [48]}\n") + "tune: {budget: 8}\n");
  const auto r =
      run_tessel("dse " + (d / "e.yaml").string() + " --out " + (d / "o").string(), "dse_tune");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto rows = csv_rows(d / "o" / "results.csv");
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_EQ(rows[1][column(rows[0], "status")], "ok");
  const auto t = run_tessel(
      "tune models/hello_deepa.onnx --hw hw_configs/npu_4core.yaml --hw-set "
      "memory.dram.bytes_per_cycle=48 --budget 8 --report " +
          (d / "t.json").string(),
      "dse_tune");
  ASSERT_EQ(t.code, 0) << t.err;
  const auto j = nlohmann::json::parse(slurp_file(d / "t.json"));
  EXPECT_EQ(rows[1][column(rows[0], "total_cycles")],
            std::to_string(j["runs"][0]["total_cycles"].get<uint64_t>()));
}

TEST(DseCli, InvalidAndFailingPointsAreRecordedAndTheSweepGoesOn) {
  const fs::path d = temp_dir("dse_bad");
  // m = 0 does not validate; 4 KiB of DRAM does not hold the model's 161,216 bytes of GM.
  write(
      d / "e.yaml",
      experiment("  grid: {core.cube.m: [0, 16], memory.dram.capacity_bytes: [4096, 8589934592]}\n"
                 "  where: [\"core.cube.m * 0 + 1\"]\n"));
  const auto r =
      run_tessel("dse " + (d / "e.yaml").string() + " --out " + (d / "o").string(), "dse_bad");
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_CONTAINS(r.out, "stored 4 of 4 rows: 1 ok, 2 invalid, 1 error");
  const auto rows = csv_rows(d / "o" / "results.csv");
  ASSERT_EQ(rows.size(), 5u);
  const size_t st = column(rows[0], "status"), why = column(rows[0], "reason");
  EXPECT_EQ(rows[1][st], "invalid");
  EXPECT_CONTAINS(rows[1][why], "expected an integer in [1");
  EXPECT_EQ(rows[3][st], "error");
  // (the reason holds commas: a quoted field, whole in the file's text)
  EXPECT_CONTAINS(slurp_file(d / "o" / "results.csv"),
                  "more than memory.dram.capacity_bytes = 4096");
  EXPECT_EQ(rows[4][st], "ok");
}

TEST(DseCli, WhereDropsPoints) {
  const fs::path d = temp_dir("dse_where");
  write(d / "e.yaml", experiment("  grid: {core.cube.m: [8, 16, 32]}\n"
                                 "  where: [\"core.buffers_bytes.l0a >= 2 * core.cube.m * "
                                 "core.cube.k * 2 * 64\"]\n"));
  // l0a 65536 >= 4096 m: m = 8 and 16 hold, 32 does not.
  const auto r =
      run_tessel("dse " + (d / "e.yaml").string() + " --out " + (d / "o").string(), "dse_where");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "3 points x 1 workload (1 dropped by where:, 0 invalid configs)");
  EXPECT_EQ(csv_rows(d / "o" / "results.csv").size(), 3u);
}

/// Starts `tessel ARGS` in its own process group; returns its pid.
pid_t spawn_tessel(const std::vector<std::string>& args, const fs::path& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    if (::chdir(kSrc.c_str()) != 0) ::_exit(127);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv = {const_cast<char*>(TESSEL_BINARY)};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(TESSEL_BINARY, argv.data());
    ::_exit(127);
  }
  return pid;
}

/// Rows stored in DIR/results.sqlite so far (0 while it does not exist yet).
size_t stored_rows(const fs::path& dir) {
  if (!fs::exists(dir / "results.sqlite")) return 0;
  try {
    return dse::ResultStore::open((dir / "results.sqlite").string()).rows().size();
  } catch (const Error&) {
    return 0;  // created, meta not committed yet
  }
}

/// Runs the sweep in `dir` and stops it with `sig` once `after` rows are stored; returns the
/// rows stored when it stopped and its wait status.
std::pair<size_t, int> interrupt_sweep(const fs::path& exp, const fs::path& dir, int sig,
                                       size_t after) {
  const pid_t pid =
      spawn_tessel({"dse", exp.string(), "--out", dir.string()}, dir.string() + ".log");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (stored_rows(dir) < after && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (sig == SIGKILL)
    ::kill(-pid, SIGKILL);  // the sweep and its workers, at once
  else
    ::kill(pid, sig);  // as Ctrl-C would (the workers ignore it)
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {stored_rows(dir), status};
}

TEST(DseCli, KilledOrInterruptedSweepResumesToTheSameResults) {
  const fs::path d = temp_dir("dse_resume");
  const fs::path exp = d / "e.yaml";
  write(exp, experiment("  grid: {core.cube.m: [8, 16]}\n"
                        "  random: {samples: 12, seed: 5, method: lhs, ranges: "
                        "{memory.dram.bytes_per_cycle: [16, 512, log]}}\n"));
  const auto full = run_tessel(
      "dse " + exp.string() + " --out " + (d / "full").string() + " --jobs 2", "dse_resume");
  ASSERT_EQ(full.code, 0) << full.err;
  const std::string want = slurp_file(d / "full" / "results.csv");
  ASSERT_EQ(csv_rows(d / "full" / "results.csv").size(), 25u);

  for (int sig : {SIGKILL, SIGINT}) {
    SCOPED_TRACE(sig == SIGKILL ? "SIGKILL" : "SIGINT");
    const fs::path out = d / (sig == SIGKILL ? "killed" : "interrupted");
    const auto [stored, status] = interrupt_sweep(exp, out, sig, 3);
    ASSERT_GE(stored, 3u);
    ASSERT_LT(stored, 24u) << "the sweep finished before it was stopped: nothing was resumed";
    if (sig == SIGKILL) {
      EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    } else {
      ASSERT_TRUE(WIFEXITED(status));
      EXPECT_EQ(WEXITSTATUS(status), 130) << slurp_file(out.string() + ".log");
      EXPECT_CONTAINS(slurp_file(out.string() + ".log"), "--resume");
    }
    const auto res =
        run_tessel("dse " + exp.string() + " --out " + out.string() + " --resume", "dse_resume");
    ASSERT_EQ(res.code, 0) << res.err;
    EXPECT_CONTAINS(res.out, "resumed: " + std::to_string(stored) + " rows already stored");
    EXPECT_EQ(slurp_file(out / "results.csv"), want);
    EXPECT_EQ(slurp_file(out / "pareto.csv"), slurp_file(d / "full" / "pareto.csv"));
  }
}

TEST(DseCli, KilledSearchResumesToTheSameResults) {
  // NSGA-II over 3 x 3 grid values and a bandwidth range: 8 points per generation, 3 generations.
  const fs::path d = temp_dir("dse_search");
  const fs::path exp = d / "e.yaml";
  write(exp, experiment("  grid: {core.cube.m: [8, 16, 32], cores: [1, 2, 4]}\n"
                        "  random: {ranges: {memory.dram.bytes_per_cycle: [16, 512, log]}}\n"
                        "  search: {population: 8, generations: 3, seed: 1}\n"));
  const auto full =
      run_tessel("dse " + exp.string() + " --out " + (d / "full").string(), "dse_search");
  ASSERT_EQ(full.code, 0) << full.err;
  EXPECT_CONTAINS(full.out, "search: 32 evaluations asked for");
  const std::string want = slurp_file(d / "full" / "results.csv");
  const size_t rows = csv_rows(d / "full" / "results.csv").size() - 1;
  ASSERT_GT(rows, 12u);
  const auto [stored, status] = interrupt_sweep(exp, d / "killed", SIGKILL, 10);
  ASSERT_LT(stored, rows) << "the search finished before it was killed";
  const auto res =
      run_tessel("dse " + exp.string() + " --out " + (d / "killed").string() + " --resume --jobs 2",
                 "dse_search");
  ASSERT_EQ(res.code, 0) << res.err;
  EXPECT_EQ(slurp_file(d / "killed" / "results.csv"), want);
}

/// Runs `mpirun -np N tessel ARGS` from the repository root (as root too: CI runs as root, where
/// OpenMPI needs its two OMPI_ALLOW_RUN_AS_ROOT variables); returns the exit code and output.
CliResult run_mpi(int ranks, const std::string& args, const fs::path& dir) {
  const fs::path out = dir / "mpi_out.txt";
  const std::string cmd = "cd '" + kSrc +
                          "' && OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "
                          "OMPI_MCA_rmaps_base_oversubscribe=1 mpirun -np " +
                          std::to_string(ranks) + " '" + TESSEL_BINARY + "' " + args + " > '" +
                          out.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp_file(out);
  return r;
}

TEST(DseCli, MpiRanksGiveTheSameResultsAsLocalWorkers) {
  const fs::path d = temp_dir("dse_mpi");
  const fs::path exp = d / "e.yaml";
  write(exp, experiment("  grid: {core.cube.m: [8, 32], memory.dram.bytes_per_cycle: [32, 281]}\n"
                        "  random: {samples: 2, seed: 3, ranges: {core.buffers_bytes.ub: [65536, "
                        "262144, pow2]}}\n"));
  const auto local = run_tessel(
      "dse " + exp.string() + " --out " + (d / "local").string() + " --jobs 2", "dse_mpi");
  ASSERT_EQ(local.code, 0) << local.err;
  // 3 ranks: rank 0 writes the database, ranks 1 and 2 run the points.
  const auto mpi = run_mpi(3, "dse " + exp.string() + " --out " + (d / "mpi").string(), d);
  ASSERT_EQ(mpi.code, 0) << mpi.out;
  EXPECT_CONTAINS(mpi.out, "3 MPI ranks (2 running points)");
  EXPECT_CONTAINS(mpi.out, "stored 8 of 8 rows: 8 ok");
  EXPECT_EQ(slurp_file(d / "mpi" / "results.csv"), slurp_file(d / "local" / "results.csv"));
  // --jobs does not apply under mpirun: one error, every rank ended.
  const auto bad =
      run_mpi(2, "dse " + exp.string() + " --out " + (d / "bad").string() + " --jobs 2", d);
  EXPECT_NE(bad.code, 0);
  EXPECT_CONTAINS(bad.out, "--jobs 2 does not apply under mpirun");
}

TEST(DseCli, ResumeAndCommandLineMistakesAreClearErrors) {
  const fs::path d = temp_dir("dse_errors");
  write(d / "e.yaml", experiment("  grid: {core.cube.m: [8]}\n"));
  write(d / "f.yaml", experiment("  grid: {core.cube.m: [16]}\n"));
  const std::string e = (d / "e.yaml").string(), o = (d / "o").string();
  auto r = run_tessel("dse " + e + " --out " + o + " --resume", "dse_errors");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "--resume: " + o + " does not exist");
  r = run_tessel("dse " + e + " --out " + o, "dse_errors");
  ASSERT_EQ(r.code, 0) << r.err;
  r = run_tessel("dse " + e + " --out " + o, "dse_errors");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "exists already");
  r = run_tessel("dse " + (d / "f.yaml").string() + " --out " + o + " --resume", "dse_errors");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "holds a different sweep than this experiment ('grid'");
  r = run_tessel("dse " + e, "dse_errors");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "--out DIR is required");
  r = run_tessel("run " + e, "dse_errors");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "run it with tessel dse");
  r = run_tessel("dse experiments/quickstart.yaml --out " + (d / "q").string(), "dse_errors");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "no sweep: key");
  // --explain reads the stored point.
  r = run_tessel("dse --explain " + o + " 0", "dse_errors");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_CONTAINS(r.out, "point 0: core.cube.m=8");
  EXPECT_CONTAINS(r.out, "workload hello_deepa: ok");
  EXPECT_CONTAINS(r.out, "bound unit");
  r = run_tessel("dse --explain " + o + " 7", "dse_errors");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "has no point 7");
  r = run_tessel("dse --explain " + o + " 0 --out " + o, "dse_errors");
  EXPECT_EQ(r.code, 2);
  EXPECT_CONTAINS(r.err, "drop --out");
}

}  // namespace
}  // namespace tessel::testing
