// `tessel zoo`: writes the standard workloads of compiler/driver/zoo.h as ONNX files.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "compiler/driver/cli.h"
#include "compiler/driver/report.h"
#include "compiler/driver/runner.h"
#include "compiler/driver/zoo.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/support/error.h"

namespace tessel::driver {

namespace {

std::string dims_text(const Shape& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}

struct Built {
  std::string bytes;
  std::unique_ptr<Graph> graph;  // imported back with tessel's frontend (shapes inferred)
};

/// Builds, serializes and imports a zoo model; the import checks the model with tessel's own
/// frontend and shape inference and gives the graph the counts are computed on.
Built build_and_import(const std::string& name, const zoo::ZooOptions& options) {
  Built b;
  b.bytes = zoo::serialize_model(zoo::build_zoo_model(name, options));
  b.graph = frontend::import_onnx_bytes(b.bytes, "zoo model " + name);
  return b;
}

std::string giga(int64_t v) { return fmt::format("{:.2f} G", static_cast<double>(v) / 1e9); }
std::string mega(int64_t v) { return fmt::format("{:.2f} M", static_cast<double>(v) / 1e6); }

}  // namespace

int cmd_zoo(const ZooArgs& args, std::ostream& out, std::ostream& err) {
  try {
    if (args.list) {
      if (!args.name.empty() || !args.output.empty())
        fail("--list takes no model name and no -o (it lists every model)");
      Table t({"name", "model", "input", "parameters", "MACs", "default seed"});
      for (const auto& m : zoo::zoo_models()) {
        zoo::ZooOptions counting;
        counting.calibrate = false;  // the counts do not depend on the weights' values
        const Built b = build_and_import(m.name, counting);
        t.add(
            {m.name, m.title, m.input_name + " " + dims_text(m.input_shape),
             with_commas(zoo::count_parameters(*b.graph)) + " (" +
                 mega(zoo::count_parameters(*b.graph)) + ")",
             with_commas(zoo::count_macs(*b.graph)) + " (" + giga(zoo::count_macs(*b.graph)) + ")",
             std::to_string(m.default_seed)});
      }
      out << t.str("") << "MACs: multiply-accumulates of Conv, Gemm and MatMul at batch 1.\n";
      return 0;
    }
    if (args.name.empty()) {
      std::string names;
      for (const auto& m : zoo::zoo_models()) names += (names.empty() ? "" : ", ") + m.name;
      fail("give a model name (models: {}) and -o FILE.onnx, or --list", names);
    }
    const zoo::ZooModel& info = zoo::find_zoo_model(args.name);
    if (args.output.empty()) fail("give the output file: tessel zoo {} -o FILE.onnx", args.name);
    zoo::ZooOptions options;
    options.batch = args.batch;
    options.seed = args.seed;
    const Built b = build_and_import(args.name, options);
    write_file_atomically(args.output, b.bytes);
    Shape in_shape = info.input_shape;
    in_shape[0] = args.batch;
    out << fmt::format("wrote {} ({}): {} {} -> {} {}, {} parameters, {} MACs, seed {}, {} bytes\n",
                       args.output, info.title, info.input_name, dims_text(in_shape),
                       info.output_name, dims_text(b.graph->outputs.at(0)->shape),
                       with_commas(zoo::count_parameters(*b.graph)),
                       with_commas(zoo::count_macs(*b.graph)),
                       args.seed.value_or(info.default_seed), with_commas(b.bytes.size()));
    return 0;
  } catch (const Error& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  }
}

Command add_zoo_command(CLI::App& app) {
  auto args = std::make_shared<ZooArgs>();
  auto* cmd = app.add_subcommand(
      "zoo", "write a standard workload (resnet18, resnet50, mobilenetv2, bert_layer) as ONNX");
  cmd->add_option("name", args->name, "model name (see --list)");
  cmd->add_option("-o,--output", args->output, "output .onnx file");
  cmd->add_option("--batch", args->batch, "batch size (dim 0 of the input)")
      ->default_val(1)
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--seed", args->seed, "weight seed (default: the model's own)");
  cmd->add_flag("--list", args->list, "list the models with parameter and MAC counts");
  return {cmd, [args] { return cmd_zoo(*args, std::cout, std::cerr); }};
}

}  // namespace tessel::driver
