#!/usr/bin/env bash
# The reliability suite (issue 6, docs/reliability.md) on the GPU machine, in one call. It builds
# nothing: it runs what scripts/build-reliability.sh gathered in target/reliability/ (carry that
# path). Every step is its own process under `timeout`; a failure is recorded and the run goes
# on. The whole run keeps within a time budget (default 480 s; the last process may overrun it by
# its 10 s kill grace): the steps before the sanitizers leave them at least 120 s (nothing when
# TOOLS is empty), and whatever would start after the budget is reported as skipped. Full logs go
# to $OUT (five files); a table comes last.
#
#   scripts/device-reliability.sh [BUDGET_SECONDS]
#
# Environment: HGEMM_SEED (default: fresh, printed), TOOLS (default, when unset: memcheck
# synccheck racecheck initcheck; empty: no sanitizer runs), SAN_GROUPS (default: v0 v1 v2 v3 v4 v5
# v6 v7 variants; `variants` stands for var1, var2, …, the other v7 entries three at a time, which
# can also be named one by one), SAN_JOBS (sanitizer processes at once, default 8).
set -u
cd "$(dirname "$0")/.."
BIN=${BIN:-target/reliability}
OUT=${OUT:-/tmp/hgemm-reliability}
BUDGET=${1:-480}
TOOLS=${TOOLS-memcheck synccheck racecheck initcheck}
SAN_GROUPS=${SAN_GROUPS:-v0 v1 v2 v3 v4 v5 v6 v7 variants}
SAN_JOBS=${SAN_JOBS:-8}
VARIANTS=hopper_v7_wide_kmn,hopper_v7_wide_mnk,hopper_v7_wide_mnmn,hopper_v7_mid_kk,hopper_v7_mid_mnk,hopper_v7_mid_kk_cm,hopper_v7_square_kk,hopper_v7_square_kmn,hopper_v7_square_mnk,hopper_v7_square_mnmn,hopper_v7_slim_kk,hopper_v7_slim_kmn,hopper_v7_slim_mnk,hopper_v7_slim_mnmn,hopper_v7_lean_kk,hopper_v7_lean_kk_cm,hopper_v7_trim_kk,hopper_v7_trim_kk_cm,hopper_v7_midtrim_kk,hopper_v7_midtrim_kk_cm,hopper_v7_widetrim_kk,hopper_v7_widetrim_kk_cm,hopper_v7_thin_kk,hopper_v7_thin_kmn,hopper_v7_thin_mnk,hopper_v7_thin_mnmn,hopper_v7_narrow32_kk_cm,hopper_v7_narrow16_kk_cm,hopper_v7_narrow96_kk,hopper_v7_narrow96_kk_cm,hopper_v7_tall_kk,hopper_v7_tall_kk_cm,hopper_v7_tall144_kk,hopper_v7_tall144_kk_cm,hopper_v7_tall160_kk_cm,hopper_v7_long128_kk,hopper_v7_long128_kk_cm,hopper_v7_long144_kk,hopper_v7_long144_kk_cm,hopper_v7_long160_kk_cm,hopper_v7_long176_kk_cm,hopper_v7_twin80_kk,hopper_v7_twin80_kk_cm,hopper_v7_twin96_kk,hopper_v7_twin96_kk_cm,hopper_v7_twin112_kk,hopper_v7_twin112_kk_cm
# The variants run three to a process (var1, var2, …): all of them in one process did not finish
# under a sanitizer in the 150 s it had, so a default run left their later entries unchecked.
IFS=, read -ra VARIANT_LIST <<<"$VARIANTS"
VARIANT_CHUNK=3
SAN_GROUPS=$(for g in $SAN_GROUPS; do
    if [ "$g" = variants ]; then
        for ((i = 1; (i - 1) * VARIANT_CHUNK < ${#VARIANT_LIST[@]}; i++)); do printf 'var%d ' "$i"; done
    else printf '%s ' "$g"; fi
done)
# The kernels of a sanitizer group: vN is the ladder's entry of that name, varN the N-th three variants.
group_kernels() {
    case $1 in
        var*) local IFS=,; echo "${VARIANT_LIST[*]:$(((${1#var} - 1) * VARIANT_CHUNK)):VARIANT_CHUNK}" ;;
        *) echo "$1" ;;
    esac
}
T0=$(date +%s)
export HGEMM_SEED=${HGEMM_SEED:-$(( $(date +%s%N) % 1000000007 ))}
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
WORK=$(mktemp -d /tmp/hgemm-reliability.XXXXXX)
mkdir -p "$OUT"
rm -f "$OUT"/{summary.txt,run.log,tests.log,hang.log,sanitizer.log}
ROWS=$WORK/rows

left() { echo $((BUDGET - ($(date +%s) - T0))); }
# row CHECK RESULT DETAIL — one line of the table.
row() { printf '%-30s %-5s %s\n' "$1" "$2" "$3" >>"$ROWS"; }
# What the steps before the sanitizers leave them of the budget.
SAN_RESERVE=120
[ -z "$TOOLS" ] && SAN_RESERVE=0
# step LOG SECONDS CMD... — run CMD under a timeout of at most SECONDS that leaves the
# sanitizers SAN_RESERVE s of the budget, append its output to LOG; sets RC and TAIL (its output
# alone). RC is 200 for a step skipped because the budget is spent.
step() {
    local log=$1 limit=$2
    shift 2
    local room=$(($(left) - SAN_RESERVE))
    ((limit > room)) && limit=$room
    : >"$WORK/step.out"
    TAIL=$WORK/step.out
    if ((limit < 15)); then
        echo "=== $*: skipped, time budget spent" | tee -a "$log" >"$TAIL"
        RC=200
        return
    fi
    echo "=== $* (timeout ${limit}s, $(date -u +%T))" >>"$log"
    timeout -k 10 "$limit" "$@" >"$TAIL" 2>&1
    RC=$?
    cat "$TAIL" >>"$log"
    echo "=== exit $RC" >>"$log"
}
verdict() {
    case $RC in
        0) echo PASS ;;
        124 | 137) echo "T/O" ;;
        200) echo skip ;;
        *) echo FAIL ;;
    esac
}
# The `reliability:` line a test printed, or why there is none.
detail() { grep -m1 -o 'reliability: .*' "$TAIL" | sed 's/^reliability: //' || true; }
why() {
    local d
    d=$(detail)
    if [ -n "$d" ]; then echo "$d"
    elif [ "$RC" = 200 ]; then echo "skipped: time budget spent"
    else echo "exit $RC: $(grep -m1 -E 'panicked|Error|error' "$TAIL" | cut -c1-150)"; fi
}

GPU=$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader 2>&1 | head -1)
SANVER=$("$SANITIZER" --version 2>&1 | grep -m1 -o 'Version .*' || echo "compute-sanitizer not found")
for f in hgemm reliability hgemm-hang-guard hang; do
    [ -x "$BIN/$f" ] || echo "missing $BIN/$f: run scripts/build-reliability.sh here and carry target/reliability" | tee -a "$OUT/run.log"
done

# 1. Every kernel once on its small cases (the ones the sanitizers run), and the JIT cache warm.
step "$OUT/run.log" 45 "$BIN/hgemm" info
step "$OUT/run.log" 60 "$BIN/hgemm" run --kernels all --seed "$HGEMM_SEED"
row "run: every kernel, small" "$(verdict)" "$(tail -1 "$TAIL")"

# 2. The GPU tests, one per process.
for t in sweep:hopper_random_shape_sweep_matches_cublas:120 determinism:hopper_outputs_are_bitwise_deterministic:45 \
    soak:hopper_soak_keeps_device_memory_flat:60 concurrency:hopper_concurrent_streams_share_one_handle:45 \
    split-concurrency:hopper_split_launches_on_concurrent_streams_finish:45 \
    per-thread-streams:hopper_split_launches_on_per_thread_streams_finish:45 \
    workspace-release:hopper_released_workspaces_give_their_memory_back:30 \
    graph-replays:hopper_graph_replays_match_cublas:30 \
    graph-two-streams:hopper_graph_from_two_streams_beside_their_own_calls:30 \
    beside-a-capture:hopper_split_call_beside_a_global_capture:30 \
    thread-without-context:hopper_calls_from_a_thread_without_the_context:30; do
    IFS=: read -r label name limit <<<"$t"
    step "$OUT/tests.log" "$limit" "$BIN/reliability" --ignored --exact "$name" --nocapture --test-threads 1
    row "$label" "$(verdict)" "$(why)"
done

# 3. The hang-guard build: the kernels still right with bounded waits, and the guard firing.
step "$OUT/hang.log" 60 "$BIN/hgemm-hang-guard" run --kernels all --seed "$HGEMM_SEED"
row "hang-guard build: kernels" "$(verdict)" "$(tail -1 "$TAIL")"
step "$OUT/hang.log" 40 "$BIN/hang" --ignored --exact hang_guard_reports_a_broken_pipeline --nocapture --test-threads 1
row "hang-guard: broken pipeline" "$(verdict)" "$(why)"
step "$OUT/hang.log" 40 "$BIN/hang" --ignored --exact hang_guard_reports_an_unpublished_flag --nocapture --test-threads 1
row "hang-guard: stream-K flag" "$(verdict)" "$(why)"

# 4. compute-sanitizer: one process per (tool, kernel group), SAN_JOBS at a time, no cuBLAS.
sanitize() {
    local tool=$1 group=$2 limit=$3 kernels extra=()
    kernels=$(group_kernels "$group")
    case $tool in
        memcheck) extra=(--leak-check full) ;;
        racecheck) extra=(--racecheck-report all) ;;
    esac
    local log=$WORK/san.$tool.$group
    {
        echo "=== $tool $group: compute-sanitizer --tool $tool ${extra[*]} hgemm run --kernels $kernels --ref cpu (timeout ${limit}s, $(date -u +%T))"
        timeout -k 10 "$limit" "$SANITIZER" --tool "$tool" "${extra[@]}" --print-limit 20 \
            "$BIN/hgemm" run --kernels "$kernels" --ref cpu --seed "$HGEMM_SEED" 2>&1
        echo "=== exit $?"
    } >"$log"
}
for tool in $TOOLS; do
    for group in $SAN_GROUPS; do
        while (($(jobs -rp | wc -l) >= SAN_JOBS)); do wait -n; done
        l=$(left)
        if ((l < 20)); then
            echo "=== $tool $group: skipped, time budget spent" >"$WORK/san.$tool.$group"
            continue
        fi
        # A ladder entry finishes in seconds; a variant up to ~100 s (the wide tile's M- or N-major
        # entries, alone under memcheck, synccheck or racecheck).
        limit=90
        [[ $group = var* ]] && limit=$((120 * VARIANT_CHUNK))
        ((limit > l - 5)) && limit=$((l - 5))
        sanitize "$tool" "$group" "$limit" &
    done
done
wait
for tool in $TOOLS; do for group in $SAN_GROUPS; do cat "$WORK/san.$tool.$group"; done; done >"$OUT/sanitizer.log"

# One cell per (tool, group): the errors of its ERROR SUMMARY (racecheck: errors/warnings of its
# own summary), marked F: when the run's own check failed as well (exit code not 0); T/O, skip, or
# ?rcN when no summary was printed.
cell() {
    local f=$WORK/san.$1.$2 rc errors
    grep -q 'skipped, time budget' "$f" && { echo skip; return; }
    rc=$(sed -n 's/^=== exit //p' "$f" | tail -1)
    errors=$(grep -m1 -o 'ERROR SUMMARY: [0-9]*' "$f" | grep -o '[0-9]*$')
    if [ "$1" = racecheck ]; then
        errors=$(sed -n 's/.*RACECHECK SUMMARY: [0-9]* hazards* displayed (\([0-9]*\) errors*, \([0-9]*\) warnings*).*/\1\/\2/p' "$f" | head -1)
    fi
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then echo "T/O"
    elif [ -z "$errors" ]; then echo "?rc$rc"
    elif [ "$rc" != 0 ]; then echo "F:$errors"
    else echo "$errors"; fi
}

{
    echo "hgemm reliability: $(date -u '+%F %H:%M UTC'), $GPU, compute-sanitizer $SANVER, HGEMM_SEED=$HGEMM_SEED, $(($(date +%s) - T0)) s"
    printf '%-30s %-5s %s\n' check result detail
    cat "$ROWS"
    echo
    echo "compute-sanitizer: errors per tool and kernel group (racecheck: errors/warnings; F: hgemm run's own check failed too; T/O: timed out)"
    printf '%-10s' tool
    for group in $SAN_GROUPS; do printf ' %-8s' "$group"; done
    echo
    for tool in $TOOLS; do
        printf '%-10s' "$tool"
        for group in $SAN_GROUPS; do printf ' %-8s' "$(cell "$tool" "$group")"; done
        echo
    done
    notes=$(grep -h -i -E 'not supported|unsupported|unable to|internal sanitizer error|cannot be|not instrumented' "$OUT/sanitizer.log" | sed 's/^=* *//' | sort | uniq -c | sort -rn | head -8)
    [ -n "$notes" ] && { echo "tool messages (count, text):"; echo "$notes"; }
    echo "logs: $OUT/{summary.txt,run.log,tests.log,hang.log,sanitizer.log}"
} >"$OUT/summary.txt"
rm -rf "$WORK"
cat "$OUT/summary.txt"
