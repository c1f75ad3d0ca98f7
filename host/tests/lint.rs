//! The kernels as the build compiles them for the GPU, linted. On the host target most of the
//! kernels crate is `cfg`'d out (the `ptx` module, every kernel body), so the workspace's
//! `cargo clippy` never reads them; and the build script's nested compile does not show its
//! warnings. Here clippy reads the crate for `nvptx64-nvidia-cuda` with each family's flags, as
//! `host/build.rs` passes them, with and without the hang guard, and any warning fails. Needs no
//! GPU.

use hgemm_kernels::spec::Family;
use std::path::Path;
use std::process::Command;

#[test]
fn kernels_lint_clean_for_every_family() {
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/Cargo.toml");
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("lint-nvptx");
    let mut failures = Vec::new();
    for family in Family::ALL {
        for hang_guard in [false, true] {
            let mut cmd = Command::new(env!("CARGO"));
            cmd.arg("clippy")
                .arg("--manifest-path")
                .arg(&kernels)
                .args(["--lib", "--release", "--quiet", "--target", "nvptx64-nvidia-cuda", "-Zbuild-std=core"])
                .arg("--target-dir")
                .arg(&target_dir)
                .args(["--", "--cfg", family.name()])
                .args(["-C", &format!("target-cpu={}", family.ptx_target())])
                .args(["-C", &format!("target-feature={}", family.ptx_isa())])
                .args(["-D", "warnings"])
                // As host/build.rs: nothing of the outer build's flags leaks in.
                .env("CARGO_ENCODED_RUSTFLAGS", "-Zunstable-options\x1f-Cpanic=immediate-abort")
                .env_remove("RUSTFLAGS")
                .env_remove("CARGO_TARGET_DIR")
                .env_remove("CARGO_BUILD_TARGET")
                .env_remove("RUSTC_WORKSPACE_WRAPPER");
            if hang_guard {
                cmd.args(["--cfg", "hang_guard"]);
            }
            let out = cmd.output().expect("failed to run cargo clippy");
            if !out.status.success() {
                let guard = if hang_guard { " with the hang guard" } else { "" };
                failures.push(format!("{}{guard}:\n{}", family.name(), String::from_utf8_lossy(&out.stderr)));
            }
        }
    }
    assert!(failures.is_empty(), "clippy on the kernels for nvptx64:\n{}", failures.join("\n"));
}
