//! Atomic read-modify-write with a result, `atom` (§9.7.13, "Parallel Synchronization and
//! Communication Instructions: atom"), on generic addresses.
use core::arch::asm;

/// `atom.cas.b32 old, [addr], cmp, new;` — if `*addr == cmp`, store `new`; returns the old value.
/// Relaxed, GPU scope (the PTX default).
#[inline(always)]
pub fn cas_b32(addr: u64, cmp: u32, new: u32) -> u32 {
    let old: u32;
    unsafe {
        asm!("atom.cas.b32 {o}, [{a}], {c}, {n};", o = out(reg32) old, a = in(reg64) addr, c = in(reg32) cmp, n = in(reg32) new, options(nostack))
    };
    old
}

/// `atom.add.u32 old, [addr], v;` — returns the old value. Relaxed, GPU scope.
#[inline(always)]
pub fn add_u32(addr: u64, v: u32) -> u32 {
    let old: u32;
    unsafe {
        asm!("atom.add.u32 {o}, [{a}], {v};", o = out(reg32) old, a = in(reg64) addr, v = in(reg32) v, options(nostack))
    };
    old
}
