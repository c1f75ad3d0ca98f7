//! A communication-like load beside a GEMM: a fixed number of CTAs streaming `dst += src`
//! through memory as an all-reduce's reduce-copy does (`hgemm_kernels::reduce_copy`), for
//! timing a GEMM and a collective side by side on one GPU, with and without an SM budget.

use super::drv;
use crate::error::{Error, Result};
use crate::gemm::Gemm;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use hgemm_kernels::reduce_copy::CHUNK_BYTES;
use std::sync::Arc;

/// `ctas` CTAs adding a buffer of f32 into another, `rounds` times over, per launch.
pub struct ReduceCopy {
    func: CudaFunction,
    src: CudaSlice<f32>,
    dst: CudaSlice<f32>,
    ctas: u32,
    rounds: u32,
}

impl ReduceCopy {
    /// `ctas` CTAs (1 to the device's SMs; one per SM as long as nothing else runs) over two
    /// buffers of `bytes` each (a positive multiple of 16), `rounds` passes per launch.
    pub fn new(gemm: &Gemm, stream: &Arc<CudaStream>, ctas: u32, bytes: usize, rounds: u32) -> Result<ReduceCopy> {
        let sms = gemm.device().sms;
        if ctas == 0 || ctas > sms {
            return Err(Error::InvalidShape(format!("reduce-copy on {ctas} CTAs: 1 to the device's {sms}")));
        }
        if bytes == 0 || !(bytes as u64).is_multiple_of(CHUNK_BYTES) || rounds == 0 {
            return Err(Error::InvalidShape(format!(
                "reduce-copy of {bytes} bytes, {rounds} rounds: a positive multiple of {CHUNK_BYTES} bytes, at least one round"
            )));
        }
        let len = bytes / 4;
        let src = stream.alloc_zeros::<f32>(len).map_err(drv("cuMemAlloc"))?;
        let dst = stream.alloc_zeros::<f32>(len).map_err(drv("cuMemAlloc"))?;
        Ok(ReduceCopy { func: gemm.load_entry(hgemm_kernels::reduce_copy::ENTRY)?, src, dst, ctas, rounds })
    }

    /// CTAs per launch.
    pub fn ctas(&self) -> u32 {
        self.ctas
    }

    /// Bytes one launch reads and writes: both buffers read, one written, each round.
    pub fn bytes_moved(&self) -> u64 {
        3 * (self.src.len() as u64 * 4) * self.rounds as u64
    }

    /// Enqueue one launch on `stream`.
    pub fn launch(&mut self, gemm: &Gemm, stream: &Arc<CudaStream>) -> Result<()> {
        let chunks = self.src.len() as u64 * 4 / CHUNK_BYTES;
        let (src, _gs) = self.src.device_ptr(stream);
        let (dst, _gd) = self.dst.device_ptr_mut(stream);
        gemm.reduce_copy_raw(stream, &self.func, self.ctas, src, dst, chunks, self.rounds)
    }
}
