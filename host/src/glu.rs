//! The gated units' weight layout: gate and up projections interleaved in blocks of
//! [`GLU_BLOCK`] output features, which a gated call ([`GemmOp::gated`](crate::GemmOp::gated))
//! reads as one B operand. Plain data, on the host, done once when weights are loaded.

use crate::error::{Error, Result};
use crate::op::Layout;
use hgemm_kernels::fused::GLU_BLOCK;

/// One weight with `gate`'s and `up`'s output features interleaved in blocks of 8: features
/// `16·b .. 16·b + 8` of the result are gate features `8·b .. 8·b + 8`, the next 8 are up
/// features `8·b .. 8·b + 8`. Each input holds `features` outputs (I, a multiple of 8) of `k`
/// inputs, stored as B of the GEMM is:
///
/// - [`Layout::ColMajor`] (B is K×I column-major): PyTorch's `nn.Linear` weight, out×in
///   row-major, one row of `k` elements per feature; the result has 2·I rows of `k`.
/// - [`Layout::RowMajor`] (B is K×I row-major): `k` rows of `features` elements; the result has
///   `k` rows of 2·I.
///
/// A bias is interleaved the same way, as one row (`k = 1`, either layout). The result is B of
/// a gated call with N = 2·I, dense (leading dimension `k` or 2·I).
///
/// ```
/// use hgemm::{Layout, interleave_gate_up};
/// let gate: Vec<u32> = (0..16).collect(); // 16 features, k = 1
/// let up: Vec<u32> = (100..116).collect();
/// let w = interleave_gate_up(&gate, &up, Layout::ColMajor, 16, 1).unwrap();
/// assert_eq!(&w[..16], &[0, 1, 2, 3, 4, 5, 6, 7, 100, 101, 102, 103, 104, 105, 106, 107]);
/// assert_eq!(w[16], 8);
/// ```
pub fn interleave_gate_up<T: Copy>(gate: &[T], up: &[T], layout: Layout, features: usize, k: usize) -> Result<Vec<T>> {
    let block = GLU_BLOCK as usize;
    if !features.is_multiple_of(block) {
        return Err(Error::InvalidShape(format!(
            "{features} gate and up features: a multiple of {block} is needed to interleave them in blocks of {block}"
        )));
    }
    let len = features.checked_mul(k).ok_or_else(|| Error::InvalidShape(format!("{features}×{k} overflows")))?;
    for (name, w) in [("gate", gate), ("up", up)] {
        if w.len() != len {
            return Err(Error::InvalidShape(format!(
                "the {name} weight holds {} elements, not {features}×{k} = {len}",
                w.len()
            )));
        }
    }
    let mut out = Vec::with_capacity(2 * len);
    match layout {
        // Each block of 8 features is 8 whole rows of k.
        Layout::ColMajor => {
            for (g, u) in gate.chunks(block * k).zip(up.chunks(block * k)) {
                out.extend_from_slice(g);
                out.extend_from_slice(u);
            }
        }
        // Each of the k rows interleaves its own blocks.
        Layout::RowMajor => {
            for (g_row, u_row) in gate.chunks(features.max(1)).zip(up.chunks(features.max(1))) {
                for (g, u) in g_row.chunks(block).zip(u_row.chunks(block)) {
                    out.extend_from_slice(g);
                    out.extend_from_slice(u);
                }
            }
        }
    }
    Ok(out)
}

/// The gate and up columns of a gated call's N-wide output, or of an interleaved bias: which
/// projection interleaved column `j` belongs to (`false` gate, `true` up) and its feature.
pub const fn gate_up_of(j: usize) -> (bool, usize) {
    let block = GLU_BLOCK as usize;
    let (pair, within) = (j / (2 * block), j % (2 * block));
    (within >= block, pair * block + within % block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_layouts_interleave_the_same_matrix() {
        let (features, k) = (24, 3);
        // gate[f][kk] = f·10 + kk, up = gate + 1000, out×in row-major (B column-major).
        let gate: Vec<u32> = (0..features).flat_map(|f| (0..k).map(move |kk| (f * 10 + kk) as u32)).collect();
        let up: Vec<u32> = gate.iter().map(|g| g + 1000).collect();
        let cm = interleave_gate_up(&gate, &up, Layout::ColMajor, features, k).unwrap();
        // The same weights stored in×out (B row-major): transposed.
        let t = |w: &[u32]| {
            (0..k).flat_map(|kk| (0..features).map(move |f| (kk, f))).map(|(kk, f)| w[f * k + kk]).collect::<Vec<_>>()
        };
        let rm = interleave_gate_up(&t(&gate), &t(&up), Layout::RowMajor, features, k).unwrap();
        for j in 0..2 * features {
            let (is_up, f) = gate_up_of(j);
            for kk in 0..k {
                let want = (f * 10 + kk) as u32 + if is_up { 1000 } else { 0 };
                assert_eq!(cm[j * k + kk], want, "column-major, column {j}");
                assert_eq!(rm[kk * 2 * features + j], want, "row-major, column {j}");
            }
        }
        assert_eq!(gate_up_of(8), (true, 0));
        assert_eq!(gate_up_of(17), (false, 9));
    }

    #[test]
    fn wrong_sizes_are_refused() {
        let w = vec![0u8; 12];
        assert!(
            matches!(interleave_gate_up(&w, &w, Layout::ColMajor, 12, 1), Err(Error::InvalidShape(s)) if s.contains("multiple of 8"))
        );
        assert!(
            matches!(interleave_gate_up(&w[..8], &w[..4], Layout::ColMajor, 8, 1), Err(Error::InvalidShape(s)) if s.contains("up weight"))
        );
    }
}
