//! Tensor cores of the 5th generation, `tcgen05` (§9.7.16, sm_100 family): tensor-memory
//! allocation, `mma` from shared-memory descriptors into tensor memory, `commit` onto mbarriers,
//! tensor-memory loads, and the fences that order them with thread synchronization.
//!
//! Issue granularity (§9.7.16.5): `mma` and `commit` are issued by one thread (with
//! `.cta_group::2`, one thread of the CTA pair); `alloc`, `dealloc` and `relinquish_alloc_permit`
//! by one whole warp (with `.cta_group::2`, one warp in each CTA of the pair); `ld` and `wait::ld`
//! by whole warps, each reaching only its quarter of the 128 lanes: warp `w` reads lanes
//! `32·(w % 4)` to `32·(w % 4) + 31`. The `.sync.aligned` forms below must be called from
//! warp-uniform code (see the module [`crate::ptx`]).
//!
//! `CTA_GROUP` is 1 (this CTA's tensor memory) or 2 (the pair of CTAs of ranks 2i and 2i + 1 in a
//! cluster: the MMA reads A and B at the same shared-memory offsets in both and writes its M rows
//! split across both CTAs' tensor memory).
//!
//! The tcgen05 § numbers here and in [`crate::desc::tcgen05`] were read in the PTX ISA 9.2 text
//! (the instructions themselves are PTX ISA 8.6+; this crate builds with 8.8).
use super::mbarrier::Barrier;
use crate::desc::tcgen05::{InstrDesc, SmemDesc, TmemAddr};
use core::arch::asm;

/// `tcgen05.alloc.cta_group::N.sync.aligned.shared::cta.b32 [slot], cols;` — allocate `cols`
/// columns (a power of two, 32 to 512) of all 128 lanes and write their base address to the
/// shared-memory word at `slot`. Blocks until the columns are free. Whole warp; with
/// `CTA_GROUP = 2`, one warp in each CTA of the pair, and both get the same columns.
#[inline(always)]
pub fn alloc<const CTA_GROUP: u32>(slot: u32, cols: u32) {
    unsafe {
        asm!(
            "tcgen05.alloc.cta_group::{g}.sync.aligned.shared::cta.b32 [{s}], {n};",
            g = const CTA_GROUP, s = in(reg32) slot, n = in(reg32) cols,
            options(nostack)
        )
    };
}

/// `tcgen05.dealloc.cta_group::N.sync.aligned.b32 taddr, cols;` — free what [`alloc`] gave.
/// Every allocation must be freed before the CTA exits, by the warp that allocated it.
#[inline(always)]
pub fn dealloc<const CTA_GROUP: u32>(taddr: TmemAddr, cols: u32) {
    unsafe {
        asm!(
            "tcgen05.dealloc.cta_group::{g}.sync.aligned.b32 {t}, {n};",
            g = const CTA_GROUP, t = in(reg32) taddr.0, n = in(reg32) cols,
            options(nostack)
        )
    };
}

/// `tcgen05.relinquish_alloc_permit.cta_group::N.sync.aligned;` — this CTA will allocate no more,
/// so a CTA waiting to run on the same SM may allocate once this one frees its columns.
#[inline(always)]
pub fn relinquish_alloc_permit<const CTA_GROUP: u32>() {
    unsafe {
        asm!("tcgen05.relinquish_alloc_permit.cta_group::{g}.sync.aligned;", g = const CTA_GROUP, options(nostack))
    };
}

/// `tcgen05.mma.cta_group::N.kind::f16 [d], a_desc, b_desc, idesc, p;` — D (in tensor memory at
/// `d`) = A · Bᵀ + (`accumulate != 0` ? D : 0), A and B in shared memory by descriptor, shapes and
/// types by `idesc`. Asynchronous: completion is observed through [`commit`]. One thread.
#[inline(always)]
pub fn mma_f16_ss<const CTA_GROUP: u32>(d: TmemAddr, a: SmemDesc, b: SmemDesc, idesc: InstrDesc, accumulate: u32) {
    unsafe {
        asm!(
            "{{",
            ".reg .pred p;",
            "setp.ne.b32 p, {acc}, 0;",
            "tcgen05.mma.cta_group::{g}.kind::f16 [{d}], {a}, {b}, {i}, p;",
            "}}",
            g = const CTA_GROUP, d = in(reg32) d.0, a = in(reg64) a.0, b = in(reg64) b.0, i = in(reg32) idesc.0,
            acc = in(reg32) accumulate,
            options(nostack)
        )
    };
}

/// `tcgen05.commit.cta_group::N.mbarrier::arrive::one.shared::cluster.b64 [bar];` — one arrival on
/// `bar` once every asynchronous tcgen05 operation this thread issued before has completed
/// (the MMAs have read their shared-memory operands and written tensor memory). Implies
/// [`fence_before_thread_sync`]. One thread.
#[inline(always)]
pub fn commit<const CTA_GROUP: u32>(bar: Barrier) {
    unsafe {
        asm!(
            "tcgen05.commit.cta_group::{g}.mbarrier::arrive::one.shared::cluster.b64 [{b}];",
            g = const CTA_GROUP, b = in(reg32) bar.0,
            options(nostack)
        )
    };
}

/// As [`commit`], `.multicast::cluster`: the arrival lands on the barrier at `bar`'s offset in
/// every CTA of the cluster whose rank bit is set in `mask`.
#[inline(always)]
pub fn commit_multicast<const CTA_GROUP: u32>(bar: Barrier, mask: u16) {
    unsafe {
        asm!(
            "tcgen05.commit.cta_group::{g}.mbarrier::arrive::one.shared::cluster.multicast::cluster.b64 [{b}], {k};",
            g = const CTA_GROUP, b = in(reg32) bar.0, k = in(reg16) mask,
            options(nostack)
        )
    };
}

/// `tcgen05.fence::before_thread_sync;` — order this thread's earlier tcgen05 operations before
/// its next synchronization (barrier, mbarrier arrive) with other threads.
#[inline(always)]
pub fn fence_before_thread_sync() {
    unsafe { asm!("tcgen05.fence::before_thread_sync;", options(nostack)) };
}

/// `tcgen05.fence::after_thread_sync;` — order this thread's later tcgen05 operations after its
/// last synchronization (barrier, mbarrier wait) with other threads.
#[inline(always)]
pub fn fence_after_thread_sync() {
    unsafe { asm!("tcgen05.fence::after_thread_sync;", options(nostack)) };
}

/// Registers loaded by a `tcgen05.ld`, as raw 32-bit words (f32 bits for an f32 accumulator).
///
/// Like Hopper's `wgmma::Fragment`, the methods are generated straight-line so the
/// registers are only ever indexed by constants and never go to local memory.
pub trait TmemFragment: Sized {
    /// `tcgen05.wait::ld.sync.aligned;` — wait until this warp's earlier `tcgen05.ld`s have
    /// written their registers. The fragment's registers are operands of the same `asm!`, so
    /// nothing reads them before the wait.
    fn wait_ld(&mut self);

    /// `f(p, r[2p], r[2p + 1])` as f32 for every register pair `p` (two adjacent columns).
    fn for_each_pair(&self, f: impl FnMut(u32, f32, f32));
}

macro_rules! ld_32x32b {
    ($name:ident, $num:literal, [$r0:literal $(, $r:literal)* $(,)?]) => {
        impl TmemFragment for [u32; $num] {
            #[inline(always)]
            fn wait_ld(&mut self) {
                let d = self;
                unsafe {
                    asm!(
                        // The registers are named in a comment: they only pin the ordering.
                        concat!("tcgen05.wait::ld.sync.aligned; // {", stringify!($r0), "}" $(, " {", stringify!($r), "}")*),
                        inout(reg32) d[$r0], $(inout(reg32) d[$r],)*
                        options(nostack)
                    )
                };
            }

            #[inline(always)]
            fn for_each_pair(&self, mut f: impl FnMut(u32, f32, f32)) {
                ld_32x32b!(@pairs self, f, $r0 $(, $r)*);
            }
        }

        #[doc = concat!("`tcgen05.ld.sync.aligned.32x32b.x", stringify!($num), ".b32` — each thread of the warp loads ", stringify!($num))]
        /// consecutive columns, starting at `taddr`'s column, of lane `taddr.lane() + laneid`
        /// (§9.7.16.2.3, "Matrix fragments for shape .32x32b"). `taddr` is the same in every
        /// thread, its lane the first of this warp's quarter. Asynchronous: call
        /// [`TmemFragment::wait_ld`] on the result before reading it. Whole warp.
        #[inline(always)]
        pub fn $name(taddr: TmemAddr) -> [u32; $num] {
            let mut d = [0u32; $num];
            unsafe {
                asm!(
                    concat!(
                        "tcgen05.ld.sync.aligned.32x32b.x", stringify!($num), ".b32 {{{", stringify!($r0), "}"
                        $(, ", {", stringify!($r), "}")*, "}}, [{t}];"
                    ),
                    out(reg32) d[$r0], $(out(reg32) d[$r],)*
                    t = in(reg32) taddr.0,
                    options(nostack)
                )
            };
            d
        }
    };
    (@pairs $s:ident, $f:ident, $($a:literal, $b:literal),*) => {
        $($f($a / 2, f32::from_bits($s[$a]), f32::from_bits($s[$b]));)*
    };
}

ld_32x32b!(ld_32x32b_x16, 16, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);

#[rustfmt::skip]
ld_32x32b!(ld_32x32b_x32, 32, [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
    16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
]);
