//! Hopper v6 — TMA-store epilogue: C leaves through swizzled shared-memory staging and
//! `cp.async.bulk.tensor` stores instead of scattered 4-byte stores from registers.
//!
//! v5's persistent clusters, with a new epilogue. Each consumer warpgroup cuts its 64×256
//! fragment into four 64×64 boxes. For each, it converts to bf16 into one of its two staging
//! buffers, laid out with the 128-byte swizzle (conflict-free for the wgmma fragment: the eight
//! rows a warp writes at once land in eight different bank groups), fences the writes for the
//! async proxy, meets on its named barrier, and one thread issues the TMA store and commits it as
//! a bulk group. Before a buffer is rewritten, that thread waits until at most one group is still
//! reading (`wait_group.read 1`): one store is always in flight behind the next box's conversion,
//! and it runs on into the next tile's mainloop. The staging work needs more than the 168
//! registers a thread of a 384-thread CTA gets, so the producer warpgroup gives most of its own
//! back (`setmaxnreg.dec` to 40) and the consumers take them (`setmaxnreg.inc` to 232).
//!
//! ```text
//! consumer wg : for box j in 0..4: [leader] wait_group.read 1 → bar(wg) → st.shared bf16 pairs into buf j%2
//!               → fence.proxy.async → bar(wg) → [leader] TMA store buf → commit_group
//! ```
//!
//! Measured on an H200 at 8192³ (2026-12-01, commit 3da6262, paired with
//! cuBLAS in one process): 682 TFLOP/s, 1.019× cuBLAS (1.001× when first
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
/// Each consumer stores its 64×256 fragment as four 64×64 boxes through two staging buffers.
const C_BOX: TmaBox = TmaBox::new(crate::staging::BOX_COLS, 64, Swizzle::B128);
const SMEM: SmemPlan = SmemPlan::new(STAGES, BM * BK * 2, BN * BK * 2, CONSUMERS * 2 * C_BOX.bytes(), 2 * STAGES);

pub const SPEC: KernelSpec = KernelSpec {
    name: "hopper_v6",
    version: 6,
    adds: "TMA-store epilogue via swizzled double-buffered staging",
    tile_m: BM,
    tile_n: BN,
    group_m: GROUP_M,
    threads: THREADS,
    cluster: CLUSTER,
    grid: Grid::Persistent,
    smem_bytes: SMEM.bytes,
    a_box: A_BOX,
    b_box: B_BOX,
    c_box: Some(C_BOX),
    ..super::BASE
};

#[cfg(hopper)]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn hopper_v6(
    _a: crate::args::TensorMapParam,
    _b: crate::args::TensorMapParam,
    _c: crate::args::TensorMapParam,
    args: crate::args::GemmArgs,
) {
    use crate::desc::wgmma::SmemDesc;
    use crate::pipeline::PipelineState;
    use crate::ptx::mbarrier::{self, Barrier};
    use crate::ptx::wgmma::{self, Fragment};
    use crate::ptx::{bar, cluster, cvt, fence, setmaxnreg, smem, sreg, tma};
    use crate::staging::Staging;

    let map_a = crate::tensor_map_param!(hopper_v6, 0);
    let map_b = crate::tensor_map_param!(hopper_v6, 1);
    let map_c = crate::tensor_map_param!(hopper_v6, 2);
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
        setmaxnreg::dec::<40>();
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
        setmaxnreg::inc::<232>();
        let c = wg - 1;
        let leader = tid.is_multiple_of(128);
        let (warp, lane) = ((tid % 128) / 32, tid % 32);
        let staging = |buf: u32| Staging(base + SMEM.c + (2 * c + buf) * C_BOX.bytes());
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

            for j in 0..BN / C_BOX.inner {
                let buf = staging(j % 2);
                if leader {
                    // The store issued from this buffer two boxes ago has read it.
                    tma::wait_group_read::<1>();
                }
                bar::sync(1 + c, 128);
                acc.for_each_pair(|p, lo, hi| {
                    let col = 8 * (p / 2) + 2 * (lane % 4);
                    if col / C_BOX.inner == j {
                        buf.store_b32(16 * warp + lane / 4 + 8 * (p % 2), col % C_BOX.inner, cvt::rn_bf16x2_f32(lo, hi));
                    }
                });
                fence::proxy_async_shared_cta();
                bar::sync(1 + c, 128);
                if leader {
                    tma::store_2d(map_c, (n0 + j * C_BOX.inner) as i32, (m0 + 64 * c) as i32, buf.0);
                    tma::commit_group();
                }
            }
            idx += stride;
        }
        if leader {
            // Shared memory must outlive the stores still reading it.
            tma::wait_group_read::<0>();
        }
    }
    // The peer may still arrive on this CTA's barriers until it is done.
    cluster::sync();
}
