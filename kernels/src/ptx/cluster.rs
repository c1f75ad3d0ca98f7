//! Thread-block clusters (sm_90): the cluster barrier (§9.7.13.2) and shared-memory addresses
//! of peer CTAs, `mapa` (§9.7.9.20).
use core::arch::asm;

/// `barrier.cluster.arrive.release;` — this thread has arrived; its earlier writes are released
/// to the cluster.
#[inline(always)]
pub fn arrive_release() {
    unsafe { asm!("barrier.cluster.arrive.release;", options(nostack)) };
}

/// `barrier.cluster.wait.acquire;` — wait until every thread of every CTA in the cluster arrived.
#[inline(always)]
pub fn wait_acquire() {
    unsafe { asm!("barrier.cluster.wait.acquire;", options(nostack)) };
}

/// Arrive and wait: all threads of the cluster meet here.
#[inline(always)]
pub fn sync() {
    arrive_release();
    wait_acquire();
}

/// `mapa.shared::cluster.u32` — the shared::cluster address of `addr` (a shared::cta address
/// in this CTA) in the CTA of rank `cta`.
#[inline(always)]
pub fn mapa(addr: u32, cta: u32) -> u32 {
    let r: u32;
    unsafe {
        asm!("mapa.shared::cluster.u32 {r}, {a}, {c};", r = out(reg32) r, a = in(reg32) addr, c = in(reg32) cta, options(pure, nomem, nostack))
    };
    r
}
