//! cuBLAS as the reference and the baseline.

use crate::{Error, Result, drv};
use cudarc::cublas::{CudaBlas, Gemm as _, GemmConfig, result as blas_result, sys as blas_sys};
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};
use half::bf16;
use hgemm::{GemmOp, Layout};
use std::sync::Arc;

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
    /// The same computation as [`Gemm::gemm`](hgemm::Gemm::gemm) with `op`, by `cublasGemmStridedBatchedEx` (f32
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
