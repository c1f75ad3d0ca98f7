//! The library entries' epilogue steps ([`super::kernel`]): a box of the accumulator scaled, with
//! the fused epilogue and beta·C, into its staging box; a box stored or loaded by the threads
//! where TMA cannot write C; a gated call's box, stored by the threads; a stream-K piece's
//! partial sums stored to the workspace, and added by the CTA that finishes the tile.

use super::partial_offset;
use crate::activation::activate;
use crate::args::GemmArgs;
use crate::desc::tcgen05::TmemAddr;
use crate::epilogue::{Fused, GatedOutput, Output};
use crate::fused::Activation;
use crate::ptx::global;
use crate::staging::Staging;

/// Store the CTA's `cols` accumulator columns at `acc` (this thread's row, lane
/// `32·(warp % 4) + lane`) as f32 partial sums to the workspace slot at `slot`.
#[inline(always)]
pub(super) fn store_partial(acc: TmemAddr, cols: u32, warp: u32, lane: u32, slot: u64) {
    use crate::ptx::tcgen05::{self, TmemFragment};
    let row = 32 * (warp % 4) + lane;
    for j in 0..cols / 32 {
        let mut r = tcgen05::ld_32x32b_x32(acc.offset(32 * (warp % 4), 32 * j));
        r.wait_ld();
        for q in 0..8 {
            let chunk = [r[4 * q], r[4 * q + 1], r[4 * q + 2], r[4 * q + 3]];
            global::st_v4_b32(slot + partial_offset(row, 32 * j + 4 * q as u32), chunk);
        }
    }
}

/// The partial sums a CTA that finishes a split tile adds to its own: `count` slots, the first
/// at `first`, each `stride` bytes after the one before (the earlier workers' slots, in worker
/// order, so that the sum does not depend on timing). `count` is 0 for a tile computed whole.
#[derive(Clone, Copy)]
pub(super) struct Sums {
    pub(super) first: u64,
    pub(super) count: u32,
    pub(super) stride: u64,
}

impl Sums {
    /// Add to the 32 accumulator columns `r` (from the tile's column `col`, this thread's row
    /// `row`) each slot's sums, one slot after another.
    #[inline(always)]
    fn add_to(&self, r: &mut [u32; 32], row: u32, col: u32) {
        for i in 0..self.count {
            let slot = self.first + i as u64 * self.stride;
            for q in 0..8 {
                let v = global::ld_cg_v4_b32(slot + partial_offset(row, col + 4 * q as u32));
                for e in 0..4 {
                    let x = &mut r[4 * q + e];
                    *x = (f32::from_bits(*x) + f32::from_bits(v[e])).to_bits();
                }
            }
        }
    }
}

/// The fused epilogue of a tile ([`crate::fused`]; not gated): its bias and activation, and the
/// C coordinates of the thread's row and of the box's first column, where the bias is read.
#[derive(Clone, Copy)]
pub(super) struct TileFused {
    pub(super) fused: Fused,
    pub(super) act: Activation,
    pub(super) row: u32,
    pub(super) col0: u32,
}

/// Convert 64 accumulator columns starting at `acc` to `alpha·acc + beta·old` in bf16, where
/// `old` is what the staging box holds (C's box, loaded by TMA) if `beta_c`, and write them back
/// into the box, row `32·(warp % 4) + lane` from the lane of the same number; with `fused`,
/// `act(alpha·acc + bias) + beta·old`. With `no_acc` (K = 0) the accumulator, never written, is
/// not read: it counts as zero. `sums` are added first, the box's first column the tile's `col`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn stage_scaled(
    acc: TmemAddr,
    staging: Staging,
    warp: u32,
    lane: u32,
    args: &GemmArgs,
    beta_c: bool,
    no_acc: bool,
    fused: Option<TileFused>,
    (sums, col): (Sums, u32),
) {
    use crate::epilogue::bf16x2_to_f32;
    use crate::ptx::{
        cvt,
        tcgen05::{self, TmemFragment},
    };
    let row = 32 * (warp % 4) + lane;
    for half in 0..2 {
        let mut r = tcgen05::ld_32x32b_x32(acc.offset(32 * (warp % 4), 32 * half));
        r.wait_ld();
        sums.add_to(&mut r, row, col + 32 * half);
        let mut packed = [0u32; 16];
        r.for_each_pair(|p, lo, hi| {
            // A select, not a product: stale tensor memory may hold NaN.
            let (mut lo, mut hi) = if no_acc { (0.0, 0.0) } else { (args.alpha * lo, args.alpha * hi) };
            if let Some(t) = fused {
                // The bias of the row (along M, an entry computing Cᵀ) or of each column.
                let col = t.col0 + 32 * half + 2 * p;
                let (b_lo, b_hi) = if t.fused.along_m() {
                    let b = t.fused.bias_or_zero(t.row);
                    (b, b)
                } else {
                    (t.fused.bias_or_zero(col), t.fused.bias_or_zero(col + 1))
                };
                lo = activate(t.act, lo + b_lo);
                hi = activate(t.act, hi + b_hi);
            }
            if beta_c {
                let (old_lo, old_hi) = bf16x2_to_f32(staging.load_b32(row, 32 * half + 2 * p));
                lo += args.beta * old_lo;
                hi += args.beta * old_hi;
            }
            packed[p as usize] = cvt::rn_bf16x2_f32(lo, hi);
        });
        for q in 0..4 {
            let chunk = [packed[4 * q], packed[4 * q + 1], packed[4 * q + 2], packed[4 * q + 3]];
            staging.store_v4(row, 32 * half + 8 * q as u32, chunk);
        }
    }
}

/// Store the staged 128×64 box whose element (0, 0) is C's (`row0`, `col0`) with the epilogue
/// warps' own stores, where TMA cannot write C: warp `w` moves rows `32·(w % 4)` to
/// `32·(w % 4) + 31`, lane `l` the pair at columns `2l` and `2l + 1` of each, so that a warp's
/// store covers 128 contiguous bytes of one row; what lies outside the output is skipped.
#[inline(always)]
pub(super) fn store_box(out: &Output, staging: Staging, warp: u32, lane: u32, row0: u32, col0: u32) {
    for r in 0..32 {
        let row = 32 * (warp % 4) + r;
        out.store_packed(row0 + row, col0 + 2 * lane, staging.load_b32(row, 2 * lane));
    }
}

/// The box [`store_box`] stores, loaded from C into the staging box (zeros outside the output),
/// for beta where TMA cannot read it.
#[inline(always)]
pub(super) fn load_box(out: &Output, staging: Staging, warp: u32, lane: u32, row0: u32, col0: u32) {
    for r in 0..32 {
        let row = 32 * (warp % 4) + r;
        staging.store_b32(row, 2 * lane, out.load_packed(row0 + row, col0 + 2 * lane));
    }
}

/// A gated call's tile ([`crate::fused`]): the 64 accumulator columns of box `j` at `acc`, this
/// thread's row `row` (the kernel's) and columns from `col0`, as `act(gate)·up + beta·old`,
/// stored by the thread itself (the output is half as wide, or tall, as the tile). Gate and up
/// blocks of 8 alternate along N: each thread holds both of each output's values. Along M (an
/// entry computing Cᵀ) they are rows r and r + 8 of each 16-row slice, lanes `l` and `l ^ 8` of
/// the warp: the up lanes hand their values to the gate lanes, which store. `sums` are added
/// first, the box's first column the tile's `col`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn gated_box(
    acc: TmemAddr,
    warp: u32,
    lane: u32,
    args: &GemmArgs,
    no_acc: bool,
    t: TileFused,
    out: &GatedOutput,
    row: u32,
    col0: u32,
    (sums, col): (Sums, u32),
) {
    use crate::ptx::{
        shfl,
        tcgen05::{self, TmemFragment},
    };
    let emit = |orow: u32, ocol: u32, lo: f32, hi: f32| {
        let (mut lo, mut hi) = (lo, hi);
        if args.beta != 0.0 {
            let (old_lo, old_hi) = out.load_pair(orow, ocol);
            lo += args.beta * old_lo;
            hi += args.beta * old_hi;
        }
        out.store_pair(orow, ocol, lo, hi);
    };
    for half in 0..2 {
        let mut r = tcgen05::ld_32x32b_x32(acc.offset(32 * (warp % 4), 32 * half));
        r.wait_ld();
        sums.add_to(&mut r, 32 * (warp % 4) + lane, col + 32 * half);
        let first = col0 + 32 * half;
        // The pre-activation `alpha·acc + bias` of pair `p` (columns `first + 2p` and the next).
        let pre = |p: u32, lo: f32, hi: f32| {
            let (lo, hi) = if no_acc { (0.0, 0.0) } else { (args.alpha * lo, args.alpha * hi) };
            let c = first + 2 * p;
            let (b_lo, b_hi) = if t.fused.along_m() {
                let b = t.fused.bias_or_zero(row);
                (b, b)
            } else {
                (t.fused.bias_or_zero(c), t.fused.bias_or_zero(c + 1))
            };
            (lo + b_lo, hi + b_hi)
        };
        if !t.fused.along_m() {
            // Pairs 8q..8q + 3 (columns 16q..16q + 7) are gates, 8q + 4..8q + 7 their ups: output
            // columns `first / 2 + 8q` on. The gates wait in registers (constant indices once
            // `for_each_pair` is unrolled) for their ups.
            let mut gates = [(0.0f32, 0.0f32); 4];
            r.for_each_pair(|p, lo, hi| {
                let (lo, hi) = pre(p, lo, hi);
                if (p / 4) % 2 == 0 {
                    gates[(p % 4) as usize] = (lo, hi);
                } else {
                    let (g_lo, g_hi) = gates[(p % 4) as usize];
                    let (lo, hi) = (activate(t.act, g_lo) * lo, activate(t.act, g_hi) * hi);
                    emit(row, first / 2 + 8 * (p / 8) + 2 * (p % 4), lo, hi);
                }
            });
        } else {
            // Rows (this CTA's tile starts on a 16-row slice) r % 16 < 8 are gates.
            let gate = (row % 16) < 8;
            r.for_each_pair(|p, lo, hi| {
                let (lo, hi) = pre(p, lo, hi);
                let up_lo = f32::from_bits(shfl::sync_idx_b32(lo.to_bits(), lane ^ 8));
                let up_hi = f32::from_bits(shfl::sync_idx_b32(hi.to_bits(), lane ^ 8));
                if gate {
                    let (lo, hi) = (activate(t.act, lo) * up_lo, activate(t.act, hi) * up_hi);
                    emit(row / 16 * 8 + row % 8, first + 2 * p, lo, hi);
                }
            });
        }
    }
}
