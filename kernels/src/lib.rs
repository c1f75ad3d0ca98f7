//! BF16 GEMM kernels for NVIDIA Hopper (`wgmma`, sm_90a) and Blackwell (`tcgen05`, sm_100
//! family), written in Rust and compiled to PTX by rustc's own nvptx64 backend.
//!
//! Every kernel computes C = A·Bᵀ: A is M×K, B is N×K, C is M×N, all row-major bf16, with f32
//! accumulation. Each family is a ladder of versions, one file each, every version adding one
//! optimization to the one before ([`hopper`], [`blackwell`]).
//!
//! The crate builds two ways. For `nvptx64-nvidia-cuda` with `--cfg hopper` or `--cfg blackwell`
//! (done by the host crate's build script) it is the device code of that family. For the host it
//! is plain Rust: the kernels' [`spec::KernelSpec`]s, descriptors and tile scheduler, which the
//! launch code reads and the unit tests check.
//!
//! # Safety
//!
//! Every kernel entry point (`extern "ptx-kernel"`) is unsafe for one reason, stated here once
//! instead of on each: it must be launched as its spec says ([`spec::KernelSpec`], or
//! [`hopper::ceiling::CeilingSpec`] for the tensor-core ceilings: grid, cluster, block, dynamic
//! shared memory), with tensor maps and [`args::GemmArgs`] made for the same call, and with
//! device pointers to buffers that hold what the arguments say. The host crate's launch path is
//! what does that.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, asm_experimental_arch))]
// The entry points' shared contract is the crate's `# Safety` section above.
#![allow(clippy::missing_safety_doc)]

pub mod args;
pub mod desc;
pub mod fused;
pub mod hang;
pub mod pipeline;
pub mod reduce_copy;
pub mod sched;
pub mod spec;
pub mod staging;

#[cfg(any(all(target_arch = "nvptx64", any(hopper, blackwell)), test))]
mod activation;
#[cfg(target_arch = "nvptx64")]
mod epilogue;
#[cfg(target_arch = "nvptx64")]
pub mod ptx;
#[cfg(all(target_arch = "nvptx64", hopper))]
mod rendezvous;
#[cfg(target_arch = "nvptx64")]
mod util;

pub mod blackwell;
pub mod hopper;

/// Declares a family's ladder: one module per version and `LADDER`, their specs in order.
macro_rules! ladder {
    ($($v:ident)*) => {
        $(pub mod $v;)*
        /// Every version of this family, v0 first.
        pub const LADDER: &[$crate::spec::KernelSpec] = &[$($v::SPEC),*];
    };
}
pub(crate) use ladder;

/// The ladder of `family`, v0 first.
pub fn ladder_of(family: spec::Family) -> &'static [spec::KernelSpec] {
    match family {
        spec::Family::Hopper => hopper::LADDER,
        spec::Family::Blackwell => blackwell::LADDER,
    }
}

/// Every GEMM kernel of every family: the ladders, then the library's other entries.
pub fn kernels() -> impl Iterator<Item = &'static spec::KernelSpec> {
    hopper::LADDER.iter().chain(hopper::v7::VARIANTS).chain(blackwell::LADDER).chain(blackwell::lib::ENTRIES)
}

#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // Built with -Cpanic=immediate-abort no panic path reaches here; trap if one ever does.
    unsafe { core::arch::asm!("trap;", options(noreturn)) }
}
