#!/usr/bin/env bash
# Builds, on this machine, everything scripts/device-reliability.sh runs on the GPU machine (which
# has no Rust), and gathers it in target/reliability/ — the one path to carry:
#   hgemm             the CLI (`hgemm run` is what the sanitizers wrap)
#   reliability       testing/tests/reliability.rs: sweep, determinism, soak, concurrency
#   hgemm-hang-guard  the CLI built with --features hang-guard
#   hang              host/tests/hang.rs built with --features hang-guard
# The hang-guard build goes to target/hang-guard/ so that it replaces none of the default build's
# binaries. Never run two builds at once on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/reliability

source scripts/test-executable.sh

cargo build --release -p hgemm-cli --bin hgemm
reliability=$(test_executable hgemm-testing reliability)
cargo build --release -p hgemm-cli --bin hgemm --features hang-guard --target-dir target/hang-guard
hang=$(test_executable hgemm hang --features hang-guard --target-dir target/hang-guard)

rm -rf "$out"
mkdir -p "$out"
cp target/release/hgemm "$out/hgemm"
cp "$reliability" "$out/reliability"
cp target/hang-guard/release/hgemm "$out/hgemm-hang-guard"
cp "$hang" "$out/hang"
ls -l "$out"
du -sh "$out"
