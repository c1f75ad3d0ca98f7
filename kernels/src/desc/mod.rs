//! Descriptors the tensor cores read: `const fn` builders, one setter per bit field, checked
//! against the published layouts by the unit tests. Plain Rust, so the host tests them too.

pub mod tcgen05;
pub mod wgmma;
