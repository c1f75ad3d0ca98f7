//! hgemm as a dependency, checked end to end on the GPU: fresh random bf16 inputs, an output
//! filled with NaN before each call (so an element the kernel never writes cannot pass), and every
//! element compared with an f64 reference computed on the CPU from the same bf16 inputs. Prints
//! how long `Gemm::new` took (loading the embedded cubin, or the driver's JIT of the PTX where no
//! cubin fits, unless its cache holds it), whether it loaded a cubin, and how long each first call
//! took; exits non-zero on any mismatch or error.
//!
//! `hgemm-downstream [SEED]`: the seed defaults to the clock and is printed, to rerun a failure.

use cudarc::driver::CudaContext;
use half::bf16;
use hgemm::{Gemm, GemmOp, Layout};
use std::process::ExitCode;
use std::time::Instant;

/// One call: C (M×N, row-major) = A (M×K, row-major) · B, where B is N×K row-major (C = A·Bᵀ,
/// the kernels' native form) or K×N row-major (y = x·w).
struct Case {
    m: usize,
    n: usize,
    k: usize,
    b_is_k_by_n: bool,
}

const CASES: &[Case] = &[
    Case { m: 512, n: 1024, k: 256, b_is_k_by_n: false },
    Case { m: 1000, n: 1536, k: 520, b_is_k_by_n: false },
    Case { m: 128, n: 2048, k: 4096, b_is_k_by_n: true },
    Case { m: 2048, n: 384, k: 1024, b_is_k_by_n: true },
];

/// splitmix64: a seeded stream of bits, enough for test inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1), rounded to bf16.
    fn bf16(&mut self) -> bf16 {
        bf16::from_f64((self.next() >> 11) as f64 / (1u64 << 52) as f64 - 1.0)
    }
}

fn main() -> ExitCode {
    let seed = match std::env::args().nth(1).map(|s| s.parse::<u64>()) {
        None => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64),
        Some(Ok(seed)) => seed,
        Some(Err(e)) => {
            eprintln!("usage: hgemm-downstream [SEED]: {e}");
            return ExitCode::from(2);
        }
    };
    println!("seed {seed}");
    match run(seed) {
        Ok(0) => {
            println!("PASS: {} GEMMs match the f64 reference", CASES.len());
            ExitCode::SUCCESS
        }
        Ok(failed) => {
            println!("FAIL: {failed} of {} GEMMs differ from the f64 reference (seed {seed})", CASES.len());
            ExitCode::FAILURE
        }
        Err(e) => {
            println!("FAIL: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs every case; returns how many failed.
fn run(seed: u64) -> Result<usize, Box<dyn std::error::Error>> {
    if !hgemm::device::driver_present() {
        return Err("no CUDA driver (libcuda) on this machine".into());
    }
    let start = Instant::now();
    let gemm = Gemm::new(CudaContext::new(0)?)?;
    let loaded =
        gemm.cubin().map_or_else(|| format!("{} PTX, JIT", gemm.family().ptx_target()), |a| format!("{a} cubin"));
    println!("Gemm::new: {:.3} s on {} ({loaded})", start.elapsed().as_secs_f64(), gemm.device().name);
    let stream = gemm.context().default_stream();
    let mut rng = Rng(seed);
    let mut failed = 0;
    for case in CASES {
        let (m, n, k) = (case.m, case.n, case.k);
        let a: Vec<bf16> = (0..m * k).map(|_| rng.bf16()).collect();
        let b: Vec<bf16> = (0..n * k).map(|_| rng.bf16()).collect();
        let op = if case.b_is_k_by_n { GemmOp::new(m, n, k).b(Layout::RowMajor, n) } else { GemmOp::new(m, n, k) };
        let b_at = |j: usize, p: usize| if case.b_is_k_by_n { b[p * n + j] } else { b[j * k + p] };
        let da = stream.clone_htod(&a)?;
        let db = stream.clone_htod(&b)?;
        let mut dc = stream.clone_htod(&vec![bf16::NAN; m * n])?;
        let start = Instant::now();
        gemm.gemm(&stream, &op, &da, &db, &mut dc)?;
        stream.synchronize()?;
        let first_call = start.elapsed().as_secs_f64();
        let c = stream.clone_dtoh(&dc)?;

        // Each element's error may be the bf16 rounding of the result (half a unit in the last
        // place: 2^-8 relative) plus the f32 accumulation's, bounded by k·2^-24·Σ|a||b|.
        let (mut bad, mut worst, mut first_bad) = (0usize, 0f64, None);
        for i in 0..m {
            for j in 0..n {
                let (mut exact, mut magnitude) = (0f64, 0f64);
                for p in 0..k {
                    let x = f64::from(a[i * k + p]) * f64::from(b_at(j, p));
                    exact += x;
                    magnitude += x.abs();
                }
                let got = f64::from(c[i * n + j]);
                let tolerance = exact.abs() / 256.0 + magnitude * k as f64 / (1u64 << 24) as f64 + 1e-6;
                let error = (got - exact).abs();
                if error.is_nan() || error > tolerance {
                    bad += 1;
                    first_bad.get_or_insert((i, j, got, exact));
                }
                if error.is_finite() {
                    worst = worst.max(error / tolerance);
                }
            }
        }
        let b_form = if case.b_is_k_by_n { "B K×N" } else { "B N×K" };
        let timing = format!("first call {:.1} ms", first_call * 1e3);
        match first_bad {
            None => println!("ok   {m}×{n}×{k} ({b_form}): worst error {worst:.3} of the tolerance; {timing}"),
            Some((i, j, got, exact)) => {
                failed += 1;
                println!(
                    "FAIL {m}×{n}×{k} ({b_form}): {bad} of {} elements wrong, first C[{i}][{j}] = {got} (reference {exact}); {timing}",
                    m * n
                );
            }
        }
    }
    Ok(failed)
}
