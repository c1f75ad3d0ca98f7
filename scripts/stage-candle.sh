#!/usr/bin/env bash
# Build the candle crate's binaries the GPU machine runs into .device/bin (which the device call
# carries): the example timing a Llama MLP block on candle's matmul and on hgemm's
# (candle_mlp) and the crate's GPU tests (candle-gpu, run with --ignored). They link the real
# CUDA 13 libraries there through an rpath to /usr/local/cuda/lib64 (libcuda comes with the
# driver); candle's kernels are built for compute capability 9.0 (H100, H200).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/candle-tools.sh
cd candle
rpath=(-C link-arg=-Wl,-rpath,/usr/local/cuda/lib64)
cargo rustc --release --example candle_mlp -- "${rpath[@]}"
exe=$(cargo rustc --release --test gpu --message-format=json -- "${rpath[@]}" |
    python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "gpu":
        print(m["executable"])' | tail -1)
mkdir -p ../.device/bin
cp target/release/examples/candle_mlp ../.device/bin/candle_mlp
cp "$exe" ../.device/bin/candle-gpu
strip ../.device/bin/candle_mlp ../.device/bin/candle-gpu
ls -la ../.device/bin/candle_mlp ../.device/bin/candle-gpu
