//! The hang guard: with `--cfg hang_guard` (the host crate's `hang-guard` feature) every mbarrier
//! wait and every stream-K flag wait gives up after [`LIMIT_NS`] and reports what it was waiting
//! for, instead of spinning forever on a barrier or flag that a broken kernel will never complete.
//!
//! The host allocates one [`HangReport`] in mapped pinned memory and writes its device address
//! into the module global `HGEMM_HANG_REPORT` right after loading the module. The first thread
//! to time out claims the report (an atomic on the module global `HGEMM_HANG_CLAIM`), fills it
//! in, makes it visible to the host (`fence.sc.sys`), sets [`HangReport::magic`] last, and
//! executes `trap`. Threads that time out after it wait until the report is complete and trap
//! too, so no trap can cut the first report short. The host sees the launch fail at its next
//! synchronization and reads the report.
//!
//! A trap leaves the CUDA context unusable: every later call in the process fails. The claim is
//! never released, so a module reports its first hang only, which is all a dead context allows.
//!
//! mbarrier waits and stream-K's flag waits (`epilogue::Partial::wait`, a spin on global memory)
//! are bounded. `barrier.sync` and the cluster barrier are hardware barriers that cannot be
//! polled; a kernel stuck there still hangs.
//!
//! The layout of [`HangReport`] is shared by the device code and the host, like
//! [`crate::args::GemmArgs`].

/// How long one mbarrier or flag wait may take, in nanoseconds of `%globaltimer`, before the
/// guard gives up: 2 s. A healthy kernel's longest wait is one tile's mainloop or epilogue
/// (microseconds to a few milliseconds), so only a broken pipeline gets near it; but a kernel
/// slowed by a tool that instruments every instruction (compute-sanitizer), or kept off the GPU
/// by time slicing, can time out falsely. Do not run hang-guard builds under such tools.
pub const LIMIT_NS: u64 = 2_000_000_000;

/// [`HangReport::magic`] once the report is complete ("HANG").
pub const MAGIC: u32 = 0x4841_4e47;

/// What the first timed-out wait saw.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HangReport {
    /// [`MAGIC`] once every other field is written; anything else means no report.
    pub magic: u32,
    /// The barrier's shared::cta address (0 for a flag wait).
    pub barrier: u32,
    /// The barrier's offset from the start of the dynamic shared memory (the offsets of
    /// [`crate::spec::SmemPlan::barrier`]).
    pub smem_offset: u32,
    /// The parity of the phase the thread was waiting to see complete.
    pub parity: u32,
    /// For a stream-K flag wait, the flag's global address (in the call's workspace); 0 for an
    /// mbarrier wait.
    pub flag: u64,
    /// `%ctaid.x`, `%ctaid.y` of the waiting thread's CTA.
    pub block: [u32; 2],
    /// `%tid.x` of the waiting thread.
    pub thread: u32,
    /// `%cluster_ctarank` of its CTA.
    pub cluster_rank: u32,
    /// Threads per CTA and dynamic shared memory of the launch, which tell the kernel apart.
    pub threads: u32,
    pub dynamic_smem: u32,
    /// How long the wait had lasted when it gave up.
    pub waited_ns: u64,
}

#[cfg(all(target_arch = "nvptx64", hang_guard))]
pub use device::{spin_flag_bounded, wait_bounded};

#[cfg(all(target_arch = "nvptx64", hang_guard))]
mod device {
    use super::{HangReport, LIMIT_NS, MAGIC};
    use crate::ptx::mbarrier::{self, Barrier};
    use crate::ptx::{atom, fence, global, smem, sreg};

    /// Device address of the host's [`HangReport`] (mapped pinned memory); 0 until the host sets
    /// it, and then nothing is reported but the trap.
    #[unsafe(no_mangle)]
    static mut HGEMM_HANG_REPORT: u64 = 0;

    /// 0: no report yet; 1: a thread is writing it; 2: written.
    #[unsafe(no_mangle)]
    static mut HGEMM_HANG_CLAIM: u32 = 0;

    /// [`mbarrier::wait`] after its first try failed: keep trying until [`LIMIT_NS`] has passed,
    /// then report and trap.
    #[inline(always)]
    pub fn wait_bounded(bar: Barrier, parity: u32) {
        spin_bounded(|| mbarrier::try_wait_parity(bar, parity), bar, parity, 0);
    }

    /// Spin until the u32 at global address `flag` is nonzero (`ld.acquire.gpu`), for at most
    /// [`LIMIT_NS`]; then report the flag and trap.
    #[inline(always)]
    pub fn spin_flag_bounded(flag: u64) {
        spin_bounded(|| global::ld_acquire_gpu_u32(flag) != 0, Barrier(0), 0, flag);
    }

    /// Poll `done` until it holds or [`LIMIT_NS`] has passed; then [`give_up`] with the rest.
    #[inline(always)]
    fn spin_bounded(mut done: impl FnMut() -> bool, bar: Barrier, parity: u32, flag: u64) {
        let start = sreg::globaltimer();
        while !done() {
            let waited = sreg::globaltimer().wrapping_sub(start);
            if waited > LIMIT_NS {
                give_up(bar, parity, flag, waited);
            }
        }
    }

    /// `bar` and `parity` for an mbarrier wait, `flag` (nonzero) for a flag wait.
    #[inline(always)]
    fn give_up(bar: Barrier, parity: u32, flag: u64, waited_ns: u64) -> ! {
        let claim = &raw mut HGEMM_HANG_CLAIM;
        if atom::cas_b32(claim as u64, 0, 1) == 0 {
            // SAFETY: the host points HGEMM_HANG_REPORT at a live HangReport (or leaves it 0),
            // and only the thread that won the claim writes it.
            unsafe {
                let at = (&raw const HGEMM_HANG_REPORT).read_volatile() as *mut HangReport;
                if !at.is_null() {
                    // Field by field: a whole-struct volatile write would build the struct in
                    // local memory first.
                    (&raw mut (*at).barrier).write_volatile(bar.0);
                    (&raw mut (*at).smem_offset).write_volatile(if flag == 0 {
                        bar.0.wrapping_sub(smem::base())
                    } else {
                        0
                    });
                    (&raw mut (*at).parity).write_volatile(parity);
                    (&raw mut (*at).flag).write_volatile(flag);
                    (&raw mut (*at).block[0]).write_volatile(sreg::ctaid_x());
                    (&raw mut (*at).block[1]).write_volatile(sreg::ctaid_y());
                    (&raw mut (*at).thread).write_volatile(sreg::tid_x());
                    (&raw mut (*at).cluster_rank).write_volatile(sreg::cluster_ctarank());
                    (&raw mut (*at).threads).write_volatile(sreg::ntid_x());
                    (&raw mut (*at).dynamic_smem).write_volatile(sreg::dynamic_smem_size());
                    (&raw mut (*at).waited_ns).write_volatile(waited_ns);
                    fence::sc_sys();
                    (&raw mut (*at).magic).write_volatile(MAGIC);
                    fence::sc_sys();
                }
                claim.write_volatile(2);
            }
        } else {
            // SAFETY: a plain read of a module global.
            while unsafe { claim.read_volatile() } != 2 {}
        }
        crate::ptx::trap()
    }
}
