//! Blackwell v6 — a TMA-store epilogue through two swizzled staging boxes, and a grouped tile
//! order.
//!
//! Same persistent pair kernel as v5; only the way C is written and the tile order change. The
//! epilogue warpgroup drains each 128×256 accumulator as four 128×64 sub-blocks: every thread
//! loads 64 columns of its row from tensor memory, converts them to bf16 and writes them as
//! eight 16-byte chunks into a shared-memory staging box in the 128B-swizzled layout of the C
//! tensor map ([`crate::staging`]); after a proxy fence and a barrier of the four warps, one
//! thread stores the box with `cp.async.bulk.tensor` (coalesced, clipped to M×N by TMA) and
//! commits it as a bulk async-group. The two boxes alternate, and before a box is refilled that
//! thread waits with `wait_group.read 1` — only for the store two back, which used this box — so
//! one store stays in flight while the next sub-block is loaded and converted, across tiles too;
//! `wait_group 0` drains the last ones before exit. The accumulator is released right after its
//! last sub-block has been read. Tiles are visited in groups of 16 unit-rows, M first
//! ([`crate::sched`]), so the clusters running together share B tiles and a bounded set of A
//! rows in L2.
//!
//! ```text
//! warp 0, t0 (both)  : for unit, kb: wait(empty[s]) → arrive_expect_tx(rank 0's full[s]) → TMA A, B
//! warp 1, t0 (rank 0): for unit: wait(epilogue[a]) → for kb: wait(full[s]) → 4 × mma → commit(empty[s])
//!                        commit multicast(mainloop[a]) ─┐
//! warps 4–7 (both)   : for unit: wait(mainloop[a]) ◄────┘
//!                        for j in 0..4: t0: wait_group.read 1 → barrier → tcgen05.ld 64 cols → bf16
//!                          → st.shared box[j % 2] → fence.proxy.async → barrier → t0: TMA store, commit
//!                        (after j = 3) t0 arrives on rank 0's epilogue[a]
//!                      t0: wait_group 0
//! all (both)         : cluster barrier → tcgen05.dealloc.cta_group::2 (warp 1)
//! ```
//!
//! Not yet run on Blackwell hardware. The seed's GB300 number for this version at 8192³: 1905.022 TFLOP/s (cuBLAS 1963.6).
use crate::desc::tcgen05::InstrDesc;
use crate::spec::{Grid, KernelSpec, SmemPlan, Swizzle, TmaBox};
use crate::staging::BOX_COLS;

const BM: u32 = 128;
const BN: u32 = 256;
const BK: u32 = 64;
const STAGES: u32 = 6;
/// CTAs per cluster: one CTA pair, `cta_group::2`.
const CLUSTER: u32 = 2;
/// Commits arrive in both CTAs of the pair.
const PAIR_MASK: u16 = 0b11;
/// Warp 0 loads, warp 1 issues MMAs, warps 4–7 (the second warpgroup) run the epilogue.
const THREADS: u32 = 256;
const EPILOGUE_WARP0: u32 = 4;
const EPILOGUE_THREADS: u32 = 128;
/// Named barrier of the epilogue warps (0 is `barrier.sync 0`, the whole CTA's).
const EPILOGUE_BAR: u32 = 1;
/// Accumulators in tensor memory: the epilogue drains one while the MMAs fill the other.
const ACC_STAGES: u32 = 2;
/// f32 accumulator columns: one per output column, per accumulator — all 512.
const TMEM_COLS: u32 = ACC_STAGES * BN;
/// One 128B-swizzled box per operand per stage: the swizzle spans all 64 bf16 of the slice.
const A_BOX: TmaBox = TmaBox::new(BK, BM, Swizzle::B128);
/// Each CTA of the pair loads half of the N tile of B.
const B_BOX: TmaBox = TmaBox::new(BK, BN / CLUSTER, Swizzle::B128);
/// The C store box: 64 columns (the 128-byte swizzle span) of the CTA's 128 rows.
const C_BOX: TmaBox = TmaBox::new(BOX_COLS, BM, Swizzle::B128);
/// Staging boxes in shared memory: one being filled while the other is stored.
const C_BUFFERS: u32 = 2;
/// Barriers: `full[s]` and `empty[s]` for each stage, then `mainloop[a]` and `epilogue[a]` for
/// each accumulator. The staging boxes lie after the operand stages, apart from every TMA load.
pub const SMEM: SmemPlan =
    SmemPlan::new(STAGES, BM * BK * 2, (BN / CLUSTER) * BK * 2, C_BUFFERS * C_BOX.bytes(), 2 * STAGES + 2 * ACC_STAGES);
/// M counts both CTAs' rows.
const IDESC: InstrDesc = InstrDesc::bf16_f32(BM * CLUSTER, BN);

pub const SPEC: KernelSpec = KernelSpec {
    name: "blackwell_v6",
    version: 6,
    adds: "TMA-store epilogue via two swizzled staging boxes, tile groups of 16",
    tile_m: BM,
    tile_n: BN,
    group_m: 16,
    threads: THREADS,
    cluster: CLUSTER,
    grid: Grid::Persistent,
    smem_bytes: SMEM.bytes,
    a_box: A_BOX,
    b_box: B_BOX,
    c_box: Some(C_BOX),
    ..super::BASE
};

#[cfg(blackwell)]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn blackwell_v6(
    _a: crate::args::TensorMapParam,
    _b: crate::args::TensorMapParam,
    _c: crate::args::TensorMapParam,
    args: crate::args::GemmArgs,
) {
    use crate::desc::tcgen05::{SmemDesc, TmemAddr};
    use crate::pipeline::PipelineState;
    use crate::ptx::mbarrier::{self, Barrier};
    use crate::ptx::{bar, cluster, fence, smem, sreg, tcgen05, tma};
    use crate::staging::Staging;

    let map_a = crate::tensor_map_param!(blackwell_v6, 0);
    let map_b = crate::tensor_map_param!(blackwell_v6, 1);
    let map_c = crate::tensor_map_param!(blackwell_v6, 2);
    let base = smem::base();
    let full = |s: u32| Barrier::at(base + SMEM.barrier(0), s);
    let empty = |s: u32| Barrier::at(base + SMEM.barrier(STAGES), s);
    let mainloop = |a: u32| Barrier::at(base + SMEM.barrier(2 * STAGES), a);
    let epilogue = |a: u32| Barrier::at(base + SMEM.barrier(2 * STAGES + ACC_STAGES), a);
    let tid = sreg::tid_x();
    let (warp, lane) = (tid / 32, tid % 32);

    let rank = sreg::cluster_ctarank();

    let sched = SPEC.scheduler(args.m, args.n);
    let origin = |unit: u32| {
        let (tm, tn) = sched.tile(unit);
        (tm * BM * CLUSTER + rank * BM, tn * BN)
    };
    let (first_unit, units_step) = (sreg::clusterid_x(), sreg::nclusterid_x());

    if tid == 0 {
        for s in 0..STAGES {
            // Both producers arrive on rank 0's full[s]; rank 1's stays unused.
            mbarrier::init(full(s), CLUSTER);
            mbarrier::init(empty(s), 1);
        }
        for a in 0..ACC_STAGES {
            mbarrier::init(mainloop(a), 1);
            // One arrival per CTA's epilogue warpgroup, on rank 0's barrier.
            mbarrier::init(epilogue(a), CLUSTER);
        }
        fence::mbarrier_init_release_cluster();
    }
    if warp == 1 {
        tcgen05::alloc::<CLUSTER>(base + SMEM.tmem_slot, TMEM_COLS);
        tcgen05::relinquish_alloc_permit::<CLUSTER>();
        tcgen05::fence_before_thread_sync();
    }
    // The barrier inits must be visible to the peer before it arrives on them, and the slot is
    // read only after the barrier that follows the allocation.
    cluster::sync();
    tcgen05::fence_after_thread_sync();
    let tmem = TmemAddr(smem::ld_b32(base + SMEM.tmem_slot));

    let nk = args.k.div_ceil(BK);
    if warp == 0 && lane == 0 {
        let mut st = PipelineState::<STAGES>::producer();
        let mut unit = first_unit;
        while unit < sched.num_tiles() {
            let (m0, n0) = origin(unit);
            for kb in 0..nk {
                mbarrier::wait(empty(st.stage), st.phase);
                let s = st.stage;
                let k = (kb * BK) as i32;
                mbarrier::arrive_expect_tx_relaxed_cluster(full(s), 0, A_BOX.bytes() + B_BOX.bytes());
                tma::load_2d_cta_group2(base + SMEM.a_stage(s), map_a, k, m0 as i32, full(s), 0);
                tma::load_2d_cta_group2(base + SMEM.b_stage(s), map_b, k, (n0 + rank * B_BOX.outer) as i32, full(s), 0);
                st.advance();
            }
            unit += units_step;
        }
        // Wait for the last release of every stage, so no commit arrival is still on its way to
        // this CTA's barriers when it exits (CUTLASS's producer tail does the same); here they
        // come from rank 0's MMA thread, in both CTAs.
        for _ in 0..STAGES {
            mbarrier::wait(empty(st.stage), st.phase);
            st.advance();
        }
    } else if warp == 1 && lane == 0 && rank == 0 {
        let mut st = PipelineState::<STAGES>::new();
        let mut acc = PipelineState::<ACC_STAGES>::producer();
        let mut unit = first_unit;
        while unit < sched.num_tiles() {
            mbarrier::wait(epilogue(acc.stage), acc.phase);
            tcgen05::fence_after_thread_sync();
            let d = tmem.offset(0, acc.stage * BN);
            for kb in 0..nk {
                mbarrier::wait(full(st.stage), st.phase);
                tcgen05::fence_after_thread_sync();
                let s = st.stage;
                for k in 0..BK / 16 {
                    let a = SmemDesc::k_major_128b(base + SMEM.a_stage(s)).advance(32 * k);
                    let b = SmemDesc::k_major_128b(base + SMEM.b_stage(s)).advance(32 * k);
                    tcgen05::mma_f16_ss::<CLUSTER>(d, a, b, IDESC, (kb + k != 0) as u32);
                }
                tcgen05::commit_multicast::<CLUSTER>(empty(s), PAIR_MASK);
                st.advance();
            }
            tcgen05::commit_multicast::<CLUSTER>(mainloop(acc.stage), PAIR_MASK);
            acc.advance();
            unit += units_step;
        }
    } else if warp >= EPILOGUE_WARP0 {
        let issuer = tid == EPILOGUE_WARP0 * 32;
        let mut acc = PipelineState::<ACC_STAGES>::new();
        let mut unit = first_unit;
        while unit < sched.num_tiles() {
            let (m0, n0) = origin(unit);
            mbarrier::wait(mainloop(acc.stage), acc.phase);
            tcgen05::fence_after_thread_sync();

            // BN / BOX_COLS is even, so box j % 2 also alternates from one tile to the next.
            for j in 0..BN / BOX_COLS {
                let staging = Staging(base + SMEM.c + (j % C_BUFFERS) * C_BOX.bytes());
                if issuer {
                    tma::wait_group_read::<{ C_BUFFERS - 1 }>();
                }
                bar::sync(EPILOGUE_BAR, EPILOGUE_THREADS);
                super::stage_cols(tmem.offset(0, acc.stage * BN + j * BOX_COLS), staging, warp, lane);
                // The staged bytes are read by the TMA engine (async proxy); the accumulator is
                // released after its last columns are read.
                fence::proxy_async_shared_cta();
                if j == BN / BOX_COLS - 1 {
                    tcgen05::fence_before_thread_sync();
                }
                bar::sync(EPILOGUE_BAR, EPILOGUE_THREADS);
                if issuer {
                    tma::store_2d(map_c, (n0 + j * BOX_COLS) as i32, m0 as i32, staging.0);
                    tma::commit_group();
                    if j == BN / BOX_COLS - 1 {
                        mbarrier::arrive_cluster(epilogue(acc.stage), 0);
                    }
                }
            }
            acc.advance();
            unit += units_step;
        }
        if issuer {
            tma::wait_group::<0>();
        }
    }

    // Both CTAs have read their accumulators (rank 0's MMAs, which write both, are complete)
    // before either frees the pair's columns, and neither exits while the other may still
    // arrive on its barriers.
    tcgen05::fence_before_thread_sync();
    cluster::sync();
    if warp == 1 {
        tcgen05::fence_after_thread_sync();
        tcgen05::dealloc::<CLUSTER>(tmem, TMEM_COLS);
    }
}
