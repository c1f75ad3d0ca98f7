//! Builds the PTX that the `hgemm` crate embeds: the `hgemm-kernels` crate compiled by rustc's
//! nvptx64 backend, once per kernel family (sm_90a for Hopper; sm_100f for the Blackwell family,
//! B200 being 10.0 and GB300 10.3) and per hang-guard setting. No CUDA toolkit is involved.
//!
//! The output is committed (`host/ptx/`), so that `hgemm` builds on stable Rust with nothing but
//! cargo; `scripts/build-ptx.sh` rewrites it and `tests/fresh.rs` fails when it is stale.
//!
//! Beside the PTX, cubins: the default build's PTX assembled by NVIDIA's ptxas for each SASS
//! target of its family ([`Cubin`]), which those devices load without the driver's JIT. ptxas's
//! output varies from run to run (ptxas 13.5 gave nine different sm_100a cubins, their register
//! allocation differing, in nine runs on one input), so a cubin cannot be checked by rebuilding it:
//! `host/ptx/cubins.txt` records the SHA-256 of the PTX each was assembled from and of the cubin,
//! and the check holds both to the committed files.
//!
//! How: `core` is built from rust-src (`-Zbuild-std=core`) by the nightly pinned in
//! `kernels/rust-toolchain.toml`; the PTX is the `--emit=asm` of the kernels crate, one codegen
//! unit; panics abort at once. Two edits are then made to the PTX text, both driven by the
//! kernels' own `KernelSpec`s:
//! - tensor-map parameters (128 bytes, which rustc can align to 16 only) get the 64-byte
//!   alignment the driver requires for a `__grid_constant__` CUtensorMap;
//! - each GEMM entry, and each tensor-core ceiling, gets `.maxntid <threads>, 1, 1` and
//!   `.minnctapersm 1`, without which ptxas assumes 1024-thread blocks and caps registers at 64
//!   a thread.

use hgemm_kernels::spec::Family;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What went wrong building or checking the PTX.
#[derive(Debug)]
pub enum Error {
    /// `kernels/rust-toolchain.toml` has no `channel = "..."` line.
    NoPin(PathBuf),
    /// A file could not be read or written.
    Io(PathBuf, std::io::Error),
    /// The nightly cargo could not be started, or the kernels crate did not compile.
    Build { output: Output, detail: String },
    /// Entries named by the kernels' specs are missing from the compiled PTX.
    MissingEntries { output: Output, missing: Vec<&'static str> },
    /// ptxas could not be run, or failed.
    Ptxas { arch: &'static str, detail: String },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Error::NoPin(p) => write!(f, "{}: no `channel = \"...\"` line", p.display()),
            Error::Io(p, e) => write!(f, "{}: {e}", p.display()),
            Error::Build { output, detail } => write!(f, "building {output} failed: {detail}"),
            Error::MissingEntries { output, missing } => {
                write!(f, "{output}: entries named in the kernels' specs are missing from the PTX: {missing:?}")
            }
            Error::Ptxas { arch, detail } => write!(f, "ptxas -arch {arch}: {detail}"),
        }
    }
}

impl std::error::Error for Error {}

/// One committed PTX module: a family's kernels, with the hang guard or without.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Output {
    pub family: Family,
    pub hang_guard: bool,
}

impl Output {
    /// Every module `hgemm` embeds: the default build's, and the `hang-guard` feature's.
    pub fn all() -> impl Iterator<Item = Output> {
        [false, true].into_iter().flat_map(|hang_guard| Family::ALL.map(|family| Output { family, hang_guard }))
    }

    /// Its path under `host/ptx/` (the names `host/src/ptx.rs` includes).
    pub fn file(self) -> PathBuf {
        let name = format!("{}.ptx", self.family.ptx_target());
        if self.hang_guard { Path::new("hang-guard").join(name) } else { PathBuf::from(name) }
    }
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.file().display())
    }
}

/// One embedded cubin: `arch`'s SASS, assembled by ptxas from its family's default-build PTX.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cubin {
    pub family: Family,
    pub arch: &'static str,
}

impl Cubin {
    /// Every cubin `hgemm` embeds (`hgemm::ptx::cubin`).
    pub fn all() -> impl Iterator<Item = Cubin> {
        Family::ALL.into_iter().flat_map(|family| family.sass_archs().iter().map(move |&arch| Cubin { family, arch }))
    }

    /// Its path under `host/ptx/`.
    pub fn file(self) -> PathBuf {
        PathBuf::from(format!("{}.cubin", self.arch))
    }

    /// The PTX it is assembled from.
    pub fn source(self) -> Output {
        Output { family: self.family, hang_guard: false }
    }
}

/// The record of what each cubin was assembled from, under `host/ptx/`.
pub const CUBIN_RECORD: &str = "cubins.txt";

/// NVIDIA's ptxas: in `$HGEMM_CUDA_BIN` (where scripts/cuda-tools.sh installs it from PyPI), else
/// on `PATH`.
pub fn ptxas() -> PathBuf {
    std::env::var_os("HGEMM_CUDA_BIN").map_or_else(|| PathBuf::from("ptxas"), |dir| Path::new(&dir).join("ptxas"))
}

/// ptxas's version line, as the record names it.
pub fn ptxas_version() -> Result<String, Error> {
    let failed = |detail: String| Error::Ptxas { arch: "-", detail };
    let out =
        Command::new(ptxas()).arg("--version").output().map_err(|e| failed(format!("{}: {e}", ptxas().display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().find(|l| l.contains("release")).map(|l| l.trim().to_string()).ok_or_else(|| failed(text.to_string()))
}

/// Assembles `cubin` from the committed PTX (`host/ptx/`), as the driver's JIT would (ptxas's
/// defaults, -O3).
pub fn assemble(ws: &Workspace, cubin: Cubin) -> Result<Vec<u8>, Error> {
    let failed = |detail: String| Error::Ptxas { arch: cubin.arch, detail };
    let source = ws.ptx_dir().join(cubin.source().file());
    let dir = ws.target_dir("cubin");
    std::fs::create_dir_all(&dir).map_err(|e| Error::Io(dir.clone(), e))?;
    let out = dir.join(cubin.file());
    let run = Command::new(ptxas())
        .args(["-arch", cubin.arch, "-o"])
        .arg(&out)
        .arg(&source)
        .output()
        .map_err(|e| failed(format!("{}: {e} (scripts/build-ptx.sh installs it)", ptxas().display())))?;
    if !run.status.success() {
        return Err(failed(String::from_utf8_lossy(&run.stderr).into_owned()));
    }
    std::fs::read(&out).map_err(|e| Error::Io(out, e))
}

/// The record's line for `cubin`: its file, the SHA-256 of its PTX and of itself.
pub fn record_line(cubin: Cubin, ptx: &[u8], bytes: &[u8]) -> String {
    format!("{} {} {}", cubin.file().display(), sha256(ptx), sha256(bytes))
}

/// The record `host/ptx/cubins.txt` holds for `lines`, assembled by ptxas `version`.
pub fn record(version: &str, lines: &[String]) -> String {
    format!(
        "# Written by scripts/build-ptx.sh: each cubin, the SHA-256 of the PTX it was assembled from and\n\
         # its own. Assembled by ptxas ({version}).\n{}\n",
        lines.join("\n")
    )
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The paths this tool works with, all derived from the workspace root.
#[derive(Clone, Debug)]
pub struct Workspace {
    pub root: PathBuf,
}

impl Workspace {
    /// The workspace this crate belongs to.
    pub fn this() -> Workspace {
        let tools_ptxgen = Path::new(env!("CARGO_MANIFEST_DIR"));
        Workspace {
            root: tools_ptxgen.parent().and_then(Path::parent).expect("tools/ptxgen lies two levels down").into(),
        }
    }

    pub fn kernels_manifest(&self) -> PathBuf {
        self.root.join("kernels/Cargo.toml")
    }

    /// Where the committed PTX lives.
    pub fn ptx_dir(&self) -> PathBuf {
        self.root.join("host/ptx")
    }

    /// The nested builds' target directories: one per output, so that each stays fresh until
    /// the kernels change, and the check after a rebuild compiles nothing.
    pub fn target_dir(&self, what: &str) -> PathBuf {
        let target =
            std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| self.root.join("target"));
        target.join("ptxgen").join(what)
    }

    /// The pinned nightly, from `kernels/rust-toolchain.toml`.
    pub fn nightly(&self) -> Result<String, Error> {
        let path = self.root.join("kernels/rust-toolchain.toml");
        let text = std::fs::read_to_string(&path).map_err(|e| Error::Io(path.clone(), e))?;
        text.lines()
            .filter_map(|l| l.trim().strip_prefix("channel"))
            .filter_map(|rest| rest.trim().strip_prefix('='))
            .filter_map(|v| v.trim().strip_prefix('"')?.strip_suffix('"'))
            .next()
            .map(str::to_string)
            .ok_or(Error::NoPin(path))
    }
}

/// `cargo <subcommand>` on the kernels crate for `output`'s target, run by the pinned nightly
/// `toolchain`, in `target_dir`; arguments for the compiler of the kernels crate itself may
/// follow (they go after the `--` this ends with the family's flags). The lints
/// (`tests/lint.rs`) run the same invocation as `cargo clippy` and `cargo rustdoc`, so that they
/// read the crate exactly as the build compiles it.
pub fn kernels_cargo(ws: &Workspace, toolchain: &str, subcommand: &str, target_dir: &Path, output: Output) -> Command {
    let family = output.family;
    // The rustup proxy, told which toolchain to run: the caller's cargo is stable.
    let mut cmd = Command::new("cargo");
    cmd.env("RUSTUP_TOOLCHAIN", toolchain)
        .arg(subcommand)
        .arg("--manifest-path")
        .arg(ws.kernels_manifest())
        .args(["--lib", "--release", "--target", "nvptx64-nvidia-cuda", "-Zbuild-std=core"])
        .arg("--target-dir")
        .arg(target_dir)
        .args(["--", "-C", &format!("target-cpu={}", family.ptx_target())])
        .args(["-C", &format!("target-feature={}", family.ptx_isa()), "--cfg", family.name()])
        // Flags for `core` and the kernels alike; nothing of the calling build's must leak in.
        .env("CARGO_ENCODED_RUSTFLAGS", "-Zunstable-options\x1f-Cpanic=immediate-abort");
    for var in [
        "RUSTFLAGS",
        "RUSTDOCFLAGS",
        "RUSTC",
        "RUSTDOC",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_BUILD_RUSTC",
        "CARGO_BUILD_RUSTC_WRAPPER",
    ] {
        cmd.env_remove(var);
    }
    if output.hang_guard {
        cmd.args(["--cfg", "hang_guard"]);
    }
    cmd
}

/// Compiles `output`'s PTX and applies the fix-ups: the text `host/ptx/<output.file()>` must hold.
pub fn build(ws: &Workspace, output: Output) -> Result<String, Error> {
    let toolchain = ws.nightly()?;
    let target_dir = ws.target_dir(&output.file().with_extension("").display().to_string().replace('/', "-"));
    let emitted = target_dir.join(format!("{}.raw.ptx", output.family.ptx_target()));
    let mut cmd = kernels_cargo(ws, &toolchain, "rustc", &target_dir, output);
    cmd.args(["-C", "codegen-units=1"]).arg(format!("--emit=asm={}", emitted.display()));
    let failed = |detail: String| Error::Build { output, detail };
    let status = cmd.status().map_err(|e| failed(format!("could not run cargo ({toolchain}): {e}")))?;
    if !status.success() {
        return Err(failed(format!(
            "cargo ({toolchain}) exited with {status}; see its errors above. If the toolchain is \
             missing, run `rustup toolchain install` in kernels/"
        )));
    }
    let raw = std::fs::read_to_string(&emitted).map_err(|e| Error::Io(emitted, e))?;
    fix_up(&raw, output)
}

/// The entries of `family` and the thread count each is launched with.
fn entries(family: Family) -> Vec<(&'static str, u32)> {
    let mut entries: Vec<(&str, u32)> =
        hgemm_kernels::kernels().filter(|s| s.family == family).map(|s| (s.name, s.threads)).collect();
    if family == Family::Hopper {
        entries.extend(hgemm_kernels::hopper::ceiling::CEILINGS.iter().map(|c| (c.entry, c.threads())));
    }
    entries
}

/// rustc's PTX as the driver and ptxas must see it (see the crate's documentation).
pub fn fix_up(ptx: &str, output: Output) -> Result<String, Error> {
    let entries = entries(output.family);
    let mut out = String::with_capacity(ptx.len() + 4096);
    let mut in_entry: Option<u32> = None;
    let mut found = Vec::new();
    for line in ptx.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix(".visible .entry ").and_then(|r| r.strip_suffix('(')) {
            in_entry = entries.iter().find(|e| e.0 == name).map(|e| e.1);
            found.extend(entries.iter().find(|e| e.0 == name).map(|e| e.0));
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
    let missing: Vec<_> = entries.iter().map(|e| e.0).filter(|name| !found.contains(name)).collect();
    if missing.is_empty() { Ok(out) } else { Err(Error::MissingEntries { output, missing }) }
}

/// Where two texts first differ: the 1-based line number and the two lines (empty past the end
/// of a text), or `None` when they are equal.
pub fn first_difference(committed: &str, fresh: &str) -> Option<(usize, String, String)> {
    if committed == fresh {
        return None;
    }
    let (mut a, mut b) = (committed.lines(), fresh.lines());
    for n in 1.. {
        match (a.next(), b.next()) {
            (Some(x), Some(y)) if x == y => continue,
            (None, None) => return Some((n, "(a difference in line endings)".into(), String::new())),
            (x, y) => {
                let show = |l: Option<&str>| l.map_or_else(|| "(end of file)".to_string(), str::to_string);
                return Some((n, show(x), show(y)));
            }
        }
    }
    unreachable!()
}

/// Compares the committed PTX with `fresh` builds: one line per stale or missing output, and
/// one for any file under `host/ptx/` that no output names. Empty when everything is current.
pub fn stale(ws: &Workspace, fresh: &[(Output, String)]) -> Vec<String> {
    let dir = ws.ptx_dir();
    let mut problems = Vec::new();
    for (output, text) in fresh {
        let path = dir.join(output.file());
        match std::fs::read_to_string(&path) {
            Err(e) => problems.push(format!("{}: {e}", path.display())),
            Ok(committed) => {
                if let Some((line, was, now)) = first_difference(&committed, text) {
                    problems.push(format!(
                        "{} differs from a fresh build of the kernels, first at line {line}:\n  committed: {was}\n  fresh:     {now}",
                        path.display()
                    ));
                }
            }
        }
    }
    problems.extend(stale_cubins(&dir));
    let mut named: Vec<PathBuf> = Output::all().map(Output::file).chain(Cubin::all().map(Cubin::file)).collect();
    named.push(PathBuf::from(CUBIN_RECORD));
    for file in files_under(&dir) {
        let relative = file.strip_prefix(&dir).unwrap_or(&file).to_path_buf();
        if !named.contains(&relative) {
            problems.push(format!("{}: no build writes this file", file.display()));
        }
    }
    problems
}

/// Each cubin against the record: assembled from the PTX committed now, and unchanged since.
fn stale_cubins(dir: &Path) -> Vec<String> {
    let record_path = dir.join(CUBIN_RECORD);
    let record = match std::fs::read_to_string(&record_path) {
        Ok(text) => text,
        Err(e) => return vec![format!("{}: {e}", record_path.display())],
    };
    let mut problems = Vec::new();
    for cubin in Cubin::all() {
        let name = cubin.file().display().to_string();
        let Some(line) = record.lines().find(|l| l.split_whitespace().next() == Some(name.as_str())) else {
            problems.push(format!("{}: no line for {name}", record_path.display()));
            continue;
        };
        let read =
            |file: PathBuf| std::fs::read(dir.join(&file)).map_err(|e| format!("{}: {e}", dir.join(file).display()));
        match (read(cubin.source().file()), read(cubin.file())) {
            (Ok(ptx), Ok(bytes)) if record_line(cubin, &ptx, &bytes) == line.trim() => {}
            (Ok(ptx), Ok(bytes)) => problems.push(format!(
                "{name} is not the committed PTX assembled (or was changed since):\n  recorded: {}\n  now:      {}",
                line.trim(),
                record_line(cubin, &ptx, &bytes)
            )),
            (Err(e), _) | (_, Err(e)) => problems.push(e),
        }
    }
    problems
}

/// Every file below `dir`, recursively (none if it does not exist).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() { files.extend(files_under(&path)) } else { files.push(path) }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pin_is_read_from_the_kernels_toolchain_file() {
        let pin = Workspace::this().nightly().unwrap();
        assert!(pin.starts_with("nightly-20"), "{pin}");
    }

    #[test]
    fn outputs_are_four_distinct_files() {
        let files: Vec<_> = Output::all().map(Output::file).collect();
        assert_eq!(files.len(), 4);
        assert!(files.iter().all(|f| files.iter().filter(|g| *g == f).count() == 1));
        assert_eq!(files[0], PathBuf::from("sm_90a.ptx"));
        assert_eq!(files[3], PathBuf::from("hang-guard/sm_100f.ptx"));
    }

    #[test]
    fn cubins_are_the_sass_targets_of_the_default_ptx() {
        let files: Vec<_> = Cubin::all().map(|c| (c.file(), c.source().file())).collect();
        assert_eq!(
            files,
            [("sm_90a.cubin", "sm_90a.ptx"), ("sm_100a.cubin", "sm_100f.ptx"), ("sm_103a.cubin", "sm_100f.ptx")]
                .map(|(c, p)| (PathBuf::from(c), PathBuf::from(p)))
        );
        assert_eq!(sha256(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn first_difference_names_the_line() {
        assert_eq!(first_difference("a\nb\n", "a\nb\n"), None);
        assert_eq!(first_difference("a\nb\nc\n", "a\nx\nc\n"), Some((2, "b".into(), "x".into())));
        assert_eq!(first_difference("a\n", "a\nb\n"), Some((2, "(end of file)".into(), "b".into())));
        assert!(first_difference("a\n", "a\r\n").is_some());
    }

    #[test]
    fn fix_up_aligns_tensor_maps_and_bounds_threads() {
        let spec = hgemm_kernels::kernels().find(|s| s.family == Family::Blackwell).unwrap();
        let others: String = entries(Family::Blackwell)
            .iter()
            .filter(|e| e.0 != spec.name)
            .map(|e| format!(".visible .entry {}(\n)\n", e.0))
            .collect();
        let ptx = format!(
            ".visible .entry {}(\n\t.param .align 16 .b8 p_0[128],\n\t.param .u32 p_1\n)\n{{\n}}\n{others}",
            spec.name
        );
        let out = fix_up(&ptx, Output { family: Family::Blackwell, hang_guard: false }).unwrap();
        assert!(out.contains("\t.param .align 64 .b8 p_0[128],\n"), "{out}");
        assert!(out.contains(&format!(")\n.maxntid {}, 1, 1\n.minnctapersm 1\n{{", spec.threads)), "{out}");
        let missing = fix_up(&others, Output { family: Family::Blackwell, hang_guard: false });
        assert!(matches!(missing, Err(Error::MissingEntries { missing, .. }) if missing == [spec.name]));
    }
}
