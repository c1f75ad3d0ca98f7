//! cuBLAS as the reference and the baseline.

use crate::{Error, Result, drv};
use cudarc::cublas::{CudaBlas, Gemm as _, GemmConfig, result as blas_result, sys as blas_sys};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
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

    /// Ask cuBLAS to run its kernels on `sms` SMs (`cublasSetSmCountTarget`; `None`: every SM,
    /// its default), as hgemm's SM budget does, for comparisons beside other work.
    pub fn set_sm_count_target(&self, sms: Option<u32>) -> Result<()> {
        let target =
            i32::try_from(sms.unwrap_or(0)).map_err(|_| Error::Cublas(format!("SM count target {sms:?} past i32")))?;
        self.bind()?;
        // SAFETY: the handle is this wrapper's, alive as long as it is.
        match unsafe { blas_sys::cublasSetSmCountTarget(*self.blas.handle(), target) } {
            blas_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS => Ok(()),
            e => Err(Error::Cublas(format!("cublasSetSmCountTarget({target}): {e:?}"))),
        }
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
    /// `op`'s fused epilogue (bias, activation, gating) is not cuBLAS's: refused here, see
    /// [`Cublas::products`].
    pub fn gemm<A, B, C>(&self, op: &GemmOp, a: &A, b: &B, c: &mut C) -> Result<()>
    where
        A: DevicePtr<bf16>,
        B: DevicePtr<bf16>,
        C: DevicePtrMut<bf16>,
    {
        if op.fused() {
            return Err(Error::Cublas(format!("cuBLAS computes no fused epilogue ({:?})", op.epilogue())));
        }
        self.bind()?;
        let stream = &self.stream;
        let (pa, _ga) = a.device_ptr(stream);
        let (pb, _gb) = b.device_ptr(stream);
        let (pc, _gc) = c.device_ptr_mut(stream);
        self.gemm_ex(op, pa, pb, pc, blas_sys::cudaDataType_t::CUDA_R_16BF)
    }

    /// `alpha·A·B` of `op`'s GEMM (all N columns of a gated call, no bias, activation or beta)
    /// into `products` in f32, dense M×N row-major per batch entry, entries M·N apart: the
    /// accumulators a fused epilogue starts from, unrounded, for references of large calls.
    pub fn products<A, B>(&self, op: &GemmOp, a: &A, b: &B, products: &mut CudaSlice<f32>) -> Result<()>
    where
        A: DevicePtr<bf16>,
        B: DevicePtr<bf16>,
    {
        let (m, n) = (op.m, op.n);
        let dense = GemmOp::new(m, n, op.k).a(op.a_layout, op.lda).b(op.b_layout, op.ldb).alpha(op.alpha).batched(
            op.batch,
            op.stride_a,
            op.stride_b,
            m * n,
        );
        if products.len() < m * n * op.batch {
            return Err(hgemm::Error::BufferTooSmall {
                operand: "products",
                needed: m * n * op.batch,
                len: products.len(),
            }
            .into());
        }
        self.bind()?;
        let stream = &self.stream;
        let (pa, _ga) = a.device_ptr(stream);
        let (pb, _gb) = b.device_ptr(stream);
        let (pc, _gc) = products.device_ptr_mut(stream);
        self.gemm_ex(&dense, pa, pb, pc, blas_sys::cudaDataType_t::CUDA_R_32F)
    }

    /// `cublasGemmStridedBatchedEx` for `op` (its epilogue aside) on device addresses, C of
    /// element type `c_type`.
    fn gemm_ex(&self, op: &GemmOp, pa: u64, pb: u64, pc: u64, c_type: blas_sys::cudaDataType_t) -> Result<()> {
        use blas_sys::cublasOperation_t::{CUBLAS_OP_N as N, CUBLAS_OP_T as T};
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
                c_type,
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

/// cuBLASLt with its bias + activation epilogues (`CUBLASLT_EPILOGUE_RELU_BIAS`,
/// `GELU_BIAS`, GELU in its tanh form), the baseline a fused GEMM + bias + activation is
/// measured against. Its bias has the operands' type, bf16.
pub struct CublasLt {
    lt: cudarc::cublaslt::CudaBlasLT,
    stream: Arc<CudaStream>,
}

impl CublasLt {
    /// A cuBLASLt handle (and its workspace) working on `stream`.
    pub fn new(stream: &Arc<CudaStream>) -> Result<CublasLt> {
        stream.context().bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
        Ok(CublasLt {
            lt: cudarc::cublaslt::CudaBlasLT::new(stream.clone()).map_err(|e| Error::Cublas(format!("{e:?}")))?,
            stream: stream.clone(),
        })
    }

    /// Y (M×N, row-major, dense) = act(A·Bᵀ + bias) for A (M×K) and B (N×K) row-major, dense;
    /// `relu` picks ReLU, else GELU (tanh form). In cuBLASLt's column-major terms that is
    /// Yᵀ (N×M) = Bᵀ·A with B transposed, and the bias runs over Yᵀ's rows, the N columns of Y.
    #[allow(clippy::too_many_arguments)]
    pub fn matmul_bias_act(
        &self,
        a: &CudaSlice<bf16>,
        b: &CudaSlice<bf16>,
        bias: &CudaSlice<bf16>,
        y: &mut CudaSlice<bf16>,
        (m, n, k): (usize, usize, usize),
        relu: bool,
    ) -> Result<()> {
        use cudarc::cublaslt::{Activation, Matmul, MatmulConfig};
        if a.len() < m * k || b.len() < n * k || y.len() < m * n || bias.len() < n {
            return Err(Error::Cublas(format!("cuBLASLt {m}x{n}x{k}: buffers too short")));
        }
        let cfg = MatmulConfig {
            transa: true,
            transb: false,
            transc: false,
            m: n as u64,
            n: m as u64,
            k: k as u64,
            alpha: 1.0,
            lda: k as i64,
            ldb: k as i64,
            beta: 0.0,
            ldc: n as i64,
            stride_a: None,
            stride_b: None,
            stride_c: None,
            stride_bias: None,
            batch_size: None,
        };
        let act = if relu { Activation::Relu } else { Activation::Gelu };
        self.stream.context().bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
        // SAFETY: the buffers hold M×K, N×K, M×N and N elements, checked above.
        unsafe { self.lt.matmul(cfg, b, a, y, Some(bias), Some(&act)) }.map_err(|e| Error::Cublas(format!("{e:?}")))
    }
}
