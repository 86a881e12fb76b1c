// CLI subcommands. Each add_*_command registers a subcommand with its options on `app` and returns
// it with the function main() calls when the user chose it (returning the exit code: 0 success,
// 1 a value mismatch, 2 an error). New commands live in their own file and add one line to main().
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace tessel::driver {

struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

Command add_run_command(CLI::App& app);      // tessel run EXPERIMENT.yaml
Command add_check_command(CLI::App& app);    // tessel check CASE_DIR...
Command add_compile_command(CLI::App& app);  // tessel compile MODEL

}  // namespace tessel::driver
