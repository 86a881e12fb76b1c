// ONNX backend-test conformance runs (see conform.h).
#include "compiler/driver/conform.h"

#include <fcntl.h>
#include <onnx/onnx_pb.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "compiler/driver/commands.h"
#include "compiler/driver/compare.h"
#include "compiler/frontend/backend_test_case.h"
#include "compiler/frontend/onnx_import.h"
#include "compiler/ops/op_registry.h"
#include "compiler/support/error.h"

namespace tessel::driver {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) fail("{}: cannot open", p.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool is_data_set_dir(const fs::path& p) {
  return p.filename().string().rfind("test_data_set_", 0) == 0;
}

bool is_case_dir(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "model.onnx", ec)) return false;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->is_directory(ec) && is_data_set_dir(it->path())) return true;
  return false;
}

/// test_data_set_N directories of a case, by N.
std::vector<fs::path> data_sets(const fs::path& dir) {
  std::vector<std::pair<long, fs::path>> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_directory() || !is_data_set_dir(e.path())) continue;
    const std::string suffix = e.path().filename().string().substr(14);
    char* end = nullptr;
    const long n = std::strtol(suffix.c_str(), &end, 10);
    found.emplace_back(suffix.empty() || *end ? std::numeric_limits<long>::max() : n, e.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> out;
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

std::string op_name(const onnx::NodeProto& n) {
  return n.domain().empty() || n.domain() == "ai.onnx" ? n.op_type()
                                                       : n.domain() + "." + n.op_type();
}

std::vector<std::string> model_ops(const onnx::ModelProto& model) {
  std::set<std::string> ops;
  for (const auto& n : model.graph().node()) ops.insert(op_name(n));
  return {ops.begin(), ops.end()};
}

/// The first op of `ops` that tessel does not register (and the frontend does not rewrite).
std::string first_missing_op(const std::vector<std::string>& ops) {
  for (const auto& op : ops)
    if (ops::find_op(op) == nullptr && !frontend::rewritten_by_frontend(op)) return op;
  return "";
}

std::string one_line(std::string s, size_t max_chars) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  if (s.size() > max_chars) s = s.substr(0, max_chars - 3) + "...";
  return s;
}

/// The message without the case directory's path (file names stay relative to it).
std::string short_message(const ConformResult& r) {
  std::string m = r.message;
  const std::string dir = r.c.dir + "/";
  for (size_t at; !r.c.dir.empty() && (at = m.find(dir)) != std::string::npos;)
    m.erase(at, dir.size());
  return m;
}

std::string fmt_err(double v) { return std::isfinite(v) ? fmt::format("{:.3e}", v) : "inf"; }

/// Compares one output (see ConformOutput for the rules).
ConformOutput compare(const Tensor& actual, const Tensor& expected, const Tolerance& tol,
                      bool check_dtype) {
  ConformOutput o;
  o.atol = tol.atol;
  o.rtol = tol.rtol;
  std::vector<std::string> problems;
  if (check_dtype && actual.dtype() != expected.dtype())
    problems.push_back(fmt::format("dtype {}, expected {}", dtype_to_string(actual.dtype()),
                                   dtype_to_string(expected.dtype())));
  if (actual.shape() != expected.shape()) {
    o.max_abs_error = INFINITY;
    problems.push_back(fmt::format("shape {}, expected {}", shape_to_string(actual.shape()),
                                   shape_to_string(expected.shape())));
    o.detail = fmt::format("{}", fmt::join(problems, "; "));
    return o;
  }
  const int64_t n = expected.numel();
  const bool exact = !dtype_is_float(expected.dtype());
  double max_expected = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double e = expected.get_as_double(i);
    if (std::isfinite(e)) max_expected = std::max(max_expected, std::abs(e));
  }
  int64_t bad = 0;
  std::string first;
  for (int64_t i = 0; i < n; ++i) {
    const double a = actual.get_as_double(i), e = expected.get_as_double(i);
    bool ok;
    if (std::isnan(e) || std::isinf(e) || !std::isfinite(a)) {
      ok = (std::isnan(e) && std::isnan(a)) || a == e;
      if (!ok) o.max_abs_error = INFINITY;
    } else {
      const double d = std::abs(a - e);
      o.max_abs_error = std::max(o.max_abs_error, d);
      if (std::abs(e) > 0 && std::abs(e) >= 1e-3 * max_expected)
        o.max_rel_error = std::max(o.max_rel_error, d / std::abs(e));
      ok = exact ? a == e : d <= tol.atol + tol.rtol * std::abs(e);
    }
    if (!ok && bad++ == 0) first = fmt::format("index {}: {:g} vs expected {:g}", i, a, e);
  }
  if (bad)
    problems.push_back(fmt::format("{} of {} elements differ{}; first at {}", bad, n,
                                   exact ? " (integer output: must be equal)" : "", first));
  o.pass = problems.empty();
  o.detail = fmt::format("{}", fmt::join(problems, "; "));
  return o;
}

/// Whether graph input `name` is a tensor with a dim that has no static size.
bool has_dynamic_dim(const onnx::GraphProto& g, const std::string& name) {
  for (const auto& vi : g.input()) {
    if (vi.name() != name) continue;
    if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) return false;
    for (const auto& d : vi.type().tensor_type().shape().dim())
      if (!d.has_dim_value()) return true;
  }
  return false;
}

/// The body of run_conform_case: fills r.ops, r.outputs and the status pass/fail; throws on
/// everything else.
void run_case_body(const ConformCase& c, const ConformOptions& options, ConformResult& r) {
  const fs::path dir(c.dir);
  const fs::path model_path = dir / "model.onnx";
  onnx::ModelProto model;
  if (!model.ParseFromString(read_bytes(model_path)))
    fail("{}: not a valid ONNX model (protobuf parse failed)", model_path.string());
  r.ops = model_ops(model);

  frontend::raise_opset_to_7_when_unchanged(model, {r.ops.begin(), r.ops.end()});
  // Graph inputs in order (input_K.pb is the K-th), and those shapes depend on: bound as
  // initializers.
  const frontend::BackendTestInputs inputs = frontend::backend_test_inputs(model);
  const std::vector<std::string>& input_names = inputs.input_names;
  const std::set<std::string>& bind = inputs.bind;

  const auto sets = data_sets(dir);
  if (sets.empty()) fail("{}: no test_data_set_N directory", dir.string());
  bool all_pass = true;
  std::string first_failure;
  for (const fs::path& set : sets) {
    onnx::ModelProto m = model;
    std::vector<std::pair<std::string, fs::path>> runtime_inputs;
    for (size_t k = 0; k < input_names.size(); ++k) {
      const fs::path file = set / fmt::format("input_{}.pb", k);
      if (!fs::exists(file)) continue;  // an omitted optional input
      if (!bind.count(input_names[k])) {
        runtime_inputs.push_back({input_names[k], file});
        continue;
      }
      onnx::TensorProto t;
      if (!t.ParseFromString(read_bytes(file)))
        fail("{}: not a valid TensorProto (protobuf parse failed)", file.string());
      t.set_name(input_names[k]);
      *m.mutable_graph()->add_initializer() = t;
      auto* inputs = m.mutable_graph()->mutable_input();
      for (int i = 0; i < inputs->size(); ++i)
        if (inputs->Get(i).name() == input_names[k]) {
          inputs->DeleteSubrange(i, 1);
          break;
        }
    }
    std::string bytes;
    if (!m.SerializeToString(&bytes)) internal_fail("cannot serialize {}", model_path.string());
    // A runtime input with a dynamic dim is bound to its data's shape (as `tessel check` does);
    // the other inputs are loaded after the import, so an unsupported model is reported as such.
    std::map<std::string, Tensor> feeds;
    frontend::ImportOptions import_options;
    for (const auto& [name, file] : runtime_inputs)
      if (has_dynamic_dim(m.graph(), name)) {
        feeds[name] = frontend::load_tensor_pb(file.string());
        import_options.input_shapes[name] = feeds[name].shape();
      }
    auto graph = frontend::import_onnx_bytes(bytes, model_path.string(), import_options);
    for (const auto& [name, file] : runtime_inputs)
      if (!feeds.count(name)) feeds[name] = frontend::load_tensor_pb(file.string());
    if (options.after_import) options.after_import(c, *graph);
    const RunOutput run = run_model(*graph, options.target, options.hw, feeds);
    std::map<std::string, Tolerance> npu_tols;  // derived from this graph and data (compare.h)
    if (options.target == Target::npu) npu_tols = npu_tolerances(*options.hw, *graph, feeds);
    for (int k = 0; k < m.graph().output_size(); ++k) {
      const std::string& name = m.graph().output(k).name();
      const Tensor expected =
          frontend::load_tensor_pb((set / fmt::format("output_{}.pb", k)).string());
      auto it = run.outputs.find(name);
      if (it == run.outputs.end())
        fail("{}: the run produced no value for graph output '{}'", c.dir, name);
      const Tolerance tol = options.target == Target::npu ? npu_tols.at(name)
                            : run.gpu ? conform_gpu_tolerance(run.gpu->fp16, expected)
                                      : conform_tolerance(options, expected);
      ConformOutput o = compare(it->second, expected, tol, options.target == Target::ref);
      o.data_set = set.filename().string();
      o.index = k;
      o.name = name;
      if (!o.pass && all_pass) {
        all_pass = false;
        first_failure = fmt::format(
            "output {} '{}' ({}): max abs error {}, max rel error {}, tolerance atol {:.3g} + "
            "rtol {:.3g} x |expected|: {}",
            k, name, o.data_set, fmt_err(o.max_abs_error), fmt_err(o.max_rel_error), o.atol, o.rtol,
            o.detail);
      }
      r.outputs.push_back(std::move(o));
    }
  }
  r.status = all_pass ? ConformStatus::pass : ConformStatus::fail;
  r.message = first_failure;
}

// ---- isolated runs --------------------------------------------------------------------------

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t w = ::write(fd, s.data() + done, s.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return;
    }
    done += static_cast<size_t>(w);
  }
}

/// The JSON text of a result, with invalid UTF-8 in messages replaced (never throws).
std::string result_text(const ConformResult& r) {
  return conform_result_json(r).dump(-1, ' ', false, json::error_handler_t::replace);
}

/// A case running in a child process.
struct Child {
  size_t index = 0;
  pid_t pid = -1;
  int result_fd = -1, log_fd = -1;  // read ends: the JSON result, the child's stdout+stderr
  std::string result, log;
  Clock::time_point start;
};

constexpr size_t kLogTailChars = 600;

Child start_child(size_t index, const ConformCase& c, const ConformOptions& options) {
  int rp[2], lp[2];
  if (::pipe2(rp, O_CLOEXEC) != 0) fail("conform: pipe failed: {}", std::strerror(errno));
  if (::pipe2(lp, O_CLOEXEC) != 0) {
    ::close(rp[0]);
    ::close(rp[1]);
    fail("conform: pipe failed: {}", std::strerror(errno));
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {rp[0], rp[1], lp[0], lp[1]}) ::close(fd);
    fail("conform: fork failed: {}", std::strerror(errno));
  }
  if (pid == 0) {
    // Child: stdout/stderr go to the log pipe, stdin is empty; the result goes to the result
    // pipe; _exit skips the parent's atexit handlers and static destructors.
    ::dup2(lp[1], 1);
    ::dup2(lp[1], 2);
    const int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ConformOptions inproc = options;
    inproc.isolate = false;
    const ConformResult r = run_conform_case(c, inproc);
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    write_all(rp[1], result_text(r));
    ::_exit(0);
  }
  ::close(rp[1]);
  ::close(lp[1]);
  Child ch;
  ch.index = index;
  ch.pid = pid;
  ch.result_fd = rp[0];
  ch.log_fd = lp[0];
  ch.start = Clock::now();
  return ch;
}

/// Reads what is available on `fd` (non-blocking after poll); closes it and sets -1 at EOF.
void drain(int& fd, std::string& into, size_t keep_tail) {
  char buf[65536];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    ::close(fd);
    fd = -1;
    return;
  }
  into.append(buf, static_cast<size_t>(n));
  if (keep_tail && into.size() > 2 * keep_tail) into.erase(0, into.size() - keep_tail);
}

std::string log_tail(const std::string& log) {
  std::string t = log.size() > kLogTailChars ? log.substr(log.size() - kLogTailChars) : log;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.pop_back();
  return t.empty() ? "" : "; last output: " + one_line(t, kLogTailChars);
}

/// The ops of a case's model for a result the child could not send (best effort).
std::vector<std::string> ops_of(const ConformCase& c) {
  try {
    onnx::ModelProto m;
    if (m.ParseFromString(read_bytes(fs::path(c.dir) / "model.onnx"))) return model_ops(m);
  } catch (const std::exception&) {
  }
  return {};
}

ConformResult finish_child(const Child& ch, const ConformCase& c, int wait_status, bool timed_out,
                           double timeout_seconds) {
  ConformResult r;
  const double seconds = seconds_since(ch.start);
  if (timed_out) {
    r.c = c;
    r.status = ConformStatus::error;
    r.message = fmt::format("timed out after {:g} s (killed){}", timeout_seconds, log_tail(ch.log));
  } else if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    r.c = c;
    r.status = ConformStatus::error;
    r.message = fmt::format("crashed (signal {}: {}){}", sig, ::strsignal(sig), log_tail(ch.log));
  } else {
    bool parsed = false;
    if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0 && !ch.result.empty()) {
      try {
        r = conform_result_from_json(json::parse(ch.result));
        parsed = true;
      } catch (const std::exception&) {
      }
    }
    if (!parsed) {
      r = ConformResult{};
      r.c = c;
      r.status = ConformStatus::error;
      r.message =
          fmt::format("the case's process exited with code {} without a result{}",
                      WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1, log_tail(ch.log));
    }
  }
  if (r.ops.empty()) r.ops = ops_of(c);
  r.c = c;
  r.seconds = seconds;
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

std::vector<ConformCase> find_conform_cases(const std::vector<std::string>& roots) {
  std::vector<ConformCase> cases;
  std::set<std::string> seen;
  auto add = [&](const fs::path& dir) {
    std::error_code ec;
    const std::string key = fs::weakly_canonical(dir, ec).string();
    if (!seen.insert(ec ? dir.string() : key).second) return;
    fs::path abs = fs::absolute(dir, ec).lexically_normal();
    if (ec) abs = dir.lexically_normal();
    if (!abs.has_filename()) abs = abs.parent_path();  // "a/b/" -> "a/b"
    ConformCase c;
    c.name = abs.filename().string();
    c.suite = abs.parent_path().filename().string();
    c.dir = dir.string();
    cases.push_back(std::move(c));
  };
  for (const auto& root_s : roots) {
    const fs::path root(root_s);
    std::error_code ec;
    if (!fs::is_directory(root, ec)) fail("{}: not a directory", root_s);
    if (is_case_dir(root)) {
      add(root);
      continue;
    }
    fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec),
        end;
    if (ec) fail("{}: cannot list: {}", root_s, ec.message());
    for (; it != end; it.increment(ec)) {
      if (ec) fail("{}: cannot list: {}", root_s, ec.message());
      if (!it->is_directory(ec)) continue;
      if (is_data_set_dir(it->path())) {
        it.disable_recursion_pending();
        continue;
      }
      if (is_case_dir(it->path())) {
        add(it->path());
        it.disable_recursion_pending();
      }
    }
  }
  std::sort(cases.begin(), cases.end(), [](const ConformCase& a, const ConformCase& b) {
    return std::tie(a.suite, a.name, a.dir) < std::tie(b.suite, b.name, b.dir);
  });
  return cases;
}

const char* conform_status_name(ConformStatus s) {
  switch (s) {
    case ConformStatus::pass:
      return "pass";
    case ConformStatus::fail:
      return "fail";
    case ConformStatus::unsupported:
      return "unsupported";
    case ConformStatus::error:
      return "error";
  }
  return "error";
}

ConformStatus parse_conform_status(const std::string& name, const std::string& context) {
  for (auto s :
       {ConformStatus::pass, ConformStatus::fail, ConformStatus::unsupported, ConformStatus::error})
    if (name == conform_status_name(s)) return s;
  fail("{}: unknown status '{}' (expected pass, fail, unsupported or error)", context, name);
}

Tolerance conform_tolerance(const ConformOptions& options, const Tensor& expected) {
  // cpu: fp32 like the reference, only summation order differs (FMA contraction, reassociation).
  if (options.target == Target::ref || options.target == Target::cpu)
    return {1e-7, 1e-3,
            "ONNX backend test default (onnx/backend/test/runner): rtol 1e-3, atol 1e-7"};
  internal_fail("conform_tolerance: the npu tolerance is npu_tolerances of the case's graph");
}

Tolerance conform_gpu_tolerance(bool fp16, const Tensor& expected) {
  if (fp16) return gpu_tolerance(true, expected);
  ConformOptions o;
  o.target = Target::cpu;  // fp32 like the reference
  return conform_tolerance(o, expected);
}

ConformResult run_conform_case(const ConformCase& c, const ConformOptions& options) {
  ConformResult r;
  r.c = c;
  const auto t0 = Clock::now();
  try {
    if (options.before_case) options.before_case(c);
    run_case_body(c, options, r);
  } catch (const Unsupported& e) {
    r.status = ConformStatus::unsupported;
    r.message = e.what();
    r.missing_op = first_missing_op(r.ops);
  } catch (const Error& e) {
    r.status = ConformStatus::error;
    r.message = e.what();
  } catch (const InternalError& e) {
    r.status = ConformStatus::error;
    r.message = fmt::format("internal error: {}", e.what());
  } catch (const std::bad_alloc&) {
    r.status = ConformStatus::error;
    r.message = "out of host memory";
  } catch (const std::exception& e) {
    r.status = ConformStatus::error;
    r.message = fmt::format("internal error (std::exception): {}", e.what());
  } catch (...) {
    r.status = ConformStatus::error;
    r.message = "internal error: an exception that is not a std::exception";
  }
  if (r.status != ConformStatus::pass && r.status != ConformStatus::fail) r.outputs.clear();
  r.seconds = seconds_since(t0);
  return r;
}

std::vector<ConformResult> run_conform_cases(
    const std::vector<ConformCase>& cases, const ConformOptions& options, int jobs,
    const std::function<void(const ConformResult&)>& on_result) {
  if (options.target == Target::npu && options.hw == nullptr)
    fail("conform: --target npu needs a hardware config");
  std::vector<ConformResult> results(cases.size());
  if (!options.isolate) {
    for (size_t i = 0; i < cases.size(); ++i) {
      results[i] = run_conform_case(cases[i], options);
      if (on_result) on_result(results[i]);
    }
    return results;
  }
  jobs = std::max(1, jobs);
  std::vector<Child> running;
  size_t next = 0;
  auto finish = [&](size_t ri, int status, bool timed_out) {
    Child& ch = running[ri];
    for (int* fd : {&ch.result_fd, &ch.log_fd})
      if (*fd >= 0) {
        ::close(*fd);
        *fd = -1;
      }
    results[ch.index] =
        finish_child(ch, cases[ch.index], status, timed_out, options.timeout_seconds);
    if (on_result) on_result(results[ch.index]);
    running.erase(running.begin() + static_cast<long>(ri));
  };
  // On an exception (fork or pipe failure, or one thrown by on_result) no child is left behind.
  struct Reaper {
    std::vector<Child>& running;
    ~Reaper() {
      for (Child& ch : running) {
        ::kill(ch.pid, SIGKILL);
        ::waitpid(ch.pid, nullptr, 0);
        for (int fd : {ch.result_fd, ch.log_fd})
          if (fd >= 0) ::close(fd);
      }
    }
  } reaper{running};
  while (next < cases.size() || !running.empty()) {
    while (running.size() < static_cast<size_t>(jobs) && next < cases.size()) {
      running.push_back(start_child(next, cases[next], options));
      ++next;
    }
    std::vector<pollfd> fds;
    std::vector<std::pair<size_t, bool>> owner;  // (child index in running, is result fd)
    for (size_t i = 0; i < running.size(); ++i) {
      if (running[i].result_fd >= 0) {
        fds.push_back({running[i].result_fd, POLLIN, 0});
        owner.emplace_back(i, true);
      }
      if (running[i].log_fd >= 0) {
        fds.push_back({running[i].log_fd, POLLIN, 0});
        owner.emplace_back(i, false);
      }
    }
    const int n = ::poll(fds.data(), fds.size(), 50);
    if (n > 0) {
      for (size_t k = 0; k < fds.size(); ++k) {
        if (!(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        Child& ch = running[owner[k].first];
        if (owner[k].second)
          drain(ch.result_fd, ch.result, 0);
        else
          drain(ch.log_fd, ch.log, kLogTailChars);
      }
    }
    for (size_t i = running.size(); i-- > 0;) {
      Child& ch = running[i];
      int status = 0;
      if (ch.result_fd < 0 && ch.log_fd < 0) {
        // Both pipes closed: the child has exited (or is exiting).
        if (::waitpid(ch.pid, &status, WNOHANG) == ch.pid) {
          finish(i, status, false);
          continue;
        }
      }
      if (seconds_since(ch.start) > options.timeout_seconds) {
        ::kill(ch.pid, SIGKILL);
        ::waitpid(ch.pid, &status, 0);
        finish(i, status, true);
      }
    }
  }
  return results;
}

std::map<std::string, ConformCounts> conform_counts(const std::vector<ConformResult>& results) {
  std::map<std::string, ConformCounts> counts;
  for (const auto& r : results) {
    ConformCounts& c = counts[r.c.suite];
    switch (r.status) {
      case ConformStatus::pass:
        ++c.pass;
        break;
      case ConformStatus::fail:
        ++c.fail;
        break;
      case ConformStatus::unsupported:
        ++c.unsupported;
        break;
      case ConformStatus::error:
        ++c.error;
        break;
    }
  }
  return counts;
}

std::string conform_summary_line(const std::string& suite, const ConformCounts& c) {
  const double pct = c.total() ? 100.0 * c.pass / c.total() : 0.0;
  return fmt::format("{}: {} pass, {} fail, {} unsupported, {} error ({} cases, {:.1f}% pass)",
                     suite, c.pass, c.fail, c.unsupported, c.error, c.total(), pct);
}

namespace {
json finite_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }
double number_or_inf(const json& j) { return j.is_number() ? j.get<double>() : INFINITY; }
}  // namespace

json conform_result_json(const ConformResult& r) {
  json outs = json::array();
  for (const auto& o : r.outputs)
    outs.push_back({{"data_set", o.data_set},
                    {"index", o.index},
                    {"name", o.name},
                    {"max_abs_error", finite_or_null(o.max_abs_error)},
                    {"max_rel_error", finite_or_null(o.max_rel_error)},
                    {"atol", o.atol},
                    {"rtol", o.rtol},
                    {"pass", o.pass},
                    {"detail", o.detail}});
  json j = {{"suite", r.c.suite},   {"case", r.c.name},
            {"dir", r.c.dir},       {"status", conform_status_name(r.status)},
            {"message", r.message}, {"ops", r.ops},
            {"seconds", r.seconds}, {"outputs", outs}};
  if (!r.missing_op.empty()) j["missing_op"] = r.missing_op;
  return j;
}

ConformResult conform_result_from_json(const json& j) {
  try {
    ConformResult r;
    r.c.suite = j.at("suite").get<std::string>();
    r.c.name = j.at("case").get<std::string>();
    r.c.dir = j.at("dir").get<std::string>();
    r.status = parse_conform_status(j.at("status").get<std::string>(), "conform result");
    r.message = j.at("message").get<std::string>();
    r.ops = j.at("ops").get<std::vector<std::string>>();
    r.seconds = j.at("seconds").get<double>();
    if (j.contains("missing_op")) r.missing_op = j["missing_op"].get<std::string>();
    for (const auto& oj : j.at("outputs")) {
      ConformOutput o;
      o.data_set = oj.at("data_set").get<std::string>();
      o.index = oj.at("index").get<int>();
      o.name = oj.at("name").get<std::string>();
      o.max_abs_error = number_or_inf(oj.at("max_abs_error"));
      o.max_rel_error = number_or_inf(oj.at("max_rel_error"));
      o.atol = oj.at("atol").get<double>();
      o.rtol = oj.at("rtol").get<double>();
      o.pass = oj.at("pass").get<bool>();
      o.detail = oj.at("detail").get<std::string>();
      r.outputs.push_back(std::move(o));
    }
    return r;
  } catch (const json::exception& e) {
    fail("conform result JSON: {}", e.what());
  }
}

namespace {

std::string md_cell(const std::string& s, size_t max_chars = 240) {
  std::string t = one_line(s, max_chars), out;
  for (char ch : t) {
    if (ch == '|') out += '\\';
    out += ch;
  }
  return out;
}

/// A reason shared by cases that are unsupported for the same cause: the message without the
/// model path prefix, with quoted node and value names elided ('…'; quoted op types are kept).
std::string unsupported_reason(const ConformResult& r) {
  if (!r.missing_op.empty()) return fmt::format("op {} is not implemented", r.missing_op);
  std::string m = short_message(r);
  if (m.rfind("model.onnx: ", 0) == 0) m = m.substr(12);
  static const std::regex quoted("'([^']*)'");
  std::string elided;
  auto last = m.cbegin();
  for (std::sregex_iterator it(m.begin(), m.end(), quoted), end; it != end; ++it) {
    elided.append(last, (*it)[0].first);
    const std::string inner = (*it)[1].str();
    const bool is_op = std::find(r.ops.begin(), r.ops.end(), inner) != r.ops.end();
    elided += is_op ? "'" + inner + "'" : std::string("'…'");
    last = (*it)[0].second;
  }
  elided.append(last, m.cend());
  return one_line(elided, 200);
}

}  // namespace

std::string conform_markdown(const std::string& title, const std::vector<ConformResult>& results) {
  std::string md = fmt::format("### {}\n\n", title);
  md += "| suite | cases | pass | fail | unsupported | error | pass rate |\n";
  md += "|---|---:|---:|---:|---:|---:|---:|\n";
  ConformCounts total;
  const auto counts = conform_counts(results);
  for (const auto& [suite, c] : counts) {
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {:.1f}% |\n", suite, c.total(), c.pass,
                      c.fail, c.unsupported, c.error, c.total() ? 100.0 * c.pass / c.total() : 0.0);
    total.pass += c.pass;
    total.fail += c.fail;
    total.unsupported += c.unsupported;
    total.error += c.error;
  }
  if (counts.size() > 1)
    md += fmt::format("| **all** | {} | {} | {} | {} | {} | {:.1f}% |\n", total.total(), total.pass,
                      total.fail, total.unsupported, total.error,
                      total.total() ? 100.0 * total.pass / total.total() : 0.0);

  // Unsupported, grouped by reason (most cases first).
  std::map<std::string, std::vector<std::string>> by_reason;
  for (const auto& r : results)
    if (r.status == ConformStatus::unsupported)
      by_reason[unsupported_reason(r)].push_back(r.c.id());
  if (!by_reason.empty()) {
    std::vector<std::pair<std::string, std::vector<std::string>>> rows(by_reason.begin(),
                                                                       by_reason.end());
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
      return a.second.size() > b.second.size();
    });
    md += fmt::format("\nUnsupported ({} cases), by reason:\n\n", total.unsupported);
    md += "| reason | cases | examples |\n|---|---:|---|\n";
    for (const auto& [reason, ids] : rows) {
      std::string ex;
      for (size_t i = 0; i < ids.size() && i < 3; ++i) ex += (i ? ", " : "") + ids[i];
      if (ids.size() > 3) ex += ", ...";
      md += fmt::format("| {} | {} | {} |\n", md_cell(reason), ids.size(), md_cell(ex));
    }
  }

  // Every fail and error case.
  std::string rows;
  int n = 0;
  for (const auto& r : results) {
    if (r.status != ConformStatus::fail && r.status != ConformStatus::error) continue;
    ++n;
    std::string ops;
    for (size_t i = 0; i < r.ops.size() && i < 6; ++i) ops += (i ? ", " : "") + r.ops[i];
    if (r.ops.size() > 6) ops += fmt::format(", ... ({} ops)", r.ops.size());
    double max_abs = 0;
    bool any = false;
    for (const auto& o : r.outputs)
      if (!o.pass) {
        max_abs = std::max(max_abs, o.max_abs_error);
        any = true;
      }
    rows += fmt::format("| {} | {} | {} | {} | {} |\n", r.c.id(), conform_status_name(r.status),
                        md_cell(ops), any ? fmt_err(max_abs) : "", md_cell(short_message(r), 300));
  }
  if (n) {
    md += fmt::format("\nFail and error cases ({}):\n\n", n);
    md += "| case | status | ops | max abs error | message |\n|---|---|---|---:|---|\n" + rows;
  }
  return md;
}

// ---- expected results ------------------------------------------------------------------------

ConformExpected load_conform_expected(const std::string& path) {
  std::ifstream f(path);
  if (!f) fail("{}: cannot open the expected-results file", path);
  ConformExpected e;
  e.source = path;
  std::string line;
  int line_no = 0;
  while (std::getline(f, line)) {
    ++line_no;
    std::string reason;
    const auto hash = line.find('#');
    if (hash != std::string::npos) {
      reason = line.substr(hash + 1);
      line = line.substr(0, hash);
      const auto b = reason.find_first_not_of(" \t");
      reason = b == std::string::npos ? "" : reason.substr(b);
    }
    std::istringstream ss(line);
    std::string id, status, extra;
    if (!(ss >> id)) continue;  // blank or comment line
    const std::string where = fmt::format("{}:{}", path, line_no);
    if (!(ss >> status))
      fail("{}: '{}' has no status (expected 'SUITE/CASE STATUS [# reason]')", where, id);
    if (ss >> extra)
      fail("{}: unexpected '{}' after the status (expected 'SUITE/CASE STATUS [# reason]')", where,
           extra);
    if (id.find('/') == std::string::npos)
      fail("{}: case '{}' must be written as SUITE/CASE (e.g. node/test_abs)", where, id);
    const ConformStatus s = parse_conform_status(status, where);
    if (!e.status.emplace(id, s).second) fail("{}: case '{}' is listed twice", where, id);
    if (!reason.empty()) e.reason[id] = reason;
  }
  return e;
}

std::string conform_expected_text(const std::vector<ConformResult>& results,
                                  const std::vector<std::string>& header) {
  std::string text;
  for (const auto& h : header) text += "# " + h + "\n";
  std::vector<const ConformResult*> sorted;
  for (const auto& r : results) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(),
            [](const ConformResult* a, const ConformResult* b) { return a->c.id() < b->c.id(); });
  for (const ConformResult* r : sorted) {
    text += fmt::format("{} {}", r->c.id(), conform_status_name(r->status));
    if (r->status != ConformStatus::pass) {
      std::string ops;
      if (r->status != ConformStatus::unsupported && !r->ops.empty())
        ops = fmt::format("[{}] ", fmt::join(r->ops, ","));
      text += "  # " + ops + one_line(short_message(*r), 240);
    }
    text += "\n";
  }
  return text;
}

namespace {
int status_rank(ConformStatus s) {
  switch (s) {
    case ConformStatus::pass:
      return 3;
    case ConformStatus::unsupported:
      return 2;
    case ConformStatus::fail:
      return 1;
    case ConformStatus::error:
      return 0;
  }
  return 0;
}
}  // namespace

ConformChange conform_change(const ConformExpected& expected, const ConformResult& r) {
  auto it = expected.status.find(r.c.id());
  if (it == expected.status.end()) return ConformChange::new_case;
  const int want = status_rank(it->second), got = status_rank(r.status);
  if (got == want) return ConformChange::same;
  return got > want ? ConformChange::improvement : ConformChange::regression;
}

std::string conform_change_text(const ConformExpected& expected, const ConformResult& r) {
  const std::string got = r.message.empty() ? conform_status_name(r.status)
                                            : fmt::format("{} ({})", conform_status_name(r.status),
                                                          one_line(r.message, 400));
  switch (conform_change(expected, r)) {
    case ConformChange::same:
      return fmt::format("as expected: {} {}", r.c.id(), conform_status_name(r.status));
    case ConformChange::new_case:
      return fmt::format("new case: {} is not in {}; got {}", r.c.id(), expected.source, got);
    case ConformChange::improvement:
      return fmt::format(
          "improvement: {} expected {}, got {}: record it in {} (tessel conform ... "
          "--write-expected)",
          r.c.id(), conform_status_name(expected.status.at(r.c.id())), got, expected.source);
    case ConformChange::regression:
      return fmt::format("regression: {} expected {}, got {}", r.c.id(),
                         conform_status_name(expected.status.at(r.c.id())), got);
  }
  return "";
}

// ---- the command -------------------------------------------------------------------------------

namespace {

void check_writable(const std::string& path, const char* option) {
  if (path.empty()) return;
  const fs::path p(path);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir))
    fail("{} '{}': directory '{}' does not exist", option, path, dir.string());
  if (fs::is_directory(p)) fail("{} '{}' is a directory", option, path);
}

}  // namespace

int cmd_conform(const ConformArgs& args, std::ostream& out, std::ostream& err,
                const ConformOptions* base_options) {
  ConformOptions opts = base_options ? *base_options : ConformOptions{};
  npu::HwConfig hw;
  std::vector<ConformCase> cases;
  ConformExpected expected;
  try {
    opts.target = parse_target(args.target, "--target");
    // Isolated cases run in forked children, which cannot use a driver this process initialised.
    require_target_available(opts.target, /*in_child=*/!args.in_process);
    if (opts.target == Target::npu) {
      if (args.hw.empty()) fail("--target npu needs --hw FILE (e.g. hw_configs/npu_4core.yaml)");
      hw = load_hw(args.hw, args.hw_set);
      opts.hw = &hw;
    } else if (!args.hw.empty() || !args.hw_set.empty()) {
      fail("{} only applies to --target npu", !args.hw.empty() ? "--hw" : "--hw-set");
    }
    if (args.jobs < 1) fail("--jobs {}: expected a positive number of processes", args.jobs);
    if (!(args.timeout_seconds > 0))
      fail("--timeout {}: expected a positive number of seconds", args.timeout_seconds);
    opts.timeout_seconds = args.timeout_seconds;
    opts.isolate = !args.in_process;
    check_writable(args.report_path, "--report");
    check_writable(args.markdown_path, "--markdown");
    check_writable(args.write_expected, "--write-expected");
    if (!args.expected_path.empty()) expected = load_conform_expected(args.expected_path);
    if (args.dirs.empty()) fail("no directory given");
    cases = find_conform_cases(args.dirs);
    if (cases.empty())
      fail("no case directory (model.onnx + test_data_set_N/) under {}",
           fmt::join(args.dirs, ", "));
  } catch (const Error& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  }

  const std::string target_text =
      opts.target == Target::npu
          ? fmt::format("npu on {} ({})", hw.name, fs::path(hw.source_file).filename().string())
      : opts.target == Target::cpu ? std::string("cpu (host CPU through LLVM)")
      : opts.target == Target::gpu ? std::string("gpu (CUDA GPU through LLVM NVPTX)")
      : opts.target == Target::gpu_emu
          ? std::string("gpu-emu (the gpu target's kernels on the host emulator)")
          : std::string("ref (reference interpreter)");
  std::set<std::string> suites;
  for (const auto& c : cases) suites.insert(c.suite);
  out << fmt::format("conform: {} cases in {} suite{} ({}) on {}, {} job{}{}\n", cases.size(),
                     suites.size(), suites.size() == 1 ? "" : "s", fmt::join(suites, ", "),
                     target_text, args.jobs, args.jobs == 1 ? "" : "s",
                     opts.isolate ? "" : ", in-process");
  out.flush();
  const auto t0 = Clock::now();
  std::vector<ConformResult> results;
  try {
    results = run_conform_cases(cases, opts, args.jobs, [&](const ConformResult& r) {
      const bool bad = r.status == ConformStatus::fail || r.status == ConformStatus::error;
      if (!bad && !args.verbose) return;
      out << fmt::format("  {:<11} {}  ({:.2f} s){}\n", conform_status_name(r.status), r.c.id(),
                         r.seconds, r.message.empty() ? "" : "  " + one_line(r.message, 400));
      out.flush();
    });
  } catch (const Error& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  }
  const double seconds = seconds_since(t0);

  int bad = 0;
  for (const auto& r : results)
    bad += r.status == ConformStatus::fail || r.status == ConformStatus::error;
  int changed = 0;
  if (!args.expected_path.empty()) {
    std::vector<std::string> lines;
    for (const auto& r : results)
      if (conform_change(expected, r) != ConformChange::same)
        lines.push_back(conform_change_text(expected, r));
    // Expected cases of the suites that ran which were not found.
    std::set<std::string> ran;
    for (const auto& r : results) ran.insert(r.c.id());
    for (const auto& [id, s] : expected.status)
      if (suites.count(id.substr(0, id.find('/'))) && !ran.count(id))
        lines.push_back(fmt::format("missing: {} is in {} ({}) but was not found", id,
                                    expected.source, conform_status_name(s)));
    changed = static_cast<int>(lines.size());
    out << fmt::format("compared with {}: {} difference{}\n", expected.source, changed,
                       changed == 1 ? "" : "s");
    for (const auto& l : lines) out << "  " << l << "\n";
  }

  const auto counts = conform_counts(results);
  ConformCounts total;
  for (const auto& [suite, c] : counts) {
    out << conform_summary_line(suite, c) << "\n";
    total.pass += c.pass;
    total.fail += c.fail;
    total.unsupported += c.unsupported;
    total.error += c.error;
  }
  if (counts.size() > 1) out << conform_summary_line("all", total) << "\n";
  out << fmt::format("ran in {:.1f} s\n", seconds);

  try {
    if (!args.report_path.empty()) {
      json cj = json::array();
      for (const auto& r : results) cj.push_back(conform_result_json(r));
      json sj = json::object();
      for (const auto& [suite, c] : counts)
        sj[suite] = {{"cases", c.total()},
                     {"pass", c.pass},
                     {"fail", c.fail},
                     {"unsupported", c.unsupported},
                     {"error", c.error}};
      json report = {
          {"tool", "tessel"},  {"command", "conform"}, {"target", target_name(opts.target)},
          {"dirs", args.dirs}, {"seconds", seconds},   {"summary", sj},
          {"cases", cj}};
      if (opts.target == Target::npu)
        report["hw"] = {{"name", hw.name}, {"file", hw.source_file}, {"hw_set", args.hw_set}};
      write_file_atomically(args.report_path,
                            report.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
      out << "report written to " << args.report_path << "\n";
    }
    if (!args.markdown_path.empty()) {
      write_file_atomically(args.markdown_path, conform_markdown(target_text, results));
      out << "markdown written to " << args.markdown_path << "\n";
    }
    if (!args.write_expected.empty()) {
      std::string command = fmt::format("tessel conform {} --target {}", fmt::join(args.dirs, " "),
                                        target_name(opts.target));
      if (!args.hw.empty()) command += " --hw " + args.hw;
      for (const auto& kv : args.hw_set) command += " --hw-set " + kv;
      const std::vector<std::string> header = {
          fmt::format("Expected conformance results, {}.", target_text),
          "One line per case: SUITE/CASE STATUS [# reason]. Written by",
          "  " + command + " --write-expected FILE",
          "(see docs/conformance.md); tests/conformance checks every case against it."};
      write_file_atomically(args.write_expected, conform_expected_text(results, header));
      out << "expected results written to " << args.write_expected << "\n";
    }
  } catch (const Error& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  }
  if (!args.expected_path.empty()) return changed ? 1 : 0;
  return bad ? 1 : 0;
}

}  // namespace tessel::driver
