#!/usr/bin/env bash
# bench/run.sh: the real-binary figures of issue 11 (docs/performance.md).
#
# Builds smithc and smithvm, writes the generated documents (the same ones
# the Go benchmarks use, plus a few written here) into a temporary
# directory, and measures every target. Comparisons run side by side,
# A B A B ..., so that the load of the machine hits both alike; each prints
# the medians and their ratio. Each target ends with one line:
#   TARGET n: <figure>   target <target>   PASS|SHORT
# and the last lines repeat them all. Needs bash, GNU time
# (/usr/bin/time), jq and date with nanoseconds.
#
# Usage: bench/run.sh [RUNS]        (run from anywhere inside the repo)
#   RUNS       runs per side of each comparison (default 5)
#   FLAT_RUNS  runs of each 10,000-step run (default 3: the median of their
#              last/first ratios; a single run's ratio moved by +-10 % with
#              the VM's spawn cost over its 8 s, docs/performance.md)
#   ONLY       a list of target numbers to run, e.g. ONLY="1 7"
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD

RUNS=${1:-${RUNS:-5}}
FLAT_RUNS=${FLAT_RUNS:-3}
ONLY=${ONLY:-1 2 3 4 5 6 7 8 9}
for tool in /usr/bin/time jq; do
  command -v "$tool" >/dev/null || { echo "run.sh: needs $tool" >&2; exit 2; }
done
want() { [[ " $ONLY " == *" $1 "* ]]; }

echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# smithvm keeps the programs it compiled (docs/cli.md, "Compiled programs"):
# here in the bench's own folder, so that every bench starts without any and
# leaves none; the first run of each workflow compiles it.
export SMITH_CACHE="$W/programs"
# Static, as README.md installs them (CGO_ENABLED=0); the floor and the
# hello-world are built the same way.
CGO_ENABLED=0 go build -o "$W/bin/" ./cmd/smithc ./cmd/smithvm ./bench/floor ./bench/hello
go test ./bench -count=1 -run '^TestGenerate$' -args -gendir "$W" >/dev/null
SMITHC=$W/bin/smithc
SMITHVM=$W/bin/smithvm
FLOOR=$W/bin/floor
HELLO=$W/bin/hello
cd "$W"
RESULTS=()

# median reads numbers, one a line, and prints their median.
median() {
  sort -g | awk '{a[NR]=$1} END {if (NR == 0) exit 1; if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'
}
# verdict N FIGURE TARGET OK: prints and keeps the target's line.
verdict() {
  local v=SHORT
  [ "$4" = 1 ] && v=PASS
  local l
  l=$(printf 'TARGET %s: %-58s target %-22s %s' "$1" "$2" "$3" "$v")
  echo "$l"
  RESULTS+=("$l")
}
le() { awk -v a="$1" -v b="$2" 'BEGIN {print (a <= b) ? 1 : 0}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

# fresh makes an empty project directory $W/base. It then syncs the file
# system (sync -f, untimed): the blocks the removal freed are otherwise
# discarded (the root file system here is mounted with `discard`) in the
# next fsync of whatever runs next, which would charge the previous run's
# removal to the timed one.
fresh() { rm -rf "$W/base"; mkdir -p "$W/base/workspace"; sync -f "$W"; }
nothing() { :; }

# timed PREP CMD...: runs PREP, then CMD under /usr/bin/time; sets T_MS (wall),
# T_CPU (user+sys ms) and T_MB (peak RSS).
timed() {
  local prep=$1
  shift
  $prep
  local t0 t1 rss u s
  t0=$(date +%s%N)
  if ! /usr/bin/time -f '%M %U %S' -o "$W/rss" "$@" >"$W/out" 2>&1; then
    echo "run.sh: $* failed:" >&2
    tail -5 "$W/out" >&2
    exit 1
  fi
  t1=$(date +%s%N)
  T_MS=$(awk -v a="$t0" -v b="$t1" 'BEGIN {print (b - a) / 1e6}')
  read -r rss u s < <(tail -1 "$W/rss")
  T_MB=$(awk -v r="$rss" 'BEGIN {print r / 1024}')
  T_CPU=$(awk -v u="$u" -v s="$s" 'BEGIN {print (u + s) * 1000}')
}

# abab N LABEL_A PREP_A CMD_A LABEL_B PREP_B CMD_B: runs A and B alternately
# N times each (CMD_* are strings, word-split); prints the medians and sets
# A_MS, B_MS, A_MB and RATIO (A/B of the medians of wall time).
abab() {
  local n=$1 la=$2 pa=$3 ca=$4 lb=$5 pb=$6 cb=$7 i
  local ams="" bms="" acpu="" bcpu="" amb=""
  for ((i = 0; i < n; i++)); do
    # shellcheck disable=SC2086
    timed "$pa" $ca
    ams+="$T_MS"$'\n'
    acpu+="$T_CPU"$'\n'
    amb+="$T_MB"$'\n'
    # shellcheck disable=SC2086
    timed "$pb" $cb
    bms+="$T_MS"$'\n'
    bcpu+="$T_CPU"$'\n'
  done
  A_MS=$(printf '%s' "$ams" | median)
  B_MS=$(printf '%s' "$bms" | median)
  A_MB=$(printf '%s' "$amb" | median)
  RATIO=$(ratio "$A_MS" "$B_MS")
  printf '    %-34s median %9.1f ms wall %9.1f ms cpu  %6.1f MB\n' "$la" "$A_MS" "$(printf '%s' "$acpu" | median)" "$A_MB"
  printf '    %-34s median %9.1f ms wall %9.1f ms cpu\n' "$lb" "$B_MS" "$(printf '%s' "$bcpu" | median)"
  printf '    ratio %s (%d runs each, A B A B)\n' "$RATIO" "$n"
}

# chain N: a YAML workflow of N `true` steps chained by goto.
chain() {
  printf 'version: "1.0"\nname: chain\nsteps:\n'
  local i
  for ((i = 0; i < $1; i++)); do
    local next="{goto: T$((i + 1))}"
    ((i == $1 - 1)) && next="{end: true}"
    printf '  - name: T%d\n    command: ["true"]\n    on: {success: %s, failure: {error: "T%d failed"}}\n' "$i" "$next" "$i"
  done
}
chain 100 >chain100.yaml
# setchain N: N set_context steps chained by goto (no process).
setchain() {
  printf 'version: "1.0"\nname: set\nsteps:\n'
  local i
  for ((i = 0; i < $1; i++)); do
    local next="{goto: S$((i + 1))}"
    ((i == $1 - 1)) && next="{end: true}"
    printf '  - name: S%d\n    set_context: {n: "%d"}\n    on: {success: %s, failure: {error: "S%d failed"}}\n' "$i" "$i" "$next" "$i"
  done
}
setchain 1000 >set1k.yaml
cat >cycle.yaml <<'EOF'
version: "1.0"
name: cycle
steps:
  - name: Body
    command: ["true"]
    max_visits: VISITS
    on: {success: {goto: Body}, failure: {error: "Body failed"}, max_visits: {end: true}}
EOF
sed 's/VISITS/10000/' cycle.yaml >cycle10k.yaml
sed 's/VISITS/1000/' cycle.yaml >cycle1k.yaml
jq '{items: .items[:1000]}' items10k.json >items1k.json

# ms_of TIMESTAMP: an events.jsonl timestamp in ms since the epoch.
ms_of() { echo $(($(date -d "$1" +%s%N) / 1000000)); }

printf 'for i in $(seq 1000); do /bin/true; done\n' >bash1k.sh
printf 'for i in $(seq 100); do /bin/true; done\n' >bash100.sh

if want 1; then
  echo "== 1. sequential true steps with full durability, against the floor (spawn /bin/true, append 300 B, fdatasync per step)"
  abab "$RUNS" "smithvm run chain1k.yaml" fresh "$SMITHVM run chain1k.yaml --base $W/base" \
    "floor: 1,000 durable steps" nothing "$FLOOR -steps 1000 -dir $W"
  verdict 1 "1,000 steps: smith/floor $RATIO ($A_MS ms / $B_MS ms)" "<= 1.15" "$(le "$RATIO" 1.15)"
  abab "$((RUNS * 2))" "smithvm run chain100.yaml" fresh "$SMITHVM run chain100.yaml --base $W/base" \
    "floor: 100 durable steps" nothing "$FLOOR -steps 100 -dir $W"
  verdict 1b "100 steps: smith/floor $RATIO ($A_MS ms / $B_MS ms)" "<= 1.25" "$(le "$RATIO" 1.25)"
  # Information only: a bash loop of the same processes persists nothing.
  abab "$RUNS" "smithvm run chain1k.yaml" fresh "$SMITHVM run chain1k.yaml --base $W/base" \
    "bash loop of 1,000 /bin/true" nothing "bash bash1k.sh"
  echo "    (information) 1,000 steps: smith/bash $RATIO"
fi

# window EVENTS: the mean time per Body step (ms) over its first and its last
# 1,000 runs, each the span from the first step_started to the last
# step_completed of the window divided by 1,000 (so it includes the
# persistence between steps).
window() {
  jq -r 'select(.step == "Body" and (.event == "step_started" or .event == "step_completed"))
         | [.event, (.timestamp | split("T") | ((.[0] + "T00:00:00Z") | fromdateiso8601)
            + (.[1] | rtrimstr("Z") | split(":") | (.[0] | tonumber) * 3600 + (.[1] | tonumber) * 60 + (.[2] | tonumber)))]
         | @tsv' "$1" |
    awk 'function med(a, k,   i, j, t) { # median of a[1..k], sorted in place
           for (i = 2; i <= k; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
           return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
         }
         $1 == "step_started" {s[++n] = $2} $1 == "step_completed" {c[n] = $2}
         END {
           if (n != 10000) {print "run.sh: " n " body steps, want 10000" > "/dev/stderr"; exit 1}
           for (i = 1; i < 1000; i++) g1[i] = (s[i + 1] - c[i]) * 1000
           for (i = 9001; i < 10000; i++) g2[i - 9000] = (s[i + 1] - c[i]) * 1000
           printf "%.4f %.4f %.4f %.4f\n", (c[1000] - s[1]) / 1000 * 1000, (c[10000] - s[9001]) / 1000 * 1000, med(g1, 999), med(g2, 999)
         }'
}
# sizeof FILE: bytes.
sizeof() { stat -c %s "$1"; }

if want 2; then
  echo "== 2. flat in run length: 10,000-iteration for_each, 10,000-visit goto cycle"
  for wf in loop cycle; do
    ratios="" rss=""
    for ((r = 0; r < FLAT_RUNS; r++)); do
      if [ $wf = loop ]; then
        timed fresh "$SMITHVM" run loop10k.yaml --base "$W/base" --context-file items10k.json --max-steps 30000 --run-id flat
      else
        timed fresh "$SMITHVM" run cycle10k.yaml --base "$W/base" --max-steps 30000 --run-id flat
      fi
      read -r f l gf gl < <(window "$W/base/.orchestrator/runs/flat/logs/events.jsonl")
      q=$(ratio "$l" "$f")
      st10k=$(sizeof "$W/base/.orchestrator/runs/flat/state.json")
      printf '    %s run %d: %.0f ms, first 1k %.3f ms/step, last 1k %.3f ms/step, last/first %s, peak RSS %.1f MB, state.json %d B\n' \
        $wf $((r + 1)) "$T_MS" "$f" "$l" "$q" "$T_MB" "$st10k"
      # Smith's own part, without the process: the median time from a
      # step's completion to the next step's start (saving the result,
      # dispatch, the next running record). It does not swing with the
      # cost of a spawn, which on a shared VM drifts over a 50 s run.
      printf '      between steps (median): first 1k %.3f ms, last 1k %.3f ms, last/first %s\n' "$gf" "$gl" "$(ratio "$gl" "$gf")"
      ratios+="$q"$'\n'
      rss+="$T_MB"$'\n'
    done
    q=$(printf '%s' "$ratios" | median)
    mb=$(printf '%s' "$rss" | median)
    # The same workflow over 1,000 steps: state.json must not grow with the run.
    if [ $wf = loop ]; then
      timed fresh "$SMITHVM" run loop10k.yaml --base "$W/base" --context-file items1k.json --run-id flat
      # the items are input, not run: they are in state.json twice (the
      # context, and the loop's frame until the loop ends): count them out
      ctx=$((2 * ($(sizeof items10k.json) - $(sizeof items1k.json))))
    else
      timed fresh "$SMITHVM" run cycle1k.yaml --base "$W/base" --run-id flat
      ctx=0
    fi
    st1k=$(sizeof "$W/base/.orchestrator/runs/flat/state.json")
    growth=$(awk -v a="$st10k" -v b="$st1k" -v c="$ctx" 'BEGIN {printf "%.2f", (a - c) / b}')
    printf '    %s state.json: %d B after 10,000 steps, %d B after 1,000 (%d B of the difference: the 9,000 more items, in the context and the loop frame)\n' $wf "$st10k" "$st1k" "$ctx"
    verdict "2$wf" "last/first $q, peak $(printf %.1f "$mb") MB, state.json x$growth (10k/1k)" "<= 1.1, < 40 MB, x1" \
      "$(awk -v q="$q" -v m="$mb" -v g="$growth" 'BEGIN {print (q <= 1.1 && m < 40 && g <= 1.1) ? 1 : 0}')"
  done
fi

if want 3; then
  echo "== 3. resume after SIGKILL near the end of a 10,000-step run: time to its first new step"
  # The kill must land before the run ends: poll every 10 ms, and when a
  # fast machine finished first anyway, try again killing earlier.
  killed=0
  for at in 9900 9500 9000 8000; do
    fresh
    "$SMITHVM" run cycle10k.yaml --base "$W/base" --max-steps 30000 --run-id kill >/dev/null 2>&1 &
    pid=$!
    ev=$W/base/.orchestrator/runs/kill/logs/events.jsonl
    while kill -0 "$pid" 2>/dev/null && ! { [ -f "$ev" ] && [ "$(grep -c step_completed "$ev")" -ge "$at" ]; }; do sleep 0.01; done
    if kill -9 "$pid" 2>/dev/null; then killed=1; fi
    wait "$pid" 2>/dev/null || true
    [ "$killed" = 1 ] && [ "$(grep -c '"run_completed"' "$ev" || true)" = 0 ] && break
    killed=0
  done
  if [ "$killed" = 0 ]; then
    verdict 3 "the run always ended before the kill" "< 100 ms" 0
  else
    lines=$(wc -l <"$ev")
    done_before=$(grep -c step_completed "$ev" || true)
    t0=$(date +%s%N)
    resumed=1
    "$SMITHVM" resume kill --base "$W/base" --max-steps 30000 >/dev/null 2>&1 || resumed=0
    # first(): jq stops at the first match itself (a `| head -1` would
    # SIGPIPE jq when the rest of the run overflows the pipe, and
    # pipefail would end the script).
    first=$(tail -n +$((lines + 1)) "$ev" | jq -rn 'first(inputs | select(.event == "step_started") | .timestamp) // empty')
    if [ "$resumed" = 0 ] || [ -z "$first" ]; then
      verdict 3 "the resume failed or started no step" "< 100 ms" 0
    else
      ms=$(($(ms_of "$first") - t0 / 1000000))
      echo "    killed after $done_before of 10,000 steps; the resume's first step_started came $ms ms after it was launched"
      verdict 3 "resume to its first new step: $ms ms" "< 100 ms" "$(le "$ms" 99)"
    fi
  fi
fi

if want 4; then
  echo "== 4. the VM and the store alone: 1,000 set_context steps (no process), against an append + fdatasync loop"
  abab "$RUNS" "smithvm run set1k.yaml" fresh "$SMITHVM run set1k.yaml --base $W/base" \
    "floor without processes: 1,000 appends + fdatasync" nothing "$FLOOR -steps 1000 -spawn=false -dir $W"
  verdict 4 "1,000 steps without processes: smith/floor $RATIO ($A_MS ms / $B_MS ms)" "<= 1.3" "$(le "$RATIO" 1.3)"
  # Information: every run compiling the workflow (no kept program).
  uncached() { fresh; rm -rf "$SMITH_CACHE"; }
  abab "$RUNS" "smithvm run set1k.yaml, compiled" uncached "$SMITHVM run set1k.yaml --base $W/base" \
    "floor without processes: 1,000 appends + fdatasync" nothing "$FLOOR -steps 1000 -spawn=false -dir $W"
  echo "    (information) 1,000 steps without processes, compiled at every run: smith/floor $RATIO ($A_MS ms / $B_MS ms)"
fi

if want 5; then
  echo "== 5. compiler: check of the 10,000-block manifest, a 100-step start, .smbc size"
  ms="" mb=""
  for ((i = 0; i < RUNS; i++)); do
    timed nothing "$SMITHC" check manifest10k.json
    ms+="$T_MS"$'\n'
    mb+="$T_MB"$'\n'
  done
  ms=$(printf '%s' "$ms" | median)
  mb=$(printf '%s' "$mb" | median)
  verdict 5a "smithc check manifest10k.json: $ms ms, $(printf %.1f "$mb") MB" "< 150 ms, < 80 MB" \
    "$(awk -v a="$ms" -v b="$mb" 'BEGIN {print (a < 150 && b < 80) ? 1 : 0}')"
  starts=""
  for ((i = 0; i < RUNS; i++)); do
    fresh
    t0=$(date +%s%N)
    "$SMITHVM" run chain100.yaml --base "$W/base" --run-id s >/dev/null 2>&1
    first=$(jq -r 'select(.event == "step_started") | .timestamp' "$W/base/.orchestrator/runs/s/logs/events.jsonl" | head -1)
    starts+="$(($(ms_of "$first") - t0 / 1000000))"$'\n'
  done
  s=$(printf '%s' "$starts" | median)
  verdict 5b "smithvm run chain100.yaml: first step after $s ms" "< 10 ms" "$(le "$s" 9.99)"
  worst=0
  for f in manifest10k.json workflow5k.yaml chain1k.yaml; do
    "$SMITHC" build "$f" -o out.smbc >/dev/null
    q=$(ratio "$(sizeof out.smbc)" "$(sizeof "$f")")
    echo "    $f: $(sizeof "$f") B source, $(sizeof out.smbc) B .smbc, x$q"
    worst=$(awk -v a="$worst" -v b="$q" 'BEGIN {print (b > a) ? b : a}')
  done
  verdict 5c ".smbc size / source size: at most x$worst" "<= 2" "$(le "$worst" 2)"
fi

if want 6; then
  echo "== 6. a step writing 100 MB to stdout, against cat to a file"
  head -c 75000000 /dev/urandom | base64 -w 100 >big.txt # 101 MB
  printf 'version: "1.0"\nname: big\nsteps:\n  - name: Big\n    command: ["cat", "%s"]\n    on: {success: {end: true}, failure: {error: "Big failed"}}\n' "$W/big.txt" >big.yaml
  printf 'cat %s >%s\n' "$W/big.txt" "$W/catout" >cat.sh
  # Each run starts with nothing dirty in the page cache (sync, untimed):
  # cat rewrites catout in place, and ext4 then puts its 100 MB into the next
  # journal commit (auto_da_alloc), which smithvm's first fsync would wait
  # for: the figure would count cat's writeback as Smith's.
  synced_fresh() { fresh; sync; }
  synced() { sync; }
  abab "$RUNS" "smithvm run big.yaml" synced_fresh "$SMITHVM run big.yaml --base $W/base" \
    "bash: cat big.txt > file" synced "bash cat.sh"
  verdict 6 "100 MB step: smith/cat $RATIO, peak RSS $(printf %.1f "$A_MB") MB" "<= 1.3, flat" \
    "$(awk -v r="$RATIO" -v m="$A_MB" 'BEGIN {print (r <= 1.3 && m < 40) ? 1 : 0}')"
  rm -f big.txt catout
fi

if want 7; then
  echo "== 7. parallel steps"
  {
    printf 'version: "1.0"\nname: par8\nsteps:\n  - name: P\n    parallel:\n      branches:\n'
    for i in 1 2 3 4 5 6 7 8; do
      printf '        b%d: [{name: S%d, command: ["sleep", "1"], on: {success: {goto: _branch_end}, failure: {error: "S%d failed"}}}]\n' $i $i $i
    done
    printf '    on: {success: {end: true}, failure: {error: "P failed"}}\n'
  } >par8.yaml
  ms=""
  for ((i = 0; i < RUNS; i++)); do
    timed fresh "$SMITHVM" run par8.yaml --base "$W/base" --max-parallel 8
    ms+="$T_MS"$'\n'
  done
  ms=$(printf '%s' "$ms" | median)
  verdict 7a "8 parallel branches of sleep 1 (--max-parallel 8): $ms ms" "< 1300 ms" "$(le "$ms" 1299)"
  sed 's/as: it/as: it\n      parallel: 8/' loop10k.yaml >ploop.yaml
  abab "$RUNS" "1,000 iterations, parallel: 8" fresh "$SMITHVM run ploop.yaml --base $W/base --context-file items1k.json --max-parallel 8" \
    "1,000 iterations, sequential" fresh "$SMITHVM run loop10k.yaml --base $W/base --context-file items1k.json"
  verdict 7b "1,000 no-op iterations: parallel 8 / sequential $RATIO" "<= 1.0" "$(le "$RATIO" 1.0)"
fi

# counts CMD...: runs CMD in the background and prints the most threads
# and open descriptors it had at once (sampled every 20 ms).
counts() {
  "$@" >/dev/null 2>&1 &
  local pid=$! th=0 fd=0 n
  while kill -0 "$pid" 2>/dev/null; do
    n=$(ls /proc/$pid/task 2>/dev/null | wc -l)
    ((n > th)) && th=$n
    n=$(ls /proc/$pid/fd 2>/dev/null | wc -l)
    ((n > fd)) && fd=$n
    sleep 0.02
  done
  wait "$pid" || true
  echo "$th threads, $fd descriptors"
}

# par N: a workflow of one parallel step with N branches of sleep 1.
par() {
  printf 'version: "1.0"\nname: par%d\nsteps:\n  - name: P\n    parallel:\n      branches:\n' "$1"
  local i
  for ((i = 1; i <= $1; i++)); do
    printf '        b%d: [{name: S%d, command: ["sleep", "1"], on: {success: {goto: _branch_end}, failure: {error: "S%d failed"}}}]\n' $i $i $i
  done
  printf '    on: {success: {end: true}, failure: {error: "P failed"}}\n'
}

if want 8; then
  echo "== 8. fan-out: N parallel sleep 1 steps against bash (for i in \$(seq N); do sleep 1 & done; wait)"
  for n in 100 500; do
    par $n >par$n.yaml
    printf 'for i in $(seq %d); do sleep 1 & done; wait\n' $n >fan$n.sh
    abab "$RUNS" "smithvm run par$n.yaml" fresh "$SMITHVM run par$n.yaml --base $W/base" \
      "bash: $n x sleep 1 &" nothing "bash fan$n.sh"
    fresh
    echo "    smithvm at its most, $n steps: $(counts "$SMITHVM" run par$n.yaml --base "$W/base")"
    if [ $n = 100 ]; then
      verdict 8a "100 parallel sleep 1: smith/bash $RATIO ($A_MS ms / $B_MS ms)" "<= 1.05" "$(le "$RATIO" 1.05)"
    else
      verdict 8b "500 parallel sleep 1: smith/bash $RATIO, peak $(printf %.1f "$A_MB") MB" "<= 1.15, < 40 MB" \
        "$(awk -v r="$RATIO" -v m="$A_MB" 'BEGIN {print (r <= 1.15 && m < 40) ? 1 : 0}')"
    fi
  done
fi

if want 9; then
  echo "== 9. start-up: a 1-step run against a Go hello-world built the same way; 50 concurrent runs in one BASE against bash"
  printf 'version: "1.0"\nname: one\nsteps:\n  - name: T\n    command: ["true"]\n    on: {success: {end: true}, failure: {error: "T failed"}}\n' >one.yaml
  abab "$((RUNS * 4))" "smithvm run one.yaml" fresh "$SMITHVM run one.yaml --base $W/base" \
    "hello-world (go build)" nothing "$HELLO"
  d=$(awk -v a="$A_MS" -v b="$B_MS" 'BEGIN {printf "%.1f", a - b}')
  verdict 9a "1-step run: $A_MS ms, hello-world $B_MS ms, +$d ms" "<= +6 ms" "$(le "$d" 6)"
  chain 10 >chain10.yaml
  printf 'for i in $(seq 50); do %s run chain10.yaml --base %s >/dev/null 2>&1 & done; wait\n' "$SMITHVM" "$W/base" >runs50.sh
  printf 'for i in $(seq 50); do (for j in $(seq 10); do /bin/true; done) & done; wait\n' >bash50.sh
  abab "$RUNS" "50 concurrent smithvm runs of 10 steps" fresh "bash runs50.sh" \
    "bash: 50 concurrent loops of 10 /bin/true" nothing "bash bash50.sh"
  verdict 9b "50 concurrent 10-step runs: smith/bash $RATIO ($A_MS ms / $B_MS ms)" "<= 1.6" "$(le "$RATIO" 1.6)"
  # Information: the same burst against its physical floor, 50 floor
  # programs of 10 steps at once (spawn, append, fdatasync), each in its
  # own folder of one BASE.
  printf 'for i in $(seq 50); do mkdir -p %s/f$i; %s -steps 10 -dir %s/f$i & done; wait\n' "$W/fbase" "$FLOOR" "$W/fbase" >floor50.sh
  freshf() { fresh; rm -rf "$W/fbase"; mkdir -p "$W/fbase"; }
  abab "$RUNS" "50 concurrent smithvm runs of 10 steps" fresh "bash runs50.sh" \
    "floor: 50 concurrent floor -steps 10" freshf "bash floor50.sh"
  echo "    (information) 50 concurrent 10-step runs: smith/floor $RATIO ($A_MS ms / $B_MS ms)"
fi

echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== summary"
printf '%s\n' "${RESULTS[@]}"
