#!/usr/bin/env bash
# Build the binaries the GPU machine runs (it has no Rust) and copy them to .device/bin, which
# the device call carries: the CLI, the GPU test binaries, the example, the criterion bench, and
# examples/downstream (hgemm used as a dependency on stable Rust, checked against an f64 reference:
# `.device/bin/downstream`, exit status 0 when every GEMM matches), and examples/tensor-parallel
# (`.device/bin/tensor-parallel`, run by scripts/device-tp.sh, which finds NCCL on the machine).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --bins --examples
(cd examples/downstream && cargo build --release --locked)
(cd examples/tensor-parallel && cargo build --release --locked)
mkdir -p .device/bin
cp target/release/hgemm target/release/examples/mlp .device/bin/
cp examples/downstream/target/release/hgemm-downstream .device/bin/downstream
cp examples/tensor-parallel/target/release/hgemm-tensor-parallel .device/bin/tensor-parallel
source scripts/test-executable.sh
for t in gpu reliability epilogue; do
    cp "$(test_executable hgemm-testing "$t")" ".device/bin/$t"
done
exe=$(cargo bench -p hgemm-benches --no-run --message-format=json 2>/dev/null | grep -o '"executable":"[^"]*gemm-[^"]*"' | tail -1 | cut -d'"' -f4)
cp "$exe" .device/bin/gemm
strip .device/bin/* 2>/dev/null || true
ls -la .device/bin
