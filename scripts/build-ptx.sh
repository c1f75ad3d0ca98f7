#!/usr/bin/env bash
# Rebuild the PTX that hgemm embeds (host/ptx/) from kernels/, after a kernel changes: the kernels
# crate compiled by rustc's nvptx64 backend with the nightly pinned in kernels/rust-toolchain.toml
# (installed here if missing), for each family, with and without the hang guard; then the cubins,
# the default build's PTX assembled by ptxas (from PyPI, scripts/cuda-tools.sh) for sm_90a,
# sm_100a and sm_103a, and their record (host/ptx/cubins.txt). Commit the result:
# tools/ptxgen/tests/fresh.rs (run by scripts/test.sh) fails while it is stale.
# `scripts/build-ptx.sh --check` compares without writing.
set -euo pipefail
cd "$(dirname "$0")/.."
(cd kernels && rustup toolchain install)
source scripts/cuda-tools.sh
cargo run --release --quiet -p hgemm-ptxgen -- "$@"
