#!/usr/bin/env bash
# On the GPU machine (builds nothing): is build B faster than build A? Both are `hgemm` CLIs
# built here and carried (e.g. in .device/bin). Each is first checked, every kernel on its small
# cases under a short timeout (a build whose kernel hangs costs a minute, not the call), and
# `verify`; then the two alternate, ROUNDS sweeps each, in one call; a table of per-shape medians
# and geometric means comes last. Logs and JSON go to $OUT.
#
#   scripts/device-ab.sh A B [ROUNDS] [bench args...]     (default: 2 rounds of --sweep)
#
# Build B's kernels with --features hang-guard as well and run that binary in place of B here
# first when a change touches barriers: a hang then names its barrier instead of timing out.
set -u
cd "$(dirname "$0")/.."
A=$1
B=$2
ROUNDS=${3:-2}
if [ "$(basename "$A")" = "$(basename "$B")" ]; then
    echo "device-ab.sh: the two builds need different file names (they name the logs)" >&2
    exit 2
fi
shift 2
shift || true
BENCH=("$@")
[ ${#BENCH[@]} -eq 0 ] && BENCH=(--sweep)
OUT=${OUT:-/tmp/hgemm-ab}
mkdir -p "$OUT"
for bin in "$A" "$B"; do
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
    for bin in "$A" "$B"; do
        name=$(basename "$bin")
        timeout -k 5 120 "$bin" bench "${BENCH[@]}" --samples 7 --kernels auto --json "$OUT/$name.$round.json" >"$OUT/$name.$round.log" 2>&1
        echo "$name round $round: rc=$?"
    done
done
python3 - "$OUT" "$(basename "$A")" "$(basename "$B")" "$ROUNDS" <<'PY'
import json, math, statistics, sys
out, a, b, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def ratios(name):
    runs = []
    for r in range(1, rounds + 1):
        try:
            rows = json.load(open(f"{out}/{name}.{r}.json"))["results"]
        except (OSError, ValueError):
            continue
        runs.append({(x["m"], x["n"], x["k"]): x["vs_cublas"] for x in rows if x["implementation"] != "cuBLAS"})
    return runs
ra, rb = ratios(a), ratios(b)
if not ra or not rb:
    sys.exit("no complete round for one of the builds: see the logs")
shapes = [s for s in ra[0] if all(s in r for r in ra + rb)]
geo = lambda run: math.exp(sum(math.log(run[s]) for s in shapes) / len(shapes))
print(f"{'MxNxK':<20} {a:>12} {b:>12}  (median ratio to cuBLAS over the rounds)")
for s in shapes:
    ma, mb = statistics.median(r[s] for r in ra), statistics.median(r[s] for r in rb)
    print(f"{'x'.join(map(str, s)):<20} {ma:>12.3f} {mb:>12.3f}")
print(f"{'geomean per round':<20} {', '.join(f'{geo(r):.3f}' for r in ra):>12} {', '.join(f'{geo(r):.3f}' for r in rb):>12}")
PY
