//! The tcgen05 descriptors and tensor-memory addresses (sm_100 family).
//!
//! Layouts from the PTX ISA, "TensorCore 5th Generation Family Instructions" (§9.7.16; section
//! numbers as in the PTX ISA 9.2 text):
//!
//! Shared-memory descriptor (§9.7.16.4.1), 64 bits:
//!
//! | bits  | field                                                              |
//! |-------|--------------------------------------------------------------------|
//! | 0–13  | start address, bytes >> 4                                          |
//! | 16–29 | leading-dimension byte offset >> 4                                 |
//! | 32–45 | stride-dimension byte offset >> 4                                  |
//! | 46–48 | fixed 0b001 (a version field: wgmma descriptors have none)        |
//! | 49–51 | matrix base offset                                                 |
//! | 52    | leading-dimension mode: 0 relative offset, 1 absolute address      |
//! | 61–63 | swizzle: 0 none, 1 128B with 32B atom, 2 128B, 4 64B, 6 32B        |
//!
//! For a K-major operand the leading offset is the step between 8×16-byte core matrices along K
//! (used only without a swizzle), the stride offset the step between 8-row groups along M or N
//! (§9.7.16.3, "Major-ness supported by strides"). With the 128-byte swizzle eight 128-byte rows
//! form a 1024-byte atom: stride 1024, leading offset unused ("assumed 1").
//!
//! For an MN-major operand with a swizzle (§9.7.16.3.1.1 and §9.7.16.3.2, the tables of the
//! leading and stride byte offsets) rows are K and each 128-byte row holds 64 consecutive M or N
//! elements: the leading offset is the step from one such 64-element block along M or N to the
//! next ("from the first (swizzle-byte-size/16) rows to the next", counting rows of 16 bytes),
//! the stride offset the step between 8-row groups along K (1024 bytes for the 128-byte swizzle).
//! CUTLASS's `make_umma_desc<Major::MN>` (cute/atom/mma_traits_sm100.hpp) states the same
//! canonical SWIZZLE_128B layout in 16-byte units, `((8,n),(8,k)):((1,LBO),(8,SBO))`.
//!
//! Instruction descriptor for `.kind::f16` (§9.7.16.4.2, table "Instruction descriptor format"),
//! 32 bits: 4–5 D type (1 = f32), 7–9 A type and 10–12 B type (1 = bf16), 13/14 negate A/B,
//! 15/16 transpose A/B (0 = K-major), 17–22 N >> 3, 24–28 M >> 4; the rest zero for a dense MMA.

/// The swizzle named in bits 61–63; it must match the TMA box that filled the tile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swizzle {
    None = 0,
    B128Atom32 = 1,
    B128 = 2,
    B64 = 4,
    B32 = 6,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SmemDesc(pub u64);

use super::field;

impl SmemDesc {
    /// All fields zero except the fixed `0b001` of bits 46–48.
    pub const fn new() -> Self {
        SmemDesc(field(0, 0b001, 46, 3))
    }

    /// Bits 0–13: the tile's shared-memory address (16-byte aligned), >> 4.
    pub const fn start_address(self, addr: u32) -> Self {
        SmemDesc(field(self.0, ((addr & 0x3ffff) >> 4) as u64, 0, 14))
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

    /// Bit 52: the leading field holds an absolute address (only for 48-byte K slices, sm_103a)
    /// instead of an offset.
    pub const fn leading_absolute(self, absolute: bool) -> Self {
        SmemDesc(field(self.0, absolute as u64, 52, 1))
    }

    /// Bits 61–63: the swizzle mode.
    pub const fn swizzle(self, s: Swizzle) -> Self {
        SmemDesc(field(self.0, s as u64, 61, 3))
    }

    /// A K-major tile written by non-swizzled TMA boxes 8 elements (16 bytes) wide: row `r` of
    /// K-chunk `c` sits at `c * chunk_bytes + 16 * r`, so core matrices are `chunk_bytes` apart
    /// along K and 128 bytes apart along M/N.
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
    /// 128-byte swizzle, 1024-byte aligned, whose 64-element blocks along M or N (one TMA box
    /// each) are `block_bytes` apart. A K step of 16 is two 8-row groups: the next descriptor
    /// starts 2048 bytes on.
    pub const fn mn_major_128b(addr: u32, block_bytes: u32) -> Self {
        SmemDesc::new()
            .start_address(addr)
            .leading_byte_offset(block_bytes)
            .stride_byte_offset(1024)
            .swizzle(Swizzle::B128)
    }

    /// The 128B-swizzled tile at `addr` in either order, at K step `k` (16 elements each) of a
    /// 64-deep slice: K-major, +32 bytes per step inside the swizzle atom; MN-major, +2048 (two
    /// 8-row groups of K), its 64-wide blocks `block_bytes` apart.
    #[inline(always)]
    pub const fn slice_128b(addr: u32, mn_major: bool, block_bytes: u32, k: u32) -> Self {
        if mn_major {
            SmemDesc::mn_major_128b(addr + 2048 * k, block_bytes)
        } else {
            SmemDesc::k_major_128b(addr).advance(32 * k)
        }
    }

    /// The same descriptor `bytes` further on. Inside a 128-byte swizzle atom a K step of 16
    /// bf16 is +32 bytes: the hardware applies the swizzle to the address it computes, as for
    /// wgmma (DeepGEMM's `advance_umma_desc_lo` does the same).
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

/// The 32-bit instruction descriptor of `tcgen05.mma`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstrDesc(pub u32);

const fn field32(desc: u32, value: u32, lo: u32, bits: u32) -> u32 {
    field(desc as u64, value as u64, lo, bits) as u32
}

impl InstrDesc {
    pub const fn new() -> Self {
        InstrDesc(0)
    }

    /// Bits 4–5: D type; 1 is f32 (kind::f16 also allows 0, f16).
    pub const fn d_f32(self) -> Self {
        InstrDesc(field32(self.0, 1, 4, 2))
    }

    /// Bits 7–9: A type; for kind::f16, 0 is f16 and 1 bf16.
    pub const fn a_bf16(self) -> Self {
        InstrDesc(field32(self.0, 1, 7, 3))
    }

    /// Bits 10–12: B type, as A's.
    pub const fn b_bf16(self) -> Self {
        InstrDesc(field32(self.0, 1, 10, 3))
    }

    /// Bit 15: A is MN-major (transposed) instead of K-major.
    pub const fn transpose_a(self, t: bool) -> Self {
        InstrDesc(field32(self.0, t as u32, 15, 1))
    }

    /// Bit 16: B is MN-major instead of K-major.
    pub const fn transpose_b(self, t: bool) -> Self {
        InstrDesc(field32(self.0, t as u32, 16, 1))
    }

    /// Bits 17–22: N >> 3 (N a multiple of 16 from 16 to 256 for M = 128 and 256).
    pub const fn n(self, n: u32) -> Self {
        InstrDesc(field32(self.0, n >> 3, 17, 6))
    }

    /// Bits 24–28: M >> 4. With `.cta_group::2`, M counts the rows of both CTAs.
    pub const fn m(self, m: u32) -> Self {
        InstrDesc(field32(self.0, m >> 4, 24, 5))
    }

    /// D (f32) += A (bf16, K-major) · B (bf16, K-major)ᵀ, M×N.
    pub const fn bf16_f32(m: u32, n: u32) -> Self {
        InstrDesc::new().d_f32().a_bf16().b_bf16().n(n).m(m)
    }

    /// [`bf16_f32`](Self::bf16_f32) with A M-major (`a_mn`) and B N-major (`b_mn`) where set:
    /// the shared-memory descriptors then describe MN-major tiles ([`SmemDesc::mn_major_128b`]).
    pub const fn bf16_f32_major(m: u32, n: u32, a_mn: bool, b_mn: bool) -> Self {
        InstrDesc::bf16_f32(m, n).transpose_a(a_mn).transpose_b(b_mn)
    }
}

impl Default for InstrDesc {
    fn default() -> Self {
        Self::new()
    }
}

/// A tensor-memory address (§9.7.16.1, "Tensor Memory"): lane (row) in bits 16–31, column
/// (32-bit cell) in bits 0–15. `tcgen05.alloc` writes the base of an allocation (lane 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct TmemAddr(pub u32);

impl TmemAddr {
    pub const fn new(lane: u32, col: u32) -> Self {
        TmemAddr((lane << 16) | col)
    }

    pub const fn lane(self) -> u32 {
        self.0 >> 16
    }

    pub const fn col(self) -> u32 {
        self.0 & 0xffff
    }

    /// `lanes` rows down and `cols` columns right of `self`.
    #[inline(always)]
    pub const fn offset(self, lanes: u32, cols: u32) -> Self {
        TmemAddr(self.0 + (lanes << 16) + cols)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instruction_descriptor_bf16_f32() {
        // kind::f16, bf16 × bf16 → f32, both K-major (PTX ISA §9.7.16.4.2).
        assert_eq!(InstrDesc::bf16_f32(128, 256).0, 0x0840_0490);
        // cta_group::2: M counts both CTAs' 128 rows.
        assert_eq!(InstrDesc::bf16_f32(256, 256).0, 0x1040_0490);
        let d = InstrDesc::bf16_f32(64, 8);
        assert_eq!((d.0 >> 17) & 0x3f, 1);
        assert_eq!((d.0 >> 24) & 0x1f, 4);
        assert_eq!(d.transpose_a(true).transpose_b(true).0 & (3 << 15), 3 << 15);
        assert_eq!(d.transpose_a(true).transpose_a(false), d);
        // Reserved bits 6, 23, 29 and the .ws shift bits 30–31 stay clear.
        let all = InstrDesc::bf16_f32(256, 256).transpose_a(true).transpose_b(true).0;
        assert_eq!(all & ((1 << 6) | (1 << 23) | (1 << 29) | (3 << 30)), 0);
    }

    #[test]
    fn smem_descriptor_fields_land_on_their_bits() {
        let d = SmemDesc::new()
            .start_address(0x1_2340)
            .leading_byte_offset(2048)
            .stride_byte_offset(1024)
            .base_offset(5)
            .leading_absolute(true)
            .swizzle(Swizzle::B32);
        assert_eq!(d.0 & 0x3fff, 0x1234);
        assert_eq!((d.0 >> 16) & 0x3fff, 128);
        assert_eq!((d.0 >> 32) & 0x3fff, 64);
        assert_eq!((d.0 >> 46) & 0x7, 0b001);
        assert_eq!((d.0 >> 49) & 0x7, 5);
        assert_eq!((d.0 >> 52) & 1, 1);
        assert_eq!((d.0 >> 53) & 0xff, 0);
        assert_eq!(d.0 >> 61, 6);
        // Setters replace, they do not OR into, an earlier value.
        assert_eq!(d.swizzle(Swizzle::None).0 >> 61, 0);
        assert_eq!(d.swizzle(Swizzle::B128).0 >> 61, 2);
        assert_eq!(d.swizzle(Swizzle::B64).0 >> 61, 4);
        assert_eq!(d.swizzle(Swizzle::B128Atom32).0 >> 61, 1);
        assert_eq!(d.leading_absolute(false).0 & (1 << 52), 0);
        assert_eq!(d.start_address(0).0 & 0x3fff, 0);
        // The version field survives every setter.
        assert_eq!((d.base_offset(0).swizzle(Swizzle::None).0 >> 46) & 0x7, 0b001);
    }

    #[test]
    fn k_major_128b_tile() {
        // A 128B-swizzled K-major bf16 tile at 0x400: start 0x40, leading 1 (unused), stride 64
        // (1024 bytes), version 0b001, swizzle 2.
        let d = SmemDesc::k_major_128b(0x400);
        assert_eq!(d.0, (2u64 << 61) | (1u64 << 46) | (64u64 << 32) | (1u64 << 16) | 0x40);
        // K steps of 16 elements: +32 bytes each, four of them per 64-wide atom.
        assert_eq!(d.advance(32).0 - d.0, 2);
        assert_eq!(d.advance(3 * 32).0 & 0x3fff, 0x40 + 6);
        // Advancing touches only the start address.
        assert_eq!(d.advance(96).0 & !0x3fff, d.0 & !0x3fff);
        // The 18-bit shared address window: the encoding drops bits above 17.
        assert_eq!(SmemDesc::k_major_128b(0x4_0400).0 & 0x3fff, 0x40);
    }

    #[test]
    fn instruction_descriptor_major_bits() {
        // CUTLASS's UMMA::InstrDescriptor: a_major_ is bit 15, b_major_ bit 16, Major::MN = 1;
        // every other field is that of the K-major descriptor.
        let k = InstrDesc::bf16_f32(256, 256);
        assert_eq!(InstrDesc::bf16_f32_major(256, 256, false, false), k);
        assert_eq!(InstrDesc::bf16_f32_major(256, 256, true, false).0, k.0 | 1 << 15);
        assert_eq!(InstrDesc::bf16_f32_major(256, 256, false, true).0, k.0 | 1 << 16);
        assert_eq!(InstrDesc::bf16_f32_major(256, 256, true, true).0, 0x1041_8490);
        assert_eq!(InstrDesc::bf16_f32_major(128, 256, true, true).0, 0x0841_8490);
    }

    #[test]
    fn mn_major_128b_tile() {
        // A 128-row M-major share of A stored as two 64(M)×64(K) TMA boxes of 8 KiB at 0x8000:
        // start 0x800, LBO 8192 >> 4 (the step between the 64-element blocks along M), SBO
        // 1024 >> 4 (8 rows of K), version 0b001, swizzle 2 — the fields CUTLASS's
        // `make_umma_desc<Major::MN>` derives from `((8,2),(8,4)):((1,512),(8,64))` in 16-byte units.
        let d = SmemDesc::mn_major_128b(0x8000, 8192);
        assert_eq!(d.0, (2u64 << 61) | (1u64 << 46) | (64u64 << 32) | (512u64 << 16) | 0x800);
        // K steps: two 8-row groups (2048 bytes) each, four per 64-deep slice; only the start
        // address moves.
        for k in 0..4 {
            let s = SmemDesc::slice_128b(0x8000, true, 8192, k);
            assert_eq!(s.0 & 0x3fff, 0x800 + 128 * k as u64);
            assert_eq!(s.0 & !0x3fff, d.0 & !0x3fff);
        }
        // The K-major form of the same call is v7's descriptor, +32 bytes per step.
        for k in 0..4 {
            assert_eq!(SmemDesc::slice_128b(0x400, false, 0, k), SmemDesc::k_major_128b(0x400).advance(32 * k));
        }
        // The byte offset of element (mn, k) of such a tile, as the descriptor describes it: the
        // 16-byte chunk (mn % 64) / 8 of row k of block mn / 64, XOR-swizzled by k % 8 (the TMA
        // box's SWIZZLE_128B layout, `staging::offset` with rows k and columns mn).
        let at = |mn: u32, k: u32| 8192 * (mn / 64) + crate::staging::offset(k, mn % 64);
        // Block 1 begins LBO bytes in; K row 8 begins SBO bytes in; chunks permute within a row.
        assert_eq!(at(64, 0), 8192);
        assert_eq!(at(0, 8), 1024);
        let (chunk, row) = (1u32, 1u32);
        assert_eq!(at(8 * chunk, row), 128 * row + 16 * (chunk ^ row));
        let (chunk, row) = (2u32, 3u32);
        assert_eq!(at(8 * chunk, row), 128 * row + 16 * (chunk ^ row));
    }

    #[test]
    fn k_major_interleaved_tile() {
        // v0's layout: 8-wide K chunks of 128 rows, 2048 bytes apart.
        let d = SmemDesc::k_major_interleaved(0x800, 128 * 16);
        assert_eq!(d.0 & 0x3fff, 0x80);
        assert_eq!((d.0 >> 16) & 0x3fff, 128);
        assert_eq!((d.0 >> 32) & 0x3fff, 8);
        assert_eq!((d.0 >> 46) & 0x7, 0b001);
        assert_eq!(d.0 >> 61, 0);
        // A k16 step covers two chunks.
        assert_eq!(d.advance(2 * 128 * 16).0 & 0x3fff, 0x80 + 256);
    }

    #[test]
    fn tmem_address_packs_lane_and_column() {
        let t = TmemAddr::new(96, 256);
        assert_eq!(t.0, (96 << 16) | 256);
        assert_eq!((t.lane(), t.col()), (96, 256));
        assert_eq!(TmemAddr(0).offset(32, 16), TmemAddr::new(32, 16));
        assert_eq!(t.offset(0, 255).col(), 511);
    }
}
