//! The tensor-core ceiling: a tile's MMAs alone, timed as a bound on any kernel built from them.

use super::drv;
use crate::error::{Error, Result};
use crate::gemm::Gemm;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtrMut};
use hgemm_kernels::hopper::ceiling::{CEILINGS, CeilingSpec};
use std::sync::Arc;

/// Time-only, Hopper: a tile's MMAs of an M×N×K call on random operands resident in shared
/// memory, nothing loaded or stored (`hgemm_kernels::hopper::ceiling`): a bound on how fast any
/// kernel built from those MMAs runs the call on this card.
pub struct Ceiling {
    /// Every ceiling's entry, loaded from `gemm`'s module.
    entries: Vec<(&'static CeilingSpec, CudaFunction)>,
    /// One f32 per thread of the largest launch, where the MMAs' results go.
    sink: CudaSlice<f32>,
    /// CTAs (one per SM) the MMAs are spread over.
    ctas: u32,
}

impl Ceiling {
    /// The ceilings of `gemm`'s device and their sink; launches on every SM.
    /// [`Error::UnknownKernel`] off Hopper.
    pub fn new(gemm: &Gemm, stream: &Arc<CudaStream>) -> Result<Ceiling> {
        let entries = CEILINGS.iter().map(|spec| Ok((spec, gemm.load_ceiling(spec)?))).collect::<Result<Vec<_>>>()?;
        let threads = CEILINGS.iter().map(|c| c.threads()).max().unwrap_or(0);
        let len = gemm.device().sms as usize * threads as usize;
        Ok(Ceiling {
            entries,
            sink: stream.alloc_zeros::<f32>(len).map_err(drv("cuMemAlloc"))?,
            ctas: gemm.device().sms,
        })
    }

    /// Spread the MMAs over `ctas` SMs instead (what a grid that leaves SMs idle could reach);
    /// checked when launched.
    pub fn on_ctas(mut self, ctas: u32) -> Ceiling {
        self.ctas = ctas;
        self
    }

    /// The CTAs each launch has.
    pub fn ctas(&self) -> u32 {
        self.ctas
    }

    /// Enqueue ceiling `name`'s MMAs of an M×N×K call (names: `CEILINGS`).
    /// [`Error::UnknownKernel`] for another name; [`Error::Unsupported`] for more CTAs than SMs.
    pub fn run(
        &mut self,
        gemm: &Gemm,
        stream: &Arc<CudaStream>,
        name: &str,
        (m, n, k): (usize, usize, usize),
    ) -> Result<()> {
        let Some((spec, func)) = self.entries.iter().find(|e| e.0.name == name) else {
            return Err(Error::UnknownKernel(format!(
                "{name} (the ceilings: {})",
                CEILINGS.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
            )));
        };
        if m == 0 || n == 0 || k == 0 {
            return Err(Error::InvalidShape(format!("{m}x{n}x{k}: a ceiling needs MMAs to run")));
        }
        let (p, _g) = self.sink.device_ptr_mut(stream);
        // B is scaled as the benchmark's inputs are: its bits are what the MMAs toggle.
        gemm.tensor_ceiling_raw(stream, spec, func, self.ctas, p, (m, n, k), 1.0 / (k as f32).sqrt())
    }

    /// The sink as the last launches left it, zeroed again.
    pub fn take_sink(&mut self, stream: &Arc<CudaStream>) -> Result<Vec<f32>> {
        let v = stream.clone_dtoh(&self.sink).map_err(drv("cuMemcpyDtoH"))?;
        stream.memset_zeros(&mut self.sink).map_err(drv("cuMemsetD8"))?;
        Ok(v)
    }
}
