// `where:` constraints through muparser (see where.h).
#include "compiler/dse/where.h"

#include <fmt/format.h>
#include <muParser.h>
#include <nlohmann/json.hpp>

#include "compiler/support/error.h"
#include "compiler/support/suggest.h"

namespace tessel::dse {

namespace {

void flatten(const nlohmann::json& j, const std::string& prefix,
             std::map<std::string, double>& out) {
  for (const auto& [k, v] : j.items()) {
    const std::string name = prefix.empty() ? k : prefix + "." + k;
    if (v.is_object())
      flatten(v, name, out);
    else if (v.is_number())
      out[name] = v.get<double>();
  }
}

}  // namespace

std::map<std::string, double> numeric_keys(const std::string& config_json) {
  std::map<std::string, double> out;
  flatten(nlohmann::json::parse(config_json), "", out);
  return out;
}

struct Constraints::Impl {
  std::map<std::string, double> vars;  // stable addresses for muparser's DefineVar
  std::vector<mu::Parser> parsers;
};

Constraints::Constraints(const std::vector<std::string>& expressions,
                         const std::vector<std::string>& where,
                         const std::map<std::string, double>& example)
    : expressions_(expressions), impl_(std::make_unique<Impl>()) {
  impl_->vars = example;
  std::vector<std::string> names;
  for (const auto& [k, v] : example) names.push_back(k);
  for (size_t i = 0; i < expressions.size(); ++i) {
    mu::Parser p;
    try {
      p.DefineNameChars("0123456789_.abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
      for (auto& [k, v] : impl_->vars) p.DefineVar(k, &v);
      p.SetExpr(expressions[i]);
      (void)p.Eval();
    } catch (const mu::Parser::exception_type& e) {
      const std::string token = e.GetToken();
      const bool unknown = e.GetCode() == mu::ecUNASSIGNABLE_TOKEN && !token.empty();
      if (unknown)
        fail(
            "{}: '{}': unknown key '{}'{} (the numeric keys of the config are variables, e.g. "
            "core.cube.m)",
            where[i], expressions[i], token, did_you_mean(token, names));
      fail("{}: '{}': {} (at position {})", where[i], expressions[i], e.GetMsg(), e.GetPos() + 1);
    }
    impl_->parsers.push_back(std::move(p));
  }
}

Constraints::~Constraints() = default;
Constraints::Constraints(Constraints&&) noexcept = default;
Constraints& Constraints::operator=(Constraints&&) noexcept = default;

int Constraints::violated(const std::map<std::string, double>& values) const {
  assign(values);
  return violated_now();
}

void Constraints::assign(const std::map<std::string, double>& values) const {
  for (auto& [k, v] : impl_->vars) {
    const auto it = values.find(k);
    if (it == values.end()) fail("where: the config has no numeric key '{}'", k);
    v = it->second;
  }
}

double* Constraints::variable(const std::string& key) const {
  const auto it = impl_->vars.find(key);
  return it == impl_->vars.end() ? nullptr : &it->second;
}

int Constraints::violated_now() const {
  for (size_t i = 0; i < impl_->parsers.size(); ++i) {
    double r = 0;
    try {
      r = impl_->parsers[i].Eval();
    } catch (const mu::Parser::exception_type& e) {
      fail("where '{}': {}", expressions_[i], e.GetMsg());
    }
    if (r == 0) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace tessel::dse
