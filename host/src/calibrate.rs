//! Calibration: the quantities of `auto`'s model ([`Model`]) re-measured on this device in one run
//! ([`Gemm::calibrate`], `hgemm calibrate`), so that a card the built-in model was not fitted on
//! is priced by its own measurements. Three steps: [`probes`] says which calls measure what
//! (plain Rust), the GPU times them, and [`fit`] solves each quantity from the price of its
//! probes (plain Rust): the price is linear in each quantity, or in its inverse, so that
//! evaluating it at two values of the quantity and comparing with the time gives the value.

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
    /// Its tile's rate ([`Model::rates`]); the 128×256 tile's time also gives
    /// [`Model::wide_kb_us`].
    Rate,
    /// [`Model::epilogue_kb`]: a tile that does not hold its epilogue, at a short K.
    Epilogue,
    /// [`Model::split_penalty`]: the 128×256 tile split by stream-K.
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

/// The rates' call: 2112 tiles of 128×256, sixteen whole waves on 132 SMs, at a K of 64 blocks.
pub const RATE_SHAPE: (usize, usize, usize) = (8448, 8192, 4096);
/// The epilogue's call: the rates' M and N at a K of 16 blocks.
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

/// The probes that calibrate a model for `kernels` on `sms` SMs: each tile shape's first general
/// entry that takes [`RATE_SHAPE`]; the 128-row tiles that neither hold their epilogue nor trim their
/// last box at [`EPILOGUE_SHAPE`]; the 128×256 tile at the [`SPLIT_SHAPES`] where it splits;
/// every general entry whole at the [`DRAM_SHAPES`]; the entry of the smallest tile that takes
/// [`CTA_SHAPE`] (the one whose MMAs weigh least against its DRAM traffic), whole where its units
/// make one wave and split where they split. Calls an entry refuses are left out.
pub fn probes(kernels: &[&'static KernelSpec], sms: u32) -> Vec<Probe> {
    let general: Vec<&'static KernelSpec> = kernels.iter().copied().filter(|s| s.general && s.cluster <= sms).collect();
    let takes = |s: &KernelSpec, op: &GemmOp| refusal(s, &for_kernel(s, op).0).is_none();
    let call = |(m, n, k): (usize, usize, usize), split: bool| GemmOp::new(m, n, k).stream_k(split);
    let mut out = Vec::new();
    let mut push = |quantity, kernel: &'static KernelSpec, op: GemmOp| {
        if takes(kernel, &op) {
            out.push(Probe { quantity, kernel, op });
        }
    };
    // A tile that takes one column only (the narrowest, for calls of a few rows) has no call
    // where its MMAs outlast its DRAM traffic: it keeps the base model's rate.
    let mut tiles: Vec<(u32, u32)> = Vec::new();
    for &s in &general {
        if !tiles.contains(&(s.tile_m, s.tile_n)) && takes(s, &call(RATE_SHAPE, false)) {
            tiles.push((s.tile_m, s.tile_n));
            push(Quantity::Rate, s, call(RATE_SHAPE, false));
        }
    }
    let mut epilogue_tiles: Vec<(u32, u32)> = Vec::new();
    for &s in general.iter().filter(|s| s.tile_m == 128 && !s.holds_tile && !s.shifted_last_box() && !s.cluster_along_n)
    {
        if !epilogue_tiles.contains(&(s.tile_m, s.tile_n)) {
            epilogue_tiles.push((s.tile_m, s.tile_n));
            push(Quantity::Epilogue, s, call(EPILOGUE_SHAPE, false));
        }
    }
    if let Some(&wide) = general.iter().find(|s| (s.tile_m, s.tile_n) == WIDE) {
        for shape in SPLIT_SHAPES {
            if schedule(wide, &call(shape, true), sms).is_some_and(|sk| sk.splits()) {
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

/// The model `probes` measured, `ms` the median milliseconds per call of each (in order), on
/// `sms` SMs; quantities no probe measured keep `base`'s values. Fails where the 128×256 tile's
/// rate probe is missing (every time is relative to it) or a time is not positive.
pub fn fit(probes: &[Probe], ms: &[f64], sms: u32, base: &Model) -> Result<Model> {
    if probes.len() != ms.len() || ms.iter().any(|t| !(*t > 0.0 && t.is_finite())) {
        return Err(Error::InvalidModel(format!("{} probes, {} times, each must be positive", probes.len(), ms.len())));
    }
    let us = |i: usize| ms[i] * 1e3;
    let of = |q: Quantity| (0..probes.len()).filter(move |&i| probes[i].quantity == q);
    let mut model = base.clone();
    model.measured_on = "calibrated".into();

    // The 128×256 tile's time per K block of a wave: its price at rate 1 counts the waves.
    let wide = of(Quantity::Rate)
        .find(|&i| (probes[i].kernel.tile_m, probes[i].kernel.tile_n) == WIDE)
        .ok_or_else(|| Error::InvalidModel("no probe of the 128×256 tile's rate".into()))?;
    let one = Model { wide_kb_us: 1.0, ..base.clone() };
    model.wide_kb_us = us(wide) / price_us(&probes[wide], sms, &one, 1.0).0;

    // Each tile's rate: its price at rate 1 over its time, in the wide tile's units.
    let mut rates: Vec<TileRate> = base.rates.to_vec();
    for i in of(Quantity::Rate) {
        let s = probes[i].kernel;
        let rate = price_us(&probes[i], sms, &model, 1.0).0 / us(i);
        match rates.iter_mut().find(|r| (r.tile_m, r.tile_n) == (s.tile_m, s.tile_n)) {
            Some(r) => r.rate = rate,
            None => rates.push(TileRate { tile_m: s.tile_m, tile_n: s.tile_n, rate }),
        }
    }
    model.rates = rates.into();
    let rated = model.clone();
    let rate = |s: &KernelSpec| rated.rate(s).unwrap_or(1.0);

    // Linear in the epilogue's blocks and in the split penalty: the price at 0 and 1 (or 1 and 2)
    // gives the line, the time the point on it.
    let solve = |i: usize, m0: &Model, m1: &Model, x0: f64| {
        let (p0, p1) = (
            price_us(&probes[i], sms, m0, rate(probes[i].kernel)).0,
            price_us(&probes[i], sms, m1, rate(probes[i].kernel)).0,
        );
        x0 + (us(i) - p0) / (p1 - p0)
    };
    let epilogue: Vec<f64> = of(Quantity::Epilogue)
        .map(|i| {
            solve(i, &Model { epilogue_kb: 0.0, ..model.clone() }, &Model { epilogue_kb: 1.0, ..model.clone() }, 0.0)
        })
        .collect();
    if !epilogue.is_empty() {
        model.epilogue_kb = measure::median(&epilogue).max(0.0);
    }
    let penalty: Vec<f64> = of(Quantity::SplitPenalty)
        .map(|i| {
            solve(
                i,
                &Model { split_penalty: 1.0, ..model.clone() },
                &Model { split_penalty: 2.0, ..model.clone() },
                1.0,
            )
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
    /// Re-measure `auto`'s model on this device ([`probes`], then [`fit`]): 95 probe calls of
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
        let probes = probes(&kernels, sms);
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
            ..m
        }
    }

    #[test]
    fn every_quantity_has_its_probes() {
        let p = probes(&hopper(), 132);
        let count = |q| p.iter().filter(|p| p.quantity == q).count();
        // One rate probe per tile shape but the two that take one column only; the mid and
        // square tiles for the epilogue.
        let tiles: std::collections::BTreeSet<_> =
            hopper().iter().filter(|s| s.general).map(|s| (s.tile_m, s.tile_n)).collect();
        let rated: std::collections::BTreeSet<_> =
            p.iter().filter(|p| p.quantity == Quantity::Rate).map(|p| (p.kernel.tile_m, p.kernel.tile_n)).collect();
        assert_eq!(tiles.difference(&rated).copied().collect::<Vec<_>>(), [(64, 16), (64, 32)]);
        assert_eq!(count(Quantity::Rate), rated.len());
        let epilogue: Vec<_> = p.iter().filter(|p| p.quantity == Quantity::Epilogue).map(|p| p.kernel.name).collect();
        assert_eq!(epilogue, ["hopper_v7_mid_kk", "hopper_v7_square_kk"]);
        assert_eq!(count(Quantity::SplitPenalty), SPLIT_SHAPES.len(), "the wide tile splits at every split shape");
        assert!(count(Quantity::Dram) > 40);
        let cta: Vec<_> = p
            .iter()
            .filter(|p| matches!(p.quantity, Quantity::CtaStream | Quantity::Fixup))
            .map(|p| p.kernel.name)
            .collect();
        assert_eq!(cta, ["hopper_v7_narrow16_kk_cm", "hopper_v7_narrow16_kk_cm"]);
    }

    #[test]
    fn the_fit_recovers_the_machine_its_times_came_from() {
        // Times as the price of `truth` says, the slower entries at each decode call slower still:
        // the fit must give `truth` back.
        let truth = other_machine();
        let p = probes(&hopper(), 132);
        let ms: Vec<f64> = p
            .iter()
            .map(|p| {
                let (compute, memory) = price_us(p, 132, &truth, truth.rate(p.kernel).unwrap());
                let us = match p.quantity {
                    Quantity::Dram | Quantity::CtaStream | Quantity::Fixup => memory.max(compute),
                    _ => compute,
                };
                us * 1e-3
            })
            .collect();
        let fitted = fit(&p, &ms, 132, &Model::BUILT_IN).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs();
        for r in truth.rates.iter() {
            let f = fitted.rates.iter().find(|f| (f.tile_m, f.tile_n) == (r.tile_m, r.tile_n)).unwrap();
            // The tiles without a rate probe keep the base model's rate.
            let want = if r.tile_n < 64 { Model::BUILT_IN.rate_of(r.tile_m, r.tile_n).unwrap() } else { r.rate };
            assert!(close(f.rate, want), "{}×{}: {} against {want}", r.tile_m, r.tile_n, f.rate);
        }
        for (name, f, t) in [
            ("wide_kb_us", fitted.wide_kb_us, truth.wide_kb_us),
            ("epilogue_kb", fitted.epilogue_kb, truth.epilogue_kb),
            ("split_penalty", fitted.split_penalty, truth.split_penalty),
            ("dram_stream", fitted.dram_stream, truth.dram_stream),
            ("cta_stream", fitted.cta_stream, truth.cta_stream),
            ("fixup_us", fitted.fixup_us, truth.fixup_us),
        ] {
            assert!(close(f, t), "{name}: fitted {f}, true {t}");
        }
        assert_eq!(fitted.check(hopper().into_iter()), Ok(()));
    }

    #[test]
    fn a_fit_without_the_wide_tile_or_with_a_bad_time_is_refused() {
        let p = probes(&hopper(), 132);
        let no_wide: Vec<Probe> = p.iter().copied().filter(|p| p.quantity != Quantity::Rate).collect();
        assert!(fit(&no_wide, &vec![1.0; no_wide.len()], 132, &Model::BUILT_IN).is_err());
        let mut ms = vec![1.0; p.len()];
        ms[3] = f64::NAN;
        assert!(fit(&p, &ms, 132, &Model::BUILT_IN).is_err());
        assert!(fit(&p, &ms[1..], 132, &Model::BUILT_IN).is_err());
    }
}
