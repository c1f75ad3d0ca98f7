//! Conversions (§9.7.9.21).
use core::arch::asm;

/// `cvt.rn.bf16x2.f32` — two f32 to a packed bf16 pair, round to nearest even; `lo` lands in the
/// low half (the lower address when stored).
#[inline(always)]
pub fn rn_bf16x2_f32(lo: f32, hi: f32) -> u32 {
    let r: u32;
    unsafe {
        asm!("cvt.rn.bf16x2.f32 {r}, {hi}, {lo};", r = out(reg32) r, hi = in(reg32) hi, lo = in(reg32) lo, options(pure, nomem, nostack))
    };
    r
}
