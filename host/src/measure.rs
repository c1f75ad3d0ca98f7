//! Measuring on the device, as tuning does ([`Gemm::tune`]) and as the cuBLAS test harness
//! (the `hgemm-testing` crate) builds on: random and poisoned buffers filled by the module's own
//! kernels, whole outputs compared on the GPU, and medians of CUDA-event samples of back-to-back
//! calls over input sets rotated beyond L2.

use crate::error::{Error, Result};
use crate::gemm::Gemm;
use crate::op::{GemmOp, Layout};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtrMut, sys};
use half::bf16;
use std::sync::Arc;

mod ceiling;
mod compare;
mod reduce_copy;
pub use ceiling::Ceiling;
pub use compare::{BufferComparison, compare_into, compare_on_device, comparison_slots, read_comparisons};
pub use reduce_copy::ReduceCopy;

/// bf16 output against an f32-accumulating reference: both round to bf16 at the end, so the
/// expected relative error is about 2^-9; a wrong tile or K slice shows up as 0.1 or more.
pub const TOLERANCE: f64 = 1e-2;

/// NaN, written over C before every checked run: an element the kernel fails to write stays NaN.
pub const POISON: u16 = 0xffff;

/// Maps a driver error to [`Error::Driver`] naming `call`.
pub(crate) fn drv(call: &'static str) -> impl Fn(cudarc::driver::DriverError) -> Error {
    move |e| Error::driver(call, e)
}

/// A device buffer of `len` random bf16, uniform in [-scale, scale), from stream `seed`.
pub fn random(gemm: &Gemm, stream: &Arc<CudaStream>, len: usize, seed: u64, scale: f32) -> Result<CudaSlice<bf16>> {
    // SAFETY: filled right away, before anything reads it.
    let mut buf = unsafe { stream.alloc::<bf16>(len.max(1)) }.map_err(drv("cuMemAlloc"))?;
    fill_random(gemm, stream, &mut buf, seed, scale)?;
    Ok(buf)
}

/// A, B and C of every input set ([`input_sets`]).
pub type InputSets = (Vec<CudaSlice<bf16>>, Vec<CudaSlice<bf16>>, Vec<CudaSlice<bf16>>);

/// Input sets for calls of `op` to rotate through ([`rotation_sets`] says how many): fresh random
/// A, B scaled by K^-1/2 (so that C stays of the order of one) and C, of [`lengths`]`(op)`
/// each, every buffer from its own stream derived from `seed`.
pub fn input_sets(gemm: &Gemm, stream: &Arc<CudaStream>, op: &GemmOp, sets: usize, seed: u64) -> Result<InputSets> {
    let (la, lb, lc) = lengths(op);
    let (mut a, mut b, mut c) = (Vec::with_capacity(sets), Vec::with_capacity(sets), Vec::with_capacity(sets));
    for s in 0..sets as u64 {
        a.push(random(gemm, stream, la, seed ^ (3 * s + 1), 1.0)?);
        b.push(random(gemm, stream, lb, seed ^ (3 * s + 2), 1.0 / (op.k.max(1) as f32).sqrt())?);
        c.push(random(gemm, stream, lc, seed ^ (3 * s + 3), 1.0)?);
    }
    Ok((a, b, c))
}

/// Set every element of `buf` to `bits`.
pub fn fill<B: DevicePtrMut<bf16>>(gemm: &Gemm, stream: &Arc<CudaStream>, buf: &mut B, bits: u16) -> Result<()> {
    let len = buf.len();
    let (p, _g) = buf.device_ptr_mut(stream);
    gemm.fill_raw(stream, p, len, bits)
}

/// Fill `buf` with random bf16, uniform in [-scale, scale), from stream `seed` (as [`random`]).
pub fn fill_random<B: DevicePtrMut<bf16>>(
    gemm: &Gemm,
    stream: &Arc<CudaStream>,
    buf: &mut B,
    seed: u64,
    scale: f32,
) -> Result<()> {
    let len = buf.len();
    let (p, _g) = buf.device_ptr_mut(stream);
    gemm.fill_random_raw(stream, p, len, seed, scale)
}

/// Multiply-adds of `op`.
pub fn macs(op: &GemmOp) -> usize {
    op.m.saturating_mul(op.n).saturating_mul(op.k).saturating_mul(op.batch)
}

/// Buffer lengths `op` needs for A, B and C, whole rows of the leading dimension each (saturated
/// where they would pass 2^64: no such buffer can be allocated).
pub fn lengths(op: &GemmOp) -> (usize, usize, usize) {
    let len = |layout: Layout, rows: usize, cols: usize, ld: usize, stride: usize| {
        let mem_rows = if layout == Layout::RowMajor { rows } else { cols };
        if rows == 0 || cols == 0 || op.batch == 0 {
            0
        } else {
            (op.batch - 1).saturating_mul(stride).saturating_add(mem_rows.saturating_mul(ld))
        }
    };
    (
        len(op.a_layout, op.m, op.k, op.lda, op.stride_a),
        len(op.b_layout, op.k, op.n, op.ldb, op.stride_b),
        len(op.c_layout, op.m, op.out_n(), op.ldc, op.stride_c),
    )
}

/// Input sets to rotate through so that one pass over them is three times L2 (`set_bytes`
/// each): no call finds its operands cached by the call before.
pub fn rotation_sets(l2_bytes: u32, set_bytes: usize) -> usize {
    (3 * l2_bytes as usize).div_ceil(set_bytes.max(1)).clamp(2, 32)
}

/// Back-to-back calls that make a sample of about `sample_ms`, and how many to make untimed
/// before it (two thirds as many): a call of `macs` multiply-adds moving `bytes` is estimated
/// at 600 TFLOP/s, or at 4 TB/s where that is longer (short K). The card is power-capped: a
/// short sample runs at whatever clock the previous kernel left, so every sample first brings
/// the clock to its own.
pub fn sample_calls(macs: usize, bytes: usize, sample_ms: f64) -> (usize, usize) {
    let call_s = (2.0 * macs as f64 / 600e12).max(bytes as f64 / 4e12);
    let calls = (sample_ms * 1e-3 / call_s).ceil().clamp(1.0, 20000.0) as usize;
    (calls, (calls * 2).div_ceil(3))
}

/// Milliseconds per call: `samples` CUDA-event samples of `calls` back-to-back calls each, after
/// `warmup` calls, and their median. `run(i)` makes call number `i` (use it to rotate inputs); its
/// error type is the caller's (a harness's calls may fail otherwise than hgemm's).
pub fn time_median<E: From<Error>>(
    stream: &Arc<CudaStream>,
    warmup: usize,
    samples: usize,
    calls: usize,
    mut run: impl FnMut(usize) -> Result<(), E>,
) -> Result<Vec<f64>, E> {
    let ctx = stream.context();
    let start = ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(drv("cuEventCreate"))?;
    let stop = ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).map_err(drv("cuEventCreate"))?;
    let mut i = 0;
    for _ in 0..warmup {
        run(i)?;
        i += 1;
    }
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        start.record(stream).map_err(drv("cuEventRecord"))?;
        for _ in 0..calls {
            run(i)?;
            i += 1;
        }
        stop.record(stream).map_err(drv("cuEventRecord"))?;
        stop.synchronize().map_err(drv("cuEventSynchronize"))?;
        times.push(start.elapsed_ms(&stop).map_err(drv("cuEventElapsedTime"))? as f64 / calls as f64);
    }
    Ok(times)
}

/// The median (NaN for no samples).
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_of_empty_and_huge_calls_do_not_panic() {
        assert_eq!(lengths(&GemmOp::new(8, 8, 8).batched(0, 0, 0, 0)), (0, 0, 0));
        let huge = GemmOp::new(8, 8, 8).a(Layout::RowMajor, usize::MAX / 2).batched(3, usize::MAX / 2, 0, 4096);
        assert_eq!(lengths(&huge).0, usize::MAX);
        assert_eq!(lengths(&GemmOp::new(3, 5, 8).batched(2, 40, 64, 15)), (64, 104, 30));
    }

    #[test]
    fn median_of_even_and_odd() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn samples_last_about_as_long_as_asked() {
        // 8192³: 1.1 TFLOP at 600 TFLOP/s is 1.83 ms a call, 33 calls in 60 ms, 22 before them.
        let big = 8192 * 8192 * 8192;
        assert_eq!(sample_calls(big, 6 * 8192 * 8192, 60.0), (33, 22));
        // Short K is priced by its bytes: 8192×8192×64 moves 2·(2·8192·64 + 8192²) bytes, 35 µs
        // at 4 TB/s, against 14 µs of MMAs.
        let bytes = 2 * (2 * 8192 * 64 + 8192 * 8192);
        let (calls, _) = sample_calls(8192 * 8192 * 64, bytes, 60.0);
        assert_eq!(calls, (60e-3 / (bytes as f64 / 4e12)).ceil() as usize);
        // The tiniest call is capped, and any call runs at least once.
        assert_eq!(sample_calls(8, 16, 60.0).0, 20000);
        assert_eq!(sample_calls(big * 64, 0, 1.0), (1, 1));
        // H200's L2 of 60 MiB: 2 sets of 8192³'s 384 MiB, 32 of a small call's.
        assert_eq!(rotation_sets(60 << 20, 6 << 26), 2);
        assert_eq!(rotation_sets(60 << 20, 1 << 20), 32);
        assert_eq!(rotation_sets(60 << 20, 16 << 20), 12);
    }
}
