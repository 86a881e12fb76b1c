// The learned cost model (see learned.h).
#include "compiler/tuner/learned.h"

#include <fmt/format.h>
#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "compiler/support/error.h"

namespace tessel::tuner {

namespace {

void check(int rc, const char* what) {
  if (rc != 0) fail("learned cost model: {} failed: {}", what, XGBGetLastError());
}

float rel(double a, double b) { return static_cast<float>(b > 0 ? a / b : 0.0); }
float log_rel(double a, double b) {
  return static_cast<float>(std::log2(std::max(a, 1.0) / std::max(b, 1.0)));
}

constexpr isa::Pipe kPipes[] = {isa::Pipe::scalar, isa::Pipe::mte2, isa::Pipe::mte1,
                                isa::Pipe::cube,   isa::Pipe::fix,  isa::Pipe::vector,
                                isa::Pipe::mte3};

}  // namespace

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n = {"log_estimate_over_roofline",
                                  "log_core_over_roofline",
                                  "log_dram_over_roofline",
                                  "core_over_estimate",
                                  "dram_over_estimate",
                                  "chain_over_estimate",
                                  "steady_tiles_over_estimate",
                                  "exposed_over_estimate",
                                  "log_tiles",
                                  "log_chain",
                                  "cores_used_fraction",
                                  "double_buffer",
                                  "resident",
                                  "kind_conv",
                                  "kind_matmul",
                                  "kind_vector",
                                  "bound_dram",
                                  "bound_latency"};
    for (isa::Pipe p : kPipes) n.push_back(fmt::format("busy_{}_over_estimate", isa::pipe_name(p)));
    for (isa::Pipe p : kPipes) n.push_back(fmt::format("busy_{}_over_core", isa::pipe_name(p)));
    return n;
  }();
  return names;
}

std::vector<float> point_features(const npu::HwConfig& hw, const std::string& kind,
                                  const passes::Knobs& knobs, const npu::KernelProfile& profile,
                                  const npu::CostEstimate& e, double roofline_cycles) {
  std::vector<float> f;
  f.push_back(log_rel(e.cycles, roofline_cycles));
  f.push_back(log_rel(e.core_cycles, roofline_cycles));
  f.push_back(log_rel(e.dram_cycles, roofline_cycles));
  f.push_back(rel(e.core_cycles, e.cycles));
  f.push_back(rel(e.dram_cycles, e.cycles));
  f.push_back(rel(e.chain_cycles, e.cycles));
  f.push_back(rel(e.steady_tile_cycles * profile.tiles, e.cycles));
  f.push_back(rel(e.exposed_cycles, e.cycles));
  f.push_back(static_cast<float>(std::log2(std::max(1.0, profile.tiles))));
  f.push_back(static_cast<float>(std::log2(std::max(1.0, e.chain_cycles))));
  f.push_back(rel(profile.cores_used, std::max(1, hw.cores)));
  f.push_back(profile.double_buffer ? 1.f : 0.f);
  auto knob = [&](const char* k) {
    auto it = knobs.find(k);
    return it == knobs.end() ? 0.f : static_cast<float>(it->second);
  };
  f.push_back(std::max(knob("weights_resident"), knob("a_resident")));
  f.push_back(kind == "conv" ? 1.f : 0.f);
  f.push_back(kind == "matmul" ? 1.f : 0.f);
  f.push_back(kind == "vector" ? 1.f : 0.f);
  f.push_back(std::string(e.bound) == "dram" ? 1.f : 0.f);
  f.push_back(std::string(e.bound) == "latency" ? 1.f : 0.f);
  for (isa::Pipe p : kPipes) f.push_back(rel(e.busy[static_cast<int>(p)], e.cycles));
  for (isa::Pipe p : kPipes) f.push_back(rel(e.busy[static_cast<int>(p)], e.core_cycles));
  return f;
}

LearnedModel::LearnedModel() = default;

LearnedModel::~LearnedModel() {
  if (booster_) XGBoosterFree(booster_);
}

void LearnedModel::train(const std::vector<Example>& examples, int rounds, uint64_t seed) {
  if (examples.empty()) return;
  // XGBoost's ranking wants each group's rows contiguous: order by group (stable).
  std::vector<size_t> order(examples.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return examples[a].group < examples[b].group; });
  const size_t cols = examples.front().features.size();
  std::vector<float> data, label;
  std::vector<unsigned> groups;
  std::map<uint32_t, std::vector<double>> cycles_of;
  for (size_t i : order) cycles_of[examples[i].group].push_back(examples[i].cycles);
  uint32_t prev = 0;
  for (size_t n = 0; n < order.size(); ++n) {
    const Example& ex = examples[order[n]];
    data.insert(data.end(), ex.features.begin(), ex.features.end());
    // Relevance: higher for faster points; the ranking objective needs only the order within a
    // group, so the label is the point's rank from the slowest (0) up.
    const auto& cs = cycles_of[ex.group];
    const double slower = static_cast<double>(
        std::count_if(cs.begin(), cs.end(), [&](double c) { return c > ex.cycles; }));
    label.push_back(static_cast<float>(slower));
    if (n == 0 || ex.group != prev) groups.push_back(0);
    ++groups.back();
    prev = ex.group;
  }
  DMatrixHandle dm = nullptr;
  check(XGDMatrixCreateFromMat(data.data(), order.size(), cols, NAN, &dm),
        "XGDMatrixCreateFromMat");
  check(XGDMatrixSetFloatInfo(dm, "label", label.data(), label.size()), "set label");
  check(XGDMatrixSetUIntInfo(dm, "group", groups.data(), groups.size()), "set group");
  if (booster_) {
    XGBoosterFree(booster_);
    booster_ = nullptr;
  }
  BoosterHandle b = nullptr;
  check(XGBoosterCreate(&dm, 1, &b), "XGBoosterCreate");
  const std::string seed_text = std::to_string(seed % 2147483647);
  const std::pair<const char*, const char*> params[] = {
      {"objective", "rank:pairwise"}, {"eta", "0.3"},     {"max_depth", "6"},
      {"min_child_weight", "1"},      {"subsample", "1"}, {"nthread", "1"},
      {"seed", seed_text.c_str()},    {"verbosity", "0"}, {"tree_method", "exact"}};
  for (const auto& [k, v] : params) check(XGBoosterSetParam(b, k, v), "XGBoosterSetParam");
  for (int i = 0; i < rounds; ++i)
    check(XGBoosterUpdateOneIter(b, i, dm), "XGBoosterUpdateOneIter");
  XGDMatrixFree(dm);
  booster_ = b;
}

std::vector<double> LearnedModel::score(const std::vector<std::vector<float>>& rows) const {
  std::vector<double> out(rows.size(), 0.0);
  if (!booster_ || rows.empty()) return out;
  const size_t cols = rows.front().size();
  std::vector<float> data;
  data.reserve(rows.size() * cols);
  for (const auto& r : rows) data.insert(data.end(), r.begin(), r.end());
  DMatrixHandle dm = nullptr;
  check(XGDMatrixCreateFromMat(data.data(), rows.size(), cols, NAN, &dm), "XGDMatrixCreateFromMat");
  bst_ulong len = 0;
  const float* pred = nullptr;
  check(XGBoosterPredict(booster_, dm, 0, 0, 0, &len, &pred), "XGBoosterPredict");
  for (size_t i = 0; i < rows.size() && i < len; ++i) out[i] = -static_cast<double>(pred[i]);
  XGDMatrixFree(dm);
  return out;
}

double pairwise_accuracy(const std::vector<Example>& ex, const std::vector<double>& s) {
  std::map<uint32_t, std::vector<size_t>> groups;
  for (size_t i = 0; i < ex.size(); ++i) groups[ex[i].group].push_back(i);
  double good = 0, total = 0;
  for (const auto& [g, idx] : groups)
    for (size_t a = 0; a < idx.size(); ++a)
      for (size_t b = a + 1; b < idx.size(); ++b) {
        const size_t i = idx[a], j = idx[b];
        if (ex[i].cycles == ex[j].cycles) continue;
        total += 1;
        if (s[i] == s[j]) {
          good += 0.5;
        } else if ((s[i] < s[j]) == (ex[i].cycles < ex[j].cycles)) {
          good += 1;
        }
      }
  return total > 0 ? good / total : 1.0;
}

double top_k_recall(const std::vector<Example>& ex, const std::vector<double>& s, size_t k) {
  std::map<uint32_t, std::vector<size_t>> groups;
  for (size_t i = 0; i < ex.size(); ++i) groups[ex[i].group].push_back(i);
  double hit = 0;
  for (auto& [g, idx] : groups) {
    const size_t best = *std::min_element(
        idx.begin(), idx.end(), [&](size_t a, size_t b) { return ex[a].cycles < ex[b].cycles; });
    std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return s[a] < s[b]; });
    for (size_t r = 0; r < idx.size() && r < k; ++r)
      if (ex[idx[r]].cycles == ex[best].cycles) {
        hit += 1;
        break;
      }
  }
  return groups.empty() ? 1.0 : hit / static_cast<double>(groups.size());
}

}  // namespace tessel::tuner
