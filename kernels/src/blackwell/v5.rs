//! Blackwell v5 — persistent: one CTA pair per pair of SMs loops over output tiles, with three
//! warp roles and two tensor-memory accumulators, so one tile's epilogue overlaps the next
//! tile's mainloop.
//!
//! Same pair MMA, stages and barriers as v4, but the grid holds only as many clusters as fit on
//! the device at once (sized by the host from the SM count), and cluster `c` computes units `c`,
//! `c + clusters`, … The warps split three ways: warp 0 loads (TMA, both CTAs), warp 1 computes
//! (rank 0's MMA thread), warps 4–7 — one warpgroup, so warp `w` reaches lanes `32·(w % 4)` —
//! drain the accumulator to C; warps 2–3 only take part in setup and teardown. All 512 columns
//! of tensor memory are allocated: two 256-column accumulators, a second pipeline beside the
//! shared-memory one. The MMA thread waits until accumulator `a` is free (`epilogue[a]`),
//! accumulates a whole tile into it, and commits `mainloop[a]` (multicast to both CTAs); the
//! epilogue warps wait for `mainloop[a]`, store the tile, and release `a` with one arrival per
//! CTA on rank 0's `epilogue[a]` (both CTAs' accumulators must be drained before rank 0 writes
//! either again). Every role walks the same units, and every
//! [`PipelineState`](crate::pipeline::PipelineState) — stage and phase — carries over from one
//! tile to the next.
//!
//! ```text
//! warp 0, t0 (both)  : for unit, kb: wait(empty[s]) → arrive_expect_tx(rank 0's full[s]) → TMA A, B
//! warp 1, t0 (rank 0): for unit: wait(epilogue[a], ph ^ 1)
//!                        for kb: wait(full[s]) → 4 × mma.cta_group::2 → commit multicast(empty[s])
//!                        commit multicast(mainloop[a]) ─┐
//! warps 4–7 (both)   : for unit: wait(mainloop[a]) ◄────┘ → tcgen05.ld → st.global
//!                        barrier(epilogue warps) → one thread arrives on rank 0's epilogue[a]
//! all (both)         : cluster barrier → tcgen05.dealloc.cta_group::2 (warp 1)
//! ```
//!
//! Not yet run on Blackwell hardware. The seed's GB300 number for this version at 8192³: 1764.173 TFLOP/s (cuBLAS 1963.6).
use crate::desc::tcgen05::InstrDesc;
use crate::spec::{Grid, KernelSpec, SmemPlan, Swizzle, TmaBox};

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
/// Barriers: `full[s]` and `empty[s]` for each stage, then `mainloop[a]` and `epilogue[a]` for
/// each accumulator.
pub const SMEM: SmemPlan = SmemPlan::new(STAGES, BM * BK * 2, (BN / CLUSTER) * BK * 2, 0, 2 * STAGES + 2 * ACC_STAGES);
/// M counts both CTAs' rows.
const IDESC: InstrDesc = InstrDesc::bf16_f32(BM * CLUSTER, BN);

pub const SPEC: KernelSpec = KernelSpec {
    name: "blackwell_v5",
    version: 5,
    adds: "persistent, three warp roles, two tensor-memory accumulators",
    tile_m: BM,
    tile_n: BN,
    threads: THREADS,
    cluster: CLUSTER,
    grid: Grid::Persistent,
    smem_bytes: SMEM.bytes,
    a_box: A_BOX,
    b_box: B_BOX,
    ..super::BASE
};

#[cfg(blackwell)]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn blackwell_v5(
    _a: crate::args::TensorMapParam,
    _b: crate::args::TensorMapParam,
    _c: crate::args::TensorMapParam,
    args: crate::args::GemmArgs,
) {
    use crate::desc::tcgen05::{SmemDesc, TmemAddr};
    use crate::pipeline::PipelineState;
    use crate::ptx::mbarrier::{self, Barrier};
    use crate::ptx::{bar, cluster, fence, smem, sreg, tcgen05, tma};

    let map_a = crate::tensor_map_param!(blackwell_v5, 0);
    let map_b = crate::tensor_map_param!(blackwell_v5, 1);
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
        let mut acc = PipelineState::<ACC_STAGES>::new();
        let mut unit = first_unit;
        while unit < sched.num_tiles() {
            let (m0, n0) = origin(unit);
            mbarrier::wait(mainloop(acc.stage), acc.phase);
            tcgen05::fence_after_thread_sync();

            super::store_rows(tmem.offset(0, acc.stage * BN), BN, &args, m0, n0, warp, lane);

            // Every epilogue thread's tensor-memory reads are done before one thread releases
            // the accumulator for the whole warpgroup.
            tcgen05::fence_before_thread_sync();
            bar::sync(EPILOGUE_BAR, EPILOGUE_THREADS);
            if tid == EPILOGUE_WARP0 * 32 {
                mbarrier::arrive_cluster(epilogue(acc.stage), 0);
            }
            acc.advance();
            unit += units_step;
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
