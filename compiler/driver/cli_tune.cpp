// `tessel tune`: tune a model's kernels on a hardware config (compiler/tuner), then simulate the
// tuned program timing-only and report it as `tessel sim` does, plus the tuning figures. The
// options become a one-run Experiment with a `tune:` key that runs through run_experiment, the
// code path of `tessel run` and `tessel sim`. `--space` prints every task's knobs and the size of
// its space instead.
#include <fmt/format.h>

#include <iostream>
#include <limits>
#include <memory>

#include "compiler/driver/cli.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/experiment.h"
#include "compiler/driver/report.h"
#include "compiler/support/error.h"
#include "compiler/tuner/tuner.h"

namespace tessel::driver {

namespace {

/// The schedule spaces of the model's tasks as text: per task its key, ops, weight, the size of
/// the product space and how many points are valid (counted when the product has at most 10^6
/// points), and every knob with its domain.
std::string space_text(const npu_backend::LoweredGraph& lowered) {
  std::string out;
  const auto tasks = tuner::tasks_of(lowered);
  double total = 0;
  for (const auto& t : tasks) {
    const passes::KernelSchedule& s = *lowered.kernels()[t.kernels.front()].schedule;
    const passes::Space& sp = s.space();
    std::string valid = "not counted (more than 10^6 points)";
    if (sp.size() <= 1e6) {
      uint64_t n = 0;
      std::vector<size_t> idx(sp.knobs.size(), 0);
      while (true) {
        passes::Knobs p;
        for (size_t i = 0; i < sp.knobs.size(); ++i)
          p[sp.knobs[i].name] = sp.knobs[i].values[idx[i]];
        n += s.valid(p);
        size_t i = sp.knobs.size();
        while (i > 0 && ++idx[i - 1] == sp.knobs[i - 1].values.size()) idx[--i] = 0;
        if (i == 0) break;
      }
      valid = with_commas(n) + " valid";
    }
    total += sp.size();
    std::string ops;
    for (size_t i = 0; i < t.ops.size() && i < 4; ++i) {
      if (i) ops += ", ";
      ops += t.ops[i];
    }
    if (t.ops.size() > 4) ops += fmt::format(", ... ({} ops)", t.ops.size());
    out += fmt::format("task {} ({} kernel{}: {})\n  space {} points, {}\n", t.key,
                       fmt::format("{:g}", t.weight), t.weight == 1 ? "" : "s", ops,
                       with_commas(static_cast<uint64_t>(sp.size())), valid);
    for (const auto& k : sp.knobs) {
      std::string values;
      for (size_t i = 0; i < k.values.size(); ++i) {
        if (i) values += " ";
        values += std::to_string(k.values[i]);
        if (k.labels.size() == k.values.size()) values += "=" + k.labels[i];
      }
      out += fmt::format("    {:<17} {:<40} {}{}\n", k.name, values, k.help,
                         k.derived ? " [derived by default]" : "");
    }
  }
  out += fmt::format("{} tasks, {} points in all\n", tasks.size(),
                     with_commas(static_cast<uint64_t>(total)));
  return out;
}

}  // namespace

int cmd_tune(const TuneArgs& args, std::ostream& out, std::ostream& err) {
  try {
    check_output_path(args.report_path, "--report");
    check_output_path(args.log_path, "--log");
    tuner::TuneOptions t;
    t.strategy = tuner::parse_strategy(args.strategy, "--strategy");
    t.oracle = tuner::parse_oracle(args.oracle, "--oracle");
    if (args.seed < 0) fail("--seed {}: expected a non-negative integer", args.seed);
    t.seed = static_cast<uint64_t>(args.seed);
    if (args.jobs < 1 || args.jobs > 256) fail("--jobs {}: expected 1..256", args.jobs);
    t.jobs = args.jobs;
    if (args.seconds < 0) fail("--seconds {}: expected a positive number", args.seconds);
    t.seconds = args.seconds;
    if (args.budget == 0) fail("--budget 0: expected a positive number of trials");
    if (args.budget < -1) fail("--budget {}: expected a positive number of trials", args.budget);
    if (args.budget > 0) {
      t.budget = args.budget;
    } else if (args.seconds > 0) {
      t.budget = std::numeric_limits<int64_t>::max() / 2;  // the time limit ends the run
    }
    t.log_path = args.log_path;
    t.resume = args.resume;
    if (args.resume && args.log_path.empty()) fail("--resume continues a log: give --log FILE");
    if (args.space && (args.resume || !args.log_path.empty() || !args.report_path.empty()))
      fail("--space prints the schedule spaces and tunes nothing: drop {}", args.resume ? "--resume"
                                                                            : !args.log_path.empty()
                                                                                ? "--log"
                                                                                : "--report");
    if (args.space) {
      (void)model_run(args.model, args.hw, args.hw_set, args.input_shapes, {});
      graph_passes::PipelineOptions passes = pipeline_options(args.passes, err);
      passes.available = target_ops(Target::npu);
      const auto graph = load_model(args.model, parse_input_shapes(args.input_shapes), passes);
      npu_backend::NpuCompileOptions opts;
      const npu_backend::LoweredGraph lowered(*graph, load_hw(args.hw, args.hw_set), opts);
      out << space_text(lowered);
      return 0;
    }
    RunSpec run = model_run(args.model, args.hw, args.hw_set, args.input_shapes, {});
    run.timing_only = true;
    run.check = false;
    run.tune = t;
    RunArgs run_args;
    run_args.report_path = args.report_path;
    run_args.passes = args.passes;
    return run_single(run, run_args, out, err, "tune");
  } catch (const Error& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  }
}

Command add_tune_command(CLI::App& app) {
  auto args = std::make_shared<TuneArgs>();
  auto* cmd = app.add_subcommand(
      "tune", "tune a model's kernel schedules on the simulator, then simulate the tuned program");
  cmd->footer(
      "The same seed and budget give the same log bit for bit whatever --jobs (a --seconds limit "
      "depends on timing). Exit code: 0 done, 2 an error (nothing is written).");
  add_model_hw_options(cmd, *args);
  cmd->add_option("--budget", args->budget,
                  "trials (measured points) over all tasks, the warm-up included (default 1000; "
                  "with --seconds alone: until the time is up); the warm-up measures every "
                  "task's default candidates even beyond it");
  cmd->add_option("--seconds", args->seconds, "stop after this many seconds of wall time");
  cmd->add_option("--strategy", args->strategy, "exhaustive | random | anneal | evolutionary")
      ->default_val("evolutionary");
  cmd->add_option("--oracle", args->oracle, "sim | analytical | learned")->default_val("learned");
  cmd->add_option("--seed", args->seed, "random seed of the strategies")->default_val(0);
  cmd->add_option("--jobs", args->jobs, "worker processes measuring in parallel")->default_val(1);
  cmd->add_option("--log", args->log_path, "append every trial to this JSON-lines log");
  cmd->add_flag("--resume", args->resume, "continue the tuning run already in --log");
  cmd->add_option("--report", args->report_path, "write a JSON report to FILE");
  cmd->add_flag("--space", args->space, "print each task's knobs and the size of its space");
  add_graph_pass_flags(cmd, args->passes);
  return {cmd, [args] { return cmd_tune(*args, std::cout, std::cerr); }};
}

}  // namespace tessel::driver
