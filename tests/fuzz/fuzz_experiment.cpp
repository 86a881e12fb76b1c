// Fuzz target `experiment`: an experiment file (YAML, experiments/*.yaml) through the experiment
// loader (compiler/driver/experiment.h) and the checks `tessel run` makes before running: the
// hardware config of the npu runs loaded with their hw_set overrides (each distinct pair once),
// the inputs made (inputs read from .pb files, and generated inputs up to 4,096 elements; larger
// generated ones only have their element count checked, which is what can fail for them).
//
// The text is parsed as if it were the file experiments/fuzz.yaml of this source tree, so the
// relative paths of the real experiments (../models/..., ../hw_configs/...) resolve.
#include <set>

#include "compiler/driver/experiment.h"
#include "tests/fuzz/fuzz_target.h"

TESSEL_FUZZ_TARGET(experiment) {
  using namespace tessel;
  const driver::Experiment ex =
      driver::parse_experiment(std::string(data), TESSEL_SOURCE_DIR "/experiments/fuzz.yaml");
  fuzz::fuzz_check(!ex.runs.empty(), "an accepted experiment has no runs");
  std::set<std::string> loaded;
  for (const auto& run : ex.runs) {
    if (run.target == driver::Target::npu) {
      std::string key = run.hw;
      for (const auto& ov : run.hw_set) key += "\n" + ov.key + "=" + ov.value;
      if (loaded.insert(key).second) npu::load_hw_config(run.hw, run.hw_set);
    }
    for (const auto& [name, spec] : run.inputs) {
      if (spec.fill != "file" && shape_numel(spec.shape) > 4096) continue;
      const Tensor t = driver::make_input(spec, "inputs." + name);
      fuzz::fuzz_check(spec.shape.empty() || t.shape() == spec.shape,
                       "input '{}' was made with shape {}, not the {} asked for", name,
                       shape_to_string(t.shape()), shape_to_string(spec.shape));
    }
  }
  return true;
}
