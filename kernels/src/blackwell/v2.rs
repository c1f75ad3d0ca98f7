//! Blackwell v2 — a two-stage shared-memory pipeline: the next K slice loads while the tensor
//! cores work on this one.
//!
//! Same tile, swizzled boxes and single issuing thread as v1, but the A/B tiles are
//! double-buffered: K slices of 128 (two 64-wide boxes per operand, so two stages fit in shared
//! memory) alternate between stages 0 and 1, each with its own load barrier `full[s]`, and one
//! `mma` barrier tracks the MMAs. The loop first loads STAGES − 1 slices ahead, then on every
//! iteration issues the load of slice `kb + 1` before waiting for slice `kb` and computing it:
//! that TMA overlaps the MMAs. The stage it overwrites was read by the MMAs of slice `kb − 1`,
//! whose completion the previous iteration waited for: one MMA group is outstanding at a time.
//!
//! ```text
//! warp 1   : tcgen05.alloc(256 cols) → slot
//! thread 0 : load(0) ;  for kb:  load(kb + 1) into the other stage
//!              load(i) = arrive_expect_tx(full[i % 2]) → 2 × TMA A, 2 × TMA B ─┐ complete_tx
//!            wait(full[kb % 2], phase) ◄──────────────────────────────────────┘
//!            2 × 4 × tcgen05.mma → commit(mma) ─┐ arrive
//!            wait(mma, phase) ◄─────────────────┘ → next kb
//! all      : barrier.sync → tcgen05.ld → bf16 → st.global
//! ```
//!
//! Not yet run on Blackwell hardware. The seed's GB300 number for this version at 8192³: 1213.041 TFLOP/s (cuBLAS 1963.6).
use crate::desc::tcgen05::InstrDesc;
use crate::spec::{KernelSpec, SmemPlan, Swizzle, TmaBox};

const BM: u32 = 128;
const BN: u32 = 256;
const BK: u32 = 128;
const STAGES: u32 = 2;
const THREADS: u32 = 128;
/// f32 accumulator columns: one per output column.
const TMEM_COLS: u32 = BN;
/// The 128-byte swizzle spans 64 bf16 of K: one box per operand per 64-wide slice.
const BOX_K: u32 = 64;
const A_BOX: TmaBox = TmaBox::new(BOX_K, BM, Swizzle::B128);
const B_BOX: TmaBox = TmaBox::new(BOX_K, BN, Swizzle::B128);
/// Barriers: `full[s]` for each stage, then `mma`.
pub const SMEM: SmemPlan = SmemPlan::new(STAGES, BM * BK * 2, BN * BK * 2, 0, STAGES + 1);
const IDESC: InstrDesc = InstrDesc::bf16_f32(BM, BN);

pub const SPEC: KernelSpec = KernelSpec {
    name: "blackwell_v2",
    version: 2,
    adds: "two shared-memory stages with per-stage barriers",
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
pub unsafe extern "ptx-kernel" fn blackwell_v2(
    _a: crate::args::TensorMapParam,
    _b: crate::args::TensorMapParam,
    _c: crate::args::TensorMapParam,
    args: crate::args::GemmArgs,
) {
    use crate::desc::tcgen05::{SmemDesc, TmemAddr};
    use crate::pipeline::PipelineState;
    use crate::ptx::mbarrier::{self, Barrier};
    use crate::ptx::{bar, fence, smem, sreg, tcgen05, tma};

    let map_a = crate::tensor_map_param!(blackwell_v2, 0);
    let map_b = crate::tensor_map_param!(blackwell_v2, 1);
    let base = smem::base();
    let full = |s: u32| Barrier::at(base + SMEM.barrier(0), s);
    let mma = Barrier(base + SMEM.barrier(STAGES));
    let tid = sreg::tid_x();
    let (warp, lane) = (tid / 32, tid % 32);

    let (tm, tn) = SPEC.scheduler(args.m, args.n).tile(sreg::ctaid_x());
    let (m0, n0) = (tm * BM, tn * BN);

    if tid == 0 {
        for s in 0..STAGES {
            mbarrier::init(full(s), 1);
        }
        mbarrier::init(mma, 1);
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
        let nk = args.k.div_ceil(BK);
        let load = |kb: u32, s: u32| {
            mbarrier::arrive_expect_tx(full(s), (BK / BOX_K) * (A_BOX.bytes() + B_BOX.bytes()));
            for k1 in 0..BK / BOX_K {
                let k = (kb * BK + k1 * BOX_K) as i32;
                tma::load_2d(base + SMEM.a_stage(s) + k1 * A_BOX.bytes(), map_a, k, m0 as i32, full(s));
                tma::load_2d(base + SMEM.b_stage(s) + k1 * B_BOX.bytes(), map_b, k, n0 as i32, full(s));
            }
        };
        let mut loading = PipelineState::<STAGES>::new();
        let mut reading = PipelineState::<STAGES>::new();
        let mut mma_phase = 0;
        for kb in 0..(STAGES - 1).min(nk) {
            load(kb, loading.stage);
            loading.advance();
        }
        for kb in 0..nk {
            if kb + STAGES - 1 < nk {
                load(kb + STAGES - 1, loading.stage);
                loading.advance();
            }
            mbarrier::wait(full(reading.stage), reading.phase);
            tcgen05::fence_after_thread_sync();

            let s = reading.stage;
            for k1 in 0..BK / BOX_K {
                for k2 in 0..BOX_K / 16 {
                    let a = SmemDesc::k_major_128b(base + SMEM.a_stage(s) + k1 * A_BOX.bytes()).advance(32 * k2);
                    let b = SmemDesc::k_major_128b(base + SMEM.b_stage(s) + k1 * B_BOX.bytes()).advance(32 * k2);
                    tcgen05::mma_f16_ss::<1>(tmem, a, b, IDESC, (kb + k1 + k2 != 0) as u32);
                }
            }
            tcgen05::commit::<1>(mma);
            mbarrier::wait(mma, mma_phase);
            mma_phase ^= 1;
            reading.advance();
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
