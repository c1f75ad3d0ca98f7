//! Hopper v7 — v6's pipeline as the library's GEMM: a tile shape per problem size, stream-K for
//! the last waves, either storage order for A and B, strided batches, alpha/beta.
//!
//! v6's design is kept (persistent 2-CTA clusters, a producer warpgroup and one to three consumer
//! warpgroups with `setmaxnreg`, a TMA-store epilogue) and generalised:
//! - **Tile shapes** ([`tiles`]): twenty, from 128×256 down to 64×16, in pairs along M that
//!   share B or along N that share A; C written column-major (`_cm`) lets a small M be a tile's
//!   columns. The 256×128 tile gives each consumer two 64-row blocks (`Tile::BLOCKS`), each its
//!   own accumulator and `wgmma` per K step, stored one after the other; the 192-long tiles
//!   have three consumers of 160 registers each.
//! - **Edge maps**: a share of rows that crosses M (N) loads through a second map whose box ends
//!   there, and shares past it load nothing ([`crate::spec::KernelSpec::a_edge_box`]).
//! - **Stream-K** ([`crate::sched::StreamK`]): the host's split of the last waves' K blocks, the
//!   partial sums passed on through a workspace; whole waves kept in step
//!   (`crate::rendezvous`) and snaking through L2.
//! - **Storage order, batches, alpha/beta**: MN-major operands in 64-wide boxes read with
//!   `wgmma`'s transpose bits; rank-3 maps; a second epilogue that scales, loads C for beta, and
//!   stores by thread where TMA cannot address C.
//! - **Held tile** (the 128×256 tile): a finished tile waits in registers (`held`) and is
//!   stored under the next tile's first MMAs.
//! - **Fused epilogue** ([`crate::fused`]): alpha, the bias and the activation applied in place in
//!   the finished accumulator (one pass per activation, chosen per tile), then stored as a plain
//!   call's; gated calls store their half-wide tile from registers. A plain call pays one test
//!   per tile.
//! - **Uniform descriptors**, **L2 promotion** of operand loads, **programmatic dependent launch**.
//!
//! ```text
//! all threads  : prefetch maps, init barriers → cluster barrier → griddepcontrol.wait
//! producer     : per unit: [stream-K: wait for the wave before] → per K slice:
//!                wait(empty[s]) → expect_tx(full[s]) → TMA A, B (the shared one multicast)
//!                at the end: wait(empty[s]) for every stage, then exit
//! consumers    : per K slice: wait(full[s]) → 4 × wgmma per block → wait_group 1 → release s-1 in both CTAs
//!                [held tile: stage and store one box of it]
//!                unfinished piece: partial sum → workspace; finishing: add the earlier ones
//!                [fused: alpha·acc + bias → act, in registers; gated: act(gate)·up → st.global]
//!                per block, per 64-column box: [beta: TMA load C] → scale → st.shared → TMA store
//! ```
//!
//! Measured at 8192³, paired with cuBLAS in one process: on an H200, 692 TFLOP/s, 1.028× cuBLAS
//! (2026-12-01, commit 3da6262); on an H100, 688 TFLOP/s, 1.027× (2026-12-06, commit d238afe).

mod entries;
pub mod tiles;

#[cfg(hopper)]
pub mod held;
#[cfg(hopper)]
mod kernel;

pub use entries::{SPEC, VARIANTS};
pub use tiles::*;

use crate::spec::{share_rows, Family, Grid, KernelSpec, L2Promotion, Major, SmemPlan, StreamKSpec, Swizzle, TmaBox};

/// Depth of a K slice: one 128-byte swizzle span of bf16.
pub const BK: u32 = 64;
const GROUP_M: u32 = 8;
/// Width of a swizzled TMA box along K (K-major) or along M/N (MN-major): 128 bytes.
const SPAN: u32 = 64;
const C_BOX: TmaBox = TmaBox::new(crate::staging::BOX_COLS, 64, Swizzle::B128);

const fn major(mn: bool) -> Major {
    if mn { Major::MN } else { Major::K }
}

/// The box A is loaded in: this CTA's share of the tile's rows K-major (`BM`, or `BM / CLUSTER`
/// where the cluster lies along N), or 64(M)×64(K) MN-major pieces.
const fn a_box<T: Tile>(mn: bool) -> TmaBox {
    let b = if mn { TmaBox::new(SPAN, BK, Swizzle::B128) } else { TmaBox::new(BK, share_rows(T::BM, T::CLUSTER, T::ALONG_N), Swizzle::B128) };
    b.promote_l2(L2Promotion::B256)
}

/// The box B is loaded in: this CTA's share of the tile's rows K-major (`BN / CLUSTER`, or `BN`
/// where the cluster lies along N), or 64(N)×64(K) MN-major pieces.
const fn b_box<T: Tile>(mn: bool) -> TmaBox {
    let b = if mn { TmaBox::new(SPAN, BK, Swizzle::B128) } else { TmaBox::new(BK, share_rows(T::BN, T::CLUSTER, !T::ALONG_N), Swizzle::B128) };
    b.promote_l2(L2Promotion::B256)
}

/// Operand stages, two staging boxes per consumer, `full`/`empty` per stage and a C-load barrier
/// per consumer.
const fn smem<T: Tile>() -> SmemPlan {
    SmemPlan::new(T::STAGES, T::BM * BK * 2, T::BN * BK * 2, T::CONSUMERS * 2 * C_BOX.bytes(), 2 * T::STAGES + T::CONSUMERS)
}

/// One CTA's f32 partial tile in the stream-K workspace: each consumer's 64 × `BN` fragments.
const fn partial_bytes<T: Tile>() -> u32 {
    T::CONSUMERS * T::BLOCKS * block_partial_bytes::<T>()
}

/// One block's 64 × `BN` fragment in the stream-K workspace (a consumer's next block follows it).
const fn block_partial_bytes<T: Tile>() -> u32 {
    64 * T::BN * 4
}

/// The spec of the entry that runs tile `T` with A and B MN-major or not and C column-major or
/// not; the kernel builds the same one to read its shares and schedule.
const fn spec<T: Tile>(name: &'static str, a_mn: bool, b_mn: bool, c_col: bool) -> KernelSpec {
    // An N-major B arrives in boxes 64 wide along N, so each CTA's share of B must be whole boxes
    // (the 128×192 tile's 96 rows are not: it takes a K-major B only).
    // Pairs along N take K-major operands only: their shares of A would have to be whole pieces.
    assert!(!T::ALONG_N || !(a_mn || b_mn), "pairs along N take K-major A and B only");
    assert!(!b_mn || (T::BN / T::CLUSTER).is_multiple_of(SPAN), "B's share per CTA is not whole 64-wide boxes");
    let s = KernelSpec {
        name,
        family: Family::Hopper,
        version: 7,
        adds: "tile shape per problem, either storage order, batches, alpha/beta, L2 promotion",
        tile_m: T::BM,
        tile_n: T::BN,
        group_m: GROUP_M,
        threads: 128 * (1 + T::CONSUMERS),
        cluster: T::CLUSTER,
        cluster_along_n: T::ALONG_N,
        grid: Grid::Persistent,
        smem_bytes: smem::<T>().bytes,
        a_box: a_box::<T>(a_mn),
        b_box: b_box::<T>(b_mn),
        c_box: Some(C_BOX),
        a_major: major(a_mn),
        b_major: major(b_mn),
        general: true,
        edge_maps: true,
        c_col_major: c_col,
        stream_k: Some(StreamKSpec { block_k: BK, partial_bytes: partial_bytes::<T>(), spread: T::SPREAD }),
        dependent_launch: true,
        holds_tile: T::HOLD,
    };
    // A K-major operand's box is a CTA's share, which the edge maps and the byte counts assume.
    assert!(a_mn || s.a_box.outer == s.a_share_rows(), "A's box is not a CTA's share of A");
    assert!(b_mn || s.b_box.outer == s.b_share_rows(), "B's box is not a CTA's share of B");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tall_tile_gives_each_consumer_two_blocks() {
        let tall = VARIANTS.iter().find(|s| s.name == "hopper_v7_tall_kk_cm").unwrap();
        assert_eq!((tall.tile_m, tall.tile_n, tall.threads, tall.cluster), (256, 128, 384, 2));
        // Each CTA loads its own 256 rows of A in one box (TMA's largest) and half the pair's B.
        assert_eq!((tall.a_box.outer, tall.b_box.outer, tall.a_share_rows(), tall.b_share_rows()), (256, 64, 256, 64));
        // The workspace holds both blocks of both consumers, the second block after the first.
        assert_eq!(partial_bytes::<Tile256x128>(), 2 * 2 * block_partial_bytes::<Tile256x128>());
        assert_eq!(tall.stream_k.unwrap().partial_bytes, 256 * 128 * 4);
        // Four stages of 48 KiB beside the staging boxes fit in an H100's 227 KiB.
        assert!(tall.smem_bytes <= 227 * 1024, "{}", tall.smem_bytes);
        // One-block tiles keep 64 rows a consumer.
        assert_eq!(SPEC.tile_m, 64 * (SPEC.threads / 128 - 1));
    }
}
