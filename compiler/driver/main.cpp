// tessel: the command-line interface. `tessel --help` lists the commands.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "compiler/driver/cli.h"

namespace {

/// `--hw-set KEY VALUE` (a space instead of '='): the parser would take KEY as the option's value
/// and complain about VALUE as an unexpected argument; say what was meant instead.
bool hw_set_split_in_two(int argc, char** argv) {
  for (int i = 1; i + 2 < argc; ++i) {
    const std::string opt = argv[i], key = argv[i + 1], value = argv[i + 2];
    if (opt == "--hw-set" && key.find('=') == std::string::npos && !key.empty() && key[0] != '-' &&
        !value.empty() && value[0] != '-') {
      std::cerr << "error: --hw-set " << key << " " << value
                << ": KEY and VALUE go in one argument joined by '=': --hw-set " << key << "="
                << value << "\n";
      return true;
    }
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tessel::driver;
  // Line-buffered stdout: each line of a long experiment reaches a pipe or file when printed, so
  // what finished is on record if the process is interrupted or killed.
  std::setvbuf(stdout, nullptr, _IOLBF, BUFSIZ);
  CLI::App app{"tessel: a deep-learning compiler coupled with a configurable NPU simulator"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tessel 0.1.0");
  std::vector<Command> commands = {
      add_run_command(app),     add_check_command(app),    add_compile_command(app),
      add_conform_command(app), add_zoo_command(app),      add_sim_command(app),
      add_tune_command(app),    add_quantize_command(app), add_dse_command(app),
  };
  if (argc > 1 && argv[1][0] != '-') {
    bool known = false;
    std::string names;
    for (const auto& c : commands) {
      known |= c.app->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + c.app->get_name();
    }
    if (!known) {
      std::cerr << "error: unknown command '" << argv[1] << "' (commands: " << names
                << "; see tessel --help)\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (hw_set_split_in_two(argc, argv)) return 2;
    const int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  try {
    for (const auto& c : commands)
      if (*c.app) return c.run();
  } catch (const std::exception& e) {
    std::cerr << "internal error (a bug in tessel, please report it): " << e.what() << "\n";
    return 2;
  }
  return 2;
}
