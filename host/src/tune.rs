//! Tuning: time the entries `auto` weighs for one call's shape on the caller's own device, and
//! run the fastest for every later call of that shape ([`Gemm::tune`](crate::Gemm::tune)).
//!
//! `auto`'s price ([`choose::price`]) is a model fitted to forced measurements on one H200: at
//! shapes between those measured it can miss by a few percent, and another card (an H100's
//! clocks and power cap, a part with fewer SMs) moves what is fastest. A service that runs a
//! fixed set of shapes tunes them once, keeps the [`TuneTable`] as text, and loads it at start.
//! Tuned choices are hints: a call that the tuned entry cannot compute falls back to the price.

use crate::choose;
use crate::error::{Error, Result};
use crate::gemm::{Gemm, Prepared};
use crate::measure::{self, drv};
use crate::op::GemmOp;
use cudarc::driver::{CudaSlice, CudaStream};
use half::bf16;
use hgemm_kernels::spec::KernelSpec;
use std::sync::Arc;

pub use crate::tuned::{Choice, TuneKey, TuneTable, pick, shape};

/// How [`Gemm::tune_with`](crate::Gemm::tune_with) measures.
#[derive(Clone, Copy, Debug)]
pub struct TuneOptions {
    /// Timed samples of each candidate, taken in turn (the median counts), and again of the
    /// fastest and `auto`'s pick head to head.
    pub samples: usize,
    /// Milliseconds of back-to-back calls a sample times, after two thirds as long untimed (the
    /// card's clock under its power cap settles to each candidate's own draw).
    pub sample_ms: f64,
    /// Candidates: the entries priced within this factor of the cheapest…
    pub window: f64,
    /// …at most this many of them, cheapest first (`auto`'s own pick always among them).
    pub max_candidates: usize,
    /// The fastest replaces `auto`'s pick only if, head to head, that is at least this much
    /// slower (noise between samples is about half a percent).
    pub min_gain: f64,
}

impl Default for TuneOptions {
    fn default() -> TuneOptions {
        TuneOptions { samples: 5, sample_ms: 60.0, window: 1.15, max_candidates: 5, min_gain: 1.01 }
    }
}

/// One candidate as tuning timed it.
#[derive(Clone, Debug)]
pub struct Timed {
    /// The entry and schedule.
    pub choice: Choice,
    /// `auto`'s price for it ([`choose::Priced::cost`]).
    pub cost: f64,
    /// Median milliseconds per call.
    pub ms: f64,
    /// Milliseconds per call of each sample of the first round, in the order taken.
    pub samples: Vec<f64>,
}

/// What [`Gemm::tune`](crate::Gemm::tune) measured for one call's shape.
#[derive(Clone, Debug)]
pub struct Tuning {
    /// The call's key.
    pub key: TuneKey,
    /// What `auto`'s price picks.
    pub priced: Choice,
    /// What the handle now runs for calls with this key.
    pub chosen: Choice,
    /// Every candidate timed, fastest first.
    pub timed: Vec<Timed>,
    /// Where the fastest was not auto's pick: the two again, head to head.
    pub head_to_head: Option<HeadToHead>,
}

/// The fastest candidate against `auto`'s pick, alternating, after the first round of timing.
#[derive(Clone, Copy, Debug)]
pub struct HeadToHead {
    /// The fastest of the first round.
    pub challenger: Choice,
    /// Median milliseconds per call of `auto`'s pick.
    pub priced_ms: f64,
    /// Median milliseconds per call of the challenger.
    pub challenger_ms: f64,
}

impl Tuning {
    /// Milliseconds per call of `choice`, as timed.
    pub fn ms(&self, choice: &Choice) -> Option<f64> {
        self.timed.iter().find(|t| t.choice == *choice).map(|t| t.ms)
    }

    /// How much faster the chosen entry ran than `auto`'s pick, head to head (1.0 where they are
    /// the same).
    pub fn gain(&self) -> f64 {
        match self.head_to_head {
            Some(h) if h.challenger == self.chosen => h.priced_ms / h.challenger_ms,
            _ => 1.0,
        }
    }
}

/// The candidates tuning times for `op`: every entry `auto` prices (its rules' exclusions too:
/// tuning measures what the rules guessed), with and without its split, priced within
/// `opts.window` of the cheapest, at most `opts.max_candidates`, cheapest first, and `priced`
/// (`auto`'s pick) always first.
pub fn candidates(
    kernels: &[&'static KernelSpec],
    op: &GemmOp,
    sms: u32,
    model: &choose::Model,
    priced: Choice,
    opts: &TuneOptions,
) -> Vec<(Choice, f64)> {
    let priced_as_called: Vec<_> = choose::price(kernels.iter().copied(), op, sms, model).collect();
    let split = priced_as_called.iter().map(|p| (Choice { kernel: p.spec, split: p.split() }, p.cost));
    // The same entries run whole, where they would split (`price` then counts whole waves). The
    // whole call's schedules never split, so which entries split is read off the call as made.
    let whole_op = op.stream_k(false);
    let whole = choose::price(kernels.iter().copied(), &whole_op, sms, model)
        .filter(|w| priced_as_called.iter().any(|p| p.split() && p.spec.name == w.spec.name))
        .map(|p| (Choice { kernel: p.spec, split: false }, p.cost));
    let mut all: Vec<(Choice, f64)> = split.chain(whole).collect();
    all.sort_by(|a, b| a.1.total_cmp(&b.1));
    let cheapest = all.first().map_or(f64::INFINITY, |c| c.1);
    let priced_cost = all.iter().find(|c| c.0 == priced).map_or(cheapest, |c| c.1);
    let mut out = vec![(priced, priced_cost)];
    for c in all {
        if out.len() >= opts.max_candidates.max(1) || c.1 > cheapest * opts.window {
            break;
        }
        if !out.iter().any(|o| o.0 == c.0) {
            out.push(c);
        }
    }
    out
}

// The handle's tuning methods live here, with the measuring, so that the handle does not
// depend on this module.
impl Gemm {
    /// Time the kernels `auto` weighs for `op`'s shape on this device, on buffers of its own
    /// (nothing of the caller's is read or written), and from now on run the fastest for every
    /// call with the same [`TuneKey`]: sizes, storage orders, epilogue
    /// class and whether splitting is allowed. With the default [`TuneOptions`], 2–3 seconds a
    /// shape; it synchronizes `stream`. A candidate whose result disagrees with `auto`'s pick
    /// is an [`Error::Tuning`] (a bug to report), never a choice. The tuned kernel's result may
    /// differ from the untuned one's in the last bits (another order of the same sums); it is
    /// reproducible for a given table.
    pub fn tune(&self, stream: &Arc<CudaStream>, op: &GemmOp) -> Result<Tuning> {
        self.tune_with(stream, op, &TuneOptions::default())
    }

    /// [`Gemm::tune`] with other samples, candidates or threshold.
    pub fn tune_with(&self, stream: &Arc<CudaStream>, op: &GemmOp, opts: &TuneOptions) -> Result<Tuning> {
        // A tuned choice is keyed by shape (`TuneKey`) and serves calls with any budget or
        // none: it is measured on every SM (calls under a budget take it only where its entry
        // keeps the budget, its grid cut to it).
        if let Some(max_sms) = self.budgeted(op).max_sms {
            return Err(Error::Tuning(format!(
                "the call or the handle sets an SM budget ({max_sms}): tuned choices are measured on every SM and serve calls with any budget, so tune without one"
            )));
        }
        if self.capture(stream)?.under_way() {
            return Err(Error::Graph(
                "tuning times kernels and waits for them, which a stream being captured cannot".into(),
            ));
        }
        let tuning = measure(self, stream, op, opts)?;
        self.insert_tuned(op, tuning.chosen)?;
        Ok(tuning)
    }
}

/// Time `op`'s candidates on `gemm`'s device (see [`Gemm::tune_with`](crate::Gemm::tune_with)).
pub(crate) fn measure(gemm: &Gemm, stream: &Arc<CudaStream>, op: &GemmOp, opts: &TuneOptions) -> Result<Tuning> {
    // Timed without its bias (tuning has no bias buffer of the caller's; one vector read per
    // tile is no part of the choice, which `TuneKey` keys without it); activation and gating stay.
    let op = &GemmOp { bias: None, bias_stride: 0, ..*op };
    // The shape's own checks, before any buffer is sized: the buffers are tuning's own, made to fit.
    if !op.validate_shape()? {
        return Err(Error::InvalidShape(format!("nothing to tune: M = {}, N = {}, batch = {}", op.m, op.n, op.batch)));
    }
    let (la, lb, lc) = measure::lengths(op);
    if opts.samples == 0 || opts.sample_ms.is_nan() || opts.sample_ms <= 0.0 {
        return Err(Error::Tuning(format!("{} samples of {} ms: both must be positive", opts.samples, opts.sample_ms)));
    }
    let key = TuneKey::of(op);
    let priced = gemm.priced(op).ok_or_else(|| Error::Unsupported {
        kernel: "auto",
        reason: format!("no {} kernel computes {}", gemm.family().name(), shape(&key)),
    })?;
    let kernels: Vec<&'static KernelSpec> = gemm.kernels().collect();

    // Fresh inputs (B scaled by K^-1/2), rotated beyond L2.
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let set_bytes = la.saturating_add(lb).saturating_add(lc).saturating_mul(2);
    let sets = measure::rotation_sets(gemm.device().l2_bytes, set_bytes);
    let (a, b, mut c) = measure::input_sets(gemm, stream, op, sets, seed)?;

    // Each candidate once on the first set, from C as it was (poisoned, where C is not read, so
    // that an element left unwritten shows), against auto's pick: tuning never takes a kernel
    // that disagrees with it.
    let c_before = stream.clone_dtod(&c[0]).map_err(drv("cuMemcpyDtoD"))?;
    let start = |buf: &mut CudaSlice<bf16>| -> Result<()> {
        stream.memcpy_dtod(&c_before, buf).map_err(drv("cuMemcpyDtoD"))?;
        if op.beta == 0.0 {
            measure::fill(gemm, stream, buf, measure::POISON)?;
        }
        Ok(())
    };
    let mut reference = stream.clone_dtod(&c_before).map_err(drv("cuMemcpyDtoD"))?;
    start(&mut reference)?;
    gemm.gemm_with(priced.kernel, stream, &priced.op(op), &a[0], &b[0], &mut reference)?;
    let mut out = stream.clone_dtod(&c_before).map_err(drv("cuMemcpyDtoD"))?;
    let mut timed = Vec::new();
    for (choice, cost) in candidates(&kernels, op, gemm.device().sms, gemm.model(), priced, opts) {
        let run_op = choice.op(op);
        let mut launches = Vec::with_capacity(sets);
        for s in 0..sets {
            match gemm.prepare(Some(choice.kernel), stream, &run_op, &a[s], &b[s], &mut c[s]) {
                Ok(p) => launches.push(p),
                // A candidate the price weighed but whose launch plan fails here (a tensor map
                // TMA cannot encode for these strides) is not a candidate; auto's pick must run.
                Err(_) if choice != priced => break,
                Err(e) => return Err(e),
            }
        }
        if launches.len() < sets {
            continue;
        }
        if choice != priced {
            start(&mut out)?;
            gemm.gemm_with(choice.kernel, stream, &run_op, &a[0], &b[0], &mut out)?;
            let cmp = measure::compare_on_device(gemm, stream, &out, &reference)?;
            if !cmp.passed() {
                return Err(Error::Tuning(format!(
                    "{} and {} disagree at {}: relative error {:.2e}, {} elements unwritten, {} written outside C",
                    choice.describe(&key),
                    priced.describe(&key),
                    shape(&key),
                    cmp.rel_error(),
                    cmp.unwritten,
                    cmp.stray
                )));
            }
        }
        timed.push((Timed { choice, cost, ms: f64::NAN, samples: Vec::with_capacity(opts.samples) }, launches));
    }

    // A sample is `sample_ms` of back-to-back calls after two thirds as long untimed, as in
    // `hgemm bench`: the power-capped card's clock follows the draw of the last tens of
    // milliseconds, and shorter samples (20 ms after 13 ms) misordered the wide and square tiles
    // (H200, cf83500, 2026-11-30); 60 ms after 40 ms ordered all six shapes as the bench did.
    let (calls, warmup) = measure::sample_calls(measure::macs(op), set_bytes, opts.sample_ms);
    let sample = |launches: &[Prepared]| -> Result<f64> {
        // SAFETY: prepared on this function's buffers, alive until it returns, used on this one stream.
        let ms = measure::time_median(stream, warmup, 1, calls, |j| unsafe {
            gemm.launch_prepared(&launches[j % sets], stream)
        })?;
        Ok(ms[0])
    };
    let n = timed.len();
    for round in 0..opts.samples {
        // Each round starts one candidate later: none always follows the same one.
        for i in 0..n {
            let (t, launches) = &mut timed[(round + i) % n];
            t.samples.push(sample(launches)?);
        }
    }
    for (t, _) in timed.iter_mut() {
        t.ms = measure::median(&t.samples);
    }
    timed.sort_by(|x, y| x.0.ms.total_cmp(&y.0.ms));
    // The fastest of several noisy medians is likely to be one that read low: before it
    // replaces auto's pick, the two run head to head, alternating, as many samples again.
    let head_to_head = match (timed.first(), timed.iter().find(|t| t.0.choice == priced)) {
        (Some(best), Some(auto)) if best.0.choice != priced => {
            let (mut a, mut b) = (Vec::with_capacity(opts.samples), Vec::with_capacity(opts.samples));
            for _ in 0..opts.samples {
                a.push(sample(&auto.1)?);
                b.push(sample(&best.1)?);
            }
            Some(HeadToHead {
                challenger: best.0.choice,
                priced_ms: measure::median(&a),
                challenger_ms: measure::median(&b),
            })
        }
        _ => None,
    };
    stream.synchronize().map_err(drv("cuStreamSynchronize"))?;
    let chosen = match head_to_head {
        Some(h) if h.priced_ms >= h.challenger_ms * opts.min_gain => h.challenger,
        _ => priced,
    };
    Ok(Tuning { key, priced, chosen, timed: timed.into_iter().map(|(t, _)| t).collect(), head_to_head })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::choose::Model;
    use crate::op::Layout;
    use crate::plan;
    use hgemm_kernels::spec::Family;

    #[test]
    fn candidates_start_with_autos_pick_and_stay_in_the_window() {
        let hopper: Vec<&'static KernelSpec> =
            hgemm_kernels::kernels().filter(|k| k.family == Family::Hopper).collect();
        let kernels = || hopper.iter().copied();
        let opts = TuneOptions::default();
        for (m, n, k) in
            [(256, 22016, 4096), (8192, 8192, 8192), (2304, 2304, 2304), (640, 3072, 1024), (128, 8192, 8192)]
        {
            let op = GemmOp::new(m, n, k);
            let pick = choose::choose(kernels(), &op, 132, &Model::BUILT_IN).unwrap();
            let priced = Choice { kernel: pick, split: true };
            let c = candidates(&hopper, &op, 132, &Model::BUILT_IN, priced, &opts);
            assert_eq!(c[0].0, priced, "{m}x{n}x{k}");
            assert!(c.len() <= opts.max_candidates, "{m}x{n}x{k}: {}", c.len());
            let cheapest = c.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
            assert!(c[1..].iter().all(|x| x.1 <= cheapest * opts.window), "{m}x{n}x{k}");
            assert!(c[1..].windows(2).all(|w| w[0].1 <= w[1].1), "{m}x{n}x{k}: cheapest first");
            for (i, x) in c.iter().enumerate() {
                assert!(!c[..i].iter().any(|y| y.0 == x.0), "{m}x{n}x{k}: {} twice", x.0.kernel.name);
                assert!(plan::supports(x.0.kernel, &op).is_ok());
            }
        }
        // Where auto's pick splits, the same entry whole is weighed too (256×22016×4096: wide
        // tiles split, mid tiles split 2–5% faster on the H200, 7aade7e, 2026-11-30).
        let op = GemmOp::new(256, 22016, 4096);
        let c = candidates(
            &hopper,
            &op,
            132,
            &Model::BUILT_IN,
            Choice { kernel: choose::choose(kernels(), &op, 132, &Model::BUILT_IN).unwrap(), split: true },
            &opts,
        );
        let names: Vec<String> = c.iter().map(|x| x.0.describe(&TuneKey::of(&op))).collect();
        assert!(names.iter().any(|s| s == "hopper_v7_mid_kk"), "{names:?}");
        // And at 8192³, where the wide tile splits its last waves, the wide tile whole.
        let op = GemmOp::new(8192, 8192, 8192);
        let wide = choose::choose(kernels(), &op, 132, &Model::BUILT_IN).unwrap();
        let c = candidates(&hopper, &op, 132, &Model::BUILT_IN, Choice { kernel: wide, split: true }, &opts);
        let names: Vec<String> = c.iter().map(|x| x.0.describe(&TuneKey::of(&op))).collect();
        assert!(c.iter().any(|x| x.0 == Choice { kernel: wide, split: false }), "{names:?}");
        // A general call (the GPU test tunes it) has rivals too.
        let general = GemmOp::new(2000, 2000, 2000).c(Layout::ColMajor, 2000).beta(0.5).batched(
            2,
            2000 * 2000,
            2000 * 2000,
            2000 * 2000,
        );
        let c = candidates(
            &hopper,
            &general,
            132,
            &Model::BUILT_IN,
            Choice { kernel: choose::choose(kernels(), &general, 132, &Model::BUILT_IN).unwrap(), split: true },
            &opts,
        );
        assert!(c.len() >= 2, "{:?}", c.iter().map(|x| x.0.kernel.name).collect::<Vec<_>>());
        // With splitting forbidden, nothing splits.
        let whole = op.stream_k(false);
        let c = candidates(
            &hopper,
            &whole,
            132,
            &Model::BUILT_IN,
            Choice { kernel: choose::choose(kernels(), &whole, 132, &Model::BUILT_IN).unwrap(), split: false },
            &opts,
        );
        assert!(c.iter().all(|x| !x.0.split));
    }
}
