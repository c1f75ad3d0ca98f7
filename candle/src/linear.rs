//! A drop-in for `candle_nn::Linear` whose product runs on hgemm.

use crate::matmul::matmul;
use candle_core::{Module, Tensor};

/// `y = x · Wᵀ + b` with candle_nn's convention: `weight` `[out, in]`, `bias` `[out]`, `x` `[.., in]`.
/// The weight is read in place as hgemm's column-major B (no transposed copy), and a batched `x`
/// whose rows are evenly spaced is one GEMM over all its rows. The bias is added by candle.
/// Everything [`crate::Matmul`] cannot take is an error (bf16 CUDA tensors only).
///
/// From an existing layer: `Linear::new(l.weight().clone(), l.bias().cloned())`.
#[derive(Clone, Debug)]
pub struct Linear {
    weight: Tensor,
    bias: Option<Tensor>,
}

impl Linear {
    /// A layer of `weight` `[out, in]` and an optional `bias` `[out]`.
    pub fn new(weight: Tensor, bias: Option<Tensor>) -> Linear {
        Linear { weight, bias }
    }

    /// The weight, `[out, in]`.
    pub fn weight(&self) -> &Tensor {
        &self.weight
    }

    /// The bias, `[out]`.
    pub fn bias(&self) -> Option<&Tensor> {
        self.bias.as_ref()
    }
}

impl Module for Linear {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let y = matmul(x, &self.weight.t()?)?;
        match &self.bias {
            Some(b) => y.broadcast_add(b),
            None => Ok(y),
        }
    }
}
