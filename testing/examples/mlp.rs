//! hgemm as the GEMM backend of a transformer MLP block, checked against cuBLAS.
//!
//! ```text
//! y = x + relu(x · W_upᵀ) · W_down
//! ```
//! x is tokens×d (row-major). W_up is stored as PyTorch's `nn.Linear` keeps it, out×in =
//! hidden×d row-major, so the first product is the native C = A·Bᵀ. W_down is stored in×out =
//! hidden×d row-major, so the second reads B row-major (N-major) and adds the residual with
//! beta = 1 into a y that already holds x. The ReLU runs on the host between the two products
//! (this example has no kernels of its own). The same block is then computed with cuBLAS and the
//! two outputs compared.
//!
//! `cargo run --release --example mlp [tokens d hidden]` (defaults 4096 4096 16384).

use cudarc::driver::CudaSlice;
use half::bf16;
use hgemm::{Gemm, GemmOp, Layout};
use hgemm_testing::{self as testing, Cublas};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dims: Vec<usize> = std::env::args().skip(1).map(|a| a.parse()).collect::<Result<_, _>>()?;
    let (tokens, d, hidden) = match dims[..] {
        [] => (4096, 4096, 16384),
        [t, d, h] => (t, d, h),
        _ => return Err("usage: mlp [tokens d hidden]".into()),
    };
    let gemm = Gemm::new(hgemm::device::context(0)?)?;
    let stream = gemm.context().default_stream();
    println!(
        "{} ({} kernels), MLP block: tokens {tokens}, d {d}, hidden {hidden}",
        gemm.device().name,
        gemm.family().name()
    );

    let x = testing::random(&gemm, &stream, tokens * d, 1, 1.0)?;
    let w_up = testing::random(&gemm, &stream, hidden * d, 2, 1.0 / (d as f32).sqrt())?;
    let w_down = testing::random(&gemm, &stream, hidden * d, 3, 1.0 / (hidden as f32).sqrt())?;

    // h = x · W_upᵀ: x is M×K row-major, W_up is N×K row-major (B = W_upᵀ column-major).
    let up = GemmOp::new(tokens, hidden, d);
    // y = x + h · W_down: W_down is K×N row-major; y starts as x.
    let down = GemmOp::new(tokens, d, hidden).b(Layout::RowMajor, d).beta(1.0);
    println!("up   : {}", gemm.choose(&up).map(|k| k.name).unwrap_or("-"));
    println!("down : {}", gemm.choose(&down).map(|k| k.name).unwrap_or("-"));

    let relu_on_host = |h: &mut CudaSlice<bf16>| -> Result<(), Box<dyn std::error::Error>> {
        let mut v = stream.clone_dtoh(h)?;
        v.iter_mut().for_each(|e| *e = e.max(bf16::ZERO));
        stream.memcpy_htod(&v, h)?;
        Ok(())
    };

    let mut h = stream.alloc_zeros::<bf16>(tokens * hidden)?;
    let mut y = stream.clone_dtod(&x)?;
    let t = Instant::now();
    gemm.gemm(&stream, &up, &x, &w_up, &mut h)?;
    relu_on_host(&mut h)?;
    gemm.gemm(&stream, &down, &h, &w_down, &mut y)?;
    stream.synchronize()?;
    let elapsed = t.elapsed();

    let blas = Cublas::new(&stream)?;
    let mut h_ref = stream.alloc_zeros::<bf16>(tokens * hidden)?;
    let mut y_ref = stream.clone_dtod(&x)?;
    blas.gemm(&up, &x, &w_up, &mut h_ref)?;
    relu_on_host(&mut h_ref)?;
    blas.gemm(&down, &h_ref, &w_down, &mut y_ref)?;

    let ours = stream.clone_dtoh(&y)?;
    let theirs = stream.clone_dtoh(&y_ref)?;
    let cmp = testing::compare(&ours, theirs.iter().map(|v| v.to_f64()));
    println!(
        "y vs cuBLAS: relative error {:.2e}, non-finite {} ({:.1} ms end to end, ReLU on the host included)",
        cmp.rel_error,
        cmp.non_finite,
        elapsed.as_secs_f64() * 1e3
    );
    if !cmp.passed() {
        return Err(format!("the MLP output differs from cuBLAS's: {cmp:?}").into());
    }
    println!("ok");
    Ok(())
}
