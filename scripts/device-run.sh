#!/usr/bin/env bash
# On the GPU machine (builds nothing): verify each kernel in its own process under a timeout, so a
# hang names its kernel, then benchmark. Usage: device-run.sh "v0 v1 ..." [bench args...]
# The CLI is the staged one (scripts/stage-device.sh), or $HGEMM.
set -u
B=${HGEMM:-.device/bin/hgemm}
KERNELS=${1:-}
shift || true
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv,noheader
status=0
for v in $KERNELS; do
    timeout 120 $B verify --kernels $v --seed $RANDOM > $OUT/verify-$v.log 2>&1
    rc=$?
    echo "verify $v: rc=$rc $(tail -1 $OUT/verify-$v.log)"
    [ $rc -eq 0 ] || { status=1; grep -v " ok$" $OUT/verify-$v.log | tail -5; }
done
if [ $# -gt 0 ]; then
    timeout 400 $B bench "$@"
fi
exit $status
