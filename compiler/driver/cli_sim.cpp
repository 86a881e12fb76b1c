// `tessel sim`: compile and simulate one model in one step, without an experiment file. The
// options become a one-run Experiment (experiment.h) that runs through run_experiment, the code
// path of `tessel run`, so both give the same cycles and the same report for the same config.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "compiler/driver/cli.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/experiment.h"
#include "compiler/driver/zoo.h"
#include "compiler/support/error.h"

namespace tessel::driver {

namespace fs = std::filesystem;

RunSpec model_run(const std::string& model, const std::string& hw_path,
                  const std::vector<std::string>& hw_set,
                  const std::vector<std::string>& input_shapes,
                  const std::vector<std::string>& input_values) {
  const bool zoo_model = model.rfind("zoo:", 0) == 0;
  if (zoo_model) {
    zoo::find_zoo_model(model.substr(4));
  } else if (!fs::is_regular_file(model)) {
    fail("{}: cannot open model file ({})", model,
         fs::exists(model) ? "not a regular file" : "no such file");
  }
  if (hw_path.empty()) fail("--hw FILE is required (e.g. hw_configs/npu_4core.yaml)");
  const std::map<std::string, Shape> shapes = parse_input_shapes(input_shapes);
  try {
    load_hw(hw_path, hw_set);
  } catch (const Error& e) {
    fail("{}{}", e.what(), hw_set.empty() ? "" : " (with the --hw-set overrides)");
  }
  // Every model input needs a shape: the bound one, else the model's own (static) one. The
  // import binds and checks the shapes (a misspelt name or an unbound dynamic dim is an error).
  graph_passes::PipelineOptions no_passes;
  no_passes.enabled = false;
  const auto values = parse_input_values(input_values);
  const auto graph = load_model(model, shapes, no_passes, values);
  RunSpec run;
  run.name = zoo_model ? model.substr(4) : fs::path(model).stem().string();
  run.model = model;
  for (const Value* v : graph->inputs) {
    InputSpec in;  // uniform in [-1, 1), seed 0 (experiment.h)
    in.shape = v->shape;
    run.inputs[v->name] = in;
  }
  for (const auto& [name, value] : values) {
    InputSpec in;  // bound at compile time: a constant of the model, not fed at run time
    in.has_value = true;
    in.value = value;
    if (shapes.count(name)) in.shape = shapes.at(name);
    run.inputs[name] = in;
  }
  run.hw = hw_path;
  for (const auto& s : hw_set) run.hw_set.push_back(npu::parse_hw_override(s));
  run.target = Target::npu;
  return run;
}

int run_single(const RunSpec& run, const RunArgs& args, std::ostream& out, std::ostream& err,
               const std::string& command) {
  Experiment ex;
  ex.name = run.name;
  ex.source = run.model;
  ex.runs.push_back(run);
  return run_experiment(ex, args, out, err, command);
}

void add_model_hw_options(CLI::App* cmd, ModelHwArgs& args) {
  cmd->add_option("model", args.model, "ONNX model file, or zoo:NAME (resnet50, bert_layer, ...)")
      ->required();
  cmd->add_option("--hw", args.hw, "hardware config YAML")->required();
  add_hw_set_option(cmd, args.hw_set);
  add_input_shape_option(cmd, args.input_shapes);
}

int cmd_sim(const SimArgs& args, std::ostream& out, std::ostream& err) {
  try {
    // Everything is validated before any work: output paths, model, shapes, hw config + overrides.
    check_output_path(args.outputs.report_path, "--report");
    check_output_path(args.outputs.trace_path, "--trace");
    check_output_path(args.outputs.dram_trace_path, "--dram-trace");
    RunSpec run = model_run(args.model, args.hw, args.hw_set, args.input_shapes, args.input_values);
    run.timing_only = args.timing_only;
    run.check = !args.timing_only;
    run.double_buffer = !args.no_double_buffer;
    run.multicore = !args.single_core;
    return run_single(run, args.outputs, out, err, "sim");
  } catch (const Error& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  }
}

Command add_sim_command(CLI::App& app) {
  auto args = std::make_shared<SimArgs>();
  auto* cmd = app.add_subcommand(
      "sim", "compile and simulate a model on the NPU in one step (no experiment file)");
  cmd->footer(
      "Inputs are uniform in [-1, 1) (seed 0). Outputs are checked against the reference "
      "interpreter unless --timing-only. Exit code: 0 pass, 1 an output outside its tolerance, 2 "
      "an error (nothing is written).");
  add_model_hw_options(cmd, *args);
  add_input_value_option(cmd, args->input_values);
  cmd->add_flag("--timing-only", args->timing_only,
                "simulate timing only (no values computed, no check)");
  cmd->add_flag("--no-double-buffer", args->no_double_buffer,
                "schedule without double buffering (NpuCompileOptions::double_buffer off)");
  cmd->add_flag("--single-core", args->single_core,
                "run every kernel on core 0 (NpuCompileOptions::multicore off)");
  add_run_output_options(cmd, args->outputs);
  return {cmd, [args] { return cmd_sim(*args, std::cout, std::cerr); }};
}

}  // namespace tessel::driver
