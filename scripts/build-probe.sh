#!/usr/bin/env bash
# Build an experimental `hgemm` CLI: HEAD with patches applied, in a git worktree, so that the
# working tree is never left patched. The stripped CLI goes to .device/probe/NAME, for a device
# call to carry beside .device/bin (scripts/device-ab.sh times builds against each other).
#
#   scripts/build-probe.sh NAME PATCH...     (applied in order, e.g. docs/probes/l2-hints-a.patch)
set -euo pipefail
cd "$(dirname "$0")/.."
NAME=$1
shift
# One worktree path and one target directory for every probe, so that each build after the
# first recompiles only what its patches touch.
SRC=target/probe/src
git worktree remove --force "$SRC" 2>/dev/null || rm -rf "$SRC"
git worktree prune
git worktree add --detach --quiet "$SRC" HEAD
trap 'git worktree remove --force "$SRC"' EXIT
for patch in "$@"; do
    git -C "$SRC" apply "$PWD/$patch"
done
CARGO_TARGET_DIR="$PWD/target/probe/build" cargo build --release --quiet -p hgemm-cli --bin hgemm --manifest-path "$SRC/Cargo.toml"
mkdir -p .device/probe
strip -o ".device/probe/$NAME" target/probe/build/release/hgemm
rm -rf "target/probe/ptx-$NAME"
".device/probe/$NAME" ptx --out "target/probe/ptx-$NAME" >/dev/null
echo "$NAME: HEAD $(git rev-parse --short HEAD) + $*"
(cd "target/probe/ptx-$NAME" && sha256sum -- *.ptx | cut -c1-8,65-)
