//! The wgmma shared-memory matrix descriptor (sm_90a).
//!
//! Layout from the PTX ISA, "Asynchronous Warpgroup Level Matrix Shared Memory Layout — Matrix
//! Descriptor Format" (§9.7.15.5.1):
//!
//! | bits  | field                                   |
//! |-------|-----------------------------------------|
//! | 0–13  | start address, bytes >> 4               |
//! | 16–29 | leading-dimension byte offset >> 4      |
//! | 32–45 | stride-dimension byte offset >> 4       |
//! | 49–51 | matrix base offset                      |
//! | 62–63 | swizzle: 0 none, 1 128B, 2 64B, 3 32B  |
//!
//! For a K-major operand, "leading" is the step between 8×16-byte core matrices along K and
//! "stride" the step between 8-row groups along M or N. With the 128-byte swizzle the 8 rows of
//! 128 bytes form one 1024-byte atom: the stride is 1024 and the leading offset is unused.
//! For an MN-major swizzled operand (§9.7.15.5.1.2.1) rows are K and the 128 bytes of a row hold 64
//! consecutive M or N elements: "leading" is the step between such 64-element blocks along M or
//! N, "stride" the step between 8-row groups along K.

/// The swizzle named in bits 62–63; it must match the TMA box that filled the tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swizzle {
    None = 0,
    B128 = 1,
    B64 = 2,
    B32 = 3,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmemDesc(pub u64);

use super::field;

impl SmemDesc {
    pub const fn new() -> Self {
        SmemDesc(0)
    }

    /// Bits 0–13: the tile's shared-memory address (16-byte aligned), >> 4.
    pub const fn start_address(self, addr: u32) -> Self {
        SmemDesc(field(self.0, (addr >> 4) as u64, 0, 14))
    }

    /// Bits 16–29: byte distance between core matrices adjacent along K (K-major), >> 4.
    pub const fn leading_byte_offset(self, bytes: u32) -> Self {
        SmemDesc(field(self.0, (bytes >> 4) as u64, 16, 14))
    }

    /// Bits 32–45: byte distance between 8-row groups along M or N, >> 4.
    pub const fn stride_byte_offset(self, bytes: u32) -> Self {
        SmemDesc(field(self.0, (bytes >> 4) as u64, 32, 14))
    }

    /// Bits 49–51: base offset, non-zero only for swizzled tiles not aligned to their pattern.
    pub const fn base_offset(self, offset: u32) -> Self {
        SmemDesc(field(self.0, offset as u64, 49, 3))
    }

    /// Bits 62–63: the swizzle mode.
    pub const fn swizzle(self, s: Swizzle) -> Self {
        SmemDesc(field(self.0, s as u64, 62, 2))
    }

    /// A K-major tile written by non-swizzled TMA boxes 8 elements (16 bytes) wide: row `r` of
    /// K-chunk `c` sits at `c * chunk_bytes + 16 * r`.
    pub const fn k_major_interleaved(addr: u32, chunk_bytes: u32) -> Self {
        SmemDesc::new()
            .start_address(addr)
            .leading_byte_offset(chunk_bytes)
            .stride_byte_offset(128)
            .swizzle(Swizzle::None)
    }

    /// A K-major tile of 128-byte rows (64 bf16) with the 128-byte swizzle, 1024-byte aligned.
    pub const fn k_major_128b(addr: u32) -> Self {
        SmemDesc::new().start_address(addr).leading_byte_offset(16).stride_byte_offset(1024).swizzle(Swizzle::B128)
    }

    /// An MN-major tile of 128-byte rows (64 bf16 along M or N, one row per K index) with the
    /// 128-byte swizzle, 1024-byte aligned, whose 64-element blocks along M or N are
    /// `block_bytes` apart. A k16 step is two 8-row atoms: +2048 bytes.
    pub const fn mn_major_128b(addr: u32, block_bytes: u32) -> Self {
        SmemDesc::new()
            .start_address(addr)
            .leading_byte_offset(block_bytes)
            .stride_byte_offset(1024)
            .swizzle(Swizzle::B128)
    }

    /// The same descriptor `bytes` further on. Inside a 128-byte swizzle atom, a K step of 16
    /// bf16 is +32 bytes: the hardware applies the swizzle to the address it computes.
    #[inline(always)]
    pub const fn advance(self, bytes: u32) -> Self {
        SmemDesc(self.0 + (bytes >> 4) as u64)
    }
}

impl Default for SmemDesc {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_land_on_their_bits() {
        let d = SmemDesc::new()
            .start_address(0x1_2340)
            .leading_byte_offset(2048)
            .stride_byte_offset(128)
            .base_offset(5)
            .swizzle(Swizzle::B32);
        assert_eq!(d.0 & 0x3fff, 0x1234);
        assert_eq!((d.0 >> 16) & 0x3fff, 128);
        assert_eq!((d.0 >> 32) & 0x3fff, 8);
        assert_eq!((d.0 >> 49) & 0x7, 5);
        assert_eq!(d.0 >> 62, 3);
        // Setters replace, they do not OR into, an earlier value.
        assert_eq!(d.swizzle(Swizzle::None).0 >> 62, 0);
        assert_eq!(d.start_address(0).0 & 0x3fff, 0);
    }

    #[test]
    fn k_major_128b_matches_the_canonical_encoding() {
        // CUTLASS's GmmaDescriptor for a 128B-swizzled K-major bf16 tile at 0x400: start 0x40,
        // LBO 1 (unused), SBO 64 (1024 bytes), layout 1 in bits 62–63.
        let d = SmemDesc::k_major_128b(0x400);
        assert_eq!(d.0, (1u64 << 62) | (64u64 << 32) | (1u64 << 16) | 0x40);
        // K steps of 16 elements: +32 bytes each, 4 of them per 64-wide swizzle atom.
        assert_eq!(d.advance(32).0 - d.0, 2);
        assert_eq!(d.advance(3 * 32).0 & 0x3fff, 0x40 + 6);
    }

    #[test]
    fn mn_major_128b_steps_blocks_by_lbo_and_k_groups_by_sbo() {
        // A 64(K)×256(N) N-major tile stored as four 64×64 TMA boxes of 8 KiB.
        let d = SmemDesc::mn_major_128b(0x8000, 8192);
        assert_eq!(d.0 & 0x3fff, 0x800);
        assert_eq!((d.0 >> 16) & 0x3fff, 8192 >> 4);
        assert_eq!((d.0 >> 32) & 0x3fff, 1024 >> 4);
        assert_eq!(d.0 >> 62, Swizzle::B128 as u64);
        assert_eq!(SmemDesc::mn_major_128b(0x8000 + 2048, 8192).0 - d.0, 2048 >> 4);
    }

    #[test]
    fn interleaved_tile() {
        let d = SmemDesc::k_major_interleaved(0x800, 128 * 16);
        assert_eq!(d.0 & 0x3fff, 0x80);
        assert_eq!((d.0 >> 16) & 0x3fff, 128);
        assert_eq!((d.0 >> 32) & 0x3fff, 8);
        assert_eq!(d.0 >> 62, 0);
    }
}
