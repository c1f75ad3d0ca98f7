//! The Blackwell ladder (sm_100 family: B200 is sm_100a, GB300 sm_103a): TMA, mbarrier pipelines,
//! `tcgen05.mma` with f32 accumulators in tensor memory, CTA pairs, persistent scheduling and
//! TMA-store epilogues. Assembled with ptxas for sm_100a and sm_103a and inspected; not yet run
//! on Blackwell hardware (see docs/blackwell.md).
//!
//! | version | adds |
//! |---|---|
//! | [v0] | non-swizzled TMA, one mbarrier, `tcgen05.mma` into tensor memory, one 128×256 tile per CTA, serial |
//! | [v1] | 128-byte swizzle: one TMA box per operand per 64-wide K slice, swizzled descriptors, 4×4 MMA loop |
//! | [v2] | two shared-memory stages with a barrier each: the next load overlaps the MMAs |
//! | [v3] | producer and MMA warps, full/empty barrier pairs, four 64-wide stages, a mainloop barrier |
//! | [v4] | CTA pairs: `cta_group::2` MMA (M = 256) from rank 0, one load barrier, multicast commits, six stages |
//! | [v5] | persistent: three warp roles, two tensor-memory accumulators, epilogue overlaps the next mainloop |
//! | [v6] | TMA-store epilogue through two swizzled 128×64 staging boxes, grouped tile order (16) |
//! | [v7] | 256×256 per CTA as two 128-row M-waves in all 512 columns, leader-owned load barrier, L2 promotion |

// Descriptors, tensor-memory sizes and warp roles are read only by the sm_100f device build.
#![cfg_attr(not(blackwell), allow(dead_code))]

#[cfg(blackwell)]
use crate::args::GemmArgs;
#[cfg(blackwell)]
use crate::desc::tcgen05::TmemAddr;
use crate::spec::{Family, KernelSpec};

crate::ladder!(v0 v1 v2 v3 v4 v5 v6 v7);
pub mod lib;

/// What every version starts from ([`KernelSpec::ladder`], tiles visited in groups of one
/// row); each sets what it adds.
const BASE: KernelSpec = KernelSpec { group_m: 1, ..KernelSpec::ladder(Family::Blackwell) };

/// Store `cols` accumulator columns (a multiple of 16) starting at `acc` to C at columns
/// `col0..col0 + cols`, as bf16, clipped to the M×N output. Warp `warp` reads the 32 lanes it
/// can reach, `32·(warp % 4) + lane`, which hold rows `row0 + 32·(warp % 4) + lane`: the
/// accumulator layout of an M = 128 MMA, and of each CTA's half of an M = 256 pair MMA
/// (§9.7.16.2.3 and the data-path layouts of §9.7.16). Every thread stores its own row, 4 bytes
/// at a time: the strided, uncoalesced store of v0–v5.
#[cfg(blackwell)]
#[inline(always)]
pub(crate) fn store_rows(acc: TmemAddr, cols: u32, args: &GemmArgs, row0: u32, col0: u32, warp: u32, lane: u32) {
    use crate::ptx::tcgen05::{self, TmemFragment};
    let quarter = 32 * (warp % 4);
    let row = row0 + quarter + lane;
    let out = crate::epilogue::Output::new(args, 0);
    let mut c = 0;
    while c < cols {
        let mut r = tcgen05::ld_32x32b_x16(acc.offset(quarter, c));
        r.wait_ld();
        r.for_each_pair(|p, lo, hi| out.store_pair(row, col0 + c + 2 * p, lo, hi));
        c += 16;
    }
}

/// Convert 64 accumulator columns starting at `acc` to bf16 and write them into the 128×64
/// staging box `staging` (128B-swizzled, [`crate::staging`]), row `32·(warp % 4) + lane` from
/// the lane of the same number. Each thread writes eight 16-byte chunks of its row; the swizzle
/// spreads a warp's 32 rows over all banks.
#[cfg(blackwell)]
#[inline(always)]
pub(crate) fn stage_cols(acc: TmemAddr, staging: crate::staging::Staging, warp: u32, lane: u32) {
    use crate::ptx::{
        cvt,
        tcgen05::{self, TmemFragment},
    };
    let quarter = 32 * (warp % 4);
    let row = quarter + lane;
    for half in 0..2 {
        let mut r = tcgen05::ld_32x32b_x32(acc.offset(quarter, 32 * half));
        r.wait_ld();
        let mut packed = [0u32; 16];
        r.for_each_pair(|p, lo, hi| packed[p as usize] = cvt::rn_bf16x2_f32(lo, hi));
        for q in 0..4 {
            let chunk = [packed[4 * q], packed[4 * q + 1], packed[4 * q + 2], packed[4 * q + 3]];
            staging.store_v4(row, 32 * half + 8 * q as u32, chunk);
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::sched::TileScheduler;
    use crate::spec::{Family, Grid, SmemPlan};
    use std::vec;

    const PLANS: [SmemPlan; 8] = [v0::SMEM, v1::SMEM, v2::SMEM, v3::SMEM, v4::SMEM, v5::SMEM, v6::SMEM, v7::SMEM];

    #[test]
    fn ladder_is_ordered_and_named() {
        for (i, spec) in LADDER.iter().enumerate() {
            assert_eq!(spec.version, i as u32);
            assert_eq!(spec.family, Family::Blackwell);
            assert_eq!(spec.name, std::format!("blackwell_v{i}"));
            assert_eq!(spec.smem_bytes, PLANS[i].bytes, "{}", spec.name);
        }
    }

    #[test]
    fn every_plan_fits_and_keeps_swizzle_atoms_aligned() {
        for (spec, plan) in LADDER.iter().zip(PLANS) {
            assert!(plan.bytes <= 227 * 1024, "{}: {} bytes", spec.name, plan.bytes);
            let stages = (plan.b - plan.a) / plan.a_stage_bytes;
            for s in 0..stages {
                assert_eq!(plan.a_stage(s) % 1024, 0, "{} A stage {s}", spec.name);
                assert_eq!(plan.b_stage(s) % 1024, 0, "{} B stage {s}", spec.name);
            }
            // Each stage holds exactly what the TMA boxes of one K slice bring.
            assert!(
                plan.a_stage_bytes >= spec.a_box.bytes() && plan.b_stage_bytes >= spec.b_box.bytes(),
                "{}",
                spec.name
            );
            // Staging boxes start on the 1024-byte swizzle atom; barriers and the tensor-memory
            // slot lie past every TMA destination.
            assert_eq!(plan.c % 1024, 0, "{}", spec.name);
            assert!(plan.barriers >= plan.c && plan.barriers % 8 == 0, "{}", spec.name);
            assert!(plan.tmem_slot >= plan.barrier(0), "{}", spec.name);
            assert!(plan.tmem_slot + 4 <= plan.bytes, "{}", spec.name);
            if let Some(c_box) = spec.c_box {
                assert_eq!(plan.barriers - plan.c, 2 * c_box.bytes(), "{}: two staging boxes", spec.name);
            }
        }
    }

    #[test]
    fn pair_and_persistent_shapes() {
        for spec in LADDER {
            let paired = spec.version >= 4;
            assert_eq!(spec.cluster, if paired { 2 } else { 1 }, "{}", spec.name);
            assert_eq!(spec.grid == Grid::Persistent, spec.version >= 5, "{}", spec.name);
            assert_eq!(spec.c_box.is_some(), spec.version >= 6, "{}", spec.name);
            // The B box of a pair is half the N tile: the pair MMA splits N across the two CTAs.
            let b_rows = if paired { spec.tile_n / 2 } else { spec.tile_n };
            assert_eq!(spec.b_box.outer, b_rows, "{}", spec.name);
            assert_eq!(spec.a_box.outer, spec.tile_m, "{}", spec.name);
            // The epilogue warps are one warpgroup: warp w reads lanes 32·(w % 4).
            assert_eq!(spec.threads, if spec.version >= 5 { 256 } else { 128 }, "{}", spec.name);
        }
        assert_eq!(v7::SPEC.tile_m, 256);
        assert_eq!(v6::SPEC.group_m, 16);
    }

    /// Every (cluster unit, rank) pair of a persistent grid writes each 128-row (or 256-row)
    /// CTA tile of C exactly once: units striding by the cluster count, each unit split into the
    /// pair's M halves the way the kernels compute `m0`.
    fn assert_cta_tiles_once(m: u32, n: u32, tile_m: u32, tile_n: u32, cluster: u32, group: u32, grid_clusters: u32) {
        let s = TileScheduler::new(m, n, tile_m * cluster, tile_n, group);
        let (rows, cols) = (s.tiles_m * cluster, s.tiles_n);
        let mut seen = vec![0u32; (rows * cols) as usize];
        for c in 0..grid_clusters {
            let mut unit = c;
            while unit < s.num_tiles() {
                let (tm, tn) = s.tile(unit);
                for rank in 0..cluster {
                    let m0 = tm * tile_m * cluster + rank * tile_m;
                    seen[((m0 / tile_m) * cols + tn) as usize] += 1;
                }
                unit += grid_clusters;
            }
        }
        assert!(
            seen.iter().all(|&v| v == 1),
            "{m}x{n} tile {tile_m}x{tile_n} cluster {cluster} group {group} grid {grid_clusters}"
        );
        // Tiles that start inside the output are the ones that matter; the rest are clipped.
        assert!(rows * tile_m >= m && cols * tile_n >= n);
    }

    #[test]
    fn blackwell_schedules_visit_every_cta_tile_once() {
        for &(m, n) in
            &[(1, 1), (256, 256), (257, 255), (8192, 8192), (8000, 8000), (4096, 14336), (777, 12345), (128, 8192)]
        {
            // v4–v5 (128×256 per CTA, pairs, row-major units), v6 (group 16) and v7 (256×256 per CTA).
            for &(tile_m, group) in &[(128, 1), (128, 16), (256, 16)] {
                for grid in [1, 7, 64, 74, 1000] {
                    assert_cta_tiles_once(m, n, tile_m, 256, 2, group, grid);
                }
            }
        }
    }

    #[test]
    fn spec_schedulers_use_cluster_units() {
        // A 148-SM B200 runs 74 pairs; v7's units are 512×256, two 256×256 CTA tiles each.
        let s = v7::SPEC.scheduler(8192, 8192);
        assert_eq!((s.tiles_m, s.tiles_n, s.group_m), (16, 32, 16));
        let s = v5::SPEC.scheduler(8192, 8192);
        assert_eq!((s.tiles_m, s.tiles_n, s.group_m), (32, 32, 1));
        let s = v3::SPEC.scheduler(8192, 8192);
        assert_eq!((s.tiles_m, s.tiles_n), (64, 32));
        // Group 16: consecutive units walk M first inside a group of 16 unit-rows.
        let s = v6::SPEC.scheduler(8192, 8192);
        assert_eq!(s.tile(0), (0, 0));
        assert_eq!(s.tile(15), (15, 0));
        assert_eq!(s.tile(16), (0, 1));
        assert_eq!(s.tile(16 * 32), (16, 0));
    }
}
