// Helpers for the graph pass tests: parse a small graph, list its nodes compactly, run the
// reference interpreter on seeded random inputs and compare outputs.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/ops/op_registry.h"
#include "compiler/ops/reference.h"
#include "tests/test_compare.h"

namespace tessel::testing {

/// Replaces every "const dense" in `text` (a test's shorthand, not IR syntax) by the data list
/// of the declared f32 shape, element i = ((7 i) mod 11 - 5) / 10: deterministic, mixed signs.
inline std::string with_data(const std::string& text) {
  static const std::regex dense(R"(f32\[([0-9,]*)\] = const dense)");
  std::string out;
  auto begin = text.cbegin();
  std::smatch m;
  while (std::regex_search(begin, text.cend(), m, dense)) {
    out.append(begin, m[0].first);
    int64_t n = 1;
    std::string dims = m[1].str();
    for (size_t p = 0; p < dims.size();) {
      const size_t q = dims.find(',', p);
      n *= std::stoll(dims.substr(p, q == std::string::npos ? std::string::npos : q - p));
      p = q == std::string::npos ? dims.size() : q + 1;
    }
    out += "f32[" + dims + "] = const [";
    for (int64_t i = 0; i < n; ++i)
      out += (i ? ", " : "") + std::to_string(static_cast<double>((7 * i) % 11 - 5) / 10.0);
    out += "]";
    begin = m[0].second;
  }
  out.append(begin, text.cend());
  return out;
}

/// Parses `text` (after with_data) and checks it verifies (the inputs of every test are valid
/// graphs).
inline std::unique_ptr<Graph> parse_ok(const std::string& text) {
  auto g = parse_graph(with_data(text), "test");
  verify_graph(*g);
  return g;
}

/// "out = Op(in, in)" per node in order ("_" for an omitted input, outputs joined with ",").
inline std::vector<std::string> node_list(const Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes()) {
    std::string s;
    for (size_t i = 0; i < n->outputs.size(); ++i) s += (i ? "," : "") + n->outputs[i]->name;
    s += " = " + n->op_type + "(";
    for (size_t i = 0; i < n->inputs.size(); ++i)
      s += (i ? ", " : "") + (n->inputs[i] ? n->inputs[i]->name : std::string("_"));
    out.push_back(s + ")");
  }
  return out;
}

/// How many nodes of `g` are `op`.
inline size_t count_op(const Graph& g, const std::string& op) {
  size_t n = 0;
  for (const auto& node : g.nodes()) n += node->op_type == op;
  return n;
}

/// The producer of graph value `name` (fails the test when there is none).
inline const Node& producer(const Graph& g, const std::string& name) {
  const Value* v = g.find_value(name);
  EXPECT_NE(v, nullptr) << name;
  EXPECT_NE(v ? v->producer : nullptr, nullptr) << name;
  static Node none;
  return v && v->producer ? *v->producer : none;
}

/// Uniform [-2, 2) inputs for every graph input, fixed seed.
inline std::map<std::string, Tensor> random_inputs(const Graph& g, uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-2.0, 2.0);
  std::map<std::string, Tensor> in;
  for (const Value* v : g.inputs) {
    Tensor t(v->dtype, v->shape);
    for (int64_t i = 0; i < t.numel(); ++i) t.set_from_double(i, dist(rng));
    in[v->name] = std::move(t);
  }
  return in;
}

}  // namespace tessel::testing
