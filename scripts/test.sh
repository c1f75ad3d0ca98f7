#!/usr/bin/env bash
# The test command. Needs no GPU: it installs NVIDIA's ptxas, cuobjdump and nvdisasm from PyPI
# into .tools/ (once), checks formatting (rustfmt.toml), lints and doc links (clippy, rustdoc;
# warnings are errors), then runs every test of the workspace; GPU tests are #[ignore]d and run
# on a GPU machine (scripts/device-final.sh runs them from binaries built here). The workspace's
# tests include the check that the committed PTX (host/ptx/) is what the kernels compile to
# today (tools/ptxgen/tests/fresh.rs). Last, it builds hgemm the way its users do: a crate of its
# own on stable (examples/downstream), an application that links CUDA itself
# (examples/dynamic-linking), tensor-parallel layers on NCCL (examples/tensor-parallel: built,
# linted and its sharding arithmetic unit-tested, with no GPU and no NCCL), and the crates as they
# would be published (`cargo package`).
# Toolchains: the host crates build on stable (rust-toolchain.toml); the kernels' PTX build and
# lints use the nightly pinned in kernels/rust-toolchain.toml, with rust-src. rustup 1.28 and
# later no longer install a missing pinned toolchain on the first cargo call, so both are
# installed here (a no-op where they are present).
set -euo pipefail
cd "$(dirname "$0")/.."
rustup toolchain install
(cd kernels && rustup toolchain install)
source scripts/cuda-tools.sh
EXAMPLES=(examples/downstream examples/dynamic-linking examples/tensor-parallel)
cargo fmt --all --check
for crate in "${EXAMPLES[@]}"; do
    cargo fmt --check --manifest-path "$crate/Cargo.toml"
done
cargo clippy --release --workspace --all-targets --quiet -- -D warnings
# --all-features as docs.rs builds them (host/Cargo.toml's [package.metadata.docs.rs]).
RUSTDOCFLAGS="-D warnings" cargo doc --release --workspace --all-features --no-deps --document-private-items --quiet
cargo test --release --workspace "$@"
# The hang-guard build (scripts/build-reliability.sh) assembled and held to its bounds, in a target
# directory of its own so that it replaces none of the default build's binaries.
cargo test --release -p hgemm --features hang-guard --target-dir target/hang-guard --test ptxas "$@"
# The unit tests once more in a debug build, whose arithmetic overflow checks turn a wrapped size
# in the host's checks into a failure.
cargo test --workspace --lib --quiet "$@"
# hgemm as a dependency, each crate with its own workspace, lockfile and rust-toolchain.toml
# (stable): the downstream binary (which scripts/stage-device.sh sends to the GPU machine) is built
# and linted; the dynamic-linking graph is checked (linking it would need libcuda).
(cd examples/downstream && cargo --version && cargo clippy --release --locked --quiet -- -D warnings &&
    cargo build --release --locked --quiet)
(cd examples/dynamic-linking && cargo check --locked --quiet)
# NCCL, libcuda and cuBLAS are loaded when first used: the example's unit tests need none of them.
(cd examples/tensor-parallel && cargo clippy --release --locked --all-targets --quiet -- -D warnings &&
    cargo test --release --locked --quiet)
# The published crates: packaged (with any uncommitted change), then built from the package
# alone (the committed PTX and cubins included, no ../kernels). cargo builds hgemm against the
# packaged hgemm-kernels as a registry crate of the same version every time, whose unpacked copy
# and build it takes to be current: both are removed first, so that each run builds what it
# packaged.
rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/hgemm-kernels-* target/package-verify
cargo package --locked --quiet --allow-dirty --target-dir target/package-verify -p hgemm-kernels -p hgemm

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
