//! Tile scheduling: which output tile a CTA (or cluster) computes, shared by every kernel of both
//! families and by the host, which sizes the grid from [`TileScheduler::num_tiles`].
//!
//! Tiles are visited in groups of `group_m` tile-rows: inside a group, consecutive indices walk
//! down M first and then step along N, so CTAs running at the same time share B tiles (and, across
//! a group's width, A tiles) in L2. The last group may be shorter; it is clamped, not padded, so
//! every tile is visited exactly once.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileScheduler {
    pub tiles_m: u32,
    pub tiles_n: u32,
    pub group_m: u32,
}

impl TileScheduler {
    /// Tiles of `tile_m × tile_n` covering an `m × n` output (partial tiles at the edges count).
    /// `group_m == 0` means one group spanning all of M.
    pub const fn new(m: u32, n: u32, tile_m: u32, tile_n: u32, group_m: u32) -> Self {
        let tiles_m = m.div_ceil(tile_m);
        TileScheduler { tiles_m, tiles_n: n.div_ceil(tile_n), group_m: if group_m == 0 { tiles_m } else { group_m } }
    }

    pub const fn num_tiles(&self) -> u32 {
        self.tiles_m * self.tiles_n
    }

    /// The (tile-row, tile-column) of linear tile `idx < num_tiles()`.
    #[inline(always)]
    pub const fn tile(&self, idx: u32) -> (u32, u32) {
        let per_group = self.group_m * self.tiles_n;
        let group = idx / per_group;
        let first_m = group * self.group_m;
        let rows = if self.tiles_m - first_m < self.group_m { self.tiles_m - first_m } else { self.group_m };
        let within = idx - group * per_group;
        (first_m + within % rows, within / rows)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;

    fn assert_each_tile_once(m: u32, n: u32, tm: u32, tn: u32, group: u32) {
        let s = TileScheduler::new(m, n, tm, tn, group);
        let mut seen = vec![0u8; s.num_tiles() as usize];
        for idx in 0..s.num_tiles() {
            let (i, j) = s.tile(idx);
            assert!(i < s.tiles_m && j < s.tiles_n, "{m}x{n} tile {tm}x{tn} group {group}: idx {idx} -> ({i},{j})");
            seen[(i * s.tiles_n + j) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c == 1), "{m}x{n} tile {tm}x{tn} group {group}: {seen:?}");
    }

    #[test]
    fn every_tile_exactly_once() {
        for &(m, n) in &[(1, 1), (128, 256), (129, 257), (8192, 8192), (8000, 8000), (128, 8192), (8192, 1024), (1000, 3), (3, 1000), (4096, 14336), (777, 12345)] {
            for &(tm, tn) in &[(128, 256), (256, 128), (128, 128), (256, 256), (64, 256)] {
                for &g in &[0, 1, 2, 7, 8, 16, 1000] {
                    assert_each_tile_once(m, n, tm, tn, g);
                }
            }
        }
    }

    #[test]
    fn persistent_striding_covers_all_tiles_once() {
        // The persistent kernels visit idx = cta, cta + grid, ...; every CTA count must cover every
        // tile exactly once, whether the grid is smaller or larger than the tile count.
        let s = TileScheduler::new(8000, 8000, 128, 256, 16);
        for grid in [1u32, 7, 66, 132, 148, 5000] {
            let mut seen = vec![0u32; s.num_tiles() as usize];
            for cta in 0..grid {
                let mut idx = cta;
                while idx < s.num_tiles() {
                    let (i, j) = s.tile(idx);
                    seen[(i * s.tiles_n + j) as usize] += 1;
                    idx += grid;
                }
            }
            assert!(seen.iter().all(|&c| c == 1), "grid {grid}");
        }
    }

    #[test]
    fn group_walks_m_first() {
        let s = TileScheduler::new(64 * 128, 4 * 256, 128, 256, 16);
        assert_eq!(s.tile(0), (0, 0));
        assert_eq!(s.tile(1), (1, 0));
        assert_eq!(s.tile(15), (15, 0));
        assert_eq!(s.tile(16), (0, 1));
        assert_eq!(s.tile(16 * 4), (16, 0));
        // Partial last group: 20 tile-rows in groups of 16 leave a group of 4.
        let s = TileScheduler::new(20 * 128, 2 * 256, 128, 256, 16);
        assert_eq!(s.tile(32), (16, 0));
        assert_eq!(s.tile(35), (19, 0));
        assert_eq!(s.tile(36), (16, 1));
    }
}
