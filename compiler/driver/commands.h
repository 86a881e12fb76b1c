// The CLI's commands. Each returns the process exit code: 0 success (every check passed),
// 1 a value mismatch, 2 an error (bad input, unsupported op, ...). Human-readable output goes to
// `out`, diagnostics to `err`.
#pragma once

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/tensor.h"
#include "npu_model/hw_config.h"

namespace tessel::driver {

struct RunArgs {
  std::string experiment;
  std::string report_path;  // --report FILE.json
  std::string trace_path;   // --trace FILE.json
};
/// `tessel run EXPERIMENT.yaml`.
int cmd_run(const RunArgs& args, std::ostream& out, std::ostream& err);

struct CheckArgs {
  std::vector<std::string> case_dirs;
  std::string target = "ref";
  std::string hw;  // required for npu
  std::vector<std::string> hw_set;
  std::string report_path;
  bool per_node = false;  // compare every intermediate value with the reference and list mismatches
};
/// `tessel check CASE_DIR... --target ref|npu [--hw FILE]`: runs ONNX backend-test layout cases.
int cmd_check(const CheckArgs& args, std::ostream& out, std::ostream& err);

struct CompileArgs {
  std::string model;
  std::string hw;
  std::vector<std::string> hw_set;
  std::vector<std::string> input_shapes;  // NAME=DIMS
  std::string emit = "asm";               // graph | loop | asm | bin
  std::string output;                     // -o FILE ("" = stdout; required for bin)
};
/// `tessel compile MODEL --hw FILE --emit graph|loop|asm|bin [-o FILE]`.
int cmd_compile(const CompileArgs& args, std::ostream& out, std::ostream& err);

/// Parses repeated `--input-shape NAME=D0,D1,...` options.
std::map<std::string, Shape> parse_input_shapes(const std::vector<std::string>& specs);
/// Loads a hardware config with `--hw-set` overrides.
npu::HwConfig load_hw(const std::string& path, const std::vector<std::string>& hw_set);

}  // namespace tessel::driver
