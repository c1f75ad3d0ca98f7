//! The body of every library entry ([`super::entries`]): v6's three roles, with the loads of
//! either storage order, the batch entry as the maps' third coordinate, the host's stream-K
//! schedule walked by every role in step, and an epilogue that scales by alpha and adds beta·C.

use super::epilogue::{Sums, TileFused, gated_box, load_box, stage_scaled, store_box, store_partial};
use super::*;
use crate::args::GemmArgs;
use crate::desc::tcgen05::{SmemDesc, TmemAddr};
use crate::epilogue::{Fused, GatedOutput, Output, Partial};
use crate::ptx::tma::TensorMap;
use crate::sched::{StreamK, Workspace};
use crate::staging::{Staging, holds_columns_past_tma};

/// The kernel for tile `(BN, STAGES, G)` ([`WIDE`], [`HALF`], [`SINGLE`]): `A_MN`/`B_MN` say
/// whether A is M-major and B N-major. `G` is the MMA's CTA group: 2, a pair whose rank 0 issues
/// MMAs of M = 256 for both and takes every arrival on its own barriers; 1, one CTA on its own.
#[inline(always)]
pub(super) fn gemm<const BN: u32, const STAGES: u32, const G: u32, const A_MN: bool, const B_MN: bool>(
    maps: [TensorMap; 3],
    args: &GemmArgs,
) {
    use crate::pipeline::PipelineState;
    use crate::ptx::mbarrier::{self, Barrier};
    use crate::ptx::{bar, cluster, fence, smem, sreg, tcgen05, tma};

    let [map_a, map_b, map_c] = maps;
    const { assert!(BN.is_multiple_of(C_BUFFERS * BOX_COLS) && (G == 1 || G == 2)) };
    let (b_share, smem_plan) = (b_share(BN, G), smem(BN, STAGES, G));
    let (a_box, b_box) = (operand_box(A_MN, BM), operand_box(B_MN, b_share));
    let base = smem::base();
    let full = |s: u32| Barrier::at(base + smem_plan.barrier(0), s);
    let empty = |s: u32| Barrier::at(base + smem_plan.barrier(STAGES), s);
    let mainloop = |a: u32| Barrier::at(base + smem_plan.barrier(2 * STAGES), a);
    let epilogue = |a: u32| Barrier::at(base + smem_plan.barrier(2 * STAGES + ACC_STAGES), a);
    let c_load = Barrier(base + smem_plan.barrier(2 * STAGES + 2 * ACC_STAGES));
    let tid = sreg::tid_x();
    let (warp, lane) = (tid / 32, tid % 32);
    let rank = sreg::cluster_ctarank();

    let this = spec("", (BN, STAGES, G), A_MN, B_MN);
    let sched = this.scheduler(args.m, args.n);
    let tiles = sched.num_tiles();
    // Unit `u` is tile `u % tiles` of batch entry `u / tiles`; this CTA's rows of it.
    let origin = |unit: u32| {
        let (tm, tn) = sched.tile(unit % tiles);
        (tm * BM * G + rank * BM, tn * BN, (unit / tiles) as i32)
    };
    // Each pair (or single CTA) is a worker of the host's schedule; without a workspace the host
    // has forbidden splitting, and the workers take whole units in turn.
    let (worker, workers) = (sreg::clusterid_x(), sreg::nclusterid_x());
    let nk = args.k.div_ceil(BK);
    let sk = match args.workspace {
        0 => StreamK::whole(tiles * args.batch, nk, workers),
        _ => StreamK { units: tiles * args.batch, num_kb: nk, workers, dp_units: args.dp_units, share: args.share },
    };
    let ws = Workspace { partial_bytes: partial_bytes(BN) };
    // This CTA's partial-sum slot as worker `w` (its rank in the pair).
    let partial = |w: u32| {
        let cta = w * G + rank;
        Partial { sums: args.workspace + ws.partial(cta), flag: args.workspace + ws.flag(cta, 0) }
    };
    // The earlier workers' flags of a unit this worker finished, cleared for the next launch
    // once their sums are read (each is read once).
    let clear_flags = |from: u32| {
        for w in from..worker {
            partial(w).clear();
        }
    };
    // Where the group's MMAs and arrivals meet: a pair's on rank 0's barriers, multicast commits
    // to both CTAs; a single CTA's on its own, without the cluster forms.
    let commit = |bar: Barrier| {
        if G == 2 {
            tcgen05::commit_multicast::<G>(bar, PAIR_MASK);
        } else {
            tcgen05::commit::<G>(bar);
        }
    };
    let release = |bar: Barrier| {
        if G == 2 {
            mbarrier::arrive_cluster(bar, 0);
        } else {
            mbarrier::arrive(bar);
        }
    };
    let sync_group = || {
        if G == 2 {
            cluster::sync();
        } else {
            bar::sync_all();
        }
    };

    if tid == 0 {
        for map in maps {
            tma::prefetch_tensormap(map);
        }
        for s in 0..STAGES {
            // A pair's producers both arrive on rank 0's full[s]; rank 1's stays unused.
            mbarrier::init(full(s), G);
            mbarrier::init(empty(s), 1);
        }
        for a in 0..ACC_STAGES {
            mbarrier::init(mainloop(a), 1);
            // One arrival per CTA's epilogue warpgroup, on rank 0's barrier.
            mbarrier::init(epilogue(a), G);
        }
        mbarrier::init(c_load, 1);
        fence::mbarrier_init_release_cluster();
    }
    if warp == 1 {
        tcgen05::alloc::<G>(base + smem_plan.tmem_slot, tmem_cols(BN));
        tcgen05::relinquish_alloc_permit::<G>();
        tcgen05::fence_before_thread_sync();
    }
    // The barrier inits must be visible to the peer before it arrives on them, and the slot is
    // read only after the barrier that follows the allocation.
    sync_group();
    tcgen05::fence_after_thread_sync();
    let tmem = TmemAddr(smem::ld_b32(base + smem_plan.tmem_slot));

    if warp == 0 && lane == 0 {
        let mut st = PipelineState::<STAGES>::producer();
        for work in sk.walk(worker) {
            let (m0, n0, z) = origin(work.unit);
            // This CTA's rows of B: the pair MMA reads each CTA's half of the N tile.
            let nb = n0 + rank * b_share;
            for i in work.kb_begin..work.kb_end {
                // The MMAs count slices, not K: they do not see the order.
                let kb = if work.k_descending { work.kb_begin + work.kb_end - 1 - i } else { i };
                mbarrier::wait(empty(st.stage), st.phase);
                let s = st.stage;
                let k = (kb * BK) as i32;
                // Whole boxes, also past M, N or K: TMA writes zeros there and counts their bytes.
                let bytes = stage_bytes(BN, G);
                let load = |dst: u32, map, x: i32, y: i32| {
                    if G == 2 {
                        tma::load_3d_cta_group2(dst, map, x, y, z, full(s), 0);
                    } else {
                        tma::load_3d(dst, map, x, y, z, full(s));
                    }
                };
                if G == 2 {
                    mbarrier::arrive_expect_tx_relaxed_cluster(full(s), 0, bytes);
                } else {
                    mbarrier::arrive_expect_tx(full(s), bytes);
                }
                let (a_dst, b_dst) = (base + smem_plan.a_stage(s), base + smem_plan.b_stage(s));
                if A_MN {
                    for i in 0..BM / SPAN {
                        load(a_dst + i * a_box.bytes(), map_a, (m0 + i * SPAN) as i32, k);
                    }
                } else {
                    load(a_dst, map_a, k, m0 as i32);
                }
                if B_MN {
                    for i in 0..b_share / SPAN {
                        load(b_dst + i * b_box.bytes(), map_b, (nb + i * SPAN) as i32, k);
                    }
                } else {
                    load(b_dst, map_b, k, nb as i32);
                }
                st.advance();
            }
        }
        // Wait for the last release of every stage, so no commit arrival is still on its way to
        // this CTA's barriers when it exits (CUTLASS's producer tail does the same); here they
        // come from rank 0's MMA thread, in both CTAs.
        for _ in 0..STAGES {
            mbarrier::wait(empty(st.stage), st.phase);
            st.advance();
        }
    } else if warp == 1 && lane == 0 && rank == 0 {
        let idesc = idesc(A_MN, B_MN, BN, G);
        let mut st = PipelineState::<STAGES>::new();
        let mut acc = PipelineState::<ACC_STAGES>::producer();
        for work in sk.walk(worker) {
            mbarrier::wait(epilogue(acc.stage), acc.phase);
            tcgen05::fence_after_thread_sync();
            let d = tmem.offset(0, acc.stage * BN);
            for kb in work.kb_begin..work.kb_end {
                mbarrier::wait(full(st.stage), st.phase);
                tcgen05::fence_after_thread_sync();
                let s = st.stage;
                for k in 0..BK / 16 {
                    let a = SmemDesc::slice_128b(base + smem_plan.a_stage(s), A_MN, a_box.bytes(), k);
                    let b = SmemDesc::slice_128b(base + smem_plan.b_stage(s), B_MN, b_box.bytes(), k);
                    let accumulate = (kb != work.kb_begin || k != 0) as u32;
                    tcgen05::mma_f16_ss::<G>(d, a, b, idesc, accumulate);
                }
                commit(empty(s));
                st.advance();
            }
            // With K = 0 no MMA is pending: the commit arrives at once, and the epilogue reads
            // no accumulator.
            commit(mainloop(acc.stage));
            acc.advance();
        }
    } else if warp >= EPILOGUE_WARP0 {
        let issuer = tid == EPILOGUE_WARP0 * 32;
        let beta_c = args.beta != 0.0;
        // C's columns that TMA writes: all of them, or those before the last whole 16-byte chunk
        // of its rows, or none where its address or strides are not ones TMA can write
        // (`staging::tma_store_columns`; the host's C map stops there).
        let tma_columns = args.tma_store_columns(args.n);
        let mut acc = PipelineState::<ACC_STAGES>::new();
        let mut c_phase = 0;
        for work in sk.walk(worker) {
            let (m0, n0, z) = origin(work.unit);
            let out = Output::new(args, z as u32);
            // The fused epilogue (bias, activation), where the call has one: read per tile.
            let epi = crate::fused::Epilogue(crate::ptx::mov::b32_opaque(args.epilogue.0));
            let fused = (!epi.is_none()).then(|| TileFused {
                fused: Fused::new(args, epi, z as u32),
                act: epi.activation(),
                row: m0 + 32 * (warp % 4) + lane,
                col0: n0,
            });
            mbarrier::wait(mainloop(acc.stage), acc.phase);
            tcgen05::fence_after_thread_sync();

            if !work.finishes {
                // The start of a unit a later pair finishes: its sums go to this CTA's slot, the
                // accumulator is released, and one thread marks the sums ready.
                let slot = partial(work.wait_from);
                store_partial(tmem.offset(0, acc.stage * BN), BN, warp, lane, slot.sums);
                tcgen05::fence_before_thread_sync();
                bar::sync(EPILOGUE_BAR, EPILOGUE_THREADS);
                if issuer {
                    slot.publish();
                    release(epilogue(acc.stage));
                }
                acc.advance();
                continue;
            }
            // The earlier pairs' sums of a split unit, added in worker order: their slots are
            // ready once one thread has seen each flag and the warps have met after it.
            let earlier = worker - work.wait_from;
            if earlier > 0 {
                if issuer {
                    for from in work.wait_from..worker {
                        partial(from).wait();
                    }
                }
                bar::sync(EPILOGUE_BAR, EPILOGUE_THREADS);
            }
            let sums =
                Sums { first: partial(work.wait_from).sums, count: earlier, stride: (G * ws.partial_bytes) as u64 };

            if let Some(t) = fused.filter(|_| epi.is_gated()) {
                // Gated: the threads store the half-wide output; neither staging box nor C's map
                // is used.
                let g = GatedOutput::new(args, epi, z as u32, false);
                for j in 0..BN / BOX_COLS {
                    let cols = tmem.offset(0, acc.stage * BN + j * BOX_COLS);
                    gated_box(cols, warp, lane, args, nk == 0, t, &g, t.row, n0 + j * BOX_COLS, (sums, j * BOX_COLS));
                }
                tcgen05::fence_before_thread_sync();
                bar::sync(EPILOGUE_BAR, EPILOGUE_THREADS);
                if issuer {
                    release(epilogue(acc.stage));
                    clear_flags(work.wait_from);
                }
                acc.advance();
                continue;
            }
            // BN / BOX_COLS is even, so box j % 2 also alternates from one tile to the next.
            for j in 0..BN / BOX_COLS {
                let staging = Staging(base + smem_plan.c + (j % C_BUFFERS) * C_BOX.bytes());
                let last = j == BN / BOX_COLS - 1;
                let x = (n0 + j * BOX_COLS) as i32;
                // A box holding columns TMA cannot write is loaded (for beta) and stored by the
                // threads; every other box by TMA, clipped at C's edge.
                let direct = holds_columns_past_tma(x as u32, BOX_COLS, args.n, tma_columns);
                if issuer {
                    // The store issued from this box two boxes ago has read it.
                    tma::wait_group_read::<{ C_BUFFERS - 1 }>();
                }
                if direct {
                    bar::sync(EPILOGUE_BAR, EPILOGUE_THREADS);
                    if beta_c {
                        load_box(&out, staging, warp, lane, m0, x as u32);
                        bar::sync(EPILOGUE_BAR, EPILOGUE_THREADS);
                    }
                } else if beta_c {
                    // C's box lands in the staging box (zeros past M and N); the issuer loads it
                    // only once the box is free, and every thread waits for its bytes.
                    if issuer {
                        mbarrier::arrive_expect_tx(c_load, C_BOX.bytes());
                        tma::load_3d(staging.0, map_c, x, m0 as i32, z, c_load);
                    }
                    mbarrier::wait(c_load, c_phase);
                    c_phase ^= 1;
                } else {
                    bar::sync(EPILOGUE_BAR, EPILOGUE_THREADS);
                }
                let cols = tmem.offset(0, acc.stage * BN + j * BOX_COLS);
                let fused = fused.map(|t| TileFused { col0: x as u32, ..t });
                stage_scaled(cols, staging, warp, lane, args, beta_c, nk == 0, fused, (sums, j * BOX_COLS));
                // The staged bytes are read by the TMA engine (async proxy); the accumulator is
                // released after its last columns are read.
                fence::proxy_async_shared_cta();
                if last {
                    tcgen05::fence_before_thread_sync();
                }
                bar::sync(EPILOGUE_BAR, EPILOGUE_THREADS);
                if direct {
                    store_box(&out, staging, warp, lane, m0, x as u32);
                }
                if issuer {
                    if !direct {
                        tma::store_3d(map_c, x, m0 as i32, z, staging.0);
                    }
                    // One group per box, empty for a box the threads stored: the
                    // `wait_group.read 1` above counts on groups alternating between the boxes.
                    tma::commit_group();
                    if last {
                        release(epilogue(acc.stage));
                        clear_flags(work.wait_from);
                    }
                }
            }
            acc.advance();
        }
        if issuer {
            tma::wait_group::<0>();
        }
    }

    // Every CTA of the group has read its accumulators (a pair's: rank 0's MMAs, which write
    // both, are complete) before its columns are freed, and neither CTA of a pair exits while
    // the other may still arrive on its barriers.
    tcgen05::fence_before_thread_sync();
    sync_group();
    if warp == 1 {
        tcgen05::fence_after_thread_sync();
        tcgen05::dealloc::<G>(tmem, tmem_cols(BN));
    }
}
