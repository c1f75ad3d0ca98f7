//! The embedded PTX, assembled by NVIDIA's ptxas for every target of its family and read back as
//! SASS. Needs no GPU; `scripts/test.sh` installs ptxas and cuobjdump from PyPI.
//!
//! Checked for every GEMM kernel and target: it assembles, without a warning (so `setmaxnreg`
//! is honoured, C7508, and no `wgmma` is serialized), with a `setmaxnreg` split that the
//! registers it launches with can pay for, with no stack frame and no spills; its SASS
//! holds the tensor-core and TMA instructions it is meant to (HGMMA on Hopper, UTC*MMA on
//! Blackwell), and Hopper's v7 feeds its HGMMAs descriptors computed in uniform registers. The
//! resulting table — registers, shared memory, instruction counts — must equal
//! `docs/resources.md`: any change in a kernel's resources shows up as a failing test until the
//! table is regenerated (`HGEMM_BLESS=1`) and the difference reviewed.

use hgemm::ptx;
use hgemm_kernels::spec::{Family, KernelSpec};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn cuda_tool(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("HGEMM_CUDA_BIN") {
        let p = Path::new(&dir).join(name);
        assert!(p.exists(), "{} not found (HGEMM_CUDA_BIN={})", name, p.display());
        return p;
    }
    let found = std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.exists()));
    found.unwrap_or_else(|| panic!("{name} not found: run the tests with scripts/test.sh, which installs it from PyPI"))
}

/// ptxas's report for one entry.
#[derive(Debug, Default, Clone, PartialEq)]
struct Resources {
    registers: u32,
    stack: u32,
    spill_stores: u32,
    spill_loads: u32,
}

/// Instruction classes counted in one function's SASS.
#[derive(Debug, Default, Clone, PartialEq)]
struct Sass {
    mma: u32,
    tma_load: u32,
    tma_store: u32,
    mbarrier: u32,
    bar: u32,
    /// `R2UR` moves between one HGMMA and the next: descriptors computed in ordinary registers
    /// and copied to the uniform ones the MMA reads.
    r2ur_between_mma: u32,
}

struct Assembled {
    resources: BTreeMap<String, Resources>,
    sass: BTreeMap<String, Sass>,
    warnings: Vec<String>,
}

fn assemble(family: Family, text: &str, arch: &str) -> Assembled {
    // One directory per call: the tests run in parallel threads of one process.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("hgemm-ptxas-{}-{call}-{arch}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (src, cubin) = (dir.join(format!("{}.ptx", family.ptx_target())), dir.join(format!("{arch}.cubin")));
    std::fs::write(&src, text).unwrap();
    let out =
        Command::new(cuda_tool("ptxas")).args(["-v", "-arch", arch, "-o"]).arg(&cubin).arg(&src).output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ptxas -arch {arch} failed:\n{log}");

    let mut resources = BTreeMap::new();
    let mut current = String::new();
    let mut warnings = Vec::new();
    for line in log.lines() {
        // ptxas reports an ignored `setmaxnreg` (C7508) and serialized `wgmma`s (C7510, C7515,
        // C7518) as "info: Potential Performance Loss", not as warnings.
        if line.contains("warning") || line.contains("Potential Performance Loss") {
            warnings.push(line.to_string());
        }
        if let Some(rest) = line.split("Function properties for ").nth(1) {
            current = rest.trim().to_string();
            resources.entry(current.clone()).or_insert_with(Resources::default);
        } else if line.contains("bytes stack frame") {
            let n: Vec<u32> = line.split(|c: char| !c.is_ascii_digit()).filter_map(|t| t.parse().ok()).collect();
            let r = resources.get_mut(&current).unwrap();
            (r.stack, r.spill_stores, r.spill_loads) = (n[0], n[1], n[2]);
        } else if let Some(rest) = line.split("Used ").nth(1)
            && let Some(r) = resources.get_mut(&current)
        {
            r.registers = rest.split_whitespace().next().unwrap().parse().unwrap();
        }
    }

    let dump = Command::new(cuda_tool("cuobjdump")).arg("-sass").arg(&cubin).output().unwrap();
    assert!(dump.status.success(), "cuobjdump failed: {}", String::from_utf8_lossy(&dump.stderr));
    let mut sass: BTreeMap<String, Sass> = BTreeMap::new();
    let mut function = String::new();
    // R2URs since the last HGMMA of the function, if there was one.
    let mut since_mma: Option<u32> = None;
    for line in String::from_utf8_lossy(&dump.stdout).lines() {
        if let Some(name) = line.trim().strip_prefix("Function : ") {
            function = name.trim().to_string();
            since_mma = None;
            continue;
        }
        // `/*0120*/  @!P0 SYNCS.ARRIVE.TRANS64.A1T0 RZ, [UR4], RZ ;`
        let Some(code) = line.trim().strip_prefix("/*").and_then(|l| l.split_once("*/")).map(|(_, c)| c.trim()) else {
            continue;
        };
        let code = if code.starts_with('@') { code.split_once(' ').map(|(_, c)| c.trim()).unwrap_or("") } else { code };
        let op = code.split([' ', ';']).next().unwrap_or("");
        let s = sass.entry(function.clone()).or_default();
        let base = op.split('.').next().unwrap_or("");
        match base {
            "HGMMA" => {
                s.mma += 1;
                s.r2ur_between_mma += since_mma.unwrap_or(0);
                since_mma = Some(0);
            }
            "R2UR" => since_mma = since_mma.map(|n| n + 1),
            "UTCHMMA" | "UTCQMMA" | "UTCIMMA" | "UTCOMMA" | "UTCMMA" => s.mma += 1,
            "UTMALDG" => s.tma_load += 1,
            "UTMASTG" => s.tma_store += 1,
            "SYNCS" => s.mbarrier += 1,
            "BAR" => s.bar += 1,
            _ => {}
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Assembled { resources, sass, warnings }
}

/// The PTX of entry `name`, from its `.entry` line to the next entry.
fn entry_body<'a>(text: &'a str, name: &str) -> &'a str {
    let at = text.find(&format!(".entry {name}(")).unwrap_or_else(|| panic!("{name} missing"));
    &text[at..at + 1 + text[at + 1..].find(".entry ").unwrap_or(text.len() - at - 1)]
}

/// `setmaxnreg` moves registers between the warpgroups of a CTA: the producer warpgroup (the
/// first) gives registers back with `dec`, and every other warpgroup's `inc` waits until the
/// CTA's pool holds what it asks for. Only the registers the CTA launched with are in that pool,
/// so a split that needs more than `registers × threads` hangs every launch at the `inc` (seen on
/// the H200, a5cee7e, 2026-11-30: 48/232 for 384 threads launched at 168, 2,048 too many).
fn check_register_budget(spec: &KernelSpec, body: &str, registers: u32, arch: &str) {
    let values = |op: &str| -> Vec<u32> {
        let form = format!("setmaxnreg.{op}.sync.aligned.u32 ");
        body.match_indices(&form)
            .map(|(i, _)| body[i + form.len()..].split(';').next().unwrap().trim().parse().unwrap())
            .collect()
    };
    let (dec, inc) = (values("dec"), values("inc"));
    if dec.is_empty() && inc.is_empty() {
        return;
    }
    assert!(
        dec.len() == 1 && inc.len() == 1,
        "{} on {arch}: expected one setmaxnreg.dec (producer) and one .inc (consumers): {dec:?} {inc:?}",
        spec.name
    );
    let needed = 128 * dec[0] + (spec.threads - 128) * inc[0];
    assert!(
        needed <= registers * spec.threads,
        "{} on {arch}: setmaxnreg {}/{} needs {needed} registers, the CTA launches with {registers} × {} = {}",
        spec.name,
        dec[0],
        inc[0],
        spec.threads,
        registers * spec.threads
    );
}

fn table() -> String {
    let mut t = String::from(
        "# Kernel resources\n\n\
         Generated by `host/tests/ptxas.rs` from the embedded PTX with ptxas and cuobjdump 13.5 (`HGEMM_BLESS=1 scripts/test.sh --test ptxas` rewrites it; the test fails while this file and the kernels disagree). Counts are SASS instructions in the kernel's code, not executions.\n\n\
         | kernel | arch | registers | dynamic smem (B) | stack | spills | MMA | TMA load | TMA store | mbarrier ops | bar | R2UR between MMAs |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (family, text) in ptx::all() {
        for &arch in ptx::ptxas_archs(family) {
            let asm = assemble(family, text, arch);
            assert!(asm.warnings.is_empty(), "ptxas -arch {arch} warned:\n{}", asm.warnings.join("\n"));
            let specs: Vec<&KernelSpec> = hgemm_kernels::kernels().filter(|s| s.family == family).collect();
            for spec in specs {
                let r = asm
                    .resources
                    .get(spec.name)
                    .unwrap_or_else(|| panic!("{} missing from the {arch} ptxas report", spec.name));
                check_register_budget(spec, entry_body(text, spec.name), r.registers, arch);
                // A hang-guard build is a diagnostic one: its bounded waits take registers the
                // wide tiles have none to spare of (producer 24, consumers 240), and ptxas keeps a
                // few of their values in local memory; with the fused epilogue's code, gated
                // tiles held included, that is up to 16 bytes of stack and 16/44 bytes of spill
                // stores/loads (5ada9a1, 2026-12-06; 16/12/40 at 1f875c6, 8/8/24 before), and 60
                // bytes of loads in the tall tile 144 wide, row-major (2026-12-07). It is held to
                // that; the default build to none.
                let allowed = if cfg!(feature = "hang-guard") { (16, 16, 64) } else { (0, 0, 0) };
                assert!(
                    r.stack <= allowed.0 && r.spill_stores <= allowed.1 && r.spill_loads <= allowed.2,
                    "{} on {arch}: stack or spills: {r:?} (allowed {allowed:?})",
                    spec.name
                );
                let s = asm.sass.get(spec.name).cloned().unwrap_or_default();
                assert!(s.mma > 0, "{} on {arch}: no tensor-core MMA in the SASS", spec.name);
                assert!(s.tma_load > 0, "{} on {arch}: no TMA load in the SASS", spec.name);
                assert_eq!(
                    s.tma_store > 0,
                    spec.c_box.is_some(),
                    "{} on {arch}: TMA stores do not match its spec",
                    spec.name
                );
                // v7 broadcasts its stage so that ptxas keeps the descriptors uniform (+0.5%).
                if family == Family::Hopper && spec.version == 7 {
                    assert_eq!(
                        s.r2ur_between_mma, 0,
                        "{} on {arch}: HGMMA descriptors moved from ordinary registers",
                        spec.name
                    );
                }
                t.push_str(&format!(
                    "| {} | {arch} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                    spec.name,
                    r.registers,
                    spec.smem_bytes,
                    r.stack,
                    r.spill_stores + r.spill_loads,
                    s.mma,
                    s.tma_load,
                    s.tma_store,
                    s.mbarrier,
                    s.bar,
                    s.r2ur_between_mma
                ));
            }
        }
    }
    t
}

#[test]
fn kernels_assemble_without_spills_and_match_the_resource_table() {
    let table = table();
    // docs/resources.md records the default build; a hang-guard build's bounded waits take other
    // registers, so it is only held to assembling without warnings and within its bound on
    // spills (checked in `table`).
    if cfg!(feature = "hang-guard") {
        return;
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/resources.md");
    if std::env::var_os("HGEMM_BLESS").is_some() {
        std::fs::write(&path, &table).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == table,
        "kernel resources changed; review and regenerate docs/resources.md with HGEMM_BLESS=1.\n--- committed\n{committed}\n--- now\n{table}"
    );
}

#[test]
fn every_family_module_has_its_kernels_and_utility_kernels() {
    for (family, text) in ptx::all() {
        assert!(text.contains(&format!(".target {}", family.ptx_target())));
        for spec in hgemm_kernels::kernels().filter(|s| s.family == family) {
            let body = entry_body(text, spec.name);
            let header = &body[..body.find('{').unwrap()];
            assert!(header.contains(&format!(".maxntid {}, 1, 1", spec.threads)), "{}: {header}", spec.name);
            // The host passes A, B and C, and A's and B's edge maps to kernels with edge maps.
            let maps = if spec.edge_maps { 5 } else { 3 };
            assert_eq!(
                header.matches(".param .align 64 .b8").count(),
                maps,
                "{}: tensor maps not 64-byte aligned: {header}",
                spec.name
            );
            // The host launches a kernel as a programmatic dependent only if it waits for its
            // predecessor itself; one that does not would read inputs the previous kernel is still
            // writing.
            assert_eq!(
                body.contains("griddepcontrol.wait;"),
                spec.dependent_launch,
                "{}: griddepcontrol.wait against dependent_launch",
                spec.name
            );
        }
        let hang_tests =
            ["hgemm_hang_test", "hgemm_hang_flag_test"].into_iter().filter(|_| cfg!(feature = "hang-guard"));
        for util in ["hgemm_fill_random_bf16", "hgemm_fill_u16", "hgemm_compare_bf16", "hgemm_reduce_copy"]
            .into_iter()
            .chain(hang_tests)
        {
            assert!(text.contains(&format!(".entry {util}(")), "{util} missing from {}", family.ptx_target());
        }
        for test in ["hgemm_hang_test", "hgemm_hang_flag_test"] {
            assert_eq!(text.contains(test), cfg!(feature = "hang-guard"), "{test} belongs to hang-guard builds only");
        }
    }
}

/// Each embedded cubin is SASS for its target holding every entry of its family's PTX: the
/// kernels a device with that cubin loads instead of the PTX. (Whether it is that PTX assembled
/// is what tools/ptxgen/tests/fresh.rs checks, against host/ptx/cubins.txt.)
#[test]
fn embedded_cubins_hold_every_entry_of_their_family() {
    let expected: Vec<&str> = if cfg!(feature = "hang-guard") {
        Vec::new()
    } else {
        Family::ALL.iter().flat_map(|&f| ptx::ptxas_archs(f).iter().copied()).collect()
    };
    assert_eq!(ptx::cubins().iter().map(|c| c.0).collect::<Vec<_>>(), expected);
    for family in Family::ALL {
        for &(arch, bytes) in ptx::cubins().iter().filter(|c| ptx::ptxas_archs(family).contains(&c.0)) {
            let path = std::env::temp_dir().join(format!("hgemm-embedded-{}-{arch}.cubin", std::process::id()));
            std::fs::write(&path, bytes).unwrap();
            let dump = Command::new(cuda_tool("cuobjdump")).arg("-sass").arg(&path).output().unwrap();
            let _ = std::fs::remove_file(&path);
            assert!(dump.status.success(), "cuobjdump {arch}: {}", String::from_utf8_lossy(&dump.stderr));
            let sass = String::from_utf8_lossy(&dump.stdout);
            assert!(sass.contains(&format!("code for {arch}\n")), "{arch}: the cubin targets another architecture");
            let functions: std::collections::BTreeSet<&str> =
                sass.lines().filter_map(|l| l.trim().strip_prefix("Function : ")).map(str::trim).collect();
            let entries: std::collections::BTreeSet<&str> = ptx::module(family)
                .lines()
                .filter_map(|l| l.trim().strip_prefix(".visible .entry ")?.strip_suffix('('))
                .collect();
            assert!(!entries.is_empty());
            assert!(
                entries.is_subset(&functions),
                "{arch}: entries missing from the cubin: {:?}",
                entries.difference(&functions)
            );
        }
    }
}

/// The ceilings (benchmark bounds, not GEMMs) must run their tile's MMAs and nothing the GEMM's
/// memory side does: no TMA, no mbarrier, no spills, their thread count as the register cap.
#[test]
fn tensor_ceilings_are_their_tiles_mmas_alone() {
    let text = ptx::module(Family::Hopper);
    let asm = assemble(Family::Hopper, text, "sm_90a");
    for c in hgemm_kernels::hopper::ceiling::CEILINGS {
        let body = entry_body(text, c.entry);
        assert!(body[..body.find('{').unwrap()].contains(&format!(".maxntid {}, 1, 1", c.threads())), "{}", c.entry);
        assert!(body.contains(&format!("wgmma.mma_async.sync.aligned.m64n{}k16.f32.bf16.bf16", c.bn)), "{}", c.entry);
        let r = &asm.resources[c.entry];
        assert_eq!((r.stack, r.spill_stores, r.spill_loads), (0, 0, 0), "{}: {r:?}", c.entry);
        let s = &asm.sass[c.entry];
        assert_eq!((s.mma, s.tma_load, s.tma_store, s.mbarrier), (4, 0, 0, 0), "{}: {s:?}", c.entry);
    }
}

/// Blackwell's library entries (`blackwell_lib_*`), one per tile and pair of storage orders,
/// assemble for sm_100a and sm_103a without a warning, stack or spill (checked for every kernel
/// in `table`), and their code is what each is meant to be: the pair MMA (UTCHMMA.2CTA), or the
/// single CTA's (UTCHMMA, no `.cta_group::2` anywhere), with the instruction descriptor of its
/// orders and width, a pair's operand loads to the pair's barrier (`.cta_group::2`), a plain TMA
/// load (C's box, for beta) and TMA stores.
#[test]
fn blackwell_library_entries_hold_their_mmas_and_tma() {
    use hgemm_kernels::desc::tcgen05::InstrDesc;
    use hgemm_kernels::spec::Major;
    let text = ptx::all().into_iter().find(|(f, _)| *f == Family::Blackwell).unwrap().1;
    let entries = hgemm_kernels::blackwell::lib::ENTRIES;
    assert_eq!(entries.len(), 12);
    for &arch in ptx::ptxas_archs(Family::Blackwell) {
        let asm = assemble(Family::Blackwell, text, arch);
        assert!(asm.warnings.is_empty(), "ptxas -arch {arch} warned:\n{}", asm.warnings.join("\n"));
        for spec in entries {
            let r = &asm.resources[spec.name];
            assert_eq!((r.stack, r.spill_stores, r.spill_loads), (0, 0, 0), "{} on {arch}: {r:?}", spec.name);
            let s = &asm.sass[spec.name];
            // Four k16 MMAs per 64-deep slice; A, B and C loaded, C stored.
            assert!(s.mma >= 4 && s.tma_load >= 3 && s.tma_store >= 1, "{} on {arch}: {s:?}", spec.name);
        }
    }
    let dump = |arch: &str| {
        let dir = std::env::temp_dir().join(format!("hgemm-ptxas-lib-{}-{arch}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (src, cubin) = (dir.join("lib.ptx"), dir.join("lib.cubin"));
        std::fs::write(&src, text).unwrap();
        let ok = Command::new(cuda_tool("ptxas")).args(["-arch", arch, "-o"]).arg(&cubin).arg(&src).status().unwrap();
        assert!(ok.success(), "ptxas -arch {arch}");
        let out = Command::new(cuda_tool("cuobjdump")).arg("-sass").arg(&cubin).output().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for &arch in ptx::ptxas_archs(Family::Blackwell) {
        let sass = dump(arch);
        for spec in entries {
            let at =
                sass.find(&format!("Function : {}\n", spec.name)).unwrap_or_else(|| panic!("{} on {arch}", spec.name));
            let body = &sass[at..at + 1 + sass[at + 1..].find("Function : ").unwrap_or(sass.len() - at - 1)];
            // The pair MMA and the operands' loads to the pair's barrier, or a single CTA's MMA
            // and loads; C's plain load and store.
            if spec.cluster == 2 {
                assert!(body.contains("UTCHMMA.2CTA"), "{} on {arch}: no UTCHMMA.2CTA", spec.name);
                assert!(body.contains("UTMALDG.3D.2CTA"), "{} on {arch}: no UTMALDG.3D.2CTA", spec.name);
            } else {
                assert!(body.contains("UTCHMMA") && !body.contains("2CTA"), "{} on {arch}: not one CTA's", spec.name);
            }
            assert!(body.contains("UTMALDG.3D ["), "{} on {arch}: no plain UTMALDG.3D (C for beta)", spec.name);
            assert!(body.contains("UTMASTG.3D"), "{} on {arch}: no UTMASTG.3D", spec.name);
        }
    }
    for spec in entries {
        let body = entry_body(text, spec.name);
        let (a_mn, b_mn) = (spec.a_major == Major::MN, spec.b_major == Major::MN);
        // The instruction descriptor of its orders and width, as an immediate (M = 256 a pair's,
        // 128 a single CTA's).
        let idesc = InstrDesc::bf16_f32_major(128 * spec.cluster, spec.tile_n, a_mn, b_mn).0;
        assert!(body.contains(&idesc.to_string()), "{}: instruction descriptor {idesc:#x} missing", spec.name);
        assert!(body.contains("cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group"), "{}", spec.name);
        if spec.cluster == 1 {
            assert!(!body.contains("cta_group::2"), "{}", spec.name);
            assert_eq!(body.matches("tcgen05.mma.cta_group::1.kind::f16").count() % 4, 0, "{}", spec.name);
            assert!(body.contains("tcgen05.mma.cta_group::1.kind::f16"), "{}", spec.name);
            continue;
        }
        // One operand load per K-major operand and one per 64 rows of a CTA's share of an
        // MN-major one, in each copy of the loop.
        let pair_loads = body.matches("complete_tx::bytes.cta_group::2 [").count() as u32;
        let loads = |mn: bool, share_rows: u32| if mn { share_rows / 64 } else { 1 };
        let per_slice = loads(a_mn, spec.a_share_rows()) + loads(b_mn, spec.b_share_rows());
        assert!(pair_loads > 0 && pair_loads.is_multiple_of(per_slice), "{}: {pair_loads} pair loads", spec.name);
        assert_eq!(body.matches("tcgen05.mma.cta_group::2.kind::f16").count() % 4, 0, "{}", spec.name);
    }
}

/// docs/blackwell.md repeats the Blackwell rows of docs/resources.md (which the test above keeps
/// equal to ptxas's output) beside the seed's numbers: registers of both targets, shared memory,
/// and sm_100a's SASS counts must agree.
#[test]
fn blackwell_doc_table_matches_the_resource_table() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs");
    let resources = std::fs::read_to_string(docs.join("resources.md")).unwrap();
    let ladder = std::fs::read_to_string(docs.join("blackwell.md")).unwrap();
    let cells = |line: &str| line.trim().trim_matches('|').split('|').map(|c| c.trim().to_string()).collect::<Vec<_>>();
    // kernel | arch | registers | smem | stack | spills | MMA | TMA load | TMA store | mbarrier ops | bar | R2UR
    let resource_row = |kernel: &str, arch: &str| {
        resources
            .lines()
            .map(cells)
            .find(|c| c.len() == 12 && c[0] == kernel && c[1] == arch)
            .unwrap_or_else(|| panic!("{kernel} on {arch} missing from docs/resources.md"))
    };
    if std::env::var_os("HGEMM_BLESS").is_some() {
        // Rewrite the numeric cells from docs/resources.md (the version, what it adds and the
        // seed's number stay as written).
        let mut out = String::new();
        for line in ladder.lines() {
            let c = cells(line);
            let spec =
                hgemm_kernels::blackwell::LADDER.iter().find(|s| c.len() == 10 && c[0] == format!("v{}", s.version));
            match spec {
                Some(spec) => {
                    let (a, b) = (resource_row(spec.name, "sm_100a"), resource_row(spec.name, "sm_103a"));
                    out.push_str(&format!(
                        "| {} | {} | {} / {} | {} | {} | {} | {} | {} | {} | {} |\n",
                        c[0], c[1], a[2], b[2], a[3], a[6], a[7], a[8], a[9], a[10], c[9]
                    ));
                }
                None => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        std::fs::write(docs.join("blackwell.md"), out).unwrap();
        return;
    }
    for spec in hgemm_kernels::blackwell::LADDER {
        // version | adds | registers (sm_100a / sm_103a) | smem | MMA | TMA load | TMA store | mbarrier ops | bar | seed
        let version = format!("v{}", spec.version);
        let doc = ladder
            .lines()
            .map(cells)
            .find(|c| c.len() == 10 && c[0] == version)
            .unwrap_or_else(|| panic!("{version} missing from the table in docs/blackwell.md"));
        let (a, b) = (resource_row(spec.name, "sm_100a"), resource_row(spec.name, "sm_103a"));
        assert_eq!(doc[2], format!("{} / {}", a[2], b[2]), "{}: registers in docs/blackwell.md", spec.name);
        assert_eq!(doc[3], a[3], "{}: shared memory in docs/blackwell.md", spec.name);
        assert_eq!(doc[4..9], a[6..11], "{}: SASS counts in docs/blackwell.md", spec.name);
        assert!(doc[9].parse::<f64>().is_ok(), "{}: the seed's TFLOP/s in docs/blackwell.md", spec.name);
    }
}
