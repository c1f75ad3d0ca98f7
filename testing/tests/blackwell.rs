//! Blackwell's library on a B200 or GB300: every call `auto` takes there, through the library
//! entries (`blackwell_lib_*`), against cuBLAS over C's whole buffer, and the calls they lack
//! something for refused by name with C untouched. Ignored in the normal suite (no GPU here);
//! docs/blackwell.md gives the one command that runs them. Every test opens the GPU and asserts
//! it is a Blackwell one first: on any other GPU, or none, each fails; none passes by skipping.

use hgemm::{Activation, Error, Family, Gemm, GemmOp, Lack, Layout};
use hgemm_testing::{self as testing, Cublas};

fn open() -> Gemm {
    let gemm = Gemm::new(hgemm::device::context(0).expect("no GPU: run these tests on a B200 or GB300"))
        .expect("hgemm::Gemm::new");
    let d = gemm.device();
    assert_eq!(
        gemm.family(),
        Family::Blackwell,
        "these tests need a Blackwell GPU (B200, GB300); this is {} ({}.{})",
        d.name,
        d.major,
        d.minor
    );
    gemm
}

fn seed() -> u64 {
    std::env::var("HGEMM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| std::process::id() as u64)
}

/// Every case: A, B and C in each storage order; beta 0 (C not read) and -0.5 (C loaded) with
/// alpha 0.75; one GEMM and a strided batch of 3 with gaps; shapes of whole 256×256 units, partial
/// tiles in M, N and K, a single 8×8 tile, several waves of the 148 SMs, and K = 0; leading
/// dimensions padded past the rows. M and N are multiples of 8: C's contiguous dimension, M or N
/// by its layout, must be (`Lack::RaggedC`).
fn cases() -> Vec<(String, GemmOp)> {
    let orders = [Layout::RowMajor, Layout::ColMajor];
    let mut cases = Vec::new();
    for &(m, n, k) in
        &[(256, 256, 512), (304, 520, 136), (8, 8, 8), (264, 392, 4104), (2048, 3072, 1024), (520, 264, 0)]
    {
        for a in orders {
            for b in orders {
                for c in orders {
                    for beta in [0.0f32, -0.5] {
                        for batch in [1, 3] {
                            let ld =
                                |l: Layout, rows: usize, cols: usize| if l == Layout::RowMajor { cols } else { rows };
                            let op = GemmOp::new(m, n, k)
                                .a(a, ld(a, m, k) + 8)
                                .b(b, ld(b, k, n) + 16)
                                .c(c, ld(c, m, n) + 8)
                                .alpha(0.75)
                                .beta(beta);
                            let op = if batch > 1 {
                                let (la, lb, lc) = testing::lengths(&op);
                                op.batched(batch, la + 64, lb + 8, lc + 256)
                            } else {
                                op
                            };
                            let what = format!("{m}x{n}x{k} A {a:?} B {b:?} C {c:?} beta {beta} batch {batch}, padded");
                            cases.push((what, op));
                        }
                    }
                }
            }
        }
    }
    cases
}

#[test]
#[ignore = "needs a B200/GB300 (compute capability 10.x): run there with --ignored"]
fn blackwell_library_calls_match_cublas() {
    let gemm = open();
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream).unwrap();
    let seed = seed();
    let mut failures = Vec::new();
    let mut entries = std::collections::BTreeSet::new();
    let cases = cases();
    for (i, (what, op)) in cases.iter().enumerate() {
        // `auto` takes every case, with a library entry.
        let kernel = gemm.choose(op).unwrap_or_else(|| panic!("{what}: auto has no kernel"));
        assert!(kernel.name.starts_with("blackwell_lib_"), "{what}: auto chose {}", kernel.name);
        entries.insert(kernel.name);
        let r = testing::check_op(&gemm, &blas, &stream, op, 0, seed + i as u64).unwrap();
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
    let gemm = open();
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream).unwrap();
    let seed = seed();
    let mut failures = Vec::new();
    for kernel in gemm.kernels() {
        for (line, ok) in testing::verify_kernel(&gemm, &blas, &stream, kernel, seed).unwrap() {
            println!("{line}");
            if !ok {
                failures.push(line);
            }
        }
    }
    assert!(failures.is_empty(), "seed {seed}: {} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
#[ignore = "needs a B200/GB300 (compute capability 10.x): run there with --ignored"]
fn blackwell_refuses_what_it_lacks_by_name_and_writes_nothing() {
    let gemm = open();
    let stream = gemm.context().default_stream();
    let (m, n, k) = (256, 264, 64);
    let a = testing::random(&gemm, &stream, m * k, 1, 1.0).unwrap();
    let b = testing::random(&gemm, &stream, n * k, 2, 1.0).unwrap();
    let mut c = testing::random(&gemm, &stream, m * n + 64, 3, 1.0).unwrap();
    let before = stream.clone_dtoh(&c).unwrap();
    // (what, call, C's first element in its buffer, what the entries lack for it)
    let cases = [
        ("relu", GemmOp::new(m, n, k).activation(Activation::Relu), 0, Lack::FusedEpilogue),
        ("N = 263 (ragged C)", GemmOp::new(m, n - 1, k), 0, Lack::RaggedC),
        ("C 2 bytes past 16-byte alignment", GemmOp::new(m, n, k), 1, Lack::RaggedC),
    ];
    for (what, op, offset, lack) in cases {
        let r = gemm.gemm(&stream, &op, &a, &b, &mut c.slice_mut(offset..offset + m * n));
        assert!(matches!(&r, Err(Error::Lacks { lack: l, .. }) if *l == lack), "{what}: {r:?}");
    }
    stream.synchronize().unwrap();
    let after = stream.clone_dtoh(&c).unwrap();
    assert!(before.iter().zip(&after).all(|(x, y)| x.to_bits() == y.to_bits()), "a refused call wrote C");
}

/// The GPU test's cases are calls a B200 takes, worked out here without one: `auto` picks a
/// library entry for each, every entry among them, and each plans; 2 × 2 × 2 × 2 × 2 per shape.
#[test]
fn blackwell_cases_are_calls_a_b200_takes() {
    let kernels: Vec<&hgemm::KernelSpec> = hgemm_kernels::kernels().filter(|k| k.family == Family::Blackwell).collect();
    let cases = cases();
    assert_eq!(cases.len(), 6 * 32);
    let mut entries = std::collections::BTreeSet::new();
    for (what, op) in &cases {
        let spec = hgemm::choose::choose(kernels.iter().copied(), op, 148).unwrap_or_else(|| panic!("{what}"));
        assert!(spec.name.starts_with("blackwell_lib_"), "{what}: {}", spec.name);
        entries.insert(spec.name);
        let (la, lb, lc) = testing::lengths(op);
        assert_eq!(op.validate(la, lb, lc), Ok(op.m > 0 && op.n > 0), "{what}");
        hgemm::plan::plan(spec, op, 0x10000, 0x20000, 0x30000).unwrap_or_else(|e| panic!("{what}: {e}"));
    }
    assert_eq!(entries.len(), 4);
}
