//! Not a GEMM: a tile's tensor-core work alone, the bound that `hgemm bench --kernels ceiling`
//! measures against cuBLAS.
//!
//! On the H200 every large GEMM runs at the card's 700 W cap (`docs/performance.md`), so a kernel
//! is as fast as the energy it spends per FLOP allows, not as its cycle count. A ceiling kernel
//! spends only what no kernel built from a tile's `wgmma`s can avoid: the same MMAs, both
//! operands read from shared memory by the same descriptors, on random bf16 of the same
//! distribution as the benchmark's inputs. It loads nothing, stores nothing but one value a
//! thread, and waits on nothing but its own MMAs. Its time for a call's FLOPs is the fastest that
//! call could run with these MMAs on this card.
//!
//! ```text
//! fill STAGES random slices ─ fence.proxy.async ─ barrier
//! per slice s:   4 × wgmma (stage s % STAGES) ─ commit ─ wait_group 1
//! per tile:      wait_group 0              (a tile's end, as the GEMM drains it)
//! ```
//!
//! `CHAINS = 2` splits each consumer's K steps between two accumulators (even and odd steps), so
//! that consecutive MMAs do not depend on each other; it measures what a single consumer loses to
//! that dependency.
//!
//! Measured on the H200 (`docs/performance.md`, "The MMAs alone"): at 8192³ every tile's MMAs
//! run at 1.16–1.19× cuBLAS (790–800 TFLOP/s), with one consumer or two, one chain or two, while
//! the GEMM runs at 1.01–1.03×: the rest is what loading the operands and storing C cost.

use super::v7::{BK, Tile, Tile64x128, Tile64x192, Tile128x192, Tile128x256};

/// Operand slices cycled through, so that each slice's MMAs read other data than the last
/// slice's, as in a GEMM.
pub const STAGES: u32 = 4;

/// One ceiling: a tile's MMAs, `chains` accumulators per consumer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CeilingSpec {
    /// What `hgemm bench --kernels` calls it.
    pub name: &'static str,
    /// The PTX entry.
    pub entry: &'static str,
    pub bm: u32,
    pub bn: u32,
    /// Consumer warpgroups, each 64 rows of the tile.
    pub consumers: u32,
    /// Accumulators per consumer that the K steps alternate between.
    pub chains: u32,
}

impl CeilingSpec {
    const fn of<T: Tile>(name: &'static str, entry: &'static str, chains: u32) -> CeilingSpec {
        CeilingSpec { name, entry, bm: T::BM, bn: T::BN, consumers: T::CONSUMERS, chains }
    }

    /// Threads: the consumer warpgroups; no producer, since nothing is loaded.
    pub const fn threads(&self) -> u32 {
        128 * self.consumers
    }

    /// One slice of the tile's operands: A `bm`×`BK`, B `bn`×`BK`, bf16.
    pub const fn stage_bytes(&self) -> u32 {
        (self.bm + self.bn) * BK * 2
    }

    /// Dynamic shared memory of a launch.
    pub const fn smem_bytes(&self) -> u32 {
        STAGES * self.stage_bytes()
    }

    /// The tile's K slices in an M×N×K call: (slices per tile, slices in all).
    pub const fn slices(&self, m: u32, n: u32, k: u32) -> (u32, u64) {
        let per_tile = k.div_ceil(BK);
        let tiles = m.div_ceil(self.bm) as u64 * n.div_ceil(self.bn) as u64;
        (per_tile, tiles * per_tile as u64)
    }
}

/// `slices` MMA slices of the tile on this CTA, `tile_slices` to a tile; A's values uniform in
/// [-1, 1), B's in [-b_scale, b_scale) (the benchmark's inputs). Thread `t` of CTA `i` writes one
/// accumulator to `sink[i · threads + t]`, so the MMAs' results are used.
#[cfg(hopper)]
#[inline(always)]
unsafe fn ceiling<T: Tile, const CHAINS: u32>(slices: u32, tile_slices: u32, b_scale: f32, sink: *mut f32) {
    use crate::desc::wgmma::SmemDesc;
    use crate::ptx::wgmma::{self, Fragment};
    use crate::ptx::{bar, fence, shfl, smem, sreg};
    use crate::util::random_bf16x2;

    let spec = CeilingSpec::of::<T>("", "", CHAINS);
    let (threads, stage_bytes, a_bytes) = (spec.threads(), spec.stage_bytes(), T::BM * BK * 2);
    let base = smem::base();
    let tid = sreg::tid_x();
    let cta = sreg::ctaid_x();
    let mut i = tid;
    while i < spec.smem_bytes() / 4 {
        let scale = if (i * 4) % stage_bytes >= a_bytes { b_scale } else { 1.0 };
        // Shared memory holds fewer than 64 K words: CTA and word make one 32-bit index.
        smem::st_b32(base + 4 * i, random_bf16x2(cta << 16 | i, scale));
        i += threads;
    }
    // The MMAs read shared memory through the async proxy.
    fence::proxy_async_shared_cta();
    bar::sync_all();

    let c = shfl::sync_idx_b32(tid / 128, 0);
    // Two named accumulators rather than an array: an array indexed per K step stays in memory.
    let (mut acc, mut acc2) = (T::Acc::zeroed(), T::Acc::zeroed());
    // The slice's place in its tile.
    let mut kb = 0;
    for s in 0..slices {
        let stage = base + (s % STAGES) * stage_bytes;
        let (a_stage, b_stage) = (stage, stage + a_bytes);
        wgmma::fence();
        for k in 0..BK / 16 {
            let a = SmemDesc::k_major_128b(a_stage + c * 64 * 128).advance(32 * k);
            let b = SmemDesc::k_major_128b(b_stage).advance(32 * k);
            let scale_d = (kb != 0 || k >= CHAINS) as u32;
            if k % CHAINS == 1 {
                acc2.mma_async::<0, 0>(a, b, scale_d);
            } else {
                acc.mma_async::<0, 0>(a, b, scale_d);
            }
        }
        wgmma::commit_group();
        acc.wait_group::<1>();
        if CHAINS == 2 {
            acc2.wait_group::<1>();
        }
        kb += 1;
        if kb == tile_slices {
            acc.wait_group::<0>();
            if CHAINS == 2 {
                acc2.wait_group::<0>();
            }
            kb = 0;
        }
    }
    acc.wait_group::<0>();
    acc2.wait_group::<0>();
    let mut first = 0.0;
    acc.for_each_pair(|p, lo, _| {
        if p == 0 {
            first += lo;
        }
    });
    acc2.for_each_pair(|p, lo, _| {
        if p == 0 {
            first += lo;
        }
    });
    unsafe { sink.add((cta * threads + tid) as usize).write(first) };
}

/// The ceilings, each named once: its `CEILINGS` row and its PTX entry.
macro_rules! ceilings {
    ($($name:literal => $entry:ident: $tile:ty, $chains:literal;)*) => {
        /// Every ceiling, the wide tile's first.
        pub const CEILINGS: &[CeilingSpec] = &[$(CeilingSpec::of::<$tile>($name, stringify!($entry), $chains),)*];
        $(
            #[cfg(hopper)]
            #[unsafe(no_mangle)]
            pub unsafe extern "ptx-kernel" fn $entry(slices: u32, tile_slices: u32, b_scale: f32, sink: *mut f32) {
                unsafe { ceiling::<$tile, $chains>(slices, tile_slices, b_scale, sink) }
            }
        )*
    };
}

ceilings! {
    "ceiling" => hopper_tensor_ceiling: Tile128x256, 1;
    "ceiling_mid" => hopper_tensor_ceiling_mid: Tile128x192, 1;
    "ceiling_lean" => hopper_tensor_ceiling_lean: Tile64x192, 1;
    "ceiling_lean_x2" => hopper_tensor_ceiling_lean_x2: Tile64x192, 2;
    "ceiling_slim" => hopper_tensor_ceiling_slim: Tile64x128, 1;
    "ceiling_slim_x2" => hopper_tensor_ceiling_slim_x2: Tile64x128, 2;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_count_the_tiles_k_slices() {
        let wide = CEILINGS[0];
        assert_eq!(wide.slices(8192, 8192, 8192), (128, 64 * 32 * 128));
        // Partial tiles and a partial slice count whole, as the GEMM computes them.
        assert_eq!(wide.slices(129, 257, 65), (2, 2 * 2 * 2));
        assert_eq!((wide.threads(), wide.smem_bytes()), (256, 4 * 48 * 1024));
        let lean = CEILINGS.iter().find(|c| c.name == "ceiling_lean").unwrap();
        assert_eq!((lean.threads(), lean.smem_bytes(), lean.slices(8192, 192, 64)), (128, 4 * 32 * 1024, (1, 128)));
    }
}
