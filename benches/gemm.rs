//! Criterion benchmark: cuBLAS and hgemm in one group per shape, in one process, timed with CUDA
//! events through `iter_custom`, throughput in FLOPs (criterion prints it as elements/s). hgemm
//! runs through its public API: every version pinned with `matmul_with`, and `matmul` (auto).
//!
//! `cargo bench` (8192³), or `HGEMM_BENCH_SHAPES=4096x4096x4096,128x8192x8192 cargo bench`.
//! Without a GPU it says so and exits successfully.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use cudarc::driver::{CudaStream, sys};
use hgemm::Gemm;
use hgemm_testing::{self as testing, Cublas};
use std::sync::Arc;
use std::time::Duration;

fn shapes() -> Vec<(usize, usize, usize)> {
    let spec = std::env::var("HGEMM_BENCH_SHAPES").unwrap_or_else(|_| "8192x8192x8192".into());
    spec.split(',')
        .map(|s| {
            let d: Vec<usize> = s.split('x').map(|x| x.parse().expect("HGEMM_BENCH_SHAPES: MxNxK,...")).collect();
            (d[0], d[1], d[2])
        })
        .collect()
}

/// Time `iters` back-to-back calls between two CUDA events; `call(i)` runs call number `i`.
fn gpu_time(stream: &Arc<CudaStream>, iters: u64, mut call: impl FnMut(usize)) -> Duration {
    let ctx = stream.context();
    let start = ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).unwrap();
    let stop = ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).unwrap();
    start.record(stream).unwrap();
    for i in 0..iters as usize {
        call(i);
    }
    stop.record(stream).unwrap();
    stop.synchronize().unwrap();
    Duration::from_secs_f64(start.elapsed_ms(&stop).unwrap() as f64 * 1e-3)
}

fn bench(c: &mut Criterion) {
    let gemm = match hgemm::device::context(0).and_then(Gemm::new) {
        Ok(g) => g,
        Err(e) => {
            println!("hgemm benchmarks need a supported GPU; skipping them: {e}");
            return;
        }
    };
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream).unwrap();
    for (m, n, k) in shapes() {
        let sets = testing::rotation_sets(gemm.device().l2_bytes, 2 * (m * k + n * k + m * n));
        let (a_sets, b_sets, mut outs) =
            testing::input_sets(&gemm, &stream, &hgemm::GemmOp::new(m, n, k), sets, 0).unwrap();

        let mut group = c.benchmark_group(format!("gemm {m}x{n}x{k}"));
        group.throughput(Throughput::Elements((2 * m * n * k) as u64));
        group.sample_size(20);
        group.bench_function("cuBLAS", |b| {
            b.iter_custom(|iters| {
                gpu_time(&stream, iters, |i| {
                    blas.matmul(&a_sets[i % sets], &b_sets[i % sets], &mut outs[i % sets], m, n, k).unwrap()
                })
            })
        });
        for kernel in gemm.ladder() {
            group.bench_function(
                BenchmarkId::new("hgemm", format!("{} v{}", kernel.family.name(), kernel.version)),
                |b| {
                    b.iter_custom(|iters| {
                        gpu_time(&stream, iters, |i| {
                            gemm.matmul_with(
                                kernel,
                                &stream,
                                &a_sets[i % sets],
                                &b_sets[i % sets],
                                &mut outs[i % sets],
                                m,
                                n,
                                k,
                            )
                            .unwrap()
                        })
                    })
                },
            );
        }
        group.bench_function(BenchmarkId::new("hgemm", "auto"), |b| {
            b.iter_custom(|iters| {
                gpu_time(&stream, iters, |i| {
                    gemm.matmul(&stream, &a_sets[i % sets], &b_sets[i % sets], &mut outs[i % sets], m, n, k).unwrap()
                })
            })
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
