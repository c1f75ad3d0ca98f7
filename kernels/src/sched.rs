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
        let (tm, tn, _) = self.place(idx);
        (tm, tn)
    }

    /// As [`tile`](Self::tile), but every odd group walks N from its last tile column to its
    /// first: a group then begins on the B columns that the group before it ended on, which
    /// are still in L2.
    #[inline(always)]
    pub const fn tile_snaking(&self, idx: u32) -> (u32, u32) {
        let (tm, tn, group) = self.place(idx);
        if group % 2 == 1 { (tm, self.tiles_n - 1 - tn) } else { (tm, tn) }
    }

    /// Tile-row, tile-column and group of linear tile `idx`.
    #[inline(always)]
    const fn place(&self, idx: u32) -> (u32, u32, u32) {
        let per_group = self.group_m * self.tiles_n;
        let group = idx / per_group;
        let first_m = group * self.group_m;
        let rows = if self.tiles_m - first_m < self.group_m { self.tiles_m - first_m } else { self.group_m };
        let within = idx - group * per_group;
        (first_m + within % rows, within / rows, group)
    }
}

/// A persistent kernel's split of its units (output tiles of every batch entry, each `num_kb` K
/// blocks deep) over `workers` (clusters, or CTAs where there are none): whole units in turn,
/// then, when the last wave would leave workers idle, stream-K for the rest
/// (Osama et al., "Stream-K: Work-centric Parallel Decomposition for Dense Matrix-Matrix
/// Multiplication on the GPU", 2023).
///
/// Units `0..dp_units` go whole to worker `unit % workers`. The remaining units' K blocks,
/// laid end to end, are cut into one contiguous `share` per worker, so a unit may be split
/// between consecutive workers. The worker holding a unit's last K block *finishes* it: it adds
/// the partial sums the earlier workers left in the workspace and stores the tile. A worker walks
/// its share backwards, so the one piece it leaves unfinished (the start of a unit that a later
/// worker finishes) comes first and is published before it waits on anyone; a finisher waits
/// only on workers with lower indices. Nothing ever waits on a later worker, so the wait cannot
/// deadlock as long as workers start in index order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamK {
    pub units: u32,
    pub num_kb: u32,
    pub workers: u32,
    /// Units computed whole, one wave after another.
    pub dp_units: u32,
    /// K blocks of the split units each worker takes (the last workers may get fewer, or none);
    /// 0 when nothing is split.
    pub share: u32,
}

/// Fewest K blocks a worker's share may have: below it the fix-up outweighs the balance.
const MIN_SHARE: u32 = 8;
/// What one fix-up (a partial tile written, then read back and added) costs, in K blocks of
/// MMAs: one 128×256 f32 partial is 128 KiB each way. Measured on the H200 (2026-11-29, 005cc0a):
/// units split in two cost 3–6 K blocks more than the tiles that split nothing.
const FIXUP_KB: u32 = 4;
/// What a fix-up costs where there are fewer units than workers (a thin split), in K blocks, for
/// the choice between splitting and whole units. Fitted on the H200 (2026-11-30, 5506bdb) from
/// 16 such splits against the same tiles whole: 6.4–9.2 K blocks, 8.2 on average, slim to wide
/// tiles, K of 2048–16384. Counted so, the splits it turns whole ran whole faster at 72 of 77
/// shapes measured (2026-11-30, 1088fb1, forced, two rounds; by up to 29%: 384×768×2048 slim
/// pairs 0.95–0.98× cuBLAS against 0.73–0.76× split), where those it keeps ran slower whole at 7
/// of 8 (128×1792×8192: 0.67× against 0.88×).
const THIN_FIXUP_KB: u32 = 8;

impl StreamK {
    /// The schedule: stream-K over the last `workers` units plus the incomplete wave, or over
    /// all units when there are fewer than workers, when that shortens the busiest worker's
    /// [`path`](Self::path) (over all units, even with its fix-ups counted at `THIN_FIXUP_KB`);
    /// failing that, over the incomplete wave alone; otherwise every unit whole.
    pub const fn new(units: u32, num_kb: u32, workers: u32) -> StreamK {
        let whole = StreamK::whole(units, num_kb, workers);
        if workers <= 1 || num_kb == 0 || units.is_multiple_of(workers) {
            return whole;
        }
        let waves = units / workers;
        // The last whole wave and the incomplete one (every unit, with fewer than a wave): a
        // worker's share is then at least a unit deep where there are whole waves, so no worker
        // holds only the middle of a unit, whose partial sum its finisher would wait for at the
        // end of the share instead of finding it stored.
        if let Some(sk) = whole.split_after(if waves == 0 { 0 } else { waves - 1 }) {
            return sk;
        }
        // Where splitting the last whole wave too would put more than an eighth of the work out
        // of step, the incomplete wave alone, against whole units: 6144³ 1.016× cuBLAS against
        // 1.001×, 4096×11008×4096 1.061× against 1.036× (H200, 2026-11-30, 89de07c, six rounds). Where
        // both are allowed the two-wave split stays: the incomplete wave alone read the same at
        // 8192³ and 0.3–0.9% faster at 4096×14336×4096 and 8192×8192×28672 (two calls, the
        // kernel's code unchanged), within the spread, and `choose` would then move
        // 8192×28672×8192 to the mid tile, which measured 4% slower there.
        match whole.split_after(waves) {
            Some(sk) => sk,
            None => whole,
        }
    }

    /// Stream-K over every unit, none whole, where that shortens the path; otherwise [`new`]'s
    /// schedule. For tiles that share nothing in L2 worth keeping a wave in step for.
    ///
    /// [`new`]: Self::new
    pub const fn spread(units: u32, num_kb: u32, workers: u32) -> StreamK {
        // Where `new` computes every unit whole at once (one worker, no K, whole waves), so does this.
        if workers > 1
            && num_kb > 0
            && !units.is_multiple_of(workers)
            && let Some(sk) = StreamK::whole(units, num_kb, workers).split_from(0)
        {
            return sk;
        }
        StreamK::new(units, num_kb, workers)
    }

    /// Stream-K after `waves` whole waves, if that shortens the path and does not split too
    /// much of the work.
    const fn split_after(&self, waves: u32) -> Option<StreamK> {
        let (units, workers) = (self.units, self.workers);
        let dp_units = waves * workers;
        if dp_units >= units {
            return None;
        }
        let after = StreamK { dp_units, ..*self };
        if units > workers && after.splits_over_an_eighth() && !self.idles_an_eighth() {
            // Split units run out of step in K, so tiles running together stop sharing their
            // operands in L2: with more than an eighth of the work split, that cost more than
            // the balance won on the H200 (1024×8192×8192, 4096³ and 6144³ measured 1–4%
            // slower with their last 1.9 waves split, 2026-11-29, 005cc0a; 8192³ and larger 2–3%
            // faster). Those whole schedules leave 3% of their slots idle; where whole units
            // would leave more than an eighth idle (3000³: 144 units on 66 pairs, 27%), the
            // balance wins by far more than L2 can cost.
            return None;
        }
        self.split_from(dp_units)
    }

    /// Stream-K over the units from `dp_units < units` on, if that shortens the path.
    const fn split_from(&self, dp_units: u32) -> Option<StreamK> {
        let (units, num_kb, workers) = (self.units, self.num_kb, self.workers);
        let split = (units - dp_units) as u64 * num_kb as u64;
        if split > (u32::MAX / 2) as u64 {
            return None;
        }
        // Evenly over every worker; but where there are fewer units than workers, never so thin
        // that a unit's pieces cost more in fix-ups than they save: the path
        // `share + THIN_FIXUP_KB × num_kb / share` is shortest at share = √(THIN_FIXUP_KB × num_kb),
        // and a few units of a very long K then take part of the machine in deeper pieces.
        let even = (split as u32).div_ceil(workers);
        let deepest = (THIN_FIXUP_KB as u64 * num_kb as u64).isqrt() as u32;
        let share = if units < workers && even < deepest { deepest } else { even };
        let sk = StreamK { units, num_kb, workers, dp_units, share };
        if share < MIN_SHARE || sk.path() >= self.path() {
            return None;
        }
        // Every unit is split and every worker waits for some of them: a thin split costs more
        // per fix-up than one after whole waves, so it must win by more than FIXUP_KB counts.
        if units < workers && sk.path() + (THIN_FIXUP_KB - FIXUP_KB) as u64 * sk.fixups() >= self.path() {
            return None;
        }
        Some(sk)
    }

    /// The busiest worker's path in K blocks: its whole units, its share, and a fix-up per
    /// partial sum it may have to add (a unit spans at most `num_kb / share + 2` shares).
    pub const fn path(&self) -> u64 {
        let workers = if self.workers == 0 { 1 } else { self.workers };
        if self.share == 0 {
            return self.units.div_ceil(workers) as u64 * self.num_kb as u64;
        }
        (self.dp_units / workers) as u64 * self.num_kb as u64 + self.share as u64 + FIXUP_KB as u64 * self.fixups()
    }

    /// The fix-ups [`path`](Self::path) counts for a busy worker: one per share a unit spans.
    const fn fixups(&self) -> u64 {
        if self.share == 0 { 0 } else { self.num_kb.div_ceil(self.share) as u64 }
    }

    /// Every unit whole, one wave after another.
    pub const fn whole(units: u32, num_kb: u32, workers: u32) -> StreamK {
        StreamK { units, num_kb, workers, dp_units: units, share: 0 }
    }

    /// Whether whole units, one wave after another, leave more than an eighth of the waves'
    /// worker slots idle.
    const fn idles_an_eighth(&self) -> bool {
        let slots = self.units.div_ceil(self.workers) as u64 * self.workers as u64;
        (slots - self.units as u64) * 8 > slots
    }

    /// Whether more than an eighth of the units are split: `new` splits no more than that after
    /// whole waves unless whole units would idle an eighth of the slots.
    pub const fn splits_over_an_eighth(&self) -> bool {
        (self.units - self.dp_units) as u64 * 8 > self.units as u64
    }

    /// Whether some unit is split between workers (the kernel then needs a workspace).
    pub const fn splits(&self) -> bool {
        self.share != 0
    }

    /// The worker holding K block `kb` of split unit `dp_units + t`.
    const fn holder(&self, t: u32, kb: u32) -> u32 {
        (t * self.num_kb + kb) / self.share
    }

    /// The whole waves a rendezvous keeps in step: a worker's items `1..=waves_in_step()` wait
    /// until every worker has issued the loads of its whole units before them. Every worker's
    /// first `waves_in_step()` items are whole units, so every wait is met.
    pub const fn waves_in_step(&self) -> u32 {
        match self.dp_units.checked_div(self.workers) {
            Some(waves) => waves,
            None => 0,
        }
    }

    /// Worker `w`'s walk: its whole units, then the pieces of its share, last piece first.
    pub const fn walk(&self, w: u32) -> Walk {
        let (begin, end) = if self.share == 0 {
            (0, 0)
        } else {
            let split = (self.units - self.dp_units) * self.num_kb;
            let begin = if w * self.share < split { w * self.share } else { split };
            let end = if begin + self.share < split { begin + self.share } else { split };
            (begin, end)
        };
        Walk { sk: *self, worker: w, next_whole: w, odd_wave: false, begin, end }
    }
}

/// One piece of a worker's walk: K blocks `kb_begin..kb_end` of `unit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Work {
    pub unit: u32,
    pub kb_begin: u32,
    pub kb_end: u32,
    /// This worker holds the unit's last K block and stores the tile, after adding the partial
    /// sums of workers `wait_from..` itself (none when `wait_from` is this worker). Otherwise
    /// it leaves its sum in its workspace slot for the finisher.
    pub finishes: bool,
    pub wait_from: u32,
    /// Load the K blocks last to first: the whole units of odd waves do. A wave then begins
    /// with the K slices that the wave before it loaded last, which are still in L2 where
    /// they are shared (the A rows of a group, which consecutive waves keep).
    pub k_descending: bool,
}

/// The iterator [`StreamK::walk`] returns; the producer and the consumers of a worker walk it
/// in step.
#[derive(Clone, Copy, Debug)]
pub struct Walk {
    sk: StreamK,
    worker: u32,
    next_whole: u32,
    /// Whether the next whole unit is in an odd wave (a worker has one whole unit per wave).
    odd_wave: bool,
    /// What is left of the worker's share, as K blocks of the split units laid end to end.
    begin: u32,
    end: u32,
}

impl Iterator for Walk {
    type Item = Work;

    #[inline(always)]
    fn next(&mut self) -> Option<Work> {
        let sk = &self.sk;
        if self.next_whole < sk.dp_units {
            let (unit, k_descending) = (self.next_whole, self.odd_wave);
            self.next_whole += sk.workers;
            self.odd_wave = !self.odd_wave;
            return Some(Work {
                unit,
                kb_begin: 0,
                kb_end: sk.num_kb,
                finishes: true,
                wait_from: self.worker,
                k_descending,
            });
        }
        if self.begin >= self.end {
            return None;
        }
        let t = (self.end - 1) / sk.num_kb;
        let first = t * sk.num_kb;
        let start = if self.begin > first { self.begin } else { first };
        let (kb_begin, kb_end) = (start - first, self.end - first);
        self.end = start;
        let finishes = kb_end == sk.num_kb;
        let wait_from = if finishes { sk.holder(t, 0) } else { self.worker };
        Some(Work { unit: sk.dp_units + t, kb_begin, kb_end, finishes, wait_from, k_descending: false })
    }
}

impl Walk {
    /// Whether the walk has nothing left: the work item last returned was the worker's last.
    #[inline(always)]
    pub fn is_done(&self) -> bool {
        self.next_whole >= self.sk.dp_units && self.begin >= self.end
    }
}

/// Where a stream-K kernel's workspace keeps its ready flags (one per consumer warpgroup of
/// each CTA, at most [`Workspace::FLAGS`]), then the [`rendezvous`](Self::rendezvous)'s two
/// counters, and after them one partial tile per CTA of the grid (`partial_bytes`, f32). Flags
/// and counters are 0 between launches: a writer sets its flag to 1 and the finisher that reads
/// the partial clears it, and the last worker to leave the rendezvous clears its counters, so a
/// fresh workspace needs zeroing only once.
/// Every kernel finds the flags at the same place, whatever its grid and tile: kernels of
/// different shapes take turns on one stream's workspace, and one's partial sums must never lie
/// where another looks for flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workspace {
    pub partial_bytes: u32,
}

impl Workspace {
    pub const FLAGS: u32 = 4;
    /// The most CTAs a stream-K grid may have (the host clamps persistent grids to it).
    pub const MAX_CTAS: u32 = 1024;

    pub const fn flag(&self, cta: u32, i: u32) -> u64 {
        4 * (cta * Self::FLAGS + i) as u64
    }

    /// The rendezvous's counters: workers arrived, then workers departed (u32 each).
    pub const fn rendezvous(&self) -> u64 {
        4 * (Self::MAX_CTAS * Self::FLAGS) as u64
    }

    pub const fn partial(&self, cta: u32) -> u64 {
        // The counters take 8 bytes; the partial tiles stay 256-byte aligned.
        self.rendezvous() + 256 + cta as u64 * self.partial_bytes as u64
    }

    /// The size of a workspace for a grid of `ctas` CTAs.
    pub const fn bytes(&self, ctas: u32) -> u64 {
        self.partial(ctas)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;

    fn assert_each_tile_once(m: u32, n: u32, tm: u32, tn: u32, group: u32) {
        let s = TileScheduler::new(m, n, tm, tn, group);
        for order in [TileScheduler::tile, TileScheduler::tile_snaking] {
            let mut seen = vec![0u8; s.num_tiles() as usize];
            for idx in 0..s.num_tiles() {
                let (i, j) = order(&s, idx);
                assert!(i < s.tiles_m && j < s.tiles_n, "{m}x{n} tile {tm}x{tn} group {group}: idx {idx} -> ({i},{j})");
                seen[(i * s.tiles_n + j) as usize] += 1;
            }
            assert!(seen.iter().all(|&c| c == 1), "{m}x{n} tile {tm}x{tn} group {group}: {seen:?}");
        }
    }

    /// Every K block of every unit computed once; partial sums published before anyone waits
    /// on them, and only ever awaited by a later worker of the same unit.
    fn check_stream_k(units: u32, num_kb: u32, workers: u32) -> StreamK {
        check_schedule(StreamK::new(units, num_kb, workers))
    }

    fn check_schedule(sk: StreamK) -> StreamK {
        let (units, num_kb, workers) = (sk.units, sk.num_kb, sk.workers);
        let mut done = vec![0u8; (units * num_kb) as usize];
        // unit -> (worker, kb range) of each unfinished piece
        let mut partial: vec::Vec<Option<(u32, u32, u32)>> = vec![None; workers as usize];
        let mut finishers = vec::Vec::new();
        for w in 0..workers {
            let mut pieces = 0;
            for work in sk.walk(w) {
                assert!(work.kb_begin < work.kb_end && work.kb_end <= num_kb && work.unit < units, "{sk:?} {work:?}");
                for kb in work.kb_begin..work.kb_end {
                    done[(work.unit * num_kb + kb) as usize] += 1;
                }
                if work.finishes {
                    assert_eq!(work.kb_end, num_kb);
                    assert!(work.wait_from <= w);
                    assert_eq!(work.wait_from == w, work.kb_begin == 0, "{sk:?} w{w} {work:?}");
                    finishers.push((w, work));
                } else {
                    // The one unfinished piece is the first thing after the whole units.
                    assert!(partial[w as usize].is_none() && work.unit >= sk.dp_units, "{sk:?} w{w} {work:?}");
                    assert_eq!(pieces, 0, "{sk:?} w{w}: unfinished piece after another piece");
                    partial[w as usize] = Some((work.unit, work.kb_begin, work.kb_end));
                }
                if work.unit >= sk.dp_units {
                    pieces += 1;
                }
            }
        }
        assert!(done.iter().all(|&d| d == 1), "{sk:?}");
        let mut consumed = vec![false; workers as usize];
        for (w, work) in finishers {
            // The earlier workers' pieces of this unit tile 0..kb_begin in order.
            let mut kb = 0;
            for from in work.wait_from..w {
                let (unit, b, e) = partial[from as usize]
                    .unwrap_or_else(|| panic!("{sk:?}: w{w} waits on w{from}, which left nothing"));
                assert_eq!((unit, b), (work.unit, kb), "{sk:?} w{w} {work:?} from w{from}");
                assert!(!consumed[from as usize]);
                consumed[from as usize] = true;
                kb = e;
            }
            assert_eq!(kb, work.kb_begin, "{sk:?} w{w} {work:?}");
        }
        assert!(partial.iter().zip(&consumed).all(|(p, &c)| p.is_none() || c), "{sk:?}: a partial sum nobody adds");
        sk
    }

    #[test]
    fn stream_k_covers_every_block_once_and_waits_only_backwards() {
        for &units in &[1, 2, 5, 6, 64, 65, 66, 67, 100, 128, 131, 132, 133, 200, 1024, 2016] {
            for &kb in &[1, 2, 7, 8, 16, 32, 33, 128, 448] {
                for &workers in &[1, 2, 3, 7, 64, 66, 132] {
                    check_stream_k(units, kb, workers);
                    check_schedule(StreamK::spread(units, kb, workers));
                }
            }
        }
    }

    #[test]
    fn snaking_reverses_n_in_odd_groups_only() {
        // 20 tile-rows in groups of 8 (the last one 4 rows), 5 tile-columns.
        let s = TileScheduler::new(20 * 128, 5 * 256, 128, 256, 8);
        for idx in 0..s.num_tiles() {
            let ((i, j), (si, sj)) = (s.tile(idx), s.tile_snaking(idx));
            assert_eq!(si, i);
            assert_eq!(sj, if (i / 8) % 2 == 1 { 4 - j } else { j }, "idx {idx}");
        }
        // Where one group ends, the next begins in the same tile column.
        assert_eq!(s.tile_snaking(8 * 5 - 1), (7, 4));
        assert_eq!(s.tile_snaking(8 * 5), (8, 4));
        assert_eq!(s.tile_snaking(2 * 8 * 5 - 1), (15, 0));
        assert_eq!(s.tile_snaking(2 * 8 * 5), (16, 0));
    }

    #[test]
    fn k_descends_in_odd_waves_of_whole_units_only() {
        // 8192³ in pairs: waves 0..14 whole, then 100 units split.
        for sk in [check_stream_k(1024, 128, 66), StreamK::whole(200, 64, 66), StreamK::whole(1000, 8, 1)] {
            for w in 0..sk.workers {
                for work in sk.walk(w) {
                    let wave = work.unit / sk.workers;
                    assert_eq!(work.k_descending, work.unit < sk.dp_units && wave % 2 == 1, "{sk:?} w{w} {work:?}");
                }
            }
        }
    }

    #[test]
    fn every_rendezvous_is_met() {
        // A worker arrives after each of its first `waves` items and waits before items
        // 1..=waves for `workers * j` arrivals: every worker must have `waves` whole units first.
        for &(units, kb, workers) in
            &[(1024, 128, 66), (4096, 256, 66), (144, 47, 66), (200, 64, 66), (6, 128, 66), (67, 4, 66), (5, 3, 1)]
        {
            let sk = check_stream_k(units, kb, workers);
            let waves = sk.waves_in_step();
            for w in 0..workers {
                let walk: vec::Vec<Work> = sk.walk(w).collect();
                assert!(walk.len() as u32 >= waves, "{sk:?} w{w}");
                for (j, work) in walk.iter().take(waves as usize).enumerate() {
                    assert_eq!(
                        (work.unit, work.kb_begin, work.kb_end),
                        (w + j as u32 * workers, 0, kb),
                        "{sk:?} w{w} item {j}"
                    );
                }
            }
        }
        assert_eq!(
            check_stream_k(1024, 128, 66).waves_in_step(),
            14,
            "8192³: the split 1.5 waves are not kept in step"
        );
    }

    #[test]
    fn stream_k_only_where_it_shortens_the_path() {
        // 8192³, 128×256 tiles in pairs: 1024 units on 66 pairs is 15.5 waves. The last 1.5
        // waves are split: each pair takes 1.52 units' worth instead of 2.
        let sk = check_stream_k(1024, 128, 66);
        assert_eq!((sk.dp_units, sk.share), (14 * 66, 194), "100 units × 128 blocks over 66 pairs");
        // Whole waves, or too little work per worker to repay the fix-up: nothing split.
        assert!(!check_stream_k(1056, 128, 66).splits());
        assert!(!check_stream_k(64, 32, 66).splits(), "2048³: 64 units of 32 blocks fit one wave");
        assert!(!check_stream_k(67, 4, 66).splits());
        assert!(!check_stream_k(128, 128, 66).splits(), "between one and two waves");
        // Where the last whole wave may not be split, the incomplete wave alone is: 6144³ is
        // 576 units of 96 blocks, 8.7 waves; 4096×11008×4096 688 units of 64 blocks, 10.4.
        let sk = check_stream_k(576, 96, 66);
        assert_eq!((sk.dp_units, sk.share), (8 * 66, 70), "6144³: 48 units × 96 blocks over 66 pairs");
        let sk = check_stream_k(688, 64, 66);
        assert_eq!((sk.dp_units, sk.share), (10 * 66, 28));
        // Not where it would lengthen the path: 4096³ (3.9 waves) split after three waves takes
        // 192 + 57 + 8 blocks, whole units 256; after two, half the work would be split.
        assert!(!check_stream_k(256, 64, 66).splits());
        // Unless whole units would leave many workers idle: 3000³ is 144 units, 2.2 waves.
        let sk = check_stream_k(144, 47, 66);
        assert_eq!((sk.dp_units, sk.share), (66, 56), "one wave whole, then 78 units × 47 blocks over 66");
        assert!(check_stream_k(80, 64, 66).splits(), "1.2 waves");
        assert!(!check_stream_k(1000, 1000, 1).splits());
        // Fewer units than workers and a deep K: split-K in effect, each unit in pieces as deep
        // as √(THIN_FIXUP_KB × 128) = 32 blocks, where the pieces and their fix-ups balance,
        // not spread thinner over all 66 workers (12 blocks and 11 fix-ups each).
        let sk = check_stream_k(6, 128, 66);
        assert_eq!((sk.dp_units, sk.share), (0, 32));
        // 179×128×16320 in 64×96 pairs: two units of 255 blocks, in pieces of 45 instead of
        // whole on two pairs (0.26× cuBLAS whole, 0.63× split; H100, 2026-12-07).
        let sk = check_stream_k(2, 255, 66);
        assert_eq!((sk.dp_units, sk.share), (0, 45));
        // Not where it wins only by what fix-ups of FIXUP_KB count: 256×1664×2048 in slim pairs,
        // 26 units of 32 blocks, would be 13 + 3 × 4 = 25 against 32, but 13 + 3 × 8 = 37.
        assert!(!check_stream_k(26, 32, 66).splits());
    }

    #[test]
    fn spread_splits_every_unit_where_that_shortens_the_path() {
        // 448 thin tiles of 64 blocks on 132 SMs: every unit split, where `new` keeps two waves.
        let kept = StreamK::new(448, 64, 132);
        assert_eq!((kept.dp_units, kept.share), (264, 90));
        let sk = check_schedule(StreamK::spread(448, 64, 132));
        assert_eq!((sk.dp_units, sk.share), (0, 218));
        // The path is the same, 222 blocks: what the thin tile gained is not in the model.
        assert_eq!(sk.path(), kept.path());
        // Past the eighth-of-the-work rule, which is about tiles that share L2 in step: 1000
        // units, where `new` splits the incomplete wave alone.
        assert_eq!(StreamK::new(1000, 64, 132).dp_units, 7 * 132);
        assert_eq!(check_schedule(StreamK::spread(1000, 64, 132)).dp_units, 0);
        // Whole waves stay whole; where splitting everything is no shorter (1.9 waves: 125
        // blocks and a fix-up against 128), `new`'s schedule.
        assert!(!StreamK::spread(264, 64, 132).splits());
        assert_eq!(StreamK::spread(256, 64, 132), StreamK::new(256, 64, 132));
        assert!(!StreamK::spread(256, 64, 132).splits());
    }

    #[test]
    fn workspace_flags_sit_where_no_kernel_keeps_partial_sums() {
        // Kernels of different tiles share one stream's workspace: every flag of every grid lies
        // before every partial tile of every other.
        let wide = Workspace { partial_bytes: 2 * 64 * 256 * 4 };
        let slim = Workspace { partial_bytes: 64 * 128 * 4 };
        let last_flag = slim.flag(Workspace::MAX_CTAS - 1, Workspace::FLAGS - 1) + 4;
        assert!(last_flag <= wide.rendezvous() && wide.rendezvous() == slim.rendezvous());
        assert!(wide.rendezvous() + 8 <= wide.partial(0) && wide.rendezvous() + 8 <= slim.partial(0));
        assert_eq!(wide.flag(3, 1), slim.flag(3, 1));
        assert_eq!(wide.partial(1) - wide.partial(0), 131072);
        assert_eq!(wide.bytes(132), wide.partial(132));
        assert_eq!(wide.partial(0) % 256, 0);
    }

    #[test]
    fn every_tile_exactly_once() {
        for &(m, n) in &[
            (1, 1),
            (128, 256),
            (129, 257),
            (8192, 8192),
            (8000, 8000),
            (128, 8192),
            (8192, 1024),
            (1000, 3),
            (3, 1000),
            (4096, 14336),
            (777, 12345),
        ] {
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
