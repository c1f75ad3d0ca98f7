//! Graph-capture bookkeeping: whether a stream is being captured and into which graph, the
//! capture mode that lets a workspace be allocated during a capture, and the CUDA user object
//! through which a graph holds the workspace its captured launches use.

use crate::error::{Error, Result};
use cudarc::driver::{CudaStream, result, sys};
use std::sync::{Arc, Mutex};

/// Workspaces whose graphs are gone: the destructor of the CUDA user object each graph holds
/// ([`release_from_graph`]) puts the address here, and the handle frees it at its next chance
/// ([`Workspaces::free_released`](crate::workspace::Workspaces)), since the destructor may not
/// call CUDA.
pub(crate) type Released = Arc<Mutex<Vec<u64>>>;

/// What a graph's user object holds: a workspace, and where to put it when the graph is gone.
struct GraphHold {
    ptr: u64,
    released: Released,
}

/// The destructor of a graph's user object: CUDA runs it once the graph (and every executable
/// graph made from it) is destroyed and their pending launches have completed (CUDA C++
/// Programming Guide, "Graph User Objects"), on a thread of its own.
unsafe extern "C" fn release_from_graph(hold: *mut std::ffi::c_void) {
    // SAFETY: `hold` is the `Box<GraphHold>` that `hold_in_graph` gave the user object, whose
    // destructor runs once.
    let hold = unsafe { Box::from_raw(hold as *mut GraphHold) };
    hold.released.lock().unwrap_or_else(|p| p.into_inner()).push(hold.ptr);
}

/// Give the graph being captured a CUDA user object that holds workspace `ptr`: when the graph
/// is gone, the workspace goes to `released`. On an error the workspace is freed (or, once the
/// user object exists, released through it).
pub(crate) fn hold_in_graph(graph: sys::CUgraph, ptr: u64, released: &Released) -> Result<()> {
    let hold = Box::into_raw(Box::new(GraphHold { ptr, released: released.clone() }));
    let mut object = std::ptr::null_mut();
    let flags = sys::CUuserObject_flags::CU_USER_OBJECT_NO_DESTRUCTOR_SYNC as u32;
    // SAFETY: the destructor takes back `hold`; CUDA requires the flag given.
    let created = unsafe { sys::cuUserObjectCreate(&mut object, hold as *mut _, Some(release_from_graph), 1, flags) };
    if let Err(e) = created.result() {
        // SAFETY: the user object was not made, so `hold` is still ours; nothing uses `ptr`.
        drop(unsafe { Box::from_raw(hold) });
        let _relaxed = RelaxedCapture::enter();
        let _ = unsafe { result::free_sync(ptr) };
        return Err(Error::driver("cuUserObjectCreate", e));
    }
    // The one reference moves to the graph (and from it to each executable graph made of it).
    let moved = sys::CUuserObjectRetain_flags::CU_GRAPH_USER_OBJECT_MOVE as u32;
    // SAFETY: `graph` is the graph being captured, to which CUDA allows adding user objects.
    if let Err(e) = unsafe { sys::cuGraphRetainUserObject(graph, object, 1, moved) }.result() {
        // The reference is still ours: releasing it runs the destructor, which releases `ptr`.
        // SAFETY: the one reference `cuUserObjectCreate` gave us.
        let _ = unsafe { sys::cuUserObjectRelease(object, 1) };
        return Err(Error::driver("cuGraphRetainUserObject", e));
    }
    Ok(())
}

/// The calling thread in the `RELAXED` stream-capture mode until dropped, then back in its own
/// (CUDA driver API, `cuThreadExchangeStreamCaptureMode`): while any thread captures a graph in
/// the default (global) mode, every thread is refused `cuMemAlloc` and `cuMemFree`, which a
/// workspace that outlives every graph replay may safely take.
pub(crate) struct RelaxedCapture(sys::CUstreamCaptureMode);

impl RelaxedCapture {
    pub(crate) fn enter() -> Result<RelaxedCapture> {
        let mut mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
        // SAFETY: writes the thread's previous mode into `mode`.
        unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut mode) }
            .result()
            .map_err(|e| Error::driver("cuThreadExchangeStreamCaptureMode", e))?;
        Ok(RelaxedCapture(mode))
    }
}

impl Drop for RelaxedCapture {
    fn drop(&mut self) {
        // SAFETY: as in `enter`; restores the mode `enter` replaced.
        let _ = unsafe { sys::cuThreadExchangeStreamCaptureMode(&mut self.0) };
    }
}

/// A stream's capture state (`cuStreamGetCaptureInfo`).
pub(crate) struct Capture {
    status: sys::CUstreamCaptureStatus,
    /// The capture sequence's id, unique in the process, and the graph it captures into.
    pub(crate) id: u64,
    pub(crate) graph: sys::CUgraph,
}

impl Capture {
    /// Whether work enqueued on `stream` now is captured into a graph, and into which; the
    /// stream's context must be current. Driver errors go through `diagnose` (the handle's
    /// hang check).
    pub(crate) fn of(stream: &CudaStream, diagnose: impl FnOnce(Error) -> Error) -> Result<Capture> {
        let mut c = Capture {
            status: sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE,
            id: 0,
            graph: std::ptr::null_mut(),
        };
        // SAFETY: a query of a stream of this context; the dependencies and edges are not asked for.
        let queried = unsafe {
            sys::cuStreamGetCaptureInfo_v3(
                stream.cu_stream(),
                &mut c.status,
                &mut c.id,
                &mut c.graph,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
        match queried {
            sys::CUresult::CUDA_SUCCESS => {}
            // The legacy default stream, while a stream that synchronizes with it is captured.
            sys::CUresult::CUDA_ERROR_STREAM_CAPTURE_IMPLICIT => {
                return Err(Error::Graph(
                    "the legacy default stream cannot be used while another stream of the context is being captured"
                        .into(),
                ));
            }
            e => return Err(diagnose(Error::driver("cuStreamGetCaptureInfo", e.result().unwrap_err()))),
        }
        Ok(c)
    }

    /// Work enqueued now goes into `graph` (an invalidated capture takes none).
    pub(crate) fn active(&self) -> bool {
        self.status == sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE
    }

    /// A capture has begun and not ended, valid or not: waiting for the stream is refused.
    pub(crate) fn under_way(&self) -> bool {
        self.status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE
    }
}
