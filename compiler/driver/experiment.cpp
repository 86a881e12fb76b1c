// Experiment file loading (see experiment.h).
#include "compiler/driver/experiment.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "compiler/driver/hw_json.h"
#include "compiler/driver/zoo.h"
#include "compiler/dse/where.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/support/error.h"
#include "compiler/support/suggest.h"
#include "passes/graph/pass_manager.h"

namespace tessel::driver {

namespace fs = std::filesystem;

namespace {

class Parser {
 public:
  explicit Parser(std::string file) : file_(std::move(file)) {
    dir_ = fs::path(file_).parent_path();
  }

  [[noreturn]] void error(const YAML::Node& n, const std::string& key,
                          const std::string& what) const {
    const auto m = n.Mark();
    if (m.line >= 0) fail("{}:{}:{}: {}: {}", file_, m.line + 1, m.column + 1, key, what);
    fail("{}: {}: {}", file_, key, what);
  }

  /// The text of a mapping key; a key that is not a plain name (a list, a mapping or nothing, as
  /// in `{[1, 2]: x}` or `{: x}`) is an error naming `where`.
  std::string key_name(const YAML::Node& key, const std::string& where) const {
    if (!key.IsScalar())
      error(key, where.empty() ? "experiment" : where,
            "expected a key name, got a list, mapping or nothing");
    return key.as<std::string>();
  }

  void check_keys(const YAML::Node& map, const std::string& where,
                  const std::set<std::string>& allowed) const {
    if (!map.IsMap()) error(map, where, "expected a mapping");
    std::set<std::string> seen;
    for (const auto& kv : map) {
      const std::string k = key_name(kv.first, where);
      if (!seen.insert(k).second)
        error(kv.first, where.empty() ? k : where + "." + k, "key given twice");
      if (!allowed.count(k)) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        error(kv.first, where.empty() ? k : where + "." + k,
              fmt::format("unknown key{} (allowed: {})", did_you_mean(k, allowed), list));
      }
    }
  }

  std::string str(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) error(n, key, "expected a string");
    return n.as<std::string>();
  }

  double num(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) error(n, key, "expected a number");
    try {
      return n.as<double>();
    } catch (const YAML::Exception&) {
      error(n, key, fmt::format("expected a number, got '{}'", n.as<std::string>()));
    }
  }

  int64_t integer(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) error(n, key, "expected an integer");
    try {
      return n.as<int64_t>();
    } catch (const YAML::Exception&) {
      error(n, key, fmt::format("expected an integer, got '{}'", n.as<std::string>()));
    }
  }

  bool boolean(const YAML::Node& n, const std::string& key) const {
    if (!n.IsScalar()) error(n, key, "expected true or false");
    try {
      return n.as<bool>();
    } catch (const YAML::Exception&) {
      error(n, key, fmt::format("expected true or false, got '{}'", n.as<std::string>()));
    }
  }

  std::string path(const YAML::Node& n, const std::string& key, bool must_exist) const {
    std::string p = str(n, key);
    fs::path fp(p);
    if (fp.is_relative()) fp = dir_ / fp;
    fp = fp.lexically_normal();
    if (must_exist) {
      // The error_code form: a name the OS cannot look up (a component longer than NAME_MAX,
      // found by fuzzing) is a bad path in the file, not a std::filesystem_error.
      std::error_code ec;
      const bool exists = fs::exists(fp, ec);
      if (ec)
        error(n, key, fmt::format("file '{}' cannot be looked up: {}", fp.string(), ec.message()));
      if (!exists) error(n, key, fmt::format("file '{}' does not exist", fp.string()));
    }
    return fp.string();
  }

  InputSpec input(const YAML::Node& n, const std::string& key, InputSpec spec) const {
    check_keys(n, key, {"shape", "fill", "low", "high", "seed", "file", "value"});
    if (n["value"]) {
      const YAML::Node v = n["value"];
      for (const char* k : {"fill", "low", "high", "seed", "file"})
        if (n[k]) error(n[k], key + "." + k, "does not apply to an input bound with 'value'");
      spec.has_value = true;
      spec.value.clear();
      if (v.IsSequence()) {
        if (v.size() == 0) error(v, key + ".value", "expected a number or a list of numbers");
        for (const auto& e : v) spec.value.push_back(num(e, key + ".value"));
      } else {
        spec.value.push_back(num(v, key + ".value"));
      }
    }
    if (n["shape"]) {
      const YAML::Node s = n["shape"];
      if (!s.IsSequence() || s.size() == 0)
        error(s, key + ".shape", "expected a list of dims, e.g. [1, 3, 48, 192]");
      spec.shape.clear();
      for (const auto& d : s) {
        const int64_t v = integer(d, key + ".shape");
        if (v <= 0) error(d, key + ".shape", fmt::format("dims must be positive, got {}", v));
        spec.shape.push_back(v);
      }
    }
    if (n["fill"]) {
      spec.fill = str(n["fill"], key + ".fill");
      if (spec.fill != "uniform" && spec.fill != "zeros" && spec.fill != "file")
        error(n["fill"], key + ".fill",
              fmt::format("'{}' is not one of uniform, zeros, file", spec.fill));
    }
    if (n["low"]) spec.low = num(n["low"], key + ".low");
    if (n["high"]) spec.high = num(n["high"], key + ".high");
    if (n["seed"]) {
      const int64_t s = integer(n["seed"], key + ".seed");
      if (s < 0) error(n["seed"], key + ".seed", "expected a non-negative integer");
      spec.seed = static_cast<uint64_t>(s);
    }
    if (n["file"]) spec.file = path(n["file"], key + ".file", true);
    if (spec.fill == "uniform" && !(spec.low < spec.high))
      error(n, key, fmt::format("low ({}) must be below high ({})", spec.low, spec.high));
    if (spec.fill == "file" && spec.file.empty()) error(n, key, "fill: file needs a 'file' key");
    if (spec.fill != "file" && spec.shape.empty() && !spec.has_value)
      error(n, key, "missing 'shape'");
    return spec;
  }

  /// Applies the run-level keys of `n` onto `run`.
  /// Applies the run-level keys of `n` onto `run`; `only` (when given) replaces the keys allowed.
  void run_keys(const YAML::Node& n, const std::string& where, RunSpec& run, bool top,
                const std::set<std::string>* only = nullptr) const {
    std::set<std::string> allowed = {"name",     "model", "inputs",      "hw",     "hw_set",
                                     "target",   "check", "timing_only", "report", "graph_passes",
                                     "schedule", "tune",  "threads"};
    if (top) {
      allowed.insert("description");
      allowed.insert("runs");
    }
    check_keys(n, where, only ? *only : allowed);
    auto key = [&](const char* k) { return where.empty() ? std::string(k) : where + "." + k; };
    if (n["name"]) run.name = str(n["name"], key("name"));
    if (n["model"]) {
      const std::string m = str(n["model"], key("model"));
      if (m.rfind("zoo:", 0) == 0) {
        try {
          zoo::find_zoo_model(m.substr(4));
        } catch (const Error& e) {
          error(n["model"], key("model"), e.what());
        }
        run.model = m;
      } else {
        run.model = path(n["model"], key("model"), true);
      }
    }
    if (n["inputs"]) {
      const YAML::Node ins = n["inputs"];
      if (!ins.IsMap())
        error(ins, key("inputs"), "expected a mapping input name -> {shape: [...]}");
      for (const auto& kv : ins) {
        const std::string name = key_name(kv.first, key("inputs"));
        const std::string k = key("inputs") + "." + name;
        if (!kv.second.IsMap())
          error(kv.second, k, "expected a mapping such as {shape: [1, 3, 48, 192]}");
        InputSpec base = run.inputs.count(name) ? run.inputs.at(name) : InputSpec{};
        run.inputs[name] = input(kv.second, k, base);
      }
    }
    if (n["hw"]) run.hw = path(n["hw"], key("hw"), true);
    if (n["hw_set"]) {
      const YAML::Node hs = n["hw_set"];
      if (!hs.IsMap())
        error(hs, key("hw_set"), "expected a mapping of dotted config keys to values");
      for (const auto& kv : hs) {
        const std::string hw_key = key_name(kv.first, key("hw_set"));
        const std::string k = key("hw_set") + "." + hw_key;
        run.hw_set.push_back({hw_key, override_text(kv.second, k)});
      }
    }
    if (n["target"]) {
      const std::string t = str(n["target"], key("target"));
      if (t != "ref" && t != "npu" && t != "cpu" && t != "gpu" && t != "gpu-emu")
        error(n["target"], key("target"),
              fmt::format("'{}' is not one of ref, npu, cpu, gpu, gpu-emu", t));
      run.target = parse_target(t, key("target"));
    }
    if (n["check"]) {
      const std::string c = str(n["check"], key("check"));
      if (c != "reference" && c != "none")
        error(n["check"], key("check"), fmt::format("'{}' is not one of reference, none", c));
      run.check = c == "reference";
    }
    if (n["timing_only"]) run.timing_only = boolean(n["timing_only"], key("timing_only"));
    if (n["graph_passes"]) parse_graph_passes(n["graph_passes"], key("graph_passes"), run);
    if (n["schedule"]) {
      const YAML::Node sc = n["schedule"];
      check_keys(sc, key("schedule"), {"double_buffer", "multicore", "ops", "tasks"});
      if (sc["double_buffer"])
        run.double_buffer = boolean(sc["double_buffer"], key("schedule") + ".double_buffer");
      if (sc["multicore"]) run.multicore = boolean(sc["multicore"], key("schedule") + ".multicore");
      if (sc["ops"]) knob_map(sc["ops"], key("schedule") + ".ops", run.op_knobs);
      if (sc["tasks"]) knob_map(sc["tasks"], key("schedule") + ".tasks", run.task_knobs);
    }
    if (n["threads"]) {
      const int64_t t = integer(n["threads"], key("threads"));
      if (t < 1 || t > 1024)
        error(n["threads"], key("threads"),
              fmt::format("expected an integer from 1 to 1024, got {}", t));
      run.cpu_threads = static_cast<int>(t);
    }
    if (n["tune"]) run.tune = tune(n["tune"], key("tune"), run.tune);
    if (n["report"]) {
      const YAML::Node r = n["report"];
      if (!r.IsSequence()) error(r, key("report"), "expected a list of sections");
      run.report.clear();
      for (const auto& s : r) {
        const std::string v = str(s, key("report"));
        if (std::find(kReportSections.begin(), kReportSections.end(), v) == kReportSections.end())
          error(s, key("report"),
                fmt::format(
                    "'{}' is not a report section{} (summary, pipes, memory, energy, ops, check)",
                    v, did_you_mean(v, kReportSections)));
        run.report.push_back(v);
      }
    }
  }

  /// A config override's value text. Overrides are parsed as YAML values and validated like the
  /// config file; a quoted scalar stays quoted (a string: rejected for numeric keys, as in the
  /// file).
  std::string override_text(const YAML::Node& n, const std::string& key) const {
    std::string value = str(n, key);
    if (n.IsScalar() && n.Tag() == "!") {
      std::string quoted = "\"";
      for (char c : value)
        quoted += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
      value = quoted + "\"";
    }
    return value;
  }

  std::string where_of(const YAML::Node& n, const std::string& key) const {
    const auto m = n.Mark();
    return m.line >= 0 ? fmt::format("{}:{}:{}: {}", file_, m.line + 1, m.column + 1, key)
                       : fmt::format("{}: {}", file_, key);
  }

  /// A design-space sweep (DseSpec): sweep, workloads, objectives, and the run keys that apply to
  /// every workload (name, description, schedule, graph_passes, tune).
  Experiment parse_dse(const YAML::Node& root) const {
    static const std::set<std::string> not_in_sweep = {"model",  "inputs", "hw",    "hw_set",
                                                       "runs",   "target", "check", "timing_only",
                                                       "report", "threads"};
    for (const auto& kv : root) {
      const std::string k = key_name(kv.first, "");
      if (not_in_sweep.count(k))
        error(kv.first, k,
              k == "hw" || k == "hw_set"
                  ? "does not apply to a sweep: its points override sweep.base (fixed values go "
                    "in sweep.grid with one value)"
              : k == "model" || k == "inputs" || k == "runs"
                  ? "does not apply to a sweep: give the models under workloads: [{model: ..., "
                    "inputs: {...}}]"
                  : "does not apply to a sweep (tessel dse compiles for the NPU and simulates "
                    "timing-only, without a check or a report section list)");
    }
    static const std::set<std::string> top = {"name",      "description",  "sweep",
                                              "workloads", "tune",         "objectives",
                                              "schedule",  "graph_passes", "hypervolume_reference",
                                              "screen"};
    Experiment ex;
    ex.source = file_;
    RunSpec base;
    run_keys(root, "", base, true, &top);
    ex.name = base.name.empty() ? fs::path(file_).stem().string() : base.name;
    if (root["description"]) ex.description = str(root["description"], "description");
    if (base.tune && !base.tune->log_path.empty())
      error(root["tune"]["log"], "tune.log",
            "does not apply to a sweep (every point tunes for its own config; give a budget)");
    if (base.tune && base.tune->budget == 0)
      error(root["tune"], "tune", "a sweep tunes with a budget > 0 (budget 0 applies a log)");
    DseSpec d;
    sweep(root["sweep"], d);
    base.hw = d.sweep.base;
    base.target = Target::npu;
    base.check = false;
    base.timing_only = true;
    // workloads
    const YAML::Node wl = root["workloads"];
    if (!wl) error(root, "workloads", "missing 'workloads' (the models every point runs)");
    if (!wl.IsSequence() || wl.size() == 0)
      error(wl, "workloads", "expected a non-empty list such as [{model: zoo:resnet50}]");
    static const std::set<std::string> wl_keys = {"name", "model", "inputs"};
    std::map<std::string, size_t> names;
    for (size_t i = 0; i < wl.size(); ++i) {
      const std::string where = fmt::format("workloads[{}]", i);
      RunSpec r = base;
      r.name.clear();
      r.model.clear();
      run_keys(wl[i], where, r, false, &wl_keys);
      if (r.model.empty()) error(wl[i], where, "missing 'model' (an ONNX file or zoo:NAME)");
      if (r.name.empty())
        r.name = r.model.rfind("zoo:", 0) == 0 ? r.model : fs::path(r.model).stem().string();
      const auto [it, fresh] = names.emplace(r.name, i);
      if (!fresh)
        error(wl[i], where,
              fmt::format("workload name '{}' is already the name of workloads[{}]; give one of "
                          "them a 'name:' (results are keyed by it)",
                          r.name, it->second));
      ex.runs.push_back(r);
    }
    if (root["objectives"]) {
      const YAML::Node o = root["objectives"];
      if (!o.IsSequence() || o.size() == 0)
        error(o, "objectives", "expected a list such as [cycles, area, energy]");
      d.objectives.clear();
      for (const auto& e : o) {
        const std::string v = str(e, "objectives");
        if (std::find(kDseObjectives.begin(), kDseObjectives.end(), v) == kDseObjectives.end())
          error(e, "objectives",
                fmt::format("'{}' is not an objective{} (cycles, area, energy, edp, dram_bytes)", v,
                            did_you_mean(v, kDseObjectives)));
        if (std::find(d.objectives.begin(), d.objectives.end(), v) != d.objectives.end())
          error(e, "objectives", fmt::format("'{}' given twice", v));
        d.objectives.push_back(v);
      }
    }
    if (root["hypervolume_reference"]) {
      const YAML::Node h = root["hypervolume_reference"];
      if (!h.IsMap())
        error(h, "hypervolume_reference",
              "expected a mapping objective -> value, e.g. {cycles: 4000000, dram_bytes: 2e8}");
      for (const auto& kv : h) {
        const std::string o = key_name(kv.first, "hypervolume_reference");
        const std::string k = "hypervolume_reference." + o;
        if (std::find(d.objectives.begin(), d.objectives.end(), o) == d.objectives.end())
          error(kv.first, k, "not one of this sweep's objectives");
        d.reference[o] = num(kv.second, k);
      }
    }
    if (root["screen"]) {
      const YAML::Node sc = root["screen"];
      if (!sc.IsMap()) error(sc, "screen", "expected a mapping such as {keep: 32}");
      check_keys(sc, "screen", {"keep"});
      if (d.sweep.search)
        error(sc, "screen",
              "does not apply with sweep.search (screening estimates every enumerated point and "
              "simulates the best; the search simulates the points it asks for)");
      if (!sc["keep"])
        error(sc, "screen", "missing 'keep' (how many of the best estimates to simulate)");
      d.screen_keep = integer(sc["keep"], "screen.keep");
      const int64_t n = dse::point_count(d.sweep);
      if (d.screen_keep < 1 || d.screen_keep > n)
        error(sc["keep"], "screen.keep",
              fmt::format("expected 1 .. {} (the points the sweep spans)", n));
      if (n < 2) error(sc, "screen", "a sweep of one point has nothing to screen: drop screen:");
    }
    ex.dse = std::move(d);
    return ex;
  }

  /// sweep: {base, grid, random, where} into d.sweep (every key checked against the schema, the
  /// constraints compiled against the base config).
  void sweep(const YAML::Node& sw, DseSpec& d) const {
    check_keys(sw, "sweep", {"base", "grid", "random", "where", "search"});
    dse::SweepSpec& spec = d.sweep;
    if (!sw["base"]) error(sw, "sweep", "missing 'base' (the hardware config the points override)");
    spec.base = path(sw["base"], "sweep.base", true);
    npu::HwConfig base_hw;
    try {
      base_hw = npu::load_hw_config(spec.base);
    } catch (const Error& e) {
      error(sw["base"], "sweep.base", e.what());
    }
    const std::vector<std::string> schema = npu::hw_config_keys();
    std::set<std::string> swept;
    auto check_key = [&](const YAML::Node& k, const std::string& where) {
      const std::string name = key_name(k, where);
      if (std::find(schema.begin(), schema.end(), name) == schema.end())
        error(k, where + "." + name,
              fmt::format("not a hardware config key{} (docs/hw_config.md lists them)",
                          did_you_mean(name, schema)));
      if (!swept.insert(name).second)
        error(k, where + "." + name, "swept twice (a key is either in grid or in random.ranges)");
      return name;
    };
    if (sw["grid"]) {
      const YAML::Node g = sw["grid"];
      if (!g.IsMap()) error(g, "sweep.grid", "expected a mapping KEY: [value, ...]");
      for (const auto& kv : g) {
        const std::string key = check_key(kv.first, "sweep.grid");
        const std::string k = "sweep.grid." + key;
        if (!kv.second.IsSequence() || kv.second.size() == 0)
          error(kv.second, k, "expected a non-empty list of values, e.g. [8, 16, 32]");
        dse::GridAxis axis;
        axis.key = key;
        for (const auto& v : kv.second) {
          if (!v.IsScalar()) error(v, k, "expected a list of plain values");
          axis.values.push_back(override_text(v, k));
        }
        spec.grid.push_back(axis);
      }
    }
    if (sw["search"]) {
      const YAML::Node se = sw["search"];
      check_keys(se, "sweep.search", {"algorithm", "population", "generations", "seed"});
      dse::SearchSpec sp;
      if (se["algorithm"] && str(se["algorithm"], "sweep.search.algorithm") != "nsga2")
        error(se["algorithm"], "sweep.search.algorithm",
              fmt::format("'{}' is not a search algorithm (nsga2)",
                          str(se["algorithm"], "sweep.search.algorithm")));
      for (const char* k : {"population", "generations"})
        if (!se[k]) error(se, "sweep.search", fmt::format("missing '{}'", k));
      sp.population = integer(se["population"], "sweep.search.population");
      if (sp.population < 8 || sp.population > 100000 || sp.population % 4 != 0)
        error(se["population"], "sweep.search.population",
              fmt::format("expected a multiple of 4 from 8 to 100000 (NSGA-II's tournament "
                          "pairs), got {}",
                          sp.population));
      sp.generations = integer(se["generations"], "sweep.search.generations");
      if (sp.generations < 1 || sp.generations > 100000)
        error(se["generations"], "sweep.search.generations", "expected 1 .. 100000");
      if (se["seed"]) {
        const int64_t v = integer(se["seed"], "sweep.search.seed");
        if (v < 0 || v > 0xffffffffLL)
          error(se["seed"], "sweep.search.seed", "expected 0 .. 4294967295");
        sp.seed = static_cast<uint64_t>(v);
      }
      spec.search = sp;
    }
    if (sw["random"]) {
      const YAML::Node r = sw["random"];
      check_keys(r, "sweep.random", {"samples", "seed", "method", "ranges"});
      if (spec.search) {
        for (const char* k : {"samples", "seed", "method"})
          if (r[k])
            error(r[k], std::string("sweep.random.") + k,
                  "does not apply with sweep.search (the search draws its own points from "
                  "random.ranges)");
      } else if (!r["samples"]) {
        error(r, "sweep.random", "missing 'samples' (how many random points)");
      } else {
        spec.samples = integer(r["samples"], "sweep.random.samples");
        if (spec.samples < 1 || spec.samples > 1000000)
          error(r["samples"], "sweep.random.samples", "expected 1 .. 1000000");
      }
      if (r["seed"]) {
        const int64_t seed = integer(r["seed"], "sweep.random.seed");
        if (seed < 0) error(r["seed"], "sweep.random.seed", "expected a non-negative integer");
        spec.seed = static_cast<uint64_t>(seed);
      }
      if (r["method"]) {
        const std::string m = str(r["method"], "sweep.random.method");
        if (m != "uniform" && m != "lhs")
          error(r["method"], "sweep.random.method",
                fmt::format("'{}' is not one of uniform, lhs (Latin hypercube)", m));
        spec.sampling = m == "lhs" ? dse::Sampling::lhs : dse::Sampling::uniform;
      }
      const YAML::Node ranges = r["ranges"];
      if (!ranges || !ranges.IsMap() || ranges.size() == 0)
        error(ranges ? ranges : r, "sweep.random.ranges",
              "expected a mapping KEY: [low, high] or [low, high, lin|log|pow2]");
      for (const auto& kv : ranges) {
        const std::string key = check_key(kv.first, "sweep.random.ranges");
        const std::string k = "sweep.random.ranges." + key;
        const YAML::Node v = kv.second;
        if (!v.IsSequence() || v.size() < 2 || v.size() > 3)
          error(v, k, "expected [low, high] or [low, high, lin|log|pow2]");
        dse::RangeAxis a;
        a.key = key;
        a.low = num(v[0], k);
        a.high = num(v[1], k);
        auto is_int = [](const YAML::Node& n) {
          int64_t i = 0;
          return YAML::convert<int64_t>::decode(n, i);
        };
        a.integer = is_int(v[0]) && is_int(v[1]);
        if (v.size() == 3) {
          const std::string sc = str(v[2], k);
          if (sc == "lin")
            a.scale = dse::Scale::lin;
          else if (sc == "log")
            a.scale = dse::Scale::log;
          else if (sc == "pow2")
            a.scale = dse::Scale::pow2;
          else
            error(v[2], k, fmt::format("'{}' is not one of lin, log, pow2", sc));
        }
        if (!(a.low < a.high))
          error(v, k, fmt::format("low ({}) must be below high ({})", a.low, a.high));
        if (a.scale != dse::Scale::lin && !(a.low > 0))
          error(v, k,
                fmt::format("a {} range needs low > 0, got {}", dse::scale_name(a.scale), a.low));
        if (a.scale == dse::Scale::pow2) {
          auto pow2 = [](double x) {
            return x >= 1 && x <= 0x1.0p62 && std::floor(x) == x &&
                   (static_cast<uint64_t>(x) & (static_cast<uint64_t>(x) - 1)) == 0;
          };
          if (!a.integer || !pow2(a.low) || !pow2(a.high))
            error(v, k,
                  fmt::format("a pow2 range needs powers of two as bounds, got [{}, {}]", a.low,
                              a.high));
        }
        spec.ranges.push_back(a);
      }
    }
    if (spec.search && spec.grid.empty() && spec.ranges.empty())
      error(sw["search"], "sweep.search", "nothing to search: give grid or random.ranges keys");
    if (!spec.search && dse::point_count(spec) > 1000000)
      error(sw, "sweep",
            fmt::format("spans {} points, more than the 1,000,000 a sweep enumerates; sample the "
                        "space with random: instead",
                        dse::point_count(spec)));
    if (sw["where"]) {
      const YAML::Node w = sw["where"];
      std::vector<YAML::Node> items;
      if (w.IsScalar()) {
        items.push_back(w);
      } else if (w.IsSequence()) {
        for (const auto& e : w) items.push_back(e);
      } else {
        error(w, "sweep.where", "expected a list of expressions over config keys");
      }
      for (size_t i = 0; i < items.size(); ++i) {
        const std::string k = w.IsScalar() ? "sweep.where" : fmt::format("sweep.where[{}]", i);
        spec.where.push_back(str(items[i], k));
        d.where_context.push_back(where_of(items[i], k));
      }
      // Compiled once here so a syntax error or an unknown key is an error of the file.
      dse::Constraints(spec.where, d.where_context,
                       dse::numeric_keys(hw_report_json(base_hw)["config"].dump()));
    }
  }

  /// NAME: {knob: integer, ...} per entry (an op name or a task key); the knob names and values
  /// are checked against the kernel's space when it is compiled.
  void knob_map(const YAML::Node& n, const std::string& key,
                std::map<std::string, passes::Knobs>& out) const {
    if (!n.IsMap()) error(n, key, "expected a mapping NAME -> {knob: value, ...}");
    for (const auto& kv : n) {
      const std::string name = kv.first.as<std::string>();
      const std::string k = key + "." + name;
      if (!kv.second.IsMap() || kv.second.size() == 0)
        error(kv.second, k, "expected a mapping of knob names to integers, e.g. {mt: 64, kc: 32}");
      passes::Knobs knobs;
      for (const auto& e : kv.second)
        knobs[e.first.as<std::string>()] = integer(e.second, k + "." + e.first.as<std::string>());
      out[name] = knobs;
    }
  }

  /// tune: {budget, strategy, oracle, seed, log, seconds, jobs}.
  tuner::TuneOptions tune(const YAML::Node& n, const std::string& key,
                          const std::optional<tuner::TuneOptions>& base) const {
    check_keys(n, key, {"budget", "strategy", "oracle", "seed", "log", "seconds", "jobs"});
    tuner::TuneOptions t = base.value_or(tuner::TuneOptions{});
    if (n["budget"]) {
      t.budget = integer(n["budget"], key + ".budget");
      if (t.budget < 0) error(n["budget"], key + ".budget", "expected a non-negative integer");
    }
    try {
      if (n["strategy"])
        t.strategy =
            tuner::parse_strategy(str(n["strategy"], key + ".strategy"), key + ".strategy");
      if (n["oracle"])
        t.oracle = tuner::parse_oracle(str(n["oracle"], key + ".oracle"), key + ".oracle");
    } catch (const Error& e) {
      error(n["strategy"] ? n["strategy"] : n["oracle"], key, e.what());
    }
    if (n["seed"]) {
      const int64_t v = integer(n["seed"], key + ".seed");
      if (v < 0) error(n["seed"], key + ".seed", "expected a non-negative integer");
      t.seed = static_cast<uint64_t>(v);
    }
    if (n["seconds"]) {
      t.seconds = num(n["seconds"], key + ".seconds");
      if (!(t.seconds >= 0)) error(n["seconds"], key + ".seconds", "expected seconds >= 0");
    }
    if (n["jobs"]) {
      const int64_t j = integer(n["jobs"], key + ".jobs");
      if (j < 1 || j > 256) error(n["jobs"], key + ".jobs", "expected 1..256 worker processes");
      t.jobs = static_cast<int>(j);
    }
    if (n["log"]) t.log_path = path(n["log"], key + ".log", false);
    if (t.budget == 0 && t.log_path.empty())
      error(n, key, "budget 0 only applies a log's records: give 'log' (or a budget > 0)");
    return t;
  }

  /// graph_passes: all | none | {disable: [NAME, ...]} (names from the default pipeline).
  void parse_graph_passes(const YAML::Node& n, const std::string& key, RunSpec& run) const {
    const auto names = graph_passes::default_pass_names();
    if (n.IsScalar()) {
      const std::string v = n.as<std::string>();
      if (v != "all" && v != "none")
        error(n, key, fmt::format("'{}' is not one of all, none, {{disable: [...]}}", v));
      run.graph_passes = v == "all";
      run.disabled_passes.clear();
      return;
    }
    if (!n.IsMap()) error(n, key, "expected all, none or {disable: [pass names]}");
    check_keys(n, key, {"disable"});
    const YAML::Node d = n["disable"];
    if (!d.IsSequence()) error(d, key + ".disable", "expected a list of pass names");
    run.graph_passes = true;
    run.disabled_passes.clear();
    for (const auto& e : d) {
      const std::string name = str(e, key + ".disable");
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        std::string list;
        for (const auto& p : names) list += (list.empty() ? "" : ", ") + p;
        error(e, key + ".disable",
              fmt::format("unknown graph pass '{}'{} (passes: {})", name, did_you_mean(name, names),
                          list));
      }
      run.disabled_passes.push_back(name);
    }
  }

  void finish(const YAML::Node& n, const std::string& where, RunSpec& run) const {
    if (run.model.empty()) error(n, where.empty() ? "model" : where, "missing 'model'");
    if (run.target == Target::ref && (n["hw"] || n["hw_set"]))
      error(n["hw"] ? n["hw"] : n["hw_set"], where.empty() ? "hw" : where + ".hw",
            "a hardware config is given but the target is ref (the reference interpreter uses "
            "none); remove it or set target: npu");
    if (run.target == Target::cpu && (n["hw"] || n["hw_set"]))
      error(n["hw"] ? n["hw"] : n["hw_set"], where.empty() ? "hw" : where + ".hw",
            "a hardware config is given but the target is cpu (the host CPU needs none); remove "
            "it or set target: npu");
    if ((run.target == Target::gpu || run.target == Target::gpu_emu) && (n["hw"] || n["hw_set"]))
      error(n["hw"] ? n["hw"] : n["hw_set"], where.empty() ? "hw" : where + ".hw",
            fmt::format("a hardware config is given but the target is {} (the GPU's properties "
                        "come from its driver); remove it or set target: npu",
                        target_name(run.target)));
    if (run.target == Target::npu && run.hw.empty())
      error(n, where.empty() ? "hw" : where, "target npu needs 'hw' (a hardware config file)");
    if (run.target != Target::npu && n["schedule"])
      error(n["schedule"], where.empty() ? "schedule" : where + ".schedule",
            "schedule knobs apply to target npu only");
    if (run.timing_only && run.target != Target::npu)
      error(n["timing_only"] ? n["timing_only"] : n,
            where.empty() ? "timing_only" : where + ".timing_only",
            fmt::format("timing_only applies to target npu only (this run's target is {}: it "
                        "computes the values in any case); remove it or set target: npu",
                        target_name(run.target)));
    if (run.target != Target::cpu && run.cpu_threads > 0)
      error(n["threads"] ? n["threads"] : n, where.empty() ? "threads" : where + ".threads",
            "threads applies to target cpu only (the host's threads running the compiled code)");
    if (run.target != Target::npu && run.tune)
      error(n["tune"] ? n["tune"] : n, where.empty() ? "tune" : where + ".tune",
            "tuning applies to target npu only");
    if (run.timing_only && run.check)
      error(n, where.empty() ? "timing_only" : where,
            "timing_only computes no values: set check: none");
  }

  Experiment parse(const std::string& text) const {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::ParserException& e) {
      fail("{}:{}:{}: YAML syntax error: {}", file_, e.mark.line + 1, e.mark.column + 1, e.msg);
    }
    if (!root.IsMap()) fail("{}: expected a YAML mapping at the top level", file_);
    if (root["sweep"]) return parse_dse(root);
    Experiment ex;
    ex.source = file_;
    RunSpec base;
    run_keys(root, "", base, true);
    ex.name = base.name.empty() ? fs::path(file_).stem().string() : base.name;
    if (root["description"]) ex.description = str(root["description"], "description");
    if (root["runs"]) {
      const YAML::Node runs = root["runs"];
      if (!runs.IsSequence() || runs.size() == 0)
        error(runs, "runs", "expected a non-empty list of runs");
      std::map<std::string, size_t> run_index;  // run name -> first run with it
      for (size_t i = 0; i < runs.size(); ++i) {
        RunSpec r = base;
        const std::string where = fmt::format("runs[{}]", i);
        run_keys(runs[i], where, r, false);
        if (r.name.empty() || r.name == base.name) r.name = fmt::format("{}#{}", ex.name, i);
        finish(runs[i], where, r);
        const auto [it, fresh] = run_index.emplace(r.name, i);
        if (!fresh)
          error(runs[i]["name"] ? runs[i]["name"] : runs[i], where + ".name",
                fmt::format("run name '{}' is already the name of runs[{}]; the report and the "
                            "output name runs by their names, so each must be unique",
                            r.name, it->second));
        ex.runs.push_back(r);
      }
    } else {
      if (base.name.empty()) base.name = ex.name;
      finish(root, "", base);
      ex.runs.push_back(base);
    }
    return ex;
  }

 private:
  std::string file_;
  fs::path dir_;
};

}  // namespace

Experiment load_experiment(const std::string& path) {
  if (!fs::is_regular_file(path))
    fail("{}: cannot open experiment file ({})", path,
         fs::exists(path) ? "not a regular file" : "no such file");
  std::ifstream f(path);
  if (!f) fail("{}: cannot open experiment file", path);
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_experiment(ss.str(), path);
}

Experiment parse_experiment(const std::string& yaml_text, const std::string& path) {
  return Parser(path).parse(yaml_text);
}

Tensor make_input(const InputSpec& spec, const std::string& context) {
  if (spec.fill == "file") {
    Tensor t;
    try {
      t = frontend::load_tensor_pb(spec.file);
    } catch (const Error& e) {
      fail("{}: {}", context, e.what());
    }
    if (!spec.shape.empty() && t.shape() != spec.shape)
      fail("{}: file {} holds shape {}, not {}", context, spec.file, shape_to_string(t.shape()),
           shape_to_string(spec.shape));
    return t.dtype() == DType::f32 ? t : t.cast(DType::f32);
  }
  int64_t n = 0;
  try {
    n = shape_numel(spec.shape);
  } catch (const Error& e) {
    fail("{}: {}", context, e.what());
  }
  if (n > kMaxTensorBytes / 4)
    fail("{}: shape {} needs {} bytes as fp32, more than the {} GiB tessel allows per tensor",
         context, shape_to_string(spec.shape), static_cast<double>(n) * 4, kMaxTensorBytes >> 30);
  std::vector<float> v(static_cast<size_t>(n), 0.0f);
  if (spec.fill == "uniform") {
    std::mt19937_64 rng(spec.seed);
    std::uniform_real_distribution<double> dist(spec.low, spec.high);
    for (auto& x : v) x = static_cast<float>(dist(rng));
  }
  return Tensor::from_floats(spec.shape, v);
}

}  // namespace tessel::driver
