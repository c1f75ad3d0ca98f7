//! The measured quantities `auto`'s price reads ([`price`](super::price)), as one value: built in
//! for the Hopper cards it was fitted on ([`Model::BUILT_IN`]), re-measured on any other card in
//! one run by [`Gemm::calibrate`](crate::Gemm::calibrate) (`hgemm calibrate`), and set on a
//! handle with [`Gemm::set_model`](crate::Gemm::set_model).

use crate::error::{Error, Result};
use hgemm_kernels::spec::KernelSpec;
use std::borrow::Cow;

/// What `auto`'s price knows of the machine: each tile shape's rate, the cost of splitting K,
/// the epilogue's share at a short K, what DRAM and one CTA stream, and what pairs sharing the
/// smaller operand lose. The SM count, which sets the waves, is the device's (or the call's
/// budget), not the model's.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Model {
    /// Where it was measured: the card, the date and how (`"built in"` for [`Model::BUILT_IN`]).
    pub measured_on: Cow<'static, str>,
    /// Each tile shape's throughput relative to the 128×256 tile's, in many whole waves at a K of
    /// 48 blocks or more (`price` weighs an entry whose tile has no rate nowhere).
    pub rates: Cow<'static, [TileRate]>,
    /// What the split part of a stream-K schedule's path costs beyond its length, as a factor:
    /// split units lose their L2 reuse and wait for their fix-ups.
    pub split_penalty: f64,
    /// A tile's epilogue, in K blocks (64 deep) of its MMAs, where the kernel does not hold the
    /// finished tile under the next one's MMAs: what a short K adds to a tile's time.
    pub epilogue_kb: f64,
    /// The time of one K block of a wave of 128×256 tiles, µs: turns DRAM time into waves.
    pub wide_kb_us: f64,
    /// What DRAM streams to all SMs together, bytes per µs (a call's launch included).
    pub dram_stream: f64,
    /// What one CTA streams on its own, bytes per µs: with few CTAs at work, DRAM is not the
    /// limit.
    pub cta_stream: f64,
    /// The fix-ups' round trip after a split call bound by DRAM, µs.
    pub fixup_us: f64,
    /// What pairs of CTAs sharing the smaller operand by multicast pay beyond pairs of the same
    /// tile sharing the larger, in rows of the call's short side S: their tiles take
    /// `1 + share_smaller / S` times as long, for S of 129 to 512 rows (above, DRAM's time prices
    /// the call; beyond, the rates hold it). 0 in models written before it was measured.
    #[cfg_attr(feature = "serde", serde(default))]
    pub share_smaller: f64,
}

/// One tile shape's rate ([`Model::rates`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TileRate {
    /// The tile's rows (M).
    pub tile_m: u32,
    /// The tile's columns (N).
    pub tile_n: u32,
    /// Its throughput relative to the 128×256 tile's (1.0).
    pub rate: f64,
}

const fn rate(tile_m: u32, tile_n: u32, rate: f64) -> TileRate {
    TileRate { tile_m, tile_n, rate }
}

impl Model {
    /// The model `auto` has without calibration: each quantity fitted to forced measurements on an
    /// H200 and an H100 (both 132 SMs, 700 W), the measurement beside each. Blackwell's entries
    /// are weighed with the Hopper tiles' rates of the same shape until a B200 measures them.
    pub const BUILT_IN: Model = Model {
        measured_on: Cow::Borrowed("built in: H200 and H100 (132 SMs, 700 W), 2026-11-30 to 2026-12-07"),
        rates: Cow::Borrowed(&[
            rate(128, 256, 1.0),
            // 128×224: 0.95 picks the faster entry on every shape measured against it; 0.9 leaves
            // 14336×208×4096 and 208×14336×4096 to mid tiles (7% slower), and 1.0 takes
            // 8192×208×8192 from split square tiles (not measured).
            rate(128, 224, 0.95),
            rate(128, 192, 0.95),
            // 128×160: 0.85–0.9 pick the faster entry on every shape measured against it; 0.8
            // gives 14336×160×4096 and 144×14336×4096 back to the trim tile (1–1.5% slower), and
            // 0.95 takes 8192×160×8192 from it, split (H200, 8bff26d).
            rate(128, 160, 0.9),
            rate(128, 128, 0.9),
            // The twin pairs: anything from 0.845 to 0.89 picks the faster entry at 37 of the 38
            // shapes measured against them (H200, 91ffc57, 2026-11-30).
            rate(128, 112, 0.85),
            rate(128, 96, 0.85),
            // 80 wide, 0.78: at 0.85 `share_smaller` moved eight calls of 129–160 rows from the
            // mid tile trimmed to them, which ran 0.986× as fast (0.948–1.015×; H100, forced,
            // 2026-12-07); at 0.78 one of those moves stays (129×37888×3584, 1.009×) and one
            // call of theirs goes to the mid tile trimmed (291×3584×14336, split, unmeasured).
            // `hgemm calibrate` measured 0.63–0.70.
            rate(128, 80, 0.78),
            // The lean tile: 0.77–0.79 picks the faster entry on every shape measured against it
            // (H200, 5596121, 2026-11-30).
            rate(64, 192, 0.78),
            // The trim tile, in one column of tiles: 0.75 picks the faster entry on every shape
            // measured against it, where 0.70 and 0.80 each miss one (H200, 65280de, 2026-11-30).
            rate(64, 160, 0.75),
            rate(64, 128, 0.75),
            rate(64, 96, 0.75),
            rate(64, 64, 0.75),
            rate(64, 32, 0.75),
            rate(64, 16, 0.75),
            // The tall tiles: 128 wide, 0.95–0.96 of the wide tile's speed at 8192³ (H100, forced,
            // 2026-12-06); 160 wide 0.95–0.96 at 8192³ and 4096×8192×4096, 144 wide 0.95–0.98
            // (0.86 column-major at 4096×8192×4096; H200, forced, 2026-12-07).
            rate(256, 128, 0.95),
            rate(256, 144, 0.95),
            rate(256, 160, 0.95),
            // The long tiles: forced at 8192³ they ran 0.93–0.96 of the wide tile's speed, at
            // 4096×8192×4096 0.90–0.95 (H100, 2026-12-07), every width and orientation.
            rate(192, 128, 0.93),
            rate(192, 144, 0.93),
            rate(192, 160, 0.93),
            rate(192, 176, 0.93),
        ]),
        // The whole waves before a split pay nothing (H200, 65eeaf8, 2026-12-01).
        split_penalty: 1.10,
        // The 128×256 tile's epilogue took 2.2–2.6 blocks before it was held (H200, 5ca1795,
        // 2026-11-30), which is what takes held 128×256 tiles over 128×192 ones at large M and N
        // and K of 512–2048, and nowhere else.
        epilogue_kb: 2.0,
        // The 128×256 tile at 8192³ on an H100 (about 720 TFLOP/s over 132 SMs).
        wide_kb_us: 0.77,
        // What the H100's decode calls reached (2.4 TB/s for 64 to 108 CTAs at 58×5120×5120 and
        // 61×6144×4096, launch included, where cuBLAS reached 2.3; H100, `hgemm survey`,
        // 2026-12-07).
        dram_stream: 2.5e6,
        // The 24 pairs of 64×128 tiles at 108×3072×8192 read B at 38 GB/s a CTA (H100,
        // 2026-12-07), so that about 66 CTAs fill DRAM.
        cta_stream: 38e3,
        // The 64×128 pairs split at 108×3072×8192 took 5.5 µs longer than their DRAM traffic
        // (H100, 2026-12-07).
        fixup_us: 5.0,
        // The same tile in its two forms, pairs sharing A and pairs sharing B, on the 69 shapes of
        // `docs/surveys/h100-2026-12-07.jsonl`: the form sharing the smaller operand ran slower
        // than the price said against the other, by 7.8% (mean of logs) at short sides of
        // 129–256, 4–6% at 257–1024 and 2–3% beyond. 15 rows moves 29 of the 1348 planned
        // shapes, none of the tables; forced against the picks before (H100, 2026-12-07), 28 of
        // them ran 1.025× as fast (0.934× cuBLAS against 0.911×), 10 faster by more than 2%
        // (346×5120×27648 1.18×), one slower (396×6144×16384 0.95×); the survey scores 0.929×
        // against 0.922×.
        share_smaller: 15.0,
    };

    /// The rate of `spec`'s tile shape, if the model has one.
    pub fn rate(&self, spec: &KernelSpec) -> Option<f64> {
        self.rate_of(spec.tile_m, spec.tile_n)
    }

    /// The rate of the `tile_m`×`tile_n` tile, if the model has one.
    pub fn rate_of(&self, tile_m: u32, tile_n: u32) -> Option<f64> {
        self.rates.iter().find(|r| (r.tile_m, r.tile_n) == (tile_m, tile_n)).map(|r| r.rate)
    }

    /// Every quantity but the rates, by its field's name, in the order of the fields.
    pub fn scalars(&self) -> [(&'static str, f64); 7] {
        [
            ("split_penalty", self.split_penalty),
            ("epilogue_kb", self.epilogue_kb),
            ("wide_kb_us", self.wide_kb_us),
            ("dram_stream", self.dram_stream),
            ("cta_stream", self.cta_stream),
            ("fixup_us", self.fixup_us),
            ("share_smaller", self.share_smaller),
        ]
    }

    /// Whether `auto` can weigh every general entry of `kernels` with this model: a rate for each
    /// tile shape, and every quantity finite and positive (the split penalty and the rates at
    /// most 4, the penalty at least 1). [`Error::InvalidModel`] says what is wrong.
    pub fn check<'a>(&self, kernels: impl Iterator<Item = &'a KernelSpec>) -> Result<()> {
        let bad = |what: String| Err(Error::InvalidModel(what));
        // The bounds of each of `scalars`, in its order.
        let bounds = [
            (1.0, 4.0),
            (0.0, 64.0),
            (f64::MIN_POSITIVE, f64::MAX),
            (f64::MIN_POSITIVE, f64::MAX),
            (f64::MIN_POSITIVE, f64::MAX),
            (0.0, f64::MAX),
            (0.0, 1024.0),
        ];
        for ((name, v), (lo, hi)) in self.scalars().into_iter().zip(bounds) {
            if !(lo..=hi).contains(&v) {
                return bad(format!("{name} is {v}, outside {lo}..={hi}"));
            }
        }
        for r in self.rates.iter() {
            if !(r.rate > 0.0 && r.rate <= 4.0) {
                return bad(format!("the {}×{} tile's rate is {}, outside (0, 4]", r.tile_m, r.tile_n, r.rate));
            }
        }
        match kernels.filter(|s| s.general).find(|s| self.rate(s).is_none()) {
            Some(s) => bad(format!("no rate for the {}×{} tile of {}", s.tile_m, s.tile_n, s.name)),
            None => Ok(()),
        }
    }
}

impl Default for Model {
    fn default() -> Model {
        Model::BUILT_IN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_model_rates_every_general_entry() {
        assert_eq!(Model::BUILT_IN.check(hgemm_kernels::kernels()), Ok(()));
        let wide = hgemm_kernels::kernels().find(|s| s.name == "hopper_v7").unwrap();
        assert_eq!(Model::BUILT_IN.rate(wide), Some(1.0));
    }

    #[test]
    fn a_model_without_a_tile_or_with_a_bad_quantity_is_refused() {
        let mut m = Model::BUILT_IN;
        m.rates.to_mut().retain(|r| (r.tile_m, r.tile_n) != (64, 192));
        let e = m.check(hgemm_kernels::kernels()).unwrap_err();
        assert!(e.to_string().contains("64×192"), "{e}");
        for change in [
            |m: &mut Model| m.split_penalty = 0.9,
            |m: &mut Model| m.dram_stream = f64::NAN,
            |m: &mut Model| m.cta_stream = 0.0,
            |m: &mut Model| m.rates.to_mut()[0].rate = -1.0,
        ] {
            let mut m = Model::BUILT_IN;
            change(&mut m);
            assert!(matches!(m.check(hgemm_kernels::kernels()), Err(Error::InvalidModel(_))), "{m:?}");
        }
    }
}
