//! The cuBLAS test harness of hgemm: checking and timing, shared by the `hgemm` CLI, the GPU
//! tests and the benchmarks. Not part of the library's API.
//!
//! The rules they all follow: fresh random inputs for every case (B scaled by K^-1/2 so C stays
//! of order one for any K); outputs poisoned with NaN before each run, and a guard band after
//! C that must come back untouched; results compared by relative Frobenius error against cuBLAS
//! and, on small shapes, against an f64 CPU reference; times are medians of CUDA-event samples of
//! back-to-back calls over input sets rotated beyond L2 (the library's [`hgemm::measure`], which
//! tuning uses too, re-exported here).

mod cases;
mod cublas;
pub mod draw;
mod error;
mod fused;
mod general;
mod reference;
mod verify;

pub use cases::*;
pub use cublas::{Cublas, CublasLt};
pub use error::{Error, Result};
pub use fused::{
    ACTIVATIONS, BiasBuffers, FUSED_ENTRY_SHAPES, FusedCase, FusedCheck, check_fused, fused_entry_cases,
    fused_general_cases,
};
pub use general::{GeneralCase, OpCheck, check_op, general_cases};
pub use hgemm::measure::{
    BufferComparison, Ceiling, InputSets, POISON, TOLERANCE, compare_into, compare_on_device, comparison_slots, fill,
    fill_random, input_sets, lengths, macs, median, random, read_comparisons, rotation_sets, sample_calls, time_median,
};
pub use reference::{
    Comparison, activation_f64, compare, compare_host, cpu_reference_fused, cpu_reference_general, gate_column,
    reference_from_products,
};
pub use verify::{
    CPU_CHECK_MAX_MACS, Case, ODD_N_SHAPE, Rejection, VERIFY_SHAPES, check, check_rejections, verify_family,
    verify_kernel, verify_shapes,
};

pub(crate) use error::drv;

/// Written after C: the kernel must never touch it.
pub const GUARD: u16 = 0x1234;
/// Elements of guard band after every checked C.
pub const GUARD_LEN: usize = 4096;

/// The handle on GPU 0 for a GPU test of `family`'s kernels: it panics, so that the test fails
/// rather than skips, where there is no GPU or the GPU is of another family.
pub fn open_family(family: hgemm::Family) -> hgemm::Gemm {
    let gemm = hgemm::Gemm::new(hgemm::device::context(0).expect("no GPU: run the GPU tests on a GPU machine"))
        .expect("hgemm::Gemm::new");
    let d = gemm.device();
    let wanted = match family {
        hgemm::Family::Hopper => "a Hopper GPU (H100, H200)",
        hgemm::Family::Blackwell => "a Blackwell GPU (B200, GB300)",
    };
    assert_eq!(gemm.family(), family, "this test needs {wanted}; this is {} ({}.{})", d.name, d.major, d.minor);
    gemm
}

/// A GPU test's seed: `HGEMM_SEED`, else the process id (set it to repeat a run).
pub fn test_seed() -> u64 {
    std::env::var("HGEMM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| std::process::id() as u64)
}

/// 2·M·N·K over `ms` milliseconds, in TFLOP/s.
pub fn tflops(m: usize, n: usize, k: usize, ms: f64) -> f64 {
    2.0 * m as f64 * n as f64 * k as f64 / (ms * 1e-3) / 1e12
}
