//! How `auto` picks a kernel: a price per entry (waves of tiles over the SMs, weighted by each
//! tile shape's throughput as measured on an H200) and a few rules that take a call from the
//! cheapest entry where the price alone was measured to pick wrong. Plain Rust, no GPU.

use crate::op::GemmOp;
use crate::plan::{LaunchShape, for_kernel, launch_offline, persistent_clusters, refusal};
use hgemm_kernels::sched::StreamK;
use hgemm_kernels::spec::KernelSpec;

/// The kernel `auto` runs for `op` on a device with `sms` SMs: among the general kernels that
/// read A and B in `op`'s orders (in the form each computes it, [`for_kernel`]), the one whose
/// tiles take the least time, counting waves of tiles over the SMs and the work of one tile
/// relative to the widest (scaled by how efficient the shape measured); see [`price`].
pub fn choose<'a>(kernels: impl Iterator<Item = &'a KernelSpec>, op: &GemmOp, sms: u32) -> Option<&'a KernelSpec> {
    choose_why(kernels, op, sms).map(|(spec, _)| spec)
}

/// A rule of [`choose`] that takes a call from the cheapest entry, where the price alone was
/// measured to pick wrong; each one's comment in `choose_why` gives the measurements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// One whole wave of square pairs in one column gives way to whole twin pairs in one row
    /// priced within `ONE_COLUMN_SQUARE`.
    OneColumnSquare,
    /// The wide tile trimmed in many columns gives way to whole square pairs priced within
    /// `WIDE_TRIM_SQUARE`.
    WideTrimSquare,
    /// The wide tile with its last column at least half empty gives way to whole square pairs
    /// priced within `WIDE_HALF_EMPTY_SQUARE`.
    WideHalfEmptySquare,
    /// Square pairs split with fewer units than pairs give way to whole waves priced within
    /// `THIN_SQUARE_SPLIT`.
    ThinSquareSplit,
}

impl Rule {
    /// Every rule, in the order `choose` tries them.
    pub const ALL: [Rule; 4] =
        [Rule::OneColumnSquare, Rule::WideTrimSquare, Rule::WideHalfEmptySquare, Rule::ThinSquareSplit];

    /// The name of the rule's bound in `op.rs`, which `hgemm plan --why` prints.
    pub fn name(self) -> &'static str {
        match self {
            Rule::OneColumnSquare => "ONE_COLUMN_SQUARE",
            Rule::WideTrimSquare => "WIDE_TRIM_SQUARE",
            Rule::WideHalfEmptySquare => "WIDE_HALF_EMPTY_SQUARE",
            Rule::ThinSquareSplit => "THIN_SQUARE_SPLIT",
        }
    }

    /// How much dearer the entry the rule prefers may be priced and still take the call.
    fn bound(self) -> f64 {
        match self {
            Rule::OneColumnSquare => ONE_COLUMN_SQUARE,
            Rule::WideTrimSquare => WIDE_TRIM_SQUARE,
            Rule::WideHalfEmptySquare => WIDE_HALF_EMPTY_SQUARE,
            Rule::ThinSquareSplit => THIN_SQUARE_SPLIT,
        }
    }
}

/// [`choose`]'s pick, and the rule that took the call from the cheapest eligible entry, if one did.
pub fn choose_why<'a>(
    kernels: impl Iterator<Item = &'a KernelSpec>,
    op: &GemmOp,
    sms: u32,
) -> Option<(&'a KernelSpec, Option<Rule>)> {
    // The cheapest candidate, the cheapest that runs whole units only, the cheapest whole square
    // pairs and the cheapest whole twin pairs in one row.
    let cheaper = |a: Option<Priced<'a>>, c: Priced<'a>| match a {
        Some(a)
            if a.cost
                .total_cmp(&c.cost)
                .then(a.twin_on_smaller.cmp(&c.twin_on_smaller))
                .then(a.shorter_m.cmp(&c.shorter_m))
                .is_le() =>
        {
            Some(a)
        }
        _ => Some(c),
    };
    let (best, best_whole, square_whole, one_row_twin_whole) = price(kernels, op, sms).filter(|c| c.eligible).fold(
        (None, None, None, None),
        |(best, whole, square, twin), c| {
            let square = if c.whole && c.square { cheaper(square, c) } else { square };
            let twin = if c.whole && c.one_row_twin { cheaper(twin, c) } else { twin };
            (cheaper(best, c), if c.whole { cheaper(whole, c) } else { whole }, square, twin)
        },
    );
    let best = best?;
    // One whole wave of square pairs in one column of tiles gives way to whole twin pairs in one
    // row (the same call in the other form) priced within `ONE_COLUMN_SQUARE` of it (twenty-ninth
    // session, forced, two rounds: the twins faster in both at all 11 such shapes measured, by
    // 0.6–5.5%: 14336×128×4096 twin112 0.98× cuBLAS against 0.93×, 12800×128×2048 0.99×
    // against 0.94×, 13056×128×1024 1.08× against 1.03×). The square pairs leave 10–16 of 66
    // pairs idle where the twins fill 128–132 SMs with tiles 112 wide; in two waves
    // (28672×128×1024) the twins were not faster (1.04× against 1.05×). Measured again after the
    // thirty-second session's epilogue fix (thirty-fourth session, 16 of its 49 moves, forced,
    // two rounds): the twins faster in 31 of the 32 readings, by 5.3% at K = 4096 and 8192 and
    // 1.1–1.4% at K = 1024 and 2048; kept. (With M or N of 128–32768 and the other of 64–256,
    // no bound up to 1.10 adds a move: one wave in one column is what limits it.)
    if let Some(twin) = one_row_twin_whole.filter(|t| {
        best.whole && best.square && best.one_wave_in_one_column && t.cost <= best.cost * Rule::OneColumnSquare.bound()
    }) {
        return Some((twin.spec, Some(Rule::OneColumnSquare)));
    }
    // The wide tile trimmed in many columns gives way to whole waves of square pairs priced
    // within `WIDE_TRIM_SQUARE` of it (twenty-eighth session, forced, two rounds: faster in both
    // at 19 of the 20 such shapes measured, by 0.3–5.5%, the rounds split at 4864×2176×16384:
    // 4864×2176×4096 0.98× cuBLAS against 0.94–0.95×, 3584×2944×4096 0.96–0.97× against
    // 0.92–0.93×, 5504×1920×8192 0.95× against 0.92×). Three of its whole waves there cost what
    // five of square pairs do; against the wide tile split it won wherever it was measured
    // (twenty-seventh session; at 8 of these 20, 0.92–1.01× against 0.87–0.97×). Measured
    // again after the thirty-second session's epilogue fix (30 of the fine grid's 33 moves have
    // the trimmed tile's last column partly empty), forced, two rounds: level, geometric mean
    // 1.002× (faster in both at 11, slower in both at 11; per shape 0.98–1.03×); kept.
    //
    // The wide tile, whole or split, where its last column of tiles is at least half empty,
    // gives way to whole waves of square pairs priced within `WIDE_HALF_EMPTY_SQUARE` of it
    // (thirty-first session, forced, two rounds). Against the wide tile split: faster in both at
    // 59 of the 79 such shapes measured, by up to 27%, slower in both at 3, by 1–2.4%, geometric
    // mean 1.042× (6016×1664×1024 1.25× the wide tile's speed, 6400×2688×2048 1.12×,
    // 7808×2176×4096 1.06×). Against the wide tile whole, at all 16 such shapes of the fine grid:
    // faster in both at 13, slower at 3, by 1.5–3.5%, geometric mean 1.036× (7552×1408×1024
    // 1.08–1.10×), and at all 4 of `hgemm plan`'s grids by 14–22% in three rounds
    // (28672×896×1024); priced 6–10% apart, the square pairs lost at 8 of 12. `price` counts
    // the empty half as work, and still the wide tile ran slower than priced, part of it a
    // fixed cost of every tile of a partly empty column that v7 no longer pays (thirty-second
    // session, 8447cd4). Measured again after that fix, two rounds: against the wide tile split
    // +2.2% over 40 of the moves (faster in both at 17, slower in both at 3); against it whole
    // −0.7% over the fine grid's 16, +0.4–5% over the grids' 4. Where N takes whole wide tiles
    // the comparison with the wide tile split was level (35 shapes, 0.95–1.05×): no rule there.
    if let Some(rule) = best.square_whole_within
        && let Some(sq) = square_whole.filter(|sq| sq.cost <= best.cost * rule.bound())
    {
        return Some((sq.spec, Some(rule)));
    }
    // Square pairs split with fewer units than pairs give way to whole waves priced within
    // `THIN_SQUARE_SPLIT` of them (twenty-sixth session, forced, two rounds: 3072×384×4096 trim
    // tiles written column-major 0.95× cuBLAS against 0.82×, 11008×128×4096 lean tiles written
    // column-major 0.97× against 0.85×, 256×4096×11008 slim pairs 1.02× against 0.93–0.97×,
    // 13824×128×4096 twin pairs 0.97× against 0.89×; faster in both rounds at all 14 of the 20
    // shapes of `hgemm plan`'s grids this moves that were measured, by 2–15%, the other six
    // their transposes or the same at another K). Against other split schedules square pairs
    // are priced about right: 10% dearer, they went to other splits that lost at 10 of 18.
    match best_whole {
        Some(w) if best.thin_square_split && w.cost <= best.cost * Rule::ThinSquareSplit.bound() => {
            Some((w.spec, Some(Rule::ThinSquareSplit)))
        }
        _ => Some((best.spec, None)),
    }
}

/// How [`choose`] weighs one entry for a call (`hgemm plan --why` prints them).
#[derive(Clone, Copy, Debug)]
pub struct Priced<'a> {
    /// The entry.
    pub spec: &'a KernelSpec,
    /// The time the entry's tiles take, in waves of 128×256 tiles at their measured rate: the
    /// lowest wins, but for the rules in [`choose`].
    pub cost: f64,
    /// Its stream-K schedule for the call in its form, if it has one.
    pub schedule: Option<StreamK>,
    /// Whether `choose` may take it; where not, the tiles it would run here were not measured to
    /// pay (a tile without a cluster in several rows and columns, or more columns of tiles than
    /// were measured: see the comments in `price`).
    pub eligible: bool,
    /// Ties between the lean tile and its column-major form go to the smaller (see `price`).
    shorter_m: usize,
    /// Twin pairs sharing the smaller operand: ties go to the pairs sharing the larger (see
    /// `price`).
    twin_on_smaller: bool,
    /// Its schedule runs every unit whole.
    whole: bool,
    /// Square pairs split with fewer units than pairs.
    thin_square_split: bool,
    /// Square pairs.
    square: bool,
    /// Its tiles make one column (N within a tile, in its form) and at most one wave.
    one_wave_in_one_column: bool,
    /// Twin pairs in one row of pairs (see `price`).
    one_row_twin: bool,
    /// The rule by which whole square pairs may take the call from it: the wide tile trimmed in
    /// five columns of tiles or more, or the wide tile with its last column at least half empty
    /// (see `choose`).
    square_whole_within: Option<Rule>,
}

/// Every general entry that can compute `op` (in its form, [`for_kernel`]) on a device with `sms`
/// SMs, with its price and whether [`choose`] may take it.
pub fn price<'a, 'b>(
    kernels: impl Iterator<Item = &'a KernelSpec> + 'b,
    op: &'b GemmOp,
    sms: u32,
) -> impl Iterator<Item = Priced<'a>> + 'b {
    // `op` is the call in `s`'s form, `sched` its schedule.
    let cost = move |s: &KernelSpec, op: &GemmOp, sched: Option<StreamK>| {
        let area = (s.tile_m * s.tile_n) as f64 / (128.0 * 256.0);
        let args = op.shape_args();
        let waves = match sched.filter(|_| op.stream_k) {
            // With stream-K the last wave may be split: count it in K blocks, and the split part
            // of the path (past the whole waves) 10% longer than it is (split units lose their
            // L2 reuse and wait for fix-ups: on the H200, split 128×256 tiles that the path put
            // up to 4% ahead of whole 128×192 ones ran 2–6% behind them at 3000³, 3072³,
            // 1536×6144×4096 and 768×8192×8192). The whole waves before it pay nothing: 6% of
            // the whole path kept the mid tile whole where seven waves of wide tiles and a split
            // one ran 2–5% faster (2048×15360×4096, 3584×15360×8192; thirtieth session).
            Some(sk) if sk.num_kb > 0 => {
                let (whole, path) = (sk.waves_in_step() as f64, sk.path() as f64 / sk.num_kb as f64);
                whole + (path - whole) * if sk.splits() { SPLIT_PENALTY } else { 1.0 }
            }
            _ => {
                let tiles =
                    s.scheduler(op.m as u32, op.n as u32).num_tiles() as u64 * s.cluster as u64 * op.batch as u64;
                tiles.div_ceil(sms as u64) as f64
            }
        };
        // Between tiles the tensor cores wait for the epilogue, unless the kernel holds the
        // finished tile and stores it under the next one's MMAs. The efficiencies include the
        // epilogue's share at the K they were fitted at; only a larger share (a shorter K) counts.
        let between_tiles = match s.stream_k.map_or(0, |sk| args.k.div_ceil(sk.block_k)) {
            kb if kb > 0 && !s.holds_tile => 1.0 + EPILOGUE_KB * (1.0 / kb as f64 - 1.0 / CALIBRATED_KB).max(0.0),
            _ => 1.0,
        };
        // The trim tile side by side runs faster than its one-column rate says: 1.03 of it picks
        // it where it was measured against the slim pairs `auto` ran (twenty-second session:
        // 1024×320×8192 0.94–1.04× cuBLAS against 0.83–0.86×, 1024×288×8192 0.99× against 0.89×)
        // and moves nothing else of `hgemm plan`'s grid but their transposes; 1.05 would take
        // 3000×320×8192 from the mid tile trimmed, not measured.
        let side_by_side = match ((s.tile_m, s.tile_n), columns_of_tiles(s, op)) {
            (TRIM, 2..) => TRIM_SIDE_BY_SIDE,
            (MID_TRIM, 5..) => MID_TRIM_MANY_COLUMNS,
            _ => 1.0,
        };
        // Twin pairs in one row of pairs read each operand once, as lean pairs do there, so
        // they share nothing the lean pairs do not (`ONE_ROW_TWIN`).
        let rate = if one_row_of_twins(s, op) { ONE_ROW_TWIN } else { tile_efficiency(s) };
        waves * between_tiles * area / (rate * side_by_side)
    };
    // A call `validate` refuses whatever the buffers, or one with nothing to compute, has no
    // kernel; nor has a kernel whose cluster is larger than the device.
    let valid = sms > 0 && op.validate_shape() == Ok(true);
    kernels.filter(move |s| valid && s.cluster <= sms).filter_map(move |s| {
        let kop = for_kernel(s, op).0;
        if !s.general || refusal(s, &kop).is_some() {
            return None;
        }
        // A tile without a cluster reads all of its operands itself: where M takes more than
        // one row of them and N more than one column, pairs sharing one (B, or A for the
        // twins) win even with half their tiles idle (96×8192×8192 on the H200: 0.64× cuBLAS
        // for 64×64 tiles, 0.93× for pairs of 64×128). With one column, B is a few rows that
        // every tile reads from L2.
        let shares = s.cluster > 1 || kop.m as u32 <= s.tile_m || kop.n as u32 <= s.tile_n;
        // On a tie between the lean tile and its column-major form, the form of the call
        // whose M (the side pairs stack along) is the shorter: measured 3.6–8% faster at
        // 4096×288…384×4096 and 2048×768×4096 (twelfth session), as at 1536×1024×4096 and
        // 3072×512×4096 (ninth). For the mid tile the same measurements found no such rule
        // (from −1.4% to +6%), so its ties keep the first entry.
        let shorter_m = if (s.tile_m, s.tile_n) == LEAN { kop.m } else { 0 };
        // Tiles that boxes do not divide run side by side only as far as that was measured
        // (twenty-second session): the trimmed tiles in two columns; not the 64×96 pair
        // (8192×192×8192: 0.72× cuBLAS in two columns against 0.88× for lean tiles). The
        // 160-column tiles also in four (N of 481–640, which the cost takes from 513), where
        // they beat what `auto` ran before at 26 of 28 shapes, by up to 18% (twenty-third
        // session: the mid tile trimmed at 8192×600×8192 0.90× against 0.78× for square
        // pairs, 600×8192×8192 0.91× against 0.77× for mid tiles; the trim tile at
        // 2048×640×4096 0.95× against 0.86× for square pairs): the trim tile only where that
        // is one wave of whole tiles, as at M = 2048, the only M it was measured at; the mid
        // tile trimmed not in three, which lost at 6 of 7 (8192×480×8192: 0.89× against 0.92×
        // for wide tiles).
        //
        // Twin pairs in several columns of pairs wherever they fill at most one wave, share the
        // larger operand, and, split by K, give each pair at least half a unit (within a K
        // block), so that no unit is cut in three. Twenty-fifth session, forced against what
        // `auto` ran: 4096×448×4096 1.02× cuBLAS against 0.88× for square pairs,
        // 384×4096×4096 1.00× against 0.91× for lean tiles, 4096×320×8192 0.99× against 0.87×
        // for trim tiles, 1024×640×4096, split, 0.96× against 0.81× for slim pairs; of the 55
        // shapes measured that this takes, faster in both rounds at 44, slower in both at 4
        // (3072×448×4096, split, 0.92× against 0.96× for lean tiles, whole; 768×1024×8192
        // −1%). Shares under half a unit lost at 4 of 7 (1024×448×4096 0.82× against 0.91×
        // for slim pairs). In two waves, pairs along M of tiles twice the size fill one
        // (8192×320×8192: 0.97× against 1.02× for the mid tile trimmed); where A is the
        // smaller operand, the pair would share the one that stays in L2, except in one row of
        // pairs (M ≤ 128 in the kernel's form), where every tile reads each operand once:
        // there twins as large as the lean tile or larger run wherever their units are whole,
        // at `ONE_ROW_TWIN` (cuBLAS's design at 128×14336×4096, `…_112x128_64x7_2x1`:
        // twin112 1.02× against split lean pairs' 0.92×, 14336×128×4096 1.00× against split
        // square pairs' 0.90×, 128×28672×8192 1.00× against 0.98×; the 80-wide twin was not
        // measured there).
        //
        // The 160-column tiles also in five columns or more, where they make at most two waves
        // of whole tiles at a K no shorter than the rates were fitted at (twenty-sixth
        // session, forced against what `auto` ran, two rounds: 512×5120×8192 1.02× cuBLAS
        // against 0.92× for wide tiles split, 10240×256×4096 0.98× against 0.83× for square
        // pairs split, 256×5120×4096 0.97× against 0.88× for the same, as trim tiles; faster
        // in both rounds at 38 of 39 shapes at K ≥ 4096, level at 896×2560×8192). At
        // K = 1024 they lost at 3 of 6 (640×3072×1024: 0.82–0.85× against slim pairs'
        // 0.97–1.02×).
        //
        // Twin pairs also where they share the smaller operand, if they fill one whole wave, the
        // other side is at most 1.5 times theirs and K is as deep as the rates were fitted at
        // (twenty-seventh session, found by `Gemm::tune`, then forced against what `auto` ran,
        // two rounds: 1024×1280×8192 twin80 0.97–0.98× cuBLAS against 0.90–0.91× for trim
        // tiles, 1280×1024×4096 0.96–0.97× against 0.87–0.88×, 1024×1536×4096 twin96 0.99×
        // against lean tiles' 0.93×; faster in both rounds at all 8 such shapes at K of 4096 and
        // 8192, by 3–10%). At K = 1024 they lost at 1 of 4 and split the rounds at another
        // (1024×1536×1024 1.12–1.26× against 1.32–1.34×). Where the same twins sharing the
        // larger operand are priced as low, those run (`Priced::twin_on_smaller`): of the
        // fine grid's moves measured in the twenty-eighth session, the five from twins sharing
        // the larger operand to the same twins sharing the smaller lost in both rounds, by 1–11%
        // (1024×1152×4096 twin80 1.00–1.05× cuBLAS against 1.12–1.13×, 1152×1280×4096 twin96
        // 0.98× against 1.06×), where the five from square pairs won (1536×1152×4096 twin112
        // 1.00× against 0.87×).
        //
        // The wide tile trimmed also in five columns or more, where it makes at most three
        // whole waves at that depth (twenty-seventh session, the same method: 512×7168×4096
        // 1.00–1.03× against 0.89× for mid tiles, 14336×256×4096 1.07× against 0.92–0.93×,
        // 256×28672×4096 1.05× against wide tiles split, 1.00×; faster in both rounds at all 46
        // shapes of `hgemm plan`'s grids this moves, by 0.2–16%, geometric mean 0.957× → 1.029×).
        // Without the wave bound it would also take shapes of many waves from the wide tile,
        // such as 12288³, where tuning finds the wide tile faster; with fewer than two rows of
        // tiles (M of 129–255, measured from 256) it would take 14336×208×4096 from the one
        // column of the same tile the thirteenth session measured.
        // The workers the launch would get (`persistent_clusters`: at most the workspace's CTAs).
        let sched = s.schedule(&kop.shape_args(), persistent_clusters(s, sms / s.cluster));
        let whole = |sk: &StreamK| !(kop.stream_k && sk.splits());
        let one_wave = sched.filter(|sk| sk.units <= sk.workers);
        let one_whole_wave = one_wave.is_some_and(|sk| whole(&sk));
        let one_wave_in_halves = one_wave.is_some_and(|sk| whole(&sk) || sk.share + 1 >= sk.num_kb.div_ceil(2));
        let calibrated_k = sched.is_some_and(|sk| sk.num_kb as f64 >= CALIBRATED_KB);
        let up_to_waves = |n: u32| sched.is_some_and(|sk| whole(&sk) && sk.units <= n * sk.workers) && calibrated_k;
        let (up_to_two_whole_waves, up_to_three_whole_waves) = (up_to_waves(2), up_to_waves(3));
        let twins_share_the_smaller_operand = kop.m < kop.n;
        let tile_columns = columns_of_tiles(s, &kop);
        let square = (s.tile_m, s.tile_n) == SQUARE;
        let one_row_twin = one_row_of_twins(s, &kop);
        let columns = match tile_columns {
            _ if one_row_twin => s.tile_m * s.tile_n >= LEAN.0 * LEAN.1 && sched.is_some_and(|sk| whole(&sk)),
            _ if s.cluster_along_n => {
                kop.n <= s.unit_n() as usize
                    || (kop.m >= kop.n && one_wave_in_halves)
                    || (twins_share_the_smaller_operand && one_whole_wave && 2 * kop.n <= 3 * kop.m && calibrated_k)
            }
            _ if !s.shifted_last_box() => true,
            1 => true,
            2 => (s.tile_m, s.tile_n) != NARROW96,
            4 => (s.tile_m, s.tile_n) == MID_TRIM || ((s.tile_m, s.tile_n) == TRIM && one_whole_wave),
            5.. => match (s.tile_m, s.tile_n) {
                MID_TRIM | TRIM => up_to_two_whole_waves,
                WIDE_TRIM => up_to_three_whole_waves && kop.m >= 2 * s.tile_m as usize,
                _ => false,
            },
            _ => false,
        };
        Some(Priced {
            spec: s,
            cost: cost(s, &kop, sched),
            schedule: sched,
            eligible: shares && columns,
            shorter_m,
            twin_on_smaller: s.cluster_along_n && twins_share_the_smaller_operand,
            whole: sched.is_none_or(|sk| whole(&sk)),
            thin_square_split: square && sched.is_some_and(|sk| !whole(&sk) && sk.units < sk.workers),
            square,
            one_wave_in_one_column: tile_columns == 1 && one_wave.is_some(),
            one_row_twin,
            square_whole_within: match (s.tile_m, s.tile_n) {
                WIDE_TRIM if tile_columns >= 5 => Some(Rule::WideTrimSquare),
                WIDE if kop.n.div_ceil(SQUARE.1 as usize) < 2 * tile_columns => Some(Rule::WideHalfEmptySquare),
                _ => None,
            },
        })
    })
}

/// How many columns of `spec`'s tiles cover `op` (in its form).
fn columns_of_tiles(spec: &KernelSpec, op: &GemmOp) -> usize {
    op.n.div_ceil(spec.tile_n as usize)
}

/// Whether `spec` computes `op` (in its form) as twin pairs in one row of pairs and several
/// columns, where every tile reads each operand once (see `choose`).
fn one_row_of_twins(spec: &KernelSpec, op: &GemmOp) -> bool {
    spec.cluster_along_n && op.m <= spec.tile_m as usize && op.n > spec.unit_n() as usize
}

/// What the split part of a stream-K schedule's path costs beyond its length, as a factor (see
/// `price`).
const SPLIT_PENALTY: f64 = 1.10;
/// How much dearer whole waves may be priced and still take a call from square pairs split with
/// fewer units than pairs (see `choose`): the measured whole entries were priced 1.2–5.6% above
/// the split and ran 2–15% faster.
const THIN_SQUARE_SPLIT: f64 = 1.06;
/// How much dearer whole twin pairs in one row may be priced and still take a call from whole
/// square pairs in one column (see `choose`): they were priced 2.3% above and ran 0.6–5.5% faster.
const ONE_COLUMN_SQUARE: f64 = 1.03;
/// The square tile's shape.
const SQUARE: (u32, u32) = (128, 128);
/// The wide tile's shape.
const WIDE: (u32, u32) = (128, 256);
/// How much dearer whole waves of square pairs may be priced and still take a call from the wide
/// tile with a half-empty last column (see `choose`): the measured ones were priced up to 5%
/// dearer, and ran 0.97–1.27× as fast (0.93–1.11× after the thirty-second session's fix).
const WIDE_HALF_EMPTY_SQUARE: f64 = 1.05;
/// How much dearer whole waves of square pairs may be priced and still take a call from the wide
/// tile trimmed in many columns (see `choose`): where they met, the square pairs were priced
/// 0.5% dearer and ran up to 5.5% faster.
const WIDE_TRIM_SQUARE: f64 = 1.01;

/// A tile's epilogue, in K blocks (64 deep) of its MMAs (see `choose`): the 128×256 tile's took
/// 1.7% of 8192³ (128 blocks) and 4% of 4096³ and 6144³ (64 and 96) before it was held, 2.2–2.6
/// blocks. With it, `auto` takes held 128×256 tiles over 128×192 ones at large M and N and K of
/// 512–2048, and nowhere else (8192×8192×1024: 1.035× cuBLAS against 0.951×, ×2048 1.031×
/// against 0.990×, fifteenth session).
const EPILOGUE_KB: f64 = 2.0;
/// The shortest K, in blocks, of the measurements `tile_efficiency` was fitted to (3000³,
/// 3072³): each efficiency already includes the epilogue's share at that depth or deeper.
const CALIBRATED_KB: f64 = 48.0;

/// The lean tile's shape (`tile_m`, `tile_n`): `choose` rates it, and breaks its ties.
const LEAN: (u32, u32) = (64, 192);
/// The trim tile, the lean one 160 columns wide.
const TRIM: (u32, u32) = (64, 160);
/// The trim tile's rate in two columns of tiles, relative to one (see `choose`).
const TRIM_SIDE_BY_SIDE: f64 = 1.03;
/// The mid tile trimmed to 160 columns.
const MID_TRIM: (u32, u32) = (128, 160);
/// The mid tile trimmed's rate in five columns of tiles or more, relative to one (see `choose`):
/// two waves of them beat wide tiles split by more than the two rates say (twenty-sixth
/// session: 1024×5120×5120 0.97× cuBLAS against 0.91×, 512×10240×8192 0.98× against 0.945×,
/// 2048×1280×8192 0.98–1.00× against 0.88×). 1.05 takes those; 1.0 leaves 22 shapes of `hgemm
/// plan`'s grids to the split, 1.06 moves 3 more, unmeasured. It misses 1024×5120×13824 (0.975×
/// against 0.94–0.96×).
const MID_TRIM_MANY_COLUMNS: f64 = 1.05;
/// The wide tile trimmed to 224 columns.
const WIDE_TRIM: (u32, u32) = (128, 224);
/// The 64×96 pair.
const NARROW96: (u32, u32) = (64, 96);

/// The twin pairs' rate (`tile_efficiency`).
const TWIN: f64 = 0.85;
/// The twin pairs' rate in one row of pairs and several columns (`choose`): just under the lean
/// tile's, so that where both make the same whole wave the lean pairs keep it (twenty-fifth
/// session: 128×12288×4096 lean 1.01× cuBLAS against twin96 0.98×, 128×11008×4096 level at
/// 0.93×), while whole twins take what lean or square pairs split (128×14336×4096 twin112 1.02×
/// against lean 0.92×, 14336×128×4096 1.00× against square pairs' 0.90×). 0.76–0.77 pick the
/// faster entry at 12 of the 14 shapes measured; the two missed keep what `auto` ran before
/// (96×12288×1024: twin96 1.08× against 64×96 pairs' 0.96×, split; 128×22016×1024 1.02× against
/// lean 0.99×).
const ONE_ROW_TWIN: f64 = 0.77;
/// The lean tile's rate (`tile_efficiency`).
const LEAN_RATE: f64 = 0.78;

/// Throughput of a tile shape relative to the 128×256 tile, as measured on the H200.
fn tile_efficiency(s: &KernelSpec) -> f64 {
    if s.cluster_along_n {
        // The twin pairs: 0.85 picks the faster entry at 37 of the 38 shapes measured against
        // them (twenty-fourth session: 8192×160×8192 twin80 1.00× cuBLAS against the trim tile's
        // 0.88×, 8192×208×8192 twin112 1.04× against square pairs' 0.90×; at M = 16384 the pairs
        // along M of larger tiles, one wave where twins take two: 16384×160×4096 midtrim 0.99×
        // against twin80 0.97×, 16384×192×4096 mid 1.00× against twin96 0.95×), and so does
        // anything from 0.845 to 0.89; below, 224×2048×8192 goes back to slim pairs (1.22×
        // against 1.38×), from 0.9 ties move 16384×152×8192 to the twins. The one no value
        // catches with the others: 6144×208×4096, lean tiles written column-major 0.95× against
        // 0.91× for the twins, split.
        return TWIN;
    }
    match (s.tile_m, s.tile_n) {
        // The lean tile: 0.77–0.79 picks the faster entry on every shape measured against it
        // (ninth session: 128×16384×8192 slim 0.969 against lean 0.951, 8192×136×8192 lean
        // 0.816 against mid 0.765).
        LEAN => LEAN_RATE,
        // The trim tile: 0.75 picks the faster entry on every shape measured against it, where
        // 0.70 and 0.80 each miss one (thirteenth session: 144×14336×4096 trim 0.83× cuBLAS
        // against mid 0.78×, 16384×144×4096 mid 0.875× against trim 0.85×).
        TRIM => 0.75,
        // The mid tile trimmed to 160 columns: 0.85–0.9 pick the faster entry on every shape
        // measured against it; 0.8 gives 14336×160×4096 and 144×14336×4096 back to the trim
        // tile (1–1.5% slower), and 0.95 takes 8192×160×8192 from it, split (thirteenth session).
        MID_TRIM => 0.9,
        // The wide tile trimmed to 224 columns: 0.95 picks the faster entry on every shape
        // measured against it; 0.9 leaves 14336×208×4096 and 208×14336×4096 to mid tiles (7%
        // slower), and 1.0 takes 8192×208×8192 from split square tiles (not measured).
        (128, 224) => 0.95,
        (_, 256..) => 1.0,
        (_, 192..) => 0.95,
        (128.., _) => 0.9,
        _ => 0.75,
    }
}

/// What `auto` would run for `op` among `kernels` on a GPU with `sms` SMs, and its launch, worked
/// out without a GPU (`hgemm plan`): a persistent grid is taken to hold one CTA per SM in
/// clusters that pair every SM, which is what the H200 reports (`cuOccupancyMaxActiveClusters`:
/// 66 pairs of 132 SMs) and what [`choose`] counts with; a GPU that holds fewer gets a smaller
/// grid from [`Gemm`](crate::Gemm), which asks the device.
pub fn choose_offline<'a>(
    kernels: impl Iterator<Item = &'a KernelSpec>,
    op: &GemmOp,
    sms: u32,
) -> Option<(&'a KernelSpec, LaunchShape)> {
    let spec = choose(kernels, op, sms)?;
    // `choose` picks only entries that support the call.
    Some((spec, launch_offline(spec, op, sms).ok()?))
}

#[cfg(test)]
mod tests;
