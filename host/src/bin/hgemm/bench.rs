//! `hgemm bench`: TFLOP/s of cuBLAS and of each kernel, measured in one process, interleaved.

use crate::{CliResult, flag, open, selected};
use hgemm::testing::{self, Cublas};
use hgemm::{Choice, Family, Gemm, GemmOp, KernelSpec, TuneTable};
use hgemm_kernels::hopper::ceiling::{CEILINGS, CeilingSpec};
use std::fmt::Write as _;

/// The shapes of the Hopper performance target (M×N×K).
pub const SWEEP: &[(usize, usize, usize)] = &[
    (8192, 8192, 8192),
    (4096, 4096, 4096),
    (2048, 2048, 2048),
    (16384, 16384, 16384),
    (8192, 28672, 8192),
    (8192, 8192, 28672),
    (4096, 14336, 4096),
    (8192, 1024, 8192),
    (8000, 8000, 8000),
    (6144, 6144, 6144),
    (1024, 8192, 8192),
    (128, 8192, 8192),
];

/// N×K of the linear layers of Llama-2 7B and 13B and Llama-3 8B and 70B on one GPU (QKV and
/// gate+up fused): `--llm` runs each at [`LLM_TOKENS`] rows.
const LLM_LAYERS: &[(usize, usize)] = &[
    (12288, 4096),
    (4096, 4096),
    (22016, 4096),
    (4096, 11008),
    (6144, 4096),
    (28672, 4096),
    (4096, 14336),
    (10240, 8192),
    (8192, 8192),
    (57344, 8192),
    (8192, 28672),
    (15360, 5120),
    (5120, 5120),
    (27648, 5120),
    (5120, 13824),
];
const LLM_TOKENS: &[usize] = &[256, 512, 1024, 2048, 3072, 4096];

/// The shapes `--sweep`, `--llm` or `--shapes` name, or `default`.
pub(crate) fn shapes_from(
    args: &[String],
    default: &[(usize, usize, usize)],
) -> Result<Vec<(usize, usize, usize)>, String> {
    Ok(if args.iter().any(|a| a == "--sweep") {
        SWEEP.to_vec()
    } else if args.iter().any(|a| a == "--llm") {
        LLM_LAYERS.iter().flat_map(|&(n, k)| LLM_TOKENS.iter().map(move |&m| (m, n, k))).collect()
    } else {
        flag(args, "--shapes").map(parse_shapes).transpose()?.unwrap_or_else(|| default.to_vec())
    })
}

/// One row of the results.
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

pub(crate) fn parse_shapes(s: &str) -> Result<Vec<(usize, usize, usize)>, String> {
    s.split(',')
        .map(|t| {
            let v: Vec<usize> =
                t.split('x').map(|d| d.parse().map_err(|_| format!("bad shape {t}"))).collect::<Result<_, _>>()?;
            match v[..] {
                [m, n, k] => Ok((m, n, k)),
                _ => Err(format!("bad shape {t}: want MxNxK")),
            }
        })
        .collect()
}

pub fn run(args: &[String]) -> CliResult {
    if args.iter().any(|a| a == "--overhead") {
        return crate::overhead::run(args);
    }
    let gemm = open()?;
    // `--multi-stream`: a stream of cudarc's own, which puts the context in its multi-stream mode,
    // event tracking on: every call through a `CudaSlice` then waits on the buffers' events and
    // records them, as in a program that made a second stream. `direct` bypasses the tracking.
    let multi_stream = args.iter().any(|a| a == "--multi-stream");
    let stream = if multi_stream { gemm.context().new_stream()? } else { gemm.context().default_stream() };
    let blas = Cublas::new(&stream)?;
    if let Some(path) = flag(args, "--tuning") {
        let n = gemm.load_tuning(&std::fs::read_to_string(path)?)?;
        println!("tuning: {n} choices from {path}");
    }
    let forced = match flag(args, "--force") {
        Some(path) => {
            let d = gemm.device();
            let kernels: Vec<&'static KernelSpec> = gemm.kernels().collect();
            let (table, shapes) =
                forced_table(&std::fs::read_to_string(path)?, &kernels, gemm.family(), &d.name, d.sms)
                    .map_err(|e| format!("{path}: {e}"))?;
            let n = gemm.load_tuning(&table.to_text())?;
            println!("forced: {n} choices from {path} (`auto` runs them; `priced` what auto's price picks)");
            shapes
        }
        None => Vec::new(),
    };
    let default = if forced.is_empty() { vec![(8192, 8192, 8192)] } else { forced };
    let shapes = shapes_from(args, &default)?;
    let samples: usize = flag(args, "--samples").map(str::parse).transpose()?.unwrap_or(20);
    let mut contenders = vec![Contender::Cublas];
    contenders.extend(selected(&gemm, args, gemm.ladder())?.into_iter().map(Contender::Kernel));
    // Whether `--kernels` names `name`.
    let named = |name: &str| flag(args, "--kernels").is_some_and(|l| l.split(',').any(|s| s == name));
    if flag(args, "--kernels").is_none() || named("auto") {
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
                ceiling = Some(match flag(args, "--ceiling-ctas") {
                    Some(n) => c.on_ctas(n.parse()?),
                    None => c,
                });
            }
            contenders.push(Contender::Ceiling(c));
        }
    }

    let d = gemm.device();
    crate::say_skipped(&gemm);
    println!(
        "bench on {} ({} SMs, {} MiB L2); median of {samples} samples of ~60 ms, each after ~40 ms untimed, each contender alternating with cuBLAS{}",
        d.name,
        d.sms,
        d.l2_bytes >> 20,
        if multi_stream { "; cudarc's multi-stream event tracking on" } else { "" }
    );
    let mut rows = Vec::new();
    for &shape in &shapes {
        rows.extend(bench_shape(&gemm, &blas, &stream, &contenders, &mut ceiling, shape, samples)?);
    }
    print_table(&rows);
    if let Some(path) = flag(args, "--json") {
        std::fs::write(path, to_json(&gemm, &rows))?;
    }
    if let Some(path) = flag(args, "--csv") {
        std::fs::write(path, to_csv(&rows))?;
    }
    if let Some(path) = flag(args, "--svg") {
        let first: Vec<&Row> = rows.iter().filter(|r| r.shape == shapes[0]).collect();
        std::fs::write(path, crate::chart::bars(&first, &d.name))?;
    }
    Ok(true)
}

fn bench_shape(
    gemm: &Gemm,
    blas: &Cublas,
    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
    contenders: &[Contender],
    ceiling: &mut Option<testing::Ceiling>,
    (m, n, k): (usize, usize, usize),
    samples: usize,
) -> Result<Vec<Row>, Box<dyn std::error::Error>> {
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
    for ct in contenders {
        // Warm-up, and a first check that each contender runs on this shape at all.
        run_one(gemm, blas, stream, ct, &a, &b, &mut c, &prepared, ceiling, 0, (m, n, k))
            .map_err(|e| format!("{} on {m}x{n}x{k}: {e}", ct.name()))?;
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
    for ct in &contenders[1..] {
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
    Ok(rows)
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
) -> hgemm::Result<()> {
    let s = j % a.len();
    match ct {
        Contender::Cublas => blas.matmul(&a[s], &b[s], &mut c[s], m, n, k),
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
    }
}

fn print_table(rows: &[Row]) {
    let mut last = None;
    for r in rows {
        if last != Some(r.shape) {
            println!("\n{}x{}x{}", r.shape.0, r.shape.1, r.shape.2);
            println!("  {:<16} {:>9} {:>10} {:>9}", "implementation", "TFLOP/s", "ms", "vs cuBLAS");
            last = Some(r.shape);
        }
        println!("  {:<16} {:>9.1} {:>10.4} {:>9.3}", r.name, r.tflops, r.ms, r.vs_cublas);
    }
    // Over several shapes: each contender's geometric-mean ratio and its worst shape.
    let shapes: std::collections::BTreeSet<_> = rows.iter().map(|r| r.shape).collect();
    if shapes.len() > 1 {
        println!("\nover {} shapes", shapes.len());
        let names: Vec<&str> = rows.iter().filter(|r| r.shape == rows[0].shape).map(|r| r.name.as_str()).collect();
        for name in names.iter().skip(1) {
            let ratios: Vec<f64> = rows.iter().filter(|r| r.name == *name).map(|r| r.vs_cublas).collect();
            let geo = (ratios.iter().map(|r| r.ln()).sum::<f64>() / ratios.len() as f64).exp();
            let worst = ratios.iter().cloned().fold(f64::INFINITY, f64::min);
            println!("  {name:<16} geomean vs cuBLAS {geo:.3}  worst {worst:.3}");
        }
    }
}

fn to_json(gemm: &Gemm, rows: &[Row]) -> String {
    let mut s = format!("{{\"device\": \"{}\", \"results\": [\n", gemm.device().name);
    for (i, r) in rows.iter().enumerate() {
        let _ = writeln!(
            s,
            "  {{\"m\": {}, \"n\": {}, \"k\": {}, \"implementation\": \"{}\", \"ms\": {:.6}, \"tflops\": {:.2}, \"vs_cublas\": {:.4}}}{}",
            r.shape.0,
            r.shape.1,
            r.shape.2,
            r.name,
            r.ms,
            r.tflops,
            r.vs_cublas,
            if i + 1 < rows.len() { "," } else { "" }
        );
    }
    s.push_str("]}\n");
    s
}

/// M, N and K of a call.
type Shape = (usize, usize, usize);

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
        let (m, n, k) = match parse_shapes(shape).map_err(bad)?[..] {
            [one] => one,
            _ => return Err(bad(format!("\"{shape}\": one shape a line"))),
        };
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
    fn csv_quotes_names_that_hold_commas() {
        let row =
            |name: &str| Row { shape: (8192, 1024, 4096), name: name.into(), ms: 0.5, tflops: 600.0, vs_cublas: 1.0 };
        let csv = to_csv(&[row("cuBLAS"), row("auto, as priced")]);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "m,n,k,implementation,ms,tflops,vs_cublas");
        assert_eq!(lines[1], "8192,1024,4096,\"cuBLAS\",0.500000,600.00,1.0000");
        assert_eq!(lines[2], "8192,1024,4096,\"auto, as priced\",0.500000,600.00,1.0000");
    }
}
