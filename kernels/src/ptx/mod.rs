//! Every inline-PTX instruction the kernels use: one small function per instruction form, named
//! after its mnemonic, with the PTX ISA section it implements (PTX ISA 8.8, the "§" numbers).
//!
//! Only this module holds `asm!`. Instructions executed by one elected thread take plain `u32`/`u64`
//! operands; warp-collective ones (`.sync.aligned`) are called only from warp-uniform control flow,
//! because LLVM does not treat `asm!` as convergent and may duplicate it across divergent branches
//! (see TOOLCHAIN.md); for the same reason CTA barriers use the non-`.aligned` `barrier.sync`.

pub mod atom;
pub mod bar;
pub mod cluster;
pub mod cvt;
pub mod fence;
pub mod float;
pub mod global;
pub mod griddepcontrol;
pub mod mbarrier;
pub mod mov;
pub mod param;
pub mod red;
pub mod setmaxnreg;
pub mod shfl;
pub mod smem;
pub mod sreg;
#[cfg(blackwell)]
pub mod tcgen05;
pub mod tma;
#[cfg(hopper)]
pub mod wgmma;

/// `trap;` (Miscellaneous Instructions: trap) — abort the kernel with an error the host sees at
/// its next synchronization. The CUDA context is unusable afterwards.
#[inline(always)]
pub fn trap() -> ! {
    unsafe { core::arch::asm!("trap;", options(noreturn, nostack)) }
}
