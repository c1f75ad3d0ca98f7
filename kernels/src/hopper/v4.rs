//! Hopper v4 — 2-CTA clusters: the two CTAs of a cluster share B, each loading half of it once
//! for both with TMA multicast.
//!
//! v3's roles and ring, in clusters of two CTAs stacked along M (tiles `2i` and `2i + 1` of one
//! tile column). Both need the same 256×64 slice of B per stage: CTA `r` loads rows
//! `128r..128r + 128` of it and multicasts them into the same stage of both CTAs, so B crosses
//! L2 once per cluster instead of once per CTA. Each `full` barrier therefore expects its own A
//! box plus both B halves. A stage may be refilled only when the consumers of *both* CTAs are
//! done with it (the peer's multicast writes here too), so consumers release it on the `empty`
//! barriers of both CTAs, which count four arrivals. Barrier initialisation is made visible to
//! the cluster, and the CTAs meet at a cluster barrier before any remote arrival and again before
//! exiting, so no arrival targets a CTA that has finished. Clusters visit tiles in groups of
//! `GROUP_M` cluster rows so that concurrently running CTAs share A and B tiles in L2.
//!
//! ```text
//! producer, CTA r : wait(empty[s], ph^1) → arrive_expect_tx(full[s], A + 2 × B/2)
//!                   → TMA A (own) → TMA B half r, multicast to CTAs {0, 1} ─────┐
//! consumers       : wait(full[s], ph) ◄──────────────────────────────────────────┘
//!                   4 × wgmma → commit → wait_group 1 → arrive(empty[s-1]) in CTA 0 and CTA 1
//! ```
//!
//! Measured on an H200 at 8192³ (2026-12-01, commit 3da6262, paired with
//! cuBLAS in one process): 639 TFLOP/s, 0.951× cuBLAS (0.951× when first
//! measured, 2026-11-29).
use crate::spec::{KernelSpec, SmemPlan, Swizzle, TmaBox};

const BM: u32 = 128;
const BN: u32 = 256;
const BK: u32 = 64;
const STAGES: u32 = 4;
const CONSUMERS: u32 = 2;
const CLUSTER: u32 = 2;
const GROUP_M: u32 = 8;
const THREADS: u32 = 128 * (1 + CONSUMERS);
const A_BOX: TmaBox = TmaBox::new(BK, BM, Swizzle::B128);
const B_BOX: TmaBox = TmaBox::new(BK, BN / CLUSTER, Swizzle::B128);
const SMEM: SmemPlan = SmemPlan::new(STAGES, BM * BK * 2, BN * BK * 2, 0, 2 * STAGES);

pub const SPEC: KernelSpec = KernelSpec {
    name: "hopper_v4",
    version: 4,
    adds: "2-CTA clusters, B multicast, grouped tile order",
    tile_m: BM,
    tile_n: BN,
    group_m: GROUP_M,
    threads: THREADS,
    cluster: CLUSTER,
    smem_bytes: SMEM.bytes,
    a_box: A_BOX,
    b_box: B_BOX,
    ..super::BASE
};

#[cfg(hopper)]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn hopper_v4(
    _a: crate::args::TensorMapParam,
    _b: crate::args::TensorMapParam,
    _c: crate::args::TensorMapParam,
    args: crate::args::GemmArgs,
) {
    use crate::desc::wgmma::SmemDesc;
    use crate::pipeline::PipelineState;
    use crate::ptx::mbarrier::{self, Barrier};
    use crate::ptx::wgmma::{self, Fragment};
    use crate::ptx::{cluster, fence, smem, sreg, tma};

    let map_a = crate::tensor_map_param!(hopper_v4, 0);
    let map_b = crate::tensor_map_param!(hopper_v4, 1);
    let base = smem::base();
    let full = |s: u32| Barrier(base + SMEM.barrier(s));
    let empty = |s: u32| Barrier(base + SMEM.barrier(STAGES + s));
    let tid = sreg::tid_x();
    let wg = tid / 128;

    let rank = sreg::cluster_ctarank();
    let (tm, tn) = SPEC.scheduler(args.m, args.n).tile(sreg::clusterid_x());
    let (m0, n0) = ((tm * CLUSTER + rank) * BM, tn * BN);
    let num_kb = args.k.div_ceil(BK);
    // Each stage receives this CTA's A box and both CTAs' halves of B.
    let stage_bytes = A_BOX.bytes() + CLUSTER * B_BOX.bytes();

    if tid == 0 {
        for s in 0..STAGES {
            mbarrier::init(full(s), 1);
            mbarrier::init(empty(s), CONSUMERS * CLUSTER);
        }
        fence::mbarrier_init_release_cluster();
    }
    // Both CTAs' barriers exist before anyone multicasts or arrives remotely.
    cluster::sync();

    if wg == 0 {
        if tid == 0 {
            let mut write = PipelineState::<STAGES>::producer();
            for kb in 0..num_kb {
                let s = write.stage;
                mbarrier::wait(empty(s), write.phase);
                mbarrier::arrive_expect_tx(full(s), stage_bytes);
                tma::load_2d(base + SMEM.a_stage(s), map_a, (kb * BK) as i32, m0 as i32, full(s));
                let half = rank * B_BOX.bytes();
                let n = (n0 + rank * B_BOX.outer) as i32;
                tma::load_2d_multicast(base + SMEM.b_stage(s) + half, map_b, (kb * BK) as i32, n, full(s), 0b11);
                write.advance();
            }
        }
    } else {
        let c = wg - 1;
        let leader = tid.is_multiple_of(128);
        let mut acc: [f32; 128] = Fragment::zeroed();
        let mut read = PipelineState::<STAGES>::new();
        let mut prev = 0;
        for kb in 0..num_kb {
            let s = read.stage;
            mbarrier::wait(full(s), read.phase);

            wgmma::fence();
            for k in 0..BK / 16 {
                let a = SmemDesc::k_major_128b(base + SMEM.a_stage(s) + c * 64 * 128).advance(32 * k);
                let b = SmemDesc::k_major_128b(base + SMEM.b_stage(s)).advance(32 * k);
                wgmma::mma_async_m64n256k16::<0, 0>(&mut acc, a, b, (kb + k != 0) as u32);
            }
            wgmma::commit_group();
            // The previous slice's MMAs have retired: its stage may be refilled.
            acc.wait_group::<1>();
            for cta in 0..CLUSTER {
                mbarrier::arrive_cluster_if(empty(prev), cta, leader && kb > 0);
            }
            prev = s;
            read.advance();
        }
        acc.wait_group::<0>();

        super::store_fragment(&acc, &args, m0 + 64 * c, n0, tid % 128);
    }
    // The peer may still arrive on this CTA's barriers until it is done.
    cluster::sync();
}
