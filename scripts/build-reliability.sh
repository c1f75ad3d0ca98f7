#!/usr/bin/env bash
# Builds, on this machine, everything scripts/device-reliability.sh runs on the GPU machine (which
# has no Rust), and gathers it in target/reliability/ — the one path to carry:
#   hgemm             the CLI (`hgemm run` is what the sanitizers wrap)
#   reliability       host/tests/reliability.rs: sweep, determinism, soak, concurrency
#   hgemm-hang-guard  the CLI built with --features hang-guard
#   hang              host/tests/hang.rs built with --features hang-guard
# The hang-guard build goes to target/hang-guard/ so that it replaces none of the default build's
# binaries. Never run two builds at once on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/reliability

# The executable of integration test $1, built with the remaining cargo arguments.
test_executable() {
    local name=$1
    shift
    cargo test --release -p hgemm "$@" --test "$name" --no-run --message-format=json |
        python3 -c 'import json, sys
name = sys.argv[1]
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == name:
        print(m["executable"])' "$name" | tail -1
}

cargo build --release -p hgemm --bin hgemm
reliability=$(test_executable reliability)
cargo build --release -p hgemm --bin hgemm --features hang-guard --target-dir target/hang-guard
hang=$(test_executable hang --features hang-guard --target-dir target/hang-guard)

rm -rf "$out"
mkdir -p "$out"
cp target/release/hgemm "$out/hgemm"
cp "$reliability" "$out/reliability"
cp target/hang-guard/release/hgemm "$out/hgemm-hang-guard"
cp "$hang" "$out/hang"
ls -l "$out"
du -sh "$out"
