//! Reliability (issue 6): a seeded random-shape sweep against cuBLAS, bitwise determinism, a soak
//! with flat device memory, threads sharing one handle, stream-K workspaces per stream, calls
//! captured into CUDA graphs, and calls from threads that never made the context current. They
//! need an H100/H200, so they
//! are ignored in the normal suite and run on the GPU machine with `--ignored`, one test per
//! process (`scripts/device-reliability.sh`); without a GPU they fail, never skip.
//!
//! Outputs are compared on the GPU (`testing::compare_into`): only five numbers per comparison
//! come back. Each test ends by printing one line that starts with `reliability:`, which the
//! device script copies into its table.

use cudarc::driver::{CudaSlice, CudaStream, CudaViewMut, DriverError};
use half::bf16;
use hgemm::{Family, Gemm, GemmOp, KernelSpec, Layout};
use hgemm_testing::{self as testing, BufferComparison, Cublas, Rng, Variant};
use std::sync::Arc;

/// `HGEMM_SEED`, or a fresh one; printed either way so that a failure can be repeated.
fn seed() -> u64 {
    let seed = std::env::var("HGEMM_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
        t.as_nanos() as u64 ^ ((std::process::id() as u64) << 32)
    });
    println!("seed {seed} (set HGEMM_SEED={seed} to repeat)");
    seed
}

/// Cases up to this many multiply-adds may be recomputed in f64 on the host when cuBLAS disagrees.
const ARBITRATION_MAX_MACS: usize = 1 << 35;

/// The sweep's buffers: inputs, our C, cuBLAS's C, and the GPU comparison's result slot.
struct SweepBuffers {
    a: CudaSlice<bf16>,
    b: CudaSlice<bf16>,
    c: CudaSlice<bf16>,
    r: CudaSlice<bf16>,
    slot: CudaSlice<u64>,
}

/// Run `case` through `kernel` and through cuBLAS on fresh inputs; compare on the GPU.
fn sweep_case(
    gemm: &Gemm,
    stream: &Arc<CudaStream>,
    blas: &Cublas,
    kernel: &KernelSpec,
    case: &testing::SweepCase,
    x: &mut SweepBuffers,
) -> testing::Result<BufferComparison> {
    let op = &case.op;
    let (la, lb, lc) = testing::lengths(op);
    let guarded = lc + testing::GUARD_LEN;
    fill_inputs(
        gemm,
        stream,
        op,
        case.seed,
        &mut x.a.slice_mut(..la),
        &mut x.b.slice_mut(..lb),
        &mut x.c.slice_mut(..guarded),
    )?;
    stream.memcpy_dtod(&x.c.slice(..guarded), &mut x.r.slice_mut(..guarded)).map_err(drv("cuMemcpyDtoD"))?;
    gemm.gemm_with(kernel, stream, op, &x.a.slice(..la), &x.b.slice(..lb), &mut x.c.slice_mut(..lc))?;
    blas.gemm(op, &x.a.slice(..la), &x.b.slice(..lb), &mut x.r.slice_mut(..lc))?;
    stream.memset_zeros(&mut x.slot).map_err(drv("cuMemsetD8"))?;
    testing::compare_into(gemm, stream, &x.c.slice(..guarded), &x.r.slice(..guarded), &mut x.slot)?;
    Ok(testing::read_comparisons(stream, &x.slot)?[0])
}

/// Recompute a case whose output disagreed with cuBLAS on the host in f64: (ours, cuBLAS's,
/// still in `r`) against that reference.
fn arbitrate(
    gemm: &Gemm,
    stream: &Arc<CudaStream>,
    kernel: &KernelSpec,
    case: &testing::SweepCase,
    x: &mut SweepBuffers,
) -> testing::Result<(testing::Comparison, testing::Comparison)> {
    let op = &case.op;
    let (la, lb, lc) = testing::lengths(op);
    let host = |v: &cudarc::driver::CudaView<bf16>| stream.clone_dtoh(v).map_err(drv("cuMemcpyDtoH"));
    let theirs = host(&x.r.slice(..lc))?;
    fill_inputs(
        gemm,
        stream,
        op,
        case.seed,
        &mut x.a.slice_mut(..la),
        &mut x.b.slice_mut(..lb),
        &mut x.c.slice_mut(..lc),
    )?;
    let (ha, hb, hc) = (host(&x.a.slice(..la))?, host(&x.b.slice(..lb))?, host(&x.c.slice(..lc))?);
    gemm.gemm_with(kernel, stream, op, &x.a.slice(..la), &x.b.slice(..lb), &mut x.c.slice_mut(..lc))?;
    let ours = host(&x.c.slice(..lc))?;
    let exact = testing::cpu_reference_general(op, &ha, &hb, &hc)?;
    // Only where the reference is finite: padding and guard stay poisoned (NaN) in both.
    let finite = |out: &[bf16]| {
        let (o, e): (Vec<bf16>, Vec<f64>) =
            out.iter().zip(&exact).filter(|(_, e)| e.is_finite()).map(|(o, e)| (*o, *e)).unzip();
        testing::compare(&o, e)
    };
    Ok((finite(&ours), finite(&theirs)))
}

fn drv(call: &'static str) -> impl Fn(DriverError) -> hgemm::Error {
    move |e| hgemm::Error::Driver { call, code: format!("{e:?}") }
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn alloc<T: cudarc::driver::DeviceRepr>(stream: &Arc<CudaStream>, len: usize) -> CudaSlice<T> {
    // SAFETY: every test fills what it reads before reading it.
    unsafe { stream.alloc::<T>(len) }.expect("cuMemAlloc")
}

/// Fresh inputs for `op` in `a`, `b` and `c` (A uniform in [-1, 1), B scaled by K^-1/2; C
/// poisoned, with random old values when beta ≠ 0, and `guard` more poisoned elements after it).
fn fill_inputs(
    gemm: &Gemm,
    stream: &Arc<CudaStream>,
    op: &GemmOp,
    seed: u64,
    a: &mut CudaViewMut<bf16>,
    b: &mut CudaViewMut<bf16>,
    c: &mut CudaViewMut<bf16>,
) -> testing::Result<()> {
    testing::fill_random(gemm, stream, a, seed, 1.0)?;
    testing::fill_random(gemm, stream, b, seed ^ 0x5eed, 1.0 / (op.k.max(1) as f32).sqrt())?;
    testing::fill(gemm, stream, c, testing::POISON)?;
    if op.beta != 0.0 {
        let (_, _, lc) = testing::lengths(op);
        testing::fill_random(gemm, stream, &mut c.slice_mut(..lc), seed ^ 0xc0de, 1.0)?;
    }
    Ok(())
}

#[test]
fn gemm_handle_is_send_and_sync() {
    fn shareable<T: Send + Sync>() {}
    shareable::<Gemm>();
}

#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_random_shape_sweep_matches_cublas() {
    let gemm = testing::open_family(Family::Hopper);
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream).unwrap();
    let seed = seed();
    let count = env_or("HGEMM_SWEEP_CASES", 200);
    // Each kernel draws its own cases from the seed, so a subset repeats them exactly.
    let only = std::env::var("HGEMM_SWEEP_KERNELS").ok();
    // One set of buffers for every case: each case uses the front of each.
    let max = testing::SWEEP_MAX_ELEMENTS;
    let mut bufs = SweepBuffers {
        a: alloc::<bf16>(&stream, max),
        b: alloc::<bf16>(&stream, max),
        c: alloc::<bf16>(&stream, max + testing::GUARD_LEN),
        r: alloc::<bf16>(&stream, max + testing::GUARD_LEN),
        slot: testing::comparison_slots(&stream, 1).unwrap(),
    };
    let (mut total, mut failures, mut worst) = (0, Vec::new(), 0.0f64);
    let mut arbitrated = Vec::new();
    let started = std::time::Instant::now();
    for kernel in gemm.kernels().filter(|k| only.as_ref().is_none_or(|o| o.split(',').any(|n| n == k.name))) {
        let mut kernel_worst = (0.0f64, String::new());
        let cases = testing::sweep_cases(kernel, seed, count);
        let mut failed = 0;
        for case in &cases {
            total += 1;
            let what = format!(
                "{} case {} ({}, input seed {})",
                kernel.name,
                case.index,
                testing::describe(&case.op),
                case.seed
            );
            match sweep_case(&gemm, &stream, &blas, kernel, case, &mut bufs) {
                Ok(cmp) if cmp.passed() => {
                    if cmp.rel_error() > kernel_worst.0 {
                        kernel_worst = (cmp.rel_error(), testing::describe(&case.op));
                    }
                }
                Ok(cmp) if cmp.unwritten == 0 && cmp.stray == 0 && testing::macs(&case.op) <= ARBITRATION_MAX_MACS => {
                    // cuBLAS is not ground truth: on small outputs with very long K its choice
                    // of algorithm is sometimes the less accurate one. Let f64 decide.
                    let (ours, theirs) = arbitrate(&gemm, &stream, kernel, case, &mut bufs).unwrap();
                    if ours.passed() {
                        arbitrated.push(format!(
                            "{what}: {:.2e} from cuBLAS, but {:.2e} from the f64 CPU reference (cuBLAS: {:.2e})",
                            cmp.rel_error(),
                            ours.rel_error,
                            theirs.rel_error
                        ));
                    } else {
                        failed += 1;
                        failures.push(format!(
                            "{what}: rel error {:.2e} vs cuBLAS, {:.2e} vs f64",
                            cmp.rel_error(),
                            ours.rel_error
                        ));
                    }
                }
                Ok(cmp) => {
                    failed += 1;
                    failures.push(format!(
                        "{what}: rel error {:.2e}, unwritten {}, stray {}",
                        cmp.rel_error(),
                        cmp.unwritten,
                        cmp.stray
                    ));
                }
                Err(e) => {
                    failed += 1;
                    failures.push(format!("{what}: {e}"));
                }
            }
        }
        worst = worst.max(kernel_worst.0);
        println!(
            "{:<22} {} cases, {failed} failed; worst rel error {:.2e} at {}",
            kernel.name,
            cases.len(),
            kernel_worst.0,
            kernel_worst.1
        );
    }
    for a in &arbitrated {
        println!("cuBLAS off, ours exact: {a}");
    }
    for f in failures.iter().take(50) {
        println!("FAIL {f}");
    }
    println!(
        "reliability: sweep seed {seed}: {total} cases ({count} per kernel), {} failed, {} decided by the f64 reference, worst rel error {worst:.2e}, {:.0} s",
        failures.len(),
        arbitrated.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "seed {seed} (HGEMM_SEED={seed}, and HGEMM_SWEEP_KERNELS=<names> for a subset, repeat it): {} of {total} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_outputs_are_bitwise_deterministic() {
    const RUNS: usize = 100;
    let gemm = testing::open_family(Family::Hopper);
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream).unwrap();
    let seed = seed();
    let mut problems = Vec::new();
    for (i, kernel) in gemm.kernels().enumerate() {
        // Partial tiles in M, N and K, several tiles per SM for the persistent kernels; the
        // general kernels through every option at once (beta ≠ 0: C is an input too).
        let k = 4104;
        let op = if kernel.general {
            let (m, n) = testing::within_one_column(kernel, Variant::GENERAL.c_layout, false, 1999, 3000);
            let (m, n) = testing::dims_for(kernel, Variant::GENERAL.c_layout, m, n);
            testing::op_with(kernel, m, n, k, &Variant::GENERAL)
        } else {
            testing::op_for(kernel, 1999, 3000, k)
        };
        let (la, lb, lc) = testing::lengths(&op);
        let (mut a, mut b, mut c0) =
            (alloc::<bf16>(&stream, la), alloc::<bf16>(&stream, lb), alloc::<bf16>(&stream, lc));
        fill_inputs(
            &gemm,
            &stream,
            &op,
            seed.wrapping_add(i as u64),
            &mut a.slice_mut(..),
            &mut b.slice_mut(..),
            &mut c0.slice_mut(..),
        )
        .unwrap();
        let (mut out, mut first) = (alloc::<bf16>(&stream, lc), alloc::<bf16>(&stream, lc));
        let mut slots = testing::comparison_slots(&stream, RUNS).unwrap();
        for run in 0..RUNS {
            stream.memcpy_dtod(&c0, &mut out).unwrap();
            gemm.gemm_with(kernel, &stream, &op, &a, &b, &mut out).unwrap();
            if run == 0 {
                stream.memcpy_dtod(&out, &mut first).unwrap();
            } else {
                let mut slot = slots.slice_mut(run * BufferComparison::WORDS..(run + 1) * BufferComparison::WORDS);
                testing::compare_into(&gemm, &stream, &out, &first, &mut slot).unwrap();
            }
        }
        // The first result must also be right, or identical runs prove little.
        let mut reference = stream.clone_dtod(&c0).unwrap();
        blas.gemm(&op, &a, &b, &mut reference).unwrap();
        let vs_cublas = testing::compare_on_device(&gemm, &stream, &first, &reference).unwrap();
        let runs = testing::read_comparisons(&stream, &slots).unwrap();
        let differing = runs[1..].iter().filter(|c| !c.identical()).count();
        let most = runs.iter().map(|c| c.bits_differ).max().unwrap_or(0);
        println!(
            "{:<22} {}: {RUNS} runs, {differing} differ from the first (at most {most} elements); first vs cuBLAS {:.2e}",
            kernel.name,
            testing::describe(&op),
            vs_cublas.rel_error()
        );
        if differing > 0 || !vs_cublas.passed() {
            problems.push(format!(
                "{}: {differing} of {} runs differ, first vs cuBLAS {vs_cublas:?}",
                kernel.name,
                RUNS - 1
            ));
        }
    }
    let kernels = gemm.kernels().count();
    println!(
        "reliability: determinism: {kernels} kernels x {RUNS} runs, {} not bitwise identical or wrong",
        problems.len()
    );
    assert!(problems.is_empty(), "seed {seed}:\n{}", problems.join("\n"));
}

/// The buffers of one soak call and its cuBLAS result; every kernel that reads A and B in the
/// call's orders runs on them.
struct SoakBuffers {
    op: GemmOp,
    a: CudaSlice<bf16>,
    b: CudaSlice<bf16>,
    c: CudaSlice<bf16>,
    reference: CudaSlice<bf16>,
}

/// A (kernel, call) pair of the soak and the buffers it uses.
struct SoakCall {
    kernel: &'static KernelSpec,
    op: GemmOp,
    buffers: usize,
}

#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_soak_keeps_device_memory_flat() {
    let calls = env_or("HGEMM_SOAK_CALLS", 10_000);
    let gemm = testing::open_family(Family::Hopper);
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream).unwrap();
    let seed = seed();
    let shapes =
        [(128, 256, 64), (129, 264, 72), (300, 520, 136), (1000, 1000, 1000), (2048, 2048, 512), (96, 4096, 256)];
    // One call per (shape, storage order of A and B): every kernel that reads those orders runs
    // on the same buffers and is checked against the same cuBLAS result.
    let mut buffers: Vec<SoakBuffers> = Vec::new();
    let mut pairs = Vec::new();
    for &(m, n, k) in &shapes {
        for kernel in gemm.kernels() {
            let (m, n) = testing::within_one_column(kernel, Layout::RowMajor, true, m, n);
            let op = testing::op_for(kernel, m, n, k);
            let index = match buffers.iter().position(|b| b.op == op) {
                Some(i) => i,
                None => {
                    let (la, lb, lc) = testing::lengths(&op);
                    let (mut a, mut b, mut c) = (alloc(&stream, la), alloc(&stream, lb), alloc(&stream, lc));
                    let inputs_seed = seed.wrapping_add(buffers.len() as u64);
                    fill_inputs(
                        &gemm,
                        &stream,
                        &op,
                        inputs_seed,
                        &mut a.slice_mut(..),
                        &mut b.slice_mut(..),
                        &mut c.slice_mut(..),
                    )
                    .unwrap();
                    let mut reference = stream.clone_dtod(&c).unwrap();
                    blas.gemm(&op, &a, &b, &mut reference).unwrap();
                    buffers.push(SoakBuffers { op, a, b, c, reference });
                    buffers.len() - 1
                }
            };
            pairs.push(SoakCall { kernel, op, buffers: index });
        }
    }
    let mut results = testing::comparison_slots(&stream, pairs.len()).unwrap();
    let mut counts = vec![0usize; pairs.len()];
    let mut call = |p: usize, results: &mut CudaSlice<u64>| -> hgemm::Result<()> {
        let SoakCall { kernel, op, buffers: index } = &pairs[p];
        let SoakBuffers { a, b, c, reference, .. } = &mut buffers[*index];
        testing::fill(&gemm, &stream, c, testing::POISON)?;
        gemm.gemm_with(kernel, &stream, op, a, b, c)?;
        let mut at = results.slice_mut(p * BufferComparison::WORDS..(p + 1) * BufferComparison::WORDS);
        testing::compare_into(&gemm, &stream, c, reference, &mut at)
    };
    // Warm-up: every (kernel, call) once, so that lazily loaded code is in before the first count.
    for (p, count) in counts.iter_mut().enumerate() {
        call(p, &mut results).unwrap();
        *count += 1;
    }
    gemm.synchronize(&stream).unwrap();
    let (free_before, total) = gemm.context().mem_get_info().unwrap();
    let rss_before = rss_kib();
    let started = std::time::Instant::now();
    let mut rng = Rng::new(seed);
    let mut error = None;
    for i in 0..calls {
        let p = rng.range(0, pairs.len() - 1);
        if let Err(e) = call(p, &mut results) {
            error = Some(format!("call {i} ({} {}): {e}", pairs[p].kernel.name, testing::describe(&pairs[p].op)));
            break;
        }
        counts[p] += 1;
        // Now and then, so that an asynchronous failure is caught near the call that caused it.
        if i % 1000 == 999
            && let Err(e) = gemm.synchronize(&stream)
        {
            error = Some(format!("after call {i}: {e}"));
            break;
        }
    }
    let synced = gemm.synchronize(&stream);
    let seconds = started.elapsed().as_secs_f64();
    let (free_after, _) = gemm.context().mem_get_info().unwrap();
    let rss_after = rss_kib();
    let mut bad = Vec::new();
    for (p, c) in testing::read_comparisons(&stream, &results).unwrap().iter().enumerate() {
        if !c.passed() {
            bad.push(format!(
                "{} {} ({} calls): {c:?}",
                pairs[p].kernel.name,
                testing::describe(&pairs[p].op),
                counts[p]
            ));
        }
    }
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    println!(
        "reliability: soak {calls} calls over {} (kernel, shape) pairs in {seconds:.1} s: free device memory {:.1} MiB before, {:.1} MiB after (change {} bytes) of {:.0} MiB; host RSS {rss_before} KiB before, {rss_after} KiB after; {} pairs wrong",
        pairs.len(),
        mib(free_before),
        mib(free_after),
        free_after as i64 - free_before as i64,
        mib(total),
        bad.len()
    );
    assert!(error.is_none() && synced.is_ok(), "seed {seed}: {error:?} {synced:?}");
    assert!(bad.is_empty(), "seed {seed}: wrong results:\n{}", bad.join("\n"));
    assert!(free_after >= free_before, "device memory in use grew by {} bytes over the soak", free_before - free_after);
}

/// Resident set of this process, KiB (Linux), for the soak's report.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_concurrent_streams_share_one_handle() {
    const THREADS: usize = 4;
    let iterations = env_or("HGEMM_CONCURRENCY_CALLS", 40);
    let gemm = testing::open_family(Family::Hopper);
    let seed = seed();
    let kernels: Vec<&'static KernelSpec> = gemm.kernels().collect();
    let outcomes = on_concurrent_streams(&gemm, seed, THREADS, iterations, Streams::New, |t, i, rng| {
        // Threads walk the kernels from different places, so different kernels run at once;
        // every fifth call lets the library choose.
        let kernel = kernels[(i + t * kernels.len() / THREADS) % kernels.len()];
        let auto = i % 5 == 4;
        let (m, k) = (rng.range(1, 1500), 8 * rng.range(1, 200));
        let n = rng.range(1, 1500).div_ceil(8) * 8;
        let op = if kernel.general && rng.chance(0.5) {
            let (m, n) = testing::within_one_column(kernel, Variant::GENERAL.c_layout, false, m, n);
            let (m, n) = testing::dims_for(kernel, Variant::GENERAL.c_layout, m, n);
            testing::op_with(kernel, m, n, k, &Variant::GENERAL)
        } else {
            let (m, n) = testing::within_one_column(kernel, Layout::RowMajor, true, m, n);
            testing::op_for(kernel, m, n, k)
        };
        ((!auto).then_some(kernel), op)
    });
    let failed: Vec<&String> = outcomes.iter().flat_map(|o| &o.0).filter(|(ok, _)| !ok).map(|(_, l)| l).collect();
    for f in &failed {
        println!("FAIL {f}");
    }
    println!(
        "reliability: concurrency: {THREADS} threads x {iterations} calls, each thread on its own stream, one shared handle: {} failed",
        failed.len()
    );
    assert!(failed.is_empty(), "seed {seed}: {} of {} calls failed", failed.len(), THREADS * iterations);
}

/// Stream-K launches keep their whole waves in step by waiting on the other clusters of their
/// grid (`kernels/src/rendezvous.rs`), which only the whole grid resident at once satisfies.
/// Two such launches at once on different streams cannot both be resident: their waits must give
/// up and the calls still finish, correct.
#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_split_launches_on_concurrent_streams_finish() {
    split_launches_at_once(Streams::New, "streams");
}

/// The same on the per-thread default stream: one handle (`CU_STREAM_PER_THREAD`) on every
/// thread, but a stream of each thread's own, so the threads' split launches overlap and each
/// thread needs a workspace of its own (they once shared the handle's).
#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_split_launches_on_per_thread_streams_finish() {
    split_launches_at_once(Streams::PerThread, "per-thread default streams");
}

fn split_launches_at_once(streams: Streams, what: &str) {
    const THREADS: usize = 3;
    // Each splits its last waves after whole ones (the waves that wait): 5, 1 and 14 of them.
    const SHAPES: [(usize, usize, usize); 3] = [(5000, 5000, 512), (3000, 3000, 1024), (8192, 8192, 1024)];
    let gemm = testing::open_family(Family::Hopper);
    let seed = seed();
    let v7 = gemm.kernels().find(|k| k.name == "hopper_v7").expect("hopper_v7");
    let outcomes = on_concurrent_streams(&gemm, seed, THREADS, 2 * SHAPES.len(), streams, |t, i, _| {
        let (m, n, k) = SHAPES[(i + t) % SHAPES.len()];
        (Some(v7), testing::op_for(v7, m, n, k))
    });
    for (t, (lines, took)) in outcomes.iter().enumerate() {
        for (_, l) in lines {
            println!("{l}");
        }
        println!("thread {t}: {:.1} ms", took.as_secs_f64() * 1e3);
    }
    let failed: Vec<&String> = outcomes.iter().flat_map(|o| &o.0).filter(|(ok, _)| !ok).map(|(_, l)| l).collect();
    println!("reliability: split launches on {THREADS} {what} at once: {} failed", failed.len());
    assert!(failed.is_empty(), "seed {seed}: {failed:?}");
}

/// A stream's workspace, released, gives its device memory back, and the next split call on the
/// stream gets a fresh one and is still right.
#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_released_workspaces_give_their_memory_back() {
    let gemm = testing::open_family(Family::Hopper);
    let seed = seed();
    let v7 = gemm.kernels().find(|k| k.name == "hopper_v7").expect("hopper_v7");
    let op = testing::op_for(v7, 3000, 3000, 1024);
    let stream = gemm.context().new_stream().expect("cuStreamCreate");
    let blas = Cublas::new(&stream).expect("cublasCreate");
    let free = || gemm.context().mem_get_info().expect("cuMemGetInfo").0 as i64;
    // A stream that never split has nothing to release.
    gemm.release_workspace(&stream).expect("release without a workspace");
    let mut freed = Vec::new();
    for round in 0..3 {
        let c = concurrent_call(&gemm, &stream, &blas, Some(v7), &op, seed ^ round).expect("split call");
        assert!(c.passed(), "round {round}: rel error {:.2e}, unwritten {}", c.rel_error(), c.unwritten);
        // The call's own buffers are freed in stream order: gone before the count, so that only
        // the workspace is measured.
        gemm.context().synchronize().expect("cuCtxSynchronize");
        let before = free();
        gemm.release_workspace(&stream).expect("release");
        freed.push(free() - before);
        gemm.release_workspace(&stream).expect("a second release is a no-op");
    }
    let bytes = gemm.workspace_bytes() as i64;
    println!("reliability: workspace release: {bytes} bytes a workspace, freed {freed:?} over three rounds");
    // The driver hands memory back in pages of up to 2 MiB.
    assert!(freed.iter().all(|&f| (bytes - (2 << 20)..=bytes + (4 << 20)).contains(&f)), "freed {freed:?} of {bytes}");
}

/// Which stream each thread of [`on_concurrent_streams`] runs on: one it creates, or its
/// per-thread default stream.
#[derive(Clone, Copy)]
enum Streams {
    New,
    PerThread,
}

/// `calls` checked calls ([`concurrent_call`]) on each of `threads` threads sharing `gemm`, each
/// thread on its own stream with its own cuBLAS handle, all started together. Call `i` of thread
/// `t` is what `pick(t, i, rng)` returns: the kernel (`None`: the library's choice) and the call.
/// Per thread: `(passed, what)` for each call, and how long its calls took.
fn on_concurrent_streams<'k>(
    gemm: &Gemm,
    seed: u64,
    threads: usize,
    calls: usize,
    streams: Streams,
    pick: impl Fn(usize, usize, &mut Rng) -> (Option<&'k KernelSpec>, GemmOp) + Sync,
) -> Vec<(Vec<(bool, String)>, std::time::Duration)> {
    let start = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (start, pick) = (&start, &pick);
                s.spawn(move || {
                    let stream = match streams {
                        Streams::New => gemm.context().new_stream().expect("cuStreamCreate"),
                        Streams::PerThread => gemm.context().per_thread_stream(),
                    };
                    let blas = Cublas::new(&stream).expect("cublasCreate");
                    let mut rng = Rng::new(seed ^ ((t as u64) << 40));
                    let mut lines = Vec::new();
                    start.wait();
                    let began = std::time::Instant::now();
                    for i in 0..calls {
                        let (kernel, op) = pick(t, i, &mut rng);
                        let what = format!(
                            "thread {t} call {i}: {} {}",
                            kernel.map_or("auto", |k| k.name),
                            testing::describe(&op)
                        );
                        match concurrent_call(gemm, &stream, &blas, kernel, &op, rng.next_u64()) {
                            Ok(c) => lines.push((
                                c.passed(),
                                format!(
                                    "{what}: rel error {:.2e}, unwritten {}, stray {}",
                                    c.rel_error(),
                                    c.unwritten,
                                    c.stray
                                ),
                            )),
                            Err(e) => lines.push((false, format!("{what}: {e}"))),
                        }
                    }
                    (lines, began.elapsed())
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().expect("a worker thread panicked")).collect()
    })
}

/// One checked call on `stream`: fresh buffers and inputs, the kernel (or the library's choice),
/// cuBLAS on the same stream, and the comparison on the device.
fn concurrent_call(
    gemm: &Gemm,
    stream: &Arc<CudaStream>,
    blas: &Cublas,
    kernel: Option<&KernelSpec>,
    op: &GemmOp,
    seed: u64,
) -> testing::Result<BufferComparison> {
    let lc = testing::lengths(op).2;
    let [a, b, mut c, mut reference] = call_buffers(gemm, stream, op, seed)?;
    match kernel {
        Some(k) => gemm.gemm_with(k, stream, op, &a, &b, &mut c.slice_mut(..lc))?,
        None => gemm.gemm(stream, op, &a, &b, &mut c.slice_mut(..lc))?,
    }
    blas.gemm(op, &a, &b, &mut reference.slice_mut(..lc))?;
    Ok(testing::compare_on_device(gemm, stream, &c, &reference)?)
}

/// A, B and C (with its guard) for `op` on `stream`, with fresh inputs ([`fill_inputs`]), and a
/// copy of C for cuBLAS to write, in that order.
fn call_buffers(
    gemm: &Gemm,
    stream: &Arc<CudaStream>,
    op: &GemmOp,
    seed: u64,
) -> testing::Result<[CudaSlice<bf16>; 4]> {
    let (la, lb, lc) = testing::lengths(op);
    let (mut a, mut b, mut c) =
        (alloc::<bf16>(stream, la), alloc::<bf16>(stream, lb), alloc::<bf16>(stream, lc + testing::GUARD_LEN));
    fill_inputs(gemm, stream, op, seed, &mut a.slice_mut(..), &mut b.slice_mut(..), &mut c.slice_mut(..))?;
    let reference = stream.clone_dtod(&c).map_err(drv("cuMemcpyDtoD"))?;
    Ok([a, b, c, reference])
}

/// The capture mode the tests below capture in: the default, which refuses `cuMemAlloc` on
/// every thread while it lasts.
const GLOBAL: cudarc::driver::sys::CUstreamCaptureMode =
    cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL;

/// Calls captured into a CUDA graph and replayed, as an inference server replays a step. The
/// stream has run a split call before, so it has a workspace of its own; the graph's split calls
/// get one of the graph's, made during the capture. The graph holds one kernel per call and
/// nothing else, and runs three times on fresh inputs, each output against cuBLAS. A release of
/// the stream's workspace is refused during the capture (which stays valid) and frees it after,
/// replays still right; once the graph is destroyed, its workspace's memory comes back.
#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_graph_replays_match_cublas() {
    let gemm = testing::open_family(Family::Hopper);
    let seed = seed();
    // SAFETY: every buffer here is used on the one stream it is allocated on. (cudarc's event
    // tracking would make the captured calls wait on events recorded outside the capture,
    // which a capture refuses.)
    unsafe { gemm.context().disable_event_tracking() };
    let stream = gemm.context().new_stream().expect("cuStreamCreate");
    let blas = Cublas::new(&stream).expect("cublasCreate");
    // Split by K (the last waves of stream-K, and every unit of spread thin tiles), whole, and
    // with alpha and beta.
    let ops = [
        GemmOp::new(5000, 5000, 512),
        GemmOp::new(32, 14336, 4096),
        GemmOp::new(2048, 2048, 2048),
        GemmOp::new(1000, 1496, 520).alpha(0.5).beta(-1.0),
    ];
    for op in &ops[..2] {
        assert_splits(&gemm, op);
    }
    let mut bufs: Vec<_> = ops
        .iter()
        .map(|op| {
            let (la, lb, lc) = testing::lengths(op);
            (alloc::<bf16>(&stream, la), alloc::<bf16>(&stream, lb), alloc::<bf16>(&stream, lc + testing::GUARD_LEN))
        })
        .collect();
    let eager = |s| {
        let c = concurrent_call(&gemm, &stream, &blas, None, &ops[0], s).expect("an uncaptured split call");
        assert!(c.passed(), "uncaptured split call: rel error {:.2e}", c.rel_error());
    };
    eager(seed ^ 0xea9e);
    let free = || {
        gemm.context().synchronize().expect("cuCtxSynchronize");
        gemm.context().mem_get_info().expect("cuMemGetInfo").0 as i64
    };
    let before_capture = free();

    stream.begin_capture(GLOBAL).expect("cuStreamBeginCapture");
    for (op, (a, b, c)) in ops.iter().zip(&mut bufs) {
        let lc = testing::lengths(op).2;
        gemm.gemm(&stream, op, a, b, &mut c.slice_mut(..lc)).expect("a captured call");
    }
    let during = gemm.release_workspace(&stream);
    let graph = stream
        .end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0))
        .expect("the capture stayed valid")
        .expect("a graph");
    assert!(matches!(during, Err(hgemm::Error::Graph(_))), "release during the capture: {during:?}");
    let mut nodes = 0usize;
    // SAFETY: counts the nodes of a graph that `graph` owns.
    unsafe { cudarc::driver::sys::cuGraphGetNodes(graph.cu_graph(), std::ptr::null_mut(), &mut nodes) }
        .result()
        .expect("cuGraphGetNodes");
    assert_eq!(nodes, ops.len(), "a kernel per call and nothing else in the graph");
    let graph_bytes = before_capture - free();
    gemm.release_workspace(&stream).expect("the stream's own workspace, after the capture");

    let mut failed = Vec::new();
    for round in 0..3u64 {
        let mut refs = Vec::new();
        for (i, (op, (a, b, c))) in ops.iter().zip(&mut bufs).enumerate() {
            let s = seed ^ (round << 32) ^ i as u64;
            fill_inputs(&gemm, &stream, op, s, &mut a.slice_mut(..), &mut b.slice_mut(..), &mut c.slice_mut(..))
                .expect("inputs");
            refs.push(stream.clone_dtod(c).expect("cuMemcpyDtoD"));
        }
        graph.launch().expect("cuGraphLaunch");
        // The stream's next split call gets a new workspace of its own, beside the graph's.
        if round == 1 {
            eager(seed ^ 0xea9f);
        }
        for ((op, (a, b, c)), r) in ops.iter().zip(&bufs).zip(&mut refs) {
            let lc = testing::lengths(op).2;
            blas.gemm(op, a, b, &mut r.slice_mut(..lc)).expect("cuBLAS");
            let cmp = testing::compare_on_device(&gemm, &stream, c, r).expect("comparison");
            let line = format!(
                "replay {round}: {}: rel error {:.2e}, unwritten {}, stray {}",
                testing::describe(op),
                cmp.rel_error(),
                cmp.unwritten,
                cmp.stray
            );
            println!("{line}");
            if !cmp.passed() {
                failed.push(line);
            }
        }
    }
    gemm.release_workspace(&stream).expect("release");
    let before_drop = free();
    drop(graph);
    // The graph's workspace is freed at the handle's next chance after CUDA has run the
    // destructor of its user object, on a thread of CUDA's, some time after the graph is gone.
    let mut back = 0;
    for _ in 0..200 {
        gemm.release_workspace(&stream).expect("release");
        back = free() - before_drop;
        if back >= graph_bytes - (2 << 20) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let bytes = gemm.workspace_bytes() as i64;
    println!(
        "reliability: graph replays: {} calls in one graph of {nodes} nodes, 3 replays, {} failed; the graph's \
         workspace {graph_bytes} bytes, {back} back after it was destroyed",
        ops.len(),
        failed.len()
    );
    assert!(failed.is_empty(), "seed {seed}: {failed:?}");
    // One workspace for the capture's one stream, in pages of up to 2 MiB.
    assert!((bytes - (2 << 20)..=bytes + (4 << 20)).contains(&graph_bytes), "the capture took {graph_bytes} bytes");
    assert!(back >= graph_bytes - (2 << 20), "{back} of the graph's {graph_bytes} bytes came back");
}

/// A graph captured from two streams (forked from the first and joined back), each running a
/// split call, replayed while split calls run on the second stream itself: the graph's calls
/// have workspaces of their own, so neither set shares partial sums or flags with the other.
/// (Keyed by the stream alone, the graph's second branch and the stream's own calls would share
/// one, and run at once.)
#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_graph_from_two_streams_beside_their_own_calls() {
    let gemm = testing::open_family(Family::Hopper);
    let seed = seed();
    // SAFETY: each buffer is used on one stream, or in the graph and then, after a
    // synchronization, on the first stream.
    unsafe { gemm.context().disable_event_tracking() };
    let (first, second) = (GemmOp::new(5000, 5000, 512), GemmOp::new(32, 14336, 4096));
    assert_splits(&gemm, &first);
    assert_splits(&gemm, &second);
    let mut x = ReadyCall::new(&gemm, first, seed);
    let mut y = ReadyCall::new(&gemm, second, seed ^ 1);
    let s2 = y.stream.clone();
    let mut own: Vec<ReadyCall> = (0..3).map(|i| ReadyCall::on(&gemm, s2.clone(), second, seed ^ (2 + i))).collect();
    // Made before the capture, which refuses anything that allocates.
    let event = || gemm.context().new_event(None).expect("cuEventCreate");
    let (fork, join) = (event(), event());
    x.stream.begin_capture(GLOBAL).expect("cuStreamBeginCapture");
    fork.record(&x.stream).expect("cuEventRecord");
    s2.wait(&fork).expect("cuStreamWaitEvent");
    x.run(&gemm).expect("the first stream's captured call");
    y.run(&gemm).expect("the second stream's captured call");
    join.record(&s2).expect("cuEventRecord");
    x.stream.wait(&join).expect("cuStreamWaitEvent");
    let graph =
        x.stream.end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0)).expect("the capture").expect("a graph");
    let mut failed = Vec::new();
    for round in 0..3 {
        // Every C poisoned (beta is 0), so that a call that wrote nothing fails.
        for c in [&mut x, &mut y].into_iter().chain(own.iter_mut()) {
            let stream = c.stream.clone();
            testing::fill(&gemm, &stream, &mut c.c, testing::POISON).expect("poison");
            stream.synchronize().expect("cuStreamSynchronize");
        }
        graph.launch().expect("cuGraphLaunch");
        // On the second stream, in no order with the graph.
        for c in own.iter_mut() {
            c.run(&gemm).expect("a split call on the second stream");
        }
        x.stream.synchronize().expect("cuStreamSynchronize");
        s2.synchronize().expect("cuStreamSynchronize");
        let graph_calls = [("graph, first stream", &mut x), ("graph, second stream", &mut y)].into_iter();
        for (what, c) in graph_calls.chain(own.iter_mut().map(|c| ("the second stream's own", c))) {
            let cmp = c.check(&gemm).expect("check");
            let line = format!(
                "round {round}: {what}: {}: rel error {:.2e}, unwritten {}",
                testing::describe(&c.op),
                cmp.rel_error(),
                cmp.unwritten
            );
            println!("{line}");
            if !cmp.passed() {
                failed.push(line);
            }
        }
    }
    println!("reliability: graph from two streams beside their own split calls: 3 rounds, {} failed", failed.len());
    assert!(failed.is_empty(), "seed {seed}: {failed:?}");
}

/// A stream's first split call, which makes its workspace, on one thread that has never made
/// the context current, while another thread captures a graph in the global mode: the call runs
/// right, and the capture stays valid and its graph runs right too.
#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_split_call_beside_a_global_capture() {
    let gemm = testing::open_family(Family::Hopper);
    let seed = seed();
    // SAFETY: each call's buffers are used on its own stream only.
    unsafe { gemm.context().disable_event_tracking() };
    let split = GemmOp::new(5000, 5000, 512);
    assert_splits(&gemm, &split);
    // Made here, so that no thread waits at a barrier for one that panicked before it.
    let mut eager = ReadyCall::new(&gemm, split, seed);
    let mut captured = ReadyCall::new(&gemm, GemmOp::new(512, 512, 512), seed ^ 1);
    let (began, called) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
    let (ran, graph) = std::thread::scope(|s| {
        let capturing = s.spawn(|| {
            let call = captured
                .stream
                .begin_capture(GLOBAL)
                .map_err(drv("cuStreamBeginCapture"))
                .and_then(|()| captured.run(&gemm));
            began.wait();
            called.wait();
            let graph = captured.stream.end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0));
            call?;
            let graph = graph.map_err(drv("cuStreamEndCapture"))?.expect("a graph");
            // (A graph stays on its thread: cudarc's is not `Send`.)
            graph.launch().map_err(drv("cuGraphLaunch"))?;
            captured.stream.synchronize().map_err(drv("cuStreamSynchronize"))
        });
        let running = s.spawn(|| {
            began.wait();
            let call = eager.run(&gemm);
            called.wait();
            call
        });
        (running.join().expect("the eager thread panicked"), capturing.join().expect("the capturing thread panicked"))
    });
    ran.expect("the split call during the capture");
    graph.expect("the capture and its graph's launch");
    let (eager, captured) = (eager.check(&gemm).expect("check"), captured.check(&gemm).expect("check"));
    println!(
        "reliability: split call beside a global capture: rel errors {:.2e} (split call), {:.2e} (graph)",
        eager.rel_error(),
        captured.rel_error()
    );
    assert!(eager.passed() && captured.passed(), "seed {seed}: {eager:?} {captured:?}");
}

/// Calls from threads that have never made the context current (workers of a pool): one
/// through `gemm`, one through `prepare` and `launch_prepared`, each on a fresh thread. Once,
/// encoding the tensor maps failed there with `CUDA_ERROR_INVALID_CONTEXT`.
#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_calls_from_a_thread_without_the_context() {
    let gemm = testing::open_family(Family::Hopper);
    let seed = seed();
    // SAFETY: each call's buffers are used on its own stream only. (With cudarc's event
    // tracking, its own waits made the context current on the worker before the calls did.)
    unsafe { gemm.context().disable_event_tracking() };
    let mut direct = ReadyCall::new(&gemm, GemmOp::new(2048, 4096, 1024), seed);
    let mut prepared = ReadyCall::new(&gemm, GemmOp::new(5000, 5000, 512), seed ^ 1);
    let ran = std::thread::scope(|s| s.spawn(|| direct.run(&gemm)).join().expect("the worker panicked"));
    let launched = std::thread::scope(|s| {
        s.spawn(|| {
            let lc = testing::lengths(&prepared.op).2;
            let p = gemm.prepare(
                None,
                &prepared.stream,
                &prepared.op,
                &prepared.a,
                &prepared.b,
                &mut prepared.c.slice_mut(..lc),
            );
            // SAFETY: prepared on these buffers, which outlive the launch, on this stream alone.
            p.and_then(|p| unsafe { gemm.launch_prepared(&p, &prepared.stream) })
        })
        .join()
        .expect("the worker panicked")
    });
    ran.expect("gemm from a worker");
    launched.expect("prepare and launch_prepared from a worker");
    let (direct, prepared) = (direct.check(&gemm).expect("check"), prepared.check(&gemm).expect("check"));
    println!(
        "reliability: calls from a thread without the context: rel errors {:.2e} (gemm), {:.2e} (prepared)",
        direct.rel_error(),
        prepared.rel_error()
    );
    assert!(direct.passed() && prepared.passed(), "seed {seed}: {direct:?} {prepared:?}");
}

/// `op` is split by K where `auto` runs it on this device (so that it takes a workspace).
fn assert_splits(gemm: &Gemm, op: &GemmOp) {
    let spec = gemm.choose(op).expect("a kernel");
    let shape = hgemm::plan::launch_offline(spec, op, gemm.device().sms).expect("a launch");
    assert!(shape.split.is_some_and(|sk| sk.splits()), "{} no longer splits", testing::describe(op));
}

/// One call's stream, cuBLAS handle and buffers with fresh inputs, all made before any capture
/// begins (each allocates or synchronizes).
struct ReadyCall {
    op: GemmOp,
    stream: Arc<CudaStream>,
    blas: Cublas,
    a: CudaSlice<bf16>,
    b: CudaSlice<bf16>,
    /// C and its guard, poisoned (random where beta ≠ 0), and a copy of it for cuBLAS.
    c: CudaSlice<bf16>,
    r: CudaSlice<bf16>,
}

impl ReadyCall {
    fn new(gemm: &Gemm, op: GemmOp, seed: u64) -> ReadyCall {
        ReadyCall::on(gemm, gemm.context().new_stream().expect("cuStreamCreate"), op, seed)
    }

    fn on(gemm: &Gemm, stream: Arc<CudaStream>, op: GemmOp, seed: u64) -> ReadyCall {
        let blas = Cublas::new(&stream).expect("cublasCreate");
        let [a, b, c, r] = call_buffers(gemm, &stream, &op, seed).expect("inputs");
        stream.synchronize().expect("cuStreamSynchronize");
        ReadyCall { op, stream, blas, a, b, c, r }
    }

    fn run(&mut self, gemm: &Gemm) -> hgemm::Result<()> {
        let lc = testing::lengths(&self.op).2;
        gemm.gemm(&self.stream, &self.op, &self.a, &self.b, &mut self.c.slice_mut(..lc))
    }

    /// cuBLAS's result beside the call's, compared on the device (never during a capture).
    fn check(&mut self, gemm: &Gemm) -> testing::Result<BufferComparison> {
        let lc = testing::lengths(&self.op).2;
        self.blas.gemm(&self.op, &self.a, &self.b, &mut self.r.slice_mut(..lc))?;
        Ok(testing::compare_on_device(gemm, &self.stream, &self.c, &self.r)?)
    }
}
