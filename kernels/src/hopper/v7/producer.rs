// The producer: one thread that walks this cluster's share of the schedule and loads each K
// slice of A and B into the next free stage, multicasting the operand the pair shares; at the
// end it waits for both CTAs' consumers to release every stage. Written out in `gemm`'s body
// (`include!`, see `kernel.rs`), where `sk`, `unit`, `full`, `empty` and the maps are defined.
{
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
    // for C's stores to reach memory), which measured slower (docs/performance.md).
    for _ in 0..stages {
        mbarrier::wait(empty(write.stage), write.phase);
        write.advance();
    }
}
