#!/usr/bin/env bash
# Sourced by the scripts that build the candle crate (scripts/test.sh, scripts/stage-candle.sh):
# installs what candle-core's `cuda` feature needs at build time into .tools/cuda-13.0 (once;
# skipped where present) and exports the environment its build scripts read.
#
# - candle-kernels compiles its .cu files with nvcc (found through $NVCC, headers beside it,
#   thrust and cuda/std from CCCL) for $CUDA_COMPUTE_CAP, which it cannot ask a GPU for here.
#   The toolkit is 13.0, not the newer 13.5 whose ptxas the hgemm tests use: candle loads its
#   PTX through the driver's JIT, and the GPU machine's driver 580 (CUDA 13.0) refuses PTX of a
#   newer ISA version.
# - cudarc's `dynamic-linking` (candle turns it on) links every binary against libcuda, cuBLAS,
#   cuBLASLt, cuRAND and NVRTC. No CUDA driver exists here, so link-only stubs stand in for them:
#   shared objects with the real sonames that define every function cudarc's bindings declare
#   (each aborts if called). They live in lib/stubs, as in a CUDA toolkit; CANDLE_STUBS_RUN
#   holds them under their sonames for starting the unit tests that need no GPU (a binary that
#   links them cannot start without them). On the GPU machine the binaries load the real
#   libraries. CUDARC_CUDA_VERSION pins the bindings to CUDA 13.0, the GPU machine's driver API.
CANDLE_CUDA=$PWD/.tools/cuda-13.0
CANDLE_CUDA_ROOT=$CANDLE_CUDA/nvidia/cu13
if [ ! -x "$CANDLE_CUDA_ROOT/bin/nvcc" ] || [ ! -d "$CANDLE_CUDA_ROOT/include/cccl" ] || [ ! -d "$CANDLE_CUDA_ROOT/nvvm" ]; then
    # pip --target does not merge into an existing nvidia/ folder: all wheels in one call.
    rm -rf "$CANDLE_CUDA"
    python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$CANDLE_CUDA" \
        "nvidia-cuda-nvcc==13.0.88" "nvidia-cuda-crt==13.0.88" "nvidia-cuda-runtime==13.0.96" \
        "nvidia-cuda-cccl==13.0.85" "nvidia-nvvm==13.0.88"
fi
if [ ! -e "$CANDLE_CUDA_ROOT/lib/stubs/run/libcudart.so.13" ]; then
    python3 scripts/cuda-stubs.py "$(cargo metadata --format-version 1 --manifest-path candle/Cargo.toml |
        python3 -c 'import json, sys
print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"] == "cudarc").rsplit("/", 1)[0])')" \
        "$CANDLE_CUDA_ROOT/lib/stubs"
fi
export NVCC=$CANDLE_CUDA_ROOT/bin/nvcc
export CUDA_ROOT=$CANDLE_CUDA_ROOT
export CUDA_COMPUTE_CAP=90
export CUDARC_CUDA_VERSION=13000
# candle-kernels compiles its files on half the cores by default; the build waits on it.
export CUDAFORGE_THREADS=$(nproc)
CANDLE_STUBS_RUN=$CANDLE_CUDA_ROOT/lib/stubs/run
