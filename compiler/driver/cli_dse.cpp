// `tessel dse EXPERIMENT.yaml --out DIR [--jobs N] [--resume]`: hardware design-space exploration
// (docs/dse.md). The experiment's sweep (compiler/dse/sweep.h) spans design points, each a list of
// --hw-set overrides of sweep.base; every point runs every workload the way `tessel sim
// --timing-only --hw-set K=V ...` runs a model (the same import, graph passes, compile_for_npu
// with the measured default or the experiment's tune:, run_model), so a point's cycles are the
// cycles that command prints.
//
// Points are validated in this process (a config that does not validate is recorded as invalid,
// `where:` constraints drop points before they run); each (point, workload) then runs in a forked
// worker process (SystemC keeps its kernel in process globals, so workers are processes, never
// threads), which sends its result back on a pipe; only this process writes the database, one
// transaction per row, so a kill at any moment loses at most the rows in flight and --resume
// skips every stored row. A worker that throws records an error row; one killed by a signal
// records an error row too unless this sweep was interrupted (then the row is left to --resume).
#include <fmt/format.h>
// The C API only (OpenMPI's deprecated C++ bindings need another library).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "compiler/driver/cli.h"
#include "compiler/driver/commands.h"
#include "compiler/driver/experiment.h"
#include "compiler/driver/hw_json.h"
#include "compiler/driver/report.h"
#include "compiler/dse/pareto.h"
#include "compiler/dse/report.h"
#include "compiler/dse/screen.h"
#include "compiler/dse/search.h"
#include "compiler/dse/store.h"
#include "compiler/dse/where.h"
#include "compiler/support/error.h"
#include "compiler/tuner/log.h"

namespace tessel::driver {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

/// A workload, imported once in this process (the workers see it through fork).
struct Workload {
  const RunSpec* run = nullptr;
  std::unique_ptr<Graph> graph;
  std::map<std::string, Tensor> inputs;
};

/// Imports a workload as `tessel sim` imports its model: the given input shapes (others: the
/// model's own static ones, uniform values, seed 0) and the default graph passes with the run's
/// graph_passes settings.
Workload prepare_workload(const RunSpec& r, size_t index, const Experiment& ex, std::ostream& err) {
  Workload w;
  w.run = &r;
  const std::string where = fmt::format("{}: workloads[{}] ({})", ex.source, index, r.name);
  std::map<std::string, Shape> shapes;
  std::map<std::string, std::vector<double>> values;
  for (const auto& [name, spec] : r.inputs) {
    if (spec.has_value) {
      values[name] = spec.value;
      if (!spec.shape.empty()) shapes[name] = spec.shape;
      continue;
    }
    Tensor t = make_input(spec, fmt::format("{}: inputs.{}", where, name));
    shapes[name] = t.shape();
    w.inputs[name] = std::move(t);
  }
  graph_passes::PipelineOptions passes = pipeline_options(GraphPassArgs{}, err);
  passes.enabled = r.graph_passes;
  passes.disabled.insert(r.disabled_passes.begin(), r.disabled_passes.end());
  passes.available = target_ops(Target::npu);
  const auto hint = [index](const std::string& name, const std::string& dims) {
    return fmt::format(
        "the experiment key workloads[{}].inputs.{}, e.g. inputs: {{{}: {{shape: "
        "[{}]}}}}",
        index, name, name, dims);
  };
  try {
    w.graph = load_model(r.model, shapes, passes, values, hint);
  } catch (const Error& e) {
    fail("{}: {}", where, e.what());
  }
  for (const Value* v : w.graph->inputs)
    if (!w.inputs.count(v->name) && !values.count(v->name)) {
      InputSpec in;  // uniform in [-1, 1), seed 0, as tessel sim
      in.shape = v->shape;
      w.inputs[v->name] = make_input(in, fmt::format("{}: input {}", where, v->name));
    }
  return w;
}

/// What a worker sends back: the row's result fields as JSON.
json evaluate(const Workload& w, const npu::HwConfig& hw, const std::string& source) {
  const auto t0 = std::chrono::steady_clock::now();
  json res;
  try {
    RunOptions opts;
    opts.timing_only = true;
    opts.compile = run_compile_options(*w.run, source);
    if (w.run->tune) opts.schedule.tune = *w.run->tune;
    opts.compiled = std::make_shared<CompiledNpu>(
        compile_for_npu(*w.graph, hw, opts.compile, opts.schedule, "model " + w.run->model));
    const RunOutput out = run_model(*w.graph, Target::npu, &hw, w.inputs, opts);
    const json j = npu_run_json(*out.npu, hw);
    // What bounds the point: each op's roofline bound unit, weighted by its simulated cycles.
    std::map<std::string, double> shares;
    double op_cycles = 0;
    std::vector<const json*> ops;
    for (const auto& o : j["ops"])
      if (o.contains("bound")) {
        shares[o["bound"].get<std::string>()] += o["cycles"].get<double>();
        op_cycles += o["cycles"].get<double>();
        ops.push_back(&o);
      }
    std::string bound;
    double best = -1;
    json sj = json::object();
    for (auto& [unit, c] : shares) {
      if (c > best) best = c, bound = unit;
      sj[unit] = op_cycles > 0 ? c / op_cycles : 0.0;
    }
    std::stable_sort(ops.begin(), ops.end(), [](const json* a, const json* b) {
      return (*a)["cycles"].get<uint64_t>() > (*b)["cycles"].get<uint64_t>();
    });
    json top = json::array();
    for (size_t i = 0; i < ops.size() && i < 8; ++i) {
      const json& o = *ops[i];
      top.push_back({{"name", o["name"]},
                     {"op_type", o["op_type"]},
                     {"cycles", o["cycles"]},
                     {"share", op_cycles > 0 ? o["cycles"].get<double>() / op_cycles : 0.0},
                     {"bound", o["bound"]},
                     {"efficiency", o["efficiency"]}});
    }
    // The largest stalls: per op, the cycles the pipe that bounds it (its roofline bound; MTE2,
    // the GM loads, for a DRAM- or L2-bound op) sat idle during the op, per core on average: op
    // cycles x (1 - that pipe's utilisation over the op), beside the op's busiest pipe.
    struct Stall {
      double idle;
      const json* op;
      std::string pipe, busiest;
      double busiest_util;
    };
    std::vector<Stall> stalls;
    for (const json* o : ops) {
      if (!o->contains("per_pipe_utilization")) continue;
      const json& u = (*o)["per_pipe_utilization"];
      const std::string b = (*o)["bound"];
      const std::string pipe = b == "dram" || b == "l2" ? "mte2" : b;
      if (!u.contains(pipe)) continue;
      Stall st{(*o)["cycles"].get<double>() * (1 - u[pipe].get<double>()), o, pipe, "", -1};
      for (const auto& [name, v] : u.items())
        if (v.get<double>() > st.busiest_util) st.busiest_util = v.get<double>(), st.busiest = name;
      stalls.push_back(st);
    }
    std::stable_sort(stalls.begin(), stalls.end(),
                     [](const Stall& a, const Stall& b) { return a.idle > b.idle; });
    json top_stalls = json::array();
    for (size_t i = 0; i < stalls.size() && i < 5; ++i) {
      const Stall& st = stalls[i];
      top_stalls.push_back({{"name", (*st.op)["name"]},
                            {"op_type", (*st.op)["op_type"]},
                            {"bound", (*st.op)["bound"]},
                            {"pipe", st.pipe},
                            {"idle_cycles", std::llround(st.idle)},
                            {"share", op_cycles > 0 ? st.idle / op_cycles : 0.0},
                            {"busiest", st.busiest},
                            {"busiest_utilization", st.busiest_util}});
    }
    json detail = {{"per_pipe_utilization", j["per_pipe_utilization"]},
                   {"top_ops", top},
                   {"top_stalls", top_stalls}};
    if (j.contains("area_energy")) detail["area_energy"] = j["area_energy"];
    res = {{"status", "ok"},
           {"total_cycles", j["total_cycles"]},
           {"efficiency", j["efficiency"]},
           {"dram_bytes", j["dram_bytes"]["total"]},
           {"bound", bound},
           {"bound_shares", sj.dump()},
           {"detail", detail.dump()}};
    // Area, energy and EDP (npu_model/area_energy.h), when the report has them.
    for (const char* k : {"area_mm2", "energy_uj", "edp_uj_s"})
      if (j.contains(k)) res[k] = j[k];
  } catch (const Error& e) {
    res = {{"status", "error"}, {"reason", e.what()}};
  } catch (const std::bad_alloc&) {
    res = {{"status", "error"}, {"reason", "out of host memory"}};
  } catch (const std::exception& e) {
    res = {{"status", "error"},
           {"reason", fmt::format("internal error (a tessel bug): {}", e.what())}};
  }
  res["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

/// A design point as this process plans it.
struct Planned {
  dse::Point point;
  std::optional<npu::HwConfig> hw;  // absent: the config does not validate
  std::string invalid;              // why not
  std::string config, sha256;       // the resolved config (hw_report_json's "config") and hash
  bool excluded = false;            // a where: constraint does not hold
};

/// A running worker.
struct Child {
  pid_t pid = -1;
  int fd = -1;
  size_t unit = 0;
  std::string data;
};

void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    const ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

std::string duration_text(double s) {
  if (s < 90) return fmt::format("{:.0f} s", s);
  if (s < 5400) return fmt::format("{:.0f} min", s / 60);
  return fmt::format("{:.1f} h", s / 3600);
}

/// MPI (Debian's OpenMPI) when tessel dse runs under mpirun with more than one rank: rank 0 plans,
/// hands (point, workload) units to the other ranks and is the only one writing the store; each
/// other rank evaluates one unit at a time in its own process and sends the result back.
class Mpi {
 public:
  enum Tag { unit = 1, result = 2, stop = 3 };
  /// True when mpirun (or another PMI launcher) started this process with more than one rank.
  static bool launched() {
    const char* n = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (!n) n = std::getenv("PMI_SIZE");
    return n && std::atoi(n) > 1;
  }
  Mpi() {
    MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~Mpi() { MPI_Finalize(); }
  Mpi(const Mpi&) = delete;
  Mpi& operator=(const Mpi&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  void send(int to, Tag tag, const std::string& text) const {
    MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD);
  }
  /// Whether a message with `tag` is waiting (any source).
  bool waiting(Tag tag) const {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    return flag != 0;
  }
  /// The next message with one of `tags` (blocking): {source, tag, text}.
  std::tuple<int, int, std::string> receive(std::initializer_list<Tag> tags) const {
    MPI_Status st;
    while (true) {
      for (Tag t : tags) {
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, t, MPI_COMM_WORLD, &flag, &st);
        if (!flag) continue;
        int n = 0;
        MPI_Get_count(&st, MPI_CHAR, &n);
        std::string text(static_cast<size_t>(n), '\0');
        MPI_Recv(text.data(), n, MPI_CHAR, st.MPI_SOURCE, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return {st.MPI_SOURCE, t, text};
      }
      ::usleep(1000);
    }
  }
  /// Ends every rank at once with `code` (an error on one rank; the others wait on messages).
  [[noreturn]] void abort(int code) const {
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 private:
  int rank_ = 0, size_ = 1;
};

/// One sweep's points running on forked workers; only this process writes the store. Rows
/// already stored (a resume) are kept and not rerun.
class Sweep {
 public:
  Sweep(const Experiment& ex, const std::vector<std::string>& keys,
        const std::vector<Workload>& workloads, dse::ResultStore& store,
        const dse::Constraints& where, int jobs, const RunInterrupt& interrupt, std::ostream& err,
        const Mpi* mpi)
      : ex_(ex),
        keys_(keys),
        workloads_(workloads),
        store_(store),
        where_(where),
        jobs_(jobs),
        interrupt_(interrupt),
        err_(err),
        progress_(&err == &std::cerr && ::isatty(2)),
        t0_(std::chrono::steady_clock::now()),
        mpi_(mpi) {
    for (auto& r : store_.rows()) {
      ++stored_;
      by_point_[r.point].push_back(std::move(r));
    }
  }

  /// `p` with its config validated and the where: constraints evaluated.
  Planned plan(dse::Point p) const {
    Planned pl;
    pl.point = std::move(p);
    std::vector<npu::HwOverride> ov;
    for (size_t k = 0; k < keys_.size(); ++k) ov.push_back({keys_[k], pl.point.values[k]});
    try {
      pl.hw = npu::load_hw_config(ex_.dse->sweep.base, ov);
    } catch (const Error& e) {
      pl.invalid = e.what();
    }
    if (pl.hw) {
      const json hj = hw_report_json(*pl.hw);
      pl.config = hj["config"].dump();
      pl.sha256 = hj["sha256"];
      pl.excluded = where_.violated(dse::numeric_keys(pl.config)) >= 0;
    }
    return pl;
  }

  /// Runs every workload of every planned point that is not stored yet (not excluded ones):
  /// invalid configs are recorded here, the rest on the workers, each row committed as it
  /// finishes. `expected` is the number of rows the progress line counts towards. Stops
  /// launching on SIGINT (interrupted()).
  void run(const std::vector<Planned>& points, size_t expected) {
    struct Unit {
      size_t point, workload;
    };
    std::vector<Unit> units;
    for (size_t i = 0; i < points.size(); ++i) {
      if (points[i].excluded) continue;
      for (size_t w = 0; w < workloads_.size(); ++w) {
        if (has(points[i].point.index, w)) continue;
        if (!points[i].hw) {
          dse::Row r = row_of(points[i], w);
          r.status = "invalid";
          r.reason = points[i].invalid;
          commit(std::move(r));
          continue;
        }
        units.push_back({i, w});
      }
    }
    expected_ = std::max(expected_, expected);
    // A finished unit: its row from the worker's result (or why there is none), committed.
    auto finish = [&](const Unit& u, const json& res, const std::string& failure) {
      dse::Row r = row_of(points[u.point], u.workload);
      if (res.is_object()) {
        r.status = res["status"];
        r.reason = res.value("reason", "");
        if (r.status == "ok") {
          r.total_cycles = res["total_cycles"].get<int64_t>();
          r.efficiency = res["efficiency"].get<double>();
          r.dram_bytes = res["dram_bytes"].get<int64_t>();
          r.bound = res["bound"];
          r.bound_shares = res["bound_shares"];
          r.detail = res["detail"];
          if (res.contains("area_mm2")) r.area_mm2 = res["area_mm2"].get<double>();
          if (res.contains("energy_uj")) r.energy_uj = res["energy_uj"].get<double>();
          if (res.contains("edp_uj_s")) r.edp = res["edp_uj_s"].get<double>();
        }
        r.seconds = res["seconds"];
      } else {
        r.status = "error";
        r.reason = failure;
      }
      commit(std::move(r));
      ++finished_;
      show_progress();
    };
    if (mpi_) {
      // Ranks 1..size-1 each take one unit at a time.
      std::vector<int> idle;
      for (int rk = mpi_->size() - 1; rk >= 1; --rk) idle.push_back(rk);
      std::map<int, size_t> busy;  // rank -> unit
      size_t next = 0;
      while (next < units.size() || !busy.empty()) {
        while (!interrupt_.requested() && !idle.empty() && next < units.size()) {
          const Unit& u = units[next];
          const int rk = idle.back();
          idle.pop_back();
          mpi_->send(
              rk, Mpi::unit,
              json{{"workload", u.workload}, {"values", points[u.point].point.values}}.dump());
          busy[rk] = next++;
        }
        if (busy.empty()) break;
        const auto [from, tag, text] = mpi_->receive({Mpi::result});
        json res;
        try {
          res = json::parse(text);
        } catch (const json::exception&) {
        }
        finish(units[busy.at(from)], res, "rank " + std::to_string(from) + " sent no result");
        busy.erase(from);
        idle.push_back(from);
      }
      if (progress_) err_ << "\r" << std::string(70, ' ') << "\r" << std::flush;
      return;
    }
    std::vector<Child> running;
    size_t next = 0;
    while (next < units.size() || !running.empty()) {
      while (!interrupt_.requested() && running.size() < static_cast<size_t>(jobs_) &&
             next < units.size()) {
        const Unit u = units[next];
        int fds[2];
        if (::pipe(fds) != 0) fail("tessel dse: cannot create a pipe: {}", std::strerror(errno));
        std::cout.flush();
        const pid_t pid = ::fork();
        if (pid < 0) fail("tessel dse: cannot fork a worker: {}", std::strerror(errno));
        if (pid == 0) {
          // The worker: finish the point even on Ctrl-C (the parent decides), report, exit
          // without running this process's atexit handlers or flushing its buffers.
          ::signal(SIGINT, SIG_IGN);
          ::close(fds[0]);
          for (const Child& c : running) ::close(c.fd);
          const json res = evaluate(workloads_[u.workload], *points[u.point].hw, ex_.source);
          write_all(fds[1], res.dump());
          ::_exit(0);
        }
        ::close(fds[1]);
        running.push_back({pid, fds[0], next, ""});
        ++next;
      }
      if (running.empty()) break;
      std::vector<pollfd> pfds;
      for (const Child& c : running) pfds.push_back({c.fd, POLLIN, 0});
      if (::poll(pfds.data(), pfds.size(), 500) < 0 && errno != EINTR)
        fail("tessel dse: poll: {}", std::strerror(errno));
      for (size_t i = running.size(); i-- > 0;) {
        if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        Child& c = running[i];
        char buf[65536];
        const ssize_t n = ::read(c.fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n > 0) {
          c.data.append(buf, static_cast<size_t>(n));
          continue;
        }
        // EOF: the worker is done (or died).
        ::close(c.fd);
        int status = 0;
        while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
        }
        json res;
        try {
          res = json::parse(c.data);
        } catch (const json::exception&) {
        }
        finish(units[c.unit], res,
               WIFSIGNALED(status)
                   ? fmt::format("the worker died of signal {} ({})", WTERMSIG(status),
                                 strsignal(WTERMSIG(status)))
                   : fmt::format("the worker exited with status {} without a result",
                                 WIFEXITED(status) ? WEXITSTATUS(status) : -1));
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
    if (progress_) err_ << "\r" << std::string(70, ' ') << "\r" << std::flush;
  }

  /// The stored rows of point `index` (empty when none).
  const std::vector<dse::Row>& rows_of(int64_t index) const {
    static const std::vector<dse::Row> none;
    const auto it = by_point_.find(index);
    return it == by_point_.end() ? none : it->second;
  }
  bool interrupted() const { return interrupt_.requested(); }
  size_t stored() const { return stored_; }
  size_t finished() const { return finished_; }
  size_t rows_seen() const {
    size_t n = 0;
    for (const auto& [p, rows] : by_point_) n += rows.size();
    return n;
  }
  size_t workloads() const { return workloads_.size(); }

 private:
  bool has(int64_t point, size_t w) const {
    for (const auto& r : rows_of(point))
      if (r.workload_index == static_cast<int64_t>(w)) return true;
    return false;
  }
  dse::Row row_of(const Planned& pl, size_t w) const {
    dse::Row r;
    r.point = pl.point.index;
    r.workload = ex_.runs[w].name;
    r.workload_index = static_cast<int64_t>(w);
    r.values = pl.point.values;
    r.config = pl.config;
    r.config_sha256 = pl.sha256;
    r.tessel_version = tuner::tessel_version();
    return r;
  }
  void commit(dse::Row r) {
    store_.insert(r);
    by_point_[r.point].push_back(std::move(r));
  }
  void show_progress() {
    if (!progress_) return;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    const double rate = s > 0 ? finished_ / s : 0;
    const size_t left = expected_ > finished_ ? expected_ - finished_ : 0;
    const std::string eta = rate > 0 ? duration_text(static_cast<double>(left) / rate) : "?";
    err_ << fmt::format("\rdse: {}/{} point runs, {:.2f}/s, ETA {}   ", finished_, expected_, rate,
                        eta)
         << std::flush;
  }

  const Experiment& ex_;
  const std::vector<std::string>& keys_;
  const std::vector<Workload>& workloads_;
  dse::ResultStore& store_;
  const dse::Constraints& where_;
  int jobs_;
  const RunInterrupt& interrupt_;
  std::ostream& err_;
  bool progress_;
  std::chrono::steady_clock::time_point t0_;
  std::map<int64_t, std::vector<dse::Row>> by_point_;
  size_t stored_ = 0, finished_ = 0, expected_ = 0;
  const Mpi* mpi_;
};

/// The analytical screening of a sweep's points (compiler/dse/screen.h): every point x workload
/// estimated, the `keep` points with the lowest estimates chosen for simulation.
struct Screening {
  std::vector<dse::ScreenRow> rows;  // every point not dropped by where:, x every workload
  std::vector<int64_t> kept;         // point numbers to simulate, in order
  std::map<std::pair<int64_t, int64_t>, double> estimates;  // (point, workload) -> cycles
  size_t excluded = 0, anchors = 0, structural_configs = 0, estimates_made = 0;
  double anchor_seconds = 0, estimate_seconds = 0;
};

/// Screens `points`: groups them by their structural values (every swept key but the per-point
/// keys, dse::screen_point_keys) and, when the DRAM bandwidth or latency is swept, its octave
/// (dse::bandwidth_octave) and band (dse::latency_band); lowers each group's config once per
/// workload (dse::lower_anchor, at the octave's bandwidth and the band's latency, else the base
/// config's values), then estimates every point in
/// a loop and keeps the `keep` points with the lowest geometric mean of the workloads' estimates
/// (ties: the lower point number). A group whose config does not validate makes its points
/// `invalid`, one that does not lower an `error` on that workload; neither is kept.
Screening screen_points(const Experiment& ex, const std::vector<std::string>& keys,
                        const std::vector<Workload>& workloads, const dse::Constraints& where,
                        const std::vector<dse::Point>& points, int64_t keep) {
  const DseSpec& d = *ex.dse;
  Screening sc;
  std::vector<size_t> structural, per_point;
  for (size_t k = 0; k < keys.size(); ++k)
    (dse::is_screen_point_key(keys[k]) ? per_point : structural).push_back(k);
  struct Anchor {
    std::optional<npu::HwConfig> hw;  // the working copy: per-point keys set per point
    std::string invalid;
    std::map<std::string, double> vars;  // numeric keys of the config, for where:
    std::vector<std::optional<dse::ScreenAnchor>> lowered;  // per workload
    std::vector<std::string> errors;                        // per workload
  };
  std::map<std::vector<std::string>, size_t> anchor_of;
  std::vector<Anchor> anchors;
  std::vector<size_t> point_anchor(points.size());
  const auto ta = std::chrono::steady_clock::now();
  // The swept DRAM bandwidth and latency, if any: the bandwidth's octave and the latency's band
  // are part of a point's anchor (screen.h).
  std::optional<size_t> bandwidth_key, latency_key;
  for (size_t k : per_point) {
    if (keys[k] == "memory.dram.bytes_per_cycle") bandwidth_key = k;
    if (keys[k] == "memory.dram.latency_cycles") latency_key = k;
  }
  std::set<std::vector<std::string>> structural_configs;
  for (size_t i = 0; i < points.size(); ++i) {
    std::vector<std::string> sv;
    for (size_t k : structural) sv.push_back(points[i].values[k]);
    structural_configs.insert(sv);
    std::optional<int> octave;
    if (bandwidth_key) {
      // A value that is not a number is reported per point below; it shares octave 0's anchor.
      double bpc = 0;
      try {
        bpc = std::stod(points[i].values[*bandwidth_key]);
      } catch (const std::exception&) {
      }
      octave = dse::bandwidth_octave(bpc);
      sv.push_back(std::to_string(*octave));
    }
    std::optional<int> band;
    if (latency_key) {
      double cycles = 0;  // not a number: reported per point below, band 0's anchor
      try {
        cycles = std::stod(points[i].values[*latency_key]);
      } catch (const std::exception&) {
      }
      band = dse::latency_band(cycles);
      sv.push_back("latency band " + std::to_string(*band));
    }
    auto [it, fresh] = anchor_of.emplace(sv, anchors.size());
    point_anchor[i] = it->second;
    if (!fresh) continue;
    Anchor a;
    std::vector<npu::HwOverride> ov;
    for (size_t j = 0; j < structural.size(); ++j) ov.push_back({keys[structural[j]], sv[j]});
    if (octave)
      ov.push_back(
          {"memory.dram.bytes_per_cycle", std::to_string(dse::octave_bytes_per_cycle(*octave))});
    if (band)
      ov.push_back({"memory.dram.latency_cycles", std::to_string(dse::band_latency_cycles(*band))});
    try {
      a.hw = npu::load_hw_config(d.sweep.base, ov);
    } catch (const Error& e) {
      a.invalid = e.what();
    }
    if (a.hw) {
      a.vars = dse::numeric_keys(hw_report_json(*a.hw)["config"].dump());
      for (size_t w = 0; w < workloads.size(); ++w) {
        try {
          a.lowered.push_back(dse::lower_anchor(*workloads[w].graph, *a.hw,
                                                run_compile_options(*workloads[w].run, ex.source)));
          a.errors.emplace_back();
        } catch (const Error& e) {
          a.lowered.emplace_back();
          a.errors.push_back(e.what());
        }
      }
    }
    anchors.push_back(std::move(a));
  }
  sc.anchors = anchors.size();
  sc.structural_configs = structural_configs.size();
  sc.anchor_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - ta).count();

  // The estimates: per point, set the per-point keys on its anchor's config and price it.
  const auto te = std::chrono::steady_clock::now();
  dse::ScreenScratch scratch;
  std::vector<double> score(points.size(), std::numeric_limits<double>::infinity());
  std::vector<bool> excluded(points.size(), false);
  size_t current = SIZE_MAX;
  std::vector<double*> where_vars;
  for (size_t k : per_point) where_vars.push_back(where.size() ? where.variable(keys[k]) : nullptr);
  for (size_t i = 0; i < points.size(); ++i) {
    Anchor& a = anchors[point_anchor[i]];
    const dse::Point& p = points[i];
    std::string invalid = a.invalid;
    std::vector<double> pv;
    if (a.hw) {
      try {
        for (size_t j = 0; j < per_point.size(); ++j) {
          pv.push_back(std::stod(p.values[per_point[j]]));
          dse::set_screen_point_key(*a.hw, keys[per_point[j]], pv.back());
        }
      } catch (const Error& e) {
        invalid = e.what();
      } catch (const std::exception&) {
        invalid = fmt::format("screening: a value of {} is not a number", keys[per_point[0]]);
      }
    }
    if (invalid.empty() && where.size()) {
      if (current != point_anchor[i]) where.assign(a.vars), current = point_anchor[i];
      for (size_t j = 0; j < per_point.size(); ++j)
        if (where_vars[j]) *where_vars[j] = pv[j];
      if (where.violated_now() >= 0) {
        excluded[i] = true;
        ++sc.excluded;
        continue;
      }
    }
    double log_sum = 0;
    bool all = invalid.empty();
    for (size_t w = 0; w < workloads.size(); ++w) {
      dse::ScreenRow r;
      r.point = p.index;
      r.workload = ex.runs[w].name;
      r.workload_index = static_cast<int64_t>(w);
      r.values = p.values;
      if (!invalid.empty()) {
        r.status = "invalid";
        r.reason = invalid;
      } else if (!a.lowered[w]) {
        r.status = "error";
        r.reason = a.errors[w];
        all = false;
      } else {
        const double c = dse::estimate_cycles(*a.lowered[w], *a.hw, scratch);
        ++sc.estimates_made;
        r.status = "estimated";
        r.estimated_cycles = c;
        sc.estimates[{p.index, r.workload_index}] = c;
        log_sum += std::log(std::max(c, 1.0));
      }
      sc.rows.push_back(std::move(r));
    }
    if (all) score[i] = log_sum / static_cast<double>(workloads.size());
  }
  sc.estimate_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - te).count();
  std::vector<size_t> order;
  for (size_t i = 0; i < points.size(); ++i)
    if (!excluded[i] && std::isfinite(score[i])) order.push_back(i);
  const size_t n = std::min(order.size(), static_cast<size_t>(keep));
  std::partial_sort(
      order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
      [&](size_t a, size_t b) { return score[a] != score[b] ? score[a] < score[b] : a < b; });
  order.resize(n);
  std::sort(order.begin(), order.end());
  const std::set<int64_t> kept_set = [&] {
    std::set<int64_t> s;
    for (size_t i : order) s.insert(points[i].index);
    return s;
  }();
  for (auto& r : sc.rows) r.simulated = kept_set.count(r.point) > 0;
  for (size_t i : order) sc.kept.push_back(points[i].index);
  return sc;
}

/// DIR/screen.csv: every screened point x workload with its estimate, and for the simulated ones
/// the simulated cycles (fidelity "simulated"; the others "estimate").
std::string screen_csv(const std::vector<std::string>& keys, const Screening& sc,
                       const std::vector<dse::Row>& rows) {
  std::map<std::pair<int64_t, int64_t>, const dse::Row*> sim;
  for (const auto& r : rows) sim[{r.point, r.workload_index}] = &r;
  std::string out = "point,workload";
  for (const auto& k : keys) {
    out += ',';
    out += dse::csv_field(k);
  }
  out += ",status,reason,estimated_cycles,fidelity,total_cycles\n";
  for (const auto& r : sc.rows) {
    out += fmt::format("{},{}", r.point, dse::csv_field(r.workload));
    for (const auto& v : r.values) {
      out += ',';
      out += dse::csv_field(v);
    }
    const auto it = sim.find({r.point, r.workload_index});
    const dse::Row* s = it == sim.end() ? nullptr : it->second;
    out += fmt::format(",{},{},{},{},{}\n", r.status, dse::csv_field(r.reason),
                       r.estimated_cycles ? fmt::format("{:.0f}", *r.estimated_cycles) : "",
                       r.simulated ? "simulated" : "estimate",
                       s && s->total_cycles ? std::to_string(*s->total_cycles) : "");
  }
  return out;
}

/// The canonical JSON of everything that decides a sweep's rows (a --resume must match it).
json canonical_experiment(const Experiment& ex, const npu::HwConfig& base_hw) {
  const DseSpec& d = *ex.dse;
  json grid = json::array(), ranges = json::array(), workloads = json::array();
  for (const auto& g : d.sweep.grid) grid.push_back({{"key", g.key}, {"values", g.values}});
  for (const auto& r : d.sweep.ranges)
    ranges.push_back({{"key", r.key},
                      {"low", r.low},
                      {"high", r.high},
                      {"scale", dse::scale_name(r.scale)},
                      {"integer", r.integer}});
  for (const auto& r : ex.runs) {
    json in = json::object();
    for (const auto& [n, s] : r.inputs)
      in[n] = {{"shape", s.shape}, {"value", s.value}, {"fill", s.fill}, {"file", s.file}};
    json tune = nullptr;
    if (r.tune)
      tune = {{"budget", r.tune->budget},
              {"strategy", tuner::strategy_name(r.tune->strategy)},
              {"oracle", tuner::oracle_name(r.tune->oracle)},
              {"seed", r.tune->seed},
              {"seconds", r.tune->seconds}};
    workloads.push_back(
        {{"name", r.name},
         {"model", r.model},
         {"inputs", in},
         {"graph_passes", {{"enabled", r.graph_passes}, {"disabled", r.disabled_passes}}},
         {"schedule",
          {{"double_buffer", r.double_buffer},
           {"multicore", r.multicore},
           {"ops", r.op_knobs},
           {"tasks", r.task_knobs}}},
         {"tune", tune}});
  }
  json canon = {{"base", {{"file", d.sweep.base}, {"sha256", hw_report_json(base_hw)["sha256"]}}},
                {"grid", grid},
                {"ranges", ranges},
                {"samples", d.sweep.samples},
                {"seed", d.sweep.seed},
                {"sampling", dse::sampling_name(d.sweep.sampling)},
                {"where", d.sweep.where},
                {"search", d.sweep.search ? json{{"algorithm", "nsga2"},
                                                 {"population", d.sweep.search->population},
                                                 {"generations", d.sweep.search->generations},
                                                 {"seed", d.sweep.search->seed}}
                                          : json(nullptr)},
                {"workloads", workloads}};
  if (d.screen_keep > 0) canon["screen"] = {{"keep", d.screen_keep}};
  return canon;
}

/// Thrown out of a search's batch on SIGINT (the search stops; what finished is stored).
struct SearchInterrupted {};

/// Runs the sweep's NSGA-II search (compiler/dse/search.h) on `sweep`: each generation's new
/// points run as one batch on the workers. A point's fitness is, per objective, the geometric
/// mean over the workloads; a point that is invalid, dropped by where:, failed, or lacks an
/// objective's value gets 1e300 in every objective. Points are numbered in the order the search
/// first asks for them, so a resumed search (which replays the same batches, taking stored rows)
/// numbers them the same. Returns the summary lines.
std::string search(Sweep& sweep, const DseSpec& d) {
  const dse::SweepSpec& spec = d.sweep;
  std::map<std::vector<std::string>, int64_t> index;
  std::vector<Planned> plans;  // by point number
  size_t evaluations = 0;
  const dse::BatchFitness fitness = [&](const std::vector<std::vector<double>>& xs) {
    if (sweep.interrupted()) throw SearchInterrupted{};
    std::vector<Planned> batch;
    std::vector<int64_t> ids;
    for (const auto& x : xs) {
      const auto values = dse::decode(spec, x);
      auto [it, fresh] = index.emplace(values, static_cast<int64_t>(index.size()));
      if (fresh) {
        plans.push_back(sweep.plan({it->second, values}));
        for (const auto& r : sweep.rows_of(it->second))
          if (r.values != values)
            fail(
                "--resume: stored point {} has other values than the search now asks for (the "
                "search diverged from the stored run); start a new --out",
                it->second);
        batch.push_back(plans.back());
      }
      ids.push_back(it->second);
    }
    evaluations += xs.size();
    sweep.run(batch, spec.search->population * (spec.search->generations + 1) * sweep.workloads());
    if (sweep.interrupted()) throw SearchInterrupted{};
    std::vector<std::vector<double>> out;
    for (int64_t id : ids) {
      std::vector<double> f(d.objectives.size(), 0.0);
      const auto& rows = sweep.rows_of(id);
      bool ok = !plans[static_cast<size_t>(id)].excluded && rows.size() == sweep.workloads();
      for (size_t o = 0; o < d.objectives.size() && ok; ++o) {
        double log_sum = 0;
        for (const auto& r : rows) {
          const auto v = dse::objective_value(r, d.objectives[o]);
          if (!v || !(*v > 0)) {
            ok = false;
            break;
          }
          log_sum += std::log(*v);
        }
        f[o] = std::exp(log_sum / static_cast<double>(rows.size()));
      }
      if (!ok) std::fill(f.begin(), f.end(), 1e300);
      out.push_back(f);
    }
    return out;
  };
  try {
    dse::nsga2(spec, d.objectives.size(), fitness);
  } catch (const SearchInterrupted&) {
  }
  return fmt::format("  search: {} evaluations asked for {} distinct points\n", evaluations,
                     index.size());
}

int explain(const DseArgs& args, std::ostream& out) {
  const std::string dir = args.explain[0], point_s = args.explain[1];
  int64_t point = -1;
  try {
    size_t end = 0;
    point = std::stoll(point_s, &end);
    if (end != point_s.size() || point < 0) point = -1;
  } catch (const std::exception&) {
  }
  if (point < 0)
    fail("--explain {} {}: POINT must be a point number (results.csv's column point)", dir,
         point_s);
  const dse::ResultStore store =
      dse::ResultStore::open((fs::path(dir) / "results.sqlite").string());
  std::vector<dse::Row> rows;
  for (auto& r : store.rows())
    if (r.point == point) rows.push_back(std::move(r));
  if (rows.empty()) {
    // A screened sweep's point that was estimated but not simulated: its estimates.
    const auto screened = store.screen_rows(point);
    if (screened.empty())
      fail("--explain: {} has no point {} (not in the sweep, dropped by where:, or not run yet)",
           dir, point);
    out << fmt::format("point {}", point);
    for (size_t k = 0; k < store.keys().size(); ++k)
      out << fmt::format("{} {}={}", k ? "," : ":", store.keys()[k], screened[0].values[k]);
    out << "\n";
    for (const auto& r : screened)
      out << fmt::format(
          "\nworkload {}: screened, not simulated: {}\n", r.workload,
          r.estimated_cycles
              ? fmt::format("estimated {} cycles (analytical model)",
                            with_commas(std::stoull(fmt::format("{:.0f}", *r.estimated_cycles))))
              : fmt::format("{} ({})", r.status, r.reason));
    return 0;
  }
  out << fmt::format("point {}", point);
  for (size_t k = 0; k < store.keys().size(); ++k)
    out << fmt::format("{} {}={}", k ? "," : ":", store.keys()[k], rows[0].values[k]);
  out << "\n";
  for (const auto& r : rows) {
    out << fmt::format("\nworkload {}: {}", r.workload, r.status);
    if (r.status != "ok") {
      out << fmt::format(" ({})\n", r.reason);
      continue;
    }
    out << fmt::format(", {} cycles, efficiency {:.1f}% (roofline / simulated), bound by {}\n",
                       with_commas(static_cast<uint64_t>(*r.total_cycles)), 100 * *r.efficiency,
                       r.bound);
    const json shares = json::parse(r.bound_shares), detail = json::parse(r.detail);
    std::vector<std::pair<double, std::string>> sorted;
    for (const auto& [u, v] : shares.items()) sorted.emplace_back(v.get<double>(), u);
    std::sort(sorted.rbegin(), sorted.rend());
    Table units({"bound unit", "share of op cycles", "pipe utilisation"});
    for (const auto& [v, u] : sorted) {
      const json& util = detail["per_pipe_utilization"];
      units.add({u, fmt::format("{:.1f}%", 100 * v),
                 util.contains(u) ? fmt::format("{:.1f}%", 100 * util[u].get<double>()) : "-"});
    }
    out << units.str();
    Table ops({"op", "type", "cycles", "share", "bound", "efficiency"});
    for (const auto& o : detail["top_ops"])
      ops.add({o["name"].get<std::string>(), o["op_type"].get<std::string>(),
               with_commas(o["cycles"].get<uint64_t>()),
               fmt::format("{:.1f}%", 100 * o["share"].get<double>()),
               o["bound"].get<std::string>(),
               fmt::format("{:.1f}%", 100 * o["efficiency"].get<double>())});
    out << "\n  the ops with the most cycles:\n" << ops.str();
    if (detail.contains("top_stalls") && !detail["top_stalls"].empty()) {
      Table st({"op", "type", "bound", "idle pipe", "idle cycles", "share", "busiest pipe"});
      for (const auto& o : detail["top_stalls"])
        st.add({o["name"].get<std::string>(), o["op_type"].get<std::string>(),
                o["bound"].get<std::string>(), o["pipe"].get<std::string>(),
                with_commas(o["idle_cycles"].get<uint64_t>()),
                fmt::format("{:.1f}%", 100 * o["share"].get<double>()),
                fmt::format("{} {:.1f}%", o["busiest"].get<std::string>(),
                            100 * o["busiest_utilization"].get<double>())});
      out << "\n  the largest stalls (cycles the pipe bounding an op sat idle during it, per core;"
             "\n  share: of all op cycles):\n"
          << st.str();
    }
    if (detail.contains("area_energy")) {
      const json& ae = detail["area_energy"];
      out << fmt::format("\n  area {:.3f} mm2, energy {:.3f} uJ, EDP {:.4g} uJ*s (tech {}):\n",
                         r.area_mm2.value_or(0), r.energy_uj.value_or(0), r.edp.value_or(0),
                         ae.value("tech", std::string("?")));
      Table comp({"component", "area mm2", "energy uJ"});
      for (const auto& c : ae["components"])
        comp.add({c["name"].get<std::string>(), fmt::format("{:.3f}", c["area_mm2"].get<double>()),
                  fmt::format("{:.3f}", c["energy_uj"].get<double>())});
      out << comp.str();
    }
  }
  return 0;
}

}  // namespace

int cmd_dse(const DseArgs& args, std::ostream& out, std::ostream& err) {
  std::unique_ptr<Mpi> mpi;
  try {
    if (Mpi::launched()) {
      if (!args.explain.empty()) fail("--explain reads a finished sweep: run it without mpirun");
      mpi = std::make_unique<Mpi>();
    }
  } catch (const Error& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  }
  const bool worker = mpi && mpi->rank() > 0;
  // Rank 0 tells the other ranks to stop when it returns, whatever the path.
  struct StopWorkers {
    const Mpi* mpi;
    ~StopWorkers() {
      if (mpi && mpi->rank() == 0)
        for (int rk = 1; rk < mpi->size(); ++rk) mpi->send(rk, Mpi::stop, "");
    }
  } stop_workers{mpi.get()};
  try {
    if (!args.explain.empty()) {
      if (!args.experiment.empty() || !args.out.empty() || args.resume || args.jobs != 1)
        fail("--explain DIR POINT reads a finished sweep: drop {}", !args.experiment.empty()
                                                                        ? "the experiment file"
                                                                    : !args.out.empty() ? "--out"
                                                                    : args.resume       ? "--resume"
                                                                                        : "--jobs");
      return explain(args, out);
    }
    if (args.experiment.empty())
      fail("give the experiment file: tessel dse EXPERIMENT.yaml --out DIR");
    if (args.out.empty())
      fail("--out DIR is required (where results.sqlite, the CSVs and plots go)");
    if (args.jobs < 1 || args.jobs > 256)
      fail("--jobs {}: expected 1..256 worker processes", args.jobs);
    if (mpi && args.jobs != 1)
      fail(
          "--jobs {} does not apply under mpirun: each rank but rank 0 runs one point at a time "
          "(start more ranks with mpirun -np N)",
          args.jobs);
    const fs::path dir(args.out);
    const fs::path db_path = dir / "results.sqlite";
    if (worker) {
      // The directory is rank 0's (it may create it while this rank starts).
    } else if (args.resume && !fs::is_directory(dir))
      fail("--resume: {} does not exist (no sweep to continue; run without --resume to start one)",
           args.out);
    // Only rank 0 checks: it creates results.sqlite, possibly before a worker rank gets here.
    if (!worker && !args.resume && fs::exists(db_path))
      fail(
          "{} exists already (a sweep ran there): continue it with --resume, or give another --out",
          db_path.string());
    if (!worker && fs::exists(dir) && !fs::is_directory(dir))
      fail("--out {}: not a directory", args.out);

    const Experiment ex = load_experiment(args.experiment);
    if (!ex.dse)
      fail("{}: no sweep: key (tessel dse explores hardware configs; tessel run runs this file)",
           ex.source);
    const DseSpec& d = *ex.dse;
    const std::vector<std::string> keys = dse::swept_keys(d.sweep);
    // Everything the sweep needs is checked before any point runs: the workloads import, the
    // base config validates (experiment.cpp), the store opens.
    std::vector<Workload> workloads;
    for (size_t i = 0; i < ex.runs.size(); ++i)
      workloads.push_back(prepare_workload(ex.runs[i], i, ex, err));
    const npu::HwConfig base_hw = npu::load_hw_config(d.sweep.base);
    const dse::Constraints where(d.sweep.where, d.where_context,
                                 dse::numeric_keys(hw_report_json(base_hw)["config"].dump()));
    if (worker) {
      // Evaluate the units rank 0 sends until it says stop (rank 0 validated every config).
      while (true) {
        const auto [from, tag, text] = mpi->receive({Mpi::unit, Mpi::stop});
        if (tag == Mpi::stop) return 0;
        const json u = json::parse(text);
        std::vector<npu::HwOverride> ov;
        for (size_t k = 0; k < keys.size(); ++k)
          ov.push_back({keys[k], u["values"][k].get<std::string>()});
        const npu::HwConfig hw = npu::load_hw_config(d.sweep.base, ov);
        mpi->send(0, Mpi::result,
                  evaluate(workloads[u["workload"].get<size_t>()], hw, ex.source).dump());
      }
    }
    const std::string canon = canonical_experiment(ex, base_hw).dump();
    if (!args.resume) fs::create_directories(dir);
    dse::ResultStore store = args.resume ? dse::ResultStore::resume(db_path.string(), keys, canon)
                                         : dse::ResultStore::create(db_path.string(), keys, canon,
                                                                    tuner::tessel_version());
    RunInterrupt interrupt(true,
                           "\ntessel dse: interrupted: finishing the points in progress, then "
                           "writing what finished (press Ctrl-C again to stop at once; --resume "
                           "continues)\n");
    Sweep sweep(ex, keys, workloads, store, where, args.jobs, interrupt, err, mpi.get());
    const std::string workers_text =
        mpi ? fmt::format("{} MPI ranks ({} running points)", mpi->size(), mpi->size() - 1)
            : fmt::format("{} job{}", args.jobs, args.jobs == 1 ? "" : "s");
    const auto t0 = std::chrono::steady_clock::now();
    size_t total_rows = 0;
    std::string search_text;
    std::optional<Screening> screening;
    if (d.screen_keep > 0) {
      // Screening: estimate every point, store the estimates (once: a resume recomputes the
      // same ones), then simulate only the kept points.
      std::vector<dse::Point> points = dse::enumerate_points(d.sweep);
      screening = screen_points(ex, keys, workloads, where, points, d.screen_keep);
      const Screening& sc = *screening;
      out << fmt::format(
          "sweep {}: {} points x {} workload{} screened analytically ({} dropped by where:): {} "
          "structural configs, {} anchors lowered in {:.1f} s, {} estimates in {:.3f} s ({:.0f} "
          "points/s); simulating the {} best, {}\n",
          ex.name, points.size(), workloads.size(), workloads.size() == 1 ? "" : "s", sc.excluded,
          sc.structural_configs, sc.anchors, sc.anchor_seconds, sc.estimates_made,
          sc.estimate_seconds,
          sc.estimate_seconds > 0 ? sc.estimates_made / sc.estimate_seconds : 0.0, sc.kept.size(),
          workers_text);
      if (store.screen_count() == 0) store.insert_screen(sc.rows);

      if (args.resume) out << fmt::format("  resumed: {} rows already stored\n", sweep.stored());
      out.flush();
      std::vector<Planned> planned;
      size_t next = 0;
      for (auto& p : points)
        if (next < sc.kept.size() && p.index == sc.kept[next]) {
          ++next;
          planned.push_back(sweep.plan(std::move(p)));
        }
      size_t excluded = 0;
      for (const auto& pl : planned) excluded += pl.excluded;
      total_rows = (planned.size() - excluded) * workloads.size();
      sweep.run(planned, total_rows - std::min(total_rows, sweep.stored()));
    } else if (!d.sweep.search) {
      std::vector<Planned> planned;
      for (auto& p : dse::enumerate_points(d.sweep)) planned.push_back(sweep.plan(std::move(p)));
      size_t excluded = 0, invalid = 0;
      for (const auto& pl : planned) {
        excluded += pl.excluded;
        invalid += !pl.hw;
      }
      total_rows = (planned.size() - excluded) * workloads.size();
      out << fmt::format(
          "sweep {}: {} points x {} workload{} ({} dropped by where:, {} invalid configs), {}\n",
          ex.name, planned.size(), workloads.size(), workloads.size() == 1 ? "" : "s", excluded,
          invalid, workers_text);
      if (args.resume) out << fmt::format("  resumed: {} rows already stored\n", sweep.stored());
      out.flush();
      sweep.run(planned, total_rows - std::min(total_rows, sweep.stored()));
    } else {
      const dse::SearchSpec& sp = *d.sweep.search;
      out << fmt::format(
          "sweep {}: NSGA-II over {} keys, population {} x {} generations (up to {} points) x {} "
          "workload{}, {} job{}\n",
          ex.name, keys.size(), sp.population, sp.generations, sp.population * (sp.generations + 1),
          workloads.size(), workloads.size() == 1 ? "" : "s", args.jobs, args.jobs == 1 ? "" : "s");
      if (args.resume) out << fmt::format("  resumed: {} rows already stored\n", sweep.stored());
      out.flush();
      search_text = search(sweep, d);
      total_rows = sweep.rows_seen();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const size_t finished = sweep.finished();
    // Outputs, from the store alone (a resumed sweep writes what an uninterrupted one does).
    const std::vector<dse::Row> rows = store.rows();
    write_file_atomically((dir / "results.csv").string(), dse::results_csv(keys, rows));
    const auto fronts = dse::pareto_fronts(rows, d.objectives);
    write_file_atomically((dir / "pareto.csv").string(), dse::pareto_csv(keys, rows, fronts));
    const dse::Plots plots = dse::write_plots(dir.string(), rows, fronts);

    size_t ok = 0, bad = 0, errors = 0;
    for (const auto& r : rows) (r.status == "ok" ? ok : r.status == "invalid" ? bad : errors)++;
    out << fmt::format("  ran {} point runs in {:.1f} s ({:.2f}/s, {:.0f}/hour on {})\n", finished,
                       seconds, seconds > 0 ? finished / seconds : 0.0,
                       seconds > 0 ? 3600 * finished / seconds : 0.0, workers_text);
    out << fmt::format("  stored {} of {} rows: {} ok, {} invalid, {} error\n", rows.size(),
                       total_rows, ok, bad, errors);
    // The fastest ok point per workload.
    Table best({"workload", "fastest point", "total cycles", "bound", "efficiency"});
    for (size_t w = 0; w < ex.runs.size(); ++w) {
      const dse::Row* b = nullptr;
      for (const auto& r : rows)
        if (r.workload_index == static_cast<int64_t>(w) && r.status == "ok" &&
            (!b || *r.total_cycles < *b->total_cycles))
          b = &r;
      if (b)
        best.add({ex.runs[w].name, std::to_string(b->point),
                  with_commas(static_cast<uint64_t>(*b->total_cycles)), b->bound,
                  fmt::format("{:.1f}%", 100 * *b->efficiency)});
    }
    out << best.str();
    // Objectives no ok row has (area and energy until a model fills them): said once.
    std::vector<std::string> empty;
    for (const auto& o : d.objectives)
      if (std::none_of(rows.begin(), rows.end(),
                       [&](const dse::Row& r) { return dse::objective_value(r, o).has_value(); }))
        empty.push_back(o);
    for (const auto& f : fronts) {
      if (f.candidates == 0) continue;
      std::string pts;
      for (size_t k : f.rows) pts += (pts.empty() ? "" : " ") + std::to_string(rows[k].point);
      // Hypervolume of the front (both objectives minimised) up to the reference point.
      std::vector<std::vector<double>> fp;
      std::vector<double> ref(2, 0.0);
      for (size_t k = 0; k < rows.size(); ++k) {
        if (rows[k].workload != f.workload) continue;
        const auto x = dse::objective_value(rows[k], f.x), y = dse::objective_value(rows[k], f.y);
        if (x && y) ref = {std::max(ref[0], 1.1 * *x), std::max(ref[1], 1.1 * *y)};
      }
      if (d.reference.count(f.x)) ref[0] = d.reference.at(f.x);
      if (d.reference.count(f.y)) ref[1] = d.reference.at(f.y);
      for (size_t k : f.rows)
        fp.push_back({*dse::objective_value(rows[k], f.x), *dse::objective_value(rows[k], f.y)});
      std::string hv;
      try {
        hv = fmt::format("hypervolume {:.6g} up to ({:g}, {:g})", dse::hypervolume(fp, ref), ref[0],
                         ref[1]);
      } catch (const Error& e) {
        hv = fmt::format(
            "no hypervolume: the reference ({:g}, {:g}) is not worse than every "
            "front point",
            ref[0], ref[1]);
      }
      out << fmt::format("  front {} {},{}: {} of {} points, {}: {}\n", f.workload, f.x, f.y,
                         f.rows.size(), f.candidates, hv, pts);
    }
    if (!empty.empty()) {
      std::string list;
      for (const auto& o : empty) list += (list.empty() ? "" : ", ") + o;
      out << fmt::format(
          "  objective{} {}: no value on any ok point, so no front or plot with {}\n",
          empty.size() == 1 ? "" : "s", list, empty.size() == 1 ? "it" : "them");
    }
    out << fmt::format("  wrote {}, {}, {}\n", db_path.string(), (dir / "results.csv").string(),
                       (dir / "pareto.csv").string());
    for (const auto& p : plots.png) out << fmt::format("  plot {}\n", p);
    for (const auto& n : plots.notes) out << fmt::format("  note: {}\n", n);
    if (!search_text.empty()) out << search_text;
    if (screening) {
      write_file_atomically((dir / "screen.csv").string(), screen_csv(keys, *screening, rows));
      // How well the estimates rank the simulated points: Kendall tau-b per workload.
      for (size_t w = 0; w < ex.runs.size(); ++w) {
        std::vector<double> est, sim;
        for (const auto& r : rows) {
          if (r.workload_index != static_cast<int64_t>(w) || r.status != "ok") continue;
          const auto it = screening->estimates.find({r.point, r.workload_index});
          if (it == screening->estimates.end()) continue;
          est.push_back(it->second);
          sim.push_back(static_cast<double>(*r.total_cycles));
        }
        std::string tau;
        try {
          tau = fmt::format("Kendall tau-b {:.3f}", dse::kendall_tau(est, sim));
        } catch (const Error& e) {
          tau = fmt::format("no Kendall tau ({})", e.what());
        }
        double worst = 0, sum = 0;
        for (size_t i = 0; i < est.size(); ++i) {
          const double rel = std::abs(est[i] - sim[i]) / sim[i];
          worst = std::max(worst, rel);
          sum += rel;
        }
        out << fmt::format(
            "  screen {}: {} of estimated vs simulated cycles over {} simulated points; mean "
            "|error| {:.1f}%, worst {:.1f}%\n",
            ex.runs[w].name, tau, est.size(), est.empty() ? 0.0 : 100 * sum / est.size(),
            100 * worst);
      }
      out << fmt::format("  wrote {}\n", (dir / "screen.csv").string());
    }
    if (interrupt.requested()) {
      err << fmt::format(
          "error: interrupted (SIGINT) with {} of {} rows stored; continue with tessel dse {} "
          "--out {} --resume\n",
          rows.size(), total_rows, args.experiment, args.out);
      return 130;
    }
    return 0;
  } catch (const Error& e) {
    err << (worker ? fmt::format("error (MPI rank {}): ", mpi->rank()) : "error: ") << e.what()
        << "\n";
    if (worker) mpi->abort(2);  // rank 0 waits on this rank's results
    return 2;
  }
}

Command add_dse_command(CLI::App& app) {
  auto args = std::make_shared<DseArgs>();
  auto* cmd = app.add_subcommand(
      "dse", "hardware design-space exploration: sweep config keys over workloads (docs/dse.md)");
  cmd->footer(
      "Writes DIR/results.sqlite (a row per point and workload, committed as it finishes), "
      "DIR/results.csv, DIR/pareto.csv and PNG plots. Exit code: 0 done, 2 an error in the "
      "experiment or the command line, 130 interrupted (--resume continues).");
  cmd->add_option("experiment", args->experiment, "experiment YAML file with a sweep: key");
  cmd->add_option("--out", args->out, "output directory (created)");
  cmd->add_option("--jobs", args->jobs, "worker processes running points in parallel")
      ->default_val(1);
  cmd->add_flag("--resume", args->resume, "continue the sweep stored in --out DIR");
  cmd->add_option("--explain", args->explain,
                  "DIR POINT: what bounds a stored point (cycle shares per unit, top ops)")
      ->expected(2);
  return {cmd, [args] { return cmd_dse(*args, std::cout, std::cerr); }};
}

}  // namespace tessel::driver
