// tessel: the command-line interface. `tessel --help` lists the commands.
#include <CLI/CLI.hpp>

#include <iostream>

#include "compiler/driver/commands.h"

int main(int argc, char** argv) {
  using namespace tessel::driver;
  CLI::App app{"tessel: a deep-learning compiler coupled with a configurable NPU simulator"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tessel 0.1.0");

  RunArgs run;
  auto* run_cmd =
      app.add_subcommand("run", "run an experiment file (model, inputs, hw config, target)");
  run_cmd->add_option("experiment", run.experiment, "experiment YAML file")->required();
  run_cmd->add_option("--report", run.report_path, "write a JSON report to FILE");
  run_cmd->add_option("--trace", run.trace_path,
                      "write a Chrome/Perfetto trace of the NPU pipes to FILE");

  CheckArgs check;
  auto* check_cmd = app.add_subcommand(
      "check", "run ONNX backend-test case directories and compare with their expected outputs");
  check_cmd
      ->add_option("case_dirs", check.case_dirs, "case directories (model.onnx, test_data_set_N/)")
      ->required();
  check_cmd->add_option("--target", check.target, "ref | npu")->default_val("ref");
  check_cmd->add_option("--hw", check.hw, "hardware config YAML (required for --target npu)");
  check_cmd->add_option("--hw-set", check.hw_set, "override a config key: KEY=VALUE (repeatable)");
  check_cmd->add_option("--report", check.report_path, "write a JSON report to FILE");
  check_cmd->add_flag("--per-node", check.per_node,
                      "npu: compare every intermediate value with the reference, list mismatches");

  CompileArgs comp;
  auto* comp_cmd =
      app.add_subcommand("compile", "compile a model and print its graph, loop IR or NPU assembly");
  comp_cmd->add_option("model", comp.model, "ONNX model")->required();
  comp_cmd->add_option("--hw", comp.hw, "hardware config YAML");
  comp_cmd->add_option("--hw-set", comp.hw_set, "override a config key: KEY=VALUE (repeatable)");
  comp_cmd->add_option("--input-shape", comp.input_shapes,
                       "bind an input: NAME=D0,D1,... (repeatable)");
  comp_cmd->add_option("--emit", comp.emit, "graph | loop | asm | bin")->default_val("asm");
  comp_cmd->add_option("-o,--output", comp.output, "output file (default: stdout)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    if (*run_cmd) return cmd_run(run, std::cout, std::cerr);
    if (*check_cmd) return cmd_check(check, std::cout, std::cerr);
    if (*comp_cmd) return cmd_compile(comp, std::cout, std::cerr);
  } catch (const std::exception& e) {
    std::cerr << "internal error (a bug in tessel, please report it): " << e.what() << "\n";
    return 2;
  }
  return 2;
}
