//! `hgemm run`: run kernels once on small calls with fresh random inputs and check each result,
//! one line per case; exits non-zero on any mismatch. It is what the compute-sanitizer runs of
//! `scripts/device-reliability.sh` wrap, so with `--ref cpu` it touches no cuBLAS.
//!
//! C is poisoned (NaN) before the call, or filled with random old values when beta ≠ 0, and a
//! guard band of poison follows it; the whole buffer, padding and guard included, is compared
//! with the reference, so unwritten elements and stray writes both fail.

use crate::args::{Reference, Run};
use crate::{CliResult, open, selected};
use cudarc::driver::CudaStream;
use half::bf16;
use hgemm::{Gemm, GemmOp, KernelSpec};
use hgemm_testing::{self as testing, BufferComparison, Cublas, Variant};
use std::sync::Arc;

pub fn run(a: &Run) -> CliResult {
    let (reference, shapes, general) = (a.reference, &a.shapes, a.general);
    let gemm = open()?;
    let stream = gemm.context().default_stream();
    let blas = if reference == Reference::Cpu { None } else { Some(Cublas::new(&stream)?) };
    let seed = a.seed.unwrap_or_else(|| std::process::id() as u64);
    println!("run on {} (seed {seed}; tolerance {:.0e} relative)", gemm.device().name, testing::TOLERANCE);
    let mut tally = crate::Tally::default();
    for kernel in selected(&gemm, &a.kernels, gemm.kernels())? {
        let cases: Vec<(String, GemmOp)> = match shapes {
            None => testing::small_cases(kernel),
            Some(list) => list
                .iter()
                .map(|&(m, n, k)| match general && kernel.general {
                    true => (format!("{m}x{n}x{k} general"), testing::op_with(kernel, m, n, k, &Variant::GENERAL)),
                    false => (format!("{m}x{n}x{k}"), testing::op_for(kernel, m, n, k)),
                })
                .collect(),
        };
        for (i, (what, op)) in cases.iter().enumerate() {
            // A shape from the command line may be one a kernel cannot take (a trim entry past
            // one column of tiles, or rows of C that are not 16-byte multiples for a TMA store):
            // say so and go on. The kernel's own cases it must take. The plan needs no GPU, and
            // any 16-byte aligned address stands for the buffers.
            const ALIGNED: u64 = 1 << 20;
            if let (Some(_), Err(e)) = (shapes, hgemm::plan::plan(kernel, op, ALIGNED, ALIGNED, ALIGNED)) {
                println!("{:<22} {what:<58} {e}", kernel.name);
                tally.record_not_taken();
                continue;
            }
            let on_cpu = match reference {
                Reference::Cpu => true,
                Reference::Cublas => false,
                // The CPU for calls of up to `CPU_CHECK_MAX_MACS` multiply-adds.
                Reference::Auto => op.m * op.n * op.k * op.batch <= testing::CPU_CHECK_MAX_MACS,
            };
            let blas = if on_cpu { None } else { blas.as_ref() };
            let c = check_case(&gemm, &stream, blas, kernel, op, seed.wrapping_add(7919 * i as u64))?;
            let ok = c.passed();
            println!(
                "{:<22} {what:<58} vs {:<6} {:.2e}  unwritten {}  stray {}  {}",
                kernel.name,
                if on_cpu { "CPU" } else { "cuBLAS" },
                c.rel_error(),
                c.unwritten,
                c.stray,
                if ok { "ok" } else { "FAIL" }
            );
            tally.record(ok);
        }
    }
    tally.finish()
}

/// Run `op` once with `kernel` and compare the whole C buffer and its guard band with the
/// reference: cuBLAS if `blas` is given, else the f64 CPU reference.
fn check_case(
    gemm: &Gemm,
    stream: &Arc<CudaStream>,
    blas: Option<&Cublas>,
    kernel: &KernelSpec,
    op: &GemmOp,
    seed: u64,
) -> Result<BufferComparison, Box<dyn std::error::Error>> {
    let (la, lb, lc) = testing::lengths(op);
    let a = testing::random(gemm, stream, la, seed, 1.0)?;
    let b = testing::random(gemm, stream, lb, seed ^ 0x5eed, 1.0 / (op.k.max(1) as f32).sqrt())?;
    // SAFETY: every element is written by the fills below before anything reads it.
    let mut c = unsafe { stream.alloc::<bf16>(lc + testing::GUARD_LEN) }?;
    testing::fill(gemm, stream, &mut c, testing::POISON)?;
    if op.beta != 0.0 {
        testing::fill_random(gemm, stream, &mut c.slice_mut(..lc), seed ^ 0xc0de, 1.0)?;
    }
    let before = stream.clone_dtod(&c)?;
    gemm.gemm_with(kernel, stream, op, &a, &b, &mut c.slice_mut(..lc))?;
    gemm.synchronize(stream)?;
    let out = stream.clone_dtoh(&c)?;
    let reference: Vec<f64> = match blas {
        Some(blas) => {
            let mut r = before;
            blas.gemm(op, &a, &b, &mut r.slice_mut(..lc))?;
            stream.clone_dtoh(&r)?.iter().map(|x| x.to_f64()).collect()
        }
        None => {
            let (ha, hb, hc) = (stream.clone_dtoh(&a)?, stream.clone_dtoh(&b)?, stream.clone_dtoh(&before)?);
            let mut r = testing::cpu_reference_general(op, &ha, &hb, &hc[..lc])?;
            r.extend(hc[lc..].iter().map(|x| x.to_f64()));
            r
        }
    };
    Ok(testing::compare_host(&out, &reference))
}
