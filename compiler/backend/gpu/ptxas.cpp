// Running ptxas on PTX text (see ptxas.h).
#include "compiler/backend/gpu/ptxas.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "compiler/support/error.h"

namespace tessel::gpu_backend {

namespace fs = std::filesystem;

std::string find_ptxas() {
  if (const char* env = std::getenv("TESSEL_PTXAS"); env && *env)
    return fs::exists(env) ? std::string(env) : std::string();
  if (fs::exists("/usr/local/cuda/bin/ptxas")) return "/usr/local/cuda/bin/ptxas";
  if (const char* path = std::getenv("PATH")) {
    std::string p(path);
    size_t start = 0;
    while (start <= p.size()) {
      const size_t end = p.find(':', start);
      const std::string dir = p.substr(start, end == std::string::npos ? end : end - start);
      if (!dir.empty() && fs::exists(fs::path(dir) / "ptxas"))
        return (fs::path(dir) / "ptxas").string();
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  return "";
}

PtxasResult run_ptxas(const std::string& ptxas, const std::string& ptx, const std::string& arch,
                      bool verbose) {
  char tmpl[] = "/tmp/tessel-ptxas-XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd < 0) fail("ptxas: cannot create a temporary file");
  close(fd);
  const std::string file = tmpl;
  {
    std::ofstream f(file, std::ios::binary | std::ios::trunc);
    f << ptx;
    if (!f) {
      std::remove(file.c_str());
      fail("ptxas: cannot write {}", file);
    }
  }
  const std::string cmd = fmt::format("'{}' -arch={} {}-o /dev/null '{}' 2>&1", ptxas, arch,
                                      verbose ? "-v " : "", file);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    std::remove(file.c_str());
    fail("ptxas: cannot run {}", ptxas);
  }
  PtxasResult r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.log.append(buf, n);
  const int status = pclose(p);
  std::remove(file.c_str());
  r.ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return r;
}

}  // namespace tessel::gpu_backend
