//! Approximate floating-point instructions (§9.7.3, "Floating Point Instructions": `ex2`, `rcp`)
//! for the fused epilogue's activations (`activation.rs`): each one SFU operation, far
//! more accurate than the bf16 the epilogue rounds to.
use core::arch::asm;

/// `ex2.approx.ftz.f32 d, a;` — 2^a within a few ulp (§9.7.3, `ex2`); overflow gives +inf,
/// underflow +0.
#[inline(always)]
pub fn ex2_approx_ftz_f32(a: f32) -> f32 {
    let d: f32;
    unsafe { asm!("ex2.approx.ftz.f32 {d}, {a};", d = out(reg32) d, a = in(reg32) a, options(pure, nomem, nostack)) };
    d
}

/// `rcp.approx.ftz.f32 d, a;` — 1/a within 1 ulp (§9.7.3, `rcp`); 1/+inf = +0.
#[inline(always)]
pub fn rcp_approx_ftz_f32(a: f32) -> f32 {
    let d: f32;
    unsafe { asm!("rcp.approx.ftz.f32 {d}, {a};", d = out(reg32) d, a = in(reg32) a, options(pure, nomem, nostack)) };
    d
}
