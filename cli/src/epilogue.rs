//! `hgemm bench --epilogue MODE`: a fused epilogue against the same work done by its baselines,
//! timed in one process. Each baseline's samples alternate with hgemm's, and the ratio printed
//! is the baseline's median over hgemm's median of its own pairing (above 1: hgemm is faster).
//! Before timing, each baseline's output is checked against hgemm's on the device.

use crate::CliResult;
use crate::args::{Bench, EpilogueMode};
use crate::shapes::{Shape, mlp_shapes};
use cudarc::driver::{CudaSlice, CudaStream};
use half::bf16;
use hgemm::{Activation, BiasType, Gemm, GemmOp, Prepared};
use hgemm_testing::{self as testing, Cublas, CublasLt};
use std::sync::Arc;

/// The ways the same output is computed.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Way {
    /// hgemm's fused call (prepared once per input set).
    Fused,
    /// cuBLAS, then `hgemm_bias_act_bf16` or `hgemm_glu_bf16`.
    CublasThenKernel,
    /// cuBLASLt with its bias epilogue (RELU_BIAS or GELU_BIAS).
    CublasLt,
}

impl Way {
    fn name(self, mode: EpilogueMode) -> &'static str {
        match (self, gated(mode)) {
            (Way::Fused, _) => "hgemm fused",
            (Way::CublasThenKernel, false) => "cuBLAS + bias_act",
            (Way::CublasThenKernel, true) => "cuBLAS + glu",
            (Way::CublasLt, _) => "cuBLASLt epilogue",
        }
    }
}

fn gated(mode: EpilogueMode) -> bool {
    matches!(mode, EpilogueMode::Swiglu | EpilogueMode::Geglu)
}

fn activation(mode: EpilogueMode) -> Activation {
    match mode {
        EpilogueMode::GeluBias | EpilogueMode::Geglu => Activation::GeluTanh,
        EpilogueMode::BiasRelu => Activation::Relu,
        EpilogueMode::BiasSilu | EpilogueMode::Swiglu => Activation::Silu,
    }
}

/// The fused call for an M×N×K GEMM in `mode`: a bf16 bias for the bias modes (cuBLASLt's
/// bias has the operands' type), gated with N = 2·I for the gated ones.
fn fused_op(mode: EpilogueMode, (m, n, k): Shape) -> GemmOp {
    let op = GemmOp::new(m, n, k).activation(activation(mode));
    if gated(mode) { op.gated() } else { op.bias(BiasType::Bf16) }
}

/// The baselines `mode` is measured against.
fn baselines(mode: EpilogueMode) -> &'static [Way] {
    match mode {
        EpilogueMode::GeluBias | EpilogueMode::BiasRelu => &[Way::CublasLt, Way::CublasThenKernel],
        _ => &[Way::CublasThenKernel],
    }
}

/// Buffers of one shape: rotated input sets, one output per set, the baselines' N-wide
/// intermediate (gated modes), and the bias.
struct Buffers {
    a: Vec<CudaSlice<bf16>>,
    b: Vec<CudaSlice<bf16>>,
    y: Vec<CudaSlice<bf16>>,
    wide: Option<CudaSlice<bf16>>,
    bias: CudaSlice<bf16>,
    prepared: Vec<Prepared>,
}

/// What every way of computing a shape's output runs on: the handle, cuBLAS, cuBLASLt where
/// `mode` is measured against it, the stream, and the mode.
struct Ways<'a> {
    gemm: &'a Gemm,
    blas: &'a Cublas,
    lt: Option<&'a CublasLt>,
    stream: &'a Arc<CudaStream>,
    mode: EpilogueMode,
}

pub fn run(a: &Bench) -> CliResult {
    let mode = a.epilogue.expect("dispatched with --epilogue");
    let gemm = Gemm::new(hgemm::device::context(0)?)?;
    if let Some(path) = &a.tuning {
        gemm.load_tuning(&std::fs::read_to_string(path)?)?;
    }
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream)?;
    let lt = if baselines(mode).contains(&Way::CublasLt) { Some(CublasLt::new(&stream)?) } else { None };
    let ways = Ways { gemm: &gemm, blas: &blas, lt: lt.as_ref(), stream: &stream, mode };
    let shapes = if a.mlp { mlp_shapes(gated(mode)) } else { a.shapes.or(&[(8192, 8192, 8192)]) };
    let samples = a.samples.unwrap_or(10);
    println!(
        "{} ({} SMs): --epilogue {mode:?}, {samples} samples per contender",
        gemm.device().name,
        gemm.device().sms
    );
    println!("{:<20} {:<22} {:>9} {:>9} {:>12}  hgemm entry", "M×N×K", "baseline", "hgemm ms", "base ms", "base/hgemm");
    let mut all_ok = true;
    let mut ratios: Vec<(Way, f64)> = Vec::new();
    for &shape in &shapes {
        let op = fused_op(mode, shape);
        op.validate_shape()?;
        let mut bufs = buffers(&gemm, &stream, mode, &op)?;
        let entry = gemm.choose(&op).map_or("-", |k| k.name);
        for &way in baselines(mode) {
            // Checked once, on the first set: both outputs from the same inputs. A baseline that
            // fails (cuBLASLt finding no algorithm, say) is reported and the others still run.
            match ways.agree(&op, &mut bufs, way) {
                Ok(true) => {}
                Ok(false) => {
                    println!("{:<20} {:<22} outputs differ: not timed", label(shape), way.name(mode));
                    all_ok = false;
                    continue;
                }
                Err(e) => {
                    println!("{:<20} {:<22} failed: {e}", label(shape), way.name(mode));
                    all_ok = false;
                    continue;
                }
            }
            let (ours, theirs) = ways.time_pair(&op, &mut bufs, way, samples)?;
            let ratio = theirs / ours;
            ratios.push((way, ratio));
            println!("{:<20} {:<22} {ours:>9.4} {theirs:>9.4} {ratio:>11.3}×  {entry}", label(shape), way.name(mode));
        }
    }
    for &way in baselines(mode) {
        let r: Vec<f64> = ratios.iter().filter(|(w, _)| *w == way).map(|(_, r)| *r).collect();
        if !r.is_empty() {
            let geo = crate::geomean(&r);
            let min = r.iter().copied().fold(f64::INFINITY, f64::min);
            println!(
                "{} over hgemm fused: geometric mean {geo:.3}×, lowest {min:.3}× ({} shapes)",
                way.name(mode),
                r.len()
            );
        }
    }
    Ok(all_ok)
}

fn label((m, n, k): Shape) -> String {
    format!("{m}x{n}x{k}")
}

fn buffers(
    gemm: &Gemm,
    stream: &Arc<CudaStream>,
    mode: EpilogueMode,
    op: &GemmOp,
) -> Result<Buffers, Box<dyn std::error::Error>> {
    let (la, lb, ly) = testing::lengths(op);
    let set_bytes = 2 * (la + lb + ly);
    let sets = testing::rotation_sets(gemm.device().l2_bytes, set_bytes);
    let (a, b, mut y) = testing::input_sets(gemm, stream, op, sets, 0)?;
    let bias = testing::random(gemm, stream, op.n, 0xb1a5, 1.0)?;
    let wide = if gated(mode) { Some(testing::random(gemm, stream, op.m * op.n, 0x91de, 1.0)?) } else { None };
    let mut prepared = Vec::with_capacity(sets);
    for s in 0..sets {
        let bias = op.bias.map(|_| &bias);
        prepared.push(gemm.prepare_bias(None, stream, op, &a[s], &b[s], bias, &mut y[s])?);
    }
    Ok(Buffers { a, b, y, wide, bias, prepared })
}

impl Ways<'_> {
    /// Compute the output one way with input set `s` into `y[s]`.
    fn compute(&self, op: &GemmOp, bufs: &mut Buffers, way: Way, s: usize) -> testing::Result<()> {
        let (gemm, stream) = (self.gemm, self.stream);
        let (m, n, k) = (op.m, op.n, op.k);
        match way {
            // SAFETY: prepared on these buffers, which outlive the benchmark, on this one stream.
            Way::Fused => Ok(unsafe { gemm.launch_prepared(&bufs.prepared[s], stream) }?),
            Way::CublasLt => self.lt.expect("made for this mode").matmul_bias_act(
                &bufs.a[s],
                &bufs.b[s],
                &bufs.bias,
                &mut bufs.y[s],
                (m, n, k),
                self.mode == EpilogueMode::BiasRelu,
            ),
            Way::CublasThenKernel => match bufs.wide.as_mut() {
                Some(wide) => {
                    self.blas.matmul(&bufs.a[s], &bufs.b[s], wide, m, n, k)?;
                    let i = n / 2;
                    Ok(gemm.glu(stream, wide, m, i, n, &mut bufs.y[s], i, op.activation)?)
                }
                None => {
                    self.blas.matmul(&bufs.a[s], &bufs.b[s], &mut bufs.y[s], m, n, k)?;
                    Ok(gemm.bias_activation(stream, &mut bufs.y[s], m, n, n, &bufs.bias, op.activation)?)
                }
            },
        }
    }

    /// Whether `way` and the fused call give the same output on the first input set. The gated
    /// baseline reads gate and up as halves, the fused call as blocks of 8 interleaved: the fused
    /// call's weight is laid out from the baseline's for the check, then restored.
    fn agree(&self, op: &GemmOp, bufs: &mut Buffers, way: Way) -> Result<bool, Box<dyn std::error::Error>> {
        let stream = self.stream;
        if gated(self.mode) {
            let halves = stream.clone_dtoh(&bufs.b[0])?;
            // B is N×K: rows 0..I gate, I..2I up for the baseline; interleaved for hgemm.
            let (i, k) = (op.n / 2, op.k);
            let interleaved =
                hgemm::interleave_gate_up(&halves[..i * k], &halves[i * k..], hgemm::Layout::ColMajor, i, k)?;
            self.compute(op, bufs, way, 0)?;
            let theirs = stream.clone_dtod(&bufs.y[0])?;
            stream.memcpy_htod(&interleaved, &mut bufs.b[0])?;
            self.compute(op, bufs, Way::Fused, 0)?;
            stream.memcpy_htod(&halves, &mut bufs.b[0])?;
            let c = testing::compare_on_device(self.gemm, stream, &bufs.y[0], &theirs)?;
            return Ok(c.passed());
        }
        self.compute(op, bufs, way, 0)?;
        let theirs = stream.clone_dtod(&bufs.y[0])?;
        self.compute(op, bufs, Way::Fused, 0)?;
        let c = testing::compare_on_device(self.gemm, stream, &bufs.y[0], &theirs)?;
        Ok(c.passed())
    }

    /// Medians (ms per call) of hgemm's fused call and of `way`, their samples alternating.
    fn time_pair(
        &self,
        op: &GemmOp,
        bufs: &mut Buffers,
        way: Way,
        samples: usize,
    ) -> Result<(f64, f64), Box<dyn std::error::Error>> {
        let (la, lb, ly) = testing::lengths(op);
        let sets = bufs.a.len();
        // About 25 ms of calls per sample: the whole bench stays within minutes.
        let (calls, warmup) = testing::sample_calls(op.m * op.n * op.k, 2 * (la + lb + ly), 25.0);
        let (mut ours, mut theirs) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
        for _ in 0..samples {
            for (w, into) in [(Way::Fused, &mut ours), (way, &mut theirs)] {
                let t = testing::time_median(self.stream, warmup, 1, calls, |j| self.compute(op, bufs, w, j % sets))?;
                into.push(t[0]);
            }
        }
        Ok((testing::median(&ours), testing::median(&theirs)))
    }
}
