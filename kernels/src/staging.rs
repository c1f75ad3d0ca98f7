//! The staging tile of a TMA-store epilogue, shared by both families: a box of 64 bf16 columns
//! (128-byte rows) × up to 256 rows in shared memory, in the layout `CU_TENSOR_MAP_SWIZZLE_128B`
//! expects, so one `cp.async.bulk.tensor` store writes it to C.
//!
//! The 128-byte swizzle permutes the eight 16-byte chunks of row `r` by XOR with `r % 8`
//! (CUTLASS `Swizzle<3,4,3>`; the TMA section of the CUDA Programming Guide). Eight consecutive
//! rows then put any given chunk in eight different bank groups, so a warp writing four-byte pairs
//! of eight rows (the wgmma fragment) or 16-byte chunks of 32 rows (tcgen05.ld) spreads its
//! stores over all banks.

/// Columns of one staging box: 64 bf16 = 128 bytes, the 128B-swizzle span.
pub const BOX_COLS: u32 = 64;

/// Whether a tile `tile_n` columns wide ends on a staging box shifted back to end with it: a tile
/// wider than a box but not a multiple of it (160, 224 or 96 columns). The shifted box overlaps
/// the one before it, whose columns it stores again with the same values, and writes nothing past
/// the tile, so such tiles may sit side by side along N. A tile narrower than a box (16 or 32)
/// takes one column of tiles, where TMA clips the box at C's edge.
pub const fn shifts_last_box(tile_n: u32) -> bool {
    tile_n > BOX_COLS && !tile_n.is_multiple_of(BOX_COLS)
}

/// Whether TMA can address C at all: a tensor map needs its base 16-byte aligned and its row and
/// batch strides multiples of 16 bytes (CUDA driver API, `cuTensorMapEncodeTiled`). A contiguous
/// C with N not a multiple of 8 (a vocabulary of 50257, say) or a view of C starting mid-chunk
/// is not; Hopper v7's threads then store every column themselves ([`tma_store_columns`]:
/// `Output::store_box`, or the fragment's pairs from registers). (Nor can a map of C's elements
/// write its rows: a TMA box must also start on a 16-byte chunk, which such rows mostly do not;
/// docs/performance.md, "TMA rows for a ragged C".)
#[inline(always)]
pub const fn tma_can_write(c: u64, ldc: u64, stride_c: u64, batch: u32) -> bool {
    c.is_multiple_of(16) && ldc.is_multiple_of(8) && (batch <= 1 || stride_c.is_multiple_of(8))
}

/// [`tma_can_write`]'s strides half, for a C whose address is not known yet (the host's choice of
/// kernel): rows, and batch entries where there are several, a multiple of 8 elements apart.
#[inline(always)]
pub const fn tma_strides_fit(ldc: u64, stride_c: u64, batch: u32) -> bool {
    // Any 16-byte aligned address stands for C's.
    tma_can_write(0, ldc, stride_c, batch)
}

/// Columns of C a TMA store may write, of the `n` along its contiguous dimension: none where TMA
/// cannot write C ([`tma_can_write`]), and otherwise those up to the last whole 16-byte chunk
/// (8 bf16): where a row of C ends inside one, a store would overwrite what follows the row (the
/// padding of a leading dimension, or another tensor). The host's C map stops here, and kernels
/// store the columns after it from registers. (Seen on the H200; triton-lang/triton#11583 reports
/// the same.)
#[inline(always)]
pub const fn tma_store_columns(n: u32, tma_can_write: bool) -> u32 {
    if tma_can_write { n & !7 } else { 0 }
}

/// Whether the tile whose columns are `n0..n0 + tile_n` holds any of the columns of an `n`-wide C
/// past the first `tma_columns` ([`tma_store_columns`]), which the epilogue then stores from
/// registers. Where TMA writes every column there are none, whichever tile reaches past `n`: the
/// pass is ~47 KB of straight-line SASS in v7, fetched cold, and running it for every tile of a
/// partly empty last column cost each ~1.8 µs on the H200 (2026-12-01, commit
/// e2af697; docs/performance.md).
#[inline(always)]
pub const fn holds_columns_past_tma(n0: u32, tile_n: u32, n: u32, tma_columns: u32) -> bool {
    n0 + tile_n > tma_columns && tma_columns < n
}

/// Byte offset of element (`row`, `col`) of a 128B-swizzled box of 64-element rows. The box must
/// start 1024-byte aligned (the swizzle pattern repeats every 8 rows of 128 bytes).
#[inline(always)]
pub const fn offset(row: u32, col: u32) -> u32 {
    let byte = 2 * col;
    row * 128 + ((((byte / 16) ^ (row % 8)) * 16) | (byte % 16))
}

/// The address of register pair `i` (0..16) of a `wgmma` fragment's 64-column box in a buffer
/// at `buf`, for lane `lane` of warp `warp` of the warpgroup: `buf + offset(16·warp + lane/4 +
/// 8·(i % 2), 8·(i/2) + 2·(lane % 4))`, written as `(buf + t) ^ 16·(i/2) + 1024·(i % 2)`. The
/// buffer is 1024-byte aligned, so the XOR only permutes 16-byte chunks as the swizzle does; and
/// with the buffer inside the XOR, none of a box's 16 addresses is the same from box to box, so
/// LLVM has nothing to hoist out of a loop into registers held across it.
#[inline(always)]
pub const fn fragment_pair_addr(buf: u32, warp: u32, lane: u32, i: u32) -> u32 {
    let t = (16 * warp + lane / 4) * 128 + 4 * (lane % 4) + 16 * (lane / 4);
    ((buf + t) ^ (16 * (i / 2))) + 1024 * (i % 2)
}

/// A staging box at a shared-memory address.
#[cfg(target_arch = "nvptx64")]
#[derive(Clone, Copy)]
pub struct Staging(pub u32);

#[cfg(target_arch = "nvptx64")]
impl Staging {
    /// Store two adjacent bf16 (packed, `col` even) at (`row`, `col`).
    #[inline(always)]
    pub fn store_b32(self, row: u32, col: u32, packed: u32) {
        crate::ptx::smem::st_b32(self.0 + offset(row, col), packed);
    }

    /// Load the two adjacent bf16 (packed) at (`row`, `col`), `col` even.
    #[inline(always)]
    pub fn load_b32(self, row: u32, col: u32) -> u32 {
        crate::ptx::smem::ld_b32(self.0 + offset(row, col))
    }

    /// Store a packed pair of bf16 that are adjacent in a row of the tile (`col` even) as
    /// (`col`, `row`) and (`col + 1`, `row`) of a box of the transposed tile: two 2-byte stores.
    /// A warp's stores for one register pair of the wgmma fragment then cover eight consecutive
    /// columns (16 bytes) of four rows, in four different bank groups.
    #[inline(always)]
    pub fn store_b32_transposed(self, row: u32, col: u32, packed: u32) {
        crate::ptx::smem::st_b16(self.0 + offset(col, row), packed as u16);
        crate::ptx::smem::st_b16(self.0 + offset(col + 1, row), (packed >> 16) as u16);
    }

    /// What [`store_b32_transposed`](Self::store_b32_transposed) stores, packed.
    #[inline(always)]
    pub fn load_b32_transposed(self, row: u32, col: u32) -> u32 {
        let lo = crate::ptx::smem::ld_b16(self.0 + offset(col, row)) as u32;
        let hi = crate::ptx::smem::ld_b16(self.0 + offset(col + 1, row)) as u32;
        lo | hi << 16
    }

    /// Store eight adjacent bf16 (`col` a multiple of 8) at (`row`, `col`).
    #[inline(always)]
    pub fn store_v4(self, row: u32, col: u32, packed: [u32; 4]) {
        crate::ptx::smem::st_v4_b32(self.0 + offset(row, col), packed);
    }
}

/// Which way a consumer's fragment goes into a staging box: as rows of C (C row-major), or
/// transposed (C column-major: the box then holds C's columns as its rows). A type rather than a
/// flag so that the row-major kernels' code is the same whether or not the other exists.
#[cfg(target_arch = "nvptx64")]
pub trait Orientation {
    /// C is column-major: the box's rows are the tile's columns.
    const COL_MAJOR: bool;
    /// Store a packed pair of bf16 adjacent in a row of the tile (`col` even).
    fn store_pair(buf: Staging, row: u32, col: u32, packed: u32);
    /// Load what [`store_pair`](Self::store_pair) stores.
    fn load_pair(buf: Staging, row: u32, col: u32) -> u32;
}

/// C row-major: the tile's rows are the box's.
#[cfg(target_arch = "nvptx64")]
pub struct RowMajorC;
/// C column-major: the tile's columns are the box's rows.
#[cfg(target_arch = "nvptx64")]
pub struct ColMajorC;

#[cfg(target_arch = "nvptx64")]
impl Orientation for RowMajorC {
    const COL_MAJOR: bool = false;
    #[inline(always)]
    fn store_pair(buf: Staging, row: u32, col: u32, packed: u32) {
        buf.store_b32(row, col, packed);
    }
    #[inline(always)]
    fn load_pair(buf: Staging, row: u32, col: u32) -> u32 {
        buf.load_b32(row, col)
    }
}

#[cfg(target_arch = "nvptx64")]
impl Orientation for ColMajorC {
    const COL_MAJOR: bool = true;
    #[inline(always)]
    fn store_pair(buf: Staging, row: u32, col: u32, packed: u32) {
        buf.store_b32_transposed(row, col, packed);
    }
    #[inline(always)]
    fn load_pair(buf: Staging, row: u32, col: u32) -> u32 {
        buf.load_b32_transposed(row, col)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_tile_holding_the_last_partial_chunk_stores_from_registers() {
        for n in 1..700 {
            for tile_n in [16, 32, 64, 80, 96, 112, 128, 160, 192, 224, 256] {
                let mut holders = 0;
                for n0 in (0..n).step_by(tile_n as usize) {
                    let holds = holds_columns_past_tma(n0, tile_n, n, tma_store_columns(n, true));
                    // Where TMA cannot write C, every tile stores from registers.
                    assert!(holds_columns_past_tma(n0, tile_n, n, tma_store_columns(n, false)));
                    // Some column of the tile, within N, lies past the last whole chunk.
                    let expected = (n0..(n0 + tile_n).min(n)).any(|col| col >= n / 8 * 8);
                    assert_eq!(holds, expected, "n {n}, tile {tile_n}, n0 {n0}");
                    holders += holds as u32;
                }
                // One tile where N ends inside a chunk (tile widths are multiples of 8, so no tile
                // boundary splits it), none where N is a multiple of 8.
                assert_eq!(holders, (n % 8 != 0) as u32, "n {n}, tile {tile_n}");
            }
        }
        // The mid tile's last column at N = 4480 (a third full) stores nothing from registers; the
        // last of N = 301's tiles of 64 does, and the one before it does not.
        assert!(!holds_columns_past_tma(4416, 192, 4480, tma_store_columns(4480, true)));
        assert!(holds_columns_past_tma(256, 64, 301, tma_store_columns(301, true)));
        assert!(!holds_columns_past_tma(192, 64, 301, tma_store_columns(301, true)));
    }

    #[test]
    fn tma_writes_c_only_at_16_byte_chunks() {
        assert!(tma_can_write(0x7f00_0000, 4096, 3, 1), "one GEMM's batch stride is never used");
        assert!(!tma_can_write(0x7f00_0000, 4096, 3, 2));
        assert!(tma_can_write(0x7f00_0000, 4096, 4096 * 8, 2));
        // A contiguous C 50257 wide, and a view of an aligned one from its second element.
        assert!(!tma_can_write(0x7f00_0000, 50257, 0, 1));
        assert!(!tma_can_write(0x7f00_0002, 4096, 0, 1));
        // The strides alone, before C's address is known.
        assert!(tma_strides_fit(4096, 0, 1) && !tma_strides_fit(50257, 0, 1) && !tma_strides_fit(4096, 3, 2));
        assert_eq!(tma_store_columns(50257, true), 50256);
        assert_eq!(tma_store_columns(50257, false), 0);
        assert_eq!(tma_store_columns(7, true), 0);
    }

    #[test]
    fn swizzle_permutes_chunks_within_each_row() {
        for row in 0..16 {
            let mut chunks: [u32; 8] = [0; 8];
            for (c, slot) in chunks.iter_mut().enumerate() {
                let o = offset(row, 8 * c as u32);
                assert_eq!(o / 128, row, "stays in its row");
                assert_eq!(o % 16, 0);
                *slot = (o % 128) / 16;
            }
            let mut sorted = chunks;
            sorted.sort();
            assert_eq!(sorted, [0, 1, 2, 3, 4, 5, 6, 7], "row {row}: {chunks:?}");
            assert_eq!(chunks[0], row % 8);
        }
        // Inside a chunk, elements stay in order.
        assert_eq!(offset(3, 9) - offset(3, 8), 2);
    }

    #[test]
    fn fragment_pair_addresses_are_the_swizzled_offsets() {
        for buf in [0, 1024, 5 * 1024, 0x3_8000] {
            for warp in 0..4 {
                for lane in 0..32 {
                    for i in 0..16 {
                        let (row, col) = (16 * warp + lane / 4 + 8 * (i % 2), 8 * (i / 2) + 2 * (lane % 4));
                        assert_eq!(
                            fragment_pair_addr(buf, warp, lane, i),
                            buf + offset(row, col),
                            "{buf} {warp} {lane} {i}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn a_shifted_last_box_ends_with_the_tile() {
        for n in [16, 32, 64, 96, 128, 160, 192, 224, 256] {
            let shifts = shifts_last_box(n);
            assert_eq!(shifts, n > BOX_COLS && n % BOX_COLS != 0, "{n}");
            if n < BOX_COLS {
                continue; // one box, clipped by TMA at C's edge: one column of tiles only
            }
            // The boxes v7's epilogue stores: the whole ones, then the last moved back to end at n.
            let last = shifts.then_some(n - BOX_COLS);
            let mut covered = [0u32; 256];
            for first in (0..n / BOX_COLS).map(|j| j * BOX_COLS).chain(last) {
                assert!(first + BOX_COLS <= n, "{n}: a box at {first} reaches past the tile");
                covered[first as usize..(first + BOX_COLS) as usize].iter_mut().for_each(|c| *c += 1);
            }
            assert!(covered[..n as usize].iter().all(|&c| c >= 1), "{n}: a column no box stores");
        }
    }

    #[test]
    fn eight_rows_of_one_chunk_hit_eight_bank_groups() {
        for c in 0..8 {
            let mut groups: [u32; 8] = [0; 8];
            for (r, g) in groups.iter_mut().enumerate() {
                *g = (offset(r as u32, 8 * c) % 128) / 16;
            }
            groups.sort();
            assert_eq!(groups, [0, 1, 2, 3, 4, 5, 6, 7]);
        }
    }
}
