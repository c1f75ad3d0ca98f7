//! The f64 CPU reference, and outputs compared with a reference on the host.

use crate::{BufferComparison, Result, TOLERANCE};
use half::bf16;
use hgemm::{Activation, GemmOp, Layout};

/// `act(x)` in f64: the activations of [`Activation`] as their formulas define them.
pub fn activation_f64(act: Activation, x: f64) -> f64 {
    match act {
        Activation::Identity => x,
        Activation::Relu => x.max(0.0),
        Activation::GeluTanh => {
            0.5 * x * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x)).tanh())
        }
        Activation::GeluErf => 0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2)),
        Activation::Silu => x / (1.0 + (-x).exp()),
    }
}

/// The GEMM's column of a gated call's output column `j`: its gate column (the up column is 8
/// further), the gate and up projections interleaved in blocks of 8.
pub fn gate_column(j: usize) -> usize {
    let block = hgemm_kernels::fused::GLU_BLOCK as usize;
    2 * block * (j / block) + j % block
}

/// The whole C buffer after `op`, in f64 on the CPU: `c` is its content before the call
/// (padding and, with beta ≠ 0, the old values). The buffers are checked as `gemm` checks them
/// ([`GemmOp::validate`]): too short a buffer is an error, not a panic.
pub fn cpu_reference_general(op: &GemmOp, a: &[bf16], b: &[bf16], c: &[bf16]) -> Result<Vec<f64>> {
    cpu_reference_fused(op, a, b, None, c)
}

/// [`cpu_reference_general`] with `op`'s fused epilogue: each output element is
/// `act(alpha·(A·B)[i][j] + bias[j]) + beta·C[i][j]`, or for a gated call
/// `act(g)·u + beta·C[i][j]` with `g`, `u` the gate and up columns' pre-activations (alpha and
/// bias applied to each). `bias` holds the bias's values (converted from its bf16 or f32),
/// checked as [`Gemm::gemm_bias`](hgemm::Gemm::gemm_bias) checks its buffer.
pub fn cpu_reference_fused(op: &GemmOp, a: &[bf16], b: &[bf16], bias: Option<&[f64]>, c: &[bf16]) -> Result<Vec<f64>> {
    let mut out: Vec<f64> = c.iter().map(|x| x.to_f64()).collect();
    // The declared type stands in for the buffer's: the values are given as f64.
    if !op.validate_fused(a.len(), b.len(), bias.and(op.bias).zip(bias.map(<[f64]>::len)), c.len())? {
        return Ok(out);
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(op.m.max(1));
    for z in 0..op.batch {
        let (a, b) = (&a[z * op.stride_a..], &b[z * op.stride_b..]);
        let at = |i: usize, kk: usize| {
            if op.a_layout == Layout::RowMajor { a[i * op.lda + kk] } else { a[kk * op.lda + i] }.to_f64()
        };
        let bt = |kk: usize, j: usize| {
            if op.b_layout == Layout::RowMajor { b[kk * op.ldb + j] } else { b[j * op.ldb + kk] }.to_f64()
        };
        // A·B row by row, the rows split over the host's cores.
        let rows_per = op.m.div_ceil(threads);
        let ab: Vec<f64> = std::thread::scope(|s| {
            let parts: Vec<_> = (0..threads)
                .map(|t| {
                    s.spawn(move || {
                        let rows = t * rows_per..((t + 1) * rows_per).min(op.m);
                        rows.flat_map(|i| {
                            (0..op.n).map(move |j| (0..op.k).map(|kk| at(i, kk) * bt(kk, j)).sum::<f64>())
                        })
                        .collect::<Vec<f64>>()
                    })
                })
                .collect();
            parts.into_iter().flat_map(|p| p.join().expect("reference thread")).collect()
        });
        apply_epilogue(op, z, &ab, bias, &mut out);
    }
    Ok(out)
}

/// The whole C buffer after `op` from its products `alpha·A·B` computed elsewhere (cuBLAS into
/// f32, dense M×N row-major per batch entry, entries M·N apart), with the epilogue in f64:
/// the reference for calls too large for the CPU's product.
pub fn reference_from_products(op: &GemmOp, products: &[f32], bias: Option<&[f64]>, c: &[bf16]) -> Result<Vec<f64>> {
    let mut out: Vec<f64> = c.iter().map(|x| x.to_f64()).collect();
    if !op.validate_fused(usize::MAX, usize::MAX, bias.and(op.bias).zip(bias.map(<[f64]>::len)), c.len())? {
        return Ok(out);
    }
    let entry = op.m * op.n;
    if products.len() < entry * op.batch {
        return Err(hgemm::Error::BufferTooSmall {
            operand: "products",
            needed: entry * op.batch,
            len: products.len(),
        }
        .into());
    }
    // alpha is in the products already.
    let unscaled = GemmOp { alpha: 1.0, ..*op };
    for z in 0..op.batch {
        let ab: Vec<f64> = products[z * entry..(z + 1) * entry].iter().map(|&x| x as f64).collect();
        apply_epilogue(&unscaled, z, &ab, bias, &mut out);
    }
    Ok(out)
}

/// Batch entry `z` of `op`'s output into `out` (C's whole buffer, holding the old C), from the
/// GEMM's M×N products `ab` (row-major).
fn apply_epilogue(op: &GemmOp, z: usize, ab: &[f64], bias: Option<&[f64]>, out: &mut [f64]) {
    let bias_of = |j: usize| bias.map_or(0.0, |v| v[z * op.bias_stride + j]);
    // alpha·(A·B) + bias for the GEMM's row i, column j.
    let pre = |i: usize, j: usize| op.alpha as f64 * ab[i * op.n + j] + bias_of(j);
    let block = hgemm_kernels::fused::GLU_BLOCK as usize;
    for i in 0..op.m {
        for j in 0..op.out_n() {
            let y = if op.gated {
                let g = gate_column(j);
                activation_f64(op.activation, pre(i, g)) * pre(i, g + block)
            } else {
                activation_f64(op.activation, pre(i, j))
            };
            let at_c = z * op.stride_c + if op.c_layout == Layout::RowMajor { i * op.ldc + j } else { j * op.ldc + i };
            out[at_c] = y + if op.beta != 0.0 { op.beta as f64 * out[at_c] } else { 0.0 };
        }
    }
}

/// How far an output is from a reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Comparison {
    /// ‖out − ref‖ / ‖ref‖ over the finite elements.
    pub rel_error: f64,
    /// Elements that are NaN or infinite (unwritten ones stay NaN from the poison).
    pub non_finite: usize,
}

impl Comparison {
    /// Within [`TOLERANCE`] and no unwritten or non-finite element.
    pub fn passed(&self) -> bool {
        self.non_finite == 0 && self.rel_error <= TOLERANCE
    }
}

/// `out` against `reference`, element by element in the same order. An element of either with no
/// counterpart in the other (they differ in length) counts as non-finite, so that the comparison
/// fails.
pub fn compare(out: &[bf16], reference: impl IntoIterator<Item = f64>) -> Comparison {
    let (mut diff, mut norm, mut non_finite) = (0.0f64, 0.0f64, 0usize);
    let (mut out, mut reference) = (out.iter(), reference.into_iter());
    loop {
        let (o, r) = match (out.next(), reference.next()) {
            (Some(o), Some(r)) => (o, r),
            (None, None) => break,
            // Past the end of `reference`: each output element left over fails.
            (Some(_), None) => {
                non_finite += 1;
                continue;
            }
            // Past the end of `out` (`reference` may be endless): failed already.
            (None, Some(_)) => {
                non_finite += 1;
                break;
            }
        };
        let o = o.to_f64();
        if !o.is_finite() {
            non_finite += 1;
            continue;
        }
        diff += (o - r) * (o - r);
        norm += r * r;
    }
    Comparison { rel_error: if norm > 0.0 { (diff / norm).sqrt() } else { diff.sqrt() }, non_finite }
}

/// [`compare_into`](crate::compare_into)'s counts on the host, against an f64 reference in which NaN marks poison.
pub fn compare_host(out: &[bf16], reference: &[f64]) -> BufferComparison {
    let mut c = BufferComparison::default();
    // Lengths that differ fail: a reference element with no output is unwritten, an output
    // element with no reference a stray write.
    c.unwritten += reference.len().saturating_sub(out.len()) as u64;
    c.stray += out.len().saturating_sub(reference.len()) as u64;
    c.bits_differ += out.len().abs_diff(reference.len()) as u64;
    for (o, &r) in out.iter().zip(reference) {
        let rounded = bf16::from_f64(r);
        c.bits_differ += (o.to_bits() != rounded.to_bits() && !(o.is_nan() && rounded.is_nan())) as u64;
        let o = o.to_f64();
        match (o.is_finite(), r.is_finite()) {
            (true, true) => {
                c.sum_sq_diff += (o - r) * (o - r);
                c.sum_sq_ref += r * r;
            }
            (false, true) => c.unwritten += 1,
            (true, false) => c.stray += 1,
            (false, false) => {}
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, POISON};

    #[test]
    fn cpu_reference_is_a_times_b_transposed() {
        // 2×8 each, K's last five columns zero.
        let row = |v: [f32; 3]| v.into_iter().chain([0.0; 5]).map(bf16::from_f32);
        let a: Vec<bf16> = row([1.0, 2.0, 3.0]).chain(row([4.0, 5.0, 6.0])).collect();
        let b: Vec<bf16> = row([1.0, 0.0, -1.0]).chain(row([2.0, 1.0, 0.5])).collect();
        let c = vec![bf16::from_f32(f32::NAN); 4];
        assert_eq!(cpu_reference_general(&GemmOp::new(2, 2, 8), &a, &b, &c), Ok(vec![-2.0, 5.5, -2.0, 16.0]));
        // Buffers too short for the call are an error, as in `gemm`, not an index out of bounds.
        assert_eq!(
            cpu_reference_general(&GemmOp::new(2, 2, 8), &a[..15], &b, &c),
            Err(Error::Hgemm(hgemm::Error::BufferTooSmall { operand: "A", needed: 16, len: 15 }))
        );
        assert!(matches!(
            cpu_reference_general(&GemmOp::new(2, 2, 3), &a, &b, &c),
            Err(Error::Hgemm(hgemm::Error::InvalidShape(_)))
        ));
        // Nothing to compute: C as it was.
        assert_eq!(cpu_reference_general(&GemmOp::new(0, 2, 8), &a, &b, &c[..0]), Ok(vec![]));
    }

    #[test]
    fn compare_counts_poison_and_measures_error() {
        let r = [1.0, 2.0, 3.0, 4.0];
        let exact: Vec<bf16> = r.iter().map(|&x| bf16::from_f64(x)).collect();
        assert_eq!(compare(&exact, r), Comparison { rel_error: 0.0, non_finite: 0 });
        let mut bad = exact.clone();
        bad[2] = bf16::from_bits(POISON);
        let c = compare(&bad, r);
        assert_eq!(c.non_finite, 1);
        assert!(!c.passed());
        let mut off = exact;
        off[3] = bf16::from_f64(5.0);
        assert!((compare(&off, r).rel_error - (1.0f64 / 30.0).sqrt()).abs() < 1e-12);
        assert!(!compare(&off, r).passed());
        // Lengths that differ fail, whichever side is longer.
        let exact: Vec<bf16> = r.iter().map(|&x| bf16::from_f64(x)).collect();
        assert_eq!(compare(&exact[..3], r), Comparison { rel_error: 0.0, non_finite: 1 });
        assert_eq!(compare(&exact, r[..2].iter().copied()), Comparison { rel_error: 0.0, non_finite: 2 });
        assert!(!compare(&exact, std::iter::repeat(1.0)).passed(), "an endless reference ends");
    }

    #[test]
    fn host_comparison_counts_unwritten_and_stray_elements() {
        let reference = [1.0, 2.0, f64::NAN, 4.0];
        let exact: Vec<bf16> = reference.iter().map(|&x| bf16::from_f64(x)).collect();
        let c = compare_host(&exact, &reference);
        assert_eq!((c.unwritten, c.stray, c.rel_error()), (0, 0, 0.0));
        assert!(c.passed() && c.identical());

        let mut out = exact.clone();
        out[0] = bf16::from_bits(POISON);
        out[2] = bf16::from_f64(3.0);
        let c = compare_host(&out, &reference);
        assert_eq!((c.unwritten, c.stray, c.bits_differ), (1, 1, 2));
        assert!(!c.passed());
        assert!((c.rel_error() - 0.0).abs() < 1e-12, "only elements finite in both are measured");

        let c = compare_host(&exact[..3], &reference);
        assert_eq!((c.unwritten, c.stray), (1, 0));
        let c = compare_host(&exact, &reference[..2]);
        assert_eq!((c.unwritten, c.stray), (0, 2));
        assert!(!c.passed() && !c.identical());
    }

    #[test]
    fn fused_reference_applies_bias_activation_and_gating() {
        use hgemm::BiasType;
        // A = [1 2 ...] one row, B: N = 16 columns; (A·B)[0][j] = j - 4 (K = 8, A = e0).
        let a: Vec<bf16> = (0..8).map(|kk| bf16::from_f32(if kk == 0 { 1.0 } else { 0.0 })).collect();
        let b: Vec<bf16> = (0..16)
            .flat_map(|j| (0..8).map(move |kk| bf16::from_f32(if kk == 0 { j as f32 - 4.0 } else { 0.0 })))
            .collect();
        let bias: Vec<f64> = (0..16).map(|j| 0.5 * j as f64).collect();
        let c = vec![bf16::from_f32(2.0); 16];
        let op = GemmOp::new(1, 16, 8).bias(BiasType::F32).activation(Activation::Relu).alpha(2.0).beta(0.25);
        let y = cpu_reference_fused(&op, &a, &b, Some(&bias), &c).unwrap();
        for (j, y) in y.iter().enumerate() {
            assert_eq!(*y, (2.0 * (j as f64 - 4.0) + 0.5 * j as f64).max(0.0) + 0.5, "column {j}");
        }
        // Gated: 8 outputs, gate column j, up column j + 8.
        let op = GemmOp::new(1, 16, 8).activation(Activation::Silu).gated();
        let y = cpu_reference_fused(&op, &a, &b, None, &c[..8]).unwrap();
        for (j, y) in y.iter().enumerate() {
            let (g, u) = (j as f64 - 4.0, j as f64 + 4.0);
            assert!((y - g / (1.0 + (-g).exp()) * u).abs() < 1e-12, "column {j}");
        }
        assert_eq!(gate_column(8), 16);
        // A bias the op declares must be passed, and be long enough.
        let op = GemmOp::new(1, 16, 8).bias(BiasType::Bf16);
        assert!(cpu_reference_fused(&op, &a, &b, None, &c).is_err());
        assert!(cpu_reference_fused(&op, &a, &b, Some(&bias[..15]), &c).is_err());
        // The activations' values at a few points.
        assert!((activation_f64(Activation::GeluErf, 1.0) - 0.841_344_746_068_543).abs() < 1e-12);
        assert!((activation_f64(Activation::GeluTanh, 1.0) - 0.841_191_990_608_714_8).abs() < 1e-9);
        assert_eq!(activation_f64(Activation::Relu, -3.0), 0.0);
    }
}
