//! `hgemm survey`: every entry that can compute each shape, whole and split, timed in turn with
//! cuBLAS in one process, one JSON line a shape: the data `auto`'s model is fitted to and judged
//! on (docs/shapes.md says how).

use crate::CliResult;
use crate::args::Survey;
use hgemm::{GemmOp, KernelSpec};
use hgemm_testing::{self as testing, Cublas};
use serde::{Deserialize, Serialize};
use std::io::Write as _;

/// One shape's line, as `survey` writes it and `plan --score` reads it.
#[derive(Serialize, Deserialize)]
pub struct Line {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// Median ms per call of cuBLAS over every round.
    pub cublas: f64,
    /// What `auto` runs: the entry, and whether its schedule splits.
    pub auto: (String, bool),
    /// Every candidate: the entry, whether it runs split, its median ms per call.
    pub timed: Vec<(String, bool, f64)>,
}

pub fn run(a: &Survey) -> CliResult {
    let gemm = crate::open()?;
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream)?;
    let d = gemm.device();
    let shapes = a.shapes.or(crate::shapes::SWEEP);
    let mut out = std::fs::File::create(&a.out)?;
    println!(
        "survey on {} ({} SMs): {} shapes, {} rounds of ~{} ms samples, to {}",
        d.name,
        d.sms,
        shapes.len(),
        a.rounds,
        a.sample_ms,
        a.out.display()
    );
    for (i, &(m, n, k)) in shapes.iter().enumerate() {
        let op = GemmOp::new(m, n, k);
        // Each entry once as priced (split where its schedule splits), and once whole where that
        // differs.
        let mut cands: Vec<(&'static KernelSpec, bool)> = Vec::new();
        for p in hgemm::choose::price(gemm.kernels(), &op, d.sms, gemm.model()) {
            let splits = p.schedule.is_some_and(|s| s.splits());
            for c in [(p.spec, splits), (p.spec, false)] {
                // `price` weighs some entries whole beside their split: each is timed once.
                if !cands.iter().any(|&(s, sp)| s.name == c.0.name && sp == c.1) {
                    cands.push(c);
                }
            }
        }
        let Some(auto) = gemm.priced(&op) else { continue };
        let auto_splits = cands.iter().any(|&(s, sp)| s.name == auto.kernel.name && sp) && auto.split;

        let set_bytes = 2 * (m * k + n * k + m * n);
        let sets = testing::rotation_sets(d.l2_bytes, set_bytes);
        let (xa, xb, mut xc) = testing::input_sets(&gemm, &stream, &op, sets, i as u64)?;
        let (calls, warmup) = testing::sample_calls(m * n * k, set_bytes, a.sample_ms);
        let mut call = |c: Option<(&KernelSpec, bool)>, j: usize| -> testing::Result<()> {
            let s = j % sets;
            match c {
                None => blas.matmul(&xa[s], &xb[s], &mut xc[s], m, n, k),
                Some((spec, split)) => {
                    Ok(gemm.gemm_with(spec, &stream, &op.stream_k(split), &xa[s], &xb[s], &mut xc[s])?)
                }
            }
        };
        // A candidate that cannot run here is left out, and said so.
        cands.retain(|&c| match call(Some(c), 0) {
            Ok(()) => true,
            Err(e) => {
                println!("  {} ({}) left out: {e}", c.0.name, if c.1 { "split" } else { "whole" });
                false
            }
        });
        let mut ms = vec![Vec::new(); cands.len() + 1];
        for _ in 0..a.rounds {
            for (slot, c) in std::iter::once(None).chain(cands.iter().map(|&c| Some(c))).enumerate() {
                let t = testing::time_median(&stream, warmup, 1, calls, |j| call(c, j))?;
                ms[slot].push(t[0]);
            }
        }
        let line = Line {
            m,
            n,
            k,
            cublas: testing::median(&ms[0]),
            auto: (auto.kernel.name.into(), auto_splits),
            timed: cands.iter().zip(&ms[1..]).map(|(&(s, sp), t)| (s.name.into(), sp, testing::median(t))).collect(),
        };
        let best = line.timed.iter().map(|t| t.2).fold(f64::INFINITY, f64::min);
        let auto_ms = line.timed.iter().find(|t| (&t.0, t.1) == (&line.auto.0, line.auto.1)).map_or(f64::NAN, |t| t.2);
        println!(
            "{m}x{n}x{k}: cuBLAS {:.4} ms, auto {:.3}x, best entry {:.3}x ({} candidates)",
            line.cublas,
            line.cublas / auto_ms,
            line.cublas / best,
            line.timed.len()
        );
        serde_json::to_writer(&mut out, &line)?;
        writeln!(out)?;
        out.flush()?;
    }
    Ok(true)
}
