//! The one launch path every kernel takes: `cuLaunchKernelEx` with the cluster-dimension
//! attribute, dynamic shared memory and, for kernels that wait for their predecessor themselves,
//! programmatic stream serialization. The shape it launches with is the plan's
//! ([`LaunchShape`]).

use crate::error::{Error, Result};
use crate::plan::LaunchShape;
use cudarc::driver::{CudaFunction, sys};
use hgemm_kernels::args::GemmArgs;
use hgemm_kernels::spec::{Grid, KernelSpec};
use std::ffi::c_void;

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

/// Clusters of `spec` that fit on a device of `sms` SMs at once (`u32::MAX` for a per-tile grid,
/// which is not sized by it).
pub(crate) fn max_active_clusters(func: &CudaFunction, spec: &KernelSpec, sms: u32) -> Result<u32> {
    if spec.grid != Grid::Persistent {
        return Ok(u32::MAX);
    }
    if spec.cluster == 1 {
        let per_sm = func
            .occupancy_max_active_blocks_per_multiprocessor(spec.threads, spec.smem_bytes as usize, None)
            .map_err(|e| Error::driver("cuOccupancyMaxActiveBlocksPerMultiprocessor", e))?;
        return Ok(sms * per_sm.max(1));
    }
    let mut cluster = sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        ..unsafe { std::mem::zeroed() }
    };
    cluster.value.clusterDim.x = spec.cluster;
    cluster.value.clusterDim.y = 1;
    cluster.value.clusterDim.z = 1;
    let cfg = sys::CUlaunchConfig {
        gridDimX: sms / spec.cluster * spec.cluster,
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
    use super::*;

    #[test]
    fn too_many_tensor_maps_are_an_error_before_the_driver() {
        let maps = [sys::CUtensorMap { opaque: [0; 16] }; 6];
        let shape = LaunchShape::plain(1, 128, 0);
        // SAFETY: refused before anything is launched (no function, no stream).
        let r = unsafe {
            launch_gemm(std::ptr::null_mut(), &shape, std::ptr::null_mut(), &maps, &GemmArgs::new(64, 64, 512, 0))
        };
        assert!(matches!(&r, Err(Error::InvalidShape(s)) if s.contains("at most five")), "{r:?}");
    }
}
