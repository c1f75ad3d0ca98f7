#!/usr/bin/env bash
# On the GPU machine, with binaries built here and carried in .device/bin (scripts/stage-device.sh):
# verify, the ignored GPU tests, the example, the ladder at 8192³, the 12-shape sweep, criterion.
set -u
B=.device/bin
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv,noheader
timeout 420 $B/hgemm verify --seed $RANDOM > $OUT/verify.log 2>&1
echo "verify: rc=$? $(tail -1 $OUT/verify.log)"; grep -E "FAIL|hgemm:" $OUT/verify.log | head -5
HGEMM_SEED=$RANDOM timeout 420 $B/gpu --ignored hopper --test-threads 1 > $OUT/gpu-tests.log 2>&1
echo "gpu tests: rc=$? $(grep -E '^test result' $OUT/gpu-tests.log)"
timeout 120 $B/mlp 2>&1 | tail -4
timeout 300 $B/hgemm bench --samples 20 --kernels v0,v1,v2,v3,v4,v5,v6,v7,auto,direct --svg $OUT/ladder.svg --json $OUT/ladder.json 2>&1 | tail -14
timeout 400 $B/hgemm bench --sweep --samples 15 --kernels auto --json $OUT/sweep.json --csv $OUT/sweep.csv 2>&1 | grep -E "^[0-9]|cuBLAS|auto|geomean"
timeout 200 $B/gemm --bench --warm-up-time 1 --measurement-time 2 2>&1 | grep -E "^gemm|time:|thrpt:" | head -30
