//! One hgemm [`Gemm`] per CUDA context, created on a device's first matmul and kept for the life
//! of the process: loading the kernels costs 0.4 s with the driver's JIT cache filled (and half a
//! minute without), so a handle must outlive any one call.

use crate::error::MatmulError;
use candle_core::CudaDevice;
use hgemm::Gemm;
use std::sync::{Arc, Mutex};

/// Handles by CUDA context (two candle devices on one GPU share its primary context, and so a
/// handle). A handle holds its context, so a key is never reused for another.
static HANDLES: Mutex<Vec<(usize, Arc<Gemm>)>> = Mutex::new(Vec::new());

/// The hgemm handle for `device`'s CUDA context, created on first use. Callers may tune it
/// ([`Gemm::tune`], [`Gemm::load_tuning`]): every matmul on the device goes through it.
pub fn gemm_for(device: &CudaDevice) -> Result<Arc<Gemm>, MatmulError> {
    let stream = device.cuda_stream();
    let ctx = stream.context();
    let key = ctx.cu_ctx() as usize;
    // Held while a new handle loads, so that two threads do not load the kernels twice.
    let mut handles = HANDLES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, gemm)) = handles.iter().find(|(k, _)| *k == key) {
        return Ok(gemm.clone());
    }
    let gemm = Arc::new(Gemm::new(ctx.clone())?);
    handles.push((key, gemm.clone()));
    Ok(gemm)
}
