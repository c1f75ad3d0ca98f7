//! Launch shapes derived from a kernel's spec, and the one launch path every kernel takes:
//! `cuLaunchKernelEx` with the cluster-dimension attribute and dynamic shared memory.

use crate::error::{Error, Result};
use cudarc::driver::sys;
use hgemm_kernels::args::GemmArgs;
use hgemm_kernels::spec::{Grid, KernelSpec};
use std::ffi::c_void;

/// Grid, block, cluster and shared memory of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    /// CTAs along x (a multiple of `cluster`).
    pub grid: u32,
    /// Batch entries along y.
    pub grid_y: u32,
    pub block: u32,
    pub cluster: u32,
    pub smem: u32,
}

impl LaunchShape {
    /// The shape `spec` is launched with for an `m × n` output (`batch` of them). A persistent
    /// kernel walks every tile of every batch entry itself, striding by its clusters along x: it
    /// gets one row of at most `max_clusters` clusters (as many as fit on the device at once); a
    /// second row would compute every tile again, and with beta ≠ 0 read a C another row may
    /// already have updated. A per-tile kernel gets a row per batch entry.
    pub fn new(spec: &KernelSpec, m: u32, n: u32, batch: u32, max_clusters: u32) -> LaunchShape {
        let tiles = spec.scheduler(m, n).num_tiles();
        let (clusters, grid_y) = match spec.grid {
            Grid::PerTile => (tiles, batch),
            Grid::Persistent => (tiles.saturating_mul(batch).min(max_clusters).max(1), 1),
        };
        LaunchShape { grid: clusters * spec.cluster, grid_y, block: spec.threads, cluster: spec.cluster, smem: spec.smem_bytes }
    }
}

/// Launch a GEMM entry with its three tensor maps and arguments on `stream`.
///
/// # Safety
/// The tensor maps must describe live device memory matching `args`, and C must be writable.
pub(crate) unsafe fn launch_gemm(
    func: sys::CUfunction,
    shape: &LaunchShape,
    stream: sys::CUstream,
    maps: &[sys::CUtensorMap; 3],
    args: &GemmArgs,
) -> Result<()> {
    let mut params: [*mut c_void; 4] = [
        &maps[0] as *const _ as *mut c_void,
        &maps[1] as *const _ as *mut c_void,
        &maps[2] as *const _ as *mut c_void,
        args as *const GemmArgs as *mut c_void,
    ];
    unsafe { launch_raw(func, shape, stream, &mut params) }
}

/// # Safety
/// `params` must point at values matching the entry's parameter list.
pub(crate) unsafe fn launch_raw(func: sys::CUfunction, shape: &LaunchShape, stream: sys::CUstream, params: &mut [*mut c_void]) -> Result<()> {
    let mut cluster = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        ..unsafe { std::mem::zeroed() }
    };
    cluster.value.clusterDim.x = shape.cluster;
    cluster.value.clusterDim.y = 1;
    cluster.value.clusterDim.z = 1;
    let config = sys::CUlaunchConfig {
        gridDimX: shape.grid,
        gridDimY: shape.grid_y,
        gridDimZ: 1,
        blockDimX: shape.block,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: shape.smem,
        hStream: stream,
        attrs: &mut cluster,
        numAttrs: 1,
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

    #[test]
    fn per_tile_grid_covers_partial_tiles() {
        let spec = &hopper::v0::SPEC;
        let s = LaunchShape::new(spec, 8192, 8192, 1, 132);
        assert_eq!(s.grid, (8192 / spec.tile_m) * (8192 / spec.tile_n));
        let s = LaunchShape::new(spec, 129, 257, 1, 132);
        assert_eq!(s.grid, 2 * 2);
        assert_eq!((s.block, s.cluster, s.smem), (spec.threads, 1, spec.smem_bytes));
    }

    #[test]
    fn persistent_batches_are_one_row_of_clusters() {
        // v7 walks tiles × batch entries along x; it never reads a y index.
        let spec = &hopper::v7::SPEC;
        let tiles = spec.scheduler(300, 520).num_tiles();
        let s = LaunchShape::new(spec, 300, 520, 3, 66);
        assert_eq!((s.grid, s.grid_y), (3 * tiles * spec.cluster, 1));
        let s = LaunchShape::new(spec, 8192, 8192, 4, 66);
        assert_eq!((s.grid, s.grid_y), (66 * spec.cluster, 1));
    }

    #[test]
    fn every_spec_fits_the_launch_limits() {
        for spec in hgemm_kernels::kernels() {
            assert!(spec.threads % 128 == 0 && spec.threads <= 1024, "{}", spec.name);
            assert!(spec.smem_bytes <= 227 * 1024, "{} needs {} bytes", spec.name, spec.smem_bytes);
            let s = LaunchShape::new(spec, 8192, 8192, 1, 66);
            assert_eq!(s.grid % spec.cluster, 0, "{}", spec.name);
            if spec.grid == Grid::Persistent {
                assert_eq!(s.grid, 66 * spec.cluster, "{}", spec.name);
            }
        }
    }
}
