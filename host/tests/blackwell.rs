//! The host's side of a call on a Blackwell device, without one: which entry `auto` picks among
//! Blackwell's with the device's SM count, what each validation path says, and the tensor maps,
//! arguments and grid a launch would get. The device is described by a [`DeviceInfo`] made here,
//! as `Gemm::new` would read it from a B200 (compute capability 10.0, 148 SMs) or a GB300 (10.3).

use hgemm::plan::{for_kernel, launch_offline, plan, plan_fused, supports};
use hgemm::{Activation, BiasType, DeviceInfo, Error, Family, GemmOp, KernelSpec, Lack, Layout, choose};
use hgemm_kernels::spec::Major;

fn b200() -> DeviceInfo {
    DeviceInfo {
        name: "NVIDIA B200".into(),
        major: 10,
        minor: 0,
        sms: 148,
        smem_optin: 227 * 1024,
        l2_bytes: 126 << 20,
    }
}

/// The kernels a Blackwell device's handle loads (`Gemm::new` keeps its family's).
fn blackwell() -> Vec<&'static KernelSpec> {
    hgemm_kernels::kernels().filter(|k| k.family == Family::Blackwell).collect()
}

/// What `auto` picks on a B200 for `op`.
fn auto(op: &GemmOp) -> Option<&'static KernelSpec> {
    choose::choose(blackwell().into_iter(), op, b200().sms, &hgemm::Model::BUILT_IN)
}

/// Operands in the orders given, A's and B's rows rounded up to 8 elements apart (TMA's 16
/// bytes), C dense, alpha 0.75, `beta`, `batch` entries each after the last.
fn call(m: usize, n: usize, k: usize, (a, b, c): (Layout, Layout, Layout), beta: f32, batch: usize) -> GemmOp {
    let ld = |l: Layout, rows: usize, cols: usize| if l == Layout::RowMajor { cols } else { rows };
    let up8 = |x: usize| x.div_ceil(8) * 8;
    let op =
        GemmOp::new(m, n, k).a(a, up8(ld(a, m, k))).b(b, up8(ld(b, k, n))).c(c, ld(c, m, n)).alpha(0.75).beta(beta);
    if batch > 1 { op.batched(batch, op.stride_a, op.stride_b, m * n) } else { op }
}

const ORDERS: [Layout; 2] = [Layout::RowMajor, Layout::ColMajor];

#[test]
fn blackwell_devices_run_the_blackwell_entries() {
    for (minor, name) in [(0, "NVIDIA B200"), (3, "NVIDIA GB300")] {
        let info = DeviceInfo { minor, name: name.into(), ..b200() };
        assert_eq!(info.family(), Ok(Family::Blackwell));
    }
    // Every entry fits the shared memory a block may opt in to (Gemm::new refuses one that does
    // not, Error::SharedMemory), and the library's eight are among them.
    for k in blackwell() {
        assert!(k.smem_bytes <= b200().smem_optin, "{}: {} bytes", k.name, k.smem_bytes);
    }
    let general: Vec<_> = blackwell().into_iter().filter(|k| k.general).map(|k| k.name).collect();
    assert_eq!(
        general,
        [
            "blackwell_lib_kk",
            "blackwell_lib_kmn",
            "blackwell_lib_mnk",
            "blackwell_lib_mnmn",
            "blackwell_lib_n128_kk",
            "blackwell_lib_n128_kmn",
            "blackwell_lib_n128_mnk",
            "blackwell_lib_n128_mnmn",
            "blackwell_lib_single_kk",
            "blackwell_lib_single_kmn",
            "blackwell_lib_single_mnk",
            "blackwell_lib_single_mnmn",
        ]
    );
}

#[test]
fn auto_takes_the_128_wide_tile_where_256_wide_ones_leave_pairs_idle() {
    let name = |m, n, k| auto(&GemmOp::new(m, n, k)).unwrap().name;
    // 32 × 32 pairs of 256×256 tiles fill a B200's 74 pairs 13.8 times: the wide tile.
    assert_eq!(name(8192, 8192, 8192), "blackwell_lib_kk");
    assert_eq!(name(2048, 2048, 8192), "blackwell_lib_kk");
    // 4 × 8 pairs of 256×256 tiles leave 42 of 74 pairs idle; 4 × 16 of 256×128 leave 10.
    assert_eq!(name(1024, 2048, 8192), "blackwell_lib_n128_kk");
    // N = 128: half of each wide tile's MMA would be empty, none of the narrow one's.
    assert_eq!(name(8192, 128, 8192), "blackwell_lib_n128_kk");
    let spec = auto(&GemmOp::new(1024, 2048, 8192)).unwrap();
    assert_eq!((spec.tile_m, spec.tile_n), (128, 128));
    // Its 64 units on 74 pairs: each split by K over the pairs (stream-K), so that none idles.
    let s = launch_offline(spec, &GemmOp::new(1024, 2048, 8192), 148).unwrap();
    assert_eq!(s.grid, 148);
    assert!(s.split.is_some_and(|sk| sk.units == 64 && sk.dp_units == 0 && sk.workers == 74), "{:?}", s.split);
}

#[test]
fn calls_of_a_few_rows_take_single_ctas() {
    // At most 128 rows: a pair's second CTA would compute rows past M only. One CTA a tile, each
    // SM a worker of its own (148 on a B200), split by K where the units are fewer.
    for (m, n, k) in [(1, 4096, 4096), (16, 8192, 8192), (64, 14336, 4096), (128, 4096, 16384)] {
        let op = GemmOp::new(m, n, k);
        let spec = auto(&op).unwrap();
        assert_eq!((spec.name, spec.cluster, spec.tile_m, spec.tile_n), ("blackwell_lib_single_kk", 1, 128, 128));
        let s = launch_offline(spec, &op, 148).unwrap();
        let units = n.div_ceil(128) as u32;
        assert_eq!(s.cluster, 1);
        match s.split {
            Some(sk) => assert_eq!((s.grid, sk.workers, sk.units), (148, 148, units), "{m}x{n}x{k}"),
            None => assert_eq!(s.grid, units.min(148), "{m}x{n}x{k}"),
        }
    }
    // The same with C column-major: the entry computes Cᵀ, whose rows are the call's N.
    let op = GemmOp::new(4096, 32, 4096).c(Layout::ColMajor, 4096);
    assert_eq!(auto(&op).unwrap().name, "blackwell_lib_single_kk");
    // 129 rows and more take pairs, which share B.
    assert_eq!(auto(&GemmOp::new(129, 4096, 4096)).unwrap().cluster, 2);
    assert_eq!(auto(&GemmOp::new(2048, 2048, 2048)).unwrap().cluster, 2);
}

#[test]
fn few_tile_long_k_calls_are_split_over_every_pair() {
    // (call, units of the entry auto takes, whole units before the split part)
    for (m, n, k, units, dp) in [
        // A few tiles and a long K: every unit split, every pair busy.
        (512, 512, 32768, 8, 0),
        (256, 4096, 16384, 32, 0),
        // 32 × 32 units on 74 pairs: 13 whole waves, the 62 units left dealt out by K.
        (8192, 8192, 8192, 1024, 962),
    ] {
        let op = GemmOp::new(m, n, k);
        let spec = auto(&op).unwrap();
        let s = launch_offline(spec, &op, 148).unwrap();
        let sk = s.split.unwrap_or_else(|| panic!("{m}x{n}x{k}: not split"));
        assert_eq!((s.grid, sk.workers, sk.units, sk.dp_units), (148, 74, units, dp), "{m}x{n}x{k}: {sk:?}");
        // The kernel finds its workspace slots where the host's workspace has them.
        let ws = hgemm_kernels::sched::Workspace { partial_bytes: spec.stream_k.unwrap().partial_bytes };
        assert_eq!(spec.stream_k.unwrap().partial_bytes, 128 * spec.tile_n * 4);
        assert!(ws.bytes(148) >= 148 * 128 * spec.tile_n as u64 * 4);
        // Forbidden by the call, nothing is split and no more pairs than units are launched.
        let whole = launch_offline(spec, &op.stream_k(false), 148).unwrap();
        assert_eq!((whole.split, whole.grid), (None, 2 * units.min(74)), "{m}x{n}x{k}");
    }
    // One K block per unit leaves nothing to split.
    let op = GemmOp::new(256, 512, 64);
    assert_eq!(launch_offline(auto(&op).unwrap(), &op, 148).unwrap().split, None);
}

#[test]
fn auto_takes_every_order_c_layout_beta_batch_and_partial_tile() {
    let sms = b200().sms;
    // Whole units, tiles and K slices partial, a single small tile, M and N not multiples of 8
    // (a ragged C in either layout), K = 0.
    for (m, n, k) in [(8192, 8192, 8192), (304, 520, 72), (1, 8, 8), (257, 301, 4104), (4096, 16, 0)] {
        for (a, b, c) in ORDERS.iter().flat_map(|&a| ORDERS.iter().flat_map(move |&b| ORDERS.map(|c| (a, b, c)))) {
            for beta in [0.0, -0.5] {
                for batch in [1, 3] {
                    let op = call(m, n, k, (a, b, c), beta, batch);
                    let what = format!("{m}x{n}x{k} {a:?} {b:?} C {c:?} beta {beta} batch {batch}");
                    let spec = auto(&op).unwrap_or_else(|| panic!("{what}: no entry"));
                    assert!(spec.general && spec.name.starts_with("blackwell_lib_"), "{what}: {}", spec.name);
                    // The entry reads the orders of the call in its form: C row-major, so a
                    // column-major C has A and B trade places, each read the other way round.
                    let (kop, swapped) = for_kernel(spec, &op);
                    assert_eq!(swapped, c == Layout::ColMajor, "{what}");
                    let major = |l: Layout, k_major: Layout| if l == k_major { Major::K } else { Major::MN };
                    assert_eq!(spec.a_major, major(kop.a_layout, Layout::RowMajor), "{what}");
                    assert_eq!(spec.b_major, major(kop.b_layout, Layout::ColMajor), "{what}");
                    assert_eq!(supports(spec, &op), Ok(()), "{what}");
                    // Rank-3 maps of A, B and C (no edge maps), the call's scalars, its batch.
                    let p = plan(spec, &op, 0x10000, 0x20000, 0x30000).unwrap();
                    assert_eq!(p.maps.len(), 3, "{what}");
                    // (With K = 0, A's and B's maps are any valid ones: they are not read.)
                    let read = if k > 0 { &p.maps[..] } else { &p.maps[2..] };
                    assert!(read.iter().all(|m| m.rank == 3 && m.dims[2] == batch as u64), "{what}");
                    assert_eq!((p.args.alpha, p.args.beta, p.args.batch), (0.75, beta, batch as u32), "{what}");
                    assert_eq!((p.args.m, p.args.n), (kop.m as u32, kop.n as u32), "{what}");
                    // C's map is C as it lies in memory, rows of its contiguous dimension, as far
                    // as TMA writes them (the threads store the rest); none where TMA writes none.
                    let (rows, len) = if c == Layout::RowMajor { (m, n) } else { (n, m) };
                    match p.args.tma_store_columns(len as u32) {
                        0 => assert_ne!(p.maps[2].address, 0x30000, "{what}"),
                        tma => {
                            assert_eq!(p.maps[2].dims[..2], [tma as u64, rows as u64], "{what}");
                            assert_eq!(p.maps[2].box_dims[..2], [64, 128], "{what}");
                        }
                    }
                    if k > 0 {
                        // A's map is the caller's B where the operands traded places.
                        assert_eq!(p.maps[0].address, if swapped { 0x20000 } else { 0x10000 }, "{what}");
                        let mn_box = |major: Major, rows: u32| if major == Major::MN { [64, 64] } else { [64, rows] };
                        assert_eq!(p.maps[0].box_dims[..2], mn_box(spec.a_major, 128), "{what}");
                        // Each CTA of a pair loads its share of B: half the tile's columns.
                        assert_eq!(spec.b_share_rows(), spec.tile_n / spec.cluster, "{what}");
                        assert_eq!(p.maps[1].box_dims[..2], mn_box(spec.b_major, spec.b_share_rows()), "{what}");
                    }
                    // One row of pairs (or single CTAs): every one where the schedule splits units
                    // by K (stream-K), otherwise no more than the device holds or the units need.
                    let s = launch_offline(spec, &op, sms).unwrap();
                    let units = spec.scheduler(kop.m as u32, kop.n as u32).num_tiles() * batch as u32;
                    let g = spec.cluster;
                    assert_eq!((s.cluster, s.grid_y), (g, 1), "{what}");
                    match s.split {
                        Some(sk) => {
                            assert_eq!((s.grid, sk.workers, sk.units), (sms, sms / g, units), "{what}");
                            assert!(k >= 2 * 64, "{what}: split with {} K blocks", k.div_ceil(64));
                        }
                        None => assert_eq!(s.grid, g * units.min(sms / g), "{what}"),
                    }
                }
            }
        }
    }
}

#[test]
fn the_sm_count_sizes_the_grid() {
    let spec = auto(&GemmOp::new(8192, 8192, 8192)).unwrap();
    assert_eq!(spec.name, "blackwell_lib_kk");
    // 32 × 32 units of 256×256: a B200's 74 pairs, or every pair of a part with fewer SMs.
    for (sms, grid) in [(148, 148), (160, 160), (132, 132), (147, 146)] {
        assert_eq!(launch_offline(spec, &GemmOp::new(8192, 8192, 8192), sms).unwrap().grid, grid, "{sms} SMs");
    }
    // Fewer units than pairs: no idle pair is launched.
    assert_eq!(launch_offline(spec, &GemmOp::new(304, 304, 64), 148).unwrap().grid, 2 * 2 * 2);
}

#[test]
fn fused_epilogues_reach_the_library_entries_and_the_ladder_refuses_them_by_name() {
    let fused = [
        GemmOp::new(256, 256, 64).bias(BiasType::Bf16),
        GemmOp::new(256, 256, 64).activation(Activation::Relu),
        GemmOp::new(300, 520, 64).bias(BiasType::F32).activation(Activation::GeluErf).beta(0.5),
        GemmOp::new(300, 520, 64).bias(BiasType::Bf16).activation(Activation::Silu).c(Layout::ColMajor, 304),
        GemmOp::new(256, 256, 64).activation(Activation::Silu).gated(),
        GemmOp::new(304, 512, 64).activation(Activation::GeluTanh).gated().bias(BiasType::F32).c(Layout::ColMajor, 304),
    ];
    for op in fused {
        let spec = auto(&op).unwrap_or_else(|| panic!("{op:?}"));
        assert!(spec.general, "{}", spec.name);
        let bias = op.bias.map(|ty| (0x40000, ty));
        let p = plan_fused(spec, &op, 0x10000, 0x20000, bias, 0x30000).unwrap();
        // The epilogue reaches the kernel; with C column-major (Cᵀ computed) its bias and gating
        // run along the kernel's M.
        let swapped = op.c_layout == Layout::ColMajor;
        let expected = if swapped { op.epilogue().along_m() } else { op.epilogue() };
        assert_eq!((p.args.epilogue, p.args.bias), (expected, bias.map_or(0, |b| b.0)), "{op:?}");
        // A gated call's C map is its output, half as wide (tall) as the GEMM.
        if op.gated {
            let (rows, len) = if swapped { (op.n / 2, op.m) } else { (op.m, op.n / 2) };
            assert_eq!(p.maps[2].dims[..2], [len as u64, rows as u64], "{op:?}");
        }
        // Blackwell's ladder has no fused epilogue.
        for v in hgemm_kernels::blackwell::LADDER {
            assert_eq!(supports(v, &op), Err(Error::Lacks { kernel: v.name, lack: Lack::FusedEpilogue }));
        }
    }
    let e = Error::Lacks { kernel: "blackwell_v7", lack: Lack::FusedEpilogue }.to_string();
    assert!(e.contains("blackwell_v7") && e.contains("fused epilogue") && e.contains("Blackwell"), "{e}");
    // With a bias buffer too, the ladder's refusal comes before the bias is looked at.
    let op = GemmOp::new(256, 256, 64).bias(BiasType::F32);
    let v7 = &hgemm_kernels::blackwell::v7::SPEC;
    assert_eq!(
        plan_fused(v7, &op, 0x1000, 0x2000, Some((0x4000, BiasType::F32)), 0x3000),
        Err(Error::Lacks { kernel: v7.name, lack: Lack::FusedEpilogue })
    );
}

#[test]
fn a_ragged_c_is_stored_by_the_threads() {
    let kk = blackwell().into_iter().find(|k| k.name == "blackwell_lib_kk").unwrap();
    // N not a multiple of 8 (row-major C), M not one (column-major C: the kernel's N), a leading
    // dimension or a batch stride of C not one: `auto` takes each, as on Hopper.
    for op in [
        GemmOp::new(256, 301, 64),
        GemmOp::new(301, 256, 64).c(Layout::ColMajor, 304).a(Layout::ColMajor, 304).b(Layout::RowMajor, 256),
        GemmOp::new(256, 256, 64).c(Layout::RowMajor, 260),
        GemmOp::new(256, 256, 64).batched(2, 256 * 64, 256 * 64, 256 * 256 + 4),
    ] {
        let spec = auto(&op).unwrap_or_else(|| panic!("{op:?}"));
        assert!(spec.stores_any_c(), "{}", spec.name);
        plan(spec, &op, 0x10000, 0x20000, 0x30000).unwrap_or_else(|e| panic!("{op:?}: {e}"));
    }
    // Rows of 301 elements 304 apart: TMA writes the first 296 columns (its map stops there), the
    // threads the last 5.
    let op = GemmOp::new(256, 301, 64).c(Layout::RowMajor, 304);
    let p = plan(kk, &op, 0x10000, 0x20000, 0x30000).unwrap();
    assert_eq!((p.args.tma_store_columns(301), p.maps[2].dims[0], p.maps[2].address), (296, 296, 0x30000));
    // Rows 301 apart, or C not 16-byte aligned: TMA writes none of C and its map is not C's.
    for (op, c) in [(GemmOp::new(256, 301, 64), 0x30000), (GemmOp::new(256, 256, 64), 0x30002)] {
        let p = plan(kk, &op, 0x10000, 0x20000, c).unwrap();
        assert_eq!(p.args.tma_store_columns(op.n as u32), 0);
        assert_ne!(p.maps[2].address, c);
    }
    // Bf16 by bf16 at worst: C need only be 2-byte aligned.
    assert_eq!(
        plan(kk, &GemmOp::new(256, 256, 64), 0x10000, 0x20000, 0x30001),
        Err(Error::Misaligned { operand: "C", address: 0x30001, align: 2 })
    );
}

#[test]
fn every_other_validation_path() {
    let kk = blackwell().into_iter().find(|k| k.name == "blackwell_lib_kk").unwrap();
    let ok = GemmOp::new(256, 256, 64);
    // The call's own checks: K a multiple of 8, finite alpha and beta, sizes within 2^31.
    for op in [GemmOp::new(256, 256, 60), ok.alpha(f32::NAN), ok.beta(f32::INFINITY), GemmOp::new(1 << 32, 8, 8)] {
        assert!(matches!(supports(kk, &op), Err(Error::InvalidShape(_))), "{op:?}");
        assert!(auto(&op).is_none(), "{op:?}");
    }
    // Leading dimensions shorter than a row, and buffers shorter than the call.
    assert!(matches!(
        supports(kk, &GemmOp::new(256, 256, 64).a(Layout::RowMajor, 32)),
        Err(Error::LeadingDimension { operand: "A", .. })
    ));
    assert!(matches!(ok.validate(256 * 64 - 1, 256 * 64, 256 * 256), Err(Error::BufferTooSmall { operand: "A", .. })));
    // A leading dimension TMA cannot step by (not 16 bytes), and misaligned operands.
    assert!(matches!(
        plan(kk, &GemmOp::new(256, 256, 64).a(Layout::RowMajor, 68), 0x1000, 0x2000, 0x3000),
        Err(Error::InvalidShape(_))
    ));
    assert_eq!(
        plan(kk, &ok, 0x1008, 0x2000, 0x3000),
        Err(Error::Misaligned { operand: "A", address: 0x1008, align: 16 })
    );
    assert_eq!(
        plan(kk, &ok, 0x1000, 0x2004, 0x3000),
        Err(Error::Misaligned { operand: "B", address: 0x2004, align: 16 })
    );
    // An entry given another order than its own says which it reads; the ladder takes only the
    // native problem.
    let r = supports(kk, &ok.a(Layout::ColMajor, 256));
    assert!(matches!(&r, Err(Error::Unsupported { reason, .. }) if reason.contains("K-major")), "{r:?}");
    let v7 = &hgemm_kernels::blackwell::v7::SPEC;
    assert_eq!(supports(v7, &ok), Ok(()));
    for op in [ok.beta(1.0), ok.alpha(2.0), ok.batched(2, 0, 0, 65536), ok.a(Layout::ColMajor, 256)] {
        assert!(matches!(supports(v7, &op), Err(Error::Unsupported { kernel: "blackwell_v7", .. })), "{op:?}");
        assert!(auto(&op).is_some_and(|s| s.general), "{op:?}");
    }
    // More tiles than the kernels' 32-bit tile index walks.
    let huge = GemmOp::new(8, 512, 8).batched(i32::MAX as usize, 0, 0, 8 * 512);
    assert!(matches!(supports(kk, &huge), Err(Error::Unsupported { reason, .. }) if reason.contains("32-bit")));
    // K = 0 (C = beta·C): A and B are not read; their maps are any valid ones (`Gemm` points
    // them at C), and the kernel stores beta·C without an accumulator.
    let p = plan(kk, &GemmOp::new(300, 256, 0).beta(0.5), 0x3000, 0x3000, 0x3000).unwrap();
    assert_eq!((p.args.k, p.args.beta, p.maps[0].address), (0, 0.5, 0x3000));
    // A device too small for a pair has no grid for these entries.
    assert!(matches!(launch_offline(kk, &ok, 1), Err(Error::Unsupported { .. })));
}
