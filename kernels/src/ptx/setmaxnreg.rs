//! Per-warpgroup register reallocation, `setmaxnreg` (§9.7.17.1, sm_90a and sm_100a+).
//!
//! Honoured only when the entry has a register cap (`.maxntid`, written by tools/ptxgen) and
//! every warp of a warpgroup executes the same instruction (`.sync.aligned`): call these as the
//! first statement of each warpgroup role's branch. ptxas warns (C7508) when it ignores them; the
//! ptxas test fails on any warning.
use core::arch::asm;

/// `setmaxnreg.inc.sync.aligned.u32 N;` — raise this warpgroup's per-thread register limit to `N`
/// (a multiple of 8 in 24..=256), waiting until the registers are free.
#[inline(always)]
pub fn inc<const N: u32>() {
    unsafe { asm!("setmaxnreg.inc.sync.aligned.u32 {n};", n = const N, options(nostack)) };
}

/// `setmaxnreg.dec.sync.aligned.u32 N;` — lower this warpgroup's per-thread register limit to `N`,
/// giving the rest back to the CTA's pool.
#[inline(always)]
pub fn dec<const N: u32>() {
    unsafe { asm!("setmaxnreg.dec.sync.aligned.u32 {n};", n = const N, options(nostack)) };
}
