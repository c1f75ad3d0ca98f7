//! The handle's utility kernels: fills, the on-device comparison, the tensor-core ceilings and
//! the hang-guard's test kernels, each launched plainly on the caller's stream.

use super::Gemm;
use crate::error::{Error, Result};
use crate::launch;
use crate::plan::LaunchShape;
use cudarc::driver::{CudaFunction, CudaStream, sys};
use hgemm_kernels::hopper::ceiling::CeilingSpec;
use hgemm_kernels::spec::Family;

impl Gemm {
    /// Fill `len` bf16 at `ptr` with `bits` (used for poisoning and for K = 0).
    pub(crate) fn fill_raw(&self, stream: &CudaStream, ptr: u64, len: usize, bits: u16) -> Result<()> {
        let (mut p, mut n) = (ptr, len as u64);
        let mut params: [*mut std::ffi::c_void; 3] =
            [&mut p as *mut u64 as *mut _, &mut n as *mut u64 as *mut _, &bits as *const u16 as *mut _];
        let shape = fill_shape(len, self.info.sms);
        self.before_launch(None)?;
        // SAFETY: the parameters match hgemm_fill_u16(ptr, n, bits); the caller owns ptr[..len].
        unsafe { launch::launch_raw(self.fill_u16.cu_function(), &shape, stream.cu_stream(), &mut params) }
    }

    /// Fill `len` bf16 at `ptr` with uniform values in [-scale, scale), stream `seed`.
    pub(crate) fn fill_random_raw(
        &self,
        stream: &CudaStream,
        ptr: u64,
        len: usize,
        seed: u64,
        scale: f32,
    ) -> Result<()> {
        let (mut p, mut n, mut s, mut sc) = (ptr, len as u64, seed, scale);
        let mut params: [*mut std::ffi::c_void; 4] = [
            &mut p as *mut u64 as *mut _,
            &mut n as *mut u64 as *mut _,
            &mut s as *mut u64 as *mut _,
            &mut sc as *mut f32 as *mut _,
        ];
        let shape = fill_shape(len, self.info.sms);
        self.before_launch(None)?;
        // SAFETY: the parameters match hgemm_fill_random_bf16(ptr, n, seed, scale).
        unsafe { launch::launch_raw(self.fill_random.cu_function(), &shape, stream.cu_stream(), &mut params) }
    }

    /// Add the comparison of `len` bf16 at `out` and `reference` to the five u64 at `result`
    /// (see `hgemm_compare_bf16`).
    pub(crate) fn compare_raw(
        &self,
        stream: &CudaStream,
        out: u64,
        reference: u64,
        len: usize,
        result: u64,
    ) -> Result<()> {
        let (mut o, mut r, mut n, mut res) = (out, reference, len as u64, result);
        let mut params: [*mut std::ffi::c_void; 4] = [
            &mut o as *mut u64 as *mut _,
            &mut r as *mut u64 as *mut _,
            &mut n as *mut u64 as *mut _,
            &mut res as *mut u64 as *mut _,
        ];
        // 256 threads a CTA, 32 bytes of shared memory each for the CTA's sums.
        let shape = LaunchShape { smem: 256 * 32, ..fill_shape(len, self.info.sms) };
        self.before_launch(None)?;
        // SAFETY: the parameters match hgemm_compare_bf16(out, reference, n, result).
        unsafe { launch::launch_raw(self.compare.cu_function(), &shape, stream.cu_stream(), &mut params) }
    }

    /// Tensor-core ceiling `spec`'s entry, loaded from this handle's module with the shared
    /// memory it needs; only the benchmark's `measure::Ceiling` asks, so `new` does not.
    pub(crate) fn load_ceiling(&self, spec: &CeilingSpec) -> Result<CudaFunction> {
        if self.family != Family::Hopper {
            return Err(Error::UnknownKernel(format!("{} (the ceilings are Hopper's)", spec.name)));
        }
        let func = self.module.load_function(spec.entry).map_err(|e| Error::driver("cuModuleGetFunction", e))?;
        func.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            spec.smem_bytes() as i32,
        )
        .map_err(|e| Error::driver("cuFuncSetAttribute", e))?;
        Ok(func)
    }

    /// Launch tensor-core ceiling `spec` (`func`, from [`Gemm::load_ceiling`]) for the MMAs of an
    /// M×N×K call, spread evenly over `ctas` CTAs of one per SM (at most the device's SMs), each
    /// writing one f32 per thread to `sink` (the caller owns that many); B's values scaled by
    /// `b_scale`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn tensor_ceiling_raw(
        &self,
        stream: &CudaStream,
        spec: &CeilingSpec,
        func: &CudaFunction,
        ctas: u32,
        sink: u64,
        (m, n, k): (usize, usize, usize),
        b_scale: f32,
    ) -> Result<()> {
        if ctas == 0 || ctas > self.info.sms {
            return Err(Error::Unsupported {
                kernel: spec.entry,
                reason: format!("{ctas} CTAs: one per SM, 1 to {}", self.info.sms),
            });
        }
        let dim = |d: usize| {
            u32::try_from(d)
                .map_err(|_| Error::InvalidShape(format!("{m}x{n}x{k}: a dimension past u32 for a ceiling")))
        };
        let (per_tile, all) = spec.slices(dim(m)?, dim(n)?, dim(k)?);
        let mut slices = u32::try_from(all.div_ceil(ctas as u64))
            .map_err(|_| Error::InvalidShape(format!("{m}x{n}x{k}: too many slices for a ceiling")))?;
        let (mut per_tile, mut b_scale, mut sink) = (per_tile, b_scale, sink);
        let mut params: [*mut std::ffi::c_void; 4] = [
            &mut slices as *mut u32 as *mut _,
            &mut per_tile as *mut u32 as *mut _,
            &mut b_scale as *mut f32 as *mut _,
            &mut sink as *mut u64 as *mut _,
        ];
        let shape = LaunchShape::plain(ctas, spec.threads(), spec.smem_bytes());
        self.before_launch(None)?;
        // SAFETY: the parameters match the ceiling's (slices, tile_slices, b_scale, sink); the
        // caller owns ctas × threads f32 at sink.
        unsafe { launch::launch_raw(func.cu_function(), &shape, stream.cu_stream(), &mut params) }
    }

    /// Launch `hgemm_hang_test`, a deliberately broken pipeline (two CTAs of 64 threads wait on an
    /// mbarrier whose phase expects 1024 bytes that no copy delivers), on `stream`. The next
    /// [`Gemm::synchronize`] fails with [`Error::Hang`] after
    /// [`LIMIT_NS`](crate::hang::LIMIT_NS), and the context is unusable from then on.
    #[cfg(feature = "hang-guard")]
    pub fn launch_broken_pipeline(&self, stream: &CudaStream) -> Result<()> {
        let shape = LaunchShape::plain(2, 64, 16);
        self.before_launch(Some("hgemm_hang_test"))?;
        // SAFETY: hgemm_hang_test takes no parameters.
        unsafe { launch::launch_raw(self.hang.test_kernel.cu_function(), &shape, stream.cu_stream(), &mut []) }
    }

    /// Launch `hgemm_hang_flag_test` (one CTA of 32 threads whose thread 0 waits for the u32 at
    /// `flag` to become nonzero): with `flag` zero, it traps after the guard's limit.
    #[cfg(feature = "hang-guard")]
    fn hang_flag_test_raw(&self, stream: &CudaStream, flag: u64) -> Result<()> {
        let shape = LaunchShape::plain(1, 32, 0);
        self.before_launch(Some("hgemm_hang_flag_test"))?;
        let mut flag = flag;
        let mut params: [*mut std::ffi::c_void; 1] = [&mut flag as *mut u64 as *mut _];
        // SAFETY: hgemm_hang_flag_test(flag: u64); the caller keeps the flag's memory alive.
        unsafe { launch::launch_raw(self.hang.flag_test_kernel.cu_function(), &shape, stream.cu_stream(), &mut params) }
    }

    /// Launch `hgemm_hang_flag_test`, a finishing worker whose earlier worker never publishes its
    /// partial sums (thread 0 of one CTA waits, as `Partial::wait` does, on a zeroed flag in a
    /// device allocation this returns; keep it alive until the failure is seen), on `stream`. The
    /// next [`Gemm::synchronize`] fails with [`Error::Hang`] after
    /// [`LIMIT_NS`](crate::hang::LIMIT_NS), and the context is unusable from then on.
    #[cfg(feature = "hang-guard")]
    pub fn launch_unpublished_flag(
        &self,
        stream: &std::sync::Arc<CudaStream>,
    ) -> Result<cudarc::driver::CudaSlice<u32>> {
        use cudarc::driver::DevicePtr;
        let flag = stream.alloc_zeros::<u32>(1).map_err(|e| Error::driver("cuMemAlloc", e))?;
        let (ptr, guard) = flag.device_ptr(stream);
        self.hang_flag_test_raw(stream, ptr)?;
        // The guard records the flag's use on `stream` when dropped: after the launch.
        drop(guard);
        Ok(flag)
    }
}

fn fill_shape(len: usize, sms: u32) -> LaunchShape {
    let blocks = (len.div_ceil(256) as u64).clamp(1, sms as u64 * 8) as u32;
    LaunchShape::plain(blocks, 256, 0)
}
