//! The one error type of the crate.

use std::fmt;

/// Everything that can go wrong, found before anything reaches the GPU wherever it can be.
/// Non-exhaustive: a later version may name a new kind of failure without breaking a `match`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// No CUDA driver library (libcuda) could be loaded on this machine.
    NoDriver,
    /// A CUDA driver call failed.
    Driver {
        /// The driver function.
        call: &'static str,
        /// The `CUresult` it returned, with context.
        code: String,
    },
    /// The device has no kernel family here (hgemm has kernels for compute capability 9.0 and 10.x).
    UnsupportedDevice {
        /// The device's name.
        name: String,
        /// Compute capability, major.
        major: u32,
        /// Compute capability, minor.
        minor: u32,
    },
    /// A dimension or stride the kernels cannot take, with the reason.
    InvalidShape(String),
    /// A buffer shorter than the matrix it is said to hold.
    BufferTooSmall {
        /// "A", "B", "C" or "bias".
        operand: &'static str,
        /// Elements the call needs.
        needed: usize,
        /// Elements the buffer holds.
        len: usize,
    },
    /// The call's bias and the buffer passed for it disagree: the op declares a bias
    /// ([`GemmOp::bias`](crate::GemmOp::bias)) and no buffer was passed, a buffer was passed for
    /// an op without one, or the buffer's element type is not the declared one.
    Bias {
        /// The bias type the op declares.
        op: Option<hgemm_kernels::fused::BiasType>,
        /// The element type of the buffer passed.
        buffer: Option<hgemm_kernels::fused::BiasType>,
    },
    /// A leading dimension smaller than the row it must span.
    LeadingDimension {
        /// "A", "B" or "C".
        operand: &'static str,
        /// The leading dimension given.
        ld: usize,
        /// The smallest it may be.
        min: usize,
    },
    /// A device address not aligned as TMA requires.
    Misaligned {
        /// "A", "B" or "C".
        operand: &'static str,
        /// The device address.
        address: u64,
        /// The alignment required, bytes.
        align: u64,
    },
    /// The kernel needs more shared memory per block than the device grants.
    SharedMemory {
        /// The kernel.
        kernel: &'static str,
        /// Bytes it needs.
        needed: u32,
        /// Bytes the device grants a block.
        available: u32,
    },
    /// No kernel of that name (or version) exists for this device's family.
    UnknownKernel(String),
    /// The pinned kernel cannot compute this call (layout, alpha/beta, batch…), with the reason.
    Unsupported {
        /// The kernel ("auto" when none fits).
        kernel: &'static str,
        /// Why not.
        reason: String,
    },
    /// A Blackwell entry lacks what the call needs (Hopper's v7 entries have it), named by
    /// [`Lack`]: not a shortcoming of the call, which a Hopper GPU computes.
    Lacks {
        /// The kernel ("auto" when none fits).
        kernel: &'static str,
        /// What it lacks.
        lack: Lack,
    },
    /// An SM budget ([`GemmOp::max_sms`](crate::GemmOp::max_sms)) the kernel cannot keep: 0, or
    /// fewer SMs than its cluster, or an entry that launches one CTA per tile, whose grid the
    /// budget cannot bound.
    SmBudget {
        /// The kernel ("auto" when none keeps it).
        kernel: &'static str,
        /// The budget, SMs.
        max_sms: u32,
        /// Why not.
        reason: String,
    },
    /// A tuning table that does not fit this handle or does not parse, or tuning that found two
    /// kernels disagreeing, with the reason.
    Tuning(String),
    /// A model for `auto`'s price ([`Model`](crate::choose::Model)) this build cannot weigh its
    /// entries with: a tile shape without a rate, or a quantity out of range.
    InvalidModel(String),
    /// A call that stream capture (CUDA graphs) does not allow, with the reason.
    Graph(String),
    /// A barrier wait timed out in a kernel built with the `hang-guard` feature.
    Hang {
        /// The kernel.
        kernel: &'static str,
        /// Which barrier, phase, block and thread gave up.
        report: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoDriver => {
                write!(f, "no CUDA driver found (libcuda could not be loaded): this machine has no usable NVIDIA GPU")
            }
            Error::Driver { call, code } => write!(f, "CUDA driver call {call} failed: {code}"),
            Error::UnsupportedDevice { name, major, minor } => write!(
                f,
                "{name} (compute capability {major}.{minor}) is not supported: hgemm has kernels for 9.0 (H100, H200) and 10.x (B200, GB300)"
            ),
            Error::InvalidShape(why) => write!(f, "invalid shape: {why}"),
            Error::BufferTooSmall { operand, needed, len } => {
                write!(f, "{operand} holds {len} elements but the shape needs {needed}")
            }
            Error::Bias { op, buffer } => match (op, buffer) {
                (Some(ty), None) => {
                    write!(f, "the call declares a {ty:?} bias but no bias buffer was passed (use gemm_bias)")
                }
                (None, Some(ty)) => {
                    write!(f, "a {ty:?} bias buffer was passed for a call that declares no bias (GemmOp::bias)")
                }
                (Some(op), Some(buffer)) => {
                    write!(f, "the call declares a {op:?} bias but the bias buffer holds {buffer:?}")
                }
                (None, None) => write!(f, "bias: no mismatch"),
            },
            Error::LeadingDimension { operand, ld, min } => {
                write!(f, "leading dimension of {operand} is {ld}, smaller than the {min} elements of a row")
            }
            Error::Misaligned { operand, address, align } => {
                write!(f, "{operand} at {address:#x} is not {align}-byte aligned")
            }
            Error::SharedMemory { kernel, needed, available } => {
                write!(f, "{kernel} needs {needed} bytes of shared memory per block, the device grants {available}")
            }
            Error::UnknownKernel(k) => write!(f, "no kernel {k} for this device"),
            Error::Unsupported { kernel, reason } => write!(f, "{kernel} cannot compute this call: {reason}"),
            Error::Lacks { kernel, lack } => write!(f, "{kernel} cannot compute this call: it lacks {lack}"),
            Error::SmBudget { kernel, max_sms, reason } => {
                write!(f, "{kernel} cannot run within a budget of {max_sms} SMs: {reason}")
            }
            Error::Tuning(why) => write!(f, "tuning: {why}"),
            Error::InvalidModel(why) => write!(f, "model for auto's price: {why}"),
            Error::Graph(why) => write!(f, "CUDA graph capture: {why}"),
            Error::Hang { kernel, report } => write!(f, "{kernel} hung: {report}"),
        }
    }
}

impl std::error::Error for Error {}

/// What Blackwell's entries do not have, where Hopper's v7 entries do ([`Error::Lacks`]).
/// Non-exhaustive: each goes once the entries have it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lack {
    /// A fused epilogue: bias, activation or gated units ([`GemmOp::bias`](crate::GemmOp::bias),
    /// [`GemmOp::activation`](crate::GemmOp::activation), [`GemmOp::gated`](crate::GemmOp::gated)):
    /// Blackwell's ladder entries (its library entries fuse them).
    FusedEpilogue,
}

impl fmt::Display for Lack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lack::FusedEpilogue => {
                write!(f, "a fused epilogue (bias, activation or gated units), which Blackwell's ladder does not have")
            }
        }
    }
}

impl Error {
    pub(crate) fn driver(call: &'static str, e: cudarc::driver::DriverError) -> Error {
        Error::Driver { call, code: format!("{e:?}") }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
