//! The general calls through `auto` (storage orders, alpha and beta, padding, batches, views of
//! C), each checked against cuBLAS over C's whole buffer.

use crate::reference::{Comparison, compare, cpu_reference_general};
use crate::verify::CPU_CHECK_MAX_MACS;
use crate::{Cublas, GUARD_LEN, Result, drv, lengths, random};
use cudarc::driver::{CudaSlice, CudaStream};
use half::bf16;
use hgemm::{Gemm, GemmOp, Layout};
use std::sync::Arc;

/// Run `op` through [`Gemm::gemm`] (the automatic choice) on fresh random A, B and C (C matters
/// when beta ≠ 0; padding between rows and batch entries must come back untouched), and the same
/// through cuBLAS, and compare the whole C buffers. C is a view of its buffer from element
/// `c_offset` (the buffer starts 256-byte aligned) as long as the call needs, and the elements
/// before and after it must come back untouched too.
pub fn check_op(
    gemm: &Gemm,
    blas: &Cublas,
    stream: &Arc<CudaStream>,
    op: &GemmOp,
    c_offset: usize,
    seed: u64,
) -> Result<OpCheck> {
    let (la, lb, lc) = lengths(op);
    let a = random(gemm, stream, la, seed, 1.0)?;
    let b = random(gemm, stream, lb, seed ^ 0x5eed, 1.0 / (op.k.max(1) as f32).sqrt())?;
    let mut c = random(gemm, stream, c_offset + lc + GUARD_LEN, seed ^ 0xc0de, 1.0)?;
    let view = c_offset..c_offset + lc;
    let mut reference = stream.clone_dtod(&c).map_err(drv("cuMemcpyDtoD"))?;
    let small = op.m * op.n * op.k * op.batch <= CPU_CHECK_MAX_MACS;
    let host = |buf: &CudaSlice<bf16>| stream.clone_dtoh(buf).map_err(drv("cuMemcpyDtoH"));
    let before_c = host(&c)?;
    let before = if small { Some((host(&a)?, host(&b)?)) } else { None };
    gemm.gemm(stream, op, &a, &b, &mut c.slice_mut(view.clone()))?;
    blas.gemm(op, &a, &b, &mut reference.slice_mut(view.clone()))?;
    let out = host(&c)?;
    let reference = host(&reference)?;
    let vs_cpu = match before {
        Some((ha, hb)) => {
            let computed = cpu_reference_general(op, &ha, &hb, &before_c[view.clone()])?;
            let untouched = |r: std::ops::Range<usize>| before_c[r].iter().map(|x| x.to_f64());
            Some(compare(&out, untouched(0..c_offset).chain(computed).chain(untouched(view.end..before_c.len()))))
        }
        None => None,
    };
    // Bit for bit, not within a tolerance: one element written past a row's end must fail.
    let mut output = vec![false; before_c.len()];
    for z in 0..op.batch {
        for (i, j) in (0..op.m).flat_map(|i| (0..op.n).map(move |j| (i, j))) {
            let (row, col) = if op.c_layout == Layout::RowMajor { (i, j) } else { (j, i) };
            output[c_offset + z * op.stride_c + row * op.ldc + col] = true;
        }
    }
    let outside = (0..out.len()).filter(|&i| !output[i] && out[i].to_bits() != before_c[i].to_bits()).count();
    Ok(OpCheck { vs_cublas: compare(&out, reference.iter().map(|x| x.to_f64())), vs_cpu, outside })
}

/// What [`check_op`] found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpCheck {
    /// Against cuBLAS, over the whole buffer.
    pub vs_cublas: Comparison,
    /// Against the f64 CPU reference, for calls of up to [`CPU_CHECK_MAX_MACS`].
    pub vs_cpu: Option<Comparison>,
    /// Elements of C's buffer outside the output (before the view, between rows and between
    /// batch entries) that the call changed.
    pub outside: usize,
}

impl OpCheck {
    /// Every comparison passed and nothing outside the output changed.
    pub fn passed(&self) -> bool {
        self.vs_cublas.passed() && self.vs_cpu.is_none_or(|c| c.passed()) && self.outside == 0
    }
}

/// One call of [`general_cases`]: what it checks, the call, and where C starts in its buffer
/// ([`check_op`]'s `c_offset`).
pub struct GeneralCase {
    /// The case in words.
    pub what: String,
    /// The call.
    pub op: GemmOp,
    /// Elements of C's buffer before the view the call writes.
    pub c_offset: usize,
}

/// The general calls the library must get right: every storage order of A, B and C, alpha and
/// beta with C pre-filled, leading dimensions wider than the rows, strided batches, K = 0, and
/// shapes that take each tile shape.
pub fn general_cases() -> Vec<GeneralCase> {
    let mut cases = Vec::new();
    let orders = [Layout::RowMajor, Layout::ColMajor];
    for &(m, n, k) in &[(300, 520, 136), (96, 1000, 264), (1024, 2048, 512)] {
        for al in orders {
            for bl in orders {
                for cl in orders {
                    let ld = |l: Layout, rows: usize, cols: usize| if l == Layout::RowMajor { cols } else { rows };
                    // Leading dimensions padded by 8 or 16 elements past the minimum, rounded to 8.
                    let pad = |x: usize, p: usize| (x + p).div_ceil(8) * 8;
                    let op = GemmOp::new(m, n, k)
                        .a(al, pad(ld(al, m, k), 8))
                        .b(bl, pad(ld(bl, k, n), 16))
                        .c(cl, pad(ld(cl, m, n), 8))
                        .alpha(0.75)
                        .beta(-0.5);
                    cases.push((format!("{m}x{n}x{k} A {al:?} B {bl:?} C {cl:?} padded, alpha .75 beta -.5"), op));
                }
            }
            // Dense: every leading dimension is the row length itself (M rounded to 8 for TMA).
            let m8 = m.div_ceil(8) * 8;
            let dense = GemmOp::new(m8, n, k).a(al, if al == Layout::RowMajor { k } else { m8 });
            cases.push((format!("{m8}x{n}x{k} A {al:?}, dense, alpha 1 beta 0"), dense));
        }
    }
    let b = GemmOp::new(200, 264, 72).b(Layout::RowMajor, 264);
    let (la, lb, lc) = lengths(&b);
    cases.push(("200x264x72 batch of 3, strided with gaps".into(), b.beta(1.0).batched(3, la + 64, lb + 8, lc + 256)));
    cases.push((
        "8192x8192x8192 batch of 1 through the general path, beta 1".into(),
        GemmOp::new(8192, 8192, 8192).beta(1.0),
    ));
    cases.push(("256x512x0 (K = 0): C = beta·C".into(), GemmOp::new(256, 512, 0).beta(0.5)));
    // Several tiles per cluster, an odd number on some: K = 0 must not touch the operand stages.
    cases
        .push(("2304x4096x0 (K = 0), tiles over every cluster, beta 1.5".into(), GemmOp::new(2304, 4096, 0).beta(1.5)));
    // Stream-K: tiles split across workers in each regime (see `StreamK`).
    cases.push((
        "520x776x4096 C col-major, alpha .75 beta -.5: every tile split by K".into(),
        GemmOp::new(520, 776, 4096).c(Layout::ColMajor, 520).alpha(0.75).beta(-0.5),
    ));
    let b = GemmOp::new(200, 264, 1024).b(Layout::RowMajor, 264).beta(1.0);
    let (la, lb, lc) = lengths(&b);
    cases.push((
        "200x264x1024 B row-major, batch of 40, beta 1: split tiles across batch entries".into(),
        b.batched(40, la, lb, lc),
    ));
    cases.push((
        "2304x2304x4096 A col-major: a wave and a quarter, split".into(),
        GemmOp::new(2304, 2304, 4096).a(Layout::ColMajor, 2304),
    ));
    // Rows of C that end inside a 16-byte chunk, which TMA would overwrite to its end.
    for n in [5, 300, 1001] {
        let ldc = (n + 8usize).div_ceil(8) * 8;
        cases.push((
            format!("130x{n}x64 C rows end mid-chunk (ldc {ldc}), beta 0"),
            GemmOp::new(130, n, 64).c(Layout::RowMajor, ldc),
        ));
        cases.push((
            format!("130x{n}x64 C rows end mid-chunk (ldc {ldc}), beta 1"),
            GemmOp::new(130, n, 64).c(Layout::RowMajor, ldc).beta(1.0),
        ));
    }
    let mut cases: Vec<GeneralCase> =
        cases.into_iter().map(|(what, op)| GeneralCase { what, op, c_offset: 0 }).collect();
    // C that TMA cannot write at all, whose every column the kernel's threads store: rows not
    // 16-byte multiples apart (bf16 by bf16 where they are an odd number of elements apart), a
    // batch stride that is not, or a view of C that starts mid-chunk.
    let mut unaligned = |what: String, op: GemmOp, c_offset: usize| cases.push(GeneralCase { what, op, c_offset });
    unaligned("300x1001x264 dense C (ldc 1001), beta 0".into(), GemmOp::new(300, 1001, 264), 0);
    unaligned(
        "300x1001x264 dense C (ldc 1001), alpha .75 beta -.5".into(),
        GemmOp::new(300, 1001, 264).alpha(0.75).beta(-0.5),
        0,
    );
    unaligned(
        "256x50257x1024 dense C: a vocabulary of 50257, held wide tiles".into(),
        GemmOp::new(256, 50257, 1024),
        0,
    );
    unaligned(
        "2304x2301x4096 dense C, beta 1: wide tiles split by K".into(),
        GemmOp::new(2304, 2301, 4096).beta(1.0),
        0,
    );
    unaligned(
        "301x520x136 C col-major, dense (ldc 301), beta 1".into(),
        GemmOp::new(301, 520, 136).c(Layout::ColMajor, 301).beta(1.0),
        0,
    );
    unaligned("256x301x0 (K = 0) dense C, beta .5".into(), GemmOp::new(256, 301, 0).beta(0.5), 0);
    let b = GemmOp::new(200, 264, 72).b(Layout::RowMajor, 264).beta(1.0);
    let (la, lb, lc) = lengths(&b);
    unaligned("200x264x72 batch of 3, C entries an odd number apart, beta 1".into(), b.batched(3, la, lb, lc + 3), 0);
    for (c_offset, what) in [(1, "not 4-byte aligned"), (2, "4-byte aligned")] {
        unaligned(
            format!("520x776x512 C from element {c_offset} of its buffer ({what}), beta 1"),
            GemmOp::new(520, 776, 512).beta(1.0),
            c_offset,
        );
    }
    // `auto` writes this C column-major where it starts on a chunk, and gives way where not.
    for c_offset in [8, 4] {
        unaligned(
            format!("160x8192x512 C from element {c_offset} of its buffer"),
            GemmOp::new(160, 8192, 512),
            c_offset,
        );
    }
    cases
}
