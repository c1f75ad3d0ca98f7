//! The Hopper ladder (sm_90a): TMA, mbarrier pipelines, clusters and `wgmma` with f32
//! accumulators in registers. Proven and measured on an H200.
//!
//! | version | adds |
//! |---|---|
//! | [v0] | TMA tile loads on an mbarrier, `wgmma` from shared-memory descriptors, one tile per CTA, serial |
//! | [v1] | 128-byte swizzle: one TMA box per operand per K slice, swizzled descriptors |
//! | [v2] | a 4-stage TMA pipeline with a `full` barrier per stage |
//! | [v3] | warp specialization: a producer warpgroup, two consumer warpgroups, full/empty barrier pairs |
//! | [v4] | 2-CTA clusters along M: B halves multicast to both CTAs, cluster-wide `empty` barriers, grouped tile order |
//! | [v5] | persistent clusters: stages and phases carried across tiles, the epilogue overlaps the next tile's loads |
//! | [v6] | TMA-store epilogue: swizzled, double-buffered staging, one bulk store in flight; `setmaxnreg` moves registers from producer to consumers |
//! | [v7] | the library's GEMM: tile shape per problem size, stream-K, K- or MN-major operands, batches, alpha/beta, L2 promotion, programmatic dependent launch |

#[cfg(hopper)]
use crate::args::GemmArgs;
use crate::spec::{Family, KernelSpec};

crate::ladder!(v0 v1 v2 v3 v4 v5 v6 v7);
#[cfg(hopper)]
mod baseline;
pub mod ceiling;

/// What v0–v6 start from ([`KernelSpec::ladder`]); each sets what it adds.
const BASE: KernelSpec = KernelSpec::ladder(Family::Hopper);

/// Store a warpgroup's 64×N fragment (`wgmma` register layout, see
/// [`Fragment`](crate::ptx::wgmma::Fragment)) to C at rows `row0..row0 + 64`, columns
/// `col0..col0 + N`, as bf16, clipped to the M×N output.
#[cfg(hopper)]
#[inline(always)]
pub(crate) fn store_fragment<F: crate::ptx::wgmma::Fragment>(
    acc: &F,
    args: &GemmArgs,
    row0: u32,
    col0: u32,
    thread_in_wg: u32,
) {
    let warp = thread_in_wg / 32;
    let lane = thread_in_wg % 32;
    let row = row0 + 16 * warp + lane / 4;
    let col = col0 + 2 * (lane % 4);
    let out = crate::epilogue::Output::new(args, 0);
    acc.for_each_pair(|p, lo, hi| out.store_pair(row + 8 * (p % 2), col + 8 * (p / 2), lo, hi));
}
