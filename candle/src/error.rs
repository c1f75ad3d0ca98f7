//! Why a matmul cannot run on hgemm. Returned inside `candle_core::Error::Wrapped`, so that a
//! candle program sees a candle error whose message says what to change.

use std::fmt;

/// What hgemm cannot take, found before anything is enqueued.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum MatmulError {
    /// An operand on a device other than a CUDA GPU.
    NotCuda {
        /// The device candle names.
        device: String,
    },
    /// An operand of a type other than bf16.
    DType {
        /// "lhs" or "rhs".
        operand: &'static str,
        /// Its type.
        dtype: candle_core::DType,
    },
    /// The operands are on two different CUDA devices.
    Devices,
    /// An operand of fewer than two dimensions.
    Rank {
        /// Dimensions of the left operand.
        lhs: Vec<usize>,
        /// Dimensions of the right operand.
        rhs: Vec<usize>,
    },
    /// The left operand's columns and the right operand's rows differ.
    InnerDims {
        /// Dimensions of the left operand.
        lhs: Vec<usize>,
        /// Dimensions of the right operand.
        rhs: Vec<usize>,
    },
    /// Batch dimensions that differ (and neither side is a plain matrix).
    BatchDims {
        /// Dimensions of the left operand.
        lhs: Vec<usize>,
        /// Dimensions of the right operand.
        rhs: Vec<usize>,
    },
    /// A matrix with neither its rows nor its columns contiguous, or batch dimensions that no
    /// single stride walks.
    Strides {
        /// "lhs" or "rhs".
        operand: &'static str,
        /// Its dimensions.
        dims: Vec<usize>,
        /// Its strides, elements.
        strides: Vec<usize>,
    },
    /// An operand starting at an element offset that is not a multiple of 8 (16 bytes).
    Offset {
        /// "lhs" or "rhs".
        operand: &'static str,
        /// The offset, elements.
        offset: usize,
    },
    /// An operand broadcast over the batch that cannot be folded into one GEMM.
    Broadcast {
        /// Dimensions of the left operand.
        lhs: Vec<usize>,
        /// Dimensions of the right operand.
        rhs: Vec<usize>,
    },
    /// hgemm refused the call or the driver failed.
    Hgemm(hgemm::Error),
}

impl fmt::Display for MatmulError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hgemm matmul: ")?;
        match self {
            MatmulError::NotCuda { device } => {
                write!(f, "operands on {device}: hgemm runs on CUDA GPUs only (Hopper, Blackwell)")
            }
            MatmulError::DType { operand, dtype } => {
                write!(f, "{operand} is {dtype:?}: hgemm multiplies bf16 only (convert with to_dtype(DType::BF16))")
            }
            MatmulError::Devices => write!(f, "lhs and rhs are on different CUDA devices"),
            MatmulError::Rank { lhs, rhs } => {
                write!(f, "lhs {lhs:?} and rhs {rhs:?}: both need at least two dimensions")
            }
            MatmulError::InnerDims { lhs, rhs } => {
                write!(f, "lhs {lhs:?} and rhs {rhs:?}: the last dimension of lhs must equal the second last of rhs")
            }
            MatmulError::BatchDims { lhs, rhs } => write!(
                f,
                "lhs {lhs:?} and rhs {rhs:?}: batch dimensions must be equal, or absent from one side (broadcast_as makes them equal)"
            ),
            MatmulError::Strides { operand, dims, strides } => write!(
                f,
                "{operand} {dims:?} with strides {strides:?}: hgemm reads a matrix whose rows or columns are contiguous, in a batch one stride walks (call contiguous() first)"
            ),
            MatmulError::Offset { operand, offset } => write!(
                f,
                "{operand} starts {offset} elements into its storage: TMA needs 16-byte aligned operands, an offset that is a multiple of 8 (call contiguous() first)"
            ),
            MatmulError::Broadcast { lhs, rhs } => write!(
                f,
                "lhs {lhs:?} and rhs {rhs:?}: an operand broadcast over the batch is taken only as a right operand, with a left one whose batch entries are evenly spaced row-major rows (folded into one GEMM); call contiguous() on the broadcast operand or lhs"
            ),
            MatmulError::Hgemm(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for MatmulError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MatmulError::Hgemm(e) => Some(e),
            _ => None,
        }
    }
}

impl From<hgemm::Error> for MatmulError {
    fn from(e: hgemm::Error) -> MatmulError {
        MatmulError::Hgemm(e)
    }
}

impl From<MatmulError> for candle_core::Error {
    fn from(e: MatmulError) -> candle_core::Error {
        candle_core::Error::wrap(e)
    }
}
