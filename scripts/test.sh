#!/usr/bin/env bash
# The test command. Needs no GPU: it installs NVIDIA's ptxas, cuobjdump and nvdisasm from PyPI
# into .tools/ (once), checks formatting (rustfmt.toml), lints and doc links (clippy, rustdoc;
# warnings are errors), then runs every test of the workspace; GPU tests are #[ignore]d and run
# on a GPU machine (scripts/device-final.sh runs them from binaries built here).
# The pinned nightly and rust-src come from rust-toolchain.toml; rustup 1.28 and later no longer
# install a missing pinned toolchain on the first cargo call, so it is installed here (a no-op
# where it is present).
set -euo pipefail
cd "$(dirname "$0")/.."
rustup toolchain install
CUDA_TOOLS=.tools/cuda
VERSION=13.5.37
if [ ! -x "$CUDA_TOOLS/nvidia/cu13/bin/ptxas" ] || [ ! -x "$CUDA_TOOLS/nvidia/cu13/bin/cuobjdump" ]; then
    python3 -m pip install --quiet --disable-pip-version-check --target "$CUDA_TOOLS" \
        "nvidia-cuda-nvcc==$VERSION" "nvidia-cuda-cuobjdump==$VERSION" "nvidia-cuda-nvdisasm==$VERSION"
fi
export HGEMM_CUDA_BIN="$PWD/$CUDA_TOOLS/nvidia/cu13/bin"
cargo fmt --all --check
cargo clippy --release --workspace --all-targets --quiet -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --release --workspace --no-deps --document-private-items --quiet
cargo test --release --workspace "$@"
# The hang-guard build (scripts/build-reliability.sh) assembled and held to its bounds, in a target
# directory of its own so that it replaces none of the default build's binaries.
cargo test --release -p hgemm --features hang-guard --target-dir target/hang-guard --test ptxas "$@"
# The unit tests once more in a debug build, whose arithmetic overflow checks turn a wrapped size
# in the host's checks into a failure.
cargo test --workspace --lib --quiet "$@"

# --- candle (issue 58): hgemm in one dependency graph with candle-core 0.11 and its `cuda`
# feature, the crate hgemm-candle (a workspace of its own, candle/). scripts/candle-tools.sh
# installs nvcc 13.0 and link-only stubs of the CUDA libraries into .tools/ (once). Formatted,
# linted, documented, built with every target, and its unit tests (no GPU) run, started with the
# stubs as their libraries; its GPU tests are #[ignore]d (scripts/stage-candle.sh builds them).
(
    source scripts/candle-tools.sh
    cd candle
    cargo fmt --check
    cargo clippy --release --all-targets --quiet -- -D warnings
    RUSTDOCFLAGS="-D warnings" cargo doc --release --no-deps --quiet
    LD_LIBRARY_PATH=$CANDLE_STUBS_RUN cargo test --release --quiet
)
