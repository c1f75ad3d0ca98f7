//! A Llama-style MLP block entirely on the GPU through hgemm, checked against cuBLAS with
//! separate kernels and timed against it.
//!
//! ```text
//! y = x + (silu(x · W_gateᵀ) ⊙ (x · W_upᵀ)) · W_downᵀ
//! ```
//! x is tokens×d (row-major); the weights are stored as PyTorch's `nn.Linear` keeps them, out×in
//! row-major (W_gate and W_up I×d, W_down d×I), so each product is the native C = A·Bᵀ. hgemm
//! runs two calls: gate and up as one gated GEMM over a weight with their rows interleaved in
//! blocks of 8 (`interleave_gate_up`, once, as when weights are loaded), writing
//! silu(gate)·up with no intermediate in memory; then down with the residual added by beta = 1
//! into a y that holds x. The baseline computes gate|up with cuBLAS into a tokens×2I buffer,
//! applies SwiGLU with a separate kernel (`Gemm::glu`), and runs down with cuBLAS.
//!
//! `cargo run --release -p hgemm-testing --example mlp [tokens d I]` (defaults 4096 4096 14336,
//! Llama-3 8B).

use hgemm::{Activation, Gemm, GemmOp, Layout, interleave_gate_up};
use hgemm_testing::{self as testing, Cublas};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dims: Vec<usize> = std::env::args().skip(1).map(|a| a.parse()).collect::<Result<_, _>>()?;
    let (tokens, d, i) = match dims[..] {
        [] => (4096, 4096, 14336),
        [t, d, i] => (t, d, i),
        _ => return Err("usage: mlp [tokens d I]".into()),
    };
    let gemm = Gemm::new(hgemm::device::context(0)?)?;
    let stream = gemm.context().default_stream();
    println!("{} ({} kernels), Llama MLP: tokens {tokens}, d {d}, I {i}", gemm.device().name, gemm.family().name());

    let x = testing::random(&gemm, &stream, tokens * d, 1, 1.0)?;
    // Gate rows then up rows, as the baseline reads them: (2·I)×d.
    let w_gate_up = testing::random(&gemm, &stream, 2 * i * d, 2, 1.0 / (d as f32).sqrt())?;
    let w_down = testing::random(&gemm, &stream, d * i, 3, 1.0 / (i as f32).sqrt())?;
    let halves = stream.clone_dtoh(&w_gate_up)?;
    let w_interleaved =
        stream.clone_htod(&interleave_gate_up(&halves[..i * d], &halves[i * d..], Layout::ColMajor, i, d)?)?;

    // h = silu(x·W_gateᵀ) ⊙ (x·W_upᵀ): one GEMM with N = 2·I, writing I columns.
    let gate_up = GemmOp::new(tokens, 2 * i, d).activation(Activation::Silu).gated();
    // y = x + h·W_downᵀ.
    let down = GemmOp::new(tokens, d, i).beta(1.0);
    println!("gate+up: {}", gemm.choose(&gate_up).map_or("-", |k| k.name));
    println!("down   : {}", gemm.choose(&down).map_or("-", |k| k.name));

    let mut h = stream.alloc_zeros(tokens * i)?;
    let mut y = stream.clone_dtod(&x)?;
    let mut ours = |y: &mut _| -> testing::Result<()> {
        gemm.gemm(&stream, &gate_up, &x, &w_interleaved, &mut h)?;
        gemm.gemm(&stream, &down, &h, &w_down, y)?;
        Ok(())
    };
    ours(&mut y)?;

    let blas = Cublas::new(&stream)?;
    let mut wide = stream.alloc_zeros(tokens * 2 * i)?;
    let mut h_ref = stream.alloc_zeros(tokens * i)?;
    let mut y_ref = stream.clone_dtod(&x)?;
    let mut theirs = |y: &mut _| -> testing::Result<()> {
        blas.matmul(&x, &w_gate_up, &mut wide, tokens, 2 * i, d)?;
        gemm.glu(&stream, &wide, tokens, i, 2 * i, &mut h_ref, i, Activation::Silu)?;
        blas.gemm(&down, &h_ref, &w_down, y)?;
        Ok(())
    };
    theirs(&mut y_ref)?;

    let cmp = testing::compare(&stream.clone_dtoh(&y)?, stream.clone_dtoh(&y_ref)?.iter().map(|v| v.to_f64()));
    println!("y vs cuBLAS + glu: relative error {:.2e}, non-finite {}", cmp.rel_error, cmp.non_finite);
    if !cmp.passed() {
        return Err(format!("the MLP output differs from the baseline's: {cmp:?}").into());
    }

    // Medians of 9 samples of 5 blocks each (y accumulates: only the time matters here).
    let ms = |f: &mut dyn FnMut() -> testing::Result<()>| -> testing::Result<f64> {
        let t = testing::time_median(&stream, 2, 9, 5, |_| f())?;
        Ok(testing::median(&t))
    };
    let t_ours = ms(&mut || ours(&mut y))?;
    let t_theirs = ms(&mut || theirs(&mut y_ref))?;
    let flops = 2.0 * tokens as f64 * d as f64 * 3.0 * i as f64;
    println!(
        "hgemm (fused SwiGLU): {t_ours:.3} ms ({:.0} TFLOP/s); cuBLAS + glu kernel: {t_theirs:.3} ms ({:.0} TFLOP/s); {:.3}× faster",
        flops / (t_ours * 1e-3) / 1e12,
        flops / (t_theirs * 1e-3) / 1e12,
        t_theirs / t_ours
    );
    println!("ok");
    Ok(())
}
