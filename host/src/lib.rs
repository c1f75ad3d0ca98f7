//! hgemm: BF16 GEMM on NVIDIA Hopper and Blackwell tensor cores, with kernels written in Rust.
pub mod device;
pub mod error;
pub mod gemm;
pub mod hang;
pub mod launch;
pub mod op;
pub mod ptx;
pub mod tensor_map;
pub mod testing;

pub use device::DeviceInfo;
pub use error::{Error, Result};
pub use gemm::Gemm;
pub use op::{GemmOp, Layout};
pub use hgemm_kernels::ladder_of;
pub use hgemm_kernels::spec::{Family, KernelSpec};
