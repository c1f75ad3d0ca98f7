//! Blackwell v3 — warp specialization: a producer warp and an MMA warp run the mainloop as
//! independent halves of a four-stage pipeline.
//!
//! Same tile and swizzled boxes as v2, with K slices of 64 (one box per operand) in four stages.
//! Warp 0's first thread only loads: it waits until stage `s` is empty, then issues its TMA
//! boxes on `full[s]`. Warp 1's first thread only computes: it waits until `full[s]` says the
//! stage has landed, issues four MMAs and commits them to `empty[s]`, which the tensor cores
//! arrive on once the MMAs have read the stage. Each side carries its own position in the ring
//! ([`PipelineState`](crate::pipeline::PipelineState)) and never waits for the other except
//! through those barriers, so up to four loads and the MMAs of several stages are in flight. After the last slice the MMA
//! thread commits once more, to `mainloop`: that barrier means only "the accumulator is
//! complete", which the whole CTA waits for (phase 0, once) before the epilogue.
//!
//! ```text
//! warp 1, all: tcgen05.alloc(256 cols) → slot
//! warp 0, t0 : wait(empty[s], ph ^ 1) → arrive_expect_tx(full[s]) → TMA A, TMA B ─┐ complete_tx
//! warp 1, t0 : wait(full[s], ph) ◄────────────────────────────────────────────────┘
//!              4 × tcgen05.mma → commit(empty[s]) ─► (producer reuses stage s)
//!              … last slice → commit(mainloop) ─┐
//! all        : wait(mainloop, 0) ◄──────────────┘ → tcgen05.ld → bf16 → st.global
//! ```
//!
//! Not yet run on Blackwell hardware. The seed's GB300 number for this version at 8192³: 1490.823 TFLOP/s (cuBLAS 1963.6).
use crate::desc::tcgen05::InstrDesc;
use crate::spec::{KernelSpec, SmemPlan, Swizzle, TmaBox};

const BM: u32 = 128;
const BN: u32 = 256;
const BK: u32 = 64;
const STAGES: u32 = 4;
const THREADS: u32 = 128;
/// f32 accumulator columns: one per output column.
const TMEM_COLS: u32 = BN;
/// One 128B-swizzled box per operand per stage: the swizzle spans all 64 bf16 of the slice.
const A_BOX: TmaBox = TmaBox::new(BK, BM, Swizzle::B128);
const B_BOX: TmaBox = TmaBox::new(BK, BN, Swizzle::B128);
/// Barriers: `full[s]` and `empty[s]` for each stage, then `mainloop`.
pub const SMEM: SmemPlan = SmemPlan::new(STAGES, BM * BK * 2, BN * BK * 2, 0, 2 * STAGES + 1);
const IDESC: InstrDesc = InstrDesc::bf16_f32(BM, BN);

pub const SPEC: KernelSpec = KernelSpec {
    name: "blackwell_v3",
    version: 3,
    adds: "producer and MMA warps, full/empty barriers, 4 stages, mainloop barrier",
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
pub unsafe extern "ptx-kernel" fn blackwell_v3(
    _a: crate::args::TensorMapParam,
    _b: crate::args::TensorMapParam,
    _c: crate::args::TensorMapParam,
    args: crate::args::GemmArgs,
) {
    use crate::desc::tcgen05::{SmemDesc, TmemAddr};
    use crate::pipeline::PipelineState;
    use crate::ptx::mbarrier::{self, Barrier};
    use crate::ptx::{bar, fence, smem, sreg, tcgen05, tma};

    let map_a = crate::tensor_map_param!(blackwell_v3, 0);
    let map_b = crate::tensor_map_param!(blackwell_v3, 1);
    let base = smem::base();
    let full = |s: u32| Barrier::at(base + SMEM.barrier(0), s);
    let empty = |s: u32| Barrier::at(base + SMEM.barrier(STAGES), s);
    let mainloop = Barrier(base + SMEM.barrier(2 * STAGES));
    let tid = sreg::tid_x();
    let (warp, lane) = (tid / 32, tid % 32);

    let (tm, tn) = SPEC.scheduler(args.m, args.n).tile(sreg::ctaid_x());
    let (m0, n0) = (tm * BM, tn * BN);

    if tid == 0 {
        for s in 0..STAGES {
            mbarrier::init(full(s), 1);
            mbarrier::init(empty(s), 1);
        }
        mbarrier::init(mainloop, 1);
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

    let nk = args.k.div_ceil(BK);
    if warp == 0 && lane == 0 {
        let mut st = PipelineState::<STAGES>::producer();
        for kb in 0..nk {
            mbarrier::wait(empty(st.stage), st.phase);
            let s = st.stage;
            mbarrier::arrive_expect_tx(full(s), A_BOX.bytes() + B_BOX.bytes());
            tma::load_2d(base + SMEM.a_stage(s), map_a, (kb * BK) as i32, m0 as i32, full(s));
            tma::load_2d(base + SMEM.b_stage(s), map_b, (kb * BK) as i32, n0 as i32, full(s));
            st.advance();
        }
        // Wait for the last release of every stage, so no commit arrival is still on its way to
        // this CTA's barriers when it exits (CUTLASS's producer tail does the same).
        for _ in 0..STAGES {
            mbarrier::wait(empty(st.stage), st.phase);
            st.advance();
        }
    } else if warp == 1 && lane == 0 {
        let mut st = PipelineState::<STAGES>::new();
        for kb in 0..nk {
            mbarrier::wait(full(st.stage), st.phase);
            tcgen05::fence_after_thread_sync();
            let s = st.stage;
            for k in 0..BK / 16 {
                let a = SmemDesc::k_major_128b(base + SMEM.a_stage(s)).advance(32 * k);
                let b = SmemDesc::k_major_128b(base + SMEM.b_stage(s)).advance(32 * k);
                tcgen05::mma_f16_ss::<1>(tmem, a, b, IDESC, (kb + k != 0) as u32);
            }
            tcgen05::commit::<1>(empty(s));
            st.advance();
        }
        tcgen05::commit::<1>(mainloop);
    }
    mbarrier::wait(mainloop, 0);
    tcgen05::fence_after_thread_sync();

    super::store_rows(tmem, BN, &args, m0, n0, warp, lane);

    tcgen05::fence_before_thread_sync();
    bar::sync_all();
    if warp == 1 {
        tcgen05::fence_after_thread_sync();
        tcgen05::dealloc::<1>(tmem, TMEM_COLS);
    }
}
