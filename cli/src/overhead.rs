//! `hgemm bench --overhead`: what a call costs the host, against cuBLAS, and what a CUDA graph of
//! the same calls saves.

use crate::args::Bench;
use crate::{CliResult, open};
use cudarc::driver::{CudaStream, sys};
use hgemm::{Gemm, GemmOp, Prepared};
use hgemm_testing::{self as testing, Cublas};
use std::sync::Arc;
use std::time::Instant;

/// Decode-sized, small and mid-sized calls, where a host that enqueues slower than the GPU
/// computes would set the pace.
pub const SHAPES: &[(usize, usize, usize)] = &[(16, 4096, 4096), (256, 256, 256), (2048, 2048, 512)];

/// Calls per round, enqueued back to back (well below the depth of a stream's launch queue, so
/// that the host's time is its own and not a wait for room).
const CALLS: usize = 200;

/// The ways of making the same call that are timed.
#[derive(Clone, Copy)]
enum Path {
    Cublas,
    /// `Gemm::gemm`: checks, the choice of kernel, tensor maps and the launch, every call.
    Auto,
    /// `Gemm::launch_prepared`: the launch alone.
    Direct,
    /// One `cuGraphLaunch` of a graph holding the round's calls through `Gemm::gemm`.
    Graph,
}

impl Path {
    const ALL: [Path; 4] = [Path::Cublas, Path::Auto, Path::Direct, Path::Graph];

    fn name(self) -> &'static str {
        match self {
            Path::Cublas => "cuBLAS",
            Path::Auto => "hgemm (auto)",
            Path::Direct => "auto, direct launch",
            Path::Graph => "auto, CUDA graph",
        }
    }
}

pub fn run(a: &Bench) -> CliResult {
    let gemm = open()?;
    // SAFETY: every buffer here is used on the one stream below. (The graph's captured calls may
    // not wait on events recorded outside the capture, which cudarc's tracking would add.)
    unsafe { gemm.context().disable_event_tracking() };
    let stream = gemm.context().new_stream()?;
    let blas = Cublas::new(&stream)?;
    let shapes = a.shapes.or(SHAPES);
    let rounds = a.samples.unwrap_or(9);
    crate::say_skipped(&gemm);
    println!(
        "overhead on {}: {CALLS} calls back to back on one stream, one input set; median of {rounds} rounds;\n\
         host: the time to enqueue a call; GPU: a call's share of the round from first to last event",
        gemm.device().name
    );
    println!("  {:<16} {:<20} {:>13} {:>12}", "MxNxK", "contender", "host µs/call", "GPU µs/call");
    for (m, n, k) in shapes {
        let op = GemmOp::new(m, n, k);
        let rows = shape(&gemm, &blas, &stream, &op, rounds).map_err(|e| format!("{m}x{n}x{k}: {e}"))?;
        for (i, r) in rows.iter().enumerate() {
            let label = if i == 0 { format!("{m}x{n}x{k}") } else { String::new() };
            println!("  {label:<16} {:<20} {:>13.2} {:>12.2}", r.path.name(), r.host, r.gpu);
        }
    }
    Ok(true)
}

/// One path's medians at one shape.
struct Row {
    path: Path,
    /// µs to enqueue a call.
    host: f64,
    /// µs a call takes on the GPU, back to back.
    gpu: f64,
}

/// A row for each path, after checking the graph's result against cuBLAS's.
fn shape(
    gemm: &Gemm,
    blas: &Cublas,
    stream: &Arc<CudaStream>,
    op: &GemmOp,
    rounds: usize,
) -> Result<Vec<Row>, Box<dyn std::error::Error>> {
    let (a, b, mut c) = testing::input_sets(gemm, stream, op, 1, 0)?;
    let (a, b, c) = (&a[0], &b[0], &mut c[0]);
    let prepared = gemm.prepare(None, stream, op, a, b, c)?;
    stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)?;
    let captured = (0..CALLS).try_for_each(|_| gemm.gemm(stream, op, a, b, c));
    let graph = stream.end_capture(sys::CUgraphInstantiate_flags(0));
    captured?;
    let graph = graph?.ok_or("the capture made no graph")?;

    // The graph's result, against cuBLAS's on the same inputs.
    let mut reference = stream.clone_dtod(c)?;
    testing::fill(gemm, stream, c, testing::POISON)?;
    graph.launch()?;
    blas.gemm(op, a, b, &mut reference)?;
    let check = testing::compare_on_device(gemm, stream, c, &reference)?;
    if !check.passed() {
        return Err(
            format!("the graph's result: rel error {:.2e}, unwritten {}", check.rel_error(), check.unwritten).into()
        );
    }

    let event = || gemm.context().new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT));
    let (start, stop) = (event()?, event()?);
    let mut round = |path: Path| -> Result<(f64, f64), Box<dyn std::error::Error>> {
        stream.synchronize()?;
        start.record(stream)?;
        let t = Instant::now();
        match path {
            Path::Graph => graph.launch()?,
            _ => {
                for _ in 0..CALLS {
                    call(gemm, blas, stream, op, path, &prepared, a, b, c)?;
                }
            }
        }
        let host = t.elapsed().as_secs_f64() * 1e6;
        stop.record(stream)?;
        stop.synchronize()?;
        let gpu = start.elapsed_ms(&stop)? as f64 * 1e3;
        Ok((host / CALLS as f64, gpu / CALLS as f64))
    };
    let mut rows = Vec::new();
    for path in Path::ALL {
        round(path)?;
        let (mut host, mut gpu) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let (h, g) = round(path)?;
            host.push(h);
            gpu.push(g);
        }
        rows.push(Row { path, host: testing::median(&host), gpu: testing::median(&gpu) });
    }
    Ok(rows)
}

#[allow(clippy::too_many_arguments)]
fn call(
    gemm: &Gemm,
    blas: &Cublas,
    stream: &CudaStream,
    op: &GemmOp,
    path: Path,
    prepared: &Prepared,
    a: &cudarc::driver::CudaSlice<half::bf16>,
    b: &cudarc::driver::CudaSlice<half::bf16>,
    c: &mut cudarc::driver::CudaSlice<half::bf16>,
) -> testing::Result<()> {
    match path {
        Path::Cublas => blas.matmul(a, b, c, op.m, op.n, op.k),
        Path::Auto | Path::Graph => Ok(gemm.gemm(stream, op, a, b, c)?),
        // SAFETY: prepared on these buffers, alive for the whole benchmark, on this one stream.
        Path::Direct => Ok(unsafe { gemm.launch_prepared(prepared, stream) }?),
    }
}
