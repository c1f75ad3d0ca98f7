#!/usr/bin/env bash
# First look on the GPU machine: device, verify, bench at 8192³. Builds nothing.
set -u
B=${1:-target/release/hgemm}
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv
timeout 120 $B info
timeout 300 $B verify --seed 7
timeout 200 $B bench --samples 15 --json $OUT/bench.json --svg $OUT/ladder.svg
