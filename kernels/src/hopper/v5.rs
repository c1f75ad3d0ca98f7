//! Hopper v5 — persistent: one CTA per SM loops over tiles, and the producer loads the next
//! tile while the consumers store this one.
//!
//! v4's clusters, roles and ring, launched as many clusters as fit on the device at once (the
//! host sizes the grid from the occupancy API). Each cluster walks the grouped tile order with a
//! stride of the cluster count. The producer's and consumers' `PipelineState`s carry stage and
//! phase from one tile to the next, so the producer never stops at a tile boundary: while the
//! consumers convert and store tile `i`, it is already filling the ring with tile `i + 1`. The
//! first MMA of each tile discards the old accumulator (`scale_d = 0`); the last stage of a tile
//! is released once all of its MMAs have retired.
//!
//! ```text
//! producer : for each tile: for each K slice: wait(empty[s]) → expect_tx → TMA A, B/2 multicast
//! consumers: for each tile: for each K slice: wait(full[s]) → 4 × wgmma → wait_group 1 → release s-1
//!                           wait_group 0 → release last → store C ──(overlaps the producer's next tile)
//! ```
//!
//! Measured on an H200 at 8192³ (2026-12-01, commit 3da6262, paired with
//! cuBLAS in one process): 650 TFLOP/s, 0.974× cuBLAS (0.972× when first
//! measured, 2026-11-29).
use crate::spec::{Grid, KernelSpec, SmemPlan, Swizzle, TmaBox};

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
    name: "hopper_v5",
    version: 5,
    adds: "persistent clusters, epilogue overlaps the next tile's loads",
    tile_m: BM,
    tile_n: BN,
    group_m: GROUP_M,
    threads: THREADS,
    cluster: CLUSTER,
    grid: Grid::Persistent,
    smem_bytes: SMEM.bytes,
    a_box: A_BOX,
    b_box: B_BOX,
    ..super::BASE
};

#[cfg(hopper)]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn hopper_v5(
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

    let map_a = crate::tensor_map_param!(hopper_v5, 0);
    let map_b = crate::tensor_map_param!(hopper_v5, 1);
    let base = smem::base();
    let full = |s: u32| Barrier(base + SMEM.barrier(s));
    let empty = |s: u32| Barrier(base + SMEM.barrier(STAGES + s));
    let tid = sreg::tid_x();
    let wg = tid / 128;

    let rank = sreg::cluster_ctarank();
    let sched = SPEC.scheduler(args.m, args.n);
    let tile = |idx: u32| {
        let (tm, tn) = sched.tile(idx);
        ((tm * CLUSTER + rank) * BM, tn * BN)
    };
    let (first, stride) = (sreg::clusterid_x(), sreg::nclusterid_x());
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
            let mut idx = first;
            while idx < sched.num_tiles() {
                let (m0, n0) = tile(idx);
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
                idx += stride;
            }
        }
    } else {
        let c = wg - 1;
        let leader = tid.is_multiple_of(128);
        let mut acc: [f32; 128] = Fragment::zeroed();
        let mut read = PipelineState::<STAGES>::new();
        let mut idx = first;
        while idx < sched.num_tiles() {
            let (m0, n0) = tile(idx);
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
            for cta in 0..CLUSTER {
                mbarrier::arrive_cluster_if(empty(prev), cta, leader);
            }

            super::store_fragment(&acc, &args, m0 + 64 * c, n0, tid % 128);
            idx += stride;
        }
    }
    // The peer may still arrive on this CTA's barriers until it is done.
    cluster::sync();
}
