//! TEMP: the original gemm, moved.
#![allow(unused_imports)]
use super::held::Held;
use super::{a_box, b_box, partial_bytes, smem, spec, Tile, BK, C_BOX, SPAN};
use crate::desc::wgmma::SmemDesc;
use crate::ptx::wgmma::Fragment;

/// Stage the last `C_BOX.inner` columns of a consumer's tile into `buf`: the last box of a tile
/// that boxes do not divide ([`crate::staging::shifts_last_box`]), in v6's epilogue. A pass of
/// its own after the loop over the other boxes, not a second case inside it: folded into that
/// loop, the wide tile trimmed to 224 spilled even at 240 registers (twenty-second session).
#[inline(always)]
fn stage_shifted_last_box<T: Tile, C: crate::staging::Orientation>(acc: &T::Acc, buf: crate::staging::Staging, warp: u32, lane: u32) {
    let first = T::BN - C_BOX.inner;
    acc.for_each_pair(|p, lo, hi| {
        let col = 8 * (p / 2) + 2 * (lane % 4);
        if col >= first {
            C::store_pair(buf, 16 * warp + lane / 4 + 8 * (p % 2), col - first, crate::ptx::cvt::rn_bf16x2_f32(lo, hi));
        }
    });
}

#[inline(always)]
/// `STAGES`, `PRODUCER_REGS` and `CONSUMER_REGS` are `T`'s, passed again because a generic's
/// associated constant cannot be a const argument (of `PipelineState`, `setmaxnreg`);
/// `TRANS_A`/`TRANS_B` are 1 for an MN-major A/B.
pub(super) fn gemm<T: Tile, const STAGES: u32, const PRODUCER_REGS: u32, const CONSUMER_REGS: u32, const TRANS_A: u32, const TRANS_B: u32, C: crate::staging::Orientation>(maps: [crate::ptx::tma::TensorMap; 5], args: &crate::args::GemmArgs) {
    use crate::epilogue::{bf16x2_to_f32, Output, Partial};
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
            let mut write = PipelineState::<STAGES>::producer();
            let mut walk = sk.walk(worker);
            // Stream-K launches keep their whole waves in step; the cluster's first producer
            // stands for it.
            let mut rendezvous = Rendezvous::new(args.workspace + ws.rendezvous(), &sk, args.workspace != 0 && rank == 0);
            let mut j = 0;
            while let Some(work) = walk.next() {
                rendezvous.wait(j);
                if walk.is_done() {
                    // This CTA's last tile: the next kernel in the stream may now be scheduled,
                    // to take each SM as this grid leaves it and run its prologue there while the
                    // last tiles finish.
                    griddepcontrol::launch_dependents();
                }
                let (m0, n0, z) = unit(work.unit);
                // What lands in this CTA's stages, as far as M and N reach: every CTA's share of
                // the operand the cluster shares, and its own rows of the other. The rows that
                // cross M or N come through the edge maps, and none past them are loaded.
                let mut stage_bytes = if T::ALONG_N { this.b_share_bytes(n0, args.n) } else { this.a_share_bytes(m0, args.m) };
                for cta in 0..T::CLUSTER {
                    stage_bytes += if T::ALONG_N { this.a_share_bytes(m0 + cta * a_share, args.m) } else { this.b_share_bytes(n0 + cta * b_share, args.n) };
                }
                // The rows this CTA loads.
                let (m, n) = if T::ALONG_N { (m0 + rank * a_share, n0) } else { (m0, n0 + rank * b_share) };
                let a_map = if !this.a_share_at_edge(m, args.m) { map_a } else { map_a_edge };
                let b_map = if !this.b_share_at_edge(n, args.n) { map_b } else { map_b_edge };
                for i in work.kb_begin..work.kb_end {
                    // The consumers count slices, not K: they do not see the order.
                    let kb = if work.k_descending { work.kb_begin + work.kb_end - 1 - i } else { i };
                    let s = write.stage;
                    let k0 = kb * BK;
                    mbarrier::wait(empty(s), write.phase);
                    mbarrier::arrive_expect_tx(full(s), stage_bytes);
                    // This CTA's share of the shared operand lands at the same offset in every CTA
                    // of the cluster.
                    let load = |dst, map, x: u32, y: u32, shared: bool| {
                        if shared && T::CLUSTER > 1 {
                            tma::load_3d_multicast(dst, map, x as i32, y as i32, z, full(s), (1u16 << T::CLUSTER) - 1);
                        } else {
                            tma::load_3d(dst, map, x as i32, y as i32, z, full(s));
                        }
                    };
                    let a_dst = base + smem_plan.a_stage(s) + if T::ALONG_N { rank * a_share * BK * 2 } else { 0 };
                    if a_mn {
                        for i in 0..T::BM / SPAN {
                            if m0 + i * SPAN < args.m {
                                load(a_dst + i * a_box.bytes(), map_a, m0 + i * SPAN, k0, T::ALONG_N);
                            }
                        }
                    } else if m < args.m {
                        load(a_dst, a_map, k0, m, T::ALONG_N);
                    }
                    let b_dst = base + smem_plan.b_stage(s) + if T::ALONG_N { 0 } else { rank * b_share * BK * 2 };
                    if b_mn {
                        for i in 0..b_share / SPAN {
                            if n + i * SPAN < args.n {
                                load(b_dst + i * b_box.bytes(), map_b, n + i * SPAN, k0, !T::ALONG_N);
                            }
                        }
                    } else if n < args.n {
                        load(b_dst, b_map, k0, n, !T::ALONG_N);
                    }
                    write.advance();
                }
                rendezvous.arrive(j);
                j += 1;
            }
            rendezvous.depart();
            // Wait until every stage has been released by both CTAs' consumers, as if to fill
            // it again: the peer's last remote arrives on this CTA's `empty` barriers have then
            // landed, and the CTA may exit (CUTLASS's `producer_tail`). This replaces a cluster
            // barrier at exit, whose release compiles to `MEMBAR.ALL.GPU` (waiting, it seems,
            // for C's stores to reach memory): a relaxed exit barrier read 2048³ 0.957 against
            // 0.927, and this tail 0.953 in the third session's final sweep.
            for _ in 0..stages {
                mbarrier::wait(empty(write.stage), write.phase);
                write.advance();
            }
        }
    } else {
        setmaxnreg::inc::<CONSUMER_REGS>();
        // `c` and each slice's stage are the same in every lane; broadcasting them from lane 0
        // tells ptxas so. It then computes the `wgmma` descriptors in uniform registers, which
        // the MMAs read directly: 31 vector instructions per K slice and warp instead of 79 (and
        // 29 uniform ones), +0.5% on the sweep (docs/performance.md).
        let c = shfl::sync_idx_b32(wg - 1, 0);
        let leader = tid.is_multiple_of(128);
        let (warp, lane) = ((tid % 128) / 32, tid % 32);
        let staging = |buf: u32| Staging(base + smem_plan.c + (2 * c + buf) * C_BOX.bytes());
        let mut acc = T::Acc::zeroed();
        let mut read = PipelineState::<STAGES>::new();
        let mut c_phase = 0;
        // Boxes staged so far, across tiles: the two buffers must alternate box after box even
        // when a tile has an odd number of boxes, since `wait_group.read 1` leaves the last store
        // running.
        let mut boxes = 0u32;
        // `Tile::HOLD`: the finished tile waiting to be staged, its place (m0, n0, z), and how
        // many of its boxes are still to go (none yet).
        // (The zeroed accumulator packed, not `Held::none()`: that one moved ptxas's register
        // allocation of the whole wide kernel and read 0.4–0.8% lower at 4096³, two rounds.)
        let mut held = <T::Held as Held<T::Acc>>::pack(&acc);
        let mut held_at = (0u32, 0u32, 0i32);
        let mut pending = 0u32;
        // The next staging buffer, once the store issued from it two boxes ago has read it and
        // the whole warpgroup knows.
        let next_staging = |boxes: &mut u32| {
            let buf = staging(*boxes % 2);
            *boxes += 1;
            if leader {
                tma::wait_group_read::<1>();
            }
            bar::sync(1 + c, 128);
            buf
        };
        // Store the staged box whose first column is the tile's column `first`, of the tile at
        // (m0, n0, z), through TMA once every thread's writes are visible to it.
        let tma_store_staged = |buf: Staging, first: u32, (m0, n0, z): (u32, u32, i32)| {
            fence::proxy_async_shared_cta();
            bar::sync(1 + c, 128);
            // The box's place in C's map: x along C's contiguous dimension.
            let (x, y) = if c_col { (m0 + 64 * c, n0 + first) } else { (n0 + first, m0 + 64 * c) };
            if leader {
                if x < tma_columns {
                    tma::store_3d(map_c, x as i32, y as i32, z, buf.0);
                }
                // One group per box, empty for a box past C's last whole chunk: the
                // `wait_group.read 1` above counts on groups alternating between buffers.
                tma::commit_group();
            }
        };
        // The same, by the warpgroup's threads where TMA writes none of C, for the epilogue that
        // scales (no tile is held then, and neither v6's epilogue nor the K loop has this code).
        let store_staged = |buf: Staging, first: u32, (m0, n0, z): (u32, u32, i32)| {
            if threads_store {
                bar::sync(1 + c, 128);
                let width = (T::BN - first).min(C_BOX.inner);
                Output::new(args, z as u32).store_box(buf, warp, lane, m0 + 64 * c, n0 + first, width);
            } else {
                tma_store_staged(buf, first, (m0, n0, z));
            }
        };
        // Stage the held tile's next box and store it (v6's epilogue, one box).
        let stage_held = |held: &T::Held, at: (u32, u32, i32), pending: &mut u32, boxes: &mut u32| {
            let j = T::BN / C_BOX.inner - *pending;
            *pending -= 1;
            let buf = next_staging(boxes);
            if C::COL_MAJOR {
                held.for_each_in_box(j, |i, pair| C::store_pair(buf, 16 * warp + lane / 4 + 8 * (i % 2), 8 * (i / 2) + 2 * (lane % 4), pair));
            } else {
                held.for_each_in_box(j, |i, pair| smem::st_b32(fragment_pair_addr(buf.0, warp, lane, i), pair));
            }
            tma_store_staged(buf, j * C_BOX.inner, at);
        };
        // This warpgroup's partial-sum slot for worker `w` (this CTA's rank in its cluster), at
        // this thread's place in it (see `Fragment::st_global_pairs`). Always called with a
        // value that changes per piece: an address computed once, before the tile loop, would
        // stay live through the mainloop next to the accumulator.
        let partial = |w: u32| {
            let cta = w * T::CLUSTER + rank;
            let sums = ws.partial(cta) + (c * partial_bytes::<T>() / T::CONSUMERS + 8 * (tid % 128)) as u64;
            Partial { sums: args.workspace + sums, flag: args.workspace + ws.flag(cta, c) }
        };
        for work in sk.walk(worker) {
            let (m0, n0, z) = unit(work.unit);
            for kb in work.kb_begin..work.kb_end {
                // The wait takes the stage as it is, so that it does not wait for the shuffle.
                let s = shfl::sync_idx_b32(read.stage, 0);
                mbarrier::wait(full(read.stage), read.phase);

                wgmma::fence();
                let (a_stage, b_stage) = (base + smem_plan.a_stage(s), base + smem_plan.b_stage(s));
                for k in 0..BK / 16 {
                    let a = if a_mn {
                        SmemDesc::mn_major_128b(a_stage + c * a_box.bytes() + 2048 * k, a_box.bytes())
                    } else {
                        SmemDesc::k_major_128b(a_stage + c * 64 * 128).advance(32 * k)
                    };
                    let b = if b_mn {
                        SmemDesc::mn_major_128b(b_stage + 2048 * k, b_box.bytes())
                    } else {
                        SmemDesc::k_major_128b(b_stage).advance(32 * k)
                    };
                    acc.mma_async::<TRANS_A, TRANS_B>(a, b, (kb != work.kb_begin || k != 0) as u32);
                }
                wgmma::commit_group();
                // The previous slice's MMAs have retired: its stage may be refilled. (Its stage is
                // derived from `s`, not carried over from the last pass, so that it is uniform too
                // and so are the addresses of the releases.)
                let prev = PipelineState::<STAGES>::stage_before(s);
                acc.wait_group::<1>();
                for cta in 0..T::CLUSTER {
                    mbarrier::arrive_cluster_if(empty(prev), cta, leader && kb > work.kb_begin);
                }
                read.advance();
                if T::HOLD && pending > 0 {
                    // The previous tile's next box, while this slice's MMAs run.
                    stage_held(&held, held_at, &mut pending, &mut boxes);
                }
            }
            // Boxes of the held tile that this piece was too short to stage: from here to the
            // next pack the held registers are dead.
            while T::HOLD && pending > 0 {
                stage_held(&held, held_at, &mut pending, &mut boxes);
            }
            acc.wait_group::<0>();
            let last = PipelineState::<STAGES>::stage_before(read.stage);
            // K = 0 (C = beta·C) consumed no slice, so it releases none: a release here would be
            // a phase of an `empty` barrier that no load matches, which the producer's tail could
            // wait on for ever, or which could land after the peer CTA has exited.
            for cta in 0..T::CLUSTER {
                mbarrier::arrive_cluster_if(empty(last), cta, leader && work.kb_end > work.kb_begin);
            }

            if !work.finishes {
                // Stream-K: the rest of this tile's K blocks belong to the next worker(s); leave
                // the sum for the one that finishes it (`wait_from` is this worker here).
                let slot = partial(work.wait_from);
                acc.st_global_pairs(slot.sums);
                bar::sync(1 + c, 128);
                if leader {
                    slot.publish();
                }
                acc = T::Acc::zeroed();
                continue;
            }
            // The earlier K blocks' sums, in worker order (the result does not depend on timing).
            for from in work.wait_from..worker {
                let slot = partial(from);
                if leader {
                    slot.wait();
                }
                bar::sync(1 + c, 128);
                acc.add_ld_global_cg_pairs(slot.sums);
                if leader {
                    slot.clear();
                }
            }

            if args.alpha == 1.0 && args.beta == 0.0 && !threads_store {
                // The common call: v6's epilogue. A loop over the four boxes with a filter on the
                // pairs measured 1.4% faster overall than the straight-line pass below (whose
                // code is 2.4 times larger); with alpha and beta in it, though, it spills. It stages
                // the boxes that are not held: none of the wide tile's.
                let held_boxes = <T::Held as Held<T::Acc>>::BOXES;
                let shifted_boxes = const { crate::staging::shifts_last_box(T::BN) as u32 };
                for j in 0..T::BN.div_ceil(C_BOX.inner) - held_boxes - shifted_boxes {
                    let buf = next_staging(&mut boxes);
                    acc.for_each_pair(|p, lo, hi| {
                        let col = 8 * (p / 2) + 2 * (lane % 4);
                        if col / C_BOX.inner == j {
                            C::store_pair(buf, 16 * warp + lane / 4 + 8 * (p % 2), col % C_BOX.inner, cvt::rn_bf16x2_f32(lo, hi));
                        }
                    });
                    tma_store_staged(buf, j * C_BOX.inner, (m0, n0, z));
                }
                if shifted_boxes > 0 {
                    let buf = next_staging(&mut boxes);
                    stage_shifted_last_box::<T, C>(&acc, buf, warp, lane);
                    tma_store_staged(buf, T::BN - C_BOX.inner, (m0, n0, z));
                }
                if T::HOLD {
                    // The rest waits for the next piece's first slices (the wide tile: the whole
                    // tile; below the edge columns, which are stored from `acc`).
                    held = <T::Held as Held<T::Acc>>::pack(&acc);
                    held_at = (m0, n0, z);
                    pending = held_boxes;
                }
            } else {
                // One pass over the register pairs in column order; the 16 pairs of each 64-column
                // box are contiguous, so a box starts at pair 16j and ends at pair 16j + 15 —
                // constants once unrolled, which keeps the pass straight-line and lets each pair's
                // registers die as soon as it is staged.
                let (row0, scale_c) = (m0 + 64 * c, args.beta != 0.0);
                let pairs_per_box = C_BOX.inner / 4;
                acc.for_each_pair(|p, lo, hi| {
                    let j = p / pairs_per_box;
                    let buf = staging((boxes + j) % 2);
                    // The box's place in C's map: x along C's contiguous dimension.
                    let x = if c_col { row0 } else { n0 + j * C_BOX.inner } as i32;
                    if p % pairs_per_box == 0 {
                        if leader {
                            // The store issued from this buffer two boxes ago has read it.
                            tma::wait_group_read::<1>();
                        }
                        if scale_c && x < tma_columns as i32 {
                            if leader {
                                mbarrier::arrive_expect_tx(c_load(c), C_BOX.bytes());
                                let y = if c_col { n0 + j * C_BOX.inner } else { row0 } as i32;
                                tma::load_3d(buf.0, map_c, x, y, z, c_load(c));
                            }
                            mbarrier::wait(c_load(c), c_phase);
                            c_phase ^= 1;
                        } else {
                            bar::sync(1 + c, 128);
                            if scale_c && threads_store {
                                Output::new(args, z as u32).load_box(buf, warp, lane, row0, x as u32);
                                bar::sync(1 + c, 128);
                            }
                        }
                    }
                    let row = 16 * warp + lane / 4 + 8 * (p % 2);
                    let col = (8 * (p / 2) + 2 * (lane % 4)) % C_BOX.inner;
                    let (mut lo, mut hi) = (args.alpha * lo, args.alpha * hi);
                    if T::HOLD && !c_col {
                        // With a held tile in registers, addresses LLVM would hoist out of the
                        // tile loop do not fit beside it (`fragment_pair_addr`).
                        let at = fragment_pair_addr(buf.0, warp, lane, p % pairs_per_box);
                        if scale_c {
                            let (old_lo, old_hi) = bf16x2_to_f32(smem::ld_b32(at));
                            lo += args.beta * old_lo;
                            hi += args.beta * old_hi;
                        }
                        smem::st_b32(at, cvt::rn_bf16x2_f32(lo, hi));
                    } else {
                        if scale_c {
                            let (old_lo, old_hi) = bf16x2_to_f32(C::load_pair(buf, row, col));
                            lo += args.beta * old_lo;
                            hi += args.beta * old_hi;
                        }
                        C::store_pair(buf, row, col, cvt::rn_bf16x2_f32(lo, hi));
                    }
                    // The box's last pair, or the fragment's (a trimmed tile's last box is not
                    // shifted here, but part full: such a tile takes one column of tiles with
                    // alpha and beta, `KernelSpec::shifted_last_box`).
                    if p % pairs_per_box == pairs_per_box - 1 || p == T::BN / 4 - 1 {
                        store_staged(buf, j * C_BOX.inner, (m0, n0, z));
                    }
                });
                boxes += T::BN.div_ceil(C_BOX.inner);
                held = <T::Held as Held<T::Acc>>::none();
            }
            if !threads_store && holds_columns_past_tma(n0, T::BN, args.n, tma_columns) && !c_col {
                // Columns past the last whole 16-byte chunk of C's rows: the clipped TMA stores
                // above left them out; store them (with their old values, for beta) directly.
                // (Entries that write C column-major take only calls whose C TMA writes whole;
                // where TMA writes none of C, this is every column, unless the threads stored
                // every box above.) Only a tile that holds such columns runs this pass, never one
                // that merely reaches past N.
                let out = Output::new(args, z as u32);
                acc.for_each_pair(|p, lo, hi| {
                    let (row, col) = (m0 + 64 * c + 16 * warp + lane / 4 + 8 * (p % 2), n0 + 8 * (p / 2) + 2 * (lane % 4));
                    if col >= tma_columns {
                        let (mut lo, mut hi) = (args.alpha * lo, args.alpha * hi);
                        if args.beta != 0.0 {
                            let (old_lo, old_hi) = out.load_pair(row, col);
                            lo += args.beta * old_lo;
                            hi += args.beta * old_hi;
                        }
                        out.store_pair(row, col, lo, hi);
                    }
                });
            }
            // The next tile's first MMA ignores the accumulator; fresh values let the old ones die.
            acc = T::Acc::zeroed();
        }
        while T::HOLD && pending > 0 {
            stage_held(&held, held_at, &mut pending, &mut boxes);
        }
        if leader {
            // Shared memory must outlive the stores still reading it.
            tma::wait_group_read::<0>();
        }
    }
}
