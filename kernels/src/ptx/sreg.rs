//! Special registers (§10).
use core::arch::asm;

macro_rules! sreg {
    ($(#[$doc:meta])* $name:ident, $reg:literal) => {
        $(#[$doc])*
        #[inline(always)]
        pub fn $name() -> u32 {
            let r: u32;
            unsafe { asm!(concat!("mov.u32 {r}, ", $reg, ";"), r = out(reg32) r, options(pure, nomem, nostack)) };
            r
        }
    };
}

sreg!(/// Thread index in the CTA, x.
    tid_x, "%tid.x");
sreg!(/// CTA index in the grid, x.
    ctaid_x, "%ctaid.x");
sreg!(/// CTA index in the grid, y.
    ctaid_y, "%ctaid.y");
sreg!(/// Threads in the CTA, x.
    ntid_x, "%ntid.x");
sreg!(/// CTAs in the grid, x.
    nctaid_x, "%nctaid.x");
sreg!(/// Lane in the warp.
    laneid, "%laneid");
sreg!(/// Rank of this CTA in its cluster (§10.26).
    cluster_ctarank, "%cluster_ctarank");
sreg!(/// Cluster index in the grid, x.
    clusterid_x, "%clusterid.x");
sreg!(/// Clusters in the grid, x.
    nclusterid_x, "%nclusterid.x");

sreg!(/// Bytes of dynamic shared memory this launch was given (§10).
    dynamic_smem_size, "%dynamic_smem_size");

/// Nanosecond global timer (§10.29); read anew on every call.
#[inline(always)]
pub fn globaltimer() -> u64 {
    let r: u64;
    unsafe { asm!("mov.u64 {r}, %globaltimer;", r = out(reg64) r, options(nomem, nostack)) };
    r
}
