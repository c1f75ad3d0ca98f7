//! `hgemm tune`: [`Gemm::tune`](hgemm::Gemm::tune) over the shapes, a line each, and the table.

use crate::args::Tune;
use crate::shapes::SWEEP;
use crate::{CliResult, open};

pub fn run(a: &Tune) -> CliResult {
    let gemm = open()?;
    let stream = gemm.context().default_stream();
    let shapes = a.shapes.or(SWEEP);
    let opts = hgemm::TuneOptions { samples: a.samples, sample_ms: a.sample_ms, ..Default::default() };
    let d = gemm.device();
    println!(
        "tune on {} ({} SMs): {} samples of {} ms per candidate, in turn; entries priced within {:.0}% of the cheapest, at most {}; the fastest then against auto's pick, head to head, and taken if {:.0}% faster",
        d.name,
        d.sms,
        opts.samples,
        opts.sample_ms,
        (opts.window - 1.0) * 100.0,
        opts.max_candidates,
        (opts.min_gain - 1.0) * 100.0
    );
    let w = gemm.kernels().map(|k| k.name.len()).max().unwrap_or(0) + 6;
    println!(
        "{:<20} {:<w$} {:>9} {:<w$} {:>9} {:>6} {:<5}  first round: ms of the others",
        "MxNxK", "auto's price picks", "ms", "head to head", "ms", "gain", ""
    );
    let mut gains = Vec::new();
    let verbose = a.samples_each;
    for (m, n, k) in shapes {
        let t = gemm.tune_with(&stream, &hgemm::GemmOp::new(m, n, k), &opts)?;
        let others: Vec<String> = t
            .timed
            .iter()
            .filter(|x| x.choice != t.priced)
            .map(|x| format!("{} {:.4}", x.choice.describe(&t.key), x.ms))
            .collect();
        if verbose {
            for x in &t.timed {
                let s: Vec<String> = x.samples.iter().map(|v| format!("{v:.4}")).collect();
                println!("    {:<w$} {}", x.choice.describe(&t.key), s.join(" "));
            }
        }
        // Head to head where the first round's fastest was not auto's pick.
        let (priced_ms, tuned, tuned_ms, ratio) = match t.head_to_head {
            Some(h) => (
                h.priced_ms,
                h.challenger.describe(&t.key),
                format!("{:.4}", h.challenger_ms),
                h.priced_ms / h.challenger_ms,
            ),
            None => (t.ms(&t.priced).unwrap_or(f64::NAN), "=".to_string(), "-".to_string(), 1.0),
        };
        println!(
            "{:<20} {:<w$} {:>9.4} {:<w$} {:>9} {:>6.3} {:<5}  {}",
            format!("{m}x{n}x{k}"),
            t.priced.describe(&t.key),
            priced_ms,
            tuned,
            tuned_ms,
            ratio,
            if t.chosen != t.priced { "taken" } else { "" },
            others.join(", ")
        );
        gains.push(t.gain());
    }
    let moved = gains.iter().filter(|g| **g != 1.0).count();
    let geo = crate::geomean(&gains);
    println!(
        "{} shapes: {moved} run another kernel than auto's price picks; geometric mean gain {geo:.4}",
        gains.len()
    );
    if let Some(path) = &a.out {
        std::fs::write(path, gemm.tuning().to_text())?;
    }
    Ok(true)
}
