//! Comparing a whole output buffer with a reference without copying either to the host
//! (`hgemm_compare_bf16` returns five numbers).
//!
//! It counts what a relative error alone would hide: elements the kernel left poisoned
//! (unwritten), and elements it wrote where the reference still holds poison (padding between
//! rows or batch entries, or a guard band after C, poisoned in both buffers before the call).

use super::{TOLERANCE, drv};
use crate::error::{Error, Result};
use crate::gemm::Gemm;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use half::bf16;
use std::sync::Arc;

/// How an output buffer compares with its reference, element by element.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BufferComparison {
    /// Σ(out − ref)² over the elements finite in both.
    pub sum_sq_diff: f64,
    /// Σref² over the same elements.
    pub sum_sq_ref: f64,
    /// Elements finite in the reference but not in the output: left poisoned.
    pub unwritten: u64,
    /// Elements finite in the output but not in the reference: written where nothing should be.
    pub stray: u64,
    /// Elements whose bits differ (on the host: from the reference rounded to bf16, any two
    /// NaNs counting as equal).
    pub bits_differ: u64,
}

impl BufferComparison {
    /// u64 words of device memory one comparison accumulates into.
    pub const WORDS: usize = 5;

    /// The comparison from its words as `hgemm_compare_bf16` leaves them.
    pub fn from_words(w: &[u64]) -> BufferComparison {
        BufferComparison {
            sum_sq_diff: f64::from_bits(w[0]),
            sum_sq_ref: f64::from_bits(w[1]),
            unwritten: w[2],
            stray: w[3],
            bits_differ: w[4],
        }
    }

    /// ‖out − ref‖ / ‖ref‖ over the elements finite in both.
    pub fn rel_error(&self) -> f64 {
        if self.sum_sq_ref > 0.0 { (self.sum_sq_diff / self.sum_sq_ref).sqrt() } else { self.sum_sq_diff.sqrt() }
    }

    /// Within [`TOLERANCE`], nothing left unwritten, nothing written outside the output.
    pub fn passed(&self) -> bool {
        self.unwritten == 0 && self.stray == 0 && self.rel_error() <= TOLERANCE
    }

    /// Bit for bit the same.
    pub fn identical(&self) -> bool {
        self.bits_differ == 0
    }
}

/// Enqueue on `stream`: add the comparison of `out` with `reference` (the same length) to the
/// [`BufferComparison::WORDS`] words at the start of `result`, which the caller zeroes before the
/// first comparison it wants summed there. Nothing is copied to the host. Buffers of different
/// lengths, or a `result` shorter than the words, are an error before anything is enqueued.
pub fn compare_into<O, R, S>(
    gemm: &Gemm,
    stream: &Arc<CudaStream>,
    out: &O,
    reference: &R,
    result: &mut S,
) -> Result<()>
where
    O: DevicePtr<bf16>,
    R: DevicePtr<bf16>,
    S: DevicePtrMut<u64>,
{
    if out.len() != reference.len() {
        return Err(Error::InvalidShape(format!(
            "compared buffers differ in length: {} and {} elements",
            out.len(),
            reference.len()
        )));
    }
    if result.len() < BufferComparison::WORDS {
        return Err(Error::BufferTooSmall { operand: "result", needed: BufferComparison::WORDS, len: result.len() });
    }
    let len = out.len();
    let (po, _go) = out.device_ptr(stream);
    let (pr, _gr) = reference.device_ptr(stream);
    let (ps, _gs) = result.device_ptr_mut(stream);
    gemm.compare_raw(stream, po, pr, len, ps)
}

/// A zeroed buffer for `count` comparisons.
pub fn comparison_slots(stream: &Arc<CudaStream>, count: usize) -> Result<CudaSlice<u64>> {
    stream.alloc_zeros::<u64>(count * BufferComparison::WORDS).map_err(drv("cuMemAlloc"))
}

/// Copy back the comparisons in `slots` (waits for the stream).
pub fn read_comparisons(stream: &Arc<CudaStream>, slots: &CudaSlice<u64>) -> Result<Vec<BufferComparison>> {
    let words = stream.clone_dtoh(slots).map_err(drv("cuMemcpyDtoH"))?;
    Ok(words.chunks_exact(BufferComparison::WORDS).map(BufferComparison::from_words).collect())
}

/// Compare `out` with `reference` on the device and return the result (waits for the stream).
pub fn compare_on_device<O, R>(
    gemm: &Gemm,
    stream: &Arc<CudaStream>,
    out: &O,
    reference: &R,
) -> Result<BufferComparison>
where
    O: DevicePtr<bf16>,
    R: DevicePtr<bf16>,
{
    let mut slot = comparison_slots(stream, 1)?;
    compare_into(gemm, stream, out, reference, &mut slot)?;
    Ok(read_comparisons(stream, &slot)?[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_round_trip() {
        let w = [2.0f64.to_bits(), 8.0f64.to_bits(), 1, 2, 3];
        let c = BufferComparison::from_words(&w);
        assert_eq!(c.rel_error(), 0.5);
        assert_eq!((c.unwritten, c.stray, c.bits_differ), (1, 2, 3));
    }
}
