// results.csv, pareto.csv and the gnuplot plots of a sweep (see report.h).
#include "compiler/dse/report.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "compiler/dse/pareto.h"
#include "compiler/support/error.h"

extern char** environ;

namespace tessel::dse {

namespace fs = std::filesystem;

std::optional<double> objective_value(const Row& r, const std::string& name) {
  if (r.status != "ok") return std::nullopt;
  auto from_int = [](const std::optional<int64_t>& v) -> std::optional<double> {
    if (!v) return std::nullopt;
    return static_cast<double>(*v);
  };
  if (name == "cycles") return from_int(r.total_cycles);
  if (name == "dram_bytes") return from_int(r.dram_bytes);
  if (name == "area") return r.area_mm2;
  if (name == "energy") return r.energy_uj;
  if (name == "edp") return r.edp;
  internal_fail("unknown objective '{}'", name);
}

namespace {

std::string opt_text(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : ""; }
std::string opt_text(const std::optional<double>& v) { return v ? fmt::format("{}", *v) : ""; }

std::string csv_header(const std::vector<std::string>& keys) {
  std::string h = "point,workload";
  for (const auto& k : keys) h += "," + csv_field(k);
  return h +
         ",status,reason,total_cycles,area_mm2,energy_uj,edp,efficiency,bound,dram_bytes,"
         "config_sha256,tessel_version";
}

std::string csv_line(const Row& r) {
  std::string l = std::to_string(r.point) + "," + csv_field(r.workload);
  for (const auto& v : r.values) l += "," + csv_field(v);
  l += "," + r.status + "," + csv_field(r.reason) + "," + opt_text(r.total_cycles) + "," +
       opt_text(r.area_mm2) + "," + opt_text(r.energy_uj) + "," + opt_text(r.edp) + "," +
       opt_text(r.efficiency) + "," + r.bound + "," + opt_text(r.dram_bytes) + "," +
       r.config_sha256 + "," + csv_field(r.tessel_version);
  return l;
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  if (!f) fail("{}: cannot write", p.string());
}

/// Runs `gnuplot SCRIPT`; "" on success, else why not.
/// Its output goes to gnuplot.log beside the script.
std::string run_gnuplot(const fs::path& script) {
  const std::string prog = "gnuplot", arg = script.string();
  const std::string log = (script.parent_path() / "gnuplot.log").string();
  char* argv[] = {const_cast<char*>(prog.c_str()), const_cast<char*>(arg.c_str()), nullptr};
  pid_t pid = 0;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  const int rc = posix_spawnp(&pid, "gnuplot", &fa, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return fmt::format("cannot run gnuplot ({})", std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) return "gnuplot is not installed";
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return fmt::format("gnuplot failed on {} (see {})", script.string(), log);
  return "";
}

const std::map<std::string, std::string> kAxisLabel = {{"cycles", "total cycles"},
                                                       {"area", "area (mm^2)"},
                                                       {"energy", "energy (uJ)"},
                                                       {"edp", "EDP (uJ x s)"},
                                                       {"dram_bytes", "DRAM bytes"}};

}  // namespace

std::string results_csv(const std::vector<std::string>& keys, const std::vector<Row>& rows) {
  std::string out = csv_header(keys) + "\n";
  for (const auto& r : rows) out += csv_line(r) + "\n";
  return out;
}

std::vector<Front> pareto_fronts(const std::vector<Row>& rows,
                                 const std::vector<std::string>& objectives) {
  std::vector<std::string> workloads;
  for (const auto& r : rows)
    if (std::find(workloads.begin(), workloads.end(), r.workload) == workloads.end())
      workloads.push_back(r.workload);
  std::vector<Front> fronts;
  for (const auto& w : workloads)
    for (size_t i = 0; i < objectives.size(); ++i)
      for (size_t j = i + 1; j < objectives.size(); ++j) {
        Front f;
        f.workload = w;
        f.x = objectives[i];
        f.y = objectives[j];
        std::vector<size_t> idx;
        std::vector<std::vector<double>> pts;
        for (size_t k = 0; k < rows.size(); ++k) {
          if (rows[k].workload != w) continue;
          const auto x = objective_value(rows[k], f.x), y = objective_value(rows[k], f.y);
          if (!x || !y) continue;
          idx.push_back(k);
          pts.push_back({*x, *y});
        }
        f.candidates = idx.size();
        std::vector<size_t> front_pts = pareto_front(pts);
        std::sort(front_pts.begin(), front_pts.end(), [&](size_t a, size_t b) {
          if (pts[a] != pts[b]) return pts[a] < pts[b];
          return rows[idx[a]].point < rows[idx[b]].point;
        });
        for (size_t p : front_pts) f.rows.push_back(idx[p]);
        fronts.push_back(std::move(f));
      }
  return fronts;
}

std::string pareto_csv(const std::vector<std::string>& keys, const std::vector<Row>& rows,
                       const std::vector<Front>& fronts) {
  std::string out = "objectives," + csv_header(keys) + "\n";
  for (const auto& f : fronts)
    for (size_t k : f.rows) out += csv_field(f.x + "," + f.y) + "," + csv_line(rows[k]) + "\n";
  return out;
}

std::string file_stem(const std::string& workload) {
  std::string s;
  for (char c : workload) s += std::isalnum(static_cast<unsigned char>(c)) || c == '-' ? c : '_';
  return s;
}

Plots write_plots(const std::string& dir_s, const std::vector<Row>& rows,
                  const std::vector<Front>& fronts) {
  Plots plots;
  const fs::path dir(dir_s), pdir = dir / "plots";
  fs::create_directories(pdir);
  std::map<std::string, bool> bound_drawn;
  std::string gnuplot_error;
  for (const auto& f : fronts) {
    if (f.x != "cycles") continue;
    if (f.candidates == 0) continue;  // the caller says which objectives have no values
    const std::string stem = file_stem(f.workload) + "_cycles_vs_" + f.y;
    std::string all = "# total_cycles " + f.y + " point\n", front = all;
    for (size_t k = 0; k < rows.size(); ++k) {
      if (rows[k].workload != f.workload) continue;
      const auto x = objective_value(rows[k], f.x), y = objective_value(rows[k], f.y);
      if (x && y) all += fmt::format("{} {} {}\n", *x, *y, rows[k].point);
    }
    for (size_t k : f.rows)
      front += fmt::format("{} {} {}\n", *objective_value(rows[k], f.x),
                           *objective_value(rows[k], f.y), rows[k].point);
    write_text(pdir / (stem + "_all.dat"), all);
    write_text(pdir / (stem + "_front.dat"), front);
    const fs::path png = dir / (stem + ".png");
    const std::string gp = fmt::format(
        "# {} on {}: every ok design point, the Pareto front (both minimised) as a step line.\n"
        "set terminal pngcairo size 900,600 font ',10' noenhanced\n"
        "set output '{}'\n"
        "set title '{}: {} vs {} ({} points, {} on the front)'\n"
        "set xlabel '{}'\nset ylabel '{}'\nset grid\nset key top right\n"
        "plot '{}' using 1:2 with points pt 7 ps 0.6 lc rgb '#9a9a9a' title 'design points', \\\n"
        "     '{}' using 1:2 with steps lw 2 lc rgb '#d62728' title 'Pareto front', \\\n"
        "     '' using 1:2 with points pt 7 ps 1.1 lc rgb '#d62728' notitle, \\\n"
        "     '' using 1:2:3 with labels offset 0.8,0.8 font ',8' notitle\n",
        f.y, f.workload, png.string(), f.workload, kAxisLabel.at(f.x), kAxisLabel.at(f.y),
        f.candidates, f.rows.size(), kAxisLabel.at(f.x), kAxisLabel.at(f.y),
        (pdir / (stem + "_all.dat")).string(), (pdir / (stem + "_front.dat")).string());
    const fs::path script = pdir / (stem + ".gp");
    write_text(script, gp);
    if (gnuplot_error.empty()) gnuplot_error = run_gnuplot(script);
    if (gnuplot_error.empty()) plots.png.push_back(png.string());
    // What bounds each front point: stacked shares of cycles per unit (the first front only).
    if (bound_drawn[f.workload]) continue;
    bound_drawn[f.workload] = true;
    std::vector<std::string> units;
    std::vector<nlohmann::json> shares;
    for (size_t k : f.rows) {
      shares.push_back(rows[k].bound_shares.empty() ? nlohmann::json::object()
                                                    : nlohmann::json::parse(rows[k].bound_shares));
      for (const auto& [u, v] : shares.back().items())
        if (std::find(units.begin(), units.end(), u) == units.end()) units.push_back(u);
    }
    std::sort(units.begin(), units.end());
    if (units.empty()) continue;
    std::string dat = "point";
    for (const auto& u : units) dat += " " + u;
    dat += "\n";
    for (size_t i = 0; i < f.rows.size(); ++i) {
      dat += std::to_string(rows[f.rows[i]].point);
      for (const auto& u : units) dat += fmt::format(" {}", shares[i].value(u, 0.0));
      dat += "\n";
    }
    const std::string bstem = file_stem(f.workload) + "_bound";
    write_text(pdir / (bstem + ".dat"), dat);
    const fs::path bpng = dir / (bstem + ".png");
    std::string plot;
    for (size_t u = 0; u < units.size(); ++u)
      plot += fmt::format("{}'{}' using {}{} title '{}'", u ? ", \\\n     " : "",
                          (pdir / (bstem + ".dat")).string(), u + 2, u == 0 ? ":xtic(1)" : "",
                          units[u]);
    const std::string bgp = fmt::format(
        "# {}: per point of the cycles-vs-{} front, the share of the cycles of the ops each unit\n"
        "# bounds (roofline bound per op, weighted by the op's simulated cycles).\n"
        "set terminal pngcairo size 900,500 font ',10' noenhanced\n"
        "set output '{}'\n"
        "set title '{}: what bounds each front point (cycles vs {})'\n"
        "set style data histograms\nset style histogram rowstacked\n"
        "set style fill solid 0.85 border -1\nset boxwidth 0.7\nset yrange [0:1]\n"
        "set xlabel 'design point (on the front, fewest cycles first)'\n"
        "set ylabel 'share of cycles'\nset key outside right\n"
        "plot {}\n",
        f.workload, f.y, bpng.string(), f.workload, f.y, plot);
    const fs::path bscript = pdir / (bstem + ".gp");
    write_text(bscript, bgp);
    if (gnuplot_error.empty()) gnuplot_error = run_gnuplot(bscript);
    if (gnuplot_error.empty()) plots.png.push_back(bpng.string());
  }
  if (!gnuplot_error.empty())
    plots.notes.push_back(
        fmt::format("{}: plots not drawn (their scripts are in {})", gnuplot_error, pdir.string()));
  return plots;
}

}  // namespace tessel::dse
