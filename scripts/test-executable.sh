# Sourced by the staging scripts. test_executable PACKAGE NAME [CARGO ARGS...] builds integration
# test NAME of PACKAGE (hgemm-testing: gpu, reliability; hgemm: hang, ptxas, ...) and prints its
# executable's path (picked by target name: cargo also lists the binaries it built on the way).
test_executable() {
    local package=$1 name=$2
    shift 2
    cargo test --release -p "$package" "$@" --test "$name" --no-run --message-format=json |
        python3 -c 'import json, sys
name = sys.argv[1]
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == name:
        print(m["executable"])' "$name" | tail -1
}
