//! Stream-K workspaces: one per stream that has run a split launch, and per stream of a capture
//! sequence that has captured one (held by its graph), made and cleared off the caller's
//! stream, freed when released, when their graph is gone, or with the handle.

use crate::error::{Error, Result};
use crate::graph::{self, Capture, RelaxedCapture, Released};
use cudarc::driver::{CudaStream, result, sys};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Which stream a stream-K workspace belongs to: its handle, and for the per-thread default stream
/// the thread. `CU_STREAM_PER_THREAD` (cudarc's `per_thread_stream`) is the one handle 0x2 on every
/// thread, but a different stream on each, whose launches may overlap (CUDA Runtime API, "Stream
/// synchronization behavior"); the legacy default stream (the null handle) is one stream for all.
/// Launches captured into a graph have workspaces of their own, one per stream of the capture
/// sequence (`capture`: its id): a graph's kernels run wherever and whenever it is launched, in
/// no stream's order, so they may share a workspace with nothing but the launches captured
/// beside them on the same stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct WorkspaceKey {
    stream: usize,
    thread: Option<std::thread::ThreadId>,
    capture: Option<u64>,
}

impl WorkspaceKey {
    const PER_THREAD: usize = 0x2;

    fn of(stream: &CudaStream, capture: Option<u64>) -> WorkspaceKey {
        let stream = stream.cu_stream() as usize;
        let thread = (stream == Self::PER_THREAD).then(|| std::thread::current().id());
        WorkspaceKey { stream, thread, capture }
    }
}

/// The workspaces in use, by stream.
pub(crate) type Map = HashMap<WorkspaceKey, u64>;

/// A `CUstream` created by the handle.
struct SideStream(sys::CUstream);

// SAFETY: a CUDA stream may be used from any thread (the driver API is thread-safe).
unsafe impl Send for SideStream {}
// SAFETY: as above; the handle only enqueues on it and waits for it.
unsafe impl Sync for SideStream {}

/// A handle's stream-K workspaces.
pub(crate) struct Workspaces {
    /// Bytes of each: enough for any kernel's largest grid.
    bytes: u64,
    /// One workspace per stream that has run a split launch, and per stream of a capture
    /// sequence that has captured one: launches on one stream run one after another, on two
    /// streams they may overlap. A stream's own is freed with the handle or by
    /// [`Workspaces::release`]; a capture's is held by its graph ([`graph::hold_in_graph`]).
    map: Mutex<Map>,
    /// Captures' workspaces whose graphs are gone, to be freed.
    released: Released,
    /// A stream of the handle's own, used for nothing but clearing new workspaces, so that no
    /// caller's stream (or graph being captured from it) gets that step.
    side: SideStream,
    /// Workspaces `release` took out of the map but could not wait for: freed with the handle.
    retired: Mutex<Vec<u64>>,
}

impl Workspaces {
    /// None yet, each `bytes` long when made; creates the side stream.
    pub(crate) fn new(bytes: u64) -> Result<Workspaces> {
        Ok(Workspaces {
            bytes,
            map: Mutex::new(HashMap::new()),
            released: Arc::new(Mutex::new(Vec::new())),
            side: SideStream(
                result::stream::create(result::stream::StreamKind::NonBlocking)
                    .map_err(|e| Error::driver("cuStreamCreate", e))?,
            ),
            retired: Mutex::new(Vec::new()),
        })
    }

    /// Bytes of one workspace.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The map, locked: a split launch holds it until it is enqueued, so that
    /// [`Workspaces::release`] finds every launch that uses a workspace already on its stream.
    pub(crate) fn lock(&self) -> MutexGuard<'_, Map> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The device address of the workspace for a split launch enqueued on `stream` now, whose
    /// capture state is `capture`: the stream's own, or, while the stream is being captured, one
    /// for this stream of the capture sequence, which its graph holds. Either is made on its
    /// first split launch ([`Workspaces::zeroed`]); `diagnose` is the handle's hang check.
    pub(crate) fn get(
        &self,
        map: &mut Map,
        stream: &CudaStream,
        capture: &Capture,
        diagnose: &dyn Fn(Error) -> Error,
    ) -> Result<u64> {
        // Keyed by the handle (and the thread, for the per-thread stream). A stream dropped while
        // its launches run keeps its resources until they finish (cuStreamDestroy), so a new
        // stream given the same handle cannot overlap a launch that still uses this workspace.
        let key = WorkspaceKey::of(stream, capture.active().then_some(capture.id));
        if let Some(&ptr) = map.get(&key) {
            return Ok(ptr);
        }
        self.free_released(map);
        let ptr = self.zeroed(diagnose)?;
        if capture.active() {
            graph::hold_in_graph(capture.graph, ptr, &self.released)?;
        }
        map.insert(key, ptr);
        Ok(ptr)
    }

    /// A new workspace, its flags and counters at 0 before this returns. Neither step is
    /// enqueued on the caller's stream, so a graph captured from it holds no allocation and no
    /// clearing of 17 MiB before each replay (the kernels leave the workspace at 0 when they
    /// finish).
    fn zeroed(&self, diagnose: &dyn Fn(Error) -> Error) -> Result<u64> {
        let bytes = self.bytes as usize;
        let _relaxed = RelaxedCapture::enter()?;
        // SAFETY: the context is current (the handle's `before_launch`); the memory is ours until
        // the handle is dropped, `release` or the end of the graph that holds it.
        let ptr = unsafe { result::malloc_sync(bytes) }.map_err(|e| diagnose(Error::driver("cuMemAlloc", e)))?;
        // SAFETY: `ptr` holds `bytes`; the side stream is the handle's, and only this function
        // uses it, under the workspaces' lock.
        let cleared = unsafe { result::memset_d8_async(ptr, 0, bytes, self.side.0) }
            .map_err(|e| Error::driver("cuMemsetD8Async", e))
            .and_then(|()| {
                unsafe { result::stream::synchronize(self.side.0) }.map_err(|e| Error::driver("cuStreamSynchronize", e))
            });
        if let Err(e) = cleared {
            // SAFETY: allocated above; the clearing failed, so nothing uses it.
            let _ = unsafe { result::free_sync(ptr) };
            return Err(diagnose(e));
        }
        Ok(ptr)
    }

    /// Free the workspaces of graphs that are gone (their launches have completed), and forget
    /// their captures' entries.
    fn free_released(&self, map: &mut Map) {
        let released = std::mem::take(&mut *self.released.lock().unwrap_or_else(|p| p.into_inner()));
        if released.is_empty() {
            return;
        }
        map.retain(|key, ptr| key.capture.is_none() || !released.contains(ptr));
        let _relaxed = RelaxedCapture::enter();
        for ptr in released {
            // SAFETY: allocated by `zeroed`; its graph and the graph's launches are done.
            let _ = unsafe { result::free_sync(ptr) };
        }
    }

    /// Free `stream`'s own workspace, if it has one, once `synchronize` has waited for the
    /// launches enqueued on it, and the workspaces of graphs destroyed since the last such
    /// chance (see [`Gemm::release_workspace`](crate::Gemm::release_workspace)). The stream must
    /// not be being captured; the context must be current.
    pub(crate) fn release(&self, stream: &CudaStream, synchronize: impl FnOnce() -> Result<()>) -> Result<()> {
        // Out of the map first: every launch that took this workspace was enqueued on `stream`
        // under the lock, so the wait below covers them all, and later ones allocate anew.
        let removed = {
            let mut map = self.lock();
            self.free_released(&mut map);
            map.remove(&WorkspaceKey::of(stream, None))
        };
        let Some(ptr) = removed else {
            return Ok(());
        };
        if let Err(e) = synchronize() {
            // Launches may still use it: freed with the handle, after the context's wait.
            self.retired.lock().unwrap_or_else(|p| p.into_inner()).push(ptr);
            return Err(e);
        }
        let _relaxed = RelaxedCapture::enter();
        // SAFETY: allocated by `get` in this context; nothing enqueued on the stream is left.
        unsafe { result::free_sync(ptr) }.map_err(|e| Error::driver("cuMemFree", e))
    }

    /// Free every workspace once `synchronized` has waited for the context (left alone if it
    /// fails), and destroy the side stream: the handle's drop, with its context current.
    pub(crate) fn free_all(&mut self, synchronized: impl FnOnce() -> bool) {
        let map = self.map.get_mut().unwrap_or_else(|p| p.into_inner());
        let retired = self.retired.get_mut().unwrap_or_else(|p| p.into_inner());
        let released = std::mem::take(&mut *self.released.lock().unwrap_or_else(|p| p.into_inner()));
        // Each once: a released workspace may still have its capture's entry.
        let all: std::collections::BTreeSet<u64> =
            map.values().chain(retired.iter()).chain(released.iter()).copied().collect();
        // Launches still running may use the workspaces; if the wait fails they are left alone.
        if !all.is_empty() && synchronized() {
            let _relaxed = RelaxedCapture::enter();
            for ptr in all {
                // SAFETY: allocated by `zeroed` in this context, no longer used (a graph still
                // holding one is not launched after the handle is gone).
                let _ = unsafe { result::free_sync(ptr) };
            }
        }
        // SAFETY: created in `new`; every clearing enqueued on it was waited for.
        let _ = unsafe { result::stream::destroy(self.side.0) };
    }
}
