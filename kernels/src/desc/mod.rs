//! Descriptors the tensor cores read: `const fn` builders, one setter per bit field, checked
//! against the published layouts by the unit tests. Plain Rust, so the host tests them too.

pub mod tcgen05;
pub mod wgmma;

/// `desc` with bits `lo..lo + bits` replaced by `value` (truncated to the field).
pub(crate) const fn field(desc: u64, value: u64, lo: u32, bits: u32) -> u64 {
    let mask = ((1u64 << bits) - 1) << lo;
    (desc & !mask) | ((value << lo) & mask)
}
