//! Atomic reductions without a result, `red` (§9.7.13, "Parallel Synchronization and
//! Communication Instructions: red"), on generic addresses. Relaxed, GPU scope.
use core::arch::asm;

/// `red.add.f64 [addr], v;`
#[inline(always)]
pub fn add_f64(addr: u64, v: f64) {
    unsafe { asm!("red.add.f64 [{a}], {v};", a = in(reg64) addr, v = in(reg64) v, options(nostack)) };
}

/// `red.add.u64 [addr], v;`
#[inline(always)]
pub fn add_u64(addr: u64, v: u64) {
    unsafe { asm!("red.add.u64 [{a}], {v};", a = in(reg64) addr, v = in(reg64) v, options(nostack)) };
}
