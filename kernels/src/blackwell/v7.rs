//! Blackwell v7 — 256×256 per CTA as two 128-row M-waves in all 512 tensor-memory columns, a
//! leader-owned load barrier, and L2 promotion.
//!
//! Each CTA of a pair now owns a 256×256 tile (a cluster 512×256): per K slice it loads its own
//! 256 rows of A and, as before, its 128-row half of B. The pair MMA keeps M = 256 (128 rows
//! from each CTA), so rank 0's MMA thread issues it twice per 16-wide K step, once per M-wave:
//! wave `w` reads A rows `128w..128w + 128` of each CTA and accumulates into columns
//! `256w..256w + 256`, the two waves side by side in all 512 columns — one accumulator instead
//! of v6's two, so the MMAs of the next tile wait for the epilogue to read it, but every B
//! slice in shared memory now feeds twice the MMA work. The load barrier belongs to rank 0
//! alone: it expects one arrival, rank 0's, announcing both CTAs' bytes
//! (`arrive_expect_tx(2 × stage bytes)`), and the peer only completes bytes on it with its TMA
//! boxes (the barrier address mapped to rank 0 with `mapa`). The epilogue drains the waves one
//! after the other through the same two staging boxes and pipelined TMA stores as v6, eight
//! stores per tile. The A and B tensor maps ask L2 to fetch 256-byte sectors
//! (`CU_TENSOR_MAP_L2_PROMOTION_L2_256B`). Four stages of 48 KiB fit beside the staging boxes.
//!
//! ```text
//! warp 0, t0 (both)  : for unit, kb: wait(empty[s]) → rank 0 only: arrive_expect_tx(full[s], 2 × 48 KiB)
//!                        → TMA A (256 rows), TMA B (128 rows), complete_tx on rank 0's full[s]
//! warp 1, t0 (rank 0): for unit: wait(epilogue[0]) → for kb: wait(full[s])
//!                        → for wave: 4 × mma.cta_group::2 (cols 256·wave) → commit multicast(empty[s])
//!                        commit multicast(mainloop[0]) ─┐
//! warps 4–7 (both)   : for unit: wait(mainloop[0]) ◄────┘
//!                        for wave, j: t0: wait_group.read 1 → barrier → tcgen05.ld → bf16 → st.shared
//!                          → fence.proxy.async → barrier → t0: TMA store (rows 128·wave), commit
//!                        (after the last) t0 arrives on rank 0's epilogue[0]
//! all (both)         : cluster barrier → tcgen05.dealloc.cta_group::2 (warp 1)
//! ```
//!
//! Not yet run on Blackwell hardware. The seed's GB300 number for this version at 8192³: 1980.925 TFLOP/s (cuBLAS 1963.6).
use crate::desc::tcgen05::InstrDesc;
use crate::spec::{Grid, KernelSpec, L2Promotion, SmemPlan, Swizzle, TmaBox};
use crate::staging::BOX_COLS;

const BM: u32 = 256;
/// Rows of one M-wave: each CTA's share of an M = 256 pair MMA.
const WAVE_M: u32 = 128;
const WAVES: u32 = BM / WAVE_M;
const BN: u32 = 256;
const BK: u32 = 64;
const STAGES: u32 = 4;
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
/// One accumulator of both waves side by side: all 512 columns.
const ACC_STAGES: u32 = 1;
/// f32 accumulator columns: one per output column, per wave — all 512.
const TMEM_COLS: u32 = ACC_STAGES * WAVES * BN;
/// One 128B-swizzled box per operand per stage: the swizzle spans all 64 bf16 of the slice.
const A_BOX: TmaBox = TmaBox::new(BK, BM, Swizzle::B128).promote_l2(L2Promotion::B256);
/// Each CTA of the pair loads half of the N tile of B.
const B_BOX: TmaBox = TmaBox::new(BK, BN / CLUSTER, Swizzle::B128).promote_l2(L2Promotion::B256);
/// The C store box: 64 columns (the 128-byte swizzle span) of one wave's 128 rows.
const C_BOX: TmaBox = TmaBox::new(BOX_COLS, WAVE_M, Swizzle::B128);
/// Staging boxes in shared memory: one being filled while the other is stored.
const C_BUFFERS: u32 = 2;
/// Barriers: `full[s]` and `empty[s]` for each stage, then `mainloop[a]` and `epilogue[a]` for
/// each accumulator. The staging boxes lie after the operand stages, apart from every TMA load.
pub const SMEM: SmemPlan =
    SmemPlan::new(STAGES, BM * BK * 2, (BN / CLUSTER) * BK * 2, C_BUFFERS * C_BOX.bytes(), 2 * STAGES + 2 * ACC_STAGES);
/// M counts both CTAs' rows of one wave.
const IDESC: InstrDesc = InstrDesc::bf16_f32(WAVE_M * CLUSTER, BN);

pub const SPEC: KernelSpec = KernelSpec {
    name: "blackwell_v7",
    version: 7,
    adds: "256×256 per CTA in two M-waves, leader-owned load barrier, L2 promotion",
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
pub unsafe extern "ptx-kernel" fn blackwell_v7(
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

    // No fused epilogue here (`crate::fused`): the host refuses such calls; one that slipped
    // through stops the kernel instead of returning a plain GEMM.
    if !args.epilogue.is_none() {
        crate::ptx::trap();
    }
    let map_a = crate::tensor_map_param!(blackwell_v7, 0);
    let map_b = crate::tensor_map_param!(blackwell_v7, 1);
    let map_c = crate::tensor_map_param!(blackwell_v7, 2);
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
            // Only rank 0 arrives on rank 0's full[s]; rank 1's stays unused.
            mbarrier::init(full(s), 1);
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
                if rank == 0 {
                    mbarrier::arrive_expect_tx(full(s), CLUSTER * (A_BOX.bytes() + B_BOX.bytes()));
                }
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
            let d = tmem.offset(0, acc.stage * WAVES * BN);
            for kb in 0..nk {
                mbarrier::wait(full(st.stage), st.phase);
                tcgen05::fence_after_thread_sync();
                let s = st.stage;
                for k in 0..BK / 16 {
                    let b = SmemDesc::k_major_128b(base + SMEM.b_stage(s)).advance(32 * k);
                    for w in 0..WAVES {
                        // Wave w's rows start 128 rows (16 swizzle atoms) into the A stage.
                        let a = SmemDesc::k_major_128b(base + SMEM.a_stage(s) + w * WAVE_M * 128).advance(32 * k);
                        tcgen05::mma_f16_ss::<CLUSTER>(d.offset(0, w * BN), a, b, IDESC, (kb + k != 0) as u32);
                    }
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

            // BN / BOX_COLS is even, so box j % 2 also alternates from one wave and tile to the next.
            for w in 0..WAVES {
                for j in 0..BN / BOX_COLS {
                    let staging = Staging(base + SMEM.c + (j % C_BUFFERS) * C_BOX.bytes());
                    let last = w == WAVES - 1 && j == BN / BOX_COLS - 1;
                    if issuer {
                        tma::wait_group_read::<{ C_BUFFERS - 1 }>();
                    }
                    bar::sync(EPILOGUE_BAR, EPILOGUE_THREADS);
                    super::stage_cols(tmem.offset(0, (acc.stage * WAVES + w) * BN + j * BOX_COLS), staging, warp, lane);
                    // The staged bytes are read by the TMA engine (async proxy); the accumulator
                    // is released after its last columns are read.
                    fence::proxy_async_shared_cta();
                    if last {
                        tcgen05::fence_before_thread_sync();
                    }
                    bar::sync(EPILOGUE_BAR, EPILOGUE_THREADS);
                    if issuer {
                        tma::store_2d(map_c, (n0 + j * BOX_COLS) as i32, (m0 + w * WAVE_M) as i32, staging.0);
                        tma::commit_group();
                        if last {
                            mbarrier::arrive_cluster(epilogue(acc.stage), 0);
                        }
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
