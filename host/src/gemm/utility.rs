//! The handle's utility kernels: fills, the on-device comparison, the tensor-core ceilings, the
//! separate epilogue kernels the fused epilogue is measured against, the reduce-copy load the SM
//! budget is measured beside, and the hang-guard's test
//! kernels, each launched plainly on the caller's stream.

use super::{BiasElement, Gemm};
use crate::error::{Error, Result};
use crate::launch;
use crate::plan::LaunchShape;
use cudarc::driver::{CudaFunction, CudaStream, DevicePtr, DevicePtrMut, sys};
use half::bf16;
use hgemm_kernels::fused::{Activation, Epilogue};
use std::sync::OnceLock;

/// Elements a `rows × cols` row-major matrix with rows `ld` apart spans, checked for `name`.
fn span(name: &'static str, rows: usize, cols: usize, ld: usize) -> Result<usize> {
    if ld < cols {
        return Err(Error::LeadingDimension { operand: name, ld, min: cols });
    }
    if rows > u32::MAX as usize || cols > u32::MAX as usize {
        return Err(Error::InvalidShape(format!("{name}: {rows}×{cols} past the kernel's 32-bit sizes")));
    }
    (rows.max(1) - 1)
        .checked_mul(ld)
        .and_then(|x| x.checked_add(cols))
        .ok_or_else(|| Error::InvalidShape(format!("{name} spans more than 2^64 elements")))
}
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

    /// `cell`'s function, loaded from the module by `name` at its first use.
    fn utility_function<'a>(&self, cell: &'a OnceLock<CudaFunction>, name: &str) -> Result<&'a CudaFunction> {
        if let Some(f) = cell.get() {
            return Ok(f);
        }
        let f = self.module.load_function(name).map_err(|e| Error::driver("cuModuleGetFunction", e))?;
        Ok(cell.get_or_init(|| f))
    }

    /// `y = act(y + bias[col])` in place over a `rows × cols` row-major bf16 matrix with rows
    /// `ld` apart, by a separate kernel (`hgemm_bias_act_bf16`): what a GEMM without a fused
    /// epilogue needs after it, for baselines and checks. The sum and the activation are
    /// computed in f32 and rounded to bf16 once.
    #[allow(clippy::too_many_arguments)]
    pub fn bias_activation<Y, E, V>(
        &self,
        stream: &CudaStream,
        y: &mut Y,
        rows: usize,
        cols: usize,
        ld: usize,
        bias: &V,
        act: Activation,
    ) -> Result<()>
    where
        Y: DevicePtrMut<bf16>,
        E: BiasElement,
        V: DevicePtr<E>,
    {
        let needed = span("y", rows, cols, ld)?;
        if y.len() < needed {
            return Err(Error::BufferTooSmall { operand: "y", needed, len: y.len() });
        }
        if bias.len() < cols {
            return Err(Error::BufferTooSmall { operand: "bias", needed: cols, len: bias.len() });
        }
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        let func = self.utility_function(&self.bias_act, "hgemm_bias_act_bf16")?.cu_function();
        let (py, _gy) = y.device_ptr_mut(stream);
        let (pb, _gb) = bias.device_ptr(stream);
        let (mut py, mut rows32, mut cols32, mut ld64, mut pb) = (py, rows as u32, cols as u32, ld as u64, pb);
        let mut epilogue = Epilogue::NONE.with_activation(act).with_bias(E::TYPE).0;
        let mut params: [*mut std::ffi::c_void; 6] = [
            &mut py as *mut u64 as *mut _,
            &mut rows32 as *mut u32 as *mut _,
            &mut cols32 as *mut u32 as *mut _,
            &mut ld64 as *mut u64 as *mut _,
            &mut pb as *mut u64 as *mut _,
            &mut epilogue as *mut u32 as *mut _,
        ];
        let shape = fill_shape(rows * cols, self.info.sms);
        self.before_launch(None)?;
        // SAFETY: the parameters match hgemm_bias_act_bf16(y, rows, cols, ld, bias, epilogue);
        // y and bias hold what was checked above, alive until the guards drop after the launch.
        unsafe { launch::launch_raw(func, &shape, stream.cu_stream(), &mut params) }
    }

    /// `y[r][c] = act(x[r][c]) · x[r][c + cols]` for a `rows × cols` row-major bf16 output with
    /// rows `ld_y` apart, from `rows × 2·cols` gate-then-up pre-activations `x` with rows `ld_x`
    /// apart, by a separate kernel (`hgemm_glu_bf16`): SwiGLU or GeGLU after a GEMM whose N
    /// holds the gate and up halves side by side, for baselines and checks.
    #[allow(clippy::too_many_arguments)]
    pub fn glu<X, Y>(
        &self,
        stream: &CudaStream,
        x: &X,
        rows: usize,
        cols: usize,
        ld_x: usize,
        y: &mut Y,
        ld_y: usize,
        act: Activation,
    ) -> Result<()>
    where
        X: DevicePtr<bf16>,
        Y: DevicePtrMut<bf16>,
    {
        let wide = cols.checked_mul(2).ok_or_else(|| Error::InvalidShape(format!("2·{cols} columns overflow")))?;
        let (need_x, need_y) = (span("x", rows, wide, ld_x)?, span("y", rows, cols, ld_y)?);
        if x.len() < need_x {
            return Err(Error::BufferTooSmall { operand: "x", needed: need_x, len: x.len() });
        }
        if y.len() < need_y {
            return Err(Error::BufferTooSmall { operand: "y", needed: need_y, len: y.len() });
        }
        if rows == 0 || cols == 0 {
            return Ok(());
        }
        let func = self.utility_function(&self.glu, "hgemm_glu_bf16")?.cu_function();
        let (px, _gx) = x.device_ptr(stream);
        let (py, _gy) = y.device_ptr_mut(stream);
        let (mut px, mut rows32, mut cols32, mut ldx, mut py, mut ldy) =
            (px, rows as u32, cols as u32, ld_x as u64, py, ld_y as u64);
        let mut epilogue = Epilogue::NONE.with_activation(act).gated().0;
        let mut params: [*mut std::ffi::c_void; 7] = [
            &mut px as *mut u64 as *mut _,
            &mut rows32 as *mut u32 as *mut _,
            &mut cols32 as *mut u32 as *mut _,
            &mut ldx as *mut u64 as *mut _,
            &mut py as *mut u64 as *mut _,
            &mut ldy as *mut u64 as *mut _,
            &mut epilogue as *mut u32 as *mut _,
        ];
        let shape = fill_shape(rows * cols, self.info.sms);
        self.before_launch(None)?;
        // SAFETY: the parameters match hgemm_glu_bf16(x, rows, cols, ld_x, y, ld_y, epilogue);
        // x and y hold what was checked above, alive until the guards drop after the launch.
        unsafe { launch::launch_raw(func, &shape, stream.cu_stream(), &mut params) }
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

    /// An entry of this handle's module that no GEMM call launches (the measurements' loads),
    /// loaded at its first use.
    pub(crate) fn load_entry(&self, name: &str) -> Result<CudaFunction> {
        self.module.load_function(name).map_err(|e| Error::driver("cuModuleGetFunction", e))
    }

    /// Launch `hgemm_reduce_copy` (`func`, from [`Gemm::load_entry`]) on `ctas` CTAs: `dst +=
    /// src` over `chunks` 16-byte chunks of f32, `rounds` times.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn reduce_copy_raw(
        &self,
        stream: &CudaStream,
        func: &CudaFunction,
        ctas: u32,
        src: u64,
        dst: u64,
        chunks: u64,
        rounds: u32,
    ) -> Result<()> {
        if ctas == 0 || ctas > self.info.sms {
            return Err(Error::InvalidShape(format!(
                "reduce-copy on {ctas} CTAs: 1 to the device's {}",
                self.info.sms
            )));
        }
        let (mut src, mut dst, mut chunks, mut rounds) = (src, dst, chunks, rounds);
        let mut params: [*mut std::ffi::c_void; 4] = [
            &mut src as *mut u64 as *mut _,
            &mut dst as *mut u64 as *mut _,
            &mut chunks as *mut u64 as *mut _,
            &mut rounds as *mut u32 as *mut _,
        ];
        let shape = LaunchShape::plain(ctas, hgemm_kernels::reduce_copy::THREADS, 0);
        self.before_launch(None)?;
        // SAFETY: the parameters match hgemm_reduce_copy(src, dst, chunks, rounds); the caller
        // owns `chunks` 16-byte chunks at each of src and dst.
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
