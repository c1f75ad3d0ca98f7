//! `hgemm`: inspect the device, verify the kernels, benchmark them against cuBLAS, dump the PTX.
//!
//! ```text
//! hgemm info
//! hgemm verify [--kernels v0,v3,...] [--seed N]
//! hgemm bench  [--shapes MxNxK,...|--sweep] [--kernels v0,...,auto,whole,direct,ceiling,ceiling_lean,...] [--samples N]
//!              [--ceiling-ctas N] [--tuning FILE] [--force FILE] [--json FILE] [--csv FILE] [--svg FILE]
//!              [--multi-stream]
//! hgemm run    [--kernels v0,...|all] [--shapes MxNxK,...] [--general] [--ref cpu|cublas|auto] [--seed N]
//! hgemm plan   [--shapes MxNxK,...] [--sms N] [--why] [--rule NAME]
//! hgemm tune   [--shapes MxNxK,...|--sweep|--llm] [--samples N] [--out FILE]
//! hgemm ptx --out DIR
//! ```
mod bench;
mod chart;
mod overhead;
mod run;

use hgemm::testing::{self, Cublas};
use hgemm::{Error, Gemm, KernelSpec};

pub(crate) type CliResult = Result<bool, Box<dyn std::error::Error>>;
use std::process::ExitCode;

const USAGE: &str = "usage: hgemm <info | verify | bench | run | plan | tune | ptx --out DIR> [options]
  verify [--kernels v0,v3,hopper_v7_slim_kk,general,...|all] [--seed N]
  bench  [--shapes MxNxK,...] [--sweep] [--llm] [--kernels v0,...,auto,priced,whole,direct,ceiling,ceiling_lean,...] [--samples N]
         [--tuning F] [--force F] [--json F] [--csv F] [--svg F] [--multi-stream]
  bench  --overhead [--shapes MxNxK,...] [--samples N]
         (host µs to enqueue a call and GPU µs per call back to back, for cuBLAS, auto, a prepared launch
          and a CUDA graph of auto's calls; default 16x4096x4096, 256x256x256, 2048x2048x512)
         (--tuning: load a table `hgemm tune --out` wrote, which `auto` then runs; priced: what auto's
          price picks, whatever is tuned; --force: lines `MxNxK KERNEL [split|whole]`, the entry `auto`
          runs for that plain call, and the shapes to run when none are named: a forced comparison
          with --kernels auto,priced; --multi-stream: on a stream of cudarc's own, so that its event
          tracking waits on and records every buffer's events around each call, as in a program with
          several streams; direct bypasses it)
         (--sweep: the Hopper issue's 12 shapes; --llm: 90 LLM layers, M of 256-4096 tokens against the
          N×K of Llama-2 7B and 13B and Llama-3 8B and 70B; ceiling, ceiling_mid, _lean, _lean_x2, _slim,
          _slim_x2: a tile's MMAs alone, nothing loaded or stored, spread over every SM or over
          --ceiling-ctas N: what no kernel of those MMAs can beat)
  run    [--kernels v0,...|all] [--shapes MxNxK,...] [--general] [--ref cpu|cublas|auto] [--seed N]
         (once per case, checked; without --shapes: whole tiles, partial tiles, and a general call;
          a --shapes call a kernel cannot take is reported with the reason and not counted)
  plan   [--shapes MxNxK,...] [--sweep] [--llm] [--sms N] [--why] [--rule NAME]
         (no GPU needed: the Hopper kernel `auto` runs for each shape, default the sweep, its grid and its
          stream-K split: the units computed whole and each worker's share of the rest; --why: every
          entry that can compute it, with the price auto weighs, cheapest first, auto's pick marked,
          and where a rule took it over cheaper entries, which rule; --rule NAME: only the shapes
          that rule took, ONE_COLUMN_SQUARE, WIDE_TRIM_SQUARE, WIDE_HALF_EMPTY_SQUARE or
          THIN_SQUARE_SPLIT)
  tune   [--shapes MxNxK,...] [--sweep] [--llm] [--samples N] [--sample-ms MS] [--samples-each] [--out FILE]
         (time the entries auto weighs for each shape, in turn, and print what auto's price picks, the
          fastest, and by how much; --samples-each: every sample's ms per call; --out: the table,
          for Gemm::load_tuning or bench --tuning)";

fn main() -> ExitCode {
    die_quietly_on_a_closed_pipe();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("info") => info(),
        Some("verify") => verify(&args[1..]),
        Some("bench") => bench::run(&args[1..]),
        Some("run") => run::run(&args[1..]),
        Some("plan") => plan(&args[1..]),
        Some("tune") => tune(&args[1..]),
        Some("ptx") => ptx(&args[1..]),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("hgemm: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `hgemm plan --sweep | head` ends the way `cat … | head` does: the Rust runtime ignores SIGPIPE,
/// so the first `println!` after the reader left would panic with a backtrace; with the signal's
/// default action the process ends silently instead (POSIX: SIGPIPE is 13 on Linux and macOS,
/// SIG_DFL is 0).
fn die_quietly_on_a_closed_pipe() {
    #[cfg(unix)]
    {
        unsafe extern "C" {
            fn signal(signum: i32, handler: usize) -> usize;
        }
        // SAFETY: restores the default action of one signal before any thread is started.
        unsafe { signal(13, 0) };
    }
}

/// Checks passed and failed, closed by the "N passed, N failed" line.
#[derive(Default)]
pub(crate) struct Tally {
    passed: usize,
    failed: usize,
    /// Calls a kernel named on the command line cannot take (each printed with the reason).
    not_taken: usize,
}

impl Tally {
    pub(crate) fn record(&mut self, ok: bool) {
        if ok {
            self.passed += 1;
        } else {
            self.failed += 1;
        }
    }

    pub(crate) fn record_not_taken(&mut self) {
        self.not_taken += 1;
    }

    /// Print the closing line; success if nothing failed and something was checked.
    pub(crate) fn finish(self) -> CliResult {
        let not_taken = if self.not_taken > 0 {
            format!(", {} not taken (the kernel cannot compute the call)", self.not_taken)
        } else {
            String::new()
        };
        println!("{} passed, {} failed{not_taken}", self.passed, self.failed);
        Ok(self.failed == 0 && self.passed > 0)
    }
}

/// `--name value` from the arguments.
pub(crate) fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(String::as_str)
}

/// One line for each other family's ladder: why it does not run here.
pub(crate) fn say_skipped(gemm: &Gemm) {
    for family in [hgemm::Family::Hopper, hgemm::Family::Blackwell] {
        let ladder = hgemm::ladder_of(family);
        if family != gemm.family() && !ladder.is_empty() {
            let d = gemm.device();
            println!(
                "{} v0–v{}: skipped: they need compute capability {}, this {} is {}.{}",
                family.name(),
                ladder.len() - 1,
                if family == hgemm::Family::Hopper { "9.0" } else { "10.x" },
                d.name,
                d.major,
                d.minor
            );
        }
    }
}

/// Open the handle on device 0, or say in one sentence why not.
pub(crate) fn open() -> Result<Gemm, Error> {
    Gemm::new(hgemm::device::context(0)?)
}

/// The kernels named by `--kernels v0,v3,hopper_v7_slim_kk` (`all`: every entry of the family;
/// absent: `default`).
pub(crate) fn selected(
    gemm: &Gemm,
    args: &[String],
    default: impl Iterator<Item = &'static KernelSpec>,
) -> Result<Vec<&'static KernelSpec>, Error> {
    match flag(args, "--kernels") {
        None => Ok(default.collect()),
        Some("all") => Ok(gemm.kernels().collect()),
        Some(list) => list
            .split(',')
            .filter(|s| !matches!(*s, "auto" | "priced" | "general" | "direct" | "whole") && !s.starts_with("ceiling"))
            .map(|v| match v.strip_prefix('v').and_then(|n| n.parse::<u32>().ok()) {
                Some(n) => gemm.kernel(n),
                None => gemm.kernels().find(|k| k.name == v).ok_or_else(|| Error::UnknownKernel(v.to_string())),
            })
            .collect(),
    }
}

fn info() -> CliResult {
    let gemm = open()?;
    let d = gemm.device();
    println!("device   : {}", d.name);
    println!(
        "compute  : {}.{} ({} family, PTX target {})",
        d.major,
        d.minor,
        gemm.family().name(),
        gemm.family().ptx_target()
    );
    match gemm.cubin() {
        Some(arch) => println!("loaded   : the embedded {arch} cubin"),
        None => println!("loaded   : the {} PTX, compiled by the driver", gemm.family().ptx_target()),
    }
    println!("SMs      : {}", d.sms);
    println!("L2       : {} MiB", d.l2_bytes >> 20);
    println!("smem/CTA : {} KiB opt-in", d.smem_optin >> 10);
    println!("kernels  :");
    for k in gemm.kernels() {
        println!(
            "  {:<14} v{}  {:>3}x{:<3} tile  {:>3} threads  cluster {}  {:>6} B smem  {:?}  {}",
            k.name, k.version, k.tile_m, k.tile_n, k.threads, k.cluster, k.smem_bytes, k.grid, k.adds
        );
    }
    for (m, n, k) in [(8192, 8192, 8192), (128, 8192, 8192)] {
        let op = hgemm::GemmOp::new(m, n, k);
        println!("auto     : {m}x{n}x{k} runs {}", gemm.choose(&op).map(|s| s.name).unwrap_or("-"));
    }
    Ok(true)
}

fn verify(args: &[String]) -> CliResult {
    let gemm = open()?;
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream)?;
    let seed: u64 = flag(args, "--seed").map(|s| s.parse().unwrap_or(1)).unwrap_or_else(|| std::process::id() as u64);
    println!("verify on {} (seed {seed}; tolerance {:.0e} relative)", gemm.device().name, testing::TOLERANCE);
    say_skipped(&gemm);
    let mut tally = Tally::default();
    for kernel in selected(&gemm, args, gemm.kernels())? {
        for (line, ok) in testing::verify_kernel(&gemm, &blas, &stream, kernel, seed)? {
            println!("{line}");
            tally.record(ok);
        }
    }
    if flag(args, "--kernels").is_none_or(|l| l.split(',').any(|s| s == "general")) {
        for (i, case) in testing::general_cases().iter().enumerate() {
            let r =
                testing::check_op(&gemm, &blas, &stream, &case.op, case.c_offset, seed.wrapping_add(1000 + i as u64))?;
            // C's buffer starts 256-byte aligned: the view's address modulo 16 is its offset's.
            let kernel = gemm.choice_at(&case.op, 2 * case.c_offset as u64).map(|c| c.kernel.name).unwrap_or("-");
            let ok = r.passed();
            let cpu = r.vs_cpu.map(|c| format!("{:.2e}", c.rel_error)).unwrap_or_else(|| "-".into());
            let outside =
                if r.outside > 0 { format!(", {} elements outside C changed", r.outside) } else { String::new() };
            println!(
                "auto ({kernel:<20}) {:<62} vs cuBLAS {:.2e} vs CPU {cpu:>8}{outside} {}",
                case.what,
                r.vs_cublas.rel_error,
                if ok { "ok" } else { "FAIL" }
            );
            tally.record(ok);
        }
    }
    tally.finish()
}

/// What `auto` would run on a Hopper GPU with `--sms` SMs (default 132: H100 SXM, H200), worked
/// out on the host ([`hgemm::op::choose_why`], [`hgemm::op::launch_offline`]): the kernel, its
/// grid, and how its schedule splits tiles by K.
fn plan(args: &[String]) -> CliResult {
    let sms: u32 = match flag(args, "--sms").map(str::parse) {
        None => 132,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => return Err("--sms wants a positive number".into()),
    };
    let shapes = bench::shapes_from(args, bench::SWEEP)?;
    let why = args.iter().any(|a| a == "--why");
    let only = match flag(args, "--rule") {
        Some(name) => Some(hgemm::op::Rule::ALL.into_iter().find(|r| r.name() == name).ok_or_else(|| {
            format!("--rule {name}: want one of {}", hgemm::op::Rule::ALL.map(|r| r.name()).join(", "))
        })?),
        None => None,
    };
    let hopper: Vec<&KernelSpec> = hgemm_kernels::kernels().filter(|k| k.family == hgemm::Family::Hopper).collect();
    let w = hopper.iter().map(|k| k.name.len()).max().unwrap_or(0);
    println!("{:<20} {:<w$} {:>6} {:>8}  schedule", "MxNxK", "kernel", "CTAs", "cluster");
    for (m, n, k) in shapes {
        let op = hgemm::GemmOp::new(m, n, k);
        let (spec, rule) =
            hgemm::op::choose_why(hopper.iter().copied(), &op, sms).ok_or_else(|| match op.validate_shape() {
                Err(e) => format!("{m}x{n}x{k}: {e}"),
                Ok(false) => format!("{m}x{n}x{k}: nothing to compute"),
                Ok(true) => format!("{m}x{n}x{k}: no Hopper kernel computes C = A·Bᵀ on {sms} SMs"),
            })?;
        if only.is_some_and(|r| rule != Some(r)) {
            continue;
        }
        let shape = hgemm::op::launch_offline(spec, &op, sms)?;
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
            let mut priced: Vec<_> = hgemm::op::price(hopper.iter().copied(), &op, sms).collect();
            priced.sort_by(|a, b| a.cost.total_cmp(&b.cost));
            for p in priced {
                let split = p.schedule.filter(|sk| sk.splits());
                let note = match (p.spec.name == spec.name, p.eligible, rule) {
                    (true, _, Some(r)) => format!(
                        "  (auto's pick: `op::choose`'s rule {} prefers it to the cheaper entries above)",
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

/// `hgemm tune`: [`Gemm::tune`] over the shapes, a line each, and the table.
fn tune(args: &[String]) -> CliResult {
    let gemm = open()?;
    let stream = gemm.context().default_stream();
    let shapes = bench::shapes_from(args, bench::SWEEP)?;
    let mut opts = hgemm::TuneOptions::default();
    if let Some(n) = flag(args, "--samples") {
        opts.samples = n.parse()?;
    }
    if let Some(ms) = flag(args, "--sample-ms") {
        opts.sample_ms = ms.parse()?;
    }
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
    let verbose = args.iter().any(|a| a == "--samples-each");
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
    let geo = (gains.iter().map(|g| g.ln()).sum::<f64>() / gains.len().max(1) as f64).exp();
    println!(
        "{} shapes: {moved} run another kernel than auto's price picks; geometric mean gain {geo:.4}",
        gains.len()
    );
    if let Some(path) = flag(args, "--out") {
        std::fs::write(path, gemm.tuning().to_text())?;
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

fn ptx(args: &[String]) -> CliResult {
    let Some(dir) = flag(args, "--out") else {
        eprintln!("{USAGE}");
        return Ok(false);
    };
    std::fs::create_dir_all(dir)?;
    for (family, text) in hgemm::ptx::all() {
        let path = std::path::Path::new(dir).join(format!("{}.ptx", family.ptx_target()));
        std::fs::write(&path, text)?;
        println!("{}", path.display());
    }
    Ok(true)
}
