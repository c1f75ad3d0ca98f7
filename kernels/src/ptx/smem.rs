//! Dynamic shared memory and plain shared-memory stores (§9.7.9.9).
use core::arch::{asm, global_asm};

// The dynamic shared-memory window, aligned for the 1024-byte 128B-swizzle atom.
global_asm!(".extern .shared .align 1024 .b8 SMEM[];");

/// The shared::cta address of the dynamic shared memory.
#[inline(always)]
pub fn base() -> u32 {
    let r: u32;
    unsafe { asm!("mov.u32 {r}, SMEM;", r = out(reg32) r, options(pure, nomem, nostack)) };
    r
}

/// `st.shared.b32`.
#[inline(always)]
pub fn st_b32(addr: u32, v: u32) {
    unsafe { asm!("st.shared.b32 [{a}], {v};", a = in(reg32) addr, v = in(reg32) v, options(nostack)) };
}

/// `ld.shared.b32`.
#[inline(always)]
pub fn ld_b32(addr: u32) -> u32 {
    let v: u32;
    unsafe { asm!("ld.shared.b32 {v}, [{a}];", v = out(reg32) v, a = in(reg32) addr, options(nostack, readonly)) };
    v
}

/// `st.shared.b16`.
#[inline(always)]
pub fn st_b16(addr: u32, v: u16) {
    unsafe { asm!("st.shared.b16 [{a}], {v};", a = in(reg32) addr, v = in(reg16) v, options(nostack)) };
}

/// `ld.shared.b16`.
#[inline(always)]
pub fn ld_b16(addr: u32) -> u16 {
    let v: u16;
    unsafe { asm!("ld.shared.b16 {v}, [{a}];", v = out(reg16) v, a = in(reg32) addr, options(nostack, readonly)) };
    v
}

/// `st.shared.b64`.
#[inline(always)]
pub fn st_b64(addr: u32, v: u64) {
    unsafe { asm!("st.shared.b64 [{a}], {v};", a = in(reg32) addr, v = in(reg64) v, options(nostack)) };
}

/// `ld.shared.b64`.
#[inline(always)]
pub fn ld_b64(addr: u32) -> u64 {
    let v: u64;
    unsafe { asm!("ld.shared.b64 {v}, [{a}];", v = out(reg64) v, a = in(reg32) addr, options(nostack, readonly)) };
    v
}

/// `st.shared.v4.b32` — 16 bytes, `addr` 16-byte aligned.
#[inline(always)]
pub fn st_v4_b32(addr: u32, v: [u32; 4]) {
    unsafe {
        asm!(
            "st.shared.v4.b32 [{a}], {{{x}, {y}, {z}, {w}}};",
            a = in(reg32) addr, x = in(reg32) v[0], y = in(reg32) v[1], z = in(reg32) v[2], w = in(reg32) v[3],
            options(nostack)
        )
    };
}
