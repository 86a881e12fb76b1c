// `tessel quantize MODEL -o MODEL_int8.onnx`: static post-training quantisation to a QDQ model
// (compiler/driver/quantize.h), with a summary and the quantised model's error against the float
// one on the first calibration set (both run on the reference interpreter).
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "compiler/driver/cli.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/quantize.h"
#include "compiler/driver/report.h"
#include "compiler/driver/runner.h"
#include "compiler/driver/zoo.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/ops/reference.h"
#include "compiler/support/error.h"

namespace tessel::driver {

namespace {

struct QuantizeArgs {
  std::string model;  // .onnx file or zoo:NAME
  std::string output;
  std::string calibration_dir;
  int random_sets = 0;
  std::optional<uint64_t> seed;  // --random's seed (1 when not given)
  bool per_channel = false;
  bool no_fuse = false;
  std::string method = "minmax";
  std::optional<double> percentile;
  std::vector<std::string> input_shapes;
};

onnx::ModelProto load_model_proto(const std::string& model) {
  if (model.rfind("zoo:", 0) == 0) return zoo::build_zoo_model(model.substr(4));
  std::ifstream f(model, std::ios::binary);
  if (!f) fail("{}: cannot open the model", model);
  std::stringstream ss;
  ss << f.rdbuf();
  onnx::ModelProto m;
  if (!m.ParseFromString(ss.str())) fail("{}: not an ONNX model (protobuf parse failed)", model);
  return m;
}

/// Signal-to-quantisation-noise ratio of `got` against `want`, dB (infinite when equal).
double sqnr_db(const Tensor& want, const Tensor& got) {
  double signal = 0, noise = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.get_as_double(i), d = got.get_as_double(i) - w;
    signal += w * w;
    noise += d * d;
  }
  return noise == 0 ? INFINITY : 10.0 * std::log10(signal / noise);
}

}  // namespace

int cmd_quantize(const QuantizeArgs& args, std::ostream& out, std::ostream& err) {
  try {
    if (args.calibration_dir.empty() == (args.random_sets == 0))
      fail("give the calibration data: --calibration DIR or --random N (one of them)");
    QuantizeOptions options;
    if (args.method == "minmax") {
      options.method = CalibrationMethod::minmax;
      if (args.percentile) fail("--percentile applies to --method percentile only");
    } else if (args.method == "percentile") {
      options.method = CalibrationMethod::percentile;
      if (args.percentile) options.percentile = *args.percentile;
    } else {
      fail("--method {}: expected minmax or percentile", args.method);
    }
    options.per_channel = args.per_channel;
    options.fuse = !args.no_fuse;
    check_output_path(args.output, "-o");
    if (args.output.empty()) fail("give the output file: -o MODEL_int8.onnx");
    const onnx::ModelProto model = load_model_proto(args.model);
    const auto shapes = parse_input_shapes(args.input_shapes);
    std::vector<std::map<std::string, Tensor>> calibration;
    if (!args.calibration_dir.empty()) {
      if (!args.input_shapes.empty())
        fail("--input-shape applies to --random only (--calibration's tensors give the shapes)");
      if (args.seed) fail("--seed applies to --random only");
      calibration = load_calibration_dir(model, args.calibration_dir);
    } else {
      calibration =
          random_calibration(model, args.model, args.random_sets, args.seed.value_or(1), shapes);
    }
    QuantizeSummary s;
    const onnx::ModelProto q = quantize_static(model, args.model, calibration, options, &s);
    const std::string bytes = zoo::serialize_model(q);

    // The quantised model against the float one, on the first calibration set.
    frontend::ImportOptions io;
    for (const auto& [name, t] : calibration.front()) io.input_shapes[name] = t.shape();
    const auto fg = frontend::import_onnx_bytes(zoo::serialize_model(model), args.model, io);
    const auto qg = frontend::import_onnx_bytes(bytes, args.output, io);
    const auto want = ops::run_reference(*fg, calibration.front());
    const auto got = ops::run_reference(*qg, calibration.front());
    write_file_atomically(args.output, bytes);

    out << fmt::format(
        "quantized {} of {} {} nodes ({} weights, {}), {} activation Q/DQ pairs, {} int32 biases; "
        "calibration: {} set{} ({}); opset {} -> {}\n",
        s.nodes_quantized, s.nodes_quantized + static_cast<int>(s.skipped.size()),
        "Conv/MatMul/Gemm", s.weights_quantized, options.per_channel ? "per channel" : "per tensor",
        s.activation_pairs, s.biases_quantized, calibration.size(),
        calibration.size() == 1 ? "" : "s",
        options.method == CalibrationMethod::minmax
            ? std::string("minmax")
            : fmt::format("percentile {}", options.percentile),
        s.opset_before, s.opset_after);
    if (options.fuse)
      out << fmt::format(
          "folded {} BatchNormalization into their Conv; {} quantized outputs take their Q/DQ "
          "after the Relu that reads them\n",
          s.batchnorms_folded, s.relus_fused);
    for (const auto& why : s.skipped) out << "  left in float: " << why << "\n";
    out << fmt::format("weights and biases: {} bytes as float -> {} bytes quantized\n",
                       with_commas(s.weight_bytes_float), with_commas(s.weight_bytes_quantized));
    for (const auto& [name, w] : want) {
      const Tensor& g = got.at(name);
      double max_diff = 0, max_abs = 0;
      for (int64_t i = 0; i < w.numel(); ++i) {
        max_diff = std::max(max_diff, std::fabs(g.get_as_double(i) - w.get_as_double(i)));
        max_abs = std::max(max_abs, std::fabs(w.get_as_double(i)));
      }
      out << fmt::format(
          "output {}: max |int8 - float| {:.4g} (max |float| {:.4g}), SQNR {:.1f} dB on "
          "calibration set 0 (reference interpreter)\n",
          name, max_diff, max_abs, sqnr_db(w, g));
    }
    out << fmt::format("wrote {} ({} bytes)\n", args.output, with_commas(bytes.size()));
    return 0;
  } catch (const Error& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  }
}

Command add_quantize_command(CLI::App& app) {
  auto args = std::make_shared<QuantizeArgs>();
  auto* cmd = app.add_subcommand(
      "quantize", "post-training int8 quantisation of a float model to a QDQ ONNX model");
  cmd->add_option("model", args->model, "float ONNX model or zoo:NAME")->required();
  cmd->add_option("-o,--output", args->output, "output .onnx file (QDQ format)");
  cmd->add_option("--calibration", args->calibration_dir,
                  "calibration inputs: DIR/test_data_set_N/input_K.pb or DIR/input_K.pb");
  cmd->add_option("--random", args->random_sets,
                  "calibrate on N random input sets (uniform in [-1, 1))")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--seed", args->seed, "seed of --random's inputs (default 1)");
  cmd->add_flag("--per-channel", args->per_channel, "weights per output channel");
  cmd->add_flag("--no-fuse", args->no_fuse,
                "keep Conv -> BatchNormalization unfolded and Q/DQ before Relu (the layout of the "
                "committed golden int8 models)");
  cmd->add_option("--method", args->method, "range calibration: minmax | percentile")
      ->default_val("minmax");
  cmd->add_option("--percentile", args->percentile,
                  "--method percentile: the percentile kept (default 99.999)");
  add_input_shape_option(cmd, args->input_shapes);
  return {cmd, [args] { return cmd_quantize(*args, std::cout, std::cerr); }};
}

}  // namespace tessel::driver
