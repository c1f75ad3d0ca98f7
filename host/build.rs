//! Compiles the `hgemm-kernels` crate to PTX with rustc's nvptx64 backend, once per kernel family
//! (sm_90a for Hopper, sm_100f for the Blackwell family: B200 is 10.0, GB300 10.3), and writes
//! `$OUT_DIR/<target>.ptx` for `src/ptx.rs` to embed. No CUDA toolkit is involved.
//!
//! How (see TOOLCHAIN.md): `core` is built from rust-src (`-Zbuild-std=core`); the PTX is the
//! `--emit=asm` of the kernels crate, one codegen unit; panics abort at once. Two edits are then
//! made to the PTX text, both driven by the kernels' own `KernelSpec`s:
//! - tensor-map parameters (128 bytes, which rustc can align to 16 only) get the 64-byte
//!   alignment the driver requires for a `__grid_constant__` CUtensorMap;
//! - each GEMM entry, and each tensor-core ceiling, gets `.maxntid <threads>, 1, 1` and
//!   `.minnctapersm 1`, without which ptxas assumes 1024-thread blocks and caps registers at 64
//!   a thread.

#[path = "kernels_cargo.rs"]
mod kernels_cargo;

use hgemm_kernels::spec::Family;
use kernels_cargo::kernels_cargo;
use std::path::{Path, PathBuf};
use std::{env, fs};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let kernels = manifest.parent().unwrap().join("kernels");
    println!("cargo:rerun-if-changed={}", kernels.join("src").display());
    println!("cargo:rerun-if-changed={}", kernels.join("Cargo.toml").display());
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let hang_guard = env::var_os("CARGO_FEATURE_HANG_GUARD").is_some();

    for family in Family::ALL {
        let raw = compile(&kernels, &out, family, hang_guard);
        let ptx = fix_up(&raw, family);
        fs::write(out.join(format!("{}.ptx", family.ptx_target())), ptx).unwrap();
    }
}

fn compile(kernels: &Path, out: &Path, family: Family, hang_guard: bool) -> String {
    let target = family.ptx_target();
    let emitted = out.join(format!("{target}.raw.ptx"));
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = kernels_cargo(&cargo, "rustc", &kernels.join("Cargo.toml"), &out.join("nvptx"), family, hang_guard);
    cmd.args(["-C", "codegen-units=1"]).arg(format!("--emit=asm={}", emitted.display()));
    let status = cmd.status().expect("failed to run cargo for the nvptx64 kernels build");
    assert!(status.success(), "building the kernels crate for {target} failed (see the errors above)");
    fs::read_to_string(&emitted).unwrap()
}

fn fix_up(ptx: &str, family: Family) -> String {
    let mut entries: Vec<(&str, u32)> =
        hgemm_kernels::kernels().filter(|s| s.family == family).map(|s| (s.name, s.threads)).collect();
    if family == Family::Hopper {
        entries.extend(hgemm_kernels::hopper::ceiling::CEILINGS.iter().map(|c| (c.entry, c.threads())));
    }
    let mut out = String::with_capacity(ptx.len() + 4096);
    let mut in_entry: Option<u32> = None;
    let mut found = 0;
    for line in ptx.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix(".visible .entry ").and_then(|r| r.strip_suffix('(')) {
            in_entry = entries.iter().find(|e| e.0 == name).map(|e| e.1);
            found += in_entry.is_some() as usize;
        }
        if t.starts_with(".param .align 16 .b8 ") && t.trim_end_matches(',').ends_with("[128]") {
            out.push_str(&line.replacen(".align 16", ".align 64", 1));
        } else {
            out.push_str(line);
        }
        out.push('\n');
        if t == ")"
            && let Some(threads) = in_entry.take()
        {
            out.push_str(&format!(".maxntid {threads}, 1, 1\n.minnctapersm 1\n"));
        }
    }
    assert_eq!(found, entries.len(), "some {family:?} kernels named in their specs are missing from the PTX");
    out
}
