//! `hgemm calibrate`: re-measure `auto`'s model on this device ([`hgemm::Gemm::calibrate`]),
//! print every probe and each quantity beside the built-in model's, and write the model as JSON
//! for `--model`.

use crate::CliResult;
use crate::args::Calibrate;
use hgemm::{CalibrateOptions, Model};

pub fn run(a: &Calibrate) -> CliResult {
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
    let (m, b) = (&cal.model, Model::BUILT_IN);
    println!("quantity          measured    built in");
    for (name, x, y) in [
        ("split_penalty", m.split_penalty, b.split_penalty),
        ("epilogue_kb", m.epilogue_kb, b.epilogue_kb),
        ("wide_kb_us", m.wide_kb_us, b.wide_kb_us),
        ("dram_stream", m.dram_stream, b.dram_stream),
        ("cta_stream", m.cta_stream, b.cta_stream),
        ("fixup_us", m.fixup_us, b.fixup_us),
    ] {
        println!("{name:<16} {x:>10.4} {y:>10.4}");
    }
    for r in m.rates.iter() {
        let built_in = b.rate_of(r.tile_m, r.tile_n).map_or("-".into(), |x| format!("{x:.4}"));
        println!("rate {:>3}x{:<3}      {:>10.4} {built_in:>10}", r.tile_m, r.tile_n, r.rate);
    }
    std::fs::write(&a.out, serde_json::to_string_pretty(m)? + "\n")?;
    println!("model written to {}", a.out.display());
    Ok(true)
}
