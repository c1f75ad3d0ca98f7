//! The matmul as a candle [`CustomOp2`].

use crate::error::MatmulError;
use crate::handle::gemm_for;
use crate::layout::{View, plan};
use candle_core::backend::BackendDevice;
use candle_core::{CpuStorage, CudaStorage, DType, Layout, Shape, Tensor};
use half::bf16;

/// `lhs · rhs` on hgemm, as candle's `Tensor::matmul` computes it: `lhs` `[.., M, K]` and `rhs`
/// `[.., K, N]`, bf16 on one CUDA device, with equal batch dimensions or a plain-matrix `rhs`
/// shared by every batch entry; the output is a new dense `[.., M, N]` tensor. Operands are read in
/// place wherever their rows or columns are contiguous (`w.t()`, narrowed views, a batch one
/// stride walks), on the device's own stream.
///
/// Anything else (another dtype or device, strides hgemm cannot read, a GPU without hgemm
/// kernels) is a [`MatmulError`] saying why, inside a candle error; nothing falls back to another
/// matmul. The op has no backward pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct Matmul;

/// `lhs · rhs` on hgemm ([`Matmul`]).
pub fn matmul(lhs: &Tensor, rhs: &Tensor) -> candle_core::Result<Tensor> {
    lhs.apply_op2_no_bwd(rhs, &Matmul)
}

fn view(l: &Layout) -> View<'_> {
    View { dims: l.dims(), strides: l.stride(), offset: l.start_offset() }
}

impl candle_core::CustomOp2 for Matmul {
    fn name(&self) -> &'static str {
        "hgemm-matmul"
    }

    fn cpu_fwd(
        &self,
        _: &CpuStorage,
        _: &Layout,
        _: &CpuStorage,
        _: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        Err(MatmulError::NotCuda { device: "the CPU".into() }.into())
    }

    fn cuda_fwd(
        &self,
        s1: &CudaStorage,
        l1: &Layout,
        s2: &CudaStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CudaStorage, Shape)> {
        for (operand, s) in [("lhs", s1), ("rhs", s2)] {
            let dtype = candle_core::backend::BackendStorage::dtype(s);
            if dtype != DType::BF16 {
                return Err(MatmulError::DType { operand, dtype }.into());
            }
        }
        if !s1.device.same_device(&s2.device) {
            return Err(MatmulError::Devices.into());
        }
        let plan = plan(view(l1), view(l2))?;
        let device = s1.device.clone();
        let out_len = plan.out_len();
        // SAFETY: hgemm writes every element (beta = 0) before anything reads the tensor. An
        // empty output gets one element, never read: the driver allocates no zero bytes.
        let mut out = unsafe { device.alloc::<bf16>(out_len.max(1)) }?;
        if out_len > 0 {
            let gemm = gemm_for(&device)?;
            let (a, b) = (s1.as_cuda_slice::<bf16>()?, s2.as_cuda_slice::<bf16>()?);
            // Past the end only for empty operands, whose offsets hgemm does not follow.
            let (a, b) = (a.slice(plan.lhs_offset.min(a.len())..), b.slice(plan.rhs_offset.min(b.len())..));
            gemm.gemm(&device.cuda_stream(), &plan.op, &a, &b, &mut out).map_err(MatmulError::from)?;
        }
        Ok((CudaStorage::wrap_cuda_slice(out, device), Shape::from(plan.out_dims)))
    }
}
