//! A finished tile held in registers as packed bf16 ([`super::Tile::HOLD`]), staged box by box
//! while the next tile's first MMAs run, so that the tensor cores do not wait for an epilogue.

use crate::ptx::wgmma::Fragment;

/// The last [`Held::BOXES`] 64-column boxes of a consumer's finished 64 × `BN` tile as packed
/// bf16 pairs; the boxes before them, if any, are staged when the tile finishes.
pub trait Held<F: Fragment>: Copy {
    /// Boxes held.
    const BOXES: u32;
    /// The held boxes of the fragment rounded to bf16.
    fn pack(acc: &F) -> Self;
    /// A gated call's output, gate × up of the fragment's 8-column blocks taken in pairs (gate
    /// blocks even, up blocks odd), rounded to bf16: a 64 × `BN`/2 tile, laid out as the
    /// fragment of that width would hold it, in the last `BOXES`/2 boxes.
    fn pack_gated(acc: &F) -> Self;
    /// Nothing to stage: set where a tile is stored without being held (alpha/beta), so that the
    /// registers of the tile held before it are dead there instead of live beside the
    /// accumulator (which spilled).
    fn none() -> Self;
    /// `f(i, pair)` for the 16 register pairs of box `j` (fragment pairs 16j + i), straight-line:
    /// `j` picks among registers by selects, so nothing is indexed at run time.
    fn for_each_in_box(&self, j: u32, f: impl FnMut(u32, u32));
}

impl<F: Fragment> Held<F> for () {
    const BOXES: u32 = 0;
    fn pack(_: &F) -> Self {}
    fn pack_gated(_: &F) -> Self {}
    fn none() -> Self {}
    fn for_each_in_box(&self, _: u32, _: impl FnMut(u32, u32)) {}
}

/// All four boxes of a 64×256 fragment: 64 registers beside the accumulator's 128, which fit in
/// the consumers' 240 with no spill once nothing else keeps them live (`Held::none`). Holding
/// fewer measured slower (docs/performance.md, "Holding the whole finished tile").
impl<F: Fragment> Held<F> for [u32; 64] {
    const BOXES: u32 = 4;

    #[inline(always)]
    fn pack(acc: &F) -> Self {
        let mut h = [0; 64];
        acc.for_each_pair(|p, lo, hi| {
            h[p as usize] = crate::ptx::cvt::rn_bf16x2_f32(lo, hi);
        });
        h
    }

    #[inline(always)]
    fn pack_gated(acc: &F) -> Self {
        // Pair p's gate is pair p - 2 (blocks 2b and 2b + 1, rows r and r + 8 alike); output
        // pair q = 2·(p / 4) + p % 2 covers the half tile's columns 8·(q / 2)…, as pair q of a
        // fragment half as wide does.
        let mut h = [0; 64];
        let mut gates = [(0.0f32, 0.0f32); 2];
        acc.for_each_pair(|p, lo, hi| {
            if (p / 2) % 2 == 0 {
                gates[(p % 2) as usize] = (lo, hi);
            } else {
                let (g_lo, g_hi) = gates[(p % 2) as usize];
                h[(32 + 2 * (p / 4) + p % 2) as usize] = crate::ptx::cvt::rn_bf16x2_f32(g_lo * lo, g_hi * hi);
            }
        });
        h
    }

    #[inline(always)]
    fn none() -> Self {
        [0; 64]
    }

    #[inline(always)]
    fn for_each_in_box(&self, j: u32, mut f: impl FnMut(u32, u32)) {
        use core::hint::select_unpredictable as sel;
        macro_rules! pairs {
            ($($i:literal)*) => {$(
                f($i, sel(j < 2, sel(j == 0, self[$i], self[16 + $i]), sel(j == 2, self[32 + $i], self[48 + $i])));
            )*};
        }
        pairs!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15);
    }
}
