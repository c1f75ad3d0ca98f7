//! `hgemm plan --score FILE`: `auto`'s pick for each shape of an `hgemm survey` file, looked up
//! among the entries the survey timed there, beside the fastest of them: how the price's choice
//! would have run on the surveyed card, worked out without a GPU. A change to the price can be
//! judged on recorded surveys before any device time is spent on it (docs/shapes.md, "Every entry
//! on every shape").

use crate::CliResult;
use crate::survey::Line;
use hgemm::{Family, GemmOp, KernelSpec};
use std::path::Path;

/// One surveyed shape scored: `auto`'s ratio to cuBLAS where the survey timed its pick, and the
/// fastest timed entry's.
struct Scored {
    auto: Option<f64>,
    best: (f64, String, bool),
}

/// Score `line` for `auto`'s pick among `entries` on `sms` SMs: the survey's calls (row-major A,
/// column-major B, row-major C, beta 0).
fn score(line: &Line, entries: &[&KernelSpec], sms: u32) -> Result<(Scored, (&'static str, bool)), String> {
    let (m, n, k) = (line.m, line.n, line.k);
    let (pick, _) = hgemm::choose::choose_why(entries.iter().copied(), &GemmOp::new(m, n, k), sms)
        .ok_or_else(|| format!("{m}x{n}x{k}: no entry computes this call on {sms} SMs"))?;
    let ratio = |ms: f64| line.cublas / ms;
    let auto = line.timed.iter().find(|t| t.0 == pick.spec.name && t.1 == pick.split()).map(|t| ratio(t.2));
    let best = line
        .timed
        .iter()
        .min_by(|a, b| a.2.total_cmp(&b.2))
        .map(|t| (ratio(t.2), t.0.clone(), t.1))
        .ok_or_else(|| format!("{m}x{n}x{k}: the survey timed no entry"))?;
    Ok((Scored { auto, best }, (pick.spec.name, pick.split())))
}

pub fn run(path: &Path, family: Family, sms: u32) -> CliResult {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let entries: Vec<&KernelSpec> = hgemm_kernels::kernels().filter(|k| k.family == family).collect();
    let w = entries.iter().map(|k| k.name.len()).max().unwrap_or(0);
    let how = |split: bool| if split { "split" } else { "whole" };
    println!("{:<20} {:<w$} {:>5}  {:>7}  fastest timed entry", "MxNxK", "auto's pick", "", "auto");
    let (mut auto, mut best, mut untimed) = (Vec::new(), Vec::new(), 0);
    for (i, raw) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let line: Line = serde_json::from_str(raw).map_err(|e| format!("{} line {}: {e}", path.display(), i + 1))?;
        let (s, (name, split)) = score(&line, &entries, sms)?;
        let shown = s.auto.map_or("untimed".to_string(), |r| format!("{r:.3}"));
        println!(
            "{:<20} {name:<w$} {:>5}  {shown:>7}  {:.3} {} {}",
            format!("{}x{}x{}", line.m, line.n, line.k),
            how(split),
            s.best.0,
            s.best.1,
            how(s.best.2)
        );
        match s.auto {
            Some(r) => {
                auto.push(r);
                best.push(s.best.0);
            }
            None => untimed += 1,
        }
    }
    let below = auto.iter().filter(|&&r| r < 0.95).count();
    println!(
        "over {} shapes: auto's picks {:.3}x cuBLAS ({below} below 0.95), the fastest timed entry {:.3}x \
         (the best of many medians reads high); {untimed} picks the survey did not time",
        auto.len(),
        crate::geomean(&auto),
        crate::geomean(&best)
    );
    Ok(!auto.is_empty())
}
