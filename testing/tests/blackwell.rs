//! Blackwell's library on a B200 or GB300: every call `auto` takes there, through the library
//! entries (`blackwell_lib_*`), plain and with fused epilogues (bias, activation, gated units),
//! against cuBLAS over C's whole buffer, and the ladder's refusal of fused epilogues by name with
//! C untouched. Ignored in the normal suite (no GPU here);
//! docs/blackwell.md gives the one command that runs them. Every test opens the GPU and asserts
//! it is a Blackwell one first: on any other GPU, or none, each fails; none passes by skipping.

use hgemm::{Activation, Error, Family, GemmOp, Lack, Layout};
use hgemm_testing::{self as testing, Cublas};

/// Every case, with where C starts in its buffer (elements): A, B and C in each storage order;
/// beta 0 (C not read) and -0.5 (C loaded) with alpha 0.75; one GEMM and a strided batch of 3 with
/// gaps; shapes of whole 256×256 units, partial tiles in M, N and K, a single tile, several waves
/// of the 148 SMs, a few tiles with a long K (split by K over every pair: stream-K), a few rows
/// (single CTAs, split by K over every SM), M and N not multiples of 8 (a ragged C, whose last
/// columns or all of which the threads store), and K = 0; leading dimensions padded past the
/// rows; and views of C that start 2 and 8 bytes past a 16-byte boundary (every column stored by
/// the threads).
fn cases() -> Vec<(String, GemmOp, usize)> {
    let orders = [Layout::RowMajor, Layout::ColMajor];
    let shapes = [
        (256, 256, 512),
        (304, 520, 136),
        (1, 8, 8),
        (257, 301, 4104),
        (2048, 3072, 1024),
        (520, 264, 0),
        (512, 776, 8192),
        (32, 2056, 4096),
    ];
    let mut cases = Vec::new();
    for &(m, n, k) in &shapes {
        for a in orders {
            for b in orders {
                for c in orders {
                    for beta in [0.0f32, -0.5] {
                        for batch in [1, 3] {
                            let ld =
                                |l: Layout, rows: usize, cols: usize| if l == Layout::RowMajor { cols } else { rows };
                            // A and B's rows in multiples of 8 (TMA's 16 bytes); C's as they come.
                            let up8 = |x: usize| x.div_ceil(8) * 8;
                            let op = GemmOp::new(m, n, k)
                                .a(a, up8(ld(a, m, k)) + 8)
                                .b(b, up8(ld(b, k, n)) + 16)
                                .c(c, ld(c, m, n) + 8)
                                .alpha(0.75)
                                .beta(beta);
                            let op = if batch > 1 {
                                let (la, lb, lc) = testing::lengths(&op);
                                op.batched(batch, up8(la) + 64, up8(lb) + 8, lc + 256)
                            } else {
                                op
                            };
                            let what = format!("{m}x{n}x{k} A {a:?} B {b:?} C {c:?} beta {beta} batch {batch}, padded");
                            cases.push((what, op, 0));
                        }
                    }
                }
            }
        }
    }
    for offset in [1, 4] {
        for beta in [0.0f32, 0.5] {
            let op = GemmOp::new(304, 520, 136).beta(beta);
            cases.push((format!("304x520x136 C {}-byte past 16, beta {beta}", 2 * offset), op, offset));
        }
    }
    cases
}

#[test]
#[ignore = "needs a B200/GB300 (compute capability 10.x): run there with --ignored"]
fn blackwell_library_calls_match_cublas() {
    let gemm = testing::open_family(Family::Blackwell);
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream).unwrap();
    let seed = testing::test_seed();
    let mut failures = Vec::new();
    let mut entries = std::collections::BTreeSet::new();
    let cases = cases();
    for (i, (what, op, c_offset)) in cases.iter().enumerate() {
        // `auto` takes every case, with a library entry.
        let kernel = gemm.choose(op).unwrap_or_else(|| panic!("{what}: auto has no kernel"));
        assert!(kernel.name.starts_with("blackwell_lib_"), "{what}: auto chose {}", kernel.name);
        entries.insert(kernel.name);
        let r = testing::check_op(&gemm, &blas, &stream, op, *c_offset, seed + i as u64).unwrap();
        println!(
            "{what} ({}): vs cuBLAS {:.2e}, vs CPU {:?}, outside C {}",
            kernel.name, r.vs_cublas.rel_error, r.vs_cpu, r.outside
        );
        if !r.passed() {
            failures.push(format!("{what} ({}): {r:?}", kernel.name));
        }
    }
    assert_eq!(entries.len(), 4, "every library entry ran: {entries:?}");
    assert!(failures.is_empty(), "seed {seed}: {} of {} failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

#[test]
#[ignore = "needs a B200/GB300 (compute capability 10.x): run there with --ignored"]
fn blackwell_kernels_verify_against_cublas() {
    // What `hgemm verify` checks, for every Blackwell kernel: the ladder and the library entries,
    // each pinned, on exact, partial, tiny and large shapes, and the calls each must refuse.
    let gemm = testing::open_family(Family::Blackwell);
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream).unwrap();
    let seed = testing::test_seed();
    let failures = testing::verify_family(&gemm, &blas, &stream, seed).unwrap();
    assert!(failures.is_empty(), "seed {seed}: {} failures:\n{}", failures.len(), failures.join("\n"));
}

/// The fused calls of the library's suite (`testing::fused_general_cases`): every storage order,
/// bf16 and f32 biases, every activation, gated units along N and (C column-major) along M,
/// batches with a bias per entry or one shared, stream-K shapes (split by K here too), ragged C.
fn fused_cases() -> Vec<testing::FusedCase> {
    testing::fused_general_cases()
}

#[test]
#[ignore = "needs a B200/GB300 (compute capability 10.x): run there with --ignored"]
fn blackwell_fused_epilogues_match_cublas() {
    let gemm = testing::open_family(Family::Blackwell);
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream).unwrap();
    let seed = testing::test_seed();
    let mut failures = Vec::new();
    let cases = fused_cases();
    for (i, case) in cases.iter().enumerate() {
        let kernel = gemm.choose(&case.op).unwrap_or_else(|| panic!("{}: auto has no kernel", case.what));
        assert!(kernel.name.starts_with("blackwell_lib_"), "{}: auto chose {}", case.what, kernel.name);
        let r = testing::check_fused(&gemm, &blas, &stream, &case.op, None, seed + i as u64).unwrap();
        println!("{} ({}): {r:?}", case.what, kernel.name);
        if !r.passed() {
            failures.push(format!("{} ({}): {r:?}", case.what, kernel.name));
        }
    }
    assert!(failures.is_empty(), "seed {seed}: {} of {} failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
}

#[test]
#[ignore = "needs a B200/GB300 (compute capability 10.x): run there with --ignored"]
fn blackwell_ladder_refuses_fused_epilogues_by_name_and_writes_nothing() {
    let gemm = testing::open_family(Family::Blackwell);
    let stream = gemm.context().default_stream();
    let (m, n, k) = (256, 256, 64);
    let a = testing::random(&gemm, &stream, m * k, 1, 1.0).unwrap();
    let b = testing::random(&gemm, &stream, n * k, 2, 1.0).unwrap();
    let mut c = testing::random(&gemm, &stream, m * n + 64, 3, 1.0).unwrap();
    let before = stream.clone_dtoh(&c).unwrap();
    let ladder: Vec<_> = gemm.ladder().collect();
    assert_eq!(ladder.len(), 8);
    for kernel in ladder {
        for (what, op) in [
            ("relu", GemmOp::new(m, n, k).activation(Activation::Relu)),
            ("SwiGLU", GemmOp::new(m, n, k).activation(Activation::Silu).gated()),
        ] {
            let r = gemm.gemm_with(kernel, &stream, &op, &a, &b, &mut c.slice_mut(..m * n));
            assert!(matches!(&r, Err(Error::Lacks { lack: Lack::FusedEpilogue, .. })), "{} {what}: {r:?}", kernel.name);
        }
    }
    stream.synchronize().unwrap();
    let after = stream.clone_dtoh(&c).unwrap();
    assert!(before.iter().zip(&after).all(|(x, y)| x.to_bits() == y.to_bits()), "a refused call wrote C");
}

/// The GPU tests' cases are calls a B200 takes, worked out here without one: `auto` picks a
/// library entry for each, every entry among them, and each plans; 2 × 2 × 2 × 2 × 2 per shape,
/// the views of C, and the fused calls.
#[test]
fn blackwell_cases_are_calls_a_b200_takes() {
    let kernels: Vec<&hgemm::KernelSpec> = hgemm_kernels::kernels().filter(|k| k.family == Family::Blackwell).collect();
    let cases = cases();
    assert_eq!(cases.len(), 8 * 32 + 4);
    let mut entries = std::collections::BTreeSet::new();
    // Calls whose units are split by K over the pairs (stream-K), and of those, with beta.
    let (mut split, mut split_beta) = (0, 0);
    for (what, op, c_offset) in &cases {
        let spec = hgemm::choose::choose(kernels.iter().copied(), op, 148, &hgemm::Model::BUILT_IN)
            .unwrap_or_else(|| panic!("{what}"));
        assert!(spec.name.starts_with("blackwell_lib_"), "{what}: {}", spec.name);
        entries.insert(spec.name);
        if hgemm::plan::launch_offline(spec, op, 148).unwrap().split.is_some() {
            split += 1;
            split_beta += (op.beta != 0.0) as u32;
        }
        let (la, lb, lc) = testing::lengths(op);
        assert_eq!(op.validate(la, lb, lc), Ok(op.m > 0 && op.n > 0), "{what}");
        hgemm::plan::plan(spec, op, 0x10000, 0x20000, 0x30000 + 2 * *c_offset as u64)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    // Both widths of every order: the GPU tests reach each entry.
    assert_eq!(entries.len(), hgemm_kernels::blackwell::lib::ENTRIES.len());
    // Every order, C layout and batch of the long-K shape at least is split.
    assert!(split >= 32 && split_beta >= 16, "{split} split, {split_beta} with beta");
    // The fused cases too, with their bias buffers.
    let fused = fused_cases();
    assert!(fused.len() >= 10 && fused.iter().all(|c| c.op.fused()));
    let (mut split, mut split_gated) = (0, 0);
    for case in &fused {
        let spec = hgemm::choose::choose(kernels.iter().copied(), &case.op, 148, &hgemm::Model::BUILT_IN)
            .unwrap_or_else(|| panic!("{}", case.what));
        assert!(spec.name.starts_with("blackwell_lib_"), "{}: {}", case.what, spec.name);
        if hgemm::plan::launch_offline(spec, &case.op, 148).unwrap().split.is_some() {
            split += 1;
            split_gated += case.op.gated as u32;
        }
        let bias = case.op.bias.map(|ty| (0x40000, ty));
        hgemm::plan::plan_fused(spec, &case.op, 0x10000, 0x20000, bias, 0x30000)
            .unwrap_or_else(|e| panic!("{}: {e}", case.what));
    }
    // Split fused calls, gated ones among them: the finishing pair adds the sums before the
    // activation.
    assert!(split >= 2 && split_gated >= 1, "{split} fused calls split, {split_gated} gated");
}
