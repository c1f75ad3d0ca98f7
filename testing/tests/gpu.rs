//! GPU tests: what `hgemm verify` does, as tests. They need an NVIDIA GPU, so they are ignored in
//! the normal suite (CI has none) and run on a GPU machine with `--ignored` (scripts/device-final.sh).
//! A test run on the wrong GPU, or on none, fails: it never passes by skipping.

use hgemm::Family;
use hgemm_testing::{self as testing, Cublas};

fn family_matches_cublas(family: Family) {
    let gemm = testing::open_family(family);
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream).unwrap();
    let seed = testing::test_seed();
    let failures = testing::verify_family(&gemm, &blas, &stream, seed).unwrap();
    assert!(failures.is_empty(), "seed {seed}: {} failures:\n{}", failures.len(), failures.join("\n"));
}

#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_kernels_match_cublas() {
    family_matches_cublas(Family::Hopper);
}

#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_general_calls_match_cublas() {
    let gemm = testing::open_family(Family::Hopper);
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream).unwrap();
    let seed = testing::test_seed();
    let mut failures = Vec::new();
    for (i, case) in testing::general_cases().iter().enumerate() {
        let r = testing::check_op(&gemm, &blas, &stream, &case.op, case.c_offset, seed + i as u64).unwrap();
        println!(
            "{}: vs cuBLAS {:.2e}, vs CPU {:?}, outside C {}",
            case.what, r.vs_cublas.rel_error, r.vs_cpu, r.outside
        );
        if !r.passed() {
            failures.push(format!("{}: {r:?}", case.what));
        }
    }
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
}

/// Calls issued back to back in one stream, each reading the output of the one before. v7 is
/// launched with programmatic dependent launch, so each call is scheduled while its predecessor
/// is still finishing; a missing or misplaced `griddepcontrol.wait` would let a step read its
/// input (or the stream-K workspace the calls share) before the previous step wrote it. Every
/// step is checked against cuBLAS on the input that step was given; unwritten outputs stay NaN.
#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_chained_calls_see_their_predecessors_output() {
    use half::bf16;
    use hgemm::GemmOp;
    const STEPS: usize = 8;
    let gemm = testing::open_family(Family::Hopper);
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream).unwrap();
    let seed = testing::test_seed();
    let (n, k) = (4096, 4096);
    let mut failures = Vec::new();
    // M = 4096 takes the wide tile with stream-K splits, M = 512 the square tile, M = 128 the
    // slim tile.
    for m in [4096, 512, 128] {
        let kernel = gemm.choose(&GemmOp::new(m, n, k)).unwrap();
        assert!(kernel.dependent_launch, "{} is not launched as a dependent launch", kernel.name);
        let w = testing::random(&gemm, &stream, n * k, seed ^ 1, 1.0 / (k as f32).sqrt()).unwrap();
        let mut xs = vec![testing::random(&gemm, &stream, m * k, seed, 1.0).unwrap()];
        for _ in 0..STEPS {
            let mut x = unsafe { stream.alloc::<bf16>(m * n) }.unwrap();
            testing::fill(&gemm, &stream, &mut x, testing::POISON).unwrap();
            xs.push(x);
        }
        stream.synchronize().unwrap();
        for i in 0..STEPS {
            let (done, next) = xs.split_at_mut(i + 1);
            gemm.matmul(&stream, &done[i], &w, &mut next[0], m, n, k).unwrap();
        }
        for i in 0..STEPS {
            let mut reference = unsafe { stream.alloc::<bf16>(m * n) }.unwrap();
            blas.matmul(&xs[i], &w, &mut reference, m, n, k).unwrap();
            let out = stream.clone_dtoh(&xs[i + 1]).unwrap();
            let reference = stream.clone_dtoh(&reference).unwrap();
            let r = testing::compare(&out, reference.iter().map(|x| x.to_f64()));
            println!(
                "{} {m}×{n}×{k} step {i}: vs cuBLAS {:.2e}, {} non-finite",
                kernel.name, r.rel_error, r.non_finite
            );
            if !r.passed() {
                failures.push(format!("M = {m}, step {i}: {r:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
}

#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_tensor_ceilings_run_their_mmas() {
    let gemm = testing::open_family(Family::Hopper);
    let stream = gemm.context().default_stream();
    let mut ceiling = testing::Ceiling::new(&gemm, &stream).unwrap();
    assert!(matches!(ceiling.run(&gemm, &stream, "ceiling", (0, 1024, 1024)), Err(hgemm::Error::InvalidShape(_))));
    assert!(matches!(
        ceiling.run(&gemm, &stream, "ceiling_none", (1024, 1024, 1024)),
        Err(hgemm::Error::UnknownKernel(_))
    ));
    let sms = gemm.device().sms;
    let mut too_many = testing::Ceiling::new(&gemm, &stream).unwrap().on_ctas(sms + 1);
    assert!(matches!(
        too_many.run(&gemm, &stream, "ceiling", (1024, 1024, 1024)),
        Err(hgemm::Error::Unsupported { .. })
    ));
    // Over fewer SMs, only their threads write.
    let mut fewer = testing::Ceiling::new(&gemm, &stream).unwrap().on_ctas(sms / 2);
    fewer.run(&gemm, &stream, "ceiling", (1000, 1024, 520)).unwrap();
    let sink = fewer.take_sink(&stream).unwrap();
    let written = (sms / 2 * hgemm_kernels::hopper::ceiling::CEILINGS[0].threads()) as usize;
    assert!(sink[..written].iter().all(|x| x.is_finite() && *x != 0.0) && sink[written..].iter().all(|x| *x == 0.0));
    for spec in hgemm_kernels::hopper::ceiling::CEILINGS {
        ceiling.run(&gemm, &stream, spec.name, (1000, 1024, 520)).unwrap();
        let sink = ceiling.take_sink(&stream).unwrap();
        let threads = gemm.device().sms as usize * spec.threads() as usize;
        // Every thread's last accumulator: a sum of products of random operands, so finite and
        // not 0 (the sink starts zeroed); no thread past the launch writes.
        assert!(sink[..threads].iter().all(|x| x.is_finite() && *x != 0.0), "{}: {:?}", spec.name, &sink[..8]);
        assert!(sink[threads..].iter().all(|x| *x == 0.0), "{}", spec.name);
    }
}

/// `Gemm::tune` times the candidates, keeps the fastest where it beats auto's pick, and the
/// handle's calls run it; a table saved as text loads back on the same device; a tuned choice
/// that is not auto's pick (forced through a table) computes what cuBLAS does.
#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_tuning_runs_the_fastest_and_it_matches_cublas() {
    use hgemm::{GemmOp, Layout, TuneOptions};
    let gemm = testing::open_family(Family::Hopper);
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream).unwrap();
    let seed = testing::test_seed();
    let opts = TuneOptions { samples: 3, sample_ms: 5.0, ..TuneOptions::default() };
    // A split schedule with close rivals, and a general call (C column-major, beta, a batch).
    let ops = [
        GemmOp::new(256, 22016, 4096),
        GemmOp::new(2000, 2000, 2000).c(Layout::ColMajor, 2000).beta(0.5).batched(
            2,
            2000 * 2000,
            2000 * 2000,
            2000 * 2000,
        ),
    ];
    let mut failures = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let t = gemm.tune_with(&stream, op, &opts).unwrap();
        let line: Vec<String> =
            t.timed.iter().map(|x| format!("{} {:.4} ms", x.choice.describe(&t.key), x.ms)).collect();
        println!(
            "{}: priced {}, chosen {}, gain {:.3}: {}",
            hgemm::tune::shape(&t.key),
            t.priced.describe(&t.key),
            t.chosen.describe(&t.key),
            t.gain(),
            line.join(", ")
        );
        assert!(t.timed.len() >= 2, "{line:?}: one candidate only");
        assert!(t.timed.iter().all(|x| x.ms.is_finite() && x.ms > 0.0), "{line:?}");
        assert!(t.timed.windows(2).all(|w| w[0].ms <= w[1].ms), "{line:?}: not fastest first");
        assert!(t.ms(&t.priced).is_some(), "auto's pick not timed");
        assert_eq!(gemm.choice(op), Some(t.chosen));
        assert!(t.chosen == t.priced || t.gain() >= opts.min_gain, "{line:?}");
        let r = testing::check_op(&gemm, &blas, &stream, op, 0, seed + i as u64).unwrap();
        if !r.passed() {
            failures.push(format!("{}: {r:?}", t.chosen.kernel.name));
        }
    }
    let text = gemm.tuning().to_text();
    assert_eq!(gemm.tuning().len(), 2);
    gemm.clear_tuning();
    assert_eq!(gemm.choice(&ops[0]), gemm.priced(&ops[0]));
    assert_eq!(gemm.load_tuning(&text).unwrap(), 2);
    assert_eq!(gemm.tuning().to_text(), text);

    // Every other entry that computes 256×22016×4096, forced through a table, runs and matches.
    let d = gemm.device();
    let priced = gemm.priced(&ops[0]).unwrap();
    for kernel in gemm
        .kernels()
        .filter(|k| k.general && k.name != priced.kernel.name && hgemm::plan::supports(k, &ops[0]).is_ok())
    {
        for split in [true, false] {
            let table = format!(
                "hgemm tuning 1\ndevice hopper {} {}\n256 22016 4096 1 row col row plain stream-k {} {}\n",
                d.sms,
                d.name,
                kernel.name,
                if split { "split" } else { "whole" }
            );
            gemm.clear_tuning();
            gemm.load_tuning(&table).unwrap();
            assert_eq!(gemm.choose(&ops[0]).map(|k| k.name), Some(kernel.name));
            let r = testing::check_op(&gemm, &blas, &stream, &ops[0], 0, seed ^ 7).unwrap();
            println!(
                "{} {}: vs cuBLAS {:.2e}",
                kernel.name,
                if split { "split" } else { "whole" },
                r.vs_cublas.rel_error
            );
            if !r.passed() {
                failures.push(format!("{} forced: {r:?}", kernel.name));
            }
        }
    }

    // A tuned entry that writes C column-major (not auto's pick, so that its branch of
    // `tune::pick` decides) is chosen where C starts on a 16-byte chunk and gives way to an entry
    // writing C row-major where it does not; both calls match cuBLAS.
    let cm = GemmOp::new(160, 8192, 512);
    let forced = "hopper_v7_trim_kk_cm";
    assert_ne!(gemm.priced(&cm).map(|c| c.kernel.name), Some(forced));
    gemm.clear_tuning();
    gemm.load_tuning(&format!(
        "hgemm tuning 1\ndevice hopper {} {}\n160 8192 512 1 row col row plain stream-k {forced} whole\n",
        d.sms, d.name
    ))
    .unwrap();
    for (c_offset, on_chunk) in [(8, true), (4, false)] {
        // C's buffer starts 256-byte aligned: the view's address modulo 16 is its offset's.
        let ran = gemm.choice_at(&cm, 2 * c_offset as u64).unwrap().kernel;
        if on_chunk {
            assert_eq!(ran.name, forced);
        } else {
            assert!(!ran.c_col_major, "{} writes C column-major", ran.name);
        }
        let r = testing::check_op(&gemm, &blas, &stream, &cm, c_offset, seed ^ 11).unwrap();
        println!(
            "160x8192x512 tuned {forced}, C from element {c_offset}: {}, vs cuBLAS {:.2e}",
            ran.name, r.vs_cublas.rel_error
        );
        if !r.passed() {
            failures.push(format!("{} for C from element {c_offset}: {r:?}", ran.name));
        }
    }
    gemm.clear_tuning();
    assert!(matches!(gemm.tune(&stream, &GemmOp::new(0, 64, 64)), Err(hgemm::Error::InvalidShape(_))));
    assert!(matches!(gemm.load_tuning("hgemm tuning 1\ndevice hopper 7 Some GPU\n"), Err(hgemm::Error::Tuning(_))));
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
}

#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_sm_budgets_hold_the_grid_and_keep_the_result() {
    use half::bf16;
    use hgemm::{GemmOp, Prepared};
    let gemm = testing::open_family(Family::Hopper);
    // A stream of its own for the capture below, with cudarc's event tracking off: a captured
    // call may not wait on events recorded outside the capture. Everything runs on this stream.
    let stream = gemm.context().new_stream().unwrap();
    unsafe { gemm.context().disable_event_tracking() };
    let blas = Cublas::new(&stream).unwrap();
    let seed = testing::test_seed();
    let sms = gemm.device().sms;
    let mut failures = Vec::new();
    // Whole waves, the last wave split by K, and a decode-like call.
    for (m, n, k) in [(4096, 4096, 4096), (520, 776, 4096), (128, 8192, 8192)] {
        let base = GemmOp::new(m, n, k);
        let a = testing::random(&gemm, &stream, m * k, seed, 1.0).unwrap();
        let b = testing::random(&gemm, &stream, n * k, seed ^ 1, 1.0 / (k as f32).sqrt()).unwrap();
        let mut reference = unsafe { stream.alloc::<bf16>(m * n) }.unwrap();
        blas.matmul(&a, &b, &mut reference, m, n, k).unwrap();
        let reference: Vec<f64> = stream.clone_dtoh(&reference).unwrap().iter().map(|x| x.to_f64()).collect();
        let mut check = |what: String, c: &cudarc::driver::CudaSlice<bf16>| {
            let r = testing::compare(&stream.clone_dtoh(c).unwrap(), reference.iter().copied());
            println!("{m}×{n}×{k} {what}: vs cuBLAS {:.2e}, {} non-finite", r.rel_error, r.non_finite);
            if !r.passed() {
                failures.push(format!("{m}×{n}×{k} {what}: {r:?}"));
            }
        };
        for budget in [sms, 100, 66, 17, 2] {
            let op = base.max_sms(budget);
            let mut c = unsafe { stream.alloc::<bf16>(m * n) }.unwrap();
            testing::fill(&gemm, &stream, &mut c, testing::POISON).unwrap();
            let Prepared::Launch { kernel, shape, .. } = gemm.prepare(None, &stream, &op, &a, &b, &mut c).unwrap()
            else {
                panic!("{m}×{n}×{k}: no launch");
            };
            assert!(
                shape.grid * shape.grid_y <= budget,
                "{}: {} CTAs on a budget of {budget}",
                kernel.name,
                shape.grid
            );
            gemm.gemm(&stream, &op, &a, &b, &mut c).unwrap();
            check(format!("{} on {budget} SMs ({} CTAs)", kernel.name, shape.grid), &c);
        }
        // The handle's budget, on calls captured into a graph.
        gemm.set_max_sms(Some(66)).unwrap();
        let mut c = unsafe { stream.alloc::<bf16>(m * n) }.unwrap();
        testing::fill(&gemm, &stream, &mut c, testing::POISON).unwrap();
        stream.synchronize().unwrap();
        stream.begin_capture(cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL).unwrap();
        gemm.gemm(&stream, &base, &a, &b, &mut c).unwrap();
        let graph = stream.end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0)).unwrap().expect("a graph");
        graph.launch().unwrap();
        check("captured, the handle's budget of 66".into(), &c);
        gemm.set_max_sms(None).unwrap();
    }
    // An entry with one CTA per tile cannot keep a budget, and says so before launching.
    let v0 = gemm.kernel(0).unwrap();
    let (a, b) = (stream.alloc_zeros::<bf16>(256 * 256).unwrap(), stream.alloc_zeros::<bf16>(256 * 256).unwrap());
    let mut c = stream.alloc_zeros::<bf16>(256 * 256).unwrap();
    let r = gemm.gemm_with(v0, &stream, &GemmOp::new(256, 256, 256).max_sms(66), &a, &b, &mut c);
    assert!(matches!(r, Err(hgemm::Error::SmBudget { .. })), "{r:?}");
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
}

#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn hopper_calibration_measures_a_model_auto_can_price_with() {
    let mut gemm = testing::open_family(Family::Hopper);
    let stream = gemm.context().default_stream();
    let opts = hgemm::CalibrateOptions { samples: 1, sample_ms: 10.0 };
    let cal = gemm.calibrate(&stream, &opts).unwrap();
    let m = &cal.model;
    println!("{m:?}");
    // The 128×256 tile is the unit; a K block of its wave takes 0.5–1.5 µs on any Hopper card
    // (0.77 at about 720 TFLOP/s), and DRAM streams 1–5 TB/s (HBM3 and HBM3e).
    let wide = gemm.kernels().find(|k| k.name == "hopper_v7").unwrap();
    assert!((m.rate(wide).unwrap() - 1.0).abs() < 1e-9);
    assert!((0.5..1.5).contains(&m.wide_kb_us), "{}", m.wide_kb_us);
    assert!((1e6..5e6).contains(&m.dram_stream), "{}", m.dram_stream);
    assert!(m.cta_stream > 1e3 && m.cta_stream < m.dram_stream, "{}", m.cta_stream);
    assert!(m.rates.iter().all(|r| r.rate > 0.2 && r.rate < 1.2), "{:?}", m.rates);
    // The handle takes it, and prices every call of the sweep with it.
    gemm.set_model(cal.model.clone()).unwrap();
    assert_eq!(gemm.model(), &cal.model);
    for (m, n, k) in [(8192, 8192, 8192), (16, 4096, 4096), (1024, 2048, 4096)] {
        assert!(gemm.choose(&hgemm::GemmOp::new(m, n, k)).is_some());
    }
}
