//! `hgemm calibrate`: re-measure `auto`'s model on this device ([`hgemm::Gemm::calibrate`]),
//! or fit its rates to a recorded survey (`--survey`, no GPU); print each quantity beside the
//! built-in model's, and write the model as JSON for `--model`.

use crate::CliResult;
use crate::args::Calibrate;
use hgemm::calibrate::{self, Probe};
use hgemm::{CalibrateOptions, Family, GemmOp, KernelSpec, Model};
use std::path::Path;

pub fn run(a: &Calibrate) -> CliResult {
    if let Some(path) = &a.survey {
        let model = from_survey(path, a.sms)?;
        return write(&model, &a.out);
    }
    let gemm = crate::open()?;
    let stream = gemm.context().default_stream();
    let d = gemm.device();
    println!("calibrate on {} ({} SMs): {} samples of ~{} ms a probe", d.name, d.sms, a.samples, a.sample_ms);
    let opts = CalibrateOptions { samples: a.samples as usize, sample_ms: a.sample_ms };
    let cal = gemm.calibrate(&stream, &opts)?;
    for (p, ms) in &cal.timed {
        let split = if p.op.stream_k { "split" } else { "whole" };
        let shape = format!("{}x{}x{}", p.op.m, p.op.n, p.op.k);
        println!("  {:<14} {:<26} {shape:<18} {split}  {ms:.4} ms", p.quantity.name(), p.kernel.name);
    }
    write(&cal.model, &a.out)
}

/// The model whose rates fit the whole timings of the survey in `path` (taken on `sms` SMs): at
/// each shape, those of the entries the calibration would probe there
/// ([`calibrate::rate_probes`]).
fn from_survey(path: &Path, sms: u32) -> Result<Model, String> {
    let entries: Vec<&'static KernelSpec> = hgemm_kernels::kernels().filter(|k| k.family == Family::Hopper).collect();
    let (mut probes, mut ms): (Vec<Probe>, Vec<f64>) = (Vec::new(), Vec::new());
    for line in crate::score::read(path)? {
        for p in calibrate::rate_probes(&entries, &GemmOp::new(line.m, line.n, line.k), sms, &Model::BUILT_IN) {
            if let Some(t) = line.timed.iter().find(|t| t.0 == p.kernel.name && !t.1) {
                probes.push(p);
                ms.push(t.2);
            }
        }
    }
    println!("rates fitted to {} whole timings in {}", probes.len(), path.display());
    let mut model = calibrate::fit(&probes, &ms, sms, &Model::BUILT_IN).map_err(|e| e.to_string())?;
    model.measured_on = format!("rates fitted to {} ({sms} SMs), hgemm calibrate --survey", path.display()).into();
    Ok(model)
}

/// Print `m` beside the built-in model and write it to `out`.
fn write(m: &Model, out: &Path) -> CliResult {
    let b = Model::BUILT_IN;
    println!("quantity          measured    built in");
    for ((name, x), (_, y)) in m.scalars().into_iter().zip(b.scalars()) {
        println!("{name:<16} {x:>10.4} {y:>10.4}");
    }
    for r in m.rates.iter() {
        let built_in = b.rate_of(r.tile_m, r.tile_n).map_or("-".into(), |x| format!("{x:.4}"));
        println!("rate {:>3}x{:<3}      {:>10.4} {built_in:>10}", r.tile_m, r.tile_n, r.rate);
    }
    std::fs::write(out, serde_json::to_string_pretty(m)? + "\n")?;
    println!("model written to {}", out.display());
    Ok(true)
}
