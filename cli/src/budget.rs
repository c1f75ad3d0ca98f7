//! `hgemm budget`: hgemm's SM budget measured on one GPU, as GEMM speed against the SMs it may
//! use, and as a communication-like kernel beside GEMMs with and without a budget.
//!
//! 1. For each shape (8192³; Llama-3 70B's MLP at 4096 tokens: gate+up as one 4096×57344×8192
//!    GEMM, down 4096×8192×28672; a decode-like 128×8192×8192) and each budget N: hgemm's TFLOP/s
//!    with `GemmOp::max_sms(N)` and cuBLAS's with the same SM count target
//!    (`cublasSetSmCountTarget`), alternating in one process, and the grid hgemm launched.
//! 2. A reduce-copy of P CTAs (`hgemm::measure::ReduceCopy`: `dst += src` over buffers beyond L2,
//!    the memory traffic of an all-reduce's reduce step) on a second stream: how long its work
//!    takes alone, beside a loop of unbudgeted 8192³ GEMMs, and beside the same loop with a budget
//!    of (SMs − P); and how long the GEMM loop takes in each case. NCCL itself with one rank copies
//!    (or does nothing, in place) without the channels' CTAs that occupy SMs on several GPUs, so
//!    on one GPU this kernel stands in for it.
//!
//! `hgemm budget [--budgets 132,120,108,96,66] [--comm-ctas 16,32] [--samples 9]` (budgets above
//! the device's SM count are cut to it).

use crate::CliResult;
use crate::args::Budget;
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, sys};
use half::bf16;
use hgemm::measure::ReduceCopy;
use hgemm::{Gemm, GemmOp, Prepared};
use hgemm_testing::{self as testing, Cublas};
use std::sync::Arc;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// The shapes of part 1: name, M, N, K.
const SHAPES: [(&str, usize, usize, usize); 4] = [
    ("8192³", 8192, 8192, 8192),
    ("70B gate+up, 4096 tok", 4096, 2 * 28672, 8192),
    ("70B down, 4096 tok", 4096, 8192, 28672),
    ("decode 128", 128, 8192, 8192),
];

pub fn run(o: &Budget) -> CliResult {
    let gemm = crate::open()?;
    let stream = gemm.context().new_stream()?;
    let sms = gemm.device().sms;
    println!("{} ({} SMs, {} kernels)", gemm.device().name, sms, gemm.family().name());
    let mut budgets: Vec<u32> = o.budgets.iter().map(|&b| b.min(sms)).collect();
    budgets.dedup();
    speed_against_budget(&gemm, &stream, &budgets, o.samples as usize)?;
    for &p in &o.comm_ctas {
        if p >= sms {
            return Err(format!("--comm-ctas {p}: fewer than the device's {sms} SMs").into());
        }
        beside_a_collective(&gemm, &stream, p, o.samples as usize)?;
    }
    Ok(true)
}

/// Inputs rotated beyond L2 and one prepared launch per set, for `op`.
struct Inputs {
    a: Vec<CudaSlice<bf16>>,
    b: Vec<CudaSlice<bf16>>,
    c: Vec<CudaSlice<bf16>>,
}

fn inputs(gemm: &Gemm, stream: &Arc<CudaStream>, op: &GemmOp) -> Res<Inputs> {
    let set_bytes = 2 * (op.m * op.k + op.n * op.k + op.m * op.n);
    let sets = testing::rotation_sets(gemm.device().l2_bytes, set_bytes);
    let (a, b, c) = testing::input_sets(gemm, stream, op, sets, 7)?;
    Ok(Inputs { a, b, c })
}

/// Part 1: TFLOP/s of hgemm under each budget and of cuBLAS with the same SM count target.
fn speed_against_budget(gemm: &Gemm, stream: &Arc<CudaStream>, budgets: &[u32], samples: usize) -> Res<()> {
    let blas = Cublas::new(stream)?;
    println!("\n1. GEMM speed against the SM budget (median of {samples} samples each, alternating hgemm and cuBLAS)");
    println!(
        "{:<22} {:>4}  {:<26} {:>5}  {:>9} {:>9} {:>6}",
        "shape", "SMs", "hgemm kernel", "CTAs", "hgemm TF", "cuBLAS TF", "ratio"
    );
    for (name, m, n, k) in SHAPES {
        let base = GemmOp::new(m, n, k);
        let mut inp = inputs(gemm, stream, &base)?;
        let sets = inp.a.len();
        let set_bytes = 2 * (m * k + n * k + m * n);
        let (calls, warmup) = testing::sample_calls(m * n * k, set_bytes, 30.0);
        for &budget in budgets {
            let op = base.max_sms(budget);
            let mut prepared = Vec::with_capacity(sets);
            for s in 0..sets {
                prepared.push(gemm.prepare(None, stream, &op, &inp.a[s], &inp.b[s], &mut inp.c[s])?);
            }
            let (kernel, ctas) = match &prepared[0] {
                Prepared::Launch { kernel, shape, .. } => (kernel.name, shape.grid * shape.grid_y),
                _ => ("-", 0),
            };
            if ctas > budget {
                return Err(format!("{name}: {kernel} launched {ctas} CTAs on a budget of {budget}").into());
            }
            blas.set_sm_count_target(Some(budget))?;
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            for _ in 0..samples {
                // SAFETY: prepared on this function's buffers, alive until it returns, used on
                // this one stream.
                ours.extend(testing::time_median(stream, warmup, 1, calls, |j| unsafe {
                    gemm.launch_prepared(&prepared[j % sets], stream)
                })?);
                theirs.extend(testing::time_median(stream, warmup, 1, calls, |j| {
                    let s = j % sets;
                    blas.matmul(&inp.a[s], &inp.b[s], &mut inp.c[s], m, n, k)
                })?);
            }
            let (t_ours, t_theirs) = (testing::median(&ours), testing::median(&theirs));
            println!(
                "{:<22} {:>4}  {:<26} {:>5}  {:>9.1} {:>9.1} {:>6.3}",
                name,
                budget,
                kernel,
                ctas,
                testing::tflops(m, n, k, t_ours),
                testing::tflops(m, n, k, t_theirs),
                t_theirs / t_ours
            );
        }
        blas.set_sm_count_target(None)?;
    }
    Ok(())
}

/// Milliseconds between two recorded events.
fn ms(from: &CudaEvent, to: &CudaEvent) -> Res<f64> {
    to.synchronize()?;
    Ok(from.elapsed_ms(to)? as f64)
}

/// Part 2: a reduce-copy of `p` CTAs on a second stream, alone and beside a GEMM loop with and
/// without a budget of (SMs − `p`).
fn beside_a_collective(gemm: &Gemm, stream: &Arc<CudaStream>, p: u32, samples: usize) -> Res<()> {
    let sms = gemm.device().sms;
    let comm_stream = gemm.context().new_stream()?;
    // Two buffers of 256 MiB, far beyond L2: every pass streams from memory as a collective's
    // chunks from peers would arrive.
    let mut comm = ReduceCopy::new(gemm, &comm_stream, p, 256 << 20, 1)?;
    let op = GemmOp::new(8192, 8192, 8192);
    let mut inp = inputs(gemm, stream, &op)?;
    let sets = inp.a.len();
    let event = || gemm.context().new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT));
    let (start, gemm_done, comm_done) = (event()?, event()?, event()?);

    // The work of each side, sized from their times alone: the collective's launches take about
    // half as long as the GEMM loop, as an all-reduce overlapped with the next micro-batch's
    // GEMMs would.
    let gemm_calls = 24;
    let gemm_loop = |budget: Option<u32>, inp: &mut Inputs| -> Res<()> {
        let op = match budget {
            Some(b) => op.max_sms(b),
            None => op,
        };
        for j in 0..gemm_calls {
            let s = j % sets;
            gemm.gemm(stream, &op, &inp.a[s], &inp.b[s], &mut inp.c[s])?;
        }
        Ok(())
    };
    // Warm-up of both, then their times alone.
    gemm_loop(None, &mut inp)?;
    comm.launch(gemm, &comm_stream)?;
    gemm.synchronize(stream)?;
    gemm.synchronize(&comm_stream)?;
    let alone = |run: &mut dyn FnMut() -> Res<()>, on: &Arc<CudaStream>| -> Res<f64> {
        let mut t = Vec::with_capacity(samples);
        for _ in 0..samples {
            start.record(on)?;
            run()?;
            gemm_done.record(on)?;
            t.push(ms(&start, &gemm_done)?);
        }
        Ok(testing::median(&t))
    };
    let one_comm = alone(&mut || Ok(comm.launch(gemm, &comm_stream)?), &comm_stream)?;
    let gemm_free = alone(&mut || gemm_loop(None, &mut inp), stream)?;
    let budget = sms - p;
    let gemm_held = alone(&mut || gemm_loop(Some(budget), &mut inp), stream)?;
    let comm_launches = ((gemm_free / 2.0) / one_comm).ceil().max(1.0) as usize;
    let comm_alone = one_comm * comm_launches as f64;

    // Both at once: the GEMM loop is enqueued first; the collective's stream waits for the start
    // event on the GEMM stream, so both begin together. Times are from that start to each side's
    // last kernel.
    let mut together = |budget: Option<u32>, inp: &mut Inputs| -> Res<(f64, f64)> {
        let (mut g, mut c) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
        for _ in 0..samples {
            start.record(stream)?;
            comm_stream.wait(&start)?;
            gemm_loop(budget, inp)?;
            gemm_done.record(stream)?;
            for _ in 0..comm_launches {
                comm.launch(gemm, &comm_stream)?;
            }
            comm_done.record(&comm_stream)?;
            g.push(ms(&start, &gemm_done)?);
            c.push(ms(&start, &comm_done)?);
        }
        Ok((testing::median(&g), testing::median(&c)))
    };
    let (g_free, c_free) = together(None, &mut inp)?;
    let (g_held, c_held) = together(Some(budget), &mut inp)?;

    let gb = comm.bytes_moved() as f64 * comm_launches as f64 / 1e9;
    println!(
        "\n2. A reduce-copy of {p} CTAs ({comm_launches} launches, {gb:.1} GB moved) beside {gemm_calls} GEMMs of 8192³ on a second stream (median of {samples})"
    );
    println!("{:<44} {:>10} {:>10} {:>10}", "", "GEMMs ms", "copy ms", "copy GB/s");
    let row = |what: &str, g: Option<f64>, c: Option<f64>| {
        let f = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.2}"));
        println!("{what:<44} {:>10} {:>10} {:>10}", f(g), f(c), f(c.map(|c| gb / (c * 1e-3))));
    };
    row("copy alone", None, Some(comm_alone));
    row(&format!("GEMMs alone, every SM ({sms})"), Some(gemm_free), None);
    row(&format!("GEMMs alone, budget {budget}"), Some(gemm_held), None);
    row("together, GEMMs on every SM", Some(g_free), Some(c_free));
    row(&format!("together, GEMMs on budget {budget}"), Some(g_held), Some(c_held));
    println!(
        "copy slowed by {:.2}× beside unbudgeted GEMMs, {:.2}× beside the budget; both done after {:.2} ms against {:.2} ms",
        c_free / comm_alone,
        c_held / comm_alone,
        g_free.max(c_free),
        g_held.max(c_held)
    );
    Ok(())
}
