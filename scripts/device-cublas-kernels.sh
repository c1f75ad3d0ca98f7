#!/usr/bin/env bash
# On the GPU machine: which kernel cuBLAS runs for each shape, with its grid and cluster, read by
# Nsight Compute (`ncu --section LaunchStats`, clocks left alone) from one bf16 C = A·Bᵀ per shape
# through PyTorch. cuBLAS's Hopper kernels name their tile in the name (`nvjet_sm90_tst_256x136_…`:
# 256 along N, 136 along M): the tiles and grids to compare v7's with (docs/shapes.md, "Where no
# entry is fast enough"). Usage: scripts/device-cublas-kernels.sh 925x4608x3584,403x6272x8576,…
# Prints a table; ncu's CSV goes to $OUT/cublas-kernels.csv (or ./ without $OUT).
set -euo pipefail
shapes=${1:?"shapes, MxNxK,..."}
csv=${OUT:-.}/cublas-kernels.csv
script=$(mktemp --suffix=.py)
cat > "$script" <<'PY'
import sys, torch
for s in sys.argv[1].split(","):
    m, n, k = map(int, s.split("x"))
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    c = a @ b.t()
    torch.cuda.synchronize()
PY
# Every kernel is profiled; the table keeps those that are not torch's own (the random fill).
ncu --clock-control none --section LaunchStats --csv python3 "$script" "$shapes" > "$csv"
rm -f "$script"
python3 - "$csv" "$shapes" <<'PY'
import csv, io, sys
lines = open(sys.argv[1]).read().splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
kernels = {}
for r in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
    k = kernels.setdefault(r["ID"], {"name": r["Kernel Name"]})
    k[r["Metric Name"]] = r["Metric Value"]
gemm = [k for k in kernels.values() if "at::" not in k["name"] and "elementwise" not in k["name"]]
print("| kernel | grid | cluster | block |")
print("|---|---|---|---|")
for k in gemm:
    print(f'| {k["name"][:90]} | {k.get("Grid Size")} | {k.get("Cluster Size")} | {k.get("Block Size")} |')
print(f"{len(gemm)} cuBLAS kernels for {len(sys.argv[2].split(','))} shapes, in order "
      "(a split-K call adds its reduce kernel after its GEMM)")
PY
