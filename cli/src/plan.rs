//! `hgemm plan`: what `auto` would run on a Hopper or Blackwell GPU, worked out on the host (no
//! GPU needed).

use crate::CliResult;
use crate::args::Plan;
use crate::shapes::SWEEP;
use hgemm::KernelSpec;

/// What `auto` would run on a GPU of `--family` (default Hopper) with `--sms` SMs (default the
/// family's: 132 for an H100 SXM or H200, 148 for a B200), for the call `--a-layout`,
/// `--b-layout`, `--c-layout`, `--beta` and `--batch` describe, worked out on the host
/// ([`hgemm::choose::choose_why`], [`hgemm::plan::launch_offline`]): the kernel, its grid, and
/// how its schedule splits tiles by K. With `--max-sms`, each call carries that SM budget: auto
/// prices on the budget's SMs ([`hgemm::GemmOp::sms_on`]) and the grid keeps it.
pub fn run(a: &Plan) -> CliResult {
    let (device_sms, why, only) = (a.sms(), a.why, a.rule);
    let family = a.family.family();
    let entries: Vec<&KernelSpec> = hgemm_kernels::kernels().filter(|k| k.family == family).collect();
    let model = crate::model::load(a.model.as_deref(), entries.iter().copied())?;
    match &a.score {
        Some(path) if a.residuals => return crate::score::residuals_run(path, &entries, device_sms, &model),
        Some(path) => return crate::score::run(path, &entries, device_sms, &model),
        None => {}
    }
    let shapes = a.shapes.or(SWEEP);
    let w = entries.iter().map(|k| k.name.len()).max().unwrap_or(0);
    println!("{:<20} {:<w$} {:>6} {:>8}  schedule", "MxNxK", "kernel", "CTAs", "cluster");
    for (m, n, k) in shapes {
        let op = a.op(m, n, k).within(a.max_sms).on_device(device_sms);
        let sms = op.sms_on(device_sms);
        let (pick, rule) =
            hgemm::choose::choose_why(entries.iter().copied(), &op, sms, &model).ok_or_else(|| {
                match op.validate_shape() {
                    Err(e) => format!("{m}x{n}x{k}: {e}"),
                    Ok(false) => format!("{m}x{n}x{k}: nothing to compute"),
                    Ok(true) => format!("{m}x{n}x{k}: no {} kernel computes this call on {sms} SMs", family.name()),
                }
            })?;
        if only.is_some_and(|r| rule != Some(r)) {
            continue;
        }
        let spec = pick.spec;
        let shape = hgemm::plan::launch_offline(spec, &op.stream_k(pick.split()), device_sms)?;
        println!(
            "{:<20} {:<w$} {:>6} {:>8}  {}",
            format!("{m}x{n}x{k}"),
            spec.name,
            shape.grid * shape.grid_y,
            shape.cluster,
            schedule(shape.split)
        );
        if why {
            // Every entry that can compute the call, cheapest first, as `auto` weighs them; where
            // `choose` takes one with cheaper eligible entries above it, the rule that did.
            let mut priced: Vec<_> = hgemm::choose::price(entries.iter().copied(), &op, sms, &model).collect();
            priced.sort_by(|a, b| a.cost.total_cmp(&b.cost));
            for p in priced {
                let split = p.schedule.filter(|sk| sk.splits());
                let note = match (p.spec.name == spec.name && p.split() == pick.split(), p.eligible, rule) {
                    (true, _, Some(r)) => format!(
                        "  (auto's pick: `choose::choose`'s rule {} prefers it to the cheaper entries above)",
                        r.name()
                    ),
                    (true, _, None) => "  (auto's pick)".into(),
                    (false, true, _) => String::new(),
                    (false, false, _) => "  (kept out by auto's rules at this shape)".into(),
                };
                println!("    {:>8.4}  {:<w$}  {}{note}", p.cost, p.spec.name, schedule(split));
            }
        }
    }
    Ok(true)
}

fn schedule(split: Option<hgemm_kernels::sched::StreamK>) -> String {
    match split {
        Some(sk) => format!(
            "stream-K: the last waves split by K ({} of {} units whole, shares of {} K blocks)",
            sk.dp_units, sk.units, sk.share
        ),
        None => "whole tiles".into(),
    }
}
