//! The sharding arithmetic of the tensor-parallel MLP, plain Rust: which part of each weight a
//! rank holds, and how the tokens split into micro-batches.
//!
//! The MLP is `y = (silu(x·W_gateᵀ) ⊙ (x·W_upᵀ))·W_downᵀ`, weights stored as `nn.Linear` keeps
//! them (out×in row-major: W_gate and W_up I×d, W_down d×I). Over `ranks` GPUs (Megatron-LM's
//! split, Shoeybi et al. 2019):
//!
//! - gate and up are column-parallel: rank r computes the intermediate features
//!   `[r·I/ranks, (r+1)·I/ranks)` from the whole x, so it holds those rows of W_gate and W_up, and
//!   SwiGLU needs nothing from the other ranks;
//! - down is row-parallel: rank r multiplies its features by the same columns of W_down (a
//!   d×I/ranks block) and gets a partial y; the sum of the ranks' partials (one all-reduce) is y.
//!
//! hgemm's gated GEMM reads gate and up interleaved in blocks of 8 features
//! (`hgemm::interleave_gate_up`): a rank's interleaved shard is then one contiguous block of rows
//! of the whole interleaved weight, as long as each rank's share of I is a whole number of blocks.

use std::ops::Range;

/// Features per block of the gated weight's interleaving (`hgemm_kernels::fused::GLU_BLOCK`).
pub const GLU_BLOCK: usize = 8;

/// The MLP's sizes split over `ranks` GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    /// Model width d (x's and y's columns).
    pub d: usize,
    /// Intermediate features I.
    pub i: usize,
    /// GPUs.
    pub ranks: usize,
}

impl Split {
    /// `d` and `i` over `ranks`, or why they do not split: every rank needs a whole number of
    /// interleaving blocks of I (so that its gated N is a multiple of 16), and every GEMM's K
    /// (d, and a rank's share of I) a multiple of 8 elements for TMA.
    pub fn new(d: usize, i: usize, ranks: usize) -> Result<Split, String> {
        if ranks == 0 || d == 0 || i == 0 {
            return Err(format!("d = {d}, I = {i} over {ranks} GPUs: all must be positive"));
        }
        if !d.is_multiple_of(8) {
            return Err(format!("d = {d}: a multiple of 8 (the GEMMs' K)"));
        }
        if !i.is_multiple_of(ranks * GLU_BLOCK) {
            return Err(format!(
                "I = {i} over {ranks} GPUs: each needs a whole number of blocks of {GLU_BLOCK} features, so I must be a multiple of {}",
                ranks * GLU_BLOCK
            ));
        }
        Ok(Split { d, i, ranks })
    }

    /// Intermediate features each rank computes.
    pub fn i_per_rank(&self) -> usize {
        self.i / self.ranks
    }

    /// The intermediate features rank `r` computes.
    pub fn features(&self, r: usize) -> Range<usize> {
        let n = self.i_per_rank();
        r * n..(r + 1) * n
    }

    /// Rank `r`'s rows of an out×in row-major weight of I rows of `d` (W_gate or W_up).
    pub fn rows_of<'w, T>(&self, w: &'w [T], r: usize) -> &'w [T] {
        let f = self.features(r);
        &w[f.start * self.d..f.end * self.d]
    }

    /// Rank `r`'s share of the interleaved gate/up weight (2·I rows of d, as
    /// `hgemm::interleave_gate_up` lays it out for the whole I): 2·I/ranks contiguous rows.
    pub fn interleaved_rows<'w, T>(&self, w: &'w [T], r: usize) -> &'w [T] {
        let f = self.features(r);
        &w[2 * f.start * self.d..2 * f.end * self.d]
    }

    /// Rank `r`'s columns of W_down (d rows of I): a dense d × I/ranks block, row-major.
    pub fn down_columns<T: Copy>(&self, w_down: &[T], r: usize) -> Vec<T> {
        let f = self.features(r);
        w_down.chunks(self.i).flat_map(|row| row[f.clone()].iter().copied()).collect()
    }
}

/// `tokens` split into `count` micro-batches, in order, their sizes differing by at most one;
/// an error for no tokens, no micro-batch, or more micro-batches than tokens.
pub fn micro_batches(tokens: usize, count: usize) -> Result<Vec<Range<usize>>, String> {
    if tokens == 0 || count == 0 || count > tokens {
        return Err(format!("{tokens} tokens in {count} micro-batches: each needs at least one token"));
    }
    let (each, extra) = (tokens / count, tokens % count);
    let mut start = 0;
    Ok((0..count)
        .map(|b| {
            let len = each + usize::from(b < extra);
            start += len;
            start - len..start
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values uniform in [-1, 1).
    fn values(n: usize, seed: u64) -> Vec<f64> {
        crate::random::uniform(n, seed).collect()
    }

    /// C (m×n) = A (m×k) · Bᵀ, B n×k, all row-major.
    fn matmul_t(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
        let mut c = vec![0.0; m * n];
        for r in 0..m {
            for col in 0..n {
                c[r * n + col] = (0..k).map(|j| a[r * k + j] * b[col * k + j]).sum();
            }
        }
        c
    }

    fn silu(v: f64) -> f64 {
        v / (1.0 + (-v).exp())
    }

    /// What hgemm's gated GEMM computes from the interleaved weight (2·F rows of k): F outputs,
    /// feature f from gate row 16·(f/8) + f%8 and up row 8 after it.
    fn gated(x: &[f64], interleaved: &[f64], m: usize, features: usize, k: usize) -> Vec<f64> {
        let pre = matmul_t(x, interleaved, m, 2 * features, k);
        let mut h = vec![0.0; m * features];
        for r in 0..m {
            for f in 0..features {
                let g = 2 * GLU_BLOCK * (f / GLU_BLOCK) + f % GLU_BLOCK;
                h[r * features + f] = silu(pre[r * 2 * features + g]) * pre[r * 2 * features + g + GLU_BLOCK];
            }
        }
        h
    }

    #[test]
    fn the_sum_of_the_ranks_partials_is_the_unsharded_mlp() {
        let (tokens, d, i) = (5, 24, 64);
        let x = values(tokens * d, 1);
        let (w_gate, w_up, w_down) = (values(i * d, 2), values(i * d, 3), values(d * i, 4));
        // One GPU: gate and up separately, no interleaving.
        let (g, u) = (matmul_t(&x, &w_gate, tokens, i, d), matmul_t(&x, &w_up, tokens, i, d));
        let h: Vec<f64> = g.iter().zip(&u).map(|(g, u)| silu(*g) * u).collect();
        let y = matmul_t(&h, &w_down, tokens, d, i);
        let whole = hgemm::interleave_gate_up(&w_gate, &w_up, hgemm::Layout::ColMajor, i, d).unwrap();
        for ranks in [1, 2, 4, 8] {
            let s = Split::new(d, i, ranks).unwrap();
            let mut sum = vec![0.0; tokens * d];
            for r in 0..ranks {
                // The rank's interleaved shard, built from its rows, is its block of the whole.
                let (gate_r, up_r) = (s.rows_of(&w_gate, r), s.rows_of(&w_up, r));
                let shard =
                    hgemm::interleave_gate_up(gate_r, up_r, hgemm::Layout::ColMajor, s.i_per_rank(), d).unwrap();
                assert_eq!(shard, s.interleaved_rows(&whole, r), "{ranks} ranks, rank {r}");
                let h_r = gated(&x, &shard, tokens, s.i_per_rank(), d);
                let down_r = s.down_columns(&w_down, r);
                assert_eq!(down_r.len(), d * s.i_per_rank());
                for (acc, p) in sum.iter_mut().zip(matmul_t(&h_r, &down_r, tokens, d, s.i_per_rank())) {
                    *acc += p;
                }
            }
            let err = y.iter().zip(&sum).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            let scale = y.iter().map(|v| v.abs()).fold(0.0, f64::max);
            assert!(err <= 1e-12 * scale, "{ranks} ranks: off by {err} of {scale}");
        }
    }

    #[test]
    fn each_rank_owns_its_own_features_and_together_all() {
        let s = Split::new(16, 96, 4).unwrap();
        assert_eq!(s.i_per_rank(), 24);
        let owned: Vec<usize> = (0..4).flat_map(|r| s.features(r)).collect();
        assert_eq!(owned, (0..96).collect::<Vec<_>>());
        // Columns 24..48 of each of W_down's 16 rows.
        let w_down: Vec<usize> = (0..16 * 96).collect();
        let block = s.down_columns(&w_down, 1);
        assert_eq!(block.len(), 16 * 24);
        assert_eq!((block[0], block[23], block[24]), (24, 47, 96 + 24));
        // Rows 24..48 of W_gate, and rows 48..96 of the interleaved weight.
        let w: Vec<usize> = (0..96 * 16).collect();
        assert_eq!(s.rows_of(&w, 1), &w[24 * 16..48 * 16]);
        let interleaved: Vec<usize> = (0..2 * 96 * 16).collect();
        assert_eq!(s.interleaved_rows(&interleaved, 1), &interleaved[48 * 16..96 * 16]);
    }

    #[test]
    fn sizes_that_do_not_split_are_refused() {
        assert!(Split::new(4096, 14336, 8).is_ok());
        assert!(Split::new(8192, 28672, 8).is_ok());
        // 14336 / 16 = 896 features each, 112 blocks.
        assert!(Split::new(4096, 14336, 16).is_ok());
        // 100 features over 2 ranks: 50 each, not whole blocks of 8.
        assert!(Split::new(64, 100, 2).unwrap_err().contains("multiple of 16"));
        assert!(Split::new(64, 96, 3).is_ok());
        assert!(Split::new(64, 96, 5).is_err());
        assert!(Split::new(60, 96, 1).unwrap_err().contains("d = 60"));
        assert!(Split::new(64, 96, 0).is_err());
    }

    #[test]
    fn micro_batches_cover_the_tokens_in_order() {
        assert_eq!(micro_batches(4096, 4).unwrap(), [0..1024, 1024..2048, 2048..3072, 3072..4096]);
        assert_eq!(micro_batches(10, 3).unwrap(), [0..4, 4..7, 7..10]);
        let one = micro_batches(7, 1).unwrap();
        assert_eq!((one.len(), one[0].clone()), (1, 0..7));
        for (tokens, count) in [(1000, 7), (13, 13), (4097, 4)] {
            let b = micro_batches(tokens, count).unwrap();
            assert_eq!(b.len(), count);
            assert_eq!((b[0].start, b[count - 1].end), (0, tokens));
            assert!(b.windows(2).all(|w| w[0].end == w[1].start));
            let (min, max) = (b.iter().map(|r| r.len()).min().unwrap(), b.iter().map(|r| r.len()).max().unwrap());
            assert!(min >= 1 && max - min <= 1, "{tokens} in {count}: {b:?}");
        }
        assert!(micro_batches(3, 4).is_err());
        assert!(micro_batches(0, 1).is_err());
        assert!(micro_batches(8, 0).is_err());
    }
}
