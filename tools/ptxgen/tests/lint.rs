//! The kernels as the PTX build compiles them for the GPU, linted and documented. On the host
//! target most of the kernels crate is `cfg`'d out (the `ptx` module, every kernel body), so the
//! workspace's `cargo clippy` and `cargo doc` never read them, and the PTX build does not show
//! its warnings. Here clippy and rustdoc read the crate for `nvptx64-nvidia-cuda` through the
//! invocation the PTX build compiles it with ([`hgemm_ptxgen::kernels_cargo`]), for every output
//! (each family, with and without the hang guard), and any warning fails (a lint, or a doc link
//! that leads nowhere). Needs no GPU.

use hgemm_ptxgen::{Output, Workspace, kernels_cargo};

/// Runs `cargo <subcommand>` on the kernels crate for every output, `extra` after the family's
/// flags; returns what failed, with its errors.
fn for_every_build(subcommand: &str, extra: &[&str]) -> Vec<String> {
    let ws = Workspace::this();
    let toolchain = ws.nightly().unwrap();
    let target_dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("lint-nvptx");
    let mut failures = Vec::new();
    for output in Output::all() {
        let mut cmd = kernels_cargo(&ws, &toolchain, subcommand, &target_dir, output);
        cmd.args(["-D", "warnings"]).args(extra);
        let out = cmd.output().unwrap_or_else(|e| panic!("failed to run cargo {subcommand}: {e}"));
        if !out.status.success() {
            failures.push(format!("{output}:\n{}", String::from_utf8_lossy(&out.stderr)));
        }
    }
    failures
}

#[test]
fn kernels_lint_clean_for_every_family() {
    let failures = for_every_build("clippy", &[]);
    assert!(failures.is_empty(), "clippy on the kernels for nvptx64:\n{}", failures.join("\n"));
}

#[test]
fn kernels_docs_resolve_for_every_family() {
    let failures = for_every_build("rustdoc", &["--document-private-items"]);
    assert!(failures.is_empty(), "rustdoc on the kernels for nvptx64:\n{}", failures.join("\n"));
}
