//! `hgemm`: inspect the device, verify the kernels against cuBLAS, benchmark them, show auto's
//! plans, tune, dump the PTX. `hgemm --help` and `hgemm <subcommand> --help` list every flag.
mod args;
mod bench;
mod budget;
mod calibrate;
mod chart;
mod epilogue;
mod model;
mod overhead;
mod plan;
mod run;
mod score;
mod shapes;
mod survey;
mod tune;

use args::{Cli, Command, Verify, names};
use clap::Parser;
use hgemm::{Error, Gemm, KernelSpec};
use hgemm_testing::{self as testing, Cublas};
use std::process::ExitCode;

/// Whether every check passed, or what stopped the command.
pub(crate) type CliResult = Result<bool, Box<dyn std::error::Error>>;

fn main() -> ExitCode {
    // Before anything can print: clap's help and errors too.
    die_quietly_on_a_closed_pipe();
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Info => info(),
        Command::Verify(a) => verify(a),
        Command::Bench(a) if a.overhead => overhead::run(a),
        Command::Bench(a) if a.epilogue.is_some() => epilogue::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Budget(a) => budget::run(a),
        Command::Run(a) => run::run(a),
        Command::Plan(a) => plan::run(a),
        Command::Tune(a) => tune::run(a),
        Command::Survey(a) => survey::run(a),
        Command::Calibrate(a) => calibrate::run(a),
        Command::Ptx(a) => ptx(a),
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

/// The geometric mean of ratios (1 for none), as the summaries of `bench`, `tune` and
/// `bench --epilogue` print it.
fn geomean(xs: &[f64]) -> f64 {
    (xs.iter().map(|x| x.ln()).sum::<f64>() / xs.len().max(1) as f64).exp()
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

/// The kernels `--kernels` names (`all`: every entry of the family; absent: `default`); the
/// pseudo-kernels of `bench` and `verify` (auto, priced, general, direct, whole, the ceilings) are
/// left to them.
pub(crate) fn selected(
    gemm: &Gemm,
    kernels: &Option<Vec<String>>,
    default: impl Iterator<Item = &'static KernelSpec>,
) -> Result<Vec<&'static KernelSpec>, Error> {
    match kernels.as_deref() {
        None => Ok(default.collect()),
        Some([all]) if all == "all" => Ok(gemm.kernels().collect()),
        Some(list) => list
            .iter()
            .map(String::as_str)
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

fn verify(a: &Verify) -> CliResult {
    let gemm = open()?;
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream)?;
    let seed = a.seed.unwrap_or_else(|| std::process::id() as u64);
    println!("verify on {} (seed {seed}; tolerance {:.0e} relative)", gemm.device().name, testing::TOLERANCE);
    say_skipped(&gemm);
    let mut tally = Tally::default();
    for kernel in selected(&gemm, &a.kernels, gemm.kernels())? {
        for (line, ok) in testing::verify_kernel(&gemm, &blas, &stream, kernel, seed)? {
            println!("{line}");
            tally.record(ok);
        }
    }
    if a.kernels.is_none() || names(&a.kernels, "general") {
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

fn ptx(a: &args::Ptx) -> CliResult {
    std::fs::create_dir_all(&a.out)?;
    for (family, text) in hgemm::ptx::all() {
        let path = a.out.join(format!("{}.ptx", family.ptx_target()));
        std::fs::write(&path, text)?;
        println!("{}", path.display());
    }
    Ok(true)
}
