#!/usr/bin/env bash
# On the GPU machine, with binaries built here and carried in .device/bin (scripts/stage-device.sh):
# the tensor-parallel example (examples/tensor-parallel) on NCCL, with one rank and then, where
# more GPUs are visible, on 2..all of them (its scaling), each run checked against the unsharded
# layers and timed with hgemm and with cuBLAS; then `hgemm budget`, the SM budget on one GPU.
# Logs go to $OUT/tp.log (or ./tp.log without $OUT).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${BIN:-.device/bin}
L=${OUT:-.}/tp.log
# NVLink multicast (NVLS) stays off: the machines' owners require it.
export NCCL_NVLS_ENABLE=0

# NCCL's library: from the image's Python package (nvidia-nccl-cu13 or -cu12, wherever its wheel
# put it under the `nvidia` namespace), else anywhere under /usr or /opt.
nccl=""
roots=$(python3 -c 'import nvidia; print(" ".join(nvidia.__path__))' 2>/dev/null || true)
if [ -n "$roots" ]; then
    nccl=$(find $roots -name 'libnccl.so.2' 2>/dev/null | head -1 || true)
fi
if [ -z "$nccl" ]; then
    nccl=$(find /usr /opt -name 'libnccl.so.2' 2>/dev/null | head -1 || true)
fi
if [ -z "$nccl" ]; then
    echo "device-tp: libnccl.so.2 not found (pip package nvidia-nccl-cu13, or /usr, /opt)" >&2
    exit 1
fi
# cudarc 0.19.10 loads NCCL by the names libnccl.so, libnccl.so.1, .9 to .12 and .<CUDA major>
# (get_lib_name_candidates in its src/lib.rs), not libnccl.so.2: a link named libnccl.so, in a
# directory of its own, put first on the library path.
links=$(mktemp -d)
trap 'rm -rf "$links"' EXIT
ln -s "$nccl" "$links/libnccl.so"
export LD_LIBRARY_PATH="$links:$(dirname "$nccl")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

gpus=$(nvidia-smi -L | wc -l)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv,noheader | tee -a "$L"
echo "NCCL: $nccl; $gpus GPU(s); NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE" | tee -a "$L"
status=0
for n in $(seq 1 "$gpus"); do
    timeout 300 "$B/tensor-parallel" --gpus "$n" 2>&1 | tee -a "$L" || status=1
done
# On several GPUs, the GEMMs again on 100 of an H100's or H200's 132 SMs, leaving 32 to NCCL's
# channels (with one rank NCCL runs no kernel beside them).
if [ "$gpus" -gt 1 ]; then
    timeout 300 "$B/tensor-parallel" --gpus "$gpus" --max-sms 100 2>&1 | tee -a "$L" || status=1
fi
timeout 300 "$B/hgemm" budget 2>&1 | tee -a "$L" || status=1
exit $status
