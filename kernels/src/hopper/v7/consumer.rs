// A consumer warpgroup: `T::BLOCKS` blocks of 64 rows of each tile. Its staging of C (two
// buffers, one TMA store in flight), the K loop's MMAs, the stream-K hand-over of partial sums,
// then the epilogue (`epilogue.rs`). Written out in `gemm`'s body (`include!`, see `kernel.rs`).
{
    // `c` and each slice's stage are the same in every lane; broadcasting them from lane 0
    // tells ptxas so. It then computes the `wgmma` descriptors in uniform registers, which
    // the MMAs read directly: fewer instructions per K slice, less energy on a power-capped
    // card (docs/performance.md).
    let c = shfl::sync_idx_b32(wg - 1, 0);
    let leader = tid.is_multiple_of(128);
    let (warp, lane) = ((tid % 128) / 32, tid % 32);
    let staging = |buf: u32| Staging(base + smem_plan.c + (2 * c + buf) * C_BOX.bytes());
    let mut acc = T::Acc::zeroed();
    // The second block's accumulator (`Tile::BLOCKS`); unused, and gone, where there is one.
    let mut acc1 = T::Acc::zeroed();
    let mut read = PipelineState::<STAGES>::new();
    let mut c_phase = 0;
    // Boxes staged so far, across tiles: the two buffers must alternate box after box even
    // when a tile has an odd number of boxes, since `wait_group.read 1` leaves the last store
    // running.
    let mut boxes = 0u32;
    // `Tile::HOLD`: the finished tile waiting to be staged, its place (m0, n0, z), and how
    // many of its boxes are still to go (none yet).
    // (The zeroed accumulator packed, not `Held::none()`: that one moved ptxas's register
    // allocation of the whole 128×256 kernel, which measured slower.)
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
    // Store the staged box whose first column is the tile's column `first`, of the block whose
    // first row is r0 in the tile at (·, n0, z), through TMA once every thread's writes are
    // visible to it.
    let tma_store_staged = |buf: Staging, first: u32, (r0, n0, z): (u32, u32, i32)| {
        fence::proxy_async_shared_cta();
        bar::sync(1 + c, 128);
        // The box's place in C's map: x along C's contiguous dimension.
        // (Wrapping: a held gated tile's origin sits two boxes before its first column.)
        let (x, y) = if c_col { (r0, n0.wrapping_add(first)) } else { (n0.wrapping_add(first), r0) };
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
    let store_staged = |buf: Staging, first: u32, (r0, n0, z): (u32, u32, i32)| {
        if threads_store {
            bar::sync(1 + c, 128);
            let width = (T::BN - first).min(C_BOX.inner);
            Output::new(args, z as u32).store_box(buf, warp, lane, r0, n0 + first, width);
        } else {
            tma_store_staged(buf, first, (r0, n0, z));
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
                // A's rows of block `h` of this consumer.
                let a = |h: u32| {
                    let block = c * T::BLOCKS + h;
                    if a_mn {
                        SmemDesc::mn_major_128b(a_stage + block * a_box.bytes() + 2048 * k, a_box.bytes())
                    } else {
                        SmemDesc::k_major_128b(a_stage + block * 64 * 128).advance(32 * k)
                    }
                };
                let b = if b_mn {
                    SmemDesc::mn_major_128b(b_stage + 2048 * k, b_box.bytes())
                } else {
                    SmemDesc::k_major_128b(b_stage).advance(32 * k)
                };
                let scale_d = (kb != work.kb_begin || k != 0) as u32;
                acc.mma_async::<TRANS_A, TRANS_B>(a(0), b, scale_d);
                if T::BLOCKS > 1 {
                    acc1.mma_async::<TRANS_A, TRANS_B>(a(1), b, scale_d);
                }
            }
            wgmma::commit_group();
            // The previous slice's MMAs have retired: its stage may be refilled. (Its stage is
            // derived from `s`, not carried over from the last pass, so that it is uniform too
            // and so are the addresses of the releases.)
            let prev = PipelineState::<STAGES>::stage_before(s);
            acc.wait_group::<1>();
            if T::BLOCKS > 1 {
                acc1.wait_group::<1>();
            }
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
        if T::BLOCKS > 1 {
            acc1.wait_group::<0>();
        }
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
            if T::BLOCKS > 1 {
                acc1.st_global_pairs(slot.sums + block_partial_bytes::<T>() as u64);
            }
            bar::sync(1 + c, 128);
            if leader {
                slot.publish();
            }
            acc = T::Acc::zeroed();
            acc1 = T::Acc::zeroed();
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
            if T::BLOCKS > 1 {
                acc1.add_ld_global_cg_pairs(slot.sums + block_partial_bytes::<T>() as u64);
            }
            if leader {
                slot.clear();
            }
        }

        // Block `rb` of the tile's 64-row blocks, with its accumulator in `acc`.
        let rb = c * T::BLOCKS;
        include!("epilogue.rs");
        if T::BLOCKS > 1 {
            // The second block stored as the first was: moved into its registers, so that the
            // epilogue reads constant registers of one accumulator.
            acc = acc1;
            let rb = rb + 1;
            include!("epilogue.rs");
        }
        // The next tile's first MMA ignores the accumulator; fresh values let the old ones die.
        acc = T::Acc::zeroed();
        acc1 = T::Acc::zeroed();
    }
    while T::HOLD && pending > 0 {
        stage_held(&held, held_at, &mut pending, &mut boxes);
    }
    if leader {
        // Shared memory must outlive the stores still reading it.
        tma::wait_group_read::<0>();
    }
}
