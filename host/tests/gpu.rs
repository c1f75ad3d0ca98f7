//! GPU tests: what `hgemm verify` does, as tests. They need an NVIDIA GPU, so they are ignored in
//! the normal suite (CI has none) and run on a GPU machine with `--ignored` (scripts/device-tests.sh).
//! A test run on the wrong GPU, or on none, fails: it never passes by skipping.

use hgemm::testing::{self, Cublas};
use hgemm::{Family, Gemm};

fn open(family: Family) -> Gemm {
    let gemm = Gemm::new(hgemm::device::context(0).expect("no GPU: run these tests on a GPU machine")).expect("hgemm::Gemm::new");
    let d = gemm.device();
    assert_eq!(gemm.family(), family, "this test needs a {} GPU; this is {} ({}.{})", family.name(), d.name, d.major, d.minor);
    gemm
}

fn seed() -> u64 {
    std::env::var("HGEMM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| std::process::id() as u64)
}

fn family_matches_cublas(family: Family) {
    let gemm = open(family);
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
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_kernels_match_cublas() {
    family_matches_cublas(Family::Hopper);
}

#[test]
#[ignore = "needs a B200/GB300 (compute capability 10.x): run there with --ignored"]
fn blackwell_kernels_match_cublas() {
    family_matches_cublas(Family::Blackwell);
}

#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_general_calls_match_cublas() {
    let gemm = open(Family::Hopper);
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream).unwrap();
    let seed = seed();
    let mut failures = Vec::new();
    for (i, (what, op)) in testing::general_cases().iter().enumerate() {
        let (r, cpu) = testing::check_op(&gemm, &blas, &stream, op, seed + i as u64).unwrap();
        println!("{what}: vs cuBLAS {:.2e}, vs CPU {cpu:?}", r.rel_error);
        if !r.passed() || cpu.is_some_and(|c| !c.passed()) {
            failures.push(format!("{what}: {r:?} {cpu:?}"));
        }
    }
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
}
