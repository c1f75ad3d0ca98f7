# Sourced by the staging scripts. test_executable NAME [CARGO ARGS...] builds integration test
# NAME of the host crate and prints its executable's path (picked by target name: cargo also
# lists the binaries it built on the way).
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
