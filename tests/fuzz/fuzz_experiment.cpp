// Fuzz target `experiment`: an experiment file (YAML, experiments/*.yaml) through the experiment
// loader (compiler/driver/experiment.h) and the checks `tessel run` makes before running: every
// npu run's hardware config loaded with its hw_set overrides, every input made (inputs read from
// .pb files; generated inputs up to 65,536 elements, larger ones only have their size checked).
//
// The text is parsed as if it were the file experiments/fuzz.yaml of this source tree, so the
// relative paths of the real experiments (../models/..., ../hw_configs/...) resolve.
#include "compiler/driver/experiment.h"
#include "tests/fuzz/fuzz_target.h"

TESSEL_FUZZ_TARGET(experiment) {
  using namespace tessel;
  const driver::Experiment ex =
      driver::parse_experiment(std::string(data), TESSEL_SOURCE_DIR "/experiments/fuzz.yaml");
  fuzz::fuzz_check(!ex.runs.empty(), "an accepted experiment has no runs");
  for (const auto& run : ex.runs) {
    if (run.target == driver::Target::npu) npu::load_hw_config(run.hw, run.hw_set);
    for (const auto& [name, spec] : run.inputs) {
      if (spec.fill != "file" && shape_numel(spec.shape) > 65536) continue;
      const Tensor t = driver::make_input(spec, "inputs." + name);
      fuzz::fuzz_check(spec.shape.empty() || t.shape() == spec.shape,
                       "input '{}' was made with shape {}, not the {} asked for", name,
                       shape_to_string(t.shape()), shape_to_string(spec.shape));
    }
  }
  return true;
}
