use super::*;
use crate::error::Error;
use crate::op::Layout;
use crate::plan::{plan, shape, supports};
use hgemm_kernels::hopper;
use hgemm_kernels::spec::Major;

#[test]
fn shapes_no_kernel_can_index_get_no_kernel() {
    let kernels: Vec<&KernelSpec> = hopper_kernels();
    let pick = |op: &GemmOp, sms| choose(kernels.iter().copied(), op, sms, &Model::BUILT_IN).map(|s| s.name);
    // Valid spans, but 2^46 wide tiles or more: every entry's 32-bit tile index would wrap.
    let huge = GemmOp::new(i32::MAX as usize, i32::MAX as usize, 8);
    assert_eq!(pick(&huge, 132), None);
    let r = supports(&hopper::v7::SPEC, &huge);
    assert!(matches!(&r, Err(Error::Unsupported { reason, .. }) if reason.contains("32-bit tile index")), "{r:?}");
    // The launch shape is refused the same way, not worked out in wrapping arithmetic.
    for spec in &kernels {
        assert!(matches!(shape(spec, &huge, 66), Err(Error::Unsupported { .. })), "{}", spec.name);
        assert!(matches!(launch_offline(spec, &huge, 132), Err(Error::Unsupported { .. })), "{}", spec.name);
    }
    assert!(matches!(
        shape(&hopper::v0::SPEC, &GemmOp::new(64, 64, 64).a(Layout::ColMajor, 64), 66),
        Err(Error::Unsupported { .. })
    ));
    assert_eq!(shape(&hopper::v7::SPEC, &GemmOp::new(8192, 8192, 8192), 66).map(|s| s.grid), Ok(132));
    // 2^31 - 1 entries of two units or more each (264 columns are one pair of 256-long tiles).
    assert_eq!(pick(&GemmOp::new(1, 520, 8).batched(i32::MAX as usize, 0, 0, 520), 132), None);
    // Shapes `validate` refuses, and a device without SMs.
    assert_eq!(pick(&GemmOp::new(1 << 40, 1 << 40, 8), 132), None);
    assert_eq!(pick(&GemmOp::new(64, 64, 7), 132), None);
    assert_eq!(pick(&GemmOp::new(4096, 4096, 4096), 0), None);
    assert!(pick(&GemmOp::new(4096, 4096, 4096), 132).is_some());
}

#[test]
fn plans_map_each_layout_onto_the_kernel_coordinates() {
    let kernels: Vec<&KernelSpec> = hopper_kernels();
    let op = GemmOp::new(300, 200, 64).a(Layout::ColMajor, 304).b(Layout::RowMajor, 200);
    let spec = choose(kernels.iter().copied(), &op, 132, &Model::BUILT_IN).unwrap();
    assert_eq!((spec.a_major, spec.b_major), (Major::MN, Major::MN));
    let p = plan(spec, &op, 0x1000, 0x2000, 0x3000).unwrap();
    // A column-major: K rows of M contiguous elements; B row-major: K rows of N.
    assert_eq!((p.maps[0].dims, p.maps[0].strides[0]), ([300, 64, 1], 608));
    assert_eq!((p.maps[1].dims, p.maps[1].strides[0]), ([200, 64, 1], 400));
    assert_eq!(p.maps[2].dims, [200, 300, 1]);
    assert!(p.maps.iter().all(|m| m.rank == 3), "general kernels take rank-3 maps");
    assert_eq!((p.args.m, p.args.n, p.args.k, p.args.batch), (300, 200, 64, 1));
}

#[test]
fn offline_functions_refuse_what_gemm_refuses() {
    let v7 = &hopper::v7::SPEC;
    let kernels: Vec<&KernelSpec> = hopper_kernels();
    // Calls `validate` refuses are refused by `supports` and `shape` too, not cut to 32 bits.
    for op in [
        GemmOp::new(8192, 8192, (1 << 32) + 8192),
        GemmOp::new((1 << 32) + 256, 8192, 8192),
        GemmOp::new(8192, 8192, 12),
        GemmOp::new(256, 256, 64).alpha(f32::NAN),
    ] {
        assert!(matches!(supports(v7, &op), Err(Error::InvalidShape(_))), "{op:?}");
        assert!(matches!(shape(v7, &op, 66), Err(Error::InvalidShape(_))), "{op:?}");
        assert_eq!(choose(kernels.iter().copied(), &op, 132, &Model::BUILT_IN).map(|s| s.name), None);
    }
    // Nothing to launch, and no kernel priced, for an empty call.
    for op in [GemmOp::new(0, 128, 128), GemmOp::new(128, 0, 128), GemmOp::new(64, 64, 64).batched(0, 0, 0, 0)] {
        assert!(matches!(shape(v7, &op, 66), Err(Error::InvalidShape(s)) if s.contains("nothing to launch")));
        assert!(matches!(launch_offline(&hopper::v0::SPEC, &op, 132), Err(Error::InvalidShape(_))));
        assert_eq!(price(kernels.iter().copied(), &op, 132, &Model::BUILT_IN).count(), 0);
    }
    // A device too small for a pair holds no pair's persistent grid; one-CTA entries remain.
    let op = GemmOp::new(64, 4096, 4096);
    assert!(
        matches!(launch_offline(v7, &op, 1), Err(Error::Unsupported { reason, .. }) if reason.contains("no cluster"))
    );
    assert!(price(kernels.iter().copied(), &op, 1, &Model::BUILT_IN).all(|p| p.spec.cluster == 1));
    assert_eq!(
        choose_offline(kernels.iter().copied(), &op, 1, &Model::BUILT_IN).map(|(s, l)| (s.cluster, l.grid)),
        Some((1, 1))
    );
}

#[test]
fn auto_picks_smaller_tiles_only_when_wide_ones_leave_sms_idle() {
    let kernels: Vec<&KernelSpec> = hopper_kernels();
    let pick = |m, n, k| {
        let s = choose(kernels.iter().copied(), &GemmOp::new(m, n, k), 132, &Model::BUILT_IN).unwrap();
        (s.tile_m, s.tile_n)
    };
    let (wide, mid, square, slim, thin) = ((128, 256), (128, 192), (128, 128), (64, 128), (64, 64));
    assert_eq!(pick(8192, 8192, 8192), wide);
    assert_eq!(pick(2048, 2048, 2048), wide);
    assert_eq!(pick(512, 8192, 8192), wide);
    assert_eq!(pick(1024, 8192, 8192), wide);
    assert_eq!(pick(1024, 4096, 4096), wide);
    // Split wide tiles against whole smaller ones: each pick below was the fastest of the
    // three measured on the H200 (823a149, 2026-11-30).
    assert_eq!(pick(2304, 2304, 2304), wide);
    // Since then the tall tile 160 wide, whole, takes 2560×4096×4096 from the wide tile split
    // (forced, 2026-12-07: 1.006× cuBLAS against 0.942× on an H200, 0.979× against 0.931× on an
    // H100).
    assert_eq!(pick(2560, 4096, 4096), (256, 160));
    assert_eq!(pick(5000, 5000, 5000), wide);
    assert_eq!(pick(768, 4096, 4096), mid);
    assert_eq!(pick(3000, 3000, 3000), mid);
    assert_eq!(pick(3072, 3072, 3072), mid);
    assert_eq!(pick(1536, 6144, 4096), mid);
    // Only the split part of the path pays the split's price: several whole waves of wide
    // tiles and a split one beat whole mid tiles, and short K still goes to whole ones
    // (H200, forced, two rounds, 65eeaf8, 2026-12-01: 2048×15360×4096 1.00–1.01× cuBLAS against
    // 0.95–0.97×; 3072×1792×1024 mid 0.85× against the wide tile split's 0.80×).
    assert_eq!(pick(2048, 15360, 4096), wide);
    assert_eq!(pick(3584, 15360, 8192), wide);
    assert_eq!(pick(3072, 1792, 1024), mid);
    assert_eq!(pick(1792, 3072, 1024), mid);
    // The wide tile with its last column half empty keeps the call, or the wide tile trimmed
    // takes it, where a rule used to give it to whole square pairs (H200, 2026-12-01: square
    // pairs 1.06–1.25× as fast); without the rule (H100, forced, 2026-12-07) 7808×2176×4096 ran
    // 1.09× the square pairs' speed, 6400×2688×2048 1.05×, 6016×1664×1024 1.01×, 7552×1408×1024
    // 0.97×.
    assert_eq!(pick(6016, 1664, 1024), (128, 224));
    assert_eq!(pick(7808, 2176, 4096), wide);
    assert_eq!(pick(6400, 2688, 2048), wide);
    assert_eq!(pick(7552, 1408, 1024), wide);
    assert_ne!(pick(2560, 4096, 4096), square);
    // (1280×8192×4096 too: 0.976× against 0.930× for the wide tile split; H100, forced.)
    assert_ne!(pick(1280, 8192, 4096), square);
    // At short K the mid tile's epilogue, which the wide tile hides (`holds_tile`), decides
    // (H200, forced, 5ca1795, 2026-11-30: 8192×8192×1024 1.035× cuBLAS against 0.951×, ×2048 1.031×
    // against 0.990×).
    assert_eq!(pick(8192, 8192, 1024), wide);
    assert_eq!(pick(8192, 8192, 2048), wide);
    assert_eq!(pick(512, 4096, 4096), square);
    assert_eq!(pick(1024, 2048, 4096), square);
    assert_eq!(pick(256, 8192, 8192), square);
    assert_eq!(pick(256, 4096, 4096), slim);
    assert_eq!(pick(128, 8192, 8192), slim);
    assert_eq!(pick(128, 16384, 8192), slim);
    // M ≤ 64: one row of thin tiles (measured against slim pairs on the H200, bd045aa,
    // 2026-11-30: 64×4096×4096 1.00× cuBLAS against 0.86×, 16×14336×4096 0.92× against 0.83×).
    assert_eq!(pick(64, 64, 64), (64, 96)); // One tile: a pair streams at two CTAs' rate.
    assert_eq!(pick(64, 8192, 8192), thin);
    assert_eq!(pick(64, 1024, 8192), thin);
    // Bound by DRAM, whole trim pairs filling the SMs stream it without the thin tiles' fix-ups
    // (`calls_bound_by_dram_run_whole_units_that_fill_the_sms`).
    assert_eq!(pick(40, 28672, 4096), (64, 160));
    // M ≤ 32: narrow pairs written column-major, 16 or 32 columns of M (H200, b50a57b,
    // 2026-11-30: 16×14336×4096 0.963× cuBLAS against 0.934×, 32×28672×4096 0.964× against
    // 0.943×), where N, C's contiguous side, is a multiple of 8 as their TMA stores need.
    let (narrow16, narrow32) = ((64, 16), (64, 32));
    assert_eq!(pick(1, 4096, 4096), narrow16);
    // (Bound by DRAM, whole trim pairs filling the SMs take 8×28672×4096: 1.011× the split
    // narrow pairs' speed, H100, 2026-12-07.)
    assert_eq!(pick(8, 28672, 4096), (64, 160));
    assert_eq!(pick(16, 14336, 4096), narrow16);
    assert_eq!(pick(17, 14336, 4096), narrow32);
    assert_eq!(pick(32, 28672, 8192), (128, 112)); // Whole twin pairs, bound by DRAM: 1.018×.
    assert_eq!(pick(16, 14337, 4096), thin);
    // N ≤ 64: one column of thin tiles.
    assert_eq!(pick(4096, 16, 4096), thin);
    assert_eq!(pick(16384, 64, 4096), thin);
    // Past one row or column of thin tiles, up to 96: 64×96 pairs (H200, ac1cd3b, 2026-11-30:
    // 96×14336×4096 0.963× cuBLAS against 0.895× for lean pairs, 8192×96×8192 1.007× against
    // 0.936× for slim pairs), written column-major where M is the short side. Past 96, slim
    // pairs (96×8192×8192 against thin tiles: 0.93× against 0.64×, bd045aa).
    let narrow96 = (64, 96);
    assert_eq!(pick(65, 4096, 4096), narrow96);
    assert_eq!(pick(96, 8192, 8192), narrow96);
    assert_eq!(pick(96, 14336, 4096), (128, 112)); // Bound by DRAM (`calls_bound_by_dram_run_whole_units_that_fill_the_sms`).
    assert_eq!(pick(8192, 96, 8192), narrow96);
    assert_eq!(pick(16384, 72, 4096), narrow96);
    assert_eq!(pick(100, 4096, 4096), (64, 96)); // Bound by DRAM (`calls_bound_by_dram_run_whole_units_that_fill_the_sms`).
    assert_eq!(pick(128, 16384, 8192), slim);
    // M from 129 to 224 at large N: twin pairs with the operands' places traded, so that M
    // is the pair's 160, 192 or 224 columns and the pair shares B, the operand read from
    // DRAM (H200, 91ffc57, 2026-11-30: 160×8192×8192 1.02× and 0.97× cuBLAS against 0.87× for
    // trim tiles, which shared A; 192×8192×8192 1.05× against 0.93× for lean tiles,
    // 208×8192×8192 1.00× against 0.90× for square pairs).
    let name = |m, n, k| choose(kernels.iter().copied(), &GemmOp::new(m, n, k), 132, &Model::BUILT_IN).unwrap().name;
    for m in [136, 152, 160] {
        assert_eq!(name(m, 8192, 8192), "hopper_v7_twin80_kk_cm", "{m}");
    }
    assert_eq!(name(168, 8192, 8192), "hopper_v7_twin96_kk_cm");
    assert_eq!(name(192, 8192, 8192), "hopper_v7_twin96_kk_cm");
    assert_eq!(name(160, 4096, 4096), "hopper_v7_twin80_kk_cm");
    assert_eq!(name(208, 8192, 8192), "hopper_v7_twin112_kk_cm");
    // Where the lean pairs take two waves, or fill one only with a split, mid pairs written
    // column-major take one (H200, forced, bf09717, 2026-11-30: 320×8192×8192 0.85× against 0.78× for
    // lean tiles, 192×14336×4096 0.92× against 0.89× for lean ones written column-major);
    // from 257 to 320, trimmed tiles side by side since (below).
    assert_eq!(name(192, 14336, 4096), "hopper_v7_mid_kk_cm");
    // Split at a longer K, twin pairs 96 wide sharing B, the larger operand, take it from mid
    // pairs sharing A (`Model::share_smaller`; H100, forced, 2026-12-07: 191×13376×6272 1.030×
    // and 187×17920×5120 1.007× as fast, 186×28672×8192 0.985×).
    assert_eq!(name(168, 28672, 8192), "hopper_v7_twin96_kk_cm");
    // A few hundred rows: the long tile row-major, whose pairs share B, the larger operand,
    // where mid pairs written column-major share A (`Model::share_smaller`; H100, forced,
    // 2026-12-07: 346×5120×27648 0.911× cuBLAS against 0.775×, 383×13888×4160 0.887× against
    // 0.810×, 384×8192×8192 0.995× against 1.004×).
    for (m, n, k) in [(346, 5120, 27648), (383, 13888, 4160), (384, 8192, 8192)] {
        assert_eq!(name(m, n, k), "hopper_v7_long128_kk", "{m}x{n}x{k}");
    }
    // M or N from 257 to 320: mid tiles trimmed to 160 columns, side by side (H200, forced,
    // e92189f, 2026-11-30: 320×8192×8192 0.97× cuBLAS against 0.86× for mid tiles written
    // column-major, 8192×320×8192 1.02× against 0.88× for mid tiles, 16384×320×4096 0.97×
    // against 0.80×).
    for (m, n, k) in [(320, 8192, 8192), (288, 8192, 8192)] {
        assert_eq!(name(m, n, k), "hopper_v7_midtrim_kk_cm", "{m}x{n}x{k}");
    }
    // Against a longer N, two columns of long tiles 144 wide, which 288 fills exactly (priced,
    // not measured at this shape).
    assert_eq!(name(288, 28672, 4096), "hopper_v7_long144_kk_cm");
    for (m, n, k) in [(8192, 320, 8192), (8192, 288, 8192), (16384, 320, 4096)] {
        assert_eq!(name(m, n, k), "hopper_v7_midtrim_kk", "{m}x{n}x{k}");
    }
    // Where the mid tile trimmed so would leave pairs idle, twin pairs in two columns of
    // pairs, one wave (H200, de2b36d, 2026-11-30: 2048×320×4096 1.09× against 1.04× for the trim
    // tile side by side, which had taken it from slim pairs, 0.83×; 3072×320×8192 1.00×
    // against the mid tile trimmed's 0.97×), but not where their shares would be under half
    // a unit: the trim tile side by side at 1024×320×8192 (1.06× and 1.00× against the
    // twins' 1.07× and 0.93×) and at 1536×320×8192 (0.89× against 0.87×); and from 385 to 448
    // the wide tile trimmed to 224 in two columns (8192×448×8192 1.01× against 0.90× for
    // wide tiles, 448×8192×8192 1.09× against 0.97×, 8192×400×8192 0.91× against 0.81×).
    for (m, n, k) in [(2048, 320, 4096), (3072, 320, 8192), (3000, 320, 8192)] {
        assert_eq!(name(m, n, k), "hopper_v7_twin80_kk", "{m}x{n}x{k}");
    }
    for (m, n) in [(1024, 320), (1024, 288), (1536, 320)] {
        assert_eq!(name(m, n, 8192), "hopper_v7_trim_kk", "{m}x{n}x8192");
    }
    assert_eq!(name(1024, 448, 4096), "hopper_v7_slim_kk");
    for (m, n, k) in [(8192, 448, 8192), (16384, 416, 4096), (8192, 400, 8192)] {
        assert_eq!(name(m, n, k), "hopper_v7_widetrim_kk", "{m}x{n}x{k}");
    }
    assert_eq!(name(448, 8192, 8192), "hopper_v7_widetrim_kk_cm");
    // Not the 64×96 pair in two columns (8192×192×8192: 0.72× against 0.88× for lean tiles;
    // twin pairs take it now), nor trimmed tiles in three columns, where they lost
    // (8192×480×8192: mid tiles trimmed to 160 0.89×, wide tiles 0.92×).
    assert_eq!(name(8192, 192, 8192), "hopper_v7_twin96_kk");
    assert_eq!(name(8192, 480, 8192), "hopper_v7");
    // (3000×480×8192 ran square pairs split until 7cab46c (2026-11-30), and whole lean
    // pairs since: the rule that whole waves take calls from thinly split square pairs.)
    assert_eq!(name(3000, 480, 8192), "hopper_v7_lean_kk_cm");
    // The mid tile trimmed in four columns, 520–640 (H200, e0716e8, 2026-11-30, forced against
    // what `auto` ran: 8192×600×8192 0.90× against 0.78× for square pairs, 4096×608×8192
    // 0.96× against 0.85×, 12288×640×4096 0.99× against 0.92×, 600×8192×8192 0.91× against
    // 0.77× for mid tiles, 640×16384×8192 0.96× against 0.85× for wide tiles); but where the
    // mid tile fits in three it stayed (8192×576×8192: 0.89× against 0.84×; below).
    for (m, n, k) in [(8192, 600, 8192), (4096, 608, 8192), (12288, 640, 4096)] {
        assert_eq!(name(m, n, k), "hopper_v7_midtrim_kk", "{m}x{n}x{k}");
    }
    // Written column-major, those two take the tall tile 160 wide since, in whole waves (H100,
    // forced, 2026-12-07: 0.921× and 0.989× against the mid tile trimmed's 0.861× and 0.907×).
    for (m, n, k) in [(600, 8192, 8192), (640, 16384, 8192)] {
        assert_eq!(name(m, n, k), "hopper_v7_tall160_kk_cm", "{m}x{n}x{k}");
    }
    // (608×12288×8192 takes four columns of long tiles 160 wide, 64 rows of them: priced, not
    // measured.)
    assert_eq!(name(608, 12288, 8192), "hopper_v7_long160_kk_cm");
    // Four columns of the tall tile 144 wide take 8192×576×8192 since (H100, forced, 2026-12-07:
    // 0.960× against the mid tile's 0.796×).
    assert_eq!(name(8192, 576, 8192), "hopper_v7_tall144_kk");
    // At M = 2048, twin pairs in four columns of pairs, one whole wave, where the trim tile
    // in four columns had beaten square and slim pairs (H200, de2b36d, 2026-11-30: 2048×640×4096
    // 1.00× against the trim tile's 0.91×, 640×2048×4096 0.98× against 0.88×); and split
    // (1536×448×8192, three columns, 0.85× against 0.77× for square pairs; 1152×600×8192,
    // four, not measured, from slim pairs).
    for (m, n, k) in [(2048, 520, 4096), (2048, 640, 4096), (1152, 600, 8192)] {
        assert_eq!(name(m, n, k), "hopper_v7_twin80_kk", "{m}x{n}x{k}");
    }
    for (m, n, k) in [(600, 2048, 4096), (640, 2048, 8192)] {
        assert_eq!(name(m, n, k), "hopper_v7_twin80_kk_cm", "{m}x{n}x{k}");
    }
    // Twin pairs 96 wide where lean tiles, whole, had won ties (4096×384×4096 1.00× against
    // 0.99×, 384×4096×4096 1.00× against 0.91×, 2048×768×4096 1.02× against 0.99×).
    for (m, n, k) in [(4096, 384, 4096), (2048, 768, 4096)] {
        assert_eq!(name(m, n, k), "hopper_v7_twin96_kk", "{m}x{n}x{k}");
    }
    assert_eq!(name(384, 4096, 4096), "hopper_v7_twin96_kk_cm");
    // Ties between the lean tile and its column-major form go to the form whose M is the
    // shorter; the mid tile's keep the first entry (H200, 5596121: 1536×1024×4096 and
    // 3072×512×4096 faster written column-major; ada9feb: 3.6–8% at 4096×288…384×4096,
    // twin pairs' now; the mid tile's ties went both ways). Twin pairs would share the
    // smaller operand at 3072×512, six times smaller.
    assert_eq!(name(3072, 512, 4096), "hopper_v7_lean_kk_cm");
    // Where the other side is at most 1.5 times longer, twin pairs sharing the smaller
    // operand in one whole wave beat the lean tiles (H200, c8c9f88, 2026-11-30: 1536×1024×4096
    // 0.99–1.00× cuBLAS against 0.94×).
    assert_eq!(name(1536, 1024, 4096), "hopper_v7_twin96_kk_cm");
    assert_eq!(name(1024, 1536, 4096), "hopper_v7_twin96_kk");
    assert_eq!(name(1024, 1536, 1024), "hopper_v7_lean_kk");
    assert_eq!(name(4096, 1536, 4096), "hopper_v7_mid_kk");
    // N from 129 to 224 where pairs of the twin tiles (tiles side by side along N, sharing A)
    // make at most a wave or need a split: A is the operand read from DRAM, and the pair
    // multicasts it (H200, forced, 91ffc57, 2026-11-30: 8192×160×8192 1.00× cuBLAS against 0.88×
    // for the trim tile, 8192×192×8192 0.99× against 0.88× for lean tiles and 0.95× for mid
    // ones, 8192×208×8192 1.04× against 0.90× for square pairs).
    for (m, n, k, twin) in [
        (8192, 136, 8192, 80),
        (8192, 160, 8192, 80),
        (4096, 160, 4096, 80),
        (2048, 160, 8192, 80),
        (3000, 144, 8192, 80),
        (8192, 176, 8192, 96),
        (4096, 192, 4096, 96),
        (8192, 224, 8192, 112),
    ] {
        assert_eq!(name(m, n, k), format!("hopper_v7_twin{twin}_kk"), "{m}x{n}x{k}");
    }
    assert_eq!(name(224, 8192, 8192), "hopper_v7_twin112_kk_cm");
    // Where twin pairs take two waves, pairs along M of larger tiles take one (measured
    // against them: 16384×160×4096 0.99× for mid tiles trimmed to 160 columns against 0.97×,
    // 16384×152×8192 0.96× against 0.94×; 1aad959 against mid tiles:
    // 16384×144×4096 0.95× against 0.87×, 16384×160×5120 0.98× against 0.90×,
    // 160×28672×8192 0.94× against 0.85× written column-major). There is no twin pair 64
    // wide: it beat slim pairs at 8192×128×8192 (0.98× against 0.94×), but lost to lean
    // tiles written column-major, which share the streamed operand too, at 12288×128×4096
    // (0.89× against 1.02×), and to slim pairs at 128×128×8192 (0.45× against 0.55×).
    for (m, n, k) in [(16384, 144, 4096), (16384, 160, 5120), (32768, 144, 4096), (16384, 152, 8192)] {
        assert_eq!(name(m, n, k), "hopper_v7_midtrim_kk", "{m}x{n}x{k}");
    }
    // 160×28672×8192 runs the twins in two waves since that price, whose whole wave no longer
    // pays for the split: 0.90× against 0.96×, a loss docs/performance.md records.
    assert_eq!(name(160, 16384, 5120), "hopper_v7_midtrim_kk_cm");
    assert_eq!(name(16384, 192, 4096), "hopper_v7_mid_kk");
    // At 14336 the two measured level (14336×160×4096 0.883–0.887 against 0.887–0.890,
    // 144×14336×4096 0.833 against 0.828); since the split price of 65eeaf8 (2026-12-01), which
    // counts a wholly split path 10% longer, the model takes the mid tile trimmed, whole.
    assert_eq!(name(14336, 160, 4096), "hopper_v7_midtrim_kk");
    assert_eq!(name(144, 14336, 4096), "hopper_v7_midtrim_kk_cm");
    assert_eq!(name(8192, 128, 8192), "hopper_v7_slim_kk");
    assert_eq!(name(12288, 128, 4096), "hopper_v7_narrow96_kk_cm"); // Bound by DRAM (`calls_bound_by_dram_run_whole_units_that_fill_the_sms`).
    // One row of twin pairs 112 wide at M ≤ 128, whole, where lean or square pairs split
    // (H200, 163c4f7, 2026-11-30: 128×14336×4096 1.02× against 0.92×, 112×14336×4096 0.96×
    // against 0.87–0.89×, 14336×128×4096 1.00× against 0.90×, 128×28672×8192 1.00× against
    // 0.98×; 128×14336×1024 1.06× against whole slim pairs' 1.05×); not where lean pairs
    // make the same whole wave (128×12288×4096: 1.01× against 0.98× for twin96), nor split
    // (128×8192×8192, slim pairs above: 0.99× against twin112's 0.93×).
    for (m, n, k) in [(128, 14336, 4096), (112, 14336, 4096), (128, 28672, 8192), (128, 14336, 1024)] {
        assert_eq!(name(m, n, k), "hopper_v7_twin112_kk", "{m}x{n}x{k}");
    }
    assert_eq!(name(14336, 128, 4096), "hopper_v7_twin112_kk_cm");
    // Also where square pairs run whole in one column, priced 2.3% below (H200,
    // forced, two rounds, 1088fb1, 2026-11-30: 12800×128×2048 0.99× against 0.94×, 13056×128×1024 1.08×
    // against 1.03×, 14720×128×8192 0.93× against 0.92×).
    for (m, n, k) in [(12800, 128, 2048), (13056, 128, 1024), (14720, 128, 8192), (14336, 128, 2048)] {
        assert_eq!(name(m, n, k), "hopper_v7_twin112_kk_cm", "{m}x{n}x{k}");
    }
    assert_eq!(name(128, 12288, 4096), "hopper_v7_narrow96_kk"); // Bound by DRAM (`calls_bound_by_dram_run_whole_units_that_fill_the_sms`).
    // N or M from 193 to 224 at large M or N: the wide tile trimmed to 224 columns, one
    // column of them, where wide tiles computed 256 (H200, 6fd4060, 2026-11-30: 32768×224×4096 1.00×
    // against 0.86×, 16384×208×4096 0.93× against 0.83×, 208×14336×4096 0.86× against 0.80×
    // for mid tiles); at 8192 twin pairs (above).
    for (m, n, k) in [(16384, 208, 4096), (32768, 224, 4096), (16384, 200, 5120), (14336, 208, 4096)] {
        assert_eq!(name(m, n, k), "hopper_v7_widetrim_kk", "{m}x{n}x{k}");
    }
    for (m, n, k) in [(208, 16384, 5120), (208, 14336, 4096)] {
        assert_eq!(name(m, n, k), "hopper_v7_widetrim_kk_cm", "{m}x{n}x{k}");
    }
    // Split at a long K, twin pairs 112 wide sharing B, the larger operand, take the call from
    // the wide tile trimmed sharing A (`Model::share_smaller`; H100, forced, 2026-12-07: at 196–221
    // rows against 5120–28672 columns 0.999–1.099× as fast, 203×5120×27648 0.964× cuBLAS against
    // 0.877×).
    assert_eq!(name(224, 28672, 8192), "hopper_v7_twin112_kk_cm");
    assert_eq!(name(8192, 208, 8192), "hopper_v7_twin112_kk");
    // The 160-column tiles in many columns where they make one or two whole waves, and the
    // tile before split by K (H200, forced, 1e44dc6, 2026-11-30: 512×5120×8192 1.02× cuBLAS
    // against 0.92× for wide tiles, 1024×5120×5120 0.97× against 0.91×, 10240×256×4096
    // 0.98× against 0.83× for square pairs, 128×10240×4096 1.05× against 0.95× for slim
    // pairs, 256×5120×5120 0.96–0.98× against 0.88× for square pairs); not at K = 1024
    // (640×3072×1024: slim pairs 0.97–1.02× against 0.82–0.85×), nor in more waves
    // (3072×5120×5120: mid tiles 0.99× against 0.96–0.98×).
    for (m, n, k) in [(512, 5120, 8192), (1024, 5120, 5120), (2048, 1280, 8192), (512, 10240, 8192)] {
        assert_eq!(name(m, n, k), "hopper_v7_midtrim_kk", "{m}x{n}x{k}");
    }
    assert_eq!(name(10240, 256, 4096), "hopper_v7_midtrim_kk_cm");
    for (m, n, k) in [(128, 10240, 4096), (256, 5120, 5120)] {
        assert_eq!(name(m, n, k), "hopper_v7_trim_kk", "{m}x{n}x{k}");
    }
    // At 1024×1280 twin pairs 80 wide share A in one whole wave (H200, c8c9f88, 2026-11-30:
    // 0.97× cuBLAS against the trim tiles' 0.91×); at K = 1024 the trim tiles stay.
    assert_eq!(name(1024, 1280, 4096), "hopper_v7_twin80_kk");
    assert_eq!(name(1280, 1024, 8192), "hopper_v7_twin80_kk_cm");
    assert_eq!(name(640, 3072, 1024), "hopper_v7_slim_kk");
    // Where the pairs sharing the larger operand are priced as low, they keep the call
    // (H200, 56d947e, 2026-11-30: 1024×1152×4096 twin80 1.12–1.13× cuBLAS against 1.00–1.05×
    // sharing the smaller, 1024×1408×8192 twin96 0.95× against 0.92–0.93×).
    for (m, n, k, kernel) in
        [(1024, 1152, 4096, "twin80_kk_cm"), (1024, 1408, 8192, "twin96_kk_cm"), (1536, 1152, 4096, "twin112_kk_cm")]
    {
        assert_eq!(name(m, n, k), format!("hopper_v7_{kernel}"), "{m}x{n}x{k}");
    }
    // Square pairs split with fewer units than pairs give way to whole waves priced within 6%
    // of them (H200, forced, 7cab46c, 2026-11-30: 3072×384×4096 trim tiles written column-major
    // 0.95× cuBLAS against 0.82×, 11008×128×4096 lean tiles written column-major 0.97×
    // against 0.85×, 256×4096×11008 slim pairs 1.02× against 0.93–0.97×, 13824×128×4096
    // twin pairs 0.97× against 0.89×), not to other splits (1024×1792×4096: mid tiles split
    // 0.78× against 0.84×).
    for (m, n, k, kernel) in [
        (3072, 384, 4096, "trim_kk_cm"),
        (11008, 128, 4096, "lean_kk_cm"),
        (256, 4096, 11008, "slim_kk"),
        (13824, 128, 4096, "twin112_kk_cm"),
    ] {
        assert_eq!(name(m, n, k), format!("hopper_v7_{kernel}"), "{m}x{n}x{k}");
    }
    assert_eq!(name(1024, 1792, 4096), "hopper_v7_square_kk");
    assert_eq!(name(3072, 5120, 5120), "hopper_v7_mid_kk");
    // The wide tile trimmed in five columns or more where it makes at most three whole waves
    // (H200, forced, two rounds, c8c9f88, 2026-11-30: 512×7168×4096 1.00–1.03× cuBLAS against
    // mid tiles' 0.89×, 14336×256×4096 1.07× against 0.92–0.93×, 256×28672×4096 1.05×
    // against wide tiles split, 1.00×, 512×22016×4096 0.97× against 0.93×); not in more
    // waves (12288³), nor in fewer than two rows of tiles (14336×208×4096, one column above).
    for (m, n, k) in [(512, 7168, 4096), (256, 28672, 4096), (512, 22016, 4096), (1792, 6144, 4096)] {
        assert_eq!(name(m, n, k), "hopper_v7_widetrim_kk", "{m}x{n}x{k}");
    }
    assert_eq!(name(14336, 256, 4096), "hopper_v7_widetrim_kk_cm");
    assert_eq!(name(12288, 12288, 12288), "hopper_v7");
    // A rule gave whole square pairs priced within 1% these calls (H200, 012e30e, 2026-11-30:
    // 4864×2176×4096 square pairs 0.98× cuBLAS against 0.94–0.95×); without it the wide tile
    // trimmed ran 1.04× and 1.09× the square pairs' speed (H100, forced, 2026-12-07).
    for (m, n, k) in [(4864, 2176, 4096), (3200, 3200, 4096)] {
        assert_eq!(name(m, n, k), "hopper_v7_widetrim_kk", "{m}x{n}x{k}");
    }
    // (5504×1920×8192 and 1536×2176×4096 went to long tiles 144 wide when those came: priced,
    // not measured.)
    assert_eq!(name(5504, 1920, 8192), "hopper_v7_long144_kk_cm");
    assert_eq!(name(1536, 2176, 4096), "hopper_v7_long144_kk");
    // A column-major C turns the same calls round: M = 160 is then the kernel's N.
    let col = GemmOp::new(160, 8192, 8192).c(Layout::ColMajor, 160);
    assert_eq!(choose(kernels.iter().copied(), &col, 132, &Model::BUILT_IN).unwrap().name, "hopper_v7_twin80_kk");
    // The trim tile takes several columns of tiles with alpha = 1 and beta = 0 only (its last
    // staging box shifted); the narrow tiles, narrower than a box, take one column always.
    let trim = kernels.iter().find(|s| s.name == "hopper_v7_trim_kk").unwrap();
    assert_eq!(supports(trim, &GemmOp::new(8192, 168, 64)), Ok(()));
    assert!(
        matches!(supports(trim, &GemmOp::new(8192, 168, 64).beta(1.0)), Err(Error::Unsupported { reason, .. }) if reason.contains("one column of tiles"))
    );
    assert_eq!(supports(trim, &GemmOp::new(8192, 160, 64).beta(1.0)), Ok(()));
    let narrow16 = kernels.iter().find(|s| s.name == "hopper_v7_narrow16_kk_cm").unwrap();
    assert!(
        matches!(supports(narrow16, &GemmOp::new(24, 4096, 64)), Err(Error::Unsupported { reason, .. }) if reason.contains("one column of tiles"))
    );
    assert_eq!(supports(trim, &GemmOp::new(8192, 160, 64)), Ok(()));
    // The entry that writes C column-major needs whole 16-byte chunks of it: not at N = 8190.
    let odd = GemmOp::new(160, 8190, 8192).c(Layout::RowMajor, 8192);
    let cm = kernels.iter().find(|s| s.name == "hopper_v7_lean_kk_cm").unwrap();
    assert!(matches!(supports(cm, &odd), Err(Error::Unsupported { reason, .. }) if reason.contains("multiples of 8")));
    assert_eq!(choose(kernels.iter().copied(), &odd, 132, &Model::BUILT_IN).unwrap().name, "hopper_v7_square_kk");
    // A dense C whose rows are not 16-byte multiples, written row-major: stored from
    // registers. Written column-major, it is refused before any device call, with the
    // leading dimension named, and `auto` takes another entry.
    let wide = kernels.iter().find(|s| s.name == "hopper_v7_widetrim_kk").unwrap();
    let at = 1 << 20;
    let p = plan(wide, &GemmOp::new(1000, 1500, 4096), at, at, at).unwrap();
    assert_eq!(p.args.tma_store_columns(1500), 0);
    assert_eq!(p.args.tma_store_columns(1504), 0, "no column of such a C is TMA's");
    assert_eq!(plan(wide, &GemmOp::new(1000, 1504, 4096), at, at, at).unwrap().args.tma_store_columns(1504), 1504);
    let tall = GemmOp::new(160, 8192, 8192).c(Layout::RowMajor, 8196);
    assert!(
        matches!(supports(cm, &tall), Err(Error::Unsupported { reason, .. }) if reason.contains("leading dimension (8196)"))
    );
    assert!(!choose(kernels.iter().copied(), &tall, 132, &Model::BUILT_IN).unwrap().c_col_major);
    assert!(choose(kernels.iter().copied(), &GemmOp::new(160, 8192, 8192), 132, &Model::BUILT_IN).unwrap().c_col_major);
}

#[test]
fn the_issue_sweep_keeps_its_measured_plans() {
    // The kernel and the stream-K split of each shape of the Hopper performance target, as
    // measured in the README's sweep: a change to the chooser or the schedule that moves one
    // of them has to be measured again.
    let kernels: Vec<&KernelSpec> = hopper_kernels();
    let wide = [
        ((8192, 8192, 8192), true),
        ((4096, 4096, 4096), false),
        ((2048, 2048, 2048), false),
        ((16384, 16384, 16384), true),
        ((8192, 28672, 8192), true),
        ((8192, 8192, 28672), true),
        ((4096, 14336, 4096), true),
        ((8192, 1024, 8192), false),
        ((8000, 8000, 8000), true),
        ((6144, 6144, 6144), true),
        ((1024, 8192, 8192), false),
    ];
    for ((m, n, k), splits) in wide.into_iter().chain([((128, 8192, 8192), false)]) {
        let op = GemmOp::new(m, n, k);
        let s = choose(kernels.iter().copied(), &op, 132, &Model::BUILT_IN).unwrap();
        let expected = if m == 128 { (64, 128) } else { (128, 256) };
        assert_eq!((s.tile_m, s.tile_n), expected, "{m}x{n}x{k}");
        let sk = s.schedule(&op.shape_args(), 132 / s.cluster).unwrap();
        assert_eq!(sk.splits(), splits, "{m}x{n}x{k}: {sk:?}");
    }
}

#[test]
fn the_tall_tile_takes_mid_size_calls_its_256_rows_cover_in_fewer_waves() {
    let kernels: Vec<&KernelSpec> = hopper_kernels();
    let why = |m, n, k| {
        let (s, rule) = choose_why(kernels.iter().copied(), &GemmOp::new(m, n, k), 132, &Model::BUILT_IN).unwrap();
        (s.spec.name, rule)
    };
    // A few hundred rows of M as the tile's 128 columns, N along its 256 rows (H100, forced,
    // 2026-12-06: 855×9024×8704 0.958× cuBLAS against 0.885× for wide tiles split, 836×15360×5120
    // 0.932× against 0.893×, 634×13824×5120 0.990× against 0.944×; 835×59136×8192, 0.925× against
    // 0.873×, the long tiles took since, priced); the transposed calls take it row-major.
    for (m, n, k) in [(855, 9024, 8704), (634, 13824, 5120)] {
        assert_eq!(why(m, n, k), ("hopper_v7_tall_kk_cm", None), "{m}x{n}x{k}");
    }
    assert_eq!(why(9024, 855, 8704), ("hopper_v7_tall_kk", None));
    // Split, it gives way to whole waves priced within 5%: 128 long (836×15360×5120 to the wide
    // tile trimmed, 1.02× the tall tile split's speed in two forced runs, H100, 2026-12-07;
    // 592×7424×11520 went to the mid tile trimmed so, before the tall tile 160 wide took it
    // whole). Whole and cheapest, the wide tile trimmed takes 881×16384×4096 outright.
    assert_eq!(why(836, 15360, 5120), ("hopper_v7_widetrim_kk_cm", Some(Rule::TallSplit)));
    assert_eq!(why(881, 16384, 4096), ("hopper_v7_widetrim_kk_cm", None));
    // One column of tall tiles (M ≤ 128) is left to the tiles for small M.
    assert_eq!(why(117, 35840, 5120).0, "hopper_v7_lean_kk");
    assert_eq!(why(128, 16384, 8192).0, "hopper_v7_slim_kk");
}

#[test]
fn calls_bound_by_dram_run_whole_units_that_fill_the_sms() {
    // Decode-like calls: M of 1–64 against N = 28672 split every unit of the narrow or thin
    // tiles; bound by DRAM, whole units that fill the SMs stream as fast without the fix-ups
    // (H100, forced against those splits, 2026-12-07: 1.014–1.042×).
    let kernels: Vec<&KernelSpec> = hopper_kernels();
    let pick = |m, n, k| {
        let (p, _) = choose_why(kernels.iter().copied(), &GemmOp::new(m, n, k), 132, &Model::BUILT_IN).unwrap();
        (p.spec.name, p.split())
    };
    assert_eq!(pick(1, 28672, 8192), ("hopper_v7_twin112_kk", false));
    assert_eq!(pick(32, 28672, 4096), ("hopper_v7_twin112_kk", false));
    assert_eq!(pick(64, 28672, 8192), ("hopper_v7_trim_kk", false));
    // The 64×96 pair in one row of many columns, whole, where the split slim pairs ran 0.92× and
    // it 1.06× cuBLAS (98×5120×5120; `hgemm survey`, H100, 2026-12-07), and column-major where
    // N is the short side (5989×128×6208: 1.01× against 0.91×).
    assert_eq!(pick(98, 5120, 5120), ("hopper_v7_narrow96_kk", false));
    assert_eq!(pick(5989, 128, 6208), ("hopper_v7_narrow96_kk_cm", false));
    // Whole units that leave a quarter of the SMs idle stay split: 5×4608×36864 ran 0.79× whole
    // in 72 CTAs against 1.04× split (H100, 2026-12-07).
    assert_eq!(pick(5, 4608, 36864), ("hopper_v7_narrow16_kk_cm", true));
    // Larger calls are priced by their tiles alone: the wide tile keeps its whole waves.
    let op = GemmOp::new(8192, 8192, 8192);
    let wide = choose(kernels.iter().copied(), &op, 132, &Model::BUILT_IN).unwrap();
    assert_eq!(wide.schedule(&op.shape_args(), 66).unwrap().dp_units, 14 * 66);
}

/// Hopper's kernels, what a Hopper device's handle prices (Blackwell's are weighed on a
/// Blackwell device alone: host/tests/blackwell.rs).
fn hopper_kernels() -> Vec<&'static KernelSpec> {
    hgemm_kernels::kernels().filter(|k| k.family == hgemm_kernels::spec::Family::Hopper).collect()
}

#[test]
fn the_long_tiles_take_mid_size_calls_they_cover_in_few_columns_and_full_waves() {
    let kernels: Vec<&KernelSpec> = hopper_kernels();
    let name = |m, n, k| choose(kernels.iter().copied(), &GemmOp::new(m, n, k), 132, &Model::BUILT_IN).unwrap().name;
    // Written column-major, 192 rows along N and M in a few columns (H100, forced, 2026-12-07,
    // against the picks before: 2059×4096×4096 0.961× cuBLAS against 0.884×, 820×4096×16384 0.915×
    // against 0.816×, 555×6144×4096 0.965× against 0.866×,
    // 293×12800×7488 0.952× against 0.749×); row-major where M is the short side along their 192
    // (361×18432×16384 1.058× against 0.964×).
    for (m, n, k, entry) in [
        (2059, 4096, 4096, "hopper_v7_long176_kk_cm"),
        (820, 4096, 16384, "hopper_v7_long144_kk_cm"),
        (555, 6144, 4096, "hopper_v7_long144_kk_cm"),
        (293, 12800, 7488, "hopper_v7_long160_kk_cm"),
        (361, 18432, 16384, "hopper_v7_long144_kk"),
    ] {
        assert_eq!(name(m, n, k), entry, "{m}x{n}x{k}");
    }
    let long =
        |m, n, k| choose(kernels.iter().copied(), &GemmOp::new(m, n, k), 132, &Model::BUILT_IN).unwrap().tile_m == 192;
    // Not in one column of tiles (104×28672×3584: 0.96× against twin112 pairs' 1.06×), nor in
    // three (420×18432×7168: 0.885× against the wide tile trimmed's 0.948×), nor below the K
    // they were measured at.
    assert!(!long(104, 28672, 3584));
    assert!(!long(111, 5120, 27648));
    assert_eq!(name(420, 18432, 7168), "hopper_v7_widetrim_kk_cm");
    assert!(!long(2059, 4096, 2048));
    // The sweep keeps the wide tile (8192³ and the other large calls).
    assert_eq!(name(8192, 8192, 8192), "hopper_v7");
}

#[test]
fn the_tall_tiles_144_and_160_wide_take_calls_they_run_whole() {
    let kernels: Vec<&KernelSpec> = hopper_kernels();
    let name = |m, n, k| choose(kernels.iter().copied(), &GemmOp::new(m, n, k), 132, &Model::BUILT_IN).unwrap().name;
    // Written column-major, 256 rows along N and M in columns of 144 or 160 (H200, forced,
    // 2026-12-07, against the picks before: 827×5120×5120 0.966× cuBLAS against 0.832× for the
    // mid tile trimmed, 1293×3584×14336 0.986× against 0.856× for the mid tile, 610×8192×8192
    // 0.952× against 0.893×, 592×7424×11520 0.918× against 0.893×, 2396×27648×5120 0.977×
    // against 0.939× for the wide tile split, an eighth of its units split); row-major where M
    // is the long side (925×4608×3584: 0.923× against 0.867×).
    for (m, n, k, entry) in [
        (827, 5120, 5120, "hopper_v7_tall144_kk_cm"),
        (1293, 3584, 14336, "hopper_v7_tall144_kk_cm"),
        (610, 8192, 8192, "hopper_v7_tall160_kk_cm"),
        (592, 7424, 11520, "hopper_v7_tall160_kk_cm"),
        (2396, 27648, 5120, "hopper_v7_tall160_kk_cm"),
        (925, 4608, 3584, "hopper_v7_tall144_kk"),
    ] {
        assert_eq!(name(m, n, k), entry, "{m}x{n}x{k}");
    }
    // Not where more than an eighth of their units split (288×22016×4096, every unit: 0.84×
    // against long144_kk_cm's 0.92×; 309×35840×5120, half: 0.92× against 0.96×).
    let wider_tall = |m, n, k| {
        let s = choose(kernels.iter().copied(), &GemmOp::new(m, n, k), 132, &Model::BUILT_IN).unwrap();
        s.tile_m == 256 && s.tile_n > 128
    };
    assert!(!wider_tall(288, 22016, 4096));
    assert!(!wider_tall(309, 35840, 5120));
    assert!(!wider_tall(711, 5120, 17920));
}

#[test]
fn pairs_sharing_the_smaller_operand_pay_for_it_at_a_few_hundred_rows() {
    let kernels: Vec<&KernelSpec> = hopper_kernels();
    let cost = |m, n, name: &str, model: &Model| {
        let op = GemmOp::new(m, n, 8192).stream_k(false);
        price(kernels.iter().copied(), &op, 132, model).find(|p| p.spec.name == name).unwrap().cost
    };
    let free = Model { share_smaller: 0.0, ..Model::BUILT_IN };
    let paid = |m, n, name| cost(m, n, name, &Model::BUILT_IN) / cost(m, n, name, &free);
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    // Mid pairs written column-major stack along N and share A: the smaller operand where M < N.
    assert!(close(paid(346, 5120, "hopper_v7_mid_kk_cm"), 1.0 + 15.0 / 346.0));
    assert!(close(paid(346, 5120, "hopper_v7_mid_kk"), 1.0));
    assert!(close(paid(5120, 346, "hopper_v7_mid_kk"), 1.0 + 15.0 / 346.0));
    // Twin pairs stack along N: sharing A, the larger operand where M > N.
    assert!(close(paid(5120, 200, "hopper_v7_twin112_kk"), 1.0));
    assert!(close(paid(200, 5120, "hopper_v7_twin112_kk"), 1.0 + 15.0 / 200.0));
    // Not at a short side DRAM's time prices, nor beyond 512 rows, nor for a tile without a
    // cluster, nor where the call is square.
    assert!(close(paid(600, 5120, "hopper_v7_mid_kk_cm"), 1.0));
    assert!(close(paid(120, 5120, "hopper_v7_mid_kk_cm"), 1.0));
    assert!(close(paid(5120, 5120, "hopper_v7_mid_kk_cm"), 1.0));
    assert!(close(paid(48, 5120, "hopper_v7_thin_kk"), 1.0));
}
