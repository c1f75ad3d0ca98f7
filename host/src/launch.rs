//! Launch shapes derived from a kernel's spec, and the one launch path every kernel takes:
//! `cuLaunchKernelEx` with the cluster-dimension attribute, dynamic shared memory and, for kernels
//! that wait for their predecessor themselves, programmatic stream serialization.

use crate::error::{Error, Result};
use cudarc::driver::sys;
use hgemm_kernels::args::GemmArgs;
use hgemm_kernels::sched::{StreamK, Workspace};
use hgemm_kernels::spec::{Grid, KernelSpec};
use std::ffi::c_void;

/// Grid, block, cluster and shared memory of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    /// CTAs along x (a multiple of `cluster`).
    pub grid: u32,
    /// Batch entries along y.
    pub grid_y: u32,
    /// Threads per CTA.
    pub block: u32,
    /// CTAs per cluster (along x).
    pub cluster: u32,
    /// Dynamic shared memory per CTA, bytes.
    pub smem: u32,
    /// The kernel's stream-K schedule on this grid, where it splits tiles: each launch then
    /// passes it and its stream's workspace (without one the kernel computes every tile whole).
    pub split: Option<StreamK>,
    /// Launched with programmatic stream serialization ([`KernelSpec::dependent_launch`]): the
    /// kernel may start while the previous one in the stream finishes, and waits for it itself.
    pub dependent: bool,
}

impl LaunchShape {
    /// The shape `spec` is launched with for `args` (an `m × n` output, `batch` of them). A
    /// persistent kernel walks every tile of every batch entry itself, striding by its clusters
    /// along x: it gets one row of at most `max_clusters` clusters (as many as fit on the device
    /// at once), and no more clusters than tiles unless its stream-K schedule splits tiles
    /// between them; a second row would compute every tile again, and with beta ≠ 0 read a C
    /// another row may already have updated. A per-tile kernel gets a row per batch entry.
    /// `stream_k` allows the split. Only for `args` of a call [`supports`](crate::op::supports)
    /// accepts (its tile count fits the kernels' 32-bit walk); [`op::shape`](crate::op::shape)
    /// is the checked way in.
    pub(crate) fn new(spec: &KernelSpec, args: &GemmArgs, max_clusters: u32, stream_k: bool) -> LaunchShape {
        let tiles = spec.scheduler(args.m, args.n).num_tiles();
        let mut split = None;
        let (clusters, grid_y) = match spec.grid {
            Grid::PerTile => (tiles, args.batch),
            Grid::Persistent => {
                let most = persistent_clusters(spec, max_clusters);
                let units = tiles.saturating_mul(args.batch);
                split = spec.schedule(args, most).filter(|sk| stream_k && sk.splits());
                (if split.is_some() { most } else { units.min(most).max(1) }, 1)
            }
        };
        LaunchShape {
            grid: clusters * spec.cluster,
            grid_y,
            block: spec.threads,
            cluster: spec.cluster,
            smem: spec.smem_bytes,
            split,
            dependent: spec.dependent_launch,
        }
    }

    /// `grid` CTAs of `block` threads in one row, `smem` bytes of dynamic shared memory each, no
    /// cluster, no stream-K, launched plainly: the shape of the library's utility kernels.
    pub(crate) fn plain(grid: u32, block: u32, smem: u32) -> LaunchShape {
        LaunchShape { grid, grid_y: 1, block, cluster: 1, smem, split: None, dependent: false }
    }
}

/// The most clusters a persistent grid of `spec` gets: as many as fit on the device at once and,
/// for a stream-K kernel, no more CTAs than the workspace has flags for.
pub fn persistent_clusters(spec: &KernelSpec, max_clusters: u32) -> u32 {
    match spec.stream_k {
        Some(_) => max_clusters.min(Workspace::MAX_CTAS / spec.cluster),
        None => max_clusters,
    }
}

/// Launch a GEMM entry with its tensor maps (A, B, C, then A's and B's edge maps for kernels with
/// [`KernelSpec::edge_maps`]) and arguments on `stream` (what
/// [`Gemm::launch_prepared`](crate::Gemm::launch_prepared) does).
///
/// # Safety
/// The tensor maps must describe live device memory matching `args`, and C must be writable.
pub unsafe fn launch_gemm(
    func: sys::CUfunction,
    shape: &LaunchShape,
    stream: sys::CUstream,
    maps: &[sys::CUtensorMap],
    args: &GemmArgs,
) -> Result<()> {
    // The entry's parameters in order: its maps, then the arguments (no allocation per launch).
    let mut params = [std::ptr::null_mut::<c_void>(); 6];
    if maps.len() >= params.len() {
        return Err(Error::InvalidShape(format!("{} tensor maps: a GEMM entry takes at most five", maps.len())));
    }
    for (p, m) in params.iter_mut().zip(maps) {
        *p = m as *const _ as *mut c_void;
    }
    params[maps.len()] = args as *const GemmArgs as *mut c_void;
    unsafe { launch_raw(func, shape, stream, &mut params[..=maps.len()]) }
}

/// # Safety
/// `params` must point at values matching the entry's parameter list.
pub(crate) unsafe fn launch_raw(
    func: sys::CUfunction,
    shape: &LaunchShape,
    stream: sys::CUstream,
    params: &mut [*mut c_void],
) -> Result<()> {
    let mut attrs = [
        sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
            ..unsafe { std::mem::zeroed() }
        },
        sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
            ..unsafe { std::mem::zeroed() }
        },
    ];
    attrs[0].value.clusterDim.x = shape.cluster;
    attrs[0].value.clusterDim.y = 1;
    attrs[0].value.clusterDim.z = 1;
    attrs[1].value.programmaticStreamSerializationAllowed = 1;
    let config = sys::CUlaunchConfig {
        gridDimX: shape.grid,
        gridDimY: shape.grid_y,
        gridDimZ: 1,
        blockDimX: shape.block,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: shape.smem,
        hStream: stream,
        attrs: attrs.as_mut_ptr(),
        numAttrs: 1 + shape.dependent as u32,
    };
    match unsafe { sys::cuLaunchKernelEx(&config, func, params.as_mut_ptr(), std::ptr::null_mut()) } {
        sys::CUresult::CUDA_SUCCESS => Ok(()),
        e => Err(Error::Driver { call: "cuLaunchKernelEx", code: format!("{e:?}") }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hgemm_kernels::hopper;

    /// An `m × n × 512` problem, `batch` of them.
    fn args(m: u32, n: u32, batch: u32) -> GemmArgs {
        GemmArgs { batch, ..GemmArgs::new(m, n, 512, 0) }
    }

    #[test]
    fn too_many_tensor_maps_are_an_error_before_the_driver() {
        let maps = [sys::CUtensorMap { opaque: [0; 16] }; 6];
        let shape = LaunchShape::plain(1, 128, 0);
        // SAFETY: refused before anything is launched (no function, no stream).
        let r = unsafe { launch_gemm(std::ptr::null_mut(), &shape, std::ptr::null_mut(), &maps, &args(64, 64, 1)) };
        assert!(matches!(&r, Err(Error::InvalidShape(s)) if s.contains("at most five")), "{r:?}");
    }

    #[test]
    fn only_the_library_kernels_are_dependent_launches() {
        // v0–v6 keep the launch they were measured with; Blackwell's v7 could wait the same way,
        // but nothing here could run it.
        for spec in hgemm_kernels::kernels() {
            let s = LaunchShape::new(spec, &args(1024, 1024, 1), 132, true);
            assert_eq!(s.dependent, spec.dependent_launch, "{}", spec.name);
            let library = spec.family == hgemm_kernels::spec::Family::Hopper && spec.version == 7;
            assert_eq!(spec.dependent_launch, library, "{}", spec.name);
        }
    }

    #[test]
    fn per_tile_grid_covers_partial_tiles() {
        let spec = &hopper::v0::SPEC;
        let s = LaunchShape::new(spec, &args(8192, 8192, 1), 132, true);
        assert_eq!(s.grid, (8192 / spec.tile_m) * (8192 / spec.tile_n));
        let s = LaunchShape::new(spec, &args(129, 257, 1), 132, true);
        assert_eq!(s.grid, 2 * 2);
        assert_eq!((s.block, s.cluster, s.smem), (spec.threads, 1, spec.smem_bytes));
    }

    #[test]
    fn persistent_batches_are_one_row_of_clusters() {
        // v7 walks tiles × batch entries along x; it never reads a y index.
        let spec = &hopper::v7::SPEC;
        let tiles = spec.scheduler(300, 520).num_tiles();
        let s = LaunchShape::new(spec, &args(300, 520, 3), 66, true);
        assert_eq!((s.grid, s.grid_y), (3 * tiles * spec.cluster, 1));
        let s = LaunchShape::new(spec, &args(8192, 8192, 4), 66, true);
        assert_eq!((s.grid, s.grid_y), (66 * spec.cluster, 1));
    }

    #[test]
    fn stream_k_grids_take_every_cluster_when_they_split() {
        let spec = &hopper::v7::SPEC;
        // 12 units of 64 K blocks: split across all 66 pairs.
        let split = GemmArgs::new(520, 776, 4096, 0);
        assert!(spec.schedule(&split, 66).unwrap().splits());
        let s = LaunchShape::new(spec, &split, 66, true);
        assert_eq!((s.grid, s.split.is_some()), (132, true));
        // The kernel walks the split it is passed with one worker per cluster of the grid: the
        // host's schedule must be the one for that many workers.
        assert_eq!(s.split, spec.schedule(&split, s.grid / s.cluster));
        let s = LaunchShape::new(spec, &split, 66, false);
        assert_eq!((s.grid, s.split), (24, None), "stream-K not allowed");
        // The same 12 units at K = 512 are too shallow to split: one pair each.
        let whole = GemmArgs::new(520, 776, 512, 0);
        assert!(!spec.schedule(&whole, 66).unwrap().splits());
        let s = LaunchShape::new(spec, &whole, 66, true);
        assert_eq!((s.grid, s.split), (24, None));
        // Never more CTAs than the workspace has flags for.
        let deep = GemmArgs::new(520, 776, 65536, 0);
        assert_eq!(LaunchShape::new(spec, &deep, 5000, true).grid, Workspace::MAX_CTAS);
    }

    #[test]
    fn thin_tiles_launch_one_cta_per_sm_without_clusters() {
        let thin = hopper::v7::VARIANTS.iter().find(|s| s.name == "hopper_v7_thin_kk").unwrap();
        // 16×4096: 64 tiles of 64 K blocks on 132 SMs, split by K.
        let small_m = GemmArgs::new(16, 4096, 4096, 0);
        let s = LaunchShape::new(thin, &small_m, 132, true);
        assert_eq!((s.grid, s.cluster, s.block, s.split.is_some()), (132, 1, 256, true));
        // Forbidden to split: one CTA per tile.
        assert_eq!(LaunchShape::new(thin, &small_m, 132, false).grid, 64);
    }

    #[test]
    fn every_spec_fits_the_launch_limits() {
        for spec in hgemm_kernels::kernels() {
            assert!(spec.threads % 128 == 0 && spec.threads <= 1024, "{}", spec.name);
            assert!(spec.smem_bytes <= 227 * 1024, "{} needs {} bytes", spec.name, spec.smem_bytes);
            let s = LaunchShape::new(spec, &args(8192, 8192, 1), 66, true);
            assert_eq!(s.grid % spec.cluster, 0, "{}", spec.name);
            if spec.grid == Grid::Persistent {
                assert_eq!(s.grid, 66 * spec.cluster, "{}", spec.name);
            }
        }
    }

    #[test]
    fn blackwell_pairs_and_persistent_grids() {
        use hgemm_kernels::blackwell;
        // v0–v3: one CTA per 128×256 tile, no cluster.
        for spec in &blackwell::LADDER[..4] {
            let s = LaunchShape::new(spec, &args(8192, 8192, 1), u32::MAX, true);
            assert_eq!((s.grid, s.cluster, s.block), (64 * 32, 1, 128), "{}", spec.name);
        }
        // v4: per-tile pairs, a cluster per 256×256 unit; partial units still launch whole pairs.
        let v4 = &blackwell::v4::SPEC;
        let s = LaunchShape::new(v4, &args(8192, 8192, 1), u32::MAX, true);
        assert_eq!((s.grid, s.cluster), (2 * 32 * 32, 2));
        let s = LaunchShape::new(v4, &args(129, 257, 1), u32::MAX, true);
        assert_eq!(s.grid, 2 * 2);
        // v5–v7: persistent. A 148-SM B200 fits 74 pairs (one CTA per SM, given their shared
        // memory): the grid is 148 CTAs, a multiple of the cluster size.
        for spec in &blackwell::LADDER[5..] {
            assert_eq!(spec.cluster, 2, "{}", spec.name);
            let s = LaunchShape::new(spec, &args(8192, 8192, 1), 148 / spec.cluster, true);
            assert_eq!((s.grid, s.cluster, s.block, s.smem), (148, 2, 256, spec.smem_bytes), "{}", spec.name);
            // An odd SM count (a partitioned GPU) still gets whole pairs.
            let s = LaunchShape::new(spec, &args(8192, 8192, 1), 147 / spec.cluster, true);
            assert_eq!(s.grid, 146, "{}", spec.name);
            // Fewer units than pairs: no idle clusters are launched.
            let s = LaunchShape::new(spec, &args(300, 300, 1), 74, true);
            let units = spec.scheduler(300, 300).num_tiles();
            assert_eq!(s.grid, units * 2, "{}", spec.name);
            assert!(units < 74);
        }
        // v7's unit is 512×256: 16 × 32 units at 8192², more than a wave of 74 pairs.
        assert_eq!(blackwell::v7::SPEC.scheduler(8192, 8192).num_tiles(), 16 * 32);
    }
}
