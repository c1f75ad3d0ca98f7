//! Memory and proxy fences (§9.7.13.4).
use core::arch::asm;

/// `fence.proxy.async.shared::cta;` — order this thread's ordinary shared-memory writes before
/// later reads of the same memory by the async proxy (TMA stores, wgmma/tcgen05 operand reads).
#[inline(always)]
pub fn proxy_async_shared_cta() {
    unsafe { asm!("fence.proxy.async.shared::cta;", options(nostack)) };
}

/// `fence.mbarrier_init.release.cluster;` — make this thread's `mbarrier.init`s visible to the
/// async proxy and to the other CTAs of the cluster before they arrive on those barriers.
#[inline(always)]
pub fn mbarrier_init_release_cluster() {
    unsafe { asm!("fence.mbarrier_init.release.cluster;", options(nostack)) };
}

/// `fence.sc.sys;` — order this thread's earlier memory accesses before its later ones for every
/// observer in the system, the host included (used before publishing a record in host memory).
#[inline(always)]
pub fn sc_sys() {
    unsafe { asm!("fence.sc.sys;", options(nostack)) };
}
