#!/usr/bin/env bash
# Rebuild the PTX that hgemm embeds (host/ptx/) from kernels/, after a kernel changes: the kernels
# crate compiled by rustc's nvptx64 backend with the nightly pinned in kernels/rust-toolchain.toml
# (installed here if missing), for each family, with and without the hang guard. Commit the
# result: tools/ptxgen/tests/fresh.rs (run by scripts/test.sh) fails while it differs from a
# fresh build. `scripts/build-ptx.sh --check` compares without writing.
set -euo pipefail
cd "$(dirname "$0")/.."
(cd kernels && rustup toolchain install)
cargo run --release --quiet -p hgemm-ptxgen -- "$@"
