//! The handle's calls with a fused bias: the bias's element types and the entry points that take
//! a bias buffer ([`GemmOp::bias`]); calls without a bias go through [`Gemm::gemm`].

use super::{Gemm, Prepared};
use crate::error::Result;
use crate::op::GemmOp;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};
use half::bf16;
use hgemm_kernels::fused::BiasType;
use hgemm_kernels::spec::KernelSpec;

/// The element types a bias vector may have ([`Gemm::gemm_bias`]): bf16 and f32.
pub trait BiasElement: cudarc::driver::DeviceRepr + sealed::Sealed {
    /// The type as the kernels name it.
    const TYPE: BiasType;
}

impl BiasElement for bf16 {
    const TYPE: BiasType = BiasType::Bf16;
}

impl BiasElement for f32 {
    const TYPE: BiasType = BiasType::F32;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::bf16 {}
    impl Sealed for f32 {}
}

impl Gemm {
    /// [`Gemm::gemm`] for a call with a bias (`op` declares its type, [`GemmOp::bias`]):
    /// `C = act(alpha·A·B + bias) + beta·C` with `bias` over the GEMM's N columns (for a
    /// [gated](GemmOp::gated) call all 2·I interleaved ones), and, with a
    /// [`bias_stride`](GemmOp::bias_stride), one vector per batch entry. The bias's element type
    /// must be the declared one and its buffer long enough ([`Error::Bias`](crate::Error::Bias),
    /// [`Error::BufferTooSmall`](crate::Error::BufferTooSmall)), 16-byte aligned ([`Error::Misaligned`](crate::Error::Misaligned)).
    pub fn gemm_bias<A, B, E, V, C>(
        &self,
        stream: &CudaStream,
        op: &GemmOp,
        a: &A,
        b: &B,
        bias: &V,
        c: &mut C,
    ) -> Result<()>
    where
        A: DevicePtr<bf16>,
        B: DevicePtr<bf16>,
        E: BiasElement,
        V: DevicePtr<E>,
        C: DevicePtrMut<bf16>,
    {
        self.run(None, stream, op, a, b, Some(bias), c)
    }

    /// [`Gemm::gemm_bias`] with a pinned kernel ([`Gemm::gemm_with`]).
    #[allow(clippy::too_many_arguments)]
    pub fn gemm_bias_with<A, B, E, V, C>(
        &self,
        kernel: &KernelSpec,
        stream: &CudaStream,
        op: &GemmOp,
        a: &A,
        b: &B,
        bias: &V,
        c: &mut C,
    ) -> Result<()>
    where
        A: DevicePtr<bf16>,
        B: DevicePtr<bf16>,
        E: BiasElement,
        V: DevicePtr<E>,
        C: DevicePtrMut<bf16>,
    {
        self.run(Some(kernel), stream, op, a, b, Some(bias), c)
    }

    /// [`Gemm::prepare`] for a call with a bias ([`Gemm::gemm_bias`]), or without (`None`).
    #[allow(clippy::too_many_arguments)]
    pub fn prepare_bias<A, B, E, V, C>(
        &self,
        kernel: Option<&KernelSpec>,
        stream: &CudaStream,
        op: &GemmOp,
        a: &A,
        b: &B,
        bias: Option<&V>,
        c: &mut C,
    ) -> Result<Prepared>
    where
        A: DevicePtr<bf16>,
        B: DevicePtr<bf16>,
        E: BiasElement,
        V: DevicePtr<E>,
        C: DevicePtrMut<bf16>,
    {
        if !op.validate_fused(a.len(), b.len(), bias.map(|v| (E::TYPE, v.len())), c.len())? {
            return Ok(Prepared::Nothing);
        }
        let (pa, _ga) = a.device_ptr(stream);
        let (pb, _gb) = b.device_ptr(stream);
        let bias = bias.map(|v| v.device_ptr(stream));
        let (pc, _gc) = c.device_ptr_mut(stream);
        self.prepare_raw(kernel, op, pa, pb, bias.as_ref().map(|(p, _)| (*p, E::TYPE)), pc)
    }
}
