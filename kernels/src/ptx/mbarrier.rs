//! `mbarrier` (§9.7.13.15): the phase-counting barriers in shared memory that TMA, tcgen05
//! commits and threads arrive on.
use core::arch::asm;

/// A 64-bit mbarrier in this CTA's shared memory, by its shared::cta address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Barrier(pub u32);

impl Barrier {
    /// The `i`-th of an array of barriers starting at `base`.
    #[inline(always)]
    pub const fn at(base: u32, i: u32) -> Barrier {
        Barrier(base + 8 * i)
    }
}

/// `mbarrier.init.shared::cta.b64 [bar], count;` — a phase completes after `count` arrivals (and
/// every expected transaction byte).
#[inline(always)]
pub fn init(bar: Barrier, count: u32) {
    unsafe {
        asm!("mbarrier.init.shared::cta.b64 [{b}], {c};", b = in(reg32) bar.0, c = in(reg32) count, options(nostack))
    };
}

/// `mbarrier.arrive.release.cta.shared::cta.b64 _, [bar];`
#[inline(always)]
pub fn arrive(bar: Barrier) {
    unsafe { asm!("mbarrier.arrive.release.cta.shared::cta.b64 _, [{b}];", b = in(reg32) bar.0, options(nostack)) };
}

/// `@p mbarrier.arrive.release.cta.shared::cta.b64 _, [bar];` — arrive only where `pred` holds:
/// one thread signals for its group, with no branch around it for LLVM to duplicate the
/// surrounding warp-collective code into.
#[inline(always)]
pub fn arrive_if(bar: Barrier, pred: bool) {
    unsafe {
        asm!(
            "{{",
            ".reg .pred p;",
            "setp.ne.b32 p, {q}, 0;",
            "@p mbarrier.arrive.release.cta.shared::cta.b64 _, [{b}];",
            "}}",
            b = in(reg32) bar.0,
            q = in(reg32) pred as u32,
            options(nostack)
        )
    };
}

/// `mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [bar], bytes;` — arrive, and make
/// the current phase also wait for `bytes` of asynchronous transactions (TMA `complete_tx`).
#[inline(always)]
pub fn arrive_expect_tx(bar: Barrier, bytes: u32) {
    unsafe {
        asm!("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [{b}], {t};", b = in(reg32) bar.0, t = in(reg32) bytes, options(nostack))
    };
}

/// `mbarrier.arrive.release.cta.shared::cluster.b64 _, [addr];` — arrive on the barrier at the
/// same offset in the CTA of rank `cta` of this cluster (mapped with `mapa`).
///
/// The release is CTA-scoped on purpose: `.release.cluster` costs a `MEMBAR.ALL.GPU` before every
/// arrive (seen in the SASS; it halved the throughput of the cluster kernels). The arrivals
/// here only say "my wgmma reads of this stage have retired", which `wgmma.wait_group` already
/// guarantees; CUTLASS's cluster pipelines arrive with the same default semantics.
#[inline(always)]
pub fn arrive_cluster(bar: Barrier, cta: u32) {
    let remote = super::cluster::mapa(bar.0, cta);
    unsafe {
        asm!("mbarrier.arrive.release.cta.shared::cluster.b64 _, [{b}];", b = in(reg32) remote, options(nostack))
    };
}

/// `@p mbarrier.arrive.release.cta.shared::cluster.b64 _, [addr];` — [`arrive_cluster`] where
/// `pred` holds, predicated inside the asm block like [`arrive_if`].
#[inline(always)]
pub fn arrive_cluster_if(bar: Barrier, cta: u32, pred: bool) {
    let remote = super::cluster::mapa(bar.0, cta);
    unsafe {
        asm!(
            "{{",
            ".reg .pred p;",
            "setp.ne.b32 p, {q}, 0;",
            "@p mbarrier.arrive.release.cta.shared::cluster.b64 _, [{b}];",
            "}}",
            b = in(reg32) remote,
            q = in(reg32) pred as u32,
            options(nostack)
        )
    };
}

/// `mbarrier.arrive.expect_tx.relaxed.cluster.shared::cluster.b64 _, [addr], bytes;` — as
/// [`arrive_expect_tx`], on the barrier at `bar`'s offset in the CTA of rank `cta` of this
/// cluster. Relaxed: the arrival publishes none of this thread's writes (the bytes it announces
/// are the TMA's, made visible by their `complete_tx`), and a `.release.cluster` arrive costs a
/// GPU-wide memory barrier (`MEMBAR.ALL.GPU` in sm_100 SASS) on every call.
#[inline(always)]
pub fn arrive_expect_tx_relaxed_cluster(bar: Barrier, cta: u32, bytes: u32) {
    let remote = super::cluster::mapa(bar.0, cta);
    unsafe {
        asm!(
            "mbarrier.arrive.expect_tx.relaxed.cluster.shared::cluster.b64 _, [{b}], {t};",
            b = in(reg32) remote, t = in(reg32) bytes,
            options(nostack)
        )
    };
}

/// `mbarrier.try_wait.parity.shared::cta.b64` — whether the phase with parity `parity` has
/// completed. The hardware may suspend the thread for a while before answering false.
#[inline(always)]
pub fn try_wait_parity(bar: Barrier, parity: u32) -> bool {
    let done: u32;
    unsafe {
        asm!(
            "{{",
            ".reg .pred p;",
            "mbarrier.try_wait.parity.shared::cta.b64 p, [{b}], {ph};",
            "selp.u32 {d}, 1, 0, p;",
            "}}",
            d = out(reg32) done,
            b = in(reg32) bar.0,
            ph = in(reg32) parity,
            options(nostack)
        )
    };
    done != 0
}

/// Wait until the phase with parity `parity` of `bar` completes.
///
/// Built with `--cfg hang_guard`, the wait gives up after [`crate::hang::LIMIT_NS`] and reports
/// the barrier and parity instead of hanging (see [`crate::hang`]).
#[inline(always)]
pub fn wait(bar: Barrier, parity: u32) {
    #[cfg(not(hang_guard))]
    while !try_wait_parity(bar, parity) {}
    #[cfg(hang_guard)]
    if !try_wait_parity(bar, parity) {
        crate::hang::wait_bounded(bar, parity);
    }
}
