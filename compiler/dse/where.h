// `where:` constraints of a sweep: expressions over dotted hardware-config keys such as
// "core.buffers_bytes.l0c >= 4 * core.cube.m * core.cube.n * 4", evaluated with muparser
// (Debian's libmuparser-dev: arithmetic, comparisons, &&, ||, min, max, ...; a non-zero result
// holds). Every numeric key of the resolved config is a variable, swept or not.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tessel::dse {

/// The numeric keys of a config as hw_report_json(hw)["config"] holds them (nested objects),
/// flattened to dotted names: {"core.cube.m": 16, ...}. Strings (dtypes, the name) are left out.
/// `config` is an nlohmann::json object, passed as its text to keep this header light.
std::map<std::string, double> numeric_keys(const std::string& config_json);

/// A compiled list of constraints.
class Constraints {
 public:
  /// Compiles `expressions` with the variables of `example` (the base config's numeric keys),
  /// evaluating each once. `where[i]` names expression i in messages (e.g. "exp.yaml:7:11:
  /// sweep.where[0]"). Throws tessel::Error naming where[i] and what muparser reports (a syntax
  /// error with its position, an unknown variable with the nearest key).
  Constraints(const std::vector<std::string>& expressions, const std::vector<std::string>& where,
              const std::map<std::string, double>& example);
  ~Constraints();
  Constraints(Constraints&&) noexcept;
  Constraints& operator=(Constraints&&) noexcept;

  /// The index of the first constraint that does not hold for `values` (every key of the
  /// example must be present), or -1 when all hold. Throws tessel::Error when a key is missing
  /// or muparser fails (e.g. a division by zero is not an error: it gives inf).
  int violated(const std::map<std::string, double>& values) const;

  /// The fast path for many points (screening): assign() sets every variable from `values` (as
  /// violated(values) does), variable() gives the storage of one key's variable (nullptr when the
  /// config has no such numeric key) to change it in place, and violated_now() evaluates with the
  /// variables as they are. Throws as violated().
  void assign(const std::map<std::string, double>& values) const;
  double* variable(const std::string& key) const;
  int violated_now() const;

  size_t size() const { return expressions_.size(); }
  const std::string& expression(size_t i) const { return expressions_[i]; }

 private:
  struct Impl;
  std::vector<std::string> expressions_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessel::dse
