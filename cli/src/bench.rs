//! `hgemm bench`: TFLOP/s of cuBLAS and of each kernel, measured in one process, interleaved.

use crate::args::Bench;
use crate::shapes::{Shape, parse_shape};
use crate::{CliResult, open, selected};
use hgemm::{Choice, Family, Gemm, GemmOp, KernelSpec, TuneTable};
use hgemm_kernels::hopper::ceiling::{CEILINGS, CeilingSpec};
use hgemm_testing::{self as testing, Cublas};
use serde::Serialize;
use std::fmt::Write as _;

/// One row of the results.
#[derive(Clone)]
pub struct Row {
    pub shape: (usize, usize, usize),
    pub name: String,
    pub ms: f64,
    pub tflops: f64,
    pub vs_cublas: f64,
}

enum Contender {
    Cublas,
    Kernel(&'static KernelSpec),
    /// The public entry point, which picks the kernel itself (the tuned choice, with `--tuning`).
    Auto,
    /// What `auto`'s price picks, whatever is tuned (`Gemm::priced`).
    Priced,
    /// `Auto` with stream-K forbidden (`GemmOp::stream_k(false)`): what the split buys.
    Whole,
    /// The same kernel launched directly: checks and tensor maps done once per input set
    /// (`Gemm::prepare`), then only `cuLaunchKernelEx` per call. Its gap to `Auto` is the API's cost.
    Direct,
    /// Not a GEMM: a tile's MMAs of the call alone (`testing::Ceiling`), the bound on any kernel
    /// built from them under this card's power cap.
    Ceiling(&'static CeilingSpec),
}

impl Contender {
    fn name(&self) -> String {
        match self {
            Contender::Cublas => "cuBLAS".into(),
            Contender::Kernel(k) if hgemm_kernels_is_ladder(k) => format!("{} v{}", k.family.name(), k.version),
            Contender::Kernel(k) => k.name.to_string(),
            Contender::Auto => "hgemm (auto)".into(),
            Contender::Priced => "auto, as priced".into(),
            Contender::Whole => "auto, no stream-K".into(),
            Contender::Direct => "auto, direct launch".into(),
            Contender::Ceiling(c) => format!("{}: {}×{} MMAs alone", c.name, c.bm, c.bn),
        }
    }
}

fn hgemm_kernels_is_ladder(k: &KernelSpec) -> bool {
    hgemm::ladder_of(k.family).iter().any(|l| l.name == k.name)
}

pub fn run(a: &Bench) -> CliResult {
    let mut gemm = open()?;
    if a.model.is_some() {
        gemm.set_model(crate::model::load(a.model.as_deref(), gemm.kernels())?)?;
    }
    // `--multi-stream`: a stream of cudarc's own, which puts the context in its multi-stream mode,
    // event tracking on: every call through a `CudaSlice` then waits on the buffers' events and
    // records them, as in a program that made a second stream. `direct` bypasses the tracking.
    let multi_stream = a.multi_stream;
    let stream = if multi_stream { gemm.context().new_stream()? } else { gemm.context().default_stream() };
    let blas = Cublas::new(&stream)?;
    if let Some(n) = a.max_sms {
        gemm.set_max_sms(Some(n))?;
        blas.set_sm_count_target(Some(n))?;
    }
    if let Some(path) = &a.tuning {
        let n = gemm.load_tuning(&std::fs::read_to_string(path)?)?;
        println!("tuning: {n} choices from {}", path.display());
    }
    let forced = match &a.force {
        Some(path) => {
            let d = gemm.device();
            let kernels: Vec<&'static KernelSpec> = gemm.kernels().collect();
            let (table, shapes) =
                forced_table(&std::fs::read_to_string(path)?, &kernels, gemm.family(), &d.name, d.sms)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            let n = gemm.load_tuning(&table.to_text())?;
            println!(
                "forced: {n} choices from {} (`auto` runs them; `priced` what auto's price picks)",
                path.display()
            );
            shapes
        }
        None => Vec::new(),
    };
    let default = if forced.is_empty() { vec![(8192, 8192, 8192)] } else { forced };
    let shapes = a.shapes.or(&default);
    let samples = a.samples.unwrap_or(20);
    let mut contenders = vec![Contender::Cublas];
    // Under a budget the default leaves out the ladder's entries with one CTA per tile, which
    // cannot keep one (named, they fail with the reason).
    let ladder = gemm.ladder().filter(|k| a.max_sms.is_none() || k.grid == hgemm_kernels::spec::Grid::Persistent);
    contenders.extend(selected(&gemm, &a.kernels, ladder)?.into_iter().map(Contender::Kernel));
    let named = |name: &str| crate::args::names(&a.kernels, name);
    if a.kernels.is_none() || named("auto") {
        contenders.push(Contender::Auto);
    }
    if named("priced") {
        contenders.push(Contender::Priced);
    }
    if named("whole") {
        contenders.push(Contender::Whole);
    }
    if named("direct") {
        contenders.push(Contender::Direct);
    }
    let mut ceiling = None;
    for c in CEILINGS {
        if named(c.name) {
            if ceiling.is_none() {
                let c = testing::Ceiling::new(&gemm, &stream)?;
                ceiling = Some(match a.ceiling_ctas {
                    Some(n) => c.on_ctas(n),
                    None => c,
                });
            }
            contenders.push(Contender::Ceiling(c));
        }
    }

    let d = gemm.device();
    crate::say_skipped(&gemm);
    println!(
        "bench on {} ({} SMs, {} MiB L2); median of {samples} samples of ~60 ms, each after ~40 ms untimed, each contender alternating with cuBLAS{}{}",
        d.name,
        d.sms,
        d.l2_bytes >> 20,
        if multi_stream { "; cudarc's multi-stream event tracking on" } else { "" },
        a.max_sms.map(|n| format!("; SM budget {n} (cuBLAS: SM count target {n})")).unwrap_or_default()
    );
    // Each shape's table as soon as it is measured: a long run (`--llm`) shows its progress.
    let mut rows = Vec::new();
    for &shape in &shapes {
        let (measured, refused) = bench_shape(&gemm, &blas, &stream, &contenders, &mut ceiling, shape, samples)?;
        print_shape(&measured);
        for (name, why) in &refused {
            println!("  {name:<16} not run: {why}");
        }
        std::io::Write::flush(&mut std::io::stdout())?;
        rows.extend(measured);
    }
    print_summary(&rows);
    if let Some(path) = &a.json {
        std::fs::write(path, to_json(&gemm, &rows)?)?;
    }
    if let Some(path) = &a.csv {
        std::fs::write(path, to_csv(&rows))?;
    }
    if let Some(path) = &a.svg {
        let first: Vec<&Row> = rows.iter().filter(|r| r.shape == shapes[0]).collect();
        std::fs::write(path, crate::chart::bars(&first, &d.name))?;
    }
    Ok(true)
}

/// A contender that cannot compute a shape: its name and the library's reason.
type Refused = (String, String);

fn bench_shape(
    gemm: &Gemm,
    blas: &Cublas,
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    contenders: &[Contender],
    ceiling: &mut Option<testing::Ceiling>,
    (m, n, k): Shape,
    samples: usize,
) -> Result<(Vec<Row>, Vec<Refused>), Box<dyn std::error::Error>> {
    let set_bytes = 2 * (m * k + n * k + m * n);
    let sets = testing::rotation_sets(gemm.device().l2_bytes, set_bytes);
    let op = hgemm::GemmOp::new(m, n, k);
    let (a, b, mut c) = testing::input_sets(gemm, stream, &op, sets, 0)?;
    let mut prepared = Vec::new();
    for s in 0..sets {
        prepared.push(gemm.prepare(None, stream, &op, &a[s], &b[s], &mut c[s])?);
    }
    // About 60 ms of timed calls per sample, after about 40 ms of the same contender untimed.
    let (calls, warmup) = testing::sample_calls(m * n * k, set_bytes, 60.0);
    let (mut ran, mut refused) = (Vec::new(), Vec::new());
    for ct in contenders {
        // Warm-up, and a first check that each contender runs on this shape at all. A pinned
        // entry may refuse a call (a TMA store cannot write a ragged C): that is a property of
        // the entry, not a failure of the run, so it sits this shape out and the table says why.
        match run_one(gemm, blas, stream, ct, &a, &b, &mut c, &prepared, ceiling, 0, (m, n, k)) {
            Err(testing::Error::Hgemm(e @ (hgemm::Error::Unsupported { .. } | hgemm::Error::Lacks { .. })))
                if matches!(ct, Contender::Kernel(_)) =>
            {
                refused.push((ct.name(), e.to_string()));
                continue;
            }
            r => r.map_err(|e| format!("{} on {m}x{n}x{k}: {e}", ct.name()))?,
        }
        ran.push(ct);
        if let (Contender::Ceiling(spec), Some(ceiling)) = (ct, ceiling.as_mut()) {
            // Every thread's accumulator is written, finite and not zero: the MMAs ran.
            let sink = ceiling.take_sink(stream)?;
            let threads = ceiling.ctas() as usize * spec.threads() as usize;
            if let Some(bad) = sink[..threads].iter().position(|x| !x.is_finite() || *x == 0.0) {
                return Err(
                    format!("{} on {m}x{n}x{k}: thread {bad} of {threads} wrote {}", spec.name, sink[bad]).into()
                );
            }
        }
    }
    let mut sample = |ct: &Contender| -> Result<f64, Box<dyn std::error::Error>> {
        let t = testing::time_median(stream, warmup, 1, calls, |j| {
            run_one(gemm, blas, stream, ct, &a, &b, &mut c, &prepared, ceiling, j, (m, n, k))
        })?;
        Ok(t[0])
    };
    // Each contender alternates with cuBLAS alone and is compared with the cuBLAS samples of its
    // own pairing: the clock a sample runs at then depends on two similar neighbours, not on
    // where the contender sits in a row of kernels that draw very different power.
    let mut rows = Vec::new();
    let mut all_cublas = Vec::new();
    // (cuBLAS, the first, refuses nothing.)
    for ct in &ran[1..] {
        let (mut theirs, mut ours) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
        for _ in 0..samples {
            theirs.push(sample(&contenders[0])?);
            ours.push(sample(ct)?);
        }
        let ms = testing::median(&ours);
        rows.push(Row {
            shape: (m, n, k),
            name: ct.name(),
            ms,
            tflops: testing::tflops(m, n, k, ms),
            vs_cublas: testing::median(&theirs) / ms,
        });
        all_cublas.extend(theirs);
    }
    let base = testing::median(&all_cublas);
    rows.insert(
        0,
        Row {
            shape: (m, n, k),
            name: contenders[0].name(),
            ms: base,
            tflops: testing::tflops(m, n, k, base),
            vs_cublas: 1.0,
        },
    );
    Ok((rows, refused))
}

#[allow(clippy::too_many_arguments)]
fn run_one(
    gemm: &Gemm,
    blas: &Cublas,
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    ct: &Contender,
    a: &[cudarc::driver::CudaSlice<half::bf16>],
    b: &[cudarc::driver::CudaSlice<half::bf16>],
    c: &mut [cudarc::driver::CudaSlice<half::bf16>],
    prepared: &[hgemm::Prepared],
    ceiling: &mut Option<testing::Ceiling>,
    j: usize,
    (m, n, k): (usize, usize, usize),
) -> testing::Result<()> {
    let s = j % a.len();
    Ok(match ct {
        Contender::Cublas => return blas.matmul(&a[s], &b[s], &mut c[s], m, n, k),
        Contender::Kernel(spec) => gemm.matmul_with(spec, stream, &a[s], &b[s], &mut c[s], m, n, k),
        Contender::Auto => gemm.matmul(stream, &a[s], &b[s], &mut c[s], m, n, k),
        Contender::Priced => {
            let op = hgemm::GemmOp::new(m, n, k);
            let p = gemm.priced(&op).expect("auto computes the native problem");
            gemm.gemm_with(p.kernel, stream, &p.op(&op), &a[s], &b[s], &mut c[s])
        }
        Contender::Whole => gemm.gemm(stream, &hgemm::GemmOp::new(m, n, k).stream_k(false), &a[s], &b[s], &mut c[s]),
        // SAFETY: prepared on these buffers, which outlive the benchmark, on this one stream.
        Contender::Direct => unsafe { gemm.launch_prepared(&prepared[s], stream) },
        Contender::Ceiling(spec) => {
            ceiling.as_mut().expect("made with the contender").run(gemm, stream, spec.name, (m, n, k))
        }
    }?)
}

/// One shape's table.
fn print_shape(rows: &[Row]) {
    if let Some(r) = rows.first() {
        println!("\n{}x{}x{}", r.shape.0, r.shape.1, r.shape.2);
        println!("  {:<16} {:>9} {:>10} {:>9}", "implementation", "TFLOP/s", "ms", "vs cuBLAS");
    }
    for r in rows {
        println!("  {:<16} {:>9.1} {:>10.4} {:>9.3}", r.name, r.tflops, r.ms, r.vs_cublas);
    }
}

/// Over several shapes: each contender's geometric-mean ratio and its worst shape.
fn print_summary(rows: &[Row]) {
    for line in summary(rows) {
        println!("{line}");
    }
}

/// [`print_summary`]'s lines: none for one shape.
fn summary(rows: &[Row]) -> Vec<String> {
    let shapes: std::collections::BTreeSet<_> = rows.iter().map(|r| r.shape).collect();
    if shapes.len() < 2 {
        return Vec::new();
    }
    // A draw may repeat a shape: each call counts, and the header says so.
    let calls = rows.iter().filter(|r| r.name == rows[0].name).count();
    let mut lines = vec![match calls {
        n if n > shapes.len() => format!("\nover {n} calls ({} shapes, some repeated)", shapes.len()),
        _ => format!("\nover {} shapes", shapes.len()),
    }];
    // Every contender in the order it first appears (the first row is the baseline): one that
    // refused the first shape still has its line, over the shapes it ran.
    let mut names: Vec<&str> = Vec::new();
    for r in rows.iter().filter(|r| r.name != rows[0].name) {
        if !names.contains(&r.name.as_str()) {
            names.push(&r.name);
        }
    }
    for name in names {
        let ratios: Vec<f64> = rows.iter().filter(|r| r.name == name).map(|r| r.vs_cublas).collect();
        let geo = crate::geomean(&ratios);
        let worst = ratios.iter().cloned().fold(f64::INFINITY, f64::min);
        let over = match ratios.len() {
            n if n < calls => format!("  (ran {n} of {calls})"),
            _ => String::new(),
        };
        lines.push(format!("  {name:<16} geomean vs cuBLAS {geo:.3}  worst {worst:.3}{over}"));
    }
    lines
}

/// `--json`'s document: the device and a row per shape and contender, times rounded as printed
/// to more places.
#[derive(Serialize)]
struct Json<'a> {
    device: &'a str,
    results: Vec<JsonRow<'a>>,
}

#[derive(Serialize)]
struct JsonRow<'a> {
    m: usize,
    n: usize,
    k: usize,
    implementation: &'a str,
    ms: f64,
    tflops: f64,
    vs_cublas: f64,
}

fn to_json(gemm: &Gemm, rows: &[Row]) -> serde_json::Result<String> {
    json_text(&gemm.device().name, rows)
}

fn json_text(device: &str, rows: &[Row]) -> serde_json::Result<String> {
    let round = |x: f64, places: i32| (x * 10f64.powi(places)).round() / 10f64.powi(places);
    let results = rows
        .iter()
        .map(|r| JsonRow {
            m: r.shape.0,
            n: r.shape.1,
            k: r.shape.2,
            implementation: &r.name,
            ms: round(r.ms, 6),
            tflops: round(r.tflops, 2),
            vs_cublas: round(r.vs_cublas, 4),
        })
        .collect();
    let mut text = serde_json::to_string_pretty(&Json { device, results })?;
    text.push('\n');
    Ok(text)
}

/// `--force`'s file: a line `MxNxK KERNEL [split|whole]` (`#` starts a comment) makes `auto` run
/// KERNEL for the plain call of that shape (C = A·Bᵀ, all row-major, alpha 1, beta 0, stream-K
/// allowed), with its own schedule or, with `whole`, every unit whole: a forced comparison against
/// `priced` (what `auto`'s price picks) without writing a tuning table by hand. Returns the table,
/// for the device named `device` with `sms` SMs, and the shapes in the file's order.
fn forced_table(
    text: &str,
    kernels: &[&'static KernelSpec],
    family: Family,
    device: &str,
    sms: u32,
) -> Result<(TuneTable, Vec<Shape>), String> {
    let mut table = TuneTable::new(family, device, sms);
    let mut shapes = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why: String| format!("line {}: {why}", i + 1);
        let f: Vec<&str> = line.split_whitespace().collect();
        let (shape, name, split) = match f[..] {
            [shape, name] => (shape, name, true),
            [shape, name, "split"] => (shape, name, true),
            [shape, name, "whole"] => (shape, name, false),
            _ => return Err(bad(format!("\"{line}\": want MxNxK KERNEL [split|whole]"))),
        };
        if shape.contains(',') {
            return Err(bad(format!("\"{shape}\": one shape a line")));
        }
        let (m, n, k) = parse_shape(shape).map_err(bad)?;
        let kernel = *kernels
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| bad(format!("no {} kernel {name} in this build", family.name())))?;
        table.insert(&GemmOp::new(m, n, k), Choice { kernel, split }).map_err(|e| bad(e.to_string()))?;
        shapes.push((m, n, k));
    }
    if shapes.is_empty() {
        return Err("no line names a shape and a kernel".into());
    }
    Ok((table, shapes))
}

/// The rows as CSV. The implementation is quoted (RFC 4180): names such as "auto, as priced"
/// hold a comma.
fn to_csv(rows: &[Row]) -> String {
    let mut s = String::from("m,n,k,implementation,ms,tflops,vs_cublas\n");
    for r in rows {
        let name = r.name.replace('"', "\"\"");
        let _ = writeln!(
            s,
            "{},{},{},\"{name}\",{:.6},{:.2},{:.4}",
            r.shape.0, r.shape.1, r.shape.2, r.ms, r.tflops, r.vs_cublas
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hopper() -> Vec<&'static KernelSpec> {
        hgemm_kernels::kernels().filter(|s| s.family == Family::Hopper).collect()
    }

    #[test]
    fn force_keys_each_line_as_the_plain_call_auto_is_given() {
        let text = "# the wide tile trimmed, and square pairs whole\n4864x2176x4096 hopper_v7_widetrim_kk\n\n6272x1664x8192 hopper_v7_widetrim_kk_cm split\n8192x8192x8192 hopper_v7_square_kk whole # a comment\n";
        let (table, shapes) = forced_table(text, &hopper(), Family::Hopper, "NVIDIA H200", 132).unwrap();
        assert_eq!(shapes, [(4864, 2176, 4096), (6272, 1664, 8192), (8192, 8192, 8192)]);
        let got = |m, n, k| table.get(&GemmOp::new(m, n, k)).map(|c| (c.kernel.name, c.split));
        assert_eq!(got(4864, 2176, 4096), Some(("hopper_v7_widetrim_kk", true)));
        assert_eq!(got(6272, 1664, 8192), Some(("hopper_v7_widetrim_kk_cm", true)));
        assert_eq!(got(8192, 8192, 8192), Some(("hopper_v7_square_kk", false)));
        // What `auto` looks up is the same key: the table as text reads back on the same device.
        let again = TuneTable::parse(&table.to_text(), Family::Hopper, "NVIDIA H200", 132).unwrap();
        assert_eq!(again.len(), 3);
    }

    #[test]
    fn force_refuses_what_it_cannot_run_and_names_the_line() {
        let err = |text: &str| forced_table(text, &hopper(), Family::Hopper, "NVIDIA H200", 132).err().unwrap();
        assert!(err("8192x8192x8192 hopper_v7_nonesuch\n").starts_with("line 1: no hopper kernel hopper_v7_nonesuch"));
        // Another family's entry is not among the kernels the handle has.
        assert!(err("8192x8192x8192 blackwell_v7\n").starts_with("line 1: no hopper kernel blackwell_v7"));
        assert!(err("# c\n8192x8192 hopper_v7\n").starts_with("line 2: bad shape 8192x8192"));
        assert!(err("8192x8192x8192 hopper_v7 sometimes\n").contains("want MxNxK KERNEL [split|whole]"));
        assert!(err("8192x8192x8192,1x1x8 hopper_v7\n").contains("one shape a line"));
        // An entry that cannot compute the plain call: it reads A M-major.
        let e = err("8192x8192x8192 hopper_v7\n512x512x512 hopper_v7_wide_mnk\n");
        assert!(e.starts_with("line 2: ") && e.contains("hopper_v7_wide_mnk"), "{e}");
        assert_eq!(err("# nothing\n\n"), "no line names a shape and a kernel");
    }

    #[test]
    fn summary_keeps_a_contender_that_refused_the_first_shape() {
        let at = |shape, name: &str, vs_cublas| Row { shape, name: name.into(), ms: 1.0, tflops: 1.0, vs_cublas };
        let rows = [
            at((1, 8, 8), "cuBLAS", 1.0),
            at((1, 8, 8), "hgemm (auto)", 0.5),
            at((2, 8, 8), "cuBLAS", 1.0),
            at((2, 8, 8), "hopper v6", 2.0),
            at((2, 8, 8), "hgemm (auto)", 2.0),
        ];
        let lines = summary(&rows);
        assert_eq!(lines[0], "\nover 2 shapes");
        assert!(lines[1].starts_with("  hgemm (auto)") && lines[1].contains("geomean vs cuBLAS 1.000  worst 0.500"));
        assert!(lines[2].starts_with("  hopper v6") && lines[2].ends_with("worst 2.000  (ran 1 of 2)"));
        assert_eq!(lines.len(), 3);
        assert!(summary(&rows[..2]).is_empty());
        // A repeated shape counts each time it ran.
        let repeated: Vec<Row> = rows.iter().chain(&rows[..2]).cloned().collect();
        let lines = summary(&repeated);
        assert_eq!(lines[0], "\nover 3 calls (2 shapes, some repeated)");
        assert!(lines[1].contains("geomean vs cuBLAS 0.794  worst 0.500"));
        assert!(lines[2].ends_with("(ran 1 of 3)"));
    }

    fn row(name: &str) -> Row {
        Row { shape: (8192, 1024, 4096), name: name.into(), ms: 0.5, tflops: 600.0, vs_cublas: 1.0 }
    }

    #[test]
    fn json_holds_the_device_and_every_row_rounded() {
        let odd = Row { ms: 0.123_456_789, tflops: 601.234_5, vs_cublas: 1.023_456, ..row("auto, \"as priced\"") };
        let text = json_text("NVIDIA H100 80GB HBM3", &[row("cuBLAS"), odd]).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["device"], "NVIDIA H100 80GB HBM3");
        let r = &v["results"];
        assert_eq!(
            (&r[0]["m"], &r[0]["n"], &r[0]["k"], &r[0]["implementation"]),
            (&8192.into(), &1024.into(), &4096.into(), &"cuBLAS".into())
        );
        assert_eq!(r[1]["implementation"], "auto, \"as priced\"");
        assert_eq!(
            (r[1]["ms"].as_f64(), r[1]["tflops"].as_f64(), r[1]["vs_cublas"].as_f64()),
            (Some(0.123457), Some(601.23), Some(1.0235))
        );
        assert_eq!(r.as_array().map(Vec::len), Some(2));
    }

    #[test]
    fn csv_quotes_names_that_hold_commas() {
        let csv = to_csv(&[row("cuBLAS"), row("auto, as priced")]);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "m,n,k,implementation,ms,tflops,vs_cublas");
        assert_eq!(lines[1], "8192,1024,4096,\"cuBLAS\",0.500000,600.00,1.0000");
        assert_eq!(lines[2], "8192,1024,4096,\"auto, as priced\",0.500000,600.00,1.0000");
    }
}
