// Tuning logs (see log.h).
#include "compiler/tuner/log.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "compiler/support/error.h"

#ifndef TESSEL_VERSION
#define TESSEL_VERSION "unknown"
#endif

namespace tessel::tuner {

using nlohmann::json;

const char* tessel_version() { return TESSEL_VERSION; }

std::string hw_hash(const npu::HwConfig& hw) {
  std::istringstream in(npu::hw_config_to_yaml(hw));
  std::string line, text;
  while (std::getline(in, line))
    if (line.rfind("name:", 0) != 0) text += line + "\n";
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

std::string trial_json(const TrialRecord& r) {
  json j = {{"type", "trial"},        {"run", r.run},       {"trial", r.trial},
            {"task", r.task},         {"kind", r.kind},     {"hw", r.hw},
            {"knobs", r.knobs},       {"cycles", r.cycles}, {"oracle", r.oracle},
            {"strategy", r.strategy}, {"seed", r.seed},     {"version", r.version}};
  if (!r.error.empty()) j["error"] = r.error;
  return j.dump();
}

TuningLog TuningLog::read(const std::string& path) {
  TuningLog log;
  log.path_ = path;
  std::ifstream f(path, std::ios::binary);
  if (!f) return log;  // a new log
  std::stringstream all;
  all << f.rdbuf();
  const std::string content = all.str();
  std::istringstream lines(content);
  std::string text;
  size_t n = 0;
  uint64_t offset = 0;
  auto bad = [&](const std::string& what) -> void {
    fail("{}:{}: {} (a tuning log has one JSON record per line, docs/tuning.md)", path, n, what);
  };
  while (std::getline(lines, text)) {
    ++n;
    const bool complete = offset + text.size() < content.size();  // a newline follows
    offset += text.size() + (complete ? 1 : 0);
    if (text.empty()) {
      if (complete) log.complete_bytes_ = offset;
      continue;
    }
    json j;
    try {
      j = json::parse(text);
    } catch (const json::exception& e) {
      if (!complete) break;  // the record a killed tune was writing: dropped
      bad(fmt::format("not a JSON object: {}", e.what()));
    }
    log.complete_bytes_ = offset;
    log.needs_newline_ = !complete;
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string())
      bad("expected an object with a string \"type\"");
    auto str = [&](const char* k) -> std::string {
      if (!j.contains(k) || !j[k].is_string()) bad(fmt::format("field \"{}\" must be a string", k));
      return j[k].get<std::string>();
    };
    auto uint = [&](const char* k) -> uint64_t {
      if (!j.contains(k) || !j[k].is_number_unsigned())
        bad(fmt::format("field \"{}\" must be a non-negative integer", k));
      return j[k].get<uint64_t>();
    };
    const std::string type = j["type"];
    if (type == "hw") {
      log.hw_[str("hw")] = str("config");
      continue;
    }
    if (type != "trial")
      bad(fmt::format("unknown record type \"{}\" (expected hw or trial)", type));
    TrialRecord r;
    r.line = n;
    r.run = str("run");
    r.trial = static_cast<int64_t>(uint("trial"));
    r.task = str("task");
    r.kind = str("kind");
    r.hw = str("hw");
    r.cycles = uint("cycles");
    r.oracle = str("oracle");
    r.strategy = str("strategy");
    r.seed = uint("seed");
    r.version = str("version");
    if (j.contains("error")) r.error = str("error");
    if (!j.contains("knobs") || !j["knobs"].is_object())
      bad("field \"knobs\" must be an object of knob name -> integer");
    for (const auto& [k, v] : j["knobs"].items()) {
      if (!v.is_number_integer())
        bad(fmt::format("knob \"{}\" must be an integer, got {}", k, v.dump()));
      r.knobs[k] = v.get<int64_t>();
    }
    if (r.ok() && r.cycles == 0) bad("a trial without \"error\" needs \"cycles\" > 0");
    log.trials_.push_back(std::move(r));
  }
  return log;
}

std::map<std::string, const TrialRecord*> TuningLog::best(const std::string& hw_hash) const {
  std::map<std::string, const TrialRecord*> best;
  auto better = [](const TrialRecord& a, const TrialRecord* b) {
    if (!b) return true;
    const bool sa = a.oracle == "sim", sb = b->oracle == "sim";
    if (sa != sb) return sa;
    return a.cycles < b->cycles;
  };
  for (const auto& r : trials_) {
    if (r.hw != hw_hash || !r.ok()) continue;
    const TrialRecord*& b = best[r.task];
    if (better(r, b)) b = &r;
  }
  return best;
}

std::vector<const TrialRecord*> TuningLog::run_trials(const std::string& run) const {
  std::vector<const TrialRecord*> out;
  for (const auto& r : trials_)
    if (r.run == run) out.push_back(&r);
  return out;
}

std::map<std::string, npu_backend::TaskKnobs> log_knobs(const TuningLog& log,
                                                        const npu::HwConfig& hw) {
  std::map<std::string, npu_backend::TaskKnobs> out;
  for (const auto& [task, r] : log.best(hw_hash(hw)))
    out[task] = {r->knobs, npu_backend::KnobSource::log, fmt::format("{}:{}", log.path(), r->line)};
  return out;
}

LogWriter::LogWriter(const std::string& path, const TuningLog* existing) : path_(path) {
  std::error_code ec;
  if (existing && std::filesystem::exists(path, ec) &&
      std::filesystem::file_size(path, ec) > existing->complete_bytes()) {
    std::filesystem::resize_file(path, existing->complete_bytes(), ec);
    if (ec)
      fail("cannot cut the incomplete last record of tuning log '{}': {}", path, ec.message());
  }
  f_ = std::fopen(path.c_str(), "a");
  if (!f_) fail("cannot open tuning log '{}' for appending: {}", path, std::strerror(errno));
  if (existing && existing->needs_newline()) line("");
}

LogWriter::~LogWriter() {
  if (f_) std::fclose(f_);
}

void LogWriter::line(const std::string& text) {
  if (std::fputs((text.empty() ? std::string("\n") : text + "\n").c_str(), f_) < 0 ||
      std::fflush(f_) != 0)
    fail("cannot write tuning log '{}': {}", path_, std::strerror(errno));
}

void LogWriter::hw(const npu::HwConfig& hw, const TuningLog& existing) {
  const std::string h = hw_hash(hw);
  if (existing.hw_configs().count(h)) return;
  json j = {{"type", "hw"}, {"hw", h}, {"name", hw.name}, {"config", npu::hw_config_to_yaml(hw)}};
  line(j.dump());
}

void LogWriter::trial(const TrialRecord& r) { line(trial_json(r)); }

}  // namespace tessel::tuner
