#!/usr/bin/env bash
# bench/run.sh: the real-binary numbers of bench/README.md.
#
# Builds smithc and smithvm, writes the generated documents (the same ones
# the Go benchmarks use) into a temporary directory and times:
#   1. smithc check / smithc build of manifest10k.json and workflow5k.yaml
#   2. smithvm run of chain1k.yaml (1,000 `true` steps, durable state)
#      against bash running the same 1,000 processes
#   3. smithvm run of loop10k.yaml (a 10,000-iteration for_each, items from
#      --context-file): mean time per body step over the first and the last
#      1,000 iterations, from events.jsonl, and the ratio
# Each command runs RUNS times (default 10; FLAT_RUNS, default 3, for the
# 10,000-iteration loop); the medians of wall time and peak RSS
# (/usr/bin/time) and the median CPU time (user+sys) are printed. Needs
# bash, GNU time and jq.
#
# Usage: bench/run.sh [RUNS]        (run from anywhere inside the repo)
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${1:-${RUNS:-10}}
FLAT_RUNS=${FLAT_RUNS:-3}
for tool in /usr/bin/time jq; do
  command -v "$tool" >/dev/null || { echo "run.sh: needs $tool" >&2; exit 2; }
done

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
go build -o "$W/bin/" ./cmd/smithc ./cmd/smithvm
go test ./bench -count=1 -run '^TestGenerate$' -args -gendir "$W" >/dev/null
SMITHC=$W/bin/smithc
SMITHVM=$W/bin/smithvm
cd "$W"

# median reads numbers, one a line, and prints their median.
median() {
  sort -n | awk '{a[NR]=$1} END {if (NR == 0) exit 1; if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'
}

# fresh makes an empty project directory $W/base (outside the timing).
fresh() { rm -rf "$W/base"; mkdir "$W/base"; }

# measure LABEL N PREP CMD...: runs PREP then CMD (timed) N times; prints the
# median wall time (ms), median CPU time (user+sys, ms: less sensitive to
# other load on the machine) and median peak RSS (MB). The medians are also
# left in MED_MS and MED_MB.
measure() {
  local label=$1 n=$2 prep=$3
  shift 3
  local ms="" mb="" cpu="" i t0 t1 rss u s
  for ((i = 0; i < n; i++)); do
    $prep
    t0=$(date +%s%N)
    if ! /usr/bin/time -f '%M %U %S' -o "$W/rss" "$@" >"$W/out" 2>&1; then
      echo "run.sh: $label: $* failed:" >&2
      tail -5 "$W/out" >&2
      exit 1
    fi
    t1=$(date +%s%N)
    ms+="$(((t1 - t0) / 1000))"$'\n'
    read -r rss u s < <(tail -1 "$W/rss")
    mb+="$rss"$'\n'
    cpu+="$(awk -v u="$u" -v s="$s" 'BEGIN {print (u + s) * 1000}')"$'\n'
  done
  MED_MS=$(printf '%s' "$ms" | awk '{print $1/1000}' | median)
  MED_MB=$(printf '%s' "$mb" | awk '{print $1/1024}' | median)
  local med_cpu
  med_cpu=$(printf '%s' "$cpu" | median)
  printf '%-36s median %8.1f ms wall %8.1f ms cpu   peak RSS %6.1f MB   (%d runs)\n' "$label" "$MED_MS" "$med_cpu" "$MED_MB" "$n"
}

nothing() { :; }

echo "== 1. compile speed (target: < 300 ms, < 200 MB each)"
for f in manifest10k.json workflow5k.yaml; do
  measure "smithc check $f" "$RUNS" nothing "$SMITHC" check "$f"
  measure "smithc build $f" "$RUNS" nothing "$SMITHC" build "$f" -o "$W/out.smbc"
done

echo "== 2. run speed: 1,000 true steps"
measure "smithvm run chain1k.yaml" "$RUNS" fresh "$SMITHVM" run chain1k.yaml --base "$W/base"
smith_ms=$MED_MS
measure "bash loop of 1,000 /bin/true" "$RUNS" nothing bash -c 'for i in $(seq 1000); do /bin/true; done'
bash_ms=$MED_MS
awk -v s="$smith_ms" -v b="$bash_ms" 'BEGIN {printf "ratio smithvm/bash: %.2f\n", s/b}'

echo "== 3. flat persistence: 10,000-iteration for_each (target: last/first <= 1.2, < 100 MB)"
# window EVENTS: the mean time per body step (ms) over iterations 1-1000 and
# 9001-10000, each the span from the first step_started to the last
# step_completed of the window divided by 1,000, so it includes the
# persistence between steps.
window() {
  jq -r 'select(.step == "Body" and (.event == "step_started" or .event == "step_completed"))
         | [.event, (.timestamp | split("T") | ((.[0] + "T00:00:00Z") | fromdateiso8601)
            + (.[1] | rtrimstr("Z") | split(":") | (.[0] | tonumber) * 3600 + (.[1] | tonumber) * 60 + (.[2] | tonumber)))]
         | @tsv' "$1" |
    awk '$1 == "step_started" {s[++n] = $2} $1 == "step_completed" {c[n] = $2}
         END {
           if (n != 10000) {print "run.sh: " n " body steps, want 10000" > "/dev/stderr"; exit 1}
           printf "%.4f %.4f\n", (c[1000] - s[1]) / 1000 * 1000, (c[10000] - s[9001]) / 1000 * 1000
         }'
}
firsts="" lasts="" ratios="" rss=""
for ((r = 0; r < FLAT_RUNS; r++)); do
  measure "smithvm run loop10k.yaml (run $((r + 1)))" 1 fresh "$SMITHVM" run loop10k.yaml --base "$W/base" \
    --context-file items10k.json --max-steps 30000 --run-id flat
  read -r f l < <(window "$W/base/.orchestrator/runs/flat/logs/events.jsonl")
  printf '    first 1k %.3f ms/step   last 1k %.3f ms/step   last/first %.3f\n' "$f" "$l" "$(awk -v f="$f" -v l="$l" 'BEGIN {print l/f}')"
  firsts+="$f"$'\n'
  lasts+="$l"$'\n'
  ratios+="$(awk -v f="$f" -v l="$l" 'BEGIN {print l/f}')"$'\n'
  rss+="$MED_MB"$'\n'
done
printf 'median over %d runs: first 1k %.3f ms/step, last 1k %.3f ms/step, last/first %.3f, peak RSS %.1f MB\n' "$FLAT_RUNS" \
  "$(printf '%s' "$firsts" | median)" "$(printf '%s' "$lasts" | median)" "$(printf '%s' "$ratios" | median)" "$(printf '%s' "$rss" | median)"
