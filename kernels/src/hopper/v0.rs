//! Hopper v0 — the baseline: TMA loads, `wgmma`, one output tile per CTA, no overlap.
//!
//! Each CTA computes a 128×256 tile of C with two warpgroups; warpgroup `w` owns rows
//! `64w..64w + 64` (`wgmma m64n256k16`, 128 f32 accumulators per thread). For each 64-wide slice
//! of K, thread 0 issues sixteen non-swizzled TMA boxes 8 elements (16 bytes) wide — A and B land
//! as columns of 8×16-byte core matrices, the layout `wgmma` reads without a swizzle — and every
//! thread waits on the one mbarrier, issues four k16 MMAs, waits for them, and meets the CTA
//! before the next load overwrites the tiles. The epilogue converts to bf16 and stores straight
//! from registers.
//!
//! ```text
//! thread 0 : arrive_expect_tx(full) → 8 × TMA A, 8 × TMA B ─┐ (complete_tx)
//! all      : wait(full, phase) ◄───────────────────────────┘
//!            wgmma.fence → 4 × mma_async → commit → wait_group 0 → barrier.sync → next K slice
//! ```
//!
//! Measured on an H200 at 8192³ (2026-12-01, commit 3da6262, paired with
//! cuBLAS in one process): 185 TFLOP/s, 0.259× cuBLAS (0.256× when first
//! measured, 2026-11-29).
use crate::spec::{KernelSpec, SmemPlan, Swizzle, TmaBox};

const BM: u32 = 128;
const BN: u32 = 256;
const BK: u32 = 64;
const THREADS: u32 = 256;
const A_BOX: TmaBox = TmaBox::new(8, BM, Swizzle::None);
const B_BOX: TmaBox = TmaBox::new(8, BN, Swizzle::None);
const SMEM: SmemPlan = SmemPlan::new(1, BM * BK * 2, BN * BK * 2, 0, 1);

pub const SPEC: KernelSpec = KernelSpec {
    name: "hopper_v0",
    version: 0,
    adds: "TMA + wgmma, one tile per CTA, serial",
    tile_m: BM,
    tile_n: BN,
    threads: THREADS,
    smem_bytes: SMEM.bytes,
    a_box: A_BOX,
    b_box: B_BOX,
    ..super::BASE
};

#[cfg(hopper)]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn hopper_v0(
    _a: crate::args::TensorMapParam,
    _b: crate::args::TensorMapParam,
    _c: crate::args::TensorMapParam,
    args: crate::args::GemmArgs,
) {
    use crate::desc::wgmma::SmemDesc;
    use crate::ptx::mbarrier::{self, Barrier};
    use crate::ptx::wgmma::{self, Fragment};
    use crate::ptx::{bar, fence, smem, sreg, tma};

    let map_a = crate::tensor_map_param!(hopper_v0, 0);
    let map_b = crate::tensor_map_param!(hopper_v0, 1);
    let base = smem::base();
    let full = Barrier(base + SMEM.barrier(0));
    let tid = sreg::tid_x();
    let wg = tid / 128;

    let (tm, tn) = SPEC.scheduler(args.m, args.n).tile(sreg::ctaid_x());
    let (m0, n0) = (tm * BM, tn * BN);

    if tid == 0 {
        mbarrier::init(full, 1);
        fence::mbarrier_init_release_cluster();
    }
    bar::sync_all();

    let mut acc: [f32; 128] = Fragment::zeroed();
    let mut phase = 0;
    for kb in 0..args.k.div_ceil(BK) {
        if tid == 0 {
            mbarrier::arrive_expect_tx(full, (BK / 8) * (A_BOX.bytes() + B_BOX.bytes()));
            for c in 0..BK / 8 {
                let k = (kb * BK + c * 8) as i32;
                tma::load_2d(base + SMEM.a_stage(0) + c * A_BOX.bytes(), map_a, k, m0 as i32, full);
                tma::load_2d(base + SMEM.b_stage(0) + c * B_BOX.bytes(), map_b, k, n0 as i32, full);
            }
        }
        mbarrier::wait(full, phase);
        phase ^= 1;

        wgmma::fence();
        for s in 0..BK / 16 {
            // A k16 step spans two 8-wide K chunks; this warpgroup's rows start 64 rows in.
            let a = SmemDesc::k_major_interleaved(base + SMEM.a_stage(0) + 2 * s * A_BOX.bytes() + wg * 64 * 16, A_BOX.bytes());
            let b = SmemDesc::k_major_interleaved(base + SMEM.b_stage(0) + 2 * s * B_BOX.bytes(), B_BOX.bytes());
            wgmma::mma_async_m64n256k16::<0, 0>(&mut acc, a, b, (kb + s != 0) as u32);
        }
        wgmma::commit_group();
        acc.wait_group::<0>();
        bar::sync_all();
    }

    super::store_fragment(&acc, &args, m0 + 64 * wg, n0, tid % 128);
}
