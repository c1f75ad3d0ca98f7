//! The kernel's body, [`gemm`]: what every thread computes once, the barriers' setup, and the
//! split into the producer warpgroup (`producer.rs`) and the consumer warpgroups
//! (`consumer.rs`, whose epilogue is `epilogue.rs`).
//!
//! The roles are written out in `gemm`'s body with `include!`, not called as functions: as
//! functions (inlined or not) rustc and LLVM optimise the kernel in another order, and the PTX
//! changes (other copies and register numbers in the loop over the schedule), where moving
//! the code into files of its own was to change nothing of the measured kernel.

use super::held::Held;
use super::{a_box, b_box, block_partial_bytes, partial_bytes, smem, spec, Tile, BK, C_BOX, SPAN};
use crate::desc::wgmma::SmemDesc;
use crate::ptx::wgmma::Fragment;

/// Stage the last `C_BOX.inner` columns of a consumer's tile into `buf`: the last box of a tile
/// that boxes do not divide ([`crate::staging::shifts_last_box`]), in v6's epilogue. A pass of
/// its own after the loop over the other boxes, not a second case inside it: folded into that
/// loop, the 128×224 tile spilled even at 240 registers.
#[inline(always)]
fn stage_shifted_last_box<T: Tile, C: crate::staging::Orientation>(
    acc: &T::Acc,
    buf: crate::staging::Staging,
    warp: u32,
    lane: u32,
) {
    let first = T::BN - C_BOX.inner;
    acc.for_each_pair(|p, lo, hi| {
        let col = 8 * (p / 2) + 2 * (lane % 4);
        if col >= first {
            C::store_pair(buf, 16 * warp + lane / 4 + 8 * (p % 2), col - first, crate::ptx::cvt::rn_bf16x2_f32(lo, hi));
        }
    });
}

/// `f` on both values of each pair `p` of `acc` for which `takes[2·((p/2) % 2) + p % 2]`: a
/// fused activation, on every value or on a gated call's gates (`epilogue.rs`). One pass per
/// activation, chosen once per tile, so that no value branches on which one it is.
#[inline(always)]
fn activate_pairs<F: Fragment>(acc: &mut F, takes: [bool; 4], f: impl Fn(f32) -> f32) {
    acc.map_pairs(|p, lo, hi| if takes[(2 * ((p / 2) % 2) + p % 2) as usize] { (f(lo), f(hi)) } else { (lo, hi) });
}

/// The body of every v7 entry ([`super::entries`]).
/// `STAGES`, `PRODUCER_REGS` and `CONSUMER_REGS` are `T`'s, passed again because a generic's
/// associated constant cannot be a const argument (of `PipelineState`, `setmaxnreg`);
/// `TRANS_A`/`TRANS_B` are 1 for an MN-major A/B.
#[inline(always)]
pub(super) fn gemm<
    T: Tile,
    const STAGES: u32,
    const PRODUCER_REGS: u32,
    const CONSUMER_REGS: u32,
    const TRANS_A: u32,
    const TRANS_B: u32,
    C: crate::staging::Orientation,
>(
    maps: [crate::ptx::tma::TensorMap; 5],
    args: &crate::args::GemmArgs,
) {
    use crate::activation;
    use crate::epilogue::{bf16x2_to_f32, Fused, GatedOutput, Output, Partial};
    use crate::fused::Activation;
    use crate::staging::{fragment_pair_addr, holds_columns_past_tma};
    use crate::pipeline::PipelineState;
    use crate::ptx::mbarrier::{self, Barrier};
    use crate::ptx::wgmma;
    use crate::ptx::{bar, cluster, cvt, fence, griddepcontrol, setmaxnreg, shfl, smem, sreg, tma};
    use crate::rendezvous::Rendezvous;
    use crate::sched::{StreamK, Workspace};
    use crate::staging::Staging;

    let [map_a, map_b, map_c, map_a_edge, map_b_edge] = maps;
    let (a_mn, b_mn, c_col) = (TRANS_A != 0, TRANS_B != 0, C::COL_MAJOR);
    let smem_plan = smem::<T>();
    let (a_box, b_box) = (a_box::<T>(a_mn), b_box::<T>(b_mn));
    let stages = STAGES;
    let base = smem::base();
    let full = |s: u32| Barrier(base + smem_plan.barrier(s));
    let empty = |s: u32| Barrier(base + smem_plan.barrier(stages + s));
    let c_load = |c: u32| Barrier(base + smem_plan.barrier(2 * stages + c));
    let tid = sreg::tid_x();
    let wg = tid / 128;

    let rank = sreg::cluster_ctarank();
    let this = spec::<T>("", a_mn, b_mn, c_col);
    let sched = this.scheduler(args.m, args.n);
    let tiles = sched.num_tiles();
    // Unit `idx` is tile `idx % tiles` of batch entry `idx / tiles`; this CTA's tile of it.
    let unit = |idx: u32| {
        // The schedule's tile rows recomputed per unit from M read anew (`b32_opaque`): held
        // from the start, ptxas spilled them in the 128×256 entries once the fused epilogue
        // was in.
        let sched = this.scheduler(crate::ptx::mov::b32_opaque(args.m), args.n);
        let (tm, tn) = sched.tile_snaking(idx % tiles);
        let (tm, tn) = if T::ALONG_N { (tm, tn * T::CLUSTER + rank) } else { (tm * T::CLUSTER + rank, tn) };
        (tm * T::BM, tn * T::BN, (idx / tiles) as i32)
    };
    let (worker, workers) = (sreg::clusterid_x(), sreg::nclusterid_x());
    let num_kb = args.k.div_ceil(BK);
    // Without a workspace the host has forbidden splitting (and the schedule it sized the grid
    // by did not split either).
    let sk = match args.workspace {
        0 => StreamK::whole(tiles * args.batch, num_kb, workers),
        _ => StreamK { units: tiles * args.batch, num_kb, workers, dp_units: args.dp_units, share: args.share },
    };
    let ws = Workspace { partial_bytes: partial_bytes::<T>() };
    let (a_share, b_share) = (this.a_share_rows(), this.b_share_rows());
    // C's contiguous dimension: N, or M for a column-major C. TMA stores reach the last whole
    // 16-byte chunk of it, or nothing where TMA cannot write C; the rest of a row-major C's rows
    // is stored from registers.
    let tma_columns = args.tma_store_columns(if c_col { args.m } else { args.n });
    // No column of a row-major C is TMA's (a ragged C, or fewer than 8 columns): the warpgroup's
    // threads store each staged box themselves (`Output::store_box`, `Tile::THREADS_STORE`), in
    // the epilogue that scales, so that no tile is held and neither v6's epilogue nor the K loop
    // carries the copy.
    let threads_store = T::THREADS_STORE && !c_col && tma_columns == 0;

    if tid == 0 {
        // The maps are kernel parameters, not memory the previous kernel writes: fetching them
        // may overlap its end.
        for map in maps {
            tma::prefetch_tensormap(map);
        }
        for s in 0..stages {
            mbarrier::init(full(s), 1);
            mbarrier::init(empty(s), T::CONSUMERS * T::CLUSTER);
        }
        for c in 0..T::CONSUMERS {
            mbarrier::init(c_load(c), 1);
        }
        fence::mbarrier_init_release_cluster();
    }
    // Both CTAs' barriers exist before anyone multicasts or arrives remotely.
    cluster::sync();
    // Nothing global is touched before the previous kernel in the stream has finished.
    griddepcontrol::wait();

    if wg == 0 {
        setmaxnreg::dec::<PRODUCER_REGS>();
        if tid == 0 {
            include!("producer.rs")
        }
    } else {
        setmaxnreg::inc::<CONSUMER_REGS>();
        include!("consumer.rs")
    }
}
