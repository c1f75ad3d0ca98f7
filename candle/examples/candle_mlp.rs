//! A Llama-style transformer MLP block in candle, its three matmuls on candle's own (cuBLAS) and
//! on hgemm: checked against each other and timed at several token counts.
//!
//! ```text
//! y = down(silu(gate(x)) · up(x))      x: tokens × hidden, bf16
//! ```
//! gate and up are hidden → intermediate, down intermediate → hidden, weights stored `[out, in]`
//! as candle_nn's `Linear` keeps them (the defaults are Llama-3 8B's 4096 and 14336). The
//! candle path is what `candle_nn::Linear` runs on a 2-D input, `x.matmul(&w.t())`; the hgemm
//! path is [`hgemm_candle::Linear`]. SiLU and the product run on candle's kernels in both.
//!
//! Each sample times `reps` back-to-back blocks between two CUDA events on the device's stream,
//! the two paths alternating sample by sample; the table gives the median per block and the
//! 10th–90th percentile spread. Inputs are fresh random for every token count (the seed is
//! printed): activations uniform in [-1, 1), weights in [-1, 1) scaled by fan-in^-1/2.
//!
//! `cargo run --release --example candle_mlp -- [--tokens 128,256,...] [--hidden 4096]
//! [--intermediate 14336] [--samples 30] [--reps 5]`

use candle_core::cuda::cudarc::driver::sys::CUevent_flags;
use candle_core::{DType, Device, Module, Tensor};
use clap::{Arg, Command, value_parser};
use std::time::Instant;

/// What the command line sets.
struct Args {
    tokens: Vec<usize>,
    hidden: usize,
    intermediate: usize,
    samples: usize,
    reps: usize,
    warmup: usize,
}

impl Args {
    /// Parsed with clap's builder: a derive would add proc-macro crates to the build graph and so
    /// a second build of candle's kernels for test and example builds (build scripts' features).
    fn parse() -> Args {
        let number = |name: &'static str, default: &'static str, help: &'static str| {
            Arg::new(name).long(name).default_value(default).value_parser(value_parser!(usize)).help(help)
        };
        let m = Command::new("candle_mlp")
            .about("A Llama MLP block on candle's matmul and on hgemm's: checked and timed")
            .arg(
                Arg::new("tokens")
                    .long("tokens")
                    .value_delimiter(',')
                    .default_value("128,256,512,1024,2048,4096,8192")
                    .value_parser(value_parser!(usize))
                    .help("Token counts (rows of x)"),
            )
            .arg(number("hidden", "4096", "Model width (Llama-3 8B: 4096)"))
            .arg(number("intermediate", "14336", "MLP width (Llama-3 8B: 14336)"))
            .arg(number("samples", "30", "Timed samples per path and token count"))
            .arg(number("reps", "5", "Blocks per sample"))
            .arg(number("warmup", "3", "Untimed blocks per path before the samples"))
            .get_matches();
        let get = |name| *m.get_one::<usize>(name).expect("has a default");
        Args {
            tokens: m.get_many::<usize>("tokens").expect("has a default").copied().collect(),
            hidden: get("hidden"),
            intermediate: get("intermediate"),
            samples: get("samples").max(1),
            reps: get("reps").max(1),
            warmup: get("warmup"),
        }
    }
}

/// The block with its three projections.
struct Mlp<L> {
    gate: L,
    up: L,
    down: L,
}

impl<L: Module> Mlp<L> {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let h = (self.gate.forward(x)?.silu()? * self.up.forward(x)?)?;
        self.down.forward(&h)
    }
}

/// candle_nn's `Linear` without a bias, as it runs on a 2-D input.
struct CandleLinear(Tensor);

impl Module for CandleLinear {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        x.matmul(&self.0.t()?)
    }
}

fn uniform(dev: &Device, dims: (usize, usize), scale: f64) -> candle_core::Result<Tensor> {
    Tensor::rand(-1f32, 1f32, dims, dev)?.affine(scale, 0.0)?.to_dtype(DType::BF16)
}

/// ‖a − b‖ / ‖b‖.
fn rel_error(a: &Tensor, b: &Tensor) -> candle_core::Result<f64> {
    let (a, b) = (a.to_dtype(DType::F32)?, b.to_dtype(DType::F32)?);
    let diff = (a - &b)?.sqr()?.sum_all()?.to_scalar::<f32>()? as f64;
    let reference = b.sqr()?.sum_all()?.to_scalar::<f32>()? as f64;
    Ok((diff / reference).sqrt())
}

/// The `q`-quantile of sorted samples (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let dev = Device::new_cuda(0)?;
    let seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_nanos() as u64;
    dev.set_seed(seed)?;
    let cuda = dev.as_cuda_device()?;
    let stream = cuda.cuda_stream();
    let started = Instant::now();
    let gemm = hgemm_candle::gemm_for(cuda)?;
    println!(
        "{} ({} SMs); hgemm handle loaded in {:.2} s; seed {seed}",
        gemm.device().name,
        gemm.device().sms,
        started.elapsed().as_secs_f64()
    );
    let (d, f) = (args.hidden, args.intermediate);
    let (wg, wu) = (uniform(&dev, (f, d), (d as f64).powf(-0.5))?, uniform(&dev, (f, d), (d as f64).powf(-0.5))?);
    let wd = uniform(&dev, (d, f), (f as f64).powf(-0.5))?;
    let candle = Mlp { gate: CandleLinear(wg.clone()), up: CandleLinear(wu.clone()), down: CandleLinear(wd.clone()) };
    let linear = |w: &Tensor| hgemm_candle::Linear::new(w.clone(), None);
    let hgemm = Mlp { gate: linear(&wg), up: linear(&wu), down: linear(&wd) };
    println!(
        "Llama MLP block, hidden {d}, intermediate {f}, bf16; ms per block: median (p10–p90) of {} samples of {} blocks",
        args.samples, args.reps
    );
    println!(
        "{:>6}  {:>22}  {:>22}  {:>7}  {:>13}  {:>9}",
        "tokens", "candle (cuBLAS) ms", "hgemm ms", "speedup", "TFLOP/s c / h", "rel. err"
    );
    let mut disagreements = 0;
    for &tokens in &args.tokens {
        let x = uniform(&dev, (tokens, d), 1.0)?;
        let (yc, yh) = (candle.forward(&x)?, hgemm.forward(&x)?);
        let err = rel_error(&yh, &yc)?;
        // NaN disagrees.
        let agrees = err <= hgemm::measure::TOLERANCE;
        disagreements += usize::from(!agrees);
        for _ in 0..args.warmup {
            candle.forward(&x)?;
            hgemm.forward(&x)?;
        }
        let mut times = [Vec::new(), Vec::new()];
        for _ in 0..args.samples {
            for (path, t) in times.iter_mut().enumerate() {
                let start = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
                for _ in 0..args.reps {
                    // Dropped at once: each block's output is freed stream-ordered, as in a model.
                    if path == 0 {
                        candle.forward(&x)?
                    } else {
                        hgemm.forward(&x)?
                    };
                }
                let end = stream.record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
                t.push(start.elapsed_ms(&end)? as f64 / args.reps as f64);
            }
        }
        for t in &mut times {
            t.sort_by(f64::total_cmp);
        }
        let [c, h] = times.map(|t| (quantile(&t, 0.5), quantile(&t, 0.1), quantile(&t, 0.9)));
        let tflops = |ms: f64| 6.0 * (tokens * d * f) as f64 / (ms * 1e9);
        println!(
            "{tokens:>6}  {:>8.3} ({:.3}–{:.3})  {:>8.3} ({:.3}–{:.3})  {:>6.3}×  {:>5.0} / {:<5.0}  {err:>9.2e}{}",
            c.0,
            c.1,
            c.2,
            h.0,
            h.1,
            h.2,
            c.0 / h.0,
            tflops(c.0),
            tflops(h.0),
            if agrees { "" } else { "  DISAGREE" }
        );
    }
    if disagreements > 0 {
        return Err(format!(
            "{disagreements} token counts where hgemm and candle disagree beyond {}",
            hgemm::measure::TOLERANCE
        )
        .into());
    }
    println!("all outputs agree within {} (relative Frobenius error)", hgemm::measure::TOLERANCE);
    Ok(())
}
