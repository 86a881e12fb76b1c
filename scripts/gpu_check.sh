#!/usr/bin/env bash
# The GPU backend on a machine with a CUDA GPU (compute capability 8.0+, the driver installed):
#   1. builds tessel, test_gpu and bench_bench_gpu (Release, in $BUILD_DIR, default build-gpu;
#      needs the packages of scripts/install_deps.sh; --no-build uses an existing build)
#   2. runs test_gpu (the GpuDevice tests run instead of skipping)
#   3. tessel conform on the ONNX node suite with --target gpu, against the expected statuses
#      (tests/gpu/expected_conform_gpu.txt, written on the host emulator)
#   4. tessel check --target gpu on every golden case (tests/data/cases; needs models/,
#      scripts/fetch_models.sh)
#   5. the GEMM / convolution benchmark against cuBLAS / cuDNN (benchmarks/bench_gpu.cpp; the
#      libraries are loaded where installed)
#   6. ResNet-50 batch 1 and 16 latency against the GPU's roofline (experiments/gpu_resnet50.yaml)
# then prints a summary: one line per step with its result and time. The whole run has a budget
# of 470 s (under the 8 minutes of issue 18): every step has its own limit, cut to what is left
# of the budget, and a step with less than 15 s left is skipped and says so; a step that fails
# or times out is reported and the others still run. Exit code 0 when every step passed, 1
# otherwise, 2 when there is no GPU (the summary says why).
#
#   scripts/gpu_check.sh [--no-build] [--out DIR]     (logs and JSON reports go to DIR, default
#                                                      gpu-check-out/)
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-gpu}
OUT=gpu-check-out
BUILD=1
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) BUILD=0 ;;
    --out) OUT="$2"; shift ;;
    *) echo "usage: scripts/gpu_check.sh [--no-build] [--out DIR]" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$OUT"
JOBS=$(nproc)
TESSEL="$BUILD_DIR/bin/tessel"
START=$SECONDS
BUDGET=${GPU_CHECK_BUDGET:-470}  # seconds for the whole run
SUMMARY=()
FAILED=0

# step NAME LIMIT_SECONDS COMMAND...: runs COMMAND with a time limit (LIMIT_SECONDS, cut to what
# is left of the budget), its output in $OUT/NAME.log.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((BUDGET - (SECONDS - START)))
  if [ $left -lt 15 ]; then
    SUMMARY+=("$(printf '%-12s %-18s %4d s  (%d s of the %d s budget left)' "$name" "SKIPPED" 0 \
      "$left" "$BUDGET")")
    FAILED=1
    return 1
  fi
  [ "$limit" -le "$left" ] || limit=$left
  local t0=$SECONDS
  echo "== $name (limit ${limit} s): $*"
  timeout --kill-after=10 "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  local dt=$((SECONDS - t0))
  tail -n 25 "$OUT/$name.log"
  local what="ok"
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then what="TIMED OUT"; FAILED=1
  elif [ $rc -ne 0 ]; then what="FAILED (exit $rc)"; FAILED=1; fi
  SUMMARY+=("$(printf '%-12s %-18s %4d s  %s' "$name" "$what" "$dt" "$OUT/$name.log")")
  return $rc
}

echo "gpu_check: $(nvidia-smi -L 2>/dev/null | head -n 1 || echo 'nvidia-smi not found')"

if [ $BUILD -eq 1 ]; then
  step build 240 bash -c "cmake -S . -B '$BUILD_DIR' -DCMAKE_BUILD_TYPE=Release > /dev/null && \
    cmake --build '$BUILD_DIR' -j $JOBS --target tessel test_gpu bench_bench_gpu" || {
    printf '%s\n' "${SUMMARY[@]}"
    exit 1
  }
fi

# No device: say so and stop (exit 2), as tessel does.
if ! "$TESSEL" check tests/data/cases/hello_deepa --target gpu > "$OUT/device.log" 2>&1; then
  if grep -q "no CUDA device" "$OUT/device.log"; then
    cat "$OUT/device.log"
    echo "gpu_check: no CUDA device on this machine; nothing else to run"
    exit 2
  fi
fi

# The GPU tests but the ones the later steps repeat on the device: the four conformance suites
# and the golden cases on the emulator (minutes of CPU; ctest runs them).
step tests 90 "$BUILD_DIR/bin/test_gpu" --gtest_brief=1 \
  --gtest_filter='-Conformance/*:GpuDriver.Golden*'
step conform 120 "$TESSEL" conform /usr/share/libonnx-testdata/data/node --target gpu -j "$JOBS" \
  --expected tests/gpu/expected_conform_gpu.txt --report "$OUT/conform.json"
if [ -d models ] && [ -f models/ch_ppocr_mobile_v2.0_cls_infer.onnx ]; then
  # The int8 QDQ cases (*_int8*) run on the reference only so far (docs/quantize.md).
  step golden 60 "$TESSEL" check $(ls -d tests/data/cases/* | grep -v _int8) --target gpu \
    --report "$OUT/golden.json"
else
  SUMMARY+=("$(printf '%-12s %-18s' golden 'SKIPPED (no models/: scripts/fetch_models.sh)')")
fi
step bench 90 "$BUILD_DIR/bin/bench_bench_gpu" --benchmark_min_time=0.2 \
  --benchmark_out="$OUT/bench.json" --benchmark_out_format=json
step resnet50 90 "$TESSEL" run experiments/gpu_resnet50.yaml --report "$OUT/resnet50.json"

echo
echo "== summary ($((SECONDS - START)) s in all)"
printf '%s\n' "${SUMMARY[@]}"
if [ -f "$OUT/bench.json" ]; then
  echo "-- GEMM / convolution TFLOP/s (tessel vs the vendor library, same sizes):"
  grep -E '"name"|"TFLOP/s"|"error_message"' "$OUT/bench.json" | paste - - | \
    sed -e 's/[",]//g' -e 's/name: //' -e 's/TFLOP\/s: / /' | awk '{printf "   %-32s %s\n", $1, $2}'
fi
if [ -f "$OUT/resnet50.log" ]; then
  echo "-- ResNet-50:"
  grep -E "^run |  ran |  roofline " "$OUT/resnet50.log" | sed 's/^/   /'
fi
exit $FAILED
