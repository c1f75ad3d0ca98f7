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

/// 2·M·N·K over `ms` milliseconds, in TFLOP/s.
pub fn tflops(m: usize, n: usize, k: usize, ms: f64) -> f64 {
    2.0 * m as f64 * n as f64 * k as f64 / (ms * 1e-3) / 1e12
}
