//! GPU tests of the fused epilogue (bias, activations, gated units): every Hopper v7 entry and
//! `auto`, against the f64 CPU reference on small shapes and cuBLAS's f32 products with the same
//! epilogue on every shape; the baselines' separate kernels against the host; refusals. They
//! need an H100/H200, so they are ignored in the normal suite and run with `--ignored`.

use half::bf16;
use hgemm::{Activation, BiasType, Family, GemmOp, Layout};
use hgemm_testing::{self as testing, Cublas};

/// Run every case, print each result, and fail with the list of failures.
fn run_cases<'a>(cases: impl Iterator<Item = (String, hgemm_testing::Result<testing::FusedCheck>)> + 'a) {
    let mut failures = Vec::new();
    let mut ran = 0;
    for (what, r) in cases {
        ran += 1;
        match r {
            Ok(r) => {
                println!(
                    "{what} [{}]: vs cuBLAS {:.2e} ({} non-finite), vs CPU {}, outside {}",
                    r.kernel,
                    r.vs_cublas.rel_error,
                    r.vs_cublas.non_finite,
                    r.vs_cpu.map_or("-".into(), |c| format!("{:.2e} ({} non-finite)", c.rel_error, c.non_finite)),
                    r.outside
                );
                if !r.passed() {
                    failures.push(format!("{what}: {r:?}"));
                }
            }
            Err(e) => failures.push(format!("{what}: {e}")),
        }
    }
    assert!(ran > 0, "no case ran");
    assert!(
        failures.is_empty(),
        "seed {}: {} of {ran} failed:\n{}",
        testing::test_seed(),
        failures.len(),
        failures.join("\n")
    );
}

#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn every_v7_entry_fuses_bias_activations_and_gating() {
    let gemm = testing::open_family(Family::Hopper);
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream).unwrap();
    let seed = testing::test_seed();
    let entries: Vec<_> = gemm.kernels().filter(|k| hgemm::plan::fuses_epilogue(k)).collect();
    assert!(entries.len() > 1, "Hopper v7 has several entries");
    let mut cases = Vec::new();
    for kernel in entries {
        for (i, case) in testing::fused_entry_cases(kernel).into_iter().enumerate() {
            match hgemm::plan::supports(kernel, &case.op) {
                Ok(()) => cases.push((kernel, case, seed + i as u64)),
                // An entry may refuse a shape (one column of tiles, say), never the epilogue.
                Err(e) => assert!(!e.to_string().contains("fused epilogue"), "{}: {}: {e}", kernel.name, case.what),
            }
        }
    }
    run_cases(cases.into_iter().map(|(kernel, case, seed)| {
        let r = testing::check_fused(&gemm, &blas, &stream, &case.op, Some(kernel), seed);
        (format!("{} {}", kernel.name, case.what), r)
    }));
}

#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn auto_fuses_general_calls() {
    let gemm = testing::open_family(Family::Hopper);
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream).unwrap();
    let seed = testing::test_seed();
    run_cases(testing::fused_general_cases().into_iter().enumerate().map(|(i, case)| {
        let r = testing::check_fused(&gemm, &blas, &stream, &case.op, None, seed + i as u64);
        (case.what, r)
    }));
}

#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn llama_mlp_layers_match_cublas() {
    let gemm = testing::open_family(Family::Hopper);
    let stream = gemm.context().default_stream();
    let blas = Cublas::new(&stream).unwrap();
    let seed = testing::test_seed();
    let mut cases = Vec::new();
    // Llama-3 8B (hidden 4096, intermediate 14336) and 70B (8192, 28672), at 512 and 4096 tokens.
    for (tokens, d, i) in [(512, 4096, 14336), (4096, 4096, 14336), (512, 8192, 28672)] {
        cases.push((
            format!("{tokens} tokens, {d}→2·{i} SwiGLU"),
            GemmOp::new(tokens, 2 * i, d).activation(Activation::Silu).gated(),
        ));
        cases.push((
            format!("{tokens} tokens, {d}→{i} bf16 bias + GELU tanh"),
            GemmOp::new(tokens, i, d).bias(BiasType::Bf16).activation(Activation::GeluTanh),
        ));
        cases.push((
            format!("{tokens} tokens, {i}→{d} down, residual (beta 1), f32 bias + ReLU"),
            GemmOp::new(tokens, d, i).b(Layout::RowMajor, d).bias(BiasType::F32).activation(Activation::Relu).beta(1.0),
        ));
    }
    run_cases(
        cases
            .into_iter()
            .enumerate()
            .map(|(n, (what, op))| (what, testing::check_fused(&gemm, &blas, &stream, &op, None, seed + n as u64))),
    );
}

/// The bench's baselines: cuBLAS followed by `hgemm_bias_act_bf16` or `hgemm_glu_bf16` must
/// compute what the fused calls are measured against.
#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn separate_epilogue_kernels_match_the_host() {
    let gemm = testing::open_family(Family::Hopper);
    let stream = gemm.context().default_stream();
    let seed = testing::test_seed();
    let (rows, cols, ld) = (300, 520, 536);
    let mut failures = Vec::new();
    for (act, name) in testing::ACTIVATIONS {
        for ty in [BiasType::Bf16, BiasType::F32] {
            let mut y = testing::random(&gemm, &stream, rows * ld, seed, 2.0).unwrap();
            let before = stream.clone_dtoh(&y).unwrap();
            let bias = testing::BiasBuffers::random(&stream, ty, cols, seed ^ 7).unwrap();
            match &bias {
                testing::BiasBuffers::Bf16(_, d) => gemm.bias_activation(&stream, &mut y, rows, cols, ld, d, act),
                testing::BiasBuffers::F32(_, d) => gemm.bias_activation(&stream, &mut y, rows, cols, ld, d, act),
            }
            .unwrap();
            let out = stream.clone_dtoh(&y).unwrap();
            let b = bias.values();
            let want: Vec<f64> = (0..rows * ld)
                .map(|e| {
                    let (r, c) = (e / ld, e % ld);
                    if c < cols {
                        testing::activation_f64(act, before[r * ld + c].to_f64() + b[c])
                    } else {
                        before[e].to_f64()
                    }
                })
                .collect();
            let cmp = testing::compare(&out, want);
            println!("bias {ty:?} + {name}: {cmp:?}");
            if !cmp.passed() {
                failures.push(format!("bias {ty:?} + {name}: {cmp:?}"));
            }
        }
        let (ld_x, ld_y) = (2 * cols + 8, cols + 8);
        let x = testing::random(&gemm, &stream, rows * ld_x, seed ^ 3, 2.0).unwrap();
        let mut y = testing::random(&gemm, &stream, rows * ld_y, seed ^ 4, 1.0).unwrap();
        let (hx, hy) = (stream.clone_dtoh(&x).unwrap(), stream.clone_dtoh(&y).unwrap());
        gemm.glu(&stream, &x, rows, cols, ld_x, &mut y, ld_y, act).unwrap();
        let out = stream.clone_dtoh(&y).unwrap();
        let want: Vec<f64> = (0..rows * ld_y)
            .map(|e| {
                let (r, c) = (e / ld_y, e % ld_y);
                if c < cols {
                    testing::activation_f64(act, hx[r * ld_x + c].to_f64()) * hx[r * ld_x + c + cols].to_f64()
                } else {
                    hy[e].to_f64()
                }
            })
            .collect();
        let cmp = testing::compare(&out, want);
        println!("GLU {name}: {cmp:?}");
        if !cmp.passed() {
            failures.push(format!("GLU {name}: {cmp:?}"));
        }
    }
    assert!(failures.is_empty(), "seed {seed}:\n{}", failures.join("\n"));
}

/// Bad fused calls are refused before anything reaches the GPU: C comes back bit for bit.
#[test]
#[ignore = "needs an H100/H200 (compute capability 9.0): run on the GPU machine with --ignored"]
fn refused_fused_calls_leave_c_untouched() {
    let gemm = testing::open_family(Family::Hopper);
    let stream = gemm.context().default_stream();
    let (m, n, k) = (128, 256, 64);
    let a = testing::random(&gemm, &stream, m * k, 1, 1.0).unwrap();
    let b = testing::random(&gemm, &stream, n * k, 2, 1.0).unwrap();
    let mut c = testing::random(&gemm, &stream, m * n, 3, 1.0).unwrap();
    let before = stream.clone_dtoh(&c).unwrap();
    let bias16 = stream.alloc_zeros::<bf16>(n).unwrap();
    let bias32 = stream.alloc_zeros::<f32>(n).unwrap();
    let op = GemmOp::new(m, n, k).bias(BiasType::F32).activation(Activation::Relu);
    let errors = [
        gemm.gemm(&stream, &op, &a, &b, &mut c).unwrap_err(),
        gemm.gemm_bias(&stream, &op, &a, &b, &bias16, &mut c).unwrap_err(),
        gemm.gemm_bias(&stream, &op, &a, &b, &bias32.slice(1..), &mut c).unwrap_err(),
        gemm.gemm_bias(&stream, &GemmOp::new(m, n, k), &a, &b, &bias32, &mut c).unwrap_err(),
        gemm.gemm(&stream, &GemmOp::new(m, 264, k).gated(), &a, &b, &mut c).unwrap_err(),
        gemm.gemm(&stream, &GemmOp::new(m, n, k).gated().c(Layout::RowMajor, 100), &a, &b, &mut c).unwrap_err(),
        gemm.gemm_with(
            &hgemm_kernels::hopper::v6::SPEC,
            &stream,
            &GemmOp::new(m, n, k).activation(Activation::Silu),
            &a,
            &b,
            &mut c,
        )
        .unwrap_err(),
        // Misaligned: a view of the bias starting 4 bytes in.
        gemm.gemm_bias(
            &stream,
            &op.bias(BiasType::F32),
            &a,
            &b,
            &stream.alloc_zeros::<f32>(n + 1).unwrap().slice(1..),
            &mut c,
        )
        .unwrap_err(),
    ];
    for e in &errors {
        println!("{e}");
    }
    assert!(matches!(errors[0], hgemm::Error::Bias { op: Some(BiasType::F32), buffer: None }));
    assert!(matches!(errors[1], hgemm::Error::Bias { op: Some(BiasType::F32), buffer: Some(BiasType::Bf16) }));
    assert!(matches!(errors[2], hgemm::Error::BufferTooSmall { operand: "bias", .. }));
    assert!(matches!(errors[3], hgemm::Error::Bias { op: None, buffer: Some(BiasType::F32) }));
    assert!(matches!(&errors[4], hgemm::Error::InvalidShape(s) if s.contains("multiple of 16")));
    assert!(matches!(errors[5], hgemm::Error::LeadingDimension { operand: "C", .. }));
    assert!(matches!(errors[6], hgemm::Error::Unsupported { .. }));
    assert!(matches!(errors[7], hgemm::Error::Misaligned { operand: "bias", .. }));
    assert_eq!(stream.clone_dtoh(&c).unwrap(), before, "a refused call wrote C");
}
