//! Blackwell v4 — CTA pairs: a cluster of two CTAs computes a 256×256 tile with one
//! `cta_group::2` MMA stream issued by rank 0, six stages deep.
//!
//! Each CTA still owns 128 rows of C and loads its own 128 rows of A, but only half of the 256
//! columns of B: rank `r` loads B rows `128r..128r + 128`. Rank 0's MMA thread issues
//! `tcgen05.mma.cta_group::2` with M = 256: the tensor cores read A and B at the same
//! shared-memory offsets in both CTAs and write each CTA's 128 rows × 256 columns into that CTA's
//! tensor memory (allocated jointly, `tcgen05.alloc.cta_group::2`). So that one thread can wait
//! for both CTAs' data, the load barrier `full[s]` of rank 0 counts for both: it expects two
//! arrivals, and each producer arrives on it with its own bytes
//! (`mbarrier.arrive.expect_tx.shared::cluster`, the address mapped to rank 0 with `mapa`) and
//! points its TMA boxes' `complete_tx` at it (`.cta_group::2`). The MMA thread's commits are
//! multicast (mask 0b11) so `empty[s]` and `mainloop` arrive in both CTAs. A cluster is one
//! scheduling unit of two M-adjacent tiles (the pair shares its B tile), units walking N along
//! a row of the output: clusters running together share their A rows in L2.
//!
//! ```text
//! warp 1, all (both) : tcgen05.alloc.cta_group::2(256 cols) → slot; cluster barrier
//! warp 0, t0 (both)  : wait(empty[s]) → arrive_expect_tx(rank 0's full[s]) → TMA A, TMA B ─┐
//! warp 1, t0 (rank 0): wait(full[s]) ◄ 2 arrivals + both CTAs' bytes ──────────────────────┘
//!                      4 × tcgen05.mma.cta_group::2 → commit multicast 0b11 (empty[s] ×2)
//!                      … last slice → commit multicast 0b11 (mainloop ×2) ─┐
//! all (both)         : wait(mainloop, 0) ◄──────────────────────────────────┘ → tcgen05.ld → st.global
//!                      cluster barrier → tcgen05.dealloc.cta_group::2
//! ```
//!
//! Not yet run on Blackwell hardware. The seed's GB300 number for this version at 8192³: 1678.14 TFLOP/s (cuBLAS 1963.6).
use crate::desc::tcgen05::InstrDesc;
use crate::spec::{KernelSpec, SmemPlan, Swizzle, TmaBox};

const BM: u32 = 128;
const BN: u32 = 256;
const BK: u32 = 64;
const STAGES: u32 = 6;
/// CTAs per cluster: one CTA pair, `cta_group::2`.
const CLUSTER: u32 = 2;
/// Commits arrive in both CTAs of the pair.
const PAIR_MASK: u16 = 0b11;
const THREADS: u32 = 128;
/// f32 accumulator columns: one per output column.
const TMEM_COLS: u32 = BN;
/// One 128B-swizzled box per operand per stage: the swizzle spans all 64 bf16 of the slice.
const A_BOX: TmaBox = TmaBox::new(BK, BM, Swizzle::B128);
/// Each CTA of the pair loads half of the N tile of B.
const B_BOX: TmaBox = TmaBox::new(BK, BN / CLUSTER, Swizzle::B128);
/// Barriers: `full[s]` and `empty[s]` for each stage, then `mainloop`.
pub const SMEM: SmemPlan = SmemPlan::new(STAGES, BM * BK * 2, (BN / CLUSTER) * BK * 2, 0, 2 * STAGES + 1);
/// M counts both CTAs' rows.
const IDESC: InstrDesc = InstrDesc::bf16_f32(BM * CLUSTER, BN);

pub const SPEC: KernelSpec = KernelSpec {
    name: "blackwell_v4",
    version: 4,
    adds: "CTA pairs: cta_group::2 MMA from rank 0, shared load barrier, multicast commits, 6 stages",
    tile_m: BM,
    tile_n: BN,
    threads: THREADS,
    cluster: CLUSTER,
    smem_bytes: SMEM.bytes,
    a_box: A_BOX,
    b_box: B_BOX,
    ..super::BASE
};

#[cfg(blackwell)]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn blackwell_v4(
    _a: crate::args::TensorMapParam,
    _b: crate::args::TensorMapParam,
    _c: crate::args::TensorMapParam,
    args: crate::args::GemmArgs,
) {
    use crate::desc::tcgen05::{SmemDesc, TmemAddr};
    use crate::pipeline::PipelineState;
    use crate::ptx::mbarrier::{self, Barrier};
    use crate::ptx::{cluster, fence, smem, sreg, tcgen05, tma};

    let map_a = crate::tensor_map_param!(blackwell_v4, 0);
    let map_b = crate::tensor_map_param!(blackwell_v4, 1);
    let base = smem::base();
    let full = |s: u32| Barrier::at(base + SMEM.barrier(0), s);
    let empty = |s: u32| Barrier::at(base + SMEM.barrier(STAGES), s);
    let mainloop = Barrier(base + SMEM.barrier(2 * STAGES));
    let tid = sreg::tid_x();
    let (warp, lane) = (tid / 32, tid % 32);

    let rank = sreg::cluster_ctarank();

    let (tm, tn) = SPEC.scheduler(args.m, args.n).tile(sreg::clusterid_x());
    let (m0, n0) = (tm * BM * CLUSTER + rank * BM, tn * BN);

    if tid == 0 {
        for s in 0..STAGES {
            // Both producers arrive on rank 0's full[s]; rank 1's stays unused.
            mbarrier::init(full(s), CLUSTER);
            mbarrier::init(empty(s), 1);
        }
        mbarrier::init(mainloop, 1);
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
        for kb in 0..nk {
            mbarrier::wait(empty(st.stage), st.phase);
            let s = st.stage;
            let k = (kb * BK) as i32;
            mbarrier::arrive_expect_tx_relaxed_cluster(full(s), 0, A_BOX.bytes() + B_BOX.bytes());
            tma::load_2d_cta_group2(base + SMEM.a_stage(s), map_a, k, m0 as i32, full(s), 0);
            tma::load_2d_cta_group2(base + SMEM.b_stage(s), map_b, k, (n0 + rank * B_BOX.outer) as i32, full(s), 0);
            st.advance();
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
        for kb in 0..nk {
            mbarrier::wait(full(st.stage), st.phase);
            tcgen05::fence_after_thread_sync();
            let s = st.stage;
            for k in 0..BK / 16 {
                let a = SmemDesc::k_major_128b(base + SMEM.a_stage(s)).advance(32 * k);
                let b = SmemDesc::k_major_128b(base + SMEM.b_stage(s)).advance(32 * k);
                tcgen05::mma_f16_ss::<CLUSTER>(tmem, a, b, IDESC, (kb + k != 0) as u32);
            }
            tcgen05::commit_multicast::<CLUSTER>(empty(s), PAIR_MASK);
            st.advance();
        }
        tcgen05::commit_multicast::<CLUSTER>(mainloop, PAIR_MASK);
    }
    mbarrier::wait(mainloop, 0);
    tcgen05::fence_after_thread_sync();

    super::store_rows(tmem, BN, &args, m0, n0, warp, lane);

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
