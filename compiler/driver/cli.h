// CLI subcommands. Each add_*_command registers a subcommand with its options on `app` and returns
// it with the function main() calls when the user chose it (returning the exit code: 0 success,
// 1 a value mismatch, 2 an error). New commands live in their own file and add one line to main().
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace tessel::driver {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_run_command(CLI::App& app);       // tessel run EXPERIMENT.yaml
Command add_check_command(CLI::App& app);     // tessel check CASE_DIR...
Command add_compile_command(CLI::App& app);   // tessel compile MODEL
Command add_conform_command(CLI::App& app);   // tessel conform DIR... (conform.h)
Command add_zoo_command(CLI::App& app);       // tessel zoo NAME -o FILE.onnx (zoo.h)
Command add_sim_command(CLI::App& app);       // tessel sim MODEL --hw FILE (cli_sim.cpp)
Command add_tune_command(CLI::App& app);      // tessel tune MODEL --hw FILE (cli_tune.cpp)
Command add_quantize_command(CLI::App& app);  // tessel quantize MODEL -o FILE (cli_quantize.cpp)
Command add_dse_command(CLI::App& app);       // tessel dse EXPERIMENT --out DIR (cli_dse.cpp)

struct GraphPassArgs;
struct ModelHwArgs;
struct RunArgs;
/// Adds --report FILE, --trace FILE, --tuning-log FILE and the graph pass flags: the outputs of
/// the commands that run an experiment (run, sim).
void add_run_output_options(CLI::App* cmd, RunArgs& args);
/// Adds the positional model (ONNX file or zoo:NAME), the required --hw FILE, --hw-set and
/// --input-shape: the options of the commands that run one model on the NPU (sim, tune).
void add_model_hw_options(CLI::App* cmd, ModelHwArgs& args);
/// Adds --disable-pass, --no-graph-passes, --print-ir-after, --print-ir-after-change and
/// --pass-timing to a subcommand.
void add_graph_pass_flags(CLI::App* cmd, GraphPassArgs& args);

/// Adds a repeatable option NAME taking one value per use (KEY=VALUE, NAME=DIMS, ...) collected
/// into `values` in command-line order.
CLI::Option* add_repeatable_option(CLI::App* cmd, const std::string& name,
                                   std::vector<std::string>& values, const std::string& help);
/// The shared --hw-set KEY=VALUE and --input-shape NAME=DIMS options.
void add_hw_set_option(CLI::App* cmd, std::vector<std::string>& hw_set);
void add_input_shape_option(CLI::App* cmd, std::vector<std::string>& input_shapes);
/// The shared --input-value NAME=V[,V...] option (an input bound to a value at compile time).
void add_input_value_option(CLI::App* cmd, std::vector<std::string>& input_values);

/// The shared --tuning-log FILE option (apply a tuning log's best records).
void add_tuning_log_option(CLI::App* cmd, std::string& path);

}  // namespace tessel::driver
