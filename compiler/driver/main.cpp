// tessel: the command-line interface. `tessel --help` lists the commands.
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>
#include <vector>

#include "compiler/driver/cli.h"

int main(int argc, char** argv) {
  using namespace tessel::driver;
  CLI::App app{"tessel: a deep-learning compiler coupled with a configurable NPU simulator"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "tessel 0.1.0");
  std::vector<Command> commands = {
      add_run_command(app),
      add_check_command(app),
      add_compile_command(app),
      add_conform_command(app),
      add_zoo_command(app),
      add_sim_command(app),
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
