// The run, check and compile subcommands' options (see cli.h; the commands are in commands.cpp).
#include "compiler/driver/cli.h"

#include <iostream>
#include <memory>

#include "compiler/driver/commands.h"

namespace tessel::driver {

CLI::Option* add_repeatable_option(CLI::App* cmd, const std::string& name,
                                   std::vector<std::string>& values, const std::string& help) {
  return cmd->add_option(name, values, help)
      ->expected(1)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

void add_hw_set_option(CLI::App* cmd, std::vector<std::string>& hw_set) {
  add_repeatable_option(cmd, "--hw-set", hw_set, "override a config key: KEY=VALUE (repeatable)");
}

void add_input_shape_option(CLI::App* cmd, std::vector<std::string>& input_shapes) {
  add_repeatable_option(cmd, "--input-shape", input_shapes,
                        "bind an input: NAME=D0,D1,... (repeatable)");
}

void add_input_value_option(CLI::App* cmd, std::vector<std::string>& input_values) {
  add_repeatable_option(cmd, "--input-value", input_values,
                        "bind an input to a value at compile time: NAME=V[,V...] (repeatable)");
}

void add_tuning_log_option(CLI::App* cmd, std::string& path) {
  cmd->add_option("--tuning-log", path,
                  "apply the best record per task of a tuning log (JSON lines, tessel tune --log)");
}

void add_graph_pass_flags(CLI::App* cmd, GraphPassArgs& args) {
  add_repeatable_option(cmd, "--disable-pass", args.disable,
                        "skip a graph pass: NAME (repeatable)");
  cmd->add_flag("--no-graph-passes", args.none, "run no graph pass (the graph as imported)");
  add_repeatable_option(cmd, "--print-ir-after", args.print_ir_after,
                        "print the Graph IR after a graph pass: NAME or all (repeatable)");
  cmd->add_flag("--print-ir-after-change", args.print_ir_after_change,
                "print the Graph IR after every graph pass that changed it");
  cmd->add_flag("--pass-timing", args.timing,
                "print a table of the graph passes: changed, seconds, node counts");
}

void add_run_output_options(CLI::App* cmd, RunArgs& args) {
  cmd->add_option("--report", args.report_path, "write a JSON report to FILE");
  cmd->add_option("--trace", args.trace_path,
                  "write a Chrome/Perfetto trace of the NPU pipes to FILE");
  cmd->add_option("--dram-trace", args.dram_trace_path,
                  "write every DRAM request of the NPU runs to FILE (text; docs/memory.md)");
  add_tuning_log_option(cmd, args.tuning_log);
  add_graph_pass_flags(cmd, args.passes);
}

Command add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd =
      app.add_subcommand("run", "run an experiment file (model, inputs, hw config, target)");
  cmd->add_option("experiment", args->experiment, "experiment YAML file")->required();
  add_run_output_options(cmd, *args);
  return {cmd, [args] { return cmd_run(*args, std::cout, std::cerr); }};
}

Command add_check_command(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  auto* cmd = app.add_subcommand(
      "check", "run ONNX backend-test case directories and compare with their expected outputs");
  cmd->add_option("case_dirs", args->case_dirs, "case directories (model.onnx, test_data_set_N/)")
      ->required();
  cmd->add_option("--target", args->target, "ref | npu | cpu | gpu | gpu-emu")->default_val("ref");
  cmd->add_option("--hw", args->hw, "hardware config YAML (required for --target npu)");
  add_hw_set_option(cmd, args->hw_set);
  cmd->add_option("--report", args->report_path, "write a JSON report to FILE");
  cmd->add_flag("--per-node", args->per_node,
                "npu: compare every intermediate value with the reference, list mismatches");
  cmd->add_flag("!--no-fp16-range", args->fp16_range,
                "npu: do not rescale / keep in fp32 the values that reach 2^15 on the data set's "
                "inputs (graph_passes::fp16_range, docs/architecture.md Numerics)");
  cmd->add_option("--dram-trace", args->dram_trace_path,
                  "npu: write every DRAM request to FILE (text; FILE-C-S per case C and data set S "
                  "when there are several; docs/memory.md)");
  add_tuning_log_option(cmd, args->tuning_log);
  add_graph_pass_flags(cmd, args->passes);
  return {cmd, [args] { return cmd_check(*args, std::cout, std::cerr); }};
}

Command add_compile_command(CLI::App& app) {
  auto args = std::make_shared<CompileArgs>();
  auto* cmd =
      app.add_subcommand("compile", "compile a model and print its graph, loop IR or NPU assembly");
  cmd->add_option("model", args->model, "ONNX model")->required();
  cmd->add_option("--hw", args->hw, "hardware config YAML");
  add_hw_set_option(cmd, args->hw_set);
  add_input_shape_option(cmd, args->input_shapes);
  add_input_value_option(cmd, args->input_values);
  cmd->add_option("--target", args->target, "npu | cpu | gpu")->default_val("npu");
  cmd->add_option("--emit", args->emit,
                  "npu: graph | loop | asm (default) | bin; cpu: graph | loop | llvm | asm | obj "
                  "| so (default); gpu: graph | loop | llvm | ptx (default)");
  cmd->add_option("-o,--output", args->output, "output file (default: stdout)");
  add_tuning_log_option(cmd, args->tuning_log);
  add_graph_pass_flags(cmd, args->passes);
  return {cmd, [args] { return cmd_compile(*args, std::cout, std::cerr); }};
}

}  // namespace tessel::driver
