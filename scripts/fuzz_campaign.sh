#!/usr/bin/env bash
# A long fuzzing campaign: every libFuzzer target (tests/fuzz, built by `make fuzz`) runs until its
# current binary has executed N inputs (default 10,000,000) without a finding, at the lowest
# priority, one (or -j N) at a time.
#
#   scripts/fuzz_campaign.sh [-n EXECUTIONS] [-j PARALLEL] [-t SECONDS] [-d DIR] [-u] [TARGET...]
#   scripts/fuzz_campaign.sh -s [-d DIR]        print every target's status line
#
# With -t, each run of a target (a segment) lasts at most SECONDS and the targets take turns
# (round robin, -j of them at a time) until each is done, so that every target gets executions even
# when the campaign is stopped before all reach N (on a shared machine: -j 1 -t 600).
# Targets default to all of build-fuzz/bin/fuzz_*. DIR (default /work/fuzz-campaign, outside the
# repository) gets, per target T:
#   DIR/bin/fuzz_T             the binary the campaign runs, copied from build-fuzz/bin when
#                              missing or with -u (after a fix: `make fuzz`, then -u T); a running
#                              campaign is not changed by a rebuild. DIR/bin/fuzz_T.commit names
#                              the commit it was built from.
#   DIR/corpus/T/              the growing corpus (starts from tests/fuzz/corpus/T and
#                              tests/fuzz/regressions/T, which are only read)
#   DIR/artifacts/T/           inputs that crashed (crash-*, leak-*, timeout-*, oom-*)
#   DIR/logs/T.SHA.K.log       libFuzzer's output, K-th segment of the binary with sha256 prefix
#                              SHA (a killed campaign resumes with a new segment from the corpus)
#   DIR/T.status               "running: E of N executions (fuzz_T SHA)", then "done: E
#                              executions of fuzz_T SHA (commit C), 0 crashes" or "finding: ..."
#                              naming the artifact and the log
# Executions are counted per binary, over its segments, from libFuzzer's status lines ("#E ..."
# and "Done E runs"), so a restarted target runs only the remaining ones and a fixed binary
# starts again from 0. A finding stops that target: fix it, commit the artifact to
# tests/fuzz/regressions/T/, `make fuzz`, then `scripts/fuzz_campaign.sh -u T`.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
execs=10000000
parallel=1
dir=/work/fuzz-campaign
status_only=0
update=0
slice=0
while getopts "n:j:t:d:su" opt; do
  case $opt in
    n) execs=$OPTARG ;;
    j) parallel=$OPTARG ;;
    t) slice=$OPTARG ;;
    d) dir=$OPTARG ;;
    s) status_only=1 ;;
    u) update=1 ;;
    *) echo "usage: $0 [-n EXECUTIONS] [-j PARALLEL] [-t SECONDS] [-d DIR] [-u] [-s] [TARGET...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

if [ "$status_only" = 1 ]; then
  for s in "$dir"/*.status; do [ -f "$s" ] && echo "$(basename "$s" .status): $(cat "$s")"; done
  exit 0
fi

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for b in "$root"/build-fuzz/bin/fuzz_*; do targets+=("$(basename "$b" | sed 's/^fuzz_//')"); done
fi
mkdir -p "$dir"/bin "$dir"/logs
for t in "${targets[@]}"; do
  src="$root/build-fuzz/bin/fuzz_$t"
  if [ ! -x "$dir/bin/fuzz_$t" ] || [ "$update" = 1 ]; then
    [ -x "$src" ] || { echo "$0: $src is missing: run 'make fuzz' first" >&2; exit 2; }
    cp "$src" "$dir/bin/fuzz_$t"
    git -C "$root" rev-parse --short HEAD > "$dir/bin/fuzz_$t.commit"
  fi
done

sha_of() { sha256sum "$dir/bin/fuzz_$1" | cut -c1-12; }

# Executions of the current binary so far: the sum over its segments of each log's last count.
executed() {
  local t=$1 sha total=0 n
  sha=$(sha_of "$t")
  for log in "$dir"/logs/"$t"."$sha".*.log; do
    [ -f "$log" ] || continue
    n=$(grep -aoE '^(#[0-9]+|Done [0-9]+ runs)' "$log" | tail -1 | grep -oE '[0-9]+' || true)
    total=$((total + ${n:-0}))
  done
  echo "$total"
}

# Runs target $1 until done (exit 0) or a finding / failure (exit 1); with -t, runs one segment of
# at most $slice seconds and exits 2 when executions are left.
run_target() {
  local t=$1 sha commit
  sha=$(sha_of "$t")
  commit=$(cat "$dir/bin/fuzz_$t.commit")
  mkdir -p "$dir/corpus/$t" "$dir/artifacts/$t"
  while true; do
    local done_execs left k log stamp rc artifact
    done_execs=$(executed "$t")
    left=$((execs - done_execs))
    if [ "$left" -le 0 ]; then
      echo "done: $done_execs executions of fuzz_$t $sha (commit $commit), 0 crashes" \
        > "$dir/$t.status"
      return 0
    fi
    echo "running: $done_execs of $execs executions (fuzz_$t $sha, commit $commit)" \
      > "$dir/$t.status"
    k=$(find "$dir/logs" -maxdepth 1 -name "$t.$sha.*.log" | wc -l)
    log="$dir/logs/$t.$sha.$k.log"
    stamp="$dir/logs/.$t.$sha.$k.start"
    touch "$stamp"
    set +e
    local time_limit=()
    [ "$slice" -gt 0 ] && time_limit=(-max_total_time="$slice")
    (cd "$root" && nice -n 19 "$dir/bin/fuzz_$t" -runs="$left" "${time_limit[@]}" -timeout=30 \
      -rss_limit_mb=2560 -print_final_stats=1 -artifact_prefix="$dir/artifacts/$t/" "$dir/corpus/$t" \
      "$root/tests/fuzz/corpus/$t" "$root/tests/fuzz/regressions/$t") > "$log" 2>&1
    rc=$?
    set -e
    artifact=$(find "$dir/artifacts/$t" -maxdepth 1 -type f -newer "$stamp" | head -1)
    if [ -n "$artifact" ]; then
      echo "finding: after $(executed "$t") executions of fuzz_$t $sha: $artifact (log $log)" \
        > "$dir/$t.status"
      return 1
    fi
    if [ $rc -ne 0 ]; then
      echo "stopped: exit $rc after $(executed "$t") executions (log $log)" > "$dir/$t.status"
      return 1
    fi
    if [ "$slice" -gt 0 ] && [ "$(executed "$t")" -lt "$execs" ]; then
      echo "paused: $(executed "$t") of $execs executions (fuzz_$t $sha, commit $commit)" \
        > "$dir/$t.status"
      return 2
    fi
  done
}

# Run the targets, at most `parallel` at a time; with -t, in turns until none has work left.
queue=("${targets[@]}")
while [ ${#queue[@]} -gt 0 ]; do
  for t in "${queue[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
    run_target "$t" &
  done
  wait || true
  queue=()
  if [ "$slice" -gt 0 ]; then
    for t in "${targets[@]}"; do grep -q '^paused' "$dir/$t.status" && queue+=("$t"); done
  fi
done
for t in "${targets[@]}"; do echo "$t: $(cat "$dir/$t.status")"; done
