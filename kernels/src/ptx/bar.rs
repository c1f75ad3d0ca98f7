//! CTA-level barriers, `barrier{.cta}` (§9.7.13.1). The non-`.aligned` forms: a warp may reach
//! them from different (LLVM-duplicated) instructions and still meet its peers.
use core::arch::asm;

/// `barrier.sync 0;` — every thread of the CTA (`__syncthreads`).
#[inline(always)]
pub fn sync_all() {
    unsafe { asm!("barrier.sync 0;", options(nostack)) };
}

/// `barrier.sync id, threads;` — the `threads` (a multiple of 32) that use named barrier `id`.
#[inline(always)]
pub fn sync(id: u32, threads: u32) {
    unsafe { asm!("barrier.sync {id}, {n};", id = in(reg32) id, n = in(reg32) threads, options(nostack)) };
}

/// `barrier.arrive id, threads;` — signal named barrier `id` without waiting.
#[inline(always)]
pub fn arrive(id: u32, threads: u32) {
    unsafe { asm!("barrier.arrive {id}, {n};", id = in(reg32) id, n = in(reg32) threads, options(nostack)) };
}
