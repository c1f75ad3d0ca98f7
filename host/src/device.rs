//! What hgemm needs to know about a device.

use crate::error::{Error, Result};
use cudarc::driver::CudaContext;
use cudarc::driver::sys::CUdevice_attribute as Attr;
use hgemm_kernels::spec::Family;

/// The properties kernel choice and launch shapes depend on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// As the driver names it.
    pub name: String,
    /// Compute capability, major.
    pub major: u32,
    /// Compute capability, minor.
    pub minor: u32,
    /// Streaming multiprocessors.
    pub sms: u32,
    /// Dynamic shared memory a block may opt in to, bytes.
    pub smem_optin: u32,
    /// L2 cache, bytes.
    pub l2_bytes: u32,
}

impl DeviceInfo {
    /// Read the properties of `ctx`'s device.
    pub fn query(ctx: &CudaContext) -> Result<DeviceInfo> {
        let attr = |a| ctx.attribute(a).map(|v| v as u32).map_err(|e| Error::driver("cuDeviceGetAttribute", e));
        Ok(DeviceInfo {
            name: ctx.name().map_err(|e| Error::driver("cuDeviceGetName", e))?,
            major: attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            minor: attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
            sms: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            smem_optin: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
            l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
        })
    }

    /// The kernel family this device runs, or the typed error saying it has none.
    pub fn family(&self) -> Result<Family> {
        Family::for_compute_capability(self.major, self.minor).ok_or_else(|| Error::UnsupportedDevice {
            name: self.name.clone(),
            major: self.major,
            minor: self.minor,
        })
    }
}

/// Whether a CUDA driver can be loaded here. cudarc panics instead of failing when it cannot,
/// so every entry point asks this first.
pub fn driver_present() -> bool {
    // cudarc's own check (`is_culib_present`) exists only where it loads libraries at run time;
    // where the application links them (`dynamic-linking`, which candle turns on) it does not.
    #[cfg(windows)]
    const DRIVER: &[&str] = &["nvcuda.dll"];
    #[cfg(not(windows))]
    const DRIVER: &[&str] = &["libcuda.so.1", "libcuda.so"];
    // SAFETY: loads the driver library (whose initializers have no preconditions) and drops it.
    DRIVER.iter().any(|&name| unsafe { libloading::Library::new(name) }.is_ok())
}

/// Context on device `ordinal`, or [`Error::NoDriver`] where there is no driver.
pub fn context(ordinal: usize) -> Result<std::sync::Arc<CudaContext>> {
    if !driver_present() {
        return Err(Error::NoDriver);
    }
    CudaContext::new(ordinal).map_err(|e| Error::driver("cuCtxCreate", e))
}
