//! The handle: one per CUDA context, holding the loaded module and its kernels.

use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::launch::{self, LaunchShape};
use crate::op::{self, GemmOp};
use crate::tune::{self, Choice, TuneOptions, TuneTable, Tuning};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, DevicePtr, DevicePtrMut, result, sys};
use cudarc::nvrtc::Ptx;
use half::bf16;
use hgemm_kernels::hopper::ceiling::CeilingSpec;
use hgemm_kernels::spec::{Family, Grid, KernelSpec};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

/// A checked and encoded call, from [`Gemm::prepare`].
pub enum Prepared {
    /// M, N or the batch is zero: nothing to do.
    Nothing,
    /// K is zero on a kernel without beta: fill C (dense, `len` elements) with zeros.
    Zero {
        /// C's device address.
        ptr: u64,
        /// Elements of C.
        len: usize,
    },
    /// One kernel launch.
    Launch {
        /// The kernel it runs.
        kernel: &'static KernelSpec,
        /// Its function handle.
        func: sys::CUfunction,
        /// Grid, block, cluster, shared memory.
        shape: LaunchShape,
        /// Encoded tensor maps of A, B and C (and A's and B's edge maps, for kernels with them).
        maps: Box<[sys::CUtensorMap]>,
        /// Its scalar arguments.
        args: hgemm_kernels::args::GemmArgs,
    },
}

/// Which stream a stream-K workspace belongs to: its handle, and for the per-thread default stream
/// the thread. `CU_STREAM_PER_THREAD` (cudarc's `per_thread_stream`) is the one handle 0x2 on every
/// thread, but a different stream on each, whose launches may overlap (CUDA Runtime API, "Stream
/// synchronization behavior"); the legacy default stream (the null handle) is one stream for all.
/// Launches captured into a graph have workspaces of their own, one per stream of the capture
/// sequence (`capture`: its id): a graph's kernels run wherever and whenever it is launched, in
/// no stream's order, so they may share a workspace with nothing but the launches captured
/// beside them on the same stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct WorkspaceKey {
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

/// Workspaces whose graphs are gone: the destructor of the CUDA user object each graph holds
/// ([`release_from_graph`]) puts the address here, and the handle frees it at its next chance
/// ([`Gemm::free_released`]), since the destructor may not call CUDA.
type Released = Arc<Mutex<Vec<u64>>>;

/// What a graph's user object holds: a workspace, and where to put it when the graph is gone.
struct GraphHold {
    ptr: u64,
    released: Released,
}

/// The destructor of a graph's user object: CUDA runs it once the graph (and every executable
/// graph made from it) is destroyed and their pending launches have completed (CUDA C++
/// Programming Guide, "Graph User Objects"), on a thread of its own.
unsafe extern "C" fn release_from_graph(hold: *mut std::ffi::c_void) {
    // SAFETY: `hold` is the `Box<GraphHold>` that `Gemm::hold_in_graph` gave the user object,
    // whose destructor runs once.
    let hold = unsafe { Box::from_raw(hold as *mut GraphHold) };
    hold.released.lock().unwrap_or_else(|p| p.into_inner()).push(hold.ptr);
}

/// A `CUstream` created by the handle.
struct SideStream(sys::CUstream);

// SAFETY: a CUDA stream may be used from any thread (the driver API is thread-safe).
unsafe impl Send for SideStream {}
// SAFETY: as above; the handle only enqueues on it and waits for it.
unsafe impl Sync for SideStream {}

/// The calling thread in the `RELAXED` stream-capture mode until dropped, then back in its own
/// (CUDA driver API, `cuThreadExchangeStreamCaptureMode`): while any thread captures a graph in
/// the default (global) mode, every thread is refused `cuMemAlloc` and `cuMemFree`, which a
/// workspace that outlives every graph replay may safely take.
struct RelaxedCapture(sys::CUstreamCaptureMode);

impl RelaxedCapture {
    fn enter() -> Result<RelaxedCapture> {
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
struct Capture {
    status: sys::CUstreamCaptureStatus,
    /// The capture sequence's id, unique in the process, and the graph it captures into.
    id: u64,
    graph: sys::CUgraph,
}

impl Capture {
    /// Work enqueued now goes into `graph` (an invalidated capture takes none).
    fn active(&self) -> bool {
        self.status == sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE
    }

    /// A capture has begun and not ended, valid or not: waiting for the stream is refused.
    fn under_way(&self) -> bool {
        self.status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE
    }
}

/// A loaded kernel and what its launches need that does not change per call.
struct Loaded {
    spec: &'static KernelSpec,
    func: CudaFunction,
    /// Clusters that fit on the device at once (persistent grids are sized by it).
    max_clusters: u32,
}

/// The hgemm handle for one CUDA context: loads the module of the device's kernel family once;
/// cheap to share (`Send + Sync`), every call enqueues on the caller's stream.
pub struct Gemm {
    ctx: Arc<CudaContext>,
    info: DeviceInfo,
    family: Family,
    kernels: Vec<Loaded>,
    /// Bytes of the stream-K workspace: enough for any kernel's largest grid.
    workspace_bytes: u64,
    /// One workspace per stream that has run a split launch, and per stream of a capture
    /// sequence that has captured one: launches on one stream run one after another, on two
    /// streams they may overlap. A stream's own is freed with the handle or by
    /// [`Gemm::release_workspace`]; a capture's is held by its graph ([`GraphHold`]).
    workspaces: Mutex<HashMap<WorkspaceKey, u64>>,
    /// Captures' workspaces whose graphs are gone, to be freed.
    released: Released,
    /// A stream of the handle's own, used for nothing but clearing new workspaces, so that no
    /// caller's stream (or graph being captured from it) gets that step.
    side: SideStream,
    /// Workspaces `release_workspace` took out of the map but could not wait for: freed with the
    /// handle.
    retired: Mutex<Vec<u64>>,
    /// Choices measured by [`Gemm::tune`] or loaded with [`Gemm::load_tuning`], which `auto`
    /// takes before its price.
    tuning: RwLock<TuneTable>,
    /// `auto`'s priced choices by call, so that a call like an earlier one skips the price.
    prices: tune::PriceCache,
    fill_random: CudaFunction,
    fill_u16: CudaFunction,
    compare: CudaFunction,
    #[cfg(feature = "hang-guard")]
    hang: HangGuard,
    module: Arc<CudaModule>,
    /// The SASS target of the embedded cubin the module came from; `None` where it is the PTX.
    cubin: Option<&'static str>,
}

/// The device's kernels: its embedded cubin where there is one and the driver takes it (a driver
/// older than the ptxas that made it may not), else the family's PTX, which the driver
/// JIT-compiles or takes from its cache. Returns the cubin's SASS target if one was loaded.
fn load_module(
    ctx: &Arc<CudaContext>,
    info: &DeviceInfo,
    family: Family,
) -> Result<(Arc<CudaModule>, Option<&'static str>)> {
    if let Some((arch, bytes)) = crate::ptx::cubin(info.major, info.minor)
        && let Ok(module) = ctx.load_module(Ptx::from_binary(bytes.to_vec()))
    {
        return Ok((module, Some(arch)));
    }
    let module =
        ctx.load_module(Ptx::from_src(crate::ptx::module(family))).map_err(|e| Error::driver("cuModuleLoadData", e))?;
    Ok((module, None))
}

/// What the `hang-guard` build keeps to turn a trapped launch into [`Error::Hang`].
#[cfg(feature = "hang-guard")]
struct HangGuard {
    record: crate::hang::Record,
    /// The entry with mbarrier waits this handle launched last: the one a report most likely
    /// comes from (with several streams in flight it may be another one running at the time).
    last_launch: std::sync::Mutex<&'static str>,
    test_kernel: CudaFunction,
    flag_test_kernel: CudaFunction,
}

impl Gemm {
    /// Load the kernels for the device of `ctx`. Fails with [`Error::UnsupportedDevice`] on a GPU
    /// hgemm has no kernels for, and with [`Error::SharedMemory`] if a kernel cannot get the
    /// shared memory it needs.
    pub fn new(ctx: Arc<CudaContext>) -> Result<Gemm> {
        let info = DeviceInfo::query(&ctx)?;
        let family = info.family()?;
        let (module, cubin) = load_module(&ctx, &info, family)?;
        let load = |name: &str| module.load_function(name).map_err(|e| Error::driver("cuModuleGetFunction", e));
        let mut kernels = Vec::new();
        for spec in hgemm_kernels::kernels().filter(|s| s.family == family) {
            if spec.smem_bytes > info.smem_optin {
                return Err(Error::SharedMemory {
                    kernel: spec.name,
                    needed: spec.smem_bytes,
                    available: info.smem_optin,
                });
            }
            let func = load(spec.name)?;
            func.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                spec.smem_bytes as i32,
            )
            .map_err(|e| Error::driver("cuFuncSetAttribute", e))?;
            let max_clusters = max_active_clusters(&func, spec, &info)?;
            kernels.push(Loaded { spec, func, max_clusters });
        }
        // Enough for the largest grid any stream-K kernel is launched with.
        let workspace_bytes = kernels
            .iter()
            .filter_map(|l| {
                let ctas = launch::persistent_clusters(l.spec, l.max_clusters) * l.spec.cluster;
                l.spec.stream_k.map(|s| hgemm_kernels::sched::Workspace { partial_bytes: s.partial_bytes }.bytes(ctas))
            })
            .max()
            .unwrap_or(0);
        let tuning = RwLock::new(TuneTable::new(family, &info.name, info.sms));
        Ok(Gemm {
            fill_random: load("hgemm_fill_random_bf16")?,
            fill_u16: load("hgemm_fill_u16")?,
            compare: load("hgemm_compare_bf16")?,
            #[cfg(feature = "hang-guard")]
            hang: HangGuard {
                record: crate::hang::Record::install(&ctx, &module)?,
                last_launch: std::sync::Mutex::new("none"),
                test_kernel: load("hgemm_hang_test")?,
                flag_test_kernel: load("hgemm_hang_flag_test")?,
            },
            ctx,
            info,
            family,
            kernels,
            workspace_bytes,
            workspaces: Mutex::new(HashMap::new()),
            released: Arc::new(Mutex::new(Vec::new())),
            retired: Mutex::new(Vec::new()),
            tuning,
            prices: tune::PriceCache::new(),
            module,
            cubin,
            // Last, so that no failure above leaves it behind.
            side: SideStream(
                result::stream::create(result::stream::StreamKind::NonBlocking)
                    .map_err(|e| Error::driver("cuStreamCreate", e))?,
            ),
        })
    }

    /// The context the kernels are loaded in.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The device's properties.
    pub fn device(&self) -> &DeviceInfo {
        &self.info
    }

    /// The kernel family this device runs.
    pub fn family(&self) -> Family {
        self.family
    }

    /// The SASS target (`sm_90a`, `sm_100a`, `sm_103a`) of the embedded cubin the kernels were
    /// loaded from, or `None` where the driver compiled the family's PTX instead (a device with
    /// no cubin, a driver that refused it, or the `hang-guard` build).
    pub fn cubin(&self) -> Option<&'static str> {
        self.cubin
    }

    /// The kernels this device runs, v0 first.
    pub fn kernels(&self) -> impl Iterator<Item = &'static KernelSpec> + '_ {
        self.kernels.iter().map(|k| k.spec)
    }

    /// The ladder kernel of this family with version `v`.
    pub fn kernel(&self, version: u32) -> Result<&'static KernelSpec> {
        self.ladder()
            .find(|k| k.version == version)
            .ok_or_else(|| Error::UnknownKernel(format!("{} v{version}", self.family.name())))
    }

    /// The family's ladder, v0 first (a subset of [`Gemm::kernels`]).
    pub fn ladder(&self) -> impl Iterator<Item = &'static KernelSpec> + '_ {
        hgemm_kernels::ladder_of(self.family).iter()
    }

    /// C = A·Bᵀ: A is M×K, B is N×K, C is M×N, all row-major bf16 and dense, on `stream`, with
    /// the kernel [`Gemm::gemm`] picks. Shorthand for `gemm(stream, &GemmOp::new(m, n, k), …)`.
    #[allow(clippy::too_many_arguments)]
    pub fn matmul<A, B, C>(
        &self,
        stream: &CudaStream,
        a: &A,
        b: &B,
        c: &mut C,
        m: usize,
        n: usize,
        k: usize,
    ) -> Result<()>
    where
        A: DevicePtr<bf16>,
        B: DevicePtr<bf16>,
        C: DevicePtrMut<bf16>,
    {
        self.gemm(stream, &GemmOp::new(m, n, k), a, b, c)
    }

    /// [`Gemm::matmul`] with a chosen kernel (one of [`Gemm::kernels`]), for study and benchmarks.
    #[allow(clippy::too_many_arguments)]
    pub fn matmul_with<A, B, C>(
        &self,
        kernel: &KernelSpec,
        stream: &CudaStream,
        a: &A,
        b: &B,
        c: &mut C,
        m: usize,
        n: usize,
        k: usize,
    ) -> Result<()>
    where
        A: DevicePtr<bf16>,
        B: DevicePtr<bf16>,
        C: DevicePtrMut<bf16>,
    {
        self.gemm_with(kernel, stream, &GemmOp::new(m, n, k), a, b, c)
    }

    /// C = alpha·A·B + beta·C as `op` describes, enqueued on `stream`; the kernel is the fastest
    /// measured one of this device's family that reads A and B in `op`'s storage orders. Every
    /// check runs before anything is enqueued; nothing synchronizes the host, except that a
    /// stream's first call split by K waits for its new workspace to be cleared.
    pub fn gemm<A, B, C>(&self, stream: &CudaStream, op: &GemmOp, a: &A, b: &B, c: &mut C) -> Result<()>
    where
        A: DevicePtr<bf16>,
        B: DevicePtr<bf16>,
        C: DevicePtrMut<bf16>,
    {
        self.run(None, stream, op, a, b, c)
    }

    /// [`Gemm::gemm`] with a pinned kernel; [`Error::Unsupported`] if it cannot compute `op`
    /// (the ladder's v0–v6 compute only the dense C = A·Bᵀ).
    pub fn gemm_with<A, B, C>(
        &self,
        kernel: &KernelSpec,
        stream: &CudaStream,
        op: &GemmOp,
        a: &A,
        b: &B,
        c: &mut C,
    ) -> Result<()>
    where
        A: DevicePtr<bf16>,
        B: DevicePtr<bf16>,
        C: DevicePtrMut<bf16>,
    {
        self.run(Some(kernel), stream, op, a, b, c)
    }

    /// The kernel `gemm` would run for `op` (`None` if no kernel of this family reads its layout).
    pub fn choose(&self, op: &GemmOp) -> Option<&'static KernelSpec> {
        self.choice(op).map(|c| c.kernel)
    }

    /// What `gemm` runs for `op`: the tuned choice for its shape ([`Gemm::tune`]) if there is
    /// one, else [`Gemm::priced`].
    pub fn choice(&self, op: &GemmOp) -> Option<Choice> {
        self.choice_at(op, 0)
    }

    /// What `gemm` runs for `op` with C at device address `c` ([`tune::pick`]): the tuned choice
    /// where its entry can write this C, else what `auto`'s price picks among those that can.
    pub fn choice_at(&self, op: &GemmOp, c: u64) -> Option<Choice> {
        tune::pick_with(self.tuned(op), op, c, |col_major_writable| {
            self.prices
                .get(op, col_major_writable, || tune::priced_for(self.kernels(), op, self.info.sms, col_major_writable))
        })
    }

    /// What `auto`'s price picks for `op` ([`op::choose`]), whatever is tuned.
    pub fn priced(&self, op: &GemmOp) -> Option<Choice> {
        Choice::priced(self.kernels(), op, self.info.sms)
    }

    fn tuned(&self, op: &GemmOp) -> Option<Choice> {
        self.tuning.read().unwrap_or_else(|p| p.into_inner()).get(op)
    }

    /// Time the kernels `auto` weighs for `op`'s shape on this device, on buffers of its own
    /// (nothing of the caller's is read or written), and from now on run the fastest for every
    /// call with the same [`TuneKey`](crate::tune::TuneKey): sizes, storage orders, epilogue
    /// class and whether splitting is allowed. With the default [`TuneOptions`], 2–3 seconds a
    /// shape; it synchronizes `stream`. A candidate whose result disagrees with `auto`'s pick
    /// is an [`Error::Tuning`] (a bug to report), never a choice. The tuned kernel's result may
    /// differ from the untuned one's in the last bits (another order of the same sums); it is
    /// reproducible for a given table.
    pub fn tune(&self, stream: &Arc<CudaStream>, op: &GemmOp) -> Result<Tuning> {
        self.tune_with(stream, op, &TuneOptions::default())
    }

    /// [`Gemm::tune`] with other samples, candidates or threshold.
    pub fn tune_with(&self, stream: &Arc<CudaStream>, op: &GemmOp, opts: &TuneOptions) -> Result<Tuning> {
        if self.capture(stream)?.under_way() {
            return Err(Error::Graph(
                "tuning times kernels and waits for them, which a stream being captured cannot".into(),
            ));
        }
        let tuning = tune::measure(self, stream, op, opts)?;
        self.tuning.write().unwrap_or_else(|p| p.into_inner()).insert(op, tuning.chosen)?;
        Ok(tuning)
    }

    /// The tuned choices ([`TuneTable::to_text`] saves them).
    pub fn tuning(&self) -> TuneTable {
        self.tuning.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Add the choices of a saved table ([`TuneTable::to_text`]); the table must have been
    /// measured on a device of the same name and SM count, and every line must parse and name a
    /// kernel of this build that computes its shape, or nothing is added ([`Error::Tuning`]).
    /// Returns how many choices the text held.
    pub fn load_tuning(&self, text: &str) -> Result<usize> {
        let table = TuneTable::parse(text, self.family, &self.info.name, self.info.sms)?;
        let n = table.len();
        self.tuning.write().unwrap_or_else(|p| p.into_inner()).merge(table)?;
        Ok(n)
    }

    /// Forget every tuned choice: `auto` runs what its price picks.
    pub fn clear_tuning(&self) {
        self.tuning.write().unwrap_or_else(|p| p.into_inner()).clear();
    }

    fn run<A, B, C>(
        &self,
        kernel: Option<&KernelSpec>,
        stream: &CudaStream,
        op: &GemmOp,
        a: &A,
        b: &B,
        c: &mut C,
    ) -> Result<()>
    where
        A: DevicePtr<bf16>,
        B: DevicePtr<bf16>,
        C: DevicePtrMut<bf16>,
    {
        if !op.validate(a.len(), b.len(), c.len())? {
            return Ok(());
        }
        // The guards record the buffers' use on `stream` when dropped: after the launch.
        let (pa, _ga) = a.device_ptr(stream);
        let (pb, _gb) = b.device_ptr(stream);
        let (pc, _gc) = c.device_ptr_mut(stream);
        match self.prepare_raw(kernel, op, pa, pb, pc)? {
            Prepared::Nothing => Ok(()),
            Prepared::Zero { ptr, len } => self.fill_raw(stream, ptr, len, 0),
            // SAFETY: prepared from the buffers validated above, alive until the guards drop.
            p @ Prepared::Launch { .. } => unsafe { self.launch_prepared(&p, stream) },
        }
    }

    /// Validate `op` on these buffers and encode its launch once, for callers that launch the
    /// same call many times (benchmarks, fixed shapes in a loop): [`Gemm::launch_prepared`]
    /// then skips the checks and the tensor-map encoding. `kernel` pins one; `None` is automatic.
    pub fn prepare<A, B, C>(
        &self,
        kernel: Option<&KernelSpec>,
        stream: &CudaStream,
        op: &GemmOp,
        a: &A,
        b: &B,
        c: &mut C,
    ) -> Result<Prepared>
    where
        A: DevicePtr<bf16>,
        B: DevicePtr<bf16>,
        C: DevicePtrMut<bf16>,
    {
        if !op.validate(a.len(), b.len(), c.len())? {
            return Ok(Prepared::Nothing);
        }
        let (pa, _ga) = a.device_ptr(stream);
        let (pb, _gb) = b.device_ptr(stream);
        let (pc, _gc) = c.device_ptr_mut(stream);
        self.prepare_raw(kernel, op, pa, pb, pc)
    }

    /// Enqueue a [`Prepared`] call on `stream`.
    ///
    /// # Safety
    /// The buffers it was prepared with must still be allocated, and nothing may use them on
    /// another stream meanwhile: unlike [`Gemm::gemm`], this does not tell cudarc's stream
    /// tracking that they are in use.
    pub unsafe fn launch_prepared(&self, prepared: &Prepared, stream: &CudaStream) -> Result<()> {
        match prepared {
            Prepared::Nothing => Ok(()),
            Prepared::Zero { ptr, len } => self.fill_raw(stream, *ptr, *len, 0),
            Prepared::Launch { kernel, func, shape, maps, args } => {
                self.before_launch(Some(kernel.name))?;
                let mut args = *args;
                // A split launch holds the workspaces' lock until it is enqueued, so that
                // `release_workspace` finds every launch that uses a workspace already on its
                // stream, which it then waits for.
                let _workspaces = match shape.split {
                    Some(sk) => {
                        let mut map = self.workspaces.lock().unwrap_or_else(|p| p.into_inner());
                        args.workspace = self.workspace(&mut map, stream)?;
                        (args.dp_units, args.share) = (sk.dp_units, sk.share);
                        Some(map)
                    }
                    None => None,
                };
                unsafe { launch::launch_gemm(*func, shape, stream.cu_stream(), maps, &args) }
                    .map_err(|e| self.diagnose(e))
            }
        }
    }

    /// The device address of the stream-K workspace for a split launch enqueued on `stream`
    /// now: the stream's own, or, while the stream is being captured, one for this stream of the
    /// capture sequence, which its graph holds ([`Gemm::hold_in_graph`]). Either is made on its
    /// first split launch ([`Gemm::zeroed_workspace`]).
    fn workspace(&self, map: &mut HashMap<WorkspaceKey, u64>, stream: &CudaStream) -> Result<u64> {
        // Keyed by the handle (and the thread, for the per-thread stream). A stream dropped while
        // its launches run keeps its resources until they finish (cuStreamDestroy), so a new
        // stream given the same handle cannot overlap a launch that still uses this workspace.
        let capture = self.capture(stream)?;
        let key = WorkspaceKey::of(stream, capture.active().then_some(capture.id));
        if let Some(&ptr) = map.get(&key) {
            return Ok(ptr);
        }
        self.free_released(map);
        let ptr = self.zeroed_workspace()?;
        if capture.active() {
            self.hold_in_graph(capture.graph, ptr)?;
        }
        map.insert(key, ptr);
        Ok(ptr)
    }

    /// A new workspace, its flags and counters at 0 before this returns. Neither step is
    /// enqueued on the caller's stream, so a graph captured from it holds no allocation and no
    /// clearing of 17 MiB before each replay (the kernels leave the workspace at 0 when they
    /// finish).
    fn zeroed_workspace(&self) -> Result<u64> {
        let bytes = self.workspace_bytes as usize;
        let _relaxed = RelaxedCapture::enter()?;
        // SAFETY: the context is current (before_launch); the memory is ours until Drop,
        // `release_workspace` or the end of the graph that holds it.
        let ptr = unsafe { result::malloc_sync(bytes) }.map_err(|e| self.diagnose(Error::driver("cuMemAlloc", e)))?;
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
            return Err(self.diagnose(e));
        }
        Ok(ptr)
    }

    /// Give the graph being captured a CUDA user object that holds workspace `ptr`: when the
    /// graph is gone, the workspace goes to [`Gemm::free_released`]. On an error the workspace
    /// is freed (or, once the user object exists, released through it).
    fn hold_in_graph(&self, graph: sys::CUgraph, ptr: u64) -> Result<()> {
        let hold = Box::into_raw(Box::new(GraphHold { ptr, released: self.released.clone() }));
        let mut object = std::ptr::null_mut();
        let flags = sys::CUuserObject_flags::CU_USER_OBJECT_NO_DESTRUCTOR_SYNC as u32;
        // SAFETY: the destructor takes back `hold`; CUDA requires the flag given.
        let created =
            unsafe { sys::cuUserObjectCreate(&mut object, hold as *mut _, Some(release_from_graph), 1, flags) };
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

    /// Free the workspaces of graphs that are gone (their launches have completed), and forget
    /// their captures' entries.
    fn free_released(&self, map: &mut HashMap<WorkspaceKey, u64>) {
        let released = std::mem::take(&mut *self.released.lock().unwrap_or_else(|p| p.into_inner()));
        if released.is_empty() {
            return;
        }
        map.retain(|key, ptr| key.capture.is_none() || !released.contains(ptr));
        let _relaxed = RelaxedCapture::enter();
        for ptr in released {
            // SAFETY: allocated by `zeroed_workspace`; its graph and the graph's launches are done.
            let _ = unsafe { result::free_sync(ptr) };
        }
    }

    /// Free `stream`'s stream-K workspace, if it has one, once the launches enqueued on it have
    /// finished (this synchronizes `stream`), and the workspaces of graphs destroyed since the
    /// last such chance. Each stream that has run a call split by K keeps its workspace
    /// ([`Gemm::workspace_bytes`]) until the handle is dropped; a caller that makes a stream per
    /// task calls this before dropping the stream. A split call on the stream meanwhile or later
    /// gets a fresh one. For the per-thread default stream it frees the calling thread's: a thread
    /// that has run split calls there calls it before it ends, or its workspace stays until the
    /// handle is dropped. Graphs hold workspaces of their own (freed when the graph is destroyed),
    /// not the stream's. [`Error::Graph`] while `stream` is being captured, which a wait for it
    /// would invalidate.
    pub fn release_workspace(&self, stream: &CudaStream) -> Result<()> {
        if self.capture(stream)?.under_way() {
            return Err(Error::Graph(
                "the stream is being captured into a graph: its workspace can only be released once the capture has ended".into(),
            ));
        }
        // Out of the map first: every launch that took this workspace was enqueued on `stream`
        // under the lock, so the wait below covers them all, and later ones allocate anew.
        let removed = {
            let mut map = self.workspaces.lock().unwrap_or_else(|p| p.into_inner());
            self.free_released(&mut map);
            map.remove(&WorkspaceKey::of(stream, None))
        };
        let Some(ptr) = removed else {
            return Ok(());
        };
        // (The context is current: `capture` made it so.)
        if let Err(e) = self.synchronize(stream) {
            // Launches may still use it: freed with the handle, after the context's wait.
            self.retired.lock().unwrap_or_else(|p| p.into_inner()).push(ptr);
            return Err(e);
        }
        let _relaxed = RelaxedCapture::enter();
        // SAFETY: allocated by `workspace` in this context; nothing enqueued on the stream is left.
        unsafe { result::free_sync(ptr) }.map_err(|e| Error::driver("cuMemFree", e))
    }

    /// Bytes of device memory one stream's stream-K workspace takes (enough for any kernel's
    /// largest grid): what each stream that has run a split call holds.
    pub fn workspace_bytes(&self) -> u64 {
        self.workspace_bytes
    }

    fn prepare_raw(&self, kernel: Option<&KernelSpec>, op: &GemmOp, pa: u64, pb: u64, pc: u64) -> Result<Prepared> {
        // Encoding tensor maps needs a current context, which a thread that has not used this
        // one (a worker of a pool, say) does not have.
        self.ctx.bind_to_thread().map_err(|e| self.diagnose(Error::driver("cuCtxSetCurrent", e)))?;
        let (loaded, op) = match kernel {
            Some(k) => {
                let l = self
                    .kernels
                    .iter()
                    .find(|l| l.spec.name == k.name)
                    .ok_or_else(|| Error::UnknownKernel(k.name.to_string()))?;
                op::supports(l.spec, op)?;
                (l, *op)
            }
            None => {
                let choice = self.choice_at(op, pc).ok_or_else(|| {
                    let (rop, _) = op.row_major_c();
                    Error::Unsupported {
                        kernel: "auto",
                        reason: format!(
                            "no {} kernel reads A {:?}-major and B {:?}-major",
                            self.family.name(),
                            rop.a_major(),
                            rop.b_major()
                        ),
                    }
                })?;
                let l = self
                    .kernels
                    .iter()
                    .find(|l| l.spec.name == choice.kernel.name)
                    .expect("chosen among the loaded kernels");
                (l, choice.op(op))
            }
        };
        let op = &op;
        let spec = loaded.spec;
        if op.k == 0 && !spec.general {
            // C = A·Bᵀ with an empty sum is zero, as in BLAS (only the dense native op gets here).
            return Ok(Prepared::Zero { ptr: pc, len: op.m * op.n });
        }
        // With K = 0 the kernel reads neither A nor B: let their maps name C's memory, rounded
        // down to the 16 bytes TMA wants (never read, so C's own alignment is C's check).
        let (pa, pb) = if op.k == 0 { (pc & !15, pc & !15) } else { (pa, pb) };
        let plan = op::plan(spec, op, pa, pb, pc)?;
        Ok(Prepared::Launch {
            kernel: spec,
            func: loaded.func.cu_function(),
            shape: op::shape(spec, op, loaded.max_clusters)?,
            maps: plan.maps.iter().map(|m| m.encode()).collect::<Result<_>>()?,
            args: plan.args,
        })
    }

    /// Wait for everything enqueued on `stream`. A kernel failure surfaces here; in a
    /// `hang-guard` build, one that gave up waiting on a barrier is [`Error::Hang`].
    pub fn synchronize(&self, stream: &CudaStream) -> Result<()> {
        stream.synchronize().map_err(|e| self.diagnose(Error::driver("cuStreamSynchronize", e)))
    }

    /// The report a kernel of this handle's module wrote when a barrier wait timed out (only a
    /// `hang-guard` build has one).
    pub fn hang_report(&self) -> Option<crate::hang::HangReport> {
        #[cfg(feature = "hang-guard")]
        return self.hang.record.read();
        #[cfg(not(feature = "hang-guard"))]
        None
    }

    /// `e`, or [`Error::Hang`] if a kernel has reported a hang (after which every call fails).
    fn diagnose(&self, e: Error) -> Error {
        #[cfg(feature = "hang-guard")]
        if let Some(report) = self.hang_report() {
            return Error::Hang { kernel: self.hung_kernel(&report), report: crate::hang::describe(&report) };
        }
        e
    }

    /// The entry a hang report most likely comes from: the last one launched if its block size
    /// and shared memory match the report's, else the GEMM kernel whose do, if only one does.
    #[cfg(feature = "hang-guard")]
    fn hung_kernel(&self, r: &crate::hang::HangReport) -> &'static str {
        let last = *self.hang.last_launch.lock().unwrap_or_else(|p| p.into_inner());
        let fits = |l: &&Loaded| l.spec.threads == r.threads && l.spec.smem_bytes == r.dynamic_smem;
        if self.kernels.iter().find(|l| l.spec.name == last).is_none_or(|l| fits(&l)) {
            return last;
        }
        let mut matching = self.kernels.iter().filter(fits);
        match (matching.next(), matching.next()) {
            (Some(only), None) => only.spec.name,
            _ => last,
        }
    }

    /// Whether work enqueued on `stream` now is captured into a graph, and into which.
    fn capture(&self, stream: &CudaStream) -> Result<Capture> {
        self.ctx.bind_to_thread().map_err(|e| self.diagnose(Error::driver("cuCtxSetCurrent", e)))?;
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
            e => return Err(self.diagnose(Error::driver("cuStreamGetCaptureInfo", e.result().unwrap_err()))),
        }
        Ok(c)
    }

    /// Make this handle's context current on the calling thread (the raw launches below need it,
    /// and the handle may be used from any thread); `waits` names an entry with mbarrier waits,
    /// which a hang report may come from.
    fn before_launch(&self, waits: Option<&'static str>) -> Result<()> {
        self.ctx.bind_to_thread().map_err(|e| self.diagnose(Error::driver("cuCtxSetCurrent", e)))?;
        #[cfg(feature = "hang-guard")]
        if let Some(entry) = waits {
            *self.hang.last_launch.lock().unwrap_or_else(|p| p.into_inner()) = entry;
        }
        #[cfg(not(feature = "hang-guard"))]
        let _ = waits;
        Ok(())
    }

    /// Fill `len` bf16 at `ptr` with `bits` (used for poisoning and for K = 0).
    pub(crate) fn fill_raw(&self, stream: &CudaStream, ptr: u64, len: usize, bits: u16) -> Result<()> {
        let (mut p, mut n) = (ptr, len as u64);
        let mut params: [*mut std::ffi::c_void; 3] =
            [&mut p as *mut u64 as *mut _, &mut n as *mut u64 as *mut _, &bits as *const u16 as *mut _];
        let shape = fill_shape(len, self.info.sms);
        self.before_launch(None)?;
        // SAFETY: the parameters match hgemm_fill_u16(ptr, n, bits); the caller owns ptr[..len].
        unsafe { launch::launch_raw(self.fill_u16.cu_function(), &shape, stream.cu_stream(), &mut params) }
    }

    /// Fill `len` bf16 at `ptr` with uniform values in [-scale, scale), stream `seed`.
    pub(crate) fn fill_random_raw(
        &self,
        stream: &CudaStream,
        ptr: u64,
        len: usize,
        seed: u64,
        scale: f32,
    ) -> Result<()> {
        let (mut p, mut n, mut s, mut sc) = (ptr, len as u64, seed, scale);
        let mut params: [*mut std::ffi::c_void; 4] = [
            &mut p as *mut u64 as *mut _,
            &mut n as *mut u64 as *mut _,
            &mut s as *mut u64 as *mut _,
            &mut sc as *mut f32 as *mut _,
        ];
        let shape = fill_shape(len, self.info.sms);
        self.before_launch(None)?;
        // SAFETY: the parameters match hgemm_fill_random_bf16(ptr, n, seed, scale).
        unsafe { launch::launch_raw(self.fill_random.cu_function(), &shape, stream.cu_stream(), &mut params) }
    }

    /// Add the comparison of `len` bf16 at `out` and `reference` to the five u64 at `result`
    /// (see `hgemm_compare_bf16`).
    pub(crate) fn compare_raw(
        &self,
        stream: &CudaStream,
        out: u64,
        reference: u64,
        len: usize,
        result: u64,
    ) -> Result<()> {
        let (mut o, mut r, mut n, mut res) = (out, reference, len as u64, result);
        let mut params: [*mut std::ffi::c_void; 4] = [
            &mut o as *mut u64 as *mut _,
            &mut r as *mut u64 as *mut _,
            &mut n as *mut u64 as *mut _,
            &mut res as *mut u64 as *mut _,
        ];
        // 256 threads a CTA, 32 bytes of shared memory each for the CTA's sums.
        let shape = LaunchShape { smem: 256 * 32, ..fill_shape(len, self.info.sms) };
        self.before_launch(None)?;
        // SAFETY: the parameters match hgemm_compare_bf16(out, reference, n, result).
        unsafe { launch::launch_raw(self.compare.cu_function(), &shape, stream.cu_stream(), &mut params) }
    }

    /// Tensor-core ceiling `spec`'s entry, loaded from this handle's module with the shared
    /// memory it needs; only the benchmark's `testing::Ceiling` asks, so `new` does not.
    pub(crate) fn load_ceiling(&self, spec: &CeilingSpec) -> Result<CudaFunction> {
        if self.family != Family::Hopper {
            return Err(Error::UnknownKernel(format!("{} (the ceilings are Hopper's)", spec.name)));
        }
        let func = self.module.load_function(spec.entry).map_err(|e| Error::driver("cuModuleGetFunction", e))?;
        func.set_attribute(
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            spec.smem_bytes() as i32,
        )
        .map_err(|e| Error::driver("cuFuncSetAttribute", e))?;
        Ok(func)
    }

    /// Launch tensor-core ceiling `spec` (`func`, from [`Gemm::load_ceiling`]) for the MMAs of an
    /// M×N×K call, spread evenly over `ctas` CTAs of one per SM (at most the device's SMs), each
    /// writing one f32 per thread to `sink` (the caller owns that many); B's values scaled by
    /// `b_scale`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn tensor_ceiling_raw(
        &self,
        stream: &CudaStream,
        spec: &CeilingSpec,
        func: &CudaFunction,
        ctas: u32,
        sink: u64,
        (m, n, k): (usize, usize, usize),
        b_scale: f32,
    ) -> Result<()> {
        if ctas == 0 || ctas > self.info.sms {
            return Err(Error::Unsupported {
                kernel: spec.entry,
                reason: format!("{ctas} CTAs: one per SM, 1 to {}", self.info.sms),
            });
        }
        let dim = |d: usize| {
            u32::try_from(d)
                .map_err(|_| Error::InvalidShape(format!("{m}x{n}x{k}: a dimension past u32 for a ceiling")))
        };
        let (per_tile, all) = spec.slices(dim(m)?, dim(n)?, dim(k)?);
        let mut slices = u32::try_from(all.div_ceil(ctas as u64))
            .map_err(|_| Error::InvalidShape(format!("{m}x{n}x{k}: too many slices for a ceiling")))?;
        let (mut per_tile, mut b_scale, mut sink) = (per_tile, b_scale, sink);
        let mut params: [*mut std::ffi::c_void; 4] = [
            &mut slices as *mut u32 as *mut _,
            &mut per_tile as *mut u32 as *mut _,
            &mut b_scale as *mut f32 as *mut _,
            &mut sink as *mut u64 as *mut _,
        ];
        let shape = LaunchShape::plain(ctas, spec.threads(), spec.smem_bytes());
        self.before_launch(None)?;
        // SAFETY: the parameters match the ceiling's (slices, tile_slices, b_scale, sink); the
        // caller owns ctas × threads f32 at sink.
        unsafe { launch::launch_raw(func.cu_function(), &shape, stream.cu_stream(), &mut params) }
    }

    /// Launch the deliberately broken pipeline `hgemm_hang_test` (two CTAs of 64 threads that
    /// wait on a barrier nobody completes): it traps after the guard's limit.
    #[cfg(feature = "hang-guard")]
    pub(crate) fn hang_test_raw(&self, stream: &CudaStream) -> Result<()> {
        let shape = LaunchShape::plain(2, 64, 16);
        self.before_launch(Some("hgemm_hang_test"))?;
        // SAFETY: hgemm_hang_test takes no parameters.
        unsafe { launch::launch_raw(self.hang.test_kernel.cu_function(), &shape, stream.cu_stream(), &mut []) }
    }

    /// Launch `hgemm_hang_flag_test` (one CTA of 32 threads whose thread 0 waits for the u32 at
    /// `flag` to become nonzero): with `flag` zero, it traps after the guard's limit.
    #[cfg(feature = "hang-guard")]
    pub(crate) fn hang_flag_test_raw(&self, stream: &CudaStream, flag: u64) -> Result<()> {
        let shape = LaunchShape::plain(1, 32, 0);
        self.before_launch(Some("hgemm_hang_flag_test"))?;
        let mut flag = flag;
        let mut params: [*mut std::ffi::c_void; 1] = [&mut flag as *mut u64 as *mut _];
        // SAFETY: hgemm_hang_flag_test(flag: u64); the caller keeps the flag's memory alive.
        unsafe { launch::launch_raw(self.hang.flag_test_kernel.cu_function(), &shape, stream.cu_stream(), &mut params) }
    }
}

impl Drop for Gemm {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_err() {
            return;
        }
        let map = self.workspaces.get_mut().unwrap_or_else(|p| p.into_inner());
        let retired = self.retired.get_mut().unwrap_or_else(|p| p.into_inner());
        let released = std::mem::take(&mut *self.released.lock().unwrap_or_else(|p| p.into_inner()));
        // Each once: a released workspace may still have its capture's entry.
        let all: std::collections::BTreeSet<u64> =
            map.values().chain(retired.iter()).chain(released.iter()).copied().collect();
        // Launches still running may use the workspaces; if the wait fails they are left alone.
        if !all.is_empty() && self.ctx.synchronize().is_ok() {
            let _relaxed = RelaxedCapture::enter();
            for ptr in all {
                // SAFETY: allocated by `zeroed_workspace` in this context, no longer used (a
                // graph still holding one is not launched after the handle is gone).
                let _ = unsafe { result::free_sync(ptr) };
            }
        }
        // SAFETY: created in `new`; every clearing enqueued on it was waited for.
        let _ = unsafe { result::stream::destroy(self.side.0) };
    }
}

fn fill_shape(len: usize, sms: u32) -> LaunchShape {
    let blocks = (len.div_ceil(256) as u64).clamp(1, sms as u64 * 8) as u32;
    LaunchShape::plain(blocks, 256, 0)
}

fn max_active_clusters(func: &CudaFunction, spec: &KernelSpec, info: &DeviceInfo) -> Result<u32> {
    if spec.grid != Grid::Persistent {
        return Ok(u32::MAX);
    }
    if spec.cluster == 1 {
        let per_sm = func
            .occupancy_max_active_blocks_per_multiprocessor(spec.threads, spec.smem_bytes as usize, None)
            .map_err(|e| Error::driver("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?;
        return Ok(info.sms * per_sm.max(1));
    }
    let mut cluster = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        ..unsafe { std::mem::zeroed() }
    };
    cluster.value.clusterDim.x = spec.cluster;
    cluster.value.clusterDim.y = 1;
    cluster.value.clusterDim.z = 1;
    let cfg = sys::CUlaunchConfig {
        gridDimX: info.sms / spec.cluster * spec.cluster,
        gridDimY: 1,
        gridDimZ: 1,
        blockDimX: spec.threads,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: spec.smem_bytes,
        hStream: std::ptr::null_mut(),
        attrs: &mut cluster,
        numAttrs: 1,
    };
    let mut n = 0i32;
    // SAFETY: cfg and its one attribute outlive the call.
    match unsafe { sys::cuOccupancyMaxActiveClusters(&mut n, func.cu_function(), &cfg) } {
        sys::CUresult::CUDA_SUCCESS => {}
        e => return Err(Error::Driver { call: "cuOccupancyMaxActiveClusters", code: format!("{e:?}") }),
    }
    Ok((n as u32).max(1))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_handle_is_send_and_sync() {
        fn shared<T: Send + Sync>() {}
        shared::<super::Gemm>();
    }
}
