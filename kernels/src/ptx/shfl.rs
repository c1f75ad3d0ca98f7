//! Warp shuffles (`shfl.sync`, in §9.7.9, Data Movement and Conversion Instructions).
use core::arch::asm;

/// `shfl.sync.idx.b32 d, v, lane, 0x1f, 0xffffffff;` — every lane of the (whole, converged) warp
/// gets `v` of lane `lane`. Broadcasting a value that is already the same in every lane still
/// pays: ptxas then knows it is warp-uniform and may keep what is computed from it in uniform
/// registers (CUTLASS's `canonical_warp_idx_sync` does the same for the warp index).
#[inline(always)]
pub fn sync_idx_b32(v: u32, lane: u32) -> u32 {
    let d: u32;
    unsafe {
        asm!("shfl.sync.idx.b32 {d}, {v}, {l}, 0x1f, 0xffffffff;", d = out(reg32) d, v = in(reg32) v, l = in(reg32) lane, options(nomem, nostack))
    };
    d
}
