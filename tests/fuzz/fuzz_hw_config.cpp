// Fuzz target `hw_config`: a hardware config (YAML, hw_configs/*.yaml) with `--hw-set` overrides,
// through parse -> validate -> derive (npu_model/hw_config.h).
//
// Input: the YAML text, optionally followed by a line "%%" and then one `--hw-set` argument per
// line (KEY=VALUE, parsed with parse_hw_override as the CLI does), e.g.
//   name: npu-4core
//   ...
//   %%
//   cores=8
//   core.buffers_bytes.ub=131072
// Property checked on an accepted config: hw_config_to_yaml(hw) parses back to an equal config.
#include "npu_model/hw_config.h"
#include "tests/fuzz/fuzz_target.h"

TESSEL_FUZZ_TARGET(hw_config) {
  using namespace tessel;
  std::string yaml(data);
  std::vector<npu::HwOverride> overrides;
  size_t at = yaml.rfind("%%\n", 0) == 0 ? 0 : yaml.find("\n%%\n");
  if (at != std::string::npos) {
    if (yaml[at] == '\n') ++at;
    const std::string rest = yaml.substr(at + 3);
    yaml.resize(at);
    for (size_t pos = 0; pos < rest.size();) {
      size_t nl = rest.find('\n', pos);
      if (nl == std::string::npos) nl = rest.size();
      overrides.push_back(npu::parse_hw_override(rest.substr(pos, nl - pos)));
      pos = nl + 1;
    }
  }
  const npu::HwConfig hw = npu::parse_hw_config(yaml, "fuzz.yaml", overrides);
  const std::string again = npu::hw_config_to_yaml(hw);
  npu::HwConfig back = fuzz::must_succeed("loading hw_config_to_yaml's output", [&] {
    return npu::parse_hw_config(again, "hw_config_to_yaml");
  });
  back.source_file = hw.source_file;
  fuzz::fuzz_check(back == hw, "hw_config_to_yaml does not round-trip:\n{}", again);
  return true;
}
