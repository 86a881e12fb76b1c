// hw_report_json: the canonical YAML of the config (npu::hw_config_to_yaml) read back as JSON.
#include "compiler/driver/hw_json.h"

#include <llvm/ADT/ArrayRef.h>
#include <llvm/Support/SHA256.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdint>

#include "compiler/support/error.h"

namespace tessel::driver {

namespace {

using nlohmann::json;

/// A YAML scalar as the typed JSON value the config loader reads it as: a quoted scalar is a
/// string; otherwise an integer, else a number, else a string (dtype names).
json scalar_json(const YAML::Node& n) {
  const std::string& text = n.Scalar();
  if (n.Tag() == "!") return text;
  const char* b = text.data();
  const char* e = text.data() + text.size();
  int64_t i = 0;
  if (auto [end, ec] = std::from_chars(b, e, i); ec == std::errc() && end == e) return i;
  double d = 0;
  if (auto [end, ec] = std::from_chars(b, e, d); ec == std::errc() && end == e) return d;
  return text;
}

json node_json(const YAML::Node& n) {
  if (!n.IsMap()) return scalar_json(n);
  json o = json::object();
  for (const auto& kv : n) o[kv.first.as<std::string>()] = node_json(kv.second);
  return o;
}

std::string sha256_hex(const std::string& text) {
  const auto digest = llvm::SHA256::hash(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (uint8_t byte : digest) {
    out += hex[byte >> 4];
    out += hex[byte & 15];
  }
  return out;
}

}  // namespace

json hw_report_json(const npu::HwConfig& hw) {
  const std::string yaml = npu::hw_config_to_yaml(hw);
  return {{"name", hw.name},
          {"file", hw.source_file},
          {"config", node_json(YAML::Load(yaml))},
          {"sha256", sha256_hex(yaml)},
          {"cores", hw.cores},
          {"clock_ghz", hw.clock_ghz},
          {"dram_bytes_per_cycle", hw.dram.bytes_per_cycle},
          {"dram_burst_bytes", hw.dram.burst_bytes}};
}

json hw_config_value(const json& hw_report, const std::string& key) {
  const json* at = &hw_report.at("config");
  size_t begin = 0;
  while (true) {
    const size_t dot = key.find('.', begin);
    const std::string part = key.substr(begin, dot == std::string::npos ? dot : dot - begin);
    if (!at->is_object() || !at->contains(part))
      fail("hardware config key '{}' does not exist", key);
    at = &(*at)[part];
    if (dot == std::string::npos) return *at;
    begin = dot + 1;
  }
}

}  // namespace tessel::driver
