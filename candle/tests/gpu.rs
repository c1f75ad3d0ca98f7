//! hgemm's matmul against candle's own (cuBLAS) on the GPU: shapes, transposes, batches, views,
//! and the calls it must refuse. `#[ignore]`d: run on a Hopper GPU with `--ignored`.
//!
//! Inputs are fresh for every run (the seed comes from the clock and is printed): A uniform in
//! [-1, 1), B in [-1, 1) scaled by K^-1/2 so that outputs stay of order one. Both sides multiply
//! the same bf16 inputs with f32 sums and round to bf16 once, so they differ by the order of the
//! sums (~2^-24 relative per term) and then by at most one bf16 step (2^-7 relative) where the
//! sums straddle a rounding boundary. Each element must lie within 2^-7·|ref| + 2^-8·rms(ref)
//! (the second term covers outputs near zero, where the sums' order dominates), and the whole
//! within hgemm's tolerance for relative Frobenius error (1e-2; a wrong tile or K slice shows up
//! as 0.1 or more).

use candle_core::{DType, Device, Module, Tensor};
use hgemm_candle::{Linear, matmul};

fn device() -> Device {
    let dev = Device::new_cuda(0).expect("a CUDA device (these tests run on the GPU machine)");
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    println!("seed {seed}");
    dev.set_seed(seed).unwrap();
    dev
}

/// bf16 uniform in [-scale, scale).
fn uniform(dev: &Device, dims: &[usize], scale: f64) -> Tensor {
    Tensor::rand(-1f32, 1f32, dims, dev).unwrap().affine(scale, 0.0).unwrap().to_dtype(DType::BF16).unwrap()
}

/// A `dims` operand with its last two dimensions stored swapped when `transposed` (read through
/// a transposed view, as `w.t()` is).
fn operand(dev: &Device, dims: &[usize], transposed: bool, scale: f64) -> Tensor {
    if !transposed {
        return uniform(dev, dims, scale);
    }
    let mut stored = dims.to_vec();
    let r = stored.len();
    stored.swap(r - 2, r - 1);
    uniform(dev, &stored, scale).transpose(r - 2, r - 1).unwrap()
}

/// Within the tolerances of the file's header.
fn assert_close(out: &Tensor, reference: &Tensor, what: &str) {
    assert_eq!(out.dims(), reference.dims(), "{what}");
    assert_eq!(out.dtype(), DType::BF16, "{what}");
    let o = out.to_dtype(DType::F32).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
    let r = reference.to_dtype(DType::F32).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
    if r.is_empty() {
        return;
    }
    let sum_sq_ref: f64 = r.iter().map(|&x| (x as f64).powi(2)).sum();
    let sum_sq_diff: f64 = o.iter().zip(&r).map(|(&a, &b)| (a as f64 - b as f64).powi(2)).sum();
    let rms = (sum_sq_ref / r.len() as f64).sqrt();
    let rel = (sum_sq_diff / sum_sq_ref.max(f64::MIN_POSITIVE)).sqrt();
    assert!(rel <= hgemm::measure::TOLERANCE, "{what}: relative error {rel:.3e}");
    for (i, (&a, &b)) in o.iter().zip(&r).enumerate() {
        let bound = (b.abs() as f64) / 128.0 + rms / 256.0;
        assert!(
            a.is_finite() && ((a - b).abs() as f64) <= bound,
            "{what}: element {i} is {a}, candle's {b} (bound {bound:.3e})"
        );
    }
    println!("{what}: relative error {rel:.2e}");
}

fn error_of(r: candle_core::Result<Tensor>) -> String {
    match r {
        Ok(t) => panic!("expected a refusal, got a tensor of {:?}", t.dims()),
        Err(e) => e.to_string(),
    }
}

/// `a · b` against candle's, or, where an operand read in place has rows a number of elements
/// apart that is not a multiple of 8 (a transposed A's M, a row-major B's N), hgemm's refusal.
fn check_case(a: &Tensor, b: &Tensor, ta: bool, tb: bool, what: &str) {
    let dims = |t: &Tensor, from_end: usize| t.dims()[t.rank() - from_end];
    let (m, n) = (dims(a, 2), dims(b, 1));
    // A single row or column is read in either order.
    let readable = (!ta || m % 8 == 0 || m == 1) && (tb || n % 8 == 0 || n == 1);
    let what = format!("{what}, lhs{} rhs{}", if ta { "ᵀ" } else { "" }, if tb { "ᵀ" } else { "" });
    if readable {
        assert_close(&matmul(a, b).unwrap(), &a.matmul(b).unwrap(), &what);
    } else {
        let e = error_of(matmul(a, b));
        assert!(e.contains("multiple of 8"), "{what}: {e}");
        println!("{what}: refused ({e})");
    }
}

#[test]
#[ignore]
fn matches_candle_over_shapes_and_transposes() {
    let dev = device();
    for (m, n, k) in [
        (1, 8, 8),
        (7, 24, 16),
        (128, 256, 64),
        (300, 500, 72),
        (1000, 1000, 1024),
        (33, 4100, 256),
        (2048, 1536, 4096),
    ] {
        for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
            let a = operand(&dev, &[m, k], ta, 1.0);
            let b = operand(&dev, &[k, n], tb, (k as f64).powf(-0.5));
            check_case(&a, &b, ta, tb, &format!("{m}×{n}×{k}"));
        }
    }
}

#[test]
#[ignore]
fn matches_candle_over_batches() {
    let dev = device();
    for (batch, m, n, k) in
        [(&[3][..], 128, 96, 64), (&[2, 3][..], 40, 72, 128), (&[5][..], 257, 129, 512), (&[4][..], 264, 136, 512)]
    {
        for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
            let a = operand(&dev, &[batch, &[m, k]].concat(), ta, 1.0);
            let b = operand(&dev, &[batch, &[k, n]].concat(), tb, (k as f64).powf(-0.5));
            check_case(&a, &b, ta, tb, &format!("{batch:?} × {m}×{n}×{k}"));
        }
    }
}

#[test]
#[ignore]
fn shared_weights_and_linear_match_candle() {
    let dev = device();
    let (batch, tokens, d_in, d_out) = (3, 100, 512, 1000);
    let x = uniform(&dev, &[batch, tokens, d_in], 1.0);
    let w = uniform(&dev, &[d_out, d_in], (d_in as f64).powf(-0.5));
    let bias = uniform(&dev, &[d_out], 1.0);
    let reference = x.broadcast_matmul(&w.t().unwrap()).unwrap();
    assert_close(&matmul(&x, &w.t().unwrap()).unwrap(), &reference, "shared weight, rank 2");
    let broadcast = w.t().unwrap().broadcast_left(batch).unwrap();
    assert_close(&matmul(&x, &broadcast).unwrap(), &reference, "shared weight, broadcast_left");
    let linear = Linear::new(w.clone(), Some(bias.clone()));
    let with_bias = reference.broadcast_add(&bias).unwrap();
    assert_close(&linear.forward(&x).unwrap(), &with_bias, "Linear with bias, 3-D input");
    let x2 = x.flatten_to(1).unwrap();
    assert_close(&linear.forward(&x2).unwrap(), &with_bias.flatten_to(1).unwrap(), "Linear with bias, 2-D input");
    // Decoding: one row per batch entry, taken from a wider tensor.
    let rows = uniform(&dev, &[8, 4, d_in], 1.0).narrow(1, 2, 1).unwrap();
    let reference = rows.contiguous().unwrap().broadcast_matmul(&w.t().unwrap()).unwrap();
    assert_close(&matmul(&rows, &w.t().unwrap()).unwrap(), &reference, "one strided row per entry");
}

#[test]
#[ignore]
fn narrowed_views_are_read_in_place() {
    let dev = device();
    let big_a = uniform(&dev, &[300, 640], 1.0);
    let big_b = uniform(&dev, &[300, 640], 1.0 / 16.0);
    // Rows 640 elements apart, starting 64 and 8·640 + 128 elements in.
    let a = big_a.narrow(1, 64, 256).unwrap();
    let b = big_b.narrow(0, 8, 256).unwrap().narrow(1, 128, 200).unwrap();
    // The references on dense copies: candle's matmul takes no leading dimension wider than a row.
    let dense = |t: &Tensor| t.contiguous().unwrap();
    assert_close(&matmul(&a, &b).unwrap(), &dense(&a).matmul(&dense(&b)).unwrap(), "narrowed lhs and rhs");
    let at = big_a.narrow(0, 16, 256).unwrap().narrow(1, 40, 100).unwrap().t().unwrap();
    let bt = big_b.narrow(0, 40, 200).unwrap().narrow(1, 8, 256).unwrap().t().unwrap();
    let reference = dense(&at).matmul(&dense(&bt)).unwrap();
    assert_close(&matmul(&at, &bt).unwrap(), &reference, "narrowed and transposed lhs and rhs");
}

#[test]
#[ignore]
fn refusals_say_why() {
    let dev = device();
    let a = uniform(&dev, &[64, 64], 1.0);
    let e = error_of(matmul(&a.to_dtype(DType::F32).unwrap(), &a));
    assert!(e.contains("bf16"), "{e}");
    let e = error_of(matmul(&uniform(&dev, &[64, 20], 1.0), &uniform(&dev, &[20, 64], 1.0)));
    assert!(e.contains("multiple of 8"), "{e}");
    let cpu = a.to_device(&Device::Cpu).unwrap();
    let e = error_of(matmul(&cpu, &cpu));
    assert!(e.contains("CUDA"), "{e}");
    let per_entry_transposed = uniform(&dev, &[3, 64, 32], 1.0).transpose(1, 2).unwrap();
    let e = error_of(matmul(&per_entry_transposed, &a));
    assert!(e.contains("broadcast"), "{e}");
    let misaligned = uniform(&dev, &[64, 72], 1.0).narrow(1, 4, 64).unwrap();
    let e = error_of(matmul(&misaligned, &a));
    assert!(e.contains("16-byte"), "{e}");
}

#[test]
#[ignore]
fn empty_and_k_zero() {
    let dev = device();
    // Empty views of allocated tensors.
    let (a, b) = (uniform(&dev, &[16, 64], 1.0), uniform(&dev, &[64, 32], 1.0));
    let out = matmul(&a.narrow(0, 0, 0).unwrap(), &b).unwrap();
    assert_eq!(out.dims(), [0, 32]);
    let out = matmul(&a.narrow(1, 0, 0).unwrap(), &b.narrow(0, 0, 0).unwrap()).unwrap();
    let values = out.to_dtype(DType::F32).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
    assert!(values.len() == 16 * 32 && values.iter().all(|&v| v == 0.0), "K = 0 must give zeros");
}
