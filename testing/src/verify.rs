//! What `hgemm verify` and the GPU tests check for each kernel: fixed shapes against cuBLAS (and
//! the CPU on small ones), a guard band after C, and the calls the kernel must refuse.

use crate::reference::{Comparison, compare, cpu_reference_general};
use crate::{Cublas, GUARD, GUARD_LEN, POISON, Result, drv, fill, lengths, op_for, random};
use cudarc::driver::{CudaSlice, CudaStream};
use half::bf16;
use hgemm::{Error, Gemm, GemmOp, KernelSpec};
use std::sync::Arc;

/// The outcome of one checked case.
#[derive(Clone, Debug)]
pub struct Case {
    /// The kernel checked.
    pub kernel: &'static str,
    /// The shape.
    pub m: usize,
    /// The shape.
    pub n: usize,
    /// The shape.
    pub k: usize,
    /// Against cuBLAS.
    pub vs_cublas: Comparison,
    /// Against the f64 CPU reference (small shapes only).
    pub vs_cpu: Option<Comparison>,
    /// Guard elements after C that were overwritten.
    pub guard_damage: usize,
}

impl Case {
    /// Every comparison passed and the guard band is intact.
    pub fn passed(&self) -> bool {
        self.vs_cublas.passed() && self.vs_cpu.is_none_or(|c| c.passed()) && self.guard_damage == 0
    }
}

/// Shapes up to this many multiply-adds are also checked against the CPU reference.
pub const CPU_CHECK_MAX_MACS: usize = 1 << 27;

/// Run `kernel` once on fresh random inputs and check it against cuBLAS (and the CPU on small
/// shapes). `seed` picks the inputs.
pub fn check(
    gemm: &Gemm,
    blas: &Cublas,
    stream: &Arc<CudaStream>,
    kernel: &KernelSpec,
    (m, n, k): (usize, usize, usize),
    seed: u64,
) -> Result<Case> {
    let op = op_for(kernel, m, n, k);
    let (la, lb, _) = lengths(&op);
    let a = random(gemm, stream, la, seed, 1.0)?;
    let b = random(gemm, stream, lb, seed ^ 0x5eed, 1.0 / (k.max(1) as f32).sqrt())?;
    let mut c = unsafe { stream.alloc::<bf16>(m * n + GUARD_LEN) }.map_err(drv("cuMemAlloc"))?;
    fill(gemm, stream, &mut c, GUARD)?;
    fill(gemm, stream, &mut c.slice_mut(..m * n), POISON)?;
    gemm.gemm_with(kernel, stream, &op, &a, &b, &mut c.slice_mut(..m * n))?;
    let out = stream.clone_dtoh(&c).map_err(drv("cuMemcpyDtoH"))?;

    let mut reference = unsafe { stream.alloc::<bf16>(m * n) }.map_err(drv("cuMemAlloc"))?;
    blas.gemm(&op, &a, &b, &mut reference)?;
    let reference = stream.clone_dtoh(&reference).map_err(drv("cuMemcpyDtoH"))?;

    let vs_cublas = compare(&out[..m * n], reference.iter().map(|x| x.to_f64()));
    let vs_cpu = if m * n * k <= CPU_CHECK_MAX_MACS {
        let ha = stream.clone_dtoh(&a).map_err(drv("cuMemcpyDtoH"))?;
        let hb = stream.clone_dtoh(&b).map_err(drv("cuMemcpyDtoH"))?;
        // A dense C with beta = 0: its old content is not read.
        Some(compare(&out[..m * n], cpu_reference_general(&op, &ha, &hb, &vec![bf16::ZERO; m * n])?))
    } else {
        None
    };
    let guard_damage = out[m * n..].iter().filter(|x| x.to_bits() != GUARD).count();
    Ok(Case { kernel: kernel.name, m, n, k, vs_cublas, vs_cpu, guard_damage })
}

/// A call that must be refused with a typed error, leaving C as it was.
#[derive(Clone, Debug)]
pub struct Rejection {
    /// The call and the error it got.
    pub what: String,
    /// Refused with the expected error, and C untouched.
    pub passed: bool,
}

/// Calls `kernel` cannot take: each must return the expected [`Error`] and write nothing.
pub fn check_rejections(gemm: &Gemm, stream: &Arc<CudaStream>, kernel: &KernelSpec) -> Result<Vec<Rejection>> {
    // A call the kernel takes, but for the one thing wrong with each case.
    let t = kernel.tile_n as usize;
    let (m, n, k) = match (kernel.single_tile_column(), kernel.c_col_major) {
        (false, _) => (256, 256, 128),
        (true, false) => (256, t, 128),
        (true, true) => (t, 256, 128),
    };
    // Buffers long enough for every case, the one 8 rows or columns larger included.
    let (la, lb, lc) = lengths(&op_for(kernel, m + 8, n + 8, k));
    let a = random(gemm, stream, la + 8, 1, 1.0)?;
    let b = random(gemm, stream, lb, 2, 1.0)?;
    let mut c = unsafe { stream.alloc::<bf16>(lc) }.map_err(drv("cuMemAlloc"))?;
    let mut out = Vec::new();
    let mut expect = |what: &str,
                      c: &mut CudaSlice<bf16>,
                      call: &dyn Fn(&mut CudaSlice<bf16>) -> hgemm::Result<()>,
                      ok: &dyn Fn(&Error) -> bool|
     -> Result<()> {
        fill(gemm, stream, c, GUARD)?;
        let r = call(c);
        let untouched = stream.clone_dtoh(c).map_err(drv("cuMemcpyDtoH"))?.iter().all(|x| x.to_bits() == GUARD);
        let passed = matches!(&r, Err(e) if ok(e)) && untouched;
        out.push(Rejection {
            what: format!("{what}: {}", r.err().map(|e| e.to_string()).unwrap_or_else(|| "accepted".into())),
            passed,
        });
        Ok(())
    };
    let run = |op: GemmOp, a: &cudarc::driver::CudaView<bf16>, c: &mut CudaSlice<bf16>| {
        gemm.gemm_with(kernel, stream, &op, a, &b, c)
    };
    expect("K not a multiple of 8", &mut c, &|c| run(op_for(kernel, m, n, 100), &a.slice(..), c), &|e| {
        matches!(e, Error::InvalidShape(_))
    })?;
    expect(
        "C too short",
        &mut c,
        &|c| gemm.gemm_with(kernel, stream, &op_for(kernel, m, n, k), &a, &b, &mut c.slice_mut(..m * n - 1)),
        &|e| matches!(e, Error::BufferTooSmall { operand: "C", .. }),
    )?;
    expect("A misaligned", &mut c, &|c| run(op_for(kernel, m, n, k), &a.slice(1..), c), &|e| {
        matches!(e, Error::Misaligned { operand: "A", .. })
    })?;
    // A dense C with N odd, which TMA cannot write: the entries that store any C take it (their
    // sweeps and `general_cases` check them on such a C), the rest refuse it.
    if kernel.c_box.is_some() && !kernel.stores_any_c() {
        expect("N odd (TMA store)", &mut c, &|c| run(op_for(kernel, m, n - 1, k), &a.slice(..), c), &|e| {
            matches!(e, Error::Unsupported { .. })
        })?;
    }
    if kernel.single_tile_column() {
        let (m2, n2) = if kernel.c_col_major { (m + 8, n) } else { (m, n + 8) };
        expect("two columns of tiles", &mut c, &|c| run(op_for(kernel, m2, n2, k), &a.slice(..), c), &|e| {
            matches!(e, Error::Unsupported { .. })
        })?;
    }
    // beta ≠ 0: a ladder kernel takes none, and a tile whose last staging box is shifted takes it
    // in one column only (256 is two columns of its tiles).
    if !kernel.general || kernel.shifted_last_box() {
        let what = if kernel.general { "two columns of tiles, beta != 0" } else { "beta != 0 on a ladder kernel" };
        expect(what, &mut c, &|c| run(op_for(kernel, m, n, k).beta(1.0), &a.slice(..), c), &|e| {
            matches!(e, Error::Unsupported { .. })
        })?;
    }
    Ok(out)
}

/// Shapes every kernel is verified on: exact tiles, partial tiles in M, N and K, tiny and large.
/// On the stream-K kernels, 4160×4104×520 and 8192³ split their last waves and 520×776×4096
/// splits every tile's K blocks across several workers.
pub const VERIFY_SHAPES: &[(usize, usize, usize)] = &[
    (128, 256, 64),
    (1, 8, 8),
    (129, 264, 72),
    (200, 304, 136),
    (1000, 1000, 1000),
    (2048, 2048, 2048),
    (4160, 4104, 520),
    (520, 776, 4096),
    (8192, 8192, 8192),
];

/// [`VERIFY_SHAPES`] for `kernel`. An entry that takes one column of tiles only
/// ([`KernelSpec::single_tile_column`]) gets each shape with the side its tiles' columns cover (N,
/// or M for an entry that writes C column-major) replaced by a whole or partial column: N stays a
/// multiple of 8, as a dense C needs for TMA; M, which a column-major entry takes as it comes, need
/// not.
pub fn verify_shapes(kernel: &KernelSpec) -> Vec<(usize, usize, usize)> {
    if !kernel.single_tile_column() {
        return VERIFY_SHAPES.to_vec();
    }
    let t = kernel.tile_n as usize;
    // `t - d % t`: `t - d` where the tile is wider than `d` (160 and 224), folded into the
    // column for the narrow tiles (16 and 32).
    let cut = |d: usize| t - d % t;
    let (ns, ms) =
        ([t, 8, cut(24), cut(8), t, cut(16), t, cut(24), t], [t, 1, cut(31), cut(3), t, cut(16), t, cut(29), t]);
    VERIFY_SHAPES
        .iter()
        .enumerate()
        .map(|(i, &(m, n, k))| if kernel.c_col_major { (ms[i], n, k) } else { (m, ns[i], k) })
        .collect()
}

/// Odd N: rows of C start at odd elements. Direct-store epilogues and the entries that store any C
/// ([`KernelSpec::stores_any_c`]) must handle it; the other TMA-store ones must refuse it
/// ([`check_rejections`]).
pub const ODD_N_SHAPE: (usize, usize, usize) = (67, 301, 40);

/// Everything `hgemm verify` and the GPU tests check for one kernel, one printable line per
/// case and whether it passed. `seed` makes the inputs.
pub fn verify_kernel(
    gemm: &Gemm,
    blas: &Cublas,
    stream: &Arc<CudaStream>,
    kernel: &KernelSpec,
    seed: u64,
) -> Result<Vec<(String, bool)>> {
    let mut lines = Vec::new();
    let odd = (kernel.c_box.is_none() || kernel.stores_any_c()).then_some(ODD_N_SHAPE);
    for (i, &shape) in verify_shapes(kernel).iter().chain(odd.iter()).enumerate() {
        let case = check(gemm, blas, stream, kernel, shape, seed.wrapping_add(i as u64 * 7919))?;
        let cpu = case.vs_cpu.map(|c| format!("{:.2e}", c.rel_error)).unwrap_or_else(|| "-".into());
        lines.push((
            format!(
                "{:<14} {:>5}x{:<5}x{:<5} vs cuBLAS {:.2e}  vs CPU {:>8}  unwritten {:<3} guard {:<3} {}",
                kernel.name,
                shape.0,
                shape.1,
                shape.2,
                case.vs_cublas.rel_error,
                cpu,
                case.vs_cublas.non_finite,
                case.guard_damage,
                if case.passed() { "ok" } else { "FAIL" }
            ),
            case.passed(),
        ));
    }
    for r in check_rejections(gemm, stream, kernel)? {
        lines.push((format!("{:<14} {:<40} {}", kernel.name, r.what, if r.passed { "ok" } else { "FAIL" }), r.passed));
    }
    Ok(lines)
}

/// [`verify_kernel`] for every kernel of the handle's family, each line printed as it comes:
/// the lines that failed (none where everything passed).
pub fn verify_family(gemm: &Gemm, blas: &Cublas, stream: &Arc<CudaStream>, seed: u64) -> Result<Vec<String>> {
    let mut failures = Vec::new();
    for kernel in gemm.kernels() {
        for (line, ok) in verify_kernel(gemm, blas, stream, kernel, seed)? {
            println!("{line}");
            if !ok {
                failures.push(line);
            }
        }
    }
    Ok(failures)
}
