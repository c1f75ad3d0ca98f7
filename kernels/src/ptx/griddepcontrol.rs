//! Programmatic dependent launch, `griddepcontrol` (PTX ISA "Parallel Synchronization and
//! Communication Instructions: griddepcontrol", sm_90+). With the launch attribute
//! `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`, a kernel may be scheduled while the
//! previous kernel in its stream is still running; these two instructions are how the kernels
//! on either side of that overlap keep it correct. Without the attribute both are harmless.
use core::arch::asm;

/// `griddepcontrol.launch_dependents;` — the next grid in the stream may be scheduled once every
/// CTA of this grid has executed this (or exited). It says nothing about this grid's memory:
/// the next grid still waits with [`wait`] before it reads what this one writes.
#[inline(always)]
pub fn launch_dependents() {
    unsafe { asm!("griddepcontrol.launch_dependents;", options(nostack)) };
}

/// `griddepcontrol.wait;` — wait until the grids this one depends on have completed and their
/// memory operations are visible to this grid. Every thread that touches global memory calls it
/// first.
#[inline(always)]
pub fn wait() {
    unsafe { asm!("griddepcontrol.wait;", options(nostack)) };
}
