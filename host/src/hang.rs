//! The host side of the hang guard (the `hang-guard` feature; the device side and the design are
//! in [`hgemm_kernels::hang`]).
//!
//! With the feature on, [`Gemm::new`](crate::Gemm::new) allocates one [`HangReport`] in mapped
//! pinned memory and points the module's `HGEMM_HANG_REPORT` at it. A kernel whose mbarrier wait
//! or stream-K flag wait times out fills it in and traps; the next
//! [`Gemm::synchronize`](crate::Gemm::synchronize) (or launch) then fails with
//! [`Error::Hang`](crate::Error::Hang) carrying [`describe`]'s text instead of a bare launch
//! failure. After a trap the CUDA context is unusable: every later call
//! in the process fails, so a program (or test) that provokes one should end right after (the
//! handle's `launch_broken_pipeline` and `launch_unpublished_flag` provoke one on purpose).

pub use hgemm_kernels::hang::{HangReport, LIMIT_NS};

/// What a timed-out wait was waiting for, in one line.
pub fn describe(r: &HangReport) -> String {
    let what = if r.flag != 0 {
        format!("stream-K flag at global address {:#x} (in the call's workspace) was never published", r.flag)
    } else {
        format!(
            "mbarrier at dynamic shared memory offset {} (shared::cta address {:#x}) never completed its phase of parity {}",
            r.smem_offset, r.barrier, r.parity
        )
    };
    format!(
        "{what}; block ({}, {}), thread {}, cluster rank {}; gave up after {:.3} s (limit {} s); \
         the launch had {} threads per block and {} bytes of dynamic shared memory",
        r.block[0],
        r.block[1],
        r.thread,
        r.cluster_rank,
        r.waited_ns as f64 * 1e-9,
        LIMIT_NS / 1_000_000_000,
        r.threads,
        r.dynamic_smem,
    )
}

#[cfg(feature = "hang-guard")]
pub(crate) use guard::Record;

#[cfg(feature = "hang-guard")]
mod guard {
    use crate::error::{Error, Result};
    use cudarc::driver::{CudaContext, CudaModule, result, sys};
    use hgemm_kernels::hang::{HangReport, MAGIC};
    use std::sync::Arc;

    /// The pinned report a module's kernels write to when they give up.
    pub(crate) struct Record {
        host: *mut HangReport,
    }

    // SAFETY: the pointer is to pinned host memory owned by this value; the host only reads it.
    unsafe impl Send for Record {}
    unsafe impl Sync for Record {}

    impl Record {
        /// Allocate the report and point `module`'s `HGEMM_HANG_REPORT` at it.
        pub(crate) fn install(ctx: &Arc<CudaContext>, module: &Arc<CudaModule>) -> Result<Record> {
            let drv = |call| move |e| Error::driver(call, e);
            ctx.bind_to_thread().map_err(drv("cuCtxSetCurrent"))?;
            let size = std::mem::size_of::<HangReport>();
            // SAFETY: a fresh allocation, written before anything reads it.
            let host = unsafe { result::malloc_host(size, sys::CU_MEMHOSTALLOC_DEVICEMAP) }
                .map_err(drv("cuMemHostAlloc"))? as *mut HangReport;
            let record = Record { host };
            // SAFETY: `host` points at `size` bytes of pinned memory.
            unsafe { host.write_volatile(HangReport::default()) };
            let mut device: sys::CUdeviceptr = 0;
            // SAFETY: `host` was allocated with CU_MEMHOSTALLOC_DEVICEMAP.
            unsafe { sys::cuMemHostGetDevicePointer_v2(&mut device, host.cast(), 0) }
                .result()
                .map_err(drv("cuMemHostGetDevicePointer"))?;
            let stream = ctx.default_stream();
            let mut global = module.get_global("HGEMM_HANG_REPORT", &stream).map_err(drv("cuModuleGetGlobal"))?;
            // SAFETY: the kernels declare HGEMM_HANG_REPORT as one u64.
            let mut slot = unsafe { global.transmute_mut::<u64>(1) }.expect("HGEMM_HANG_REPORT holds a u64");
            stream.memcpy_htod(&[device], &mut slot).map_err(drv("cuMemcpyHtoD"))?;
            stream.synchronize().map_err(drv("cuStreamSynchronize"))?;
            Ok(record)
        }

        /// The report, if a kernel has completed one.
        pub(crate) fn read(&self) -> Option<HangReport> {
            // SAFETY: `host` is live; the device writes `magic` last, after a system-scope fence.
            let r = unsafe { self.host.read_volatile() };
            (r.magic == MAGIC).then_some(r)
        }
    }

    impl Drop for Record {
        fn drop(&mut self) {
            // After a trap the context is gone and this fails; there is nothing left to do then.
            // SAFETY: allocated by cuMemHostAlloc in `install`.
            let _ = unsafe { result::free_host(self.host.cast()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_barrier_phase_block_and_thread() {
        let r = HangReport {
            magic: hgemm_kernels::hang::MAGIC,
            barrier: 0x408,
            smem_offset: 8,
            parity: 1,
            flag: 0,
            block: [3, 1],
            thread: 130,
            cluster_rank: 1,
            threads: 384,
            dynamic_smem: 229472,
            waited_ns: 2_000_000_512,
        };
        let s = describe(&r);
        for part in [
            "offset 8",
            "0x408",
            "parity 1",
            "block (3, 1)",
            "thread 130",
            "cluster rank 1",
            "2.000 s",
            "384 threads",
            "229472 bytes",
        ] {
            assert!(s.contains(part), "{part:?} missing from {s}");
        }
        assert!(!s.contains("flag"), "{s}");
    }

    #[test]
    fn describes_a_flag_wait_by_its_address() {
        let r = HangReport {
            magic: hgemm_kernels::hang::MAGIC,
            flag: 0x7f00_0000_1040,
            block: [17, 0],
            thread: 128,
            threads: 384,
            waited_ns: 2_000_000_512,
            ..HangReport::default()
        };
        let s = describe(&r);
        for part in [
            "stream-K flag at global address 0x7f0000001040",
            "never published",
            "block (17, 0)",
            "thread 128",
            "384 threads",
        ] {
            assert!(s.contains(part), "{part:?} missing from {s}");
        }
        assert!(!s.contains("mbarrier"), "{s}");
    }
}
