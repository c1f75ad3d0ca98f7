//! The hang guard fires on a deliberately broken pipeline, and on a stream-K flag nobody
//! publishes, and says where it hung. Needs a GPU and a build with `--features hang-guard`
//! (`scripts/build-reliability.sh` makes one). The trap each provokes leaves the CUDA context
//! unusable, so run each test in a process of its own (`--exact NAME`, as
//! `scripts/device-reliability.sh` does).

/// What `launch` provoked: the handle (whose context is dead now), the value `launch` returned,
/// and the report, after checking that `synchronize` failed with `Error::Hang` naming
/// `kernel`, within a few times the guard's limit, and keeps failing.
#[cfg(feature = "hang-guard")]
fn fire<T>(
    kernel: &str,
    launch: impl FnOnce(&hgemm::Gemm, &std::sync::Arc<cudarc::driver::CudaStream>) -> hgemm::Result<T>,
) -> (hgemm::Gemm, T, hgemm::hang::HangReport, String) {
    use hgemm::Error;
    use hgemm::hang::LIMIT_NS;

    let gemm = hgemm::Gemm::new(hgemm::device::context(0).expect("no GPU: run this test on a GPU machine"))
        .expect("hgemm::Gemm::new");
    let stream = gemm.context().default_stream();
    let started = std::time::Instant::now();
    let kept = launch(&gemm, &stream).expect("launch");
    let err = gemm.synchronize(&stream).expect_err("the wait completed");
    let seconds = started.elapsed().as_secs_f64();
    let Error::Hang { kernel: named, report } = &err else { panic!("expected Error::Hang, got: {err}") };
    println!("after {seconds:.2} s: {err}");
    assert_eq!(*named, kernel);
    let r = gemm.hang_report().expect("a hang report");
    assert!(r.waited_ns > LIMIT_NS, "{report}");
    assert!(seconds < 5.0 * LIMIT_NS as f64 * 1e-9, "took {seconds:.1} s to give up: {report}");
    // The trap took the context with it: later calls fail too, and still say why.
    assert!(matches!(gemm.synchronize(&stream), Err(Error::Hang { .. })));
    println!("reliability: hang guard: fired after {seconds:.2} s on {kernel}: {report}");
    let report = report.clone();
    (gemm, kept, r, report)
}

#[test]
#[ignore = "needs an H100/H200 and a build with --features hang-guard: run on the GPU machine with --ignored --exact, one test per process (scripts/device-reliability.sh)"]
fn hang_guard_reports_a_broken_pipeline() {
    #[cfg(not(feature = "hang-guard"))]
    panic!("built without the hang-guard feature: build this test with `--features hang-guard`");

    #[cfg(feature = "hang-guard")]
    {
        let (_gemm, (), r, report) = fire("hgemm_hang_test", |gemm, stream| gemm.launch_broken_pipeline(stream));
        // hgemm_hang_test: two CTAs of 64 threads, 16 bytes of dynamic shared memory, waiting for
        // phase 0 of the barrier at offset 8.
        assert_eq!((r.smem_offset, r.parity, r.flag), (8, 0, 0), "{report}");
        assert!(r.block[0] < 2 && r.block[1] == 0 && r.thread < 64, "{report}");
        assert_eq!((r.threads, r.dynamic_smem), (64, 16), "{report}");
    }
}

#[test]
#[ignore = "needs an H100/H200 and a build with --features hang-guard: run on the GPU machine with --ignored --exact, one test per process (scripts/device-reliability.sh)"]
fn hang_guard_reports_an_unpublished_flag() {
    #[cfg(not(feature = "hang-guard"))]
    panic!("built without the hang-guard feature: build this test with `--features hang-guard`");

    #[cfg(feature = "hang-guard")]
    {
        use cudarc::driver::DevicePtr;
        let (_gemm, (_flag, at), r, report) = fire("hgemm_hang_flag_test", |gemm, stream| {
            let flag = gemm.launch_unpublished_flag(stream)?;
            let at = flag.device_ptr(stream).0;
            Ok((flag, at))
        });
        // hgemm_hang_flag_test: thread 0 of one CTA of 32 threads, no shared memory, waiting on
        // the flag the launch allocated.
        assert_eq!(r.flag, at, "{report}");
        assert_eq!((r.block, r.thread, r.threads, r.dynamic_smem), ([0, 0], 0, 32, 0), "{report}");
    }
}
