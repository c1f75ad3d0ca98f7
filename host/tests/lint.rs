//! The kernels as the build compiles them for the GPU, linted and documented. On the host target
//! most of the kernels crate is `cfg`'d out (the `ptx` module, every kernel body), so the
//! workspace's `cargo clippy` and `cargo doc` never read them, and the build script's nested
//! compile does not show its warnings. Here clippy and rustdoc read the crate for
//! `nvptx64-nvidia-cuda` through the invocation `host/build.rs` compiles it with
//! (`host/kernels_cargo.rs`), for each family, with and without the hang guard, and any warning fails (a lint, or a doc link that leads nowhere).
//! Needs no GPU.

#[path = "../kernels_cargo.rs"]
mod kernels_cargo;

use hgemm_kernels::spec::Family;
use std::path::Path;

/// Runs `cargo <subcommand>` on the kernels crate for every family, with and without the hang
/// guard, `extra` after the family's flags; returns what failed, with its errors.
fn for_every_build(subcommand: &str, extra: &[&str]) -> Vec<String> {
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/Cargo.toml");
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lint-nvptx");
    let mut failures = Vec::new();
    for family in Family::ALL {
        for hang_guard in [false, true] {
            let mut cmd =
                kernels_cargo::kernels_cargo(env!("CARGO"), subcommand, &kernels, &target_dir, family, hang_guard);
            cmd.args(["-D", "warnings"]).args(extra);
            let out = cmd.output().unwrap_or_else(|e| panic!("failed to run cargo {subcommand}: {e}"));
            if !out.status.success() {
                let guard = if hang_guard { " with the hang guard" } else { "" };
                failures.push(format!("{}{guard}:\n{}", family.name(), String::from_utf8_lossy(&out.stderr)));
            }
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
