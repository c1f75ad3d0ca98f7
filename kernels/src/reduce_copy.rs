//! A communication-like load for measuring a GEMM beside a collective: a fixed number of CTAs
//! streaming through memory as an all-reduce's reduce-copy does (NCCL runs its collectives as a
//! few CTAs, one per channel, that read a peer's chunk, add it to their own and write it on).
//! On one GPU it is what an all-reduce takes from the SMs a GEMM leaves it: its time alone, and
//! beside a GEMM with and without an SM budget, is the measurement.

/// Threads per CTA of `hgemm_reduce_copy`.
pub const THREADS: u32 = 256;

/// The entry's name in the PTX.
pub const ENTRY: &str = "hgemm_reduce_copy";

/// Bytes of one chunk: each thread reads and writes 16-byte vectors of four f32.
pub const CHUNK_BYTES: u64 = 16;

/// Chunks each thread keeps in flight: one 16-byte load per thread at a time leaves a CTA far
/// below its SM's share of the memory bandwidth.
#[cfg(target_arch = "nvptx64")]
const UNROLL: usize = 4;

/// `dst[i] += src[i]` over `chunks` chunks of four f32 (both 16-byte aligned), `rounds` times
/// over, grid-stride: every CTA of the launch streams its share, so the launch lasts as long as
/// the memory bandwidth its CTAs get allows.
#[cfg(target_arch = "nvptx64")]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn hgemm_reduce_copy(src: u64, dst: u64, chunks: u64, rounds: u32) {
    use crate::ptx::{global, sreg};
    let stride = sreg::nctaid_x() as u64 * THREADS as u64;
    let first = sreg::ctaid_x() as u64 * THREADS as u64 + sreg::tid_x() as u64;
    let at = |base: u64, i: u64| base + i * CHUNK_BYTES;
    for _ in 0..rounds {
        let mut i = first;
        while i + (UNROLL as u64 - 1) * stride < chunks {
            let (mut s, mut d) = ([[0u32; 4]; UNROLL], [[0u32; 4]; UNROLL]);
            for u in 0..UNROLL {
                let j = i + u as u64 * stride;
                s[u] = global::ld_v4_b32(at(src, j));
                d[u] = global::ld_v4_b32(at(dst, j));
            }
            for u in 0..UNROLL {
                global::st_v4_b32(at(dst, i + u as u64 * stride), add(s[u], d[u]));
            }
            i += UNROLL as u64 * stride;
        }
        while i < chunks {
            global::st_v4_b32(at(dst, i), add(global::ld_v4_b32(at(src, i)), global::ld_v4_b32(at(dst, i))));
            i += stride;
        }
    }
}

/// Four f32, given and returned as their bits, added lane by lane.
#[cfg(target_arch = "nvptx64")]
#[inline(always)]
fn add(a: [u32; 4], b: [u32; 4]) -> [u32; 4] {
    core::array::from_fn(|j| (f32::from_bits(a[j]) + f32::from_bits(b[j])).to_bits())
}
