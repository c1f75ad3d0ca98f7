#!/usr/bin/env bash
# On the GPU machine, with binaries built here and carried in .device/bin (scripts/stage-device.sh):
# verify, the ignored GPU tests, the example, the ladder at 8192³ and the 12-shape sweep.
# Logs go to $OUT/final.log; the chart and the sweep's numbers beside it.
set -u
B=.device/bin
L=$OUT/final.log
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit,temperature.gpu --format=csv,noheader
timeout 420 $B/hgemm verify --seed $RANDOM > $OUT/verify.tmp 2>&1
echo "verify: rc=$? $(tail -1 $OUT/verify.tmp)"; grep -E "FAIL|hgemm:" $OUT/verify.tmp | head -5; cat $OUT/verify.tmp >> $L
HGEMM_SEED=$RANDOM timeout 420 $B/gpu --ignored hopper --test-threads 1 > $OUT/gpu.tmp 2>&1
echo "gpu tests: rc=$? $(grep -E '^test result' $OUT/gpu.tmp)"; grep -E "FAIL|panicked" $OUT/gpu.tmp | head -5; cat $OUT/gpu.tmp >> $L
rm -f $OUT/*.tmp
timeout 120 $B/mlp 2>&1 | tail -3
# The card's clock and power while the ladder runs, every 100 ms: whether it is power-capped.
nvidia-smi --query-gpu=clocks.sm,power.draw,clocks_event_reasons.sw_power_cap --format=csv,noheader,nounits -lms 100 > $OUT/smi.csv 2>&1 &
SMI=$!
timeout 300 $B/hgemm bench --samples 11 --kernels v0,v1,v2,v3,v4,v5,v6,v7,auto,direct --svg $OUT/ladder.svg 2>&1 | tee -a $L | tail -14
kill $SMI
python3 scripts/power-summary.py $OUT/smi.csv | tee -a $L
timeout 400 $B/hgemm bench --sweep --samples 11 --kernels auto,whole --json $OUT/sweep.json 2>&1 | tee -a $L | grep -E "^[0-9]|auto|geomean"
