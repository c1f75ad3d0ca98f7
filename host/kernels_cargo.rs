//! The one `cargo` invocation that compiles the kernels crate for the GPU: `host/build.rs` runs it
//! as `cargo rustc` to emit the PTX, and `host/tests/lint.rs` as `cargo clippy` and `cargo rustdoc`,
//! so that the lints read the crate exactly as the build compiles it.

use hgemm_kernels::spec::Family;
use std::path::Path;
use std::process::Command;

/// `cargo <subcommand>` on the kernels crate at `manifest` for `family`'s PTX target, in
/// `target_dir`, with the hang guard or without; arguments for the compiler of the kernels crate
/// itself may follow (they go after the `--` this ends with the family's flags).
pub fn kernels_cargo(
    cargo: &str,
    subcommand: &str,
    manifest: &Path,
    target_dir: &Path,
    family: Family,
    hang_guard: bool,
) -> Command {
    let mut cmd = Command::new(cargo);
    cmd.arg(subcommand)
        .arg("--manifest-path")
        .arg(manifest)
        .args(["--lib", "--release", "--target", "nvptx64-nvidia-cuda", "-Zbuild-std=core"])
        .arg("--target-dir")
        .arg(target_dir)
        .args(["--", "-C", &format!("target-cpu={}", family.ptx_target())])
        .args(["-C", &format!("target-feature={}", family.ptx_isa()), "--cfg", family.name()])
        // Flags for `core` and the kernels alike; nothing of the outer build's must leak in.
        .env("CARGO_ENCODED_RUSTFLAGS", "-Zunstable-options\x1f-Cpanic=immediate-abort")
        .env_remove("RUSTFLAGS")
        .env_remove("RUSTDOCFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .env_remove("RUSTC_WORKSPACE_WRAPPER");
    if hang_guard {
        cmd.args(["--cfg", "hang_guard"]);
    }
    cmd
}
