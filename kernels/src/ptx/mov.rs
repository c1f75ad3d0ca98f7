//! `mov` (§9.7.9, "Data Movement and Conversion Instructions: mov") as a barrier to the
//! compiler's code motion.
use core::arch::asm;

/// `mov.b32 d, a;` — `a`, as a value LLVM cannot see through nor move: not `pure`, so it is
/// computed where it is written, not hoisted out of a loop to stay live across it.
#[inline(always)]
pub fn b32_opaque(a: u32) -> u32 {
    let d: u32;
    unsafe { asm!("mov.b32 {d}, {a};", d = out(reg32) d, a = in(reg32) a, options(nomem, nostack)) };
    d
}
