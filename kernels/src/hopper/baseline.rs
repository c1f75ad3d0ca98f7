//! The separate element-wise kernels that the fused epilogue ([`crate::fused`]) is measured
//! against and checked with: what a caller of cuBLAS launches after its GEMM for a bias and an
//! activation, or for a gated unit. Memory-bound: 16-byte accesses where the buffers allow,
//! grid-stride over the matrix, [`THREADS`] threads per CTA.
use crate::activation::activate;
use crate::epilogue::bf16x2_to_f32;
use crate::fused::{BiasType, Epilogue};
use crate::ptx::{cvt, global, sreg};

/// Threads per CTA of both kernels.
const THREADS: u32 = 256;

/// This thread's first index and the grid's stride, over items of a grid-stride loop.
#[inline(always)]
fn grid_stride() -> (u64, u64) {
    let stride = sreg::nctaid_x() as u64 * THREADS as u64;
    (sreg::ctaid_x() as u64 * THREADS as u64 + sreg::tid_x() as u64, stride)
}

/// The bf16 at `at` as f32.
#[inline(always)]
fn ld_bf16(at: u64) -> f32 {
    f32::from_bits((unsafe { (at as *const u16).read() } as u32) << 16)
}

/// Store `v` as bf16 at `at`.
#[inline(always)]
fn st_bf16(at: u64, v: f32) {
    unsafe { (at as *mut u16).write(cvt::rn_bf16x2_f32(v, 0.0) as u16) };
}

/// Whether rows of `cols` bf16 at `base` with stride `ld` move in whole aligned 16-byte chunks.
#[inline(always)]
fn chunked(base: u64, cols: u32, ld: u64) -> bool {
    cols.is_multiple_of(8) && ld.is_multiple_of(8) && base.is_multiple_of(16)
}

/// In place, `y[r][c] = act(y[r][c] + bias[c])` for the rows × cols bf16 matrix at `y` (row
/// stride `ld` elements), with the activation and the bias's type (bf16 or f32) of `epilogue`
/// ([`Epilogue`]'s bits; no bias bit: no bias, and `bias` is not read; the along-M bit: the
/// bias runs over rows, `bias[r]`). Gating is not this kernel's. Launch with [`THREADS`]
/// threads and any grid (a few CTAs per SM covers the card).
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn hgemm_bias_act_bf16(y: u64, rows: u32, cols: u32, ld: u64, bias: u64, epilogue: u32) {
    let e = Epilogue(epilogue);
    let act = e.activation();
    let bias_of = |r: u32, c: u32| -> f32 {
        let i = if e.is_along_m() { r } else { c } as u64;
        match e.bias() {
            None => 0.0,
            Some(BiasType::Bf16) => ld_bf16(bias + 2 * i),
            Some(BiasType::F32) => unsafe { ((bias + 4 * i) as *const f32).read() },
        }
    };
    let (first, stride) = grid_stride();
    if chunked(y, cols, ld) {
        let chunks_per_row = cols / 8;
        let mut i = first;
        while i < rows as u64 * chunks_per_row as u64 {
            let (r, c0) = ((i / chunks_per_row as u64) as u32, (i % chunks_per_row as u64) as u32 * 8);
            let at = y + 2 * (r as u64 * ld + c0 as u64);
            // Written out, not a loop over the four words: a loop kept the array in local memory.
            let f = |w: u32, c: u32| {
                let (lo, hi) = bf16x2_to_f32(w);
                cvt::rn_bf16x2_f32(activate(act, lo + bias_of(r, c)), activate(act, hi + bias_of(r, c + 1)))
            };
            let v = global::ld_v4_b32(at);
            global::st_v4_b32(at, [f(v[0], c0), f(v[1], c0 + 2), f(v[2], c0 + 4), f(v[3], c0 + 6)]);
            i += stride;
        }
    } else {
        let mut i = first;
        while i < rows as u64 * cols as u64 {
            let (r, c) = ((i / cols as u64) as u32, (i % cols as u64) as u32);
            let at = y + 2 * (r as u64 * ld + c as u64);
            st_bf16(at, activate(act, ld_bf16(at) + bias_of(r, c)));
            i += stride;
        }
    }
}

/// `y[r][c] = act(x[r][c]) · x[r][c + cols]` for r < rows, c < cols: the gated unit over a
/// rows × 2·cols bf16 matrix `x` (row stride `ld_x`) whose first `cols` columns are the gate
/// projection and the next `cols` the up projection (cuBLAS's output for gate and up weights
/// stacked, not [`crate::fused`]'s interleave), into the rows × cols bf16 `y` (row stride
/// `ld_y`). Only `epilogue`'s activation is read. Launch with [`THREADS`] threads and any grid.
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn hgemm_glu_bf16(
    x: u64,
    rows: u32,
    cols: u32,
    ld_x: u64,
    y: u64,
    ld_y: u64,
    epilogue: u32,
) {
    let act = Epilogue(epilogue).activation();
    let (first, stride) = grid_stride();
    if chunked(x, cols, ld_x) && chunked(y, cols, ld_y) {
        let chunks_per_row = cols / 8;
        let mut i = first;
        while i < rows as u64 * chunks_per_row as u64 {
            let (r, c0) = ((i / chunks_per_row as u64) as u32, (i % chunks_per_row as u64) as u32 * 8);
            let gate_at = x + 2 * (r as u64 * ld_x + c0 as u64);
            let (g, u) = (global::ld_v4_b32(gate_at), global::ld_v4_b32(gate_at + 2 * cols as u64));
            let f = |g: u32, u: u32| {
                let ((g_lo, g_hi), (u_lo, u_hi)) = (bf16x2_to_f32(g), bf16x2_to_f32(u));
                cvt::rn_bf16x2_f32(activate(act, g_lo) * u_lo, activate(act, g_hi) * u_hi)
            };
            global::st_v4_b32(
                y + 2 * (r as u64 * ld_y + c0 as u64),
                [f(g[0], u[0]), f(g[1], u[1]), f(g[2], u[2]), f(g[3], u[3])],
            );
            i += stride;
        }
    } else {
        let mut i = first;
        while i < rows as u64 * cols as u64 {
            let (r, c) = ((i / cols as u64) as u32, (i % cols as u64) as u32);
            let gate_at = x + 2 * (r as u64 * ld_x + c as u64);
            st_bf16(
                y + 2 * (r as u64 * ld_y + c as u64),
                activate(act, ld_bf16(gate_at)) * ld_bf16(gate_at + 2 * cols as u64),
            );
            i += stride;
        }
    }
}
