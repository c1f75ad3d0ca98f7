//! hgemm's BF16 GEMM for [candle](https://github.com/huggingface/candle) models on Hopper and
//! Blackwell GPUs.
//!
//! - [`matmul`] / [`Matmul`]: `Tensor::matmul` as a candle `CustomOp2`, for bf16 CUDA tensors
//!   of two or more dimensions, with transposed and strided operands read in place.
//! - [`Linear`]: candle_nn's `Linear` (weight `[out, in]`, optional bias) on hgemm.
//!
//! Both run on the candle device's own CUDA stream, through one hgemm handle per device
//! ([`gemm_for`]), and return a candle error that says why where hgemm cannot take a call
//! ([`MatmulError`]); nothing falls back to candle's matmul.
//!
//! ```no_run
//! use candle_core::{DType, Device, Module, Tensor};
//! use hgemm_candle::Linear;
//!
//! # fn main() -> candle_core::Result<()> {
//! let dev = Device::new_cuda(0)?;
//! let w = Tensor::randn(0f32, 0.02, (14336, 4096), &dev)?.to_dtype(DType::BF16)?;
//! let x = Tensor::randn(0f32, 1.0, (512, 4096), &dev)?.to_dtype(DType::BF16)?;
//! let y = Linear::new(w, None).forward(&x)?; // [512, 14336]
//! # Ok(())
//! # }
//! ```
//!
//! Building needs what candle-core's `cuda` feature needs (nvcc, and the CUDA libraries to link
//! against); the repository's scripts/candle-tools.sh installs both without a CUDA toolkit.
#![warn(missing_docs)]

mod error;
mod handle;
pub mod layout;
mod linear;
mod matmul;

pub use error::MatmulError;
pub use handle::gemm_for;
pub use linear::Linear;
pub use matmul::{Matmul, matmul};
