//! How `auto` picks a kernel: a price per entry (waves of tiles over the SMs, weighted by each
//! tile shape's measured rate, and for calls with a short side the time to stream the operands
//! from DRAM), read off a [`Model`] of the machine, and a few rules that take a call from the
//! cheapest entry where the price alone was measured to pick wrong. Plain Rust, no GPU.

mod model;
pub use model::{Model, TileRate};

use crate::op::GemmOp;
use crate::plan::{LaunchShape, for_kernel, launch_offline, persistent_clusters, refusal};
use hgemm_kernels::sched::StreamK;
use hgemm_kernels::spec::KernelSpec;

/// The kernel `auto` runs for `op` on a device with `sms` SMs: among the general kernels that
/// read A and B in `op`'s orders (in the form each computes it, [`for_kernel`]), the one whose
/// tiles take the least time, counting waves of tiles over the SMs and the work of one tile
/// relative to the widest (scaled by how efficient the shape measured); see [`price`]. Whether
/// it runs split by K, [`choose_why`] tells.
pub fn choose<'a>(
    kernels: impl Iterator<Item = &'a KernelSpec>,
    op: &GemmOp,
    sms: u32,
    model: &Model,
) -> Option<&'a KernelSpec> {
    choose_why(kernels, op, sms, model).map(|(p, _)| p.spec)
}

/// A rule of [`choose`] that takes a call from the cheapest entry, where the price alone was
/// measured to pick wrong; each one's comment in `choose_why` gives the measurements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// One whole wave of square pairs in one column gives way to whole twin pairs in one row
    /// priced within `ONE_COLUMN_SQUARE`.
    OneColumnSquare,
    /// Square pairs split with fewer units than pairs give way to whole waves priced within
    /// `THIN_SQUARE_SPLIT`.
    ThinSquareSplit,
    /// The tall tile split gives way to what `choose` picks without it, run whole and priced
    /// within `TALL_SPLIT`.
    TallSplit,
}

impl Rule {
    /// Every rule, in the order `choose` tries them.
    pub const ALL: [Rule; 3] = [Rule::OneColumnSquare, Rule::ThinSquareSplit, Rule::TallSplit];

    /// The name of the rule's bound in `choose.rs`, which `hgemm plan --why` prints.
    pub fn name(self) -> &'static str {
        match self {
            Rule::OneColumnSquare => "ONE_COLUMN_SQUARE",
            Rule::ThinSquareSplit => "THIN_SQUARE_SPLIT",
            Rule::TallSplit => "TALL_SPLIT",
        }
    }

    /// How much dearer the entry the rule prefers may be priced and still take the call.
    fn bound(self) -> f64 {
        match self {
            Rule::OneColumnSquare => ONE_COLUMN_SQUARE,
            Rule::ThinSquareSplit => THIN_SQUARE_SPLIT,
            Rule::TallSplit => TALL_SPLIT,
        }
    }
}

/// [`choose`]'s pick as `price` weighed it (whether it runs split: [`Priced::split`]), and the
/// rule that took the call from the cheapest eligible entry, if one did.
pub fn choose_why<'a>(
    kernels: impl Iterator<Item = &'a KernelSpec>,
    op: &GemmOp,
    sms: u32,
    model: &Model,
) -> Option<(Priced<'a>, Option<Rule>)> {
    let candidates: Vec<Priced<'a>> = price(kernels, op, sms, model).filter(|c| c.eligible).collect();
    let (best, rule) = pick(candidates.iter().copied())?;
    // The tall tile split runs no faster than whole waves priced up to 4% above it: what `auto`
    // picks without the tall tile, where it runs whole and is priced within `TALL_SPLIT`, takes
    // the call (H100, forced, 2026-12-06: 592×7424×11520 and 881×16384×4096 whole 1.00× and
    // 1.05× the tall tile split's speed, priced 3.3% and 3.7% above it; where whole waves were
    // priced 6.7–19% above, the tall tile split ran 4–6% faster).
    if best.tall && !best.whole {
        // (The long and tall tiles are left out: the whole waves measured against it were 128 long.)
        let others = candidates.iter().copied().filter(|c| c.spec.tile_m <= 128);
        if let Some((other, _)) = pick(others).filter(|(o, _)| o.whole && o.cost <= best.cost * Rule::TallSplit.bound())
        {
            return Some((other, Some(Rule::TallSplit)));
        }
    }
    Some((best, rule))
}

/// [`choose_why`]'s pick among `candidates` (eligible, priced), but for the tall tile's rule.
fn pick<'a>(candidates: impl Iterator<Item = Priced<'a>>) -> Option<(Priced<'a>, Option<Rule>)> {
    // The cheapest candidate, the cheapest that runs whole units only and the cheapest whole twin
    // pairs in one row. Ties go to the lesser compute, then to lean or twin pairs sharing the
    // larger operand (`Priced::shares_smaller`), then to the first entry.
    let cheaper = |a: Option<Priced<'a>>, c: Priced<'a>| match a {
        Some(a)
            if a.cost
                .total_cmp(&c.cost)
                .then(a.compute.total_cmp(&c.compute))
                .then(a.shares_smaller.cmp(&c.shares_smaller))
                .is_le() =>
        {
            Some(a)
        }
        _ => Some(c),
    };
    let (best, best_whole, one_row_twin_whole) = candidates.fold((None, None, None), |(best, whole, twin), c| {
        let twin = if c.whole && c.one_row_twin { cheaper(twin, c) } else { twin };
        (cheaper(best, c), if c.whole { cheaper(whole, c) } else { whole }, twin)
    });
    let best = best?;
    // One whole wave of square pairs in one column leaves 10–16 of 66 pairs idle where whole
    // twin pairs in one row (the call in its other form) fill the SMs: twins priced within
    // `ONE_COLUMN_SQUARE` take it (H200, forced: faster at all 11 shapes, 1088fb1, 2026-11-30;
    // again after the epilogue fix, 7648999, 2026-12-01).
    if let Some(twin) = one_row_twin_whole.filter(|t| {
        best.whole && best.square && best.one_wave_in_one_column && t.cost <= best.cost * Rule::OneColumnSquare.bound()
    }) {
        return Some((twin, Some(Rule::OneColumnSquare)));
    }
    // No rule gives whole square pairs the calls of the wide tile with its last column at least
    // half empty, or of the wide tile trimmed in many columns: with the trimmed wide tile side
    // by side, those calls ran faster without one (H100, forced, 2026-12-07; docs/shapes.md,
    // "Where the price is overruled").
    //
    // Square pairs split with fewer units than pairs run slower than priced: whole waves priced
    // within `THIN_SQUARE_SPLIT` take them (H200, forced: faster at all 14 shapes measured, by
    // 2–15%, 7cab46c, 2026-11-30).
    match best_whole {
        Some(w) if best.thin_square_split && w.cost <= best.cost * Rule::ThinSquareSplit.bound() => {
            Some((w, Some(Rule::ThinSquareSplit)))
        }
        _ => Some((best, None)),
    }
}

/// How [`choose`] weighs one entry for a call (`hgemm plan --why` prints them).
#[derive(Clone, Copy, Debug)]
pub struct Priced<'a> {
    /// The entry.
    pub spec: &'a KernelSpec,
    /// The time the entry takes, in waves of 128×256 tiles at their measured rate: the longer of
    /// its tiles' MMAs and its DRAM traffic; the lowest wins, but for the rules in [`choose`].
    pub cost: f64,
    /// Its tiles' MMAs alone (ties in `cost` go to the lower).
    compute: f64,
    /// Its DRAM traffic alone, and the fix-ups' round trip where it splits.
    memory: f64,
    /// Its stream-K schedule for the call in its form, if it has one (every unit whole where
    /// the call or `price` forgoes the split).
    pub schedule: Option<StreamK>,
    /// Whether `choose` may take it; where not, the tiles it would run here were not measured to
    /// pay (a tile without a cluster in several rows and columns, or more columns of tiles than
    /// were measured: see the comments in `price`).
    pub eligible: bool,
    /// Lean or twin pairs sharing the smaller operand: where the price does not count that
    /// (`SHARING_SHORT_SIDES`), ties go to the other form (H200, 2026-11-30: the lean tile's form
    /// whose pairs stack along the shorter side 3.6–8% faster at 4096×288…384×4096, ada9feb;
    /// 1024×1152×4096 twin pairs sharing the larger 1.12× cuBLAS against 1.00–1.05×, 56d947e).
    /// The other tiles' ties keep the first entry: none was measured to differ.
    shares_smaller: bool,
    /// Its schedule runs every unit whole.
    whole: bool,
    /// Square pairs split with fewer units than pairs.
    thin_square_split: bool,
    /// The tall tile 128 wide (`TALL_SPLIT`).
    tall: bool,
    /// Square pairs.
    square: bool,
    /// Its tiles make one column (N within a tile, in its form) and at most one wave.
    one_wave_in_one_column: bool,
    /// Twin pairs in one row of pairs (see `price`).
    one_row_twin: bool,
}

impl Priced<'_> {
    /// Whether the entry streams its operands from DRAM for at least twice as long as its tiles
    /// compute: near the balance, how fast the tiles compute still tells entries apart.
    pub fn memory_bound(&self) -> bool {
        self.memory > 2.0 * self.compute
    }

    /// Whether the entry runs split by K: stream-K splits units and the call allows it.
    pub fn split(&self) -> bool {
        !self.whole
    }

    /// Whether its cost is its tiles' MMAs at its tile's rate: neither DRAM's time nor twin
    /// pairs in one row (`ONE_ROW_TWIN`) prices it. Calibration fits rates to such entries only.
    pub(crate) fn priced_by_rate(&self) -> bool {
        self.compute >= self.memory && !self.one_row_twin
    }
}

/// Every general entry that can compute `op` (in its form, [`for_kernel`]) on a device with `sms`
/// SMs, with its price and whether [`choose`] may take it; where its schedule splits units and,
/// whole, they would be bound by DRAM ([`Priced::memory_bound`]) and fill three quarters of the
/// SMs, the entry is weighed whole as well.
pub fn price<'a: 'b, 'b>(
    kernels: impl Iterator<Item = &'a KernelSpec> + 'b,
    op: &'b GemmOp,
    sms: u32,
    model: &'b Model,
) -> impl Iterator<Item = Priced<'a>> + 'b {
    // A call `validate` refuses whatever the buffers, or one with nothing to compute, has no
    // kernel; nor has a kernel whose cluster is larger than the device.
    let valid = sms > 0 && op.validate_shape() == Ok(true);
    kernels
        .filter(move |s| valid && s.cluster <= sms)
        .flat_map(move |s| {
            let kop = for_kernel(s, op).0;
            let Some(rate) = model.rate(s).filter(|_| s.general && refusal(s, &kop).is_none()) else {
                return [None, None];
            };
            let scheduled = priced(s, &kop, sms, model, rate);
            // Bound by DRAM, a split gains no bandwidth and pays its fix-ups (`memory_cost`).
            let whole = scheduled.split().then(|| priced(s, &kop.stream_k(false), sms, model, rate)).filter(|w| {
                let ctas = w.schedule.map_or(sms, |sk| sk.units.min(sk.workers) * s.cluster);
                w.memory_bound() && 4 * ctas >= 3 * sms
            });
            [Some(scheduled), whole]
        })
        .flatten()
}

/// The time `s`'s tiles take to compute `op` (in `s`'s form) with schedule `sched`, in waves of
/// 128×256 tiles at their measured rate (`rate`, the model's for the tile; see [`Priced::cost`]).
fn compute_cost(s: &KernelSpec, op: &GemmOp, sched: Option<StreamK>, sms: u32, model: &Model, rate: f64) -> f64 {
    let area = (s.tile_m * s.tile_n) as f64 / (128.0 * 256.0);
    let args = op.shape_args();
    let waves = match sched.filter(|_| op.stream_k) {
        // With stream-K the last wave may be split: count it in K blocks, and the split part
        // of the path longer by the model's split penalty.
        Some(sk) if sk.num_kb > 0 => {
            let (whole, path) = (sk.waves_in_step() as f64, sk.path() as f64 / sk.num_kb as f64);
            whole + (path - whole) * if sk.splits() { model.split_penalty } else { 1.0 }
        }
        _ => {
            let tiles = s.scheduler(op.m as u32, op.n as u32).num_tiles() as u64 * s.cluster as u64 * op.batch as u64;
            tiles.div_ceil(sms as u64) as f64
        }
    };
    // Between tiles the tensor cores wait for the epilogue, unless the kernel holds the
    // finished tile and stores it under the next one's MMAs. The efficiencies include the
    // epilogue's share at the K they were fitted at; only a larger share (a shorter K) counts.
    let between_tiles = match s.stream_k.map_or(0, |sk| args.k.div_ceil(sk.block_k)) {
        kb if kb > 0 && !s.holds_tile => 1.0 + model.epilogue_kb * (1.0 / kb as f64 - 1.0 / CALIBRATED_KB).max(0.0),
        _ => 1.0,
    };
    // Trimmed tiles side by side run faster than their one-column rates say
    // (`TRIM_SIDE_BY_SIDE`, `MID_TRIM_MANY_COLUMNS`).
    let side_by_side = match ((s.tile_m, s.tile_n), columns_of_tiles(s, op)) {
        (TRIM, 2..) => TRIM_SIDE_BY_SIDE,
        (MID_TRIM, 5..) => MID_TRIM_MANY_COLUMNS,
        _ => 1.0,
    };
    // Twin pairs in one row of pairs read each operand once, as lean pairs do there, so
    // they share nothing the lean pairs do not (`ONE_ROW_TWIN`).
    let (rate, sharing) =
        if one_row_of_twins(s, op) { (ONE_ROW_TWIN, 1.0) } else { (rate, sharing_cost(s, op, model)) };
    waves * between_tiles * sharing * area / (rate * side_by_side)
}

/// What `s`'s pairs pay for `op` (in `s`'s form) where they share the smaller operand by
/// multicast, as a factor (the model's `share_smaller` over the call's short side): 1 for a tile
/// without a cluster, pairs sharing the larger operand, or a short side outside
/// `SHARING_SHORT_SIDES`.
fn sharing_cost(s: &KernelSpec, op: &GemmOp, model: &Model) -> f64 {
    let short = op.m.min(op.n);
    if s.cluster < 2 || !shares_smaller(s, op) || !SHARING_SHORT_SIDES.contains(&short) {
        return 1.0;
    }
    1.0 + model.share_smaller / short as f64
}

/// Whether `s`'s CTAs, in pairs, would share the smaller operand of `op` (in `s`'s form): pairs
/// stacked along M share B (N × K), pairs along N share A (M × K).
fn shares_smaller(s: &KernelSpec, op: &GemmOp) -> bool {
    if s.cluster_along_n { op.n > op.m } else { op.m > op.n }
}

/// The time `s`'s CTAs take to stream `op`'s operands from DRAM and write C (in `s`'s form,
/// schedule `sched`), in [`compute_cost`]'s units: every operand read once, at the bandwidth of
/// the CTAs at work (the model's `cta_stream` each, `dram_stream` in all), and where units are
/// split, the fix-ups' round trip (`fixup_us`) after it.
fn memory_cost(s: &KernelSpec, op: &GemmOp, sched: Option<StreamK>, sms: u32, model: &Model) -> f64 {
    let (m, n, k) = (op.m as f64, op.n as f64, op.k as f64);
    let c_passes = if op.beta != 0.0 { 2.0 } else { 1.0 };
    let bytes = 2.0 * op.batch as f64 * (m * k + n * k + c_passes * m * n);
    let stream = |ctas: u32| model.dram_stream.min(ctas as f64 * model.cta_stream);
    let us = match sched {
        // Split, every worker streams to the end, then the fix-ups.
        Some(sk) if op.stream_k && sk.splits() => bytes / stream(sk.workers * s.cluster) + model.fixup_us,
        // Whole, each wave streams its units' share; the last may hold fewer.
        Some(sk) if sk.units > 0 => {
            let (waves, last) = (sk.units / sk.workers, sk.units % sk.workers);
            let per_unit = bytes / sk.units as f64;
            let wave = |units: u32| if units == 0 { 0.0 } else { per_unit * units as f64 / stream(units * s.cluster) };
            waves as f64 * wave(sk.workers) + wave(last)
        }
        _ => bytes / stream(sms),
    };
    us / (op.k.div_ceil(64).max(1) as f64 * model.wide_kb_us)
}

/// The time `s`'s tiles take to compute `kop` (the call in `s`'s form, schedule `sched`, its tile
/// at `rate`) and the time its DRAM traffic takes, in waves of 128×256 tiles ([`Priced::cost`] is
/// the longer).
pub(crate) fn cost_parts(
    s: &KernelSpec,
    kop: &GemmOp,
    sched: Option<StreamK>,
    sms: u32,
    model: &Model,
    rate: f64,
) -> (f64, f64) {
    let compute = compute_cost(s, kop, sched, sms, model, rate);
    // A call with a short side (`SHORT_SIDE`) streams the other operand from DRAM once; the
    // price of larger calls was fitted without it.
    let memory = if kop.m.min(kop.n) <= SHORT_SIDE { memory_cost(s, kop, sched, sms, model) } else { 0.0 };
    (compute, memory)
}

/// [`price`]'s weighing of `s` for `kop`, the call in `s`'s form, its tile at `rate`.
fn priced<'a>(s: &'a KernelSpec, kop: &GemmOp, sms: u32, model: &Model, rate: f64) -> Priced<'a> {
    // A tile without a cluster reads all of its operands itself: with more than one row and
    // one column of tiles, pairs sharing an operand win even half idle (96×8192×8192 on the
    // H200: 0.64× cuBLAS for 64×64 tiles, 0.93× for pairs of 64×128).
    let shares = s.cluster > 1 || kop.m as u32 <= s.tile_m || kop.n as u32 <= s.tile_n;
    // Tiles that boxes do not divide run side by side only as far as that was measured on
    // the H200 (forced against what `auto` ran, two rounds, 2026-11-30), each case one
    // measured win, but for the wide tile trimmed (H100, at its arm below):
    // - the trimmed tiles in two columns, not the 64×96 pair (e92189f);
    // - the 160-column tiles in four columns: the mid tile trimmed always, the trim tile
    //   where that is one whole wave (e0716e8);
    // - the 160-column tiles in five columns or more, in at most two whole waves at a
    //   calibrated K (1e44dc6; at K = 1024 they lost at 3 of 6);
    // - twin pairs sharing the larger operand in one wave, each pair at least half a unit (de2b36d); in
    //   one row of pairs, twins at least as large as the lean tile wherever their units are
    //   whole, at `ONE_ROW_TWIN` (163c4f7);
    // - twin pairs sharing the smaller operand in one whole wave, the other side at most 1.5 times
    //   theirs, at a calibrated K (c8c9f88), priced above twins sharing the larger
    //   (`Model::share_smaller`).
    // The workers the launch would get (`persistent_clusters`: at most the workspace's CTAs).
    let sched = s.schedule(&kop.shape_args(), persistent_clusters(s, sms / s.cluster));
    let whole = |sk: &StreamK| !(kop.stream_k && sk.splits());
    let one_wave = sched.filter(|sk| sk.units <= sk.workers);
    let one_whole_wave = one_wave.is_some_and(|sk| whole(&sk));
    let one_wave_in_halves = one_wave.is_some_and(|sk| whole(&sk) || sk.share + 1 >= sk.num_kb.div_ceil(2));
    let calibrated_k = sched.is_some_and(|sk| sk.num_kb as f64 >= CALIBRATED_KB);
    let up_to_two_whole_waves = sched.is_some_and(|sk| whole(&sk) && sk.units <= 2 * sk.workers) && calibrated_k;
    let splits_at_most_an_eighth = sched.is_some_and(|sk| !sk.splits_over_an_eighth());
    let twins_share_the_smaller_operand = kop.m < kop.n;
    let tile_columns = columns_of_tiles(s, kop);
    let square = (s.tile_m, s.tile_n) == SQUARE;
    let tall = s.tile_m == TALL_M;
    let long = s.tile_m == LONG_M;
    let one_row_twin = one_row_of_twins(s, kop);
    let (compute, memory) = cost_parts(s, kop, sched, sms, model, rate);
    let columns = match tile_columns {
        // Where one column of tall or long tiles covers the call (a small M, in its form),
        // the narrow, lean, slim and twin tiles stream the other operand faster (H100,
        // forced: 117×35840×5120 0.95× cuBLAS against lean pairs' 1.03×, 2026-12-06;
        // 104×28672×3584 long128_kk_cm 0.96× against twin112 pairs' 1.06×, 111×5120×27648
        // 0.92× against slim pairs' 1.02×, 2026-12-07).
        1 if tall || long => false,
        // Bound by DRAM, tiles that boxes do not divide lose nothing side by side: whole, the
        // 64×96 pair, twin pairs and the trim tile in 27–64 columns ran 1.01–1.06× cuBLAS where
        // `auto`'s splits of the tiles allowed ran 0.88–0.95× (H100, `hgemm survey`, 2026-12-07,
        // 3f41141: 58×5120×5120, 98×5120×5120, 61×6144×4096, 63×9216×4096, 5×12800×1600).
        _ if memory > compute => true,
        _ if one_row_twin => s.tile_m * s.tile_n >= LEAN.0 * LEAN.1 && sched.is_some_and(|sk| whole(&sk)),
        _ if s.cluster_along_n => {
            kop.n <= s.unit_n() as usize
                || (kop.m >= kop.n && one_wave_in_halves)
                || (twins_share_the_smaller_operand && one_whole_wave && 2 * kop.n <= 3 * kop.m && calibrated_k)
        }
        // The long tiles side by side, at the K they were measured at (their epilogue is
        // not held), but not in three columns, where they lost as the trimmed tiles do
        // (H100, forced, 2026-12-07: 420×18432×7168 0.885× against 0.948× for the wide tile
        // trimmed in two, 404×8192×6144 0.918× against 0.929×).
        _ if long => calibrated_k && tile_columns != 3,
        // The tall tiles wider than 128 where at most an eighth of their units split: split
        // more, they lost (H200, forced, 2026-12-07: 288×22016×4096, every unit split, 0.84×
        // cuBLAS against 0.92× for long144_kk_cm; 309×35840×5120, half split, 0.92× against
        // 0.96×); whole, they were faster than the previous pick at 36 of 41 shapes.
        _ if tall && s.shifted_last_box() => calibrated_k && tile_columns != 3 && splits_at_most_an_eighth,
        _ if !s.shifted_last_box() => true,
        1 => true,
        2 => (s.tile_m, s.tile_n) != NARROW96,
        // The wide tile trimmed, in any number of columns, where it has two rows of tiles or more
        // and at most an eighth of its units split, as the tall tiles (H100, forced against the
        // picks before, 2026-12-07: 0.969× cuBLAS against 0.917× over the 19 shapes it moves, 14
        // faster by more than 2%, e.g. 882×4096×14336 0.989× against 0.872×; 962×29568×8192 2.1%
        // slower). Splitting more, it lost as often as it won (643×12288×4096 0.97×,
        // 669×7168×5120 1.14× the picks before); in one row of tiles, its column-major form keeps
        // the call (204×14336×4096 0.977×).
        _ if (s.tile_m, s.tile_n) == WIDE_TRIM => kop.m >= 2 * s.tile_m as usize && splits_at_most_an_eighth,
        4 => (s.tile_m, s.tile_n) == MID_TRIM || ((s.tile_m, s.tile_n) == TRIM && one_whole_wave),
        5.. => match (s.tile_m, s.tile_n) {
            MID_TRIM | TRIM => up_to_two_whole_waves,
            _ => false,
        },
        _ => false,
    };
    Priced {
        spec: s,
        cost: compute.max(memory),
        compute,
        memory,
        schedule: sched.map(|sk| if whole(&sk) { StreamK::whole(sk.units, sk.num_kb, sk.workers) } else { sk }),
        eligible: shares && columns,
        shares_smaller: (s.cluster_along_n || (s.tile_m, s.tile_n) == LEAN) && shares_smaller(s, kop),
        whole: sched.is_none_or(|sk| whole(&sk)),
        thin_square_split: square && sched.is_some_and(|sk| !whole(&sk) && sk.units < sk.workers),
        tall: tall && s.tile_n == 128,
        square,
        one_wave_in_one_column: tile_columns == 1 && one_wave.is_some(),
        one_row_twin,
    }
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

/// How much dearer whole waves may be priced and still take a call from square pairs split with
/// fewer units than pairs (see `choose`): the measured whole entries were priced 1.2–5.6% above
/// the split and ran 2–15% faster.
const THIN_SQUARE_SPLIT: f64 = 1.06;
/// How much dearer whole waves may be priced and still take a call from the tall tile split (see
/// `choose`).
const TALL_SPLIT: f64 = 1.05;
/// How much dearer whole twin pairs in one row may be priced and still take a call from whole
/// square pairs in one column (see `choose`): they were priced 2.3% above and ran 0.6–5.5% faster.
const ONE_COLUMN_SQUARE: f64 = 1.03;
/// The square tile's shape.
const SQUARE: (u32, u32) = (128, 128);

/// The longest short side (M or N) of the calls whose price counts DRAM traffic
/// (`memory_cost`): one row of the 128-long tiles.
const SHORT_SIDE: usize = 128;
/// The short sides at which pairs sharing the smaller operand pay `Model::share_smaller`: above
/// `SHORT_SIDE` (up to it, DRAM's time prices the call) and up to 512 rows. Beyond, the rates already
/// hold it (the tall and long tiles' were fitted there, written column-major): counted again, the
/// 16 picks it moved there ran 0.971× as fast (H100, forced, 2026-12-07).
const SHARING_SHORT_SIDES: std::ops::RangeInclusive<usize> = SHORT_SIDE + 1..=512;
/// The shortest K, in blocks, of the measurements the tiles' rates were fitted to (3000³,
/// 3072³): each rate already includes the epilogue's share at that depth or deeper.
const CALIBRATED_KB: f64 = 48.0;

/// The lean tile's shape (`tile_m`, `tile_n`): `choose` breaks its ties.
const LEAN: (u32, u32) = (64, 192);
/// The trim tile, the lean one 160 columns wide.
const TRIM: (u32, u32) = (64, 160);
/// The trim tile's rate in two columns of tiles, relative to one (see `choose`).
const TRIM_SIDE_BY_SIDE: f64 = 1.03;
/// The mid tile trimmed to 160 columns.
const MID_TRIM: (u32, u32) = (128, 160);
/// The mid tile trimmed's rate in five columns of tiles or more, relative to one (see `choose`):
/// two waves of them beat wide tiles split by more than the two rates say (H200, 1e44dc6,
/// 2026-11-30); 1.05 takes the measured wins and moves no unmeasured shape.
const MID_TRIM_MANY_COLUMNS: f64 = 1.05;
/// The wide tile trimmed to 224 columns.
const WIDE_TRIM: (u32, u32) = (128, 224);
/// The 64×96 pair.
const NARROW96: (u32, u32) = (64, 96);
/// The tall tiles' length: two consumers of two 64-row blocks each, 128 to 160 wide.
const TALL_M: u32 = 256;
/// The long tiles' length: three consumers of one 64-row block, 128 to 176 wide.
const LONG_M: u32 = 192;
/// The twin pairs' rate in one row of pairs and several columns (`choose`): just under the lean
/// tile's, so that where both make the same whole wave the lean pairs keep it, while whole twins
/// take what lean or square pairs split (H200: right at 12 of 14 shapes, 163c4f7, 2026-11-30).
const ONE_ROW_TWIN: f64 = 0.77;
/// What `auto` would run for `op` among `kernels` on a GPU with `sms` SMs, and its launch, worked
/// out without a GPU (`hgemm plan`): a persistent grid is taken to hold one CTA per SM in
/// clusters that pair every SM, which is what the H200 reports (`cuOccupancyMaxActiveClusters`:
/// 66 pairs of 132 SMs) and what [`choose`] counts with; a GPU that holds fewer gets a smaller
/// grid from [`Gemm`](crate::Gemm), which asks the device.
pub fn choose_offline<'a>(
    kernels: impl Iterator<Item = &'a KernelSpec>,
    op: &GemmOp,
    sms: u32,
    model: &Model,
) -> Option<(&'a KernelSpec, LaunchShape)> {
    let (pick, _) = choose_why(kernels, op, sms, model)?;
    // `choose` picks only entries that support the call.
    Some((pick.spec, launch_offline(pick.spec, &op.stream_k(pick.split()), sms).ok()?))
}

#[cfg(test)]
mod tests;
