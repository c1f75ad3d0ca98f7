//! Epilogue pieces both families share.
use crate::args::GemmArgs;
use crate::ptx::cvt;

/// Store C[row][col] and C[row][col + 1] as bf16, skipping what lies outside the M×N output.
/// `col` is even. With N even a pair is in bounds iff `col < n` and is one aligned 4-byte store;
/// with N odd every row starts at an odd element, so the pair is stored element by element.
#[inline(always)]
pub fn store_pair(args: &GemmArgs, row: u32, col: u32, lo: f32, hi: f32) {
    if row >= args.m || col >= args.n {
        return;
    }
    let packed = cvt::rn_bf16x2_f32(lo, hi);
    let at = args.c + 2 * (row as u64 * args.ldc + col as u64);
    unsafe {
        if args.n % 2 == 0 && args.ldc % 2 == 0 {
            (at as *mut u32).write(packed);
        } else {
            (at as *mut u16).write(packed as u16);
            if col + 1 < args.n {
                ((at + 2) as *mut u16).write((packed >> 16) as u16);
            }
        }
    }
}

/// The two f32 of a packed bf16 pair (`lo` from the low half): a bf16 is the top half of an f32.
#[inline(always)]
pub fn bf16x2_to_f32(packed: u32) -> (f32, f32) {
    (f32::from_bits(packed << 16), f32::from_bits(packed & 0xffff_0000))
}
