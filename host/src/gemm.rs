//! The handle: one per CUDA context, holding the loaded module and its kernels.

use crate::choose::Model;
use crate::device::DeviceInfo;
use crate::error::{Error, Result};
use crate::graph::Capture;
use crate::launch;
use crate::op::GemmOp;
use crate::plan::{self, LaunchShape};
use crate::tuned::{PriceCache, TuneTable};
use crate::workspace::Workspaces;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, sys};
use cudarc::nvrtc::Ptx;
use half::bf16;
use hgemm_kernels::fused::BiasType;
use hgemm_kernels::spec::{Family, KernelSpec};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

mod choice;
mod fused;
mod utility;

pub use fused::BiasElement;

/// No bias buffer, for the calls without one (its type is never used).
const NO_BIAS: Option<&CudaSlice<bf16>> = None;

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
    /// Stream-K workspaces, by stream.
    workspaces: Workspaces,
    /// Choices measured by [`Gemm::tune`] or loaded with [`Gemm::load_tuning`], which `auto`
    /// takes before its price.
    tuning: RwLock<TuneTable>,
    /// `auto`'s priced choices by call, so that a call like an earlier one skips the price.
    prices: PriceCache,
    /// What `auto`'s price knows of the device ([`Gemm::set_model`]).
    model: Model,
    /// The SM budget of every call ([`Gemm::set_max_sms`]); 0 for none.
    max_sms: AtomicU32,
    fill_random: CudaFunction,
    fill_u16: CudaFunction,
    compare: CudaFunction,
    /// The baselines' separate epilogue kernels, loaded at their first use.
    bias_act: OnceLock<CudaFunction>,
    glu: OnceLock<CudaFunction>,
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
            let max_clusters = launch::max_active_clusters(&func, spec, info.sms)?;
            kernels.push(Loaded { spec, func, max_clusters });
        }
        // Enough for the largest grid any stream-K kernel is launched with.
        let workspace_bytes = kernels
            .iter()
            .filter_map(|l| {
                let ctas = plan::persistent_clusters(l.spec, l.max_clusters) * l.spec.cluster;
                l.spec.stream_k.map(|s| hgemm_kernels::sched::Workspace { partial_bytes: s.partial_bytes }.bytes(ctas))
            })
            .max()
            .unwrap_or(0);
        let tuning = RwLock::new(TuneTable::new(family, &info.name, info.sms));
        Ok(Gemm {
            fill_random: load("hgemm_fill_random_bf16")?,
            fill_u16: load("hgemm_fill_u16")?,
            compare: load("hgemm_compare_bf16")?,
            bias_act: OnceLock::new(),
            glu: OnceLock::new(),
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
            tuning,
            prices: PriceCache::new(),
            model: Model::BUILT_IN,
            max_sms: AtomicU32::new(0),
            module,
            cubin,
            // Last (it creates a stream), so that no failure above leaves it behind.
            workspaces: Workspaces::new(workspace_bytes)?,
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

    /// Run every later GEMM of this handle on at most `sms` SMs (`None`: every SM, the default),
    /// leaving the rest to kernels on other streams, such as NCCL's collectives: see
    /// [`GemmOp::max_sms`], whose budget a call may also set (the tighter of the two holds).
    /// [`Error::SmBudget`] for a budget of 0. The library's utility kernels (fills, comparisons,
    /// the baselines' separate epilogues) are not held to it.
    pub fn set_max_sms(&self, sms: Option<u32>) -> Result<()> {
        if sms == Some(0) {
            return Err(Error::SmBudget {
                kernel: "any kernel",
                max_sms: 0,
                reason: "a budget of 0 SMs leaves nothing to run on".into(),
            });
        }
        self.max_sms.store(sms.unwrap_or(0), Ordering::Relaxed);
        Ok(())
    }

    /// The handle's SM budget ([`Gemm::set_max_sms`]).
    pub fn max_sms(&self) -> Option<u32> {
        Some(self.max_sms.load(Ordering::Relaxed)).filter(|&n| n > 0)
    }

    /// `op` with the tighter of its own and the handle's budget, none where that covers the
    /// device: what the choice and the launch plan see.
    pub(crate) fn budgeted(&self, op: &GemmOp) -> GemmOp {
        op.within(self.max_sms()).on_device(self.info.sms)
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
        self.run(None, stream, op, a, b, NO_BIAS, c)
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
        self.run(Some(kernel), stream, op, a, b, NO_BIAS, c)
    }

    #[allow(clippy::too_many_arguments)]
    fn run<A, B, E, V, C>(
        &self,
        kernel: Option<&KernelSpec>,
        stream: &CudaStream,
        op: &GemmOp,
        a: &A,
        b: &B,
        bias: Option<&V>,
        c: &mut C,
    ) -> Result<()>
    where
        A: DevicePtr<bf16>,
        B: DevicePtr<bf16>,
        E: BiasElement,
        V: DevicePtr<E>,
        C: DevicePtrMut<bf16>,
    {
        if !op.validate_fused(a.len(), b.len(), bias.map(|v| (E::TYPE, v.len())), c.len())? {
            return Ok(());
        }
        // The guards record the buffers' use on `stream` when dropped: after the launch.
        let (pa, _ga) = a.device_ptr(stream);
        let (pb, _gb) = b.device_ptr(stream);
        let bias = bias.map(|v| v.device_ptr(stream));
        let (pc, _gc) = c.device_ptr_mut(stream);
        match self.prepare_raw(kernel, op, pa, pb, bias.as_ref().map(|(p, _)| (*p, E::TYPE)), pc)? {
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
        self.prepare_bias(kernel, stream, op, a, b, NO_BIAS, c)
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
                        let mut map = self.workspaces.lock();
                        let capture = self.capture(stream)?;
                        args.workspace = self.workspaces.get(&mut map, stream, &capture, &|e| self.diagnose(e))?;
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
        // (The context is current: `capture` made it so.)
        self.workspaces.release(stream, || self.synchronize(stream))
    }

    /// Bytes of device memory one stream's stream-K workspace takes (enough for any kernel's
    /// largest grid): what each stream that has run a split call holds.
    pub fn workspace_bytes(&self) -> u64 {
        self.workspaces.bytes()
    }

    fn prepare_raw(
        &self,
        kernel: Option<&KernelSpec>,
        op: &GemmOp,
        pa: u64,
        pb: u64,
        bias: Option<(u64, BiasType)>,
        pc: u64,
    ) -> Result<Prepared> {
        // Encoding tensor maps needs a current context, which a thread that has not used this
        // one (a worker of a pool, say) does not have.
        self.ctx.bind_to_thread().map_err(|e| self.diagnose(Error::driver("cuCtxSetCurrent", e)))?;
        let op = &self.budgeted(op);
        let (loaded, op) = match kernel {
            Some(k) => {
                let l = self
                    .kernels
                    .iter()
                    .find(|l| l.spec.name == k.name)
                    .ok_or_else(|| Error::UnknownKernel(k.name.to_string()))?;
                plan::supports(l.spec, op)?;
                (l, *op)
            }
            None => {
                let choice = self.choice_at(op, pc).ok_or_else(|| {
                    let (rop, _) = op.row_major_c();
                    if let Some(max_sms) = op.max_sms
                        && self.choice_at(&GemmOp { max_sms: None, ..*op }, pc).is_some()
                    {
                        return Error::SmBudget {
                            kernel: "auto",
                            max_sms,
                            reason: "the entries `auto` weighs for this call have clusters larger than the budget (pin one without a cluster with gemm_with)".into(),
                        };
                    }
                    if op.fused() && !self.kernels().any(plan::fuses_epilogue) {
                        return Error::Unsupported {
                            kernel: "auto",
                            reason: format!(
                                "no {} kernel has a fused epilogue (bias, activation or gated units): Hopper's v7 entries fuse them",
                                self.family.name()
                            ),
                        };
                    }
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
        let plan = plan::plan_fused(spec, op, pa, pb, bias, pc)?;
        Ok(Prepared::Launch {
            kernel: spec,
            func: loaded.func.cu_function(),
            shape: plan::shape(spec, op, loaded.max_clusters)?,
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
    pub(crate) fn capture(&self, stream: &CudaStream) -> Result<Capture> {
        self.ctx.bind_to_thread().map_err(|e| self.diagnose(Error::driver("cuCtxSetCurrent", e)))?;
        Capture::of(stream, |e| self.diagnose(e))
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
}

impl Drop for Gemm {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_err() {
            return;
        }
        self.workspaces.free_all(|| self.ctx.synchronize().is_ok());
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_handle_is_send_and_sync() {
        fn shared<T: Send + Sync>() {}
        shared::<super::Gemm>();
    }
}
