//! Checking and timing, shared by the `hgemm` CLI, the GPU tests and the benchmarks.
//!
//! The rules they all follow: fresh random inputs for every case (B scaled by K^-1/2 so C stays
//! of order one for any K); outputs poisoned with NaN before each run, and a guard band after
//! C that must come back untouched; results compared by relative Frobenius error against cuBLAS
//! and, on small shapes, against an f64 CPU reference; times are medians of CUDA-event samples of
//! back-to-back calls over input sets rotated beyond L2.

use crate::error::{Error, Result};
use crate::gemm::Gemm;
use crate::op::{GemmOp, Layout};
use cudarc::cublas::{CudaBlas, Gemm as _, GemmConfig, result as blas_result, sys as blas_sys};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, sys};
use half::bf16;
use hgemm_kernels::hopper::ceiling::{CEILINGS, CeilingSpec};
use hgemm_kernels::spec::KernelSpec;
use std::sync::Arc;

mod cases;
mod compare;
pub use cases::*;
pub use compare::*;

/// bf16 output against an f32-accumulating reference: both round to bf16 at the end, so the
/// expected relative error is about 2^-9; a wrong tile or K slice shows up as 0.1 or more.
pub const TOLERANCE: f64 = 1e-2;

/// NaN, written over C before every checked run: an element the kernel fails to write stays NaN.
pub const POISON: u16 = 0xffff;
/// Written after C: the kernel must never touch it.
pub const GUARD: u16 = 0x1234;
/// Elements of guard band after every checked C.
pub const GUARD_LEN: usize = 4096;

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

/// cuBLAS as the reference and the baseline, computing the same C = A·Bᵀ (row-major).
pub struct Cublas {
    blas: CudaBlas,
    stream: Arc<CudaStream>,
}

impl Cublas {
    /// A cuBLAS handle working on `stream`.
    pub fn new(stream: &Arc<CudaStream>) -> Result<Cublas> {
        Ok(Cublas {
            blas: CudaBlas::new(stream.clone()).map_err(|e| Error::Cublas(format!("{e:?}")))?,
            stream: stream.clone(),
        })
    }

    /// C (M×N, row-major) = A (M×K) · B (N×K)ᵀ. In cuBLAS's column-major terms that is
    /// Cᵀ (N×M) = op(B)·op(A) with B transposed: `gemm(T, N, n, m, k, B, A, C)`.
    pub fn matmul<A, B, C>(&self, a: &A, b: &B, c: &mut C, m: usize, n: usize, k: usize) -> Result<()>
    where
        A: DevicePtr<bf16>,
        B: DevicePtr<bf16>,
        C: DevicePtrMut<bf16>,
    {
        let cfg = GemmConfig {
            transa: blas_sys::cublasOperation_t::CUBLAS_OP_T,
            transb: blas_sys::cublasOperation_t::CUBLAS_OP_N,
            m: n as i32,
            n: m as i32,
            k: k as i32,
            alpha: bf16::ONE,
            lda: k as i32,
            ldb: k as i32,
            beta: bf16::ZERO,
            ldc: n as i32,
        };
        self.bind()?;
        // SAFETY: the buffers hold M×K, N×K and M×N elements (callers allocate them so).
        unsafe { self.blas.gemm(cfg, b, a, c) }.map_err(|e| Error::Cublas(format!("{e:?}")))
    }

    /// cuBLAS works in the calling thread's current context, which may not be this handle's.
    fn bind(&self) -> Result<()> {
        self.stream.context().bind_to_thread().map_err(drv("cuCtxSetCurrent"))
    }
}

impl Cublas {
    /// The same computation as [`Gemm::gemm`] with `op`, by `cublasGemmStridedBatchedEx` (f32
    /// compute, f32 alpha and beta). cuBLAS is column-major: a row-major C is computed as
    /// Cᵀ = Bᵀ·Aᵀ, and each operand is transposed when its storage order disagrees.
    pub fn gemm<A, B, C>(&self, op: &GemmOp, a: &A, b: &B, c: &mut C) -> Result<()>
    where
        A: DevicePtr<bf16>,
        B: DevicePtr<bf16>,
        C: DevicePtrMut<bf16>,
    {
        use blas_sys::cublasOperation_t::{CUBLAS_OP_N as N, CUBLAS_OP_T as T};
        self.bind()?;
        let stream = &self.stream;
        let (pa, _ga) = a.device_ptr(stream);
        let (pb, _gb) = b.device_ptr(stream);
        let (pc, _gc) = c.device_ptr_mut(stream);
        let op_of = |layout: Layout, natural: Layout| if layout == natural { N } else { T };
        // (first, second, m, n) in cuBLAS's column-major terms.
        let (x, tx, ldx, sx, y, ty, ldy, sy, mm, nn) = match op.c_layout {
            Layout::ColMajor => (
                pa,
                op_of(op.a_layout, Layout::ColMajor),
                op.lda,
                op.stride_a,
                pb,
                op_of(op.b_layout, Layout::ColMajor),
                op.ldb,
                op.stride_b,
                op.m,
                op.n,
            ),
            Layout::RowMajor => (
                pb,
                op_of(op.b_layout, Layout::RowMajor),
                op.ldb,
                op.stride_b,
                pa,
                op_of(op.a_layout, Layout::RowMajor),
                op.lda,
                op.stride_a,
                op.n,
                op.m,
            ),
        };
        let (alpha, beta) = (op.alpha, op.beta);
        // SAFETY: the caller's buffers hold what `op` describes (validated by GemmOp::validate).
        unsafe {
            blas_result::gemm_strided_batched_ex(
                *self.blas.handle(),
                tx,
                ty,
                mm as i32,
                nn as i32,
                op.k as i32,
                &alpha as *const f32 as *const _,
                x as *const _,
                blas_sys::cudaDataType_t::CUDA_R_16BF,
                ldx.max(1) as i32,
                sx as i64,
                y as *const _,
                blas_sys::cudaDataType_t::CUDA_R_16BF,
                ldy.max(1) as i32,
                sy as i64,
                &beta as *const f32 as *const _,
                pc as *mut _,
                blas_sys::cudaDataType_t::CUDA_R_16BF,
                op.ldc as i32,
                op.stride_c as i64,
                op.batch as i32,
                blas_sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                blas_sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
            )
        }
        .map_err(|e| Error::Cublas(format!("{e:?}")))
    }
}

/// The dense single GEMM `kernel` computes: C = A·B with A and B in the storage orders it reads
/// (the native C = A·Bᵀ for the ladder).
/// An MN-major operand's leading dimension is M or N rounded up to 8 (TMA's 16-byte rows).
pub fn op_for(kernel: &KernelSpec, m: usize, n: usize, k: usize) -> GemmOp {
    use hgemm_kernels::spec::Major;
    // An entry that writes C column-major reads the caller's B as its A, and A as its B.
    let (a_major, b_major) = if swaps(kernel, Layout::RowMajor) {
        (kernel.b_major, kernel.a_major)
    } else {
        (kernel.a_major, kernel.b_major)
    };
    let op = GemmOp::new(m, n, k);
    let op = if a_major == Major::MN { op.a(Layout::ColMajor, m.div_ceil(8) * 8) } else { op };
    if b_major == Major::MN { op.b(Layout::RowMajor, n.div_ceil(8) * 8) } else { op }
}

/// The whole C buffer after `op`, in f64 on the CPU: `c` is its content before the call
/// (padding and, with beta ≠ 0, the old values). The buffers are checked as `gemm` checks them
/// ([`GemmOp::validate`]): too short a buffer is an error, not a panic.
pub fn cpu_reference_general(op: &GemmOp, a: &[bf16], b: &[bf16], c: &[bf16]) -> Result<Vec<f64>> {
    let mut out: Vec<f64> = c.iter().map(|x| x.to_f64()).collect();
    if !op.validate(a.len(), b.len(), c.len())? {
        return Ok(out);
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(op.m.max(1));
    for z in 0..op.batch {
        let (a, b) = (&a[z * op.stride_a..], &b[z * op.stride_b..]);
        let at = |i: usize, kk: usize| {
            if op.a_layout == Layout::RowMajor { a[i * op.lda + kk] } else { a[kk * op.lda + i] }.to_f64()
        };
        let bt = |kk: usize, j: usize| {
            if op.b_layout == Layout::RowMajor { b[kk * op.ldb + j] } else { b[j * op.ldb + kk] }.to_f64()
        };
        // A·B row by row, the rows split over the host's cores.
        let rows_per = op.m.div_ceil(threads);
        let ab: Vec<Vec<f64>> = std::thread::scope(|s| {
            let parts: Vec<_> = (0..threads)
                .map(|t| {
                    s.spawn(move || {
                        let rows = t * rows_per..((t + 1) * rows_per).min(op.m);
                        rows.flat_map(|i| {
                            (0..op.n).map(move |j| (0..op.k).map(|kk| at(i, kk) * bt(kk, j)).sum::<f64>())
                        })
                        .collect::<Vec<f64>>()
                    })
                })
                .collect();
            parts.into_iter().map(|p| p.join().expect("reference thread")).collect()
        });
        for (idx, v) in ab.into_iter().flatten().enumerate() {
            let (i, j) = (idx / op.n, idx % op.n);
            let at_c = z * op.stride_c + if op.c_layout == Layout::RowMajor { i * op.ldc + j } else { j * op.ldc + i };
            out[at_c] = op.alpha as f64 * v + if op.beta != 0.0 { op.beta as f64 * out[at_c] } else { 0.0 };
        }
    }
    Ok(out)
}

/// How far an output is from a reference.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Comparison {
    /// ‖out − ref‖ / ‖ref‖ over the finite elements.
    pub rel_error: f64,
    /// Elements that are NaN or infinite (unwritten ones stay NaN from the poison).
    pub non_finite: usize,
}

impl Comparison {
    /// Within [`TOLERANCE`] and no unwritten or non-finite element.
    pub fn passed(&self) -> bool {
        self.non_finite == 0 && self.rel_error <= TOLERANCE
    }
}

/// `out` against `reference`, element by element in the same order. An element of either with no
/// counterpart in the other (they differ in length) counts as non-finite, so that the comparison
/// fails.
pub fn compare(out: &[bf16], reference: impl IntoIterator<Item = f64>) -> Comparison {
    let (mut diff, mut norm, mut non_finite) = (0.0f64, 0.0f64, 0usize);
    let (mut out, mut reference) = (out.iter(), reference.into_iter());
    loop {
        let (o, r) = match (out.next(), reference.next()) {
            (Some(o), Some(r)) => (o, r),
            (None, None) => break,
            // Past the end of `reference`: each output element left over fails.
            (Some(_), None) => {
                non_finite += 1;
                continue;
            }
            // Past the end of `out` (`reference` may be endless): failed already.
            (None, Some(_)) => {
                non_finite += 1;
                break;
            }
        };
        let o = o.to_f64();
        if !o.is_finite() {
            non_finite += 1;
            continue;
        }
        diff += (o - r) * (o - r);
        norm += r * r;
    }
    Comparison { rel_error: if norm > 0.0 { (diff / norm).sqrt() } else { diff.sqrt() }, non_finite }
}

/// The outcome of one checked case.
#[derive(Clone, Debug)]
pub struct Case {
    /// The kernel checked.
    pub kernel: &'static str,
    /// The shape.
    pub m: usize,
    /// The shape.
    pub n: usize,
    /// The shape.
    pub k: usize,
    /// Against cuBLAS.
    pub vs_cublas: Comparison,
    /// Against the f64 CPU reference (small shapes only).
    pub vs_cpu: Option<Comparison>,
    /// Guard elements after C that were overwritten.
    pub guard_damage: usize,
}

impl Case {
    /// Every comparison passed and the guard band is intact.
    pub fn passed(&self) -> bool {
        self.vs_cublas.passed() && self.vs_cpu.is_none_or(|c| c.passed()) && self.guard_damage == 0
    }
}

/// Shapes up to this many multiply-adds are also checked against the CPU reference.
pub const CPU_CHECK_MAX_MACS: usize = 1 << 27;

/// Run `kernel` once on fresh random inputs and check it against cuBLAS (and the CPU on small
/// shapes). `seed` picks the inputs.
pub fn check(
    gemm: &Gemm,
    blas: &Cublas,
    stream: &Arc<CudaStream>,
    kernel: &KernelSpec,
    (m, n, k): (usize, usize, usize),
    seed: u64,
) -> Result<Case> {
    let op = op_for(kernel, m, n, k);
    let (la, lb, _) = lengths(&op);
    let a = random(gemm, stream, la, seed, 1.0)?;
    let b = random(gemm, stream, lb, seed ^ 0x5eed, 1.0 / (k.max(1) as f32).sqrt())?;
    let mut c = unsafe { stream.alloc::<bf16>(m * n + GUARD_LEN) }.map_err(drv("cuMemAlloc"))?;
    fill(gemm, stream, &mut c, GUARD)?;
    {
        let mut body = c.slice_mut(..m * n);
        let (p, _g) = body.device_ptr_mut(stream);
        gemm.fill_raw(stream, p, m * n, POISON)?;
    }
    gemm.gemm_with(kernel, stream, &op, &a, &b, &mut c.slice_mut(..m * n))?;
    let out = stream.clone_dtoh(&c).map_err(drv("cuMemcpyDtoH"))?;

    let mut reference = unsafe { stream.alloc::<bf16>(m * n) }.map_err(drv("cuMemAlloc"))?;
    blas.gemm(&op, &a, &b, &mut reference)?;
    let reference = stream.clone_dtoh(&reference).map_err(drv("cuMemcpyDtoH"))?;

    let vs_cublas = compare(&out[..m * n], reference.iter().map(|x| x.to_f64()));
    let vs_cpu = if m * n * k <= CPU_CHECK_MAX_MACS {
        let ha = stream.clone_dtoh(&a).map_err(drv("cuMemcpyDtoH"))?;
        let hb = stream.clone_dtoh(&b).map_err(drv("cuMemcpyDtoH"))?;
        // A dense C with beta = 0: its old content is not read.
        Some(compare(&out[..m * n], cpu_reference_general(&op, &ha, &hb, &vec![bf16::ZERO; m * n])?))
    } else {
        None
    };
    let guard_damage = out[m * n..].iter().filter(|x| x.to_bits() != GUARD).count();
    Ok(Case { kernel: kernel.name, m, n, k, vs_cublas, vs_cpu, guard_damage })
}

/// A call that must be refused with a typed error, leaving C as it was.
#[derive(Clone, Debug)]
pub struct Rejection {
    /// The call and the error it got.
    pub what: String,
    /// Refused with the expected error, and C untouched.
    pub passed: bool,
}

/// Calls `kernel` cannot take: each must return the expected [`Error`] and write nothing.
pub fn check_rejections(gemm: &Gemm, stream: &Arc<CudaStream>, kernel: &KernelSpec) -> Result<Vec<Rejection>> {
    // A call the kernel takes, but for the one thing wrong with each case.
    let t = kernel.tile_n as usize;
    let (m, n, k) = match (kernel.single_tile_column(), kernel.c_col_major) {
        (false, _) => (256, 256, 128),
        (true, false) => (256, t, 128),
        (true, true) => (t, 256, 128),
    };
    // Buffers long enough for every case, the one 8 rows or columns larger included.
    let (la, lb, lc) = lengths(&op_for(kernel, m + 8, n + 8, k));
    let a = random(gemm, stream, la + 8, 1, 1.0)?;
    let b = random(gemm, stream, lb, 2, 1.0)?;
    let mut c = unsafe { stream.alloc::<bf16>(lc) }.map_err(drv("cuMemAlloc"))?;
    let mut out = Vec::new();
    let mut expect = |what: &str,
                      c: &mut CudaSlice<bf16>,
                      call: &dyn Fn(&mut CudaSlice<bf16>) -> Result<()>,
                      ok: &dyn Fn(&Error) -> bool|
     -> Result<()> {
        fill(gemm, stream, c, GUARD)?;
        let r = call(c);
        let untouched = stream.clone_dtoh(c).map_err(drv("cuMemcpyDtoH"))?.iter().all(|x| x.to_bits() == GUARD);
        let passed = matches!(&r, Err(e) if ok(e)) && untouched;
        out.push(Rejection {
            what: format!("{what}: {}", r.err().map(|e| e.to_string()).unwrap_or_else(|| "accepted".into())),
            passed,
        });
        Ok(())
    };
    let run = |op: GemmOp, a: &cudarc::driver::CudaView<bf16>, c: &mut CudaSlice<bf16>| {
        gemm.gemm_with(kernel, stream, &op, a, &b, c)
    };
    expect("K not a multiple of 8", &mut c, &|c| run(op_for(kernel, m, n, 100), &a.slice(..), c), &|e| {
        matches!(e, Error::InvalidShape(_))
    })?;
    expect(
        "C too short",
        &mut c,
        &|c| gemm.gemm_with(kernel, stream, &op_for(kernel, m, n, k), &a, &b, &mut c.slice_mut(..m * n - 1)),
        &|e| matches!(e, Error::BufferTooSmall { operand: "C", .. }),
    )?;
    expect("A misaligned", &mut c, &|c| run(op_for(kernel, m, n, k), &a.slice(1..), c), &|e| {
        matches!(e, Error::Misaligned { operand: "A", .. })
    })?;
    // A dense C with N odd, which TMA cannot write: the entries that store any C take it (their
    // sweeps and `general_cases` check them on such a C), the rest refuse it.
    if kernel.c_box.is_some() && !kernel.stores_any_c() {
        expect("N odd (TMA store)", &mut c, &|c| run(op_for(kernel, m, n - 1, k), &a.slice(..), c), &|e| {
            matches!(e, Error::Unsupported { .. })
        })?;
    }
    if kernel.single_tile_column() {
        let (m2, n2) = if kernel.c_col_major { (m + 8, n) } else { (m, n + 8) };
        expect("two columns of tiles", &mut c, &|c| run(op_for(kernel, m2, n2, k), &a.slice(..), c), &|e| {
            matches!(e, Error::Unsupported { .. })
        })?;
    }
    // beta ≠ 0: a ladder kernel takes none, and a tile whose last staging box is shifted takes it
    // in one column only (256 is two columns of its tiles).
    if !kernel.general || kernel.shifted_last_box() {
        let what = if kernel.general { "two columns of tiles, beta != 0" } else { "beta != 0 on a ladder kernel" };
        expect(what, &mut c, &|c| run(op_for(kernel, m, n, k).beta(1.0), &a.slice(..), c), &|e| {
            matches!(e, Error::Unsupported { .. })
        })?;
    }
    Ok(out)
}

/// Shapes every kernel is verified on: exact tiles, partial tiles in M, N and K, tiny and large.
/// On the stream-K kernels, 4160×4104×520 and 8192³ split their last waves and 520×776×4096
/// splits every tile's K blocks across several workers.
pub const VERIFY_SHAPES: &[(usize, usize, usize)] = &[
    (128, 256, 64),
    (1, 8, 8),
    (129, 264, 72),
    (200, 304, 136),
    (1000, 1000, 1000),
    (2048, 2048, 2048),
    (4160, 4104, 520),
    (520, 776, 4096),
    (8192, 8192, 8192),
];

/// [`VERIFY_SHAPES`] for `kernel`. An entry that takes one column of tiles only
/// ([`KernelSpec::single_tile_column`]) gets each shape with the side its tiles' columns cover (N,
/// or M for an entry that writes C column-major) replaced by a whole or partial column: N stays a
/// multiple of 8, as a dense C needs for TMA; M, which a column-major entry takes as it comes, need
/// not.
pub fn verify_shapes(kernel: &KernelSpec) -> Vec<(usize, usize, usize)> {
    if !kernel.single_tile_column() {
        return VERIFY_SHAPES.to_vec();
    }
    let t = kernel.tile_n as usize;
    // `t - d % t`: `t - d` where the tile is wider than `d` (160 and 224), folded into the
    // column for the narrow tiles (16 and 32).
    let cut = |d: usize| t - d % t;
    let (ns, ms) =
        ([t, 8, cut(24), cut(8), t, cut(16), t, cut(24), t], [t, 1, cut(31), cut(3), t, cut(16), t, cut(29), t]);
    VERIFY_SHAPES
        .iter()
        .enumerate()
        .map(|(i, &(m, n, k))| if kernel.c_col_major { (ms[i], n, k) } else { (m, ns[i], k) })
        .collect()
}

/// Odd N: rows of C start at odd elements. Direct-store epilogues and the entries that store any C
/// ([`KernelSpec::stores_any_c`]) must handle it; the other TMA-store ones must refuse it
/// ([`check_rejections`]).
pub const ODD_N_SHAPE: (usize, usize, usize) = (67, 301, 40);

/// Everything `hgemm verify` and the GPU tests check for one kernel, one printable line per
/// case and whether it passed. `seed` makes the inputs.
pub fn verify_kernel(
    gemm: &Gemm,
    blas: &Cublas,
    stream: &Arc<CudaStream>,
    kernel: &KernelSpec,
    seed: u64,
) -> Result<Vec<(String, bool)>> {
    let mut lines = Vec::new();
    let odd = (kernel.c_box.is_none() || kernel.stores_any_c()).then_some(ODD_N_SHAPE);
    for (i, &shape) in verify_shapes(kernel).iter().chain(odd.iter()).enumerate() {
        let case = check(gemm, blas, stream, kernel, shape, seed.wrapping_add(i as u64 * 7919))?;
        let cpu = case.vs_cpu.map(|c| format!("{:.2e}", c.rel_error)).unwrap_or_else(|| "-".into());
        lines.push((
            format!(
                "{:<14} {:>5}x{:<5}x{:<5} vs cuBLAS {:.2e}  vs CPU {:>8}  unwritten {:<3} guard {:<3} {}",
                kernel.name,
                shape.0,
                shape.1,
                shape.2,
                case.vs_cublas.rel_error,
                cpu,
                case.vs_cublas.non_finite,
                case.guard_damage,
                if case.passed() { "ok" } else { "FAIL" }
            ),
            case.passed(),
        ));
    }
    for r in check_rejections(gemm, stream, kernel)? {
        lines.push((format!("{:<14} {:<40} {}", kernel.name, r.what, if r.passed { "ok" } else { "FAIL" }), r.passed));
    }
    Ok(lines)
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
        len(op.c_layout, op.m, op.n, op.ldc, op.stride_c),
    )
}

/// Run `op` through [`Gemm::gemm`] (the automatic choice) on fresh random A, B and C (C matters
/// when beta ≠ 0; padding between rows and batch entries must come back untouched), and the same
/// through cuBLAS, and compare the whole C buffers. C is a view of its buffer from element
/// `c_offset` (the buffer starts 256-byte aligned) as long as the call needs, and the elements
/// before and after it must come back untouched too.
pub fn check_op(
    gemm: &Gemm,
    blas: &Cublas,
    stream: &Arc<CudaStream>,
    op: &GemmOp,
    c_offset: usize,
    seed: u64,
) -> Result<OpCheck> {
    let (la, lb, lc) = lengths(op);
    let a = random(gemm, stream, la, seed, 1.0)?;
    let b = random(gemm, stream, lb, seed ^ 0x5eed, 1.0 / (op.k.max(1) as f32).sqrt())?;
    let mut c = random(gemm, stream, c_offset + lc + GUARD_LEN, seed ^ 0xc0de, 1.0)?;
    let view = c_offset..c_offset + lc;
    let mut reference = stream.clone_dtod(&c).map_err(drv("cuMemcpyDtoD"))?;
    let small = op.m * op.n * op.k * op.batch <= CPU_CHECK_MAX_MACS;
    let host = |buf: &CudaSlice<bf16>| stream.clone_dtoh(buf).map_err(drv("cuMemcpyDtoH"));
    let before_c = host(&c)?;
    let before = if small { Some((host(&a)?, host(&b)?)) } else { None };
    gemm.gemm(stream, op, &a, &b, &mut c.slice_mut(view.clone()))?;
    blas.gemm(op, &a, &b, &mut reference.slice_mut(view.clone()))?;
    let out = host(&c)?;
    let reference = host(&reference)?;
    let vs_cpu = match before {
        Some((ha, hb)) => {
            let computed = cpu_reference_general(op, &ha, &hb, &before_c[view.clone()])?;
            let untouched = |r: std::ops::Range<usize>| before_c[r].iter().map(|x| x.to_f64());
            Some(compare(&out, untouched(0..c_offset).chain(computed).chain(untouched(view.end..before_c.len()))))
        }
        None => None,
    };
    // Bit for bit, not within a tolerance: one element written past a row's end must fail.
    let mut output = vec![false; before_c.len()];
    for z in 0..op.batch {
        for (i, j) in (0..op.m).flat_map(|i| (0..op.n).map(move |j| (i, j))) {
            let (row, col) = if op.c_layout == Layout::RowMajor { (i, j) } else { (j, i) };
            output[c_offset + z * op.stride_c + row * op.ldc + col] = true;
        }
    }
    let outside = (0..out.len()).filter(|&i| !output[i] && out[i].to_bits() != before_c[i].to_bits()).count();
    Ok(OpCheck { vs_cublas: compare(&out, reference.iter().map(|x| x.to_f64())), vs_cpu, outside })
}

/// What [`check_op`] found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpCheck {
    /// Against cuBLAS, over the whole buffer.
    pub vs_cublas: Comparison,
    /// Against the f64 CPU reference, for calls of up to [`CPU_CHECK_MAX_MACS`].
    pub vs_cpu: Option<Comparison>,
    /// Elements of C's buffer outside the output (before the view, between rows and between
    /// batch entries) that the call changed.
    pub outside: usize,
}

impl OpCheck {
    /// Every comparison passed and nothing outside the output changed.
    pub fn passed(&self) -> bool {
        self.vs_cublas.passed() && self.vs_cpu.is_none_or(|c| c.passed()) && self.outside == 0
    }
}

/// One call of [`general_cases`]: what it checks, the call, and where C starts in its buffer
/// ([`check_op`]'s `c_offset`).
pub struct GeneralCase {
    /// The case in words.
    pub what: String,
    /// The call.
    pub op: GemmOp,
    /// Elements of C's buffer before the view the call writes.
    pub c_offset: usize,
}

/// The general calls the library must get right: every storage order of A, B and C, alpha and
/// beta with C pre-filled, leading dimensions wider than the rows, strided batches, K = 0, and
/// shapes that take each tile shape.
pub fn general_cases() -> Vec<GeneralCase> {
    let mut cases = Vec::new();
    let orders = [Layout::RowMajor, Layout::ColMajor];
    for &(m, n, k) in &[(300, 520, 136), (96, 1000, 264), (1024, 2048, 512)] {
        for al in orders {
            for bl in orders {
                for cl in orders {
                    let ld = |l: Layout, rows: usize, cols: usize| if l == Layout::RowMajor { cols } else { rows };
                    // Leading dimensions padded by 8 or 16 elements past the minimum, rounded to 8.
                    let pad = |x: usize, p: usize| (x + p).div_ceil(8) * 8;
                    let op = GemmOp::new(m, n, k)
                        .a(al, pad(ld(al, m, k), 8))
                        .b(bl, pad(ld(bl, k, n), 16))
                        .c(cl, pad(ld(cl, m, n), 8))
                        .alpha(0.75)
                        .beta(-0.5);
                    cases.push((format!("{m}x{n}x{k} A {al:?} B {bl:?} C {cl:?} padded, alpha .75 beta -.5"), op));
                }
            }
            // Dense: every leading dimension is the row length itself (M rounded to 8 for TMA).
            let m8 = m.div_ceil(8) * 8;
            let dense = GemmOp::new(m8, n, k).a(al, if al == Layout::RowMajor { k } else { m8 });
            cases.push((format!("{m8}x{n}x{k} A {al:?}, dense, alpha 1 beta 0"), dense));
        }
    }
    let b = GemmOp::new(200, 264, 72).b(Layout::RowMajor, 264);
    let (la, lb, lc) = lengths(&b);
    cases.push(("200x264x72 batch of 3, strided with gaps".into(), b.beta(1.0).batched(3, la + 64, lb + 8, lc + 256)));
    cases.push((
        "8192x8192x8192 batch of 1 through the general path, beta 1".into(),
        GemmOp::new(8192, 8192, 8192).beta(1.0),
    ));
    cases.push(("256x512x0 (K = 0): C = beta·C".into(), GemmOp::new(256, 512, 0).beta(0.5)));
    // Several tiles per cluster, an odd number on some: K = 0 must not touch the operand stages.
    cases
        .push(("2304x4096x0 (K = 0), tiles over every cluster, beta 1.5".into(), GemmOp::new(2304, 4096, 0).beta(1.5)));
    // Stream-K: tiles split across workers in each regime (see `StreamK`).
    cases.push((
        "520x776x4096 C col-major, alpha .75 beta -.5: every tile split by K".into(),
        GemmOp::new(520, 776, 4096).c(Layout::ColMajor, 520).alpha(0.75).beta(-0.5),
    ));
    let b = GemmOp::new(200, 264, 1024).b(Layout::RowMajor, 264).beta(1.0);
    let (la, lb, lc) = lengths(&b);
    cases.push((
        "200x264x1024 B row-major, batch of 40, beta 1: split tiles across batch entries".into(),
        b.batched(40, la, lb, lc),
    ));
    cases.push((
        "2304x2304x4096 A col-major: a wave and a quarter, split".into(),
        GemmOp::new(2304, 2304, 4096).a(Layout::ColMajor, 2304),
    ));
    // Rows of C that end inside a 16-byte chunk, which TMA would overwrite to its end.
    for n in [5, 300, 1001] {
        let ldc = (n + 8usize).div_ceil(8) * 8;
        cases.push((
            format!("130x{n}x64 C rows end mid-chunk (ldc {ldc}), beta 0"),
            GemmOp::new(130, n, 64).c(Layout::RowMajor, ldc),
        ));
        cases.push((
            format!("130x{n}x64 C rows end mid-chunk (ldc {ldc}), beta 1"),
            GemmOp::new(130, n, 64).c(Layout::RowMajor, ldc).beta(1.0),
        ));
    }
    let mut cases: Vec<GeneralCase> =
        cases.into_iter().map(|(what, op)| GeneralCase { what, op, c_offset: 0 }).collect();
    // C that TMA cannot write at all, whose every column the kernel's threads store: rows not
    // 16-byte multiples apart (bf16 by bf16 where they are an odd number of elements apart), a
    // batch stride that is not, or a view of C that starts mid-chunk.
    let mut unaligned = |what: String, op: GemmOp, c_offset: usize| cases.push(GeneralCase { what, op, c_offset });
    unaligned("300x1001x264 dense C (ldc 1001), beta 0".into(), GemmOp::new(300, 1001, 264), 0);
    unaligned(
        "300x1001x264 dense C (ldc 1001), alpha .75 beta -.5".into(),
        GemmOp::new(300, 1001, 264).alpha(0.75).beta(-0.5),
        0,
    );
    unaligned(
        "256x50257x1024 dense C: a vocabulary of 50257, held wide tiles".into(),
        GemmOp::new(256, 50257, 1024),
        0,
    );
    unaligned(
        "2304x2301x4096 dense C, beta 1: wide tiles split by K".into(),
        GemmOp::new(2304, 2301, 4096).beta(1.0),
        0,
    );
    unaligned(
        "301x520x136 C col-major, dense (ldc 301), beta 1".into(),
        GemmOp::new(301, 520, 136).c(Layout::ColMajor, 301).beta(1.0),
        0,
    );
    unaligned("256x301x0 (K = 0) dense C, beta .5".into(), GemmOp::new(256, 301, 0).beta(0.5), 0);
    let b = GemmOp::new(200, 264, 72).b(Layout::RowMajor, 264).beta(1.0);
    let (la, lb, lc) = lengths(&b);
    unaligned("200x264x72 batch of 3, C entries an odd number apart, beta 1".into(), b.batched(3, la, lb, lc + 3), 0);
    for (c_offset, what) in [(1, "not 4-byte aligned"), (2, "4-byte aligned")] {
        unaligned(
            format!("520x776x512 C from element {c_offset} of its buffer ({what}), beta 1"),
            GemmOp::new(520, 776, 512).beta(1.0),
            c_offset,
        );
    }
    // `auto` writes this C column-major where it starts on a chunk, and gives way where not.
    for c_offset in [8, 4] {
        unaligned(
            format!("160x8192x512 C from element {c_offset} of its buffer"),
            GemmOp::new(160, 8192, 512),
            c_offset,
        );
    }
    cases
}

/// Input sets to rotate through so that one pass over them is three times L2 (`set_bytes`
/// each): no call finds its operands cached by the call before.
pub fn rotation_sets(l2_bytes: u32, set_bytes: usize) -> usize {
    (3 * l2_bytes as usize).div_ceil(set_bytes.max(1)).clamp(2, 32)
}

/// Back-to-back calls that make a sample of about `sample_ms`, and how many to make untimed
/// before it (two thirds as many): a call of `macs` multiply-adds moving `bytes` is estimated
/// at 600 TFLOP/s, or at 4 TB/s where that is longer (short K). The card is power-capped: a
/// short sample runs at whatever clock the previous kernel left (5 ms samples read v6 at 1.13×
/// cuBLAS right after the slow v0 and v1, against ~1.02× in steady state; 20 ms samples after
/// 13 ms ordered tuning's candidates otherwise than `hgemm bench` at four of six shapes), so
/// every sample first brings the clock to its own.
pub fn sample_calls(macs: usize, bytes: usize, sample_ms: f64) -> (usize, usize) {
    let call_s = (2.0 * macs as f64 / 600e12).max(bytes as f64 / 4e12);
    let calls = (sample_ms * 1e-3 / call_s).ceil().clamp(1.0, 20000.0) as usize;
    (calls, (calls * 2).div_ceil(3))
}

/// Milliseconds per call: `samples` CUDA-event samples of `calls` back-to-back calls each, after
/// `warmup` calls, and their median. `run(i)` makes call number `i` (use it to rotate inputs).
pub fn time_median(
    stream: &Arc<CudaStream>,
    warmup: usize,
    samples: usize,
    calls: usize,
    mut run: impl FnMut(usize) -> Result<()>,
) -> Result<Vec<f64>> {
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

/// 2·M·N·K over `ms` milliseconds, in TFLOP/s.
pub fn tflops(m: usize, n: usize, k: usize, ms: f64) -> f64 {
    2.0 * m as f64 * n as f64 * k as f64 / (ms * 1e-3) / 1e12
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
    fn cpu_reference_is_a_times_b_transposed() {
        // 2×8 each, K's last five columns zero.
        let row = |v: [f32; 3]| v.into_iter().chain([0.0; 5]).map(bf16::from_f32);
        let a: Vec<bf16> = row([1.0, 2.0, 3.0]).chain(row([4.0, 5.0, 6.0])).collect();
        let b: Vec<bf16> = row([1.0, 0.0, -1.0]).chain(row([2.0, 1.0, 0.5])).collect();
        let c = vec![bf16::from_f32(f32::NAN); 4];
        assert_eq!(cpu_reference_general(&GemmOp::new(2, 2, 8), &a, &b, &c), Ok(vec![-2.0, 5.5, -2.0, 16.0]));
        // Buffers too short for the call are an error, as in `gemm`, not an index out of bounds.
        assert_eq!(
            cpu_reference_general(&GemmOp::new(2, 2, 8), &a[..15], &b, &c),
            Err(Error::BufferTooSmall { operand: "A", needed: 16, len: 15 })
        );
        assert!(matches!(cpu_reference_general(&GemmOp::new(2, 2, 3), &a, &b, &c), Err(Error::InvalidShape(_))));
        // Nothing to compute: C as it was.
        assert_eq!(cpu_reference_general(&GemmOp::new(0, 2, 8), &a, &b, &c[..0]), Ok(vec![]));
    }

    #[test]
    fn compare_counts_poison_and_measures_error() {
        let r = [1.0, 2.0, 3.0, 4.0];
        let exact: Vec<bf16> = r.iter().map(|&x| bf16::from_f64(x)).collect();
        assert_eq!(compare(&exact, r), Comparison { rel_error: 0.0, non_finite: 0 });
        let mut bad = exact.clone();
        bad[2] = bf16::from_bits(POISON);
        let c = compare(&bad, r);
        assert_eq!(c.non_finite, 1);
        assert!(!c.passed());
        let mut off = exact;
        off[3] = bf16::from_f64(5.0);
        assert!((compare(&off, r).rel_error - (1.0f64 / 30.0).sqrt()).abs() < 1e-12);
        assert!(!compare(&off, r).passed());
        // Lengths that differ fail, whichever side is longer.
        let exact: Vec<bf16> = r.iter().map(|&x| bf16::from_f64(x)).collect();
        assert_eq!(compare(&exact[..3], r), Comparison { rel_error: 0.0, non_finite: 1 });
        assert_eq!(compare(&exact, r[..2].iter().copied()), Comparison { rel_error: 0.0, non_finite: 2 });
        assert!(!compare(&exact, std::iter::repeat(1.0)).passed(), "an endless reference ends");
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
