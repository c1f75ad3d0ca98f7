//! Blackwell's library entry — v6's persistent pair pipeline as the library's GEMM on sm_100f:
//! either storage order of A and B, strided batches, alpha/beta with C loaded for beta, partial
//! tiles; C column-major through the host's turning the call round (Cᵀ = B·Aᵀ,
//! `hgemm::plan::for_kernel`).
//!
//! v6's design is kept: CTA pairs stacked along M, each CTA 128×256 of C, one `cta_group::2`
//! MMA of M = 256 from rank 0, six 64-deep stages, two accumulators in all 512 tensor-memory
//! columns, a TMA-store epilogue through two 128B-swizzled staging boxes. Generalised:
//! - **Tile width**: each order also has an entry 128 wide (`blackwell_lib_n128_*`: N = 128
//!   MMAs, two accumulators in 256 columns, eight stages), for calls that 256-wide tiles cover
//!   in too few tiles for the SMs ([`WIDE`], [`HALF`]).
//! - **One CTA** (`blackwell_lib_single_*`, [`SINGLE`]): 128×128 tiles of `cta_group::1` MMAs
//!   (M = 128), no pair, for calls of at most 128 rows (decode) or columns, where a pair's
//!   second CTA would compute only rows past M: every SM is a worker of its own, and no MMA is
//!   more than half empty for M of 65 to 128.
//! - **Storage order**: an MN-major operand arrives in 64(M or N)×64(K) boxes, two per CTA share,
//!   read with the instruction descriptor's transpose bits and MN-major shared-memory
//!   descriptors ([`crate::desc::tcgen05::SmemDesc::mn_major_128b`]). One entry per pair of
//!   orders (`entries.rs`).
//! - **Batches**: rank-3 tensor maps, the batch entry their outer coordinate; unit `u` is tile
//!   `u % tiles` of entry `u / tiles`.
//! - **alpha/beta**: the epilogue scales each accumulator value by alpha and, where beta ≠ 0,
//!   first loads the box of C it is about to overwrite into the staging box by TMA and adds
//!   beta times it. K = 0 (C = beta·C) stores beta·C without reading the accumulator.
//! - **Partial tiles**: TMA fills the rows and columns of a box past M, N or K with zeros (and
//!   counts their bytes), and clips stores at C's edge.
//! - **Ragged C**: a box holding columns of C that TMA cannot write (past the last whole 16-byte
//!   chunk of its rows, or all of them where C's address or strides are not TMA's) is loaded for
//!   beta and stored by the epilogue warps themselves, a warp a row at a time, bf16 by bf16 where
//!   C is not 4-byte aligned (`crate::epilogue::Output`).
//!
//! - **Fused epilogue** ([`crate::fused`]): `act(alpha·acc + bias) + beta·C` per value, the bias
//!   per column (per row for an entry computing Cᵀ), bf16 or f32, per batch entry; gated units
//!   `act(gate)·up + beta·C` stored by the threads, gate and up blocks of 8 along N (rows r and
//!   r + 8 along M, handed between lanes by a shuffle).
//!
//! - **Stream-K** ([`crate::sched::StreamK`], as Hopper v7's): the host's split of the last
//!   waves' K blocks over the pairs, so that calls of few tiles and a long K keep every SM busy.
//!   A pair that starts a unit another finishes stores each CTA's f32 sums to its workspace slot
//!   and releases a flag; the finishing pair waits for the earlier pairs' flags and adds their
//!   sums, in worker order, before its epilogue (`epilogue::Sums`). Unlike Hopper's, no
//!   rendezvous keeps the whole waves in step.
//!
//! ```text
//! warp 0, t0 (both)  : for work (unit, K blocks): wait(empty[s]) → arrive_expect_tx(rank 0's full[s])
//!                        → TMA A (1 K-major box or 2 MN-major), B (the same), into the pair's barrier
//! warp 1, t0 (rank 0): for work: wait(epilogue[a]) → for kb: wait(full[s]) → 4 × mma → commit(empty[s])
//!                        commit multicast(mainloop[a]) ─┐
//! warps 4–7 (both)   : for work: wait(mainloop[a]) ◄────┘
//!                        unfinished piece: tcgen05.ld → st.global (slot) → barrier → t0: release flag,
//!                          arrive on rank 0's epilogue[a]; next work
//!                        finishing a split unit: t0 acquires the earlier pairs' flags → barrier
//!                        for j in 0..4: t0: wait_group.read 1 → [beta: t0 TMA-loads C's box, all wait]
//!                          → tcgen05.ld (+ earlier sums) → alpha·acc (+ beta·C) → bf16 → st.shared
//!                          → fence → barrier
//!                          → t0: TMA store, commit; (after j = 3) t0 arrives on rank 0's epilogue[a]
//!                        (a box TMA cannot write: the threads load C for beta and store it, t0
//!                         commits an empty group)
//! all (both)         : cluster barrier → tcgen05.dealloc.cta_group::2 (warp 1)
//! ```
//!
//! Assembled for sm_100a and sm_103a and inspected; not yet run on Blackwell hardware
//! (docs/blackwell.md).

mod entries;
#[cfg(blackwell)]
mod epilogue;
#[cfg(blackwell)]
mod kernel;

pub use entries::ENTRIES;

use crate::desc::tcgen05::InstrDesc;
use crate::spec::{Family, Grid, KernelSpec, L2Promotion, Major, SmemPlan, StreamKSpec, Swizzle, TmaBox};
use crate::staging::BOX_COLS;

/// Rows of C per CTA (each CTA's half of the pair MMA's M = 256).
const BM: u32 = 128;
/// Depth of a K slice: one 128-byte swizzle span of bf16.
const BK: u32 = 64;
/// Width along M or N of an MN-major box: one 128-byte swizzle span.
const SPAN: u32 = 64;
/// Commits of a pair's MMAs arrive in both of its CTAs.
const PAIR_MASK: u16 = 0b11;
/// Warp 0 loads, warp 1 issues MMAs, warps 4–7 (the second warpgroup) run the epilogue.
const THREADS: u32 = 256;
const EPILOGUE_WARP0: u32 = 4;
const EPILOGUE_THREADS: u32 = 128;
/// Named barrier of the epilogue warps (0 is `barrier.sync 0`, the whole CTA's).
const EPILOGUE_BAR: u32 = 1;
/// Accumulators in tensor memory: the epilogue drains one while the MMAs fill the other.
const ACC_STAGES: u32 = 2;
/// The C box: 64 columns (the 128-byte swizzle span) of the CTA's 128 rows, for stores and,
/// with beta, loads.
const C_BOX: TmaBox = TmaBox::new(BOX_COLS, BM, Swizzle::B128);
/// Staging boxes in shared memory: one being filled while the other is stored.
const C_BUFFERS: u32 = 2;

/// The tiles the entries run: `BN` columns of C per group (the MMA's N), `STAGES` 64-deep
/// stages, `G` CTAs in the MMA's group (a pair stacked along M, `cta_group::2`, or one CTA,
/// `cta_group::1`). 256 wide is v6's; 128 wide halves each MMA and the tensor memory it takes,
/// so that calls whose N (or M, turned round) 256 covers in too few tiles spread over more SMs,
/// with stages of two thirds the bytes and so more of them. One CTA loads all 128 rows of B
/// itself: six stages of 32 KiB.
pub const WIDE: (u32, u32, u32) = (256, 6, 2);
pub const HALF: (u32, u32, u32) = (128, 8, 2);
pub const SINGLE: (u32, u32, u32) = (128, 6, 1);

/// Rows of B each CTA loads: a pair MMA splits N across the two CTAs.
const fn b_share(bn: u32, g: u32) -> u32 {
    bn / g
}

/// f32 accumulator columns: one per output column, per accumulator (all 512 for 256 wide).
const fn tmem_cols(bn: u32) -> u32 {
    ACC_STAGES * bn
}

/// One CTA's f32 partial tile in the stream-K workspace: its 128 rows × `bn` accumulator.
const fn partial_bytes(bn: u32) -> u32 {
    BM * bn * 4
}

/// Byte offset of the accumulator's (`row`, `col`) in a CTA's partial tile in the stream-K
/// workspace: four columns of a row in 16 bytes, the 128 rows' chunks of the same columns one
/// after another, so that a warp's 32 rows (lanes) move 512 contiguous bytes per access.
#[cfg_attr(not(any(blackwell, test)), allow(dead_code))]
const fn partial_offset(row: u32, col: u32) -> u64 {
    (((col / 4) * BM + row) * 16 + (col % 4) * 4) as u64
}

/// Barriers: `full[s]` and `empty[s]` per stage, `mainloop[a]` and `epilogue[a]` per
/// accumulator, then `c_load`, on which the epilogue waits for a box of C (beta ≠ 0).
const fn smem(bn: u32, stages: u32, g: u32) -> SmemPlan {
    SmemPlan::new(
        stages,
        BM * BK * 2,
        b_share(bn, g) * BK * 2,
        C_BUFFERS * C_BOX.bytes(),
        2 * stages + 2 * ACC_STAGES + 1,
    )
}

/// Bytes one CTA's loads bring per stage, whatever the orders: its 128 rows of A and its share of B.
const fn stage_bytes(bn: u32, g: u32) -> u32 {
    (BM + b_share(bn, g)) * BK * 2
}

const fn major(mn: bool) -> Major {
    if mn { Major::MN } else { Major::K }
}

/// The box an operand of `rows` rows per CTA is loaded in: all of them K-major, or 64(M or
/// N)×64(K) MN-major pieces.
const fn operand_box(mn: bool, rows: u32) -> TmaBox {
    let b = if mn { TmaBox::new(SPAN, BK, Swizzle::B128) } else { TmaBox::new(BK, rows, Swizzle::B128) };
    b.promote_l2(L2Promotion::B256)
}

/// The instruction descriptor of the M = 128·`g`, N = `bn` MMA for A and B in the given orders.
const fn idesc(a_mn: bool, b_mn: bool, bn: u32, g: u32) -> InstrDesc {
    InstrDesc::bf16_f32_major(BM * g, bn, a_mn, b_mn)
}

/// The spec of the entry that runs tile `(bn, stages, g)` ([`WIDE`], [`HALF`], [`SINGLE`])
/// reading A and B MN-major or not; the kernel reads the same constants.
const fn spec(name: &'static str, (bn, stages, g): (u32, u32, u32), a_mn: bool, b_mn: bool) -> KernelSpec {
    KernelSpec {
        name,
        family: Family::Blackwell,
        version: 7,
        adds: "the library's entry: either storage order, batches, alpha/beta, partial tiles, stream-K",
        tile_m: BM,
        tile_n: bn,
        group_m: 16,
        threads: THREADS,
        cluster: g,
        cluster_along_n: false,
        grid: Grid::Persistent,
        smem_bytes: smem(bn, stages, g).bytes,
        a_box: operand_box(a_mn, BM),
        b_box: operand_box(b_mn, b_share(bn, g)),
        c_box: Some(C_BOX),
        a_major: major(a_mn),
        b_major: major(b_mn),
        general: true,
        edge_maps: false,
        c_col_major: false,
        stream_k: Some(StreamKSpec { block_k: BK, partial_bytes: partial_bytes(bn), spread: false }),
        dependent_launch: false,
        holds_tile: false,
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    /// Every tile an entry runs.
    const TILES: [(u32, u32, u32); 3] = [WIDE, HALF, SINGLE];

    /// The tile entry `s` runs.
    fn tile(s: &KernelSpec) -> (u32, u32, u32) {
        TILES.into_iter().find(|t| (t.0, t.2) == (s.tile_n, s.cluster)).unwrap()
    }

    #[test]
    fn entries_cover_every_order_once() {
        assert_eq!(ENTRIES.len(), 12);
        for (bn, _, g) in TILES {
            for a in [Major::K, Major::MN] {
                for b in [Major::K, Major::MN] {
                    let n = ENTRIES
                        .iter()
                        .filter(|s| (s.tile_n, s.cluster) == (bn, g) && s.a_major == a && s.b_major == b)
                        .count();
                    assert_eq!(n, 1, "{bn} {g} {a:?} {b:?}");
                }
            }
        }
        for s in ENTRIES {
            assert!(s.name.starts_with("blackwell_lib_"), "{}", s.name);
            assert_eq!((s.family, s.general, s.c_col_major, s.edge_maps), (Family::Blackwell, true, false, false));
            assert!(!s.dependent_launch, "{}", s.name);
            // Stream-K: K slices as deep as the stages', each CTA's whole accumulator a slot.
            let sk = s.stream_k.unwrap();
            assert_eq!((sk.block_k, sk.partial_bytes, sk.spread), (BK, BM * s.tile_n * 4, false), "{}", s.name);
        }
    }

    #[test]
    fn boxes_fill_each_stage_exactly() {
        for s in ENTRIES {
            let (bn, stages, g) = tile(s);
            let plan = smem(bn, stages, g);
            assert_eq!((s.tile_m, s.tile_n, s.smem_bytes), (BM, bn, plan.bytes), "{}", s.name);
            // Each CTA loads its 128 rows of A and its share of B per K slice, in one K-major box
            // or 64-wide MN-major ones: the bytes it announces on the pair's barrier.
            let pieces = |b: TmaBox, rows: u32, major: Major| match major {
                Major::K => {
                    assert_eq!((b.inner, b.outer), (BK, rows), "{}", s.name);
                    1
                }
                Major::MN => {
                    assert_eq!((b.inner, b.outer), (SPAN, BK), "{}", s.name);
                    rows / SPAN
                }
            };
            let a = pieces(s.a_box, BM, s.a_major) * s.a_box.bytes();
            let b = pieces(s.b_box, b_share(bn, g), s.b_major) * s.b_box.bytes();
            assert_eq!((a, b), (plan.a_stage_bytes, plan.b_stage_bytes), "{}", s.name);
            assert_eq!(a + b, stage_bytes(bn, g), "{}", s.name);
            assert_eq!(s.a_share_rows(), BM);
            assert_eq!(s.b_share_rows(), b_share(bn, g));
            // Stages and staging boxes start on 1024-byte swizzle atoms; MN-major blocks too.
            for st in 0..stages {
                assert_eq!((plan.a_stage(st) % 1024, plan.b_stage(st) % 1024), (0, 0));
            }
            assert_eq!(plan.c % 1024, 0);
            assert!(plan.bytes <= 227 * 1024, "{}: {} bytes", s.name, plan.bytes);
            assert!(plan.tmem_slot >= plan.barrier(2 * stages + 2 * ACC_STAGES + 1));
            // The epilogue alternates its two staging boxes across tiles: an even count per tile.
            assert!((bn / BOX_COLS).is_multiple_of(C_BUFFERS), "{}", s.name);
            // `tcgen05.alloc` takes a power of two of at least 32 columns; an MMA of M = 128 or 256
            // an N that is a multiple of 16 up to 256 (PTX ISA §9.7.16.10.1).
            assert!(tmem_cols(bn).is_power_of_two() && tmem_cols(bn) >= 32 && tmem_cols(bn) <= 512);
            assert!(bn.is_multiple_of(16) && bn <= 256);
        }
        assert_eq!(operand_box(true, BM).bytes() % 1024, 0);
    }

    #[test]
    fn partial_sums_fill_each_slot_once_in_whole_chunks() {
        for (bn, _, _) in TILES {
            let mut seen = std::vec![false; (partial_bytes(bn) / 4) as usize];
            for row in 0..BM {
                for col in 0..bn {
                    let at = partial_offset(row, col);
                    // Four columns from a multiple of 4 make one 16-byte store or load.
                    assert_eq!(at % 16, (col % 4) as u64 * 4);
                    assert!(!std::mem::replace(&mut seen[(at / 4) as usize], true), "{bn}: ({row}, {col})");
                }
            }
            assert!(seen.iter().all(|&s| s));
            // A warp's 32 rows of one chunk of columns lie in 512 contiguous bytes.
            assert_eq!(partial_offset(31, 4) - partial_offset(0, 4), 31 * 16);
        }
    }

    #[test]
    fn instruction_descriptors_follow_the_orders() {
        for (bn, _, g) in TILES {
            assert_eq!(idesc(false, false, bn, g), InstrDesc::bf16_f32(128 * g, bn));
            assert_eq!(idesc(true, false, bn, g).0 & (3 << 15), 1 << 15);
            assert_eq!(idesc(false, true, bn, g).0 & (3 << 15), 1 << 16);
            assert_eq!(idesc(true, true, bn, g).0 & (3 << 15), 3 << 15);
        }
        // M = 128 (one CTA) is the M field's 8 (M >> 4, bits 24–28), a pair's 256 its 16.
        assert_eq!((idesc(false, false, 128, 1).0 >> 24) & 0x1f, 8);
        assert_eq!((idesc(false, false, 128, 2).0 >> 24) & 0x1f, 16);
    }

    #[test]
    fn batches_walk_every_tile_of_every_entry_once() {
        // Units are tiles × batch entries; a persistent grid of clusters strides over them.
        for s in ENTRIES.iter().step_by(4) {
            for &(m, n, batch) in &[(1u32, 1u32, 1u32), (300, 520, 3), (4096, 4096, 2), (257, 8000, 5)] {
                let sched = s.scheduler(m, n);
                let tiles = sched.num_tiles();
                for grid in [1, 7, 74] {
                    let mut seen = std::vec![0u32; (tiles * batch) as usize];
                    for c in 0..grid {
                        let mut u = c;
                        while u < tiles * batch {
                            let (tm, tn) = sched.tile(u % tiles);
                            let z = u / tiles;
                            seen[(z * tiles + tm * sched.tiles_n + tn) as usize] += 1;
                            u += grid;
                        }
                    }
                    assert!(seen.iter().all(|&v| v == 1), "{}: {m}x{n}x{batch} grid {grid}", s.name);
                }
            }
        }
    }
}
