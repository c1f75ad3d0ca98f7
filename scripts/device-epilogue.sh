#!/usr/bin/env bash
# On the GPU machine (an H100 or H200), with binaries built here and carried in .device/bin
# (scripts/stage-device.sh): the fused epilogue's GPU tests, the MLP example, and its bench
# against cuBLASLt and cuBLAS + separate kernels (about 4 minutes of GPU time in all).
# Logs go to $OUT/epilogue.log.
set -u
B=.device/bin
L=$OUT/epilogue.log
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv,noheader | tee -a $L
HGEMM_SEED=$RANDOM timeout 420 $B/epilogue --ignored --test-threads 1 > $OUT/epilogue-tests.log 2>&1
echo "epilogue tests: rc=$? $(grep -E '^test result' $OUT/epilogue-tests.log)" | tee -a $L
grep -E "FAIL|panicked" -A3 $OUT/epilogue-tests.log | head -20
timeout 120 $B/mlp 2>&1 | tail -5 | tee -a $L
for mode in gelu-bias bias-silu swiglu; do
    timeout 240 $B/hgemm bench --epilogue $mode --mlp --samples 9 2>&1 | tee -a $L | grep -E "geometric|differ|hgemm:"
done
timeout 180 $B/hgemm bench --epilogue gelu-bias --sweep --samples 9 2>&1 | tee -a $L | grep -E "geometric|differ|hgemm:"
timeout 180 $B/hgemm bench --epilogue swiglu --sweep --samples 9 2>&1 | tee -a $L | grep -E "geometric|differ|hgemm:"
