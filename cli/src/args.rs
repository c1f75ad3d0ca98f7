//! The command line, parsed by clap: every subcommand, its flags and their defaults. Parsing
//! touches no GPU, so `--help` and a mistyped flag never open the device.

use crate::shapes::{LLM_LAYERS, LLM_TOKENS, SWEEP, Shape, parse_shape};
use clap::{Args, Parser, Subcommand, ValueEnum};
use hgemm::TuneOptions;
use hgemm::choose::Rule;
use std::path::PathBuf;

/// BF16 GEMM on Hopper and Blackwell: inspect the device, verify the kernels against cuBLAS,
/// benchmark them, show auto's plans, tune, dump the PTX.
#[derive(Debug, Parser)]
#[command(name = "hgemm", version)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The device, its kernels, and what auto runs at 8192³ and 128×8192×8192.
    Info,
    /// Check every kernel against cuBLAS (and the CPU on small shapes) at fixed shapes, the calls
    /// it must refuse, and auto on the general calls.
    Verify(Verify),
    /// TFLOP/s of cuBLAS and of each kernel, measured in one process, each contender alternating
    /// with cuBLAS.
    Bench(Bench),
    /// GEMM speed against an SM budget (hgemm and cuBLAS), and a communication-like kernel of P
    /// CTAs on a second stream beside GEMMs with and without a budget of SMs − P.
    Budget(Budget),
    /// Run kernels once per case on fresh random inputs and check each result (what the
    /// compute-sanitizer runs wrap).
    Run(Run),
    /// No GPU needed: the Hopper kernel auto runs for each shape, its grid and its stream-K split.
    Plan(Plan),
    /// Time the entries auto weighs for each shape, in turn, and print what auto's price picks,
    /// the fastest, and by how much.
    Tune(Tune),
    /// Time every entry that can compute each shape, whole and split, in turn with cuBLAS, and
    /// write one JSON line a shape: the data `auto`'s model is fitted to.
    Survey(Survey),
    /// Re-measure the quantities auto's price reads (each tile's rate, the cost of a split, the
    /// epilogue at a short K, DRAM's and one CTA's bandwidth) and write them as a model (JSON)
    /// that `--model` loads.
    Calibrate(Calibrate),
    /// Write the embedded PTX of every family to a directory.
    Ptx(Ptx),
}

/// Which shapes: a list, the Hopper issue's 12 shapes, the LLM layers, or a seeded draw.
#[derive(Debug, Args)]
pub struct Shapes {
    /// Comma-separated shapes, MxNxK,...
    #[arg(long, value_name = "MxNxK,...", value_delimiter = ',', value_parser = parse_shape,
          conflicts_with_all = ["sweep", "llm", "random"])]
    pub shapes: Option<Vec<Shape>>,
    /// The Hopper issue's 12 shapes.
    #[arg(long, conflicts_with_all = ["llm", "random"])]
    pub sweep: bool,
    /// 90 LLM layers: M of 256-4096 tokens against the N×K of Llama-2 7B and 13B and Llama-3 8B
    /// and 70B.
    #[arg(long, conflicts_with = "random")]
    pub llm: bool,
    /// N realistic shapes drawn from --seed: layers of public model families at decode, prefill
    /// and training sizes, and random multiples of 64 (hgemm_testing::draw says how).
    #[arg(long, value_name = "N", requires = "seed")]
    pub random: Option<usize>,
    /// The seed of --random's draw.
    #[arg(long, value_name = "S", requires = "random")]
    pub seed: Option<u64>,
}

impl Shapes {
    /// The shapes named, or `default` where none are.
    pub fn or(&self, default: &[Shape]) -> Vec<Shape> {
        if self.sweep {
            SWEEP.to_vec()
        } else if self.llm {
            LLM_LAYERS.iter().flat_map(|&(n, k)| LLM_TOKENS.iter().map(move |&m| (m, n, k))).collect()
        } else if let (Some(count), Some(seed)) = (self.random, self.seed) {
            hgemm_testing::draw::draw(count, seed).iter().map(|s| (s.m, s.n, s.k)).collect()
        } else {
            self.shapes.clone().unwrap_or_else(|| default.to_vec())
        }
    }
}

/// Whether a `--kernels` list names `name`.
pub fn names(kernels: &Option<Vec<String>>, name: &str) -> bool {
    kernels.as_ref().is_some_and(|l| l.iter().any(|s| s == name))
}

/// `hgemm verify`.
#[derive(Debug, Args)]
pub struct Verify {
    /// Comma-separated kernels to verify: ladder versions (v0,v3,...), entry names, `all` (the
    /// default), and `general`: auto on the general calls (run when --kernels is absent or names
    /// it).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub kernels: Option<Vec<String>>,
    /// Seed of the random inputs (default the process id).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// `hgemm bench`.
#[derive(Debug, Args)]
pub struct Bench {
    /// The shapes (default 8192x8192x8192, or the --force file's).
    #[command(flatten)]
    pub shapes: Shapes,
    /// Comma-separated contenders besides cuBLAS: ladder versions (v0,...,v7), entry names, `all`,
    /// auto, priced (what auto's price picks, whatever is tuned), whole (auto without stream-K),
    /// direct (auto's kernel launched prepared), ceiling, ceiling_mid, _lean, _lean_x2, _slim,
    /// _slim_x2 (a tile's MMAs alone, nothing loaded or stored: what no kernel of those MMAs can
    /// beat). Default: the ladder and auto.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub kernels: Option<Vec<String>>,
    /// Samples per contender (default 20; 9 rounds with --overhead).
    #[arg(long)]
    pub samples: Option<usize>,
    /// Spread the ceilings' MMAs over N SMs instead of every one.
    #[arg(long, value_name = "N")]
    pub ceiling_ctas: Option<u32>,
    /// Load a table `hgemm tune --out` wrote, which auto then runs.
    #[arg(long, value_name = "FILE")]
    pub tuning: Option<PathBuf>,
    /// Price auto's calls with the model in FILE (JSON, as `hgemm calibrate` writes it) instead
    /// of the built-in one.
    #[arg(long, value_name = "FILE")]
    pub model: Option<PathBuf>,
    /// Lines `MxNxK KERNEL [split|whole]`: the entry auto runs for that plain call, and the shapes
    /// to run when none are named (a forced comparison with --kernels auto,priced).
    #[arg(long, value_name = "FILE")]
    pub force: Option<PathBuf>,
    /// Write the results as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the results as CSV.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Write a bar chart of the first shape's results as SVG.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Run hgemm on at most N SMs (`Gemm::set_max_sms`: persistent grids and stream-K splits cut
    /// to N, auto choosing among the entries that keep it) and cuBLAS with the same SM count
    /// target (`cublasSetSmCountTarget`); the default contenders are then the ladder's
    /// persistent entries and auto.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_sms: Option<u32>,
    /// Run on a stream of cudarc's own, so that its event tracking waits on and records every
    /// buffer's events around each call, as in a program with several streams (direct bypasses it).
    #[arg(long)]
    pub multi_stream: bool,
    /// Host µs to enqueue a call and GPU µs per call back to back, for cuBLAS, auto, a prepared
    /// launch and a CUDA graph of auto's calls (default shapes 16x4096x4096, 256x256x256,
    /// 2048x2048x512).
    #[arg(long, conflicts_with_all = ["kernels", "ceiling_ctas", "tuning", "force", "json", "csv", "svg", "multi_stream", "max_sms"])]
    pub overhead: bool,
    /// Time a fused epilogue against its baselines, in one process: hgemm's fused call, cuBLAS
    /// followed by a separate bias+activation or GLU kernel, and (gelu-bias, bias-relu)
    /// cuBLASLt's own bias epilogue; prints each baseline's time over hgemm's (default shape
    /// 8192x8192x8192; N is the GEMM's, 2·I for the gated modes).
    #[arg(long, value_enum, value_name = "MODE", conflicts_with_all = ["kernels", "ceiling_ctas", "force", "json", "csv", "svg", "multi_stream", "overhead", "max_sms"])]
    pub epilogue: Option<EpilogueMode>,
    /// With --epilogue: the MLP layers of Llama-3 8B (hidden 4096, intermediate 14336) and 70B
    /// (8192, 28672) at 512 to 8192 tokens, up and down projections (gate+up for gated modes).
    #[arg(long, requires = "epilogue", conflicts_with_all = ["shapes", "sweep", "llm"])]
    pub mlp: bool,
}

/// `hgemm budget`.
#[derive(Debug, Args)]
pub struct Budget {
    /// SM budgets to time each shape at (cut to the device's SMs).
    #[arg(long, value_name = "N,...", value_delimiter = ',', default_values_t = [132, 120, 108, 96, 66],
          value_parser = clap::value_parser!(u32).range(1..))]
    pub budgets: Vec<u32>,
    /// CTA counts of the communication-like kernel (each fewer than the device's SMs).
    #[arg(long, value_name = "P,...", value_delimiter = ',', default_values_t = [16, 32],
          value_parser = clap::value_parser!(u32).range(1..))]
    pub comm_ctas: Vec<u32>,
    /// Samples per measurement (their median is printed).
    #[arg(long, default_value_t = 9, value_parser = clap::value_parser!(u32).range(1..))]
    pub samples: u32,
}

/// `hgemm bench --epilogue`'s modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EpilogueMode {
    /// y = gelu_tanh(x·Wᵀ + b), bf16 bias; against cuBLASLt's GELU_BIAS too.
    GeluBias,
    /// y = relu(x·Wᵀ + b), bf16 bias; against cuBLASLt's RELU_BIAS too.
    BiasRelu,
    /// y = silu(x·Wᵀ + b), bf16 bias (cuBLASLt has no SiLU).
    BiasSilu,
    /// y = silu(x·W_gateᵀ) ⊙ (x·W_upᵀ).
    Swiglu,
    /// y = gelu_tanh(x·W_gateᵀ) ⊙ (x·W_upᵀ).
    Geglu,
}

/// The family `hgemm plan` plans for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlanFamily {
    /// H100, H200 (132 SMs).
    Hopper,
    /// B200 (148 SMs), GB300.
    Blackwell,
}

impl PlanFamily {
    pub fn family(self) -> hgemm::Family {
        match self {
            PlanFamily::Hopper => hgemm::Family::Hopper,
            PlanFamily::Blackwell => hgemm::Family::Blackwell,
        }
    }

    /// SMs of the family's usual GPU: an H100 SXM or H200, a B200.
    pub fn default_sms(self) -> u32 {
        match self {
            PlanFamily::Hopper => 132,
            PlanFamily::Blackwell => 148,
        }
    }
}

/// A matrix's storage order on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Order {
    Row,
    Col,
}

impl Order {
    pub fn layout(self) -> hgemm::Layout {
        match self {
            Order::Row => hgemm::Layout::RowMajor,
            Order::Col => hgemm::Layout::ColMajor,
        }
    }
}

impl Plan {
    /// The SMs planned for: `--sms`, or the family's default.
    pub fn sms(&self) -> u32 {
        self.sms.unwrap_or(self.family.default_sms())
    }

    /// The call `hgemm plan` plans for an `m × n × k` shape: dense operands in the orders given,
    /// `--beta`, `--batch` entries each right after the last.
    pub fn op(&self, m: usize, n: usize, k: usize) -> hgemm::GemmOp {
        let (a, b, c) = (self.a_layout.layout(), self.b_layout.layout(), self.c_layout.layout());
        let ld = |layout: hgemm::Layout, rows: usize, cols: usize| match layout {
            hgemm::Layout::RowMajor => cols,
            hgemm::Layout::ColMajor => rows,
        };
        let op = hgemm::GemmOp::new(m, n, k).a(a, ld(a, m, k)).b(b, ld(b, k, n)).c(c, ld(c, m, n)).beta(self.beta);
        match self.batch as usize {
            1 => op,
            count => op.batched(count, m * k, k * n, m * n),
        }
    }
}

/// Where `hgemm run`'s reference comes from.
#[derive(Clone, Copy, Debug, PartialEq, ValueEnum)]
pub enum Reference {
    /// The f64 CPU reference (touches no cuBLAS).
    Cpu,
    /// cuBLAS.
    Cublas,
    /// The CPU for small calls, cuBLAS for the rest.
    Auto,
}

/// `hgemm run`.
#[derive(Debug, Args)]
pub struct Run {
    /// Comma-separated kernels to run: ladder versions (v0,v3,...), entry names, or `all` (the
    /// default).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub kernels: Option<Vec<String>>,
    /// Shapes to run instead of each kernel's own small cases (whole tiles, partial tiles, a
    /// general call); one a kernel cannot take is reported with the reason and not counted.
    #[arg(long, value_name = "MxNxK,...", value_delimiter = ',', value_parser = parse_shape)]
    pub shapes: Option<Vec<Shape>>,
    /// Run the --shapes as general calls (column-major C, padding, alpha, beta, a batch) on the
    /// kernels that take them.
    #[arg(long)]
    pub general: bool,
    /// The reference.
    #[arg(long = "ref", value_enum, default_value_t = Reference::Auto)]
    pub reference: Reference,
    /// Seed of the random inputs (default the process id).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// `hgemm plan`.
#[derive(Debug, Args)]
pub struct Plan {
    /// The shapes (default the sweep's).
    #[command(flatten)]
    pub shapes: Shapes,
    /// The GPU family planned for: its entries are the ones weighed.
    #[arg(long, value_enum, default_value_t = PlanFamily::Hopper)]
    pub family: PlanFamily,
    /// SMs of the GPU planned for (default the family's: 132 for an H100 SXM or H200, 148 for a
    /// B200).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub sms: Option<u32>,
    /// A's storage order (A is M×K; row-major is what C = A·Bᵀ reads).
    #[arg(long, value_enum, default_value_t = Order::Row)]
    pub a_layout: Order,
    /// B's storage order (B is K×N; column-major is what C = A·Bᵀ reads).
    #[arg(long, value_enum, default_value_t = Order::Col)]
    pub b_layout: Order,
    /// C's storage order.
    #[arg(long, value_enum, default_value_t = Order::Row)]
    pub c_layout: Order,
    /// beta: C = A·B + beta·C.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    pub beta: f32,
    /// GEMMs in a strided batch (dense operands, each entry after the last).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub batch: u64,
    /// Plan each call with an SM budget of N (`GemmOp::max_sms`): auto prices on N SMs among
    /// the entries that keep it, and the grid is cut to N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_sms: Option<u32>,
    /// Every entry that can compute each shape, with the price auto weighs, cheapest first,
    /// auto's pick marked, and where a rule took it over cheaper entries, which rule.
    #[arg(long)]
    pub why: bool,
    /// Only the shapes this rule of auto's took.
    #[arg(long, value_name = "NAME", value_parser = parse_rule)]
    pub rule: Option<Rule>,
    /// Score auto's picks against an `hgemm survey` file: each shape's pick looked up among the
    /// entries the survey timed, beside the fastest of them (the survey's calls: no layout, beta,
    /// batch or SM budget of their own).
    #[arg(long, value_name = "FILE", conflicts_with_all = [
        "shapes", "sweep", "llm", "random", "why", "rule", "a_layout", "b_layout", "c_layout", "beta", "batch", "max_sms",
    ])]
    pub score: Option<PathBuf>,
    /// With --score: per entry and schedule, its time over its price relative to the other
    /// entries' at each shape, averaged over the file's shapes (above 1: slower than priced).
    #[arg(long, requires = "score")]
    pub residuals: bool,
    /// Price with the model in FILE (JSON, as `hgemm calibrate` writes it) instead of the
    /// built-in one.
    #[arg(long, value_name = "FILE")]
    pub model: Option<PathBuf>,
}

/// `hgemm calibrate`.
#[derive(Debug, Args)]
pub struct Calibrate {
    /// Where to write the model (JSON).
    #[arg(long, value_name = "FILE", default_value = "model.json")]
    pub out: PathBuf,
    /// Timed samples of each probe (the median counts).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub samples: u32,
    /// Milliseconds of back-to-back calls per sample.
    #[arg(long, default_value_t = 30.0)]
    pub sample_ms: f64,
    /// Fit the tiles' rates to a recorded `hgemm survey` file instead (its whole timings, at
    /// every shape), the other quantities kept from the built-in model: no GPU needed.
    #[arg(long, value_name = "FILE")]
    pub survey: Option<PathBuf>,
    /// With --survey: the SMs of the card surveyed.
    #[arg(long, default_value_t = 132, requires = "survey")]
    pub sms: u32,
}

/// `hgemm survey`.
#[derive(Debug, Args)]
pub struct Survey {
    /// The shapes (default the sweep's).
    #[command(flatten)]
    pub shapes: Shapes,
    /// Rounds: every candidate once a round, cuBLAS first; the median counts.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Milliseconds of back-to-back calls per sample: 60 by default, as `bench` and `tune` time;
    /// shorter samples read every entry higher against cuBLAS and reorder the entries
    /// (docs/shapes.md, "Every entry on every shape").
    #[arg(long, value_name = "MS", default_value_t = 60.0)]
    pub sample_ms: f64,
    /// The JSON-lines file to write.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

/// `hgemm tune`.
#[derive(Debug, Args)]
pub struct Tune {
    /// The shapes (default the sweep's).
    #[command(flatten)]
    pub shapes: Shapes,
    /// Samples per candidate.
    #[arg(long, default_value_t = TuneOptions::default().samples)]
    pub samples: usize,
    /// Milliseconds of back-to-back calls per sample.
    #[arg(long, value_name = "MS", default_value_t = TuneOptions::default().sample_ms)]
    pub sample_ms: f64,
    /// Print every sample's ms per call.
    #[arg(long)]
    pub samples_each: bool,
    /// Write the table, for `Gemm::load_tuning` or `bench --tuning`.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `hgemm ptx`.
#[derive(Debug, Args)]
pub struct Ptx {
    /// The directory to write `<target>.ptx` files to.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// A rule of `auto`'s by its name.
fn parse_rule(name: &str) -> Result<Rule, String> {
    Rule::ALL
        .into_iter()
        .find(|r| r.name() == name)
        .ok_or_else(|| format!("want one of {}", Rule::ALL.map(|r| r.name()).join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    use clap::error::ErrorKind;

    fn parse(line: &str) -> Result<Command, clap::Error> {
        Cli::try_parse_from(std::iter::once("hgemm").chain(line.split_whitespace())).map(|c| c.command)
    }

    fn error(line: &str) -> ErrorKind {
        parse(line).expect_err(line).kind()
    }

    #[test]
    fn the_command_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn help_and_version_are_answered_by_the_parser() {
        for sub in ["", "info ", "verify ", "bench ", "run ", "plan ", "tune ", "ptx "] {
            assert_eq!(error(&format!("{sub}--help")), ErrorKind::DisplayHelp, "{sub}--help");
        }
        assert_eq!(error("help bench"), ErrorKind::DisplayHelp);
        assert_eq!(error("--version"), ErrorKind::DisplayVersion);
        assert_eq!(error(""), ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand);
    }

    #[test]
    fn unknown_flags_and_bad_values_are_errors() {
        assert_eq!(error("bench --sampels 3"), ErrorKind::UnknownArgument);
        assert_eq!(error("plan --sweep --why --rulez THIN_SQUARE_SPLIT"), ErrorKind::UnknownArgument);
        assert_eq!(error("nonesuch"), ErrorKind::InvalidSubcommand);
        assert_eq!(error("plan --sms 0"), ErrorKind::ValueValidation);
        assert_eq!(error("plan --sms many"), ErrorKind::ValueValidation);
        assert_eq!(error("bench --max-sms 0"), ErrorKind::ValueValidation);
        assert_eq!(error("plan --max-sms 0"), ErrorKind::ValueValidation);
        assert_eq!(error("bench --overhead --max-sms 66"), ErrorKind::ArgumentConflict);
        assert_eq!(error("bench --epilogue swiglu --max-sms 66"), ErrorKind::ArgumentConflict);
        assert_eq!(error("bench --shapes 8192x8192"), ErrorKind::ValueValidation);
        assert_eq!(error("bench --samples -1"), ErrorKind::UnknownArgument);
        assert_eq!(error("verify --seed x"), ErrorKind::ValueValidation);
        assert_eq!(error("run --ref gpu"), ErrorKind::InvalidValue);
        assert_eq!(error("ptx"), ErrorKind::MissingRequiredArgument);
        assert_eq!(error("bench --sweep --llm"), ErrorKind::ArgumentConflict);
        assert_eq!(error("bench --sweep --random 5 --seed 1"), ErrorKind::ArgumentConflict);
        assert_eq!(error("plan --random 5"), ErrorKind::MissingRequiredArgument);
        assert_eq!(error("plan --seed 5"), ErrorKind::MissingRequiredArgument);
        assert_eq!(error("bench --overhead --json out.json"), ErrorKind::ArgumentConflict);
        let e = parse("plan --rule NONE").unwrap_err().to_string();
        assert!(e.contains("NONE") && e.contains("THIN_SQUARE_SPLIT"), "{e}");
        let e = parse("bench --shapes 1x2x3,8x8").unwrap_err().to_string();
        assert!(e.contains("8x8"), "{e}");
    }

    #[test]
    fn defaults_are_as_documented() {
        let Command::Bench(b) = parse("bench").unwrap() else { panic!() };
        assert_eq!(b.shapes.or(&[(8192, 8192, 8192)]), [(8192, 8192, 8192)]);
        assert_eq!((b.samples, b.kernels, b.overhead, b.multi_stream, b.max_sms), (None, None, false, false, None));
        let Command::Budget(b) = parse("budget").unwrap() else { panic!() };
        assert_eq!((b.budgets, b.comm_ctas, b.samples), (vec![132, 120, 108, 96, 66], vec![16, 32], 9));
        let Command::Budget(b) = parse("budget --budgets 100,50 --comm-ctas 8").unwrap() else { panic!() };
        assert_eq!((b.budgets, b.comm_ctas), (vec![100, 50], vec![8]));
        assert_eq!(error("budget --budgets 100,0"), ErrorKind::ValueValidation);
        assert_eq!(error("budget --samples 0"), ErrorKind::ValueValidation);
        let Command::Bench(b) = parse("bench --max-sms 120").unwrap() else { panic!() };
        assert_eq!(b.max_sms, Some(120));
        let Command::Run(r) = parse("run").unwrap() else { panic!() };
        assert_eq!((r.reference, r.shapes, r.general, r.seed), (Reference::Auto, None, false, None));
        let Command::Plan(p) = parse("plan").unwrap() else { panic!() };
        assert_eq!((p.sms(), p.why, p.rule, p.max_sms), (132, false, None, None));
        assert_eq!(p.op(300, 200, 64), hgemm::GemmOp::new(300, 200, 64));
        assert_eq!(p.shapes.or(SWEEP), SWEEP);
        let Command::Plan(p) = parse("plan --random 200 --seed 9").unwrap() else { panic!() };
        let drawn = p.shapes.or(SWEEP);
        assert_eq!(drawn.len(), 200);
        let Command::Bench(b) = parse("bench --random 200 --seed 9").unwrap() else { panic!() };
        assert_eq!(b.shapes.or(&[]), drawn);
        let Command::Tune(t) = parse("tune").unwrap() else { panic!() };
        let d = TuneOptions::default();
        assert_eq!((t.samples, t.sample_ms, t.samples_each, t.out), (d.samples, d.sample_ms, false, None));
        assert!(matches!(parse("info").unwrap(), Command::Info));
    }

    #[test]
    fn flags_reach_their_fields() {
        let Command::Bench(b) =
            parse("bench --shapes 1x2x8,16x32x64 --kernels v7,auto,ceiling --samples 11 --json j --csv c --svg s")
                .unwrap()
        else {
            panic!()
        };
        assert_eq!(b.shapes.or(&[]), [(1, 2, 8), (16, 32, 64)]);
        assert!(names(&b.kernels, "auto") && names(&b.kernels, "ceiling") && !names(&b.kernels, "whole"));
        assert_eq!(b.samples, Some(11));
        assert_eq!((b.json, b.csv, b.svg), (Some("j".into()), Some("c".into()), Some("s".into())));
        let Command::Bench(b) = parse("bench --llm --overhead --samples 5").unwrap() else { panic!() };
        assert!(b.overhead && b.shapes.llm);
        assert_eq!(b.shapes.or(&[]).len(), LLM_LAYERS.len() * LLM_TOKENS.len());
        let Command::Plan(p) = parse("plan --sweep --sms 114 --why --rule THIN_SQUARE_SPLIT").unwrap() else {
            panic!()
        };
        assert_eq!((p.sms(), p.why, p.rule.map(|r| r.name())), (114, true, Some("THIN_SQUARE_SPLIT")));
        let Command::Plan(p) = parse(
            "plan --family blackwell --shapes 300x200x64 --a-layout col --b-layout row --c-layout col --beta -0.5 --batch 3",
        )
        .unwrap() else {
            panic!()
        };
        assert_eq!((p.family, p.sms()), (PlanFamily::Blackwell, 148));
        use hgemm::Layout::{ColMajor, RowMajor};
        let want = hgemm::GemmOp::new(300, 200, 64)
            .a(ColMajor, 300)
            .b(RowMajor, 200)
            .c(ColMajor, 300)
            .beta(-0.5)
            .batched(3, 300 * 64, 64 * 200, 300 * 200);
        assert_eq!(p.op(300, 200, 64), want);
        assert!(parse("plan --batch 0").is_err() && parse("plan --a-layout diag").is_err());
        let Command::Run(r) = parse("run --kernels all --shapes 256x256x64 --general --ref cpu --seed 7").unwrap()
        else {
            panic!()
        };
        assert_eq!(r.kernels, Some(vec!["all".to_string()]));
        assert_eq!(
            (r.shapes, r.general, r.reference, r.seed),
            (Some(vec![(256, 256, 64)]), true, Reference::Cpu, Some(7))
        );
        let Command::Tune(t) = parse("tune --llm --samples 3 --sample-ms 20 --samples-each --out t.txt").unwrap()
        else {
            panic!()
        };
        assert_eq!((t.samples, t.sample_ms, t.samples_each, t.out), (3, 20.0, true, Some("t.txt".into())));
        let Command::Verify(v) = parse("verify --kernels v0,general --seed 42").unwrap() else { panic!() };
        assert!(names(&v.kernels, "general") && names(&v.kernels, "v0") && !names(&v.kernels, "v1"));
        assert_eq!(v.seed, Some(42));
        let Command::Ptx(p) = parse("ptx --out dir").unwrap() else { panic!() };
        assert_eq!(p.out, PathBuf::from("dir"));
    }
}
