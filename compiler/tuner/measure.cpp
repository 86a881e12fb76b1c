// The simulator oracle (see measure.h). Worker protocol: one request per line from the parent,
// "KERNEL KNOBS_JSON\n"; one reply per line, "ok CYCLES\n" or "err MESSAGE\n" (newlines in the
// message replaced by spaces).
#include "compiler/tuner/measure.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "compiler/support/error.h"
#include "simulator/simulator.h"

namespace tessel::tuner {

namespace {

bool write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

/// Reads one line (without the newline) from `fd`; false at end of file or error.
bool read_line(int fd, std::string& buffer, std::string& line) {
  while (true) {
    const size_t nl = buffer.find('\n');
    if (nl != std::string::npos) {
      line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      return true;
    }
    char chunk[4096];
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer.append(chunk, static_cast<size_t>(n));
  }
}

std::string encode(const Request& r) {
  nlohmann::json k = r.knobs;
  return fmt::format("{} {}\n", r.kernel, k.dump());
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

}  // namespace

Measurement Measurer::measure_one(const npu_backend::LoweredGraph& lowered, const npu::HwConfig& hw,
                                  const Request& r) {
  Measurement m;
  try {
    sim::SimOptions so;
    so.functional = false;
    so.skip_gm_image = true;
    // Timing only: the cube runs transaction-level. core.cube.model: rtl needs values, and in a
    // run it checks that the RTL's cycles are the formula's (docs/rtl.md), so a measurement does
    // not depend on it.
    npu::HwConfig tlm_hw;
    const npu::HwConfig* h = &hw;
    if (hw.core.cube.model != npu::CubeModel::tlm) {
      tlm_hw = hw;
      tlm_hw.core.cube.model = npu::CubeModel::tlm;
      tlm_hw.core.cube.rtl_sample = 0;
      h = &tlm_hw;
    }
    sim::Simulator simulator(*h, so);
    simulator.load(lowered.kernel_program(r.kernel, r.knobs));  // moved in: no copy
    m.cycles = simulator.run().total_cycles;
  } catch (const std::exception& e) {
    m.error = one_line(e.what());
  }
  return m;
}

Measurer::Measurer(const npu_backend::LoweredGraph& lowered, const npu::HwConfig& hw, int jobs)
    : lowered_(lowered), hw_(hw) {
  if (jobs <= 1) return;
  signal(SIGPIPE, SIG_IGN);  // a dead worker is an error reply, not a killed parent
  for (int j = 0; j < jobs; ++j) {
    int down[2], up[2];
    if (::pipe(down) != 0 || ::pipe(up) != 0)
      fail("tuner: cannot create a pipe for measurement worker {}: {}", j, std::strerror(errno));
    const pid_t pid = ::fork();
    if (pid < 0) fail("tuner: cannot fork measurement worker {}: {}", j, std::strerror(errno));
    if (pid == 0) {
      // Worker: serve requests until the parent closes the pipe.
      ::close(down[1]);
      ::close(up[0]);
      for (const Worker& w : workers_) {
        ::close(w.to_child);
        ::close(w.from_child);
      }
      signal(SIGINT, SIG_IGN);  // the parent decides what an interrupt means
      std::string buffer, line;
      while (read_line(down[0], buffer, line)) {
        std::string reply;
        try {
          const size_t sp = line.find(' ');
          Request r;
          r.kernel = std::stoul(line.substr(0, sp));
          r.knobs = nlohmann::json::parse(line.substr(sp + 1)).get<passes::Knobs>();
          const Measurement m = measure_one(lowered_, hw_, r);
          reply = m.ok() ? fmt::format("ok {}\n", m.cycles) : fmt::format("err {}\n", m.error);
        } catch (const std::exception& e) {
          reply = fmt::format("err {}\n", one_line(e.what()));
        }
        if (!write_all(up[1], reply)) break;
      }
      ::_exit(0);
    }
    ::close(down[0]);
    ::close(up[1]);
    workers_.push_back({pid, down[1], up[0]});
  }
}

Measurer::~Measurer() {
  for (const Worker& w : workers_) {
    ::close(w.to_child);
    ::close(w.from_child);
  }
  for (const Worker& w : workers_) {
    int status = 0;
    while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
}

std::vector<Measurement> Measurer::measure(const std::vector<Request>& batch,
                                           const std::function<void(size_t, size_t)>& progress) {
  std::vector<Measurement> out(batch.size());
  if (workers_.empty()) {
    for (size_t i = 0; i < batch.size(); ++i) {
      if (progress) progress(i, batch.size());
      out[i] = measure_one(lowered_, hw_, batch[i]);
    }
    if (progress) progress(batch.size(), batch.size());
    return out;
  }
  // Hand requests to idle workers; collect replies as they come.
  std::vector<long> busy(workers_.size(), -1);  // request index per worker
  std::vector<std::string> buffers(workers_.size());
  size_t next = 0, done = 0;
  auto dispatch = [&](size_t w) {
    if (next >= batch.size()) return;
    if (!write_all(workers_[w].to_child, encode(batch[next])))
      fail("tuner: measurement worker {} (pid {}) died", w, workers_[w].pid);
    busy[w] = static_cast<long>(next++);
  };
  for (size_t w = 0; w < workers_.size(); ++w) dispatch(w);
  while (done < batch.size()) {
    std::vector<pollfd> fds;
    std::vector<size_t> who;
    for (size_t w = 0; w < workers_.size(); ++w)
      if (busy[w] >= 0) {
        fds.push_back({workers_[w].from_child, POLLIN, 0});
        who.push_back(w);
      }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      fail("tuner: poll on the measurement workers failed: {}", std::strerror(errno));
    }
    for (size_t f = 0; f < fds.size(); ++f) {
      if (!(fds[f].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const size_t w = who[f];
      std::string line;
      if (!read_line(workers_[w].from_child, buffers[w], line))
        fail("tuner: measurement worker {} (pid {}) died", w, workers_[w].pid);
      Measurement& m = out[static_cast<size_t>(busy[w])];
      if (line.rfind("ok ", 0) == 0) {
        m.cycles = std::stoull(line.substr(3));
      } else {
        m.error = line.size() > 4 ? line.substr(4) : "measurement failed";
      }
      ++done;
      if (progress) progress(done, batch.size());
      busy[w] = -1;
      dispatch(w);
    }
  }
  return out;
}

}  // namespace tessel::tuner
