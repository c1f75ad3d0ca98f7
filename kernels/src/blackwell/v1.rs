//! Blackwell v1 — 128-byte swizzle: one TMA box per operand per 64-wide K slice, read by
//! swizzled descriptors in a 4×4 MMA loop.
//!
//! Same tile (128×256, K slices of 256), single mbarrier and serial loop as v0. The data movement
//! is reworked so the shared-memory layout is the one `tcgen05.mma` reads best: TMA writes each
//! operand with `CU_TENSOR_MAP_SWIZZLE_128B` as 128-byte rows (64 of K) in 1024-byte atoms of 8
//! rows, so four boxes per operand replace v0's thirty-two, and the descriptors name the same
//! swizzle (mode 2 in bits 61–63, stride 1024 between 8-row groups, leading offset unused). The
//! MMA loop becomes 4×4: `k1` picks the 64-wide box, `k2` the 16-wide slice inside it (+32 bytes,
//! the hardware swizzles the address it computes).
//!
//! ```text
//! warp 1   : tcgen05.alloc(256 cols) → slot
//! thread 0 : arrive_expect_tx(mbar) → 4 × TMA A (64×128), 4 × TMA B (64×256) ─┐ complete_tx
//!            wait(mbar, phase) ◄──────────────────────────────────────────────┘
//!            4 × 4 × tcgen05.mma → commit(mbar) ─┐ arrive
//!            wait(mbar, phase) ◄─────────────────┘ → next K slice
//! all      : barrier.sync → tcgen05.ld → bf16 → st.global
//! ```
//!
//! Not yet run on Blackwell hardware. The seed's GB300 number for this version at 8192³: 818.752 TFLOP/s (cuBLAS 1963.6).
use crate::desc::tcgen05::InstrDesc;
use crate::spec::{KernelSpec, SmemPlan, Swizzle, TmaBox};

const BM: u32 = 128;
const BN: u32 = 256;
const BK: u32 = 256;
const THREADS: u32 = 128;
/// f32 accumulator columns: one per output column.
const TMEM_COLS: u32 = BN;
/// The 128-byte swizzle spans 64 bf16 of K: one box per operand per 64-wide slice.
const BOX_K: u32 = 64;
const A_BOX: TmaBox = TmaBox::new(BOX_K, BM, Swizzle::B128);
const B_BOX: TmaBox = TmaBox::new(BOX_K, BN, Swizzle::B128);
pub const SMEM: SmemPlan = SmemPlan::new(1, BM * BK * 2, BN * BK * 2, 0, 1);
const IDESC: InstrDesc = InstrDesc::bf16_f32(BM, BN);

pub const SPEC: KernelSpec = KernelSpec {
    name: "blackwell_v1",
    version: 1,
    adds: "128B-swizzled TMA boxes and descriptors, 4×4 MMA loop",
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
pub unsafe extern "ptx-kernel" fn blackwell_v1(
    _a: crate::args::TensorMapParam,
    _b: crate::args::TensorMapParam,
    _c: crate::args::TensorMapParam,
    args: crate::args::GemmArgs,
) {
    use crate::desc::tcgen05::{SmemDesc, TmemAddr};
    use crate::ptx::mbarrier::{self, Barrier};
    use crate::ptx::{bar, fence, smem, sreg, tcgen05, tma};

    let map_a = crate::tensor_map_param!(blackwell_v1, 0);
    let map_b = crate::tensor_map_param!(blackwell_v1, 1);
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
            mbarrier::arrive_expect_tx(mbar, (BK / BOX_K) * (A_BOX.bytes() + B_BOX.bytes()));
            for k1 in 0..BK / BOX_K {
                let k = (kb * BK + k1 * BOX_K) as i32;
                tma::load_2d(base + SMEM.a_stage(0) + k1 * A_BOX.bytes(), map_a, k, m0 as i32, mbar);
                tma::load_2d(base + SMEM.b_stage(0) + k1 * B_BOX.bytes(), map_b, k, n0 as i32, mbar);
            }
            mbarrier::wait(mbar, phase);
            phase ^= 1;
            tcgen05::fence_after_thread_sync();

            for k1 in 0..BK / BOX_K {
                for k2 in 0..BOX_K / 16 {
                    let a = SmemDesc::k_major_128b(base + SMEM.a_stage(0) + k1 * A_BOX.bytes()).advance(32 * k2);
                    let b = SmemDesc::k_major_128b(base + SMEM.b_stage(0) + k1 * B_BOX.bytes()).advance(32 * k2);
                    tcgen05::mma_f16_ss::<1>(tmem, a, b, IDESC, (kb + k1 + k2 != 0) as u32);
                }
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
