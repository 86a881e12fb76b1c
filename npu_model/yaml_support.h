// The YAML helpers of the hardware config loader (npu_model/hw_config.cpp), shared with the other
// YAML files of the hardware model (technology tables, npu_model/area_energy.cpp), so that every
// such file gets the same syntax handling and the same "file:line:column: key: ..." messages.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

namespace tessel::npu::yaml_support {

/// The first document of `text` (yaml-cpp), and in `second` where a second document starts
/// (null when there is none). Safe against yaml-cpp 0.7's endless loop on a stray token
/// (jbeder/yaml-cpp#1319). Throws YAML::Exception on a syntax error, tessel::Error naming
/// `source`, line and column on the stray-token case.
YAML::Node load_document(const std::string& text, const std::string& source, YAML::Mark& second);
/// "source:line:column" (1-based) for a mark, `source` alone for a null mark.
std::string where(const std::string& source, const YAML::Mark& mark);
/// How a value is described in messages: "'-1'", "the quoted string 'x'", "a map", "a list",
/// "nothing (an empty value)".
std::string describe_node(const YAML::Node& node);
/// True for a quoted scalar ('x' or "x").
bool is_quoted(const YAML::Node& node);
/// True when `text` is a YAML 1.2 core-schema float or integer without .inf/.nan ("-1.5e3").
bool is_number_text(const std::string& text);

}  // namespace tessel::npu::yaml_support
