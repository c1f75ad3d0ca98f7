//! Ordered accesses to global memory (§9.7.9.8 `ld`, §9.7.9.9 `st`; memory consistency model
//! §8): the flags that hand data from one CTA to another outside TMA (the stream-K partial sums,
//! `epilogue::Partial`) and the counter the waves meet on (`crate::rendezvous`); 16-byte vector accesses for the
//! element-wise kernels.
use core::arch::asm;

/// `ld.acquire.gpu.global.u32 v, [addr];` — later accesses of this thread (and, through a CTA
/// barrier after it, of its CTA) see what the releasing writer saw.
#[inline(always)]
pub fn ld_acquire_gpu_u32(addr: u64) -> u32 {
    let v: u32;
    unsafe { asm!("ld.acquire.gpu.global.u32 {v}, [{a}];", v = out(reg32) v, a = in(reg64) addr, options(nostack)) };
    v
}

/// `ld.relaxed.gpu.global.u32 v, [addr];` — a fresh read each time, ordering nothing.
#[inline(always)]
pub fn ld_relaxed_gpu_u32(addr: u64) -> u32 {
    let v: u32;
    unsafe { asm!("ld.relaxed.gpu.global.u32 {v}, [{a}];", v = out(reg32) v, a = in(reg64) addr, options(nostack)) };
    v
}

/// `st.release.gpu.global.u32 [addr], v;` — publishes this thread's earlier writes, and those of
/// the threads it met at a CTA barrier before, to whoever acquires the value.
#[inline(always)]
pub fn st_release_gpu_u32(addr: u64, v: u32) {
    unsafe { asm!("st.release.gpu.global.u32 [{a}], {v};", a = in(reg64) addr, v = in(reg32) v, options(nostack)) };
}

/// `st.relaxed.gpu.global.u32 [addr], v;`
#[inline(always)]
pub fn st_relaxed_gpu_u32(addr: u64, v: u32) {
    unsafe { asm!("st.relaxed.gpu.global.u32 [{a}], {v};", a = in(reg64) addr, v = in(reg32) v, options(nostack)) };
}

/// `ld.global.v4.b32 {a, b, c, d}, [addr];` — 16 bytes (`addr` 16-byte aligned) in one access.
#[inline(always)]
pub fn ld_v4_b32(addr: u64) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    unsafe {
        asm!("ld.global.v4.b32 {{{a}, {b}, {c}, {d}}}, [{p}];", a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d, p = in(reg64) addr, options(nostack, readonly))
    };
    [a, b, c, d]
}

/// `ld.global.cg.v4.b32 {a, b, c, d}, [addr];` — 16 bytes (`addr` 16-byte aligned), cached in L2
/// only (§9.7.9.8, `.cg`): data another SM wrote during this kernel (stream-K partial sums).
#[inline(always)]
pub fn ld_cg_v4_b32(addr: u64) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    unsafe {
        asm!("ld.global.cg.v4.b32 {{{a}, {b}, {c}, {d}}}, [{p}];", a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d, p = in(reg64) addr, options(nostack, readonly))
    };
    [a, b, c, d]
}

/// `st.global.v4.b32 [addr], {a, b, c, d};` — 16 bytes (`addr` 16-byte aligned) in one access.
#[inline(always)]
pub fn st_v4_b32(addr: u64, v: [u32; 4]) {
    unsafe {
        asm!("st.global.v4.b32 [{p}], {{{a}, {b}, {c}, {d}}};", p = in(reg64) addr, a = in(reg32) v[0], b = in(reg32) v[1], c = in(reg32) v[2], d = in(reg32) v[3], options(nostack))
    };
}

/// `ld.global.nc.b32 v, [addr];` — through the non-coherent (read-only) cache, for data no
/// thread writes during the kernel (the fused epilogue's bias). Not `pure`: kept in program
/// order, so each load sits beside its use instead of all being issued ahead of them.
#[inline(always)]
pub fn ld_nc_b32(addr: u64) -> u32 {
    let v: u32;
    unsafe { asm!("ld.global.nc.b32 {v}, [{a}];", v = out(reg32) v, a = in(reg64) addr, options(nostack, readonly)) };
    v
}

/// `ld.global.nc.b16 v, [addr];` — as [`ld_nc_b32`], two bytes.
#[inline(always)]
pub fn ld_nc_b16(addr: u64) -> u16 {
    let v: u16;
    unsafe { asm!("ld.global.nc.b16 {v}, [{a}];", v = out(reg16) v, a = in(reg64) addr, options(nostack, readonly)) };
    v
}
