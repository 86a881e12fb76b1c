// The conform subcommand's options (see cli.h; the command is cmd_conform in conform.cpp).
#include <iostream>
#include <memory>

#include "compiler/driver/cli.h"
#include "compiler/driver/conform.h"

namespace tessel::driver {

Command add_conform_command(CLI::App& app) {
  auto args = std::make_shared<ConformArgs>();
  auto* cmd = app.add_subcommand("conform",
                                 "run every ONNX backend-test case under DIR... on a target: "
                                 "pass / fail / unsupported / error per case, a summary per suite");
  cmd->footer(
      "Exit code: 0 every case passes or is unsupported; 1 a case fails or errors (with "
      "--expected: a case's status differs from the expected one); 2 a usage error. "
      "See docs/conformance.md.");
  cmd->add_option("dirs", args->dirs,
                  "directories searched recursively for cases (model.onnx + test_data_set_N/), "
                  "e.g. /usr/share/libonnx-testdata/data/node")
      ->required();
  cmd->add_option("--target", args->target, "ref | npu | cpu | gpu | gpu-emu")->default_val("ref");
  cmd->add_option("--hw", args->hw, "hardware config YAML (required for --target npu)");
  add_hw_set_option(cmd, args->hw_set);
  cmd->add_option("--report", args->report_path, "write every case as JSON to FILE");
  cmd->add_option("--markdown", args->markdown_path,
                  "write the per-suite table, unsupported reasons and failures as Markdown");
  cmd->add_option("--expected", args->expected_path,
                  "compare each case's status with this expected-results file "
                  "(tests/conformance/expected_*.txt); exit code 1 on any difference");
  cmd->add_option("--write-expected", args->write_expected,
                  "write this run's statuses as an expected-results file");
  cmd->add_option("-j,--jobs", args->jobs, "cases run at the same time (one process each)")
      ->default_val(1);
  cmd->add_option("--timeout", args->timeout_seconds,
                  "seconds a case may run before it is killed and reported as an error")
      ->default_val(300);
  cmd->add_flag("--in-process", args->in_process,
                "run the cases in this process, not one child process each (debugging: a crash "
                "ends the run)");
  cmd->add_flag("-v,--verbose", args->verbose, "one line per case (default: fail and error only)");
  return {cmd, [args] { return cmd_conform(*args, std::cout, std::cerr); }};
}

}  // namespace tessel::driver
