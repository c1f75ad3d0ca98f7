// The finished tile's stores: the fused epilogue applied in place, then v6's epilogue for
// alpha = 1, beta = 0 (the held tile's boxes left for the next piece), or the one that scales
// and loads C for beta; then the columns past TMA's reach, from registers. A gated call's
// half-wide tile is held as a plain one is where the tile holds and TMA writes it whole, and
// otherwise stored from registers alone. Written out in the consumer's body (`consumer.rs`); the tile's sum is whole here (stream-K's partials added), so
// each fused step runs once.
{
    // The fused epilogue (`crate::fused`), in place in the accumulator: alpha and the bias on
    // every value, then the activation (of a gated call, on its gate values alone). The passes
    // below then store the tile as a plain call's with alpha = 1 (v6's epilogue where beta is
    // 0). Uniform: a plain call pays this test and nothing else.
    // Read per tile (`b32_opaque`): what LLVM derives from it would otherwise be hoisted out of
    // the tile loop and held through the K loop beside the accumulator.
    let epilogue = crate::fused::Epilogue(crate::ptx::mov::b32_opaque(args.epilogue.0));
    // Where the consumers have few registers beside the accumulators (`Tile::FEW_SPARE_REGS`), the
    // thread's place and TMA's reach are worked out anew, so that the staging addresses
    // derived from them are not computed before the tile loop and held (spilled) through it.
    let (warp, lane, tma_columns) = if T::FEW_SPARE_REGS {
        let opaque = crate::ptx::mov::b32_opaque;
        (opaque(warp), opaque(lane), args.tma_store_columns(opaque(if c_col { args.m } else { args.n })))
    } else {
        (warp, lane, tma_columns)
    };
    // And there each box's addresses from the thread's place read anew again, not worked out
    // for every box at once and held.
    let place_per_box = || {
        if T::FEW_SPARE_REGS {
            (crate::ptx::mov::b32_opaque(warp), crate::ptx::mov::b32_opaque(lane))
        } else {
            (warp, lane)
        }
    };
    let fused_on = !epilogue.is_none();
    let alpha = if fused_on { 1.0 } else { args.alpha };
    if fused_on {
        let fused = Fused::new(args, epilogue, z as u32);
        // The thread's place read anew (`b32_opaque`): offsets from it, computed once before
        // the tile loop, would be held through the K loop.
        let t = crate::ptx::mov::b32_opaque(tid);
        // This block's first row: consumer t / 128 - 1, block rb % BLOCKS of its own.
        let block_row = m0 + 64 * ((t / 128 - 1) * T::BLOCKS + rb % T::BLOCKS);
        let (row0, col0) = (block_row + 16 * ((t % 128) / 32) + (t % 32) / 4, n0 + 2 * (t % 4));
        fused.pre_activation(&mut acc, row0, col0, t % 32);
        // Whether pair p takes the activation, indexed by the parities of its 8-column block
        // and of its row half: every pair, or a gated call's gates (blocks 2b along N, rows
        // r of r and r + 8 along M).
        let (gated, along_m) = (epilogue.is_gated(), epilogue.is_along_m());
        let takes = [true, !gated || !along_m, !gated || along_m, !gated];
        match epilogue.activation() {
            Activation::Identity => {}
            Activation::Relu => activate_pairs(&mut acc, takes, activation::relu),
            Activation::GeluTanh => activate_pairs(&mut acc, takes, activation::gelu_tanh),
            Activation::GeluErf => activate_pairs(&mut acc, takes, activation::gelu_erf),
            Activation::Silu => activate_pairs(&mut acc, takes, activation::silu),
        }
    }
    if epilogue.is_gated() {
        // A gated call's half-wide output along N, where TMA writes all of it that this tile holds
        // and nothing is added from C: held like a plain tile's (`Held::pack_gated`, its two boxes
        // in the held tile's last two) and staged under the next tile's MMAs.
        let gated_held = T::HOLD
            && !epilogue.is_along_m()
            && !c_col
            && args.beta == 0.0
            && !threads_store
            && {
                let (half, columns) = (T::BN / 2, args.n / 2);
                let tma = args.tma_store_columns(columns);
                tma > 0 && !crate::staging::holds_columns_past_tma(n0 / 2, half, columns, tma)
            };
        if gated_held {
            held = <T::Held as Held<T::Acc>>::pack_gated(&acc);
            // Box j of the held tile goes to column held_at.1 + 64·j: the last two, where the
            // output sits, to n0 / 2 onwards (wrapping, as `tma_store_staged` adds).
            held_at = (m0 + 64 * rb, (n0 / 2).wrapping_sub(T::BN / 2), z);
            pending = T::BN / 2 / C_BOX.inner;
        } else {
            // Gate and up blocks of 8 alternate along N (along M: rows r and r + 8 of each 16-row
            // slice), so each thread holds both values of each of its outputs: pairs p (gate) and
            // p + 2 (up) along N, p and p + 1 along M. Stored by the threads themselves: the
            // output tile is half as wide (tall) as the staged boxes TMA stores, and C's map is
            // not read.
            let out = GatedOutput::new(args, epilogue, z as u32, c_col);
            // As above, the thread's place read anew.
            let t = crate::ptx::mov::b32_opaque(tid);
            let lane = t % 32;
            let block_row = m0 + 64 * ((t / 128 - 1) * T::BLOCKS + rb % T::BLOCKS);
            let (slice, col0) = (block_row + 16 * ((t % 128) / 32), n0 + 2 * (lane % 4));
            let emit = |orow: u32, ocol: u32, (g_lo, g_hi): (f32, f32), (u_lo, u_hi): (f32, f32)| {
                let (mut lo, mut hi) = (g_lo * u_lo, g_hi * u_hi);
                if args.beta != 0.0 {
                    let (old_lo, old_hi) = out.load_pair(orow, ocol);
                    lo += args.beta * old_lo;
                    hi += args.beta * old_hi;
                }
                out.store_pair(orow, ocol, lo, hi);
            };
            let mut gates = [(0.0f32, 0.0f32); 2];
            if epilogue.is_along_m() {
                acc.for_each_pair(|p, lo, hi| {
                    if p % 2 == 0 {
                        gates[0] = (lo, hi);
                    } else {
                        emit(slice / 2 + lane / 4, col0 + 8 * (p / 2), gates[0], (lo, hi));
                    }
                });
            } else {
                acc.for_each_pair(|p, lo, hi| {
                    if (p / 2) % 2 == 0 {
                        gates[(p % 2) as usize] = (lo, hi);
                    } else {
                        emit(slice + lane / 4 + 8 * (p % 2), n0 / 2 + 8 * (p / 4) + 2 * (lane % 4), gates[(p % 2) as usize], (lo, hi));
                    }
                });
            }
            held = <T::Held as Held<T::Acc>>::none();
        }
    } else if alpha == 1.0 && args.beta == 0.0 && !threads_store {
        // The common call: v6's epilogue. A loop over the boxes with a filter on the pairs
        // runs faster than the straight-line pass below (whose code is larger); with alpha
        // and beta in it, though, it spills. It stages the boxes that are not held: none of
        // the 128×256 tile's.
        let held_boxes = <T::Held as Held<T::Acc>>::BOXES;
        let shifted_boxes = const { crate::staging::shifts_last_box(T::BN) as u32 };
        for j in 0..T::BN.div_ceil(C_BOX.inner) - held_boxes - shifted_boxes {
            let buf = next_staging(&mut boxes);
            let (warp, lane) = place_per_box();
            acc.for_each_pair(|p, lo, hi| {
                let col = 8 * (p / 2) + 2 * (lane % 4);
                if col / C_BOX.inner == j {
                    C::store_pair(buf, 16 * warp + lane / 4 + 8 * (p % 2), col % C_BOX.inner, cvt::rn_bf16x2_f32(lo, hi));
                }
            });
            tma_store_staged(buf, j * C_BOX.inner, (m0 + 64 * rb, n0, z));
        }
        if shifted_boxes > 0 {
            let buf = next_staging(&mut boxes);
            let (warp, lane) = place_per_box();
            stage_shifted_last_box::<T, C>(&acc, buf, warp, lane);
            tma_store_staged(buf, T::BN - C_BOX.inner, (m0 + 64 * rb, n0, z));
        }
        if T::HOLD {
            // The rest waits for the next piece's first slices (the 128×256 tile: the whole
            // tile; below the edge columns, which are stored from `acc`).
            held = <T::Held as Held<T::Acc>>::pack(&acc);
            held_at = (m0 + 64 * rb, n0, z);
            pending = held_boxes;
        }
    } else {
        // One pass over the register pairs in column order; the 16 pairs of each 64-column
        // box are contiguous, so a box starts at pair 16j and ends at pair 16j + 15 —
        // constants once unrolled, which keeps the pass straight-line and lets each pair's
        // registers die as soon as it is staged.
        let (row0, scale_c) = (m0 + 64 * rb, args.beta != 0.0);
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
            let (mut lo, mut hi) = (alpha * lo, alpha * hi);
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
                store_staged(buf, j * C_BOX.inner, (m0 + 64 * rb, n0, z));
            }
        });
        boxes += T::BN.div_ceil(C_BOX.inner);
        held = <T::Held as Held<T::Acc>>::none();
    }
    if !epilogue.is_gated() && !threads_store && holds_columns_past_tma(n0, T::BN, args.n, tma_columns) && !c_col {
        // Columns past the last whole 16-byte chunk of C's rows: the clipped TMA stores
        // above left them out; store them (with their old values, for beta) directly.
        // (Entries that write C column-major take only calls whose C TMA writes whole;
        // where TMA writes none of C, this is every column, unless the threads stored
        // every box above.) Only a tile that holds such columns runs this pass, never one
        // that merely reaches past N.
        let out = Output::new(args, z as u32);
        acc.for_each_pair(|p, lo, hi| {
            let (row, col) = (m0 + 64 * rb + 16 * warp + lane / 4 + 8 * (p % 2), n0 + 8 * (p / 2) + 2 * (lane % 4));
            if col >= tma_columns {
                let (mut lo, mut hi) = (alpha * lo, alpha * hi);
                if args.beta != 0.0 {
                    let (old_lo, old_hi) = out.load_pair(row, col);
                    lo += args.beta * old_lo;
                    hi += args.beta * old_hi;
                }
                out.store_pair(row, col, lo, hi);
            }
        });
    }
}
