//! One GPU's part of the tensor-parallel MLP: its weight shards, buffers, streams, and the GEMMs
//! of one micro-batch on its compute stream, by hgemm or by cuBLAS.

use crate::shard::Split;
use cudarc::cublas::{CudaBlas, Gemm as _, GemmConfig, sys as blas_sys};
use cudarc::driver::{CudaContext, CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use half::bf16;
use hgemm::{Activation, Gemm, GemmOp, Layout};
use std::ops::Range;
use std::sync::Arc;

pub type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Which library computes the GEMMs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// hgemm: gate and up as one gated GEMM with SwiGLU fused, then down.
    Hgemm,
    /// cuBLAS: gate and up as one GEMM into a 2·I/ranks-wide buffer, SwiGLU by a separate
    /// kernel (`Gemm::glu`), then down.
    Cublas,
}

/// The whole MLP's weights on the host, bf16, as `nn.Linear` stores them.
pub struct Weights {
    /// I×d.
    pub gate: Vec<bf16>,
    /// I×d.
    pub up: Vec<bf16>,
    /// d×I.
    pub down: Vec<bf16>,
    /// Gate and up interleaved in blocks of 8 (`hgemm::interleave_gate_up`), 2·I×d: hgemm's
    /// gated B, whose rows each rank takes its block of.
    pub interleaved: Vec<bf16>,
}

impl Weights {
    /// The weights, with gate and up interleaved once.
    pub fn new(gate: Vec<bf16>, up: Vec<bf16>, down: Vec<bf16>, split: Split) -> Res<Weights> {
        let interleaved = hgemm::interleave_gate_up(&gate, &up, Layout::ColMajor, split.i, split.d)?;
        Ok(Weights { gate, up, down, interleaved })
    }
}

/// One rank: a GPU, its shards and its buffers.
pub struct Rank {
    pub gemm: Gemm,
    pub compute: Arc<CudaStream>,
    blas: CudaBlas,
    /// Gate and up interleaved in blocks of 8 (hgemm's gated B), 2·I/ranks rows of d.
    gate_up_interleaved: CudaSlice<bf16>,
    /// Gate rows then up rows (cuBLAS's B), 2·I/ranks rows of d.
    gate_up_stacked: CudaSlice<bf16>,
    /// W_down's columns of this rank, d rows of I/ranks.
    down: CudaSlice<bf16>,
    /// x, one buffer per micro-batch (separate allocations, so that cudarc's tracking of each
    /// buffer's last use orders nothing between micro-batches).
    x: Vec<CudaSlice<bf16>>,
    /// SwiGLU's output, the largest micro-batch's rows of I/ranks.
    h: CudaSlice<bf16>,
    /// cuBLAS's gate|up pre-activations, the largest micro-batch's rows of 2·I/ranks.
    wide: CudaSlice<bf16>,
    /// This rank's partial y per micro-batch, all-reduced in place into y.
    pub y: Vec<CudaSlice<bf16>>,
    /// Recorded on the compute stream when micro-batch b's partial y is written.
    pub computed: Vec<CudaEvent>,
    /// Recorded on the communication stream when micro-batch b's all-reduce is done.
    pub reduced: Vec<CudaEvent>,
    split: Split,
}

impl Rank {
    /// Rank `r` of `split` on `ctx`: the shards of `w` uploaded, x's micro-batches `batches` of
    /// `x` (tokens×d, row-major).
    pub fn new(
        ctx: Arc<CudaContext>,
        split: Split,
        r: usize,
        w: &Weights,
        x: &[bf16],
        batches: &[Range<usize>],
    ) -> Res<Rank> {
        let gemm = Gemm::new(ctx.clone())?;
        let compute = ctx.new_stream()?;
        let blas = CudaBlas::new(compute.clone())?;
        let (d, f) = (split.d, split.i_per_rank());
        let (gate, up) = (split.rows_of(&w.gate, r), split.rows_of(&w.up, r));
        let interleaved = split.interleaved_rows(&w.interleaved, r);
        let stacked: Vec<bf16> = gate.iter().chain(up).copied().collect();
        let most = batches.iter().map(|b| b.len()).max().unwrap_or(0);
        let event = || ctx.new_event(None);
        Ok(Rank {
            gate_up_interleaved: compute.clone_htod(interleaved)?,
            gate_up_stacked: compute.clone_htod(&stacked)?,
            down: compute.clone_htod(&split.down_columns(&w.down, r))?,
            x: batches.iter().map(|b| compute.clone_htod(&x[b.start * d..b.end * d])).collect::<Result<_, _>>()?,
            h: compute.alloc_zeros(most * f)?,
            wide: compute.alloc_zeros(most * 2 * f)?,
            y: batches.iter().map(|b| compute.alloc_zeros(b.len() * d)).collect::<Result<_, _>>()?,
            computed: batches.iter().map(|_| event()).collect::<Result<_, _>>()?,
            reduced: batches.iter().map(|_| event()).collect::<Result<_, _>>()?,
            gemm,
            compute,
            blas,
            split,
        })
    }

    /// Hold hgemm to `sms` SMs and ask cuBLAS for the same (`None`: every SM).
    pub fn set_max_sms(&self, sms: Option<u32>) -> Res<()> {
        self.gemm.set_max_sms(sms)?;
        let target = sms.unwrap_or(0) as i32;
        // SAFETY: the handle is this rank's, alive as long as it is.
        let status = unsafe { blas_sys::cublasSetSmCountTarget(*self.blas.handle(), target) };
        if status != blas_sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
            return Err(format!("cublasSetSmCountTarget({target}): {status:?}").into());
        }
        Ok(())
    }

    /// Enqueue micro-batch `b`'s GEMMs on the compute stream, writing this rank's partial y[b],
    /// after the all-reduce that last read y[b] (an earlier pass's) is done.
    pub fn compute(&mut self, backend: Backend, b: usize) -> Res<()> {
        let (d, f) = (self.split.d, self.split.i_per_rank());
        let rows = self.x[b].len() / d;
        self.compute.wait(&self.reduced[b])?;
        match backend {
            Backend::Hgemm => {
                let gate_up = GemmOp::new(rows, 2 * f, d).activation(Activation::Silu).gated();
                self.gemm.gemm(&self.compute, &gate_up, &self.x[b], &self.gate_up_interleaved, &mut self.h)?;
                let down = GemmOp::new(rows, d, f);
                self.gemm.gemm(&self.compute, &down, &self.h, &self.down, &mut self.y[b])?;
            }
            Backend::Cublas => {
                matmul_t(&self.blas, &self.x[b], &self.gate_up_stacked, &mut self.wide, (rows, 2 * f, d))?;
                self.gemm.glu(&self.compute, &self.wide, rows, f, 2 * f, &mut self.h, f, Activation::Silu)?;
                matmul_t(&self.blas, &self.h, &self.down, &mut self.y[b], (rows, d, f))?;
            }
        }
        self.computed[b].record(&self.compute)?;
        Ok(())
    }
}

/// C (M×N, row-major) = A (M×K, row-major) · Bᵀ, B N×K row-major, by cuBLAS: in its column-major
/// terms Cᵀ = op(B)·A with B transposed.
fn matmul_t<A, B, C>(blas: &CudaBlas, a: &A, b: &B, c: &mut C, (m, n, k): (usize, usize, usize)) -> Res<()>
where
    A: DevicePtr<bf16>,
    B: DevicePtr<bf16>,
    C: DevicePtrMut<bf16>,
{
    if a.len() < m * k || b.len() < n * k || c.len() < m * n {
        return Err(format!("cuBLAS {m}x{n}x{k}: buffers too short").into());
    }
    let int = |v: usize| i32::try_from(v).map_err(|_| format!("{v} past cuBLAS's 32-bit sizes"));
    let cfg = GemmConfig {
        transa: blas_sys::cublasOperation_t::CUBLAS_OP_T,
        transb: blas_sys::cublasOperation_t::CUBLAS_OP_N,
        m: int(n)?,
        n: int(m)?,
        k: int(k)?,
        alpha: bf16::ONE,
        lda: int(k)?,
        ldb: int(k)?,
        beta: bf16::ZERO,
        ldc: int(n)?,
    };
    // SAFETY: the buffers hold M×K, N×K and M×N elements, checked above.
    unsafe { blas.gemm(cfg, b, a, c) }?;
    Ok(())
}
