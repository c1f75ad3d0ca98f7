//! `hgemm plan --score FILE`: `auto`'s pick for each shape of an `hgemm survey` file, looked up
//! among the entries the survey timed there, beside the fastest of them: how the price's choice
//! would have run on the surveyed card, worked out without a GPU. A change to the price can be
//! judged on recorded surveys before any device time is spent on it (docs/shapes.md, "Every entry
//! on every shape").

use crate::CliResult;
use crate::survey::Line;
use hgemm::choose::Model;
use hgemm::{GemmOp, KernelSpec};
use std::collections::BTreeMap;
use std::path::Path;

/// One surveyed shape scored: `auto`'s pick (entry, split), its ratio to cuBLAS where the survey
/// timed it, and the fastest timed entry's.
struct Scored {
    pick: (&'static str, bool),
    auto: Option<f64>,
    best: (f64, String, bool),
}

/// How a schedule is named in the survey's terms.
fn schedule(split: bool) -> &'static str {
    if split { "split" } else { "whole" }
}

/// Score `line` for `auto`'s pick among `entries` on `sms` SMs: the survey's calls (row-major A,
/// column-major B, row-major C, beta 0).
fn score(line: &Line, entries: &[&'static KernelSpec], sms: u32, model: &Model) -> Result<Scored, String> {
    let (m, n, k) = (line.m, line.n, line.k);
    let (pick, _) = hgemm::choose::choose_why(entries.iter().copied(), &GemmOp::new(m, n, k), sms, model)
        .ok_or_else(|| format!("{m}x{n}x{k}: no entry computes this call on {sms} SMs"))?;
    let ratio = |ms: f64| line.cublas / ms;
    let auto = line.timed.iter().find(|t| t.0 == pick.spec.name && t.1 == pick.split()).map(|t| ratio(t.2));
    let best = line
        .timed
        .iter()
        .min_by(|a, b| a.2.total_cmp(&b.2))
        .map(|t| (ratio(t.2), t.0.clone(), t.1))
        .ok_or_else(|| format!("{m}x{n}x{k}: the survey timed no entry"))?;
    Ok(Scored { pick: (pick.spec.name, pick.split()), auto, best })
}

/// Each timed entry's time over its price (`choose::price`, split or whole as timed), relative
/// to the median of that ratio over the shape's entries: above 1, the entry ran slower than the
/// price says against the others at that shape. Entries the price does not weigh there are left
/// out.
fn residuals(line: &Line, entries: &[&KernelSpec], sms: u32, model: &Model) -> Vec<(String, bool, f64)> {
    let op = GemmOp::new(line.m, line.n, line.k);
    let mut costs = BTreeMap::new();
    for o in [op.stream_k(false), op] {
        for p in hgemm::choose::price(entries.iter().copied(), &o, sms, model) {
            costs.insert((p.spec.name, p.split()), p.cost);
        }
    }
    let mut points: Vec<(String, bool, f64)> = line
        .timed
        .iter()
        .filter_map(|(name, split, ms)| costs.get(&(name.as_str(), *split)).map(|c| (name.clone(), *split, ms / c)))
        .collect();
    let mut sorted: Vec<f64> = points.iter().map(|p| p.2).collect();
    sorted.sort_by(f64::total_cmp);
    if let Some(&median) = sorted.get(sorted.len() / 2) {
        points.iter_mut().for_each(|p| p.2 /= median);
    }
    points
}

/// `--residuals`: per entry and schedule, the geometric mean of [`residuals`] over the file's
/// shapes, and how many it was timed at; where the price's rate for a tile (or form) is off on
/// these shapes, its entries sit away from 1 together.
pub fn residuals_run(path: &Path, entries: &[&KernelSpec], sms: u32, model: &Model) -> CliResult {
    let mut by_entry: BTreeMap<(String, bool), Vec<f64>> = BTreeMap::new();
    for line in read(path)? {
        for (name, split, r) in residuals(&line, entries, sms, model) {
            by_entry.entry((name, split)).or_default().push(r);
        }
    }
    let mut rows: Vec<_> = by_entry.into_iter().map(|((n, s), v)| (crate::geomean(&v), n, s, v.len())).collect();
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    println!("time over price, relative to the shape's median entry (above 1: slower than priced)");
    for (g, name, split, count) in rows {
        println!("{g:>7.3}  {name:<26} {:<5}  at {count} shapes", schedule(split));
    }
    Ok(true)
}

/// The survey lines of `path`, or which line is not one.
pub fn read(path: &Path) -> Result<Vec<Line>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, raw)| serde_json::from_str(raw).map_err(|e| format!("{} line {}: {e}", path.display(), i + 1)))
        .collect()
}

/// The table of [`score`] over the file's shapes, and its geometric means.
pub fn run(path: &Path, entries: &[&'static KernelSpec], sms: u32, model: &Model) -> CliResult {
    let w = entries.iter().map(|k| k.name.len()).max().unwrap_or(0);
    println!("{:<20} {:<w$} {:>5}  {:>7}  fastest timed entry", "MxNxK", "auto's pick", "", "auto");
    let (mut auto, mut best, mut untimed) = (Vec::new(), Vec::new(), 0);
    for line in read(path)? {
        let s = score(&line, entries, sms, model)?;
        let shown = s.auto.map_or("untimed".to_string(), |r| format!("{r:.3}"));
        println!(
            "{:<20} {:<w$} {:>5}  {shown:>7}  {:.3} {} {}",
            format!("{}x{}x{}", line.m, line.n, line.k),
            s.pick.0,
            schedule(s.pick.1),
            s.best.0,
            s.best.1,
            schedule(s.best.2)
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
