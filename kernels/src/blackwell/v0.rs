//! Blackwell v0 — the baseline: non-swizzled TMA loads, `tcgen05.mma` into tensor memory, one
//! output tile per CTA, load and compute fully serial.
//!
//! Each CTA computes a 128×256 tile of C, 256 of K at a time. Thread 0 does the whole mainloop:
//! it issues thirty-two non-swizzled TMA boxes 8 elements (16 bytes) wide per operand — A and B
//! land as columns of 8×16-byte core matrices, the K-major layout `tcgen05.mma` reads without a
//! swizzle — waits on the one mbarrier, issues sixteen m128n256k16 MMAs (one per 16-wide K slice)
//! accumulating into 256 columns of tensor memory, commits them to the same mbarrier and waits
//! again before the next load may overwrite the tiles. Then the four warps read the accumulator
//! back (`tcgen05.ld`, warp `w` its lanes 32w..32w + 31 = rows), convert to bf16 and store each
//! row straight to C.
//!
//! ```text
//! warp 1   : tcgen05.alloc(256 cols) → slot
//! thread 0 : arrive_expect_tx(mbar) → 32 × TMA A, 32 × TMA B ─┐ complete_tx
//!            wait(mbar, phase) ◄─────────────────────────────┘
//!            16 × tcgen05.mma → commit(mbar) ─┐ arrive
//!            wait(mbar, phase) ◄──────────────┘ → next K slice
//! all      : barrier.sync → tcgen05.ld → bf16 → st.global
//! ```
//!
//! Not yet run on Blackwell hardware. The seed's GB300 number for this version at 8192³: 314.655 TFLOP/s (cuBLAS 1963.6).
use crate::desc::tcgen05::InstrDesc;
use crate::spec::{KernelSpec, SmemPlan, Swizzle, TmaBox};

const BM: u32 = 128;
const BN: u32 = 256;
const BK: u32 = 256;
const THREADS: u32 = 128;
/// f32 accumulator columns: one per output column.
const TMEM_COLS: u32 = BN;
const A_BOX: TmaBox = TmaBox::new(8, BM, Swizzle::None);
const B_BOX: TmaBox = TmaBox::new(8, BN, Swizzle::None);
pub const SMEM: SmemPlan = SmemPlan::new(1, BM * BK * 2, BN * BK * 2, 0, 1);
const IDESC: InstrDesc = InstrDesc::bf16_f32(BM, BN);

pub const SPEC: KernelSpec = KernelSpec {
    name: "blackwell_v0",
    version: 0,
    adds: "TMA + tcgen05.mma into tensor memory, one tile per CTA, serial",
    tile_m: BM,
    tile_n: BN,
    threads: THREADS,
    smem_bytes: SMEM.bytes,
    a_box: A_BOX,
    b_box: B_BOX,
    ..super::BASE
};

#[cfg(blackwell)]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn blackwell_v0(
    _a: crate::args::TensorMapParam,
    _b: crate::args::TensorMapParam,
    _c: crate::args::TensorMapParam,
    args: crate::args::GemmArgs,
) {
    use crate::desc::tcgen05::{SmemDesc, TmemAddr};
    use crate::ptx::mbarrier::{self, Barrier};
    use crate::ptx::{bar, fence, smem, sreg, tcgen05, tma};

    let map_a = crate::tensor_map_param!(blackwell_v0, 0);
    let map_b = crate::tensor_map_param!(blackwell_v0, 1);
    let base = smem::base();
    let mbar = Barrier(base + SMEM.barrier(0));
    let tid = sreg::tid_x();
    let (warp, lane) = (tid / 32, tid % 32);

    let (tm, tn) = SPEC.scheduler(args.m, args.n).tile(sreg::ctaid_x());
    let (m0, n0) = (tm * BM, tn * BN);

    if tid == 0 {
        mbarrier::init(mbar, 1);
        fence::mbarrier_init_release_cluster();
    }
    if warp == 1 {
        tcgen05::alloc::<1>(base + SMEM.tmem_slot, TMEM_COLS);
        tcgen05::relinquish_alloc_permit::<1>();
        tcgen05::fence_before_thread_sync();
    }
    bar::sync_all();
    // The slot is read only after the barrier that follows the allocation.
    tcgen05::fence_after_thread_sync();
    let tmem = TmemAddr(smem::ld_b32(base + SMEM.tmem_slot));

    if tid == 0 {
        let mut phase = 0;
        for kb in 0..args.k.div_ceil(BK) {
            mbarrier::arrive_expect_tx(mbar, (BK / 8) * (A_BOX.bytes() + B_BOX.bytes()));
            for c in 0..BK / 8 {
                let k = (kb * BK + c * 8) as i32;
                tma::load_2d(base + SMEM.a_stage(0) + c * A_BOX.bytes(), map_a, k, m0 as i32, mbar);
                tma::load_2d(base + SMEM.b_stage(0) + c * B_BOX.bytes(), map_b, k, n0 as i32, mbar);
            }
            mbarrier::wait(mbar, phase);
            phase ^= 1;
            tcgen05::fence_after_thread_sync();

            for s in 0..BK / 16 {
                // A k16 step spans two 8-wide K chunks.
                let a = SmemDesc::k_major_interleaved(base + SMEM.a_stage(0) + 2 * s * A_BOX.bytes(), A_BOX.bytes());
                let b = SmemDesc::k_major_interleaved(base + SMEM.b_stage(0) + 2 * s * B_BOX.bytes(), B_BOX.bytes());
                tcgen05::mma_f16_ss::<1>(tmem, a, b, IDESC, (kb + s != 0) as u32);
            }
            tcgen05::commit::<1>(mbar);
            mbarrier::wait(mbar, phase);
            phase ^= 1;
        }
        tcgen05::fence_before_thread_sync();
    }
    bar::sync_all();
    tcgen05::fence_after_thread_sync();

    super::store_rows(tmem, BN, &args, m0, n0, warp, lane);

    tcgen05::fence_before_thread_sync();
    bar::sync_all();
    if warp == 1 {
        tcgen05::fence_after_thread_sync();
        tcgen05::dealloc::<1>(tmem, TMEM_COLS);
    }
}
