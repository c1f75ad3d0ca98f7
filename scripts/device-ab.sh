#!/usr/bin/env bash
# On the GPU machine (builds nothing): which of two or more builds is fastest? Each is an `hgemm`
# CLI built here and carried (.device/bin/hgemm, and probes from scripts/build-probe.sh in
# .device/probe). Each is first checked, every kernel on its small cases under a short timeout
# (a build whose kernel hangs costs a minute, not the call), and `verify`; then they alternate,
# ROUNDS benches each (one process per build and round), in one call; a table of per-shape
# medians and geometric means comes last. Logs and JSON go to $OUT. CHECKS=0 skips the checks,
# for a later call on builds an earlier call has checked.
#
#   scripts/device-ab.sh A B [C ...] [ROUNDS] [bench args...]     (default: 2 rounds of --sweep)
#
# Build a changed kernel with --features hang-guard as well and run that binary here first when
# the change touches barriers: a hang then names its barrier instead of timing out.
set -u
cd "$(dirname "$0")/.."
BUILDS=()
while [ $# -gt 0 ] && [ -f "$1" ]; do
    BUILDS+=("$1")
    shift
done
if [ ${#BUILDS[@]} -lt 2 ]; then
    echo "device-ab.sh: want two or more builds (existing files) first, got ${#BUILDS[@]}" >&2
    exit 2
fi
if [ "$(for b in "${BUILDS[@]}"; do basename "$b"; done | sort | uniq -d)" != "" ]; then
    echo "device-ab.sh: the builds need different file names (they name the logs)" >&2
    exit 2
fi
ROUNDS=2
if [[ ${1:-} =~ ^[0-9]+$ ]]; then
    ROUNDS=$1
    shift
fi
BENCH=("$@")
[ ${#BENCH[@]} -eq 0 ] && BENCH=(--sweep)
OUT=${OUT:-/tmp/hgemm-ab}
mkdir -p "$OUT"
for bin in "${BUILDS[@]}"; do
    [ "${CHECKS:-1}" = 0 ] && break
    name=$(basename "$bin")
    timeout -k 5 60 "$bin" run --kernels all --seed $RANDOM >"$OUT/$name.run.log" 2>&1
    rc=$?
    echo "$name: run every kernel: rc=$rc, $(tail -1 "$OUT/$name.run.log")"
    [ $rc = 0 ] || exit 1
    timeout -k 5 90 "$bin" verify --seed $RANDOM >"$OUT/$name.verify.log" 2>&1
    rc=$?
    echo "$name: verify: rc=$rc, $(tail -1 "$OUT/$name.verify.log")"
    [ $rc = 0 ] || exit 1
done
for round in $(seq "$ROUNDS"); do
    for bin in "${BUILDS[@]}"; do
        name=$(basename "$bin")
        timeout -k 5 120 "$bin" bench "${BENCH[@]}" --samples 7 --kernels auto --json "$OUT/$name.$round.json" >"$OUT/$name.$round.log" 2>&1
        echo "$name round $round: rc=$?"
    done
done
NAMES=()
for bin in "${BUILDS[@]}"; do NAMES+=("$(basename "$bin")"); done
python3 - "$OUT" "$ROUNDS" "${NAMES[@]}" <<'PY'
import json, math, statistics, sys
out, rounds, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def ratios(name):
    runs = []
    for r in range(1, rounds + 1):
        try:
            rows = json.load(open(f"{out}/{name}.{r}.json"))["results"]
        except (OSError, ValueError):
            continue
        runs.append({(x["m"], x["n"], x["k"]): x["vs_cublas"] for x in rows if x["implementation"] != "cuBLAS"})
    return runs
runs = {n: ratios(n) for n in names}
if not all(runs.values()):
    sys.exit("no complete round for " + ", ".join(n for n in names if not runs[n]) + ": see the logs")
every = [r for n in names for r in runs[n]]
shapes = [s for s in every[0] if all(s in r for r in every)]
geo = lambda run: math.exp(sum(math.log(run[s]) for s in shapes) / len(shapes))
w = max(12, 7 * len(runs[names[0]]) - 2, *(len(n) for n in names))
print(f"{'MxNxK':<20}" + "".join(f" {n:>{w}}" for n in names) + "  (median ratio to cuBLAS over the rounds)")
for s in shapes:
    print(f"{'x'.join(map(str, s)):<20}" + "".join(f" {statistics.median(r[s] for r in runs[n]):>{w}.3f}" for n in names))
print(f"{'geomean per round':<20}" + "".join(f" {', '.join(f'{geo(r):.3f}' for r in runs[n]):>{w}}" for n in names))
PY
