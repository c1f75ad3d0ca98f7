//! The harness's error: the library's, or cuBLAS's.

use std::fmt;

/// What went wrong in a check or a benchmark.
#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// hgemm refused the call or a CUDA driver call failed ([`hgemm::Error`]).
    Hgemm(hgemm::Error),
    /// cuBLAS failed (the reference and the baseline).
    Cublas(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Hgemm(e) => e.fmt(f),
            Error::Cublas(e) => write!(f, "cuBLAS failed: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Hgemm(e) => Some(e),
            Error::Cublas(_) => None,
        }
    }
}

impl From<hgemm::Error> for Error {
    fn from(e: hgemm::Error) -> Error {
        Error::Hgemm(e)
    }
}

/// The harness's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A failed driver call as the library reports one ([`hgemm::Error::Driver`]).
pub(crate) fn drv(call: &'static str) -> impl Fn(cudarc::driver::DriverError) -> Error {
    move |e| Error::Hgemm(hgemm::Error::Driver { call, code: format!("{e:?}") })
}
