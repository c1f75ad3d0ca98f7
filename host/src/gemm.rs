//! The handle: one per CUDA context, holding the loaded module and its kernels.

use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::launch::{self, LaunchShape};
use crate::tensor_map::TensorMapParams;
use cudarc::driver::{sys, CudaContext, CudaFunction, CudaModule, CudaStream, DevicePtr, DevicePtrMut};
use cudarc::nvrtc::Ptx;
use half::bf16;
use hgemm_kernels::args::GemmArgs;
use hgemm_kernels::spec::{Family, Grid, KernelSpec};
use std::sync::Arc;

/// A loaded kernel and what its launches need that does not change per call.
struct Loaded {
    spec: &'static KernelSpec,
    func: CudaFunction,
    /// Clusters that fit on the device at once (persistent grids are sized by it).
    max_clusters: u32,
}

/// The hgemm handle for one CUDA context: loads the module of the device's kernel family once;
/// cheap to share (`Send + Sync`), every call enqueues on the caller's stream.
pub struct Gemm {
    ctx: Arc<CudaContext>,
    info: DeviceInfo,
    family: Family,
    kernels: Vec<Loaded>,
    fill_random: CudaFunction,
    fill_u16: CudaFunction,
    _module: Arc<CudaModule>,
}

impl Gemm {
    /// Load the kernels for the device of `ctx`. Fails with [`Error::UnsupportedDevice`] on a GPU
    /// hgemm has no kernels for, and with [`Error::SharedMemory`] if a kernel cannot get the
    /// shared memory it needs.
    pub fn new(ctx: Arc<CudaContext>) -> Result<Gemm> {
        let info = DeviceInfo::query(&ctx)?;
        let family = info.family()?;
        let module = ctx.load_module(Ptx::from_src(crate::ptx::module(family))).map_err(|e| Error::driver("cuModuleLoadData", e))?;
        let load = |name: &str| module.load_function(name).map_err(|e| Error::driver("cuModuleGetFunction", e));
        let mut kernels = Vec::new();
        for spec in hgemm_kernels::kernels().filter(|s| s.family == family) {
            if spec.smem_bytes > info.smem_optin {
                return Err(Error::SharedMemory { kernel: spec.name, needed: spec.smem_bytes, available: info.smem_optin });
            }
            let func = load(spec.name)?;
            func.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                spec.smem_bytes as i32,
            )
            .map_err(|e| Error::driver("cuFuncSetAttribute", e))?;
            let max_clusters = max_active_clusters(&func, spec, &info)?;
            kernels.push(Loaded { spec, func, max_clusters });
        }
        Ok(Gemm {
            fill_random: load("hgemm_fill_random_bf16")?,
            fill_u16: load("hgemm_fill_u16")?,
            ctx,
            info,
            family,
            kernels,
            _module: module,
        })
    }

    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    pub fn device(&self) -> &DeviceInfo {
        &self.info
    }

    pub fn family(&self) -> Family {
        self.family
    }

    /// The kernels this device runs, v0 first.
    pub fn kernels(&self) -> impl Iterator<Item = &'static KernelSpec> + '_ {
        self.kernels.iter().map(|k| k.spec)
    }

    /// The kernel of this family with version `v`.
    pub fn kernel(&self, version: u32) -> Result<&'static KernelSpec> {
        self.kernels
            .iter()
            .find(|k| k.spec.version == version)
            .map(|k| k.spec)
            .ok_or_else(|| Error::UnknownKernel(format!("{} v{version}", self.family.name())))
    }

    /// The kernel `auto` picks: the newest version of the family.
    pub fn default_kernel(&self) -> &'static KernelSpec {
        self.kernels.last().expect("every family has at least one kernel").spec
    }

    /// C = A·Bᵀ: A is M×K, B is N×K, C is M×N, all row-major bf16 and dense, on `stream`.
    pub fn matmul<A, B, C>(&self, stream: &CudaStream, a: &A, b: &B, c: &mut C, m: usize, n: usize, k: usize) -> Result<()>
    where
        A: DevicePtr<bf16>,
        B: DevicePtr<bf16>,
        C: DevicePtrMut<bf16>,
    {
        self.matmul_with(self.default_kernel(), stream, a, b, c, m, n, k)
    }

    /// [`Gemm::matmul`] with a chosen kernel (one of [`Gemm::kernels`]).
    #[allow(clippy::too_many_arguments)]
    pub fn matmul_with<A, B, C>(
        &self,
        kernel: &KernelSpec,
        stream: &CudaStream,
        a: &A,
        b: &B,
        c: &mut C,
        m: usize,
        n: usize,
        k: usize,
    ) -> Result<()>
    where
        A: DevicePtr<bf16>,
        B: DevicePtr<bf16>,
        C: DevicePtrMut<bf16>,
    {
        let loaded = self
            .kernels
            .iter()
            .find(|l| l.spec.name == kernel.name)
            .ok_or_else(|| Error::UnknownKernel(kernel.name.to_string()))?;
        check_dims(m, n, k)?;
        check_len("A", a.len(), m * k)?;
        check_len("B", b.len(), n * k)?;
        check_len("C", c.len(), m * n)?;
        if m == 0 || n == 0 {
            return Ok(());
        }
        let (pa, _ga) = a.device_ptr(stream);
        let (pb, _gb) = b.device_ptr(stream);
        let (pc, _gc) = c.device_ptr_mut(stream);
        let (m32, n32, k32) = (m as u32, n as u32, k as u32);
        if k == 0 {
            // C = A·Bᵀ with an empty sum is zero, as in BLAS.
            return self.fill_raw(stream, pc, m * n, 0);
        }
        let spec = loaded.spec;
        let map_a = TensorMapParams::matrix("A", pa, m as u64, k as u64, k as u64, 1, 0, spec.a_box)?;
        let map_b = TensorMapParams::matrix("B", pb, n as u64, k as u64, k as u64, 1, 0, spec.b_box)?;
        let map_c = match spec.c_box {
            Some(c_box) => TensorMapParams::matrix("C", pc, m as u64, n as u64, n as u64, 1, 0, c_box).map_err(|e| {
                Error::Unsupported { kernel: spec.name, reason: format!("its TMA-store epilogue cannot write this C: {e}") }
            })?,
            None => {
                if pc % 4 != 0 {
                    return Err(Error::Misaligned { operand: "C", address: pc, align: 4 });
                }
                // An unused but valid map: the kernel ignores parameter 2.
                map_a.clone()
            }
        };
        let maps = [map_a.encode()?, map_b.encode()?, map_c.encode()?];
        let args = GemmArgs::new(m32, n32, k32, pc);
        let shape = LaunchShape::new(spec, m32, n32, 1, loaded.max_clusters);
        // SAFETY: the maps and args describe the buffers checked above, kept alive by the guards.
        unsafe { launch::launch_gemm(loaded.func.cu_function(), &shape, stream.cu_stream(), &maps, &args) }
    }

    /// Fill `len` bf16 at `ptr` with `bits` (used for poisoning and for K = 0).
    pub(crate) fn fill_raw(&self, stream: &CudaStream, ptr: u64, len: usize, bits: u16) -> Result<()> {
        let (mut p, mut n) = (ptr, len as u64);
        let mut params: [*mut std::ffi::c_void; 3] =
            [&mut p as *mut u64 as *mut _, &mut n as *mut u64 as *mut _, &bits as *const u16 as *mut _];
        let shape = fill_shape(len, self.info.sms);
        // SAFETY: the parameters match hgemm_fill_u16(ptr, n, bits); the caller owns ptr[..len].
        unsafe { launch::launch_raw(self.fill_u16.cu_function(), &shape, stream.cu_stream(), &mut params) }
    }

    /// Fill `len` bf16 at `ptr` with uniform values in [-scale, scale), stream `seed`.
    pub(crate) fn fill_random_raw(&self, stream: &CudaStream, ptr: u64, len: usize, seed: u64, scale: f32) -> Result<()> {
        let (mut p, mut n, mut s, mut sc) = (ptr, len as u64, seed, scale);
        let mut params: [*mut std::ffi::c_void; 4] = [
            &mut p as *mut u64 as *mut _,
            &mut n as *mut u64 as *mut _,
            &mut s as *mut u64 as *mut _,
            &mut sc as *mut f32 as *mut _,
        ];
        let shape = fill_shape(len, self.info.sms);
        // SAFETY: the parameters match hgemm_fill_random_bf16(ptr, n, seed, scale).
        unsafe { launch::launch_raw(self.fill_random.cu_function(), &shape, stream.cu_stream(), &mut params) }
    }
}

fn fill_shape(len: usize, sms: u32) -> LaunchShape {
    let blocks = (len.div_ceil(256) as u64).clamp(1, sms as u64 * 8) as u32;
    LaunchShape { grid: blocks, grid_y: 1, block: 256, cluster: 1, smem: 0 }
}

fn max_active_clusters(func: &CudaFunction, spec: &KernelSpec, info: &DeviceInfo) -> Result<u32> {
    if spec.grid != Grid::Persistent {
        return Ok(u32::MAX);
    }
    if spec.cluster == 1 {
        let per_sm = func
            .occupancy_max_active_blocks_per_multiprocessor(spec.threads, spec.smem_bytes as usize, None)
            .map_err(|e| Error::driver("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?;
        return Ok(info.sms * per_sm.max(1) as u32);
    }
    let mut cluster = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        ..unsafe { std::mem::zeroed() }
    };
    cluster.value.clusterDim.x = spec.cluster;
    cluster.value.clusterDim.y = 1;
    cluster.value.clusterDim.z = 1;
    let cfg = sys::CUlaunchConfig {
        gridDimX: info.sms / spec.cluster * spec.cluster,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: spec.threads,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: spec.smem_bytes,
        hStream: std::ptr::null_mut(),
        attrs: &mut cluster,
        numAttrs: 1,
    };
    let mut n = 0i32;
    // SAFETY: cfg and its one attribute outlive the call.
    match unsafe { sys::cuOccupancyMaxActiveClusters(&mut n, func.cu_function(), &cfg) } {
        sys::CUresult::CUDA_SUCCESS => {}
        e => return Err(Error::Driver { call: "cuOccupancyMaxActiveClusters", code: format!("{e:?}") }),
    }
    Ok((n as u32).max(1))
}

pub(crate) fn check_dims(m: usize, n: usize, k: usize) -> Result<()> {
    for (name, v) in [("M", m), ("N", n), ("K", k)] {
        if v > i32::MAX as usize {
            return Err(Error::InvalidShape(format!("{name} = {v} exceeds 2^31 - 1 (TMA coordinates are 32-bit signed)")));
        }
    }
    if k % 8 != 0 {
        return Err(Error::InvalidShape(format!("K = {k} is not a multiple of 8: TMA needs rows of A and B to be 16-byte multiples")));
    }
    Ok(())
}

pub(crate) fn check_len(operand: &'static str, len: usize, needed: usize) -> Result<()> {
    if len < needed {
        return Err(Error::BufferTooSmall { operand, needed, len });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_and_lengths() {
        assert!(check_dims(8192, 8192, 8192).is_ok());
        assert!(check_dims(1, 1, 8).is_ok());
        assert!(check_dims(0, 0, 0).is_ok());
        assert!(matches!(check_dims(64, 64, 60), Err(Error::InvalidShape(s)) if s.contains("multiple of 8")));
        assert!(matches!(check_dims(1 << 31, 64, 64), Err(Error::InvalidShape(s)) if s.contains("M =")));
        assert_eq!(check_len("B", 10, 11), Err(Error::BufferTooSmall { operand: "B", needed: 11, len: 10 }));
        assert!(check_len("B", 11, 11).is_ok());
    }
}
