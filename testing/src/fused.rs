//! The fused epilogue checked: a call with a bias, an activation or gated units, run through a
//! chosen entry or `auto` on fresh random inputs with C poisoned (or random, where beta reads
//! it), compared with the f64 CPU reference on small shapes and with cuBLAS's f32 products and
//! the same epilogue in f64 on any shape; C's buffer outside the output must come back untouched.

use crate::reference::{Comparison, compare, cpu_reference_fused, reference_from_products};
use crate::verify::CPU_CHECK_MAX_MACS;
use crate::{Cublas, GUARD_LEN, POISON, Result, drv, fill, lengths, random};
use cudarc::driver::{CudaSlice, CudaStream};
use half::bf16;
use hgemm::{Activation, BiasType, Gemm, GemmOp, KernelSpec, Layout};
use std::sync::Arc;

/// A bias vector on the host (its values as the device holds them) and on the device.
pub enum BiasBuffers {
    /// bf16.
    Bf16(Vec<bf16>, CudaSlice<bf16>),
    /// f32.
    F32(Vec<f32>, CudaSlice<f32>),
}

impl BiasBuffers {
    /// `len` random values uniform in [-1, 1) of type `ty`, from stream `seed`, on the host and
    /// copied to the device.
    pub fn random(stream: &Arc<CudaStream>, ty: BiasType, len: usize, seed: u64) -> Result<BiasBuffers> {
        let values = random_values(len.max(1), seed);
        Ok(match ty {
            BiasType::Bf16 => {
                let host: Vec<bf16> = values.iter().map(|&v| bf16::from_f32(v)).collect();
                let dev = stream.clone_htod(&host).map_err(drv("cuMemcpyHtoD"))?;
                BiasBuffers::Bf16(host, dev)
            }
            BiasType::F32 => {
                let dev = stream.clone_htod(&values).map_err(drv("cuMemcpyHtoD"))?;
                BiasBuffers::F32(values, dev)
            }
        })
    }

    /// The values in f64, for the references.
    pub fn values(&self) -> Vec<f64> {
        match self {
            BiasBuffers::Bf16(h, _) => h.iter().map(|v| v.to_f64()).collect(),
            BiasBuffers::F32(h, _) => h.iter().map(|&v| v as f64).collect(),
        }
    }
}

/// `len` values uniform in [-1, 1), from stream `seed` (SplitMix64: plenty for test data).
fn random_values(len: usize, seed: u64) -> Vec<f32> {
    let mut state = seed ^ 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            // 24 random bits to [0, 2), then [-1, 1).
            ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// What [`check_fused`] found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FusedCheck {
    /// The entry that ran.
    pub kernel: &'static str,
    /// Against cuBLAS's f32 products with the epilogue applied in f64, over the output.
    pub vs_cublas: Comparison,
    /// Against the f64 CPU reference over the output, for calls of up to [`CPU_CHECK_MAX_MACS`].
    pub vs_cpu: Option<Comparison>,
    /// Elements of C's buffer outside the output (padding, guard band) that the call changed.
    pub outside: usize,
}

impl FusedCheck {
    /// Every comparison passed and nothing outside the output changed.
    pub fn passed(&self) -> bool {
        self.vs_cublas.passed() && self.vs_cpu.is_none_or(|c| c.passed()) && self.outside == 0
    }
}

/// Run `op` (with its fused epilogue; a bias of the type it declares is made here) through
/// `kernel`, or `auto` with `None`, and check it (see the module's docs). C is poisoned where
/// beta is 0 (an element left unwritten stays NaN) and random where beta reads it.
pub fn check_fused(
    gemm: &Gemm,
    blas: &Cublas,
    stream: &Arc<CudaStream>,
    op: &GemmOp,
    kernel: Option<&'static KernelSpec>,
    seed: u64,
) -> Result<FusedCheck> {
    let (la, lb, lc) = lengths(op);
    let a = random(gemm, stream, la, seed, 1.0)?;
    let b = random(gemm, stream, lb, seed ^ 0x5eed, 1.0 / (op.k.max(1) as f32).sqrt())?;
    let mut c = random(gemm, stream, lc + GUARD_LEN, seed ^ 0xc0de, 1.0)?;
    if op.beta == 0.0 {
        fill(gemm, stream, &mut c.slice_mut(0..lc), POISON)?;
    }
    let bias = match op.bias {
        Some(ty) => Some(BiasBuffers::random(stream, ty, op.bias_len()?, seed ^ 0xb1a5)?),
        None => None,
    };
    let host = |buf: &CudaSlice<bf16>| stream.clone_dtoh(buf).map_err(drv("cuMemcpyDtoH"));
    let before_c = host(&c)?;
    let bias_values = bias.as_ref().map(BiasBuffers::values);
    let kernel_name = match kernel {
        Some(k) => k.name,
        None => gemm.choose(op).map_or("auto (none)", |k| k.name),
    };
    let mut view = c.slice_mut(0..lc);
    match (&bias, kernel) {
        (None, None) => gemm.gemm(stream, op, &a, &b, &mut view)?,
        (None, Some(k)) => gemm.gemm_with(k, stream, op, &a, &b, &mut view)?,
        (Some(BiasBuffers::Bf16(_, d)), None) => gemm.gemm_bias(stream, op, &a, &b, d, &mut view)?,
        (Some(BiasBuffers::Bf16(_, d)), Some(k)) => gemm.gemm_bias_with(k, stream, op, &a, &b, d, &mut view)?,
        (Some(BiasBuffers::F32(_, d)), None) => gemm.gemm_bias(stream, op, &a, &b, d, &mut view)?,
        (Some(BiasBuffers::F32(_, d)), Some(k)) => gemm.gemm_bias_with(k, stream, op, &a, &b, d, &mut view)?,
    }
    let out = host(&c)?;
    // The references, over C's whole buffer: the epilogue reads the old C only where beta ≠ 0.
    let before: Vec<bf16> = before_c.clone();
    let mut products = stream.alloc_zeros::<f32>((op.m * op.n * op.batch).max(1)).map_err(drv("cuMemAlloc"))?;
    blas.products(op, &a, &b, &mut products)?;
    let products = stream.clone_dtoh(&products).map_err(drv("cuMemcpyDtoH"))?;
    let from_cublas = reference_from_products(op, &products, bias_values.as_deref(), &before[..lc])?;
    let small = op.m * op.n * op.k * op.batch <= CPU_CHECK_MAX_MACS;
    let from_cpu = if small {
        Some(cpu_reference_fused(op, &host(&a)?, &host(&b)?, bias_values.as_deref(), &before[..lc])?)
    } else {
        None
    };
    // Which elements of the buffer the call writes.
    let mut output = vec![false; before_c.len()];
    for z in 0..op.batch {
        for (i, j) in (0..op.m).flat_map(|i| (0..op.out_n()).map(move |j| (i, j))) {
            let at = z * op.stride_c + if op.c_layout == Layout::RowMajor { i * op.ldc + j } else { j * op.ldc + i };
            output[at] = true;
        }
    }
    let on_output = |v: &[f64]| -> Vec<f64> { (0..lc).filter(|&i| output[i]).map(|i| v[i]).collect() };
    let out_output: Vec<bf16> = (0..lc).filter(|&i| output[i]).map(|i| out[i]).collect();
    let outside = (0..out.len()).filter(|&i| !output[i] && out[i].to_bits() != before_c[i].to_bits()).count();
    Ok(FusedCheck {
        kernel: kernel_name,
        vs_cublas: compare(&out_output, on_output(&from_cublas)),
        vs_cpu: from_cpu.map(|r| compare(&out_output, on_output(&r))),
        outside,
    })
}

/// The activations a fused call may apply, with a short name for reports and the bench.
pub const ACTIVATIONS: [(Activation, &str); 5] = [
    (Activation::Identity, "identity"),
    (Activation::Relu, "relu"),
    (Activation::GeluTanh, "gelu-tanh"),
    (Activation::GeluErf, "gelu-erf"),
    (Activation::Silu, "silu"),
];

/// One fused call to check: what it is, and the call.
pub struct FusedCase {
    /// The case in words.
    pub what: String,
    /// The call.
    pub op: GemmOp,
}

/// `op` with the bias (none, bf16, f32) and activation given.
fn with_epilogue(op: GemmOp, bias: Option<BiasType>, act: Activation) -> GemmOp {
    let op = op.activation(act);
    match bias {
        Some(ty) => op.bias(ty),
        None => op,
    }
}

/// The general fused calls `auto` must get right: every storage order of A, B and C with
/// alpha and beta, padded leading dimensions, strided batches with a bias per entry, ragged C,
/// each with a bias and an activation, and each gated.
pub fn fused_general_cases() -> Vec<FusedCase> {
    let orders = [Layout::RowMajor, Layout::ColMajor];
    let mut cases = Vec::new();
    let mut i = 0usize;
    for &(m, n, k) in &[(300, 528, 136), (96, 1024, 264)] {
        for al in orders {
            for bl in orders {
                for cl in orders {
                    // A different bias type and activation for each case, every one covered.
                    let (act, name) = crate::fused::ACTIVATIONS[i % 5];
                    let bias = if i.is_multiple_of(2) { BiasType::Bf16 } else { BiasType::F32 };
                    i += 1;
                    let ld = |l: Layout, rows: usize, cols: usize| if l == Layout::RowMajor { cols } else { rows };
                    let pad = |x: usize, p: usize| (x + p).div_ceil(8) * 8;
                    let base = GemmOp::new(m, n, k)
                        .a(al, pad(ld(al, m, k), 8))
                        .b(bl, pad(ld(bl, k, n), 16))
                        .alpha(0.75)
                        .beta(-0.5);
                    let op = with_epilogue(base, Some(bias), act).c(cl, pad(ld(cl, m, n), 8));
                    cases.push(FusedCase {
                        what: format!(
                            "{m}x{n}x{k} A {al:?} B {bl:?} C {cl:?} padded, alpha .75 beta -.5, {bias:?} bias, {name}"
                        ),
                        op,
                    });
                    let gated = with_epilogue(
                        base,
                        Some(bias),
                        if i.is_multiple_of(2) { Activation::Silu } else { Activation::GeluTanh },
                    )
                    .gated();
                    let gated = gated.c(cl, pad(ld(cl, m, n / 2), 8));
                    cases.push(FusedCase {
                        what: format!("{m}x{n}x{k} gated, A {al:?} B {bl:?} C {cl:?} padded, alpha .75 beta -.5, {bias:?} bias, {:?}", gated.activation),
                        op: gated,
                    });
                }
            }
        }
    }
    // Batches: one bias per entry, and one shared.
    let b = GemmOp::new(200, 272, 72).b(Layout::RowMajor, 272).beta(1.0);
    let (la, lb, lc) = lengths(&b);
    let batched = b.batched(3, la + 64, lb + 8, lc + 256);
    cases.push(FusedCase {
        what: "200x272x72 batch of 3, a bf16 bias per entry (stride 280), GELU erf, beta 1".into(),
        op: batched.bias(BiasType::Bf16).bias_stride(280).activation(Activation::GeluErf),
    });
    cases.push(FusedCase {
        what: "200x272x72 batch of 3, one shared f32 bias, SiLU, beta 1".into(),
        op: batched.bias(BiasType::F32).activation(Activation::Silu),
    });
    let g = GemmOp::new(200, 544, 72).activation(Activation::Silu).gated().bias(BiasType::F32);
    let (la, lb, lc) = lengths(&g);
    cases.push(FusedCase {
        what: "200x544x72 gated batch of 3 (SwiGLU), an f32 bias per entry, beta 1".into(),
        op: g.beta(1.0).batched(3, la, lb, lc + 24).bias_stride(548),
    });
    // Stream-K: tiles split by K, the epilogue on the finishing worker's sums only.
    cases.push(FusedCase {
        what: "520x784x4096 split by K, bf16 bias, ReLU".into(),
        op: GemmOp::new(520, 784, 4096).bias(BiasType::Bf16).activation(Activation::Relu),
    });
    cases.push(FusedCase {
        what: "520x1568x4096 gated split by K (GeGLU), f32 bias".into(),
        op: GemmOp::new(520, 1568, 4096).bias(BiasType::F32).activation(Activation::GeluTanh).gated(),
    });
    // Ragged C, which the threads store: rows mid-chunk, odd leading dimensions.
    for (n, ldc) in [(1000, 1003), (304, 307)] {
        cases.push(FusedCase {
            what: format!("130x{n}x64 ragged C (ldc {ldc}), f32 bias, GELU tanh, beta 1"),
            op: GemmOp::new(130, n, 64)
                .bias(BiasType::F32)
                .activation(Activation::GeluTanh)
                .c(Layout::RowMajor, ldc)
                .beta(1.0),
        });
        cases.push(FusedCase {
            what: format!("130x{}x64 gated ragged C (ldc {}), bf16 bias, SiLU", 2 * n, ldc),
            op: GemmOp::new(130, 2 * n, 64)
                .bias(BiasType::Bf16)
                .activation(Activation::Silu)
                .gated()
                .c(Layout::RowMajor, ldc),
        });
    }
    // K = 0: y = act(bias) + beta·C.
    cases.push(FusedCase {
        what: "256x512x0 (K = 0), f32 bias, ReLU, beta .5".into(),
        op: GemmOp::new(256, 512, 0).bias(BiasType::F32).activation(Activation::Relu).beta(0.5),
    });
    cases
}

/// Entry-by-entry shapes: partial tiles along M and N (the full matrix of epilogues runs here),
/// one tile, and a larger one past the CPU reference's size.
pub const FUSED_ENTRY_SHAPES: [(usize, usize, usize); 3] = [(300, 528, 136), (128, 256, 64), (1000, 1040, 264)];

/// The calls each Hopper v7 entry is checked with, A and B in `kernel`'s orders (`op_for`), C
/// row-major: on the first of [`FUSED_ENTRY_SHAPES`] every activation with no bias, a bf16 bias
/// and an f32 bias (beta 0 and 1 alternating), and gated SwiGLU and GeGLU (both GELU forms) with
/// and without an f32 bias; on the others four of them (a bf16 bias with GELU erf, an f32 bias
/// with SiLU and beta 1, SwiGLU with a bf16 bias, GeGLU), so that every entry is checked within
/// minutes.
pub fn fused_entry_cases(kernel: &KernelSpec) -> Vec<FusedCase> {
    let mut cases = Vec::new();
    let (m, n, k) = FUSED_ENTRY_SHAPES[0];
    let base = crate::op_for(kernel, m, n, k);
    for (a, &(act, name)) in ACTIVATIONS.iter().enumerate() {
        for (b, bias) in [None, Some(BiasType::Bf16), Some(BiasType::F32)].into_iter().enumerate() {
            let beta = ((a + b) % 2) as f32;
            cases.push(FusedCase {
                what: format!("{m}x{n}x{k} {bias:?} bias, {name}, beta {beta}"),
                op: with_epilogue(base, bias, act).beta(beta),
            });
        }
    }
    for (act, name) in
        [(Activation::Silu, "SwiGLU"), (Activation::GeluTanh, "GeGLU tanh"), (Activation::GeluErf, "GeGLU erf")]
    {
        for bias in [None, Some(BiasType::F32)] {
            cases.push(FusedCase {
                what: format!("{m}x{n}x{k} {name}, {bias:?} bias"),
                op: with_epilogue(base, bias, act).gated(),
            });
        }
    }
    for &(m, n, k) in &FUSED_ENTRY_SHAPES[1..] {
        let base = crate::op_for(kernel, m, n, k);
        cases.extend([
            FusedCase {
                what: format!("{m}x{n}x{k} bf16 bias, GELU erf"),
                op: with_epilogue(base, Some(BiasType::Bf16), Activation::GeluErf),
            },
            FusedCase {
                what: format!("{m}x{n}x{k} f32 bias, SiLU, beta 1"),
                op: with_epilogue(base, Some(BiasType::F32), Activation::Silu).beta(1.0),
            },
            FusedCase {
                what: format!("{m}x{n}x{k} SwiGLU, bf16 bias"),
                op: with_epilogue(base, Some(BiasType::Bf16), Activation::Silu).gated(),
            },
            FusedCase {
                what: format!("{m}x{n}x{k} GeGLU tanh, beta 1"),
                op: base.activation(Activation::GeluTanh).gated().beta(1.0),
            },
        ]);
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_is_a_valid_fused_call() {
        for case in fused_general_cases() {
            assert_eq!(case.op.validate_shape().map(|_| ()), Ok(()), "{}", case.what);
            assert!(case.op.fused(), "{}", case.what);
        }
        for kernel in hgemm_kernels::hopper::v7::VARIANTS.iter().chain([&hgemm_kernels::hopper::v7::SPEC]) {
            let cases = fused_entry_cases(kernel);
            assert_eq!(cases.len(), 5 * 3 + 6 + 4 * (FUSED_ENTRY_SHAPES.len() - 1));
            for case in cases {
                assert!(case.op.validate_shape().is_ok(), "{} {}", kernel.name, case.what);
            }
        }
        // Every activation, both bias types and gating appear among the general cases.
        let cases = fused_general_cases();
        for (act, _) in ACTIVATIONS.iter().skip(1) {
            assert!(cases.iter().any(|c| c.op.activation == *act && !c.op.gated), "{act:?}");
        }
        for ty in [BiasType::Bf16, BiasType::F32] {
            assert!(cases.iter().any(|c| c.op.bias == Some(ty) && c.op.gated && c.op.batch == 1));
        }
        assert!(cases.iter().any(|c| c.op.gated && c.op.batch > 1 && c.op.bias_stride > 0));
    }

    #[test]
    fn random_biases_are_fresh_and_in_range() {
        let (x, y) = (random_values(1000, 1), random_values(1000, 2));
        assert_ne!(x, y);
        assert!(x.iter().chain(&y).all(|v| (-1.0..1.0).contains(v)));
        let mean = x.iter().map(|&v| v as f64).sum::<f64>() / 1000.0;
        assert!(mean.abs() < 0.1, "mean {mean}");
        assert!(x.iter().any(|&v| v < -0.9) && x.iter().any(|&v| v > 0.9));
    }
}
