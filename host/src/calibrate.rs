//! Calibration: the quantities of `auto`'s model ([`Model`]) re-measured on this device in one run
//! ([`Gemm::calibrate`], `hgemm calibrate`), so that a card the built-in model was not fitted on
//! is priced by its own measurements. Three steps: [`probes`] says which calls measure what
//! (plain Rust), the GPU times them, and [`fit`] solves each quantity from the price of its
//! probes (plain Rust): the rates and the sharing cost by least squares over several calls, each
//! at its own pace; the rest, in which the price is linear or inverse-linear, from the price at
//! two values of the quantity against the time.

use crate::choose::{self, Model, TileRate};
use crate::error::{Error, Result};
use crate::gemm::Gemm;
use crate::measure::{self, drv};
use crate::op::GemmOp;
use crate::plan::{for_kernel, persistent_clusters, refusal};
use cudarc::driver::CudaStream;
use hgemm_kernels::sched::StreamK;
use hgemm_kernels::spec::KernelSpec;
use std::sync::Arc;

/// What a probe measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    /// [`Model::wide_kb_us`]: the 128×256 tile at [`RATE_SHAPE`].
    WideKb,
    /// The tiles' rates ([`Model::rates`]) and what pairs sharing the smaller operand pay
    /// ([`Model::share_smaller`]): every entry the price weighs by its rate, whole, at each of
    /// [`RATE_SHAPES`].
    Rate,
    /// [`Model::epilogue_kb`]: a tile that does not hold its epilogue, at [`RATE_SHAPE`] and at a
    /// short K ([`EPILOGUE_SHAPE`]).
    Epilogue,
    /// [`Model::split_penalty`]: the 128×256 tile whole and split by stream-K at each of
    /// [`SPLIT_SHAPES`].
    SplitPenalty,
    /// [`Model::dram_stream`]: a decode call, every entry whole; the fastest counts.
    Dram,
    /// [`Model::cta_stream`]: one whole wave of few units, bound by what each CTA streams.
    CtaStream,
    /// [`Model::fixup_us`]: the same call split.
    Fixup,
}

impl Quantity {
    /// The quantity's name in [`Model`] (and in its JSON).
    pub fn name(self) -> &'static str {
        match self {
            Quantity::WideKb => "wide_kb_us",
            Quantity::Rate => "rates",
            Quantity::Epilogue => "epilogue_kb",
            Quantity::SplitPenalty => "split_penalty",
            Quantity::Dram => "dram_stream",
            Quantity::CtaStream => "cta_stream",
            Quantity::Fixup => "fixup_us",
        }
    }
}

/// One call calibration times: an entry and the call (row-major A and C, column-major B, beta 0;
/// `stream_k` set where the probe splits).
#[derive(Clone, Copy, Debug)]
pub struct Probe {
    /// What it measures.
    pub quantity: Quantity,
    /// The entry timed.
    pub kernel: &'static KernelSpec,
    /// The call.
    pub op: GemmOp,
}

/// The 128×256 tile's call: 2112 tiles, sixteen whole waves on 132 SMs, at a K of 64 blocks.
pub const RATE_SHAPE: (usize, usize, usize) = (8448, 8192, 4096);
/// The calls the rates are fitted at: a few hundred to a few thousand rows against a long N,
/// each way round, at a K of 48 blocks or more (where the rates hold the epilogue's share), the
/// sizes at which the tiles compete. A tile's speed over many waves of a large call is not its
/// speed there: at 8448×8192×4096 the small tiles ran 0.34–0.77 of the wide tile's speed (H100,
/// 2026-12-07), far below the rates that pick well at the calls they compete at.
pub const RATE_SHAPES: [(usize, usize, usize); 12] = [
    (192, 8192, 8192),
    (160, 12288, 6144),
    (320, 14336, 4096),
    (512, 5120, 8192),
    (768, 6144, 4096),
    (1024, 11008, 4096),
    (2048, 2560, 8192),
    (3072, 3072, 4096),
    (4096, 14336, 4096),
    (14336, 384, 4096),
    (8192, 1024, 8192),
    (6144, 160, 8192),
];
/// The epilogue's call: [`RATE_SHAPE`]'s M and N at a K of 16 blocks.
pub const EPILOGUE_SHAPE: (usize, usize, usize) = (8448, 8192, 1024);
/// The split penalty's calls: a few tiles over a long K, each split by the 128×256 tile.
pub const SPLIT_SHAPES: [(usize, usize, usize); 4] =
    [(1024, 22016, 4096), (2048, 5120, 5120), (768, 6144, 8192), (512, 4096, 16384)];
/// Decode calls, bound by DRAM.
pub const DRAM_SHAPES: [(usize, usize, usize); 2] = [(64, 16384, 8192), (32, 28672, 4096)];
/// The call of few units bound by what each CTA streams, whole and split: 24 units of the
/// narrowest tile on an H100.
pub const CTA_SHAPE: (usize, usize, usize) = (16, 3072, 8192);

/// The reference tile: its rate is 1 by definition.
const WIDE: (u32, u32) = (128, 256);

/// The rate probes at `op` (run whole) among `kernels` on `sms` SMs: the entries `base`'s price
/// weighs there by their tile's rate and `auto` may take. Also what a recorded survey's whole
/// timings at `op` give [`fit`] (`hgemm calibrate --survey`).
pub fn rate_probes(kernels: &[&'static KernelSpec], op: &GemmOp, sms: u32, base: &Model) -> Vec<Probe> {
    // Whole, `price` weighs each entry once, in `kernels`' order.
    let op = op.stream_k(false);
    choose::price(kernels.iter().copied(), &op, sms, base)
        .filter(|p| p.eligible && p.priced_by_rate())
        .map(|p| Probe { quantity: Quantity::Rate, kernel: p.spec, op })
        .collect()
}

/// The probes that calibrate a model for `kernels` on `sms` SMs, `base` deciding which entries
/// the price weighs by their rate: the 128×256 tile at [`RATE_SHAPE`]; [`rate_probes`] at each of
/// [`RATE_SHAPES`]; the 128-row tiles that neither hold their epilogue nor trim their last box at
/// [`RATE_SHAPE`] and [`EPILOGUE_SHAPE`]; the 128×256 tile whole and split at the
/// [`SPLIT_SHAPES`] where it splits; every general entry whole at the [`DRAM_SHAPES`]; the entry
/// of the smallest tile that takes [`CTA_SHAPE`] (the one whose MMAs weigh least against its
/// DRAM traffic), whole where its units make one wave and split where they split. Calls an entry
/// refuses are left out; probes of one call are adjacent.
pub fn probes(kernels: &[&'static KernelSpec], sms: u32, base: &Model) -> Vec<Probe> {
    let general: Vec<&'static KernelSpec> = kernels.iter().copied().filter(|s| s.general && s.cluster <= sms).collect();
    let takes = |s: &KernelSpec, op: &GemmOp| refusal(s, &for_kernel(s, op).0).is_none();
    let call = |(m, n, k): (usize, usize, usize), split: bool| GemmOp::new(m, n, k).stream_k(split);
    let mut out = Vec::new();
    let mut push = |quantity, kernel: &'static KernelSpec, op: GemmOp| {
        if takes(kernel, &op) {
            out.push(Probe { quantity, kernel, op });
        }
    };
    let wide = general.iter().copied().find(|s| (s.tile_m, s.tile_n) == WIDE);
    if let Some(wide) = wide {
        push(Quantity::WideKb, wide, call(RATE_SHAPE, false));
    }
    let mut unheld: Vec<&'static KernelSpec> = Vec::new();
    for &s in general.iter().filter(|s| s.tile_m == 128 && !s.holds_tile && !s.shifted_last_box() && !s.cluster_along_n)
    {
        if !unheld.iter().any(|u| (u.tile_m, u.tile_n) == (s.tile_m, s.tile_n)) {
            unheld.push(s);
        }
    }
    for shape in [RATE_SHAPE, EPILOGUE_SHAPE] {
        for &s in &unheld {
            push(Quantity::Epilogue, s, call(shape, false));
        }
    }
    for shape in RATE_SHAPES {
        for p in rate_probes(&general, &call(shape, false), sms, base) {
            push(p.quantity, p.kernel, p.op);
        }
    }
    if let Some(wide) = wide {
        for shape in SPLIT_SHAPES {
            if schedule(wide, &call(shape, true), sms).is_some_and(|sk| sk.splits()) {
                push(Quantity::SplitPenalty, wide, call(shape, false));
                push(Quantity::SplitPenalty, wide, call(shape, true));
            }
        }
    }
    for shape in DRAM_SHAPES {
        for &s in &general {
            push(Quantity::Dram, s, call(shape, false));
        }
    }
    let least = general.iter().filter(|s| takes(s, &call(CTA_SHAPE, false))).min_by_key(|s| s.tile_m * s.tile_n);
    if let Some(&s) = least {
        if schedule(s, &call(CTA_SHAPE, false), sms).is_some_and(|sk| sk.units <= sk.workers) {
            push(Quantity::CtaStream, s, call(CTA_SHAPE, false));
        }
        if schedule(s, &call(CTA_SHAPE, true), sms).is_some_and(|sk| sk.splits()) {
            push(Quantity::Fixup, s, call(CTA_SHAPE, true));
        }
    }
    out
}

/// `s`'s stream-K schedule for `op` (in its form) on `sms` SMs, as `auto`'s price counts it.
fn schedule(s: &KernelSpec, op: &GemmOp, sms: u32) -> Option<StreamK> {
    let kop = for_kernel(s, op).0;
    s.schedule(&kop.shape_args(), persistent_clusters(s, sms / s.cluster))
}

/// The price of `probe` under `model`, its tile at `rate`, in µs: its compute and its DRAM time
/// (the longer is what the price weighs).
fn price_us(probe: &Probe, sms: u32, model: &Model, rate: f64) -> (f64, f64) {
    let (s, op) = (probe.kernel, &probe.op);
    let kop = for_kernel(s, op).0;
    let (compute, memory) = choose::cost_parts(s, &kop, schedule(s, op, sms), sms, model, rate);
    let us_per_wave = op.k.div_ceil(64).max(1) as f64 * model.wide_kb_us;
    (compute * us_per_wave, memory * us_per_wave)
}

/// The tiles' rates and [`Model::share_smaller`] from the [`Quantity::Rate`] probes among `at`
/// (`ms` their times): each probe's time over its price at rate 1, sharing free, is the call's own
/// pace (how fast any tile runs at that size) over its tile's rate, times what its pairs pay for
/// sharing the smaller operand; the least squares of their logarithms gives all three, the 128×256
/// tile's rate held at 1. Tiles no probe measured keep `base`'s rates; without a probe of pairs
/// sharing the smaller operand, `base`'s `share_smaller` stays.
fn fit_tiles(at: &[usize], probes: &[Probe], ms: &[f64], sms: u32, base: &Model) -> Result<(Vec<TileRate>, f64)> {
    let mut rates: Vec<TileRate> = base.rates.to_vec();
    if at.is_empty() {
        return Ok((rates, base.share_smaller));
    }
    let tile = |i: usize| (probes[i].kernel.tile_m, probes[i].kernel.tile_n);
    let call = |i: usize| (probes[i].op.m, probes[i].op.n, probes[i].op.k, probes[i].op.batch);
    let mut tiles: Vec<(u32, u32)> = at.iter().map(|&i| tile(i)).collect();
    let mut calls: Vec<_> = at.iter().map(|&i| call(i)).collect();
    tiles.sort_unstable();
    tiles.dedup();
    calls.sort_unstable();
    calls.dedup();
    let wide =
        tiles.binary_search(&WIDE).map_err(|_| Error::InvalidModel("no rate probe of the 128×256 tile".into()))?;
    let (free, paying) = (Model { share_smaller: 0.0, ..base.clone() }, Model { share_smaller: 1.0, ..base.clone() });
    // y = ln(time over price at rate 1, sharing free) = ln pace[call] + slow[tile] +
    // ln(1 + share_smaller × x), slow[tile] = -ln rate[tile] up to a constant, x the inverse of
    // the call's short side where the pairs share the smaller operand, else 0.
    struct Point {
        call: usize,
        tile: usize,
        x: f64,
        y: f64,
    }
    let points: Vec<Point> = at
        .iter()
        .map(|&i| {
            let p0 = price_us(&probes[i], sms, &free, 1.0).0;
            Point {
                call: calls.binary_search(&call(i)).unwrap(),
                tile: tiles.binary_search(&tile(i)).unwrap(),
                x: price_us(&probes[i], sms, &paying, 1.0).0 / p0 - 1.0,
                y: (ms[i] * 1e3 / p0).ln(),
            }
        })
        .collect();
    let sharing = points.iter().any(|p| p.x > 1e-12);
    let (mut slow, mut share) = (vec![0.0; tiles.len()], 0.0f64);
    // The mean of `value` over the points, by `key`.
    let mean = |len: usize, key: fn(&Point) -> usize, value: &dyn Fn(&Point) -> f64| {
        let mut sum = vec![(0.0, 0.0); len];
        for p in &points {
            let s = &mut sum[key(p)];
            *s = (s.0 + value(p), s.1 + 1.0);
        }
        sum.into_iter().map(|(s, n)| s / n).collect::<Vec<f64>>()
    };
    // Alternating least squares: the paces and the rates each exact given the rest, the sharing
    // cost a Newton step; a few hundred rounds converge far below the times' noise.
    for _ in 0..500 {
        let paid = |x: f64| (1.0 + share * x).ln();
        let pace = mean(calls.len(), |p| p.call, &|p| p.y - paid(p.x) - slow[p.tile]);
        slow = mean(tiles.len(), |p| p.tile, &|p| p.y - paid(p.x) - pace[p.call]);
        if sharing {
            let (mut g, mut h) = (0.0, 0.0);
            for p in &points {
                let (r, d) = (p.y - pace[p.call] - slow[p.tile] - paid(p.x), p.x / (1.0 + share * p.x));
                (g, h) = (g + r * d, h + d * d);
            }
            share = (share + g / h).max(0.0);
        }
    }
    for (t, &(tile_m, tile_n)) in tiles.iter().enumerate() {
        let rate = (slow[wide] - slow[t]).exp();
        match rates.iter_mut().find(|r| (r.tile_m, r.tile_n) == (tile_m, tile_n)) {
            Some(r) => r.rate = rate,
            None => rates.push(TileRate { tile_m, tile_n, rate }),
        }
    }
    Ok((rates, if sharing { share } else { base.share_smaller }))
}

/// The model `probes` measured, `ms` the median milliseconds per call of each (in order), on
/// `sms` SMs; quantities no probe measured keep `base`'s values. Each quantity but DRAM's is
/// measured against the same call or the same entry (the tiles' rates against the others' at each
/// call, the split against the same tile whole, the short K against the same tile at a long one),
/// so that how fast a call of that size runs on the whole does not enter it. Fails where a time is
/// not positive or the rate probes lack the 128×256 tile (every rate is relative to it).
pub fn fit(probes: &[Probe], ms: &[f64], sms: u32, base: &Model) -> Result<Model> {
    if probes.len() != ms.len() || ms.iter().any(|t| !(*t > 0.0 && t.is_finite())) {
        return Err(Error::InvalidModel(format!("{} probes, {} times, each must be positive", probes.len(), ms.len())));
    }
    let us = |i: usize| ms[i] * 1e3;
    let of = |q: Quantity| (0..probes.len()).filter(move |&i| probes[i].quantity == q);
    let mut model = base.clone();
    model.measured_on = "calibrated".into();

    // Relative to each call's pace, the tiles' fit reads no absolute time.
    let (rates, share_smaller) = fit_tiles(&of(Quantity::Rate).collect::<Vec<_>>(), probes, ms, sms, &model)?;
    (model.rates, model.share_smaller) = (rates.into(), share_smaller);
    // The 128×256 tile's time per K block of a wave: its price at rate 1 counts the waves.
    if let Some(i) = of(Quantity::WideKb).next() {
        model.wide_kb_us = us(i) / price_us(&probes[i], sms, &Model { wide_kb_us: 1.0, ..model.clone() }, 1.0).0;
    }

    // Linear in the epilogue's blocks and in the split penalty: the price at two values gives
    // the line, the time the point on it. `rate` is the entry's pace measured beside it.
    let solve = |i: usize, m0: &Model, m1: &Model, x0: f64, rate: f64| {
        let (p0, p1) = (price_us(&probes[i], sms, m0, rate).0, price_us(&probes[i], sms, m1, rate).0);
        x0 + (us(i) - p0) / (p1 - p0)
    };
    // Each probe of a short K or a split, with the same entry's at the same M and N at a longer
    // K or whole (its reference, first).
    let pairs = |q: Quantity| {
        let (p, o) = (probes, |i: usize| probes[i].op);
        let reference = move |i: usize, j: usize| {
            p[j].kernel.name == p[i].kernel.name
                && (o(j).m, o(j).n) == (o(i).m, o(i).n)
                && (o(j).k > o(i).k || (o(j).k == o(i).k && o(i).stream_k && !o(j).stream_k))
        };
        of(q).filter_map(|i| of(q).find(|&j| reference(i, j)).map(|j| (j, i))).collect::<Vec<_>>()
    };
    // An entry's pace: its price at rate 1 over its time.
    let pace = |i: usize, m: &Model| price_us(&probes[i], sms, m, 1.0).0 / us(i);
    let epilogue: Vec<f64> = pairs(Quantity::Epilogue)
        .into_iter()
        .map(|(long, short)| {
            let (e0, e1) = (Model { epilogue_kb: 0.0, ..model.clone() }, Model { epilogue_kb: 1.0, ..model.clone() });
            solve(short, &e0, &e1, 0.0, pace(long, &model))
        })
        .collect();
    if !epilogue.is_empty() {
        model.epilogue_kb = measure::median(&epilogue).max(0.0);
    }
    // The same tile whole at the same call gives the call's pace.
    let penalty: Vec<f64> = pairs(Quantity::SplitPenalty)
        .into_iter()
        .map(|(whole, split)| {
            let paced = Model { wide_kb_us: model.wide_kb_us / pace(whole, &model), ..model.clone() };
            let (p0, p1) = (Model { split_penalty: 1.0, ..paced.clone() }, Model { split_penalty: 2.0, ..paced });
            solve(split, &p0, &p1, 1.0, 1.0)
        })
        .collect();
    if !penalty.is_empty() {
        model.split_penalty = measure::median(&penalty).max(1.0);
    }

    // DRAM time is the bytes over a bandwidth: the price at a bandwidth of 1 over the time gives
    // it. The fastest entry of each decode call reaches DRAM's; the CTAs' own limit lifted.
    let unbound = Model { dram_stream: 1.0, cta_stream: f64::MAX, fixup_us: 0.0, ..model.clone() };
    let dram = of(Quantity::Dram).map(|i| price_us(&probes[i], sms, &unbound, 1.0).1 / us(i)).fold(0.0, f64::max);
    if dram > 0.0 {
        model.dram_stream = dram;
    }
    let per_cta = Model { dram_stream: f64::MAX, cta_stream: 1.0, fixup_us: 0.0, ..model.clone() };
    if let Some(i) = of(Quantity::CtaStream).next() {
        model.cta_stream = price_us(&probes[i], sms, &per_cta, 1.0).1 / us(i);
    }
    if let Some(i) = of(Quantity::Fixup).next() {
        let streamed = price_us(&probes[i], sms, &Model { fixup_us: 0.0, ..model.clone() }, 1.0).1;
        model.fixup_us = (us(i) - streamed).max(0.0);
    }
    Ok(model)
}

/// How [`Gemm::calibrate`] measures.
#[derive(Clone, Copy, Debug)]
pub struct CalibrateOptions {
    /// Timed samples of each probe (the median counts).
    pub samples: usize,
    /// Milliseconds of back-to-back calls a sample times, after two thirds as long untimed.
    pub sample_ms: f64,
}

impl Default for CalibrateOptions {
    fn default() -> CalibrateOptions {
        CalibrateOptions { samples: 3, sample_ms: 30.0 }
    }
}

/// What [`Gemm::calibrate`] measured: the model, and every probe with its median time.
#[derive(Clone, Debug)]
pub struct Calibration {
    /// The fitted model ([`Gemm::set_model`] takes it).
    pub model: Model,
    /// Every probe and its median milliseconds per call, in the order timed.
    pub timed: Vec<(Probe, f64)>,
}

impl Gemm {
    /// Re-measure `auto`'s model on this device ([`probes`], then [`fit`]): 304 probe calls of
    /// 0.05–5 ms on an H100, each timed `opts.samples` times over inputs rotated beyond L2. The
    /// handle's model is not changed: [`Gemm::set_model`] takes the result.
    pub fn calibrate(&self, stream: &Arc<CudaStream>, opts: &CalibrateOptions) -> Result<Calibration> {
        if opts.samples == 0 || opts.sample_ms.is_nan() || opts.sample_ms <= 0.0 {
            return Err(Error::InvalidModel(format!(
                "{} samples of {} ms: both must be positive",
                opts.samples, opts.sample_ms
            )));
        }
        let kernels: Vec<&'static KernelSpec> = self.kernels().collect();
        let sms = self.device().sms;
        let probes = probes(&kernels, sms, self.model());
        let mut timed: Vec<(Probe, f64)> = Vec::with_capacity(probes.len());
        // Probes of one call share its inputs.
        let mut i = 0;
        while i < probes.len() {
            let op = probes[i].op;
            let same = probes[i..].iter().take_while(|p| (p.op.m, p.op.n, p.op.k) == (op.m, op.n, op.k)).count();
            let (la, lb, lc) = measure::lengths(&op);
            let set_bytes = 2 * (la + lb + lc);
            let sets = measure::rotation_sets(self.device().l2_bytes, set_bytes);
            let (a, b, mut c) = measure::input_sets(self, stream, &op, sets, i as u64)?;
            let (calls, warmup) = measure::sample_calls(measure::macs(&op), set_bytes, opts.sample_ms);
            for p in &probes[i..i + same] {
                let mut samples = Vec::with_capacity(opts.samples);
                for _ in 0..opts.samples {
                    let t = measure::time_median(stream, warmup, 1, calls, |j| {
                        self.gemm_with(p.kernel, stream, &p.op, &a[j % sets], &b[j % sets], &mut c[j % sets])
                    })?;
                    samples.push(t[0]);
                }
                timed.push((*p, measure::median(&samples)));
            }
            i += same;
        }
        stream.synchronize().map_err(drv("cuStreamSynchronize"))?;
        let (p, ms): (Vec<Probe>, Vec<f64>) = timed.iter().copied().unzip();
        let mut model = fit(&p, &ms, sms, self.model())?;
        model.measured_on = format!("{} ({} SMs), hgemm calibrate", self.device().name, sms).into();
        model.check(self.kernels())?;
        Ok(Calibration { model, timed })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hgemm_kernels::spec::Family;

    fn hopper() -> Vec<&'static KernelSpec> {
        hgemm_kernels::kernels().filter(|k| k.family == Family::Hopper).collect()
    }

    /// The tiles no call of the calibration rates: each runs only where DRAM bounds it.
    const UNRATED: [(u32, u32); 4] = [(64, 16), (64, 32), (64, 64), (64, 96)];

    /// A machine unlike the built-in one in every quantity.
    fn other_machine() -> Model {
        let mut m = Model::BUILT_IN;
        for (i, r) in m.rates.to_mut().iter_mut().enumerate() {
            if (r.tile_m, r.tile_n) != WIDE {
                r.rate *= 0.9 + 0.01 * (i % 7) as f64;
            }
        }
        Model {
            split_penalty: 1.3,
            epilogue_kb: 3.0,
            wide_kb_us: 0.9,
            dram_stream: 3.1e6,
            cta_stream: 30e3,
            fixup_us: 8.0,
            share_smaller: 24.0,
            ..m
        }
    }

    #[test]
    fn every_quantity_has_its_probes() {
        let p = probes(&hopper(), 132, &Model::BUILT_IN);
        let count = |q| p.iter().filter(|p| p.quantity == q).count();
        let names = |q| p.iter().filter(|p| p.quantity == q).map(|p| p.kernel.name).collect::<Vec<_>>();
        assert_eq!(names(Quantity::WideKb), ["hopper_v7"]);
        // Every tile has rate probes at two calls or more, but those that run only where DRAM
        // bounds them: the narrow tiles, the 64×64 tile alone and the 64×96 pair.
        let tiles: std::collections::BTreeSet<_> =
            hopper().iter().filter(|s| s.general).map(|s| (s.tile_m, s.tile_n)).collect();
        let calls_of = |tile: (u32, u32)| {
            let mut at: Vec<_> = p
                .iter()
                .filter(|p| p.quantity == Quantity::Rate && (p.kernel.tile_m, p.kernel.tile_n) == tile)
                .map(|p| (p.op.m, p.op.n))
                .collect();
            at.dedup();
            at.len()
        };
        let unrated: Vec<_> = tiles.iter().copied().filter(|&t| calls_of(t) == 0).collect();
        assert_eq!(unrated, UNRATED);
        for t in tiles.iter().filter(|t| !unrated.contains(t)) {
            assert!(calls_of(*t) >= 2, "the {}×{} tile is rated at {} call", t.0, t.1, calls_of(*t));
        }
        assert_eq!(
            names(Quantity::Epilogue),
            ["hopper_v7_mid_kk", "hopper_v7_square_kk", "hopper_v7_mid_kk", "hopper_v7_square_kk"]
        );
        assert_eq!(count(Quantity::SplitPenalty), 2 * SPLIT_SHAPES.len(), "the wide tile splits at every split shape");
        assert!(count(Quantity::Dram) > 40);
        let cta: Vec<_> = p
            .iter()
            .filter(|p| matches!(p.quantity, Quantity::CtaStream | Quantity::Fixup))
            .map(|p| p.kernel.name)
            .collect();
        assert_eq!(cta, ["hopper_v7_narrow16_kk_cm", "hopper_v7_narrow16_kk_cm"]);
        // Probes of one call are adjacent, so that they share its inputs.
        let mut seen = Vec::new();
        for w in p.windows(2) {
            let (a, b) = ((w[0].op.m, w[0].op.n, w[0].op.k), (w[1].op.m, w[1].op.n, w[1].op.k));
            if a != b {
                assert!(!seen.contains(&b), "{b:?} probed apart");
                seen.push(a);
            }
        }
    }

    /// How fast any tile runs at `op`'s size, beyond what the price says: what each quantity's
    /// fit must see past.
    fn pace_of(op: &GemmOp) -> f64 {
        1.0 + 0.04 * ((op.m * 7 + op.n * 3 + op.k) % 11) as f64
    }

    #[test]
    fn the_fit_recovers_the_machine_its_times_came_from() {
        // Times as the price of `truth` says, at each rate or split call at the call's own pace,
        // the slower entries at each decode call slower still: the fit must give `truth` back.
        let truth = other_machine();
        let p = probes(&hopper(), 132, &Model::BUILT_IN);
        let ms: Vec<f64> = p
            .iter()
            .map(|p| {
                let (compute, memory) = price_us(p, 132, &truth, truth.rate(p.kernel).unwrap());
                let us = match p.quantity {
                    Quantity::Dram | Quantity::CtaStream | Quantity::Fixup => memory.max(compute),
                    Quantity::Rate | Quantity::SplitPenalty => compute * pace_of(&p.op),
                    Quantity::WideKb | Quantity::Epilogue => compute,
                };
                us * 1e-3
            })
            .collect();
        let fitted = fit(&p, &ms, 132, &Model::BUILT_IN).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs();
        for r in truth.rates.iter() {
            let f = fitted.rates.iter().find(|f| (f.tile_m, f.tile_n) == (r.tile_m, r.tile_n)).unwrap();
            // The tiles without a rate probe keep the base model's rate.
            let want = if UNRATED.contains(&(r.tile_m, r.tile_n)) {
                Model::BUILT_IN.rate_of(r.tile_m, r.tile_n).unwrap()
            } else {
                r.rate
            };
            assert!(close(f.rate, want), "{}×{}: {} against {want}", r.tile_m, r.tile_n, f.rate);
        }
        for ((name, f), (_, t)) in fitted.scalars().into_iter().zip(truth.scalars()) {
            assert!(close(f, t), "{name}: fitted {f}, true {t}");
        }
        assert_eq!(fitted.check(hopper().into_iter()), Ok(()));
    }

    #[test]
    fn a_fit_without_the_wide_tile_or_with_a_bad_time_is_refused() {
        let p = probes(&hopper(), 132, &Model::BUILT_IN);
        let no_wide: Vec<Probe> =
            p.iter().copied().filter(|p| !(p.quantity == Quantity::Rate && p.kernel.name == "hopper_v7")).collect();
        assert!(fit(&no_wide, &vec![1.0; no_wide.len()], 132, &Model::BUILT_IN).is_err());
        let mut ms = vec![1.0; p.len()];
        ms[3] = f64::NAN;
        assert!(fit(&p, &ms, 132, &Model::BUILT_IN).is_err());
        assert!(fit(&p, &ms[1..], 132, &Model::BUILT_IN).is_err());
    }
}
